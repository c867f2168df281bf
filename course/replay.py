"""Block-level replay of a request trace through a prefix cache of unit-size blocks.

Each request references its hash ids in order. A reference is a hit when the block is cached;
otherwise it is a miss and the block is inserted, evicting one block first when the cache already
holds ``capacity`` blocks. The engine has fast built-in LRU, LFU, FIFO and Belady's MIN, a bridge
to libCacheSim's policies (``"lcs:NAME"``), and accepts any policy object with a
``select_victim(sequences, protected)`` method, such as the classes students write in notebook 02.

``lru_hit_ratio_curve`` gives LRU's result at every cache size from one pass over the trace.

Used in notebooks 03, 04, 05 and 06.
"""

from __future__ import annotations

import heapq
import itertools
import os
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Union

import numpy as np

from course.traces import TraceLike, hash_id_lists

__all__ = [
    "BUILTIN_POLICIES",
    "LIBCACHESIM_POLICIES",
    "BlockRecord",
    "ReplayResult",
    "libcachesim_replay",
    "lru_hit_ratio_curve",
    "progress_enabled",
    "replay",
]

BUILTIN_POLICIES = ("lru", "lfu", "fifo", "belady")
"""Policy names that ``replay`` implements itself."""

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

_PROGRESS_THRESHOLD = 200_000
_NEVER = np.iinfo(np.int64).max


class VictimPolicy(Protocol):
    """Anything with ``select_victim(sequences, protected)`` returning a seq_id (notebook 02)."""

    def select_victim(self, sequences: dict[str, Any], protected: frozenset[str] = ...) -> Any:
        ...


PolicyLike = Union[str, VictimPolicy]


@dataclass
class BlockRecord:
    """One cached block, shaped like notebook 02's ``SequenceKVCache`` for custom policies.

    ``seq_id`` is the block's hash id as a str; ``last_access_step`` is the index of the block's
    latest reference in the flattened trace; ``use_count`` counts its references since it was
    inserted; ``block_table`` holds the hash id; ``num_tokens`` is ``tokens_per_block``.
    Used in notebooks 03 and 04.
    """

    seq_id: str
    last_access_step: int
    use_count: int
    block_table: list[int]
    num_tokens: int

    def num_blocks(self) -> int:
        """Return the number of KV blocks this record holds: always 1."""
        return 1


@dataclass
class ReplayResult:
    """What a replay measured.

    ``hits + misses == references``; ``prefix_hit_blocks`` sums, over requests, the number of
    leading blocks that hit (the part of a prompt a prefix cache can actually reuse);
    ``prefix_hit_tokens = prefix_hit_blocks * tokens_per_block``. ``request_hits`` and
    ``request_prefix_hits`` hold the same counts per request (int64 arrays), when computed.
    Used in notebooks 03-06.
    """

    policy: str
    capacity: int
    references: int
    hits: int
    evictions: int
    prefix_hit_blocks: int
    tokens_per_block: int = 1
    request_hits: np.ndarray | None = field(default=None, repr=False)
    request_prefix_hits: np.ndarray | None = field(default=None, repr=False)

    @property
    def misses(self) -> int:
        """Number of references that missed."""
        return self.references - self.hits

    @property
    def hit_ratio(self) -> float:
        """Hits divided by references; 0.0 for an empty trace."""
        return self.hits / self.references if self.references else 0.0

    @property
    def prefix_hit_tokens(self) -> int:
        """Prompt tokens served from the cache as a reusable prefix."""
        return self.prefix_hit_blocks * self.tokens_per_block

    @property
    def prefix_hit_ratio(self) -> float:
        """Leading hit blocks divided by references; 0.0 for an empty trace."""
        return self.prefix_hit_blocks / self.references if self.references else 0.0


def progress_enabled(num_references: int, progress: bool | None = None) -> bool:
    """Decide whether a replay of ``num_references`` references shows a progress bar.

    An explicit ``progress`` wins. ``None`` means automatic: a bar only for more than 200,000
    references, and never when the environment variable ``COURSE_AUTOGRADE`` is ``1`` (the
    grading command sets it, because output on stderr fails an nbgrader test cell).
    Used in notebooks 03-06.
    """
    if progress is not None:
        return bool(progress)
    if os.environ.get("COURSE_AUTOGRADE", "") == "1":
        return False
    return num_references > _PROGRESS_THRESHOLD


