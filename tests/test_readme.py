"""The README's commands are the ones CI and make run.

(Its course table is written by ``make notebooks``, and CI fails when it is stale; tests/test_mutants.py checks
the mutation table against its own run.)"""

from __future__ import annotations

from grading.config import ROOT

README = (ROOT / "README.md").read_text()


def test_ci_runs_the_readme_test_command():
    assert "make test   # run the test suite" in README
    assert (ROOT / ".ci" / "run").read_text().rstrip().endswith("make test")


def test_environment_yml_uses_the_same_pins():
    environment = (ROOT / "environment.yml").read_text()
    assert "-c requirements/lock.txt" in environment and "-r requirements/dev.in" in environment
    lock = (ROOT / "requirements" / "lock.txt").read_text().splitlines()
    for pinned in ("nbgrader==0.9.6", "torch==2.13.0", "jupyterlab==4.6.", "notebook==7.6.", "ipywidgets==8."):
        assert any(line.startswith(pinned) for line in lock), pinned
