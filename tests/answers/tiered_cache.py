"""Wrong and alternative answers for notebook 08 (see tests/answers/__init__.py)."""

from grading.authoring.reference import Reference, edit
from tests.answers import numbers_integral

ref = Reference("08_tiered_cache")

LRU, ARC, ADMISSION = "task8_1_LRUTier", "task8_2_ARCTier", "task8_3_AdmissionFilter"
SEEN, TWO, COST = "task8_4_seen_counts_t", "task8_5_TwoTierCache", "task8_6_CostModel"

_LRU_VICTIM = "victim = next((resident for resident in self.blocks if resident not in pinned), None)"
_ARC_UP = "self.p = float(min(self.p + max(1.0, len(self.b2) / len(self.b1)), self.capacity))"
_ARC_DOWN = "self.p = float(max(self.p - max(1.0, len(self.b1) / len(self.b2)), 0.0))"
_REPLACE_RULE = "if self.t1 and (len(self.t1) > self.p or (in_b2 and len(self.t1) == self.p)):"
_DEMOTE_RULE = 'if self.write_policy == "write_back" and victim not in self.tier2 and self._admitted(victim):'
# A task graded in parts loses points in every part only when its typical mistake touches every part: the first
# wrong answer of such a task (the bundled typical_mistakes sample) is one typical slip per part, together.
# Part 8.5.2 where only a miss goes into tier 1: a host hit stays in tier 2.
_HOST_HIT_NOT_PROMOTED = """
    if block in self.tier1:
        self.tier1.hit(block)
        self.device_hits += 1
        where = "device"
    elif block in self.tier2:
        self.tier2.hit(block)
        self.host_hits += 1
        self.blocks_to_device += 1
        where = "host"
    else:
        self.misses += 1
        where = "miss"
        victim = self.tier1.insert(block, self.ref_count)
        if victim is not None:
            self._demote(victim)
"""
_TTFT = ("return (recomputed_tokens.to(torch.float64) * self.prefill_seconds_per_token\n"
         "                + loaded_tokens.to(torch.float64) * self.load_seconds_per_token)")
_WRITE_THROUGH_RULE = "if block not in self.tier2 and self._admitted(block):"

