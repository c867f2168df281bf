# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: nbgrader,given,tags,-all
#     formats: source/03_lru_lfu//ipynb,authoring//py:percent
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
# # 03. LRU and LFU | LRU 与 LFU
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/kvcache-course/kv-cache-eviction/blob/main/release/03_lru_lfu/03_lru_lfu.ipynb)
# [![ModelScope](https://img.shields.io/badge/ModelScope-Open%20from%20URL-624aff)](https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/03_lru_lfu/03_lru_lfu.ipynb)
# [![GitHub](https://img.shields.io/badge/GitHub-release%2F03_lru_lfu-black)](https://github.com/kvcache-course/kv-cache-eviction/blob/main/release/03_lru_lfu/03_lru_lfu.ipynb)
#
# **Difficulty:** ★★☆ intermediate · **Time:** about 90 minutes · **Points:** 26 · **GPU:** tasks 3.5–3.7 run on CUDA when a GPU is present; everything also runs on the CPU.
#
# **难度：** ★★☆ 中级 · **用时：** 约 90 分钟 · **总分：** 26 · **GPU：** 任务 3.5–3.7 在有 GPU 时于 CUDA 上运行；所有内容也都能在 CPU 上运行。
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
# 1. write LRU and LFU exactly as the formulas rank victims, with a complete tie-break, as policy objects that
#    only choose and never change the cache;
# 2. free blocks for a new request by evicting one victim at a time, and refuse (changing nothing) when even
#    evicting everything allowed would not be enough;
# 3. compute the same victims and the same eviction order on tensors of metadata, without a Python loop, on any
#    device;
# 4. measure policies by replaying workloads, and say how much of the gap between LRU and the offline optimum
#    (Belady's MIN) each one closes.
#
# 完成本 notebook 后，你能够：
# 1. 严格按照公式对受害者的排序实现 LRU 与 LFU（含完整的平局规则），把它们写成只做选择、从不修改缓存的策略对象；
# 2. 为新请求逐个驱逐受害者以腾出块；当驱逐所有允许驱逐的序列仍然不够时拒绝执行，且不做任何修改；
# 3. 在元数据张量上算出同样的受害者与同样的驱逐顺序，不写 Python 循环，可在任意设备上运行；
# 4. 通过回放工作负载来度量策略，并说出每个策略弥补了 LRU 与离线最优（Belady 的 MIN）之间差距的多少。
#
# ## The formulas | 公式
#
# A cache holds sequences $s$ with metadata from notebook 02: $t_\text{last}(s)$ (`last_access_step`, the logical
# clock at the last access) and $\text{use\_count}(s)$ (how many times it was used). Running requests are
# **protected**: their blocks are pinned and never evicted. Over the unprotected sequences $S$:
#
# $$\text{victim}_\text{LRU} = \arg\min_{s \in S}\; \big(t_\text{last}(s),\ \text{seq\_id}(s)\big)$$
#
# $$\text{victim}_\text{LFU} = \arg\min_{s \in S}\; \big(\text{use\_count}(s),\ t_\text{last}(s),\ \text{seq\_id}(s)\big)\quad\text{(lexicographic)}$$
#
# LRU bets that what was used long ago will not be used soon (recency); LFU bets that what was used rarely will
# stay rare (frequency). The last entry, the sequence id, only makes the answer unique.
#
# **Why LFU needs the recency tie-break.** Many sequences share the same small count: every newly admitted
# sequence has `use_count` 1. Without a second key, LFU picks among them by id, that is, arbitrarily: it may
# evict the sequence admitted one step ago while keeping one that was used once, long ago, and never again.
# With $t_\text{last}$ as the second key, LFU behaves like LRU among equals, and stale entries leave first.
#
# **为什么 LFU 需要用最近访问时间打破平局。** 许多序列的计数相同且很小：每个新进入的序列 `use_count` 都是 1。
# 如果没有第二个键，LFU 只能按 id（也就是任意地）在它们之中挑选：它可能驱逐上一步刚进入的序列，却留下很久以前只用过一次、
# 之后再也没用过的序列。以 $t_\text{last}$ 为第二个键后，LFU 在计数相同的序列之间退化为 LRU，陈旧的条目先离开。
#
# 缓存中的序列 $s$ 带有 notebook 02 的元数据：$t_\text{last}(s)$（`last_access_step`，最近一次访问时的逻辑时钟）
# 和 $\text{use\_count}(s)$（被使用的次数）。正在运行的请求是**受保护的**：它们的块被钉住，永远不会被驱逐。
# 上面两个公式在未受保护的序列集合 $S$ 上取最小值（按字典序比较）。LRU 押注"很久以前用过的，近期也不会再用"（近因）；
# LFU 押注"很少用的，以后也很少用"（频率）。最后一项序列 id 只用来让答案唯一。
#
# **The optimum.** For blocks of one size and a known future, Belady's MIN evicts the block whose next use lies
# farthest in the future; no policy has more hits on the same trace. It needs the future, so no engine can run
# it, but it is the ceiling every curve in the experiments is measured against.
#
# **最优策略。** 当所有块大小相同、且未来已知时，Belady 的 MIN 驱逐"下一次被使用离现在最远"的块；在同一条访问序列上，
# 没有任何策略的命中数能超过它。它需要知道未来，因此没有推理引擎能运行它，但它是实验中每条曲线的上限。
#
# **How real engines do it.** vLLM (PagedAttention) keeps blocks whose requests have finished, with their
# prefix hash, in a queue of free blocks ordered so that the least recently used one is handed out, that is
# evicted, first; blocks of running requests have a positive reference count, are not in that queue and so
# are pinned. SGLang (RadixAttention) keeps cached prefixes in a radix tree and, when it needs room, puts the
# leaves in a heap keyed by last access time and evicts leaves that no running request locks, moving up the
# tree as parents become leaves. Both are the LRU of this notebook, applied to blocks or tree nodes instead of
# whole sequences.
#
# **真实引擎的做法。** vLLM（PagedAttention）把请求已结束、仍带有前缀哈希的块放在一个空闲块队列中，队列的顺序使最久未使用的块
# 最先被分配出去，也就是最先被驱逐；运行中请求的块引用计数为正，不在该队列中，因此被钉住。SGLang（RadixAttention）把缓存的前缀
# 放在一棵基数树中；需要空间时，它把叶子节点放进按最近访问时间排序的堆，驱逐没有被运行中请求锁住的叶子，父节点变成叶子后再继续向上。
# 两者都是本 notebook 中的 LRU，只是作用在块或树节点上，而不是整个序列上。

# %% [markdown]
# ## Given: the paged KV cache of notebook 02 | 已给出：notebook 02 的分页 KV 缓存
#
# The next cell holds the reference solutions of notebook 02's tasks 2.1–2.4, whose API this notebook uses: `BlockAllocator`
# (`num_free`, `allocate_n`, `free`), `SequenceKVCache` (`seq_id`, `block_table`, `num_tokens`,
# `last_access_step`, `use_count`, `num_blocks()`), and `PagedKVCacheManager` (`allocator`, `sequences`,
# `allocate_for_sequence`, `fork`, `touch`, `release(seq) -> int`). It is read-only: run it, do not change it.
# Note that `release` returns the number of blocks that actually went back to the pool: a block shared with
# another sequence (after `fork`) stays until its last owner is released.
#
# 下一个单元是 notebook 02 任务 2.1–2.4 的参考解答，本 notebook 用到其中的 API：`BlockAllocator`（`num_free`、`allocate_n`、`free`）、
# `SequenceKVCache`（`seq_id`、`block_table`、`num_tokens`、`last_access_step`、`use_count`、`num_blocks()`）以及
# `PagedKVCacheManager`（`allocator`、`sequences`、`allocate_for_sequence`、`fork`、`touch`、`release(seq) -> int`）。
# 它是只读的：运行它，不要修改。注意 `release` 返回真正回到空闲池的块数：与另一个序列共享的块（`fork` 之后）要等到它的最后一个
# 所有者被释放时才会回到池中。

