"""The instructor's grading command: grade a folder of submissions, export grades, print a table.

    python -m grading.grade FOLDER [--jobs N] [--shard K/N] [--output DIR] [--force]
                                   [--assignment ID ...] [--csv grades.csv] [--students mapping.csv]
                                   [--cell-timeout S] [--student-timeout S] [--memory-limit-gb G]
                                   [--max-processes N] [--cpus-per-student C] [--max-notebook-mb M]
                                   [--prepare-timeout S] [--sandbox auto|on|off] [--no-feedback]

FOLDER (or a .zip of one, read without extracting links: grading/zipped.py) may use nbgrader's
layout (``FOLDER/<student>/<assignment>/<file>.ipynb``), or hold one folder per student
(``FOLDER/<student>/<file>.ipynb``), or be flat with the student id before the assignment id in
each file name (``FOLDER/alice_01_eviction_as_ranking.ipynb``) or given by a ``--students`` CSV of
``file,student_id`` rows. File names as Colab and LMSs save them ("Copy of
01_eviction_as_ranking.ipynb", "01_eviction_as_ranking (1).ipynb") are recognized
(grading/collect.py). Submitted files are read, never followed: a notebook that is a link, a FIFO,
a device or a hard link to another student's file is refused, naming it. Each notebook is read,
repaired, placed and scanned in a process of its own with a wall-clock limit (grading/prepare.py).

``--jobs N`` students are graded at once (default: one per CPU core), each kernel with one
torch/BLAS/OpenMP thread. Each job keeps one grading process (grading/worker.py) that runs nbgrader
in-process for all the notebooks of its students, with a wall-clock limit per notebook, and writes
a gradebook file of its own; the files are merged at the end (grading/merge.py). ``--shard K/N``
grades a stable 1/N of the students (by a hash of the student id; Slurm job arrays and Kubernetes
Indexed Jobs choose K themselves) into ``OUTPUT/grading-shards/K-of-N/``; ``python -m
grading.merge OUTPUT`` then merges the shards. A student whose files did not change since they
were graded is skipped (by content hash), unless ``--force``.

Every student's kernels run in a bubblewrap sandbox of their own (grading/sandbox.py: no network,
no view of the course's files or of other students, a uid per student when the grader is root),
forked by a warm process that imported their libraries once (grading/zygote.py), with the memory,
processes and CPU of the whole process tree limited by a cgroup (grading/limits.py): every student
gets an equal share of a busy machine, and a notebook that hits a time limit while its kernel
waited for a CPU longer than it ran is graded again, alone. Every test cell runs in a judge process
of the grader's against the student's kernel, which only answers its requests (grading/judge/), so
the kernel cannot change a check or its outcome; the judge's CPU counts as the student's. Code
that tampers with grading is flagged for a manual look (grading/scan.py). Whatever one submission
does or contains, the others are graded, what the batch made is removed (grading/cleanup.py) and
the CSV is written: a failure becomes that submission's status, ``needs a manual look: <reason>``.
Students whose solutions are the same are flagged at the merge (grading/copies.py).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import queue
import re
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from grading import cache, sandbox
from grading import limits as cgroup_limits
from grading.cleanup import attempt, remove_tree
from grading.collect import Submission, collect, file_digest, read_mapping
from grading.collect import describe as _describe
from grading.config import ASSIGNMENTS, ROOT
from grading.merge import RESULTS, SHARDS, copy_students, merge, newest_records, read_results, rows_of, write_results
from grading.nbgrader_cli import tools_on_path
from grading.prepare import PREPARE_LIMIT_S, place
from grading.report import Scores, format_table
from grading.zipped import submissions_folder

__all__ = ["GradingOptions", "Submission", "collect", "grade", "grade_folder", "main", "place", "read_mapping"]

# Every kernel computes with one thread, so that --jobs N kernels share N cores without fighting.
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                     "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS")}


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass
class GradingOptions:
    """Everything the grading command was asked to do, from the command line to each job."""

    folder: Path
    root: Path = ROOT  # The course directory: source/ and nbgrader_config.py.
    assignments: list[str] | None = None
    output: Path | None = None  # gradebook.db, autograded/, feedback/, grades.csv (default: root).
    csv_path: Path | None = None
    mapping: dict[str, str] | None = None
    cell_timeout: int | None = None
    student_timeout: float = 1200.0  # Seconds per student and notebook.
    memory_limit_gb: float | None = 8.0  # Memory of a student's whole process tree.
    max_processes: int | None = 256  # Processes (threads count) of a student's whole process tree.
    cpus_per_student: float | None = 1.0  # CPU cores a student's whole process tree may use at once.
    tmpfs_mb: int = 512  # Size of each of the sandbox's home, /tmp and /dev/shm.
    max_notebook_mb: float = 64.0
    prepare_timeout: float = PREPARE_LIMIT_S  # Seconds to read, repair, place and scan one notebook.
    feedback: bool = True
    isolation: str = "auto"  # "on", "off", or "auto" (the sandbox when it works here).
    judge: bool = True  # False grades test cells in the kernel, as plain nbgrader does (the attack tests only).
    sanitize: bool = True  # False leaves autograded notebooks and feedback unsanitized (its tests only).
    jobs: int = field(default_factory=default_jobs)
    shard: tuple[int, int] = (1, 1)
    force: bool = False
    progress: bool | None = None  # A progress bar; None: when stderr is a terminal.

    def __post_init__(self) -> None:
        if self.isolation not in ("auto", "on", "off"):
            raise ValueError(f"isolation must be 'auto', 'on' or 'off', not {self.isolation!r}")
        k, n = self.shard
        if not 1 <= k <= n:
            raise ValueError(f"shard {k}/{n}: K must be between 1 and N")
        if self.jobs < 1:
            raise ValueError("jobs must be at least 1")

    @property
    def destination(self) -> Path:
        return Path(self.output or self.root)

    def to_json(self) -> dict:
        """The options as JSON values: how each grading process (grading/worker.py) receives them."""
        return json.loads(json.dumps(asdict(self), default=str))

    @classmethod
    def from_json(cls, values: dict) -> GradingOptions:
        """The options that `to_json` wrote."""
        paths = {"folder", "root", "output", "csv_path"}
        known = {f.name for f in fields(cls)}
        values = {key: Path(value) if key in paths and value is not None else value
                  for key, value in values.items() if key in known}
        return cls(**{**values, "shard": tuple(values.get("shard", (1, 1)))})


def parse_shard(text: str | None, environ=os.environ, count: int | None = None) -> tuple[int, int]:
    """The shard ``K/N`` to grade: from ``text``, else from a Slurm job array or a Kubernetes Indexed Job.

    ``SLURM_ARRAY_TASK_ID`` and ``SLURM_ARRAY_TASK_COUNT`` (with ``SLURM_ARRAY_TASK_MIN`` and
    ``_STEP`` when set) choose K of N; ``JOB_COMPLETION_INDEX`` (0-based) does with ``count``,
    which a Kubernetes Job must give (``--shard-count``, its ``completions``). Otherwise 1/1.

    Raises:
        ValueError: for a malformed shard or an index outside 1..N.
    """
    if text:
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
            raise ValueError(f"--shard must be K/N with 1 <= K <= N, not {text!r}")
        return int(match.group(1)), int(match.group(2))
    if environ.get("SLURM_ARRAY_TASK_ID") and environ.get("SLURM_ARRAY_TASK_COUNT"):
        first = int(environ.get("SLURM_ARRAY_TASK_MIN", "0") or 0)
        step = int(environ.get("SLURM_ARRAY_TASK_STEP", "1") or 1)
        k, n = (int(environ["SLURM_ARRAY_TASK_ID"]) - first) // step + 1, int(environ["SLURM_ARRAY_TASK_COUNT"])
    elif environ.get("JOB_COMPLETION_INDEX"):
        if not count:
            raise ValueError("JOB_COMPLETION_INDEX is set: give the number of shards "
                             "(--shard-count, the Job's completions)")
        k, n = int(environ["JOB_COMPLETION_INDEX"]) + 1, count
    else:
        return 1, 1
    if not 1 <= k <= n:
        raise ValueError(f"the scheduler's index gives shard {k}/{n}, outside 1..{n}")
    return k, n


def shard_of(student: str, shards: int) -> int:
    """The shard (1..``shards``) that grades ``student``: stable across runs and machines."""
    return int(hashlib.sha256(student.encode("utf-8")).hexdigest(), 16) % shards + 1


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
        for path in files:  # Read beneath the submissions folder, never through a link (grading/collect.py).
            digest.update(file_digest(path, submission.root, submission.identity if path == submission.path else None,
                                      max_bytes))
        digest.update(hashlib.sha256(source.read_bytes() if source.exists() else b"").digest())
    config = root / "nbgrader_config.py"
    digest.update(config.read_bytes() if config.exists() else b"")
    return digest.hexdigest()


class Job:
    """One of the ``--jobs`` grading processes (grading/worker.py), owned by one thread at a time."""

    def __init__(self, number: int, course: Path, options: GradingOptions, skip_tag: str):
        self.number = number
        self.course = course
        self.db = course / "jobs" / f"job-{number}.db"
        self.log_path = course / "jobs" / f"job-{number}.log"
        shutil.copy(course / "gradebook.db", self.db)
        # The command's options travel whole; the scratch course, the tag and the gradebook are this run's.
        self.settings_path = course / "jobs" / f"job-{number}.json"
        self.settings_path.write_text(json.dumps({"options": options.to_json(), "course": str(course),
                                                  "skip_tag": skip_tag, "db": str(self.db)}))
        self.memory_limit_gb = options.memory_limit_gb
        self.process: subprocess.Popen | None = None
        self.events = None
        self.buffer = b""

    def _start(self) -> None:
        read_end, write_end = os.pipe()
        env = dict(os.environ)
        package_home = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = package_home + os.pathsep + env.get("PYTHONPATH", "")
        limit = int(self.memory_limit_gb * 2**30) if self.memory_limit_gb else None
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "grading.worker", str(self.settings_path), str(write_end)],
                stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, pass_fds=[write_end], cwd=self.course,
                env=env, start_new_session=True,
                preexec_fn=(lambda: _limit_data(limit)) if limit else None)
        os.close(write_end)
        self.events = read_end
        self.buffer = b""
        ready = self._next(time.monotonic() + 600)
        if ready is None or ready.get("event") != "ready":
            self.stop()
            raise RuntimeError(f"the grading process did not start: {self.log_tail()}")

    def _next(self, deadline: float) -> dict | None:
        """The worker's next event; None when the deadline passed or the worker ended."""
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            with selectors.DefaultSelector() as selector:
                selector.register(self.events, selectors.EVENT_READ)
                if not selector.select(min(remaining, 5.0)):
                    if self.process.poll() is not None:
                        return None
                    continue
            chunk = os.read(self.events, 65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def log_tail(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return lines[-1][:300] if lines else "(no output)"

    def stop(self, graceful: bool = False) -> None:
        """End the worker: at once (it is stuck past a time limit), or once it has read its last request."""
        if self.process is not None:
            if graceful:
                try:
                    self.process.stdin.close()
                    self.process.wait(timeout=30)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.process.wait()
            self.process = None
        if self.events is not None:
            os.close(self.events)
            self.events = None

    def grade(self, student: str, assignments: list[str], plan: Path | None, timeout: float) -> dict[str, dict]:
        """Grade the student's notebooks; return each one's ``done`` event, or what went wrong."""
        results: dict[str, dict] = {}
        pending = list(assignments)
        while pending:
            try:
                if self.process is None or self.process.poll() is not None:
                    self._start()
                request = {"student": student, "assignments": pending, "plan": str(plan) if plan else None}
                self.process.stdin.write((json.dumps(request) + "\n").encode())
                self.process.stdin.flush()
            except (OSError, RuntimeError) as error:
                self.stop()
                for assignment in pending:
                    results[assignment] = {"event": "failed", "reason": f"the grading process failed: {error}"}
                return results
            current, deadline = None, time.monotonic() + 600
            while True:
                event = self._next(deadline)
                if event is None:
                    timed_out = current is not None and time.monotonic() >= deadline
                    reason = (f"timed out after {timeout:g} s" if timed_out
                              else f"the grading process ended: {self.log_tail()}")
                    self.stop()
                    failed = current or pending[0]
                    results[failed] = {"event": "timeout" if timed_out else "failed", "reason": reason}
                    pending.remove(failed)
                    break
                if event["event"] == "start":
                    current, deadline = event["assignment"], time.monotonic() + timeout
                elif event["event"] == "done":
                    results[event["assignment"]] = event
                    pending.remove(event["assignment"])
                    current, deadline = None, time.monotonic() + 600
                elif event["event"] == "crashed":
                    failed = current or pending[0]
                    results[failed] = {"event": "failed", "reason": event["error"].strip().splitlines()[-1]}
                    pending.remove(failed)
                    break
                elif event["event"] == "finished":
                    break
        return results


def _limit_data(limit_bytes: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_DATA, (limit_bytes, limit_bytes))


def status_of(submission: Submission, event: dict, timeout: float) -> str:
    """The status of a graded submission, from its worker event and what preparing it found."""
    if event["event"] == "timeout":
        return f"timed out after {timeout:g} s (0 points; needs a manual look)"
    if event["event"] != "done":
        return f"needs a manual look: grading failed: {event['reason']}"
    if not event["ok"]:
        if "CellTimeoutError" in event["log"] + event["error"]:
            return "timed out: a cell ignored the interrupt (0 points; needs a manual look)"
        reason = next((line for line in reversed((event["error"] or event["log"]).strip().splitlines())
                       if line.strip()), "nbgrader failed")
        return f"needs a manual look: grading failed: {reason.strip()[:300]}"
    status = "needs a manual look" if submission.needs_manual_look else "repaired" if submission.repaired else "graded"
    details = list(submission.notes)
    if "Timeout waiting for execute reply" in event["log"]:
        details.insert(0, "a cell ran past the time limit and was interrupted")
    if event.get("feedback_error"):
        details.append(f"feedback failed: {event['feedback_error'].strip().splitlines()[-1][:200]}")
    if event.get("judge_error"):
        status = "needs a manual look"
        details.insert(0, "the judge failed, so the rest of this student's tests score 0: "
                          f"{event['judge_error'][:300]}")
    return status + ("; " + "; ".join(details) if details else "")


@dataclass
class _Run:
    """What every job of one grading run shares."""

    options: GradingOptions
    course: Path  # The scratch course directory.
    sandbox_on: bool
    limits: cgroup_limits.Limits
    kernels: Path  # Holds each student's socket folder and plan.
    uids: dict[str, int]
    jobs: "queue.Queue[Job]"
    log: object


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
                                                    options.cpus_per_student)
            sockets.mkdir(mode=0o700)  # The grader's own: the sandbox never sees it.
            judge_sockets.mkdir(mode=0o755)
            sandbox.Plan(sandbox=run.sandbox_on, socket_dir=str(sockets), kept=sandbox.kept_folders(), uid=uid,
                         cgroups=folders, memory_bytes=memory, max_processes=options.max_processes,
                         tmpfs_bytes=options.tmpfs_mb << 20, environment=dict(ONE_THREAD),
                         judge_dir=str(judge_sockets)).write(plan_file)
            events = job.grade(student, [s.assignment for s in todo], plan_file, options.student_timeout)
        except Exception as error:  # noqa: BLE001 - one student never stops the batch.
            events = {s.assignment: {"event": "failed", "reason": _describe(error)} for s in todo}
        finally:
            run.jobs.put(job)
            attempt(lambda: cgroup_limits.kill_and_remove(folders), f"remove {student}'s cgroups", run.log)
            remove_tree(sockets, run.log)
            remove_tree(judge_sockets, run.log)
            attempt(lambda: plan_file.unlink(missing_ok=True), f"remove {plan_file}", run.log)
        for submission in todo:
            event = events.get(submission.assignment, {"event": "failed", "reason": "not graded"})
            tasks = event.get("scores") or {}
            results[submission.assignment] = {"status": status_of(submission, event, options.student_timeout),
                                              "tasks": tasks, "job": job.number, "seconds": event.get("seconds", {}),
                                              "fingerprint": submission.fingerprint or {}}
            _publish(run.course, options.destination, student, submission.assignment)
    return {"hash": digest, "graded_at": time.time(), "assignments": results}


def _publish(course: Path, destination: Path, student: str, assignment: str) -> None:
    """Move what grading wrote for one notebook (autograded/, feedback/) to the output folder."""
    for kind in ("autograded", "feedback"):
        source = course / kind / student / assignment
        target = destination / kind / student / assignment
        if target.exists():
            shutil.rmtree(target)
        if source.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(source), str(target))


