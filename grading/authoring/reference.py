"""Reference solutions of the source notebooks, and answers built as edits of them.

One place takes a task's reference solution out of its source notebook: the solution cell with
nbgrader's solution markers removed. The sample submissions (grading/authoring/samples.py), the cells that
later notebooks are given (grading/authoring/given.py) and the mutation suite's wrong answers and correct
alternatives (tests/answers/) all start from it, so none of them types a reference again:

    from grading.authoring.reference import Reference

    ref = Reference("01_eviction_as_ranking")
    ref["task1_1_select_victim"]                                  # the reference solution
    ref.edit("task1_1_select_victim", ("min(", "max("))           # a wrong answer: one edit
    ref.solve("task1_1_select_victim", select_victim="return ...")  # another body, same signature

Every edit must find its text exactly once, so a variant whose reference changed fails loudly
instead of silently testing the reference.
"""

from __future__ import annotations

import functools
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat.notebooknode import NotebookNode

from grading.config import ROOT

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
MARKERS = (BEGIN, END)
_DEFINITION = re.compile(r"^(\s*)(?:async\s+def|def|class)\s+(\w+)")
_TODO = re.compile(r"^#\s*TODO\s+(\d+\.\d+\.\d+)\b")


def solution_code(notebook: NotebookNode) -> dict[str, str]:
    """Return each solution cell's code with the solution markers taken out, by grade_id."""
    answers = {}
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            answers[meta["grade_id"]] = strip_markers(cell.source)
    return answers


def strip_markers(source: str) -> str:
    """Return ``source`` without the lines that hold only a solution marker."""
    return "\n".join(line for line in source.splitlines() if line.strip() not in MARKERS)


def without_todos(source: str) -> str:
    """The solution code with its markers and the ``# TODO N.M.k`` comment blocks above them removed.

    Later notebooks are given this: the finished code, without the exercise's instructions.
    """
    lines = source.splitlines()
    drop = set()
    for region in regions(source):
        marker = region.first - 1
        block = []
        for index in range(marker - 1, -1, -1):
            if not lines[index].strip().startswith("#"):
                break
            block.append(index)
        if region.todo is not None:
            drop.update(block)
    return strip_markers("\n".join(line for index, line in enumerate(lines) if index not in drop))


def solution_cells(notebook: NotebookNode) -> dict[str, str]:
    """Return each solution cell's source as written, markers included, by grade_id."""
    return {cell.metadata["nbgrader"]["grade_id"]: cell.source for cell in notebook.cells
            if cell.metadata.get("nbgrader", {}).get("solution")}


@dataclass
class Region:
    """One solution region of a cell: its lines are those strictly between ``first - 1`` and ``end``."""

    name: str  # The function or class whose body holds it, or "<module>".
    todo: str | None  # The label of the "# TODO N.M.k:" comment right above its BEGIN marker, if any.
    first: int
    end: int


def regions(source: str) -> list[Region]:
    """The solution regions of a cell, in order (0-based line numbers).

    A region's name is the function or class whose body holds it (the nearest ``def`` or ``class``
    above the marker that is indented less than the marker), or ``"<module>"`` at the top level. Its
    TODO label is that of a ``# TODO N.M.k: ...`` line among the comment lines right above it.

    Raises:
        ValueError: when markers are unbalanced.
    """
    lines = source.splitlines()
    found, start = [], None
    for number, line in enumerate(lines):
        stripped = line.strip()
        if stripped == BEGIN:
            if start is not None:
                raise ValueError(f"line {number + 1}: {BEGIN} inside another solution region")
            start = number
        elif stripped == END:
            if start is None:
                raise ValueError(f"line {number + 1}: {END} without {BEGIN}")
            found.append(Region(_enclosing_name(lines, start), _todo_label(lines, start), start + 1, number))
            start = None
    if start is not None:
        raise ValueError(f"line {start + 1}: {BEGIN} is never closed")
    return found


def _enclosing_name(lines: list[str], marker: int) -> str:
    indent = len(lines[marker]) - len(lines[marker].lstrip())
    for line in reversed(lines[:marker]):
        match = _DEFINITION.match(line)
        if match and len(match.group(1)) < indent:
            return match.group(2)
    return "<module>"


