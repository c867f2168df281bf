"""Wrong and alternative answers for notebook 01 (see grading/mutants/__init__.py)."""

WRONG = {
    "task1_1_select_victim": {
        "max instead of min": '''
def select_victim(values):
    if not values:
        return None
    return max(values, key=lambda k: (values[k], k))
''',
        "ties ignored (insertion order decides)": '''
def select_victim(values):
    if not values:
        return None
    return min(values, key=values.get)
''',
        "ties to the larger key": '''
def select_victim(values):
    if not values:
        return None
    return min(sorted(values, reverse=True), key=values.get)
''',
        "crashes on an empty dict": '''
def select_victim(values):
    return min(values, key=lambda k: (values[k], k))
''',
    },
    "task1_2_eviction_order": {
        "descending order": '''
def eviction_order(values):
    return sorted(values, key=lambda k: (values[k], k), reverse=True)
''',
        "ties ignored (insertion order decides)": '''
def eviction_order(values):
    return sorted(values, key=values.get)
''',
        "returns the values, not the keys": '''
def eviction_order(values):
    return [values[k] for k in sorted(values, key=lambda k: (values[k], k))]
''',
    },
    "task1_3_quotas": {
        "counts instead of weights (equal split)": '''
import math
def quotas(weights, total_blocks):
    if total_blocks < 0 or not weights or sum(weights.values()) == 0:
        raise ValueError("bad input")
    if any(not math.isfinite(w) or w < 0 for w in weights.values()):
        raise ValueError("bad weight")
    return {t: total_blocks / len(weights) for t in weights}
''',
        "no input checks": '''
def quotas(weights, total_blocks):
    total = sum(weights.values())
    return {t: w / total * total_blocks for t, w in weights.items()}
''',
        "forgets to multiply by total_blocks": '''
import math
def quotas(weights, total_blocks):
    if total_blocks < 0 or sum(weights.values()) == 0:
        raise ValueError("bad input")
    if any(not math.isfinite(w) or w < 0 for w in weights.values()):
        raise ValueError("bad weight")
    total = sum(weights.values())
    return {t: w / total for t, w in weights.items()}
''',
        "normalizes by the largest weight": '''
import math
def quotas(weights, total_blocks):
    if total_blocks < 0 or not weights or sum(weights.values()) == 0:
        raise ValueError("bad input")
    if any(not math.isfinite(w) or w < 0 for w in weights.values()):
        raise ValueError("bad weight")
    top = max(weights.values())
    return {t: w / top * total_blocks for t, w in weights.items()}
''',
    },
    "task1_4_overuse": {
        "only tenants that hold blocks": '''
def overuse(usage, quota):
    return {t: float(u) - float(quota.get(t, 0.0)) for t, u in usage.items()}
''',
        "quota minus usage": '''
def overuse(usage, quota):
    return {t: float(quota.get(t, 0.0)) - float(usage.get(t, 0)) for t in set(usage) | set(quota)}
''',
        "an int where a quota is missing": '''
def overuse(usage, quota):
    return {t: usage.get(t, 0) - quota.get(t, 0) for t in set(usage) | set(quota)}
''',
    },
    "task1_5_victim_tenant": {
        "ties to the smaller name": '''
def victim_tenant(usage, quota):
    over = {t: a for t, a in overuse(usage, quota).items() if a > 0}
    if not over:
        return None
    return min(over, key=lambda t: (-over[t], t))
''',
        "counts a tenant exactly at quota as over": '''
def victim_tenant(usage, quota):
    over = {t: a for t, a in overuse(usage, quota).items() if a >= 0}
    if not over:
        return None
    return max(over, key=lambda t: (over[t], t))
''',
        "largest usage instead of largest overuse": '''
def victim_tenant(usage, quota):
    over = [t for t, a in overuse(usage, quota).items() if a > 0]
    if not over:
        return None
    return max(over, key=lambda t: (usage.get(t, 0), t))
''',
    },
    "task1_6_argmin_victim": {
        "ignores the mask": '''
def argmin_victim(values, evictable=None):
    if values.numel() == 0:
        return -1
    return int(torch.argmin(values))
''',
        "a Python loop that ignores the mask": '''
def argmin_victim(values, evictable=None):
    best = -1
    for i in range(len(values)):
        if best < 0 or values[i] < values[best]:
            best = i
    return best
''',
        "masks with +inf (wrong for an evictable +inf)": '''
def argmin_victim(values, evictable=None):
    if evictable is None:
        evictable = torch.ones_like(values, dtype=torch.bool)
    if not bool(evictable.any()):
        return -1
    masked = torch.where(evictable, values.double(), torch.full_like(values, float("inf"), dtype=torch.float64))
    return int(torch.argmin(masked))
''',
        "returns a tensor, not an int": '''
def argmin_victim(values, evictable=None):
    idx = torch.nonzero(evictable).flatten() if evictable is not None else torch.arange(len(values), device=values.device)
    if idx.numel() == 0:
        return -1
    return idx[torch.argmin(values[idx])]
''',
        "last index on ties": '''
def argmin_victim(values, evictable=None):
    idx = torch.nonzero(evictable).flatten() if evictable is not None else torch.arange(len(values), device=values.device)
    if idx.numel() == 0:
        return -1
    flipped = idx.flip(0)
    return int(flipped[torch.argmin(values[flipped])])
''',
    },
    "task1_7_lex_argmin": {
        "packs two keys into one int64 (overflows)": '''
def lex_argmin(keys, evictable=None):
    if len(keys) == 0:
        raise ValueError("no keys")
    packed = keys[0] * 2**32 + (keys[1] if len(keys) > 1 else 0)
    idx = torch.nonzero(evictable).flatten() if evictable is not None else torch.arange(len(packed), device=packed.device)
    if idx.numel() == 0:
        return -1
    return int(idx[torch.argmin(packed[idx])])
''',
        "only the first key": '''
def lex_argmin(keys, evictable=None):
    if len(keys) == 0:
        raise ValueError("no keys")
    idx = torch.nonzero(evictable).flatten() if evictable is not None else torch.arange(len(keys[0]), device=keys[0].device)
    if idx.numel() == 0:
        return -1
    return int(idx[torch.argmin(keys[0][idx])])
''',
        "last index when every key ties": '''
def lex_argmin(keys, evictable=None):
    if len(keys) == 0:
        raise ValueError("no keys")
    cand = torch.ones_like(keys[0], dtype=torch.bool) if evictable is None else evictable.clone()
    if not bool(cand.any()):
        return -1
    for key in keys:
        low = torch.where(cand, key, torch.full_like(key, torch.iinfo(key.dtype).max)).min()
        cand = cand & (key == low)
    return int(torch.nonzero(cand)[-1, 0])
''',
        "a Python loop over the entries": '''
def lex_argmin(keys, evictable=None):
    if len(keys) == 0:
        raise ValueError("no keys")
    best = -1
    for i in range(len(keys[0])):
        if evictable is not None and not bool(evictable[i]):
            continue
        row = tuple(int(k[i]) for k in keys)
        if best < 0 or row < tuple(int(k[best]) for k in keys):
            best = i
    return best
''',
    },
    "task1_8_quotas_tensor": {
        "float32 instead of float64": '''
def quotas_tensor(weights, total_blocks):
    if total_blocks < 0:
        raise ValueError("total_blocks < 0")
    w = weights.float()
    if not bool(torch.isfinite(w).all()) or bool((w < 0).any()) or float(w.sum()) == 0:
        raise ValueError("bad weights")
    return w / w.sum() * total_blocks
''',
        "no input checks": '''
def quotas_tensor(weights, total_blocks):
    w = weights.double()
    return w / w.sum() * total_blocks
''',
        "counts instead of weights (equal split)": '''
def quotas_tensor(weights, total_blocks):
    if total_blocks < 0:
        raise ValueError("total_blocks < 0")
    w = weights.double()
    if not bool(torch.isfinite(w).all()) or bool((w < 0).any()) or float(w.sum()) == 0:
        raise ValueError("bad weights")
    return torch.full_like(w, total_blocks / len(w))
''',
    },
}

