"""One grading job's process: autogrades students' notebooks and writes their feedback, with nbgrader in-process.

    python -m grading.pipeline.worker SETTINGS.json EVENTS_FD

SETTINGS.json holds the grading command's options (`grading.pipeline.options.GradingOptions`, whole) and what
belongs to this run: the scratch course, the random tag of the skipped cells, the job's gradebook.

The grading command (grading/pipeline/jobs.py) starts one worker per job and keeps it for every student
of that job: nbgrader, nbconvert and their imports load once, not once per notebook. Requests come
on stdin, one JSON line per student (``{"student": ..., "assignments": [...], "plan": ...}``);
for each notebook the worker writes a ``start`` event, runs nbgrader's autograde (the student's
kernel starts through the plan's sandbox and limits; a judge process started for the student runs
every test cell, grading/judge/), reads the scores back, writes the feedback, and writes a
``done`` event with what happened; then ``finished`` (grading/pipeline/events.py: typed, JSON lines on
their own file descriptor, so nothing a kernel prints can mix into them).

The command enforces the time limit of each notebook by killing the worker, and starts a new one
for the rest: a worker holds no state that a student's code could reach.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import traceback
from pathlib import Path

from grading.pipeline.events import Crashed, Done, Event, Finished, Ready, Start, encode


def _one_engine_per_database() -> None:
    """Make nbgrader's gradebooks in this process share one SQLAlchemy engine per database.

    nbgrader opens a gradebook, and with it a new engine, about eleven times per notebook. A new engine
    compiles every query again (SQLAlchemy keeps compiled queries per engine) and opens a new connection;
    shared, each query compiles once per worker. The database and every query are the same.
    """
    import functools

    from nbgrader import api

    if not hasattr(api.create_engine, "cache_info"):
        api.create_engine = functools.cache(api.create_engine)


def _api(settings: dict, options):
    """nbgrader's API on the scratch course, with the command's options and the job's own gradebook."""
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=settings["course"]).load_config()
    config.CourseDirectory.root = settings["course"]
    config.CourseDirectory.db_url = f"sqlite:///{settings['db']}"
    config.Execute.skip_cells_with_tag = settings["skip_tag"]
    if options.cell_timeout:
        config.Execute.timeout = options.cell_timeout
    config.JudgedExecute.judge = options.judge
    config.SaveVerdicts.judged = options.judge
    # Sanitizing stays the last step of autograding in every worker (nbgrader_config.py).
    config.SanitizeNotebook.enabled = options.sanitize
    config.NbGraderAPI.log_level = "WARN"
    config.Exchange.root = str(Path(settings["course"]) / "exchange")  # Not used; nbgrader wants it to exist.
    _one_engine_per_database()
    return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)


def _scores(db: str, assignment: str, student: str) -> dict[str, list[float]] | None:
    from grading.pipeline.report import read_scores

    try:
        return {label: list(pair) for label, pair in read_scores(Path(db), assignment, student).tasks.items()}
    except LookupError:
        return None


