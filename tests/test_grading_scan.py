"""The scan for tampering code flags every known trick and no honest answer of the course."""

from __future__ import annotations

import nbformat
import pytest

from grading.authoring.samples import fill, load_mutants, solution_code
from grading.config import ASSIGNMENTS, ROOT
from grading.isolation.scan import class_changes, defined_classes, findings, imported_names, scan, student_cells
from grading.judge.execute import settle
from grading.pipeline.repair import repair, restore_metadata

GIVEN = "import math\nimport numpy as np\nimport torch\nfrom course import checks\nfrom course.checks import check_type"

TRICKS = {
    "patch a library function": "math.isclose = lambda *a, **k: True",
    "patch numpy.testing": "np.testing.assert_allclose = lambda *a, **k: None",
    "patch torch.testing": "torch.testing.assert_close = lambda *a, **k: None",
    "patch torch.equal": "torch.equal = lambda a, b: True",
    "patch a test helper": "checks.assert_plain_equal = lambda *a, **k: None",
    "patch a test helper by name": "import course.checks\ncourse.checks.check_type = print",
    "patch a builtin": "import builtins\nbuiltins.isinstance = lambda *a: True",
    "setattr on a module": "setattr(math, 'isclose', lambda *a, **k: True)",
    "module dictionary": "vars(math)['isclose'] = lambda *a, **k: True",
    "__dict__ write": "math.__dict__['isclose'] = max",
    "rigged comparison on a class": "type(1.0).__eq__ = lambda a, b: True",
    "code object swap": "check_type.__code__ = (lambda *a: None).__code__",
    "sys.modules": "import sys\nsys.modules['course.checks'] = None",
    "trace hook": "import sys\nsys.settrace(lambda *a: None)",
    "frame walking": "import sys\nframe = sys._getframe(1)",
    "IPython shell": "get_ipython().run_cell = None",
    "input history": "source = In[-1]",
    "exec of a string": "exec('x = 1')",
    "dynamic import": "m = __import__('ma' + 'th')",
    "reading a file": "data = open('/etc/hostname').read()",
    "pathlib": "from pathlib import Path\nPath('x').read_text()",
    "a subprocess": "import subprocess\nsubprocess.run(['ls'])",
    "os.system": "import os\nos.system('ls')",
    "os._exit": "import os\nos._exit(0)",
    "ctypes": "import ctypes",
    "gc": "import gc\ngc.get_objects()",
    "sqlite": "import sqlite3",
    "fork": "import os\nos.fork()",
    "from-import of the display hook": "from sys import displayhook\ndisplayhook('passed')",
    "from-import of fork": "from os import fork as spawn\nspawn()",
    "getattr of a frame attribute": "def f(frame):\n    return getattr(frame, 'f_back')",
    "getattr with a spelled-out name": "def f(frame):\n    return getattr(frame, 'f_' + 'back')",
    "getattr on a module with a computed name": "import sys\nname = 'std' + 'out'[:0]\nhook = getattr(sys, name)",
    "attrgetter": "from operator import attrgetter\nback = attrgetter('f_back.f_globals')",
    "an aliased module": "import os as system_calls\nsystem_calls.fork()",
    "the kernel's session": "get_ipython().kernel.session.send = print",
    "the messaging library": "import jupyter_client.session",
    "IPython's source cache": "import linecache\nlines = linecache.cache",
    "object.__setattr__": "import math\nobject.__setattr__(math, 'pi', 3)",
    "IPython events": "import IPython\nIPython.get_ipython().events.register('pre_run_cell', print)",
    "sys through os": "import os\nos.sys.modules['course.checks'] = None",
    "sys through torch": "torch.sys.modules.get('course.checks')",
    "threading through logging": "import logging\nworker = logging.threading.Thread(target=print)",
    "weakref through copy": "import copy\nprobe = copy.weakref.ref",
    "os through a private name": "import random\nrandom._os.system('ls')",
    "os two modules down": "torch.serialization.os.fork()",
    "ctypes through numpy": "np.ctypeslib.ctypes.string_at(0)",
    # Red team 2026-12-07: helpers started and the kernel made easy to crowd out, none of it flagged before.
    "os.spawnvp": "import os\nos.spawnvp(os.P_NOWAIT, 'python3', ['python3', '-c', 'pass'])",
    "os.spawnlpe": "import os\nos.spawnlpe(os.P_NOWAIT, 'python3', 'python3', {})",
    "a scheduling policy": "import os\nos.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))",
    "a nice value": "import os\nos.nice(19)",
    "a priority": "import os\nos.setpriority(os.PRIO_PROCESS, 0, 19)",
    # Red team, round 14: the judge's agent in the kernel patched through an alias, so that it hid the student's
    # changes to the test's values; reached by import, by name or by a spelled-out string.
    "the judge's agent, imported": "from _course_judge_agent.pairs import PairTable as table\nalias = table\n"
                                   "alias.scan = lambda self, drop: ([], [])",
    "the judge's agent, by the grading package": "from grading.judge import pairs",
    "the judge's agent, by its name": "agent = _course_judge_0123456789ab\nagent.pairs = None",
    "the judge's agent, in a string": "name = '_course_judge_agent.pairs'",
    # Red team, round 14: a class changed after it crossed (the judge reads its descriptors and hooks once).
    "a class changed by a class method": "class A:\n    @classmethod\n    def late(cls):\n        cls.x = 1",
    "a class changed through type()": "def late(obj):\n    type(obj).x = property(len)",
    "setattr on a class": "def late(cls, name):\n    setattr(cls, name, None)",
    # Red team, round 14: the student's code that the judge's side calls where one process may not, changing state
    # there, and a metaclass, whose hooks see the judge read the class.
    "a __hash__ that changes state": "class A:\n    def __hash__(self):\n        self.step = 0\n        return 1",
    "an exception's __str__ that changes state": "class E(RuntimeError):\n    def __str__(self):\n"
                                                   "        manager.step -= 1\n        return 'x'",
    "a metaclass": "class Meta(type):\n    pass",
    "a __hash__ that calls a helper": "class A:\n    def __hash__(self):\n        self._reset()\n        return 1",
    # The same, written another way (a second helper, round 14).
    "a __hash__ bound to a function that changes state": "def _h(self):\n    self.step = 0\n    return 1\n"
                                                         "class A:\n    __hash__ = _h",
    "a metaclass computed": "class Hook(type(object)):\n    pass",
    "a metaclass by keyword": "class A(metaclass=Hook):\n    pass",
    "a __class__ property": "class Tag:\n    @property\n    def __class__(self):\n        return int",
    "an exception's args property": "class E(RuntimeError):\n    @property\n    def args(self):\n        return ()",
    "setattr under another name": "put, drop = setattr, delattr\nput(A, 'x', 1)",
    # Red team, 2026-12-07: torch's hooks into every tensor operation, which also saw the kernel's reads of the test's
    # tensors (the judge now reads them with the hooks off; the scan still points at them).
    "a torch dispatch mode": "from torch.utils._python_dispatch import TorchDispatchMode",
    "a torch dispatch module": "import torch.utils._python_dispatch as hooks",
    "a torch function mode": "import torch\nmode = torch.overrides.TorchFunctionMode()",
    "a __torch_dispatch__": "class Hide:\n    def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
                            "        return func(*args)",
    "a __torch_function__": "class Hide:\n    @classmethod\n    def __torch_function__(cls, func, types, args=()):\n"
                            "        return func(*args)",
    # Red team, round 16: a kernel of the student's in place of torch's own (the judge now reads tensors' memory), a
    # hash that runs another object's code through len(), and special methods bound to lambdas.
    "torch.library": "import torch.library\nlib = torch.library.Library('aten', 'IMPL')",
    "torch's dispatcher by hand": "import torch\ntorch._C._dispatch_library('IMPL', 'aten', '')",
    "a negative bit set by hand": "import torch\ntorch._C._set_neg(t, True)",
    "a __hash__ that calls len() of another object": "class A:\n    def __hash__(self):\n"
                                                     "        return hash((len(self.probe), 0))",
    "a __str__ bound to a lambda that changes state": "class E(RuntimeError):\n"
                                                      "    __str__ = lambda self: self.box.clear() or 'x'",
    "a class made by type() with a namespace": "Base = type('Base', (), {Key(): None})",
    "a class that names another module": "class Marker:\n    __module__ = 'numpy'",
    "a class that names another qualified name": "class Marker:\n    __qualname__ = 'str'",
    # Red team, round 17: objects found by a name in a string (the agent's package, sys's frame functions), the
    # agent's name spelled in parts, the recursion room that tells the judge's frames, the environment.
    "pkgutil's resolver": "import pkgutil\nagent = pkgutil.resolve_name('_cour' + 'se_judge_agent')",
    "pydoc's locate": "from pydoc import locate\ncount = locate('sys.getrefcount')",
    "a resolver reached by name": "count = resolver.resolve_name('sys:getrefcount')",
    "typing's evaluation of a string": "import typing\nhints = typing.get_type_hints(probe)",
    "the agent's name in parts": "name = '_cour' + 'se_judge_agent'",
    "the agent's name in an f-string": "name = f'_course_{\"judge\"}_agent'",
    "a recursion probe": ("def room(n=0):\n    try:\n        return room(n + 1)\n"
                          "    except RecursionError:\n        return n"),
    "the recursion limit": "import sys\nlimit = sys.getrecursionlimit()",
    "the environment": "import os\nparent = os.getenv('JPY_PARENT_PID')",
}


