"""Every source notebook runs headless, top to bottom, with its solutions in place.

Budget: each notebook within NOTEBOOK_BUDGET_S seconds on 2 CPU cores (the README states it).
"""

from __future__ import annotations

import os
import time

import nbformat
import pytest
from nbclient import NotebookClient

from grading.config import ASSIGNMENTS, ROOT

NOTEBOOK_BUDGET_S = 120


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_source_notebook_runs_without_errors(assignment, monkeypatch):
    monkeypatch.setenv("COURSE_AUTOGRADE", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    folder = ROOT / "source" / assignment
    notebook = nbformat.read(folder / f"{assignment}.ipynb", as_version=4)
    started = time.perf_counter()
    NotebookClient(notebook, timeout=NOTEBOOK_BUDGET_S, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()
    elapsed = time.perf_counter() - started
    errors = [(index, output.get("ename"), output.get("evalue"))
              for index, cell in enumerate(notebook.cells) for output in cell.get("outputs", [])
              if output.output_type == "error"]
    assert not errors, f"{assignment}: cells raised {errors}"
    assert elapsed < NOTEBOOK_BUDGET_S, f"{assignment} took {elapsed:.0f} s (budget {NOTEBOOK_BUDGET_S} s)"
    print(f"{assignment}: {elapsed:.1f} s on {os.cpu_count()} cores")
