"""The place stage's scratch course, and where each notebook's graded files go when it is done.

Shards that run at once (on one machine or on a cluster's shared disk) never write the course directory
itself: each builds its own, from what an earlier run on this machine generated for the same source notebooks
and settings (grading/pipeline/cache.py). The grading processes autograde into it; `publish` moves each
notebook's autograded/ and feedback/ files to the output folder.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from grading.pipeline import cache
from grading.pipeline.nbgrader_cli import tools_on_path


def prepare(root: Path, assignments: list[str]) -> Path:
    """A scratch course directory with the release notebooks of ``assignments`` and a gradebook that defines them."""
    return cache.scratch_course(root, assignments, lambda course: _generate(course, assignments))


def _generate(course: Path, assignments: list[str]) -> None:
    """nbgrader's ``generate_assignment`` for ``assignments`` in the scratch course ``course``."""
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.db_url = f"sqlite:///{course / 'gradebook.db'}"
    config.NbGraderAPI.log_level = "WARN"
    config.Exchange.root = str(Path(course) / "exchange")  # Not used; nbgrader wants it to exist.
    tools_on_path()
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    for assignment in assignments:
        result = api.generate_assignment(assignment, force=True)
        if not result["success"]:
            raise RuntimeError(f"nbgrader generate_assignment {assignment} failed:\n{result.get('log', '')}"
                               f"{result.get('error', '')}")


def publish(course: Path, destination: Path, student: str, assignment: str) -> None:
    """Move what grading wrote for one notebook (autograded/, feedback/) to the output folder."""
    for kind in ("autograded", "feedback"):
        source = course / kind / student / assignment
        target = destination / kind / student / assignment
        if target.exists():
            shutil.rmtree(target)
        if source.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(source), str(target))
