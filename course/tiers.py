"""Replay drivers for the tiers and two-tier caches of notebook 08.

Notebook 08's students write a cache tier (an object with ``capacity``, ``in``, ``len``,
``hit(block)`` and ``insert(block)``) and a two-tier cache (an object with
``serve_request(hash_ids)`` and byte counters). The functions here only drive such objects over a
trace, in trace order, and collect what they report, per request, as tensors that the notebook's
cost model takes. They decide nothing that the students' classes decide.

Used in notebook 08.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from course.replay import ReplayResult, progress_enabled
from course.traces import TraceLike, hash_id_lists

__all__ = ["TwoTierResult", "replay_tier", "replay_two_tier"]


def _check_tokens_per_block(tokens_per_block: object) -> int:
    """Return ``tokens_per_block`` after checking that it is an int >= 1."""
    if type(tokens_per_block) is not int:
        raise TypeError(f"tokens_per_block must be an int, got {type(tokens_per_block).__name__}")
    if tokens_per_block < 1:
        raise ValueError(f"tokens_per_block must be >= 1, got {tokens_per_block}")
    return tokens_per_block


def _requests(trace: TraceLike, label: str, progress: bool | None) -> Iterable[tuple[int, ...]]:
    """The hash ids of every request, wrapped in a progress bar when ``progress_enabled`` says so."""
    requests = hash_id_lists(trace)
    if not progress_enabled(sum(map(len, requests)), progress):
        return requests
    from tqdm.auto import tqdm

    return tqdm(requests, desc=f"replay {label}", unit="req", leave=False)


def replay_tier(trace: TraceLike, tier: Any, tokens_per_block: int = 1,
                progress: bool | None = None) -> ReplayResult:
    """Replay ``trace`` through one tier object, as a single cache with no other tier behind it.

    Every request references its hash ids in order. A reference to a block that is ``in tier`` is
    a hit and calls ``tier.hit(block)``; any other reference calls ``tier.insert(block)``, which
    returns the block it evicted or None. This is the request stream a stand-alone cache sees, the
    one libCacheSim's simulators replay, so a tier's hits compare directly with
    ``course.replay.replay(trace, capacity, "lcs:NAME")``.

    Args:
        trace: a list of Requests or of sequences of int hash ids.
        tier: an object with ``capacity``, ``__contains__``, ``__len__``, ``hit`` and ``insert``;
            it is used as it is (pass a new one for a cold cache).
        tokens_per_block: only scales ``prefix_hit_tokens`` of the result (512 for Mooncake).
        progress: see ``course.replay.progress_enabled``.

    Returns:
        A ``course.replay.ReplayResult``: ``policy`` is the tier's class name, ``evictions``
        counts the inserts that returned a block, prefix hits count each request's leading hits.

    Raises:
        TypeError: when ``tier`` lacks one of the methods above.
        ValueError: when the tier ever holds more than ``capacity`` blocks (a broken tier).
    """
    tokens_per_block = _check_tokens_per_block(tokens_per_block)
    for name in ("hit", "insert", "__contains__", "__len__"):
        if not callable(getattr(tier, name, None)):
            raise TypeError(f"tier must have a {name} method; {type(tier).__name__} has none")
    capacity = getattr(tier, "capacity", None)
    if type(capacity) is not int or capacity < 1:
        raise TypeError(f"tier.capacity must be an int >= 1, got {capacity!r}")
    label = type(tier).__name__
    references = hits = evictions = prefix_blocks = 0
    request_hits: list[int] = []
    request_prefix: list[int] = []
    for request in _requests(trace, label, progress):
        found = 0
        leading = -1
        for block in request:
            if block in tier:
                tier.hit(block)
                found += 1
            else:
                if leading < 0:
                    leading = found
                if tier.insert(block) is not None:
                    evictions += 1
                if len(tier) > capacity:
                    raise ValueError(f"{label} holds {len(tier)} blocks after an insert; its capacity is {capacity}")
        references += len(request)
        hits += found
        leading = found if leading < 0 else leading
        prefix_blocks += leading
        request_hits.append(found)
        request_prefix.append(leading)
    return ReplayResult(policy=label, capacity=capacity, references=references, hits=hits, evictions=evictions,
                        prefix_hit_blocks=prefix_blocks, tokens_per_block=tokens_per_block,
                        request_hits=np.asarray(request_hits, dtype=np.int64),
                        request_prefix_hits=np.asarray(request_prefix, dtype=np.int64))


@dataclass
class TwoTierResult:
    """What a two-tier replay measured, per request (int64 CPU tensors, one entry per request).

    ``device_hits + host_hits + misses`` is each request's number of block references.
    ``bytes_to_host`` and ``bytes_to_device`` are what the cache's own counters grew by during the
    replay. Used in notebook 08.
    """

    device_hits: torch.Tensor
    host_hits: torch.Tensor
    misses: torch.Tensor
    tokens_per_block: int
    bytes_to_host: int
    bytes_to_device: int

    @property
    def references(self) -> int:
        """Block references in the whole trace."""
        return int(self.device_hits.sum() + self.host_hits.sum() + self.misses.sum())

    def _ratio(self, count: torch.Tensor) -> float:
        return int(count.sum()) / self.references if self.references else 0.0

    @property
    def device_hit_ratio(self) -> float:
        """References found in tier 1 (device memory), as a share of all references."""
        return self._ratio(self.device_hits)

    @property
    def host_hit_ratio(self) -> float:
        """References found in tier 2 only (host memory), as a share of all references."""
        return self._ratio(self.host_hits)

    @property
    def hit_ratio(self) -> float:
        """References found in either tier, as a share of all references."""
        return self._ratio(self.device_hits + self.host_hits)

    @property
    def recomputed_tokens(self) -> torch.Tensor:
        """Tokens each request recomputes: its misses times ``tokens_per_block``."""
        return self.misses * self.tokens_per_block

    @property
    def loaded_tokens(self) -> torch.Tensor:
        """Tokens each request loads from tier 2: its host hits times ``tokens_per_block``."""
        return self.host_hits * self.tokens_per_block


def _counter(cache: Any, name: str) -> int:
    value = getattr(cache, name, None)
    if type(value) is not int:
        raise TypeError(f"cache.{name} must be an int, got {type(value).__name__}")
    return value


def replay_two_tier(trace: TraceLike, cache: Any, tokens_per_block: int = 1,
                    progress: bool | None = None) -> TwoTierResult:
    """Serve every request of ``trace`` in order with ``cache.serve_request(hash_ids)``.

    Args:
        trace: a list of Requests or of sequences of int hash ids.
        cache: an object with ``serve_request(list of hash ids) -> (device_hits, host_hits,
            misses)`` and int attributes ``bytes_to_host`` and ``bytes_to_device``; it is used as
            it is (pass a new one for a cold cache).
        tokens_per_block: tokens behind one block (512 for Mooncake); scales the token counts.
        progress: see ``course.replay.progress_enabled``.

    Returns:
        A TwoTierResult with each request's three counts.

    Raises:
        TypeError: when ``cache`` lacks ``serve_request`` or a counter, or ``serve_request``
            returns something other than a tuple of three ints.
        ValueError: when the three counts are negative or do not add up to the request's length.
    """
    tokens_per_block = _check_tokens_per_block(tokens_per_block)
    if not callable(getattr(cache, "serve_request", None)):
        raise TypeError(f"cache must have a serve_request method; {type(cache).__name__} has none")
    to_host, to_device = _counter(cache, "bytes_to_host"), _counter(cache, "bytes_to_device")
    rows: list[tuple[int, int, int]] = []
    for index, request in enumerate(_requests(trace, type(cache).__name__, progress)):
        counts = cache.serve_request(list(request))
        if type(counts) is not tuple or len(counts) != 3 or any(type(c) is not int for c in counts):
            raise TypeError(f"serve_request returned {counts!r} for request {index}; expected a tuple of three ints "
                            "(device_hits, host_hits, misses)")
        if min(counts) < 0 or sum(counts) != len(request):
            raise ValueError(f"serve_request returned {counts} for request {index} of {len(request)} blocks; "
                             "the three counts must be >= 0 and add up to the request's length")
        rows.append(counts)
    table = torch.tensor(rows, dtype=torch.int64).reshape(-1, 3)
    return TwoTierResult(device_hits=table[:, 0].clone(), host_hits=table[:, 1].clone(), misses=table[:, 2].clone(),
                         tokens_per_block=tokens_per_block,
                         bytes_to_host=_counter(cache, "bytes_to_host") - to_host,
                         bytes_to_device=_counter(cache, "bytes_to_device") - to_device)
