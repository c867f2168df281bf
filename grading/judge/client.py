"""The grading process's handle on a judge process (grading/judge/server.py).

`JudgeProcess.start` starts one; the worker (grading/pipeline/worker.py) starts one per student and
registers it (`use`) for the nbgrader preprocessor (grading/judge/execute.py) of each notebook;
without one (plain ``nbgrader autograde``) the preprocessor starts its own for the notebook.
When the judge process ends or stops answering, every verdict it owes fails with that reason.
"""

from __future__ import annotations

import json
import os
import select
import selectors
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

_CURRENT: JudgeProcess | None = None


def use(judge: JudgeProcess | None) -> None:
    """The judge that the notebooks graded from now on use (None: each starts its own)."""
    global _CURRENT
    _CURRENT = judge


def current() -> JudgeProcess | None:
    """The registered judge, even a dead one: its notebooks' verdicts then fail, with the reason."""
    return _CURRENT


_ROOT = str(Path(__file__).resolve().parent.parent.parent)


def _python_process(module: str, connection: socket.socket, log_path: Path | None) -> subprocess.Popen:
    """``python -m module FD`` serving ``connection``, one thread for torch, its output in ``log_path``."""
    env = {**os.environ, "PYTHONPATH": _ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115 - closed below.
    try:
        return subprocess.Popen([sys.executable, "-m", module, str(connection.fileno())],
                                pass_fds=[connection.fileno()], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                env=env, cwd=_ROOT)
    finally:
        if log_path:
            log.close()


class ForkedJudge:
    """A judge process that the spawner forked: the few things of `subprocess.Popen` that the worker uses.

    It is the spawner's child, not ours, so its end is seen through a pidfd and its exit status is unknown.
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        try:
            self.pidfd: int | None = os.pidfd_open(pid)
        except ProcessLookupError:  # It ended already (and was reaped).
            self.pidfd, self.returncode = None, -1

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self.pidfd], [], [], 0)[0]:
            self._ended()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self.pidfd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(f"judge {self.pid}", timeout)
            self._ended()
        return self.returncode

    def send_signal(self, number: int) -> None:
        if self.returncode is None:
            signal.pidfd_send_signal(self.pidfd, number)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _ended(self) -> None:
        self.returncode = -1  # Unknown: the spawner reaped it.
        os.close(self.pidfd)
        self.pidfd = None


class Spawner:
    """This process's judge spawner (grading/judge/spawner.py), which forks judges that imported everything."""

    def __init__(self, log_path: Path | None = None) -> None:
        self.failed = False
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.process = _python_process("grading.judge.spawner", theirs, log_path)
        finally:
            theirs.close()

    def spawn(self, connection: socket.socket, log_path: Path | None) -> ForkedJudge | None:
        """A judge serving ``connection``; None when the spawner is gone or failed (the caller then starts
        a judge of its own, and so does every later caller: a late answer must not pass for the next one)."""
        if self.failed or self.process.poll() is not None:
            return None
        try:
            request = json.dumps({"log": str(log_path) if log_path else None}).encode()
            socket.send_fds(self.control, [request], [connection.fileno()])
            self.control.settimeout(120)  # Its first answer waits for its imports.
            answer = json.loads(self.control.recv(1 << 16) or b"{}")
        except (OSError, ValueError):
            answer = {}
        if type(answer.get("pid")) is not int:
            self.failed = True
            return None
        return ForkedJudge(answer["pid"])

    def stop(self) -> None:
        self.control.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_SPAWNER: Spawner | None = None


def start_spawner(log_path: Path | None = None) -> None:
    """Fork this process's judges from a spawner from now on (it imports while the caller goes on)."""
    global _SPAWNER
    if _SPAWNER is None:
        _SPAWNER = Spawner(log_path)


def stop_spawner() -> None:
    global _SPAWNER
    if _SPAWNER is not None:
        _SPAWNER.stop()
        _SPAWNER = None


class JudgeProcess:
    """A running judge process and its control socket."""

    def __init__(self, process: subprocess.Popen, control: socket.socket) -> None:
        self.process = process
        self.control = control
        self.buffer = b""
        self.failure: str | None = None

    @classmethod
    def start(cls, log_path: Path | None = None) -> JudgeProcess:
        """A judge forked by this process's spawner when it has one (`start_spawner`), else a fresh process."""
        ours, theirs = socket.socketpair()
        try:
            process = _SPAWNER.spawn(theirs, log_path) if _SPAWNER is not None else None
            if process is None:
                process = _python_process("grading.judge.server", theirs, log_path)
        finally:
            theirs.close()
        return cls(process, ours)

    def alive(self) -> bool:
        return self.failure is None and self.process.poll() is None

    def _send(self, message: dict) -> None:
        try:
            self.control.sendall((json.dumps(message) + "\n").encode())
        except OSError as error:
            self.failure = self.failure or f"the judge process ended ({error})"

    def _receive(self, timeout: float) -> dict | None:
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(self.control, selectors.EVENT_READ)
            while b"\n" not in self.buffer and self.failure is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining):
                    self.failure = f"the judge process did not answer within {timeout:g} s"
                    break
                chunk = self.control.recv(1 << 20)
                if not chunk:
                    code = self.process.poll()
                    self.failure = f"the judge process ended (exit status {code})"
                    break
                self.buffer += chunk
        if self.failure is not None:
            return None
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def open(self, socket_path: str, trusted: dict, uid: int | None) -> None:
        self._send({"op": "open", "socket": socket_path, "trusted": trusted, "uid": uid})
        self._receive(60)

    def start_test(self, epoch: str, grade_id: str, source: str, timeout: float) -> None:
        self._send({"op": "run", "epoch": epoch, "grade_id": grade_id, "source": source, "timeout": timeout})

    def cell_done(self, epoch: str) -> None:
        self._send({"op": "cell_done", "epoch": epoch})

    def verdict(self, grade_id: str, timeout: float) -> dict:
        """The verdict of the test started last; a failed one when the judge is gone."""
        answer = self._receive(timeout) if self.failure is None else None
        if answer is None or "verdict" not in answer:
            return {"grade_id": grade_id, "passed": False, "traceback": [],
                    "message": f"JudgeError: {self.failure or 'the judge answered something else'}"}
        return answer["verdict"]

    def close_notebook(self) -> None:
        if self.failure is None:
            self._send({"op": "close"})
            self._receive(60)

    def cpu_seconds(self) -> float:
        """CPU seconds the judge process has used so far (user and system), from /proc."""
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return 0.0

    def stop(self) -> None:
        try:
            self.control.close()
        finally:
            if self.process.poll() is None:
                try:
                    self.process.send_signal(signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.process.wait()
