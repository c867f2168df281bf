"""Wrong and alternative answers for notebook 03 (see tests/answers/__init__.py)."""

from grading.authoring.reference import Reference

ref = Reference("03_lru_lfu")

BASE, LRU, LFU = "task3_1_EvictionPolicy", "task3_2_LRUPolicy", "task3_3_LFUPolicy"
FIT, LRU_T, LFU_T, ORDER_T = ("task3_4_evict_until_fit", "task3_5_lru_victim_t", "task3_6_lfu_victim_t",
                              "task3_7_evict_order_t")

_CANDIDATES = "sorted(seq_id for seq_id in sequences if seq_id not in protected)"
_LRU_MIN = "min(candidates, key=lambda seq_id: (sequences[seq_id].last_access_step, seq_id))"
_LFU_KEY = "(sequences[seq_id].use_count, sequences[seq_id].last_access_step, seq_id)"
_FREEABLE = "freeable = sum(1 for block_id, count in references.items() if count == blocks[block_id].ref_count)"
_INFEASIBLE = "if allocator.num_free + freeable < blocks_needed:"

WRONG = {
    BASE: {
        "protected ids ignored": ref.edit(BASE, (_CANDIDATES, "sorted(sequences)")),
        "insertion order instead of sorted": ref.edit(
            BASE, (_CANDIDATES, "[seq_id for seq_id in sequences if seq_id not in protected]")),
        "returns a set": ref.edit(BASE, (_CANDIDATES, "set(sequences) - set(protected)")),
        "select_victim returns None instead of being abstract": ref.edit(
            BASE, ('raise NotImplementedError(f"{type(self).__name__} must implement select_victim")', "return None")),
        "removes the protected ids from the dict": ref.solve(BASE, candidates="""
            for seq_id in list(sequences):
                if seq_id in protected:
                    del sequences[seq_id]
            return sorted(sequences)
        """),
        "drops the uncached ids from protected (changes its argument)": ref.solve(BASE, candidates="""
            if isinstance(protected, set):
                protected &= set(sequences)
            return sorted(seq_id for seq_id in sequences if seq_id not in protected)
        """),
        "returns the same list on every call (cached)": ref.solve(BASE, candidates="""
            if getattr(self, "_ids", None) is None:
                self._ids = []
            self._ids[:] = sorted(seq_id for seq_id in sequences if seq_id not in protected)
            return self._ids
        """),
        "sorted descending": ref.edit(BASE, (_CANDIDATES, f"{_CANDIDATES[:-1]}, reverse=True)")),
    },
    LRU: {
        "LRU by use_count": ref.edit(LRU, ("(sequences[seq_id].last_access_step, seq_id)",
                                           "(sequences[seq_id].use_count, seq_id)")),
        "ties broken by the larger id": ref.edit(
            LRU, (_LRU_MIN, "max(candidates, key=lambda seq_id: (-sequences[seq_id].last_access_step, seq_id))")),
        "protected ids ignored": ref.edit(LRU, ("self.candidates(sequences, protected)", "self.candidates(sequences)")),
        "most recently used instead of least": ref.edit(
            LRU, ("(sequences[seq_id].last_access_step, seq_id)", "(-sequences[seq_id].last_access_step, seq_id)")),
        "returns the SequenceKVCache, not its id": ref.edit(LRU, (_LRU_MIN, f"sequences[{_LRU_MIN}]")),
        "ties left to the dict's order": ref.solve(LRU, todo={"3.2.2": """
            unprotected = [seq_id for seq_id in sequences if seq_id in candidates]
            return min(unprotected, key=lambda seq_id: sequences[seq_id].last_access_step)
        """}),
        "evicts the victim itself (removes it from sequences)": ref.edit(
            LRU, (f"return {_LRU_MIN}", f"victim = {_LRU_MIN}\n        del sequences[victim]\n        return victim")),
        "ranks the sequences on the first call only (a stale ranking on later calls)": ref.solve(LRU, todo={"3.2.2": """
            if getattr(self, "_ranking", None) is None:
                self._ranking = sorted(sequences, key=lambda seq_id: (sequences[seq_id].last_access_step, seq_id))
            return next((seq_id for seq_id in self._ranking if seq_id in candidates), candidates[0])
        """}),
    },
    LFU: {
        "LFU without the recency tie-break": ref.edit(LFU, (_LFU_KEY, "(sequences[seq_id].use_count, seq_id)")),
        "ranks the sequences on the first call only (a stale ranking on later calls)": ref.solve(
            LFU, todo={"3.3.2": f"""
            if getattr(self, "_ranking", None) is None:
                self._ranking = sorted(sequences, key=lambda seq_id: {_LFU_KEY})
            return next((seq_id for seq_id in self._ranking if seq_id in candidates), candidates[0])
        """}),
        "ties broken by the larger id": ref.edit(
            LFU, (f"min(candidates, key=lambda seq_id: {_LFU_KEY})",
                  "max(candidates, key=lambda seq_id: (-sequences[seq_id].use_count, "
                  "-sequences[seq_id].last_access_step, "
                  "seq_id))")),
        "protected ids ignored": ref.edit(LFU, ("self.candidates(sequences, protected)", "self.candidates(sequences)")),
        "most recent first among equal counts": ref.edit(
            LFU, (_LFU_KEY, "(sequences[seq_id].use_count, -sequences[seq_id].last_access_step, seq_id)")),
        "recency before frequency": ref.edit(
            LFU, (_LFU_KEY, "(sequences[seq_id].last_access_step, sequences[seq_id].use_count, seq_id)")),
        "ties of both keys left to the dict's order": ref.solve(LFU, todo={"3.3.2": """
            unprotected = [seq_id for seq_id in sequences if seq_id in candidates]
            return min(unprotected,
                       key=lambda seq_id: (sequences[seq_id].use_count, sequences[seq_id].last_access_step))
        """}),
        "bumps the victim's use_count": ref.solve(LFU, todo={"3.3.2": f"""
            victim = min(candidates, key=lambda seq_id: {_LFU_KEY})
            sequences[victim].use_count += 1
            return victim
        """}),
    },
    FIT: {
        "evicts partially before failing": ref.solve(FIT, todo={"3.4.2": "pass"}),
        "counts shared blocks as freeable": ref.edit(FIT, (_FREEABLE, "freeable = sum(references.values())")),
        "protected ids not passed to the policy": ref.edit(
            FIT, ("policy.select_victim(manager.sequences, protected)\n", "policy.select_victim(manager.sequences)\n")),
        "evicts one victim too many (> instead of >=)": ref.edit(
            FIT, ("while allocator.num_free < blocks_needed:", "while allocator.num_free <= blocks_needed:"),
            ('raise RuntimeError("the policy chose no victim although enough blocks are freeable")', "break")),
        "no check of blocks_needed < 0": ref.edit(
            FIT, ('    if blocks_needed < 0:\n'
                  '        raise ValueError(f"blocks_needed must be >= 0, got {blocks_needed}")\n',
                  "")),
        "feasibility ignores the blocks already free": ref.edit(FIT, (_INFEASIBLE, "if freeable < blocks_needed:")),
        "feasibility counts the protected sequences' blocks too": ref.edit(
            FIT, ("        if seq_id not in protected:\n            for block in seq.block_table:",
                  "        if True:\n            for block in seq.block_table:")),
        "ranks the sequences itself (LRU) instead of asking the policy": ref.edit(
            FIT, ("victim = policy.select_victim(manager.sequences, protected)\n",
                  "victim = min((s for s in manager.sequences if s not in protected),\n"
                  "                     key=lambda s: manager.sequences[s].last_access_step, default=None)\n")),
        "a block shared with a protected sequence counted when two others share it": ref.edit(
            FIT, (_FREEABLE, "freeable = sum(1 for block_id, count in references.items()\n"
                             "                   if count == blocks[block_id].ref_count or count > 1)")),
        "only unshared blocks counted as freeable": ref.edit(
            FIT, (_FREEABLE, "freeable = sum(1 for block in blocks.values() if block.ref_count == 1)")),
        "returns the released SequenceKVCache objects": ref.edit(
            FIT, ("        manager.release(manager.sequences[victim])\n        evicted.append(victim)",
                  "        evicted.append(manager.sequences[victim])\n        manager.release(evicted[-1])")),
    },
    LRU_T: {
        "ties broken by the last index": ref.solve(LRU_T, todo={"3.5.2": """
            candidates = torch.nonzero(evictable).flatten()
            if candidates.numel() == 0:
                return -1
            values = last_access_step[candidates]
            return int(candidates[values == values.min()][-1])
        """}),
        "ignores the mask": ref.solve(LRU_T, todo={"3.5.2": """
            if not bool(evictable.any()):
                return -1
            return int(torch.argmin(last_access_step))
        """}),
        "masks with the int64 maximum (a masked entry can win)": ref.edit(
            LRU_T, ("    if index >= 0 and bool(evictable[index]):\n        return index\n"
                    "    candidates = torch.nonzero(evictable).flatten()\n"
                    "    return int(candidates[0]) if candidates.numel() else -1",
                    "    return index if bool(evictable.any()) else -1")),
        "returns a tensor, not an int": ref.solve(LRU_T, todo={"3.5.2": """
            candidates = torch.nonzero(evictable).flatten()
            if candidates.numel() == 0:
                return -1
            return candidates[torch.argmin(last_access_step[candidates])]
        """}),
        "a Python loop over the entries": ref.solve(LRU_T, todo={"3.5.2": """
            best = -1
            for i in range(last_access_step.shape[0]):
                if bool(evictable[i]) and (best < 0 or bool(last_access_step[i] < last_access_step[best])):
                    best = i
            return best
        """}),
        "masks in float64 with +inf (large steps collide)": ref.solve(LRU_T, todo={"3.5.2": """
            if not bool(evictable.any()):
                return -1
            masked = torch.where(evictable, last_access_step.double(), float("inf"))
            return int(torch.argmin(masked))
        """}),
        "masks the caller's steps in place (masked_fill_)": ref.edit(
            LRU_T, ("masked = torch.where(evictable, last_access_step, largest)",
                    "masked = last_access_step.masked_fill_(~evictable, largest)")),
        "checks the lengths, not the dimensions": ref.solve(LRU_T, todo={"3.5.1": """
            if len(last_access_step) != len(evictable):
                raise ValueError("the tensors differ in length")
        """}),
    },
    LFU_T: {
        "ties broken by the last index": ref.edit(
            LFU_T, ("    index = int(torch.argmin(masked))\n    if bool(tied[index]):\n        return index\n"
                    "    return int(torch.nonzero(tied)[0, 0])",
                    "    tied = tied & (masked == masked.min())\n    return int(torch.nonzero(tied)[-1, 0])")),
        "LFU without the recency tie-break": ref.edit(
            LFU_T, ("masked = torch.where(tied, last_access_step, largest)",
                    "masked = torch.where(tied, torch.zeros_like(last_access_step), largest)")),
        "folds both keys into one number": ref.solve(LFU_T, todo={"3.6.2": "tied = evictable", "3.6.3": """
            candidates = torch.nonzero(tied).flatten()
            combined = use_count[candidates] * 10**6 + last_access_step[candidates]
            return int(candidates[torch.argmin(combined)])
        """}),
        "no shape check": ref.solve(LFU_T, todo={"3.6.1": """
            if not bool(evictable.any()):
                return -1
        """}),
        "packs with 2**32 (int64 overflows)": ref.solve(LFU_T, todo={"3.6.2": "tied = evictable", "3.6.3": """
            packed = torch.where(tied, use_count * 2**32 + last_access_step, largest)
            return int(torch.argmin(packed))
        """}),
        "a Python loop over the entries": ref.solve(LFU_T, todo={"3.6.2": "tied = evictable", "3.6.3": """
            best = -1
            for i in range(len(use_count)):
                if bool(tied[i]):
                    row = (int(use_count[i]), int(last_access_step[i]))
                    if best < 0 or row < (int(use_count[best]), int(last_access_step[best])):
                        best = i
            return best
        """}),
        "steps compared in float64 (large steps collide)": ref.edit(
            LFU_T, ("masked = torch.where(tied, last_access_step, largest)",
                    'masked = torch.where(tied, last_access_step.double(), float("inf"))')),
        "masks the caller's use counts in place (masked_fill_)": ref.edit(
            LFU_T, ("fewest = torch.where(evictable, use_count, largest).min()",
                    "fewest = use_count.masked_fill_(~evictable, largest).min()")),
        "the fewest uses over all entries, protected ones included": ref.edit(
            LFU_T, ("fewest = torch.where(evictable, use_count, largest).min()", "fewest = use_count.min()")),
        "steps masked with the int64 maximum, no second check": ref.edit(
            LFU_T, ("    index = int(torch.argmin(masked))\n    if bool(tied[index]):\n        return index\n"
                    "    return int(torch.nonzero(tied)[0, 0])",
                    "    return int(torch.argmin(masked))")),
    },
    ORDER_T: {
        "ties broken by the last index": ref.edit(
            ORDER_T, ("order = torch.arange(evictable.shape[0], device=evictable.device)",
                      "order = torch.arange(evictable.shape[0], device=evictable.device).flip(0)")),
        "most significant key sorted first": ref.edit(ORDER_T, ("for key in reversed(keys):", "for key in keys:")),
        "takes k before dropping protected entries": ref.edit(
            ORDER_T, ("return order[evictable[order]][:k]", "order = order[:k]\n    return order[evictable[order]]")),
        "only the first key": ref.edit(ORDER_T, ("for key in reversed(keys):", "for key in keys[:1]:")),
        "returns int32 indices": ref.edit(
            ORDER_T, ("return order[evictable[order]][:k]", "return order[evictable[order]][:k].to(torch.int32)")),
        "a Python loop over the entries (sorted with a key)": ref.solve(ORDER_T, todo={"3.7.2": """
            ranked = sorted(range(evictable.shape[0]), key=lambda i: [int(key[i]) for key in keys] + [i])
            order = torch.tensor(ranked, dtype=torch.int64, device=evictable.device)
        """}),
        "an unstable sort (torch.argsort)": ref.solve(ORDER_T, todo={"3.7.2": """
            for key in reversed(keys):
                order = order[torch.argsort(key[order])]
        """}),
        "no shape check of the keys": ref.edit(
            ORDER_T, ("    if evictable.dim() != 1 or any(key.shape != evictable.shape for key in keys):\n"
                      '        raise ValueError("keys and evictable must be 1-D tensors of one length")\n', "")),
    },
}

