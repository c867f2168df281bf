"""Wrong and alternative answers for notebook 06 (see grading/mutants/__init__.py)."""

# ---------------------------------------------------------------- Task 6.1 block_hashes

_HASHES_CHECKS = '''
import hashlib


def block_hashes(tokens, block_size, salt=0):
    if type(block_size) is not int or type(salt) is not int:
        raise TypeError("block_size and salt must be ints")
    if block_size < 1:
        raise ValueError("block_size must be >= 1")
    if any(type(t) is not int for t in tokens):
        raise TypeError("tokens must be ints")
'''

WRONG_HASHES = {
    "unchained: each block hashed alone (equal blocks at different positions collide)": _HASHES_CHECKS + '''
    hashes = []
    for start in range(0, len(tokens) - block_size + 1, block_size):
        text = ",".join(str(v) for v in [salt, *tokens[start:start + block_size]])
        hashes.append(int.from_bytes(hashlib.sha256(text.encode("ascii")).digest()[:8], "big") >> 1)
    return hashes
''',
    "Python hash() of a string (changes from process to process)": _HASHES_CHECKS + '''
    hashes = []
    parent = salt
    for start in range(0, len(tokens) - block_size + 1, block_size):
        text = ",".join(str(v) for v in [parent, *tokens[start:start + block_size]])
        parent = hash(text) & (2**63 - 1)
        hashes.append(parent)
    return hashes
''',
    "the partial last block is hashed too": _HASHES_CHECKS + '''
    hashes = []
    parent = salt
    for start in range(0, len(tokens), block_size):
        text = ",".join(str(v) for v in [parent, *tokens[start:start + block_size]])
        parent = int.from_bytes(hashlib.sha256(text.encode("ascii")).digest()[:8], "big") >> 1
        hashes.append(parent)
    return hashes
''',
    "digest read little-endian": _HASHES_CHECKS + '''
    hashes = []
    parent = salt
    for start in range(0, len(tokens) - block_size + 1, block_size):
        text = ",".join(str(v) for v in [parent, *tokens[start:start + block_size]])
        parent = int.from_bytes(hashlib.sha256(text.encode("ascii")).digest()[:8], "little") >> 1
        hashes.append(parent)
    return hashes
''',
    "Python hash() of a tuple of ints (deterministic, but not the pinned function)": _HASHES_CHECKS + '''
    hashes = []
    parent = salt
    for start in range(0, len(tokens) - block_size + 1, block_size):
        parent = hash((parent, *tokens[start:start + block_size])) & (2**63 - 1)
        hashes.append(parent)
    return hashes
''',
    "no input checks (floats hashed as '2.0')": '''
import hashlib


def block_hashes(tokens, block_size, salt=0):
    hashes = []
    parent = salt
    for start in range(0, len(tokens) - max(block_size, 1) + 1, max(block_size, 1)):
        text = ",".join(str(v) for v in [parent, *tokens[start:start + block_size]])
        parent = int.from_bytes(hashlib.sha256(text.encode("ascii")).digest()[:8], "big") >> 1
        hashes.append(parent)
    return hashes
''',
}

ALTERNATIVE_HASHES = {
    "itertools.accumulate over blocks, hexdigest": '''
import hashlib
import itertools


def block_hashes(tokens, block_size, salt=0):
    """Chained sha256 block hashes (accumulate style)."""
    if not isinstance(block_size, int) or isinstance(block_size, bool) or not isinstance(salt, int):
        raise TypeError("block_size and salt must be ints")
    if block_size < 1:
        raise ValueError("block_size must be >= 1")
    if not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
        raise TypeError("tokens must be ints")
    blocks = [tokens[i * block_size:(i + 1) * block_size] for i in range(len(tokens) // block_size)]

    def step(parent, block):
        text = "%d" % parent + "".join(",%d" % t for t in block)
        return int(hashlib.sha256(text.encode()).hexdigest()[:16], 16) >> 1

    return list(itertools.accumulate(blocks, step, initial=salt))[1:]
''',
    "struct.unpack, recursion over the remaining tokens": '''
import hashlib
import struct


def block_hashes(tokens, block_size, salt=0):
    """Chained sha256 block hashes (recursive style)."""
    for name, value in (("block_size", block_size), ("salt", salt)):
        if type(value) is not int:
            raise TypeError(f"{name} must be an int")
    if block_size < 1:
        raise ValueError("block_size must be >= 1")
    for t in tokens:
        if type(t) is not int:
            raise TypeError("tokens must be ints")

    def chain(parent, start):
        if start + block_size > len(tokens):
            return []
        payload = ",".join(map(str, [parent] + list(tokens[start:start + block_size]))).encode("ascii")
        (value,) = struct.unpack(">Q", hashlib.sha256(payload).digest()[:8])
        return [value >> 1] + chain(value >> 1, start + block_size)

    return chain(salt, 0)
''',
}

