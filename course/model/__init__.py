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

The package's modules: ``decoder`` (`TinyDecoder`), ``inputs`` (the checks of its arguments),
``positions`` (sinusoidal and rotary position encodings), ``prune`` (`prune_cache`) and
``checkpoint`` (saving, loading and the shipped trained weights). Import everything from
``course.model``.

Used in notebooks 06 and 07.
"""

from __future__ import annotations

from course.model.checkpoint import (
    RECALL_WEIGHTS,
    load_decoder,
    load_recall_decoder,
    recall_weights_path,
    save_decoder,
)
from course.model.decoder import KV, TinyDecoder
from course.model.positions import rotate, sinusoidal_positions
from course.model.prune import prune_cache

__all__ = [
    "KV", "RECALL_WEIGHTS", "TinyDecoder", "load_decoder", "load_recall_decoder", "prune_cache",
    "recall_weights_path", "rotate", "save_decoder", "sinusoidal_positions",
]