def _iterate(
    requests: list[tuple[int, ...]], enabled: bool, label: str
) -> Iterable[tuple[int, ...]]:
    """Return ``requests`` itself, or wrapped in a tqdm bar counted in requests when enabled."""
    if not enabled:
        return requests
    from tqdm.auto import tqdm

    return tqdm(requests, desc=f"replay {label}", unit="req", leave=False)


def _check_capacity(capacity: object) -> int:
    """Return ``capacity`` as an int after checking it is a positive integer."""
    if isinstance(capacity, (bool, np.bool_)) or not isinstance(capacity, (int, np.integer)):
        raise TypeError(f"capacity must be an int number of blocks, got {type(capacity).__name__}")
    if capacity < 1:
        raise ValueError(f"capacity must be >= 1 block, got {capacity}")
    return int(capacity)


def _check_tokens_per_block(tokens_per_block: object) -> int:
    """Return ``tokens_per_block`` as an int after checking it is a positive integer."""
    if isinstance(tokens_per_block, bool) or not isinstance(tokens_per_block, (int, np.integer)):
        raise TypeError(f"tokens_per_block must be an int, got {type(tokens_per_block).__name__}")
    if tokens_per_block < 1:
        raise ValueError(f"tokens_per_block must be >= 1, got {tokens_per_block}")
    return int(tokens_per_block)


# Each built-in loop below returns (hits, evictions, hits per request, leading hits per request).
# They work on tuples of Python ints and create no objects per reference, to stay fast.


def _lru(requests: Iterable[tuple[int, ...]], capacity: int) -> tuple[int, int, list, list]:
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


def _fifo(requests: Iterable[tuple[int, ...]], capacity: int) -> tuple[int, int, list, list]:
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


def _lfu(requests: Iterable[tuple[int, ...]], capacity: int) -> tuple[int, int, list, list]:
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


def _next_use(flat: np.ndarray) -> np.ndarray:
    """Return, for each reference, the index of the next reference to the same block.

    References with no later use get ``_NEVER`` (int64 max, which is also what libCacheSim
    expects for "never again"). Vectorized: a stable sort groups equal ids in trace order.
    """
    nxt = np.full(flat.shape[0], _NEVER, dtype=np.int64)
    if flat.shape[0] > 1:
        order = np.argsort(flat, kind="stable")
        same = flat[order[1:]] == flat[order[:-1]]
        nxt[order[:-1][same]] = order[1:][same]
    return nxt


def _previous_use(flat: np.ndarray) -> np.ndarray:
    """Return, for each reference, the index of the previous reference to the same block, or -1."""
    prev = np.full(flat.shape[0], -1, dtype=np.int64)
    if flat.shape[0] > 1:
        order = np.argsort(flat, kind="stable")
        same = flat[order[1:]] == flat[order[:-1]]
        prev[order[1:][same]] = order[:-1][same]
    return prev