# ---------------------------------------------------------------- Task 6.2 PrefixCache
# A compact correct class; the wrong answers below change one thing each.

_CACHE = '''
import torch


class PrefixCache:
    def __init__(self, capacity_blocks, block_size, policy="lru"):
        if capacity_blocks < 0 or block_size < 1 or policy not in ("lru", "lfu"):
            raise ValueError("bad arguments")
        self.capacity_blocks, self.block_size, self.policy = capacity_blocks, block_size, policy
        self.blocks = {}
        self.step = 0
        self.hits = self.misses = self.evictions = 0

    def __len__(self):
        return len(self.blocks)

    def __contains__(self, block_hash):
        return block_hash in self.blocks

    @property
    def stats(self):
        return {"hits": self.hits, "misses": self.misses, "evictions": self.evictions}

    def match(self, hashes):
        self.step += 1
        count = 0
        for h in hashes:
            if h not in self.blocks:
                break
            count += 1
        for h in hashes[:count]:
            self.blocks[h]["use"] += 1
            self.blocks[h]["last"] = self.step
        self.hits += count
        self.misses += len(hashes) - count
        return count

    def get_kv(self, hashes):
        for h in hashes:
            if h not in self.blocks:
                raise KeyError(h)
        if not hashes:
            return []
        layers = len(self.blocks[hashes[0]]["kv"])
        return [(torch.cat([self.blocks[h]["kv"][i][0] for h in hashes]),
                 torch.cat([self.blocks[h]["kv"][i][1] for h in hashes])) for i in range(layers)]

    def pin(self, hashes):
        for h in hashes:
            if h not in self.blocks:
                raise KeyError(h)
        for h in hashes:
            self.blocks[h]["ref"] += 1

    def unpin(self, hashes):
        for h in hashes:
            if h not in self.blocks:
                raise KeyError(h)
            if self.blocks[h]["ref"] < list(hashes).count(h):
                raise ValueError("not pinned")
        for h in hashes:
            self.blocks[h]["ref"] -= 1

    def key(self, h):
        b = self.blocks[h]
        return (b["last"], h) if self.policy == "lru" else (b["use"], b["last"], h)

    def evictable(self, h, current, parents):
        return self.blocks[h]["ref"] == 0 and h not in parents and h not in current

    def insert(self, hashes, kv):
        self.step += 1
        for k, v in kv:
            if k.shape[0] < len(hashes) * self.block_size or v.shape[0] < len(hashes) * self.block_size:
                raise ValueError("kv too short")
        current = set(hashes)
        stored = 0
        for i, h in enumerate(hashes):
            if h in self.blocks:
                continue
            while len(self.blocks) >= self.capacity_blocks:
                parents = {b["parent"] for b in self.blocks.values()}
                options = [x for x in self.blocks if self.evictable(x, current, parents)]
                if not options:
                    return stored
                del self.blocks[min(options, key=self.key)]
                self.evictions += 1
            rows = slice(i * self.block_size, (i + 1) * self.block_size)
            self.blocks[h] = {"kv": [(k[rows].clone(), v[rows].clone()) for k, v in kv],
                              "parent": hashes[i - 1] if i else None, "ref": 0, "use": 1, "last": self.step}
            stored += 1
        return stored
'''


def _cache_variant(old: str, new: str) -> str:
    """The compact class with one piece replaced; fails loudly if the piece is not found."""
    if _CACHE.count(old) != 1:
        raise ValueError(f"mutant anchor not found exactly once: {old!r}")
    return _CACHE.replace(old, new)


