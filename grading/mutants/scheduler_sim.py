"""Wrong and alternative answers for notebook 05 (see grading/mutants/__init__.py)."""

from grading.reference import Reference

ref = Reference("05_scheduler_sim")

ENTRY, SIM, TENSOR = "task5_1_CacheEntry", "task5_2_KVCacheSchedulerSim", "task5_3_TensorKVCacheScheduler"

_STALE_CHECK = "if entry is not None and entry.priority == priority and entry.last_used == last_used:"
_INPUT_CHECKS = '''        if not isinstance(prefix, str) or not prefix:
            raise ValueError(f"touch: prefix must be a non-empty str, got {prefix!r}")
        if bytes_ < 1 or bytes_ > self.capacity_bytes:
            raise ValueError(f"touch({prefix!r}, {bytes_}): bytes_ must be in [1, {self.capacity_bytes}]")
'''
_RESCORE = '''        if self.rescore:
            age = (self.time - self.last_used).clamp(min=0).to(torch.float64)
            scores = (self.hits.to(torch.float64) + 0.5 * (1.0 / (1.0 + age))
                      - 0.25 * self.bytes.to(torch.float64) / self.capacity_bytes)
            self.priority = torch.where(self.alive, scores, self.priority)
'''
_SELECTION = '''        inf = torch.full_like(self.priority, float("inf"))
        priority = torch.where(self.alive, self.priority, inf)
        tied = self.alive & (priority == priority.min())
        latest = torch.full_like(self.last_used, torch.iinfo(torch.int64).max)
        return int(torch.argmin(torch.where(tied, self.last_used, latest)))'''

WRONG = {
    ENTRY: {
        "prefix is compared too (no compare=False)": ref.edit(ENTRY, ("prefix: str = field(compare=False)", "prefix: str")),
        "no order=True (entries cannot be compared with <)": ref.edit(ENTRY, ("@dataclass(order=True)", "@dataclass")),
        "last_used before priority": ref.edit(
            ENTRY, ("    priority: float\n    last_used: int\n", "    last_used: int\n    priority: float\n")),
        "hits defaults to 1": ref.edit(
            ENTRY, ("hits: int = field(default=0, compare=False)", "hits: int = field(default=1, compare=False)")),
        "frozen (the scheduler cannot update it)": ref.edit(
            ENTRY, ("@dataclass(order=True)", "@dataclass(order=True, frozen=True)")),
        "hits is compared too": ref.edit(ENTRY, ("hits: int = field(default=0, compare=False)", "hits: int = 0")),
    },
    SIM: {
        "stale check on priority only": ref.edit(SIM, (_STALE_CHECK, "if entry is not None and entry.priority == priority:")),
        "priority negated in the heap (evicts the most valuable)": ref.edit(
            SIM, ("heapq.heappush(self.queue, (entry.priority,", "heapq.heappush(self.queue, (-entry.priority,"),
            (_STALE_CHECK, "if entry is not None and entry.priority == -priority and entry.last_used == last_used:")),
        "new entries with hits 0": ref.edit(
            SIM, ("CacheEntry(0.0, self.time, prefix, hits=1, bytes=bytes_)",
                  "CacheEntry(0.0, self.time, prefix, hits=0, bytes=bytes_)")),
        "snapshot ordered ascending": ref.edit(
            SIM, ("key=lambda e: (-e.priority, e.last_used, e.prefix)", "key=lambda e: (e.priority, e.last_used, e.prefix)")),
        "eviction before the capacity check of bytes_": ref.edit(
            SIM, ("        if bytes_ < 1 or bytes_ > self.capacity_bytes:\n",
                  "        if prefix not in self.entries:\n            self._evict_until_fit(bytes_)\n"
                  "        if bytes_ < 1 or bytes_ > self.capacity_bytes:\n"),
            ("        self._evict_until_fit(bytes_)\n        self.entries[prefix]", "        self.entries[prefix]")),
        "always evicts one entry on a miss (checks capacity after evicting)": ref.edit(
            SIM, ("        while self.entries and self.current_bytes + needed > self.capacity_bytes:\n",
                  "        first = True\n        while self.entries and (first or self.current_bytes + needed > self.capacity_bytes):\n"
                  "            first = False\n")),
        "missing input checks": ref.edit(SIM, (_INPUT_CHECKS, "")),
        "stale check on last_used only": ref.edit(
            SIM, (_STALE_CHECK, "if entry is not None and entry.last_used == last_used:")),
        "no fallback when the heap runs dry": ref.edit(
            SIM, ("            if victim is None:\n                victim = min(self.entries.values())\n", "")),
        "time advances before the input checks": ref.edit(
            SIM, ("        self.time += 1\n        entry = self.entries.get(prefix)", "        entry = self.entries.get(prefix)"),
            ("        if not isinstance(prefix, str) or not prefix:",
             "        self.time += 1\n        if not isinstance(prefix, str) or not prefix:")),
        "schedule returns the log itself": ref.edit(SIM, ("return list(self.log)", "return self.log")),
        "a hit takes the new size": ref.edit(
            SIM, ("            entry.hits += 1\n", "            entry.hits += 1\n            entry.bytes = bytes_\n")),
    },
    TENSOR: {
        "ties broken by slot, not by last_used": ref.edit(TENSOR, (_SELECTION, '''        inf = torch.full_like(self.priority, float("inf"))
        return int(torch.argmin(torch.where(self.alive, self.priority, inf)))''')),
        "dead slots not masked": ref.edit(
            TENSOR, ("tied = self.alive & (priority == priority.min())", "tied = self.priority == self.priority.min()")),
        "rescore ignored": ref.edit(TENSOR, (_RESCORE, "")),
        "priority in float32": ref.edit(
            TENSOR, ("self.priority = torch.zeros(**zeros, dtype=torch.float64)",
                     "self.priority = torch.zeros(**zeros, dtype=torch.float32)")),
        "no RuntimeError when every slot is live": ref.edit(
            TENSOR, ("            raise RuntimeError(f\"touch({prefix!r}, {bytes_}): all {self.max_entries} slots hold live "
                     "entries\")\n", "            pass\n")),
        "victim found by a Python loop over the slots": ref.edit(TENSOR, (_SELECTION, '''        best = None
        for i in range(self.max_entries):
            if bool(self.alive[i]):
                key = (float(self.priority[i]), int(self.last_used[i]))
                if best is None or key < best[0]:
                    best = (key, i)
        return best[1]''')),
        "rescore restricted to the slots with the fewest hits (dead slots count)": ref.edit(
            TENSOR, ("self.priority = torch.where(self.alive, scores, self.priority)",
                     "self.priority = torch.where(self.alive & (self.hits == self.hits.min()), scores, self.priority)")),
    },
}