WRONG = {
    LRU: {
        "typical slips, one per part: a bool capacity accepted, hit does not reorder, pinned blocks evicted": ref.edit(
            LRU, ("if type(capacity) is not int:", "if not isinstance(capacity, int):"),
            ("self.blocks.move_to_end(block)", "pass"), (_LRU_VICTIM, "victim = next(iter(self.blocks), None)")),
        "evicts the least recently used block even when it is pinned": ref.edit(
            LRU, (_LRU_VICTIM, "victim = next(iter(self.blocks), None)")),
        "evicts the most recently used unpinned block": ref.edit(
            LRU, ("for resident in self.blocks if resident not in pinned",
                  "for resident in reversed(self.blocks) if resident not in pinned")),
        "hit moves the block to the least recent end": ref.edit(
            LRU, ("self.blocks.move_to_end(block)", "self.blocks.move_to_end(block, last=False)")),
        "hit does not reorder": ref.edit(LRU, ("self.blocks.move_to_end(block)", "pass")),
        "hit of a missing block raises nothing": ref.edit(
            LRU, ('raise KeyError(f"block {block!r} is not in this tier")', "return")),
        "accepts a bool capacity": ref.edit(
            LRU, ("if type(capacity) is not int:", "if not isinstance(capacity, int):")),
        "accepts capacity 0": ref.edit(LRU, ("if capacity < 1:", "if capacity < 0:")),
        "one OrderedDict shared by every tier (a mutable default)": ref.edit(
            LRU, ("def __init__(self, capacity):", "def __init__(self, capacity, _shared=OrderedDict()):"),
            ("self.blocks = OrderedDict()", "self.blocks = _shared")),
        "holds one block more than its capacity": ref.edit(
            LRU, ("if len(self.blocks) >= self.capacity:", "if len(self.blocks) > self.capacity:")),
        "inserts before looking for a victim (changes the tier, then raises)": ref.solve(LRU, todo={"8.1.3": """
            if block in self.blocks:
                raise ValueError("already resident")
            self.blocks[block] = None
            if len(self.blocks) <= self.capacity:
                return None
            victim = next((b for b in self.blocks if b not in pinned and b != block), None)
            if victim is None:
                raise RuntimeError("every block is pinned")
            del self.blocks[victim]
            return victim
        """}),
        "moves a resident block instead of raising ValueError": ref.edit(
            LRU, ('raise ValueError(f"block {block!r} is already in this tier")',
                  "self.blocks.move_to_end(block)\n            return None")),
        "returns None instead of the victim": ref.edit(LRU, ("return victim", "return None")),
        "no victim tested with `not victim` (block 0 is never evicted)": ref.edit(
            LRU, ("if victim is None:", "if not victim:")),
        "pinned turned into a set (a container that only supports `in` fails)": ref.edit(
            LRU, (_LRU_VICTIM, "pinned = set(pinned)\n            " + _LRU_VICTIM)),
        "every block pinned checked before the resident block": ref.solve(LRU, todo={"8.1.3": """
            victim = None
            if len(self.blocks) >= self.capacity:
                victim = next((resident for resident in self.blocks if resident not in pinned), None)
                if victim is None:
                    raise RuntimeError("every block is pinned")
            if block in self.blocks:
                raise ValueError("already resident")
            if victim is not None:
                del self.blocks[victim]
            self.blocks[block] = None
            return victim
        """}),
        "numpy integers accepted (numbers.Integral)": "import numbers\n" + ref.edit(
            LRU, ("if type(capacity) is not int:",
                  'if isinstance(capacity, bool) or not isinstance(capacity, numbers.Integral):')),
        "hit of a missing block inserts it": ref.edit(
            LRU, ('raise KeyError(f"block {block!r} is not in this tier")', "self.blocks[block] = None")),
    },
    ARC: {
        "typical slips, one per part: a T1 hit stays in T1, no B2 tie rule, // in p, T1's deleted block into B1": edit(
            ref.solve(ARC, todo={"8.2.1": """
                if block in self.t1:
                    self.t1.move_to_end(block)
                elif block in self.t2:
                    self.t2.move_to_end(block)
                else:
                    raise KeyError(block)
            """}),
            (_REPLACE_RULE, "if self.t1 and len(self.t1) > self.p:"),
            ("max(1.0, len(self.b2) / len(self.b1))", "max(1.0, len(self.b2) // len(self.b1))"),
            ("max(1.0, len(self.b1) / len(self.b2))", "max(1.0, len(self.b1) // len(self.b2))"),
            ("                victim, _ = self.t1.popitem(last=False)\n",
             "                victim, _ = self.t1.popitem(last=False)\n                self.b1[victim] = None\n"),
            where="08_tiered_cache task8_2_ARCTier"),
        "integer division in the adaptation of p": ref.edit(
            ARC, ("max(1.0, len(self.b2) / len(self.b1))", "max(1.0, len(self.b2) // len(self.b1))"),
            ("max(1.0, len(self.b1) / len(self.b2))", "max(1.0, len(self.b1) // len(self.b2))")),
        "a T1 hit stays in T1": ref.solve(ARC, todo={"8.2.1": """
            if block in self.t1:
                self.t1.move_to_end(block)
            elif block in self.t2:
                self.t2.move_to_end(block)
            else:
                raise KeyError(block)
        """}),
        "a ghost counts as resident on hit": ref.solve(ARC, todo={"8.2.1": """
            for ordered in (self.t1, self.t2, self.b1, self.b2):
                if block in ordered:
                    del ordered[block]
                    self.t2[block] = None
                    return
            raise KeyError(block)
        """}),
        "REPLACE ignores the B2 tie rule": ref.edit(ARC, (_REPLACE_RULE, "if self.t1 and len(self.t1) > self.p:")),
        "REPLACE compares |T1| >= p": ref.edit(ARC, ("(len(self.t1) > self.p or", "(len(self.t1) >= self.p or")),
        "REPLACE without the non-empty T1 check": ref.edit(
            ARC, (_REPLACE_RULE, "if len(self.t1) > self.p or (in_b2 and len(self.t1) == self.p):")),
        "REPLACE moves the most recent block of T1": ref.edit(
            ARC, ("block, _ = self.t1.popitem(last=False)", "block, _ = self.t1.popitem()")),
        "the ratio taken after the ghost left its list": ref.solve(ARC, todo={"8.2.3": """
            if block in self.b1:
                del self.b1[block]
                self.p = float(min(self.p + max(1.0, len(self.b2) / max(len(self.b1), 1)), self.capacity))
                victim = self.replace(False)
                self.t2[block] = None
                return victim
            if block in self.b2:
                del self.b2[block]
                self.p = float(max(self.p - max(1.0, len(self.b1) / max(len(self.b2), 1)), 0.0))
                victim = self.replace(True)
                self.t2[block] = None
                return victim
        """}),
        "a B2 ghost hit raises p": ref.edit(
            ARC, (_ARC_DOWN, "self.p = float(min(self.p + max(1.0, len(self.b1) / len(self.b2)), self.capacity))")),
        "a B1 ghost hit goes to T1": ref.edit(
            ARC, ("del self.b1[block]\n            self.t2[block] = None",
                  "del self.b1[block]\n            self.t1[block] = None")),
        "p becomes the int c when clamped": ref.edit(
            ARC, (_ARC_UP, "self.p = min(self.p + max(1.0, len(self.b2) / len(self.b1)), self.capacity)")),
        "p is not clamped to c": ref.edit(
            ARC, (_ARC_UP, "self.p = float(self.p + max(1.0, len(self.b2) / len(self.b1)))")),
        "replace(False) on a B2 ghost hit": ref.edit(
            ARC, ("victim = self.replace(True)", "victim = self.replace(False)")),
        "case IV A puts the deleted T1 block into B1": ref.edit(
            ARC, ("                victim, _ = self.t1.popitem(last=False)\n",
                  "                victim, _ = self.t1.popitem(last=False)\n                self.b1[victim] = None\n")),
        "B2 trimmed only above 2c (never)": ref.edit(
            ARC, ("if total == 2 * self.capacity:", "if total > 2 * self.capacity:")),
        "case IV B skipped below 2c (the cache outgrows c)": ref.edit(
            ARC, ("elif total >= self.capacity:", "elif total >= 2 * self.capacity:")),
        "case IV A deletes a B1 ghost even when T1 is full": ref.edit(
            ARC, ("if len(self.t1) < self.capacity:", "if len(self.t1) <= self.capacity:")),
        "new blocks go to T2": ref.edit(
            ARC, ("        self.t1[block] = None\n        return victim",
                  "        self.t2[block] = None\n        return victim")),
        "p clamped at the int 0": ref.edit(
            ARC, (_ARC_DOWN, "self.p = max(self.p - max(1.0, len(self.b1) / len(self.b2)), 0)")),
        "case II adapts p by |B1|/|B2| (the ratio inverted)": ref.edit(
            ARC, (_ARC_UP, "self.p = float(min(self.p + max(1.0, len(self.b1) / len(self.b2)), self.capacity))")),
        "replace before p adapts": ref.solve(ARC, todo={"8.2.3": """
            in_b2 = block in self.b2
            victim = self.replace(in_b2)
            if in_b2:
                self.p = float(max(self.p - max(1.0, len(self.b1) / len(self.b2)), 0.0))
                del self.b2[block]
            else:
                self.p = float(min(self.p + max(1.0, len(self.b2) / len(self.b1)), self.capacity))
                del self.b1[block]
            self.t2[block] = None
            return victim
        """}),
        "a B1 ghost hit goes to T2's least recent end": ref.edit(
            ARC, ("del self.b1[block]\n            self.t2[block] = None",
                  "del self.b1[block]\n            self.t2[block] = None\n"
                  "            self.t2.move_to_end(block, last=False)")),
        "a B1 ghost hit returns the ghost, not the block replace moved": ref.edit(
            ARC, ("del self.b1[block]\n            self.t2[block] = None\n            return victim",
                  "del self.b1[block]\n            self.t2[block] = None\n            return block")),
        "case IV A deletes the most recent ghost of B1": ref.edit(
            ARC, ("self.b1.popitem(last=False)", "self.b1.popitem()")),
        "case IV B deletes the most recent ghost of B2": ref.edit(
            ARC, ("self.b2.popitem(last=False)", "self.b2.popitem()")),
        "a T2 hit leaves the block where it is": ref.solve(ARC, todo={"8.2.1": """
            if block in self.t1:
                del self.t1[block]
                self.t2[block] = None
            elif block not in self.t2:
                raise KeyError(block)
        """}),
        "REPLACE compares |T1| with round(p)": ref.edit(
            ARC, (_REPLACE_RULE, "if self.t1 and (len(self.t1) > round(self.p)"
                                 " or (in_b2 and len(self.t1) == round(self.p))):")),
    },
    ADMISSION: {
        "record does not move a known block to the recent end (a FIFO table)": ref.edit(
            ADMISSION, ("            self.counts[block] += 1\n            self.counts.move_to_end(block)\n",
                        "            self.counts[block] += 1\n")),
        "an unbounded table": ref.edit(
            ADMISSION, ("        if len(self.counts) >= self.max_entries:\n"
                        "            self.counts.popitem(last=False)\n", "")),
        "drops the most recently recorded entry when full": ref.edit(
            ADMISSION, ("self.counts.popitem(last=False)", "self.counts.popitem()")),
        "admits only above the threshold": ref.edit(
            ADMISSION, ("return self.count(block) >= self.threshold", "return self.count(block) > self.threshold")),
        "count() adds blocks it does not know": ref.edit(
            ADMISSION, ("return self.counts.get(block, 0)", "return self.counts.setdefault(block, 0)")),
        "accepts bool arguments": ref.edit(ADMISSION, ("if type(value) is not int:", "if not isinstance(value, int):")),
        "admits returns the count, not a bool": ref.edit(
            ADMISSION, ("return self.count(block) >= self.threshold",
                        "return self.count(block) if self.count(block) >= self.threshold else False")),
        "drops an entry before looking the block up": ref.solve(ADMISSION, todo={"8.3.2": """
            if len(self.counts) >= self.max_entries:
                self.counts.popitem(last=False)
            self.counts[block] = self.counts.pop(block, 0) + 1
        """}),
        "admits records the block": ref.edit(
            ADMISSION, ("return self.count(block) >= self.threshold",
                        "self.record(block)\n        return self.count(block) >= self.threshold")),
        "count() moves the block to the recent end": ref.edit(
            ADMISSION, ("return self.counts.get(block, 0)",
                        "if block in self.counts:\n            self.counts.move_to_end(block)\n"
                        "        return self.counts.get(block, 0)")),
        "the table holds max_entries + 1 blocks": ref.edit(
            ADMISSION, ("if len(self.counts) >= self.max_entries:", "if len(self.counts) > self.max_entries:")),
        "numpy integers accepted (numbers.Integral)": numbers_integral(ref, ADMISSION),
        "the count of an unknown block is None": ref.edit(
            ADMISSION, ("return self.counts.get(block, 0)", "return self.counts.get(block)")),
        "one table shared by every filter (a mutable default)": ref.edit(
            ADMISSION, ("def __init__(self, threshold, max_entries):",
                        "def __init__(self, threshold, max_entries, _table=OrderedDict()):"),
            ("self.counts = OrderedDict()", "self.counts = _table")),
    },
    SEEN: {
        "counts every occurrence, not those so far": ref.solve(SEEN, todo={"8.4.2": """
            _, inverse, totals = torch.unique(blocks, return_inverse=True, return_counts=True)
            return totals[inverse]
        """}),
        "counts only the earlier references": ref.edit(
            SEEN, ("counts[order] = positions - first + 1", "counts[order] = positions - first")),
        "leaves the counts in sorted order": ref.edit(
            SEEN, ("counts[order] = positions - first + 1\n    return counts", "return positions - first + 1")),
        "an int32 result": ref.edit(
            SEEN, ("counts = torch.empty(length, dtype=torch.int64", "counts = torch.empty(length, dtype=torch.int32")),
        "a Python loop over the references": ref.solve(SEEN, todo={"8.4.2": """
            seen, out = {}, []
            for index in range(blocks.shape[0]):
                value = int(blocks[index])
                seen[value] = seen.get(value, 0) + 1
                out.append(seen[value])
            return torch.tensor(out, dtype=torch.int64, device=blocks.device)
        """}),
        "no input checks": ref.solve(SEEN, todo={"8.4.1": "pass"}),
        "accepts bool tensors": ref.edit(SEEN, (" or blocks.dtype == torch.bool", "")),
        "torch.bincount over the ids": ref.solve(SEEN, todo={"8.4.2": """
            ids = blocks.to(torch.int64)
            if ids.numel() == 0:
                return torch.zeros(0, dtype=torch.int64, device=blocks.device)
            return torch.bincount(ids)[ids]
        """}),
        "accepts a 2-D tensor": ref.edit(SEEN, (" or blocks.dim() != 1", "")),
        "ids converted to float64 (2**62 and 2**62 + 1 collide)": ref.edit(
            SEEN, ("order = torch.sort(blocks, stable=True).indices\n    ordered = blocks[order]",
                   "ids = blocks.to(torch.float64)\n    order = torch.sort(ids, stable=True).indices\n"
                   "    ordered = ids[order]")),
        "ids narrowed to int32": ref.edit(
            SEEN, ("order = torch.sort(blocks, stable=True).indices\n    ordered = blocks[order]",
                   "ids = blocks.to(torch.int32)\n    order = torch.sort(ids, stable=True).indices\n"
                   "    ordered = ids[order]")),
        "an unstable sort": ref.edit(SEEN, ("torch.sort(blocks, stable=True)", "torch.sort(blocks)")),
        "positions in the ids' dtype (int8 and uint8 overflow)": ref.edit(
            SEEN, ("positions = torch.arange(length, dtype=torch.int64, device=blocks.device)",
                   "positions = torch.arange(length, device=blocks.device).to(blocks.dtype)")),
        "an empty input returned before the checks": ref.edit(
            SEEN, ("    if not isinstance(blocks, torch.Tensor) or blocks.dim() != 1:",
                   "    if isinstance(blocks, torch.Tensor) and blocks.numel() == 0:\n"
                   "        return torch.zeros(0, dtype=torch.int64, device=blocks.device)\n"
                   "    if not isinstance(blocks, torch.Tensor) or blocks.dim() != 1:")),
        "unsigned ids refused": ref.edit(
            SEEN, ("if blocks.dtype.is_floating_point or blocks.dtype.is_complex or blocks.dtype == torch.bool:",
                   "if not blocks.dtype.is_signed or blocks.dtype.is_floating_point or blocks.dtype.is_complex:")),
        "the ids sorted in place (the caller's tensor changes)": ref.edit(
            SEEN, ("    ordered = blocks[order]\n", "    blocks.copy_(blocks[order])\n    ordered = blocks\n")),
    },
    TWO: {
        "typical slips, one per part: any write policy, host hits not promoted, admission ignored, pins leaked": edit(
            ref.solve(TWO, todo={"8.5.2": _HOST_HIT_NOT_PROMOTED, "8.5.6": """
                found = {"device": 0, "host": 0, "miss": 0}
                for block in blocks:
                    found[self.access(block)] += 1
                for block in blocks:
                    self.release(block)
                return found["device"], found["host"], found["miss"]
            """}),
            ('        if write_policy not in ("write_back", "write_through"):\n'
             "            raise ValueError(f\"write_policy must be 'write_back' or 'write_through', "
             "got {write_policy!r}\")\n", ""),
            (_DEMOTE_RULE, 'if self.write_policy == "write_back" and victim not in self.tier2:'),
            ("if block not in self.tier2 and self._admitted(block):", "if block not in self.tier2:"),
            where="08_tiered_cache task8_5_TwoTierCache"),
        "a host hit is not promoted into tier 1": ref.solve(TWO, todo={"8.5.2": _HOST_HIT_NOT_PROMOTED}),
        "a host hit is not counted as a copy to the device": ref.edit(
            TWO, ("                self.blocks_to_device += 1\n", "")),
        "tier 2 is not told of a host hit": ref.edit(TWO, ("                self.tier2.hit(block)\n", "")),
        "the pins are not passed to tier 1": ref.edit(
            TWO, ("victim = self.tier1.insert(block, self.ref_count)", "victim = self.tier1.insert(block)")),
        "tier 2 is looked at before tier 1": ref.solve(TWO, todo={"8.5.2": """
            if block in self.tier2:
                self.tier2.hit(block)
                self.host_hits += 1
                self.blocks_to_device += 1
                where = "host"
            elif block in self.tier1:
                self.tier1.hit(block)
                self.device_hits += 1
                where = "device"
            else:
                self.misses += 1
                where = "miss"
            if where != "device" and block not in self.tier1:
                victim = self.tier1.insert(block, self.ref_count)
                if victim is not None:
                    self._demote(victim)
        """}),
        "victims are dropped, never demoted": ref.edit(
            TWO, ("            if victim is not None:\n                self._demote(victim)\n", "")),
        "a device hit is counted as a host hit": ref.edit(TWO, ("self.device_hits += 1", "self.host_hits += 1")),
        "write-back copies a victim that tier 2 already holds": ref.edit(
            TWO, (_DEMOTE_RULE, 'if self.write_policy == "write_back" and self._admitted(victim):')),
        "write-back ignores the admission filter": ref.edit(
            TWO, (_DEMOTE_RULE, 'if self.write_policy == "write_back" and victim not in self.tier2:')),
        "write-through also copies victims": ref.edit(
            TWO, (_DEMOTE_RULE, "if victim not in self.tier2 and self._admitted(victim):")),
        "write-through ignores the admission filter": ref.edit(
            TWO, ("if block not in self.tier2 and self._admitted(block):", "if block not in self.tier2:")),
        "write-through copies a block that tier 2 already holds": ref.edit(
            TWO, ("if block not in self.tier2 and self._admitted(block):", "if self._admitted(block):")),
        "release of an unpinned block raises nothing": ref.solve(TWO, todo={"8.5.5": """
            count = self.ref_count.get(block, 0) - 1
            if count <= 0:
                self.ref_count.pop(block, None)
            else:
                self.ref_count[block] = count
        """}),
        "release keeps blocks whose count reached 0": ref.edit(
            TWO, ("        if count == 1:\n            del self.ref_count[block]\n        else:\n"
                  "            self.ref_count[block] = count - 1\n", "        self.ref_count[block] = count - 1\n")),
        "serve_request leaks its pins when an access raises": ref.solve(TWO, todo={"8.5.6": """
            found = {"device": 0, "host": 0, "miss": 0}
            for block in blocks:
                found[self.access(block)] += 1
            for block in blocks:
                self.release(block)
            return found["device"], found["host"], found["miss"]
        """}),
        "serve_request returns a list": ref.edit(
            TWO, ('return found["device"], found["host"], found["miss"]',
                  'return [found["device"], found["host"], found["miss"]]')),
        "serve_request releases each distinct block once": ref.edit(
            TWO, ("            for block in pinned:\n                self.release(block)",
                  "            for block in set(pinned):\n                self.release(block)")),
        "accepts any write policy": ref.edit(
            TWO, ('        if write_policy not in ("write_back", "write_through"):\n'
                  "            raise ValueError(f\"write_policy must be 'write_back' or 'write_through', "
                  "got {write_policy!r}\")\n",
                  "")),
        "one ref_count dict shared by every cache (a mutable default)": ref.edit(
            TWO, ('admission=None):', 'admission=None, _pins={}):'), ("self.ref_count = {}", "self.ref_count = _pins")),
        "accepts block_bytes True": ref.edit(
            TWO, ("if type(block_bytes) is not int:", "if not isinstance(block_bytes, int):")),
        "accepts one object as both tiers": ref.edit(
            TWO, ("        if tier1 is tier2:\n"
                  "            raise ValueError(\"tier1 and tier2 must be two different tier objects\")\n", "")),
        "release deletes a block pinned twice": ref.edit(
            TWO, ("        if count == 1:\n            del self.ref_count[block]\n        else:\n"
                  "            self.ref_count[block] = count - 1\n", "        del self.ref_count[block]\n")),
        "a demotion counted as a sighting by the filter": ref.edit(
            TWO, (_DEMOTE_RULE, "if self.admission is not None:\n            self.admission.record(victim)\n        "
                                + _DEMOTE_RULE)),
        "write-through counts the access a second time in the filter": ref.edit(
            TWO, (_WRITE_THROUGH_RULE, "if self.admission is not None:\n            self.admission.record(block)\n"
                                       "        " + _WRITE_THROUGH_RULE)),
        "tier 2 told of the host hit after the demotion (which may push the block out)": ref.solve(
            TWO, todo={"8.5.2": """
            if block in self.tier1:
                self.tier1.hit(block)
                self.device_hits += 1
                where = "device"
            else:
                where = "host" if block in self.tier2 else "miss"
                victim = self.tier1.insert(block, self.ref_count)
                if victim is not None:
                    self._demote(victim)
                if where == "host":
                    self.tier2.hit(block)
                    self.host_hits += 1
                    self.blocks_to_device += 1
                else:
                    self.misses += 1
        """}),
        "victims tested by truthiness (block 0 is never demoted)": ref.edit(
            TWO, ("            if victim is not None:\n                self._demote(victim)",
                  "            if victim:\n                self._demote(victim)")),
        "tiers checked with hasattr (a hit that is not callable accepted)": ref.edit(
            TWO, ('if not (callable(getattr(tier, "hit", None)) and callable(getattr(tier, "insert", None))):',
                  'if not (hasattr(tier, "hit") and hasattr(tier, "insert")):')),
        "numpy integers accepted as block_bytes": "import numbers\n" + ref.edit(
            TWO, ("if type(block_bytes) is not int:",
                  'if isinstance(block_bytes, bool) or not isinstance(block_bytes, numbers.Integral):')),
        "serve_request returns the cache's totals, not the request's": ref.edit(
            TWO, ('return found["device"], found["host"], found["miss"]',
                  "return self.device_hits, self.host_hits, self.misses")),
        # A host hit that never calls tier2.hit but writes the test tier's records itself (its log and its order of
        # blocks, public attributes until 2026-12-05, which earned 8.5.2 through the judge): the test's tiers keep them
        # under private names, which the judge never lends, and the tests read them from their own tier objects.
        "tier2.hit never called; the test tier's log and blocks written instead": ref.edit(
            TWO, ("                self.tier2.hit(block)\n",
                  '                if hasattr(self.tier2, "log") and hasattr(self.tier2, "blocks"):\n'
                  '                    self.tier2.log.append(("hit", block))\n'
                  "                    self.tier2.blocks.remove(block)\n"
                  "                    self.tier2.blocks.append(block)\n")),
        "the filter records misses only": ref.edit(
            TWO, ("        if self.admission is not None:\n            self.admission.record(block)\n", ""),
            ("                self.misses += 1\n",
             "                self.misses += 1\n                if self.admission is not None:\n"
             "                    self.admission.record(block)\n")),
        "tier1 == tier2 instead of tier1 is tier2 (equal but distinct tiers refused)": ref.edit(
            TWO, ("if tier1 is tier2:", "if tier1 == tier2:")),
    },
    COST: {
        "typical slips, one per part: offloading pays at equal costs, ttft in float32": ref.edit(
            COST, ("self.load_seconds_per_token < self.prefill_seconds_per_token",
                   "self.load_seconds_per_token <= self.prefill_seconds_per_token"),
            ("recomputed_tokens.to(torch.float64)", "recomputed_tokens.float()"),
            ("loaded_tokens.to(torch.float64)", "loaded_tokens.float()")),
        "ttft in float32": ref.edit(
            COST, ("recomputed_tokens.to(torch.float64)", "recomputed_tokens.float()"),
            ("loaded_tokens.to(torch.float64)", "loaded_tokens.float()")),
        "the load cost inverted (bandwidth / bytes)": ref.edit(
            COST, ("self.load_seconds_per_token = self.kv_bytes_per_token / self.bandwidth_bytes_per_s",
                   "self.load_seconds_per_token = self.bandwidth_bytes_per_s / self.kv_bytes_per_token")),
        "the break-even bandwidth inverted": ref.edit(
            COST, ("self.break_even_bandwidth = self.kv_bytes_per_token / self.prefill_seconds_per_token",
                   "self.break_even_bandwidth = self.prefill_seconds_per_token / self.kv_bytes_per_token")),
        "offloading pays at equal costs": ref.edit(
            COST, ("self.load_seconds_per_token < self.prefill_seconds_per_token",
                   "self.load_seconds_per_token <= self.prefill_seconds_per_token")),
        "accepts bool arguments": ref.edit(
            COST, ("if isinstance(value, bool) or not isinstance(value, (int, float)):",
                   "if not isinstance(value, (int, float)):")),
        "accepts inf and nan": ref.edit(COST, ("if not math.isfinite(value) or value <= 0:", "if value <= 0:")),
        "keeps an int argument as an int": ref.edit(
            COST, ("self.kv_bytes_per_token = float(kv_bytes_per_token)",
                   "self.kv_bytes_per_token = kv_bytes_per_token")),
        "ttft ignores the loaded tokens": ref.edit(
            COST, (_TTFT, "return recomputed_tokens.to(torch.float64) * self.prefill_seconds_per_token")),
        "ttft accepts negative counts": ref.edit(
            COST, ("        if bool((recomputed_tokens < 0).any()) or bool((loaded_tokens < 0).any()):\n"
                   "            raise ValueError(\"token counts must be >= 0\")\n", "")),
        "ttft accepts float tensors": ref.edit(
            COST, ("counts.dtype.is_floating_point or counts.dtype.is_complex\n                    or ", "")),
        "ttft accepts complex tensors (only float and bool refused)": ref.edit(
            COST, ("counts.dtype.is_floating_point or counts.dtype.is_complex\n", "counts.dtype.is_floating_point\n")),
        "ttft returns the total, a Python float": ref.edit(
            COST, (_TTFT, "return float((recomputed_tokens.to(torch.float64) * self.prefill_seconds_per_token\n"
                          "                + loaded_tokens.to(torch.float64) * self.load_seconds_per_token).sum())")),
        "ttft loops over the requests in Python": ref.solve(COST, todo={"8.6.2": """
            if recomputed_tokens.shape != loaded_tokens.shape:
                raise ValueError("shapes differ")
            for counts in (recomputed_tokens, loaded_tokens):
                if counts.dtype.is_floating_point or counts.dtype == torch.bool or bool((counts < 0).any()):
                    raise ValueError("bad counts")
            flat_r, flat_l = recomputed_tokens.reshape(-1), loaded_tokens.reshape(-1)
            out = [float(flat_r[i]) * self.prefill_seconds_per_token + float(flat_l[i]) * self.load_seconds_per_token
                   for i in range(flat_r.shape[0])]
            result = torch.tensor(out, dtype=torch.float64, device=recomputed_tokens.device)
            return result.reshape(recomputed_tokens.shape)
        """}),
        "ttft relies on broadcasting (no shape check)": ref.edit(
            COST, ("recomputed_tokens.shape != loaded_tokens.shape or ", "")),
        "any real number accepted (numbers.Real: Fraction, numpy's int64)": "import numbers\n" + ref.edit(
            COST, ("if isinstance(value, bool) or not isinstance(value, (int, float)):",
                   'if isinstance(value, bool) or not isinstance(value, numbers.Real):')),
        "nan accepted (only inf refused)": ref.edit(
            COST, ("if not math.isfinite(value) or value <= 0:", "if math.isinf(value) or value <= 0:")),
        "ttft refuses the small integer dtypes": ref.edit(
            COST, ("if (not isinstance(counts, torch.Tensor) or counts.dtype.is_floating_point"
                   " or counts.dtype.is_complex\n                    or counts.dtype == torch.bool):",
                   "if not isinstance(counts, torch.Tensor) or counts.dtype not in (torch.int32, torch.int64):")),
        "ttft through a float32 step, returned as float64": ref.edit(
            COST, (_TTFT, "return (recomputed_tokens.float() * self.prefill_seconds_per_token\n"
                          "                + loaded_tokens.float() * self.load_seconds_per_token).to(torch.float64)")),
        "ttft accepts bool tensors": ref.edit(
            COST, ("counts.dtype.is_complex\n                    or counts.dtype == torch.bool):",
                   "counts.dtype.is_complex):")),
        "ttft checks only the recomputed counts for negatives": ref.edit(
            COST, ("if bool((recomputed_tokens < 0).any()) or bool((loaded_tokens < 0).any()):",
                   "if bool((recomputed_tokens < 0).any()):")),
    },
}