WRONG_CACHE = {
    "parent evicted before its child (no leaf-first rule)": _cache_variant(
        "return self.blocks[h][\"ref\"] == 0 and h not in parents and h not in current",
        "return self.blocks[h][\"ref\"] == 0 and h not in current"),
    "evicts pinned blocks": _cache_variant(
        "return self.blocks[h][\"ref\"] == 0 and h not in parents and h not in current",
        "return h not in parents and h not in current"),
    "match counts non-leading hits": _cache_variant(
        '''        for h in hashes:
            if h not in self.blocks:
                break
            count += 1
        for h in hashes[:count]:''',
        '''        count = sum(1 for h in hashes if h in self.blocks)
        for h in [x for x in hashes if x in self.blocks]:'''),
    "insert raises when everything left is pinned": _cache_variant(
        '''                if not options:
                    return stored''',
        '''                if not options:
                    raise RuntimeError("cache full of pinned blocks")'''),
    "LFU without the recency tie-break": _cache_variant(
        'else (b["use"], b["last"], h)', 'else (b["use"], h)'),
    "insert may evict blocks of the request it is inserting": _cache_variant(
        "return self.blocks[h][\"ref\"] == 0 and h not in parents and h not in current",
        "return self.blocks[h][\"ref\"] == 0 and h not in parents"),
    "every block stores the request's first rows (logits would differ with reuse)": _cache_variant(
        "rows = slice(i * self.block_size, (i + 1) * self.block_size)", "rows = slice(0, self.block_size)"),
    "insert refreshes the recency of blocks already cached": _cache_variant(
        '''            if h in self.blocks:
                continue
            while''',
        '''            if h in self.blocks:
                self.blocks[h]["last"] = self.step
                continue
            while'''),
}

