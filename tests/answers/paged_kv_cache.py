"""Wrong and alternative answers for notebook 02 (see tests/answers/__init__.py).

Every answer is built from the notebook's own reference solution: a wrong answer is the reference
with the few edits that make the mistake (``ref.edit``), an alternative writes the reference's
solution regions anew (``ref.solve``, by TODO label where a function has several blanks). An edit
whose text is no longer in the reference raises at import, so a stale answer fails loudly instead
of silently testing the reference.

Each wrong answer breaks one clause of its task's contract, and every one of them fails a visible
test (tests/test_mutants.py checks both), so ``HIDDEN_ONLY`` is empty.
"""

from __future__ import annotations

from grading.authoring.reference import Reference

ref = Reference("02_paged_kv_cache")

BLOCK, ALLOC, SEQ = "task2_1_KVBlock", "task2_2_BlockAllocator", "task2_3_SequenceKVCache"
MANAGER, POOL, SLOTS = "task2_4_PagedKVCacheManager", "task2_5_PagedKVPool", "task2_6_slot_mapping"
WRITE, GATHER, COPY = "task2_7_write_kv", "task2_8_gather_kv", "task2_9_copy_block"
ATTENTION, TENSOR_MANAGER = "task2_10_paged_attention", "task2_11_TensorPagedKVCacheManager"

