"""Finds the submissions in a folder, and reads them without ever following a link out of it.

Layouts: nbgrader's (``FOLDER/<student>/<assignment>/<file>.ipynb``), one folder per student
(``FOLDER/<student>/<file>.ipynb``), or flat with the student id before the assignment id in each
file name (``FOLDER/alice_01_eviction_as_ranking.ipynb``) or given by a ``file,student_id`` CSV.
Names that Colab and LMSs produce ("Copy of 01_….ipynb", "01_… (1).ipynb") are recognized.

Submissions are read, never followed. The folder is walked without recursion and without
following links; a symbolic link, a FIFO, a socket or a device file is never opened, and a
notebook that is one is refused with a status that names it, as is a hard link whose other names
are not notebooks of the same student (a link to another student's file, say). A file is read
by opening every folder on its way relative to the one before, with ``O_NOFOLLOW``, and must still
be the file that was found (a link put there since cannot redirect the read).
"""

from __future__ import annotations

import csv
import errno
import hashlib
import os
import re
import stat
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

# What a student id may hold, in words for a status (`student_id` checks it).
ID_RULE = "letters or digits of any script, then also '_', '.', '-'; no spaces"
# Seconds to walk one entry of the folder (a student's folder, or a file of a flat folder).
WALK_LIMIT_S = 60.0
_NEVER_FOLLOWED = "submissions are read, never followed"


def student_id(text: str) -> str | None:
    """``text`` as a student id (in Unicode's composed form, NFC), or None when it is not a valid one.

    A valid id starts with a letter or a digit of any script (``alice``, ``s2024001``, ``张三``, ``José``) and goes
    on with letters, digits, combining marks, ``_``, ``.`` and ``-``: one folder name, no glob character (nbgrader
    takes a student id as a glob), no space, control or invisible character. The id is checked whole: a trailing
    newline, which a "^...$" match would accept and nbgrader strips, is refused. A name as macOS writes it
    (decomposed, NFD) gives the same id as its composed form.
    """
    text = unicodedata.normalize("NFC", text)
    if not text or not text[0].isalnum():
        return None
    if all(c.isalnum() or c in "_.-" or unicodedata.category(c).startswith("M") for c in text):
        return text
    return None


class Problem(str):
    """One line about a file that is not graded (the log shows it; statuses.csv gets a row of it): the file's path in
    the submissions folder, and its assignment and student when they are known."""

    def __new__(cls, text: str, path: str = "", assignment: str | None = None, student: str | None = None):
        line = super().__new__(cls, text)
        line.path, line.assignment, line.student = path, assignment, student
        return line


class Unreadable(Exception):
    """A submitted file that is not read: why, in words for a status."""


@dataclass
class Submission:
    """One notebook found in the folder, and what the collector made of it."""

    student: str
    assignment: str
    path: Path
    notes: list[str]
    repaired: bool = False
    needs_manual_look: bool = False
    failure: str | None = None  # Why it cannot be graded at all (its status), when it cannot.
    # Other files of the same student and assignment: when there are any, none of them is graded.
    rivals: list[Path] | None = None
    root: Path | None = None  # The folder it was found in: reading it never leaves that folder.
    identity: tuple[int, int] | None = None  # Its device and inode when found: reading it checks them.
    fingerprint: dict | None = None  # Its solution cells, for the merge's copy check (pipeline/copies.py).


@dataclass
class _Found:
    path: Path
    refused: str | None = None  # Why it is not read (a link, a FIFO, ...), else None.
    identity: tuple[int, int] | None = None
    links: int = 1
    name: str | None = None  # How a status names it, when not by its path (an entry of a zip).

    def shown(self, folder: Path) -> str:
        return shown(self.name or self.path.relative_to(folder))


def _refused_entry(folder: Path, name: str, why: str) -> _Found:
    """A file that was not extracted (``name`` as the zip has it), placed where its parts say, without ``..``."""
    parts = [part for part in name.replace("\\", "/").split("/") if part not in ("", ".", "..")]
    return _Found(folder.joinpath(*parts) if parts else folder / "unnamed", refused=why, name=name)


def shown(path) -> str:
    """A path as text that any log or CSV can hold: bytes that are not UTF-8 appear as ``\\xff``."""
    return os.fsencode(str(path)).decode("utf-8", "backslashreplace")


