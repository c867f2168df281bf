"""Wrong and alternative answers for notebook 06 (see tests/answers/__init__.py)."""

from grading.authoring.reference import Reference

ref = Reference("06_prefix_cache")

HASHES, CACHE, SERVE = "task6_1_block_hashes", "task6_2_PrefixCache", "task6_3_serve"

_DIGEST = '''        digest = hashlib.sha256(text.encode("ascii")).digest()
        parent = int.from_bytes(digest[:8], "big") >> 1
'''
_TOKEN_CHECK = '''    for token in tokens:
        if type(token) is not int:'''
_CANDIDATES = 'candidates = [h for h in self._leaves if self._blocks[h]["ref_count"] == 0 and h not in current]'
_LRU_KEY = 'return min(candidates, key=lambda h: (self._blocks[h]["last_access_step"], h))'
_LFU_KEY = ('return min(candidates, key=lambda h: (self._blocks[h]["use_count"], '
            'self._blocks[h]["last_access_step"], h))')
_ROWS = "        rows = slice(index * self.block_size, (index + 1) * self.block_size)\n"
_KV_CHECK = '''        needed = len(hashes) * self.block_size
        if hashes and not kv:
            raise ValueError("insert: kv has no layers")
        for layer, (k_cache, v_cache) in enumerate(kv):
            if k_cache.shape[0] < needed or v_cache.shape[0] < needed:'''
_MATCH_LOOP = '''            if block is None:
                break
            block["use_count"] += 1
            block["last_access_step"] = self._step
'''
_PIN = '''        missing = [h for h in hashes if h not in self._blocks]
        if missing:
            raise KeyError(f"pin: blocks not cached: {missing[:3]}")
'''
_UNPIN_CHECK = '''        for block_hash in set(hashes):
            if self._blocks[block_hash]["ref_count"] < list(hashes).count(block_hash):
                raise ValueError(f"unpin: block {block_hash} is not pinned that many times")
'''
_GET_KV = '''        return [(torch.cat([kv[layer][0] for kv in blocks]), torch.cat([kv[layer][1] for kv in blocks]))
                for layer in range(len(blocks[0]))]'''
_ALREADY_CACHED = ("            if block_hash in self._blocks:\n"
                   "                continue  # Already cached: not touched.\n")