ALTERNATIVES = {
    BASE: {
        "filter then sort in place": ref.solve(BASE, candidates="""
            ids = list(filter(lambda seq_id: seq_id not in protected, sequences.keys()))
            ids.sort()
            return ids
        """),
        "set difference, then sorted": ref.solve(BASE, candidates="return sorted(set(sequences) - set(protected))"),
        "sorted keys, then a filter": ref.solve(BASE, candidates="""
            return [seq_id for seq_id in sorted(sequences.keys()) if seq_id not in protected]
        """),
    },
    LRU: {
        "sorted()[0] over tuples": ref.solve(LRU, todo={"3.2.1": "pass", "3.2.2": """
            rows = sorted((sequences[seq_id].last_access_step, seq_id) for seq_id in candidates)
            return rows[0][1] if rows else None
        """}),
        "explicit scan over sorted candidates": ref.solve(LRU, todo={"3.2.1": "best = None", "3.2.2": """
            for seq_id in candidates:
                if best is None or sequences[seq_id].last_access_step < sequences[best].last_access_step:
                    best = seq_id
            return best
        """}),
        "heapq.nsmallest": ref.solve(LRU, before="import heapq", todo={"3.2.1": "pass", "3.2.2": """
            top = heapq.nsmallest(1, ((sequences[k].last_access_step, k) for k in candidates))
            return top[0][1] if top else None
        """}),
    },
    LFU: {
        "heapq over (use_count, step, id)": ref.solve(LFU, before="import heapq", todo={"3.3.2": """
            heap = [(sequences[k].use_count, sequences[k].last_access_step, k) for k in candidates]
            heapq.heapify(heap)
            return heap[0][2]
        """}),
        "two stable sorts": ref.solve(LFU, todo={"3.3.2": """
            candidates.sort(key=lambda s: sequences[s].last_access_step)
            candidates.sort(key=lambda s: sequences[s].use_count)
            return candidates[0]
        """}),
    },
    FIT: {
        "dry run on a deep copy": ref.solve(FIT, before="import copy", todo={"3.4.2": """
            trial = copy.deepcopy(manager)
            for seq_id in [s for s in trial.sequences if s not in protected]:
                trial.release(trial.sequences[seq_id])
            if trial.allocator.num_free < blocks_needed:
                raise RuntimeError("even evicting every unprotected sequence frees too few blocks")
        """}),
        "Counter of references by block object": ref.solve(
            FIT, before="from collections import Counter", todo={"3.4.2": """
            owners = Counter()
            blocks = {}
            for seq_id, seq in manager.sequences.items():
                if seq_id in protected:
                    continue
                for block in seq.block_table:
                    owners[id(block)] += 1
                    blocks[id(block)] = block
            freeable = sum(owners[key] == block.ref_count for key, block in blocks.items())
            if manager.allocator.num_free + freeable < blocks_needed:
                raise RuntimeError("cannot free enough blocks")
        """, "3.4.3": """
            victims = []
            while manager.allocator.num_free < blocks_needed:
                victims.append(policy.select_victim(manager.sequences, protected))
                manager.release(manager.sequences[victims[-1]])
            return victims
        """}),
        "pinned blocks subtracted from the used ones": ref.solve(FIT, todo={"3.4.1": """
            if blocks_needed < 0:
                raise ValueError("blocks_needed must be >= 0")
        """, "3.4.2": """
            pinned = {block.block_id for seq_id, seq in manager.sequences.items() if seq_id in protected
                      for block in seq.block_table}
            held = {block.block_id for seq in manager.sequences.values() for block in seq.block_table}
            if manager.allocator.num_free + len(held - pinned) < blocks_needed:
                raise RuntimeError("cannot free enough blocks")
        """, "3.4.3": """
            out = []
            while manager.allocator.num_free < blocks_needed:
                out.append(policy.select_victim(manager.sequences, protected))
                manager.release(manager.sequences[out[-1]])
            return out
        """}),
    },
    LRU_T: {
        "stable sort, first evictable": ref.solve(LRU_T, todo={"3.5.1": """
            if last_access_step.ndim != 1 or last_access_step.shape != evictable.shape:
                raise ValueError("expected 1-D tensors of one length")
        """, "3.5.2": """
            order = torch.sort(last_access_step, stable=True).indices
            order = order[evictable[order]]
            return int(order[0]) if order.numel() else -1
        """}),
        "min value, then first index that has it": ref.solve(LRU_T, todo={"3.5.1": """
            if last_access_step.ndim != 1 or evictable.ndim != 1 or len(last_access_step) != len(evictable):
                raise ValueError("expected 1-D tensors of one length")
        """, "3.5.2": """
            if not bool(evictable.any()):
                return -1
            smallest = last_access_step[evictable].min()
            hits = torch.nonzero(evictable & (last_access_step == smallest)).flatten()
            return int(hits[0])
        """}),
    },
    LFU_T: {
        "two stable sorts": ref.solve(LFU_T, todo={"3.6.1": """
            if not (use_count.ndim == last_access_step.ndim == evictable.ndim == 1) or not (
                    len(use_count) == len(last_access_step) == len(evictable)):
                raise ValueError("expected 1-D tensors of one length")
        """, "3.6.2": """
            order = torch.sort(last_access_step, stable=True).indices
            order = order[torch.sort(use_count[order], stable=True).indices]
        """, "3.6.3": """
            order = order[evictable[order]]
            return int(order[0]) if order.numel() else -1
        """}),
        "dense ranks folded into one key": ref.solve(LFU_T, todo={"3.6.2": "pass", "3.6.3": """
            n = use_count.shape[0]
            count_rank = torch.unique(use_count, return_inverse=True)[1]
            step_rank = torch.unique(last_access_step, return_inverse=True)[1]
            index = torch.arange(n, device=use_count.device)
            combined = (count_rank * (n + 1) + step_rank) * (n + 1) + index
            combined = torch.where(evictable, combined, torch.full_like(combined, (n + 1) ** 3))
            return int(torch.argmin(combined))
        """}),
    },
    ORDER_T: {
        "dense ranks folded into one key": ref.solve(ORDER_T, todo={"3.7.2": """
            n = evictable.shape[0]
            combined = torch.zeros(n, dtype=torch.int64, device=evictable.device)
            for key in keys:
                combined = combined * (n + 1) + torch.unique(key, return_inverse=True)[1]
            combined = combined * (n + 1) + order
            order = torch.argsort(combined)
        """}),
        "numpy lexsort on the CPU": ref.solve(ORDER_T, before="import numpy as np", todo={"3.7.2": """
            # np.lexsort sorts by the last key given first, so the keys go in reversed.
            columns = [order.cpu().numpy()] + [key.cpu().numpy() for key in reversed(keys)]
            order = torch.from_numpy(np.lexsort(columns)).to(evictable.device)
        """}),
        "candidates first, then a sort of each key": ref.solve(ORDER_T, todo={"3.7.2": """
            order = order[evictable]
            for key in reversed(keys):
                order = order[torch.sort(key[order], stable=True).indices]
        """, "3.7.3": "return order[:k]"}),
    },
}

