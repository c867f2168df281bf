"""Grades into Canvas and Moodle (grading/pipeline/export.py), Canvas's submissions zip in (grading/pipeline/lms.py).

The unit tests fill sheets from grades made by hand. The Canvas round trip runs the instructor's
commands on a Canvas gradebook export of four students (names with commas, quotes and Chinese
characters): Canvas's *Download Submissions* zip of three of them collected by nbgrader's
``zip_collect`` with the course's Canvas collector, and the three sample students graded by the
grading command (the session's gradebook, which tests/test_pipeline.py checks) exported with
``python -m grading.pipeline.export --canvas`` and parsed back.
"""

from __future__ import annotations

import csv
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from conftest import copy_course

from grading.config import ASSIGNMENTS, ROOT
from grading.pipeline.export import Grades, fill_canvas, main, moodle_table
from grading.pipeline.lms import CanvasCollector, parse_canvas_file_name, read_canvas, write_csv

ASSIGNMENT = ASSIGNMENTS[0]
HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", f"{ASSIGNMENT} (4521)", "Homework 0 (4400)",
          "Current Score", "Final Score"]
# Canvas's export: the Points Possible row, four students, Canvas's test student (no SIS User ID).
PEOPLE = [
    ["Wang, Xiaoming 王小明", "101", "s2024001", "wxm", "Section A"],
    ['O"Brien, Ann "Annie"', "102", "s2024002", "annie", "Section A"],
    ["李, 雷", "103", "s2024003", "lilei", "Section B"],
    ["Zhang, San 张三", "104", "s2024004", "zs", "Section B"],
]
ROWS = [["    Points Possible", "", "", "", "", "22", "10", "(read only)", "(read only)"],
        *[[*person, "", "9", "90", "90"] for person in PEOPLE],
        ["Student, Test", "105", "", "", "", "", "", "", ""]]


def _canvas_export(path: Path, header=HEADER, rows=ROWS) -> Path:
    write_csv(path, header, rows)
    return path


def _read_back(path: Path) -> list[list[str]]:
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf"), "the file must start with UTF-8's byte order mark (Excel needs it)"
    with open(path, encoding="utf-8-sig", newline="") as handle:
        return list(csv.reader(handle))


def test_canvas_fills_the_matching_column_and_adds_a_new_one(tmp_path):
    sheet = read_canvas(_canvas_export(tmp_path / "export.csv"))
    grades = Grades(maxima={ASSIGNMENT: 22.0, "02_paged_kv_cache": 39.0},
                    scores={("s2024001", ASSIGNMENT): 22.0, ("s2024002", ASSIGNMENT): 17.5,
                            ("s2024003", ASSIGNMENT): 0.0, ("s2024001", "02_paged_kv_cache"): 39.0,
                            ("s9999999", ASSIGNMENT): 3.0},
                    people={})
    report = fill_canvas(sheet, grades)
    sheet.write(tmp_path / "import.csv")
    table = _read_back(tmp_path / "import.csv")
    header, points, *students, test_student = table
    assert header == [*HEADER[:5], "02_paged_kv_cache", *HEADER[5:]], "the new column goes after Section"
    assert points == ["    Points Possible", "", "", "", "", "39", "22", "10", "(read only)", "(read only)"]
    assert [row[:5] for row in students] == PEOPLE, "names, ids and sections must come back intact"
    assert [row[5:7] for row in students] == [["39", "22"], ["0", "17.5"], ["0", "0"], ["0", "0"]]
    assert all(row[7:] == ["9", "90", "90"] for row in students), "other columns are written back as they were"
    assert test_student == ["Student, Test", "105", "", "", "", "", "", "", "", ""]
    assert report.written == 4 and report.not_in_roster == ["s9999999"]
    assert report.without_submission == ["Zhang, San 张三 (s2024004) 01_eviction_as_ranking",
                                         'O"Brien, Ann "Annie" (s2024002) 02_paged_kv_cache',
                                         "李, 雷 (s2024003) 02_paged_kv_cache",
                                         "Zhang, San 张三 (s2024004) 02_paged_kv_cache"]
    assert report.problems == ["rows without a SIS User ID, left as they were: Student, Test"]
    text = (tmp_path / "import.csv").read_text(encoding="utf-8-sig")
    assert '"O""Brien, Ann ""Annie"""' in text and '"Wang, Xiaoming 王小明"' in text, "cells must be quoted"


