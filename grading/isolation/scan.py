"""Finds code in a submission that no exercise needs and that tampers with grading; flags it for a look.

No task of this course needs to patch a library, reach into the interpreter, run strings as code,
touch files or processes, read IPython's history or the source of the calling cell (``linecache``,
``traceback``, ``inspect``), or display HTML, JavaScript or Markdown (which could run script in the
grader's browser; grading/isolation/sanitize.py removes it from what formgrader and feedback show). Code
that does is most likely an attempt to game the grader (or a very unusual answer), so the grading
command gives it the status "needs a manual look" and says where it is. The scan takes no points
away and protects no score: the judge (grading/judge/: every test verdict outside the student's
kernel) and the sandbox (grading/isolation/sandbox.py) do that; the scan makes sure an instructor looks at it.
"""

from __future__ import annotations

import ast
import functools
import re

import nbformat

from grading.isolation.magics import Rewritten, to_python

_MODULES = {"ctypes", "gc", "inspect", "importlib", "builtins", "subprocess", "socket", "signal", "multiprocessing",
            "threading", "sqlite3", "shutil", "glob", "pickle", "marshal", "code", "codeop", "pty", "resource",
            "mmap", "atexit", "pathlib", "tempfile", "_thread", "IPython", "ipykernel", "jupyter_client", "zmq",
            "traitlets", "comm", "linecache", "tracemalloc", "faulthandler", "sysconfig", "site", "posix", "io",
            "fcntl", "selectors", "asyncio", "concurrent", "weakref", "types", "dis", "runpy", "zipimport",
            "traceback", "_course_judge_agent", "grading", "nbgrader", "pkgutil", "pydoc", "unittest"}
# The kernel's side of the judge (grading/judge/prelude.py) loads as this package and keeps the agent in it under a
# name that starts with it: code that names either patches what reports the student's changes to the test's values.
_JUDGE_AGENT = "_course_judge"
# The modules that code reaches through an imported module's attributes as surely as by importing them.
_REACHABLE_MODULES = _MODULES | {"sys", "os"}
_ALLOWED_SYS = {"maxsize", "float_info", "version_info", "stderr"}
# Functions that turn a string into the object it names ("sys:_getframe", "_course_judge_agent"), past every rule on
# names: pkgutil's and pydoc's resolvers (their modules are flagged too), typing's evaluation of string annotations
# (red team, round 17).
_RESOLVERS = {"resolve_name", "locate", "import_module", "get_type_hints", "get_annotations", "ForwardRef"}
_ATTRIBUTES = {"__code__", "__globals__", "__builtins__", "__closure__", "__subclasses__", "__dict__", "__import__",
               "__getattribute__", "__setattr__", "__delattr__", "__reduce__", "__reduce_ex__",
               "settrace", "setprofile", "_getframe", "f_back", "f_globals", "f_locals", "f_builtins", "f_lineno",
               "f_trace", "f_code", "gi_frame", "cr_frame", "ag_frame", "tb_frame", "tb_next", "meta_path",
               "path_hooks", "excepthook", "displayhook", "addaudithook", "read_text",
               "read_bytes", "write_text", "write_bytes", "input_transformers_post", "input_transformers_cleanup",
               "ast_transformers", "run_cell", "showtraceback", "iopub_socket", "display_pub", "CodeType",
               "FunctionType", "_python_dispatch", "TorchDispatchMode", "TorchFunctionMode", "__torch_dispatch__",
               "__torch_function__", "_push_mode", "_DisableTorchDispatch", "DisableTorchFunction", "library",
               "Library", "custom_op", "register_kernel", "_C", "_dispatch_library", "_set_neg", "_set_conj"}
