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
# [![Open in ModelScope](https://img.shields.io/badge/ModelScope-Open%20in%20ModelScope-624aff)](https://modelscope.cn/notebook/share/github/kvcache-course/kv-cache-eviction/blob/main/release/03_lru_lfu/03_lru_lfu.ipynb)
# [![GitHub](https://img.shields.io/badge/GitHub-release%2F03_lru_lfu-black)](https://github.com/kvcache-course/kv-cache-eviction/blob/main/release/03_lru_lfu/03_lru_lfu.ipynb)
#
# **Difficulty:** ★★☆ intermediate · **Time:** about 90 minutes · **Points:** 26 · **GPU:** tasks 3.5–3.7 run on CUDA when a GPU is present; everything also runs on the CPU.
#
# **难度：** ★★☆ 中级 · **用时：** 约 90 分钟 · **总分：** 26 · **GPU：** 任务 3.5–3.7 在有 GPU 时于 CUDA 上运行；所有内容也都能在 CPU 上运行。
#
# **ModelScope (魔搭):** log in to ModelScope, then click the ModelScope badge: it opens this notebook from
# GitHub in a notebook instance of yours (choose CPU or GPU). Where that link does not work, choose
# *File → Open from URL…* in the instance's JupyterLab and paste <https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/03_lru_lfu/03_lru_lfu.ipynb>.
# 先登录魔搭，再点击 ModelScope 徽章：魔搭会从 GitHub 取来本 notebook，在你自己的 Notebook 实例中打开（可选 CPU 或 GPU）。
# 如果这个链接打不开，在实例的 JupyterLab 中选择 *File → Open from URL…*，粘贴 <https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/03_lru_lfu/03_lru_lfu.ipynb>。
#
# How to work: run the setup cell. In each task, write what each numbered `# TODO` asks for in place of
# `# YOUR CODE HERE`, then run the test cells under it. Visible tests show what is expected; hidden tests
# check more cases when your notebook is graded. A type the text names is that type exactly, and the tests
# check it first: a `dict` is a plain `dict` (not an `OrderedDict`, `Counter` or `defaultdict`), a `tuple` a
# plain `tuple` (not a `namedtuple`), a `float` Python's `float` (not `numpy.float64`).
#
# 做法：先运行环境配置单元。在每个任务中，按每个带编号的 `# TODO` 的要求，把代码写在 `# YOUR CODE HERE` 处，然后运行其下方的测试单元。可见测试说明期望的结果；评分时，隐藏测试会检查更多情况。任务文字说到的类型就是这个类型本身，测试会先检查它：`dict` 是普通的 `dict`（不是 `OrderedDict`、`Counter` 或 `defaultdict`），`tuple` 是普通的 `tuple`（不是 `namedtuple`），`float` 是 Python 的 `float`（不是 `numpy.float64`）。

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
# ## 导读 | Overview
#
# 缓存满了而新请求又需要空间时，推理引擎必须决定先驱逐谁。LRU（最近最少使用，least recently used）驱逐最久没被访问的序列，LFU（最不经常使用，least frequently used）驱逐使用次数最少的序列；vLLM 与 SGLang 的前缀缓存用的都是 LRU。选错受害者（victim）的代价是重新计算：被驱逐的前缀下次再来时，它的 token 要重新预填充。本 notebook 中你先把两种策略写成只做选择、从不修改缓存的策略对象，再写“驱逐直到放得下”的循环（小心被共享的块），然后在元数据张量上不写 Python 循环地算出同样的受害者与驱逐顺序，最后回放访问轨迹，把它们与 FIFO、ARC、S3-FIFO 以及离线最优的 Belady MIN 比较。
#
# When the cache is full and a new request needs room, the engine must decide whom to evict. LRU evicts the sequence
# that was used longest ago, LFU the one used least often; the prefix caches of vLLM and SGLang both use LRU. A wrong
# victim costs recomputation: when the evicted prefix comes back, its tokens are prefilled again. In this notebook
# you write both policies as objects that only choose and never change the cache, then the loop that evicts until a
# request fits (careful with shared blocks), then the same victims and the same eviction order on tensors of
# metadata without a Python loop, and finally you replay traces to compare them with FIFO, ARC, S3-FIFO and the
# offline optimum, Belady's MIN.
#
# ## Learning goals | 学习目标
#
# After this notebook you can:
# 1. write LRU and LFU exactly as the formulas rank victims, with a complete tie-break, as policy objects that
#    only choose and never change the cache;
# 2. free blocks for a new request by evicting one victim at a time, and refuse (changing nothing) when even
#    evicting everything allowed would not be enough;
# 3. compute the same victims and the same eviction order on tensors of metadata, without a Python loop, on any
#    device;
# 4. measure policies by replaying traces, and say how much of the gap between LRU and the offline optimum
#    (Belady's MIN) each one closes.
#
# 完成本 notebook 后，你能够：
# 1. 严格按照公式对受害者的排序实现 LRU 与 LFU（含完整的打破平局规则），把它们写成只做选择、从不修改缓存的策略对象；
# 2. 为新请求逐个驱逐受害者以腾出块；当驱逐所有允许驱逐的序列仍然不够时拒绝执行，且不做任何修改；
# 3. 在元数据张量上算出同样的受害者与同样的驱逐顺序，不写 Python 循环，可在任意设备上运行；
# 4. 通过回放访问轨迹来度量策略，并说出每个策略弥补了 LRU 与离线最优（Belady 的 MIN）之间差距的多少。
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
# 缓存中的序列 $s$ 带有 notebook 02 的元数据：$t_\text{last}(s)$（`last_access_step`，最近一次访问时的逻辑时钟）和 $\text{use\_count}(s)$（被使用的次数）。正在运行的请求是**受保护的**：它们的块被固定，永远不会被驱逐。在未受保护的序列集合 $S$ 上：
#
# $$\text{victim}_\text{LRU} = \arg\min_{s \in S}\; \big(t_\text{last}(s),\ \text{seq\_id}(s)\big)$$
#
# $$\text{victim}_\text{LFU} = \arg\min_{s \in S}\; \big(\text{use\_count}(s),\ t_\text{last}(s),\ \text{seq\_id}(s)\big)\quad\text{（按字典序比较）}$$
#
# LRU 押注“很久以前用过的，近期也不会再用”（新近度）；LFU 押注“很少用的，以后也很少用”（频率）。最后一项序列 id 只用来让答案唯一。
#
# **为什么 LFU 需要用新近度打破平局。** 许多序列的计数相同且很小：每个新进入的序列 `use_count` 都是 1。如果没有第二个键，LFU 只能按 id（也就是任意地）在它们之中挑选：它可能驱逐上一步刚进入的序列，却留下很久以前只用过一次、之后再也没用过的序列。以 $t_\text{last}$ 为第二个键后，LFU 在计数相同的序列之间就像 LRU 一样，最久没被访问的序列先离开。
#
# **The optimum.** For blocks of one size and a known future, Belady's MIN evicts the block whose next use lies
# farthest in the future; no policy has more hits on the same trace. It needs the future, so no engine can run
# it, but it is the ceiling every curve in the experiments is measured against.
#
# **最优策略。** 当所有块大小相同、且未来已知时，Belady 的 MIN 驱逐“下一次被使用离现在最远”的块；在同一条访问轨迹上，没有任何策略的命中数能超过它。它需要知道未来，因此没有推理引擎能运行它，但它是实验中每条曲线的上限。
#
# **How real engines do it.** vLLM (PagedAttention) keeps blocks whose requests have finished, with their
# prefix hash, in a queue of free blocks ordered so that the least recently used one is handed out, that is
# evicted, first; blocks of running requests have a positive reference count, are not in that queue and so
# are pinned. SGLang (RadixAttention) keeps cached prefixes in a radix tree and, when it needs room, puts the
# leaves in a heap keyed by last access time and evicts leaves that no running request locks, moving up the
# tree as parents become leaves. Both are the LRU of this notebook, applied to blocks or tree nodes instead of
# whole sequences.
#
# **真实引擎的做法。** vLLM（PagedAttention）把请求已结束、仍带有前缀哈希的块放在一个空闲块队列中，队列的顺序使最久未使用的块最先被分配出去，也就是最先被驱逐；运行中请求的块引用计数为正，不在该队列中，因此被固定。SGLang（RadixAttention）把缓存的前缀放在一棵基数树中；需要空间时，它把叶子节点放进按最近访问时刻排序的堆，驱逐没有被运行中请求锁住的叶子，父节点变成叶子后再继续向上。两者都是本 notebook 中的 LRU，只是作用在块或树节点上，而不是整个序列上。

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
# 下一个单元是 notebook 02 任务 2.1–2.4 的参考解答，本 notebook 用到其中的 API：`BlockAllocator`（`num_free`、`allocate_n`、`free`）、`SequenceKVCache`（`seq_id`、`block_table`、`num_tokens`、`last_access_step`、`use_count`、`num_blocks()`）以及 `PagedKVCacheManager`（`allocator`、`sequences`、`allocate_for_sequence`、`fork`、`touch`、`release(seq) -> int`）。
# 它是只读的：运行它，不要修改。注意 `release` 返回真正回到空闲池的块数：与另一个序列共享的块（`fork` 之后）要等到它的最后一个所有者被释放时才会回到池中。

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
# changes `sequences`, the metadata in it, or `protected`, and never returns a protected id.
#
# Write the base class `EvictionPolicy`. Its `select_victim` is abstract (it raises `NotImplementedError`; that
# line is given). Fill in TODO 3.1.1, the helper every subclass uses, `candidates(sequences, protected)`: the ids
# that may be evicted, that is, the keys of `sequences` that are not in `protected`, as a **new sorted list** on
# every call (so that subclasses see ids in a fixed order and may change the list they get). Ids in `protected`
# that are not cached are simply ignored.
#
# ## 任务 3.1：EvictionPolicy（2 分）
#
# 本课程的每个策略都有相同的接口：`select_victim(sequences, protected=frozenset()) -> str | None`，其中 `sequences` 把每个 `seq_id` 映射到它的 `SequenceKVCache`，`protected` 是运行中请求的 id 集合。策略**只做选择**：它从不修改 `sequences`、其中的元数据或 `protected`，也从不返回受保护的 id。
#
# 编写基类 `EvictionPolicy`。它的 `select_victim` 是抽象方法（抛出 `NotImplementedError`，这一行已给出）。请完成 TODO 3.1.1，即每个子类都会用到的辅助方法 `candidates(sequences, protected)`：可以被驱逐的 id，也就是 `sequences` 中不在 `protected` 里的键，每次调用都返回一个**新的有序列表**（这样子类看到的 id 顺序是确定的，并且可以修改拿到的列表）。`protected` 中不在缓存里的 id 直接忽略。

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
        # TODO 3.1.1: return the keys of sequences that are not in protected, as a new sorted list.
        # 提示：遍历 sequences 的键，跳过 protected 中的 id，再用 sorted(...) 排序；sorted 每次都返回一个新列表。
        # Hint: go over the keys of sequences, skip the ids in protected, and sort with sorted(...), which returns
        #       a new list every time.
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
    protected = {"b", "zz"}
    assert_plain_equal(policy.candidates(cache, protected), ["a", "c", "d"], "EvictionPolicy().candidates(cache, {'b', 'zz'})")
    assert_plain_equal([list(cache), sorted(protected)], [["c", "a", "d", "b"], ["b", "zz"]],
                       "[list(cache), sorted(protected)] after candidates(cache, {'b', 'zz'}) (a policy must not change them)")
    assert_plain_equal(policy.candidates(cache, frozenset({"a", "b", "c", "d"})), [], "candidates(cache, every id protected)")
    assert_plain_equal(policy.candidates({}), [], "EvictionPolicy().candidates({})")
    mixed = {seq_id: SequenceKVCache(seq_id) for seq_id in ["s10", "s2", "b", "B"]}
    assert_plain_equal(policy.candidates(mixed), ["B", "b", "s10", "s2"],
                       "EvictionPolicy().candidates(cache of s10, s2, b, B) (sorted as Python sorts strings)")
    first, second = policy.candidates(cache), policy.candidates(cache)
    first.append("changed by the caller")
    assert_plain_equal(second, ["a", "b", "c", "d"],
                       "the list of a second candidates(cache) call after the caller appended to the first (a new list each call)")
    assert_raises(NotImplementedError, "EvictionPolicy().select_victim(cache)", policy.select_victim, cache)

    ### BEGIN HIDDEN TESTS
    import random

    from course.checks import replay


    class FirstCandidate(EvictionPolicy):
        def select_victim(self, sequences, protected=frozenset()):
            ids = self.candidates(sequences, protected)
            return ids[0] if ids else None


    rng = random.Random(3101)
    for case in range(100):
        ids = rng.sample([f"req-{i:03d}" for i in range(200)], rng.randint(0, 25))
        # One replay makes every sequence of the case (fields by position: block_table, num_tokens,
        # last_access_step).
        made = [("__call__", (i, [], 0, rng.randint(0, 9))) for i in ids]
        cache = dict(zip(ids, replay(SequenceKVCache, made)))
        chosen = set(rng.sample(ids, rng.randint(0, len(ids)))) | {"ghost"}
        passed = frozenset(chosen) if case % 2 else set(chosen)
        # What the calls should give comes from the arguments as they were before the student's code got them, and
        # "unchanged" is checked by identity and exact type, never by what the student's objects say of themselves.
        before, all_ids = list(cache.items()), sorted(cache)
        expected = [i for i in all_ids if i not in chosen]
        result = EvictionPolicy().candidates(cache, passed)
        assert_plain_equal(result, expected, f"EvictionPolicy().candidates on random case {case}", reveal=False)
        unchanged = len(cache) == len(before) and all(type(key) is str and key == old_key and value is old_value
                                                      for (key, value), (old_key, old_value) in zip(cache.items(), before))
        assert unchanged and set(passed) == chosen, \
            f"EvictionPolicy().candidates changed its arguments on random case {case}"
        assert_plain_equal(FirstCandidate().select_victim(cache, passed), expected[0] if expected else None,
                           f"a subclass that returns candidates(...)[0], random case {case}", reveal=False)
        assert_plain_equal(EvictionPolicy().candidates(cache), all_ids,
                           f"EvictionPolicy().candidates without protected ids, random case {case}", reveal=False)
    # Ids whose plain string order is neither their length's, their numbers' nor a case-blind one.
    ids = ["s10", "s2", "B", "a", "s1", "Z9", "z10", "req-9", "req-10"]
    expected = sorted(ids)
    cache = dict(zip(ids, replay(SequenceKVCache, [("__call__", (i,)) for i in ids])))
    assert_plain_equal(EvictionPolicy().candidates(cache, {"a"}), [i for i in expected if i != "a"],
                       f"EvictionPolicy().candidates(cache of {ids}, {{'a'}}): sorted as strings are", reveal=False)
    assert_raises(NotImplementedError, "EvictionPolicy().select_victim({}, frozenset())", EvictionPolicy().select_victim,
                  {}, frozenset())
    ### END HIDDEN TESTS


_check_task3_1_EvictionPolicy()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task3_2_LRUPolicy_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 3.2: LRUPolicy (3 points)
#
# $$\text{victim}_\text{LRU} = \arg\min_{s \in S}\; \big(t_\text{last}(s),\ \text{seq\_id}(s)\big)$$
#
# Write `LRUPolicy`, a subclass of `EvictionPolicy`, whose `select_victim(sequences, protected=frozenset())`
# returns the unprotected `seq_id` (the id, a `str`, not its `SequenceKVCache`) with the smallest
# `last_access_step`; on a tie, the smaller id, whatever order the dict holds them in; `None` when no sequence can
# be chosen. `use_count` plays no part in LRU. Choosing changes nothing: the victim stays in `sequences` (evicting it
# is the caller's job, Task 3.4). Fill in TODO 3.2.1 and TODO 3.2.2.
#
# ## 任务 3.2：LRUPolicy（3 分）
#
# $$\text{victim}_\text{LRU} = \arg\min_{s \in S}\; \big(t_\text{last}(s),\ \text{seq\_id}(s)\big)$$
#
# 编写 `EvictionPolicy` 的子类 `LRUPolicy`，其 `select_victim(sequences, protected=frozenset())` 返回未受保护的序列中 `last_access_step` 最小的 `seq_id`（返回 id，即一个 `str`，而不是它的 `SequenceKVCache`）；平局时返回较小的 id，不论字典中它们的先后顺序；没有可选序列时返回 `None`。LRU 不看 `use_count`。选择不做任何修改（`sequences`、其中的元数据和 `protected` 都保持不变）：受害者仍留在 `sequences` 中（驱逐它是调用者的事，见任务 3.4）。
# 请完成 TODO 3.2.1 和 TODO 3.2.2。

