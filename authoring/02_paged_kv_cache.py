# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: nbgrader,given,tags,-all
#     formats: source/02_paged_kv_cache//ipynb,authoring//py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] given="header"
# # 02. Paged KV cache | 分页 KV 缓存
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/kvcache-course/kv-cache-eviction/blob/main/release/02_paged_kv_cache/02_paged_kv_cache.ipynb)
# [![ModelScope](https://img.shields.io/badge/ModelScope-Open%20from%20URL-624aff)](https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/02_paged_kv_cache/02_paged_kv_cache.ipynb)
# [![GitHub](https://img.shields.io/badge/GitHub-release%2F02_paged_kv_cache-black)](https://github.com/kvcache-course/kv-cache-eviction/blob/main/release/02_paged_kv_cache/02_paged_kv_cache.ipynb)
#
# **Difficulty:** ★★☆ intermediate · **Time:** about 120 minutes · **Points:** 38 · **GPU:** tasks 2.5–2.11 run on CUDA when a GPU is present; everything also runs on the CPU.
#
# **难度：** ★★☆ 中级 · **用时：** 约 120 分钟 · **总分：** 38 · **GPU：** 任务 2.5–2.11 在有 GPU 时于 CUDA 上运行；所有内容也都能在 CPU 上运行。
#
# **ModelScope (魔搭):** in your notebook instance's JupyterLab, choose *File → Open from URL…* and
# paste the ModelScope badge's link (this notebook's file in the course repository).
# 在魔搭 Notebook 的 JupyterLab 中选择 *File → Open from URL…*，粘贴 ModelScope 徽章的链接即可打开本 notebook。
#
# How to work: run the setup cell. In each task, write what each numbered `# TODO` asks for in place of
# `# YOUR CODE HERE`, then run the test cells under it. Visible tests show what is expected; hidden tests
# check more cases when your notebook is graded.
#
# 做法：先运行环境配置单元。在每个任务中，按每个带编号的 `# TODO` 的要求，把代码写在 `# YOUR CODE HERE` 处，
# 然后运行其下方的测试单元。可见测试说明期望的结果；评分时，隐藏测试会检查更多情况。

# %% nbgrader={"grade": false, "grade_id": "setup", "locked": true, "schema_version": 3, "solution": false, "task": false} given="setup"
# Setup: install the course's helper package when it is missing (Colab, ModelScope),
# then pick the device and seed every random generator.
import importlib.util
import os
import subprocess
import sys

if importlib.util.find_spec("course") is None:
    # COURSE_INSTALL_SPEC may name a mirror or a local checkout instead of GitHub.
    spec = os.environ.get("COURSE_INSTALL_SPEC", "kv-cache-course @ git+https://github.com/kvcache-course/kv-cache-eviction@main")
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", spec])

import torch

from course.env import pick_device, seed_everything, setup_summary

DEVICE = pick_device()
SEED = 0
seed_everything(SEED)
print(setup_summary(DEVICE, SEED))

# %% [markdown]
# ## Learning goals | 学习目标
#
# After this notebook you can:
# 1. explain why an LLM server pages its KV cache the way an operating system pages memory, and what a block table is;
# 2. compute how many bytes one token of KV cache costs for a real model, and how much of a paged cache is wasted;
# 3. build the block-level metadata that every eviction policy in this course ranks and frees: blocks, reference counts,
#    per-sequence `last_access_step` and `use_count`, fork with copy-on-write;
# 4. store keys and values in a tensor pool on any device and run paged attention that equals dense attention, without a
#    Python loop over tokens or blocks.
#
# 完成本 notebook 后，你能够：
# 1. 解释 LLM 推理服务为什么像操作系统管理内存那样对 KV 缓存分页，以及什么是块表（block table）；
# 2. 计算真实模型中一个 token 的 KV 缓存占多少字节，以及分页缓存浪费了多少；
# 3. 构建本课程中所有驱逐策略所排序、所释放的块级元数据：块、引用计数、每个序列的 `last_access_step` 与 `use_count`、
#    带写时复制（copy-on-write）的 fork；
# 4. 把键和值存放在任意设备上的张量池中，实现与稠密注意力结果一致的分页注意力，且不对 token 或块写 Python 循环。
#
# ## Paging the KV cache | 对 KV 缓存分页
#
# During decoding, every layer keeps the key and value vector of every earlier token of a sequence: the **KV cache**. Its
# size grows by one token per step and nobody knows in advance where a sequence will stop. Reserving one contiguous
# region of the maximum length per sequence wastes most of it. vLLM's PagedAttention (Kwon et al., SOSP 2023) borrows
# the answer of operating systems: cut memory into fixed-size **blocks** (pages) of `block_size` tokens, give a sequence
# blocks only as it grows, and keep a per-sequence **block table** (a page table) that maps logical block $j$ (tokens
# $j \cdot B \ldots (j+1) B - 1$) to a physical block anywhere in the pool. Token position $p$ lives at
#
# $$\text{block} = \text{block\_table}[\lfloor p / B \rfloor], \qquad \text{offset} = p \bmod B, \qquad
# \text{slot} = \text{block} \cdot B + \text{offset}.$$
#
# A sequence of $n$ tokens needs $\lceil n / B \rceil$ blocks. Only its last block can be partly empty, so the waste
# is **internal fragmentation** of at most $B - 1$ slots per sequence:
#
# $$\text{fragmentation} = 1 - \frac{\text{tokens stored}}{\text{blocks used} \cdot B}.$$
#
# 解码时，每一层都保存序列中此前每个 token 的键向量和值向量，这就是 **KV 缓存**。它每步增长一个 token，而且事先没人知道序列
# 何时结束。为每个序列预留一段最大长度的连续内存，大部分都会被浪费。vLLM 的 PagedAttention（Kwon 等，SOSP 2023）借用了操作系统
# 的做法：把显存切成固定大小的**块**（页），每块容纳 `block_size` 个 token；序列增长时才分给它块；每个序列有一张**块表**
# （相当于页表），把逻辑块 $j$（第 $j \cdot B$ 到 $(j+1)B-1$ 个 token）映射到池中任意位置的物理块。第 $p$ 个 token 所在的
# 物理块、块内偏移与扁平槽位（slot）如上式。$n$ 个 token 的序列需要 $\lceil n / B \rceil$ 个块。只有最后一个块可能没填满，因此
# 浪费只是**内部碎片**，每个序列至多 $B-1$ 个槽位；碎片率的定义见上式。
#
# ## Bytes per token | 每个 token 的字节数
#
# Each token stores one key and one value vector per layer and per KV head:
#
# $$\text{bytes per token} = 2 \cdot \text{layers} \cdot \text{kv\_heads} \cdot \text{head\_dim} \cdot \text{dtype bytes}.$$
#
# Llama-3-8B (32 layers, 8 KV heads, head_dim 128, fp16): $2 \cdot 32 \cdot 8 \cdot 128 \cdot 2 = 131072$ bytes
# $= 128$ KiB per token, so a 16-token block costs 2 MiB and 40 GiB of cache hold about 327,000 tokens.
#
# 每个 token 在每一层、每个 KV 头上各存一个键向量和一个值向量，故每个 token 的字节数如上式。以 Llama-3-8B（32 层、8 个 KV 头、
# head_dim 128、fp16）为例：每个 token 131072 字节，即 128 KiB；一个 16-token 的块占 2 MiB，40 GiB 的缓存约能容纳 32.7 万个 token。
#
# ## A logical clock, reference counts, copy-on-write | 逻辑时钟、引用计数与写时复制
#
# The manager keeps a **logical clock** `step` that grows by one at every access (allocate, append, fork, touch). A
# sequence remembers `last_access_step`, the clock value of its latest access, and `use_count`, how many accesses it has
# had. LRU evicts the smallest `last_access_step`; LFU the smallest `(use_count, last_access_step)`. A counter instead of
# wall-clock time makes every replay deterministic: no two accesses tie by timer resolution, and the same trace always
# gives the same victims.
#
# Parallel sampling and beam search **fork** a sequence: the child shares every block of its parent, and each shared
# block's `ref_count` counts its owners. A block goes back to the pool only when its last owner releases it. When a
# sequence is about to write into a last block that another sequence also uses, it first **copies** that block and writes
# into its own copy (**copy-on-write**): the other sequence's history must never change under it.
#
# 管理器维护一个**逻辑时钟** `step`，每次访问（分配、追加、fork、touch）加一。每个序列记录 `last_access_step`（最近一次访问时
# 的时钟值）和 `use_count`（被访问的次数）。LRU 驱逐 `last_access_step` 最小者；LFU 驱逐 `(use_count, last_access_step)` 最小者。
# 用计数器而不是墙上时钟，能让每次重放都确定：不会因计时精度而出现平局，同一条访问轨迹总是选出同样的受害者。
#
# 并行采样和束搜索会 **fork** 一个序列：子序列共享父序列的全部块，每个共享块的 `ref_count` 记录它有几个所有者。只有当最后一个
# 所有者释放它时，块才回到空闲池。当某个序列要写入一个仍被其他序列使用的最后一个块时，它先**复制**这个块，再写入自己的副本
# （**写时复制**）：另一个序列的历史绝不能在它不知情时被改掉。

# %% [markdown] nbgrader={"grade": false, "grade_id": "task2_1_KVBlock_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 2.1: KVBlock (2 points)
#
# A physical block is a small record. Write the dataclass `KVBlock(block_id, capacity, filled=0, ref_count=0)` with two
# read-only **properties**: `is_full` (a bool: every slot holds a token) and `free_slots` (an int: slots still empty).
# Compute both from the fields each time they are read: the manager changes `filled` as tokens arrive.
#
# Hint: `@dataclass` from `dataclasses`, and `@property`.
#
# ## 任务 2.1：KVBlock（2 分）
#
# 物理块是一条小记录。编写数据类 `KVBlock(block_id, capacity, filled=0, ref_count=0)`，带两个只读**属性**（property）：
# `is_full`（bool：每个槽位都有 token）和 `free_slots`（int：仍空着的槽位数）。每次读取时都由字段现算：token 到来时管理器会修改 `filled`。
#
# 提示：使用 `dataclasses` 中的 `@dataclass` 以及 `@property`。

# %% nbgrader={"grade": false, "grade_id": "task2_1_KVBlock", "locked": false, "schema_version": 3, "solution": true, "task": false}
from dataclasses import dataclass


@dataclass
class KVBlock:
    """One physical block of a paged KV cache, with room for ``capacity`` tokens.

    Fields, in this order (``KVBlock(3, 16)`` is block 3 with room for 16 tokens):
        block_id: int, the block's index in the pool (its row in ``k_cache`` and ``v_cache``).
        capacity: int >= 1, how many tokens fit (the block size).
        filled: int, how many slots hold a token, 0 <= filled <= capacity (default 0).
        ref_count: int, how many sequences use the block; 0 means the block is free (default 0).

    Properties (computed from the fields whenever they are read):
        is_full: bool, True when filled == capacity.
        free_slots: int, capacity - filled.
    """
    ### BEGIN SOLUTION
    block_id: int
    capacity: int
    filled: int = 0
    ref_count: int = 0

    @property
    def is_full(self) -> bool:
        return self.filled >= self.capacity

    @property
    def free_slots(self) -> int:
        return self.capacity - self.filled
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task2_1_KVBlock", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that KVBlock is a dataclass with the pinned fields and live is_full / free_slots properties."""


def _check_task2_1_KVBlock():
    import dataclasses

    from course.checks import assert_plain_equal

    assert dataclasses.is_dataclass(KVBlock), "KVBlock must be a dataclass (decorate it with @dataclass)"
    assert_plain_equal([f.name for f in dataclasses.fields(KVBlock)], ["block_id", "capacity", "filled", "ref_count"],
                       "the field names of KVBlock, in order")
    block = KVBlock(3, 16)
    assert_plain_equal([block.block_id, block.capacity, block.filled, block.ref_count], [3, 16, 0, 0],
                       "[block_id, capacity, filled, ref_count] of KVBlock(3, 16)")
    assert_plain_equal(block.free_slots, 16, "KVBlock(3, 16).free_slots")
    assert_plain_equal(block.is_full, False, "KVBlock(3, 16).is_full")
    full = KVBlock(0, 4, filled=4, ref_count=2)
    assert_plain_equal([full.is_full, full.free_slots], [True, 0], "[is_full, free_slots] of KVBlock(0, 4, filled=4, ref_count=2)")

    ### BEGIN HIDDEN TESTS
    import random as _random

    for _name in ("is_full", "free_slots"):
        assert isinstance(vars(KVBlock).get(_name), property), f"KVBlock.{_name} must be a property (use @property)"
    _rng = _random.Random(2101)
    for _case in range(200):
        _capacity = _rng.randint(1, 40)
        _filled = _rng.randint(0, _capacity)
        _block = KVBlock(_case, _capacity, _filled, _rng.randint(0, 3))
        assert_plain_equal([_block.is_full, _block.free_slots], [_filled == _capacity, _capacity - _filled],
                           f"[is_full, free_slots] of KVBlock with capacity {_capacity}, filled {_filled}", reveal=False)
        _block.filled = _rng.randint(0, _capacity)
        assert_plain_equal([_block.is_full, _block.free_slots], [_block.filled == _capacity, _capacity - _block.filled],
                           f"[is_full, free_slots] after changing filled (case {_case}): they must follow the field", reveal=False)
    _default = KVBlock(block_id=7, capacity=1)
    assert_plain_equal([_default.filled, _default.ref_count, _default.is_full, _default.free_slots], [0, 0, False, 1],
                       "KVBlock(block_id=7, capacity=1)")
    _default.filled = 1
    assert_plain_equal([_default.is_full, _default.free_slots], [True, 0], "KVBlock(7, 1) after filled = 1")
    assert_plain_equal(KVBlock(2, 8, 3, 1) == KVBlock(2, 8, 3, 1), True, "KVBlock(2, 8, 3, 1) == KVBlock(2, 8, 3, 1)")
    ### END HIDDEN TESTS


_check_task2_1_KVBlock()

# %% [markdown] nbgrader={"grade": false, "grade_id": "task2_2_BlockAllocator_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 2.2: BlockAllocator (4 points)
#
# The allocator owns every block of the pool. It makes the `num_blocks` blocks once, `KVBlock(i, block_size)` for
# $i = 0 \ldots$ `num_blocks`−1, and hands them out and takes them back:
#
# - `allocate()` gives the free block with the **lowest** `block_id` (a deterministic rule, like every tie-break in this
#   course), now with `ref_count` 1 and `filled` 0; `None` when no block is free.
# - `allocate_n(n)` is **all or nothing**: when fewer than `n` blocks are free, it raises `RuntimeError` (its message says
#   how many were asked for and how many are free) and leaves every block as it was. A half-done allocation would leak
#   blocks that no sequence owns.
# - `free(block)` drops one reference; at 0 the block is free again (its `filled` back to 0). Freeing a free block is a
#   bug in the caller: `ValueError`.
# - `utilization()` $= \text{used} / \text{num\_blocks}$; `fragmentation()` $= 1 - \sum_{\text{used}} \text{filled} /
#   (\text{used} \cdot \text{block\_size})$, and 0.0 when nothing is used.
#
# Hint: a heap (`heapq`) of free ids gives the lowest one in $O(\log n)$.
#
# ## 任务 2.2：BlockAllocator（4 分）
#
# 分配器拥有池中的所有块。它一次性创建 `num_blocks` 个块（$i = 0 \ldots$ `num_blocks`−1 时为 `KVBlock(i, block_size)`），
# 并负责分出和收回：
#
# - `allocate()` 返回 `block_id` **最小**的空闲块（确定性的规则，与本课程中所有平局规则一样），此时其 `ref_count` 为 1、
#   `filled` 为 0；没有空闲块时返回 `None`。
# - `allocate_n(n)` **要么全部成功，要么什么都不做**：空闲块少于 `n` 个时抛出 `RuntimeError`（消息里写明请求了多少块、
#   还有多少空闲块），且所有块保持原状。只做了一半的分配会泄漏不属于任何序列的块。
# - `free(block)` 减少一个引用；减到 0 时块重新空闲（其 `filled` 归 0）。释放一个已空闲的块是调用方的错误：抛出 `ValueError`。
# - `utilization()` 与 `fragmentation()` 的定义见上；没有块被使用时碎片率为 0.0。
#
# 提示：用堆（`heapq`）保存空闲块 id，可以在 $O(\log n)$ 时间内取得最小 id。

