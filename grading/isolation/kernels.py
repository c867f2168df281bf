"""The kernels that grading starts: forked by each student's warm process, in the student's sandbox.

nbgrader's Execute step (grading/judge/execute.py: `JudgedExecute`) starts every kernel through
`SandboxKernelManager`. When ``COURSE_SANDBOX_PLAN`` names a student's plan (grading/isolation/sandbox.py:
`Plan`, written by the grading command), the kernel is not a new process tree started from
scratch: the student's warm process (grading/isolation/zygote.py), started once in the student's sandbox and
cgroups, forks it, with torch, numpy, matplotlib, ipykernel and the course package already
imported. The kernel command that jupyter_client starts and watches is the warm process's client,
which lives exactly as long as the kernel does. Without a plan (a plain ``nbgrader autograde``,
the mutation suite) kernels start as jupyter_client starts them. A plan without the sandbox
(``--sandbox off``, nothing isolated) gets the warm process that every student of the grading
process shares (`WarmProcess.shared`); each of its kernels joins its own student's cgroups.

The kernel talks to nbgrader over ZMQ's ``ipc`` transport. In the sandbox its sockets are in the
sandbox's own /tmp (a size-capped tmpfs), which nbgrader reaches from outside through
``/proc/<the sandbox's init>/root``; no host folder is writable from inside. Without the sandbox
they are in the plan's socket folder. Interrupts (a cell past its time limit) go as messages on the
control channel.

`metered` counts what a notebook's kernel cost, from the student's cgroup CPU accounting
(grading/isolation/limits.py): starting the warm process (once per student), starting the kernel, and
running the notebook's cells. The grading command's worker reports it; bench/bench_autograde.py
adds it up.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.client import KernelClient
from jupyter_client.manager import AsyncKernelManager
from traitlets import DottedObjectName, Type

from grading.isolation import sandbox, zygote
from grading.isolation.limits import cpu_seconds, throttled_seconds

PLAN_VARIABLE = "COURSE_SANDBOX_PLAN"
_SANDBOX_SCRIPT = str(Path(sandbox.__file__).resolve())
_ZYGOTE_SCRIPT = str(Path(zygote.__file__).resolve())
# Importing torch and the rest takes seconds of CPU; on a loaded machine, allow it minutes.
START_TIMEOUT = 600.0
PING_TIMEOUT = 30.0


class WarmProcess:
    """One student's warm process (grading/isolation/zygote.py), in the student's sandbox and cgroups."""

    def __init__(self, plan_file: str, own_folder: str | None = None):
        self.plan_file = plan_file
        self.plan = sandbox.Plan.read(plan_file)
        self.control = os.path.join(self.plan.socket_dir, "warm.sock")
        self.process: subprocess.Popen | None = None
        self.init_pid: int | None = None  # The host pid of the sandbox's init (with the sandbox).
        self.own_folder = own_folder  # The shared one's plan and sockets (`shared`), removed when it stops.

    @classmethod
    def shared(cls, student_plan: sandbox.Plan) -> WarmProcess:
        """The warm process that every student of this grading process shares without the sandbox.

        Nothing is isolated there (``--sandbox off``: every kernel runs as the grader, in the notebook's folder), so
        a warm process per student bought nothing but its imports, about 2 s of CPU per student. This one lives in
        no student's cgroup and has no student's limits; each kernel it forks joins its own student's cgroups and
        takes that student's memory limit first (`kernel_command`).
        """
        import dataclasses
        import tempfile

        folder = tempfile.mkdtemp(prefix="course-warm-")
        plan = dataclasses.replace(student_plan, socket_dir=folder, cgroups=[], memory_bytes=None, max_processes=None)
        return cls(str(plan.write(Path(folder) / "plan.json")), own_folder=folder)

    def start(self) -> None:
        """Start it and wait until it has imported everything; raise RuntimeError when it does not come up."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.control)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.control)
        os.chmod(self.control, 0o600)
        listener.listen(8)
        info_read, info_write = os.pipe()
        # The sandbox does not see the grading package: its Python reads the script from a descriptor.
        script = os.open(_ZYGOTE_SCRIPT, os.O_RDONLY)
        fd = listener.fileno()
        flags = ["--keep-fd", str(fd), "--keep-fd", str(script)]
        flags += ["--info-fd", str(info_write)] if self.plan.sandbox else []
        command = [sys.executable, _SANDBOX_SCRIPT, self.plan_file, *flags, "--", sys.executable, "-I",
                   f"/dev/fd/{script}", "serve", str(fd), "1" if self.plan.sandbox else "0", json.dumps(zygote.PRELOAD)]
        try:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, pass_fds=(fd, script, info_write))
        finally:
            os.close(info_write)
            os.close(script)
            listener.close()
        try:
            if self.plan.sandbox:
                self.init_pid = _read_child_pid(info_read, time.monotonic() + START_TIMEOUT)
            reply = self.request({"op": "ping"}, START_TIMEOUT)
            if not reply or not reply.get("ready"):
                raise RuntimeError("the student's warm process did not start (see the job's log)")
        except BaseException:
            self.stop()
            raise
        finally:
            os.close(info_read)

    def request(self, message: dict, timeout: float) -> dict | None:
        """Send one request and return the reply; None when the warm process does not answer in time."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
                connection.settimeout(timeout)
                connection.connect(self.control)
                zygote.send_message(connection, message)
                return zygote.read_message(connection, time.monotonic() + timeout)
        except OSError:
            return None

    def responsive(self) -> bool:
        return self.process is not None and self.process.poll() is None and bool(
            self.request({"op": "ping"}, PING_TIMEOUT))

    @property
    def host_ip(self) -> str:
        """Where nbgrader finds the kernel's sockets."""
        if self.plan.sandbox:
            return f"/proc/{self.init_pid}/root{zygote.INSIDE_IP}"
        return os.path.join(self.plan.socket_dir, "kernel")

    @property
    def inside_ip(self) -> str:
        """Where the kernel makes them."""
        return zygote.INSIDE_IP if self.plan.sandbox else self.host_ip

    def kernel_command(self, connection_file: str, student_plan: sandbox.Plan | None = None) -> list[str]:
        """The client's command; for the shared warm process, with the cgroups and memory limit of the student whose
        kernel it starts (in the sandbox, the student's warm process is in them already)."""
        command = [sys.executable, "-I", "-S", _ZYGOTE_SCRIPT, "attach", self.control, connection_file, self.inside_ip]
        if self.own_folder is not None and student_plan is not None:
            command.append(json.dumps({"cgroups": student_plan.cgroups, "memory_bytes": student_plan.memory_bytes}))
        return command

    def stop(self) -> None:
        """End it and everything it started (with the sandbox, the sandbox ends with it)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.request({"op": "stop"}, 5.0)
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        self.process.wait()
        self.process = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.control)
        if self.own_folder is not None:
            import shutil

            shutil.rmtree(self.own_folder, ignore_errors=True)


def _read_child_pid(fd: int, deadline: float) -> int:
    """The ``child-pid`` of the JSON that bwrap writes to its info descriptor."""
    import select

    data = b""
    while time.monotonic() < deadline:
        if select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            chunk = os.read(fd, 4096)
            data += chunk
            with contextlib.suppress(ValueError):
                return int(json.loads(data)["child-pid"])
            if not chunk:
                break
    raise RuntimeError(f"the sandbox did not say which process is its init: {data[:200]!r}")


_WARM: dict[str, WarmProcess] = {}
# CPU seconds of the current notebook, from the student's cgroup (see `metered`).
_METER: dict = {}


# The key of the warm process that a grading process's students share without the sandbox (`WarmProcess.shared`).
UNSANDBOXED = "unsandboxed"


def _key(plan_file: str, plan: sandbox.Plan) -> str:
    """Which warm process serves ``plan``'s kernels: the student's own, or without the sandbox the shared one."""
    return plan_file if plan.sandbox else UNSANDBOXED


def warm_process(plan_file: str) -> WarmProcess:
    """The student's warm process (without the sandbox, the shared one): the running one, or a fresh one when it is
    gone or does not answer."""
    plan = sandbox.Plan.read(plan_file)
    key = _key(plan_file, plan)
    warm = _WARM.get(key)
    if warm is not None and warm.responsive():
        return warm
    if warm is not None:
        warm.stop()
    before = cpu_seconds(plan.cgroups)
    warm = WarmProcess(plan_file) if plan.sandbox else WarmProcess.shared(plan)
    warm.start()
    _WARM[key] = warm
    after = cpu_seconds(plan.cgroups)
    if before is not None and after is not None:
        _METER["warm process"] = _METER.get("warm process", 0.0) + after - before
    return warm


def stop_warm_processes(shared_too: bool = False) -> None:
    """End every student's warm process of this grading process (after each student); ``shared_too``: the shared
    one too (when the grading process ends)."""
    for key in [key for key in _WARM if shared_too or key != UNSANDBOXED]:
        _WARM.pop(key).stop()


@contextlib.contextmanager
def metered(cgroups: list[str], judge_cpu=None):
    """Count one notebook's kernel cost in the student's cgroup; the yielded dict holds it afterwards.

    Keys (CPU seconds): ``warm process cpu`` (starting it, when this notebook did), ``kernel start
    cpu`` (from the request until the kernel answered), ``cells cpu`` (everything the notebook
    ran); none where the cgroup does not count CPU time. The student's judge is in the same cgroup
    (grading/pipeline/worker.py); ``judge_cpu()``, its own CPU seconds so far, takes its part out of those two
    figures. ``cells throttled``: the seconds in which the student's CPU quota held the student's processes back
    meanwhile (none where no quota counts it). And from the warm process, ``kernel ran``, ``kernel waited`` and
    ``kernel lived``: the seconds the kernel process ran, was ready to run but waited for a CPU, and existed.
    """
    costs: dict[str, float] = {}
    _METER.clear()
    judge = judge_cpu or (lambda: 0.0)
    start, judge_start = cpu_seconds(cgroups), judge()
    throttled_start = throttled_seconds(cgroups)
    _METER.update(folders=cgroups, judge=judge)
    try:
        yield costs
    finally:
        end, judge_end = cpu_seconds(cgroups), judge()
        throttled_end = throttled_seconds(cgroups)
        if throttled_start is not None and throttled_end is not None:
            costs["cells throttled"] = throttled_end - throttled_start
        ready, judge_ready = _METER.get("ready", end), _METER.get("judge ready", judge_end)
        if None not in (start, end, ready):
            warm = _METER.get("warm process", 0.0)
            costs.update({"warm process cpu": warm,
                          "kernel start cpu": ready - start - warm - (judge_ready - judge_start),
                          "cells cpu": end - ready - (judge_end - judge_ready)})
        plan_file = os.environ.get(PLAN_VARIABLE, "")
        warm_process_now = _WARM.get(_key(plan_file, sandbox.Plan.read(plan_file))) if plan_file else None
        last = warm_process_now.request({"op": "last"}, PING_TIMEOUT) if warm_process_now else None
        if last:
            costs.update({"kernel ran": last["ran"], "kernel waited": last["waited"], "kernel lived": last["wall"]})
        _METER.clear()


class ReadyClient(AsyncKernelClient):
    """The kernel client nbclient uses; it notes the student's CPU time when the kernel is ready."""

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        await KernelClient._async_wait_for_ready(self, timeout=timeout)
        if "folders" in _METER:
            _METER["ready"], _METER["judge ready"] = cpu_seconds(_METER["folders"]), _METER["judge"]()


