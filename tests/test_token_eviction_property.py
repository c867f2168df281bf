"""Notebook 07's reference solutions against independent oracles, over the whole allowed input space (hypothesis).

The solutions live only in the notebook, so they come from the namespace that grading.authoring.harness.NotebookHarness
builds (the setup cells and every reference solution). The oracles here are written in plain Python and float64
(or exact fractions): every floating dtype, leading dimensions of any size (0 included), sizes from 0 up, values
that tie exactly, huge integers, and the inputs each text refuses.
"""

from __future__ import annotations

from fractions import Fraction

import numpy
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grading.config import ROOT

NOTEBOOK = ROOT / "source" / "07_token_eviction" / "07_token_eviction.ipynb"
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
TOLERANCE = {torch.float16: 1e-2, torch.bfloat16: 5e-2, torch.float32: 1e-5, torch.float64: 1e-12}
LEADING = st.lists(st.integers(0, 3), max_size=2)
NOT_INTS = st.one_of(st.booleans(), st.none(), st.floats(0, 9), st.text(max_size=2),
                     st.builds(numpy.int64, st.integers(0, 9)), st.builds(torch.tensor, st.integers(0, 9)))

pytestmark = pytest.mark.skipif(not NOTEBOOK.exists(), reason="notebook 07 is not in source/")


@pytest.fixture(scope="module")
def ns():
    from grading.authoring.harness import NotebookHarness

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield NotebookHarness(NOTEBOOK).base
    torch.set_num_threads(threads)


def dyadic(generator, shape, dtype):
    """Multiples of 1/4 in [0, 1): sums of a few of them are exact in every floating dtype, so ties are real."""
    return torch.randint(0, 4, shape, generator=generator).to(dtype) / 4


def top_k(scores, k):
    """The k positions of the highest scores, ties to the earlier position, in increasing order."""
    return sorted(sorted(range(len(scores)), key=lambda j: (-scores[j], j))[:k])


@settings(max_examples=150, deadline=None)
@given(lead=LEADING, queries=st.integers(0, 4), tokens=st.integers(1, 12), head_dim=st.integers(1, 8),
       dtype=st.sampled_from(FLOATS), seed=st.integers(0, 2**31), density=st.floats(0, 1))
def test_attend_kept_equals_softmax_over_the_kept_positions(ns, lead, queries, tokens, head_dim, dtype, seed, density):
    generator = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(*lead, rows, head_dim, generator=generator).to(dtype)
               for rows in (queries, tokens, tokens))
    keep = torch.rand(*lead, tokens, generator=generator) < density
    keep[..., seed % tokens] = True
    arguments = [tensor.clone() for tensor in (q, k, v, keep)]
    output, probabilities = ns["attend_kept"](q, k, v, keep)
    scores = q.double() @ k.double().transpose(-1, -2) / head_dim ** 0.5
    scores = scores.masked_fill(~keep.unsqueeze(-2), float("-inf"))
    expected = torch.softmax(scores, dim=-1)
    assert (output.dtype, probabilities.dtype) == (dtype, dtype)
    assert (output.shape, probabilities.shape) == ((*lead, queries, head_dim), (*lead, queries, tokens))
    assert torch.allclose(probabilities.double(), expected, atol=TOLERANCE[dtype], rtol=TOLERANCE[dtype])
    assert torch.allclose(output.double(), expected @ v.double(), atol=TOLERANCE[dtype], rtol=TOLERANCE[dtype])
    assert bool((probabilities.masked_select(~keep.unsqueeze(-2).expand_as(probabilities)) == 0).all())
    assert all(torch.equal(before, after) for before, after in zip(arguments, (q, k, v, keep)))


@settings(max_examples=100, deadline=None)
@given(change=st.sampled_from(["lead 1", "keep [T]", "values head_dim", "dtype", "keys 1-D", "empty row"]),
       dtype=st.sampled_from(FLOATS))
