"""Settings that the instructor's tooling and the notebooks share, each in one place."""

from __future__ import annotations

from pathlib import Path

# The public repository the badges and the setup cells point at ("owner/name" on GitHub).
REPOSITORY = "kvcache-course/kv-cache-eviction"
BRANCH = "main"

ROOT = Path(__file__).resolve().parent.parent

# Every assignment in course order. Each has source/<id>/<id>.ipynb.
ASSIGNMENT_PATTERN = "[0-9][0-9]_*"


def source_assignments(root: Path) -> list[str]:
    """The assignments whose folder ``root``/source holds, in course order."""
    return [path.name for path in sorted((root / "source").glob(ASSIGNMENT_PATTERN)) if path.is_dir()]


ASSIGNMENTS = source_assignments(ROOT)

# Student ids of the bundled sample submissions that the main job grades.
SAMPLE_STUDENTS = ("reference_solution", "unchanged_release", "typical_mistakes")


def colab_url(assignment: str) -> str:
    """Return the Open-in-Colab address of an assignment's release notebook."""
    return (f"https://colab.research.google.com/github/{REPOSITORY}/blob/{BRANCH}/"
            f"release/{assignment}/{assignment}.ipynb")


def modelscope_url(assignment: str) -> str:
    """Return the address that opens an assignment's release notebook in a ModelScope notebook instance.

    The ModelScope badge carries it: ModelScope fetches the notebook from GitHub and opens it in the
    visitor's own notebook instance (CPU or GPU).
    """
    return (f"https://modelscope.cn/notebook/share/github/{REPOSITORY}/blob/{BRANCH}/"
            f"release/{assignment}/{assignment}.ipynb")


RAW_HOST = "https://raw.githubusercontent.com"


def raw_url(assignment: str) -> str:
    """Return the address of an assignment's release notebook file in the public repository.

    Where the ModelScope link cannot be used, this address goes into *File → Open from URL…* of a
    ModelScope instance's JupyterLab, which downloads and opens it.
    """
    return f"{RAW_HOST}/{REPOSITORY}/{BRANCH}/release/{assignment}/{assignment}.ipynb"


def install_spec() -> str:
    """Return the pip requirement that installs the helper package from the public repository."""
    return f"kv-cache-course @ git+https://github.com/{REPOSITORY}@{BRANCH}"