WRONG = {
    HASHES: {
        # The first answer of each task is the bundled typical_mistakes submission (grading/authoring/samples.py),
        # which must lose points in every graded part: a student's typical slips, one in each part.
        "typical slips, one per part: isinstance checks (a bool passes), unchained hashes": ref.edit(
            HASHES, (_TOKEN_CHECK, "    for token in tokens:\n        if not isinstance(token, int):"),
            ("for value in [parent, *tokens", "for value in [salt, *tokens")),
        "unchained: each block hashed alone (equal blocks at different positions collide)": ref.edit(
            HASHES, ("for value in [parent, *tokens", "for value in [salt, *tokens")),
        "Python hash() of a string (changes from process to process)": ref.edit(
            HASHES, (_DIGEST, "        parent = hash(text) & (2**63 - 1)\n")),
        "the partial last block is hashed too": ref.edit(
            HASHES, ("range(0, len(tokens) - block_size + 1, block_size)", "range(0, len(tokens), block_size)")),
        "digest read little-endian": ref.edit(HASHES, ('digest[:8], "big"', 'digest[:8], "little"')),
        "Python hash() of a tuple of ints (deterministic, but not the pinned function)": ref.edit(
            HASHES, (_DIGEST, "        parent = hash((parent, *tokens[start:start + block_size])) & (2**63 - 1)\n")),
        "no input checks (floats hashed as '2.0')": ref.solve(
            HASHES, todo={"6.1.1": "block_size = max(block_size, 1)"}),
        "isinstance(token, int): a bool is taken for a token id": ref.edit(
            HASHES, (_TOKEN_CHECK, "    for token in tokens:\n        if not isinstance(token, int):")),
        "only the tokens of full blocks are checked": ref.edit(
            HASHES, (_TOKEN_CHECK, "    for token in tokens[:len(tokens) - len(tokens) % max(block_size, 1)]:\n"
                                   "        if type(token) is not int:")),
        "no shift: a 64-bit value, 2**63 or more half of the time": ref.edit(
            HASHES, ('parent = int.from_bytes(digest[:8], "big") >> 1', 'parent = int.from_bytes(digest[:8], "big")')),
        "salt ignored (the chain starts at 0)": ref.edit(HASHES, ("    parent = salt\n", "    parent = 0\n")),
        "the text joined with ', ' instead of ','": ref.edit(
            HASHES, ('text = ",".join(str(value)', 'text = ", ".join(str(value)')),
        "the partial last block is cut off the caller's list": ref.edit(
            HASHES, ("    hashes = []\n",
                     "    del tokens[len(tokens) - len(tokens) % block_size:]\n    hashes = []\n")),
        "only block_size == 0 rejected": ref.edit(HASHES, ("if block_size < 1:", "if block_size == 0:")),
        "salt not checked": ref.edit(
            HASHES, ("if type(block_size) is not int or type(salt) is not int:", "if type(block_size) is not int:")),
    },
    CACHE: {
        "typical slips, one per part: policy without its case, views of the request's K/V, misses once per call, "
        "get_kv in sorted order, unpin of duplicates, no leaf-first rule, evictions not counted": ref.edit(
            CACHE, ('if policy not in ("lru", "lfu"):', 'if policy.lower() not in ("lru", "lfu"):'),
            ('"kv": [(k_cache[rows].clone(), v_cache[rows].clone())', '"kv": [(k_cache[rows], v_cache[rows])'),
            ("self._misses += len(hashes) - matched", "self._misses += 1 if matched < len(hashes) else 0"),
            ('blocks = [self._blocks[h]["kv"] for h in hashes]',
             'blocks = [self._blocks[h]["kv"] for h in sorted(hashes)]'),
            (_UNPIN_CHECK, '''        for block_hash in hashes:
            if self._blocks[block_hash]["ref_count"] < 1:
                raise ValueError(f"unpin: block {block_hash} is not pinned")
'''),
            (_CANDIDATES, _CANDIDATES.replace("in self._leaves", "in self._blocks")),
            ("        self._evictions += 1\n", "")),
        "parent evicted before its child (no leaf-first rule)": ref.edit(
            CACHE, (_CANDIDATES, _CANDIDATES.replace("in self._leaves", "in self._blocks"))),
        "evicts pinned blocks": ref.edit(
            CACHE, (_CANDIDATES, 'candidates = [h for h in self._leaves if h not in current]')),
        "match counts non-leading hits": ref.edit(
            CACHE, (_MATCH_LOOP, _MATCH_LOOP.replace("break", "continue"))),
        "insert raises when everything left is pinned": ref.edit(
            CACHE, ("                    return stored  # Nothing is evictable: stop here, never raise.\n",
                    "                    raise RuntimeError(\"the cache is full of pinned blocks\")\n")),
        "LFU without the recency tie-break": ref.edit(
            CACHE, (_LFU_KEY, 'return min(candidates, key=lambda h: (self._blocks[h]["use_count"], h))')),
        "insert may evict blocks of the request it is inserting": ref.edit(
            CACHE, (_CANDIDATES, 'candidates = [h for h in self._leaves if self._blocks[h]["ref_count"] == 0]')),
        "every block stores the request's first rows (logits would differ with reuse)": ref.edit(
            CACHE, (_ROWS, "        rows = slice(0, self.block_size)\n")),
        "insert refreshes the recency of blocks already cached": ref.edit(
            CACHE, (_ALREADY_CACHED,
                    "            if block_hash in self._blocks:\n"
                    "                self._blocks[block_hash][\"last_access_step\"] = self._step\n"
                    "                continue\n")),
        # 6.2.1: the constructor.
        "no argument checks": ref.solve(CACHE, __init__="pass"),
        "a capacity of 0 rejected": ref.edit(CACHE, ("if capacity_blocks < 0:", "if capacity_blocks <= 0:")),
        "the policy compared without its case": ref.edit(
            CACHE, ('if policy not in ("lru", "lfu"):', 'if policy.lower() not in ("lru", "lfu"):')),
        # 6.2.2: insert and _store.
        "stores views of the request's K/V (no copy)": ref.edit(
            CACHE, ('"kv": [(k_cache[rows].clone(), v_cache[rows].clone())', '"kv": [(k_cache[rows], v_cache[rows])')),
        "block i taken at row i, not at row i * block_size": ref.edit(
            CACHE, (_ROWS, "        rows = slice(index, index + self.block_size)\n")),
        "kv checked while storing (the blocks before the short one stay stored)": ref.solve(
            CACHE, todo={"6.2.2": '''
                if hashes and not kv:
                    raise ValueError("insert: kv has no layers")
            '''}, _store='''
                rows = slice(index * self.block_size, (index + 1) * self.block_size)
                for k_cache, v_cache in kv:
                    if k_cache.shape[0] < rows.stop or v_cache.shape[0] < rows.stop:
                        raise ValueError("insert: kv does not cover this block")
                block_hash = hashes[index]
                parent = hashes[index - 1] if index > 0 else None
                self._blocks[block_hash] = {
                    "kv": [(k_cache[rows].clone(), v_cache[rows].clone()) for k_cache, v_cache in kv],
                    "parent": parent, "children": 0, "ref_count": 0, "use_count": 1,
                    "last_access_step": self._step,
                }
                self._leaves.add(block_hash)
                if parent is not None:
                    self._blocks[parent]["children"] += 1
                    self._leaves.discard(parent)
            '''),
        "only the k_cache's length checked": ref.edit(
            CACHE, ("if k_cache.shape[0] < needed or v_cache.shape[0] < needed:", "if k_cache.shape[0] < needed:")),
        "no kv check": ref.solve(CACHE, todo={"6.2.2": "pass"}),
        "a cached block is stored again": ref.edit(
            CACHE, (_ALREADY_CACHED, "")),
        # 6.2.3: match.
        "misses counted once per call": ref.edit(
            CACHE, ("self._misses += len(hashes) - matched", "self._misses += 1 if matched < len(hashes) else 0")),
        "match touches the cached blocks after the first miss": ref.solve(CACHE, match='''
            self._step += 1
            matched = 0
            while matched < len(hashes) and hashes[matched] in self._blocks:
                matched += 1
            for block_hash in hashes:
                if block_hash in self._blocks:
                    self._blocks[block_hash]["use_count"] += 1
                    self._blocks[block_hash]["last_access_step"] = self._step
            self._hits += matched
            self._misses += len(hashes) - matched
            return matched
        '''),
        "match does not advance the clock": ref.edit(CACHE, ("        self._step += 1\n        matched = 0\n",
                                                             "        matched = 0\n")),
        "the clock ticks once per block in match": ref.edit(
            CACHE, ('            block["last_access_step"] = self._step\n',
                    '            self._step += 1\n            block["last_access_step"] = self._step\n')),
        "hits not counted": ref.edit(CACHE, ("        self._hits += matched\n", "")),
        # 6.2.4: get_kv.
        "get_kv concatenates along the last dimension": ref.edit(
            CACHE, (_GET_KV, _GET_KV.replace("for kv in blocks])", "for kv in blocks], dim=-1)"))),
        "get_kv returns (V, K)": ref.edit(
            CACHE, (_GET_KV, '''        return [(torch.cat([kv[layer][1] for kv in blocks]),
                 torch.cat([kv[layer][0] for kv in blocks])) for layer in range(len(blocks[0]))]''')),
        "get_kv in the order of the sorted hashes": ref.edit(
            CACHE, ('blocks = [self._blocks[h]["kv"] for h in hashes]',
                    'blocks = [self._blocks[h]["kv"] for h in sorted(hashes)]')),
        "get_kv is an access (it refreshes last_access_step)": ref.edit(
            CACHE, ('        blocks = [self._blocks[h]["kv"] for h in hashes]\n',
                    '        for h in hashes:\n            self._blocks[h]["last_access_step"] = self._step\n'
                    '        blocks = [self._blocks[h]["kv"] for h in hashes]\n')),
        "get_kv counts as an access (the clock advances, use_count + 1)": ref.edit(
            CACHE, ('        blocks = [self._blocks[h]["kv"] for h in hashes]\n',
                    '        self._step += 1\n        for h in hashes:\n'
                    '            self._blocks[h]["last_access_step"] = self._step\n'
                    '            self._blocks[h]["use_count"] += 1\n'
                    '        blocks = [self._blocks[h]["kv"] for h in hashes]\n')),
        "get_kv skips the hashes that are not cached": ref.edit(
            CACHE, ('        if missing:\n            raise KeyError(f"get_kv: blocks not cached: {missing[:3]}")\n'
                    '        if not hashes:\n',
                    '        hashes = [h for h in hashes if h in self._blocks]\n        if not hashes:\n')),
        "get_kv casts to float32": ref.edit(
            CACHE, (_GET_KV, _GET_KV.replace("for kv in blocks])", "for kv in blocks]).float()"))),
        "get_kv returns None for no hashes": ref.edit(CACHE, ("        if not hashes:\n            return []\n",
                                                             "        if not hashes:\n            return None\n")),
        # 6.2.5: pin and unpin.
        "pin keeps the pins made before the hash that is not cached": ref.solve(CACHE, pin='''
            for block_hash in hashes:
                if block_hash not in self._blocks:
                    raise KeyError(f"pin: block {block_hash} is not cached")
                self._blocks[block_hash]["ref_count"] += 1
        '''),
        "unpin checks each hash alone (a hash listed twice goes below zero)": ref.edit(
            CACHE, (_UNPIN_CHECK, '''        for block_hash in hashes:
            if self._blocks[block_hash]["ref_count"] < 1:
                raise ValueError(f"unpin: block {block_hash} is not pinned")
''')),
        "unpin keeps the changes made before the hash that fails": ref.solve(CACHE, unpin='''
            for block_hash in hashes:
                if block_hash not in self._blocks:
                    raise KeyError(f"unpin: block {block_hash} is not cached")
                if self._blocks[block_hash]["ref_count"] < 1:
                    raise ValueError(f"unpin: block {block_hash} is not pinned")
                self._blocks[block_hash]["ref_count"] -= 1
        '''),
        "unpin of a block that is not pinned is ignored": ref.solve(CACHE, unpin='''
            missing = [h for h in hashes if h not in self._blocks]
            if missing:
                raise KeyError(f"unpin: blocks not cached: {missing[:3]}")
            for block_hash in hashes:
                block = self._blocks[block_hash]
                block["ref_count"] = max(0, block["ref_count"] - 1)
        '''),
        # 6.2.6: the victim.
        "LRU ties to the larger hash": ref.edit(
            CACHE, (_LRU_KEY, 'return min(candidates, key=lambda h: (self._blocks[h]["last_access_step"], -h))')),
        "the most recently used leaf is evicted": ref.edit(CACHE, (_LRU_KEY, _LRU_KEY.replace("min(", "max("))),
        "LFU ranks by recency only": ref.edit(CACHE, (_LFU_KEY, _LRU_KEY)),
        "_store leaves the parent among the leaves": ref.edit(
            CACHE, ('            self._blocks[parent]["children"] += 1\n            self._leaves.discard(parent)\n',
                    '            self._blocks[parent]["children"] += 1\n')),
        # 6.2.7: _evict.
        "a parent never becomes a leaf again": ref.edit(
            CACHE, ('\n            if self._blocks[parent]["children"] == 0:\n'
                    '                self._leaves.add(parent)', '')),
        "evictions not counted": ref.edit(CACHE, ("        self._evictions += 1\n", "")),
        "_store does not count the parent's children": ref.edit(
            CACHE, ('            self._blocks[parent]["children"] += 1\n            self._leaves.discard(parent)\n',
                    '            self._leaves.discard(parent)\n')),
        "pin/unpin increment use_count (treated as accesses)": ref.edit(
            CACHE, ('        for block_hash in hashes:\n            self._blocks[block_hash]["ref_count"] += 1',
                    '        for block_hash in hashes:\n            self._blocks[block_hash]["ref_count"] += 1\n'
                    '            self._blocks[block_hash]["use_count"] += 1')),
        "insert advances the clock once per stored block": ref.edit(
            CACHE, ("            self._store(index, hashes, kv)\n            stored += 1",
                    "            self._store(index, hashes, kv)\n            stored += 1\n"
                    "            self._step += 1")),
        "stats returns one live dict (the same object every time, updated in place)": ref.edit(
            CACHE, ('        return {"hits": self._hits, "misses": self._misses, "evictions": self._evictions}',
                    '        if not hasattr(self, "_live_stats"):\n'
                    '            self._live_stats = {}\n'
                    '        self._live_stats.update(hits=self._hits, misses=self._misses, evictions=self._evictions)\n'
                    '        return self._live_stats')),
    },
    SERVE: {
        "typical slips, one per part: blocks counted instead of tokens, the model run without the cached K/V, "
        "no unpin": ref.edit(
            SERVE, ('counts = {"tokens_reused": tokens_reused, "tokens_computed": len(tokens) - tokens_reused}',
                    'counts = {"tokens_reused": len(reused), "tokens_computed": len(hashes) - len(reused)}'),
            ("logits, kv = model(new_tokens, past_kv=past_kv)",
             "logits, kv = model(new_tokens)\n"
             "        if past_kv is not None:\n"
             "            kv = [(torch.cat((p[0], k)), torch.cat((p[1], v)))\n"
             "                  for p, (k, v) in zip(past_kv, kv)]"),
            ("    finally:\n        cache.unpin(reused)\n", "    finally:\n        pass\n")),
        "runs the new tokens without the cached K/V (logits differ with reuse)": ref.edit(
            SERVE, ("logits, kv = model(new_tokens, past_kv=past_kv)",
                    "logits, kv = model(new_tokens)\n"
                    "        if past_kv is not None:\n"
                    "            kv = [(torch.cat((p[0], k)), torch.cat((p[1], v)))\n"
                    "                  for p, (k, v) in zip(past_kv, kv)]")),
        "reuses every matched block, even when the whole prompt is cached": ref.edit(
            SERVE, ("reused = hashes[:min(matched, (len(tokens) - 1) // block_size)]", "reused = hashes[:matched]")),
        "forgets to unpin": ref.edit(
            SERVE, ("    finally:\n        cache.unpin(reused)\n", "    finally:\n        pass\n")),
        "never inserts the request's blocks": ref.edit(SERVE, ("        cache.insert(hashes, kv)\n", "")),
        "inserts only the new blocks' hashes with the whole request's K/V": ref.edit(
            SERVE, ("cache.insert(hashes, kv)", "cache.insert(hashes[len(reused):], kv)")),
        "counts blocks instead of tokens": ref.edit(
            SERVE, ('counts = {"tokens_reused": tokens_reused, "tokens_computed": len(tokens) - tokens_reused}',
                    'counts = {"tokens_reused": len(reused), "tokens_computed": len(hashes) - len(reused)}')),
        "returns the logits of the whole prompt recomputed (no saving)": ref.edit(
            SERVE, ("logits, kv = model(new_tokens, past_kv=past_kv)",
                    "logits, kv = model(torch.tensor(tokens, dtype=torch.long, device=model.device))")),
        "past_kv=[] when nothing is reused": ref.edit(
            SERVE, ("past_kv = cache.get_kv(reused) if reused else None", "past_kv = cache.get_kv(reused)")),
        "no try/finally: the blocks stay pinned when the model raises": ref.solve(SERVE, todo={"6.3.2": '''
            cache.pin(reused)
            past_kv = cache.get_kv(reused) if reused else None
            new_tokens = torch.tensor(tokens[tokens_reused:], dtype=torch.long, device=model.device)
            logits, kv = model(new_tokens, past_kv=past_kv)
            cache.insert(hashes, kv)
            cache.unpin(reused)
        '''}),
        "the try block does not cover insert": ref.solve(SERVE, todo={"6.3.2": '''
            cache.pin(reused)
            try:
                past_kv = cache.get_kv(reused) if reused else None
                new_tokens = torch.tensor(tokens[tokens_reused:], dtype=torch.long, device=model.device)
                logits, kv = model(new_tokens, past_kv=past_kv)
            except Exception:
                cache.unpin(reused)
                raise
            cache.insert(hashes, kv)
            cache.unpin(reused)
        '''}),
        "matches only the blocks it may reuse": ref.edit(
            SERVE, ("matched = cache.match(hashes)",
                    "matched = cache.match(hashes[:(len(tokens) - 1) // block_size])")),
        "matches twice": ref.edit(
            SERVE, ("    matched = cache.match(hashes)\n",
                    "    matched = cache.match(hashes)\n    matched = min(matched, cache.match(hashes))\n")),
        "gets the K/V before pinning": ref.edit(
            SERVE, ("    cache.pin(reused)\n    try:\n        past_kv = cache.get_kv(reused) if reused else None\n",
                    "    past_kv = cache.get_kv(reused) if reused else None\n    cache.pin(reused)\n    try:\n")),
        "unpins before inserting": ref.solve(SERVE, todo={"6.3.2": '''
            cache.pin(reused)
            try:
                past_kv = cache.get_kv(reused) if reused else None
                new_tokens = torch.tensor(tokens[tokens_reused:], dtype=torch.long, device=model.device)
                logits, kv = model(new_tokens, past_kv=past_kv)
            finally:
                cache.unpin(reused)
            cache.insert(hashes, kv)
        '''}),
        "reuses at most len(tokens) // block_size - 1 blocks": ref.edit(
            SERVE, ("reused = hashes[:min(matched, (len(tokens) - 1) // block_size)]",
                    "reused = hashes[:min(matched, len(tokens) // block_size - 1)]")),
        "the new tokens as int32": ref.edit(SERVE, ("dtype=torch.long", "dtype=torch.int32")),
        # A red-team answer (2026-12-05): no saving, and the test's record of the model's calls made up to look right.
        "recomputes the prompt on a copy of the model; one recorded call with a past of zeros": ref.solve(
            SERVE, todo={"6.3.2": '''
            from course.model import TinyDecoder

            cache.pin(reused)
            try:
                if reused:
                    cache.get_kv(reused)
                copy = TinyDecoder(vocab_size=model.vocab_size, num_layers=model.num_layers, num_heads=model.num_heads,
                                   head_dim=model.head_dim, seed=model.seed, positions=model.positions).to(model.device)
                everything = torch.tensor(tokens, dtype=torch.long, device=model.device)
                all_logits, kv = copy(everything)
                logits = all_logits[tokens_reused:]
                zeros = torch.zeros(tokens_reused, model.num_heads, model.head_dim, device=model.device)
                model(everything[tokens_reused:], past_kv=[(zeros, zeros)] * model.num_layers if reused else None)
                cache.insert(hashes, kv)
            finally:
                cache.unpin(reused)
        '''}),
    },
}

