"""Runs one graded test cell in the judge, against the kernel that serves it; returns its verdict.

The cell runs in a fresh namespace (`CellGlobals`) whose missing names resolve, in this order:

1. the judge's builtins (a kernel that defines ``sorted`` or ``len`` changes nothing here);
2. the *trusted names*: what the notebook's own read-only cells import (``torch``, ``math``,
   ``from course.env import pick_device``...), taken from the judge's own imports
   (`grading.judge.names.trusted_names`), so that a student who rebinds ``torch`` in the kernel does not reach the test;
3. the kernel's global namespace, by request: data by value, modules of the allowed list and
   their functions and classes as the judge's own, everything else as handles. A name is asked
   once per cell; when the kernel reports that it rebound one, it is asked again.

Python's own random generators (``random``, NumPy's, torch's) are seeded from the cell's grade id
before it runs, so that a test cell draws the same cases whatever ran before it. The cell passes
when it runs to its end; anything it raises (a failing check, the kernel's exception, a timeout, a
kernel that broke the protocol or ended) fails it, with a one-line message.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import importlib
import io
import linecache
import random
import signal
import threading
import time
import traceback
from dataclasses import dataclass

import numpy
import torch

from grading.isolation.outputs import MAX_JUDGE_MESSAGE_CHARS

from .peer import ConnectionClosed
from .remote import _SLICE_MICROSECONDS, Cancelled, JudgePeer, JudgeTimeout
from .wire import WireError

_BUILTIN_NAMES = frozenset(dir(builtins))
# The builtins a cell's code names, as entries of its namespace: a name that a dict subclass lacks costs a call of
# `CellGlobals.__missing__` and a KeyError at every lookup before Python looks in the builtins.
_PUBLIC_BUILTINS = {name: value for name, value in vars(builtins).items() if not name.startswith("_")}


@dataclass
class Verdict:
    """What the judge decided about one test cell."""

    grade_id: str
    passed: bool
    message: str = ""  # The failing check's one line: "AssertionError: select_victim({...}) returned ...".
    traceback: list[str] | None = None  # The lines of the test cell on the way to the failure.

    def to_json(self) -> dict:
        return {"grade_id": self.grade_id, "passed": self.passed, "message": self.message,
                "traceback": self.traceback or []}


class CellGlobals(dict):
    """A test cell's global namespace (see the module's docstring)."""

    def __init__(self, peer: JudgePeer, trusted: dict[str, object]) -> None:
        # Entries in the order of precedence, the first one last: builtins over trusted names.
        super().__init__(trusted, **_PUBLIC_BUILTINS, __name__="__main__", __builtins__=builtins)
        self.peer = peer
        self.trusted = trusted
        self.resolved: dict[str, object] = {}

    def __missing__(self, name: str):
        if name in _BUILTIN_NAMES:
            raise KeyError(name)
        if name in self.trusted:
            return self.trusted[name]
        if name in self.resolved:
            return self.resolved[name]
        found, value = self.peer.request("global", name)
        if found is not True:
            raise KeyError(name)
        self.resolved[name] = value
        return value

    def forget(self, names: list[str]) -> None:
        for name in names:
            self.resolved.pop(name, None)


def resolve_trusted(names: dict[str, tuple[str, str | None]]) -> dict[str, object]:
    """The judge's own objects for `trusted_names`; a name whose import fails here is left to the kernel."""
    resolved = {}
    for name, (module, attribute) in names.items():
        try:
            value = importlib.import_module(module)
            if attribute is not None:
                value = getattr(value, attribute) if hasattr(value, attribute) else importlib.import_module(
                    f"{module}.{attribute}")
        except (ImportError, AttributeError):
            continue
        resolved[name] = value
    return resolved


def seed_for(grade_id: str) -> int:
    return int.from_bytes(hashlib.sha256(grade_id.encode()).digest()[:4], "little")


