"""The replay loops of the built-in policies (LRU, FIFO, LFU, Belady's MIN) and of policy objects.

Used by ``course.replay.replay`` (notebooks 03-06).
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, Protocol

from course.replay.result import BlockRecord
from course.replay.reuse import NEVER


class VictimPolicy(Protocol):
    """Anything with ``select_victim(sequences, protected)`` returning a seq_id (notebook 02)."""

    def select_victim(self, sequences: dict[str, Any], protected: frozenset[str] = ...) -> Any:
        ...


# Each built-in loop below returns (hits, evictions, hits per request, leading hits per request).
# They work on tuples of Python ints and create no objects per reference, to stay fast.


def run_lru(requests: Iterable[tuple[int, ...]], capacity: int) -> tuple[int, int, list, list]:
    """Least recently used: an OrderedDict kept in reference order, oldest first."""
    cache: OrderedDict[int, None] = OrderedDict()
    touch = cache.move_to_end
    pop_oldest = cache.popitem
    evictions = 0
    per_request: list[int] = []
    per_request_prefix: list[int] = []
    for request in requests:
        hits = 0
        prefix = -1
        for block in request:
            if block in cache:
                touch(block)
                hits += 1
            else:
                if prefix < 0:
                    prefix = hits
                if len(cache) >= capacity:
                    pop_oldest(last=False)
                    evictions += 1
                cache[block] = None
        per_request.append(hits)
        per_request_prefix.append(hits if prefix < 0 else prefix)
    return sum(per_request), evictions, per_request, per_request_prefix


def run_fifo(requests: Iterable[tuple[int, ...]], capacity: int) -> tuple[int, int, list, list]:
    """First in, first out: a dict keeps insertion order and hits do not reorder it."""
    cache: OrderedDict[int, None] = OrderedDict()
    pop_oldest = cache.popitem
    evictions = 0
    per_request: list[int] = []
    per_request_prefix: list[int] = []
    for request in requests:
        hits = 0
        prefix = -1
        for block in request:
            if block in cache:
                hits += 1
            else:
                if prefix < 0:
                    prefix = hits
                if len(cache) >= capacity:
                    pop_oldest(last=False)
                    evictions += 1
                cache[block] = None
        per_request.append(hits)
        per_request_prefix.append(hits if prefix < 0 else prefix)
    return sum(per_request), evictions, per_request, per_request_prefix


def run_lfu(requests: Iterable[tuple[int, ...]], capacity: int) -> tuple[int, int, list, list]:
    """Least frequently used with O(1) frequency buckets.

    ``buckets[f]`` holds the cached blocks referenced ``f`` times since insertion, oldest last
    reference first, so the first block of the lowest non-empty bucket is the victim: the minimum
    of (use_count, last_access_step). Last access steps are distinct, so no further tie-break is
    ever needed.
    """
    count: dict[int, int] = {}
    buckets: dict[int, OrderedDict[int, None]] = {}
    lowest = 0
    evictions = 0
    per_request: list[int] = []
    per_request_prefix: list[int] = []
    for request in requests:
        hits = 0
        prefix = -1
        for block in request:
            f = count.get(block)
            if f is not None:
                hits += 1
                bucket = buckets[f]
                del bucket[block]
                if not bucket:
                    del buckets[f]
                    if lowest == f:
                        lowest = f + 1
                count[block] = f + 1
                upper = buckets.get(f + 1)
                if upper is None:
                    upper = buckets[f + 1] = OrderedDict()
                upper[block] = None
            else:
                if prefix < 0:
                    prefix = hits
                if len(count) >= capacity:
                    bucket = buckets[lowest]
                    victim, _ = bucket.popitem(last=False)
                    if not bucket:
                        del buckets[lowest]
                    del count[victim]
                    evictions += 1
                count[block] = 1
                ones = buckets.get(1)
                if ones is None:
                    ones = buckets[1] = OrderedDict()
                ones[block] = None
                lowest = 1
        per_request.append(hits)
        per_request_prefix.append(hits if prefix < 0 else prefix)
    return sum(per_request), evictions, per_request, per_request_prefix


def run_belady(
    requests: Iterable[tuple[int, ...]], capacity: int, flat: list[int], next_use: list[int]
) -> tuple[int, int, list, list]:
    """Belady's MIN: evict the cached block whose next use is farthest in the future.

    The max-heap holds the next use of cached blocks (negated, as ints); the block behind a next
    use ``t`` is ``flat[t]``, so no tuples are needed. Blocks that are never used again wait in
    ``dead`` and go first (any of them: they can never hit). An entry goes stale when its block is
    referenced, and stale entries are exactly those <= the current step, so they sink below every
    live entry and never reach the top. Every newly missed block is inserted (no bypass), like
    libCacheSim's Belady.
    """
    cached: set[int] = set()
    heap: list[int] = []
    dead: list[int] = []
    push, pop = heapq.heappush, heapq.heappop
    never = int(NEVER)
    step = 0
    evictions = 0
    per_request: list[int] = []
    per_request_prefix: list[int] = []
    for request in requests:
        hits = 0
        prefix = -1
        for block in request:
            if block in cached:
                hits += 1
            else:
                if prefix < 0:
                    prefix = hits
                if len(cached) >= capacity:
                    cached.remove(dead.pop() if dead else flat[-pop(heap)])
                    evictions += 1
                cached.add(block)
            upcoming = next_use[step]
            if upcoming == never:
                dead.append(block)
            else:
                push(heap, -upcoming)
            step += 1
        per_request.append(hits)
        per_request_prefix.append(hits if prefix < 0 else prefix)
    return sum(per_request), evictions, per_request, per_request_prefix


def run_policy_object(
    requests: Iterable[tuple[int, ...]], capacity: int, policy: VictimPolicy, tokens_per_block: int
) -> tuple[int, int, list, list]:
    """Replay with a policy object's ``select_victim(sequences, protected)``; O(n) per eviction.

    ``sequences`` maps seq_id (the hash id as a str) to a ``BlockRecord``. ``protected`` holds the
    seq_ids of the blocks the current request has referenced so far that are still cached; when
    they fill the whole cache (a request longer than the cache), nothing can be spared, so
    ``protected`` is empty for that eviction.
    """
    records: dict[str, BlockRecord] = {}
    name = type(policy).__name__
    step = 0
    evictions = 0
    per_request: list[int] = []
    per_request_prefix: list[int] = []
    for request in requests:
        hits = 0
        prefix = -1
        used: set[str] = set()
        for block in request:
            key = str(block)
            record = records.get(key)
            if record is not None:
                hits += 1
                record.last_access_step = step
                record.use_count += 1
            else:
                if prefix < 0:
                    prefix = hits
                if len(records) >= capacity:
                    protected = frozenset(used.intersection(records))
                    if len(protected) >= len(records):
                        protected = frozenset()
                    victim = policy.select_victim(records, protected)
                    if isinstance(victim, BlockRecord):
                        victim = victim.seq_id
                    if not isinstance(victim, str) or victim not in records:
                        raise ValueError(
                            f"{name}.select_victim returned {victim!r}, which is not the seq_id "
                            f"of a cached block (step {step}, {len(records)} blocks cached)"
                        )
                    if victim in protected:
                        raise ValueError(
                            f"{name}.select_victim returned {victim!r}, which is protected "
                            f"(step {step})"
                        )
                    del records[victim]
                    evictions += 1
                records[key] = BlockRecord(key, step, 1, [block], tokens_per_block)
            used.add(key)
            step += 1
        per_request.append(hits)
        per_request_prefix.append(hits if prefix < 0 else prefix)
    return sum(per_request), evictions, per_request, per_request_prefix
