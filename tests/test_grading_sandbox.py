"""The bubblewrap sandbox, the cgroup limits, and what the grading command does when either is missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import sandbox_problem

from grading.config import ROOT
from grading.isolation import limits, probe, sandbox
from grading.pipeline.options import GradingOptions
from grading.pipeline.run import _isolation

_PROBLEM = sandbox_problem()
needs_sandbox = pytest.mark.skipif(_PROBLEM is not None, reason=str(_PROBLEM))
# As root, a uid of this run alone: "no process of the uid is left" must not see another run's.
ROOT_UID = sandbox.FIRST_UID - 1 - os.getpid() % 1_000_000 if os.geteuid() == 0 else None


def _run_inside(tmp_path: Path, code: str, uid: int | None = ROOT_UID, **plan_fields) -> dict:
    """Run ``code`` (which prints one JSON line) with Python in a sandbox; return what it printed."""
    sockets = tmp_path / "sockets"
    sockets.mkdir()
    if uid is not None:
        os.chown(sockets, uid, uid)
    plan = sandbox.Plan(sandbox=True, socket_dir=str(sockets), kept=sandbox.kept_folders(), uid=uid, **plan_fields)
    plan_file = plan.write(tmp_path / "plan.json")
    command = [sys.executable, str(Path(sandbox.__file__)), str(plan_file), "--", sys.executable, "-c", code]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120, env={**os.environ, "GRADER_SECRET": "x"})
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def _processes_of(uid: int) -> list[int]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            line = next(line for line in status.read_text().splitlines() if line.startswith("Uid:"))
        except (OSError, StopIteration):
            continue
        if str(uid) in line.split()[1:]:
            found.append(int(status.parent.name))
    return found


@needs_sandbox
def test_the_probe_passes_and_names_the_bubblewrap_version():
    assert sandbox.bwrap_version().startswith("bubblewrap ")
    with tempfile.TemporaryDirectory() as sockets:
        if ROOT_UID is not None:
            os.chown(sockets, ROOT_UID, ROOT_UID)
        plan = sandbox.Plan(sandbox=True, socket_dir=sockets, kept=sandbox.kept_folders(), uid=ROOT_UID)
        assert probe.probe(plan, [str(ROOT / "source"), str(ROOT / "solutions"), str(Path.home())]) is None


@needs_sandbox
def test_a_sandboxed_python_sees_only_what_it_needs(tmp_path):
    (tmp_path / "secret.txt").write_text("answers")
    paths = [str(ROOT / "source"), str(ROOT / "solutions"), str(ROOT / "gradebook.db"), str(tmp_path / "secret.txt"),
             str(Path.home() / ".bashrc"), "/etc/shadow", "/etc/hosts", "/var/tmp", "/run"]
    seen = _run_inside(tmp_path, (
        "import json, os, shutil, course\n"
        f"paths = {paths!r}\n"
        "print(json.dumps({'uid': os.getuid(), 'visible': [p for p in paths if os.path.exists(p)],"
        " 'course': course.__file__, 'home': os.environ['HOME'], 'keys': sorted(os.environ),"
        " 'tmp': shutil.disk_usage('/tmp').total, 'processes': [p for p in os.listdir('/proc') if p.isdigit()],"
        " 'hostname': os.uname().nodename}))\n"), tmpfs_bytes=64 << 20)
    assert seen["uid"] == (ROOT_UID if ROOT_UID is not None else os.getuid()) and seen["visible"] == []
    assert seen["course"].startswith(str(ROOT / "course")) and seen["home"] == sandbox.SANDBOX_HOME
    assert "GRADER_SECRET" not in seen["keys"], "the grader's environment is not passed on"
    assert seen["tmp"] <= 64 << 20, "the sandbox's /tmp is a size-capped tmpfs"
    assert len(seen["processes"]) <= 2 and seen["hostname"] == "grading-sandbox"


@needs_sandbox
def test_when_the_kernel_ends_every_process_it_left_ends_with_it(tmp_path):
    uid = ROOT_UID if ROOT_UID is not None else os.getuid()
    before = set(_processes_of(uid)) if ROOT_UID is None else set()
    _run_inside(tmp_path, (
        "import json, os\n"
        "if os.fork() == 0:\n"
        "    for hop in range(20):\n"
        "        if os.fork():\n"
        "            os._exit(0)\n"
        "    os.setsid()\n"
        "    os.execv('/bin/sleep', ['sleep', '600'])\n"
        "print(json.dumps({}))\n"))
    time.sleep(0.5)
    assert set(_processes_of(uid)) - before == set(), "a forked, detached sleeper outlived its sandbox"


@needs_sandbox
def test_the_sandbox_cannot_fill_the_disk(tmp_path):
    seen = _run_inside(tmp_path, (
        "import json, os\n"
        "written = {}\n"
        "for folder in ('/tmp', '/dev/shm', os.environ['HOME']):\n"
        "    try:\n"
        "        with open(os.path.join(folder, 'big'), 'wb') as handle:\n"
        "            for _ in range(64):\n"
        "                handle.write(b'x' * (1 << 20))\n"
        "        written[folder] = 'all'\n"
        "    except OSError as error:\n"
        "        written[folder] = error.strerror\n"
        "print(json.dumps(written))\n"), tmpfs_bytes=16 << 20)
    assert set(seen.values()) == {"No space left on device"}, seen


def test_an_unprivileged_grader_gets_the_sandbox_too(tmp_path, readable_root):
    """As a user other than root, bubblewrap makes a user namespace; the probe must pass."""
    if os.geteuid() != 0:
        pytest.skip("this test switches to an unprivileged user, which needs root to start")
    if sandbox.bwrap_path() is None:
        pytest.skip("bubblewrap is not installed")
    python = shutil.which("python3", path="/usr/bin:/bin")
    if python is None:
        pytest.skip("no system Python that an unprivileged user can run")
    folder = tmp_path / "grader"
    folder.mkdir()
    os.chown(folder, 65534, 65534)
    code = (
        "import sys, tempfile\n"
        f"sys.path.insert(0, {str(readable_root)!r})\n"
        "from grading.isolation import probe, sandbox\n"
        "sockets = tempfile.mkdtemp()\n"
        f"plan = sandbox.Plan(sandbox=True, socket_dir=sockets, kept=['/usr', {str(readable_root / 'course')!r}],"
        f" environment={{'PYTHONPATH': {str(readable_root)!r}}})\n"
        f"print(probe.probe(plan, [{str(readable_root / 'source')!r}, {str(tmp_path)!r}], python=sys.executable))\n")
    run = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120, cwd=folder, user=65534,
                         group=65534, extra_groups=[], env={"PATH": "/usr/bin:/bin", "HOME": str(folder),
                                                            "TMPDIR": str(folder)})
    result = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr
    if any(text in result for text in ("setting up uid map", "No permission", "Operation not permitted",
                                       "Creating new namespace failed")):
        pytest.skip(f"this machine does not allow unprivileged user namespaces: {result}")
    assert result == "None", result


def test_without_a_working_sandbox_on_refuses_and_auto_warns(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_GRADING_CACHE", str(tmp_path / "cache"))  # No probe passed here before.
    monkeypatch.setattr(probe, "probe", lambda *args, **kwargs: "bubblewrap is not installed")
    lines: list[str] = []
    options = GradingOptions(folder=tmp_path, isolation="on")
    with pytest.raises(RuntimeError, match="the grading sandbox does not work here: bubblewrap is not installed"):
        _isolation(options, ROOT_UID, lines.append)
    assert _isolation(GradingOptions(folder=tmp_path, isolation="auto"), ROOT_UID, lines.append) is False
    assert lines[0].startswith("WARNING: grading without isolation: bubblewrap is not installed")
    with pytest.raises(ValueError, match="isolation must be"):
        GradingOptions(folder=tmp_path, isolation="maybe")


def _alive(pid: int) -> bool:
    """Whether the process runs (a killed child that its parent has not reaped is a zombie, state Z)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def test_a_student_cgroup_limits_the_whole_process_tree():
    run = limits.setup(f"course-grading-test-{os.getpid()}")
    if run.kind == "rlimits":
        pytest.skip(run.warning)
    reader, writer = os.pipe()
    try:
        folders = limits.student_cgroups(run, "1", memory_bytes=256 << 20, max_processes=24)
        code = (
            "import os, sys, time\n"
            "for folder in sys.argv[2:]:\n"
            "    open(os.path.join(folder, 'cgroup.procs'), 'w').write(str(os.getpid()))\n"
            "started = 0\n"
            "try:\n"
            "    for _ in range(60):\n"
            "        if os.fork() == 0:\n"
            "            block = b'x' * (64 << 20)\n"
            "            os.write(int(sys.argv[1]), os.getpid().to_bytes(4, 'little'))\n"
            "            time.sleep(60)\n"
            "            os._exit(0)\n"
            "        started += 1\n"
            "except OSError:\n"
            "    pass\n"
            "print(started, flush=True)\n"
            "time.sleep(60)\n")
        process = subprocess.Popen([sys.executable, "-c", code, str(writer), *folders], stdout=subprocess.PIPE,
                                   text=True, pass_fds=[writer])
        os.close(writer)
        started = int(process.stdout.readline())
        assert started < 24, "the number of processes of the tree is limited"
        # A child that got its 64 MB sends its pid. The kernel may kill a child that holds its block when
        # another asks for memory, and then a waiting child gets in: the test counts the children that hold
        # their block at the same time, i.e. those that sent their pid and are still alive.
        received, deadline, quiet_until = b"", time.monotonic() + 20, time.monotonic() + 20
        os.set_blocking(reader, False)
        while time.monotonic() < min(deadline, quiet_until):
            try:
                received += os.read(reader, 256)
                quiet_until = time.monotonic() + 3
            except BlockingIOError:
                time.sleep(0.2)
        senders = [int.from_bytes(received[at:at + 4], "little") for at in range(0, len(received) - 3, 4)]
        holding = [pid for pid in senders if _alive(pid)]
        assert senders, "a 64 MB child fits in 256 MB"
        assert len(holding) <= 4, f"256 MB hold four 64 MB children at most, not {len(holding)} (of {started})"
        assert limits.kill_and_remove(folders) >= 1
        assert process.wait(timeout=10) == -9 and not any(Path(folder).exists() for folder in folders)
    finally:
        os.close(reader)
        limits.teardown(run)


