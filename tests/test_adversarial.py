"""Cheating attempts inside a solution cell earn nothing: each is run, with a wrong answer, through
the notebook's own test cells, judged outside the answer's process as grading judges them
(grading.authoring.harness.JudgedHarness: the answer in a kernel of its own, the test cells in the judge)."""

from __future__ import annotations

import pytest

from grading.authoring.harness import JudgedHarness
from grading.config import ROOT

ASSIGNMENT = "01_eviction_as_ranking"

RIGGED_STR = '''
class _Anything(str):
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    __hash__ = str.__hash__

def select_victim(values):
    return _Anything("whatever")
'''

RIGGED_INT = '''
class _Truthy:
    def __eq__(self, other):
        return True
    def __bool__(self):
        return True
    def __int__(self):
        return 0
    def __index__(self):
        return 0

def argmin_victim(values, evictable=None):
    return _Truthy()
'''

PATCHED_LIBRARIES = '''
import math, numpy.testing, torch.testing
numpy.testing.assert_allclose = lambda *args, **kwargs: None
numpy.testing.assert_array_equal = lambda *args, **kwargs: None
torch.testing.assert_close = lambda *args, **kwargs: None
math.isclose = lambda *args, **kwargs: True

def quotas(weights, total_blocks):
    return {tenant: 0.0 for tenant in weights}
'''

REDEFINED_HELPERS = '''
def assert_plain_equal(*args, **kwargs):
    pass

def check_type(*args, **kwargs):
    pass

def assert_raises(*args, **kwargs):
    pass

def quotas(weights, total_blocks):
    return {tenant: 0.0 for tenant in weights}
'''

TENSOR_SUBCLASS = '''
class _Agreeable(torch.Tensor):
    def __eq__(self, other):
        return torch.ones_like(self, dtype=torch.bool)

def quotas_tensor(weights, total_blocks):
    return torch.zeros(weights.shape, dtype=torch.float64, device=weights.device).as_subclass(_Agreeable)
'''


@pytest.fixture(scope="module")
def harness():
    with JudgedHarness(ROOT / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb") as judged:
        yield judged


@pytest.mark.parametrize("task, attempt", [
    ("task1_1_select_victim", RIGGED_STR),
    ("task1_6_argmin_victim", RIGGED_INT),
    ("task1_3_quotas", PATCHED_LIBRARIES),
    ("task1_3_quotas", REDEFINED_HELPERS),
    ("task1_8_quotas_tensor", TENSOR_SUBCLASS),
], ids=["rigged __eq__ str", "rigged __bool__/__eq__ object", "patched numpy/torch testing and math.isclose",
        "redefined test helpers", "tensor subclass with rigged __eq__"])
def test_cheating_attempt_fails(harness, task, attempt):
    passed, message = harness.grade(task, attempt)
    assert not passed, f"{task} passed with a cheating attempt"
    assert "AssertionError" in message
