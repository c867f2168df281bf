"""Wrong and alternative answers for notebook 05 (see grading/mutants/__init__.py).

The class tasks are long, so most variants are made from one compact correct class by a single,
named edit (``_edit`` checks that the edited text is there, so a variant never silently equals
the base).
"""


def _edit(base: str, old: str, new: str) -> str:
    """Return ``base`` with the one occurrence of ``old`` replaced by ``new``."""
    if base.count(old) != 1:
        raise ValueError(f"mutant edit: expected exactly one occurrence of {old!r}")
    return base.replace(old, new)


# ---------------------------------------------------------------- Task 5.1
_ENTRY = '''
from dataclasses import dataclass, field


@dataclass(order=True)
class CacheEntry:
    """An entry."""
    priority: float
    last_used: int
    prefix: str = field(compare=False)
    hits: int = field(default=0, compare=False)
    bytes: int = field(default=0, compare=False)
'''

# ---------------------------------------------------------------- Task 5.2
_SIM = '''
import heapq


class KVCacheSchedulerSim:
    """The simulator."""

    def __init__(self, capacity_bytes=1024):
        if capacity_bytes < 1:
            raise ValueError("capacity_bytes must be >= 1")
        self.capacity_bytes = capacity_bytes
        self.current_bytes = 0
        self.time = 0
        self.entries = {}
        self.queue = []
        self.log = []

    def _score(self, hits, size, last_used):
        recency = 1 / (1 + max(self.time - last_used, 0))
        return hits + 0.5 * recency - 0.25 * size / self.capacity_bytes

    def _refresh_queue(self, prefix):
        entry = self.entries[prefix]
        entry.priority = self._score(entry.hits, entry.bytes, entry.last_used)
        heapq.heappush(self.queue, (entry.priority, entry.last_used, prefix))

    def _evict_until_fit(self, needed):
        while self.entries and self.current_bytes + needed > self.capacity_bytes:
            victim = None
            while self.queue:
                priority, last_used, prefix = heapq.heappop(self.queue)
                entry = self.entries.get(prefix)
                if entry is not None and entry.priority == priority and entry.last_used == last_used:
                    victim = entry
                    break
            if victim is None:
                victim = min(self.entries.values())
            del self.entries[victim.prefix]
            self.current_bytes -= victim.bytes
            self.log.append("evict:" + victim.prefix)

    def touch(self, prefix, bytes_):
        if not isinstance(prefix, str) or not prefix:
            raise ValueError("prefix must be a non-empty str")
        if bytes_ < 1 or bytes_ > self.capacity_bytes:
            raise ValueError("bytes_ out of range")
        self.time += 1
        entry = self.entries.get(prefix)
        if entry is not None:
            entry.hits += 1
            entry.last_used = self.time
            self._refresh_queue(prefix)
            self.log.append("reuse:" + prefix)
            return
        self._evict_until_fit(bytes_)
        self.entries[prefix] = CacheEntry(0.0, self.time, prefix, hits=1, bytes=bytes_)
        self.current_bytes += bytes_
        self._refresh_queue(prefix)
        self.log.append("add:" + prefix)

    def schedule(self, requests):
        for prefix, bytes_ in requests:
            self.touch(prefix, bytes_)
        return list(self.log)

    def snapshot(self):
        ordered = sorted(self.entries.values(), key=lambda e: (-e.priority, e.last_used, e.prefix))
        return [(e.prefix, e.bytes, round(e.priority, 4), e.hits) for e in ordered]
'''

_STALE_CHECK = "if entry is not None and entry.priority == priority and entry.last_used == last_used:"
_INPUT_CHECKS = '''        if not isinstance(prefix, str) or not prefix:
            raise ValueError("prefix must be a non-empty str")
        if bytes_ < 1 or bytes_ > self.capacity_bytes:
            raise ValueError("bytes_ out of range")
'''