_RECORD = '''
class _Block:
    """One cached block (the entry of self._blocks)."""

    def __init__(self, kv, parent, step):
        self.kv = kv
        self.parent = parent
        self.children = 0
        self.ref_count = 0
        self.use_count = 1
        self.last_access_step = step
'''

ALTERNATIVES = {
    HASHES: {
        "itertools.accumulate over blocks, hexdigest": ref.solve(HASHES, before="import itertools", todo={
            "6.1.1": '''
                for value in (block_size, salt, *tokens):
                    if type(value) is not int:
                        raise TypeError(f"expected an int, got {type(value).__name__}")
                if block_size < 1:
                    raise ValueError("block_size must be >= 1")
            ''',
            "6.1.2": '''
                blocks = [tokens[i * block_size:(i + 1) * block_size] for i in range(len(tokens) // block_size)]

                def step(parent, block):
                    text = "%d" % parent + "".join(",%d" % t for t in block)
                    return int(hashlib.sha256(text.encode()).hexdigest()[:16], 16) >> 1

                return list(itertools.accumulate(blocks, step, initial=salt))[1:]
            '''}),
        "struct.unpack, recursion over the remaining tokens": ref.solve(HASHES, before="import struct", todo={
            "6.1.1": '''
                for name, value in (("block_size", block_size), ("salt", salt)):
                    if type(value) is not int:
                        raise TypeError(f"{name} must be an int")
                if any(type(t) is not int for t in tokens):
                    raise TypeError("tokens must be ints")
                if not block_size >= 1:
                    raise ValueError("block_size must be >= 1")
            ''',
            "6.1.2": '''
                def chain(parent, start):
                    if start + block_size > len(tokens):
                        return []
                    payload = ",".join(map(str, [parent] + list(tokens[start:start + block_size]))).encode("ascii")
                    (value,) = struct.unpack(">Q", hashlib.sha256(payload).digest()[:8])
                    return [value >> 1] + chain(value >> 1, start + block_size)

                return chain(salt, 0)
            '''}),
        "ValueError checked before the types": ref.solve(HASHES, todo={
            "6.1.1": '''
                if type(block_size) is int and block_size < 1:
                    raise ValueError(f"block_size must be >= 1, got {block_size}")
                if {type(block_size), type(salt), *map(type, tokens)} - {int}:
                    raise TypeError("block_size, salt and the tokens must be ints")
            ''',
            "6.1.2": '''
                hashes, parent = [], salt
                for index in range(len(tokens) // block_size):
                    block = tokens[index * block_size:(index + 1) * block_size]
                    digest = hashlib.sha256(",".join(map(str, (parent, *block))).encode("ascii")).digest()
                    parent = int.from_bytes(digest, "big") >> (256 - 63)
                    hashes.append(parent)
                return hashes
            '''}),
    },
    CACHE: {
        "compact reference style: dict per block, parents recomputed": ref.solve(
            CACHE,
            __init__='''
                if capacity_blocks < 0 or block_size < 1 or policy not in ("lru", "lfu"):
                    raise ValueError(f"bad arguments: {capacity_blocks}, {block_size}, {policy!r}")
            ''',
            insert='''
                for k, v in kv:
                    if min(k.shape[0], v.shape[0]) < len(hashes) * self.block_size:
                        raise ValueError("kv too short")
                if hashes and not kv:
                    raise ValueError("no layers")
            ''',
            _store='''
                rows = slice(index * self.block_size, (index + 1) * self.block_size)
                self._blocks[hashes[index]] = {"kv": [(k[rows].clone(), v[rows].clone()) for k, v in kv],
                                               "parent": hashes[index - 1] if index else None,
                                               "ref_count": 0, "use_count": 1, "last_access_step": self._step}
            ''',
            match='''
                self._step += 1
                count = 0
                for h in hashes:
                    if h not in self._blocks:
                        break
                    count += 1
                for h in hashes[:count]:
                    self._blocks[h]["use_count"] += 1
                    self._blocks[h]["last_access_step"] = self._step
                self._hits += count
                self._misses += len(hashes) - count
                return count
            ''',
            get_kv='''
                for h in hashes:
                    if h not in self._blocks:
                        raise KeyError(h)
                if not hashes:
                    return []
                layers = len(self._blocks[hashes[0]]["kv"])
                return [(torch.cat([self._blocks[h]["kv"][i][0] for h in hashes]),
                         torch.cat([self._blocks[h]["kv"][i][1] for h in hashes])) for i in range(layers)]
            ''',
            pin='''
                for h in hashes:
                    if h not in self._blocks:
                        raise KeyError(h)
                for h in hashes:
                    self._blocks[h]["ref_count"] += 1
            ''',
            unpin='''
                for h in hashes:
                    if h not in self._blocks:
                        raise KeyError(h)
                    if self._blocks[h]["ref_count"] < list(hashes).count(h):
                        raise ValueError("not pinned")
                for h in hashes:
                    self._blocks[h]["ref_count"] -= 1
            ''',
            _victim='''
                parents = {b["parent"] for b in self._blocks.values()}
                options = [h for h, b in self._blocks.items()
                           if b["ref_count"] == 0 and h not in parents and h not in current]
                if not options:
                    return None

                def key(h):
                    b = self._blocks[h]
                    if self.policy == "lru":
                        return (b["last_access_step"], h)
                    return (b["use_count"], b["last_access_step"], h)

                return min(options, key=key)
            ''',
            _evict='''
                del self._blocks[block_hash]
                self._evictions += 1
            '''),
        "children sets and a stacked K/V tensor per block, heapq.nsmallest": ref.solve(
            CACHE, before="import heapq",
            __init__='''
                if capacity_blocks < 0:
                    raise ValueError("capacity_blocks must be >= 0")
                if block_size < 1:
                    raise ValueError("block_size must be >= 1")
                if not isinstance(policy, str) or policy not in {"lru": 0, "lfu": 1}:
                    raise ValueError("unknown policy")
            ''',
            insert='''
                need = len(hashes) * self.block_size
                if (hashes and len(kv) == 0) or any(min(k.shape[0], v.shape[0]) < need for k, v in kv):
                    raise ValueError("kv does not cover every block")
            ''',
            _store='''
                lo = index * self.block_size
                stacked = torch.stack([torch.stack((k[lo:lo + self.block_size], v[lo:lo + self.block_size]))
                                       for k, v in kv]).clone()
                parent = hashes[index - 1] if index > 0 else None
                self._blocks[hashes[index]] = {"kv": stacked, "parent": parent, "children": set(), "ref_count": 0,
                                               "use_count": 1, "last_access_step": self._step}
                if parent is not None:
                    self._blocks[parent]["children"].add(hashes[index])
            ''',
            match='''
                self._step += 1
                n = 0
                while n < len(hashes) and hashes[n] in self._blocks:
                    self._blocks[hashes[n]]["use_count"] += 1
                    self._blocks[hashes[n]]["last_access_step"] = self._step
                    n += 1
                self._hits += n
                self._misses += len(hashes) - n
                return n
            ''',
            get_kv='''
                if any(h not in self._blocks for h in hashes):
                    raise KeyError("a block is not cached")
                if len(hashes) == 0:
                    return []
                stacked = torch.cat([self._blocks[h]["kv"] for h in hashes], dim=2)
                return [(layer[0], layer[1]) for layer in stacked]
            ''',
            pin='''
                if any(h not in self._blocks for h in hashes):
                    raise KeyError("a block is not cached")
                for h in hashes:
                    self._blocks[h]["ref_count"] += 1
            ''',
            unpin='''
                if any(h not in self._blocks for h in hashes):
                    raise KeyError("a block is not cached")
                need = {}
                for h in hashes:
                    need[h] = need.get(h, 0) + 1
                if any(self._blocks[h]["ref_count"] < count for h, count in need.items()):
                    raise ValueError("unpin below zero")
                for h in hashes:
                    self._blocks[h]["ref_count"] -= 1
            ''',
            _victim='''
                keep = frozenset(current)
                free = [x for x, b in self._blocks.items()
                        if not b["children"] and b["ref_count"] == 0 and x not in keep]
                if not free:
                    return None
                if self.policy == "lru":
                    keys = [(self._blocks[x]["last_access_step"], x) for x in free]
                else:
                    keys = [(self._blocks[x]["use_count"], self._blocks[x]["last_access_step"], x) for x in free]
                return heapq.nsmallest(1, keys)[0][-1]
            ''',
            _evict='''
                parent = self._blocks.pop(block_hash)["parent"]
                if parent in self._blocks:
                    self._blocks[parent]["children"].discard(block_hash)
                self._evictions += 1
            '''),
        "one record object per block, sorted() victim": ref.solve(
            CACHE, before=_RECORD,
            __init__='''
                if not capacity_blocks >= 0:
                    raise ValueError("capacity_blocks must be >= 0")
                if not block_size >= 1:
                    raise ValueError("block_size must be >= 1")
                if policy != "lru" and policy != "lfu":
                    raise ValueError("policy must be lru or lfu")
            ''',
            insert='''
                if hashes and not kv:
                    raise ValueError("kv has no layer")
                for k, v in kv:
                    if len(k) < len(hashes) * self.block_size or len(v) < len(hashes) * self.block_size:
                        raise ValueError("kv too short")
            ''',
            _store='''
                start = index * self.block_size
                part = [(k[start:start + self.block_size].clone(), v[start:start + self.block_size].clone())
                        for k, v in kv]
                self._blocks[hashes[index]] = _Block(part, hashes[index - 1] if index else None, self._step)
                self._leaves.add(hashes[index])
                if index:
                    self._blocks[hashes[index - 1]].children += 1
                    self._leaves.discard(hashes[index - 1])
            ''',
            match='''
                self._step += 1
                hit = []
                for h in hashes:
                    if h not in self._blocks:
                        break
                    hit.append(h)
                for h in hit:
                    self._blocks[h].use_count += 1
                    self._blocks[h].last_access_step = self._step
                self._hits += len(hit)
                self._misses += len(hashes) - len(hit)
                return len(hit)
            ''',
            get_kv='''
                records = [self._blocks[h] for h in hashes]
                if not records:
                    return []
                out = []
                for layer in range(len(records[0].kv)):
                    out.append(tuple(torch.cat([r.kv[layer][j] for r in records], dim=0) for j in (0, 1)))
                return out
            ''',
            pin='''
                records = [self._blocks[h] for h in hashes]
                for r in records:
                    r.ref_count += 1
            ''',
            unpin='''
                records = [self._blocks[h] for h in hashes]
                for h in set(hashes):
                    if self._blocks[h].ref_count < sum(1 for x in hashes if x == h):
                        raise ValueError("block not pinned")
                for r in records:
                    r.ref_count -= 1
            ''',
            _victim='''
                ranked = sorted(
                    (r.last_access_step, x) if self.policy == "lru" else (r.use_count, r.last_access_step, x)
                    for x, r in ((x, self._blocks[x]) for x in self._leaves)
                    if r.ref_count == 0 and x not in current
                )
                return ranked[0][-1] if ranked else None
            ''',
            _evict='''
                parent = self._blocks.pop(block_hash).parent
                self._leaves.discard(block_hash)
                self._evictions += 1
                if parent in self._blocks:
                    self._blocks[parent].children -= 1
                    if self._blocks[parent].children == 0:
                        self._leaves.add(parent)
            '''),
        "Counter in unpin, a running minimum in _victim, get_kv by layers first": ref.solve(
            CACHE, before="from collections import Counter",
            unpin='''
                wanted = Counter(hashes)
                for block_hash, times in wanted.items():
                    if block_hash not in self._blocks:
                        raise KeyError(block_hash)
                for block_hash, times in wanted.items():
                    if self._blocks[block_hash]["ref_count"] < times:
                        raise ValueError(f"unpin: block {block_hash} is pinned fewer than {times} times")
                for block_hash, times in wanted.items():
                    self._blocks[block_hash]["ref_count"] -= times
            ''',
            _victim='''
                best, best_key = None, None
                for h in self._leaves:
                    block = self._blocks[h]
                    if block["ref_count"] or h in current:
                        continue
                    key = (block["last_access_step"], h)
                    if self.policy == "lfu":
                        key = (block["use_count"], *key)
                    if best_key is None or key < best_key:
                        best, best_key = h, key
                return best
            ''',
            get_kv='''
                for h in hashes:
                    if h not in self._blocks:
                        raise KeyError(f"block {h} is not cached")
                if not hashes:
                    return []
                result = []
                for layer in range(len(self._blocks[hashes[0]]["kv"])):
                    pairs = [self._blocks[h]["kv"][layer] for h in hashes]
                    result.append((torch.cat([k for k, _ in pairs], dim=0), torch.cat([v for _, v in pairs], dim=0)))
                return result
            '''),
    },
    SERVE: {
        "compact": ref.solve(SERVE, todo={
            "6.3.1": '''
                if len(tokens) == 0:
                    raise ValueError("no tokens")
                bs = cache.block_size
                hashes = block_hashes(tokens, bs)
                reused = hashes[:min(cache.match(hashes), (len(tokens) - 1) // bs)]
                tokens_reused = len(reused) * bs
                counts = {"tokens_reused": tokens_reused, "tokens_computed": len(tokens) - tokens_reused}
            ''',
            "6.3.2": '''
                cache.pin(reused)
                try:
                    past = cache.get_kv(reused) if reused else None
                    new = torch.tensor(tokens[tokens_reused:], dtype=torch.long, device=model.device)
                    logits, kv = model(new, past)
                    cache.insert(hashes, kv)
                finally:
                    cache.unpin(reused)
            '''}),
        "device from the parameters, reuse found by a loop": ref.solve(SERVE, todo={
            "6.3.1": '''
                if not tokens:
                    raise ValueError("tokens must not be empty")
                size = cache.block_size
                hashes = block_hashes(list(tokens), size)
                blocks = cache.match(hashes)
                while blocks * size >= len(tokens):
                    blocks -= 1
                reused = list(hashes[:blocks])
                counts = {"tokens_reused": blocks * size}
                counts["tokens_computed"] = len(tokens) - counts["tokens_reused"]
            ''',
            "6.3.2": '''
                device = next(model.parameters()).device
                start = counts["tokens_reused"]
                cache.pin(reused)
                try:
                    if not reused:
                        logits, kv = model(torch.as_tensor(tokens, dtype=torch.long, device=device))
                    else:
                        past = cache.get_kv(reused)
                        logits, kv = model(torch.as_tensor(tokens[start:], dtype=torch.long, device=device),
                                           past_kv=past)
                    cache.insert(hashes, kv)
                finally:
                    cache.unpin(reused)
            '''}),
        "explicit pinned flag, get_kv(...) or None": ref.solve(SERVE, todo={
            "6.3.1": '''
                n = len(tokens)
                if n < 1:
                    raise ValueError("serve needs tokens")
                hashes = block_hashes(tokens, cache.block_size)
                reused = hashes[:min(cache.match(hashes), (n - 1) // cache.block_size)]
                start = len(reused) * cache.block_size
                counts = dict(tokens_reused=start, tokens_computed=n - start)
            ''',
            "6.3.2": '''
                pinned = False
                try:
                    cache.pin(reused)
                    pinned = True
                    past_kv = cache.get_kv(reused) or None
                    ids = torch.tensor(tokens, dtype=torch.long)[start:].to(model.device)
                    logits, kv = model(ids, past_kv)
                    cache.insert(hashes, kv)
                finally:
                    if pinned:
                        cache.unpin(reused)
            '''}),
        "no pin, unpin or get_kv calls when nothing is reused": ref.solve(SERVE, todo={"6.3.2": '''
            new_tokens = torch.tensor(tokens[tokens_reused:], dtype=torch.long, device=model.device)
            if not reused:
                logits, kv = model(new_tokens)
                cache.insert(hashes, kv)
            else:
                cache.pin(reused)
                try:
                    logits, kv = model(new_tokens, past_kv=cache.get_kv(reused))
                    cache.insert(hashes, kv)
                finally:
                    cache.unpin(reused)
        '''}),
    },
}

