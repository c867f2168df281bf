"""Runs a notebook's own test cells on any answer without nbgrader: in this process, or through the judge.

nbgrader starts a kernel per submission, which costs seconds; the mutation suite grades hundreds of
answers, so it runs the notebook's cells directly instead: the read-only setup cells and the
reference solutions once, then for each answer a copy of that namespace, the answer, and the
task's test cells (hidden tests included, or only the visible part), as nbgrader would run them.

- `JudgedHarness` grades as the grading command does: the answer runs in a kernel process of its
  own (a fork of grading/judge/host.py, which ran the setup once), and each test cell runs in the
  judge (here, this process) against it (grading/judge/). tests/test_mutants.py uses it.
- `ForkedHarness` runs the answer and the tests in one process, as `NotebookHarness` does, but in a fresh
  process of its own, forked per answer (tests/test_mutants.py);
- `NotebookHarness` runs the answer and the tests in this process, in one namespace, as the
  judge's predecessor did; benchmarks and property tests use it to reach the reference solutions
  (its ``base`` namespace), and grading/judge/compare.py shows that both give every answer the
  same result.

A task is one solution cell and the graded test cells that follow it (one, or several when the
task gives partial credit: one test cell per method or behaviour).
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
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from grading.judge import cores
from grading.pipeline.feedback import HIDDEN_MARK, marking_hidden_tests, without_hidden_tests


def compile_cell(source: str, name: str):
    """Compile ``source`` as IPython compiles a cell: its text stays readable through ``linecache``.

    ``inspect.getsource`` then works on what it defines, which Triton needs: ``@triton.jit`` reads a
    kernel's source to compile it, and its interpreter to run it (each reads it when the kernel is
    defined or first launched, so a later cell of the same name may replace the text).
    """
    filename = f"<{name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    return compile(source, filename, "exec")


@dataclass
class TestCell:
    """One graded test cell."""

    grade_id: str
    source: str
    points: float


@dataclass
class Task:
    """A solution cell and the test cells that grade it."""

    grade_id: str
    solution: str
    tests: list[TestCell] = field(default_factory=list)

    @property
    def points(self) -> float:
        return sum(test.points for test in self.tests)


@dataclass
class Result:
    """What one test cell gave an answer."""

    grade_id: str
    passed: bool
    message: str
    points: float
    # Whether any hidden-test code of the task had run when this cell failed (`NotebookHarness.results`); True
    # where that is not known.
    hidden_ran: bool = True

    @property
    def score(self) -> float:
        return self.points if self.passed else 0.0


def read_notebook(source_path: Path) -> tuple[dict[str, Task], list[str]]:
    """The tasks of a source notebook, and the sources of its read-only cells (in order)."""
    notebook = nbformat.read(source_path, as_version=4)
    tasks: dict[str, Task] = {}
    setup_sources: list[str] = []
    current: Task | None = None
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta:
            continue
        if meta.get("solution"):
            current = tasks[meta["grade_id"]] = Task(meta["grade_id"], cell.source)
        elif meta.get("grade"):
            if current is None:
                raise ValueError(f"{source_path}: test cell {meta['grade_id']} has no solution cell before it")
            current.tests.append(TestCell(meta["grade_id"], cell.source, float(meta.get("points", 0))))
        else:
            setup_sources.append(cell.source)
            current = None
    return tasks, setup_sources


class NotebookHarness:
    """Loads a source notebook and grades answers against its test cells, in this process."""

    def __init__(self, source_path: Path) -> None:
        self.path = source_path
        self.tasks, setup_sources = read_notebook(source_path)
        self.base: dict = {"__name__": "__main__"}
        with contextlib.redirect_stdout(io.StringIO()):
            for source in setup_sources:
                exec(compile_cell(source, f"{source_path.name} setup"), self.base)
            for task in self.tasks.values():
                exec(compile_cell(task.solution, task.grade_id), self.base)

    def results(self, grade_id: str, answer: str, visible_only: bool = False) -> list[Result]:
        """Run ``answer`` in place of the task's solution, then each of its test cells in order.

        With ``visible_only`` the hidden-test blocks are left out, as in the release notebook. An
        answer that raises fails every test cell.
        """
        task = self.tasks[grade_id]
        namespace = dict(self.base)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile_cell(answer, f"answer {grade_id}"), namespace)
        except Exception as error:  # noqa: BLE001 - any exception fails the task, as in nbgrader.
            message = f"the answer raised {type(error).__name__}: {error}"
            return [Result(test.grade_id, False, message, test.points, hidden_ran=False) for test in task.tests]
        results, entered = [], []
        namespace[HIDDEN_MARK] = lambda: entered.append(True)
        for test in task.tests:
            source = without_hidden_tests(test.source) if visible_only else marking_hidden_tests(test.source)
            if source is None:  # Unmarked: whether hidden code runs in it is not known.
                source = test.source
                entered.append(True)
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile_cell(source, f"test {test.grade_id}"), namespace)
            except Exception as error:  # noqa: BLE001 - any exception fails the test cell, as in nbgrader.
                # A NameError may come from a name that a hidden block makes local, which the visible code alone
                # would find: that failure is not one the visible tests would give.
                ran = bool(entered) or visible_only or isinstance(error, NameError)
                results.append(Result(test.grade_id, False, f"{type(error).__name__}: {error}", test.points, ran))
            else:
                results.append(Result(test.grade_id, True, "passed", test.points))
        return results

    def grade(self, grade_id: str, answer: str, visible_only: bool = False) -> tuple[bool, str]:
        """Whether ``answer`` passes every test cell of its task, and the first failure's message.

        Returns:
            ``(passed, message)``: the message names the failing test cell and its exception.
        """
        for result in self.results(grade_id, answer, visible_only):
            if not result.passed:
                return False, f"{result.grade_id}: {result.message}"
        return True, "passed"


class _HostedHarness:
    """A harness that grades in a host process of its own (``self._host``); a context manager."""

    grade = NotebookHarness.grade

    def _start_host(self, arguments: list[str], without: tuple[str, ...] = (), core: int | None = None) -> None:
        """Start ``python -m ARGUMENTS`` from the checkout, with one thread per library and without the
        environment variables ``without``, talking JSON lines on its stdin and stdout; on ``core`` alone
        when one is given."""
        root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", ""),
               "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        for name in without:
            env.pop(name, None)
        self._host = subprocess.Popen([sys.executable, "-m", *arguments], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, env=env, text=True, cwd=root,
                                      preexec_fn=None if core is None else lambda: cores.pin(core))

    def close(self) -> None:
        if self._host.poll() is None:
            self._host.stdin.close()
            self._host.kill()
        self._host.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class ForkedHarness(_HostedHarness):
    """`NotebookHarness` in a fresh Python process of its own (``python -m grading.authoring.harness
    SOURCE``), which runs the setup cells and reference solutions once and grades each answer, with its test
    cells, in a fork of itself: what an answer leaves behind (a patched module, Triton's interpreter stopped
    inside a kernel) never reaches the next answer, and nothing the calling process imported before (a Triton
    set up for a GPU) reaches the notebook. tests/test_mutants.py uses it. Use it as a context manager, or call
    `close`."""

    def __init__(self, source_path: Path, timeout: float = 120.0) -> None:
        self.path = source_path
        self.tasks, _ = read_notebook(source_path)
        # The notebook's setup cell decides whether Triton interprets, as in a fresh kernel.
        self._start_host(["grading.authoring.harness", str(source_path), str(timeout)], without=("TRITON_INTERPRET",))

    def results(self, grade_id: str, answer: str, visible_only: bool = False) -> list[Result]:
        """As `NotebookHarness.results`, in a fork of the notebook's process."""
        self._host.stdin.write(json.dumps({"grade_id": grade_id, "answer": answer, "visible_only": visible_only})
                               + "\n")
        self._host.stdin.flush()
        line = self._host.stdout.readline()
        if not line:
            raise RuntimeError(f"the harness process of {self.path.name} ended (exit {self._host.poll()})")
        return [Result(**fields) for fields in json.loads(line)]


