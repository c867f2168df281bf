"""Code that several test cells of one notebook share, written once and copied into each cell by the build.

Hidden tests often need the same oracle (a second implementation of the contract) or the same fixture
(a small fake tier, a comparison helper) in several graded parts. nbgrader grades each test cell on its
own, so each cell must carry its own copy; the author writes the code once, in
``authoring/shared/NN_topic.py``, and marks where a cell wants it::

    # BEGIN SHARED Model, compare (authoring/shared/02_paged_kv_cache.py)
    # END SHARED

``make notebooks`` (grading/authoring/notebooks.py) writes the named top-level definitions of that file between
the two lines, in the order named and indented as the marker is, on every run. A copy edited by hand is
therefore overwritten, and CI (which fails when ``make notebooks`` changes a file) catches a stale one.
The shared file is ordinary Python: its imports are there for the linter and are not copied; a cell
imports what its copy needs.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from nbformat.notebooknode import NotebookNode

from grading.config import ROOT

FOLDER = "authoring/shared"
_BEGIN = re.compile(r"^(?P<indent>[ \t]*)# BEGIN SHARED (?P<names>\w+(?:, *\w+)*)(?: \(.*\))?[ \t]*$")
_END = re.compile(r"^[ \t]*# END SHARED[ \t]*$")


def shared_path(assignment: str, root: Path = ROOT) -> Path:
    return root / FOLDER / f"{assignment}.py"


def definitions(path: Path) -> dict[str, str]:
    """The source of every top-level function and class of ``path``, decorators included, by name."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    found = {}
    for node in ast.parse(text, filename=str(path)).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
            found[node.name] = "\n".join(lines[first - 1:node.end_lineno])
    return found


def _indented(code: str, indent: str) -> list[str]:
    return [indent + line if line.strip() else "" for line in code.splitlines()]


def expand(source: str, shared: dict[str, str], origin: str, where: str) -> tuple[str, set[str]]:
    """``source`` with every shared region rewritten from ``shared``; also the names it used.

    Raises:
        ValueError: for a region without its end line, a nested region, or a name ``shared`` lacks.
    """
    out, used, lines = [], set(), source.split("\n")
    index = 0
    while index < len(lines):
        begin = _BEGIN.match(lines[index])
        if _END.match(lines[index]):
            raise ValueError(f"{where}: '# END SHARED' without a '# BEGIN SHARED' line before it")
        if not begin:
            out.append(lines[index])
            index += 1
            continue
        end = next((k for k in range(index + 1, len(lines)) if _END.match(lines[k]) or _BEGIN.match(lines[k])), None)
        if end is None or _BEGIN.match(lines[end]):
            raise ValueError(f"{where}: '{lines[index].strip()}' has no '# END SHARED' line after it")
        names = [name.strip() for name in begin["names"].split(",")]
        missing = [name for name in names if name not in shared]
        if missing:
            raise ValueError(f"{where}: {origin} defines no {', '.join(missing)} at its top level "
                             f"(it defines: {', '.join(sorted(shared)) or 'nothing'})")
        indent = begin["indent"]
        out.append(f"{indent}# BEGIN SHARED {', '.join(names)} ({origin})")
        for number, name in enumerate(names):
            out.extend([""] * (number > 0) + _indented(shared[name], indent))
        out.append(f"{indent}# END SHARED")
        used.update(names)
        index = end + 1
    return "\n".join(out), used


def fill(assignment: str, notebook: NotebookNode, root: Path = ROOT) -> list[str]:
    """Rewrite every shared region of ``notebook``'s code cells; return the ids of cells that changed.

    Raises:
        ValueError: for a malformed region, a name the shared file lacks, a region in a notebook without a
            shared file, or a shared definition that no cell uses (dead code in the hidden tests' support).
    """
    path = shared_path(assignment, root)
    origin = str(path.relative_to(root))
    shared = definitions(path) if path.exists() else {}
    changed, used = [], set()
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code" or "# BEGIN SHARED" not in cell.source and "# END SHARED" not in cell.source:
            continue
        where = f"{assignment}, cell {cell.get('id', index)}"
        if not path.exists():
            raise ValueError(f"{where} has a shared region but {origin} does not exist")
        text, names = expand(cell.source, shared, origin, where)
        used |= names
        if text != cell.source:
            cell.source = text
            changed.append(cell.get("id", str(index)))
    unused = sorted(set(shared) - used)
    if unused:
        raise ValueError(f"{origin}: no cell of {assignment} uses {', '.join(unused)}: delete it or use it in a "
                         "'# BEGIN SHARED' region")
    return changed
