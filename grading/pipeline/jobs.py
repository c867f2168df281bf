"""The run stage's grading processes: one per ``--jobs`` slot, each grading one student at a time.

A `Job` owns one grading process (grading/pipeline/worker.py) and the pipe of its events
(grading/pipeline/events.py). It sends a student's request, enforces the student's time limit per notebook
by killing the process, and starts a new one for what is left: a process holds no state that a student's code
could reach. `status_of` turns each notebook's outcome into the status that the grades table shows.
"""

from __future__ import annotations

import json
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from grading.judge import cores
from grading.pipeline.collect import Submission
from grading.pipeline.events import Crashed, Done, Event, Failed, Finished, Outcome, Ready, Start, TimedOut, decode
from grading.pipeline.options import WORKER_STEP_LIMIT_S, GradingOptions


class Job:
    """One of the ``--jobs`` grading processes, owned by one thread at a time."""

    def __init__(self, number: int, course: Path, options: GradingOptions, skip_tag: str,
                 temporary: Path | None = None):
        self.number = number
        self.course = course
        self.db = course / "jobs" / f"job-{number}.db"
        self.log_path = course / "jobs" / f"job-{number}.log"
        shutil.copy(course / "gradebook.db", self.db)
        # The command's options travel whole; the scratch course, the tag and the gradebook are this run's.
        self.settings_path = course / "jobs" / f"job-{number}.json"
        self.settings_path.write_text(json.dumps({"options": options.to_json(), "course": str(course),
                                                  "skip_tag": skip_tag, "db": str(self.db)}))
        self.memory_limit_gb = options.memory_limit_gb
        # The process's $TMPDIR: a folder of the run's (the grading command removes it at the end, whatever happened),
        # so that what a killed process could not remove (a kernel's connection file, a warm process's folder)
        # never stays in the host's /tmp. The sandbox never shows it.
        self.temporary = temporary
        if temporary is not None:
            temporary.mkdir(mode=0o700, exist_ok=True)
        # The core of this slot: its grading process and all it starts (judge, kernels) run there.
        self.core = cores.core_for(number) if options.pin_cpus else None
        self.process: subprocess.Popen | None = None
        self.events = None
        self.buffer = b""

    def _start(self) -> None:
        read_end, write_end = os.pipe()
        env = dict(os.environ)
        package_home = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = package_home + os.pathsep + env.get("PYTHONPATH", "")
        if self.temporary is not None:
            env["TMPDIR"] = str(self.temporary)
        limit = int(self.memory_limit_gb * 2**30) if self.memory_limit_gb else None
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "grading.pipeline.worker", str(self.settings_path), str(write_end)],
                stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, pass_fds=[write_end], cwd=self.course,
                env=env, start_new_session=True, preexec_fn=child_setup(self.core, limit))
        os.close(write_end)
        self.events = read_end
        self.buffer = b""
        if not isinstance(self._next(time.monotonic() + WORKER_STEP_LIMIT_S), Ready):
            self.stop()
            raise RuntimeError(f"the grading process did not start: {self.log_tail()}")

    def _next(self, deadline: float) -> Event | None:
        """The process's next event; None when the deadline passed, the process ended or wrote no event."""
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            with selectors.DefaultSelector() as selector:
                selector.register(self.events, selectors.EVENT_READ)
                if not selector.select(min(remaining, 5.0)):
                    if self.process.poll() is not None:
                        return None
                    continue
            chunk = os.read(self.events, 65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            return decode(line)
        except ValueError:
            return None

    def log_tail(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return lines[-1][:300] if lines else "(no output)"

    def ask_to_end(self) -> None:
        """Tell the process that no request will follow (it ends once it has read that), without waiting for it:
        the grading processes of a run end together, not one after another."""
        if self.process is not None:
            try:
                self.process.stdin.close()
            except OSError:
                pass

    def stop(self, graceful: bool = False) -> None:
        """End the process: at once (it is stuck past a time limit), or once it has read its last request."""
        if self.process is not None:
            if graceful:
                self.ask_to_end()
                try:
                    self.process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    pass
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.process.wait()
            self.process = None
        if self.events is not None:
            os.close(self.events)
            self.events = None

    def _send(self, request: dict) -> None:
        if self.process is None or self.process.poll() is not None:
            self._start()
        self.process.stdin.write((json.dumps(request) + "\n").encode())
        self.process.stdin.flush()

    def grade(self, student: str, assignments: list[str], plan: Path | None, timeout: float) -> dict[str, Outcome]:
        """Grade the student's notebooks; return each one's outcome."""
        outcomes: dict[str, Outcome] = {}
        pending = list(assignments)
        while pending:
            try:
                self._send({"student": student, "assignments": pending, "plan": str(plan) if plan else None})
            except (OSError, RuntimeError) as error:
                self.stop()
                outcomes.update({a: Failed(f"the grading process failed: {error}") for a in pending})
                return outcomes
            self._follow(pending, outcomes, timeout)
        return outcomes

    def _follow(self, pending: list[str], outcomes: dict[str, Outcome], timeout: float) -> None:
        """Read the events of one request until it is finished or the process ends; ``pending`` shrinks."""
        current, deadline = None, time.monotonic() + WORKER_STEP_LIMIT_S
        while True:
            event = self._next(deadline)
            if isinstance(event, Start):
                current, deadline = event.assignment, time.monotonic() + timeout
            elif isinstance(event, Done):
                outcomes[event.assignment] = event
                pending.remove(event.assignment)
                current, deadline = None, time.monotonic() + WORKER_STEP_LIMIT_S
            elif isinstance(event, Finished):
                return
            else:  # The process ended, went past the deadline, or crashed while grading `current`.
                failed = current or pending[0]
                if isinstance(event, Crashed):
                    outcomes[failed] = Failed(event.error.strip().splitlines()[-1])
                elif current is not None and time.monotonic() >= deadline:
                    outcomes[failed] = TimedOut(f"timed out after {timeout:g} s")
                else:
                    outcomes[failed] = Failed(f"the grading process ended: {self.log_tail()}")
                if not isinstance(event, Crashed):
                    self.stop()
                pending.remove(failed)
                return


def child_setup(core: int | None, data_limit_bytes: int | None):
    """What a grading process does before it starts: move to its slot's core, limit its data segment; None
    when there is nothing to do."""
    if core is None and not data_limit_bytes:
        return None

    def setup() -> None:
        cores.pin(core)
        if data_limit_bytes:
            resource.setrlimit(resource.RLIMIT_DATA, (data_limit_bytes, data_limit_bytes))

    return setup


# What stopped a kernel (grading/pipeline/liveness.py) that is a time limit: such a status starts "timed out".
_TIMED_STOPS = ("stuck", "interrupt", "output")


def status_of(submission: Submission, outcome: Outcome, timeout: float) -> str:
    """The status of a graded submission, from its outcome and what preparing it found."""
    notes = "".join(f"; {note}" for note in submission.notes)
    if isinstance(outcome, TimedOut):
        return (f"timed out after {timeout:g} s: the notebook ran past its time limit (--student-timeout) and was not "
                f"graded, every task scores 0 (needs a manual look){notes}")
    if isinstance(outcome, Failed):
        return f"needs a manual look: grading failed: {outcome.reason}"
    if not outcome.ok:
        if "CellTimeoutError" in outcome.log + outcome.error:
            return "timed out: a cell ignored the interrupt (0 points; needs a manual look)"
        reason = next((line for line in reversed((outcome.error or outcome.log).strip().splitlines())
                       if line.strip()), "nbgrader failed")
        return f"needs a manual look: grading failed: {reason.strip()[:300]}"
    status = "needs a manual look" if submission.needs_manual_look else "repaired" if submission.repaired else "graded"
    details = list(submission.notes)
    stop = outcome.kernel_stopped
    if "Timeout waiting for execute reply" in outcome.log and not (stop and stop.get("kind") in _TIMED_STOPS):
        details.insert(0, "a cell ran past the time limit and was interrupted")
    if outcome.feedback_error:
        details.append(f"feedback failed: {outcome.feedback_error.strip().splitlines()[-1][:200]}")
    if outcome.judge_error:
        status = "needs a manual look"
        details.insert(0, f"the judge failed, so the rest of this student's tests score 0: {outcome.judge_error[:300]}")
    if stop:
        kept = (f"{stop.get('reason', 'the kernel stopped')}; the cells before it keep their points, the rest were not "
                "run and score 0")
        status = f"timed out: {kept} (needs a manual look)" if stop.get("kind") in _TIMED_STOPS \
            else f"needs a manual look: {kept}"
    return status + ("; " + "; ".join(details) if details else "")