# %% nbgrader={"grade": false, "grade_id": "given_paged_kv_cache", "locked": true, "schema_version": 3, "solution": false, "task": false} given=["02_paged_kv_cache/task2_1_KVBlock", "02_paged_kv_cache/task2_2_BlockAllocator", "02_paged_kv_cache/task2_3_SequenceKVCache", "02_paged_kv_cache/task2_4_PagedKVCacheManager"]
# Given (read-only): the reference solutions of tasks 2.1 KVBlock, 2.2 BlockAllocator, 2.3 SequenceKVCache, 2.4 PagedKVCacheManager (notebook 02).
# Run this cell; do not change it (grading puts it back as it is here).
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

    block_id: int
    capacity: int
    filled: int = 0
    ref_count: int = 0

    @property
    def is_full(self) -> bool:
        """bool: True when every slot holds a token (filled == capacity)."""
        return self.filled >= self.capacity

    @property
    def free_slots(self) -> int:
        """int: how many slots are still empty (capacity - filled)."""
        return self.capacity - self.filled


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
        if num_blocks < 1 or block_size < 1:
            raise ValueError(f"num_blocks and block_size must be >= 1, got {num_blocks} and {block_size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self._blocks = [KVBlock(block_id, block_size) for block_id in range(num_blocks)]
        self._free_ids = list(range(num_blocks))  # A sorted list is already a valid heap.

    @property
    def num_free(self):
        """int: how many blocks are free."""
        return len(self._free_ids)

    @property
    def num_used(self):
        """int: how many blocks are in use (ref_count >= 1)."""
        return self.num_blocks - len(self._free_ids)

    def get_block(self, block_id):
        """Return the KVBlock with this id; ValueError for an id outside [0, num_blocks)."""
        if not 0 <= block_id < self.num_blocks:
            raise ValueError(f"block_id {block_id} is outside [0, {self.num_blocks})")
        return self._blocks[block_id]

    def allocate(self):
        """Return the free block with the lowest id, now with ref_count 1 and filled 0; None if none is free."""
        if not self._free_ids:
            return None
        block = self._blocks[heapq.heappop(self._free_ids)]
        block.ref_count = 1
        block.filled = 0
        return block

    def allocate_n(self, n):
        """Return a list of n blocks, as n calls of allocate() would (ascending ids).

        All or nothing: when fewer than n blocks are free, raise RuntimeError with a message that
        states n and the number of free blocks, and allocate nothing. ValueError when n < 0.
        """
        if n < 0:
            raise ValueError(f"cannot allocate a negative number of blocks ({n})")
        if n > len(self._free_ids):
            raise RuntimeError(f"out of blocks: asked for {n}, only {len(self._free_ids)} free")
        return [self.allocate() for _ in range(n)]

    def free(self, block):
        """Drop one reference to ``block``; at ref_count 0 it goes back to the pool with filled 0.

        Raises:
            ValueError: when the block is already free (ref_count 0); nothing changes.
        """
        if block.ref_count < 1:
            raise ValueError(f"block {block.block_id} is already free")
        block.ref_count -= 1
        if block.ref_count == 0:
            block.filled = 0
            heapq.heappush(self._free_ids, block.block_id)

    def utilization(self):
        """float: num_used / num_blocks."""
        return self.num_used / self.num_blocks

    def fragmentation(self):
        """float: 1 - (tokens in used blocks) / (num_used * block_size); 0.0 when no block is used."""
        used = [block for block in self._blocks if block.ref_count > 0]
        if not used:
            return 0.0
        return 1.0 - sum(block.filled for block in used) / (len(used) * self.block_size)


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

    seq_id: str
    block_table: list = field(default_factory=list)
    num_tokens: int = 0
    last_access_step: int = 0
    use_count: int = 0

    def num_blocks(self) -> int:
        """int: how many blocks the sequence holds, len(block_table)."""
        return len(self.block_table)


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
        self.allocator = BlockAllocator(num_blocks, block_size)
        self.block_size = block_size
        self.sequences = {}
        self._step = 0

    @property
    def step(self):
        """int: the logical clock, read-only."""
        return self._step

    def _check_active(self, seq):
        """Raise ValueError unless ``seq`` is one of this manager's active sequences (the object itself)."""
        if self.sequences.get(seq.seq_id) is not seq:
            raise ValueError(f"sequence {seq.seq_id!r} is not active in this manager")

    def _access(self, seq):
        """Count one access of ``seq``: step += 1, seq.last_access_step = step, seq.use_count += 1."""
        self._step += 1
        seq.last_access_step = self._step
        seq.use_count += 1

    def allocate_for_sequence(self, seq_id, num_tokens):
        """Register a new sequence of ``num_tokens`` tokens with ceil(num_tokens / block_size) blocks.

        The blocks are filled in order (every one full except perhaps the last). Then step += 1,
        last_access_step = step, use_count = 1.

        Returns:
            The new SequenceKVCache, also stored in ``self.sequences[seq_id]`` (the same object).

        Raises:
            ValueError: seq_id is already active, or num_tokens < 0.
            RuntimeError: not enough free blocks; nothing changes (not even step).
        """
        if seq_id in self.sequences:
            raise ValueError(f"sequence {seq_id!r} already exists")
        if num_tokens < 0:
            raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
        blocks = self.allocator.allocate_n(-(-num_tokens // self.block_size))
        remaining = num_tokens
        for block in blocks:
            block.filled = min(self.block_size, remaining)
            remaining -= block.filled
        seq = SequenceKVCache(seq_id, blocks, num_tokens)
        self.sequences[seq_id] = seq
        self._access(seq)
        return seq

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
        self._check_active(seq)
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
        self._access(seq)

    def fork(self, src, new_seq_id):
        """Return a new sequence that shares every block of ``src`` (each block's ref_count + 1).

        The child has src's num_tokens and a new list with the same KVBlock objects; step += 1,
        child.last_access_step = step, child.use_count = 1. src's metadata does not change.

        Raises:
            ValueError: src is not active here, or new_seq_id is already active; nothing changes.
        """
        self._check_active(src)
        if new_seq_id in self.sequences:
            raise ValueError(f"sequence {new_seq_id!r} already exists")
        for block in src.block_table:
            block.ref_count += 1
        child = SequenceKVCache(new_seq_id, list(src.block_table), src.num_tokens)
        self.sequences[new_seq_id] = child
        self._access(child)
        return child

    def touch(self, seq):
        """Record a read of ``seq`` (e.g. a prefix hit): step += 1, last_access_step = step, use_count += 1.

        Raises:
            ValueError: seq is not active here.
        """
        self._check_active(seq)
        self._access(seq)

    def release(self, seq):
        """Drop seq's reference to each of its blocks and remove it from ``sequences``.

        Returns:
            int: how many blocks went back to the pool (blocks still shared stay allocated).
            The clock does not move.

        Raises:
            ValueError: seq is not active here (for example, released already); nothing changes.
        """
        self._check_active(seq)
        freed = 0
        for block in seq.block_table:
            self.allocator.free(block)
            freed += block.ref_count == 0
        del self.sequences[seq.seq_id]
        return freed

    def summary(self):
        """Return a dict: total_blocks, used_blocks, free_blocks, active_sequences (ints) and
        utilization, fragmentation (floats, as the allocator computes them)."""
        return {
            "total_blocks": self.allocator.num_blocks,
            "used_blocks": self.allocator.num_used,
            "free_blocks": self.allocator.num_free,
            "utilization": self.allocator.utilization(),
            "fragmentation": self.allocator.fragmentation(),
            "active_sequences": len(self.sequences),
        }


# %% [markdown] nbgrader={"grade": false, "grade_id": "task3_1_EvictionPolicy_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 3.1: EvictionPolicy (2 points)
#
# Every policy of this course has the same interface:
# `select_victim(sequences, protected=frozenset()) -> str | None`, where `sequences` maps each `seq_id` to its
# `SequenceKVCache` and `protected` holds the ids of running requests. A policy **only chooses**: it never
# changes `sequences` or the metadata in it, and never returns a protected id.
#
# Write the base class `EvictionPolicy`. Its `select_victim` is abstract (it raises `NotImplementedError`; that
# line is given). Implement the helper every subclass uses, `candidates(sequences, protected)`: the ids that may
# be evicted, that is, the keys of `sequences` that are not in `protected`, as a new **sorted** list (so that
# subclasses see ids in a fixed order). Ids in `protected` that are not cached are simply ignored.
#
# ## 任务 3.1：EvictionPolicy（2 分）
#
# 本课程的每个策略都有相同的接口：`select_victim(sequences, protected=frozenset()) -> str | None`，其中 `sequences`
# 把每个 `seq_id` 映射到它的 `SequenceKVCache`，`protected` 是运行中请求的 id 集合。策略**只做选择**：它从不修改
# `sequences` 或其中的元数据，也从不返回受保护的 id。
#
# 编写基类 `EvictionPolicy`。它的 `select_victim` 是抽象方法（抛出 `NotImplementedError`，这一行已给出）。请实现每个子类都会用到的辅助方法
# `candidates(sequences, protected)`：可以被驱逐的 id，即 `sequences` 中不在 `protected` 里的键，以新的**有序**列表返回
# （这样子类看到的 id 顺序是固定的）。`protected` 中不在缓存里的 id 直接忽略。

# %% nbgrader={"grade": false, "grade_id": "task3_1_EvictionPolicy", "locked": false, "schema_version": 3, "solution": true, "task": false}
class EvictionPolicy:
    """Base class of eviction policies: choose a victim among the unprotected sequences.

    Subclasses override ``select_victim``. A policy never changes ``sequences``, the
    SequenceKVCache objects in it, or ``protected``.
    """

    def candidates(self, sequences, protected=frozenset()):
        """Return the ids that may be evicted.

        Args:
            sequences: dict from seq_id (str) to SequenceKVCache.
            protected: a set or frozenset of seq_ids that must not be evicted (running requests);
                ids that are not in ``sequences`` are ignored.

        Returns:
            A new list of the keys of ``sequences`` that are not in ``protected``, sorted
            ascending; [] when there are none.
        """
        ### BEGIN SOLUTION
        return sorted(seq_id for seq_id in sequences if seq_id not in protected)
        ### END SOLUTION

    def select_victim(self, sequences, protected=frozenset()):
        """Return the seq_id to evict, or None when every sequence is protected (abstract)."""
        raise NotImplementedError(f"{type(self).__name__} must implement select_victim")


# %% nbgrader={"grade": true, "grade_id": "test_task3_1_EvictionPolicy", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that EvictionPolicy.candidates lists the unprotected ids in sorted order and select_victim is abstract."""


def _check_task3_1_EvictionPolicy():
    from course.checks import assert_plain_equal, assert_raises

    cache = {seq_id: SequenceKVCache(seq_id) for seq_id in ["c", "a", "d", "b"]}
    policy = EvictionPolicy()
    assert_plain_equal(policy.candidates(cache), ["a", "b", "c", "d"], "EvictionPolicy().candidates(cache of c, a, d, b)")
    assert_plain_equal(policy.candidates(cache, frozenset({"b", "zz"})), ["a", "c", "d"],
                       "EvictionPolicy().candidates(cache, frozenset({'b', 'zz'}))")
    assert_plain_equal(policy.candidates(cache, {"a", "b", "c", "d"}), [], "candidates(cache, every id protected)")
    assert_plain_equal(policy.candidates({}), [], "EvictionPolicy().candidates({})")
    assert_raises(NotImplementedError, "EvictionPolicy().select_victim(cache)", policy.select_victim, cache)

    ### BEGIN HIDDEN TESTS
    import random as _random


    class _FirstCandidate(EvictionPolicy):
        def select_victim(self, sequences, protected=frozenset()):
            ids = self.candidates(sequences, protected)
            return ids[0] if ids else None


    _rng = _random.Random(3101)
    for _case in range(300):
        _ids = _rng.sample([f"req-{i:03d}" for i in range(200)], _rng.randint(0, 25))
        _cache = {i: SequenceKVCache(i, last_access_step=_rng.randint(0, 9)) for i in _ids}
        _protected = set(_rng.sample(_ids, _rng.randint(0, len(_ids)))) | {"ghost"}
        _frozen = frozenset(_protected) if _case % 2 else set(_protected)
        _before = list(_cache.items())
        _expected = [i for i in sorted(_cache) if i not in _protected]
        _result = EvictionPolicy().candidates(_cache, _frozen)
        assert_plain_equal(_result, _expected, f"EvictionPolicy().candidates on random case {_case}", reveal=False)
        assert list(_cache.items()) == _before and set(_frozen) == _protected, \
            f"EvictionPolicy().candidates changed its arguments on random case {_case}"
        assert_plain_equal(_FirstCandidate().select_victim(_cache, _frozen), _expected[0] if _expected else None,
                           f"a subclass that returns candidates(...)[0], random case {_case}", reveal=False)
        assert_plain_equal(EvictionPolicy().candidates(_cache), sorted(_cache),
                           f"EvictionPolicy().candidates without protected ids, random case {_case}", reveal=False)
    _first = EvictionPolicy().candidates(cache)
    _first.append("mutated")
    assert_plain_equal(EvictionPolicy().candidates(cache), ["a", "b", "c", "d"], "candidates called twice (must return a new list)")
    assert_raises(NotImplementedError, "EvictionPolicy().select_victim({}, frozenset())", EvictionPolicy().select_victim, {}, frozenset())
    ### END HIDDEN TESTS


_check_task3_1_EvictionPolicy()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task3_2_LRUPolicy_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 3.2: LRUPolicy (3 points)
#
# $$\text{victim}_\text{LRU} = \arg\min_{s \in S}\; \big(t_\text{last}(s),\ \text{seq\_id}(s)\big)$$
#
# Write `LRUPolicy`, a subclass of `EvictionPolicy`, whose `select_victim(sequences, protected=frozenset())`
# returns the unprotected `seq_id` with the smallest `last_access_step`; on a tie, the smaller id; `None` when
# no sequence can be chosen. `use_count` plays no part in LRU.
#
# Hint: `min` over `self.candidates(...)` with a tuple key.
#
# ## 任务 3.2：LRUPolicy（3 分）
#
# 编写 `EvictionPolicy` 的子类 `LRUPolicy`，其 `select_victim(sequences, protected=frozenset())` 返回未受保护的序列中
# `last_access_step` 最小的 `seq_id`；平局时返回较小的 id；没有可选序列时返回 `None`。LRU 不看 `use_count`。
#
# 提示：对 `self.candidates(...)` 使用带元组 key 的 `min`。

# %% nbgrader={"grade": false, "grade_id": "task3_2_LRUPolicy", "locked": false, "schema_version": 3, "solution": true, "task": false}
class LRUPolicy(EvictionPolicy):
    """Least recently used: evict the smallest (last_access_step, seq_id) among unprotected sequences."""

    def select_victim(self, sequences, protected=frozenset()):
        """Return the LRU victim's seq_id (str), or None when every sequence is protected or none is cached.

        Args:
            sequences: dict from seq_id to SequenceKVCache; not changed.
            protected: set or frozenset of seq_ids that must not be chosen.
        """
        ### BEGIN SOLUTION
        ids = self.candidates(sequences, protected)
        if not ids:
            return None
        return min(ids, key=lambda seq_id: (sequences[seq_id].last_access_step, seq_id))
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task3_2_LRUPolicy", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that LRUPolicy evicts the smallest (last_access_step, seq_id) among the unprotected sequences."""


def _check_task3_2_LRUPolicy():
    from course.checks import assert_plain_equal, check_type


    def cache_of(rows):
        """A dict of SequenceKVCache from (seq_id, last_access_step, use_count) rows."""
        return {seq_id: SequenceKVCache(seq_id, last_access_step=step, use_count=count) for seq_id, step, count in rows}


    cache = cache_of([("a", 5, 1), ("c", 2, 4), ("b", 2, 3), ("d", 9, 0)])
    assert issubclass(LRUPolicy, EvictionPolicy), "LRUPolicy must be a subclass of EvictionPolicy"
    assert_plain_equal(LRUPolicy().select_victim(cache), "b",
                       "LRUPolicy().select_victim(a: step 5, c: step 2, b: step 2, d: step 9) (a tie goes to the smaller id)")
    assert_plain_equal(LRUPolicy().select_victim(cache, frozenset({"b"})), "c", "LRUPolicy().select_victim(same, protected={'b'})")
    check_type(LRUPolicy().select_victim(cache, frozenset(cache)), type(None), "LRUPolicy().select_victim(every id protected)")
    check_type(LRUPolicy().select_victim({}), type(None), "LRUPolicy().select_victim({})")

    ### BEGIN HIDDEN TESTS
    import random as _random


    def _oracle_lru(cache, protected):
        best = None
        for seq_id in sorted(cache, reverse=True):
            if seq_id in protected:
                continue
            if best is None or cache[seq_id].last_access_step <= cache[best].last_access_step:
                best = seq_id
        return best


    def _snapshot(cache):
        return [(k, s.seq_id, s.last_access_step, s.use_count, s.num_tokens, len(s.block_table)) for k, s in cache.items()]


    _rng = _random.Random(3202)
    for _case in range(400):
        _ids = _rng.sample([f"s{i}" for i in range(40)], _rng.randint(1, 14))
        _top = [3, 8, 2**40][_case % 3]
        _cache = {i: SequenceKVCache(i, num_tokens=_rng.randint(0, 50), last_access_step=_rng.randint(0, _top),
                                     use_count=_rng.randint(0, 6)) for i in _ids}
        _protected = frozenset(_rng.sample(_ids, _rng.randint(0, len(_ids) - 1 if _case % 5 else len(_ids))))
        _before = _snapshot(_cache)
        _result = LRUPolicy().select_victim(_cache, set(_protected) if _case % 2 else _protected)
        _expected = _oracle_lru(_cache, _protected)
        check_type(_result, type(_expected), f"LRUPolicy().select_victim on random case {_case}")
        assert_plain_equal(_result, _expected, f"LRUPolicy().select_victim on random case {_case}", reveal=False)
        assert _snapshot(_cache) == _before, f"LRUPolicy().select_victim changed the cache on random case {_case}"
        assert_plain_equal(LRUPolicy().select_victim(_cache), _oracle_lru(_cache, frozenset()),
                           f"LRUPolicy().select_victim without protected ids, random case {_case}", reveal=False)
    _policy = LRUPolicy()
    _cache = cache_of([("x", 7, 1), ("y", 3, 50), ("z", 4, 0)])
    assert_plain_equal([_policy.select_victim(_cache), _policy.select_victim(_cache)], ["y", "y"],
                       "the same LRUPolicy object called twice on the same cache (a policy keeps no state)")
    ### END HIDDEN TESTS


_check_task3_2_LRUPolicy()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task3_3_LFUPolicy_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 3.3: LFUPolicy (4 points)
#
# $$\text{victim}_\text{LFU} = \arg\min_{s \in S}\; \big(\text{use\_count}(s),\ t_\text{last}(s),\ \text{seq\_id}(s)\big)$$
#
# Write `LFUPolicy`, a subclass of `EvictionPolicy`: the unprotected sequence with the smallest `use_count`;
# among equal counts, the least recently used one (smallest `last_access_step`); then the smaller id; `None`
# when no sequence can be chosen. Read "Why LFU needs the recency tie-break" above before you start.
#
# ## 任务 3.3：LFUPolicy（4 分）
#
# 编写 `EvictionPolicy` 的子类 `LFUPolicy`：返回未受保护的序列中 `use_count` 最小者；计数相同时取最久未使用者
# （`last_access_step` 最小）；再相同时取较小的 id；没有可选序列时返回 `None`。开始之前，请先阅读上文"为什么 LFU 需要用最近访问时间打破平局"。

# %% nbgrader={"grade": false, "grade_id": "task3_3_LFUPolicy", "locked": false, "schema_version": 3, "solution": true, "task": false}
class LFUPolicy(EvictionPolicy):
    """Least frequently used: evict the smallest (use_count, last_access_step, seq_id) among unprotected sequences."""

    def select_victim(self, sequences, protected=frozenset()):
        """Return the LFU victim's seq_id (str), or None when every sequence is protected or none is cached.

        Args:
            sequences: dict from seq_id to SequenceKVCache; not changed.
            protected: set or frozenset of seq_ids that must not be chosen.
        """
        ### BEGIN SOLUTION
        ids = self.candidates(sequences, protected)
        if not ids:
            return None
        return min(ids, key=lambda seq_id: (sequences[seq_id].use_count, sequences[seq_id].last_access_step, seq_id))
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task3_3_LFUPolicy", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
"""Check that LFUPolicy evicts the smallest (use_count, last_access_step, seq_id) among the unprotected sequences."""


def _check_task3_3_LFUPolicy():
    from course.checks import assert_plain_equal, check_type


    def cache_of(rows):
        """A dict of SequenceKVCache from (seq_id, last_access_step, use_count) rows."""
        return {seq_id: SequenceKVCache(seq_id, last_access_step=step, use_count=count) for seq_id, step, count in rows}


    cache = cache_of([("a", 9, 1), ("b", 4, 1), ("c", 1, 5), ("d", 4, 1)])
    assert issubclass(LFUPolicy, EvictionPolicy), "LFUPolicy must be a subclass of EvictionPolicy"
    assert_plain_equal(LFUPolicy().select_victim(cache), "b",
                       "LFUPolicy().select_victim(a: count 1 step 9, b: count 1 step 4, c: count 5 step 1, d: count 1 step 4)")
    assert_plain_equal(LFUPolicy().select_victim(cache, frozenset({"b", "d"})), "a",
                       "LFUPolicy().select_victim(same, protected={'b', 'd'})")
    assert_plain_equal(LFUPolicy().select_victim(cache_of([("old", 1, 2), ("new", 8, 2)])), "old",
                       "LFUPolicy().select_victim(old: count 2 step 1, new: count 2 step 8) (equal counts: least recent first)")
    check_type(LFUPolicy().select_victim(cache, {"a", "b", "c", "d"}), type(None), "LFUPolicy().select_victim(every id protected)")

    ### BEGIN HIDDEN TESTS
    import random as _random


    def _oracle_lfu(cache, protected):
        rows = sorted((s.use_count, s.last_access_step, k) for k, s in cache.items() if k not in protected)
        return rows[0][2] if rows else None


    def _snapshot(cache):
        return [(k, s.seq_id, s.last_access_step, s.use_count, s.num_tokens, len(s.block_table)) for k, s in cache.items()]


    _rng = _random.Random(3303)
    for _case in range(400):
        _ids = _rng.sample([f"s{i}" for i in range(40)], _rng.randint(1, 14))
        _top = [3, 10, 2**40][_case % 3]
        _cache = {i: SequenceKVCache(i, last_access_step=_rng.randint(0, _top), use_count=_rng.randint(0, 3)) for i in _ids}
        _protected = frozenset(_rng.sample(_ids, _rng.randint(0, len(_ids) - 1 if _case % 5 else len(_ids))))
        _before = _snapshot(_cache)
        _result = LFUPolicy().select_victim(_cache, set(_protected) if _case % 2 else _protected)
        _expected = _oracle_lfu(_cache, _protected)
        check_type(_result, type(_expected), f"LFUPolicy().select_victim on random case {_case}")
        assert_plain_equal(_result, _expected, f"LFUPolicy().select_victim on random case {_case}", reveal=False)
        assert _snapshot(_cache) == _before, f"LFUPolicy().select_victim changed the cache on random case {_case}"
    # Equal counts, the smaller id used more recently: only the recency tie-break gets this right.
    _cache = cache_of([("a", 30, 1), ("b", 10, 1), ("c", 20, 1), ("d", 5, 2)])
    assert_plain_equal(LFUPolicy().select_victim(_cache), "b", "LFUPolicy().select_victim(a: 1@30, b: 1@10, c: 1@20, d: 2@5)")
    ### END HIDDEN TESTS


_check_task3_3_LFUPolicy()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task3_4_evict_until_fit_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 3.4: evict_until_fit (5 points)
#
# A new request needs `blocks_needed` free blocks. Write `evict_until_fit(manager, policy, blocks_needed,
# protected=frozenset())`:
#
# 1. if `manager.allocator.num_free >= blocks_needed` already, evict nothing and return `[]`;
# 2. otherwise, if even releasing **every** unprotected sequence would not bring `num_free` up to
#    `blocks_needed`, raise `RuntimeError` **and change nothing** (no sequence evicted);
# 3. otherwise ask `policy.select_victim(manager.sequences, protected)` for one victim at a time, release it with
#    `manager.release(...)`, and stop as soon as `num_free >= blocks_needed`; return the victims' ids in the
#    order they were evicted.
#
# `blocks_needed < 0` raises `ValueError`. Use any object with a `select_victim` method as the policy; do not
# rank sequences yourself.
#
# Careful with step 2: a block shared by several sequences (after `fork`) goes back to the pool only when
# **all** of them are released. A block counts as freeable exactly when every reference to it (its
# `ref_count`) comes from an unprotected sequence.
#
# ## 任务 3.4：evict_until_fit（5 分）
#
# 新请求需要 `blocks_needed` 个空闲块。编写 `evict_until_fit(manager, policy, blocks_needed, protected=frozenset())`：
#
# 1. 若 `manager.allocator.num_free >= blocks_needed` 已经成立，不驱逐任何序列，返回 `[]`；
# 2. 否则，若即使释放**所有**未受保护的序列也无法使 `num_free` 达到 `blocks_needed`，抛出 `RuntimeError`，**且不做任何修改**（不驱逐任何序列）；
# 3. 否则每次向 `policy.select_victim(manager.sequences, protected)` 要一个受害者，用 `manager.release(...)` 释放它，
#    一旦 `num_free >= blocks_needed` 就停止；按驱逐顺序返回受害者的 id 列表。
#
# `blocks_needed < 0` 时抛出 `ValueError`。策略可以是任何带 `select_victim` 方法的对象；不要自己给序列排序。
#
# 注意第 2 步：被多个序列共享的块（`fork` 之后）只有在它们**全部**被释放后才回到池中。一个块可以被释放，当且仅当它的每一个引用
# （即 `ref_count`）都来自未受保护的序列。

# %% nbgrader={"grade": false, "grade_id": "task3_4_evict_until_fit", "locked": false, "schema_version": 3, "solution": true, "task": false}
def evict_until_fit(manager, policy, blocks_needed, protected=frozenset()):
    """Evict victims chosen by ``policy``, one at a time, until ``blocks_needed`` blocks are free.

    Args:
        manager: a PagedKVCacheManager (``allocator.num_free``, ``sequences``, ``release(seq)``).
        policy: any object with ``select_victim(sequences, protected) -> str | None``.
        blocks_needed: the number of free blocks wanted, an int >= 0.
        protected: set or frozenset of seq_ids that must not be evicted.

    Returns:
        The list of evicted seq_ids, in eviction order ([] when enough blocks are already free).

    Raises:
        ValueError: when blocks_needed < 0.
        RuntimeError: when even releasing every unprotected sequence would not free enough blocks;
            nothing is evicted then.
    """
    ### BEGIN SOLUTION
    if blocks_needed < 0:
        raise ValueError(f"blocks_needed must be >= 0, got {blocks_needed}")
    allocator = manager.allocator
    if allocator.num_free >= blocks_needed:
        return []
    # A block is freeable when every one of its references belongs to an unprotected sequence.
    references, blocks = {}, {}
    for seq_id, seq in manager.sequences.items():
        if seq_id not in protected:
            for block in seq.block_table:
                references[block.block_id] = references.get(block.block_id, 0) + 1
                blocks[block.block_id] = block
    freeable = sum(1 for block_id, count in references.items() if count == blocks[block_id].ref_count)
    if allocator.num_free + freeable < blocks_needed:
        raise RuntimeError(f"need {blocks_needed} free blocks, but only {allocator.num_free} are free and "
                           f"evicting every unprotected sequence frees {freeable} more")
    evicted = []
    while allocator.num_free < blocks_needed:
        victim = policy.select_victim(manager.sequences, protected)
        if victim is None:
            raise RuntimeError("the policy chose no victim although enough blocks are freeable")
        manager.release(manager.sequences[victim])
        evicted.append(victim)
    return evicted
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task3_4_evict_until_fit", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
"""Check that evict_until_fit follows the policy until enough blocks are free, and changes nothing when it cannot."""


def _check_task3_4_evict_until_fit():
    from course.checks import assert_plain_equal, assert_raises


    class ListedOrder:
        """A policy for this test: evicts the first unprotected id of a fixed list."""

        def __init__(self, order):
            self.order = order

        def select_victim(self, sequences, protected=frozenset()):
            return next((seq_id for seq_id in self.order if seq_id in sequences and seq_id not in protected), None)


    def small_cache():
        """10 blocks of 4 tokens: a has 2 blocks, b 3, c 1, d 2; 2 blocks are free."""
        manager = PagedKVCacheManager(num_blocks=10, block_size=4)
        for seq_id, num_tokens in [("a", 8), ("b", 12), ("c", 4), ("d", 8)]:
            manager.allocate_for_sequence(seq_id, num_tokens)
        return manager


    order = ListedOrder(["c", "a", "b", "d"])
    manager = small_cache()
    assert_plain_equal(evict_until_fit(manager, order, 5), ["c", "a"], "evict_until_fit(cache, order c,a,b,d, 5)")
    assert_plain_equal((sorted(manager.sequences), manager.allocator.num_free), (["b", "d"], 5),
                       "(sequences left, num_free) after evict_until_fit(cache, order c,a,b,d, 5)")
    manager = small_cache()
    assert_plain_equal(evict_until_fit(manager, order, 6, frozenset({"a"})), ["c", "b"],
                       "evict_until_fit(cache, order c,a,b,d, 6, protected={'a'})")
    manager = small_cache()
    assert_plain_equal(evict_until_fit(manager, order, 2), [], "evict_until_fit(cache, order, 2) (2 blocks are already free)")
    assert_raises(RuntimeError, "evict_until_fit(cache, order, 6, protected={'b', 'd'})", evict_until_fit,
                  manager, order, 6, frozenset({"b", "d"}))
    assert_plain_equal((sorted(manager.sequences), manager.allocator.num_free), (["a", "b", "c", "d"], 2),
                       "(sequences left, num_free) after a RuntimeError (nothing may be evicted)")
    assert_raises(ValueError, "evict_until_fit(cache, order, -1)", evict_until_fit, manager, order, -1)

    ### BEGIN HIDDEN TESTS
    import copy as _copy
    import random as _random


    class _Oldest:
        def select_victim(self, sequences, protected=frozenset()):
            rows = [(s.last_access_step, k) for k, s in sequences.items() if k not in protected]
            return min(rows)[1] if rows else None


    def _state(manager):
        return (sorted(manager.sequences), manager.allocator.num_free, [manager.allocator.get_block(i).ref_count for i in range(manager.allocator.num_blocks)])


    def _oracle_evict(manager, policy, needed, protected):
        trial = _copy.deepcopy(manager)
        for seq_id in [k for k in trial.sequences if k not in protected]:
            trial.release(trial.sequences[seq_id])
        if trial.allocator.num_free < needed:
            return None, None
        trial = _copy.deepcopy(manager)
        victims = []
        while trial.allocator.num_free < needed:
            victim = policy.select_victim(trial.sequences, protected)
            trial.release(trial.sequences[victim])
            victims.append(victim)
        return victims, _state(trial)


    def _random_manager(rng):
        manager = PagedKVCacheManager(num_blocks=rng.randint(6, 30), block_size=rng.choice([2, 4]))
        for index in range(rng.randint(1, 9)):
            seq_id = f"r{index}"
            if manager.sequences and rng.random() < 0.35:
                manager.fork(manager.sequences[rng.choice(sorted(manager.sequences))], seq_id)
            elif rng.randint(1, 12) <= manager.allocator.num_free * manager.block_size:
                manager.allocate_for_sequence(seq_id, rng.randint(1, min(12, manager.allocator.num_free * manager.block_size)))
        for seq in manager.sequences.values():
            seq.last_access_step = rng.randint(0, 6)
        return manager


    _rng = _random.Random(3404)
    _raised = _succeeded = 0
    for _case in range(300):
        _manager = _random_manager(_rng)
        _ids = sorted(_manager.sequences)
        _protected = frozenset(_rng.sample(_ids, _rng.randint(0, len(_ids))))
        _policy = _Oldest() if _case % 2 else ListedOrder(_rng.sample(_ids, len(_ids)))
        _needed = _rng.randint(0, _manager.allocator.num_blocks + 1)
        _expected, _after = _oracle_evict(_manager, _policy, _needed, _protected)
        _before = _state(_manager)
        if _expected is None:
            _raised += 1
            assert_raises(RuntimeError, f"evict_until_fit on random case {_case} (not enough freeable blocks)",
                          evict_until_fit, _manager, _policy, _needed, _protected)
            assert _state(_manager) == _before, f"evict_until_fit changed the cache before raising on random case {_case}"
        else:
            _succeeded += 1
            assert_plain_equal(evict_until_fit(_manager, _policy, _needed, _protected), _expected,
                               f"evict_until_fit on random case {_case}", reveal=False)
            assert _state(_manager) == _after, f"evict_until_fit left the cache in the wrong state on random case {_case}"
    assert _raised > 20 and _succeeded > 20, "the hidden cases must cover both outcomes"

    # A block shared with a protected fork never goes back to the pool.
    _manager = PagedKVCacheManager(num_blocks=6, block_size=4)
    _parent = _manager.allocate_for_sequence("parent", 16)
    _manager.fork(_parent, "child")
    _manager.allocate_for_sequence("other", 4)
    _before = _state(_manager)
    assert_raises(RuntimeError, "evict_until_fit(parent 4 blocks shared with protected child, other 1 block, need 3)",
                  evict_until_fit, _manager, ListedOrder(["parent", "other", "child"]), 3, frozenset({"child"}))
    assert _state(_manager) == _before, "evict_until_fit changed the cache before raising (shared blocks)"
    assert_plain_equal(evict_until_fit(_manager, ListedOrder(["parent", "other", "child"]), 2, frozenset({"child"})),
                       ["parent", "other"], "evict_until_fit(same cache, need 2, protected child)", reveal=False)
    ### END HIDDEN TESTS


_check_task3_4_evict_until_fit()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task3_5_lru_victim_t_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Tensors of metadata | 元数据张量
#
# An engine with $10^5$ cached sequences does not loop over Python objects to find a victim. It keeps the
# metadata in columns: entry $i$ of every tensor describes the $i$-th seq_id **in sorted order**, and a bool
# `evictable` mask is False for protected sequences. With that layout, "the smaller id wins a tie" becomes
# "the smaller index wins a tie", and the tensor versions below must return exactly the dict versions' answers,
# ties included. No Python loop over sequences; the tensors may be on any device; values are any int64
# (`torch.argmin` returns the first index of the minimum; a masked-out entry must never win, whatever value
# it holds).
#
# 拥有 $10^5$ 个缓存序列的引擎不会遍历 Python 对象来找受害者。它把元数据存成列：每个张量的第 $i$ 项描述**排序后**第
# $i$ 个 seq_id，布尔掩码 `evictable` 对受保护序列为 False。在这种布局下，"平局时较小的 id 获胜"就变成"平局时较小的下标获胜"，
# 下面的张量版本必须与字典版本给出完全相同的答案，平局也一样。不允许对序列写 Python 循环；张量可以在任意设备上；值可以是任意 int64
# （`torch.argmin` 返回最小值第一次出现的下标；被掩码排除的项无论取什么值都不能胜出）。
#
# ## Task 3.5: lru_victim_t (3 points)
#
# Write `lru_victim_t(last_access_step, evictable) -> int`: the index $i$ with `evictable[i]` True and the
# smallest `last_access_step[i]`, the smallest such index on a tie, as a Python `int`; `-1` when no entry is
# evictable. Raise `ValueError` when the two tensors are not 1-D of the same length.
#
# ## 任务 3.5：lru_victim_t（3 分）
#
# 编写 `lru_victim_t(last_access_step, evictable) -> int`：在 `evictable[i]` 为 True 的下标中，返回 `last_access_step[i]`
# 最小的下标 $i$（平局时取最小的下标），类型为 Python `int`；没有可驱逐的项时返回 `-1`。两个张量不是等长的一维张量时抛出 `ValueError`。

# %% nbgrader={"grade": false, "grade_id": "task3_5_lru_victim_t", "locked": false, "schema_version": 3, "solution": true, "task": false}
def lru_victim_t(last_access_step, evictable):
    """Return the index of the LRU victim among the evictable entries, ties to the smaller index.

    Args:
        last_access_step: 1-D int64 tensor, entry i for the i-th seq_id in sorted order, any device.
        evictable: 1-D bool tensor of the same length and device; False for protected sequences.

    Returns:
        The index (a Python int) of the evictable entry with the smallest last_access_step, the
        smallest such index on a tie; -1 when no entry is evictable.

    Raises:
        ValueError: when the tensors are not 1-D or their lengths differ.
    """
    ### BEGIN SOLUTION
    if last_access_step.dim() != 1 or evictable.shape != last_access_step.shape:
        raise ValueError(f"expected two 1-D tensors of the same length, got shapes "
                         f"{tuple(last_access_step.shape)} and {tuple(evictable.shape)}")
    # Protected entries get the largest int64, so one argmin finds the victim. Only when the
    # smallest masked value is that largest int64 itself can the argmin land on a protected entry;
    # then the first evictable index (if any) is the answer.
    largest = torch.iinfo(last_access_step.dtype).max
    masked = torch.where(evictable, last_access_step, largest)
    index = int(torch.argmin(masked)) if masked.numel() else -1
    if index >= 0 and bool(evictable[index]):
        return index
    candidates = torch.nonzero(evictable).flatten()
    return int(candidates[0]) if candidates.numel() else -1
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task3_5_lru_victim_t", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that lru_victim_t returns the dict LRU's victim as an index, ties to the smaller index, on every device."""


def _check_task3_5_lru_victim_t():
    from course.checks import assert_no_python_loop, assert_plain_equal, assert_raises
    from course.env import available_devices

    for device in available_devices():
        step = torch.tensor([7, 3, 9, 3], device=device)
        everyone = torch.ones(4, dtype=torch.bool, device=device)
        assert_plain_equal(lru_victim_t(step, everyone), 1, f"lru_victim_t([7, 3, 9, 3], all evictable) on {device}")
        assert_plain_equal(lru_victim_t(step, torch.tensor([True, False, True, True], device=device)), 3,
                           f"lru_victim_t([7, 3, 9, 3], evictable [T, F, T, T]) on {device}")
        extreme = torch.tensor([-2**63, 2**63 - 1, 2**63 - 1], device=device)
        assert_plain_equal(lru_victim_t(extreme, torch.tensor([False, False, True], device=device)), 2,
                           f"lru_victim_t([-2**63, 2**63 - 1, 2**63 - 1], evictable [F, F, T]) on {device}")
        assert_plain_equal(lru_victim_t(step, torch.zeros(4, dtype=torch.bool, device=device)), -1,
                           f"lru_victim_t(steps, nothing evictable) on {device}")
    assert_raises(ValueError, "lru_victim_t(4 steps, 3 flags)", lru_victim_t, torch.arange(4), torch.ones(3, dtype=torch.bool))

    ### BEGIN HIDDEN TESTS
    import random as _random


    def _oracle_lru_index(steps, flags):
        best = -1
        for i in range(len(steps) - 1, -1, -1):
            if flags[i] and (best < 0 or steps[i] <= steps[best]):
                best = i
        return best


    _rng = _random.Random(3505)
    _extremes = [-2**63, -1, 0, 2**40, 2**63 - 1]
    for device in available_devices():
        for _case in range(200):
            _n = _rng.randint(1, 30)
            _steps = [(_rng.choice(_extremes) if _case % 4 == 0 else _rng.randint(0, 6)) for _ in range(_n)]
            _flags = [_rng.random() < (0.7 if _case % 7 else 0.05) for _ in range(_n)]
            _s = torch.tensor(_steps, dtype=torch.int64, device=device)
            _e = torch.tensor(_flags, dtype=torch.bool, device=device)
            assert_plain_equal(lru_victim_t(_s, _e), _oracle_lru_index(_steps, _flags),
                               f"lru_victim_t on random case {_case} ({device})", reveal=False)
            assert _s.cpu().tolist() == _steps and _e.cpu().tolist() == _flags, f"lru_victim_t changed its input on random case {_case}"
        # Agreement with the dict version: sorted seq_ids <-> indices.
        _ids = sorted(f"seq-{i:04d}" for i in _rng.sample(range(10000), 50))
        _cache = {i: SequenceKVCache(i, last_access_step=_rng.randint(0, 5)) for i in _ids}
        _protected = set(_rng.sample(_ids, 20))
        _index = lru_victim_t(torch.tensor([_cache[i].last_access_step for i in _ids], device=device),
                              torch.tensor([i not in _protected for i in _ids], device=device))
        _expected = min((s.last_access_step, k) for k, s in _cache.items() if k not in _protected)[1]
        assert_plain_equal(_ids[_index], _expected, f"seq_ids[lru_victim_t(...)] against the dict LRU ({device})", reveal=False)
        assert_raises(ValueError, f"lru_victim_t(2-D steps) on {device}", lru_victim_t,
                      torch.zeros(2, 2, dtype=torch.int64, device=device), torch.ones(2, 2, dtype=torch.bool, device=device))
    _small = (torch.arange(8).flip(0), torch.ones(8, dtype=torch.bool))
    _large = (torch.arange(4096).flip(0), torch.ones(4096, dtype=torch.bool))
    assert_no_python_loop(lru_victim_t, _small, _large, "lru_victim_t")
    ### END HIDDEN TESTS


_check_task3_5_lru_victim_t()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task3_6_lfu_victim_t_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 3.6: lfu_victim_t (4 points)
#
# Write `lfu_victim_t(use_count, last_access_step, evictable) -> int`: the evictable index with the smallest
# `(use_count[i], last_access_step[i], i)`, compared lexicographically; `-1` when none is evictable; `ValueError`
# when the three tensors are not 1-D of the same length.
#
# Hint: do not fold the two keys into one number such as `use_count * 10**6 + last_access_step`: for large
# values it is wrong (and int64 overflows). Narrow the candidates key by key instead.
#
# ## 任务 3.6：lfu_victim_t（4 分）
#
# 编写 `lfu_victim_t(use_count, last_access_step, evictable) -> int`：在可驱逐的下标中返回
# `(use_count[i], last_access_step[i], i)` 按字典序最小者；没有可驱逐项时返回 `-1`；三个张量不是等长的一维张量时抛出 `ValueError`。
#
# 提示：不要把两个键合成一个数（例如 `use_count * 10**6 + last_access_step`）：值很大时结果会出错（int64 也会溢出）。
# 应当逐个键地缩小候选范围。

# %% nbgrader={"grade": false, "grade_id": "task3_6_lfu_victim_t", "locked": false, "schema_version": 3, "solution": true, "task": false}
def lfu_victim_t(use_count, last_access_step, evictable):
    """Return the index of the LFU victim: smallest (use_count, last_access_step, index) among evictable entries.

    Args:
        use_count: 1-D int64 tensor, entry i for the i-th seq_id in sorted order, any device.
        last_access_step: 1-D int64 tensor of the same length and device.
        evictable: 1-D bool tensor of the same length and device; False for protected sequences.

    Returns:
        The index as a Python int; -1 when no entry is evictable.

    Raises:
        ValueError: when the tensors are not 1-D or their lengths differ.
    """
    ### BEGIN SOLUTION
    if use_count.dim() != 1 or last_access_step.shape != use_count.shape or evictable.shape != use_count.shape:
        raise ValueError(f"expected three 1-D tensors of the same length, got shapes {tuple(use_count.shape)}, "
                         f"{tuple(last_access_step.shape)} and {tuple(evictable.shape)}")
    if not bool(evictable.any()):
        return -1
    largest = torch.iinfo(use_count.dtype).max
    # The evictable entries with the fewest uses; among them the smallest step, then the lowest index.
    fewest = torch.where(evictable, use_count, largest).min()
    tied = evictable & (use_count == fewest)
    masked = torch.where(tied, last_access_step, largest)
    index = int(torch.argmin(masked))
    if bool(tied[index]):
        return index
    return int(torch.nonzero(tied)[0, 0])
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task3_6_lfu_victim_t", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
"""Check that lfu_victim_t returns the dict LFU's victim as an index, recency then index breaking ties, on every device."""


def _check_task3_6_lfu_victim_t():
    from course.checks import assert_no_python_loop, assert_plain_equal, assert_raises
    from course.env import available_devices

    for device in available_devices():
        count = torch.tensor([1, 1, 4, 1], device=device)
        step = torch.tensor([9, 4, 1, 4], device=device)
        everyone = torch.ones(4, dtype=torch.bool, device=device)
        assert_plain_equal(lfu_victim_t(count, step, everyone), 1,
                           f"lfu_victim_t(use_count [1, 1, 4, 1], step [9, 4, 1, 4], all evictable) on {device}")
        assert_plain_equal(lfu_victim_t(count, step, torch.tensor([True, False, True, True], device=device)), 3,
                           f"lfu_victim_t(same, evictable [T, F, T, T]) on {device}")
        big = torch.tensor([3, 2**40, 2**40], device=device)
        assert_plain_equal(lfu_victim_t(torch.tensor([5, 5, 5], device=device), big, torch.tensor([False, True, True], device=device)), 1,
                           f"lfu_victim_t(use_count [5, 5, 5], step [3, 2**40, 2**40], evictable [F, T, T]) on {device}")
        assert_plain_equal(lfu_victim_t(count, step, torch.zeros(4, dtype=torch.bool, device=device)), -1,
                           f"lfu_victim_t(..., nothing evictable) on {device}")
    assert_raises(ValueError, "lfu_victim_t(4 counts, 3 steps, 4 flags)", lfu_victim_t,
                  torch.arange(4), torch.arange(3), torch.ones(4, dtype=torch.bool))

    ### BEGIN HIDDEN TESTS
    import random as _random


    def _oracle_lfu_index(counts, steps, flags):
        rows = [(counts[i], steps[i], i) for i in range(len(flags)) if flags[i]]
        return min(rows)[2] if rows else -1


    _rng = _random.Random(3606)
    _extremes = [-2**63, -1, 0, 1, 2**40, 2**62, 2**63 - 1]
    for device in available_devices():
        for _case in range(200):
            _n = _rng.randint(1, 30)
            if _case % 4 == 0:
                _counts = [_rng.choice(_extremes) for _ in range(_n)]
                _steps = [_rng.choice(_extremes) for _ in range(_n)]
            else:
                _counts = [_rng.randint(0, 2) for _ in range(_n)]
                _steps = [_rng.randint(0, 4) * (1 if _case % 3 else 2**50) for _ in range(_n)]
            _flags = [_rng.random() < (0.7 if _case % 7 else 0.05) for _ in range(_n)]
            _c = torch.tensor(_counts, dtype=torch.int64, device=device)
            _s = torch.tensor(_steps, dtype=torch.int64, device=device)
            _e = torch.tensor(_flags, dtype=torch.bool, device=device)
            assert_plain_equal(lfu_victim_t(_c, _s, _e), _oracle_lfu_index(_counts, _steps, _flags),
                               f"lfu_victim_t on random case {_case} ({device})", reveal=False)
            assert _c.cpu().tolist() == _counts and _s.cpu().tolist() == _steps and _e.cpu().tolist() == _flags, \
                f"lfu_victim_t changed its input on random case {_case}"
        _ids = sorted(f"seq-{i:04d}" for i in _rng.sample(range(10000), 50))
        _cache = {i: SequenceKVCache(i, last_access_step=_rng.randint(0, 5), use_count=_rng.randint(1, 2)) for i in _ids}
        _protected = set(_rng.sample(_ids, 20))
        _index = lfu_victim_t(torch.tensor([_cache[i].use_count for i in _ids], device=device),
                              torch.tensor([_cache[i].last_access_step for i in _ids], device=device),
                              torch.tensor([i not in _protected for i in _ids], device=device))
        _expected = min((s.use_count, s.last_access_step, k) for k, s in _cache.items() if k not in _protected)[2]
        assert_plain_equal(_ids[_index], _expected, f"seq_ids[lfu_victim_t(...)] against the dict LFU ({device})", reveal=False)
        assert_raises(ValueError, f"lfu_victim_t(mask of another length) on {device}", lfu_victim_t,
                      torch.arange(3, device=device), torch.arange(3, device=device), torch.ones(2, dtype=torch.bool, device=device))
    _small = (torch.zeros(8, dtype=torch.int64), torch.arange(8).flip(0), torch.ones(8, dtype=torch.bool))
    _large = (torch.zeros(4096, dtype=torch.int64), torch.arange(4096).flip(0), torch.ones(4096, dtype=torch.bool))
    assert_no_python_loop(lfu_victim_t, _small, _large, "lfu_victim_t")
    ### END HIDDEN TESTS


_check_task3_6_lfu_victim_t()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task3_7_evict_order_t_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 3.7: evict_order_t (5 points)
#
# `evict_until_fit` asks for victims one at a time. With static metadata the whole order is one sort. Write
# `evict_order_t(keys, evictable, k) -> torch.Tensor`: `keys` is a non-empty list of 1-D int64 tensors (the
# first key decides, later keys break ties, the index breaks the last ties), e.g. `[last_access_step]` for LRU
# and `[use_count, last_access_step]` for LFU. Return the indices of the first `k` evictable entries in that
# order, as an int64 tensor on the keys' device; fewer than `k` when fewer are evictable (an empty tensor when
# none is). Raise `ValueError` for `k < 0`, an empty `keys` list, or tensors that are not 1-D of one length.
#
# Hint: `torch.sort(..., stable=True)` keeps the order of equal entries. Sorting by the **last** key first and by
# the first key last gives the lexicographic order (this is how a radix sort works).
#
# ## 任务 3.7：evict_order_t（5 分）
#
# `evict_until_fit` 每次只要一个受害者。元数据不变时，完整的驱逐顺序就是一次排序。编写
# `evict_order_t(keys, evictable, k) -> torch.Tensor`：`keys` 是非空的一维 int64 张量列表（第一个键起决定作用，后面的键打破平局，
# 最后由下标打破剩余的平局），例如 LRU 用 `[last_access_step]`，LFU 用 `[use_count, last_access_step]`。
# 按该顺序返回前 `k` 个可驱逐项的下标，类型为 int64 张量，放在与 keys 相同的设备上；可驱逐项少于 `k` 个时返回更少（没有时返回空张量）。
# `k < 0`、`keys` 为空列表、或张量不是等长的一维张量时抛出 `ValueError`。
#
# 提示：`torch.sort(..., stable=True)` 会保持相等元素的原有顺序。先按**最后一个**键排序、最后按第一个键排序，就得到字典序（基数排序就是这样工作的）。

# %% nbgrader={"grade": false, "grade_id": "task3_7_evict_order_t", "locked": false, "schema_version": 3, "solution": true, "task": false}
def evict_order_t(keys, evictable, k):
    """Return the first k evictable indices in lexicographic order of (keys[0], keys[1], ..., index).

    Args:
        keys: non-empty list of 1-D int64 tensors of one length n, on one device.
        evictable: 1-D bool tensor of length n on the same device.
        k: the number of victims wanted, an int >= 0.

    Returns:
        A 1-D int64 tensor on the keys' device with min(k, number of evictable entries) indices,
        the first victim first.

    Raises:
        ValueError: for k < 0, an empty ``keys`` list, or tensors that are not 1-D of one length.
    """
    ### BEGIN SOLUTION
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if len(keys) == 0:
        raise ValueError("keys must hold at least one tensor")
    if evictable.dim() != 1 or any(key.shape != evictable.shape for key in keys):
        raise ValueError("keys and evictable must be 1-D tensors of one length")
    order = torch.arange(evictable.shape[0], device=evictable.device)
    # Least significant key first: each stable sort keeps the order that the later keys decided.
    for key in reversed(keys):
        order = order[torch.sort(key[order], stable=True).indices]
    return order[evictable[order]][:k]
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task3_7_evict_order_t", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
"""Check that evict_order_t lists the first k evictable indices in lexicographic key order, on every device."""


def _check_task3_7_evict_order_t():
    from course.checks import assert_no_python_loop, assert_raises, assert_same_tensor
    from course.env import available_devices

    for device in available_devices():
        count = torch.tensor([1, 1, 4, 1, 0], device=device)
        step = torch.tensor([9, 4, 1, 4, 7], device=device)
        flags = torch.tensor([True, True, True, True, False], device=device)
        assert_same_tensor(evict_order_t([step], flags, 3), torch.tensor([2, 1, 3], device=device),
                           f"evict_order_t([step [9, 4, 1, 4, 7]], evictable [T, T, T, T, F], 3) on {device}")
        assert_same_tensor(evict_order_t([count, step], flags, 10), torch.tensor([1, 3, 0, 2], device=device),
                           f"evict_order_t([use_count [1, 1, 4, 1, 0], step], same mask, 10) on {device}")
        assert_same_tensor(evict_order_t([count, step], flags, 0), torch.tensor([], dtype=torch.int64, device=device),
                           f"evict_order_t(..., k=0) on {device}")
    assert_raises(ValueError, "evict_order_t([], mask, 1)", evict_order_t, [], torch.ones(3, dtype=torch.bool), 1)
    assert_raises(ValueError, "evict_order_t([step], mask, -1)", evict_order_t, [torch.arange(3)], torch.ones(3, dtype=torch.bool), -1)

    ### BEGIN HIDDEN TESTS
    import functools as _functools
    import random as _random


    def _oracle_order(columns, flags, k):
        def compare(i, j):
            for column in columns:
                if column[i] != column[j]:
                    return -1 if column[i] < column[j] else 1
            return -1 if i < j else (1 if i > j else 0)
        chosen = sorted((i for i in range(len(flags)) if flags[i]), key=_functools.cmp_to_key(compare))
        return chosen[:k]


    _rng = _random.Random(3707)
    _extremes = [-2**63, -1, 0, 3, 2**40, 2**63 - 1]
    for device in available_devices():
        for _case in range(150):
            _n = _rng.randint(0, 25)
            _m = _rng.randint(1, 3)
            if _case % 4 == 0:
                _columns = [[_rng.choice(_extremes) for _ in range(_n)] for _ in range(_m)]
            else:
                _columns = [[_rng.randint(0, 3) for _ in range(_n)] for _ in range(_m)]
            _flags = [_rng.random() < 0.75 for _ in range(_n)]
            _k = _rng.randint(0, _n + 2)
            _keys = [torch.tensor(c, dtype=torch.int64, device=device) for c in _columns]
            _e = torch.tensor(_flags, dtype=torch.bool, device=device)
            _expected = torch.tensor(_oracle_order(_columns, _flags, _k), dtype=torch.int64, device=device)
            assert_same_tensor(evict_order_t(_keys, _e, _k), _expected,
                               f"evict_order_t on random case {_case} ({_m} keys, k={_k}, {device})", reveal=False)
            assert [t.cpu().tolist() for t in _keys] == _columns and _e.cpu().tolist() == _flags, \
                f"evict_order_t changed its input on random case {_case}"
        # Many equal keys: only the index may order them.
        _ties = torch.zeros(300, dtype=torch.int64, device=device)
        _mask = torch.arange(300, device=device) % 3 != 0
        assert_same_tensor(evict_order_t([_ties, _ties], _mask, 300), torch.nonzero(_mask).flatten(),
                           f"evict_order_t(300 equal keys) on {device}", reveal=False)
        assert_raises(ValueError, f"evict_order_t(keys of two lengths) on {device}", evict_order_t,
                      [torch.arange(3, device=device), torch.arange(4, device=device)], torch.ones(3, dtype=torch.bool, device=device), 2)
    _small = ([torch.zeros(8, dtype=torch.int64), torch.arange(8).flip(0)], torch.ones(8, dtype=torch.bool), 8)
    _large = ([torch.zeros(4096, dtype=torch.int64), torch.arange(4096).flip(0)], torch.ones(4096, dtype=torch.bool), 4096)
    assert_no_python_loop(evict_order_t, _small, _large, "evict_order_t")
    ### END HIDDEN TESTS


_check_task3_7_evict_order_t()

# %% [markdown]
# ## Experiments: replaying workloads | 实验：回放工作负载
#
# `course.replay.replay(trace, capacity, policy)` replays a trace at block level: every request references its
# prefix blocks in order; a reference is a hit when the block is cached, otherwise a miss that inserts the
# block, evicting one block first when `capacity` blocks are cached. Every block is one unit (like one
# `SequenceKVCache` holding one block), so your policy objects plug in unchanged: the replay hands them a dict of
# records with `seq_id`, `last_access_step` (the reference's position in the trace), `use_count` (references
# since insertion) and `num_blocks()`, and it **protects** the blocks the current request has already
# referenced, as an engine pins the blocks of a running request. The policies of `replay` are a fast built-in
# LRU, LFU, FIFO and Belady's MIN, libCacheSim's ARC and S3-FIFO (`"lcs:ARC"`, `"lcs:S3FIFO"`; these need the
# `libcachesim` package), and any object with `select_victim`, such as yours. Your classes run in Python with one
# `select_victim` call per eviction, so the workloads below are small.
#
# `course.replay.replay(trace, capacity, policy)` 以块为单位回放访问序列：每个请求按顺序访问它的前缀块；块已在缓存中即为命中，
# 否则为未命中并插入该块（缓存已有 `capacity` 个块时先驱逐一个）。每个块是一个单位（相当于只占一个块的 `SequenceKVCache`），
# 所以你的策略对象可以直接接入：回放把记录字典交给它们，记录带有 `seq_id`、`last_access_step`（该次访问在序列中的位置）、
# `use_count`（插入以来的访问次数）和 `num_blocks()`；回放还会**保护**当前请求已经访问过的块，就像引擎钉住运行中请求的块一样。
# `replay` 支持的策略有：快速的内置 LRU、LFU、FIFO 和 Belady 的 MIN，libCacheSim 的 ARC 与 S3-FIFO（`"lcs:ARC"`、`"lcs:S3FIFO"`，
# 需要 `libcachesim` 包），以及任何带 `select_victim` 的对象，例如你写的类。你的类在 Python 中运行，每次驱逐调用一次
# `select_victim`，所以下面的工作负载都很小。

# %%
import math
import time

import matplotlib.pyplot as plt
import numpy as np

from course import traces
from course.plots import gap_closed, plot_hit_ratio_curves
from course.replay import lru_hit_ratio_curve, replay

# Small workloads: your policy objects are replayed in Python, one select_victim call per eviction.
WORKLOADS = {
    "loop": traces.loop(num_requests=300, loop_blocks=120, blocks_per_request=4, seed=0),
    "Zipf documents": traces.zipf_documents(num_requests=300, num_documents=60, blocks_per_document=4,
                                            system_prompt_blocks=2, alpha=1.0, seed=0),
    "chat sessions": traces.chat_sessions(num_sessions=40, turns=5, system_prompts=3, system_prompt_blocks=4,
                                          blocks_per_turn=2, seed=0),
}
# A policy is a replay name, or a class (yours) that is instantiated for every replay.
POLICIES = {
    "your LRUPolicy": LRUPolicy,
    "your LFUPolicy": LFUPolicy,
    "FIFO": "fifo",
    "ARC (libCacheSim)": "lcs:ARC",
    "S3-FIFO (libCacheSim)": "lcs:S3FIFO",
    "Belady's MIN": "belady",
}
_reported = set()


def distinct_blocks(trace):
    """The number of different blocks a trace references (the capacity at which nothing is evicted)."""
    return len(np.unique(traces.flatten(trace)))


def run(trace, capacity, policy):
    """Replay one policy; None (and one printed note per policy) when it raises, e.g. an unfinished task."""
    label = policy if isinstance(policy, str) else policy.__name__
    try:
        return replay(trace, capacity, policy if isinstance(policy, str) else policy())
    except Exception as error:  # noqa: BLE001 - the experiment goes on without this policy.
        if label not in _reported:
            _reported.add(label)
            why = "not written yet" if isinstance(error, NotImplementedError) else f"{type(error).__name__}: {error}"
            print(f"{label} left out of this experiment ({why}).")
        return None


def hit_ratio(trace, capacity, policy):
    """The hit ratio of one replay, NaN when the policy raised."""
    result = run(trace, capacity, policy)
    return float("nan") if result is None else result.hit_ratio


def as_curves(capacities, ratios_by_label):
    """{label: {capacity: hit ratio}} for plot_hit_ratio_curves, leaving out policies that raised."""
    return {label: dict(zip(capacities, ratios)) for label, ratios in ratios_by_label.items()
            if not any(math.isnan(r) for r in ratios)}


for name, trace in WORKLOADS.items():
    print(f"{name:15s} {len(trace):4d} requests, {len(traces.flatten(trace)):5d} block references, "
          f"{distinct_blocks(trace):4d} distinct blocks")

# %% [markdown]
# ### Experiment 1: your policies inside the replay | 实验 1：把你的策略放进回放
#
# First a check: on the same trace and capacity, your `LRUPolicy` must give exactly the built-in LRU's hits (LRU
# never wants to evict a block of the current request anyway, so protection changes nothing). Your `LFUPolicy` may
# differ from the built-in LFU by a few hits: the built-in one does not protect the current request's blocks.
#
# 先做一个检查：在相同的访问序列和容量下，你的 `LRUPolicy` 必须与内置 LRU 的命中数完全相同（LRU 本来就不会驱逐当前请求的块，
# 所以保护不改变任何结果）。你的 `LFUPolicy` 可能与内置 LFU 相差几次命中：内置 LFU 不保护当前请求的块。

# %%
trace, capacity = WORKLOADS["Zipf documents"], 40
print(f"Zipf documents, capacity {capacity} blocks")
print(f"{'policy':16s} {'hits':>6s} {'misses':>7s} {'evictions':>10s} {'hit ratio':>10s} {'prefix-hit blocks':>18s} {'time (s)':>9s}")
results = {}
for label, policy in [("your LRUPolicy", LRUPolicy), ("built-in lru", "lru"),
                      ("your LFUPolicy", LFUPolicy), ("built-in lfu", "lfu")]:
    started = time.perf_counter()
    result = run(trace, capacity, policy)
    elapsed = time.perf_counter() - started
    results[label] = result
    if result is not None:
        print(f"{label:16s} {result.hits:6d} {result.misses:7d} {result.evictions:10d} {result.hit_ratio:10.3f} "
              f"{result.prefix_hit_blocks:18d} {elapsed:9.3f}")
if results["your LRUPolicy"] is not None:
    same = results["your LRUPolicy"].hits == results["built-in lru"].hits
    print("your LRUPolicy gives the built-in LRU's hits:", same)

# %% [markdown]
# ### Experiment 2: hit ratio against capacity | 实验 2：命中率与容量
#
# Three workloads, six policies, capacities from 10% to 100% of the distinct blocks (at 100% nothing is evicted and
# every policy has only the first-reference misses). The thin grey line is LRU at **every** capacity, computed in
# one pass from stack distances (LRU is a stack algorithm: a cache of $C+1$ blocks holds everything a cache of $C$
# blocks holds), with `course.replay.lru_hit_ratio_curve`; your LRU's markers must sit on it. The dashed black line
# is Belady's MIN, the ceiling.
#
# 三个工作负载、六个策略，容量从不同块数的 10% 到 100%（100% 时没有驱逐，所有策略都只有首次访问的未命中）。细灰线是 LRU 在**每个**容量下的
# 命中率，由 `course.replay.lru_hit_ratio_curve` 根据栈距离一次算出（LRU 是栈算法：$C+1$ 个块的缓存包含 $C$ 个块的缓存中的一切）；
# 你的 LRU 的标记点必须落在这条线上。黑色虚线是 Belady 的 MIN，即上限。

# %%
FRACTIONS = (0.1, 0.25, 0.5, 0.75, 1.0)
curves = {}
started = time.perf_counter()
fig, axes = plt.subplots(1, len(WORKLOADS), figsize=(15, 4.6))
for ax, (name, trace) in zip(axes, WORKLOADS.items()):
    distinct = distinct_blocks(trace)
    capacities = sorted({max(10, round(f * distinct)) for f in FRACTIONS})
    curves[name] = {"capacities": capacities}
    for label, policy in POLICIES.items():
        curves[name][label] = [hit_ratio(trace, c, policy) for c in capacities]
    plot_hit_ratio_curves(as_curves(capacities, {k: v for k, v in curves[name].items() if k in POLICIES and k != "Belady's MIN"}),
                          belady=dict(zip(capacities, curves[name]["Belady's MIN"])),
                          title=f"{name} ({distinct} distinct blocks)", ax=ax)
    every = list(range(1, distinct + 1))
    lru_curve = lru_hit_ratio_curve(trace, every)
    ax.plot(every, [100 * lru_curve[c].hit_ratio for c in every], color="0.6", lw=1, label="LRU at every capacity")
    ax.get_legend().remove()
handles, labels = axes[0].get_legend_handles_labels()
fig.legend(handles, labels, loc="lower center", ncol=7)
fig.suptitle("Hit ratio against cache capacity: your LRU and LFU, FIFO, ARC, S3-FIFO and Belady's MIN")
plt.tight_layout(rect=(0, 0.08, 1, 0.95))
plt.show()
print(f"replayed in {time.perf_counter() - started:.1f} s")

# %% [markdown]
# **What the curves show.** *Loop*: a cyclic scan over more blocks than the cache holds is LRU's worst case: every
# block is evicted just before it comes back, so LRU scores 0 until the whole loop fits; LFU is no better, since
# every block in the loop has the same small count and the recency tie-break makes it LRU (FIFO and ARC lie on
# the same zero line). Belady keeps a fixed
# part of the loop and hits on it every round (about $C/L$ for a loop of $L$ blocks); S3-FIFO, which lets a new
# block prove itself in a small FIFO before it enters the main queue, keeps part of the loop too. *Zipf documents*:
# a stable hot set (the system prompt and the popular documents) is where frequency pays: LFU is above LRU at small
# capacities, because one pass over rare documents does not push the popular ones out. *Chat sessions*: the shared
# system prompts are frequent and each conversation's history is recent, so frequency and recency each help; at
# small capacities LFU keeps the system prompts, while LRU catches up once the active conversations fit. No
# practical policy reaches Belady: the space between a curve and the MIN curve is what better eviction could
# still win.
#
# **曲线说明了什么。** *循环*：对多于缓存容量的块做循环扫描是 LRU 的最坏情况：每个块都恰好在它再次被访问之前被驱逐，所以在整个循环装得下之前
# LRU 的命中率为 0；LFU 也好不到哪里去，因为循环中每个块的计数都一样小，最近访问时间的平局规则使它变成了 LRU（FIFO 和 ARC 也落在同一条零线上）。Belady 保留循环中固定的一部分，
# 每轮都在这部分上命中（对 $L$ 个块的循环约为 $C/L$）；S3-FIFO 让新块先在一个小 FIFO 里证明自己的价值再进入主队列，也能保留循环的一部分。
# *Zipf 文档*：稳定的热点集合（系统提示和热门文档）正是频率发挥作用的地方：容量小时 LFU 高于 LRU，因为一遍访问冷门文档不会把热门文档挤出去。
# *多轮对话*：共享的系统提示访问频繁，而每个对话的历史又是最近访问的，所以频率和近因各有帮助；容量小时 LFU 保住了系统提示，
# 而当活跃对话都装得下时 LRU 就追了上来。没有任何实际策略能达到 Belady：曲线与 MIN 之间的空间，就是更好的驱逐还能赢得的部分。

# %% [markdown]
# ### Experiment 3: the Mooncake trace | 实验 3：Mooncake 访问序列
#
# Mooncake (Kimi's serving platform) published a trace in which each request lists the hash ids of its prompt's
# 512-token blocks; equal ids in two requests are a shared prefix. `traces.mooncake_or_synthetic` downloads it;
# without network access it returns a generated trace **in the same format**, and the cell prints which one you
# got. The first 1,000 requests are enough to see the ranking of policies. Your Python policies would need one
# `select_victim` call over thousands of blocks per eviction here, so this experiment uses the built-in LRU and LFU,
# which rank exactly like yours.
#
# Mooncake（Kimi 的推理服务平台）公开了一份访问序列，其中每个请求列出其提示词各个 512 token 块的哈希 id；两个请求中相同的 id 就是共享前缀。
# `traces.mooncake_or_synthetic` 会下载它；没有网络时，它返回一份**格式相同**的生成序列，单元会打印你拿到的是哪一份。前 1,000 个请求足以看出策略的排名。
# 在这里你的 Python 策略每次驱逐都要在数千个块上调用一次 `select_victim`，所以本实验使用内置的 LRU 和 LFU，它们的排序与你的实现完全相同。

# %%
mooncake, description = traces.mooncake_or_synthetic(limit=1000)
print(description)
real = description.startswith("Mooncake")
BUILT_IN = {"LRU": "lru", "LFU": "lfu", "FIFO": "fifo", "ARC (libCacheSim)": "lcs:ARC",
            "S3-FIFO (libCacheSim)": "lcs:S3FIFO", "Belady's MIN": "belady"}
distinct = distinct_blocks(mooncake)
capacities = sorted({max(10, round(f * distinct)) for f in (0.05, 0.1, 0.2, 0.35, 0.5)})
name = "Mooncake" if real else "Mooncake format, synthetic"
curves[name] = {"capacities": capacities}
started = time.perf_counter()
for label, policy in BUILT_IN.items():
    curves[name][label] = [hit_ratio(mooncake, c, policy) for c in capacities]
ax = plot_hit_ratio_curves(as_curves(capacities, {k: v for k, v in curves[name].items() if k in BUILT_IN and k != "Belady's MIN"}),
                           belady=dict(zip(capacities, curves[name]["Belady's MIN"])),
                           title=("Mooncake trace" if real else "SYNTHETIC stand-in in the Mooncake format")
                           + f": first {len(mooncake)} requests, {distinct} distinct blocks")
ax.set_xlabel("cache capacity (blocks of 512 tokens)")
plt.tight_layout()
plt.show()
print(f"replayed {len(traces.flatten(mooncake))} block references per run in {time.perf_counter() - started:.1f} s in total")


# %% [markdown]
# ### Experiment 4: how much of the gap each policy closes | 实验 4：每个策略弥补了多少差距
#
# LRU is the default of real engines, and Belady's MIN is the ceiling. A policy's share of the gap between them,
#
# $$\text{gap closed} = \frac{h_\text{policy} - h_\text{LRU}}{h_\text{MIN} - h_\text{LRU}},$$
#
# is 0 for LRU itself, 1 for a policy as good as the optimum, and negative for a policy worse than LRU. The bars use
# the capacity of about a quarter of the distinct blocks (a fifth for the Mooncake trace); on the small workloads
# "LFU" is your `LFUPolicy`, on the Mooncake trace the built-in LFU.
#
# LRU 是真实引擎的默认策略，Belady 的 MIN 是上限。一个策略弥补的两者之间差距的比例如上式：LRU 自身为 0，与最优策略一样好的策略为 1，
# 比 LRU 差的策略为负。柱状图使用约为不同块数四分之一的容量（Mooncake 序列为五分之一）；在小工作负载上"LFU"是你的 `LFUPolicy`，
# 在 Mooncake 序列上是内置 LFU。

# %%
def share_of_gap(ratio, lru, belady):
    """course.plots.gap_closed, or NaN when a policy raised (its ratio is NaN)."""
    return float("nan") if math.isnan(ratio) else gap_closed(ratio, lru, belady)


LABELS = ["LFU", "FIFO", "ARC (libCacheSim)", "S3-FIFO (libCacheSim)"]
names = list(curves)
fig, ax = plt.subplots(figsize=(10, 4.2))
width = 0.8 / len(LABELS)
print(f"{'workload':28s} {'capacity':>8s} " + " ".join(f"{label[:12]:>12s}" for label in LABELS))
for i, name in enumerate(names):
    row = curves[name]
    small = name in WORKLOADS
    k = 1 if small else 2  # a quarter of the distinct blocks (small workloads), a fifth (Mooncake)
    capacity = row["capacities"][k]
    trace = WORKLOADS[name] if small else mooncake
    lru = lru_hit_ratio_curve(trace, [capacity])[capacity].hit_ratio
    gaps = [share_of_gap((row["your LFUPolicy"] if small and label == "LFU" else row[label])[k], lru,
                       row["Belady's MIN"][k]) for label in LABELS]
    print(f"{name:28s} {capacity:8d} " + " ".join(f"{g:12.2f}" for g in gaps))
    for j, g in enumerate(gaps):
        ax.bar(i + (j - (len(LABELS) - 1) / 2) * width, g, width, label=LABELS[j] if i == 0 else None,
               color=f"C{j + 1}")
ax.axhline(0, color="black", lw=0.8)
ax.axhline(1, color="black", lw=0.8, ls="--")
ax.set_xticks(range(len(names)), names)
ax.set_ylabel("share of the LRU-to-MIN gap closed (1 = optimal)")
ax.set_title("Gap closed between LRU (0) and Belady's MIN (1, dashed)")
ax.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# **Reading the bars.** On the loop, only S3-FIFO closes most of the gap: new blocks pass through its small FIFO
# instead of flushing the main queue, so part of the loop stays cached, as with MIN. On
# the Zipf workload the policies that count or filter (LFU, ARC, S3-FIFO) close a fifth to two fifths of the gap,
# and FIFO, which ignores hits, opens it further. On the chat workload, at this capacity, nothing beats LRU:
# a conversation's history is reused one turn later, and recency is the right signal. On the Mooncake-format trace,
# LFU and ARC gain over LRU at small capacities and FIFO loses (if your run downloaded the real trace, read the
# numbers printed above for it). No single policy wins everywhere; that is why engines make the policy pluggable
# and why notebook 05 scores sequences with more than one signal.
#
# **如何解读柱状图。** 在循环上，只有 S3-FIFO 弥补了大部分差距：新块先经过它的小 FIFO，而不会冲刷主队列，
# 因此循环的一部分能像 MIN 那样一直留在缓存中。在 Zipf 工作负载上，计数或过滤的策略（LFU、ARC、S3-FIFO）弥补了五分之一到五分之二的差距，
# 而忽略命中的 FIFO 反而扩大了差距。在多轮对话上，在这个容量下没有策略胜过 LRU：对话历史在下一轮就被重用，近因正是正确的信号。
# 在 Mooncake 格式的序列上，容量小时 LFU 和 ARC 胜过 LRU，FIFO 落后（如果你的运行下载到了真实序列，请以上面打印的数字为准）。
# 没有哪个策略在所有地方都赢；这就是引擎把策略做成可插拔的原因，也是 notebook 05 用多个信号给序列打分的原因。

# %% [markdown]
# ### Experiment 5: pick a workload and a capacity | 实验 5：选择工作负载与容量
#
# Choose a workload and the capacity as a share of its distinct blocks; the bars are the hit ratios of every policy
# at that point (your classes on the small workloads, the built-in LRU and LFU on the Mooncake trace). Try the loop
# just below and just above 100%, and the Zipf workload at 5%.
#
# 选择一个工作负载，并以其不同块数的百分比设定容量；柱子是各策略在该点的命中率（小工作负载上用你的类，Mooncake 序列上用内置的 LRU 和 LFU）。
# 试试循环在略低于和略高于 100% 时的表现，以及 Zipf 工作负载在 5% 时的表现。

# %%
import ipywidgets as widgets
from IPython.display import display

CHOICES = dict(WORKLOADS, **{"Mooncake (first 1,000 requests)" if real else "Mooncake format (synthetic)": mooncake})
workload = widgets.Dropdown(options=list(CHOICES), value="Zipf documents", description="workload")
share = widgets.IntSlider(value=25, min=5, max=100, step=5, description="capacity %", continuous_update=False)
plot = widgets.Output()


def redraw(change=None):
    trace = CHOICES[workload.value]
    distinct = distinct_blocks(trace)
    capacity = max(10, round(share.value / 100 * distinct))
    policies = POLICIES if workload.value in WORKLOADS else BUILT_IN
    ratios = {label: hit_ratio(trace, capacity, policy) for label, policy in policies.items()}
    with plot:
        plot.clear_output(wait=True)
        fig, ax = plt.subplots(figsize=(7, 3.2))
        percent = [100 * value for value in ratios.values()]
        ax.barh(list(ratios), percent, color=[f"C{i}" for i in range(len(ratios))])
        for y, value in enumerate(percent):
            ax.text(value, y, f" {value:.1f}", va="center")
        ax.set_xlim(0, 110)
        ax.invert_yaxis()
        ax.set_xlabel("hit ratio (%)")
        ax.set_title(f"{workload.value}: capacity {capacity} blocks ({share.value}% of {distinct} distinct)")
        plt.tight_layout()
        plt.show()


workload.observe(redraw, names="value")
share.observe(redraw, names="value")
redraw()
display(widgets.VBox([widgets.HBox([workload, share]), plot]))

# %% [markdown]
# ## Summary | 小结
#
# **Remember:** LRU ranks by $t_\text{last}$, LFU by $(\text{use\_count}, t_\text{last})$; each is right on some
# workloads and far from Belady's MIN on others (LRU on loops larger than the cache, LFU when popularity
# shifts), so measure a policy against the optimum on your own trace before you trust it.
#
# **记住：** LRU 按 $t_\text{last}$ 排序，LFU 按 $(\text{use\_count}, t_\text{last})$ 排序；它们各自在某些工作负载上表现良好，
# 在另一些上远离 Belady 的 MIN（LRU 输在比缓存大的循环上，LFU 输在热度变化时）。所以在信任一个策略之前，
# 先在你自己的访问序列上把它与最优策略比较。
#
# Next: [04. Fair quota](../04_fair_quota/04_fair_quota.ipynb), eviction that protects small tenants from a
# large one. | 下一节：[04. 公平配额](../04_fair_quota/04_fair_quota.ipynb)，保护小租户不被大租户挤出缓存的驱逐。
#
# ## References | 参考文献
#
# - L. A. Belady, "A study of replacement algorithms for a virtual-storage computer", *IBM Systems Journal* 5(2), 1966 (MIN, the optimal offline policy).
# - R. L. Mattson, J. Gecsei, D. R. Slutz, I. L. Traiger, "Evaluation techniques for storage hierarchies", *IBM Systems Journal* 9(2), 1970 (stack algorithms: LRU's hit ratio at every capacity in one pass).
# - E. J. O'Neil, P. E. O'Neil, G. Weikum, "The LRU-K page replacement algorithm for database disk buffering", SIGMOD 1993.
# - N. Megiddo, D. S. Modha, "ARC: A Self-Tuning, Low Overhead Replacement Cache", FAST 2003.
# - J. Yang, Y. Zhang, Z. Qiu, Y. Yue, R. Vinayak, "FIFO queues are all you need for cache eviction" (S3-FIFO), SOSP 2023.
# - libCacheSim, a high-performance cache simulator (github.com/1a1a11a/libCacheSim) and its Python package `libcachesim`.
# - W. Kwon et al., "Efficient Memory Management for Large Language Model Serving with PagedAttention" (vLLM), SOSP 2023; vLLM's prefix caching design notes (free block queue, LRU eviction of cached blocks).
# - L. Zheng et al., "SGLang: Efficient Execution of Structured Language Model Programs" (RadixAttention: LRU eviction of radix-tree leaves, reference-counted locks), NeurIPS 2024.
# - R. Qin et al., "Mooncake: A KVCache-centric Disaggregated Architecture for LLM Serving", FAST 2025 (the trace format and the public trace).
# - Seed designs of this course: the "KV Eviction formula-to-code" walkthrough (LLM-REVIEW) and the "KV Cache Scheduling" chapter of Datawhale's llm-algo-leetcode (text CC BY 4.0, code Apache-2.0).
