"""The sanitizer, the policy, the feedback filter and the flags, checked without a browser, on every notebook.

tests/test_browser_sanitize.py proves in Chromium that no payload runs; these tests check the same
classes statically and quickly for every assignment of the course: each hostile submission
(tests/payloads.py, with the outputs its payload cells really make in a kernel) is sanitized and
rendered with formgrader's and feedback's own nbconvert templates, and the rendered notebook must
hold no script element, no event handler, no ``javascript:`` URL and no active element. The same
check finds the live payloads in the unsanitized rendering, so it can fail.
"""

from __future__ import annotations

import copy
import os

import nbclient
import nbgrader
import pytest
from bs4 import BeautifulSoup
from hypothesis import given, settings
from hypothesis import strategies as st
from nbconvert.exporters import HTMLExporter
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from payloads import LIVE, MARKER, hostile_submission, mark, read
from traitlets.config import Config

from grading.config import ASSIGNMENTS, ROOT
from grading.isolation.csp import submission_page_policy
from grading.isolation.sanitize import (
    WRAPPER_CLASS,
    markdown_findings,
    render_markdown,
    sanitize_notebook,
    sanitized_markdown,
)
from grading.isolation.scan import findings
from grading.pipeline.feedback import PLACEHOLDER, WITHHELD, HideHiddenTests

FORMGRADER = os.path.join(os.path.dirname(nbgrader.__file__), "server_extensions", "formgrader")
TEMPLATES = os.path.join(FORMGRADER, "templates")
# Elements that run script or load active documents (formgrader's own form controls are not among them).
ACTIVE_TAGS = {"script", "iframe", "object", "embed", "svg", "math", "frame", "frameset", "applet", "base", "link",
               "meta", "style", "template", "portal"}
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "data", "xlink:href", "poster", "background", "srcset"}


def active_content(page: str) -> list[str]:
    """Everything in the notebook part of a rendered page that can run script (empty when none)."""
    soup = BeautifulSoup(page, "html.parser")
    container = soup.find(id="notebook-container") or soup
    problems = []
    for element in container.find_all(True):
        if element.name in ACTIVE_TAGS:
            problems.append(f"<{element.name}>{element.get_text()[:300]}")
        for name, value in element.attrs.items():
            value = " ".join(value) if isinstance(value, list) else value
            if name.lower().startswith("on") or name.lower() == "srcdoc":
                problems.append(f"{element.name} {name}={value[:80]}")
            elif name.lower() in URL_ATTRIBUTES and value.strip().lower().replace("\t", "").startswith(
                    ("javascript:", "vbscript:", "data:text", "data:image/svg")):
                problems.append(f"{element.name} {name}={value[:80]}")
    return problems


def render(notebook, template: str) -> str:
    config = Config()
    config.HTMLExporter.template_name = template
    config.HTMLExporter.extra_template_basedirs = [TEMPLATES]
    # As nbgrader's generate_feedback sets it up: the feedback page inlines bootstrap's CSS.
    config.HTMLExporter.extra_template_paths = [os.path.join(FORMGRADER, "static", "node_modules", "bootstrap",
                                                             "dist", "css")]
    if template == "feedback":  # nbgrader's GetGrades gives every graded cell its score first.
        notebook = copy.deepcopy(notebook)
        for cell in notebook.cells:
            if cell.metadata.get("nbgrader", {}).get("grade"):
                cell.metadata.nbgrader["score"] = 0
    resources = {"base_url": "", "index": 0, "total": 1, "submission_id": "s", "notebook_id": "n",
                 "assignment_id": "a", "nbgrader": {"notebook": "n", "score": 0, "max_score": 1, "late_penalty": 0}}
    return HTMLExporter(config=config).from_notebook_node(notebook, resources=resources)[0]


@pytest.fixture(scope="module")
def payload_outputs():
    """The outputs that the payload code cells make when a kernel runs them, by cell source."""
    release = read(ROOT, "release", ASSIGNMENTS[0])
    hostile = hostile_submission(release, read(ROOT, "source", ASSIGNMENTS[0]))
    cells = [cell for cell in hostile.cells if cell.cell_type == "code" and "payload_out" in cell.source]
    kernel = {"kernelspec": {"name": "python3", "display_name": "Python 3"}}
    notebook = new_notebook(cells=copy.deepcopy(cells), metadata=kernel)
    nbclient.NotebookClient(notebook, allow_errors=True, timeout=60).execute()
    return {cell.source: cell.outputs for cell in notebook.cells}


def _with_outputs(notebook, outputs):
    for cell in notebook.cells:
        if cell.cell_type == "code" and cell.source in outputs:
            cell.outputs = copy.deepcopy(outputs[cell.source])
    return notebook


