"""Request traces for the prefix-cache experiments: synthetic generators and the Mooncake loader.

A trace is a list of requests. Each request carries the prefix block hashes of its prompt in
order (``hash_ids``); equal ids in different requests mean the same reusable prefix block. The
generators here are seeded and deterministic, so every student sees the same curves.

The package's modules: ``request`` (the Request, a trace's accepted forms, flatten),
``synthetic`` (the seeded generators and multi_tenant) and ``mooncake`` (the loader of
Mooncake's JSONL format and its offline stand-in). Import everything from ``course.traces``.

Used in notebooks 03, 04, 05 and 06.
"""

from __future__ import annotations

from course.traces.mooncake import MOONCAKE_TRACE_URL, load_mooncake, mooncake_or_synthetic
from course.traces.request import (
    MOONCAKE_TOKENS_PER_BLOCK,
    Request,
    Trace,
    TraceLike,
    flatten,
    hash_id_lists,
)
from course.traces.synthetic import chat_sessions, loop, multi_tenant, zipf_documents

__all__ = [
    "MOONCAKE_TOKENS_PER_BLOCK",
    "MOONCAKE_TRACE_URL",
    "Request",
    "Trace",
    "TraceLike",
    "chat_sessions",
    "flatten",
    "hash_id_lists",
    "load_mooncake",
    "loop",
    "mooncake_or_synthetic",
    "multi_tenant",
    "zipf_documents",
]
