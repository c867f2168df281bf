"""Regenerates release/ and solutions/ from source/ with nbgrader.

    python -m grading.build [ASSIGNMENT ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

from grading.config import ASSIGNMENTS, ROOT
from grading.nbgrader_cli import nbgrader


def build(root: Path = ROOT, assignments: list[str] | None = None) -> None:
    """Run nbgrader's generate_assignment and generate_solution for each assignment.

    Raises:
        RuntimeError: with nbgrader's output when a step fails.
    """
    for assignment in assignments or ASSIGNMENTS:
        for step in ("generate_assignment", "generate_solution"):
            run = nbgrader([step, assignment, "--force"], root)
            if run.returncode != 0:
                raise RuntimeError(f"nbgrader {step} {assignment} failed:\n{run.output}")


def digest(path: Path) -> list[tuple[str, str, dict]]:
    """Return what must match between a committed notebook and a regenerated one.

    That is each cell's type, source and nbgrader metadata; outputs and cell ids are left out.
    """
    notebook = nbformat.read(path, as_version=4)
    return [(cell.cell_type, cell.source, dict(cell.metadata.get("nbgrader", {}))) for cell in notebook.cells]


def main(argv: list[str]) -> int:
    build(ROOT, argv or None)
    for assignment in argv or ASSIGNMENTS:
        print(f"built release/{assignment} and solutions/{assignment}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