# Parts of a module's dotted name that no task needs: torch's hooks into every tensor operation, which also run in
# the code that reports the student's changes to the test's tensors (torch.utils._python_dispatch, torch.overrides,
# torch.library, whose kernels replace torch's own).
_HOOK_MODULE_PARTS = {"_python_dispatch", "overrides", "library"}
_OS_FUNCTIONS = {"system", "popen", "fork", "forkpty", "kill", "killpg", "_exit", "execv", "execve", "execl", "execlp",
                 "execvp", "execvpe", "execle", "execlpe", "spawnv", "spawnl", "spawnve", "spawnle", "spawnvp",
                 "spawnlp", "spawnvpe", "spawnlpe", "posix_spawn", "posix_spawnp", "unlink", "remove",
                 "rmdir", "rename", "replace", "walk", "listdir", "scandir", "chmod", "chown", "makedirs", "mkdir",
                 "open", "fdopen", "write", "setsid", "setpgid", "dup2", "pipe", "environ", "putenv", "getpid",
                 "getppid", "chdir", "symlink", "link", "truncate", "memfd_create", "sched_setaffinity",
                 "sched_setscheduler", "sched_setparam", "nice", "setpriority", "getenv", "getenvb"}
# Rich display that can carry script: IPython's HTML, JavaScript, Markdown and SVG objects, widgets
# that show HTML, and the display hooks an object can define.
_ACTIVE_DISPLAY = {"HTML", "Javascript", "Markdown", "SVG", "IFrame", "HTMLMath", "display_html",
                   "display_javascript", "display_markdown", "display_svg", "publish_display_data"}
_RICH_REPR = {"_repr_html_", "_repr_javascript_", "_repr_markdown_", "_repr_svg_", "_repr_mimebundle_",
              "_ipython_display_"}
_NAMES = {"get_ipython", "In", "Out", "_ih", "_oh", "_i", "_ii", "_iii", "__builtins__", "__import__", "exec", "eval",
          "compile", "globals", "locals", "vars", "open", "breakpoint", "exit", "quit", "display", "__loader__",
          "__spec__", "RecursionError"}