def test_attend_kept_refuses_shapes_that_would_broadcast_and_mixed_dtypes(ns, change, dtype):
    q, k, v = torch.zeros(3, 2, 4, dtype=dtype), torch.zeros(3, 5, 4, dtype=dtype), torch.zeros(3, 5, 4, dtype=dtype)
    keep = torch.ones(3, 5, dtype=torch.bool)
    if change == "lead 1":
        q = q[:1]
    elif change == "keep [T]":
        keep = keep[0]
    elif change == "values head_dim":
        v = torch.zeros(3, 5, 2, dtype=dtype)
    elif change == "dtype":
        k = k.to(torch.float64 if dtype != torch.float64 else torch.float32)
    elif change == "keys 1-D":
        q, k, v = torch.zeros(2, 5, dtype=dtype), torch.zeros(5, dtype=dtype), torch.zeros(5, dtype=dtype)
        keep = keep[0, 0]
    else:
        keep[1] = False
    with pytest.raises(ValueError):
        ns["attend_kept"](q, k, v, keep)


@settings(max_examples=300, deadline=None)
@given(num_tokens=st.integers(0, 80), budget=st.integers(0, 90), num_sinks=st.integers(0, 20))
def test_streaming_keep_equals_sinks_plus_window(ns, num_tokens, budget, num_sinks):
    sinks = min(num_sinks, budget)
    expected = [budget >= num_tokens or j < sinks or j >= num_tokens - (budget - sinks) for j in range(num_tokens)]
    keep = ns["streaming_keep"](num_tokens, budget, num_sinks)
    assert keep.dtype == torch.bool and keep.tolist() == expected
    assert int(keep.sum()) == min(budget, num_tokens)


@settings(max_examples=200, deadline=None)
@given(good=st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30)), bad=NOT_INTS | st.integers(-9, -1),
       position=st.integers(0, 2))
def test_streaming_keep_checks_every_argument_on_every_path(ns, good, bad, position):
    arguments = good[:position] + (bad,) + good[position + 1:]
    with pytest.raises(TypeError if type(bad) is not int else ValueError):
        ns["streaming_keep"](*arguments)


@settings(max_examples=200, deadline=None)
@given(lead=LEADING, queries=st.integers(0, 4), tokens=st.integers(0, 20), dtype=st.sampled_from(FLOATS),
       seed=st.integers(0, 2**31), data=st.data())
def test_h2o_keep_keeps_the_window_and_the_heavy_hitters(ns, lead, queries, tokens, dtype, seed, data):
    attention = dyadic(torch.Generator().manual_seed(seed), (*lead, queries, tokens), dtype)
    budget = data.draw(st.integers(0, tokens + 3))
    recent = data.draw(st.integers(0, budget))
    before = attention.clone()
    keep = ns["h2o_keep"](attention, budget, recent)
    assert keep.dtype == torch.bool and keep.shape == (*lead, tokens) and torch.equal(attention, before)
    if budget >= tokens:
        assert bool(keep.all())
        return
    scores = attention.double().sum(dim=-2).reshape(-1, tokens).tolist()
    older = tokens - recent
    rows = [[j in top_k(row[:older], budget - recent) or j >= older for j in range(tokens)] for row in scores]
    assert keep.reshape(-1, tokens).tolist() == rows


@settings(max_examples=200, deadline=None)
@given(lead=LEADING, tokens=st.integers(1, 16), dtype=st.sampled_from(FLOATS), kernel=st.sampled_from([1, 3, 5, 7, 33]),
       seed=st.integers(0, 2**31), data=st.data())
def test_snapkv_keep_keeps_the_window_and_the_pooled_top(ns, lead, tokens, dtype, kernel, seed, data):
    causal = torch.ones(tokens, tokens, dtype=torch.bool).tril()
    attention = dyadic(torch.Generator().manual_seed(seed), (*lead, tokens, tokens), dtype) * causal
    window = data.draw(st.integers(1, tokens))
    budget = data.draw(st.integers(window, tokens + 3))
    before = attention.clone()
    keep = ns["snapkv_keep"](attention, budget, window, kernel)
    assert keep.dtype == torch.bool and keep.shape == (*lead, tokens) and torch.equal(attention, before)
    if budget >= tokens:
        assert bool(keep.all())
        return
    prefix, half = tokens - window, kernel // 2
    votes = attention.double()[..., prefix:, :prefix].sum(dim=-2).reshape(-1, prefix).tolist()
    for kept, row in zip(keep.reshape(-1, tokens).tolist(), votes):
        # The votes are exact and a mean rounds monotonically: a position is never kept over one with a larger exact
        # mean, except an earlier one whose mean rounds to the same float16 or bfloat16 value (within `slack`).
        pooled = [sum(map(Fraction, row[max(0, j - half):j + half + 1])) / len(row[max(0, j - half):j + half + 1])
                  for j in range(prefix)]
        slack = {torch.float16: Fraction(1, 2**9), torch.bfloat16: Fraction(1, 2**6)}.get(dtype, 0) * max(1, *pooled)
        chosen = [j for j in range(prefix) if kept[j]]
        assert all(kept[prefix:]) and len(chosen) == budget - window
        assert all(pooled[i] > pooled[j] or (i < j and pooled[j] - pooled[i] <= slack)
                   for i in chosen for j in range(prefix) if not kept[j])


