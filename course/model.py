"""A tiny decoder-only transformer whose forward pass accepts the K/V of a computed prefix.

The prefix cache of notebook 06 stores real key and value tensors. To show that reusing them
never changes the model's output, the notebook needs a model that (1) returns its K/V per layer
and (2) can continue from the K/V of an earlier call. `TinyDecoder` is such a model: random,
seeded weights (nothing is downloaded), fp32, small enough to run on a CPU in milliseconds.

Notebook 07 evicts single tokens' K/V inside one sequence. It needs two things more, which
`TinyDecoder.forward` gives on request: the attention probabilities of every layer (the scores
that H2O and SnapKV rank tokens by), and a past whose layers hold different tokens (a pruned
cache: each layer, and within a layer each head, keeps its own subset of the past tokens). It
also needs a model that has learned something, so that evicting the wrong token visibly hurts:
`load_recall_decoder` returns a `TinyDecoder` trained on the associative-recall task of
`course.recall` (weights shipped with the package, trained by ``python -m course.train_recall``).

Shapes (one sequence; a leading batch dimension ``batch`` is allowed everywhere, see ``forward``):

- ``tokens``: integer tensor ``[num_new_tokens]``;
- ``past_kv`` and the returned ``kv``: a list with one ``(k_cache, v_cache)`` pair per layer,
  each of shape ``[num_tokens, num_heads, head_dim]``, float32 (``num_tokens`` may differ
  between layers);
- logits: ``[num_new_tokens, vocab_size]``, float32;
- attention (on request): one tensor per layer ``[num_heads, num_new_tokens, num_tokens +
  num_new_tokens]``, float32, each row summing to 1.

Positions after eviction. Whether the position is added to the input (sinusoidal, the default)
or turns the queries and keys (rotary, the trained model), the keys and values cached for a
token carry the position the token had when it was computed; evicting other tokens never changes
them, and a kept token is never renumbered. What the model must be told is the position of the
*new* tokens: the number of tokens the sequence has had so far, which after an eviction is larger
than the cache's length. ``forward(..., position=p)`` says so. (StreamingLLM instead numbers
the kept tokens by their place in the cache, so that a stream longer than the model's training
length never shows it a larger distance between query and key (Xiao et al., ICLR 2024, section
3.2). The sequences here stay inside the trained length, so the original positions are kept, as
NVIDIA's kvpress does unless its key re-rotation is asked for.)

Used in notebooks 06 and 07.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch import nn

__all__ = [
    "KV", "TinyDecoder", "load_decoder", "load_recall_decoder", "prune_cache", "recall_weights_path", "rotate",
    "save_decoder", "sinusoidal_positions",
]

KV = List[Tuple[torch.Tensor, torch.Tensor]]
"""Per layer, the pair ``(k_cache, v_cache)``, each ``[num_tokens, num_heads, head_dim]``."""


def _check_positive_int(name: str, value: object) -> int:
    """Return ``value`` after checking that it is an int >= 1 (bool is not an int here)."""
    if type(value) is not int:
        raise TypeError(f"TinyDecoder: {name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"TinyDecoder: {name} must be >= 1, got {value}")
    return value


def sinusoidal_positions(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """Return the sinusoidal position embeddings of ``positions`` (Vaswani et al., 2017).

    Args:
        positions: 1-D integer tensor of absolute positions.
        dim: the embedding width (any int >= 1; an odd width drops the last cosine).

    Returns:
        A float32 tensor ``[len(positions), dim]`` on the positions' device. Row ``p`` depends on
        ``p`` only, so a token at position 100 gets the same embedding whether it is computed in
        one call or after 100 tokens of reused K/V.

    Used in notebook 06 (by `TinyDecoder`).
    """
    half = (dim + 1) // 2
    frequencies = torch.exp(
        -math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=positions.device) / half
    )
    angles = positions.to(torch.float32)[:, None] * frequencies[None, :]
    embedding = torch.stack((torch.sin(angles), torch.cos(angles)), dim=-1).reshape(len(positions), 2 * half)
    return embedding[:, :dim]


def rotate(tensor: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Rotate queries or keys ``[..., num_tokens, num_heads, head_dim]`` by their positions (RoPE).

    Rotary position embedding (Su et al., 2021, "RoFormer"), in the split-halves layout of
    GPT-NeoX and Llama: feature ``i`` and feature ``i + head_dim / 2`` of every head are turned
    by the angle ``position * 10000 ** (-2 i / head_dim)``. The dot product of a query rotated
    to position ``p`` and a key rotated to position ``s`` then depends on ``p - s`` only.
    ``positions`` is a 1-D integer tensor ``[num_tokens]``; ``head_dim`` must be even.

    Used by `TinyDecoder` with ``positions="rotary"`` (notebook 07).
    """
    half = tensor.shape[-1] // 2
    frequencies = torch.exp(
        -math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=tensor.device) / half
    )
    angles = positions.to(torch.float32)[:, None] * frequencies[None, :]
    cos, sin = torch.cos(angles)[:, None, :], torch.sin(angles)[:, None, :]
    first, second = tensor[..., :half], tensor[..., half:]
    return torch.cat((first * cos - second * sin, first * sin + second * cos), dim=-1)


