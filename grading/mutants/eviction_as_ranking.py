"""Wrong and alternative answers for notebook 01 (see grading/mutants/__init__.py)."""

from grading.reference import Reference

ref = Reference("01_eviction_as_ranking")

VICTIM, ORDER, QUOTAS = "task1_1_select_victim", "task1_2_eviction_order", "task1_3_quotas"
OVERUSE, TENANT, ARGMIN = "task1_4_overuse", "task1_5_victim_tenant", "task1_6_argmin_victim"
LEX, QUOTAS_T = "task1_7_lex_argmin", "task1_8_quotas_tensor"

WRONG = {
    VICTIM: {
        "max instead of min": ref.edit(VICTIM, ("return min(", "return max(")),
        "ties ignored (insertion order decides)": ref.edit(
            VICTIM, ("key=lambda seq_id: (values[seq_id], seq_id)", "key=values.get")),
        "ties to the larger key": ref.edit(
            VICTIM, ("min(values, key=lambda seq_id: (values[seq_id], seq_id))",
                     "min(sorted(values, reverse=True), key=values.get)")),
        "crashes on an empty dict": ref.edit(VICTIM, ("    if not values:\n        return None\n", "")),
    },
    ORDER: {
        "descending order": ref.edit(ORDER, ("seq_id))", "seq_id), reverse=True)")),
        "ties ignored (insertion order decides)": ref.edit(
            ORDER, ("key=lambda seq_id: (values[seq_id], seq_id)", "key=values.get")),
        "returns the values, not the keys": ref.edit(
            ORDER, ("return sorted(values, key=lambda seq_id: (values[seq_id], seq_id))",
                    "return [values[k] for k in sorted(values, key=lambda k: (values[k], k))]")),
    },
    QUOTAS: {
        "counts instead of weights (equal split)": ref.edit(
            QUOTAS, ("weight / total_weight * total_blocks", "total_blocks / len(weights)")),
        "no input checks": ref.solve(QUOTAS, quotas="""
            total = sum(weights.values())
            return {t: w / total * total_blocks for t, w in weights.items()}
        """),
        "forgets to multiply by total_blocks": ref.edit(
            QUOTAS, ("weight / total_weight * total_blocks", "weight / total_weight")),
        "normalizes by the largest weight": ref.edit(
            QUOTAS, ("weight / total_weight * total_blocks", "weight / max(weights.values()) * total_blocks")),
    },
    OVERUSE: {
        "only tenants that hold blocks": ref.edit(
            OVERUSE, ("tenants = set(usage) | set(quota)", "tenants = set(usage)")),
        "quota minus usage": ref.edit(
            OVERUSE, ("float(usage.get(tenant, 0)) - float(quota.get(tenant, 0.0))",
                      "float(quota.get(tenant, 0.0)) - float(usage.get(tenant, 0))")),
        "an int where a quota is missing": ref.edit(
            OVERUSE, ("float(usage.get(tenant, 0)) - float(quota.get(tenant, 0.0))",
                      "usage.get(tenant, 0) - quota.get(tenant, 0)")),
    },
    TENANT: {
        "ties to the smaller name": ref.edit(
            TENANT, ("return max(over, key=lambda tenant: (over[tenant], tenant))",
                     "return min(over, key=lambda tenant: (-over[tenant], tenant))")),
        "counts a tenant exactly at quota as over": ref.edit(TENANT, ("if amount > 0}", "if amount >= 0}")),
        "largest usage instead of largest overuse": ref.edit(
            TENANT, ("(over[tenant], tenant)", "(usage.get(tenant, 0), tenant)")),
    },
    ARGMIN: {
        "ignores the mask": ref.solve(ARGMIN, argmin_victim="""
            if values.numel() == 0:
                return -1
            return int(torch.argmin(values))
        """),
        "a Python loop that ignores the mask": ref.solve(ARGMIN, argmin_victim="""
            best = -1
            for i in range(len(values)):
                if best < 0 or values[i] < values[best]:
                    best = i
            return best
        """),
        "masks with +inf (wrong for an evictable +inf)": ref.solve(ARGMIN, argmin_victim="""
            if evictable is None:
                evictable = torch.ones_like(values, dtype=torch.bool)
            if not bool(evictable.any()):
                return -1
            masked = torch.where(evictable, values.double(), torch.full_like(values, float("inf"), dtype=torch.float64))
            return int(torch.argmin(masked))
        """),
        "returns a tensor, not an int": ref.edit(
            ARGMIN, ("return int(candidates[torch.argmin(values[candidates])])",
                     "return candidates[torch.argmin(values[candidates])]")),
        "last index on ties": ref.edit(
            ARGMIN, ("return int(candidates[torch.argmin(values[candidates])])",
                     "candidates = candidates.flip(0)\n    return int(candidates[torch.argmin(values[candidates])])")),
    },
    LEX: {
        "packs two keys into one int64 (overflows)": ref.solve(LEX, lex_argmin="""
            if len(keys) == 0:
                raise ValueError("no keys")
            packed = keys[0] * 2**32 + (keys[1] if len(keys) > 1 else 0)
            if evictable is None:
                idx = torch.arange(len(packed), device=packed.device)
            else:
                idx = torch.nonzero(evictable).flatten()
            if idx.numel() == 0:
                return -1
            return int(idx[torch.argmin(packed[idx])])
        """),
        "only the first key": ref.edit(LEX, ("    for key in keys:\n", "    for key in keys[:1]:\n")),
        "last index when every key ties": ref.edit(
            LEX, ("return int(torch.nonzero(candidates)[0, 0])", "return int(torch.nonzero(candidates)[-1, 0])")),
        "a Python loop over the entries": ref.solve(LEX, lex_argmin="""
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
        """),
    },
    QUOTAS_T: {
        "float32 instead of float64": ref.edit(QUOTAS_T, ("weights.to(torch.float64)", "weights.to(torch.float32)")),
        "no input checks": ref.solve(QUOTAS_T, quotas_tensor="""
            w = weights.double()
            return w / w.sum() * total_blocks
        """),
        "counts instead of weights (equal split)": ref.edit(
            QUOTAS_T, ("return weights / total_weight * total_blocks",
                       "return torch.full_like(weights, total_blocks / len(weights))")),
    },
}

