"""The grading command's options are declared once (grading/pipeline/options.py): nbgrader_config.py sets them,
the command line overrides them, every grading process receives them whole; its events are typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grading.grade import _parser, options_from
from grading.pipeline.collect import Submission
from grading.pipeline.events import Crashed, Done, Failed, Finished, Ready, Start, TimedOut, decode, encode
from grading.pipeline.jobs import status_of
from grading.pipeline.options import GradingOptions


def _course(tmp_path: Path, settings: str) -> Path:
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n" + settings)
    return tmp_path


def test_every_flag_is_an_option_with_its_help_and_default():
    flagged = GradingOptions.class_traits(flag=lambda flag: flag is not None)
    assert {"memory_limit_gb", "cpus_per_student", "isolation", "jobs", "student_timeout"} <= set(flagged)
    text = _parser().format_help()
    for trait in flagged.values():
        assert trait.metadata["flag"] in text and trait.help, trait.name
    assert "(default: 8.0)" in text and "(default: 1200.0)" in text


def test_nbgrader_config_sets_an_option_and_the_command_line_overrides_it(tmp_path):
    course = _course(tmp_path, "c.GradingOptions.memory_limit_gb = 2.5\nc.GradingOptions.max_processes = 64\n")
    options = options_from(_parser().parse_args([str(tmp_path)]), course)
    assert (options.memory_limit_gb, options.max_processes, options.cpus_per_student) == (2.5, 64, 1.0)
    options = options_from(_parser().parse_args([str(tmp_path), "--memory-limit-gb", "4", "--max-processes", "0",
                                                 "--sandbox", "off", "--no-feedback"]), course)
    assert (options.memory_limit_gb, options.max_processes, options.isolation, options.feedback) == \
        (4.0, None, "off", False)


def test_an_option_out_of_range_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="isolation must be"):
        GradingOptions(folder=tmp_path, isolation="maybe")
    with pytest.raises(ValueError, match="K must be between 1 and N"):
        GradingOptions(folder=tmp_path, shard=(4, 3))
    with pytest.raises(ValueError, match="jobs must be at least 1"):
        GradingOptions(folder=tmp_path, jobs=0)
    with pytest.raises(SystemExit):
        _parser().parse_args([str(tmp_path), "--sandbox", "maybe"])


def test_options_travel_whole_as_json(tmp_path):
    options = GradingOptions(folder=tmp_path, output=tmp_path / "out", shard=(2, 3), jobs=3, cell_timeout=30,
                             assignments=["03_lru_lfu"], mapping={"a.ipynb": "alice"}, judge=False)
    again = GradingOptions.from_json(json.loads(json.dumps(options.to_json())))
    assert again == options and again.output == tmp_path / "out" and again.shard == (2, 3)
    assert GradingOptions.from_json({**options.to_json(), "unknown": 1}) == options


@pytest.mark.parametrize("event", [Ready(), Start("01_eviction_as_ranking"), Finished(), Crashed("Traceback ..."),
                                   Done("01_eviction_as_ranking", ok=True, scores={"1.1": [2.0, 2.0]},
                                        seconds={"autograde": 1.5})])
def test_events_cross_the_pipe_as_they_were(event):
    line = encode(event)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert decode(line) == event


@pytest.mark.parametrize("line", [b"", b"{}", b'{"event": "unknown"}', b'{"event": "start"}', b"[1, 2]", b"\xff"])
def test_a_line_that_is_no_event_is_refused(line):
    with pytest.raises(ValueError, match="not a grading event"):
        decode(line)


def test_each_outcome_has_its_status(tmp_path):
    submission = Submission("alice", "01_eviction_as_ranking", tmp_path / "a.ipynb", [])
    assert status_of(submission, TimedOut("x"), 60).startswith("timed out after 60 s")
    assert status_of(submission, Failed("it broke"), 60) == "needs a manual look: grading failed: it broke"
    assert status_of(submission, Done("01", ok=True), 60) == "graded"
    failed = Done("01", ok=False, error="Traceback\nValueError: bad\n")
    assert status_of(submission, failed, 60) == "needs a manual look: grading failed: ValueError: bad"
    judged = Done("01", ok=True, judge_error="the judge ended")
    assert status_of(submission, judged, 60).startswith("needs a manual look; the judge failed")


def test_a_kernel_that_stopped_is_named_with_its_cell_and_a_time_limit_stop_starts_timed_out(tmp_path):
    submission = Submission("alice", "01_eviction_as_ranking", tmp_path / "a.ipynb", ["uses os.kill"])
    died = Done("01", ok=True, log="[ERROR] Timeout waiting for execute reply (20s).",
                kernel_stopped={"kind": "died", "cell": "cell 12 (task1_3_quotas)",
                                "reason": "the kernel died in cell 12 (task1_3_quotas)"})
    assert status_of(submission, died, 60) == (
        "needs a manual look: the kernel died in cell 12 (task1_3_quotas); the cells before it keep their points, the "
        "rest were not run and score 0; a cell ran past the time limit and was interrupted; uses os.kill")
    ignored = Done("01", ok=True, log="[ERROR] Timeout waiting for execute reply (20s).",
                   kernel_stopped={"kind": "interrupt", "cell": "cell 9", "reason": "a cell ignored the interrupt: …"})
    assert status_of(submission, ignored, 60) == (
        "timed out: a cell ignored the interrupt: …; the cells before it keep their points, the rest were not run and "
        "score 0 (needs a manual look); uses os.kill")
    assert decode(encode(died)) == died


def test_loading_the_course_s_nbgrader_config_imports_neither_torch_nor_numpy():
    """Every nbgrader command and every grading process loads nbgrader_config.py: importing torch there cost each
    of them about 1.2 s of CPU (the grading processes and nbgrader's steps need neither; the judge imports its own)."""
    import subprocess
    import sys

    from grading.config import ROOT

    probe = ("import sys; from traitlets.config.loader import PyFileConfigLoader; "
             "PyFileConfigLoader('nbgrader_config.py', path=sys.argv[1]).load_config(); "
             "print(sorted({'torch', 'numpy'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe, str(ROOT)], capture_output=True, text=True, cwd=ROOT,
                          check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_nbgrader_config_can_turn_the_judge_off(tmp_path):
    # The benchmark measures what the judge costs this way (bench/bench_autograde.py: `without_the_judge`).
    assert options_from(_parser().parse_args([str(tmp_path)]), _course(tmp_path, "c.GradingOptions.judge = False\n")
                        ).judge is False
    (tmp_path / "other").mkdir()
    assert options_from(_parser().parse_args([str(tmp_path)]), _course(tmp_path / "other", "")).judge is True
