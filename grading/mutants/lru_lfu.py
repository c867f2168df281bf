"""Wrong and alternative answers for notebook 03 (see grading/mutants/__init__.py)."""

_ABSTRACT = '''
    def select_victim(self, sequences, protected=frozenset()):
        raise NotImplementedError("subclasses choose the victim")
'''

WRONG = {
    "task3_1_EvictionPolicy": {
        "protected ids ignored": '''
class EvictionPolicy:
    def candidates(self, sequences, protected=frozenset()):
        return sorted(sequences)
''' + _ABSTRACT,
        "insertion order instead of sorted": '''
class EvictionPolicy:
    def candidates(self, sequences, protected=frozenset()):
        return [seq_id for seq_id in sequences if seq_id not in protected]
''' + _ABSTRACT,
        "returns a set": '''
class EvictionPolicy:
    def candidates(self, sequences, protected=frozenset()):
        return set(sequences) - set(protected)
''' + _ABSTRACT,
        "select_victim returns None instead of being abstract": '''
class EvictionPolicy:
    def candidates(self, sequences, protected=frozenset()):
        return sorted(seq_id for seq_id in sequences if seq_id not in protected)

    def select_victim(self, sequences, protected=frozenset()):
        return None
''',
        "removes the protected ids from the dict": '''
class EvictionPolicy:
    def candidates(self, sequences, protected=frozenset()):
        for seq_id in list(sequences):
            if seq_id in protected:
                del sequences[seq_id]
        return sorted(sequences)
''' + _ABSTRACT,
    },
    "task3_2_LRUPolicy": {
        "LRU by use_count": '''
class LRUPolicy(EvictionPolicy):
    def select_victim(self, sequences, protected=frozenset()):
        ids = self.candidates(sequences, protected)
        if not ids:
            return None
        return min(ids, key=lambda s: (sequences[s].use_count, s))
''',
        "ties broken by the larger id": '''
class LRUPolicy(EvictionPolicy):
    def select_victim(self, sequences, protected=frozenset()):
        ids = self.candidates(sequences, protected)
        if not ids:
            return None
        return max(ids, key=lambda s: (-sequences[s].last_access_step, s))
''',
        "protected ids ignored": '''
class LRUPolicy(EvictionPolicy):
    def select_victim(self, sequences, protected=frozenset()):
        if not sequences:
            return None
        return min(sequences, key=lambda s: (sequences[s].last_access_step, s))
''',
        "most recently used instead of least": '''
class LRUPolicy(EvictionPolicy):
    def select_victim(self, sequences, protected=frozenset()):
        ids = self.candidates(sequences, protected)
        if not ids:
            return None
        return min(ids, key=lambda s: (-sequences[s].last_access_step, s))
''',
        "returns the SequenceKVCache, not its id": '''
class LRUPolicy(EvictionPolicy):
    def select_victim(self, sequences, protected=frozenset()):
        ids = self.candidates(sequences, protected)
        if not ids:
            return None
        return sequences[min(ids, key=lambda s: (sequences[s].last_access_step, s))]
''',
    },
    "task3_3_LFUPolicy": {
        "LFU without the recency tie-break": '''
class LFUPolicy(EvictionPolicy):
    def select_victim(self, sequences, protected=frozenset()):
        ids = self.candidates(sequences, protected)
        if not ids:
            return None
        return min(ids, key=lambda s: (sequences[s].use_count, s))
''',
        "ties broken by the larger id": '''
class LFUPolicy(EvictionPolicy):
    def select_victim(self, sequences, protected=frozenset()):
        ids = self.candidates(sequences, protected)
        if not ids:
            return None
        return max(ids, key=lambda s: (-sequences[s].use_count, -sequences[s].last_access_step, s))
''',
        "protected ids ignored": '''
class LFUPolicy(EvictionPolicy):
    def select_victim(self, sequences, protected=frozenset()):
        if not sequences:
            return None
        return min(sequences, key=lambda s: (sequences[s].use_count, sequences[s].last_access_step, s))
''',
        "most recent first among equal counts": '''
class LFUPolicy(EvictionPolicy):
    def select_victim(self, sequences, protected=frozenset()):
        ids = self.candidates(sequences, protected)
        if not ids:
            return None
        return min(ids, key=lambda s: (sequences[s].use_count, -sequences[s].last_access_step, s))
''',
        "recency before frequency": '''
class LFUPolicy(EvictionPolicy):
    def select_victim(self, sequences, protected=frozenset()):
        ids = self.candidates(sequences, protected)
        if not ids:
            return None
        return min(ids, key=lambda s: (sequences[s].last_access_step, sequences[s].use_count, s))
''',
    },
    "task3_4_evict_until_fit": {
        "evicts partially before failing": '''
def evict_until_fit(manager, policy, blocks_needed, protected=frozenset()):
    if blocks_needed < 0:
        raise ValueError("blocks_needed must be >= 0")
    evicted = []
    while manager.allocator.num_free < blocks_needed:
        victim = policy.select_victim(manager.sequences, protected)
        if victim is None:
            raise RuntimeError("not enough blocks")
        manager.release(manager.sequences[victim])
        evicted.append(victim)
    return evicted
''',
        "counts shared blocks as freeable": '''
def evict_until_fit(manager, policy, blocks_needed, protected=frozenset()):
    if blocks_needed < 0:
        raise ValueError("blocks_needed must be >= 0")
    freeable = sum(seq.num_blocks() for seq_id, seq in manager.sequences.items() if seq_id not in protected)
    if manager.allocator.num_free >= blocks_needed:
        return []
    if manager.allocator.num_free + freeable < blocks_needed:
        raise RuntimeError("not enough blocks")
    evicted = []
    while manager.allocator.num_free < blocks_needed:
        victim = policy.select_victim(manager.sequences, protected)
        if victim is None:
            raise RuntimeError("not enough blocks")
        manager.release(manager.sequences[victim])
        evicted.append(victim)
    return evicted
''',
        "protected ids not passed to the policy": '''
def evict_until_fit(manager, policy, blocks_needed, protected=frozenset()):
    if blocks_needed < 0:
        raise ValueError("blocks_needed must be >= 0")
    if manager.allocator.num_free >= blocks_needed:
        return []
    references = {}
    for seq_id, seq in manager.sequences.items():
        if seq_id not in protected:
            for block in seq.block_table:
                references[id(block)] = (block, references.get(id(block), (block, 0))[1] + 1)
    freeable = sum(1 for block, count in references.values() if count == block.ref_count)
    if manager.allocator.num_free + freeable < blocks_needed:
        raise RuntimeError("not enough blocks")
    evicted = []
    while manager.allocator.num_free < blocks_needed:
        victim = policy.select_victim(manager.sequences)
        manager.release(manager.sequences[victim])
        evicted.append(victim)
    return evicted
''',
        "evicts one victim too many (> instead of >=)": '''
def evict_until_fit(manager, policy, blocks_needed, protected=frozenset()):
    if blocks_needed < 0:
        raise ValueError("blocks_needed must be >= 0")
    import copy
    trial = copy.deepcopy(manager)
    for seq_id in [s for s in trial.sequences if s not in protected]:
        trial.release(trial.sequences[seq_id])
    if trial.allocator.num_free < blocks_needed:
        raise RuntimeError("not enough blocks")
    evicted = []
    while manager.allocator.num_free <= blocks_needed:
        victim = policy.select_victim(manager.sequences, protected)
        if victim is None:
            break
        manager.release(manager.sequences[victim])
        evicted.append(victim)
    return evicted
''',
        "no check of blocks_needed < 0": '''
def evict_until_fit(manager, policy, blocks_needed, protected=frozenset()):
    import copy
    trial = copy.deepcopy(manager)
    for seq_id in [s for s in trial.sequences if s not in protected]:
        trial.release(trial.sequences[seq_id])
    if trial.allocator.num_free < blocks_needed:
        raise RuntimeError("not enough blocks")
    evicted = []
    while manager.allocator.num_free < blocks_needed:
        victim = policy.select_victim(manager.sequences, protected)
        manager.release(manager.sequences[victim])
        evicted.append(victim)
    return evicted
''',
    },
    "task3_5_lru_victim_t": {
        "ties broken by the last index": '''
def lru_victim_t(last_access_step, evictable):
    if last_access_step.dim() != 1 or evictable.shape != last_access_step.shape:
        raise ValueError("shapes")
    candidates = torch.nonzero(evictable).flatten()
    if candidates.numel() == 0:
        return -1
    values = last_access_step[candidates]
    return int(candidates[values == values.min()][-1])
''',
        "ignores the mask": '''
def lru_victim_t(last_access_step, evictable):
    if last_access_step.dim() != 1 or evictable.shape != last_access_step.shape:
        raise ValueError("shapes")
    if not bool(evictable.any()):
        return -1
    return int(torch.argmin(last_access_step))
''',
        "masks with the int64 maximum (a masked entry can win)": '''
def lru_victim_t(last_access_step, evictable):
    if last_access_step.dim() != 1 or evictable.shape != last_access_step.shape:
        raise ValueError("shapes")
    if not bool(evictable.any()):
        return -1
    masked = torch.where(evictable, last_access_step, torch.full_like(last_access_step, 2**63 - 1))
    return int(torch.argmin(masked))
''',
        "returns a tensor, not an int": '''
def lru_victim_t(last_access_step, evictable):
    if last_access_step.dim() != 1 or evictable.shape != last_access_step.shape:
        raise ValueError("shapes")
    candidates = torch.nonzero(evictable).flatten()
    if candidates.numel() == 0:
        return -1
    return candidates[torch.argmin(last_access_step[candidates])]
''',
        "a Python loop over the entries": '''
def lru_victim_t(last_access_step, evictable):
    if last_access_step.dim() != 1 or evictable.shape != last_access_step.shape:
        raise ValueError("shapes")
    best = -1
    for i in range(last_access_step.shape[0]):
        if bool(evictable[i]) and (best < 0 or bool(last_access_step[i] < last_access_step[best])):
            best = i
    return best
''',
    },
    "task3_6_lfu_victim_t": {
        "ties broken by the last index": '''
def lfu_victim_t(use_count, last_access_step, evictable):
    if use_count.dim() != 1 or last_access_step.shape != use_count.shape or evictable.shape != use_count.shape:
        raise ValueError("shapes")
    candidates = torch.nonzero(evictable).flatten()
    if candidates.numel() == 0:
        return -1
    count = use_count[candidates]
    candidates = candidates[count == count.min()]
    step = last_access_step[candidates]
    return int(candidates[step == step.min()][-1])
''',
        "LFU without the recency tie-break": '''
def lfu_victim_t(use_count, last_access_step, evictable):
    if use_count.dim() != 1 or last_access_step.shape != use_count.shape or evictable.shape != use_count.shape:
        raise ValueError("shapes")
    candidates = torch.nonzero(evictable).flatten()
    if candidates.numel() == 0:
        return -1
    return int(candidates[torch.argmin(use_count[candidates])])
''',
        "folds both keys into one number": '''
def lfu_victim_t(use_count, last_access_step, evictable):
    if use_count.dim() != 1 or last_access_step.shape != use_count.shape or evictable.shape != use_count.shape:
        raise ValueError("shapes")
    candidates = torch.nonzero(evictable).flatten()
    if candidates.numel() == 0:
        return -1
    combined = use_count[candidates] * 10**6 + last_access_step[candidates]
    return int(candidates[torch.argmin(combined)])
''',
        "no shape check": '''
def lfu_victim_t(use_count, last_access_step, evictable):
    candidates = torch.nonzero(evictable).flatten()
    if candidates.numel() == 0:
        return -1
    count = use_count[candidates]
    candidates = candidates[count == count.min()]
    step = last_access_step[candidates]
    return int(candidates[step == step.min()][0])
''',
    },
    "task3_7_evict_order_t": {
        "ties broken by the last index": '''
def evict_order_t(keys, evictable, k):
    if k < 0 or len(keys) == 0:
        raise ValueError("bad k or keys")
    if evictable.dim() != 1 or any(key.shape != evictable.shape for key in keys):
        raise ValueError("shapes")
    order = torch.arange(evictable.shape[0], device=evictable.device).flip(0)
    for key in reversed(keys):
        order = order[torch.sort(key[order], stable=True).indices]
    return order[evictable[order]][:k]
''',
        "most significant key sorted first": '''
def evict_order_t(keys, evictable, k):
    if k < 0 or len(keys) == 0:
        raise ValueError("bad k or keys")
    if evictable.dim() != 1 or any(key.shape != evictable.shape for key in keys):
        raise ValueError("shapes")
    order = torch.arange(evictable.shape[0], device=evictable.device)
    for key in keys:
        order = order[torch.sort(key[order], stable=True).indices]
    return order[evictable[order]][:k]
''',
        "takes k before dropping protected entries": '''
def evict_order_t(keys, evictable, k):
    if k < 0 or len(keys) == 0:
        raise ValueError("bad k or keys")
    if evictable.dim() != 1 or any(key.shape != evictable.shape for key in keys):
        raise ValueError("shapes")
    order = torch.arange(evictable.shape[0], device=evictable.device)
    for key in reversed(keys):
        order = order[torch.sort(key[order], stable=True).indices]
    order = order[:k]
    return order[evictable[order]]
''',
        "only the first key": '''
def evict_order_t(keys, evictable, k):
    if k < 0 or len(keys) == 0:
        raise ValueError("bad k or keys")
    if evictable.dim() != 1 or any(key.shape != evictable.shape for key in keys):
        raise ValueError("shapes")
    order = torch.sort(keys[0], stable=True).indices
    return order[evictable[order]][:k]
''',
        "returns int32 indices": '''
def evict_order_t(keys, evictable, k):
    if k < 0 or len(keys) == 0:
        raise ValueError("bad k or keys")
    if evictable.dim() != 1 or any(key.shape != evictable.shape for key in keys):
        raise ValueError("shapes")
    order = torch.arange(evictable.shape[0], device=evictable.device)
    for key in reversed(keys):
        order = order[torch.sort(key[order], stable=True).indices]
    return order[evictable[order]][:k].to(torch.int32)
''',
    },
}