# ---------------------------------------------------------------- Task 5.3
_TENSOR = '''
class TensorKVCacheScheduler:
    """The tensor scheduler."""

    def __init__(self, capacity_bytes, max_entries, device=None, rescore=False):
        if capacity_bytes < 1 or max_entries < 1:
            raise ValueError("capacity_bytes and max_entries must be >= 1")
        self.capacity_bytes = capacity_bytes
        self.max_entries = max_entries
        self.device = torch.device(device or "cpu")
        self.rescore = rescore
        self.current_bytes = 0
        self.time = 0
        self.log = []
        self.slots = {}
        self.names = [None] * max_entries
        self.hits = torch.zeros(max_entries, dtype=torch.int64, device=self.device)
        self.bytes = torch.zeros(max_entries, dtype=torch.int64, device=self.device)
        self.last_used = torch.zeros(max_entries, dtype=torch.int64, device=self.device)
        self.priority = torch.zeros(max_entries, dtype=torch.float64, device=self.device)
        self.alive = torch.zeros(max_entries, dtype=torch.bool, device=self.device)

    def _score_all(self):
        age = (self.time - self.last_used).clamp(min=0).to(torch.float64)
        return (self.hits.to(torch.float64) + 0.5 * (1.0 / (1.0 + age))
                - 0.25 * self.bytes.to(torch.float64) / self.capacity_bytes)

    def _victim(self):
        if self.rescore:
            self.priority = torch.where(self.alive, self._score_all(), self.priority)
        masked = torch.where(self.alive, self.priority, torch.full_like(self.priority, float("inf")))
        tied = self.alive & (masked == masked.min())
        big = torch.full_like(self.last_used, 2**62)
        return int(torch.argmin(torch.where(tied, self.last_used, big)))

    def touch(self, prefix, bytes_):
        if not isinstance(prefix, str) or not prefix:
            raise ValueError("prefix must be a non-empty str")
        if bytes_ < 1 or bytes_ > self.capacity_bytes:
            raise ValueError("bytes_ out of range")
        slot = self.slots.get(prefix)
        if slot is None and len(self.slots) == self.max_entries and self.current_bytes + bytes_ <= self.capacity_bytes:
            raise RuntimeError("no free slot")
        self.time += 1
        if slot is not None:
            hits = int(self.hits[slot]) + 1
            self.hits[slot] = hits
            self.last_used[slot] = self.time
            self.priority[slot] = hits + 0.5 * 1.0 - 0.25 * int(self.bytes[slot]) / self.capacity_bytes
            self.log.append("reuse:" + prefix)
            return
        while self.slots and self.current_bytes + bytes_ > self.capacity_bytes:
            victim = self._victim()
            name = self.names[victim]
            self.alive[victim] = False
            del self.slots[name]
            self.current_bytes -= int(self.bytes[victim])
            self.log.append("evict:" + name)
        slot = int(torch.nonzero(~self.alive)[0])
        self.slots[prefix] = slot
        self.names[slot] = prefix
        self.hits[slot] = 1
        self.bytes[slot] = bytes_
        self.last_used[slot] = self.time
        self.priority[slot] = 1 + 0.5 * 1.0 - 0.25 * bytes_ / self.capacity_bytes
        self.alive[slot] = True
        self.current_bytes += bytes_
        self.log.append("add:" + prefix)

    def schedule(self, requests):
        for prefix, bytes_ in requests:
            self.touch(prefix, bytes_)
        return list(self.log)

    def snapshot(self):
        p, b, h, t = (x.tolist() for x in (self.priority, self.bytes, self.hits, self.last_used))
        order = sorted(self.slots, key=lambda k: (-p[self.slots[k]], t[self.slots[k]], k))
        return [(k, b[self.slots[k]], round(p[self.slots[k]], 4), h[self.slots[k]]) for k in order]
'''

_VICTIM_SELECTION = '''        masked = torch.where(self.alive, self.priority, torch.full_like(self.priority, float("inf")))
        tied = self.alive & (masked == masked.min())
        big = torch.full_like(self.last_used, 2**62)
        return int(torch.argmin(torch.where(tied, self.last_used, big)))
'''