ALTERNATIVES = {
    LRU: {
        "__slots__ instead of a __dict__": ref.edit(
            LRU, ("    def __init__(self, capacity):",
                  '    __slots__ = ("capacity", "blocks")\n\n    def __init__(self, capacity):')),
        "a for/else search for the victim": ref.solve(LRU, todo={"8.1.3": """
            if block in self.blocks:
                raise ValueError(f"{block!r} is resident")
            victim = None
            if len(self.blocks) == self.capacity:
                for resident in self.blocks:
                    if resident not in pinned:
                        victim = resident
                        break
                else:
                    raise RuntimeError("every resident block is pinned")
                self.blocks.pop(victim)
            self.blocks[block] = None
            return victim
        """}),
        "hit by pop and reinsert": ref.solve(LRU, todo={"8.1.2": "self.blocks[block] = self.blocks.pop(block)"}),
        "filter() over the blocks, only `in` on pinned": ref.solve(LRU, todo={"8.1.3": """
            if block in self.blocks:
                raise ValueError(f"{block!r} is resident")
            victim = None
            if len(self.blocks) == self.capacity:
                victim = next(filter(lambda resident: resident not in pinned, self.blocks), None)
                if victim is None:
                    raise RuntimeError("every resident block is pinned")
                del self.blocks[victim]
            self.blocks[block] = None
            return victim
        """}),
        "isinstance with an explicit bool check": ref.solve(LRU, todo={"8.1.1": """
            if isinstance(capacity, bool) or not isinstance(capacity, int):
                raise TypeError("capacity must be an int")
            if capacity <= 0:
                raise ValueError("capacity must be positive")
            self.blocks = OrderedDict()
            self.capacity = capacity
        """}),
    },
    ARC: {
        "next(iter(...)) and del instead of popitem": ref.solve(ARC, todo={"8.2.2": """
            from_t1 = len(self.t1) >= 1 and (len(self.t1) > self.p or (in_b2 and len(self.t1) == self.p))
            source, ghosts = (self.t1, self.b1) if from_t1 else (self.t2, self.b2)
            block = next(iter(source))
            del source[block]
            ghosts[block] = None
            return block
        """}),
        "one branch for both ghost lists": ref.solve(ARC, todo={"8.2.3": """
            if block in self.b1 or block in self.b2:
                in_b2 = block in self.b2
                if in_b2:
                    self.p = max(0.0, self.p - max(len(self.b1) / len(self.b2), 1.0))
                else:
                    self.p = min(float(self.capacity), self.p + max(len(self.b2) / len(self.b1), 1.0))
                victim = self.replace(in_b2)
                (self.b2 if in_b2 else self.b1).pop(block)
                self.t2[block] = None
                return victim
        """}),
        "case IV with the sizes written out": ref.solve(ARC, todo={"8.2.4": """
            victim = None
            if len(self.t1) + len(self.b1) == self.capacity:
                if len(self.t1) < self.capacity:
                    del self.b1[next(iter(self.b1))]
                    victim = self.replace(False)
                else:
                    victim = next(iter(self.t1))
                    del self.t1[victim]
            elif len(self.t1) + len(self.t2) + len(self.b1) + len(self.b2) >= self.capacity:
                if len(self.t1) + len(self.t2) + len(self.b1) + len(self.b2) == 2 * self.capacity:
                    del self.b2[next(iter(self.b2))]
                victim = self.replace(False)
            self.t1[block] = None
            return victim
        """}),
        "hit through a loop over T1 and T2": ref.solve(ARC, todo={"8.2.1": """
            for resident in (self.t1, self.t2):
                if block in resident:
                    resident.pop(block)
                    self.t2[block] = None
                    return
            raise KeyError(block)
        """}),
    },
    ADMISSION: {
        "pop and reinsert": ref.solve(ADMISSION, todo={"8.3.2": """
            count = self.counts.pop(block, 0)
            if count == 0 and len(self.counts) >= self.max_entries:
                self.counts.popitem(last=False)
            self.counts[block] = count + 1
        """}),
        "admits from the table directly": ref.solve(ADMISSION, todo={
            "8.3.4": "return self.counts.get(block, 0) >= self.threshold",
            "8.3.3": "return self.counts[block] if block in self.counts else 0",
        }),
        "one check per argument": ref.solve(ADMISSION, todo={"8.3.1": """
            if isinstance(threshold, bool) or not isinstance(threshold, int):
                raise TypeError("threshold must be an int")
            if isinstance(max_entries, bool) or not isinstance(max_entries, int):
                raise TypeError("max_entries must be an int")
            if threshold < 1 or max_entries < 1:
                raise ValueError("threshold and max_entries must be >= 1")
            self.threshold, self.max_entries, self.counts = threshold, max_entries, OrderedDict()
        """}),
    },
    SEEN: {
        "torch.unique, then a stable sort of the inverse": ref.solve(SEEN, todo={"8.4.2": """
            _, inverse = torch.unique(blocks, return_inverse=True)
            order = torch.argsort(inverse, stable=True)
            grouped = inverse[order]
            positions = torch.arange(blocks.shape[0], device=blocks.device)
            is_start = torch.ones_like(grouped, dtype=torch.bool)
            is_start[1:] = grouped[1:] != grouped[:-1]
            starts = torch.cummax(positions * is_start, dim=0).values
            result = torch.empty_like(positions)
            result[order] = positions - starts + 1
            return result
        """}),
        "searchsorted finds each group's start": ref.solve(SEEN, todo={"8.4.2": """
            values, order = torch.sort(blocks.to(torch.int64), stable=True)
            first = torch.searchsorted(values, values)
            counts = torch.empty(blocks.shape[0], dtype=torch.int64, device=blocks.device)
            counts[order] = torch.arange(blocks.shape[0], device=blocks.device) - first + 1
            return counts
        """}),
        "checks with torch.is_floating_point": ref.solve(SEEN, todo={"8.4.1": """
            if not torch.is_tensor(blocks) or blocks.ndim != 1:
                raise ValueError("blocks must be a 1-D tensor")
            if torch.is_floating_point(blocks) or torch.is_complex(blocks) or blocks.dtype is torch.bool:
                raise ValueError("blocks must hold integers")
        """}),
        "exact type check and a list of integer dtypes": ref.solve(SEEN, todo={"8.4.1": """
            integer = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)
            if type(blocks) is not torch.Tensor or blocks.dim() != 1 or blocks.dtype not in integer:
                raise ValueError("blocks must be a 1-D integer tensor")
        """}),
    },
    TWO: {
        "where first, then the work": ref.solve(TWO, todo={"8.5.2": """
            where = "device" if block in self.tier1 else "host" if block in self.tier2 else "miss"
            if where == "device":
                self.tier1.hit(block)
                self.device_hits += 1
            else:
                if where == "host":
                    self.tier2.hit(block)
                    self.host_hits += 1
                    self.blocks_to_device += 1
                else:
                    self.misses += 1
                evicted = self.tier1.insert(block, self.ref_count)
                if evicted is not None:
                    self._demote(evicted)
        """}),
        "release by decrement, then cleanup": ref.solve(TWO, todo={"8.5.5": """
            if self.ref_count.get(block, 0) < 1:
                raise ValueError(f"{block!r} is not pinned")
            self.ref_count[block] -= 1
            if not self.ref_count[block]:
                self.ref_count.pop(block)
        """}),
        "serve_request reports the change in the counters": ref.solve(TWO, todo={"8.5.6": """
            before = (self.device_hits, self.host_hits, self.misses)
            pinned = []
            try:
                for block in blocks:
                    self.access(block)
                    pinned.append(block)
            finally:
                for block in pinned:
                    self.release(block)
            return (self.device_hits - before[0], self.host_hits - before[1], self.misses - before[2])
        """}),
        "the pins passed as a frozenset of ref_count's keys": ref.edit(
            TWO, ("victim = self.tier1.insert(block, self.ref_count)",
                  "victim = self.tier1.insert(block, frozenset(self.ref_count))")),
        "serve_request with except and re-raise": ref.solve(TWO, todo={"8.5.6": """
            counts = [0, 0, 0]
            done = []
            try:
                for block in blocks:
                    counts[("device", "host", "miss").index(self.access(block))] += 1
                    done.append(block)
            except BaseException:
                for block in done:
                    self.release(block)
                raise
            for block in done:
                self.release(block)
            return tuple(counts)
        """}),
        "_demote returning early": ref.solve(TWO, todo={"8.5.3": """
            if self.write_policy != "write_back" or victim in self.tier2:
                return
            if self._admitted(victim):
                self._write_to_host(victim)
        """}),
        "checks through all() and hasattr": ref.solve(TWO, todo={"8.5.1": """
            if not all(callable(getattr(t, m, None)) for t in (tier1, tier2) for m in ("hit", "insert")):
                raise TypeError("both tiers need hit and insert")
            if admission is not None and not all(callable(getattr(admission, m, None)) for m in ("record", "admits")):
                raise TypeError("admission needs record and admits")
            if isinstance(block_bytes, bool) or not isinstance(block_bytes, int):
                raise TypeError("block_bytes must be an int")
            if tier1 is tier2 or block_bytes < 1 or write_policy not in ("write_back", "write_through"):
                raise ValueError("bad tiers, block_bytes or write_policy")
            self.tier1, self.tier2, self.block_bytes = tier1, tier2, block_bytes
            self.write_policy, self.admission, self.ref_count = write_policy, admission, {}
            self.device_hits = self.host_hits = self.misses = self.blocks_to_host = self.blocks_to_device = 0
        """}),
    },
    COST: {
        "double(), mul and add": ref.solve(COST, todo={"8.6.2": """
            for counts in (recomputed_tokens, loaded_tokens):
                if not torch.is_tensor(counts) or torch.is_floating_point(counts) or torch.is_complex(counts) \\
                        or counts.dtype is torch.bool:
                    raise ValueError("token counts must be integer tensors")
            if recomputed_tokens.shape != loaded_tokens.shape or recomputed_tokens.device != loaded_tokens.device:
                raise ValueError("shapes or devices differ")
            if bool(torch.any(recomputed_tokens < 0)) or bool(torch.any(loaded_tokens < 0)):
                raise ValueError("negative token count")
            return recomputed_tokens.double().mul(self.prefill_seconds_per_token).add(
                loaded_tokens.double().mul(self.load_seconds_per_token))
        """}),
        "exact type check, torch.add with alpha": ref.solve(COST, todo={"8.6.2": """
            for counts in (recomputed_tokens, loaded_tokens):
                if type(counts) is not torch.Tensor or counts.dtype not in (torch.int8, torch.int16, torch.int32,
                                                                            torch.int64, torch.uint8):
                    raise ValueError("token counts must be integer tensors")
            if recomputed_tokens.shape != loaded_tokens.shape or recomputed_tokens.device != loaded_tokens.device:
                raise ValueError("shapes or devices differ")
            if bool((torch.minimum(recomputed_tokens.min(), loaded_tokens.min()) < 0)) if recomputed_tokens.numel() \
                    else False:
                raise ValueError("negative token count")
            return torch.add(recomputed_tokens.double() * self.prefill_seconds_per_token, loaded_tokens.double(),
                             alpha=self.load_seconds_per_token)
        """}),
        "setattr in a loop": ref.solve(COST, todo={"8.6.1": """
            for name, value in zip(("kv_bytes_per_token", "bandwidth_bytes_per_s", "prefill_seconds_per_token"),
                                   (kv_bytes_per_token, bandwidth_bytes_per_s, prefill_seconds_per_token)):
                if type(value) not in (int, float):
                    raise TypeError(f"{name} must be a number")
                if not 0 < value < math.inf:
                    raise ValueError(f"{name} must be finite and positive")
                setattr(self, name, float(value))
            self.load_seconds_per_token = self.kv_bytes_per_token / self.bandwidth_bytes_per_s
            self.break_even_bandwidth = self.kv_bytes_per_token / self.prefill_seconds_per_token
            self.offload_pays = bool(self.load_seconds_per_token < self.prefill_seconds_per_token)
        """}),
    },
}