class _Block(nn.Module):
    """One pre-norm transformer block: causal self-attention with past K/V, then an MLP."""

    def __init__(self, num_heads: int, head_dim: int, rotary: bool) -> None:
        super().__init__()
        model_dim = num_heads * head_dim
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.rotary = rotary
        self.attention_norm = nn.LayerNorm(model_dim)
        self.qkv = nn.Linear(model_dim, 3 * model_dim)
        self.output = nn.Linear(model_dim, model_dim)
        self.mlp_norm = nn.LayerNorm(model_dim)
        self.mlp = nn.Sequential(nn.Linear(model_dim, 4 * model_dim), nn.GELU(), nn.Linear(4 * model_dim, model_dim))

    def forward(
        self,
        hidden: torch.Tensor,
        past: Optional[Tuple[torch.Tensor, torch.Tensor]],
        positions: torch.Tensor,
        return_attention: bool = False,
    ) -> Tuple[torch.Tensor, Tuple[torch.Tensor, torch.Tensor], Optional[torch.Tensor]]:
        """Run the block on ``hidden`` ``[..., num_new, model_dim]`` after the cached ``past``.

        ``positions`` ``[num_new]`` are the new tokens' positions; a rotary block turns their
        queries and keys by them (cached keys were turned when they were computed).

        Every cached token comes before every new token, so the new tokens see the whole past
        and, among themselves, only the tokens up to themselves. Returns the new hidden states,
        the pair (past + new keys, past + new values) and, when asked, the attention
        probabilities ``[..., num_heads, num_new, num_past + num_new]`` (else None).
        """
        num_new = hidden.shape[-2]
        leading = hidden.shape[:-2]
        query, key, value = self.qkv(self.attention_norm(hidden)).split(hidden.shape[-1], dim=-1)
        query = query.reshape(*leading, num_new, self.num_heads, self.head_dim)
        key = key.reshape(*leading, num_new, self.num_heads, self.head_dim)
        value = value.reshape(*leading, num_new, self.num_heads, self.head_dim)
        if self.rotary:
            query, key = rotate(query, positions), rotate(key, positions)
        if past is not None:
            key = torch.cat((past[0], key), dim=-3)
            value = torch.cat((past[1], value), dim=-3)
        num_total = key.shape[-3]
        num_past = num_total - num_new
        # Cache slot j (past slots first, then the new tokens) is visible to new token i when
        # j is a past slot or a new token not after i.
        query_slot = torch.arange(num_past, num_total, device=hidden.device)
        key_slot = torch.arange(num_total, device=hidden.device)
        allowed = key_slot[None, :] <= query_slot[:, None]
        scores = torch.einsum("...qhd,...khd->...hqk", query, key) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(~allowed, float("-inf"))
        probabilities = torch.softmax(scores, dim=-1)
        attended = torch.einsum("...hqk,...khd->...qhd", probabilities, value)
        hidden = hidden + self.output(attended.reshape(*leading, num_new, -1))
        hidden = hidden + self.mlp(self.mlp_norm(hidden))
        return hidden, (key, value), probabilities if return_attention else None


