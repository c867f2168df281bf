"""Student feedback that shows scores and visible tests but never the hidden tests.

nbgrader's feedback is the autograded notebook as HTML, hidden tests and their tracebacks
included. `HideHiddenTests` runs before the HTML is written (nbgrader_config.py puts it in
GenerateFeedback's preprocessors): it cuts every hidden-test block out of the test cells and
reduces a test cell's error to its last line, the message that says what was called and what was
wrong, so that no line of hidden test code reaches the student.
"""

from __future__ import annotations

import functools

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
PLACEHOLDER = "# (hidden tests ran here; their code is not shown)"


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


class HideHiddenTests(NbGraderPreprocessor):
    """Cut hidden tests and their tracebacks out of test cells (see the module's docstring)."""

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int
                        ) -> tuple[NotebookNode, ResourcesDict]:
        if not cell.metadata.get("nbgrader", {}).get("grade") or cell.cell_type != "code":
            return cell, resources
        cell.source = without_hidden_tests(cell.source)
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources


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