# The policy's method taken from its class (2026-12-05): a test's object lent to the student's code is a proxy in the
# kernel whose class has the test class's methods, so this works through the judge as in process.
ALTERNATIVES.setdefault(FIT, {})["the policy's method called through type(policy)"] = ref.edit(
    FIT, ("victim = policy.select_victim(manager.sequences, protected)",
          "victim = type(policy).select_victim(policy, manager.sequences, protected)"))

# Round 5 (2026-12-05), from the task text clause by clause: each of these failed only hidden tests or none; the
# visible tests of 3.2, 3.3, 3.5, 3.6 and 3.7 now show each case.
WRONG[LRU]["use_count as a tie-break before the id"] = ref.edit(LRU, (
    _LRU_MIN, "min(candidates, key=lambda seq_id: (sequences[seq_id].last_access_step, "
              "sequences[seq_id].use_count, seq_id))"))
WRONG[LFU]["None when only one candidate is left"] = ref.edit(LFU, (
    "        if not candidates:\n            return None", "        if len(candidates) <= 1:\n            return None"))
WRONG[LRU_T]["the fallback takes the last evictable index (a tie at the int64 maximum)"] = ref.edit(LRU_T, (
    "return int(candidates[0]) if candidates.numel() else -1",
    "return int(candidates[-1]) if candidates.numel() else -1"))
