"""Replays through libCacheSim's policies (``"lcs:NAME"``), one unit-size object per block.

Used by ``course.replay.replay(trace, capacity, "lcs:NAME")`` (notebooks 03-06) and the benchmark.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from course.replay.result import ReplayResult, bundle_result, check_capacity, check_tokens_per_block
from course.replay.reuse import flat_references, next_use_indices
from course.traces import TraceLike, hash_id_lists
from course.traces.request import TOO_LARGE

LIBCACHESIM_POLICIES: dict[str, int] = {
    "LRU": 1, "FIFO": 1, "LFU": 1, "ARC": 1, "Clock": 1, "Sieve": 1, "TwoQ": 1, "LIRS": 1,
    "SLRU": 1, "LeCaR": 1, "LHD": 1, "Random": 1, "LRUK": 1, "MQ": 1, "Belady": 1,
    "S3FIFO": 10, "WTinyLFU": 10,
}
"""libCacheSim policies usable as ``"lcs:NAME"``, mapped to the smallest capacity they accept.

libCacheSim aborts the whole Python process (a C ``abort``) on a configuration it rejects, for
example S3FIFO with a small FIFO of 0 bytes when the capacity is below 10. Checking the capacity
here turns that crash into a ValueError. Policies not listed were not checked and are refused.
"""


def _lcs_class(name: str) -> Any:
    """Return libCacheSim's cache class called ``name``, importing the package lazily."""
    if name not in LIBCACHESIM_POLICIES:
        raise ValueError(
            f"unknown libCacheSim policy {name!r}; supported: {sorted(LIBCACHESIM_POLICIES)}"
        )
    try:
        import libcachesim
    except ImportError as exc:
        raise ImportError(
            "libCacheSim policies need the 'libcachesim' package: pip install libcachesim"
        ) from exc
    return getattr(libcachesim, name)


def _libcachesim_loop(
    requests: Sequence[tuple[int, ...]], capacity: int, name: str, next_use: list[int] | None
) -> tuple[int, int, list, list]:
    """Drive a libCacheSim cache one request at a time with unit-size objects."""
    import libcachesim

    cache = _lcs_class(name)(cache_size=capacity)
    make_request = libcachesim.Request
    get = cache.get
    step = 0
    per_request: list[int] = []
    per_request_prefix: list[int] = []
    for request in requests:
        hits = 0
        prefix = -1
        for block in request:
            query = make_request(obj_size=1, obj_id=block, clock_time=step)
            if next_use is not None:
                query.next_access_vtime = next_use[step]
            step += 1
            if get(query):
                hits += 1
            elif prefix < 0:
                prefix = hits
        per_request.append(hits)
        per_request_prefix.append(hits if prefix < 0 else prefix)
    hits = sum(per_request)
    # libCacheSim does not report evictions; with unit sizes every miss past the first
    # ``capacity`` insertions evicts exactly one block.
    return hits, max(0, step - hits - capacity), per_request, per_request_prefix


def libcachesim_replay(
    trace: TraceLike, capacity: int, name: str, tokens_per_block: int = 1
) -> ReplayResult:
    """Replay ``trace`` through libCacheSim's policy ``name`` (e.g. "ARC", "S3FIFO", "Sieve").

    Every block is one object of size 1 and the cache size is ``capacity`` (so bytes = blocks).
    For "Belady" the next access of every reference is computed here and passed along, with int64
    max meaning "never again". Object ids must be non-negative. Raises ValueError for an unknown
    name or a capacity the policy rejects, ImportError when libcachesim is missing. Used by
    ``replay(trace, capacity, "lcs:NAME")`` in notebooks 03-06.
    """
    capacity = check_capacity(capacity)
    tokens_per_block = check_tokens_per_block(tokens_per_block)
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    _lcs_class(name)
    if capacity < LIBCACHESIM_POLICIES[name]:
        raise ValueError(
            f"libCacheSim's {name} needs capacity >= {LIBCACHESIM_POLICIES[name]} blocks "
            f"(it aborts the process otherwise), got {capacity}"
        )
    requests = hash_id_lists(trace)
    if any(block < 0 for request in requests for block in request):
        raise ValueError("libCacheSim needs non-negative hash ids")
    if any(block >= 2**63 for request in requests for block in request):
        raise ValueError(TOO_LARGE)
    next_use = None
    if name == "Belady":
        next_use = next_use_indices(flat_references(requests)).tolist()
    hits, evictions, per_request, per_prefix = _libcachesim_loop(requests, capacity, name, next_use)
    return bundle_result(f"lcs:{name}", capacity, requests, hits, evictions, per_request, per_prefix,
                   tokens_per_block)
