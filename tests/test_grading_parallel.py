"""Grading in parallel, in shards and on a Slurm cluster gives exactly what one job gives.

The bundled samples (the reference, the unchanged release, typical mistakes) are graded with
--jobs 2 for every assignment (tests/conftest.py: parallel_grades, which tests/test_pipeline.py
checks too), and for two of them (EQUALITY_ASSIGNMENTS) with --jobs 1 (sequential_grades) and
through a one-node Slurm cluster as an array of 4 shards of deploy/slurm/grade.sbatch (one of them
empty) and its merge job; grades, statuses, autograded notebooks and feedback must be identical.
Sharding, merging, resuming and the Kubernetes manifest are checked on their own.

The Slurm test starts the cluster itself (deploy/slurm/one-node-cluster.sh) unless SLURM_CONF names
a running one, as in CI. Where Slurm is not installed, or the tests do not run as root, it skips
with the reason; in CI (COURSE_CI set, by .ci/run) it fails instead.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import EQUALITY_ASSIGNMENTS, sandbox_problem

import grading.pipeline.run
from grading.config import ASSIGNMENTS, ROOT, SAMPLE_STUDENTS
from grading.pipeline.collect import Submission
from grading.pipeline.merge import MERGED, RESULTS, SHARDS, merge, read_results, write_results
from grading.pipeline.options import GradingOptions, parse_shard, shard_of
from grading.pipeline.run import _Run, _run_jobs, grade_folder

FEEDBACK = [f"feedback/{student}/{a}/{a}.html" for student in SAMPLE_STUDENTS for a in EQUALITY_ASSIGNMENTS]
AUTOGRADED = [f"autograded/{student}/{a}/{a}.ipynb" for student in SAMPLE_STUDENTS for a in EQUALITY_ASSIGNMENTS]


def _csv_rows(path: Path, assignments=EQUALITY_ASSIGNMENTS) -> list[tuple]:
    """The rows of a grades CSV (or statuses.csv) for the sample students and ``assignments``, sorted."""
    with open(path, newline="") as handle:
        return sorted(tuple(row.values()) for row in csv.DictReader(handle)
                      if row["student_id"] in SAMPLE_STUDENTS and row["assignment"] in assignments)


def _summary(grades: dict) -> dict:
    return {key: (scores.tasks, status) for key, (scores, status) in grades.items() if key[1] in EQUALITY_ASSIGNMENTS}


def _autograded_cells(path: Path) -> list[tuple]:
    """What grading left in an autograded notebook (sources and outputs): the same in every run."""
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    return [(cell.cell_type, cell.source, json.dumps(
        [{k: v for k, v in output.items() if k != "execution_count"} for output in cell.get("outputs", [])],
        sort_keys=True)) for cell in notebook.cells]


def test_two_jobs_give_exactly_what_one_job_gives(parallel_grades, sequential_grades):
    (course, parallel), (output, sequential) = parallel_grades, sequential_grades
    assert set(parallel) == {(s, a) for s in SAMPLE_STUDENTS for a in ASSIGNMENTS}
    assert set(sequential) == {(s, a) for s in SAMPLE_STUDENTS for a in EQUALITY_ASSIGNMENTS}
    assert _summary(parallel) == _summary(sequential)
    assert _csv_rows(course / "grades.csv") == _csv_rows(output / "grades.csv")
    assert _csv_rows(course / "statuses.csv") == _csv_rows(output / "statuses.csv")
    for path in FEEDBACK:
        assert (course / path).read_bytes() == (output / path).read_bytes(), path
    for path in AUTOGRADED:
        assert _autograded_cells(course / path) == _autograded_cells(output / path), path


def test_shards_split_the_students_stably_and_evenly():
    students = [f"student{i:04d}" for i in range(3000)]
    shards = [shard_of(student, 3) for student in students]
    assert shards == [shard_of(student, 3) for student in students], "the same shard in every run"
    assert {shard: shards.count(shard) for shard in (1, 2, 3)} == pytest.approx({1: 1000, 2: 1000, 3: 1000}, rel=0.1)
    assert set(shards) == {1, 2, 3}


@pytest.mark.parametrize("text, environ, count, expected", [
    ("2/3", {}, None, (2, 3)),
    (None, {}, None, (1, 1)),
    (None, {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "0"}, None, (1, 3)),
    (None, {"SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "1",
            "SLURM_ARRAY_TASK_STEP": "2"}, None, (4, 4)),
    (None, {"JOB_COMPLETION_INDEX": "4"}, 5, (5, 5)),
])
def test_the_shard_comes_from_the_command_line_or_the_scheduler(text, environ, count, expected):
    assert parse_shard(text, environ, count) == expected


@pytest.mark.parametrize("text, environ, count", [("4/3", {}, None), ("0/3", {}, None), ("half", {}, None),
                                                  (None, {"JOB_COMPLETION_INDEX": "1"}, None),
                                                  (None, {"JOB_COMPLETION_INDEX": "3"}, 3)])
def test_a_wrong_shard_is_refused_with_a_clear_message(text, environ, count):
    with pytest.raises(ValueError, match="shard|JOB_COMPLETION_INDEX"):
        parse_shard(text, environ, count)


def test_merging_again_changes_nothing_and_the_newer_result_wins(sequential_grades, tmp_path):
    output = shutil.copytree(sequential_grades[0], tmp_path / "output")
    before = (output / "grades.csv").read_text()
    before_path = tmp_path / "before.csv"
    before_path.write_text(before)
    lines: list[str] = []
    merge(output, log=lines.append)
    assert (output / "grades.csv").read_text() == before and lines[0].startswith("merged 0 student(s)")
    # The student graded again in another shard (re-cut shards), later and with another result.
    again = output / SHARDS / "2-of-2"
    shutil.copytree(output / SHARDS / "1-of-1", again)
    records = read_results(again / RESULTS)
    later = records["typical_mistakes"]["graded_at"] + 60
    records = {"typical_mistakes": {**records["typical_mistakes"], "graded_at": later}}
    write_results(again / RESULTS, records, shard="2-of-2")
    with sqlite3.connect(again / "gradebook.db") as database:
        database.execute("UPDATE grade SET auto_score = 1 WHERE notebook_id IN (SELECT sn.id FROM submitted_notebook sn"
                         " JOIN submitted_assignment sa ON sn.assignment_id = sa.id"
                         " WHERE sa.student_id = 'typical_mistakes')")
    lines.clear()
    merge(output, log=lines.append)
    newer = "typical_mistakes: graded in shard 1-of-1 and in shard 2-of-2; kept the newer result, from 2-of-2"
    assert any(newer in line for line in lines), lines
    scores = {row[3]: float(row[7]) for row in _csv_rows(output / "grades.csv") if row[0] == ASSIGNMENTS[0]}
    earlier = {row[3]: float(row[7]) for row in _csv_rows(Path(before_path)) if row[0] == ASSIGNMENTS[0]}
    assert earlier["typical_mistakes"] == 0 and scores["typical_mistakes"] > 0
    assert scores["reference_solution"] == earlier["reference_solution"]
    assert json.loads((output / MERGED).read_text())["students"]["typical_mistakes"]["shard"] == "2-of-2"
    lines.clear()
    merge(output, log=lines.append)
    assert any(line.startswith("merged 0 student(s)") for line in lines), "merging is idempotent"


def test_a_rerun_grades_only_what_changed_and_force_regrades(built_course, sample_folder, sequential_grades, tmp_path,
                                                            monkeypatch):
    output = shutil.copytree(sequential_grades[0], tmp_path / "output")
    folder = shutil.copytree(sample_folder, tmp_path / "samples")
    graded: list[list[str]] = []
    monkeypatch.setattr(grading.pipeline.run, "_grade_all",
                        lambda options, submissions, todo, *rest: graded.append(sorted(todo)))
    lines: list[str] = []
    grade_folder(folder, built_course, EQUALITY_ASSIGNMENTS, output=output, log=lines.append)
    assert graded == [] and sum("unchanged since it was graded; skipped" in line for line in lines) == 3
    changed = folder / "unchanged_release" / ASSIGNMENTS[0] / f"{ASSIGNMENTS[0]}.ipynb"
    changed.write_text(changed.read_text().replace('"cells": [', '"cells": [{"cell_type": "markdown", "metadata": {}, '
                                                                 '"source": "a note"}, ', 1))
    grade_folder(folder, built_course, EQUALITY_ASSIGNMENTS, output=output, log=lines.append)
    grade_folder(folder, built_course, EQUALITY_ASSIGNMENTS, output=output, force=True, log=lines.append)
    assert graded == [["unchanged_release"], sorted(SAMPLE_STUDENTS)]


@pytest.mark.parametrize("progress", [None, True])
def test_a_progress_bar_only_when_asked_or_on_a_terminal_and_a_log_line_per_notebook(progress, monkeypatch, capsys,
                                                                                      tmp_path):
    import queue

    def graded(run, student, own, digest):
        return {"hash": digest, "graded_at": 0.0, "assignments": {
            s.assignment: {"status": "graded" if student != "b" else "needs a manual look: x", "tasks": {"1.1": [2, 2]}}
            for s in own}}

    monkeypatch.setattr(grading.pipeline.run, "_grade_student", graded)
    options = GradingOptions(folder=tmp_path, progress=progress)
    todo = {student: [Submission(student, a, tmp_path, []) for a in ASSIGNMENTS[:2]] for student in "abc"}
    jobs: queue.Queue = queue.Queue()
    jobs.put(None)
    lines: list[str] = []
    run = _Run(options, tmp_path, False, None, tmp_path, {}, jobs, lines.append)
    records = _run_jobs(run, todo, {student: "h" for student in todo}, lines.append)
    assert sorted(records) == ["a", "b", "c"] and len(lines) == 6
    assert f"b/{ASSIGNMENTS[0]}: needs a manual look: x, 2/2" in lines
    bar = capsys.readouterr().err
    assert ("3/3" in bar and "2 to look at" in bar) if progress else bar == ""


def test_the_kubernetes_manifest_is_valid():
    import kubernetes_validate

    documents = list(yaml.safe_load_all((ROOT / "deploy" / "kubernetes" / "grade-job.yaml").read_text()))
    for document in documents:
        kubernetes_validate.validate(document, "1.30.0", strict=True)
    jobs = {d["metadata"]["name"]: d for d in documents if d["kind"] == "Job"}
    shards = jobs["grade-course-shards"]["spec"]
    assert shards["completionMode"] == "Indexed"
    command = " ".join(shards["template"]["spec"]["containers"][0]["args"])
    assert f"--shard-count {shards['completions']}" in command and "grading.grade" in command
    merge_container = jobs["grade-course-merge"]["spec"]["template"]["spec"]["containers"][0]
    assert "grading.pipeline.merge" in " ".join(merge_container["command"])


def _unavailable(reason: str) -> None:
    """Skip with ``reason`` here; in CI, where the cluster must run, fail with it."""
    if os.environ.get("COURSE_CI"):
        pytest.fail(f"CI must grade through Slurm, but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A one-node Slurm cluster: the one CI started (SLURM_CONF), or one started here for this module."""
    missing = [tool for tool in ("sbatch", "sinfo", "slurmctld", "slurmd", "munged") if shutil.which(tool) is None]
    if missing:
        _unavailable(f"Slurm is not installed ({', '.join(missing)} missing: apt-get install slurm-wlm munge)")
    env = dict(os.environ)
    if env.get("SLURM_CONF") and subprocess.run(["sinfo", "-h"], capture_output=True, env=env).returncode == 0:
        yield env
        return
    if os.geteuid() != 0:
        _unavailable("starting a one-node Slurm cluster needs root")
    state = tmp_path_factory.mktemp("slurm")
    script = ROOT / "deploy" / "slurm" / "one-node-cluster.sh"
    started = subprocess.run([str(script), "start", str(state)], capture_output=True, text=True, timeout=120)
    if started.returncode != 0:
        pytest.fail(f"the one-node Slurm cluster did not start:\n{started.stderr}", pytrace=False)
    env["SLURM_CONF"] = started.stdout.strip().split("=", 1)[1]
    try:
        yield env
    finally:
        subprocess.run([str(script), "stop", str(state)], capture_output=True, timeout=60)


