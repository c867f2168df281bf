"""Runs a student's kernel where it cannot read the course's files or write anything of the grader's.

When the grading command runs as root (in a container, say), each kernel starts through this file:

    python grading/sandbox.py PLAN.json -- python -m ipykernel_launcher -f CONNECTION_FILE ...

As root it moves into a mount namespace of its own, covers the plan's hidden folders (the course
directory with ``source/``, ``solutions/``, the gradebook and every student's folders; the folder
of submissions; the grader's home; ``/tmp``) with empty in-memory file systems, puts back only what
a kernel needs (the Python environment and the ``course`` package), then becomes an unprivileged
user (a uid of its own for each grading run, no groups, no way back to root) in an empty home folder and starts the
kernel with a minimal environment. nbgrader itself keeps running as root outside, so it still
reads the student's notebook and writes the gradebook; after each student the grader kills every
process left with the run's uid (`kill_sandbox_processes`); two grading runs at once do not meet.

This file runs as a script before the kernel exists, so it imports nothing from the course.
"""

from __future__ import annotations

import ctypes
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SANDBOX_USER = "course-sandbox"

_CLONE_NEWNS = 0x00020000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
_PR_SET_NO_NEW_PRIVS = 38

# Variables the kernel may inherit; everything else (tokens, the grader's paths) is dropped.
_KEPT_VARIABLES = ("PATH", "LANG", "LANGUAGE", "TERM", "TZ", "COURSE_AUTOGRADE", "LD_LIBRARY_PATH",
                   "PYTHONWARNINGS", "PYTHONHASHSEED", "MPLBACKEND", "JPY_PARENT_PID")
_KEPT_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "OMP_", "MKL_")


def plan_for(course_root: Path, submissions: Path | None = None) -> dict:
    """The folders to hide from a student's kernel and the ones it needs, for grading ``course_root``.

    Hidden: the course directory, the submissions folder, the repository that holds the installed
    ``course`` package, the grader's home and the shared temporary folders. Kept: the Python
    environment (``sys.prefix`` and the interpreter's own ``sys.base_prefix``) and the ``course``
    package folder.
    """
    import course  # The grader's environment has it; the kernel gets the same folder.

    package = Path(course.__file__).resolve().parent
    hidden = {Path(course_root), package.parent, Path.home(), Path(tempfile.gettempdir()),
              Path("/tmp"), Path("/var/tmp"), Path("/dev/shm")}
    if submissions is not None:
        hidden.add(Path(submissions))
    kept = {Path(sys.prefix), Path(sys.base_prefix), package}
    # A fresh uid (and gid) that no account uses, so that every process with it is this run's.
    uid = 200_000 + secrets.randbelow(1 << 20)
    return {"hidden": sorted(str(p.resolve()) for p in hidden if p.exists()),
            "kept": sorted(str(p.resolve()) for p in kept if p.exists()),
            "uid": uid, "gid": uid}


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _mount(libc: ctypes.CDLL, source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    encode = (lambda text: text.encode() if text is not None else None)
    _check(libc.mount(encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags), encode(data)),
           f"mount {source} on {target}")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _outermost(paths: list[str]) -> list[str]:
    """Drop every path that lies inside another path of the list."""
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(_inside(path, other) for other in kept):
            kept.append(path)
    return kept


def enter(plan: dict) -> Path:
    """As root: hide the plan's folders in a new mount namespace; return the sandbox's home folder.

    The folders to keep are opened before anything is covered and bound back, read-only, through
    those handles.
    """
    libc = _libc()
    _check(libc.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _mount(libc, None, "/", None, _MS_REC | _MS_PRIVATE)
    hidden = _outermost(plan["hidden"])
    kept = [path for path in _outermost(plan["kept"]) if any(_inside(path, folder) for folder in hidden)]
    handles = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in kept}
    for folder in hidden:
        mode = "1777" if folder in ("/tmp", "/var/tmp", "/dev/shm") else "0755"
        _mount(libc, "tmpfs", folder, "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode={mode},size=2g")
    for path, handle in handles.items():
        os.makedirs(path, exist_ok=True)
        _mount(libc, f"/proc/self/fd/{handle}", path, None, _MS_BIND | _MS_REC)
        _mount(libc, None, path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY)  # Read-only as well.
        os.close(handle)
    home = Path("/tmp") / SANDBOX_USER
    home.mkdir(mode=0o700, exist_ok=True)
    os.chown(home, plan["uid"], plan["gid"])
    return home


def become_sandbox_user(plan: dict) -> None:
    """Drop root for good: no supplementary groups, the sandbox's gid and uid, no new privileges."""
    libc = _libc()
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    os.setgroups([])
    os.setgid(plan["gid"])
    os.setuid(plan["uid"])


