"""Notebook 06's test code that several test cells share, written once here.

``make notebooks`` copies each definition that a test cell names in its ``# BEGIN SHARED`` line into that
cell (grading/authoring/shared_code.py), so every graded part still carries the code it runs. The imports below
are for the linter: each test cell imports what its copy uses.
"""

import torch

from course.model import TinyDecoder


def toy_kv(hashes, block_size):
    """One layer, one head, head_dim 2."""
    k_cache = torch.tensor([[h + r / 8, -h] for h in hashes for r in range(block_size)]).reshape(-1, 1, 2)
    return [(k_cache, k_cache + 0.5)]


def touches(entry):
    """[use_count, last_access_step] of a cached block's entry in ``cache._blocks``: a dict, or a record with those
    attributes (the task allows both)."""
    if isinstance(entry, dict):
        return [entry["use_count"], entry["last_access_step"]]
    return [entry.use_count, entry.last_access_step]


def evicts(cache, new, candidates, expected, why):
    """insert(new) into a full cache must evict exactly ``expected`` among ``candidates``."""
    before = [h for h in candidates if h in cache]
    cache.insert(new, toy_kv(new, cache.block_size))
    gone = [h for h in before if h not in cache]
    assert gone == expected, f"{why}: insert({new}) evicted {gone}; expected {expected}"


class _Oracle:
    """The contract, written as directly as possible: recompute every key from scratch."""

    def __init__(self, capacity, policy):
        self.capacity, self.policy = capacity, policy
        self.state = {}  # block_hash -> [parent, ref_count, use_count, last_access_step]
        self.clock = 0
        self.hits = self.misses = self.evictions = 0

    def leading(self, hashes):
        count = 0
        while count < len(hashes) and hashes[count] in self.state:
            count += 1
        return count

    def match(self, hashes):
        self.clock += 1
        count = self.leading(hashes)
        for h in hashes[:count]:
            self.state[h][2] += 1
            self.state[h][3] = self.clock
        self.hits += count
        self.misses += len(hashes) - count
        return count

    def insert(self, hashes):
        self.clock += 1
        stored = 0
        for i, h in enumerate(hashes):
            if h in self.state:
                continue
            while len(self.state) >= self.capacity:
                parents = {s[0] for s in self.state.values()}
                keys = []
                for x, s in self.state.items():
                    if s[1] == 0 and x not in parents and x not in hashes:
                        keys.append(((s[2], s[3], x) if self.policy == "lfu" else (s[3], x), x))
                if not keys:
                    return stored
                del self.state[sorted(keys)[0][1]]
                self.evictions += 1
            self.state[h] = [hashes[i - 1] if i else None, 0, 1, self.clock]
            stored += 1
        return stored


def _tree(rng, size):
    ids = rng.sample(range(1, 4000), size)
    parent = {}
    for i, node in enumerate(ids):
        parent[node] = None if i == 0 or rng.random() < 0.2 else ids[rng.randrange(i)]
    paths = {}
    for node in ids:
        path, x = [], node
        while x is not None:
            path.append(x)
            x = parent[x]
        paths[node] = path[::-1]
    return ids, paths


def full_block_hashes(block_hashes, tokens, block_size):
    """``block_hashes(tokens, block_size)`` as a list: Task 6.1's answer, which ``serve`` calls too, so that a check
    of serve's calls does not hang on 6.1's hash values (nor on 6.1's slips, such as a hash of the partial last
    block too); checked for what those checks rely on, at least one hash per full block (a later cell may rebind
    ``block_hashes`` to hide that ``serve`` leaves blocks out)."""
    hashes = list(block_hashes(list(tokens), block_size))
    full = len(tokens) // block_size
    if len(hashes) < full:
        raise AssertionError(
            f"block_hashes({len(tokens)} tokens, {block_size}) gave {len(hashes)} hash(es) where the tokens have {full} "
            f"full block(s): the checks of serve need block_hashes (Task 6.1) to give one hash per full block")
    return hashes