ALTERNATIVES = {
    VICTIM: {
        "sorted()[0]": ref.solve(VICTIM, select_victim="""
            ranked = sorted(values.items(), key=lambda item: (item[1], item[0]))
            return ranked[0][0] if ranked else None
        """),
        "an explicit scan": ref.solve(VICTIM, select_victim="""
            best = None
            for key, value in values.items():
                if best is None or (value, key) < (values[best], best):
                    best = key
            return best
        """),
    },
    ORDER: {
        "a heap": ref.solve(ORDER, before="import heapq", eviction_order="""
            heap = [(value, key) for key, value in values.items()]
            heapq.heapify(heap)
            return [heapq.heappop(heap)[1] for _ in range(len(heap))]
        """),
        "two stable sorts": ref.solve(
            ORDER, eviction_order="return sorted(sorted(values), key=lambda key: values[key])"),
    },
    QUOTAS: {
        "fractions": ref.solve(QUOTAS, before="from fractions import Fraction", quotas="""
            if total_blocks < 0:
                raise ValueError("total_blocks must be >= 0")
            if any(not math.isfinite(w) or w < 0 for w in weights.values()):
                raise ValueError("weights must be finite and >= 0")
            total = sum(Fraction(w) for w in weights.values())
            if total == 0:
                raise ValueError("weights sum to 0")
            return {t: float(Fraction(w) / total * total_blocks) for t, w in weights.items()}
        """),
        "shares first": ref.solve(QUOTAS, quotas="""
            bad = [t for t, w in weights.items() if not (w >= 0 and math.isfinite(w))]
            if bad or total_blocks < 0 or sum(weights.values()) <= 0:
                raise ValueError(f"invalid weights {bad} or total_blocks {total_blocks}")
            shares = {t: w / sum(weights.values()) for t, w in weights.items()}
            return {t: total_blocks * s for t, s in shares.items()}
        """),
    },
    OVERUSE: {
        "a loop over both dicts": ref.solve(OVERUSE, overuse="""
            result = {}
            for tenant in list(usage) + list(quota):
                result[tenant] = usage.get(tenant, 0) - quota.get(tenant, 0) + 0.0
            return result
        """),
        "collections.Counter-free union": ref.solve(OVERUSE, overuse="""
            tenants = {**{t: None for t in usage}, **{t: None for t in quota}}
            return {t: float(usage[t] if t in usage else 0) - float(quota[t] if t in quota else 0) for t in tenants}
        """),
    },
    TENANT: {
        "sorted()[-1]": ref.solve(TENANT, victim_tenant="""
            ranked = sorted((amount, tenant) for tenant, amount in overuse(usage, quota).items() if amount > 0)
            return ranked[-1][1] if ranked else None
        """),
        "an explicit scan": ref.solve(TENANT, victim_tenant="""
            best = None
            for tenant, amount in overuse(usage, quota).items():
                if amount > 0 and (best is None or (amount, tenant) > best):
                    best = (amount, tenant)
            return None if best is None else best[1]
        """),
    },
    ARGMIN: {
        "torch.sort (stable)": ref.solve(ARGMIN, argmin_victim="""
            if evictable is None:
                evictable = torch.ones(values.shape, dtype=torch.bool, device=values.device)
            idx = torch.nonzero(evictable).flatten()
            if len(idx) == 0:
                return -1
            order = torch.sort(values[idx], stable=True).indices
            return int(idx[order[0]])
        """),
        "min value, then the first index holding it": ref.solve(ARGMIN, argmin_victim="""
            mask = torch.ones_like(values, dtype=torch.bool) if evictable is None else evictable
            if not bool(mask.any()):
                return -1
            smallest = values[mask].min()
            return int(torch.nonzero(mask & (values == smallest))[0, 0])
        """),
    },
    LEX: {
        "stable sorts from the last key to the first": ref.solve(LEX, lex_argmin="""
            if not keys:
                raise ValueError("keys must not be empty")
            order = torch.arange(len(keys[0]), device=keys[0].device)
            for key in reversed(keys):
                order = order[torch.sort(key[order], stable=True).indices]
            if evictable is not None:
                order = order[evictable[order]]
            return int(order[0]) if len(order) else -1
        """),
        "narrowing with index tensors": ref.solve(LEX, lex_argmin="""
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
        """),
    },
    QUOTAS_T: {
        "torch.div": ref.solve(QUOTAS_T, quotas_tensor="""
            w = weights.to(torch.float64)
            if total_blocks < 0 or w.numel() == 0 or not torch.isfinite(w).all() or (w < 0).any() or w.sum() == 0:
                raise ValueError("invalid weights or total_blocks")
            return torch.div(w, w.sum()).mul(total_blocks)
        """),
        "total first": ref.solve(QUOTAS_T, quotas_tensor="""
            if total_blocks < 0:
                raise ValueError("total_blocks must be >= 0")
            w = weights.double()
            if torch.isnan(w).any() or torch.isinf(w).any() or (w < 0).any():
                raise ValueError("weights must be finite and >= 0")
            if w.sum().item() == 0:
                raise ValueError("weights sum to 0")
            return total_blocks * w / w.sum()
        """),
    },
}
