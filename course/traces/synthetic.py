"""Seeded generators of synthetic traces, and the interleaving of one trace per tenant.

Every generator is deterministic for a given seed, so every student sees the same curves.
Used in notebooks 03, 04, 05 and 06 (through ``course.traces``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Union

import numpy as np

from course.traces.request import MOONCAKE_TOKENS_PER_BLOCK, Request, _check_count


def _requests(
    hash_lists: Iterable[Sequence[int]], tenant: str = "default"
) -> list[Request]:
    """Wrap hash id lists into Requests with timestamps 0, 1, 2, ... and token lengths."""
    return [
        Request(
            hash_ids=tuple(ids),
            timestamp=float(step),
            input_length=len(ids) * MOONCAKE_TOKENS_PER_BLOCK,
            output_length=0,
            tenant=tenant,
        )
        for step, ids in enumerate(hash_lists)
    ]


def zipf_documents(
    num_requests: int,
    num_documents: int,
    blocks_per_document: int,
    system_prompt_blocks: int,
    alpha: float,
    seed: int,
) -> list[Request]:
    """Generate document question answering: a shared system prompt, then one popular document.

    Document ``d`` (0-based) is picked with probability proportional to ``1 / (d + 1) ** alpha``
    (Zipf; ``alpha = 0`` is uniform). Request = the ``system_prompt_blocks`` shared blocks (ids
    ``0 .. system_prompt_blocks - 1``) followed by the document's ``blocks_per_document`` blocks
    (ids unique to the document). Deterministic for a given ``seed``. Used in notebooks 03-06.
    """
    num_requests = _check_count("num_requests", num_requests, 0)
    num_documents = _check_count("num_documents", num_documents, 1)
    blocks_per_document = _check_count("blocks_per_document", blocks_per_document, 1)
    system_prompt_blocks = _check_count("system_prompt_blocks", system_prompt_blocks, 0)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(alpha):
        raise TypeError(f"alpha must be a finite number, got {alpha!r}")
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0, got {alpha}")
    rng = np.random.default_rng(_check_count("seed", seed, 0))
    weights = 1.0 / np.arange(1, num_documents + 1, dtype=np.float64) ** alpha
    documents = rng.choice(num_documents, size=num_requests, p=weights / weights.sum())
    system = list(range(system_prompt_blocks))
    return _requests(
        system
        + list(range(
            system_prompt_blocks + int(d) * blocks_per_document,
            system_prompt_blocks + (int(d) + 1) * blocks_per_document,
        ))
        for d in documents
    )


def loop(num_requests: int, loop_blocks: int, blocks_per_request: int, seed: int) -> list[Request]:
    """Generate a cyclic scan over ``loop_blocks`` blocks: LRU's worst case when it exceeds the cache.

    Request ``i`` references the next ``blocks_per_request`` blocks of the cycle, continuing where
    request ``i - 1`` stopped. The seed only picks a random relabelling of the block ids; the access
    pattern is always the same cycle. Used in notebooks 03 and 04.
    """
    num_requests = _check_count("num_requests", num_requests, 0)
    loop_blocks = _check_count("loop_blocks", loop_blocks, 1)
    blocks_per_request = _check_count("blocks_per_request", blocks_per_request, 1)
    rng = np.random.default_rng(_check_count("seed", seed, 0))
    labels = rng.permutation(loop_blocks).tolist()
    return _requests(
        [labels[(i * blocks_per_request + j) % loop_blocks] for j in range(blocks_per_request)]
        for i in range(num_requests)
    )


def chat_sessions(
    num_sessions: int,
    turns: int,
    system_prompts: int,
    system_prompt_blocks: int,
    blocks_per_turn: int,
    seed: int,
) -> list[Request]:
    """Generate interleaved multi-turn chats that share a few system prompts.

    Each session picks one of ``system_prompts`` system prompts at random. Its turn ``k`` (0-based)
    is a request made of the system prompt's blocks, the blocks of all earlier turns and
    ``blocks_per_turn`` new blocks. Sessions are interleaved at random, but every session's turns
    keep their order. Deterministic for a given ``seed``. Used in notebooks 03-06.
    """
    num_sessions = _check_count("num_sessions", num_sessions, 0)
    turns = _check_count("turns", turns, 1)
    system_prompts = _check_count("system_prompts", system_prompts, 1)
    system_prompt_blocks = _check_count("system_prompt_blocks", system_prompt_blocks, 0)
    blocks_per_turn = _check_count("blocks_per_turn", blocks_per_turn, 1)
    rng = np.random.default_rng(_check_count("seed", seed, 0))
    prompt_of = rng.integers(0, system_prompts, size=num_sessions).tolist()
    order = np.repeat(np.arange(num_sessions), turns)
    rng.shuffle(order)
    # Ids below system_prompts * system_prompt_blocks are the system prompts; turns come after.
    first_turn_id = system_prompts * system_prompt_blocks
    history: list[list[int]] = [
        list(range(p * system_prompt_blocks, (p + 1) * system_prompt_blocks)) for p in prompt_of
    ]
    next_turn = [0] * num_sessions
    hash_lists = []
    for session in order.tolist():
        k = next_turn[session]
        start = first_turn_id + (session * turns + k) * blocks_per_turn
        history[session].extend(range(start, start + blocks_per_turn))
        next_turn[session] = k + 1
        hash_lists.append(list(history[session]))
    return _requests(hash_lists)


_GENERATORS = {"zipf_documents": zipf_documents, "loop": loop, "chat_sessions": chat_sessions}


def _tenant_trace(name: object, spec: object, index: int, seed: int) -> list[Request]:
    """Return the trace of tenant ``name``: ``spec`` itself, or the trace its generator spec makes.

    ``index`` is the tenant's place among the tenants; a spec without a seed gets
    ``seed * 1000 + index``.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"tenant names must be non-empty str, got {name!r}")
    if isinstance(spec, Mapping):
        kwargs = dict(spec)
        kind = kwargs.pop("kind", None)
        if kind not in _GENERATORS:
            raise ValueError(
                f"tenant {name!r}: 'kind' must be one of {sorted(_GENERATORS)}, got {kind!r}"
            )
        kwargs.setdefault("seed", seed * 1000 + index)
        try:
            return _GENERATORS[kind](**kwargs)
        except TypeError as exc:
            raise TypeError(f"tenant {name!r}: bad arguments for {kind}: {exc}") from None
    if isinstance(spec, Sequence) and all(isinstance(r, Request) for r in spec):
        return list(spec)
    raise TypeError(
        f"tenant {name!r}: expected a list of Requests or a generator spec dict"
    )


