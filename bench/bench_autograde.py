"""Autograding time: one student's whole course, median over several runs, with a breakdown.

    python bench/bench_autograde.py [--runs 5]

In a scratch copy of the course, the reference solution of every notebook is autograded the way
the grading command does it (one nbgrader process per notebook, experiment cells skipped). For each
notebook it reports the median wall time and where it goes, read from the execution timestamps
nbgrader's kernel records in the autograded notebook: the setup cell (kernel imports: torch and
the helper package), the test cells, the other cells (solutions and experiments), and the rest
(nbgrader's own start, the kernel's start, and writing the gradebook).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import nbformat  # noqa: E402

from conftest import copy_course  # noqa: E402
from grading.build import build  # noqa: E402
from grading.config import ASSIGNMENTS  # noqa: E402
from grading.grade import Submission, autograde, place  # noqa: E402
from grading.samples import sample_submissions  # noqa: E402


def _seconds(cell) -> float:
    timing = cell.metadata.get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not start or not end:
        return 0.0
    parse = lambda stamp: datetime.fromisoformat(stamp.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds()


def breakdown(notebook_path: Path) -> dict[str, float]:
    """Split a graded notebook's kernel time into setup, tests and other cells."""
    parts = {"setup": 0.0, "tests": 0.0, "other cells": 0.0}
    for cell in nbformat.read(notebook_path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        meta = cell.metadata.get("nbgrader", {})
        kind = "setup" if meta.get("grade_id") == "setup" else "tests" if meta.get("grade") else "other cells"
        parts[kind] += _seconds(cell)
    return parts


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        course = copy_course(Path(scratch) / "course")
        build(course, ASSIGNMENTS)
        submissions = []
        for assignment in ASSIGNMENTS:
            notebook = sample_submissions(assignment, course)["reference_solution"]
            path = Path(scratch) / "in" / f"{assignment}.ipynb"
            path.parent.mkdir(exist_ok=True)
            nbformat.write(notebook, path)
            submissions.append(Submission("bench_student", assignment, path, []))
        skip_tag = "experiment-bench"
        place(submissions, course, skip_tag)
        walls: dict[str, list[float]] = {a: [] for a in ASSIGNMENTS}
        parts: dict[str, list[dict[str, float]]] = {a: [] for a in ASSIGNMENTS}
        for _ in range(args.runs):
            for submission in submissions:
                started = time.perf_counter()
                status = autograde(course, submission, None, 600, skip_tag)
                walls[submission.assignment].append(time.perf_counter() - started)
                if not status.startswith("graded"):
                    raise RuntimeError(f"{submission.assignment}: {status}")
                graded = course / "autograded" / "bench_student" / submission.assignment / f"{submission.assignment}.ipynb"
                parts[submission.assignment].append(breakdown(graded))
    print(f"autograding one student's course: median of {args.runs} runs per notebook (seconds)")
    print(f"{'notebook':<24} {'total':>7} {'setup':>7} {'tests':>7} {'other':>7} {'nbgrader+kernel':>16}")
    totals = []
    for assignment in ASSIGNMENTS:
        total = statistics.median(walls[assignment])
        med = {k: statistics.median(p[k] for p in parts[assignment]) for k in ("setup", "tests", "other cells")}
        rest = total - sum(med.values())
        totals.append(total)
        print(f"{assignment:<24} {total:>7.1f} {med['setup']:>7.1f} {med['tests']:>7.1f} {med['other cells']:>7.1f} {rest:>16.1f}")
    print(f"{'whole course':<24} {sum(totals):>7.1f}   (target: at most 60 s; each notebook at most 15 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
