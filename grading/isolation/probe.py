"""The sandbox's probe: a Python started in a student's sandbox reports what it can reach.

`probe` starts it through grading/isolation/sandbox.py with a plan, as grading starts a student's warm
process, and checks the report against what the sandbox promises (grading/isolation/sandbox.py's
docstring). The grading command probes once per machine and configuration (grading/pipeline/cache.py:
`probe_once`); the tests probe directly.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from grading.isolation.sandbox import Plan, bwrap_path

_LAUNCHER = str(Path(__file__).resolve().with_name("sandbox.py"))

_PROBE = r'''
import json, os, socket, sys
report = {"uid": os.getuid(), "home": os.environ.get("HOME"), "variables": sorted(os.environ)}
report["root"] = sorted(os.listdir("/"))
report["processes"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
report["no_new_privs"] = status["NoNewPrivs"].strip()
report["capabilities"] = status["CapEff"].strip()
kept = json.loads(sys.argv[5])
def leaks(path):
    # A hidden folder may exist only as the way to a kept one (the course package inside the course).
    if not os.path.isdir(path):
        return [path] if os.path.exists(path) else []
    found = []
    for name in os.listdir(path):
        inner = os.path.join(path, name)
        if not any(k == inner or k.startswith(inner + "/") for k in kept):
            found.append(inner)
    return found[:3]
report["visible"] = [leak for path in json.loads(sys.argv[1]) for leak in leaks(path)]
report["imports"] = []
for name in json.loads(sys.argv[2]):
    try:
        __import__(name)
        report["imports"].append(name)
    except Exception as error:
        report["imports"].append(f"{name}: {error!r}")
def reach(address, family=socket.AF_INET):
    try:
        with socket.socket(family, socket.SOCK_STREAM) as connection:
            connection.settimeout(2)
            connection.connect(address)
        return True
    except OSError:
        return False
port = int(sys.argv[3])
report["network"] = [a for a in (("127.0.0.1", port), ("10.0.0.1", 80), ("1.1.1.1", 53)) if reach(a)]
report["abstract socket"] = reach("\0" + sys.argv[4], socket.AF_UNIX)
written = []
for folder in ("/", "/usr", "/etc", sys.prefix, "/var/tmp", "/run/lock"):
    try:
        with open(os.path.join(folder, ".sandbox-probe"), "w"):
            written.append(folder)
    except OSError:
        pass
report["written"] = written
listing = os.listdir("/proc/self/fd")
report["descriptors"] = [int(fd) for fd in listing if int(fd) > 2 and os.path.exists(f"/proc/self/fd/{fd}")]
report["private"] = []
for folder in (os.environ["HOME"], "/tmp", "/dev/shm"):
    try:
        with open(os.path.join(folder, "probe"), "w") as handle:
            handle.write("x")
        report["private"].append(folder)
    except OSError as error:
        report["private"].append(f"{folder}: {error}")
print(json.dumps(report))
'''


def probe(plan: Plan, secrets_to_hide: list[str] = (), imports: tuple[str, ...] = ("course",),
          python: str | None = None, timeout: float = 60.0) -> str | None:
    """Start a Python in the sandbox and check what it can reach; return None or what is wrong.

    The sandbox must: run as the plan's uid (or the grader's, without root); see none of
    ``secrets_to_hide``, nor the plan's socket folder, nor any of the host's top-level folders but
    the system and Python ones; import ``imports``; see no process but its own; have no
    capabilities and no_new_privs; reach no network (a listener on the host's loopback, an abstract
    Unix socket, outside addresses); write nowhere but its home, /tmp and /dev/shm; inherit no
    descriptor but stdin, stdout and stderr; and get none of the grader's variables.
    """
    if not plan.sandbox:
        return None
    if bwrap_path() is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    hidden = [*secrets_to_hide, plan.socket_dir]
    with socket.socket() as listener, socket.socket(socket.AF_UNIX) as abstract:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        abstract_name = f"course-sandbox-probe-{os.getpid()}"
        abstract.bind("\0" + abstract_name)
        abstract.listen(1)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            handle.write(json.dumps(asdict(plan)))
        command = [python or sys.executable, "-c", _PROBE, json.dumps(hidden), json.dumps(list(imports)),
                   str(listener.getsockname()[1]), abstract_name, json.dumps(plan.kept)]
        try:
            run = subprocess.run([python or sys.executable, _LAUNCHER, handle.name, "--", *command],
                                 capture_output=True, text=True, timeout=timeout,
                                 env={**os.environ, "GRADER_SECRET_PROBE": "x"})
        except subprocess.TimeoutExpired:
            return f"the sandbox probe did not finish in {timeout:g} s"
        finally:
            os.unlink(handle.name)
    if run.returncode != 0 or not run.stdout.strip():
        lines = (run.stderr or run.stdout).strip().splitlines()
        return f"the sandbox probe failed: {lines[-1] if lines else f'exit status {run.returncode}'}"
    return _problems(plan, json.loads(run.stdout.strip().splitlines()[-1]))


def _problems(plan: Plan, report: dict) -> str | None:
    """What the probe's report shows to be wrong with the sandbox; None when nothing is."""
    uid = os.getuid() if plan.uid is None else plan.uid
    problems = []
    if report["uid"] != uid:
        problems.append(f"it ran as uid {report['uid']}, not {uid}")
    if report["visible"]:
        problems.append(f"it could see {report['visible']}")
    allowed_top = {"bin", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "sys", "tmp",
                   "usr"} | {Path(folder).parts[1] for folder in plan.kept}
    if set(report["root"]) - allowed_top:
        problems.append(f"it could see the host folders {sorted(set(report['root']) - allowed_top)}")
    if [name for name in report["imports"] if ":" in name]:
        problems.append(f"imports failed: {[name for name in report['imports'] if ':' in name]}")
    if len(report["processes"]) > 2:
        problems.append(f"it could see processes {report['processes']}")
    if report["no_new_privs"] != "1" or int(report["capabilities"], 16) != 0:
        problems.append("it kept privileges (no_new_privs unset or capabilities left)")
    if report["network"] or report["abstract socket"]:
        problems.append(f"it reached the network: {report['network'] or 'an abstract Unix socket of the host'}")
    if [folder for folder in report["private"] if ":" in folder]:
        problems.append(f"it could not write its own folders: {report['private']}")
    if report["written"]:
        problems.append(f"it could write to {report['written']}")
    if report["descriptors"]:
        problems.append(f"it inherited the descriptors {report['descriptors']}")
    if "GRADER_SECRET_PROBE" in report["variables"]:
        problems.append("it got the grader's environment")
    return "the sandbox probe found: " + "; ".join(problems) if problems else None
