"""The README's generated tables: the course table and the mutation suite's kill rates.

    python -m grading.readme        # prints both tables; paste them into README.md

tests/test_readme.py fails when the README's tables differ from what this prints.
"""

from __future__ import annotations

import re
import sys

import nbformat

from grading.config import ASSIGNMENTS, ROOT
from grading.harness import NotebookHarness
from grading.samples import load_mutants


def _header(assignment: str) -> tuple[str, str, int, str]:
    notebook = nbformat.read(ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    first = notebook.cells[0].source
    title = re.match(r"# \d+\. (.+)", first).group(1).replace("|", "·")
    points = int(re.search(r"\*\*Points:\*\* (\d+)", first).group(1))
    gpu = re.search(r"\*\*GPU:\*\* ([^\n]+)", first).group(1).strip()
    tasks = []
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        match = re.fullmatch(r"task(\d+)_(\d+)_(\w+)", meta.get("grade_id", "")) if meta.get("solution") else None
        if match:
            tasks.append(f"{match.group(1)}.{match.group(2)} {match.group(3)}")
    return title, " · ".join(tasks), points, gpu


def course_table() -> str:
    """The course table: number, title with a link to the release notebook, tasks, points, GPU."""
    lines = ["| # | notebook | tasks (task id and name) | points | GPU |", "|---|---|---|---|---|"]
    for assignment in ASSIGNMENTS:
        title, tasks, points, gpu = _header(assignment)
        link = f"release/{assignment}/{assignment}.ipynb"
        lines.append(f"| {assignment[:2]} | [{title}]({link}) | {tasks} | {points} | {gpu} |")
    return "\n".join(lines)


def mutation_table() -> str:
    """Per notebook: wrong answers that lose points, and correct alternatives that keep them."""
    lines = ["| notebook | wrong answers that lose points (kill rate) | correct alternatives that keep full points |",
             "|---|---|---|"]
    for assignment in ASSIGNMENTS:
        harness = NotebookHarness(ROOT / "source" / assignment / f"{assignment}.ipynb")
        mutants = load_mutants(assignment)
        wrong = [harness.grade(g, a)[0] for g, variants in mutants.WRONG.items() for a in variants.values()]
        right = [harness.grade(g, a)[0] for g, variants in mutants.ALTERNATIVES.items() for a in variants.values()]
        killed = sum(not passed for passed in wrong)
        lines.append(f"| {assignment} | {killed} / {len(wrong)} ({100 * killed / len(wrong):.0f}%) | "
                     f"{sum(right)} / {len(right)} |")
    return "\n".join(lines)


def main() -> int:
    print(course_table())
    print()
    print(mutation_table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