# %% nbgrader={"grade": false, "grade_id": "task2_2_BlockAllocator", "locked": false, "schema_version": 3, "solution": true, "task": false}
import heapq


class BlockAllocator:
    """A pool of ``num_blocks`` KVBlock objects with ``block_size`` slots each.

    The blocks are made once, ``KVBlock(i, block_size)`` for i in 0 .. num_blocks-1, and reused:
    ``get_block(i)`` always returns the same object. A block is free when its ref_count is 0.

    Args:
        num_blocks: int >= 1.
        block_size: int >= 1, tokens per block.

    Raises:
        ValueError: when num_blocks < 1 or block_size < 1.

    Attributes:
        num_blocks, block_size: the arguments.
    """

    def __init__(self, num_blocks, block_size):
        ### BEGIN SOLUTION
        if num_blocks < 1 or block_size < 1:
            raise ValueError(f"num_blocks and block_size must be >= 1, got {num_blocks} and {block_size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self._blocks = [KVBlock(block_id, block_size) for block_id in range(num_blocks)]
        self._free_ids = list(range(num_blocks))  # A sorted list is already a valid heap.
        ### END SOLUTION

    @property
    def num_free(self):
        """int: how many blocks are free."""
        ### BEGIN SOLUTION
        return len(self._free_ids)
        ### END SOLUTION

    @property
    def num_used(self):
        """int: how many blocks are in use (ref_count >= 1)."""
        ### BEGIN SOLUTION
        return self.num_blocks - len(self._free_ids)
        ### END SOLUTION

    def get_block(self, block_id):
        """Return the KVBlock with this id; ValueError for an id outside [0, num_blocks)."""
        ### BEGIN SOLUTION
        if not 0 <= block_id < self.num_blocks:
            raise ValueError(f"block_id {block_id} is outside [0, {self.num_blocks})")
        return self._blocks[block_id]
        ### END SOLUTION

    def allocate(self):
        """Return the free block with the lowest id, now with ref_count 1 and filled 0; None if none is free."""
        ### BEGIN SOLUTION
        if not self._free_ids:
            return None
        block = self._blocks[heapq.heappop(self._free_ids)]
        block.ref_count = 1
        block.filled = 0
        return block
        ### END SOLUTION

    def allocate_n(self, n):
        """Return a list of n blocks, as n calls of allocate() would (ascending ids).

        All or nothing: when fewer than n blocks are free, raise RuntimeError with a message that
        states n and the number of free blocks, and allocate nothing. ValueError when n < 0.
        """
        ### BEGIN SOLUTION
        if n < 0:
            raise ValueError(f"cannot allocate a negative number of blocks ({n})")
        if n > len(self._free_ids):
            raise RuntimeError(f"out of blocks: asked for {n}, only {len(self._free_ids)} free")
        return [self.allocate() for _ in range(n)]
        ### END SOLUTION

    def free(self, block):
        """Drop one reference to ``block``; at ref_count 0 it goes back to the pool with filled 0.

        Raises:
            ValueError: when the block is already free (ref_count 0).
        """
        ### BEGIN SOLUTION
        if block.ref_count < 1:
            raise ValueError(f"block {block.block_id} is already free")
        block.ref_count -= 1
        if block.ref_count == 0:
            block.filled = 0
            heapq.heappush(self._free_ids, block.block_id)
        ### END SOLUTION

    def utilization(self):
        """float: num_used / num_blocks."""
        ### BEGIN SOLUTION
        return self.num_used / self.num_blocks
        ### END SOLUTION

    def fragmentation(self):
        """float: 1 - (tokens in used blocks) / (num_used * block_size); 0.0 when no block is used."""
        ### BEGIN SOLUTION
        used = [block for block in self._blocks if block.ref_count > 0]
        if not used:
            return 0.0
        return 1.0 - sum(block.filled for block in used) / (len(used) * self.block_size)
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task2_2_BlockAllocator", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
"""Check that BlockAllocator hands out the lowest free id, allocates all or nothing, and counts references."""


def _check_task2_2_BlockAllocator():
    from course.checks import assert_plain_equal, assert_raises, check_type

    allocator = BlockAllocator(4, 16)
    first = allocator.allocate()
    check_type(first, KVBlock, "BlockAllocator(4, 16).allocate()")
    assert_plain_equal([first.block_id, first.ref_count, first.filled], [0, 1, 0], "[block_id, ref_count, filled] of the first allocate()")
    assert_plain_equal([allocator.num_free, allocator.num_used], [3, 1], "[num_free, num_used] after one allocate()")
    pair = allocator.allocate_n(2)
    assert_plain_equal([b.block_id for b in pair], [1, 2], "block ids of allocate_n(2) after one allocate()")
    assert_raises(RuntimeError, "allocate_n(5) with 1 block free", allocator.allocate_n, 5)
    assert_plain_equal(allocator.num_free, 1, "num_free after a failed allocate_n(5): all or nothing, nothing may stay allocated")
    allocator.free(pair[0])
    assert_plain_equal(allocator.allocate().block_id, 1, "allocate() after free(block 1): the lowest free id")
    first.filled = 8
    assert_plain_equal(allocator.fragmentation(), 1 - 8 / (3 * 16), "fragmentation() with blocks 0, 1, 2 used, 8 tokens in all")
    assert_plain_equal(allocator.utilization(), 0.75, "utilization() with 3 of 4 blocks used")
    allocator.free(first)
    assert_raises(ValueError, "free() of a block that is already free", allocator.free, first)
    assert_raises(ValueError, "BlockAllocator(0, 16)", BlockAllocator, 0, 16)

    ### BEGIN HIDDEN TESTS
    import random as _random
    import re as _re

    assert_raises(ValueError, "BlockAllocator(4, 0)", BlockAllocator, 4, 0)
    assert_raises(ValueError, "BlockAllocator(-1, 4)", BlockAllocator, -1, 4)
    _a = BlockAllocator(3, 2)
    assert_plain_equal([_a.utilization(), _a.fragmentation()], [0.0, 0.0], "[utilization(), fragmentation()] of a fresh allocator")
    assert all(_a.get_block(_i) is _a.get_block(_i) for _i in range(3)), "get_block(i) must return the same object every time"
    assert_raises(ValueError, "get_block(3) on 3 blocks", _a.get_block, 3)
    assert_raises(ValueError, "get_block(-1)", _a.get_block, -1)
    assert_raises(ValueError, "allocate_n(-1)", _a.allocate_n, -1)
    assert_plain_equal(_a.allocate_n(0), [], "allocate_n(0)")
    _got = _a.allocate_n(3)
    assert all(_b is _a.get_block(_b.block_id) for _b in _got), "allocate_n must hand out the allocator's own block objects"
    check_type(_a.allocate(), type(None), "allocate() with no free block")
    try:
        _a.allocate_n(7)
    except RuntimeError as _error:
        assert _re.search(r"\b7\b", str(_error)) and _re.search(r"\b0\b", str(_error)), (
            f"the RuntimeError of allocate_n(7) with 0 free must state both numbers; it said {_error!r}")
    else:
        raise AssertionError("allocate_n(7) with 0 free blocks raised nothing; expected RuntimeError")
    _a.get_block(1).ref_count += 1  # A second owner, as after a fork.
    _a.free(_a.get_block(1))
    assert_plain_equal([_a.num_free, _a.get_block(1).ref_count], [0, 1], "[num_free, ref_count] after freeing one of two references")

    _rng = _random.Random(2202)
    for _case in range(40):
        _n, _size = _rng.randint(1, 12), _rng.randint(1, 6)
        _alloc = BlockAllocator(_n, _size)
        _free = set(range(_n))
        _ref = {}
        _fill = {}
        for _op in range(60):
            _kind = _rng.random()
            if _kind < 0.3:
                _b = _alloc.allocate()
                if not _free:
                    check_type(_b, type(None), f"allocate() with no free block (case {_case})")
                else:
                    _want = min(_free)
                    _free.discard(_want)
                    _ref[_want], _fill[_want] = 1, 0
                    assert_plain_equal([_b.block_id, _b.ref_count, _b.filled], [_want, 1, 0],
                                       f"[block_id, ref_count, filled] of allocate() (case {_case}, op {_op})", reveal=False)
            elif _kind < 0.5:
                _k = _rng.randint(0, 4)
                if _k > len(_free):
                    assert_raises(RuntimeError, f"allocate_n({_k}) with {len(_free)} free (case {_case})", _alloc.allocate_n, _k)
                else:
                    _want = sorted(_free)[:_k]
                    _free -= set(_want)
                    for _i in _want:
                        _ref[_i], _fill[_i] = 1, 0
                    assert_plain_equal([_b.block_id for _b in _alloc.allocate_n(_k)], _want,
                                       f"block ids of allocate_n({_k}) (case {_case}, op {_op})", reveal=False)
            elif _kind < 0.7 and _ref:
                _i = _rng.choice(sorted(_ref))
                _alloc.free(_alloc.get_block(_i))
                _ref[_i] -= 1
                if _ref[_i] == 0:
                    del _ref[_i], _fill[_i]
                    _free.add(_i)
            elif _kind < 0.8 and _ref:
                _i = _rng.choice(sorted(_ref))
                _alloc.get_block(_i).ref_count += 1
                _ref[_i] += 1
            elif _ref:
                _i = _rng.choice(sorted(_ref))
                _fill[_i] = _rng.randint(0, _size)
                _alloc.get_block(_i).filled = _fill[_i]
            _used = len(_ref)
            _expected = [len(_free), _used, _used / _n, (1.0 - sum(_fill.values()) / (_used * _size)) if _used else 0.0]
            assert_plain_equal([_alloc.num_free, _alloc.num_used, _alloc.utilization(), _alloc.fragmentation()], _expected,
                               f"[num_free, num_used, utilization(), fragmentation()] (case {_case}, op {_op})", reveal=False)
            for _i in range(_n):
                _blk = _alloc.get_block(_i)
                assert_plain_equal([_blk.ref_count, _blk.filled], [_ref.get(_i, 0), _fill.get(_i, 0)],
                                   f"[ref_count, filled] of block {_i} (case {_case}, op {_op})", reveal=False)
        for _i in sorted(_free):
            assert_raises(ValueError, f"free() of free block {_i} (case {_case})", _alloc.free, _alloc.get_block(_i))
    ### END HIDDEN TESTS


_check_task2_2_BlockAllocator()

# %% [markdown] nbgrader={"grade": false, "grade_id": "task2_3_SequenceKVCache_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 2.3: SequenceKVCache (2 points)
#
# Per-sequence metadata: `SequenceKVCache(seq_id, block_table=[], num_tokens=0, last_access_step=0, use_count=0)`, a
# dataclass whose `block_table` is the list of its `KVBlock`s in logical order, and a method `num_blocks()` that returns
# `len(block_table)`. Every instance needs **its own** list: a mutable default shared between instances would put one
# sequence's blocks into another's table.
#
# Hint: `field(default_factory=list)`.
#
# ## 任务 2.3：SequenceKVCache（2 分）
#
# 每个序列的元数据：数据类 `SequenceKVCache(seq_id, block_table=[], num_tokens=0, last_access_step=0, use_count=0)`，其中
# `block_table` 是它按逻辑顺序排列的 `KVBlock` 列表；方法 `num_blocks()` 返回 `len(block_table)`。每个实例都需要**自己的**列表：
# 在实例之间共享的可变默认值会把一个序列的块放进另一个序列的块表。
#
# 提示：`field(default_factory=list)`。

# %% nbgrader={"grade": false, "grade_id": "task2_3_SequenceKVCache", "locked": false, "schema_version": 3, "solution": true, "task": false}
from dataclasses import dataclass, field


@dataclass
class SequenceKVCache:
    """The KV-cache metadata of one sequence.

    Fields, in this order:
        seq_id: str, the sequence's id.
        block_table: list of KVBlock in logical order (block j holds tokens j*B .. j*B+B-1);
            default: a new empty list for every instance.
        num_tokens: int, tokens stored (default 0).
        last_access_step: int, the manager's step at the latest access (default 0); LRU ranks by it.
        use_count: int, how many accesses so far (default 0); LFU ranks by it.

    Methods:
        num_blocks() -> int: len(block_table).
    """
    ### BEGIN SOLUTION
    seq_id: str
    block_table: list = field(default_factory=list)
    num_tokens: int = 0
    last_access_step: int = 0
    use_count: int = 0

    def num_blocks(self) -> int:
        return len(self.block_table)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task2_3_SequenceKVCache", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that SequenceKVCache is a dataclass with the pinned fields, a fresh list per instance, and num_blocks()."""


def _check_task2_3_SequenceKVCache():
    import dataclasses

    from course.checks import assert_plain_equal

    assert dataclasses.is_dataclass(SequenceKVCache), "SequenceKVCache must be a dataclass (decorate it with @dataclass)"
    assert_plain_equal([f.name for f in dataclasses.fields(SequenceKVCache)],
                       ["seq_id", "block_table", "num_tokens", "last_access_step", "use_count"], "the field names of SequenceKVCache, in order")
    seq = SequenceKVCache("req-1")
    assert_plain_equal([seq.seq_id, seq.block_table, seq.num_tokens, seq.last_access_step, seq.use_count],
                       ["req-1", [], 0, 0, 0], "the fields of SequenceKVCache('req-1')")
    assert_plain_equal(seq.num_blocks(), 0, "SequenceKVCache('req-1').num_blocks()")
    other = SequenceKVCache("req-2")
    other.block_table.append(KVBlock(0, 16))
    assert_plain_equal(seq.block_table, [], "seq.block_table after appending a block to ANOTHER sequence's table (the default list must not be shared)")
    assert_plain_equal(other.num_blocks(), 1, "num_blocks() after appending one block")

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(2303)
    _seqs = [SequenceKVCache(f"s{_i}") for _i in range(5)]
    for _s in _seqs:
        for _ in range(_rng.randint(0, 6)):
            _s.block_table.append(KVBlock(_rng.randint(0, 99), 8))
    _lengths = [len(_s.block_table) for _s in _seqs]
    assert len({id(_s.block_table) for _s in _seqs}) == 5, "every SequenceKVCache needs its own block_table list"
    for _i, _s in enumerate(_seqs):
        assert_plain_equal(_s.num_blocks(), _lengths[_i], f"num_blocks() of sequence s{_i}", reveal=False)
    _table = [KVBlock(4, 2, 2, 1), KVBlock(9, 2, 1, 1)]
    _full = SequenceKVCache("x", _table, 3, 7, 2)
    assert_plain_equal([_full.num_tokens, _full.last_access_step, _full.use_count, _full.num_blocks()], [3, 7, 2, 2],
                       "[num_tokens, last_access_step, use_count, num_blocks()] of SequenceKVCache('x', 2 blocks, 3, 7, 2)")
    assert _full.block_table[1] is _table[1], "SequenceKVCache must keep the KVBlock objects it was given"
    _kw = SequenceKVCache(seq_id="y", num_tokens=40, use_count=3)
    assert_plain_equal([_kw.num_blocks(), _kw.last_access_step, _kw.use_count], [0, 0, 3],
                       "num_blocks() counts blocks, not tokens: SequenceKVCache(seq_id='y', num_tokens=40, use_count=3)")
    ### END HIDDEN TESTS


_check_task2_3_SequenceKVCache()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task2_4_PagedKVCacheManager_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 2.4: PagedKVCacheManager (8 points)
#
# The manager ties it together: an allocator, the active sequences by id, and the logical clock `step` (read-only,
# starts at 0). Every successful `allocate_for_sequence`, `append_tokens`, `fork` and `touch` is one access:
#
# $$\text{step} \leftarrow \text{step} + 1, \qquad \text{last\_access\_step}(s) \leftarrow \text{step}.$$
#
# | method | blocks | counters |
# |---|---|---|
# | `allocate_for_sequence(seq_id, num_tokens)` | $\lceil n / B \rceil$ new blocks, filled in order | `use_count = 1` |
# | `append_tokens(seq, n)` | fill the last block's free slots, then new blocks; **copy-on-write** first if that last block is shared | `use_count += 1` |
# | `fork(src, new_seq_id)` | the child shares every block of `src` (each `ref_count + 1`); `src` is unchanged | child: `use_count = 1` |
# | `touch(seq)` | none (a read, e.g. a prefix hit) | `use_count += 1` |
# | `release(seq)` | drop each reference; returns how many blocks went back to the pool | the clock does not move |
#
# **Copy-on-write.** When `append_tokens` is about to write into a last block with `ref_count > 1` (and free slots), it
# allocates a new block, gives it the old block's `filled`, frees its reference to the old block and puts the copy in
# its own block table; then it writes. Blocks come from the allocator, lowest free id first, in the order they are
# needed: the copy first, then new blocks.
#
# **Nothing changes on failure.** When blocks run out, `allocate_for_sequence` and `append_tokens` raise `RuntimeError`
# and change nothing: no tokens, no blocks, no counters, not even `step`. Count what you need **before** you take
# anything (`allocate_n` is all or nothing). `ValueError` for a duplicate `seq_id`, a negative token count, or a `seq`
# that is not one of the manager's active sequences. `summary()` returns a dict with `total_blocks`, `used_blocks`,
# `free_blocks`, `utilization`, `fragmentation` and `active_sequences`.
#
# ## 任务 2.4：PagedKVCacheManager（8 分）
#
# 管理器把一切串起来：一个分配器、按 id 索引的活跃序列，以及逻辑时钟 `step`（只读，从 0 开始）。每次成功的
# `allocate_for_sequence`、`append_tokens`、`fork` 和 `touch` 都是一次访问：`step` 加一，并把该序列的 `last_access_step`
# 设为新的 `step`。各方法对块和计数器的影响见上表：分配时取 $\lceil n / B \rceil$ 个新块并依次填满，`use_count = 1`；
# 追加时先填最后一个块的空槽，再用新块，若最后一个块被共享则先**写时复制**，`use_count += 1`；fork 时子序列共享 `src`
# 的每个块（每块 `ref_count + 1`），`src` 不变，子序列 `use_count = 1`；`touch` 是一次读取（如前缀命中），只做 `use_count += 1`；
# `release` 放弃每个引用，返回真正回到空闲池的块数，时钟不动。
#
# **写时复制。** 当 `append_tokens` 要写入一个 `ref_count > 1`（且有空槽）的最后一个块时，先分配一个新块，令其 `filled` 等于旧块，
# 释放自己对旧块的引用，并把副本放进自己的块表；然后再写入。块都从分配器取得（空闲 id 最小者优先），按需要的先后顺序：先取副本块，
# 再取新块。
#
# **失败时什么都不变。** 块不够时，`allocate_for_sequence` 与 `append_tokens` 抛出 `RuntimeError`，且什么都不改变：token、块、
# 计数器都不变，连 `step` 也不变。在取用任何东西**之前**先算清需要多少（`allocate_n` 要么全成功要么什么都不做）。
# `seq_id` 重复、token 数为负、或 `seq` 不是该管理器的活跃序列时抛出 `ValueError`。`summary()` 返回包含 `total_blocks`、
# `used_blocks`、`free_blocks`、`utilization`、`fragmentation` 和 `active_sequences` 的字典。

# %% nbgrader={"grade": false, "grade_id": "task2_4_PagedKVCacheManager", "locked": false, "schema_version": 3, "solution": true, "task": false}
class PagedKVCacheManager:
    """Block-level bookkeeping of a paged KV cache: who holds which blocks, and when each was used.

    Args:
        num_blocks: int >= 1 (default 512).
        block_size: int >= 1, tokens per block (default 16).

    Attributes:
        allocator: BlockAllocator(num_blocks, block_size) (Task 2.2).
        block_size: int.
        sequences: dict from seq_id to the SequenceKVCache of every active sequence.
        step: read-only property, the logical clock (int, starts at 0); every successful
            allocate_for_sequence, append_tokens, fork and touch adds 1.

    Rules for every method:
        - A method that takes ``seq`` raises ValueError unless ``seq`` is an active sequence of
          this manager (``self.sequences.get(seq.seq_id) is seq``).
        - A method that raises changes nothing: no tokens, blocks, counters, or step.
        - Blocks come from the allocator (lowest free id first) in the order they are needed.
    """

    def __init__(self, num_blocks=512, block_size=16):
        ### BEGIN SOLUTION
        self.allocator = BlockAllocator(num_blocks, block_size)
        self.block_size = block_size
        self.sequences = {}
        self._step = 0
        ### END SOLUTION

    @property
    def step(self):
        """int: the logical clock, read-only."""
        ### BEGIN SOLUTION
        return self._step
        ### END SOLUTION

    def allocate_for_sequence(self, seq_id, num_tokens):
        """Register a new sequence of ``num_tokens`` tokens with ceil(num_tokens / block_size) blocks.

        The blocks are filled in order (every one full except perhaps the last). Then step += 1,
        last_access_step = step, use_count = 1.

        Returns:
            The new SequenceKVCache, also stored in ``self.sequences[seq_id]``.

        Raises:
            ValueError: seq_id is already active, or num_tokens < 0.
            RuntimeError: not enough free blocks; nothing changes (not even step).
        """
        ### BEGIN SOLUTION
        if seq_id in self.sequences:
            raise ValueError(f"sequence {seq_id!r} already exists")
        if num_tokens < 0:
            raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
        blocks = self.allocator.allocate_n(-(-num_tokens // self.block_size))
        remaining = num_tokens
        for block in blocks:
            block.filled = min(self.block_size, remaining)
            remaining -= block.filled
        self._step += 1
        seq = SequenceKVCache(seq_id, blocks, num_tokens, last_access_step=self._step, use_count=1)
        self.sequences[seq_id] = seq
        return seq
        ### END SOLUTION

    def append_tokens(self, seq, num_new_tokens):
        """Add ``num_new_tokens`` (>= 0) tokens to ``seq``: the last block's free slots first, then new blocks.

        Copy-on-write: when tokens are about to be written into a last block whose ref_count > 1,
        that block is first replaced in seq's table by a new block with the same ``filled`` (and
        seq's reference to the old block is freed). Then step += 1, last_access_step = step,
        use_count += 1 (also when num_new_tokens is 0).

        Raises:
            ValueError: seq is not active here, or num_new_tokens < 0.
            RuntimeError: not enough free blocks (copy included); nothing changes.
        """
        ### BEGIN SOLUTION
        if self.sequences.get(seq.seq_id) is not seq:
            raise ValueError(f"sequence {seq.seq_id!r} is not active in this manager")
        if num_new_tokens < 0:
            raise ValueError(f"num_new_tokens must be >= 0, got {num_new_tokens}")
        last = seq.block_table[-1] if seq.block_table else None
        room = last.free_slots if last is not None else 0
        needs_copy = num_new_tokens > 0 and room > 0 and last.ref_count > 1
        new_blocks = -(-max(0, num_new_tokens - room) // self.block_size)
        blocks = self.allocator.allocate_n(int(needs_copy) + new_blocks)
        if needs_copy:
            copy = blocks.pop(0)
            copy.filled = last.filled
            self.allocator.free(last)
            seq.block_table[-1] = copy
            last = copy
        remaining = num_new_tokens
        if last is not None:
            written = min(room, remaining)
            last.filled += written
            remaining -= written
        for block in blocks:
            block.filled = min(self.block_size, remaining)
            remaining -= block.filled
            seq.block_table.append(block)
        seq.num_tokens += num_new_tokens
        self._step += 1
        seq.last_access_step = self._step
        seq.use_count += 1
        ### END SOLUTION

    def fork(self, src, new_seq_id):
        """Return a new sequence that shares every block of ``src`` (each block's ref_count + 1).

        The child has src's num_tokens and a new list with the same KVBlock objects; step += 1,
        child.last_access_step = step, child.use_count = 1. src's metadata does not change.

        Raises:
            ValueError: src is not active here, or new_seq_id is already active.
        """
        ### BEGIN SOLUTION
        if self.sequences.get(src.seq_id) is not src:
            raise ValueError(f"sequence {src.seq_id!r} is not active in this manager")
        if new_seq_id in self.sequences:
            raise ValueError(f"sequence {new_seq_id!r} already exists")
        for block in src.block_table:
            block.ref_count += 1
        self._step += 1
        child = SequenceKVCache(new_seq_id, list(src.block_table), src.num_tokens,
                                last_access_step=self._step, use_count=1)
        self.sequences[new_seq_id] = child
        return child
        ### END SOLUTION

    def touch(self, seq):
        """Record a read of ``seq`` (e.g. a prefix hit): step += 1, last_access_step = step, use_count += 1.

        Raises:
            ValueError: seq is not active here.
        """
        ### BEGIN SOLUTION
        if self.sequences.get(seq.seq_id) is not seq:
            raise ValueError(f"sequence {seq.seq_id!r} is not active in this manager")
        self._step += 1
        seq.last_access_step = self._step
        seq.use_count += 1
        ### END SOLUTION

    def release(self, seq):
        """Drop seq's reference to each of its blocks and remove it from ``sequences``.

        Returns:
            int: how many blocks went back to the pool (blocks still shared stay allocated).
            The clock does not move.

        Raises:
            ValueError: seq is not active here (for example, released already).
        """
        ### BEGIN SOLUTION
        if self.sequences.get(seq.seq_id) is not seq:
            raise ValueError(f"sequence {seq.seq_id!r} is not active in this manager")
        freed = 0
        for block in seq.block_table:
            self.allocator.free(block)
            freed += block.ref_count == 0
        del self.sequences[seq.seq_id]
        return freed
        ### END SOLUTION

    def summary(self):
        """Return a dict: total_blocks, used_blocks, free_blocks, active_sequences (ints) and
        utilization, fragmentation (floats, as the allocator computes them)."""
        ### BEGIN SOLUTION
        return {
            "total_blocks": self.allocator.num_blocks,
            "used_blocks": self.allocator.num_used,
            "free_blocks": self.allocator.num_free,
            "utilization": self.allocator.utilization(),
            "fragmentation": self.allocator.fragmentation(),
            "active_sequences": len(self.sequences),
        }
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task2_4_PagedKVCacheManager", "locked": true, "points": 8, "schema_version": 3, "solution": false, "task": false}
"""Check that PagedKVCacheManager allocates, appends with copy-on-write, forks, touches and releases exactly as specified."""


def _check_task2_4_PagedKVCacheManager():
    from course.checks import assert_plain_equal, assert_raises, check_type


    def ids(seq):
        return [block.block_id for block in seq.block_table]


    manager = PagedKVCacheManager(num_blocks=8, block_size=4)
    a = manager.allocate_for_sequence("a", 10)
    check_type(a, SequenceKVCache, "allocate_for_sequence('a', 10)")
    assert_plain_equal([ids(a), [b.filled for b in a.block_table]], [[0, 1, 2], [4, 4, 2]],
                       "[block ids, filled] of allocate_for_sequence('a', 10) with block_size 4")
    assert_plain_equal([a.num_tokens, a.last_access_step, a.use_count, manager.step], [10, 1, 1, 1],
                       "[num_tokens, last_access_step, use_count, step] after allocate_for_sequence('a', 10)")
    b = manager.fork(a, "b")
    assert_plain_equal([ids(b), [blk.ref_count for blk in b.block_table], b.num_tokens, b.last_access_step, b.use_count],
                       [[0, 1, 2], [2, 2, 2], 10, 2, 1], "[block ids, ref counts, num_tokens, last_access_step, use_count] of fork(a, 'b')")
    assert_plain_equal([a.last_access_step, a.use_count], [1, 1], "[last_access_step, use_count] of a after fork (the source is unchanged)")
    manager.append_tokens(a, 3)
    assert_plain_equal([ids(a), [blk.filled for blk in a.block_table]], [[0, 1, 3, 4], [4, 4, 4, 1]],
                       "a's [block ids, filled] after append_tokens(a, 3): block 2 is shared, so a copies it into block 3 first")
    assert_plain_equal([ids(b), manager.allocator.get_block(2).filled, manager.allocator.get_block(2).ref_count], [[0, 1, 2], 2, 1],
                       "[b's block ids, filled and ref_count of block 2] after a's copy-on-write (b must not see a's tokens)")
    assert_plain_equal([a.num_tokens, a.use_count, a.last_access_step, manager.step], [13, 2, 3, 3],
                       "[num_tokens, use_count, last_access_step, step] of a after append_tokens(a, 3)")
    assert_raises(RuntimeError, "allocate_for_sequence('big', 100) with 3 blocks free", manager.allocate_for_sequence, "big", 100)
    assert_plain_equal([manager.step, "big" in manager.sequences], [3, False], "[step, 'big' in sequences] after the failed allocation (nothing may change)")
    manager.touch(b)
    assert_plain_equal([b.last_access_step, b.use_count, manager.step], [4, 2, 4], "[last_access_step, use_count, step] after touch(b)")
    assert_plain_equal(manager.release(b), 1, "release(b): only block 2 goes back; blocks 0 and 1 are still a's")
    assert_plain_equal(manager.summary(), {"total_blocks": 8, "used_blocks": 4, "free_blocks": 4, "utilization": 0.5,
                                           "fragmentation": 1 - 13 / 16, "active_sequences": 1}, "summary() at the end")

    ### BEGIN HIDDEN TESTS
    import random as _random


    class _Model:
        """A second implementation of the contract: plain dicts of block ids, no KVBlock objects."""

        def __init__(self, num_blocks, size):
            self.size, self.free, self.ref, self.fill = size, set(range(num_blocks)), {}, {}
            self.table, self.tokens, self.last, self.uses, self.step = {}, {}, {}, {}, 0
            self.num_blocks = num_blocks

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
            if self.ref[i] == 0:
                del self.ref[i], self.fill[i]
                self.free.add(i)
                return 1
            return 0

        def allocate(self, sid, n):
            got = self.take((n + self.size - 1) // self.size)
            if got is None:
                return False
            for j, i in enumerate(got):
                self.fill[i] = min(self.size, n - j * self.size)
            self.step += 1
            self.table[sid], self.tokens[sid], self.last[sid], self.uses[sid] = got, n, self.step, 1
            return True

        def append(self, sid, n):
            table = self.table[sid]
            room = self.size - self.fill[table[-1]] if table else 0
            cow = n > 0 and room > 0 and self.ref[table[-1]] > 1
            overflow = max(0, n - room)
            got = self.take(int(cow) + (overflow + self.size - 1) // self.size)
            if got is None:
                return False
            if cow:
                new = got.pop(0)
                self.fill[new] = self.fill[table[-1]]
                self.drop(table[-1])
                table[-1] = new
            if table and room:
                self.fill[table[-1]] += min(room, n)
            rest = overflow
            for i in got:
                self.fill[i] = min(self.size, rest)
                rest -= self.fill[i]
                table.append(i)
            self.tokens[sid] += n
            self.step += 1
            self.last[sid] = self.step
            self.uses[sid] += 1
            return True

        def fork(self, sid, child):
            for i in self.table[sid]:
                self.ref[i] += 1
            self.step += 1
            self.table[child], self.tokens[child] = list(self.table[sid]), self.tokens[sid]
            self.last[child], self.uses[child] = self.step, 1

        def touch(self, sid):
            self.step += 1
            self.last[sid] = self.step
            self.uses[sid] += 1

        def release(self, sid):
            freed = sum(self.drop(i) for i in self.table[sid])
            for store in (self.table, self.tokens, self.last, self.uses):
                del store[sid]
            return freed

        def summary(self):
            used = self.num_blocks - len(self.free)
            frag = 1.0 - sum(self.fill.values()) / (used * self.size) if used else 0.0
            return {"total_blocks": self.num_blocks, "used_blocks": used, "free_blocks": len(self.free),
                    "utilization": used / self.num_blocks, "fragmentation": frag, "active_sequences": len(self.table)}


    def _compare(manager, model, where):
        assert_plain_equal(sorted(manager.sequences), sorted(model.table), f"the ids in sequences {where}", reveal=False)
        assert_plain_equal(manager.step, model.step, f"step {where}", reveal=False)
        for sid in model.table:
            seq = manager.sequences[sid]
            got = [[blk.block_id for blk in seq.block_table], seq.num_tokens, seq.last_access_step, seq.use_count]
            want = [model.table[sid], model.tokens[sid], model.last[sid], model.uses[sid]]
            assert_plain_equal(got, want, f"[block ids, num_tokens, last_access_step, use_count] of {sid!r} {where}", reveal=False)
            for blk in seq.block_table:
                assert blk is manager.allocator.get_block(blk.block_id), f"{sid!r} holds a block object that is not the allocator's {where}"
                assert_plain_equal([blk.filled, blk.ref_count], [model.fill[blk.block_id], model.ref[blk.block_id]],
                                   f"[filled, ref_count] of block {blk.block_id} {where}", reveal=False)
        assert_plain_equal(manager.summary(), model.summary(), f"summary() {where}", reveal=False)


    # Edge cases of the contract.
    _m = PagedKVCacheManager(num_blocks=6, block_size=4)
    assert_plain_equal([_m.step, _m.block_size, _m.sequences, _m.allocator.num_blocks], [0, 4, {}, 6], "a fresh PagedKVCacheManager(6, 4)")
    try:
        _m.step = 5
    except AttributeError:
        pass
    else:
        raise AssertionError("setting manager.step raised nothing: step must be a read-only property")
    _default = PagedKVCacheManager()
    assert_plain_equal([_default.allocator.num_blocks, _default.block_size], [512, 16], "PagedKVCacheManager() defaults")
    _e = _m.allocate_for_sequence("empty", 0)
    assert_plain_equal([_e.num_blocks(), _m.step], [0, 1], "[num_blocks(), step] after allocate_for_sequence('empty', 0)")
    _x = _m.allocate_for_sequence("x", 8)
    assert_plain_equal([[blk.filled for blk in _x.block_table]], [[4, 4]], "filled of allocate_for_sequence('x', 8): exactly 2 blocks")
    assert_raises(ValueError, "allocate_for_sequence('x', 1) for an active id", _m.allocate_for_sequence, "x", 1)
    assert_raises(ValueError, "allocate_for_sequence('neg', -1)", _m.allocate_for_sequence, "neg", -1)
    assert_raises(ValueError, "append_tokens(x, -2)", _m.append_tokens, _x, -2)
    assert_raises(ValueError, "fork(x, 'empty') onto an active id", _m.fork, _x, "empty")
    _m.append_tokens(_e, 5)
    assert_plain_equal([[blk.block_id for blk in _e.block_table], [blk.filled for blk in _e.block_table]], [[2, 3], [4, 1]],
                       "[block ids, filled] of an empty sequence after append_tokens(5)")
    _y = _m.fork(_e, "y")
    assert_raises(RuntimeError, "allocate_for_sequence('z', 9) with 2 free", _m.allocate_for_sequence, "z", 9)
    _m.allocate_for_sequence("z", 8)
    assert_plain_equal(_m.allocator.num_free, 0, "num_free after filling the pool")
    assert_raises(RuntimeError, "append_tokens(e, 1) into a shared block with no block free for the copy", _m.append_tokens, _e, 1)
    assert_plain_equal([[blk.block_id for blk in _e.block_table], _e.num_tokens, _e.use_count, _m.step,
                        _m.allocator.get_block(3).ref_count, _m.allocator.get_block(3).filled], [[2, 3], 5, 2, 5, 2, 1],
                       "[e's block ids, num_tokens, use_count, step, ref_count and filled of block 3] after the failed copy-on-write", reveal=False)
    assert_plain_equal(_m.release(_y), 0, "release(y) where every block is shared with e")
    assert_raises(ValueError, "release(y) a second time", _m.release, _y)
    assert_raises(ValueError, "touch(y) after release", _m.touch, _y)
    _m.append_tokens(_e, 3)
    assert_plain_equal([[blk.block_id for blk in _e.block_table], [blk.filled for blk in _e.block_table]], [[2, 3], [4, 4]],
                       "e's table after append_tokens(3) into its last block, no longer shared (no copy needed)")
    _m.append_tokens(_e, 0)
    assert_plain_equal([_e.use_count, _e.last_access_step, _m.step], [4, 7, 7], "[use_count, last_access_step, step] after append_tokens(e, 0)")
    assert_plain_equal(_m.release(_x) + _m.release(_e), 4, "release(x) + release(e)")

    # Full blocks are shared without a copy: a sequence whose last block is full appends into new blocks.
    _f = PagedKVCacheManager(num_blocks=5, block_size=2)
    _p = _f.allocate_for_sequence("p", 4)
    _c = _f.fork(_p, "c")
    _f.append_tokens(_p, 1)
    assert_plain_equal([[blk.block_id for blk in _p.block_table], [blk.block_id for blk in _c.block_table]], [[0, 1, 2], [0, 1]],
                       "[p's, c's block ids] after p appends past a full shared block (no copy needed)")

    # Random operation sequences against the model.
    _rng = _random.Random(2404)
    for _case in range(50):
        _nb, _bs = _rng.randint(3, 12), _rng.choice([1, 2, 3, 4, 5])
        _mgr, _mod = PagedKVCacheManager(_nb, _bs), _Model(_nb, _bs)
        _next = 0
        for _op in range(40):
            _where = f"(case {_case}, op {_op}, {_nb} blocks of {_bs})"
            _active = sorted(_mod.table)
            _kind = _rng.random()
            if _kind < 0.25 or not _active:
                _sid, _next = f"s{_next}", _next + 1
                _n = _rng.randint(0, 3 * _bs + 1)
                if _mod.allocate(_sid, _n):
                    _mgr.allocate_for_sequence(_sid, _n)
                else:
                    assert_raises(RuntimeError, f"allocate_for_sequence({_sid!r}, {_n}) without enough blocks {_where}",
                                  _mgr.allocate_for_sequence, _sid, _n)
            elif _kind < 0.55:
                _sid, _n = _rng.choice(_active), _rng.randint(0, 2 * _bs + 1)
                if _mod.append(_sid, _n):
                    _mgr.append_tokens(_mgr.sequences[_sid], _n)
                else:
                    assert_raises(RuntimeError, f"append_tokens({_sid!r}, {_n}) without enough blocks {_where}",
                                  _mgr.append_tokens, _mgr.sequences[_sid], _n)
            elif _kind < 0.75:
                _sid, _child, _next = _rng.choice(_active), f"s{_next}", _next + 1
                _mod.fork(_sid, _child)
                check_type(_mgr.fork(_mgr.sequences[_sid], _child), SequenceKVCache, f"fork {_where}")
            elif _kind < 0.85:
                _sid = _rng.choice(_active)
                _mod.touch(_sid)
                _mgr.touch(_mgr.sequences[_sid])
            else:
                _sid = _rng.choice(_active)
                _want = _mod.release(_sid)
                assert_plain_equal(_mgr.release(_mgr.sequences[_sid]), _want, f"release({_sid!r}) {_where}", reveal=False)
            _compare(_mgr, _mod, _where)
    ### END HIDDEN TESTS


_check_task2_4_PagedKVCacheManager()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task2_5_PagedKVPool_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 2.5: PagedKVPool (2 points)
#
# Now the tensors. One layer's cache is two tensors, `k_cache` and `v_cache`, each of shape
# `[num_blocks, block_size, num_heads, head_dim]`: row `i` is physical block `i` of the allocator. (A real server keeps
# one such pair per layer; vLLM also splits the key dimension for faster loads. This notebook keeps one layer and the
# plainest layout.) Write `PagedKVPool(num_blocks, block_size, num_heads, head_dim, device=None, dtype=torch.float32)`:
# store the four sizes as attributes and make two **separate**, contiguous zero tensors with that dtype on that device
# (`device=None` is PyTorch's default device, the CPU). `ValueError` when a size is < 1.
#
# Because the tensor is contiguous, `k_cache.view(-1, num_heads, head_dim)` is a view of the whole pool as
# `num_blocks * block_size` token **slots**: slot $s$ is block $s // B$, offset $s \bmod B$.
#
# ## 任务 2.5：PagedKVPool（2 分）
#
# 现在轮到张量。一层的缓存是两个张量 `k_cache` 和 `v_cache`，形状都是 `[num_blocks, block_size, num_heads, head_dim]`：
# 第 `i` 行就是分配器中的物理块 `i`。（真实的推理服务每层各有一对这样的张量；vLLM 还会拆分键的维度以加快读取。本 notebook
# 只用一层和最朴素的布局。）编写 `PagedKVPool(num_blocks, block_size, num_heads, head_dim, device=None, dtype=torch.float32)`：
# 把四个尺寸存为属性，并在指定设备上创建两个**彼此独立**、连续存储、指定 dtype 的全零张量（`device=None` 表示 PyTorch 的默认设备，
# 即 CPU）。任一尺寸小于 1 时抛出 `ValueError`。
#
# 由于张量是连续的，`k_cache.view(-1, num_heads, head_dim)` 就是把整个池看作 `num_blocks * block_size` 个 token **槽位**的视图：
# 槽位 $s$ 位于块 $s // B$、偏移 $s \bmod B$。

# %% nbgrader={"grade": false, "grade_id": "task2_5_PagedKVPool", "locked": false, "schema_version": 3, "solution": true, "task": false}
class PagedKVPool:
    """The key and value tensors of one layer of a paged KV cache.

    Args:
        num_blocks, block_size, num_heads, head_dim: ints >= 1.
        device: where the tensors live (a torch.device or a string; None: PyTorch's default, the CPU).
        dtype: their dtype (default torch.float32).

    Attributes:
        num_blocks, block_size, num_heads, head_dim: the arguments.
        k_cache, v_cache: two separate contiguous tensors of zeros, each of shape
            [num_blocks, block_size, num_heads, head_dim], with ``dtype`` on ``device``.

    Raises:
        ValueError: when any of the four sizes is < 1.
    """

    def __init__(self, num_blocks, block_size, num_heads, head_dim, device=None, dtype=torch.float32):
        ### BEGIN SOLUTION
        sizes = {"num_blocks": num_blocks, "block_size": block_size, "num_heads": num_heads, "head_dim": head_dim}
        for name, size in sizes.items():
            if size < 1:
                raise ValueError(f"{name} must be >= 1, got {size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.num_heads = num_heads
        self.head_dim = head_dim
        shape = (num_blocks, block_size, num_heads, head_dim)
        self.k_cache = torch.zeros(shape, dtype=dtype, device=device)
        self.v_cache = torch.zeros(shape, dtype=dtype, device=device)
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task2_5_PagedKVPool", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that PagedKVPool makes two separate zero tensors of the pinned shape, dtype and device."""


def _check_task2_5_PagedKVPool():
    from course.checks import assert_plain_equal, assert_raises, assert_same_tensor
    from course.env import available_devices

    for device in available_devices():
        pool = PagedKVPool(6, 4, 2, 8, device=device)
        assert_plain_equal([pool.num_blocks, pool.block_size, pool.num_heads, pool.head_dim], [6, 4, 2, 8],
                           f"[num_blocks, block_size, num_heads, head_dim] of PagedKVPool(6, 4, 2, 8) on {device}")
        for name in ("k_cache", "v_cache"):
            assert_same_tensor(getattr(pool, name), torch.zeros(6, 4, 2, 8, device=device),
                               f"PagedKVPool(6, 4, 2, 8, device={device}).{name}")
        pool.k_cache[1, 2] = 1.0
        assert float(pool.v_cache.abs().sum()) == 0.0, f"writing into k_cache changed v_cache on {device}: they must be two separate tensors"
    assert_raises(ValueError, "PagedKVPool(0, 4, 2, 8)", PagedKVPool, 0, 4, 2, 8)

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(2505)
    for device in available_devices():
        for _case in range(12):
            _sizes = [_rng.randint(1, 6) for _ in range(4)]
            _dtype = [torch.float32, torch.float16, torch.float64, torch.bfloat16][_case % 4]
            _pool = PagedKVPool(*_sizes, device=device, dtype=_dtype)
            for _name in ("k_cache", "v_cache"):
                _t = getattr(_pool, _name)
                assert_same_tensor(_t, torch.zeros(*_sizes, dtype=_dtype, device=device), f"PagedKVPool({_sizes}, {_dtype}).{_name} on {device}")
                assert _t.is_contiguous(), f"PagedKVPool(...).{_name} must be contiguous"
            _pool.v_cache.fill_(2.0)
            assert float(_pool.k_cache.abs().sum()) == 0.0, "writing into v_cache changed k_cache: they must be two separate tensors"
    for _bad in range(4):
        _sizes = [3, 3, 3, 3]
        _sizes[_bad] = _rng.choice([0, -2])
        assert_raises(ValueError, f"PagedKVPool(*{_sizes})", PagedKVPool, *_sizes)
    _plain = PagedKVPool(2, 3, 1, 5)
    assert_same_tensor(_plain.k_cache, torch.zeros(2, 3, 1, 5), "PagedKVPool(2, 3, 1, 5).k_cache with the default device and dtype")
    assert_same_tensor(PagedKVPool(1, 2, 3, 4, device="cpu").v_cache, torch.zeros(1, 2, 3, 4), "PagedKVPool(1, 2, 3, 4, device='cpu').v_cache")
    ### END HIDDEN TESTS


_check_task2_5_PagedKVPool()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task2_6_slot_mapping_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 2.6: slot_mapping (3 points)
#
# $$\text{slot}(p) = \text{block\_ids}[\lfloor p / B \rfloor] \cdot B + (p \bmod B)$$
#
# Write `slot_mapping(block_ids, start, count, block_size)`: the flat slots of token positions `start`, …,
# `start + count − 1` of a sequence whose block table is the 1-D integer tensor `block_ids`. Return an **int64** tensor
# of shape `[count]` on `block_ids`' device, even when `block_ids` is int32. `ValueError` when `start < 0`, `count < 0`,
# `block_size < 1`, or a position falls beyond the block table (`start + count > len(block_ids) * block_size`).
# No Python loop over positions: `torch.arange`, integer division and indexing do it in three lines.
#
# ## 任务 2.6：slot_mapping（3 分）
#
# 编写 `slot_mapping(block_ids, start, count, block_size)`：对块表为一维整数张量 `block_ids` 的序列，返回其第 `start` 到
# `start + count − 1` 个 token 位置的扁平槽位。返回形状为 `[count]` 的 **int64** 张量，放在 `block_ids` 所在设备上（即使
# `block_ids` 是 int32）。`start < 0`、`count < 0`、`block_size < 1`，或某个位置超出块表范围（`start + count > len(block_ids) * block_size`）
# 时抛出 `ValueError`。不要对位置写 Python 循环：用 `torch.arange`、整数除法和索引，三行即可。

# %% nbgrader={"grade": false, "grade_id": "task2_6_slot_mapping", "locked": false, "schema_version": 3, "solution": true, "task": false}
def slot_mapping(block_ids, start, count, block_size):
    """Return the flat pool slots of token positions start .. start+count-1 of one sequence.

    Position p lives in block block_ids[p // block_size] at offset p % block_size, which is slot
    block_ids[p // block_size] * block_size + p % block_size of the pool seen as
    k_cache.view(-1, num_heads, head_dim).

    Args:
        block_ids: 1-D integer tensor (int32 or int64), the sequence's block table, on any device.
        start: int >= 0, the first position.
        count: int >= 0, how many positions.
        block_size: int >= 1.

    Returns:
        An int64 tensor of shape [count] on block_ids' device.

    Raises:
        ValueError: when start < 0, count < 0, block_size < 1, or start + count > len(block_ids) * block_size.
    """
    ### BEGIN SOLUTION
    if start < 0 or count < 0 or block_size < 1:
        raise ValueError(f"need start >= 0, count >= 0, block_size >= 1; got {start}, {count}, {block_size}")
    if start + count > block_ids.shape[0] * block_size:
        raise ValueError(f"positions up to {start + count - 1} do not fit in {block_ids.shape[0]} blocks of {block_size}")
    positions = torch.arange(start, start + count, device=block_ids.device)
    return block_ids.long()[positions // block_size] * block_size + positions % block_size
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task2_6_slot_mapping", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that slot_mapping maps positions through the block table to int64 slots, without a Python loop."""


def _check_task2_6_slot_mapping():
    from course.checks import assert_no_python_loop, assert_raises, assert_same_tensor
    from course.env import available_devices

    for device in available_devices():
        table = torch.tensor([7, 2, 5], device=device)
        assert_same_tensor(slot_mapping(table, 0, 12, 4),
                           torch.tensor([28, 29, 30, 31, 8, 9, 10, 11, 20, 21, 22, 23], device=device),
                           f"slot_mapping(tensor([7, 2, 5]), start=0, count=12, block_size=4) on {device}")
        assert_same_tensor(slot_mapping(table, 5, 4, 4), torch.tensor([9, 10, 11, 20], device=device),
                           f"slot_mapping(tensor([7, 2, 5]), start=5, count=4, block_size=4) on {device}")
        assert_same_tensor(slot_mapping(table.int(), 3, 2, 4), torch.tensor([31, 8], device=device),
                           f"slot_mapping(int32 tensor([7, 2, 5]), 3, 2, 4) on {device} (int64 slots)")
        assert_raises(ValueError, f"slot_mapping(tensor([7, 2, 5]), 10, 3, 4) on {device} (position 12 is past the table)",
                      slot_mapping, table, 10, 3, 4)

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(2606)
    for device in available_devices():
        for _case in range(150):
            _bs = _rng.randint(1, 8)
            _nb = _rng.randint(0, 10)
            _table = _rng.sample(range(64), _nb)
            _start = _rng.randint(0, _nb * _bs)
            _count = _rng.randint(0, _nb * _bs - _start)
            _want = [_table[_p // _bs] * _bs + _p % _bs for _p in range(_start, _start + _count)]
            _dtype = torch.int32 if _case % 3 == 0 else torch.int64
            _t = torch.tensor(_table, dtype=_dtype, device=device)
            assert_same_tensor(slot_mapping(_t, _start, _count, _bs), torch.tensor(_want, dtype=torch.int64, device=device),
                               f"slot_mapping on random case {_case} ({_nb} blocks of {_bs}, {_dtype}, {device})", reveal=False)
            assert_same_tensor(_t, torch.tensor(_table, dtype=_dtype, device=device), f"block_ids after slot_mapping (case {_case}): it must not change")
        _t = torch.tensor([3, 0], device=device)
        for _args in ((-1, 2, 4), (0, -1, 4), (0, 1, 0), (6, 3, 4), (0, 9, 4)):
            assert_raises(ValueError, f"slot_mapping(tensor([3, 0]), *{_args}) on {device}", slot_mapping, _t, *_args)
    _small = (torch.randperm(8), 3, 20, 4)
    _large = (torch.randperm(4096), 3, 16000, 4)
    assert_no_python_loop(slot_mapping, _small, _large, "slot_mapping")
    ### END HIDDEN TESTS


_check_task2_6_slot_mapping()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task2_7_write_kv_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 2.7: write_kv (2 points)
#
# Write `write_kv(pool, slots, k, v)`: store the keys and values of `count` new tokens, `k` and `v` of shape
# `[count, num_heads, head_dim]`, into the given flat slots (distinct int64 slots, as `slot_mapping` returns them), in
# place; nothing else in the pool may change. `ValueError` when `k` or `v` is not of shape `[len(slots), num_heads, head_dim]`.
#
# Careful: `pool.k_cache.view(-1, H, D)` is a **view**, so writing into it writes into the pool; but advanced indexing
# **reads** a copy (`view[slots]` is a new tensor), and the out-of-place `index_copy` returns a new tensor too. Use an
# indexed assignment or an in-place method (trailing underscore).
#
# ## 任务 2.7：write_kv（2 分）
#
# 编写 `write_kv(pool, slots, k, v)`：把 `count` 个新 token 的键和值（`k`、`v` 形状为 `[count, num_heads, head_dim]`）原地写入给定的
# 扁平槽位（互不相同的 int64 槽位，与 `slot_mapping` 的返回值相同）；池中其他内容不得改变。`k` 或 `v` 的形状不是
# `[len(slots), num_heads, head_dim]` 时抛出 `ValueError`。
#
# 注意：`pool.k_cache.view(-1, H, D)` 是**视图**，写入它就是写入池；但高级索引**读取**时得到的是副本（`view[slots]` 是新张量），
# 非原地的 `index_copy` 也返回新张量。请使用带索引的赋值或原地方法（名字以下划线结尾）。

# %% nbgrader={"grade": false, "grade_id": "task2_7_write_kv", "locked": false, "schema_version": 3, "solution": true, "task": false}
def write_kv(pool, slots, k, v):
    """Scatter the keys and values of ``count`` tokens into their slots of the pool, in place.

    Token i goes to pool.k_cache.view(-1, num_heads, head_dim)[slots[i]] (and its value likewise
    into v_cache); no other slot changes.

    Args:
        pool: a PagedKVPool.
        slots: 1-D int64 tensor [count] of distinct slots, on the pool's device.
        k, v: tensors [count, num_heads, head_dim] on the pool's device (stored in the pool's dtype).

    Returns:
        None.

    Raises:
        ValueError: when k or v is not of shape [count, num_heads, head_dim].
    """
    ### BEGIN SOLUTION
    expected = (slots.shape[0], pool.num_heads, pool.head_dim)
    if tuple(k.shape) != expected or tuple(v.shape) != expected:
        raise ValueError(f"k and v must have shape {list(expected)}, got {list(k.shape)} and {list(v.shape)}")
    flat_k = pool.k_cache.view(-1, pool.num_heads, pool.head_dim)
    flat_v = pool.v_cache.view(-1, pool.num_heads, pool.head_dim)
    flat_k.index_copy_(0, slots, k.to(flat_k.dtype))
    flat_v.index_copy_(0, slots, v.to(flat_v.dtype))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task2_7_write_kv", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that write_kv writes each token's key and value into its slot, in place, and nothing else."""


def _check_task2_7_write_kv():
    from types import SimpleNamespace

    from course.checks import assert_no_python_loop, assert_raises, assert_same_tensor, check_type
    from course.env import available_devices


    def stand_in_pool(num_blocks, block_size, num_heads, head_dim, device=None, dtype=torch.float32):
        """Two zero tensors laid out like PagedKVPool's, so that this test does not depend on Task 2.5."""
        shape = (num_blocks, block_size, num_heads, head_dim)
        return SimpleNamespace(num_blocks=num_blocks, block_size=block_size, num_heads=num_heads, head_dim=head_dim,
                               k_cache=torch.zeros(shape, dtype=dtype, device=device),
                               v_cache=torch.zeros(shape, dtype=dtype, device=device))


    for device in available_devices():
        pool = stand_in_pool(4, 2, 1, 3, device=device)
        k = torch.arange(1.0, 7.0, device=device).reshape(2, 1, 3)
        v = -k
        check_type(write_kv(pool, torch.tensor([5, 0], device=device), k, v), type(None), f"write_kv(pool, slots [5, 0], k, v) on {device}")
        expected_k = torch.zeros(8, 1, 3, device=device)
        expected_k[5], expected_k[0] = k[0], k[1]
        assert_same_tensor(pool.k_cache.view(-1, 1, 3), expected_k, f"the pool's keys by slot after write_kv(slots [5, 0]) on {device}")
        assert_same_tensor(pool.v_cache.view(-1, 1, 3), -expected_k, f"the pool's values by slot after write_kv(slots [5, 0]) on {device}")
        assert_raises(ValueError, f"write_kv with k and v of shape [2, 3] instead of [2, 1, 3] on {device}",
                      write_kv, pool, torch.tensor([1, 2], device=device), k.reshape(2, 3), v.reshape(2, 3))

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(2707)
    for device in available_devices():
        for _case in range(40):
            _nb, _bs, _h, _d = _rng.randint(1, 6), _rng.randint(1, 5), _rng.randint(1, 3), _rng.randint(1, 6)
            _pool = stand_in_pool(_nb, _bs, _h, _d, device=device)
            _gen = torch.Generator().manual_seed(_case)
            _pool.k_cache.copy_(torch.randn(_pool.k_cache.shape, generator=_gen))
            _pool.v_cache.copy_(torch.randn(_pool.v_cache.shape, generator=_gen))
            _count = _rng.randint(0, _nb * _bs)
            _slots = _rng.sample(range(_nb * _bs), _count)
            _k = torch.randn(_count, _h, _d, generator=_gen)
            _v = torch.randn(_count, _h, _d, generator=_gen)
            _want_k = _pool.k_cache.cpu().reshape(-1, _h, _d).clone()
            _want_v = _pool.v_cache.cpu().reshape(-1, _h, _d).clone()
            for _i, _s in enumerate(_slots):
                _want_k[_s], _want_v[_s] = _k[_i], _v[_i]
            write_kv(_pool, torch.tensor(_slots, dtype=torch.int64, device=device), _k.to(device), _v.to(device))
            assert_same_tensor(_pool.k_cache, _want_k.reshape(_nb, _bs, _h, _d).to(device), f"k_cache after write_kv (case {_case}, {device})", reveal=False)
            assert_same_tensor(_pool.v_cache, _want_v.reshape(_nb, _bs, _h, _d).to(device), f"v_cache after write_kv (case {_case}, {device})", reveal=False)
        _pool = stand_in_pool(3, 2, 2, 2, device=device)
        _s = torch.tensor([0, 4], device=device)
        _ok = torch.ones(2, 2, 2, device=device)
        for _bad_k, _bad_v in ((torch.ones(3, 2, 2, device=device), _ok), (_ok, torch.ones(2, 2, 3, device=device)),
                               (torch.ones(2, 1, 2, device=device), _ok)):
            assert_raises(ValueError, f"write_kv with k {list(_bad_k.shape)}, v {list(_bad_v.shape)} for 2 slots ({device})",
                          write_kv, _pool, _s, _bad_k, _bad_v)
    _small_pool, _large_pool = stand_in_pool(4, 4, 2, 4), stand_in_pool(512, 16, 2, 4)
    _small = (_small_pool, torch.randperm(16)[:8], torch.randn(8, 2, 4), torch.randn(8, 2, 4))
    _large = (_large_pool, torch.randperm(8192)[:4096], torch.randn(4096, 2, 4), torch.randn(4096, 2, 4))
    assert_no_python_loop(write_kv, _small, _large, "write_kv")
    ### END HIDDEN TESTS


_check_task2_7_write_kv()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task2_8_gather_kv_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 2.8: gather_kv (3 points)
#
# Attention needs a sequence's keys and values **in token order**. Write `gather_kv(pool, block_ids, num_tokens)`:
# return `(K, V)`, a tuple of two tensors of shape `[num_tokens, num_heads, head_dim]` (the pool's dtype and device), where
# row `t` is token `t`. The block table decides the order, not the physical block ids: a sequence with table `[4, 1]`
# starts in block 4. Slots after `num_tokens` in the last block hold stale data and must not appear. `ValueError` when
# `num_tokens < 0` or `num_tokens > len(block_ids) * block_size`. No Python loop over tokens or blocks.
#
# Hint: index the pool with the whole block table at once, then merge the block and offset dimensions.
#
# ## 任务 2.8：gather_kv（3 分）
#
# 注意力计算需要序列的键和值**按 token 顺序**排列。编写 `gather_kv(pool, block_ids, num_tokens)`：返回 `(K, V)`，即两个形状为
# `[num_tokens, num_heads, head_dim]` 的张量组成的元组（dtype 和设备与池相同），第 `t` 行是第 `t` 个 token。顺序由块表决定，而不是
# 物理块 id：块表为 `[4, 1]` 的序列从块 4 开始。最后一个块中 `num_tokens` 之后的槽位存的是旧数据，不得出现在结果里。
# `num_tokens < 0` 或 `num_tokens > len(block_ids) * block_size` 时抛出 `ValueError`。不要对 token 或块写 Python 循环。
#
# 提示：一次性用整个块表索引池，再合并块维度和偏移维度。

# %% nbgrader={"grade": false, "grade_id": "task2_8_gather_kv", "locked": false, "schema_version": 3, "solution": true, "task": false}
def gather_kv(pool, block_ids, num_tokens):
    """Return a sequence's keys and values in token order.

    Args:
        pool: a PagedKVPool.
        block_ids: 1-D integer tensor, the sequence's block table, on the pool's device.
        num_tokens: int, 0 <= num_tokens <= len(block_ids) * pool.block_size.

    Returns:
        A tuple (K, V) of new tensors, each [num_tokens, num_heads, head_dim] in the pool's dtype
        on its device; row t is token t (block block_ids[t // B], offset t % B).

    Raises:
        ValueError: when num_tokens is out of that range.
    """
    ### BEGIN SOLUTION
    if not 0 <= num_tokens <= block_ids.shape[0] * pool.block_size:
        raise ValueError(f"num_tokens {num_tokens} does not fit in {block_ids.shape[0]} blocks of {pool.block_size}")
    index = block_ids.long()
    keys = pool.k_cache[index].flatten(0, 1)[:num_tokens]
    values = pool.v_cache[index].flatten(0, 1)[:num_tokens]
    return keys, values
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task2_8_gather_kv", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that gather_kv returns (K, V) in token order, cut at num_tokens, without a Python loop."""


def _check_task2_8_gather_kv():
    from types import SimpleNamespace

    from course.checks import assert_no_python_loop, assert_plain_equal, assert_raises, assert_same_tensor, check_type
    from course.env import available_devices


    def stand_in_pool(num_blocks, block_size, num_heads, head_dim, device=None, dtype=torch.float32):
        """Two zero tensors laid out like PagedKVPool's, so that this test does not depend on Task 2.5."""
        shape = (num_blocks, block_size, num_heads, head_dim)
        return SimpleNamespace(num_blocks=num_blocks, block_size=block_size, num_heads=num_heads, head_dim=head_dim,
                               k_cache=torch.zeros(shape, dtype=dtype, device=device),
                               v_cache=torch.zeros(shape, dtype=dtype, device=device))


    for device in available_devices():
        pool = stand_in_pool(6, 2, 1, 1, device=device)
        pool.k_cache.copy_(torch.arange(12.0, device=device).reshape(6, 2, 1, 1))  # The key of slot s is s.
        pool.v_cache.copy_(100 + pool.k_cache)
        result = gather_kv(pool, torch.tensor([4, 1, 3], device=device), 5)
        check_type(result, tuple, f"gather_kv(pool, tensor([4, 1, 3]), 5) on {device}")
        assert_plain_equal(len(result), 2, "len(gather_kv(...))")
        keys, values = result
        slots = torch.tensor([8.0, 9.0, 2.0, 3.0, 6.0], device=device).reshape(5, 1, 1)
        assert_same_tensor(keys, slots, f"K of gather_kv(pool, tensor([4, 1, 3]), 5) on {device} (key of slot s is s)")
        assert_same_tensor(values, 100 + slots, f"V of gather_kv(pool, tensor([4, 1, 3]), 5) on {device}")
        assert_raises(ValueError, f"gather_kv(pool, tensor([4, 1, 3]), 7) on {device} (3 blocks of 2 hold 6 tokens)",
                      gather_kv, pool, torch.tensor([4, 1, 3], device=device), 7)

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(2808)
    for device in available_devices():
        for _case in range(60):
            _nb, _bs, _h, _d = _rng.randint(1, 10), _rng.randint(1, 6), _rng.randint(1, 3), _rng.randint(1, 5)
            _dtype = torch.float64 if _case % 5 == 0 else torch.float32
            _pool = stand_in_pool(_nb, _bs, _h, _d, device=device, dtype=_dtype)
            _gen = torch.Generator().manual_seed(_case)
            _pool.k_cache.copy_(torch.randn(_pool.k_cache.shape, generator=_gen))
            _pool.v_cache.copy_(torch.randn(_pool.v_cache.shape, generator=_gen))
            _table = _rng.sample(range(_nb), _rng.randint(0, _nb))
            _n = _rng.randint(max(0, (len(_table) - 1) * _bs), len(_table) * _bs)
            _kc, _vc = _pool.k_cache.cpu(), _pool.v_cache.cpu()
            _want_k = torch.stack([_kc[_table[_t // _bs], _t % _bs] for _t in range(_n)]) if _n else torch.zeros(0, _h, _d, dtype=_dtype)
            _want_v = torch.stack([_vc[_table[_t // _bs], _t % _bs] for _t in range(_n)]) if _n else torch.zeros(0, _h, _d, dtype=_dtype)
            _ids = torch.tensor(_table, dtype=torch.int64 if _case % 2 else torch.int32, device=device)
            _got = gather_kv(_pool, _ids, _n)
            check_type(_got, tuple, f"gather_kv on random case {_case}")
            assert_same_tensor(_got[0], _want_k.to(device), f"K of gather_kv on random case {_case} ({device})", reveal=False)
            assert_same_tensor(_got[1], _want_v.to(device), f"V of gather_kv on random case {_case} ({device})", reveal=False)
        _pool = stand_in_pool(3, 2, 1, 1, device=device)
        assert_raises(ValueError, f"gather_kv(pool, tensor([0]), -1) on {device}", gather_kv, _pool, torch.tensor([0], device=device), -1)
        assert_raises(ValueError, f"gather_kv(pool, tensor([], dtype=int64), 1) on {device}", gather_kv, _pool,
                      torch.zeros(0, dtype=torch.int64, device=device), 1)
    _small_pool, _large_pool = stand_in_pool(8, 4, 2, 4), stand_in_pool(1024, 4, 2, 4)
    _small = (_small_pool, torch.randperm(8), 30)
    _large = (_large_pool, torch.randperm(1024), 4090)
    assert_no_python_loop(gather_kv, _small, _large, "gather_kv")
    ### END HIDDEN TESTS


_check_task2_8_gather_kv()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task2_9_copy_block_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 2.9: copy_block (2 points)
#
# Copy-on-write needs one tensor operation: copy every key and value of physical block `src_block` into block
# `dst_block` (all `block_size` slots, stale ones included), in place. Write `copy_block(pool, src_block, dst_block)`.
# `ValueError` when either id is outside `[0, num_blocks)` (a negative index would silently wrap around).
#
# ## 任务 2.9：copy_block（2 分）
#
# 写时复制只需要一个张量操作：把物理块 `src_block` 的全部键和值（所有 `block_size` 个槽位，包括旧数据）原地复制到块 `dst_block`。
# 编写 `copy_block(pool, src_block, dst_block)`。任一 id 不在 `[0, num_blocks)` 内时抛出 `ValueError`（负数下标会悄悄绕回到末尾）。

# %% nbgrader={"grade": false, "grade_id": "task2_9_copy_block", "locked": false, "schema_version": 3, "solution": true, "task": false}
def copy_block(pool, src_block, dst_block):
    """Copy the keys and values of block ``src_block`` into block ``dst_block`` of ``pool``, in place.

    Args:
        pool: a PagedKVPool.
        src_block, dst_block: ints in [0, pool.num_blocks); equal ids leave the pool unchanged.

    Returns:
        None. Only block dst_block changes.

    Raises:
        ValueError: when an id is outside [0, pool.num_blocks).
    """
    ### BEGIN SOLUTION
    for block_id in (src_block, dst_block):
        if not 0 <= block_id < pool.num_blocks:
            raise ValueError(f"block id {block_id} is outside [0, {pool.num_blocks})")
    pool.k_cache[dst_block] = pool.k_cache[src_block]
    pool.v_cache[dst_block] = pool.v_cache[src_block]
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task2_9_copy_block", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that copy_block copies one block's keys and values into another, in place, and nothing else."""


def _check_task2_9_copy_block():
    from types import SimpleNamespace

    from course.checks import assert_raises, assert_same_tensor, check_type
    from course.env import available_devices


    def stand_in_pool(num_blocks, block_size, num_heads, head_dim, device=None, dtype=torch.float32):
        """Two zero tensors laid out like PagedKVPool's, so that this test does not depend on Task 2.5."""
        shape = (num_blocks, block_size, num_heads, head_dim)
        return SimpleNamespace(num_blocks=num_blocks, block_size=block_size, num_heads=num_heads, head_dim=head_dim,
                               k_cache=torch.zeros(shape, dtype=dtype, device=device),
                               v_cache=torch.zeros(shape, dtype=dtype, device=device))


    for device in available_devices():
        pool = stand_in_pool(5, 2, 2, 3, device=device)
        pool.k_cache.copy_(torch.arange(60.0, device=device).reshape(5, 2, 2, 3))
        pool.v_cache.copy_(-pool.k_cache)
        before_k, before_v = pool.k_cache.clone(), pool.v_cache.clone()
        check_type(copy_block(pool, 1, 3), type(None), f"copy_block(pool, 1, 3) on {device}")
        before_k[3], before_v[3] = before_k[1], before_v[1]
        assert_same_tensor(pool.k_cache, before_k, f"k_cache after copy_block(pool, 1, 3) on {device} (block 3 becomes block 1)")
        assert_same_tensor(pool.v_cache, before_v, f"v_cache after copy_block(pool, 1, 3) on {device}")
        assert_raises(ValueError, f"copy_block(pool, 1, 5) with 5 blocks on {device}", copy_block, pool, 1, 5)

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(2909)
    for device in available_devices():
        for _case in range(40):
            _nb, _bs, _h, _d = _rng.randint(1, 8), _rng.randint(1, 4), _rng.randint(1, 3), _rng.randint(1, 4)
            _pool = stand_in_pool(_nb, _bs, _h, _d, device=device)
            _gen = torch.Generator().manual_seed(_case)
            _pool.k_cache.copy_(torch.randn(_pool.k_cache.shape, generator=_gen))
            _pool.v_cache.copy_(torch.randn(_pool.v_cache.shape, generator=_gen))
            _src, _dst = _rng.randrange(_nb), _rng.randrange(_nb)
            _want_k, _want_v = _pool.k_cache.cpu().clone(), _pool.v_cache.cpu().clone()
            _want_k[_dst], _want_v[_dst] = _want_k[_src].clone(), _want_v[_src].clone()
            copy_block(_pool, _src, _dst)
            assert_same_tensor(_pool.k_cache, _want_k.to(device), f"k_cache after copy_block (case {_case}, {device})", reveal=False)
            assert_same_tensor(_pool.v_cache, _want_v.to(device), f"v_cache after copy_block (case {_case}, {device})", reveal=False)
        _pool = stand_in_pool(3, 2, 1, 1, device=device)
        for _args in ((-1, 0), (0, -1), (3, 0), (0, 3)):
            assert_raises(ValueError, f"copy_block(pool, *{_args}) with 3 blocks ({device})", copy_block, _pool, *_args)
    ### END HIDDEN TESTS


_check_task2_9_copy_block()

# %% [markdown] nbgrader={"grade": false, "grade_id": "task2_10_paged_attention_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 2.10: paged_attention (5 points)
#
# At a decode step, each head $h$ of the new token's query $q_h$ attends over the sequence's $T$ cached tokens:
#
# $$\text{out}_h = \sum_{t=0}^{T-1} \operatorname{softmax}_t\!\left(s \cdot q_h \cdot K_{t,h}\right) V_{t,h}, \qquad
# s = \frac{1}{\sqrt{\text{head\_dim}}} \text{ unless given}.$$
#
# Write `paged_attention(q, pool, block_ids, num_tokens, scale=None)` for `q` of shape `[num_heads, head_dim]`: return
# `[num_heads, head_dim]` in `q`'s dtype on its device. It must equal
# `torch.nn.functional.scaled_dot_product_attention` on the contiguous K and V (the test checks this in fp32 with a tight
# tolerance, for random shapes, block sizes and scattered block tables). `ValueError` when `q` is not
# `[num_heads, head_dim]` or when `num_tokens` is not in `[1, len(block_ids) * block_size]`. No Python loop over tokens
# or blocks. (A real kernel such as vLLM's reads the blocks in place instead of gathering them first; the result is the same.)
#
# Hint: `torch.einsum("hd,thd->ht", ...)` gives every score at once; the softmax runs over the tokens.
#
# ## 任务 2.10：paged_attention（5 分）
#
# 在解码的每一步，新 token 的查询向量在每个头 $h$ 上的 $q_h$ 对序列中缓存的 $T$ 个 token 做注意力，公式见上；缩放系数 $s$ 未给定时取
# $1/\sqrt{\text{head\_dim}}$。编写 `paged_attention(q, pool, block_ids, num_tokens, scale=None)`，其中 `q` 形状为
# `[num_heads, head_dim]`：返回形状为 `[num_heads, head_dim]`、dtype 与设备同 `q` 的张量。它必须与在连续 K、V 上调用
# `torch.nn.functional.scaled_dot_product_attention` 的结果一致（测试在 fp32 下以很小的容差检查，覆盖随机形状、块大小和分散的块表）。
# `q` 的形状不是 `[num_heads, head_dim]`，或 `num_tokens` 不在 `[1, len(block_ids) * block_size]` 内时抛出 `ValueError`。
# 不要对 token 或块写 Python 循环。（vLLM 等真实内核直接在块上读取而不先收集；结果相同。）
#
# 提示：`torch.einsum("hd,thd->ht", ...)` 一次算出所有分数；softmax 在 token 维度上进行。

# %% nbgrader={"grade": false, "grade_id": "task2_10_paged_attention", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math


def paged_attention(q, pool, block_ids, num_tokens, scale=None):
    """Decode attention of one query token over a sequence's cached keys and values.

    out[h] = sum_t softmax_t(scale * q[h] . K[t, h]) * V[t, h] for t < num_tokens, where K and V
    are the sequence's keys and values in token order (block block_ids[t // B], offset t % B).

    Args:
        q: tensor [num_heads, head_dim], in the pool's dtype on the pool's device.
        pool: a PagedKVPool.
        block_ids: 1-D integer tensor, the sequence's block table, on the pool's device.
        num_tokens: int in [1, len(block_ids) * pool.block_size].
        scale: float, or None for 1 / sqrt(head_dim).

    Returns:
        A tensor [num_heads, head_dim] in q's dtype on q's device.

    Raises:
        ValueError: when q is not [num_heads, head_dim] or num_tokens is out of range.
    """
    ### BEGIN SOLUTION
    if tuple(q.shape) != (pool.num_heads, pool.head_dim):
        raise ValueError(f"q must have shape [{pool.num_heads}, {pool.head_dim}], got {list(q.shape)}")
    if not 1 <= num_tokens <= block_ids.shape[0] * pool.block_size:
        raise ValueError(f"num_tokens {num_tokens} is not in [1, {block_ids.shape[0] * pool.block_size}]")
    if scale is None:
        scale = 1.0 / math.sqrt(pool.head_dim)
    index = block_ids.long()
    keys = pool.k_cache[index].flatten(0, 1)[:num_tokens]  # [T, H, D]
    values = pool.v_cache[index].flatten(0, 1)[:num_tokens]
    scores = torch.einsum("hd,thd->ht", q, keys) * scale
    weights = torch.softmax(scores, dim=-1)
    return torch.einsum("ht,thd->hd", weights, values)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task2_10_paged_attention", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
"""Check that paged_attention equals scaled_dot_product_attention on the contiguous K/V, without a Python loop."""


def _check_task2_10_paged_attention():
    from types import SimpleNamespace

    import torch.nn.functional as F

    from course.checks import assert_no_python_loop, assert_raises, assert_same_tensor
    from course.env import available_devices


    def stand_in_pool(num_blocks, block_size, num_heads, head_dim, device=None, dtype=torch.float32):
        """Two zero tensors laid out like PagedKVPool's, so that this test does not depend on Task 2.5."""
        shape = (num_blocks, block_size, num_heads, head_dim)
        return SimpleNamespace(num_blocks=num_blocks, block_size=block_size, num_heads=num_heads, head_dim=head_dim,
                               k_cache=torch.zeros(shape, dtype=dtype, device=device),
                               v_cache=torch.zeros(shape, dtype=dtype, device=device))


    for device in available_devices():
        gen = torch.Generator().manual_seed(0)
        pool = stand_in_pool(8, 4, 2, 16, device=device)
        pool.k_cache.copy_(torch.randn(pool.k_cache.shape, generator=gen))  # Stale data everywhere.
        pool.v_cache.copy_(torch.randn(pool.v_cache.shape, generator=gen))
        table = torch.tensor([6, 1, 4], device=device)
        keys = torch.randn(10, 2, 16, generator=gen).to(device)
        values = torch.randn(10, 2, 16, generator=gen).to(device)
        positions = torch.arange(10, device=device)
        slots = table[positions // 4] * 4 + positions % 4
        pool.k_cache.view(-1, 2, 16)[slots] = keys
        pool.v_cache.view(-1, 2, 16)[slots] = values
        q = torch.randn(2, 16, generator=gen).to(device)
        dense = F.scaled_dot_product_attention(q[:, None, :], keys.transpose(0, 1), values.transpose(0, 1))[:, 0]
        assert_same_tensor(paged_attention(q, pool, table, 10), dense,
                           f"paged_attention(q, pool, tensor([6, 1, 4]), 10) vs scaled_dot_product_attention on {device}", atol=1e-5, rtol=1e-5)
        dense_scaled = F.scaled_dot_product_attention(q[:, None, :], keys.transpose(0, 1), values.transpose(0, 1), scale=0.5)[:, 0]
        assert_same_tensor(paged_attention(q, pool, table, 10, scale=0.5), dense_scaled,
                           f"paged_attention(..., scale=0.5) on {device}", atol=1e-5, rtol=1e-5)
        assert_raises(ValueError, f"paged_attention(q, pool, table, 0) on {device}", paged_attention, q, pool, table, 0)

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(21010)
    for device in available_devices():
        for _case in range(40):
            _h, _d, _bs = _rng.randint(1, 4), _rng.choice([2, 4, 8, 16, 32, 64]), _rng.randint(1, 8)
            _nb = _rng.randint(1, 7)
            _pool = stand_in_pool(_nb + _rng.randint(0, 4), _bs, _h, _d, device=device)
            _gen = torch.Generator().manual_seed(1000 + _case)
            _pool.k_cache.copy_(torch.randn(_pool.k_cache.shape, generator=_gen))
            _pool.v_cache.copy_(torch.randn(_pool.v_cache.shape, generator=_gen))
            _table = _rng.sample(range(_pool.num_blocks), _nb)
            _n = _rng.randint((_nb - 1) * _bs + 1, _nb * _bs)
            _kc, _vc = _pool.k_cache.cpu(), _pool.v_cache.cpu()
            _keys = torch.stack([_kc[_table[_t // _bs], _t % _bs] for _t in range(_n)])
            _values = torch.stack([_vc[_table[_t // _bs], _t % _bs] for _t in range(_n)])
            _q = torch.randn(_h, _d, generator=_gen)
            _scale = None if _case % 3 else _rng.uniform(0.05, 1.0)
            _dense = F.scaled_dot_product_attention(_q[:, None, :], _keys.transpose(0, 1), _values.transpose(0, 1), scale=_scale)[:, 0]
            _ids = torch.tensor(_table, device=device)
            _got = paged_attention(_q.to(device), _pool, _ids, _n) if _scale is None else paged_attention(_q.to(device), _pool, _ids, _n, scale=_scale)
            assert_same_tensor(_got, _dense.to(device), f"paged_attention on random case {_case} ({_h} heads, head_dim {_d}, "
                               f"block_size {_bs}, {_n} tokens, scale {_scale}, {device})", atol=1e-5, rtol=1e-5, reveal=False)
        _pool = stand_in_pool(4, 2, 2, 4, device=device)
        _ids = torch.tensor([2, 0], device=device)
        _q = torch.zeros(2, 4, device=device)
        assert_raises(ValueError, f"paged_attention with 5 tokens in 2 blocks of 2 ({device})", paged_attention, _q, _pool, _ids, 5)
        assert_raises(ValueError, f"paged_attention with q of shape [1, 2, 4] ({device})", paged_attention, _q[None], _pool, _ids, 3)
        assert_raises(ValueError, f"paged_attention with q of shape [2, 3] ({device})", paged_attention, _q[:, :3], _pool, _ids, 3)
    _small_pool, _large_pool = stand_in_pool(8, 4, 2, 8), stand_in_pool(1024, 4, 2, 8)
    _small = (torch.randn(2, 8), _small_pool, torch.randperm(8), 30)
    _large = (torch.randn(2, 8), _large_pool, torch.randperm(1024), 4090)
    assert_no_python_loop(paged_attention, _small, _large, "paged_attention")
    ### END HIDDEN TESTS


_check_task2_10_paged_attention()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task2_11_TensorPagedKVCacheManager_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 2.11: TensorPagedKVCacheManager (5 points)
#
# Put the metadata and the tensors together. `TensorPagedKVCacheManager(pool)` is a `PagedKVCacheManager` (Task 2.4)
# whose allocator has the pool's `num_blocks` and `block_size`, so that block id $i$ **is** row $i$ of `pool.k_cache` and
# `pool.v_cache`. Add:
#
# - `block_ids(seq)`: the block table as an int64 tensor on the pool's device;
# - `prefill(seq_id, k, v)`: `allocate_for_sequence(seq_id, len(k))`, then write `k`, `v` (each `[count, num_heads, head_dim]`)
#   as positions 0 … count−1; returns the new sequence;
# - `append_tokens(seq, num_new_tokens)` (override): as before, and when copy-on-write gave `seq` a new last block, copy
#   the old block's keys and values into it (`copy_block`) so that the tokens it already had are still there;
# - `append_kv(seq, k, v)`: `append_tokens(seq, len(k))`, then write `k`, `v` at the positions that follow the old ones;
# - `gather(seq)`: `gather_kv(pool, block_ids(seq), seq.num_tokens)`.
#
# `ValueError` from `prefill` and `append_kv` when `k` and `v` are not both `[count, num_heads, head_dim]`, checked
# **before** anything changes; when blocks run out, the `RuntimeError` of the base class, with nothing changed. The test
# forks a sequence, appends different tokens to parent and child, and checks that each one's gathered K/V equals its own
# history. Use your functions from Tasks 2.6–2.9.
#
# Hint: remember `seq.block_table[-1]` before calling `super().append_tokens(...)`; if it is a different object after, a
# copy happened.
#
# ## 任务 2.11：TensorPagedKVCacheManager（5 分）
#
# 把元数据和张量合在一起。`TensorPagedKVCacheManager(pool)` 是一个 `PagedKVCacheManager`（任务 2.4），其分配器的 `num_blocks`
# 和 `block_size` 取自池，因此块 id $i$ **就是** `pool.k_cache` 和 `pool.v_cache` 的第 $i$ 行。新增：
#
# - `block_ids(seq)`：以 int64 张量（放在池所在设备上）返回块表；
# - `prefill(seq_id, k, v)`：先 `allocate_for_sequence(seq_id, len(k))`，再把 `k`、`v`（形状均为 `[count, num_heads, head_dim]`）
#   写入第 0 … count−1 个位置；返回新序列；
# - `append_tokens(seq, num_new_tokens)`（重写）：行为同前；当写时复制给了 `seq` 一个新的最后一个块时，把旧块的键和值复制过去
#   （`copy_block`），使它原有的 token 仍在；
# - `append_kv(seq, k, v)`：先 `append_tokens(seq, len(k))`，再把 `k`、`v` 写在原有位置之后；
# - `gather(seq)`：`gather_kv(pool, block_ids(seq), seq.num_tokens)`。
#
# `k` 与 `v` 不都是 `[count, num_heads, head_dim]` 时，`prefill` 和 `append_kv` 抛出 `ValueError`，且必须在任何改变**之前**检查；
# 块不够时抛出基类的 `RuntimeError`，且什么都不改变。测试会 fork 一个序列，分别向父序列和子序列追加不同的 token，并检查各自收集到的
# K/V 与各自的历史一致。请使用任务 2.6–2.9 中你写的函数。
#
# 提示：调用 `super().append_tokens(...)` 之前先记下 `seq.block_table[-1]`；调用之后若它换成了另一个对象，就说明发生了复制。

# %% nbgrader={"grade": false, "grade_id": "task2_11_TensorPagedKVCacheManager", "locked": false, "schema_version": 3, "solution": true, "task": false}
class TensorPagedKVCacheManager(PagedKVCacheManager):
    """A PagedKVCacheManager that owns a PagedKVPool and keeps its tensor contents right.

    Args:
        pool: a PagedKVPool; the allocator gets pool.num_blocks blocks of pool.block_size, and
            block id i is row i of pool.k_cache and pool.v_cache.

    Attributes:
        pool, and everything of PagedKVCacheManager (allocator, block_size, sequences, step).

    Methods (the inherited fork, touch, release and summary keep working):
        block_ids(seq) -> int64 tensor [seq.num_blocks()] on the pool's device, the block table.
        prefill(seq_id, k, v) -> SequenceKVCache: allocate_for_sequence(seq_id, count), then
            write k, v ([count, num_heads, head_dim]) as positions 0 .. count-1.
        append_tokens(seq, num_new_tokens) -> None: the base class's, and when copy-on-write gave
            seq a new last block, the old block's keys and values are copied into it (copy_block).
        append_kv(seq, k, v) -> None: append_tokens(seq, count), then write k, v as positions
            old num_tokens .. old num_tokens + count - 1.
        gather(seq) -> (K, V): gather_kv(pool, block_ids(seq), seq.num_tokens).

    Raises:
        ValueError: prefill/append_kv when k and v are not both [count, num_heads, head_dim]
            (checked before anything changes), and the base class's ValueErrors.
        RuntimeError: the base class's, when blocks run out; nothing changes.
    """

    def __init__(self, pool):
        ### BEGIN SOLUTION
        super().__init__(num_blocks=pool.num_blocks, block_size=pool.block_size)
        self.pool = pool
        ### END SOLUTION

    def block_ids(self, seq):
        """Return seq's block table as an int64 tensor on the pool's device."""
        ### BEGIN SOLUTION
        return torch.tensor([block.block_id for block in seq.block_table], dtype=torch.int64,
                            device=self.pool.k_cache.device)
        ### END SOLUTION

    def prefill(self, seq_id, k, v):
        """Register seq_id with len(k) tokens and write their keys and values; return the sequence."""
        ### BEGIN SOLUTION
        shape = (self.pool.num_heads, self.pool.head_dim)
        if k.dim() != 3 or tuple(k.shape[1:]) != shape or v.shape != k.shape:
            raise ValueError(f"k and v must both be [count, {shape[0]}, {shape[1]}], got {list(k.shape)} and {list(v.shape)}")
        seq = self.allocate_for_sequence(seq_id, k.shape[0])
        write_kv(self.pool, slot_mapping(self.block_ids(seq), 0, k.shape[0], self.block_size), k, v)
        return seq
        ### END SOLUTION

    def append_tokens(self, seq, num_new_tokens):
        """The base class's append_tokens; after a copy-on-write, copy the old last block's contents."""
        ### BEGIN SOLUTION
        position = len(seq.block_table) - 1
        last = seq.block_table[-1] if seq.block_table else None
        super().append_tokens(seq, num_new_tokens)
        if last is not None and seq.block_table[position] is not last:
            copy_block(self.pool, last.block_id, seq.block_table[position].block_id)
        ### END SOLUTION

    def append_kv(self, seq, k, v):
        """Append len(k) tokens to seq and write their keys and values after the old ones."""
        ### BEGIN SOLUTION
        shape = (self.pool.num_heads, self.pool.head_dim)
        if k.dim() != 3 or tuple(k.shape[1:]) != shape or v.shape != k.shape:
            raise ValueError(f"k and v must both be [count, {shape[0]}, {shape[1]}], got {list(k.shape)} and {list(v.shape)}")
        start = seq.num_tokens
        self.append_tokens(seq, k.shape[0])
        write_kv(self.pool, slot_mapping(self.block_ids(seq), start, k.shape[0], self.block_size), k, v)
        ### END SOLUTION

    def gather(self, seq):
        """Return (K, V) of seq in token order, each [seq.num_tokens, num_heads, head_dim]."""
        ### BEGIN SOLUTION
        return gather_kv(self.pool, self.block_ids(seq), seq.num_tokens)
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task2_11_TensorPagedKVCacheManager", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
"""Check that TensorPagedKVCacheManager keeps every sequence's K/V right through prefill, fork, copy-on-write and append."""


def _check_task2_11_TensorPagedKVCacheManager():
    from course.checks import assert_plain_equal, assert_raises, assert_same_tensor, check_type
    from course.env import available_devices

    for device in available_devices():
        gen = torch.Generator().manual_seed(11)
        pool = PagedKVPool(8, 4, 2, 8, device=device)
        pool.k_cache.copy_(torch.randn(pool.k_cache.shape, generator=gen))  # Stale data everywhere.
        pool.v_cache.copy_(torch.randn(pool.v_cache.shape, generator=gen))
        manager = TensorPagedKVCacheManager(pool)
        assert manager.pool is pool, "TensorPagedKVCacheManager(pool).pool must be the pool"
        assert_plain_equal([manager.allocator.num_blocks, manager.block_size], [8, 4], "[allocator.num_blocks, block_size] of a manager over PagedKVPool(8, 4, ...)")
        k0, v0 = torch.randn(6, 2, 8, generator=gen).to(device), torch.randn(6, 2, 8, generator=gen).to(device)
        a = manager.prefill("a", k0, v0)
        check_type(a, SequenceKVCache, f"prefill('a', k0, v0) on {device}")
        assert_same_tensor(manager.block_ids(a), torch.tensor([0, 1], device=device), f"block_ids(a) after prefill of 6 tokens on {device}")
        keys, values = manager.gather(a)
        assert_same_tensor(keys, k0, f"K of gather(a) after prefill on {device}")
        assert_same_tensor(values, v0, f"V of gather(a) after prefill on {device}")
        b = manager.fork(a, "b")
        k1, v1 = torch.randn(3, 2, 8, generator=gen).to(device), torch.randn(3, 2, 8, generator=gen).to(device)
        k2, v2 = torch.randn(3, 2, 8, generator=gen).to(device), torch.randn(3, 2, 8, generator=gen).to(device)
        manager.append_kv(a, k1, v1)  # Block 1 is shared and half full: copy-on-write.
        manager.append_kv(b, k2, v2)
        for seq, (k_new, v_new) in ((a, (k1, v1)), (b, (k2, v2))):
            keys, values = manager.gather(seq)
            assert_same_tensor(keys, torch.cat([k0, k_new]), f"K of gather({seq.seq_id}) after fork and different appends on {device}")
            assert_same_tensor(values, torch.cat([v0, v_new]), f"V of gather({seq.seq_id}) after fork and different appends on {device}")
        assert_raises(ValueError, f"prefill('c', k of shape [2, 8], v of shape [2, 8]) on {device}", manager.prefill, "c", k0[:, 0], v0[:, 0])
        assert_plain_equal("c" in manager.sequences, False, "'c' in sequences after a prefill that raised ValueError")

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(21111)


    def _need(mgr, seq, n):
        last = seq.block_table[-1] if seq.block_table else None
        room = last.free_slots if last is not None else 0
        copy = int(n > 0 and room > 0 and last.ref_count > 1)
        return copy + -(-max(0, n - room) // mgr.block_size)


    def _check_all(mgr, hist, where):
        for sid, (hk, hv) in hist.items():
            seq = mgr.sequences[sid]
            ids = mgr.block_ids(seq)
            assert_same_tensor(ids, torch.tensor([blk.block_id for blk in seq.block_table], dtype=torch.int64, device=hk.device),
                               f"block_ids({sid!r}) {where}", reveal=False)
            keys, values = mgr.gather(seq)
            known = ~torch.isnan(hk[:, 0, 0])
            assert_plain_equal(list(keys.shape), list(hk.shape), f"the shape of K of gather({sid!r}) {where}", reveal=False)
            assert_same_tensor(keys[known], hk[known], f"K of gather({sid!r}) {where}", reveal=False)
            assert_same_tensor(values[known], hv[known], f"V of gather({sid!r}) {where}", reveal=False)


    for device in available_devices():
        for _case in range(25):
            _nb, _bs, _h, _d = _rng.randint(3, 10), _rng.randint(1, 4), _rng.randint(1, 2), _rng.randint(1, 4)
            _pool = PagedKVPool(_nb, _bs, _h, _d, device=device)
            _gen = torch.Generator().manual_seed(_case)
            _pool.k_cache.copy_(torch.randn(_pool.k_cache.shape, generator=_gen))
            _pool.v_cache.copy_(torch.randn(_pool.v_cache.shape, generator=_gen))
            _mgr = TensorPagedKVCacheManager(_pool)
            _hist = {}
            _next = 0
            for _op in range(30):
                _where = f"(case {_case}, op {_op}, {_nb} blocks of {_bs}, {device})"
                _active = sorted(_hist)
                _kind = _rng.random()
                if _kind < 0.25 or not _active:
                    _sid, _next = f"s{_next}", _next + 1
                    _n = _rng.randint(0, 2 * _bs + 1)
                    _k = torch.randn(_n, _h, _d, generator=_gen).to(device)
                    _v = torch.randn(_n, _h, _d, generator=_gen).to(device)
                    if -(-_n // _bs) > _mgr.allocator.num_free:
                        assert_raises(RuntimeError, f"prefill({_sid!r}, {_n} tokens) without enough blocks {_where}", _mgr.prefill, _sid, _k, _v)
                    else:
                        _mgr.prefill(_sid, _k, _v)
                        _hist[_sid] = (_k, _v)
                elif _kind < 0.65:
                    _sid = _rng.choice(_active)
                    _seq = _mgr.sequences[_sid]
                    _n = _rng.randint(0, 2 * _bs)
                    _k = torch.randn(_n, _h, _d, generator=_gen).to(device)
                    _v = torch.randn(_n, _h, _d, generator=_gen).to(device)
                    _direct = _rng.random() < 0.25
                    if _need(_mgr, _seq, _n) > _mgr.allocator.num_free:
                        if _direct:
                            assert_raises(RuntimeError, f"append_tokens({_sid!r}, {_n}) without enough blocks {_where}", _mgr.append_tokens, _seq, _n)
                        else:
                            assert_raises(RuntimeError, f"append_kv({_sid!r}, {_n} tokens) without enough blocks {_where}", _mgr.append_kv, _seq, _k, _v)
                    elif _direct:
                        _mgr.append_tokens(_seq, _n)
                        _nan = torch.full((_n, _h, _d), float("nan"), device=device)
                        _hist[_sid] = (torch.cat([_hist[_sid][0], _nan]), torch.cat([_hist[_sid][1], _nan]))
                    else:
                        _mgr.append_kv(_seq, _k, _v)
                        _hist[_sid] = (torch.cat([_hist[_sid][0], _k]), torch.cat([_hist[_sid][1], _v]))
                elif _kind < 0.85:
                    _sid, _child, _next = _rng.choice(_active), f"s{_next}", _next + 1
                    _mgr.fork(_mgr.sequences[_sid], _child)
                    _hist[_child] = _hist[_sid]
                else:
                    _sid = _rng.choice(_active)
                    _mgr.release(_mgr.sequences[_sid])
                    del _hist[_sid]
                _check_all(_mgr, _hist, _where)
        # Shape errors are caught before anything changes.
        _pool = PagedKVPool(4, 2, 2, 3, device=device)
        _mgr = TensorPagedKVCacheManager(_pool)
        _seq = _mgr.prefill("p", torch.ones(3, 2, 3, device=device), torch.ones(3, 2, 3, device=device))
        for _bad_k, _bad_v in ((torch.ones(2, 2, 3, device=device), torch.ones(1, 2, 3, device=device)),
                               (torch.ones(2, 3, 3, device=device), torch.ones(2, 3, 3, device=device)),
                               (torch.ones(2, 6, device=device), torch.ones(2, 6, device=device))):
            _state = [_mgr.step, _seq.num_tokens, _seq.use_count, _mgr.allocator.num_free]
            assert_raises(ValueError, f"append_kv(p, k {list(_bad_k.shape)}, v {list(_bad_v.shape)}) ({device})", _mgr.append_kv, _seq, _bad_k, _bad_v)
            assert_raises(ValueError, f"prefill('q', k {list(_bad_k.shape)}, v {list(_bad_v.shape)}) ({device})", _mgr.prefill, "q", _bad_k, _bad_v)
            assert_plain_equal([_mgr.step, _seq.num_tokens, _seq.use_count, _mgr.allocator.num_free, "q" in _mgr.sequences],
                               _state + [False], f"[step, num_tokens, use_count, num_free, 'q' in sequences] after a shape error ({device})", reveal=False)
        _mgr.append_kv(_seq, torch.zeros(0, 2, 3, device=device), torch.zeros(0, 2, 3, device=device))
        assert_plain_equal(_seq.num_tokens, 3, "num_tokens after append_kv of 0 tokens")
    ### END HIDDEN TESTS


_check_task2_11_TensorPagedKVCacheManager()

# %% [markdown]
# ## Experiment 1: fragmentation vs block size | 实验 1：碎片率与块大小
#
# Four hundred sequences with lengths drawn from a log-normal distribution (median 300 tokens, a long tail, capped at
# 2,048), as in a chat workload. For each block size the cell allocates all of them with your `PagedKVCacheManager` and
# reads `summary()["fragmentation"]`. The dashed line is the estimate "half a block wasted per sequence",
# $\frac{(B-1)/2}{\bar n + (B-1)/2}$; the red line is what reserving the maximum length (2,048 tokens) per sequence wastes,
# as servers did before paging. Small blocks waste little memory but make block tables longer and kernels read more, smaller
# pieces; vLLM's default of 16 tokens is a compromise.
#
# 四百个序列，长度取自对数正态分布（中位数 300 个 token，长尾，上限 2,048），类似聊天负载。对每种块大小，本单元用你的
# `PagedKVCacheManager` 分配所有序列，并读取 `summary()["fragmentation"]`。虚线是"每个序列平均浪费半个块"的估计；红线是按最大长度
# （2,048 个 token）为每个序列预留内存（分页出现之前推理服务的做法）所浪费的比例。块越小浪费越少，但块表越长，内核读取的数据块也越碎；
# vLLM 默认的 16 个 token 是一种折中。

# %%
import math
import random

import matplotlib.pyplot as plt

MAX_LEN = 2048
length_rng = random.Random(SEED)
lengths = [min(MAX_LEN, max(1, int(length_rng.lognormvariate(math.log(300), 0.9)))) for _ in range(400)]
mean_length = sum(lengths) / len(lengths)
block_sizes = [1, 2, 4, 8, 16, 32, 64, 128, 256]

measured = []
for block_size in block_sizes:
    blocks_needed = sum(-(-n // block_size) for n in lengths)
    manager = PagedKVCacheManager(num_blocks=blocks_needed, block_size=block_size)
    for index, n in enumerate(lengths):
        manager.allocate_for_sequence(f"seq{index}", n)
    measured.append(manager.summary()["fragmentation"])
estimate = [((b - 1) / 2) / (mean_length + (b - 1) / 2) for b in block_sizes]
reserved_waste = 1 - mean_length / MAX_LEN

fig, ax = plt.subplots(figsize=(7.5, 3.6))
ax.plot(block_sizes, [100 * f for f in measured], "o-", label="paged: measured by PagedKVCacheManager")
ax.plot(block_sizes, [100 * f for f in estimate], "k--", label="estimate: half a block per sequence")
ax.axhline(100 * reserved_waste, color="tab:red", label=f"contiguous, reserve {MAX_LEN} tokens per sequence")
ax.set_xscale("log", base=2)
ax.set_xlabel("block size (tokens per block)")
ax.set_ylabel("wasted KV memory (%)")
ax.set_title(f"Internal fragmentation of {len(lengths)} sequences (mean length {mean_length:.0f} tokens)")
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()
for block_size, fraction in zip(block_sizes, measured):
    print(f"block_size {block_size:4d}: {100 * fraction:5.2f} % wasted")

# %% [markdown]
# ## Experiment 2: KV bytes per token of real models | 实验 2：真实模型每个 token 的 KV 字节数
#
# $\text{bytes per token} = 2 \cdot \text{layers} \cdot \text{kv\_heads} \cdot \text{head\_dim} \cdot \text{dtype bytes}$,
# with the shapes published in each model's configuration (model cards on Hugging Face and the papers in the references).
# OPT-13B's 800 KB per token is the example of the vLLM paper; grouped-query attention (GQA: several query heads share one
# KV head) is why Llama-3-8B needs a quarter of Llama-2-7B's cache per token. Move the sliders to size a cache of your own.
#
# 每个 token 的字节数按上式计算，模型形状取自各模型公开的配置（Hugging Face 上的模型卡以及参考文献中的论文）。OPT-13B 每个 token
# 800 KB 是 vLLM 论文中的例子；分组查询注意力（GQA：多个查询头共享一个 KV 头）使 Llama-3-8B 每个 token 所需的缓存只有 Llama-2-7B 的四分之一。
# 拖动滑块，估算你自己的缓存规模。

# %%
import ipywidgets as widgets
from IPython.display import display


def kv_bytes_per_token(layers, kv_heads, head_dim, dtype_bytes=2):
    """Bytes of K and V that one token occupies in the cache: 2 * layers * kv_heads * head_dim * dtype_bytes."""
    return 2 * layers * kv_heads * head_dim * dtype_bytes


# (layers, KV heads, head_dim), from each model's published configuration.
MODELS = {
    "OPT-13B (MHA)": (40, 40, 128),
    "Llama-2-7B (MHA)": (32, 32, 128),
    "Llama-3-8B (GQA)": (32, 8, 128),
    "Mistral-7B (GQA)": (32, 8, 128),
    "Qwen2-7B (GQA)": (28, 4, 128),
    "Llama-3-70B (GQA)": (80, 8, 128),
}
CACHE_GIB = 40
print(f"{'model':20s} {'KiB/token':>10s} {'MiB/block of 16':>16s} {'tokens in ' + str(CACHE_GIB) + ' GiB':>18s}")
per_token = {}
for name, (layers, kv_heads, head_dim) in MODELS.items():
    per_token[name] = kv_bytes_per_token(layers, kv_heads, head_dim, 2)
    print(f"{name:20s} {per_token[name] / 1024:10.0f} {16 * per_token[name] / 2**20:16.2f} {CACHE_GIB * 2**30 // per_token[name]:18,d}")
assert per_token["Llama-3-8B (GQA)"] == 128 * 1024  # 2 * 32 * 8 * 128 * 2 bytes = 128 KiB.

fig, ax = plt.subplots(figsize=(7.5, 3.2))
ax.barh(list(per_token), [b / 1024 for b in per_token.values()], color="tab:blue", label="fp16 / bf16 (2 bytes)")
ax.set_xlabel("KV cache per token (KiB)")
ax.set_title("KV bytes per token = 2 · layers · kv_heads · head_dim · dtype bytes")
ax.legend()
plt.tight_layout()
plt.show()

sliders = {
    "layers": widgets.IntSlider(value=32, min=1, max=128, description="layers"),
    "kv_heads": widgets.IntSlider(value=8, min=1, max=128, description="kv_heads"),
    "head_dim": widgets.IntSlider(value=128, min=16, max=256, step=16, description="head_dim"),
    "dtype_bytes": widgets.Dropdown(options=[("fp32", 4), ("fp16/bf16", 2), ("fp8", 1)], value=2, description="dtype"),
    "block_size": widgets.IntSlider(value=16, min=1, max=256, description="block_size"),
    "cache_gib": widgets.IntSlider(value=40, min=1, max=140, description="cache GiB"),
}
answer = widgets.HTML()


def recompute(change=None):
    v = {name: w.value for name, w in sliders.items()}
    per = kv_bytes_per_token(v["layers"], v["kv_heads"], v["head_dim"], v["dtype_bytes"])
    blocks = v["cache_gib"] * 2**30 // (per * v["block_size"])
    answer.value = (f"<b>{per / 1024:.1f} KiB per token</b>, {per * v['block_size'] / 2**20:.2f} MiB per block; "
                    f"{v['cache_gib']} GiB hold {blocks:,d} blocks = {blocks * v['block_size']:,d} tokens")


for w in sliders.values():
    w.observe(recompute, names="value")
recompute()
display(widgets.VBox([*sliders.values(), answer]))

# %% [markdown]
# ## Experiment 3: copy-on-write, drawn | 实验 3：画出写时复制
#
# A parent of 10 tokens (blocks of 4) is forked; both block tables point at the same three physical blocks (orange: shared,
# `ref_count` 2). Then the parent appends 3 tokens. Its last block is shared and has free slots, so the manager copies it
# (block 2 → block 3) before writing, and the rest goes into a new block 4. The child still sees its own 10 tokens in block
# 2; only the two full blocks stay shared. The width of the coloured bar is how full a block is.
#
# 一个 10 个 token 的父序列（块大小 4）被 fork；两张块表指向同样的三个物理块（橙色：共享，`ref_count` 为 2）。随后父序列追加 3 个 token。
# 它的最后一个块被共享且有空槽，于是管理器在写入前先复制该块（块 2 → 块 3），余下的 token 写入新块 4。子序列在块 2 中看到的仍是它自己的
# 10 个 token；只有两个满块继续共享。彩色条的宽度表示块的填充程度。

# %%
from matplotlib.patches import Patch, Rectangle

COLORS = {0: "lightgrey", 1: "tab:blue", 2: "tab:orange"}


def draw_tables(ax, manager, title):
    """Draw the pool's physical blocks (middle row) and two sequences' block tables: one above, one below."""
    allocator = manager.allocator
    for block_id in range(allocator.num_blocks):
        block = allocator.get_block(block_id)
        ax.add_patch(Rectangle((block_id, 0), 0.9, 0.9, edgecolor="black",
                               facecolor="white" if block.ref_count else COLORS[0]))
        ax.add_patch(Rectangle((block_id, 0), 0.9 * block.filled / block.capacity, 0.9,
                               facecolor=COLORS[min(block.ref_count, 2)]))
        ax.text(block_id + 0.45, 0.45, f"#{block_id}\nref {block.ref_count}", ha="center", va="center", fontsize=7)
    for row, seq in enumerate(manager.sequences.values()):
        above = row % 2 == 0
        y = 2.0 if above else -2.0
        ax.text(-0.2, y + 0.45, f"{seq.seq_id}\n{seq.num_tokens} tokens", ha="right", va="center", fontsize=9)
        for j, block in enumerate(seq.block_table):
            ax.add_patch(Rectangle((j, y), 0.9, 0.9, facecolor="white", edgecolor="black"))
            ax.text(j + 0.45, y + 0.45, f"L{j}", ha="center", va="center", fontsize=8)
            start, end = (y - 0.05, 0.95) if above else (y + 0.95, -0.05)
            ax.annotate("", xy=(block.block_id + 0.45, end), xytext=(j + 0.45, start),
                        arrowprops=dict(arrowstyle="->", color=COLORS[min(block.ref_count, 2)], lw=1.2))
    ax.text(allocator.num_blocks, 0.45, "physical\nblocks", ha="left", va="center", fontsize=8)
    ax.set_xlim(-1.8, allocator.num_blocks + 1.2)
    ax.set_ylim(-2.3, 3.1)
    ax.set_title(title)
    ax.axis("off")


demo = PagedKVCacheManager(num_blocks=8, block_size=4)
parent = demo.allocate_for_sequence("parent", 10)
child = demo.fork(parent, "child")
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
draw_tables(axes[0], demo, "after fork: 3 shared blocks")
demo.append_tokens(parent, 3)
draw_tables(axes[1], demo, "after parent appends 3 tokens: copy-on-write")
fig.legend(handles=[Patch(color=COLORS[0], label="free"), Patch(color=COLORS[1], label="one owner"),
                    Patch(color=COLORS[2], label="shared (ref_count > 1)")], loc="lower center", ncol=3, fontsize=8)
plt.tight_layout(rect=(0, 0.08, 1, 1))
plt.show()
print("parent:", [b.block_id for b in parent.block_table], " child:", [b.block_id for b in child.block_table])

# %% [markdown]
# ## Experiment 4: paged equals dense | 实验 4：分页与稠密结果一致
#
# The same decode step twice: once with your `paged_attention` over a fragmented block table, once with PyTorch's
# `scaled_dot_product_attention` over the contiguous K/V that `gather` returns. The difference is at the level of float32
# rounding, on whatever device the setup cell picked.
#
# 同一个解码步骤算两遍：一次用你的 `paged_attention` 在碎片化的块表上计算，一次用 PyTorch 的 `scaled_dot_product_attention` 在
# `gather` 返回的连续 K/V 上计算。两者之差在 float32 舍入误差的量级，且在设置单元选定的设备上运行。

# %%
import torch.nn.functional as F

pool = PagedKVPool(num_blocks=64, block_size=16, num_heads=8, head_dim=64, device=DEVICE)
tensor_manager = TensorPagedKVCacheManager(pool)
filler = tensor_manager.prefill("filler", torch.randn(300, 8, 64, device=DEVICE), torch.randn(300, 8, 64, device=DEVICE))
prompt = tensor_manager.prefill("prompt", torch.randn(100, 8, 64, device=DEVICE), torch.randn(100, 8, 64, device=DEVICE))
tensor_manager.release(filler)  # Leaves holes, so that the next blocks are scattered.
sample = tensor_manager.fork(prompt, "sample")
for _ in range(40):
    tensor_manager.append_kv(sample, torch.randn(1, 8, 64, device=DEVICE), torch.randn(1, 8, 64, device=DEVICE))
q = torch.randn(8, 64, device=DEVICE)
paged = paged_attention(q, pool, tensor_manager.block_ids(sample), sample.num_tokens)
keys, values = tensor_manager.gather(sample)
dense = F.scaled_dot_product_attention(q[:, None], keys.transpose(0, 1), values.transpose(0, 1))[:, 0]
print("sample's block table:", tensor_manager.block_ids(sample).tolist())
print(f"max |paged - dense| = {float((paged - dense).abs().max()):.2e} on {DEVICE}")

# %% [markdown]
# ## Summary | 小结
#
# **Remember:** a paged KV cache is memory paging for attention: fixed-size blocks, a block table per sequence, reference
# counts for sharing and copy-on-write before any write into a shared block; the logical clock and use counts it keeps are
# exactly what LRU and LFU rank.
#
# **记住：** 分页 KV 缓存就是为注意力做的内存分页：固定大小的块、每个序列一张块表、用引用计数实现共享，并在写入共享块之前先复制；
# 它维护的逻辑时钟和使用计数，正是 LRU 与 LFU 排序所依据的量。
#
# Next: [03. LRU and LFU](../03_lru_lfu/03_lru_lfu.ipynb), the policies that decide which of these sequences to release when
# blocks run out. | 下一节：[03. LRU 与 LFU](../03_lru_lfu/03_lru_lfu.ipynb)，在块用完时决定释放哪些序列的策略。
#
# ## References | 参考文献
#
# - W. Kwon, Z. Li, S. Zhuang, Y. Sheng, L. Zheng, C. H. Yu, J. E. Gonzalez, H. Zhang, I. Stoica, "Efficient Memory Management for Large Language Model Serving with PagedAttention" (vLLM), SOSP 2023.
# - P. J. Denning, "Virtual Memory", *ACM Computing Surveys* 2(3), 1970 (paging, page tables).
# - J. Ainslie et al., "GQA: Training Generalized Multi-Query Transformer Models from Multi-Head Checkpoints", EMNLP 2023.
# - Model shapes: S. Zhang et al., "OPT: Open Pre-trained Transformer Language Models", 2022; H. Touvron et al., "Llama 2", 2023; A. Grattafiori et al., "The Llama 3 Herd of Models", 2024, and the Meta-Llama-3-8B / 70B model cards; A. Q. Jiang et al., "Mistral 7B", 2023; A. Yang et al., "Qwen2 Technical Report", 2024, and the Qwen2-7B model card.
# - PyTorch, `torch.nn.functional.scaled_dot_product_attention` (the dense reference of Task 2.10).
# - Seed designs of this course: the "KV Eviction formula-to-code" walkthrough (LLM-REVIEW) and the "KV Cache Scheduling" chapter of Datawhale's llm-algo-leetcode (text CC BY 4.0, code Apache-2.0).
