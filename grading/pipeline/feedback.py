"""Student feedback that shows scores and visible tests but never the hidden tests.

nbgrader's feedback is the autograded notebook as HTML, hidden tests and their tracebacks
included. `HideHiddenTests` runs before the HTML is written (nbgrader_config.py puts it in
GenerateFeedback's preprocessors, before grading.isolation.sanitize):

- it cuts every hidden-test block out of the test cells' source;
- a test cell's outputs are limited to the pass/fail message the course's checks produce: a cell
  that passed shows nothing, a cell that failed shows one line, the error's type and message
  (what was called and what was wrong), shortened to `MESSAGE_LIMIT` characters; whatever else
  the cell printed or displayed (a student's function runs inside it) is dropped;
- any output of any cell that quotes a line of hidden test code (code that reads the calling
  cell's source through linecache, traceback or inspect can print it anywhere, or update an
  earlier cell's display) is replaced by a note.

So no line of hidden test code reaches the student, whatever a cell prints.

`FeedbackExporter` writes the HTML (nbgrader_config.py makes GenerateFeedback use it): nbconvert's
HTMLExporter, with one template environment per grading process (its templates compile once, not
once per notebook) and without HTMLExporter's second pass, which parses the whole page again with
BeautifulSoup to add attributes that this page's (classic) template does not need. That pass was
half of what writing feedback cost. The alternative text it added to images without one comes
from the template instead (`image_alt`).
"""

from __future__ import annotations

import functools
import html
import json
import re

from jinja2 import pass_context
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.exporters.exporter import ResourcesDict
from nbconvert.filters import Highlight2HTML, get_metadata
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbformat.notebooknode import NotebookNode
from nbformat.v4 import new_output
from nbgrader.preprocessors import NbGraderPreprocessor

BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
PLACEHOLDER = "# (hidden tests ran here; their code is not shown)"
MESSAGE_LIMIT = 500
WITHHELD = "[this output quoted hidden test code, so it is not shown in feedback]"
# Hidden lines shorter than this (``else:``, ``return best``) are too common to mean a quote.
_QUOTE_LENGTH = 12


def without_hidden_tests(source: str) -> str:
    """Return ``source`` with every hidden-test block replaced by one placeholder line."""
    kept, hidden = [], False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped.startswith(BEGIN):
            hidden = True
            kept.append(PLACEHOLDER)
        elif stripped.startswith(END):
            hidden = False
        elif not hidden:
            kept.append(line)
    return "\n".join(kept)


# The mutation suite's mark of a hidden-test block that ran (grading/authoring/harness.py).
HIDDEN_MARK = "__course_hidden_tests_ran__"


def marking_hidden_tests(source: str) -> str | None:
    """``source`` with each hidden-test block's BEGIN line replaced by a call of `HIDDEN_MARK` (on the same line, at
    the indentation of the block's first statement), so that a failure before any such call is known to be one that
    the visible tests alone give the same way (the statements that ran are the same); None where the marked source
    does not compile (a block that starts inside a bracket or with ``else:``)."""
    lines = source.splitlines()
    for number, line in enumerate(lines):
        if not line.strip().startswith(BEGIN):
            continue
        for later in lines[number + 1:]:
            stripped = later.strip()
            if stripped.startswith(END):
                break
            if stripped and not stripped.startswith("#"):
                lines[number] = f"{later[:len(later) - len(later.lstrip())]}{HIDDEN_MARK}()  {line.strip()}"
                break
    marked = "\n".join(lines)
    try:
        compile(marked, "<marked test cell>", "exec")
    except SyntaxError:
        return None
    return marked


def hidden_lines(source: str) -> set[str]:
    """The lines of ``source``'s hidden-test blocks (stripped) that are long enough to recognize."""
    lines, hidden = set(), False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped.startswith(BEGIN):
            hidden = True
        elif stripped.startswith(END):
            hidden = False
        elif hidden and len(stripped) >= _QUOTE_LENGTH:
            lines.add(stripped)
    return lines


def _output_text(output: NotebookNode) -> str:
    """Everything an output shows, with the escapes of repr, JSON and HTML undone."""
    parts = [output.get("text", ""), output.get("ename", ""), output.get("evalue", ""), *output.get("traceback", [])]
    for value in (output.get("data") or {}).values():
        parts.append(value if isinstance(value, str) else "".join(value) if isinstance(value, list)
                     else json.dumps(value))
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", html.unescape("\n".join(str(part) for part in parts)))
    return text.replace("\\n", "\n").replace("\\'", "'").replace('\\"', '"')


def quotes_hidden_code(output: NotebookNode, lines: set[str]) -> bool:
    """True when ``output`` shows one of the hidden test ``lines``."""
    text = _output_text(output)
    return any(line in text for line in lines)


