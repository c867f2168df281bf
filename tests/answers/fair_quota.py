"""Wrong and alternative answers for notebook 04 (see tests/answers/__init__.py)."""

from grading.authoring.reference import Reference, regions

ref = Reference("04_fair_quota")

FAIR, JAIN, TENSOR = "task4_1_FairPolicy", "task4_2_jain_index", "task4_3_fair_victim_t"


def rewrite(grade_id, before="", **bodies):
    """The reference cell with each named function's code written anew: a function with several blanks
    gets ``body`` in its first blank and the others left empty (an answer that ignores its TODO structure)."""
    found = regions(ref.cells[grade_id])
    todo = {}
    for name, body in bodies.items():
        labels = [region.todo for region in found if region.name == name]
        todo.update({labels[0]: body, **{label: "" for label in labels[1:]}})
    return ref.solve(grade_id, todo=todo, before=before)


WRONG = {
    FAIR: {
        "a typical slip in every part: NaN accepted, split() without the default, idle tenants dropped, "
        "usage in sequences, ties to the larger name, no global fallback": ref.edit(
            FAIR, ("if not math.isfinite(weight) or weight < 0:", "if weight < 0:"),
            ('        tenant, separator, _ = seq_id.partition("::")\n        return tenant if separator else "default"',
             '        return seq_id.split("::")[0]'),
            ("weights.update(self.tenant_weights)",
             "weights.update({t: w for t, w in self.tenant_weights.items() if t in weights})"),
            ("usage[tenant] += seq.num_blocks()", "usage[tenant] += 1"),
            ("for tenant in sorted(over, key=lambda t: (-overuse[t], t)):",
             "for tenant in sorted(over, key=lambda t: (overuse[t], t), reverse=True):"),
            ("return lru([seq_id for ids in evictable.values() for seq_id in ids])", "return None")),
        "usage counted in sequences instead of blocks": ref.edit(
            FAIR, ("usage[tenant] += seq.num_blocks()", "usage[tenant] += 1")),
        "quotas from present tenants only": ref.edit(
            FAIR, ("weights.update(self.tenant_weights)",
                   "weights.update({t: w for t, w in self.tenant_weights.items() if t in weights})")),
        "ties to the larger tenant name": ref.edit(
            FAIR, ("for tenant in sorted(over, key=lambda t: (-overuse[t], t)):",
                   "for tenant in sorted(over, key=lambda t: (overuse[t], t), reverse=True):")),
        "tenants tried by overuse alone (a tie goes to whichever came first)": ref.edit(
            FAIR, ("for tenant in sorted(over, key=lambda t: (-overuse[t], t)):",
                   "for tenant in sorted(over, key=lambda t: -overuse[t]):")),
        "most recent instead of least recent inside the tenant": ref.edit(
            FAIR, ("                return lru(evictable[tenant])",
                   "                return max(evictable[tenant], key=lambda s: (sequences[s].last_access_step, s))")),
        "no global fallback (None when nobody is over quota)": ref.edit(
            FAIR, ("return lru([seq_id for ids in evictable.values() for seq_id in ids])", "return None")),
        "protected sequences chosen": ref.edit(
            FAIR, ("            if seq_id not in protected:\n                evictable[tenant].append(seq_id)",
                   "            evictable[tenant].append(seq_id)")),
        "an over-quota tenant with nothing evictable stops the search (global LRU at once)": ref.edit(
            FAIR, ("                return lru(evictable[tenant])\n",
                   "                return lru(evictable[tenant])\n            break\n")),
        "protected sequences left out of the usage": ref.edit(
            FAIR, ("            usage[tenant] += seq.num_blocks()\n            if seq_id not in protected:\n",
                   "            if seq_id not in protected:\n                usage[tenant] += seq.num_blocks()\n")),
        "_tenant_of splits at the last '::'": ref.edit(
            FAIR, ('tenant, separator, _ = seq_id.partition("::")', 'tenant, separator, _ = seq_id.rpartition("::")')),
        "a missing weight counts as 0": ref.edit(
            FAIR, ("for seq_id in sequences), 1.0)", "for seq_id in sequences), 0.0)")),
        "exactly at quota counts as over quota": ref.edit(
            FAIR, ("if overuse[tenant] > 0]", "if overuse[tenant] >= 0]")),
        "no check of the weights": ref.edit(FAIR, ("if not math.isfinite(weight) or weight < 0:", "if False:")),
        "divides by zero when all weights are 0": ref.edit(
            FAIR, ("        if total_weight == 0:\n            raise ValueError(",
                   "        if False:\n            raise ValueError(")),
        "zeros when all weights are 0 (instead of ValueError)": ref.edit(
            FAIR, ('            raise ValueError("the weights of the tenants sum to 0: their quotas are undefined")',
                   "            return {tenant: 0.0 for tenant in weights}")),
        "_tenant_of is not a static method": ref.edit(
            FAIR, ("    @staticmethod\n    def _tenant_of(seq_id):", "    def _tenant_of(self, seq_id):")),
        "quota from the largest weight instead of the sum": ref.edit(
            FAIR, ("total_weight = sum(weights.values())", "total_weight = max(weights.values(), default=0)")),
        "quotas before the None check (an empty cache raises)": ref.edit(
            FAIR, ("        if not self.candidates(sequences, protected):\n            return None\n"
                   "        quotas = self._quotas(sequences)\n",
                   "        quotas = self._quotas(sequences)\n"
                   "        if not self.candidates(sequences, protected):\n            return None\n")),
        "None only for an empty cache (every sequence protected crashes)": ref.edit(
            FAIR, ("        if not self.candidates(sequences, protected):\n", "        if not sequences:\n")),
        "_quotas changes the stored weights (tenants leak from one call to the next)": ref.edit(
            FAIR, ("        weights = dict.fromkeys((self._tenant_of(seq_id) for seq_id in sequences), 1.0)\n"
                   "        weights.update(self.tenant_weights)\n",
                   "        weights = self.tenant_weights\n        for seq_id in sequences:\n"
                   "            weights.setdefault(self._tenant_of(seq_id), 1.0)\n")),
        "keeps the caller's dict, which _quotas then fills": ref.edit(
            FAIR, ("        weights = dict(tenant_weights or {})\n",
                   "        weights = tenant_weights if tenant_weights is not None else {}\n"),
            ("        weights = dict.fromkeys((self._tenant_of(seq_id) for seq_id in sequences), 1.0)\n"
             "        weights.update(self.tenant_weights)\n",
             "        weights = self.tenant_weights\n        for seq_id in sequences:\n"
             "            weights.setdefault(self._tenant_of(seq_id), 1.0)\n")),
        "keeps the caller's dict (no copy), without changing it": ref.edit(
            FAIR, ("        weights = dict(tenant_weights or {})\n",
                   "        weights = tenant_weights if tenant_weights is not None else {}\n")),
        "quotas computed on the first call and kept for later caches": ref.edit(FAIR, (
            "        quotas = self._quotas(sequences)\n",
            "        if getattr(self, \"_first_quotas\", None) is None:\n"
            "            self._first_quotas = self._quotas(sequences)\n"
            "        quotas = {tenant: self._first_quotas.get(tenant, 0.0) for tenant in self._quotas(sequences)}\n")),
    },
    JAIN: {
        "forgets the factor n": ref.edit(JAIN, ("(len(values) * square_sum)", "square_sum")),
        "crashes on an empty or all-zero list": ref.edit(JAIN, ("    if square_sum == 0:\n        return 1.0\n", "")),
        "0.0 for an all-zero list": ref.edit(
            JAIN, ("    if square_sum == 0:\n        return 1.0\n",
                   "    if not values:\n        return 1.0\n    if square_sum == 0:\n        return 0.0\n")),
        "an int for integer input": rewrite(JAIN, jain_index="""
            squares = sum(x * x for x in xs)
            if squares == 0:
                return 1
            exact = sum(xs) ** 2 % (len(xs) * squares) == 0
            return sum(xs) ** 2 // (len(xs) * squares) if exact else sum(xs) ** 2 / (len(xs) * squares)
        """),
        "min over max instead of Jain's index": rewrite(JAIN, jain_index="""
            if not xs or max(xs) == 0:
                return 1.0
            return float(min(xs) / max(xs))
        """),
        "sorts xs in place": ref.edit(
            JAIN, ("    values = [float(x) for x in xs]\n", "    xs.sort()\n    values = [float(x) for x in xs]\n")),
    },
    TENSOR: {
        "bincount without minlength, a Python loop over tenants with ties to the larger index, "
        "most recent inside the tenant": ref.solve(TENSOR, todo={
            "4.3.1": """
                if not bool(evictable.any()):
                    return -1
                usage = torch.bincount(tenant, weights=num_blocks.to(torch.float64))
                has_evictable = torch.bincount(tenant[evictable]) > 0
            """,
            "4.3.2": """
                weights = weights.to(torch.float64)
                total_weight = weights.sum()
                if float(total_weight) == 0.0:
                    raise ValueError("the weights sum to 0")
                quota = weights / total_weight * total_blocks
                mask = evictable
                best, best_over = None, 0.0
                for t in range(num_tenants):
                    over = float(usage[t] - quota[t])
                    if over > 0 and bool(has_evictable[t]) and (best is None or over >= best_over):
                        best, best_over = t, over
                if best is not None:
                    mask = evictable & (tenant == best)
            """,
            "4.3.3": """
                newest = last_access_step[mask].max()
                return int(torch.nonzero(mask & (last_access_step == newest))[0, 0])
            """}),
        "usage counted in sequences (bincount without weights)": ref.edit(
            TENSOR, ("device=weights.device).index_add_(0, tenant, num_blocks)",
                     "device=weights.device).index_add_(0, tenant, torch.ones_like(num_blocks))")),
        "bincount without minlength": ref.solve(TENSOR, todo={"4.3.1": """
            if not bool(evictable.any()):
                return -1
            usage = torch.bincount(tenant, weights=num_blocks.to(torch.float64))
            has_evictable = torch.bincount(tenant, weights=evictable.to(torch.float64)) > 0
        """}),
        "tenant ties to the larger index": ref.edit(
            TENSOR, ("victim_tenant = torch.nonzero(candidate & (overuse == largest))[0, 0]",
                     "victim_tenant = torch.nonzero(candidate & (overuse == largest))[-1, 0]")),
        "no global fallback (-1 when nobody is over quota)": ref.edit(
            TENSOR, ("    mask = evictable\n", "    mask = torch.zeros_like(evictable)\n")),
        "an over-quota tenant with nothing evictable is not passed over": ref.edit(
            TENSOR, ("candidate = (overuse > 0) & has_evictable", "candidate = overuse > 0")),
        "most recent inside the tenant": ref.edit(
            TENSOR, ("oldest = last_access_step[mask].min()", "oldest = last_access_step[mask].max()")),
        "usage in float32": ref.edit(
            TENSOR, ("overuse = usage.to(torch.float64) - quota",
                     "overuse = usage.to(torch.float32) - quota.to(torch.float32)")),
        "returns a tensor instead of an int": ref.edit(
            TENSOR, ("    return int(torch.nonzero(mask & (last_access_step == oldest))[0, 0])",
                     "    return torch.nonzero(mask & (last_access_step == oldest))[0, 0]")),
        "zeros when the weights sum to 0 (instead of ValueError)": ref.edit(
            TENSOR, ("    if float(total_weight) == 0.0:\n"
                     '        raise ValueError("the weights sum to 0: the quotas are undefined")\n'
                     "    quota = weights / total_weight * total_blocks\n",
                     "    quota = torch.where(total_weight > 0, weights / total_weight * total_blocks,\n"
                     "                        torch.zeros_like(weights))\n")),
        "checks the weights before nothing-to-evict (raises instead of -1)": ref.edit(
            TENSOR, ("    if not bool(evictable.any()):\n        return -1\n    usage", "    usage"),
            ("    oldest = last_access_step[mask].min()\n",
             "    if not bool(mask.any()):\n        return -1\n    oldest = last_access_step[mask].min()\n")),
        "usage by a Python loop over the sequences": ref.edit(
            TENSOR, ("    usage = torch.zeros(num_tenants, dtype=torch.int64, device=weights.device)"
                     ".index_add_(0, tenant, num_blocks)\n",
                     "    usage = torch.zeros(num_tenants, dtype=torch.int64, device=weights.device)\n"
                     "    for i in range(len(tenant)):\n        usage[tenant[i]] += num_blocks[i]\n")),
        "quotas in the weights' dtype (float32 rounds them)": ref.edit(
            TENSOR, ("    weights = weights.to(torch.float64)\n    total_weight = weights.sum()",
                     "    total_weight = weights.sum()"),
            ("    quota = weights / total_weight * total_blocks\n",
             "    quota = (weights / total_weight * total_blocks).to(torch.float64)\n")),
    },
}