WRONG = {
    "task5_1_CacheEntry": {
        "prefix is compared too (no compare=False)": _edit(
            _ENTRY, "prefix: str = field(compare=False)", "prefix: str"),
        "no order=True (entries cannot be compared with <)": _edit(
            _ENTRY, "@dataclass(order=True)", "@dataclass"),
        "last_used before priority": _edit(
            _ENTRY, "    priority: float\n    last_used: int\n", "    last_used: int\n    priority: float\n"),
        "hits defaults to 1": _edit(
            _ENTRY, "hits: int = field(default=0, compare=False)", "hits: int = field(default=1, compare=False)"),
        "frozen (the scheduler cannot update it)": _edit(
            _ENTRY, "@dataclass(order=True)", "@dataclass(order=True, frozen=True)"),
        "hits is compared too": _edit(
            _ENTRY, "hits: int = field(default=0, compare=False)", "hits: int = 0"),
    },
    "task5_2_KVCacheSchedulerSim": {
        "stale check on priority only": _edit(
            _SIM, _STALE_CHECK, "if entry is not None and entry.priority == priority:"),
        "priority negated in the heap (evicts the most valuable)": _edit(
            _edit(_SIM, "heapq.heappush(self.queue, (entry.priority,", "heapq.heappush(self.queue, (-entry.priority,"),
            _STALE_CHECK, "if entry is not None and entry.priority == -priority and entry.last_used == last_used:"),
        "new entries with hits 0": _edit(
            _SIM, "CacheEntry(0.0, self.time, prefix, hits=1, bytes=bytes_)",
            "CacheEntry(0.0, self.time, prefix, hits=0, bytes=bytes_)"),
        "snapshot ordered ascending": _edit(
            _SIM, "key=lambda e: (-e.priority, e.last_used, e.prefix)", "key=lambda e: (e.priority, e.last_used, e.prefix)"),
        "eviction before the capacity check of bytes_": _edit(
            _edit(_SIM, _INPUT_CHECKS, '''        if not isinstance(prefix, str) or not prefix:
            raise ValueError("prefix must be a non-empty str")
        if prefix not in self.entries:
            self._evict_until_fit(bytes_)
        if bytes_ < 1 or bytes_ > self.capacity_bytes:
            raise ValueError("bytes_ out of range")
'''), "        self._evict_until_fit(bytes_)\n        self.entries[prefix]", "        self.entries[prefix]"),
        "always evicts one entry on a miss (checks capacity after evicting)": _edit(
            _SIM, "        while self.entries and self.current_bytes + needed > self.capacity_bytes:\n",
            "        first = True\n        while self.entries and (first or self.current_bytes + needed > self.capacity_bytes):\n"
            "            first = False\n"),
        "missing input checks": _edit(_SIM, _INPUT_CHECKS, ""),
        "stale check on last_used only": _edit(
            _SIM, _STALE_CHECK, "if entry is not None and entry.last_used == last_used:"),
        "no fallback when the heap runs dry": _edit(
            _SIM, "            if victim is None:\n                victim = min(self.entries.values())\n", ""),
        "time advances before the input checks": _edit(
            _edit(_SIM, "        self.time += 1\n        entry = self.entries.get(prefix)",
                  "        entry = self.entries.get(prefix)"),
            "        if not isinstance(prefix, str) or not prefix:", "        self.time += 1\n        if not isinstance(prefix, str) or not prefix:"),
        "schedule returns the log itself": _edit(_SIM, "return list(self.log)", "return self.log"),
        "a hit takes the new size": _edit(
            _SIM, "            entry.hits += 1\n", "            entry.hits += 1\n            entry.bytes = bytes_\n"),
    },
    "task5_3_TensorKVCacheScheduler": {
        "ties broken by slot, not by last_used": _edit(
            _TENSOR, _VICTIM_SELECTION,
            '''        masked = torch.where(self.alive, self.priority, torch.full_like(self.priority, float("inf")))
        return int(torch.argmin(masked))
'''),
        "dead slots not masked": _edit(
            _TENSOR, _VICTIM_SELECTION,
            '''        tied = self.priority == self.priority.min()
        big = torch.full_like(self.last_used, 2**62)
        return int(torch.argmin(torch.where(tied, self.last_used, big)))
'''),
        "rescore ignored": _edit(
            _TENSOR, "        if self.rescore:\n            self.priority = torch.where(self.alive, self._score_all(), self.priority)\n", ""),
        "priority in float32": _edit(
            _TENSOR, "self.priority = torch.zeros(max_entries, dtype=torch.float64, device=self.device)",
            "self.priority = torch.zeros(max_entries, dtype=torch.float32, device=self.device)"),
        "no RuntimeError when every slot is live": _edit(
            _TENSOR, "        if slot is None and len(self.slots) == self.max_entries and self.current_bytes + bytes_ <= self.capacity_bytes:\n"
            "            raise RuntimeError(\"no free slot\")\n", ""),
        "victim found by a Python loop over the slots": _edit(
            _TENSOR, _VICTIM_SELECTION,
            '''        best = None
        for i in range(self.max_entries):
            if bool(self.alive[i]):
                key = (float(self.priority[i]), int(self.last_used[i]))
                if best is None or key < best[0]:
                    best = (key, i)
        return best[1]
'''),
        "rescore restricted to the slots with the fewest hits (dead slots count)": _edit(
            _TENSOR, "            self.priority = torch.where(self.alive, self._score_all(), self.priority)\n",
            "            self.priority = torch.where(self.alive & (self.hits == self.hits.min()), self._score_all(), self.priority)\n"),
    },
}


