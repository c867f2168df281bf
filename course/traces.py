"""Request traces for the prefix-cache experiments: synthetic generators and the Mooncake loader.

A trace is a list of requests. Each request carries the prefix block hashes of its prompt in
order (``hash_ids``); equal ids in different requests mean the same reusable prefix block. The
generators here are seeded and deterministic, so every student sees the same curves.

Used in notebooks 03, 04, 05 and 06.
"""

from __future__ import annotations

import itertools
import json
import math
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

__all__ = [
    "MOONCAKE_TOKENS_PER_BLOCK",
    "MOONCAKE_TRACE_URL",
    "Request",
    "Trace",
    "chat_sessions",
    "flatten",
    "hash_id_lists",
    "load_mooncake",
    "loop",
    "mooncake_or_synthetic",
    "multi_tenant",
    "zipf_documents",
]

MOONCAKE_TRACE_URL = (
    "https://raw.githubusercontent.com/kvcache-ai/Mooncake/main/"
    "FAST25-release/traces/synthetic_trace.jsonl"
)
"""Mooncake's published synthetic trace (FAST 2025, ``synthetic_trace.jsonl``): one JSON object per line."""

MOONCAKE_TOKENS_PER_BLOCK = 512
"""Number of prompt tokens behind one Mooncake hash id."""

_MOONCAKE_KEYS = ("timestamp", "input_length", "output_length", "hash_ids")


@dataclass(frozen=True)
class Request:
    """One request of a trace: its prefix block hashes and metadata.

    ``hash_ids`` are the prompt's prefix block hashes in order; ``timestamp`` is in the trace's
    unit (milliseconds for Mooncake); ``input_length`` and ``output_length`` count tokens;
    ``tenant`` names who sent the request. Used in notebooks 03-06.
    """

    hash_ids: tuple[int, ...]
    timestamp: float = 0.0
    input_length: int = 0
    output_length: int = 0
    tenant: str = "default"

    def __post_init__(self) -> None:
        # A list is accepted for convenience and stored as a tuple, so that requests stay hashable.
        if not isinstance(self.hash_ids, tuple):
            if isinstance(self.hash_ids, (str, bytes)) or not isinstance(self.hash_ids, Iterable):
                kind = type(self.hash_ids).__name__
                raise TypeError(f"Request.hash_ids must be a sequence of ints, got {kind}")
            object.__setattr__(self, "hash_ids", tuple(self.hash_ids))
        if not all(type(h) is int for h in self.hash_ids):
            if not all(_is_int(h) for h in self.hash_ids):
                raise TypeError("Request.hash_ids must contain only ints")
            # numpy integers become Python ints, which the replay loops handle fastest.
            object.__setattr__(self, "hash_ids", tuple(int(h) for h in self.hash_ids))
        if not isinstance(self.tenant, str):
            raise TypeError(f"Request.tenant must be a str, got {type(self.tenant).__name__}")
        for name in ("input_length", "output_length"):
            value = getattr(self, name)
            if not _is_int(value) or value < 0:
                raise ValueError(f"Request.{name} must be a non-negative int, got {value!r}")


Trace = list[Request]
"""A trace: requests in arrival order."""

TraceLike = Sequence[Union[Request, Sequence[int]]]
"""What the replay functions accept: Requests, or plain sequences of int hash ids."""


