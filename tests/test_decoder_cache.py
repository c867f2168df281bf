"""Tests of the decoder of notebook 07 (course.model): attention probabilities, batching, pruned (evicted)
caches, rotary positions and its checks of bad input. tests/test_recall_model.py tests the recall task, the
shipped trained decoder and its weights file."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course.env import available_devices
from course.model import TinyDecoder, prune_cache, rotate

TOLERANCE = 1e-5


def rotary_model(seed: int = 0, vocab_size: int = 40) -> TinyDecoder:
    return TinyDecoder(vocab_size=vocab_size, num_layers=2, num_heads=2, head_dim=8, seed=seed, positions="rotary")


def random_tokens(count: int, vocab_size: int = 40, seed: int = 0, batch: int | None = None) -> torch.Tensor:
    shape = (count,) if batch is None else (batch, count)
    return torch.randint(0, vocab_size, shape, generator=torch.Generator().manual_seed(seed))


def prune(kv, keep):
    """Per layer, keep the slots whose keep[layer] [num_heads, num_tokens] is True (same count per head).

    Written with gather, independently of course.model.prune_cache, which it checks."""
    pruned = []
    for (k, v), layer_keep in zip(kv, keep):
        heads, num_tokens = layer_keep.shape
        count = int(layer_keep[0].sum())
        slots = torch.where(layer_keep, torch.arange(num_tokens), num_tokens).sort(dim=-1).values[:, :count]
        index = slots.T[..., None].expand(count, heads, k.shape[-1])
        pruned.append((k.gather(0, index), v.gather(0, index)))
    return pruned


# ------------------------------------------------------------------------------------------------
# Attention probabilities.
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("positions", ["sinusoidal", "rotary"])
def test_attention_probabilities_are_causal_and_sum_to_one(positions):
    model = TinyDecoder(vocab_size=40, num_layers=3, num_heads=2, head_dim=8, seed=1, positions=positions)
    tokens = random_tokens(9)
    logits, kv, attention = model(tokens[:5], return_attention=True)
    assert type(attention) is list and len(attention) == 3
    for layer in attention:
        assert layer.shape == (2, 5, 5) and layer.dtype == torch.float32
        torch.testing.assert_close(layer.sum(-1), torch.ones(2, 5))
        assert (layer >= 0).all() and torch.equal(layer.triu(1), torch.zeros_like(layer))
    plain_logits, plain_kv = model(tokens[:5])
    assert torch.equal(plain_logits, logits)
    more_logits, _, more_attention = model(tokens[5:], past_kv=kv, return_attention=True)
    full_logits, _, full_attention = model(tokens, return_attention=True)
    torch.testing.assert_close(more_logits, full_logits[5:], atol=TOLERANCE, rtol=TOLERANCE)
    for part, whole in zip(more_attention, full_attention):
        assert part.shape == (2, 4, 9)
        torch.testing.assert_close(part, whole[:, 5:], atol=TOLERANCE, rtol=TOLERANCE)


def test_batched_forward_equals_one_sequence_at_a_time():
    model = rotary_model(2)
    tokens = random_tokens(7, batch=3, seed=4)
    logits, kv, attention = model(tokens, return_attention=True)
    assert logits.shape == (3, 7, 40) and kv[0][0].shape == (3, 7, 2, 8) and attention[1].shape == (3, 2, 7, 7)
    more, _ = model(tokens[:, :2], past_kv=kv)
    for row in range(3):
        row_logits, row_kv, row_attention = model(tokens[row], return_attention=True)
        torch.testing.assert_close(logits[row], row_logits, atol=TOLERANCE, rtol=TOLERANCE)
        torch.testing.assert_close(attention[0][row], row_attention[0], atol=TOLERANCE, rtol=TOLERANCE)
        row_more, _ = model(tokens[row, :2], past_kv=row_kv)
        torch.testing.assert_close(more[row], row_more, atol=TOLERANCE, rtol=TOLERANCE)


# ------------------------------------------------------------------------------------------------
# Pruned caches.
# ------------------------------------------------------------------------------------------------

def test_a_pruned_cache_that_keeps_everything_equals_the_full_cache_exactly():
    model = rotary_model(3)
    tokens = random_tokens(12, seed=2)
    _, kv = model(tokens[:9])
    keep = [torch.ones(2, 9, dtype=torch.bool)] * 2
    expected = model(tokens[9:], past_kv=kv, return_attention=True)
    got = model(tokens[9:], past_kv=prune(kv, keep), position=9, return_attention=True)
    assert torch.equal(got[0], expected[0])
    assert all(torch.equal(a, b) for a, b in zip(got[2], expected[2]))


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_a_pruned_cache_is_attention_restricted_to_the_kept_slots(data):
    """Layer 0's queries do not depend on the cache, so with a pruned cache its attention over the
    kept slots must be the full cache's attention renormalized over them (per head)."""
    num_tokens = data.draw(st.integers(2, 14))
    budget = data.draw(st.integers(1, num_tokens))
    model = rotary_model(data.draw(st.integers(0, 3)))
    tokens = random_tokens(num_tokens + 2, seed=num_tokens)
    _, kv = model(tokens[:num_tokens])
    _, _, full = model(tokens[num_tokens:], past_kv=kv, return_attention=True)
    generator = torch.Generator().manual_seed(data.draw(st.integers(0, 1000)))
    keep = [torch.rand(2, num_tokens, generator=generator).argsort(-1).argsort(-1) < budget for _ in range(2)]
    _, pruned_kv, pruned = model(tokens[num_tokens:], past_kv=prune(kv, keep), position=num_tokens,
                                 return_attention=True)
    assert pruned_kv[0][0].shape == (budget + 2, 2, 8)
    for head in range(2):
        kept = torch.cat((torch.where(keep[0][head])[0], torch.tensor([num_tokens, num_tokens + 1])))
        expected = full[0][head][:, kept]
        expected = expected / expected.sum(-1, keepdim=True)
        torch.testing.assert_close(pruned[0][head], expected, atol=TOLERANCE, rtol=TOLERANCE)