class SandboxKernelManager(AsyncKernelManager):
    """Starts kernels through the student's warm process when ``COURSE_SANDBOX_PLAN`` names a plan file."""

    client_class = DottedObjectName("grading.isolation.kernels.ReadyClient")
    client_factory = Type(ReadyClient, klass=AsyncKernelClient, config=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        plan_file = os.environ.get(PLAN_VARIABLE)
        self._warm = warm_process(plan_file) if plan_file else None
        self._plan = sandbox.Plan.read(plan_file) if plan_file else None
        if self._warm is not None:
            self.transport = "ipc"
            self.ip = self._warm.host_ip
            if not self.connection_file:
                # The kernel's key and sockets, in the student's socket folder (the grader's own, mode 0700, which the
                # sandbox never shows): jupyter_client's default, a file in the grader's $TMPDIR that only shutting
                # the kernel down removes, stayed on the host whenever a time limit killed the grading process; the
                # grading command removes this folder after the student, killed or not (grading/pipeline/run.py).
                self.connection_file = os.path.join(self._plan.socket_dir, f"connection-{secrets.token_hex(8)}.json")

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        if self._warm is None:
            return super().format_kernel_cmd(extra_arguments)
        # A signal would reach the warm process's client, not the kernel: interrupt with a message.
        self.kernel_spec.interrupt_mode = "message"
        return self._warm.kernel_command(self.connection_file, self._plan)