class TinyDecoder(nn.Module):
    """A small decoder-only transformer with random, seeded weights, for prefix-cache experiments.

    Architecture: token embedding (plus a sinusoidal position embedding, by default),
    ``num_layers`` pre-norm blocks (causal multi-head self-attention, then a GELU MLP of width
    4 * model_dim), a final LayerNorm and an output head tied to the token embedding (scaled by
    1/sqrt(model_dim)). ``model_dim = num_heads * head_dim``. With ``positions="rotary"`` the
    position enters through rotary embeddings of the queries and keys instead (`rotate`), as in
    Llama or Qwen; the trained model of `load_recall_decoder` is built so.
    All weights are float32 and drawn from a ``torch.Generator`` seeded with ``seed``, so two
    models built with the same arguments are identical on every machine; gradients are off.

    Args:
        vocab_size: number of token ids (int >= 1); ids are ``0 .. vocab_size - 1``.
        num_layers: number of transformer blocks (int >= 1).
        num_heads: attention heads per block (int >= 1).
        head_dim: width of each head (int >= 1).
        seed: seed of the weights (int >= 0).
        positions: ``"sinusoidal"`` (default: added to the input) or ``"rotary"`` (queries and
            keys turned by their positions; ``head_dim`` must then be even). Either way a
            cached key or value keeps the position its token had when it was computed.

    Raises:
        TypeError: when an argument is not an int (positions: not a str).
        ValueError: when an argument is out of range.

    Example:
        >>> model = TinyDecoder(vocab_size=256, num_layers=2, num_heads=4, head_dim=16, seed=0)
        >>> logits, kv = model(torch.tensor([1, 2, 3]))
        >>> more_logits, kv = model(torch.tensor([4, 5]), past_kv=kv)   # continues at position 3
        >>> kept = [(k[[0, 4]], v[[0, 4]]) for k, v in kv]             # evict positions 1, 2, 3
        >>> logits, kv, attention = model(torch.tensor([6]), past_kv=kept, position=5,
        ...                               return_attention=True)        # attention[0]: [4, 1, 3]

    `load_recall_decoder` returns one with trained weights. Used in notebooks 06 and 07.
    """

    def __init__(
        self, vocab_size: int, num_layers: int, num_heads: int, head_dim: int, seed: int, positions: str = "sinusoidal"
    ) -> None:
        super().__init__()
        self.vocab_size = _check_positive_int("vocab_size", vocab_size)
        self.num_layers = _check_positive_int("num_layers", num_layers)
        self.num_heads = _check_positive_int("num_heads", num_heads)
        self.head_dim = _check_positive_int("head_dim", head_dim)
        if type(seed) is not int:
            raise TypeError(f"TinyDecoder: seed must be an int, got {type(seed).__name__}")
        if seed < 0:
            raise ValueError(f"TinyDecoder: seed must be >= 0, got {seed}")
        self.seed = seed
        if type(positions) is not str:
            raise TypeError(f"TinyDecoder: positions must be a str, got {type(positions).__name__}")
        if positions not in ("sinusoidal", "rotary"):
            raise ValueError(f"TinyDecoder: positions must be 'sinusoidal' or 'rotary', got {positions!r}")
        if positions == "rotary" and head_dim % 2:
            raise ValueError(f"TinyDecoder: rotary positions need an even head_dim, got {head_dim}")
        self.positions = positions
        self.model_dim = num_heads * head_dim
        # PyTorch's default initialization draws from the global generator; fork it so that
        # building a model leaves the notebook's random state as it was.
        with torch.random.fork_rng(devices=[]):
            self.embedding = nn.Embedding(vocab_size, self.model_dim)
            self.blocks = nn.ModuleList(_Block(num_heads, head_dim, positions == "rotary") for _ in range(num_layers))
            self.final_norm = nn.LayerNorm(self.model_dim)
        self._initialize(seed)
        self.requires_grad_(False)
        self.eval()

    def _initialize(self, seed: int) -> None:
        """Draw every weight from a generator seeded with ``seed`` (the global RNG is untouched)."""
        generator = torch.Generator().manual_seed(seed)
        for name, parameter in self.named_parameters():
            with torch.no_grad():
                if "norm" in name:
                    parameter.fill_(1.0 if name.endswith("weight") else 0.0)
                elif name.endswith("bias"):
                    parameter.normal_(0.0, 0.02, generator=generator)
                elif name == "embedding.weight":
                    parameter.normal_(0.0, 1.0, generator=generator)
                else:
                    fan_in = parameter.shape[1]
                    parameter.normal_(0.0, 1.0 / math.sqrt(fan_in), generator=generator)

    @property
    def device(self) -> torch.device:
        """The device that holds the weights."""
        return self.embedding.weight.device

    def _check_tokens(self, tokens: object) -> torch.Tensor:
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
        if tokens.device != self.device:
            raise ValueError(f"TinyDecoder.forward: tokens are on {tokens.device}, the model on {self.device}")
        low, high = int(tokens.min()), int(tokens.max())
        if low < 0 or high >= self.vocab_size:
            raise ValueError(
                f"TinyDecoder.forward: token ids must be in [0, {self.vocab_size}), got values in [{low}, {high}]"
            )
        return tokens.to(torch.long)

    def _check_past(
        self, past_kv: object, batch: Optional[int]
    ) -> Tuple[Optional[Sequence[Tuple[torch.Tensor, torch.Tensor]]], List[int]]:
        """Check ``past_kv`` against the model and the tokens' batch; return it and each layer's length."""
        if past_kv is None:
            return None, [0] * self.num_layers
        if not isinstance(past_kv, (list, tuple)) or len(past_kv) != self.num_layers:
            got = len(past_kv) if isinstance(past_kv, (list, tuple)) else type(past_kv).__name__
            raise ValueError(
                f"TinyDecoder.forward: past_kv must be a list of {self.num_layers} (k_cache, v_cache) pairs, got {got}"
            )
        expected = (self.num_heads, self.head_dim) if batch is None else (batch, self.num_heads, self.head_dim)
        shape_text = (f"[num_tokens, {self.num_heads}, {self.head_dim}]" if batch is None
                      else f"[{batch} (the tokens' batch), num_tokens, {self.num_heads}, {self.head_dim}]")
        lengths = []
        for layer, pair in enumerate(past_kv):
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
                if tensor.dtype != torch.float32 or tensor.device != self.device:
                    raise ValueError(
                        f"TinyDecoder.forward: past_kv[{layer}] {name} must be float32 on {self.device}, "
                        f"got {tensor.dtype} on {tensor.device}"
                    )
            k_cache, v_cache = pair
            if k_cache.shape[-3] != v_cache.shape[-3]:
                raise ValueError(
                    f"TinyDecoder.forward: k_cache and v_cache of a layer must cover the same number of tokens; "
                    f"past_kv[{layer}] k_cache covers {k_cache.shape[-3]}, v_cache {v_cache.shape[-3]}"
                )
            lengths.append(k_cache.shape[-3])
        return past_kv, lengths

    def _check_position(self, position: object, lengths: List[int]) -> int:
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

    def forward(  # type: ignore[override]
        self,
        tokens: torch.Tensor,
        past_kv: Optional[KV] = None,
        *,
        position: Optional[int] = None,
        return_attention: bool = False,
    ) -> Union[Tuple[torch.Tensor, KV], Tuple[torch.Tensor, KV, List[torch.Tensor]]]:
        """Run the new ``tokens`` after the prefix whose K/V is ``past_kv``.

        Args:
            tokens: 1-D integer tensor ``[num_new_tokens]`` (at least one) of ids in
                ``[0, vocab_size)``, on the model's device. A 2-D ``[batch, num_new_tokens]``
                runs ``batch`` sequences at once (then every tensor below gains a leading
                ``batch`` dimension, and all sequences share ``position``).
            past_kv: None (no prefix), or a list of ``num_layers`` pairs ``(k_cache, v_cache)``,
                each float32 ``[num_past_tokens, num_heads, head_dim]`` on the model's device:
                the ``kv`` of an earlier call, a prefix of it cut along dim 0, or a pruned cache
                that keeps some of its tokens. A pruned cache may keep a different number of
                tokens in each layer (k_cache and v_cache of one layer must agree), and each
                head its own tokens (slot ``j`` of head ``h`` may hold another token than slot
                ``j`` of head ``h + 1``): the model attends to whatever the slots hold. Every
                cached token counts as earlier than every new token; the new tokens attend to
                the whole cache plus the new tokens up to themselves (causal mask).
            position: keyword only. The position of ``tokens[0]`` in the sequence (int >= the
                longest layer's ``num_past_tokens``); the new tokens take ``position,
                position + 1, ...``. None (the default) means ``num_past_tokens``, right for a
                cache that nothing was evicted from; after an eviction pass the number of
                tokens the sequence has had so far (required when the layers' lengths differ).
            return_attention: keyword only. When True, also return each layer's attention
                probabilities.

        Returns:
            ``(logits, kv)``, or ``(logits, kv, attention)`` when ``return_attention``: logits
            float32 ``[num_new_tokens, vocab_size]`` (the scores of the token after each new
            position); kv a new list of ``num_layers`` pairs, each float32
            ``[num_past_tokens + num_new_tokens, num_heads, head_dim]``: the layer's past slots
            in their order, then the new tokens. attention: a list of ``num_layers`` float32
            tensors ``[num_heads, num_new_tokens, num_past_tokens + num_new_tokens]``; entry
            ``[h, i, j]`` is how much head ``h``'s new token ``i`` attends to slot ``j`` of the
            returned ``kv`` (each row sums to 1; a new token's later slots are 0). ``past_kv``
            is not changed.

        Raises:
            TypeError: tokens not an integer torch.Tensor, a past tensor not a torch.Tensor,
                position not an int.
            ValueError: tokens empty, not 1-D or 2-D, out of range or on another device; past_kv
                with the wrong number of layers, wrong shapes (or batch), dtype or device, or a
                layer whose k_cache and v_cache lengths differ; position smaller than the cache,
                or missing when the layers' lengths differ.

        Running a sequence in one call gives the same logits (up to float32 rounding, about
        1e-6) as running it in two calls with the first call's K/V passed on.
        """
        tokens = self._check_tokens(tokens)
        batch = tokens.shape[0] if tokens.dim() == 2 else None
        past, lengths = self._check_past(past_kv, batch)
        start = self._check_position(position, lengths)
        if type(return_attention) is not bool:
            raise TypeError(
                f"TinyDecoder.forward: return_attention must be True or False, got {type(return_attention).__name__}"
            )
        positions = torch.arange(start, start + tokens.shape[-1], device=tokens.device)
        hidden = self.embedding(tokens)
        if self.positions == "sinusoidal":
            hidden = hidden + sinusoidal_positions(positions, self.model_dim)
        kv: KV = []
        attention: List[torch.Tensor] = []
        for layer, block in enumerate(self.blocks):
            layer_past = None if past is None else (past[layer][0], past[layer][1])
            hidden, pair, probabilities = block(hidden, layer_past, positions, return_attention)
            kv.append(pair)
            if return_attention:
                attention.append(probabilities)
        # The head is tied to the embedding and scaled by 1/sqrt(model_dim), so logits are O(1).
        logits = self.final_norm(hidden) @ self.embedding.weight.T / math.sqrt(self.model_dim)
        if return_attention:
            return logits, kv, attention
        return logits, kv


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
        *leading, num_tokens, num_heads, head_dim = k_cache.shape
        full_shape = (*leading, num_heads, num_tokens)
        allowed = [(num_tokens,), (num_heads, num_tokens), full_shape]
        if tuple(mask.shape) not in allowed:
            raise ValueError(
                f"prune_cache: keep[{layer}] must have shape {' or '.join(str(list(a)) for a in allowed)} "
                f"for a cache of shape {list(k_cache.shape)}, got {list(mask.shape)}"
            )
        mask = mask.expand(full_shape)
        counts = mask.sum(dim=-1)
        count = int(counts.reshape(-1)[0]) if counts.numel() else 0
        if not bool((counts == count).all()):
            raise ValueError(
                f"prune_cache: every head must keep the same number of tokens; keep[{layer}] keeps "
                f"{sorted(set(counts.reshape(-1).tolist()))} in different heads"
            )
        # Move the token axis next to the features ([..., heads, tokens, dim]), pick the kept rows
        # of every head in order, and move it back.
        pruned_pair = []
        for cache in (k_cache, v_cache):
            by_head = cache.movedim(-3, -2)
            kept = by_head[mask].reshape(*leading, num_heads, count, head_dim)
            pruned_pair.append(kept.movedim(-2, -3).contiguous())
        pruned.append((pruned_pair[0], pruned_pair[1]))
    return pruned


