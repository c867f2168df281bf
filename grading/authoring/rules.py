"""Lists the rules each task's hidden tests assert, and where the task's text or visible test is silent.

    python -m grading.authoring.rules 03            # one notebook (a number or a full assignment id)
    python -m grading.authoring.rules               # every notebook

No surprise at grading (docs/AUTHORING.md §3): every rule a hidden test checks is stated in the task's
text, in English and in Chinese, and shown by a visible case. This module reads a task's hidden tests
(their code, messages and comments) and names the kinds of rule they assert: inputs left unchanged,
nothing changed when an error is raised, each exception type, input dtypes, devices, ties, empty
input, NaN, infinity, integers too large for float64, no Python loop. For each kind it then looks for
the same kind in the task's visible tests and for its words in the task's text: the markdown cells
above the solution cell and the docstrings of the solution cell (English), and the Chinese paragraphs
of those markdown cells. Every kind found in the hidden tests and missing from one of the three
places is a gap. tests/test_task_rules.py fails on a gap.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
import textwrap
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from grading.config import ASSIGNMENTS, ROOT

CJK = re.compile(r"[\u4e00-\u9fff]")

# A message that reports a changed input: "f changed its input", "... changed the cache before raising".
_CHANGED = re.compile(r"\bchanged (?:its|the|their|another|a|priority)\b|\b(?:must|should|may|do) not change\b", re.I)
# A message about an input or state after a call raised: "... changed its input before raising",
# "[step, num_free] after prefill raised ValueError (nothing may change)".
_BEFORE_RAISING = re.compile(r"\bbefore (?:raising|its \w+Error|it raised)\b|"
                             r"\b(?:raised \w*Error|after (?:that|the|its) \w*Error)\b.*\b(?:nothing|chang)", re.I)
_TIE = re.compile(r"\bti(?:e|es|ed|e-breaks?)\b", re.I)
_EMPTY = re.compile(r"\bempty\b", re.I)
_OTHER_DEVICE = re.compile(r"\b(?:another|other|different) device\b", re.I)

EXCEPTIONS = ("ValueError", "TypeError", "KeyError", "IndexError", "RuntimeError", "LookupError",
              "ZeroDivisionError", "OverflowError", "AssertionError")
# Input dtypes that a test names on purpose; the defaults (int64, float32, bool) are not a rule of their own.
_INTEGER_DTYPES = {"int32": "int32", "int16": "int16", "int8": "int8", "uint8": "uint8", "int": "int32",
                   "short": "int16"}
_FLOAT_DTYPES = {"float16": "float16", "half": "float16", "bfloat16": "bfloat16", "float64": "float64",
                 "double": "float64"}
_LARGEST_EXACT_FLOAT64_INT = 2**53


@dataclass(frozen=True)
class Kind:
    """A kind of rule: the words that state it in each language."""

    english: re.Pattern
    chinese: re.Pattern


def _words(english: str, chinese: str) -> Kind:
    return Kind(re.compile(english, re.I), re.compile(chinese, re.I))


_NO_CHANGE_EN = r"unchanged|untouched|change[sd]? nothing|nothing (?:is |may be )?changed|(?:is|are) not changed"
_UNCHANGED_EN = (_NO_CHANGE_EN + r"|read-only|(?:does not|do not|must not|never|not|"
                 r"without) (?:change|changing|modify|modifying|alter|altering|touch|touching|mutate|mutating)")
_NO_CHANGE_ZH = r"不(?:会|得|要|能|可)?(?:改变|修改|改动|更改)|不做任何(?:修改|改动)|保持不变|原样|不变"
_UNCHANGED_ZH = _NO_CHANGE_ZH + r"|只读"
KINDS = {
    "inputs unchanged": _words(_UNCHANGED_EN, _UNCHANGED_ZH),
    "unchanged on error": _words(rf"before (?:raising|it raises)|(?:raises?|error)[^.]{{0,120}}(?:{_NO_CHANGE_EN})|"
                                 rf"(?:{_NO_CHANGE_EN})[^.]{{0,120}}(?:raises?|error)",
                                 rf"(?:抛出|报错|异常)[^。]{{0,60}}(?:{_NO_CHANGE_ZH})|(?:{_NO_CHANGE_ZH})[^。]{{0,60}}(?:抛出|异常)"),
    "device": _words(r"\bdevices?\b", r"设备"),
    "devices must agree": _words(r"(?:same|another|other|different|one) device",
                                 r"同一(?:个)?设备|不同(?:的)?设备|另一个设备"),
    "ties": _words(r"\bti(?:e|es|ed)\b|tie-break", r"平局"),
    "empty input": _words(r"\bempty\b|no (?:entries|blocks|tokens|elements|sequences)\b|zero-length|length 0",
                          r"空(?!闲)"),
    "NaN": _words(r"\bNaN\b", r"\bNaN\b"),
    "infinity": _words(r"\binf\b|infinit|\bfinite\b", r"无穷|\binf\b|有限"),
    "large integers": _words(r"2\^\{?\d\d|2\*\*\d\d|10\^\{?1\d|10\*\*1\d|overflow|precision|"
                             r"(?:largest|as large as|maximum)[^.]{0,20}int64|int64[^.]{0,20}(?:allows|maximum|limit)",
                             r"溢出|精度|2\^\{?\d\d|2\*\*\d\d|最大值|int64 的上限"),
    "no Python loop": _words(r"\bloop", r"循环"),
}
_ANY_DTYPE = r"any (?:real |numeric )?dtype|any real|integer or floating"
_ANY_DTYPE_ZH = r"任意(?:实数|数值)?(?:数据)?类型|任意实数"
_INTEGER_FAMILY = rf"any (?:signed |unsigned )?integer|integer dtypes?|any int\b|{_ANY_DTYPE}"
_FLOAT_FAMILY = rf"any float|floating[- ]point dtypes?|float dtypes?|any floating|{_ANY_DTYPE}"


def dtype_kind(dtype: str) -> Kind:
    """The words that state an input dtype rule: the dtype's name or its family's ("any integer dtype")."""
    family, family_zh = ((_INTEGER_FAMILY, rf"任意(?:整数|整型)|整数(?:数据)?类型|{_ANY_DTYPE_ZH}")
                         if dtype in _INTEGER_DTYPES.values() else
                         (_FLOAT_FAMILY, rf"任意浮点|浮点(?:数据)?类型|{_ANY_DTYPE_ZH}"))
    return _words(rf"\b{dtype}\b|{family}", rf"\b{dtype}\b|{family_zh}")


def _family(rule: str) -> str | None:
    """"integer" or "float" for a dtype rule, else None."""
    if not rule.startswith("dtype "):
        return None
    return "integer" if rule.removeprefix("dtype ") in _INTEGER_DTYPES.values() else "float"


def shown(rule: str, visible: set[str]) -> bool:
    """Whether the visible tests show a rule: the same rule, or for a dtype another of its family (one visible
    case with int16 input tells that the hidden tests try other integer dtypes too)."""
    return rule in visible or (_family(rule) is not None and _family(rule) in {_family(r) for r in visible})


def kind_of(rule: str) -> Kind:
    """The words of a rule found by ``rules_in``: a kind's, an exception's name, or a dtype's."""
    if rule in KINDS:
        return KINDS[rule]
    if rule in EXCEPTIONS:
        return _words(rf"\b{rule}\b", rf"\b{rule}\b")
    return dtype_kind(rule.removeprefix("dtype "))


