"""The README's generated tables are current, and its commands are the ones CI and make run."""

from __future__ import annotations

from grading.config import ROOT
from grading.readme import course_table, mutation_table

README = (ROOT / "README.md").read_text()


def test_course_table_matches_the_notebooks():
    assert course_table() in README, "the README's course table is stale: paste `python -m grading.readme`"


def test_mutation_table_matches_the_mutation_suite():
    assert mutation_table() in README, "the README's kill-rate table is stale: paste `python -m grading.readme`"


def test_ci_runs_the_readme_test_command():
    assert "make test   # run the test suite" in README
    assert (ROOT / ".ci" / "run").read_text().rstrip().endswith("make test")


def test_environment_yml_uses_the_same_pins():
    environment = (ROOT / "environment.yml").read_text()
    assert "-c requirements/lock.txt" in environment and "-r requirements/dev.in" in environment
    lock = (ROOT / "requirements" / "lock.txt").read_text().splitlines()
    for pinned in ("nbgrader==0.9.6", "torch==2.13.0", "jupyterlab==4.6.", "notebook==7.6.", "ipywidgets==8."):
        assert any(line.startswith(pinned) for line in lock), pinned
