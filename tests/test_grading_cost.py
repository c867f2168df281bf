"""What grading costs, counted honestly, and the cuts that must not change a result.

- The cgroup accounting that bench/bench_autograde.py and the grading command count with sees
  every process of a sandboxed child, a detached grandchild too (getrusage does not).
- Each student's cgroup has an equal CPU weight and a quota that holds for the whole process tree;
  the student's judge counts in it (CPU only, on cgroup v1).
- A notebook that hit a time limit is graded again only when its kernel waited for a CPU longer
  than it ran.
- The scratch course and the sandbox probe are made once per machine and kept by content hash.
- nbgrader's metadata check runs once per distinct metadata and still refuses invalid metadata.
- Feedback's exporter gives images their alternative text and compiles its templates once; it renders a
  markdown cell once per process (the same HTML as nbconvert's), except one with attachments.
- The worker's gradebooks share one database engine, so that each query compiles once.
- The benchmark's report prints every figure the README's grading rows need, the judge's share too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from conftest import sandbox_problem

import grading.pipeline.run
from grading.config import ASSIGNMENTS
from grading.isolation import limits, probe, sandbox
from grading.pipeline import cache
from grading.pipeline.collect import Submission
from grading.pipeline.options import GradingOptions
from grading.pipeline.run import _retry_starved, _Run, starved

ROOT_UID = sandbox.FIRST_UID - 1 if os.geteuid() == 0 else None

_BURN = r'''
import json, os, resource, time
def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
read, write = os.pipe()
if os.fork() == 0:
    os.setsid()  # A grandchild in a session of its own, whose parent does not wait for it.
    if os.fork():
        os._exit(0)
    os.write(write, str(burn(1.5)).encode())
    os._exit(0)
os.close(write)
os.wait()
mine = burn(2.5)
theirs = float(os.read(read, 100))
while os.read(read, 100):
    pass
print(json.dumps({"mine": burn(0), "theirs": theirs}))
'''


@pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))
def test_the_accounting_counts_every_process_of_a_sandboxed_child_within_5_percent(tmp_path):
    group = limits.accounting_group(f"course-test-{os.getpid()}")
    if group is None:
        pytest.skip("no cgroup that counts CPU time can be made here")
    try:
        plan = sandbox.Plan(sandbox=True, socket_dir=str(tmp_path), kept=sandbox.kept_folders(), uid=ROOT_UID)
        plan_file = plan.write(tmp_path / "plan.json")
        before = limits.cpu_seconds([group])
        run = subprocess.run([sys.executable, sandbox.__file__, str(plan_file), "--", sys.executable, "-c", _BURN],
                             capture_output=True, text=True, timeout=300, preexec_fn=lambda: limits.join(group))
        counted = limits.cpu_seconds([group]) - before
    finally:
        limits.kill_and_remove([str(group)])
    assert run.returncode == 0, run.stderr
    reported = json.loads(run.stdout)
    burned = reported["mine"] + reported["theirs"]  # What the two processes counted for themselves.
    assert burned >= 4.0
    assert abs(counted - burned) <= 0.05 * burned, (counted, reported)


def test_every_student_gets_the_same_cpu_weight_and_a_quota_that_holds_for_the_whole_tree():
    run = limits.setup(f"course-grading-test-{os.getpid()}")
    if run.kind == "rlimits" or not run.cpu:
        pytest.skip(run.warning)
    try:
        first = limits.student_cgroups(run, "1", None, None, cpus=0.2)
        second = limits.student_cgroups(run, "2", None, None, cpus=0.2)
        weights = [_cpu_file(folders, ("cpu.shares", "cpu.weight")) for folders in (first, second)]
        assert weights[0] == weights[1] and weights[0] in ("1024", "100")
        # Four processes that each want a quarter of a second of CPU, against a fifth of a core.
        spin = ("import os, time\nfor _ in range(3):\n    if os.fork() == 0:\n        break\n"
                "while time.process_time() < 0.25:\n    pass\n")
        subprocess.run([sys.executable, "-c", spin], timeout=60, check=True,
                       preexec_fn=lambda: [limits.join(folder) for folder in first])
        stat = dict(line.split() for line in _cpu_file(first, ("cpu.stat",)).splitlines())
        assert int(stat["nr_throttled"]) > 0, stat  # The kernel held the tree back to its quota.
        assert limits.throttled_seconds(first) > 0, stat  # And `starved` reads how long it held it back.
        assert limits.cpu_seconds(first) > 0
    finally:
        limits.teardown(run)


def test_a_student_s_processes_stay_on_their_job_s_cores_whatever_affinity_they_ask_for():
    """Red team 2026-12-07: with --jobs 2 each job runs on a core of its own, but a student's helper could widen its
    affinity to the other job's core and spin there, so that a slow but correct answer of the student graded there ran
    past its time limit (20 of 22 points). A cpuset confines the student's tree to the job's core."""
    run = limits.setup(f"course-grading-test-{os.getpid()}")
    if not run.cpuset:
        pytest.skip("no cgroup v1 cpuset hierarchy here")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one core: nothing to confine to")
    try:
        core = min(os.sched_getaffinity(0))
        folders = limits.student_cgroups(run, "1", None, None, cpus=1.0, cores={core})
        widen = ("import os\nos.sched_setaffinity(0, range(os.cpu_count()))\n"
                 "print(sorted(os.sched_getaffinity(0)))\n")
        shown = subprocess.run([sys.executable, "-c", widen], timeout=60, check=True, capture_output=True, text=True,
                               preexec_fn=lambda: [limits.join(folder) for folder in folders]).stdout
        assert shown.strip() == f"[{core}]", shown
        # Without cores, a student's cpuset is the run's: the machine's cores.
        everywhere = limits.student_cgroups(run, "2", None, None, cpus=1.0)
        shown = subprocess.run([sys.executable, "-c", widen], timeout=60, check=True, capture_output=True, text=True,
                               preexec_fn=lambda: [limits.join(folder) for folder in everywhere]).stdout
        assert len(json.loads(shown)) > 1, shown
    finally:
        limits.teardown(run)


def test_the_judge_counts_in_its_students_cpu_cgroup_and_stays_out_of_its_memory_limit_on_v1():
    run = limits.setup(f"course-grading-test-{os.getpid()}")
    if run.kind == "rlimits" or not run.cpu:
        pytest.skip(run.warning)
    burn = "import sys, time\nsys.stdin.readline()\nend = time.process_time() + 1.0\n" \
           "while time.process_time() < end:\n    pass\n"
    try:
        folders = limits.student_cgroups(run, "1", 1 << 30, 64, cpus=1.0)
        judge = subprocess.Popen([sys.executable, "-c", burn], stdin=subprocess.PIPE)
        assert limits.join_cpu(folders, judge.pid)  # As grading/pipeline/worker.py does with the student's judge.
        joined = [folder for folder in folders if judge.pid in limits.processes(Path(folder))]
        kinds = {name for folder in joined for name in os.listdir(folder)}
        before = limits.cpu_seconds(folders)
        judge.communicate(b"go\n", timeout=60)
        counted = limits.cpu_seconds(folders) - before
    finally:
        limits.teardown(run)
    assert 0.95 <= counted <= 1.25, counted
    if run.kind == "cgroup v1":
        assert "cpuacct.usage" in kinds and "cpu.shares" in kinds, joined
        assert "memory.limit_in_bytes" not in kinds and "pids.max" not in kinds, joined
    else:
        assert joined == folders


def _cpu_file(folders: list[str], names: tuple[str, ...]) -> str:
    for folder in folders:
        for name in names:
            path = Path(folder) / name
            if path.exists() and (name != "cpu.stat" or "nr_throttled" in path.read_text()):
                return path.read_text().strip()
    raise AssertionError(f"none of {names} in {folders}")


LIMIT = "timed out: a cell ignored the interrupt (0 points; needs a manual look)"
INTERRUPTED = "graded; a cell ran past the time limit and was interrupted"


@pytest.mark.parametrize("status, seconds, again", [
    (LIMIT, {"kernel ran": 2, "kernel waited": 30, "cells cpu": 2.5, "autograde": 40}, True),
    (INTERRUPTED, {"kernel ran": 2, "kernel waited": 35}, True),  # No cgroup counted the student's CPU.
    (INTERRUPTED, {"kernel ran": 20, "kernel waited": 3, "cells cpu": 20, "autograde": 40}, False),
    (LIMIT, {"kernel ran": 0.1, "kernel waited": 0.0, "cells cpu": 0.2, "autograde": 60}, False),
    (LIMIT, {"kernel ran": 0.5, "kernel waited": 15, "cells cpu": 20, "kernel lived": 30, "autograde": 60}, False),
    # The student's judge shares the quota: its CPU is the student's own.
    (LIMIT, {"kernel ran": 0.5, "kernel waited": 15, "cells cpu": 4, "judge cpu": 16, "kernel lived": 30}, False),
    # The student's own bursts used the quota up (red team 2026-12-07: 4 children spinning 300 ms of every 1.5 s, 5.2
    # CPU-s in 24.6 s): that wait is the student's own, and the notebook is not graded again.
    (LIMIT, {"kernel ran": 0.38, "kernel waited": 1.49, "cells throttled": 1.3, "cells cpu": 5.2,
             "kernel lived": 24.6}, False),
    # The kernel's main thread made easy to crowd out (SCHED_IDLE, a nice value, or helpers of the student's own on
    # its core, which the quota does not throttle): it waited longer than it ran, but a few seconds of a 23-second
    # life, so the wait did not make it hit its limit (red team 2026-12-07).
    (LIMIT, {"kernel ran": 0.76, "kernel waited": 3.80, "cells throttled": 0.0, "cells cpu": 4.12,
             "kernel lived": 23.6}, False),
    (LIMIT, {"kernel ran": 0.70, "kernel waited": 8.02, "cells throttled": 0.0, "cells cpu": 8.27,
             "kernel lived": 21.1}, False),
    # Crowded out by others, though the quota held the student back a little too.
    (LIMIT, {"kernel ran": 2, "kernel waited": 30, "cells throttled": 0.5, "cells cpu": 2.5, "autograde": 40}, True),
    # A long notebook crowded out in one cell: half of the 20-second limit its status names is enough.
    (LIMIT + ": cell 9 ran past its 20 s time limit", {"kernel ran": 5, "kernel waited": 14, "cells cpu": 6,
                                                         "kernel lived": 300}, True),
    ("graded", {"kernel ran": 2, "kernel waited": 9, "cells cpu": 2.5, "autograde": 40}, False),
    ("timed out after 60 s (0 points; needs a manual look)", {}, False),
])
def test_only_a_notebook_crowded_out_by_others_is_graded_again(status, seconds, again):
    """A loop (it ran), a sleeper (it neither ran nor waited) and a student whose own processes kept
    its CPU quota busy keep their result; a kernel crowded out by others is graded again."""
    assert starved({"status": status, "seconds": seconds}, cpus=1.0) is again


def test_the_scratch_course_is_generated_once_per_machine_and_content(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_GRADING_CACHE", str(tmp_path / "cache"))
    # The scratch courses are made in the test's own folder, not the host's /tmp, where they would stay.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    root = tmp_path / "root"
    (root / "source" / "a1").mkdir(parents=True)
    (root / "source" / "a1" / "a1.ipynb").write_text("{}")
    (root / "nbgrader_config.py").write_text("c = get_config()\n")
    made = []

    def generate(course: Path) -> None:
        made.append(course)
        (course / "release" / "a1").mkdir(parents=True)
        (course / "release" / "a1" / "a1.ipynb").write_text("release")
        (course / "gradebook.db").write_text("gradebook")

    courses = [cache.scratch_course(root, ["a1"], generate) for _ in range(2)]
    assert len(made) == 1 and courses[0] != courses[1]
    for course in courses:
        assert (course / "release" / "a1" / "a1.ipynb").read_text() == "release"
        assert (course / "gradebook.db").read_text() == "gradebook" and (course / "source" / "a1").is_symlink()
    (root / "source" / "a1" / "a1.ipynb").write_text('{"changed": 1}')
    cache.scratch_course(root, ["a1"], generate)
    assert len(made) == 2, "a changed source notebook is generated again"
    assert not list((tmp_path / "cache").glob("building-*")), "nothing half-built is left"


def test_a_probe_that_passed_is_not_run_again_and_paths_to_hide_are_checked_every_time(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_GRADING_CACHE", str(tmp_path / "cache"))
    probes = []
    monkeypatch.setattr(probe, "probe", lambda plan, secrets: probes.append(secrets))
    plan = sandbox.Plan(sandbox=True, socket_dir=str(tmp_path), kept=[str(tmp_path / "venv")], uid=ROOT_UID)
    assert cache.probe_once(plan, [str(tmp_path / "submissions")]) is None
    assert cache.probe_once(plan, [str(tmp_path / "other")]) is None
    assert len(probes) == 1
    inside = str(tmp_path / "venv" / "submissions")
    assert cache.probe_once(plan, [inside]) == f"the sandbox would show {[inside]}"
    assert cache.probe_once(plan, ["/usr/share/submissions"]) is not None, "the system's folders are shown too"
    plan.tmpfs_bytes *= 2
    cache.probe_once(plan, [])
    assert len(probes) == 2, "another setting is probed again"


def _metadata_notebook(points: int | None) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    meta = {"grade": True, "solution": False, "locked": True, "grade_id": "test_a", "schema_version": 3}
    if points is not None:
        meta["points"] = points
    notebook.cells.append(nbformat.v4.new_code_cell("pass", metadata={"nbgrader": meta}))
    return notebook


def test_the_metadata_check_runs_once_per_distinct_metadata_and_still_refuses_invalid_metadata(monkeypatch):
    from nbgrader.nbgraderformat import MetadataValidator, ValidationError

    from grading.pipeline.steps import CheckCellMetadata

    calls = []
    original = MetadataValidator.validate_nb
    monkeypatch.setattr(MetadataValidator, "validate_nb", lambda self, nb: calls.append(1) or original(self, nb))
    check = CheckCellMetadata()
    for _ in range(3):
        check.preprocess(_metadata_notebook(points=2), {})
    assert len(calls) <= 1, "the same metadata is validated once per process"
    for _ in range(2):
        with pytest.raises(ValidationError):
            check.preprocess(_metadata_notebook(points=None), {})  # A graded cell without points.


def test_feedback_images_get_their_alternative_text_and_templates_compile_once():
    from nbconvert.exporters import HTMLExporter
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    from grading.pipeline.feedback import MISSING_ALT, FeedbackExporter

    pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="
    notebook = new_notebook(cells=[
        new_code_cell("plot()", outputs=[new_output("display_data", data={"image/png": pixel})]),
        new_code_cell("plot()", outputs=[new_output("display_data", data={"image/png": pixel},
                                                    metadata={"image/png": {"alt": "a cache curve"}})])])
    exporters = [FeedbackExporter(template_name="classic") for _ in range(2)]
    html = exporters[0].from_notebook_node(notebook)[0]
    assert f'alt="{MISSING_ALT}"' in html and 'alt="a cache curve"' in html
    assert exporters[0].environment is exporters[1].environment, "one template environment per process"
    plain = HTMLExporter(template_name="classic").from_notebook_node(notebook)[0]
    assert plain.count("<img") == html.count("<img") == 2


def test_feedback_renders_a_markdown_cell_once_as_nbconvert_does_except_one_with_attachments(monkeypatch):
    from nbconvert.exporters import HTMLExporter
    from nbformat.v4 import new_markdown_cell, new_notebook

    from grading.pipeline.feedback import FeedbackExporter

    pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="
    cells = [new_markdown_cell("## 驱逐 $x^2$\n\nThe *victim* is `argmin`.\n\n| a | b |\n|---|---|\n| 1 | 2 |"),
             new_markdown_cell("![a curve](attachment:curve.png)", attachments={"curve.png": {"image/png": pixel}})]
    rendered = []
    original = HTMLExporter.markdown2html
    monkeypatch.setattr(HTMLExporter, "markdown2html", lambda self, context, source: rendered.append(source)
                        or original(self, context, source))
    FeedbackExporter._markdown.clear()
    pages = [FeedbackExporter(template_name="classic").from_notebook_node(new_notebook(cells=cells))[0]
             for _ in range(3)]
    assert rendered.count(cells[0].source) == 1, "a markdown cell without attachments is rendered once"
    assert rendered.count(cells[1].source) == 3, "a cell with attachments is rendered each time"
    assert pages[0] == pages[1] == pages[2], "the remembered HTML is the HTML rendered the first time"
    for fragment in ("<em>victim</em>", "<code>argmin</code>", "<td>1</td>", f"data:image/png;base64,{pixel}"):
        assert fragment in pages[0], fragment


def test_the_workers_gradebooks_share_one_engine_and_still_read_and_write(tmp_path, monkeypatch):
    from nbgrader import api
    from nbgrader.api import Gradebook

    from grading.pipeline import worker

    monkeypatch.setattr(api, "create_engine", api.create_engine)  # Undone after the test.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")  # nbgrader's alembic.
    worker._one_engine_per_database()
    worker._one_engine_per_database()  # Twice: the second call keeps the first cache.
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as first:
        first.add_student("s1")
    with Gradebook(url) as second:
        assert second.engine is first.engine
        assert [student.id for student in second.students] == ["s1"]
        second.add_student("s2")
    with Gradebook(f"sqlite:///{tmp_path / 'other.db'}") as other:
        assert other.engine is not first.engine and other.students == []


def test_a_starved_notebook_is_graded_again_alone_and_its_status_says_so(monkeypatch, tmp_path):
    graded_again = []

    def grade_student(run, student, submissions, digest):
        graded_again.append((student, [s.assignment for s in submissions]))
        return {"hash": digest, "assignments": {s.assignment: {"status": "graded", "tasks": {"1.1": [2, 2]}}
                                                for s in submissions}}

    monkeypatch.setattr(grading.pipeline.run, "_grade_student", grade_student)
    crowded = {"status": LIMIT, "tasks": {}, "seconds": {"kernel ran": 1.0, "kernel waited": 5.0}}
    fine = {"status": "graded", "tasks": {"1.1": [2, 2]}, "seconds": {"kernel ran": 1.0, "kernel waited": 5.0}}
    records = {"a": {"hash": "h", "assignments": {"01": dict(crowded), "02": dict(fine)}},
               "b": {"hash": "h", "assignments": {"01": dict(fine)}}}
    todo = {student: [Submission(student, a, tmp_path, []) for a in record["assignments"]]
            for student, record in records.items()}
    lines: list[str] = []
    run = _Run(GradingOptions(folder=tmp_path), tmp_path, True, None, tmp_path, {}, None, lines.append)
    _retry_starved(run, todo, records, lines.append)
    assert graded_again == [("a", ["01"])]
    assert records["a"]["assignments"]["01"]["status"].startswith("graded; graded again alone")
    assert records["a"]["assignments"]["02"] == fine and records["b"]["assignments"]["01"] == fine
    assert any("grading it again, alone" in line for line in lines)


def test_the_benchmark_grades_once_with_each_code_before_measuring_it(tmp_path, monkeypatch):
    """Each code keeps a scratch course of its own in the cache (under a hash of the code): a code whose one-student
    run came first would pay that build there, and its figure per student, the slope, would come out too low."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    import bench_autograde

    calls: list[tuple[str, str]] = []
    monkeypatch.setattr(bench_autograde, "write_students", lambda folder, course, count: f"{count} student(s)")
    monkeypatch.setattr(bench_autograde, "export", lambda ref, target: f"code of {ref}")
    monkeypatch.setattr(bench_autograde, "without_the_judge", lambda target: "code without the judge")
    monkeypatch.setattr(bench_autograde, "nbgrader_route", lambda meter, scratch: {})
    monkeypatch.setattr(bench_autograde, "cold_kernel_start", lambda meter, scratch: 0.0)

    def grading_command(meter, code, folder, output, jobs, env):
        calls.append((str(code), folder))
        return {}

    monkeypatch.setattr(bench_autograde, "grading_command", grading_command)
    found = bench_autograde.measure(SimpleNamespace(before="abc", students=4, slurm=False), None, tmp_path)
    names = [name for name in found if name not in ("slurm", "nbgrader route", "cold kernel start")]
    assert len(names) == len(calls) and {code for code, _ in calls} == {
        "code of abc", str(bench_autograde.ROOT), "code without the judge"}
    for index, (name, (code, folder)) in enumerate(zip(names, calls)):
        if name.endswith(", 1 student"):
            assert folder == "1 student(s)"
            assert any(earlier == code for earlier, _ in calls[:index]), f"{name!r} is its code's first run"


