"""Wrong and alternative answers for notebook 05 (see tests/answers/__init__.py)."""

from grading.authoring.reference import Reference

ref = Reference("05_scheduler_sim")

ENTRY, SIM, TENSOR = "task5_1_CacheEntry", "task5_2_KVCacheSchedulerSim", "task5_3_TensorKVCacheScheduler"

_STALE_CHECK = "if entry is not None and entry.priority == priority and entry.last_used == last_used:"
_INPUT_CHECKS = '''        if not isinstance(prefix, str) or not prefix:
            raise ValueError(f"touch: prefix must be a non-empty str, got {prefix!r}")
        if bytes_ < 1 or bytes_ > self.capacity_bytes:
            raise ValueError(f"touch({prefix!r}, {bytes_}): bytes_ must be in [1, {self.capacity_bytes}]")
'''
_SIZE_CHECK = "        if bytes_ < 1 or bytes_ > self.capacity_bytes:\n"
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
_RUNTIME_ERROR = '''        if (slot is None and len(self.slots) >= self.max_entries
                and self.current_bytes + bytes_ <= self.capacity_bytes):
            raise RuntimeError(f"touch({prefix!r}, {bytes_}): all {self.max_entries} slots hold live entries")
'''

WRONG = {
    ENTRY: {
        "prefix is compared too (no compare=False)": ref.edit(
            ENTRY, ("prefix: str = field(compare=False)", "prefix: str")),
        "no order=True (entries cannot be compared with <)": ref.edit(ENTRY, ("@dataclass(order=True)", "@dataclass")),
        "last_used before priority": ref.edit(
            ENTRY, ("    priority: float\n    last_used: int\n", "    last_used: int\n    priority: float\n")),
        "hits defaults to 1": ref.edit(
            ENTRY, ("hits: int = field(default=0, compare=False)", "hits: int = field(default=1, compare=False)")),
        "frozen (the scheduler cannot update it)": ref.edit(
            ENTRY, ("@dataclass(order=True)", "@dataclass(order=True, frozen=True)")),
        "hits is compared too": ref.edit(ENTRY, ("hits: int = field(default=0, compare=False)", "hits: int = 0")),
        "prefix has a default (not required)": ref.edit(
            ENTRY, ("prefix: str = field(compare=False)", 'prefix: str = field(default="", compare=False)')),
        "hits and bytes in the wrong order": ref.solve(ENTRY, todo={"5.1.2": """
            prefix: str = field(compare=False)
            bytes: int = field(default=0, compare=False)
            hits: int = field(default=0, compare=False)
        """}),
        "bytes is compared too": ref.edit(ENTRY, ("bytes: int = field(default=0, compare=False)", "bytes: int = 0")),
    },
    SIM: {
        "stale check on priority only": ref.edit(
            SIM, (_STALE_CHECK, "if entry is not None and entry.priority == priority:")),
        "priority negated in the heap (evicts the most valuable)": ref.edit(
            SIM, ("        heapq.heappush(self.queue, (entry.priority,",
                  "        heapq.heappush(self.queue, (-entry.priority,"),
            (_STALE_CHECK, "if entry is not None and entry.priority == -priority and entry.last_used == last_used:")),
        "new entries with hits 0": ref.edit(
            SIM, ("CacheEntry(0.0, self.time, prefix, hits=1, bytes=bytes_)",
                  "CacheEntry(0.0, self.time, prefix, hits=0, bytes=bytes_)")),
        "snapshot ordered ascending": ref.edit(
            SIM, ("ordered = sorted(self.entries.values(), key=lambda e: (-e.priority, e.last_used, e.prefix))",
                  "ordered = sorted(self.entries.values(), key=lambda e: (e.priority, e.last_used, e.prefix))")),
        "eviction before the capacity check of bytes_": ref.edit(
            SIM, (_SIZE_CHECK, "        if prefix not in self.entries:\n            self._evict_until_fit(bytes_)\n"
                               + _SIZE_CHECK),
            ("        self._evict_until_fit(bytes_)\n        self.entries[prefix]", "        self.entries[prefix]")),
        "always evicts one entry on a miss (checks capacity after evicting)": ref.edit(
            SIM, ("        while self.entries and self.current_bytes + needed > self.capacity_bytes:\n",
                  "        first = True\n"
                  "        while self.entries and (first or self.current_bytes + needed > self.capacity_bytes):\n"
                  "            first = False\n")),
        "missing input checks": ref.edit(SIM, (_INPUT_CHECKS, "")),
        "stale check on last_used only": ref.edit(
            SIM, (_STALE_CHECK, "if entry is not None and entry.last_used == last_used:")),
        "no fallback when the heap runs dry": ref.edit(
            SIM, ("            if victim is None:\n                victim = min(self.entries.values())\n", "")),
        "time advances before the input checks": ref.edit(
            SIM, ("        self.time += 1\n        entry = self.entries.get(prefix)",
                  "        entry = self.entries.get(prefix)"),
            ("        if not isinstance(prefix, str) or not prefix:",
             "        self.time += 1\n        if not isinstance(prefix, str) or not prefix:")),
        "schedule returns the log itself": ref.edit(SIM, ("return list(self.log)", "return self.log")),
        "a hit takes the new size": ref.edit(
            SIM, ("            entry.hits += 1\n", "            entry.hits += 1\n            entry.bytes = bytes_\n")),
        "_score without max(..., 0)": ref.edit(
            SIM, ("        recency = 1 / (1 + max(self.time - last_used, 0))",
                  "        recency = 1 / (1 + abs(self.time - last_used))")),
        "_score with integer division": ref.edit(
            SIM, ("        recency = 1 / (1 + max(self.time - last_used, 0))",
                  "        recency = 1 // (1 + max(self.time - last_used, 0))")),
        "_refresh_queue appends instead of heappush": ref.edit(
            SIM, ("        heapq.heappush(self.queue, (entry.priority, entry.last_used, prefix))",
                  "        self.queue.append((entry.priority, entry.last_used, prefix))")),
        "_refresh_queue does not store the priority in the entry": ref.edit(
            SIM, ("        entry.priority = self._score(entry.hits, entry.bytes, entry.last_used)\n"
                  "        heapq.heappush(self.queue, (entry.priority, entry.last_used, prefix))",
                  "        heapq.heappush(self.queue, (self._score(entry.hits, entry.bytes, entry.last_used), "
                  "entry.last_used, prefix))")),
        "evicts until there is room to spare (>= instead of >)": ref.edit(
            SIM, ("while self.entries and self.current_bytes + needed > self.capacity_bytes:",
                  "while self.entries and self.current_bytes + needed >= self.capacity_bytes:")),
        "fallback by priority only (the dict's order on ties)": ref.edit(
            SIM, ("victim = min(self.entries.values())",
                  "victim = min(self.entries.values(), key=lambda e: e.priority)")),
        "eviction forgets to subtract the bytes": ref.edit(
            SIM, ("            self.current_bytes -= victim.bytes\n", "")),
        "refreshes the queue before setting last_used on a hit": ref.edit(
            SIM, ("            entry.last_used = self.time\n            self._refresh_queue(prefix)\n",
                  "            self._refresh_queue(prefix)\n            entry.last_used = self.time\n")),
        "schedule returns only this call's log lines": ref.solve(SIM, schedule="""
            start = len(self.log)
            for prefix, bytes_ in requests:
                self.touch(prefix, bytes_)
            return self.log[start:]
        """),
        "snapshot not rounded": ref.edit(SIM, ("round(e.priority, 4)", "e.priority")),
        "snapshot ties broken by the prefix, not by last_used": ref.edit(
            SIM, ("ordered = sorted(self.entries.values(), key=lambda e: (-e.priority, e.last_used, e.prefix))",
                  "ordered = sorted(self.entries.values(), key=lambda e: (-e.priority, e.prefix))")),
        "snapshot of lists instead of tuples": ref.edit(
            SIM, ("[(e.prefix, e.bytes, round(e.priority, 4), e.hits) for e in ordered]",
                  "[[e.prefix, e.bytes, round(e.priority, 4), e.hits] for e in ordered]")),
        "rejects only negative capacities (0 accepted)": ref.edit(
            SIM, ("if capacity_bytes < 1:", "if capacity_bytes < 0:")),
        "logs the new entry before evicting for it": ref.edit(
            SIM, ("        self._evict_until_fit(bytes_)\n        self.entries[prefix]",
                  '        self.log.append(f"add:{prefix}")\n'
                  '        self._evict_until_fit(bytes_)\n        self.entries[prefix]'),
            ('        self._refresh_queue(prefix)\n        self.log.append(f"add:{prefix}")',
             "        self._refresh_queue(prefix)")),
        "scans the entries instead of popping the heap": ref.edit(
            SIM, ("            while self.queue:\n"
                  "                priority, last_used, prefix = heapq.heappop(self.queue)\n",
                  "            while False:\n"
                  "                priority, last_used, prefix = heapq.heappop(self.queue)\n")),
        "checks bytes_ on a miss only": ref.edit(
            SIM, (_SIZE_CHECK,
                  "        if prefix not in self.entries and (bytes_ < 1 or bytes_ > self.capacity_bytes):\n")),
    },
    TENSOR: {
        "ties broken by slot, not by last_used": ref.edit(
            TENSOR, (_SELECTION, '''        inf = torch.full_like(self.priority, float("inf"))
        return int(torch.argmin(torch.where(self.alive, self.priority, inf)))''')),
        "dead slots not masked": ref.edit(
            TENSOR, ("tied = self.alive & (priority == priority.min())",
                     "tied = self.priority == self.priority.min()")),
        "rescore ignored": ref.edit(TENSOR, (_RESCORE, "")),
        "priority in float32": ref.edit(
            TENSOR, ("self.priority = torch.zeros(**zeros, dtype=torch.float64)",
                     "self.priority = torch.zeros(**zeros, dtype=torch.float32)")),
        "no RuntimeError when every slot is live": ref.edit(TENSOR, (_RUNTIME_ERROR, "")),
        "victim found by a Python loop over the slots": ref.edit(TENSOR, (_SELECTION, '''        best = None
        for i in range(self.max_entries):
            if bool(self.alive[i]):
                key = (float(self.priority[i]), int(self.last_used[i]))
                if best is None or key < best[0]:
                    best = (key, i)
        return best[1]''')),
        "rescore restricted to the slots with the fewest hits (dead slots count)": ref.edit(
            TENSOR, ("self.priority = torch.where(self.alive, scores, self.priority)",
                     "self.priority = torch.where(self.alive & (self.hits == self.hits.min()), scores, "
                     "self.priority)")),
        "device ignored (tensors always on the CPU)": ref.edit(
            TENSOR, ("zeros = dict(size=(max_entries,), device=self.device)", "zeros = dict(size=(max_entries,))")),
        "device stored as given (None stays None)": ref.edit(
            TENSOR, ('self.device = torch.device("cpu") if device is None else torch.device(device)',
                     'self.device = device\n        zeros_device = torch.device("cpu") if device is None else device'),
            ("zeros = dict(size=(max_entries,), device=self.device)",
             "zeros = dict(size=(max_entries,), device=zeros_device)")),
        "rescores even when rescore=False": ref.edit(
            TENSOR, ("        if self.rescore:\n            age", "        if True:\n            age")),
        "rescore without clamping the age at 0": ref.edit(
            TENSOR, ("age = (self.time - self.last_used).clamp(min=0).to(torch.float64)",
                     "age = (self.time - self.last_used).abs().to(torch.float64)")),
        "rescore in float32": ref.edit(
            TENSOR, ("            scores = (self.hits.to(torch.float64) + 0.5 * (1.0 / (1.0 + age))\n"
                     "                      - 0.25 * self.bytes.to(torch.float64) / self.capacity_bytes)\n",
                     "            scores = (self.hits.to(torch.float32) + 0.5 * (1.0 / (1.0 + age.float()))\n"
                     "                      - 0.25 * self.bytes.to(torch.float32) / self.capacity_bytes)\n")),
        "free slots masked with a large finite number": ref.edit(
            TENSOR, ('inf = torch.full_like(self.priority, float("inf"))',
                                                                 "inf = torch.full_like(self.priority, 1e9)")),
        "_victim returns a tensor, not an int": ref.edit(
            TENSOR, ("return int(torch.argmin(torch.where(tied, self.last_used, latest)))",
                     "return torch.argmin(torch.where(tied, self.last_used, latest))")),
        "RuntimeError raised after the clock moved": ref.edit(
            TENSOR, (_RUNTIME_ERROR + "        self.time += 1\n", "        self.time += 1\n" + _RUNTIME_ERROR)),
        "RuntimeError even when an eviction would free a slot": ref.edit(
            TENSOR, ("                and self.current_bytes + bytes_ <= self.capacity_bytes):\n",
                     "                ):\n")),
        "a reused slot keeps the old hits": ref.edit(
            TENSOR, ("        self.hits[slot] = 1\n", "        self.hits[slot] += 1\n")),
        "a hit takes the new size": ref.edit(
            TENSOR, ("            size = int(self.bytes[slot])\n",
                     "            size = bytes_\n            self.current_bytes += bytes_ - int(self.bytes[slot])\n"
                     "            self.bytes[slot] = bytes_\n")),
        "snapshot returns 0-d tensors": ref.solve(TENSOR, todo={"5.3.5": """
            ordered = sorted(self.slots.items(), key=lambda item: (-float(self.priority[item[1]]),
                                                                   int(self.last_used[item[1]]), item[0]))
            return [(prefix, self.bytes[slot], round(float(self.priority[slot]), 4), self.hits[slot])
                    for prefix, slot in ordered]
        """}),
        "snapshot includes the free slots": ref.solve(TENSOR, todo={"5.3.5": """
            priority, size = self.priority.tolist(), self.bytes.tolist()
            hits, last_used = self.hits.tolist(), self.last_used.tolist()
            rows = [(self.prefix_of[i] or "", size[i], round(priority[i], 4), hits[i], last_used[i])
                    for i in range(self.max_entries)]
            rows.sort(key=lambda r: (-r[2], r[4], r[0]))
            return [r[:4] for r in rows]
        """}),
        "rescores every entry on every touch": ref.edit(
            TENSOR, ("        self.time += 1\n        if slot is not None:",
                     "        self.time += 1\n        if self.rescore and self.slots:\n"
                     "            age = (self.time - self.last_used).clamp(min=0).to(torch.float64)\n"
                     "            scores = (self.hits.to(torch.float64) + 0.5 * (1.0 / (1.0 + age))\n"
                     "                      - 0.25 * self.bytes.to(torch.float64) / self.capacity_bytes)\n"
                     "            self.priority = torch.where(self.alive, scores, self.priority)\n"
                     "        if slot is not None:")),
        "snapshot sorts by the rounded priority": ref.edit(
            TENSOR, ("key=lambda item: (-priority[item[1]], last_used[item[1]], item[0])",
                     "key=lambda item: (-round(priority[item[1]], 4), last_used[item[1]], item[0])")),
    },
}