def describe(error: BaseException) -> str:
    """An exception as one short line for a status."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:300]}" if text else type(error).__name__


def _assignment_in(name: str, assignments: list[str]) -> tuple[str | None, str]:
    """Find the assignment id in a file name; return it and the text before it."""
    stem = name[:-len(".ipynb")] if name.endswith(".ipynb") else name
    stem = re.sub(r"^(Copy of |副本\s*)+", "", stem).strip()
    stem = re.sub(r"(\s*\(\d+\)|\s*-\s*Copy|_copy)+$", "", stem).strip()
    for assignment in sorted(assignments, key=len, reverse=True):
        position = stem.find(assignment)
        if position >= 0:
            return assignment, stem[:position].rstrip("_- ")
    return None, stem


def read_mapping(path: Path) -> dict[str, str]:
    """Read a CSV of ``file,student_id`` rows (a header row is allowed) into a dict.

    Raises:
        ValueError: naming the line, for a row without two fields or with an invalid student id.
    """
    mapping = {}
    for number, row in enumerate(csv.reader(path.read_text(encoding="utf-8").splitlines()), start=1):
        if not row or (number == 1 and [cell.strip().lower() for cell in row[:2]] == ["file", "student_id"]):
            continue
        if len(row) < 2 or not row[0].strip() or not student_id(row[1].strip()):
            raise ValueError(f"{path}, line {number}: expected 'file name,student id' with a valid student id "
                             f"({ID_RULE}), got {row}")
        mapping[row[0].strip()] = student_id(row[1].strip())
    return mapping


def _kind(mode: int) -> str | None:
    """What a file that is not a plain file or folder is, in words; None for those two."""
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a device file"), (stat.S_ISBLK, "a device file")):
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else "not a plain file"


def _walk(top: Path, found: list[_Found], problems: list[str], limit_s: float) -> None:
    """Add the notebooks and the special files under ``top`` to ``found``, without recursion or links.

    Over ``limit_s`` seconds, what was found under ``top`` is dropped and a problem says so.
    """
    deadline, start = time.monotonic() + limit_s, len(found)
    folders = [top]
    while folders:
        if time.monotonic() > deadline:
            del found[start:]
            problems.append(f"{shown(top)}: collect took too long (over {limit_s:g} s; a folder of that many files is "
                            "not a submission); needs a manual look, nothing in it was graded")
            return
        folder = folders.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError as error:
            problems.append(f"{shown(folder)}: cannot be read ({error.strerror or error}); needs a manual look")
            continue
        for entry in entries:
            deeper = _add(entry, found, problems)
            if deeper is not None:
                folders.append(deeper)


def _add(entry: os.DirEntry, found: list[_Found], problems: list[str]) -> Path | None:
    """Add a notebook or a special file to ``found``; return the folder to walk into, for a folder."""
    try:
        info = entry.stat(follow_symlinks=False)
    except FileNotFoundError:
        return None  # It went away while its folder was read.
    except OSError as error:
        problems.append(f"{shown(entry.path)}: cannot be read ({error.strerror or error}); needs a manual look")
        return None
    kind = _kind(info.st_mode)
    if kind:
        found.append(_Found(Path(entry.path), refused=kind))
    elif stat.S_ISDIR(info.st_mode):
        return Path(entry.path) if entry.name != ".ipynb_checkpoints" else None
    elif entry.name.endswith(".ipynb"):
        found.append(_Found(Path(entry.path), identity=(info.st_dev, info.st_ino), links=info.st_nlink))
    return None


def _owner(path: Path, folder: Path, assignments: list[str], mapping: dict[str, str], others: list[str] = ()
           ) -> tuple[str | None, str | None, str | None]:
    """(student, assignment, problem) of a file: from the mapping, its folder or its name.

    A file of one of ``others`` (the course's assignments that are not graded now) is neither: (student, None, "").
    """
    parts = path.relative_to(folder).parts
    assignment, prefix = _assignment_in(path.name, assignments)
    if len(parts) >= 3 and parts[-2] in assignments:
        assignment = parts[-2]
    relative = "/".join(parts)
    named = mapping.get(relative) or mapping.get(path.name) or (parts[0] if len(parts) >= 2 else prefix)
    student = student_id(named) if named else None
    if assignment is None:
        if others and (_assignment_in(path.name, others)[0] or (len(parts) >= 3 and parts[-2] in others)):
            return student, None, ""
        return student or named, None, (f"{shown(path)}: no assignment id ({', '.join(assignments)}) in its name or "
                                        "folder; needs a manual look")
    if not student:
        rename = f"the file to '<student>_{assignment}.ipynb'" if len(parts) == 1 else \
            f"the folder '{shown(parts[0])}' to the student's id"
        return None, assignment, (
            f"'{shown(relative)}': cannot tell a valid student id from its {'name' if len(parts) == 1 else 'folder'} "
            f"({ID_RULE}); needs a manual look: rename {rename}, or name its student in a --students CSV "
            "('file,student_id' rows), and grade again")
    return student, assignment, None


def collect(folder: Path, assignments: list[str], mapping: dict[str, str] | None = None,
            refused: list[tuple[str, str]] | None = None, limit_s: float = WALK_LIMIT_S, others: list[str] = ()
            ) -> tuple[list[Submission], list[Problem]]:
    """Find the submissions in ``folder``; return them and the problems found (one `Problem` each, a line).

    ``mapping`` gives the student id of files by their name (or path relative to ``folder``);
    it wins over the id taken from the folder or the file name. ``refused`` adds files that were
    not extracted (relative path, why: see grading/pipeline/zipped.py). Two or more files that map to the
    same student and assignment are all kept aside: the submission is returned with its
    ``rivals`` set, is not graded, and is reported as needing a manual look (the instructor
    chooses the file). A notebook that is a link, a FIFO, a socket or a device file, or a hard
    link with names outside the student's notebooks, is refused: its status names it. A notebook of one of
    ``others`` (the course's assignments not graded now) is left out without a problem.
    """
    mapping = mapping or {}
    found = [_refused_entry(folder, name, why) for name, why in refused or []]
    problems: list[str] = []
    try:
        tops = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError as error:
        return [], [Problem(f"{shown(folder)}: cannot be read ({error.strerror or error}); nothing was graded",
                            path=shown(folder))]
    for top in tops:  # Each entry with a time limit of its own.
        if _add(top, found, problems) is not None:
            _walk(Path(top.path), found, problems, limit_s)
    problems = [Problem(line) for line in problems]
    by_key: dict[tuple[str, str], list[_Found]] = {}
    stray: dict[str, list[str]] = {}  # A student's refused files that are no notebook of an assignment.
    for item in sorted(found, key=lambda item: item.path):
        student, assignment, problem = _owner(item.path, folder, assignments, mapping, others)
        if problem == "":
            continue  # A notebook of another assignment of the course, not graded now.
        if problem and item.refused and student and assignment is None:
            stray.setdefault(student, []).append(f"refused '{item.shown(folder)}': {item.refused} "
                                                 f"({_NEVER_FOLLOWED}; not read)")
        elif problem:
            where = item.name or shown(item.path)
            problems.append(Problem(f"refused {where}: {item.refused} ({_NEVER_FOLLOWED})" if item.refused else problem,
                                    path=item.shown(folder), assignment=assignment, student=student))
        else:
            by_key.setdefault((student, assignment), []).append(item)
    _refuse_outside_links(by_key)
    submissions = [_submission(student, assignment, items, folder) for (student, assignment), items in by_key.items()]
    graded: dict[str, list[Submission]] = {}
    for submission in submissions:
        if not submission.failure:
            graded.setdefault(submission.student, []).append(submission)
    for student, notes in stray.items():
        for submission in graded.get(student, []):
            submission.notes.extend(notes)
            submission.needs_manual_look = True
        if student not in graded:
            problems.extend(Problem(f"{student}: {note}", student=student) for note in notes)
    return submissions, problems


def _refuse_outside_links(by_key: dict[tuple[str, str], list[_Found]]) -> None:
    """Refuse a hard-linked notebook unless all its names are notebooks of the same student."""
    names: dict[tuple[str, tuple[int, int]], int] = {}
    for (student, _), items in by_key.items():
        for item in items:
            if item.identity and item.links > 1:
                names[(student, item.identity)] = names.get((student, item.identity), 0) + 1
    for (student, _), items in by_key.items():
        for item in items:
            if item.identity and item.links > names.get((student, item.identity), item.links):
                item.refused = (f"a hard link (the file has {item.links} names, not all of them notebooks in "
                                f"{student}'s submission)")


def _submission(student: str, assignment: str, items: list[_Found], folder: Path) -> Submission:
    """The submission of one student and assignment from the files that map to it."""
    first = items[0]
    renamed = first.path.name != f"{assignment}.ipynb"
    notes = [f"renamed '{shown(first.path.name)}' to '{assignment}.ipynb'"] if renamed else []
    submission = Submission(student, assignment, first.path, notes, root=folder, identity=first.identity,
                            rivals=[item.path for item in items[1:]] or None)
    files = ", ".join(f"'{item.shown(folder)}'" for item in items)
    refusals = [f"refused '{item.shown(folder)}': {item.refused}" for item in items if item.refused]
    if refusals:
        submission.notes = ["; ".join(refusals) + f" ({_NEVER_FOLLOWED}); none of {files} was graded"
                            if len(items) > 1 else "; ".join(refusals) + f" ({_NEVER_FOLLOWED})"]
    elif submission.rivals:
        submission.notes = [f"{len(items)} files for {student}/{assignment} ({files}); none was graded: keep one and "
                            "grade again"]
    if refusals or submission.rivals:
        submission.needs_manual_look = True
        submission.failure = "needs a manual look: " + "; ".join(submission.notes)
    return submission


def _open_folder(root: Path, folder: Path) -> int:
    """A descriptor of ``folder``, opened from ``root`` one name at a time, never through a link.

    Raises:
        Unreadable: when a name on the way is a link or not a folder, or cannot be opened.
    """
    parts = folder.relative_to(root).parts
    descriptor = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    for index, name in enumerate(parts):
        try:
            opened = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=descriptor)
        except OSError as error:
            why = "is a link or not a folder" if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) else \
                f"cannot be opened ({error.strerror or error})"
            raise Unreadable(f"'{shown('/'.join(parts[:index + 1]))}' {why} ({_NEVER_FOLLOWED})") from None
        finally:
            os.close(descriptor)
        descriptor = opened
    return descriptor


def open_submitted(path: Path, root: Path | None = None, identity: tuple[int, int] | None = None):
    """Open a submitted file for reading, beneath ``root`` (its folder when None), never through a link.

    It must be a regular file, and the one found when collecting (``identity``) when given.

    Raises:
        Unreadable: for a link, a FIFO, a device, a file that changed since, or one that cannot be opened.
    """
    root = root or path.parent
    parent = _open_folder(root, path.parent)
    try:
        # Looked at before it is opened: opening a FIFO or a device can block or act.
        problem = _kind(os.stat(path.name, dir_fd=parent, follow_symlinks=False).st_mode)
        if problem:
            raise Unreadable(f"'{shown(path.name)}' is {problem} ({_NEVER_FOLLOWED})")
        descriptor = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent)
    except OSError as error:
        raise Unreadable(f"'{shown(path.name)}' cannot be opened ({error.strerror or error})") from None
    finally:
        os.close(parent)
    info = os.fstat(descriptor)
    problem = _kind(info.st_mode)
    if not problem and identity and (info.st_dev, info.st_ino) != tuple(identity):
        problem = "a different file from the one found when collecting (it changed meanwhile)"
    if problem:
        os.close(descriptor)
        raise Unreadable(f"'{shown(path.name)}' is {problem} ({_NEVER_FOLLOWED})")
    os.set_blocking(descriptor, True)
    return os.fdopen(descriptor, "rb")


def read_submitted(submission: Submission, max_bytes: int | None) -> bytes:
    """The bytes of a submission's file, read as `open_submitted` opens it.

    Raises:
        Unreadable: as `open_submitted`, and for a file of more than ``max_bytes``.
    """
    with open_submitted(submission.path, submission.root, submission.identity) as handle:
        size = os.fstat(handle.fileno()).st_size
        if max_bytes and size > max_bytes:
            raise Unreadable(f"the file has {size / 2**20:.0f} MB, more than the {max_bytes / 2**20:g} MB a notebook "
                             "may have here (--max-notebook-mb)")
        data = handle.read(max_bytes + 1 if max_bytes else -1)
    if max_bytes and len(data) > max_bytes:
        raise Unreadable(f"the file grew past the {max_bytes / 2**20:g} MB a notebook may have here "
                         "(--max-notebook-mb)")
    return data


def file_digest(path: Path, root: Path | None, identity=None, max_bytes: int | None = None) -> bytes:
    """A SHA-256 of a submitted file (of its name and why, for one that is refused), read in chunks.

    Past ``max_bytes`` only the size counts: such a file is not graded anyway.
    """
    digest = hashlib.sha256()
    try:
        with open_submitted(path, root, identity) as handle:
            size = os.fstat(handle.fileno()).st_size
            if max_bytes and size > max_bytes:
                digest.update(f"too large: {size}".encode())
            else:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(chunk)
    except (Unreadable, OSError) as why:
        digest.update(f"refused: {why}".encode())
    return digest.digest()
