"""A student's warm process: it imports the kernel's libraries once and forks a fresh kernel per notebook.

Starting a kernel costs seconds of CPU, most of it importing torch, numpy, ipykernel and the course
package, and grading used to pay that for every notebook of every student. The warm process pays it once
per student, inside that student's sandbox and cgroups (grading/isolation/sandbox.py,
grading/isolation/limits.py), as the student's uid:

    python -I /dev/fd/SCRIPT_FD serve LISTENER_FD SANDBOXED PRELOAD_JSON

It serves requests on a listening Unix socket that the grader made outside the sandbox and handed
over as an inherited descriptor (LISTENER_FD): no path inside the sandbox leads to it, so a
student's code cannot reach it or replace it. For each notebook the grader's kernel command is
this file's client (a few milliseconds):

    python -I -S grading/isolation/zygote.py attach CONTROL_SOCKET CONNECTION_FILE INSIDE_IP

The client sends the kernel's connection file; the warm process forks, and the child, a fresh
Python namespace, runs ipykernel with it. When the kernel ends, or the client is killed (jupyter
kills it to kill the kernel), the warm process kills every other process of the student (they are
all in its PID namespace), empties the sandbox's home, /tmp and /dev/shm, and reports the exit
status, which the client exits with. So nothing a notebook's kernel leaves, processes or files, reaches
the next notebook. (With ``--sandbox off`` nothing is isolated: one warm process serves every student of a
grading process, each kernel joins its own student's cgroups and memory limit, the kernel's process group
ends with it, and what left the group, and every file, stays, as it always did.) The warm process cannot be traced or
read by the kernels it forks (it is not dumpable); a student who kills or stops it only costs their own
notebooks a fresh sandbox (grading/isolation/kernels.py starts a new one), and it exits itself when it cannot
clean up.

This file runs inside the sandbox, where the grading package does not exist (its Python reads it
from an inherited descriptor, SCRIPT_FD): it imports nothing but the standard library at the top.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time

# The kernel's ipc sockets inside the sandbox: its own /tmp, a size-capped tmpfs.
INSIDE_IP = "/tmp/.kernel"
# What the sandbox's kernels import (and the judge's agent, msgpack): the warm process imports them first.
# ipykernel's debugger (debugpy), IPython's history (sqlite3) and pdb are what starting a kernel imports;
# stack_data and pygments' terminal formatter what its first traceback imports. Not matplotlib (0.3 CPU-s): no
# cell that grading runs imports it (the plots are in the experiments after the last graded cell, which grading
# skips), so a kernel imports it only where a student plots in a cell that grading runs.
PRELOAD = ("torch", "numpy", "numpy.testing", "torch.testing", "ipykernel.kernelapp", "ipykernel.ipkernel",
           "ipykernel.zmqshell", "ipykernel.debugger", "IPython", "IPython.core.history", "IPython.core.logger",
           "sqlite3", "pdb", "stack_data", "pygments.formatters", "pygments.formatters.terminal256", "pygments.styles",
           "zmq", "comm", "ipywidgets", "msgpack")
_PR_SET_DUMPABLE, _PR_SET_CHILD_SUBREAPER = 4, 36
_PRIVATE_FOLDERS = ("HOME", "/tmp", "/dev/shm")


def read_message(connection: socket.socket, deadline: float | None = None) -> dict | None:
    """One JSON line from ``connection``; None at its end (or past ``deadline``)."""
    data = b""
    while not data.endswith(b"\n"):
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([connection], [], [], remaining)[0]:
                return None
        chunk = connection.recv(65536)
        if not chunk:
            return None
        data += chunk
    return json.loads(data)


def send_message(connection: socket.socket, message: dict) -> None:
    connection.sendall(json.dumps(message).encode() + b"\n")


def _prctl(option: int, value: int) -> None:
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def _preload(names: list[str]) -> dict[str, str]:
    """Import ``names`` and every module of the course package; return the ones that failed, with why."""
    import importlib

    failed = {}
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as error:  # noqa: BLE001 - a library the kernels may not need.
            failed[name] = repr(error)
    try:
        import pkgutil

        import course

        for found in pkgutil.iter_modules(course.__path__):
            importlib.import_module(f"course.{found.name}")
    except Exception as error:  # noqa: BLE001 - the kernel then reports it where a notebook needs it.
        failed["course"] = repr(error)
    return failed


def _run_kernel(connection_file: str) -> int:
    """In the forked child: a fresh kernel, as ``python -m ipykernel_launcher -f CONNECTION_FILE`` runs it."""
    import random

    random.seed()  # A fresh process would have fresh entropy, not the warm process's state.
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    from ipykernel import kernelapp

    # History in memory: IPython's history writer is a thread that it stops before every fork and starts again at
    # the next cell, and a student whose processes fill the sandbox's process limit would make every later cell,
    # the judge's serving included, fail to start it. A graded kernel needs no history file.
    sys.argv = [os.path.join(os.path.dirname(os.path.dirname(kernelapp.__file__)), "ipykernel_launcher.py"),
                "-f", connection_file, "--HistoryManager.hist_file=:memory:"]
    code = 0
    try:
        kernelapp.IPKernelApp.launch_instance(argv=sys.argv[1:])
    except SystemExit as end:
        code = end.code if isinstance(end.code, int) else 0 if end.code is None else 1
    import atexit

    atexit._run_exitfuncs()  # What the interpreter would do at its exit (the child ends with os._exit).
    return code


_KERNELS = itertools.count()


def _take_limits(limits: dict) -> None:
    """The shared warm process's child (no sandbox) joins its student's cgroups and takes their memory limit."""
    import resource

    for folder in limits.get("cgroups") or []:
        with open(os.path.join(folder, "cgroup.procs"), "w") as procs:
            procs.write(str(os.getpid()))
    memory = limits.get("memory_bytes")
    if memory:
        resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))


def _fork_kernel(connection: dict, private: list[socket.socket], folder: str | None,
                 limits: dict | None = None, files: str | None = None) -> tuple[int, str]:
    """Fork a child that runs a kernel on ``connection`` in ``folder`` (None: where this process is);
    return its pid and its connection file, written in ``files`` (None: the home folder), which the caller
    removes when the kernel has ended.

    The child closes the ``private`` sockets (the listener and the client's connection) first, so
    that no kernel can take a request meant for the warm process; with ``limits`` (the shared warm
    process's kernels, without the sandbox), it joins the student's cgroups and takes their memory limit.
    """
    # A file of this kernel's own: without the sandbox every warm process of a grading run shares one home, and
    # a kernel that read the file another warm process had just written would listen on that kernel's ports.
    path = os.path.join(files or os.environ["HOME"], f".kernel-{os.getpid()}-{next(_KERNELS)}.json")
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        json.dump(connection, handle)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid, path
    code = 1
    try:
        for private_socket in private:
            os.close(private_socket.detach())
        os.setsid()
        if limits:
            _take_limits(limits)
        if folder is not None:
            os.chdir(folder)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        _prctl(_PR_SET_DUMPABLE, 1)
        code = _run_kernel(path)
    except BaseException:  # noqa: BLE001 - the child must never return into the warm process's loop.
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


def _others() -> list[int]:
    """Every process this one may see, but itself and its namespace's init."""
    me = os.getpid()
    return [int(name) for name in os.listdir("/proc") if name.isdigit() and int(name) not in (me, 1)]


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_the_rest(timeout: float = 10.0) -> bool:
    """Kill every process a kernel left in the sandbox; True when none is left.

    In the sandbox every process but this one and the namespace's init is the student's, and
    ``kill(-1)`` reaches them all at once (none can be forked meanwhile); this process is their
    subreaper, so it reaps them.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _others():
            return True
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        time.sleep(0.01)
        _reap()
    return False


def _mount_points() -> set[str]:
    """Every mount point this process sees (``/proc/self/mountinfo``'s fifth field, unescaped)."""
    points = set()
    with open("/proc/self/mountinfo") as mountinfo:
        for line in mountinfo:
            fields = line.split(" ")
            if len(fields) > 4:
                points.add(re.sub(r"\\([0-7]{3})", lambda octal: chr(int(octal.group(1), 8)), fields[4]))
    return points


def _remove_entries(folder: str, kept: set[str]) -> None:
    """Remove what ``folder`` holds, but the ``kept`` mount points and the folders on the way to them."""
    entries = [os.path.join(folder, name) for name in os.listdir(folder)]
    below = [entry for entry in entries if any(point == entry or point.startswith(entry + "/") for point in kept)]
    others = [entry for entry in entries if entry not in below]
    if others:
        # chmod and rm walk any depth without recursion and without following links.
        subprocess.run(["chmod", "-R", "u+rwX", "--", *others], capture_output=True, check=False)
        subprocess.run(["rm", "-rf", "--one-file-system", "--", *others], capture_output=True, check=False)
    for entry in below:
        if entry not in kept and os.path.isdir(entry) and not os.path.islink(entry):
            _remove_entries(entry, kept)


def _leftovers(folder: str, kept: set[str]) -> bool:
    for name in os.listdir(folder):
        entry = os.path.join(folder, name)
        if entry in kept:
            continue
        if not any(point.startswith(entry + "/") for point in kept) or _leftovers(entry, kept):
            return True
    return False


def empty_private_folders() -> bool:
    """Empty the sandbox's home, /tmp and /dev/shm (whatever names and permissions are inside); True when done.

    Folders the grader bound into them (the judge's socket folder, read-only) stay, with the
    folders on the way to them; whatever else those folders hold goes.
    """
    folders = [os.environ["HOME"] if folder == "HOME" else folder for folder in _PRIVATE_FOLDERS]
    kept = {point for point in _mount_points() if any(point.startswith(folder + "/") for folder in folders)}
    for folder in folders:
        _remove_entries(folder, kept)
    return not any(_leftovers(folder, kept) for folder in folders)


def _schedstat(pid: int) -> tuple[float, float]:
    """Seconds a process ran, and seconds it was ready to run but waited for a CPU (Linux's schedstat)."""
    try:
        with open(f"/proc/{pid}/schedstat") as stat:
            ran, waited = stat.read().split()[:2]
        return int(ran) / 1e9, int(waited) / 1e9
    except (OSError, ValueError):
        return 0.0, 0.0


def _watch(connection: socket.socket, pid: int) -> tuple[int, dict]:
    """Wait until the kernel ends, or the client goes (then kill the kernel).

    Returns its exit status, and how long it ran, waited for a CPU, and lived (``ran``,
    ``waited``, ``wall``, in seconds): the grader retries a notebook that hit a time limit while
    its kernel waited for a CPU more than it ran (grading/grade.py).
    """
    started = time.monotonic()
    watcher = os.pidfd_open(pid)
    try:
        while True:
            ready = select.select([connection, watcher], [], [])[0]
            if watcher in ready:
                break
            if not connection.recv(4096):
                os.kill(pid, signal.SIGKILL)
                break
    finally:
        os.close(watcher)
    ran, waited = _schedstat(pid)  # Still readable: the kernel is not reaped yet.
    status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return status, {"ran": ran, "waited": waited, "wall": time.monotonic() - started}


def connection_folder(listener: socket.socket, sandboxed: bool) -> str | None:
    """Where the kernels' connection files go (None: the home folder).

    In the sandbox, its home, emptied after every kernel. Without it, the folder of the warm process's socket, the
    grader's own, which the grading command removes even when it killed the warm process before a file could go
    (the grader's home kept them).
    """
    if sandboxed:
        return None
    try:
        name = listener.getsockname()
    except OSError:
        return None
    if not isinstance(name, str) or not name.startswith("/"):
        return None  # Not bound to a path (an abstract or unbound socket).
    return os.path.dirname(name)


def serve(listener: socket.socket, sandboxed: bool, preload: list[str]) -> None:
    """Answer the grader's requests until it ends this process."""
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")  # What ipykernel sets.
    _prctl(_PR_SET_DUMPABLE, 0)
    if sandboxed:
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    failed = _preload(preload)
    import gc

    # What is imported now lives as long as every kernel: the collector need not walk it in each
    # kernel, which would copy every page the warm process shares with them.
    gc.collect()
    gc.freeze()
    files = connection_folder(listener, sandboxed)
    last: dict = {}
    while True:
        connection, _ = listener.accept()
        with connection:
            request = read_message(connection)
            if request is None:
                continue
            if request.get("op") == "ping":
                send_message(connection, {"ready": True, "failed": failed})
                continue
            if request.get("op") == "stop":
                if sandboxed:
                    kill_the_rest()
                return
            if request.get("op") == "last":  # Answered once: a notebook never reads another's figures.
                send_message(connection, last)
                last = {}
                continue
            connection_info = dict(request["connection"], ip=request["ip"])
            # Without the sandbox a kernel runs where jupyter_client started its client (the notebook's
            # folder), as a kernel it starts itself would; in the sandbox, in the sandbox's home.
            folder = None if sandboxed else request.get("cwd")
            limits = None if sandboxed else request.get("limits")
            pid, connection_file = _fork_kernel(connection_info, [listener, connection],
                                                folder if isinstance(folder, str) else None,
                                                limits if isinstance(limits, dict) else None, files)
            send_message(connection, {"pid": pid})
            status, last = _watch(connection, pid)
            with contextlib.suppress(OSError):
                os.unlink(connection_file)
            if not sandboxed:
                # Without the sandbox (--sandbox off, nothing isolated) what the kernel started in its own process
                # group ends with it, as when jupyter_client kills a kernel it started itself; a process that left
                # the group (setsid) and the files it wrote stay, as they always did.
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            clean = not sandboxed or (kill_the_rest() and empty_private_folders())
            try:
                send_message(connection, {"exit": status, "clean": clean})
            except OSError:
                pass  # The client is gone: jupyter killed it.
        if not clean:
            raise SystemExit("the warm process could not remove what a kernel left; a fresh sandbox takes over")


def attach(control: str, connection_file: str, inside_ip: str, limits: str = "null") -> int:
    """The kernel command: have the warm process fork a kernel, and live exactly as long as it does.

    ``limits`` (JSON): the student's cgroups and memory limit, for the warm process that students share without the
    sandbox (grading/isolation/kernels.py: `WarmProcess.shared`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Interrupts go to the kernel as messages.
    with open(connection_file) as handle:
        connection_info = json.load(handle)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(control)
        send_message(connection, {"op": "spawn", "connection": connection_info, "ip": inside_ip, "cwd": os.getcwd(),
                                  "limits": json.loads(limits)})
        while True:
            message = read_message(connection)
            if message is None:
                return 1  # The warm process ended (the student's code killed it): so did the kernel.
            if "exit" in message:
                return message["exit"] if message["exit"] >= 0 else 128 - message["exit"]


def main(argv: list[str]) -> int:
    if argv[:1] == ["serve"] and len(argv) == 4:
        if sys.argv[0].startswith("/dev/fd/"):
            os.close(int(sys.argv[0][len("/dev/fd/"):]))  # The script, read: no kernel inherits it.
        listener = socket.socket(fileno=int(argv[1]))
        os.set_inheritable(listener.fileno(), False)
        serve(listener, argv[2] == "1", json.loads(argv[3]))
        return 0
    if argv[:1] == ["attach"] and len(argv) in (4, 5):
        return attach(*argv[1:])
    print("usage: zygote.py serve FD SANDBOXED PRELOAD | attach CONTROL CONNECTION_FILE IP [LIMITS]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