def test_cleanup_takes_processes_that_vanish_meanwhile_in_its_stride(tmp_path):
    ended = subprocess.Popen(["true"])
    ended.wait()
    fake = tmp_path / "cgroup"
    fake.mkdir()
    (fake / "cgroup.procs").write_text(f"{ended.pid}\n")
    assert limits.kill_and_remove([str(fake), str(tmp_path / "already-gone")], timeout=0.5) == 1


def test_cgroup_v2_is_used_where_it_has_the_controllers_and_rlimits_warn_otherwise(tmp_path):
    proc, cgroups = tmp_path / "proc", tmp_path / "cgroup"
    (proc / "self").mkdir(parents=True)
    (cgroups / "grader").mkdir(parents=True)
    (proc / "self" / "mountinfo").write_text(f"30 23 0:26 / {cgroups} rw,nosuid - cgroup2 cgroup2 rw\n")
    (proc / "self" / "cgroup").write_text("0::/grader\n")
    (cgroups / "grader" / "cgroup.controllers").write_text("cpu memory pids\n")
    (cgroups / "grader" / "cgroup.subtree_control").write_text("memory pids\n")
    run = limits.setup("run", proc=proc)
    assert run.kind == "cgroup v2" and run.folders == [cgroups / "grader" / "run"]
    folders = limits.student_cgroups(run, "7", memory_bytes=1 << 30, max_processes=64)
    assert (Path(folders[0]) / "memory.max").read_text() == str(1 << 30)
    assert (Path(folders[0]) / "pids.max").read_text() == "64"
    (proc / "self" / "mountinfo").write_text("")
    fallback = limits.setup("run", proc=proc)
    assert fallback.kind == "rlimits" and "RLIMIT_DATA" in fallback.warning and "RLIMIT_NPROC" in fallback.warning