ALTERNATIVES = {
    "task1_1_select_victim": {
        "sorted()[0]": '''
def select_victim(values):
    ranked = sorted(values.items(), key=lambda item: (item[1], item[0]))
    return ranked[0][0] if ranked else None
''',
        "an explicit scan": '''
def select_victim(values):
    best = None
    for key, value in values.items():
        if best is None or (value, key) < (values[best], best):
            best = key
    return best
''',
    },
    "task1_2_eviction_order": {
        "a heap": '''
import heapq
def eviction_order(values):
    heap = [(value, key) for key, value in values.items()]
    heapq.heapify(heap)
    return [heapq.heappop(heap)[1] for _ in range(len(heap))]
''',
        "two stable sorts": '''
def eviction_order(values):
    return sorted(sorted(values), key=lambda key: values[key])
''',
    },
    "task1_3_quotas": {
        "fractions": '''
from fractions import Fraction
import math
def quotas(weights, total_blocks):
    if total_blocks < 0:
        raise ValueError("total_blocks must be >= 0")
    if any(not math.isfinite(w) or w < 0 for w in weights.values()):
        raise ValueError("weights must be finite and >= 0")
    total = sum(Fraction(w) for w in weights.values())
    if total == 0:
        raise ValueError("weights sum to 0")
    return {t: float(Fraction(w) / total * total_blocks) for t, w in weights.items()}
''',
        "shares first": '''
import math
def quotas(weights, total_blocks):
    bad = [t for t, w in weights.items() if not (w >= 0 and math.isfinite(w))]
    if bad or total_blocks < 0 or sum(weights.values()) <= 0:
        raise ValueError(f"invalid weights {bad} or total_blocks {total_blocks}")
    shares = {t: w / sum(weights.values()) for t, w in weights.items()}
    return {t: total_blocks * s for t, s in shares.items()}
''',
    },
    "task1_4_overuse": {
        "a loop over both dicts": '''
def overuse(usage, quota):
    result = {}
    for tenant in list(usage) + list(quota):
        result[tenant] = usage.get(tenant, 0) - quota.get(tenant, 0) + 0.0
    return result
''',
        "collections.Counter-free union": '''
def overuse(usage, quota):
    tenants = {**{t: None for t in usage}, **{t: None for t in quota}}
    return {t: float(usage[t] if t in usage else 0) - float(quota[t] if t in quota else 0) for t in tenants}
''',
    },
    "task1_5_victim_tenant": {
        "sorted()[-1]": '''
def victim_tenant(usage, quota):
    ranked = sorted((amount, tenant) for tenant, amount in overuse(usage, quota).items() if amount > 0)
    return ranked[-1][1] if ranked else None
''',
        "an explicit scan": '''
def victim_tenant(usage, quota):
    best = None
    for tenant, amount in overuse(usage, quota).items():
        if amount > 0 and (best is None or (amount, tenant) > best):
            best = (amount, tenant)
    return None if best is None else best[1]
''',
    },
    "task1_6_argmin_victim": {
        "torch.sort (stable)": '''
def argmin_victim(values, evictable=None):
    if evictable is None:
        evictable = torch.ones(values.shape, dtype=torch.bool, device=values.device)
    idx = torch.nonzero(evictable).flatten()
    if len(idx) == 0:
        return -1
    order = torch.sort(values[idx], stable=True).indices
    return int(idx[order[0]])
''',
        "min value, then the first index holding it": '''
def argmin_victim(values, evictable=None):
    mask = torch.ones_like(values, dtype=torch.bool) if evictable is None else evictable
    if not bool(mask.any()):
        return -1
    smallest = values[mask].min()
    return int(torch.nonzero(mask & (values == smallest))[0, 0])
''',
    },
    "task1_7_lex_argmin": {
        "stable sorts from the last key to the first": '''
def lex_argmin(keys, evictable=None):
    if not keys:
        raise ValueError("keys must not be empty")
    order = torch.arange(len(keys[0]), device=keys[0].device)
    for key in reversed(keys):
        order = order[torch.sort(key[order], stable=True).indices]
    if evictable is not None:
        order = order[evictable[order]]
    return int(order[0]) if len(order) else -1
''',
        "narrowing with index tensors": '''
def lex_argmin(keys, evictable=None):
    if len(keys) == 0:
        raise ValueError("keys must not be empty")
    idx = torch.arange(keys[0].numel(), device=keys[0].device)
    if evictable is not None:
        idx = idx[evictable]
    for key in keys:
        if idx.numel() == 0:
            return -1
        sub = key[idx]
        idx = idx[sub == sub.min()]
    return int(idx.min()) if idx.numel() else -1
''',
    },
    "task1_8_quotas_tensor": {
        "torch.div": '''
def quotas_tensor(weights, total_blocks):
    w = weights.to(torch.float64)
    if total_blocks < 0 or w.numel() == 0 or not torch.isfinite(w).all() or (w < 0).any() or w.sum() == 0:
        raise ValueError("invalid weights or total_blocks")
    return torch.div(w, w.sum()).mul(total_blocks)
''',
        "total first": '''
def quotas_tensor(weights, total_blocks):
    if total_blocks < 0:
        raise ValueError("total_blocks must be >= 0")
    w = weights.double()
    if torch.isnan(w).any() or torch.isinf(w).any() or (w < 0).any():
        raise ValueError("weights must be finite and >= 0")
    if w.sum().item() == 0:
        raise ValueError("weights sum to 0")
    return total_blocks * w / w.sum()
''',
    },
}
