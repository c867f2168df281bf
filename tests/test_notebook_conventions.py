"""Every source notebook follows the anatomy of docs/AUTHORING.md: the given header and setup cell,
bilingual prose, tasks of one solution cell and one or more graded test cells, test cells that bind
no name of the student's, and ids that agree everywhere."""

from __future__ import annotations

import ast
import re

import nbformat
import pytest

from grading.config import ASSIGNMENTS, ROOT, colab_url, install_spec, modelscope_url, raw_url
from grading.isolation.scan import imported_names
from grading.pipeline.prepare import mark_experiments

CJK = re.compile(r"[\u4e00-\u9fff]")
LATIN_WORD = re.compile(r"[A-Za-z]{3,}")
TASK_HEADING = re.compile(r"^## Task (\d+)\.(\d+): (\w+)[^\n]* \((\d+) points?\)", re.M)
MODELSCOPE_BADGE = "[![Open in ModelScope](https://img.shields.io/badge/ModelScope-Open%20in%20ModelScope-624aff)]"


def _load(assignment):
    return nbformat.read(ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4)


def _meta(cell):
    return cell.metadata.get("nbgrader", {})


def _is_test(cell):
    return cell.cell_type == "code" and _meta(cell).get("grade") and not _meta(cell).get("solution")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_header_and_setup_cell(assignment):
    cells = _load(assignment).cells
    title = cells[0].source
    assert cells[0].cell_type == "markdown" and cells[0].metadata.get("given") == "header"
    assert re.match(rf"^# {assignment[:2]}\. .+ \| .*{CJK.pattern}", title), "title must be '# NN. English | 中文'"
    assert colab_url(assignment) in title, "the Colab badge must point at this notebook's release path"
    assert f"{MODELSCOPE_BADGE}({modelscope_url(assignment)})" in title, \
        "the ModelScope badge must open this notebook's release path in ModelScope"
    assert "Open from URL" in title and raw_url(assignment) in title, \
        "the header must give the raw file address for ModelScope's Open from URL"
    assert "Difficulty" in title and "Time" in title
    points = sum(_meta(c).get("points", 0) for c in cells if _meta(c).get("grade"))
    assert f"**Points:** {points}" in title and f"**总分：** {points}" in title, \
        f"the header must state {points} points"
    setup = cells[1]
    assert _meta(setup).get("grade_id") == "setup" and _meta(setup).get("locked"), "cell 2 is the locked setup cell"
    assert setup.metadata.get("given") == "setup"
    for needed in (install_spec(), "pick_device()", "seed_everything(", "setup_summary("):
        assert needed in setup.source, f"the setup cell lacks {needed}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_prose_is_bilingual(assignment):
    for index, cell in enumerate(_load(assignment).cells):
        if cell.cell_type == "markdown":
            assert CJK.search(cell.source) and LATIN_WORD.search(cell.source), (
                f"markdown cell {index} must have English and Chinese")


