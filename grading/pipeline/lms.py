"""What the course reads from a learning management system: Canvas's gradebook CSV and its submission files.

- `CanvasSheet` is the gradebook that Canvas exports (*Grades → Export → CSV*): a header row, maybe
  rows without a student id ("Points Possible", Canvas's test student), then one row per student.
  `grading.pipeline.export` fills its assignment columns and writes it back for Canvas to import.
- `CanvasCollector` is a collector for nbgrader's ``zip_collect``: it reads the student of each file
  of Canvas's *Download Submissions* zip from its name, ``<name>_<canvas id>_<submission id>_<file>``
  (``<name>_LATE_<canvas id>_…`` when late), and maps Canvas's user id to the course's student id
  through the same gradebook export (its ``ID`` column to the chosen id column):

      nbgrader zip_collect 01_eviction_as_ranking --collector=grading.pipeline.lms.CanvasCollector \\
          --CanvasCollector.roster=canvas_export.csv

Files are read as UTF-8 with or without a byte order mark, with Python's csv module.
"""

from __future__ import annotations

import csv
import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.plugins import FileNameCollectorPlugin
from traitlets import Unicode

# Canvas's own columns that identify a student; everything after them is a grade or a total.
IDENTITY_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Integration ID", "Section")
POINTS_POSSIBLE = "Points Possible"
CANVAS_FILE = re.compile(r"^(?P<name>.*?)_(?:late_)?(?P<canvas_id>\d+)_(?P<submission_id>\d+)_(?P<original>.+)$",
                         re.IGNORECASE)
# Canvas writes a column's assignment id after its name: "01_eviction_as_ranking (41235)".
_COLUMN_ID = re.compile(r"\s*\(\d+\)\s*$")


@dataclass
class CanvasSheet:
    """A gradebook CSV exported by Canvas, kept cell for cell."""

    path: Path
    header: list[str]
    rows: list[list[str]]
    id_column: str
    added: list[str] = field(default_factory=list)

    @property
    def id_index(self) -> int:
        return self.header.index(self.id_column)

    def student_id(self, row: list[str]) -> str:
        """The row's student id in the course ('' for rows that are no student's)."""
        return row[self.id_index].strip() if len(row) > self.id_index else ""

    def is_points_possible(self, row: list[str]) -> bool:
        return bool(row) and row[0].strip() == POINTS_POSSIBLE

    def students(self) -> dict[str, list[str]]:
        """Each student's row by student id (rows without one are left out)."""
        return {self.student_id(row): row for row in self.rows if self.student_id(row)}

    def column_of(self, assignment: str) -> int | None:
        """The index of the column of ``assignment``: its name, without Canvas's "(id)", is the assignment id."""
        for index, name in enumerate(self.header):
            if _COLUMN_ID.sub("", name).strip().lower() == assignment.lower():
                return index
        return None

    def add_column(self, name: str) -> int:
        """Insert an empty column after Canvas's identity columns and the columns added before it;
        return its index."""
        index = max((self.header.index(column) for column in IDENTITY_COLUMNS if column in self.header),
                    default=-1) + 1 + len(self.added)
        self.added.append(name)
        self.header.insert(index, name)
        for row in self.rows:
            row.extend([""] * (index - len(row)))
            row.insert(index, "")
        return index

    def write(self, path: Path) -> None:
        """Write the sheet for Canvas's import (see `write_csv`)."""
        write_csv(path, self.header, self.rows)


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    """Write a CSV for an LMS: UTF-8 with a byte order mark (Excel then shows Chinese names correctly),
    each cell quoted where it needs it (a comma, a quote, a line break)."""
    with open(path, "w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def read_canvas(path: Path, id_column: str = "SIS User ID") -> CanvasSheet:
    """Read a gradebook CSV that Canvas exported.

    Raises:
        ValueError: when the file has no header, lacks Canvas's ``Student`` and ``ID`` columns or
            ``id_column``, or gives two rows the same student id.
    """
    with open(path, encoding="utf-8-sig", newline="") as handle:
        table = [row for row in csv.reader(handle) if any(cell.strip() for cell in row)]
    if not table:
        raise ValueError(f"{path} is empty: export the gradebook from Canvas (Grades → Export → CSV)")
    header, rows = [cell.strip() for cell in table[0]], [list(row) for row in table[1:]]
    missing = [column for column in ("Student", "ID", id_column) if column not in header]
    if missing:
        raise ValueError(f"{path} is not a Canvas gradebook export with the column(s) {missing}; its columns are "
                         f"{header}. Choose the column that holds the course's student ids with --id-column.")
    sheet = CanvasSheet(Path(path), header, rows, id_column)
    seen: dict[str, int] = {}
    for number, row in enumerate(rows, start=2):
        student = sheet.student_id(row)
        if student and student in seen:
            raise ValueError(f"{path}, lines {seen[student]} and {number}: two students have the {id_column} "
                             f"{student!r}")
        seen[student] = number
    return sheet


def canvas_roster(path: Path, id_column: str = "SIS User ID") -> dict[str, str]:
    """Canvas's user id (the ``ID`` column) -> the course's student id, from a Canvas gradebook export."""
    sheet = read_canvas(path, id_column)
    canvas_ids = sheet.header.index("ID")
    return {row[canvas_ids].strip(): sheet.student_id(row) for row in sheet.rows
            if len(row) > canvas_ids and row[canvas_ids].strip() and sheet.student_id(row)}


def parse_canvas_file_name(name: str) -> dict[str, str] | None:
    """The parts of a file name from Canvas's submissions zip, or None when it is not one."""
    match = CANVAS_FILE.match(name)
    return match.groupdict() if match else None


class CanvasCollector(FileNameCollectorPlugin):
    """nbgrader ``zip_collect`` collector for Canvas's *Download Submissions* zip (see the module's docstring).

    A file whose Canvas user id is not in the roster, or whose name is not Canvas's, is skipped with
    a warning that names it. A notebook whose name contains the assignment id, however Canvas or the
    student renamed it ("Copy of …", "…-1.ipynb"), is collected under the release notebook's name.
    """

    roster = Unicode("canvas_export.csv", help="Canvas's gradebook export: its ID column to the student ids"
                     ).tag(config=True)
    id_column = Unicode("SIS User ID", help="the roster's column that holds the course's student ids"
                        ).tag(config=True)

    @functools.cached_property
    def _students(self) -> dict[str, str]:
        """Canvas user id -> student id, read once from the roster (relative to the course directory)."""
        path = Path(self.roster)
        if not path.is_absolute():
            path = Path(self.parent.coursedir.root if self.parent else ".") / path
        return canvas_roster(path, self.id_column)

    def collect(self, submitted_file: str) -> dict | None:
        name = os.path.basename(submitted_file)
        if os.path.splitext(name)[1] not in self.valid_ext:
            return None
        parts = parse_canvas_file_name(name)
        if parts is None:
            self.log.warning("%s: not a file name from Canvas's submissions zip (<name>_<canvas id>_<submission "
                             "id>_<file>); skipped", name)
            return None
        student = self._students.get(parts["canvas_id"])
        if student is None:
            self.log.warning("%s: Canvas user %s (%s) has no %s in %s; skipped", name, parts["canvas_id"],
                             parts["name"], self.id_column, self.roster)
            return None
        return {"student_id": student, "file_id": self._notebook_name(parts["original"])}

    def _notebook_name(self, original: str) -> str:
        assignment = self.parent.coursedir.assignment_id if self.parent else ""
        stem, extension = os.path.splitext(original)
        if assignment and assignment in stem:
            return assignment + extension
        return original
