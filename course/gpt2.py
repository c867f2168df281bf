"""A real model with an evicted KV cache: GPT-2 through Hugging Face ``transformers``.

Notebook 07's optional section prefills a long text, keeps ``budget`` of the prompt's cached positions per layer
and head with the keep functions the notebook passes in (the student's ``streaming_keep``, ``h2o_keep`` and
``snapkv_keep``; no solution lives here), and measures the perplexity of the next tokens on the pruned cache.
``tests/test_real_model.py`` runs the same functions offline, on a small random-weight GPT-2 and a tokenizer built
in the test: only the weights differ.

The code follows the ``transformers`` APIs that have changed across versions: the cache argument is ``cache``
(5.x) or ``past_key_values`` (4.x), a ``DynamicCache`` is built from per-layer ``(key, value)`` pairs, and its
tensors are read from ``cache.layers`` (or the older ``key_cache`` lists, or legacy tuples).

Used in notebook 07.
"""

from __future__ import annotations

import importlib.util
import inspect
import math
import os
import socket
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple, Union

import torch
import torch.nn.functional as F

__all__ = ["EvictionPerplexities", "eviction_perplexities", "keep_functions", "load_gpt2", "long_text"]

# keep(attention [batch, heads, n, n] of the prompt, budget) -> bool keep mask [batch, heads, n].
KeepFunction = Callable[[torch.Tensor, int], torch.Tensor]


def load_gpt2(name: str = "gpt2") -> Union[Tuple[Any, Any], str]:
    """Return ``(model, tokenizer)`` of a pretrained causal LM with eager attention, or a sentence that starts with
    "Skipped:" and says why not: ``transformers`` is not installed, the notebook runs headless or is being graded
    (``COURSE_AUTOGRADE=1``: no 500 MB download there), or huggingface.co cannot be reached."""
    if importlib.util.find_spec("transformers") is None:
        return ("Skipped: the transformers package is not installed (pip install transformers, then run this cell "
                "again).")
    if os.environ.get("COURSE_AUTOGRADE", "") == "1":
        return "Skipped: a headless or graded run (COURSE_AUTOGRADE=1) does not download GPT-2."
    try:
        socket.create_connection(("huggingface.co", 443), timeout=3).close()
    except OSError:
        return "Skipped: huggingface.co cannot be reached from here, so GPT-2's weights cannot be downloaded."
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(name)
    model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="eager").eval()
    return model, tokenizer


def long_text() -> str:
    """A long English text that every Python has: the documentation of a few standard modules."""
    import argparse
    import collections
    import json
    import subprocess
    import threading

    modules = (argparse, collections, json, subprocess, threading, inspect)
    return "\n\n".join(inspect.getdoc(module) or "" for module in modules)


@dataclass
class EvictionPerplexities:
    """What ``eviction_perplexities`` measured: the full cache's perplexity and one per (budget, policy)."""

    prompt_tokens: int
    scored_tokens: int
    full: float
    rows: List[Tuple[int, str, float]] = field(default_factory=list)

    def report(self) -> str:
        """One line for the full cache, then one per budget and policy."""
        lines = [f"no eviction: perplexity of the next {self.scored_tokens} tokens {self.full:.2f}"]
        lines += [f"budget {budget:>4} of {self.prompt_tokens}, {name:>12}: perplexity {value:.2f}"
                  for budget, name, value in self.rows]
        return "\n".join(lines)


