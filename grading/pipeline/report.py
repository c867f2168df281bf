"""Reads scores from nbgrader's gradebook and prints them as a per-task table."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

# A task's test cell is test_taskN_M_<name>; a task graded in parts has test_taskN_M_K_<name>, K = 1, 2, ...
_TASK = re.compile(r"^test_task(\d+)_(\d+)_(?:(\d+)_)?[A-Za-z]")


@dataclass
class Scores:
    """One student's scores on one assignment, task by task (task label -> (score, max_score))."""

    student: str
    assignment: str
    tasks: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(score for score, _ in self.tasks.values())

    @property
    def max_total(self) -> float:
        return sum(maximum for _, maximum in self.tasks.values())


def task_label(grade_id: str) -> str:
    """Turn ``test_task1_3_quotas`` into ``1.3`` and ``test_task6_2_1_lookup`` (part 1 of task 6.2) into
    ``6.2.1``; other grade ids stay as they are."""
    match = _TASK.match(grade_id)
    if not match:
        return grade_id
    return ".".join(part for part in match.groups() if part)


def read_scores(root: Path, assignment: str, student: str) -> Scores:
    """Return a student's autograded scores on an assignment from ``root/gradebook.db``.

    ``root`` may also be the gradebook file itself (a ``.db`` file).

    Raises:
        LookupError: when the gradebook has no such submission.
    """
    scores = Scores(student, assignment)
    database = root if root.suffix == ".db" else root / "gradebook.db"
    if not database.exists():
        raise LookupError(f"no gradebook at {database}")
    with Gradebook(f"sqlite:///{database}") as gradebook:
        try:
            submission = gradebook.find_submission(assignment, student)
        except MissingEntry:
            raise LookupError(f"no graded submission of {assignment} by {student}") from None
        for notebook in submission.notebooks:
            for grade in sorted(notebook.grades, key=lambda g: _label_key(task_label(g.name))):
                score = grade.score if grade.score is not None else 0.0
                scores.tasks[task_label(grade.name)] = (float(score), float(grade.max_score))
    return scores


def maxima(database: Path, assignment: str) -> dict[str, float]:
    """Each task's points (task label -> max score) as the gradebook ``database`` defines ``assignment``.

    Raises:
        LookupError: when the gradebook does not define the assignment.
    """
    with Gradebook(f"sqlite:///{database}") as gradebook:
        try:
            found = gradebook.find_assignment(assignment)
        except MissingEntry:
            raise LookupError(f"{database} does not define {assignment}") from None
        cells = [cell for notebook in found.notebooks for cell in notebook.grade_cells]
        return {task_label(cell.name): float(cell.max_score)
                for cell in sorted(cells, key=lambda c: _label_key(task_label(c.name)))}


def _label_key(label: str) -> tuple[int, int, int, str]:
    """Order task labels numerically ("1.2" before "1.10", "6.2" before "6.2.1"); others go last, by name."""
    match = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?", label)
    if not match:
        return (10**9, 0, 0, label)
    return (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0), "")


def format_table(rows: list[tuple[Scores, str]]) -> str:
    """Format (scores, status) rows as fixed-width tables, one per assignment, one row per student."""
    assignments = list(dict.fromkeys(scores.assignment for scores, _ in rows))
    return "\n\n".join(_format_one([row for row in rows if row[0].assignment == assignment])
                       for assignment in assignments)


def _format_one(rows: list[tuple[Scores, str]]) -> str:
    labels: list[str] = []
    for scores, _ in rows:
        labels += [label for label in scores.tasks if label not in labels]
    labels.sort(key=_label_key)
    width_student = max([len("student")] + [len(s.student) for s, _ in rows])
    width_assignment = max([len("assignment")] + [len(s.assignment) for s, _ in rows])
    header = (f"{'student':<{width_student}}  {'assignment':<{width_assignment}}  "
              + "  ".join(f"{label:>5}" for label in labels) + f"  {'total':>11}  status")
    lines = [header, "-" * len(header)]
    for scores, status in rows:
        cells = []
        for label in labels:
            if label in scores.tasks:
                score, _ = scores.tasks[label]
                cells.append(f"{score:>5g}")
            else:
                cells.append(f"{'':>5}")
        total = f"{scores.total:g}/{scores.max_total:g}"
        lines.append(f"{scores.student:<{width_student}}  {scores.assignment:<{width_assignment}}  "
                     + "  ".join(cells) + f"  {total:>11}  {status}")
    return "\n".join(lines)