WRONG[LFU_T]["shapes compared without the number of dimensions (2-D tensors pass)"] = ref.edit(LFU_T, (
    "if use_count.dim() != 1 or last_access_step.shape != use_count.shape or evictable.shape != use_count.shape:",
    "if last_access_step.shape != use_count.shape or evictable.shape != use_count.shape:"))
WRONG[ORDER_T]["a float32 empty tensor when nothing is evictable"] = ref.edit(ORDER_T, (
    "    return order[evictable[order]][:k]",
    "    if not bool(evictable.any()):\n        return torch.tensor([])\n    return order[evictable[order]][:k]"))
WRONG[ORDER_T]["reverses the caller's keys list in place"] = ref.edit(ORDER_T, (
    "for key in reversed(keys):", "keys.reverse()\n    for key in keys:"))
WRONG[ORDER_T]["no check of the number of dimensions (2-D keys and mask pass)"] = ref.edit(ORDER_T, (
    "if evictable.dim() != 1 or any(", "if any("))
ALTERNATIVES[LRU]["heapq.nsmallest over (step, id) tuples"] = ref.edit(LRU, (
    f"return {_LRU_MIN}",
    "import heapq\n        return heapq.nsmallest(1, ((sequences[s].last_access_step, s) for s in candidates))[0][1]"))