ALTERNATIVES = {
    "task3_1_EvictionPolicy": {
        "filter then sort in place": '''
class EvictionPolicy:
    """Base class of eviction policies."""

    def candidates(self, sequences, protected=frozenset()):
        ids = list(filter(lambda seq_id: seq_id not in protected, sequences.keys()))
        ids.sort()
        return ids

    def select_victim(self, sequences, protected=frozenset()):
        raise NotImplementedError
''',
        "set difference, then sorted": '''
from abc import ABC


class EvictionPolicy(ABC):
    """Base class of eviction policies."""

    def candidates(self, sequences, protected=frozenset()):
        return sorted(set(sequences) - set(protected))

    def select_victim(self, sequences, protected=frozenset()):
        raise NotImplementedError("abstract")
''',
    },
    "task3_2_LRUPolicy": {
        "sorted()[0] over tuples": '''
class LRUPolicy(EvictionPolicy):
    """LRU."""

    def select_victim(self, sequences, protected=frozenset()):
        rows = sorted((seq.last_access_step, seq_id) for seq_id, seq in sequences.items() if seq_id not in protected)
        return rows[0][1] if rows else None
''',
        "explicit scan over sorted candidates": '''
class LRUPolicy(EvictionPolicy):
    """LRU."""

    def select_victim(self, sequences, protected=frozenset()):
        best = None
        for seq_id in self.candidates(sequences, protected):
            if best is None or sequences[seq_id].last_access_step < sequences[best].last_access_step:
                best = seq_id
        return best
''',
        "heapq.nsmallest": '''
import heapq


class LRUPolicy(EvictionPolicy):
    """LRU."""

    def select_victim(self, sequences, protected=frozenset()):
        top = heapq.nsmallest(1, ((s.last_access_step, k) for k, s in sequences.items() if k not in protected))
        return top[0][1] if top else None
''',
    },
    "task3_3_LFUPolicy": {
        "heapq over (use_count, step, id)": '''
import heapq


class LFUPolicy(EvictionPolicy):
    """LFU."""

    def select_victim(self, sequences, protected=frozenset()):
        heap = [(s.use_count, s.last_access_step, k) for k, s in sequences.items() if k not in protected]
        if not heap:
            return None
        heapq.heapify(heap)
        return heap[0][2]
''',
        "two stable sorts": '''
class LFUPolicy(EvictionPolicy):
    """LFU."""

    def select_victim(self, sequences, protected=frozenset()):
        ids = self.candidates(sequences, protected)
        ids.sort(key=lambda s: sequences[s].last_access_step)
        ids.sort(key=lambda s: sequences[s].use_count)
        return ids[0] if ids else None
''',
    },
    "task3_4_evict_until_fit": {
        "dry run on a deep copy": '''
import copy


def evict_until_fit(manager, policy, blocks_needed, protected=frozenset()):
    """Dry run first, then evict for real."""
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
''',
        "Counter of references by block object": '''
from collections import Counter


def evict_until_fit(manager, policy, blocks_needed, protected=frozenset()):
    """Count unprotected references per block."""
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
''',
        "pinned blocks subtracted from the used ones": '''
def evict_until_fit(manager, policy, blocks_needed, protected=frozenset()):
    """A block stays when any protected sequence holds it."""
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
''',
    },
    "task3_5_lru_victim_t": {
        "stable sort, first evictable": '''
def lru_victim_t(last_access_step, evictable):
    """Stable sort."""
    if last_access_step.ndim != 1 or last_access_step.shape != evictable.shape:
        raise ValueError("expected 1-D tensors of one length")
    order = torch.sort(last_access_step, stable=True).indices
    order = order[evictable[order]]
    return int(order[0]) if order.numel() else -1
''',
        "min value, then first index that has it": '''
def lru_victim_t(last_access_step, evictable):
    """Two passes."""
    if last_access_step.ndim != 1 or len(last_access_step) != len(evictable) or evictable.ndim != 1:
        raise ValueError("expected 1-D tensors of one length")
    if not bool(evictable.any()):
        return -1
    smallest = last_access_step[evictable].min()
    hits = torch.nonzero(evictable & (last_access_step == smallest)).flatten()
    return int(hits[0])
''',
    },
    "task3_6_lfu_victim_t": {
        "two stable sorts": '''
def lfu_victim_t(use_count, last_access_step, evictable):
    """Radix-style: sort by step, then stably by count."""
    if not (use_count.ndim == last_access_step.ndim == evictable.ndim == 1) or not (
            len(use_count) == len(last_access_step) == len(evictable)):
        raise ValueError("expected 1-D tensors of one length")
    order = torch.sort(last_access_step, stable=True).indices
    order = order[torch.sort(use_count[order], stable=True).indices]
    order = order[evictable[order]]
    return int(order[0]) if order.numel() else -1
''',
        "dense ranks folded into one key": '''
def lfu_victim_t(use_count, last_access_step, evictable):
    """Ranks fit in one int64 without overflow."""
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
''',
    },
    "task3_7_evict_order_t": {
        "dense ranks folded into one key": '''
def evict_order_t(keys, evictable, k):
    """Mixed-radix key of dense ranks, then one sort."""
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
''',
        "numpy lexsort on the CPU": '''
import numpy as np


def evict_order_t(keys, evictable, k):
    """np.lexsort sorts by the last key given first, so the keys go in reversed."""
    if k < 0 or len(keys) == 0:
        raise ValueError("bad k or keys")
    if evictable.dim() != 1 or any(key.shape != evictable.shape for key in keys):
        raise ValueError("expected 1-D tensors of one length")
    n = evictable.shape[0]
    columns = [np.arange(n)] + [key.cpu().numpy() for key in reversed(keys)]
    order = torch.from_numpy(np.lexsort(columns)).to(evictable.device)
    return order[evictable[order]][:k].to(torch.int64)
''',
    },
}