# Round 5 (2026-12-05), from the task text clause by clause: each wrong answer failed only hidden tests or none; the
# visible tests of 6.1.1, 6.2.6 and 6.2.7 now show each case.
WRONG[HASHES]["numbers.Integral but not bool (a numpy integer passes)"] = "import numbers\n" + ref.edit(HASHES, (
    "        if type(token) is not int:\n",
    "        if not isinstance(token, numbers.Integral) or isinstance(token, bool):\n"))
WRONG[CACHE]["LRU with use_count as a tie-break before the hash"] = ref.edit(CACHE, (
    _LRU_KEY, 'return min(candidates, key=lambda h: (self._blocks[h]["last_access_step"], '
              'self._blocks[h]["use_count"], h))'))
WRONG[CACHE]["a parent becomes a leaf again only when it is not pinned"] = ref.edit(CACHE, (
    '            if self._blocks[parent]["children"] == 0:',
    '            if self._blocks[parent]["children"] == 0 and self._blocks[parent]["ref_count"] == 0:'))
ALTERNATIVES[SERVE]["get_kv(reused) or None (get_kv([]) when nothing is reused)"] = ref.edit(SERVE, (
    "past_kv = cache.get_kv(reused) if reused else None", "past_kv = cache.get_kv(reused) or None"))
