"""Block-level replay of a request trace through a prefix cache of unit-size blocks.

Each request references its hash ids in order. A reference is a hit when the block is cached;
otherwise it is a miss and the block is inserted, evicting one block first when the cache already
holds ``capacity`` blocks. The engine has fast built-in LRU, LFU, FIFO and Belady's MIN, a bridge
to libCacheSim's policies (``"lcs:NAME"``), and accepts any policy object with a
``select_victim(sequences, protected)`` method, such as the classes students write in notebook 02.

``lru_hit_ratio_curve`` gives LRU's result at every cache size from one pass over the trace.

The package's modules: ``engine`` (``replay``), ``policies`` (the loop of each built-in policy
and of policy objects), ``libcachesim_bridge``, ``curve`` (the one-pass LRU curve), ``result``
(what a replay measures) and ``reuse`` (next and previous uses of a block). Import everything
from ``course.replay``.

Used in notebooks 03, 04, 05 and 06.
"""

from __future__ import annotations

from course.replay.curve import lru_hit_ratio_curve
from course.replay.engine import BUILTIN_POLICIES, PolicyLike, replay
from course.replay.libcachesim_bridge import LIBCACHESIM_POLICIES, libcachesim_replay
from course.replay.policies import VictimPolicy
from course.replay.result import BlockRecord, ReplayResult, progress_enabled

__all__ = [
    "BUILTIN_POLICIES",
    "LIBCACHESIM_POLICIES",
    "BlockRecord",
    "PolicyLike",
    "ReplayResult",
    "VictimPolicy",
    "libcachesim_replay",
    "lru_hit_ratio_curve",
    "progress_enabled",
    "replay",
]
