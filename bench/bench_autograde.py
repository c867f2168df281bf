"""Autograding cost: machine-seconds per student for the whole course, and how it scales.

    python bench/bench_autograde.py [--students 4] [--slurm]

Everything is measured in one run, on scratch copies of the course, with the reference solution of
every notebook as each student's submission:

1. the baseline, the way grading ran before (and nbgrader runs): one ``nbgrader autograde`` process
   per notebook and one ``nbgrader generate_feedback`` process per notebook, for one student;
2. the grading command (``--jobs 1``) on ``--students`` students, with the sandbox and feedback:
   machine-seconds (CPU seconds of every process it started, kernels included) per student, and
   where they go;
3. the same students with ``--jobs 2`` against ``--jobs 1``: the throughput ratio;
4. with ``--slurm`` and a cluster (``SLURM_CONF``; deploy/slurm/one-node-cluster.sh starts one): the
   same students as a 3-shard array of deploy/slurm/grade.sbatch plus its merge against ``--jobs N``
   locally;
5. the projection for 500 students on one 32-core server and on 20 such nodes:
   ``T = F + S * c / (P * e)`` with S students, c machine-seconds per student, P cores in all, e the
   parallel efficiency measured in 3 (speed-up / jobs) and F the fixed cost of a run measured in 2.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
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
from grading.grade import GradingOptions, grade  # noqa: E402
from grading.nbgrader_cli import nbgrader  # noqa: E402
from grading.samples import sample_submissions  # noqa: E402


def _cpu() -> float:
    """CPU seconds of this process and of every child it waited for (their children included)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _write_students(folder: Path, course: Path, count: int) -> None:
    for assignment in ASSIGNMENTS:
        notebook = sample_submissions(assignment, course)["reference_solution"]
        for i in range(count):
            path = folder / f"student{i:03d}" / assignment / f"{assignment}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(notebook, path)


def baseline(scratch: Path) -> tuple[float, float]:
    """One student, one nbgrader process per notebook and per feedback: (wall, machine-seconds)."""
    course = copy_course(scratch / "baseline")
    build(course, ASSIGNMENTS)
    for assignment in ASSIGNMENTS:
        target = course / "submitted" / "student000" / assignment / f"{assignment}.ipynb"
        target.parent.mkdir(parents=True)
        nbformat.write(sample_submissions(assignment, course)["reference_solution"], target)
    wall, cpu = time.perf_counter(), _cpu()
    for assignment in ASSIGNMENTS:
        for step in ("autograde", "generate_feedback"):
            run = nbgrader([step, assignment, "--student", "student000", "--force"], course, autograding=True)
            if run.returncode != 0:
                raise RuntimeError(f"nbgrader {step} {assignment}: {run.output[-500:]}")
    return time.perf_counter() - wall, _cpu() - cpu


def graded(scratch: Path, name: str, students: int, jobs: int) -> dict:
    """The grading command on ``students`` students: wall, machine-seconds, fixed costs, breakdown."""
    course = copy_course(scratch / name)
    folder = scratch / f"{name}-submissions"
    _write_students(folder, course, students)
    stamps: list[tuple[float, str]] = []
    wall, cpu = time.perf_counter(), _cpu()
    rows = grade(GradingOptions(folder=folder, root=course, jobs=jobs, force=True, progress=False),
                 log=lambda line: stamps.append((time.perf_counter(), line)))
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    bad = [status for _, status in rows if not status.startswith("graded")]
    if bad:
        raise RuntimeError(f"not every notebook was graded: {bad[:3]}")
    started = stamps[0][0]
    # Ready to grade: the scratch course is built, the submissions placed, the sandbox probed.
    first = next(t for t, line in stamps if line.startswith(("isolation:", "WARNING: grading without isolation")))
    merged = next(t for t, line in stamps if line.startswith("merged"))
    last = max(t for t, line in stamps if line.startswith("student"))
    records = json.loads((course / "grading-results.json").read_text())["students"]
    seconds = {"wall: autograde (kernel included)": [], "wall: feedback": [], "cpu: the kernel": [],
               "cpu: nbgrader's autograde in the worker": [], "cpu: feedback in the worker": []}
    keys = {"wall: autograde (kernel included)": "autograde", "wall: feedback": "feedback",
            "cpu: the kernel": "kernel cpu", "cpu: nbgrader's autograde in the worker": "nbgrader cpu",
            "cpu: feedback in the worker": "feedback cpu"}
    for record in records.values():
        for result in record["assignments"].values():
            for key, name in keys.items():
                seconds[key].append(result["seconds"][name])
    return {"wall": wall, "cpu": cpu, "students": students, "jobs": jobs,
            "before grading starts": first - started, "merge and export": merged - last,
            "per notebook": {key: statistics.median(values) for key, values in seconds.items()}}


