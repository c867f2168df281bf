"""Deliberate attacks from inside the kernel, graded through the command, earn nothing and harm no one.

One batch of crafted submissions is graded twice: once as the grading command grades (kernels in
the sandbox, test cells guarded), and once with both protections off. The unprotected run shows
that every attack is real (it gains points, or hurts another student, or outlives its kernel); the
protected run shows that it gains and harms nothing, and that honest students keep full marks.

The attacks: reading the instructor's source and solution notebooks and another student's
submission from disk; writing to the gradebook; overwriting another student's submitted notebook;
patching the test helpers of ``course.checks``; wrapping every later cell in ``try/except`` with an
IPython input transformer; and leaving a background process behind.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nbformat
import pytest

from grading.grade import grade_folder
from grading.report import read_scores
from grading.samples import fill, solution_code

from conftest import sandbox_problem

ASSIGNMENT = "01_eviction_as_ranking"
FILE = f"{ASSIGNMENT}.ipynb"
TASK = "task1_1_select_victim"
WRONG_1_1 = "def select_victim(values):\n    return 'not a key'"
MARKER_SECONDS = "598.25"  # The leftover process sleeps this long; its command line identifies it.


def _steal(paths: list[Path]) -> str:
    """Task 1.1's answer read from the first of ``paths`` that can be opened, and run."""
    return f'''
import json
def select_victim(values):
    return 'not a key'
for path in {[str(p) for p in paths]!r}:
    try:
        notebook = json.load(open(path))
    except OSError:
        continue
    for cell in notebook["cells"]:
        if cell["metadata"].get("nbgrader", {{}}).get("grade_id") == "{TASK}":
            exec("".join(cell["source"]))
    break
'''


def _attacks(course: Path, folder: Path) -> dict[str, str]:
    source = course / "source" / ASSIGNMENT / FILE
    solution = course / "solutions" / ASSIGNMENT / FILE
    victim_upload = folder / "zz_victim" / FILE
    return {
        "a_reads_files": _steal([source, solution, victim_upload]),
        "a_writes_gradebook": WRONG_1_1 + f'''
import sqlite3
try:
    with sqlite3.connect("{course / 'gradebook.db'}") as database:
        database.execute("UPDATE grade SET manual_score = 0")
except Exception:
    pass
''',
        "a_writes_other_students": WRONG_1_1 + f'''
import shutil
try:
    shutil.copy("{course / 'release' / ASSIGNMENT / FILE}", "{course / 'submitted' / 'zz_victim' / ASSIGNMENT / FILE}")
except OSError:
    pass
''',
        "a_patches_checks": WRONG_1_1 + '''
import course.checks
course.checks.check_type = lambda *args, **kwargs: None
course.checks.assert_plain_equal = lambda *args, **kwargs: None
''',
        "a_wraps_cells": WRONG_1_1 + '''
def _swallow_errors(lines):
    return ["try:\\n"] + ["    " + line for line in lines] + ["\\n", "except BaseException:\\n", "    pass\\n"]
get_ipython().input_transformers_post.append(_swallow_errors)
''',
        "a_leaves_a_process": WRONG_1_1 + f'''
import os
if os.fork() == 0:
    os.setsid()
    os.execv("/bin/sleep", ["sleep", "{MARKER_SECONDS}"])
''',
    }


def _leftover_processes() -> list[int]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if MARKER_SECONDS.encode() in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found


def _grade(built_course: Path, tmp_path_factory, protected: bool) -> dict[str, tuple]:
    """Grade the batch in a course of its own (the unprotected run's attacks damage its course)."""
    course = shutil.copytree(built_course, tmp_path_factory.mktemp("course") / "course")
    source = nbformat.read(course / "source" / ASSIGNMENT / FILE, as_version=4)
    release = nbformat.read(course / "release" / ASSIGNMENT / FILE, as_version=4)
    answers = solution_code(source)
    folder = tmp_path_factory.mktemp("attacks")
    for student, code in {"0_first": answers[TASK], "zz_victim": answers[TASK],
                          **_attacks(course, folder)}.items():
        (folder / student).mkdir()
        nbformat.write(fill(release, {**answers, TASK: code}), folder / student / FILE)
    rows = grade_folder(folder, course, [ASSIGNMENT], cell_timeout=20, student_timeout=120,
                        log=lambda line: None, memory_limit_gb=4, feedback=False,
                        isolation="on" if protected else "off", guard=protected)
    # Each student's scores as graded, its status, and its scores read again after the whole batch
    # (an attack on the gradebook changes those of students graded before it).
    results = {scores.student: (scores, status, read_scores(course, ASSIGNMENT, scores.student))
               for scores, status in rows}
    results["leftover processes"] = _leftover_processes()
    for pid in results["leftover processes"]:
        os.kill(pid, 9)
    return results


_PROBLEM = sandbox_problem()
pytestmark = pytest.mark.skipif(_PROBLEM is not None, reason=str(_PROBLEM))


@pytest.fixture(scope="module")
def unprotected(built_course, tmp_path_factory):
    return _grade(built_course, tmp_path_factory, protected=False)


@pytest.fixture(scope="module")
def protected(built_course, tmp_path_factory, unprotected):
    return _grade(built_course, tmp_path_factory, protected=True)


def test_honest_students_keep_full_marks(protected):
    for student in ("0_first", "zz_victim"):
        scores, status, _ = protected[student]
        assert scores.total == scores.max_total == 22, (student, scores.tasks, status)
        assert status == "graded", status


@pytest.mark.parametrize("student", ["a_reads_files", "a_patches_checks", "a_wraps_cells"])
def test_attacks_for_points_gain_nothing(unprotected, protected, student):
    assert unprotected[student][0].tasks["1.1"] == (2.0, 2.0), "without protection the attack gains task 1.1"
    scores, status, _ = protected[student]
    assert scores.tasks["1.1"] == (0.0, 2.0), (scores.tasks, status)
    assert "needs a manual look" in status and "tamper" in status, status


def test_tampering_with_the_checks_voids_every_test(protected):
    for student in ("a_patches_checks", "a_wraps_cells"):
        scores, status, _ = protected[student]
        assert scores.total == 0, (student, scores.tasks, status)


def test_writing_the_gradebook_changes_no_one_s_scores(unprotected, protected):
    assert unprotected["0_first"][2].total == 0, "without protection the attack zeroes an earlier student"
    assert protected["0_first"][2].total == 22
    assert protected["a_writes_gradebook"][0].tasks["1.1"] == (0.0, 2.0)


def test_writing_another_student_s_submission_changes_nothing(unprotected, protected):
    assert unprotected["zz_victim"][2].total == 0, "without protection the attack replaces the victim's notebook"
    assert protected["zz_victim"][2].total == 22


def test_no_process_outlives_its_student(unprotected, protected):
    assert unprotected["leftover processes"], "without the sandbox the background process survives"
    assert protected["leftover processes"] == []
    assert protected["a_leaves_a_process"][0].tasks["1.2"] == (2.0, 2.0), "the attacker's other tasks still count"