ALTERNATIVES = {
    FAIR: {
        "the base solution with a helper method and split()": rewrite(
            FAIR,
            __init__="""
                weights = dict(tenant_weights or {})
                for tenant, weight in weights.items():
                    if not math.isfinite(weight) or weight < 0:
                        raise ValueError(f"bad weight for {tenant!r}")
                if total_blocks < 1:
                    raise ValueError("total_blocks must be >= 1")
                self.tenant_weights = weights
                self.total_blocks = total_blocks
            """,
            _tenant_of='return seq_id.split("::", 1)[0] if "::" in seq_id else "default"',
            _quotas="""
                weights = {self._tenant_of(s): 1.0 for s in sequences}
                weights.update(self.tenant_weights)
                total = sum(weights.values())
                if total == 0:
                    raise ValueError("all weights are 0")
                return {t: w / total * self.total_blocks for t, w in weights.items()}
            """,
            select_victim="""
                def usage_of(sequences):
                    usage = {}
                    for s, seq in sequences.items():
                        usage[self._tenant_of(s)] = usage.get(self._tenant_of(s), 0) + seq.num_blocks()
                    return usage

                free = [s for s in sequences if s not in protected]
                if not free:
                    return None
                quotas = self._quotas(sequences)
                usage = usage_of(sequences)
                over = {t: usage.get(t, 0) - q for t, q in quotas.items() if usage.get(t, 0) - q > 0}
                for tenant in sorted(over, key=lambda t: (-over[t], t)):
                    mine = [s for s in free if self._tenant_of(s) == tenant]
                    if mine:
                        return min(mine, key=lambda s: (sequences[s].last_access_step, s))
                return min(free, key=lambda s: (sequences[s].last_access_step, s))
            """),
        "a heap of candidate tenants and sorted() for LRU": rewrite(
            FAIR, before="import heapq\nfrom collections import defaultdict",
            __init__="""
                if not total_blocks >= 1:
                    raise ValueError("total_blocks must be at least 1")
                self.weights = {}
                for name, value in (tenant_weights or {}).items():
                    if math.isnan(value) or math.isinf(value) or value < 0:
                        raise ValueError(f"invalid weight {value} for tenant {name}")
                    self.weights[name] = value
                self.total = total_blocks
            """,
            _tenant_of="""
                index = seq_id.find("::")
                return "default" if index < 0 else seq_id[:index]
            """,
            _quotas="""
                tenants = set(self.weights) | {FairPolicy._tenant_of(s) for s in sequences}
                w = {t: self.weights.get(t, 1.0) for t in tenants}
                s = math.fsum(w.values())
                if not s > 0:
                    raise ValueError("the weights sum to 0")
                return {t: w[t] / s * self.total for t in tenants}
            """,
            select_victim="""
                if all(seq_id in protected for seq_id in sequences):
                    return None
                quota = self._quotas(sequences)
                usage = defaultdict(int)
                members = defaultdict(list)
                for seq_id in sequences:
                    t = self._tenant_of(seq_id)
                    usage[t] += sequences[seq_id].num_blocks()
                    if seq_id not in protected:
                        members[t].append(seq_id)
                heap = [(-(usage[t] - quota[t]), t) for t in quota if usage[t] - quota[t] > 0]
                heapq.heapify(heap)
                while heap:
                    _, t = heapq.heappop(heap)
                    if members[t]:
                        return sorted(members[t], key=lambda x: (sequences[x].last_access_step, x))[0]
                everyone = [x for ids in members.values() for x in ids]
                return sorted(everyone, key=lambda x: (sequences[x].last_access_step, x))[0]
            """),
        "one pass that ranks every sequence by a composite key": rewrite(
            FAIR,
            __init__="""
                self._w = dict(tenant_weights) if tenant_weights else {}
                if any(not (0 <= v < math.inf) for v in self._w.values()):
                    raise ValueError("weights must be finite and non-negative")
                if total_blocks < 1:
                    raise ValueError("total_blocks must be >= 1")
                self._b = total_blocks
            """,
            _tenant_of="""
                head, sep, _ = seq_id.partition("::")
                return head if sep == "::" else "default"
            """,
            _quotas="""
                w = dict(self._w)
                for s in sequences:
                    w.setdefault(self._tenant_of(s), 1.0)
                total = sum(w.values())
                if total == 0:
                    raise ValueError("quotas are undefined when the weights sum to 0")
                return {t: v / total * self._b for t, v in w.items()}
            """,
            select_victim="""
                if not self.candidates(sequences, protected):
                    return None
                quota = self._quotas(sequences)
                over = {t: -q for t, q in quota.items()}
                for s, seq in sequences.items():
                    over[self._tenant_of(s)] += seq.num_blocks()
                rows = []
                for s, seq in sequences.items():
                    if s in protected:
                        continue
                    t = self._tenant_of(s)
                    # Over-quota tenants first, the largest overuse first, the smaller name first.
                    rank = (0, -over[t], t) if over[t] > 0 else (1, 0, "")
                    rows.append((rank, seq.last_access_step, s))
                return min(rows)[2]
            """),
        "exact quotas with fractions, tenants tried by a stable sort": ref.solve(
            FAIR, before="from fractions import Fraction", todo={
                "4.1.3": """
                    weights = {t: 1.0 for t in map(self._tenant_of, sequences)}
                    weights.update(self.tenant_weights)
                    total = sum(Fraction(w) for w in weights.values())
                    if total == 0:
                        raise ValueError("no tenant has a positive weight")
                    return {t: float(Fraction(w) / total * self.total_blocks) for t, w in weights.items()}
                """,
                "4.1.5": """
                    overuse = {tenant: usage[tenant] - quotas[tenant] for tenant in quotas}
                    by_name = sorted(t for t in quotas if overuse[t] > 0 and evictable[t])
                    for tenant in sorted(by_name, key=lambda t: overuse[t], reverse=True):
                        return lru(evictable[tenant])
                """}),
    },
    JAIN: {
        "mean squared over mean of squares": rewrite(JAIN, jain_index="""
            n = len(xs)
            if n == 0 or not any(xs):
                return 1.0
            mean = sum(xs) / n
            mean_square = sum(x ** 2 for x in xs) / n
            return float(mean * mean / mean_square)
        """),
        "math.fsum and a generator": rewrite(JAIN, before="import math", jain_index="""
            total = math.fsum(xs)
            squares = math.fsum(x * x for x in xs)
            return 1.0 if squares == 0 else total * total / (len(xs) * squares)
        """),
        "torch in float64": rewrite(JAIN, jain_index="""
            x = torch.tensor([float(v) for v in xs], dtype=torch.float64)
            squares = float((x * x).sum())
            if squares == 0.0:
                return 1.0
            return float(x.sum()) ** 2 / (x.numel() * squares)
        """),
    },
    TENSOR: {
        "bincount and torch.nonzero": rewrite(TENSOR, fair_victim_t="""
            T = weights.shape[0]
            if not bool(evictable.any()):
                return -1
            usage = torch.bincount(tenant, weights=num_blocks.double(), minlength=T)
            has_free = torch.bincount(tenant[evictable], minlength=T) > 0
            w = weights.double()
            if float(w.sum()) <= 0:
                raise ValueError("weights sum to 0")
            over = usage - w / w.sum() * total_blocks
            candidate = (over > 0) & has_free
            mask = evictable
            if bool(candidate.any()):
                best = over[candidate].max()
                victim_tenant = torch.nonzero(candidate & (over == best)).min()
                mask = evictable & (tenant == victim_tenant)
            oldest = last_access_step[mask].min()
            return int(torch.nonzero(mask & (last_access_step == oldest)).min())
        """),
        "lexicographic sort by stable torch.sort": rewrite(TENSOR, fair_victim_t="""
            T = weights.numel()
            dev = weights.device
            if not bool(evictable.any()):
                return -1
            usage = torch.zeros(T, dtype=torch.float64, device=dev).index_add(0, tenant, num_blocks.to(torch.float64))
            free_count = torch.zeros(T, dtype=torch.int64, device=dev).index_add(0, tenant, evictable.long())
            w = weights.to(torch.float64)
            total_w = w.sum()
            if bool(total_w == 0):
                raise ValueError("the weights sum to 0")
            over = usage - w / total_w * total_blocks
            ok = (over > 0) & (free_count > 0)
            if bool(ok.any()):
                # Order tenants: eligible first, then largest overuse, then the smaller index
                # (stable sorts, last key first).
                order = torch.arange(T, device=dev)
                order = order[torch.sort(-over[order], stable=True).indices]
                order = order[torch.sort((~ok[order]).long(), stable=True).indices]
                mask = evictable & (tenant == order[0])
            else:
                mask = evictable
            idx = torch.nonzero(mask).flatten()
            steps = last_access_step[idx]
            return int(idx[torch.sort(steps, stable=True).indices[0]])
        """),
        "scatter_add_ and argmax (the first maximum)": ref.solve(TENSOR, todo={
            "4.3.1": """
                if not evictable.any():
                    return -1
                usage = torch.zeros(num_tenants, dtype=torch.float64, device=tenant.device).scatter_add_(
                    0, tenant, num_blocks.to(torch.float64))
                has_evictable = torch.zeros(num_tenants, dtype=torch.bool, device=tenant.device).index_fill_(
                    0, tenant[evictable], True)
            """,
            "4.3.2": """
                w = weights.double()
                if w.sum().item() == 0:
                    raise ValueError("every weight is 0")
                overuse = usage - w * total_blocks / w.sum()
                candidate = (overuse > 0) & has_evictable
                mask = evictable
                if candidate.any():
                    victim_tenant = torch.argmax(torch.where(candidate, overuse, torch.full_like(overuse, -torch.inf)))
                    mask = evictable & (tenant == victim_tenant)
            """}),
    },
}

