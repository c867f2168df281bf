"""Runs nbgrader's command line in a course directory, each call in its own process group."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
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


def nbgrader(args: list[str], root: Path, timeout: float | None = None, autograding: bool = False,
             memory_limit_gb: float | None = None) -> Run:
    """Run ``nbgrader <args>`` with ``root`` as the course directory.

    The environment's ``bin/`` goes first on PATH (nbgrader runs ``alembic``). With
    ``autograding`` the kernels see ``COURSE_AUTOGRADE=1``, which silences progress bars. When
    ``timeout`` seconds pass, the whole process group (nbgrader and its kernel) is killed. With
    ``memory_limit_gb`` each of those processes may use at most that much memory; a student's
    huge allocation then fails with MemoryError in its cell instead of exhausting the machine.
    """
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONWARNINGS"] = "ignore"
    if autograding:
        env["COURSE_AUTOGRADE"] = "1"
    process = subprocess.Popen([sys.executable, "-m", "nbgrader", *args], cwd=root, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True,
                               preexec_fn=(lambda: _limit_memory(int(memory_limit_gb * 2**30))) if memory_limit_gb else None)
    try:
        output, _ = process.communicate(timeout=timeout)
        return Run(process.returncode, output, timed_out=False)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return Run(-signal.SIGKILL, output, timed_out=True)
