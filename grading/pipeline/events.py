"""What a grading process (grading/pipeline/worker.py) tells the command (grading/pipeline/jobs.py), typed.

Each event is one JSON line on a descriptor of its own, so nothing a kernel prints can mix into them:
``ready`` once the process has loaded nbgrader, then per student a ``start`` and a ``done`` for each notebook
and a ``finished``; ``crashed`` when grading a student raised. The command adds the two outcomes that no
worker can report itself: `Failed` (the process ended or could not start) and `TimedOut`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields


@dataclass
class Ready:
    """The process has loaded nbgrader and reads requests."""


@dataclass
class Start:
    """Grading of one notebook begins: its time limit starts now."""

    assignment: str


@dataclass
class Done:
    """One notebook was autograded (successfully or not) and given its feedback."""

    assignment: str
    ok: bool  # Whether nbgrader's autograde succeeded.
    log: str = ""  # The end of nbgrader's log.
    error: str = ""  # The end of nbgrader's error.
    scores: dict[str, list[float]] | None = None  # Per task label: [score, max score]; None: no scores.
    feedback_error: str | None = None
    judge_error: str | None = None  # Why the judge failed, when it did: the rest of the tests scored 0.
    # What ended the notebook early, when its kernel died or stopped answering (grading/pipeline/liveness.py:
    # {"kind", "cell", "reason"}): its remaining cells were not run and score 0.
    kernel_stopped: dict | None = None
    # Wall seconds; CPU seconds of the grading process, of the judge and of the student's processes.
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class Crashed:
    """Grading the student raised in the grading process (its traceback's end)."""

    error: str


@dataclass
class Finished:
    """Every notebook of the request is done."""


@dataclass
class Failed:
    """The command's outcome for a notebook whose grading process ended or did not start."""

    reason: str


@dataclass
class TimedOut:
    """The command's outcome for a notebook that ran past the student's time limit."""

    reason: str


Event = Ready | Start | Done | Crashed | Finished
Outcome = Done | Failed | TimedOut  # What the command knows of each notebook at the end.
_KINDS = {cls.__name__.lower(): cls for cls in (Ready, Start, Done, Crashed, Finished)}


def encode(event: Event) -> bytes:
    """One JSON line: the event's kind and its fields."""
    return (json.dumps({"event": type(event).__name__.lower(), **asdict(event)}) + "\n").encode()


def decode(line: bytes | str) -> Event:
    """The event of one line that `encode` wrote.

    Raises:
        ValueError: for a line that is no event (the grading process is then treated as ended).
    """
    try:
        values = json.loads(line)
        kind = _KINDS[values.pop("event")]
        names = {f.name for f in fields(kind)}
        return kind(**{key: value for key, value in values.items() if key in names})
    except (KeyError, TypeError, AttributeError, ValueError) as error:  # JSONDecodeError and UnicodeDecodeError too.
        raise ValueError(f"not a grading event: {str(line)[:200]!r}") from error