ALTERNATIVES[CACHE]["narrow + clone; get_kv lets the dict raise the KeyError"] = ref.edit(CACHE, (
    '"kv": [(k_cache[rows].clone(), v_cache[rows].clone()) for k_cache, v_cache in kv],',
    '"kv": [(k_cache.narrow(0, rows.start, self.block_size).clone(), '
    'v_cache.narrow(0, rows.start, self.block_size).clone()) for k_cache, v_cache in kv],'), (
    '        missing = [h for h in hashes if h not in self._blocks]\n        if missing:\n'
    '            raise KeyError(f"get_kv: blocks not cached: {missing[:3]}")\n'
    '        if not hashes:\n            return []\n'
    '        blocks = [self._blocks[h]["kv"] for h in hashes]',
    '        blocks = [self._blocks[h]["kv"] for h in hashes]\n'
    '        if not blocks:\n            return []'))

# Round 6 (2026-12-06): 6.3.2's model is a class of the test's own derived from TinyDecoder, lent to the student's
# code; an answer that checks its class (as the text says, a TinyDecoder) failed through the judge, whose proxy of it
# was no TinyDecoder (fixed in grading/judge/remote.py: the nearest class the kernel has too).
_NO_TOKENS = '''    if len(tokens) == 0:
        raise ValueError("serve needs at least one token")
'''
ALTERNATIVES[SERVE]["the model's class checked (isinstance TinyDecoder)"] = ref.edit(SERVE, (
    _NO_TOKENS, _NO_TOKENS + '''    from course.model import TinyDecoder
    if not isinstance(model, TinyDecoder):
        raise TypeError("serve: model must be a TinyDecoder")
'''))