def _disjoint_ids(traces: list[tuple[str, list[Request]]]) -> list[list[tuple[int, ...]]]:
    """Return every tenant's hash ids, shifted past the largest id of the tenants before it.

    So no block is shared by two tenants. Raises ValueError for a negative id.
    """
    offset = 0
    shifted: list[list[tuple[int, ...]]] = []
    for name, trace in traces:
        ids = [r.hash_ids for r in trace]
        lowest = min((min(h) for h in ids if h), default=0)
        if lowest < 0:
            raise ValueError(f"tenant {name!r}: hash ids must be >= 0, got {lowest}")
        shifted.append([tuple(h + offset for h in r) for r in ids])
        offset += max((max(h) for h in ids if h), default=-1) + 1
    return shifted


def multi_tenant(
    tenants: Mapping[str, Union[Sequence[Request], Mapping[str, Any]]], seed: int
) -> list[Request]:
    """Interleave one trace per tenant into a single trace tagged with ``tenant``.

    Each value of ``tenants`` is either a trace (a list of Requests) or a dict naming a generator
    and its arguments, e.g. ``{"kind": "zipf_documents", "num_requests": 100, ...}`` (kinds:
    ``zipf_documents``, ``loop``, ``chat_sessions``; a missing ``seed`` is derived from ``seed``).
    Hash ids are shifted per tenant so that two tenants never share a block (ids must be >= 0).
    Requests are interleaved at random, keeping each tenant's order; timestamps become the
    position in the merged trace. Used in notebooks 05 and 06.
    """
    if not isinstance(tenants, Mapping) or not tenants:
        raise ValueError("tenants must be a non-empty dict mapping tenant name to a trace or spec")
    seed = _check_count("seed", seed, 0)
    traces = [(name, _tenant_trace(name, spec, index, seed))
              for index, (name, spec) in enumerate(tenants.items())]
    shifted = _disjoint_ids(traces)

    rng = np.random.default_rng(seed)
    order = np.repeat(np.arange(len(traces)), [len(t) for _, t in traces])
    rng.shuffle(order)
    position = [0] * len(traces)
    merged: list[Request] = []
    for step, t in enumerate(order.tolist()):
        name, trace = traces[t]
        original = trace[position[t]]
        merged.append(Request(
            hash_ids=shifted[t][position[t]],
            timestamp=float(step),
            input_length=original.input_length,
            output_length=original.output_length,
            tenant=name,
        ))
        position[t] += 1
    return merged
