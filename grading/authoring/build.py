"""Regenerates release/ and solutions/ from source/ with nbgrader.

    python -m grading.authoring.build [ASSIGNMENT ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

from nbgrader.preprocessors import NbGraderPreprocessor

from grading.config import ASSIGNMENT_PATTERN, ASSIGNMENTS, ROOT, source_assignments
from grading.pipeline.nbgrader_cli import nbgrader


class DropAuthoringMetadata(NbGraderPreprocessor):
    """Keep the authoring metadata out of release/ and solutions/.

    The source notebooks carry jupytext's pairing (``source/NN//ipynb,authoring//py:percent``) and
    the ``given`` marks of grading/authoring/given.py. A student's JupyterLab with jupytext would try to pair
    the release notebook with files that are not there, so both are dropped.
    """

    def preprocess(self, nb, resources):
        nb.metadata.pop("jupytext", None)
        for cell in nb.cells:
            cell.metadata.pop("given", None)
        return nb, resources


def build(root: Path = ROOT, assignments: list[str] | None = None) -> None:
    """Run nbgrader's generate_assignment and generate_solution for each assignment.

    Raises:
        RuntimeError: with nbgrader's output when a step fails.
    """
    wanted = list(assignments or ASSIGNMENTS)
    # nbgrader takes a glob for the assignment: one run of each step converts the whole course. A run's start (its
    # imports) costs more than converting a notebook: 2 runs took 18 s where 18 took 102 s (2026-12-02).
    names = [ASSIGNMENT_PATTERN] if sorted(wanted) == source_assignments(root) else wanted
    for step in ("generate_assignment", "generate_solution"):
        for assignment in names:
            run = nbgrader([step, assignment, "--force"], root)
            if run.returncode != 0:
                raise RuntimeError(f"nbgrader {step} {assignment} failed:\n{run.output}")


def main(argv: list[str]) -> int:
    build(ROOT, argv or None)
    for assignment in argv or ASSIGNMENTS:
        print(f"built release/{assignment} and solutions/{assignment}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
