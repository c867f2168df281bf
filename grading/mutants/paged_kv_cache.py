"""Wrong and alternative answers for notebook 02 (see grading/mutants/__init__.py).

Small functions are written out in full. The large classes (BlockAllocator, PagedKVCacheManager,
TensorPagedKVCacheManager) are written as edits of the notebook's own reference solution: each
wrong answer changes exactly the lines that make the mistake, so it stays a whole, otherwise
correct class when the reference changes. An edit whose text is no longer in the reference raises
at import, so a stale mutant fails loudly instead of silently testing nothing.
"""

from __future__ import annotations

from grading.reference import Reference

_REFERENCE = Reference("02_paged_kv_cache")


def _edit(grade_id: str, *edits: tuple[str, str]) -> str:
    """Return the reference solution of ``grade_id`` with each (old, new) edit applied once."""
    return _REFERENCE.edit(grade_id, *edits)


ALLOC = "task2_2_BlockAllocator"
MANAGER = "task2_4_PagedKVCacheManager"
TENSOR_MANAGER = "task2_11_TensorPagedKVCacheManager"

WRONG = {
    "task2_1_KVBlock": {
        "is_full compares with > (a full block never counts as full)": '''
from dataclasses import dataclass

@dataclass
class KVBlock:
    """A block."""
    block_id: int
    capacity: int
    filled: int = 0
    ref_count: int = 0

    @property
    def is_full(self):
        return self.filled > self.capacity

    @property
    def free_slots(self):
        return self.capacity - self.filled
''',
        "free_slots is a method, not a property": '''
from dataclasses import dataclass

@dataclass
class KVBlock:
    """A block."""
    block_id: int
    capacity: int
    filled: int = 0
    ref_count: int = 0

    @property
    def is_full(self):
        return self.filled == self.capacity

    def free_slots(self):
        return self.capacity - self.filled
''',
        "ref_count starts at 1": '''
from dataclasses import dataclass

@dataclass
class KVBlock:
    """A block."""
    block_id: int
    capacity: int
    filled: int = 0
    ref_count: int = 1

    @property
    def is_full(self):
        return self.filled == self.capacity

    @property
    def free_slots(self):
        return self.capacity - self.filled
''',
        "free_slots computed once in __post_init__ (goes stale)": '''
from dataclasses import dataclass, field

@dataclass
class KVBlock:
    """A block."""
    block_id: int
    capacity: int
    filled: int = 0
    ref_count: int = 0

    def __post_init__(self):
        self._free = self.capacity - self.filled

    @property
    def is_full(self):
        return self._free == 0

    @property
    def free_slots(self):
        return self._free
''',
        "fields in another order (capacity first)": '''
from dataclasses import dataclass

@dataclass
class KVBlock:
    """A block."""
    capacity: int
    block_id: int
    filled: int = 0
    ref_count: int = 0

    @property
    def is_full(self):
        return self.filled == self.capacity

    @property
    def free_slots(self):
        return self.capacity - self.filled
''',
    },
    ALLOC: {
        "allocate_n keeps the blocks it got before running out (no rollback)": _edit(ALLOC, (
            '''        if n > len(self._free_ids):
            raise RuntimeError(f"out of blocks: asked for {n}, only {len(self._free_ids)} free")
        return [self.allocate() for _ in range(n)]''',
            '''        blocks = []
        for _ in range(n):
            block = self.allocate()
            if block is None:
                raise RuntimeError(f"out of blocks: asked for {n}, only {len(blocks)} free")
            blocks.append(block)
        return blocks''')),
        "free does not detect a double free": _edit(ALLOC, (
            '''        if block.ref_count < 1:
            raise ValueError(f"block {block.block_id} is already free")
        block.ref_count -= 1
        if block.ref_count == 0:''',
            '''        block.ref_count -= 1
        if block.ref_count <= 0:''')),
        "free returns a shared block to the pool at once (ignores ref_count)": _edit(ALLOC, (
            '''        block.ref_count -= 1
        if block.ref_count == 0:''',
            '''        block.ref_count = 0
        if True:''')),
        "allocate takes the highest free id": _edit(ALLOC, (
            "block = self._blocks[heapq.heappop(self._free_ids)]",
            "self._free_ids.sort()\n        block = self._blocks[self._free_ids.pop()]")),
        "fragmentation over all blocks, not the used ones": _edit(ALLOC, (
            "return 1.0 - sum(block.filled for block in used) / (len(used) * self.block_size)",
            "return 1.0 - sum(block.filled for block in used) / (self.num_blocks * self.block_size)")),
        "utilization counts the free blocks": _edit(ALLOC, (
            "return self.num_used / self.num_blocks", "return self.num_free / self.num_blocks")),
        "no check of the sizes": _edit(ALLOC, (
            "if num_blocks < 1 or block_size < 1:", "if False:")),
    },
    "task2_3_SequenceKVCache": {
        "a plain class with a shared mutable default list": '''
class SequenceKVCache:
    """A sequence."""

    def __init__(self, seq_id, block_table=[], num_tokens=0, last_access_step=0, use_count=0):
        self.seq_id = seq_id
        self.block_table = block_table
        self.num_tokens = num_tokens
        self.last_access_step = last_access_step
        self.use_count = use_count

    def num_blocks(self):
        return len(self.block_table)
''',
        "num_blocks counts tokens / 16 instead of the table": '''
from dataclasses import dataclass, field

@dataclass
class SequenceKVCache:
    """A sequence."""
    seq_id: str
    block_table: list = field(default_factory=list)
    num_tokens: int = 0
    last_access_step: int = 0
    use_count: int = 0

    def num_blocks(self):
        return -(-self.num_tokens // 16)
''',
        "use_count starts at 1": '''
from dataclasses import dataclass, field

@dataclass
class SequenceKVCache:
    """A sequence."""
    seq_id: str
    block_table: list = field(default_factory=list)
    num_tokens: int = 0
    last_access_step: int = 0
    use_count: int = 1

    def num_blocks(self):
        return len(self.block_table)
''',
        "num_blocks is a property, not a method": '''
from dataclasses import dataclass, field

@dataclass
class SequenceKVCache:
    """A sequence."""
    seq_id: str
    block_table: list = field(default_factory=list)
    num_tokens: int = 0
    last_access_step: int = 0
    use_count: int = 0

    @property
    def num_blocks(self):
        return len(self.block_table)
''',
    },
    MANAGER: {
        "append into a shared block without copy-on-write": _edit(MANAGER, (
            "needs_copy = num_new_tokens > 0 and room > 0 and last.ref_count > 1",
            "needs_copy = False")),
        "ceil off by one (num_tokens // block_size + 1 blocks)": _edit(MANAGER, (
            "blocks = self.allocator.allocate_n(-(-num_tokens // self.block_size))",
            "blocks = self.allocator.allocate_n(num_tokens // self.block_size + 1)")),
        "fork without ref counts": _edit(MANAGER, (
            '''        for block in src.block_table:
            block.ref_count += 1
        self._step += 1
        child''',
            '''        self._step += 1
        child''')),
        "append takes blocks one at a time (no rollback when they run out)": _edit(MANAGER, (
            '''        blocks = self.allocator.allocate_n(int(needs_copy) + new_blocks)''',
            '''        blocks = []
        for _ in range(int(needs_copy) + new_blocks):
            block = self.allocator.allocate()
            if block is None:
                raise RuntimeError("out of blocks")
            blocks.append(block)''')),
        "the clock moves before the blocks are taken (and stays moved on failure)": _edit(MANAGER, (
            '''            raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
        blocks''',
            '''            raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
        self._step += 1
        blocks'''), (
            "        self._step += 1\n        seq = SequenceKVCache(", "        seq = SequenceKVCache(")),
        "release returns the number of blocks in the table, not the ones freed": _edit(MANAGER, (
            "freed += block.ref_count == 0", "freed += 1")),
        "touch does not count as a use": _edit(MANAGER, (
            'manager")\n        self._step += 1\n        seq.last_access_step = self._step\n        seq.use_count += 1',
            'manager")\n        self._step += 1\n        seq.last_access_step = self._step')),
        "the child copies the parent's use_count": _edit(MANAGER, (
            "last_access_step=self._step, use_count=1)\n        self.sequences[new_seq_id] = child",
            "last_access_step=self._step, use_count=src.use_count)\n        self.sequences[new_seq_id] = child")),
        "the copy-on-write copy starts empty (filled 0)": _edit(MANAGER, (
            "            copy.filled = last.filled\n", "")),
    },
    "task2_5_PagedKVPool": {
        "k_cache and v_cache are the same tensor": '''
class PagedKVPool:
    """A pool."""

    def __init__(self, num_blocks, block_size, num_heads, head_dim, device=None, dtype=torch.float32):
        if min(num_blocks, block_size, num_heads, head_dim) < 1:
            raise ValueError("sizes must be >= 1")
        self.num_blocks, self.block_size, self.num_heads, self.head_dim = num_blocks, block_size, num_heads, head_dim
        self.k_cache = self.v_cache = torch.zeros(num_blocks, block_size, num_heads, head_dim, dtype=dtype, device=device)
''',
        "heads before slots: [num_blocks, num_heads, block_size, head_dim]": '''
class PagedKVPool:
    """A pool."""

    def __init__(self, num_blocks, block_size, num_heads, head_dim, device=None, dtype=torch.float32):
        if min(num_blocks, block_size, num_heads, head_dim) < 1:
            raise ValueError("sizes must be >= 1")
        self.num_blocks, self.block_size, self.num_heads, self.head_dim = num_blocks, block_size, num_heads, head_dim
        self.k_cache = torch.zeros(num_blocks, num_heads, block_size, head_dim, dtype=dtype, device=device)
        self.v_cache = torch.zeros(num_blocks, num_heads, block_size, head_dim, dtype=dtype, device=device)
''',
        "ignores dtype": '''
class PagedKVPool:
    """A pool."""

    def __init__(self, num_blocks, block_size, num_heads, head_dim, device=None, dtype=torch.float32):
        if min(num_blocks, block_size, num_heads, head_dim) < 1:
            raise ValueError("sizes must be >= 1")
        self.num_blocks, self.block_size, self.num_heads, self.head_dim = num_blocks, block_size, num_heads, head_dim
        self.k_cache = torch.zeros(num_blocks, block_size, num_heads, head_dim, device=device)
        self.v_cache = torch.zeros(num_blocks, block_size, num_heads, head_dim, device=device)
''',
        "no check of the sizes": '''
class PagedKVPool:
    """A pool."""

    def __init__(self, num_blocks, block_size, num_heads, head_dim, device=None, dtype=torch.float32):
        self.num_blocks, self.block_size, self.num_heads, self.head_dim = num_blocks, block_size, num_heads, head_dim
        self.k_cache = torch.zeros(num_blocks, block_size, num_heads, head_dim, dtype=dtype, device=device)
        self.v_cache = torch.zeros(num_blocks, block_size, num_heads, head_dim, dtype=dtype, device=device)
''',
    },
    "task2_6_slot_mapping": {
        "ignores the block table after its first block (assumes contiguous blocks)": '''
def slot_mapping(block_ids, start, count, block_size):
    """Slots."""
    if start < 0 or count < 0 or block_size < 1 or start + count > len(block_ids) * block_size:
        raise ValueError("bad range")
    positions = torch.arange(start, start + count, device=block_ids.device)
    return block_ids[0].long() * block_size + positions
''',
        "forgets to multiply the block id by block_size": '''
def slot_mapping(block_ids, start, count, block_size):
    """Slots."""
    if start < 0 or count < 0 or block_size < 1 or start + count > len(block_ids) * block_size:
        raise ValueError("bad range")
    positions = torch.arange(start, start + count, device=block_ids.device)
    return block_ids.long()[positions // block_size] + positions % block_size
''',
        "ignores start (positions from 0)": '''
def slot_mapping(block_ids, start, count, block_size):
    """Slots."""
    if start < 0 or count < 0 or block_size < 1 or start + count > len(block_ids) * block_size:
        raise ValueError("bad range")
    positions = torch.arange(count, device=block_ids.device)
    return block_ids.long()[positions // block_size] * block_size + positions % block_size
''',
        "no range check (IndexError past the table)": '''
def slot_mapping(block_ids, start, count, block_size):
    """Slots."""
    positions = torch.arange(start, start + count, device=block_ids.device)
    return block_ids.long()[positions // block_size] * block_size + positions % block_size
''',
        "a Python loop over positions": '''
def slot_mapping(block_ids, start, count, block_size):
    """Slots."""
    if start < 0 or count < 0 or block_size < 1 or start + count > len(block_ids) * block_size:
        raise ValueError("bad range")
    slots = [int(block_ids[p // block_size]) * block_size + p % block_size for p in range(start, start + count)]
    return torch.tensor(slots, dtype=torch.int64, device=block_ids.device)
''',
    },
    "task2_7_write_kv": {
        "out-of-place index_copy (the result is thrown away)": '''
def write_kv(pool, slots, k, v):
    """Write."""
    shape = (len(slots), pool.num_heads, pool.head_dim)
    if tuple(k.shape) != shape or tuple(v.shape) != shape:
        raise ValueError("bad shape")
    pool.k_cache.view(-1, pool.num_heads, pool.head_dim).index_copy(0, slots, k)
    pool.v_cache.view(-1, pool.num_heads, pool.head_dim).index_copy(0, slots, v)
''',
        "writes the keys into v_cache too": '''
def write_kv(pool, slots, k, v):
    """Write."""
    shape = (len(slots), pool.num_heads, pool.head_dim)
    if tuple(k.shape) != shape or tuple(v.shape) != shape:
        raise ValueError("bad shape")
    pool.k_cache.view(-1, pool.num_heads, pool.head_dim)[slots] = k
    pool.v_cache.view(-1, pool.num_heads, pool.head_dim)[slots] = k
''',
        "no shape check": '''
def write_kv(pool, slots, k, v):
    """Write."""
    pool.k_cache.view(-1, pool.num_heads, pool.head_dim)[slots] = k
    pool.v_cache.view(-1, pool.num_heads, pool.head_dim)[slots] = v
''',
        "a Python loop over tokens": '''
def write_kv(pool, slots, k, v):
    """Write."""
    shape = (len(slots), pool.num_heads, pool.head_dim)
    if tuple(k.shape) != shape or tuple(v.shape) != shape:
        raise ValueError("bad shape")
    for i in range(len(slots)):
        s = int(slots[i])
        pool.k_cache[s // pool.block_size, s % pool.block_size] = k[i]
        pool.v_cache[s // pool.block_size, s % pool.block_size] = v[i]
''',
    },
    "task2_8_gather_kv": {
        "gathers in block order (sorted ids) instead of token order": '''
def gather_kv(pool, block_ids, num_tokens):
    """Gather."""
    if not 0 <= num_tokens <= len(block_ids) * pool.block_size:
        raise ValueError("bad num_tokens")
    ordered = torch.sort(block_ids.long()).values
    k = pool.k_cache[ordered].reshape(-1, pool.num_heads, pool.head_dim)[:num_tokens]
    v = pool.v_cache[ordered].reshape(-1, pool.num_heads, pool.head_dim)[:num_tokens]
    return k, v
''',
        "returns every slot of the blocks (no cut at num_tokens)": '''
def gather_kv(pool, block_ids, num_tokens):
    """Gather."""
    if not 0 <= num_tokens <= len(block_ids) * pool.block_size:
        raise ValueError("bad num_tokens")
    k = pool.k_cache[block_ids.long()].reshape(-1, pool.num_heads, pool.head_dim)
    v = pool.v_cache[block_ids.long()].reshape(-1, pool.num_heads, pool.head_dim)
    return k, v
''',
        "values gathered from k_cache": '''
def gather_kv(pool, block_ids, num_tokens):
    """Gather."""
    if not 0 <= num_tokens <= len(block_ids) * pool.block_size:
        raise ValueError("bad num_tokens")
    k = pool.k_cache[block_ids.long()].reshape(-1, pool.num_heads, pool.head_dim)[:num_tokens]
    return k, k.clone()
''',
        "ignores the block table (the first num_tokens slots of the pool)": '''
def gather_kv(pool, block_ids, num_tokens):
    """Gather."""
    if not 0 <= num_tokens <= len(block_ids) * pool.block_size:
        raise ValueError("bad num_tokens")
    k = pool.k_cache.reshape(-1, pool.num_heads, pool.head_dim)[:num_tokens].clone()
    v = pool.v_cache.reshape(-1, pool.num_heads, pool.head_dim)[:num_tokens].clone()
    return k, v
''',
        "returns a list, not a tuple": '''
def gather_kv(pool, block_ids, num_tokens):
    """Gather."""
    if not 0 <= num_tokens <= len(block_ids) * pool.block_size:
        raise ValueError("bad num_tokens")
    return [pool.k_cache[block_ids.long()].flatten(0, 1)[:num_tokens], pool.v_cache[block_ids.long()].flatten(0, 1)[:num_tokens]]
''',
    },
    "task2_9_copy_block": {
        "copies only the keys": '''
def copy_block(pool, src_block, dst_block):
    """Copy."""
    if not (0 <= src_block < pool.num_blocks and 0 <= dst_block < pool.num_blocks):
        raise ValueError("bad block id")
    pool.k_cache[dst_block] = pool.k_cache[src_block]
''',
        "copies in the wrong direction": '''
def copy_block(pool, src_block, dst_block):
    """Copy."""
    if not (0 <= src_block < pool.num_blocks and 0 <= dst_block < pool.num_blocks):
        raise ValueError("bad block id")
    pool.k_cache[src_block] = pool.k_cache[dst_block]
    pool.v_cache[src_block] = pool.v_cache[dst_block]
''',
        "rebinds a local name (nothing is copied)": '''
def copy_block(pool, src_block, dst_block):
    """Copy."""
    if not (0 <= src_block < pool.num_blocks and 0 <= dst_block < pool.num_blocks):
        raise ValueError("bad block id")
    target_k, target_v = pool.k_cache[dst_block], pool.v_cache[dst_block]
    target_k = pool.k_cache[src_block].clone()
    target_v = pool.v_cache[src_block].clone()
''',
        "no range check (a negative id wraps around)": '''
def copy_block(pool, src_block, dst_block):
    """Copy."""
    pool.k_cache[dst_block] = pool.k_cache[src_block]
    pool.v_cache[dst_block] = pool.v_cache[src_block]
''',
    },
    "task2_10_paged_attention": {
        "attention without the scale": '''
def paged_attention(q, pool, block_ids, num_tokens, scale=None):
    """Attend."""
    if tuple(q.shape) != (pool.num_heads, pool.head_dim) or not 1 <= num_tokens <= len(block_ids) * pool.block_size:
        raise ValueError("bad input")
    keys = pool.k_cache[block_ids.long()].flatten(0, 1)[:num_tokens]
    values = pool.v_cache[block_ids.long()].flatten(0, 1)[:num_tokens]
    weights = torch.softmax(torch.einsum("hd,thd->ht", q, keys), dim=-1)
    return torch.einsum("ht,thd->hd", weights, values)
''',
        "softmax over the heads instead of the tokens": '''
import math

def paged_attention(q, pool, block_ids, num_tokens, scale=None):
    """Attend."""
    if tuple(q.shape) != (pool.num_heads, pool.head_dim) or not 1 <= num_tokens <= len(block_ids) * pool.block_size:
        raise ValueError("bad input")
    scale = 1 / math.sqrt(pool.head_dim) if scale is None else scale
    keys = pool.k_cache[block_ids.long()].flatten(0, 1)[:num_tokens]
    values = pool.v_cache[block_ids.long()].flatten(0, 1)[:num_tokens]
    weights = torch.softmax(torch.einsum("hd,thd->ht", q, keys) * scale, dim=0)
    return torch.einsum("ht,thd->hd", weights, values)
''',
        "attends to every slot of the blocks (stale slots after num_tokens)": '''
import math

def paged_attention(q, pool, block_ids, num_tokens, scale=None):
    """Attend."""
    if tuple(q.shape) != (pool.num_heads, pool.head_dim) or not 1 <= num_tokens <= len(block_ids) * pool.block_size:
        raise ValueError("bad input")
    scale = 1 / math.sqrt(pool.head_dim) if scale is None else scale
    keys = pool.k_cache[block_ids.long()].flatten(0, 1)
    values = pool.v_cache[block_ids.long()].flatten(0, 1)
    weights = torch.softmax(torch.einsum("hd,thd->ht", q, keys) * scale, dim=-1)
    return torch.einsum("ht,thd->hd", weights, values)
''',
        "scale 1 / head_dim instead of 1 / sqrt(head_dim)": '''
def paged_attention(q, pool, block_ids, num_tokens, scale=None):
    """Attend."""
    if tuple(q.shape) != (pool.num_heads, pool.head_dim) or not 1 <= num_tokens <= len(block_ids) * pool.block_size:
        raise ValueError("bad input")
    scale = 1 / pool.head_dim if scale is None else scale
    keys = pool.k_cache[block_ids.long()].flatten(0, 1)[:num_tokens]
    values = pool.v_cache[block_ids.long()].flatten(0, 1)[:num_tokens]
    weights = torch.softmax(torch.einsum("hd,thd->ht", q, keys) * scale, dim=-1)
    return torch.einsum("ht,thd->hd", weights, values)
''',
        "a Python loop over tokens": '''
import math

def paged_attention(q, pool, block_ids, num_tokens, scale=None):
    """Attend."""
    if tuple(q.shape) != (pool.num_heads, pool.head_dim) or not 1 <= num_tokens <= len(block_ids) * pool.block_size:
        raise ValueError("bad input")
    scale = 1 / math.sqrt(pool.head_dim) if scale is None else scale
    keys, values = [], []
    for t in range(num_tokens):
        block = block_ids[t // pool.block_size]
        keys.append(pool.k_cache[block, t % pool.block_size])
        values.append(pool.v_cache[block, t % pool.block_size])
    keys, values = torch.stack(keys), torch.stack(values)
    weights = torch.softmax(torch.einsum("hd,thd->ht", q, keys) * scale, dim=-1)
    return torch.einsum("ht,thd->hd", weights, values)
''',
    },
    TENSOR_MANAGER: {
        "no content copy on copy-on-write (the copy holds stale data)": _edit(TENSOR_MANAGER, (
            '''        if last is not None and seq.block_table[position] is not last:
            copy_block(self.pool, last.block_id, seq.block_table[position].block_id)''',
            '''        pass''')),
        "writes appended tokens from position 0 (forgets the offset)": _edit(TENSOR_MANAGER, (
            "slot_mapping(self.block_ids(seq), start, k.shape[0], self.block_size)",
            "slot_mapping(self.block_ids(seq), 0, k.shape[0], self.block_size)")),
        "slots from the block table read before the append (stale table)": _edit(TENSOR_MANAGER, (
            '''        start = seq.num_tokens
        self.append_tokens(seq, k.shape[0])
        write_kv(self.pool, slot_mapping(self.block_ids(seq), start, k.shape[0], self.block_size), k, v)''',
            '''        start = seq.num_tokens
        table = self.block_ids(seq)
        self.append_tokens(seq, k.shape[0])
        if start + k.shape[0] <= len(table) * self.block_size:
            write_kv(self.pool, slot_mapping(table, start, k.shape[0], self.block_size), k, v)
        else:
            write_kv(self.pool, slot_mapping(self.block_ids(seq), start, k.shape[0], self.block_size), k, v)''')),
        "copies the old block after writing the new tokens": _edit(TENSOR_MANAGER, (
            '''        start = seq.num_tokens
        self.append_tokens(seq, k.shape[0])
        write_kv(self.pool, slot_mapping(self.block_ids(seq), start, k.shape[0], self.block_size), k, v)''',
            '''        start = seq.num_tokens
        position = len(seq.block_table) - 1
        last = seq.block_table[-1] if seq.block_table else None
        PagedKVCacheManager.append_tokens(self, seq, k.shape[0])
        write_kv(self.pool, slot_mapping(self.block_ids(seq), start, k.shape[0], self.block_size), k, v)
        if last is not None and seq.block_table[position] is not last:
            copy_block(self.pool, last.block_id, seq.block_table[position].block_id)''')),
        "checks shapes only in write_kv (after the blocks are taken)": _edit(TENSOR_MANAGER, (
            '''            raise ValueError(f"k and v must both be [count, {shape[0]}, {shape[1]}], got {list(k.shape)} and {list(v.shape)}")
        seq = self.allocate_for_sequence''',
            '''            pass
        seq = self.allocate_for_sequence''')),
    },
}

