"""No surprise at grading: every rule a task's hidden tests assert is stated in its text and shown by a visible case.

grading/authoring/rules.py finds the kinds of rule (inputs unchanged, nothing changed on error, exception types,
input dtypes, devices, ties, empty input, NaN, infinity, integers beyond float64, no Python loop) in each task's
hidden tests and looks for them in the task's English and Chinese text and in its visible tests. One notebook:
``python -m grading.authoring.rules 03`` or ``pytest tests/test_task_rules.py -k 03_lru``.
"""

from __future__ import annotations

import pytest

from grading.authoring import rules
from grading.config import ASSIGNMENTS


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_hidden_rule_is_stated_and_shown(assignment):
    found = rules.gaps(assignment)
    assert not found, (f"{assignment}: a hidden test checks a rule that the task's text (English and Chinese) or its "
                       f"visible test does not name (python -m grading.authoring.rules {assignment[:2]}):\n"
                       + "\n".join(found))


# The hidden test of 3.6 before issue 29: it checks that the inputs are unchanged, and the text never said so.
HIDDEN_3_6 = '''
for case in range(200):
    c = torch.tensor(counts, dtype=torch.int64, device=device)
    assert_plain_equal(lfu_victim_t(c, s, e), oracle(counts, steps, flags), f"lfu_victim_t on random case {case}")
    assert c.cpu().tolist() == counts, f"lfu_victim_t changed its input on random case {case}"
assert_raises(ValueError, f"lfu_victim_t(mask of another length) on {device}", lfu_victim_t, a, b, m)
'''
VISIBLE_3_6 = '''
def _check_task3_6_lfu_victim_t():
    for device in available_devices():
        assert_plain_equal(lfu_victim_t(count, step, everyone), 1, f"lfu_victim_t(...) on {device}")
    assert_raises(ValueError, "lfu_victim_t(4 counts, 3 steps, 4 flags)", lfu_victim_t, a, b, c)
'''
TEXT_3_6 = ("Write `lfu_victim_t(use_count, last_access_step, evictable) -> int`: ... `ValueError` when the three "
            "tensors are not 1-D of the same length. The tensors may be on any device.")
CHINESE_3_6 = "三个张量不是等长的一维张量时抛出 `ValueError`。张量可以在任意设备上。"


def test_the_checker_finds_the_gap_of_3_6():
    task = rules.TaskRules("3.6", TEXT_3_6, CHINESE_3_6, rules.rules_in(HIDDEN_3_6),
                           rules.rules_in(VISIBLE_3_6, hidden=False))
    assert "inputs unchanged" in task.hidden and "ValueError" in task.hidden
    assert task.gaps() == ["3.6 inputs unchanged: not in its English text, Chinese text, visible test"]
    task.english += " Do not change the tensors."
    task.chinese += "不要修改这三个张量。"
    task.visible.add("inputs unchanged")
    assert task.gaps() == []


@pytest.mark.parametrize(("code", "expected"), [
    ("try:\n    f(1)\nexcept ValueError:\n    pass\nelse:\n    raise AssertionError('f(1) raised nothing')",
     {"ValueError"}),
    ("for bad in ({'a': float('nan')}, {'a': float('inf')}):\n    pass", {"NaN", "infinity"}),
    ("def oracle(x):\n    return x.double().masked_fill(m, float('-inf'))", set()),
    ("assert_raises(TypeError, 'f(int values)', f, v.int())", {"TypeError"}),
    ("dtype = torch.int32 if case % 2 else torch.int64", {"dtype int32"}),
    ("x = torch.tensor([2**62, 2**63 - 1])", {"large integers"}),
    ("assert state(s) == before, f'touch changed the state before its RuntimeError on case {case}'",
     {"unchanged on error"}),
    ("assert_plain_equal(f([]), -1, 'f(empty tensors)')", {"empty input"}),
    ("# only the recency tie-break gets this right\nx = _tier.hit(block)", {"ties"}),
    ("assert_plain_equal(a, b, 'a change in block 2 changed an earlier hash')", set()),
])
def test_rules_are_read_from_code_messages_and_comments(code, expected):
    assert rules.rules_in(code) == expected


def test_a_visible_dtype_of_the_same_family_shows_the_rule():
    assert rules.shown("dtype int16", {"dtype int32"}) and rules.shown("dtype bfloat16", {"dtype float64"})
    assert not rules.shown("dtype int16", {"dtype float16"}) and not rules.shown("ties", {"empty input"})
