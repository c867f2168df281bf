"""Autograding cost, counted by the kernel's CPU accounting: machine-seconds per student, where they go, how it scales.

    python bench/bench_autograde.py [--students 4] [--before a44f3ef] [--slurm] [--plot PNG] [--json FILE]

Everything is measured in one run, on scratch copies of the course, with the reference solution of
every notebook as each student's submission (every notebook, with feedback, ``--force``).
Machine-seconds are counted by a cgroup that holds this benchmark and every process it starts
(grading/isolation/limits.py: `accounting_group`; ``cpuacct.usage`` on cgroup v1, ``cpu.stat`` on v2): the
sandboxed kernels too, which ``getrusage`` never sees (their CPU never comes back through
``wait()``). Where no cgroup can be made, it says so and falls back to ``getrusage``, which then
undercounts.

1. nbgrader's own route, for one student: one ``nbgrader autograde`` and one ``nbgrader
   generate_feedback`` process per notebook (the course's nbgrader_config.py, no sandbox).
2. The grading command before (``--before REF``, default a44f3ef, the commit before the cost was cut;
   ``none`` skips it), run from a ``git archive`` of that commit, and now: ``--jobs 1`` on one
   student and on ``--students``; the difference gives the machine-seconds per student c (the
   slope) and the fixed cost of a run F (the intercept). Each code (before, now, and 7.'s) first grades one
   student once, which builds its cache (grading/pipeline/cache.py: the scratch course is kept by a hash of the
   code), so that its measured runs find it built, as on a machine that grades often; this code's first run's
   extra cost is printed.
3. Where a student's machine-seconds go, per student and per notebook: the warm process (imports,
   once per student), kernel start, the notebook's cells, nbgrader's steps and feedback in the
   grading process (each from the grading command's own report: the student's cgroup and the
   worker's ``getrusage``), and the rest (worker start-up, placing, the run's bookkeeping). Before,
   the kernel's share is one cold sandboxed kernel start (measured here) per notebook plus the rest.
4. ``--jobs 2`` against ``--jobs 1`` on the same students: the throughput ratio. Each is run twice, in
   turn (1, 2, 1, 2), and the ratio is that of their summed wall times: this shared machine's speed drifts
   from one minute to the next, and one pair of runs moved the ratio by about 0.1 either way.
5. With ``--slurm`` and a cluster (``SLURM_CONF``): a 3-shard array of deploy/slurm/grade.sbatch and its
   merge against ``--jobs 2`` locally.
6. The projection for 500 students: ``T = F + S * c / (P * e)``, e the parallel efficiency of 4.
7. What the judge costs: the same code and notebooks with every test cell in the student's kernel
   (``c.GradingOptions.judge = False``, as plain nbgrader runs them), on 1 and ``--students`` students.

It prints every figure the README's performance rows need, the targets as ratios (at most 20
machine-seconds per student; ``--jobs 2`` at least 1.7x on 4 students), and with ``--plot`` draws
machine-seconds per student by component, before and now. Run it on a quiet machine: about 12
minutes on 2 cores with the defaults.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
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
from autograde_report import plot, report  # noqa: E402 - bench/ is on sys.path when run as a script.
from conftest import copy_course  # noqa: E402

from grading.authoring.build import build  # noqa: E402
from grading.authoring.samples import sample_submissions  # noqa: E402
from grading.config import ASSIGNMENTS  # noqa: E402
from grading.isolation import limits, sandbox, zygote  # noqa: E402
from grading.pipeline.nbgrader_cli import nbgrader  # noqa: E402


class Meter:
    """Machine-seconds of this process and everything it starts, from a cgroup of its own (or rusage)."""

    def __init__(self) -> None:
        self.group = limits.accounting_group(f"course-bench-{os.getpid()}")
        if self.group is not None:
            limits.join(self.group)
        self.how = (f"cgroup CPU accounting ({self.group})" if self.group is not None else
                    "getrusage, which misses the sandboxed kernels (no cgroup could be made here)")

    def read(self) -> float:
        if self.group is not None:
            return limits.cpu_seconds([self.group])
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    def close(self) -> None:
        if self.group is not None:
            limits.join(self.group.parent)  # Out again, so that the group can be removed.
            limits.kill_and_remove([str(self.group)])


def write_students(folder: Path, course: Path, count: int) -> Path:
    for assignment in ASSIGNMENTS:
        notebook = sample_submissions(assignment, course)["reference_solution"]
        for i in range(count):
            path = folder / f"student{i:03d}" / assignment / f"{assignment}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(notebook, path)
    return folder


def nbgrader_route(meter: Meter, scratch: Path) -> dict:
    """One student, one nbgrader process per notebook and per feedback: machine-seconds by step."""
    course = copy_course(scratch / "nbgrader-route")
    build(course, ASSIGNMENTS)
    for assignment in ASSIGNMENTS:
        target = course / "submitted" / "student000" / assignment / f"{assignment}.ipynb"
        target.parent.mkdir(parents=True)
        nbformat.write(sample_submissions(assignment, course)["reference_solution"], target)
    spent = {"autograde": 0.0, "feedback": 0.0}
    started = time.perf_counter()
    for assignment in ASSIGNMENTS:
        for step, key in (("autograde", "autograde"), ("generate_feedback", "feedback")):
            before = meter.read()
            run = nbgrader([step, assignment, "--student", "student000", "--force"], course, autograding=True)
            if run.returncode != 0:
                raise RuntimeError(f"nbgrader {step} {assignment}: {run.output[-500:]}")
            spent[key] += meter.read() - before
    return {"machine-s": sum(spent.values()), "wall": time.perf_counter() - started, **spent}


def grading_command(meter: Meter, code: Path, folder: Path, output: Path, jobs: int, env: dict) -> dict:
    """Run ``python -m grading.grade`` from ``code``; machine-seconds, wall, and the fixed part it logs."""
    command = [sys.executable, "-m", "grading.grade", str(folder), "--output", str(output), "--jobs", str(jobs),
               "--force"]
    start_cpu, started = meter.read(), time.perf_counter()
    marks = {}
    with subprocess.Popen(command, cwd=code, env={**env, "PYTHONPATH": str(code)}, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True) as process:
        for line in process.stdout:
            # Ready to grade (scratch course, placing, probe), and the last student graded.
            if line.startswith(("isolation:", "WARNING: grading without isolation")):
                marks.setdefault("ready", meter.read())
            elif line.startswith("student"):
                marks["last student"] = meter.read()
            elif line.startswith("merged"):
                marks["merged"] = meter.read()
    if process.returncode != 0:
        raise RuntimeError(f"the grading command failed in {code}")
    end_cpu, wall = meter.read(), time.perf_counter() - started
    records = json.loads((output / "grading-results.json").read_text())["students"]
    # A notebook the scan flags for a look is still graded; one without scores was not.
    ungraded = sorted({result["status"] for record in records.values() for result in record["assignments"].values()
                       if not result.get("tasks")})
    if ungraded:
        raise RuntimeError(f"not every notebook was graded: {ungraded[:3]}")
    return {"machine-s": end_cpu - start_cpu, "wall": wall, "students": len(records), "jobs": jobs,
            "before grading": marks.get("ready", start_cpu) - start_cpu,
            "merge and export": end_cpu - marks.get("last student", end_cpu), "records": records}


def cold_kernel_start(meter: Meter, scratch: Path) -> float:
    """Machine-seconds of one sandboxed Python that imports what a kernel imports (median of 3)."""
    imports = f"import importlib\nfor name in {list(zygote.PRELOAD)!r}: importlib.import_module(name)\nimport course"
    sockets = scratch / "cold-sockets"
    sockets.mkdir()
    uid = sandbox.FIRST_UID - 1 if os.geteuid() == 0 else None
    plan = sandbox.Plan(sandbox=sandbox.bwrap_path() is not None, socket_dir=str(sockets),
                        kept=sandbox.kept_folders(), uid=uid, environment={"OMP_NUM_THREADS": "1"})
    plan_file = plan.write(scratch / "cold-plan.json")
    spent = []
    for _ in range(3):
        before = meter.read()
        subprocess.run([sys.executable, sandbox.__file__, str(plan_file), "--", sys.executable, "-c", imports],
                       check=True, capture_output=True)
        spent.append(meter.read() - before)
    return sorted(spent)[1]


def slurm(meter: Meter, folder: Path, scratch: Path) -> float | None:
    """Wall seconds of a 3-shard array of grade.sbatch plus its merge, or None without a cluster."""
    if not os.environ.get("SLURM_CONF") or shutil.which("sbatch") is None:
        return None
    output = scratch / "slurm-output"
    output.mkdir()
    script = str(ROOT / "deploy" / "slurm" / "grade.sbatch")
    env = {**os.environ, "COURSE_DIR": str(ROOT)}
    started = time.perf_counter()
    array = subprocess.run(["sbatch", "--parsable", "--wait", "--array=1-3", f"--output={output}/%a.log", script,
                            str(folder), str(output), "--force"], capture_output=True, text=True, env=env, check=True)
    subprocess.run(["sbatch", "--wait", f"--dependency=afterok:{array.stdout.strip().split(';')[0]}",
                    f"--output={output}/merge.log", script, "--merge", str(output)], env=env, check=True,
                   capture_output=True)
    return time.perf_counter() - started


def export(ref: str, target: Path) -> Path:
    """The repository at commit ``ref``, as files (its committed release/ included).

    Its ``course`` package is left out: the environment's (this checkout's) is the one a sandbox
    can import, and the one its probe then checks.
    """
    target.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    shutil.rmtree(target / "course")
    return target


def without_the_judge(target: Path) -> Path:
    """This checkout's code and notebooks (uncommitted changes of tracked files included), set to run every test
    cell in the student's kernel, as plain nbgrader does (``c.GradingOptions.judge = False``): what the judge
    replaces, on the same tests."""
    snapshot = subprocess.run(["git", "-C", str(ROOT), "stash", "create"], capture_output=True, text=True,
                              check=True).stdout.strip()
    code = export(snapshot or "HEAD", target)
    with open(code / "nbgrader_config.py", "a", encoding="utf-8") as config:
        config.write("\n# bench/bench_autograde.py: every test cell in the kernel, to measure what the judge costs.\n"
                     "c.GradingOptions.judge = False\n")
    return code


def measure(args, meter: Meter, scratch: Path) -> dict:
    """Every run of the benchmark, in order; returns their figures."""
    env = {**os.environ, "COURSE_GRADING_CACHE": str(scratch / "cache")}  # Empty: the first run builds it.
    one = write_students(scratch / "one-student", ROOT, 1)
    many = write_students(scratch / "students", ROOT, args.students)
    runs = [("nbgrader route", lambda: nbgrader_route(meter, scratch)),
            ("cold kernel start", lambda: cold_kernel_start(meter, scratch))]
    # Each code's first run builds its own cache (the scratch course is kept by a hash of the code): each code
    # grades one student once before its measured runs, or its one-student run would pay that build, and its
    # slope (the figure per student) would come out too low by a third of it.
    if args.before != "none":
        code = export(args.before, scratch / "before-code")
        runs += [("before, first run", lambda: grading_command(meter, code, one, scratch / "before-first", 1, env)),
                 ("before, 1 student", lambda: grading_command(meter, code, one, scratch / "before-1", 1, env)),
                 ("before", lambda: grading_command(meter, code, many, scratch / "before-n", 1, env))]
    runs += [("first run on this machine", lambda: grading_command(meter, ROOT, one, scratch / "first", 1, env)),
             ("now, 1 student", lambda: grading_command(meter, ROOT, one, scratch / "now-1", 1, env)),
             ("now", lambda: grading_command(meter, ROOT, many, scratch / "now-n", 1, env)),
             ("now, --jobs 2", lambda: grading_command(meter, ROOT, many, scratch / "now-jobs2", 2, env)),
             ("now, again", lambda: grading_command(meter, ROOT, many, scratch / "now-n-again", 1, env)),
             ("now, --jobs 2, again", lambda: grading_command(meter, ROOT, many, scratch / "now-jobs2-again", 2,
                                                              env))]
    plain = without_the_judge(scratch / "no-judge-code")
    runs += [("no judge, first run", lambda: grading_command(meter, plain, one, scratch / "no-judge-first", 1, env)),
             ("no judge, 1 student", lambda: grading_command(meter, plain, one, scratch / "no-judge-1", 1, env)),
             ("no judge", lambda: grading_command(meter, plain, many, scratch / "no-judge-n", 1, env))]
    found = {"slurm": None}
    for name, run in runs:
        print(f"{datetime.now():%H:%M:%S} measuring: {name}", file=sys.stderr, flush=True)
        found[name] = run()
    if args.slurm:
        found["slurm"] = slurm(meter, many, scratch)
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=4)
    parser.add_argument("--before", default="a44f3ef", help="the commit to compare with ('none': skip)")
    parser.add_argument("--slurm", action="store_true", help="also grade through the Slurm cluster of SLURM_CONF")
    parser.add_argument("--plot", type=Path, default=ROOT / "docs" / "grading-cost.png",
                        help="where to draw machine-seconds per student by component (the README shows "
                             "docs/grading-cost.png; 'none': no plot)")
    parser.add_argument("--json", type=Path, default=None, help="write the summary as JSON")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)
    if args.students < 2:
        parser.error("--students must be at least 2 (the cost per student is a slope)")
    meter = Meter()
    try:
        with tempfile.TemporaryDirectory() as folder:
            found = measure(args, meter, Path(folder))
    finally:
        meter.close()
    summary = report(found, args.students, meter.how)
    if str(args.plot) != "none":
        plot(summary, args.plot)
        print(f"\nplot: {args.plot}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