@pytest.mark.parametrize("code", TRICKS.values(), ids=TRICKS.keys())
def test_each_trick_is_flagged(code):
    assert findings(code, imported_names([GIVEN, code])), f"not flagged: {code!r}"


def test_a_class_of_the_notebook_changed_after_it_was_made_is_flagged():
    """A property put on a notebook's class at run time (``SequenceKVCache.x = property(...)``, in any cell) is read by
    the judge as the class was when it first crossed (red team, round 14: 2.4.1's last_access_step forged)."""
    given = "class SequenceKVCache:\n    pass\n"
    answer = "def _access(seq):\n    SequenceKVCache.last_access_step = property(lambda self: 0)\n"
    assert class_changes(answer, defined_classes([given, answer])) == [
        (2, "changes the class SequenceKVCache after it was made (SequenceKVCache.last_access_step)")]
    assert class_changes("def f(cache):\n    cache.size = 3\n", defined_classes([given])) == []
    alias = "_kind = SequenceKVCache\ndef later(seq):\n    _kind.x = 1\n    kind = type(seq)\n    kind.y = 2\n"
    assert [line for line, _ in class_changes(alias, defined_classes([given, alias]))] == [3, 5]


def test_flags_inside_functions_and_after_timing_magics():
    code = "%%time\n%timeit x = 1\ndef quotas(weights, total_blocks):\n    math.isclose = None\n    return {}"
    assert findings(code, {"math"}) == [(4, "assigns to math.isclose, part of an imported module or class")]