WRONG[SIM]["snapshot sorts by the rounded priority"] = ref.edit(
    SIM, ("key=lambda e: (-e.priority, e.last_used, e.prefix)",
          "key=lambda e: (-round(e.priority, 4), e.last_used, e.prefix)"))
# A red-team answer (2026-12-05): the heap holds 0.0 for every priority and eviction scans the entries, and the stored
# priority is a float subclass whose == says it equals 0.0, so that 5.2.8's "the queue holds each live entry's item"
# took the rigged value's word. 5.2.8 now reads the priority once and compares it only as an exact float.
WRONG[SIM]["heap items hold 0.0, the entries a float whose == agrees"] = "class _Liar(float):\n" + (
    "    def __eq__(self, other):\n"
    "        return (type(other) is float and other == 0.0) or float.__eq__(self, other)\n"
    "    __hash__ = float.__hash__\n\n\n") + ref.edit(
    SIM, ("        entry.priority = self._score(entry.hits, entry.bytes, entry.last_used)\n"
          "        heapq.heappush(self.queue, (entry.priority, entry.last_used, prefix))",
          "        entry.priority = _Liar(self._score(entry.hits, entry.bytes, entry.last_used))\n"
          "        heapq.heappush(self.queue, (0.0, entry.last_used, prefix))"),
    ("            while self.queue:\n                priority, last_used, prefix = heapq.heappop(self.queue)",
     "            while False:\n                priority, last_used, prefix = heapq.heappop(self.queue)"))