# Round 6 (2026-12-06): an exception class with two of Python's exception classes as bases crossed between the judge
# and the kernel as the first one only (fixed in grading/judge/peer.py).
ALTERNATIVES[FAIR]["an error class of its own that is both a TypeError and a ValueError"] = (
    "class BadWeights(TypeError, ValueError):\n    pass\n\n\n" + ref.edit(FAIR, *(
        (f"raise ValueError({message}", f"raise BadWeights({message}") for message in (
            'f"weight of tenant', 'f"total_blocks must be >= 1', '"the weights of the tenants sum to 0'))))


# Round 7 (2026-12-06): correct answers that lost points through the judge until grading/judge/ was fixed
# (a717772, c2e806a and the commit after it); each is graded the same both ways now.
ALTERNATIVES[TENSOR]["usage accumulated in a scratch buffer kept on the function, grown with resize_"] = ref.solve(
    TENSOR, todo={"4.3.1": '''    if not bool(evictable.any()):
        return -1
    scratch = fair_victim_t.scratch.setdefault(
        str(weights.device), torch.empty(0, dtype=torch.int64, device=weights.device))
    usage = scratch.resize_(num_tenants).zero_().index_add_(0, tenant, num_blocks).clone()
    has_evictable = torch.zeros(num_tenants, dtype=torch.int64, device=weights.device).index_add_(
        0, tenant, evictable.to(torch.int64)) > 0'''}) + "\n\n\nfair_victim_t.scratch = {}\n"
