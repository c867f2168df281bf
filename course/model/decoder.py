"""`TinyDecoder`: a tiny decoder-only transformer whose forward pass accepts the K/V of a prefix.

Used in notebooks 06 and 07 (through ``course.model``, whose docstring states the shapes and
how positions work after an eviction).
"""

from __future__ import annotations

import math
from typing import List, Optional, Tuple, Union

import torch
from torch import nn

from course.model.inputs import Past, check_forward_arguments, check_positive_int, check_seed_and_positions
from course.model.positions import rotate, sinusoidal_positions

KV = List[Tuple[torch.Tensor, torch.Tensor]]
"""Per layer, the pair ``(k_cache, v_cache)``, each ``[num_tokens, num_heads, head_dim]``."""

Output = Union[Tuple[torch.Tensor, KV], Tuple[torch.Tensor, KV, List[torch.Tensor]]]
"""What `TinyDecoder.forward` returns: ``(logits, kv)``, or ``(logits, kv, attention)`` when asked."""


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
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.num_layers = check_positive_int("num_layers", num_layers)
        self.num_heads = check_positive_int("num_heads", num_heads)
        self.head_dim = check_positive_int("head_dim", head_dim)
        check_seed_and_positions(seed, positions, head_dim)
        self.seed = seed
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

    def forward(  # type: ignore[override]
        self, tokens: torch.Tensor, past_kv: Optional[KV] = None, *, position: Optional[int] = None,
        return_attention: bool = False,
    ) -> Output:
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
        tokens, past, start = check_forward_arguments(self, tokens, past_kv, position, return_attention)
        positions = torch.arange(start, start + tokens.shape[-1], device=tokens.device)
        hidden = self.embedding(tokens)
        if self.positions == "sinusoidal":
            hidden = hidden + sinusoidal_positions(positions, self.model_dim)
        hidden, kv, attention = self._run_blocks(hidden, past, positions, return_attention)
        # The head is tied to the embedding and scaled by 1/sqrt(model_dim), so logits are O(1).
        logits = self.final_norm(hidden) @ self.embedding.weight.T / math.sqrt(self.model_dim)
        return (logits, kv, attention) if return_attention else (logits, kv)

    def _run_blocks(
        self, hidden: torch.Tensor, past: Past, positions: torch.Tensor, return_attention: bool
    ) -> Tuple[torch.Tensor, KV, List[torch.Tensor]]:
        """Run every block in turn on ``hidden`` after its layer of ``past``.

        Returns the last block's hidden states, every layer's (past + new) K/V, and every
        layer's attention probabilities (an empty list unless ``return_attention``).
        """
        kv: KV = []
        attention: List[torch.Tensor] = []
        for layer, block in enumerate(self.blocks):
            layer_past = None if past is None else (past[layer][0], past[layer][1])
            hidden, pair, probabilities = block(hidden, layer_past, positions, return_attention)
            kv.append(pair)
            if return_attention:
                attention.append(probabilities)
        return hidden, kv, attention
