"""The test layers: which marker each test gets, and which tests pytest-xdist keeps on one worker.

Layers (registered in pyproject.toml; `make test-fast` and its siblings select them):

- ``fast``: unit and property tests, in this process or small subprocesses;
- ``mutants``: the mutation suite (tests/test_mutants.py), every task's wrong and correct answers;
- ``notebooks``: every notebook run top to bottom once, in JupyterLab (Chromium), its kernel in a Colab-like
  environment;
- ``grading``: batches graded end to end through the grading command, the sandbox and Slurm;
- ``browser``: Chromium driven by Playwright;
- ``hub``: a JupyterHub with real users.

A test's layer comes from its file; a file not named here is ``fast``. A task marker (``task2_4``)
goes to the mutation suite's tests of that task (their ids name its grade id) and to the property
tests that call the task's reference solution (PROPERTY_FILES: the test's code, or else its
module's, names the task's function or class).
"""

from __future__ import annotations

import functools
import inspect
import re

import pytest

from grading.authoring.harness import read_notebook
from grading.config import ASSIGNMENTS, ROOT

LAYERS = ("fast", "mutants", "notebooks", "grading", "browser", "hub")

FILE_LAYERS = {
    "test_mutants.py": "mutants",
    "test_notebooks_run.py": "notebooks",
    "test_grading_hardening.py": "grading",
    "test_grading_isolation.py": "grading",
    "test_grading_parallel.py": "grading",
    "test_grading_robust.py": "grading",
    "test_grading_batches.py": "grading",
    "test_grading_sandbox.py": "grading",
    # These start sandboxes, warm processes and a hostile student's 128 busy processes: run beside the other
    # grading tests (one worker), they pushed honest notebooks over their time limits.
    "test_grading_cost.py": "grading",
    "test_grading_fairness.py": "grading",
    "test_grading_warm.py": "grading",
    "test_pipeline.py": "grading",
    "test_lms.py": "grading",
    "test_browser.py": "browser",
    "test_browser_cjk.py": "browser",
    "test_browser_sanitize.py": "browser",
    "test_hub.py": "hub",
}

# The files whose tests check a notebook's reference solutions against an independent model.
PROPERTY_FILES = {
    "test_fair_property.py": "04_fair_quota",
    "test_scheduler_property.py": "05_scheduler_sim",
    "test_token_eviction_property.py": "07_token_eviction",
    "test_real_model.py": "07_token_eviction",
    "test_tiered_cache_property.py": "08_tiered_cache",
    "test_tiers.py": "08_tiered_cache",
}

# Tests that pytest-xdist must run on one worker (`--dist loadgroup`), as one group each:
# - the grading layer: its tests share the session's graded samples (conftest.py: sample_folder, parallel_grades),
#   which each worker would otherwise grade again, and its batches run one at a time. Spread over both workers
#   (tried on 2026-12-02), batches graded at once pushed the 2 cores to a load average of 8: checks bound to a
#   time (a JupyterLab page, an attacker's 15-second window) failed, and CI got no faster;
# - the notebooks layer: the notebooks' setup cells install the helper package into one Colab-like environment,
#   the kernel of one JupyterLab;
# - the tests of any other module that share a module-scoped fixture (a hub, a JupyterLab, a graded batch):
#   without it, each worker started its own hub (two minutes) and graded the browser tests' hostile batch again.
# The mutation suite is grouped per notebook (a judge per notebook).
GROUPED_LAYERS = ("grading", "notebooks")

# The groups that take longest (in CI on 2026-12-03: 771, 229, 112 and 76 s), in the order the workers start them,
# before the mutation suite's groups and then everything else. A group is one unit of work for one worker: started
# last, a long one kept the other worker idle at the end of the run. The Makefile keeps this order
# (--no-loadscope-reorder; pytest-xdist would otherwise start the groups with the most tests first).
LONGEST_FIRST = ("grading", "notebooks", "module-test_browser_sanitize.py", "module-test_hub.py")

_GRADE_ID = re.compile(r"task(\d+)_(\d+)_(\w+)")


@functools.cache
def notebook_tasks() -> dict[str, dict[str, str]]:
    """For every notebook: each task's marker (``task2_4``) and the name its grade id gives it."""
    tasks = {}
    for assignment in ASSIGNMENTS:
        grade_ids = read_notebook(ROOT / "source" / assignment / f"{assignment}.ipynb")[0]
        tasks[assignment] = {f"task{match.group(1)}_{match.group(2)}": match.group(3)
                             for match in map(_GRADE_ID.fullmatch, grade_ids) if match}
    return tasks


def task_markers() -> list[str]:
    return [marker for tasks in notebook_tasks().values() for marker in tasks]


def _source(obj) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return ""


def _tasks_of(item) -> list[str]:
    name = item.path.name
    if name == "test_mutants.py":
        callspec = getattr(item, "callspec", None)
        grade_id = callspec.params.get("grade_id", "") if callspec else ""
        match = _GRADE_ID.fullmatch(grade_id)
        return [f"task{match.group(1)}_{match.group(2)}"] if match else []
    if name not in PROPERTY_FILES:
        return []
    tasks = notebook_tasks()[PROPERTY_FILES[name]]
    for text in (_source(item.function), _source(item.module)):
        found = [marker for marker, task in tasks.items() if re.search(rf"\b{re.escape(task)}\b", text)]
        if found:
            return found
    return []


def _shares_a_module_fixture(item) -> bool:
    """Whether the test uses a fixture of module scope (a JupyterLab, a hub, a graded batch): its module's tests
    then run on one worker, which makes that fixture once."""
    info = getattr(item, "_fixtureinfo", None)
    definitions = info.name2fixturedefs.values() if info is not None else []
    return any(definition.scope == "module" for chain in definitions for definition in chain)


def _group(item, layer: str) -> str | None:
    if layer in GROUPED_LAYERS:
        return layer
    callspec = getattr(item, "callspec", None)
    if layer == "mutants" and callspec and "assignment" in callspec.params:
        return f"mutants-{callspec.params['assignment']}"
    if _shares_a_module_fixture(item):
        return f"module-{item.path.name}"
    return None


def _notebook_order(item) -> int:
    callspec = getattr(item, "callspec", None)
    assignment = callspec.params.get("assignment") if callspec else None
    return ASSIGNMENTS.index(assignment) if assignment in ASSIGNMENTS else len(ASSIGNMENTS)


def _start_order(group: str | None) -> int:
    """Where a group's tests come in the run: the longest groups first (`LONGEST_FIRST`), then the rest."""
    if group in LONGEST_FIRST:
        return LONGEST_FIRST.index(group)
    if group and group.startswith("mutants-"):
        return len(LONGEST_FIRST)
    return len(LONGEST_FIRST) + 1


def mark_items(items: list) -> None:
    """Give every collected test its layer, its tasks and, where it needs one, its xdist group; order the
    mutation suite's tests by notebook, so that each notebook's harnesses start once (test_mutants.Suite), and the
    groups longest first (`LONGEST_FIRST`)."""
    places = [index for index, item in enumerate(items) if item.path.name == "test_mutants.py"]
    for place, item in zip(places, sorted((items[index] for index in places), key=_notebook_order)):
        items[place] = item
    groups = {}
    for item in items:
        layer = FILE_LAYERS.get(item.path.name, "fast")
        item.add_marker(getattr(pytest.mark, layer))
        for marker in _tasks_of(item):
            item.add_marker(getattr(pytest.mark, marker))
        group = groups[item.nodeid] = _group(item, layer)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: _start_order(groups[item.nodeid]))  # Stable: each group keeps its own order.