ALTERNATIVES[FAIR]["the weights also kept as a NumPy record array, and the creation time"] = ref.edit(FAIR, (
    "        self.total_blocks = total_blocks\n",
    "        self.total_blocks = total_blocks\n        import numpy as np\n"
    "        self.table = np.array(sorted(weights.items()), dtype=[('tenant', 'U32'), ('weight', 'f8')])\n"
    "        self.created = np.datetime64('2026-01-01')\n"))


# Round 9 (2026-12-06): wrong answers that passed every test cell of their task, found by a search for typical
# mistakes and by a red team; the tests catch each one now, and a loop over `.tolist()` counts as a loop
# (course.checks).
WRONG[FAIR]['overuse > 1e-9 (float tolerance)'] = ref.edit(
    FAIR,
    (('        overuse = {tenant: usage[tenant] - quotas[tenant] for tenant in quotas}\n'
      '        over = [tenant for tenant in quotas if overuse[tenant] > 0]\n'
      '        for tenant in sorted(over, key=lambda t: (-overuse[t], t)):\n'),
     ('        overuse = {tenant: usage[tenant] - quotas[tenant] for tenant in quotas}\n'
      '        over = [tenant for tenant in quotas if overuse[tenant] > 1e-9]\n'
      '        for tenant in sorted(over, key=lambda t: (-overuse[t], t)):\n')))
