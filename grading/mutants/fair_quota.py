"""Wrong and alternative answers for notebook 04 (see grading/mutants/__init__.py)."""

# A correct FairPolicy that the wrong answers below change in one place each.
_FAIR = '''
import math


class FairPolicy(EvictionPolicy):
    def __init__(self, tenant_weights=None, total_blocks=512):
        weights = dict(tenant_weights or {})
        for tenant, weight in weights.items():
            if not math.isfinite(weight) or weight < 0:
                raise ValueError(f"bad weight for {tenant!r}")
        if total_blocks < 1:
            raise ValueError("total_blocks must be >= 1")
        self.tenant_weights = weights
        self.total_blocks = total_blocks

    @staticmethod
    def _tenant_of(seq_id):
        return seq_id.split("::", 1)[0] if "::" in seq_id else "default"

    def _quotas(self, sequences):
        weights = {self._tenant_of(s): 1.0 for s in sequences}
        weights.update(self.tenant_weights)
        total = sum(weights.values())
        if total == 0:
            return {t: 0.0 for t in weights}
        return {t: w / total * self.total_blocks for t, w in weights.items()}

    def _usage(self, sequences):
        usage = {}
        for s, seq in sequences.items():
            usage[self._tenant_of(s)] = usage.get(self._tenant_of(s), 0) + seq.num_blocks()
        return usage

    def select_victim(self, sequences, protected=frozenset()):
        quotas = self._quotas(sequences)
        usage = self._usage(sequences)
        over = {t: usage.get(t, 0) - q for t, q in quotas.items() if usage.get(t, 0) - q > 0}
        free = [s for s in sequences if s not in protected]
        for tenant in sorted(over, key=lambda t: (over[t], t), reverse=True):
            mine = [s for s in free if self._tenant_of(s) == tenant]
            if mine:
                return min(mine, key=lambda s: (sequences[s].last_access_step, s))
        if not free:
            return None
        return min(free, key=lambda s: (sequences[s].last_access_step, s))
'''


def _fair(old, new, count=1):
    assert _FAIR.count(old) == count, old
    return _FAIR.replace(old, new)


_TENSOR = '''
def fair_victim_t(tenant, num_blocks, last_access_step, weights, total_blocks, evictable):
    T = weights.shape[0]
    usage = torch.bincount(tenant, weights=num_blocks.double(), minlength=T)
    has_free = torch.bincount(tenant[evictable], minlength=T) > 0
    w = weights.double()
    quota = w / w.sum() * total_blocks if float(w.sum()) > 0 else torch.zeros_like(w)
    over = usage - quota
    candidate = (over > 0) & has_free
    mask = evictable
    if bool(candidate.any()):
        best = over[candidate].max()
        victim_tenant = torch.nonzero(candidate & (over == best)).max()
        mask = evictable & (tenant == victim_tenant)
    if not bool(mask.any()):
        return -1
    oldest = last_access_step[mask].min()
    return int(torch.nonzero(mask & (last_access_step == oldest)).min())
'''


def _tensor(old, new):
    assert _TENSOR.count(old) == 1, old
    return _TENSOR.replace(old, new)


