"""Grades into a learning management system: Canvas's gradebook, or a CSV for Moodle's grade import.

    python -m grading.pipeline.export --canvas canvas_export.csv --output canvas_import.csv [--id-column "SIS User ID"]
    python -m grading.pipeline.export --moodle email|idnumber --output moodle_import.csv [--roster students.csv]
    both: [--gradebook gradebook.db] [--assignment ID ...]

The scores come from nbgrader's gradebook (the grading command's ``gradebook.db``), after nbgrader's
late penalty. Every student of the roster gets a score for every assignment: 0 when the gradebook
has no submission, and such students are listed. Students graded but missing from the roster are
listed and not written.

- ``--canvas``: the gradebook CSV that Canvas exports (*Grades → Export → CSV*) is the roster. Its
  rows are matched to the course's student ids by the ``SIS User ID`` column (``--id-column`` picks
  another). An assignment's column is the one whose name, without Canvas's "(id)", is the
  assignment id (name the Canvas assignment so, and its column is filled); otherwise a column named
  by the assignment id is added, which Canvas imports as a new assignment. Every other cell, the
  "Points Possible" row included, is written back as it was. Import the output in Canvas with
  *Grades → Import*.
- ``--moodle email`` or ``--moodle idnumber``: one row per student of the gradebook (add the
  students who never submitted, with names and emails, by ``--roster``: nbgrader's roster format,
  ``id,first_name,last_name,email``), with "Email address" or "ID number" (the student id) to
  identify them and one column per assignment. In Moodle, *Grades → Import → CSV file*, map that
  column to the user's email address or ID number and each assignment column to its grade item.

Files are written with Python's csv module (a comma, quote or line break in a name is quoted) as
UTF-8 with a byte order mark, so that Excel shows Chinese names correctly.
"""

from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import dataclass, field
from pathlib import Path

from grading.config import ROOT
from grading.pipeline.lms import CanvasSheet, read_canvas, write_csv


@dataclass
class Grades:
    """What the gradebook says: each assignment's points, each submission's score, each student's name."""

    maxima: dict[str, float]
    scores: dict[tuple[str, str], float]
    people: dict[str, dict[str, str]]


@dataclass
class Report:
    """What an export did, for the instructor to read."""

    written: int = 0
    without_submission: list[str] = field(default_factory=list)
    not_in_roster: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def lines(self, output: Path) -> list[str]:
        lines = [f"wrote {self.written} student(s) to {output}"]
        if self.without_submission:
            lines.append(f"no submission, 0 written ({len(self.without_submission)}): "
                         + "; ".join(self.without_submission))
        if self.not_in_roster:
            lines.append(f"graded but not in the roster, not written ({len(self.not_in_roster)}): "
                         + ", ".join(self.not_in_roster))
        lines += [f"WARNING: {problem}" for problem in self.problems]
        return lines


def number(value: float) -> str:
    """A score as an LMS reads it: 22 rather than 22.0, 17.5 as it is."""
    return f"{value:.10g}"


def read_grades(db: Path, assignments: list[str] | None = None) -> Grades:
    """Read every (or the chosen) assignment's scores from an nbgrader gradebook.

    Raises:
        ValueError: when ``db`` does not exist or lacks a chosen assignment.
    """
    from nbgrader.api import Gradebook

    from grading.pipeline.nbgrader_cli import tools_on_path

    if not Path(db).is_file():
        raise ValueError(f"no gradebook at {db}: grade first (python -m grading.grade SUBMISSIONS) or name it "
                         "with --gradebook")
    tools_on_path()
    with Gradebook(f"sqlite:///{Path(db).resolve()}") as gradebook:
        chosen = [a for a in gradebook.assignments if not assignments or a.name in assignments]
        unknown = sorted(set(assignments or []) - {a.name for a in chosen})
        if unknown or not chosen:
            raise ValueError(f"{db} has no assignment {unknown or ''} to export; it has "
                             f"{[a.name for a in gradebook.assignments]}")
        maxima = {a.name: float(a.max_score) for a in chosen}
        scores = {(submission.student.id, a.name):
                  max(0.0, float(submission.score) - float(submission.late_submission_penalty or 0.0))
                  for a in chosen for submission in a.submissions}
        people = {s.id: {"first_name": s.first_name or "", "last_name": s.last_name or "", "email": s.email or ""}
                  for s in gradebook.students}
    return Grades(maxima, scores, people)