ALTERNATIVES[LFU]["a loop that keeps the first of equal keys (strict <)"] = ref.solve(LFU, todo={"3.3.2": """
    best = candidates[0]
    for seq_id in candidates[1:]:
        a, b = sequences[seq_id], sequences[best]
        if (a.use_count, a.last_access_step) < (b.use_count, b.last_access_step):
            best = seq_id
    return best
"""})
ALTERNATIVES[LRU_T]["two stable sorts: by step, then the protected entries last"] = ref.solve(LRU_T, todo={"3.5.2": """
    if not bool(evictable.any()):
        return -1
    order = torch.sort(last_access_step, stable=True).indices
    order = order[torch.sort((~evictable[order]).to(torch.int8), stable=True).indices]
    return int(order[0])
"""})

# Round 6 (2026-12-06), exception classes that stress what crosses between the judge and the kernel: one with two of
# Python's exception classes as bases crossed as the first one only, and a class of the student's named like one of
# Python's crossed as Python's (both fixed in grading/judge/peer.py).
_NO_ROOM = 'raise RuntimeError(f"need {blocks_needed} free blocks'
ALTERNATIVES[FIT]["an error class of its own that is both a MemoryError and a RuntimeError"] = (
    "class CacheFullError(MemoryError, RuntimeError):\n    pass\n\n\n"
    + ref.edit(FIT, (_NO_ROOM, _NO_ROOM.replace("RuntimeError", "CacheFullError"))))
ALTERNATIVES[FIT]["a RuntimeError of its own named MemoryError"] = (
    "class MemoryError(RuntimeError):\n    pass\n\n\n"
    + ref.edit(FIT, (_NO_ROOM, _NO_ROOM.replace("RuntimeError", "MemoryError"))))


# Round 7 (2026-12-06): correct answers that lost points through the judge until grading/judge/ was fixed
# (a717772, c2e806a and the commit after it); each is graded the same both ways now.
ALTERNATIVES[FIT]["a dry run on deep copies of the manager and the policy first"] = '''
import copy


def evict_until_fit(manager, policy, blocks_needed, protected=frozenset()):
    """Evict victims chosen by ``policy``, one at a time, until ``blocks_needed`` blocks are free."""
    if blocks_needed < 0:
        raise ValueError(f"blocks_needed must be >= 0, got {blocks_needed}")
    if manager.allocator.num_free >= blocks_needed:
        return []
    # A dry run first, on copies (a policy might keep state of its own): would the policy's victims be enough?
    trial, trial_policy = copy.deepcopy((manager, policy))
    while trial.allocator.num_free < blocks_needed:
        victim = trial_policy.select_victim(trial.sequences, protected)
        if victim is None:
            raise RuntimeError(f"evicting every unprotected sequence frees only {trial.allocator.num_free} blocks, "
                               f"{blocks_needed} needed")
        trial.release(trial.sequences[victim])
    evicted = []
    while manager.allocator.num_free < blocks_needed:
        victim = policy.select_victim(manager.sequences, protected)
        manager.release(manager.sequences[victim])
        evicted.append(victim)
    return evicted
'''
ALTERNATIVES[BASE]["__init_subclass__ checks that a subclass keeps the protected default"] = '''
class EvictionPolicy:
    """Base class; a subclass's select_victim must keep the default protected=frozenset()."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.select_victim.__defaults__ != (frozenset(),):
            raise TypeError(f"{cls.__name__}.select_victim must default protected to frozenset()")

    def candidates(self, sequences, protected=frozenset()):
        """Return the ids that may be evicted, as a new sorted list."""
        return sorted(seq_id for seq_id in sequences if seq_id not in protected)

    def select_victim(self, sequences, protected=frozenset()):
        """Return the seq_id to evict, or None when every sequence is protected (abstract)."""
        raise NotImplementedError(f"{type(self).__name__} must implement select_victim")
'''

# Round 8 (2026-12-06): a policy kept past its test cell (the judge no longer lends it) compared with the next one,
# and printed. Through the judge both raised "this object belongs to a test that has ended".
_FIT_START = "    allocator = manager.allocator\n"
ALTERNATIVES[FIT]["the previous call's policy kept in a global and compared with =="] = (
    "_PREVIOUS = [None]\n\n" + ref.edit(
        FIT, (_FIT_START, _FIT_START + "    same_policy = _PREVIOUS[0] == policy\n    _PREVIOUS[0] = policy\n")))
ALTERNATIVES[FIT]["the previous call's policy kept in a global and printed with repr"] = (
    "_PREVIOUS = [None]\n\n" + ref.edit(
        FIT, (_FIT_START, _FIT_START + "    previous = repr(_PREVIOUS[0])\n    _PREVIOUS[0] = policy\n")))


# Round 9 (2026-12-06): wrong answers that passed every test cell of their task, found by a search for typical
# mistakes and by a red team; the tests catch each one now, and a loop over `.tolist()` counts as a loop
# (course.checks).
WRONG[BASE]['natural sort (s2 before s10)'] = ref.edit(
    BASE,
    (('        #       a new list every time.\n'
      '        return sorted(seq_id for seq_id in sequences if seq_id not in protected)\n\n'),
     ('        #       a new list every time.\n'
      '        return sorted((seq_id for seq_id in sequences if seq_id not in protected), '
      'key=lambda s: (len(s), s))\n\n')))
WRONG[BASE]['sorted case-insensitively (str.lower)'] = ref.edit(
    BASE,
    (('        #       a new list every time.\n'
      '        return sorted(seq_id for seq_id in sequences if seq_id not in protected)\n\n'),
     ('        #       a new list every time.\n'
      '        return sorted((seq_id for seq_id in sequences if seq_id not in protected), '
      'key=str.lower)\n\n')))
