"""Merges the gradebooks of grading shards into the course's gradebook, exports CSV, prints the table.

    python -m grading.pipeline.merge OUTPUT [--csv grades.csv]

Every run of the grading command (python -m grading.grade) grades one shard of the students and
keeps what it graded in ``OUTPUT/grading-shards/K-of-N/``: a gradebook file and ``results.json``
(each student's statuses, scores, content hash and grading time). Merging copies each student's
newest result into ``OUTPUT/gradebook.db`` and ``OUTPUT/grading-results.json``:

- a student graded in two shard files (the shards were re-cut, or a student was graded twice)
  keeps the newer result, and the log says so;
- merging again changes nothing (a student already merged from the same result is skipped), and a
  re-run shard replaces its own students' rows;
- the assignments' definitions are copied into the target gradebook when it lacks them.

Students of one assignment whose solution cells are the same once whitespace and comments are
set aside are flagged ``needs a manual look: same solution as <other>`` (grading/pipeline/copies.py; the
score is unchanged), across every shard. Then the grades are exported to CSV with nbgrader's
exporter, and the statuses to ``statuses.csv`` beside it, and the score table is printed.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import time
import warnings
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from sqlalchemy.exc import SAWarning

from grading.pipeline.copies import find_copies, flagged
from grading.pipeline.nbgrader_cli import tools_on_path
from grading.pipeline.report import Scores, format_table

SHARDS = "grading-shards"
RESULTS = "results.json"
MERGED = "grading-results.json"


def read_results(path: Path) -> dict:
    """The students' records of a results file ({} when there is none yet)."""
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("students", {})
    except FileNotFoundError:
        return {}


def write_results(path: Path, students: dict, **extra) -> None:
    """Write a results file atomically (a reader never sees half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps({**extra, "students": students}, indent=1, sort_keys=True), encoding="utf-8")
    partial.replace(path)


def record_problems(path: Path, problems: list) -> None:
    """Keep in a shard's results file the files its collect could not grade (`grading.pipeline.collect.Problem`
    lines), replacing those of its earlier runs: each run's collect sees the whole submissions folder."""
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        content = {"students": {}}
    content.update(collected_at=time.time(), problems=[
        {"path": getattr(problem, "path", ""), "assignment": getattr(problem, "assignment", None) or "",
         "student": getattr(problem, "student", None) or "", "status": f"not graded: {problem}"}
        for problem in problems])
    write_results(path, content.pop("students"), **content)


