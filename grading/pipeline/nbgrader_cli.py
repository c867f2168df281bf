"""Runs nbgrader's command line in a course directory, each call in its own process group."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Run:
    """What one nbgrader call did."""

    returncode: int
    output: str
    timed_out: bool


def _limit_memory(limit_bytes: int) -> None:
    # RLIMIT_DATA counts the memory a process writes to (heap, anonymous mappings), not address
    # space that is only reserved, so CUDA's large reservations still work under it.
    resource.setrlimit(resource.RLIMIT_DATA, (limit_bytes, limit_bytes))


def tools_on_path() -> None:
    """Put this environment's ``bin/`` first on PATH: nbgrader runs ``alembic`` to make a new gradebook."""
    tools = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != tools:
        os.environ["PATH"] = tools + os.pathsep + os.environ.get("PATH", "")


def nbgrader(args: list[str], root: Path, timeout: float | None = None, autograding: bool = False,
             memory_limit_gb: float | None = None, environment: dict[str, str] | None = None) -> Run:
    """Run ``nbgrader <args>`` with ``root`` as the course directory.

    The environment's ``bin/`` goes first on PATH (nbgrader runs ``alembic``). With
    ``autograding`` the kernels see ``COURSE_AUTOGRADE=1``, which silences progress bars. When
    ``timeout`` seconds pass, the whole process group (nbgrader and its kernel) is killed. With
    ``memory_limit_gb`` each of those processes may use at most that much memory; a student's
    huge allocation then fails with MemoryError in its cell instead of exhausting the machine.
    ``environment`` adds variables for nbgrader (grading.isolation.guard reads ``COURSE_SANDBOX_PLAN``).
    """
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONWARNINGS"] = "ignore"
    if autograding:
        env["COURSE_AUTOGRADE"] = "1"
    env.update(environment or {})
    # Output goes to a file, not a pipe: a process that a kernel leaves behind may hold the pipe open
    # for ever, and reading a pipe to its end would then wait for it.
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as output:
        process = subprocess.Popen([sys.executable, "-m", "nbgrader", *args], cwd=root, env=env,
                                   stdout=output, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                                   preexec_fn=(lambda: _limit_memory(int(memory_limit_gb * 2**30)))
                                   if memory_limit_gb else None)
        try:
            process.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            timed_out = True
        output.seek(0)
        return Run(-signal.SIGKILL if timed_out else process.returncode, output.read(), timed_out=timed_out)
