"""The whole grading pipeline, end to end through nbgrader.

No outputs are committed; the reference solution scores full marks, the unchanged release 0, and
the typical mistakes lose points in every task. (That release/ and solutions/ are what source/
generates is checked by CI: ``make notebooks`` on a clean clone, then ``git diff --exit-code``.)
"""

from __future__ import annotations

import json

import pytest

from grading.config import ASSIGNMENTS, ROOT
from grading.grade import grade_folder
from grading.samples import write_samples


@pytest.mark.parametrize("folder", ["source", "release"])
def test_no_outputs_committed(folder):
    for path in sorted((ROOT / folder).rglob("*.ipynb")):
        notebook = json.loads(path.read_text())
        with_output = [i for i, cell in enumerate(notebook["cells"])
                       if cell.get("outputs") or cell.get("execution_count")]
        assert not with_output, f"{path.relative_to(ROOT)}: cells {with_output} have outputs; clear them"


@pytest.fixture(scope="module")
def sample_grades(built_course, tmp_path_factory):
    folder = tmp_path_factory.mktemp("samples")
    write_samples(folder, ASSIGNMENTS, built_course)
    rows = grade_folder(folder, built_course, ASSIGNMENTS, log=lambda line: None)
    return {(scores.student, scores.assignment): (scores, status) for scores, status in rows}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_reference_solution_scores_full_marks(sample_grades, assignment):
    scores, status = sample_grades[("reference_solution", assignment)]
    assert status.startswith("graded"), status
    assert scores.tasks, "no task was graded"
    assert scores.total == scores.max_total, scores.tasks


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_unchanged_release_scores_zero(sample_grades, assignment):
    scores, status = sample_grades[("unchanged_release", assignment)]
    assert status.startswith("graded"), status
    assert scores.max_total > 0 and scores.total == 0, scores.tasks


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_typical_mistakes_lose_points_in_every_task(sample_grades, assignment):
    scores, _ = sample_grades[("typical_mistakes", assignment)]
    tasks: dict[str, list[float]] = {}  # Task N.M -> [score, max]; parts N.M.K count for their task.
    for label, (score, maximum) in scores.tasks.items():
        task = ".".join(label.split(".")[:2])
        totals = tasks.setdefault(task, [0.0, 0.0])
        totals[0] += score
        totals[1] += maximum
    full = [task for task, (score, maximum) in tasks.items() if score >= maximum]
    assert tasks and not full, f"tasks where the typical mistake kept full marks: {full}"


def test_grades_csv_is_exported(built_course, sample_grades):
    lines = (built_course / "grades.csv").read_text().splitlines()
    assert lines[0].startswith("assignment,") and "raw_score" in lines[0]
    for student in ("reference_solution", "unchanged_release", "typical_mistakes"):
        assert sum(f",{student}," in line for line in lines) == len(ASSIGNMENTS), student
