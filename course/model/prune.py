"""`prune_cache`: keep, in every layer and head, the K/V slots that a bool mask marks.

Used in notebook 07 (through ``course.model``).
"""

from __future__ import annotations

from typing import Sequence, Tuple

import torch

from course.model.decoder import KV


def prune_cache(kv: KV, keep: Sequence[torch.Tensor]) -> KV:
    """Return the cache that keeps, in every layer and head, the slots that ``keep`` marks.

    Args:
        kv: a list of ``num_layers`` pairs ``(k_cache, v_cache)``, each ``[num_tokens, num_heads,
            head_dim]`` (or ``[batch, num_tokens, num_heads, head_dim]``), as `TinyDecoder` returns.
        keep: one bool tensor per layer, on the cache's device, of shape ``[num_tokens]`` (the same
            slots for every head), ``[num_heads, num_tokens]`` (each head its own slots) or, for a
            batched cache, ``[batch, num_heads, num_tokens]``. Every head (and every sequence of
            a batch) must keep the same number of slots, because the kept slots of all heads
            are stored in one dense tensor; layers may keep different numbers.

    Returns:
        A new list of pairs ``[num_kept, num_heads, head_dim]`` (batched: ``[batch, num_kept, ...]``)
        in which slot ``j`` of head ``h`` is the ``j``-th kept slot of head ``h``: the kept slots
        keep their order. Pass it to `TinyDecoder.forward` with ``position=`` the number of tokens
        the sequence has had so far. ``kv`` is not changed.

    Raises:
        TypeError: kv or keep not lists of tensors, or a keep tensor not bool.
        ValueError: wrong numbers of layers, shapes or devices, or heads that keep different
            numbers of slots.

    Used in notebook 07.
    """
    if not isinstance(kv, (list, tuple)) or not isinstance(keep, (list, tuple)):
        raise TypeError("prune_cache: kv and keep must be lists (one entry per layer)")
    if len(kv) != len(keep):
        raise ValueError(f"prune_cache: kv has {len(kv)} layers but keep has {len(keep)} masks")
    pruned: KV = []
    for layer, (pair, mask) in enumerate(zip(kv, keep)):
        k_cache, v_cache = _check_layer(layer, pair, mask)
        *leading, num_tokens, num_heads, head_dim = k_cache.shape
        mask = mask.expand((*leading, num_heads, num_tokens))
        count = _kept_per_head(layer, mask)
        # Move the token axis next to the features ([..., heads, tokens, dim]), pick the kept rows
        # of every head in order, and move it back.
        pruned_pair = []
        for cache in (k_cache, v_cache):
            by_head = cache.movedim(-3, -2)
            kept = by_head[mask].reshape(*leading, num_heads, count, head_dim)
            pruned_pair.append(kept.movedim(-2, -3).contiguous())
        pruned.append((pruned_pair[0], pruned_pair[1]))
    return pruned


def _check_layer(layer: int, pair: object, mask: object) -> Tuple[torch.Tensor, torch.Tensor]:
    """Check layer ``layer``'s pair of ``kv`` and its mask in ``keep``; return the pair."""
    if not isinstance(pair, (list, tuple)) or len(pair) != 2 or any(type(t) is not torch.Tensor for t in pair):
        raise TypeError(f"prune_cache: kv[{layer}] must be a (k_cache, v_cache) pair of tensors")
    k_cache, v_cache = pair
    if k_cache.dim() not in (3, 4) or k_cache.shape != v_cache.shape:
        raise ValueError(
            f"prune_cache: kv[{layer}] must hold two tensors of one shape [num_tokens, num_heads, head_dim] "
            f"(or with a batch dimension first), got {tuple(k_cache.shape)} and {tuple(v_cache.shape)}"
        )
    if type(mask) is not torch.Tensor or mask.dtype != torch.bool:
        got = mask.dtype if type(mask) is torch.Tensor else type(mask).__name__
        raise TypeError(f"prune_cache: keep[{layer}] must be a bool torch.Tensor, got {got}")
    if mask.device != k_cache.device:
        raise ValueError(f"prune_cache: keep[{layer}] is on {mask.device}, the cache on {k_cache.device}")
    *leading, num_tokens, num_heads, _ = k_cache.shape
    allowed = [(num_tokens,), (num_heads, num_tokens), (*leading, num_heads, num_tokens)]
    if tuple(mask.shape) not in allowed:
        raise ValueError(
            f"prune_cache: keep[{layer}] must have shape {' or '.join(str(list(a)) for a in allowed)} "
            f"for a cache of shape {list(k_cache.shape)}, got {list(mask.shape)}"
        )
    return k_cache, v_cache


def _kept_per_head(layer: int, mask: torch.Tensor) -> int:
    """Return how many slots every head keeps under ``mask`` ``[..., num_heads, num_tokens]``.

    Raises ValueError when two heads (or two sequences of a batch) keep different numbers.
    """
    counts = mask.sum(dim=-1)
    count = int(counts.reshape(-1)[0]) if counts.numel() else 0
    if not bool((counts == count).all()):
        raise ValueError(
            f"prune_cache: every head must keep the same number of tokens; keep[{layer}] keeps "
            f"{sorted(set(counts.reshape(-1).tolist()))} in different heads"
        )
    return count