HIDDEN_ONLY: dict[str, dict[str, str]] = {}

# Every clause of each task's contract (its text and docstring), with the test cell that fails when only that clause
# is broken and the wrong answer above that breaks only it; tests/test_mutants.py checks that the answer exists and
# fails that cell. A clause about the device has no answer here: it shows only when a second device exists, and the
# test cells check it on CUDA (course.env.available_devices).
_T81A, _T81B, _T81C = "test_task8_1_1_init", "test_task8_1_2_hit", "test_task8_1_3_insert"
_T82A, _T82B, _T82C, _T82D, _T82E = ("test_task8_2_1_hit", "test_task8_2_2_replace", "test_task8_2_3_ghost_hits",
                                     "test_task8_2_4_new_blocks", "test_task8_2_5_traces")
_T85A, _T85B, _T85C, _T85D, _T85E = ("test_task8_5_1_init", "test_task8_5_2_access", "test_task8_5_3_demote",
                                     "test_task8_5_4_write_through", "test_task8_5_5_pins")
_T83, _T84 = "test_task8_3_AdmissionFilter", "test_task8_4_seen_counts_t"
_T86A, _T86B = "test_task8_6_1_costs", "test_task8_6_2_ttft"
CLAUSES = {
    LRU: [
        ("TypeError for a bool capacity", _T81A, "accepts a bool capacity"),
        ("TypeError for numpy's integers", _T81A, "numpy integers accepted (numbers.Integral)"),
        ("ValueError for a capacity below 1", _T81A, "accepts capacity 0"),
        ("each tier has its own OrderedDict", _T81A, "one OrderedDict shared by every tier (a mutable default)"),
        ("hit moves the block to the most recent end", _T81B, "hit does not reorder"),
        ("the most recent end is the last one", _T81B, "hit moves the block to the least recent end"),
        ("KeyError for a block that is not resident", _T81B, "hit of a missing block raises nothing"),
        ("hit changes nothing when it raises", _T81B, "hit of a missing block inserts it"),
        ("ValueError for a resident block", _T81C, "moves a resident block instead of raising ValueError"),
        ("the resident block is refused first, whatever pinned holds", _T81C,
         "every block pinned checked before the resident block"),
        ("the victim is not pinned", _T81C, "evicts the least recently used block even when it is pinned"),
        ("the victim is the least recently used unpinned block", _T81C, "evicts the most recently used unpinned block"),
        ("a victim only when the tier is full", _T81C, "holds one block more than its capacity"),
        ("RuntimeError changes nothing", _T81C, "inserts before looking for a victim (changes the tier, then raises)"),
        ("insert returns the victim", _T81C, "returns None instead of the victim"),
        ("block 0 is a block like any other", _T81C, "no victim tested with `not victim` (block 0 is never evicted)"),
        ("pinned is used through `in` only", _T81C,
         "pinned turned into a set (a container that only supports `in` fails)"),
    ],
    ARC: [
        ("hit moves a T1 block to T2", _T82A, "a T1 hit stays in T1"),
        ("hit moves a T2 block to T2's most recent end", _T82A, "a T2 hit leaves the block where it is"),
        ("KeyError for a ghost", _T82A, "a ghost counts as resident on hit"),
        ("REPLACE's B2 tie rule (|T1| == p)", _T82B, "REPLACE ignores the B2 tie rule"),
        ("REPLACE compares |T1| > p strictly", _T82B, "REPLACE compares |T1| >= p"),
        ("REPLACE compares with p itself, not a rounded p", _T82B, "REPLACE compares |T1| with round(p)"),
        ("REPLACE takes T2's block when T1 is empty", _T82B, "REPLACE without the non-empty T1 check"),
        ("REPLACE moves the least recent block", _T82B, "REPLACE moves the most recent block of T1"),
        ("the ratios use true division", _T82C, "integer division in the adaptation of p"),
        ("the ratios use the sizes before the block leaves its ghost list", _T82C,
         "the ratio taken after the ghost left its list"),
        ("case II adds |B2|/|B1|", _T82C, "case II adapts p by |B1|/|B2| (the ratio inverted)"),
        ("case III lowers p", _T82C, "a B2 ghost hit raises p"),
        ("p adapts before replace", _T82C, "replace before p adapts"),
        ("p is clamped to c", _T82C, "p is not clamped to c"),
        ("p stays a float when clamped to c", _T82C, "p becomes the int c when clamped"),
        ("p stays a float when clamped to 0", _T82C, "p clamped at the int 0"),
        ("case III calls replace(True)", _T82C, "replace(False) on a B2 ghost hit"),
        ("a ghost hit goes to T2", _T82C, "a B1 ghost hit goes to T1"),
        ("a ghost hit goes to T2's most recent end", _T82C, "a B1 ghost hit goes to T2's least recent end"),
        ("a ghost hit returns the block replace moved", _T82C,
         "a B1 ghost hit returns the ghost, not the block replace moved"),
        ("case IV A deletes T1's block into no ghost list", _T82D, "case IV A puts the deleted T1 block into B1"),
        ("case IV A deletes B1's ghost only when |T1| < c", _T82D, "case IV A deletes a B1 ghost even when T1 is full"),
        ("case IV A deletes B1's least recent ghost", _T82D, "case IV A deletes the most recent ghost of B1"),
        ("case IV B trims B2 when the total is 2c", _T82D, "B2 trimmed only above 2c (never)"),
        ("case IV B trims B2's least recent ghost", _T82D, "case IV B deletes the most recent ghost of B2"),
        ("case IV B replaces from a total of c", _T82D, "case IV B skipped below 2c (the cache outgrows c)"),
        ("a new block goes to T1", _T82D, "new blocks go to T2"),
    ],
    ADMISSION: [
        ("TypeError for bool arguments", _T83, "accepts bool arguments"),
        ("TypeError for numpy's integers", _T83,
         "numpy integers accepted (numbers.Integral)"),
        ("each filter has its own table", _T83,
         "one table shared by every filter (a mutable default)"),
        ("record moves a known block to the most recent end", _T83,
         "record does not move a known block to the recent end (a FIFO table)"),
        ("the table holds at most max_entries blocks", _T83, "an unbounded table"),
        ("not even one more", _T83, "the table holds max_entries + 1 blocks"),
        ("a full table drops its least recently recorded block", _T83,
         "drops the most recently recorded entry when full"),
        ("only a new block makes room", _T83, "drops an entry before looking the block up"),
        ("count is 0 for an unknown block", _T83, "the count of an unknown block is None"),
        ("count adds nothing", _T83, "count() adds blocks it does not know"),
        ("count does not reorder", _T83, "count() moves the block to the recent end"),
        ("admits is count >= threshold", _T83, "admits only above the threshold"),
        ("admits returns a bool", _T83, "admits returns the count, not a bool"),
        ("admits changes nothing", _T83, "admits records the block"),
    ],
    SEEN: [
        ("counts the references so far, not all of them", _T84,
         "counts every occurrence, not those so far"),
        ("the reference itself counts", _T84, "counts only the earlier references"),
        ("the counts in trace order", _T84, "leaves the counts in sorted order"),
        ("equal ids in trace order (a stable sort)", _T84, "an unstable sort"),
        ("an int64 result", _T84, "an int32 result"),
        ("counts beyond what the ids' dtype holds", _T84,
         "positions in the ids' dtype (int8 and uint8 overflow)"),
        ("negative and huge ids, no bincount", _T84, "torch.bincount over the ids"),
        ("ids are not converted to float64", _T84,
         "ids converted to float64 (2**62 and 2**62 + 1 collide)"),
        ("ids are not narrowed", _T84, "ids narrowed to int32"),
        ("uint8 ids are accepted", _T84, "unsigned ids refused"),
        ("blocks is not changed", _T84, "the ids sorted in place (the caller's tensor changes)"),
        ("no Python loop over the entries", _T84, "a Python loop over the references"),
        ("ValueError for bad input", _T84, "no input checks"),
        ("ValueError for a bool tensor", _T84, "accepts bool tensors"),
        ("ValueError for a 2-D tensor", _T84, "accepts a 2-D tensor"),
        ("the checks come first, an empty tensor included", _T84,
         "an empty input returned before the checks"),
        ("the result is on the input's device (checked on CUDA)", _T84, None),
    ],
    TWO: [
        ("ValueError for another write policy", _T85A, "accepts any write policy"),
        ("TypeError for block_bytes True", _T85A, "accepts block_bytes True"),
        ("TypeError for numpy's integers as block_bytes", _T85A, "numpy integers accepted as block_bytes"),
        ("TypeError for a tier whose hit is not callable", _T85A,
         "tiers checked with hasattr (a hit that is not callable accepted)"),
        ("ValueError when tier1 is tier2", _T85A, "accepts one object as both tiers"),
        ("two distinct tiers that compare equal are accepted (is, not ==)", _T85A,
         "tier1 == tier2 instead of tier1 is tier2 (equal but distinct tiers refused)"),
        ("each cache has its own ref_count", _T85A, "one ref_count dict shared by every cache (a mutable default)"),
        ("tier 1 is looked at first", _T85B, "tier 2 is looked at before tier 1"),
        ("a device hit is counted as one", _T85B, "a device hit is counted as a host hit"),
        ("a host hit is promoted into tier 1", _T85B, "a host hit is not promoted into tier 1"),
        ("a host hit counts a block moved to the device", _T85B, "a host hit is not counted as a copy to the device"),
        ("a host hit calls tier2.hit", _T85B, "tier 2 is not told of a host hit"),
        ("tier2.hit comes before tier 1 takes the block and demotes its victim", _T85B,
         "tier 2 told of the host hit after the demotion (which may push the block out)"),
        ("the pins go to tier1.insert", _T85B, "the pins are not passed to tier 1"),
        ("a victim goes to _demote", _T85B, "victims are dropped, never demoted"),
        ("block 0 is a victim like any other", _T85B, "victims tested by truthiness (block 0 is never demoted)"),
        ("write-back copies no victim that tier 2 holds", _T85C,
         "write-back copies a victim that tier 2 already holds"),
        ("write-back asks the filter", _T85C, "write-back ignores the admission filter"),
        ("write-through drops victims", _T85C, "write-through also copies victims"),
        ("a demotion is not a sighting", _T85C, "a demotion counted as a sighting by the filter"),
        ("write-through asks the filter", _T85D, "write-through ignores the admission filter"),
        ("write-through copies no block that tier 2 holds", _T85D,
         "write-through copies a block that tier 2 already holds"),
        ("the filter records every access once, whatever its outcome", _T85B, "the filter records misses only"),
        ("write-through records nothing", _T85D, "write-through counts the access a second time in the filter"),
        ("ValueError when releasing a block that is not pinned", _T85E, "release of an unpinned block raises nothing"),
        ("a count of 0 leaves ref_count", _T85E, "release keeps blocks whose count reached 0"),
        ("release drops one reference", _T85E, "release deletes a block pinned twice"),
        ("serve_request releases every pin it made", _T85E, "serve_request releases each distinct block once"),
        ("serve_request releases its pins when an access raises", _T85E,
         "serve_request leaks its pins when an access raises"),
        ("serve_request returns a tuple", _T85E, "serve_request returns a list"),
        ("serve_request counts this request, not the cache's totals", _T85E,
         "serve_request returns the cache's totals, not the request's"),
    ],
    COST: [
        ("TypeError for bool arguments", _T86A, "accepts bool arguments"),
        ("TypeError for other real types (numpy's int64, Fraction)", _T86A,
         "any real number accepted (numbers.Real: Fraction, numpy's int64)"),
        ("ValueError for inf and nan", _T86A, "accepts inf and nan"),
        ("ValueError for nan", _T86A, "nan accepted (only inf refused)"),
        ("the arguments kept as floats", _T86A, "keeps an int argument as an int"),
        ("load_seconds_per_token is b / B", _T86A, "the load cost inverted (bandwidth / bytes)"),
        ("break_even_bandwidth is b / t_prefill", _T86A, "the break-even bandwidth inverted"),
        ("offloading pays strictly below the prefill cost", _T86A, "offloading pays at equal costs"),
        ("ttft adds the loaded tokens' time", _T86B, "ttft ignores the loaded tokens"),
        ("ttft returns a tensor per request", _T86B, "ttft returns the total, a Python float"),
        ("ttft in float64", _T86B, "ttft in float32"),
        ("ttft with no float32 step on the way", _T86B, "ttft through a float32 step, returned as float64"),
        ("ttft accepts every integer dtype", _T86B, "ttft refuses the small integer dtypes"),
        ("ValueError for float tensors", _T86B, "ttft accepts float tensors"),
        ("ValueError for bool tensors", _T86B, "ttft accepts bool tensors"),
        ("ValueError for complex tensors", _T86B, "ttft accepts complex tensors (only float and bool refused)"),
        ("ValueError for negative counts", _T86B, "ttft accepts negative counts"),
        ("ValueError for a negative loaded count too", _T86B, "ttft checks only the recomputed counts for negatives"),
        ("ValueError for shapes that differ, broadcastable ones included", _T86B,
         "ttft relies on broadcasting (no shape check)"),
        ("no Python loop over the requests", _T86B, "ttft loops over the requests in Python"),
        ("the result on the inputs' device (checked on CUDA)", _T86B, None),
        ("ValueError for two devices (the meta device stands in for the second)", _T86B,
         "ttft without the device check"),
    ],
}