@pytest.mark.parametrize("code", ["!cat /etc/hostname", "%run other.ipynb", "%reset -f"])
def test_other_magics_and_shell_escapes_are_flagged(code):
    assert findings(code, set()) == [(1, "uses get_ipython")]


def test_honest_code_is_not_flagged():
    honest = (
        "import heapq, math, sys\nfrom dataclasses import dataclass, field\n"
        "class Cache:\n    def __init__(self):\n        self.__hits = 0\n        setattr(self, 'misses', 0)\n"
        "        self.items = []\n    def drop(self, key):\n        self.items.remove(key)\n"
        "print('progress', file=sys.stderr)\nbest = min([3, 1], key=lambda v: v)\nlimit = sys.maxsize\n"
    )
    assert findings(honest, imported_names([honest])) == []
    # A module's function read in an index or a call on the left of `=` is not written to (fairness round, round 18).
    tensors = ("import torch\nkeep = torch.zeros(8, dtype=torch.bool)\nkeep[torch.arange(2)] = True\n"
               "keep.view(torch.uint8)[0] = 1\ntorch.narrow(keep, 0, 1, 2)[0] = True\n"
               "a, keep[torch.tensor(3)] = 1, 2\n")
    assert findings(tensors, imported_names([tensors])) == []
    written = "import torch\ntorch.nn.functional.__dict__['x'] = 1\n(a, torch.ones) = 1, 2\n"
    assert {line for line, _ in findings(written, imported_names([written]))} == {2, 3}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_answer_of_the_course_is_flagged(assignment):
    """The reference, the release and every correct and wrong variant of the mutation suite, but the red-team answers
    that a module's FLAGGED names (they patch a class or read frames on purpose): the scan flags each of those."""
    source = nbformat.read(ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    release = nbformat.read(ROOT / "release" / assignment / f"{assignment}.ipynb", as_version=4)
    answers = solution_code(source)
    assert scan(release, release) == []
    assert scan(fill(release, answers), release) == []
    mutants = load_mutants(assignment)
    flagged = getattr(mutants, "FLAGGED", {})
    for kind in ("ALTERNATIVES", "WRONG"):
        for grade_id, variants in getattr(mutants, kind).items():
            for name, code in variants.items():
                notes = scan(fill(release, {**answers, grade_id: code}), release)
                if kind == "WRONG" and name in flagged.get(grade_id, ()):
                    assert notes, (kind, grade_id, name, "is listed in FLAGGED, but the scan flags nothing")
                else:
                    assert notes == [], (kind, grade_id, name, notes)


REBINDINGS = {
    "a class of a given cell": "class SequenceKVCache(SequenceKVCache):\n    pass",
    "a function of a given cell, by def": "def make_sequence(*args):\n    return None",
    "a given name by assignment": "SequenceKVCache = dict",
    "a given name in a tuple assignment": "x, SequenceKVCache = 1, dict",
    "a given name by an import": "from collections import OrderedDict as SequenceKVCache",
    "a given name inside an if": "if True:\n    SequenceKVCache = dict",
    "a given name through global": "def swap():\n    global SequenceKVCache\n    SequenceKVCache = dict",
    "a given name by a walrus": "(SequenceKVCache := dict)",
    "a given name as an except target": "try:\n    1 / 0\nexcept ZeroDivisionError as SequenceKVCache:\n    pass",
    "a given name as a for target": "for make_sequence in [print]:\n    pass",
    "a given name captured by match": "match dict:\n    case SequenceKVCache:\n        pass",
    "a given name by a walrus in a comprehension": "[(make_sequence := x) for x in [print]]",
    "another task's answer": "def block_hashes(tokens, block_size, salt=0):\n    return []",
    "a given import, from another module": "import numpy as torch",
}


@pytest.mark.parametrize("code", REBINDINGS.values(), ids=REBINDINGS)
def test_a_cell_that_rebinds_a_given_name_or_another_task_s_answer_is_flagged(code):
    """Test cells build their cases with the notebook's given classes and helpers (``SequenceKVCache``,
    ``make_sequence``) and use earlier answers (``block_hashes``): a cell that rebinds one of those names would have
    the tests use its own version, so it gets a manual look. Its own task's names, a local name of the same
    spelling, a given import imported again, the names that only the experiments after the last test use
    (``manager``, ``i``) and a name the setup cell used when it ran (``SEED``) are not flagged."""
    release = nbformat.v4.new_notebook()
    cells = []
    for metadata, source in (
            ({"grade": False, "solution": False, "locked": True, "grade_id": "given"},
             "import torch\n\nSEED = 0\ntorch.manual_seed(SEED)\n\n\nclass SequenceKVCache:\n    pass\n\n\n"
             "def make_sequence():\n    return SequenceKVCache()"),
            ({"grade": False, "solution": True, "locked": False, "grade_id": "task6_1_block_hashes"},
             "def block_hashes(tokens, block_size, salt=0):\n    return []"),
            ({"grade": False, "solution": True, "locked": False, "grade_id": "task6_3_serve"},
             "def serve(model, cache, tokens):\n    return None"),
            ({"grade": True, "solution": False, "locked": True, "grade_id": "test_task6_3", "points": 1},
             "assert serve(None, make_sequence(), block_hashes([], 1)) is None and torch"),
            ({}, "manager = make_sequence()\nfor i in range(2):\n    print(manager, i)")):
        cell = nbformat.v4.new_code_cell(source)
        if metadata:
            cell.metadata["nbgrader"] = metadata
        cells.append(cell)
    release.cells = cells
    assert scan(release, release) == []
    honest = fill(release, {"task6_3_serve": "import torch\n\n\ndef serve(model, cache, tokens):\n"
                                             "    SequenceKVCache = dict\n    block_hashes = []\n    return None\n\n\n"
                                             "manager = None\nfor i in range(3):\n    pass\nSEED = 1"})
    assert scan(honest, release) == []
    notes = scan(fill(release, {"task6_3_serve": code}), release)
    assert any("rebinds" in note for note in notes), notes


def test_scan_names_the_cell_and_line_and_skips_course_cells():
    release = nbformat.read(ROOT / "release" / ASSIGNMENTS[0] / f"{ASSIGNMENTS[0]}.ipynb", as_version=4)
    answers = solution_code(nbformat.read(ROOT / "source" / ASSIGNMENTS[0] / f"{ASSIGNMENTS[0]}.ipynb", as_version=4))
    grade_id = next(iter(answers))
    notebook = fill(release, {**answers, grade_id: answers[grade_id] + "\nimport ctypes"})
    notebook.cells.append(nbformat.v4.new_code_cell("exec('1')"))
    notes = scan(notebook, release)
    assert any(note.startswith(f"{grade_id}, line ") and "imports ctypes" in note for note in notes), notes
    assert f"a cell you added (cell {len(notebook.cells)}), line 1: uses exec" in notes


def _test_cell(outputs):
    cell = nbformat.v4.new_code_cell("assert True")
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "test", "points": 1}
    cell.outputs = outputs
    return cell


