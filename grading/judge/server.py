"""The judge process: runs the test cells of one student's notebooks against their kernels.

    python -m grading.judge.server CONTROL_FD

The grading process (grading/pipeline/worker.py) starts one per student, and it serves all of that
student's notebooks; it imports torch, NumPy and the course package once, right after it made the
first notebook's socket (so that the imports overlap the kernel's start). Commands come on the
control socket as JSON lines, each answered by one line:

- ``{"op": "open", "socket": PATH, "trusted": {...}, "uid": UID}``: listen for the next kernel on a
  fresh Unix socket at PATH (in a folder of the grader's, which the sandbox shows read-only);
- ``{"op": "run", "epoch": E, "grade_id": G, "source": S, "timeout": T}``: run the test cell S
  while the kernel serves E; answer ``{"verdict": {...}}`` (runner.Verdict). While it runs,
  ``{"op": "cell_done", "epoch": E}`` says the kernel's cell ended: the test fails, if it has not
  ended, as one whose kernel stopped serving;
- ``{"op": "close"}``: forget the kernel (its notebook is done).

The judge never connects anywhere: kernels connect to it, and it accepts one connection per
notebook, then removes the socket. Whatever a kernel sends can fail its own test cells, never stop
the judge; when the judge itself dies, the grader fails the rest of the student's cells.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import socket
import sys
import time


class Control:
    """The grader's end of the control socket, read line by line without reading ahead of the judge."""

    def __init__(self, connection: socket.socket) -> None:
        self.connection = connection
        self.buffer = b""
        self.closed = False

    def fileno(self) -> int:
        return self.connection.fileno()

    def fill(self) -> None:
        chunk = self.connection.recv(1 << 16)
        if not chunk:
            self.closed = True
        self.buffer += chunk

    def pending(self) -> bool:
        """Whether a whole line (or the end) came: during a test, that cancels it."""
        return self.closed or b"\n" in self.buffer

    def read_line(self) -> str | None:
        while b"\n" not in self.buffer:
            if self.closed:
                return None
            self.fill()
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode("utf-8")

    def reply(self, message: dict) -> None:
        self.connection.sendall((json.dumps(message) + "\n").encode())


class Notebook:
    """One notebook's kernel, as the judge sees it: a listener, then one connection."""

    def __init__(self, path: str, trusted: dict, uid: int | None) -> None:
        self.path = path
        self.trusted_names = {name: tuple(value) for name, value in trusted.items()}
        self.trusted: dict | None = None
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        if uid is not None and os.geteuid() == 0:
            os.chown(path, 0, uid)
        os.chmod(path, 0o660 if uid is not None else 0o600)
        self.listener.listen(1)
        self.peer = None  # The JudgePeer, once the kernel connected.
        self.failure: str | None = None

    def connect(self, control: Control, deadline: float):
        """The kernel's connection (its first one); None when it never came or broke."""
        if self.peer is None and self.failure is None:
            self.listener.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                connection, _ = self.listener.accept()
            except OSError:
                self.failure = "the kernel never connected to the judge (its first cell failed or it ended)"
                return None
            finally:
                self.close_listener()
            from grading.judge.remote import JudgePeer

            self.peer = JudgePeer(connection, control=control)
            try:
                self.peer.deadline = deadline
                self.peer.hello()
            except BaseException as error:  # noqa: BLE001 - a kernel that cannot even say hello.
                self.failure = f"the kernel did not greet the judge ({type(error).__name__}: {error})"
            finally:
                self.peer.deadline = None
        return None if self.failure else self.peer

    def close_listener(self) -> None:
        if self.listener is not None:
            self.listener.close()
            self.listener = None
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    def close(self) -> None:
        self.close_listener()
        if self.peer is not None:
            self.peer.connection.close()


def _run(notebook: Notebook | None, command: dict, control: Control):
    from grading.judge.runner import Verdict, resolve_trusted, run_test

    grade_id = str(command["grade_id"])
    deadline = time.monotonic() + float(command["timeout"])
    peer = notebook.connect(control, deadline) if notebook is not None else None
    if peer is None:
        reason = notebook.failure if notebook is not None else "no notebook was opened"
        return Verdict(grade_id, False, f"KernelError: {reason}")
    if notebook.trusted is None:
        notebook.trusted = resolve_trusted(notebook.trusted_names)
    return run_test(peer, str(command["epoch"]), grade_id, str(command["source"]), notebook.trusted,
                    float(command["timeout"]))


_warmed = False


def warm() -> None:
    """Import what every test needs (torch, NumPy, the course package) once, while the kernel starts."""
    global _warmed
    if _warmed:
        return
    _warmed = True
    import torch

    torch.set_num_threads(1)
    import numpy.random  # noqa: F401 - every test cell seeds it (runner.py), which would import it in each judge.

    import course.checks  # noqa: F401 - imported now, before any test cell needs it.
    import grading.judge.runner  # noqa: F401 - the same.

    # What is imported now lives as long as the judge: the collector need not walk it again. Importing torch leaves
    # some 190,000 objects that it tracks, and every full collection walked them all: a test's messages make many
    # small lists, which start a collection every few hundred, and that tripled the cost of encoding and decoding
    # them (measured 2026-12-04: 3,000 replay steps took 37.4 ms to encode, pack, unpack and decode, 14.1 ms frozen).
    gc.collect()
    gc.freeze()
    # And the young objects are collected every 10,000 allocations instead of 700: a judge lives for one student.
    gc.set_threshold(10_000)
    limit_memory()


JUDGE_MEMORY_BYTES = 2 << 30  # What a judge may allocate beyond what it holds once it has imported everything.


def limit_memory() -> None:
    """Let this process (and the judges forked from it) allocate at most `JUDGE_MEMORY_BYTES` more than it holds now.

    A judge is not in its student's memory cgroup on cgroup v1 (grading/isolation/limits.py, `join_cpu`), and the
    values it decodes take up to about 80 times the bytes of the message that brought them (a byte of msgpack can
    be an empty list): without this, a kernel's messages could make its judge as large as the grading process may
    be, on top of the kernel's own limit. Past it, the judge fails that student's test cells (a MemoryError)."""
    with open("/proc/self/status") as status:
        held = next((int(line.split()[1]) * 1024 for line in status if line.startswith("VmData:")), None)
    if held is None:
        return
    limit = held + JUDGE_MEMORY_BYTES
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def serve(control: Control) -> None:
    notebook: Notebook | None = None
    while (line := control.read_line()) is not None:
        command = json.loads(line)
        op = command.get("op")
        if op == "open":
            if notebook is not None:
                notebook.close()
            notebook = Notebook(command["socket"], command.get("trusted", {}), command.get("uid"))
            control.reply({"ok": True})
            warm()  # The socket is there for the kernel; the imports overlap its start.
        elif op == "run":
            control.reply({"verdict": _run(notebook, command, control).to_json()})
        elif op == "close":
            if notebook is not None:
                notebook.close()
            notebook = None
            control.reply({"ok": True})
        # "cell_done" of a test that already ended needs no answer.


def main(argv: list[str]) -> int:
    control = Control(socket.socket(fileno=int(argv[0])))
    try:
        serve(control)
    except (ConnectionError, BrokenPipeError):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