# Round 6 (2026-12-06): every proxy of a test's object in the student's kernel had every special method (__iter__,
# __len__, __call__...), so that an answer that asks whether `pinned` is iterable before freezing it failed 8.1.3
# through the judge: the test's pinned set answers `in` only (fixed in grading/judge/agent.py: a proxy has its
# class's own).
_VICTIM = "            victim = next((resident for resident in self.blocks if resident not in pinned), None)\n"
ALTERNATIVES[LRU]["pinned frozen into a set first where it can be iterated (collections.abc)"] = ref.edit(LRU, (
    _VICTIM, '''            import collections.abc
            if isinstance(pinned, collections.abc.Iterable) and not isinstance(pinned, (set, frozenset, dict)):
                pinned = frozenset(pinned)
''' + _VICTIM))


# Round 7 (2026-12-06): correct answers that lost points through the judge until grading/judge/ was fixed
# (a717772, c2e806a and the commit after it); each is graded the same both ways now.
_INIT_END = "        self.offload_pays = self.load_seconds_per_token < self.prefill_seconds_per_token"
ALTERNATIVES[COST]["a float64 work buffer made in __init__, resized in ttft; a clone returned"] = ref.edit(
    COST, (_INIT_END, _INIT_END + '''
        self._out = torch.empty(0, dtype=torch.float64)'''),
    (_TTFT, '''if self._out.device != recomputed_tokens.device:
            self._out = torch.empty(0, dtype=torch.float64, device=recomputed_tokens.device)
        self._out.resize_(recomputed_tokens.shape)
        torch.mul(recomputed_tokens.to(torch.float64), self.prefill_seconds_per_token, out=self._out)
        self._out.add_(loaded_tokens.to(torch.float64), alpha=self.load_seconds_per_token)
        return self._out.clone()'''))

