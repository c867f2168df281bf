"""Every source notebook follows the anatomy of COURSE.md: header, setup cell, bilingual prose,
tasks of one solution cell and one test cell each, and ids that agree everywhere."""

from __future__ import annotations

import ast
import re

import nbformat
import pytest

from grading.config import ASSIGNMENTS, ROOT, colab_url, install_spec, raw_url

CJK = re.compile(r"[\u4e00-\u9fff]")
LATIN_WORD = re.compile(r"[A-Za-z]{3,}")
CHECKS_RETURNING_NONE = {"check_type", "assert_plain_equal", "assert_same_tensor", "assert_raises",
                         "assert_no_python_loop", "print"}
TASK_HEADING = re.compile(r"^## Task (\d+)\.(\d+): (\w+)[^\n]* \((\d+) points?\)", re.M)


def _load(assignment):
    return nbformat.read(ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4)


def _meta(cell):
    return cell.metadata.get("nbgrader", {})


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_header_and_setup_cell(assignment):
    cells = _load(assignment).cells
    title = cells[0].source
    assert cells[0].cell_type == "markdown"
    assert re.match(rf"^# {assignment[:2]}\. .+ \| .*{CJK.pattern}", title), "title must be '# NN. English | 中文'"
    assert colab_url(assignment) in title, "the Colab badge must point at this notebook's release path"
    assert f"[![ModelScope](https://img.shields.io/badge/ModelScope-Open%20from%20URL-624aff)]({raw_url(assignment)})" in title, \
        "the ModelScope badge must carry this notebook's file address in the repository"
    assert "Open from URL" in title and "Difficulty" in title and "Time" in title
    points = sum(_meta(c).get("points", 0) for c in cells if _meta(c).get("grade"))
    assert f"**Points:** {points}" in title, f"the header must state the points total ({points})"
    setup = cells[1]
    assert _meta(setup).get("grade_id") == "setup" and _meta(setup).get("locked"), "cell 2 is the locked setup cell"
    for needed in (install_spec(), "pick_device()", "seed_everything(", "setup_summary("):
        assert needed in setup.source, f"the setup cell lacks {needed}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_prose_is_bilingual(assignment):
    for index, cell in enumerate(_load(assignment).cells):
        if cell.cell_type == "markdown":
            assert CJK.search(cell.source) and LATIN_WORD.search(cell.source), (
                f"markdown cell {index} must have English and Chinese")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_tasks_follow_the_pattern(assignment):
    cells = _load(assignment).cells
    number = int(assignment[:2])
    solutions = [i for i, c in enumerate(cells) if _meta(c).get("solution")]
    assert solutions, "a notebook has at least one task"
    for order, index in enumerate(solutions, start=1):
        cell, heading, test = cells[index], cells[index - 1], cells[index + 1]
        grade_id = _meta(cell)["grade_id"]
        match = re.fullmatch(rf"task{number}_{order}_(\w+)", grade_id)
        assert match, f"solution cell {grade_id} must be task{number}_{order}_<name>"
        found = TASK_HEADING.search(heading.source)
        assert heading.cell_type == "markdown" and found, f"{grade_id}: the cell before must be '## Task N.M: name (P points)'"
        assert (int(found.group(1)), int(found.group(2))) == (number, order), f"{grade_id}: heading number"
        assert _meta(test).get("grade") and _meta(test)["grade_id"] == f"test_{grade_id}", f"{grade_id}: test cell must follow"
        assert int(found.group(4)) == _meta(test)["points"], f"{grade_id}: heading and test cell disagree on points"
        tree = ast.parse(cell.source)
        defined = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
        assert len(defined) == 1 and ast.get_docstring(defined[0]), f"{grade_id}: one function or class with a docstring"
        assert found.group(3) == defined[0].name, f"{grade_id}: heading names {found.group(3)}, cell defines {defined[0].name}"
        assert "### BEGIN SOLUTION" in cell.source and "### END SOLUTION" in cell.source
        assert test.source.startswith('"""Check that'), f"{grade_id}: test cell starts with a \"\"\"Check that ...\"\"\" docstring"
        assert "### BEGIN HIDDEN TESTS" in test.source and "### END HIDDEN TESTS" in test.source
        last = ast.parse(test.source).body[-1]
        harmless = (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
                    and isinstance(last.value.func, ast.Name) and last.value.func.id in CHECKS_RETURNING_NONE)
        assert not isinstance(last, ast.Expr) or harmless, (
            f"{grade_id}: a test cell that ends in a bare expression is graded by its value")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_summary_and_references(assignment):
    text = "\n".join(c.source for c in _load(assignment).cells if c.cell_type == "markdown")
    assert "## Summary" in text and "## References" in text
