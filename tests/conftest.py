"""Shared fixtures: the repository root, its assignments, and a scratch copy of the course."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

import pytest

from grading.config import ASSIGNMENTS, ROOT


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def assignments() -> list[str]:
    return list(ASSIGNMENTS)


def copy_course(target: Path) -> Path:
    """Copy what nbgrader needs of the course (config, source/, grading/, release/) into ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "nbgrader_config.py", target / "nbgrader_config.py")
    for folder in ("source", "release", "grading"):
        shutil.copytree(ROOT / folder, target / folder,
                        ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    return target


@pytest.fixture(scope="session")
def built_course(tmp_path_factory) -> Path:
    """A scratch copy of the course with release/ and solutions/ regenerated from source/."""
    from grading.build import build

    course = copy_course(tmp_path_factory.mktemp("course"))
    shutil.rmtree(course / "release")
    build(course, ASSIGNMENTS)
    return course


@functools.cache
def sandbox_problem() -> str | None:
    """Why the grading sandbox cannot run on this machine (no bubblewrap, namespaces forbidden), or None.

    A sandbox that should work here but fails its probe is not an excuse: it returns None, and the
    tests that use the sandbox then fail.
    """
    import os
    import tempfile

    from grading import sandbox

    if sandbox.bwrap_path() is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    uid = sandbox.FIRST_UID - 1 if os.geteuid() == 0 else None
    with tempfile.TemporaryDirectory() as sockets:
        if uid is not None:
            os.chown(sockets, uid, uid)
        problem = sandbox.probe(sandbox.Plan(sandbox=True, socket_dir=sockets, kept=sandbox.kept_folders(), uid=uid))
    forbidden = ("Operation not permitted", "No permission", "setting up uid map", "Creating new namespace failed",
                 "No space left on device")
    if problem and any(text in problem for text in forbidden):
        return f"this machine does not allow the sandbox's namespaces: {problem}"
    return None


@pytest.fixture(scope="session")
def sample_folder(built_course, tmp_path_factory) -> Path:
    """The bundled sample submissions of every assignment, written once."""
    from grading.samples import write_samples

    folder = tmp_path_factory.mktemp("samples")
    write_samples(folder, ASSIGNMENTS, built_course)
    return folder


@pytest.fixture(scope="session")
def parallel_grades(built_course, sample_folder):
    """The samples graded as the grading command does by default here: --jobs 2, into the course."""
    from grading.grade import grade_folder

    rows = grade_folder(sample_folder, built_course, ASSIGNMENTS, jobs=2, log=lambda line: None)
    return built_course, {(scores.student, scores.assignment): (scores, status) for scores, status in rows}


# The notebooks that the equality tests grade again (--jobs 1, Slurm shards) and compare with the
# --jobs 2 run of the whole course: two notebooks prove equality as well as seven, at a third of the cost.
EQUALITY_ASSIGNMENTS = [ASSIGNMENTS[0], ASSIGNMENTS[2]]


@pytest.fixture(scope="session")
def sequential_grades(built_course, sample_folder, tmp_path_factory):
    """The samples of EQUALITY_ASSIGNMENTS graded with --jobs 1 into an output folder of their own."""
    from grading.grade import grade_folder

    output = tmp_path_factory.mktemp("sequential")
    rows = grade_folder(sample_folder, built_course, EQUALITY_ASSIGNMENTS, jobs=1, output=output,
                        log=lambda line: None)
    return output, {(scores.student, scores.assignment): (scores, status) for scores, status in rows}
