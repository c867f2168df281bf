"""Each hardened grading setting, proven by autograding a crafted submission through the command.

One batch grades them all: a correct answer that writes to stderr; a test cell tagged
skip-execution; a deleted test cell; an infinite loop (interrupted by the cell timeout); a loop
that ignores interrupts (its notebook ends there, keeping the points judged before, while the others are still
graded); and a
file saved as "Copy of 01_eviction_as_ranking.ipynb"; and a student's own cell between tasks (it
runs) followed by a broken experiment cell after the last test (skipped); a 64 GiB allocation
under a 4 GiB memory limit; a notebook whose metadata was lost and whose cells were moved; a test
cell edited to `pass`; 200,000 printed lines; sys.exit() and os._exit() in a solution cell; two
files of one student in a flat folder (the original and a newer "_copy").
"""

from __future__ import annotations

import nbformat
import pytest

from grading.authoring.samples import fill, load_mutants, solution_code
from grading.pipeline.run import grade_folder

ASSIGNMENT = "01_eviction_as_ranking"
FILE = f"{ASSIGNMENT}.ipynb"


def _cell(notebook, grade_id):
    return next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


@pytest.fixture(scope="module")
def graded(built_course, tmp_path_factory):
    source = nbformat.read(built_course / "source" / ASSIGNMENT / FILE, as_version=4)
    release = nbformat.read(built_course / "release" / ASSIGNMENT / FILE, as_version=4)
    answers = solution_code(source)
    wrong_1_1 = next(iter(load_mutants(ASSIGNMENT).WRONG["task1_1_select_victim"].values()))
    folder = tmp_path_factory.mktemp("crafted")

    def save(student: str, notebook, name: str = FILE) -> None:
        (folder / student).mkdir()
        nbformat.write(notebook, folder / student / name)

    noisy = dict(answers)
    noisy["task1_1_select_victim"] = (
        "import sys, warnings\nprint('note: this goes to stderr', file=sys.stderr)\n"
        + answers["task1_1_select_victim"].replace(
            '    if not values:', '    warnings.warn("select_victim was called", UserWarning)\n'
            '    print("progress 50%", file=sys.stderr)\n    if not values:', 1))
    save("warns_on_stderr", fill(release, noisy))

    tagged = fill(release, {**answers, "task1_1_select_victim": wrong_1_1})
    _cell(tagged, "test_task1_1_select_victim").metadata["tags"] = ["skip-execution"]
    save("skip_tag", tagged)

    deleted = fill(release, answers)
    deleted.cells.remove(_cell(deleted, "test_task1_3_quotas"))
    save("deleted_test_cell", deleted)

    # The two slow students come first (students are graded in the order of their ids): the loop that ignores
    # interrupts holds one job for its cell's limit while the other job grades everyone else.
    save("a_infinite_loop", fill(release, {**answers, "task1_1_select_victim": "while True:\n    pass"}))

    stubborn = ("import time\nwhile True:\n    try:\n        time.sleep(0.1)\n"
                "    except KeyboardInterrupt:\n        pass")
    save("a_ignores_interrupts", fill(release, {**answers, "task1_2_eviction_order": stubborn}))

    save("copy_of_name", fill(release, answers), name=f"Copy of {FILE}")

    helper_first = fill(release, {**answers, "task1_1_select_victim": answers["task1_1_select_victim"].replace(
        "return min(values, key=lambda seq_id: (values[seq_id], seq_id))", "return my_helper(values)")})
    position = helper_first.cells.index(_cell(helper_first, "task1_1_select_victim"))
    helper_first.cells.insert(position, nbformat.v4.new_code_cell(
        "def my_helper(values):\n    return min(values, key=lambda seq_id: (values[seq_id], seq_id))"))
    helper_first.cells.append(nbformat.v4.new_code_cell("raise RuntimeError('my experiment is broken')"))
    save("helper_cell_and_broken_experiment", helper_first)

    huge = "blob = bytearray(64 * 2**30)\n" + answers["task1_2_eviction_order"]
    save("huge_allocation", fill(release, {**answers, "task1_2_eviction_order": huge}))

    flood = "for _line in range(200_000):\n    print('spam', _line)\n" + answers["task1_1_select_victim"]
    save("output_flood", fill(release, {**answers, "task1_1_select_victim": flood}))

    save("sys_exit", fill(release, {**answers, "task1_2_eviction_order": "import sys\nsys.exit(0)"}))
    save("os_exit", fill(release, {**answers, "task1_2_eviction_order": "import os\nos._exit(0)"}))

    vscode = fill(release, answers)
    for cell in vscode.cells:
        cell.metadata = {}
    vscode.cells.append(vscode.cells.pop(next(i for i, c in enumerate(vscode.cells) if "def quotas(" in c.source)))
    save("metadata_lost_and_reordered", vscode)

    edited = fill(release, {**answers, "task1_1_select_victim": wrong_1_1})
    _cell(edited, "test_task1_1_select_victim").source = "pass"
    save("edited_test_cell", edited)

    # Two files that map to carol (issue 14): a newer "_copy" must not silently replace the original.
    nbformat.write(fill(release, answers), folder / f"carol_{FILE}")
    nbformat.write(release, folder / f"carol_{ASSIGNMENT}_copy.ipynb")

    # The infinite loop's notebook needs its 20 s cell limit and the rest of the notebook within the student limit:
    # 60 s was too little once on a loaded 2-core machine; the loop that ignores interrupts waits it out in one job.
    rows = grade_folder(folder, built_course, [ASSIGNMENT], cell_timeout=20, student_timeout=90,
                        log=lambda line: None, memory_limit_gb=4)
    return {scores.student: (scores, status) for scores, status in rows}


