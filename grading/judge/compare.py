"""Grading truth does not move: every answer of the mutation suite, in process and through the judge.

    python -m grading.judge.compare [--stats] [ASSIGNMENT ...]

For each notebook (all by default), every reference solution, wrong answer and correct
alternative of tests/answers/ is graded twice, by `NotebookHarness` (the test cells in the same
process as the answer, as before the judge) and by `JudgedHarness` (the test cells in the judge,
the answer in a kernel of its own), with hidden tests and without them. It prints, per notebook,
how many (answer, test cell) results were compared and every one that differs, and exits 1 when
any differs. Run it after changing the judge or a notebook's tests. With ``--stats`` it also prints,
per test cell, how often the reference solution's test crossed between the judge and the kernel
(requests both ways) and the crossings of every answer together: where a test cell costs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

from grading.authoring.harness import JudgedHarness, NotebookHarness
from grading.authoring.samples import load_mutants
from grading.config import ASSIGNMENTS, ROOT


def answers_of(assignment: str, tasks: dict) -> list[tuple[str, str, str, str]]:
    """(kind, grade id, name, source) of every answer to compare: references, wrong ones, alternatives."""
    mutants = load_mutants(assignment)
    found = [("reference", grade_id, "reference", task.solution) for grade_id, task in tasks.items()]
    for kind, variants in (("wrong", mutants.WRONG), ("alternative", mutants.ALTERNATIVES)):
        for grade_id, answers in variants.items():
            found.extend((kind, grade_id, name, source) for name, source in answers.items())
    return found


def compare(assignment: str, log=print, stats: bool = False) -> tuple[int, int, list[str]]:
    """Grade every answer both ways; return (answers, results compared, differences)."""
    path = ROOT / "source" / assignment / f"{assignment}.ipynb"
    old = NotebookHarness(path)
    differences: list[str] = []
    compared = 0
    reference: dict[str, int] = {}  # Per test cell, the crossings of the reference solution's test.
    with JudgedHarness(path) as new:
        answers = answers_of(assignment, new.tasks)
        for kind, grade_id, name, source in answers:
            for visible_only in (False, True):
                before = old.results(grade_id, source, visible_only)
                after = new.results(grade_id, source, visible_only)
                if kind == "reference" and not visible_only:
                    reference.update((r.grade_id, new.crossings[r.grade_id][-1]) for r in after
                                     if r.grade_id in new.crossings)
                compared += len(before)
                for was, now in zip(before, after, strict=True):
                    if was.passed != now.passed:
                        where = "visible tests" if visible_only else "all tests"
                        differences.append(f"{kind} {grade_id} {name!r}, {was.grade_id} ({where}): in process "
                                           f"{'passed' if was.passed else 'failed: ' + was.message[:300]}; judged "
                                           f"{'passed' if now.passed else 'failed: ' + now.message[:300]}")
    log(f"{assignment}: {len(answers)} answers, {compared} (answer, test cell) results compared, "
        f"{len(differences)} differ")
    for line in differences:
        log("  " + line)
    if stats:
        for cell, counts in sorted(new.crossings.items(), key=lambda item: -sum(item[1])):
            log(f"  {cell:<32} reference {reference.get(cell, 0):8d} crossings; all answers {sum(counts):9d}")
    return len(answers), compared, differences


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m grading.judge.compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="only these notebooks (default: all)")
    parser.add_argument("--stats", action="store_true", help="also print each test cell's crossings")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.assignments) - set(ASSIGNMENTS))
    if unknown:
        parser.error(f"no such notebook: {', '.join(unknown)} (there are {', '.join(ASSIGNMENTS)})")
    if not torch.cuda.is_available():
        # The notebooks before 09 run in this process first, and one of them may import Triton: Triton reads
        # TRITON_INTERPRET when it is imported, so it is set now, as 09's setup cell sets it before its import.
        os.environ.setdefault("TRITON_INTERPRET", "1")
    started = time.perf_counter()
    totals = [compare(assignment, stats=args.stats) for assignment in args.assignments or ASSIGNMENTS]
    differ = sum(len(found) for _, _, found in totals)
    print(f"{sum(a for a, _, _ in totals)} answers, {sum(c for _, c, _ in totals)} results compared, {differ} differ, "
          f"in {time.perf_counter() - started:.0f} s")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
