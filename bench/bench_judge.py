"""What one crossing of the judge costs: CPU of both processes per call into the student's code.

    python bench/bench_judge.py [--calls 20000] [--held 0 32]

A test cell in the judge calls a method of a student's object in a kernel ``--calls`` times
(``counter.bump(i)``: a small int in, a small int out), while the test holds ``--held`` other
objects of the student's whose ``__dict__`` it has read (each one a shared pair that must stay in
step). The kernel is a forked child serving the judge, as grading/judge/host.py runs one. Both
processes' CPU is read from /proc (user and system time), in one run, for three routes:

- in process: the same loop calling the same method in this process (what the test costs without a judge);
- a bare round trip: the same number of messages of the same size through a socket pair, each side a
  plain loop of send and recv (the floor of any design that crosses processes once per call);
- through the judge: grading/judge/ (runner.run_test against agent.AgentPeer).

It prints the CPU per call of each route, both processes together (and each side's share through
the judge), and the judge's ratios against the other two.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from grading.judge.agent import AgentPeer  # noqa: E402
from grading.judge.peer import HELLO, ConnectionClosed  # noqa: E402
from grading.judge.remote import JudgePeer  # noqa: E402
from grading.judge.runner import run_test  # noqa: E402
from grading.judge.wire import WireError  # noqa: E402

STUDENT = textwrap.dedent('''
    class Counter:
        def __init__(self):
            self.value = 0
            self.calls = 0
        def bump(self, step):
            self.value += step
            self.calls += 1
            return self.value
''')
TEST = textwrap.dedent('''
    held = [Counter() for _ in range(HELD)]
    assert all(each.value == 0 for each in held)
    counter = Counter()
    for step in range(CALLS):
        counter.bump(step)
    assert counter.value == CALLS * (CALLS - 1) // 2
''')
MESSAGE = b"\x95\xa3req\xa11\x01\x92\x90\x92\x90\x00\x94\xa6method\x92\x1d\x03\xa4bump\x91\xcd\x01\x00\x90"


def cpu_of(pid: int) -> float:
    """User and system CPU seconds of process ``pid``, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def in_process(calls: int, held: int) -> float:
    namespace = {"__name__": "__main__", "CALLS": calls, "HELD": held}
    exec(STUDENT, namespace)
    started = time.process_time()
    exec(TEST, namespace)
    return time.process_time() - started


def _fork(serve) -> tuple[int, socket.socket]:
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        ours.close()
        try:
            serve(theirs)
        finally:
            os._exit(0)
    theirs.close()
    return pid, ours


def _echo(connection: socket.socket) -> None:
    buffer = bytearray(1 << 20)
    while size := connection.recv_into(buffer):
        connection.sendall(buffer[:size])


def bare_round_trips(calls: int) -> float:
    pid, connection = _fork(_echo)
    buffer = bytearray(1 << 20)
    started, child = time.process_time(), cpu_of(pid)
    for _ in range(calls):
        connection.sendall(MESSAGE)
        connection.recv_into(buffer)
    spent = time.process_time() - started + cpu_of(pid) - child
    connection.close()
    os.waitpid(pid, 0)
    return spent


def _kernel(connection: socket.socket) -> None:
    namespace = {"__name__": "__main__"}
    exec(STUDENT, namespace)
    peer = AgentPeer(connection, namespace)
    peer.send(HELLO, 0, [True, ""])
    try:
        while True:
            peer.serve("1")
    except (ConnectionClosed, OSError, WireError):
        pass


def judged(calls: int, held: int) -> tuple[float, float]:
    """CPU seconds of the judge's process and of the kernel's, through the judge."""
    pid, connection = _fork(_kernel)
    judge = JudgePeer(connection)
    judge.hello()
    trusted = {"CALLS": calls, "HELD": held}
    started, child = time.process_time(), cpu_of(pid)
    verdict = run_test(judge, "1", "bench", TEST, trusted, timeout=3600)
    spent = time.process_time() - started, cpu_of(pid) - child
    connection.close()
    os.waitpid(pid, 0)
    if not verdict.passed:
        raise SystemExit(f"the benchmark's test failed through the judge: {verdict.message}")
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--held", type=int, nargs="+", default=[0, 32])
    options = parser.parse_args()
    torch.set_num_threads(1)
    calls = options.calls
    bare = bare_round_trips(calls) / calls * 1e6
    print(f"{calls} calls; CPU of both processes per call, in microseconds")
    print(f"bare socket round trip: {bare:.1f}")
    for held in options.held:
        local = in_process(calls, held) / calls * 1e6
        judge, kernel = (seconds / calls * 1e6 for seconds in judged(calls, held))
        crossing = judge + kernel
        print(f"held objects {held:3d}: in process {local:.2f}; through the judge {crossing:.1f} (judge {judge:.1f}, "
              f"kernel {kernel:.1f}) = {crossing / bare:.1f}x a bare round trip, "
              f"{crossing / local:.0f}x the in-process call")


if __name__ == "__main__":
    main()
