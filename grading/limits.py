"""Limits on a student's whole process tree: memory and number of processes, through cgroups.

A per-process limit (an rlimit) is fresh in every forked child, so a student's kernel that forks
ten children may use ten times its memory. A cgroup counts the whole tree: each student gets one,
with ``memory.max``/``pids.max`` (cgroup v2) or ``memory.limit_in_bytes``/``pids.max`` (the
cgroup v1 memory and pids controllers), and every kernel of the student joins it before it starts
(grading/sandbox.py). After the student, every process left in it is killed and it is removed.

Where no cgroup can be made (no controllers, or no write access to them), the limits fall back to
rlimits per process, and `setup` says in its warning what is then not limited.
"""

from __future__ import annotations

import errno
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Limits:
    """The cgroup folders of one grading run (none with the rlimit fallback), and how it limits."""

    kind: str  # "cgroup v2", "cgroup v1" or "rlimits"
    folders: list[Path] = field(default_factory=list)  # The run's folders, one per hierarchy.
    warning: str | None = None


def _mounts(mountinfo: str) -> list[tuple[str, str, str, set[str]]]:
    """(root, mount point, type, options) of each cgroup file system in /proc/self/mountinfo."""
    found = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if " - " not in line:
            continue
        left, right = line.split(" - ", 1)
        fstype, _, super_options = (right.split() + ["", ""])[:3]
        if fstype in ("cgroup", "cgroup2"):
            options = set(fields[5].split(",")) | set(super_options.split(","))
            found.append((fields[3], fields[4], fstype, options))
    return found


def _own_cgroups(cgroup_file: str) -> dict[str, str]:
    """This process's cgroup path per controller ("" for the v2 unified hierarchy)."""
    paths = {}
    for line in cgroup_file.splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


def _folder(mount: tuple[str, str, str, set[str]], path: str) -> Path:
    root, point = mount[0], mount[1]
    relative = os.path.relpath(path, root) if path.startswith(root) else path.lstrip("/")
    return Path(point) / ("" if relative == "." else relative)


def setup(name: str, proc: Path = Path("/proc")) -> Limits:
    """Make this run's cgroup folders named ``name`` under this process's own cgroups.

    cgroup v2 is used when this process's cgroup has the memory and pids controllers and can give
    them to children; otherwise cgroup v1 when its memory and pids hierarchies are writable;
    otherwise the rlimit fallback, with a warning.
    """
    try:
        mounts = _mounts((proc / "self" / "mountinfo").read_text())
        own = _own_cgroups((proc / "self" / "cgroup").read_text())
    except OSError as error:
        return _fallback(f"cannot read this process's cgroups ({error})")
    problems = []
    unified = next((m for m in mounts if m[2] == "cgroup2"), None)
    if unified is not None and "" in own:
        parent = _folder(unified, own[""])
        try:
            return _setup_v2(parent, name)
        except OSError as error:
            problems.append(f"cgroup v2 at {parent}: {error.strerror or error}")
    v1 = {controller: next((m for m in mounts if m[2] == "cgroup" and controller in m[3]), None)
          for controller in ("memory", "pids")}
    if all(v1.values()) and all(c in own for c in v1):
        folders = [_folder(v1[c], own[c]) / name for c in ("memory", "pids")]
        try:
            for folder in folders:
                folder.mkdir()
            return Limits("cgroup v1", folders)
        except OSError as error:
            for folder in folders:
                _remove(folder)
            problems.append(f"cgroup v1: {error.strerror or error} ({error.filename})")
    else:
        problems.append("no cgroup v1 memory and pids hierarchies")
    return _fallback("; ".join(problems))