def test_stderr_output_keeps_the_points(graded):
    scores, status = graded["warns_on_stderr"]
    assert scores.total == scores.max_total == 22, (scores.tasks, status)


def test_skip_execution_tag_does_not_skip_a_test(graded):
    scores, _ = graded["skip_tag"]
    assert scores.tasks["1.1"] == (0.0, 2.0), "a tagged test cell was skipped and gave a wrong answer its points"
    assert scores.total == 20


def test_deleted_test_cell_is_restored_and_graded(graded, built_course):
    scores, _ = graded["deleted_test_cell"]
    assert scores.tasks["1.3"] == (3.0, 3.0) and scores.total == 22
    autograded = nbformat.read(built_course / "autograded" / "deleted_test_cell" / ASSIGNMENT / FILE, as_version=4)
    assert _cell(autograded, "test_task1_3_quotas").source.startswith("# This cell")


def test_infinite_loop_is_interrupted_and_the_rest_graded(graded):
    scores, status = graded["a_infinite_loop"]
    assert scores.tasks["1.1"][0] == 0 and scores.total == 20, (scores.tasks, status)


def test_loop_that_ignores_interrupts_ends_its_notebook_without_stopping_the_batch(graded):
    """Its notebook ends at the interrupt that the kernel does not answer; task 1.1, judged before, keeps its points."""
    scores, status = graded["a_ignores_interrupts"]
    assert status.startswith("timed out: a cell ignored the interrupt: cell "), status
    assert "(task1_2_eviction_order)" in status, status
    assert scores.total == 2 and scores.tasks["1.1"] == (2.0, 2.0) and scores.max_total == 22, (scores.tasks, status)
    assert len(graded) == 14, "every other submission was graded"


def test_cells_added_between_tasks_run_and_experiments_are_skipped(graded, built_course):
    scores, status = graded["helper_cell_and_broken_experiment"]
    assert scores.total == 22, (scores.tasks, status)
    autograded = nbformat.read(built_course / "autograded" / "helper_cell_and_broken_experiment" / ASSIGNMENT / FILE,
                               as_version=4)
    assert not autograded.cells[-1].get("outputs"), "the experiment cell after the last test was skipped"


def test_huge_allocation_fails_in_its_cell_only(graded):
    scores, status = graded["huge_allocation"]
    assert scores.tasks["1.2"][0] == 0 and scores.total == 20, (scores.tasks, status)


def test_output_flood_keeps_the_points_it_earned(graded):
    scores, status = graded["output_flood"]
    assert scores.total == 22, (scores.tasks, status)


def test_sys_exit_costs_only_its_task(graded):
    scores, status = graded["sys_exit"]
    assert scores.tasks["1.2"][0] == 0 and scores.total == 20, (scores.tasks, status)


def test_os_exit_kills_the_kernel_and_keeps_only_the_points_judged_before(graded):
    scores, status = graded["os_exit"]
    assert scores.total == 2 and scores.tasks["1.1"] == (2.0, 2.0), (scores.tasks, status)
    assert status.startswith("needs a manual look: the kernel died in cell "), status
    assert "(task1_2_eviction_order)" in status, status


def test_lost_metadata_and_moved_cells_are_repaired(graded):
    scores, status = graded["metadata_lost_and_reordered"]
    assert scores.total == 22, (scores.tasks, status)
    assert status.startswith("repaired") and "out of order" in status, status


def test_feedback_shows_scores_but_no_hidden_test_code(graded, built_course):
    html = (built_course / "feedback" / "skip_tag" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert "(hidden tests ran here; their code is not shown)" in html
    assert "select_victim({&#39;y&#39;: 5, &#39;x&#39;: 5})" in html or "select_victim({'y': 5, 'x': 5})" in html
    for secret in ("BEGIN HIDDEN TESTS", "_oracle", "_rng", "random.Random("):
        assert secret not in html, f"feedback reveals {secret!r}"
    assert "20.0" in html or "20 /" in html or "Score: 20" in html


def test_edited_test_cell_is_put_back(graded):
    scores, status = graded["edited_test_cell"]
    assert scores.tasks["1.1"] == (0.0, 2.0) and scores.total == 20, (scores.tasks, status)


def test_copy_of_file_name_is_graded(graded):
    scores, status = graded["copy_of_name"]
    assert scores.total == 22, status
    assert "renamed 'Copy of 01_eviction_as_ranking.ipynb'" in status


def test_two_files_of_one_student_are_kept_aside_and_flagged(graded, built_course):
    scores, status = graded["carol"]
    assert status.startswith(f"needs a manual look: 2 files for carol/{ASSIGNMENT}"), status
    assert "none was graded" in status and f"'carol_{FILE}'" in status and f"'carol_{ASSIGNMENT}_copy.ipynb'" in status
    assert not scores.tasks and not (built_course / "submitted" / "carol").exists()