WRONG[FAIR]['total_blocks checked with <= 0 (0.5 passes)'] = ref.edit(
    FAIR,
    (('                raise ValueError(f"weight of tenant {tenant!r} must be finite and >= 0, '
      'got {weight}")\n        if total_blocks < 1:\n'
      '            raise ValueError(f"total_blocks must be >= 1, got {total_blocks}")\n'),
     ('                raise ValueError(f"weight of tenant {tenant!r} must be finite and >= 0, '
      'got {weight}")\n        if total_blocks <= 0:\n'
      '            raise ValueError(f"total_blocks must be >= 1, got {total_blocks}")\n')))
WRONG[JAIN]['numpy int64 squares (overflow for large ints)'] = ref.edit(
    JAIN,
    ('def jain_index(xs):\n',
     'import numpy as np\n\n\ndef jain_index(xs):\n'),
    (('    #       [] is 0 too.\n    values = [float(x) for x in xs]\n'
      '    square_sum = sum(x * x for x in values)\n    if square_sum == 0:\n'),
     ('    #       [] is 0 too.\n    values = np.array(xs)\n'
      '    square_sum = (values * values).sum()\n    if square_sum == 0:\n')),
    (('    # Hint: n is len(values); do not forget the n in the denominator.\n'
      '    return sum(values) ** 2 / (len(values) * square_sum)'),
     ('    # Hint: n is len(values); do not forget the n in the denominator.\n'
      '    return float(values.sum() ** 2 / (len(values) * square_sum))')))
WRONG[TENSOR]['LRU pick by argmin of where(mask, steps, int64 max) (a masked entry can win at the max)'] = ref.edit(
    TENSOR,
    (('    #       in the mask and has that step.\n    oldest = last_access_step[mask].min()\n'
      '    return int(torch.nonzero(mask & (last_access_step == oldest))[0, 0])'),
     ('    #       in the mask and has that step.\n'
      '    return int(torch.argmin(torch.where(mask, last_access_step, '
      'torch.iinfo(torch.int64).max)))')))
WRONG[TENSOR]['overuse >= 0 after rounding overuse to float32'] = ref.edit(
    TENSOR,
    (('    quota = weights / total_weight * total_blocks\n'
      '    overuse = usage.to(torch.float64) - quota\n    candidate = (overuse > 0) & has_evictable\n'),
     ('    quota = weights / total_weight * total_blocks\n'
      '    overuse = (usage.to(torch.float64) - quota).float()\n'
      '    candidate = (overuse > 0) & has_evictable\n')))
WRONG[TENSOR]['python loop over tolist() for the LRU pick'] = ref.edit(
    TENSOR,
    (('    #       in the mask and has that step.\n    oldest = last_access_step[mask].min()\n'
      '    return int(torch.nonzero(mask & (last_access_step == oldest))[0, 0])'),
     ('    #       in the mask and has that step.\n'
      '    steps, flags = last_access_step.tolist(), mask.tolist()\n'
      '    return min((i for i, f in enumerate(flags) if f), key=lambda i: (steps[i], i))')))
WRONG[TENSOR]['quota from float32 then float64'] = ref.edit(
    TENSOR,
    (('        raise ValueError("the weights sum to 0: the quotas are undefined")\n'
      '    quota = weights / total_weight * total_blocks\n'
      '    overuse = usage.to(torch.float64) - quota\n'),
     ('        raise ValueError("the weights sum to 0: the quotas are undefined")\n'
      '    quota = (weights / total_weight).float().double() * total_blocks\n'
      '    overuse = usage.to(torch.float64) - quota\n')))
WRONG[TENSOR]['usage per tenant by a python dict over tolist()'] = ref.edit(
    TENSOR,
    (('        return -1\n'
      '    usage = torch.zeros(num_tenants, dtype=torch.int64, '
      'device=weights.device).index_add_(0, tenant, num_blocks)\n'
      '    has_evictable = torch.zeros(num_tenants, dtype=torch.int64, '
      'device=weights.device).index_add_(\n'),
     ('        return -1\n    counts = [0] * num_tenants\n'
      '    for t, b in zip(tenant.tolist(), num_blocks.tolist()):\n        counts[t] += b\n'
      '    usage = torch.tensor(counts, dtype=torch.int64, device=weights.device)\n'
      '    has_evictable = torch.zeros(num_tenants, dtype=torch.int64, '
      'device=weights.device).index_add_(\n')))
WRONG[TENSOR]['weights sum compared with a tolerance (1e-12 counts as 0)'] = ref.edit(
    TENSOR,
    (('    total_weight = weights.sum()\n    if float(total_weight) == 0.0:\n'
      '        raise ValueError("the weights sum to 0: the quotas are undefined")\n'),
     ('    total_weight = weights.sum()\n    if float(total_weight) < 1e-12:\n'
      '        raise ValueError("the weights sum to 0: the quotas are undefined")\n')))
WRONG[TENSOR]['weights summed in their own dtype (float16 overflows, float32 rounds)'] = ref.edit(
    TENSOR,
    (('    #       (torch.where) and take the maximum; the first row of torch.nonzero is the '
      'smallest tenant index that reaches it.\n    weights = weights.to(torch.float64)\n'),
     ('    #       (torch.where) and take the maximum; the first row of torch.nonzero is the '
      'smallest tenant index that reaches it.\n    total_weight = weights.sum().to(torch.float64)\n'
      '    weights = weights.to(torch.float64)\n')),
    (('    weights = weights.to(torch.float64)\n    total_weight = weights.sum()\n'
      '    if float(total_weight) == 0.0:\n'),
     '    weights = weights.to(torch.float64)\n    if float(total_weight) == 0.0:\n'))