WRONG = {
    "task4_1_FairPolicy": {
        "usage counted in sequences instead of blocks": _fair(
            "usage.get(self._tenant_of(s), 0) + seq.num_blocks()", "usage.get(self._tenant_of(s), 0) + 1"),
        "quotas from present tenants only": _fair(
            "        weights.update(self.tenant_weights)\n",
            "        weights.update({t: w for t, w in self.tenant_weights.items() if t in weights})\n"),
        "ties to the smaller tenant name": _fair(
            "sorted(over, key=lambda t: (over[t], t), reverse=True)", "sorted(over, key=lambda t: (-over[t], t))"),
        "most recent instead of least recent inside the tenant": _fair(
            "return min(mine, key=lambda s: (sequences[s].last_access_step, s))",
            "return max(mine, key=lambda s: (sequences[s].last_access_step, s))"),
        "no global fallback (None when nobody is over quota)": _fair(
            "        if not free:\n            return None\n        return min(free, key=lambda s: (sequences[s].last_access_step, s))\n",
            "        return None\n"),
        "protected sequences chosen": _fair(
            "free = [s for s in sequences if s not in protected]", "free = list(sequences)"),
        "an over-quota tenant with nothing evictable stops the search (global LRU at once)": _fair(
            "            if mine:\n                return min(mine, key=lambda s: (sequences[s].last_access_step, s))\n",
            "            if mine:\n                return min(mine, key=lambda s: (sequences[s].last_access_step, s))\n"
            "            break\n"),
        "protected sequences left out of the usage": _fair(
            "        for s, seq in sequences.items():\n            usage",
            "        for s, seq in sequences.items():\n            if s in getattr(self, '_protected', ()):\n"
            "                continue\n            usage").replace(
            "        quotas = self._quotas(sequences)\n",
            "        self._protected = protected\n        quotas = self._quotas(sequences)\n"),
        "_tenant_of splits at the last '::'": _fair(
            'seq_id.split("::", 1)[0]', 'seq_id.rsplit("::", 1)[0]'),
        "a missing weight counts as 0": _fair(
            "weights = {self._tenant_of(s): 1.0 for s in sequences}", "weights = {self._tenant_of(s): 0.0 for s in sequences}"),
        "exactly at quota counts as over quota": _fair(
            "if usage.get(t, 0) - q > 0}", "if usage.get(t, 0) - q >= 0}"),
        "no check of the weights": _fair(
            "            if not math.isfinite(weight) or weight < 0:\n", "            if False:\n"),
        "divides by zero when all weights are 0": _fair(
            "        if total == 0:\n            return {t: 0.0 for t in weights}\n", ""),
        "_tenant_of is not a static method": _fair(
            "    @staticmethod\n    def _tenant_of(seq_id):", "    def _tenant_of(self, seq_id):"),
        "quota from the largest weight instead of the sum": _fair(
            "total = sum(weights.values())", "total = max(weights.values(), default=0)"),
    },
    "task4_2_jain_index": {
        "forgets the factor n": '''
def jain_index(xs):
    squares = sum(x * x for x in xs)
    if squares == 0:
        return 1.0
    return float(sum(xs) ** 2 / squares)
''',
        "crashes on an empty or all-zero list": '''
def jain_index(xs):
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))
''',
        "0.0 for an all-zero list": '''
def jain_index(xs):
    if not xs:
        return 1.0
    squares = sum(x * x for x in xs)
    if squares == 0:
        return 0.0
    return sum(xs) ** 2 / (len(xs) * squares)
''',
        "an int for integer input": '''
def jain_index(xs):
    squares = sum(x * x for x in xs)
    if squares == 0:
        return 1
    return sum(xs) ** 2 // (len(xs) * squares) if sum(xs) ** 2 % (len(xs) * squares) == 0 else sum(xs) ** 2 / (len(xs) * squares)
''',
        "min over max instead of Jain's index": '''
def jain_index(xs):
    if not xs or max(xs) == 0:
        return 1.0
    return float(min(xs) / max(xs))
''',
    },
    "task4_3_fair_victim_t": {
        "a Python loop that breaks tenant ties to the smaller index": '''
def fair_victim_t(tenant, num_blocks, last_access_step, weights, total_blocks, evictable):
    w = [float(x) for x in weights.tolist()]
    total_w = sum(w)
    quota = [x / total_w * total_blocks if total_w else 0.0 for x in w]
    usage = [0] * len(w)
    for i, t in enumerate(tenant.tolist()):
        usage[t] += int(num_blocks[i])
    free = [i for i, e in enumerate(evictable.tolist()) if e]
    steps = last_access_step.tolist()
    owner = tenant.tolist()
    best = None
    for t in range(len(w)):
        mine = [i for i in free if owner[i] == t]
        if usage[t] - quota[t] > 0 and mine and (best is None or usage[t] - quota[t] > usage[best] - quota[best]):
            best = t
    pool = [i for i in free if best is None or owner[i] == best]
    return min(pool, key=lambda i: (steps[i], i)) if pool else -1
''',
        "usage counted in sequences (bincount without weights)": _tensor(
            "usage = torch.bincount(tenant, weights=num_blocks.double(), minlength=T)",
            "usage = torch.bincount(tenant, minlength=T).double()"),
        "tenant ties to the smaller index (argmax)": _tensor(
            "victim_tenant = torch.nonzero(candidate & (over == best)).max()",
            "victim_tenant = torch.nonzero(candidate & (over == best)).min()"),
        "no global fallback (-1 when nobody is over quota)": _tensor(
            "    mask = evictable\n    if bool(candidate.any()):",
            "    mask = torch.zeros_like(evictable)\n    if bool(candidate.any()):"),
        "an over-quota tenant with nothing evictable is not passed over": _tensor(
            "candidate = (over > 0) & has_free", "candidate = over > 0"),
        "most recent inside the tenant": _tensor(
            "oldest = last_access_step[mask].min()", "oldest = last_access_step[mask].max()"),
        "usage in float32": _tensor(
            "weights=num_blocks.double()", "weights=num_blocks.float()").replace(
            "over = usage - quota", "over = (usage - quota.float())"),
        "returns a tensor instead of an int": _tensor(
            "return int(torch.nonzero(mask & (last_access_step == oldest)).min())",
            "return torch.nonzero(mask & (last_access_step == oldest)).min()"),
    },
}

