"""What a replay measures (ReplayResult), the block records custom policies see, and shared checks.

Used in notebooks 03, 04, 05 and 06 (through ``course.replay``), and by ``course.tiers``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

_PROGRESS_THRESHOLD = 200_000


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


def iterate_requests(
    requests: list[tuple[int, ...]], enabled: bool, label: str
) -> Iterable[tuple[int, ...]]:
    """Return ``requests`` itself, or wrapped in a tqdm bar counted in requests when enabled."""
    if not enabled:
        return requests
    from tqdm.auto import tqdm

    return tqdm(requests, desc=f"replay {label}", unit="req", leave=False)


def check_capacity(capacity: object) -> int:
    """Return ``capacity`` as an int after checking it is a positive integer."""
    if isinstance(capacity, (bool, np.bool_)) or not isinstance(capacity, (int, np.integer)):
        raise TypeError(f"capacity must be an int number of blocks, got {type(capacity).__name__}")
    if capacity < 1:
        raise ValueError(f"capacity must be >= 1 block, got {capacity}")
    return int(capacity)


def check_tokens_per_block(tokens_per_block: object) -> int:
    """Return ``tokens_per_block`` as an int after checking it is a positive integer."""
    if isinstance(tokens_per_block, bool) or not isinstance(tokens_per_block, (int, np.integer)):
        raise TypeError(f"tokens_per_block must be an int, got {type(tokens_per_block).__name__}")
    if tokens_per_block < 1:
        raise ValueError(f"tokens_per_block must be >= 1, got {tokens_per_block}")
    return int(tokens_per_block)


def bundle_result(
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