_ATTRIBUTE_FUNCTIONS = {"getattr", "setattr", "delattr", "hasattr", "attrgetter", "methodcaller"}


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _constant_string(node: ast.AST | None) -> str | None:
    """The value of a string that the code spells out ("f_" + "back", f"{'_get'}frame"), or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _constant_string(node.left), _constant_string(node.right)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.JoinedStr):
        parts = [_constant_string(v.value if isinstance(v, ast.FormattedValue) else v) for v in node.values]
        return "".join(parts) if all(part is not None for part in parts) else None
    return None


def _attribute_finding(module: str | None, attribute: str) -> str | None:
    """What is wrong with reading ``attribute`` (of the module ``module``, when known), or None."""
    if attribute in _ATTRIBUTES:
        return f"uses .{attribute}"
    if module == "sys" and attribute not in _ALLOWED_SYS:
        return f"uses sys.{attribute}"
    if module == "os" and attribute in _OS_FUNCTIONS:
        return f"uses os.{attribute}"
    return None


_HARMLESS_MAGICS = re.compile(r"^(\s*)%{1,2}(time|timeit|matplotlib)\b(?!\s*-)(.*)$")


def _python_source(source: str) -> Rewritten:
    """The cell as plain Python, line for line, and what in it the rewriting could not follow.

    ``%time``, ``%timeit`` (without options) and ``%matplotlib`` become the statement they time (or
    ``pass``); other magics and shell escapes become the ``get_ipython()`` calls IPython would run
    (grading/isolation/magics.py, in time linear in the cell), which are flagged.
    """
    lines = []
    for line in source.splitlines():
        match = _HARMLESS_MAGICS.match(line)
        if match:
            statement = match.group(3).strip() if match.group(2) != "matplotlib" else ""
            line = match.group(1) + (statement or "pass")
        lines.append(line)
    return to_python("\n".join(lines))


class Unparsable(Exception):
    """The parser itself failed on a cell (RecursionError, MemoryError): code no task needs."""


class _Parsed(tuple):
    """A cell's (syntax tree, IPython syntax not followed), and what the scan derives from the tree, computed
    once: a notebook's cells recur from scan to scan (the course's own cells in every submission, the mutation
    suite's answers in one notebook each), and `_parse`'s cache keeps all of it."""

    def __new__(cls, tree: ast.AST | None, problem: str | None) -> _Parsed:
        parsed = super().__new__(cls, (tree, problem))
        parsed.imports = None
        parsed.findings = {}
        return parsed


@functools.lru_cache(maxsize=256)
def _parse(source: str) -> _Parsed:
    """The cell's syntax tree (None for a syntax error, an honest mistake the kernel reports) and the
    IPython syntax in it that could not be followed (see grading/isolation/magics.py), or None.

    Raises:
        Unparsable: when the parser runs out of stack or memory (deeply nested code).
    """
    try:
        python = _python_source(source)
        try:
            return _Parsed(ast.parse(python.source), python.problem)
        except SyntaxError:
            return _Parsed(None, python.problem)
    except (RecursionError, MemoryError, ValueError, OverflowError) as error:
        raise Unparsable(f"{type(error).__name__}: the parser gave up (deeply nested or huge code)") from None


def imported_names(sources: list[str]) -> dict[str, str]:
    """Every name that an import statement in ``sources`` binds, and the module it stands for.

    ``import numpy as np`` binds ``np`` to ``numpy``; ``from os import path`` binds ``path`` to
    ``os.path``. Cells the parser cannot read are left out (`findings` flags them).
    """
    names: dict[str, str] = {}
    for source in sources:
        try:
            parsed = _parse(source)
        except Unparsable:
            continue
        if parsed.imports is None:
            parsed.imports = _imports(parsed[0])
        names.update(parsed.imports)
    return names


def _imports(tree: ast.AST | None) -> tuple[tuple[str, str], ...]:
    """The (name, module) pairs that the import statements of one cell bind, in order."""
    pairs = []
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                pairs.append((alias.asname or top, alias.name if alias.asname else top))
        elif isinstance(node, ast.ImportFrom):
            pairs.extend((alias.asname or alias.name, f"{node.module or ''}.{alias.name}") for alias in node.names)
    return tuple(pairs)


def findings(source: str, imported) -> list[tuple[int, str]]:
    """(line, what) for each suspicious construct in one cell's code; ``imported`` as from `imported_names`."""
    try:
        parsed = _parse(source)
    except Unparsable as error:
        return [(0, f"cannot be parsed: {error}")]
    tree, problem = parsed
    unfollowed = [(0, problem)] if problem else []
    if tree is None:
        return unfollowed
    modules = imported if isinstance(imported, dict) else {name: name for name in imported}
    key = tuple(sorted(modules.items()))
    if key not in parsed.findings:
        try:
            parsed.findings[key] = _findings(tree, modules)
        except (RecursionError, MemoryError) as error:
            return [(0, f"cannot be analysed: {type(error).__name__} (deeply nested code)")]
    return unfollowed + parsed.findings[key]


def _flagged_module(dotted: str) -> bool:
    """Whether importing ``dotted`` is flagged: its package is in `_MODULES`, or a part is in `_HOOK_MODULE_PARTS`."""
    parts = dotted.split(".")
    return parts[0] in _MODULES or not _HOOK_MODULE_PARTS.isdisjoint(parts)


