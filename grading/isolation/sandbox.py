"""Starts a student's warm process (or any program) in a bubblewrap sandbox, inside the student's cgroups.

The grader starts each student's warm process (grading/isolation/zygote.py, which forks that student's
kernels) through this file, with the student's plan (a JSON file the grading command writes, see
`Plan`):

    python grading/isolation/sandbox.py PLAN.json [--info-fd N] [--keep-fd N ...] -- python -I -c ... serve ...

The launcher puts itself into the student's cgroups (memory, processes and CPU of the whole tree,
grading/isolation/limits.py), sets per-process rlimits, closes every descriptor it inherited but the ones
``--keep-fd`` names, and then, with the sandbox on, becomes the student's own uid (when the grader
is root) and replaces itself with ``bwrap`` (bubblewrap, the sandbox under Flatpak; ``--info-fd``
asks it for the host pid of the sandbox's init). In the sandbox the program has:

- its own user, PID, network, IPC, UTS and cgroup namespaces; the sandbox's init is PID 1, so when
  the program ends, every process it left ends with it (``--die-with-parent`` ends it all when
  the grader ends);
- no network at all, and no host folder it can write to: the kernels' ipc sockets are in the
  sandbox's own /tmp, which nbgrader reaches from outside through ``/proc/<init pid>/root``; the
  judge's sockets are in a folder of the grader's, shown read-only (a kernel connects to its
  judge there, and can change nothing);
- a read-only view of the Python environment, the system's libraries and the ``course`` package,
  and nothing else of the host: no course directory, submissions, gradebook, grader's home or
  host /tmp, /var/tmp, /dev/shm, /run;
- size-capped tmpfs for its home, /tmp and /dev/shm (every place it can write; the memory cgroup
  counts them too), a /proc that shows its own processes only, a minimal /dev, no capabilities and
  no way to gain privileges (bwrap sets no_new_privs);
- an allow-listed environment, and no descriptor of the grader's but the ones kept.

Without the sandbox (``--sandbox off``) the launcher still applies the cgroups and rlimits and
then starts the program itself. This file runs as a script before the kernel exists, so it
imports nothing from the course; grading/isolation/probe.py checks all of the above from inside a sandbox.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

SANDBOX_USER = "student"
SANDBOX_HOME = f"/home/{SANDBOX_USER}"
# The kernels of a root grader run as uids from FIRST_UID on, one per student (see `student_uids`).
FIRST_UID = 2_000_000_000
UID_RANGE = 1 << 24

# Variables the kernel may inherit; everything else (tokens, the grader's paths) is dropped.
_KEPT_VARIABLES = ("LANG", "LANGUAGE", "TERM", "TZ", "COURSE_AUTOGRADE", "PYTHONWARNINGS", "PYTHONHASHSEED",
                   "MPLBACKEND")
_KEPT_PREFIXES = ("LC_", "CUDA_", "NVIDIA_")
# Host folders of system libraries: read-only, so the interpreter and its extension modules load.
_SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/etc/alternatives")
# CPU topology that torch and OpenMP read; GPU device files when the machine has them.
_READ_ONLY_TRY = ("/sys/devices/system/cpu",)
# Every host path the sandbox shows besides a plan's kept folders (and GPU device files).
SHOWN = _SYSTEM_FOLDERS + _SYSTEM_FILES + _READ_ONLY_TRY


@dataclass
class Plan:
    """Everything the launcher needs for one student's kernels (written as JSON by the grader)."""

    sandbox: bool
    socket_dir: str  # The grader's folder for this student's sockets: never seen by the sandbox.
    kept: list[str] = field(default_factory=list)  # Host folders shown read-only (Python, course).
    uid: int | None = None  # The student's uid when the grader is root; None: the grader's own.
    cgroups: list[str] = field(default_factory=list)  # cgroup folders to join (grading/isolation/limits.py).
    memory_bytes: int | None = None  # RLIMIT_DATA of each process.
    max_processes: int | None = None  # RLIMIT_NPROC, set only with a uid of the student's own.
    tmpfs_bytes: int = 512 << 20  # Size of each of home, /tmp and /dev/shm.
    environment: dict[str, str] = field(default_factory=dict)  # Added to the kernel's variables.
    # The grader's folder of the judge's sockets (grading/judge/): shown read-only, so the kernel can
    # connect to the judge but cannot create or change anything there.
    judge_dir: str | None = None

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps(asdict(self)))
        return path

    @classmethod
    def read(cls, path: str | Path) -> "Plan":
        return cls(**json.loads(Path(path).read_text()))


