"""Judge processes forked from one that has already imported what they need: one spawner per grading worker.

    python -m grading.judge.spawner CONTROL_FD

A judge process (server.py) imports torch, NumPy, the course package and the judge's modules, about
2 s of CPU. Started fresh for each student, that was a fixed cost of every student; the spawner pays
it once per grading worker. For each student the worker (grading/judge/client.py) sends it, on a
``SOCK_SEQPACKET`` control socket, a JSON request (``{"log": PATH or null}``) with one end of a
fresh socket pair attached (``SCM_RIGHTS``); the spawner forks a judge that serves that socket, as
``python -m grading.judge.server`` would, and answers ``{"pid": PID}``. The worker then moves that
pid into the student's cgroup and watches it through a pidfd.

The spawner runs no student's code and holds no student's state: each judge is a fresh fork of it.
Its children are reaped as they end (SIGCHLD ignored). It ends when the worker closes the control
socket (the worker ended, or was killed past a time limit).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import traceback

from grading.judge import server


def _judge(connection_fd: int, log: str | None) -> int:
    """The forked child: serve one student's notebooks on ``connection_fd``, writing its output to ``log``."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    target = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600) if log else os.open(os.devnull, os.O_WRONLY)
    os.dup2(target, 1)
    os.dup2(target, 2)
    os.close(target)
    try:
        return server.main([str(connection_fd)])
    except BaseException:  # noqa: BLE001 - whatever ends the judge, the log says it; the worker sees it end.
        traceback.print_exc()
        return 1


def serve(control: socket.socket) -> None:
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 1 << 16, 1)
        except ConnectionError:
            return
        if not message:
            return
        request = json.loads(message)
        if len(fds) != 1:
            for fd in fds:
                os.close(fd)
            control.send(json.dumps({"error": "a request must carry one socket"}).encode())
            continue
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                control.close()
                sys.stdout.flush()
                code = _judge(fds[0], request.get("log"))
            finally:
                os._exit(code)
        os.close(fds[0])
        control.send(json.dumps({"pid": pid}).encode())


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # Judges are reaped as they end.
    server.warm()
    serve(socket.socket(fileno=int(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