def kernel_environment(home: Path) -> dict[str, str]:
    """The few variables a kernel needs, with its home and caches in the sandbox."""
    env = {key: value for key, value in os.environ.items()
           if key in _KEPT_VARIABLES or key.startswith(_KEPT_PREFIXES)}
    env.update(HOME=str(home), USER=SANDBOX_USER, LOGNAME=SANDBOX_USER, TMPDIR="/tmp",
               MPLCONFIGDIR=str(home / ".config" / "matplotlib"), XDG_CACHE_HOME=str(home / ".cache"),
               IPYTHONDIR=str(home / ".ipython"), JUPYTER_RUNTIME_DIR=str(home / ".runtime"))
    env.setdefault("PATH", "/usr/bin:/bin")
    return env


def launch(plan: dict, command: list[str]) -> None:
    """Start ``command`` (a kernel, with ``-f CONNECTION_FILE``) in the sandbox; does not return."""
    command = list(command)
    command[0] = shutil.which(command[0]) or command[0]
    command[0] = os.path.abspath(command[0]) if os.sep in command[0] else command[0]
    connection = None
    if "-f" in command:
        position = command.index("-f") + 1
        connection = Path(command[position]).read_bytes()
    fonts = {}
    cache = Path(os.environ.get("MPLCONFIGDIR", Path.home() / ".cache" / "matplotlib"))
    if cache.is_dir():
        fonts = {path.name: path.read_bytes() for path in cache.glob("fontlist-*.json")}
    home = enter(plan)
    config = home / ".config" / "matplotlib"
    config.mkdir(parents=True, exist_ok=True)
    for name, content in fonts.items():
        (config / name).write_bytes(content)
    for path in (home / ".config", config, *config.iterdir()):
        os.chown(path, plan["uid"], plan["gid"])
    if connection is not None:
        # The kernel reads its ports and key from a copy that only the sandbox user can read.
        copy = home / "kernel.json"
        copy.write_bytes(connection)
        os.chmod(copy, 0o600)
        os.chown(copy, plan["uid"], plan["gid"])
        command[position] = str(copy)
    env = kernel_environment(home)
    os.chdir(home)
    become_sandbox_user(plan)
    os.execvpe(command[0], command, env)


def probe(plan: dict, timeout: float = 60.0) -> str | None:
    """Start a Python in the sandbox and check what it can reach; return None or what is wrong.

    The probe imports the ``course`` package, and must fail to list each hidden folder (each is
    empty in the sandbox) and to write outside its home.
    """
    if os.geteuid() != 0:
        return "the grader is not running as root, so it cannot start kernels as another user"
    check = (
        "import json, os, sys, course\n"
        f"plan = {plan!r}\n"
        "def allowed(folder, name):\n"
        "    path = os.path.join(folder, name)\n"
        "    return path == os.environ['HOME'] or any(k == path or k.startswith(path + '/') for k in plan['kept'])\n"
        "leaks = {p: [n for n in os.listdir(p) if not allowed(p, n)][:3] for p in plan['hidden'] if os.path.isdir(p)}\n"
        "print(json.dumps({'uid': os.getuid(), 'leaks': {p: n for p, n in leaks.items() if n}}))\n"
    )
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(plan, handle)
    try:
        run = subprocess.run([sys.executable, __file__, handle.name, "--", sys.executable, "-c", check],
                             capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"the sandbox probe did not finish in {timeout:g} s"
    finally:
        os.unlink(handle.name)
    if run.returncode != 0:
        return f"the sandbox probe failed: {(run.stderr or run.stdout).strip().splitlines()[-1:]}"
    report = json.loads(run.stdout.strip().splitlines()[-1])
    if report["uid"] != plan["uid"]:
        return f"the sandbox probe ran as uid {report['uid']}, not {plan['uid']}"
    if report["leaks"]:
        return f"the sandbox probe could still list hidden folders: {report['leaks']}"
    return None


def kill_sandbox_processes(uid: int, timeout: float = 10.0) -> int:
    """Kill every process running as ``uid`` (a kernel's leftovers); return how many were found."""
    found = 0
    deadline = time.monotonic() + timeout
    while True:
        pids = []
        for status in Path("/proc").glob("[0-9]*/status"):
            try:
                lines = status.read_text().splitlines()
            except OSError:
                continue
            uids = next((line.split()[1:] for line in lines if line.startswith("Uid:")), [])
            if str(uid) in uids:
                pids.append(int(status.parent.name))
        if not pids or time.monotonic() > deadline:
            return found
        found = max(found, len(pids))
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        raise SystemExit("usage: python sandbox.py PLAN.json -- COMMAND ...")
    plan = json.loads(Path(argv[0]).read_text())
    launch(plan, argv[2:])


if __name__ == "__main__":
    main(sys.argv[1:])