def _todo_label(lines: list[str], marker: int) -> str | None:
    for line in reversed(lines[:marker]):
        stripped = line.strip()
        if not stripped.startswith("#"):
            return None
        match = _TODO.match(stripped)
        if match:
            return match.group(1)
    return None


def replace_regions(source: str, bodies: dict[str, str], where: str = "a cell") -> str:
    """Return ``source`` with the named solution regions replaced, markers taken out.

    ``bodies`` maps a region's TODO label (``"3.2.1"``) or its function's name (when only one
    region of the cell lies in that function) to its new code, written without indentation; it is
    indented like the region's marker. Regions not named keep the reference's code.

    Raises:
        KeyError: naming the key when it matches no region, or a function that holds several.
    """
    found = regions(source)
    chosen: dict[int, str] = {}
    for key, body in bodies.items():
        matches = [i for i, region in enumerate(found) if region.todo == key]
        if not matches:
            matches = [i for i, region in enumerate(found) if region.name == key]
            if len(matches) > 1:
                raise KeyError(f"{where}: {len(matches)} solution regions lie in {key!r}; name them by their "
                               f"TODO labels: {[found[i].todo for i in matches]}")
        if not matches:
            raise KeyError(f"{where}: no solution region is named {key!r}; the regions are "
                           f"{[region.todo or region.name for region in found]}")
        chosen[matches[0]] = body
    lines = source.splitlines()
    out, position = [], 0
    for index, region in enumerate(found):
        out.extend(lines[position:region.first - 1])
        if index in chosen:
            marker = lines[region.first - 1]
            indent = marker[:len(marker) - len(marker.lstrip())]
            out.extend(textwrap.indent(textwrap.dedent(chosen[index]).strip("\n"), indent).splitlines())
        else:
            out.extend(lines[region.first:region.end])
        position = region.end + 1
    out.extend(lines[position:])
    return "\n".join(out)


def edit(code: str, *replacements: tuple[str, str], where: str = "a reference") -> str:
    """Return ``code`` with each ``(old, new)`` replacement made, in order.

    Raises:
        ValueError: when an ``old`` text does not occur exactly once at that point.
    """
    for old, new in replacements:
        count = code.count(old)
        if count != 1:
            raise ValueError(f"{where}: the text to replace occurs {count} times, not once: {old!r}")
        code = code.replace(old, new)
    return code


@functools.cache
def _read(path: Path) -> NotebookNode:
    return nbformat.read(path, as_version=4)


class Reference:
    """The reference solutions of one source notebook, by grade id (see the module's docstring)."""

    def __init__(self, assignment: str, root: Path = ROOT) -> None:
        self.assignment = assignment
        self.path = root / "source" / assignment / f"{assignment}.ipynb"
        notebook = _read(self.path)
        self.cells = solution_cells(notebook)
        self.code = solution_code(notebook)

    def __getitem__(self, grade_id: str) -> str:
        if grade_id not in self.code:
            raise KeyError(f"{self.assignment} has no solution cell {grade_id!r}; it has {sorted(self.code)}")
        return self.code[grade_id]

    def edit(self, grade_id: str, *replacements: tuple[str, str]) -> str:
        """The reference of ``grade_id`` with each ``(old, new)`` made once (see `edit`)."""
        return edit(self[grade_id], *replacements, where=f"{self.assignment} {grade_id}")

    def solve(self, grade_id: str, todo: dict[str, str] | None = None, before: str = "", **bodies: str) -> str:
        """The reference cell of ``grade_id`` with the named solution regions written anew.

        Each keyword names a function or class of the cell (``__init__``, ``select_victim``, or
        ``module`` for a region at the top level) that holds one region, and gives its code; ``todo``
        does the same by TODO label (``{"3.2.1": "..."}``), for functions with several blanks. The
        signatures, docstrings and given lines stay the reference's. ``before`` is code put above the
        cell (an import or a helper that the new code uses).
        """
        self[grade_id]
        renamed = {("<module>" if name == "module" else name): body for name, body in bodies.items()}
        renamed.update(todo or {})
        code = replace_regions(self.cells[grade_id], renamed, where=f"{self.assignment} {grade_id}")
        return f"{textwrap.dedent(before).strip()}\n\n\n{code}" if before.strip() else code
