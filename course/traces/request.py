"""The request of a trace, what the replay functions accept as a trace, and its flat form.

Used in notebooks 03, 04, 05 and 06 (through ``course.traces``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Union

import numpy as np

MOONCAKE_TOKENS_PER_BLOCK = 512
"""Number of prompt tokens behind one Mooncake hash id."""


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


TOO_LARGE = ("a hash id does not fit in 64 signed bits, as the replay engine and libCacheSim store ids (map the "
             "trace's ids to smaller ints first: equal ids stay equal)")
"""The message for a hash id at or past 2**63 (or below -2**63)."""


def flatten(trace: TraceLike) -> np.ndarray:
    """Return every block reference of ``trace`` in order, as a 1-D numpy int64 array.

    Request by request, each request references its hash ids in order. An empty trace gives an
    empty array. Used in notebooks 03-06.
    """
    return flat_references(hash_id_lists(trace))


def flat_references(requests: Sequence[tuple[int, ...]]) -> np.ndarray:
    """Flatten already-validated hash id tuples into one int64 array (the replay engine's, through
    course.replay.reuse); ValueError for an id that int64 cannot hold."""
    total = sum(map(len, requests))
    try:
        return np.fromiter(itertools.chain.from_iterable(requests), dtype=np.int64, count=total)
    except OverflowError:
        raise ValueError(TOO_LARGE) from None