ALTERNATIVES = {
    ENTRY: {
        # A different class altogether: the decorator and the fields give way to hand-written methods.
        "a hand-written class with functools.total_ordering": ref.edit(
            ENTRY, ("from dataclasses import dataclass, field", "import functools"),
            ("@dataclass(order=True)", "@functools.total_ordering"),
            ("    priority: float\n    last_used: int\n",
             '''    def __init__(self, priority, last_used, prefix, hits=0, bytes=0):
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
'''), ('''    prefix: str = field(compare=False)
    hits: int = field(default=0, compare=False)
    bytes: int = field(default=0, compare=False)''', "")),
        "a slotted dataclass": ref.edit(ENTRY, ("@dataclass(order=True)", "@dataclass(order=True, slots=True)")),
        "every field through dataclasses.field": ref.solve(ENTRY, before="import dataclasses", todo={
            "5.1.1": "priority: float = dataclasses.field()\nlast_used: int = dataclasses.field(compare=True)",
            "5.1.2": """
                prefix: str = dataclasses.field(compare=False, repr=True)
                hits: int = dataclasses.field(compare=False, default=0)
                bytes: int = dataclasses.field(compare=False, default_factory=int)
            """}),
    },
    SIM: {
        "__slots__ instead of a __dict__": ref.edit(
            SIM, ("    def __init__(self, capacity_bytes=1024):",
                  '    __slots__ = ("capacity_bytes", "current_bytes", "time", "entries", "queue", "log")\n\n'
                  "    def __init__(self, capacity_bytes=1024):")),
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
        "touch evicts only when the entry does not fit": ref.edit(
            SIM, ("        self._evict_until_fit(bytes_)\n        self.entries[prefix]",
                  "        if self.current_bytes + bytes_ > self.capacity_bytes:\n"
                  "            self._evict_until_fit(bytes_)\n        self.entries[prefix]")),
    },
    TENSOR: {
        # A view at stride 2: with one entry, torch calls it contiguous, and it crosses as one value.
        "priority as a column of a wider tensor, written in place": ref.edit(
            TENSOR, ("self.priority = torch.zeros(**zeros, dtype=torch.float64)",
                     "self.priority = torch.zeros((max_entries, 2), device=self.device, dtype=torch.float64)[:, 0]"),
            ("self.priority = torch.where(self.alive, scores, self.priority)",
             "self.priority[:] = torch.where(self.alive, scores, self.priority)")),
        "torch.sort-based victim (two stable sorts)": ref.solve(TENSOR, todo={"5.3.3": """
            live = torch.nonzero(self.alive).flatten()
            by_time = live[torch.sort(self.last_used[live], stable=True).indices]
            by_priority = by_time[torch.sort(self.priority[by_time], stable=True).indices]
            return int(by_priority[0])
        """}),
        "argsort by last_used, then the first minimal priority in that order": ref.solve(TENSOR, todo={"5.3.3": """
            key_time = torch.where(self.alive, self.last_used, torch.full_like(self.last_used, 2**62))
            order = torch.argsort(key_time, stable=True)
            pri = torch.where(self.alive, self.priority, torch.full_like(self.priority, float("inf")))[order]
            return int(order[torch.argmin(pri)])
        """}),
        "the last free slot for a new entry": ref.edit(
            TENSOR, ("slot = int(torch.argmin(self.alive.to(torch.uint8)))  # the first free slot",
                     "slot = int(torch.nonzero(~self.alive)[-1, 0])  # the last free slot")),
    },
}

