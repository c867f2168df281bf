"""Shared pieces of the notebook builders in this folder.

Each ``authoring/NN_topic.py`` builds ``source/NN_topic/NN_topic.ipynb`` cell by cell:

    .venv/bin/python authoring/NN_topic.py        # then: .venv/bin/python -m grading.build NN_topic

Edit the builder, not the notebook; tests/test_authoring.py fails when a source notebook differs
from what its builder writes. AUTHORING_OUTPUT redirects the output folder (the test uses it).
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402

from grading.config import BRANCH, REPOSITORY, colab_url, install_spec, raw_url  # noqa: E402


def write(assignment, notebook):
    """Write the notebook to <output>/<assignment>/<assignment>.ipynb with stable cell ids."""
    for index, cell in enumerate(notebook.cells):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        cell["id"] = grade_id if grade_id else f"cell-{index:03d}"
    output = Path(os.environ.get("AUTHORING_OUTPUT", ROOT / "source")) / assignment
    output.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, output / f"{assignment}.ipynb")

def header(assignment, title_en, title_zh, difficulty, minutes, gpu_line, points):
    return f"""# {assignment[:2]}. {title_en} | {title_zh}

[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab_url(assignment)})
[![ModelScope](https://img.shields.io/badge/ModelScope-Open%20from%20URL-624aff)]({raw_url(assignment)})
[![GitHub](https://img.shields.io/badge/GitHub-release%2F{assignment}-black)](https://github.com/{REPOSITORY}/blob/{BRANCH}/release/{assignment}/{assignment}.ipynb)

**Difficulty:** {difficulty} · **Time:** about {minutes} minutes · **Points:** {points} · **GPU:** {gpu_line}

**难度：** {difficulty} · **用时：** 约 {minutes} 分钟 · **总分：** {points} · **GPU：** 见上一行（没有 GPU 时一切都在 CPU 上运行）。

**ModelScope (魔搭):** in your notebook instance's JupyterLab, choose *File → Open from URL…* and
paste the ModelScope badge's link (this notebook's file in the course repository).
在魔搭 Notebook 的 JupyterLab 中选择 *File → Open from URL…*，粘贴 ModelScope 徽章的链接即可打开本 notebook。

How to work: run the setup cell, then fill in every `# YOUR CODE HERE` and run the test cell under it.
Visible tests show what is expected; hidden tests check more cases when your notebook is graded.

做法：先运行环境配置单元，然后补全每个 `# YOUR CODE HERE`，并运行其下方的测试单元。
可见测试说明期望的结果；评分时隐藏测试会检查更多情况。
"""

SETUP = f'''# Setup: install the course's helper package when it is missing (Colab, ModelScope),
# then pick the device and seed every random generator.
import importlib.util
import os
import subprocess
import sys

if importlib.util.find_spec("course") is None:
    # COURSE_INSTALL_SPEC may name a mirror or a local checkout instead of GitHub.
    spec = os.environ.get("COURSE_INSTALL_SPEC", "{install_spec()}")
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", spec])

import torch

from course.env import pick_device, seed_everything, setup_summary

DEVICE = pick_device()
SEED = 0
seed_everything(SEED)
print(setup_summary(DEVICE, SEED))
'''
