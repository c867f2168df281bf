"""What a grading run prepares that depends on nothing a student sent: made once per machine, kept by content hash.

Every run grades in a scratch course directory of its own (shards never write the course), which
needs the release notebooks and a gradebook that defines the assignments: nbgrader's
``generate_assignment``, seconds of CPU for the eight notebooks. Every run also checks that the
sandbox isolates (grading/isolation/probe.py: `probe`, a sandboxed Python that imports the course). Both
depend only on what is hashed here, so a run reuses what an earlier run on the same machine made:

- `scratch_course`: the generated ``release/`` and ``gradebook.db`` are kept under a hash of the
  source notebooks, ``nbgrader_config.py``, the grading package's code and the versions of Python
  and nbgrader; each run copies them into its own scratch directory.
- `probe_once`: a probe that passed is remembered under a hash of bubblewrap (path, version, size,
  time), the Linux kernel's release, the Python executable, the sandbox's code and the plan's
  settings. The paths a run must hide are checked every run: none may lie inside a folder that the
  sandbox shows.

The cache lives in ``$COURSE_GRADING_CACHE``, else ``$XDG_CACHE_HOME/course-grading``, else
``~/.cache/course-grading``; deleting it is always safe.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from grading.isolation import probe, sandbox


def cache_dir() -> Path:
    folder = os.environ.get("COURSE_GRADING_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache"), "course-grading")
    Path(folder).mkdir(parents=True, exist_ok=True)
    return Path(folder)


def _digest(parts: list[bytes]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()[:40]


def course_key(root: Path, assignments: list[str]) -> str:
    """The hash of everything ``generate_assignment`` reads for ``assignments`` in the course at ``root``."""
    import nbgrader

    grading_code = root / "grading" if (root / "grading").is_dir() else Path(__file__).parents[1]
    files = {"nbgrader_config.py": root / "nbgrader_config.py"}
    files.update({f"grading/{path.relative_to(grading_code)}": path for path in sorted(grading_code.rglob("*.py"))})
    for assignment in sorted(assignments):
        folder = root / "source" / assignment
        files.update({str(path.relative_to(root)): path for path in sorted(folder.rglob("*"))
                      if path.is_file() and ".ipynb_checkpoints" not in path.parts})
    parts = [sys.version.encode(), nbgrader.__version__.encode(), json.dumps(sorted(assignments)).encode()]
    for name, path in files.items():
        parts += [name.encode(), path.read_bytes() if path.exists() else b""]
    return _digest(parts)


def scratch_course(root: Path, assignments: list[str], generate) -> Path:
    """A new scratch course directory: ``nbgrader_config.py``, ``source/`` (links), ``release/`` and ``gradebook.db``.

    ``generate(course)`` runs ``generate_assignment`` in a scratch course (grading/grade.py); it
    runs only when this machine has not kept its result for the same inputs yet.
    """
    kept = cache_dir() / f"course-{course_key(root, assignments)}"
    if not (kept / "gradebook.db").exists():
        building = Path(tempfile.mkdtemp(prefix="building-", dir=cache_dir()))
        try:
            generate(_new_course(root, assignments, building / "course"))
            (building / "result").mkdir()
            shutil.move(str(building / "course" / "release"), building / "result" / "release")
            shutil.move(str(building / "course" / "gradebook.db"), building / "result" / "gradebook.db")
            try:
                os.rename(building / "result", kept)  # Atomic; another run may have won the race.
            except OSError:
                pass
        finally:
            shutil.rmtree(building, ignore_errors=True)
    course = _new_course(root, assignments, Path(tempfile.mkdtemp(prefix="course-grading-")))
    shutil.copytree(kept / "release", course / "release")
    shutil.copy(kept / "gradebook.db", course / "gradebook.db")
    return course


def _new_course(root: Path, assignments: list[str], course: Path) -> Path:
    course.mkdir(exist_ok=True)
    shutil.copy(root / "nbgrader_config.py", course / "nbgrader_config.py")
    (course / "source").mkdir()
    for assignment in assignments:
        (course / "source" / assignment).symlink_to((root / "source" / assignment).resolve())
    (course / "jobs").mkdir()
    (course / "exchange").mkdir()
    return course


def _file_identity(path: str | None) -> list:
    if not path:
        return [None]
    real = os.path.realpath(path)
    status = os.stat(real)
    return [real, status.st_size, status.st_mtime_ns]


def probe_key(plan: sandbox.Plan) -> str:
    """The hash of what decides whether the sandbox isolates, for ``plan`` on this machine."""
    settings = {key: value for key, value in vars(plan).items() if key != "socket_dir"}
    facts = [_file_identity(sandbox.bwrap_path()), sandbox.bwrap_version(), list(os.uname()), os.geteuid(),
             _file_identity(sys.executable), settings]
    return _digest([json.dumps(facts, default=str).encode(), Path(sandbox.__file__).read_bytes(),
                    Path(probe.__file__).read_bytes()])


def exposed(plan: sandbox.Plan, paths: list[str]) -> list[str]:
    """The ``paths`` that lie inside a folder the sandbox shows (the kept folders, the system's)."""
    shown = [os.path.realpath(folder) for folder in [*plan.kept, *sandbox.SHOWN]]
    found = []
    for path in paths:
        real = os.path.realpath(path)
        if any(real == folder or real.startswith(folder.rstrip("/") + "/") for folder in shown):
            found.append(path)
    return found


def probe_once(plan: sandbox.Plan, secrets: list[str]) -> str | None:
    """`probe.probe`, run only when no earlier probe passed with the same `probe_key`; None when it isolates."""
    visible = exposed(plan, secrets)
    if visible:
        return f"the sandbox would show {visible}"
    marker = cache_dir() / f"probe-{probe_key(plan)}"
    if marker.exists():
        return None
    problem = probe.probe(plan, secrets)
    if problem is None:
        marker.touch()
    return problem
