"""The grading sandbox's plan, its probe, and what the grading command does when it cannot be used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grading import grade, sandbox
from grading.config import ROOT

from conftest import sandbox_problem

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")
_PROBLEM = sandbox_problem()
needs_sandbox = pytest.mark.skipif(_PROBLEM is not None, reason=str(_PROBLEM))


def test_plan_hides_the_course_and_keeps_the_environment(tmp_path):
    plan = sandbox.plan_for(ROOT, tmp_path)
    assert str(ROOT) in plan["hidden"] and str(tmp_path.resolve()) in plan["hidden"] and "/tmp" in plan["hidden"]
    assert str(Path(sys.prefix).resolve()) in plan["kept"] and str(ROOT / "course") in plan["kept"]
    assert plan["uid"] >= 200_000 and plan["uid"] != sandbox.plan_for(ROOT)["uid"], "a fresh uid for every run"


@needs_sandbox
def test_a_sandboxed_python_sees_only_what_it_needs(tmp_path):
    (tmp_path / "secret.txt").write_text("answers")
    plan = sandbox.plan_for(ROOT, tmp_path)
    assert sandbox.probe(plan) is None
    plan_file = tmp_path.parent / f"{tmp_path.name}-plan.json"
    plan_file.write_text(json.dumps(plan))
    check = (
        "import json, os, course\n"
        f"paths = {[str(ROOT / 'source'), str(ROOT / 'solutions'), str(ROOT / 'gradebook.db'), str(tmp_path / 'secret.txt')]!r}\n"
        "print(json.dumps({'uid': os.getuid(), 'visible': [p for p in paths if os.path.exists(p)],"
        " 'course': course.__file__, 'home': os.environ['HOME'], 'keys': sorted(os.environ)}))\n"
    )
    run = subprocess.run([sys.executable, str(Path(sandbox.__file__)), str(plan_file), "--", sys.executable, "-c", check],
                         capture_output=True, text=True, timeout=60, env={**os.environ, "GRADER_SECRET": "x"})
    plan_file.unlink()
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen["uid"] == plan["uid"] and seen["visible"] == []
    assert seen["course"].startswith(str(ROOT / "course")) and seen["home"] == "/tmp/course-sandbox"
    assert "GRADER_SECRET" not in seen["keys"], "the grader's environment is not passed on"


@needs_root
def test_no_process_of_the_sandbox_uid_survives(tmp_path):
    uid = sandbox.plan_for(ROOT)["uid"]
    sleeper = subprocess.Popen(["/bin/sleep", "30"], user=uid, start_new_session=True)
    assert sandbox.kill_sandbox_processes(uid) == 1
    assert sleeper.wait(timeout=10) == -9


def test_without_a_working_sandbox_on_refuses_and_auto_warns(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "probe", lambda plan: "the grader is not running as root")
    with pytest.raises(RuntimeError, match="the grading sandbox does not work here: the grader is not running as root"):
        grade._sandbox_plan(ROOT, tmp_path, "on", log=lambda line: None)
    lines = []
    assert grade._sandbox_plan(ROOT, tmp_path, "auto", log=lines.append) is None
    assert lines[0].startswith("WARNING: grading without isolation: the grader is not running as root")
    with pytest.raises(ValueError, match="isolation must be"):
        grade._sandbox_plan(ROOT, tmp_path, "maybe", log=lines.append)
