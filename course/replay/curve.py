"""LRU's hit ratio at every cache size from one pass over a trace, through stack distances.

Used in notebooks 03-06 (through ``course.replay``).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from course.replay.result import ReplayResult, check_capacity, check_tokens_per_block
from course.replay.reuse import NEVER, flat_references, previous_use_indices
from course.traces import TraceLike, hash_id_lists


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
    """Return each reference's LRU stack distance; first references get ``NEVER``.

    The stack distance of a reference at i to a block last referenced at p is the number of
    distinct blocks referenced in (p, i], so the reference hits in an LRU cache of capacity C
    exactly when its distance is <= C (LRU is a stack algorithm). Distinct blocks in (p, i) equal
    the i - p - 1 references there minus the repeats there; a repeat is a j in (p, i) whose
    previous reference prev[j] lies in (p, j), and since prev[j] < j < i those are exactly the
    j < i with prev[j] > p (prev[j] == p is impossible: only i references p's block after p).
    """
    n = flat.shape[0]
    prev = previous_use_indices(flat)
    distance = np.full(n, NEVER, dtype=np.int64)
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
    tokens_per_block = check_tokens_per_block(tokens_per_block)
    if isinstance(capacities, (int, np.integer)):
        raise TypeError("capacities must be an iterable of ints, e.g. [64, 128, 256]")
    wanted = [check_capacity(c) for c in capacities]
    requests = hash_id_lists(trace)
    flat = flat_references(requests)
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