def fill_canvas(sheet: CanvasSheet, grades: Grades) -> Report:
    """Write every assignment's scores into the Canvas sheet's rows (see the module's docstring)."""
    report = Report()
    students = sheet.students()
    for assignment, maximum in grades.maxima.items():
        index = sheet.column_of(assignment)
        if index is None:
            index = sheet.add_column(assignment)
        for row in sheet.rows:
            row.extend([""] * (len(sheet.header) - len(row)))
            if sheet.is_points_possible(row):
                if not row[index].strip():
                    row[index] = number(maximum)
                elif _as_float(row[index]) != maximum:
                    report.problems.append(
                        f"Canvas's column {sheet.header[index]!r} is worth {row[index].strip()} points, the "
                        f"notebook {number(maximum)}: the scores are written as they are, out of {number(maximum)}")
                continue
            student = sheet.student_id(row)
            if not student:
                continue
            score = grades.scores.get((student, assignment))
            if score is None:
                report.without_submission.append(f"{row[0].strip()} ({student}) {assignment}")
            row[index] = number(score or 0.0)
    nameless = [row[0].strip() for row in sheet.rows if not sheet.student_id(row) and not sheet.is_points_possible(row)]
    if nameless:
        report.problems.append(f"rows without a {sheet.id_column}, left as they were: {', '.join(nameless)}")
    report.written = len(students)
    report.not_in_roster = sorted({student for student, _ in grades.scores} - set(students))
    return report


def read_roster(path: Path) -> dict[str, dict[str, str]]:
    """nbgrader's roster CSV (``id,first_name,last_name,email``; only ``id`` is required), by student id.

    Raises:
        ValueError: when the file has no ``id`` column.
    """
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        if "id" not in (reader.fieldnames or []):
            raise ValueError(f"{path} needs a header row with an 'id' column (and first_name, last_name, email); "
                             f"it has {reader.fieldnames}")
        return {row["id"].strip(): {key: (row.get(key) or "").strip() for key in ("first_name", "last_name", "email")}
                for row in reader if (row.get("id") or "").strip()}


def moodle_table(grades: Grades, by: str, roster: dict[str, dict[str, str]] | None = None
                 ) -> tuple[list[str], list[list[str]], Report]:
    """The header and rows of a CSV for Moodle's grade import, identifying students by ``email`` or ``idnumber``."""
    report = Report()
    people = {**grades.people, **(roster or {})}
    header = ["First name", "Last name", "Email address" if by == "email" else "ID number", *grades.maxima]
    rows = []
    for student in sorted(people):
        person = people[student]
        identifier = person["email"] if by == "email" else student
        if not identifier:
            report.problems.append(f"{student} has no email address (give it with --roster): not written")
            continue
        row = [person["first_name"], person["last_name"], identifier]
        for assignment in grades.maxima:
            score = grades.scores.get((student, assignment))
            if score is None:
                report.without_submission.append(f"{student} {assignment}")
            row.append(number(score or 0.0))
        rows.append(row)
    report.written = len(rows)
    report.not_in_roster = sorted({student for student, _ in grades.scores} - set(people))
    return header, rows, report


def _as_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m grading.pipeline.export", description=__doc__.split("\n\n")[0])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--canvas", type=Path, metavar="CANVAS_EXPORT.csv",
                        help="the gradebook CSV exported by Canvas; its rows are filled")
    target.add_argument("--moodle", choices=["email", "idnumber"],
                        help="write a CSV for Moodle's grade import, students identified by email or ID number")
    parser.add_argument("--output", type=Path, required=True, help="the CSV to write for the LMS to import")
    parser.add_argument("--gradebook", type=Path, default=ROOT / "gradebook.db",
                        help="nbgrader's gradebook (default: the course's gradebook.db)")
    parser.add_argument("--assignment", action="append", help="export only these assignments (repeatable)")
    parser.add_argument("--id-column", default="SIS User ID",
                        help="Canvas's column that holds the course's student ids (default: SIS User ID)")
    parser.add_argument("--roster", type=Path, help="for Moodle: id,first_name,last_name,email of every student")
    args = parser.parse_args(argv)
    try:
        grades = read_grades(args.gradebook, args.assignment)
        if args.canvas:
            sheet = read_canvas(args.canvas, args.id_column)
            report = fill_canvas(sheet, grades)
            sheet.write(args.output)
        else:
            roster = read_roster(args.roster) if args.roster else None
            header, rows, report = moodle_table(grades, args.moodle, roster)
            write_csv(args.output, header, rows)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    print("\n".join(report.lines(args.output)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