WRONG[JAIN]['always inf'] = ref.edit(
    JAIN,
    (('def jain_index(xs):\n'
      '    """Return Jain\'s fairness index (sum x)^2 / (n * sum x^2) of a list of numbers, as a '
      'float.\n\n    Args:\n        xs: list of non-negative ints or floats. Not changed.\n\n'
      '    Returns:\n        A float in [1/n, 1]; 1.0 for an empty list or a list of zeros.\n'
      '    """\n'
      '    # TODO 4.2.1: the values as floats and the sum of their squares; return 1.0 when that '
      'sum is 0.\n'
      '    # 提示：列表推导式可以把每个值转成 float，得到一个新列表（xs '
      '保持不变）；空列表的平方和也是 0。\n'
      '    # Hint: a list comprehension can turn every value into a float, in a new list (xs '
      'stays as it is); the sum of squares of\n    #       [] is 0 too.\n'
      '    values = [float(x) for x in xs]\n    square_sum = sum(x * x for x in values)\n'
      '    if square_sum == 0:\n        return 1.0\n'
      '    # TODO 4.2.2: return (sum x)^2 / (n * sum x^2).\n'
      '    # 提示：n 是 len(values)；别忘了分母里的 n。\n'
      '    # Hint: n is len(values); do not forget the n in the denominator.\n'
      '    return sum(values) ** 2 / (len(values) * square_sum)'),
     "def jain_index(xs):\n    return float('inf')\n"))
WRONG[TENSOR]['python loops over .tolist()'] = ref.edit(
    TENSOR,
    ('def fair_victim_t(tenant, num_blocks, last_access_step, weights, total_blocks, evictable):\n',
     '\ndef fair_victim_t(tenant, num_blocks, last_access_step, weights, total_blocks, evictable):\n'),
    (('def fair_victim_t(tenant, num_blocks, last_access_step, weights, total_blocks, evictable):\n'
      '    """Return the index of the fair-quota victim (as FairPolicy.select_victim), or -1.\n\n'
      '    Args:\n'
      '        tenant: int64 tensor [n], the tenant index (into ``weights``) of each sequence.\n'
      '        num_blocks: int64 tensor [n], blocks held by each sequence.\n'
      "        last_access_step: int64 tensor [n], logical time of each sequence's last access.\n"
      '        weights: real tensor [T] (any dtype, finite, >= 0), one weight per tenant in '
      'sorted-name order.\n        total_blocks: int, the cache size in blocks.\n'
      '        evictable: bool tensor [n]; False marks a protected sequence.\n'
      '        All tensors are on the same device; sequences are in sorted-id order. None is '
      'changed.\n\n    Returns:\n'
      "        A Python int: the victim's index, or -1 when no sequence is evictable. Ties "
      'between tenants\n'
      '        go to the smaller tenant index, ties inside a tenant to the smaller sequence index.\n'
      '\n    Raises:\n        ValueError: when some sequence is evictable and the weights sum to 0.\n'
      '    """\n    num_tenants = weights.shape[0]\n'
      '    # TODO 4.3.1: return -1 when nothing is evictable; then usage[T] (blocks per tenant, '
      'exact) and\n    #             has_evictable[T] (bool: the tenant has an evictable sequence).\n'
      '    # 提示：torch.zeros(T, dtype=torch.int64, device=...).index_add_(0, tenant, '
      'num_blocks)；或 bincount 加上 minlength=T。\n'
      '    # Hint: torch.zeros(T, dtype=torch.int64, device=...).index_add_(0, tenant, '
      'num_blocks); or bincount with minlength=T.\n    if not bool(evictable.any()):\n'
      '        return -1\n'),
     ('def fair_victim_t(tenant, num_blocks, last_access_step, weights, total_blocks, evictable):\n'
      '    tenant, blocks, steps = tenant.tolist(), num_blocks.tolist(), last_access_step.tolist()\n'
      '    free = [i for i, e in enumerate(evictable.tolist()) if e]\n    if not free:\n'
      '        return -1\n')),
    (('        return -1\n'
      '    usage = torch.zeros(num_tenants, dtype=torch.int64, '
      'device=weights.device).index_add_(0, tenant, num_blocks)\n'
      '    has_evictable = torch.zeros(num_tenants, dtype=torch.int64, '
      'device=weights.device).index_add_(\n        0, tenant, evictable.to(torch.int64)) > 0\n'
      '    # TODO 4.3.2: quotas in float64 (ValueError when the weights sum to 0) and overuse; '
      'then mask = the evictable\n'
      '    #             sequences of the victim tenant, or every evictable sequence when no '
      'tenant qualifies.\n'
      '    # 提示：候选租户是超额量 > 0 且有可驱逐序列的租户；把非候选的超额量换成 '
      '-inf（torch.where）后取最大值；torch.nonzero 的第一行\n'
      '    #       是取到最大值的租户中索引最小的那个。\n'
      '    # Hint: a candidate tenant has overuse > 0 and an evictable sequence; replace the '
      "others' overuse with -inf\n"
      '    #       (torch.where) and take the maximum; the first row of torch.nonzero is the '
      'smallest tenant index that reaches it.\n    weights = weights.to(torch.float64)\n'
      '    total_weight = weights.sum()\n    if float(total_weight) == 0.0:\n'
      '        raise ValueError("the weights sum to 0: the quotas are undefined")\n'
      '    quota = weights / total_weight * total_blocks\n'
      '    overuse = usage.to(torch.float64) - quota\n    candidate = (overuse > 0) & has_evictable\n'
      '    mask = evictable\n    if bool(candidate.any()):\n'
      '        largest = torch.where(candidate, overuse, torch.full_like(overuse, '
      'float("-inf"))).max()\n'
      '        victim_tenant = torch.nonzero(candidate & (overuse == largest))[0, 0]\n'
      '        mask = evictable & (tenant == victim_tenant)\n'
      "    # TODO 4.3.3: return the index of mask's LRU sequence (smallest last_access_step, "
      'then smaller index) as an int.\n'
      '    # 提示：先在掩码选中的序列里求最小的最近访问时刻，再用 torch.nonzero '
      '找出第一个同时在掩码中、且时刻等于它的索引。\n'
      '    # Hint: take the smallest last_access_step among the masked sequences, then '
      'torch.nonzero finds the first index that is\n    #       in the mask and has that step.\n'
      '    oldest = last_access_step[mask].min()\n'
      '    return int(torch.nonzero(mask & (last_access_step == oldest))[0, 0])'),
     ('        return -1\n    w = [float(x) for x in weights.tolist()]\n    if sum(w) == 0:\n'
      '        raise ValueError("the weights sum to 0")\n    usage = [0] * len(w)\n'
      '    for owner, count in zip(tenant, blocks):\n        usage[owner] += count\n'
      '    over = [usage[k] - w[k] / sum(w) * total_blocks for k in range(len(w))]\n'
      '    for k in sorted(range(len(w)), key=lambda k: (-over[k], k)):\n'
      '        mine = [i for i in free if tenant[i] == k]\n        if over[k] > 0 and mine:\n'
      '            return min(mine, key=lambda i: (steps[i], i))\n'
      '    return min(free, key=lambda i: (steps[i], i))\n')))

