"""Limits on a student's whole process tree: memory, processes and CPU, through cgroups.

A per-process limit (an rlimit) is fresh in every forked child, so a student's kernel that forks
ten children may use ten times its memory. A cgroup counts the whole tree: each student gets one,
with ``memory.max``/``pids.max`` (cgroup v2) or ``memory.limit_in_bytes``/``pids.max`` (the
cgroup v1 memory and pids controllers), and every kernel of the student joins it before it starts
(grading/isolation/sandbox.py). After the student, every process left in it is killed and it is removed.

CPU is shared fairly through the cpu controller where there is one: every student's cgroup has
the same weight (``cpu.weight`` on v2, ``cpu.shares`` on v1), so students graded at once get
equal parts of a busy machine however many processes each one starts, and a quota of
``--cpus-per-student`` cores (``cpu.max``; ``cpu.cfs_quota_us``), so that no student takes more.
The same cgroup counts the CPU time the student's processes got (`cpu_seconds`: ``cpu.stat`` on
v2, ``cpuacct.usage`` on v1), which `accounting_group` also gives any measurement of its own.

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

# A quota of this many microseconds of CPU per period (cgroup v1's and v2's default period).
_PERIOD_US = 100_000
# Equal weights for every student: a sibling cgroup's share of a busy CPU is its weight's share.
_WEIGHT_V2, _SHARES_V1 = "100", "1024"


@dataclass
class Limits:
    """The cgroup folders of one grading run (none with the rlimit fallback), and how it limits."""

    kind: str  # "cgroup v2", "cgroup v1" or "rlimits"
    folders: list[Path] = field(default_factory=list)  # The run's folders, one per hierarchy.
    warning: str | None = None
    cpu: bool = False  # Whether students' cgroups get a CPU weight and quota (the cpu controller).
    cpuset: bool = False  # Whether a student's cgroup can confine its processes to its job's cores (cpuset).


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


def _v1_folder(mounts: list, own: dict[str, str], controller: str) -> Path | None:
    """This process's folder in the cgroup v1 hierarchy that has ``controller``; None without one."""
    mount = next((m for m in mounts if m[2] == "cgroup" and controller in m[3]), None)
    return _folder(mount, own[controller]) if mount is not None and controller in own else None


