"""Prepares each submission for nbgrader, in a process of its own with a wall-clock limit.

For each notebook, in order: **read** it (beneath the submissions folder, never through a link:
grading/pipeline/collect.py), **repair** it on the release notebook (grading/pipeline/repair.py) and put the
release's grading metadata back, **place** it where nbgrader grades it, take its **fingerprint**
for the copy check (grading/pipeline/copies.py), **scan** its code (grading/isolation/scan.py) and its markdown
(**markdown findings**, grading/isolation/sanitize.py). Each step costs time linear in the size of the
notebook; still, every notebook is prepared in a child process that is killed when it runs past
the limit (``--prepare-timeout``). The notebook is placed before the optional steps: when one of
those runs too long, the notebook is graded without it and its status says
``needs a manual look: <step> took too long``; when reading, repairing or placing does, that
notebook alone is not graded. ``--jobs`` notebooks are prepared at once.
"""

from __future__ import annotations

import multiprocessing
import re
import time
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path

import nbformat

from grading.isolation.sanitize import markdown_findings
from grading.isolation.scan import scan
from grading.pipeline.cleanup import remove_tree
from grading.pipeline.collect import Submission, Unreadable, describe, open_submitted, read_submitted
from grading.pipeline.copies import fingerprint
from grading.pipeline.repair import repair, restore_metadata

# Seconds to prepare one notebook (every step together): a 1 MB notebook of magics takes a few.
PREPARE_LIMIT_S = 60.0
# Steps after which a notebook is placed: past the limit in one of them, it is graded without it.
OPTIONAL_STEPS = ("fingerprint", "scan", "markdown findings")
_FIELDS = ("notes", "repaired", "needs_manual_look", "failure", "fingerprint")
# What nbgrader's collect puts beside a submitted notebook, and autograde and release_feedback read.
EXCHANGE_FILES = ("timestamp.txt", "submission_secret.txt")
# nbgrader's parse_utc hands a submission time's zone to dateutil's gettz, which opens a zone name that is a path
# (absolute, or with "..") as a zone file: a timestamp with such a word is not carried (any other format is).
_PATH_WORD = re.compile(r"(^|\s)/|\.\.|\x00")


def mark_experiments(notebook: nbformat.NotebookNode, tag: str) -> None:
    """Tag the plain code cells after the last graded cell with ``tag``.

    Those cells are the experiments: no test depends on them, so grading skips them (faster, and
    a student's experiment cannot crash or slow the grading). Cells a student added between tasks
    still run, since a solution may use what they define.
    """
    graded = [i for i, cell in enumerate(notebook.cells) if cell.metadata.get("nbgrader", {}).get("grade_id")]
    for cell in notebook.cells[(max(graded) + 1 if graded else len(notebook.cells)):]:
        if cell.cell_type == "code" and not cell.metadata.get("nbgrader"):
            cell.metadata["tags"] = [*cell.metadata.get("tags", []), tag]


@dataclass
class _Course:
    """What preparing needs of the course: the release notebooks and reference solutions, read once."""

    root: Path
    skip_tag: str | None
    max_bytes: int | None
    releases: dict[str, nbformat.NotebookNode | None] = field(default_factory=dict)
    references: dict[str, dict[str, str]] = field(default_factory=dict)

    def load(self, assignment: str) -> None:
        from grading.authoring.reference import solution_code

        if assignment in self.releases:
            return
        release = self.root / "release" / assignment / f"{assignment}.ipynb"
        source = self.root / "source" / assignment / f"{assignment}.ipynb"
        self.releases[assignment] = nbformat.read(release, as_version=4) if release.exists() else None
        self.references[assignment] = solution_code(nbformat.read(source, as_version=4)) if source.exists() else {}


def _read(submission: Submission, course: _Course) -> nbformat.NotebookNode | None:
    try:
        data = read_submitted(submission, course.max_bytes)
    except Unreadable as why:
        submission.failure = f"needs a manual look: {why}"
        return None
    try:
        notebook = nbformat.reads(data.decode("utf-8"), as_version=4)
        nbformat.validate(notebook)
    except Exception as error:  # noqa: BLE001 - JSON, encoding, schema and parser errors alike.
        submission.failure = f"needs a manual look: not a readable notebook ({describe(error)})"
        return None
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return notebook


def _repair(submission: Submission, notebook, release) -> nbformat.NotebookNode:
    if release is None:
        return notebook
    fixed = repair(notebook, release)
    if fixed.changed:
        notebook = fixed.notebook
        submission.repaired = True
        submission.needs_manual_look |= fixed.needs_manual_look
        submission.notes.extend(fixed.notes)
    claimed = restore_metadata(notebook, release)
    if claimed:
        submission.needs_manual_look = True
        submission.notes.extend(claimed)
    return notebook


def _target(submission: Submission, root: Path) -> Path:
    return root / "submitted" / submission.student / submission.assignment


def prepare_one(submission: Submission, course: _Course, step=lambda name: None) -> None:
    """Read, repair, place, fingerprint and scan one submission (see the module); ``step(name)`` is
    called as each step starts."""
    step("read")
    notebook = _read(submission, course)
    if notebook is None:
        return
    release = course.releases.get(submission.assignment)
    step("repair")
    notebook = _repair(submission, notebook, release)
    step("place")
    if course.skip_tag:
        mark_experiments(notebook, course.skip_tag)
    target = _target(submission, course.root)
    if not remove_tree(target):
        raise RuntimeError(f"could not empty {target}")
    target.mkdir(parents=True)
    nbformat.write(notebook, target / f"{submission.assignment}.ipynb")
    _carry_exchange_files(submission, target)
    step("fingerprint")
    submission.fingerprint = fingerprint(notebook, release, course.references.get(submission.assignment, {}))
    step("scan")
    _flag(submission, "code that no task needs and that can tamper with grading or with what a grader's browser "
                      "shows", scan(notebook, release))
    step("markdown findings")
    _flag(submission, "raw HTML or script links in markdown (formgrader and feedback show it sanitized)",
          markdown_findings(notebook, release))