# %% nbgrader={"grade": false, "grade_id": "task3_2_LRUPolicy", "locked": false, "schema_version": 3, "solution": true, "task": false}
class LRUPolicy(EvictionPolicy):
    """Least recently used: evict the smallest (last_access_step, seq_id) among unprotected sequences."""

    def select_victim(self, sequences, protected=frozenset()):
        """Return the LRU victim's seq_id (str), or None when every sequence is protected or none is cached.

        Args:
            sequences: dict from seq_id to SequenceKVCache; not changed.
            protected: set or frozenset of seq_ids that must not be chosen.
        """
        candidates = self.candidates(sequences, protected)
        # TODO 3.2.1: return None when there is no candidate.
        # 提示：candidates 是一个列表；列表为空时没有可驱逐的序列。
        # Hint: candidates is a list; an empty list means that nothing can be evicted.
        ### BEGIN SOLUTION
        if not candidates:
            return None
        ### END SOLUTION
        # TODO 3.2.2: return the candidate with the smallest (last_access_step, seq_id).
        # 提示：min 的 key 可以返回一个元组，元组按字典序比较：先比第一项，相等时再比第二项。
        # Hint: the key of min may return a tuple; tuples compare lexicographically: the first items, then the second.
        ### BEGIN SOLUTION
        return min(candidates, key=lambda seq_id: (sequences[seq_id].last_access_step, seq_id))
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task3_2_LRUPolicy", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that LRUPolicy evicts the smallest (last_access_step, seq_id) among the unprotected sequences."""


def _check_task3_2_LRUPolicy():
    from course.checks import assert_plain_equal, check_type


    def cache_of(rows):
        """A dict of SequenceKVCache from (seq_id, last_access_step, use_count) rows, in this order."""
        return {seq_id: SequenceKVCache(seq_id, last_access_step=step, use_count=count) for seq_id, step, count in rows}


    def snapshot(cache):
        return [(k, s.seq_id, s.last_access_step, s.use_count, s.num_tokens, len(s.block_table)) for k, s in cache.items()]


    cache = cache_of([("a", 5, 1), ("c", 2, 4), ("b", 2, 3), ("d", 9, 0)])
    assert issubclass(LRUPolicy, EvictionPolicy), "LRUPolicy must be a subclass of EvictionPolicy"
    before = snapshot(cache)
    assert_plain_equal(LRUPolicy().select_victim(cache), "b",
                       "LRUPolicy().select_victim(a: step 5, c: step 2, b: step 2, d: step 9) (a tie goes to the smaller id)")
    assert_plain_equal(snapshot(cache), before, "the cache after select_victim (a policy only chooses: it must not change the cache)")
    assert_plain_equal(LRUPolicy().select_victim(cache, frozenset({"b"})), "c", "LRUPolicy().select_victim(same, protected={'b'})")
    assert_plain_equal(LRUPolicy().select_victim(cache_of([("x", 7, 9), ("y", 3, 50), ("z", 4, 0)])), "y",
                       "LRUPolicy().select_victim(x: step 7, y: step 3 count 50, z: step 4 count 0) (use_count plays no part)")
    assert_plain_equal(LRUPolicy().select_victim(cache_of([("q", 3, 5), ("p", 3, 9), ("r", 3, 1)])), "p",
                       "LRUPolicy().select_victim(q: step 3 count 5, p: step 3 count 9, r: step 3 count 1) (a tie of steps goes "
                       "to the smaller id: use_count plays no part)")
    assert_plain_equal(LRUPolicy().select_victim(cache, frozenset({"a", "b", "c"})), "d",
                       "LRUPolicy().select_victim(a, b, c, d, protected={'a', 'b', 'c'}) (one candidate left)")
    check_type(LRUPolicy().select_victim(cache, frozenset(cache)), type(None), "LRUPolicy().select_victim(every id protected)")
    check_type(LRUPolicy().select_victim({}), type(None), "LRUPolicy().select_victim({})")
    policy = LRUPolicy()
    cache = cache_of([("a", 5, 1), ("b", 2, 3), ("c", 7, 0)])
    assert_plain_equal(policy.select_victim(cache), "b", "policy.select_victim(a: step 5, b: step 2, c: step 7)")
    cache["b"].last_access_step = 8
    assert_plain_equal(policy.select_victim(cache), "a",
                       "the same policy's select_victim after b was used at step 8 (each call ranks the cache as it "
                       "is now)")
    cache["d"] = SequenceKVCache("d", last_access_step=1)
    assert_plain_equal(policy.select_victim(cache), "d", "the same policy's select_victim after adding d: step 1")

    # Ids in protected that are not cached are ignored (3.1): they protect nothing, nor do they fill the cache.
    assert_plain_equal(LRUPolicy().select_victim(cache_of([("s1", 4, 2)]), frozenset({"ghost"})), "s1",
                       "LRUPolicy().select_victim(s1, protected={'ghost'}) ('ghost' is not cached: s1 is a candidate)")
    assert_plain_equal(LRUPolicy().select_victim(cache_of([("s1", 4, 2), ("s2", 6, 1)]), frozenset({"s1", "ghost"})),
                       "s2", "LRUPolicy().select_victim(s1, s2, protected={'s1', 'ghost'}) (s2 is left)")
    check_type(LRUPolicy().select_victim(cache_of([("s1", 4, 2)]), frozenset({"s1", "ghost"})), type(None),
               "LRUPolicy().select_victim(s1, protected={'s1', 'ghost'}) (every cached id is protected)")

    # A policy changes nothing: a protected set given as a set (not a frozenset) keeps every id, uncached ones too.
    protected = {"s1", "ghost"}
    assert_plain_equal(LRUPolicy().select_victim(cache_of([("s1", 4, 2), ("s2", 6, 1)]), protected), "s2",
                       "LRUPolicy().select_victim(s1, s2, protected=set {'s1', 'ghost'})")
    assert_plain_equal(sorted(protected), ["ghost", "s1"], "the protected set {'s1', 'ghost'} after LRUPolicy()"
                       ".select_victim(s1, s2, protected) (a policy never changes protected)")

    ### BEGIN HIDDEN TESTS
    import random

    from course.checks import replay


    def oracle_lru(steps, protected):
        """The LRU victim of ``steps`` (seq_id -> last_access_step), the test's own rows."""
        best = None
        for seq_id in sorted(steps, reverse=True):
            if seq_id in protected:
                continue
            if best is None or steps[seq_id] <= steps[best]:
                best = seq_id
        return best


    rng = random.Random(3202)
    for case in range(100):
        ids = rng.sample([f"s{i}" for i in range(40)], rng.randint(1, 14))
        top = [3, 8, 2**40][case % 3]
        # One replay makes every sequence of the case (fields by position: block_table, num_tokens,
        # last_access_step, use_count).
        made = [("__call__", (i, [], rng.randint(0, 50), rng.randint(0, top), rng.randint(0, 6))) for i in ids]
        cache = dict(zip(ids, replay(SequenceKVCache, made)))
        protected = frozenset(rng.sample(ids, rng.randint(0, len(ids) - 1 if case % 5 else len(ids))))
        # The expected victims come from the test's own rows (what `made` gave each sequence), never from the
        # objects the (given, but rebindable) SequenceKVCache made.
        steps = {args[0]: args[3] for _, args in made}
        before = snapshot(cache)
        expected, expected_unprotected = oracle_lru(steps, protected), oracle_lru(steps, frozenset())
        result = LRUPolicy().select_victim(cache, set(protected) if case % 2 else protected)
        check_type(result, type(expected), f"LRUPolicy().select_victim on random case {case}")
        assert_plain_equal(result, expected, f"LRUPolicy().select_victim on random case {case}", reveal=False)
        assert_plain_equal(snapshot(cache), before, f"the cache after LRUPolicy().select_victim on random case {case}",
                           reveal=False)
        assert_plain_equal(LRUPolicy().select_victim(cache), expected_unprotected,
                           f"LRUPolicy().select_victim without protected ids, random case {case}", reveal=False)
    policy = LRUPolicy()
    cache = cache_of([("x", 7, 1), ("y", 3, 50), ("z", 4, 0)])
    assert_plain_equal([policy.select_victim(cache), policy.select_victim(cache)], ["y", "y"],
                       "the same LRUPolicy object called twice on the same cache (a policy keeps no state)")
    # One policy object while the cache changes: a sequence used, one added, one removed (the expected victims come
    # from the test's own rows, seq_id -> last_access_step).
    rng = random.Random(3212)
    policy = LRUPolicy()
    rows = {f"s{i}": rng.randint(0, 20) for i in range(6)}
    cache = {seq_id: SequenceKVCache(seq_id, last_access_step=step) for seq_id, step in rows.items()}
    step = 21
    for turn in range(12):
        protected = frozenset(rng.sample(sorted(rows), rng.randint(0, 2)))
        expected = min((t, k) for k, t in rows.items() if k not in protected)[1]
        assert_plain_equal(policy.select_victim(cache, protected), expected,
                           f"one LRUPolicy object after {turn} changes of the cache", reveal=False)
        change, seq_id = turn % 3, rng.choice(sorted(rows))
        if change == 0:
            cache[seq_id].last_access_step = rows[seq_id] = step
        elif change == 1:
            seq_id = f"n{turn}"
            rows[seq_id] = rng.randint(0, step)
            cache[seq_id] = SequenceKVCache(seq_id, last_access_step=rows[seq_id])
        else:
            del rows[seq_id], cache[seq_id]
        step += 1
    ### END HIDDEN TESTS


_check_task3_2_LRUPolicy()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task3_3_LFUPolicy_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 3.3: LFUPolicy (4 points)
#
# $$\text{victim}_\text{LFU} = \arg\min_{s \in S}\; \big(\text{use\_count}(s),\ t_\text{last}(s),\ \text{seq\_id}(s)\big)$$
#
# Write `LFUPolicy`, a subclass of `EvictionPolicy`: the unprotected sequence with the smallest `use_count`;
# on a tie of counts, the least recently used one (smallest `last_access_step`); then the smaller id, whatever
# order the dict holds them in; `None` when no sequence can be chosen. As in Task 3.2 it returns the id and changes
# nothing. Fill in TODO 3.3.1 and TODO 3.3.2; the formula section explains why the second key is there.
#
# ## 任务 3.3：LFUPolicy（4 分）
#
# $$\text{victim}_\text{LFU} = \arg\min_{s \in S}\; \big(\text{use\_count}(s),\ t_\text{last}(s),\ \text{seq\_id}(s)\big)$$
#
# 编写 `EvictionPolicy` 的子类 `LFUPolicy`：返回未受保护的序列中 `use_count` 最小者；计数相同时取最久未使用者（`last_access_step` 最小）；再相同时取较小的 id，不论字典中它们的先后顺序；没有可选序列时返回 `None`。与任务 3.2 一样，它返回 id，且不做任何修改（`sequences`、其中的元数据和 `protected` 都保持不变）。
# 请完成 TODO 3.3.1 和 TODO 3.3.2；为什么需要第二个键，见“公式”一节中“为什么 LFU 需要用新近度打破平局”。

# %% nbgrader={"grade": false, "grade_id": "task3_3_LFUPolicy", "locked": false, "schema_version": 3, "solution": true, "task": false}
class LFUPolicy(EvictionPolicy):
    """Least frequently used: evict the smallest (use_count, last_access_step, seq_id) among unprotected sequences."""

    def select_victim(self, sequences, protected=frozenset()):
        """Return the LFU victim's seq_id (str), or None when every sequence is protected or none is cached.

        Args:
            sequences: dict from seq_id to SequenceKVCache; not changed.
            protected: set or frozenset of seq_ids that must not be chosen.
        """
        candidates = self.candidates(sequences, protected)
        # TODO 3.3.1: return None when there is no candidate.
        # 提示：与 LRUPolicy 相同：candidates 为空列表时没有可驱逐的序列。
        # Hint: as in LRUPolicy: an empty candidates list means that nothing can be evicted.
        ### BEGIN SOLUTION
        if not candidates:
            return None
        ### END SOLUTION
        # TODO 3.3.2: return the candidate with the smallest (use_count, last_access_step, seq_id).
        # 提示：key 返回三元组 (use_count, last_access_step, seq_id)；元组逐项比较，前一项相等时才看后一项。
        # Hint: let the key return the triple (use_count, last_access_step, seq_id); a later item counts only on a tie.
        ### BEGIN SOLUTION
        return min(candidates, key=lambda seq_id: (sequences[seq_id].use_count, sequences[seq_id].last_access_step, seq_id))
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task3_3_LFUPolicy", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
"""Check that LFUPolicy evicts the smallest (use_count, last_access_step, seq_id) among the unprotected sequences."""