ALTERNATIVES = {
    "task2_1_KVBlock": {
        "field() defaults and is_full through free_slots": '''
from dataclasses import dataclass, field

@dataclass
class KVBlock:
    """A block."""
    block_id: int
    capacity: int
    filled: int = field(default=0)
    ref_count: int = field(default=0)

    free_slots = property(lambda self: self.capacity - self.filled)
    is_full = property(lambda self: self.free_slots == 0)
''',
        "dataclass(eq=True) with not free_slots": '''
import dataclasses

@dataclasses.dataclass(eq=True)
class KVBlock:
    """A block."""
    block_id: int
    capacity: int
    filled: int = 0
    ref_count: int = 0

    @property
    def free_slots(self) -> int:
        return max(0, self.capacity - self.filled)

    @property
    def is_full(self) -> bool:
        return not self.free_slots
''',
    },
    ALLOC: {
        "a sorted list with bisect": '''
import bisect

class BlockAllocator:
    """Sorted free list."""

    def __init__(self, num_blocks, block_size):
        if num_blocks < 1 or block_size < 1:
            raise ValueError("sizes must be >= 1")
        self.num_blocks, self.block_size = num_blocks, block_size
        self.blocks = {i: KVBlock(i, block_size) for i in range(num_blocks)}
        self.free_list = list(range(num_blocks))

    @property
    def num_free(self):
        return len(self.free_list)

    @property
    def num_used(self):
        return self.num_blocks - self.num_free

    def get_block(self, block_id):
        if block_id not in self.blocks:
            raise ValueError(f"no block {block_id}")
        return self.blocks[block_id]

    def allocate(self):
        if not self.free_list:
            return None
        block = self.blocks[self.free_list.pop(0)]
        block.ref_count, block.filled = 1, 0
        return block

    def allocate_n(self, n):
        if n < 0:
            raise ValueError("n < 0")
        if n > self.num_free:
            raise RuntimeError(f"asked for {n} blocks but {self.num_free} are free")
        got = []
        while len(got) < n:
            got.append(self.allocate())
        return got

    def free(self, block):
        if block.ref_count == 0:
            raise ValueError("double free")
        block.ref_count -= 1
        if not block.ref_count:
            block.filled = 0
            bisect.insort(self.free_list, block.block_id)

    def utilization(self):
        return float(self.num_used) / self.num_blocks

    def fragmentation(self):
        used = [b for b in self.blocks.values() if b.ref_count]
        tokens = sum(b.filled for b in used)
        capacity = len(used) * self.block_size
        return 1.0 - tokens / capacity if capacity else 0.0
''',
        "a scan over an in-use flag per block": '''
class BlockAllocator:
    """Scan for the first free block."""

    def __init__(self, num_blocks, block_size):
        if not (num_blocks >= 1 and block_size >= 1):
            raise ValueError("bad sizes")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self._all = [KVBlock(i, block_size) for i in range(num_blocks)]

    @property
    def num_free(self):
        return sum(1 for b in self._all if b.ref_count == 0)

    @property
    def num_used(self):
        return sum(1 for b in self._all if b.ref_count > 0)

    def get_block(self, block_id):
        if block_id < 0 or block_id >= self.num_blocks:
            raise ValueError("out of range")
        return self._all[block_id]

    def allocate(self):
        for block in self._all:
            if block.ref_count == 0:
                block.ref_count = 1
                block.filled = 0
                return block
        return None

    def allocate_n(self, n):
        if n < 0:
            raise ValueError("negative n")
        free = self.num_free
        if free < n:
            raise RuntimeError(f"need {n}, have {free} free")
        return [self.allocate() for _ in range(n)]

    def free(self, block):
        if block.ref_count <= 0:
            raise ValueError("already free")
        block.ref_count -= 1
        if block.ref_count == 0:
            block.filled = 0

    def utilization(self):
        return self.num_used / self.num_blocks

    def fragmentation(self):
        if self.num_used == 0:
            return 0.0
        filled = sum(b.filled for b in self._all if b.ref_count > 0)
        return 1 - filled / (self.num_used * self.block_size)
''',
    },
    "task2_3_SequenceKVCache": {
        "default_factory lambda": '''
from dataclasses import dataclass, field

@dataclass
class SequenceKVCache:
    """A sequence."""
    seq_id: str
    block_table: list = field(default_factory=lambda: [])
    num_tokens: int = 0
    last_access_step: int = 0
    use_count: int = 0

    def num_blocks(self):
        return sum(1 for _ in self.block_table)
''',
        "None default filled in __post_init__": '''
from dataclasses import dataclass
from typing import Optional

@dataclass
class SequenceKVCache:
    """A sequence."""
    seq_id: str
    block_table: Optional[list] = None
    num_tokens: int = 0
    last_access_step: int = 0
    use_count: int = 0

    def __post_init__(self):
        if self.block_table is None:
            self.block_table = []

    def num_blocks(self) -> int:
        return len(self.block_table)
''',
    },
    MANAGER: {
        "token-by-token filling with a helper, checked up front": '''
class PagedKVCacheManager:
    """Fills one token at a time after counting what it needs."""

    def __init__(self, num_blocks=512, block_size=16):
        self.allocator = BlockAllocator(num_blocks, block_size)
        self.block_size = block_size
        self.sequences = {}
        self._clock = 0

    @property
    def step(self):
        return self._clock

    def _active(self, seq):
        if seq.seq_id not in self.sequences or self.sequences[seq.seq_id] is not seq:
            raise ValueError("unknown sequence")

    def _access(self, seq):
        self._clock += 1
        seq.last_access_step = self._clock
        seq.use_count += 1

    def allocate_for_sequence(self, seq_id, num_tokens):
        if seq_id in self.sequences or num_tokens < 0:
            raise ValueError("bad request")
        count = (num_tokens + self.block_size - 1) // self.block_size
        table = self.allocator.allocate_n(count)
        for j, block in enumerate(table):
            block.filled = min(self.block_size, num_tokens - j * self.block_size)
        seq = SequenceKVCache(seq_id, table, num_tokens)
        self._access(seq)
        self.sequences[seq_id] = seq
        return seq

    def append_tokens(self, seq, num_new_tokens):
        self._active(seq)
        if num_new_tokens < 0:
            raise ValueError("negative")
        table = seq.block_table
        last = table[-1] if table else None
        shared = last is not None and last.ref_count > 1 and not last.is_full and num_new_tokens > 0
        room = 0 if last is None else last.free_slots
        extra = 0
        while room + extra * self.block_size < num_new_tokens:
            extra += 1
        fresh = self.allocator.allocate_n(extra + (1 if shared else 0))
        if shared:
            twin = fresh[0]
            fresh = fresh[1:]
            twin.filled = last.filled
            table[-1] = twin
            self.allocator.free(last)
        pending = list(fresh)
        for _ in range(num_new_tokens):
            if not table or table[-1].is_full:
                table.append(pending.pop(0))
            table[-1].filled += 1
        seq.num_tokens += num_new_tokens
        self._access(seq)

    def fork(self, src, new_seq_id):
        self._active(src)
        if new_seq_id in self.sequences:
            raise ValueError("duplicate")
        for block in src.block_table:
            block.ref_count += 1
        child = SequenceKVCache(new_seq_id, src.block_table[:], src.num_tokens)
        self._access(child)
        self.sequences[new_seq_id] = child
        return child

    def touch(self, seq):
        self._active(seq)
        self._access(seq)

    def release(self, seq):
        self._active(seq)
        before = self.allocator.num_free
        for block in reversed(seq.block_table):
            self.allocator.free(block)
        del self.sequences[seq.seq_id]
        return self.allocator.num_free - before

    def summary(self):
        a = self.allocator
        return dict(total_blocks=a.num_blocks, used_blocks=a.num_used, free_blocks=a.num_free,
                    utilization=a.utilization(), fragmentation=a.fragmentation(),
                    active_sequences=len(self.sequences))
''',
        "divmod arithmetic and a shared access helper": '''
import math

class PagedKVCacheManager:
    """Arithmetic with math.ceil and divmod."""

    def __init__(self, num_blocks=512, block_size=16):
        self.allocator = BlockAllocator(num_blocks, block_size)
        self.block_size = block_size
        self.sequences = {}
        self.__step = 0

    step = property(lambda self: self.__step)

    def __tick(self, seq, first=False):
        self.__step += 1
        seq.last_access_step = self.__step
        seq.use_count = 1 if first else seq.use_count + 1

    def __require(self, seq):
        if self.sequences.get(seq.seq_id) is not seq:
            raise ValueError(f"{seq.seq_id} is not active")

    def allocate_for_sequence(self, seq_id, num_tokens):
        if num_tokens < 0:
            raise ValueError("num_tokens < 0")
        if seq_id in self.sequences:
            raise ValueError("duplicate id")
        full, rest = divmod(num_tokens, self.block_size)
        blocks = self.allocator.allocate_n(math.ceil(num_tokens / self.block_size))
        for block in blocks[:full]:
            block.filled = self.block_size
        if rest:
            blocks[-1].filled = rest
        seq = SequenceKVCache(seq_id, blocks, num_tokens)
        self.__tick(seq, first=True)
        self.sequences[seq_id] = seq
        return seq

    def append_tokens(self, seq, num_new_tokens):
        self.__require(seq)
        if num_new_tokens < 0:
            raise ValueError("num_new_tokens < 0")
        used_in_last = seq.num_tokens % self.block_size
        room = (self.block_size - used_in_last) if (seq.block_table and used_in_last) else 0
        cow = bool(room and num_new_tokens and seq.block_table[-1].ref_count > 1)
        new = math.ceil(max(0, num_new_tokens - room) / self.block_size)
        got = self.allocator.allocate_n(new + cow)
        if cow:
            old, copy = seq.block_table[-1], got.pop(0)
            copy.filled = old.filled
            seq.block_table[-1] = copy
            self.allocator.free(old)
        left = num_new_tokens
        if room:
            put = min(room, left)
            seq.block_table[-1].filled += put
            left -= put
        for block in got:
            block.filled = min(left, self.block_size)
            left -= block.filled
        seq.block_table.extend(got)
        seq.num_tokens += num_new_tokens
        self.__tick(seq)

    def fork(self, src, new_seq_id):
        self.__require(src)
        if new_seq_id in self.sequences:
            raise ValueError("duplicate id")
        child = SequenceKVCache(new_seq_id, list(src.block_table), src.num_tokens)
        for block in child.block_table:
            block.ref_count += 1
        self.__tick(child, first=True)
        self.sequences[new_seq_id] = child
        return child

    def touch(self, seq):
        self.__require(seq)
        self.__tick(seq)

    def release(self, seq):
        self.__require(seq)
        returned = 0
        for block in seq.block_table:
            last_owner = block.ref_count == 1
            self.allocator.free(block)
            returned += int(last_owner)
        self.sequences.pop(seq.seq_id)
        return returned

    def summary(self):
        return {"total_blocks": self.allocator.num_blocks, "used_blocks": self.allocator.num_used,
                "free_blocks": self.allocator.num_free, "utilization": self.allocator.utilization(),
                "fragmentation": self.allocator.fragmentation(), "active_sequences": len(self.sequences)}
''',
    },
    "task2_5_PagedKVPool": {
        "one stacked tensor, split in two": '''
class PagedKVPool:
    """A pool."""

    def __init__(self, num_blocks, block_size, num_heads, head_dim, device=None, dtype=torch.float32):
        if any(size < 1 for size in (num_blocks, block_size, num_heads, head_dim)):
            raise ValueError("every size must be >= 1")
        self.num_blocks, self.block_size, self.num_heads, self.head_dim = num_blocks, block_size, num_heads, head_dim
        kv = torch.zeros(2, num_blocks, block_size, num_heads, head_dim, dtype=dtype, device=device)
        self.k_cache, self.v_cache = kv[0], kv[1]
''',
        "torch.full and zeros_like": '''
class PagedKVPool:
    """A pool."""

    def __init__(self, num_blocks, block_size, num_heads, head_dim, device=None, dtype=torch.float32):
        shape = [num_blocks, block_size, num_heads, head_dim]
        if min(shape) < 1:
            raise ValueError(f"bad shape {shape}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.k_cache = torch.full(shape, 0, dtype=dtype, device=device)
        self.v_cache = torch.zeros_like(self.k_cache)
''',
    },
    "task2_6_slot_mapping": {
        "expand the whole table, then slice": '''
def slot_mapping(block_ids, start, count, block_size):
    """Slots."""
    if min(start, count) < 0 or block_size < 1 or start + count > block_ids.numel() * block_size:
        raise ValueError("bad arguments")
    offsets = torch.arange(block_size, device=block_ids.device)
    every = (block_ids.to(torch.int64)[:, None] * block_size + offsets[None, :]).reshape(-1)
    return every[start:start + count].clone()
''',
        "torch.div and torch.remainder with index_select": '''
def slot_mapping(block_ids, start, count, block_size):
    """Slots."""
    if start < 0 or count < 0 or block_size < 1:
        raise ValueError("negative argument")
    if start + count > len(block_ids) * block_size:
        raise ValueError("past the block table")
    pos = torch.arange(start, start + count, dtype=torch.int64, device=block_ids.device)
    blocks = torch.index_select(block_ids.to(torch.int64), 0, torch.div(pos, block_size, rounding_mode="floor"))
    return blocks * block_size + torch.remainder(pos, block_size)
''',
    },
    "task2_7_write_kv": {
        "indexed assignment into a view": '''
def write_kv(pool, slots, k, v):
    """Write."""
    want = [slots.numel(), pool.num_heads, pool.head_dim]
    if list(k.shape) != want or list(v.shape) != want:
        raise ValueError(f"expected {want}")
    pool.k_cache.view(-1, pool.num_heads, pool.head_dim)[slots] = k
    pool.v_cache.view(-1, pool.num_heads, pool.head_dim)[slots] = v
''',
        "block and offset indexing": '''
def write_kv(pool, slots, k, v):
    """Write."""
    if k.shape != (len(slots), pool.num_heads, pool.head_dim) or v.shape != k.shape:
        raise ValueError("k and v must be [count, num_heads, head_dim]")
    blocks, offsets = slots // pool.block_size, slots % pool.block_size
    pool.k_cache[blocks, offsets] = k.to(pool.k_cache.dtype)
    pool.v_cache[blocks, offsets] = v.to(pool.v_cache.dtype)
''',
    },
    "task2_8_gather_kv": {
        "slot_mapping and index_select": '''
def gather_kv(pool, block_ids, num_tokens):
    """Gather."""
    if num_tokens < 0 or num_tokens > len(block_ids) * pool.block_size:
        raise ValueError("num_tokens out of range")
    slots = slot_mapping(block_ids, 0, num_tokens, pool.block_size)
    flat_k = pool.k_cache.view(-1, pool.num_heads, pool.head_dim)
    flat_v = pool.v_cache.view(-1, pool.num_heads, pool.head_dim)
    return (flat_k.index_select(0, slots), flat_v.index_select(0, slots))
''',
        "index_select on blocks, then reshape": '''
def gather_kv(pool, block_ids, num_tokens):
    """Gather."""
    capacity = block_ids.shape[0] * pool.block_size
    if not (0 <= num_tokens <= capacity):
        raise ValueError("num_tokens out of range")
    ids = block_ids.to(torch.int64)
    keys = torch.index_select(pool.k_cache, 0, ids).reshape(capacity, pool.num_heads, pool.head_dim)
    values = torch.index_select(pool.v_cache, 0, ids).reshape(capacity, pool.num_heads, pool.head_dim)
    return tuple([keys[:num_tokens], values[:num_tokens]])
''',
    },
    "task2_9_copy_block": {
        "copy_ into the destination view": '''
def copy_block(pool, src_block, dst_block):
    """Copy."""
    if src_block not in range(pool.num_blocks) or dst_block not in range(pool.num_blocks):
        raise ValueError("block id out of range")
    pool.k_cache[dst_block].copy_(pool.k_cache[src_block])
    pool.v_cache[dst_block].copy_(pool.v_cache[src_block])
''',
        "index_copy_ with a one-element index": '''
def copy_block(pool, src_block, dst_block):
    """Copy."""
    for b in (src_block, dst_block):
        if b < 0 or b >= pool.num_blocks:
            raise ValueError(f"block {b} out of range")
    device = pool.k_cache.device
    dst = torch.tensor([dst_block], device=device)
    pool.k_cache.index_copy_(0, dst, pool.k_cache[[src_block]].clone())
    pool.v_cache.index_copy_(0, dst, pool.v_cache[[src_block]].clone())
''',
    },
    "task2_10_paged_attention": {
        "gather, then PyTorch's scaled_dot_product_attention": '''
import torch.nn.functional as F

def paged_attention(q, pool, block_ids, num_tokens, scale=None):
    """Attend."""
    if q.shape != (pool.num_heads, pool.head_dim):
        raise ValueError("q must be [num_heads, head_dim]")
    if num_tokens < 1 or num_tokens > len(block_ids) * pool.block_size:
        raise ValueError("num_tokens out of range")
    keys = pool.k_cache[block_ids.long()].reshape(-1, pool.num_heads, pool.head_dim)[:num_tokens]
    values = pool.v_cache[block_ids.long()].reshape(-1, pool.num_heads, pool.head_dim)[:num_tokens]
    out = F.scaled_dot_product_attention(q[:, None, :], keys.transpose(0, 1), values.transpose(0, 1), scale=scale)
    return out[:, 0, :]
''',
        "matmul with a stable softmax written out": '''
def paged_attention(q, pool, block_ids, num_tokens, scale=None):
    """Attend."""
    if q.dim() != 2 or q.shape[0] != pool.num_heads or q.shape[1] != pool.head_dim:
        raise ValueError("bad q")
    if not 0 < num_tokens <= block_ids.numel() * pool.block_size:
        raise ValueError("bad num_tokens")
    s = pool.head_dim ** -0.5 if scale is None else scale
    slots = slot_mapping(block_ids, 0, num_tokens, pool.block_size)
    keys = pool.k_cache.view(-1, pool.num_heads, pool.head_dim)[slots].transpose(0, 1)     # [H, T, D]
    values = pool.v_cache.view(-1, pool.num_heads, pool.head_dim)[slots].transpose(0, 1)   # [H, T, D]
    scores = (keys @ q[:, :, None]).squeeze(-1) * s                                        # [H, T]
    scores = scores - scores.max(dim=-1, keepdim=True).values
    weights = scores.exp()
    weights = weights / weights.sum(dim=-1, keepdim=True)
    return (weights[:, None, :] @ values).squeeze(1)
''',
    },
    TENSOR_MANAGER: {
        "compares whole tables before and after, writes by indexing": '''
class TensorPagedKVCacheManager(PagedKVCacheManager):
    """Owns a pool."""

    def __init__(self, pool):
        PagedKVCacheManager.__init__(self, pool.num_blocks, pool.block_size)
        self.pool = pool

    def block_ids(self, seq):
        return torch.as_tensor([b.block_id for b in seq.block_table], dtype=torch.long).to(self.pool.k_cache.device)

    def _check(self, k, v):
        want = (k.shape[0] if k.dim() else -1, self.pool.num_heads, self.pool.head_dim)
        if k.dim() != 3 or tuple(k.shape) != want or tuple(v.shape) != want:
            raise ValueError("k, v must be [count, num_heads, head_dim]")

    def _write(self, seq, start, k, v):
        slots = slot_mapping(self.block_ids(seq), start, k.shape[0], self.block_size)
        self.pool.k_cache.view(-1, self.pool.num_heads, self.pool.head_dim)[slots] = k
        self.pool.v_cache.view(-1, self.pool.num_heads, self.pool.head_dim)[slots] = v

    def prefill(self, seq_id, k, v):
        self._check(k, v)
        seq = self.allocate_for_sequence(seq_id, k.shape[0])
        self._write(seq, 0, k, v)
        return seq

    def append_tokens(self, seq, num_new_tokens):
        before = list(seq.block_table)
        super().append_tokens(seq, num_new_tokens)
        for old, new in zip(before, seq.block_table):
            if old is not new:
                copy_block(self.pool, old.block_id, new.block_id)

    def append_kv(self, seq, k, v):
        self._check(k, v)
        start = seq.num_tokens
        self.append_tokens(seq, k.shape[0])
        self._write(seq, start, k, v)

    def gather(self, seq):
        return gather_kv(self.pool, self.block_ids(seq), seq.num_tokens)
''',
        "predicts the copy before appending": '''
class TensorPagedKVCacheManager(PagedKVCacheManager):
    """Owns a pool."""

    def __init__(self, pool):
        super().__init__(pool.num_blocks, pool.block_size)
        self.pool = pool

    def block_ids(self, seq):
        ids = torch.zeros(len(seq.block_table), dtype=torch.int64)
        for j, block in enumerate(seq.block_table):
            ids[j] = block.block_id
        return ids.to(self.pool.k_cache.device)

    def prefill(self, seq_id, k, v):
        if k.dim() != 3 or k.shape[1:] != (self.pool.num_heads, self.pool.head_dim) or v.shape != k.shape:
            raise ValueError("bad k or v")
        seq = self.allocate_for_sequence(seq_id, len(k))
        write_kv(self.pool, slot_mapping(self.block_ids(seq), 0, len(k), self.block_size), k, v)
        return seq

    def append_tokens(self, seq, num_new_tokens):
        old = seq.block_table[-1] if seq.block_table else None
        will_copy = old is not None and num_new_tokens > 0 and old.free_slots > 0 and old.ref_count > 1
        index = len(seq.block_table) - 1
        super().append_tokens(seq, num_new_tokens)
        if will_copy:
            copy_block(self.pool, old.block_id, seq.block_table[index].block_id)

    def append_kv(self, seq, k, v):
        if k.dim() != 3 or k.shape[1:] != (self.pool.num_heads, self.pool.head_dim) or v.shape != k.shape:
            raise ValueError("bad k or v")
        start = seq.num_tokens
        self.append_tokens(seq, len(k))
        write_kv(self.pool, slot_mapping(self.block_ids(seq), start, len(k), self.block_size), k, v)

    def gather(self, seq):
        return gather_kv(self.pool, self.block_ids(seq), seq.num_tokens)
''',
    },
}