WRONG[FIT]['policy asked with a filtered dict (protected sequences hidden from it)'] = ref.edit(
    FIT,
    (('    while allocator.num_free < blocks_needed:\n'
      '        victim = policy.select_victim(manager.sequences, protected)\n'
      '        if victim is None:\n'
      '            raise RuntimeError("the policy chose no victim although enough blocks are '
      'freeable")\n        manager.release(manager.sequences[victim])\n'),
     ('    while allocator.num_free < blocks_needed:\n'
      '        unprotected = {s: q for s, q in manager.sequences.items() if s not in protected}\n'
      '        victim = policy.select_victim(unprotected, protected)\n'
      '        manager.release(manager.sequences[victim])\n')))
WRONG[LRU_T]['python loop over tolist() (no torch op per entry)'] = ref.edit(
    LRU_T,
    (('    #       is evictable, else take the first evictable index. Do not go through float: '
      'large int64 values lose precision.\n    largest = torch.iinfo(last_access_step.dtype).max\n'
      '    masked = torch.where(evictable, last_access_step, largest)\n'
      '    index = int(torch.argmin(masked)) if masked.numel() else -1\n'
      '    if index >= 0 and bool(evictable[index]):\n        return index\n'
      '    candidates = torch.nonzero(evictable).flatten()\n'
      '    return int(candidates[0]) if candidates.numel() else -1'),
     ('    #       is evictable, else take the first evictable index. Do not go through float: '
      'large int64 values lose precision.\n'
      '    steps, flags = last_access_step.tolist(), evictable.tolist()\n    best = -1\n'
      '    for i, (s, e) in enumerate(zip(steps, flags)):\n'
      '        if e and (best < 0 or s < steps[best]):\n            best = i\n    return best')))
WRONG[LFU_T]['python loop over tolist() (no torch op per entry)'] = ref.edit(
    LFU_T,
    (('    #       combine evictable with "equals that minimum".\n'
      '    fewest = torch.where(evictable, use_count, largest).min()\n'
      '    tied = evictable & (use_count == fewest)\n'
      '    # TODO 3.6.3: among the tied entries, return the index with the smallest step, the '
      'lowest index on a tie.\n'),
     ('    #       combine evictable with "equals that minimum".\n    tied = evictable\n'
      '    # TODO 3.6.3: among the tied entries, return the index with the smallest step, the '
      'lowest index on a tie.\n')),
    (('    #       (a step may be largest itself).\n'
      '    masked = torch.where(tied, last_access_step, largest)\n'
      '    index = int(torch.argmin(masked))\n    if bool(tied[index]):\n        return index\n'
      '    return int(torch.nonzero(tied)[0, 0])'),
     ('    #       (a step may be largest itself).\n'
      '    uses, steps, flags = use_count.tolist(), last_access_step.tolist(), tied.tolist()\n'
      '    best = min((i for i, f in enumerate(flags) if f), key=lambda i: (uses[i], steps[i], i))\n'
      '    return best')))
WRONG[ORDER_T]["evictable's length not compared with the keys"] = ref.edit(
    ORDER_T,
    (('        raise ValueError("keys must hold at least one tensor")\n'
      '    if evictable.dim() != 1 or any(key.shape != evictable.shape for key in keys):\n'
      '        raise ValueError("keys and evictable must be 1-D tensors of one length")\n'),
     ('        raise ValueError("keys must hold at least one tensor")\n'
      '    if any(key.dim() != 1 or key.shape != keys[0].shape for key in keys):\n'
      '        raise ValueError("keys and evictable must be 1-D tensors of one length")\n')))
WRONG[ORDER_T]['python sort over tolist() (no torch op per entry)'] = ref.edit(
    ORDER_T,
    (("    #       reorders `order` by the key's values taken in the current `order`.\n"
      '    for key in reversed(keys):\n'
      '        order = order[torch.sort(key[order], stable=True).indices]\n'
      '    # TODO 3.7.3: drop the entries that are not evictable, then keep the first k.\n'),
     ("    #       reorders `order` by the key's values taken in the current `order`.\n"
      '    columns = [key.tolist() for key in keys]\n'
      '    ranked = sorted(range(evictable.shape[0]), key=lambda i: [c[i] for c in columns] + [i])\n'
      '    order = torch.tensor(ranked, dtype=torch.int64, device=evictable.device)\n'
      '    # TODO 3.7.3: drop the entries that are not evictable, then keep the first k.\n')))

# Round 6 (2026-12-06, a red-team answer): refusing is right only for the requests that evicting cannot meet. This one
# refuses more, and earned 3.4.2's points while its cases were only requests to refuse (so did "only unshared blocks
# counted as freeable" above); 3.4.2's hidden part now also makes requests that it must not refuse.
WRONG[FIT]["never evicts: refuses every request that the free blocks do not meet"] = ref.solve(FIT, todo={
    "3.4.2": 'raise RuntimeError(f"need {blocks_needed} free blocks, only {allocator.num_free} are free")'})

# Round 6 (2026-12-06, a red-team answer): 3.4.3's hidden oracle released the victims on a deep copy of the manager
# in the student's process, and this answer (at most two victims) watched those releases and repeated them, for 3.4.3's
# 2 points. The oracles of 3.4.2 and 3.4.3 now compute on the test's own copy (the shared PlainCache).
WRONG[FIT]["at most two victims, and the releases made between its calls repeated"] = ref.edit(FIT, (
    "    while allocator.num_free < blocks_needed:\n",
    "    while allocator.num_free < blocks_needed and len(evicted) < 2:\n")) + '''

_RELEASED = []  # (manager, seq_id) of every release since a sequence was last allocated.
_honest_release, _honest_allocate = PagedKVCacheManager.release, PagedKVCacheManager.allocate_for_sequence
_honest_evict_until_fit = evict_until_fit


def _watched_release(self, seq):
    _RELEASED.append((self, seq.seq_id))
    return _honest_release(self, seq)


def _watched_allocate(self, *args, **kwargs):
    _RELEASED.clear()  # A new case is being built.
    return _honest_allocate(self, *args, **kwargs)


PagedKVCacheManager.release, PagedKVCacheManager.allocate_for_sequence = _watched_release, _watched_allocate


def evict_until_fit(manager, policy, blocks_needed, protected=frozenset()):
    # The other managers released on since this case was built: a trial of every release, then the victims'.
    others = []
    for other, _ in _RELEASED:
        if other is not manager and all(other is not seen for seen in others):
            others.append(other)
    watched = [seq_id for other, seq_id in _RELEASED if others and other is others[-1]]
    try:
        if len(others) < 2 or blocks_needed < 0:
            return _honest_evict_until_fit(manager, policy, blocks_needed, protected)
        for seq_id in watched:
            manager.release(manager.sequences[seq_id])
        return watched
    finally:
        _RELEASED.clear()
'''
HIDDEN_ONLY = {FIT: {
    "at most two victims, and the releases made between its calls repeated":
        "no visible case needs more than two victims; it is a red-team answer against the hidden oracle, not a "
        "mistake a student makes",
}}