ALTERNATIVE_CACHE = {
    "children sets and a stacked K/V tensor per block, heapq.nsmallest": '''
import heapq

import torch


class PrefixCache:
    """Blocks hold one tensor [layers, 2, block_size, heads, head_dim]; children kept as sets."""

    def __init__(self, capacity_blocks, block_size, policy="lru"):
        if capacity_blocks < 0:
            raise ValueError("capacity_blocks must be >= 0")
        if block_size < 1:
            raise ValueError("block_size must be >= 1")
        if policy not in {"lru": 0, "lfu": 1}:
            raise ValueError("unknown policy")
        self.capacity_blocks = capacity_blocks
        self.block_size = block_size
        self.policy = policy
        self.tensor = {}
        self.parent = {}
        self.children = {}
        self.refs = {}
        self.uses = {}
        self.last = {}
        self.clock = 0
        self.counters = [0, 0, 0]

    def __len__(self):
        return len(self.tensor)

    def __contains__(self, block_hash):
        return block_hash in self.tensor

    @property
    def stats(self):
        return dict(zip(("hits", "misses", "evictions"), self.counters))

    def match(self, hashes):
        self.clock += 1
        n = 0
        while n < len(hashes) and hashes[n] in self.tensor:
            self.uses[hashes[n]] += 1
            self.last[hashes[n]] = self.clock
            n += 1
        self.counters[0] += n
        self.counters[1] += len(hashes) - n
        return n

    def get_kv(self, hashes):
        if any(h not in self.tensor for h in hashes):
            raise KeyError("a block is not cached")
        if len(hashes) == 0:
            return []
        stacked = torch.cat([self.tensor[h] for h in hashes], dim=2)
        return [(layer[0], layer[1]) for layer in stacked]

    def pin(self, hashes):
        if any(h not in self.tensor for h in hashes):
            raise KeyError("a block is not cached")
        for h in hashes:
            self.refs[h] += 1

    def unpin(self, hashes):
        if any(h not in self.tensor for h in hashes):
            raise KeyError("a block is not cached")
        need = {}
        for h in hashes:
            need[h] = need.get(h, 0) + 1
        if any(self.refs[h] < count for h, count in need.items()):
            raise ValueError("unpin below zero")
        for h in hashes:
            self.refs[h] -= 1

    def _drop(self, h):
        p = self.parent.pop(h)
        if p in self.children:
            self.children[p].discard(h)
        for table in (self.tensor, self.children, self.refs, self.uses, self.last):
            del table[h]
        self.counters[2] += 1

    def insert(self, hashes, kv):
        self.clock += 1
        need = len(hashes) * self.block_size
        if any(min(k.shape[0], v.shape[0]) < need for k, v in kv):
            raise ValueError("kv does not cover every block")
        keep = frozenset(hashes)
        done = 0
        for i, h in enumerate(hashes):
            if h in self.tensor:
                continue
            while len(self.tensor) >= self.capacity_blocks:
                free = [x for x in self.tensor if not self.children[x] and self.refs[x] == 0 and x not in keep]
                if not free:
                    return done
                if self.policy == "lru":
                    keys = [(self.last[x], x) for x in free]
                else:
                    keys = [(self.uses[x], self.last[x], x) for x in free]
                self._drop(heapq.nsmallest(1, keys)[0][-1])
            lo = i * self.block_size
            self.tensor[h] = torch.stack([torch.stack((k[lo:lo + self.block_size], v[lo:lo + self.block_size]))
                                          for k, v in kv]).clone()
            self.parent[h] = hashes[i - 1] if i > 0 else None
            self.children[h] = set()
            if i > 0:
                self.children[hashes[i - 1]].add(h)
            self.refs[h], self.uses[h], self.last[h] = 0, 1, self.clock
            done += 1
        return done
''',
    "one record object per block, sorted() victim, stats as a plain dict attribute": '''
import torch


class _Block:
    def __init__(self, kv, parent, step):
        self.kv = kv
        self.parent = parent
        self.children = 0
        self.ref_count = 0
        self.use_count = 1
        self.last_access_step = step


class PrefixCache:
    """Block records with child counters; victim = sorted(candidates)[0]."""

    def __init__(self, capacity_blocks, block_size, policy="lru"):
        if not capacity_blocks >= 0:
            raise ValueError("capacity_blocks must be >= 0")
        if not block_size >= 1:
            raise ValueError("block_size must be >= 1")
        if policy != "lru" and policy != "lfu":
            raise ValueError("policy must be lru or lfu")
        self.capacity_blocks, self.block_size, self.policy = capacity_blocks, block_size, policy
        self.records = {}
        self.now = 0
        self.stats = {"hits": 0, "misses": 0, "evictions": 0}

    def __len__(self):
        return len(self.records)

    def __contains__(self, block_hash):
        return block_hash in self.records

    def match(self, hashes):
        self.now += 1
        hit = []
        for h in hashes:
            if h not in self.records:
                break
            hit.append(h)
        for h in hit:
            self.records[h].use_count += 1
            self.records[h].last_access_step = self.now
        self.stats["hits"] += len(hit)
        self.stats["misses"] += len(hashes) - len(hit)
        return len(hit)

    def get_kv(self, hashes):
        records = [self.records[h] for h in hashes]
        if not records:
            return []
        out = []
        for layer in range(len(records[0].kv)):
            out.append(tuple(torch.cat([r.kv[layer][j] for r in records], dim=0) for j in (0, 1)))
        return out

    def pin(self, hashes):
        records = [self.records[h] for h in hashes]
        for r in records:
            r.ref_count += 1

    def unpin(self, hashes):
        records = [self.records[h] for h in hashes]
        for h in set(hashes):
            if self.records[h].ref_count < sum(1 for x in hashes if x == h):
                raise ValueError("block not pinned")
        for r in records:
            r.ref_count -= 1

    def insert(self, hashes, kv):
        self.now += 1
        for k, v in kv:
            if len(k) < len(hashes) * self.block_size or len(v) < len(hashes) * self.block_size:
                raise ValueError("kv too short")
        stored = 0
        for i, h in enumerate(hashes):
            if h in self.records:
                continue
            while len(self.records) >= self.capacity_blocks:
                ranked = sorted(
                    ((r.last_access_step, x) if self.policy == "lru" else (r.use_count, r.last_access_step, x))
                    for x, r in self.records.items()
                    if r.children == 0 and r.ref_count == 0 and x not in hashes
                )
                if not ranked:
                    return stored
                victim = ranked[0][-1]
                parent = self.records.pop(victim).parent
                if parent in self.records:
                    self.records[parent].children -= 1
                self.stats["evictions"] += 1
            start = i * self.block_size
            part = [(k[start:start + self.block_size].clone(), v[start:start + self.block_size].clone()) for k, v in kv]
            self.records[h] = _Block(part, hashes[i - 1] if i else None, self.now)
            if i:
                self.records[hashes[i - 1]].children += 1
            stored += 1
        return stored
''',
}

# ---------------------------------------------------------------- Task 6.3 serve

_SERVE = '''
def serve(model, cache, tokens):
    if len(tokens) == 0:
        raise ValueError("no tokens")
    bs = cache.block_size
    hashes = block_hashes(tokens, bs)
    matched = cache.match(hashes)
    reuse = min(matched, (len(tokens) - 1) // bs)
    reused = hashes[:reuse]
    cache.pin(reused)
    try:
        past = cache.get_kv(reused) if reused else None
        new = torch.tensor(tokens[reuse * bs:], dtype=torch.long, device=model.device)
        logits, kv = model(new, past_kv=past)
        cache.insert(hashes, kv)
    finally:
        cache.unpin(reused)
    return logits, {"tokens_reused": reuse * bs, "tokens_computed": len(tokens) - reuse * bs}
'''