def _findings(tree: ast.AST, modules: dict[str, str]) -> list[tuple[int, str]]:
    found = []
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _flagged_module(alias.name):
                    found.append((line, f"imports {alias.name}"))
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if _flagged_module(module):
                found.append((line, f"imports {module}"))
            for alias in node.names:
                # "from sys import displayhook" reads sys.displayhook as surely as the attribute does.
                what = _attribute_finding(module, alias.name) or (
                    f"imports {alias.name} from {module}" if alias.name in _NAMES or alias.name == "*" else None)
                if what:
                    found.append((line, what))
            active = [alias.name for alias in node.names if alias.name in _ACTIVE_DISPLAY]
            if active:
                names = ", ".join(active)
                found.append((line, f"displays HTML, JavaScript or Markdown ({names} from {node.module})"))
        elif isinstance(node, ast.Attribute):
            module = modules.get(node.value.id) if isinstance(node.value, ast.Name) else None
            what = _attribute_finding(module, node.attr)
            if what:
                found.append((line, what))
            elif _root_name(node) in modules and node.attr.lstrip("_") in _REACHABLE_MODULES:
                # A module that another module imported is its attribute: os.sys, torch.sys, copy.weakref, random._os.
                found.append((line, f"reaches the module {node.attr.lstrip('_')} through {ast.unparse(node)}"))
            elif node.attr in _ACTIVE_DISPLAY or node.attr in _RICH_REPR:
                found.append((line, f"displays HTML, JavaScript or Markdown (.{node.attr})"))
        elif isinstance(node, ast.Name) and node.id in _NAMES:
            found.append((line, f"uses {node.id}"))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in _RICH_REPR:
            found.append((line, f"displays HTML, JavaScript or Markdown (defines {node.name})"))
        spelled = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute)
                   else node.value if isinstance(node, ast.Constant) and isinstance(node.value, str)
                   else _constant_string(node) if isinstance(node, (ast.BinOp, ast.JoinedStr)) else None)
        if spelled is not None and _JUDGE_AGENT in spelled:
            found.append((line, f"names the judge's agent in the kernel ({spelled[:60]})"))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"
                and len(node.args) == 3):
            found.append((line, "makes a class with type(name, bases, namespace), whose namespace the judge reads"))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.extend((line, what) for what in _class_change(node))
            if node.name in _CALLED_BY_THE_JUDGE and _changes_state(node, _reading_calls(node.name)):
                found.append((line, f"{node.name} changes state; the judge calls it where one process may not"))
            if node.name in _NEVER_NEEDED:
                found.append((line, f"defines {node.name}, " + (
                    "a hook into torch's operations" if node.name.startswith("__torch_")
                    else "which the judge's reads of the object would call")))
        if isinstance(node, ast.ClassDef):
            found.extend((line, what) for what in _class_findings(node, tree))
        if isinstance(node, ast.Name) and node.id in ("setattr", "delattr") and id(node) not in called:
            found.append((line, f"uses {node.id} other than by calling it (its calls under another name go unseen)"))
        if isinstance(node, ast.Call) and any(keyword.arg == "raw" for keyword in node.keywords):
            found.append((line, "displays raw output data (raw=...)"))
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else (
                node.func.attr if isinstance(node.func, ast.Attribute) else None)
            if name in _ATTRIBUTE_FUNCTIONS:
                found.extend((line, what) for what in _attribute_call(name, node, modules))
            if name in _RESOLVERS:
                found.append((line, f"calls {name}, which finds an object by a name in a string"))
        if isinstance(node, _ASSIGNMENTS):
            for target in _targets(node):
                for part in _written(target):
                    root = _root_name(part)
                    dunder = isinstance(part, ast.Attribute) and part.attr.startswith("__") and part.attr.endswith("__")
                    if root in modules or dunder:
                        found.append((line, f"assigns to {ast.unparse(part)}"
                                      + (", part of an imported module or class" if root in modules else "")))
                        break
    return sorted(set(found))


_ASSIGNMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)


def _written(target: ast.expr) -> list[ast.expr]:
    """The attributes and items that an assignment's target writes to, and what holds them: ``a.b[i].c`` gives
    ``a.b[i].c``, ``a.b[i]`` and ``a.b``. An index, or a call's arguments, are only read (``keep[torch.arange(n)] =
    True`` writes to ``keep``, not to ``torch``: fairness round, round 18), and a call's result is a new object."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return [part for element in target.elts for part in _written(element)]
    if isinstance(target, ast.Starred):
        return _written(target.value)
    parts = []
    while isinstance(target, (ast.Attribute, ast.Subscript)):
        parts.append(target)
        target = target.value
    return parts


def _targets(node: ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete) -> list[ast.expr]:
    """What an assignment or a ``del`` statement binds, changes or removes."""
    return node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]


def _is_type_call(node: ast.AST) -> bool:
    """Whether ``node`` is ``type(...)``: the class of an object."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"