def _texts(tree: ast.AST, source: str) -> tuple[list[str], list[str]]:
    """The string constants (f-strings' literal parts) and the comments of some code."""
    inside_fstrings = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    strings = ["".join(part.value if isinstance(part, ast.Constant) else "{}" for part in node.values)
               for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)]
    strings += [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in inside_fstrings]
    comments = [token.string for token in tokenize.generate_tokens(io.StringIO(source).readline)
                if token.type == tokenize.COMMENT]
    return strings, comments


def _names(tree: ast.AST) -> set[str]:
    """Every name and attribute name the code mentions, and the names it imports."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.ImportFrom):
            found.update(alias.name for alias in node.names)
    return found


def _expected_exceptions(tree: ast.AST) -> set[str]:
    """The exception types the code expects (``assert_raises(ValueError, ...)``, ``except KeyError``, a table
    of cases), not those it raises itself to fail a test."""
    raised = {id(node) for statement in ast.walk(tree) if isinstance(statement, ast.Raise)
              for node in ast.walk(statement)}
    return {node.id for node in ast.walk(tree)
            if isinstance(node, ast.Name) and node.id in EXCEPTIONS and id(node) not in raised}


# Calls whose infinite or NaN argument is a masking idiom of the test itself, not an input value.
_MASKING = ("masked_fill", "masked_fill_", "where", "clamp", "amax", "amin")


def _helper_nodes(tree: ast.AST) -> set[int]:
    """The nodes that only compute expected values or bad arguments: those in a helper function (an oracle,
    anything but the ``_check_`` function), in an ``assert_raises`` call (its exception type is the rule), and in a
    masking call such as ``masked_fill(mask, float("-inf"))``."""
    helpers: set[int] = set()
    for node in ast.walk(tree):
        helper = isinstance(node, (ast.FunctionDef, ast.Lambda)) and not getattr(node, "name", "").startswith("_check_")
        if helper or isinstance(node, ast.Call) and _called(node) in ("assert_raises", *_MASKING):
            helpers.update(id(child) for child in ast.walk(node) if child is not node)
    return helpers


def _called(call: ast.Call) -> str:
    """The name of the function or method a call calls ("" for anything else)."""
    function = call.func
    if isinstance(function, ast.Name):
        return function.id
    return function.attr if isinstance(function, ast.Attribute) else ""


def _special_floats(tree: ast.AST, helpers: set[int]) -> set[str]:
    """"nan" and "inf" when the code gives an input a NaN or an infinity (``float("nan")``, ``math.inf``)."""
    found = set()
    for node in ast.walk(tree):
        if id(node) in helpers:
            continue
        if (isinstance(node, ast.Call) and _called(node) == "float" and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            value = node.args[0].value.strip().lower().lstrip("+-")
        elif isinstance(node, ast.Attribute) and node.attr in ("nan", "inf") and isinstance(node.value, ast.Name):
            value = node.attr
        else:
            continue
        if value in ("nan", "inf", "infinity"):
            found.add(value[:3])
    return found


def _input_dtypes(tree: ast.AST, helpers: set[int]) -> set[str]:
    """The non-default dtypes the code gives its inputs: in a ``dtype=`` argument, in an assignment to a name
    with "dtype" in it, as a choice in a list or tuple, and as a cast such as ``.int()``; not in helpers."""
    dtypes = {**_INTEGER_DTYPES, **_FLOAT_DTYPES}
    places: list[ast.AST] = []
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "dtype":
            places.append(node.value)
        elif isinstance(node, ast.Assign) and any(isinstance(target, ast.Name) and "dtype" in target.id
                                                  for target in node.targets):
            places.append(node.value)
        elif isinstance(node, (ast.List, ast.Tuple)):
            places.extend(node.elts)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args
              and node.func.attr in ("int", "short", "half", "double") and id(node) not in helpers):
            found.add(dtypes[node.func.attr])
    for place in [place for place in places if id(place) not in helpers]:
        for node in ast.walk(place) if not isinstance(place, ast.Attribute) else [place]:
            if isinstance(node, ast.Attribute) and node.attr in dtypes and isinstance(node.value, ast.Name) \
                    and node.value.id == "torch":
                found.add(dtypes[node.attr])
    return found


def _large_integers(tree: ast.AST) -> bool:
    """Whether the code writes an integer that float64 cannot hold exactly (2**62, 2**63 - 1, ...)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            base, power = node.left, node.right
            if (isinstance(base, ast.Constant) and isinstance(power, ast.Constant)
                    and type(base.value) is int and type(power.value) is int and 0 < power.value < 200):
                if abs(base.value) ** power.value > _LARGEST_EXACT_FLOAT64_INT:
                    return True
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            if abs(node.value) > _LARGEST_EXACT_FLOAT64_INT:
                return True
    return False