# Round 8 (2026-12-06): a shutdown that writes back the pinned blocks tier 2 lacks, run by __del__, and a __hash__
# over tier 1. Through the judge the first hung the kernel (its calls to the test's tiers came while the kernel read
# the judge's message, or after the test had ended) and the second ended it (the hash was taken while a message was
# being made).
_BYTES_TO_HOST = "    @property\n    def bytes_to_host(self):"
ALTERNATIVES[TWO]["a close() that writes back the pinned blocks, run by __del__"] = ref.edit(TWO, (
    _BYTES_TO_HOST,
    '    def close(self):\n        """Write back every pinned block that tier 2 lacks (shutdown)."""\n'
    "        for block in list(getattr(self, 'ref_count', ())):\n"
    "            if self.write_policy == 'write_back' and block not in self.tier2:\n"
    "                self._write_to_host(block)\n\n    __del__ = close\n\n" + _BYTES_TO_HOST))
ALTERNATIVES[TWO]["a __hash__ over tier 1"] = ref.edit(TWO, (
    _BYTES_TO_HOST, "    def __hash__(self):\n        return hash(self.tier1)\n\n" + _BYTES_TO_HOST))

# Round 9 (2026-12-06): wrong answers that passed every test cell; checks of 8.5.1 and 8.6.1 (visible and hidden)
# now catch them.
WRONG[TWO]["write_policy checked against a set (a list policy raises TypeError)"] = ref.edit(TWO, (
    'if write_policy not in ("write_back", "write_through"):',
    'if write_policy not in {"write_back", "write_through"}:'))
