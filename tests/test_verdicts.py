"""The verdicts tool (grading/authoring/verdicts.py) finds every verdict that a change of the tests moves.

A stand-in harness plays the notebook: its answers and results are made up here, so that the test runs
in milliseconds; tests/test_mutants.py grades the real answers with the real harness.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from grading.authoring import verdicts
from grading.authoring.harness import Result
from grading.config import ASSIGNMENTS

ASSIGNMENT = ASSIGNMENTS[0]


class StandInHarness:
    """Fails the cell that ``failing`` names for an answer whose source is "wrong" (with ``message``)."""

    def __init__(self, failing: str, message: str) -> None:
        self.failing, self.message = failing, message
        self.tasks = {"task_a": SimpleNamespace(solution="right")}

    def results(self, grade_id: str, answer: str, visible_only: bool = False) -> list[Result]:
        return [Result(cell, not (answer == "wrong" and cell == self.failing),
                       self.message if answer == "wrong" and cell == self.failing else "", 1.0)
                for cell in ("test_a_1", "test_a_2")]

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


@pytest.fixture
def answers(monkeypatch):
    """One reference, one wrong answer, one alternative for the task "task_a"."""
    import grading.judge.compare as compare

    monkeypatch.setattr(compare, "answers_of", lambda assignment, tasks: [
        ("reference", "task_a", "reference", "right"), ("wrong", "task_a", "off by one", "wrong"),
        ("alternative", "task_a", "other style", "right")])


@pytest.mark.parametrize("message, case", [("AssertionError: insert on random case 14", 14),
                                           ("(t1, t2) at step 3 of random trace 7", 7),
                                           ("allocator.num_free (case 1, op 11, 5 blocks of 2) returned 0", 1),
                                           ("AssertionError: insert(2) into [0, 1] returned 0", None)])
def test_the_random_case_of_a_failure_is_read_from_its_message(message, case):
    assert verdicts.random_case(message) == case


def test_check_passes_when_no_verdict_moved_and_fails_naming_the_answer_that_moved(tmp_path, answers, capsys):
    file = tmp_path / "verdicts.json"
    before = StandInHarness("test_a_2", "AssertionError: hit on random case 41")
    assert verdicts.main(["record", str(file), ASSIGNMENT], open_harness=lambda a: before) == 0
    assert "test_a_2" in capsys.readouterr().out.split("recorded")[1]  # The latest random case it failed at...
    assert verdicts.latest_random_cases(json.loads(file.read_text())) == {"test_a_2": 41}
    # ...may move when the loop shrinks: the verdicts did not.
    same = StandInHarness("test_a_2", "AssertionError: hit on random case 3")
    assert verdicts.main(["check", str(file), ASSIGNMENT], open_harness=lambda a: same) == 0
    # The wrong answer now fails another cell: a score moved.
    other = StandInHarness("test_a_1", "AssertionError: wrong")
    assert verdicts.main(["check", str(file), ASSIGNMENT], open_harness=lambda a: other) == 1
    out = capsys.readouterr().out
    assert f"{ASSIGNMENT}|wrong|task_a|off by one" in out and "1 moved" in out
    # A wrong answer that no longer fails anything moves too.
    passes = StandInHarness("no such cell", "")
    assert verdicts.main(["check", str(file), ASSIGNMENT], open_harness=lambda a: passes) == 1


def test_check_without_a_recording_says_so(tmp_path):
    with pytest.raises(SystemExit):
        verdicts.main(["check", str(tmp_path / "missing.json")])