def rules_in(source: str, hidden: bool = True) -> set[str]:
    """The kinds of rule a piece of test code asserts, found in its code, messages and comments.

    In hidden tests the values that only serve expected results or error cases (see ``_helper_nodes``) do not
    count as input dtypes or special floats; in visible tests every mention shows the rule.
    """
    tree = ast.parse(textwrap.dedent(source))
    strings, comments = _texts(tree, textwrap.dedent(source))
    names = _names(tree)
    helpers = _helper_nodes(tree) if hidden else set()
    rules = _expected_exceptions(tree)
    rules.update(f"dtype {dtype}" for dtype in _input_dtypes(tree, helpers))
    special = _special_floats(tree, helpers)
    checks = {
        "inputs unchanged": any(_CHANGED.search(s) and not _BEFORE_RAISING.search(s) for s in strings),
        "unchanged on error": any(_BEFORE_RAISING.search(s) for s in strings),
        "device": "available_devices" in names,
        "devices must agree": any(_OTHER_DEVICE.search(s) for s in strings),
        "ties": any(_TIE.search(s) for s in strings + comments),
        "empty input": any(_EMPTY.search(s) for s in strings),
        "NaN": "nan" in special or any(re.search(r"\bNaN\b", s) for s in strings),
        "infinity": "inf" in special,
        "large integers": _large_integers(tree),
        "no Python loop": "assert_no_python_loop" in names,
    }
    rules.update(rule for rule, found in checks.items() if found)
    return rules


