"""Every task's test cells fail plausible wrong answers and pass correct ones in other styles.

The answers live in grading/mutants/<topic>.py. Each runs through the notebook's own test cells
(hidden tests included) by grading.harness, in one process per notebook. No surprise at grading:
each wrong answer also fails a visible test, the one a student runs before submitting, unless its
module's ``HIDDEN_ONLY`` says why no visible case can show that mistake.
"""

from __future__ import annotations

import nbformat
import pytest

from grading.config import ASSIGNMENTS, ROOT
from grading.harness import NotebookHarness
from grading.samples import load_mutants
from grading.task import show

MIN_WRONG = 3
MIN_ALTERNATIVES = 2


@pytest.fixture(scope="module", params=ASSIGNMENTS)
def notebook(request):
    assignment = request.param
    harness = NotebookHarness(ROOT / "source" / assignment / f"{assignment}.ipynb")
    return assignment, harness, load_mutants(assignment)


def test_every_task_has_enough_wrong_and_alternative_answers(notebook):
    assignment, harness, mutants = notebook
    for grade_id in harness.tasks:
        assert len(mutants.WRONG.get(grade_id, {})) >= MIN_WRONG, f"{assignment} {grade_id}: too few wrong answers"
        assert len(mutants.ALTERNATIVES.get(grade_id, {})) >= MIN_ALTERNATIVES, (
            f"{assignment} {grade_id}: too few alternatives")
    assert set(mutants.WRONG) <= set(harness.tasks), "mutants name a grade_id the notebook does not have"


def test_reference_solutions_pass(notebook):
    _, harness, _ = notebook
    for grade_id, task in harness.tasks.items():
        passed, message = harness.grade(grade_id, task.solution)
        assert passed, f"reference solution of {grade_id} fails its own tests: {message}"


def test_wrong_answers_lose_points(notebook):
    assignment, harness, mutants = notebook
    survivors = []
    for grade_id, variants in mutants.WRONG.items():
        for name, answer in variants.items():
            passed, _ = harness.grade(grade_id, answer)
            if passed:
                survivors.append(f"{grade_id}: {name}")
    assert not survivors, f"{assignment}: wrong answers that pass: {survivors}"


def test_wrong_answers_fail_a_visible_test(notebook):
    assignment, harness, mutants = notebook
    hidden_only = getattr(mutants, "HIDDEN_ONLY", {})
    surprises = []
    for grade_id, variants in mutants.WRONG.items():
        for name, answer in variants.items():
            reason = hidden_only.get(grade_id, {}).get(name)
            caught = not harness.grade(grade_id, answer, visible_only=True)[0]
            if caught and reason:
                surprises.append(f"{grade_id}: {name}: HIDDEN_ONLY says {reason!r}, but a visible test catches it")
            elif not caught and not reason:
                surprises.append(f"{grade_id}: {name}: only hidden tests catch it")
    assert not surprises, f"{assignment}: {surprises}"


def test_alternative_answers_keep_points(notebook):
    assignment, harness, mutants = notebook
    failures = []
    for grade_id, variants in mutants.ALTERNATIVES.items():
        for name, answer in variants.items():
            passed, message = harness.grade(grade_id, answer)
            if not passed:
                failures.append(f"{grade_id}: {name}: {message}")
    assert not failures, f"{assignment}: correct answers that fail: {failures}"


def test_release_stubs_fail(notebook):
    assignment, harness, _ = notebook
    release = nbformat.read(ROOT / "release" / assignment / f"{assignment}.ipynb", as_version=4)
    stubs = {cell.metadata["nbgrader"]["grade_id"]: cell.source for cell in release.cells
             if cell.metadata.get("nbgrader", {}).get("solution")}
    assert set(stubs) == set(harness.tasks)
    for grade_id, stub in stubs.items():
        assert "raise NotImplementedError()" in stub
        passed, _ = harness.grade(grade_id, stub)
        assert not passed, f"the release stub of {grade_id} passes its tests"


def test_task_viewer_shows_a_task_whole():
    text = show("1.1", show_diff=True)
    for part in ("## Task 1.1: select_victim", "def select_victim(values):", "### BEGIN HIDDEN TESTS",
                 "## Wrong answers (each must lose points)", "- [ok] 0/2  max instead of min", "-    return min(",
                 "## Correct alternatives (each must keep every point)", "- [ok] 2/2  an explicit scan"):
        assert part in text, part
    with pytest.raises(LookupError, match="the tasks are 1.1, 1.2"):
        show("9.9")