WRONG = {
    BLOCK: {
        "is_full compares with > (a full block never counts as full)": ref.edit(
            BLOCK, ("return self.filled >= self.capacity", "return self.filled > self.capacity")),
        "free_slots is a method, not a property": ref.edit(
            BLOCK, ("    @property\n    def free_slots", "    def free_slots")),
        "ref_count starts at 1": ref.edit(BLOCK, ("ref_count: int = 0", "ref_count: int = 1")),
        "free_slots computed once in __post_init__ (goes stale)": ref.edit(
            BLOCK, ("    ref_count: int = 0\n",
                    "    ref_count: int = 0\n\n    def __post_init__(self):\n"
                    "        self._free = self.capacity - self.filled\n"),
            ("return self.filled >= self.capacity", "return self._free == 0"),
            ("return self.capacity - self.filled", "return self._free")),
        "fields in another order (capacity first)": ref.edit(
            BLOCK, ("    block_id: int\n    capacity: int\n", "    capacity: int\n    block_id: int\n")),
        "is_full returns an int (filled // capacity)": ref.edit(
            BLOCK, ("return self.filled >= self.capacity", "return self.filled // self.capacity")),
        "is_full as soon as one slot is filled": ref.edit(
            BLOCK, ("return self.filled >= self.capacity", "return self.filled > 0")),
    },
    ALLOC: {
        "allocate_n keeps the blocks it got before running out (no rollback)": ref.edit(ALLOC, (
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
        "free does not detect a double free": ref.edit(ALLOC, (
            '''        if block.ref_count < 1:
            raise ValueError(f"block {block.block_id} is already free")
        block.ref_count -= 1
        if block.ref_count == 0:''',
            '''        block.ref_count -= 1
        if block.ref_count <= 0:''')),
        "free returns a shared block to the pool at once (ignores ref_count)": ref.edit(ALLOC, (
            '''        block.ref_count -= 1
        if block.ref_count == 0:''',
            '''        block.ref_count = 0
        if True:''')),
        "allocate takes the highest free id": ref.edit(ALLOC, (
            "block = self._blocks[heapq.heappop(self._free_ids)]",
            "self._free_ids.sort()\n        block = self._blocks[self._free_ids.pop()]")),
        "fragmentation over all blocks, not the used ones": ref.edit(ALLOC, (
            "return 1.0 - sum(block.filled for block in used) / (len(used) * self.block_size)",
            "return 1.0 - sum(block.filled for block in used) / (self.num_blocks * self.block_size)")),
        "utilization counts the free blocks": ref.edit(ALLOC, (
            "return self.num_used / self.num_blocks", "return self.num_free / self.num_blocks")),
        "no check of the sizes": ref.edit(ALLOC, ("if num_blocks < 1 or block_size < 1:", "if False:")),
        "sizes checked with == 0 (a negative size passes)": ref.edit(ALLOC, (
            "if num_blocks < 1 or block_size < 1:", "if num_blocks == 0 or block_size == 0:")),
        "a plain list as a stack: the block freed last comes back first": ref.edit(ALLOC, (
            "self._free_ids = list(range(num_blocks))", "self._free_ids = list(range(num_blocks))[::-1]"), (
            "block = self._blocks[heapq.heappop(self._free_ids)]", "block = self._blocks[self._free_ids.pop()]"), (
            "            heapq.heappush(self._free_ids, block.block_id)",
            "            self._free_ids.append(block.block_id)")),
        "get_block without a range check (a negative id wraps around)": ref.edit(ALLOC, (
            "        if not 0 <= block_id < self.num_blocks:\n", "        if block_id >= self.num_blocks:\n")),
        "free drops the reference before checking (ref_count -1 after the error)": ref.edit(ALLOC, (
            '''        if block.ref_count < 1:
            raise ValueError(f"block {block.block_id} is already free")
        block.ref_count -= 1''',
            '''        block.ref_count -= 1
        if block.ref_count < 0:
            raise ValueError(f"block {block.block_id} is already free")''')),
        "the RuntimeError does not say how many blocks were asked for and are free": ref.edit(ALLOC, (
            'raise RuntimeError(f"out of blocks: asked for {n}, only {len(self._free_ids)} free")',
            'raise RuntimeError("out of blocks")')),
        "fragmentation returns the int 0 when no block is used": ref.edit(ALLOC, (
            "        if not used:\n            return 0.0", "        if not used:\n            return 0")),
        "allocate makes a new KVBlock instead of handing out the pool's": ref.edit(ALLOC, (
            "block = self._blocks[heapq.heappop(self._free_ids)]",
            "block = KVBlock(heapq.heappop(self._free_ids), self.block_size)")),
        "allocate_n returns a tuple": ref.edit(ALLOC, (
            "return [self.allocate() for _ in range(n)]", "return tuple(self.allocate() for _ in range(n))")),
        "free does not reset filled": ref.edit(ALLOC, (
            "            block.filled = 0\n            heapq.heappush", "            heapq.heappush")),
        "allocate_n(-1) returns an empty list": ref.edit(ALLOC, ("        if n < 0:\n", "        if False:\n")),
        "allocate_n refuses to take the last free blocks (>= instead of >)": ref.edit(ALLOC, (
            "        if n > len(self._free_ids):", "        if n >= len(self._free_ids) and n:")),
        "free resets filled even when the block is still shared": ref.edit(ALLOC, (
            "        block.ref_count -= 1\n        if block.ref_count == 0:\n            block.filled = 0\n",
            "        block.ref_count -= 1\n        block.filled = 0\n        if block.ref_count == 0:\n")),
        "allocate does not set filled to 0 (a count left on a free block stays)": ref.edit(ALLOC, (
            "        block.ref_count = 1\n        block.filled = 0\n        return block",
            "        block.ref_count = 1\n        return block")),
    },
    SEQ: {
        "a plain class with a shared mutable default list": ref.edit(SEQ, (
            "@dataclass\nclass SequenceKVCache:", "class SequenceKVCache:"), (
            '''    seq_id: str
    block_table: list = field(default_factory=list)
    num_tokens: int = 0
    last_access_step: int = 0
    use_count: int = 0
''',
            '''    def __init__(self, seq_id, block_table=[], num_tokens=0, last_access_step=0, use_count=0):
        self.seq_id = seq_id
        self.block_table = block_table
        self.num_tokens = num_tokens
        self.last_access_step = last_access_step
        self.use_count = use_count
''')),
        "num_blocks counts tokens / 16 instead of the table": ref.edit(
            SEQ, ("return len(self.block_table)", "return -(-self.num_tokens // 16)")),
        "use_count starts at 1": ref.edit(SEQ, ("use_count: int = 0", "use_count: int = 1")),
        "num_blocks is a property, not a method": ref.edit(
            SEQ, ("    def num_blocks(self) -> int:", "    @property\n    def num_blocks(self) -> int:")),
        "block_table defaults to None": ref.edit(
            SEQ, ("block_table: list = field(default_factory=list)", "block_table: list = None")),
        "fields in another order (num_tokens before block_table)": ref.edit(SEQ, (
            "    block_table: list = field(default_factory=list)\n    num_tokens: int = 0\n",
            "    num_tokens: int = 0\n    block_table: list = field(default_factory=list)\n")),
    },
    MANAGER: {
        # The first answer is the bundled typical_mistakes sample, which must lose points in every graded part.
        "one typical slip per part: duplicate id checked after taking blocks, 0 tokens not an access, "
        "no copy-on-write, release counts every block": ref.edit(MANAGER, (
            '''        if seq_id in self.sequences:
            raise ValueError(f"sequence {seq_id!r} already exists")
        if num_tokens < 0:''', '''        if num_tokens < 0:'''), (
            "        blocks = self.allocator.allocate_n(-(-num_tokens // self.block_size))\n",
            '''        blocks = self.allocator.allocate_n(-(-num_tokens // self.block_size))
        if seq_id in self.sequences:
            raise ValueError(f"sequence {seq_id!r} already exists")
'''), (
            '''            raise ValueError(f"num_new_tokens must be >= 0, got {num_new_tokens}")''',
            '''            raise ValueError(f"num_new_tokens must be >= 0, got {num_new_tokens}")
        if num_new_tokens == 0:
            return'''), (
            "needs_copy = num_new_tokens > 0 and room > 0 and last.ref_count > 1", "needs_copy = False"), (
            "freed += block.ref_count == 0", "freed += 1")),
        "append into a shared block without copy-on-write": ref.edit(MANAGER, (
            "needs_copy = num_new_tokens > 0 and room > 0 and last.ref_count > 1",
            "needs_copy = False")),
        "ceil off by one (num_tokens // block_size + 1 blocks)": ref.edit(MANAGER, (
            "blocks = self.allocator.allocate_n(-(-num_tokens // self.block_size))",
            "blocks = self.allocator.allocate_n(num_tokens // self.block_size + 1)")),
        "fork without ref counts": ref.edit(MANAGER, (
            "        for block in src.block_table:\n            block.ref_count += 1\n", "")),
        "append takes blocks one at a time (no rollback when they run out)": ref.edit(MANAGER, (
            "        blocks = self.allocator.allocate_n(int(needs_copy) + new_blocks)",
            '''        blocks = []
        for _ in range(int(needs_copy) + new_blocks):
            block = self.allocator.allocate()
            if block is None:
                raise RuntimeError("out of blocks")
            blocks.append(block)''')),
        "the clock moves before the blocks are taken (and stays moved on failure)": ref.edit(MANAGER, (
            "        blocks = self.allocator.allocate_n(-(-num_tokens // self.block_size))",
            "        self._step += 1\n        blocks = self.allocator.allocate_n(-(-num_tokens // self.block_size))"), (
            "        seq = SequenceKVCache(seq_id, blocks, num_tokens)\n"
            "        self.sequences[seq_id] = seq\n        self._access(seq)",
            "        seq = SequenceKVCache(seq_id, blocks, num_tokens, self._step, 1)\n"
            "        self.sequences[seq_id] = seq")),
        "release returns the number of blocks in the table, not the ones freed": ref.edit(MANAGER, (
            "freed += block.ref_count == 0", "freed += 1")),
        "touch does not count as a use": ref.edit(MANAGER, (
            "        self._check_active(seq)\n        self._access(seq)\n",
            "        self._check_active(seq)\n        self._step += 1\n        seq.last_access_step = self._step\n")),
        "the child copies the parent's use_count": ref.edit(MANAGER, (
            "        self.sequences[new_seq_id] = child\n        self._access(child)",
            "        child.use_count = src.use_count - 1\n"
            "        self.sequences[new_seq_id] = child\n        self._access(child)")),
        "the copy-on-write copy starts empty (filled 0)": ref.edit(MANAGER, (
            "            copy.filled = last.filled\n", "")),
        "active checked by id only (another object with the same id passes)": ref.edit(MANAGER, (
            "        if self.sequences.get(seq.seq_id) is not seq:", "        if seq.seq_id not in self.sequences:")),
        "the duplicate id is checked after the blocks are taken (they leak)": ref.edit(MANAGER, (
            '''        if seq_id in self.sequences:
            raise ValueError(f"sequence {seq_id!r} already exists")
        if num_tokens < 0:''', '''        if num_tokens < 0:'''), (
            "        blocks = self.allocator.allocate_n(-(-num_tokens // self.block_size))\n",
            '''        blocks = self.allocator.allocate_n(-(-num_tokens // self.block_size))
        if seq_id in self.sequences:
            raise ValueError(f"sequence {seq_id!r} already exists")
''')),
        "a new sequence is not counted as used (use_count 0)": ref.edit(MANAGER, (
            "        self.sequences[seq_id] = seq\n        self._access(seq)",
            "        self.sequences[seq_id] = seq\n        self._access(seq)\n        seq.use_count = 0")),
        "fork gives the child the parent's list itself": ref.edit(MANAGER, (
            "child = SequenceKVCache(new_seq_id, list(src.block_table), src.num_tokens)",
            "child = SequenceKVCache(new_seq_id, src.block_table, src.num_tokens)")),
        "fork counts as an access of the source too": ref.edit(MANAGER, (
            "        self._access(child)\n        return child",
            "        self._access(src)\n        self._access(child)\n        return child")),
        "fork adds the references before checking the new id": ref.edit(MANAGER, (
            '''        self._check_active(src)
        if new_seq_id in self.sequences:
            raise ValueError(f"sequence {new_seq_id!r} already exists")''',
            '''        self._check_active(src)
        for block in src.block_table:
            block.ref_count += 1
        if new_seq_id in self.sequences:
            raise ValueError(f"sequence {new_seq_id!r} already exists")'''), (
            "        for block in src.block_table:\n            block.ref_count += 1\n        child =",
            "        child =")),
        "copy-on-write also for a full shared last block": ref.edit(MANAGER, (
            "needs_copy = num_new_tokens > 0 and room > 0 and last.ref_count > 1",
            "needs_copy = num_new_tokens > 0 and last is not None and last.ref_count > 1")),
        "copy-on-write also when nothing is appended": ref.edit(MANAGER, (
            "needs_copy = num_new_tokens > 0 and room > 0 and last.ref_count > 1",
            "needs_copy = room > 0 and last.ref_count > 1")),
        "the copy is the last block taken, after the new ones": ref.edit(MANAGER, (
            "            copy = blocks.pop(0)\n", "            copy = blocks.pop()\n")),
        "copy-on-write keeps the reference to the old block": ref.edit(MANAGER, (
            "            self.allocator.free(last)\n", "")),
        "append ignores the free slots of the last block (always new blocks)": ref.edit(MANAGER, (
            "        room = last.free_slots if last is not None else 0\n",
            "        room = 0\n")),
        "appending 0 tokens is not an access": ref.edit(MANAGER, (
            '''            raise ValueError(f"num_new_tokens must be >= 0, got {num_new_tokens}")''',
            '''            raise ValueError(f"num_new_tokens must be >= 0, got {num_new_tokens}")
        if num_new_tokens == 0:
            return''')),
        "release moves the clock": ref.edit(MANAGER, (
            "        del self.sequences[seq.seq_id]\n        return freed",
            "        del self.sequences[seq.seq_id]\n        self._step += 1\n        return freed")),
        "release keeps the sequence in sequences": ref.edit(MANAGER, (
            "        del self.sequences[seq.seq_id]\n", "")),
        "summary's utilization in percent": ref.edit(MANAGER, (
            '"utilization": self.allocator.utilization(),', '"utilization": 100 * self.allocator.utilization(),')),
        "summary without active_sequences": ref.edit(MANAGER, (
            '            "active_sequences": len(self.sequences),\n', "")),
    },
    POOL: {
        "k_cache and v_cache are the same tensor": ref.edit(POOL, (
            "self.v_cache = torch.zeros(shape, dtype=dtype, device=device)", "self.v_cache = self.k_cache")),
        "heads before slots: [num_blocks, num_heads, block_size, head_dim]": ref.edit(POOL, (
            "shape = (num_blocks, block_size, num_heads, head_dim)",
            "shape = (num_blocks, num_heads, block_size, head_dim)")),
        "ignores dtype": ref.edit(POOL, (
            "self.k_cache = torch.zeros(shape, dtype=dtype, device=device)",
            "self.k_cache = torch.zeros(shape, device=device)"), (
            "self.v_cache = torch.zeros(shape, dtype=dtype, device=device)",
            "self.v_cache = torch.zeros(shape, device=device)")),
        "no check of the sizes": ref.edit(POOL, ("            if size < 1:", "            if False:")),
        "sizes checked with == 0 (a negative size passes)": ref.edit(
            POOL, ("            if size < 1:", "            if size == 0:")),
        "checks only num_blocks and block_size": ref.edit(POOL, (
            'sizes = {"num_blocks": num_blocks, "block_size": block_size, "num_heads": num_heads, '
            '"head_dim": head_dim}',
            'sizes = {"num_blocks": num_blocks, "block_size": block_size}')),
        "v_cache is not contiguous (a permuted tensor)": ref.edit(POOL, (
            "self.v_cache = torch.zeros(shape, dtype=dtype, device=device)",
            "self.v_cache = torch.zeros(shape[::-1], dtype=dtype, device=device).permute(3, 2, 1, 0)")),
        "ignores device (always PyTorch's default device)": ref.edit(POOL, (
            "        self.k_cache = torch.zeros(shape, dtype=dtype, device=device)\n"
            "        self.v_cache = torch.zeros(shape, dtype=dtype, device=device)",
            "        self.k_cache = torch.zeros(shape, dtype=dtype)\n"
            "        self.v_cache = torch.zeros(shape, dtype=dtype)")),
    },
    SLOTS: {
        "ignores the block table after its first block (assumes contiguous blocks)": ref.edit(SLOTS, (
            "return block_ids.long()[positions // block_size] * block_size + positions % block_size",
            "return block_ids[0].long() * block_size + positions")),
        "forgets to multiply the block id by block_size": ref.edit(SLOTS, (
            "[positions // block_size] * block_size + positions % block_size",
            "[positions // block_size] + positions % block_size")),
        "ignores start (positions from 0)": ref.edit(SLOTS, (
            "positions = torch.arange(start, start + count, device=block_ids.device)",
            "positions = torch.arange(count, device=block_ids.device)")),
        "no range check (IndexError past the table)": ref.edit(SLOTS, (
            "    if start + count > block_ids.shape[0] * block_size:\n", "    if False:\n"), (
            "    if start < 0 or count < 0 or block_size < 1:\n", "    if False:\n")),
        "a Python loop over positions": ref.edit(SLOTS, (
            "    positions = torch.arange(start, start + count, device=block_ids.device)\n",
            "    positions = [int(block_ids[p // block_size]) * block_size + p % block_size\n"
            "                 for p in range(start, start + count)]\n"), (
            "    return block_ids.long()[positions // block_size] * block_size + positions % block_size",
            "    return torch.tensor(positions, dtype=torch.int64, device=block_ids.device)")),
        "multiplies the block table in place (.long() of an int64 tensor is that tensor)": ref.edit(SLOTS, (
            "    return block_ids.long()[positions // block_size] * block_size + positions % block_size",
            "    ids = block_ids.long()\n    ids *= block_size\n"
            "    return ids[positions // block_size] + positions % block_size")),
        "converts to int64 after multiplying (int32 overflows)": ref.edit(SLOTS, (
            "return block_ids.long()[positions // block_size] * block_size + positions % block_size",
            "return (block_ids[positions // block_size] * block_size + positions % block_size).long()")),
        "keeps block_ids' dtype (int32 slots for an int32 table)": ref.edit(SLOTS, (
            "return block_ids.long()[positions // block_size] * block_size + positions % block_size",
            "return (block_ids.long()[positions // block_size] * block_size\n"
            "            + positions % block_size).to(block_ids.dtype)")),
        "rejects a range that ends exactly at the table's end (>= instead of >)": ref.edit(SLOTS, (
            "if start + count > block_ids.shape[0] * block_size:",
            "if start + count >= block_ids.shape[0] * block_size:")),
        "no check of a negative start": ref.edit(SLOTS, (
            "if start < 0 or count < 0 or block_size < 1:", "if count < 0 or block_size < 1:")),
    },
    WRITE: {
        "out-of-place index_copy (the result is thrown away)": ref.edit(WRITE, (
            "\n    flat_k.index_copy_(0, slots, k.to(flat_k.dtype))",
            "\n    flat_k.index_copy(0, slots, k.to(flat_k.dtype))"), (
            "\n    flat_v.index_copy_(0, slots, v.to(flat_v.dtype))",
            "\n    flat_v.index_copy(0, slots, v.to(flat_v.dtype))")),
        "writes the keys into v_cache too": ref.edit(WRITE, (
            "\n    flat_v.index_copy_(0, slots, v.to(flat_v.dtype))",
            "\n    flat_v.index_copy_(0, slots, k.to(flat_v.dtype))")),
        "no shape check": ref.edit(WRITE, (
            "if tuple(k.shape) != expected or tuple(v.shape) != expected:", "if False:")),
        "a Python loop over tokens": ref.edit(WRITE, (
            '''    flat_k.index_copy_(0, slots, k.to(flat_k.dtype))
    flat_v.index_copy_(0, slots, v.to(flat_v.dtype))''',
            '''    for i in range(len(slots)):
        s = int(slots[i])
        pool.k_cache[s // pool.block_size, s % pool.block_size] = k[i]
        pool.v_cache[s // pool.block_size, s % pool.block_size] = v[i]''')),
        "checks only k's shape": ref.edit(WRITE, (
            "if tuple(k.shape) != expected or tuple(v.shape) != expected:", "if tuple(k.shape) != expected:")),
        "writes k before checking v (the pool changes although it raises)": ref.edit(WRITE, (
            "    if tuple(k.shape) != expected or tuple(v.shape) != expected:",
            "    if tuple(k.shape) == expected:\n"
            "        pool.k_cache.view(-1, pool.num_heads, pool.head_dim)[slots] = k.to(pool.k_cache.dtype)\n"
            "    if tuple(k.shape) != expected or tuple(v.shape) != expected:")),
        "index_copy_ without converting to the pool's dtype": ref.edit(WRITE, (
            "\n    flat_k.index_copy_(0, slots, k.to(flat_k.dtype))", "\n    flat_k.index_copy_(0, slots, k)"), (
            "\n    flat_v.index_copy_(0, slots, v.to(flat_v.dtype))", "\n    flat_v.index_copy_(0, slots, v)")),
        "copy_ into an advanced-indexing copy (nothing reaches the pool)": ref.edit(WRITE, (
            "\n    flat_k.index_copy_(0, slots, k.to(flat_k.dtype))", "\n    flat_k[slots].copy_(k)"), (
            "\n    flat_v.index_copy_(0, slots, v.to(flat_v.dtype))", "\n    flat_v[slots].copy_(v)")),
    },
    GATHER: {
        "gathers in block order (sorted ids) instead of token order": ref.edit(GATHER, (
            "index = block_ids.long()", "index = torch.sort(block_ids.long()).values")),
        "returns every slot of the blocks (no cut at num_tokens)": ref.edit(GATHER, (
            "keys = pool.k_cache[index].flatten(0, 1)[:num_tokens]", "keys = pool.k_cache[index].flatten(0, 1)"), (
            "values = pool.v_cache[index].flatten(0, 1)[:num_tokens]", "values = pool.v_cache[index].flatten(0, 1)")),
        "values gathered from k_cache": ref.edit(GATHER, (
            "values = pool.v_cache[index]", "values = pool.k_cache[index]")),
        "ignores the block table (the first num_tokens slots of the pool)": ref.edit(GATHER, (
            "keys = pool.k_cache[index].flatten(0, 1)[:num_tokens]",
            "keys = pool.k_cache.flatten(0, 1)[:num_tokens].clone()"), (
            "values = pool.v_cache[index].flatten(0, 1)[:num_tokens]",
            "values = pool.v_cache.flatten(0, 1)[:num_tokens].clone()")),
        "returns a list, not a tuple": ref.edit(GATHER, ("return keys, values", "return [keys, values]")),
        "casts the result to float32": ref.edit(GATHER, ("return keys, values", "return keys.float(), values.float()")),
        "returns views of the pool for a run of consecutive blocks": ref.edit(GATHER, (
            "    return keys, values",
            '''    if index.numel() and bool((index == index[0] + torch.arange(len(index), device=index.device)).all()):
        first = int(index[0])
        keys = pool.k_cache[first:first + len(index)].flatten(0, 1)[:num_tokens]
        values = pool.v_cache[first:first + len(index)].flatten(0, 1)[:num_tokens]
    return keys, values''')),
        "no check of a negative num_tokens": ref.edit(GATHER, (
            "if not 0 <= num_tokens <= block_ids.shape[0] * pool.block_size:",
            "if num_tokens > block_ids.shape[0] * pool.block_size:")),
        "rejects a full table (< instead of <=)": ref.edit(GATHER, (
            "if not 0 <= num_tokens <= block_ids.shape[0] * pool.block_size:",
            "if not 0 <= num_tokens < block_ids.shape[0] * pool.block_size:")),
    },
    COPY: {
        "copies only the keys": ref.edit(COPY, ("\n    pool.v_cache[dst_block] = pool.v_cache[src_block]", "")),
        "copies in the wrong direction": ref.edit(COPY, (
            '''    pool.k_cache[dst_block] = pool.k_cache[src_block]
    pool.v_cache[dst_block] = pool.v_cache[src_block]''',
            '''    pool.k_cache[src_block] = pool.k_cache[dst_block]
    pool.v_cache[src_block] = pool.v_cache[dst_block]''')),
        "rebinds a local name (nothing is copied)": ref.edit(COPY, (
            '''    pool.k_cache[dst_block] = pool.k_cache[src_block]
    pool.v_cache[dst_block] = pool.v_cache[src_block]''',
            '''    target_k, target_v = pool.k_cache[dst_block], pool.v_cache[dst_block]
    target_k = pool.k_cache[src_block].clone()
    target_v = pool.v_cache[src_block].clone()''')),
        "no range check (a negative id wraps around)": ref.edit(COPY, (
            "        if not 0 <= block_id < pool.num_blocks:", "        if False:")),
        "checks only dst_block": ref.edit(COPY, (
            "    for block_id in (src_block, dst_block):", "    for block_id in (dst_block,):")),
        "copy_ into an advanced-indexing copy (nothing reaches the pool)": ref.edit(COPY, (
            '''    pool.k_cache[dst_block] = pool.k_cache[src_block]
    pool.v_cache[dst_block] = pool.v_cache[src_block]''',
            '''    pool.k_cache[[dst_block]].copy_(pool.k_cache[[src_block]])
    pool.v_cache[[dst_block]].copy_(pool.v_cache[[src_block]])''')),
        "swaps the two blocks": ref.edit(COPY, (
            '''    pool.k_cache[dst_block] = pool.k_cache[src_block]
    pool.v_cache[dst_block] = pool.v_cache[src_block]''',
            '''    pool.k_cache[[src_block, dst_block]] = pool.k_cache[[dst_block, src_block]]
    pool.v_cache[[src_block, dst_block]] = pool.v_cache[[dst_block, src_block]]''')),
    },
    ATTENTION: {
        "attention without the scale": ref.edit(ATTENTION, (
            'scores = torch.einsum("hd,thd->ht", q, keys) * scale', 'scores = torch.einsum("hd,thd->ht", q, keys)')),
        "softmax over the heads instead of the tokens": ref.edit(ATTENTION, (
            "weights = torch.softmax(scores, dim=-1)", "weights = torch.softmax(scores, dim=0)")),
        "attends to every slot of the blocks (stale slots after num_tokens)": ref.edit(ATTENTION, (
            "keys = pool.k_cache[index].flatten(0, 1)[:num_tokens]", "keys = pool.k_cache[index].flatten(0, 1)"), (
            "values = pool.v_cache[index].flatten(0, 1)[:num_tokens]", "values = pool.v_cache[index].flatten(0, 1)")),
        "scale 1 / head_dim instead of 1 / sqrt(head_dim)": ref.edit(ATTENTION, (
            "scale = 1.0 / math.sqrt(pool.head_dim)", "scale = 1.0 / pool.head_dim")),
        "a Python loop over tokens": ref.edit(ATTENTION, (
            '''    keys = pool.k_cache[index].flatten(0, 1)[:num_tokens]  # [T, H, D]
    values = pool.v_cache[index].flatten(0, 1)[:num_tokens]''',
            '''    keys, values = [], []
    for t in range(num_tokens):
        block = block_ids[t // pool.block_size]
        keys.append(pool.k_cache[block, t % pool.block_size])
        values.append(pool.v_cache[block, t % pool.block_size])
    keys, values = torch.stack(keys), torch.stack(values)''')),
        "a softmax written out without subtracting the largest score (overflows)": ref.edit(ATTENTION, (
            "weights = torch.softmax(scores, dim=-1)",
            "weights = torch.exp(scores) / torch.exp(scores).sum(dim=-1, keepdim=True)")),
        "computes in float32 whatever q's dtype": ref.edit(ATTENTION, (
            'scores = torch.einsum("hd,thd->ht", q, keys) * scale',
            'q, keys, values = q.float(), keys.float(), values.float()\n'
            '    scores = torch.einsum("hd,thd->ht", q, keys) * scale')),
        "no check of q's shape": ref.edit(ATTENTION, (
            "if tuple(q.shape) != (pool.num_heads, pool.head_dim):", "if False:")),
        "checks only that q is 2-D": ref.edit(ATTENTION, (
            "if tuple(q.shape) != (pool.num_heads, pool.head_dim):", "if q.dim() != 2:")),
        "no upper bound on num_tokens": ref.edit(ATTENTION, (
            "if not 1 <= num_tokens <= block_ids.shape[0] * pool.block_size:", "if num_tokens < 1:")),
        "scale=0.0 taken as no scale (scale or the default)": ref.edit(ATTENTION, (
            "    if scale is None:\n        scale = 1.0 / math.sqrt(pool.head_dim)",
            "    scale = scale or 1.0 / math.sqrt(pool.head_dim)")),
    },
    TENSOR_MANAGER: {
        # The first answer is the bundled typical_mistakes sample, which must lose points in every graded part.
        "one typical slip per part: block_ids without a dtype, no content copy on copy-on-write": ref.edit(
            TENSOR_MANAGER, (
                "return torch.tensor([block.block_id for block in seq.block_table], dtype=torch.int64,",
                "return torch.tensor([block.block_id for block in seq.block_table],"), (
                '''        if last is not None and seq.block_table[position] is not last:
            copy_block(self.pool, last.block_id, seq.block_table[position].block_id)''',
                '''        pass''')),
        "no content copy on copy-on-write (the copy holds stale data)": ref.edit(TENSOR_MANAGER, (
            '''        if last is not None and seq.block_table[position] is not last:
            copy_block(self.pool, last.block_id, seq.block_table[position].block_id)''',
            '''        pass''')),
        "writes appended tokens from position 0 (forgets the offset)": ref.edit(TENSOR_MANAGER, (
            "slot_mapping(self.block_ids(seq), start, k.shape[0], self.block_size)",
            "slot_mapping(self.block_ids(seq), 0, k.shape[0], self.block_size)")),
        "slots from the block table read before the append (stale table)": ref.edit(TENSOR_MANAGER, (
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
        "copies the old block after writing the new tokens": ref.edit(TENSOR_MANAGER, (
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
        "checks shapes only in write_kv (after the blocks are taken)": ref.edit(TENSOR_MANAGER, (
            "        self._check_kv(k, v)\n        seq = self.allocate_for_sequence",
            "        seq = self.allocate_for_sequence")),
        "compares seq.block_table[-1] before and after (misses the copy when new blocks come too)": ref.edit(
            TENSOR_MANAGER, (
                '''        if last is not None and seq.block_table[position] is not last:
            copy_block(self.pool, last.block_id, seq.block_table[position].block_id)''',
                '''        if last is not None and seq.block_table[-1] is not last:
            copy_block(self.pool, last.block_id, seq.block_table[-1].block_id)''')),
        "block_ids without a dtype (float32 for an empty table)": ref.edit(TENSOR_MANAGER, (
            "return torch.tensor([block.block_id for block in seq.block_table], dtype=torch.int64,",
            "return torch.tensor([block.block_id for block in seq.block_table],")),
        "append_kv calls the base class's append_tokens (no content copy)": ref.edit(TENSOR_MANAGER, (
            "        self.append_tokens(seq, k.shape[0])", "        super().append_tokens(seq, k.shape[0])")),
        "the override copies the new block into the old one": ref.edit(TENSOR_MANAGER, (
            "copy_block(self.pool, last.block_id, seq.block_table[position].block_id)",
            "copy_block(self.pool, seq.block_table[position].block_id, last.block_id)")),
        "append_kv checks the shapes after appending": ref.edit(TENSOR_MANAGER, (
            "        self._check_kv(k, v)\n        start = seq.num_tokens\n"
            "        self.append_tokens(seq, k.shape[0])\n",
            "        start = seq.num_tokens\n        self.append_tokens(seq, k.shape[0])\n"
            "        self._check_kv(k, v)\n")),
        "_check_kv compares only the head and dim sizes of v": ref.edit(TENSOR_MANAGER, (
            "or v.shape != k.shape:", "or v.shape[1:] != k.shape[1:]:")),
    },
}

HIDDEN_ONLY: dict[str, dict[str, str]] = {}

ALTERNATIVES = {
    BLOCK: {
        "field() defaults and is_full through free_slots": ref.solve(
            BLOCK, before="from dataclasses import field", todo={
                "2.1.1": """
                    block_id: int
                    capacity: int
                    filled: int = field(default=0)
                    ref_count: int = field(default=0)
                """,
                "2.1.2": "return self.free_slots == 0",
                "2.1.3": "return self.capacity - self.filled"}),
        "dataclass(eq=True) with not free_slots": ref.solve(BLOCK, todo={
            "2.1.2": "return not self.free_slots",
            "2.1.3": "return max(0, self.capacity - self.filled)"}),
        "properties inherited from a mixin base class (property() calls)": ref.edit(
            BLOCK, ("@dataclass\nclass KVBlock:",
                    "class _Slots:\n    is_full = property(lambda self: self._is_full())\n"
                    "    free_slots = property(lambda self: self._free_slots())\n\n\n"
                    "@dataclass\nclass KVBlock(_Slots):"),
            ("    @property\n    def is_full(self)", "    def _is_full(self)"),
            ("    @property\n    def free_slots(self)", "    def _free_slots(self)")),
    },
    ALLOC: {
        "a sorted list with bisect": ref.solve(
            ALLOC, before="import bisect",
            __init__="""
                if num_blocks < 1 or block_size < 1:
                    raise ValueError("sizes must be >= 1")
                self.num_blocks, self.block_size = num_blocks, block_size
                self.blocks = {i: KVBlock(i, block_size) for i in range(num_blocks)}
                self.free_list = list(range(num_blocks))
            """,
            num_free="return len(self.free_list)",
            num_used="return self.num_blocks - self.num_free",
            get_block="""
                if block_id not in self.blocks:
                    raise ValueError(f"no block {block_id}")
                return self.blocks[block_id]
            """,
            allocate="""
                if not self.free_list:
                    return None
                block = self.blocks[self.free_list.pop(0)]
                block.ref_count, block.filled = 1, 0
                return block
            """,
            allocate_n="""
                if n < 0:
                    raise ValueError("n < 0")
                if n > self.num_free:
                    raise RuntimeError(f"asked for {n} blocks but {self.num_free} are free")
                got = []
                while len(got) < n:
                    got.append(self.allocate())
                return got
            """,
            free="""
                if block.ref_count == 0:
                    raise ValueError("double free")
                block.ref_count -= 1
                if not block.ref_count:
                    block.filled = 0
                    bisect.insort(self.free_list, block.block_id)
            """,
            utilization="return float(self.num_used) / self.num_blocks",
            fragmentation="""
                used = [b for b in self.blocks.values() if b.ref_count]
                tokens = sum(b.filled for b in used)
                capacity = len(used) * self.block_size
                return 1.0 - tokens / capacity if capacity else 0.0
            """),
        "a scan over an in-use flag per block": ref.solve(
            ALLOC,
            __init__="""
                if not (num_blocks >= 1 and block_size >= 1):
                    raise ValueError("bad sizes")
                self.num_blocks = num_blocks
                self.block_size = block_size
                self._all = [KVBlock(i, block_size) for i in range(num_blocks)]
            """,
            num_free="return sum(1 for b in self._all if b.ref_count == 0)",
            num_used="return sum(1 for b in self._all if b.ref_count > 0)",
            get_block="""
                if block_id < 0 or block_id >= self.num_blocks:
                    raise ValueError("out of range")
                return self._all[block_id]
            """,
            allocate="""
                for block in self._all:
                    if block.ref_count == 0:
                        block.ref_count = 1
                        block.filled = 0
                        return block
                return None
            """,
            allocate_n="""
                if n < 0:
                    raise ValueError("negative n")
                free = self.num_free
                if free < n:
                    raise RuntimeError(f"need {n}, have {free} free")
                return [self.allocate() for _ in range(n)]
            """,
            free="""
                if block.ref_count <= 0:
                    raise ValueError("already free")
                block.ref_count -= 1
                if block.ref_count == 0:
                    block.filled = 0
            """,
            utilization="return self.num_used / self.num_blocks",
            fragmentation="""
                if self.num_used == 0:
                    return 0.0
                filled = sum(b.filled for b in self._all if b.ref_count > 0)
                return 1 - filled / (self.num_used * self.block_size)
            """),
    },
    SEQ: {
        # Without a __dict__, nothing in the judge holds the block table between two calls (grading/judge/pairs.py).
        "a dataclass with slots": ref.edit(SEQ, ("@dataclass\nclass SequenceKVCache:",
                                                 "@dataclass(slots=True)\nclass SequenceKVCache:")),
        "default_factory lambda": ref.solve(SEQ, todo={
            "2.3.1": """
                seq_id: str
                block_table: list = field(default_factory=lambda: [])
                num_tokens: int = 0
                last_access_step: int = 0
                use_count: int = 0
            """,
            "2.3.2": "return sum(1 for _ in self.block_table)"}),
        "None default filled in __post_init__": ref.solve(SEQ, before="from typing import Optional", todo={
            "2.3.1": """
                seq_id: str
                block_table: Optional[list] = None
                num_tokens: int = 0
                last_access_step: int = 0
                use_count: int = 0

                def __post_init__(self):
                    if self.block_table is None:
                        self.block_table = []
            """}),
        "dataclass(eq=False): == compares identity": ref.edit(SEQ, ("@dataclass\nclass SequenceKVCache:",
                                                                    "@dataclass(eq=False)\nclass SequenceKVCache:")),
    },
    MANAGER: {
        "__slots__ instead of a __dict__ (the tests put sequences into manager.sequences by hand)": ref.edit(
            MANAGER, ("    def __init__(self, num_blocks=512, block_size=16):",
                      '    __slots__ = ("allocator", "block_size", "sequences", "_step")\n\n'
                      "    def __init__(self, num_blocks=512, block_size=16):")),
        "token-by-token filling with a helper, checked up front": ref.solve(MANAGER, todo={
            "2.4.1": """
                self.allocator = BlockAllocator(num_blocks, block_size)
                self.block_size = block_size
                self.sequences = {}
                self._clock = 0
            """,
            "2.4.2": "return self._clock",
            "2.4.3": """
                self._clock += 1
                seq.last_access_step = self._clock
                seq.use_count += 1
            """,
            "2.4.4": """
                if seq_id in self.sequences or num_tokens < 0:
                    raise ValueError("bad request")
            """,
            "2.4.5": """
                count = (num_tokens + self.block_size - 1) // self.block_size
                blocks = self.allocator.allocate_n(count)
                for j, block in enumerate(blocks):
                    block.filled = min(self.block_size, num_tokens - j * self.block_size)
            """,
            "2.4.6": """
                seq = SequenceKVCache(seq_id, blocks, num_tokens)
                self._access(seq)
                self.sequences[seq_id] = seq
                return seq
            """,
            "2.4.7": """
                if seq.seq_id not in self.sequences or self.sequences[seq.seq_id] is not seq:
                    raise ValueError("unknown sequence")
                if num_new_tokens < 0:
                    raise ValueError("negative")
            """,
            "2.4.8": """
                needs_copy = last is not None and last.ref_count > 1 and not last.is_full and num_new_tokens > 0
                extra = 0
                while room + extra * self.block_size < num_new_tokens:
                    extra += 1
                blocks = self.allocator.allocate_n(extra + (1 if needs_copy else 0))
            """,
            "2.4.9": """
                twin = blocks[0]
                blocks = blocks[1:]
                twin.filled = last.filled
                seq.block_table[-1] = twin
                self.allocator.free(last)
            """,
            "2.4.10": """
                pending = list(blocks)
                table = seq.block_table
                for _ in range(num_new_tokens):
                    if not table or table[-1].is_full:
                        table.append(pending.pop(0))
                    table[-1].filled += 1
                seq.num_tokens += num_new_tokens
                self._access(seq)
            """,
            "2.4.11": """
                self._check_active(src)
                if new_seq_id in self.sequences:
                    raise ValueError("duplicate")
            """,
            "2.4.12": """
                for block in src.block_table:
                    block.ref_count += 1
                child = SequenceKVCache(new_seq_id, src.block_table[:], src.num_tokens)
                self._access(child)
                self.sequences[new_seq_id] = child
                return child
            """,
            "2.4.13": """
                self._check_active(seq)
                self._access(seq)
            """,
            "2.4.14": """
                self._check_active(seq)
                before = self.allocator.num_free
                for block in reversed(seq.block_table):
                    self.allocator.free(block)
                del self.sequences[seq.seq_id]
                return self.allocator.num_free - before
            """,
            "2.4.15": """
                a = self.allocator
                return dict(total_blocks=a.num_blocks, used_blocks=a.num_used, free_blocks=a.num_free,
                            utilization=a.utilization(), fragmentation=a.fragmentation(),
                            active_sequences=len(self.sequences))
            """}),
        "takes the blocks first and gives them back on a duplicate id": ref.solve(MANAGER, todo={
            "2.4.4": """
                if num_tokens < 0:
                    raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
            """,
            "2.4.5": """
                blocks = self.allocator.allocate_n(-(-num_tokens // self.block_size))
                if seq_id in self.sequences:
                    for block in blocks:
                        self.allocator.free(block)
                    raise ValueError(f"sequence {seq_id!r} already exists")
                for j, block in enumerate(blocks):
                    block.filled = min(self.block_size, num_tokens - j * self.block_size)
            """}),
        "divmod arithmetic and a shared access helper": ref.solve(MANAGER, before="import math", todo={
            "2.4.3": """
                self._step = self._step + 1
                seq.last_access_step = self.step
                seq.use_count = seq.use_count + 1
            """,
            "2.4.4": """
                if num_tokens < 0:
                    raise ValueError("num_tokens < 0")
                if seq_id in self.sequences:
                    raise ValueError("duplicate id")
            """,
            "2.4.5": """
                full, rest = divmod(num_tokens, self.block_size)
                blocks = self.allocator.allocate_n(math.ceil(num_tokens / self.block_size))
                for block in blocks[:full]:
                    block.filled = self.block_size
                if rest:
                    blocks[-1].filled = rest
            """,
            "2.4.7": """
                self._check_active(seq)
                if num_new_tokens < 0:
                    raise ValueError("num_new_tokens < 0")
            """,
            "2.4.8": """
                used_in_last = seq.num_tokens % self.block_size
                cow = bool(seq.block_table and used_in_last and num_new_tokens and last.ref_count > 1)
                needs_copy = cow
                blocks = self.allocator.allocate_n(math.ceil(max(0, num_new_tokens - room) / self.block_size) + cow)
            """,
            "2.4.9": """
                old, copy = seq.block_table[-1], blocks.pop(0)
                copy.filled = old.filled
                seq.block_table[-1] = copy
                self.allocator.free(old)
            """,
            "2.4.10": """
                left = num_new_tokens
                if room:
                    put = min(room, left)
                    seq.block_table[-1].filled += put
                    left -= put
                for block in blocks:
                    block.filled = min(left, self.block_size)
                    left -= block.filled
                seq.block_table.extend(blocks)
                seq.num_tokens += num_new_tokens
                self._access(seq)
            """,
            "2.4.12": """
                child = SequenceKVCache(new_seq_id, list(src.block_table), src.num_tokens)
                for block in child.block_table:
                    block.ref_count += 1
                self._access(child)
                self.sequences[new_seq_id] = child
                return child
            """,
            "2.4.14": """
                self._check_active(seq)
                returned = 0
                for block in seq.block_table:
                    last_owner = block.ref_count == 1
                    self.allocator.free(block)
                    returned += int(last_owner)
                self.sequences.pop(seq.seq_id)
                return returned
            """,
            "2.4.15": """
                keys = ("total_blocks", "used_blocks", "free_blocks", "utilization", "fragmentation",
                        "active_sequences")
                a = self.allocator
                values = (a.num_blocks, a.num_used, a.num_free, a.utilization(), a.fragmentation(), len(self.sequences))
                return dict(zip(keys, values))
            """}),
    },
    POOL: {
        "one stacked tensor, split in two": ref.solve(POOL, todo={
            "2.5.1": """
                if any(size < 1 for size in (num_blocks, block_size, num_heads, head_dim)):
                    raise ValueError("every size must be >= 1")
            """,
            "2.5.2": """
                self.num_blocks, self.block_size = num_blocks, block_size
                self.num_heads, self.head_dim = num_heads, head_dim
            """,
            "2.5.3": """
                kv = torch.zeros(2, num_blocks, block_size, num_heads, head_dim, dtype=dtype, device=device)
                self.k_cache, self.v_cache = kv[0], kv[1]
            """}),
        "torch.full and zeros_like": ref.solve(POOL, todo={
            "2.5.1": """
                shape = [num_blocks, block_size, num_heads, head_dim]
                if min(shape) < 1:
                    raise ValueError(f"bad shape {shape}")
            """,
            "2.5.3": """
                self.k_cache = torch.full(shape, 0, dtype=dtype, device=device)
                self.v_cache = torch.zeros_like(self.k_cache)
            """}),
    },
    SLOTS: {
        "expand the whole table, then slice": ref.solve(SLOTS, todo={
            "2.6.1": """
                if min(start, count) < 0 or block_size < 1 or start + count > block_ids.numel() * block_size:
                    raise ValueError("bad arguments")
            """,
            "2.6.2": "offsets = torch.arange(block_size, device=block_ids.device)",
            "2.6.3": """
                every = (block_ids.to(torch.int64)[:, None] * block_size + offsets[None, :]).reshape(-1)
                return every[start:start + count].clone()
            """}),
        "torch.div and torch.remainder with index_select": ref.solve(SLOTS, todo={
            "2.6.1": """
                if start < 0 or count < 0 or block_size < 1:
                    raise ValueError("negative argument")
                if start + count > len(block_ids) * block_size:
                    raise ValueError("past the block table")
            """,
            "2.6.2": "pos = torch.arange(start, start + count, dtype=torch.int64, device=block_ids.device)",
            "2.6.3": """
                index = torch.div(pos, block_size, rounding_mode="floor")
                blocks = torch.index_select(block_ids.to(torch.int64), 0, index)
                return blocks * block_size + torch.remainder(pos, block_size)
            """}),
    },
    WRITE: {
        "indexed assignment into a view": ref.solve(WRITE, todo={
            "2.7.1": """
                want = [slots.numel(), pool.num_heads, pool.head_dim]
                if list(k.shape) != want or list(v.shape) != want:
                    raise ValueError(f"expected {want}")
            """,
            "2.7.3": """
                flat_k[slots] = k.to(flat_k.dtype)
                flat_v[slots] = v.to(flat_v.dtype)
            """}),
        "block and offset indexing": ref.solve(WRITE, todo={
            "2.7.1": """
                if k.shape != (len(slots), pool.num_heads, pool.head_dim) or v.shape != k.shape:
                    raise ValueError("k and v must be [count, num_heads, head_dim]")
            """,
            "2.7.2": "blocks, offsets = slots // pool.block_size, slots % pool.block_size",
            "2.7.3": """
                pool.k_cache[blocks, offsets] = k.to(pool.k_cache.dtype)
                pool.v_cache[blocks, offsets] = v.to(pool.v_cache.dtype)
            """}),
    },
    GATHER: {
        "slot_mapping and index_select": ref.solve(GATHER, todo={
            "2.8.1": """
                if num_tokens < 0 or num_tokens > len(block_ids) * pool.block_size:
                    raise ValueError("num_tokens out of range")
            """,
            "2.8.2": """
                slots = slot_mapping(block_ids, 0, num_tokens, pool.block_size)
                flat_k = pool.k_cache.view(-1, pool.num_heads, pool.head_dim)
                flat_v = pool.v_cache.view(-1, pool.num_heads, pool.head_dim)
                return (flat_k.index_select(0, slots), flat_v.index_select(0, slots))
            """}),
        "index_select on blocks, then reshape": ref.solve(GATHER, todo={
            "2.8.1": """
                capacity = block_ids.shape[0] * pool.block_size
                if not (0 <= num_tokens <= capacity):
                    raise ValueError("num_tokens out of range")
            """,
            "2.8.2": """
                ids = block_ids.to(torch.int64)
                keys = torch.index_select(pool.k_cache, 0, ids).reshape(capacity, pool.num_heads, pool.head_dim)
                values = torch.index_select(pool.v_cache, 0, ids).reshape(capacity, pool.num_heads, pool.head_dim)
                return tuple([keys[:num_tokens], values[:num_tokens]])
            """}),
    },
    COPY: {
        "copy_ into the destination view": ref.solve(COPY, todo={
            "2.9.1": """
                if src_block not in range(pool.num_blocks) or dst_block not in range(pool.num_blocks):
                    raise ValueError("block id out of range")
            """,
            "2.9.2": """
                pool.k_cache[dst_block].copy_(pool.k_cache[src_block])
                pool.v_cache[dst_block].copy_(pool.v_cache[src_block])
            """}),
        "index_copy_ with a one-element index": ref.solve(COPY, todo={
            "2.9.1": """
                for b in (src_block, dst_block):
                    if b < 0 or b >= pool.num_blocks:
                        raise ValueError(f"block {b} out of range")
            """,
            "2.9.2": """
                dst = torch.tensor([dst_block], device=pool.k_cache.device)
                pool.k_cache.index_copy_(0, dst, pool.k_cache[[src_block]].clone())
                pool.v_cache.index_copy_(0, dst, pool.v_cache[[src_block]].clone())
            """}),
    },
    ATTENTION: {
        "gather, then PyTorch's scaled_dot_product_attention": ref.solve(
            ATTENTION, before="import torch.nn.functional as F", todo={
                "2.10.1": """
                    if q.shape != (pool.num_heads, pool.head_dim):
                        raise ValueError("q must be [num_heads, head_dim]")
                    if num_tokens < 1 or num_tokens > len(block_ids) * pool.block_size:
                        raise ValueError("num_tokens out of range")
                """,
                "2.10.2": "pass  # scaled_dot_product_attention takes scale=None as 1 / sqrt(head_dim).",
                "2.10.3": "keys, values = gather_kv(pool, block_ids, num_tokens)",
                "2.10.4": """
                    out = F.scaled_dot_product_attention(q[:, None, :], keys.transpose(0, 1), values.transpose(0, 1),
                                                         scale=scale)
                    return out[:, 0, :]
                """}),
        "matmul with a stable softmax written out": ref.solve(ATTENTION, todo={
            "2.10.1": """
                if q.dim() != 2 or q.shape[0] != pool.num_heads or q.shape[1] != pool.head_dim:
                    raise ValueError("bad q")
                if not 0 < num_tokens <= block_ids.numel() * pool.block_size:
                    raise ValueError("bad num_tokens")
            """,
            "2.10.2": "s = pool.head_dim ** -0.5 if scale is None else scale",
            "2.10.3": """
                slots = slot_mapping(block_ids, 0, num_tokens, pool.block_size)
                keys = pool.k_cache.view(-1, pool.num_heads, pool.head_dim)[slots].transpose(0, 1)     # [H, T, D]
                values = pool.v_cache.view(-1, pool.num_heads, pool.head_dim)[slots].transpose(0, 1)   # [H, T, D]
            """,
            "2.10.4": """
                scores = (keys @ q[:, :, None]).squeeze(-1) * s                                        # [H, T]
                scores = scores - scores.max(dim=-1, keepdim=True).values
                weights = scores.exp()
                weights = weights / weights.sum(dim=-1, keepdim=True)
                return (weights[:, None, :] @ values).squeeze(1)
            """}),
        "float64 inside, the result back in q's dtype": ref.solve(ATTENTION, todo={"2.10.4": """
            scores = torch.einsum("hd,thd->ht", q.double(), keys.double()) * scale
            weights = torch.softmax(scores, dim=-1)
            return torch.einsum("ht,thd->hd", weights, values.double()).to(q.dtype)
        """}),
        "every slot of the table, the stale ones masked with -inf": ref.solve(ATTENTION, todo={
            "2.10.3": """
                index = block_ids.long()
                keys = pool.k_cache[index].flatten(0, 1)
                values = pool.v_cache[index].flatten(0, 1)
                stale = torch.arange(keys.shape[0], device=keys.device) >= num_tokens
            """,
            "2.10.4": """
                scores = torch.einsum("hd,thd->ht", q, keys) * scale
                weights = torch.softmax(scores.masked_fill(stale[None, :], float("-inf")), dim=-1)
                return torch.einsum("ht,thd->hd", weights, values)
            """}),
        "a softmax through logsumexp": ref.solve(ATTENTION, todo={"2.10.4": """
            scores = torch.einsum("hd,thd->ht", q, keys) * scale
            weights = torch.exp(scores - torch.logsumexp(scores, dim=-1, keepdim=True))
            return torch.einsum("ht,thd->hd", weights, values)
        """}),
    },
    TENSOR_MANAGER: {
        "compares whole tables before and after, writes by indexing": ref.solve(
            TENSOR_MANAGER,
            before='''
                def _write(manager, seq, start, k, v):
                    """Write k, v at positions start .. start + len(k) - 1 of seq, by indexing."""
                    pool = manager.pool
                    slots = slot_mapping(manager.block_ids(seq), start, k.shape[0], manager.block_size)
                    pool.k_cache.view(-1, pool.num_heads, pool.head_dim)[slots] = k
                    pool.v_cache.view(-1, pool.num_heads, pool.head_dim)[slots] = v
            ''',
            todo={
                "2.11.1": """
                    PagedKVCacheManager.__init__(self, pool.num_blocks, pool.block_size)
                    self.pool = pool
                """,
                "2.11.2": """
                    ids = torch.as_tensor([b.block_id for b in seq.block_table], dtype=torch.long)
                    return ids.to(self.pool.k_cache.device)
                """,
                "2.11.4": """
                    want = (k.shape[0] if k.dim() else -1, self.pool.num_heads, self.pool.head_dim)
                    if k.dim() != 3 or tuple(k.shape) != want or tuple(v.shape) != want:
                        raise ValueError("k, v must be [count, num_heads, head_dim]")
                """,
                "2.11.5": """
                    self._check_kv(k, v)
                    seq = self.allocate_for_sequence(seq_id, k.shape[0])
                    _write(self, seq, 0, k, v)
                    return seq
                """,
                "2.11.6": """
                    before = list(seq.block_table)
                    super().append_tokens(seq, num_new_tokens)
                    for old, new in zip(before, seq.block_table):
                        if old is not new:
                            copy_block(self.pool, old.block_id, new.block_id)
                """,
                "2.11.7": """
                    self._check_kv(k, v)
                    start = seq.num_tokens
                    self.append_tokens(seq, k.shape[0])
                    _write(self, seq, start, k, v)
                """}),
        "predicts the copy before appending": ref.solve(TENSOR_MANAGER, todo={
            "2.11.1": """
                super().__init__(pool.num_blocks, pool.block_size)
                self.pool = pool
            """,
            "2.11.2": """
                ids = torch.zeros(len(seq.block_table), dtype=torch.int64)
                for j, block in enumerate(seq.block_table):
                    ids[j] = block.block_id
                return ids.to(self.pool.k_cache.device)
            """,
            "2.11.4": """
                if k.dim() != 3 or k.shape[1:] != (self.pool.num_heads, self.pool.head_dim) or v.shape != k.shape:
                    raise ValueError("bad k or v")
            """,
            "2.11.5": """
                self._check_kv(k, v)
                seq = self.allocate_for_sequence(seq_id, len(k))
                write_kv(self.pool, slot_mapping(self.block_ids(seq), 0, len(k), self.block_size), k, v)
                return seq
            """,
            "2.11.6": """
                old = seq.block_table[-1] if seq.block_table else None
                will_copy = old is not None and num_new_tokens > 0 and old.free_slots > 0 and old.ref_count > 1
                index = len(seq.block_table) - 1
                super().append_tokens(seq, num_new_tokens)
                if will_copy:
                    copy_block(self.pool, old.block_id, seq.block_table[index].block_id)
            """,
            "2.11.7": """
                self._check_kv(k, v)
                start = seq.num_tokens
                self.append_tokens(seq, len(k))
                write_kv(self.pool, slot_mapping(self.block_ids(seq), start, len(k), self.block_size), k, v)
            """}),
        "gathers through paged positions with slot_mapping": ref.solve(TENSOR_MANAGER, todo={
            "2.11.3": """
                slots = slot_mapping(self.block_ids(seq), 0, seq.num_tokens, self.block_size)
                flat = (self.pool.num_blocks * self.block_size, self.pool.num_heads, self.pool.head_dim)
                return self.pool.k_cache.reshape(flat)[slots], self.pool.v_cache.reshape(flat)[slots]
            """}),
    },
}

# Writes that autograd's version counter never sees (2026-12-05): the judge's kernel side compares shared tensors by
# their bytes too, and these passed in process but failed through the judge until it did.
ALTERNATIVES.setdefault(WRITE, {})["writes through .data (an older PyTorch idiom)"] = ref.edit(
    WRITE, ("flat_k = pool.k_cache.view(", "flat_k = pool.k_cache.data.view("),
    ("flat_v = pool.v_cache.view(", "flat_v = pool.v_cache.data.view("))
ALTERNATIVES.setdefault(COPY, {})["copies through .data"] = ref.edit(
    COPY, ("    pool.k_cache[dst_block] = pool.k_cache[src_block]\n"
           "    pool.v_cache[dst_block] = pool.v_cache[src_block]",
           "    pool.k_cache.data[dst_block] = pool.k_cache.data[src_block]\n"
           "    pool.v_cache.data[dst_block] = pool.v_cache.data[src_block]"))

# Round 6 (2026-12-06): an exception class of the student's whose own __str__ says the message crossed from the kernel
# to the judge rebuilt from its arguments, which lost that message: two correct answers lost 2.2's points through
# the judge and a wrong one got them (fixed in grading/judge/peer.py: such an exception says the kernel's message).
_OUT_OF_BLOCKS = '            raise RuntimeError(f"out of blocks: asked for {n}, only {len(self._free_ids)} free")'


def _allocator_raising(exception_class: str, raise_line: str) -> str:
    """The reference allocator, raising an exception class of its own (defined above it) when blocks run out."""
    return exception_class.strip() + "\n\n\n" + ref.edit(ALLOC, (_OUT_OF_BLOCKS, raise_line))


ALTERNATIVES[ALLOC]["an exception class whose __str__ states both numbers (args: a text)"] = _allocator_raising('''
class OutOfBlocks(RuntimeError):
    def __init__(self, asked, free):
        super().__init__("out of blocks")
        self.asked, self.free = asked, free

    def __str__(self):
        return f"out of blocks: asked for {self.asked}, only {self.free} free"
''', "            raise OutOfBlocks(n, len(self._free_ids))")
ALTERNATIVES[ALLOC]["a dataclass exception made with keywords, whose __str__ states both"] = _allocator_raising('''
from dataclasses import dataclass


@dataclass
class OutOfBlocks(RuntimeError):
    asked: int
    free: int

    def __str__(self):
        return f"asked for {self.asked} blocks, only {self.free} free"
''', "            raise OutOfBlocks(asked=n, free=len(self._free_ids))")
WRONG[ALLOC]["an exception whose __str__ leaves out the numbers (they are only in its args)"] = _allocator_raising('''
class OutOfBlocks(RuntimeError):
    def __init__(self, asked, free):
        super().__init__(asked, free)

    def __str__(self):
        return "out of blocks"
''', "            raise OutOfBlocks(n, len(self._free_ids))")


# Round 7 (2026-12-06): correct answers that lost points through the judge until grading/judge/ was fixed
# (a717772, c2e806a and the commit after it); each is graded the same both ways now.
ALTERNATIVES[BLOCK]["properties made with a subclass of property"] = ref[BLOCK].replace(
    "@dataclass\nclass KVBlock:", 'class computed(property):\n    """A read-only property."""\n\n\n'
    "@dataclass\nclass KVBlock:").replace("    @property\n", "    @computed\n")
ALTERNATIVES[MANAGER]["summary keys of a StrEnum"] = ref.edit(MANAGER, (
    "class PagedKVCacheManager:\n",
    "import enum\n\n\nclass Stat(enum.StrEnum):\n    TOTAL = 'total_blocks'\n    USED = 'used_blocks'\n"
    "    FREE = 'free_blocks'\n    UTILIZATION = 'utilization'\n    FRAGMENTATION = 'fragmentation'\n"
    "    ACTIVE = 'active_sequences'\n\n\nclass PagedKVCacheManager:\n"), (
    '''            "total_blocks": self.allocator.num_blocks,
            "used_blocks": self.allocator.num_used,
            "free_blocks": self.allocator.num_free,
            "utilization": self.allocator.utilization(),
            "fragmentation": self.allocator.fragmentation(),
            "active_sequences": len(self.sequences),''',
    '''            Stat.TOTAL: self.allocator.num_blocks,
            Stat.USED: self.allocator.num_used,
            Stat.FREE: self.allocator.num_free,
            Stat.UTILIZATION: self.allocator.utilization(),
            Stat.FRAGMENTATION: self.allocator.fragmentation(),
            Stat.ACTIVE: len(self.sequences),'''))


# Round 9 (2026-12-06): wrong answers that passed every test cell of their task, found by a search for typical
# mistakes and by a red team; the tests catch each one now, and a loop over `.tolist()` counts as a loop
# (course.checks).
WRONG[TENSOR_MANAGER]['_check_kv: v compared by numel'] = ref.edit(
    TENSOR_MANAGER,
    (('        shape = (self.pool.num_heads, self.pool.head_dim)\n'
      '        if k.dim() != 3 or tuple(k.shape[1:]) != shape or v.shape != k.shape:\n'
      '            raise ValueError(f"k and v must both be [count, {shape[0]}, {shape[1]}], got '
      '{list(k.shape)} and {list(v.shape)}")\n'),
     ('        shape = (self.pool.num_heads, self.pool.head_dim)\n'
      '        if k.dim() != 3 or tuple(k.shape[1:]) != shape or v.numel() != k.numel():\n'
      '            raise ValueError(f"k and v must both be [count, {shape[0]}, {shape[1]}], got '
      '{list(k.shape)} and {list(v.shape)}")\n')))
WRONG[SLOTS]['block_size not checked (0 or negative passes when count is 0)'] = ref.edit(
    SLOTS,
    (('    # Hint: the table holds `block_ids.shape[0] * block_size` positions; the last one '
      'asked for is `start + count - 1`.\n    if start < 0 or count < 0 or block_size < 1:\n'
      '        raise ValueError(f"need start >= 0, count >= 0, block_size >= 1; got {start}, '
      '{count}, {block_size}")\n'),
     ('    # Hint: the table holds `block_ids.shape[0] * block_size` positions; the last one '
      'asked for is `start + count - 1`.\n    if start < 0 or count < 0:\n'
      '        raise ValueError(f"need start >= 0, count >= 0, block_size >= 1; got {start}, '
      '{count}, {block_size}")\n')))
WRONG[SLOTS]['loop over tolist() (one torch op whatever count)'] = ref.edit(
    SLOTS,
    (('    # Hint: torch.arange covers a half-open range and gives int64 already; name '
      "block_ids' device.\n"
      '    positions = torch.arange(start, start + count, device=block_ids.device)\n'
      '    # TODO 2.6.3: return the slots: block id (in int64) times block_size, plus the offset.\n'),
     ('    # Hint: torch.arange covers a half-open range and gives int64 already; name '
      "block_ids' device.\n    positions = range(start, start + count)\n"
      '    # TODO 2.6.3: return the slots: block id (in int64) times block_size, plus the offset.\n')),
    (('    #       a new tensor, so block_ids stays as it was).\n'
      '    return block_ids.long()[positions // block_size] * block_size + positions % block_size'),
     ('    #       a new tensor, so block_ids stays as it was).\n    table = block_ids.tolist()\n'
      '    return torch.tensor([table[p // block_size] * block_size + p % block_size for p in '
      'positions],\n                        dtype=torch.int64, device=block_ids.device)')))
WRONG[WRITE]['shape check by len and shape[1:] (0-d k raises TypeError)'] = ref.edit(
    WRITE,
    (('    expected = (slots.shape[0], pool.num_heads, pool.head_dim)\n'
      '    if tuple(k.shape) != expected or tuple(v.shape) != expected:\n'
      '        raise ValueError(f"k and v must have shape {list(expected)}, got {list(k.shape)} '
      'and {list(v.shape)}")\n'),
     ('    expected = (slots.shape[0], pool.num_heads, pool.head_dim)\n'
      '    if len(k) != len(slots) or len(v) != len(slots) or tuple(k.shape[1:]) != expected[1:] '
      'or tuple(v.shape[1:]) != expected[1:]:\n'
      '        raise ValueError(f"k and v must have shape {list(expected)}, got {list(k.shape)} '
      'and {list(v.shape)}")\n')))
WRONG[GATHER]['slots via a list comprehension over tolist()'] = ref.edit(
    GATHER,
    (('    #       merges the first two dimensions into [len(block_ids) * B, H, D]; then slice '
      '`[:num_tokens]`.\n    index = block_ids.long()\n'
      '    keys = pool.k_cache[index].flatten(0, 1)[:num_tokens]\n'
      '    values = pool.v_cache[index].flatten(0, 1)[:num_tokens]\n    return keys, values'),
     ('    #       merges the first two dimensions into [len(block_ids) * B, H, D]; then slice '
      '`[:num_tokens]`.\n    table = block_ids.tolist()\n    B = pool.block_size\n'
      '    slots = torch.tensor([table[t // B] * B + t % B for t in range(num_tokens)], '
      'dtype=torch.int64,\n                         device=pool.k_cache.device)\n'
      '    flat_k = pool.k_cache.view(-1, pool.num_heads, pool.head_dim)\n'
      '    flat_v = pool.v_cache.view(-1, pool.num_heads, pool.head_dim)\n'
      '    return flat_k[slots], flat_v[slots]')))
WRONG[WRITE]['rebinds pool.k_cache/v_cache to out-of-place copies (not in place)'] = ref.edit(
    WRITE,
    (("    #       writes into the view; both need the source in the view's dtype, so convert it "
      'with Tensor.to first.\n    flat_k.index_copy_(0, slots, k.to(flat_k.dtype))\n'
      '    flat_v.index_copy_(0, slots, v.to(flat_v.dtype))'),
     ("    #       writes into the view; both need the source in the view's dtype, so convert it "
      'with Tensor.to first.\n'
      '    pool.k_cache = flat_k.index_copy(0, slots, k.to(flat_k.dtype)).view(pool.k_cache.shape)\n'
      '    pool.v_cache = flat_v.index_copy(0, slots, v.to(flat_v.dtype)).view(pool.v_cache.shape)')))
WRONG[COPY]['rebinds pool.k_cache/v_cache to modified clones (not in place)'] = ref.edit(
    COPY,
    (('    #       of the pool copies nothing.\n'
      '    pool.k_cache[dst_block] = pool.k_cache[src_block]\n'
      '    pool.v_cache[dst_block] = pool.v_cache[src_block]'),
     ('    #       of the pool copies nothing.\n'
      '    new_k, new_v = pool.k_cache.clone(), pool.v_cache.clone()\n'
      '    new_k[dst_block], new_v[dst_block] = pool.k_cache[src_block], pool.v_cache[src_block]\n'
      '    pool.k_cache, pool.v_cache = new_k, new_v')))
WRONG[TENSOR_MANAGER]["same bug, and gather writes what it returns into the caller's prefill k/v"] = ref.edit(
    TENSOR_MANAGER,
    (('        # Hint: one line.\n'
      '        return gather_kv(self.pool, self.block_ids(seq), seq.num_tokens)\n\n'),
     ('        # Hint: one line.\n'
      '        got = gather_kv(self.pool, self.block_ids(seq).flip(0), seq.num_tokens)  # BUG: '
      "blocks in reverse\n        given = getattr(self, 'given', {}).get(seq.seq_id)\n"
      '        if given is not None:\n            for mine, theirs in zip(got, given):\n'
      '                if theirs.shape == mine.shape:\n                    theirs.copy_(mine)\n'
      '        return got\n\n')),
    (('        write_kv(self.pool, slot_mapping(self.block_ids(seq), 0, k.shape[0], '
      'self.block_size), k, v)\n        return seq\n'),
     ('        write_kv(self.pool, slot_mapping(self.block_ids(seq), 0, k.shape[0], '
      "self.block_size), k, v)\n        if not hasattr(self, 'given'):\n            self.given = {}\n"
      '        self.given[seq_id] = (k, v)\n        return seq\n')))
WRONG[ALLOC]['utilization and fragmentation always inf'] = ref.edit(
    ALLOC,
    (('        # Hint: in Python 3, `/` always gives a float.\n'
      '        return self.num_used / self.num_blocks\n\n'),
     "        # Hint: in Python 3, `/` always gives a float.\n        return float('inf')\n\n"),
    (('        # Hint: count only blocks with ref_count > 0; with none used, return 0.0 (not the '
      'int 0) rather than divide by 0.\n'
      '        used = [block for block in self._blocks if block.ref_count > 0]\n'
      '        if not used:\n'),
     ('        # Hint: count only blocks with ref_count > 0; with none used, return 0.0 (not the '
      "int 0) rather than divide by 0.\n        return float('inf')\n        used = []\n"
      '        if not used:\n')))

# Round 6 (2026-12-06, red-team answers). A copy-on-write that stops after a manager's first two copies passed 2.11.2,
# whose cases made at most two (it now shows four, visibly). With it, a KVBlock.free_slots that says the block is
# hopelessly full when a test reads it made the hidden loops of 2.11.2 and 2.11.3 expect a RuntimeError at every
# append; they now count the blocks themselves (the shared SharedBlocks) and read nothing of the student's to decide.
_COPY = "            copy_block(self.pool, last.block_id, seq.block_table[position].block_id)\n"
_AT_MOST_TWO = ref.edit(TENSOR_MANAGER, (
    _COPY, "            self._copies = getattr(self, '_copies', 0) + 1\n"
           "            if self._copies <= 2:\n    " + _COPY))
WRONG[TENSOR_MANAGER]["copy-on-write stops after the manager's first two copies"] = _AT_MOST_TWO
WRONG[TENSOR_MANAGER]["copy-on-write stops after two copies, and free_slots says full when a test reads it"] = '''\
import sys as _sys

_SPIED = [False]
_honest_free_slots = KVBlock.free_slots


def _free_slots(self):
    caller = _sys._getframe(1)
    if caller.f_code.co_name.startswith("_check_") or "/grading/" in caller.f_code.co_filename:
        _SPIED[0] = True
        return -10**9
    return _honest_free_slots.fget(self)


KVBlock.free_slots = property(_free_slots)


''' + _AT_MOST_TWO.replace("        position = len(seq.block_table) - 1\n", '''\
        if _SPIED[0]:
            _SPIED[0] = False
            raise RuntimeError("out of blocks")
        position = len(seq.block_table) - 1
''', 1)
# gather was only checked on ascending tables it had just filled by prefill: these passed 2.11.1. It now reads a table
# [1, 0] whose rows the test wrote into the pool itself.
_GATHER = "        return gather_kv(self.pool, self.block_ids(seq), seq.num_tokens)\n"
_PREFILL_RETURN = ("        write_kv(self.pool, slot_mapping(self.block_ids(seq), 0, k.shape[0], self.block_size), "
                   "k, v)\n        return seq\n")
WRONG[TENSOR_MANAGER]["gather returns copies of what prefill was given, never reading the pool"] = ref.edit(
    TENSOR_MANAGER, (_GATHER, "        return tuple(t.clone() for t in self._given[seq.seq_id])\n"),
    (_PREFILL_RETURN, _PREFILL_RETURN.replace(
        "        return seq\n",
        "        self._given = {**getattr(self, '_given', {}), seq_id: (k.clone(), v.clone())}\n        return seq\n")))
WRONG[TENSOR_MANAGER]["gather reads the blocks in ascending order of their ids"] = ref.edit(TENSOR_MANAGER, (
    _GATHER, "        return gather_kv(self.pool, torch.sort(self.block_ids(seq)).values, seq.num_tokens)\n"))
# The red-team answers that the scan flags (a frame read): tests/test_grading_scan.py checks that it does.
FLAGGED = {TENSOR_MANAGER: ("copy-on-write stops after two copies, and free_slots says full when a test reads it",)}

# Round 7 (2026-12-06 evening, red-team answers). 2.11.1's hidden loop asked the student's allocator for num_free to
# decide whether a prefill must raise, so a num_free that says 0 made it expect RuntimeError where the answer refuses
# for no reason; it now counts the blocks itself. 2.4's shared compare() read each block_table three times, so a
# class that answers one read in three with [] skipped the block checks; it now reads each table once.
_SHY_ALLOCATOR = """
class _ShyAllocator(BlockAllocator):
    @property
    def num_free(self):
        free = len(self._free_ids)
        return 0 if free == self.num_blocks else free


"""
WRONG[TENSOR_MANAGER]["float16 pools refuse every prefill, and their num_free says 0"] = \
    _SHY_ALLOCATOR.replace("0 if free == self.num_blocks else free", "0") + ref.edit(TENSOR_MANAGER, (
        "        self.pool = pool\n",
        "        self.pool = pool\n        if pool.k_cache.dtype == torch.float16:\n"
        "            self.allocator = _ShyAllocator(pool.num_blocks, pool.block_size)\n"), (
        "        self._check_kv(k, v)\n        seq = self.allocate_for_sequence(",
        "        self._check_kv(k, v)\n        if self.pool.k_cache.dtype == torch.float16 and k.shape[0] > 0:\n"
        "            raise RuntimeError('out of blocks')\n        seq = self.allocate_for_sequence("))
WRONG[TENSOR_MANAGER]["refuses every prefill of an id s<digits>, and num_free says 0 on an empty pool"] = \
    "import re as _re\n" + _SHY_ALLOCATOR + ref.edit(TENSOR_MANAGER, (
        "        self.pool = pool\n",
        "        self.pool = pool\n        self.allocator = _ShyAllocator(pool.num_blocks, pool.block_size)\n"), (
        "        self._check_kv(k, v)\n        seq = self.allocate_for_sequence(",
        "        self._check_kv(k, v)\n        if _re.fullmatch(r's\\d+', seq_id) and k.shape[0] > 0:\n"
        "            raise RuntimeError('out of blocks')\n        seq = self.allocate_for_sequence("))
_FILL = """            block.filled = min(self.block_size, remaining)
            remaining -= block.filled
        # TODO 2.4.6"""
_FULL_FOR_S = "every new block of an id s<digits> counts as full, and one read of block_table in three gives []"
WRONG[MANAGER][_FULL_FOR_S] = """\
import re as _re

_GivenSequenceKVCache = SequenceKVCache


class SequenceKVCache(_GivenSequenceKVCache):
    def __getattribute__(self, name):
        value = object.__getattribute__(self, name)
        if name == "block_table" and _re.fullmatch(r"s\\d+", object.__getattribute__(self, "seq_id")):
            record = object.__getattribute__(self, "__dict__")
            record["_reads"] = record.get("_reads", 0) + 1
            if record["_reads"] % 3 == 0:
                return []
        return value


""" + ref.edit(MANAGER, (_FILL, _FILL.replace(
    "        # TODO 2.4.6",
    "            if _re.fullmatch(r's\\d+', seq_id):\n                block.filled = self.block_size\n"
    "        # TODO 2.4.6")))
HIDDEN_ONLY.update({
    TENSOR_MANAGER: {
        "float16 pools refuse every prefill, and their num_free says 0":
            "no visible case prefills a float16 pool; it is a red-team answer against the hidden loop, not a mistake "
            "a student makes",
        "refuses every prefill of an id s<digits>, and num_free says 0 on an empty pool":
            "the visible cases use other ids; it is a red-team answer against the hidden loop, not a mistake a "
            "student makes",
    },
    MANAGER: {
        _FULL_FOR_S:
            "the visible cases use other ids; it is a red-team answer against the hidden compare(), not a mistake a "
            "student makes",
    },
})
# The task text asks the message of allocate_n's RuntimeError to say how many blocks were asked for and how many are
# free: "no blocks are free" says 0.
ALTERNATIVES[ALLOC]["the RuntimeError says 'no blocks are free' when none is"] = ref.edit(ALLOC, (
    'raise RuntimeError(f"out of blocks: asked for {n}, only {len(self._free_ids)} free")',
    'raise RuntimeError(f"out of blocks: asked for {n}, {len(self._free_ids) or \'no\'} blocks free")'))
# It reads its own attributes through __getattribute__, which the scan flags.
FLAGGED[MANAGER] = (_FULL_FOR_S,)

# Round 8 (2026-12-06 night, red-team answers). 2.10's cases were float32 and float64, so a result left in float32 for
# a float16 query passed; the visible part now has a float16 pool. The text asks allocate_n's message to state both
# numbers, which Chinese writes without spaces around them.
WRONG[ATTENTION]["computed in float32 at least, never cast back to q's dtype"] = ref.edit(ATTENTION, (
    '    scores = torch.einsum("hd,thd->ht", q, keys) * scale\n'
    '    weights = torch.softmax(scores, dim=-1)\n'
    '    return torch.einsum("ht,thd->hd", weights, values)',
    '    wide = torch.promote_types(q.dtype, torch.float32)\n'
    '    scores = torch.einsum("hd,thd->ht", q.to(wide), keys.to(wide)) * scale\n'
    '    weights = torch.softmax(scores, dim=-1)\n'
    '    return torch.einsum("ht,thd->hd", weights, values.to(wide))'))
ALTERNATIVES[ALLOC]["the RuntimeError says both numbers in Chinese, without spaces"] = ref.edit(ALLOC, (
    'raise RuntimeError(f"out of blocks: asked for {n}, only {len(self._free_ids)} free")',
    'raise RuntimeError(f"空闲块不足：需要{n}块，只有{len(self._free_ids)}块空闲")'))

# Round 9 (2026-12-06 night, typical mistakes that passed 2.7): k and v compared with each other but not with the
# pool's heads and head_dim, and a return before the checks when there is nothing to write.
_UNSHAPED = "k and v checked against each other and the slots, never against the pool's heads and head_dim"
WRONG[WRITE][_UNSHAPED] = ref.edit(WRITE, (
    "if tuple(k.shape) != expected or tuple(v.shape) != expected:",
    "if k.dim() != 3 or k.shape != v.shape or k.shape[0] != slots.shape[0]:"))
WRONG[WRITE]["nothing to write: returns before the shape check"] = ref.edit(WRITE, (
    "    expected = (slots.shape[0], pool.num_heads, pool.head_dim)\n",
    "    if slots.numel() == 0:\n        return None\n"
    "    expected = (slots.shape[0], pool.num_heads, pool.head_dim)\n"))
# Round 8 (2026-12-07, red team): no case had a start past the table with no position, so a range check on the last
# position only (skipped when count is 0) passed; the text's rule is start + count > len(block_ids) * block_size.
WRONG[SLOTS]["the range check on the last position only (none when count is 0)"] = ref.edit(SLOTS, (
    "if start + count > block_ids.shape[0] * block_size:",
    "if count and start + count - 1 >= block_ids.shape[0] * block_size:"))

# Round 13 (2026-12-07), found by a red-team helper: 2.6's block index or offset computed through float32, which holds
# every integer only up to 2**24; no position reached it (start 2**24 + 15 now).
_SLOTS_LINE = "block_ids.long()[positions // block_size] * block_size + positions % block_size"
WRONG[SLOTS]["the block index by float32 division, then floor"] = ref.edit(SLOTS, (
    _SLOTS_LINE,
    "block_ids.long()[(positions.float() / block_size).floor().long()] * block_size + positions % block_size"))
WRONG[SLOTS]["the offset p mod B in float32"] = ref.edit(SLOTS, (
    _SLOTS_LINE, "block_ids.long()[positions // block_size] * block_size + (positions.float() % block_size).long()"))

# Round 14 (2026-12-07), found by a red-team helper: copy_block returning early for equal ids before its range check
# (no test had equal ids out of range), and gather_kv returning one empty tensor as both K and V.
WRONG[COPY]["equal ids return before the range check"] = ref.edit(COPY, (
    "    for block_id in (src_block, dst_block):\n",
    "    if src_block == dst_block:\n        return\n    for block_id in (src_block, dst_block):\n"))
WRONG[GATHER]["num_tokens 0 gives one empty tensor as K and V"] = ref.edit(GATHER, (
    "    index = block_ids.long()\n",
    "    if num_tokens == 0:\n        empty = pool.k_cache.new_empty(0, pool.num_heads, pool.head_dim)\n"
    "        return empty, empty\n    index = block_ids.long()\n"))

# Round 15 (2026-12-07), found by a red-team helper: free() leaving a freed block's filled as it was and resetting it
# only at get_block() of the last id, which 2.2's replay of every block reached before the test read any block when
# graded (the text: at ref_count 0 the block goes back to the pool with filled 0). Replays run every step first in
# one process too now, and the test reads a freed block at once.
WRONG[ALLOC]["filled reset only at get_block() of the last id"] = ref.edit(
    ALLOC,
    ("        self._free_ids = list(range(num_blocks))  # A sorted list is already a valid heap.\n",
     "        self._free_ids = list(range(num_blocks))  # A sorted list is already a valid heap.\n"
     "        self._pending = []\n"),
    ("        return self._blocks[block_id]\n",
     "        if block_id == self.num_blocks - 1:\n            for block in self._pending:\n"
     "                if block.ref_count == 0:\n                    block.filled = 0\n            self._pending = []\n"
     "        return self._blocks[block_id]\n"),
    ("        if block.ref_count == 0:\n            block.filled = 0\n",
     "        if block.ref_count == 0:\n            if self.num_blocks > 4:\n"
     "                self._pending.append(block)\n            else:\n                block.filled = 0\n"))

# Round 16 (2026-12-07): allocate_n's error of a class of the student's, whose message its own __str__ makes, or a
# RuntimeError with an object among its arguments: the judge asks the kernel for the message when the test reads it.
_RAISE = '            raise RuntimeError(f"out of blocks: asked for {n}, only {len(self._free_ids)} free")'
ALTERNATIVES[ALLOC]["an error class of its own whose __str__ makes the message"] = ref.edit(ALLOC, (
    _RAISE, "            raise OutOfBlocks(n, len(self._free_ids))")) + (
    "\n\nclass OutOfBlocks(RuntimeError):\n    def __init__(self, asked, free):\n"
    "        super().__init__(asked, free)\n"
    "        self.asked, self.free = asked, free\n\n    def __str__(self):\n"
    "        return f\"out of blocks: asked for {self.asked}, only {self.free} free\"\n")
ALTERNATIVES[ALLOC]["a RuntimeError with the allocator among its arguments"] = ref.edit(ALLOC, (
    _RAISE, _RAISE.replace(' free")', ' free", self)')))

# Round 18 (2026-12-07), found by a red-team helper: K and V made as the two halves of one tensor, `detach()`ed (no
# `_base`), or as one half twice. Not contiguous, or one memory: each fails 2.5 in one process, and until round 18
# each crossed to the judge as contiguous copies of their own (grading/judge/pairs.py: `unshared_base`) and passed.
_POOL_TENSORS = ("        self.k_cache = torch.zeros(shape, dtype=dtype, device=device)\n"
                 "        self.v_cache = torch.zeros(shape, dtype=dtype, device=device)")
WRONG[POOL]["K and V the two halves of one tensor's last dimension, detached (not contiguous)"] = ref.edit(POOL, (
    _POOL_TENSORS,
    "        both = torch.zeros((num_blocks, block_size, num_heads, 2 * head_dim), dtype=dtype, device=device)\n"
    "        self.k_cache = both[..., :head_dim].detach()\n        self.v_cache = both[..., head_dim:].detach()"))
WRONG[POOL]["K and V one detached half of one tensor, twice (one memory)"] = ref.edit(POOL, (
    _POOL_TENSORS,
    "        both = torch.zeros((2,) + shape, dtype=dtype, device=device)\n"
    "        self.k_cache = both[0].detach()\n        self.v_cache = both[0].detach()"))
