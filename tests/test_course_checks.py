"""Unit tests of course.checks: strict types first, clear messages, no leaks in hidden mode."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from course.checks import (
    assert_accepts,
    assert_no_python_loop,
    assert_plain_equal,
    assert_raises,
    assert_same_tensor,
    assert_steps,
    check_type,
    count_torch_calls,
    replay,
)

plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=3), children, max_size=4),
    max_leaves=12,
)


@given(plain)
def test_plain_value_equals_itself(value):
    assert_plain_equal(value, value, "f()")


@given(st.integers())
def test_int_is_not_float_or_bool(value):
    with pytest.raises(AssertionError, match="type float"):
        assert_plain_equal(float(value), value, "f()")
    with pytest.raises(AssertionError, match="type bool"):
        assert_plain_equal(True, 1, "f()")


def test_rigged_objects_fail_at_the_type_check():
    class AlwaysEqual(str):
        def __eq__(self, other):
            return True

        __hash__ = str.__hash__

    with pytest.raises(AssertionError, match="type AlwaysEqual; expected exactly str"):
        assert_plain_equal(AlwaysEqual("x"), "y", "select_victim({...})")

    class Truthy:
        def __bool__(self):
            return True

    with pytest.raises(AssertionError, match="expected exactly int"):
        check_type(Truthy(), int, "argmin_victim(t)")


def test_messages_name_the_call_and_hide_hidden_answers():
    with pytest.raises(AssertionError) as visible:
        assert_plain_equal({"a": 1.5}, {"a": 2.5}, "quotas({'a': 1}, 4)")
    assert "quotas({'a': 1}, 4)" in str(visible.value) and "expected 2.5" in str(visible.value)
    with pytest.raises(AssertionError) as hidden:
        assert_plain_equal([1, 2], [1, 3], "f(case 7)", reveal=False)
    assert "f(case 7)" in str(hidden.value) and "3" not in str(hidden.value).replace("f(case 7)", "")


def test_float_tolerance_and_nan():
    assert_plain_equal(0.1 + 0.2, 0.3, "f()")
    assert_plain_equal(math.nan, math.nan, "f()")
    with pytest.raises(AssertionError):
        assert_plain_equal(1.0 + 1e-6, 1.0, "f()")


def test_an_infinity_equals_only_itself_whatever_the_tolerance():
    assert_plain_equal(math.inf, math.inf, "f()")
    assert_plain_equal(-math.inf, -math.inf, "f()", rel_tol=0.5)
    for actual, expected in ((math.inf, 0.5), (-math.inf, 2.0), (0.5, math.inf), (math.inf, -math.inf)):
        with pytest.raises(AssertionError):
            assert_plain_equal(actual, expected, "f()", rel_tol=1e-9, abs_tol=1e-6)
    with pytest.raises(AssertionError):
        assert_plain_equal({"a": math.inf}, {"a": 3.0}, "f()", rel_tol=0.1)


def test_dict_keys_must_match():
    with pytest.raises(AssertionError, match="missing keys \\['b'\\]"):
        assert_plain_equal({"a": 1}, {"a": 1, "b": 2}, "f()")


def test_assert_same_tensor_checks_each_property():
    expected = torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert_same_tensor(expected.clone(), expected, "f()")
    with pytest.raises(AssertionError, match="dtype"):
        assert_same_tensor(expected.float(), expected, "f()")
    with pytest.raises(AssertionError, match="shape"):
        assert_same_tensor(expected[:1], expected, "f()")
    with pytest.raises(AssertionError, match=r"entry \[0\] is 2.0; expected 1.0 \(2 of 2 entries differ\)"):
        assert_same_tensor(expected + 1, expected, "f()")
    assert_same_tensor(expected + 1e-12, expected, "f()", atol=1e-9)
    with pytest.raises(AssertionError, match="type list"):
        assert_same_tensor([1.0, 2.0], expected, "f()")

    class Sneaky(torch.Tensor):
        pass

    with pytest.raises(AssertionError, match="type Sneaky"):
        assert_same_tensor(expected.as_subclass(Sneaky), expected, "f()")


def test_assert_same_tensor_compares_nan_positions():
    expected = torch.tensor([float("nan"), 1.0])
    assert_same_tensor(expected.clone(), expected, "f()")
    with pytest.raises(AssertionError, match=r"entry \[0\] is 1.0; expected nan"):
        assert_same_tensor(torch.tensor([1.0, float("nan")]), expected, "f()")


def test_assert_same_tensor_names_the_first_difference_not_the_whole_tensor():
    expected = torch.zeros(64, 8, 4, dtype=torch.float32)
    actual = expected.clone()
    actual[5, 3, 2], actual[60, 0, 0] = 0.5, 7.0
    with pytest.raises(AssertionError) as caught:
        assert_same_tensor(actual, expected, "gather_kv(pool, [3, 1], 20)")
    message = str(caught.value)
    assert "shape [64, 8, 4]" in message and "torch.float32" in message and "cpu" in message
    assert "entry [5, 3, 2] is 0.5; expected 0.0 (2 of 2048 entries differ)" in message
    assert len(message) < 300, "the message must not dump the tensor"
    with pytest.raises(AssertionError) as hidden:
        assert_same_tensor(actual, expected, "a hidden case", reveal=False)
    assert "expected" not in str(hidden.value) and "is 0.5, which is wrong" in str(hidden.value)


def test_assert_accepts_fails_only_a_refusal():
    assert_accepts("int('1')", int, "1")
    with pytest.raises(AssertionError, match=r"int\('x'\) refused valid input: ValueError"):
        assert_accepts("int('x')", int, "x")

    def unwritten():
        raise NotImplementedError()

    def broken():
        raise IndexError("a slip in the computation")

    def refuses():
        raise RuntimeError("not enough blocks")

    assert_accepts("unwritten()", unwritten)  # A part still to be written is not a refusal.
    assert_accepts("broken()", broken)  # Nor is an error of the computation, which other checks catch.
    assert_accepts("refuses()", refuses)  # RuntimeError refuses only where the caller says so.
    with pytest.raises(AssertionError, match="refused valid input: RuntimeError"):
        assert_accepts("refuses()", refuses, refusals=(RuntimeError,))
    assert_accepts("unwritten()", unwritten, refusals=(RuntimeError,))  # NotImplementedError is a RuntimeError.


def test_assert_raises():
    assert_raises(ValueError, "int('x')", int, "x")
    with pytest.raises(AssertionError, match="raised nothing"):
        assert_raises(ValueError, "int('1')", int, "1")
    with pytest.raises(AssertionError, match="raised TypeError"):
        assert_raises(ValueError, "int(None)", int, None)


def test_a_stub_does_not_pass_for_a_runtime_error():
    def stub():
        raise NotImplementedError()

    with pytest.raises(AssertionError, match="not written yet"):
        assert_raises(RuntimeError, "allocate_n(99)", stub)


def test_torch_call_counting_tells_loops_from_vectorized_code():
    def vectorized(values):
        return int(torch.argmin(values))

    def looped(values):
        return min(range(len(values)), key=lambda i: float(values[i]))

    result, calls = count_torch_calls(vectorized, torch.tensor([3.0, 1.0]))
    assert result == 1 and 0 < calls < 10
    small, large = (torch.rand(8),), (torch.rand(2048),)
    assert_no_python_loop(vectorized, small, large, "vectorized")
    with pytest.raises(AssertionError, match="loops over entries"):
        assert_no_python_loop(looped, small, large, "looped")


def test_a_loop_over_a_python_list_of_the_entries_counts_as_a_loop():
    def over_tolist(values):
        listed = values.tolist()
        return min(range(len(listed)), key=listed.__getitem__)

    def into_a_new_tensor(values, count):
        return torch.tensor([2 * position for position in range(count)])

    def tolist_of_a_small_result(values):
        return torch.topk(values, 2).indices.tolist()

    small, large = (torch.rand(8),), (torch.rand(2048),)
    for looped, args in ((over_tolist, (small, large)), (into_a_new_tensor, ((*small, 8), (*large, 2048)))):
        with pytest.raises(AssertionError, match="loops over entries"):
            assert_no_python_loop(looped, *args, looped.__name__)
    assert_no_python_loop(tolist_of_a_small_result, small, large, "tolist_of_a_small_result")
    assert count_torch_calls(over_tolist, torch.rand(100))[1] > 100


class _Log:
    """A small object with state, methods, operators and attributes, as the replayed tests' targets are."""

    def __init__(self):
        self.items, self.seen = [], {}

    def add(self, item):
        if item is None:
            raise ValueError("no None")
        self.items.append(item)
        self.seen[item] = len(self.items)
        return self.items

    def __contains__(self, item):
        return item in self.seen

    def __len__(self):
        return len(self.items)


