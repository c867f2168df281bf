"""Every notebook runs headless, top to bottom, with its solutions in place, where students run it.

Each notebook executes once per test run, and that one run is checked for everything:

- where: a fresh environment with only what Colab preinstalls that the course relies on (torch, numpy,
  matplotlib, ipywidgets, tqdm, a kernel), no nbgrader. The setup cell installs the helper package from
  the local checkout, as it installs it from GitHub in Colab, without replacing the preinstalled torch;
- the source notebook (reference solutions and hidden tests in place) raises no error, within
  NOTEBOOK_BUDGET_S seconds of CPU time (its kernel's and what the kernel ran; the README states it);
- matplotlib's inline backend, as in a notebook without a browser: every ``check:`` line
  (``course.plots.claim``: a claim of the prose under an experiment, with whether this run's numbers bear it
  out) ends in ``True``, and notebooks 07, 08 and 09 print at least the claims their prose makes;
- in notebooks 07 and 08 the cell of an interactive experiment draws its picture without a widget (the
  headless run sets ``COURSE_AUTOGRADE=1``, like grading).

tests/layers.py keeps these tests on one pytest-xdist worker: the first setup cell installs the helper
package into the shared environment, the others find it there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from course.plots import CLAIM_PREFIX
from grading.config import ASSIGNMENTS, ROOT

NOTEBOOK_BUDGET_S = 120
# The claims of the experiments' prose that the notebook checks on its own numbers (at least this many lines).
CLAIMS = {"07_token_eviction": 14, "08_tiered_cache": 16, "09_triton_kernels": 7}
# Claims that a notebook checks only where an optional package is installed (Colab does not preinstall it):
# 08 compares the student's ARCTier with libCacheSim's ARC (tests/test_tiers.py checks it without the notebook).
OPTIONAL_CLAIMS = {"08_tiered_cache": {"libcachesim": 1}}
PICTURE_WITHOUT_WIDGET = ("07_token_eviction", "08_tiered_cache")
# Colab's torch (a CUDA build) brings triton along, on its CPU runtimes too.
PREINSTALLED = ["torch", "numpy", "matplotlib", "ipywidgets", "tqdm", "ipykernel", "nbclient", "nbformat", "triton"]

RUNNER = textwrap.dedent('''
    import resource, sys, time
    from pathlib import Path
    import nbformat
    from nbclient import NotebookClient
    source, executed, budget = sys.argv[1], sys.argv[2], float(sys.argv[3])
    notebook = nbformat.read(source, as_version=4)
    started = time.perf_counter()
    NotebookClient(notebook, timeout=budget, kernel_name="python3",
                   resources={"metadata": {"path": str(Path(source).parent)}}).execute()
    # The kernel has ended and been waited for: its CPU time, and that of what it ran (the setup cell's pip), is
    # this process's children's.
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"SECONDS {time.perf_counter() - started:.1f} CPU {children.ru_utime + children.ru_stime:.1f}")
    nbformat.write(notebook, executed)
''')


def _run(python: Path, *args: str) -> subprocess.CompletedProcess:
    # Run outside the checkout, where `import course` could find the source folder itself.
    return subprocess.run([str(python), *args], capture_output=True, text=True, cwd=python.parent)


def _torch_version(python: Path) -> str:
    return _run(python, "-c", "import importlib.metadata as m; print(m.version('torch'))").stdout.strip()


@pytest.fixture(scope="session")
def colab_python(tmp_path_factory) -> Path:
    """A Colab-like environment: its Python, after checking that it lacks the helper package and nbgrader."""
    venv = tmp_path_factory.mktemp("colab") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "-c", str(ROOT / "requirements" / "lock.txt"),
                    *PREINSTALLED], check=True, capture_output=True)
    assert _run(python, "-c", "import course").returncode != 0, "the helper package must not be preinstalled"
    assert _run(python, "-c", "import nbgrader").returncode != 0, "nbgrader must not be needed"
    return python


def _texts(cell) -> str:
    return "".join(output.get("text", "") for output in cell.get("outputs", []) if output.output_type == "stream")


def _execute(python: Path, assignment: str, folder: Path) -> tuple[nbformat.NotebookNode, float, float]:
    """Run the source notebook in the Colab-like environment; return it with its outputs, its wall seconds and
    the CPU seconds of its kernel and of what the kernel ran."""
    runner, executed = folder / "runner.py", folder / f"{assignment}.ipynb"
    runner.write_text(RUNNER)
    env = dict(os.environ, COURSE_INSTALL_SPEC=str(ROOT), COURSE_AUTOGRADE="1",
               MPLBACKEND="module://matplotlib_inline.backend_inline", PATH=f"{python.parent}:{os.environ['PATH']}")
    source = ROOT / "source" / assignment / f"{assignment}.ipynb"
    run = subprocess.run([str(python), str(runner), str(source), str(executed), str(NOTEBOOK_BUDGET_S)],
                         capture_output=True, text=True, env=env, cwd=folder)
    assert run.returncode == 0, f"{assignment}: {run.stderr[-3000:]}"
    wall, _, cpu = run.stdout.split("SECONDS ", 1)[1].split()[:3]
    return nbformat.read(executed, as_version=4), float(wall), float(cpu)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_notebook_runs_where_students_run_it(assignment, colab_python, tmp_path):
    torch_before = _torch_version(colab_python)
    notebook, elapsed, cpu = _execute(colab_python, assignment, tmp_path)
    errors = [(index, output.get("ename"), output.get("evalue"))
              for index, cell in enumerate(notebook.cells) for output in cell.get("outputs", [])
              if output.output_type == "error"]
    assert not errors, f"{assignment}: cells raised {errors}"
    # The budget is of CPU time, which other jobs on the machine do not stretch as they stretch wall time (the CI
    # runs the other layers beside this one on its 2 cores).
    assert cpu < NOTEBOOK_BUDGET_S, f"{assignment} used {cpu:.0f} s of CPU (budget {NOTEBOOK_BUDGET_S} s)"
    print(f"{assignment}: {elapsed:.1f} s wall, {cpu:.1f} s CPU on {os.cpu_count()} cores")
    assert _run(colab_python, "-c", "import course").returncode == 0, "the setup cell installed the helper package"
    assert _torch_version(colab_python) == torch_before, "installing the helper package replaced the preinstalled torch"
    claims = [line for cell in notebook.cells for line in _texts(cell).splitlines() if line.startswith(CLAIM_PREFIX)]
    wrong = [line for line in claims if not line.endswith(": True")]
    assert not wrong, f"{assignment}: the prose claims what this run's numbers do not show: {wrong}"
    expected = CLAIMS.get(assignment, 0) - sum(
        count for package, count in OPTIONAL_CLAIMS.get(assignment, {}).items()
        if _run(colab_python, "-c", f"import {package}").returncode != 0)
    assert len(claims) >= expected, (
        f"{assignment}: {len(claims)} checked claims, fewer than the {expected} its prose makes here")
    if assignment in PICTURE_WITHOUT_WIDGET:
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type == "code" and "ipywidgets" in cell.source:
                kinds = {kind for output in cell.get("outputs", []) for kind in output.get("data", {})}
                assert "image/png" in kinds and "application/vnd.jupyter.widget-view+json" not in kinds, (
                    f"{assignment}: cell {index} shows a widget or no picture in a headless run: {sorted(kinds)}")
