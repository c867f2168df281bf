"""A differential fuzzer of the tensors and containers that the judge shares with the student's kernel.

Each seed makes a program: a student's source (functions ``f0``, ``f1``, ... and the state they keep, in the dict
``KEPT`` and in globals ``g0``, ``g1``, ...) and test cells that call those functions, with tensors, lists, dicts,
tuples and the student's objects going both ways. Run in one process, the program's observations (what the test
and the student's code read of the values they hold) are the truth; run through the judge (tests/judge_kernel.py:
the test in the judge, the student's code in a kernel's agent), each observation must be the same.

A program is made by running it: each candidate step runs at once, in one namespace for both sides as in one
process, and stays only if it ran without an error; a step that failed is dropped and the namespace is rebuilt from
the steps kept, so that the generator always knows the live values the next step works on.

The steps use only what grading/judge/pairs.py keeps in step (its module docstring and the README's judge section
say what it does not): shared tensors inside lists, dicts, tuples and the student's objects; views of the same dtype
(slices, strided slices, transpose and permute, unsqueeze, expand, unfold, narrow, split and chunk, select,
reshape and view); in-place writes from either side; in-place changes of shape that keep the storage
(``transpose_``, ``t_``, ``unsqueeze_``, ``squeeze_``); ``resize_``, ``resize_as_`` and ``out=`` arguments that resize
a tensor that owns its storage; copies; returned tensors and tensors kept in the student's globals. They leave out,
as documented limitations: tensors that cover only part of their storage without a ``_base`` made by ``set_`` at an
offset or ``.data`` (``detach()`` of a slice, views of another dtype of the same size and negated views are among the
steps: they cross as views since round 18), a ``resize_`` that grows a
view past its owner's elements, ``as_strided`` past a tensor's elements, and writes through ``.data`` (which no
version counter sees, so the judge, which compares versions and not bytes, misses them).

``python tests/judge_fuzz.py --start S --count N`` runs seeds S to S + N - 1 and prints how many programs ended in
each way (``ok``, ``mismatch``, ``error``, ``hang``, ``protocol``) and the seeds of those that failed;
``--verbose`` prints each failing program too. tests/test_judge_fuzz.py runs a small fixed batch.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from judge_kernel import Kernel  # noqa: E402 - the paths above make tests/ and the repository importable.

# How either side reads a value: a tensor as its dtype, shape and values, a container item by item, a student's
# object by its attributes. The test's copy is named ``_look``, the student's ``_klook``.
LOOK = '''
def NAME(value):
    if isinstance(value, torch.Tensor):
        return [str(value.dtype), list(value.shape), value.tolist()]
    if isinstance(value, (list, tuple)):
        return [type(value).__name__] + [NAME(item) for item in value]
    if isinstance(value, dict):
        return {key: NAME(item) for key, item in value.items()}
    if value is None or isinstance(value, (int, float, str)):
        return repr(value)
    return {name: NAME(getattr(value, name)) for name in ("t", "u", "v", "w") if hasattr(value, name)}
'''

STUDENT_PRELUDE = '''import torch

KEPT = {}


class Box:
    """An object of the student's, whose attributes hold tensors and containers."""
''' + LOOK.replace("NAME", "_klook")

# What the judge runs before a test cell: ``_o`` compares each observation with the one-process truth, in order.
CHECK_PRELUDE = '''import torch
nan, inf = float("nan"), float("inf")
_expected = EXPECTED
_seen = [0]


def _equal(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a != a and b != b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_equal, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_equal(a[key], b[key]) for key in a)
    return type(a) is type(b) and a == b


def _o(value):
    index = _seen[0]
    _seen[0] += 1
    assert _equal(value, _expected[index]), (
        f"observation {index}: through the judge {value!r}, in one process {_expected[index]!r}")