def _cpu() -> float:
    """CPU seconds of this process (its threads included; the kernels are counted by their cgroup)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def grade_student(api, settings: dict, options, request: dict, emit) -> None:
    """Autograde (and give feedback on) each of the request's notebooks, emitting events.

    The student's kernels are forked by the student's warm process (grading/isolation/kernels.py), and one
    judge process (grading/judge/) serves all of the student's notebooks. Both end with the student,
    or with this process when the grading command kills it past the time limit. The judge works
    for the student, so its CPU time counts in the student's cgroup and quota (grading/isolation/limits.py:
    `join_cpu`).
    """
    from grading.isolation import kernels
    from grading.isolation.limits import join_cpu
    from grading.isolation.sandbox import Plan
    from grading.judge import client

    if request.get("plan"):
        os.environ[kernels.PLAN_VARIABLE] = request["plan"]
    else:
        os.environ.pop(kernels.PLAN_VARIABLE, None)
    cgroups = Plan.read(request["plan"]).cgroups if request.get("plan") else []
    judge, counted = None, False
    try:
        if options.judge:
            judge = client.JudgeProcess.start(Path(settings["db"]).with_suffix(".judge.log"))
            counted = join_cpu(cgroups, judge.process.pid)
        client.use(judge)
        for assignment in request["assignments"]:
            _grade_notebook(api, settings, options, request["student"], assignment, judge, counted, cgroups, emit)
    finally:
        client.use(None)
        if judge is not None:
            judge.stop()
        kernels.stop_warm_processes()
    emit(Finished())


def _grade_notebook(api, settings: dict, options, student: str, assignment: str, judge, counted: bool,
                    cgroups: list[str], emit) -> None:
    """Autograde one notebook and write its feedback; ``counted``: the student's cgroup counts the judge's CPU."""
    from grading.isolation import kernels
    from grading.pipeline import liveness

    emit(Start(assignment))
    liveness.reset()
    started, cpu, judge_cpu = time.perf_counter(), _cpu(), judge.cpu_seconds() if judge else 0.0
    with kernels.metered(cgroups, judge.cpu_seconds if counted else None) as student_cpu:
        result = api.autograde(assignment, student, force=True, create=True)
    graded, graded_cpu = time.perf_counter(), _cpu()
    stopped = liveness.stops()
    judged_cpu = judge.cpu_seconds() if judge else 0.0
    scores = _scores(settings["db"], assignment, student)
    feedback = None
    if options.feedback and scores:
        feedback = api.generate_feedback(assignment, student, force=True)
    done_cpu = _cpu()
    emit(Done(assignment, ok=bool(result.get("success")), log=result.get("log", "")[-20000:],
              error=(result.get("error") or "")[-4000:], scores=scores,
              feedback_error=None if feedback is None or feedback.get("success")
              else (feedback.get("error") or feedback.get("log") or "")[-2000:],
              judge_error=judge.failure if judge is not None else None,
              kernel_stopped=stopped[0] if stopped else None,
              # Wall seconds; CPU seconds of this process (nbgrader's steps, feedback), of the judge and,
              # from the student's cgroup without the judge's part, of the student's processes
              # (grading/isolation/kernels.py: `metered`).
              seconds={"autograde": graded - started, "feedback": time.perf_counter() - graded,
                       "nbgrader cpu": graded_cpu - cpu, "feedback cpu": done_cpu - graded_cpu,
                       "judge cpu": judged_cpu - judge_cpu, **student_cpu}))


def main(argv: list[str]) -> int:
    from grading.pipeline.options import GradingOptions

    settings = json.loads(Path(argv[0]).read_text())
    options = GradingOptions.from_json(settings["options"])
    events = os.fdopen(int(argv[1]), "w", buffering=1, encoding="utf-8")
    os.set_inheritable(events.fileno(), False)  # Kernels start with every inheritable descriptor.

    def emit(event: Event) -> None:
        events.write(encode(event).decode())
        events.flush()

    # nbgrader runs alembic as a program; the kernel's threads are set per kernel by its plan.
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    os.environ["COURSE_AUTOGRADE"] = "1"
    os.environ["PYTHONWARNINGS"] = "ignore"
    os.chdir(settings["course"])
    if options.judge:
        from grading.judge import client

        # Each student's judge is forked from one process that imports torch and the rest once, meanwhile.
        client.start_spawner(Path(settings["db"]).with_suffix(".judge.log"))
    api = _api(settings, options)
    emit(Ready())
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            grade_student(api, settings, options, json.loads(line), emit)
        except Exception:  # noqa: BLE001 - reported to the command, which marks the notebook for a look.
            emit(Crashed(traceback.format_exc()[-4000:]))
    if options.judge:
        client.stop_spawner()
    from grading.isolation import kernels

    kernels.stop_warm_processes(shared_too=True)  # The one that students share without the sandbox.
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
