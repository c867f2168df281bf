"""grading.pipeline.repair rebuilds damaged submissions so that each task is graded on the student's code."""

from __future__ import annotations

import copy

import nbformat
import pytest

from grading.authoring.harness import NotebookHarness
from grading.authoring.samples import fill, load_mutants, solution_code
from grading.config import ROOT
from grading.pipeline.repair import needs_repair, repair

ASSIGNMENT = "01_eviction_as_ranking"


@pytest.fixture(scope="module")
def notebooks():
    name = f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
    source = nbformat.read(ROOT / "source" / name, as_version=4)
    release = nbformat.read(ROOT / "release" / name, as_version=4)
    return release, fill(release, solution_code(source))


@pytest.fixture(scope="module")
def harness():
    return NotebookHarness(ROOT / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")


def _answers(notebook):
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in notebook.cells
            if c.metadata.get("nbgrader", {}).get("solution")}


def _all_pass(harness, notebook):
    answers = _answers(notebook)
    return all(harness.grade(task, answers[task])[0] for task in harness.tasks)


def test_an_intact_submission_is_left_alone(notebooks):
    release, solved = notebooks
    assert not needs_repair(solved, release)
    assert not repair(solved, release).changed


def test_lost_metadata_is_restored(notebooks, harness):
    release, solved = notebooks
    stripped = copy.deepcopy(solved)
    for cell in stripped.cells:
        cell.metadata = {}
    result = repair(stripped, release)
    assert result.changed and not result.needs_manual_look
    assert any("lost grading metadata" in note for note in result.notes)
    assert _answers(result.notebook) == _answers(solved) and _all_pass(harness, result.notebook)


def test_reordered_and_copied_cells(notebooks, harness):
    release, solved = notebooks
    damaged = copy.deepcopy(solved)
    cells = damaged.cells
    task = next(i for i, c in enumerate(cells)
                if c.metadata.get("nbgrader", {}).get("grade_id") == "task1_2_eviction_order")
    wrong = copy.deepcopy(cells[task])
    wrong.source = next(iter(load_mutants(ASSIGNMENT).WRONG["task1_2_eviction_order"].values()))
    moved = cells.pop(task)
    cells.insert(task, wrong)        # a wrong first attempt where the task was
    cells.append(moved)             # the right answer, copied to the end
    helper = nbformat.v4.new_code_cell("SCRATCH = 1")
    cells.insert(task, helper)
    result = repair(damaged, release)
    assert result.changed and not result.needs_manual_look
    assert _answers(result.notebook)["task1_2_eviction_order"] == moved.source
    assert any("2 cells define it" in note for note in result.notes)
    sources = [c.source for c in result.notebook.cells]
    assert sources.index("SCRATCH = 1") < sources.index(moved.source), "an extra cell stays before its task"
    assert _all_pass(harness, result.notebook)


def test_a_deleted_solution_cell_needs_a_manual_look(notebooks):
    release, solved = notebooks
    damaged = copy.deepcopy(solved)
    damaged.cells = [c for c in damaged.cells
                     if c.metadata.get("nbgrader", {}).get("grade_id") != "task1_5_victim_tenant"]
    result = repair(damaged, release)
    assert result.needs_manual_look
    assert any("task1_5_victim_tenant: no cell defines victim_tenant" in note for note in result.notes)
    assert "raise NotImplementedError()" in _answers(result.notebook)["task1_5_victim_tenant"]


def test_feedback_cuts_hidden_tests():
    from grading.pipeline.feedback import PLACEHOLDER, without_hidden_tests

    source = ('assert f(1) == 2\n### BEGIN HIDDEN TESTS\n_secret = 42\nassert f(_secret) == 43\n'
              '### END HIDDEN TESTS\nprint("ok")')
    assert without_hidden_tests(source) == f'assert f(1) == 2\n{PLACEHOLDER}\nprint("ok")'