# The special methods of a student's object that the kernel's side of the judge calls itself: an object's hash when
# it first crosses, an exception's text when it crosses, an object's repr where the judge describes it.
_CALLED_BY_THE_JUDGE = {"__hash__", "__str__", "__repr__"}
_METACLASS = re.compile(r"(^|\.)(type|\w*Meta|\w*meta|\w*Type)$")
_PLAIN_METACLASSES = {"ABCMeta", "abc.ABCMeta"}  # What a class may name as its metaclass without a look.
# Special methods no exercise needs, that run when the judge (or Python) reads an object: `isinstance` reads a
# ``__class__`` property, every attribute read goes through ``__getattribute__``, an exception's ``args`` crosses.
_NEVER_NEEDED = {"__class__", "__getattribute__", "__instancecheck__", "__subclasscheck__", "args",
                 "__torch_dispatch__", "__torch_function__"}
_NAMES_ITS_PLACE = {"__module__", "__qualname__"}  # A class that says it is another module's (red team, 2026-12-07).


def _class_findings(node: ast.ClassDef, tree: ast.AST) -> list[str]:
    """Findings for a class statement: a metaclass (one derived from ``type``, computed, or named by ``metaclass=``
    but ``ABCMeta``), and a special method that the judge calls bound by assignment to a function that changes
    state (``__hash__ = _reset_and_hash``)."""
    found = []
    if any(_METACLASS.search(ast.unparse(base)) or isinstance(base, ast.Call) for base in node.bases) or any(
            keyword.arg == "metaclass" and ast.unparse(keyword.value) not in _PLAIN_METACLASSES
            for keyword in node.keywords):
        found.append(f"defines or uses a metaclass ({node.name}), whose hooks see the judge read the class")
    functions = None  # The cell's functions by name, found when a class body first binds a special method.
    for statement in node.body:
        if isinstance(statement, ast.Assign) and any(isinstance(target, ast.Name) and target.id in _NAMES_ITS_PLACE
                                                     for target in statement.targets):
            found.append(f"says in {node.name}'s body which module or name it has, which the judge looks up")
            continue
        # ``__hash__ = None`` makes a class unhashable, as a dataclass does: no code of the student's.
        if not isinstance(statement, ast.Assign) or isinstance(statement.value, ast.Constant):
            continue
        for target in statement.targets:
            if not (isinstance(target, ast.Name) and target.id in _CALLED_BY_THE_JUDGE | _NEVER_NEEDED):
                continue
            named = isinstance(statement.value, ast.Name)
            if target.id in _CALLED_BY_THE_JUDGE:
                if isinstance(statement.value, ast.Lambda):  # ``__str__ = lambda self: ...``: the student's code.
                    if not _changes_state(statement.value, _reading_calls(target.id)):
                        continue
                elif not named:  # Another class's method (``float.__hash__``) is not the student's code.
                    continue
                else:
                    if functions is None:
                        functions = {each.name: each for each in ast.walk(tree)
                                     if isinstance(each, (ast.FunctionDef, ast.AsyncFunctionDef))}
                    bound = functions.get(statement.value.id)
                    if bound is not None and not _changes_state(bound, _reading_calls(target.id)):
                        continue
            found.append(f"binds {target.id} to {ast.unparse(statement.value)[:60]}, which the judge may call")
    return found


# What such a method may call without a look: functions and methods that only read.
_READING_CALLS = {"hash", "str", "repr", "format", "len", "tuple", "int", "float", "bool", "sorted", "id", "type",
                  "super", "isinstance", "min", "max", "sum", "round", "abs", "list", "frozenset", "items", "keys",
                  "values", "join", "get", "tolist", "item", "size", "dim", "numel", "__str__", "__repr__", "__hash__"}


# What a __hash__ may call without a look: a hash that calls len(), str() or sorted(key=...) on another object runs
# that object's code, which the judge may call where one process does not (when the object crosses in a dict's key).
_HASH_CALLS = {"hash", "id", "type", "super", "isinstance", "tuple", "frozenset", "__hash__"}


def _reading_calls(name: str) -> set[str]:
    return _HASH_CALLS if name == "__hash__" else _READING_CALLS


def _changes_state(function: ast.AST, reading: set[str] = _READING_CALLS) -> bool:
    """Whether a function assigns to an attribute or an item, declares a global or nonlocal name, or calls anything
    but what only reads (``reading``): a helper it calls could change state for it."""
    for node in ast.walk(function):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return True
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else (
                node.func.attr if isinstance(node.func, ast.Attribute) else None)
            own = isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and (
                node.func.value.id in ("self", "cls"))  # The object's own methods may change it.
            if name not in reading or own and not name.startswith("__"):
                return True
        if isinstance(node, _ASSIGNMENTS) and any(isinstance(part, (ast.Attribute, ast.Subscript))
                                                  for target in _targets(node) for part in ast.walk(target)):
            return True
    return False