def test_canvas_warns_when_its_points_differ_and_matches_another_id_column(tmp_path):
    rows = [[*ROWS[0][:5], "100", *ROWS[0][6:]], *ROWS[1:]]
    sheet = read_canvas(_canvas_export(tmp_path / "export.csv", rows=rows), id_column="SIS Login ID")
    report = fill_canvas(sheet, Grades({ASSIGNMENT: 22.0}, {("annie", ASSIGNMENT): 11.0}, {}))
    assert sheet.rows[2][5] == "11" and sheet.rows[1][5] == "0"
    assert report.problems[0] == (f"Canvas's column '{ASSIGNMENT} (4521)' is worth 100 points, the notebook 22: "
                                  "the scores are written as they are, out of 22")


@pytest.mark.parametrize("header, rows, message", [
    (["Student", "ID", "Section"], [], r"not a Canvas gradebook export with the column\(s\) \['SIS User ID'\]"),
    (HEADER, [ROWS[1], ROWS[1]], "lines 2 and 3: two students have the SIS User ID 's2024001'"),
    ([], [], "is empty"),
])
def test_a_bad_canvas_export_is_refused_with_the_reason(tmp_path, header, rows, message):
    path = _canvas_export(tmp_path / "export.csv", header, rows) if header else tmp_path / "empty.csv"
    if not header:
        path.write_text("\n", encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_canvas(path)


def test_the_command_line_names_a_missing_gradebook(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--canvas", str(_canvas_export(tmp_path / "e.csv")), "--output", str(tmp_path / "i.csv"),
              "--gradebook", str(tmp_path / "none.db")])
    assert stop.value.code == 2 and "no gradebook at" in capsys.readouterr().err
    assert not (tmp_path / "i.csv").exists()


def test_moodle_by_email_and_by_id_number():
    grades = Grades(maxima={ASSIGNMENT: 22.0},
                    scores={("s1", ASSIGNMENT): 20.0, ("s3", ASSIGNMENT): 5.0},
                    people={"s1": {"first_name": "Xiaoming, Jr.", "last_name": "王", "email": "wxm@example.edu"},
                            "s2": {"first_name": "Ann", "last_name": 'O"Brien', "email": ""},
                            "s3": {"first_name": "", "last_name": "", "email": ""}})
    roster = {"s3": {"first_name": "雷", "last_name": "李", "email": "lilei@example.edu"}}
    header, rows, report = moodle_table(grades, "email", roster)
    assert header == ["First name", "Last name", "Email address", ASSIGNMENT]
    assert rows == [["Xiaoming, Jr.", "王", "wxm@example.edu", "20"], ["雷", "李", "lilei@example.edu", "5"]]
    assert report.problems == ["s2 has no email address (give it with --roster): not written"]
    header, rows, report = moodle_table(grades, "idnumber")
    assert header[2] == "ID number" and [row[2:] for row in rows] == [["s1", "20"], ["s2", "0"], ["s3", "5"]]
    assert report.without_submission == [f"s2 {ASSIGNMENT}"]


def test_canvas_file_names_are_parsed():
    assert parse_canvas_file_name("obrienann_LATE_102_9002_Copy of 01_eviction_as_ranking.ipynb") == {
        "name": "obrienann", "canvas_id": "102", "submission_id": "9002",
        "original": "Copy of 01_eviction_as_ranking.ipynb"}
    assert parse_canvas_file_name("李雷_103_9003_01_eviction_as_ranking-1.ipynb")["canvas_id"] == "103"
    assert parse_canvas_file_name("01_eviction_as_ranking.ipynb") is None


# Canvas's zip in: each submission under the file name Canvas gives it.
SUBMITTERS = {"reference_solution": "wangxiaoming_101_9001_{a}.ipynb",
              "typical_mistakes": "obrienann_LATE_102_9002_Copy of {a}.ipynb",
              "unchanged_release": "李雷_103_9003_{a}-1.ipynb"}


