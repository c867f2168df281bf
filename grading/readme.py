"""The README's generated tables: the course table and the mutation suite's kill rates.

    python -m grading.readme        # prints both tables

``make notebooks`` writes them into README.md between their BEGIN/END GENERATED markers
(`update`); CI fails when they are stale (``git diff --exit-code`` after ``make notebooks``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

from grading.config import ASSIGNMENTS, ROOT
from grading.given import catalogue, points
from grading.harness import NotebookHarness
from grading.samples import load_mutants

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


def mutation_table(root: Path = ROOT) -> str:
    """Per notebook: wrong answers that lose points, and correct alternatives that keep them."""
    lines = ["| notebook | wrong answers that lose points (kill rate) | correct alternatives that keep full points |",
             "|---|---|---|"]
    for assignment in ASSIGNMENTS:
        harness = NotebookHarness(root / "source" / assignment / f"{assignment}.ipynb")
        mutants = load_mutants(assignment)
        wrong = [harness.grade(g, a)[0] for g, variants in mutants.WRONG.items() for a in variants.values()]
        right = [harness.grade(g, a)[0] for g, variants in mutants.ALTERNATIVES.items() for a in variants.values()]
        killed = sum(not passed for passed in wrong)
        lines.append(f"| {assignment} | {killed} / {len(wrong)} ({100 * killed / len(wrong):.0f}%) | "
                     f"{sum(right)} / {len(right)} |")
    return "\n".join(lines)


TABLES = {"course table": course_table, "mutation table": mutation_table}


def update(readme: Path) -> bool:
    """Write every table of `TABLES` between its markers in ``readme``; return True when it changed.

    Raises:
        ValueError: naming a table whose markers are missing.
    """
    text = original = readme.read_text(encoding="utf-8")
    for name, make in TABLES.items():
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


def main() -> int:
    for make in TABLES.values():
        print(make())
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
