"""Wrong and alternative answers for notebook 03 (see grading/mutants/__init__.py)."""

import textwrap

from grading.reference import Reference

ref = Reference("03_lru_lfu")


def _body(*parts: str) -> str:
    """Code pieces written at any indentation, joined as one body without indentation."""
    return "\n".join(textwrap.dedent(part).strip("\n") for part in parts)


BASE, LRU, LFU = "task3_1_EvictionPolicy", "task3_2_LRUPolicy", "task3_3_LFUPolicy"
FIT, LRU_T, LFU_T, ORDER_T = ("task3_4_evict_until_fit", "task3_5_lru_victim_t", "task3_6_lfu_victim_t",
                              "task3_7_evict_order_t")

_CANDIDATES = "sorted(seq_id for seq_id in sequences if seq_id not in protected)"
_LRU_MIN = "min(ids, key=lambda seq_id: (sequences[seq_id].last_access_step, seq_id))"
_LFU_KEY = "(sequences[seq_id].use_count, sequences[seq_id].last_access_step, seq_id)"
_FEASIBILITY = '''    # A block is freeable when every one of its references belongs to an unprotected sequence.
    references, blocks = {}, {}
    for seq_id, seq in manager.sequences.items():
        if seq_id not in protected:
            for block in seq.block_table:
                references[block.block_id] = references.get(block.block_id, 0) + 1
                blocks[block.block_id] = block
    freeable = sum(1 for block_id, count in references.items() if count == blocks[block_id].ref_count)
    if allocator.num_free + freeable < blocks_needed:
        raise RuntimeError(f"need {blocks_needed} free blocks, but only {allocator.num_free} are free and "
                           f"evicting every unprotected sequence frees {freeable} more")
'''
_SHAPES_5 = '''    if last_access_step.dim() != 1 or evictable.shape != last_access_step.shape:
        raise ValueError(f"expected two 1-D tensors of the same length, got shapes "
                         f"{tuple(last_access_step.shape)} and {tuple(evictable.shape)}")
'''
_SHAPES_6 = '''    if use_count.dim() != 1 or last_access_step.shape != use_count.shape or evictable.shape != use_count.shape:
        raise ValueError(f"expected three 1-D tensors of the same length, got shapes {tuple(use_count.shape)}, "
                         f"{tuple(last_access_step.shape)} and {tuple(evictable.shape)}")
'''
_LFU_T_BODY = '''    largest = torch.iinfo(use_count.dtype).max
    # The evictable entries with the fewest uses; among them the smallest step, then the lowest index.
    fewest = torch.where(evictable, use_count, largest).min()
    tied = evictable & (use_count == fewest)
    masked = torch.where(tied, last_access_step, largest)
    index = int(torch.argmin(masked))
    if bool(tied[index]):
        return index
    return int(torch.nonzero(tied)[0, 0])'''

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
    },
    LRU: {
        "LRU by use_count": ref.edit(LRU, ("(sequences[seq_id].last_access_step, seq_id)",
                                           "(sequences[seq_id].use_count, seq_id)")),
        "ties broken by the larger id": ref.edit(
            LRU, (_LRU_MIN, "max(ids, key=lambda seq_id: (-sequences[seq_id].last_access_step, seq_id))")),
        "protected ids ignored": ref.edit(LRU, ("self.candidates(sequences, protected)", "self.candidates(sequences)")),
        "most recently used instead of least": ref.edit(
            LRU, ("(sequences[seq_id].last_access_step, seq_id)", "(-sequences[seq_id].last_access_step, seq_id)")),
        "returns the SequenceKVCache, not its id": ref.edit(LRU, (_LRU_MIN, f"sequences[{_LRU_MIN}]")),
    },
    LFU: {
        "LFU without the recency tie-break": ref.edit(LFU, (_LFU_KEY, "(sequences[seq_id].use_count, seq_id)")),
        "ties broken by the larger id": ref.edit(
            LFU, (f"min(ids, key=lambda seq_id: {_LFU_KEY})",
                  "max(ids, key=lambda seq_id: (-sequences[seq_id].use_count, -sequences[seq_id].last_access_step, "
                  "seq_id))")),
        "protected ids ignored": ref.edit(LFU, ("self.candidates(sequences, protected)", "self.candidates(sequences)")),
        "most recent first among equal counts": ref.edit(
            LFU, (_LFU_KEY, "(sequences[seq_id].use_count, -sequences[seq_id].last_access_step, seq_id)")),
        "recency before frequency": ref.edit(
            LFU, (_LFU_KEY, "(sequences[seq_id].last_access_step, sequences[seq_id].use_count, seq_id)")),
    },
    FIT: {
        "evicts partially before failing": ref.edit(FIT, (_FEASIBILITY, "")),
        "counts shared blocks as freeable": ref.edit(
            FIT, ("freeable = sum(1 for block_id, count in references.items() if count == blocks[block_id].ref_count)",
                  "freeable = sum(references.values())")),
        "protected ids not passed to the policy": ref.edit(
            FIT, ("policy.select_victim(manager.sequences, protected)", "policy.select_victim(manager.sequences)")),
        "evicts one victim too many (> instead of >=)": ref.edit(
            FIT, ("while allocator.num_free < blocks_needed:", "while allocator.num_free <= blocks_needed:"),
            ('raise RuntimeError("the policy chose no victim although enough blocks are freeable")', "break")),
        "no check of blocks_needed < 0": ref.edit(
            FIT, ('    if blocks_needed < 0:\n        raise ValueError(f"blocks_needed must be >= 0, got {blocks_needed}")\n',
                  "")),
    },
    LRU_T: {
        "ties broken by the last index": ref.solve(LRU_T, lru_victim_t=_body(_SHAPES_5, """
            candidates = torch.nonzero(evictable).flatten()
            if candidates.numel() == 0:
                return -1
            values = last_access_step[candidates]
            return int(candidates[values == values.min()][-1])
        """)),
        "ignores the mask": ref.solve(LRU_T, lru_victim_t=_body(_SHAPES_5, """
            if not bool(evictable.any()):
                return -1
            return int(torch.argmin(last_access_step))
        """)),
        "masks with the int64 maximum (a masked entry can win)": ref.edit(
            LRU_T, ("    if index >= 0 and bool(evictable[index]):\n        return index\n"
                    "    candidates = torch.nonzero(evictable).flatten()\n"
                    "    return int(candidates[0]) if candidates.numel() else -1",
                    "    return index if bool(evictable.any()) else -1")),
        "returns a tensor, not an int": ref.solve(LRU_T, lru_victim_t=_body(_SHAPES_5, """
            candidates = torch.nonzero(evictable).flatten()
            if candidates.numel() == 0:
                return -1
            return candidates[torch.argmin(last_access_step[candidates])]
        """)),
        "a Python loop over the entries": ref.solve(LRU_T, lru_victim_t=_body(_SHAPES_5, """
            best = -1
            for i in range(last_access_step.shape[0]):
                if bool(evictable[i]) and (best < 0 or bool(last_access_step[i] < last_access_step[best])):
                    best = i
            return best
        """)),
    },
    LFU_T: {
        "ties broken by the last index": ref.edit(
            LFU_T, ("    index = int(torch.argmin(masked))\n    if bool(tied[index]):\n        return index\n"
                    "    return int(torch.nonzero(tied)[0, 0])",
                    "    tied = tied & (masked == masked.min())\n    return int(torch.nonzero(tied)[-1, 0])")),
        "LFU without the recency tie-break": ref.edit(
            LFU_T, ("masked = torch.where(tied, last_access_step, largest)",
                    "masked = torch.where(tied, torch.zeros_like(last_access_step), largest)")),
        "folds both keys into one number": ref.edit(LFU_T, (_LFU_T_BODY, """    candidates = torch.nonzero(evictable).flatten()
    combined = use_count[candidates] * 10**6 + last_access_step[candidates]
    return int(candidates[torch.argmin(combined)])""")),
        "no shape check": ref.edit(LFU_T, (_SHAPES_6, "")),
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
    },
    LRU: {
        "sorted()[0] over tuples": ref.solve(LRU, select_victim="""
            rows = sorted((seq.last_access_step, seq_id) for seq_id, seq in sequences.items() if seq_id not in protected)
            return rows[0][1] if rows else None
        """),
        "explicit scan over sorted candidates": ref.solve(LRU, select_victim="""
            best = None
            for seq_id in self.candidates(sequences, protected):
                if best is None or sequences[seq_id].last_access_step < sequences[best].last_access_step:
                    best = seq_id
            return best
        """),
        "heapq.nsmallest": ref.solve(LRU, before="import heapq", select_victim="""
            top = heapq.nsmallest(1, ((s.last_access_step, k) for k, s in sequences.items() if k not in protected))
            return top[0][1] if top else None
        """),
    },
    LFU: {
        "heapq over (use_count, step, id)": ref.solve(LFU, before="import heapq", select_victim="""
            heap = [(s.use_count, s.last_access_step, k) for k, s in sequences.items() if k not in protected]
            if not heap:
                return None
            heapq.heapify(heap)
            return heap[0][2]
        """),
        "two stable sorts": ref.solve(LFU, select_victim="""
            ids = self.candidates(sequences, protected)
            ids.sort(key=lambda s: sequences[s].last_access_step)
            ids.sort(key=lambda s: sequences[s].use_count)
            return ids[0] if ids else None
        """),
    },
    FIT: {
        "dry run on a deep copy": ref.solve(FIT, before="import copy", evict_until_fit="""
            if blocks_needed < 0:
                raise ValueError("blocks_needed must be >= 0")
            trial = copy.deepcopy(manager)
            for seq_id in [s for s in trial.sequences if s not in protected]:
                trial.release(trial.sequences[seq_id])
            if trial.allocator.num_free < blocks_needed:
                raise RuntimeError("even evicting every unprotected sequence frees too few blocks")
            evicted = []
            while manager.allocator.num_free < blocks_needed:
                victim = policy.select_victim(manager.sequences, protected)
                manager.release(manager.sequences[victim])
                evicted.append(victim)
            return evicted
        """),
        "Counter of references by block object": ref.solve(
            FIT, before="from collections import Counter", evict_until_fit="""
            if blocks_needed < 0:
                raise ValueError("blocks_needed must be >= 0")
            if manager.allocator.num_free >= blocks_needed:
                return []
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
            victims = []
            while manager.allocator.num_free < blocks_needed:
                victims.append(policy.select_victim(manager.sequences, protected))
                manager.release(manager.sequences[victims[-1]])
            return victims
        """),
        "pinned blocks subtracted from the used ones": ref.solve(FIT, evict_until_fit="""
            if blocks_needed < 0:
                raise ValueError("blocks_needed must be >= 0")
            pinned = {block.block_id for seq_id, seq in manager.sequences.items() if seq_id in protected
                      for block in seq.block_table}
            held = {block.block_id for seq in manager.sequences.values() for block in seq.block_table}
            if manager.allocator.num_free + len(held - pinned) < blocks_needed:
                raise RuntimeError("cannot free enough blocks")
            out = []
            while manager.allocator.num_free < blocks_needed:
                out.append(policy.select_victim(manager.sequences, protected))
                manager.release(manager.sequences[out[-1]])
            return out
        """),
    },
    LRU_T: {
        "stable sort, first evictable": ref.solve(LRU_T, lru_victim_t="""
            if last_access_step.ndim != 1 or last_access_step.shape != evictable.shape:
                raise ValueError("expected 1-D tensors of one length")
            order = torch.sort(last_access_step, stable=True).indices
            order = order[evictable[order]]
            return int(order[0]) if order.numel() else -1
        """),
        "min value, then first index that has it": ref.solve(LRU_T, lru_victim_t="""
            if last_access_step.ndim != 1 or len(last_access_step) != len(evictable) or evictable.ndim != 1:
                raise ValueError("expected 1-D tensors of one length")
            if not bool(evictable.any()):
                return -1
            smallest = last_access_step[evictable].min()
            hits = torch.nonzero(evictable & (last_access_step == smallest)).flatten()
            return int(hits[0])
        """),
    },
    LFU_T: {
        "two stable sorts": ref.solve(LFU_T, lfu_victim_t="""
            if not (use_count.ndim == last_access_step.ndim == evictable.ndim == 1) or not (
                    len(use_count) == len(last_access_step) == len(evictable)):
                raise ValueError("expected 1-D tensors of one length")
            order = torch.sort(last_access_step, stable=True).indices
            order = order[torch.sort(use_count[order], stable=True).indices]
            order = order[evictable[order]]
            return int(order[0]) if order.numel() else -1
        """),
        "dense ranks folded into one key": ref.solve(LFU_T, lfu_victim_t="""
            if use_count.dim() != 1 or use_count.shape != last_access_step.shape or use_count.shape != evictable.shape:
                raise ValueError("expected 1-D tensors of one length")
            n = use_count.shape[0]
            if not bool(evictable.any()):
                return -1
            count_rank = torch.unique(use_count, return_inverse=True)[1]
            step_rank = torch.unique(last_access_step, return_inverse=True)[1]
            index = torch.arange(n, device=use_count.device)
            combined = (count_rank * (n + 1) + step_rank) * (n + 1) + index
            combined = torch.where(evictable, combined, torch.full_like(combined, (n + 1) ** 3))
            return int(torch.argmin(combined))
        """),
    },
    ORDER_T: {
        "dense ranks folded into one key": ref.solve(ORDER_T, evict_order_t="""
            if k < 0 or not keys:
                raise ValueError("k >= 0 and at least one key")
            n = evictable.shape[0]
            if evictable.ndim != 1 or any(key.ndim != 1 or key.shape[0] != n for key in keys):
                raise ValueError("expected 1-D tensors of one length")
            combined = torch.zeros(n, dtype=torch.int64, device=evictable.device)
            for key in keys:
                combined = combined * (n + 1) + torch.unique(key, return_inverse=True)[1]
            combined = combined * (n + 1) + torch.arange(n, device=evictable.device)
            candidates = torch.nonzero(evictable).flatten()
            chosen = candidates[torch.argsort(combined[candidates])]
            return chosen[:k]
        """),
        "numpy lexsort on the CPU": ref.solve(ORDER_T, before="import numpy as np", evict_order_t="""
            if k < 0 or len(keys) == 0:
                raise ValueError("bad k or keys")
            if evictable.dim() != 1 or any(key.shape != evictable.shape for key in keys):
                raise ValueError("expected 1-D tensors of one length")
            n = evictable.shape[0]
            # np.lexsort sorts by the last key given first, so the keys go in reversed.
            columns = [np.arange(n)] + [key.cpu().numpy() for key in reversed(keys)]
            order = torch.from_numpy(np.lexsort(columns)).to(evictable.device)
            return order[evictable[order]][:k].to(torch.int64)
        """),
    },
}