KERNEL_OUTPUTS = [nbformat.v4.new_output("stream", name="stdout", text="checked 5 cases\n"),
                  nbformat.v4.new_output("error", ename="AssertionError", evalue="forged by the kernel", traceback=[])]


def test_a_passing_verdict_keeps_what_the_student_printed_and_no_error_of_the_kernel():
    cell = _test_cell(list(KERNEL_OUTPUTS))
    settle(cell, {"grade_id": "test", "passed": True, "message": "", "traceback": []})
    assert [output.output_type for output in cell.outputs] == ["stream"]


@pytest.mark.parametrize("verdict", [None, {"grade_id": "test", "passed": False, "traceback": ["line 1"],
                                            "message": "AssertionError: f() returned 1; expected 2"}],
                         ids=["no verdict", "a failing verdict"])
def test_a_test_cell_without_a_passing_verdict_shows_the_judge_s_error_only(verdict):
    cell = _test_cell(list(KERNEL_OUTPUTS))
    settle(cell, verdict)
    errors = [output for output in cell.outputs if output.output_type == "error"]
    assert len(errors) == 1 and errors[0].evalue != "forged by the kernel", errors
    assert errors[0].ename == ("JudgeError" if verdict is None else "AssertionError")


def _release_and_answers():
    release = nbformat.read(ROOT / "release" / ASSIGNMENTS[0] / f"{ASSIGNMENTS[0]}.ipynb", as_version=4)
    answers = solution_code(nbformat.read(ROOT / "source" / ASSIGNMENTS[0] / f"{ASSIGNMENTS[0]}.ipynb", as_version=4))
    return release, answers