def _tasks(cells):
    """(solution index, [test indices]) for every solution cell, in order."""
    found = []
    for index, cell in enumerate(cells):
        if _meta(cell).get("solution"):
            found.append((index, []))
        elif _is_test(cell):
            assert found, f"test cell {_meta(cell)['grade_id']} has no solution cell before it"
            found[-1][1].append(index)
    return found


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_tasks_follow_the_pattern(assignment):
    cells = _load(assignment).cells
    number = int(assignment[:2])
    tasks = _tasks(cells)
    assert tasks, "a notebook has at least one task"
    for order, (index, tests) in enumerate(tasks, start=1):
        cell, heading = cells[index], cells[index - 1]
        grade_id = _meta(cell)["grade_id"]
        match = re.fullmatch(rf"task{number}_{order}_(\w+)", grade_id)
        assert match, f"solution cell {grade_id} must be task{number}_{order}_<name>"
        found = TASK_HEADING.search(heading.source)
        assert heading.cell_type == "markdown" and found, \
            f"{grade_id}: the cell before must be '## Task N.M: name (P points)'"
        assert (int(found.group(1)), int(found.group(2))) == (number, order), f"{grade_id}: heading number"
        assert tests and tests[0] == index + 1, f"{grade_id}: its test cells must follow it"
        assert tests == list(range(index + 1, index + 1 + len(tests))), f"{grade_id}: test cells must be adjacent"
        test_ids = [_meta(cells[i])["grade_id"] for i in tests]
        if len(tests) == 1:
            assert test_ids == [f"test_{grade_id}"], f"{grade_id}: its test cell must be test_{grade_id}"
        else:
            for part, test_id in enumerate(test_ids, start=1):
                assert re.fullmatch(rf"test_task{number}_{order}_{part}_[A-Za-z]\w*", test_id), (
                    f"{grade_id}: part {part}'s test cell must be test_task{number}_{order}_{part}_<name>, "
                    f"not {test_id}")
        points = sum(_meta(cells[i])["points"] for i in tests)
        assert int(found.group(4)) == points, \
            f"{grade_id}: the heading says {found.group(4)} points, the tests {points}"
        tree = ast.parse(cell.source)
        defined = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                   and not _is_kernel(node)]
        assert len(defined) == 1 and ast.get_docstring(defined[0]), \
            f"{grade_id}: one function or class with a docstring (and the @triton.jit kernels it launches)"
        assert found.group(3) == defined[0].name, \
            f"{grade_id}: heading names {found.group(3)}, cell defines {defined[0].name}"
        assert "### BEGIN SOLUTION" in cell.source and "### END SOLUTION" in cell.source
        for test_index in tests:
            _check_test_cell(cells[test_index])


def _is_kernel(node):
    """True for a function decorated with ``@triton.jit`` (or ``@triton.jit(...)``): a task's launcher may have them."""
    decorators = [d.func if isinstance(d, ast.Call) else d for d in getattr(node, "decorator_list", [])]
    return any(ast.unparse(d) == "triton.jit" for d in decorators)


def _check_test_cell(cell):
    """A docstring, one function ``_check_<id>`` holding the checks, and a call of it: nothing else.

    So a test cell binds no name but its own ``_check_`` function in the student's namespace, and
    its last line is a call that returns None (a bare expression would be graded by its value).
    """
    test_id = _meta(cell)["grade_id"]
    name = "_check_" + test_id[len("test_"):]
    assert cell.source.startswith('"""Check that'), f"{test_id}: starts with a \"\"\"Check that ...\"\"\" docstring"
    assert "### BEGIN HIDDEN TESTS" in cell.source and "### END HIDDEN TESTS" in cell.source, test_id
    body = ast.parse(cell.source).body
    shape = [type(node).__name__ for node in body]
    assert shape == ["Expr", "FunctionDef", "Expr"], (
        f"{test_id}: a test cell is its docstring, def {name}(): ... and the call {name}(); found {shape}")
    function, call = body[1], body[2].value
    assert function.name == name and not function.args.args, f"{test_id}: the function must be {name}()"
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == name and not call.args, (
        f"{test_id}: the cell must end with {name}()")
    returns = [node for node in ast.walk(function) if isinstance(node, ast.Return) and node.value is not None]
    nested = {id(n) for f in ast.walk(function) if isinstance(f, (ast.FunctionDef, ast.Lambda)) and f is not function
              for n in ast.walk(f)}
    assert all(id(node) in nested for node in returns), f"{test_id}: {name} must return None"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_summary_and_references(assignment):
    text = "\n".join(c.source for c in _load(assignment).cells if c.cell_type == "markdown")
    assert "## Summary" in text and "## References" in text


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_plots_are_only_in_the_experiments_that_grading_skips(assignment):
    """Grading skips the experiments after the last graded cell and runs every other code cell
    (grading/pipeline/prepare.py: `mark_experiments`); its kernels' warm process does not import matplotlib
    (0.3 CPU-s per student), so a plot in a cell that grading runs would cost that in every student's notebook."""
    notebook = _load(assignment)
    mark_experiments(notebook, "skipped when grading")
    for cell in notebook.cells:
        if cell.cell_type == "code" and "skipped when grading" not in cell.metadata.get("tags", []):
            plotting = {module for module in imported_names([cell.source]).values()
                        if module.split(".")[0] == "matplotlib" or module.startswith("course.plots")}
            assert not plotting, f"a cell that grading runs imports {sorted(plotting)}: move the plot after the tasks"