def _carry_exchange_files(submission: Submission, target: Path) -> None:
    """Copy what nbgrader's exchange keeps beside a collected notebook into ``target``.

    That is its submission time, which late penalties use, and the secret that names its feedback
    for ``release_feedback``. Only in nbgrader's layout (the notebook's folder is the assignment's),
    only plain files of at most 4 kB, read as the notebook is: never through a link; a timestamp only
    when no word of it is a path (`_PATH_WORD`).
    """
    if submission.path.parent.name != submission.assignment:
        return
    for name in EXCHANGE_FILES:
        try:
            with open_submitted(submission.path.parent / name, submission.root) as handle:
                content = handle.read(4097)
        except Unreadable:
            continue  # Absent, a link or not a plain file: the notebook is graded without it.
        if len(content) > 4096:
            continue
        if name == "timestamp.txt" and _PATH_WORD.search(content.decode("utf-8", "replace")):
            continue  # Graded without it, as without the file.
        (target / name).write_bytes(content)


def _flag(submission: Submission, what: str, findings: list[str]) -> None:
    """Note what a check found, if anything, and ask for a manual look."""
    if findings:
        submission.needs_manual_look = True
        submission.notes.append(f"{what}: " + "; ".join(findings))


def _snapshot(submission: Submission) -> dict:
    return {name: getattr(submission, name) for name in _FIELDS}


def _child(connection, submission: Submission, course: _Course) -> None:
    """The child process: prepare one submission, reporting the state before each step and at the end."""
    def step(name: str) -> None:
        connection.send(("step", name, _snapshot(submission)))

    try:
        prepare_one(submission, course, step)
        connection.send(("done", None, _snapshot(submission)))
    except BaseException as error:  # noqa: BLE001 - the parent turns it into this submission's status.
        submission.failure = f"needs a manual look: could not prepare it for grading ({describe(error)})"
        connection.send(("done", None, _snapshot(submission)))
    finally:
        connection.close()


@dataclass
class _Running:
    process: multiprocessing.Process
    submission: Submission
    deadline: float
    step: str = "read"


def _over_time(running: _Running, course: _Course, limit_s: float) -> None:
    """The outcome of a submission whose preparation ran past the limit in ``running.step``."""
    submission = running.submission
    submission.needs_manual_look = True
    if running.step in OPTIONAL_STEPS:
        submission.notes.append(f"{running.step} took too long (over {limit_s:g} s); graded without it")
        return
    submission.failure = (f"needs a manual look: {running.step} took too long (over {limit_s:g} s); "
                          "not graded")
    remove_tree(_target(submission, course.root))


def _start(submission: Submission, course: _Course, limit_s: float, context) -> tuple:
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(sender, submission, course), daemon=True)
    process.start()
    sender.close()
    return receiver, _Running(process, submission, time.monotonic() + limit_s)


def _receive(connection, running: _Running) -> bool:
    """Apply one message of a child; return whether the child is finished."""
    try:
        kind, step, state = connection.recv()
    except (EOFError, OSError):
        running.process.join()
        if not running.submission.failure:
            running.submission.failure = ("needs a manual look: could not prepare it for grading (its process "
                                          f"ended during {running.step}, exit code {running.process.exitcode})")
        return True
    for name, value in state.items():
        setattr(running.submission, name, value)
    if kind == "step":
        running.step = step
        return False
    running.process.join()
    return True


def place(submissions: list[Submission], root: Path, skip_tag: str | None = None,
          max_bytes: int | None = 64 << 20, limit_s: float = PREPARE_LIMIT_S, jobs: int = 1) -> None:
    """Prepare each submission into ``root/submitted/<student>/<assignment>/<assignment>.ipynb`` (see the module).

    Outputs are dropped (nbgrader clears them anyway). With ``skip_tag``, the experiment cells are
    tagged with it (see `mark_experiments`). A submission that cannot be prepared (too large, not
    a notebook, a link, anything that raises, too slow) gets its ``failure`` and is not graded;
    the others are. A submission that already has its ``failure`` (files that collide, a link)
    is left alone.
    """
    course = _Course(root, skip_tag, max_bytes)
    for submission in submissions:
        course.load(submission.assignment)  # Read once, here: every child inherits them.
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    pending = [s for s in submissions if not s.failure]
    running: dict = {}
    while pending or running:
        while pending and len(running) < max(jobs, 1):
            connection, state = _start(pending.pop(0), course, limit_s, context)
            running[connection] = state
        timeout = max(0.0, min(state.deadline for state in running.values()) - time.monotonic())
        for connection in wait(list(running), timeout=timeout):
            if _receive(connection, running[connection]):
                running.pop(connection).process.join()
                connection.close()
        for connection, state in list(running.items()):
            if time.monotonic() >= state.deadline and state.process.is_alive():
                state.process.kill()
                state.process.join()
                connection.close()
                del running[connection]
                _over_time(state, course, limit_s)