# Round 5 (2026-12-05), from the task text clause by clause: each of these failed only hidden tests or none; the
# visible tests of 5.2.3, 5.2.4, 5.2.5, 5.3.1 and 5.3.4 now show each case.
WRONG[SIM]["_refresh_queue drops the prefix's old items (no lazy deletion)"] = ref.edit(SIM, (
    "        heapq.heappush(self.queue, (entry.priority, entry.last_used, prefix))",
    "        self.queue[:] = [item for item in self.queue if item[2] != prefix]\n        heapq.heapify(self.queue)\n"
    "        heapq.heappush(self.queue, (entry.priority, entry.last_used, prefix))"))
WRONG[SIM]["_evict_until_fit goes on when nothing is cached"] = ref.edit(SIM, (
    "while self.entries and self.current_bytes + needed > self.capacity_bytes:",
    "while self.current_bytes + needed > self.capacity_bytes:"))
WRONG[SIM]["touch returns the log line of a hit"] = ref.edit(SIM, (
    '            self.log.append(f"reuse:{prefix}")\n            return',
    '            self.log.append(f"reuse:{prefix}")\n            return self.log[-1]'))
WRONG[TENSOR]["max_entries 1 refused"] = ref.edit(TENSOR, ("if max_entries < 1:", "if max_entries <= 1:"))
WRONG[TENSOR]["a str device kept as it is (not a torch.device)"] = ref.edit(TENSOR, (
    'self.device = torch.device("cpu") if device is None else torch.device(device)',
    'self.device = torch.device("cpu") if device is None else device'))
