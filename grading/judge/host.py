"""A plain Python stand-in for a student's kernel, for the mutation suite (grading/authoring/harness.py).

    python -m grading.judge.host SOCKET

It reads JSON lines on stdin. The first, ``{"setup": [...], "solutions": [...]}``, runs a
notebook's read-only cells and its reference solutions once (as nbgrader's kernel would, but
without IPython). Each next line, ``{"answer": SOURCE, "name": GRADE_ID}``, forks a child that
runs the answer in a copy of that namespace, connects to the judge's socket, says whether the
answer ran (a ``hello``), and serves the test cells ``"1"``, ``"2"``... of that answer, one after
another, until the judge closes the connection; the host answers ``{"pid": PID}`` at once. Each
answer has a fresh namespace and process, and costs a fork.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import linecache
import os
import signal
import socket
import sys

import torch

from grading.judge.agent import AgentPeer
from grading.judge.peer import HELLO, ConnectionClosed
from grading.judge.wire import WireError


def _run(source: str, name: str, namespace: dict) -> None:
    """Run ``source`` as a kernel runs a cell: its text stays readable through ``linecache`` (``inspect.getsource``
    on what it defines, which ``torch.jit.script`` and Triton need)."""
    linecache.cache[name] = (len(source), None, source.splitlines(keepends=True), name)
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(source, name, "exec"), namespace)


def _answer(path: str, base: dict, source: str, name: str) -> None:
    """The child: run the answer, then serve the judge; never returns."""
    code = 0
    # The answer's own child processes are its to reap (multiprocessing reads their exit codes), as in a kernel
    # (grading/isolation/zygote.py); the host ignores SIGCHLD only for the answers it forks.
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        namespace = dict(base)
        try:
            _run(source, f"<answer {name}>", namespace)
            ran, message = True, ""
        except Exception as error:  # noqa: BLE001 - the judge fails every test cell of a broken answer.
            ran, message = False, f"{type(error).__name__}: {error}"
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(path)
        peer = AgentPeer(connection, namespace)
        peer.send(HELLO, 0, [ran, message[:4000]])
        epoch = 0
        with contextlib.redirect_stdout(io.StringIO()):
            while ran:
                epoch += 1
                peer.serve(str(epoch))
    except (ConnectionClosed, OSError, WireError):
        pass
    except BaseException:  # noqa: BLE001 - the child ends whatever happens; the judge reports it.
        code = 1
    finally:
        os._exit(code)


def main(argv: list[str]) -> int:
    path = argv[0]
    torch.set_num_threads(1)  # No thread pool to inherit through fork.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # Children are reaped by the system.
    base: dict = {"__name__": "__main__"}
    lines = iter(sys.stdin.readline, "")
    first = json.loads(next(lines))
    for index, source in enumerate([*first["setup"], *first["solutions"]]):
        _run(source, f"<setup {index}>", base)
    # As in a warm kernel process (grading/isolation/zygote.py): what every answer shares is not walked again by
    # the collector in each of them.
    gc.collect()
    gc.freeze()
    print(json.dumps({"ready": True}), flush=True)
    for line in lines:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _answer(path, base, request["answer"], request["name"])
        print(json.dumps({"pid": pid}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
