"""The grading pipeline's run, from collect to merge, in the order of grading/pipeline/stages.py.

`grade` collects this shard's submissions (and skips students whose files did not change since they were
graded), places them in a scratch course, probes the sandbox and sets up the cgroups once, grades each
student with one of the ``--jobs`` grading processes (grading/pipeline/jobs.py) in the student's sandbox and
limits, grades again alone every notebook that was crowded out of its CPU, copies the jobs' gradebooks into the
shard's, and merges. Whatever one submission does or contains, the others are graded, what the batch made is
removed (grading/pipeline/cleanup.py) and the CSV is written: a failure becomes that submission's status.
"""

from __future__ import annotations

import functools
import hashlib
import os
import queue
import re
import secrets
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from grading.config import ASSIGNMENTS, ROOT
from grading.isolation import limits as cgroup_limits
from grading.isolation import sandbox
from grading.judge.server import JUDGE_MEMORY_BYTES
from grading.pipeline import cache
from grading.pipeline import course as scratch
from grading.pipeline.cleanup import attempt, remove_tree
from grading.pipeline.collect import Submission, collect, file_digest
from grading.pipeline.collect import describe as _describe
from grading.pipeline.events import Done, Failed
from grading.pipeline.jobs import Job, status_of
from grading.pipeline.merge import (
    RESULTS,
    SHARDS,
    copy_students,
    merge,
    newest_records,
    read_results,
    record_problems,
    rows_of,
    write_results,
)
from grading.pipeline.options import ONE_THREAD, GradingOptions, shard_of
from grading.pipeline.prepare import place
from grading.pipeline.report import Scores, maxima
from grading.pipeline.zipped import submissions_folder


def grade(options: GradingOptions, log=print) -> list[tuple[Scores, str]]:
    """Grade this run's shard of ``options.folder``; return (scores, status) rows of its students.

    With one shard (the default) the result is merged into the output folder at once (its
    ``gradebook.db``, grades CSV and statuses); with more, ``python -m grading.pipeline.merge`` does that.
    """
    assignments = options.assignments or ASSIGNMENTS
    destination = options.destination
    k, n = options.shard
    max_bytes = int(options.max_notebook_mb * 2**20) if options.max_notebook_mb else None
    # A zip (as LMSs deliver) is read into a scratch folder, without links, absolute or ".." paths.
    with submissions_folder(options.folder, max_bytes, log) as (folder, refused):
        submissions, problems = collect(folder, assignments, options.mapping, refused,
                                        others=[a for a in ASSIGNMENTS if a not in assignments])
        for problem in problems:
            log(f"skipped: {problem}")
        everyone = sorted({s.student for s in submissions})
        uids = sandbox.student_uids(everyone)
        mine = [s for s in submissions if shard_of(s.student, n) == k]
        by_student: dict[str, list[Submission]] = {}
        for submission in sorted(mine, key=lambda s: (s.student, s.assignment)):
            by_student.setdefault(submission.student, []).append(submission)
        shard_dir = destination / SHARDS / f"{k}-of-{n}"
        todo, digests = _changed(options, by_student, max_bytes, log)
        jobs = min(options.jobs, max(len(todo), 1))
        log(f"shard {k}/{n}: {len(by_student)} of {len(everyone)} student(s); grading {len(todo)} with {jobs} job(s)")
        too_much = memory_warning(jobs, options.memory_limit_gb)
        if too_much:
            log(too_much)
        if todo:
            _grade_all(options, [s for own in todo.values() for s in own], todo, digests, uids, shard_dir, log)
        elif not (shard_dir / RESULTS).exists():
            write_results(shard_dir / RESULTS, {}, shard=shard_dir.name)  # The shard ran, with no one to grade.
        record_problems(shard_dir / RESULTS, problems)  # Each gets a row of statuses.csv at the merge.
    if n == 1:
        rows = merge(destination, options.csv_path, log)
    else:
        rows = rows_of(read_results(shard_dir / RESULTS))
        log(f"shard {k}/{n} done; when every shard is done: python -m grading.pipeline.merge {destination}")
    return [row for row in rows if row[0].student in by_student]


