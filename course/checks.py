"""Assertions that the notebooks' test cells use.

Every check is strict about types first (``type(x) is int``, never ``isinstance``), then compares
plain data (ints, floats, strings, lists, dicts, tensors moved to the CPU). An object that
pretends to be a right answer through a rigged ``__eq__`` or ``__bool__`` therefore fails at the
type check, before any comparison runs.

Messages say what was called and what was wrong. Visible tests may show the expected value;
hidden tests pass ``reveal=False`` so that a message never gives away a hidden case's answer.

Used in every notebook's test cells.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

_PLAIN_SCALARS = (bool, int, float, str, type(None))


def _names(expected_type: type | tuple[type, ...]) -> str:
    types = expected_type if isinstance(expected_type, tuple) else (expected_type,)
    return " or ".join("None" if t is type(None) else t.__name__ for t in types)


def check_type(value: Any, expected_type: type | tuple[type, ...], call: str) -> None:
    """Fail unless ``type(value)`` is exactly ``expected_type`` (or one of a tuple of types).

    Subclasses do not count: ``True`` is not an ``int`` here, and a subclass of ``str`` with a
    rigged ``__eq__`` is not a ``str``.

    Raises:
        AssertionError: naming ``call``, the type returned and the type expected.
    """
    if type(value) is expected_type:
        return
    types = expected_type if isinstance(expected_type, tuple) else (expected_type,)
    if not any(type(value) is t for t in types):
        raise AssertionError(
            f"{call} returned a value of type {type(value).__name__}; "
            f"expected exactly {_names(expected_type)}"
        )


def assert_plain_equal(
    actual: Any,
    expected: Any,
    call: str,
    rel_tol: float = 1e-9,
    abs_tol: float = 1e-12,
    reveal: bool = True,
) -> None:
    """Fail unless ``actual`` equals ``expected``, with exactly the same types at every level.

    ``expected`` must be plain data: None, bool, int, float, str, or lists, tuples and dicts of
    those. Floats compare with ``rel_tol``/``abs_tol`` (NaN equals NaN); everything else compares
    exactly. Dicts must have the same keys; their order does not matter.

    Raises:
        AssertionError: naming ``call`` and the first place where ``actual`` differs.
        TypeError: when ``expected`` is not plain data (a mistake in the test, not the answer).
    """
    _compare(actual, expected, call, "", rel_tol, abs_tol, reveal)


# Scalars of these exact types that are equal pass every check of `_compare` (a float too: equal floats are within
# any tolerance), so an equal pair is accepted before any message is built. A long list of results compares in a
# fraction of the time, with the same verdicts and the same messages.
_EQUAL_PASSES = frozenset({bool, int, float, str, type(None)})


def _passes_at_once(actual: Any, expected: Any) -> bool:
    kind = type(expected)
    return type(actual) is kind and kind in _EQUAL_PASSES and actual == expected


def _compare(actual: Any, expected: Any, call: str, where: str, rel_tol: float, abs_tol: float,
             reveal: bool) -> None:
    if _passes_at_once(actual, expected):
        return
    place = f" at {where}" if where else ""
    check_type(actual, type(expected), call + place)
    if isinstance(expected, dict):
        actual_keys, expected_keys = set(actual), set(expected)
        if actual_keys != expected_keys:
            missing = ", ".join(sorted(map(repr, expected_keys - actual_keys))) or "none"
            extra = ", ".join(sorted(map(repr, actual_keys - expected_keys))) or "none"
            detail = f"missing keys [{missing}], unexpected keys [{extra}]" if reveal else "a wrong set of keys"
            raise AssertionError(f"{call} returned a dict{place} with {detail}")
        for key, want in expected.items():
            got = actual[key]
            if not _passes_at_once(got, want):
                _compare(got, want, call, f"{where}[{key!r}]", rel_tol, abs_tol, reveal)
        return
    if isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            detail = (f"{len(actual)} items; expected {len(expected)}" if reveal
                      else f"{len(actual)} items, which is wrong")
            raise AssertionError(f"{call} returned{place} {detail}")
        for index, (got, want) in enumerate(zip(actual, expected)):
            if not _passes_at_once(got, want):
                _compare(got, want, call, f"{where}[{index}]", rel_tol, abs_tol, reveal)
        return
    if not isinstance(expected, _PLAIN_SCALARS):
        raise TypeError(f"assert_plain_equal: expected value of type {type(expected).__name__} is not plain data")
    if type(expected) is float:
        # An infinity equals only itself: a relative tolerance of an infinite value would be infinite too.
        same = (math.isnan(actual) and math.isnan(expected)) or actual == expected or (
            math.isfinite(actual) and math.isfinite(expected)
            and abs(actual - expected) <= max(abs_tol, rel_tol * max(abs(actual), abs(expected)))
        )
    else:
        same = actual == expected
    if not same:
        detail = f"{actual!r}; expected {expected!r}" if reveal else f"{actual!r}, which is wrong"
        raise AssertionError(f"{call} returned{place} {detail}")


def assert_same_tensor(
    actual: Any,
    expected: torch.Tensor,
    call: str,
    atol: float = 0.0,
    rtol: float = 0.0,
    reveal: bool = True,
) -> None:
    """Fail unless ``actual`` is a ``torch.Tensor`` like ``expected``: type, dtype, shape, device, values.

    The type must be exactly ``torch.Tensor`` (no subclass). Values compare exactly when
    ``atol`` and ``rtol`` are 0, otherwise like ``torch.allclose``; NaNs must sit in the same places.

    Raises:
        AssertionError: naming ``call`` and the first property that differs.
    """
    if type(expected) is not torch.Tensor:
        raise TypeError("assert_same_tensor: expected must be a torch.Tensor")
    check_type(actual, torch.Tensor, call)
    for name in ("dtype", "shape", "device"):
        got, want = getattr(actual, name), getattr(expected, name)
        if got != want:
            detail = f"{got}; expected {want}"
            raise AssertionError(f"{call} returned a tensor with {name} {detail}")
    got = actual.detach().cpu()
    want = expected.detach().cpu()
    if got.is_floating_point() or got.is_complex():
        nan_got, nan_want = torch.isnan(got), torch.isnan(want)
        differs = nan_got != nan_want
        both = ~(nan_got | nan_want)
        if atol == 0 and rtol == 0:
            differs |= both & (got != want)
        else:
            differs |= both & ~(torch.abs(got - want) <= atol + rtol * torch.abs(want))
    else:
        differs = got != want
    if bool(differs.any()):
        where = [int(i) for i in torch.nonzero(differs)[0]]
        index = "[" + ", ".join(map(str, where)) + "]"
        value = got[tuple(where)].item()
        wanted = f"; expected {want[tuple(where)].item()!r}" if reveal else ", which is wrong"
        raise AssertionError(
            f"{call} returned a tensor (shape {list(got.shape)}, {got.dtype}, {actual.device}) whose entry "
            f"{index} is {value!r}{wanted} ({int(differs.sum())} of {differs.numel()} entries differ)")


def assert_raises(exception: type[BaseException], call: str, function: Any, *args: Any, **kwargs: Any) -> None:
    """Fail unless ``function(*args, **kwargs)`` raises ``exception`` (or a subclass of it).

    Raises:
        AssertionError: naming ``call``, when nothing or another exception was raised.
    """
    try:
        function(*args, **kwargs)
    except NotImplementedError:
        # A stub that is still to be written must not pass a test that expects a RuntimeError.
        if exception is NotImplementedError:
            return
        raise AssertionError(f"{call} raised NotImplementedError: the function is not written yet") from None
    except exception:
        return
    except Exception as error:  # noqa: BLE001 - the wrong exception is reported, not hidden.
        raise AssertionError(
            f"{call} raised {type(error).__name__}({error}); expected {exception.__name__}"
        ) from None
    raise AssertionError(f"{call} raised nothing; expected {exception.__name__}")


def assert_accepts(call: str, function: Any, *args: Any,
                   refusals: tuple[type[BaseException], ...] = (TypeError, ValueError), **kwargs: Any) -> None:
    """Fail when ``function(*args, **kwargs)`` refuses valid input: raises one of ``refusals``.

    Whatever else it does (a result, another error) is for the checks of what it computes, and the
    NotImplementedError of a part still to be written is not a refusal: a test of the checks of the
    input passes whether or not the rest is written yet.

    Raises:
        AssertionError: naming ``call``, when one of ``refusals`` was raised.
    """
    try:
        function(*args, **kwargs)
    except NotImplementedError:
        return
    except refusals as error:
        raise AssertionError(f"{call} refused valid input: {type(error).__name__}({error})") from None
    except Exception:  # noqa: BLE001 - an error of the computation is for the checks of its values.
        return


# The counting modes active now, innermost last. When grading, the judge (grading/judge/) adds to them the
# torch operations that the student's code made in its own process meanwhile.
COUNTING: list = []


class _CountingMode(TorchFunctionMode):
    """Counts every torch function and tensor method called while it is active (see `count_torch_calls`).

    A call that moves a tensor's entries into Python's own numbers (``Tensor.tolist``), or makes a tensor from a
    Python list or tuple (``torch.tensor``, ``torch.as_tensor``, ``Tensor.new_tensor``), counts one operation for
    each entry it moves: a Python loop over such a list makes no torch operation of its own.
    """

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        self.calls += 1
        result = func(*args, **(kwargs or {}))
        if func is torch.Tensor.tolist:
            self.calls += args[0].numel()
        elif func in _FROM_PYTHON and type(result) is torch.Tensor:
            position = 1 if func is torch.Tensor.new_tensor else 0
            data = args[position] if len(args) > position else (kwargs or {}).get("data")
            if isinstance(data, (list, tuple)):
                self.calls += result.numel()
        return result


# The torch calls that make a tensor from Python data (see `_CountingMode`).
_FROM_PYTHON = (torch.tensor, torch.as_tensor, torch.Tensor.new_tensor)


def count_torch_calls(function: Any, *args: Any, **kwargs: Any) -> tuple[Any, int]:
    """Call ``function`` and count the torch operations it makes.

    The arguments are passed as they are (plain tensors stay plain ``torch.Tensor`` objects, so a
    function may check ``type(x) is torch.Tensor``); a torch function mode counts every torch
    function and tensor method called meanwhile. A vectorized function makes a handful of
    operations whatever the size of its input; a Python loop over the entries makes at least one
    per entry.

    Returns:
        ``(result, number_of_torch_operations)``.
    """
    # When grading, a student's function lives in another process (grading/judge/): that process counts.
    counted_elsewhere = getattr(type(function), "judge_count_torch_calls", None)
    if counted_elsewhere is not None:
        return counted_elsewhere(function, *args, **kwargs)
    with _CountingMode() as mode:
        COUNTING.append(mode)
        try:
            result = function(*args, **kwargs)
        finally:
            COUNTING.remove(mode)
    return result, mode.calls


def assert_no_python_loop(function: Any, small_args: tuple, large_args: tuple, call: str,
                          slack: int = 8) -> None:
    """Fail when ``function`` makes many more torch operations on large inputs than on small ones.

    ``small_args`` and ``large_args`` hold the same kind of input at two sizes (for example 8 and
    4,096 entries). A vectorized function makes about the same number of operations on both;
    a Python loop over entries makes thousands more on the large one, also over the Python list of
    a ``.tolist()`` (each entry it moves counts). Nothing is timed.

    Raises:
        AssertionError: naming ``call`` and both operation counts.
    """
    _, small = count_torch_calls(function, *small_args)
    _, large = count_torch_calls(function, *large_args)
    if large > small + slack:
        raise AssertionError(
            f"{call} made {large} torch operations on the large input and {small} on the small "
            f"one: it loops over entries in Python; use whole-tensor operations instead"
        )


# What a step may read an attribute as (see `replay`).
_READ_AS = (list, tuple, dict, set, sorted)


def apply_step(target: Any, step: tuple) -> Any:
    """Do one step of `replay` on ``target``; return its result, with plain containers and tensors copied."""
    if type(step) is not tuple or len(step) not in (2, 3) or type(step[0]) is not str:
        raise TypeError(f"replay: a step is (name, args) or (name, args, (if_true, if_false)), not {step!r}")
    if len(step) == 3:
        branches = step[2]
        if type(step[1]) is not tuple or type(branches) is not tuple or len(branches) != 2:
            raise TypeError(f"replay: a step that branches is (name, args, (if_true, if_false)), not {step!r}")
        result = apply_step(target, step[:2])
        getattr(target, branches[0] if result else branches[1])(*step[1])
        return result
    name, args = step
    if type(args) is tuple:
        if name == "in":
            return args[0] in target
        if name == "len":
            return len(target)
        if name == "__call__":
            return _copied(target(*args))
        return _copied(getattr(target, name)(*args))
    if args is None:
        return _copied(getattr(target, name))
    if any(args is read_as for read_as in _READ_AS):
        return _copied(args(getattr(target, name)))
    if args == "items":
        return _copied(list(getattr(target, name).items()))
    raise TypeError(f"replay: the step ({name!r}, {args!r}) neither calls nor reads")


def _copied(value: Any) -> Any:
    """``value`` with every list, tuple, dict, set and tensor in it copied: a result as it was at its step."""
    kind = type(value)
    if kind is list or kind is tuple or kind is set or kind is frozenset:
        return kind(_copied(item) for item in value)
    if kind is dict or kind is OrderedDict:
        return kind((key, _copied(item)) for key, item in value.items())
    if kind is torch.Tensor:
        return value.detach().clone()
    return value


def replay(target: Any, steps: list) -> Any:
    """Apply ``steps`` to ``target`` one after another; yield each step's result, in order.

    A step is ``(name, args)``: ``("in", (x,))`` is ``x in target``, ``("len", ())`` is
    ``len(target)``, ``(method, (a, b))`` calls ``target.method(a, b)`` and ``("__call__", (a, b))``
    calls ``target(a, b)`` (a function, or a class: many objects made at once); ``(attribute, None)``
    reads ``target.attribute``, ``(attribute, list)`` reads it as ``list(target.attribute)``
    (also ``tuple``, ``dict``, ``set`` or ``sorted``), and ``(attribute, "items")`` as
    ``list(target.attribute.items())``. A step ``(name, args, (if_true, if_false))`` does
    ``(name, args)``, then calls ``target.if_true(*args)`` when its result is true, else
    ``target.if_false(*args)``; its result is the first one's. Each result is a copy as it was at its
    step (lists, dicts, sets and tensors in it are copied). So are the arguments: each step gets
    copies, all made before the first step runs, and what the target does to them never reaches the
    caller's own lists and tensors. Every step runs before the first result comes (an object among
    the results reads as it is after the last step); a step that raises raises in its place, after
    the results of the steps before it, and the later steps do not run.

    When grading, the steps run in the student's process in one request before the first result
    comes (grading/judge/): until it has read every result, a test does nothing else with ``target``.
    The student's code can see every step before it answers the first, so no step may depend on an
    expected result (a ``hit`` only where the oracle says "resident" tells the student the answer):
    a step that depends on the student's own answer branches (``if_true``, ``if_false``).
    """
    steps = list(steps)
    replayed_elsewhere = getattr(type(target), "judge_replay", None)
    if replayed_elsewhere is not None:
        yield from replayed_elsewhere(target, steps)
        return
    steps = [_with_copied_arguments(step) for step in steps]  # All made before the first step runs, as when grading.
    # Every step runs before the first result comes, as when grading: an object among the results reads the same
    # here as there (as it is after the last step), whenever the test reads it.
    results, failure = apply_steps(target, steps, Exception)
    yield from results
    if failure is not None:
        try:
            raise failure  # In its place, after the results of the steps before it.
        finally:  # Its traceback holds this frame (through apply_steps's): no cycle keeps the steps' frames alive.
            failure = None


def apply_steps(target: Any, steps: list, caught: type | tuple) -> tuple[list, BaseException | None]:
    """Do ``steps`` on ``target`` in order (`apply_step`) until one raises one of ``caught``: the results of the steps
    before it, and what it raised (None when none did). `replay` runs them so, and so does the student's process
    when grading (grading/judge/agent.py)."""
    results = []
    for step in steps:
        try:
            results.append(apply_step(target, step))
        except caught as error:
            return results, error
    return results, None


def _with_copied_arguments(step: Any) -> Any:
    """``step`` with copies of its arguments (see `replay`); a malformed step as it is, for `apply_step` to refuse."""
    if type(step) is tuple and len(step) in (2, 3) and type(step[1]) is tuple:
        return (step[0], _copied(step[1]), *step[2:])
    return step


def assert_steps(target: Any, plan: list, reveal: bool = True) -> None:
    """Run the steps of ``plan`` on ``target`` (one `replay`) and check their results in order.

    ``plan`` holds ``(steps, expected, call)`` entries. When ``call`` is None the results of
    ``steps`` are not checked; otherwise the result of one step, or the tuple of the results of
    several, must equal ``expected`` (`assert_plain_equal`, with ``call`` in its message). The
    first difference fails, as a loop of calls and checks would.
    """
    results = replay(target, [step for steps, _, _ in plan for step in steps])
    for steps, expected, call in plan:
        got = tuple(next(results) for _ in steps)
        if call is not None:
            assert_plain_equal(got[0] if len(got) == 1 else got, expected, call, reveal=reveal)