def _students_part(notebook, release):
    """The cells of ``notebook`` that are not the release's own (rendering the course's text takes seconds)."""
    given = {cell.source for cell in release.cells if not cell.metadata.get("nbgrader", {}).get("solution")}
    part = copy.deepcopy(notebook)
    part.cells = [cell for cell in part.cells if cell.source not in given]
    return part


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_sanitized_notebooks_render_nothing_active(payload_outputs, assignment):
    release = read(ROOT, "release", assignment)
    hostile = _with_outputs(hostile_submission(release, read(ROOT, "source", assignment)), payload_outputs)
    sanitized = sanitize_notebook(hostile, release)
    for template in ("formgrade", "feedback"):
        problems = active_content(render(_students_part(sanitized, release), template))
        assert not problems, (template, problems)
        unsanitized = " ".join(active_content(render(_students_part(hostile, release), template)))
        # The solution cell's display is not run here (only the payload cells are); the browser test runs it.
        missing = [name for name in LIVE if f"{MARKER}{name}" not in unsanitized and name != "solution_html"]
        assert not missing, f"the check finds no active content for {missing} in the unsanitized {template} page"
        assert "javascript:" in unsanitized
    # Every markdown cell of the sanitized notebook renders to exactly its clean HTML.
    for cell in sanitized.cells:
        if cell.cell_type == "markdown" and cell.source.startswith(f'<div class="{WRAPPER_CLASS}">'):
            assert render_markdown(cell.source).strip() == cell.source
    # The score-relevant parts are untouched: nbgrader's metadata and the test cells' outputs.
    assert [c.metadata.get("nbgrader") for c in sanitized.cells] == [c.metadata.get("nbgrader") for c in hostile.cells]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_course_own_notebooks_pass_through_unchanged(assignment):
    release = read(ROOT, "release", assignment)
    for folder in ("release", "solutions"):
        notebook = read(ROOT, folder, assignment)
        sanitized = sanitize_notebook(notebook, release)
        assert [c.source for c in sanitized.cells] == [c.source for c in notebook.cells], folder
        assert markdown_findings(notebook, release) == []


FRAGMENTS = ["<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "<svg onload=alert(1)>", "</div>",
             "<a href='javascript:alert(1)'>x</a>", "[x](javascript:alert(1))", "[x](JaVaScRiPt:alert(1))",
             "<iframe srcdoc='<script>alert(1)</script>'>", "<details open ontoggle=alert(1)>", "$x<y$", "$$a$$",
             "```\ncode <b>\n```", "# Heading", "- item", "**bold**", "<b>b</b>", "<!-- c -->", "&lt;", "<",
             "<img src='data:image/svg+xml;base64,PHN2Zz4='>", "<a href='data:text/html,x'>d</a>",
             "| a | b |\n|---|---|\n| 1 | 2 |", "<img src=/logout>",
             "<style>*{}</style>", "<math><mtext><img src=x onerror=alert(1)></mtext></math>", "text", "中文"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(FRAGMENTS), st.sampled_from(["", " ", "\n", "\n\n"])), max_size=8))
def test_sanitized_markdown_renders_to_its_clean_html_whatever_the_input(parts):
    source = "".join(fragment + separator for fragment, separator in parts)
    result = sanitized_markdown(source)
    rendered = render_markdown(result)
    assert rendered.strip() == result, "Markdown changed the sanitized HTML"
    assert not active_content(f'<div id="notebook-container">{rendered}</div>'), source


def test_metadata_that_templates_trust_is_reduced():
    cell = new_markdown_cell("x")
    cell.metadata = {"nbgrader": {"grade_id": 'a"><img src=x onerror=alert(1)>', "grade": True, "points": 1},
                     "tags": ['t" onmouseover="alert(1)', "ok-tag"], "jupyter": {"source_hidden": True}}
    good = new_code_cell("1", metadata={"nbgrader": {"grade_id": "test_task1_1_x", "grade": True, "points": 2,
                                                     "checksum": "abc\"", "solution": False}})
    good.outputs = [new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "p"},
                               metadata={"image/png": {"width": "1 onerror=alert(1)", "height": 40},
                                         "filenames": {"image/png": "javascript:x"}}),
                    new_output("display_data", data={"image/png": '" onerror="alert(1)'}),
                    new_output("display_data", data={"application/javascript": "alert(1)"})]
    notebook = new_notebook(cells=[cell, good], metadata={"title": "</title><script>", "widgets": {"x": 1},
                                                          "kernelspec": {"name": "python3", "display_name": "P"}})
    sanitized = sanitize_notebook(notebook)
    assert "nbgrader" not in sanitized.cells[0].metadata and sanitized.cells[0].metadata["tags"] == ["ok-tag"]
    assert sanitized.cells[1].metadata["nbgrader"] == {"grade_id": "test_task1_1_x", "grade": True, "points": 2,
                                                       "solution": False}
    first, second, third = sanitized.cells[1].outputs
    assert first.metadata == {"image/png": {"height": 40}} and first.data["image/png"] == "iVBORw0KGgo="
    assert "image/png" not in second.data and "removed" in second.data["text/plain"]
    assert third.data == {"text/plain": "[output removed before grading: application/javascript can run script]"}
    assert sanitized.metadata == {"kernelspec": {"name": "python3", "display_name": "P"}}