WRONG[TENSOR]["RuntimeError on a hit while every slot is live"] = ref.edit(TENSOR, (
    "if (slot is None and len(self.slots)", "if (len(self.slots)"))
WRONG[TENSOR]["prefix_of not cleared on eviction"] = ref.edit(
    TENSOR, ("            self.prefix_of[victim] = None\n", ""))
ALTERNATIVES[TENSOR]["the new entry takes the slot freed last (else the first free one)"] = ref.edit(TENSOR, (
    "        while self.slots and self.current_bytes + bytes_ > self.capacity_bytes:\n",
    "        freed = None\n        while self.slots and self.current_bytes + bytes_ > self.capacity_bytes:\n"), (
    '            self.log.append(f"evict:{name}")\n',
    '            self.log.append(f"evict:{name}")\n            freed = victim\n'), (
    "        slot = int(torch.argmin(self.alive.to(torch.uint8)))  # the first free slot\n",
    "        slot = freed if freed is not None else int(torch.argmin(self.alive.to(torch.uint8)))\n"))
ALTERNATIVES[TENSOR]["an evicted slot's hits, last_used and priority zeroed"] = ref.edit(TENSOR, (
    "            self.alive[victim] = False\n",
    "            self.alive[victim] = False\n            self.hits[victim] = 0\n"
    "            self.last_used[victim] = 0\n            self.priority[victim] = 0.0\n"))


# Round 7 (2026-12-06): correct answers that lost points through the judge until grading/judge/ was fixed
# (a717772, c2e806a and the commit after it); each is graded the same both ways now.
ALTERNATIVES[TENSOR]["an undo history kept as a linked list of tuples (200 levels deep)"] = ref.edit(TENSOR,
    ("        self.alive = torch.zeros(**zeros, dtype=torch.bool)\n",
     "        self.alive = torch.zeros(**zeros, dtype=torch.bool)\n        self._undo = None\n"),
    ("        self.time += 1\n",
     "        self.time += 1\n        self._undo = (prefix, getattr(self, '_undo', None))\n"))
ALTERNATIVES[TENSOR]["a scratch tensor whose dtype follows the priorities' (set through .data)"] = ref.edit(TENSOR,
    ("        self.alive = torch.zeros(**zeros, dtype=torch.bool)\n",
     "        self.alive = torch.zeros(**zeros, dtype=torch.bool)\n"
     "        self._scratch = torch.zeros(**zeros, dtype=torch.float32)\n"),
    ("        inf = torch.full_like(self.priority, float(\"inf\"))\n",
     '''        scratch = getattr(self, "_scratch", None)
        if scratch is not None and scratch.dtype != self.priority.dtype:
            scratch.data = scratch.data.to(self.priority.dtype)
        inf = torch.full_like(self.priority, float("inf"))
'''))

# Round 8 (2026-12-06): the clock moves before the input checks and a guard's __del__ puts it back when touch raises.
# Through the judge the error's traceback kept the guard alive until after the reply, so the test saw the clock
# moved.
_UNDO_GUARD = """class _Undo:
    def __init__(self, owner):
        self.owner, self.time, self.committed = owner, owner.time, False

    def __del__(self):
        if not self.committed:
            self.owner.time = self.time


"""
_GUARDED_CHECKS = ("        if not isinstance(prefix, str) or not prefix:\n",
                   "        undo = _Undo(self)\n        self.time += 1\n"
                   "        if not isinstance(prefix, str) or not prefix:\n")
ALTERNATIVES[SIM]["the clock moves first; a guard's __del__ puts it back when touch raises"] = ref.edit(
    SIM, ("class KVCacheSchedulerSim:\n", _UNDO_GUARD + "class KVCacheSchedulerSim:\n"), _GUARDED_CHECKS,
    ("        self.time += 1\n        entry = self.entries.get(prefix)\n",
     "        undo.committed = True\n        entry = self.entries.get(prefix)\n"))
ALTERNATIVES[TENSOR]["the clock moves first; a guard's __del__ puts it back when touch raises"] = ref.edit(
    TENSOR, ("class TensorKVCacheScheduler:\n", _UNDO_GUARD + "class TensorKVCacheScheduler:\n"), _GUARDED_CHECKS,
    ("        self.time += 1\n        if slot is not None:\n",
     "        undo.committed = True\n        if slot is not None:\n"))

# Round 9 (2026-12-06): wrong answers that passed every test cell; checks of 5.2.1, 5.2.2, 5.2.5, 5.2.6, 5.3.2,
# 5.3.3 and 5.3.4 now catch them (visible cases too, where the check was hidden only at first).
WRONG[SIM]["touch adds the bytes before evicting for them"] = ref.edit(SIM, (
    "        self._evict_until_fit(bytes_)\n"
    "        self.entries[prefix] = CacheEntry(0.0, self.time, prefix, hits=1, bytes=bytes_)\n"
    "        self.current_bytes += bytes_\n",
    "        self.current_bytes += bytes_\n        self._evict_until_fit(bytes_)\n"
    "        self.entries[prefix] = CacheEntry(0.0, self.time, prefix, hits=1, bytes=bytes_)\n"))
