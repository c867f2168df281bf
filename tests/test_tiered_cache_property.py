"""Notebook 08's reference solutions against independent models, over the whole allowed input space (hypothesis).

The solutions live only in the notebook, so they come from the namespace that grading.authoring.harness.NotebookHarness
builds (the setup cells and every reference solution). Each test writes its own model in plain lists and dicts:
an LRU tier, ARC as Megiddo and Modha's Figure 4 states it, a bounded table of counts, and the two-tier cache of
the notebook's model section. A state machine interleaves accesses, whole requests and releases on a TwoTierCache
built from the notebook's LRUTier, ARCTier and AdmissionFilter, and compares every result, tier, counter, pin and
count with the model after every step.
"""

from __future__ import annotations

import math

import numpy
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from grading.config import ROOT

NOTEBOOK = ROOT / "source" / "08_tiered_cache" / "08_tiered_cache.ipynb"
BLOCKS = st.integers(0, 9)
INTEGER_DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]

pytestmark = pytest.mark.skipif(not NOTEBOOK.exists(), reason="notebook 08 is not in source/")


@pytest.fixture(scope="module")
def ns():
    from grading.authoring.harness import NotebookHarness

    return NotebookHarness(NOTEBOOK).base


class ModelARC:
    """ARC in plain lists (least recent first), step by step as the paper's Figure 4 states it."""

    def __init__(self, capacity: int) -> None:
        self.capacity, self.p = capacity, 0.0
        self.t1: list = []
        self.t2: list = []
        self.b1: list = []
        self.b2: list = []

    def __contains__(self, block) -> bool:
        return block in self.t1 or block in self.t2

    def hit(self, block) -> None:
        (self.t1 if block in self.t1 else self.t2).remove(block)
        self.t2.append(block)

    def _replace(self, in_b2: bool):
        if self.t1 and (len(self.t1) > self.p or (in_b2 and len(self.t1) == self.p)):
            self.b1.append(self.t1.pop(0))
            return self.b1[-1]
        self.b2.append(self.t2.pop(0))
        return self.b2[-1]

    def insert(self, block):
        c = self.capacity
        if block in self.b1 or block in self.b2:
            in_b2 = block in self.b2
            if in_b2:
                self.p = max(self.p - max(1.0, len(self.b1) / len(self.b2)), 0.0)
            else:
                self.p = min(self.p + max(1.0, len(self.b2) / len(self.b1)), float(c))
            victim = self._replace(in_b2)
            (self.b2 if in_b2 else self.b1).remove(block)
            self.t2.append(block)
            return victim
        victim = None
        total = len(self.t1) + len(self.t2) + len(self.b1) + len(self.b2)
        if len(self.t1) + len(self.b1) == c:
            if len(self.t1) < c:
                self.b1.pop(0)
                victim = self._replace(False)
            else:
                victim = self.t1.pop(0)
        elif total >= c:
            if total == 2 * c:
                self.b2.pop(0)
            victim = self._replace(False)
        self.t1.append(block)
        return victim

    def state(self):
        return self.t1, self.t2, self.b1, self.b2, self.p


def arc_state(arc):
    return list(arc.t1), list(arc.t2), list(arc.b1), list(arc.b2), arc.p


@settings(max_examples=200, deadline=None)
@given(capacity=st.integers(1, 8), trace=st.lists(st.integers(0, 20), max_size=120))
def test_arc_tier_equals_the_papers_arc_step_by_step(ns, capacity, trace):
    arc, model = ns["ARCTier"](capacity), ModelARC(capacity)
    for block in trace:
        assert (block in arc) == (block in model)
        if block in model:
            model.hit(block)
            arc.hit(block)
        else:
            assert arc.insert(block) == model.insert(block)
        assert arc_state(arc) == model.state() and type(arc.p) is float
        assert len(arc) <= capacity and len(arc.t1) + len(arc.b1) <= capacity
        assert len(arc.t1) + len(arc.t2) + len(arc.b1) + len(arc.b2) <= 2 * capacity


@settings(max_examples=200, deadline=None)
@given(capacity=st.integers(1, 6),
       steps=st.lists(st.tuples(BLOCKS, st.sets(BLOCKS), st.sampled_from("hi")), max_size=60))
def test_lru_tier_equals_a_list_with_pins(ns, capacity, steps):
    tier, order = ns["LRUTier"](capacity), []
    for block, pinned, kind in steps:
        if kind == "h":
            if block in order:
                order.remove(block)
                order.append(block)
                tier.hit(block)
            else:
                with pytest.raises(KeyError):
                    tier.hit(block)
        elif block in order:
            with pytest.raises(ValueError):
                tier.insert(block, pinned)
        else:
            free = [resident for resident in order if resident not in pinned]
            if len(order) >= capacity and not free:
                with pytest.raises(RuntimeError):
                    tier.insert(block, pinned)
            else:
                victim = free[0] if len(order) >= capacity else None
                assert tier.insert(block, dict.fromkeys(pinned, 1)) == victim
                order = [resident for resident in order if resident != victim] + [block]
        assert list(tier.blocks) == order


