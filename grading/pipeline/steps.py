"""nbgrader's own autograding steps, made cheaper where their result cannot change.

`CheckCellMetadata` validates the nbgrader metadata of every cell against nbgrader's JSON schema,
and jsonschema checks the schema itself again for every cell: a fifth of what autograding a
notebook costs in the grading process. Grading puts the release's metadata back on every
submission (grading/pipeline/repair.py), so nearly every student's notebook carries the same metadata; this
subclass validates each distinct set once per process and remembers that it passed.
"""

from __future__ import annotations

import json

from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import CheckCellMetadata as NbgraderCheckCellMetadata


class CheckCellMetadata(NbgraderCheckCellMetadata):
    """nbgrader's CheckCellMetadata, run once per distinct set of cell types and nbgrader metadata."""

    _valid: set[str] = set()

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        # Validation reads only the cells that have nbgrader metadata: their type and that metadata.
        key = json.dumps([[cell.cell_type, cell.metadata["nbgrader"]] for cell in nb.cells
                          if "nbgrader" in cell.metadata], sort_keys=True, default=repr)
        if key in self._valid:
            return nb, resources
        nb, resources = super().preprocess(nb, resources)  # Raises when the metadata is invalid.
        self._valid.add(key)
        return nb, resources
