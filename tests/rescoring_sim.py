"""Notebook 05's heap simulator made to rescore every entry before it evicts: one copy, shared.

tests/test_scheduler_property.py checks TensorKVCacheScheduler(rescore=True) against it, and
bench/bench_scheduler.py times it as the rescored baseline. The notebook keeps its own copy in its
experiment cell, because students read it there. The simulator is a reference solution that lives
only in the notebook, so the subclass is made from the class the caller loaded from it.
"""

from __future__ import annotations

import heapq


def make_rescoring_sim(heap_sim_class: type) -> type:
    """Return ``RescoringSim``, a subclass of notebook 05's ``KVCacheSchedulerSim`` passed in.

    Before it evicts, it gives every entry its current score and rebuilds the heap from them, so
    it makes the decisions that ``TensorKVCacheScheduler(rescore=True)`` must make.
    """

    class RescoringSim(heap_sim_class):
        """The heap simulator, rescoring every entry and rebuilding the heap before it evicts."""

        def _evict_until_fit(self, needed):
            if self.entries and self.current_bytes + needed > self.capacity_bytes:
                for entry in self.entries.values():
                    entry.priority = self._score(entry.hits, entry.bytes, entry.last_used)
                self.queue = [(e.priority, e.last_used, e.prefix) for e in self.entries.values()]
                heapq.heapify(self.queue)
            super()._evict_until_fit(needed)

    return RescoringSim
