"""The instructor's grading command: grade a folder of submissions, export grades, print a table.

    python -m grading.grade FOLDER [--jobs N] [--shard K/N] [--output DIR] [--force]
                                   [--assignment ID ...] [--csv grades.csv] [--students mapping.csv]
                                   [--cell-timeout S] [--student-timeout S] [--memory-limit-gb G]
                                   [--max-processes N] [--cpus-per-student C] [--max-notebook-mb M]
                                   [--prepare-timeout S] [--sandbox auto|on|off] [--no-feedback]

FOLDER (or a .zip of one, read without extracting links: grading/pipeline/zipped.py) may use nbgrader's
layout (``FOLDER/<student>/<assignment>/<file>.ipynb``), or hold one folder per student
(``FOLDER/<student>/<file>.ipynb``), or be flat with the student id before the assignment id in
each file name (``FOLDER/alice_01_eviction_as_ranking.ipynb``) or given by a ``--students`` CSV of
``file,student_id`` rows. File names as Colab and LMSs save them ("Copy of
01_eviction_as_ranking.ipynb", "01_eviction_as_ranking (1).ipynb") are recognized
(grading/pipeline/collect.py). Submitted files are read, never followed: a notebook that is a link, a FIFO,
a device or a hard link to another student's file is refused, naming it. Each notebook is read,
repaired, placed and scanned in a process of its own with a wall-clock limit (grading/pipeline/prepare.py).

``--jobs N`` students are graded at once (default: one per CPU core), each kernel with one
torch/BLAS/OpenMP thread. Each job keeps one grading process (grading/pipeline/worker.py) that runs nbgrader
in-process for all the notebooks of its students, with a wall-clock limit per notebook, and writes
a gradebook file of its own; the files are merged at the end (grading/pipeline/merge.py). ``--shard K/N``
grades a stable 1/N of the students (by a hash of the student id; Slurm job arrays and Kubernetes
Indexed Jobs choose K themselves) into ``OUTPUT/grading-shards/K-of-N/``; ``python -m
grading.pipeline.merge OUTPUT`` then merges the shards. A student whose files did not change since they
were graded is skipped (by content hash), unless ``--force``.

Every student's kernels run in a bubblewrap sandbox of their own (grading/isolation/sandbox.py: no network,
no view of the course's files or of other students, a uid per student when the grader is root),
forked by a warm process that imported their libraries once (grading/isolation/zygote.py), with the memory,
processes and CPU of the whole process tree limited by a cgroup (grading/isolation/limits.py): every student
gets an equal share of a busy machine, and a notebook that hits a time limit while its kernel
waited for a CPU longer than it ran is graded again, alone. Every test cell runs in a judge process
of the grader's against the student's kernel, which only answers its requests (grading/judge/), so
the kernel cannot change a check or its outcome; the judge's CPU counts as the student's. Code
that tampers with grading is flagged for a manual look (grading/isolation/scan.py). Whatever one submission
does or contains, the others are graded, what the batch made is removed (grading/pipeline/cleanup.py) and
the CSV is written: a failure becomes that submission's status, ``needs a manual look: <reason>``.
Students whose solutions are the same are flagged at the merge (grading/pipeline/copies.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from traitlets import Bool, Float, Int, List

from grading.config import ROOT
from grading.pipeline.collect import read_mapping
from grading.pipeline.options import GradingOptions, parse_shard
from grading.pipeline.report import format_table
from grading.pipeline.run import grade

__all__ = ["main", "options_from"]


def _add_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per option that `GradingOptions` tags with ``flag``, with the option's help and default.

    A flag's default is None, so that an option not on the command line keeps nbgrader_config.py's value.
    """
    for name, trait in GradingOptions.class_traits(flag=lambda flag: flag is not None).items():
        flag, default = trait.metadata["flag"], trait.default_value
        shown = "" if default in (None, [], ()) or isinstance(trait, Bool) or "default:" in trait.help \
            else f" (default: {default})"
        if isinstance(trait, Bool):
            negated = flag.startswith("--no-")
            parser.add_argument(flag, dest=name, action="store_false" if negated else "store_true", default=None,
                                help=f"do not {trait.help}" if negated else trait.help)
        elif isinstance(trait, List):
            parser.add_argument(flag, dest=name, action="append", choices=trait.metadata.get("choices"),
                                default=None, help=trait.help)
        else:
            kind = int if isinstance(trait, Int) else float if isinstance(trait, Float) else (
                str if trait.metadata.get("choices") else Path)
            parser.add_argument(flag, dest=name, type=kind, choices=trait.metadata.get("choices"), default=None,
                                help=trait.help + shown)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m grading.grade", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="folder of submissions, or a .zip of one")
    _add_flags(parser)
    parser.add_argument("--shard", default=None, metavar="K/N",
                        help="grade the K-th of N stable parts of the students (default: from SLURM_ARRAY_TASK_ID "
                             "and _COUNT, or JOB_COMPLETION_INDEX with --shard-count; else 1/1)")
    parser.add_argument("--shard-count", type=int, default=None,
                        help="the number of shards, with JOB_COMPLETION_INDEX (a Kubernetes Indexed Job)")
    parser.add_argument("--students", type=Path, default=None,
                        help="CSV of 'file,student_id' rows naming the student of each file (flat folders)")
    return parser


def options_from(args: argparse.Namespace, root: Path = ROOT) -> GradingOptions:
    """The options: nbgrader_config.py's ``c.GradingOptions`` of the course at ``root``, then the command line's.

    Raises:
        OSError, ValueError: for an unreadable ``--students`` file, a malformed shard or an invalid option.
    """
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config() \
        if (root / "nbgrader_config.py").exists() else None
    given = {name: value for name in GradingOptions.class_traits(flag=lambda flag: flag is not None)
             if (value := getattr(args, name)) is not None}
    for name in ("output", "folder"):
        if given.get(name) is not None:
            given[name] = Path(given[name]).resolve()
    return GradingOptions(config=config, folder=args.folder.resolve(), root=root,
                          mapping=read_mapping(args.students) if args.students else None,
                          shard=parse_shard(args.shard, count=args.shard_count), **given)


def main(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.folder.is_dir() and not (args.folder.is_file() and args.folder.suffix.lower() == ".zip"):
        parser.error(f"{args.folder} is neither a folder nor a .zip file")
    try:
        options = options_from(args)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    rows = grade(options)
    print()
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
