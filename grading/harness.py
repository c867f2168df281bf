"""Runs a notebook's own test cells on any answer, in this process, without nbgrader.

nbgrader starts a kernel per submission, which costs seconds; the mutation suite grades hundreds of
answers, so it executes the notebook's cells directly instead: the read-only setup cells and the
reference solutions once, then for each answer a copy of that namespace, the answer, and the task's
test cells (hidden tests included, or only the visible part), exactly as nbgrader would run them.

A task is one solution cell and the graded test cells that follow it (one, or several when the
task gives partial credit: one test cell per method or behaviour).
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from grading.feedback import without_hidden_tests


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

    @property
    def score(self) -> float:
        return self.points if self.passed else 0.0


class NotebookHarness:
    """Loads a source notebook and grades answers against its test cells."""

    def __init__(self, source_path: Path) -> None:
        notebook = nbformat.read(source_path, as_version=4)
        self.path = source_path
        self.tasks: dict[str, Task] = {}
        setup_sources: list[str] = []
        current: Task | None = None
        for cell in notebook.cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type != "code" or not meta:
                continue
            if meta.get("solution"):
                current = self.tasks[meta["grade_id"]] = Task(meta["grade_id"], cell.source)
            elif meta.get("grade"):
                if current is None:
                    raise ValueError(f"{source_path}: test cell {meta['grade_id']} has no solution cell before it")
                current.tests.append(TestCell(meta["grade_id"], cell.source, float(meta.get("points", 0))))
            else:
                setup_sources.append(cell.source)
                current = None
        self.base: dict = {"__name__": "__main__"}
        with contextlib.redirect_stdout(io.StringIO()):
            for source in setup_sources:
                exec(compile(source, f"<{source_path.name} setup>", "exec"), self.base)
            for task in self.tasks.values():
                exec(compile(task.solution, f"<{task.grade_id}>", "exec"), self.base)

    def results(self, grade_id: str, answer: str, visible_only: bool = False) -> list[Result]:
        """Run ``answer`` in place of the task's solution, then each of its test cells in order.

        With ``visible_only`` the hidden-test blocks are left out, as in the release notebook. An
        answer that raises fails every test cell.
        """
        task = self.tasks[grade_id]
        namespace = dict(self.base)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(answer, f"<answer {grade_id}>", "exec"), namespace)
        except Exception as error:  # noqa: BLE001 - any exception fails the task, as in nbgrader.
            message = f"the answer raised {type(error).__name__}: {error}"
            return [Result(test.grade_id, False, message, test.points) for test in task.tests]
        results = []
        for test in task.tests:
            source = without_hidden_tests(test.source) if visible_only else test.source
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(source, f"<test {test.grade_id}>", "exec"), namespace)
            except Exception as error:  # noqa: BLE001 - any exception fails the test cell, as in nbgrader.
                results.append(Result(test.grade_id, False, f"{type(error).__name__}: {error}", test.points))
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
