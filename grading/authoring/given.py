"""The cells that every notebook shares, and the cells one notebook is given from another's solutions.

A cell whose metadata has ``given`` is written by the build, never by hand (grading/authoring/notebooks.py
fills it on every ``make notebooks``):

- ``given: header``: the title, the badges, the difficulty/time/points/GPU lines and how to work,
  from the notebook's table in ``authoring/course.toml`` and the points of its test cells;
- ``given: setup``: the setup cell, the same in every notebook (plus Triton's lines where the catalogue
  says ``triton = true``);
- ``given: glossary``: the course's glossary, from its table in docs/AUTHORING.md (§7);
- ``given: ["02_paged_kv_cache/task2_2_BlockAllocator", ...]``: read-only code made of those
  reference solutions of earlier notebooks (grading.authoring.reference), in that order.

tests/test_given_cells.py proves that every such cell equals what its origin gives.
"""

from __future__ import annotations

import re
from pathlib import Path

import tomllib
from nbformat.notebooknode import NotebookNode

from grading.authoring.reference import solution_cells, without_todos
from grading.config import BRANCH, REPOSITORY, ROOT, colab_url, install_spec, modelscope_url, raw_url

CATALOGUE = "authoring/course.toml"
GUIDE = "docs/AUTHORING.md"
_ORIGIN = re.compile(r"^(\d\d_\w+)/(task(\d+)_(\d+)_(\w+))$")


def catalogue(root: Path = ROOT) -> dict[str, dict]:
    """Every notebook's table of ``authoring/course.toml``, by assignment id."""
    with open(root / CATALOGUE, "rb") as handle:
        return tomllib.load(handle)


def points(notebook: NotebookNode) -> int:
    """The points of every test cell of ``notebook``, added up."""
    return sum(int(cell.metadata.get("nbgrader", {}).get("points", 0)) for cell in notebook.cells
               if cell.metadata.get("nbgrader", {}).get("grade"))


LEVELS = {1: ("★☆☆", "introductory", "入门"), 2: ("★★☆", "intermediate", "中级"), 3: ("★★★", "advanced", "进阶")}


def header(assignment: str, entry: dict, total_points: int) -> str:
    """The first cell of a notebook: title, badges, difficulty, time, points, GPU, how to work.

    Raises:
        ValueError: when ``entry`` lacks a field or has a level other than 1, 2 or 3.
    """
    missing = [key for key in ("title", "title_zh", "level", "minutes", "gpu", "gpu_zh") if key not in entry]
    if missing or entry.get("level") not in LEVELS:
        raise ValueError(f"{assignment}: its table in {CATALOGUE} needs title, title_zh, level (1-3), minutes, gpu "
                         f"and gpu_zh; missing or wrong: {missing or ['level']}")
    stars, level_en, level_zh = LEVELS[entry["level"]]
    release = f"https://github.com/{REPOSITORY}/blob/{BRANCH}/release/{assignment}/{assignment}.ipynb"
    lines = [
        f"# {assignment[:2]}. {entry['title']} | {entry['title_zh']}",
        "",
        f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab_url(assignment)})",
        f"[![Open in ModelScope](https://img.shields.io/badge/ModelScope-Open%20in%20ModelScope-624aff)]"
        f"({modelscope_url(assignment)})",
        f"[![GitHub](https://img.shields.io/badge/GitHub-release%2F{assignment}-black)]({release})",
        "",
        f"**Difficulty:** {stars} {level_en} · **Time:** about {entry['minutes']} minutes · "
        f"**Points:** {total_points} · **GPU:** {entry['gpu']}",
        "",
        f"**难度：** {stars} {level_zh} · **用时：** 约 {entry['minutes']} 分钟 · **总分：** {total_points} · "
        f"**GPU：** {entry['gpu_zh']}",
        "",
        "**ModelScope (魔搭):** log in to ModelScope, then click the ModelScope badge: it opens this notebook from",
        "GitHub in a notebook instance of yours (choose CPU or GPU). Where that link does not work, choose",
        f"*File → Open from URL…* in the instance's JupyterLab and paste <{raw_url(assignment)}>.",
        "先登录魔搭，再点击 ModelScope 徽章：魔搭会从 GitHub 取来本 notebook，在你自己的 Notebook 实例中打开"
        "（可选 CPU 或 GPU）。",
        f"如果这个链接打不开，在实例的 JupyterLab 中选择 *File → Open from URL…*，粘贴 <{raw_url(assignment)}>。",
        "",
        "How to work: run the setup cell. In each task, write what each numbered `# TODO` asks for in place of",
        "`# YOUR CODE HERE`, then run the test cells under it. Visible tests show what is expected; hidden tests",
        "check more cases when your notebook is graded. A type the text names is that type exactly, and the tests",
        "check it first: a `dict` is a plain `dict` (not an `OrderedDict`, `Counter` or `defaultdict`), a `tuple` a",
        "plain `tuple` (not a `namedtuple`), a `float` Python's `float` (not `numpy.float64`).",
        "",
        # One line: a line break inside a Chinese sentence renders as a stray space.
        "做法：先运行环境配置单元。在每个任务中，按每个带编号的 `# TODO` 的要求，把代码写在 `# YOUR CODE HERE` 处，"
        "然后运行其下方的测试单元。可见测试说明期望的结果；评分时，隐藏测试会检查更多情况。"
        "任务文字说到的类型就是这个类型本身，测试会先检查它：`dict` 是普通的 `dict`（不是 `OrderedDict`、`Counter` "
        "或 `defaultdict`），`tuple` 是普通的 `tuple`（不是 `namedtuple`），`float` 是 Python 的 `float`"
        "（不是 `numpy.float64`）。",
    ]
    return "\n".join(lines)