@settings(max_examples=200, deadline=None)
@given(threshold=st.integers(1, 4), entries=st.integers(1, 6),
       steps=st.lists(st.tuples(BLOCKS, st.booleans()), max_size=60))
def test_admission_filter_equals_a_bounded_list_of_counts(ns, threshold, entries, steps):
    table, rows = ns["AdmissionFilter"](threshold, entries), []
    for block, record in steps:
        row = next((r for r in rows if r[0] == block), None)
        if record:
            if row is None:
                rows = rows[1:] if len(rows) >= entries else rows
                row = [block, 0]
            else:
                rows.remove(row)
            row[1] += 1
            rows.append(row)
            table.record(block)
        count = row[1] if row is not None else 0
        assert (table.count(block), table.admits(block)) == (count, count >= threshold)
        assert list(table.counts.items()) == [tuple(r) for r in rows]


@settings(max_examples=150, deadline=None)
@given(dtype=st.sampled_from(INTEGER_DTYPES), data=st.data())
def test_seen_counts_equal_an_unbounded_filter_at_every_reference(ns, dtype, data):
    info = torch.iinfo(dtype)
    pool = data.draw(st.lists(st.integers(info.min, info.max), min_size=1, max_size=8))
    ids = data.draw(st.lists(st.sampled_from(pool), max_size=300))
    blocks = torch.tensor(ids, dtype=dtype)
    before = blocks.clone()
    counts = ns["seen_counts_t"](blocks)
    table = ns["AdmissionFilter"](1, len(pool))
    expected = []
    for block in ids:
        table.record(block)
        expected.append(table.count(block))
    assert counts.dtype == torch.int64 and counts.tolist() == expected and torch.equal(blocks, before)


@settings(max_examples=100, deadline=None)
@given(bad=st.one_of(st.lists(st.integers(0, 3)), st.builds(torch.tensor, st.lists(st.floats(0, 3), max_size=4)),
                     st.builds(torch.zeros, st.integers(0, 3), st.integers(0, 3)),
                     st.builds(lambda n: torch.zeros(n, dtype=torch.bool), st.integers(0, 3)),
                     st.builds(lambda n: torch.tensor(n), st.integers(0, 3))))
def test_seen_counts_refuse_every_other_input(ns, bad):
    with pytest.raises(ValueError):
        ns["seen_counts_t"](bad)


NUMBERS = st.one_of(st.integers(1, 10**12), st.floats(1e-12, 1e12))
NOT_NUMBERS = st.one_of(st.booleans(), st.none(), st.text(max_size=3), st.builds(numpy.int64, st.integers(1, 99)),
                        st.builds(numpy.float32, st.floats(1, 99)), st.fractions(min_value=1, max_value=9))


@settings(max_examples=150, deadline=None)
@given(arguments=st.tuples(NUMBERS, NUMBERS, NUMBERS), bad=st.one_of(NOT_NUMBERS, st.sampled_from(
    [0, -1, 0.0, -2.5, math.inf, math.nan])), position=st.integers(0, 2), dtype=st.sampled_from(INTEGER_DTYPES),
       data=st.data())
def test_cost_model_and_its_ttft(ns, arguments, bad, position, dtype, data):
    model = ns["CostModel"](*arguments)
    b, bandwidth, prefill = map(float, arguments)
    assert (model.load_seconds_per_token, model.break_even_bandwidth, model.offload_pays) == (
        b / bandwidth, b / prefill, b / bandwidth < prefill)
    count = st.integers(0, torch.iinfo(dtype).max)
    counts = data.draw(st.lists(st.tuples(count, count), max_size=20))
    recomputed = torch.tensor([r for r, _ in counts], dtype=dtype)
    loaded = torch.tensor([load for _, load in counts], dtype=dtype)
    expected = [r * model.prefill_seconds_per_token + load * model.load_seconds_per_token for r, load in counts]
    result = model.ttft(recomputed, loaded)
    assert result.dtype == torch.float64 and result.tolist() == pytest.approx(expected, rel=1e-12)
    error = TypeError if type(bad) not in (int, float) or isinstance(bad, bool) else ValueError
    with pytest.raises(error):
        ns["CostModel"](*arguments[:position], bad, *arguments[position + 1:])
    with pytest.raises(ValueError):
        model.ttft(recomputed, loaded.reshape(1, -1))


