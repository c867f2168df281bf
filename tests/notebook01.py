"""Notebook 01's release and reference answers, and correct answers of a student's own, for the grading tests."""

from __future__ import annotations

import nbformat

from grading.authoring.samples import load_mutants, solution_code
from grading.config import ROOT

ASSIGNMENT = "01_eviction_as_ranking"
FILE = f"{ASSIGNMENT}.ipynb"


def release_and_answers():
    release = nbformat.read(ROOT / "release" / ASSIGNMENT / FILE, as_version=4)
    answers = solution_code(nbformat.read(ROOT / "source" / ASSIGNMENT / FILE, as_version=4))
    return release, answers


def own_quotas() -> str:
    """A correct answer of task 1.3 that is not the reference (from the mutation suite): 80 tokens more than
    the skeleton."""
    return load_mutants(ASSIGNMENT).ALTERNATIVES["task1_3_quotas"]["shares first"]


def reformatted(code: str) -> str:
    """The same code with other comments and blank lines (the tokens are the same)."""
    lines = code.splitlines()
    lines = [line + "  # as I understood it" if line.startswith("def ") else line for line in lines]
    return "# My own work, honestly.\n\n\n" + "\n".join(lines) + "\n\n# The end.\n"
