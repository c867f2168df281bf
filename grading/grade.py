"""The instructor's grading command: grade a folder of submissions, export grades, print a table.

    python -m grading.grade FOLDER [--assignment ID ...] [--cell-timeout S] [--student-timeout S]
                                   [--csv grades.csv] [--students mapping.csv] [--memory-limit-gb G]
                                   [--sandbox auto|on|off]

FOLDER may use nbgrader's layout (``FOLDER/<student>/<assignment>/<file>.ipynb``), or hold one
folder per student (``FOLDER/<student>/<file>.ipynb``), or be flat with the student id before the
assignment id in each file name (``FOLDER/alice_01_eviction_as_ranking.ipynb``) or given by a
``--students`` CSV of ``file,student_id`` rows. File names as
Colab and LMSs save them ("Copy of 01_eviction_as_ranking.ipynb", "01_eviction_as_ranking (1).ipynb")
are recognized. Every submission is copied to ``submitted/<student>/<assignment>/<assignment>.ipynb``
and graded by nbgrader in its own process with a wall-clock limit; one that fails or runs too long
is reported and the others are still graded.

Run as root (in a container, say), each student's kernel runs in a sandbox (grading/sandbox.py):
another user, which cannot see the course directory, the submissions or the grader's files. Test
cells earn points only when their last line runs with the test helpers intact (grading/guard.py),
and code that tampers with grading is flagged for a manual look (grading/scan.py).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import secrets
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat

from grading import sandbox
from grading.build import build
from grading.config import ASSIGNMENTS, ROOT
from grading.guard import PLAN_VARIABLE
from grading.nbgrader_cli import nbgrader
from grading.repair import repair
from grading.report import Scores, format_table, read_scores
from grading.sanitize import UNSANITIZED, markdown_findings
from grading.scan import scan

# Checked with fullmatch: "$" would also accept a trailing newline, which nbgrader strips.
_STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass
class Submission:
    """One notebook found in the folder, and what the collector made of it."""

    student: str
    assignment: str
    path: Path
    notes: list[str]
    repaired: bool = False
    needs_manual_look: bool = False
    # Other files of the same student and assignment: when there are any, none of them is graded.
    rivals: list[Path] | None = None


def _assignment_in(name: str, assignments: list[str]) -> tuple[str | None, str]:
    """Find the assignment id in a file name; return it and the text before it."""
    stem = name[:-len(".ipynb")] if name.endswith(".ipynb") else name
    stem = re.sub(r"^(Copy of |副本\s*)+", "", stem).strip()
    stem = re.sub(r"(\s*\(\d+\)|\s*-\s*Copy|_copy)+$", "", stem).strip()
    for assignment in sorted(assignments, key=len, reverse=True):
        position = stem.find(assignment)
        if position >= 0:
            return assignment, stem[:position].rstrip("_- ")
    return None, stem


def read_mapping(path: Path) -> dict[str, str]:
    """Read a CSV of ``file,student_id`` rows (a header row is allowed) into a dict.

    Raises:
        ValueError: naming the line, for a row without two fields or with an invalid student id.
    """
    mapping = {}
    for number, row in enumerate(csv.reader(path.read_text(encoding="utf-8").splitlines()), start=1):
        if not row or (number == 1 and [cell.strip().lower() for cell in row[:2]] == ["file", "student_id"]):
            continue
        if len(row) < 2 or not row[0].strip() or not _STUDENT_ID.fullmatch(row[1].strip()):
            raise ValueError(f"{path}, line {number}: expected 'file name,student id' with a valid student id, got {row}")
        mapping[row[0].strip()] = row[1].strip()
    return mapping


def collect(folder: Path, assignments: list[str], mapping: dict[str, str] | None = None
            ) -> tuple[list[Submission], list[str]]:
    """Find the submissions in ``folder``; return them and the problems found (one line each).

    ``mapping`` gives the student id of files by their name (or path relative to ``folder``);
    it wins over the id taken from the folder or the file name. Two or more files that map to the
    same student and assignment are all kept aside: the submission is returned with its ``rivals``
    set, is not graded, and is reported as needing a manual look (the instructor chooses the file).
    """
    mapping = mapping or {}
    found: dict[tuple[str, str], Submission] = {}
    problems: list[str] = []
    for path in sorted(folder.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        parts = path.relative_to(folder).parts
        assignment, prefix = _assignment_in(path.name, assignments)
        if len(parts) >= 3 and parts[-2] in assignments:
            assignment = parts[-2]
        if assignment is None:
            problems.append(f"{path}: no assignment id ({', '.join(assignments)}) in its name or folder; needs a manual look")
            continue
        relative = "/".join(parts)
        student = mapping.get(relative) or mapping.get(path.name) or (parts[0] if len(parts) >= 2 else prefix)
        if not student or not _STUDENT_ID.fullmatch(student):
            problems.append(f"{path}: cannot tell a valid student id (letters, digits, '_', '.', '-'); needs a manual look")
            continue
        notes = []
        if path.name != f"{assignment}.ipynb":
            notes.append(f"renamed '{path.name}' to '{assignment}.ipynb'")
        key = (student, assignment)
        if key in found:
            found[key].rivals = [*(found[key].rivals or []), path]
        else:
            found[key] = Submission(student, assignment, path, notes)
    for submission in found.values():
        if submission.rivals:
            files = ", ".join(f"'{p.relative_to(folder)}'" for p in [submission.path, *submission.rivals])
            submission.needs_manual_look = True
            submission.notes = [f"{len(submission.rivals) + 1} files for {submission.student}/{submission.assignment} "
                                f"({files}); none was graded: keep one and grade again"]
    return list(found.values()), problems


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


def place(submissions: list[Submission], root: Path, skip_tag: str | None = None) -> None:
    """Copy each submission to ``root/submitted/<student>/<assignment>/<assignment>.ipynb``.

    A submission whose graded cells lost their metadata or were moved, copied or deleted is
    rebuilt on the release notebook first (grading.repair). Code that tampers with grading is noted
    and flagged for a manual look (grading.scan). With ``skip_tag``, the experiment cells are
    tagged with it (see `mark_experiments`).
    """
    staged = [(s, s.path.read_bytes()) for s in submissions]
    releases: dict[str, nbformat.NotebookNode | None] = {}  # Each release notebook is read once.
    for submission, content in staged:
        target_dir = root / "submitted" / submission.student / submission.assignment
        if target_dir.exists():
            shutil.rmtree(target_dir)
        target_dir.mkdir(parents=True)
        target = target_dir / f"{submission.assignment}.ipynb"
        try:
            notebook = nbformat.reads(content.decode("utf-8"), as_version=4)
        except Exception as error:  # noqa: BLE001 - nbgrader reports an unreadable notebook itself.
            submission.notes.append(f"not a readable notebook ({type(error).__name__})")
            submission.needs_manual_look = True
            target.write_bytes(content)
            continue
        if submission.assignment not in releases:
            path = root / "release" / submission.assignment / f"{submission.assignment}.ipynb"
            releases[submission.assignment] = nbformat.read(path, as_version=4) if path.exists() else None
        release = releases[submission.assignment]
        if release is not None:
            fixed = repair(notebook, release)
            if fixed.changed:
                notebook = fixed.notebook
                submission.repaired = True
                submission.needs_manual_look |= fixed.needs_manual_look
                submission.notes.extend(fixed.notes)
        suspicious = scan(notebook, release)
        if suspicious:
            submission.needs_manual_look = True
            submission.notes.append("code that no task needs and that can tamper with grading or with what a "
                                    "grader's browser shows: " + "; ".join(suspicious))
        markup = markdown_findings(notebook, release)
        if markup:
            submission.needs_manual_look = True
            submission.notes.append("raw HTML or script links in markdown (formgrader and feedback show it "
                                    "sanitized): " + "; ".join(markup))
        if skip_tag:
            mark_experiments(notebook, skip_tag)
        nbformat.write(notebook, target)


def autograde(root: Path, submission: Submission, cell_timeout: int | None, student_timeout: float,
              skip_tag: str | None = None, memory_limit_gb: float | None = 8.0, plan: Path | None = None,
              guard: bool = True, sanitize: bool = True) -> str:
    """Autograde one submission in its own nbgrader process; return its status.

    ``skip_tag`` is the tag of the cells nbgrader skips (see `place`); when None, the random tag
    of nbgrader_config.py applies and no cell is skipped. ``memory_limit_gb`` caps the memory of
    nbgrader and of the student's kernel. With ``plan`` (a sandbox plan file), the kernel runs in
    the sandbox and every process it leaves is killed afterwards. ``guard=False`` grades test cells
    the way plain nbgrader does, and ``sanitize=False`` writes the autograded notebook unsanitized
    (only the tests that prove the guard's and the sanitizer's worth use them).
    """
    args = ["autograde", submission.assignment, "--student", submission.student, "--force"]
    if not guard:
        args.append("--GuardedExecute.guard=False")
    if not sanitize:
        args.append(UNSANITIZED)
    if skip_tag:
        args.append(f"--Execute.skip_cells_with_tag={skip_tag}")
    if cell_timeout is not None:
        args.append(f"--Execute.timeout={cell_timeout}")
    environment = {PLAN_VARIABLE: str(plan)} if plan else {}
    try:
        run = nbgrader(args, root, timeout=student_timeout, autograding=True, memory_limit_gb=memory_limit_gb,
                       environment=environment)
    finally:
        if plan:
            sandbox.kill_sandbox_processes(json.loads(plan.read_text())["uid"])
    if run.timed_out:
        return f"timed out after {student_timeout:g} s (0 points; needs a manual look)"
    if run.returncode != 0:
        if "CellTimeoutError" in run.output:
            return "timed out: a cell ignored the interrupt (0 points; needs a manual look)"
        last = run.output.strip().splitlines()[-1] if run.output.strip() else ""
        return f"needs a manual look: grading failed: {last}"
    status = "needs a manual look" if submission.needs_manual_look else "repaired" if submission.repaired else "graded"
    details = list(submission.notes)
    if "Timeout waiting for execute reply" in run.output:
        details.insert(0, "a cell ran past the time limit and was interrupted")
    return status + ("; " + "; ".join(details) if details else "")


def grade_folder(folder: Path, root: Path = ROOT, assignments: list[str] | None = None,
                 cell_timeout: int | None = None, student_timeout: float = 1200.0,
                 csv_path: Path | None = None, log=print, mapping: dict[str, str] | None = None,
                 memory_limit_gb: float | None = 8.0, feedback: bool = True, isolation: str = "auto",
                 guard: bool = True, sanitize: bool = True) -> list[tuple[Scores, str]]:
    """Grade every submission in ``folder``; export grades to CSV; return (scores, status) rows.

    With ``feedback``, each graded student also gets ``feedback/<student>/<assignment>/*.html``:
    scores, visible tests and error messages, without the hidden tests' code (grading.feedback).
    ``isolation`` is "on" (kernels run in the sandbox, or nothing is graded), "off", or "auto" (the
    sandbox when it works here, with a warning when it does not). ``sanitize=False`` leaves the
    autograded notebooks and the feedback unsanitized (only for the tests that prove it matters).
    A student's files that collide (see `collect`) are not graded; their row says why.
    """
    assignments = assignments or ASSIGNMENTS
    submissions, problems = collect(folder, assignments, mapping)
    for problem in problems:
        log(f"skipped: {problem}")
    kept_aside = [s for s in submissions if s.rivals]
    submissions = [s for s in submissions if not s.rivals]
    for submission in submissions:
        for note in submission.notes:
            log(f"{submission.student}/{submission.assignment}: {note}")
    build(root, sorted({s.assignment for s in submissions}))
    # A fresh random tag for this run: students cannot put it on a test cell in advance.
    skip_tag = "experiment-" + secrets.token_hex(16)
    place(submissions, root, skip_tag)
    plan_file = _sandbox_plan(root, folder, isolation, log)
    rows = []
    try:
        for submission in sorted(submissions, key=lambda s: (s.assignment, s.student)):
            rows.append(_grade_one(root, submission, cell_timeout, student_timeout, skip_tag, memory_limit_gb,
                                   plan_file, guard, feedback, log, sanitize))
    finally:
        if plan_file:
            plan_file.unlink()
    for submission in kept_aside:
        status = "needs a manual look: " + "; ".join(submission.notes)
        log(f"{submission.student}/{submission.assignment}: {status}")
        rows.append((Scores(submission.student, submission.assignment), status))
    csv_path = csv_path or root / "grades.csv"
    run = nbgrader(["export", f"--to={csv_path}"], root)
    if run.returncode != 0:
        raise RuntimeError(f"nbgrader export failed:\n{run.output}")
    log(f"grades exported to {csv_path}")
    return rows


def _sandbox_plan(root: Path, folder: Path, isolation: str, log) -> Path | None:
    """Check that the sandbox works here and write its plan to a file; None when grading without it."""
    if isolation not in ("auto", "on", "off"):
        raise ValueError(f"isolation must be 'auto', 'on' or 'off', not {isolation!r}")
    if isolation == "off":
        log("isolation: off (students' code runs as this user and can read and write what it can)")
        return None
    plan = sandbox.plan_for(root, folder)
    problem = sandbox.probe(plan)
    if problem:
        if isolation == "on":
            raise RuntimeError(f"the grading sandbox does not work here: {problem}")
        log(f"WARNING: grading without isolation: {problem}. Students' code can read source/ and "
            "solutions/ and write the gradebook; run the grading command as root (in a container) to isolate it.")
        return None
    with tempfile.NamedTemporaryFile("w", prefix="sandbox-plan-", suffix=".json", delete=False) as handle:
        json.dump(plan, handle)
    log(f"isolation: each kernel runs as uid {plan['uid']} and cannot see {', '.join(plan['hidden'])}")
    return Path(handle.name)


def _grade_one(root: Path, submission: Submission, cell_timeout: int | None, student_timeout: float,
               skip_tag: str, memory_limit_gb: float | None, plan_file: Path | None, guard: bool,
               feedback: bool, log, sanitize: bool = True) -> tuple[Scores, str]:
    """Autograde one submission, read its scores and write its feedback."""
    status = autograde(root, submission, cell_timeout, student_timeout, skip_tag, memory_limit_gb, plan_file, guard,
                       sanitize)
    try:
        scores = read_scores(root, submission.assignment, submission.student)
    except LookupError:
        scores = Scores(submission.student, submission.assignment)
    log(f"{submission.student}/{submission.assignment}: {status}, {scores.total:g}/{scores.max_total:g}")
    if feedback and scores.tasks:
        run = nbgrader(["generate_feedback", submission.assignment, "--student", submission.student, "--force",
                        *([] if sanitize else [UNSANITIZED])], root, timeout=300)
        if run.returncode != 0:
            log(f"{submission.student}/{submission.assignment}: feedback failed: {run.output.strip()[-300:]}")
    return scores, status


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m grading.grade", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="folder of submissions")
    parser.add_argument("--assignment", action="append", choices=ASSIGNMENTS, help="grade only these (repeatable)")
    parser.add_argument("--cell-timeout", type=int, default=None, help="seconds per cell (default: nbgrader_config.py)")
    parser.add_argument("--student-timeout", type=float, default=1200.0, help="seconds per student and assignment")
    parser.add_argument("--csv", type=Path, default=None, help="where to export grades (default: grades.csv)")
    parser.add_argument("--students", type=Path, default=None,
                        help="CSV of 'file,student_id' rows naming the student of each file (flat folders)")
    parser.add_argument("--memory-limit-gb", type=float, default=8.0, help="memory per grading process (0: no limit)")
    parser.add_argument("--no-feedback", action="store_true", help="do not write feedback/ for the students")
    parser.add_argument("--sandbox", choices=["auto", "on", "off"], default="auto",
                        help="run each kernel as another user that cannot see the course's files (needs root); "
                             "auto: when it works here, with a warning when it does not")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        parser.error(f"{args.folder} is not a folder")
    try:
        mapping = read_mapping(args.students) if args.students else None
    except (OSError, ValueError) as error:
        parser.error(str(error))
    rows = grade_folder(args.folder.resolve(), ROOT, args.assignment, args.cell_timeout, args.student_timeout,
                        args.csv, mapping=mapping, memory_limit_gb=args.memory_limit_gb or None,
                        feedback=not args.no_feedback, isolation=args.sandbox)
    print()
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