@pytest.fixture(scope="module")
def zip_collected(tmp_path_factory):
    """Canvas's submissions zip, collected by nbgrader's zip_collect with the course's Canvas collector."""
    from grading.authoring.samples import sample_submissions

    course = copy_course(tmp_path_factory.mktemp("canvas") / "course")
    _canvas_export(course / "canvas_export.csv")
    archive = course / "downloaded" / ASSIGNMENT / "archive"
    archive.mkdir(parents=True)
    samples = sample_submissions(ASSIGNMENT)
    with zipfile.ZipFile(archive / "submissions.zip", "w") as bundle:
        for sample, name in SUBMITTERS.items():
            bundle.writestr(name.format(a=ASSIGNMENT), nbformat.writes(samples[sample]))
        bundle.writestr(f"stranger_999_9004_{ASSIGNMENT}.ipynb", nbformat.writes(samples["reference_solution"]))
    collect = subprocess.run([sys.executable, "-m", "nbgrader", "zip_collect", ASSIGNMENT,
                              "--collector=grading.pipeline.lms.CanvasCollector",
                              "--CanvasCollector.roster=canvas_export.csv"],
                             cwd=course, capture_output=True, text=True, timeout=300)
    assert collect.returncode == 0, collect.stdout + collect.stderr
    return course, samples, collect.stdout + collect.stderr


def test_canvas_zip_is_collected_by_student_id(zip_collected):
    course, samples, log = zip_collected
    submitted = course / "submitted"
    found = sorted(path.relative_to(submitted).as_posix() for path in submitted.rglob("*.ipynb"))
    assert found == [f"{sis}/{ASSIGNMENT}/{ASSIGNMENT}.ipynb" for sis in ("s2024001", "s2024002", "s2024003")]
    for sample, sis in zip(SUBMITTERS, ("s2024001", "s2024002", "s2024003")):
        collected = nbformat.read(submitted / sis / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
        assert [cell.source for cell in collected.cells] == [cell.source for cell in samples[sample].cells], sis
    assert "Canvas user 999 (stranger) has no SIS User ID in canvas_export.csv; skipped" in log


# Grades out: the three sample students of every notebook, graded by the grading command (the
# session's gradebook of tests/conftest.py), in a Canvas export with a fourth student who submitted nothing.
SAMPLE_PEOPLE = [[*PEOPLE[0][:2], "reference_solution", *PEOPLE[0][3:]],
                 [*PEOPLE[1][:2], "typical_mistakes", *PEOPLE[1][3:]],
                 [*PEOPLE[2][:2], "unchanged_release", *PEOPLE[2][3:]], PEOPLE[3]]


def test_canvas_round_trip_has_exact_scores_and_intact_names(parallel_grades, tmp_path):
    course, grades = parallel_grades
    rows = [ROWS[0], *[[*person, "", "9", "90", "90"] for person in SAMPLE_PEOPLE], ROWS[-1]]
    export = _canvas_export(tmp_path / "canvas_export.csv", rows=rows)
    exported = subprocess.run([sys.executable, "-m", "grading.pipeline.export", "--canvas", str(export), "--output",
                               str(tmp_path / "canvas_import.csv"), "--gradebook", str(course / "gradebook.db")],
                              cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    header, points, *students, test_student = _read_back(tmp_path / "canvas_import.csv")
    others = [a for a in ASSIGNMENTS if a != ASSIGNMENT]
    assert header == [*HEADER[:5], *others, *HEADER[5:]], "the other notebooks' columns are added after Section"
    columns = {assignment: header.index(name) for assignment, name in [(a, a) for a in others] +
               [(ASSIGNMENT, HEADER[5])]}
    assert [row[:5] for row in students] == SAMPLE_PEOPLE, "names, ids and sections must come back intact"
    for row in students[:3]:
        scores = {a: grades[(row[2], a)][0] for a in ASSIGNMENTS}
        assert {a: row[column] for a, column in columns.items()} == {a: f"{s.total:.10g}" for a, s in scores.items()}
    cells = [[row[column] for column in columns.values()] for row in [*students, points]]
    assert set(cells[0]) != {"0"} and set(cells[2]) == set(cells[3]) == {"0"}
    assert cells[1] not in (cells[0], cells[2]), "the typical mistakes score between the two"
    assert cells[4] == [f"{grades[('reference_solution', a)][0].max_total:.10g}" for a in columns]
    assert cells[0] == cells[4], "the reference solution scores full marks"
    assert test_student == [*ROWS[-1][:5], *[""] * len(others), *ROWS[-1][5:]]
    assert f"no submission, 0 written ({len(ASSIGNMENTS)}): Zhang, San 张三 (s2024004) {ASSIGNMENT}" in exported.stdout


def test_canvas_collector_keeps_other_names(tmp_path):
    collector = CanvasCollector(roster=str(_canvas_export(tmp_path / "export.csv")))
    assert collector.collect(str(tmp_path / "wxm_101_1_notes.ipynb")) == {"student_id": "s2024001",
                                                                          "file_id": "notes.ipynb"}
    assert collector.collect(str(tmp_path / "wxm_101_1_notes.txt")) is None
