"""The notebooks' editable sources: paired forms that stay in sync, and given cells equal to their origin.

Whether the committed files are current is not a test: CI runs ``make notebooks`` on a clean clone
and fails when ``git diff --exit-code`` then finds a change.
"""

from __future__ import annotations

import copy
import os
import shutil
import time

import jupytext
import nbformat
import pytest

from grading.authoring.given import fill
from grading.authoring.notebooks import ipynb_path, normalize, py_path, sync
from grading.config import ASSIGNMENTS, ROOT

ASSIGNMENT = "03_lru_lfu"  # It has every kind of given cell: header, setup, code from notebook 02.


def test_every_given_cell_equals_its_origin():
    sources = {}
    for assignment in ASSIGNMENTS:
        notebook = nbformat.read(ipynb_path(assignment), as_version=4)
        refilled = copy.deepcopy(notebook)
        changed = fill(assignment, refilled, sources)
        assert not changed, f"{assignment}: given cells {changed} differ from their origin: run `make notebooks`"
        sources[assignment] = notebook
    kinds = {str(cell.metadata["given"]) for notebook in sources.values() for cell in notebook.cells
             if "given" in cell.metadata}
    assert {"header", "setup", "glossary"} <= kinds and any(kind.startswith("[") for kind in kinds), kinds


@pytest.fixture
def course(tmp_path):
    """A scratch copy of what the sync reads and writes: authoring/, source/ and the guide's glossary."""
    for folder in ("authoring", "source", "docs"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    return tmp_path


def _newer(path):
    """Give ``path`` a modification time clearly after every other file's, as an editor's save does."""
    later = time.time() + 10
    os.utime(path, (later, later))


def _cell(notebook, grade_id):
    return next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def test_a_jupyterlab_edit_of_the_ipynb_reaches_the_py(course):
    path = ipynb_path(ASSIGNMENT, course)
    notebook = nbformat.read(path, as_version=4)
    description = _cell(notebook, "task3_2_LRUPolicy_description")
    description.source += "\n\nA sentence the instructor added in JupyterLab."
    # What JupyterLab and its toolbar leave behind: fresh cell ids, view metadata, a new cell.
    for cell in notebook.cells:
        cell["id"] = os.urandom(4).hex()
        cell.metadata["collapsed"] = False
    notebook.cells.insert(3, nbformat.v4.new_markdown_cell("A new note. 新的说明。"))
    nbformat.write(notebook, path)
    _newer(path)

    written = sync([ASSIGNMENT], course, log=lambda line: None)

    assert f"authoring/{ASSIGNMENT}.py" in written
    from_py = jupytext.read(py_path(ASSIGNMENT, course))
    assert "A sentence the instructor added in JupyterLab." in _cell(from_py, "task3_2_LRUPolicy_description").source
    assert from_py.cells[3].source == "A new note. 新的说明。"
    again = nbformat.read(path, as_version=4)
    assert [c["id"] for c in again.cells[:5]] == ["cell-000", "setup", "cell-002", "cell-003", "cell-004"]
    assert _cell(again, "task3_2_LRUPolicy")["id"] == "task3_2_LRUPolicy"
    assert all("collapsed" not in c.metadata for c in again.cells)
    assert sync([ASSIGNMENT], course, log=lambda line: None) == [], "a second sync changes nothing"


def test_an_edit_of_the_py_reaches_the_ipynb_and_given_cells_are_restored(course):
    path = py_path(ASSIGNMENT, course)
    text = path.read_text(encoding="utf-8")
    heading = "# ## Task 3.2: LRUPolicy (3 points)"
    text = text.replace(heading, heading + "\n#\n# Edited in an editor.", 1)
    text = text.replace("DEVICE = pick_device()", "DEVICE = 'a hand edit of the setup cell'", 1)
    path.write_text(text, encoding="utf-8")
    _newer(path)

    sync([ASSIGNMENT], course, log=lambda line: None)

    notebook = nbformat.read(ipynb_path(ASSIGNMENT, course), as_version=4)
    assert "Edited in an editor." in _cell(notebook, "task3_2_LRUPolicy_description").source
    assert "DEVICE = pick_device()" in _cell(notebook, "setup").source, "the setup cell comes from its template"
    assert "DEVICE = pick_device()" in path.read_text(encoding="utf-8")
    assert normalize(jupytext.read(path), ASSIGNMENT).cells == notebook.cells


_MARKED_CELL = '''def _check():
    assert f(1) == 2, "f(1)"
    ### BEGIN HIDDEN TESTS
    assert f(2) == 4, "f(2)"
    ### END HIDDEN TESTS
    assert f(3) == 6, "f(3)"


_check()'''


def test_a_marked_test_cell_keeps_its_lines_and_refuses_a_block_it_cannot_mark():
    from grading.pipeline.feedback import HIDDEN_MARK, marking_hidden_tests

    marked = marking_hidden_tests(_MARKED_CELL)
    assert marked.splitlines()[2] == f"    {HIDDEN_MARK}()  ### BEGIN HIDDEN TESTS"
    assert len(marked.splitlines()) == len(_MARKED_CELL.splitlines()) and marked.splitlines()[3:] == \
        _MARKED_CELL.splitlines()[3:]
    # A block that begins with the else of a visible if: a call before it would not compile.
    unmarkable = "if x:\n    y = 1\n### BEGIN HIDDEN TESTS\nelse:\n    y = 2\n### END HIDDEN TESTS"
    assert marking_hidden_tests(unmarkable) is None


@pytest.mark.parametrize("answer, hidden_ran", [
    ("def f(x):\n    return 0", False),  # Fails the visible case before the hidden block.
    ("def f(x):\n    return 2 if x == 1 else 0", True),  # Fails inside the hidden block.
    ("def f(x):\n    return 2 * x if x < 3 else 0", True),  # Fails the visible case after the hidden block.
    ("raise ValueError('no')", False),  # The answer itself raises.
])
def test_the_harness_says_whether_hidden_tests_ran_before_a_failure(tmp_path, answer, hidden_ran):
    from grading.authoring.harness import NotebookHarness

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("def f(x):\n    return 2 * x", metadata={"nbgrader": {
            "grade_id": "task_f", "solution": True, "grade": False, "locked": False}}),
        nbformat.v4.new_code_cell(_MARKED_CELL, metadata={"nbgrader": {
            "grade_id": "test_f", "solution": False, "grade": True, "locked": True, "points": 1}})]
    nbformat.write(notebook, tmp_path / "tiny.ipynb")
    harness = NotebookHarness(tmp_path / "tiny.ipynb")
    assert [r.passed for r in harness.results("task_f", "def f(x):\n    return 2 * x")] == [True]
    [result] = harness.results("task_f", answer)
    assert not result.passed and result.hidden_ran is hidden_ran, result
    # The release's visible tests alone fail each of these answers too, as the marks say where they are False.
    assert not harness.results("task_f", answer, visible_only=True)[0].passed or hidden_ran