# Changes to a class after it was made: the judge reads a class's descriptors and attribute hooks once, when the class
# first crosses (grading/judge/agent.py, `class_info`).
def _class_change(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """Findings for a function that assigns to its class's attributes (``cls.x = ...`` in a class method,
    ``type(self).x = ...``)."""
    found = []
    body = [node for statement in function.body for node in ast.walk(statement)]
    decorators = {ast.unparse(decorator) for decorator in function.decorator_list}
    arguments = function.args.posonlyargs + function.args.args
    owner = arguments[0].arg if arguments and ("classmethod" in decorators or arguments[0].arg in ("cls", "mcs")) \
        else None
    for node in body:
        for target in _targets(node) if isinstance(node, _ASSIGNMENTS) else ():
            value = target.value if isinstance(target, ast.Attribute) else None
            if isinstance(value, ast.Name) and value.id == owner or _is_type_call(value):
                found.append(f"changes a class after it was made ({ast.unparse(target)})")
    return found


def class_changes(source: str, classes: set[str]) -> list[tuple[int, str]]:
    """(line, what) for each assignment in ``source`` to an attribute of a class that a cell of the notebook defines
    (``SequenceKVCache.last_access_step = property(...)``), made after the class: the judge reads a class's descriptors
    and hooks once, when it first crosses."""
    try:
        tree = _parse(source)[0]
    except Unparsable:
        return []
    found = []
    for node in ast.walk(tree) if tree is not None else ():
        for target in _targets(node) if isinstance(node, _ASSIGNMENTS) else ():
            value = target.value if isinstance(target, ast.Attribute) else None
            if isinstance(value, ast.Name) and value.id in classes:
                found.append((node.lineno, f"changes the class {value.id} after it was made ({ast.unparse(target)})"))
    return found


def defined_classes(sources: list[str]) -> set[str]:
    """The names that a ``class`` statement binds in any of ``sources``, at any depth, and the names assigned one of
    them or ``type(...)`` (``alias = SequenceKVCache``, ``kind = type(self)``)."""
    names, assignments = set(), []
    for source in sources:
        try:
            tree = _parse(source)[0]
        except Unparsable:
            continue
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                assignments.extend((target.id, node.value) for target in targets if isinstance(target, ast.Name))
    for _ in range(len(assignments)):  # Aliases of aliases, until no new one.
        new = {name for name, value in assignments
               if name not in names and (isinstance(value, ast.Name) and value.id in names or _is_type_call(value))}
        if not new:
            break
        names |= new
    return names


def _attribute_call(name: str, node: ast.Call, modules: dict[str, str]) -> list[str]:
    """Findings for ``getattr(obj, "f_back")``-style lookups and for setattr/delattr on anything."""
    if name in ("attrgetter", "methodcaller"):
        spelled = [_constant_string(arg) for arg in node.args]
        return [f"looks up .{text}" for text in spelled if text and any(
            _attribute_finding(None, part) for part in text.split("."))] + (
            [f"calls {name} with a computed name"] if None in spelled else [])
    target = node.args[0] if node.args else None
    attribute = node.args[1] if len(node.args) > 1 else None
    own = isinstance(target, ast.Name) and target.id == "self"  # On cls, it changes a class (`_class_change`).
    module = modules.get(target.id) if isinstance(target, ast.Name) else None
    text = _constant_string(attribute)
    found = []
    if name in ("setattr", "delattr") and not own:
        found.append(f"calls {name} on {ast.unparse(target) if target else 'something'}")
    if text is not None:
        what = _attribute_finding(module, text) or (
            f"looks up {text}" if text.startswith("__") and text.endswith("__") else None)
        if what:
            found.append(f"{what} (through {name})")
    elif module is not None and not own:
        found.append(f"calls {name} on {target.id} with a computed name")
    return found


def student_cells(notebook: nbformat.NotebookNode, release: nbformat.NotebookNode | None
                  ) -> list[tuple[int, str, nbformat.NotebookNode]]:
    """(position, label, cell) of every cell whose code the student wrote and that will run.

    The release notebook decides, never the submission's own metadata (which a student can
    edit): a cell is the course's when nbgrader puts the release's source back into it (its
    grade id names a read-only or test cell of the release) or when its source is that of one of
    the release's given cells. Every other code cell is the student's, and so is a cell of another
    type whose grade id names a release code cell, since nbgrader makes it a code cell again.
    """
    release_cells = {cell.metadata.get("nbgrader", {}).get("grade_id"): cell
                     for cell in (release.cells if release else [])
                     if cell.metadata.get("nbgrader", {}).get("grade_id")}
    given = {cell.source.strip() for cell in (release.cells if release else []) if cell.cell_type == "code"
             and not cell.metadata.get("nbgrader", {}).get("solution")}
    cells = []
    for position, cell in enumerate(notebook.cells):
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        original = release_cells.get(grade_id)
        restored = original is not None and original.metadata["nbgrader"].get("locked") and not original.metadata[
            "nbgrader"].get("solution")
        runs = cell.cell_type == "code" or (original is not None and original.cell_type == "code")
        if not runs or restored or cell.source.strip() in given:
            continue
        label = grade_id if original is not None else f"a cell you added (cell {position + 1})"
        cells.append((position, label, cell))
    return cells


# The nodes that open a scope of their own: names bound inside them are not the notebook's (but through ``global``),
# and names read inside them are read when they run, after any later cell.
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def bindings(source: str) -> list[tuple[int, str, str | None]]:
    """(line, name, module) for each name that a cell binds in the notebook's namespace: at module scope by any
    binding Python has (an assignment, also a walrus or a for, with or except target, a match capture, a class, a
    def, an import: ``module`` is the imported one, else None), and inside its functions and classes through a
    ``global`` statement. Cells the parser cannot read bind nothing here (`findings` flags them)."""
    try:
        tree = _parse(source)[0]
    except Unparsable:
        return []
    if tree is None:
        return []
    bound: list[tuple[int, str, str | None]] = []

    def name_of(node) -> str | None:
        """The name a node binds in the scope it is written in, if any."""
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            return node.id
        if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
            return node.name
        if isinstance(node, ast.MatchMapping):
            return node.rest
        return None

    def visit(node, in_comprehension: bool) -> None:
        """Visits the module scope only: a scope of its own contributes its name, its ``global`` bindings, and the
        decorators, defaults and base classes that run in the module's scope."""
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.extend((node.lineno, name, module) for name, module in _imports(node))
            return
        if isinstance(node, _SCOPES):
            if not isinstance(node, ast.Lambda):
                bound.append((node.lineno, node.name, None))
            declared = {name for inner in ast.walk(node) if isinstance(inner, ast.Global) for name in inner.names}
            bound.extend((inner.lineno, name, None) for inner in ast.walk(node)
                         if (name := name_of(inner)) in declared)
            for child in ast.iter_child_nodes(node):
                if child in getattr(node, "decorator_list", []) or child in getattr(node, "bases", []) or (
                        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and child is node.args):
                    visit(child, in_comprehension)
            return
        if isinstance(node, ast.NamedExpr):
            # A walrus binds in the enclosing scope, even inside a comprehension.
            bound.append((node.lineno, node.target.id, None))
        elif not in_comprehension and (name := name_of(node)):
            bound.append((getattr(node, "lineno", 0), name, None))
        inner = in_comprehension or isinstance(node, _COMPREHENSIONS)
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, False)
    return bound


