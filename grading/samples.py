"""Writes the bundled sample submissions that the main job grades.

For each assignment: ``reference_solution`` (the source's solutions filled into the release
notebook), ``unchanged_release`` (the release notebook itself) and ``typical_mistakes`` (the
first wrong answer of every task from grading/mutants/<assignment>.py).
"""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path
from types import ModuleType

import nbformat
from nbformat.notebooknode import NotebookNode

from grading.config import ROOT

MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def load_mutants(assignment: str, root: Path = ROOT) -> ModuleType:
    """Load grading/mutants/<assignment>.py, which defines WRONG (and ALTERNATIVES) per grade_id."""
    path = root / "grading" / "mutants" / f"{assignment}.py"
    spec = importlib.util.spec_from_file_location(f"mutants_{assignment}", path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"no mutants file at {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def solution_code(source: NotebookNode) -> dict[str, str]:
    """Return each solution cell's code with the solution markers taken out, by grade_id."""
    answers = {}
    for cell in source.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            lines = [line for line in cell.source.splitlines() if line.strip() not in MARKERS]
            answers[meta["grade_id"]] = "\n".join(lines)
    return answers


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
    wrong = load_mutants(assignment, root).WRONG
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
