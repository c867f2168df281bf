"""Shows one task whole: its statement, reference solution, tests, wrong and alternative answers, grades.

    python -m grading.authoring.task 2.4 [--section statement|solution|tests|answers|grades ...] [--diff]

The task id is the one of the heading, the grade ids and the score table. Each wrong answer and
alternative of tests/answers/ is graded through the notebook's own test cells (grading.authoring.harness),
so the output shows at once what the task asks, what the hidden tests check and which mistakes they
catch; ``--diff`` prints each answer as a diff against the reference. The grades are those of every
student in the gradebook (``gradebook.db``, after ``make`` or a grading run).
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

import nbformat

from grading.authoring.harness import NotebookHarness, Task
from grading.authoring.reference import strip_markers
from grading.authoring.samples import load_mutants
from grading.config import ASSIGNMENTS, ROOT

SECTIONS = ("statement", "solution", "tests", "answers", "grades")


def find(task_id: str, root: Path = ROOT) -> tuple[str, str]:
    """Return (assignment, solution grade id) of a task id such as ``2.4``.

    Raises:
        LookupError: naming the task ids that exist, when there is no such task.
    """
    match = re.fullmatch(r"(\d+)\.(\d+)", task_id.strip())
    if not match:
        raise LookupError(f"a task id looks like 2.4, not {task_id!r}")
    prefix = f"task{int(match.group(1))}_{int(match.group(2))}_"
    known = []
    for assignment in ASSIGNMENTS:
        notebook = nbformat.read(root / "source" / assignment / f"{assignment}.ipynb", as_version=4)
        for cell in notebook.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
            if cell.metadata.get("nbgrader", {}).get("solution"):
                if grade_id.startswith(prefix):
                    return assignment, grade_id
                number = re.match(r"task(\d+)_(\d+)_", grade_id)
                known.append(f"{number.group(1)}.{number.group(2)}" if number else grade_id)
    raise LookupError(f"no task {task_id}; the tasks are {', '.join(known)}")


def _statement(notebook: nbformat.NotebookNode, grade_id: str) -> str:
    cells = notebook.cells
    index = next(i for i, c in enumerate(cells) if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    parts = []
    for cell in reversed(cells[:index]):  # The markdown cells right above the solution cell.
        if cell.cell_type != "markdown":
            break
        parts.insert(0, cell.source)
    return "\n\n".join(parts)


def _diff(reference: str, answer: str) -> str:
    lines = difflib.unified_diff(reference.splitlines(), answer.splitlines(), "reference", "answer", lineterm="", n=1)
    return "\n".join(list(lines)[2:])


def _answers(harness: NotebookHarness, task: Task, assignment: str, show_diff: bool) -> str:
    mutants = load_mutants(assignment)
    reference = strip_markers(task.solution)
    out = []
    for title, kind, must_pass in (("Wrong answers (each must lose points)", "WRONG", False),
                                   ("Correct alternatives (each must keep every point)", "ALTERNATIVES", True)):
        variants = getattr(mutants, kind).get(task.grade_id, {})
        out.append(f"## {title}: {len(variants)}")
        for name, answer in variants.items():
            results = harness.results(task.grade_id, answer)
            visible = harness.results(task.grade_id, answer, visible_only=True)
            score = sum(r.score for r in results)
            ok = (score == task.points) == must_pass
            caught = "" if must_pass else (" · a visible test catches it" if not all(r.passed for r in visible)
                                           else " · only hidden tests catch it")
            out.append(f"- [{'ok' if ok else 'WRONG'}] {score:g}/{task.points:g}  {name}{caught}")
            for result in results:
                if not result.passed:
                    out.append(f"    {result.grade_id}: {result.message[:300]}")
            if show_diff:
                out.append("\n".join("      " + line for line in _diff(reference, answer).splitlines()))
        out.append("")
    return "\n".join(out)


def _grades(root: Path, assignment: str, task: Task) -> str:
    database = root / "gradebook.db"
    if not database.exists():
        return "(no gradebook.db: run `make` or a grading run first)"
    from nbgrader.api import Gradebook

    ids = [test.grade_id for test in task.tests]
    lines = []
    with Gradebook(f"sqlite:///{database}") as gradebook:
        try:
            submissions = gradebook.assignment_submissions(assignment)
        except Exception:  # noqa: BLE001 - nbgrader raises MissingEntry or a database error.
            return f"(the gradebook has no submissions of {assignment})"
        for submission in sorted(submissions, key=lambda s: s.student_id):
            scores = [grade for notebook in submission.notebooks for grade in notebook.grades if grade.name in ids]
            total = sum(grade.score or 0 for grade in scores)
            lines.append(f"- {submission.student_id}: {total:g}/{task.points:g}")
    return "\n".join(lines) or f"(the gradebook has no submissions of {assignment})"


def show(task_id: str, sections: tuple[str, ...] = SECTIONS, show_diff: bool = False, root: Path = ROOT) -> str:
    """The text that ``python -m grading.authoring.task`` prints (see the module's docstring)."""
    assignment, grade_id = find(task_id, root)
    path = root / "source" / assignment / f"{assignment}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    harness = NotebookHarness(path)
    task = harness.tasks[grade_id]
    tests = ", ".join(f"{t.grade_id} ({t.points:g})" for t in task.tests)
    out = [f"# Task {task_id}: {grade_id} · {assignment} · {task.points:g} points · test cells: {tests}"]
    if "statement" in sections:
        out += ["## Statement", _statement(notebook, grade_id)]
    if "solution" in sections:
        out += ["## Reference solution", task.solution]
    if "tests" in sections:
        for test in task.tests:
            out += [f"## Test cell {test.grade_id} ({test.points:g} points)", test.source]
    if "answers" in sections:
        out.append(_answers(harness, task, assignment, show_diff))
    if "grades" in sections:
        out += ["## Grades in the gradebook", _grades(root, assignment, task)]
    return "\n\n".join(out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m grading.authoring.task", description=__doc__.split("\n\n")[0])
    parser.add_argument("task", help="a task id such as 2.4")
    parser.add_argument("--section", action="append", choices=SECTIONS, help="show only these (repeatable)")
    parser.add_argument("--diff", action="store_true", help="show each answer as a diff against the reference")
    args = parser.parse_args(argv)
    try:
        print(show(args.task, tuple(args.section or SECTIONS), args.diff))
    except LookupError as error:
        parser.error(str(error))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
