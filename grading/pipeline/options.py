"""The grading command's options, each declared once with its default and help (traitlets, as nbgrader's own).

The course's nbgrader_config.py may set any of them (``c.GradingOptions.memory_limit_gb = 4``); the command
line overrides it (``--memory-limit-gb 4``: grading/grade.py makes one flag per option tagged ``flag``, with
this help and default); each grading process receives them whole as JSON (`GradingOptions.to_json`). A
shard (``--shard K/N``) may also come from a Slurm job array or a Kubernetes Indexed Job (`parse_shard`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from traitlets import Bool, Dict, Float, Int, List, TraitType, Tuple, Unicode, default, validate
from traitlets.config import Configurable

from grading.config import ASSIGNMENTS, ROOT
from grading.judge import cores
from grading.pipeline.prepare import PREPARE_LIMIT_S

# Every kernel computes with one thread, so that --jobs N kernels share N cores without fighting.
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                     "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS")}
# Seconds a grading process may take to start, or to go from one notebook to the next (grading/pipeline/jobs.py).
WORKER_STEP_LIMIT_S = 600.0


def default_jobs() -> int:
    return len(cores.allowed_cores()) or os.cpu_count() or 1


class PathTrait(TraitType):
    """A file system path: given as a str or a Path, kept as a Path."""

    default_value = None
    info_text = "a path"

    def validate(self, obj, value):
        if value is None and self.allow_none:
            return None
        if isinstance(value, (str, os.PathLike)):
            return Path(value)
        self.error(obj, value)


def _off_when_zero(value):
    """A limit of 0 on the command line or in the config means no limit."""
    return None if value == 0 else value


class GradingOptions(Configurable):
    """Everything the grading command was asked to do, from nbgrader_config.py and the command line to each job."""

    folder = PathTrait(allow_none=True, help="folder of submissions, or a .zip of one")
    root = PathTrait(ROOT, help="the course directory: source/ and nbgrader_config.py")
    assignments = List(Unicode(), default_value=None, allow_none=True,
                       help="grade only these (repeatable)").tag(config=True, flag="--assignment", choices=ASSIGNMENTS)
    output = PathTrait(allow_none=True, help="folder for gradebook.db, autograded/, feedback/ and the shards "
                                             "(default: the course)").tag(config=True, flag="--output")
    csv_path = PathTrait(allow_none=True, help="where to export grades (default: OUTPUT/grades.csv)"
                         ).tag(config=True, flag="--csv")
    mapping = Dict(default_value=None, allow_none=True, help="the student id of each file name (flat folders)")
    cell_timeout = Int(None, allow_none=True, help="seconds per cell (default: Execute.timeout of nbgrader_config.py)"
                       ).tag(config=True, flag="--cell-timeout")
    student_timeout = Float(1200.0, help="seconds per student and notebook").tag(config=True, flag="--student-timeout")
    memory_limit_gb = Float(8.0, allow_none=True, help="memory of a student's kernel and every process it starts, "
                                                       "together, in GiB (0: no limit)"
                            ).tag(config=True, flag="--memory-limit-gb")
    max_processes = Int(256, allow_none=True, help="processes and threads of a student's kernel, together (0: no limit)"
                        ).tag(config=True, flag="--max-processes")
    cpus_per_student = Float(1.0, allow_none=True, help="CPU cores a student's processes may use together (0: no "
                                                        "quota; every student still gets an equal share of a busy "
                                                        "machine)").tag(config=True, flag="--cpus-per-student")
    tmpfs_mb = Int(512, help="size in MiB of each of the sandbox's home, /tmp and /dev/shm").tag(config=True)
    max_notebook_mb = Float(64.0, help="larger files get a manual look").tag(config=True, flag="--max-notebook-mb")
    prepare_timeout = Float(PREPARE_LIMIT_S, help="seconds to read, repair, place and scan one notebook before "
                                                  "grading it").tag(config=True, flag="--prepare-timeout")
    feedback = Bool(True, help="write feedback/ for the students").tag(config=True, flag="--no-feedback")
    isolation = Unicode("auto", help="run each kernel in a bubblewrap sandbox (no network, no view of the course's "
                                     "files); auto: when it works here, with a warning when it does not"
                        ).tag(config=True, flag="--sandbox", choices=["auto", "on", "off"])
    judge = Bool(True, help="every test cell runs in the judge; False: in the kernel, as plain nbgrader does, which "
                            "lets a submission forge its score (the attack tests, and bench/bench_autograde.py's "
                            "measure of what the judge costs)").tag(config=True)
    sanitize = Bool(True, help="sanitize autograded notebooks and feedback; False: its own tests only")
    jobs = Int(help="students graded at once (default: the CPU cores)").tag(config=True, flag="--jobs")
    pin_cpus = Bool(True, help="run each job (its grading process, judge and kernels) on a CPU core of its own: the "
                               "judge and the kernel take turns, and on one core each turn costs half as much "
                               "(grading/judge/cores.py)").tag(config=True, flag="--no-pin-cpus")
    shard = Tuple(Int(), Int(), default_value=(1, 1), help="grade the K-th of N stable parts of the students")
    force = Bool(False, help="regrade students whose files did not change").tag(flag="--force")
    progress = Bool(None, allow_none=True, help="a progress bar (default: when stderr is a terminal)")

    @default("jobs")
    def _default_jobs(self) -> int:
        return default_jobs()

    @validate("memory_limit_gb", "max_processes", "cpus_per_student", "cell_timeout")
    def _zero_is_none(self, proposal):
        return _off_when_zero(proposal["value"])

    @validate("isolation")
    def _known_isolation(self, proposal):
        if proposal["value"] not in ("auto", "on", "off"):
            raise ValueError(f"isolation must be 'auto', 'on' or 'off', not {proposal['value']!r}")
        return proposal["value"]

    @validate("shard")
    def _shard_in_range(self, proposal):
        k, n = proposal["value"]
        if not 1 <= k <= n:
            raise ValueError(f"shard {k}/{n}: K must be between 1 and N")
        return proposal["value"]

    @validate("jobs")
    def _at_least_one_job(self, proposal):
        if proposal["value"] < 1:
            raise ValueError("jobs must be at least 1")
        return proposal["value"]

    @property
    def destination(self) -> Path:
        return Path(self.output or self.root)

    @classmethod
    def option_names(cls) -> list[str]:
        return [name for name in cls.class_trait_names() if name not in Configurable.class_trait_names()]

    def to_json(self) -> dict:
        """The options as JSON values: how each grading process (grading/pipeline/worker.py) receives them."""
        values = {name: getattr(self, name) for name in self.option_names()}
        return json.loads(json.dumps(values, default=str))

    @classmethod
    def from_json(cls, values: dict) -> GradingOptions:
        """The options that `to_json` wrote (names it does not know are left out)."""
        known = set(cls.option_names())
        return cls(**{key: value for key, value in values.items() if key in known})

    def __eq__(self, other) -> bool:
        return isinstance(other, GradingOptions) and self.to_json() == other.to_json()

    __hash__ = None


def parse_shard(text: str | None, environ=os.environ, count: int | None = None) -> tuple[int, int]:
    """The shard ``K/N`` to grade: from ``text``, else from a Slurm job array or a Kubernetes Indexed Job.

    ``SLURM_ARRAY_TASK_ID`` and ``SLURM_ARRAY_TASK_COUNT`` (with ``SLURM_ARRAY_TASK_MIN`` and
    ``_STEP`` when set) choose K of N; ``JOB_COMPLETION_INDEX`` (0-based) does with ``count``,
    which a Kubernetes Job must give (``--shard-count``, its ``completions``). Otherwise 1/1.

    Raises:
        ValueError: for a malformed shard or an index outside 1..N.
    """
    if text:
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
            raise ValueError(f"--shard must be K/N with 1 <= K <= N, not {text!r}")
        return int(match.group(1)), int(match.group(2))
    if environ.get("SLURM_ARRAY_TASK_ID") and environ.get("SLURM_ARRAY_TASK_COUNT"):
        first = int(environ.get("SLURM_ARRAY_TASK_MIN", "0") or 0)
        step = int(environ.get("SLURM_ARRAY_TASK_STEP", "1") or 1)
        k, n = (int(environ["SLURM_ARRAY_TASK_ID"]) - first) // step + 1, int(environ["SLURM_ARRAY_TASK_COUNT"])
    elif environ.get("JOB_COMPLETION_INDEX"):
        if not count:
            raise ValueError("JOB_COMPLETION_INDEX is set: give the number of shards "
                             "(--shard-count, the Job's completions)")
        k, n = int(environ["JOB_COMPLETION_INDEX"]) + 1, count
    else:
        return 1, 1
    if not 1 <= k <= n:
        raise ValueError(f"the scheduler's index gives shard {k}/{n}, outside 1..{n}")
    return k, n


def shard_of(student: str, shards: int) -> int:
    """The shard (1..``shards``) that grades ``student``: stable across runs and machines."""
    return int(hashlib.sha256(student.encode("utf-8")).hexdigest(), 16) % shards + 1