def two_tier_machine(ns, write_policy: str, tier2_kind: str, threshold: int | None):
    """A state machine that drives the notebook's TwoTierCache and a model of it through the same steps."""
    capacities = (3, 4)

    class TwoTierMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            tier2 = ns["LRUTier"](capacities[1]) if tier2_kind == "lru" else ns["ARCTier"](capacities[1])
            admission = None if threshold is None else ns["AdmissionFilter"](threshold, 6)
            self.cache = ns["TwoTierCache"](ns["LRUTier"](capacities[0]), tier2, 64, write_policy, admission)
            self.t1: list = []
            self.t2 = [] if tier2_kind == "lru" else ModelARC(capacities[1])
            self.table: list = []  # [block, count], least recently recorded first
            self.pins: dict = {}
            self.counters = {"device": 0, "host": 0, "miss": 0, "to_host": 0}

        def _admitted(self, block) -> bool:
            return threshold is None or next((c for b, c in self.table if b == block), 0) >= threshold

        def _record(self, block) -> None:
            row = next((r for r in self.table if r[0] == block), None)
            if row is None:
                self.table = self.table[1:] if len(self.table) >= 6 else self.table
                row = [block, 0]
            else:
                self.table.remove(row)
            row[1] += 1
            self.table.append(row)

        def _to_host(self, block) -> None:
            if tier2_kind == "lru":
                self.t2 = (self.t2[1:] if len(self.t2) >= capacities[1] else self.t2) + [block]
            else:
                self.t2.insert(block)
            self.counters["to_host"] += 1

        def _in_t2(self, block) -> bool:
            return block in self.t2

        def model_access(self, block) -> str | None:
            """The model's access; None when tier 1 has no slot for the block (the cache must raise)."""
            if block not in self.t1 and len(self.t1) >= capacities[0] and all(b in self.pins for b in self.t1):
                return None
            if threshold is not None:
                self._record(block)
            if block in self.t1:
                self.t1.remove(block)
                self.t1.append(block)
                where = "device"
            else:
                where = "host" if self._in_t2(block) else "miss"
                if where == "host":
                    if tier2_kind == "lru":
                        self.t2.remove(block)
                        self.t2.append(block)
                    else:
                        self.t2.hit(block)
                if len(self.t1) >= capacities[0]:
                    victim = next(b for b in self.t1 if b not in self.pins)
                    self.t1.remove(victim)
                    if write_policy == "write_back" and not self._in_t2(victim) and self._admitted(victim):
                        self._to_host(victim)
                self.t1.append(block)
            if write_policy == "write_through" and not self._in_t2(block) and self._admitted(block):
                self._to_host(block)
            self.pins[block] = self.pins.get(block, 0) + 1
            self.counters[where] += 1
            return where

        @rule(block=BLOCKS)
        def access(self, block):
            where = self.model_access(block)
            if where is None:
                with pytest.raises(RuntimeError):
                    self.cache.access(block)
            else:
                assert self.cache.access(block) == where

        @rule(blocks=st.lists(BLOCKS, max_size=5))
        def serve_request(self, blocks):
            pins, found = dict(self.pins), []
            for block in blocks:
                found.append(self.model_access(block))
                if found[-1] is None:
                    break
            if found and found[-1] is None:
                with pytest.raises(RuntimeError):
                    self.cache.serve_request(blocks)
            else:
                assert self.cache.serve_request(blocks) == tuple(found.count(w) for w in ("device", "host", "miss"))
            self.pins = pins

        @precondition(lambda self: self.pins)
        @rule(data=st.data())
        def release(self, data):
            block = data.draw(st.sampled_from(sorted(self.pins)))
            self.cache.release(block)
            self.pins[block] -= 1
            if not self.pins[block]:
                del self.pins[block]

        @rule(block=BLOCKS)
        def release_unpinned(self, block):
            if block not in self.pins:
                with pytest.raises(ValueError):
                    self.cache.release(block)

        @invariant()
        def same_state(self):
            cache = self.cache
            assert list(cache.tier1.blocks) == self.t1 and cache.ref_count == self.pins
            if tier2_kind == "lru":
                assert list(cache.tier2.blocks) == self.t2
            else:
                assert arc_state(cache.tier2) == self.t2.state()
            if threshold is not None:
                assert list(cache.admission.counts.items()) == [tuple(row) for row in self.table]
            assert (cache.device_hits, cache.host_hits, cache.misses, cache.blocks_to_host, cache.blocks_to_device) == (
                self.counters["device"], self.counters["host"], self.counters["miss"], self.counters["to_host"],
                self.counters["host"])
            assert (cache.bytes_to_host, cache.bytes_to_device) == (64 * cache.blocks_to_host,
                                                                    64 * cache.blocks_to_device)

    return TwoTierMachine


@pytest.mark.parametrize("write_policy", ["write_back", "write_through"])
@pytest.mark.parametrize("tier2_kind", ["lru", "arc"])
@pytest.mark.parametrize("threshold", [None, 2])
def test_two_tier_cache_equals_its_model_under_any_interleaving(ns, write_policy, tier2_kind, threshold):
    machine = two_tier_machine(ns, write_policy, tier2_kind, threshold)
    run_state_machine_as_test(machine, settings=settings(max_examples=25, stateful_step_count=30, deadline=None))
