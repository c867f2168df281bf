"""nbgrader's Execute step, hardened: a test cell earns points only if it ran to its end, untampered.

nbgrader gives a test cell its points when its output holds no error, and it stops looking at
the first ``execute_result``: a non-numeric one gives full points even when the test then raised.
Code in the student's kernel can arrange either without passing: print a value from an IPython
event or from inside the function under test, wrap every later cell in ``try/except`` with an
input transformer, patch ``course.checks`` or ``torch.equal`` so that assertions pass, make
``run_cell`` report success, or rewrite what the kernel sends (``Session.send``, the display
hook, the output streams). `GuardedExecute` therefore changes what "passed" means, only while
grading and without changing the notebook it saves:

1. Before any student code runs, a first cell (added, then removed again) imports every ``course``
   module and records the objects that tests and the kernel's messaging rely on: the contents of
   ``builtins``, ``math``, ``random``, ``heapq``, ``operator``, ``numpy``, ``torch``, their testing
   modules, every ``course`` module and every loaded module of IPython, ipykernel,
   jupyter_client, zmq, comm and traitlets; the methods of ``torch.Tensor``, ``random.Random``,
   IPython's shell, the kernel, its ``Session``, its sockets, its output streams, display hook and
   display publisher (and their per-object overrides); the code of the ``course`` functions;
   ``sys.stdout``, ``sys.stderr`` and ``sys.displayhook``; the trace and profile hooks; IPython's
   cell transformers, runners and event callbacks.
2. Each test cell gets one more line at its end. It checks that all of those are still the objects
   recorded, then prints a random token, new for every cell and every run, to the recorded stdout.
3. After the run the token is taken out again. A test cell earns its points only if its token is
   there, it has no error output and the kernel's reply says ``ok``; otherwise it gets an error
   output (`GUARD_ERROR`) and, through `StrictSaveAutoGrades`, 0 points. Other outputs of a test
   cell never decide its score (this course's tests have no numeric partial credit).

A test cell therefore earns points only if every line of it ran, in a kernel whose checks and
messaging were not tampered with. Code that knows all this and defeats it from inside the same
process is possible in principle; it needs constructs that grading/scan.py flags. The kernel
itself is started by `SandboxKernelManager`, through grading/sandbox.py.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sys
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell
from nbgrader.preprocessors import Execute, SaveAutoGrades
from traitlets import Bool

PLAN_VARIABLE = "COURSE_SANDBOX_PLAN"

# Runs first in the kernel; __GUARD__ becomes the (random) name of the variable that holds the guard.
# The checks use builtins taken now, so that patching a builtin later cannot blind them.
_PRELUDE = '''
def _grading_guard_factory():
    import builtins, heapq, importlib, math, operator, pkgutil, random, sys
    import numpy, numpy.testing, torch, torch.testing, zmq
    try:
        import course
    except ImportError:
        raise RuntimeError("grading needs the course package installed in the kernel's environment")
    for found in pkgutil.iter_modules(course.__path__):
        importlib.import_module("course." + found.name)
    modules = {name: sys.modules[name] for name in ("builtins", "heapq", "math", "operator", "random", "numpy",
                                                     "numpy.testing", "torch", "torch.testing")}
    messaging = ("IPython", "ipykernel", "jupyter_client", "zmq", "comm", "traitlets")
    modules.update({name: module for name, module in list(sys.modules.items()) if module is not None
                    and (name == "course" or name.startswith("course.") or name.split(".")[0] in messaging)})
    # ipykernel sets builtins.input anew for every cell it runs; zmq makes its garbage collector late.
    changing = {("builtins", "input"), ("zmq.backend.cython._zmq", "_gc")}
    contents = {name: (module, {key: value for key, value in vars(module).items() if (name, key) not in changing})
                for name, module in modules.items()}
    shell = get_ipython()
    kernel = shell.kernel
    watched = {"IPython's shell": shell, "the kernel": kernel, "the kernel's Session": kernel.session,
               "the kernel's iopub socket": kernel.iopub_socket, "the display hook": shell.displayhook,
               "the display publisher": shell.display_pub}
    streams = {"sys.stdout": sys.stdout, "sys.stderr": sys.stderr}
    classes = {cls for obj in [*watched.values(), *streams.values()] for cls in type(obj).__mro__[:-1]}
    classes |= {*torch.Tensor.__mro__[:-1], random.Random, *zmq.Socket.__mro__[:-1]}
    classes = [(cls, dict(vars(cls))) for cls in classes]
    # Methods set on the objects themselves (a patched ``session.send``) shadow their classes'.
    def overrides(obj):
        return {key: value for key, value in vars(obj).items() if callable(value) and hasattr(type(obj), key)}
    instance_methods = [(what, obj, overrides(obj)) for what, obj in watched.items()]
    functions = [(value, value.__code__, value.__defaults__, value.__kwdefaults__)
                 for name, module in modules.items() if name.startswith("course")
                 for value in vars(module).values()
                 if type(value).__name__ == "function" and (value.__module__ or "").startswith("course")]
    manager = shell.input_transformer_manager
    transformer_lists = [shell.ast_transformers, shell.input_transformers_post, manager.cleanup_transforms,
                         manager.line_transforms, manager.token_transformers]
    transformers = [(items, list(items)) for items in transformer_lists]
    events = {name: list(callbacks) for name, callbacks in shell.events.callbacks.items()}
    # Libraries register callbacks of their own when first imported (matplotlib's inline backend).
    library_callbacks = ("IPython.", "ipykernel.", "matplotlib.", "matplotlib_inline.", "ipywidgets.")
    hooks = (sys.gettrace(), sys.getprofile())
    system = {name: getattr(sys, name) for name in ("stdout", "stderr", "displayhook")}
    stdout = sys.stdout
    vars_, len_, next_, iter_, zip_, any_, print_, getattr_, shell_of, str_ = (
        vars, len, next, iter, zip, any, print, getattr, get_ipython, str)

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
                    yield f"{cls.__module__}.{cls.__qualname__}.{key}"
        for what, obj, recorded in instance_methods:
            if overrides(obj) != recorded or any_(overrides(obj)[k] is not v for k, v in recorded.items()):
                yield f"a method of {what}"
        for function, code, defaults, keyword_defaults in functions:
            if (function.__code__ is not code or function.__defaults__ is not defaults
                    or function.__kwdefaults__ is not keyword_defaults):
                yield f"the code of {function.__module__}.{function.__qualname__}"
        session = watched["the kernel's Session"]
        if shell_of() is not shell or shell.kernel is not kernel or kernel.session is not session:
            yield "the IPython shell or its kernel"
        for name, value in system.items():
            if getattr_(sys, name) is not value:
                yield f"sys.{name}"
        for items, recorded in transformers:
            if len_(items) != len_(recorded) or any_(a is not b for a, b in zip_(items, recorded)):
                yield "IPython's input or AST transformers"
        for name, callbacks in shell.events.callbacks.items():
            for callback in callbacks:
                module = str_(getattr_(callback, "__module__", None) or "")
                if callback not in events.get(name, ()) and not module.startswith(library_callbacks):
                    yield f"IPython's {name} event callbacks"
        if (sys.gettrace(), sys.getprofile()) != hooks:
            yield "the trace or profile hook"

    def attest(token):
        changed = next_(iter_(changes()), None)
        if changed is not None:
            raise AssertionError(
                f"grading guard: {changed} was changed while this notebook ran, so the tests cannot be "
                "trusted; this task earns no points. Do not patch libraries, the test helpers or the kernel.")
        print_(token, end="", file=stdout, flush=True)  # One write: the token never splits.

    return attest

__GUARD__ = _grading_guard_factory()
del _grading_guard_factory
'''

GUARD_ERROR = "GradingGuardError"
_TOKEN = re.compile(r"grading-token-[0-9a-f]{32}")


def _is_test_cell(cell: NotebookNode) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


class SandboxKernelManager(AsyncKernelManager):
    """Starts kernels through grading/sandbox.py when ``COURSE_SANDBOX_PLAN`` names a plan file.

    In the sandbox the kernel has no network, so it talks to nbgrader over ZMQ's ``ipc`` transport:
    Unix sockets in the plan's socket folder, the one host folder bound into the sandbox. An
    interrupt (a cell past its time limit) goes as a message on the control channel, since a signal
    to bwrap would end the sandbox instead of the cell.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        plan_file = os.environ.get(PLAN_VARIABLE)
        self._plan = json.loads(Path(plan_file).read_text()) if plan_file else None
        if self._plan and self._plan["sandbox"]:
            self.transport = "ipc"
            self.ip = os.path.join(self._plan["socket_dir"], "kernel")

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        command = super().format_kernel_cmd(extra_arguments)
        if not self._plan:
            return command
        if self._plan["sandbox"]:
            self.kernel_spec.interrupt_mode = "message"
        return [sys.executable, str(Path(__file__).with_name("sandbox.py")), os.environ[PLAN_VARIABLE], "--", *command]