def memory_warning(jobs: int, memory_limit_gb: float | None, machine_bytes: int | None = None) -> str | None:
    """A warning when ``jobs`` students who each hold their memory limit at the same time, with their judges (each
    may take `JUDGE_MEMORY_BYTES` more), would need more memory than the machine has; None when they fit, or when
    there is no limit to count."""
    if not memory_limit_gb:
        return None
    if machine_bytes is None:
        try:
            machine_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (OSError, ValueError):
            return None
    per_student = memory_limit_gb * 2**30 + JUDGE_MEMORY_BYTES
    if jobs * per_student <= machine_bytes:
        return None
    need, have = jobs * per_student / 2**30, machine_bytes / 2**30
    return (f"warning: {jobs} job(s) x ({memory_limit_gb:g} GiB per student + {JUDGE_MEMORY_BYTES / 2**30:g} GiB for "
            f"their judge) = {need:.0f} GiB, more than this machine's {have:.0f} GiB: students who hold their memory "
            "limit at the same time could exhaust it (lower --jobs or --memory-limit-gb)")


def _changed(options: GradingOptions, by_student: dict[str, list[Submission]], max_bytes: int | None, log
             ) -> tuple[dict[str, list[Submission]], dict[str, str]]:
    """The students to grade (their files changed since they were graded, or ``--force``), and every content hash."""
    previous = {student: record for student, (record, _) in
                newest_records(options.destination, log=lambda line: None).items()}
    digests, todo = {}, {}
    for student, own in by_student.items():
        try:
            digests[student] = content_hash(own, options.root, max_bytes)
        except OSError as error:
            digests[student] = f"unreadable: {error}"
        if not options.force and previous.get(student, {}).get("hash") == digests[student]:
            log(f"{student}: unchanged since it was graded; skipped (--force regrades)")
        else:
            todo[student] = own
    return todo, digests


def content_hash(submissions: list[Submission], root: Path, max_bytes: int | None = None) -> str:
    """A hash of a student's submitted files and of what grades them (the source notebooks, the config).

    Colliding files (``rivals``) count with their names, so that keeping one of them regrades; the
    folder they are in does not count (a copied or moved folder is not regraded).
    """
    digest = hashlib.sha256()
    for submission in sorted(submissions, key=lambda s: s.assignment):
        source = root / "source" / submission.assignment / f"{submission.assignment}.ipynb"
        files = [submission.path, *(submission.rivals or [])]
        for part in (submission.assignment.encode(), *(path.name.encode() for path in files)):
            digest.update(hashlib.sha256(part).digest())
        for path in files:  # Read beneath the submissions folder, never through a link (grading/pipeline/collect.py).
            digest.update(file_digest(path, submission.root, submission.identity if path == submission.path else None,
                                      max_bytes))
        digest.update(hashlib.sha256(source.read_bytes() if source.exists() else b"").digest())
    config = root / "nbgrader_config.py"
    digest.update(config.read_bytes() if config.exists() else b"")
    return digest.hexdigest()


def _isolation(options: GradingOptions, uid: int | None, log) -> bool:
    """Whether kernels run in the sandbox: probe it once; ``on`` refuses to grade without it."""
    if options.isolation == "off":
        log("isolation: off (students' code runs as this user and can read and write what it can)")
        return False
    with tempfile.TemporaryDirectory(prefix="course-probe-") as sockets:
        plan = sandbox.Plan(sandbox=True, socket_dir=sockets, kept=sandbox.kept_folders(), uid=uid)
        # Probed once per machine and configuration (grading/pipeline/cache.py).
        problem = cache.probe_once(plan, [str(options.root), str(options.folder), str(options.destination),
                                          str(Path.home())])
    if problem:
        if options.isolation == "on":
            raise RuntimeError(f"the grading sandbox does not work here: {problem}")
        log(f"WARNING: grading without isolation: {problem}. Students' code can read source/ and solutions/ "
            "and write the gradebook; install bubblewrap (apt-get install bubblewrap) and allow user "
            "namespaces, or grade as root, to isolate it.")
        return False
    who = "its own uid per student" if uid is not None else "this user's uid in a user namespace"
    log(f"isolation: each kernel runs in a bubblewrap sandbox ({sandbox.bwrap_version()}) as {who}, "
        "without network, seeing only the Python environment and the course package")
    return True