ALTERNATIVES = {
    "task5_1_CacheEntry": {
        "a hand-written class with functools.total_ordering": '''
import functools


@functools.total_ordering
class CacheEntry:
    """An entry that compares by (priority, last_used)."""

    def __init__(self, priority, last_used, prefix, hits=0, bytes=0):
        self.priority = priority
        self.last_used = last_used
        self.prefix = prefix
        self.hits = hits
        self.bytes = bytes

    def _key(self):
        return (self.priority, self.last_used)

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()

    def __lt__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() < other._key()

    __hash__ = None

    def __repr__(self):
        return f"CacheEntry({self.priority!r}, {self.last_used!r}, {self.prefix!r}, {self.hits!r}, {self.bytes!r})"
''',
        "a slotted dataclass": '''
import dataclasses


@dataclasses.dataclass(order=True, slots=True)
class CacheEntry:
    """An entry with __slots__."""
    priority: float
    last_used: int
    prefix: str = dataclasses.field(compare=False, repr=True)
    hits: int = dataclasses.field(compare=False, default=0)
    bytes: int = dataclasses.field(compare=False, default=0)
''',
    },
    "task5_2_KVCacheSchedulerSim": {
        "a sorted list (bisect) instead of heapq": _edit(
            _edit(
                _edit(
                    _edit(_SIM, "import heapq\n", "import bisect\n"),
                    "heapq.heappush(self.queue, (entry.priority, entry.last_used, prefix))",
                    "bisect.insort(self.queue, (entry.priority, entry.last_used, prefix))"),
                "priority, last_used, prefix = heapq.heappop(self.queue)",
                "priority, last_used, prefix = self.queue.pop(0)"),
            "victim = min(self.entries.values())", "victim = sorted(self.entries.values())[0]"),
        "stale check by comparing whole tuples, fallback by key": '''
import heapq


class KVCacheSchedulerSim:
    """Same contract; stale items are found by comparing the whole heap item."""

    def __init__(self, capacity_bytes=1024):
        if not capacity_bytes >= 1:
            raise ValueError(f"bad capacity {capacity_bytes}")
        self.capacity_bytes, self.current_bytes, self.time = capacity_bytes, 0, 0
        self.entries, self.queue, self.log = {}, [], []

    def _score(self, hits, size, last_used):
        age = self.time - last_used
        recency = 1 / (1 + (age if age > 0 else 0))
        return hits + 0.5 * recency - 0.25 * size / self.capacity_bytes

    def _item(self, entry):
        return (entry.priority, entry.last_used, entry.prefix)

    def _refresh_queue(self, prefix):
        entry = self.entries[prefix]
        entry.priority = self._score(entry.hits, entry.bytes, entry.last_used)
        heapq.heappush(self.queue, self._item(entry))

    def _pop_live(self):
        while self.queue:
            item = heapq.heappop(self.queue)
            entry = self.entries.get(item[2])
            if entry is not None and self._item(entry) == item:
                return entry
        return min(self.entries.values(), key=lambda e: (e.priority, e.last_used))

    def _evict_until_fit(self, needed):
        while len(self.entries) > 0 and self.current_bytes + needed > self.capacity_bytes:
            entry = self._pop_live()
            self.entries.pop(entry.prefix)
            self.current_bytes -= entry.bytes
            self.log.append(f"evict:{entry.prefix}")

    def touch(self, prefix, bytes_):
        if type(prefix) is not str or len(prefix) == 0:
            raise ValueError(f"bad prefix {prefix!r}")
        if not 1 <= bytes_ <= self.capacity_bytes:
            raise ValueError(f"bad size {bytes_}")
        self.time += 1
        if prefix in self.entries:
            self.entries[prefix].hits += 1
            self.entries[prefix].last_used = self.time
            self._refresh_queue(prefix)
            self.log.append(f"reuse:{prefix}")
        else:
            self._evict_until_fit(bytes_)
            self.entries[prefix] = CacheEntry(priority=0.0, last_used=self.time, prefix=prefix, hits=1, bytes=bytes_)
            self.current_bytes += bytes_
            self._refresh_queue(prefix)
            self.log.append(f"add:{prefix}")

    def schedule(self, requests):
        for request in requests:
            self.touch(*request)
        return self.log.copy()

    def snapshot(self):
        rows = [(-e.priority, e.last_used, e.prefix, e) for e in self.entries.values()]
        rows.sort(key=lambda r: r[:3])
        return [(e.prefix, e.bytes, round(e.priority, 4), e.hits) for *_, e in rows]
''',
    },
    "task5_3_TensorKVCacheScheduler": {
        "torch.sort-based victim (two stable sorts)": _edit(
            _TENSOR, _VICTIM_SELECTION,
            '''        live = torch.nonzero(self.alive).flatten()
        by_time = live[torch.sort(self.last_used[live], stable=True).indices]
        by_priority = by_time[torch.sort(self.priority[by_time], stable=True).indices]
        return int(by_priority[0])
'''),
        "argsort by last_used, then the first minimal priority in that order": _edit(
            _TENSOR, _VICTIM_SELECTION,
            '''        key_time = torch.where(self.alive, self.last_used, torch.full_like(self.last_used, 2**62))
        order = torch.argsort(key_time)
        pri = torch.where(self.alive, self.priority, torch.full_like(self.priority, float("inf")))[order]
        return int(order[torch.argmin(pri)])
'''),
    },
}
