"""Regenerates everything that is made from the notebooks' editable sources: ``make notebooks``.

    python -m grading.authoring.notebooks [ASSIGNMENT ...] [--no-build]

Each notebook has one editable source in two paired forms, kept equal by jupytext:
``authoring/NN_topic.py`` (py:percent: edit it in any editor, lint it, diff it) and
``source/NN_topic/NN_topic.ipynb`` (edit it in JupyterLab, with nbgrader's Create Assignment
toolbar). For every notebook, in course order, this command:

1. reads the more recently modified of the two (as ``jupytext --sync`` does) and says which;
2. normalizes it: outputs cleared, only the ``nbgrader``, ``given`` and ``tags`` cell metadata
   kept, stable cell ids (the grade id of a graded cell, ``cell-NNN`` by position otherwise);
3. writes the cells marked ``given`` from their origin (grading/authoring/given.py), and the regions of test
   cells marked ``# BEGIN SHARED`` from the notebook's shared test code (grading/authoring/shared_code.py);
4. writes both files, each only when its text changes.

Then it regenerates ``release/`` and ``solutions/`` with nbgrader (grading/authoring/build.py) and the
README's course table (grading/authoring/readme.py; tests/test_mutants.py checks the mutation table). CI runs
it on a clean clone and fails when ``git diff --exit-code`` then finds a change: something was edited
without being regenerated.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import jupytext
import nbformat
from nbformat.notebooknode import NotebookNode

from grading.authoring import shared_code
from grading.authoring.build import build
from grading.authoring.given import fill
from grading.config import ASSIGNMENT_PATTERN, ROOT, source_assignments

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
CELL_METADATA = ("nbgrader", "given", "tags")


def py_path(assignment: str, root: Path = ROOT) -> Path:
    """The py:percent form of a notebook: ``authoring/<assignment>.py``."""
    return root / "authoring" / f"{assignment}.py"


def ipynb_path(assignment: str, root: Path = ROOT) -> Path:
    """The notebook form: ``source/<assignment>/<assignment>.ipynb``."""
    return root / "source" / assignment / f"{assignment}.ipynb"


def jupytext_settings(assignment: str) -> dict:
    """The pairing and metadata filter that both forms of a notebook carry."""
    return {"formats": f"source/{assignment}//ipynb,authoring//py:percent",
            "cell_metadata_filter": ",".join(CELL_METADATA) + ",-all"}


def assignments_in(root: Path = ROOT) -> list[str]:
    """Every notebook that has either form, in course order."""
    found = {path.stem for path in (root / "authoring").glob(f"{ASSIGNMENT_PATTERN}.py")}
    return sorted(found.union(source_assignments(root)))


def read_newer(assignment: str, root: Path = ROOT) -> tuple[NotebookNode, Path]:
    """Read the more recently modified form of a notebook (the .py on a tie); return it and its path.

    Raises:
        FileNotFoundError: when neither form exists.
    """
    py, ipynb = py_path(assignment, root), ipynb_path(assignment, root)
    candidates = [path for path in (py, ipynb) if path.exists()]
    if not candidates:
        raise FileNotFoundError(f"{assignment}: neither {py} nor {ipynb} exists")
    newest = max(candidates, key=lambda path: (path.stat().st_mtime, path == py))
    return jupytext.read(newest), newest


def normalize(notebook: NotebookNode, assignment: str) -> NotebookNode:
    """A copy of ``notebook`` as the repository keeps it (see the module's docstring, step 2)."""
    result = nbformat.v4.new_notebook()
    result.metadata = NotebookNode({"jupytext": jupytext_settings(assignment), "kernelspec": dict(KERNELSPEC),
                                    "language_info": {"name": "python"}})
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type not in ("markdown", "code"):
            raise ValueError(f"{assignment}: cell {index} is a {cell.cell_type} cell; use markdown or code cells")
        new = (nbformat.v4.new_code_cell if cell.cell_type == "code" else nbformat.v4.new_markdown_cell)(cell.source)
        new.metadata = NotebookNode({key: copy.deepcopy(cell.metadata[key]) for key in CELL_METADATA
                                     if key in cell.metadata and cell.metadata[key] not in ([], None)})
        grade_id = new.metadata.get("nbgrader", {}).get("grade_id")
        new["id"] = grade_id or f"cell-{index:03d}"
        result.cells.append(new)
    return result


def _write_if_changed(path: Path, text: str) -> bool:
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def sync(assignments: list[str], root: Path = ROOT, log=print) -> list[str]:
    """Steps 1-4 of the module's docstring for ``assignments``; return the files written.

    Notebooks that the given cells draw on are read too, even when not in ``assignments``.
    """
    written, sources = [], {}
    wanted = set(assignments)
    for assignment in assignments_in(root):
        if assignment > max(wanted):
            break
        notebook, origin = read_newer(assignment, root)
        notebook = normalize(notebook, assignment)
        fill(assignment, notebook, sources, root)
        shared_code.fill(assignment, notebook, root)
        sources[assignment] = notebook
        if assignment not in wanted:
            continue
        py, ipynb = py_path(assignment, root), ipynb_path(assignment, root)
        # The form that was read is written first, so that the other one ends up the newer only
        # when it changed; either way both hold the same notebook afterwards.
        texts = {py: jupytext.writes(notebook, fmt="py:percent"), ipynb: nbformat.writes(notebook).rstrip("\n") + "\n"}
        for path in sorted(texts, key=lambda p: p != origin):
            if _write_if_changed(path, texts[path]):
                written.append(str(path.relative_to(root)))
                log(f"{assignment}: wrote {path.relative_to(root)} (from {origin.relative_to(root)})")
    return written


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m grading.authoring.notebooks", description=__doc__.split("\n\n")[0])
    parser.add_argument("assignments", nargs="*", help="only these notebooks (default: all)")
    parser.add_argument("--no-build", action="store_true", help="only sync the two forms; skip nbgrader and README")
    args = parser.parse_args(argv)
    everything = assignments_in(ROOT)
    unknown = sorted(set(args.assignments) - set(everything))
    if unknown:
        parser.error(f"no such notebook: {', '.join(unknown)} (there are {', '.join(everything)})")
    assignments = args.assignments or everything
    written = sync(assignments, ROOT)
    print(f"sources: {len(written)} file(s) written, {len(assignments)} notebook(s) in sync")
    if args.no_build:
        return 0
    build(ROOT, assignments)
    print(f"release/ and solutions/ regenerated for {len(assignments)} notebook(s)")
    from grading.authoring import readme

    # The mutation table is checked by tests/test_mutants.py against its own run (grading/authoring/readme.py).
    if readme.update(ROOT / "README.md", ("course table",)):
        print("README.md: the course table updated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