def split_hidden(source: str) -> tuple[str, str]:
    """A test cell's visible code (the hidden block left out) and its hidden block."""
    visible, hidden, inside = [], [], False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped.startswith("### BEGIN HIDDEN TESTS"):
            inside = True
        elif stripped.startswith("### END HIDDEN TESTS"):
            inside = False
        else:
            (hidden if inside else visible).append(line)
    return "\n".join(visible), "\n".join(hidden)


def _paragraphs(markdown: str) -> tuple[str, str]:
    """The English and the Chinese paragraphs of some markdown, each joined: a paragraph with Chinese is Chinese."""
    english, chinese = [], []
    for paragraph in re.split(r"\n\s*\n", markdown):
        (chinese if CJK.search(paragraph) else english).append(paragraph)
    return "\n\n".join(english), "\n\n".join(chinese)


def _docstrings(source: str) -> str:
    """The docstrings of the functions and classes a solution cell defines, methods included."""
    tree = ast.parse(source)
    return "\n\n".join(ast.get_docstring(node) or "" for node in ast.walk(tree)
                       if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))


@dataclass
class TaskRules:
    """One task: its id, its text in each language, and the rules of its hidden and visible tests."""

    task_id: str
    english: str
    chinese: str
    hidden: set[str] = field(default_factory=set)
    visible: set[str] = field(default_factory=set)

    def gaps(self) -> list[str]:
        """Each hidden rule that the text (in either language) or the visible tests do not name."""
        found = []
        for rule in sorted(self.hidden):
            kind = kind_of(rule)
            missing = [where for where, present in (("English text", kind.english.search(self.english)),
                                                    ("Chinese text", kind.chinese.search(self.chinese)),
                                                    ("visible test", shown(rule, self.visible))) if not present]
            if missing:
                found.append(f"{self.task_id} {rule}: not in its {', '.join(missing)}")
        return found


def _task_id(grade_id: str) -> str:
    number = re.match(r"task(\d+)_(\d+)_", grade_id)
    return f"{number.group(1)}.{number.group(2)}" if number else grade_id


def task_rules(assignment: str, root: Path = ROOT) -> list[TaskRules]:
    """Every task of a source notebook with its text and the rules of its hidden and visible tests."""
    cells = nbformat.read(root / "source" / assignment / f"{assignment}.ipynb", as_version=4).cells
    tasks: list[TaskRules] = []
    for index, cell in enumerate(cells):
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            above = []
            for previous in reversed(cells[:index]):
                if previous.cell_type != "markdown":
                    break
                above.insert(0, previous.source)
            english, chinese = _paragraphs("\n\n".join(above))
            tasks.append(TaskRules(_task_id(meta["grade_id"]), english + "\n\n" + _docstrings(cell.source), chinese))
        elif meta.get("grade") and cell.cell_type == "code" and tasks:
            visible, hidden = split_hidden(cell.source)
            tasks[-1].visible |= rules_in(visible, hidden=False)
            tasks[-1].hidden |= rules_in(hidden) if hidden.strip() else set()
    return tasks


def gaps(assignment: str, root: Path = ROOT) -> list[str]:
    """Every gap of a notebook's tasks, as ``"3.6 inputs unchanged: not in its English text, visible test"``."""
    return [gap for task in task_rules(assignment, root) for gap in task.gaps()]


def assignment_named(name: str) -> str:
    """The assignment id that ``name`` ("3", "03", "03_lru_lfu") stands for."""
    for assignment in ASSIGNMENTS:
        if name == assignment or (name.isdigit() and int(name) == int(assignment[:2])):
            return assignment
    raise SystemExit(f"no notebook {name!r}; the notebooks are {', '.join(ASSIGNMENTS)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="notebook numbers or ids (default: all)")
    args = parser.parse_args(argv)
    total = 0
    for assignment in [assignment_named(name) for name in args.notebooks] or ASSIGNMENTS:
        print(f"# {assignment}")
        for task in task_rules(assignment):
            print(f"{task.task_id}: hidden tests assert {', '.join(sorted(task.hidden)) or 'no listed rule'}")
            for gap in task.gaps():
                print(f"  GAP {gap}")
                total += 1
    print(f"{total} gap(s)")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