def _cache_argument(model: Any) -> str:
    """The name under which this version's ``forward`` takes the cache: ``cache`` (5.x) or ``past_key_values``."""
    parameters = inspect.signature(model.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


def _layers(cache: Any) -> List[Tuple[torch.Tensor, torch.Tensor]]:
    """The (key, value) tensors [batch, heads, n, head_dim] of every layer of a cache, whatever its version."""
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    if hasattr(cache, "key_cache"):
        return list(zip(cache.key_cache, cache.value_cache))
    return [(key, value) for key, value, *_ in cache]


def _pruned(layers: Sequence[Tuple[torch.Tensor, torch.Tensor]], keeps: Sequence[torch.Tensor], budget: int) -> Any:
    """A DynamicCache holding, in every layer and head, the positions its keep mask keeps, in their order."""
    from transformers import DynamicCache

    pairs = []
    for (key, value), keep in zip(layers, keeps):
        kept = min(budget, key.shape[-2])
        if keep.dtype != torch.bool or tuple(keep.shape) != tuple(key.shape[:-1]):
            raise ValueError(f"a keep function returned {keep.dtype} of shape {tuple(keep.shape)}; expected a bool "
                             f"mask of shape {tuple(key.shape[:-1])}")
        if not bool((keep.sum(dim=-1) == kept).all()):
            raise ValueError(f"a keep function kept {keep.sum(dim=-1).flatten().tolist()} positions per head; "
                             f"expected min(budget, prompt) = {kept} in every head")
        index = keep.nonzero()[:, -1].reshape(*key.shape[:2], kept, 1).expand(-1, -1, -1, key.shape[-1])
        pairs.append((key.gather(2, index), value.gather(2, index)))
    return DynamicCache(pairs)


def _perplexity(logits: torch.Tensor, targets: torch.Tensor) -> float:
    return math.exp(float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))))


def eviction_perplexities(model: Any, tokenizer: Any, keeps: Mapping[str, KeepFunction],
                          budgets: Sequence[int] = (32, 64, 128, 256, 512), prompt_tokens: int = 512,
                          scored_tokens: int = 256, text: str = "") -> EvictionPerplexities:
    """Prefill ``prompt_tokens`` tokens of a text, evict to each budget with each keep function, and return the
    perplexity of the next ``scored_tokens`` tokens on each pruned cache, with the full cache's for comparison.

    The model needs eager attention (its prefill must return the attention probabilities). Each keep function gets
    one layer's prompt attention ``[1, heads, n, n]`` and the budget, and returns a bool mask ``[1, heads, n]`` that
    keeps ``min(budget, n)`` positions in every head. The scored tokens continue at position ``prompt_tokens`` (the
    kept keys and values already carry their own positions). Raises ValueError for a text too short, a model
    without attention probabilities, or a keep mask of the wrong shape or count.
    """
    ids = tokenizer(text or long_text(), return_tensors="pt").input_ids[:, :prompt_tokens + scored_tokens + 1]
    if ids.shape[1] < prompt_tokens + scored_tokens + 1:
        raise ValueError(f"the text has {ids.shape[1]} tokens; {prompt_tokens + scored_tokens + 1} are needed")
    prompt, rest, targets = ids[:, :prompt_tokens], ids[:, prompt_tokens:-1], ids[:, prompt_tokens + 1:]
    positions = torch.arange(prompt_tokens, prompt_tokens + scored_tokens)[None]
    argument = _cache_argument(model)
    with torch.no_grad():
        full = model(ids[:, :-1]).logits[:, prompt_tokens:]
        out = model(prompt, use_cache=True, output_attentions=True)
        cache = getattr(out, "cache", None)
        cache = out.past_key_values if cache is None else cache
        if not out.attentions or out.attentions[0] is None:
            raise ValueError("the model returned no attention probabilities: load it with attn_implementation='eager'")
        layers = _layers(cache)
        result = EvictionPerplexities(prompt_tokens, scored_tokens, _perplexity(full, targets))
        for budget in budgets:
            for name, keep in keeps.items():
                pruned = _pruned(layers, [keep(attention, budget) for attention in out.attentions], budget)
                mask = torch.ones(1, min(budget, prompt_tokens) + scored_tokens, dtype=torch.long)
                logits = model(rest, **{argument: pruned}, position_ids=positions, attention_mask=mask).logits
                result.rows.append((budget, name, _perplexity(logits, targets)))
    return result


def keep_functions(streaming_keep: Callable, h2o_keep: Callable, snapkv_keep: Callable) -> Dict[str, KeepFunction]:
    """The three policies of notebook 07's section, from the notebook's own keep functions: StreamingLLM with 4
    sinks, H2O with half the budget as its recent window, SnapKV with a window of up to 32 and kernel 5."""
    return {
        "StreamingLLM": lambda attention, budget: streaming_keep(attention.shape[-1], budget, 4).expand(
            attention.shape[:-1]),
        "H2O": lambda attention, budget: h2o_keep(attention, budget, budget // 2),
        "SnapKV": lambda attention, budget: snapkv_keep(attention, budget, min(32, budget), kernel_size=5),
    }
