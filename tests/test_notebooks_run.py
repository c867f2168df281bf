"""Every notebook runs top to bottom once per test run, where students run it: JupyterLab in Chromium, its kernel in
a Colab-like environment.

That one run is checked for everything:

- where: a fresh environment with only what Colab preinstalls that the course relies on (torch, numpy, matplotlib,
  ipywidgets, tqdm, a kernel), no nbgrader, as JupyterLab's Python kernel. The setup cell installs the helper package
  from the local checkout, as it installs it from GitHub in Colab, without replacing the preinstalled torch;
- the solution notebook (reference solutions and hidden tests in place) runs with "Run All Cells" and raises no
  error, within NOTEBOOK_BUDGET_S seconds of CPU time (its kernel's and what the kernel ran; the README states it);
- in the page: every plot renders as an image, every ipywidgets control renders, and changing the first control (the
  first dropdown, or else the first slider) changes what the notebook shows; a screenshot per notebook goes to
  build/screenshots/ for review;
- every ``check:`` line (``course.plots.claim``: a claim of the prose under an experiment, with whether this run's
  numbers bear it out) ends in ``True``, and notebooks 07, 08 and 09 print at least the claims their prose makes;
- in notebooks 07 and 08 the cell of an interactive experiment, run once more in the same kernel with
  ``COURSE_AUTOGRADE=1`` (as grading and headless runs set it), draws its picture without a widget.

tests/layers.py keeps these tests on one pytest-xdist worker: the first setup cell installs the helper package into
the Colab-like environment, the others find it there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from jupyter_client import BlockingKernelClient
from test_browser import SCREENSHOTS, browser, lab_server, open_menu_item, server_log_tail, start_kernel  # noqa: F401 - browser: the module's Chromium fixture.

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
RUN_LIMIT_S = 240  # Wall seconds for "Run All Cells" (CPU time is what the budget counts).


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
    # uv, as `make venv` installs (seconds where pip takes a minute), pip's find-links passed on as the Makefile does.
    links = os.environ.get("UV_FIND_LINKS") or ",".join(os.environ.get("PIP_FIND_LINKS", "").split())
    subprocess.run([sys.executable, "-m", "uv", "pip", "install", "--quiet", "--compile-bytecode", "--python",
                    str(python), "-c", str(ROOT / "requirements" / "lock.txt"), *PREINSTALLED], check=True,
                   capture_output=True,
                   env={**os.environ, **({"UV_FIND_LINKS": links} if links else {})})
    assert _run(python, "-c", "import course").returncode != 0, "the helper package must not be preinstalled"
    assert _run(python, "-c", "import nbgrader").returncode != 0, "nbgrader must not be needed"
    return python


@pytest.fixture(scope="module")
def lab(tmp_path_factory, colab_python):
    """A JupyterLab server on a scratch copy of solutions/, whose Python kernel is the Colab-like environment's;
    yields (base_url, token, root). Kernels' connection files are in root/.runtime."""
    root = tmp_path_factory.mktemp("lab")
    for assignment in ASSIGNMENTS:
        if (ROOT / "solutions" / assignment).exists():  # A missing one fails test_pipeline.
            shutil.copytree(ROOT / "solutions" / assignment, root / assignment)
    spec = root / ".jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(colab_python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (Colab-like)", "language": "python",
        "env": {"PATH": f"{colab_python.parent}:{os.environ['PATH']}", "COURSE_INSTALL_SPEC": str(ROOT)}}))
    environment = {"JUPYTER_PATH": str(root / ".jupyter")}
    with lab_server(root, environment) as (base, token):
        yield base, token, root


def _widget_state(page) -> str:
    """Everything a widget change can alter: HTML widgets' text, output areas' text, image sources."""
    return page.evaluate("""() => {
        const texts = [...document.querySelectorAll('.widget-html, .widget-label, .widget-output')]
            .map(e => e.innerText);
        const images = [...document.querySelectorAll('.widget-output img')]
            .map(i => i.src.length + ':' + i.src.slice(-64));
        return JSON.stringify([texts, images]);
    }""")