def _forked_results(harness: NotebookHarness, request: dict, timeout: float) -> list[Result]:
    """``harness.results`` for one request, in a child process that ends after ``timeout`` seconds at most."""
    import pickle
    import select
    import time

    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # The child: grade, send the results, end without running the parent's exit handlers.
        code = 0
        try:
            os.close(reader)
            data = pickle.dumps(harness.results(request["grade_id"], request["answer"], request["visible_only"]))
            with os.fdopen(writer, "wb") as pipe:
                pipe.write(data)
        except BaseException:  # noqa: BLE001 - the parent reports a child that sent nothing.
            code = 1
        finally:
            os._exit(code)
    os.close(writer)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([reader], [], [], max(0.0, deadline - time.monotonic()))[0]:
                chunk = os.read(reader, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        os.close(reader)
        _kill(pid)
        os.waitpid(pid, 0)
    try:
        return pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 - nothing (or half) came: the answer ran past the time limit or crashed.
        why = f"the answer ran past {timeout:.0f} s or ended its process"
        return [Result(test.grade_id, False, why, test.points) for test in harness.tasks[request["grade_id"]].tests]


def _serve(source_path: str, timeout: float) -> None:
    """`ForkedHarness`'s process: one JSON request per line on stdin, one JSON list of results per line back."""
    from dataclasses import asdict

    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # What the notebook's code prints goes to stderr, never into the replies.
    sys.stdout = sys.stderr
    harness = NotebookHarness(Path(source_path))
    for line in sys.stdin:
        results = _forked_results(harness, json.loads(line), timeout)
        replies.write(json.dumps([asdict(result) for result in results]) + "\n")
        replies.flush()


class JudgedHarness(_HostedHarness):
    """Grades answers as the grading command does: test cells in the judge, the answer in a kernel of its own.

    The kernels are forks of one host process (grading/judge/host.py) that ran the notebook's
    setup and reference solutions once. Use it as a context manager, or call `close`.
    """

    def __init__(self, source_path: Path, timeout: float = 60.0) -> None:
        from grading.judge.names import trusted_names
        from grading.judge.runner import resolve_trusted

        self.path = source_path
        self.timeout = timeout
        self.crossings: dict[str, list[int]] = {}  # Per test cell, the crossings of each answer graded.
        self.tasks, setup_sources = read_notebook(source_path)
        self.trusted = resolve_trusted(trusted_names(setup_sources))
        self._folder = tempfile.TemporaryDirectory(prefix="judge-harness-")
        socket_path = os.path.join(self._folder.name, "judge.sock")
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(socket_path)
        self._listener.listen(4)
        # The judge (this thread, while it grades) and the answers' kernels share one core (grading/judge/cores.py).
        self.core = cores.current_core()
        self._start_host(["grading.judge.host", socket_path], core=self.core)
        # This process is the judge here: what it has imported (torch...) is not walked again by the collector at
        # each collection that the messages start (as in the grading command's judge, grading/judge/server.py).
        gc.collect()
        gc.freeze()
        self._ask({"setup": setup_sources, "solutions": [task.solution for task in self.tasks.values()]})

    def _ask(self, request: dict) -> dict:
        self._host.stdin.write(json.dumps(request) + "\n")
        self._host.stdin.flush()
        line = self._host.stdout.readline()
        if not line:
            raise RuntimeError(f"the harness's kernel host for {self.path.name} ended")
        return json.loads(line)

    def results(self, grade_id: str, answer: str, visible_only: bool = False) -> list[Result]:
        """Run ``answer`` in place of the task's solution, then each of its test cells in the judge.

        With ``visible_only`` the hidden-test blocks are left out, as in the release notebook. An
        answer that raises fails every test cell.
        """
        if self.core is None:
            return self._results(grade_id, answer, visible_only)
        import torch

        # On one core, torch computes with one thread: a pool of threads there waits on each other (notebook 07's
        # decoder tests took 41 s instead of 0.7).
        affinity, threads = os.sched_getaffinity(0), torch.get_num_threads()
        cores.pin(self.core)
        torch.set_num_threads(1)
        try:
            return self._results(grade_id, answer, visible_only)
        finally:
            torch.set_num_threads(threads)
            os.sched_setaffinity(0, affinity)

    def _results(self, grade_id: str, answer: str, visible_only: bool) -> list[Result]:
        from grading.judge.remote import JudgePeer
        from grading.judge.runner import run_test

        task = self.tasks[grade_id]
        pid = self._ask({"answer": answer, "name": grade_id})["pid"]
        self._listener.settimeout(self.timeout)
        try:
            connection, _ = self._listener.accept()
        except OSError as error:
            _kill(pid)
            return [Result(test.grade_id, False, f"the answer did not start: {error}", test.points)
                    for test in task.tests]
        peer = JudgePeer(connection)
        peer.deadline = None
        try:
            ran, message = peer.hello()
            if not ran:
                return [Result(test.grade_id, False, f"the answer raised {message}", test.points)
                        for test in task.tests]
            results = []
            for number, test in enumerate(task.tests, start=1):
                source = without_hidden_tests(test.source) if visible_only else test.source
                verdict = run_test(peer, str(number), test.grade_id, source, self.trusted, self.timeout)
                self.crossings.setdefault(test.grade_id, []).append(peer.crossings)
                results.append(Result(test.grade_id, verdict.passed, verdict.message or "passed", test.points))
            return results
        finally:
            connection.close()
            _kill(pid)

    def close(self) -> None:
        super().close()
        self._listener.close()
        self._folder.cleanup()


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


if __name__ == "__main__":
    _serve(sys.argv[1], float(sys.argv[2]))