# Round 6 (2026-12-06, a red-team answer): the hidden oracles of 4.1.5 and 4.1.6 read the blocks and steps of the
# sequences that make_sequence returned, and the answer cell may rebind make_sequence (a given helper): this one
# makes the hidden cases' sequences empty (only the hidden replays pass use_count), so nobody was over quota there
# and a ranking by usage/quota passed. The oracles now read the test's own arguments.
WRONG[FAIR]["ranked by usage/quota, and make_sequence rebound to make the hidden cases' sequences empty"] = ref.edit(
    FAIR, ("        overuse = {tenant: usage[tenant] - quotas[tenant] for tenant in quotas}\n",
           "        overuse = {tenant: usage[tenant] - quotas[tenant] for tenant in quotas}\n"
           "        ratio = {t: (usage[t] / quotas[t] if quotas[t] else float('inf')) for t in quotas}\n"),
    ("for tenant in sorted(over, key=lambda t: (-overuse[t], t)):",
     "for tenant in sorted(over, key=lambda t: (-ratio[t], t)):")) + '''

_given_make_sequence = make_sequence


def make_sequence(seq_id, num_blocks, last_access_step, use_count=None, block_size=16):
    if use_count is not None:  # Only the hidden random cases pass it.
        num_blocks = 0
    return _given_make_sequence(seq_id, num_blocks, last_access_step, 1 if use_count is None else use_count, block_size)
'''
HIDDEN_ONLY = {FAIR: {
    "ranked by usage/quota, and make_sequence rebound to make the hidden cases' sequences empty":
        "usage/quota and usage - quota rank the visible cases alike; it is a red-team answer against the hidden "
        "oracle, not a mistake a student makes",
}}

# Round 7 (2026-12-06 evening, a red-team answer): no test kept two results of _quotas, so one dict refilled at each
# call passed ("a new dict" each time); the visible part now keeps two.
WRONG[FAIR]["_quotas hands out one dict, cleared and refilled at each call"] = ref.edit(FAIR, (
    "        return {tenant: weight / total_weight * self.total_blocks for tenant, weight in weights.items()}\n",
    "        if not hasattr(self, '_shared_quotas'):\n            self._shared_quotas = {}\n"
    "        shared = self._shared_quotas\n        shared.clear()\n"
    "        shared.update({tenant: weight / total_weight * self.total_blocks for tenant, weight in weights.items()})\n"
    "        return shared\n"))
# It rebinds the given make_sequence, which the scan flags (tests/test_grading_scan.py checks that it does).
FLAGGED = {FAIR: ("ranked by usage/quota, and make_sequence rebound to make the hidden cases' sequences empty",)}
# Every sequence of the tests came from make_sequence with blocks of 16 tokens, so usage counted as num_tokens // 16
# passed 4.1.4 to 4.1.6 (red team, 2026-12-06 evening); 4.1.4 now shows blocks of 4 and 8 tokens.
WRONG[FAIR]["usage counted as num_tokens // 16"] = ref.edit(FAIR, (
    "            usage[tenant] += seq.num_blocks()", "            usage[tenant] += seq.num_tokens // 16"))
# Round 8 (2026-12-07, red team): 4.3's only large steps were all equal (2**63 - 1), so an LRU pick through float64
# passed; 4.3.3 now shows distinct steps near 2**62 that float64 rounds together, and its hidden cases add large bases.
WRONG[TENSOR]["LRU by argmin over the steps cast to float64, masked with +inf"] = ref.edit(TENSOR, (
    "    oldest = last_access_step[mask].min()\n"
    "    return int(torch.nonzero(mask & (last_access_step == oldest))[0, 0])",
    "    return int(torch.where(mask, last_access_step.to(torch.float64), float('inf')).argmin())"))
# Round 9 (2026-12-07, typical mistakes that passed): the caller's weights, or the caller's list, turned into floats in
# place (3 == 3.0, so comparing with a copy by == saw nothing; 2**53 + 1 even changes value). 4.1.1 and 4.2 now compare
# the types and values of int weights and of a list of ints after the call, also after a ValueError.
WRONG["task4_1_FairPolicy"]["the caller's weights turned into floats in place, then copied"] = ref.edit(
    "task4_1_FairPolicy", (
        "        weights = dict(tenant_weights or {})\n        for tenant, weight in weights.items():\n",
        "        source = tenant_weights if tenant_weights is not None else {}\n"
        "        for tenant in source:\n            source[tenant] = float(source[tenant])\n"
        "        weights = dict(source)\n        for tenant, weight in weights.items():\n"))
WRONG["task4_2_jain_index"]["the caller's list turned into floats in place"] = ref.edit("task4_2_jain_index", (
    "    values = [float(x) for x in xs]\n", "    xs[:] = [float(x) for x in xs]\n    values = xs\n"))

# Round 12 (2026-12-07), found by a red-team helper: float tolerances where the texts have exact rules (a sum of
# weights below 1e-9 refused as 0, a weight above -1e-12 taken as not negative, overuses rounded to 6 decimals before
# the tie, over quota meaning more than 1e-9 over, 1.0 for squares that sum below 1e-12), and "nothing to evict"
# decided by counting or comparing protected with the cache, which ignores ids in protected that are not cached.
WRONG[FAIR]["weights summing below 1e-9 refused as a sum of 0"] = ref.edit(FAIR, (
    "        if total_weight == 0:\n", "        if total_weight < 1e-9:\n"))
WRONG[FAIR]["tenants ranked on overuses rounded to 6 decimals"] = ref.edit(FAIR, (
    "key=lambda t: (-overuse[t], t)", "key=lambda t: (-round(overuse[t], 6), t)"))
