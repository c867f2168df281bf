"""Shared fixtures (the repository root, its assignments, a scratch copy of the course) and the test layers.

Every test gets one layer marker, from the file it is in (tests/layers.py): ``fast``, ``mutants``,
``notebooks``, ``grading``, ``browser`` or ``hub``, and a task marker (``task2_4``) when it checks one
task: the mutation suite's tests of that task and the property tests of its reference solution.
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

import pytest
from layers import mark_items, task_markers

from grading.config import ASSIGNMENTS, ROOT


def pytest_configure(config):
    for marker in task_markers():
        config.addinivalue_line("markers", f"{marker}: the tests of task {marker[4:].replace('_', '.')}")


# First: pytest-xdist's worker reads the xdist_group markers in its own hook of this name (--dist loadgroup), which
# would otherwise run before this one and find none, sending a group's tests to both workers.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    mark_items(items)


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
    """A scratch copy of the course with release/ and solutions/ regenerated from source/.

    CI has just regenerated release/ and solutions/ with ``make notebooks`` and checked that nothing
    changed; it says so with COURSE_BUILT=1, and the copy keeps the checkout's release/ instead of
    building the course a second time.
    """
    from grading.authoring.build import build

    course = copy_course(tmp_path_factory.mktemp("course"))
    if os.environ.get("COURSE_BUILT") == "1":
        shutil.copytree(ROOT / "solutions", course / "solutions")
        return course
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

    from grading.isolation import probe, sandbox

    if sandbox.bwrap_path() is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    uid = sandbox.FIRST_UID - 1 if os.geteuid() == 0 else None
    with tempfile.TemporaryDirectory() as sockets:
        if uid is not None:
            os.chown(sockets, uid, uid)
        problem = probe.probe(sandbox.Plan(sandbox=True, socket_dir=sockets, kept=sandbox.kept_folders(), uid=uid))
    forbidden = ("Operation not permitted", "No permission", "setting up uid map", "Creating new namespace failed",
                 "No space left on device")
    if problem and any(text in problem for text in forbidden):
        return f"this machine does not allow the sandbox's namespaces: {problem}"
    return None


@pytest.fixture
def readable_root():
    """What the sandbox's probe needs of the checkout (grading/, course/, source/), copied where any user can read
    it: a test that runs it as another user (uid 65534) must not depend on the checkout's own folders letting
    that user in (a clone in a mode-0700 home folder does not)."""
    import stat
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="course-readable-"))
    try:
        for parent in folder.parents:
            if not parent.stat().st_mode & stat.S_IXOTH:
                pytest.skip(f"other users cannot enter {parent}, where temporary folders go (set TMPDIR)")
        shutil.copytree(ROOT / "grading", folder / "grading", ignore=shutil.ignore_patterns("__pycache__"))
        for name in ("course", "source"):
            shutil.copytree(ROOT / name, folder / name,
                            ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def sample_folder(built_course, tmp_path_factory) -> Path:
    """The bundled sample submissions of every assignment, written once."""
    from grading.authoring.samples import write_samples

    folder = tmp_path_factory.mktemp("samples")
    write_samples(folder, ASSIGNMENTS, built_course)
    return folder


@pytest.fixture(scope="session")
def parallel_grades(built_course, sample_folder):
    """The samples graded as the grading command does by default here: --jobs 2, into the course."""
    from grading.pipeline.run import grade_folder

    rows = grade_folder(sample_folder, built_course, ASSIGNMENTS, jobs=2, log=lambda line: None)
    return built_course, {(scores.student, scores.assignment): (scores, status) for scores, status in rows}


# The notebooks that the equality tests grade again (--jobs 1, Slurm shards) and compare with the
# --jobs 2 run of the whole course: two notebooks prove equality as well as seven, at a third of the cost.
EQUALITY_ASSIGNMENTS = [ASSIGNMENTS[0], ASSIGNMENTS[2]]


@pytest.fixture(scope="session")
def sequential_grades(built_course, sample_folder, tmp_path_factory):
    """The samples of EQUALITY_ASSIGNMENTS graded with --jobs 1 into an output folder of their own."""
    from grading.pipeline.run import grade_folder

    output = tmp_path_factory.mktemp("sequential")
    rows = grade_folder(sample_folder, built_course, EQUALITY_ASSIGNMENTS, jobs=1, output=output,
                        log=lambda line: None)
    return output, {(scores.student, scores.assignment): (scores, status) for scores, status in rows}


def partly_right(assignment: str, root: Path = ROOT):
    """A submission with the reference answer to the first half of the tasks and the typical mistake
    (the first wrong answer of tests/answers/) to the others, and the score it must get.

    The score is the points of the first half plus what the notebook's own test cells give each
    mistake (grading.authoring.harness, in this process, without nbgrader): an exact expectation that is
    neither full marks nor, as a rule, zero.
    """
    import nbformat

    from grading.authoring.harness import NotebookHarness
    from grading.authoring.samples import fill, load_mutants, solution_code

    source = nbformat.read(root / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    release = nbformat.read(root / "release" / assignment / f"{assignment}.ipynb", as_version=4)
    harness = NotebookHarness(root / "source" / assignment / f"{assignment}.ipynb")
    tasks = list(harness.tasks)
    right, wrong = tasks[:len(tasks) // 2], tasks[len(tasks) // 2:]
    mistakes = {grade_id: next(iter(load_mutants(assignment).WRONG[grade_id].values())) for grade_id in wrong}
    answers = {**{grade_id: solution_code(source)[grade_id] for grade_id in right}, **mistakes}
    score = sum(harness.tasks[grade_id].points for grade_id in right)
    score += sum(result.score for grade_id in wrong for result in harness.results(grade_id, mistakes[grade_id]))
    return fill(release, answers), score


@pytest.fixture
def kernel(request):
    """Start judge test kernels (tests/judge_kernel.py) with ``kernel(source, **options)``; closed after the test."""
    from judge_kernel import Kernel

    made = []

    def start(source: str, **options) -> Kernel:
        made.append(Kernel(source, **options))
        return made[-1]

    yield start
    for each in made:
        each.close()