def _grade_all(options: GradingOptions, submissions: list[Submission], todo: dict[str, list[Submission]],
               digests: dict[str, str], uids: dict[str, int], shard_dir: Path, log) -> None:
    for submission in submissions:
        for note in [] if submission.failure else submission.notes:
            log(f"{submission.student}/{submission.assignment}: {note}")
    course = scratch.prepare(options.root, sorted({s.assignment for s in submissions}))
    limits = cgroup_limits.Limits("rlimits")
    kernels = Path(tempfile.mkdtemp(prefix="course-kernels-", dir="/tmp" if os.path.isdir("/tmp") else None))
    jobs: list[Job] = []
    try:
        # A fresh random tag for this run: students cannot put it on a test cell in advance.
        skip_tag = "experiment-" + secrets.token_hex(16)
        place(submissions, course, skip_tag, int(options.max_notebook_mb * 2**20) if options.max_notebook_mb else None,
              options.prepare_timeout, options.jobs)
        for submission in submissions:
            if submission.failure:
                log(f"{submission.student}/{submission.assignment}: {submission.failure}")
        root_uid = sandbox.FIRST_UID - 1 if os.geteuid() == 0 else None
        sandbox_on = _isolation(options, root_uid, log)
        if not options.judge:
            log("WARNING: every test cell runs in the student's kernel (GradingOptions.judge = False): a submission "
                "can forge its score there; the judge (grading/judge/) is what prevents that.")
        if options.memory_limit_gb or options.max_processes or options.cpus_per_student:
            limits = cgroup_limits.setup(f"course-grading-{os.getpid()}-{secrets.token_hex(4)}")
            if limits.warning:
                log(limits.warning)
        count = min(options.jobs, len(todo))
        jobs = [Job(number, course, options, skip_tag, kernels / f"tmp-{number}") for number in range(1, count + 1)]
        free: queue.Queue[Job] = queue.Queue()
        for job in jobs:
            free.put(job)
        run = _Run(options, course, sandbox_on, limits, kernels, uids, free, log)
        records = _run_jobs(run, todo, digests, log)
        _retry_starved(run, todo, records, log)
        shard_dir.mkdir(parents=True, exist_ok=True)
        for job in jobs:
            job.ask_to_end()
        for job in jobs:
            job.stop(graceful=True)
            work = {student: [a for a, r in record["assignments"].items() if r.get("job") == job.number]
                    for student, record in records.items()}
            copy_students(job.db, shard_dir / "gradebook.db", {s: a for s, a in work.items() if a})
        for record in records.values():
            for result in record["assignments"].values():
                result.pop("job", None)
        stored = read_results(shard_dir / RESULTS)
        stored.update(records)
        write_results(shard_dir / RESULTS, stored, shard=shard_dir.name)
    finally:
        # Whatever a kernel left, cleaning up never stops the batch: a failure is a line in the log.
        for job in jobs:
            attempt(job.stop, f"stop grading process {job.number}", log)
        attempt(lambda: cgroup_limits.teardown(limits), "remove the cgroups", log)
        remove_tree(kernels, log)
        remove_tree(course, log)


@dataclass
class _Run:
    """What every job of one grading run shares."""

    options: GradingOptions
    course: Path  # The scratch course directory.
    sandbox_on: bool
    limits: cgroup_limits.Limits
    kernels: Path  # Holds each student's socket folder and plan, and each grading process's $TMPDIR.
    uids: dict[str, int]
    jobs: "queue.Queue[Job]"
    log: object