def _belady(
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
    never = int(_NEVER)
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


def _custom(
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
    capacity = _check_capacity(capacity)
    tokens_per_block = _check_tokens_per_block(tokens_per_block)
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
    next_use = None
    if name == "Belady":
        next_use = _next_use(_flat(requests)).tolist()
    hits, evictions, per_request, per_prefix = _libcachesim_loop(requests, capacity, name, next_use)
    return _result(f"lcs:{name}", capacity, requests, hits, evictions, per_request, per_prefix,
                   tokens_per_block)


def _flat(requests: Sequence[tuple[int, ...]]) -> np.ndarray:
    """Flatten already-validated hash id tuples into one int64 array."""
    total = sum(map(len, requests))
    return np.fromiter(itertools.chain.from_iterable(requests), dtype=np.int64, count=total)


def _result(
    policy: str,
    capacity: int,
    requests: Sequence[tuple[int, ...]],
    hits: int,
    evictions: int,
    per_request: list[int],
    per_prefix: list[int],
    tokens_per_block: int,
) -> ReplayResult:
    """Bundle the counts of one replay into a ReplayResult."""
    request_prefix_hits = np.asarray(per_prefix, dtype=np.int64)
    return ReplayResult(
        policy=policy,
        capacity=capacity,
        references=sum(map(len, requests)),
        hits=hits,
        evictions=evictions,
        prefix_hit_blocks=int(request_prefix_hits.sum()),
        tokens_per_block=tokens_per_block,
        request_hits=np.asarray(per_request, dtype=np.int64),
        request_prefix_hits=request_prefix_hits,
    )


def replay(
    trace: TraceLike,
    capacity: int,
    policy: PolicyLike = "lru",
    tokens_per_block: int = 1,
    progress: bool | None = None,
) -> ReplayResult:
    """Replay ``trace`` through a cache of ``capacity`` unit-size blocks under ``policy``.

    ``policy`` is one of "lru", "lfu" (victim = min of use_count, last_access_step, block id;
    use_count resets on eviction), "fifo", "belady" (Belady's MIN, no bypass), "lcs:NAME" for a
    libCacheSim policy (see ``LIBCACHESIM_POLICIES``), or an object with
    ``select_victim(sequences, protected=frozenset())`` that receives a dict of ``BlockRecord``
    keyed by seq_id and returns the seq_id to evict. ``tokens_per_block`` only scales
    ``prefix_hit_tokens`` (512 for Mooncake). ``progress``: see ``progress_enabled``.
    Used in notebooks 03-06.
    """
    capacity = _check_capacity(capacity)
    tokens_per_block = _check_tokens_per_block(tokens_per_block)
    requests = hash_id_lists(trace)
    references = sum(map(len, requests))
    if isinstance(policy, str):
        if policy.startswith("lcs:"):
            return libcachesim_replay(requests, capacity, policy[4:], tokens_per_block)
        if policy not in BUILTIN_POLICIES:
            raise ValueError(
                f"unknown policy {policy!r}; use one of {list(BUILTIN_POLICIES)}, 'lcs:NAME' "
                "or an object with a select_victim(sequences, protected) method"
            )
        label = policy
    elif callable(getattr(policy, "select_victim", None)):
        label = type(policy).__name__
    else:
        raise TypeError(
            f"policy must be a name or an object with select_victim(sequences, protected), "
            f"got {type(policy).__name__}"
        )

    wrapped = _iterate(requests, progress_enabled(references, progress), label)
    kind = policy if isinstance(policy, str) else None
    if kind == "lru":
        counts = _lru(wrapped, capacity)
    elif kind == "fifo":
        counts = _fifo(wrapped, capacity)
    elif kind == "lfu":
        counts = _lfu(wrapped, capacity)
    elif kind == "belady":
        flat = _flat(requests)
        counts = _belady(wrapped, capacity, flat.tolist(), _next_use(flat).tolist())
    else:
        counts = _custom(wrapped, capacity, policy, tokens_per_block)  # type: ignore[arg-type]
    return _result(label, capacity, requests, *counts, tokens_per_block)


def _count_earlier_at_least(
    values: np.ndarray, ends: np.ndarray, thresholds: np.ndarray
) -> np.ndarray:
    """For each query q, count j < ends[q] with values[j] >= thresholds[q]; values are >= 0.

    This is an offline rank query answered with a wavelet matrix, one bit level at a time, all
    queries at once, in numpy. At each level (most significant bit first) the values are stably
    split into those with a 0 bit and those with a 1 bit; ``zeros[k]`` counts 0 bits among the
    first k values of the level. A query keeps the range [start, end) of positions that still
    agree with its threshold on the bits seen so far. Where the threshold's bit is 1, every value
    in range with a 0 bit is smaller, so it is counted as "less" and the range moves to the 1 part;
    where the bit is 0 the range moves to the 0 part. What remains at the end equals the
    threshold. It does what a Fenwick tree sweep does, in O(n log n) vectorized work.
    """
    n = values.shape[0]
    # int32 halves the memory traffic; positions and values stay below 2**31 for any trace that
    # fits in memory, which is checked rather than assumed.
    top = int(max(int(values.max(initial=0)), int(thresholds.max(initial=0)))).bit_length()
    if max(top, (n + 1).bit_length()) > 31:
        raise ValueError("trace too long for the one-pass curve (more than 2**31 references)")
    values = values.astype(np.int32)
    thresholds = thresholds.astype(np.int32)
    start = np.zeros(ends.shape[0], dtype=np.int32)
    end = ends.astype(np.int32)
    less = np.zeros(ends.shape[0], dtype=np.int32)
    zeros = np.zeros(n + 1, dtype=np.int32)
    for level in range(top - 1, -1, -1):
        bit = (values >> level) & 1
        np.cumsum(bit ^ 1, out=zeros[1:])
        total_zeros = zeros[n]
        one = ((thresholds >> level) & 1).astype(bool)
        zeros_start, zeros_end = zeros[start], zeros[end]
        less += np.where(one, zeros_end - zeros_start, 0)
        start = np.where(one, total_zeros + start - zeros_start, zeros_start)
        end = np.where(one, total_zeros + end - zeros_end, zeros_end)
        is_one = bit.astype(bool)
        values = np.concatenate((values[~is_one], values[is_one]))
    return ends - less.astype(np.int64)


def _stack_distances(flat: np.ndarray) -> np.ndarray:
    """Return each reference's LRU stack distance; first references get ``_NEVER``.

    The stack distance of a reference at i to a block last referenced at p is the number of
    distinct blocks referenced in (p, i], so the reference hits in an LRU cache of capacity C
    exactly when its distance is <= C (LRU is a stack algorithm). Distinct blocks in (p, i) equal
    the i - p - 1 references there minus the repeats there; a repeat is a j in (p, i) whose
    previous reference prev[j] lies in (p, j), and since prev[j] < j < i those are exactly the
    j < i with prev[j] > p (prev[j] == p is impossible: only i references p's block after p).
    """
    n = flat.shape[0]
    prev = _previous_use(flat)
    distance = np.full(n, _NEVER, dtype=np.int64)
    reuse = np.flatnonzero(prev >= 0)
    if reuse.size:
        p = prev[reuse]
        # Only re-references can be repeats, so the k-th re-reference only needs the k earlier
        # re-references: count those whose previous reference lies after p.
        earlier = np.arange(reuse.size, dtype=np.int64)
        repeats = _count_earlier_at_least(p, earlier, p + 1)
        distance[reuse] = (reuse - p - 1) - repeats + 1
    return distance


def lru_hit_ratio_curve(
    trace: TraceLike, capacities: Iterable[int], tokens_per_block: int = 1
) -> dict[int, ReplayResult]:
    """Return LRU's ReplayResult at every capacity in ``capacities`` from one pass over the trace.

    Exactly equal to ``replay(trace, c, "lru")`` for each capacity c in hits, misses, evictions and
    prefix hits (the per-request arrays are left as None), but computed from the stack distance
    of every reference: a hit at capacity c is a distance <= c, and a request's leading hits are
    those whose running maximum distance within the request is <= c. Used in notebooks 03-06.
    """
    tokens_per_block = _check_tokens_per_block(tokens_per_block)
    if isinstance(capacities, (int, np.integer)):
        raise TypeError("capacities must be an iterable of ints, e.g. [64, 128, 256]")
    wanted = [_check_capacity(c) for c in capacities]
    requests = hash_id_lists(trace)
    flat = _flat(requests)
    references = int(flat.shape[0])
    lengths = np.array([len(r) for r in requests], dtype=np.int64)
    distance = _stack_distances(flat)

    # The running maximum inside each request: offset each request's distances by a per-request
    # base larger than any distance, take one global running maximum, then remove the base.
    capped = np.minimum(distance, references + 1)
    base = np.repeat(np.arange(len(requests), dtype=np.int64) * (references + 2), lengths)
    running = np.maximum.accumulate(capped + base) - base if references else capped

    # Cumulative histograms answer "how many are <= capacity" for every capacity at once. Real
    # distances never exceed the number of references; first references were capped just above.
    hits_upto = np.cumsum(np.bincount(capped, minlength=references + 2))
    prefix_upto = np.cumsum(np.bincount(running, minlength=references + 2))
    results: dict[int, ReplayResult] = {}
    for capacity in wanted:
        index = min(capacity, references)
        hits = int(hits_upto[index])
        results[capacity] = ReplayResult(
            policy="lru",
            capacity=capacity,
            references=references,
            hits=hits,
            evictions=max(0, references - hits - capacity),
            prefix_hit_blocks=int(prefix_upto[index]),
            tokens_per_block=tokens_per_block,
        )
    return results