def test_layers_may_keep_different_numbers_of_tokens():
    model = rotary_model(1)
    tokens = random_tokens(10, seed=3)
    _, kv = model(tokens[:8])
    pruned = [(kv[0][0][[0, 5, 7]], kv[0][1][[0, 5, 7]]), (kv[1][0][[7]], kv[1][1][[7]])]
    logits, new_kv, attention = model(tokens[8:], past_kv=pruned, position=8, return_attention=True)
    assert logits.shape == (2, 40)
    assert [k.shape[0] for k, _ in new_kv] == [5, 3]
    assert [a.shape for a in attention] == [(2, 2, 5), (2, 2, 3)]
    with pytest.raises(ValueError, match="position="):
        model(tokens[8:], past_kv=pruned)


def test_the_new_tokens_position_matters_after_an_eviction():
    model = rotary_model(0)
    tokens = random_tokens(10, seed=6)
    full_logits, kv = model(tokens)
    kept = [(k[:6], v[:6]) for k, v in kv[:]]
    right, _ = model(tokens[:1], past_kv=kept, position=10)
    wrong, _ = model(tokens[:1], past_kv=kept)  # position 6: as if nothing had been evicted
    assert (right - wrong).abs().max() > 1e-3


def test_rotary_one_call_equals_token_by_token_decoding():
    model = rotary_model(4)
    tokens = random_tokens(16, seed=9)
    logits, _ = model(tokens)
    kv = None
    for position in range(16):
        step, kv = model(tokens[position:position + 1], past_kv=kv)
        torch.testing.assert_close(step[0], logits[position], atol=TOLERANCE, rtol=TOLERANCE)


def test_rotate_depends_on_relative_position_only():
    generator = torch.Generator().manual_seed(0)
    query, key = torch.randn(1, 3, 8, generator=generator), torch.randn(1, 3, 8, generator=generator)
    first = (rotate(query, torch.tensor([7])) * rotate(key, torch.tensor([3]))).sum(-1)
    second = (rotate(query, torch.tensor([24])) * rotate(key, torch.tensor([20]))).sum(-1)
    torch.testing.assert_close(first, second, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rotate(query, torch.tensor([0])), query)
    torch.testing.assert_close(rotate(query, torch.tensor([5])).norm(dim=-1), query.norm(dim=-1))


@pytest.mark.parametrize("device", available_devices(), ids=str)
def test_pruned_cache_on_every_device(device):
    model = rotary_model(2).to(device)
    tokens = random_tokens(8, seed=1).to(device)
    _, kv = model(tokens[:6])
    pruned = [(k[[0, 4, 5]], v[[0, 4, 5]]) for k, v in kv]
    logits, _, attention = model(tokens[6:], past_kv=pruned, position=6, return_attention=True)
    assert logits.device.type == device.type and attention[0].device.type == device.type
    cpu = rotary_model(2)
    _, cpu_kv = cpu(tokens[:6].cpu())
    cpu_logits, _ = cpu(tokens[6:].cpu(), past_kv=[(k[[0, 4, 5]], v[[0, 4, 5]]) for k, v in cpu_kv], position=6)
    torch.testing.assert_close(logits.cpu(), cpu_logits, atol=1e-4, rtol=1e-4)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_prune_cache_keeps_the_marked_slots_in_order(data):
    num_tokens = data.draw(st.integers(1, 12))
    budgets = [data.draw(st.integers(0, num_tokens)) for _ in range(2)]
    model = rotary_model(1)
    _, kv = model(random_tokens(num_tokens, seed=num_tokens))
    generator = torch.Generator().manual_seed(data.draw(st.integers(0, 1000)))
    keep = [torch.rand(2, num_tokens, generator=generator).argsort(-1).argsort(-1) < b for b in budgets]
    pruned = prune_cache(kv, keep)
    for (k, v), (k_ref, v_ref), budget in zip(pruned, prune(kv, keep), budgets):
        assert k.shape == v.shape == (budget, 2, 8)
        assert torch.equal(k, k_ref) and torch.equal(v, v_ref)
    shared = [torch.rand(num_tokens, generator=generator) < 0.5 for _ in range(2)]
    for (k, v), (k_ref, v_ref) in zip(prune_cache(kv, shared), prune(kv, [m.expand(2, -1) for m in shared])):
        assert torch.equal(k, k_ref) and torch.equal(v, v_ref)