WRONG[SIM]["touch rejects a prefix of spaces"] = ref.edit(SIM, (
    "if not isinstance(prefix, str) or not prefix:", "if not isinstance(prefix, str) or not prefix.strip():"))
WRONG[SIM]["_score sums the terms in another order"] = ref.edit(SIM, (
    "return hits + 0.5 * recency - 0.25 * size / self.capacity_bytes",
    "return hits - 0.25 * size / self.capacity_bytes + 0.5 * recency"))
WRONG[SIM]["schedule skips the requests whose touch raises ValueError"] = ref.edit(SIM, (
    "        for prefix, bytes_ in requests:\n            self.touch(prefix, bytes_)\n",
    "        for prefix, bytes_ in requests:\n            try:\n                self.touch(prefix, bytes_)\n"
    "            except ValueError:\n                continue\n"))
WRONG[SIM]["queue and log are the same list"] = ref.edit(SIM, (
    "        self.queue = []\n        self.log = []\n", "        self.queue = self.log = []\n"))
WRONG[TENSOR]["rescoring: the age left int64, so the recency is float32"] = ref.edit(TENSOR, (
    "age = (self.time - self.last_used).clamp(min=0).to(torch.float64)",
    "age = (self.time - self.last_used).clamp(min=0)"))
WRONG[TENSOR]["rescoring: bytes left int64, so the size term is float32"] = ref.edit(TENSOR, (
    "- 0.25 * self.bytes.to(torch.float64) / self.capacity_bytes)", "- 0.25 * self.bytes / self.capacity_bytes)"))
WRONG[TENSOR]["_victim's ties by torch.isclose"] = ref.edit(TENSOR, (
    "tied = self.alive & (priority == priority.min())", "tied = self.alive & torch.isclose(priority, priority.min())"))
WRONG[TENSOR]["no RuntimeError when the bytes fit exactly"] = ref.edit(TENSOR, (
    "and self.current_bytes + bytes_ <= self.capacity_bytes):",
    "and self.current_bytes + bytes_ < self.capacity_bytes):"))


# Round 9 (2026-12-06): a correct answer that the new count of `.tolist()` failed, until 5.3.6 counted `_victim`
# alone, as the text asks (touch may find its free slot any way it likes).
ALTERNATIVES[TENSOR]["touch finds the first free slot in a Python list of alive"] = ref.edit(TENSOR, (
    "slot = int(torch.argmin(self.alive.to(torch.uint8)))", "slot = self.alive.tolist().index(False)"))

# Round 6 (2026-12-06, a red-team answer): 5.2.4's hidden oracle read the priority, last_used, bytes and prefix of
# the student's own CacheEntry objects, and a CacheEntry that logs reads of its attributes learned the expected
# victims from the order of those reads (the scan flags its dunder write). The oracle now reads the test's own rows.
_SPY = '''
_READS, _QUIET = [], [0]


def _spy_getattribute(self, name):
    value = object.__getattribute__(self, name)
    if not _QUIET[0] and name in ("bytes", "prefix"):
        _READS.append((name, object.__getattribute__(self, "prefix")))
    return value


CacheEntry.__getattribute__ = _spy_getattribute


def _victims_read():
    """The entries whose bytes, then prefix twice, the caller read since the last call."""
    reads = list(_READS)
    _READS.clear()
    return [reads[i][1] for i in range(len(reads) - 2)
            if reads[i][0] == "bytes" and reads[i + 1] == ("prefix", reads[i][1]) == reads[i + 2]]

'''
_REPEAT = '''        _QUIET[0] += 1
        try:
            victims = _victims_read()
            if victims and all(v in self.entries for v in victims):
                for v in victims:
                    gone = self.entries.pop(v)
                    self.current_bytes -= gone.bytes
                    self.log.append(f"evict:{v}")
                return
            return self._at_most_two(needed)
        finally:
            _QUIET[0] -= 1

    def _at_most_two(self, needed):
'''
_EVICT_DOC = '''        """Evict lowest (priority, last_used) entries until needed more bytes fit."""\n'''
WRONG[SIM]["at most two victims, and the rest read off the test's reads of each CacheEntry"] = ref.edit(SIM, (
    "        while self.entries and self.current_bytes + needed > self.capacity_bytes:\n",
    "        count = 0\n"
    "        while self.entries and self.current_bytes + needed > self.capacity_bytes and count < 2:\n"
    "            count += 1\n"), ("import heapq\n", "import heapq\n" + _SPY), (_EVICT_DOC, _EVICT_DOC + _REPEAT))
HIDDEN_ONLY = {SIM: {
    "at most two victims, and the rest read off the test's reads of each CacheEntry":
        "no visible case needs more than two victims; it is a red-team answer against the hidden oracle, not a "
        "mistake a student makes",
}}
# The red-team answers that the scan flags (a dunder write): tests/test_grading_scan.py checks that it does.
FLAGGED = {SIM: ("at most two victims, and the rest read off the test's reads of each CacheEntry",)}

