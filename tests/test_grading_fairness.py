"""CPU is shared fairly: a student who keeps every core busy cannot push another over a time limit.

A hostile student's notebook starts, in a cell of its own at the top, 128 busy processes, each in
a session of its own. Eight honest students are graded at the same time (``--jobs 2``, a cell
time limit of 10 s). Each student's cgroup has an equal CPU weight and a quota of one core
(grading/isolation/limits.py), so the hostile processes together get at most one core (on 2 cores without
a quota they would take both, and honest cells would get about one part in 130 of the machine
and run past 10 s); they crowd out only their own kernel, whose notebook times out (and is not
graded again unless the rest of the machine crowded out even its quota). Every honest student
keeps full marks without being graded again. About 2 minutes on 2 cores; marked ``slow``.
"""

from __future__ import annotations

import json
import secrets

import nbformat
import pytest
from conftest import sandbox_problem

from grading.authoring.samples import fill, solution_code
from grading.pipeline.run import grade_folder

ASSIGNMENT = "01_eviction_as_ranking"
FILE = f"{ASSIGNMENT}.ipynb"
# Ids of this run alone: a student's uid comes from the id, and other runs may grade at the same time.
RUN = secrets.token_hex(3)
HOSTILE = f"a_hostile_{RUN}"
HONEST = [f"honest_{i}_{RUN}" for i in range(1, 9)]

SPIN = '''import os
for _ in range(128):
    if os.fork() == 0:
        os.setsid()
        while True:
            pass
'''


@pytest.mark.slow
@pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))
def test_a_student_who_keeps_every_core_busy_costs_honest_students_nothing(built_course, tmp_path):
    source = nbformat.read(built_course / "source" / ASSIGNMENT / FILE, as_version=4)
    release = nbformat.read(built_course / "release" / ASSIGNMENT / FILE, as_version=4)
    answers = solution_code(source)
    hostile = fill(release, answers)
    hostile.cells.insert(0, nbformat.v4.new_code_cell(SPIN))
    for student, notebook in [(HOSTILE, hostile), *((student, fill(release, answers)) for student in HONEST)]:
        (tmp_path / "submissions" / student).mkdir(parents=True)
        nbformat.write(notebook, tmp_path / "submissions" / student / FILE)
    rows = grade_folder(tmp_path / "submissions", built_course, [ASSIGNMENT], jobs=2, cell_timeout=10,
                        output=tmp_path / "output", log=lambda line: None)
    graded = {scores.student: (scores, status) for scores, status in rows}
    for student in HONEST:
        scores, status = graded[student]
        assert scores.total == scores.max_total == 22, (student, scores.tasks, status)
        assert "graded again" not in status, status
    results = json.loads((tmp_path / "output" / "grading-results.json").read_text())["students"]
    hostile_result = results[HOSTILE]["assignments"][ASSIGNMENT]
    assert hostile_result["status"].startswith("timed out"), hostile_result
    seconds = hostile_result["seconds"]
    assert seconds["cells cpu"] > 2, "the hostile processes ran"
    assert seconds["cells cpu"] <= 1.25 * seconds["kernel lived"] + 1, "on one core at most"
    # The hostile notebook is graded first and runs past its 10 s limit; an honest student graded before it ended
    # was graded while it ran. (Whether any is graded after it ended is a race: all eight may finish first.)
    first_honest = min(results[student]["graded_at"] for student in HONEST)
    assert first_honest < results[HOSTILE]["graded_at"], "honest students were graded while it ran"