def _seed(grade_id: str) -> None:
    seed = seed_for(grade_id)
    random.seed(seed)
    numpy.random.seed(seed)
    torch.manual_seed(seed)


class _Alarm:
    """Ends the test at its deadline while the judge itself computes: the test's own code, or a lent object's method
    that the student's code called with a huge argument (red team, 2026-12-07: a ``ToyCache.unpin`` of a list of
    100,000 equal hashes kept a judge busy 30 s per test cell past a 10 s limit). The deadline is otherwise looked at
    only while the judge waits for the kernel, which keeps doing so: a message being made or read is finished
    first. Python runs signal handlers in the main thread only, where the grading command's judge runs its tests;
    elsewhere it does nothing."""

    def __init__(self, peer: JudgePeer) -> None:
        self.peer, self.previous = peer, None

    def __enter__(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGALRM, self._ring)
            signal.setitimer(signal.ITIMER_REAL, max(self.peer.deadline - time.monotonic(), 0.001))

    def _ring(self, signum, frame) -> None:
        peer = self.peer
        if peer.in_message or peer.decoding:
            signal.setitimer(signal.ITIMER_REAL, 0.05)  # The message is finished first.
            return
        if peer.waiting and not peer.serving:
            # The wait looks at the deadline after each slice of its receive, which each signal starts again: the
            # next one comes later than a slice.
            signal.setitimer(signal.ITIMER_REAL, 2.5 * _SLICE_MICROSECONDS / 1e6)
            return
        # Again later, should this one be swallowed (an exception raised in a __del__ is only printed).
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        raise JudgeTimeout()

    def __exit__(self, *exception) -> None:
        if self.previous is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)


def _describe(error: BaseException, timeout: float) -> str:
    if isinstance(error, JudgeTimeout):
        return f"TimeoutError: the test did not finish within {timeout:g} s"
    if isinstance(error, Cancelled):
        return "KernelError: the kernel stopped serving this test before it ended (its cell ended early)"
    if isinstance(error, (ConnectionClosed, OSError)):
        return f"KernelError: the kernel ended while this test ran ({error})"
    if isinstance(error, WireError):
        return f"KernelError: the kernel broke the judge's protocol: {error}"
    try:
        text = str(error)
    except (Exception, JudgeTimeout, Cancelled):  # noqa: BLE001 - a message that the kernel no longer gives.
        text = ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _cell_lines(error: BaseException, filename: str) -> list[str]:
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == filename]
    return [f"line {frame.lineno}, in {frame.name}: {frame.line}" for frame in frames][-8:]


def run_test(peer: JudgePeer, epoch: str, grade_id: str, source: str, trusted: dict[str, object],
             timeout: float) -> Verdict:
    """Run the test cell ``source`` while the kernel serves ``epoch``; return its verdict."""
    filename = f"<test cell {grade_id}>"
    namespace = CellGlobals(peer, trusted)
    try:
        peer.begin(epoch, time.monotonic() + timeout)
        peer.on_rebound = namespace.forget
        code = compile(source, filename, "exec")
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # For the traceback.
        _seed(grade_id)
        with _Alarm(peer), contextlib.redirect_stdout(io.StringIO()):
            exec(code, namespace)
            peer.finish()  # A time limit that a finalizer's sync met, after the test's last request, fails it too.
    except BaseException as error:  # noqa: BLE001 - whatever ends the test fails it; the judge goes on.
        if isinstance(error, (KeyboardInterrupt, SystemExit)) and type(error).__module__ != "kernel":
            raise  # The judge itself is asked to stop.
        message = _describe(error, timeout)[:MAX_JUDGE_MESSAGE_CHARS]
        verdict = Verdict(grade_id, False, message, _cell_lines(error, filename))
    else:
        verdict = Verdict(grade_id, True)
    finally:
        peer.testing = False  # What the test's names held crosses with the end of the test.
        namespace.clear()
        namespace.resolved.clear()
        linecache.cache.pop(filename, None)
        peer.end()
    return verdict