def _is_test_cell(cell: NotebookNode) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


def _check_message(outputs: list) -> list:
    """A test cell's outputs reduced to the failing check's one-line message (none when it passed)."""
    for output in outputs:
        if output.get("output_type") == "error":
            message = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
            if len(message) > MESSAGE_LIMIT:
                message = message[:MESSAGE_LIMIT] + " … (shortened)"
            return [new_output("error", ename=output.get("ename", "Error"), evalue=output.get("evalue", ""),
                               traceback=[message])]
    return []


class HideHiddenTests(NbGraderPreprocessor):
    """Keep hidden tests and what quotes them out of feedback (see the module's docstring)."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        visible = {line.strip() for cell in nb.cells if _is_test_cell(cell)
                   for line in without_hidden_tests(cell.source).splitlines()}
        lines = {line for cell in nb.cells if _is_test_cell(cell) for line in hidden_lines(cell.source)} - visible
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            if _is_test_cell(cell) or cell.metadata.get("nbgrader", {}).get("grade"):
                cell.source = without_hidden_tests(cell.source)
                if _is_test_cell(cell):
                    cell.outputs = _check_message(cell.get("outputs", []))
            cell.outputs = [new_output("stream", name="stdout", text=WITHHELD) if quotes_hidden_code(output, lines)
                            else output for output in cell.get("outputs", [])]
        return nb, resources


@functools.lru_cache(maxsize=16384)
def _highlighted(source: str, language: str | None, magics_language: str | None) -> str:
    from nbconvert.filters.highlight import Highlight2HTML

    return Highlight2HTML()(source, language, {"magics_language": magics_language} if magics_language else None)


def highlight_code(source: str, language: str | None = None, metadata: dict | None = None) -> str:
    """nbconvert's syntax highlighting of a cell, remembered for the grading process's lifetime.

    Most cells of a feedback file (the given cells and the tests) are the same for every student,
    and highlighting is much of what writing feedback costs; nbgrader_config.py makes feedback use it.
    """
    return _highlighted(source, language, (metadata or {}).get("magics_language"))


# What nbconvert's HTMLExporter writes for an image that has no alternative text.
MISSING_ALT = "No description has been provided for this image"


def image_alt(output: NotebookNode, key: str, mimetype: str | None = None):
    """nbconvert's ``get_metadata`` filter, with a default alternative text for images.

    The classic template asks for an image output's ``alt`` first, then for its cell's (without a
    MIME type); when neither has one, the image gets `MISSING_ALT`.
    """
    value = get_metadata(output, key, mimetype)
    if key == "alt" and mimetype is None and value is None:
        return MISSING_ALT
    return value


class FeedbackExporter(HTMLExporter):
    """The feedback page's exporter (see the module's docstring): one template environment per process."""

    _environments: dict = {}
    # A markdown cell's HTML, by its source and the options it depends on, for the grading process's lifetime: the
    # course's markdown cells are the same for every student, and rendering them was a third of writing feedback.
    _markdown: dict[tuple, str] = {}
    MARKDOWN_CELLS = 4096

    @pass_context
    def markdown2html(self, context, source: str) -> str:
        """HTMLExporter's markdown filter, remembered for a cell without attachments (images are then links)."""
        if context.get("cell", {}).get("attachments") or self.embed_images or self.lexer_options:
            return super().markdown2html(context, source)
        key = (source, self.anchor_link_text, self.exclude_anchor_links)
        found = self._markdown.get(key)
        if found is None:
            if len(self._markdown) >= self.MARKDOWN_CELLS:
                self._markdown.clear()
            found = self._markdown[key] = super().markdown2html(context, source)
        return found

    def default_filters(self):
        yield from super().default_filters()
        yield ("get_metadata", image_alt)

    def _create_environment(self):
        key = (tuple(self.template_paths), self.template_file, self.raw_template,
               tuple(sorted((name, repr(value)) for name, value in self.filters.items())))
        if key not in self._environments:
            self._environments[key] = super()._create_environment()
        return self._environments[key]

    def from_notebook_node(self, nb: NotebookNode, resources: dict | None = None, **kw) -> tuple[str, dict]:
        # HTMLExporter's filters for this notebook; then the template alone, without the second pass.
        language = nb.metadata.get("language_info", {})
        self.register_filter("highlight_code", self.filters.get("highlight_code") or Highlight2HTML(
            pygments_lexer=language.get("pygments_lexer", language.get("name")), parent=self))
        resources = self._init_resources(resources)
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(
            notebook_metadata=self._nb_metadata, parent=self, resources=resources))
        return TemplateExporter.from_notebook_node(self, nb, resources, **kw)
