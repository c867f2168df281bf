"""Reads a .zip of submissions (as LMSs deliver them) into a scratch folder, safely.

Only the notebooks are written, as plain files that this module creates in a fresh folder: an
entry that is a symbolic link (or any file that is not a plain file), that has an absolute path, a
``..`` part, a backslash or a drive, that is encrypted or that appears twice is never written; a
notebook larger than ``--max-notebook-mb`` is cut off when its bytes exceed the limit (the size
the zip claims is not trusted), and a zip of more than `MAX_ENTRIES` entries or `MAX_TOTAL_BYTES`
of notebooks is read no further. A refused notebook is handed to the collector with the reason,
so that its student's status names it. The folder is removed when grading is done.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from grading.pipeline.cleanup import remove_tree

MAX_ENTRIES = 100_000
MAX_TOTAL_BYTES = 8 << 30
_CHUNK = 1 << 20


def _problem(info: zipfile.ZipInfo) -> str | None:
    """Why an entry of the zip is not written, or None for a plain file with a safe name."""
    name = info.filename
    parts = PurePosixPath(name).parts
    if name.startswith("/") or "\\" in name or "\x00" in name or (parts and ":" in parts[0]):
        return "an absolute or Windows path"
    if any(part in ("..", ".") for part in name.split("/")):
        return "a path with '..' or '.'"
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_IFMT(mode) and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):  # No type: a plain file.
        return "not a plain file"
    if info.flag_bits & 0x1:
        return "encrypted"
    return None


def _write(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, max_bytes: int | None) -> int:
    """Write one entry to ``target`` (a new file); return its size. Past ``max_bytes`` the file is removed.

    Raises:
        ValueError: for an entry whose bytes exceed ``max_bytes``.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(descriptor, "wb") as handle, archive.open(info) as entry:
        for chunk in iter(lambda: entry.read(_CHUNK), b""):
            written += len(chunk)
            if max_bytes and written > max_bytes:
                break
            handle.write(chunk)
    if max_bytes and written > max_bytes:
        target.unlink()
        raise ValueError(f"it has more than the {max_bytes / 2**20:g} MB a notebook may have here "
                         "(--max-notebook-mb)")
    return written


def extract_notebooks(path: Path, folder: Path, max_bytes: int | None, log=print) -> list[tuple[str, str]]:
    """Write the notebooks of the zip ``path`` into the empty ``folder``; return (name, why) of each refused one.

    Entries that are not notebooks are skipped; a link or special file among them is logged.

    Raises:
        ValueError: when ``path`` is not a readable zip.
    """
    refused: list[tuple[str, str]] = []
    seen: set[str] = set()
    total = 0
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise ValueError(f"{path} is not a readable zip: {error}") from None
    with archive:
        for count, info in enumerate(archive.infolist()):
            if count >= MAX_ENTRIES or total > MAX_TOTAL_BYTES:
                log(f"WARNING: {path} has more than {MAX_ENTRIES} entries or {MAX_TOTAL_BYTES >> 30} GiB of "
                    "notebooks; the rest was not read")
                break
            name = info.filename.rstrip("/") if info.is_dir() else info.filename
            notebook = name.endswith(".ipynb") and ".ipynb_checkpoints" not in name.split("/")
            problem = _problem(info)
            if notebook and (problem or name in seen):
                refused.append((name, problem or "in the zip twice"))
                continue
            if problem:
                log(f"skipped: '{name}' in {path}: {problem}; not extracted")
                continue
            if not notebook or info.is_dir():
                continue
            seen.add(name)
            try:
                total += _write(archive, info, folder / name, max_bytes)
            except (ValueError, zipfile.BadZipFile, OSError, EOFError) as error:
                refused.append((name, f"not extracted from the zip: {error}"))
    return refused


@contextlib.contextmanager
def submissions_folder(path: Path, max_bytes: int | None, log=print):
    """Yield (folder, refused): ``path`` itself for a folder; for a zip, a scratch folder of its notebooks.

    The scratch folder is removed afterwards, whatever happens.
    """
    if not (Path(path).is_file() and zipfile.is_zipfile(path)):
        yield Path(path), []
        return
    folder = Path(tempfile.mkdtemp(prefix="course-zip-"))
    try:
        refused = extract_notebooks(Path(path), folder, max_bytes, log)
        log(f"read {path}: its notebooks are graded from a scratch folder; {len(refused)} refused")
        yield folder, refused
    finally:
        remove_tree(folder, log)