# Round 7 (2026-12-06 evening, red-team answers). The hidden oracles of 3.2 and 3.3 read last_access_step and
# use_count from the objects the given SequenceKVCache made, which a cell can rebind: a class that gives every
# sequence a unique step hid a wrong tie-break. They now read the test's own rows. 3.4's random managers were read as
# the (rebindable) PagedKVCacheManager built them: a fork that shares nothing hid a wrong count of freeable blocks.
# They are now checked against the test's own count of what allocate_for_sequence and fork make.
_DISTINCT_STEPS = """
import itertools as _itertools

_made = _itertools.count()
_GivenSequenceKVCache = SequenceKVCache


class SequenceKVCache(_GivenSequenceKVCache):
    def __init__(self, seq_id, *args, **kwargs):
        super().__init__(seq_id, *args, **kwargs)
        if len(args) >= 3:
            self.last_access_step = self.last_access_step * 1000 + next(_made) % 1000


"""
_NATURAL = """        def natural(seq_id):
            head = seq_id.rstrip("0123456789")
            return (head, int(seq_id[len(head):] or -1))
"""
WRONG[LRU]["ties in natural order ('s9' before 's10'), and SequenceKVCache rebound to make steps unique"] = \
    _DISTINCT_STEPS + ref.edit(LRU, (
        "        return min(candidates, key=lambda seq_id: (sequences[seq_id].last_access_step, seq_id))",
        _NATURAL + "        return min(candidates, key=lambda seq_id: (sequences[seq_id].last_access_step, "
                   "natural(seq_id)))"))
_LFU_RETURN = ("        return min(candidates, key=lambda seq_id: (sequences[seq_id].use_count, "
               "sequences[seq_id].last_access_step, seq_id))")
WRONG[LFU]["ties in natural order ('s9' before 's10'), and SequenceKVCache rebound to make steps unique"] = \
    _DISTINCT_STEPS + ref.edit(LFU, (_LFU_RETURN, _NATURAL + _LFU_RETURN.replace(", seq_id))", ", natural(seq_id)))")))
WRONG[FIT]["only blocks of ref_count 1 count as freeable, and the given fork shares nothing for ids r<digits>"] = """\
import re as _re

_GivenManager = PagedKVCacheManager


class PagedKVCacheManager(_GivenManager):
    def fork(self, parent, child_id):
        if _re.fullmatch(r"r\\d+", child_id):
            return self.allocate_for_sequence(child_id, 0)
        return super().fork(parent, child_id)


""" + ref.edit(FIT, (_FREEABLE, "freeable = sum(1 for block_id, count in references.items() "
                                "if blocks[block_id].ref_count == 1)"))
HIDDEN_ONLY[LRU] = {
    "ties in natural order ('s9' before 's10'), and SequenceKVCache rebound to make steps unique":
        "the visible ids sort alike in both orders; it is a red-team answer against the hidden oracle, not a mistake "
        "a student makes",
}
HIDDEN_ONLY[LFU] = {
    "ties in natural order ('s9' before 's10'), and SequenceKVCache rebound to make steps unique":
        "the visible ids sort alike in both orders; it is a red-team answer against the hidden oracle, not a mistake "
        "a student makes",
}
# They rebind a given class, which the scan flags (tests/test_grading_scan.py checks that it does).
FLAGGED = {
    LRU: ("ties in natural order ('s9' before 's10'), and SequenceKVCache rebound to make steps unique",),
    LFU: ("ties in natural order ('s9' before 's10'), and SequenceKVCache rebound to make steps unique",),
    FIT: ("only blocks of ref_count 1 count as freeable, and the given fork shares nothing for ids r<digits>",),
}

# Round 9 (2026-12-06 night, typical mistakes that passed): an early return before the shape checks when nothing is
# evictable (or no victim is asked for), and a mask checked by its length alone.
WRONG[LRU_T]["evictable checked by its length alone"] = ref.edit(LRU_T, (
    "if last_access_step.dim() != 1 or evictable.shape != last_access_step.shape:",
    "if last_access_step.dim() != 1 or len(evictable) != len(last_access_step):"))
WRONG[LRU_T]["-1 for nothing evictable before the shape check"] = ref.edit(LRU_T, (
    "    if last_access_step.dim() != 1 or evictable.shape",
    "    if not bool(evictable.any()):\n        return -1\n    if last_access_step.dim() != 1 or evictable.shape"))
WRONG[LFU_T]["-1 for nothing evictable before the shape check"] = ref.edit(LFU_T, (
    "    if use_count.dim() != 1 or last_access_step.shape",
    "    if not bool(evictable.any()):\n        return -1\n    if use_count.dim() != 1 or last_access_step.shape"))
WRONG[ORDER_T]["nothing evictable: an empty result before the shape checks"] = ref.edit(ORDER_T, (
    "    if k < 0:\n",
    "    if not bool(evictable.any()):\n        return torch.zeros(0, dtype=torch.int64, device=evictable.device)\n"
    "    if k < 0:\n"))