def test_prune_cache_of_a_batch_and_of_everything():
    model = rotary_model(2)
    tokens = random_tokens(6, batch=3, seed=2)
    _, kv = model(tokens)
    keep = torch.zeros(3, 2, 6, dtype=torch.bool)
    keep[0, :, [0, 5]] = True
    keep[1, 0, [1, 2]] = True
    keep[1, 1, [3, 4]] = True
    keep[2, :, [4, 5]] = True
    pruned = prune_cache(kv, [keep, keep])
    assert pruned[0][0].shape == (3, 2, 2, 8)
    for row in range(3):
        row_kv = [(k[row], v[row]) for k, v in kv]
        for (k, v), (k_ref, v_ref) in zip(pruned, prune(row_kv, [keep[row], keep[row]])):
            assert torch.equal(k[row], k_ref) and torch.equal(v[row], v_ref)
    everything = prune_cache(kv, [torch.ones(6, dtype=torch.bool)] * 2)
    assert all(torch.equal(a, b) for (a, _), (b, _) in zip(everything, kv))
    assert everything[0][0] is not kv[0][0]


def test_prune_cache_rejects_bad_masks():
    model = rotary_model()
    _, kv = model(random_tokens(5))
    ones = torch.ones(2, 5, dtype=torch.bool)
    with pytest.raises(ValueError, match="2 layers but keep has 1"):
        prune_cache(kv, [ones])
    with pytest.raises(TypeError, match="bool"):
        prune_cache(kv, [ones, ones.int()])
    with pytest.raises(TypeError, match="lists"):
        prune_cache(kv, ones)
    with pytest.raises(ValueError, match="shape"):
        prune_cache(kv, [ones, torch.ones(2, 4, dtype=torch.bool)])
    uneven = ones.clone()
    uneven[0, 0] = False
    with pytest.raises(ValueError, match="same number of tokens"):
        prune_cache(kv, [ones, uneven])
    with pytest.raises(TypeError, match="pair"):
        prune_cache([kv[0][0], kv[1]], [ones, ones])


# ------------------------------------------------------------------------------------------------
# Bad arguments.
# ------------------------------------------------------------------------------------------------

def test_bad_position_and_flags():
    model = rotary_model()
    tokens = random_tokens(3)
    _, kv = model(random_tokens(5))
    with pytest.raises(ValueError, match="smaller than the 5 cached tokens"):
        model(tokens, past_kv=kv, position=4)
    for bad in (5.0, True, "5", torch.tensor(5)):
        with pytest.raises(TypeError, match="position must be an int"):
            model(tokens, past_kv=kv, position=bad)
    with pytest.raises(TypeError, match="return_attention"):
        model(tokens, return_attention=1)
    with pytest.raises(TypeError):
        model(tokens, kv, 5)  # position is keyword only
    model(tokens, position=0)
    model(tokens, position=100)


def test_bad_pruned_caches():
    model = rotary_model()
    _, kv = model(random_tokens(5))
    tokens = random_tokens(2)
    with pytest.raises(ValueError, match="same number of tokens"):
        model(tokens, past_kv=[(k, v[:3]) for k, v in kv], position=5)
    batched_tokens = random_tokens(2, batch=3)
    with pytest.raises(ValueError, match="batch"):
        model(batched_tokens, past_kv=kv)
    _, batched_kv = model(random_tokens(5, batch=2))
    with pytest.raises(ValueError, match="batch"):
        model(batched_tokens, past_kv=batched_kv)
    with pytest.raises(ValueError, match="shape"):
        model(tokens, past_kv=batched_kv)


@pytest.mark.parametrize("arguments, error", [
    ({"positions": "learned"}, ValueError),
    ({"positions": None}, TypeError),
    ({"positions": "rotary", "head_dim": 7}, ValueError),
])
def test_bad_position_kinds(arguments, error):
    settings_ = {"vocab_size": 8, "num_layers": 1, "num_heads": 1, "head_dim": 4, "seed": 0, **arguments}
    with pytest.raises(error, match="TinyDecoder"):
        TinyDecoder(**settings_)