def _is_int(value: object) -> bool:
    """Return True for Python and numpy integers, False for bool and everything else."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_count(name: str, value: object, minimum: int) -> int:
    """Return ``value`` as an int after checking its type and lower bound."""
    if not _is_int(value):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def hash_id_lists(trace: TraceLike) -> list[tuple[int, ...]]:
    """Return the hash ids of every request of ``trace`` as tuples of Python ints.

    Accepts Requests or plain sequences of ints; raises TypeError for anything else.
    Used by ``course.replay`` (notebooks 03-06).
    """
    if isinstance(trace, (str, bytes, Request)) or not isinstance(trace, Sequence):
        raise TypeError(f"trace must be a list of requests, got {type(trace).__name__}")
    out: list[tuple[int, ...]] = []
    for index, request in enumerate(trace):
        if isinstance(request, Request):
            out.append(request.hash_ids)
            continue
        if isinstance(request, np.ndarray) and request.ndim == 1 and request.dtype.kind in "iu":
            out.append(tuple(request.tolist()))
            continue
        if isinstance(request, (str, bytes)) or not isinstance(request, Sequence):
            raise TypeError(
                f"trace[{index}] must be a Request or a sequence of int hash ids, "
                f"got {type(request).__name__}"
            )
        if not all(_is_int(h) for h in request):
            raise TypeError(f"trace[{index}] must contain only int hash ids")
        out.append(tuple(int(h) for h in request))
    return out


def flatten(trace: TraceLike) -> np.ndarray:
    """Return every block reference of ``trace`` in order, as a 1-D numpy int64 array.

    Request by request, each request references its hash ids in order. An empty trace gives an
    empty array. Used in notebooks 03-06.
    """
    lists = hash_id_lists(trace)
    total = sum(len(ids) for ids in lists)
    return np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=total)


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
    traces: list[tuple[str, list[Request]]] = []
    for index, (name, spec) in enumerate(tenants.items()):
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
                trace = _GENERATORS[kind](**kwargs)
            except TypeError as exc:
                raise TypeError(f"tenant {name!r}: bad arguments for {kind}: {exc}") from None
        elif isinstance(spec, Sequence) and all(isinstance(r, Request) for r in spec):
            trace = list(spec)
        else:
            raise TypeError(
                f"tenant {name!r}: expected a list of Requests or a generator spec dict"
            )
        traces.append((name, trace))

    # Shift each tenant's ids past the largest id used so far, so no block is shared by two tenants.
    offset = 0
    shifted: list[list[tuple[int, ...]]] = []
    for name, trace in traces:
        ids = [r.hash_ids for r in trace]
        lowest = min((min(h) for h in ids if h), default=0)
        if lowest < 0:
            raise ValueError(f"tenant {name!r}: hash ids must be >= 0, got {lowest}")
        shifted.append([tuple(h + offset for h in r) for r in ids])
        offset += max((max(h) for h in ids if h), default=-1) + 1

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


def _read_lines(path_or_url: str, timeout: float) -> Iterable[str]:
    """Return the text lines of a local file or of an http(s) URL."""
    if path_or_url.startswith(("http://", "https://")):
        try:
            with urllib.request.urlopen(path_or_url, timeout=timeout) as response:
                data = response.read()
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise ConnectionError(
                f"could not download the trace from {path_or_url}: {exc}"
            ) from exc
        return data.decode("utf-8").splitlines()
    with open(path_or_url, encoding="utf-8") as handle:
        return handle.read().splitlines()


def _parse_mooncake_line(line: str, where: str) -> Request:
    """Parse one JSONL line of a Mooncake trace; ``where`` names the line in error messages."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not valid JSON ({exc.msg})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(record).__name__}")
    missing = [key for key in _MOONCAKE_KEYS if key not in record]
    if missing:
        raise ValueError(f"{where}: missing key(s) {missing}")
    timestamp = record["timestamp"]
    if isinstance(timestamp, bool) or not isinstance(timestamp, (int, float)):
        raise ValueError(f"{where}: timestamp must be a number, got {timestamp!r}")
    for key in ("input_length", "output_length"):
        value = record[key]
        if not _is_int(value) or value < 0:
            raise ValueError(f"{where}: {key} must be a non-negative int, got {value!r}")
    hash_ids = record["hash_ids"]
    if not isinstance(hash_ids, list) or not all(_is_int(h) for h in hash_ids):
        raise ValueError(f"{where}: hash_ids must be a list of ints")
    return Request(
        hash_ids=tuple(hash_ids),
        timestamp=float(timestamp),
        input_length=record["input_length"],
        output_length=record["output_length"],
    )


def load_mooncake(
    path_or_url: str, limit: int | None = None, timeout: float = 30.0
) -> list[Request]:
    """Load a Mooncake-format JSONL trace from a local path or an http(s) URL.

    Each non-blank line is an object with ``timestamp``, ``input_length``, ``output_length`` and
    ``hash_ids`` (a list of ints). At most ``limit`` requests are returned (all when None).
    Raises ValueError naming the line number for a malformed line, ConnectionError when a
    download fails, and FileNotFoundError for a missing file. Used in notebooks 03-06.
    """
    if not isinstance(path_or_url, str):
        raise TypeError(f"path_or_url must be a str, got {type(path_or_url).__name__}")
    if limit is not None:
        limit = _check_count("limit", limit, 0)
    requests: list[Request] = []
    for number, line in enumerate(_read_lines(path_or_url, timeout), start=1):
        if limit is not None and len(requests) >= limit:
            break
        if line.strip():
            requests.append(_parse_mooncake_line(line, f"{path_or_url}, line {number}"))
    return requests


def mooncake_or_synthetic(
    limit: int | None = None, timeout: float = 5.0
) -> tuple[list[Request], str]:
    """Return Mooncake's published synthetic trace, or a stand-in generated here when it cannot be downloaded.

    Mooncake (FAST 2025) published ``synthetic_trace.jsonl``, a synthetic trace in its own format;
    the second value says whether that file or the stand-in came back (it starts with "Mooncake"
    for the published file and with "SYNTHETIC stand-in" for the generated one). The stand-in has
    the published trace's shape: 3,993
    requests (or ``limit``), about 30 blocks per request, with shared system prompts and
    multi-turn reuse (``chat_sessions`` mixed with ``zipf_documents``, seed 0). Used in
    notebooks 03-06.
    """
    try:
        trace = load_mooncake(MOONCAKE_TRACE_URL, limit=limit, timeout=timeout)
        return trace, (f"Mooncake's published synthetic trace ({len(trace)} requests) downloaded from "
                       f"{MOONCAKE_TRACE_URL}")
    except (ConnectionError, ValueError) as exc:
        reason = str(exc)
    count = 3993 if limit is None else _check_count("limit", limit, 0)
    trace = multi_tenant(
        {
            "chat": {"kind": "chat_sessions", "num_sessions": (count + 3) // 4, "turns": 2,
                     "system_prompts": 8, "system_prompt_blocks": 12, "blocks_per_turn": 8},
            "documents": {"kind": "zipf_documents", "num_requests": count // 2,
                          "num_documents": 2000, "blocks_per_document": 24,
                          "system_prompt_blocks": 4, "alpha": 0.9},
        },
        seed=0,
    )[:count]
    trace = [Request(r.hash_ids, r.timestamp, r.input_length, r.output_length) for r in trace]
    return trace, (
        f"SYNTHETIC stand-in ({len(trace)} requests) generated by course.traces in the Mooncake format, "
        f"not Mooncake's published synthetic trace: the download failed ({reason})"
    )
