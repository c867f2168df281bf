"""Repairs submissions whose cells lost their nbgrader metadata or were moved, copied or deleted.

Colab, VS Code and copy-paste into a fresh notebook do this. nbgrader grades a cell by its
metadata, so such a submission would lose points it earned. `repair` rebuilds the submission on
the release notebook: every release cell in its place, each solution cell holding the student's
code (found by its grade_id, or else by the function or class it defines), and the student's own
extra code cells kept just before the task they came before. What it cannot match is reported, so
that the instructor knows which student needs a manual look.
"""

from __future__ import annotations

import ast
import bisect
import copy
from dataclasses import dataclass, field

import nbformat
from nbformat.notebooknode import NotebookNode

STUB = "raise NotImplementedError()"


@dataclass
class Repair:
    """The outcome of `repair`: the notebook to grade and what was done to it."""

    notebook: NotebookNode
    notes: list[str] = field(default_factory=list)
    needs_manual_look: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.notes)


def _grade_id(cell: NotebookNode) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def _defined_names(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return set()  # grading/isolation/scan.py flags code that the parser cannot read.
    return {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))}


def _is_stub(source: str) -> bool:
    return STUB in source


def needs_repair(submission: NotebookNode, release: NotebookNode) -> bool:
    """True when the solution cells are not the release's, once each and in order, or an id repeats.

    A deleted or edited test cell alone needs no repair: nbgrader puts test and read-only cells
    back itself (OverwriteCells).
    """
    def solution_ids(notebook):
        return [_grade_id(c) for c in notebook.cells if c.metadata.get("nbgrader", {}).get("solution")]

    every_id = [_grade_id(c) for c in submission.cells if _grade_id(c)]
    return solution_ids(submission) != solution_ids(release) or len(every_id) != len(set(every_id))


def repair(submission: NotebookNode, release: NotebookNode) -> Repair:
    """Rebuild ``submission`` on ``release``; see the module's docstring."""
    if not needs_repair(submission, release):
        return Repair(submission)
    notes: list[str] = []
    solutions = [c for c in release.cells if c.metadata.get("nbgrader", {}).get("solution")]
    names = {_grade_id(c): _defined_names(c.source) for c in solutions}
    candidates = _candidates(submission, names)
    chosen = _choose(submission, candidates, notes)
    extras = _extras(submission, release, candidates, set(chosen.values()))

    repaired_cells = []
    for cell in release.cells:
        grade_id = _grade_id(cell)
        new = copy.deepcopy(cell)
        if grade_id in names:
            repaired_cells.extend(extras.pop(grade_id, []))
            if grade_id in chosen:
                new.source = submission.cells[chosen[grade_id]].source
            else:
                notes.append(f"{grade_id}: no cell defines {', '.join(sorted(names[grade_id]))}; graded as not written")
        repaired_cells.append(new)
    repaired_cells.extend(extras.pop(None, []))

    positions = [chosen[t] for t in (_grade_id(c) for c in solutions) if t in chosen]
    if positions != sorted(positions):
        notes.append("tasks were out of order; put back in the release order")
    if not notes:
        notes.append("cells were moved or copied; rebuilt on the release notebook")
    notebook = nbformat.v4.new_notebook()
    notebook.metadata = copy.deepcopy(release.metadata)
    notebook.cells = repaired_cells
    missing = any(_grade_id(c) not in chosen for c in solutions)
    return Repair(notebook, notes, needs_manual_look=missing)


def _candidates(submission: NotebookNode, names: dict[str, set[str]]) -> dict[str, list[int]]:
    """The submission's cells that may answer each task: those with its grade_id, or that define its names."""
    candidates: dict[str, list[int]] = {task: [] for task in names}
    for index, cell in enumerate(submission.cells):
        if cell.cell_type != "code":
            continue
        grade_id = _grade_id(cell)
        if grade_id in candidates:
            candidates[grade_id].append(index)
            continue
        defined = _defined_names(cell.source)
        for task, task_names in names.items():
            if defined and task_names and task_names <= defined and not (grade_id and grade_id != task):
                candidates[task].append(index)
    return candidates


def _choose(submission: NotebookNode, candidates: dict[str, list[int]], notes: list[str]) -> dict[str, int]:
    """The cell graded for each task: the last of its candidates that is written (not the stub)."""
    chosen: dict[str, int] = {}
    for task, indices in candidates.items():
        if not indices:
            continue
        written = [i for i in indices if not _is_stub(submission.cells[i].source)]
        pick = (written or indices)[-1]
        chosen[task] = pick
        if len(indices) > 1:
            notes.append(f"{task}: {len(indices)} cells define it; graded the last one written")
        elif not _grade_id(submission.cells[pick]):
            notes.append(f"{task}: restored the cell's lost grading metadata")
    return chosen


def _extras(submission: NotebookNode, release: NotebookNode, candidates: dict[str, list[int]], used: set[int]
            ) -> dict[str | None, list[NotebookNode]]:
    """The student's extra code cells, by the first task they came before (a task is where any of its
    candidate cells stood; None: after the last)."""
    release_sources = {c.source.strip() for c in release.cells}
    owner = {index: task for task, indices in candidates.items() for index in indices}
    positions = sorted(owner)  # Found by bisection: a notebook of many copied cells costs no more per cell.
    extras: dict[str | None, list[NotebookNode]] = {}
    for index, cell in enumerate(submission.cells):
        if index in used or cell.cell_type != "code" or not cell.source.strip():
            continue
        if _grade_id(cell) or cell.source.strip() in release_sources:
            continue
        after = bisect.bisect_right(positions, index)
        following = owner[positions[after]] if after < len(positions) else None
        extras.setdefault(following, []).append(copy.deepcopy(cell))
    return extras


def restore_metadata(submission: NotebookNode, release: NotebookNode) -> list[str]:
    """Give every cell the release's grading metadata for its grade id; return what was changed.

    nbgrader, the judge and the scan read a cell's role (test, solution, read-only, points) from
    its metadata, which a student can edit. Here the release decides: a cell whose grade id is
    the release's gets the release's metadata, and grading metadata with an unknown grade id, or
    none, is dropped. A note names each cell whose metadata claimed something else.
    """
    release_meta = {_grade_id(c): c.metadata["nbgrader"] for c in release.cells if _grade_id(c)}
    notes = []
    for position, cell in enumerate(submission.cells, start=1):
        meta = cell.get("metadata", {}).get("nbgrader")
        if meta is None:
            continue
        grade_id = meta.get("grade_id")
        if grade_id in release_meta:
            wanted = copy.deepcopy(release_meta[grade_id])
            keys = ("grade", "solution", "locked", "task", "points", "cell_type")
            if any(meta.get(key) != wanted.get(key) for key in keys):
                notes.append(f"cell {position} ({grade_id}): its grading metadata claimed "
                             + ", ".join(f"{key}={meta.get(key)!r}" for key in keys if meta.get(key) != wanted.get(key))
                             + "; the release's was put back")
            cell.metadata["nbgrader"] = wanted
        else:
            if any(meta.get(key) for key in ("grade", "solution", "locked", "task")):
                what = "an unknown grade id" if grade_id else "no grade id"
                notes.append(f"cell {position}: grading metadata with {what} was dropped")
            del cell.metadata["nbgrader"]
    return notes