''' + LOOK.replace("NAME", "_look")
CHECK_END = 'assert _seen[0] == len(_expected), f"{_seen[0]} observations, in one process {len(_expected)}"\n'

DTYPES = ["torch.float32", "torch.float64", "torch.int64", "torch.int32"]
_SAME_SIZE = {torch.float32: "torch.int32", torch.int32: "torch.float32", torch.float64: "torch.int64",
              torch.int64: "torch.float64"}
SHAPES = [(6,), (8,), (12,), (3, 4), (4, 3), (2, 6), (4, 4), (2, 3, 2)]
BOX_ATTRIBUTES = ("t", "u", "v", "w")


@dataclass
class Program:
    """A generated program: the student's source, the test cells, and each cell's observations in one process."""

    seed: int
    student: str
    cells: list[str]
    expected: list[list] = field(default_factory=list)
    steps: int = 20  # How many steps the generator took to make it (``--steps``).

    def listing(self) -> str:
        """The program as a developer reads it: the student's functions (after the common prelude), then each cell."""
        text = "# The student's source (after tests/judge_fuzz.py's STUDENT_PRELUDE):\n"
        text += self.student[len(STUDENT_PRELUDE):].strip("\n") + "\n"
        for index, cell in enumerate(self.cells):
            text += f"# Test cell {index}:\n{cell}"
        return text


@dataclass
class Failure:
    """How a program failed through the judge: ``mismatch`` (an observation differs), ``error`` (the test raised),
    ``hang`` (the cell ran past its time limit) or ``protocol`` (a side broke the judge's protocol)."""

    kind: str
    cell: int
    message: str
    traceback: list[str]


def kind_of(obj) -> str:
    """What a live value is, as the generator tells them apart."""
    if type(obj) is torch.Tensor:
        return "tensor"
    if type(obj) in (list, tuple, dict):
        return type(obj).__name__
    return "box"


def reachable_tensors(expr: str, obj) -> list[tuple[str, torch.Tensor]]:
    """The tensors a step can write or derive from through one name: the value itself, or the first items of a list,
    tuple or dict, or the attributes of a student's object; each with the expression that reaches it."""
    kind = kind_of(obj)
    if kind == "tensor":
        return [(expr, obj)]
    if kind in ("list", "tuple"):
        items = [(f"{expr}[{index}]", item) for index, item in enumerate(obj[:3])]
    elif kind == "dict":
        items = [(f"{expr}[{key!r}]", item) for key, item in list(obj.items())[:3]]
    else:
        items = [(f"{expr}.{name}", getattr(obj, name)) for name in BOX_ATTRIBUTES if hasattr(obj, name)]
    return [(reach, item) for reach, item in items if type(item) is torch.Tensor]


def owns_its_storage(tensor: torch.Tensor) -> bool:
    """Whether a tensor is no view (it has no ``_base``) and covers all of its storage: the owner a resize keeps."""
    return (tensor._base is None and tensor.storage_offset() == 0 and tensor.numel() > 0
            and tensor.untyped_storage().nbytes() == tensor.numel() * tensor.element_size())


def room_in_owner(tensor: torch.Tensor) -> int:
    """How many elements a view may have after ``resize_`` without reaching past its owner's (0: none)."""
    base = tensor._base
    if base is None or not owns_its_storage(base):
        return 0
    return base.numel() - tensor.storage_offset()


class Generator:
    """Makes the program of one seed, step by step, running each step as it goes."""

    def __init__(self, seed: int, steps: int = 20, cells: int = 2) -> None:
        self.seed = seed
        self.random = random.Random(seed)
        self.steps = steps
        self.cell_count = cells
        self.functions: list[str] = []  # The student's functions, in the order they were made.
        self.cells: list[list[str]] = [[]]
        self.test_names: list[str] = []  # The test's names that the current cell has bound.
        self.kept: list[str] = []  # Expressions of what the student keeps: ``KEPT['k0']`` or a global ``g0``.
        self.counter = 0
        self.rebuild()

    # The namespace that both sides share, as in one process.

    def rebuild(self) -> None:
        """Run the program kept so far in a fresh namespace (after a step that failed, possibly halfway)."""
        self.namespace = {"__name__": "__main__", "_o": lambda value: None}
        exec(self.student_source(), self.namespace)
        exec(LOOK.replace("NAME", "_look"), self.namespace)
        for cell in self.cells:
            exec("\n".join(cell), self.namespace)

    def student_source(self) -> str:
        return STUDENT_PRELUDE + "".join("\n\n" + function for function in self.functions)

    def attempt(self, function: str | None, lines: list[str]) -> bool:
        """Run a step: the student's new function (if any), then the test's lines. Keep it if it ran."""
        try:
            if function is not None:
                exec(function, self.namespace)
            exec("\n".join(lines), self.namespace)
        except Exception:  # noqa: BLE001 - any error of torch means the step is not a valid program.
            self.rebuild()
            return False
        if function is not None:
            self.functions.append(function)
        self.cells[-1].extend(lines)
        return True

    def value(self, expr: str):
        return eval(expr, self.namespace)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def constant(self) -> int:
        return self.random.randint(10, 99)

    # What a step works on.

    def operands(self, names: list[str], arguments: list[str]) -> list[tuple[str, torch.Tensor]]:
        """The tensors that a step reaches through ``names``, with their expressions."""
        found = []
        for expr in names:
            found += reachable_tensors(expr, self.value(self.resolve(expr, arguments)))
        return found

    def names_on(self, side: str, arguments: list[str]) -> list[str]:
        """What a step on ``side`` ("test" or "student") reaches: the student's function reaches what it keeps and its
        arguments ``a0``, ``a1``; the test reaches its names and, now and then, the student's globals, which a test
        cell can read as in one process."""
        if side == "student":
            return self.kept + [f"a{index}" for index in range(len(arguments))]
        globals_read = [expr for expr in self.kept if expr.startswith("g") and self.random.random() < 0.3]
        return self.test_names + globals_read

    @staticmethod
    def resolve(expr: str, arguments: list[str]) -> str:
        """An expression of the student's function, in terms of the shared namespace (``a0`` is its argument)."""
        return re.sub(r"\ba(\d+)\b", lambda match: arguments[int(match.group(1))], expr)

    # Expressions and statements.

    def create(self) -> str:
        """A new tensor: a range of some dtype and shape, possibly a transposed or sliced view of one."""
        choose = self.random
        dtype, shape = choose.choice(DTYPES), choose.choice(SHAPES)
        count = 1
        for size in shape:
            count *= size
        start = choose.choice([0, 0, 0, choose.randint(1, 50)])
        expr = f"torch.arange({start}, {start + count}, dtype={dtype})"
        if len(shape) > 1:
            expr += f".reshape{shape}"
        roll = choose.random()
        if roll < 0.15:
            expr += "[1:]"  # A view whose base only it reaches: the base crosses with it.
        elif roll < 0.25 and len(shape) == 2:
            expr += ".t()"
        return expr

    def derive(self, expr: str, tensor: torch.Tensor) -> str:
        """A view of the same dtype of a tensor, or a copy of it."""
        choose = self.random
        dims = tensor.dim()
        options = [f"{expr}.clone()", f"{expr}.contiguous()", f"{expr} + 1"]
        if tensor.numel() > 0:
            options += [f"{expr}.reshape(-1)", f"{expr}.flatten()", f"{expr}.unsqueeze(0)", f"{expr}.unsqueeze(-1)",
                        f"{expr}.unsqueeze(0).expand(2, *{expr}.shape)", f"{expr}[..., None]", f"{expr}.squeeze()",
                        f"{expr}.view_as({expr})"]
            if tensor.is_contiguous():
                count = tensor.numel()
                options.append(f"{expr}.view(-1)")
                options += [f"{expr}.view({rows}, {count // rows})" for rows in (2, 3, 4) if count % rows == 0]
        if dims >= 1 and tensor.shape[0] >= 1:
            size = tensor.shape[0]
            start = choose.randint(0, size - 1)
            stop = choose.randint(start, size)
            options += [f"{expr}[{start}:{stop}]", f"{expr}[{start}]", f"{expr}[{start}::2]", f"{expr}[::2]",
                        f"{expr}.narrow(0, {start}, {stop - start})", f"{expr}.select(0, {start})",
                        f"{expr}.split({choose.randint(1, size)})[0]", f"{expr}.chunk(2)[-1]",
                        f"{expr}[{start}:{stop}].clone()", f"{expr}[[{start}, {choose.randint(0, size - 1)}]]",
                        f"{expr}[{start}:{stop}].detach()", f"{expr}[{start}::2].detach()"]
            if size >= 2:
                options.append(f"{expr}.unfold(0, 2, 1)")
        if tensor.dtype in _SAME_SIZE:
            # A view of another dtype of the same size (sliced: ``view(dtype)`` has no ``_base``, and a later
            # ``resize_`` of it would grow a storage that another tensor owns), and a negated view.
            options += [f"{expr}.view({_SAME_SIZE[tensor.dtype]})[:]", f"torch._neg_view({expr})"]
        if dims >= 2:
            column = choose.randint(0, max(0, tensor.shape[1] - 1))
            options += [f"{expr}.transpose(0, 1)", f"{expr}[:, {column}:]", f"{expr}[:, {column}]", f"{expr}.mT",
                        f"{expr}.t()" if dims == 2 else f"{expr}.permute(2, 0, 1)",
                        f"{expr}.diagonal()" if dims == 2 else f"{expr}.permute(1, 2, 0)"]
        return choose.choice(options)

    def mutate(self, expr: str, tensor: torch.Tensor, other: tuple[str, torch.Tensor] | None) -> str:
        """A statement that changes a tensor in place: its values, its shape and strides, or its size."""
        choose = self.random
        dims, count, value = tensor.dim(), tensor.numel(), self.constant()
        options = [f"{expr}.add_({choose.randint(1, 9)})", f"{expr}.mul_(2)", f"{expr}.fill_({value})",
                   f"{expr}.zero_()", f"{expr}.unsqueeze_(0)", f"{expr}.squeeze_()"]
        if dims >= 1 and tensor.shape[0] >= 1:
            start = choose.randint(0, tensor.shape[0] - 1)
            stop = choose.randint(start, tensor.shape[0])
            options += [f"{expr}[{start}] = {value}", f"{expr}[{start}:{stop}] = {value}",
                        f"{expr}[{start}:{stop}].add_({choose.randint(1, 9)})"]
            if tensor.shape[0] >= 2:
                options.append(f"{expr}.copy_({expr}.flip(0))")
        if dims <= 2:
            options.append(f"{expr}.t_()")
        if dims >= 2:
            options.append(f"{expr}.transpose_(0, 1)")
        # An owner only grows here: one that shrinks (``resize_``, ``resize_as_``, an ``out=`` of fewer elements) no
        # longer covers its storage, which ends its ownership, and views made of it after that cross as copies.
        owner = owns_its_storage(tensor)
        if owner:
            options.append(f"{expr}.resize_({count + choose.randint(0, 6)}).fill_({value})")
        elif room_in_owner(tensor) > 0:
            options.append(f"{expr}.resize_({choose.randint(1, room_in_owner(tensor))})")
        if other is not None:
            source, source_tensor = other
            options += [f"{expr}.copy_({source})", f"{expr}[...] = {source}"]
            if source_tensor.shape == tensor.shape or owner and source_tensor.numel() >= count:
                options.append(f"torch.add({source}, 1, out={expr})")
            if owner and source_tensor.numel() >= count:
                options.append(f"{expr}.resize_as_({source}).fill_({value})")
            if owner and 2 * source_tensor.numel() >= count:
                options.append(f"torch.cat([{source}, {source}], out={expr})")
        return choose.choice(options)

    def change_container(self, container: str, kind: str, item: str) -> str:
        """A statement that changes a list, a dict or a student's object in place."""
        if kind == "list":
            return self.random.choice([f"{container}.append({item})", f"{container}[0] = {item}",
                                       f"{container}.pop()", f"{container}.reverse()",
                                       f"{container}[0] = {container}[0][1:]", f"{container}.insert(0, {item}[:1])"])
        if kind == "dict":
            return self.random.choice([f"{container}['a'] = {item}", f"{container}['c'] = {item}[1:]",
                                       f"{container}.pop('b', None)", f"{container}.update(z={item})"])
        return self.random.choice([f"{container}.t = {item}", f"{container}.v = {item}[:2]",
                                   f"{container}.w = [{item}]"])

    def body(self, side: str, arguments: list[str]) -> tuple[list[str], bool]:
        """The statements of one step on ``side``, and whether they leave a new value in ``r``."""
        choose = self.random
        names = self.names_on(side, arguments)
        operands = self.operands(names, arguments)
        roll = choose.random()
        if not operands or roll < 0.12:
            return [f"r = {self.create()}"], True
        expr, tensor = choose.choice(operands)
        if roll < 0.45:
            return [f"r = {self.derive(expr, tensor)}"], True
        if roll < 0.78:
            others = [operand for operand in operands if operand[1] is not tensor]
            return [self.mutate(expr, tensor, choose.choice(others) if others else None)], False
        second, _ = choose.choice(operands)
        if roll < 0.86:
            return [choose.choice([f"r = [{expr}, {second}]", f"r = {{'a': {expr}, 'b': {second}}}",
                                   f"r = ({expr}, {second})"])], True
        containers = [(name, kind_of(self.value(self.resolve(name, arguments)))) for name in names]
        containers = [(name, kind) for name, kind in containers if kind in ("list", "dict", "box")]
        if side == "student" and (not containers or roll < 0.92):
            return ["r = Box()", f"r.t = {expr}", f"r.u = {expr}[1:]"], True
        if containers:
            container, kind = choose.choice(containers)
            return [self.change_container(container, kind, expr)], False
        return [f"r = {self.derive(expr, tensor)}"], True

    # Steps: each adds lines to the current test cell, and maybe a function to the student's source.

    def test_step(self) -> bool:
        lines, made = self.body("test", [])
        if not made:
            return self.attempt(None, lines)
        name = self.fresh("j")
        lines = [re.sub(r"^r\b", name, line) for line in lines]
        if self.attempt(None, lines):
            self.test_names.append(name)
            return True
        return False

    def student_step(self) -> bool:
        """A call of a new function of the student's, with some of the test's values: it derives, writes or makes a
        value, may keep its argument or its value (in ``KEPT`` or in a global), and may return it, as it is or in a
        list, tuple or dict."""
        choose = self.random
        arguments = choose.sample(self.test_names, min(len(self.test_names), choose.choice([0, 1, 1, 2])))
        lines, made = self.body("student", arguments)
        kept = []
        if arguments and choose.random() < 0.25:
            kept.append(self.keep_line("a0", lines))
        returned = None
        if made:
            roll = choose.random()
            if roll < 0.35:
                kept.append(self.keep_line("r", lines))
                returned = "r" if choose.random() < 0.5 else None
            else:
                returned = choose.choice(["r", "r", "[r]", "(r,)", "{'x': r}"])
        elif self.kept and choose.random() < 0.2:
            returned = choose.choice(self.kept)
        function = self.fresh("f")
        source = f"def {function}({', '.join(f'a{index}' for index in range(len(arguments)))}):\n"
        source += "".join(f"    {line}\n" for line in lines)
        if returned is not None:
            source += f"    return {returned}\n"
        call = f"{function}({', '.join(arguments)})"
        result = self.fresh("j") if returned is not None else None
        if not self.attempt(source, [f"{result} = {call}" if result else call]):
            return False
        self.kept = [expr for expr in dict.fromkeys(self.kept + kept) if self.is_kept(expr)]
        if result:
            self.test_names.append(result)
        return True

    def keep_line(self, value: str, lines: list[str]) -> str:
        """Keep ``value`` in the student's dict ``KEPT`` or in a new global (declared at the top of the function)."""
        if self.random.random() < 0.5:
            slot = f"KEPT[{self.fresh('k')!r}]"
        else:
            slot = self.fresh("g")
            lines.insert(0, f"global {slot}")
        lines.append(f"{slot} = {value}")
        return slot

    def is_kept(self, expr: str) -> bool:
        if expr.startswith("KEPT"):
            return expr[6:-2] in self.namespace["KEPT"]
        return expr in self.namespace

    def observe_step(self) -> bool:
        """The test reads one of its values or one of the student's globals, or the student's code reads what it
        keeps or an argument, or the test asks whether two of its values are one object."""
        choose = self.random
        roll = choose.random()
        if roll < 0.4 and self.test_names:
            return self.attempt(None, [f"_o(_look({choose.choice(self.test_names)}))"])
        if roll < 0.5 and len(self.test_names) >= 2:
            first, second = choose.sample(self.test_names, 2)
            kinds = {kind_of(self.value(first)), kind_of(self.value(second))}
            if not kinds <= {"tensor", "list", "dict"}:
                return False  # A tuple crosses as a new one; a student's object as a handle.
            return self.attempt(None, [f"_o({first} is {second})"])
        if roll < 0.6 and any(expr.startswith("g") for expr in self.kept):
            return self.attempt(None, [f"_o(_look({choose.choice([e for e in self.kept if e.startswith('g')])}))"])
        if self.kept:
            function = self.fresh("f")
            source = f"def {function}():\n    return _klook({choose.choice(self.kept)})\n"
            return self.attempt(source, [f"_o({function}())"])
        if self.test_names:
            function = self.fresh("f")
            source = f"def {function}(a0):\n    return _klook(a0)\n"
            return self.attempt(source, [f"_o({function}({choose.choice(self.test_names)}))"])
        return False

    def forget_step(self) -> bool:
        """The test deletes one of its names, or the student's code drops what it keeps."""
        if self.test_names and self.random.random() < 0.6:
            name = self.random.choice(self.test_names)
            if self.attempt(None, [f"del {name}"]):
                self.test_names.remove(name)
                return True
            return False
        if not self.kept:
            return False
        slot = self.random.choice(self.kept)
        function = self.fresh("f")
        declare = "" if slot.startswith("KEPT") else f"    global {slot}\n"
        if self.attempt(f"def {function}():\n{declare}    del {slot}\n", [f"{function}()"]):
            self.kept.remove(slot)
            return True
        return False

    def observe_everything(self) -> None:
        """At a cell's end, the test reads each of its names, then the student's code reads all that it keeps."""
        lines = [f"_o(_look({name}))" for name in self.test_names]
        source = None
        if self.kept:
            function = self.fresh("f")
            source = f"def {function}():\n    return [{', '.join(f'_klook({expr})' for expr in self.kept)}]\n"
            lines.append(f"_o({function}())")
        if lines and not self.attempt(source, lines):
            raise RuntimeError(f"seed {self.seed}: the final observations failed in one process")

    def generate(self) -> Program:
        steps = [(0.4, self.test_step), (0.85, self.student_step), (0.93, self.observe_step), (1.0, self.forget_step)]
        for cell in range(self.cell_count):
            if cell:
                self.cells.append([])
                self.test_names = []  # A test cell's names are its own: the next cell starts with none.
            for _ in range(max(1, self.steps // self.cell_count)):
                for _ in range(8):  # A few tries, since a step may fail (an in-place write to an expanded view).
                    roll = self.random.random()
                    if next(step for limit, step in steps if roll < limit)():
                        break
            self.observe_everything()
        cells = ["\n".join(cell) + "\n" for cell in self.cells]
        program = Program(self.seed, self.student_source(), cells, steps=self.steps)
        program.expected = one_process(program)
        return program


def one_process(program: Program) -> list[list]:
    """Each cell's observations when the student's code and the test run in one namespace, as in one process."""
    namespace = {"__name__": "__main__"}
    exec(program.student, namespace)
    exec(LOOK.replace("NAME", "_look"), namespace)
    observations = []
    for cell in program.cells:
        observations.append([])
        namespace["_o"] = observations[-1].append
        exec(cell, namespace)
    return observations


def generate(seed: int, steps: int = 20) -> Program:
    return Generator(seed, steps).generate()


def checked_cell(cell: str, expected: list) -> str:
    """A test cell that compares each of its observations with the one-process truth."""
    return CHECK_PRELUDE.replace("EXPECTED", repr(expected)) + cell + CHECK_END


def through_judge(program: Program, timeout: float = 5.0) -> Failure | None:
    """Run the program's cells through the judge against a kernel of the student's source; None if every
    observation is the one-process truth, else the first failure."""
    kernel = Kernel(program.student, timeout=timeout)
    try:
        for index, (cell, expected) in enumerate(zip(program.cells, program.expected)):
            verdict = kernel.run(checked_cell(cell, expected))
            if not verdict.passed:
                message = verdict.message
                kind = ("hang" if message.startswith("TimeoutError") else
                        "protocol" if "protocol" in message else
                        "mismatch" if message.startswith("AssertionError: observation") else "error")
                return Failure(kind, index, message, list(verdict.traceback or []))
    finally:
        kernel.close()
    return None


def report(program: Program, failure: Failure) -> str:
    """What a developer needs to reproduce a failure: the program, the failing cell, the first observation that
    differs (with the line that made it) and the judge's message."""
    text = f"seed {program.seed}: {failure.kind} in test cell {failure.cell}\n{program.listing()}"
    found = re.match(r"AssertionError: observation (\d+)", failure.message)
    if found:
        index = int(found.group(1))
        lines = [line for line in program.cells[failure.cell].splitlines() if line.startswith("_o(")]
        text += f"# Observation {index} of cell {failure.cell}: {lines[index]}\n"
        text += f"#   in one process: {program.expected[failure.cell][index]!r}\n"
    text += f"# The judge's message: {failure.message}\n"
    text += "".join(f"#   {line}\n" for line in failure.traceback)
    steps = f" --steps {program.steps}" if program.steps != 20 else ""
    text += f"# Again: python tests/judge_fuzz.py --start {program.seed} --count 1{steps} --verbose\n"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--start", type=int, default=0, help="the first seed")
    parser.add_argument("--count", type=int, default=100, help="how many seeds")
    parser.add_argument("--steps", type=int, default=20, help="steps of each program")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds each test cell may run")
    parser.add_argument("--verbose", action="store_true", help="print each failing program")
    options = parser.parse_args()
    counts: dict[str, int] = {}
    failed: dict[str, list[int]] = {}
    began = time.monotonic()
    for seed in range(options.start, options.start + options.count):
        program = generate(seed, options.steps)
        failure = through_judge(program, options.timeout)
        kind = "ok" if failure is None else failure.kind
        counts[kind] = counts.get(kind, 0) + 1
        if failure is not None:
            failed.setdefault(kind, []).append(seed)
            if options.verbose:
                print(report(program, failure), flush=True)
    print(f"{options.count} programs in {time.monotonic() - began:.0f} s: "
          + ", ".join(f"{kind} {count}" for kind, count in sorted(counts.items())))
    for kind, seeds in sorted(failed.items()):
        print(f"{kind}: seeds {' '.join(map(str, seeds))}")


if __name__ == "__main__":
    main()
