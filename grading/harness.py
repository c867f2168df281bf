"""Runs a notebook's own test cells on any answer, in this process, without nbgrader.

nbgrader starts a kernel per submission, which costs seconds; the mutation suite grades hundreds of
answers, so it executes the notebook's cells directly instead: the read-only setup cells and the
reference solutions once, then for each answer a copy of that namespace, the answer, and the task's
test cell (hidden tests included), exactly as nbgrader would run them.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

import nbformat


@dataclass
class Task:
    """A solution cell and the test cell that grades it."""

    grade_id: str
    solution: str
    test: str
    points: float


class NotebookHarness:
    """Loads a source notebook and grades answers against its test cells."""

    def __init__(self, source_path: Path) -> None:
        notebook = nbformat.read(source_path, as_version=4)
        self.path = source_path
        self.tasks: dict[str, Task] = {}
        setup_sources: list[str] = []
        last_solution: tuple[str, str] | None = None
        for cell in notebook.cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type != "code" or not meta:
                continue
            if meta.get("solution"):
                last_solution = (meta["grade_id"], cell.source)
            elif meta.get("grade"):
                if last_solution is None:
                    raise ValueError(f"{source_path}: test cell {meta['grade_id']} has no solution cell before it")
                grade_id, solution = last_solution
                self.tasks[grade_id] = Task(grade_id, solution, cell.source, float(meta.get("points", 0)))
                last_solution = None
            else:
                setup_sources.append(cell.source)
        self.base: dict = {"__name__": "__main__"}
        with contextlib.redirect_stdout(io.StringIO()):
            for source in setup_sources:
                exec(compile(source, f"<{source_path.name} setup>", "exec"), self.base)
            for task in self.tasks.values():
                exec(compile(task.solution, f"<{task.grade_id}>", "exec"), self.base)

    def grade(self, grade_id: str, answer: str) -> tuple[bool, str]:
        """Run ``answer`` in place of the task's solution, then its test cell.

        Returns:
            ``(passed, message)``: passed is False when the answer or the test raised; the message
            names the exception.
        """
        task = self.tasks[grade_id]
        namespace = dict(self.base)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(answer, f"<answer {grade_id}>", "exec"), namespace)
                exec(compile(task.test, f"<test {grade_id}>", "exec"), namespace)
        except Exception as error:  # noqa: BLE001 - any exception fails the test cell, as in nbgrader.
            return False, f"{type(error).__name__}: {error}"
        return True, "passed"
