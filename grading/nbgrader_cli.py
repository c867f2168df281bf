"""Runs nbgrader's command line in a course directory, each call in its own process group."""

from __future__ import annotations

import os
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


def nbgrader(args: list[str], root: Path, timeout: float | None = None, autograding: bool = False) -> Run:
    """Run ``nbgrader <args>`` with ``root`` as the course directory.

    The environment's ``bin/`` goes first on PATH (nbgrader runs ``alembic``). With
    ``autograding`` the kernels see ``COURSE_AUTOGRADE=1``, which silences progress bars. When
    ``timeout`` seconds pass, the whole process group (nbgrader and its kernel) is killed.
    """
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONWARNINGS"] = "ignore"
    if autograding:
        env["COURSE_AUTOGRADE"] = "1"
    process = subprocess.Popen([sys.executable, "-m", "nbgrader", *args], cwd=root, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
        return Run(process.returncode, output, timed_out=False)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return Run(-signal.SIGKILL, output, timed_out=True)
