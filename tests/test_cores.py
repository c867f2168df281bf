"""A judge and the kernel it serves share one core: each grading slot's processes, and the harness's judge.

grading/judge/cores.py says why (a request and its reply cost less than half on one core).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from grading.judge import cores
from grading.pipeline.jobs import Job, child_setup
from grading.pipeline.options import GradingOptions

needs_affinity = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this system")
REPORT_AFFINITY = "import os; print(sorted(os.sched_getaffinity(0)))"


def test_slots_get_distinct_cores_while_there_are_enough():
    machine = [0, 1, 2, 3]
    for offset in range(4):
        assert sorted(cores.core_for(slot, machine, offset) for slot in range(1, 5)) == machine
    # More slots than cores: they wrap around, each core taking its turn.
    assert [cores.core_for(slot, [4, 7], 0) for slot in range(1, 6)] == [7, 4, 7, 4, 7]
    assert cores.core_for(1, []) is None


@needs_affinity
def test_a_grading_process_and_what_it_starts_run_on_its_slot_core():
    core = cores.core_for(2)
    run = subprocess.run([sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, '-c', "
                          f"{REPORT_AFFINITY!r}])"], preexec_fn=child_setup(core, None), capture_output=True,
                         text=True, check=True)
    assert run.stdout.strip() == str([core]), "a grandchild (a judge, a kernel) inherits the slot's core"
    unpinned = subprocess.run([sys.executable, "-c", REPORT_AFFINITY], preexec_fn=child_setup(None, None),
                              capture_output=True, text=True, check=True)
    assert unpinned.stdout.strip() == str(cores.allowed_cores())
    assert child_setup(None, None) is None


def test_jobs_take_their_core_from_the_option(tmp_path: Path):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "gradebook.db").write_bytes(b"")
    pinned = Job(1, tmp_path, GradingOptions(), "tag")
    assert pinned.core == cores.core_for(1) and (pinned.core is not None or not cores.allowed_cores())
    assert Job(2, tmp_path, GradingOptions(pin_cpus=False), "tag").core is None


@needs_affinity
def test_the_harness_gives_the_thread_its_cores_and_torch_threads_back(tmp_path: Path):
    import torch

    from grading.authoring.harness import JudgedHarness
    from grading.config import ROOT

    before, threads = os.sched_getaffinity(0), torch.get_num_threads()
    with JudgedHarness(ROOT / "source" / "01_eviction_as_ranking" / "01_eviction_as_ranking.ipynb") as harness:
        task = next(iter(harness.tasks.values()))
        assert all(result.passed for result in harness.results(task.grade_id, task.solution))
        host = subprocess.run(["taskset", "-pc", str(harness._host.pid)], capture_output=True, text=True)
        if harness.core is not None and host.returncode == 0:
            assert host.stdout.strip().endswith(f": {harness.core}"), host.stdout
    assert os.sched_getaffinity(0) == before and torch.get_num_threads() == threads
