"""The main job: rebuild release/ and solutions/, grade the sample submissions, print the table.

    python -m grading.main      (or: make)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from grading.authoring.build import build
from grading.authoring.samples import write_samples
from grading.config import ASSIGNMENTS, ROOT
from grading.pipeline.report import format_table
from grading.pipeline.run import grade_folder


def main(argv: list[str]) -> int:
    import argparse

    argparse.ArgumentParser(prog="python -m grading.main", description=__doc__.split("\n\n")[0]).parse_args(argv)
    started = time.perf_counter()
    print(f"1/3 regenerating release/ and solutions/ from source/ ({len(ASSIGNMENTS)} assignments)")
    build(ROOT, ASSIGNMENTS)
    with tempfile.TemporaryDirectory() as folder:
        print("2/3 writing the sample submissions: reference_solution, unchanged_release, typical_mistakes")
        write_samples(Path(folder), ASSIGNMENTS, ROOT)
        print("3/3 autograding them into gradebook.db and exporting grades.csv")
        rows = grade_folder(Path(folder), ROOT, ASSIGNMENTS)
    print()
    print(format_table(rows))
    print(f"\ndone in {time.perf_counter() - started:.0f} s; notebooks graded into autograded/, grades in grades.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
