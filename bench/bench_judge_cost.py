"""What the judge costs when grading: one correct student, per notebook, with the judge and without.

    python bench/bench_judge_cost.py [ASSIGNMENT ...]

For each notebook (all by default) the grading command grades one student whose answers are the
reference solutions twice, in a scratch copy of the course, with the sandbox and feedback: once as
it grades (every test cell in the judge process, the kernel serving it) and once with the test
cells run in the kernel, as plain nbgrader does (``judge=False``, what the judge replaces). Each
run is counted by a cpuacct cgroup of its own (cgroup v1 ``cpuacct.usage``, or v2 ``cpu.stat``),
which holds every process the run starts, the sandboxed kernels included.

It prints, per notebook, both routes' machine-seconds, the judge's own process (its CPU from /proc,
as the grading process reports it) and what the judge adds: the difference between the routes,
which is the judge process plus the kernel's serving of it. Each run starts one judge process, so
each notebook's figure includes that process's start (its imports), which a whole student's run
pays once; the last line grades all the notebooks in one run each way.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import nbformat  # noqa: E402
from conftest import copy_course  # noqa: E402

from grading.authoring.samples import sample_submissions  # noqa: E402
from grading.config import ASSIGNMENTS  # noqa: E402
from grading.pipeline.options import GradingOptions  # noqa: E402
from grading.pipeline.run import grade  # noqa: E402

CGROUPS = Path("/sys/fs/cgroup")
_RUNS = itertools.count()


class CpuCgroup:
    """A cgroup of its own for this process and everything it starts while inside: CPU seconds used."""

    def __init__(self, name: str) -> None:
        v1 = CGROUPS / "cpuacct"
        self.v1 = (v1 / "cpuacct.usage").exists()
        self.parent = v1 if self.v1 else CGROUPS
        self.folder = self.parent / name

    def __enter__(self) -> CpuCgroup:
        self.folder.mkdir()
        (self.folder / "cgroup.procs").write_text(str(os.getpid()))
        return self

    def seconds(self) -> float:
        if self.v1:
            return int((self.folder / "cpuacct.usage").read_text()) / 1e9
        usage = dict(line.split() for line in (self.folder / "cpu.stat").read_text().splitlines())
        return int(usage["usage_usec"]) / 1e6

    def __exit__(self, *exc) -> None:
        (self.parent / "cgroup.procs").write_text(str(os.getpid()))
        try:
            self.folder.rmdir()
        except OSError:  # A process of the run is still ending; the folder is left for it.
            pass


def run(course: Path, folder: Path, assignments: list[str], judge: bool) -> tuple[float, dict[str, float]]:
    """Machine-seconds of one grading run, and the judge process's CPU per notebook."""
    with CpuCgroup(f"bench-judge-{os.getpid()}-{next(_RUNS)}") as cgroup:
        rows = grade(GradingOptions(folder=folder, root=course, assignments=assignments, jobs=1, force=True,
                                    progress=False, judge=judge), log=lambda line: None)
        spent = cgroup.seconds()
    bad = [status for _, status in rows if not status.startswith("graded")]
    if bad:
        raise RuntimeError(f"not every notebook was graded: {bad}")
    records = json.loads((course / "grading-results.json").read_text())["students"]
    results = next(iter(records.values()))["assignments"]
    lost = {f"{name} {task}": score for name, result in results.items() for task, score in result["tasks"].items()
            if score[0] != score[1]}
    if lost:  # A figure of a run that stopped early would flatter the judge.
        raise RuntimeError(f"the reference solutions lost points ({'judged' if judge else 'in kernel'}): {lost}")
    return spent, {name: result["seconds"]["judge cpu"] for name, result in results.items()}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python bench/bench_judge_cost.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="only these notebooks (default: all)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.assignments) - set(ASSIGNMENTS))
    if unknown:
        parser.error(f"no such notebook: {', '.join(unknown)} (there are {', '.join(ASSIGNMENTS)})")
    chosen = args.assignments or list(ASSIGNMENTS)
    with tempfile.TemporaryDirectory() as scratch:
        course = copy_course(Path(scratch) / "course")
        folder = Path(scratch) / "submissions"
        for assignment in chosen:
            path = folder / "student000" / assignment / f"{assignment}.ipynb"
            path.parent.mkdir(parents=True)
            nbformat.write(sample_submissions(assignment, course)["reference_solution"], path)
        print(f"one correct student; machine-seconds (cgroup); load average {os.getloadavg()[0]:.1f} at the start")
        print(f"{'notebook':<24} {'judged':>8} {'in kernel':>10} {'judge adds':>11} {'judge process':>14}")
        rows = [(assignment, [assignment]) for assignment in chosen]
        if len(chosen) > 1:
            rows.append(("all in one run", chosen))
        for name, assignments in rows:
            judged, judge_cpu = run(course, folder, assignments, True)
            plain, _ = run(course, folder, assignments, False)
            print(f"{name:<24} {judged:8.1f} {plain:10.1f} {judged - plain:+11.1f} {sum(judge_cpu.values()):14.1f}"
                  f"   ({judged / plain:.2f}x)", flush=True)
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