class ToyCache:
    """An unbounded cache that keeps PrefixCache's contract and records how serve calls it.

    What it holds and records has private names: the student's code can call its public methods (grading
    lends them), but not change its record or its pins by hand."""

    def __init__(self, block_size):
        self.block_size = block_size
        self._kv, self._refs, self._log = {}, {}, []
        self._fail_insert = False

    @staticmethod
    def _read(hashes, method):
        """The hashes of a call, read once (what the cache records is what it works on): a list or a tuple."""
        if type(hashes) not in (list, tuple):
            raise TypeError(f"the test's cache: {method} takes the hashes as a list or a tuple, as block_hashes returns "
                            f"them; got {type(hashes).__name__}")
        return list(hashes)

    def match(self, hashes):
        hashes = self._read(hashes, "match")
        self._log.append(("match", hashes))
        count = 0
        while count < len(hashes) and hashes[count] in self._kv:
            count += 1
        return count

    def pin(self, hashes):
        hashes = self._read(hashes, "pin")
        self._log.append(("pin", hashes))
        if any(h not in self._kv for h in hashes):
            raise KeyError("pin of a block that is not cached")
        for h in hashes:
            self._refs[h] = self._refs.get(h, 0) + 1

    def unpin(self, hashes):
        hashes = self._read(hashes, "unpin")
        self._log.append(("unpin", hashes))
        wanted = {}  # How many times each hash is listed, counted in one pass (its cost grows with the list alone).
        for h in hashes:
            wanted[h] = wanted.get(h, 0) + 1
        if any(self._refs.get(h, 0) < count for h, count in wanted.items()):
            raise ValueError("unpin of a block that is not pinned")
        for h in hashes:
            self._refs[h] -= 1

    def get_kv(self, hashes):
        hashes = self._read(hashes, "get_kv")
        self._log.append(("get_kv", hashes))
        if any(self._refs.get(h, 0) < 1 for h in hashes):
            raise AssertionError("serve called get_kv on a block it had not pinned (pin the reused blocks first)")
        if not hashes:
            return []
        return [tuple(torch.cat([self._kv[h][layer][side] for h in hashes]) for side in (0, 1))
                for layer in range(len(self._kv[hashes[0]]))]

    def insert(self, hashes, kv):
        hashes, kv = self._read(hashes, "insert"), [tuple(layer) for layer in kv]
        self._log.append(("insert", hashes, [k.shape[0] for k, _ in kv]))
        if self._fail_insert:
            raise RuntimeError("insert failed (the test's cache raises on purpose)")
        for i, h in enumerate(hashes):
            if h not in self._kv:
                rows = slice(i * self.block_size, (i + 1) * self.block_size)
                self._kv[h] = [(k[rows].clone(), v[rows].clone()) for k, v in kv]
        return len(hashes)

    def _calls(self, name=None):
        """The calls since the last look (of one method, or all), without those on an empty list
        (serve may make them or not), as (method, hashes), the hashes of pin and unpin sorted (their order within
        one call changes nothing); the log starts again."""
        calls = [(entry[0], sorted(entry[1]) if entry[0] in ("pin", "unpin") else entry[1])
                 for entry in self._log if entry[1] and name in (None, entry[0])]
        self._log.clear()
        return calls

    def pinned(self):
        return sorted(h for h, count in self._refs.items() if count)


def _last_answer(cache, steps):
    """One replay of ``steps``, then ``len(cache)``: the answer of the last step (None when there is none), and the
    replay's results, which give ``len(cache)`` next."""
    from course.checks import replay

    results = replay(cache, [*steps, ("len", ())])
    answer = None
    for _ in steps:
        answer = next(results)
    return answer, results


class CountingDecoder(TinyDecoder):
    """A TinyDecoder that records every call as (new tokens, past tokens); every test of serve gives serve one, so
    that the model's class tells serve nothing about which test runs."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._calls = []  # Private: the student's code, which gets the model, cannot rewrite the record.
        self._dtypes = []  # The dtype of the tokens of each call, as a string.

    def forward(self, tokens, past_kv=None, **options):
        # TinyDecoder's keyword arguments (position, return_attention) pass through, as the text's model takes them.
        self._calls.append((len(tokens), 0 if past_kv is None else int(past_kv[0][0].shape[0])))
        self._dtypes.append(str(tokens.dtype) if isinstance(tokens, torch.Tensor) else type(tokens).__name__)
        return super().forward(tokens, past_kv, **options)
