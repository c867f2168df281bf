"""A trace as one flat array, and where each reference's block is used next or was used before.

Used by the replay engine (Belady's MIN, libCacheSim's Belady, the one-pass LRU curve).
"""

from __future__ import annotations

import numpy as np

from course.traces.request import flat_references

__all__ = ["NEVER", "flat_references", "next_use_indices", "previous_use_indices"]

NEVER = np.iinfo(np.int64).max
"""The next use of a reference whose block is never used again (int64 max, as libCacheSim expects)."""


def next_use_indices(flat: np.ndarray) -> np.ndarray:
    """Return, for each reference, the index of the next reference to the same block.

    References with no later use get ``NEVER`` (int64 max, which is also what libCacheSim
    expects for "never again"). Vectorized: a stable sort groups equal ids in trace order.
    """
    nxt = np.full(flat.shape[0], NEVER, dtype=np.int64)
    if flat.shape[0] > 1:
        order = np.argsort(flat, kind="stable")
        same = flat[order[1:]] == flat[order[:-1]]
        nxt[order[:-1][same]] = order[1:][same]
    return nxt


def previous_use_indices(flat: np.ndarray) -> np.ndarray:
    """Return, for each reference, the index of the previous reference to the same block, or -1."""
    prev = np.full(flat.shape[0], -1, dtype=np.int64)
    if flat.shape[0] > 1:
        order = np.argsort(flat, kind="stable")
        same = flat[order[1:]] == flat[order[:-1]]
        prev[order[1:][same]] = order[:-1][same]
    return prev