def _setup_v2(parent: Path, name: str) -> Limits:
    available = set((parent / "cgroup.controllers").read_text().split())
    if not {"memory", "pids"} <= available:
        raise OSError(errno.ENOTSUP, f"the controllers here are {sorted(available) or 'none'}, not memory and pids")
    enabled = set((parent / "cgroup.subtree_control").read_text().split())
    if not {"memory", "pids"} <= enabled:
        try:
            (parent / "cgroup.subtree_control").write_text("+memory +pids")
        except OSError as error:
            if error.errno != errno.EBUSY:
                raise
            # A cgroup with processes in it cannot give controllers to children. Where this
            # process is the only one (a delegated scope, a container's grader), it moves into
            # a leaf of its own first, as systemd's delegation rules ask.
            procs = (parent / "cgroup.procs").read_text().split()
            if procs != [str(os.getpid())]:
                raise OSError(errno.EBUSY, "other processes share this cgroup, so it cannot give memory and "
                              "pids to children (run the grader in a delegated scope: systemd-run --scope "
                              "-p Delegate=yes ...)") from None
            leaf = parent / f"{name}-grader"
            leaf.mkdir(exist_ok=True)
            (leaf / "cgroup.procs").write_text(str(os.getpid()))
            (parent / "cgroup.subtree_control").write_text("+memory +pids")
    folder = parent / name
    folder.mkdir()
    (folder / "cgroup.subtree_control").write_text("+memory +pids")
    return Limits("cgroup v2", [folder])


def _fallback(reason: str) -> Limits:
    return Limits("rlimits", [], warning=(
        f"WARNING: no cgroup for the students' process trees here ({reason}). Memory is limited per "
        "process (RLIMIT_DATA), so the processes a student's kernel forks may together use more; the "
        "number of processes is limited per student uid (RLIMIT_NPROC) only when the grader runs as "
        "root with the sandbox on, and not at all otherwise."))


def student_cgroups(limits: Limits, name: str, memory_bytes: int | None, max_processes: int | None) -> list[str]:
    """Make one student's cgroup folders with the limits written; return them (empty: rlimits)."""
    folders = []
    for parent in limits.folders:
        folder = parent / name
        folder.mkdir(exist_ok=True)
        folders.append(folder)
        if limits.kind == "cgroup v2":
            if memory_bytes:
                (folder / "memory.max").write_text(str(memory_bytes))
                _write_if_present(folder / "memory.swap.max", "0")
            if max_processes:
                (folder / "pids.max").write_text(str(max_processes))
        elif (folder / "memory.limit_in_bytes").exists():
            if memory_bytes:
                (folder / "memory.limit_in_bytes").write_text(str(memory_bytes))
                _write_if_present(folder / "memory.memsw.limit_in_bytes", str(memory_bytes))
        elif max_processes:
            (folder / "pids.max").write_text(str(max_processes))
    return [str(folder) for folder in folders]


def _write_if_present(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError:
        pass  # Swap accounting is off on this machine; the memory limit still holds.


def processes(folder: Path) -> list[int]:
    """The processes in a cgroup folder; none when it is gone."""
    try:
        return [int(pid) for pid in (Path(folder) / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def kill_and_remove(folders: list[str], timeout: float = 10.0) -> int:
    """Kill every process in the cgroup folders, then remove them; return how many were found.

    Processes may end on their own meanwhile (a kill finds nothing, or a folder is gone already);
    that is no error. A process that cannot be killed within ``timeout`` leaves its folder behind.
    """
    found: set[int] = set()
    deadline = time.monotonic() + timeout
    for folder in map(Path, folders):
        _write_if_present(folder / "cgroup.kill", "1")
        while True:
            pids = processes(folder)
            found.update(pids)
            if not pids or time.monotonic() > deadline:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.02)
        _remove(folder)
    return len(found)


def _remove(folder: Path, attempts: int = 50) -> None:
    for _ in range(attempts):
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as error:
            if error.errno != errno.EBUSY:
                return
            time.sleep(0.02)


def teardown(limits: Limits) -> None:
    """Remove the run's cgroup folders (and their student folders, killing what is left)."""
    for folder in limits.folders:
        try:
            children = [str(child) for child in folder.iterdir() if child.is_dir()]
        except OSError:
            children = []
        kill_and_remove(children)
        _remove(folder)