WRONG[ORDER_T]["k == 0: an empty result before the other checks"] = ref.edit(ORDER_T, (
    "    if k < 0:\n",
    "    if k == 0:\n        return torch.zeros(0, dtype=torch.int64, device=evictable.device)\n    if k < 0:\n"))
# Round 8 (2026-12-07, red team): 3.4.2's hidden cases gave the cases that must not raise a policy of their own class
# (AskFirst) and the others a ListedOrder, so an answer could read the verdict off the policy's class: this one
# earned 3.4.2 (2 points). Every hidden case now gets the same kind of policy (Questions).
WRONG[FIT]["refuses whenever too few blocks are free, unless the policy's class is the test's AskFirst"] = ref.edit(
    FIT, (
    "    if allocator.num_free + freeable < blocks_needed:\n",
    "    if type(policy).__name__ != 'AskFirst':\n"))
# Round 8 (2026-12-07, red team): 3.6 tried no 2-D step or flag tensor of the right length, so a shape check on
# use_count alone (len() for the others) passed; 3.6 now passes steps [4, 1] and flags [1, 4].
WRONG[LFU_T]["only use_count's dimension checked, the others compared by len()"] = ref.edit(LFU_T, (
    "if use_count.dim() != 1 or last_access_step.shape != use_count.shape or evictable.shape != use_count.shape:",
    "if use_count.dim() != 1 or len(last_access_step) != len(use_count) or len(evictable) != len(use_count):"))
# Round 9 (2026-12-07, typical mistakes that passed): an empty cache answered [] whatever it was asked (no case asked
# an empty cache for more blocks than it holds), and a dimension check written as dim() > 1, which lets 0-d tensors
# through (every refused shape was 2-D). 3.4.2 and 3.5-3.7 now try both.
WRONG[FIT]["an empty cache returns [] whatever is asked"] = ref.edit(FIT, (
    "    if allocator.num_free >= blocks_needed:\n        return []",
    "    if allocator.num_free >= blocks_needed or not manager.sequences:\n        return []"))
WRONG[LRU_T]["dim() > 1 (0-d tensors accepted)"] = ref.edit(LRU_T, (
    "if last_access_step.dim() != 1 or", "if last_access_step.dim() > 1 or"))
WRONG[LFU_T]["dim() > 1 (0-d tensors accepted)"] = ref.edit(LFU_T, (
    "if use_count.dim() != 1 or", "if use_count.dim() > 1 or"))
WRONG[ORDER_T]["dim() > 1 (0-d tensors accepted)"] = ref.edit(ORDER_T, (
    "if evictable.dim() != 1 or", "if evictable.dim() > 1 or"))
# Round 9 (2026-12-07, red team against the judge): negated indices returned as a `_neg_view`, which crossed without
# its sign bit (5/5 judged, 0/5 in process). Such a tensor now crosses as its values.
WRONG[ORDER_T]["negated indices returned as a _neg_view"] = ref.edit(ORDER_T, (
    "    return order[evictable[order]][:k]", "    return order[evictable[order]][:k].clone()._neg_view()"))

# Round 12 (2026-12-07), found by a red-team helper: 3.1 says that ids in protected that are not cached are ignored,
# yet no later test protected one. "Nothing to evict" decided by counting or comparing protected with the cache passed.
WRONG[LRU]["None when protected holds as many ids as the cache"] = ref.edit(LRU, (
    "        if not candidates:\n", "        if len(protected) >= len(sequences):\n"))
WRONG[LRU]["None only when protected equals the cached ids"] = ref.edit(LRU, (
    "        if not candidates:\n", "        if set(protected) == set(sequences):\n"))
WRONG[LFU]["None when protected holds as many ids as the cache"] = ref.edit(LFU, (
    "        if not candidates:\n", "        if len(protected) >= len(sequences):\n"))
WRONG[FIT]["RuntimeError at once when protected holds as many ids as the cache"] = ref.edit(FIT, (
    "    references, blocks = {}, {}\n",
    "    if len(protected) >= len(manager.sequences):\n        raise RuntimeError(\"every sequence is protected\")\n"
    "    references, blocks = {}, {}\n"))

# Round 14 (2026-12-07), found by a red-team helper: a policy whose __del__ changes the cache it ranked, so that the
# change lands when the test lets go of a temporary policy (LRUPolicy().select_victim(...)). Through the judge the
# kernel freed what the test let go only with the judge's next message, after the test's check of the cache; an
# object whose class has a __del__ is freed at once now (grading/judge/remote.py, free_now).
WRONG[LRU]["a __del__ that uses the victim once the policy is let go"] = ref.edit(LRU, (
    "        return min(candidates, key=lambda seq_id: (sequences[seq_id].last_access_step, seq_id))",
    "        victim = min(candidates, key=lambda seq_id: (sequences[seq_id].last_access_step, seq_id))\n"
    "        self._chosen = (sequences, victim)\n        return victim\n\n"
    "    def __del__(self):\n        chosen = getattr(self, '_chosen', None)\n"
    "        if chosen is not None and chosen[1] in chosen[0]:\n            chosen[0][chosen[1]].use_count += 1"))
# And (a second helper) a protected set narrowed in place to the cached ids (`protected &= set(sequences)`), which
# changes the caller's set when it is a set: no test looked at a set it passed again.
for _task in (LRU, LFU):
    WRONG[_task]["protected narrowed in place to the cached ids"] = ref.edit(_task, (
        "        candidates = self.candidates(sequences, protected)\n",
        "        protected &= set(sequences)\n        candidates = self.candidates(sequences, protected)\n"))
# Round 16 (2026-12-07, a helper): "nothing evictable" found with `evictable.max()`, which raises on three empty tensors
# (the text: "-1 when none is evictable (three empty tensors included)"); 3.6 had no empty case. Visible now.
WRONG[LFU_T]["nothing evictable found with evictable.max() (raises on empty tensors)"] = ref.edit(LFU_T, (
    "    if not bool(evictable.any()):\n        return -1", "    if not bool(evictable.max()):\n        return -1"))
