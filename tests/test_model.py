"""Unit tests of course.model.TinyDecoder (notebook 06)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course.env import available_devices
from course.model import TinyDecoder, sinusoidal_positions

TOLERANCE = 1e-5


def small_model(seed: int = 0) -> TinyDecoder:
    return TinyDecoder(vocab_size=64, num_layers=2, num_heads=2, head_dim=8, seed=seed)


def random_tokens(count: int, vocab_size: int = 64, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, vocab_size, (count,), generator=torch.Generator().manual_seed(seed))


def test_shapes_and_dtypes():
    model = TinyDecoder(vocab_size=256, num_layers=3, num_heads=4, head_dim=16, seed=1)
    logits, kv = model(random_tokens(10, 256))
    assert type(logits) is torch.Tensor and logits.dtype == torch.float32
    assert logits.shape == (10, 256)
    assert type(kv) is list and len(kv) == 3
    for k_cache, v_cache in kv:
        assert k_cache.shape == v_cache.shape == (10, 4, 16)
        assert k_cache.dtype == v_cache.dtype == torch.float32
    assert not logits.requires_grad
    more_logits, kv = model(random_tokens(5, 256, seed=1), past_kv=kv)
    assert more_logits.shape == (5, 256)
    assert all(k.shape == (15, 4, 16) for k, _ in kv)


@settings(max_examples=25, deadline=None)
@given(total=st.integers(2, 40), data=st.data())
def test_one_call_equals_two_calls_with_past_kv(total, data):
    split = data.draw(st.integers(1, total - 1))
    model = small_model()
    tokens = random_tokens(total, seed=total)
    logits, kv = model(tokens)
    first_logits, first_kv = model(tokens[:split])
    second_logits, second_kv = model(tokens[split:], past_kv=first_kv)
    torch.testing.assert_close(torch.cat((first_logits, second_logits)), logits, atol=TOLERANCE, rtol=TOLERANCE)
    for (k_one, v_one), (k_two, v_two) in zip(kv, second_kv):
        torch.testing.assert_close(k_two, k_one, atol=TOLERANCE, rtol=TOLERANCE)
        torch.testing.assert_close(v_two, v_one, atol=TOLERANCE, rtol=TOLERANCE)


def test_reuse_of_a_cut_prefix_and_token_by_token_decoding():
    model = small_model(3)
    tokens = random_tokens(24, seed=5)
    logits, kv = model(tokens)
    # K/V cut along dim 0, as a prefix cache stores them block by block, continue just as well.
    prefix_kv = [(k[:16], v[:16]) for k, v in kv]
    tail_logits, _ = model(tokens[16:], past_kv=prefix_kv)
    torch.testing.assert_close(tail_logits, logits[16:], atol=TOLERANCE, rtol=TOLERANCE)
    # One token at a time, as in decoding.
    step_kv = None
    for position in range(24):
        step_logits, step_kv = model(tokens[position:position + 1], past_kv=step_kv)
        torch.testing.assert_close(step_logits[0], logits[position], atol=TOLERANCE, rtol=TOLERANCE)


def test_past_kv_is_not_changed():
    model = small_model()
    _, kv = model(random_tokens(6))
    copies = [(k.clone(), v.clone()) for k, v in kv]
    model(random_tokens(3, seed=2), past_kv=kv)
    assert all(torch.equal(k, kc) and torch.equal(v, vc) for (k, v), (kc, vc) in zip(kv, copies))


def test_prefix_matters_positions_continue():
    model = small_model()
    tokens = random_tokens(8)
    _, kv = model(tokens[:4])
    with_past, _ = model(tokens[4:], past_kv=kv)
    without_past, _ = model(tokens[4:])
    assert (with_past - without_past).abs().max() > 1e-3, "the past K/V must change the logits"
    shifted, _ = model(tokens[4:], past_kv=[(k[:2], v[:2]) for k, v in kv])
    assert (with_past - shifted).abs().max() > 1e-3, "the position must continue from the past length"


def test_seeded_weights_are_deterministic():
    tokens = random_tokens(12)
    first, _ = small_model(7)(tokens)
    second, _ = small_model(7)(tokens)
    other, _ = small_model(8)(tokens)
    assert torch.equal(first, second)
    assert not torch.equal(first, other)
    state_one, state_two = small_model(7).state_dict(), small_model(7).state_dict()
    assert all(torch.equal(state_one[name], state_two[name]) for name in state_one)


def test_building_a_model_leaves_the_global_random_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    small_model(4)
    assert torch.equal(torch.rand(3), expected)


def test_integer_dtypes_are_accepted():
    model = small_model()
    tokens = random_tokens(5)
    reference, _ = model(tokens)
    for dtype in (torch.int32, torch.int16, torch.uint8):
        logits, _ = model(tokens.to(dtype))
        assert torch.equal(logits, reference)


@pytest.mark.parametrize("arguments, error", [
    ((0, 1, 1, 1, 0), ValueError),
    ((8, 0, 1, 1, 0), ValueError),
    ((8, 1, -1, 1, 0), ValueError),
    ((8, 1, 1, 0, 0), ValueError),
    ((8, 1, 1, 1, -1), ValueError),
    ((8.0, 1, 1, 1, 0), TypeError),
    ((8, 1, 1, 1, "0"), TypeError),
    ((8, True, 1, 1, 0), TypeError),
])
def test_bad_constructor_arguments(arguments, error):
    with pytest.raises(error, match="TinyDecoder"):
        TinyDecoder(*arguments)


def test_bad_tokens():
    model = small_model()
    with pytest.raises(TypeError, match="tokens"):
        model([1, 2, 3])
    with pytest.raises(TypeError, match="integer dtype"):
        model(torch.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="1-D"):
        model(torch.tensor([[[1, 2]]]))
    with pytest.raises(ValueError, match="at least one"):
        model(torch.tensor([], dtype=torch.long))
    with pytest.raises(ValueError, match=r"\[0, 64\)"):
        model(torch.tensor([1, 64]))
    with pytest.raises(ValueError, match=r"\[0, 64\)"):
        model(torch.tensor([-1, 3]))


def test_bad_past_kv():
    model = small_model()
    _, kv = model(random_tokens(4))
    tokens = random_tokens(2)
    with pytest.raises(ValueError, match="2 \\(k_cache, v_cache\\) pairs"):
        model(tokens, past_kv=kv[:1])
    with pytest.raises(ValueError, match="shape"):
        model(tokens, past_kv=[(k[:, :1], v) for k, v in kv])
    with pytest.raises(ValueError, match="same number of tokens"):
        model(tokens, past_kv=[(k, v[:3]) for k, v in kv])
    with pytest.raises(ValueError, match="float32"):
        model(tokens, past_kv=[(k.double(), v.double()) for k, v in kv])
    with pytest.raises(TypeError, match="torch.Tensor"):
        model(tokens, past_kv=[(k.tolist(), v) for k, v in kv])
    with pytest.raises(ValueError, match="pair"):
        model(tokens, past_kv=[k for k, _ in kv])


def test_sinusoidal_positions_depend_on_the_position_only():
    table = sinusoidal_positions(torch.arange(10), 6)
    assert table.shape == (10, 6) and table.dtype == torch.float32
    assert torch.equal(sinusoidal_positions(torch.arange(4, 7), 6), table[4:7])
    assert sinusoidal_positions(torch.arange(3), 5).shape == (3, 5)


@pytest.mark.parametrize("device", available_devices(), ids=str)
def test_every_device_agrees_with_the_cpu(device):
    model = small_model().to(device)
    tokens = random_tokens(9).to(device)
    logits, kv = model(tokens)
    assert logits.device.type == device.type and all(k.device.type == device.type for k, _ in kv)
    split_logits, _ = model(tokens[5:], past_kv=[(k[:5], v[:5]) for k, v in kv])
    torch.testing.assert_close(split_logits, logits[5:], atol=1e-4, rtol=1e-4)
    cpu_logits, _ = small_model()(tokens.cpu())
    torch.testing.assert_close(logits.cpu(), cpu_logits, atol=1e-4, rtol=1e-4)