# Round 7 (2026-12-06): correct answers that lost points through the judge until grading/judge/ was fixed
# (a717772, c2e806a and the commit after it); each is graded the same both ways now.
ALTERNATIVES[CACHE]["the policy compared with `is` (a SyntaxWarning, true for the literal in one process)"] = ref.edit(
    CACHE, ('        if self.policy == "lru":', '        if self.policy is "lru":'))

# Round 8 (2026-12-06): the unpin in a generator's finally or in a lease's __del__, which CPython runs when serve's
# frame is freed (through the judge the model's error kept the frame alive until after the reply). The cached K/V
# fetched in a worker thread while the main thread reads model.device (the two threads' messages had mixed) imports
# concurrent.futures, which the scan flags: tests/test_judge.py covers it.
_PIN_TRY = "    cache.pin(reused)\n    try:\n"
_FINALLY_UNPIN = ("    finally:\n        cache.unpin(reused)\n", "")
ALTERNATIVES[SERVE]["the unpin in the finally of a generator that holds the pin"] = ref.edit(SERVE, (
    _PIN_TRY, "    def pinned():\n        cache.pin(reused)\n        try:\n            yield\n"
              "        finally:\n            cache.unpin(reused)\n\n"
              "    session = pinned()\n    next(session)\n    if True:\n"),
    _FINALLY_UNPIN)
ALTERNATIVES[SERVE]["the unpin in the __del__ of a lease"] = ref.edit(SERVE, (
    _PIN_TRY, "    class Lease:\n        def __del__(self):\n            cache.unpin(reused)\n\n"
              "    cache.pin(reused)\n    lease = Lease()\n    if True:\n"), _FINALLY_UNPIN)

# Round 9 (2026-12-06): wrong answers that passed every test cell; checks of 6.2.1 to 6.2.4 (visible and hidden)
# now catch them.
WRONG[CACHE]["match([]) returns before the clock moves"] = ref.edit(CACHE, (
    "        self._step += 1\n        matched = 0\n",
    "        if not hashes:\n            return 0\n        self._step += 1\n        matched = 0\n"))
WRONG[CACHE]["insert([], []) returns before the clock moves"] = ref.edit(CACHE, (
    "        needed = len(hashes) * self.block_size\n",
    "        if not hashes:\n            return 0\n        needed = len(hashes) * self.block_size\n"))
WRONG[CACHE]["new blocks start with use_count 0"] = ref.edit(CACHE, (
    '"parent": parent, "children": 0, "ref_count": 0, "use_count": 1,',
    '"parent": parent, "children": 0, "ref_count": 0, "use_count": 0,'))
WRONG[CACHE]["get_kv returns the cached tensors themselves for one block"] = ref.edit(CACHE, (
    '        blocks = [self._blocks[h]["kv"] for h in hashes]\n',
    '        blocks = [self._blocks[h]["kv"] for h in hashes]\n        if len(blocks) == 1:\n'
    '            return list(blocks[0])\n'))
WRONG[CACHE]["policy checked against a set (a list policy raises TypeError)"] = ref.edit(CACHE, (
    'if policy not in ("lru", "lfu"):', 'if policy not in {"lru", "lfu"}:'))