def newest_problems(output: Path) -> list[dict]:
    """The files not graded, as the shard that collected last saw them (every shard sees the whole folder)."""
    newest: tuple[float, list[dict]] = (0.0, [])
    for results in sorted((output / SHARDS).glob(f"*/{RESULTS}")):
        try:
            content = json.loads(results.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if content.get("collected_at", 0.0) > newest[0]:
            newest = (content["collected_at"], content.get("problems", []))
    return newest[1]


def _open(db: Path, durable: bool = True) -> Gradebook:
    """nbgrader's `Gradebook` on the file ``db``; with ``durable=False`` SQLite does not wait for the disk at each
    of the API's many commits (a merge writes a new file, or one that it can write again from the shards)."""
    tools_on_path()
    gradebook = Gradebook(f"sqlite:///{db}")
    if not durable:
        from sqlalchemy import text

        gradebook.db.execute(text("PRAGMA synchronous = OFF"))
    return gradebook


def _definition(gradebook: Gradebook, assignment: str) -> list:
    """What defines an assignment in a gradebook: its notebooks and cells, with scores and checksums."""
    try:
        found = gradebook.find_assignment(assignment)
    except MissingEntry:
        return []
    return sorted((notebook.name, sorted((c.name, c.max_score, c.cell_type) for c in notebook.grade_cells),
                   sorted(c.name for c in notebook.solution_cells),
                   sorted((c.name, c.checksum, c.locked) for c in notebook.source_cells))
                  for notebook in found.notebooks)


def copy_definition(source: Gradebook, target: Gradebook, assignment: str) -> None:
    """Make ``target`` define ``assignment`` as ``source`` does (notebooks, cells, due date)."""
    if _definition(source, assignment) == _definition(target, assignment):
        return
    original = source.find_assignment(assignment)
    target.update_or_create_assignment(assignment, duedate=original.duedate)
    for notebook in original.notebooks:
        target.update_or_create_notebook(notebook.name, assignment)
        for cell in notebook.source_cells:
            target.update_or_create_source_cell(cell.name, notebook.name, assignment, cell_type=cell.cell_type,
                                                locked=cell.locked, source=cell.source, checksum=cell.checksum)
        for cell in notebook.grade_cells:
            target.update_or_create_grade_cell(cell.name, notebook.name, assignment, max_score=cell.max_score,
                                               cell_type=cell.cell_type)
        for cell in notebook.solution_cells:
            target.update_or_create_solution_cell(cell.name, notebook.name, assignment)
        for cell in notebook.task_cells:
            target.update_or_create_task_cell(cell.name, notebook.name, assignment, max_score=cell.max_score,
                                              cell_type=cell.cell_type)


def copy_students(source_db: Path, target_db: Path, work: dict[str, list[str]]) -> None:
    """Copy each ``student: [assignment, ...]`` of ``work`` from one gradebook file to another, with nbgrader's
    `Gradebook` API.

    A student's earlier submission of those assignments in the target is replaced; one the source does not
    have (grading never got that far) is removed. The target gets the source's definition of an assignment
    when it lacks it (a new target file starts with the source's definitions). Notebooks and cells are matched
    by name, so two gradebooks built apart (two shards) merge as well as copies of one.
    """
    if not work:
        return
    if not source_db.exists():  # No notebook of the shard got as far as grading (none could be read, say).
        if target_db.exists():
            with _open(target_db, durable=False) as target:
                for student, names in sorted(work.items()):
                    for assignment in names:
                        try:
                            target.remove_submission(assignment, student)
                        except MissingEntry:
                            pass
        return
    target_db.parent.mkdir(parents=True, exist_ok=True)
    if not target_db.exists():
        # A copy of the source without its students: the same schema and definitions, without nbgrader's slow
        # creation of a gradebook (it asks alembic for the schema's version in a process of its own).
        partial = target_db.with_suffix(".partial")
        shutil.copy(source_db, partial)
        with _open(partial, durable=False) as fresh:
            for student in fresh.students:
                fresh.remove_student(student.id)
        partial.replace(target_db)
    with _open(source_db) as source, _open(target_db, durable=False) as target:
        for assignment in sorted({a for names in work.values() for a in names}):
            copy_definition(source, target, assignment)
        with warnings.catch_warnings():
            # nbgrader's add_submission reads the new submission's assignment before adding it to the session,
            # which SQLAlchemy notes at every autoflush; the submission is added right after.
            warnings.filterwarnings("ignore", message="Object of type <Submitted", category=SAWarning)
            for student, names in sorted(work.items()):
                for assignment in names:
                    _copy_submission(source, target, assignment, student)


def _copy_submission(source: Gradebook, target: Gradebook, assignment: str, student: str) -> None:
    """Replace ``student``'s submission of ``assignment`` in ``target`` by the one in ``source`` (or by none)."""
    try:
        target.remove_submission(assignment, student)
    except MissingEntry:
        pass
    try:
        original = source.find_submission(assignment, student)
    except MissingEntry:
        return
    who = original.student
    target.update_or_create_student(student, first_name=who.first_name, last_name=who.last_name, email=who.email,
                                    lms_user_id=who.lms_user_id)
    copy = target.add_submission(assignment, student, timestamp=original.timestamp, extension=original.extension)
    notebooks = {notebook.name: notebook for notebook in copy.notebooks}
    for notebook in original.notebooks:
        mirror = notebooks[notebook.name]
        mirror.flagged, mirror.late_submission_penalty = notebook.flagged, notebook.late_submission_penalty
        grades = {grade.name: grade for grade in mirror.grades}
        for grade in notebook.grades:
            for column in ("auto_score", "manual_score", "extra_credit", "needs_manual_grade"):
                setattr(grades[grade.name], column, getattr(grade, column))
        comments = {comment.name: comment for comment in mirror.comments}
        for comment in notebook.comments:
            comments[comment.name].auto_comment = comment.auto_comment
            comments[comment.name].manual_comment = comment.manual_comment
    target.db.commit()


def newest_records(output: Path, log=print) -> dict[str, tuple[dict, Path]]:
    """Each student's newest record among the shard results in ``output``, with its shard folder."""
    chosen: dict[str, tuple[dict, Path]] = {}
    for results in sorted((output / SHARDS).glob(f"*/{RESULTS}")):
        for student, record in read_results(results).items():
            if student in chosen:
                older, newer = sorted([chosen[student], (record, results.parent)], key=lambda r: r[0]["graded_at"])
                if older[0]["graded_at"] != newer[0]["graded_at"]:
                    log(f"{student}: graded in shard {older[1].name} and in shard {newer[1].name}; kept the newer "
                        f"result, from {newer[1].name}")
                chosen[student] = newer
            else:
                chosen[student] = (record, results.parent)
    return chosen


def rows_of(records: dict[str, dict]) -> list[tuple[Scores, str]]:
    """(scores, status) rows of the records, by assignment and student."""
    rows = []
    for student, record in records.items():
        for assignment, result in record["assignments"].items():
            tasks = {label: (float(score), float(maximum)) for label, (score, maximum) in result["tasks"].items()}
            rows.append((Scores(student, assignment, tasks), result["status"]))
    return sorted(rows, key=lambda row: (row[0].assignment, row[0].student))


def merge(output: Path, csv_path: Path | None = None, log=print) -> list[tuple[Scores, str]]:
    """Merge every shard of ``output`` into ``output/gradebook.db``; export; return the rows."""
    merged_path = output / MERGED
    target_db = output / "gradebook.db"
    # What was merged before counts only while the gradebook it went into is still there.
    merged = read_results(merged_path) if target_db.exists() else {}
    chosen = newest_records(output, log)
    changed = 0
    by_shard: dict[Path, dict[str, list[str]]] = {}
    for student, (record, shard) in sorted(chosen.items()):
        previous = merged.get(student)
        if previous is not None and previous["graded_at"] >= record["graded_at"]:
            continue  # Merged already (or a newer result is in the target).
        by_shard.setdefault(shard, {})[student] = sorted(record["assignments"])
        merged[student] = {**record, "shard": shard.name}
        changed += 1
    for shard, work in sorted(by_shard.items()):
        copy_students(shard / "gradebook.db", target_db, work)
    write_results(merged_path, merged)
    log(f"merged {changed} student(s) from {len(list((output / SHARDS).glob('*/' + RESULTS)))} shard(s) into "
        f"{target_db} ({len(merged)} student(s) in all)")
    rows = with_copies_flagged(rows_of(merged), merged, log)
    problems = newest_problems(output)
    for problem in problems:
        log(f"{problem['status']}")
    export(target_db, csv_path or output / "grades.csv", rows, log, problems)
    return rows


def with_copies_flagged(rows: list[tuple[Scores, str]], records: dict[str, dict], log=print
                        ) -> list[tuple[Scores, str]]:
    """The rows, with ``needs a manual look: same solution as <other>`` for every copy (grading/pipeline/copies.py).

    Found anew at every merge from the fingerprints of all shards' results, so a student who
    changed their solution since loses the flag; the stored statuses stay as graded.
    """
    copies = find_copies(records)
    for (student, assignment), note in sorted(copies.items()):
        log(f"{student}/{assignment}: {note}")
    return [(scores, flagged(status, copies[(scores.student, scores.assignment)])
             if (scores.student, scores.assignment) in copies else status) for scores, status in rows]


def export(db: Path, csv_path: Path, rows: list[tuple[Scores, str]], log=print, problems: list[dict] = ()) -> None:
    """nbgrader's CSV export of the gradebook, and ``statuses.csv`` (every status) beside it.

    ``problems`` (`newest_problems`) are the files that were not graded (no valid student id, no assignment id, not
    readable): each gets a row of statuses.csv with its assignment and student when known, no score, and why.
    """
    from nbgrader.plugins import CsvExportPlugin

    csv_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with _open(db) as gradebook:
            CsvExportPlugin(to=str(csv_path)).export(gradebook)
    except Exception as error:  # noqa: BLE001 - the CSV is written whatever the gradebook holds.
        log(f"WARNING: nbgrader's export failed ({type(error).__name__}: {error}); {csv_path} is written from "
            "this run's scores instead")
        with open(csv_path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
                             "raw_score", "late_submission_penalty", "score", "max_score"])
            for scores, _ in rows:
                writer.writerow([scores.assignment, "", "", scores.student, "", "", "", scores.total, 0.0,
                                 scores.total, scores.max_total])
    with open(csv_path.with_name("statuses.csv"), "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["assignment", "student_id", "score", "max_score", "status"])
        for scores, status in rows:
            writer.writerow([scores.assignment, scores.student, f"{scores.total:g}", f"{scores.max_total:g}", status])
        for problem in problems:
            writer.writerow([problem.get("assignment", ""), problem.get("student", ""), "", "", problem["status"]])
    log(f"grades exported to {csv_path}; every status in {csv_path.with_name('statuses.csv')}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m grading.pipeline.merge", description=__doc__.split("\n\n")[0])
    parser.add_argument("output", type=Path, help="the shared output folder the shards wrote to")
    parser.add_argument("--csv", type=Path, default=None, help="where to export grades (default: OUTPUT/grades.csv)")
    args = parser.parse_args(argv)
    if not (args.output / SHARDS).is_dir():
        parser.error(f"{args.output} holds no {SHARDS}/ folder: grade into it first (python -m grading.grade "
                     "SUBMISSIONS --output OUTPUT --shard K/N)")
    rows = merge(args.output.resolve(), args.csv)
    print()
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