RECALL_WEIGHTS = "recall_decoder.pt"
"""The file name of the trained weights inside the package (``course/weights/``)."""


def save_decoder(model: TinyDecoder, path: Union[str, "os.PathLike[str]"], metadata: Dict[str, object]) -> None:
    """Save ``model``'s weights as float16 with its shape and ``metadata``, loadable without pickle.

    The file is ``torch.save`` of a dict of plain types (ints, floats, strings, tensors), which
    ``torch.load(..., weights_only=True)`` reads without running any code. Float16 halves the
    file; the weights are float32 again once loaded (`load_decoder`), and the accuracy stated
    in ``metadata`` must be measured on these rounded weights.

    Used by course.train_recall.
    """
    for key, value in metadata.items():
        if type(key) is not str or type(value) not in (int, float, str, bool):
            raise TypeError(f"save_decoder: metadata must map str to int, float, str or bool; {key!r}: {value!r}")
    state = {name: tensor.detach().to("cpu", torch.float16).contiguous() for name, tensor in model.state_dict().items()}
    shape = {"vocab_size": model.vocab_size, "num_layers": model.num_layers,
             "num_heads": model.num_heads, "head_dim": model.head_dim, "positions": model.positions}
    torch.save({"format": 1, "shape": shape, "metadata": dict(metadata), "state_dict": state}, path)