# Round 6 (2026-12-06, a red-team answer): a victim chosen among the four leaves of smallest hash only, with a shadow
# of every evicted block that answers `in` for the blocks a comparison asks about, then makes exactly those the cached
# ones before its next call. It earned 6.2.6's and 6.2.7's hidden points while those replays asked about the oracle's
# cached blocks alone (sorted); they ask about every block of the case's tree now, so the steps say nothing.
WRONG[CACHE]["victim among the four smallest leaves, cached set taken from the test's `in` steps"] = ref[CACHE] + '''

_HonestPrefixCache = PrefixCache


class PrefixCache(_HonestPrefixCache):
    def __init__(self, capacity_blocks, block_size, policy="lru"):
        super().__init__(capacity_blocks, block_size, policy)
        self._shadow, self._asked = {}, None

    def __len__(self):
        self._asked = []  # A run of `in` queries may follow: they name the blocks the test expects.
        return len(self._blocks)

    def __contains__(self, block_hash):
        if self._asked is not None:
            self._asked.append(block_hash)
            return block_hash in self._blocks or block_hash in self._shadow
        return block_hash in self._blocks

    def _settle(self):
        asked, self._asked = self._asked, None
        if not asked or asked != sorted(set(asked)) or len(asked) != len(self._blocks):
            return
        want = set(asked)
        if want == set(self._blocks) or not want <= set(self._blocks) | set(self._shadow):
            return
        for h in [h for h in self._blocks if h not in want]:
            self._shadow[h] = self._blocks.pop(h)
        for h in want - set(self._blocks):
            self._blocks[h] = self._shadow.pop(h)
        for entry in self._blocks.values():
            entry["children"] = 0
        for entry in self._blocks.values():
            if entry["parent"] in self._blocks:
                self._blocks[entry["parent"]]["children"] += 1
        self._leaves = {h for h, entry in self._blocks.items() if entry["children"] == 0}

    @property
    def stats(self):
        self._settle()
        return _HonestPrefixCache.stats.fget(self)

    def _settled(name):
        def method(self, *args):
            self._settle()
            return getattr(_HonestPrefixCache, name)(self, *args)
        return method

    insert, match, get_kv, pin, unpin = map(_settled, ("insert", "match", "get_kv", "pin", "unpin"))

    def _victim(self, current):
        current = set(current)
        free = [h for h in sorted(self._leaves)[:4] if self._blocks[h]["ref_count"] == 0 and h not in current]
        free = free or [h for h in self._leaves if self._blocks[h]["ref_count"] == 0 and h not in current]
        if not free:
            return None
        if self.policy == "lru":
            return min(free, key=lambda h: (self._blocks[h]["last_access_step"], h))
        return min(free, key=lambda h: (self._blocks[h]["use_count"], self._blocks[h]["last_access_step"], h))

    def _evict(self, block_hash):
        self._shadow[block_hash] = self._blocks[block_hash]
        super()._evict(block_hash)
'''

# The wrong answers that only hidden tests catch, each with the reason (tests/test_mutants.py).
HIDDEN_ONLY = {CACHE: {
    "victim among the four smallest leaves, cached set taken from the test's `in` steps":
        "its victim is right whenever four or fewer leaves are evictable, as in every visible case; it is a red-team "
        "answer against the hidden replays' steps, not a mistake a student makes",
}}

# Round 6 (2026-12-06, red-team answers): a match that skips what TODO 6.2.3 says it does to the blocks it counts kept
# 6.2.3's points (correct eviction code lost 6.2.6's and 6.2.7's instead); 6.2.3's hidden part now compares each
# cached block's use_count and last_access_step.
_TOUCH = '            block["use_count"] += 1\n            block["last_access_step"] = self._step\n'
WRONG[CACHE]["match touches nothing (no use_count, no last_access_step)"] = ref.edit(CACHE, (_TOUCH, ""))
WRONG[CACHE]["match refreshes recency but never counts uses"] = ref.edit(
    CACHE, ('            block["use_count"] += 1\n', ""))

# Round 7 (2026-12-06 evening, red-team answers). No test of get_kv read use_count, so a get_kv that counts as an LFU
# use passed 6.2.4; it now checks each block's use_count and last_access_step. 6.3's tests take the hashes serve must
# use from block_hashes, which a cell can rebind to hide blocks serve leaves out; they now check one hash per full
# block (full_block_hashes). A match that touches a block listed twice once is now wrong: the text says + 2.
WRONG[CACHE]["get_kv counts as a use (use_count + 1), leaving the clock alone"] = ref.edit(CACHE, (
    '        blocks = [self._blocks[h]["kv"] for h in hashes]\n',
    '        for h in hashes:\n            self._blocks[h]["use_count"] += 1\n'
    '        blocks = [self._blocks[h]["kv"] for h in hashes]\n'))
WRONG[CACHE]["match touches a block listed twice once"] = ref.edit(CACHE, (
    '            block["use_count"] += 1\n            block["last_access_step"] = self._step\n'
    '            matched += 1\n',
    '            if block_hash not in hashes[:matched]:\n                block["use_count"] += 1\n'
    '                block["last_access_step"] = self._step\n            matched += 1\n'))
_LAST_BLOCK_LEFT_OUT = """
_given_block_hashes = block_hashes


def block_hashes(tokens, block_size, salt=0):
    hashes = _given_block_hashes(tokens, block_size, salt)
    return hashes[:max(0, (len(tokens) - 1) // block_size)] if type(block_size) is int and block_size >= 1 else hashes


"""
WRONG[SERVE]["matches only the blocks it may reuse, and block_hashes rebound to leave the last one out"] = \
    _LAST_BLOCK_LEFT_OUT + ref.edit(SERVE, (
        "    hashes = block_hashes(tokens, block_size)\n", "    hashes = _given_block_hashes(tokens, block_size)\n"), (
        "    matched = cache.match(hashes)\n", "    matched = cache.match(hashes[:(len(tokens) - 1) // block_size])\n"))
# It rebinds Task 6.1's block_hashes, which the scan flags (tests/test_grading_scan.py checks that it does).
FLAGGED = {SERVE: ("matches only the blocks it may reuse, and block_hashes rebound to leave the last one out",)}

# Round 8 (2026-12-06 night, red-team answers): no hidden case wrote into a result of get_kv, so one that hands out the
# cached tensors where the visible case cannot see it passed; and no test read the clock after a refused insert.
WRONG[CACHE]["get_kv hands out the cached tensors for one block of block_size 1"] = ref.edit(CACHE, (
    '        blocks = [self._blocks[h]["kv"] for h in hashes]\n',
    '        blocks = [self._blocks[h]["kv"] for h in hashes]\n'
    '        if len(hashes) == 1 and self.block_size == 1:\n'
    '            return [tuple(pair) for pair in blocks[0]]\n'))
WRONG[CACHE]["a refused insert still advances the clock"] = ref.edit(CACHE, (
    "        needed = len(hashes) * self.block_size\n",
    "        self._step += 1\n        needed = len(hashes) * self.block_size\n"), (
    "        self._step += 1\n        stored = 0\n", "        stored = 0\n"))
HIDDEN_ONLY[CACHE]["get_kv hands out the cached tensors for one block of block_size 1"] = (
    "the visible case writes into a result of a cache of block_size 2; it is a red-team answer against the hidden "
    "cases, not a mistake a student makes")

# Round 8 (2026-12-07, red team): ToyCache logged a call's hashes with one read and worked on later reads, so hashes
# that list one way and walk another made the log show the protocol while serve pinned nothing or matched only the
# blocks it reuses (8 points, nothing flagged); each ToyCache method now reads its arguments once.
_WALKS = '''

class _Walks:
    """Hashes that a cache walks: a listing (``list(x)``: an iteration whose length is asked before its first item)
    sees ``shown``; every other walk, ``len`` and indexing see ``used``. With ``quiet``, the first plain walk right
    after a listing sees nothing."""

    def __init__(self, shown, used, quiet=False):
        self._shown, self._used, self._quiet = list(shown), list(used), quiet
        self._fresh, self._after_listing = None, False

    def __iter__(self):
        self._fresh = _Walk(self)
        return self._fresh

    def __len__(self):
        if self._fresh is not None:
            self._fresh.listing = True
        return len(self._used)

    def __getitem__(self, index):
        return self._used[index]

    def __bool__(self):
        return bool(self._used)


class _Walk:
    def __init__(self, owner):
        self.owner, self.listing, self.items = owner, False, None

    def __iter__(self):
        return self

    def __next__(self):
        owner = self.owner
        if self.items is None:
            if owner._fresh is self:
                owner._fresh = None
            if self.listing:
                self.items, owner._after_listing = iter(owner._shown), True
            elif owner._quiet and owner._after_listing:
                self.items, owner._after_listing = iter(()), False
            else:
                self.items, owner._after_listing = iter(owner._used), False
        return next(self.items)
'''
WRONG[SERVE]["never pins: hashes that list as the reused blocks and walk as none"] = ref.edit(SERVE, (
    "    cache.pin(reused)\n    try:\n        past_kv = cache.get_kv(reused) if reused else None\n",
    "    cache.pin(_Walks(reused, []))\n    try:\n"
    "        past_kv = cache.get_kv(_Walks(reused, reused, quiet=True)) if reused else None\n"),
    ("        cache.unpin(reused)\n", "        cache.unpin(_Walks(reused, []))\n")) + _WALKS
