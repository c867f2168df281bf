"""A kernel's agent serving test cells in a thread of this process, for the judge's tests.

Each `Kernel` starts the agent (grading/judge/agent.py) on one end of a socket pair, with a namespace of its
own, and runs test code in the judge against it (runner.run_test), as grading does. The ``kernel`` fixture
starts kernels and closes them after the test.
"""

from __future__ import annotations

import socket
import textwrap
import threading

from grading.judge.agent import AgentPeer
from grading.judge.names import trusted_names
from grading.judge.peer import HELLO, ConnectionClosed
from grading.judge.remote import JudgePeer
from grading.judge.runner import resolve_trusted, run_test
from grading.judge.wire import WireError


class Kernel:
    """An agent serving test cells "1", "2", ... in a thread, with ``namespace`` as its globals."""

    def __init__(self, source: str, trusted_imports: str = "import torch\nimport math", timeout: float = 20) -> None:
        self.namespace: dict = {"__name__": "__main__"}
        exec(compile(textwrap.dedent(source), "<kernel>", "exec"), self.namespace)
        judge_end, kernel_end = socket.socketpair()
        self.agent = AgentPeer(kernel_end, self.namespace)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        self.judge = JudgePeer(judge_end)
        assert self.judge.hello() == (True, "")
        self.trusted = resolve_trusted(trusted_names([trusted_imports]))
        self.timeout = timeout
        self.epoch = 0

    def _serve(self) -> None:
        self.agent.send(HELLO, 0, [True, ""])
        epoch = 0
        try:
            while True:
                epoch += 1
                self.agent.serve(str(epoch))
        except (ConnectionClosed, OSError, WireError):
            pass

    def run(self, test: str):
        """The verdict of the test code ``test`` (a test cell) against this kernel."""
        self.epoch += 1
        return run_test(self.judge, str(self.epoch), f"test_{self.epoch}", textwrap.dedent(test), self.trusted,
                        self.timeout)

    def passes(self, test: str) -> None:
        verdict = self.run(test)
        assert verdict.passed, verdict.message + "\n" + "\n".join(verdict.traceback or [])

    def close(self) -> None:
        self.judge.connection.close()
        self.thread.join(5)
