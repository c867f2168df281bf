"""nbgrader's Execute step, hardened: test cells must reach their last line, with the tools they trust intact.

nbgrader gives a test cell its points when its output holds no error. Code in the student's kernel
can arrange that without passing: it can wrap every later cell in ``try/except`` with an input
transformer, patch ``course.checks`` or ``torch.equal`` so that assertions pass, or make
``run_cell`` report success. `GuardedExecute` therefore changes what "passed" means, only while
grading and without changing the notebook it saves:

1. Before any student code runs, a first cell (added, then removed again) imports every ``course``
   module and records the objects that tests rely on: the contents of ``builtins``, ``math``,
   ``random``, ``heapq``, ``operator``, ``numpy``, ``numpy.testing``, ``torch``,
   ``torch.testing`` and every ``course`` module, the
   methods of ``torch.Tensor`` and ``random.Random``, the code of the ``course`` functions, the
   trace and profile hooks and IPython's cell transformers and runners.
2. Each test cell gets one more line at its end. It checks that all of those are still the objects
   recorded, then prints a random token that is new for every cell and every run.
3. After the run the token is taken out again. A test cell without its token gets an error output,
   so nbgrader gives it 0 points, whatever else it printed.

A test cell therefore earns points only if every line of it ran, in a kernel whose checks were not
tampered with. The kernel itself is started by `SandboxKernelManager`, which goes through
grading/sandbox.py when the grading command asks for isolation.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell
from nbgrader.preprocessors import Execute
from traitlets import Bool

PLAN_VARIABLE = "COURSE_SANDBOX_PLAN"

# Runs first in the kernel; __GUARD__ becomes the (random) name of the variable that holds the guard.
# The checks use builtins taken now, so that patching a builtin later cannot blind them.
_PRELUDE = '''
def _grading_guard_factory():
    import builtins, heapq, importlib, math, operator, pkgutil, random, sys
    import numpy, numpy.testing, torch, torch.testing
    try:
        import course
    except ImportError:
        raise RuntimeError("grading needs the course package installed in the kernel's environment")
    for found in pkgutil.iter_modules(course.__path__):
        importlib.import_module("course." + found.name)
    modules = {name: sys.modules[name] for name in ("builtins", "heapq", "math", "operator", "random", "numpy",
                                                     "numpy.testing", "torch", "torch.testing")}
    modules.update({name: module for name, module in sys.modules.items()
                    if name == "course" or name.startswith("course.")})
    # ipykernel sets builtins.input anew for every cell it runs, so input is left out.
    contents = {name: (module, {key: value for key, value in vars(module).items()
                                if not (name == "builtins" and key == "input")})
                for name, module in modules.items()}
    classes = [(cls, dict(vars(cls))) for cls in (*torch.Tensor.__mro__[:-1], random.Random)]
    functions = [(value, value.__code__, value.__defaults__, value.__kwdefaults__)
                 for name, module in modules.items() if name.startswith("course")
                 for value in vars(module).values()
                 if type(value).__name__ == "function" and (value.__module__ or "").startswith("course")]
    shell = get_ipython()
    runners = ("run_cell", "run_cell_async", "run_code", "run_ast_nodes", "showtraceback", "_showtraceback",
               "showsyntaxerror", "transform_cell", "should_run_async")
    shell_classes = [(cls, dict(vars(cls))) for cls in type(shell).__mro__[:-1]]
    overrides = {name: vars(shell).get(name) for name in runners}
    manager = shell.input_transformer_manager
    transformer_lists = [shell.ast_transformers, shell.input_transformers_post, manager.cleanup_transforms,
                         manager.line_transforms, manager.token_transformers]
    transformers = [(items, list(items)) for items in transformer_lists]
    hooks = (sys.gettrace(), sys.getprofile())
    vars_, len_, next_, iter_, zip_, any_, print_, shell_of = vars, len, next, iter, zip, any, print, get_ipython

    def changes():
        for name, (module, recorded) in contents.items():
            if sys.modules.get(name) is not module:
                yield f"the module {name}"
            current = vars_(module)
            for key, value in recorded.items():
                if current.get(key, changes) is not value:
                    yield f"{name}.{key}"
        for cls, recorded in classes:
            current = vars_(cls)
            for key, value in recorded.items():
                if current.get(key, changes) is not value:
                    yield f"{cls.__name__}.{key}"
        for function, code, defaults, keyword_defaults in functions:
            if (function.__code__ is not code or function.__defaults__ is not defaults
                    or function.__kwdefaults__ is not keyword_defaults):
                yield f"the code of {function.__module__}.{function.__qualname__}"
        if shell_of() is not shell:
            yield "the IPython shell"
        for cls, recorded in shell_classes:
            current = vars_(cls)
            for key, value in recorded.items():
                if current.get(key, changes) is not value:
                    yield f"IPython's {cls.__name__}.{key}"
        for name, value in overrides.items():
            if vars_(shell).get(name) is not value:
                yield f"IPython's shell.{name}"
        for items, recorded in transformers:
            if len_(items) != len_(recorded) or any_(a is not b for a, b in zip_(items, recorded)):
                yield "IPython's input or AST transformers"
        if (sys.gettrace(), sys.getprofile()) != hooks:
            yield "the trace or profile hook"

    def attest(token):
        changed = next_(iter_(changes()), None)
        if changed is not None:
            raise AssertionError(
                f"grading guard: {changed} was changed while this notebook ran, so the tests cannot be "
                "trusted; this task earns no points. Do not patch libraries or the test helpers.")
        print_(token, flush=True)

    return attest

__GUARD__ = _grading_guard_factory()
del _grading_guard_factory
'''

GUARD_ERROR = "GradingGuardError"


def _is_test_cell(cell: NotebookNode) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


class SandboxKernelManager(AsyncKernelManager):
    """Starts kernels through grading/sandbox.py when ``COURSE_SANDBOX_PLAN`` names a plan file."""

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        command = super().format_kernel_cmd(extra_arguments)
        plan = os.environ.get(PLAN_VARIABLE)
        if not plan:
            return command
        return [sys.executable, str(Path(__file__).with_name("sandbox.py")), plan, "--", *command]


class GuardedExecute(Execute):
    """nbgrader's Execute with the guard of this module (see its docstring)."""

    guard = Bool(True, help="Add the guard to test cells; False runs them as plain nbgrader does.").tag(config=True)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", SandboxKernelManager)
        super().__init__(*args, **kwargs)

    def preprocess(self, nb: NotebookNode, resources: dict, km=None):
        if not self.guard:
            return super().preprocess(nb, resources, km=km)
        name = "_grading_guard_" + secrets.token_hex(8)
        tokens: dict[int, tuple[str, str]] = {}
        for index, cell in enumerate(nb.cells):
            if _is_test_cell(cell):
                token = "grading-token-" + secrets.token_hex(16)
                tokens[index] = (cell.source, token)
                cell.source = f"{cell.source}\n{name}({token!r})"
        prelude = new_code_cell(_PRELUDE.replace("__GUARD__", name))
        nb.cells.insert(0, prelude)
        try:
            nb, resources = super().preprocess(nb, resources, km=km)
        finally:
            nb.cells.remove(prelude)
            for index, (source, _) in tokens.items():
                nb.cells[index].source = source
        for index, (_, token) in tokens.items():
            self._settle(nb.cells[index], token)
        return nb, resources

    @staticmethod
    def _settle(cell: NotebookNode, token: str) -> None:
        """Take the token out of the cell's output; without it, give the cell an error output."""
        found = False
        kept = []
        for output in cell.outputs:
            if output.output_type == "stream" and token in output.text:
                found = True
                output.text = output.text.replace(token + "\n", "").replace(token, "")
                if not output.text:
                    continue
            kept.append(output)
        cell.outputs = kept
        if not found and not any(output.output_type == "error" for output in cell.outputs):
            cell.outputs.append(NotebookNode(
                output_type="error", ename=GUARD_ERROR,
                evalue="this test cell did not run to its end, so it earns no points",
                traceback=[f"{GUARD_ERROR}: this test cell did not run to its end (its last line never ran), "
                           "so it earns no points"]))