def test_student_markdown_with_html_is_flagged_and_the_course_own_is_not():
    release = new_notebook(cells=[new_markdown_cell("Intro<br>text"), new_markdown_cell("# Task")])
    submission = copy.deepcopy(release)
    submission.cells[0].source += " and mine<br>"  # Edited, but only with a tag the course uses.
    submission.cells += [new_markdown_cell('<img src=x onerror="alert(1)">'), new_markdown_cell("[a](javascript:b)"),
                         new_markdown_cell("plain **text** and [a link](https://example.org)")]
    assert markdown_findings(submission, release) == ["<img> (cell 3)", "a javascript: link (cell 4)"]
    assert markdown_findings(release, release) == []


@pytest.mark.parametrize("code, expected", [
    ("from IPython.display import HTML, display\ndisplay(HTML('<b>x</b>'))", "HTML from IPython.display"),
    ("import IPython.display as d\nd.display(d.Javascript('1'))", ".Javascript"),
    ("from IPython.display import Markdown", "Markdown from IPython.display"),
    ("class A:\n    def _repr_html_(self):\n        return '<b>'", "defines _repr_html_"),
    ("display({'text/html': '<b>'}, raw=True)", "raw=..."),
    ("import linecache", "imports linecache"),
    ("import traceback\ntraceback.extract_stack()", "imports traceback"),
    ("import inspect", "imports inspect"),
])
def test_scan_flags_active_display_and_source_reads(code, expected):
    assert any(expected in what for _, what in findings(code, set())), findings(code, set())


def test_policy_allows_formgrader_own_scripts_only():
    page = ("<html><head><script src='/formgrader/static/a.js'></script>"
            "<script src='https://cdn.example.org/lib/x/1.0/lib.js'></script>"
            "<script>var submission_id = 'x';</script><script type='text/x-mathjax-config'>cfg()</script></head>"
            "<body><span onclick=\"toggle(true);\"></span><div class='container' id='notebook-container'>"
            "<script>alert(1)</script><img onerror='alert(2)'></div></body></html>")
    policy = submission_page_policy(page, "http://127.0.0.1:8888/formgrader/submissions/s/")
    script_src = policy.split(";")[0]
    assert "'self'" in script_src and "https://cdn.example.org/lib/x/1.0/" in script_src
    assert "'unsafe-inline'" not in policy and "'unsafe-eval'" not in policy and "object-src 'none'" in policy
    assert script_src.count("'sha256-") == 2, script_src  # The inline script and the onclick handler.
    assert "'unsafe-hashes'" in script_src
    assert submission_page_policy(page.replace("notebook-container", "elsewhere")).count("'sha256-") == 0


def _feedback_notebook(test_outputs, later_outputs=()):
    hidden = "### BEGIN HIDDEN TESTS\n_secret_oracle_value = compute_the_oracle(1101)\n### END HIDDEN TESTS"
    test = new_code_cell(f"assert_plain_equal(f(1), 2, 'f(1)')\n{hidden}",
                         metadata={"nbgrader": {"grade": True, "grade_id": "test_task1_1_f", "points": 1}})
    test.outputs = list(test_outputs)
    later = new_code_cell("print(stash)")
    later.outputs = list(later_outputs)
    return new_notebook(cells=[test, later])


def test_feedback_keeps_only_the_checks_message_and_withholds_quotes_of_hidden_tests():
    leak = "_secret_oracle_value = compute_the_oracle(1101)"
    notebook = _feedback_notebook(
        [new_output("stream", name="stdout", text=f"LEAK {leak}\n"),
         new_output("display_data", data={"text/html": f"<pre>{leak}</pre>", "text/plain": "x"}),
         new_output("error", ename="AssertionError", evalue="f(1) returned 3; expected 2",
                    traceback=["\x1b[31mTraceback...", "long frames", "AssertionError: f(1) returned 3; expected 2"])],
        [new_output("stream", name="stdout", text=repr(f"x\n    {leak}\n"))])
    result, _ = HideHiddenTests().preprocess(notebook, {})
    test, later = result.cells
    assert PLACEHOLDER in test.source and "compute_the_oracle" not in test.source
    assert [o.output_type for o in test.outputs] == ["error"]
    assert test.outputs[0].traceback == ["AssertionError: f(1) returned 3; expected 2"]
    assert later.outputs[0].text == WITHHELD
    # A failing check whose message quotes hidden code (a student's value can be anything) is withheld too.
    quoted = _feedback_notebook([new_output("error", ename="AssertionError", evalue=f"f returned {leak!r}",
                                            traceback=[])])
    assert HideHiddenTests().preprocess(quoted, {})[0].cells[0].outputs[0].text == WITHHELD
    long = _feedback_notebook([new_output("error", ename="ValueError", evalue="v" * 5000, traceback=[])])
    message = HideHiddenTests().preprocess(long, {})[0].cells[0].outputs[0].traceback[0]
    assert len(message) < 600 and message.endswith("(shortened)")
    passed = _feedback_notebook([new_output("stream", name="stdout", text="anything at all\n")])
    assert HideHiddenTests().preprocess(passed, {})[0].cells[0].outputs == []


def test_mark_has_no_quotes():
    assert "'" not in mark("x") and '"' not in mark("x")
