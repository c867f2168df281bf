"""Student feedback that shows scores and visible tests but never the hidden tests.

nbgrader's feedback is the autograded notebook as HTML, hidden tests and their tracebacks
included. `HideHiddenTests` runs before the HTML is written (nbgrader_config.py puts it in
GenerateFeedback's preprocessors): it cuts every hidden-test block out of the test cells and
reduces a test cell's error to its last line, the message that says what was called and what was
wrong, so that no line of hidden test code reaches the student.
"""

from __future__ import annotations

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