def _prepare_course(options: GradingOptions, assignments: list[str]) -> Path:
    """A scratch course directory with the release notebooks and a gradebook that defines them.

    Shards that run at once (on one machine or on a cluster's shared disk) never write the course
    directory itself: each builds its own, from what an earlier run on this machine generated for
    the same source notebooks and settings (grading/cache.py).
    """
    return cache.scratch_course(options.root, assignments, lambda course: _generate(course, assignments))


def _generate(course: Path, assignments: list[str]) -> None:
    """nbgrader's ``generate_assignment`` for ``assignments`` in the scratch course ``course``."""
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.db_url = f"sqlite:///{course / 'gradebook.db'}"
    config.NbGraderAPI.log_level = "WARN"
    config.Exchange.root = str(Path(course) / "exchange")  # Not used; nbgrader wants it to exist.
    tools_on_path()
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    for assignment in assignments:
        result = api.generate_assignment(assignment, force=True)
        if not result["success"]:
            raise RuntimeError(f"nbgrader generate_assignment {assignment} failed:\n{result.get('log', '')}"
                               f"{result.get('error', '')}")


def _isolation(options: GradingOptions, uid: int | None, log) -> bool:
    """Whether kernels run in the sandbox: probe it once; ``on`` refuses to grade without it."""
    if options.isolation == "off":
        log("isolation: off (students' code runs as this user and can read and write what it can)")
        return False
    with tempfile.TemporaryDirectory(prefix="course-probe-") as sockets:
        plan = sandbox.Plan(sandbox=True, socket_dir=sockets, kept=sandbox.kept_folders(), uid=uid)
        # Probed once per machine and configuration (grading/cache.py).
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


