"""A student's warm process forks each notebook's kernel: nothing of one notebook reaches the next.

The kernels start as grading starts them (grading/isolation/kernels.py: `SandboxKernelManager` with a
student's plan), in a real sandbox, one after the other:

- each kernel is a fresh Python namespace; the processes the previous one left (a detached
  sleeper in a session of its own) and the files it wrote (home, /tmp, /dev/shm) are gone, while
  the judge's socket folder, bound read-only inside /tmp, stays (and the warm process with it);
- a kernel cannot read the warm process (not dumpable), reach its socket or find the grader's
  socket folder, and inherits no listening socket of the warm process;
- a student who kills the warm process costs only a fresh one;
- every place a kernel can write is a size-capped tmpfs of its own: writing past it fails with
  "No space left on device" inside the kernel, while another student's kernel writes as usual,
  and nothing reaches the host.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from conftest import sandbox_problem

from grading.isolation import kernels, sandbox

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))
ROOT_UID = sandbox.FIRST_UID - 1 if os.geteuid() == 0 else None
TMPFS = 16 << 20


def _plan(folder, uid_offset: int, judge_dir: str | None = None) -> str:
    sockets = folder / f"sockets-{uid_offset}"
    sockets.mkdir(mode=0o700)
    uid = None if ROOT_UID is None else ROOT_UID - uid_offset
    plan = sandbox.Plan(sandbox=True, socket_dir=str(sockets), kept=sandbox.kept_folders(), uid=uid,
                        tmpfs_bytes=TMPFS, environment={"OMP_NUM_THREADS": "1"}, judge_dir=judge_dir)
    return str(plan.write(folder / f"plan-{uid_offset}.json"))


async def _run(code: str, cwd: str | None = None) -> dict:
    """Start a kernel as grading does (in ``cwd``, as nbgrader starts it in the notebook's folder), run ``code``
    (it prints one JSON line), shut the kernel down."""
    manager = kernels.SandboxKernelManager()
    await manager.start_kernel(**({"cwd": cwd} if cwd else {}))
    client = manager.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=120)
        printed = []
        reply = await client.execute_interactive(code, timeout=120, output_hook=lambda message: printed.append(
            message["content"].get("text", "")) if message["msg_type"] == "stream" else None)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        client.stop_channels()
        await manager.shutdown_kernel()
    return json.loads("".join(printed).strip().splitlines()[-1])


def run_kernel(plan_file: str, code: str, monkeypatch, cwd: str | None = None) -> dict:
    monkeypatch.setenv(kernels.PLAN_VARIABLE, plan_file)
    return asyncio.run(_run(code, cwd))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    yield tmp_path_factory.mktemp("warm")
    kernels.stop_warm_processes(shared_too=True)


_LEAVE_TRACES = r'''
import json, os
secret = 42
for place in (os.environ["HOME"], "/tmp", "/dev/shm"):
    with open(os.path.join(place, "left-behind"), "w") as handle:
        handle.write("x")
try:  # Next to the judge's folder, where the sandbox's /tmp leads to it (writable without root).
    with open(os.path.join(os.path.dirname(JUDGE), "left-behind"), "w") as handle:
        handle.write("x")
except OSError:
    pass
os.makedirs(os.path.join(os.environ["HOME"], ".ipython", "profile_default", "startup"), exist_ok=True)
with open(os.path.join(os.environ["HOME"], ".ipython", "profile_default", "startup", "00-patch.py"), "w") as handle:
    handle.write("patched = True\n")
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sleep", ["sleep", "600"])
    os._exit(0)
os.wait()
print(json.dumps({"pid": os.getpid(), "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}))
'''

_LOOK_AROUND = r'''
import json, os
found = {"secret": "secret" in globals(), "patched": "patched" in globals(), "pid": os.getpid(),
         "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
         "files": [place for place in (os.environ["HOME"], "/tmp", "/dev/shm", os.path.dirname(JUDGE))
                   if os.path.exists(os.path.join(place, "left-behind"))], "judge": os.listdir(JUDGE)}
print(json.dumps(found))
'''


def test_each_notebook_gets_a_fresh_kernel_and_nothing_of_the_last_one(folder, monkeypatch):
    judge = folder / "judge-0"
    judge.mkdir(mode=0o755)
    (judge / "judge.sock").write_text("")  # Stands for the judge's socket.
    plan = _plan(folder, 0, str(judge))
    first = run_kernel(plan, f"JUDGE = {str(judge)!r}\n" + _LEAVE_TRACES, monkeypatch)
    warm = kernels._WARM[plan]
    assert len(first["processes"]) >= 4, "the sleeper ran next to the kernel, the warm process and init"
    second = run_kernel(plan, f"JUDGE = {str(judge)!r}\n" + _LOOK_AROUND, monkeypatch)
    assert kernels._WARM[plan] is warm and warm.responsive(), "the same warm process forked both kernels"
    assert not second["secret"] and not second["patched"], "a fresh namespace; no startup file of the last kernel"
    assert second["files"] == [], "home, /tmp and /dev/shm are emptied between kernels, next to the judge's too"
    assert second["judge"] == ["judge.sock"], "the judge's folder, bound read-only, stays"
    assert second["pid"] != first["pid"]
    assert len(second["processes"]) == 3, "only init, the warm process and this kernel: the sleeper is gone"


_PLOT = r'''
import json, sys
before = "matplotlib" in sys.modules
from IPython.utils.capture import capture_output
import matplotlib.pyplot as plt
with capture_output() as captured:
    plt.plot([1, 2, 3])
    plt.show()
print(json.dumps({"before": before, "backend": plt.get_backend(),
                  "png": any("image/png" in output.data for output in captured.outputs)}))
'''


def test_a_kernel_imports_matplotlib_only_when_a_cell_plots_and_then_shows_the_figure_inline(folder, monkeypatch):
    """The warm process does not import matplotlib (no cell that grading runs plots: the plots are in the
    experiments after the last graded cell, which grading skips); a student's cell that plots still shows its
    figure in the feedback."""
    found = run_kernel(_plan(folder, 5), _PLOT, monkeypatch)
    assert not found["before"], "a fresh kernel has not imported matplotlib"
    assert "inline" in found["backend"] and found["png"], found


_REACH_THE_WARM_PROCESS = r'''
import json, os, socket
parent = os.getppid()
found = {"parent": parent}
for what in ("environ", "mem", "fd"):
    try:
        path = f"/proc/{parent}/{what}"
        os.listdir(path) if what == "fd" else open(path, "rb").read(1)
        found[what] = "read"
    except OSError as error:
        found[what] = error.strerror
found["listening"] = []
for name in os.listdir("/proc/self/fd"):
    try:
        with socket.socket(fileno=os.dup(int(name))) as handle:
            if handle.family == socket.AF_UNIX and handle.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
                found["listening"].append(handle.getsockname())
    except OSError:
        pass
found["host folders"] = [path for path in json.loads(SOCKETS) if os.path.exists(path)]
print(json.dumps(found))
'''


def test_a_kernel_cannot_read_the_warm_process_nor_reach_its_socket(folder, monkeypatch):
    plan = _plan(folder, 1)
    sockets = sandbox.Plan.read(plan).socket_dir
    found = run_kernel(plan, _REACH_THE_WARM_PROCESS.replace("SOCKETS", repr(json.dumps([sockets]))), monkeypatch)
    assert found["environ"] == found["mem"] == found["fd"] == "Permission denied", found
    assert found["host folders"] == [], "the grader's socket folder is not in the sandbox"
    assert all(str(name).startswith("/tmp/.kernel") for name in found["listening"]), found["listening"]


def test_a_student_who_kills_the_warm_process_costs_only_a_fresh_one(folder, monkeypatch):
    plan = _plan(folder, 2)
    first = run_kernel(plan, "import json, os, signal, threading\nprint(json.dumps({'parent': os.getppid()}))\n"
                             "threading.Timer(0.5, os.kill, (os.getppid(), signal.SIGKILL)).start()", monkeypatch)
    assert first["parent"] > 1
    second = run_kernel(plan, "import json\nprint(json.dumps({'ok': 1 + 1}))", monkeypatch)
    assert second == {"ok": 2}


_FILL = r'''
import errno, json, os
writable = []
for line in open("/proc/self/mountinfo"):
    fields = line.split()
    point, options, kind = fields[4], fields[5], line.split(" - ")[1].split()[0]
    if point.startswith(("/proc", "/sys")):
        continue
    try:
        with open(os.path.join(point, ".probe"), "w"):
            pass
        os.unlink(os.path.join(point, ".probe"))
        writable.append([point, kind, os.statvfs(point).f_blocks * os.statvfs(point).f_frsize])
    except OSError:
        pass
full = None
try:
    with open("/tmp/filler", "wb") as handle:
        for _ in range(64):
            handle.write(b"x" * (1 << 20))
            handle.flush()
except OSError as error:
    full = errno.errorcode[error.errno]
print(json.dumps({"writable": writable, "full": full}))
'''


def test_every_place_a_kernel_can_write_is_a_capped_tmpfs_and_filling_it_harms_no_one(folder, monkeypatch):
    hog, neighbour = _plan(folder, 3), _plan(folder, 4)
    found = run_kernel(hog, _FILL, monkeypatch)
    assert found["full"] == "ENOSPC", found
    places = {point: (kind, size) for point, kind, size in found["writable"]}
    assert set(places) == {sandbox.SANDBOX_HOME, "/tmp", "/dev/shm"}, places
    assert all(kind == "tmpfs" and size <= TMPFS for kind, size in places.values()), places
    assert run_kernel(neighbour, "import json\nopen('/tmp/mine', 'w').write('x' * 4096)\nprint(json.dumps({'ok': 1}))",
                      monkeypatch) == {"ok": 1}
    left = run_kernel(hog, "import json, os\nprint(json.dumps([n for n in os.listdir('/tmp') if "
                           "not n.startswith('.kernel')]))", monkeypatch)
    assert left == [], "the next notebook of the same student starts with an empty /tmp (but its own sockets)"
    assert all(os.listdir(sandbox.Plan.read(plan).socket_dir) == ["warm.sock"] for plan in (hog, neighbour)), \
        "nothing of a kernel reaches the grader's folders"


def test_a_kernel_runs_in_its_notebook_s_folder_without_the_sandbox_and_in_its_home_within(folder, monkeypatch):
    """Without the sandbox (``--isolation off``) a forked kernel runs where nbgrader starts it, the notebook's
    folder, as a kernel that jupyter_client starts itself does; in the sandbox that folder does not exist."""
    notebook_folder = folder / "autograded" / "a_student" / "01_eviction_as_ranking"
    notebook_folder.mkdir(parents=True)
    sockets = folder / "sockets-off"
    sockets.mkdir(mode=0o700)
    plain = str(sandbox.Plan(sandbox=False, socket_dir=str(sockets), kept=sandbox.kept_folders(), uid=None,
                             environment={"OMP_NUM_THREADS": "1"}).write(folder / "plan-off.json"))
    code = 'import json, os\nprint(json.dumps({"cwd": os.getcwd(), "home": os.environ["HOME"]}))'
    try:
        assert run_kernel(plain, code, monkeypatch, cwd=str(notebook_folder))["cwd"] == str(notebook_folder)
    finally:
        kernels.stop_warm_processes(shared_too=True)
    inside = run_kernel(_plan(folder, 7), code, monkeypatch, cwd=str(notebook_folder))
    assert inside["cwd"] == inside["home"] != str(notebook_folder)


def _in_cgroup(group: str, proc_cgroup: str) -> bool:
    """Whether a process whose /proc/PID/cgroup reads ``proc_cgroup`` is in the cgroup folder ``group``.

    Compares the folder's last two names (the run, which carries the test's pid, then the student) with the end of
    each line's path: a bare student name such as "21" can also be found inside a container's hexadecimal cgroup
    id, which made this test fail in CI.
    """
    tail = "/" + "/".join(Path(group).parts[-2:])
    return any(line.split(":", 2)[2].endswith(tail) for line in proc_cgroup.splitlines() if line.count(":") >= 2)


_WHERE_AM_I = r'''
import json, os, resource
print(json.dumps({"parent": os.getppid(), "cgroups": open("/proc/self/cgroup").read(),
                  "memory": resource.getrlimit(resource.RLIMIT_DATA)[0]}))
'''


def test_without_the_sandbox_students_share_one_warm_process_and_each_kernel_takes_its_student_s_limits(
        folder, monkeypatch):
    """Without the sandbox nothing is isolated, so one warm process serves every student of a grading process (a
    warm process each cost about 2 s of CPU per student for nothing); each kernel it forks still joins its own
    student's cgroups and takes their memory limit, as a kernel of the student's own warm process does."""
    from grading.isolation import limits

    run = limits.setup(f"course-warm-test-{os.getpid()}")
    if not run.folders:
        pytest.skip(f"no cgroups here: {run.warning}")
    found, plans = [], []
    try:
        for index, memory in (("21", 3 << 30), ("22", 5 << 30)):
            sockets = folder / f"sockets-off-{index}"
            sockets.mkdir(mode=0o700)
            cgroups = limits.student_cgroups(run, index, memory_bytes=memory, max_processes=None)
            plan = sandbox.Plan(sandbox=False, socket_dir=str(sockets), kept=sandbox.kept_folders(), cgroups=cgroups,
                                memory_bytes=memory, environment={"OMP_NUM_THREADS": "1"})
            plans.append((plan, str(plan.write(folder / f"plan-off-{index}.json"))))
            found.append(run_kernel(plans[-1][1], _WHERE_AM_I, monkeypatch))
            kernels.stop_warm_processes()  # After each student, as the worker does: the shared one stays.
        shared = kernels._WARM[kernels.UNSANDBOXED]
        assert found[0]["parent"] == found[1]["parent"] == shared.process.pid, found
        for (plan, _), where in zip(plans, found):
            assert where["memory"] == plan.memory_bytes, where
            assert all(_in_cgroup(group, where["cgroups"]) for group in plan.cgroups), (plan.cgroups, where)
        shared_cgroup = Path(f"/proc/{shared.process.pid}/cgroup").read_text()
        assert not any(_in_cgroup(group, shared_cgroup) for plan, _ in plans for group in plan.cgroups), (
            "the shared one is in no student's cgroup", shared_cgroup)
    finally:
        kernels.stop_warm_processes(shared_too=True)
        for plan, _ in plans:
            limits.kill_and_remove(plan.cgroups)
        limits.teardown(run)
    assert kernels.UNSANDBOXED not in kernels._WARM