def test_the_benchmark_report_prints_every_figure_the_readme_needs(tmp_path, capsys):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    import autograde_report

    seconds = {"warm process cpu": 0.5, "kernel start cpu": 0.1, "cells cpu": 1.0, "judge cpu": 0.4,
               "nbgrader cpu": 0.3, "feedback cpu": 0.2}

    def run(students: int, machine_seconds: float, wall: float, without: str = "") -> dict:
        reported = {key: value for key, value in seconds.items() if key != without}
        records = {f"s{i}": {"assignments": {"01_a": {"seconds": dict(reported)}}} for i in range(students)}
        return {"machine-s": machine_seconds, "wall": wall, "students": students, "jobs": 1, "records": records,
                "before grading": 3.0, "merge and export": 1.0}

    found = {"nbgrader route": {"machine-s": 150.0, "wall": 160.0, "autograde": 120.0, "feedback": 30.0},
             "cold kernel start": 2.0, "before, 1 student": run(1, 60.0, 70),
             # Code from before warm processes reports no kernel start: a cold one per notebook is counted.
             "before": run(3, 160.0, 200, without="kernel start cpu"),
             "first run on this machine": run(1, 30.0, 40), "now, 1 student": run(1, 20.0, 25),
             "now": run(3, 50.0, 60), "now, --jobs 2": run(3, 52.0, 34), "now, again": run(3, 50.0, 66),
             "now, --jobs 2, again": run(3, 52.0, 36), "slurm": None,
             "no judge, 1 student": run(1, 17.0, 20), "no judge": run(3, 41.0, 50)}
    summary = autograde_report.report(found, 3, "a test")
    printed = capsys.readouterr().out
    assert summary["now"]["per student"] == 15.0 and summary["now"]["fixed"] == 5.0
    assert summary["now"]["components"]["judge"] == 0.4 and summary["now"]["components"]["kernel start"] == 0.1
    assert summary["before"]["components"]["kernel start"] == 2.0 * len(ASSIGNMENTS)
    assert summary["no judge"]["components"]["kernel start"] == 0.1
    assert "15.0 / 20 = 0.75" in printed and "3.3x less than before" in printed
    assert "the judge's share now: 0.4 of 15.0" in printed
    # The same code with every test cell in the kernel: 12.0 per student, so the judge costs 1.25x.
    assert summary["no judge"]["per student"] == 12.0 and "1.25x; target at most 1.2x: 1.04" in printed
    # The two pairs of runs in turn: (60 + 66) / (34 + 36) = 1.80, each pair printed too.
    assert "**15.0 machine-s per student**" in printed and "**1.80×**" in printed and "| where | P | T |" in printed
    assert "60 s and 34 s: 1.76x, 66 s and 36 s: 1.83x" in printed and summary["jobs 2 speedup"] == 1.8
    autograde_report.plot(summary, tmp_path / "cost.png")
    assert (tmp_path / "cost.png").read_bytes()[:4] == b"\x89PNG"


def test_more_jobs_than_the_machine_s_memory_holds_at_their_limits_are_logged_as_a_warning():
    """Red team 2026-12-07: nothing related --jobs to the machine's memory (one job per core, 8 GiB per student): 32
    students holding their limit at once would exhaust a 64 GiB server. The run says so before it starts."""
    from grading.pipeline.run import memory_warning

    warning = memory_warning(32, 8.0, machine_bytes=64 * 2**30)
    assert warning and "32 job(s)" in warning and "320 GiB" in warning and "64 GiB" in warning, warning
    assert memory_warning(6, 8.0, machine_bytes=64 * 2**30) is None  # 6 x 10 GiB fit.
    assert memory_warning(64, None, machine_bytes=64 * 2**30) is None  # No limit: nothing to count.
    assert memory_warning(64, 0.0, machine_bytes=64 * 2**30) is None
