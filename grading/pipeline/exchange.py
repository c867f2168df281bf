"""nbgrader's file-system exchange with the checks it lacks when students share one machine (a JupyterHub).

nbgrader's exchange is a folder that every user can write to: ``<root>/<course>/outbound`` holds
the released assignments, ``inbound`` (mode 0733: students may write, not list) the submissions,
each a folder named ``<student>+<assignment>+<timestamp>+<random>``, and ``feedback`` (0711) the
feedback files, named by a hash of a secret that only the submitter's own cache holds. A student
cannot list another's submission or guess its name, and fetches only their own feedback. Three
holes remain, and nbgrader_config.py closes them with these plugins:

- **Submitting under another id.** ``nbgrader submit --student=bob``, or a folder made by hand in
  ``inbound``, claims any student id; nbgrader's collect only warns when the folder's owner differs,
  then takes it, and a claimed later timestamp replaces the real student's submission.
  `OwnerCheckedCollect` takes a submission only from a real folder (not a link) that the Unix user
  of that student id owns, which a student cannot fake (only root can give a file away); every
  other one is left in ``inbound`` and named in the log, and the student's own newest submission is
  collected. It copies plain files and folders only: a symbolic link (to another student's work or
  to the instructor's files, which collect would read with the instructor's rights), a named pipe
  (which would block collect) or a socket in a submission is left out and logged.
- **Replacing the course's folder.** The exchange root must be writable by all; without the
  sticky bit (mode 1777, like /tmp) a student can rename ``<root>/<course>`` and put a folder of
  their own in its place, whose ``inbound`` they can read. `StickyReleaseAssignment` refuses to
  release into a root without it (and sets it where the instructor owns the root).
- **Removing a submission.** ``inbound`` without the sticky bit lets any student who learns a
  folder's name rename it; `StickyReleaseAssignment` sets the bit on it.

This needs one Unix user per student (JupyterHub's LocalProcessSpawner or SystemdSpawner, each
student's home readable by them only). Where every student's server runs as the same user (most
container spawners), the file-system exchange cannot tell students apart: use an exchange service.
"""

from __future__ import annotations

import datetime
import os
import pwd
import shutil
import stat

from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.exchange.default.release_assignment import ExchangeReleaseAssignment
from nbgrader.utils import ignore_patterns


def _plain(path: str) -> bool:
    """Whether ``path`` is a plain file or folder (a link, a pipe, a socket or a device is not)."""
    mode = os.lstat(path).st_mode
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


class OwnerCheckedCollect(ExchangeCollect):
    """nbgrader's collect, taking each submission only from the student it names (see the module's docstring)."""

    def _path_to_record(self, path):
        name = os.path.basename(path)
        try:
            record = super()._path_to_record(path)
        except Exception as error:  # noqa: BLE001 - a malformed name must not stop the others' collect.
            self.log.error("%s: not a submission's name (%s); not collected", path, error)
            return {"username": name.split("+")[0], "filename": name, "timestamp": datetime.datetime.min,
                    "genuine": False}
        record["genuine"] = self._owned_by_student(path, record["username"])
        return record

    def _owned_by_student(self, path: str, student: str) -> bool:
        try:
            uid = pwd.getpwnam(student).pw_uid
        except KeyError:
            self.log.error("%s claims the student %s, who has no Unix account here; not collected", path, student)
            return False
        status = os.lstat(path)
        if not stat.S_ISDIR(status.st_mode):
            self.log.error("%s is not a folder (a link or a file); not collected", path)
            return False
        if status.st_uid != uid:
            try:
                owner = pwd.getpwuid(status.st_uid).pw_name
            except KeyError:
                owner = f"uid {status.st_uid}"
            self.log.error("%s claims the student %s but was made by %s; not collected (someone submitted under "
                           "another student's id)", path, student, owner)
            return False
        return True

    def _sort_by_timestamp(self, records):
        # A student's newest genuine submission wins; one that another user made never counts.
        genuine = [record for record in records if record.get("genuine")]
        return super()._sort_by_timestamp(genuine or records)

    def copy_files(self):
        self.src_records = [record for record in self.src_records if record.get("genuine")]
        super().copy_files()

    def do_copy(self, src, dest, log=None):
        """Copy plain files and folders only; a submission that cannot be copied is logged and skipped."""
        keep = ignore_patterns(exclude=self.coursedir.ignore, include=self.coursedir.include,
                               max_file_size=self.coursedir.max_file_size, log=self.log)

        def ignored(folder, names):
            special = [name for name in names if not _plain(os.path.join(folder, name))]
            for name in special:
                self.log.error("%s is a link, a pipe or another special file; left out", os.path.join(folder, name))
            return set(keep(folder, names)) | set(special)

        try:
            if self.get_size(src) > 1000 * self.coursedir.max_dir_size:
                raise RuntimeError(f"it is larger than {self.coursedir.max_dir_size} kB (CourseDirectory.max_dir_size)")
            shutil.copytree(src, dest, symlinks=True, ignore=ignored)
            # The copy is the instructor's; anything that turned into a link while it was copied goes.
            for folder, folders, files in os.walk(dest):
                for name in folders + files:
                    if not _plain(os.path.join(folder, name)):
                        os.unlink(os.path.join(folder, name))
        except Exception as error:  # noqa: BLE001 - one submission never stops the others' collect.
            self.log.error("%s could not be collected (%s: %s); skipped", src, type(error).__name__, error)
            shutil.rmtree(dest, ignore_errors=True)


class StickyReleaseAssignment(ExchangeReleaseAssignment):
    """nbgrader's release, with the sticky bit on the exchange root and on the course's inbound folder."""

    def ensure_root(self):
        super().ensure_root()
        status = os.stat(self.root)
        if status.st_mode & stat.S_ISVTX:
            return
        if status.st_uid == os.geteuid():
            os.chmod(self.root, stat.S_IMODE(status.st_mode) | stat.S_ISVTX)
            return
        self.fail(f"The exchange {self.root} lets any user rename the course's folder and put their own in its "
                  f"place. Ask its owner to set the sticky bit: chmod 1777 {self.root}")

    def init_dest(self):
        super().init_dest()
        mode = stat.S_IMODE(os.stat(self.inbound_path).st_mode)
        if not mode & stat.S_ISVTX:
            os.chmod(self.inbound_path, mode | stat.S_ISVTX)
