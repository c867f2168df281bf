"""The README's generated tables: the course table and the mutation suite's kill rates.

    python -m grading.authoring.readme           # prints both tables
    python -m grading.authoring.readme --write   # writes both into README.md

Each table sits in README.md between its BEGIN/END GENERATED markers (`update`). ``make notebooks``
writes the course table; CI fails when it is stale (``git diff --exit-code`` after ``make notebooks``).
The mutation table takes the whole mutation suite to compute, so ``make notebooks`` leaves it alone:
tests/test_mutants.py checks each row against the results of its own run (the suite runs once per
CI run), and ``--write`` rewrites the table after a change to tests/answers/.
"""

from __future__ import annotations

import multiprocessing
import re
import sys
from pathlib import Path

import nbformat

from grading.authoring.given import catalogue, points
from grading.authoring.harness import NotebookHarness
from grading.authoring.samples import load_mutants
from grading.config import ASSIGNMENTS, ROOT

_TASK = re.compile(r"task(\d+)_(\d+)_(\w+)")


def course_table(root: Path = ROOT) -> str:
    """The course table: number, title with a link to the release notebook, tasks, points, GPU."""
    entries = catalogue(root)
    lines = ["| # | notebook | tasks (task id and name) | points | GPU |", "|---|---|---|---|---|"]
    for assignment in ASSIGNMENTS:
        notebook = nbformat.read(root / "source" / assignment / f"{assignment}.ipynb", as_version=4)
        tasks = []
        for cell in notebook.cells:
            meta = cell.metadata.get("nbgrader", {})
            match = _TASK.fullmatch(meta.get("grade_id", "")) if meta.get("solution") else None
            if match:
                tasks.append(f"{match.group(1)}.{match.group(2)} {match.group(3)}")
        entry = entries[assignment]
        link = f"release/{assignment}/{assignment}.ipynb"
        lines.append(f"| {assignment[:2]} | [{entry['title']} · {entry['title_zh']}]({link}) | {' · '.join(tasks)} | "
                     f"{points(notebook)} | {entry['gpu']} |")
    return "\n".join(lines)


def graded_row(assignment: str, root: Path = ROOT) -> str:
    """One notebook's row of the mutation table, graded in this process with the in-process harness."""
    harness = NotebookHarness(root / "source" / assignment / f"{assignment}.ipynb")
    mutants = load_mutants(assignment)
    wrong = [harness.grade(g, a)[0] for g, variants in mutants.WRONG.items() for a in variants.values()]
    right = [harness.grade(g, a)[0] for g, variants in mutants.ALTERNATIVES.items() for a in variants.values()]
    return mutation_row(assignment, wrong, right)


def mutation_table(root: Path = ROOT) -> str:
    """Per notebook: wrong answers that lose points, and correct alternatives that keep them.

    Each notebook is graded in a fresh process of its own, as a student's kernel runs it: what one notebook
    imports must not change another (09's setup turns Triton's interpreter on before triton is first imported;
    after an earlier notebook's tests imported triton, its kernels would fail for that reason alone).
    """
    lines = ["| notebook | wrong answers that lose points (kill rate) | correct alternatives that keep full points |",
             "|---|---|---|"]
    with multiprocessing.get_context("spawn").Pool(1, maxtasksperchild=1) as pool:
        lines += pool.starmap(graded_row, [(assignment, root) for assignment in ASSIGNMENTS], chunksize=1)
    return "\n".join(lines)


def mutation_row(assignment: str, wrong_passed: list[bool], right_passed: list[bool]) -> str:
    """The mutation table's row of a notebook, from whether each wrong and each correct alternative passed."""
    killed = sum(not passed for passed in wrong_passed)
    return (f"| {assignment} | {killed} / {len(wrong_passed)} ({100 * killed / len(wrong_passed):.0f}%) | "
            f"{sum(right_passed)} / {len(right_passed)} |")


TABLES = {"course table": course_table, "mutation table": mutation_table}


def update(readme: Path, names: tuple[str, ...] = tuple(TABLES)) -> bool:
    """Write the tables ``names`` of `TABLES` between their markers in ``readme``; return True when it changed.

    Raises:
        ValueError: naming a table whose markers are missing.
    """
    text = original = readme.read_text(encoding="utf-8")
    for name in names:
        make = TABLES[name]
        begin, end = f"<!-- BEGIN GENERATED: {name} -->", f"<!-- END GENERATED: {name} -->"
        pattern = re.compile(re.escape(begin) + r"\n.*?\n" + re.escape(end), re.S)
        if not pattern.search(text):
            raise ValueError(f"{readme}: no '{begin}' ... '{end}' markers")
        replacement = f"{begin}\n{make()}\n{end}"
        text = pattern.sub(lambda _, replacement=replacement: replacement, text)
    if text == original:
        return False
    readme.write_text(text, encoding="utf-8")
    return True


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        print("README.md: tables updated" if update(ROOT / "README.md") else "README.md: tables already current")
        return 0
    if argv:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    for make in TABLES.values():
        print(make())
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
