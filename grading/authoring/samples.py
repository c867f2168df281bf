"""Writes the bundled sample submissions that the main job grades.

For each assignment: ``reference_solution`` (the source's solutions filled into the release
notebook), ``unchanged_release`` (the release notebook itself) and ``typical_mistakes`` (the
first wrong answer of every task from its module in tests/answers/).
"""

from __future__ import annotations

import copy
import importlib
from pathlib import Path
from types import ModuleType

import nbformat
from nbformat.notebooknode import NotebookNode

from grading.authoring.reference import solution_code
from grading.config import ROOT

__all__ = ["fill", "load_mutants", "mutants_module_name", "sample_submissions", "solution_code", "write_samples"]


def mutants_module_name(assignment: str) -> str:
    """The module of an assignment's wrong and alternative answers: ``01_eviction_as_ranking`` ->
    ``tests.answers.eviction_as_ranking``."""
    return "tests.answers." + assignment.split("_", 1)[1]


def load_mutants(assignment: str) -> ModuleType:
    """Import the module of ``assignment``'s answers, which defines WRONG and ALTERNATIVES per grade_id."""
    return importlib.import_module(mutants_module_name(assignment))


def fill(release: NotebookNode, answers: dict[str, str]) -> NotebookNode:
    """Return a copy of ``release`` whose solution cells hold ``answers`` (by grade_id)."""
    submission = copy.deepcopy(release)
    for cell in submission.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
    return submission


def sample_submissions(assignment: str, root: Path = ROOT) -> dict[str, NotebookNode]:
    """Return the three sample submissions of ``assignment``, by student id."""
    name = f"{assignment}/{assignment}.ipynb"
    source = nbformat.read(root / "source" / name, as_version=4)
    release = nbformat.read(root / "release" / name, as_version=4)
    wrong = load_mutants(assignment).WRONG
    first_mistakes = {grade_id: next(iter(variants.values())) for grade_id, variants in wrong.items()}
    return {
        "reference_solution": fill(release, solution_code(source)),
        "unchanged_release": copy.deepcopy(release),
        "typical_mistakes": fill(release, first_mistakes),
    }


def write_samples(folder: Path, assignments: list[str], root: Path = ROOT) -> None:
    """Write every sample as ``folder/<student>/<assignment>/<assignment>.ipynb``."""
    for assignment in assignments:
        for student, notebook in sample_submissions(assignment, root).items():
            target = folder / student / assignment / f"{assignment}.ipynb"
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(notebook, target)