WRONG[FAIR]["None when protected holds as many ids as the cache"] = ref.edit(FAIR, (
    "        if not self.candidates(sequences, protected):\n", "        if len(sequences) <= len(protected):\n"))
WRONG[FAIR]["None only when protected equals the cached ids"] = ref.edit(FAIR, (
    "        if not self.candidates(sequences, protected):\n",
    "        if not sequences or set(protected) == set(sequences):\n"))
WRONG[FAIR]["a weight above -1e-12 taken as not negative"] = ref.edit(FAIR, (
    "if not math.isfinite(weight) or weight < 0:", "if not math.isfinite(weight) or weight < -1e-12:"))
WRONG[JAIN]["1.0 when the squares sum below 1e-12"] = ref.edit(JAIN, (
    "    if square_sum == 0:\n", "    if square_sum < 1e-12:\n"))
WRONG[TENSOR]["overuses rounded to 6 decimals before the tie"] = ref.edit(TENSOR, (
    "    overuse = usage.to(torch.float64) - quota\n",
    "    overuse = torch.round(usage.to(torch.float64) - quota, decimals=6)\n"))
WRONG[TENSOR]["over quota meaning more than 1e-9 over"] = ref.edit(TENSOR, (
    "    candidate = (overuse > 0) & has_evictable\n", "    candidate = (overuse > 1e-9) & has_evictable\n"))

# Round 15 (2026-12-07), found by a red-team helper: 4.3's LRU as the argmax of the negated steps, which -(-2**63)
# turns back into -2**63 (the text: steps may be any int64).
WRONG[TENSOR]["LRU by the argmax of where(mask, -steps, int64 min) (-(-2**63) overflows)"] = ref.edit(TENSOR, (
    "    oldest = last_access_step[mask].min()\n"
    "    return int(torch.nonzero(mask & (last_access_step == oldest))[0, 0])",
    "    recency = torch.where(mask, -last_access_step,\n"
    "                          torch.full_like(last_access_step, torch.iinfo(torch.int64).min))\n"
    "    return int(torch.argmax(recency))"))

# Round 15 (2026-12-07), found by a red-team helper: 4.1.5's tenant ties found with math.isclose (overuses 5e-11
# apart taken for a tie), and the tie broken over every over-quota tenant, a fully protected one too (the text: the
# largest overuse first, ties to the smaller name; pass over a tenant whose sequences are all protected).
_FAIR_LOOP = ("        for tenant in sorted(over, key=lambda t: (-overuse[t], t)):\n"
              "            if evictable[tenant]:\n"
              "                return lru(evictable[tenant])\n")
WRONG[FAIR]["tenant ties found with math.isclose"] = ref.edit(FAIR, (
    _FAIR_LOOP,
    "        able = [t for t in over if evictable[t]]\n        if able:\n"
    "            best = max(overuse[t] for t in able)\n"
    "            tenant = min(t for t in able if math.isclose(overuse[t], best))\n"
    "            return lru(evictable[tenant])\n"))
WRONG[FAIR]["the tie broken over every over-quota tenant, a fully protected one too"] = ref.edit(FAIR, (
    _FAIR_LOOP,
    "        able = [t for t in over if evictable[t]]\n        if able:\n"
    "            best = max(overuse[t] for t in able)\n"
    "            tenant = min(t for t in over if overuse[t] == best)\n"
    "            return lru(evictable[tenant])\n"))
# Round 16 (2026-12-07, a helper): a threshold or a rounding finer than the visible cases' (1e-10 over, overuses 5e-11
# apart) still passed: "over" as more than 1e-11 over, overuses rounded to 12 decimals. The visible cases now go to
# about 1e-15 over and overuses 9e-15 apart (weights [1, 1 - 1e-15, 2]), which every float64 order of the formula keeps.
WRONG[FAIR]["over quota meaning more than 1e-11 over"] = ref.edit(FAIR, (
    "over = [tenant for tenant in quotas if overuse[tenant] > 0]",
    "over = [tenant for tenant in quotas if overuse[tenant] > 1e-11]"))
WRONG[FAIR]["tenants ranked on overuses rounded to 12 decimals"] = ref.edit(FAIR, (
    "key=lambda t: (-overuse[t], t)", "key=lambda t: (-round(overuse[t], 12), t)"))
WRONG[TENSOR]["over quota meaning more than 1e-11 over"] = ref.edit(TENSOR, (
    "    candidate = (overuse > 0) & has_evictable\n", "    candidate = (overuse > 1e-11) & has_evictable\n"))
WRONG[TENSOR]["overuses rounded to 12 decimals before the tie"] = ref.edit(TENSOR, (
    "    overuse = usage.to(torch.float64) - quota\n",
    "    overuse = torch.round(usage.to(torch.float64) - quota, decimals=12)\n"))

# Round 18 (2026-12-07): -0.0 refused as a negative weight by FairPolicy (its sign bit), which no test of 4.1.1 gave
# (-0.0 < 0 is False: a weight of 0, allowed), now in the visible part; and 4.3's weights summed in int64 when they
# are integers ("an int64 sum is exact"), which overflows for [2**62] * 3 (every weights tensor of the tests was
# floating, and the float16 case only catches a sum in the weights' own floating dtype), now in the hidden part.
WRONG[FAIR]["math.copysign as the negative check (-0.0 refused)"] = ref.edit(FAIR, (
    "if not math.isfinite(weight) or weight < 0:", "if not math.isfinite(weight) or math.copysign(1.0, weight) < 0:"))
WRONG[TENSOR]["integer weights summed in int64 (the sum of [2**62] * 3 overflows)"] = ref.edit(TENSOR, (
    "    weights = weights.to(torch.float64)\n    total_weight = weights.sum()\n",
    "    # An int64 sum is exact: only floating weights need float64 (float16 overflows).\n"
    "    total_weight = (weights.to(torch.float64) if weights.is_floating_point() else weights)"
    ".sum().to(torch.float64)\n"
    "    weights = weights.to(torch.float64)\n"))
HIDDEN_ONLY.setdefault(TENSOR, {})["integer weights summed in int64 (the sum of [2**62] * 3 overflows)"] = (
    "every visible weights tensor is floating; the int64 overflow needs weights of 2**62, a hidden case")
