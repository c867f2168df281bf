"""Cell constructors with nbgrader metadata, for writing source notebooks and crafted submissions.

A source notebook is a list of these cells. The metadata follows nbgrader's schema version 3:
solution cells are editable and carry ``solution: true``; test cells are locked, carry
``grade: true`` and their points; read-only cells are locked so that autograding restores them.
"""

from __future__ import annotations

import nbformat
from nbformat.notebooknode import NotebookNode

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def _nbgrader(grade_id: str, *, grade: bool, solution: bool, locked: bool, points: int | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def markdown(text: str, grade_id: str | None = None) -> NotebookNode:
    """A markdown cell; read-only (locked) when it has a ``grade_id``."""
    cell = nbformat.v4.new_markdown_cell(text.strip("\n"))
    if grade_id:
        cell.metadata.update(_nbgrader(grade_id, grade=False, solution=False, locked=True))
    return cell


def code(text: str) -> NotebookNode:
    """A plain code cell (experiments); students may change it freely."""
    return nbformat.v4.new_code_cell(text.strip("\n"))


def readonly_code(text: str, grade_id: str) -> NotebookNode:
    """A locked code cell, such as the setup cell; autograding puts its original source back."""
    cell = nbformat.v4.new_code_cell(text.strip("\n"))
    cell.metadata.update(_nbgrader(grade_id, grade=False, solution=False, locked=True))
    return cell


def solution(text: str, grade_id: str) -> NotebookNode:
    """A solution cell; ``### BEGIN SOLUTION`` / ``### END SOLUTION`` mark what the release hides."""
    cell = nbformat.v4.new_code_cell(text.strip("\n"))
    cell.metadata.update(_nbgrader(grade_id, grade=False, solution=True, locked=False))
    return cell


def tests(text: str, grade_id: str, points: int) -> NotebookNode:
    """A locked, autograded test cell worth ``points``."""
    cell = nbformat.v4.new_code_cell(text.strip("\n"))
    cell.metadata.update(_nbgrader(grade_id, grade=True, solution=False, locked=True, points=points))
    return cell


def notebook(cells: list[NotebookNode]) -> NotebookNode:
    """A notebook with the course's kernel and language metadata."""
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    return nb