def _check_task3_3_LFUPolicy():
    from course.checks import assert_plain_equal, check_type


    def cache_of(rows):
        """A dict of SequenceKVCache from (seq_id, last_access_step, use_count) rows, in this order."""
        return {seq_id: SequenceKVCache(seq_id, last_access_step=step, use_count=count) for seq_id, step, count in rows}


    def snapshot(cache):
        return [(k, s.seq_id, s.last_access_step, s.use_count, s.num_tokens, len(s.block_table)) for k, s in cache.items()]


    cache = cache_of([("a", 9, 1), ("b", 4, 1), ("c", 1, 5), ("d", 4, 1)])
    assert issubclass(LFUPolicy, EvictionPolicy), "LFUPolicy must be a subclass of EvictionPolicy"
    before = snapshot(cache)
    assert_plain_equal(LFUPolicy().select_victim(cache), "b",
                       "LFUPolicy().select_victim(a: count 1 step 9, b: count 1 step 4, c: count 5 step 1, d: count 1 step 4)")
    assert_plain_equal(snapshot(cache), before, "the cache after select_victim (a policy only chooses: it must not change the cache)")
    assert_plain_equal(LFUPolicy().select_victim(cache, frozenset({"b", "d"})), "a",
                       "LFUPolicy().select_victim(same, protected={'b', 'd'})")
    assert_plain_equal(LFUPolicy().select_victim(cache, frozenset({"a", "b", "d"})), "c",
                       "LFUPolicy().select_victim(same, protected={'a', 'b', 'd'}) (one candidate left)")
    assert_plain_equal(LFUPolicy().select_victim(cache_of([("old", 1, 2), ("new", 8, 2)])), "old",
                       "LFUPolicy().select_victim(old: count 2 step 1, new: count 2 step 8) (a tie of counts goes to the least recent)")
    assert_plain_equal(LFUPolicy().select_victim(cache_of([("d", 4, 1), ("b", 4, 1), ("a", 6, 1)])), "b",
                       "LFUPolicy().select_victim(d, b: count 1 step 4, a: count 1 step 6, in this dict order) (then the smaller id)")
    check_type(LFUPolicy().select_victim(cache, {"a", "b", "c", "d"}), type(None), "LFUPolicy().select_victim(every id protected)")
    check_type(LFUPolicy().select_victim({}), type(None), "LFUPolicy().select_victim({})")
    policy = LFUPolicy()
    cache = cache_of([("a", 5, 2), ("b", 2, 1), ("c", 7, 3)])
    assert_plain_equal(policy.select_victim(cache), "b",
                       "policy.select_victim(a: count 2 step 5, b: count 1 step 2, c: count 3 step 7)")
    cache["b"].use_count, cache["b"].last_access_step = 2, 8
    assert_plain_equal(policy.select_victim(cache), "a",
                       "the same policy's select_victim after b was used again (count 2, step 8; each call ranks the "
                       "cache as it is now)")
    cache["d"] = SequenceKVCache("d", last_access_step=9, use_count=0)
    assert_plain_equal(policy.select_victim(cache), "d",
                       "the same policy's select_victim after adding d: count 0 step 9")

    # Ids in protected that are not cached are ignored (3.1): they protect nothing, nor do they fill the cache.
    assert_plain_equal(LFUPolicy().select_victim(cache_of([("s1", 4, 2)]), frozenset({"ghost"})), "s1",
                       "LFUPolicy().select_victim(s1, protected={'ghost'}) ('ghost' is not cached: s1 is a candidate)")
    assert_plain_equal(LFUPolicy().select_victim(cache_of([("s1", 4, 2), ("s2", 6, 1)]), frozenset({"s1", "ghost"})),
                       "s2", "LFUPolicy().select_victim(s1, s2, protected={'s1', 'ghost'}) (s2 is left)")
    check_type(LFUPolicy().select_victim(cache_of([("s1", 4, 2)]), frozenset({"s1", "ghost"})), type(None),
               "LFUPolicy().select_victim(s1, protected={'s1', 'ghost'}) (every cached id is protected)")

    # A policy changes nothing: a protected set given as a set (not a frozenset) keeps every id, uncached ones too.
    protected = {"s1", "ghost"}
    assert_plain_equal(LFUPolicy().select_victim(cache_of([("s1", 4, 2), ("s2", 6, 1)]), protected), "s2",
                       "LFUPolicy().select_victim(s1, s2, protected=set {'s1', 'ghost'})")
    assert_plain_equal(sorted(protected), ["ghost", "s1"], "the protected set {'s1', 'ghost'} after LFUPolicy()"
                       ".select_victim(s1, s2, protected) (a policy never changes protected)")

    ### BEGIN HIDDEN TESTS
    import random

    from course.checks import replay


    def oracle_lfu(counted, protected):
        """The LFU victim of ``counted`` (seq_id -> (use_count, last_access_step)), the test's own rows."""
        rows = sorted((*counted[k], k) for k in counted if k not in protected)
        return rows[0][2] if rows else None


    rng = random.Random(3303)
    for case in range(100):
        ids = rng.sample([f"s{i}" for i in range(40)], rng.randint(1, 14))
        top = [3, 10, 2**40][case % 3]
        # One replay makes every sequence of the case (fields by position: block_table, num_tokens,
        # last_access_step, use_count).
        made = [("__call__", (i, [], 0, rng.randint(0, top), rng.randint(0, 3))) for i in ids]
        cache = dict(zip(ids, replay(SequenceKVCache, made)))
        protected = frozenset(rng.sample(ids, rng.randint(0, len(ids) - 1 if case % 5 else len(ids))))
        # The expected victim comes from the test's own rows (what `made` gave each sequence), never from the
        # objects the (given, but rebindable) SequenceKVCache made.
        counted = {args[0]: (args[4], args[3]) for _, args in made}
        before = snapshot(cache)
        expected = oracle_lfu(counted, protected)
        result = LFUPolicy().select_victim(cache, set(protected) if case % 2 else protected)
        check_type(result, type(expected), f"LFUPolicy().select_victim on random case {case}")
        assert_plain_equal(result, expected, f"LFUPolicy().select_victim on random case {case}", reveal=False)
        assert_plain_equal(snapshot(cache), before, f"the cache after LFUPolicy().select_victim on random case {case}",
                           reveal=False)
    # Equal counts, the smaller id used more recently: only the recency tie-break gets this right.
    cache = cache_of([("a", 30, 1), ("b", 10, 1), ("c", 20, 1), ("d", 5, 2)])
    assert_plain_equal(LFUPolicy().select_victim(cache), "b", "LFUPolicy().select_victim(a: 1@30, b: 1@10, c: 1@20, d: 2@5)",
                       reveal=False)
    # One policy object while the cache changes: a sequence used, one added, one removed (the expected victims come
    # from the test's own rows, seq_id -> (use_count, last_access_step)).
    rng = random.Random(3313)
    policy = LFUPolicy()
    rows = {f"s{i}": (rng.randint(0, 3), rng.randint(0, 20)) for i in range(6)}
    cache = {seq_id: SequenceKVCache(seq_id, last_access_step=step, use_count=count)
             for seq_id, (count, step) in rows.items()}
    step = 21
    for turn in range(12):
        protected = frozenset(rng.sample(sorted(rows), rng.randint(0, 2)))
        expected = min((*rows[k], k) for k in rows if k not in protected)[2]
        assert_plain_equal(policy.select_victim(cache, protected), expected,
                           f"one LFUPolicy object after {turn} changes of the cache", reveal=False)
        change, seq_id = turn % 3, rng.choice(sorted(rows))
        if change == 0:
            rows[seq_id] = (rows[seq_id][0] + 1, step)
            cache[seq_id].use_count, cache[seq_id].last_access_step = rows[seq_id]
        elif change == 1:
            seq_id = f"n{turn}"
            rows[seq_id] = (rng.randint(0, 3), rng.randint(0, step))
            cache[seq_id] = SequenceKVCache(seq_id, last_access_step=rows[seq_id][1], use_count=rows[seq_id][0])
        else:
            del rows[seq_id], cache[seq_id]
        step += 1
    ### END HIDDEN TESTS


_check_task3_3_LFUPolicy()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task3_4_evict_until_fit_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 3.4: evict_until_fit (5 points)
#
# A new request needs `blocks_needed` free blocks. Write `evict_until_fit(manager, policy, blocks_needed,
# protected=frozenset())`:
#
# 1. (TODO 3.4.1) `blocks_needed < 0` raises `ValueError`; if `manager.allocator.num_free >= blocks_needed`
#    already (an empty cache asked for no more blocks than it holds, for instance), evict nothing and return `[]`;
# 2. (TODO 3.4.2) otherwise, if even releasing **every** unprotected sequence would not bring `num_free` up to
#    `blocks_needed`, raise `RuntimeError` **and change nothing** (no sequence evicted);
# 3. (TODO 3.4.3) otherwise ask `policy.select_victim(manager.sequences, protected)` for one victim at a time,
#    release it with `manager.release(...)`, and stop as soon as `num_free >= blocks_needed`; return the victims'
#    ids in the order they were evicted.
#
# Use any object with a `select_victim` method as the policy; do not rank sequences yourself.
#
# **The trap in step 2: shared blocks.** A block shared by several sequences (after `fork`) goes back to the pool
# only when **all** of them are released. So summing `num_blocks()` over the unprotected sequences overcounts: a
# block counts as freeable exactly when every reference to it (its `ref_count`) comes from an unprotected sequence.
# Example (the first case of test 3.4.2): 6 blocks of 4 tokens; `parent` holds 4 blocks that its fork `child`
# shares, `other` holds 1 block, so 1 block is free. With `child` protected, evicting `parent` frees nothing and
# evicting `other` frees 1 block: at most 2 blocks can be free, and asking for 3 must raise at once.
#
# Graded in parts: 3.4.1 arguments and nothing to do (1) · 3.4.2 refusing, shared blocks included (2) ·
# 3.4.3 evicting in the policy's order (2).
#
# ## 任务 3.4：evict_until_fit（5 分）
#
# 新请求需要 `blocks_needed` 个空闲块。编写 `evict_until_fit(manager, policy, blocks_needed, protected=frozenset())`：
#
# 1. （TODO 3.4.1）`blocks_needed < 0` 时抛出 `ValueError`；若 `manager.allocator.num_free >= blocks_needed` 已经成立（例如向空缓存要的块不超过它的总块数），不驱逐任何序列，返回 `[]`；
# 2. （TODO 3.4.2）否则，若即使释放**所有**未受保护的序列也无法使 `num_free` 达到 `blocks_needed`，抛出 `RuntimeError`，**且不做任何修改**（不驱逐任何序列）；
# 3. （TODO 3.4.3）否则每次向 `policy.select_victim(manager.sequences, protected)` 要一个受害者，用 `manager.release(...)` 释放它，一旦 `num_free >= blocks_needed` 就停止；按驱逐顺序返回受害者的 id 列表。
#
# 策略可以是任何带 `select_victim` 方法的对象；不要自己给序列排序。
#
# **第 2 步的陷阱：共享块。** 被多个序列共享的块（`fork` 之后）只有在它们**全部**被释放后才回到池中。所以把未受保护序列的 `num_blocks()` 加起来会多算：一个块可以被释放，当且仅当它的每一个引用（即 `ref_count` 个引用）都来自未受保护的序列。
# 例子（测试 3.4.2 的第一个用例）：6 个块、每块 4 个 token；`parent` 占 4 个块，它分叉出的 `child` 共享这 4 个块，`other` 占 1 个块，因此有 1 个空闲块。`child` 受保护时，驱逐 `parent` 释放不了任何块，驱逐 `other` 释放 1 个块：最多只能有 2 个空闲块，要求 3 个块时必须立即抛出异常。
#
# 分部分计分：3.4.1 参数与无需驱逐（1 分）· 3.4.2 拒绝执行，包括共享块（2 分）· 3.4.3 按策略的顺序驱逐（2 分）。

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
    allocator = manager.allocator
    # TODO 3.4.1: raise ValueError when blocks_needed < 0; return [] when enough blocks are free already.
    # 提示：先检查参数，再比较 allocator.num_free 与 blocks_needed。
    # Hint: check the argument first, then compare allocator.num_free with blocks_needed.
    ### BEGIN SOLUTION
    if blocks_needed < 0:
        raise ValueError(f"blocks_needed must be >= 0, got {blocks_needed}")
    if allocator.num_free >= blocks_needed:
        return []
    ### END SOLUTION
    # TODO 3.4.2: count the freeable blocks; raise RuntimeError (before evicting anything) when
    #   allocator.num_free plus that count is below blocks_needed.
    # 提示：用字典按 block.block_id 数出每个块被多少个未受保护的序列引用；只有计数等于 block.ref_count 的块才会被释放。
    #       不要把未受保护序列的 num_blocks() 直接相加：共享块会被算多次，也可能根本释放不了。
    # Hint: in a dict keyed by block.block_id, count how many unprotected sequences reference each block; only a
    #       block whose count equals its block.ref_count is freed. Do not add up num_blocks(): shared blocks would
    #       be counted several times, or counted although they stay.
    ### BEGIN SOLUTION
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
    ### END SOLUTION
    # TODO 3.4.3: evict the policy's victims one at a time until blocks_needed blocks are free; return their ids.
    # 提示：只要空闲块还不够就继续循环；每一轮向策略要一个受害者，通过 manager 释放这个序列，并记下它的 id。
    # Hint: keep looping while too few blocks are free; in each round ask the policy for one victim, release that sequence
    #       through the manager, and record its id.
    ### BEGIN SOLUTION
    evicted = []
    while allocator.num_free < blocks_needed:
        victim = policy.select_victim(manager.sequences, protected)
        if victim is None:
            raise RuntimeError("the policy chose no victim although enough blocks are freeable")
        manager.release(manager.sequences[victim])
        evicted.append(victim)
    return evicted
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task3_4_1_arguments", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that evict_until_fit rejects a negative request and evicts nothing when enough blocks are free."""


def _check_task3_4_1_arguments():
    from course.checks import assert_plain_equal, assert_raises


    # BEGIN SHARED ListedOrder (authoring/shared/03_lru_lfu.py)
    class ListedOrder:
        """A policy for this test: evicts the first unprotected id of a fixed list."""

        def __init__(self, order):
            self.order = order

        def select_victim(self, sequences, protected=frozenset()):
            return next((seq_id for seq_id in self.order if seq_id in sequences and seq_id not in protected), None)
    # END SHARED


    def small_cache():
        """10 blocks of 4 tokens: a has 2 blocks, b 3, c 1, d 2; 2 blocks are free."""
        manager = PagedKVCacheManager(num_blocks=10, block_size=4)
        for seq_id, num_tokens in [("a", 8), ("b", 12), ("c", 4), ("d", 8)]:
            manager.allocate_for_sequence(seq_id, num_tokens)
        return manager


    def state(manager):
        return [sorted(manager.sequences), manager.allocator.num_free]


    order = ListedOrder(["c", "a", "b", "d"])
    manager = small_cache()
    assert_plain_equal(evict_until_fit(manager, order, 2), [], "evict_until_fit(cache, order c,a,b,d, 2) (2 blocks are already free)")
    assert_plain_equal(evict_until_fit(manager, order, 0), [], "evict_until_fit(cache, order, 0)")
    assert_plain_equal(state(manager), [["a", "b", "c", "d"], 2], "[sequences, num_free] after asking for 2, then 0 blocks")
    assert_raises(ValueError, "evict_until_fit(cache, order, -1)", evict_until_fit, manager, order, -1)
    assert_plain_equal(state(manager), [["a", "b", "c", "d"], 2], "[sequences, num_free] after evict_until_fit(cache, order, -1) raised")
    assert_plain_equal(evict_until_fit(PagedKVCacheManager(num_blocks=2, block_size=4), order, 2), [],
                       "evict_until_fit(empty cache of 2 blocks, order, 2)")

    ### BEGIN HIDDEN TESTS
    for needed in (-5, -1):
        assert_raises(ValueError, f"evict_until_fit(cache, order, {needed}) on a full cache", evict_until_fit,
                      small_cache(), order, needed, frozenset({"a"}))
    full = PagedKVCacheManager(num_blocks=4, block_size=2)
    full.allocate_for_sequence("x", 8)
    assert_raises(ValueError, "evict_until_fit(full cache, order, -1)", evict_until_fit, full, ListedOrder(["x"]), -1)
    assert_plain_equal(state(full), [["x"], 0], "[sequences, num_free] of a full cache after evict_until_fit(..., -1) raised",
                       reveal=False)
    empty = PagedKVCacheManager(num_blocks=3, block_size=4)
    assert_plain_equal(evict_until_fit(empty, ListedOrder([]), 3), [], "evict_until_fit(empty cache of 3 blocks, ..., 3)",
                       reveal=False)
    ### END HIDDEN TESTS


_check_task3_4_1_arguments()

# %% nbgrader={"grade": true, "grade_id": "test_task3_4_2_refuses", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that evict_until_fit raises RuntimeError, evicting nothing, when too few blocks are freeable (shared blocks included), and only then."""