def setup(name: str, proc: Path = Path("/proc")) -> Limits:
    """Make this run's cgroup folders named ``name`` under this process's own cgroups.

    cgroup v2 is used when this process's cgroup has the memory and pids controllers and can give
    them to children (and the cpu controller, when it has it); otherwise cgroup v1 when its memory
    and pids hierarchies are writable (and its cpu and cpuacct hierarchies, when there are any);
    otherwise the rlimit fallback, with a warning. Without a cpu controller the limits still hold,
    and the warning says that CPU is not shared.
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
            return _without_cpu_warning(_setup_v2(parent, name))
        except OSError as error:
            problems.append(f"cgroup v2 at {parent}: {error.strerror or error}")
    required = [_v1_folder(mounts, own, c) for c in ("memory", "pids")]
    if all(required):
        optional = [_v1_folder(mounts, own, c) for c in ("cpu", "cpuacct")]
        folders = list(dict.fromkeys(f / name for f in [*required, *optional] if f is not None))
        made: list[Path] = []
        try:
            for folder in folders:
                folder.mkdir()
                made.append(folder)
            cpu = optional[0] is not None
            cpuset = _v1_cpuset_folder(_v1_folder(mounts, own, "cpuset"), name)
            if cpuset is not None:
                folders.append(cpuset)
            return _without_cpu_warning(Limits("cgroup v1", folders, cpu=cpu, cpuset=cpuset is not None))
        except OSError as error:
            for folder in made:
                _remove(folder)
            problems.append(f"cgroup v1: {error.strerror or error} ({error.filename})")
    else:
        problems.append("no cgroup v1 memory and pids hierarchies")
    return _fallback("; ".join(problems))


def _v1_cpuset_folder(parent: Path | None, name: str) -> Path | None:
    """The run's folder in cgroup v1's cpuset hierarchy, with its parent's cores and memory nodes (a v1 cpuset takes
    no process until both are set); None where there is none or it cannot be made (students then share cores)."""
    if parent is None:
        return None
    folder = parent / name
    try:
        folder.mkdir()
        _confine_v1(folder, None)
    except OSError:
        _remove(folder)
        return None
    return folder


def _without_cpu_warning(limits: Limits) -> Limits:
    if not limits.cpu:
        limits.warning = ("WARNING: no cgroup cpu controller here: CPU is not shared between the students graded "
                          "at once, so a student who keeps every core busy slows the others down.")
    return limits


def _setup_v2(parent: Path, name: str) -> Limits:
    available = set((parent / "cgroup.controllers").read_text().split())
    if not {"memory", "pids"} <= available:
        raise OSError(errno.ENOTSUP, f"the controllers here are {sorted(available) or 'none'}, not memory and pids")
    wanted = {"memory", "pids"} | ({"cpu"} & available)
    control = " ".join(f"+{controller}" for controller in sorted(wanted))
    enabled = set((parent / "cgroup.subtree_control").read_text().split())
    if not wanted <= enabled:
        try:
            (parent / "cgroup.subtree_control").write_text(control)
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
            (parent / "cgroup.subtree_control").write_text(control)
    folder = parent / name
    folder.mkdir()
    (folder / "cgroup.subtree_control").write_text(control)
    return Limits("cgroup v2", [folder], cpu="cpu" in wanted)


def _fallback(reason: str) -> Limits:
    return Limits("rlimits", [], warning=(
        f"WARNING: no cgroup for the students' process trees here ({reason}). Memory is limited per "
        "process (RLIMIT_DATA), so the processes a student's kernel forks may together use more; the "
        "number of processes is limited per student uid (RLIMIT_NPROC) only when the grader runs as "
        "root with the sandbox on, and not at all otherwise; CPU is not shared between students."))


def student_cgroups(limits: Limits, name: str, memory_bytes: int | None, max_processes: int | None,
                    cpus: float | None = None, cores: set[int] | None = None) -> list[str]:
    """Make one student's cgroup folders with the limits written; return them (empty: rlimits).

    With the cpu controller, the student gets the same CPU weight as every other student and, with
    ``cpus``, a quota of that many cores for the whole tree. With the cpuset controller and ``cores``
    (the job's cores), the tree runs on those cores only: a process that widens its own affinity
    (``os.sched_setaffinity``) cannot reach another job's core and slow the student graded there.
    """
    folders = []
    for parent in limits.folders:
        folder = parent / name
        folder.mkdir(exist_ok=True)
        if limits.kind == "cgroup v2":
            _limit_v2(folder, memory_bytes, max_processes, cpus)
        else:
            _limit_v1(folder, memory_bytes, max_processes, cpus)
            if (folder / "cpuset.cpus").exists():  # The run's folder in v1's cpuset hierarchy.
                try:
                    _confine_v1(folder, cores)
                except OSError:
                    if parent != limits.folders[-1] or not limits.cpuset:
                        raise  # A cpuset mounted with another controller: its folder takes no process without it.
                    _remove(folder)  # The student's processes then share the machine's cores, as without a cpuset.
                    continue
        folders.append(folder)
    return [str(folder) for folder in folders]


def _confine_v1(folder: Path, cores: set[int] | None) -> None:
    """Give a student's v1 cpuset folder its parent's memory nodes and ``cores`` (its parent's cores when None): a v1
    cpuset takes no process until both are set."""
    (folder / "cpuset.mems").write_text((folder.parent / "cpuset.mems").read_text().strip())
    chosen = ",".join(str(core) for core in sorted(cores)) if cores else (folder.parent / "cpuset.cpus").read_text()
    (folder / "cpuset.cpus").write_text(chosen.strip())


def _limit_v2(folder: Path, memory_bytes: int | None, max_processes: int | None, cpus: float | None) -> None:
    if memory_bytes:
        (folder / "memory.max").write_text(str(memory_bytes))
        _write_if_present(folder / "memory.swap.max", "0")
    if max_processes:
        (folder / "pids.max").write_text(str(max_processes))
    if (folder / "cpu.weight").exists():
        (folder / "cpu.weight").write_text(_WEIGHT_V2)
        if cpus:
            (folder / "cpu.max").write_text(f"{max(1000, int(cpus * _PERIOD_US))} {_PERIOD_US}")


def _limit_v1(folder: Path, memory_bytes: int | None, max_processes: int | None, cpus: float | None) -> None:
    """Write the limits that belong to this folder's hierarchy (one folder per hierarchy on v1)."""
    if memory_bytes and (folder / "memory.limit_in_bytes").exists():
        (folder / "memory.limit_in_bytes").write_text(str(memory_bytes))
        _write_if_present(folder / "memory.memsw.limit_in_bytes", str(memory_bytes))
    if max_processes and (folder / "pids.max").exists():
        (folder / "pids.max").write_text(str(max_processes))
    if (folder / "cpu.shares").exists():
        (folder / "cpu.shares").write_text(_SHARES_V1)
        if cpus:
            (folder / "cpu.cfs_period_us").write_text(str(_PERIOD_US))
            (folder / "cpu.cfs_quota_us").write_text(str(max(1000, int(cpus * _PERIOD_US))))


def cpu_seconds(folders: list[str] | list[Path]) -> float | None:
    """The CPU seconds that the processes of a cgroup (its descendants included) have used so far.

    ``folders`` are one cgroup's folders (one per v1 hierarchy); the one that counts CPU time is
    read: ``cpuacct.usage`` (v1, nanoseconds) or ``cpu.stat``'s ``usage_usec`` (v2). None when
    none of them counts it.
    """
    for folder in map(Path, folders):
        try:
            return int((folder / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            pass
        try:
            for line in (folder / "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
        except (OSError, ValueError):
            pass
    return None


def throttled_seconds(folders: list[str] | list[Path]) -> float | None:
    """The seconds so far in which a cgroup's CPU quota held its processes back (together they had used the quota of
    the period up): ``cpu.stat``'s ``throttled_time`` (v1, nanoseconds, in the cpu hierarchy) or ``throttled_usec``
    (v2). None when none of ``folders`` counts it (no quota there)."""
    for folder in map(Path, folders):
        try:
            lines = (folder / "cpu.stat").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            key, _, value = line.partition(" ")
            if key in ("throttled_time", "throttled_usec"):
                try:
                    return int(value) / (1e9 if key == "throttled_time" else 1e6)
                except ValueError:
                    return None
    return None


def accounting_group(name: str, proc: Path = Path("/proc")) -> Path | None:
    """A new cgroup named ``name`` under this process's own that counts CPU time; None where none can be made.

    On cgroup v1 it is in the cpuacct hierarchy, on v2 in the unified one (every v2 cgroup counts
    CPU time in ``cpu.stat``). Processes join it with `join`; grading runs started in it make their
    students' cgroups inside it, so `cpu_seconds` of it counts every process of the run. Remove it
    with `kill_and_remove`.
    """
    try:
        mounts = _mounts((proc / "self" / "mountinfo").read_text())
        own = _own_cgroups((proc / "self" / "cgroup").read_text())
    except OSError:
        return None
    unified = next((m for m in mounts if m[2] == "cgroup2"), None)
    candidates = [_v1_folder(mounts, own, "cpuacct"),
                  _folder(unified, own[""]) if unified is not None and "" in own else None]
    for parent in candidates:
        if parent is None:
            continue
        try:
            (parent / name).mkdir()
        except OSError:
            continue
        if cpu_seconds([parent / name]) is not None:
            return parent / name
        _remove(parent / name)
    return None


def join(folder: str | Path, pid: int | None = None) -> None:
    """Move a process (this one by default) into a cgroup folder."""
    with open(os.path.join(folder, "cgroup.procs"), "w") as procs:
        procs.write(str(os.getpid() if pid is None else pid))


def join_cpu(folders: list[str], pid: int) -> bool:
    """Move a grader's process that works for one student (its judge) into that student's CPU cgroup.

    Its CPU time then counts as the student's (`cpu_seconds`) and shares the student's weight and
    quota. On cgroup v1 it joins the cpu and cpuacct hierarchies only: its memory and processes stay
    the grader's, so a student who fills their memory limit cannot make the kernel's OOM killer pick
    it. On cgroup v2 a process is in one cgroup for every controller: it joins the student's.
    Returns whether the cgroup that counts CPU time now counts it (False: none, or it could not join).
    """
    counted = False
    for folder in map(Path, folders):
        unified = (folder / "cgroup.controllers").exists()
        cpu_only = any((folder / name).exists() for name in ("cpu.shares", "cpuacct.usage")) and not any(
            (folder / name).exists() for name in ("memory.limit_in_bytes", "pids.max"))
        if unified or cpu_only:
            try:
                join(folder, pid)
            except OSError:
                continue
            counted = counted or cpu_seconds([folder]) is not None
    return counted


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