def _reads(tree: ast.AST) -> tuple[set[str], set[str]]:
    """The names a cell reads inside its functions and classes (when they run, after any later cell), and those it
    reads at its top level (when the cell runs)."""
    deferred, top = set(), set()

    def visit(node, inside):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            (deferred if inside else top).add(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child, inside or isinstance(node, _SCOPES))

    visit(tree, False)
    return deferred, top


def _course_names(release: nbformat.NotebookNode | None) -> dict[str, tuple[str, str | None]]:
    """Each name that the tests may use in a student's version (see `_names_of_cells`), for a release notebook."""
    cells = []
    for cell in release.cells if release else []:
        if cell.cell_type == "code":
            nbgrader = cell.metadata.get("nbgrader", {})
            kind = ("test" if nbgrader.get("grade") and not nbgrader.get("solution") else
                    "solution" if nbgrader.get("solution") else "given")
            cells.append((kind, nbgrader.get("grade_id", ""), cell.source))
    return _names_of_cells(tuple(cells))


@functools.lru_cache(maxsize=16)
def _names_of_cells(cells: tuple[tuple[str, str, str], ...]) -> dict[str, tuple[str, str | None]]:
    """Each name that the tests may use in a student's version, from a release's code cells as (kind, grade id,
    source): bound by a given or solution cell before the last test cell, and read by a test cell, inside a given
    cell's functions or classes (a given class that given code builds, such as ``SequenceKVCache``), or at the top
    level of a given cell that runs after a student's cell and does not bind it itself. Its value: the grade id of
    the solution cell that binds it, or "" for a given cell, and the module when it is an import. The names that
    only the experiments after the last test use (``manager``, ``i``, ``_``), or a setup cell before any student's
    cell (``SEED``), are left out. Computed once per release (every submission of a notebook shares it): callers
    only read the dict."""
    kinds = [kind for kind, _, _ in cells]
    last_test = max((index for index, kind in enumerate(kinds) if kind == "test"), default=-1)
    first_solution = min((index for index, kind in enumerate(kinds) if kind == "solution"), default=len(cells))
    read: set[str] = set()
    names: dict[str, tuple[str, str | None]] = {}
    for index, (kind, grade_id, source) in enumerate(cells[:last_test + 1]):
        bound = bindings(source)
        if kind != "test":
            for _, name, module in bound:
                names.setdefault(name, (grade_id if kind == "solution" else "", module))
        if kind == "solution":
            continue
        try:
            tree = _parse(source)[0]
        except Unparsable:
            continue
        if tree is None:
            continue
        deferred, top = _reads(tree)
        read |= deferred
        if kind == "test" or index > first_solution:
            read |= top - {name for _, name, _ in bound} if kind == "given" else top
    return {name: owner for name, owner in names.items() if name in read}