# Round 7 (2026-12-06 evening, a red-team answer): 5.3.4's stand-in _victim picked the live slot with the lowest
# index, which touch could compute itself without asking; it now follows an order of the test's.
WRONG[TENSOR]["touch evicts the lowest live slot instead of self._victim()"] = ref.edit(TENSOR, (
    "            victim = self._victim()\n", "            victim = int(torch.nonzero(self.alive)[0, 0])\n"))

# Two correct touch loops that the first order-based stand-in of 5.3.4 refused (it read slots alone): one marks each
# victim free at once and updates slots and prefix_of after the loop, so a second question must skip the slots that
# are no longer live.
_EVICT_LOOP = """        while self.slots and self.current_bytes + bytes_ > self.capacity_bytes:
            victim = self._victim()
            name = self.prefix_of[victim]
            self.alive[victim] = False
            self.prefix_of[victim] = None
            del self.slots[name]
            self.current_bytes -= int(self.bytes[victim])
            self.log.append(f"evict:{name}")
"""
ALTERNATIVES[TENSOR]["victims marked free at once, slots and prefix_of updated after the loop"] = ref.edit(TENSOR, (
    _EVICT_LOOP, """        victims, freed = [], 0
        while self.alive.any() and self.current_bytes - freed + bytes_ > self.capacity_bytes:
            victim = self._victim()
            self.alive[victim] = False
            freed += int(self.bytes[victim])
            victims.append(victim)
        for victim in victims:
            name = self.prefix_of[victim]
            del self.slots[name]
            self.prefix_of[victim] = None
            self.log.append(f"evict:{name}")
        self.current_bytes -= freed
"""))

# Round 9 (2026-12-06 night, a typical mistake that passed 5.3.5): the priorities read back as float32 (`.float()`
# taken for a Python float), which ties priorities float32 cannot tell apart.
WRONG[TENSOR]["snapshot sorts by float32 priorities"] = ref.edit(TENSOR, (
    "priority, size = self.priority.tolist(), self.bytes.tolist()",
    "priority, size = self.priority.float().tolist(), self.bytes.tolist()"))
# Round 8 (2026-12-07, red team): 5.3.1 looked only at each tensor's dtype, shape, device and values, so tensors
# shared between attributes or schedulers earned its point; it now writes into each int64 tensor and reads the others.
_SLOT_TENSORS = """        self.hits = torch.zeros(**zeros, dtype=torch.int64)
        self.bytes = torch.zeros(**zeros, dtype=torch.int64)
        self.last_used = torch.zeros(**zeros, dtype=torch.int64)
"""
WRONG[TENSOR]["hits, bytes and last_used one int64 tensor (a chained assignment)"] = ref.edit(TENSOR, (
    _SLOT_TENSORS, "        self.hits = self.bytes = self.last_used = torch.zeros(**zeros, dtype=torch.int64)\n"))
WRONG[TENSOR]["log and slots class attributes that every scheduler shares"] = ref.edit(
    TENSOR, ("        self.log = []\n        self.slots = {}\n", ""),
    ("class TensorKVCacheScheduler:\n", "class TensorKVCacheScheduler:\n    log = []\n    slots = {}\n"))
# Round 8 (2026-12-07, red team): no test passed a capacity between 0 and 1, nor a cached prefix with bytes_ < 1;
# 5.2.1 and 5.3.1 now pass 0.5, and 5.2.5 and 5.3.4 touch a cached prefix with 0 and -5 bytes.
_RAISE = ("            raise ValueError(f\"touch({prefix!r}, {bytes_}): "
          "bytes_ must be in [1, {self.capacity_bytes}]\")\n")
_BYTES_CHECK = "        if bytes_ < 1 or bytes_ > self.capacity_bytes:\n" + _RAISE
_UPPER_ONLY = "        if bytes_ > self.capacity_bytes:\n" + _RAISE
_MISS_ONLY = ("        if {} is None and bytes_ < 1:\n"
              "            raise ValueError(f\"touch({{prefix!r}}, {{bytes_}}): bytes_ must be >= 1\")\n")
WRONG[SIM]["capacity_bytes <= 0 refused (0.5 accepted)"] = ref.edit(SIM, (
    "        if capacity_bytes < 1:\n", "        if capacity_bytes <= 0:\n"))
WRONG[SIM]["bytes_ < 1 refused on a miss only (a hit with 0 bytes accepted)"] = ref.edit(
    SIM, (_BYTES_CHECK, _UPPER_ONLY), (
    "        self.time += 1\n        entry = self.entries.get(prefix)\n",
    "        entry = self.entries.get(prefix)\n" + _MISS_ONLY.format("entry") + "        self.time += 1\n"))
WRONG[TENSOR]["capacity_bytes <= 0 refused (0.5 accepted)"] = ref.edit(TENSOR, (
    "        if capacity_bytes < 1:\n", "        if capacity_bytes <= 0:\n"))
WRONG[TENSOR]["bytes_ < 1 refused on a miss only (a hit with 0 bytes accepted)"] = ref.edit(
    TENSOR, (_BYTES_CHECK, _UPPER_ONLY), (
    "        slot = self.slots.get(prefix)\n", "        slot = self.slots.get(prefix)\n" + _MISS_ONLY.format("slot")))
