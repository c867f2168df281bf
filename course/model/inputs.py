"""The checks of `TinyDecoder`'s arguments, each raising an error that names what is wrong.

Used by ``course.model.decoder`` (notebooks 06 and 07).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

import torch

if TYPE_CHECKING:
    from course.model.decoder import TinyDecoder

Past = Optional[Sequence[Tuple[torch.Tensor, torch.Tensor]]]
"""A checked ``past_kv``: None, or one ``(k_cache, v_cache)`` pair per layer."""


def check_positive_int(name: str, value: object) -> int:
    """Return ``value`` after checking that it is an int >= 1 (bool is not an int here)."""
    if type(value) is not int:
        raise TypeError(f"TinyDecoder: {name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"TinyDecoder: {name} must be >= 1, got {value}")
    return value


def check_seed_and_positions(seed: object, positions: object, head_dim: int) -> None:
    """Check the constructor's ``seed`` (an int >= 0) and ``positions`` ("sinusoidal" or "rotary")."""
    if type(seed) is not int:
        raise TypeError(f"TinyDecoder: seed must be an int, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"TinyDecoder: seed must be >= 0, got {seed}")
    if type(positions) is not str:
        raise TypeError(f"TinyDecoder: positions must be a str, got {type(positions).__name__}")
    if positions not in ("sinusoidal", "rotary"):
        raise ValueError(f"TinyDecoder: positions must be 'sinusoidal' or 'rotary', got {positions!r}")
    if positions == "rotary" and head_dim % 2:
        raise ValueError(f"TinyDecoder: rotary positions need an even head_dim, got {head_dim}")


def check_forward_arguments(
    model: TinyDecoder, tokens: object, past_kv: object, position: object, return_attention: object
) -> Tuple[torch.Tensor, Past, int]:
    """Check the arguments of ``model.forward`` in the order they are documented.

    Returns the tokens as int64, the past (None or the pairs as given) and the position of the
    first new token.
    """
    tokens = check_tokens(model, tokens)
    batch = tokens.shape[0] if tokens.dim() == 2 else None
    past, lengths = check_past(model, past_kv, batch)
    start = check_position(position, lengths)
    if type(return_attention) is not bool:
        raise TypeError(
            f"TinyDecoder.forward: return_attention must be True or False, got {type(return_attention).__name__}"
        )
    return tokens, past, start


def check_tokens(model: TinyDecoder, tokens: object) -> torch.Tensor:
    """Return ``tokens`` as int64 after checking type, dtype, shape, device and the ids' range."""
    if type(tokens) is not torch.Tensor:
        raise TypeError(
            f"TinyDecoder.forward: tokens must be a 1-D torch.Tensor of token ids, got {type(tokens).__name__}"
        )
    if tokens.dtype.is_floating_point or tokens.dtype.is_complex or tokens.dtype == torch.bool:
        raise TypeError(f"TinyDecoder.forward: tokens must have an integer dtype, got {tokens.dtype}")
    if tokens.dim() not in (1, 2):
        raise ValueError(
            "TinyDecoder.forward: tokens must be 1-D [num_new_tokens] (or 2-D [batch, num_new_tokens]), "
            f"got shape {tuple(tokens.shape)}"
        )
    if tokens.numel() == 0:
        raise ValueError("TinyDecoder.forward: tokens must hold at least one token")
    if tokens.device != model.device:
        raise ValueError(f"TinyDecoder.forward: tokens are on {tokens.device}, the model on {model.device}")
    low, high = int(tokens.min()), int(tokens.max())
    if low < 0 or high >= model.vocab_size:
        raise ValueError(
            f"TinyDecoder.forward: token ids must be in [0, {model.vocab_size}), got values in [{low}, {high}]"
        )
    return tokens.to(torch.long)


def check_past(model: TinyDecoder, past_kv: object, batch: Optional[int]) -> Tuple[Past, List[int]]:
    """Check ``past_kv`` against the model and the tokens' batch; return it and each layer's length."""
    if past_kv is None:
        return None, [0] * model.num_layers
    if not isinstance(past_kv, (list, tuple)) or len(past_kv) != model.num_layers:
        got = len(past_kv) if isinstance(past_kv, (list, tuple)) else type(past_kv).__name__
        raise ValueError(
            f"TinyDecoder.forward: past_kv must be a list of {model.num_layers} (k_cache, v_cache) pairs, got {got}"
        )
    expected = (model.num_heads, model.head_dim) if batch is None else (batch, model.num_heads, model.head_dim)
    shape_text = (f"[num_tokens, {model.num_heads}, {model.head_dim}]" if batch is None
                  else f"[{batch} (the tokens' batch), num_tokens, {model.num_heads}, {model.head_dim}]")
    lengths = [_check_past_layer(model, layer, pair, expected, shape_text) for layer, pair in enumerate(past_kv)]
    return past_kv, lengths


def _check_past_layer(
    model: TinyDecoder, layer: int, pair: object, expected: Tuple[int, ...], shape_text: str
) -> int:
    """Check layer ``layer``'s pair of ``past_kv``; return the number of tokens it covers.

    ``expected`` is the shape without the token dimension, ``shape_text`` the whole shape as the
    error message writes it.
    """
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        raise ValueError(f"TinyDecoder.forward: past_kv[{layer}] must be a (k_cache, v_cache) pair")
    for name, tensor in zip(("k_cache", "v_cache"), pair):
        if type(tensor) is not torch.Tensor:
            raise TypeError(f"TinyDecoder.forward: past_kv[{layer}] {name} must be a torch.Tensor")
        shape = tuple(tensor.shape)
        if tensor.dim() != len(expected) + 1 or shape[:-3] + shape[-2:] != expected:
            raise ValueError(
                f"TinyDecoder.forward: past_kv[{layer}] {name} must have shape {shape_text}, got {shape}"
            )
        if tensor.dtype != torch.float32 or tensor.device != model.device:
            raise ValueError(
                f"TinyDecoder.forward: past_kv[{layer}] {name} must be float32 on {model.device}, "
                f"got {tensor.dtype} on {tensor.device}"
            )
    k_cache, v_cache = pair
    if k_cache.shape[-3] != v_cache.shape[-3]:
        raise ValueError(
            f"TinyDecoder.forward: k_cache and v_cache of a layer must cover the same number of tokens; "
            f"past_kv[{layer}] k_cache covers {k_cache.shape[-3]}, v_cache {v_cache.shape[-3]}"
        )
    return k_cache.shape[-3]


def check_position(position: object, lengths: List[int]) -> int:
    """Return the position of the first new token: ``position``, or the past's length when None."""
    if position is None:
        if len(set(lengths)) > 1:
            raise ValueError(
                f"TinyDecoder.forward: the layers of past_kv hold different numbers of tokens {lengths} "
                "(an evicted cache), so pass position=, the number of tokens the sequence has had so far"
            )
        return lengths[0]
    if type(position) is not int:
        raise TypeError(f"TinyDecoder.forward: position must be an int or None, got {type(position).__name__}")
    if position < max(lengths):
        raise ValueError(
            f"TinyDecoder.forward: position={position} is smaller than the {max(lengths)} cached tokens of "
            "past_kv; the new tokens come after every cached token, so position must be at least that"
        )
    return position
