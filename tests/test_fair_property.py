"""Notebook 04's tensor fair-quota victim agrees with its FairPolicy on thousands of random states.

The solutions live only in the source notebook, so both come from the namespace that
``NotebookHarness`` builds (setup and given cells, then every reference solution).
"""

from __future__ import annotations

import random

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grading.authoring.harness import NotebookHarness
from grading.config import ROOT

ASSIGNMENT = "04_fair_quota"
NAMES = ["ann", "bob", "cat", "dan", "eve", "zed"]


@pytest.fixture(scope="module")
def solutions():
    path = ROOT / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    if not path.exists():
        pytest.skip(f"{path} is not written yet")
    return NotebookHarness(path).base


def _tenant_of(seq_id: str) -> str:
    return seq_id.split("::", 1)[0] if "::" in seq_id else "default"


def _decide_both(ns, rows, weights, total_blocks, protected, device):
    """Return (FairPolicy's victim, the seq_id at fair_victim_t's index) for one state.

    Either is ValueError when it raised one: both must raise for the same states.

    ``rows`` are (seq_id, num_blocks, last_access_step); ``weights`` maps tenant to weight.
    """
    sequences = {seq_id: ns["make_sequence"](seq_id, blocks, step) for seq_id, blocks, step in rows}
    expected = _outcome(ns["FairPolicy"](dict(weights), total_blocks).select_victim, sequences, frozenset(protected))
    ids = sorted(sequences)
    tenants = sorted(set(weights) | {_tenant_of(s) for s in ids})
    index_of = {t: k for k, t in enumerate(tenants)}
    tensors = (
        torch.tensor([index_of[_tenant_of(s)] for s in ids], dtype=torch.int64, device=device),
        torch.tensor([sequences[s].num_blocks() for s in ids], dtype=torch.int64, device=device),
        torch.tensor([sequences[s].last_access_step for s in ids], dtype=torch.int64, device=device),
        torch.tensor([float(weights.get(t, 1.0)) for t in tenants], dtype=torch.float64, device=device),
        total_blocks,
        torch.tensor([s not in protected for s in ids], dtype=torch.bool, device=device),
    )
    index = _outcome(ns["fair_victim_t"], *tensors)
    if index is ValueError:
        return expected, index
    assert type(index) is int
    return expected, (None if index == -1 else ids[index])


def _outcome(function, *args):
    """``function(*args)``, or ValueError when it raises one (weights that sum to 0 with a sequence to evict)."""
    try:
        return function(*args)
    except ValueError:
        return ValueError


def _random_state(rng: random.Random):
    """A small random cache with many ties: few distinct sizes, steps and tenants."""
    names = rng.sample(NAMES, rng.randint(1, 4))
    rows = []
    for i in range(rng.randint(0, 16)):
        kind = rng.random()
        seq_id = f"r{i:02d}" if kind < 0.1 else f"{rng.choice(names)}::{i:02d}" + ("::x" if kind > 0.9 else "")
        rows.append((seq_id, rng.randint(0, 6), rng.randint(0, 5)))
    tenants = sorted({_tenant_of(s) for s, _, _ in rows} | {rng.choice(NAMES)})
    # Weights that are multiples of 0.25: their sums are exact in any order, so both versions
    # compute bit-identical quotas and exact ties stay ties.
    weights = {t: rng.choice([0.0, 0.25, 0.5, 1.0, 1.0, 2.0, 3.0]) for t in tenants if rng.random() < 0.6}
    protected = {s for s, _, _ in rows if rng.random() < 0.2}
    return rows, weights, rng.randint(1, 64), protected


def test_tensor_version_agrees_on_seeded_random_states(solutions):
    rng = random.Random(2024)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    checked = 0
    for case in range(3000):
        rows, weights, total_blocks, protected = _random_state(rng)
        for device in devices:
            expected, got = _decide_both(solutions, rows, weights, total_blocks, protected, device)
            assert got == expected, (
                f"case {case} on {device}: FairPolicy chose {expected!r}, fair_victim_t chose {got!r}; "
                f"rows={rows} weights={weights} total_blocks={total_blocks} protected={sorted(protected)}")
            checked += 1
    assert checked >= 3000


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(st.tuples(st.sampled_from(["a", "b", "c", "default"]), st.integers(0, 5), st.integers(0, 4)),
                  max_size=12),
    weights=st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from([0.0, 0.5, 1.0, 2.0, 4.0])),
    total_blocks=st.integers(1, 40),
    protect=st.lists(st.booleans(), min_size=12, max_size=12),
)
def test_tensor_version_agrees_on_hypothesis_states(solutions, rows, weights, total_blocks, protect):
    named = [(f"{tenant}::{i:02d}" if tenant != "default" else f"s{i:02d}", blocks, step)
             for i, (tenant, blocks, step) in enumerate(rows)]
    protected = {seq_id for (seq_id, _, _), flag in zip(named, protect) if flag}
    expected, got = _decide_both(solutions, named, weights, total_blocks, protected, "cpu")
    assert got == expected