def slurm(scratch: Path, students: int) -> float | None:
    """Wall seconds of a 3-shard array of grade.sbatch plus its merge, or None without a cluster."""
    if not os.environ.get("SLURM_CONF") or shutil.which("sbatch") is None:
        return None
    folder, output = scratch / "slurm-submissions", scratch / "slurm-output"
    output.mkdir()
    _write_students(folder, ROOT, students)
    script = str(ROOT / "deploy" / "slurm" / "grade.sbatch")
    env = {**os.environ, "COURSE_DIR": str(ROOT)}
    started = time.perf_counter()
    array = subprocess.run(["sbatch", "--parsable", "--wait", "--array=1-3", f"--output={output}/%a.log", script,
                            str(folder), str(output), "--force"], capture_output=True, text=True, env=env, check=True)
    subprocess.run(["sbatch", "--wait", f"--dependency=afterok:{array.stdout.strip().split(';')[0]}",
                    f"--output={output}/merge.log", script, "--merge", str(output)], env=env, check=True,
                   capture_output=True)
    return time.perf_counter() - started


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=4)
    parser.add_argument("--slurm", action="store_true", help="also grade through the Slurm cluster of SLURM_CONF")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        old_wall, old_cpu = baseline(scratch)
        one = graded(scratch, "jobs1", args.students, 1)
        two = graded(scratch, "jobs2", args.students, 2)
        cluster = slurm(scratch, args.students) if args.slurm else None
    fixed = one["before grading starts"] + one["merge and export"]
    per_student = one["cpu"] / one["students"]
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end; "
          f"{datetime.now():%Y-%m-%d}")
    print(f"\n1. one student's whole course ({len(ASSIGNMENTS)} notebooks, with feedback)")
    print(f"   baseline, one nbgrader process per notebook and per feedback: {old_cpu:6.1f} machine-s "
          f"({old_wall:.1f} s wall)")
    print(f"   grading command, --jobs 1, {one['students']} students:             {per_student:6.1f} machine-s "
          f"per student ({one['wall'] / one['students']:.1f} s wall)   ratio {old_cpu / per_student:.2f}x "
          "(target: at most 20 machine-s)")
    print(f"   fixed cost of a run: {one['before grading starts']:.1f} s before grading starts "
          f"(scratch course, placing, sandbox probe), {one['merge and export']:.1f} s to merge and export")
    print("   per notebook (medians; seconds):")
    for key, value in one["per notebook"].items():
        print(f"     {key:<52} {value:5.2f}")
    speedup = one["wall"] / two["wall"]
    print(f"\n2. throughput, --jobs 2 against --jobs 1 on {args.students} students: {speedup:.2f}x "
          f"({one['wall']:.0f} s and {two['wall']:.0f} s; target: at least 1.7x on 2 cores)")
    if cluster is not None:
        print(f"\n3. Slurm, 3 shards and a merge job: {cluster:.0f} s against {two['wall']:.0f} s with --jobs 2 "
              f"locally: {(cluster - two['wall']) / 3:+.1f} s per shard")
    efficiency = min(1.0, speedup / 2)
    print(f"\n4. 500 students: T = F + S * c / (P * e), c = {per_student:.1f} machine-s, e = {efficiency:.2f}, "
          f"F = {fixed:.0f} s")
    for place, cores in (("one 32-core server", 32), ("20 nodes of 32 cores", 640)):
        minutes = (fixed + 500 * per_student / (cores * efficiency)) / 60
        print(f"   {place:<22} {minutes:6.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
