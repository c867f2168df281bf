"""Finds code in a submission that no exercise needs and that tampers with grading; flags it for a look.

No task of this course needs to patch a library, reach into the interpreter, run strings as code,
touch files or processes, read IPython's history or the source of the calling cell (``linecache``,
``traceback``, ``inspect``), or display HTML, JavaScript or Markdown (which could run script in the
grader's browser; grading/sanitize.py removes it from what formgrader and feedback show). Code
that does is most likely an attempt to game the grader (or a very unusual answer), so the grading
command gives it the status "needs a manual look" and says where it is. The scan takes no points
away: the guard (grading/guard.py) and the sandbox (grading/sandbox.py) already make such code fail
the tests; the scan makes sure an instructor sees it, including tricks subtle enough to get past
the guard.
"""

from __future__ import annotations

import ast
import re

import nbformat

_MODULES = {"ctypes", "gc", "inspect", "importlib", "builtins", "subprocess", "socket", "signal", "multiprocessing",
            "threading", "sqlite3", "shutil", "glob", "pickle", "marshal", "code", "codeop", "pty", "resource",
            "mmap", "atexit", "pathlib", "tempfile", "_thread", "linecache", "traceback"}
_ALLOWED_SYS = {"maxsize", "float_info", "version_info", "getrecursionlimit", "setrecursionlimit", "stderr"}
_ATTRIBUTES = {"__code__", "__globals__", "__builtins__", "__closure__", "__subclasses__", "__dict__", "__import__",
               "settrace", "setprofile", "_getframe", "f_back", "f_globals", "f_locals", "f_builtins",
               "gi_frame", "tb_frame", "meta_path", "path_hooks", "excepthook", "displayhook", "addaudithook",
               "read_text",
               "read_bytes", "write_text", "write_bytes", "input_transformers_post", "input_transformers_cleanup",
               "ast_transformers", "run_cell", "showtraceback"}
_OS_FUNCTIONS = {"system", "popen", "fork", "kill", "killpg", "_exit", "execv", "execve", "spawnv", "unlink", "remove",
                 "rmdir", "rename", "replace", "walk", "listdir", "scandir", "chmod", "chown", "makedirs", "mkdir",
                 "open", "setsid"}
# Rich display that can carry script: IPython's HTML, JavaScript, Markdown and SVG objects, widgets
# that show HTML, and the display hooks an object can define.
_ACTIVE_DISPLAY = {"HTML", "Javascript", "Markdown", "SVG", "IFrame", "HTMLMath", "display_html",
                   "display_javascript", "display_markdown", "display_svg", "publish_display_data"}
_RICH_REPR = {"_repr_html_", "_repr_javascript_", "_repr_markdown_", "_repr_svg_", "_repr_mimebundle_",
              "_ipython_display_"}
_NAMES = {"get_ipython", "In", "Out", "_ih", "_oh", "_i", "_ii", "_iii", "__builtins__", "__import__", "exec", "eval",
          "compile", "globals", "locals", "vars", "open", "breakpoint", "exit", "quit"}


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None



_HARMLESS_MAGICS = re.compile(r"^(\s*)%{1,2}(time|timeit|matplotlib)\b(?!\s*-)(.*)$")


def _python_source(source: str) -> str:
    """The cell as plain Python, line for line.

    ``%time``, ``%timeit`` (without options) and ``%matplotlib`` become the statement they time (or
    ``pass``); other magics and shell escapes become the ``get_ipython()`` calls IPython would run,
    which are flagged.
    """
    from IPython.core.inputtransformer2 import TransformerManager

    lines = []
    for line in source.splitlines():
        match = _HARMLESS_MAGICS.match(line)
        if match:
            statement = match.group(3).strip() if match.group(2) != "matplotlib" else ""
            line = match.group(1) + (statement or "pass")
        lines.append(line)
    return TransformerManager().transform_cell("\n".join(lines))


def imported_names(sources: list[str]) -> set[str]:
    """Every name that an import statement in ``sources`` binds (``import numpy as np`` binds ``np``)."""
    names = set()
    for source in sources:
        try:
            tree = ast.parse(_python_source(source))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                names.update(alias.asname or alias.name for alias in node.names)
    return names


def findings(source: str, imported: set[str]) -> list[tuple[int, str]]:
    """(line, what) for each suspicious construct in one cell's code; ``imported`` as from `imported_names`."""
    try:
        tree = ast.parse(_python_source(source))
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                if module.split(".")[0] in _MODULES:
                    found.append((line, f"imports {module}"))
            if isinstance(node, ast.ImportFrom):
                active = [alias.name for alias in node.names if alias.name in _ACTIVE_DISPLAY]
                if active:
                    names = ", ".join(active)
                    found.append((line, f"displays HTML, JavaScript or Markdown ({names} from {node.module})"))
        elif isinstance(node, ast.Attribute):
            if node.attr in _ATTRIBUTES:
                found.append((line, f"uses .{node.attr}"))
            elif node.attr in _ACTIVE_DISPLAY or node.attr in _RICH_REPR:
                found.append((line, f"displays HTML, JavaScript or Markdown (.{node.attr})"))
            elif isinstance(node.value, ast.Name) and node.value.id == "sys" and node.attr not in _ALLOWED_SYS:
                found.append((line, f"uses sys.{node.attr}"))
            elif isinstance(node.value, ast.Name) and node.value.id == "os" and node.attr in _OS_FUNCTIONS:
                found.append((line, f"uses os.{node.attr}"))
        elif isinstance(node, ast.Name) and node.id in _NAMES:
            found.append((line, f"uses {node.id}"))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in _RICH_REPR:
            found.append((line, f"displays HTML, JavaScript or Markdown (defines {node.name})"))
        elif isinstance(node, ast.Call) and any(keyword.arg == "raw" for keyword in node.keywords):
            found.append((line, "displays raw output data (raw=...)"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr"):
            target = node.args[0] if node.args else None
            if not (isinstance(target, ast.Name) and target.id in ("self", "cls")):
                found.append((line, f"calls {node.func.id} on {ast.unparse(target) if target else 'something'}"))
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                for part in ast.walk(target):
                    if not isinstance(part, (ast.Attribute, ast.Subscript)):
                        continue
                    root = _root_name(part)
                    dunder = isinstance(part, ast.Attribute) and part.attr.startswith("__") and part.attr.endswith("__")
                    if root in imported or dunder:
                        found.append((line, f"assigns to {ast.unparse(part)}"
                                      + (", part of an imported module or class" if root in imported else "")))
                        break
    return sorted(set(found))


def scan(notebook: nbformat.NotebookNode, release: nbformat.NotebookNode | None = None,
         limit: int = 5) -> list[str]:
    """Notes on the suspicious code in the cells a student wrote (solution cells and added cells).

    Test cells, read-only cells and cells identical to one of ``release`` (the course's own demo
    cells) are not scanned, but the names they import count: assigning to ``torch.equal`` is
    flagged even when only a given cell imported ``torch``.
    """
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    given = {cell.source.strip() for cell in (release.cells if release else []) if cell.cell_type == "code"
             and not cell.metadata.get("nbgrader", {}).get("solution")}
    imported = imported_names([cell.source for cell in code_cells])
    notes = []
    for cell in code_cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution") or meta.get("locked") or cell.source.strip() in given:
            continue
        where = meta.get("grade_id") or "a cell you added"
        for line, what in findings(cell.source, imported):
            notes.append(f"{where}, line {line}: {what}")
    if len(notes) > limit:
        notes = notes[:limit] + [f"and {len(notes) - limit} more"]
    return notes