# Round 8, later: 5.3.4's slots always held the score of their last touch, so a hit that added 1 to the stored
# priority passed it (only 5.3.6 caught it); 5.3.4 now ages a slot's priority by hand before a hit.
WRONG[TENSOR]["a hit adds 1 to the stored priority"] = ref.edit(TENSOR, (
    "            self.priority[slot] = hits + 0.5 * recency - 0.25 * size / self.capacity_bytes\n",
    "            self.priority[slot] += 1\n"))
# Round 9 (2026-12-07, red team against the judge): priorities left reinterpreted as int64 through .data between two
# calls (the same memory, shape and version counter), which the judge's copy did not follow (it kept float64, so 5.3.2
# passed judged and failed in process). The judge now compares a shared tensor's dtype too (grading/judge/pairs.py).
WRONG[TENSOR]["priorities left reinterpreted as int64 through .data between calls"] = ref.edit(
    TENSOR,
    ("        if self.rescore:\n            age =",
     "        if self.priority.dtype == torch.int64:\n"
     "            self.priority.data = self.priority.data.view(torch.float64)\n"
     "        if self.rescore:\n            age ="),
    ("        return int(torch.argmin(torch.where(tied, self.last_used, latest)))\n",
     "        result = int(torch.argmin(torch.where(tied, self.last_used, latest)))\n"
     "        if not self.rescore:\n"
     "            self.priority.data = self.priority.data.view(torch.int64)\n"
     "        return result\n"))

# Round 12 (2026-12-07), found by a red-team helper: 5.3's priorities with the size term subtracted before the recency
# term is added (the texts fix _score's order, so that the floats agree bit for bit), which the bit-for-bit checks of
# 5.3.2 and 5.3.4 missed at capacity 100; they now also use capacities 714 and 3.
WRONG[TENSOR]["rescored priorities with the size term subtracted first"] = ref.edit(TENSOR, (
    "            scores = (self.hits.to(torch.float64) + 0.5 * (1.0 / (1.0 + age))\n"
    "                      - 0.25 * self.bytes.to(torch.float64) / self.capacity_bytes)\n",
    "            scores = (self.hits.to(torch.float64) - 0.25 * self.bytes.to(torch.float64) / self.capacity_bytes\n"
    "                      + 0.5 * (1.0 / (1.0 + age)))\n"))
WRONG[TENSOR]["touch's priorities with the size term subtracted first"] = ref.edit(
    TENSOR,
    ("            self.priority[slot] = hits + 0.5 * recency - 0.25 * size / self.capacity_bytes\n",
     "            self.priority[slot] = hits - 0.25 * size / self.capacity_bytes + 0.5 * recency\n"),
    ("        self.priority[slot] = 1 + 0.5 * (1 / (1 + 0)) - 0.25 * bytes_ / self.capacity_bytes\n",
     "        self.priority[slot] = 1 - 0.25 * bytes_ / self.capacity_bytes + 0.5\n"))

# Round 14 (2026-12-07), found by a red-team helper: schedule checking every request before touching any (the text:
# touch's error reaches the caller and the requests before it stay done; the stand-in touch refused only 'bad'), a
# stale check that compares priorities within a tolerance (no two test priorities were close), and 5.3's snapshot
# rounded by torch.round, which differs from Python's round where the priority times 10**4 is a half (1.49625).
WRONG[SIM]["schedule checks every prefix before touching any"] = ref.edit(SIM, (
    "        for prefix, bytes_ in requests:\n            self.touch(prefix, bytes_)\n        return list(self.log)",
    "        requests = list(requests)\n        for prefix, _ in requests:\n"
    "            if not isinstance(prefix, str) or not prefix:\n"
    "                raise ValueError(f'bad prefix {prefix!r}')\n"
    "        for prefix, bytes_ in requests:\n            self.touch(prefix, bytes_)\n        return list(self.log)"))
WRONG[SIM]["stale check with math.isclose on the priority"] = ref.edit(
    SIM, ("import heapq", "import heapq\nimport math"), (
    "if entry is not None and entry.priority == priority and entry.last_used == last_used:",
    "if entry is not None and math.isclose(entry.priority, priority) and entry.last_used == last_used:"))
WRONG[SIM]["stale check on round(priority, 4)"] = ref.edit(SIM, (
    "if entry is not None and entry.priority == priority and entry.last_used == last_used:",
    "if entry is not None and round(entry.priority, 4) == round(priority, 4) and entry.last_used == last_used:"))
WRONG[TENSOR]["snapshot rounds with torch.round(priority, decimals=4)"] = ref.edit(TENSOR, (
    "        priority, size = self.priority.tolist(), self.bytes.tolist()\n",
    "        priority, size = self.priority.tolist(), self.bytes.tolist()\n"
    "        rounded = torch.round(self.priority, decimals=4).tolist()\n"),
    ("round(priority[slot], 4)", "rounded[slot]"))

# Round 17 (2026-12-07, a helper): the slots outside the smallest priority filled with time + 1 instead of the largest
# int64 lose to a tied slot only while no last_used lies after the clock; 5.3.3 now sets one by hand.
WRONG[TENSOR]["slots outside the smallest priority given last_used time + 1 (a later one loses to them)"] = ref.edit(
    TENSOR, ("        latest = torch.full_like(self.last_used, torch.iinfo(torch.int64).max)",
             "        latest = torch.full_like(self.last_used, self.time + 1)"))
