"""A tiny decoder-only transformer whose forward pass accepts the K/V of a computed prefix.

The prefix cache of notebook 06 stores real key and value tensors. To show that reusing them
never changes the model's output, the notebook needs a model that (1) returns its K/V per layer
and (2) can continue from the K/V of an earlier call. `TinyDecoder` is such a model: random,
seeded weights (nothing is downloaded), fp32, small enough to run on a CPU in milliseconds.

Shapes (one sequence, no batch dimension):

- ``tokens``: 1-D integer tensor ``[num_new_tokens]``;
- ``past_kv`` and the returned ``kv``: a list with one ``(k_cache, v_cache)`` pair per layer,
  each of shape ``[num_tokens, num_heads, head_dim]``, float32;
- logits: ``[num_new_tokens, vocab_size]``, float32.

Used in notebook 06.
"""

from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

import torch
from torch import nn

__all__ = ["KV", "TinyDecoder", "sinusoidal_positions"]

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


class _Block(nn.Module):
    """One pre-norm transformer block: causal self-attention with past K/V, then an MLP."""

    def __init__(self, num_heads: int, head_dim: int) -> None:
        super().__init__()
        model_dim = num_heads * head_dim
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.attention_norm = nn.LayerNorm(model_dim)
        self.qkv = nn.Linear(model_dim, 3 * model_dim)
        self.output = nn.Linear(model_dim, model_dim)
        self.mlp_norm = nn.LayerNorm(model_dim)
        self.mlp = nn.Sequential(nn.Linear(model_dim, 4 * model_dim), nn.GELU(), nn.Linear(4 * model_dim, model_dim))

    def forward(
        self, hidden: torch.Tensor, past: Optional[Tuple[torch.Tensor, torch.Tensor]]
    ) -> Tuple[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
        num_new = hidden.shape[0]
        query, key, value = self.qkv(self.attention_norm(hidden)).split(hidden.shape[1], dim=-1)
        query = query.reshape(num_new, self.num_heads, self.head_dim)
        key = key.reshape(num_new, self.num_heads, self.head_dim)
        value = value.reshape(num_new, self.num_heads, self.head_dim)
        if past is not None:
            key = torch.cat((past[0], key), dim=0)
            value = torch.cat((past[1], value), dim=0)
        num_total = key.shape[0]
        num_past = num_total - num_new
        # New token i sits at absolute position num_past + i and sees keys 0 .. num_past + i.
        query_position = torch.arange(num_past, num_total, device=hidden.device)
        key_position = torch.arange(num_total, device=hidden.device)
        allowed = key_position[None, :] <= query_position[:, None]
        scores = torch.einsum("qhd,khd->hqk", query, key) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(~allowed[None, :, :], float("-inf"))
        attended = torch.einsum("hqk,khd->qhd", torch.softmax(scores, dim=-1), value)
        hidden = hidden + self.output(attended.reshape(num_new, -1))
        hidden = hidden + self.mlp(self.mlp_norm(hidden))
        return hidden, (key, value)


class TinyDecoder(nn.Module):
    """A small decoder-only transformer with random, seeded weights, for prefix-cache experiments.

    Architecture: token embedding plus sinusoidal position embedding, ``num_layers`` pre-norm
    blocks (causal multi-head self-attention, then a GELU MLP of width 4 * model_dim), a final
    LayerNorm and an output head tied to the token embedding (scaled by 1/sqrt(model_dim)).
    ``model_dim = num_heads * head_dim``.
    All weights are float32 and drawn from a ``torch.Generator`` seeded with ``seed``, so two
    models built with the same arguments are identical on every machine; gradients are off.

    Args:
        vocab_size: number of token ids (int >= 1); ids are ``0 .. vocab_size - 1``.
        num_layers: number of transformer blocks (int >= 1).
        num_heads: attention heads per block (int >= 1).
        head_dim: width of each head (int >= 1).
        seed: seed of the weights (int >= 0).

    Raises:
        TypeError: when an argument is not an int.
        ValueError: when an argument is out of range.

    Example:
        >>> model = TinyDecoder(vocab_size=256, num_layers=2, num_heads=4, head_dim=16, seed=0)
        >>> logits, kv = model(torch.tensor([1, 2, 3]))
        >>> more_logits, kv = model(torch.tensor([4, 5]), past_kv=kv)   # continues at position 3

    Used in notebook 06.
    """

    def __init__(self, vocab_size: int, num_layers: int, num_heads: int, head_dim: int, seed: int) -> None:
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
        self.model_dim = num_heads * head_dim
        # PyTorch's default initialization draws from the global generator; fork it so that
        # building a model leaves the notebook's random state as it was.
        with torch.random.fork_rng(devices=[]):
            self.embedding = nn.Embedding(vocab_size, self.model_dim)
            self.blocks = nn.ModuleList(_Block(num_heads, head_dim) for _ in range(num_layers))
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
        if tokens.dim() != 1:
            raise ValueError(
                f"TinyDecoder.forward: tokens must be 1-D [num_new_tokens], got shape {tuple(tokens.shape)}"
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

    def _check_past(self, past_kv: object) -> Optional[Sequence[Tuple[torch.Tensor, torch.Tensor]]]:
        if past_kv is None:
            return None
        if not isinstance(past_kv, (list, tuple)) or len(past_kv) != self.num_layers:
            got = len(past_kv) if isinstance(past_kv, (list, tuple)) else type(past_kv).__name__
            raise ValueError(
                f"TinyDecoder.forward: past_kv must be a list of {self.num_layers} (k_cache, v_cache) pairs, got {got}"
            )
        num_past = None
        for layer, pair in enumerate(past_kv):
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise ValueError(f"TinyDecoder.forward: past_kv[{layer}] must be a (k_cache, v_cache) pair")
            for name, tensor in zip(("k_cache", "v_cache"), pair):
                if type(tensor) is not torch.Tensor:
                    raise TypeError(f"TinyDecoder.forward: past_kv[{layer}] {name} must be a torch.Tensor")
                expected = (self.num_heads, self.head_dim)
                if tensor.dim() != 3 or tuple(tensor.shape[1:]) != expected:
                    raise ValueError(
                        f"TinyDecoder.forward: past_kv[{layer}] {name} must have shape [num_tokens, "
                        f"{self.num_heads}, {self.head_dim}], got {tuple(tensor.shape)}"
                    )
                if tensor.dtype != torch.float32 or tensor.device != self.device:
                    raise ValueError(
                        f"TinyDecoder.forward: past_kv[{layer}] {name} must be float32 on {self.device}, "
                        f"got {tensor.dtype} on {tensor.device}"
                    )
                if num_past is None:
                    num_past = tensor.shape[0]
                elif tensor.shape[0] != num_past:
                    raise ValueError(
                        f"TinyDecoder.forward: every past_kv tensor must cover the same number of tokens; "
                        f"past_kv[{layer}] {name} covers {tensor.shape[0]}, earlier ones {num_past}"
                    )
        return past_kv

    def forward(  # type: ignore[override]
        self, tokens: torch.Tensor, past_kv: Optional[KV] = None
    ) -> Tuple[torch.Tensor, KV]:
        """Run the new ``tokens`` after the prefix whose K/V is ``past_kv``.

        Args:
            tokens: 1-D integer tensor ``[num_new_tokens]`` (at least one) of ids in
                ``[0, vocab_size)``, on the model's device.
            past_kv: None (no prefix), or the ``kv`` of an earlier call (or a prefix of it, cut
                along dim 0): a list of ``num_layers`` pairs ``(k_cache, v_cache)``, each float32
                ``[num_past_tokens, num_heads, head_dim]`` on the model's device. The new tokens
                take positions ``num_past_tokens, num_past_tokens + 1, ...`` and attend to the
                whole past plus the new tokens up to themselves (causal mask).

        Returns:
            ``(logits, kv)``: logits float32 ``[num_new_tokens, vocab_size]`` (the scores of the
            token after each new position); kv a new list of ``num_layers`` pairs, each float32
            ``[num_past_tokens + num_new_tokens, num_heads, head_dim]``, covering past and new
            tokens. ``past_kv`` is not changed.

        Raises:
            TypeError: tokens not an integer torch.Tensor, or a past tensor not a torch.Tensor.
            ValueError: tokens empty, not 1-D, out of range or on another device; past_kv with
                the wrong number of layers, wrong shapes, dtype or device, or unequal lengths.

        Running a sequence in one call gives the same logits (up to float32 rounding, about
        1e-6) as running it in two calls with the first call's K/V passed on.
        """
        tokens = self._check_tokens(tokens)
        past = self._check_past(past_kv)
        num_past = 0 if past is None else past[0][0].shape[0]
        positions = torch.arange(num_past, num_past + tokens.shape[0], device=tokens.device)
        hidden = self.embedding(tokens) + sinusoidal_positions(positions, self.model_dim)
        kv: KV = []
        for layer, block in enumerate(self.blocks):
            hidden, pair = block(hidden, None if past is None else (past[layer][0], past[layer][1]))
            kv.append(pair)
        # The head is tied to the embedding and scaled by 1/sqrt(model_dim), so logits are O(1).
        logits = self.final_norm(hidden) @ self.embedding.weight.T / math.sqrt(self.model_dim)
        return logits, kv
