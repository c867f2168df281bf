"""Each source notebook is exactly what its builder in authoring/ writes (cells, sources, metadata)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from grading.build import digest
from grading.config import ASSIGNMENTS, ROOT


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_source_notebook_matches_its_builder(assignment, tmp_path):
    builder = ROOT / "authoring" / f"{assignment}.py"
    assert builder.exists(), f"authoring/{assignment}.py is missing"
    run = subprocess.run([sys.executable, str(builder)], env=dict(os.environ, AUTHORING_OUTPUT=str(tmp_path)),
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    name = f"{assignment}/{assignment}.ipynb"
    assert digest(tmp_path / name) == digest(ROOT / "source" / name), (
        f"source/{name} differs from what authoring/{assignment}.py writes: edit the builder, then run it")
