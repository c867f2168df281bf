"""Hostile submissions, graded through the grading command, earn nothing, harm no one, stop nothing.

One batch of crafted submissions of notebook 01 is graded twice: once with every protection off
(no sandbox, test cells run in the kernel as plain nbgrader runs them, nbgrader's own scoring
rule, no limits), which shows that each attack is real (the crashes' class aside: nothing there
to show), and once as the grading command grades
(bubblewrap sandbox per student, every test cell judged outside the kernel, cgroup limits), which
shows that it gains and harms nothing, that honest students graded before and after the attackers
keep full marks, that the batch completes with its CSV, and that no file or process of a student
is left on the host. One attacker per class:

- forged outputs: an ``execute_result`` before each test's error (from an IPython event, or from
  ``from sys import displayhook`` inside the answer), a rewritten ``Session.send`` (on the object
  and on the class), a solution cell whose metadata claims to be read-only;
- reading and writing what is not theirs: the instructor's notebooks, another student's upload,
  the gradebook files, another student's submitted notebook; patching the checks; wrapping every
  later cell in ``try/except``;
- the classes of issue 26, each in several variants: attribute lookup on ``course.checks`` that
  returns checks doing nothing, without replacing the module (its class swapped, an import hook);
  wrappers that exist only between cells (event callbacks that take an input or AST transformer
  out before each cell and put it back after); a torch function mode entered by hand that makes
  tensor comparisons agree; a replaced or lying agent (every answer forged, errors swallowed, never
  serving);
- surviving processes and shared identities: a background process, a chain of short-lived forks
  that hunts the next student's kernel, a look at other processes' command lines, the uid;
- host leftovers: files written to every world-writable host folder;
- limits: children that together hold more memory than the limit, more processes than the limit;
- parser and cleanup crashes: code that makes Python's parser raise RecursionError and
  MemoryError, a file that is not JSON, a notebook nbformat rejects, a 100 MB file, processes
  that fill the process limit (no later thread of the kernel's own can start) and keep appearing
  and vanishing while the cleanup kills them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
from pathlib import Path

import nbformat
import pytest
from conftest import sandbox_problem
from isolation_attacks import ASSIGNMENT, FILE, HOST_FOLDERS, MARKER, TASK, attacks

from grading.authoring.samples import fill, solution_code
from grading.isolation.sandbox import student_uids
from grading.pipeline.report import read_scores
from grading.pipeline.run import grade_folder


def _write_batch(course: Path, folder: Path, protected: bool) -> None:
    source = nbformat.read(course / "source" / ASSIGNMENT / FILE, as_version=4)
    release = nbformat.read(course / "release" / ASSIGNMENT / FILE, as_version=4)
    answers = solution_code(source)
    students = {"0_first": {}, "zz_victim": {}, **attacks(course, folder, answers)}
    if not protected:
        # The crashes' classes (c_...) are checked in the protected run alone: there is nothing an unprotected run
        # could show about them, and the parser bomb alone kept its kernel busy for a whole cell time limit.
        students = {student: changes for student, changes in students.items() if not student.startswith("c_")}
    for student, changes in students.items():
        (folder / student).mkdir()
        nbformat.write(fill(release, {**answers, **changes}), folder / student / FILE)
    # A solution cell that claims to be read-only, with a forged result in it.
    claims = fill(release, {**answers, TASK: students["f_result_from_answer"][TASK]})
    next(c for c in claims.cells if c.metadata.get("nbgrader", {}).get("grade_id") == TASK).metadata["nbgrader"][
        "locked"] = True
    (folder / "f_claims_read_only").mkdir()
    nbformat.write(claims, folder / "f_claims_read_only" / FILE)
    if not protected:
        return
    for student, content in {"c_not_json": b"{ this is not a notebook", "c_schema": json.dumps(
            {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", "oops": 1}]}).encode()
                             }.items():
        (folder / student).mkdir()
        (folder / student / FILE).write_bytes(content)
    (folder / "c_huge").mkdir()
    with open(folder / "c_huge" / FILE, "wb") as huge:
        huge.truncate(100 << 20)  # 100 MB.


def _leftovers() -> dict[str, list]:
    """What attackers may have left on the host: processes and files carrying the marker."""
    processes = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if MARKER.encode() in cmdline.read_bytes():
                processes.append(int(cmdline.parent.name))
        except OSError:
            continue
    files = [str(path) for folder in HOST_FOLDERS if os.path.isdir(folder)
             for path in Path(folder).glob(f"{MARKER}*")]
    return {"processes": processes, "files": files}


def _clean(leftovers: dict[str, list]) -> None:
    for pid in leftovers["processes"]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for path in leftovers["files"]:
        Path(path).unlink(missing_ok=True)


def _two_levels(folder: str) -> list[str]:
    """The entries of ``folder`` and of its subfolders; what vanishes meanwhile is left out."""
    found = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                found.append(entry.path)
                try:
                    if entry.is_dir(follow_symlinks=False):
                        with os.scandir(entry.path) as inner:
                            found.extend(child.path for child in inner)
                except OSError:
                    continue
    except OSError:
        pass
    return found


def _owned_by_students(uids: set[int]) -> list[str]:
    found = []
    for folder in HOST_FOLDERS:
        # Two levels deep: what a kernel could write there, and into a folder it made there.
        for path in _two_levels(folder):
            try:
                if os.lstat(path).st_uid in uids:
                    found.append(path)
            except OSError:
                continue  # Other programs' files come and go meanwhile.
    processes = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
            uid = int(fields["Uid"].split()[0])
            if uid in uids:
                command = (status.parent / "cmdline").read_bytes().replace(b"\0", b" ")[:120].decode(errors="replace")
                # What it is, for the failure's message: its state (Z: a zombie nobody reaped), parent and command.
                processes.append(f"process {status.parent.name} ({fields['State'].strip()}, parent "
                                 f"{fields['PPid'].strip()}: {command})")
        except (OSError, KeyError, ValueError):
            continue
    return found + processes


def _grade(built_course: Path, tmp_path_factory, protected: bool) -> dict:
    """Grade the batch in a course of its own (the unprotected run's attacks damage its course)."""
    course = shutil.copytree(built_course, tmp_path_factory.mktemp("course") / "course")
    folder = tmp_path_factory.mktemp("attacks")
    _write_batch(course, folder, protected)
    lines: list[str] = []
    if protected:
        settings = dict(isolation="on", judge=True, memory_limit_gb=2, max_processes=256, jobs=2)
    else:
        # One student at a time: unprotected, the gradebook writer zeroes every gradebook of the batch, the one a
        # job beside it is writing too, which would hide that the attack graded there works.
        settings = dict(isolation="off", judge=False, memory_limit_gb=None, max_processes=None, cpus_per_student=None,
                        jobs=1)
    uids = set(student_uids([path.name for path in folder.iterdir()]).values())
    before = set(_owned_by_students(uids))
    # A cell time limit of 30 s (nbgrader's 60 here): no attack needs longer, and an attack that never ends costs less.
    rows = grade_folder(folder, course, [ASSIGNMENT], student_timeout=300, cell_timeout=30, log=lines.append,
                        feedback=False, **settings)
    results = {"log": lines, "course": course, "students": sorted(p.name for p in folder.iterdir())}
    # Each student's scores as graded, its status, and its scores in the merged gradebook.
    for scores, status in rows:
        try:
            final = read_scores(course, ASSIGNMENT, scores.student)
        except LookupError:
            final = None
        results[scores.student] = (scores, status, final)
    results["leftovers"] = _leftovers()
    try:
        results["student files and processes"] = sorted(set(_owned_by_students(uids)) - before)
    finally:
        _clean(results["leftovers"])
    return results


_PROBLEM = sandbox_problem()
pytestmark = pytest.mark.skipif(_PROBLEM is not None, reason=str(_PROBLEM))


@pytest.fixture(scope="module")
def unprotected(built_course, tmp_path_factory):
    return _grade(built_course, tmp_path_factory, protected=False)


@pytest.fixture(scope="module")
def protected(built_course, tmp_path_factory, unprotected):
    return _grade(built_course, tmp_path_factory, protected=True)


def _printed_uid(course: Path, student: str) -> int:
    notebook = nbformat.read(course / "autograded" / student / ASSIGNMENT / FILE, as_version=4)
    text = "".join(output.get("text", "") for cell in notebook.cells for output in cell.get("outputs", []))
    return int(re.search(r"uid (\d+)", text).group(1))


def test_the_batch_completes_with_every_student_and_a_csv(protected):
    assert set(protected["students"]) <= set(protected), set(protected["students"]) - set(protected)
    lines = (protected["course"] / "grades.csv").read_text().splitlines()
    assert lines[0].startswith("assignment,") and sum(line.startswith(f"{ASSIGNMENT},") and ",0_first," in line
                                                      for line in lines) == 1
    statuses = (protected["course"] / "statuses.csv").read_text()
    assert all(f",{student}," in statuses for student in protected["students"])


def test_honest_students_before_and_after_the_attackers_keep_full_marks(protected):
    for student in ("0_first", "zz_victim", "i_one", "i_two"):
        scores, status, final = protected[student]
        assert scores.total == scores.max_total == 22 and final.total == 22, (student, scores.tasks, status)
        assert status == "graded", (student, status)


@pytest.mark.parametrize("student", ["f_result_from_event", "f_result_from_answer", "f_session_send",
                                     "f_session_class", "f_claims_read_only", "a_reads_files", "a_patches_checks",
                                     "a_wraps_cells", "p_reads_other_processes", "l_memory_of_children",
                                     "l_many_processes", "j_checks_by_lookup", "j_wraps_between_cells",
                                     "j_lying_agent"])
def test_attacks_for_points_gain_nothing(unprotected, protected, student):
    if student != "j_lying_agent":  # Without the judge there is no agent to lie.
        scores, status, _ = unprotected[student]
        assert scores.tasks["1.1"] == (2.0, 2.0), f"without protection the attack gains task 1.1 ({status}; {scores})"
    scores, status, _ = protected[student]
    assert scores.tasks.get("1.1", (0.0, 2.0)) == (0.0, 2.0), (scores.tasks, status)


def test_a_torch_function_mode_entered_by_hand_gains_nothing(unprotected, protected):
    assert unprotected["j_torch_mode"][0].tasks["1.8"] == (3.0, 3.0), "without the judge the mode forges task 1.8"
    scores, status, _ = protected["j_torch_mode"]
    assert scores.tasks["1.8"] == (0.0, 3.0), (scores.tasks, status)


def test_an_answer_cannot_tell_from_ipython_s_history_that_it_is_judged(unprotected, protected):
    """IPython's history holds the test cells' own sources, numbered as in one process: the hidden first cell and
    the lines that serve the judge are not there (red team, round 17)."""
    for name, run in (("unprotected", unprotected), ("protected", protected)):
        scores, status, _ = run["j_reads_history"]
        assert scores.tasks["1.1"] == (0.0, 2.0) and status == "graded", (name, scores.tasks, status)


def test_a_lying_agent_loses_every_test_it_serves(protected):
    scores, status, _ = protected["j_lying_agent"]
    assert scores.total == 0, (scores.tasks, status)


@pytest.mark.parametrize("student, reason", [
    ("f_result_from_event", "displayhook"), ("f_result_from_answer", "displayhook"),
    ("f_session_send", "get_ipython"), ("f_session_class", "jupyter_client"), ("f_claims_read_only", "locked"),
    ("a_patches_checks", "tamper"), ("a_wraps_cells", "tamper"), ("c_parser", "cannot be parsed"),
    ("c_not_json", "not a readable notebook"), ("c_schema", "not a readable notebook"), ("c_huge", "100 MB")])
def test_tampering_and_unreadable_notebooks_are_flagged(protected, student, reason):
    status = protected[student][1]
    assert status.startswith(("needs a manual look", "timed out")) and reason in status, status


def test_tampering_with_checks_or_messaging_costs_only_the_wrong_answer(protected):
    """The judge never looks at the kernel's checks or messages: the wrong task scores 0, the others keep theirs."""
    for student in ("a_patches_checks", "a_wraps_cells", "f_session_send", "f_session_class", "f_result_from_event",
                    "j_checks_by_lookup", "j_wraps_between_cells"):
        scores, status, _ = protected[student]
        assert scores.tasks["1.1"] == (0.0, 2.0) and scores.total == 20, (student, scores.tasks, status)


def test_writing_the_gradebook_or_another_submission_changes_no_one_s_scores(unprotected, protected):
    assert unprotected["0_first"][2].total == 0, "without protection the attack zeroes an earlier student"
    assert unprotected["zz_victim"][2] is None or unprotected["zz_victim"][2].total < 22, (
        "without protection another student's notebook is replaced or their kernel killed")
    assert protected["0_first"][2].total == protected["zz_victim"][2].total == 22


def test_kernels_see_no_other_process_and_each_student_has_a_uid_of_their_own(unprotected, protected):
    assert _printed_uid(unprotected["course"], "i_one") == _printed_uid(unprotected["course"], "i_two") == os.geteuid()
    uids = [_printed_uid(protected["course"], student) for student in ("i_one", "i_two")]
    expected = student_uids(protected["students"])
    assert uids == [expected["i_one"], expected["i_two"]] and uids[0] != uids[1], uids
    assert student_uids(["i_one"])["i_one"] == uids[0], "a student's uid does not depend on the others"


def test_no_process_or_file_of_a_student_outlives_the_batch(unprotected, protected):
    assert unprotected["leftovers"]["processes"], "without the sandbox background processes survive"
    assert unprotected["leftovers"]["files"], "without the sandbox files stay in host folders"
    assert protected["leftovers"] == {"processes": [], "files": []}
    assert protected["student files and processes"] == []
    assert protected["p_leaves_a_process"][0].tasks["1.2"] == (2.0, 2.0), "the attacker's other tasks still count"


def test_parser_bombs_and_vanishing_processes_cost_only_their_own_cells(protected):
    scores, status, _ = protected["c_parser"]
    assert scores.tasks["1.1"] == (2.0, 2.0) and scores.tasks["1.4"] == (2.0, 2.0), (scores.tasks, status)
    scores, status, _ = protected["c_vanishing_processes"]
    assert scores.tasks["1.1"] == (2.0, 2.0), (scores.tasks, status)