def grade(options: GradingOptions, log=print) -> list[tuple[Scores, str]]:
    """Grade this run's shard of ``options.folder``; return (scores, status) rows of its students.

    With one shard (the default) the result is merged into the output folder at once (its
    ``gradebook.db``, grades CSV and statuses); with more, ``python -m grading.merge`` does that.
    """
    assignments = options.assignments or ASSIGNMENTS
    destination = options.destination
    k, n = options.shard
    max_bytes = int(options.max_notebook_mb * 2**20) if options.max_notebook_mb else None
    # A zip (as LMSs deliver) is read into a scratch folder, without links, absolute or ".." paths.
    with submissions_folder(options.folder, max_bytes, log) as (folder, refused):
        submissions, problems = collect(folder, assignments, options.mapping, refused)
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
        log(f"shard {k}/{n}: {len(by_student)} of {len(everyone)} student(s); grading {len(todo)} with "
            f"{min(options.jobs, max(len(todo), 1))} job(s)")
        if todo:
            _grade_all(options, [s for own in todo.values() for s in own], todo, digests, uids, shard_dir, log)
        elif not (shard_dir / RESULTS).exists():
            write_results(shard_dir / RESULTS, {}, shard=shard_dir.name)  # The shard ran, with no one to grade.
    if n == 1:
        rows = merge(destination, options.csv_path, log)
    else:
        rows = rows_of(read_results(shard_dir / RESULTS))
        log(f"shard {k}/{n} done; when every shard is done: python -m grading.merge {destination}")
    return [row for row in rows if row[0].student in by_student]


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