class GuardedExecute(Execute):
    """nbgrader's Execute with the guard of this module (see its docstring)."""

    guard = Bool(True, help="Add the guard to test cells; False runs them as plain nbgrader does.").tag(config=True)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", SandboxKernelManager)
        super().__init__(*args, **kwargs)
        self._replies: dict[str, str] = {}

    def on_cell_executed(self, **kwargs):
        # The kernel's reply says whether the cell raised, whatever reached the outputs.
        found = _TOKEN.search(kwargs["cell"].source)
        if found:
            self._replies[found.group()] = kwargs["execute_reply"]["content"].get("status", "missing")
        return super().on_cell_executed(**kwargs)

    def preprocess(self, nb: NotebookNode, resources: dict, km=None):
        try:
            return self._preprocess(nb, resources, km)
        finally:
            # The tag of the skipped cells is random for each run; the graded notebook and the
            # feedback do not show it.
            for cell in nb.cells:
                tags = cell.metadata.get("tags")
                if tags and self.skip_cells_with_tag in tags:
                    tags.remove(self.skip_cells_with_tag)
                    if not tags:
                        del cell.metadata["tags"]

    def _preprocess(self, nb: NotebookNode, resources: dict, km=None):
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
        self._replies = {}
        try:
            nb, resources = super().preprocess(nb, resources, km=km)
        finally:
            nb.cells.remove(prelude)
            for index, (source, _) in tokens.items():
                nb.cells[index].source = source
        for index, (_, token) in tokens.items():
            self._settle(nb.cells[index], token, self._replies.get(token))
        return nb, resources

    @staticmethod
    def _settle(cell: NotebookNode, token: str, reply: str | None = "ok") -> None:
        """Take the token out of the cell's output; give the cell an error output unless it passed.

        It passed when its token is in a stdout stream, it has no error output, and the kernel
        replied ``ok`` to it (``reply``).
        """
        found = False
        kept = []
        for output in cell.outputs:
            if output.output_type == "stream" and output.get("name") == "stdout" and token in output.text:
                found = True
                output.text = output.text.replace(token + "\n", "").replace(token, "")
                if not output.text:
                    continue
            kept.append(output)
        cell.outputs = kept
        if any(output.output_type == "error" for output in cell.outputs):
            return
        if not found:
            reason = "this test cell did not run to its end (its last line never ran), so it earns no points"
        elif reply != "ok":
            reason = f"the kernel reported this test cell as {reply!r}, not 'ok', so it earns no points"
        else:
            return
        cell.outputs.append(NotebookNode(output_type="error", ename=GUARD_ERROR, evalue=reason,
                                         traceback=[f"{GUARD_ERROR}: {reason}"]))


class StrictSaveAutoGrades(SaveAutoGrades):
    """nbgrader's SaveAutoGrades, with this course's rule for test cells: all points or none.

    nbgrader scores a test cell by its first ``execute_result`` when it has one (a number is partial
    credit, anything else full points), even when an error follows. This course's tests have no
    partial credit, so a test cell earns its points exactly when it has no error output; with
    `GuardedExecute` that means its last line ran in an untampered kernel. ``strict=False`` keeps
    nbgrader's rule (only the tests that prove the rule's worth use it).
    """

    strict = Bool(True, help="All points for a test cell without an error output, none otherwise.").tag(config=True)

    def _add_score(self, cell: NotebookNode, resources: dict) -> None:
        if not self.strict or not _is_test_cell(cell):
            return super()._add_score(cell, resources)
        grade = self.gradebook.find_grade(cell.metadata["nbgrader"]["grade_id"], self.notebook_id,
                                          self.assignment_id, self.student_id)
        failed = any(output.output_type == "error" for output in cell.outputs)
        grade.auto_score = 0.0 if failed else float(cell.metadata["nbgrader"]["points"])
        grade.needs_manual_grade = grade.manual_score is not None
        self.gradebook.db.commit()