def load_decoder(path: Union[str, "os.PathLike[str]"], device: Union[str, torch.device, None] = None) -> TinyDecoder:
    """Load a `TinyDecoder` saved by `save_decoder` (float32 weights, gradients off, eval mode).

    The metadata saved with it is in the model's ``metadata`` attribute (a dict).

    Raises:
        ValueError: when the file is not such a file.
    """
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise
    except Exception as error:  # torch raises several types for a file that is not a checkpoint.
        raise ValueError(f"load_decoder: {path} is not a weights file saved by save_decoder ({error})") from error
    if not isinstance(saved, dict) or saved.get("format") != 1 or not isinstance(saved.get("shape"), dict):
        raise ValueError(f"load_decoder: {path} is not a weights file saved by save_decoder")
    model = TinyDecoder(seed=0, **saved["shape"])
    model.load_state_dict({name: tensor.to(torch.float32) for name, tensor in saved["state_dict"].items()})
    model.metadata = dict(saved["metadata"])
    return model.to(device) if device is not None else model


def recall_weights_path() -> Path:
    """The path of the shipped weights of `load_recall_decoder` (inside the installed package)."""
    return Path(__file__).resolve().parent / "weights" / RECALL_WEIGHTS


def load_recall_decoder(device: Union[str, torch.device, None] = None) -> TinyDecoder:
    """Return the `TinyDecoder` trained on the associative-recall task of `course.recall`.

    Two layers, four heads of 16 dimensions (model_dim 64), vocabulary `course.recall.VOCAB_SIZE`;
    weights shipped with the package (float16 on disk, float32 in the model), so nothing is
    downloaded. ``model.metadata`` holds how it was trained (seed, steps, time) and its recall
    accuracy on a held-out set. Trained by ``python -m course.train_recall``.

    Args:
        device: where to put the model (None: the CPU).

    Used in notebook 07.
    """
    path = recall_weights_path()
    if not path.is_file():
        raise FileNotFoundError(
            f"load_recall_decoder: the shipped weights {path} are missing; reinstall the course package, "
            "or train them with: python -m course.train_recall"
        )
    return load_decoder(path, device)
