"""Test code written once per notebook (authoring/shared/) and copied into the cells that name it."""

from __future__ import annotations

import ast
import copy
import textwrap

import jupytext
import nbformat
import pytest

from grading.authoring import shared_code
from grading.authoring.notebooks import assignments_in, py_path
from grading.config import ROOT

SHARED = {"Model": "class Model:\n    def size(self):\n\n        return 1",
          "compare": "def compare(a, b):\n    return a == b"}


def test_a_region_gets_the_named_definitions_indented_as_its_marker():
    cell = textwrap.dedent("""\
        def _check():
            import random
            # BEGIN SHARED Model, compare
            stale text
            # END SHARED
            assert compare(Model().size(), 1)""")
    text, used = shared_code.expand(cell, SHARED, "authoring/shared/x.py", "x")
    assert used == {"Model", "compare"}
    assert text == textwrap.dedent("""\
        def _check():
            import random
            # BEGIN SHARED Model, compare (authoring/shared/x.py)
            class Model:
                def size(self):

                    return 1

            def compare(a, b):
                return a == b
            # END SHARED
            assert compare(Model().size(), 1)""")
    assert shared_code.expand(text, SHARED, "authoring/shared/x.py", "x") == (text, used)
    namespace = {}
    exec(text + "\n_check()", namespace)


@pytest.mark.parametrize("cell, message", [
    ("# BEGIN SHARED Model\nx = 1", "no '# END SHARED'"),
    ("# BEGIN SHARED Model\n# BEGIN SHARED compare\n# END SHARED", "no '# END SHARED'"),
    ("x = 1\n# END SHARED", "without a '# BEGIN SHARED'"),
    ("# BEGIN SHARED Modle\n# END SHARED", "defines no Modle at its top level (it defines: Model, compare)"),
])
def test_a_malformed_region_is_a_clear_error(cell, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        shared_code.expand(cell, SHARED, "authoring/shared/x.py", "x, cell 3")


def _notebook(*sources):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])


def test_a_shared_definition_no_cell_uses_is_an_error(tmp_path):
    (tmp_path / shared_code.FOLDER).mkdir(parents=True)
    (tmp_path / shared_code.FOLDER / "01_x.py").write_text("def used():\n    pass\n\n\ndef dead():\n    pass\n")
    with pytest.raises(ValueError, match="no cell of 01_x uses dead"):
        shared_code.fill("01_x", _notebook("# BEGIN SHARED used\n# END SHARED"), tmp_path)


def test_a_region_without_a_shared_file_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        shared_code.fill("01_x", _notebook("# BEGIN SHARED used\n# END SHARED"), tmp_path)


@pytest.mark.parametrize("assignment", assignments_in(ROOT))
def test_every_region_of_the_sources_equals_its_shared_code(assignment):
    notebook = jupytext.read(py_path(assignment))
    filled = copy.deepcopy(notebook)
    changed = shared_code.fill(assignment, filled)
    assert not changed, f"{assignment}: cells {changed} differ from their shared code: run make notebooks"


def _nested_definitions(source: str) -> list[str]:
    """The functions and classes defined inside a test cell's functions, outside its shared regions."""
    kept, inside = [], False
    for line in source.split("\n"):
        inside = (inside or "# BEGIN SHARED" in line) and "# END SHARED" not in line
        kept.append("" if inside or "# END SHARED" in line else line)
    text = "\n".join(line for line in kept if not line.lstrip().startswith("%"))
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.col_offset > 0:
            found.append(ast.get_source_segment(text, node, padded=True))
    return found


@pytest.mark.parametrize("assignment", assignments_in(ROOT))
def test_no_test_code_is_written_twice(assignment):
    """A definition of 8 lines or more that two test cells both carry belongs in the shared file."""
    seen: dict[str, str] = {}
    repeated = set()
    for cell in jupytext.read(py_path(assignment)).cells:
        if not cell.metadata.get("nbgrader", {}).get("grade"):
            continue
        for definition in _nested_definitions(cell.source):
            key = textwrap.dedent(definition)
            if key.count("\n") >= 7 and seen.setdefault(key, cell.metadata["nbgrader"]["grade_id"]) != \
                    cell.metadata["nbgrader"]["grade_id"]:
                repeated.add(key.split("\n")[0].strip())
    assert not repeated, (f"{assignment}: these definitions stand in several test cells; move them to "
                          f"{shared_code.FOLDER}/{assignment}.py and mark '# BEGIN SHARED' regions: {sorted(repeated)}")