ALTERNATIVES = {
    ENTRY: {
        # A different class altogether: the decorator and the fields give way to hand-written methods.
        "a hand-written class with functools.total_ordering": ref.edit(
            ENTRY, ("from dataclasses import dataclass, field", "import functools"),
            ("@dataclass(order=True)", "@functools.total_ordering"),
            ('''    priority: float
    last_used: int
    prefix: str = field(compare=False)
    hits: int = field(default=0, compare=False)
    bytes: int = field(default=0, compare=False)''', '''    def __init__(self, priority, last_used, prefix, hits=0, bytes=0):
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

    __hash__ = None''')),
        "a slotted dataclass": ref.edit(ENTRY, ("@dataclass(order=True)", "@dataclass(order=True, slots=True)")),
    },
    SIM: {
        "a sorted list (bisect) instead of heapq": ref.solve(
            SIM, before="import bisect",
            _refresh_queue="""
                entry = self.entries[prefix]
                entry.priority = self._score(entry.hits, entry.bytes, entry.last_used)
                bisect.insort(self.queue, (entry.priority, entry.last_used, prefix))
            """,
            _evict_until_fit="""
                while self.entries and self.current_bytes + needed > self.capacity_bytes:
                    victim = None
                    while self.queue:
                        priority, last_used, prefix = self.queue.pop(0)
                        entry = self.entries.get(prefix)
                        if entry is not None and entry.priority == priority and entry.last_used == last_used:
                            victim = entry
                            break
                    if victim is None:
                        victim = sorted(self.entries.values())[0]
                    del self.entries[victim.prefix]
                    self.current_bytes -= victim.bytes
                    self.log.append(f"evict:{victim.prefix}")
            """),
        "stale check by comparing whole tuples, fallback by key": ref.solve(
            SIM,
            __init__="""
                if not capacity_bytes >= 1:
                    raise ValueError(f"bad capacity {capacity_bytes}")
                self.capacity_bytes, self.current_bytes, self.time = capacity_bytes, 0, 0
                self.entries, self.queue, self.log = {}, [], []
            """,
            _score="""
                age = self.time - last_used
                recency = 1 / (1 + (age if age > 0 else 0))
                return hits + 0.5 * recency - 0.25 * size / self.capacity_bytes
            """,
            _refresh_queue="""
                entry = self.entries[prefix]
                entry.priority = self._score(entry.hits, entry.bytes, entry.last_used)
                heapq.heappush(self.queue, (entry.priority, entry.last_used, entry.prefix))
            """,
            _evict_until_fit="""
                def pop_live():
                    while self.queue:
                        item = heapq.heappop(self.queue)
                        entry = self.entries.get(item[2])
                        if entry is not None and (entry.priority, entry.last_used, entry.prefix) == item:
                            return entry
                    return min(self.entries.values(), key=lambda e: (e.priority, e.last_used))

                while len(self.entries) > 0 and self.current_bytes + needed > self.capacity_bytes:
                    entry = pop_live()
                    self.entries.pop(entry.prefix)
                    self.current_bytes -= entry.bytes
                    self.log.append(f"evict:{entry.prefix}")
            """,
            touch="""
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
                    self.entries[prefix] = CacheEntry(priority=0.0, last_used=self.time, prefix=prefix, hits=1,
                                                      bytes=bytes_)
                    self.current_bytes += bytes_
                    self._refresh_queue(prefix)
                    self.log.append(f"add:{prefix}")
            """,
            schedule="""
                for request in requests:
                    self.touch(*request)
                return self.log.copy()
            """,
            snapshot="""
                rows = [(-e.priority, e.last_used, e.prefix, e) for e in self.entries.values()]
                rows.sort(key=lambda r: r[:3])
                return [(e.prefix, e.bytes, round(e.priority, 4), e.hits) for *_, e in rows]
            """),
    },
    TENSOR: {
        "torch.sort-based victim (two stable sorts)": ref.solve(TENSOR, _victim=_RESCORE + """
        live = torch.nonzero(self.alive).flatten()
        by_time = live[torch.sort(self.last_used[live], stable=True).indices]
        by_priority = by_time[torch.sort(self.priority[by_time], stable=True).indices]
        return int(by_priority[0])
        """),
        "argsort by last_used, then the first minimal priority in that order": ref.solve(TENSOR, _victim=_RESCORE + """
        key_time = torch.where(self.alive, self.last_used, torch.full_like(self.last_used, 2**62))
        order = torch.argsort(key_time)
        pri = torch.where(self.alive, self.priority, torch.full_like(self.priority, float("inf")))[order]
        return int(order[torch.argmin(pri)])
        """),
    },
}