WRONG[TWO]["admission needs only a callable admits"] = ref.edit(TWO, (
    'if admission is not None and not (callable(getattr(admission, "record", None))\n'
    '                                          and callable(getattr(admission, "admits", None))):',
    'if admission is not None and not callable(getattr(admission, "admits", None)):'))
WRONG[TWO]["admission's record checked with hasattr only (record = 1 accepted)"] = ref.edit(TWO, (
    'if admission is not None and not (callable(getattr(admission, "record", None))',
    'if admission is not None and not (hasattr(admission, "record")'))
WRONG[COST]["offload_pays through the break-even bandwidth (True at equal costs after rounding)"] = ref.edit(COST, (
    "self.offload_pays = self.load_seconds_per_token < self.prefill_seconds_per_token",
    "self.offload_pays = self.break_even_bandwidth < self.bandwidth_bytes_per_s"))

# Round 6 (2026-12-06, a red-team answer): no case served a request that uses a block another request had pinned, so a
# serve_request that drops every pin of its blocks kept 8.5.5's points; the visible part now shows one.
WRONG[TWO]["serve_request drops every pin of its blocks (another request's pins too)"] = ref.edit(TWO, (
    "            for block in pinned:\n                self.release(block)\n",
    "            for block in pinned:\n                self.ref_count.pop(block, None)\n"))

# Round 7 (2026-12-06 evening, a red-team answer): 8.6.2's hidden oracle used the student's load_seconds_per_token,
# so a load cost rounded through float32 passed ttft's cases; it now uses the test's own arguments.
WRONG[COST]["load_seconds_per_token computed in float32"] = ref.edit(COST, (
    "        self.load_seconds_per_token = self.kv_bytes_per_token / self.bandwidth_bytes_per_s\n",
    "        self.load_seconds_per_token = (torch.tensor(self.kv_bytes_per_token)\n"
    "                                       / self.bandwidth_bytes_per_s).item()\n"))