# Appended to the setup cell of a notebook whose catalogue table says ``triton = true``.
TRITON_SETUP = '''

# Triton: without a CUDA device its interpreter runs the kernels on the CPU, through numpy (correct results,
# meaningless times); TRITON_INTERPRET must be set before triton is imported. Triton installs on Linux only:
# on macOS, or Windows without WSL, open this notebook in Colab or on a Linux machine.
if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
if importlib.util.find_spec("triton") is None:
    if not sys.platform.startswith("linux"):
        raise RuntimeError("Triton installs on Linux only: open this notebook in Colab or on Linux (WSL on Windows). "
                           "Triton 只能安装在 Linux 上：请在 Colab 或 Linux（Windows 上用 WSL）中打开本 notebook。")
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", "triton"])
import triton

if os.environ.get("TRITON_INTERPRET") == "1":
    # The interpreter sets up triton.language again at every tl.sum, tl.max... in a kernel, where once per launch
    # is enough, and works out overflow checks that it then discards: both are skipped (the same results, sooner).
    from course.kernels import speed_up_interpreter

    speed_up_interpreter()
print(f"triton {triton.__version__}: " + ("kernels compile for the GPU" if torch.cuda.is_available() else
      "no CUDA device, so TRITON_INTERPRET=1: kernels run in Triton's interpreter on the CPU"))'''


def setup(triton: bool = False) -> str:
    """The setup cell: install the helper package when missing, pick the device, seed, report.

    With ``triton``, it then turns Triton's interpreter on where there is no CUDA device and installs
    Triton when it is missing (Linux only; elsewhere it says to use Colab or Linux).
    """
    return f'''# Setup: install the course's helper package when it is missing (Colab, ModelScope),
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
print(setup_summary(DEVICE, SEED))''' + (TRITON_SETUP if triton else "")


def glossary(root: Path = ROOT) -> str:
    """The glossary cell: the table of the authoring guide's glossary section, with a bilingual intro.

    Raises:
        ValueError: when the guide has no "## 7. Glossary" section with a table.
    """
    text = (root / GUIDE).read_text(encoding="utf-8")
    match = re.search(r"^## 7\. Glossary[^\n]*\n(.*?)(?=^## )", text, re.S | re.M)
    table = [line for line in (match.group(1) if match else "").splitlines() if line.startswith("|")]
    if not table:
        raise ValueError(f"{GUIDE} has no table under '## 7. Glossary'")
    intro = [
        "## Glossary | 术语表",
        "",
        "The course uses one Chinese term for each concept, in every notebook, hint and table. Code identifiers stay",
        "in English (`seq_id`, `block_table`).",
        "",
        "本课程对每个概念只用一个中文术语，所有 notebook、提示和表格都一样。"
        "代码标识符保留英文（`seq_id`、`block_table`）。",
        "",
    ]
    return "\n".join(intro + table)


def given_code(assignment: str, origins: list[str], sources: dict[str, NotebookNode]) -> str:
    """Read-only code made of the reference solutions named by ``origins``, in their order.

    Args:
        assignment: the notebook that is given the code; every origin must come before it.
        origins: ``"NN_topic/taskN_M_name"`` strings.
        sources: the source notebooks by assignment id, at least those of the origins.

    Raises:
        ValueError: naming the origin that is malformed, later in the course, or not found.
    """
    if not origins:
        raise ValueError(f"{assignment}: a given cell must name at least one origin")
    parts, names = [], []
    for origin in origins:
        match = _ORIGIN.match(origin)
        if not match:
            raise ValueError(f"{assignment}: given origin {origin!r} is not 'NN_topic/taskN_M_name'")
        origin_assignment, grade_id = match.group(1), match.group(2)
        if origin_assignment >= assignment:
            raise ValueError(f"{assignment}: given origin {origin!r} is not an earlier notebook")
        if origin_assignment not in sources:
            raise ValueError(f"{assignment}: given origin {origin!r}: no source notebook {origin_assignment}")
        code = solution_cells(sources[origin_assignment])
        if grade_id not in code:
            raise ValueError(f"{assignment}: given origin {origin!r}: {origin_assignment} has no solution cell "
                             f"{grade_id}")
        parts.append(without_todos(code[grade_id]).strip("\n"))
        names.append(f"{match.group(3)}.{match.group(4)} {match.group(5)}")
    notebooks = " and ".join(sorted({origin[:2] for origin in origins}))
    intro = (f"# Given (read-only): the reference solutions of tasks {', '.join(names)} (notebook {notebooks}).\n"
             "# Run this cell; do not change it (grading puts it back as it is here).\n")
    return intro + "\n\n\n".join(parts)


def fill(assignment: str, notebook: NotebookNode, sources: dict[str, NotebookNode], root: Path = ROOT) -> list[str]:
    """Write every ``given`` cell of ``notebook`` from its origin; return the ids of cells that changed.

    Raises:
        ValueError: for an unknown ``given`` value, or an assignment missing from the catalogue.
    """
    changed = []
    for cell in notebook.cells:
        kind = cell.metadata.get("given")
        if kind is None:
            continue
        if kind == "header":
            entries = catalogue(root)
            if assignment not in entries:
                raise ValueError(f"{assignment} has no table in {CATALOGUE}")
            text = header(assignment, entries[assignment], points(notebook))
        elif kind == "setup":
            text = setup(bool(catalogue(root).get(assignment, {}).get("triton", False)))
        elif kind == "glossary":
            text = glossary(root)
        elif isinstance(kind, list):
            text = given_code(assignment, kind, sources)
        else:
            raise ValueError(f"{assignment}: unknown given cell {kind!r} "
                             "(header, setup, glossary or a list of origins)")
        if cell.source != text:
            cell.source = text
            changed.append(cell.get("id", "?"))
    return changed