ALTERNATIVES = {
    "task4_1_FairPolicy": {
        "the base solution with a helper method and split()": _FAIR,
        "a heap of candidate tenants and sorted() for LRU": '''
import heapq
import math
from collections import defaultdict


class FairPolicy(EvictionPolicy):
    """Fair-quota eviction."""

    def __init__(self, tenant_weights=None, total_blocks=512):
        if not total_blocks >= 1:
            raise ValueError("total_blocks must be at least 1")
        self.weights = {}
        for name, value in (tenant_weights or {}).items():
            if math.isnan(value) or math.isinf(value) or value < 0:
                raise ValueError(f"invalid weight {value} for tenant {name}")
            self.weights[name] = value
        self.total = total_blocks

    @staticmethod
    def _tenant_of(seq_id):
        index = seq_id.find("::")
        return "default" if index < 0 else seq_id[:index]

    def _quotas(self, sequences):
        tenants = set(self.weights) | {FairPolicy._tenant_of(s) for s in sequences}
        w = {t: self.weights.get(t, 1.0) for t in tenants}
        s = math.fsum(w.values())
        return {t: (w[t] / s * self.total if s > 0 else 0.0) for t in tenants}

    def select_victim(self, sequences, protected=frozenset()):
        quota = self._quotas(sequences)
        usage = defaultdict(int)
        members = defaultdict(list)
        for seq_id in sequences:
            t = self._tenant_of(seq_id)
            usage[t] += sequences[seq_id].num_blocks()
            if seq_id not in protected:
                members[t].append(seq_id)
        heap = [(-(usage[t] - quota[t]), tuple(-ord(c) for c in t) + (1,), t) for t in quota if usage[t] - quota[t] > 0]
        heapq.heapify(heap)
        while heap:
            _, _, t = heapq.heappop(heap)
            if members[t]:
                return sorted(members[t], key=lambda x: (sequences[x].last_access_step, x))[0]
        everyone = [x for ids in members.values() for x in ids]
        if not everyone:
            return None
        return sorted(everyone, key=lambda x: (sequences[x].last_access_step, x))[0]
''',
        "one pass that ranks every sequence by a composite key": '''
import math


class FairPolicy(EvictionPolicy):
    """Fair-quota eviction as one ranking of every evictable sequence."""

    def __init__(self, tenant_weights=None, total_blocks=512):
        self._w = dict(tenant_weights) if tenant_weights else {}
        if any(not (0 <= v < math.inf) for v in self._w.values()):
            raise ValueError("weights must be finite and non-negative")
        if total_blocks < 1:
            raise ValueError("total_blocks must be >= 1")
        self._b = total_blocks

    @staticmethod
    def _tenant_of(seq_id):
        head, sep, _ = seq_id.partition("::")
        return head if sep == "::" else "default"

    def _quotas(self, sequences):
        w = dict(self._w)
        for s in sequences:
            w.setdefault(self._tenant_of(s), 1.0)
        total = sum(w.values())
        return {t: (v / total * self._b if total else 0.0) for t, v in w.items()}

    def select_victim(self, sequences, protected=frozenset()):
        quota = self._quotas(sequences)
        over = {t: -q for t, q in quota.items()}
        for s, seq in sequences.items():
            over[self._tenant_of(s)] += seq.num_blocks()
        rows = []
        for s, seq in sequences.items():
            if s in protected:
                continue
            t = self._tenant_of(s)
            if over[t] > 0:
                # Over-quota tenants first, the largest overuse first, the larger name first.
                rank = (0, -over[t], [-ord(c) for c in t] + [1])
            else:
                rank = (1, 0, [])
            rows.append((rank, seq.last_access_step, s))
        if not rows:
            return None
        return min(rows)[2]
''',
    },
    "task4_2_jain_index": {
        "mean squared over mean of squares": '''
def jain_index(xs):
    n = len(xs)
    if n == 0 or not any(xs):
        return 1.0
    mean = sum(xs) / n
    mean_square = sum(x ** 2 for x in xs) / n
    return float(mean * mean / mean_square)
''',
        "math.fsum and a generator": '''
import math


def jain_index(xs):
    total = math.fsum(xs)
    squares = math.fsum(x * x for x in xs)
    return 1.0 if squares == 0 else total * total / (len(xs) * squares)
''',
        "torch in float64": '''
def jain_index(xs):
    x = torch.tensor([float(v) for v in xs], dtype=torch.float64)
    squares = float((x * x).sum())
    if squares == 0.0:
        return 1.0
    return float(x.sum()) ** 2 / (x.numel() * squares)
''',
    },
    "task4_3_fair_victim_t": {
        "bincount and torch.nonzero": _TENSOR,
        "lexicographic sort by stable torch.sort": '''
def fair_victim_t(tenant, num_blocks, last_access_step, weights, total_blocks, evictable):
    T = weights.numel()
    dev = weights.device
    usage = torch.zeros(T, dtype=torch.float64, device=dev).index_add(0, tenant, num_blocks.to(torch.float64))
    free_count = torch.zeros(T, dtype=torch.int64, device=dev).index_add(0, tenant, evictable.long())
    w = weights.to(torch.float64)
    total_w = w.sum()
    safe_total = torch.where(total_w > 0, total_w, torch.ones_like(total_w))
    quota = torch.where(total_w > 0, w / safe_total * total_blocks, torch.zeros_like(w))
    over = usage - quota
    ok = (over > 0) & (free_count > 0)
    if not bool(evictable.any()):
        return -1
    if bool(ok.any()):
        # Order tenants: eligible first, then largest overuse, then the larger index (stable sorts, last key first).
        order = torch.arange(T, device=dev).flip(0)
        order = order[torch.sort(-over[order], stable=True).indices]
        order = order[torch.sort((~ok[order]).long(), stable=True).indices]
        chosen = order[0]
        mask = evictable & (tenant == chosen)
    else:
        mask = evictable
    idx = torch.nonzero(mask).flatten()
    steps = last_access_step[idx]
    return int(idx[torch.sort(steps, stable=True).indices[0]])
''',
    },
}