def _run_jobs(run: _Run, todo: dict[str, list[Submission]], digests: dict[str, str], log) -> dict[str, dict]:
    """Grade every student of ``todo`` with the run's jobs, with a progress bar on a terminal."""
    from tqdm import tqdm

    options = run.options
    show = options.progress if options.progress is not None else sys.stderr.isatty()
    records: dict[str, dict] = {}
    failures = 0
    with tqdm(total=len(todo), unit="student", disable=not show, dynamic_ncols=True) as bar, \
            ThreadPoolExecutor(max_workers=max(1, run.jobs.qsize())) as pool:
        say = bar.write if show and log is print else log
        futures = {pool.submit(_grade_student, run, student, own, digests[student]): student
                   for student, own in todo.items()}
        for future in as_completed(futures):
            student = futures[future]
            try:
                record = future.result()
            except Exception as error:  # noqa: BLE001 - one student never stops the batch.
                record = {"hash": digests[student], "graded_at": time.time(), "assignments": {
                    s.assignment: {"status": f"needs a manual look: grading failed: {_describe(error)}", "tasks": {}}
                    for s in todo[student]}}
            records[student] = record
            for assignment, result in sorted(record["assignments"].items()):
                total = sum(score for score, _ in result["tasks"].values())
                maximum = sum(m for _, m in result["tasks"].values())
                say(f"{student}/{assignment}: {result['status']}, {total:g}/{maximum:g}")
                failures += not (result["status"].startswith("graded") or result["status"].startswith("repaired"))
            bar.set_postfix_str(f"{failures} to look at")
            bar.update()
    return records


def _grade_student(run: _Run, student: str, submissions: list[Submission], digest: str) -> dict:
    """Grade one student's notebooks in the student's sandbox and cgroup; return the student's record."""
    options = run.options
    results = {s.assignment: {"status": s.failure, "tasks": {}} for s in submissions if s.failure}
    todo = [s for s in submissions if not s.failure]
    if todo:
        uid = run.uids[student] if run.sandbox_on and os.geteuid() == 0 else None
        index = str(run.uids[student] - sandbox.FIRST_UID)
        memory = int(options.memory_limit_gb * 2**30) if options.memory_limit_gb else None
        folders: list[str] = []
        sockets = run.kernels / index
        judge_sockets = run.kernels / f"judge-{index}"  # The grader's: the kernel sees it read-only.
        plan_file = run.kernels / f"plan-{index}.json"
        job = run.jobs.get()
        try:
            folders = cgroup_limits.student_cgroups(run.limits, index, memory, options.max_processes,
                                                    options.cpus_per_student,
                                                    None if job.core is None else {job.core})
            sockets.mkdir(mode=0o700)  # The grader's own: the sandbox never sees it.
            judge_sockets.mkdir(mode=0o755)
            sandbox.Plan(sandbox=run.sandbox_on, socket_dir=str(sockets), kept=sandbox.kept_folders(), uid=uid,
                         cgroups=folders, memory_bytes=memory, max_processes=options.max_processes,
                         tmpfs_bytes=options.tmpfs_mb << 20, environment=dict(ONE_THREAD),
                         judge_dir=str(judge_sockets)).write(plan_file)
            outcomes = job.grade(student, [s.assignment for s in todo], plan_file, options.student_timeout)
        except Exception as error:  # noqa: BLE001 - one student never stops the batch.
            outcomes = {s.assignment: Failed(_describe(error)) for s in todo}
        finally:
            run.jobs.put(job)
            attempt(lambda: cgroup_limits.kill_and_remove(folders), f"remove {student}'s cgroups", run.log)
            remove_tree(sockets, run.log)
            remove_tree(judge_sockets, run.log)
            attempt(lambda: plan_file.unlink(missing_ok=True), f"remove {plan_file}", run.log)
        for submission in todo:
            outcome = outcomes.get(submission.assignment, Failed("not graded"))
            done = outcome if isinstance(outcome, Done) else Done(submission.assignment, ok=False)
            # A notebook without scores (past the time limit, its grading process ended) keeps its real maximum.
            results[submission.assignment] = {"status": status_of(submission, outcome, options.student_timeout),
                                              "tasks": done.scores or unscored(run.course, submission.assignment),
                                              "job": job.number, "seconds": done.seconds,
                                              "fingerprint": submission.fingerprint or {}}
            scratch.publish(run.course, options.destination, student, submission.assignment)
    return {"hash": digest, "graded_at": time.time(), "assignments": results}