# Round 9 (2026-12-06 night, mistakes that passed 8.5): no test ran access under write-through, nor with a filter that
# refuses a block; 8.5.2's visible part now does both.
_LOOKUP_END = ("            victim = self.tier1.insert(block, self.ref_count)\n            if victim is not None:\n"
               "                self._demote(victim)\n")
WRONG[TWO]["the filter also decides what goes into tier 1"] = ref.edit(TWO, (
    _LOOKUP_END, "            if where == 'host' or self._admitted(block):\n"
                 "                victim = self.tier1.insert(block, self.ref_count)\n"
                 "                if victim is not None:\n                    self._demote(victim)\n"))
_MISS = '            else:\n                self.misses += 1\n                where = "miss"\n'
WRONG[TWO]["write-through of a miss straight to tier 2, the filter not asked"] = ref.edit(TWO, (
    _MISS, _MISS + '                if self.write_policy == "write_through" and block not in self.tier2:\n'
                   '                    self._write_to_host(block)\n'))
WRONG[TWO]["write-through only for the blocks that arrive, never on a device hit"] = ref.edit(TWO, (
    '        if self.write_policy == "write_through":\n            self._write_through(block)\n',
    '        if self.write_policy == "write_through" and where != "device":\n            self._write_through(block)\n'))
# A fairness pass (2026-12-07): readings the texts leave open, each accepted.
ALTERNATIVES[LRU]["insert lists every unpinned block first, then takes the oldest"] = ref.edit(LRU, (
    _LRU_VICTIM + "\n            if victim is None:",
    "unpinned = [resident for resident in self.blocks if resident not in pinned]\n"
    "            victim = unpinned[0] if unpinned else None\n            if not unpinned:"))
ALTERNATIVES[TWO]["every TypeError checked before the ValueErrors"] = ref.edit(TWO, (
    '        if tier1 is tier2:\n            raise ValueError("tier1 and tier2 must be two different tier objects")\n'
    '        if type(block_bytes) is not int:\n'
    '            raise TypeError(f"block_bytes must be an int, got {type(block_bytes).__name__}")\n',
    '        if type(block_bytes) is not int:\n'
    '            raise TypeError(f"block_bytes must be an int, got {type(block_bytes).__name__}")\n'
    '        if tier1 is tier2:\n            raise ValueError("tier1 and tier2 must be two different tier objects")\n'))
ALTERNATIVES[TWO]["the filter asked before the tier-2 lookup"] = ref.edit(
    TWO, ('if self.write_policy == "write_back" and victim not in self.tier2 and self._admitted(victim):',
          'if self.write_policy == "write_back" and self._admitted(victim) and victim not in self.tier2:'),
    ("if block not in self.tier2 and self._admitted(block):", "if self._admitted(block) and block not in self.tier2:"))
ALTERNATIVES[TWO]["serve_request releases in reverse order and counts from the counters"] = ref.edit(TWO, (
    '        found = {"device": 0, "host": 0, "miss": 0}\n        pinned = []\n        try:\n'
    '            for block in blocks:\n                found[self.access(block)] += 1\n'
    '                pinned.append(block)\n'
    '        finally:\n            for block in pinned:\n                self.release(block)\n'
    '        return found["device"], found["host"], found["miss"]',
    '        before = (self.device_hits, self.host_hits, self.misses)\n        pinned = []\n        try:\n'
    '            for block in blocks:\n                self.access(block)\n                pinned.append(block)\n'
    '        finally:\n            for block in reversed(pinned):\n                self.release(block)\n'
    '        return (self.device_hits - before[0], self.host_hits - before[1], self.misses - before[2])'))
# Round 8, later (2026-12-07, red team): in 8.5.5 no other request's pin was on a block the failing request listed,
# so releasing every pinned block of the request (not the pins it took) passed; the visible error case now has other
# pins on 2 and 6, and the hidden cases' other pins may fall on the request's blocks. 8.6.2 had no negative count
# whose sum with the other is positive, and 8.6.1 no numpy.float64 argument (a subclass of float: taken, or refused
# with TypeError; taken, the attributes are Python floats).
WRONG[TWO]["serve_request releases every pinned block of the request, not the pins it took"] = ref.edit(TWO, (
    "            for block in pinned:\n                self.release(block)\n",
    "            for block in blocks:\n                if block in self.ref_count:\n"
    "                    self.release(block)\n"))
WRONG[COST]["ttft checks the sum of the two counts for negatives"] = ref.edit(COST, (
    "if bool((recomputed_tokens < 0).any()) or bool((loaded_tokens < 0).any()):",
    "if bool(((recomputed_tokens.to(torch.int64) + loaded_tokens.to(torch.int64)) < 0).any()):"))
WRONG[COST]["only the arguments that are not floats converted (a numpy.float64 kept)"] = ref.edit(COST, (
    "        self.kv_bytes_per_token = float(kv_bytes_per_token)\n"
    "        self.bandwidth_bytes_per_s = float(bandwidth_bytes_per_s)\n"
    "        self.prefill_seconds_per_token = float(prefill_seconds_per_token)\n",
    "        def as_float(value):\n"
    "            return value if isinstance(value, float) else float(value)\n"
    "        self.kv_bytes_per_token = as_float(kv_bytes_per_token)\n"
    "        self.bandwidth_bytes_per_s = as_float(bandwidth_bytes_per_s)\n"
    "        self.prefill_seconds_per_token = as_float(prefill_seconds_per_token)\n"))
ALTERNATIVES[COST]["each argument exactly an int or a float (a numpy.float64 refused)"] = ref.edit(COST, (
    "            if isinstance(value, bool) or not isinstance(value, (int, float)):",
    "            if type(value) not in (int, float):"))
# Round 9 (2026-12-07, typical mistakes that passed): blocks stored with the value True where the text says None, and
# ttft without its device check (8.6.2 tried only one device on a grader without a GPU; a tensor on the meta device
# now stands for another one, and the text says to check dtypes, shapes and devices before the counts).
WRONG[LRU]["blocks stored with the value True, not None"] = ref.edit(LRU, (
    "        self.blocks[block] = None\n", "        self.blocks[block] = True\n"))
WRONG[COST]["ttft without the device check"] = ref.edit(COST, (
    "if recomputed_tokens.shape != loaded_tokens.shape or recomputed_tokens.device != loaded_tokens.device:",
    "if recomputed_tokens.shape != loaded_tokens.shape:"))

# Round 13 (2026-12-07), found by a red-team helper: 8.6.1's offload_pays false for costs that are close but not
# equal (math.isclose), where the text says strictly less.
WRONG[COST]["offload_pays false when the two costs are close"] = ref.edit(COST, (
    "self.offload_pays = self.load_seconds_per_token < self.prefill_seconds_per_token",
    "self.offload_pays = (self.load_seconds_per_token < self.prefill_seconds_per_token\n"
    "                             and not math.isclose(self.load_seconds_per_token, self.prefill_seconds_per_token))"))
# And 8.2.2's REPLACE comparing |T1| with p within 1e-9 (the text: "exactly as written"), which no p just above an
# integer showed (p = 1 + 2**-52 now, as 0 + 7/3 - 4/3 leaves it).
WRONG[ARC]["REPLACE's |T1| = p within 1e-9"] = ref.edit(ARC, (
    "(in_b2 and len(self.t1) == self.p)", "(in_b2 and abs(len(self.t1) - self.p) < 1e-9)"))

# Round 14 (2026-12-07), found by a red-team helper: ttft comparing the shapes by their number of elements and
# dimensions, which no test's two shapes told apart ([2, 3] and [3, 2] now).
WRONG[COST]["ttft's shapes compared by numel and dim"] = ref.edit(COST, (
    "if recomputed_tokens.shape != loaded_tokens.shape or",
    "if (recomputed_tokens.numel(), recomputed_tokens.dim()) != (loaded_tokens.numel(), loaded_tokens.dim()) or"))
# And (a second helper) serve_request releasing the request's pins only when access raises RuntimeError (the
# stand-in access raised nothing else), and an admission that is false but not None (0, []) accepted.
WRONG[TWO]["serve_request releases the pins only on RuntimeError"] = ref.edit(TWO, (
    "        finally:\n            for block in pinned:\n                self.release(block)\n",
    "        except RuntimeError:\n            for block in pinned:\n                self.release(block)\n"
    "            raise\n"
    "        for block in pinned:\n            self.release(block)\n"))
WRONG[TWO]["an admission that is false but not None accepted"] = ref.edit(TWO, (
    "if admission is not None and not (callable(", "if admission and not (callable("))

# Round 17 (2026-12-07, a fairness helper): a cache that also keeps its two tiers, the test's objects, in a frozenset
# scored 0 judged: the kernel hashed the tiers as it read the frozenset back, when it could not ask the judge. The
# judge now sends a lent object's hash where it is the object's identity.
ALTERNATIVES[TWO]["the tiers also kept in a frozenset"] = ref.edit(TWO, (
    "        self.ref_count = {}\n", "        self.ref_count = {}\n        self._tiers = frozenset({tier1, tier2})\n"))