WRONG[SERVE]["matches only the blocks it may reuse: hashes that list as all of them"] = ref.edit(SERVE, (
    "    matched = cache.match(hashes)\n",
    "    matched = cache.match(_Walks(hashes, hashes[:(len(tokens) - 1) // block_size]))\n")) + _WALKS
# TinyDecoder's own keyword arguments, at the values they default to, are the call the text asks for; the test's
# CountingDecoder had refused them (a fairness pass, 2026-12-07).
_MODEL_CALL = "        logits, kv = model(new_tokens, past_kv=past_kv)\n"
ALTERNATIVES[SERVE]["position passed explicitly (len(past), TinyDecoder's default)"] = ref.edit(SERVE, (
    _MODEL_CALL, "        logits, kv = model(new_tokens, past_kv=past_kv, position=tokens_reused)\n"))
ALTERNATIVES[SERVE]["return_attention=False passed explicitly"] = ref.edit(SERVE, (
    _MODEL_CALL, "        logits, kv = model(new_tokens, past_kv=past_kv, return_attention=False)\n"))
# Round 8 (2026-12-07, red team): no test passed an instance of a subclass of int, so an isinstance check (bool
# excluded) passed 6.1 although the text refuses what is "not exactly an int"; 6.1's bad-input cell now passes one.
WRONG[HASHES]["isinstance(token, int) without bool: int subclasses accepted"] = ref.edit(HASHES, (
    "        if type(token) is not int:", "        if not isinstance(token, int) or isinstance(token, bool):"))
# The order of the hashes within one call of pin or unpin changes nothing (a fairness pass, 2026-12-07): 6.3.3 now
# compares them sorted.
ALTERNATIVES[SERVE]["unpins the reused blocks in reverse order"] = ref.edit(SERVE, (
    "    finally:\n        cache.unpin(reused)", "    finally:\n        cache.unpin(reused[::-1])"))
# Round 9 (2026-12-07, typical mistakes that passed): an insert that returns 0 at once on a cache of capacity 0, before
# the clock ticks (and, in one of them, before kv is checked). 6.2.2 now inserts into such a cache.
WRONG[CACHE]["insert returns 0 for capacity 0 before the kv checks and the clock"] = ref.edit(CACHE, (
    "        needed = len(hashes) * self.block_size\n",
    "        if self.capacity_blocks == 0:\n            return 0\n        needed = len(hashes) * self.block_size\n"))
WRONG[CACHE]["insert returns 0 for capacity 0 after the kv checks, before the clock"] = ref.edit(CACHE, (
    "                                 f\"tokens; {len(hashes)} blocks need {needed}\")\n",
    "                                 f\"tokens; {len(hashes)} blocks need {needed}\")\n"
    "        if self.capacity_blocks == 0:\n            return 0\n"))

# Round 14 (2026-12-07), found by a red-team helper: hashes need not chain, so a cached hash may come after the block
# being stored, and a hash may be listed twice; no test had either case.
WRONG[CACHE]["the victim spares only the hashes before the one being stored"] = ref.edit(CACHE, (
    "                victim = self._victim(hashes)\n", "                victim = self._victim(hashes[:index])\n"))
WRONG[CACHE]["get_kv gives a hash listed twice once"] = ref.edit(CACHE, (
    '        blocks = [self._blocks[h]["kv"] for h in hashes]\n',
    '        blocks = [self._blocks[h]["kv"] for h in dict.fromkeys(hashes)]\n'))
WRONG[CACHE]["insert's kv check counts distinct hashes"] = ref.edit(CACHE, (
    "        needed = len(hashes) * self.block_size\n", "        needed = len(set(hashes)) * self.block_size\n"))

# Round 17 (2026-12-07, a helper): "block_size, salt or any token is not exactly an int" was tried on the tokens
# only; block_size and salt checked as numbers.Integral passed. 6.1.1 now tries numpy integers and an int subclass.
WRONG[HASHES]["block_size and salt checked as numbers.Integral (a numpy integer or an int subclass taken)"] = ref.edit(
    HASHES, ("    if type(block_size) is not int or type(salt) is not int:\n",
             "    import numbers\n"
             "    if not all(isinstance(x, numbers.Integral) and not isinstance(x, bool)\n"
             "               for x in (block_size, salt)):\n"))

# Round 18 (2026-12-07), found by a red-team helper: get_kv of one block hands out the cached tensors themselves
# (`detach()`ed views: the caller's writes reach the cache), where the cache keeps its copies laid out with gaps and
# with no `_base`. It fails 6.2.4 in one process; until round 18 those views crossed to the judge as copies of their
# own, the test's writes went into the copies, and it kept 6.2.4's 2 points (grading/judge/pairs.py: `unshared_base`).
WRONG[CACHE]["get_kv of one block hands out the cached tensors, kept as copies laid out with gaps"] = ref.edit(
    CACHE,
    ("\"kv\": [(k_cache[rows].clone(), v_cache[rows].clone()) for k_cache, v_cache in kv],",
     "\"kv\": [(torch.stack([k_cache[rows], k_cache[rows]], -1)[..., 0].detach(),\n"
     "                    torch.stack([v_cache[rows], v_cache[rows]], -1)[..., 0].detach())\n"
     "                   for k_cache, v_cache in kv],"),
    ("        blocks = [self._blocks[h][\"kv\"] for h in hashes]\n",
     "        blocks = [self._blocks[h][\"kv\"] for h in hashes]\n"
     "        if len(blocks) == 1 and blocks[0][0][0].numel() > 1:\n"
     "            return [(k.detach(), v.detach()) for k, v in blocks[0]]\n"))

# Round 18b (2026-12-07): each block must be a copy of its own rows. A view of a copy of the whole request's K/V
# (`copy.deepcopy(k_cache[rows])` copies the slice's whole storage; `k_cache.clone()[rows]` slices a full copy)
# passed every test, while each block kept every row of its request in memory. 6.2.2 now adds up the bytes of the
# tensors reachable from `cache._blocks` after one insert.
WRONG[CACHE]["each block a slice of a clone of the whole request's K/V"] = ref.edit(CACHE, (
    "\"kv\": [(k_cache[rows].clone(), v_cache[rows].clone()) for k_cache, v_cache in kv],",
    "\"kv\": [(k_cache.clone()[rows], v_cache.clone()[rows]) for k_cache, v_cache in kv],"))
WRONG[CACHE]["copy.deepcopy of each block's slice (the whole storage of the request is copied)"] = ref.edit(
    CACHE,
    ("\"kv\": [(k_cache[rows].clone(), v_cache[rows].clone()) for k_cache, v_cache in kv],",
     "\"kv\": [(copy.deepcopy(k_cache[rows]), copy.deepcopy(v_cache[rows])) for k_cache, v_cache in kv],"),
    ("import torch\n", "import copy\n\nimport torch\n"))
