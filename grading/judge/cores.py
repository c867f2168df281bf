"""One CPU core for a judge and the kernel it serves.

The judge and the student's kernel take turns: one sends a request and waits, the other answers and
waits. When the two run on different cores, every message wakes a process on the other core (an
interrupt between cores, a cold cache there); on one core the sender's wait hands the core to the
receiver directly. Measured on this course's 2-core machine (2026-12-02): a bare request and reply
over a Unix socket cost 16 µs of CPU on one core against 35-40 µs across two; notebook 08's
reference tests through the judge 22.8 CPU-seconds against 41.3. So the grading command runs each
``--jobs`` slot (its grading process, judge, sandboxed kernels and everything they start) on a core
of its own (`core_for`, ``--no-pin-cpus`` to turn it off), and the mutation suite's harness runs a
judge and its kernel on the core it found itself on (`current_core`).

Pinning is a placement, not a limit: a student's code can widen its own affinity
(``os.sched_setaffinity``, which the scan flags for a look), and its cgroup's CPU quota is what
bounds it (grading/isolation/limits.py).
"""

from __future__ import annotations

import os


def allowed_cores() -> list[int]:
    """The cores this process may run on (a Slurm job's or a container's share of the machine)."""
    if not hasattr(os, "sched_getaffinity"):
        return []
    return sorted(os.sched_getaffinity(0))


def core_for(slot: int, cores: list[int] | None = None, offset: int | None = None) -> int | None:
    """The core of the ``slot``-th job: distinct slots get distinct cores while there are enough of them.

    ``offset`` (default: this process's id) turns the assignment, so that two grading commands started on one
    machine do not both begin at its first core. None where affinity cannot be set.
    """
    cores = allowed_cores() if cores is None else cores
    if not cores:
        return None
    return cores[(slot + (os.getpid() if offset is None else offset)) % len(cores)]


def current_core() -> int | None:
    """The core this thread ran on last (field 39 of /proc/thread-self/stat), if it is one it may use."""
    try:
        with open("/proc/thread-self/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        core = int(fields[36])  # Field 39 of the whole line; the first two (pid, comm) are before the split.
    except (OSError, IndexError, ValueError):
        return None
    return core if core in allowed_cores() else None


def pin(core: int | None) -> None:
    """Run this thread, and the processes it starts from now on, on ``core`` only (nothing when None)."""
    if core is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {core})