def test_replay_yields_each_step_s_result_as_it_was_at_that_step():
    log = _Log()
    steps = [("add", (1,)), ("in", (1,)), ("in", (2,)), ("add", (2,)), ("len", ()), ("items", None),
             ("items", tuple), ("seen", "items"), ("seen", sorted)]
    got = list(replay(log, steps))
    # add returns the log's own list: each result is a copy as it was after its step.
    assert got == [[1], True, False, [1, 2], 2, [1, 2], (1, 2), [(1, 1), (2, 2)], [1, 2]]
    assert got[0] is not log.items and got[5] is not log.items


def test_replay_gives_each_step_copies_of_its_arguments_made_before_the_first_step_runs():
    """What the target does to a step's arguments never reaches the caller, and a step that branches passes both
    calls the same copies; the copies are made up front, as when the steps cross to the student's process at once."""

    class Keeper:
        def __init__(self):
            self.kept = []

        def keep(self, items, weights):
            items.append(0)
            weights.add_(1)
            self.kept.append((items, weights))
            return len(self.kept)

        def again(self, items):
            self.kept.append((items, None))

        def __contains__(self, item):
            return True

    keeper, items, weights = Keeper(), [1, 2], torch.zeros(2)
    steps = [("keep", (items, weights)), ("keep", (items, weights)), ("in", (items,), ("again", "x"))]
    got = list(replay(keeper, steps))
    assert got == [1, 2, True] and items == [1, 2] and torch.equal(weights, torch.zeros(2))
    first, second, branched = keeper.kept
    assert first[0] == second[0] == [1, 2, 0] and first[0] is not second[0] and first[0] is not items
    assert branched[0] is not items and branched[0] == [1, 2]  # The "in" step's own copy, passed on to "again".
    held = Keeper()
    held.keep(items, weights)  # The target holds the caller's list itself; a replay's first step changes it ...
    steps = [("grow", ()), ("keep", (items, weights))]
    held.grow = lambda: held.kept[0][0].append(5)
    list(replay(held, steps))
    assert held.kept[1][0] == [1, 2, 0, 0], held.kept  # ... and the second step's copy was made before it ran.


