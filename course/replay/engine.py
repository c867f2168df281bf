"""The replay entry point: checks its arguments and runs the loop of the policy asked for.

Used in notebooks 03, 04, 05 and 06 (through ``course.replay``).
"""

from __future__ import annotations

from typing import Union

from course.replay.libcachesim_bridge import libcachesim_replay
from course.replay.policies import VictimPolicy, run_belady, run_fifo, run_lfu, run_lru, run_policy_object
from course.replay.result import (
    ReplayResult,
    bundle_result,
    check_capacity,
    check_tokens_per_block,
    iterate_requests,
    progress_enabled,
)
from course.replay.reuse import flat_references, next_use_indices
from course.traces import TraceLike, hash_id_lists

BUILTIN_POLICIES = ("lru", "lfu", "fifo", "belady")
"""Policy names that ``replay`` implements itself."""

PolicyLike = Union[str, VictimPolicy]
"""A policy name or a policy object."""

_SIMPLE_LOOPS = {"lru": run_lru, "fifo": run_fifo, "lfu": run_lfu}
"""The built-in policies whose loop needs nothing but the requests and the capacity."""


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
    capacity = check_capacity(capacity)
    tokens_per_block = check_tokens_per_block(tokens_per_block)
    requests = hash_id_lists(trace)
    if isinstance(policy, str) and policy.startswith("lcs:"):
        return libcachesim_replay(requests, capacity, policy[4:], tokens_per_block)
    label = _policy_label(policy)
    references = sum(map(len, requests))
    wrapped = iterate_requests(requests, progress_enabled(references, progress), label)
    kind = policy if isinstance(policy, str) else None  # A policy object may be unhashable.
    if kind in _SIMPLE_LOOPS:
        counts = _SIMPLE_LOOPS[kind](wrapped, capacity)
    elif kind == "belady":
        flat = flat_references(requests)
        counts = run_belady(wrapped, capacity, flat.tolist(), next_use_indices(flat).tolist())
    else:
        counts = run_policy_object(wrapped, capacity, policy, tokens_per_block)  # type: ignore[arg-type]
    return bundle_result(label, capacity, requests, *counts, tokens_per_block)


def _policy_label(policy: object) -> str:
    """Return the name a replay of ``policy`` reports, after checking that ``policy`` is usable."""
    if isinstance(policy, str):
        if policy not in BUILTIN_POLICIES:
            raise ValueError(
                f"unknown policy {policy!r}; use one of {list(BUILTIN_POLICIES)}, 'lcs:NAME' "
                "or an object with a select_victim(sequences, protected) method"
            )
        return policy
    if callable(getattr(policy, "select_victim", None)):
        return type(policy).__name__
    raise TypeError(
        f"policy must be a name or an object with select_victim(sequences, protected), "
        f"got {type(policy).__name__}"
    )
