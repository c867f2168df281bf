"""The notebooks work where students run them: a fresh environment with only what Colab
preinstalls that the course relies on (torch, numpy, matplotlib, ipywidgets, tqdm, a kernel), no
nbgrader. The setup cell installs the helper package from the local checkout, as it installs it from
GitHub in Colab, without replacing the preinstalled torch, and every solution notebook runs there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from grading.config import ASSIGNMENTS, ROOT

PREINSTALLED = ["torch", "numpy", "matplotlib", "ipywidgets", "tqdm", "ipykernel", "nbclient", "nbformat"]

RUNNER = textwrap.dedent('''
    import json, sys, time
    import nbformat
    from nbclient import NotebookClient
    results = {}
    for path in sys.argv[1:]:
        notebook = nbformat.read(path, as_version=4)
        started = time.perf_counter()
        NotebookClient(notebook, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": str(__import__("pathlib").Path(path).parent)}}).execute()
        errors = [f"{o.get('ename')}: {o.get('evalue')}" for c in notebook.cells for o in c.get("outputs", [])
                  if o.output_type == "error"]
        results[path] = {"errors": errors, "seconds": round(time.perf_counter() - started, 1)}
    print("RESULTS " + json.dumps(results))
''')


@pytest.fixture(scope="module")
def colab_python(tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("colab") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "-c", str(ROOT / "requirements" / "lock.txt"),
                    *PREINSTALLED], check=True, capture_output=True)
    return python


def _run(python: Path, *args: str) -> subprocess.CompletedProcess:
    # Run outside the checkout, where `import course` could find the source folder itself.
    return subprocess.run([str(python), *args], capture_output=True, text=True, cwd=python.parent)


def test_solutions_run_in_a_colab_like_environment(colab_python, tmp_path):
    torch_before = _run(colab_python, "-c", "import torch; print(torch.__version__)").stdout.strip()
    assert _run(colab_python, "-c", "import course").returncode != 0, "the helper package must not be preinstalled"
    assert _run(colab_python, "-c", "import nbgrader").returncode != 0, "nbgrader must not be needed"
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER)
    notebooks = [str(ROOT / "solutions" / a / f"{a}.ipynb") for a in ASSIGNMENTS]
    env = dict(os.environ, COURSE_INSTALL_SPEC=str(ROOT), MPLBACKEND="Agg", COURSE_AUTOGRADE="1",
               PATH=f"{colab_python.parent}:{os.environ['PATH']}")
    run = subprocess.run([str(colab_python), str(runner), *notebooks], capture_output=True, text=True, env=env,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(run.stdout.split("RESULTS ", 1)[1])
    failed = {Path(path).name: result["errors"] for path, result in results.items() if result["errors"]}
    assert not failed, f"notebooks with errors: {failed}"
    assert _run(colab_python, "-c", "import course").returncode == 0, "the setup cell installed the helper package"
    torch_after = _run(colab_python, "-c", "import torch; print(torch.__version__)").stdout.strip()
    assert torch_after == torch_before, "installing the helper package replaced the preinstalled torch"