def test_the_release_decides_which_cells_are_the_student_s_never_the_submission_s_metadata():
    release, answers = _release_and_answers()
    grade_id = next(iter(answers))
    notebook = fill(release, {**answers, grade_id: answers[grade_id] + "\nimport ctypes"})
    cell = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    cell.metadata["nbgrader"].update(locked=True, grade=True, solution=False)  # It claims to be a test cell.
    test_cell = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == f"test_{grade_id}")
    test_cell.source = "import ctypes"  # nbgrader puts the release's test back, so this never runs.
    markdown = nbformat.v4.new_markdown_cell("import gc")
    markdown.metadata["nbgrader"] = dict(cell.metadata["nbgrader"], grade_id=grade_id)  # nbgrader makes it code again.
    notebook.cells.append(markdown)
    labels = [label for _, label, _ in student_cells(notebook, release)]
    assert labels.count(grade_id) == 2 and f"test_{grade_id}" not in labels
    notes = scan(notebook, release)
    assert any("imports ctypes" in note for note in notes) and any("imports gc" in note for note in notes), notes


@pytest.mark.parametrize("bomb", ["x = " + "+".join(["1"] * 3000), "y = " + "-" * 10000 + "1"],
                         ids=["RecursionError", "MemoryError"])
def test_code_the_parser_gives_up_on_is_flagged_not_fatal(bomb):
    release, answers = _release_and_answers()
    notebook = fill(release, answers)
    notebook.cells.append(nbformat.v4.new_code_cell(bomb))
    notes = scan(notebook, release)
    assert len(notes) == 1 and "cannot be parsed" in notes[0], notes
    assert repair(notebook, release) is not None


def test_grading_metadata_comes_from_the_release():
    release, answers = _release_and_answers()
    notebook = fill(release, answers)
    grade_id = next(iter(answers))
    cell = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    cell.metadata["nbgrader"]["locked"] = True
    stray = nbformat.v4.new_code_cell("pass")
    stray.metadata["nbgrader"] = {"grade": True, "grade_id": "invented", "points": 100, "solution": False}
    notebook.cells.append(stray)
    notes = restore_metadata(notebook, release)
    assert any(grade_id in note and "locked=True" in note for note in notes), notes
    assert any("unknown grade id" in note for note in notes) and "nbgrader" not in stray.metadata
    assert cell.metadata["nbgrader"]["locked"] is False
    assert restore_metadata(fill(release, answers), release) == []


# IPython's syntax rewritten in linear time (grading/isolation/magics.py, issue 30).