def test_replay_raises_in_the_failing_step_s_place_and_runs_no_later_step():
    log = _Log()
    results = replay(log, [("add", (1,)), ("add", (None,)), ("add", (3,))])
    assert next(results) == [1]
    with pytest.raises(ValueError, match="no None"):
        next(results)
    assert log.items == [1]
    with pytest.raises(TypeError, match="neither calls nor reads"):
        list(replay(log, [("items", 5)]))
    with pytest.raises(TypeError, match=r"a step is \(name, args\)"):
        list(replay(log, [("add",)]))


def test_a_call_step_calls_the_target_itself_a_function_or_a_class():
    made = list(replay(_Log, [("__call__", ()), ("__call__", ())]))
    assert [type(log) for log in made] == [_Log, _Log] and made[0] is not made[1]
    assert list(replay(max, [("__call__", (3, 7)), ("__call__", ([2, 1],))])) == [7, 2]


def test_assert_steps_checks_results_in_order_and_names_the_first_difference():
    plan = [([("add", (1,))], [1], "add(1)"), ([("add", (2,))], None, None),
            ([("len", ()), ("in", (2,))], (2, True), "(len, 2 in log)")]
    assert_steps(_Log(), plan)
    wrong = plan[:2] + [([("len", ()), ("in", (2,))], (3, True), "(len, 2 in log)")]
    with pytest.raises(AssertionError, match=r"\(len, 2 in log\) returned at \[0\] 2, which is wrong"):
        assert_steps(_Log(), wrong, reveal=False)
    with pytest.raises(ValueError):  # A step that raises fails the check in its place.
        assert_steps(_Log(), [([("add", (None,))], [1], "add(None)")])


def test_a_step_that_branches_on_the_student_s_own_answer():
    log = _Log()
    log.add(1)
    got = list(replay(log, [("in", (1,), ("add", "add")), ("in", (2,), ("items", "add")), ("items", list)]))
    assert got == [True, False, [1, 1, 2]]  # 1 in log: add(1); 2 not in log: add(2).
    with pytest.raises(TypeError, match="branches"):
        list(replay(log, [("in", (1,), "add")]))


def test_a_difference_deep_inside_is_named_by_its_place():
    """Equal scalars pass without a message being built (a fast path); the first that differs still names its place."""
    expected = [[1, 2], {"k": [3, 5.0, "s"], "n": None}, (True, 2.5)]
    assert_plain_equal([[1, 2], {"n": None, "k": [3, 5.0, "s"]}, (True, 2.5)], expected, "f()")
    with pytest.raises(AssertionError, match=r"f\(\) returned at \[1\]\['k'\]\[1\] 4.0; expected 5.0"):
        assert_plain_equal([[1, 2], {"k": [3, 4.0, "s"], "n": None}, (True, 2.5)], expected, "f()")
    with pytest.raises(AssertionError, match=r"at \[2\]\[0\] returned a value of type int; expected exactly bool"):
        assert_plain_equal([[1, 2], {"k": [3, 5.0, "s"], "n": None}, (1, 2.5)], expected, "f()")
    with pytest.raises(AssertionError, match=r"at \[0\]\[1\] returned a value of type float; expected exactly int"):
        assert_plain_equal([[1, 2.0], {"k": [3, 5.0, "s"], "n": None}, (True, 2.5)], expected, "f()")
    assert_plain_equal([math.nan, 0.1 + 0.2], [math.nan, 0.3], "f()")  # NaN and a float within tolerance.
