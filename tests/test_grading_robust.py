"""One submission never stops, stalls or outlives the batch; files are read, never followed; copies are flagged.

Issue 30. The parts on their own: the cleanup (grading/pipeline/cleanup.py) on what a kernel can leave,
the per-notebook time limit of the preparation (grading/pipeline/prepare.py) with steps made slow on
purpose, the cost of each preparation step on notebooks of growing size, and the copy check
(grading/pipeline/copies.py). tests/test_grading_batches.py grades whole batches of such submissions.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from notebook01 import ASSIGNMENT, FILE, own_quotas, reformatted, release_and_answers

from grading.authoring.samples import fill, load_mutants, solution_code
from grading.config import ROOT
from grading.pipeline import prepare
from grading.pipeline.cleanup import attempt, remove_tree
from grading.pipeline.collect import Submission
from grading.pipeline.copies import find_copies, fingerprint, flagged


def _deep_tree(base: Path, depth: int = 1100) -> None:
    """``depth`` nested folders under ``base``: deeper than Python recurses (1,000), longer than a path can
    name (4,096 characters). The kernel of the batch below makes 3,000."""
    descriptor = os.open(base, os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("ddd", dir_fd=descriptor)
        deeper = os.open("ddd", os.O_DIRECTORY, dir_fd=descriptor)
        os.close(descriptor)
        descriptor = deeper
    os.close(descriptor)


def _hostile_leftovers(base: Path, outside: Path) -> None:
    """What a kernel can leave in its folder: a deep tree, odd names, locked folders, a link out, an open file."""
    _deep_tree(base)
    for name in (b"odd\nname \xff", b"-rf", b"--one-file-system"):
        (Path(os.fsdecode(os.fsencode(base) + b"/" + name))).write_bytes(b"x")
    (base / "locked" / "inner").mkdir(parents=True)
    (base / "locked" / "inner" / "file").write_text("x")
    os.chmod(base / "locked" / "inner", 0)
    os.chmod(base / "locked", 0)
    (base / "out").symlink_to(outside, target_is_directory=True)


def test_cleanup_removes_what_a_kernel_leaves_and_never_follows_a_link_out(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("not the kernel's")
    base = tmp_path / "kernel"
    base.mkdir()
    _hostile_leftovers(base, outside)
    with open(base / "held open", "w") as held:
        held.write("x")
        lines: list[str] = []
        assert remove_tree(base, lines.append) and not base.exists() and not lines
    assert (outside / "keep").read_text() == "not the kernel's"
    assert remove_tree(base) and remove_tree(tmp_path / "never made")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user")
def test_cleanup_as_the_kernel_s_own_user_gives_the_permissions_back():
    """Without root, folders a kernel locked (mode 000) stop ``rm``; the permissions are given back first."""
    base = Path(tempfile.mkdtemp(prefix="course-test-cleanup-"))
    os.chown(base, 65534, 65534)
    outside = Path(tempfile.mkdtemp(prefix="course-test-outside-"))
    try:
        child = os.fork()
        if child == 0:  # pragma: no cover - the child's exit status is the result.
            try:
                os.setgid(65534)
                os.setuid(65534)
                _hostile_leftovers(base, outside)
                os._exit(0 if remove_tree(base, lambda line: None) else 1)
            finally:
                os._exit(2)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0 and not base.exists()
    finally:
        shutil.rmtree(outside)
        subprocess.run(["rm", "-rf", "--", str(base)], check=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount")
def test_a_mount_in_the_way_is_one_line_in_the_log_and_nothing_on_it_is_touched(tmp_path):
    base = tmp_path / "kernel"
    (base / "mounted").mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(base / "mounted")], check=True)
    try:
        (base / "mounted" / "file").write_text("x")
        os.chmod(base / "mounted", 0)
        lines: list[str] = []
        assert not remove_tree(base, lines.append)
        assert len(lines) == 1 and "could not remove" in lines[0] and "different device" in lines[0], lines
        assert (base / "mounted" / "file").exists() and stat.S_IMODE(os.stat(base / "mounted").st_mode) == 0
    finally:
        subprocess.run(["umount", str(base / "mounted")], check=True)
    assert remove_tree(base)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("chattr"), reason="needs root and chattr")
def test_an_immutable_file_is_one_line_in_the_log_never_an_exception(tmp_path):
    base = tmp_path / "kernel"
    base.mkdir()
    (base / "stuck").write_text("x")
    if subprocess.run(["chattr", "+i", str(base / "stuck")], capture_output=True).returncode != 0:
        pytest.skip("this file system has no immutable attribute")
    try:
        lines: list[str] = []
        assert not remove_tree(base, lines.append)
        assert len(lines) == 1 and "could not remove" in lines[0] and "Operation not permitted" in lines[0], lines
    finally:
        subprocess.run(["chattr", "-i", str(base / "stuck")], check=True)
    assert remove_tree(base)


def test_a_cleanup_step_that_raises_is_a_log_line():
    lines: list[str] = []

    def broken():
        raise RecursionError("maximum recursion depth exceeded")

    assert not attempt(broken, "remove the kernels' folder", lines.append)
    assert lines == ["WARNING: could not remove the kernels' folder: RecursionError: maximum recursion depth exceeded"]


# The preparation's time limit, with steps made slow on purpose (the child processes inherit the patches).

@pytest.mark.parametrize("sandboxed", [True, False])
def test_a_kernel_s_connection_file_is_in_the_student_s_socket_folder_not_in_tmp(tmp_path, monkeypatch, sandboxed):
    """It holds the key that signs the kernel's messages. jupyter_client made it in $TMPDIR and only shutting the
    kernel down removed it, so each grading process killed at a student's time limit left one in /tmp; the grading
    command removes the socket folder (the grader's own, which the sandbox never shows) after every student."""
    from types import SimpleNamespace

    from grading.isolation import kernels, sandbox

    sockets, temporary = tmp_path / "sockets", tmp_path / "tmp"
    sockets.mkdir(mode=0o700)
    temporary.mkdir()
    plan = sandbox.Plan(sandbox=sandboxed, socket_dir=str(sockets)).write(tmp_path / "plan.json")
    monkeypatch.setenv(kernels.PLAN_VARIABLE, str(plan))
    monkeypatch.setattr(kernels, "warm_process", lambda plan_file: SimpleNamespace(host_ip=str(sockets / "kernel")))
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    manager = kernels.SandboxKernelManager()
    manager.write_connection_file()
    assert Path(manager.connection_file).parent == sockets and Path(manager.connection_file).exists()
    assert list(temporary.iterdir()) == []
    manager.cleanup_connection_file()
    assert list(sockets.iterdir()) == []


def _message(msg_type: str, **content) -> dict:
    return {"msg_type": msg_type, "header": {"msg_type": msg_type}, "parent_header": {}, "content": content}


def test_an_output_that_fits_is_kept_as_it_came_and_a_larger_one_is_cut_with_a_marker():
    from grading.isolation.outputs import OutputBudget

    budget = OutputBudget(per_output=1000, per_cell=2500, per_notebook=4000)
    budget.start_cell()
    honest = _message("display_data", data={"image/png": "iVBOR" * 100, "text/plain": "<Figure>"}, metadata={})
    assert budget.bound(honest) is honest
    cut = budget.bound(_message("stream", name="stdout", text="A" * 5000))["content"]
    assert cut["text"].startswith("A" * 1000) and cut["text"].count("A") == 1000
    assert "[the grader cut 4,000 bytes of this output here: one output may hold" in cut["text"]
    error = budget.bound(_message("error", ename="ValueError", evalue="C" * 9000, traceback=["x" * 9000] * 3))
    content = error["content"]
    assert content["ename"] == "ValueError" and len(content["evalue"]) + sum(map(len, content["traceback"])) < 1300
    assert "bytes of this output here" in content["traceback"][-1]
    # The cell's 2,500 bytes are spent: what follows is dropped, and one line at the end says so.
    assert budget.bound(_message("stream", name="stdout", text="B" * 100)) is None
    assert budget.bound(_message("execute_result", data={"text/plain": "1"}, metadata={}, execution_count=1)) is None
    note = budget.end_cell()
    assert note.text.startswith("[the grader dropped 2 more outputs of this cell (") and "a cell's outputs" in note.text
    budget.start_cell()  # The next cell has its own 2,500 bytes, within the notebook's 4,000.
    assert budget.bound(_message("stream", name="stdout", text="D" * 900))["content"]["text"] == "D" * 900
    budget.cleared()  # clear_output: the cell's outputs no longer count.
    assert budget.bound(_message("stream", name="stdout", text="E" * 900))["content"]["text"] == "E" * 900
    left = budget.bound(_message("stream", name="stderr", text="F" * 900))["content"]["text"]
    assert left.count("F") < 900 and "a notebook's outputs may hold" in left


def test_a_notebook_s_outputs_are_bounded_in_bytes_as_they_arrive(tmp_path):
    """A print of 300 MB, an exception whose message is 400 MB: nbgrader's LimitOutput counts lines, so they went
    whole into the grading process, the autograded notebook and the feedback (301 MB, 839 MB; the process above
    5 GB). Each output, cell and notebook now holds at most its limit (small here), and says what was cut."""
    from nbformat.v4 import new_code_cell, new_notebook

    from grading.judge.execute import JudgedExecute

    limits = {"max_output_bytes": 100_000, "max_cell_output_bytes": 150_000, "max_notebook_output_bytes": 400_000}
    cells = ["print('A' * 3_000_000)", "raise ValueError('C' * 3_000_000)",
             "import sys\nfor _ in range(40):\n    print('B' * 50_000, flush=True)",
             "from IPython.display import display\ndisplay({'image/png': 'iVBOR' * 100_000}, raw=True)",
             "print('honest')\n6 * 7", "print('D' * 300_000)"]
    notebook = new_notebook(cells=[new_code_cell(source) for source in cells])
    executor = JudgedExecute(judge=False, timeout=60, **limits)
    executed, _ = executor.preprocess(notebook, {"metadata": {"path": tmp_path}})
    sizes = [len(json.dumps(cell.outputs)) for cell in executed.cells]
    assert max(sizes[:4]) < 160_000 and sum(sizes) < 420_000, sizes
    text = [json.dumps(cell.outputs) for cell in executed.cells]
    assert "the grader cut 2,900,001 bytes of this output here: one output may hold" in text[0]
    assert executed.cells[1].outputs[0].ename == "ValueError" and "bytes of this output here" in text[1]
    assert "the grader cut" in text[2] or "the grader dropped" in text[2]
    assert "the grader cut" in text[3] and "image/png" not in text[3]
    assert executed.cells[4].outputs[0].text == "honest\n" and executed.cells[4].outputs[1].data == {"text/plain": "42"}
    assert "a notebook's outputs may hold" in text[5], text[5][-300:]


def _course(tmp_path: Path) -> Path:
    course = tmp_path / "course"
    for kind in ("release", "source"):
        (course / kind / ASSIGNMENT).mkdir(parents=True)
        shutil.copy(ROOT / kind / ASSIGNMENT / FILE, course / kind / ASSIGNMENT / FILE)
    return course


def _submissions(tmp_path: Path, students: dict[str, nbformat.NotebookNode]) -> list[Submission]:
    found = []
    for student, notebook in students.items():
        path = tmp_path / "submissions" / student / FILE
        path.parent.mkdir(parents=True)
        nbformat.write(notebook, path)
        found.append(Submission(student, ASSIGNMENT, path, [], root=tmp_path / "submissions"))
    return found


def test_a_step_past_the_time_limit_stops_that_notebook_alone(tmp_path, monkeypatch):
    release = nbformat.read(ROOT / "release" / ASSIGNMENT / FILE, as_version=4)
    answers = solution_code(nbformat.read(ROOT / "source" / ASSIGNMENT / FILE, as_version=4))
    marked = {name: fill(release, {**answers, "task1_1_select_victim": answers["task1_1_select_victim"]
                                   + f"\n# {name}"}) for name in ("slow_scan", "slow_repair", "crash")}
    real_scan, real_repair = prepare.scan, prepare.repair

    def scan(notebook, release):
        if any("# slow_scan" in cell.source for cell in notebook.cells):
            time.sleep(600)
        if any("# crash" in cell.source for cell in notebook.cells):
            os._exit(3)
        return real_scan(notebook, release)

    def repair(notebook, release):
        if any("# slow_repair" in cell.source for cell in notebook.cells):
            time.sleep(600)
        return real_repair(notebook, release)

    monkeypatch.setattr(prepare, "scan", scan)
    monkeypatch.setattr(prepare, "repair", repair)
    course = _course(tmp_path)
    submissions = _submissions(tmp_path, {"honest": fill(release, answers), **marked})
    start = time.monotonic()
    prepare.place(submissions, course, limit_s=6, jobs=4)
    assert time.monotonic() - start < 120
    by_student = {s.student: s for s in submissions}
    placed = {s: (course / "submitted" / s / ASSIGNMENT / FILE).exists() for s in by_student}
    assert placed == {"honest": True, "slow_scan": True, "slow_repair": False, "crash": True}
    assert not by_student["honest"].failure and not by_student["honest"].needs_manual_look
    assert not by_student["slow_scan"].failure and by_student["slow_scan"].needs_manual_look
    assert by_student["slow_scan"].notes == ["scan took too long (over 6 s); graded without it"]
    assert by_student["slow_repair"].failure == "needs a manual look: repair took too long (over 6 s); not graded"
    assert by_student["crash"].failure.startswith("needs a manual look: could not prepare it for grading (its process "
                                                  "ended during scan, exit code 3)")


def _cpu_seconds(action) -> float:
    start = time.process_time()
    action()
    return time.process_time() - start


@pytest.mark.filterwarnings("ignore::nbformat.validator.DuplicateCellId")  # nbformat renames the copies' ids.
def test_every_preparation_step_costs_the_same_per_byte_for_notebooks_of_growing_size(tmp_path):
    """Read, repair (metadata lost, a task's cell copied many times), place, fingerprint, scan, markdown:
    16 times the size costs not more than 3 times as much per byte (CPU time, in one run)."""
    release = nbformat.read(ROOT / "release" / ASSIGNMENT / FILE, as_version=4)
    answers = solution_code(nbformat.read(ROOT / "source" / ASSIGNMENT / FILE, as_version=4))
    course = _course(tmp_path)
    loaded = prepare._Course(course, "experiment", None)
    loaded.load(ASSIGNMENT)

    def notebook(copies: int) -> nbformat.NotebookNode:
        made = fill(release, answers)
        for cell in made.cells:
            cell.metadata = {}
        for index in range(copies):
            made.cells.append(nbformat.v4.new_code_cell(answers["task1_3_quotas"]))
            made.cells.append(nbformat.v4.new_code_cell(f"%ls\nvalue_{index} = {index}"))
            made.cells.append(nbformat.v4.new_markdown_cell(f"<b>note {index}</b> [x](javascript:{index}) *a* `b`"))
        return made

    def per_byte(copies: int, student: str) -> float:
        [submission] = _submissions(tmp_path / student, {student: notebook(copies)})
        size = submission.path.stat().st_size
        return _cpu_seconds(lambda: prepare.prepare_one(submission, loaded)) / size

    per_byte(20, "warm_up")
    ratio = per_byte(800, "large") / per_byte(50, "small")
    assert ratio < 3, f"the cost per byte grew {ratio:.1f} times for 16 times the size"


# The copy check.

def test_fingerprints_set_aside_layout_comments_untouched_cells_the_reference_and_tiny_answers():
    release, answers = release_and_answers()
    reference = answers
    own = fingerprint(fill(release, {**answers, "task1_3_quotas": own_quotas()}), release, reference)
    assert list(own) == ["task1_3_quotas"] and own["task1_3_quotas"][1] >= 50, own
    assert fingerprint(fill(release, {**answers, "task1_3_quotas": reformatted(own_quotas())}), release,
                       reference) == own
    assert fingerprint(release, release, reference) == {}, "untouched cells are not compared"
    assert fingerprint(fill(release, answers), release, reference) == {}, "the published reference is not compared"
    short = "def select_victim(values):\n    return sorted(values, key=lambda k: (values[k], k))[0]"
    tiny = fingerprint(fill(release, {**answers, "task1_1_select_victim": short}), release, reference)
    assert tiny["task1_1_select_victim"][1] < 50
    assert not find_copies({s: {"assignments": {ASSIGNMENT: {"fingerprint": tiny}}} for s in ("ann", "ben")})


def test_copies_are_found_across_shards_at_merge_time_and_the_score_is_unchanged(tmp_path):
    from grading.pipeline.merge import SHARDS, newest_records, with_copies_flagged, write_results
    from grading.pipeline.report import Scores

    release, answers = release_and_answers()
    copied = fingerprint(fill(release, {**answers, "task1_3_quotas": own_quotas()}), release, answers)
    other = fingerprint(fill(release, {**answers, "task1_7_lex_argmin": load_mutants(ASSIGNMENT).ALTERNATIVES[
        "task1_7_lex_argmin"]["narrowing with index tensors"]}), release, answers)
    records = {"ann": copied, "ben": copied, "cat": other, "dan": {}}
    for shard, students in (("1-of-2", ["ann", "cat"]), ("2-of-2", ["ben", "dan"])):
        write_results(tmp_path / SHARDS / shard / "results.json", {student: {
            "hash": "h", "graded_at": 1.0, "assignments": {ASSIGNMENT: {
                "status": "graded" if student != "ben" else "repaired; tasks were out of order",
                "tasks": {"1.3": [3, 3]}, "fingerprint": records[student]}}} for student in students})
    merged = {student: record for student, (record, _) in newest_records(tmp_path, log=lambda line: None).items()}
    rows = [(Scores(s, ASSIGNMENT, {"1.3": (3.0, 3.0)}), merged[s]["assignments"][ASSIGNMENT]["status"])
            for s in sorted(merged)]
    lines: list[str] = []
    statuses = {scores.student: (scores.total, status) for scores, status in with_copies_flagged(rows, merged,
                                                                                                   lines.append)}
    assert statuses == {"ann": (3.0, "needs a manual look: same solution as ben (task 1.3)"),
                        "ben": (3.0, "needs a manual look: same solution as ann (task 1.3); repaired; tasks were out "
                                     "of order"),
                        "cat": (3.0, "graded"), "dan": (3.0, "graded")}
    assert lines == [f"ann/{ASSIGNMENT}: same solution as ben (task 1.3)",
                     f"ben/{ASSIGNMENT}: same solution as ann (task 1.3)"]
    assert flagged("timed out after 60 s (0 points; needs a manual look)", "same solution as x (task 1.3)") == \
        "timed out after 60 s (0 points; needs a manual look); same solution as x (task 1.3)"


# Issue "kernel stops": each appended to task 1.3's solution, after tasks 1.1 and 1.2 were judged (4 of 22 points).
_STOPS = {
    # ipykernel's message handler then raises on every later request: the kernel goes idle and never replies.
    "mute_stdout": "import sys\nsys.stdout = None",
    "dies": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
}


@pytest.fixture(scope="module")
def stopped_kernels(tmp_path_factory):
    """Kernels that stop answering or die in task 1.3, graded through the command with a 20 s cell limit and a 60 s
    limit per notebook; an honest student beside them."""
    from grading.pipeline.run import grade_folder

    folder = tmp_path_factory.mktemp("stops")
    release, answers = release_and_answers()
    notebooks = {"honest": fill(release, answers), **{student: fill(release, {
        **answers, "task1_3_quotas": answers["task1_3_quotas"] + "\n" + code}) for student, code in _STOPS.items()}}
    for student, notebook in notebooks.items():
        (folder / student).mkdir()
        nbformat.write(notebook, folder / student / FILE)
    output = tmp_path_factory.mktemp("stops-output")
    started = time.monotonic()
    rows = grade_folder(folder, ROOT, [ASSIGNMENT], output=output, cell_timeout=20, student_timeout=60, jobs=3,
                        feedback=False, log=lambda line: None)
    return {scores.student: (scores, status) for scores, status in rows}, time.monotonic() - started, output


def _keeps_tasks_1_1_and_1_2(scores) -> None:
    assert scores.max_total == 22 and scores.total == 4, scores.tasks
    assert scores.tasks["1.1"] == (2.0, 2.0) and scores.tasks["1.2"] == (2.0, 2.0), scores.tasks


def test_a_kernel_that_stops_answering_ends_its_notebook_at_once_and_keeps_the_points_judged_before(stopped_kernels):
    """`sys.stdout = None` made every later cell wait out its time limit until the notebook's limit killed its
    grading process: the whole limit spent, and 0 of 0 points (the cells judged before lost)."""
    graded, seconds, output = stopped_kernels
    scores, status = graded["mute_stdout"]
    _keeps_tasks_1_1_and_1_2(scores)
    assert status.startswith("needs a manual look: the kernel stopped answering in cell ") and \
        "(test_task1_3_quotas)" in status and "the rest were not run and score 0" in status, status
    assert graded["honest"][0].total == 22 and graded["honest"][1] == "graded", graded["honest"]
    assert seconds < 55, f"the batch took {seconds:.0f} s: a kernel that stopped answering waited out time limits"
    autograded = nbformat.read(output / "autograded" / "mute_stdout" / ASSIGNMENT / FILE, as_version=4)
    last = next(c for c in autograded.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == "test_task1_8_quotas_tensor")
    assert any("not run: the kernel stopped answering" in out.get("evalue", "") for out in last.outputs), last.outputs


def test_a_kernel_that_dies_is_named_in_the_status_and_the_points_judged_before_are_kept(stopped_kernels):
    """A kernel death failed nbgrader's autograde ("NbGraderException: Please see the above traceback"): 0 of 22."""
    graded, _, _ = stopped_kernels
    scores, status = graded["dies"]
    _keeps_tasks_1_1_and_1_2(scores)
    assert status.startswith("needs a manual look: the kernel died in cell ") and "(task1_3_quotas)" in status, status


def test_a_notebook_past_its_time_limit_says_it_was_not_graded_and_keeps_its_maximum(stopped_kernels, tmp_path):
    """A notebook killed at --student-timeout had no scores: statuses.csv showed it as 0 of 0."""
    from grading.pipeline.collect import Submission
    from grading.pipeline.events import TimedOut
    from grading.pipeline.jobs import status_of
    from grading.pipeline.run import unscored

    submission = Submission("ann", ASSIGNMENT, tmp_path / FILE, ["uses sys.stdout"])
    status = status_of(submission, TimedOut("timed out"), 30)
    assert status.startswith("timed out after 30 s: the notebook ran past its time limit (--student-timeout) and was "
                             "not graded") and status.endswith("; uses sys.stdout"), status
    tasks = unscored(stopped_kernels[2], ASSIGNMENT)  # As the run's gradebook defines the assignment.
    assert sum(maximum for _, maximum in tasks.values()) == 22 and not any(score for score, _ in tasks.values())


def test_a_submission_without_a_valid_student_id_gets_a_row_in_statuses_csv(tmp_path):
    """Such a file was a log line alone: no row in grades.csv or statuses.csv. Ids in any script are valid."""
    import csv

    from grading.pipeline.run import grade_folder

    folder = tmp_path / "submissions"
    for name in ("with space", "张三", "Jose\u0301"):  # José as macOS writes it (decomposed).
        (folder / name).mkdir(parents=True)
        (folder / name / FILE).write_text("{ not a notebook")  # Reported before any kernel starts.
    (folder / f"Copy of {ASSIGNMENT} (1).ipynb").write_text("{ not a notebook")
    output = tmp_path / "output"
    grade_folder(folder, ROOT, [ASSIGNMENT], output=output, feedback=False, log=lambda line: None)
    with open(output / "statuses.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    by_student = {row["student_id"]: row for row in rows if row["student_id"]}
    assert set(by_student) == {"张三", "Jos\u00e9"}, rows
    assert all("not a readable notebook" in row["status"] for row in by_student.values()), rows
    unnamed = sorted(row["status"] for row in rows if not row["student_id"])
    assert len(unnamed) == 2 and all(row["assignment"] == ASSIGNMENT for row in rows), rows
    assert unnamed[0].startswith(f"not graded: 'Copy of {ASSIGNMENT} (1).ipynb': cannot tell a valid student id"), rows
    assert unnamed[1].startswith(f"not graded: 'with space/{FILE}': cannot tell a valid student id"), rows
    assert all("rename" in status and "--students" in status for status in unnamed), unnamed