def _check_task3_4_2_refuses():
    from course.checks import assert_plain_equal, assert_raises


    # BEGIN SHARED ListedOrder (authoring/shared/03_lru_lfu.py)
    class ListedOrder:
        """A policy for this test: evicts the first unprotected id of a fixed list."""

        def __init__(self, order):
            self.order = order

        def select_victim(self, sequences, protected=frozenset()):
            return next((seq_id for seq_id in self.order if seq_id in sequences and seq_id not in protected), None)
    # END SHARED


    def state(manager):
        refs = [manager.allocator.get_block(i).ref_count for i in range(manager.allocator.num_blocks)]
        return [sorted(manager.sequences), manager.allocator.num_free, refs]


    # The example of the task: parent's 4 blocks are shared with the protected child.
    manager = PagedKVCacheManager(num_blocks=6, block_size=4)
    parent = manager.allocate_for_sequence("parent", 16)
    manager.fork(parent, "child")
    manager.allocate_for_sequence("other", 4)
    before = state(manager)
    assert_raises(RuntimeError, "evict_until_fit(parent's 4 blocks shared with protected child, other 1 block, 1 free, need 3)",
                  evict_until_fit, manager, ListedOrder(["parent", "other", "child"]), 3, frozenset({"child"}))
    assert_plain_equal(state(manager), before,
                       "[sequences, num_free, ref_counts] after that RuntimeError (evict_until_fit changed the cache before raising)")
    # A chain of forks: root, mid and leaf share 2 blocks; with leaf protected they stay.
    manager = PagedKVCacheManager(num_blocks=5, block_size=2)
    root = manager.allocate_for_sequence("root", 4)
    manager.fork(manager.fork(root, "mid"), "leaf")
    before = state(manager)
    assert_raises(RuntimeError, "evict_until_fit(root -> mid -> leaf share 2 blocks, 3 free, leaf protected, need 4)",
                  evict_until_fit, manager, ListedOrder(["root", "mid", "leaf"]), 4, frozenset({"leaf"}))
    assert_plain_equal(state(manager), before, "[sequences, num_free, ref_counts] after that RuntimeError (a chain of forks)")
    # Without shared blocks: a (2 blocks) and c (1 block) may go, 2 blocks are free: at most 5.
    manager = PagedKVCacheManager(num_blocks=10, block_size=4)
    for seq_id, num_tokens in [("a", 8), ("b", 12), ("c", 4), ("d", 8)]:
        manager.allocate_for_sequence(seq_id, num_tokens)
    before = state(manager)
    assert_raises(RuntimeError, "evict_until_fit(a 2 blocks, b 3, c 1, d 2, 2 free, need 6, protected={'b', 'd'})",
                  evict_until_fit, manager, ListedOrder(["c", "a", "b", "d"]), 6, frozenset({"b", "d"}))
    assert_plain_equal(state(manager), before, "[sequences, num_free, ref_counts] after that RuntimeError (nothing may be evicted)")
    # An empty cache has nothing to evict: asking it for more blocks than it holds is refused too.
    manager = PagedKVCacheManager(num_blocks=3, block_size=4)
    assert_raises(RuntimeError, "evict_until_fit(an empty cache of 3 blocks, need 5)", evict_until_fit, manager,
                  ListedOrder([]), 5)
    assert_plain_equal(state(manager), [[], 3, [0, 0, 0]], "[sequences, num_free, ref_counts] after that RuntimeError (an empty cache)")

    ### BEGIN HIDDEN TESTS
    import copy
    import random

    from course.checks import assert_accepts


    # BEGIN SHARED state (authoring/shared/03_lru_lfu.py)
    def state(manager):
        """The visible parts' state (sorted ids, num_free, every block's ref_count), with num_free and every block
        of the allocator read in one replay: the hidden parts of 3.4.2 and 3.4.3 use this copy."""
        from course.checks import replay

        # num_free, then every block of the allocator (each comes with its attributes), in one replay.
        num_free, *blocks = replay(manager.allocator, [("num_free", None)]
                                   + [("get_block", (i,)) for i in range(manager.allocator.num_blocks)])
        return [sorted(manager.sequences), num_free, [block.ref_count for block in blocks]]
    # END SHARED


    # BEGIN SHARED PlainCache, random_manager (authoring/shared/03_lru_lfu.py)
    class PlainCache:
        """The test's own copy of a manager's sequences and blocks, read once before the call: the hidden oracles of
        3.4.2 and 3.4.3 release and ask their policies here, in the judge, never on a copy in the student's process
        (whose code could watch that copy and learn the expected victims)."""

        class Sequence:
            def __init__(self, last_access_step, block_ids):
                self.last_access_step, self.block_ids = last_access_step, block_ids

        def __init__(self, manager):
            from course.checks import replay

            # num_free, then every block of the allocator (each comes with its attributes), in one replay.
            self.num_free, *blocks = replay(manager.allocator, [("num_free", None)]
                                            + [("get_block", (i,)) for i in range(manager.allocator.num_blocks)])
            self.ref_counts = [block.ref_count for block in blocks]
            self.sequences = {seq_id: self.Sequence(seq.last_access_step, [block.block_id for block in seq.block_table])
                              for seq_id, seq in manager.sequences.items()}

        def release(self, seq_id):
            """What PagedKVCacheManager.release does: one reference fewer to each block, a block at 0 is free."""
            for block_id in self.sequences.pop(seq_id).block_ids:
                self.ref_counts[block_id] -= 1
                self.num_free += self.ref_counts[block_id] == 0

        def state(self):
            """`state(manager)` of the manager this copy follows."""
            return [sorted(self.sequences), self.num_free, list(self.ref_counts)]

        def feasible(self, needed, protected):
            """Whether releasing every unprotected sequence leaves ``needed`` blocks free (this copy unchanged)."""
            trial = copy.deepcopy(self)
            for seq_id in [k for k in trial.sequences if k not in protected]:
                trial.release(seq_id)
            return trial.num_free >= needed

        def evict(self, policy, needed, protected):
            """The victims ``policy`` picks until ``needed`` blocks are free, released here; None when infeasible."""
            if not self.feasible(needed, protected):
                return None
            victims = []
            while self.num_free < needed:
                victims.append(policy.select_victim(self.sequences, protected))
                self.release(victims[-1])
            return victims

    def random_manager(rng, manager_class, with_steps=False):
        """A manager of ``manager_class`` (the notebook's PagedKVCacheManager) made by random allocations and forks, and
        checked against the test's own count of what those calls make: the free blocks, and each sequence's blocks with
        how many sequences hold each. The oracles read the manager through ``PlainCache``: this check keeps that copy
        the test's own data, even where a cell rebinds the given class (a fork that shares nothing would hide every
        question about shared blocks). With ``with_steps``, each sequence then gets a random last_access_step. Returns
        the manager and its PlainCache, the copy the oracle reads."""
        num_blocks, block_size = rng.randint(6, 30), rng.choice([2, 4])
        manager = manager_class(num_blocks=num_blocks, block_size=block_size)
        free, tables, tags = num_blocks, {}, 0  # tables: seq_id -> the test's own tags of its blocks.
        for index in range(rng.randint(1, 9)):
            seq_id = f"r{index}"
            if tables and rng.random() < 0.35:
                parent = rng.choice(sorted(tables))
                manager.fork(manager.sequences[parent], seq_id)
                tables[seq_id] = list(tables[parent])
            elif rng.randint(1, 12) <= (room := free * block_size):
                num_tokens = rng.randint(1, min(12, room))
                manager.allocate_for_sequence(seq_id, num_tokens)
                count = -(-num_tokens // block_size)
                tables[seq_id] = list(range(tags, tags + count))
                tags, free = tags + count, free - count
        steps = {seq_id: rng.randint(0, 6) for seq_id in tables} if with_steps else {}
        for seq_id, step in steps.items():
            manager.sequences[seq_id].last_access_step = step
        plain = PlainCache(manager)

        def renamed(block_ids_of):
            """Each sequence's blocks renamed in the order they first appear (sequences in sorted order): equal for two
            managers exactly when they share the same blocks in the same way, whatever the ids."""
            names = {}
            return {seq_id: [names.setdefault(block, len(names)) for block in block_ids_of[seq_id]]
                    for seq_id in sorted(block_ids_of)}

        holders = {}  # The test's tag -> how many sequences hold it.
        for table in tables.values():
            for tag in table:
                holders[tag] = holders.get(tag, 0) + 1
        built = (len(plain.ref_counts) == num_blocks and plain.num_free == free
                 and renamed({seq_id: seq.block_ids for seq_id, seq in plain.sequences.items()}) == renamed(tables)
                 and all(plain.ref_counts[block_id] == holders[tag] for seq_id, table in tables.items()
                         for block_id, tag in zip(plain.sequences[seq_id].block_ids, table))
                 and all(plain.sequences[seq_id].last_access_step == step for seq_id, step in steps.items()))
        assert built, (f"the given PagedKVCacheManager({num_blocks}, {block_size}) holds after {len(tables)} allocations and "
                       "forks what allocate_for_sequence and fork do not make (keep the given class as it is)")
        return manager, plain
    # END SHARED


    class PolicyAsked(Exception):
        """Raised by `Questions`: evict_until_fit asked for more victims than an eviction loop can need."""


    class Questions:
        """ListedOrder's answers, for one question more than there are sequences (the last answer, None, says that no
        unprotected sequence is left); one more, past what any eviction loop needs, raises PolicyAsked (TODO 3.4.3 is
        not checked here). The cases that must raise and those that must not get the same kind of policy, so that it
        tells the student's code nothing about which case it is."""

        def __init__(self, order):
            self._order, self._left = list(order), len(order) + 1

        def select_victim(self, sequences, protected=frozenset()):
            if self._left == 0:
                raise PolicyAsked("evict_until_fit asked the policy more often than there are sequences, plus one")
            self._left -= 1
            return next((seq_id for seq_id in self._order if seq_id in sequences and seq_id not in protected), None)


    rng = random.Random(3402)
    raised = asked = 0
    for case in range(60):
        manager, plain = random_manager(rng, PagedKVCacheManager)
        ids = sorted(manager.sequences)
        protected = frozenset(rng.sample(ids, rng.randint(0, len(ids))))
        policy = Questions(rng.sample(ids, len(ids)))
        needed = rng.randint(0, len(plain.ref_counts) + 1)  # The blocks as the test counted them.
        if plain.feasible(needed, protected):
            # Evicting can meet this request, so it is not refused: evict_until_fit asks the policy for victims
            # (or raises NotImplementedError where TODO 3.4.3 is not written yet). Only a RuntimeError refuses.
            if needed > plain.num_free:
                asked += 1
                assert_accepts(f"evict_until_fit on random case {case}, where evicting unprotected sequences frees "
                               "enough blocks (count each block that only unprotected sequences reference),",
                               evict_until_fit, manager, policy, needed, protected, refusals=(RuntimeError,))
            continue
        raised += 1
        before = state(manager)
        assert_raises(RuntimeError, f"evict_until_fit on random case {case} (not enough freeable blocks)",
                      evict_until_fit, manager, policy, needed, protected)
        assert state(manager) == before, f"evict_until_fit changed the cache before raising on random case {case}"
    assert raised > 9 and asked > 9, "the hidden cases must raise, and must not, often enough"
    # A chain of forks with the middle one protected.
    manager = PagedKVCacheManager(num_blocks=5, block_size=2)
    root = manager.allocate_for_sequence("root", 4)
    manager.fork(manager.fork(root, "mid"), "leaf")
    before = state(manager)
    assert_raises(RuntimeError, "evict_until_fit(root -> mid -> leaf share 2 blocks, mid protected, need 4)",
                  evict_until_fit, manager, ListedOrder(["root", "mid", "leaf"]), 4, frozenset({"mid"}))
    assert state(manager) == before, "evict_until_fit changed the cache before raising (a chain of forks)"
    ### END HIDDEN TESTS


_check_task3_4_2_refuses()

# %% nbgrader={"grade": true, "grade_id": "test_task3_4_3_evicts_in_policy_order", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that evict_until_fit evicts the policy's victims one at a time and stops as soon as enough blocks are free."""


def _check_task3_4_3_evicts_in_policy_order():
    from course.checks import assert_plain_equal


    # BEGIN SHARED ListedOrder (authoring/shared/03_lru_lfu.py)
    class ListedOrder:
        """A policy for this test: evicts the first unprotected id of a fixed list."""

        def __init__(self, order):
            self.order = order

        def select_victim(self, sequences, protected=frozenset()):
            return next((seq_id for seq_id in self.order if seq_id in sequences and seq_id not in protected), None)
    # END SHARED


    def small_cache():
        """10 blocks of 4 tokens: a has 2 blocks, b 3, c 1, d 2; 2 blocks are free."""
        manager = PagedKVCacheManager(num_blocks=10, block_size=4)
        for seq_id, num_tokens in [("a", 8), ("b", 12), ("c", 4), ("d", 8)]:
            manager.allocate_for_sequence(seq_id, num_tokens)
        return manager


    order = ListedOrder(["c", "a", "b", "d"])
    manager = small_cache()
    assert_plain_equal(evict_until_fit(manager, order, 5), ["c", "a"], "evict_until_fit(cache, order c,a,b,d, 5)")
    assert_plain_equal([sorted(manager.sequences), manager.allocator.num_free], [["b", "d"], 5],
                       "[sequences left, num_free] after evict_until_fit(cache, order c,a,b,d, 5) (stop as soon as 5 are free)")
    manager = small_cache()
    assert_plain_equal(evict_until_fit(manager, order, 6, frozenset({"a"})), ["c", "b"],
                       "evict_until_fit(cache, order c,a,b,d, 6, protected={'a'})")
    manager = small_cache()
    assert_plain_equal(evict_until_fit(manager, order, 5, frozenset({"b", "d"})), ["c", "a"],
                       "evict_until_fit(cache, order c,a,b,d, 5, protected={'b', 'd'}) (2 free + 3 freeable is enough)")
    # Shared blocks: evicting parent frees nothing while child holds its blocks; other's block is enough.
    manager = PagedKVCacheManager(num_blocks=6, block_size=4)
    parent = manager.allocate_for_sequence("parent", 16)
    manager.fork(parent, "child")
    manager.allocate_for_sequence("other", 4)
    assert_plain_equal(evict_until_fit(manager, ListedOrder(["parent", "other", "child"]), 2, frozenset({"child"})),
                       ["parent", "other"], "evict_until_fit(parent shared with protected child, other, 1 free, need 2)")
    # When parent and child may both go, their shared blocks are freeable: releasing both frees 4.
    manager = PagedKVCacheManager(num_blocks=6, block_size=4)
    parent = manager.allocate_for_sequence("parent", 16)
    manager.fork(parent, "child")
    manager.allocate_for_sequence("other", 4)
    assert_plain_equal(evict_until_fit(manager, ListedOrder(["parent", "child", "other"]), 5),
                       ["parent", "child"], "evict_until_fit(parent and its fork child share 4 blocks, other 1, 1 free, need 5)")


    class ByCount:
        """Evicts the candidate at place len(sequences) mod the number of candidates: it counts every sequence of the
        manager, protected ones included, as a policy may (FairPolicy counts their blocks)."""

        def select_victim(self, sequences, protected=frozenset()):
            ids = sorted(k for k in sequences if k not in protected)
            return ids[len(sequences) % len(ids)] if ids else None


    assert_plain_equal(evict_until_fit(small_cache(), ByCount(), 4, frozenset({"a"})), ["c", "d"],
                       "evict_until_fit(cache, ByCount(), 4, protected={'a'}), a policy that counts every sequence it is "
                       "given: ask it with manager.sequences itself, protected sequences included")

    # Ids in protected that are not cached are ignored (3.1): here a protected id that is not cached leaves every
    # sequence evictable.
    manager = PagedKVCacheManager(num_blocks=4, block_size=4)
    manager.allocate_for_sequence("s1", 16)
    assert_plain_equal(evict_until_fit(manager, ListedOrder(["s1"]), 2, frozenset({"ghost"})), ["s1"],
                       "evict_until_fit(4 blocks, all held by s1, order s1, 2 blocks needed, protected={'ghost'}) "
                       "('ghost' is not cached: s1 can be evicted)")

    ### BEGIN HIDDEN TESTS
    import copy
    import random


    class Oldest:
        def select_victim(self, sequences, protected=frozenset()):
            rows = [(s.last_access_step, k) for k, s in sequences.items() if k not in protected]
            return min(rows)[1] if rows else None


    # BEGIN SHARED state (authoring/shared/03_lru_lfu.py)
    def state(manager):
        """The visible parts' state (sorted ids, num_free, every block's ref_count), with num_free and every block
        of the allocator read in one replay: the hidden parts of 3.4.2 and 3.4.3 use this copy."""
        from course.checks import replay

        # num_free, then every block of the allocator (each comes with its attributes), in one replay.
        num_free, *blocks = replay(manager.allocator, [("num_free", None)]
                                   + [("get_block", (i,)) for i in range(manager.allocator.num_blocks)])
        return [sorted(manager.sequences), num_free, [block.ref_count for block in blocks]]
    # END SHARED


    # BEGIN SHARED PlainCache, random_manager (authoring/shared/03_lru_lfu.py)
    class PlainCache:
        """The test's own copy of a manager's sequences and blocks, read once before the call: the hidden oracles of
        3.4.2 and 3.4.3 release and ask their policies here, in the judge, never on a copy in the student's process
        (whose code could watch that copy and learn the expected victims)."""

        class Sequence:
            def __init__(self, last_access_step, block_ids):
                self.last_access_step, self.block_ids = last_access_step, block_ids

        def __init__(self, manager):
            from course.checks import replay

            # num_free, then every block of the allocator (each comes with its attributes), in one replay.
            self.num_free, *blocks = replay(manager.allocator, [("num_free", None)]
                                            + [("get_block", (i,)) for i in range(manager.allocator.num_blocks)])
            self.ref_counts = [block.ref_count for block in blocks]
            self.sequences = {seq_id: self.Sequence(seq.last_access_step, [block.block_id for block in seq.block_table])
                              for seq_id, seq in manager.sequences.items()}

        def release(self, seq_id):
            """What PagedKVCacheManager.release does: one reference fewer to each block, a block at 0 is free."""
            for block_id in self.sequences.pop(seq_id).block_ids:
                self.ref_counts[block_id] -= 1
                self.num_free += self.ref_counts[block_id] == 0

        def state(self):
            """`state(manager)` of the manager this copy follows."""
            return [sorted(self.sequences), self.num_free, list(self.ref_counts)]

        def feasible(self, needed, protected):
            """Whether releasing every unprotected sequence leaves ``needed`` blocks free (this copy unchanged)."""
            trial = copy.deepcopy(self)
            for seq_id in [k for k in trial.sequences if k not in protected]:
                trial.release(seq_id)
            return trial.num_free >= needed

        def evict(self, policy, needed, protected):
            """The victims ``policy`` picks until ``needed`` blocks are free, released here; None when infeasible."""
            if not self.feasible(needed, protected):
                return None
            victims = []
            while self.num_free < needed:
                victims.append(policy.select_victim(self.sequences, protected))
                self.release(victims[-1])
            return victims

    def random_manager(rng, manager_class, with_steps=False):
        """A manager of ``manager_class`` (the notebook's PagedKVCacheManager) made by random allocations and forks, and
        checked against the test's own count of what those calls make: the free blocks, and each sequence's blocks with
        how many sequences hold each. The oracles read the manager through ``PlainCache``: this check keeps that copy
        the test's own data, even where a cell rebinds the given class (a fork that shares nothing would hide every
        question about shared blocks). With ``with_steps``, each sequence then gets a random last_access_step. Returns
        the manager and its PlainCache, the copy the oracle reads."""
        num_blocks, block_size = rng.randint(6, 30), rng.choice([2, 4])
        manager = manager_class(num_blocks=num_blocks, block_size=block_size)
        free, tables, tags = num_blocks, {}, 0  # tables: seq_id -> the test's own tags of its blocks.
        for index in range(rng.randint(1, 9)):
            seq_id = f"r{index}"
            if tables and rng.random() < 0.35:
                parent = rng.choice(sorted(tables))
                manager.fork(manager.sequences[parent], seq_id)
                tables[seq_id] = list(tables[parent])
            elif rng.randint(1, 12) <= (room := free * block_size):
                num_tokens = rng.randint(1, min(12, room))
                manager.allocate_for_sequence(seq_id, num_tokens)
                count = -(-num_tokens // block_size)
                tables[seq_id] = list(range(tags, tags + count))
                tags, free = tags + count, free - count
        steps = {seq_id: rng.randint(0, 6) for seq_id in tables} if with_steps else {}
        for seq_id, step in steps.items():
            manager.sequences[seq_id].last_access_step = step
        plain = PlainCache(manager)

        def renamed(block_ids_of):
            """Each sequence's blocks renamed in the order they first appear (sequences in sorted order): equal for two
            managers exactly when they share the same blocks in the same way, whatever the ids."""
            names = {}
            return {seq_id: [names.setdefault(block, len(names)) for block in block_ids_of[seq_id]]
                    for seq_id in sorted(block_ids_of)}

        holders = {}  # The test's tag -> how many sequences hold it.
        for table in tables.values():
            for tag in table:
                holders[tag] = holders.get(tag, 0) + 1
        built = (len(plain.ref_counts) == num_blocks and plain.num_free == free
                 and renamed({seq_id: seq.block_ids for seq_id, seq in plain.sequences.items()}) == renamed(tables)
                 and all(plain.ref_counts[block_id] == holders[tag] for seq_id, table in tables.items()
                         for block_id, tag in zip(plain.sequences[seq_id].block_ids, table))
                 and all(plain.sequences[seq_id].last_access_step == step for seq_id, step in steps.items()))
        assert built, (f"the given PagedKVCacheManager({num_blocks}, {block_size}) holds after {len(tables)} allocations and "
                       "forks what allocate_for_sequence and fork do not make (keep the given class as it is)")
        return manager, plain
    # END SHARED


    def oracle_evict(plain, policy, needed, protected):
        """The victims and the state after them, computed in the test on its own copy (None, None when infeasible)."""
        victims = plain.evict(policy, needed, protected)
        return (None, None) if victims is None else (victims, plain.state())


    def check_random_cases(seed, count, fewest_protected, choose_policy, what):
        """Evict on ``count`` random caches with the policy ``choose_policy(case, ids, rng)`` gives; fail at the first
        case whose victims or state differ from the oracle's."""
        rng = random.Random(seed)
        succeeded = 0
        for case in range(count):
            manager, plain = random_manager(rng, PagedKVCacheManager, with_steps=True)
            ids = sorted(manager.sequences)
            protected = frozenset(rng.sample(ids, rng.randint(fewest_protected, len(ids))))
            policy = choose_policy(case, ids, rng)
            needed = rng.randint(0, len(plain.ref_counts) + 1)  # The blocks as the test counted them.
            expected, after = oracle_evict(plain, policy, needed, protected)
            if expected is None:
                continue
            succeeded += 1
            assert_plain_equal(evict_until_fit(manager, policy, needed, protected), expected,
                               f"evict_until_fit{what} on random case {case}", reveal=False)
            assert state(manager) == after, f"evict_until_fit{what} left the cache in the wrong state on random case {case}"
        assert succeeded >= count // 3, "the hidden cases must succeed often enough"


    check_random_cases(3404, 60, 0, lambda case, ids, rng: Oldest() if case % 2 else ListedOrder(rng.sample(ids, len(ids))),
                       "")
    check_random_cases(3405, 30, 1, lambda case, ids, rng: ByCount(),
                       " with a policy that counts every sequence (manager.sequences itself, protected ones included)")
    ### END HIDDEN TESTS


_check_task3_4_3_evicts_in_policy_order()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task3_5_lru_victim_t_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Tensors of metadata | 元数据张量
#
# An engine with $10^5$ cached sequences does not loop over Python objects to find a victim. It keeps the
# metadata in columns: entry $i$ of every tensor describes the $i$-th seq_id **in sorted order**, and a bool
# `evictable` mask is False for protected sequences. With that layout, "the smaller id wins a tie" becomes
# "the smaller index wins a tie", and the tensor versions below must return exactly the dict versions' answers,
# ties included. No Python loop over sequences (the tests count torch operations on 8 and on 4,096 entries with
# `assert_no_python_loop`); the tensors may be on any device; values are any int64 (`torch.argmin` returns the
# first index of the minimum; a masked-out entry must never win, whatever value it holds). Two traps of large
# values: an int64 step of $2^{62}$ or more does not survive a trip through float64 (its last bits are lost, so
# different steps look equal), and the largest int64, $2^{63}-1$, may be a real value, not only your mask.
#
# 拥有 $10^5$ 个缓存序列的引擎不会遍历 Python 对象来找受害者。它把元数据存成列：每个张量的第 $i$ 项描述**排序后**第 $i$ 个 seq_id，布尔掩码 `evictable` 对受保护序列为 False。在这种布局下，“平局时较小的 id 获胜”就变成“平局时较小的下标获胜”，下面的张量版本必须与字典版本给出完全相同的答案，平局也一样。不允许对序列写 Python 循环（测试用 `assert_no_python_loop` 数出在 8 项和 4,096 项上各做了多少次 torch 运算）；张量可以在任意设备上；值可以是任意 int64（`torch.argmin` 返回最小值第一次出现的下标；被掩码排除的项无论取什么值都不能胜出）。大数值有两个陷阱：不小于 $2^{62}$ 的 int64 步数转成 float64 后会丢失末位（不同的步数看起来相等）；而 int64 的最大值 $2^{63}-1$ 也可能是真实的值，不只是你的掩码值。
#
# ## Task 3.5: lru_victim_t (3 points)
#
# Write `lru_victim_t(last_access_step, evictable) -> int`: the index $i$ with `evictable[i]` True and the
# smallest `last_access_step[i]`, the smallest such index on a tie, as a Python `int`; `-1` when no entry is
# evictable (two empty tensors included). Raise `ValueError` when the two tensors are not 1-D of the same length
# (checked first, even when no entry is evictable).
# Do not change the input tensors: they are the engine's metadata, so mask with the out-of-place `torch.where`, not
# with an in-place method such as `masked_fill_`. Fill in TODO 3.5.1 and TODO 3.5.2.
#
# ## 任务 3.5：lru_victim_t（3 分）
#
# 编写 `lru_victim_t(last_access_step, evictable) -> int`：在 `evictable[i]` 为 True 的下标中，返回 `last_access_step[i]` 最小的下标 $i$（平局时取最小的下标），类型为 Python `int`；没有可驱逐的项时（包括两个空张量）返回 `-1`。两个张量不是等长的一维张量时抛出 `ValueError`（最先检查，即使没有可驱逐的项也要检查）。不要修改输入的张量：它们是引擎的元数据，所以请用非原地的 `torch.where` 做掩码，而不是 `masked_fill_` 这样的原地方法。
# 请完成 TODO 3.5.1 和 TODO 3.5.2。

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
    # TODO 3.5.1: raise ValueError unless both tensors are 1-D of the same length.
    # 提示：tensor.dim() 是维数；两个一维张量的 shape 相等，长度就相等。
    # Hint: tensor.dim() is the number of dimensions; two 1-D tensors with equal shapes have equal lengths.
    ### BEGIN SOLUTION
    if last_access_step.dim() != 1 or evictable.shape != last_access_step.shape:
        raise ValueError(f"expected two 1-D tensors of the same length, got shapes "
                         f"{tuple(last_access_step.shape)} and {tuple(evictable.shape)}")
    ### END SOLUTION
    # TODO 3.5.2: return the evictable index with the smallest step (the smallest index on a tie), or -1.
    # 提示：用 torch.where 把受保护的项换成最大的 int64，它们就不会更小；torch.argmin 再取第一个最小值。但可驱逐项的步数本身
    #       也可能是最大的 int64，所以要检查 argmin 落在的项是否可驱逐，否则取第一个可驱逐的下标。不要转成 float：大的 int64
    #       会失去精度。
    # Hint: torch.where can put the largest int64 in place of the protected entries, so that they are never smaller, and
    #       torch.argmin takes the first minimum; an evictable step may be the largest int64 itself, so check that the argmin
    #       is evictable, else take the first evictable index. Do not go through float: large int64 values lose precision.
    ### BEGIN SOLUTION
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
        close = torch.tensor([2**62 + 1, 2**62], device=device)
        assert_plain_equal(lru_victim_t(close, torch.ones(2, dtype=torch.bool, device=device)), 1,
                           f"lru_victim_t([2**62 + 1, 2**62], all evictable) on {device} (equal as float64, not as int64)")
        largest = torch.tensor([2**63 - 1] * 3, device=device)
        assert_plain_equal(lru_victim_t(largest, torch.tensor([False, True, True], device=device)), 1,
                           f"lru_victim_t([2**63 - 1] * 3, evictable [F, T, T]) on {device} (a tie at the largest int64 goes to "
                           "the smaller evictable index)")
        assert_plain_equal(lru_victim_t(step, torch.zeros(4, dtype=torch.bool, device=device)), -1,
                           f"lru_victim_t(steps, nothing evictable) on {device}")
        assert_plain_equal(lru_victim_t(torch.zeros(0, dtype=torch.int64, device=device), torch.zeros(0, dtype=torch.bool, device=device)),
                           -1, f"lru_victim_t(empty tensors) on {device}")
        flags = torch.tensor([True, False, True, True], device=device)
        lru_victim_t(step, flags)
        assert_plain_equal([step.tolist(), flags.tolist()], [[7, 3, 9, 3], [True, False, True, True]],
                           f"[last_access_step, evictable] after lru_victim_t on {device} (lru_victim_t must not change its input)")
    assert_raises(ValueError, "lru_victim_t(4 steps, 3 flags)", lru_victim_t, torch.arange(4), torch.ones(3, dtype=torch.bool))
    assert_raises(ValueError, "lru_victim_t(steps of shape (2, 2), flags of shape (2, 2))", lru_victim_t,
                  torch.zeros(2, 2, dtype=torch.int64), torch.ones(2, 2, dtype=torch.bool))
    assert_raises(ValueError, "lru_victim_t(4 steps, flags of shape (4, 1)) (the same length, not the same shape)",
                  lru_victim_t, torch.arange(4), torch.ones(4, 1, dtype=torch.bool))
    assert_raises(ValueError, "lru_victim_t(steps of shape (2, 2), flags of shape (2, 2), all False) (checked even when "
                  "nothing is evictable)", lru_victim_t, torch.zeros(2, 2, dtype=torch.int64),
                  torch.zeros(2, 2, dtype=torch.bool))
    assert_raises(ValueError, "lru_victim_t(tensor(5), tensor(True)) (0-d tensors: a single number is not 1-D)",
                  lru_victim_t, torch.tensor(5), torch.tensor(True))
    small = (torch.arange(8).flip(0), torch.ones(8, dtype=torch.bool))
    large = (torch.arange(4096).flip(0), torch.ones(4096, dtype=torch.bool))
    assert_no_python_loop(lru_victim_t, small, large, "lru_victim_t")

    ### BEGIN HIDDEN TESTS
    import random


    def oracle_lru_index(steps, flags):
        best = -1
        for i in range(len(steps) - 1, -1, -1):
            if flags[i] and (best < 0 or steps[i] <= steps[best]):
                best = i
        return best


    rng = random.Random(3505)
    extremes = [-2**63, -1, 0, 2**40, 2**62, 2**62 + 1, 2**63 - 2, 2**63 - 1]
    for device in available_devices():
        for case in range(200):
            n = rng.randint(1, 30)
            steps = [(rng.choice(extremes) if case % 4 == 0 else rng.randint(0, 6)) for _ in range(n)]
            flags = [rng.random() < (0.7 if case % 7 else 0.05) for _ in range(n)]
            s = torch.tensor(steps, dtype=torch.int64, device=device)
            e = torch.tensor(flags, dtype=torch.bool, device=device)
            assert_plain_equal(lru_victim_t(s, e), oracle_lru_index(steps, flags),
                               f"lru_victim_t on random case {case} ({device})", reveal=False)
            assert s.cpu().tolist() == steps and e.cpu().tolist() == flags, f"lru_victim_t changed its input on random case {case}"
        # Agreement with the dict version: sorted seq_ids <-> indices.
        ids = sorted(f"seq-{i:04d}" for i in rng.sample(range(10000), 50))
        last_step = {i: rng.randint(0, 5) for i in ids}  # seq_id -> last_access_step, as the dict LRU reads it.
        protected = set(rng.sample(ids, 20))
        index = lru_victim_t(torch.tensor([last_step[i] for i in ids], device=device),
                             torch.tensor([i not in protected for i in ids], device=device))
        expected = min((step, k) for k, step in last_step.items() if k not in protected)[1]
        assert_plain_equal(ids[index], expected, f"seq_ids[lru_victim_t(...)] against the dict LRU ({device})", reveal=False)
        assert_raises(ValueError, f"lru_victim_t(2-D steps) on {device}", lru_victim_t,
                      torch.zeros(2, 2, dtype=torch.int64, device=device), torch.ones(2, 2, dtype=torch.bool, device=device))
        assert_raises(ValueError, f"lru_victim_t(1-D steps, 2-D flags) on {device}", lru_victim_t,
                      torch.zeros(4, dtype=torch.int64, device=device), torch.ones(2, 2, dtype=torch.bool, device=device))
        assert_plain_equal(lru_victim_t(torch.zeros(0, dtype=torch.int64, device=device), torch.zeros(0, dtype=torch.bool, device=device)),
                           -1, f"lru_victim_t(empty tensors) on {device}", reveal=False)
    ### END HIDDEN TESTS


_check_task3_5_lru_victim_t()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task3_6_lfu_victim_t_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 3.6: lfu_victim_t (4 points)
#
# Write `lfu_victim_t(use_count, last_access_step, evictable) -> int`: the evictable index with the smallest
# `(use_count[i], last_access_step[i], i)`, compared lexicographically; `-1` when none is evictable (three empty
# tensors included); `ValueError` when the three tensors are not 1-D of the same length (checked first, even when
# none is evictable). The tensors
# may be on any device. Do not change them: an in-place `use_count.masked_fill_(~evictable, ...)` would overwrite
# the engine's use counts, so mask out of place (`torch.where`). Fill in TODO 3.6.1 to TODO 3.6.3.
#
# **The trap: packed keys.** Do not fold the two keys into one number such as `use_count * 10**6 +
# last_access_step`. A logical clock passes $10^6$ after a million accesses, and then a sequence with more uses
# can rank below one with fewer (use count 1 at step 1,500,000 gives 2,500,000; use count 2 at step 20 gives
# 2,000,020). A larger factor only moves the problem: `use_count * 2**32 + last_access_step` overflows int64 once
# `use_count` reaches $2^{31}$, and the values may be any int64. Narrow the candidates key by key instead; the
# visible test shows both cases.
#
# ## 任务 3.6：lfu_victim_t（4 分）
#
# 编写 `lfu_victim_t(use_count, last_access_step, evictable) -> int`：在可驱逐的下标中返回 `(use_count[i], last_access_step[i], i)` 按字典序最小者；没有可驱逐项时（包括三个空张量）返回 `-1`；三个张量不是等长的一维张量时抛出 `ValueError`（最先检查，即使没有可驱逐项也要检查）。张量可以在任意设备上。不要修改这三个张量：原地的 `use_count.masked_fill_(~evictable, ...)` 会改写引擎记录的使用次数，所以请用非原地的 `torch.where` 做掩码。
# 请完成 TODO 3.6.1 到 TODO 3.6.3。
#
# **陷阱：把两个键合成一个数。** 例如 `use_count * 10**6 + last_access_step`。逻辑时钟在一百万次访问后就会超过 $10^6$，这时使用次数多的序列可能排在使用次数少的序列前面（使用次数 1、步数 1,500,000 得 2,500,000；使用次数 2、步数 20 得 2,000,020）。
# 换一个更大的系数也只是把问题挪了个地方：`use_count * 2**32 + last_access_step` 在 `use_count` 达到 $2^{31}$ 时就会让 int64 溢出，而这些值可以是任意 int64。应当逐个键地缩小候选范围；可见测试中展示了这两种情况。

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
    # TODO 3.6.1: raise ValueError unless the three tensors are 1-D of one length; return -1 when none is evictable.
    # 提示：与任务 3.5 相同的形状检查，这次是三个张量；evictable.any() 告诉你是否还有可驱逐的项。
    # Hint: the shape check of Task 3.5, for three tensors; evictable.any() tells whether anything is evictable.
    ### BEGIN SOLUTION
    if use_count.dim() != 1 or last_access_step.shape != use_count.shape or evictable.shape != use_count.shape:
        raise ValueError(f"expected three 1-D tensors of the same length, got shapes {tuple(use_count.shape)}, "
                         f"{tuple(last_access_step.shape)} and {tuple(evictable.shape)}")
    if not bool(evictable.any()):
        return -1
    ### END SOLUTION
    largest = torch.iinfo(use_count.dtype).max
    # TODO 3.6.2: the mask `tied` of the evictable entries with the fewest uses.
    # 提示：先在可驱逐的项上求 use_count 的最小值（受保护的项用 largest 代替），再把 evictable 与“等于这个最小值”相与。
    # Hint: take the minimum of use_count over the evictable entries (largest in place of the protected ones), then
    #       combine evictable with "equals that minimum".
    ### BEGIN SOLUTION
    fewest = torch.where(evictable, use_count, largest).min()
    tied = evictable & (use_count == fewest)
    ### END SOLUTION
    # TODO 3.6.3: among the tied entries, return the index with the smallest step, the lowest index on a tie.
    # 提示：与任务 3.5 一样：用 largest 屏蔽不在 tied 中的项后取 argmin，并检查结果是否在 tied 中（步数本身可能就是 largest）。
    # Hint: as in Task 3.5: mask the entries outside tied with largest, take the argmin, and check that it lies in tied
    #       (a step may be largest itself).
    ### BEGIN SOLUTION
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
        last = torch.tensor([3, 2**63 - 1, 2**63 - 1], device=device)
        assert_plain_equal(lfu_victim_t(torch.tensor([5, 5, 5], device=device), last, torch.tensor([False, True, True], device=device)), 1,
                           f"lfu_victim_t(use_count [5, 5, 5], step [3, 2**63 - 1, 2**63 - 1], evictable [F, T, T]) on {device}")
        both = torch.ones(2, dtype=torch.bool, device=device)
        assert_plain_equal(lfu_victim_t(torch.tensor([1, 2], device=device), torch.tensor([1_500_000, 20], device=device), both), 0,
                           f"lfu_victim_t(use_count [1, 2], step [1500000, 20]) on {device} (packed with 10**6, index 1 would win)")
        assert_plain_equal(lfu_victim_t(torch.tensor([3, 2**33], device=device), torch.tensor([2**33, 0], device=device), both), 0,
                           f"lfu_victim_t(use_count [3, 2**33], step [2**33, 0]) on {device} (packed with 2**32, int64 overflows)")
        assert_plain_equal(lfu_victim_t(torch.tensor([0, 2, 1], device=device), torch.tensor([5, 5, 5], device=device),
                                        torch.tensor([False, True, True], device=device)), 2,
                           f"lfu_victim_t(use_count [0, 2, 1], step [5, 5, 5], evictable [F, T, T]) on {device} "
                           "(the fewest uses among the evictable entries)")
        assert_plain_equal(lfu_victim_t(torch.tensor([1, 1], device=device), torch.tensor([2**62 + 1, 2**62], device=device), both), 1,
                           f"lfu_victim_t(use_count [1, 1], step [2**62 + 1, 2**62]) on {device} (equal as float64, not as int64)")
        assert_plain_equal(lfu_victim_t(count, step, torch.zeros(4, dtype=torch.bool, device=device)), -1,
                           f"lfu_victim_t(..., nothing evictable) on {device}")
        no_entries = torch.zeros(0, dtype=torch.int64, device=device)
        assert_plain_equal(lfu_victim_t(no_entries, no_entries.clone(), torch.zeros(0, dtype=torch.bool, device=device)), -1,
                           f"lfu_victim_t(three empty tensors) on {device} (none is evictable)")
        flags = torch.tensor([True, False, True, True], device=device)
        lfu_victim_t(count, step, flags)
        assert_plain_equal([count.tolist(), step.tolist(), flags.tolist()], [[1, 1, 4, 1], [9, 4, 1, 4], [True, False, True, True]],
                           f"[use_count, last_access_step, evictable] after lfu_victim_t on {device} "
                           "(lfu_victim_t must not change its input)")
    assert_raises(ValueError, "lfu_victim_t(4 counts, 3 steps, 4 flags)", lfu_victim_t,
                  torch.arange(4), torch.arange(3), torch.ones(4, dtype=torch.bool))
    assert_raises(ValueError, "lfu_victim_t(3 counts, 3 steps, 2 flags)", lfu_victim_t,
                  torch.arange(3), torch.arange(3), torch.ones(2, dtype=torch.bool))
    assert_raises(ValueError, "lfu_victim_t(three tensors of shape (2, 2))", lfu_victim_t, torch.zeros(2, 2, dtype=torch.int64),
                  torch.zeros(2, 2, dtype=torch.int64), torch.ones(2, 2, dtype=torch.bool))
    for steps_shape, flags_shape in (((4, 1), (4,)), ((4,), (1, 4))):
        assert_raises(ValueError, f"lfu_victim_t(4 counts, steps of shape {steps_shape}, flags of shape {flags_shape}) "
                      "(each of the three 1-D)", lfu_victim_t, torch.ones(4, dtype=torch.int64),
                      torch.arange(4).reshape(steps_shape), torch.ones(flags_shape, dtype=torch.bool))
    assert_raises(ValueError, "lfu_victim_t(4 counts, 3 steps, 4 flags all False) (checked even when nothing is "
                  "evictable)", lfu_victim_t, torch.arange(4), torch.arange(3), torch.zeros(4, dtype=torch.bool))
    for flag in (True, False):
        assert_raises(ValueError, f"lfu_victim_t(tensor(1), tensor(5), tensor({flag})) (0-d tensors: a single number is "
                      "not 1-D)", lfu_victim_t, torch.tensor(1), torch.tensor(5), torch.tensor(flag))
    small = (torch.zeros(8, dtype=torch.int64), torch.arange(8).flip(0), torch.ones(8, dtype=torch.bool))
    large = (torch.zeros(4096, dtype=torch.int64), torch.arange(4096).flip(0), torch.ones(4096, dtype=torch.bool))
    assert_no_python_loop(lfu_victim_t, small, large, "lfu_victim_t")

    ### BEGIN HIDDEN TESTS
    import random


    def oracle_lfu_index(counts, steps, flags):
        rows = [(counts[i], steps[i], i) for i in range(len(flags)) if flags[i]]
        return min(rows)[2] if rows else -1


    rng = random.Random(3606)
    extremes = [-2**63, -1, 0, 1, 2**31, 2**33, 2**40, 2**62, 2**62 + 1, 2**63 - 1]
    for device in available_devices():
        for case in range(200):
            n = rng.randint(1, 30)
            if case % 4 == 0:
                counts = [rng.choice(extremes) for _ in range(n)]
                steps = [rng.choice(extremes) for _ in range(n)]
            else:
                counts = [rng.randint(0, 2) for _ in range(n)]
                steps = [rng.randint(0, 4) * (1 if case % 3 else 10**6 + 1) for _ in range(n)]
            flags = [rng.random() < (0.7 if case % 7 else 0.05) for _ in range(n)]
            c = torch.tensor(counts, dtype=torch.int64, device=device)
            s = torch.tensor(steps, dtype=torch.int64, device=device)
            e = torch.tensor(flags, dtype=torch.bool, device=device)
            assert_plain_equal(lfu_victim_t(c, s, e), oracle_lfu_index(counts, steps, flags),
                               f"lfu_victim_t on random case {case} ({device})", reveal=False)
            assert c.cpu().tolist() == counts and s.cpu().tolist() == steps and e.cpu().tolist() == flags, \
                f"lfu_victim_t changed its input on random case {case}"
        ids = sorted(f"seq-{i:04d}" for i in rng.sample(range(10000), 50))
        # seq_id -> (last_access_step, use_count), as the dict LFU reads them.
        state = {i: (rng.randint(0, 5), rng.randint(1, 2)) for i in ids}
        protected = set(rng.sample(ids, 20))
        index = lfu_victim_t(torch.tensor([state[i][1] for i in ids], device=device),
                             torch.tensor([state[i][0] for i in ids], device=device),
                             torch.tensor([i not in protected for i in ids], device=device))
        expected = min((count, step, k) for k, (step, count) in state.items() if k not in protected)[2]
        assert_plain_equal(ids[index], expected, f"seq_ids[lfu_victim_t(...)] against the dict LFU ({device})", reveal=False)
        assert_raises(ValueError, f"lfu_victim_t(mask of another length) on {device}", lfu_victim_t,
                      torch.arange(3, device=device), torch.arange(3, device=device), torch.ones(2, dtype=torch.bool, device=device))
        assert_raises(ValueError, f"lfu_victim_t(2-D tensors) on {device}", lfu_victim_t,
                      torch.zeros(2, 2, dtype=torch.int64, device=device), torch.zeros(2, 2, dtype=torch.int64, device=device),
                      torch.ones(2, 2, dtype=torch.bool, device=device))
    ### END HIDDEN TESTS


_check_task3_6_lfu_victim_t()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task3_7_evict_order_t_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 3.7: evict_order_t (5 points)
#
# `evict_until_fit` asks for victims one at a time. With static metadata the whole order is one sort. Write
# `evict_order_t(keys, evictable, k) -> torch.Tensor`: `keys` is a non-empty list of 1-D int64 tensors (the
# first key decides, later keys break ties, the index breaks the last ties), e.g. `[last_access_step]` for LRU
# and `[use_count, last_access_step]` for LFU. Return the indices of the first `k` **evictable** entries in that
# order (protected entries are skipped, not counted among the `k`), as an int64 tensor on the keys' device; fewer
# than `k` when fewer are evictable (an empty tensor when none is). Raise `ValueError` for `k < 0`, an empty
# `keys` list, or tensors that are not 1-D of one length. Key values may be any int64, up to $2^{63}-1$: sort by each
# key as it is, since packing several keys into one number overflows. Do not change `keys` or `evictable`. No Python
# loop over the entries (a loop over the few keys is fine). Fill in TODO 3.7.1 to TODO 3.7.3.
#
# ## 任务 3.7：evict_order_t（5 分）
#
# `evict_until_fit` 每次只要一个受害者。元数据不变时，完整的驱逐顺序就是一次排序。编写 `evict_order_t(keys, evictable, k) -> torch.Tensor`：`keys` 是非空的一维 int64 张量列表（第一个键起决定作用，后面的键打破平局，最后由下标打破剩余的平局），例如 LRU 用 `[last_access_step]`，LFU 用 `[use_count, last_access_step]`。按该顺序返回前 `k` 个**可驱逐**项的下标（跳过受保护的项，它们不计入 `k`），类型为 int64 张量，放在与 keys 相同的设备上；可驱逐项少于 `k` 个时返回更少（没有时返回空张量）。`k < 0`、`keys` 为空列表、或张量不是等长的一维张量时抛出 `ValueError`。键的值可以是任意 int64，最大到 $2^{63}-1$：请直接按每个键的原值排序，把几个键合成一个数会溢出。
# 不要修改 `keys` 和 `evictable`。不允许对各项写 Python 循环（对少数几个键循环没有问题）。请完成 TODO 3.7.1 到 TODO 3.7.3。

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
    # TODO 3.7.1: raise ValueError for k < 0, an empty keys list, or tensors that are not 1-D of one length.
    # 提示：逐个检查：k、len(keys)，再看 evictable 是否一维、每个 key 的 shape 是否与 evictable 相同。
    # Hint: check k, then len(keys), then that evictable is 1-D and every key has evictable's shape.
    ### BEGIN SOLUTION
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if len(keys) == 0:
        raise ValueError("keys must hold at least one tensor")
    if evictable.dim() != 1 or any(key.shape != evictable.shape for key in keys):
        raise ValueError("keys and evictable must be 1-D tensors of one length")
    ### END SOLUTION
    order = torch.arange(evictable.shape[0], device=evictable.device)
    # TODO 3.7.2: reorder `order` by the keys, lexicographically, ties kept in index order.
    # 提示：稳定排序（torch.sort(..., stable=True)）保持相等元素原来的先后。先按**最后一个**键排、最后按第一个键排，就得到字典序
    #       （基数排序就是这样工作的）：每一轮按 `order` 当前顺序下该键的值重新排列 `order`。
    # Hint: a stable sort (torch.sort(..., stable=True)) keeps equal entries in their order. Sorting by the **last** key
    #       first and by the first key last gives the lexicographic order (this is how a radix sort works): each pass
    #       reorders `order` by the key's values taken in the current `order`.
    ### BEGIN SOLUTION
    for key in reversed(keys):
        order = order[torch.sort(key[order], stable=True).indices]
    ### END SOLUTION
    # TODO 3.7.3: drop the entries that are not evictable, then keep the first k.
    # 提示：先用布尔掩码 evictable[order] 过滤，再切片 [:k]；顺序反过来会把受保护的项算进 k 里。
    # Hint: filter with the bool mask evictable[order] first, then slice [:k]; the other way round counts protected
    #       entries among the k.
    ### BEGIN SOLUTION
    return order[evictable[order]][:k]
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task3_7_evict_order_t", "locked": true, "points": 5, "schema_version": 3, "solution": false, "task": false}
"""Check that evict_order_t lists the first k evictable indices in lexicographic key order, on every device."""


def _check_task3_7_evict_order_t():
    from course.checks import assert_no_python_loop, assert_plain_equal, assert_raises, assert_same_tensor
    from course.env import available_devices

    for device in available_devices():
        count = torch.tensor([1, 1, 4, 1, 0], device=device)
        step = torch.tensor([9, 4, 1, 4, 7], device=device)
        flags = torch.tensor([True, True, True, True, False], device=device)
        assert_same_tensor(evict_order_t([step], flags, 3), torch.tensor([2, 1, 3], device=device),
                           f"evict_order_t([step [9, 4, 1, 4, 7]], evictable [T, T, T, T, F], 3) on {device}")
        assert_same_tensor(evict_order_t([count, step], flags, 10), torch.tensor([1, 3, 0, 2], device=device),
                           f"evict_order_t([use_count [1, 1, 4, 1, 0], step], same mask, 10) on {device}")
        assert_same_tensor(evict_order_t([count, step], flags, 2), torch.tensor([1, 3], device=device),
                           f"evict_order_t([use_count, step], same mask, 2) on {device} (entry 4 comes first but is protected)")
        assert_same_tensor(evict_order_t([count, step], flags, 0), torch.tensor([], dtype=torch.int64, device=device),
                           f"evict_order_t(..., k=0) on {device}")
        assert_same_tensor(evict_order_t([count, step], torch.zeros(5, dtype=torch.bool, device=device), 3),
                           torch.tensor([], dtype=torch.int64, device=device), f"evict_order_t(..., nothing evictable, 3) on {device}")
        keys = [count, step]
        evict_order_t(keys, flags, 2)
        assert_plain_equal([key.tolist() for key in keys], [[1, 1, 4, 1, 0], [9, 4, 1, 4, 7]],
                           f"the list keys = [use_count, step] after evict_order_t(keys, ...) on {device} (evict_order_t must "
                           "not change keys, nor its order)")
        assert_plain_equal([count.tolist(), step.tolist(), flags.tolist()], [[1, 1, 4, 1, 0], [9, 4, 1, 4, 7], [True] * 4 + [False]],
                           f"[use_count, step, evictable] after evict_order_t on {device} (evict_order_t must not change its input)")
        huge = torch.tensor([2**62, 1, 2**62], device=device)
        assert_same_tensor(evict_order_t([huge, torch.tensor([2**63 - 1, 5, 0], device=device)], torch.ones(3, dtype=torch.bool, device=device), 3),
                           torch.tensor([1, 2, 0], device=device),
                           f"evict_order_t([[2**62, 1, 2**62], [2**63 - 1, 5, 0]], all evictable, 3) on {device} (packed keys overflow)")
    assert_raises(ValueError, "evict_order_t([], mask, 1)", evict_order_t, [], torch.ones(3, dtype=torch.bool), 1)
    assert_raises(ValueError, "evict_order_t([step], mask, -1)", evict_order_t, [torch.arange(3)], torch.ones(3, dtype=torch.bool), -1)
    assert_raises(ValueError, "evict_order_t([3 steps, 4 counts], mask of 3, 2)", evict_order_t,
                  [torch.arange(3), torch.arange(4)], torch.ones(3, dtype=torch.bool), 2)
    assert_raises(ValueError, "evict_order_t([a key of shape (2, 2)], mask of shape (2, 2), 1)", evict_order_t,
                  [torch.zeros(2, 2, dtype=torch.int64)], torch.ones(2, 2, dtype=torch.bool), 1)
    assert_raises(ValueError, "evict_order_t([tensor([5, 1, 0])], mask of 2, 5) (the mask's length is the keys')",
                  evict_order_t, [torch.tensor([5, 1, 0])], torch.ones(2, dtype=torch.bool), 5)
    assert_raises(ValueError, "evict_order_t([3 steps, 4 counts], mask of 3 all False, 2) (checked even when nothing "
                  "is evictable)", evict_order_t, [torch.arange(3), torch.arange(4)], torch.zeros(3, dtype=torch.bool), 2)
    assert_raises(ValueError, "evict_order_t([], mask, 0) (checked even when no victim is asked for)", evict_order_t, [],
                  torch.ones(3, dtype=torch.bool), 0)
    assert_raises(ValueError, "evict_order_t([tensor(5)], tensor(True), 1) (0-d tensors: a single number is not 1-D)",
                  evict_order_t, [torch.tensor(5)], torch.tensor(True), 1)
    ties, mask = torch.zeros(300, dtype=torch.int64), torch.arange(300) % 3 != 0
    unprotected = torch.nonzero(mask).flatten()  # Before the call, which gets the mask.
    assert_same_tensor(evict_order_t([ties, ties], mask, 300), unprotected,
                       "evict_order_t(two keys, 300 equal entries, every third protected, 300) (only the index orders them: "
                       "sort stably)")
    small = ([torch.zeros(8, dtype=torch.int64), torch.arange(8).flip(0)], torch.ones(8, dtype=torch.bool), 8)
    large = ([torch.zeros(4096, dtype=torch.int64), torch.arange(4096).flip(0)], torch.ones(4096, dtype=torch.bool), 4096)
    assert_no_python_loop(evict_order_t, small, large, "evict_order_t")

    ### BEGIN HIDDEN TESTS
    import functools
    import random


    def oracle_order(columns, flags, k):
        def compare(i, j):
            for column in columns:
                if column[i] != column[j]:
                    return -1 if column[i] < column[j] else 1
            return -1 if i < j else (1 if i > j else 0)
        chosen = sorted((i for i in range(len(flags)) if flags[i]), key=functools.cmp_to_key(compare))
        return chosen[:k]


    rng = random.Random(3707)
    extremes = [-2**63, -1, 0, 3, 2**40, 2**62, 2**62 + 1, 2**63 - 1]
    for device in available_devices():
        for case in range(150):
            n = rng.randint(0, 25)
            m = rng.randint(1, 3)
            if case % 4 == 0:
                columns = [[rng.choice(extremes) for _ in range(n)] for _ in range(m)]
            else:
                columns = [[rng.randint(0, 3) for _ in range(n)] for _ in range(m)]
            flags = [rng.random() < 0.75 for _ in range(n)]
            k = rng.randint(0, n + 2)
            keys = [torch.tensor(c, dtype=torch.int64, device=device) for c in columns]
            e = torch.tensor(flags, dtype=torch.bool, device=device)
            expected = torch.tensor(oracle_order(columns, flags, k), dtype=torch.int64, device=device)
            assert_same_tensor(evict_order_t(keys, e, k), expected,
                               f"evict_order_t on random case {case} ({m} keys, k={k}, {device})", reveal=False)
            assert [t.cpu().tolist() for t in keys] == columns and e.cpu().tolist() == flags, \
                f"evict_order_t changed its input on random case {case}"
        # Many equal keys: only the index may order them.
        ties = torch.zeros(300, dtype=torch.int64, device=device)
        mask = torch.arange(300, device=device) % 3 != 0
        unprotected = torch.nonzero(mask).flatten()
        assert_same_tensor(evict_order_t([ties, ties], mask, 300), unprotected,
                           f"evict_order_t(300 equal keys) on {device}", reveal=False)
        assert_raises(ValueError, f"evict_order_t(keys of two lengths) on {device}", evict_order_t,
                      [torch.arange(3, device=device), torch.arange(4, device=device)], torch.ones(3, dtype=torch.bool, device=device), 2)
        assert_raises(ValueError, f"evict_order_t(2-D key) on {device}", evict_order_t,
                      [torch.zeros(2, 2, dtype=torch.int64, device=device)], torch.ones(2, 2, dtype=torch.bool, device=device), 1)
        for mask, what in ((torch.ones(2, dtype=torch.bool, device=device), "a mask of 2 for keys of 3"),
                           (torch.ones(4, dtype=torch.bool, device=device), "a mask of 4 for keys of 3"),
                           (torch.ones(1, 3, dtype=torch.bool, device=device), "a mask of shape (1, 3)")):
            assert_raises(ValueError, f"evict_order_t([tensor([5, 1, 0])], {what}, 5) on {device}", evict_order_t,
                          [torch.tensor([5, 1, 0], device=device)], mask, 5)
    ### END HIDDEN TESTS


_check_task3_7_evict_order_t()

# %% [markdown]
# ## Experiments: replaying traces | 实验：回放访问轨迹
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
# `course.replay.replay(trace, capacity, policy)` 以块为单位回放访问轨迹：每个请求按顺序访问它的前缀块；块已在缓存中即为命中，否则为未命中并插入该块（缓存已有 `capacity` 个块时先驱逐一个）。每个块是一个单位（相当于只占一个块的 `SequenceKVCache`），所以你的策略对象可以直接接入：回放把记录字典交给它们，记录带有 `seq_id`、`last_access_step`（该次访问在访问轨迹中的位置）、`use_count`（插入以来的使用次数）和 `num_blocks()`；回放还会**保护**当前请求已经访问过的块，就像引擎固定运行中请求的块一样。
# `replay` 支持的策略有：快速的内置 LRU、LFU、FIFO 和 Belady 的 MIN，libCacheSim 的 ARC 与 S3-FIFO（`"lcs:ARC"`、`"lcs:S3FIFO"`，需要 `libcachesim` 包），以及任何带 `select_victim` 的对象，例如你写的类。你的类在 Python 中运行，每次驱逐调用一次 `select_victim`，所以下面的工作负载都很小。

# %%
import math
import time

import matplotlib.pyplot as plt
import numpy as np

from course import traces
from course.plots import gap_closed, label, plot_hit_ratio_curves
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
    name = policy if isinstance(policy, str) else policy.__name__
    try:
        return replay(trace, capacity, policy if isinstance(policy, str) else policy())
    except Exception as error:  # noqa: BLE001 - the experiment goes on without this policy.
        if name not in _reported:
            _reported.add(name)
            why = "not written yet" if isinstance(error, NotImplementedError) else f"{type(error).__name__}: {error}"
            print(f"{name} left out of this experiment ({why}).")
        return None


def hit_ratio(trace, capacity, policy):
    """The hit ratio of one replay, NaN when the policy raised."""
    result = run(trace, capacity, policy)
    return float("nan") if result is None else result.hit_ratio


def as_curves(capacities, ratios_by_label):
    """{label: {capacity: hit ratio}} for plot_hit_ratio_curves, leaving out policies that raised."""
    return {name: dict(zip(capacities, ratios)) for name, ratios in ratios_by_label.items()
            if not any(math.isnan(r) for r in ratios)}


for name, trace in WORKLOADS.items():
    print(f"{name:15s} {len(trace):4d} requests, {len(traces.flatten(trace)):5d} block references, "
          f"{distinct_blocks(trace):4d} distinct blocks")

# %% [markdown]
# ### Experiment 1: your policies inside the replay | 实验 1：把你的策略放进回放
#
# First a check: on the same trace and capacity, your `LRUPolicy` must give exactly the built-in LRU's hits. LRU
# never wants to evict a block of the current request anyway (those are the most recently used), so protection
# changes nothing. LFU is different: a block that the current request inserted a moment ago has `use_count` 1 and
# may be the least frequently used block in the cache. Your `LFUPolicy` skips it, because the replay protects it;
# the built-in LFU does not protect the current request's blocks and may evict it. So the two LFUs agree except
# where that happens; the last line of the output says whether it happened here.
#
# 先做一个检查：在相同的访问轨迹和容量下，你的 `LRUPolicy` 必须与内置 LRU 的命中数完全相同。LRU 本来就不会想驱逐当前请求的块（它们是最近使用的），所以保护不改变任何结果。LFU 不同：当前请求刚插入的块 `use_count` 为 1，可能正是缓存中使用次数最少的块。
# 你的 `LFUPolicy` 会跳过它，因为回放保护了它；内置 LFU 不保护当前请求的块，可能把它驱逐。所以两个 LFU 只在发生这种情况时才不一致；输出的最后一行说明这里是否发生了。

# %%
trace, capacity = WORKLOADS["Zipf documents"], 40
print(f"Zipf documents, capacity {capacity} blocks")
print(f"{'policy':16s} {'hits':>6s} {'misses':>7s} {'evictions':>10s} {'hit ratio':>10s} {'prefix-hit blocks':>18s} {'time (s)':>9s}")
results = {}
for name, policy in [("your LRUPolicy", LRUPolicy), ("built-in lru", "lru"),
                     ("your LFUPolicy", LFUPolicy), ("built-in lfu", "lfu")]:
    started = time.perf_counter()
    result = run(trace, capacity, policy)
    elapsed = time.perf_counter() - started
    results[name] = result
    if result is not None:
        print(f"{name:16s} {result.hits:6d} {result.misses:7d} {result.evictions:10d} {result.hit_ratio:10.3f} "
              f"{result.prefix_hit_blocks:18d} {elapsed:9.3f}")
if results["your LRUPolicy"] is not None:
    print("your LRUPolicy gives the built-in LRU's hits:", results["your LRUPolicy"].hits == results["built-in lru"].hits)
if results["your LFUPolicy"] is not None:
    print("your LFUPolicy minus the built-in LFU, in hits:", results["your LFUPolicy"].hits - results["built-in lfu"].hits)

# %% [markdown]
# ### Experiment 2: hit ratio against capacity | 实验 2：命中率与容量
#
# Three workloads, six policies, capacities from 10% to 100% of the distinct blocks (at 100% nothing is evicted and
# every policy has only the first-reference misses). The thin grey line is LRU at **every** capacity, computed in
# one pass from stack distances (LRU is a stack algorithm: a cache of $C+1$ blocks holds everything a cache of $C$
# blocks holds), with `course.replay.lru_hit_ratio_curve`; your LRU's markers must sit on it. The dashed black line
# is Belady's MIN, the ceiling. Below the plot, the cell prints by how many hits your `LFUPolicy` and the built-in LFU
# differ at each point (the reason is in experiment 1).
#
# 三个工作负载、六个策略，容量从不同块数的 10% 到 100%（100% 时没有驱逐，所有策略都只有首次访问的未命中）。细灰线是 LRU 在**每个**容量下的命中率，由 `course.replay.lru_hit_ratio_curve` 根据栈距离一次算出（LRU 是栈算法：$C+1$ 个块的缓存包含 $C$ 个块的缓存中的一切）；你的 LRU 的标记点必须落在这条线上。黑色虚线是 Belady 的 MIN，即上限。图下方，单元打印出每个点上你的 `LFUPolicy` 与内置 LFU 相差多少次命中（原因见实验 1）。

# %%
FRACTIONS = (0.1, 0.25, 0.5, 0.75, 1.0)
curves, lfu_differences = {}, {}
started = time.perf_counter()
fig, axes = plt.subplots(1, len(WORKLOADS), figsize=(15, 4.6))
for ax, (name, trace) in zip(axes, WORKLOADS.items()):
    distinct = distinct_blocks(trace)
    capacities = sorted({max(10, round(f * distinct)) for f in FRACTIONS})
    curves[name] = {"capacities": capacities}
    for policy_name, policy in POLICIES.items():
        curves[name][policy_name] = [hit_ratio(trace, c, policy) for c in capacities]
    built_in_lfu = [hit_ratio(trace, c, "lfu") for c in capacities]
    references = len(traces.flatten(trace))
    lfu_differences[name] = [round((mine - theirs) * references) for mine, theirs in
                             zip(curves[name]["your LFUPolicy"], built_in_lfu) if not math.isnan(mine)]
    plot_hit_ratio_curves(as_curves(capacities, {k: v for k, v in curves[name].items() if k in POLICIES and k != "Belady's MIN"}),
                          belady=dict(zip(capacities, curves[name]["Belady's MIN"])),
                          title=label(f"{name} ({distinct} distinct blocks)", f"{name}（{distinct} 个不同的块）"), ax=ax)
    every = list(range(1, distinct + 1))
    lru_curve = lru_hit_ratio_curve(trace, every)
    ax.plot(every, [100 * lru_curve[c].hit_ratio for c in every], color="0.6", lw=1, label=label("LRU at every capacity", "每个容量下的 LRU"))
    ax.set_xlabel(label("cache capacity (blocks)", "缓存容量（块）"))
    ax.set_ylabel(label("hit ratio (%)", "命中率（%）"))
    ax.get_legend().remove()
handles, labels = axes[0].get_legend_handles_labels()
fig.legend(handles, labels, loc="lower center", ncol=7)
fig.suptitle(label("Hit ratio against cache capacity: your LRU and LFU, FIFO, ARC, S3-FIFO and Belady's MIN",
                   "命中率与缓存容量：你的 LRU 与 LFU、FIFO、ARC、S3-FIFO 以及 Belady 的 MIN"))
plt.tight_layout(rect=(0, 0.08, 1, 0.95))
plt.show()
print(f"replayed in {time.perf_counter() - started:.1f} s")
for name, differences in lfu_differences.items():
    print(f"{name:15s} your LFUPolicy minus the built-in LFU, in hits, at each capacity: {differences}")

# %% [markdown]
# **What the curves show.** *Loop*: a cyclic scan over more blocks than the cache holds is LRU's worst case: every
# block is evicted just before it comes back, so LRU scores 0 until the whole loop fits; LFU is no better, since
# every block in the loop has the same small count and the recency tie-break makes it LRU (FIFO and ARC lie on
# the same zero line). Belady keeps a fixed part of the loop and hits on it every round (about $C/L$ for a loop of
# $L$ blocks); S3-FIFO, which lets a new block prove itself in a small FIFO before it enters the main queue, keeps
# part of the loop too. *Zipf documents*: a stable hot set (the system prompt and the popular documents) is where
# frequency pays: LFU is above LRU at small capacities, because one pass over rare documents does not push the
# popular ones out. *Chat sessions*: the shared system prompts are frequent and each conversation's history is
# recent, so frequency and recency each help; at small capacities LFU keeps the system prompts, while LRU catches up
# once the active conversations fit. No practical policy reaches Belady: the space between a curve and the MIN curve
# is what better eviction could still win. The printed differences between the two LFUs are zero on the loop and the
# Zipf workload and a few hits, of about two thousand references, on the chat workload at small capacities, where a
# new turn's blocks are often the least used ones.
#
# **曲线说明了什么。** *循环*：对多于缓存容量的块做循环扫描是 LRU 的最坏情况：每个块都恰好在它再次被访问之前被驱逐，所以在整个循环装得下之前 LRU 的命中率为 0；LFU 也好不到哪里去，因为循环中每个块的计数都一样小，用新近度打破平局使它变成了 LRU（FIFO 和 ARC 也落在同一条零线上）。Belady 始终保留循环中的同一部分，每轮都在这部分上命中（对 $L$ 个块的循环约为 $C/L$）；S3-FIFO 让新块先在一个小 FIFO 里证明自己的价值再进入主队列，也能保留循环的一部分。*Zipf 文档*：稳定的热点集合（系统提示和热门文档）正是频率发挥作用的地方：容量小时 LFU 高于 LRU，因为一遍访问冷门文档不会把热门文档挤出去。*多轮对话*：共享的系统提示访问频繁，而每个对话的历史又是最近访问的，所以频率和新近度各有帮助；容量小时 LFU 保住了系统提示，而当活跃对话都装得下时 LRU 就追了上来。没有任何实际策略能达到 Belady：曲线与 MIN 之间的空间，就是更好的驱逐还能赢得的部分。打印出的两个 LFU 之差在循环与 Zipf 工作负载上为零；在多轮对话的小容量下相差几次命中（总共约两千次访问），因为那里新一轮对话的块常常正是使用次数最少的块。

# %% [markdown]
# ### Experiment 3: Mooncake's published synthetic trace | 实验 3：Mooncake 公开的合成访问轨迹
#
# Mooncake (the serving platform of Moonshot AI's Kimi) published, with its FAST 2025 paper, a synthetic trace in
# which each request lists the hash ids of its prompt's 512-token blocks; equal ids in two requests are a shared
# prefix. `traces.mooncake_or_synthetic` downloads it; without network access it returns a stand-in generated by
# `course.traces` **in the same format**, and the cell prints which one you got. The first 1,000 requests are enough
# to see the ranking of policies. Your Python policies would need one `select_victim` call over thousands of blocks
# per eviction here, so this experiment uses the built-in LRU and LFU. The built-in LRU always gives your LRU's hits
# (experiment 1); the built-in LFU may differ from yours by a few hits (experiment 2). The cell checks the LFU on the
# first 200 requests at the smallest capacity and prints the difference it finds.
#
# Mooncake（月之暗面 Kimi 的推理服务平台）随其 FAST 2025 论文公开了一份合成访问轨迹，其中每个请求列出其提示词各个 512 token 块的哈希 id；两个请求中相同的 id 就是共享前缀。`traces.mooncake_or_synthetic` 会下载它；没有网络时，它返回一份由 `course.traces` 生成、**格式相同**的替代访问轨迹，单元会打印你拿到的是哪一份。前 1,000 个请求足以看出策略的排名。在这里你的 Python 策略每次驱逐都要在数千个块上调用一次 `select_victim`，所以本实验使用内置的 LRU 和 LFU。内置 LRU 的命中数总是与你的 LRU 相同（实验 1）；内置 LFU 可能与你的相差几次命中（实验 2）。单元在前 200 个请求、最小的容量上检查 LFU，并打印它发现的差别。

# %%
mooncake, description = traces.mooncake_or_synthetic(limit=1000)
print(description)
published = description.startswith("Mooncake")
BUILT_IN = {"LRU": "lru", "LFU": "lfu", "FIFO": "fifo", "ARC (libCacheSim)": "lcs:ARC",
            "S3-FIFO (libCacheSim)": "lcs:S3FIFO", "Belady's MIN": "belady"}
distinct = distinct_blocks(mooncake)
capacities = sorted({max(10, round(f * distinct)) for f in (0.05, 0.1, 0.2, 0.35, 0.5)})
name = "Mooncake (published synthetic)" if published else "Mooncake format (stand-in)"
curves[name] = {"capacities": capacities}
started = time.perf_counter()
for policy_name, policy in BUILT_IN.items():
    curves[name][policy_name] = [hit_ratio(mooncake, c, policy) for c in capacities]
ax = plot_hit_ratio_curves(as_curves(capacities, {k: v for k, v in curves[name].items() if k in BUILT_IN and k != "Belady's MIN"}),
                           belady=dict(zip(capacities, curves[name]["Belady's MIN"])),
                           title=(label("Mooncake's published synthetic trace", "Mooncake 公开的合成访问轨迹") if published
                                  else label("Stand-in in the Mooncake format", "Mooncake 格式的替代访问轨迹"))
                           + f": {len(mooncake)} requests, {distinct} distinct blocks")
ax.set_xlabel(label("cache capacity (blocks of 512 tokens)", "缓存容量（块，每块 512 token）"))
ax.set_ylabel(label("hit ratio (%)", "命中率（%）"))
plt.tight_layout()
plt.show()
print(f"replayed {len(traces.flatten(mooncake))} block references per run in {time.perf_counter() - started:.1f} s in total")
mine = run(mooncake[:200], capacities[0], LFUPolicy)
if mine is not None:
    theirs = replay(mooncake[:200], capacities[0], "lfu")
    print(f"first 200 requests, capacity {capacities[0]}: your LFUPolicy {mine.hits} hits, built-in LFU {theirs.hits} hits")


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
# LRU 是真实引擎的默认策略，Belady 的 MIN 是上限。一个策略弥补的两者之间差距的比例为
#
# $$\text{弥补的差距} = \frac{h_\text{策略} - h_\text{LRU}}{h_\text{MIN} - h_\text{LRU}}，$$
#
# 其中 $h$ 是命中率。LRU 自身为 0，与最优策略一样好的策略为 1，比 LRU 差的策略为负。柱状图使用约为不同块数四分之一的容量（Mooncake 访问轨迹为五分之一）；在小工作负载上“LFU”是你的 `LFUPolicy`，在 Mooncake 访问轨迹上是内置 LFU。

# %%
def share_of_gap(ratio, lru, belady):
    """course.plots.gap_closed, or NaN when a policy raised (its ratio is NaN)."""
    return float("nan") if math.isnan(ratio) else gap_closed(ratio, lru, belady)


LABELS = ["LFU", "FIFO", "ARC (libCacheSim)", "S3-FIFO (libCacheSim)"]
names = list(curves)
fig, ax = plt.subplots(figsize=(10, 4.2))
width = 0.8 / len(LABELS)
print(f"{'workload':30s} {'capacity':>8s} " + " ".join(f"{policy_name:>22s}" for policy_name in LABELS))
for i, name in enumerate(names):
    row = curves[name]
    small = name in WORKLOADS
    k = 1 if small else 2  # a quarter of the distinct blocks (small workloads), a fifth (Mooncake)
    capacity = row["capacities"][k]
    trace = WORKLOADS[name] if small else mooncake
    lru = lru_hit_ratio_curve(trace, [capacity])[capacity].hit_ratio
    gaps = [share_of_gap((row["your LFUPolicy"] if small and policy_name == "LFU" else row[policy_name])[k], lru,
                         row["Belady's MIN"][k]) for policy_name in LABELS]
    print(f"{name:30s} {capacity:8d} " + " ".join(f"{g:22.2f}" for g in gaps))
    for j, g in enumerate(gaps):
        ax.bar(i + (j - (len(LABELS) - 1) / 2) * width, g, width, label=LABELS[j] if i == 0 else None,
               color=f"C{j + 1}")
ax.axhline(0, color="black", lw=0.8)
ax.axhline(1, color="black", lw=0.8, ls="--")
ax.set_xticks(range(len(names)), names)
ax.set_ylabel(label("share of the LRU-to-MIN gap closed (1 = optimal)", "弥补的 LRU 到 MIN 差距（1 = 最优）"))
ax.set_title(label("Gap closed between LRU (0) and Belady's MIN (1, dashed)", "LRU（0）与 Belady 的 MIN（1，虚线）之间弥补的差距"))
ax.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# **Reading the bars** (the numbers are the table the cell prints). On the loop, only S3-FIFO closes most of the gap:
# new blocks pass through its small FIFO instead of flushing the main queue, so part of the loop stays cached, as
# with MIN. On the Zipf workload the policies that count or filter (LFU, ARC, S3-FIFO) close about a fifth to two fifths of
# the gap, and FIFO, which ignores hits, opens it further (a negative share). On the chat workload, at this capacity, nothing beats LRU: a
# conversation's history is reused one turn later, and recency is the right signal. On the Mooncake-format trace
# (Mooncake's published one, or the stand-in when the download failed: the first line of experiment 3 says which)
# read the last row. No single policy wins everywhere; that is why engines make the policy pluggable and why
# notebook 05 scores sequences with more than one signal.
#
# **如何解读柱状图**（数字见单元打印的表）。在循环上，只有 S3-FIFO 弥补了大部分差距：新块先经过它的小 FIFO，而不会冲刷主队列，因此循环的一部分能像 MIN 那样一直留在缓存中。在 Zipf 工作负载上，计数或过滤的策略（LFU、ARC、S3-FIFO）弥补了大约五分之一到五分之二的差距，而忽略命中的 FIFO 反而扩大了差距（比例为负）。在多轮对话上，在这个容量下没有策略胜过 LRU：对话历史在下一轮就被重用，新近度正是正确的信号。在 Mooncake 格式的访问轨迹上（Mooncake 公开的那一份，或下载失败时的替代访问轨迹：实验 3 输出的第一行说明是哪一份），请看表的最后一行。没有哪个策略在所有地方都赢；这就是引擎把策略做成可插拔的原因，也是 notebook 05 用多个信号给序列打分的原因。

# %% [markdown]
# ### Experiment 5: pick a workload and a capacity | 实验 5：选择工作负载与容量
#
# Choose a workload and the capacity as a share of its distinct blocks; the bars are the hit ratios of every policy
# at that point (your classes on the small workloads, the built-in LRU and LFU on the Mooncake trace). Try the loop
# just below and just above 100%, and the Zipf workload at 5%.
#
# 选择一个工作负载，并以其不同块数的百分比设定容量；柱子是各策略在该点的命中率（小工作负载上用你的类，Mooncake 访问轨迹上用内置的 LRU 和 LFU）。试试循环在略低于和略高于 100% 时的表现，以及 Zipf 工作负载在 5% 时的表现。

# %%
import ipywidgets as widgets
from IPython.display import display

CHOICES = dict(WORKLOADS, **{name: mooncake})
workload = widgets.Dropdown(options=list(CHOICES), value="Zipf documents", description="workload")
share = widgets.IntSlider(value=25, min=5, max=100, step=5, description="capacity %", continuous_update=False)
plot = widgets.Output()


def redraw(change=None):
    trace = CHOICES[workload.value]
    distinct = distinct_blocks(trace)
    capacity = max(10, round(share.value / 100 * distinct))
    policies = POLICIES if workload.value in WORKLOADS else BUILT_IN
    ratios = {policy_name: hit_ratio(trace, capacity, policy) for policy_name, policy in policies.items()}
    with plot:
        plot.clear_output(wait=True)
        fig, ax = plt.subplots(figsize=(7, 3.2))
        percent = [100 * value for value in ratios.values()]
        ax.barh(list(ratios), percent, color=[f"C{i}" for i in range(len(ratios))])
        for y, value in enumerate(percent):
            ax.text(value, y, f" {value:.1f}", va="center")
        ax.set_xlim(0, 110)
        ax.invert_yaxis()
        ax.set_xlabel(label("hit ratio (%)", "命中率（%）"))
        ax.set_title(label(f"{workload.value}: capacity {capacity} blocks ({share.value}% of {distinct} distinct)",
                           f"{workload.value}：容量 {capacity} 块（{distinct} 个不同块的 {share.value}%）"))
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
# workloads and far from Belady's MIN on others (LRU on loops larger than the cache, LFU when popularity shifts), so
# measure a policy against the optimum on your own trace before you trust it.
#
# **一句话记住：** LRU 按 $t_\text{last}$ 排序，LFU 按 $(\text{use\_count}, t_\text{last})$ 排序；它们各自在某些工作负载上表现良好，在另一些上远离 Belady 的 MIN（LRU 输在比缓存大的循环上，LFU 输在热度变化时），所以在信任一个策略之前，先在你自己的访问轨迹上把它与最优策略比较。
#
# ## Prerequisites and further reading | 前置与相关阅读
#
# - Before: [02. Paged KV cache](../02_paged_kv_cache/02_paged_kv_cache.ipynb) (blocks, reference counts, `fork`,
#   `release`). | 前置：[02. 分页 KV 缓存](../02_paged_kv_cache/02_paged_kv_cache.ipynb)（块、引用计数、`fork`、`release`）。
# - Next: [04. Fair quota](../04_fair_quota/04_fair_quota.ipynb), eviction that protects small tenants from a large
#   one; it is given your `EvictionPolicy`. | 下一节：[04. 公平配额](../04_fair_quota/04_fair_quota.ipynb)，保护小租户不被大租户挤出缓存的驱逐；它会用到你的 `EvictionPolicy`。
# - Further: the ARC and S3-FIFO papers below (recency and frequency in one policy), and the LRU-K paper (the $K$-th
#   last access as the key). | 延伸阅读：下面的 ARC 与 S3-FIFO 论文（一个策略同时兼顾新近度与频率），以及 LRU-K 论文（以倒数第 $K$ 次访问作为键）。
#
# ## References | 参考文献
#
# - L. A. Belady, "A study of replacement algorithms for a virtual-storage computer", *IBM Systems Journal* 5(2), 1966 (MIN, the optimal offline policy).
# - R. L. Mattson, J. Gecsei, D. R. Slutz, I. L. Traiger, "Evaluation techniques for storage hierarchies", *IBM Systems Journal* 9(2), 1970 (stack algorithms: LRU's hit ratio at every capacity in one pass).
# - E. J. O'Neil, P. E. O'Neil, G. Weikum, "The LRU-K page replacement algorithm for database disk buffering", SIGMOD 1993.
# - N. Megiddo, D. S. Modha, "ARC: A Self-Tuning, Low Overhead Replacement Cache", FAST 2003.
# - J. Yang, Y. Zhang, Z. Qiu, Y. Yue, R. Vinayak, "FIFO queues are all you need for cache eviction", SOSP 2023 (S3-FIFO).
# - libCacheSim, a high-performance cache simulator (github.com/1a1a11a/libCacheSim) and its Python package `libcachesim`.
# - W. Kwon et al., "Efficient Memory Management for Large Language Model Serving with PagedAttention", SOSP 2023 (vLLM); vLLM's prefix caching design notes (free block queue, LRU eviction of cached blocks).
# - L. Zheng et al., "SGLang: Efficient Execution of Structured Language Model Programs", NeurIPS 2024 (RadixAttention: LRU eviction of radix-tree leaves, reference-counted locks).
# - R. Qin et al., "Mooncake: Trading More Storage for Less Computation — A KVCache-centric Architecture for Serving LLM Chatbot", FAST 2025 (the trace format and `synthetic_trace.jsonl`, Mooncake's published synthetic trace).
# - Seed designs of this course: the "KV Eviction formula-to-code" walkthrough (LLM-REVIEW) and the "KV Cache Scheduling" chapter of Datawhale's llm-algo-leetcode (text CC BY 4.0, code Apache-2.0).
