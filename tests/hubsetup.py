"""A throwaway JupyterHub on this machine for tests/test_hub.py: Unix users, an exchange, the hub.

`HubMachine` makes an instructor, three students and a students' group with fresh names (so a run
that crashed earlier cannot collide), a folder ``/srv/kv-hub-<id>`` for the hub's state and
nbgrader's exchange, and starts JupyterHub with the course's own configuration
(deploy/jupyterhub/) on free ports of 127.0.0.1. `HubMachine.close` removes all of it: processes
(the hub, its proxy, every process of the test's users), users, their groups and homes, the folder,
and files the users left in /tmp, /var/tmp and /dev/shm; it returns what it had to clean up that
should not have been there, and what it could not remove.

Every user of a hub must be able to run the course's Python. Where this machine's interpreter sits
under a folder other users cannot enter (a Python installed in root's home), the hub and every
command run in a mount namespace of their own in which that folder is a bare tmpfs holding only
the interpreter, the virtual environment and the repository, bound at their own paths; nothing
changes for the rest of the machine.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from grading.config import ROOT

COURSE = "kv-cache-eviction"
DEPLOY = ROOT / "deploy" / "jupyterhub"
PYTHON = sys.executable
BIN = str(Path(sys.executable).parent)
ROLES = ("instructor", "honest", "typical", "hostile")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def unreachable_folders(paths: list[str]) -> dict[str, list[str]]:
    """For each path that other users cannot reach, the topmost folder that stops them -> those paths."""
    blocked: dict[str, list[str]] = {}
    for path in dict.fromkeys(os.path.realpath(p) for p in paths):
        for folder in [*reversed(Path(path).parents), Path(path)]:
            if not os.stat(folder).st_mode & stat.S_IXOTH:
                if str(folder) == path:
                    raise RuntimeError(f"{path} itself is closed to other users; open it (chmod o+rx) to run the hub")
                blocked.setdefault(str(folder), []).append(path)
                break
    return blocked


@dataclass
class HubMachine:
    """The test's users, folders and hub (see the module's docstring)."""

    tag: str = field(default_factory=lambda: "kv" + secrets.token_hex(3))
    names: dict[str, str] = field(default_factory=dict)
    passwords: dict[str, str] = field(default_factory=dict)
    uids: set[int] = field(default_factory=set)
    holder: subprocess.Popen | None = None
    hub: subprocess.Popen | None = None
    ports: dict[str, int] = field(default_factory=dict)

    def __post_init__(self):
        self.base = Path("/srv") / f"kv-hub-{self.tag}"
        self.group = f"{self.tag}-class"
        self.names = {role: f"{self.tag}-{role}" for role in ROLES}
        self.exchange = self.base / "exchange"
        self.state = self.base / "state"
        self.course = Path("/home") / self.names["instructor"] / COURSE

    # --- Making it -------------------------------------------------------------------------------

    def create(self) -> None:
        """Users, homes (mode 0700), the exchange (1777, as an administrator makes it), the course copy."""
        self.base.mkdir(mode=0o755)
        self.state.mkdir(mode=0o700)
        self.exchange.mkdir()
        os.chmod(self.exchange, 0o1777)
        subprocess.run(["groupadd", self.group], check=True)
        for role, name in self.names.items():
            groups = [] if role == "instructor" else ["--groups", self.group]
            subprocess.run(["useradd", "--create-home", "--key", "HOME_MODE=0700", "--shell", "/bin/bash", *groups,
                            name], check=True)
            self.uids.add(pwd.getpwnam(name).pw_uid)
            self.passwords[role] = secrets.token_urlsafe(12)
            subprocess.run(["chpasswd"], input=f"{name}:{self.passwords[role]}\n", text=True, check=True)
        self._copy_course()
        self._enter_namespace()

    def _copy_course(self) -> None:
        """The instructor's course directory: what nbgrader and the grading command need of the repository."""
        self.course.mkdir()
        shutil.copy(ROOT / "nbgrader_config.py", self.course)
        for folder in ("source", "release", "grading"):
            shutil.copytree(ROOT / folder, self.course / folder,
                            ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
        owner = self.names["instructor"]
        subprocess.run(["chown", "-R", f"{owner}:{owner}", str(self.course)], check=True)

    def _enter_namespace(self) -> None:
        blocked = unreachable_folders([sys.base_prefix, sys.prefix, str(ROOT)])
        if not blocked:
            return
        lines = ["set -e"]
        for number, (folder, paths) in enumerate(blocked.items()):
            stashes = [self.base / f"stash-{number}-{index}" for index in range(len(paths))]
            lines += [f"mkdir '{s}' && mount --bind '{p}' '{s}'" for s, p in zip(stashes, paths)]
            lines.append(f"mount -t tmpfs -o mode=0755,size=1m course-hub '{folder}'")
            lines += [f"mkdir -p '{p}' && mount --move '{s}' '{p}' && rmdir '{s}'" for s, p in zip(stashes, paths)]
        lines += ["echo ready", "exec sleep 100000"]
        self.holder = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(lines)],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if self.holder.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the hub's mount namespace could not be made: {self.holder.stderr.read()}")

    @property
    def enter(self) -> list[str]:
        """The prefix that runs a command in the hub's mount namespace (none when it is not needed)."""
        return ["nsenter", f"--target={self.holder.pid}", "--mount", "--"] if self.holder else []

    def environment(self, home: str) -> list[str]:
        return [f"HOME={home}", f"PATH={BIN}:/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
                f"JUPYTER_CONFIG_PATH={DEPLOY}", f"COURSE_EXCHANGE={self.exchange}"]

    def run_as(self, role: str, args: list[str], cwd: str | Path | None = None, check: bool = True,
               timeout: float = 600) -> subprocess.CompletedProcess:
        """Run ``args`` as the Unix user of ``role``, in their home (or ``cwd``), with the course's settings."""
        name = self.names[role]
        home = pwd.getpwnam(name).pw_dir
        command = [*self.enter, "runuser", "-u", name, "--", "env", "-i", f"--chdir={cwd or home}",
                   *self.environment(home), f"USER={name}", f"LOGNAME={name}", *args]
        run = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        if check and run.returncode != 0:
            raise AssertionError(f"{' '.join(args)} as {role} failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
        return run

    def start_hub(self, timeout: float = 180) -> str:
        """Start JupyterHub with deploy/jupyterhub/jupyterhub_config.py; return its address once it answers."""
        self.ports = {name: free_port() for name in ("hub", "api", "proxy", "formgrader")}
        settings = {
            "COURSE_DIRECTORY": self.course, "COURSE_PYTHON": PYTHON, "COURSE_INSTRUCTOR": self.names["instructor"],
            "COURSE_STUDENT_GROUP": self.group, "COURSE_HUB_STATE": self.state,
            "COURSE_HUB_URL": f"http://127.0.0.1:{self.ports['hub']}", "COURSE_HUB_PORT": self.ports["api"],
            "COURSE_PROXY_API_PORT": self.ports["proxy"], "COURSE_FORMGRADER_PORT": self.ports["formgrader"]}
        # Debian's configurable-http-proxy finds its modules there; a Node.js from elsewhere needs telling.
        node = ["NODE_PATH=/usr/share/nodejs"] if Path("/usr/share/nodejs").is_dir() else []
        log = open(self.base / "hub.log", "w")  # noqa: SIM115 - the hub writes it for as long as it runs.
        self.hub = subprocess.Popen(
            [*self.enter, "env", "-i", f"--chdir={self.state}", *self.environment(str(self.state)), *node,
             *[f"{key}={value}" for key, value in settings.items()],
             PYTHON, "-m", "jupyterhub", "-f", str(DEPLOY / "jupyterhub_config.py")],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        url = settings["COURSE_HUB_URL"]
        deadline = time.monotonic() + timeout
        while not (_answers(f"{url}/hub/api/", ok_only=True) and _answers(f"http://127.0.0.1:{self.ports['formgrader']}/")):
            if self.hub.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"JupyterHub did not start (exit {self.hub.poll()}):\n{self.hub_log()[-6000:]}")
            time.sleep(0.5)
        return url

    def hub_log(self) -> str:
        return (self.base / "hub.log").read_text(errors="replace") if (self.base / "hub.log").exists() else ""

    # --- Removing it -----------------------------------------------------------------------------

    def close(self) -> list[str]:
        """Stop and remove everything (see the module's docstring); return what was left behind."""
        leftovers: list[str] = []
        if self.hub is not None:
            # JupyterHub stops each user's server and the formgrader service before its proxy: each server gets
            # SIGINT, then SIGTERM after 10 s and SIGKILL 5 s later (LocalProcessSpawner's defaults). On a loaded
            # machine that took more than 30 s once (2026-12-03), and the hub, killed then, left its proxy and the
            # servers behind; it gets 90 s.
            _stop_group(self.hub, grace=90)
        self._stop_proxy(leftovers)
        survivors = _kill_processes_of(self.uids)
        if survivors:
            leftovers.append(f"processes of the test's users still ran after the hub stopped: {survivors}")
        if self.holder is not None:
            self.holder.kill()
            self.holder.wait()
        for name in self.names.values():
            if _exists(name):
                subprocess.run(["userdel", "--remove", "--force", name], capture_output=True)
        subprocess.run(["groupdel", self.group], capture_output=True)
        for top in ("/tmp", "/var/tmp", "/dev/shm"):
            for entry in os.scandir(top):
                if entry.stat(follow_symlinks=False).st_uid in self.uids:
                    leftovers.append(f"{entry.path} (left by a test user)")
                    _remove(entry.path)
        shutil.rmtree(self.base, ignore_errors=True)
        return leftovers

    def _stop_proxy(self, leftovers: list[str]) -> None:
        """JupyterHub stops its proxy on exit; one left by a hub that was killed is stopped here."""
        pid_file = self.state / "jupyterhub-proxy.pid"
        if not pid_file.exists():
            return
        pid = int(pid_file.read_text().strip() or 0)
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return
        if b"configurable-http-proxy" in command and str(self.ports.get("proxy")).encode() in command:
            leftovers.append(f"the proxy (pid {pid}) outlived the hub")
            os.kill(pid, signal.SIGKILL)

    def remaining(self) -> list[str]:
        """What of the test is still on the machine (an empty list when nothing is)."""
        found = [f"user {name}" for name in self.names.values() if _exists(name)]
        found += [f"home {path}" for path in (Path("/home") / name for name in self.names.values()) if path.exists()]
        found += [f"process {pid}" for pid in _processes_of(self.uids)]
        found += [str(self.base)] if self.base.exists() else []
        if subprocess.run(["getent", "group", self.group], capture_output=True).returncode == 0:
            found.append(f"group {self.group}")
        return found


def _answers(url: str, ok_only: bool = False) -> bool:
    """Whether an HTTP server answers at ``url`` (with any status, or with 200 when ``ok_only``)."""
    try:
        urllib.request.urlopen(url, timeout=2)
    except urllib.error.HTTPError:
        return not ok_only
    except OSError:
        return False
    return True


def _exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _stop_group(process: subprocess.Popen, grace: float = 30) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=grace)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _processes_of(uids: set[int]) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
            if int(uid_line.split()[1]) in uids:
                found.append(int(entry.name))
    return found


def _kill_processes_of(uids: set[int], grace: float = 10, settle: float = 20) -> list[int]:
    """Stop every process of ``uids`` by its id (TERM, then KILL); return those that ran before.

    The processes that end on their own within ``settle`` seconds are not counted: a single-user server that the
    hub stopped shuts its kernels down, and on a loaded machine they end a few seconds after the hub.
    """
    deadline = time.monotonic() + settle
    while _processes_of(uids) and time.monotonic() < deadline:
        time.sleep(0.2)
    found = _processes_of(uids)
    for signum in (signal.SIGTERM, signal.SIGKILL):
        for pid in _processes_of(uids):
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while _processes_of(uids) and time.monotonic() < deadline:
            time.sleep(0.2)
    return found


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        os.unlink(path)