def unscored(course: Path, assignment: str) -> dict[str, list[float]]:
    """Every task of ``assignment`` at 0 of its points, as the scratch course's gradebook defines them ({} when it
    does not)."""
    return {label: [0.0, maximum] for label, maximum in _maxima(course, assignment).items()}


@functools.cache
def _maxima(course: Path, assignment: str) -> dict[str, float]:
    try:
        return maxima(course / "gradebook.db", assignment)
    except (LookupError, OSError):
        return {}


_LIMIT_SECONDS = re.compile(r"(?:past its|timed out after) (\d+(?:\.\d+)?) s\b")  # The limit a status names.


def starved(result: dict, cpus: float | None = 1.0, cell_limit: float | None = None) -> bool:
    """Whether a notebook hit a time limit while its kernel was crowded out by processes not the student's.

    A kernel that ran out of time on its own (a loop) ran more than it waited for a CPU; one that
    slept neither ran nor waited. One that waited longer than it ran was crowded out, and by
    others only if the student's processes together used less than half of their ``cpus`` quota
    while the kernel lived (``cells cpu`` from the student's cgroup, and the student's judge, which
    shares the quota): a student whose own processes kept their quota busy crowded out their own kernel.
    The seconds in which the quota held the student's processes back (``cells throttled``: bursts of
    the student's own processes used it up, however short) count as the kernel's own wait, not as a
    wait for others. And that wait must be at least half of the limit it hit (the seconds its status
    names, else ``cell_limit``, and at most the kernel's life): a limit that the wait made the kernel
    hit is one it spent mostly waiting, where a kernel that sleeps through its limit and waits a few
    seconds (its main thread made easy to crowd out, with ``SCHED_IDLE``, a nice value or helpers of
    its own on its core, which its quota does not throttle) hit it on its own. So a student cannot have
    a notebook graded again, alone, at will (red team 2026-12-07).
    """
    seconds = result.get("seconds") or {}
    limited = result["status"].startswith("timed out") or "ran past the time limit" in result["status"]
    waited_for_others = seconds.get("kernel waited", 0.0) - seconds.get("cells throttled", 0.0)
    lived = seconds.get("kernel lived", seconds.get("autograde", 0.0))
    named = _LIMIT_SECONDS.search(result["status"])
    limit = min(lived, float(named.group(1)) if named else cell_limit or lived)
    crowded = waited_for_others > seconds.get("kernel ran", 0.0) and waited_for_others >= 0.5 * limit
    own = seconds["cells cpu"] + seconds.get("judge cpu", 0.0) if "cells cpu" in seconds else None
    busy_itself = own is not None and cpus is not None and own >= 0.5 * cpus * lived
    return limited and crowded and not busy_itself


def _retry_starved(run: _Run, todo: dict[str, list[Submission]], records: dict[str, dict], log) -> None:
    """Grade again, once and alone (no other student at the same time), every `starved` notebook.

    Each student's CPU weight and quota (grading/isolation/limits.py) keep students from crowding out each
    other; this covers the rest of the machine. The second result stands, with a note.
    """
    for student, record in sorted(records.items()):
        again = [s for s in todo.get(student, [])
                 if starved(record["assignments"].get(s.assignment, {"status": ""}), run.options.cpus_per_student,
                            run.options.cell_timeout)]
        if not again:
            continue
        log(f"{student}: {', '.join(s.assignment for s in again)} hit a time limit while the kernel waited for a CPU "
            "longer than it ran; grading it again, alone")
        try:
            retried = _grade_student(run, student, again, record["hash"])
        except Exception as error:  # noqa: BLE001 - the first result stands; one student never stops the batch.
            log(f"{student}: grading again failed ({type(error).__name__}: {error}); the first result stands")
            continue
        for assignment, result in retried["assignments"].items():
            result["status"] += "; graded again alone: the first time, its kernel waited for a CPU longer than it ran"
            record["assignments"][assignment] = result


def grade_folder(folder: Path, root: Path = ROOT, assignments: list[str] | None = None, *, log=print,
                 **options) -> list[tuple[Scores, str]]:
    """Grade every submission in ``folder`` (see `GradingOptions` for ``options``); return the rows."""
    return grade(GradingOptions(folder=Path(folder), root=Path(root), assignments=assignments, **options), log)

