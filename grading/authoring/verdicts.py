"""Every answer's verdicts, test cell by test cell: record them, and check that a change of the tests keeps them.

    python -m grading.authoring.verdicts record FILE [ASSIGNMENT ...]
    python -m grading.authoring.verdicts check FILE [ASSIGNMENT ...]

A change that makes hidden tests cheaper (fewer random cases, one replay for a loop of calls) must
not move a grade: every reference solution, wrong answer and correct alternative of tests/answers/
must pass and fail the same test cells as before. ``record`` grades each of them in process, hidden
tests included (`ForkedHarness`, as tests/test_mutants.py does), and writes the verdicts to FILE;
after the change, ``check`` grades them again, prints every verdict that moved and exits 1 when one
did. Record before editing: ``git stash`` first, or record on a clean checkout.

``record`` also prints, per test cell, the latest random case at which a wrong answer first failed
(from the check's message, "... random case 14"): a random loop needs more cases than that, with
room to spare (docs/AUTHORING.md, section 3, says how many), and it needs none of the cases past
where no wrong answer reaches, except as a net for the mistakes the suite does not hold.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

from grading.config import ASSIGNMENTS, ROOT

# "on random case 14", "of random trace 3", "(case 14, op 5, ...)": how the notebooks' random loops name a case.
_RANDOM_CASE = re.compile(r"random (?:case|trace) (\d+)|\(case (\d+),")


def random_case(message: str) -> int | None:
    """The random case a failing check names ("on random case 14", "of random trace 3", "(case 14, op 5"), or None."""
    found = _RANDOM_CASE.search(message)
    return int(found.group(1) or found.group(2)) if found else None


def grade_all(assignment: str, harness) -> dict[str, list]:
    """Per answer (``kind|grade id|name``), its test cells' ``[grade id, passed, random case or None]``."""
    from grading.judge.compare import answers_of

    table = {}
    for kind, grade_id, name, source in answers_of(assignment, harness.tasks):
        table[f"{assignment}|{kind}|{grade_id}|{name}"] = [
            [result.grade_id, result.passed, None if result.passed else random_case(result.message)]
            for result in harness.results(grade_id, source)]
    return table


def latest_random_cases(table: dict[str, list]) -> dict[str, int]:
    """Per test cell, the latest random case at which an answer first failed."""
    latest: dict[str, int] = {}
    for results in table.values():
        for cell, passed, case in results:
            if not passed and case is not None:
                latest[cell] = max(case, latest.get(cell, case))
    return latest


def moved(before: dict[str, list], now: dict[str, list]) -> list[str]:
    """Every answer whose test cells passed or failed differently (the random case a failure names may move)."""
    lines = []
    for key in sorted(before.keys() & now.keys()):
        was = [(cell, passed) for cell, passed, _ in before[key]]
        is_now = [(cell, passed) for cell, passed, _ in now[key]]
        if was != is_now:
            lines.append(f"{key}: {was} -> {is_now}")
    lines += [f"{key}: recorded, not graded now" for key in sorted(before.keys() - now.keys())]
    lines += [f"{key}: graded now, not recorded" for key in sorted(now.keys() - before.keys())]
    return lines


def grade_notebooks(assignments: list[str], open_harness: Callable | None = None) -> dict[str, list]:
    """`grade_all` for each notebook, in a harness of its own."""
    if open_harness is None:
        from grading.authoring.harness import ForkedHarness

        def open_harness(assignment):
            return ForkedHarness(ROOT / "source" / assignment / f"{assignment}.ipynb")

    table: dict[str, list] = {}
    for assignment in assignments:
        with open_harness(assignment) as harness:
            table.update(grade_all(assignment, harness))
        print(f"{assignment}: graded", file=sys.stderr, flush=True)
    return table


def main(argv: list[str], open_harness: Callable | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grading.authoring.verdicts", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("record", "check"))
    parser.add_argument("file", type=Path, help="where the verdicts are recorded (JSON)")
    parser.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="only these notebooks (default: all)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.assignments) - set(ASSIGNMENTS))
    if unknown:
        parser.error(f"no such notebook: {', '.join(unknown)} (there are {', '.join(ASSIGNMENTS)})")
    if args.action == "check" and not args.file.exists():
        parser.error(f"{args.file} does not exist: record the verdicts first")
    table = grade_notebooks(args.assignments or ASSIGNMENTS, open_harness)
    if args.action == "record":
        args.file.write_text(json.dumps(table, indent=0) + "\n")
        print(f"{len(table)} answers recorded in {args.file}")
        for cell, case in sorted(latest_random_cases(table).items()):
            print(f"  {cell:<44} a wrong answer first failed at random case {case}")
        return 0
    recorded = json.loads(args.file.read_text())
    if args.assignments:
        recorded = {key: value for key, value in recorded.items() if key.split("|", 1)[0] in args.assignments}
    differences = moved(recorded, table)
    for line in differences:
        print("  " + line)
    print(f"{len(table)} answers graded, {len(differences)} moved")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
