"""Shared fixtures: the repository root, its assignments, and a scratch copy of the course."""

from __future__ import annotations

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
        shutil.copytree(ROOT / folder, target / folder, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    return target


@pytest.fixture(scope="session")
def built_course(tmp_path_factory) -> Path:
    """A scratch copy of the course with release/ and solutions/ regenerated from source/."""
    from grading.build import build

    course = copy_course(tmp_path_factory.mktemp("course"))
    shutil.rmtree(course / "release")
    build(course, ASSIGNMENTS)
    return course