def student_uids(students: list[str]) -> dict[str, int]:
    """A uid for each student: from a hash of the student id, so the same in every run and shard.

    Two students whose hashes meet get the next free uid, in the order of their ids, so every
    student of a folder has a uid of their own, and every shard of it gives the same ones.
    """
    import hashlib

    uids: dict[str, int] = {}
    taken: set[int] = set()
    for student in sorted(set(students)):
        offset = int(hashlib.sha256(student.encode("utf-8")).hexdigest(), 16) % UID_RANGE
        while FIRST_UID + offset in taken:
            offset = (offset + 1) % UID_RANGE
        uids[student] = FIRST_UID + offset
        taken.add(FIRST_UID + offset)
    return uids


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def bwrap_version() -> str:
    """``bubblewrap 0.8.0``, say, or why there is none."""
    path = bwrap_path()
    if path is None:
        return "bubblewrap is not installed"
    run = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    return run.stdout.strip() or run.stderr.strip()


def kept_folders() -> list[str]:
    """The host folders a kernel needs: the Python environment and the ``course`` package."""
    import course  # The grader's environment has it; the kernel gets the same folder.

    package = Path(course.__file__).resolve().parent
    folders = {Path(sys.prefix), Path(sys.base_prefix), package}
    return sorted(str(p.resolve()) for p in folders if p.exists())


def kernel_environment(plan: Plan, parent: dict[str, str] | None = None) -> dict[str, str]:
    """The few variables a sandboxed kernel gets: allow-listed ones, its home and caches, the plan's."""
    parent = os.environ if parent is None else parent
    env = {key: value for key, value in parent.items() if key in _KEPT_VARIABLES or key.startswith(_KEPT_PREFIXES)}
    home = SANDBOX_HOME
    env.update(PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin", HOME=home, USER=SANDBOX_USER,
               LOGNAME=SANDBOX_USER, TMPDIR="/tmp", MPLCONFIGDIR=f"{home}/.config/matplotlib",
               XDG_CACHE_HOME=f"{home}/.cache", IPYTHONDIR=f"{home}/.ipython",
               JUPYTER_RUNTIME_DIR=f"{home}/.runtime", PYTHONDONTWRITEBYTECODE="1",
               # ipykernel watches the parent pid it is given; PID 1 (bwrap's reaper) means "do not".
               JPY_PARENT_PID="1")
    env.update(plan.environment)
    return env


def _data_fd(content: bytes) -> int:
    """A readable file descriptor holding ``content`` (an unlinked temporary file), inheritable."""
    handle = tempfile.TemporaryFile()
    handle.write(content)
    handle.flush()
    handle.seek(0)
    fd = os.dup(handle.fileno())
    handle.close()
    os.set_inheritable(fd, True)
    return fd


def _matplotlib_fonts() -> dict[str, bytes]:
    """The grader's matplotlib font list, so that a kernel's first plot does not rebuild it."""
    cache = Path(os.environ.get("MPLCONFIGDIR", Path.home() / ".cache" / "matplotlib"))
    try:
        return {path.name: path.read_bytes() for path in cache.glob("fontlist-*.json")}
    except OSError:
        return {}


# Runs inside the sandbox as its first program when the grader is root: bwrap has made the mounts
# as root, and this hands the home folder to the student's uid, drops root for good and starts
# the kernel. It must not import anything (python -I -S).
_DROP_ROOT = """
import os, sys
uid = int(sys.argv[1])
for folder, folders, files in os.walk(sys.argv[2]):
    for name in [folder] + [os.path.join(folder, n) for n in folders + files]:
        os.lchown(name, uid, uid)
os.setgroups([])
os.setresgid(uid, uid, uid)
os.setresuid(uid, uid, uid)
status = open("/proc/self/status").read()
if "CapEff:\\t0000000000000000" not in status or "NoNewPrivs:\\t1" not in status:
    raise SystemExit("the sandbox could not drop every privilege")
os.execv(sys.argv[4], sys.argv[4:])
"""


