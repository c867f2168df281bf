"""Notebook 02's test code that several test cells share, written once here.

``make notebooks`` copies each definition that a test cell names in its ``# BEGIN SHARED`` line into that
cell (grading/authoring/shared_code.py), so every graded part still carries the code it runs. The imports below
are for the linter: each test cell imports what its copy uses.
"""

from types import SimpleNamespace

import torch

from course.checks import assert_plain_equal, check_type

# The notebook's own class (task 2.3's solution cell): the test cells find it in the notebook's namespace.
SequenceKVCache = NotImplemented


def ids(seq):
    return [block.block_id for block in seq.block_table]


def by_hand(manager, seq_id, num_tokens):
    """A sequence built without the manager's methods: blocks from manager.allocator, counters 0, registered."""
    size = manager.block_size
    blocks = manager.allocator.allocate_n(-(-num_tokens // size))
    for j, block in enumerate(blocks):
        block.filled = min(size, num_tokens - j * size)
    seq = SequenceKVCache(seq_id, blocks, num_tokens)
    manager.sequences[seq_id] = seq
    return seq


def shared_by_hand(manager, src, seq_id):
    """A second owner of every block of src, built without fork: each block's ref_count + 1, counters 0."""
    for block in src.block_table:
        block.ref_count += 1
    seq = SequenceKVCache(seq_id, list(src.block_table), src.num_tokens)
    manager.sequences[seq_id] = seq
    return seq


def state(manager, seq):
    """What a failed call must leave as it was."""
    return [ids(seq), [block.filled for block in seq.block_table], [block.ref_count for block in seq.block_table],
            seq.num_tokens, seq.last_access_step, seq.use_count, manager.step, manager.allocator.num_free,
            sorted(manager.sequences)]


class Model:
    """A second implementation of the contract: dicts of block ids, no KVBlock objects."""

    def __init__(self, num_blocks, size):
        self.num_blocks, self.size = num_blocks, size
        self.free, self.ref, self.fill = set(range(num_blocks)), {}, {}
        self.table, self.tokens, self.last, self.uses, self.step = {}, {}, {}, {}, 0

    def take(self, k):
        if k > len(self.free):
            return None
        got = sorted(self.free)[:k]
        for i in got:
            self.free.remove(i)
            self.ref[i], self.fill[i] = 1, 0
        return got

    def drop(self, i):
        self.ref[i] -= 1
        if self.ref[i]:
            return 0
        del self.ref[i], self.fill[i]
        self.free.add(i)
        return 1

    def access(self, sid, first=False):
        self.step += 1
        self.last[sid] = self.step
        self.uses[sid] = 1 if first else self.uses[sid] + 1

    def register(self, sid, n, access=False):
        got = self.take(-(-n // self.size))
        if got is None:
            return False
        for j, i in enumerate(got):
            self.fill[i] = min(self.size, n - j * self.size)
        self.table[sid], self.tokens[sid], self.last[sid], self.uses[sid] = got, n, 0, 0
        if access:
            self.access(sid, first=True)
        return True

    def append(self, sid, n):
        table = self.table[sid]
        room = self.size - self.fill[table[-1]] if table else 0
        cow = n > 0 and room > 0 and self.ref[table[-1]] > 1
        overflow = max(0, n - room)
        got = self.take(int(cow) + -(-overflow // self.size))
        if got is None:
            return False
        if cow:
            new = got.pop(0)
            self.fill[new] = self.fill[table[-1]]
            self.drop(table[-1])
            table[-1] = new
        if table and room:
            self.fill[table[-1]] += min(room, n)
        for i in got:
            self.fill[i] = min(self.size, overflow)
            overflow -= self.fill[i]
            table.append(i)
        self.tokens[sid] += n
        self.access(sid)
        return True

    def share(self, sid, child, access=False):
        for i in self.table[sid]:
            self.ref[i] += 1
        self.table[child], self.tokens[child] = list(self.table[sid]), self.tokens[sid]
        self.last[child], self.uses[child] = 0, 0
        if access:
            self.access(child, first=True)

    def release(self, sid):
        freed = sum(self.drop(i) for i in self.table[sid])
        for store in (self.table, self.tokens, self.last, self.uses):
            del store[sid]
        return freed

    def summary(self):
        used = self.num_blocks - len(self.free)
        fragmentation = 1.0 - sum(self.fill.values()) / (used * self.size) if used else 0.0
        return {"total_blocks": self.num_blocks, "used_blocks": used, "free_blocks": len(self.free),
                "utilization": used / self.num_blocks, "fragmentation": fragmentation,
                "active_sequences": len(self.table)}


def compare(manager, model, where, summary=False):
    from course.checks import replay

    assert_plain_equal(sorted(manager.sequences), sorted(model.table), f"the ids in sequences {where}", reveal=False)
    assert_plain_equal(manager.step, model.step, f"step {where}", reveal=False)
    sequences = [manager.sequences[sid] for sid in model.table]
    # Each table and block id is read once, so that every check below sees what the first read saw.
    tables = [list(seq.block_table) for seq in sequences]
    block_ids = [[block.block_id for block in table] for table in tables]
    # num_free, then the allocator's own blocks for the ids of every sequence, asked in one replay.
    owned = replay(manager.allocator, [("num_free", None)]
                   + [("get_block", (block_id,)) for table_ids in block_ids for block_id in table_ids])
    assert_plain_equal(next(owned), len(model.free), f"allocator.num_free {where}", reveal=False)
    for sid, seq, table, table_ids in zip(model.table, sequences, tables, block_ids):
        got = [table_ids, seq.num_tokens, seq.last_access_step, seq.use_count]
        want = [model.table[sid], model.tokens[sid], model.last[sid], model.uses[sid]]
        assert_plain_equal(got, want, f"[block ids, num_tokens, last_access_step, use_count] of {sid!r} {where}", reveal=False)
        for block, block_id in zip(table, table_ids):
            assert block is next(owned), f"{sid!r} holds a block object that is not the allocator's {where}"
            assert_plain_equal([block.filled, block.ref_count], [model.fill[block_id], model.ref[block_id]],
                               f"[filled, ref_count] of block {block_id} {where}", reveal=False)
    if summary:
        assert_plain_equal(manager.summary(), model.summary(), f"summary() {where}", reveal=False)


def stand_in_pool(num_blocks, block_size, num_heads, head_dim, device=None, dtype=torch.float32):
    """Two zero tensors laid out like PagedKVPool's, so that this test does not depend on Task 2.5."""
    shape = (num_blocks, block_size, num_heads, head_dim)
    return SimpleNamespace(num_blocks=num_blocks, block_size=block_size, num_heads=num_heads, head_dim=head_dim,
                           k_cache=torch.zeros(shape, dtype=dtype, device=device),
                           v_cache=torch.zeros(shape, dtype=dtype, device=device))


def slots_of(pool, seq, start, count):
    """The slots of positions start .. start + count - 1 of seq, computed here from its block table."""
    size, table = pool.block_size, ids(seq)
    return torch.tensor([table[p // size] * size + p % size for p in range(start, start + count)], dtype=torch.int64,
                        device=pool.k_cache.device)


def write_rows(pool, seq, start, k, v):
    """Write k, v at positions start .. of seq straight into the pool (this test's own writer)."""
    index = slots_of(pool, seq, start, k.shape[0])
    pool.k_cache.view(-1, pool.num_heads, pool.head_dim)[index] = k
    pool.v_cache.view(-1, pool.num_heads, pool.head_dim)[index] = v


def read_rows(pool, seq):
    """seq's keys and values in token order, read straight from the pool (this test's own reader)."""
    index = slots_of(pool, seq, 0, seq.num_tokens)
    return (pool.k_cache.view(-1, pool.num_heads, pool.head_dim)[index],
            pool.v_cache.view(-1, pool.num_heads, pool.head_dim)[index])


def check_rows(got, want, name, seq, what, reveal=True, known=None):
    """Fail naming the sequence, the first wrong row (its token, logical and physical block) and the entry.

    ``known`` marks the rows whose contents the test knows (None: all of them)."""
    check_type(got, torch.Tensor, f"{name} of {seq.seq_id!r} {what}")
    for prop in ("dtype", "device", "shape"):
        if getattr(got, prop) != getattr(want, prop):
            detail = f"; expected {getattr(want, prop)}" if reveal else ", which is wrong"
            raise AssertionError(f"{name} of {seq.seq_id!r} {what} has {prop} {getattr(got, prop)}{detail}")
    got_rows, want_rows = got.detach().cpu(), want.detach().cpu()
    differs = (got_rows != want_rows).flatten(1).any(dim=1)
    if known is not None:
        differs &= known.cpu()
    if bool(differs.any()):
        size, table, word = seq.block_table[0].capacity, ids(seq), "key" if name == "K" else "value"
        t = int(torch.nonzero(differs)[0, 0])
        entry = tuple([t] + [int(i) for i in torch.nonzero(got_rows[t] != want_rows[t])[0]])
        found = f"{got_rows[entry].item()!r}" + (f" where token {t}'s {word} has {want_rows[entry].item()!r}" if reveal else "")
        raise AssertionError(
            f"{what}: row {t} of {name} of sequence {seq.seq_id!r} (token {t}, in logical block {t // size} = physical block "
            f"{table[t // size]}, offset {t % size}) is not token {t}'s {word}: entry {list(entry)} is {found} "
            f"({int(differs.sum())} of {len(differs)} rows differ)")


class SharedBlocks:
    """This test's own account of the blocks behind each sequence and which sequences share them, kept from the
    test's own calls: whether an append needs more blocks than are free is the test's to say, never read from the
    student's blocks (whose free_slots or ref_count could say whatever makes the test expect an error)."""

    def __init__(self, num_blocks, block_size):
        self.num_blocks, self.block_size, self.made = num_blocks, block_size, 0
        self.tables, self.tokens = {}, {}  # Per sequence: its blocks (this account's own ids), its number of tokens.

    def _new(self, count):
        self.made += count
        return list(range(self.made - count, self.made))

    @property
    def num_free(self):
        return self.num_blocks - len({block for table in self.tables.values() for block in table})

    def fits(self, num_tokens):
        return -(-num_tokens // self.block_size) <= self.num_free

    def allocate(self, seq_id, num_tokens):
        self.tables[seq_id], self.tokens[seq_id] = self._new(-(-num_tokens // self.block_size)), num_tokens

    def fork(self, seq_id, child):
        self.tables[child], self.tokens[child] = list(self.tables[seq_id]), self.tokens[seq_id]

    def _copy_and_new(self, seq_id, num_tokens):
        """(whether the last block is copied first, how many new blocks follow) for an append of num_tokens."""
        table = self.tables[seq_id]
        room = len(table) * self.block_size - self.tokens[seq_id]
        shared = bool(table) and any(table[-1] in other for key, other in self.tables.items() if key != seq_id)
        return num_tokens > 0 and room > 0 and shared, -(-max(0, num_tokens - room) // self.block_size)

    def need(self, seq_id, num_tokens):
        copy, new = self._copy_and_new(seq_id, num_tokens)
        return int(copy) + new

    def append(self, seq_id, num_tokens):
        copy, new = self._copy_and_new(seq_id, num_tokens)
        if copy:
            self.tables[seq_id][-1] = self._new(1)[0]
        self.tables[seq_id] += self._new(new)
        self.tokens[seq_id] += num_tokens

    def release(self, seq_id):
        del self.tables[seq_id], self.tokens[seq_id]