def _rebinding(name: str, module: str | None, where: str, course: dict[str, tuple[str, str | None]]) -> str | None:
    """The note for a student's cell ``where`` that binds ``name`` (from ``module`` when it imports it), when that
    name is a given cell's or another task's: the tests would then build their cases with the student's version."""
    if name not in course:
        return None
    owner, course_module = course[name]
    if owner == where or (module is not None and module == course_module):
        return None
    return (f"rebinds {name}, which a given cell defines" if not owner else
            f"rebinds {name}, the answer of {owner}")


def scan(notebook: nbformat.NotebookNode, release: nbformat.NotebookNode | None = None,
         limit: int = 5) -> list[str]:
    """Notes on the suspicious code in the cells the student wrote (see `student_cells`).

    The names that every cell imports count, the course's own cells included: assigning to
    ``torch.equal`` is flagged even when only a given cell imported ``torch``. A student's cell that binds a
    name of a given cell (a class the tests build their cases with, such as ``SequenceKVCache``) or of another
    task's answer is flagged too: the tests would use the student's version of it.
    """
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    imported = imported_names([cell.source for cell in code_cells])
    course = _course_names(release)
    classes = defined_classes([cell.source for cell in code_cells])
    notes = []
    for _, where, cell in student_cells(notebook, release):
        found = findings(cell.source, imported) + class_changes(cell.source, classes)
        found += [(line, what) for line, name, module in bindings(cell.source)
                  if (what := _rebinding(name, module, where, course))]
        for line, what in sorted(set(found)):
            notes.append(f"{where}, line {line}: {what}" if line else f"{where}: {what}")
    if len(notes) > limit:
        notes = notes[:limit] + [f"and {len(notes) - limit} more"]
    return notes