def _run_all(page, expected: int, assignment: str, root: Path) -> None:
    """Run All Cells, and wait until every code cell shows its execution number."""

    def prompts():
        return page.evaluate("""() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]
            .map(p => p.innerText)""")

    open_menu_item(page, "Run", "Run All Cells", assignment)
    started = time.time()
    while sum(bool(re.search(r"\[\d+\]", p)) for p in prompts()) < expected or any("*" in p for p in prompts()):
        if time.time() - started > 20 and not any(re.search(r"\[(\d+|\*)\]", p) for p in prompts()):
            # The menu click did not reach the notebook (it was still loading); once more.
            open_menu_item(page, "Run", "Run All Cells", assignment)
            started = time.time()
        assert time.time() - started < RUN_LIMIT_S, (
            f"{assignment}: the notebook did not finish in {RUN_LIMIT_S} s; the server printed:\n"
            f"{server_log_tail(root)}")
        page.wait_for_timeout(500)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")


def _change_a_control(page, assignment: str) -> int:
    """Set the first dropdown to another option, or else move the first slider; check that the page changed.
    Returns how many controls the page has."""
    before = _widget_state(page)
    sliders = page.locator(".widget-slider .noUi-handle, .widget-hslider .noUi-handle")
    dropdowns = page.locator(".widget-dropdown select")
    controls = sliders.count() + dropdowns.count()
    if dropdowns.count():
        select = dropdowns.first
        select.scroll_into_view_if_needed()
        current = select.input_value()
        values = select.locator("option").evaluate_all("options => options.map(o => o.value)")
        select.select_option(value=next(v for v in values if v != current) if len(values) > 1 else current)
    elif sliders.count():
        handle = sliders.first
        handle.scroll_into_view_if_needed()
        handle.focus()
        for _ in range(5):
            page.keyboard.press("ArrowRight")
        page.keyboard.press("Tab")  # Sliders that update only on release commit their value here.
    if controls:
        deadline = time.time() + 60
        while _widget_state(page) == before:
            assert time.time() < deadline, f"{assignment}: changing a widget control changed nothing on the page"
            page.wait_for_timeout(500)
    return controls


def _kernel_of(base: str, token: str, notebook: str) -> str:
    """The id of the kernel of the notebook at ``notebook`` (a path under the server's root)."""
    with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=30) as response:
        sessions = json.load(response)
    return next(session["kernel"]["id"] for session in sessions if session["path"] == notebook)


def _cpu_seconds(kernel_id: str) -> float:
    """CPU seconds of the kernel's process and of the children it waited for (the setup cell's pip), from /proc."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if f"kernel-{kernel_id}.json".encode() in cmdline.read_bytes():
                fields = (cmdline.parent / "stat").read_text().rsplit(")", 1)[1].split()
                return sum(int(field) for field in fields[11:15]) / os.sysconf("SC_CLK_TCK")
        except OSError:
            continue
    raise AssertionError(f"no process of kernel {kernel_id}")


def _graded_kinds(connection_file: Path, source: str) -> set[str]:
    """What a cell shows when it runs again in the live kernel with COURSE_AUTOGRADE=1: its outputs' data kinds."""
    client = BlockingKernelClient(connection_file=str(connection_file))
    client.load_connection_file()
    client.start_channels()
    kinds: set[str] = set()

    def collect(message):
        kinds.update(message["content"].get("data", {}))

    try:
        client.execute_interactive("import os\nos.environ['COURSE_AUTOGRADE'] = '1'", timeout=60)
        reply = client.execute_interactive(source, timeout=120, output_hook=collect)
        client.execute_interactive("del os.environ['COURSE_AUTOGRADE']", timeout=60)
    finally:
        client.stop_channels()
    assert reply["content"]["status"] == "ok", reply["content"]
    return kinds


def _texts(cell) -> str:
    return "".join(output.get("text", "") for output in cell.get("outputs", []) if output.output_type == "stream")


def _check_claims(colab_python: Path, assignment: str, saved) -> None:
    claims = [line for cell in saved.cells for line in _texts(cell).splitlines() if line.startswith(CLAIM_PREFIX)]
    wrong = [line for line in claims if not line.endswith(": True")]
    assert not wrong, f"{assignment}: the prose claims what this run's numbers do not show: {wrong}"
    expected = CLAIMS.get(assignment, 0) - sum(
        count for package, count in OPTIONAL_CLAIMS.get(assignment, {}).items()
        if _run(colab_python, "-c", f"import {package}").returncode != 0)
    assert len(claims) >= expected, (
        f"{assignment}: {len(claims)} checked claims, fewer than the {expected} its prose makes here")


