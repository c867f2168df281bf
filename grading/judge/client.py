"""The grading process's handle on a judge process (grading/judge/server.py).

`JudgeProcess.start` starts one; the worker (grading/pipeline/worker.py) starts one per student and
registers it (`use`) for the nbgrader preprocessor (grading/judge/execute.py) of each notebook;
without one (plain ``nbgrader autograde``) the preprocessor starts its own for the notebook.
When the judge process ends or stops answering, every verdict it owes fails with that reason.
"""

from __future__ import annotations

import json
import os
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


class JudgeProcess:
    """A running judge process and its control socket."""

    def __init__(self, process: subprocess.Popen, control: socket.socket) -> None:
        self.process = process
        self.control = control
        self.buffer = b""
        self.failure: str | None = None

    @classmethod
    def start(cls, log_path: Path | None = None) -> JudgeProcess:
        ours, theirs = socket.socketpair()
        root = str(Path(__file__).resolve().parent.parent.parent)
        env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", ""),
               "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
        log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115 - closed below.
        try:
            process = subprocess.Popen([sys.executable, "-m", "grading.judge.server", str(theirs.fileno())],
                                       pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=log, env=env, cwd=root)
        finally:
            theirs.close()
            if log_path:
                log.close()
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