def _grade_all(options: GradingOptions, submissions: list[Submission], todo: dict[str, list[Submission]],
               digests: dict[str, str], uids: dict[str, int], shard_dir: Path, log) -> None:
    for submission in submissions:
        for note in [] if submission.failure else submission.notes:
            log(f"{submission.student}/{submission.assignment}: {note}")
    course = _prepare_course(options, sorted({s.assignment for s in submissions}))
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
        if options.memory_limit_gb or options.max_processes or options.cpus_per_student:
            limits = cgroup_limits.setup(f"course-grading-{os.getpid()}-{secrets.token_hex(4)}")
            if limits.warning:
                log(limits.warning)
        count = min(options.jobs, len(todo))
        jobs = [Job(number, course, options, skip_tag) for number in range(1, count + 1)]
        free: queue.Queue[Job] = queue.Queue()
        for job in jobs:
            free.put(job)
        run = _Run(options, course, sandbox_on, limits, kernels, uids, free, log)
        records = _run_jobs(run, todo, digests, log)
        _retry_starved(run, todo, records, log)
        shard_dir.mkdir(parents=True, exist_ok=True)
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


def starved(result: dict, cpus: float | None = 1.0) -> bool:
    """Whether a notebook hit a time limit while its kernel was crowded out by processes not the student's.

    A kernel that ran out of time on its own (a loop) ran more than it waited for a CPU; one that
    slept neither ran nor waited. One that waited longer than it ran was crowded out, and by
    others only if the student's processes together used less than half of their ``cpus`` quota
    while the kernel lived (``cells cpu`` from the student's cgroup, and the student's judge, which
    shares the quota): a student whose own processes kept their quota busy crowded out their own kernel.
    """
    seconds = result.get("seconds") or {}
    limited = result["status"].startswith("timed out") or "ran past the time limit" in result["status"]
    crowded = seconds.get("kernel waited", 0.0) > seconds.get("kernel ran", 0.0)
    own = seconds["cells cpu"] + seconds.get("judge cpu", 0.0) if "cells cpu" in seconds else None
    lived = seconds.get("kernel lived", seconds.get("autograde", 0.0))
    busy_itself = own is not None and cpus is not None and own >= 0.5 * cpus * lived
    return limited and crowded and not busy_itself