def _check_outputs(assignment: str, saved, rendered_images: int, controls: int) -> None:
    not_run = [i for i, c in enumerate(saved.cells)
               if c.cell_type == "code" and c.source.strip() and not c.execution_count]
    assert not not_run, f"{assignment}: cells {not_run} did not run"
    errors = [f"cell {i}: {o.get('ename')}: {o.get('evalue')}" for i, c in enumerate(saved.cells)
              for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, f"{assignment}: {errors}"
    plots = sum("image/png" in o.get("data", {}) for c in saved.cells for o in c.get("outputs", []))
    widgets = sum("application/vnd.jupyter.widget-view+json" in o.get("data", {})
                  for c in saved.cells for o in c.get("outputs", []))
    assert plots + widgets > 0, f"{assignment}: no plot and no widget was displayed"
    assert rendered_images >= plots, f"{assignment}: {plots} plots in the outputs but {rendered_images} rendered"
    assert controls > 0 or widgets == 0, f"{assignment}: widgets displayed but no control found"
    print(json.dumps({"assignment": assignment, "plots": plots, "widget_views": widgets, "controls": controls}))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_notebook_runs_where_students_run_it(lab, browser, colab_python, assignment):  # noqa: F811 - the fixture.
    base, token, root = lab
    path = root / assignment / f"{assignment}.ipynb"
    torch_before = _torch_version(colab_python)
    start_kernel(base, token, root, f"{assignment}/{assignment}.ipynb")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)
    # A workspace of its own, reset, so that only this notebook is open in the page.
    page.goto(f"{base}/lab/workspaces/test-{assignment}/tree/{assignment}/{assignment}.ipynb?reset&token={token}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", state="attached", timeout=90_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000)
    source = nbformat.read(path, as_version=4)
    started = time.perf_counter()
    _run_all(page, sum(1 for c in source.cells if c.cell_type == "code" and c.source.strip()), assignment, root)
    elapsed = time.perf_counter() - started
    kernel = _kernel_of(base, token, f"{assignment}/{assignment}.ipynb")
    # The budget is of CPU time, which other jobs on the machine do not stretch as they stretch wall time (the CI
    # runs the other layers beside this one on its 2 cores).
    cpu = _cpu_seconds(kernel)
    assert cpu < NOTEBOOK_BUDGET_S, f"{assignment} used {cpu:.0f} s of CPU (budget {NOTEBOOK_BUDGET_S} s)"
    print(f"{assignment}: {elapsed:.1f} s wall, {cpu:.1f} s CPU on {os.cpu_count()} cores")

    # Plots render as images, and every widget view renders (no "Error displaying widget").
    page.wait_for_timeout(1500)
    assert "Error displaying widget" not in page.inner_text(".jp-Notebook")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{assignment}-after-run.png"), full_page=False)
    controls = _change_a_control(page, assignment)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")
    rendered_images = page.locator(".jp-Notebook .jp-RenderedImage img").count()
    page.screenshot(path=str(SCREENSHOTS / f"{assignment}.png"), full_page=False)
    page.keyboard.press("Control+s")
    page.wait_for_timeout(1500)
    page.close()

    saved = nbformat.read(path, as_version=4)
    _check_outputs(assignment, saved, rendered_images, controls)
    _check_claims(colab_python, assignment, saved)
    assert _run(colab_python, "-c", "import course").returncode == 0, "the setup cell installed the helper package"
    assert _torch_version(colab_python) == torch_before, "installing the helper package replaced the preinstalled torch"
    if assignment in PICTURE_WITHOUT_WIDGET:
        for index, cell in enumerate(saved.cells):
            if cell.cell_type == "code" and "ipywidgets" in cell.source:
                kinds = _graded_kinds(root / ".runtime" / f"kernel-{kernel}.json", cell.source)
                assert "image/png" in kinds and "application/vnd.jupyter.widget-view+json" not in kinds, (
                    f"{assignment}: cell {index} shows a widget or no picture with COURSE_AUTOGRADE=1: {sorted(kinds)}")