@settings(max_examples=300, deadline=None)
@given(total=st.integers(0, 10**40), num_layers=st.integers(1, 40), beta=st.integers(1, 10**6))
def test_pyramid_budgets_are_the_exact_floors_and_sum_to_the_total(ns, total, num_layers, beta):
    budgets = ns["pyramid_budgets"](total, num_layers, beta)
    assert type(budgets) is list and all(type(b) is int for b in budgets) and sum(budgets) == total
    if num_layers == 1:
        assert budgets == [total]
        return
    average = Fraction(total, num_layers)
    top = average / beta
    exact = [2 * average - top - (2 * average - 2 * top) * layer / (num_layers - 1) for layer in range(num_layers)]
    floors = [e.numerator // e.denominator for e in exact]
    left = total - sum(floors)
    assert budgets == [f + (layer < left) for layer, f in enumerate(floors)]
    assert budgets == sorted(budgets, reverse=True)


@settings(max_examples=200, deadline=None)
@given(good=st.tuples(st.integers(0, 10**6), st.integers(1, 9), st.integers(1, 30)), position=st.integers(0, 2),
       bad=NOT_INTS | st.integers(-9, 0))
def test_pyramid_budgets_check_every_argument_with_any_number_of_layers(ns, good, position, bad):
    if type(bad) is int and position == 0 and bad == 0:
        return  # a total of 0 is allowed
    arguments = good[:position] + (bad,) + good[position + 1:]
    with pytest.raises(TypeError if type(bad) is not int else ValueError):
        ns["pyramid_budgets"](*arguments)


@settings(max_examples=12, deadline=None)
@given(layers=st.integers(1, 2), heads=st.integers(1, 2), batch=st.integers(1, 2), length=st.integers(1, 8),
       budget=st.integers(1, 9), heavy=st.booleans(), dtype=st.sampled_from([torch.int64, torch.int32, torch.uint8]),
       seed=st.integers(0, 2**20))
def test_decode_with_eviction_equals_a_replay_of_its_masks(ns, layers, heads, batch, length, budget, heavy, dtype,
                                                           seed):
    from course.model import TinyDecoder, prune_cache

    model = TinyDecoder(vocab_size=11, num_layers=layers, num_heads=heads, head_dim=2, seed=seed, positions="rotary")
    tokens = torch.randint(0, 11, (batch, length), generator=torch.Generator().manual_seed(seed))

    def keep_fn(scores, budget):
        """Heavy hitters by score plus the newest slot, or the most recent slots."""
        if not heavy:
            return (torch.arange(scores.shape[-1]) >= scores.shape[-1] - budget).expand(scores.shape)
        keep = torch.zeros_like(scores, dtype=torch.bool)
        keep[..., -1] = True
        order = torch.sort(scores[..., :-1], dim=-1, descending=True, stable=True).indices[..., :budget - 1]
        return keep.scatter(-1, order, True) if budget > 1 else keep

    logits, kv = ns["decode_with_eviction"](model, tokens.to(dtype), budget, keep_fn)
    past, scores, expected = None, None, []
    for step in range(length):
        step_logits, past, attention = model(tokens[:, step:step + 1], past_kv=past, position=step,
                                             return_attention=True)
        expected.append(step_logits)
        rows = [a[:, :, 0, :] for a in attention]
        scores = rows if scores is None else [torch.cat((s, torch.zeros_like(s[..., :1])), -1) + r
                                              for s, r in zip(scores, rows)]
        if past[0][0].shape[1] > budget:
            keeps = [keep_fn(s, budget) for s in scores]
            past = prune_cache(past, keeps)
            scores = [s[m].reshape(*s.shape[:-1], budget) for s, m in zip(scores, keeps)]
    assert torch.allclose(logits, torch.cat(expected, dim=1), atol=1e-5)
    assert all(torch.allclose(got, want, atol=1e-6) for got_pair, want_pair in zip(kv, past)
               for got, want in zip(got_pair, want_pair))