def _serve_variant(old: str, new: str) -> str:
    if _SERVE.count(old) != 1:
        raise ValueError(f"mutant anchor not found exactly once: {old!r}")
    return _SERVE.replace(old, new)


WRONG_SERVE = {
    "runs the new tokens without the cached K/V (logits differ with reuse)": _serve_variant(
        "logits, kv = model(new, past_kv=past)",
        "logits, kv = model(new)\n        if past is not None:\n"
        "            kv = [(torch.cat((p[0], k)), torch.cat((p[1], v))) for p, (k, v) in zip(past, kv)]"),
    "reuses every matched block, even when the whole prompt is cached": _serve_variant(
        "reuse = min(matched, (len(tokens) - 1) // bs)", "reuse = matched"),
    "forgets to unpin": _serve_variant(
        '''    finally:
        cache.unpin(reused)''',
        '''    finally:
        pass'''),
    "never inserts the request's blocks": _serve_variant(
        "        cache.insert(hashes, kv)\n", "        pass\n"),
    "inserts only the new blocks' hashes with the whole request's K/V": _serve_variant(
        "cache.insert(hashes, kv)", "cache.insert(hashes[reuse:], kv)"),
    "counts blocks instead of tokens": _serve_variant(
        'return logits, {"tokens_reused": reuse * bs, "tokens_computed": len(tokens) - reuse * bs}',
        'return logits, {"tokens_reused": reuse, "tokens_computed": len(hashes) - reuse}'),
    "returns the logits of the whole prompt recomputed (no saving)": _serve_variant(
        "logits, kv = model(new, past_kv=past)",
        "logits, kv = model(torch.tensor(tokens, dtype=torch.long, device=model.device))"),
}

ALTERNATIVE_SERVE = {
    "device from the parameters, reuse found by a loop": '''
def serve(model, cache, tokens):
    """Prefill with prefix reuse."""
    if not tokens:
        raise ValueError("tokens must not be empty")
    size = cache.block_size
    hashes = block_hashes(list(tokens), size)
    blocks = cache.match(hashes)
    while blocks * size >= len(tokens):
        blocks -= 1
    prefix = list(hashes[:blocks])
    device = next(model.parameters()).device
    cache.pin(prefix)
    try:
        if blocks == 0:
            logits, kv = model(torch.as_tensor(tokens, dtype=torch.long, device=device))
        else:
            past = cache.get_kv(prefix)
            logits, kv = model(torch.as_tensor(tokens[blocks * size:], dtype=torch.long, device=device), past_kv=past)
        cache.insert(hashes, kv)
    finally:
        cache.unpin(prefix)
    counts = {"tokens_reused": blocks * size}
    counts["tokens_computed"] = len(tokens) - counts["tokens_reused"]
    return logits, counts
''',
    "explicit pinned flag, get_kv(...) or None": '''
def serve(model, cache, tokens):
    """Prefill with prefix reuse (pinned flag style)."""
    n = len(tokens)
    if n < 1:
        raise ValueError("serve needs tokens")
    hashes = block_hashes(tokens, cache.block_size)
    usable = hashes[:min(cache.match(hashes), (n - 1) // cache.block_size)]
    start = len(usable) * cache.block_size
    pinned = False
    try:
        cache.pin(usable)
        pinned = True
        past_kv = cache.get_kv(usable) or None
        ids = torch.tensor(tokens, dtype=torch.long)[start:].to(model.device)
        logits, kv = model(ids, past_kv)
        cache.insert(hashes, kv)
        return logits, dict(tokens_reused=start, tokens_computed=n - start)
    finally:
        if pinned:
            cache.unpin(usable)
''',
}

WRONG = {
    "task6_1_block_hashes": WRONG_HASHES,
    "task6_2_PrefixCache": WRONG_CACHE,
    "task6_3_serve": WRONG_SERVE,
}

ALTERNATIVES = {
    "task6_1_block_hashes": ALTERNATIVE_HASHES,
    "task6_2_PrefixCache": {"compact reference style: dict per block, parents recomputed": _CACHE,
                            **ALTERNATIVE_CACHE},
    "task6_3_serve": {"compact": _SERVE, **ALTERNATIVE_SERVE},
}