def _retry_starved(run: _Run, todo: dict[str, list[Submission]], records: dict[str, dict], log) -> None:
    """Grade again, once and alone (no other student at the same time), every `starved` notebook.

    Each student's CPU weight and quota (grading/limits.py) keep students from crowding out each
    other; this covers the rest of the machine. The second result stands, with a note.
    """
    for student, record in sorted(records.items()):
        again = [s for s in todo.get(student, [])
                 if starved(record["assignments"].get(s.assignment, {"status": ""}), run.options.cpus_per_student)]
        if not again:
            continue
        log(f"{student}: {', '.join(s.assignment for s in again)} hit a time limit while the kernel waited for a CPU "
            "longer than it ran; grading it again, alone")
        retried = _grade_student(run, student, again, record["hash"])
        for assignment, result in retried["assignments"].items():
            result["status"] += "; graded again alone: the first time, its kernel waited for a CPU longer than it ran"
            record["assignments"][assignment] = result


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


def grade_folder(folder: Path, root: Path = ROOT, assignments: list[str] | None = None, *, log=print,
                 **options) -> list[tuple[Scores, str]]:
    """Grade every submission in ``folder`` (see `GradingOptions` for ``options``); return the rows."""
    return grade(GradingOptions(folder=Path(folder), root=Path(root), assignments=assignments, **options), log)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m grading.grade", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="folder of submissions, or a .zip of one")
    parser.add_argument("--assignment", action="append", choices=ASSIGNMENTS, help="grade only these (repeatable)")
    parser.add_argument("--jobs", type=int, default=default_jobs(),
                        help=f"students graded at once (default: the CPU cores, {default_jobs()} here)")
    parser.add_argument("--shard", default=None, metavar="K/N",
                        help="grade the K-th of N stable parts of the students (default: from SLURM_ARRAY_TASK_ID "
                             "and _COUNT, or JOB_COMPLETION_INDEX with --shard-count; else 1/1)")
    parser.add_argument("--shard-count", type=int, default=None,
                        help="the number of shards, with JOB_COMPLETION_INDEX (a Kubernetes Indexed Job)")
    parser.add_argument("--output", type=Path, default=None,
                        help="folder for gradebook.db, autograded/, feedback/ and the shards (default: the course)")
    parser.add_argument("--force", action="store_true", help="regrade students whose files did not change")
    parser.add_argument("--cell-timeout", type=int, default=None, help="seconds per cell (default: nbgrader_config.py)")
    parser.add_argument("--student-timeout", type=float, default=1200.0, help="seconds per student and notebook")
    parser.add_argument("--csv", type=Path, default=None, help="where to export grades (default: OUTPUT/grades.csv)")
    parser.add_argument("--students", type=Path, default=None,
                        help="CSV of 'file,student_id' rows naming the student of each file (flat folders)")
    parser.add_argument("--memory-limit-gb", type=float, default=8.0,
                        help="memory of a student's kernel and every process it starts, together (0: no limit)")
    parser.add_argument("--max-processes", type=int, default=256,
                        help="processes and threads of a student's kernel, together (0: no limit)")
    parser.add_argument("--cpus-per-student", type=float, default=1.0,
                        help="CPU cores a student's processes may use together (0: no quota; every student still "
                             "gets an equal share of a busy machine)")
    parser.add_argument("--max-notebook-mb", type=float, default=64.0, help="larger files get a manual look")
    parser.add_argument("--prepare-timeout", type=float, default=PREPARE_LIMIT_S,
                        help="seconds to read, repair, place and scan one notebook before grading it "
                             f"(default {PREPARE_LIMIT_S:g})")
    parser.add_argument("--no-feedback", action="store_true", help="do not write feedback/ for the students")
    parser.add_argument("--sandbox", choices=["auto", "on", "off"], default="auto",
                        help="run each kernel in a bubblewrap sandbox (no network, no view of the course's files); "
                             "auto: when it works here, with a warning when it does not")
    args = parser.parse_args(argv)
    if not args.folder.is_dir() and not (args.folder.is_file() and args.folder.suffix.lower() == ".zip"):
        parser.error(f"{args.folder} is neither a folder nor a .zip file")
    try:
        mapping = read_mapping(args.students) if args.students else None
        shard = parse_shard(args.shard, count=args.shard_count)
        options = GradingOptions(
            folder=args.folder.resolve(), root=ROOT, assignments=args.assignment,
            output=args.output.resolve() if args.output else None, csv_path=args.csv, mapping=mapping,
            cell_timeout=args.cell_timeout, student_timeout=args.student_timeout,
            memory_limit_gb=args.memory_limit_gb or None, max_processes=args.max_processes or None,
            cpus_per_student=args.cpus_per_student or None,
            max_notebook_mb=args.max_notebook_mb, prepare_timeout=args.prepare_timeout,
            feedback=not args.no_feedback, isolation=args.sandbox,
            jobs=args.jobs, shard=shard, force=args.force)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    rows = grade(options)
    print()
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