HONEST_MAGICS = ["%ls -la", "!pip install x", "x = !ls", "y = %pwd", "obj?", "obj??", "?obj", "%timeit f()", "/f a b",
                 ",f a b", ";f a b", "!!ls", "def f():\n    %ls\n    return 1", "if a:\n    !echo hi\n    b = 2\nc = 3",
                 "x = \\\n  %ls", "(a,\n b) = %ls", "%ls \\\n  more", "foo(1,\n 2)?", "%foo?", "!echo it's",
                 "s = '''\n%ls\n'''", "print('%d' % 3)", "a = b != c", "for i in range(3):\n    !echo {i}",
                 "%%bash\necho hi", "   %ls", "class A:\n    x = %pwd\n    y = 1", "x = 1  # why?", "%ls )", "%ls (",
                 "x' = %ls", "%ls # \\\n\"\"\"\nimport ctypes\nx = 1", ",%", "y = {\n 'a': 1,\n}", "    \n\n%ls"]


def _ipython(source: str) -> str | None:
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 - IPython gives up: the kernel runs nothing of such a cell.
        return None


def test_magics_are_rewritten_as_ipython_rewrites_them_or_flagged():
    """Every code cell of the course, honest magics, and seeded mixtures of them: IPython's result, or a flag."""
    import random

    from grading.isolation.magics import to_python

    cells = [cell.source for assignment in ASSIGNMENTS for kind in ("source", "release")
             for cell in nbformat.read(ROOT / kind / assignment / f"{assignment}.ipynb", as_version=4).cells
             if cell.cell_type == "code"]
    rng = random.Random(30)
    mixtures = ["\n".join(rng.choice(HONEST_MAGICS) for _ in range(rng.randint(2, 8))) for _ in range(600)]
    followed = 0
    for source in cells + HONEST_MAGICS + mixtures:
        mine, theirs = to_python(source), _ipython(source)
        assert mine.problem or theirs is None or mine.source == theirs, source
        followed += not mine.problem
    assert followed > len(cells) + 300, "most cells are followed, not flagged"
    for source in cells[:50] + ["%ls -la", "x = !ls", "obj?", "def f():\n    %ls\n    return 1"]:
        assert to_python(source).problem is None, source


def test_ipython_syntax_the_scan_cannot_follow_is_flagged_with_the_rest_of_the_cell():
    for source in ("!echo (x\nimport ctypes", "%ls # \\\n\"\"\"\nimport ctypes\n", "x' = %ls\nimport ctypes"):
        notes = [what for _, what in findings(source, set())]
        assert any("that the scan cannot follow" in what for what in notes), (source, notes)


def _magic_cell(lines: int) -> str:
    return "\n".join(f"%ls /tmp/{i}\nvalue_{i} = {i} * 2  # filler, filler, filler" for i in range(lines))


def _cpu_per_byte(notebook) -> float:
    import time

    from grading.isolation import scan as scan_module

    scan_module._parse.cache_clear()
    start = time.process_time()
    notes = scan(notebook, None)
    assert notes and "uses get_ipython" in notes[0], notes
    return (time.process_time() - start) / len(nbformat.writes(notebook))


def test_the_scan_costs_the_same_per_byte_for_cells_and_notebooks_of_growing_size():
    """The cost grows with the size, not faster: 16 times the size is not more than 3 times the cost per byte.

    IPython's own rewriting tokenized the whole cell again after each magic (a 12 KB cell took minutes).
    The ratios are of CPU time, measured in one run.
    """
    def one_cell(lines):
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_code_cell(_magic_cell(lines))]
        return notebook

    def many_cells(count):
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_code_cell(_magic_cell(20)) for _ in range(count)]
        return notebook

    for make, small, large in ((one_cell, 250, 4000), (many_cells, 16, 256)):
        _cpu_per_byte(make(small))  # Warm up: imports and caches.
        ratio = _cpu_per_byte(make(large)) / _cpu_per_byte(make(small))
        assert ratio < 3, f"{make.__name__}: the cost per byte grew {ratio:.1f} times for 16 times the size"


def test_a_notebook_of_1_mb_of_magics_and_filler_is_scanned_in_seconds():
    import time

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(_magic_cell(3000)) for _ in range(6)]
    assert len(nbformat.writes(notebook)) > 1 << 20
    start = time.process_time()
    notes = scan(notebook, None)
    seconds = time.process_time() - start
    assert notes[0].endswith("uses get_ipython") and seconds < 30, (seconds, notes)