def test_four_slurm_shards_and_their_merge_give_exactly_what_one_job_gives(slurm, sample_folder, sequential_grades,
                                                                           tmp_path):
    output = tmp_path / "output"
    output.mkdir()
    env = {**slurm, "COURSE_DIR": str(ROOT)}
    script = str(ROOT / "deploy" / "slurm" / "grade.sbatch")
    assignments = [argument for a in EQUALITY_ASSIGNMENTS for argument in ("--assignment", a)]
    # One CPU per array task, so that two shards run at once on a 2-core machine.
    shards = subprocess.run(["sbatch", "--parsable", "--wait", "--array=1-4", "--cpus-per-task=1",
                             f"--output={output}/shard-%a.log", script, str(sample_folder), str(output), *assignments],
                            capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800)
    logs = "".join(path.read_text() for path in sorted(output.glob("shard-*.log")))
    assert shards.returncode == 0, shards.stderr + logs
    job = shards.stdout.strip().split(";")[0]
    merged = subprocess.run(["sbatch", "--wait", f"--dependency=afterok:{job}", f"--output={output}/merge.log", script,
                             "--merge", str(output)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert merged.returncode == 0, merged.stderr + (output / "merge.log").read_text()
    assert sorted(path.name for path in (output / SHARDS).iterdir()) == [f"{k}-of-4" for k in (1, 2, 3, 4)]
    counts = {k: len(read_results(output / SHARDS / f"{k}-of-4" / RESULTS)) for k in (1, 2, 3, 4)}
    assert sorted(counts.values()) == [0, 1, 1, 1], counts
    assert all(f"shard {k}/4" in logs for k in (1, 2, 3, 4))
    if sandbox_problem() is None:
        assert "isolation: each kernel runs in a bubblewrap sandbox" in logs
    sequential = sequential_grades[0]
    assert _csv_rows(output / "grades.csv") == _csv_rows(sequential / "grades.csv")
    assert (output / "statuses.csv").read_text() == (sequential / "statuses.csv").read_text()
    for path in FEEDBACK:
        assert (output / path).read_bytes() == (sequential / path).read_bytes(), path
    for path in AUTOGRADED:
        assert _autograded_cells(output / path) == _autograded_cells(sequential / path), path


def test_the_options_reach_each_worker_whole(tmp_path):
    options = GradingOptions(folder=tmp_path, output=tmp_path / "out", shard=(2, 3), jobs=3,
                                   mapping={"a.ipynb": "alice"}, cell_timeout=7, judge=False, sanitize=False)
    assert GradingOptions.from_json(json.loads(json.dumps(options.to_json()))) == options
