"""Every task's test cell fails plausible wrong answers and passes correct ones in other styles.

The answers live in grading/mutants/<assignment>.py. Each runs through the notebook's own test
cell (hidden tests included) by grading.harness, in one process per notebook.
"""

from __future__ import annotations

import nbformat
import pytest

from grading.config import ASSIGNMENTS, ROOT
from grading.harness import NotebookHarness
from grading.samples import load_mutants

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
