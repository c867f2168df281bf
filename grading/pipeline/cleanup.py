"""Removing what a grading run leaves behind, whatever a kernel put in it, without ever failing the batch.

A kernel writes in its socket folder whatever it likes: 3,000 nested folders (deeper than a path
can name), names that are not UTF-8, folders without permissions, files it keeps open, links out
of the folder. ``shutil.rmtree`` recurses in Python and raised RecursionError on such a tree, which
``ignore_errors`` does not cover, so the batch died without its CSV. `remove_tree` runs coreutils'
``rm -rf --one-file-system`` instead: it walks any depth with file descriptors, never follows a
symbolic link, and never leaves the file system the folder is on (a mount inside it stays). When
that fails it gives the owner back the permissions of every folder (``find -xdev`` running
``chmod u+rwx`` on each folder before it reads it: no link is followed, no mount entered) and
tries once more; not when a mount is in the way, so that nothing on it is touched. What still
cannot be removed is one line in the log, never an exception.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

# A removal that takes longer than this (a hung network file system) is given up and logged.
TIMEOUT_S = 600


def _run(command: list[str]) -> str | None:
    """Run a coreutils command; return its first line of errors when it fails, else None."""
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return f"{command[0]} took more than {TIMEOUT_S} s"
    except OSError as error:  # No rm here (not a GNU system): the fallback below says so.
        return f"{command[0]} could not run: {error}"
    if done.returncode == 0:
        return None
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[0][:300] if lines else f"{command[0]} exited with {done.returncode}"


def _fallback(path: Path) -> str | None:
    """Remove ``path`` with shutil where coreutils' rm could not run; any failure is returned, not raised."""
    try:
        shutil.rmtree(path)
    except Exception as error:  # noqa: BLE001 - RecursionError included: the caller logs it.
        return f"{type(error).__name__}: {str(error)[:300]}"
    return None


def remove_tree(path: str | os.PathLike, log=print) -> bool:
    """Remove the folder ``path`` and everything in it; return whether it is gone.

    A symbolic link at ``path`` is removed itself, never followed. A failure is logged as one
    line (``could not remove PATH: why``) and returned as False; this never raises.
    """
    path = Path(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError as error:
        log(f"WARNING: could not remove {path}: {error}")
        return False
    if not stat.S_ISDIR(info.st_mode):
        try:
            path.unlink()
            return True
        except OSError as error:
            log(f"WARNING: could not remove {path}: {error}")
            return False
    problem = _run(["rm", "-rf", "--one-file-system", "--", str(path)])
    if problem and os.path.lexists(path) and "different device" not in problem:
        _run(["find", str(path), "-xdev", "-type", "d", "!", "-perm", "-u=rwx", "-exec", "chmod", "u+rwx", "--", "{}",
              ";"])
        problem = _run(["rm", "-rf", "--one-file-system", "--", str(path)])
        if problem and "could not run" in problem:
            problem = _fallback(path)
    if os.path.lexists(path):
        log(f"WARNING: could not remove {path}: {problem or 'it is still there'}")
        return False
    return True


def attempt(action, what: str, log=print) -> bool:
    """Run one step of a cleanup; a failure is one line in the log, never an exception. Return whether it worked."""
    try:
        action()
        return True
    except Exception as error:  # noqa: BLE001 - cleanup goes on whatever one step does.
        log(f"WARNING: could not {what}: {type(error).__name__}: {str(error)[:300]}")
        return False