def bwrap_command(plan: Plan, command: list[str], files: dict[str, bytes], env: dict[str, str],
                  info_fd: int | None = None) -> list[str]:
    """The ``bwrap`` command line that runs ``command`` in the sandbox; ``files`` are copied in.

    As root, bwrap runs privileged (no user namespace is needed, so it works wherever bwrap
    installs): it makes the mounts as root, and the sandbox's first program gives the student's
    uid the home folder and becomes that uid before the kernel starts. Without root, bwrap makes
    a user namespace in which the grader's own uid stays the only one.
    """
    as_root = plan.uid is not None
    args = [bwrap_path() or "bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--hostname", "grading-sandbox", "--die-with-parent", "--new-session"]
    if info_fd is not None:
        args += ["--info-fd", str(info_fd)]
    if as_root:
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_CHOWN"]
    else:
        args += ["--unshare-user", "--disable-userns"]
    for folder in _SYSTEM_FOLDERS:
        if os.path.islink(folder):
            args += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
    for path in _SYSTEM_FILES + _READ_ONLY_TRY:
        args += ["--ro-bind-try", path, path]
    size = str(plan.tmpfs_bytes)
    args += ["--proc", "/proc", "--dev", "/dev",
             "--size", size, "--perms", "1777", "--tmpfs", "/tmp",
             "--size", size, "--perms", "1777", "--tmpfs", "/dev/shm",
             "--perms", "0755", "--dir", "/home", "--size", size, "--perms", "0700", "--tmpfs", SANDBOX_HOME]
    for device in sorted(Path("/dev").glob("nvidia*")):
        args += ["--dev-bind", str(device), str(device)]
    made = {"/", "/tmp", "/dev", "/home", SANDBOX_HOME, *_SYSTEM_FOLDERS}
    binds = [*((folder, "--ro-bind") for folder in plan.kept)]
    if plan.judge_dir:
        binds.append((plan.judge_dir, "--ro-bind"))
    for folder, how in binds:
        # bwrap would make the folders above a mount point private (0700); the kernel must pass them.
        for parent in reversed(Path(folder).parents):
            if str(parent) not in made and not any(str(parent).startswith(f + "/") for f in _SYSTEM_FOLDERS):
                args += ["--perms", "0755", "--dir", str(parent)]
                made.add(str(parent))
        args += [how, folder, folder]
    uid = os.getuid() if plan.uid is None else plan.uid
    gid = os.getgid() if plan.uid is None else plan.uid
    files = {"/etc/passwd": f"{SANDBOX_USER}:x:{uid}:{gid}::{SANDBOX_HOME}:/bin/sh\n".encode(),
             "/etc/group": f"{SANDBOX_USER}:x:{gid}:\n".encode(),
             "/etc/hostname": b"grading-sandbox\n", **files}
    for destination, content in files.items():
        args += ["--perms", "0600" if destination.startswith(SANDBOX_HOME) else "0644",
                 "--file", str(_data_fd(content)), destination]
    args += ["--remount-ro", "/", "--clearenv"]  # The sandbox's own root folder is read-only too.
    for key, value in sorted(env.items()):
        args += ["--setenv", key, value]
    args += ["--chdir", SANDBOX_HOME, "--"]
    if as_root:
        args += [sys.executable, "-I", "-S", "-c", _DROP_ROOT, str(uid), SANDBOX_HOME, "--"]
    return args + command


def _join_cgroups(plan: Plan) -> None:
    for folder in plan.cgroups:
        with open(os.path.join(folder, "cgroup.procs"), "w") as procs:
            procs.write(str(os.getpid()))


def _set_rlimits(plan: Plan) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if plan.memory_bytes:
        # RLIMIT_DATA counts the memory a process writes to, not address space only reserved, so
        # a huge allocation fails with MemoryError in its cell while CUDA's reservations still work.
        resource.setrlimit(resource.RLIMIT_DATA, (plan.memory_bytes, plan.memory_bytes))
    if plan.max_processes and plan.uid is not None:
        # Counted per uid: with a uid of the student's own it bounds the student's processes.
        resource.setrlimit(resource.RLIMIT_NPROC, (plan.max_processes, plan.max_processes))


def _close_inherited(keep: set[int]) -> None:
    """Close every descriptor above stderr but ``keep``: nothing of the grader's reaches the sandbox by accident.

    jupyter_client starts kernels with every inheritable descriptor of the grading process, such as
    the pipe on which a worker reports its events.
    """
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass  # The descriptor of the listing itself, already gone.


def launch(plan: Plan, command: list[str], keep: tuple[int, ...] = (), info_fd: int | None = None) -> None:
    """Start ``command`` under ``plan``, passing on the descriptors ``keep``; does not return.

    ``info_fd`` receives bwrap's JSON (``child-pid``: the host pid of the sandbox's init).
    """
    command = list(command)
    command[0] = shutil.which(command[0]) or command[0]
    _join_cgroups(plan)
    _set_rlimits(plan)
    _close_inherited({*keep, *(() if info_fd is None else (info_fd,))})
    if not plan.sandbox:
        os.execve(command[0], command, {**os.environ, **plan.environment})
    env = kernel_environment(plan)
    files = {f"{SANDBOX_HOME}/.config/matplotlib/{name}": content for name, content in _matplotlib_fonts().items()}
    if plan.uid is not None and os.geteuid() != 0:
        raise SystemExit("a plan with a student uid needs the grader to run as root")
    args = bwrap_command(plan, command, files, env, info_fd)
    os.execv(args[0], args)


def main(argv: list[str]) -> None:
    usage = "usage: python sandbox.py PLAN.json [--info-fd N] [--keep-fd N ...] -- COMMAND ..."
    if "--" not in argv or argv.index("--") < 1:
        raise SystemExit(usage)
    options, command = argv[1:argv.index("--")], argv[argv.index("--") + 1:]
    keep, info_fd = [], None
    for flag, value in zip(options[::2], options[1::2]):
        if flag == "--keep-fd" and value.isdigit():
            keep.append(int(value))
        elif flag == "--info-fd" and value.isdigit():
            info_fd = int(value)
        else:
            raise SystemExit(usage)
    if len(options) % 2 or not command:
        raise SystemExit(usage)
    launch(Plan.read(argv[0]), command, tuple(keep), info_fd)


if __name__ == "__main__":
    main(sys.argv[1:])
