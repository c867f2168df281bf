# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: nbgrader,given,tags,-all
#     formats: source/05_scheduler_sim//ipynb,authoring//py:percent
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
# # 05. KV cache scheduler | KV 缓存调度器
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/kvcache-course/kv-cache-eviction/blob/main/release/05_scheduler_sim/05_scheduler_sim.ipynb)
# [![ModelScope](https://img.shields.io/badge/ModelScope-Open%20from%20URL-624aff)](https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/05_scheduler_sim/05_scheduler_sim.ipynb)
# [![GitHub](https://img.shields.io/badge/GitHub-release%2F05_scheduler_sim-black)](https://github.com/kvcache-course/kv-cache-eviction/blob/main/release/05_scheduler_sim/05_scheduler_sim.ipynb)
#
# **Difficulty:** ★★☆ intermediate · **Time:** about 90 minutes · **Points:** 22 · **GPU:** task 5.3 and the throughput experiment run on CUDA when a GPU is present; everything also runs on the CPU.
#
# **难度：** ★★☆ 中级 · **用时：** 约 90 分钟 · **总分：** 22 · **GPU：** 任务 5.3 和吞吐量实验在有 GPU 时于 CUDA 上运行；所有内容也都能在 CPU 上运行。
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
# 1. state a score-based cache scheduler as three decisions: what to keep, what to evict, and how not to act on
#    stale information;
# 2. implement a min-heap with lazy deletion and explain where its stale items come from;
# 3. read a scoring formula critically: find out *when* each term is evaluated, and what that does to it;
# 4. move the scheduler's state into tensors, reproduce the heap's decisions exactly, and do what the heap cannot
#    do cheaply: rescore every entry at the moment of eviction.
#
# 完成本 notebook 后，你能够：
# 1. 把基于评分的缓存调度器表述为三个决定：保留什么、驱逐什么、以及如何避免依据过时信息做决定；
# 2. 实现带惰性删除的最小堆，并解释其中过时条目的来源；
# 3. 批判地阅读评分公式：弄清每一项是在*何时*计算的，以及这对它意味着什么；
# 4. 把调度器的状态搬到张量中，精确复现堆的决定，并做到堆难以低成本完成的事：在驱逐时刻为每个条目重新评分。
#
# ## Three questions | 三个问题
#
# A prefix cache keeps the KV tensors of prompt prefixes (a system prompt, a document, the history of a chat) so
# that a later request with the same prefix skips its prefill. The memory is fixed (`capacity_bytes`), so the
# scheduler must answer three questions on every request:
#
# 1. **What to keep?** Give every cached entry a score that estimates how useful it will be.
# 2. **What to evict?** When a new entry does not fit, evict the entry with the lowest score, again and again, until
#    it fits.
# 3. **How not to act on stale information?** Scores change when entries are used. A priority queue that cannot
#    update an item in place keeps old copies of it; the scheduler must recognise them and skip them.
#
# 前缀缓存保存提示前缀（系统提示、文档、对话历史）的 KV 张量，使之后带有相同前缀的请求可以跳过预填充。内存是固定的
# （`capacity_bytes`），因此调度器在每个请求上都要回答三个问题：
#
# 1. **保留什么？** 给每个缓存条目一个分数，估计它将来有多大用处。
# 2. **驱逐什么？** 新条目放不下时，驱逐分数最低的条目，反复进行，直到放得下。
# 3. **如何避免依据过时信息？** 条目被使用时分数会改变。不能原地更新元素的优先队列会留下旧副本；调度器必须识别并跳过它们。
#
# ## The score | 评分公式
#
# The scheduler of this notebook (the design of the "KV Cache Scheduling" chapter of Datawhale's llm-algo-leetcode)
# scores an entry $e$ at logical time $t$ as
#
# $$\text{score}(e, t) = \underbrace{\text{hits}(e)}_{\text{frequency}}
#  + 0.5 \cdot \underbrace{\frac{1}{1 + \max(t - t_\text{last}(e),\, 0)}}_{\text{recency} \in (0, 1]}
#  - 0.25 \cdot \underbrace{\frac{\text{bytes}(e)}{\text{capacity\_bytes}}}_{\text{size} \in (0, 1]}$$
#
# - **hits**: how often the prefix was requested (1 when it is added, +1 on every reuse). It dominates: one more
#   hit outweighs the two other terms together, which move the score by less than 0.5 + 0.25.
# - **recency**: 1 for an entry touched at time $t$, then 1/2, 1/3, ... as it ages; weighted by 0.5.
# - **size**: the fraction of the cache the entry takes; a big entry costs room that several small ones could use,
#   so it loses up to 0.25.
#
# The victim is the entry with the lexicographically smallest pair (priority, last_used): the lowest score, and
# among equal scores the one used longest ago.
#
# 本 notebook 的调度器（来自 Datawhale llm-algo-leetcode 的 "KV Cache Scheduling" 一章的设计）在逻辑时间 $t$ 按上式为条目 $e$ 评分：
#
# - **hits（命中次数）**：前缀被请求的次数（加入时为 1，每次复用加 1）。它起主导作用：多一次命中的分量超过另两项之和
#   （另两项对分数的影响小于 0.5 + 0.25）。
# - **recency（新近度）**：在时间 $t$ 被访问的条目为 1，之后随年龄变为 1/2、1/3……；权重 0.5。
# - **size（大小）**：条目占缓存的比例；大条目占用的空间本可以容纳多个小条目，因此最多扣 0.25 分。
#
# 受害者是二元组 (priority, last_used) 按字典序最小的条目：分数最低者；分数相同时，最久未使用者。
#
# ## The lazy-deletion heap | 惰性删除堆
#
# Python's `heapq` finds the minimum in $O(\log n)$ but cannot change the priority of an item already in the heap.
# So when an entry is reused, the scheduler pushes a **new** item `(priority, last_used, prefix)` and leaves the
# old one where it is. The old item is now **stale**: it names a live prefix, but with a priority and a
# last_used that are no longer the entry's. Evicted entries leave items behind too. Eviction therefore pops until
# it finds an item that agrees with its live entry on *both* priority and last_used, and throws the others away.
# This is the same trick as SGLang's heap over radix-tree leaves and vLLM's evictor, which skip outdated heap
# items instead of deleting them.
#
# Python 的 `heapq` 能以 $O(\log n)$ 找到最小值，却不能修改已在堆中的元素的优先级。因此条目被复用时，调度器压入一个**新的**
# 元素 `(priority, last_used, prefix)`，旧元素原样留在堆中。旧元素于是**过时**了：它指向一个仍在缓存中的前缀，但其
# priority 和 last_used 已不再是该条目的当前值。被驱逐的条目同样会留下元素。所以驱逐时要不断弹出，直到找到一个
# priority 与 last_used *都*与其在缓存中的条目一致的元素，其余的丢弃。SGLang 在基数树叶子上的堆和 vLLM 的驱逐器也用同样的
# 技巧：跳过过时的堆元素，而不是删除它们。

# %% [markdown] nbgrader={"grade": false, "grade_id": "task5_1_CacheEntry_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 5.1: CacheEntry (3 points)
#
# Write the record the scheduler keeps per prefix: a `dataclass(order=True)` with the fields, in this order,
#
# | field | type | compared? | default |
# |---|---|---|---|
# | `priority` | float | yes | (required) |
# | `last_used` | int | yes | (required) |
# | `prefix` | str | no | (required) |
# | `hits` | int | no | 0 |
# | `bytes` | int | no | 0 |
#
# Two entries compare (`<`, `<=`, `==`, ...) by `(priority, last_used)` only, so `min(entries)` is exactly the
# victim of the formula above, and `==` ignores prefix, hits and bytes. The fields must stay writable: the
# scheduler updates them in place.
#
# Hint: `dataclasses.field(compare=False)`; a field with a default must come after the fields without one.
#
# ## 任务 5.1：CacheEntry（3 分）
#
# 编写调度器为每个前缀保存的记录：一个 `dataclass(order=True)`，字段按上表顺序排列。
#
# 两个条目只按 `(priority, last_used)` 比较（`<`、`<=`、`==` 等），因此 `min(entries)` 恰好是上面公式中的受害者，而 `==` 忽略
# prefix、hits 与 bytes。字段必须可写：调度器会原地更新它们。
#
# 提示：`dataclasses.field(compare=False)`；有默认值的字段必须排在没有默认值的字段之后。

# %% nbgrader={"grade": false, "grade_id": "task5_1_CacheEntry", "locked": false, "schema_version": 3, "solution": true, "task": false}
from dataclasses import dataclass, field


@dataclass(order=True)
class CacheEntry:
    """One cached prefix. Entries compare by (priority, last_used) only.

    Fields, in order: priority (float), last_used (int, the logical time of the last touch),
    prefix (str, not compared), hits (int, default 0, not compared), bytes (int, default 0,
    not compared). Instances are mutable.
    """

    ### BEGIN SOLUTION
    priority: float
    last_used: int
    prefix: str = field(compare=False)
    hits: int = field(default=0, compare=False)
    bytes: int = field(default=0, compare=False)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task5_1_CacheEntry", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that CacheEntry has the five fields and compares by (priority, last_used) only."""


def _check_task5_1_CacheEntry():
    from course.checks import assert_plain_equal, check_type

    entry = CacheEntry(1.5, 3, "sys-prompt")
    assert_plain_equal([entry.priority, entry.last_used, entry.prefix, entry.hits, entry.bytes],
                       [1.5, 3, "sys-prompt", 0, 0], "CacheEntry(1.5, 3, 'sys-prompt') fields (defaults hits 0, bytes 0)")
    full = CacheEntry(priority=2.0, last_used=7, prefix="doc", hits=4, bytes=96)
    assert_plain_equal([full.priority, full.last_used, full.prefix, full.hits, full.bytes], [2.0, 7, "doc", 4, 96],
                       "CacheEntry(priority=2.0, last_used=7, prefix='doc', hits=4, bytes=96) fields")
    check_type(CacheEntry(1.0, 5, "x") < CacheEntry(2.0, 1, "y"), bool, "CacheEntry(1.0, 5, 'x') < CacheEntry(2.0, 1, 'y')")
    assert CacheEntry(1.0, 5, "x") < CacheEntry(2.0, 1, "y"), "a lower priority must compare smaller, whatever last_used is"
    assert CacheEntry(1.0, 2, "z") < CacheEntry(1.0, 3, "a"), "on equal priority the smaller last_used must compare smaller (prefix is not compared)"
    assert CacheEntry(1.0, 2, "a", hits=3, bytes=9) == CacheEntry(1.0, 2, "b"), "== must ignore prefix, hits and bytes"
    assert_plain_equal(min([CacheEntry(1.4, 2, "b"), CacheEntry(1.4, 1, "a2"), CacheEntry(2.4, 0, "c")]).prefix, "a2",
                       "min of entries (1.4, 2, 'b'), (1.4, 1, 'a2'), (2.4, 0, 'c')")

    ### BEGIN HIDDEN TESTS
    import heapq as _heapq
    import random as _random

    _e = CacheEntry(1.0, 1, "p")
    _e.hits += 2
    _e.priority = 3.25
    _e.last_used = 9
    _e.bytes = 64
    assert_plain_equal([_e.priority, _e.last_used, _e.hits, _e.bytes], [3.25, 9, 2, 64],
                       "a CacheEntry after updating its fields in place")
    _positional = CacheEntry(0.5, 4, "q", 6, 128)
    assert_plain_equal([_positional.priority, _positional.last_used, _positional.prefix, _positional.hits, _positional.bytes],
                       [0.5, 4, "q", 6, 128], "CacheEntry(0.5, 4, 'q', 6, 128) (positional fields)")
    _a, _b = CacheEntry(1.0, 3, "a"), CacheEntry(1.0, 3, "b", hits=5)
    assert _a <= _b and _a >= _b and not (_a < _b) and not (_a > _b) and _a == _b, \
        "entries with equal (priority, last_used) must be equal under every comparison"
    assert CacheEntry(2.0, 1, "x") > CacheEntry(1.0, 9, "y") and CacheEntry(1.0, 9, "y") <= CacheEntry(2.0, 1, "x"), \
        "> and <= must follow (priority, last_used)"
    assert CacheEntry(1.0, 2, "same") != CacheEntry(1.0, 3, "same"), "entries with different last_used must not be equal"
    _rng = _random.Random(5101)
    for _case in range(200):
        _rows = [(_rng.choice([0.5, 1.25, 1.5, 2.0]), _rng.randint(0, 6), f"p{i}", _rng.randint(0, 3), _rng.randint(1, 9))
                 for i in range(_rng.randint(1, 12))]
        _entries = [CacheEntry(*row) for row in _rows]
        _expected = sorted((row[0], row[1]) for row in _rows)
        assert_plain_equal([(x.priority, x.last_used) for x in sorted(_entries)], _expected,
                           f"sorted(entries) on random case {_case}", reveal=False)
        _heap = list(_entries)
        _heapq.heapify(_heap)
        _smallest = _heapq.heappop(_heap)
        assert_plain_equal((_smallest.priority, _smallest.last_used), _expected[0],
                           f"heapq.heappop on entries, random case {_case}", reveal=False)
    ### END HIDDEN TESTS


_check_task5_1_CacheEntry()

# %% [markdown] nbgrader={"grade": false, "grade_id": "task5_2_KVCacheSchedulerSim_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 5.2: KVCacheSchedulerSim (10 points)
#
# Write the simulator. Its state: `capacity_bytes`, `current_bytes` (the bytes of the live entries), `time` (a
# logical clock, 0 at the start), `entries` (dict from prefix to `CacheEntry`), `queue` (the heap, a list of
# tuples `(priority, last_used, prefix)`), `log` (a list of str). `KVCacheSchedulerSim(capacity_bytes=1024)` raises
# `ValueError` when `capacity_bytes < 1`.
#
# - `_score(hits, size, last_used)`: `recency = 1 / (1 + max(self.time - last_used, 0))`, then return
#   `hits + 0.5 * recency - 0.25 * size / self.capacity_bytes` (compute it in this order, so that your floats agree
#   bit for bit with the tests').
# - `_refresh_queue(prefix)`: recompute the entry's priority with `_score`, store it in the entry, and push
#   `(priority, last_used, prefix)` onto the heap.
# - `_evict_until_fit(needed)`: while `current_bytes + needed > capacity_bytes` (and something is cached): pop
#   items until one agrees with its live entry on **both** priority and last_used (skip items of removed prefixes
#   and stale items); if the heap runs dry, fall back to the entry with the smallest (priority, last_used); evict it
#   (remove it, subtract its bytes) and log `evict:<prefix>`.
# - `touch(prefix, bytes_)`: first the input checks, `ValueError` when `prefix` is not a non-empty `str`, when
#   `bytes_ < 1` or `bytes_ > capacity_bytes` (nothing changes then). Then `time += 1`. A **hit** (the prefix is
#   cached) adds 1 to `hits`, sets `last_used = time`, refreshes the queue and logs `reuse:<prefix>`; the entry keeps
#   its size. A **miss** evicts until `bytes_` fits, creates the entry with `hits = 1`, `last_used = time`, adds
#   its bytes to `current_bytes`, refreshes the queue and logs `add:<prefix>`.
# - `schedule(requests)`: touch each `(prefix, bytes_)` in order and return a copy of the whole log.
# - `snapshot()`: a list of `(prefix, bytes, round(priority, 4), hits)` for the live entries, ordered by
#   `(-priority, last_used, prefix)`: the most valuable first.
#
# A worked example (it is the first visible test): capacity 128, requests a 40, b 48, a 40, c 56, d 48, a 40.
# With recency 1 at every touch, priority = hits + 0.5 − size/512: a = 1.421875, b = 1.40625; the reuse of a
# makes it 2.421875; c (56) does not fit (88 + 56 > 128), so the smallest live item, b, goes; d does not fit either
# and the smallest is now c (1.390625); the final reuse of a gives 3.421875.
#
# ## 任务 5.2：KVCacheSchedulerSim（10 分）
#
# 编写模拟器。状态：`capacity_bytes`、`current_bytes`（在缓存中的条目的字节数）、`time`（逻辑时钟，开始时为 0）、
# `entries`（前缀到 `CacheEntry` 的字典）、`queue`（堆，元组 `(priority, last_used, prefix)` 的列表）、`log`（str 列表）。
# `capacity_bytes < 1` 时 `KVCacheSchedulerSim(capacity_bytes=1024)` 抛出 `ValueError`。
#
# - `_score(hits, size, last_used)`：先算 `recency = 1 / (1 + max(self.time - last_used, 0))`，再返回
#   `hits + 0.5 * recency - 0.25 * size / self.capacity_bytes`（按此顺序计算，使浮点结果与测试逐位一致）。
# - `_refresh_queue(prefix)`：用 `_score` 重新计算条目的优先级，存入条目，并把 `(priority, last_used, prefix)` 压入堆。
# - `_evict_until_fit(needed)`：当 `current_bytes + needed > capacity_bytes`（且缓存非空）时：不断弹出元素，直到某个元素的
#   priority 与 last_used **都**与其在缓存中的条目一致（跳过已删除前缀的元素和过时元素）；堆被弹空时，退而选择
#   (priority, last_used) 最小的条目；驱逐它（删除条目、减去其字节数）并记录 `evict:<prefix>`。
# - `touch(prefix, bytes_)`：先做输入检查：`prefix` 不是非空 `str`、`bytes_ < 1` 或 `bytes_ > capacity_bytes` 时抛出
#   `ValueError`（此时状态不变）。然后 `time += 1`。**命中**（前缀已缓存）时 `hits` 加 1，令 `last_used = time`，刷新队列，
#   记录 `reuse:<prefix>`；条目大小不变。**未命中**时先驱逐直到 `bytes_` 放得下，再以 `hits = 1`、`last_used = time`
#   创建条目，把字节数加到 `current_bytes`，刷新队列，记录 `add:<prefix>`。
# - `schedule(requests)`：依次 touch 每个 `(prefix, bytes_)`，返回整个日志的副本。
# - `snapshot()`：返回在缓存中的条目的 `(prefix, bytes, round(priority, 4), hits)` 列表，按 `(-priority, last_used, prefix)`
#   排序：最有价值的在前。
#
# 一个算例（也是第一个可见测试）：容量 128，请求 a 40、b 48、a 40、c 56、d 48、a 40。由于每次访问时新近度都是 1，
# priority = hits + 0.5 − size/512：a = 1.421875，b = 1.40625；a 被复用后为 2.421875；c（56）放不下（88 + 56 > 128），
# 于是最小的有效元素 b 被驱逐；d 也放不下，此时最小的是 c（1.390625）；最后 a 再被复用，得 3.421875。

# %% nbgrader={"grade": false, "grade_id": "task5_2_KVCacheSchedulerSim", "locked": false, "schema_version": 3, "solution": true, "task": false}
import heapq


class KVCacheSchedulerSim:
    """A score-based prefix cache with a lazy-deletion min-heap (see the task for the contract).

    Attributes: capacity_bytes (int), current_bytes (int), time (int), entries
    (dict[str, CacheEntry]), queue (list[tuple[float, int, str]], a heap), log (list[str]).

    Raises:
        ValueError: capacity_bytes < 1; in touch, a prefix that is not a non-empty str, or
            bytes_ < 1 or bytes_ > capacity_bytes (the state is not changed).
    """

    def __init__(self, capacity_bytes=1024):
        ### BEGIN SOLUTION
        if capacity_bytes < 1:
            raise ValueError(f"capacity_bytes must be >= 1, got {capacity_bytes}")
        self.capacity_bytes = capacity_bytes
        self.current_bytes = 0
        self.time = 0
        self.entries = {}
        self.queue = []
        self.log = []
        ### END SOLUTION

    def _score(self, hits, size, last_used):
        """Return hits + 0.5 * recency - 0.25 * size / capacity_bytes at the current time."""
        ### BEGIN SOLUTION
        recency = 1 / (1 + max(self.time - last_used, 0))
        return hits + 0.5 * recency - 0.25 * size / self.capacity_bytes
        ### END SOLUTION

    def _refresh_queue(self, prefix):
        """Recompute the entry's priority and push (priority, last_used, prefix) onto the heap."""
        ### BEGIN SOLUTION
        entry = self.entries[prefix]
        entry.priority = self._score(entry.hits, entry.bytes, entry.last_used)
        heapq.heappush(self.queue, (entry.priority, entry.last_used, prefix))
        ### END SOLUTION

    def _evict_until_fit(self, needed):
        """Evict lowest (priority, last_used) entries until needed more bytes fit."""
        ### BEGIN SOLUTION
        while self.entries and self.current_bytes + needed > self.capacity_bytes:
            victim = None
            while self.queue:
                priority, last_used, prefix = heapq.heappop(self.queue)
                entry = self.entries.get(prefix)
                # An item is stale unless it agrees with its live entry on both fields.
                if entry is not None and entry.priority == priority and entry.last_used == last_used:
                    victim = entry
                    break
            if victim is None:
                victim = min(self.entries.values())
            del self.entries[victim.prefix]
            self.current_bytes -= victim.bytes
            self.log.append(f"evict:{victim.prefix}")
        ### END SOLUTION

    def touch(self, prefix, bytes_):
        """Request prefix (bytes_ bytes): reuse it when cached, otherwise evict until it fits and add it."""
        ### BEGIN SOLUTION
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(f"touch: prefix must be a non-empty str, got {prefix!r}")
        if bytes_ < 1 or bytes_ > self.capacity_bytes:
            raise ValueError(f"touch({prefix!r}, {bytes_}): bytes_ must be in [1, {self.capacity_bytes}]")
        self.time += 1
        entry = self.entries.get(prefix)
        if entry is not None:
            entry.hits += 1
            entry.last_used = self.time
            self._refresh_queue(prefix)
            self.log.append(f"reuse:{prefix}")
            return
        self._evict_until_fit(bytes_)
        self.entries[prefix] = CacheEntry(0.0, self.time, prefix, hits=1, bytes=bytes_)
        self.current_bytes += bytes_
        self._refresh_queue(prefix)
        self.log.append(f"add:{prefix}")
        ### END SOLUTION

    def schedule(self, requests):
        """Touch every (prefix, bytes_) of requests in order; return a copy of the whole log."""
        ### BEGIN SOLUTION
        for prefix, bytes_ in requests:
            self.touch(prefix, bytes_)
        return list(self.log)
        ### END SOLUTION

    def snapshot(self):
        """Return [(prefix, bytes, round(priority, 4), hits)] ordered by (-priority, last_used, prefix)."""
        ### BEGIN SOLUTION
        ordered = sorted(self.entries.values(), key=lambda e: (-e.priority, e.last_used, e.prefix))
        return [(e.prefix, e.bytes, round(e.priority, 4), e.hits) for e in ordered]
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task5_2_KVCacheSchedulerSim", "locked": true, "points": 10, "schema_version": 3, "solution": false, "task": false}
"""Check that KVCacheSchedulerSim scores, evicts, skips stale heap items and logs exactly as specified."""


def _check_task5_2_KVCacheSchedulerSim():
    from course.checks import assert_plain_equal, assert_raises, check_type

    # The known answer of the seed design (worked out in the task text).
    sim = KVCacheSchedulerSim(128)
    log = sim.schedule([("a", 40), ("b", 48), ("a", 40), ("c", 56), ("d", 48), ("a", 40)])
    assert_plain_equal(log, ["add:a", "add:b", "reuse:a", "evict:b", "add:c", "evict:c", "add:d", "reuse:a"],
                       "KVCacheSchedulerSim(128).schedule([a40, b48, a40, c56, d48, a40])")
    assert_plain_equal(sim.snapshot(), [("a", 40, 3.4219, 3), ("d", 48, 1.4062, 1)],
                       "snapshot() after that schedule", abs_tol=1e-4)
    assert_plain_equal([sim.time, sim.current_bytes, sorted(sim.entries)], [6, 88, ["a", "d"]],
                       "[time, current_bytes, sorted(entries)] after that schedule")
    check_type(sim.entries["a"], CacheEntry, "sim.entries['a']")
    assert_plain_equal([sim.entries["a"].hits, sim.entries["a"].last_used, sim.entries["a"].bytes], [3, 6, 40],
                       "[hits, last_used, bytes] of entry 'a'")
    sim.time = 6
    assert_plain_equal(sim._score(2, 64, 4), 2 + 0.5 / 3 - 0.125, "_score(2, 64, 4) at time 6 with capacity 128")
    assert_raises(ValueError, "KVCacheSchedulerSim(0)", KVCacheSchedulerSim, 0)
    assert_raises(ValueError, "touch('', 8)", KVCacheSchedulerSim(64).touch, "", 8)
    assert_raises(ValueError, "touch(7, 8)", KVCacheSchedulerSim(64).touch, 7, 8)
    assert_raises(ValueError, "touch('a', 0)", KVCacheSchedulerSim(64).touch, "a", 0)
    assert_raises(ValueError, "touch('a', 65) with capacity 64", KVCacheSchedulerSim(64).touch, "a", 65)

    ### BEGIN HIDDEN TESTS
    import heapq as _heapq
    import random as _random


    def _oracle_schedule(capacity, requests):
        """Scan every live entry for the victim: no heap, hence no stale items."""
        live = {}  # prefix -> [hits, size, last_used, priority]
        log, used = [], 0
        for clock, (name, size) in enumerate(requests, start=1):
            if name in live:
                row = live[name]
                row[0] += 1
                row[2] = clock
                row[3] = row[0] + 0.5 * (1 / (1 + 0)) - 0.25 * row[1] / capacity
                log.append("reuse:" + name)
                continue
            while live and used + size > capacity:
                victim = min(live, key=lambda k: (live[k][3], live[k][2]))
                used -= live.pop(victim)[1]
                log.append("evict:" + victim)
            live[name] = [1, size, clock, 1 + 0.5 * (1 / (1 + 0)) - 0.25 * size / capacity]
            used += size
            log.append("add:" + name)
        order = sorted(live, key=lambda k: (-live[k][3], live[k][2], k))
        return log, [(k, live[k][1], round(live[k][3], 4), live[k][0]) for k in order], live, used


    def _state(s):
        return (s.time, s.current_bytes, list(s.log),
                {k: (e.priority, e.last_used, e.hits, e.bytes) for k, e in s.entries.items()})


    assert_plain_equal(KVCacheSchedulerSim().capacity_bytes, 1024, "KVCacheSchedulerSim().capacity_bytes")
    _fresh = KVCacheSchedulerSim(50)
    assert_plain_equal([_fresh.current_bytes, _fresh.time, _fresh.entries, _fresh.queue, _fresh.log, _fresh.snapshot()],
                       [0, 0, {}, [], [], []], "a new KVCacheSchedulerSim(50)")
    for _bad in (-3, 0):
        assert_raises(ValueError, f"KVCacheSchedulerSim({_bad})", KVCacheSchedulerSim, _bad)

    _rng = _random.Random(5202)
    for _case in range(300):
        _cap = _rng.choice([16, 64, 100, 128, 1000])
        _names = [f"p{i}" for i in range(_rng.randint(1, 10))]
        _pool = _rng.choice([[_cap // 4], [_cap // 8, _cap // 4, _cap // 2], list(range(1, _cap + 1))])
        _sizes = {n: _rng.choice(_pool) for n in _names}
        _requests = [(n, _sizes[n] if _rng.random() < 0.8 else _rng.choice(_pool))
                     for n in (_rng.choice(_names) for _ in range(_rng.randint(1, 40)))]
        _sim = KVCacheSchedulerSim(_cap)
        _split = _rng.randint(0, len(_requests))
        _first = _sim.schedule(_requests[:_split])
        _log = _sim.schedule(_requests[_split:])
        _exp_log, _exp_snap, _exp_live, _exp_used = _oracle_schedule(_cap, _requests)
        check_type(_log, list, f"schedule on random case {_case}")
        assert_plain_equal(_log, _exp_log, f"the log of schedule (in two calls) on random case {_case}", reveal=False)
        assert _log is not _sim.log, "schedule must return a copy of the log, not the log itself"
        _log.append("junk")
        assert_plain_equal(_sim.log, _exp_log, f"sim.log after changing what schedule returned, case {_case}", reveal=False)
        assert_plain_equal(_sim.snapshot(), _exp_snap, f"snapshot() on random case {_case}", abs_tol=1e-4, reveal=False)
        assert_plain_equal([_sim.time, _sim.current_bytes], [len(_requests), _exp_used],
                           f"[time, current_bytes] on random case {_case}", reveal=False)
        assert_plain_equal({k: [e.hits, e.bytes, e.last_used] for k, e in _sim.entries.items()},
                           {k: v[:3] for k, v in _exp_live.items()}, f"entries on random case {_case}", reveal=False)
        for _k, _e in _sim.entries.items():
            check_type(_e, CacheEntry, f"entries[{_k!r}] on random case {_case}")
            assert _e.prefix == _k, f"entries[{_k!r}].prefix is {_e.prefix!r} on random case {_case}"
        _items = list(_sim.queue)
        for _item in _items:
            check_type(_item, tuple, f"an item of queue on random case {_case}")
            assert len(_item) == 3 and type(_item[0]) is float and type(_item[1]) is int and type(_item[2]) is str, \
                f"queue items must be (priority: float, last_used: int, prefix: str); got {_item!r} on case {_case}"
        for _k, _e in _sim.entries.items():
            assert (_e.priority, _e.last_used, _k) in _items, \
                f"queue lacks the current item (priority, last_used, prefix) of live entry {_k!r} on case {_case}"
        _popped = [_heapq.heappop(_items) for _ in range(len(_items))]
        assert _popped == sorted(_sim.queue), f"queue is not a min-heap on random case {_case}"

    # Bad input changes nothing: no eviction, no tick of the clock, no log line.
    _sim = KVCacheSchedulerSim(100)
    _sim.schedule([("a", 30), ("b", 40), ("a", 30)])
    _before = _state(_sim)
    for _args in (("big", 101), ("a", 101), ("c", 0), ("", 5), (None, 5), (("t",), 5)):
        assert_raises(ValueError, f"touch{_args!r} with capacity 100", _sim.touch, *_args)
        assert_plain_equal(_state(_sim), _before, f"the state after touch{_args!r} raised", reveal=False)
    assert_plain_equal(_sim.touch("c", 100), None, "touch('c', 100) with capacity 100")
    assert_plain_equal(_sim.log[-3:], ["evict:b", "evict:a", "add:c"], "the log after touch('c', 100) (a full-size entry)")

    # _score at a later time: recency decays; before last_used it counts as age 0.
    _sim = KVCacheSchedulerSim(256)
    _sim.time = 10
    for _h, _s, _lu in ((1, 64, 10), (3, 256, 7), (2, 1, 0), (5, 100, 12)):
        assert_plain_equal(_sim._score(_h, _s, _lu), _h + 0.5 * (1 / (1 + max(10 - _lu, 0))) - 0.25 * _s / 256,
                           f"_score({_h}, {_s}, {_lu}) at time 10, capacity 256")

    # A stale item that agrees with its entry on priority but not on last_used must be skipped.
    _sim = KVCacheSchedulerSim(100)
    _sim.schedule([("a", 10), ("b", 10)])
    _sim.time = 7
    _sim.entries["a"].last_used = 7
    _sim._refresh_queue("a")  # pushes the same priority with last_used 7; (priority, 1, 'a') is now stale
    _sim._evict_until_fit(81)
    assert_plain_equal(_sim.log[-1], "evict:b", "_evict_until_fit(81) after a's item was re-pushed with a newer last_used")
    assert_plain_equal(sorted(_sim.entries), ["a"], "entries after that eviction")
    # ... and one that agrees on last_used but not on priority, too.
    _sim = KVCacheSchedulerSim(100)
    _sim.schedule([("a", 10), ("b", 10)])
    _sim.entries["a"].hits = 5
    _sim._refresh_queue("a")
    _sim._evict_until_fit(81)
    assert_plain_equal(_sim.log[-1], "evict:b", "_evict_until_fit(81) after a's item was re-pushed with a higher priority")
    # When the heap runs dry, the smallest (priority, last_used) entry goes.
    _sim = KVCacheSchedulerSim(100)
    _sim.schedule([("a", 20), ("b", 50), ("c", 20), ("a", 20)])
    _sim.queue.clear()
    _sim._evict_until_fit(70)
    assert_plain_equal([_sim.log[-2:], _sim.current_bytes], [["evict:b", "evict:c"], 20],
                       "_evict_until_fit(70) with an empty heap (the fallback)")
    _sim._evict_until_fit(0)
    assert_plain_equal(_sim.log[-1], "evict:c", "_evict_until_fit(0) when everything fits must evict nothing")
    ### END HIDDEN TESTS


_check_task5_2_KVCacheSchedulerSim()


# %% [markdown]
# ## A closer look: when is the score computed? | 细看：分数是何时计算的？
#
# Look at where `_score` is called: only in `_refresh_queue`, right after `last_used = time`. So at that moment
# `time - last_used = 0` and **recency is always exactly 1**. The priority stored in the heap is
# hits + 0.5 − 0.25 · size/capacity, and it is never recomputed while the entry waits: a prefix last used 1,000
# steps ago keeps the priority it had the moment it was touched. The recency term is a constant; recency acts only
# through the **tie-break on last_used**, among entries with equal hits and equal size. In effect this is LFU with a
# size penalty and an LRU tie-break.
#
# The fix is to evaluate the score when it is needed, at eviction time, for every candidate. A heap cannot do that
# cheaply: every item's key changes at every tick, so the heap would have to be rebuilt, $O(n)$ Python work per
# eviction. A tensor holds all keys side by side and rescoring is a few whole-tensor operations, which is Task 5.3.
#
# Because one hit weighs more than the other two terms together, rescoring never overturns hits: it changes the
# choice only among entries with equal hits, where an old small entry can now lose to a recent large one.
#
# 看看 `_score` 在哪里被调用：只在 `_refresh_queue` 中，紧跟在 `last_used = time` 之后。因此此刻 `time - last_used = 0`，
# **新近度总是恰好为 1**。存入堆中的优先级是 hits + 0.5 − 0.25 · size/capacity，条目等待期间它从不重新计算：1000 步之前
# 用过的前缀，仍保持它被访问那一刻的优先级。新近度项是一个常数；新近度只通过 **last_used 上的平局规则** 起作用，
# 且只在 hits 和大小都相同的条目之间。实际上这是带大小惩罚、以 LRU 打破平局的 LFU。
#
# 修正的办法是在需要时（驱逐时刻）为每个候选条目计算分数。堆很难低成本做到：每个元素的键在每个时刻都会变，堆只能重建，
# 每次驱逐都要 $O(n)$ 的 Python 工作。张量把所有键并排存放，重新评分只需几个整张量运算，这就是任务 5.3。
#
# 由于一次命中的分量超过另两项之和，重新评分永远不会推翻 hits 的排序：它只在 hits 相同的条目之间改变选择，此时一个旧的小条目
# 可能输给一个新近的大条目。

# %% [markdown] nbgrader={"grade": false, "grade_id": "task5_3_TensorKVCacheScheduler_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 5.3: TensorKVCacheScheduler (9 points)
#
# Write `TensorKVCacheScheduler(capacity_bytes, max_entries, device=None, rescore=False)` with the same `touch`,
# `schedule`, `snapshot`, `log`, `current_bytes` and `time` as Task 5.2, but with the entries in tensors of shape
# `(max_entries,)` on `device` (`None` means the CPU), one slot per entry:
#
# | attribute | dtype | meaning |
# |---|---|---|
# | `hits` | int64 | hits of the entry in the slot |
# | `bytes` | int64 | its size |
# | `last_used` | int64 | the time of its last touch |
# | `priority` | **float64** | its stored score |
# | `alive` | bool | whether the slot holds a live entry |
#
# The only Python-side bookkeeping per entry is the mapping between prefixes and slots (`slots`, a dict from prefix
# to slot index; you may also keep a list from slot to prefix to write the log). A new entry takes any free slot.
#
# - The victim is the live slot with the lexicographically smallest `(priority, last_used)`, found with tensor
#   operations (no Python loop over the slots).
# - `rescore=False`: the priority of an entry is computed when it is touched, exactly as in Task 5.2, so the log and
#   the snapshot equal `KVCacheSchedulerSim`'s on every trace.
# - `rescore=True`: before each eviction choice, recompute **every live entry's** priority with the current time
#   (the formula of `_score`, same order of operations) and store it in `priority`; then choose.
# - Errors: `ValueError` when `capacity_bytes < 1` or `max_entries < 1`, and in `touch` as in Task 5.2; a
#   `RuntimeError` when a miss needs a new slot while all `max_entries` slots are live (that is, when nothing has to be
#   evicted for bytes); the state is not changed when it raises.
#
# Hints: mask dead slots with `torch.where(alive, priority, inf)`; find the minimum priority, then among the slots
# that have it the smallest last_used. Read single values back with `int(...)`/`float(...)`.
#
# ## 任务 5.3：TensorKVCacheScheduler（9 分）
#
# 编写 `TensorKVCacheScheduler(capacity_bytes, max_entries, device=None, rescore=False)`，其 `touch`、`schedule`、`snapshot`、
# `log`、`current_bytes` 和 `time` 与任务 5.2 相同，但条目存放在 `device`（`None` 表示 CPU）上形状为 `(max_entries,)` 的张量中，
# 每个条目一个槽位（见上表：`hits`、`bytes`、`last_used` 为 int64，`priority` 为 **float64**，`alive` 为 bool）。
#
# 每个条目在 Python 端唯一的记录是前缀与槽位之间的映射（`slots`：前缀到槽位下标的字典；为写日志，也可以保留一个从槽位到前缀的列表）。
# 新条目可以占用任意空闲槽位。
#
# - 受害者是 `(priority, last_used)` 按字典序最小的有效槽位，必须用张量运算求出（不能用 Python 循环遍历槽位）。
# - `rescore=False`：条目的优先级在被访问时计算，与任务 5.2 完全相同，因此在任何轨迹上日志和快照都与 `KVCacheSchedulerSim` 相同。
# - `rescore=True`：每次选择受害者之前，用当前时间重新计算**每个有效条目**的优先级（`_score` 的公式，运算顺序相同），
#   写入 `priority`，然后再选择。
# - 错误：`capacity_bytes < 1` 或 `max_entries < 1` 时抛出 `ValueError`，`touch` 中的检查同任务 5.2；未命中需要新槽位而
#   `max_entries` 个槽位全部有效（即不需要为字节驱逐任何条目）时抛出 `RuntimeError`；抛出异常时状态不变。
#
# 提示：用 `torch.where(alive, priority, inf)` 屏蔽空槽位；先求最小优先级，再在具有该优先级的槽位中找最小的 last_used。
# 用 `int(...)`/`float(...)` 读回单个值。

# %% nbgrader={"grade": false, "grade_id": "task5_3_TensorKVCacheScheduler", "locked": false, "schema_version": 3, "solution": true, "task": false}
class TensorKVCacheScheduler:
    """KVCacheSchedulerSim with its entries in tensors; optionally rescored at eviction time.

    Args:
        capacity_bytes: int >= 1.
        max_entries: int >= 1, the number of slots.
        device: where the tensors live (None: the CPU).
        rescore: when True, every live entry's priority is recomputed with the current time
            before each eviction choice.

    Attributes: hits, bytes, last_used (int64), priority (float64), alive (bool), each of shape
    (max_entries,) on device; slots (dict from prefix to slot); log, current_bytes, time.

    Raises:
        ValueError: capacity_bytes < 1 or max_entries < 1; bad input to touch as in Task 5.2.
        RuntimeError: a miss needs a slot while every slot is live (the state is not changed).
    """

    def __init__(self, capacity_bytes, max_entries, device=None, rescore=False):
        ### BEGIN SOLUTION
        if capacity_bytes < 1:
            raise ValueError(f"capacity_bytes must be >= 1, got {capacity_bytes}")
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.capacity_bytes = capacity_bytes
        self.max_entries = max_entries
        self.device = torch.device("cpu") if device is None else torch.device(device)
        self.rescore = bool(rescore)
        self.current_bytes = 0
        self.time = 0
        self.log = []
        self.slots = {}
        self._prefix_at = [None] * max_entries
        zeros = dict(size=(max_entries,), device=self.device)
        self.hits = torch.zeros(**zeros, dtype=torch.int64)
        self.bytes = torch.zeros(**zeros, dtype=torch.int64)
        self.last_used = torch.zeros(**zeros, dtype=torch.int64)
        self.priority = torch.zeros(**zeros, dtype=torch.float64)
        self.alive = torch.zeros(**zeros, dtype=torch.bool)
        ### END SOLUTION

    def _victim(self):
        """Return the live slot with the smallest (priority, last_used), rescoring first if asked."""
        ### BEGIN SOLUTION
        if self.rescore:
            age = (self.time - self.last_used).clamp(min=0).to(torch.float64)
            scores = (self.hits.to(torch.float64) + 0.5 * (1.0 / (1.0 + age))
                      - 0.25 * self.bytes.to(torch.float64) / self.capacity_bytes)
            self.priority = torch.where(self.alive, scores, self.priority)
        inf = torch.full_like(self.priority, float("inf"))
        priority = torch.where(self.alive, self.priority, inf)
        tied = self.alive & (priority == priority.min())
        latest = torch.full_like(self.last_used, torch.iinfo(torch.int64).max)
        return int(torch.argmin(torch.where(tied, self.last_used, latest)))
        ### END SOLUTION

    def touch(self, prefix, bytes_):
        """Request prefix (bytes_ bytes), exactly as KVCacheSchedulerSim.touch."""
        ### BEGIN SOLUTION
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(f"touch: prefix must be a non-empty str, got {prefix!r}")
        if bytes_ < 1 or bytes_ > self.capacity_bytes:
            raise ValueError(f"touch({prefix!r}, {bytes_}): bytes_ must be in [1, {self.capacity_bytes}]")
        slot = self.slots.get(prefix)
        if (slot is None and len(self.slots) >= self.max_entries
                and self.current_bytes + bytes_ <= self.capacity_bytes):
            raise RuntimeError(f"touch({prefix!r}, {bytes_}): all {self.max_entries} slots hold live entries")
        self.time += 1
        if slot is not None:
            hits = int(self.hits[slot]) + 1
            size = int(self.bytes[slot])
            self.hits[slot] = hits
            self.last_used[slot] = self.time
            recency = 1 / (1 + 0)
            self.priority[slot] = hits + 0.5 * recency - 0.25 * size / self.capacity_bytes
            self.log.append(f"reuse:{prefix}")
            return
        while self.slots and self.current_bytes + bytes_ > self.capacity_bytes:
            victim = self._victim()
            name = self._prefix_at[victim]
            self.alive[victim] = False
            self._prefix_at[victim] = None
            del self.slots[name]
            self.current_bytes -= int(self.bytes[victim])
            self.log.append(f"evict:{name}")
        slot = int(torch.argmin(self.alive.to(torch.uint8)))  # the first free slot
        self.slots[prefix] = slot
        self._prefix_at[slot] = prefix
        self.hits[slot] = 1
        self.bytes[slot] = bytes_
        self.last_used[slot] = self.time
        self.priority[slot] = 1 + 0.5 * (1 / (1 + 0)) - 0.25 * bytes_ / self.capacity_bytes
        self.alive[slot] = True
        self.current_bytes += bytes_
        self.log.append(f"add:{prefix}")
        ### END SOLUTION

    def schedule(self, requests):
        """Touch every (prefix, bytes_) of requests in order; return a copy of the whole log."""
        ### BEGIN SOLUTION
        for prefix, bytes_ in requests:
            self.touch(prefix, bytes_)
        return list(self.log)
        ### END SOLUTION

    def snapshot(self):
        """Return [(prefix, bytes, round(priority, 4), hits)] ordered by (-priority, last_used, prefix)."""
        ### BEGIN SOLUTION
        priority, size = self.priority.tolist(), self.bytes.tolist()
        hits, last_used = self.hits.tolist(), self.last_used.tolist()
        ordered = sorted(self.slots.items(), key=lambda item: (-priority[item[1]], last_used[item[1]], item[0]))
        return [(prefix, size[slot], round(priority[slot], 4), hits[slot]) for prefix, slot in ordered]
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task5_3_TensorKVCacheScheduler", "locked": true, "points": 9, "schema_version": 3, "solution": false, "task": false}
"""Check that TensorKVCacheScheduler reproduces the heap simulator, rescores on request, on every device."""


def _check_task5_3_TensorKVCacheScheduler():
    from course.checks import assert_no_python_loop, assert_plain_equal, assert_raises, check_type
    from course.env import available_devices

    KNOWN = [("a", 40), ("b", 48), ("a", 40), ("c", 56), ("d", 48), ("a", 40)]
    AGING = [("a", 10), ("b", 10), ("c", 10), ("d", 58), ("e", 20)]
    for device in available_devices():
        sched = TensorKVCacheScheduler(128, 8, device=device)
        assert_plain_equal(sched.schedule(KNOWN),
                           ["add:a", "add:b", "reuse:a", "evict:b", "add:c", "evict:c", "add:d", "reuse:a"],
                           f"TensorKVCacheScheduler(128, 8).schedule([a40, b48, a40, c56, d48, a40]) on {device}")
        assert_plain_equal(sched.snapshot(), [("a", 40, 3.4219, 3), ("d", 48, 1.4062, 1)],
                           f"snapshot() after that schedule on {device}", abs_tol=1e-4)
        assert_plain_equal([sched.time, sched.current_bytes], [6, 88], f"[time, current_bytes] on {device}")
        for name, dtype in (("hits", torch.int64), ("bytes", torch.int64), ("last_used", torch.int64),
                            ("priority", torch.float64), ("alive", torch.bool)):
            tensor = getattr(sched, name)
            check_type(tensor, torch.Tensor, f"sched.{name}")
            assert tensor.dtype == dtype and tuple(tensor.shape) == (8,) and tensor.device.type == device.type, (
                f"sched.{name} must be a {dtype} tensor of shape (8,) on {device}; "
                f"got {tensor.dtype}, {tuple(tensor.shape)}, {tensor.device}")
        assert_plain_equal(int(sched.alive.sum()), 2, f"the number of live slots after that schedule on {device}")
        # Frozen scores evict the big recent d; rescored at time 5, the old a has decayed most.
        assert_plain_equal(TensorKVCacheScheduler(100, 8, device=device).schedule(AGING),
                           ["add:a", "add:b", "add:c", "add:d", "evict:d", "add:e"],
                           f"rescore=False on [a10, b10, c10, d58, e20], capacity 100, on {device}")
        rescored = TensorKVCacheScheduler(100, 8, device=device, rescore=True)
        assert_plain_equal(rescored.schedule(AGING), ["add:a", "add:b", "add:c", "add:d", "evict:a", "add:e"],
                           f"rescore=True on [a10, b10, c10, d58, e20], capacity 100, on {device}")
        assert_plain_equal(rescored.snapshot(), [("e", 20, 1.45, 1), ("c", 10, 1.1417, 1), ("d", 58, 1.105, 1), ("b", 10, 1.1, 1)],
                           f"snapshot() after rescore=True on that trace, on {device}", abs_tol=1e-4)
        small = TensorKVCacheScheduler(100, 2, device=device)
        small.schedule([("a", 10), ("b", 10)])
        assert_raises(RuntimeError, f"a third entry with max_entries=2 on {device}", small.touch, "c", 10)
    assert_raises(ValueError, "TensorKVCacheScheduler(0, 4)", TensorKVCacheScheduler, 0, 4)
    assert_raises(ValueError, "TensorKVCacheScheduler(64, 0)", TensorKVCacheScheduler, 64, 0)
    assert_raises(ValueError, "touch('a', 65) with capacity 64", TensorKVCacheScheduler(64, 4).touch, "a", 65)

    ### BEGIN HIDDEN TESTS
    import random as _random


    def _oracle_run(capacity, requests, rescore):
        """Rows of [hits, size, last_used, priority]; the victim is a scan, rescored first when asked."""
        rows, log, used = {}, [], 0

        def _value(row, now):
            return row[0] + 0.5 * (1 / (1 + max(now - row[2], 0))) - 0.25 * row[1] / capacity

        for now, (name, size) in enumerate(requests, start=1):
            if name in rows:
                rows[name][0] += 1
                rows[name][2] = now
                rows[name][3] = _value(rows[name], now)
                log.append("reuse:" + name)
                continue
            while rows and used + size > capacity:
                if rescore:
                    for row in rows.values():
                        row[3] = _value(row, now)
                victim = min(rows, key=lambda k: (rows[k][3], rows[k][2]))
                used -= rows.pop(victim)[1]
                log.append("evict:" + victim)
            rows[name] = [1, size, now, 0.0]
            rows[name][3] = _value(rows[name], now)
            used += size
            log.append("add:" + name)
        order = sorted(rows, key=lambda k: (-rows[k][3], rows[k][2], k))
        return log, [(k, rows[k][1], round(rows[k][3], 4), rows[k][0]) for k in order], used


    _rng = _random.Random(5303)
    for device in available_devices():
        for _case in range(120):
            _cap = _rng.choice([16, 64, 100, 128, 1000])
            _names = [f"p{i}" for i in range(_rng.randint(1, 9))]
            _pool = _rng.choice([[_cap // 4], [_cap // 8, _cap // 4, _cap // 2], list(range(1, _cap + 1))])
            _sizes = {n: _rng.choice(_pool) for n in _names}
            _requests = [(n, _sizes[n]) for n in (_rng.choice(_names) for _ in range(_rng.randint(1, 30)))]
            for _rescore in (False, True):
                _s = TensorKVCacheScheduler(_cap, len(_names), device=device, rescore=_rescore)
                _log = _s.schedule(_requests)
                _exp_log, _exp_snap, _exp_used = _oracle_run(_cap, _requests, _rescore)
                _where = f"random case {_case}, rescore={_rescore}, {device}"
                check_type(_log, list, f"schedule on {_where}")
                assert_plain_equal(_log, _exp_log, f"the log on {_where}", reveal=False)
                assert_plain_equal(_s.snapshot(), _exp_snap, f"snapshot() on {_where}", abs_tol=1e-4, reveal=False)
                assert_plain_equal([_s.time, _s.current_bytes, int(_s.alive.sum()), sorted(_s.slots)],
                                   [len(_requests), _exp_used, len(_exp_snap), sorted(r[0] for r in _exp_snap)],
                                   f"[time, current_bytes, live slots, sorted(slots)] on {_where}", reveal=False)
                assert _s.priority.dtype == torch.float64 and _s.priority.device.type == device.type, \
                    f"priority must stay a float64 tensor on {device} ({_where})"
        # A full table of slots: RuntimeError only when nothing has to be evicted for bytes, and nothing changes.
        _s = TensorKVCacheScheduler(100, 2, device=device)
        _s.schedule([("a", 30), ("b", 30), ("a", 30)])
        _before = (list(_s.log), _s.time, _s.current_bytes, _s.snapshot())
        assert_raises(RuntimeError, f"touch('c', 40) with both slots live on {device}", _s.touch, "c", 40)
        assert_plain_equal([list(_s.log), _s.time, _s.current_bytes, _s.snapshot()], list(_before),
                           f"the state after the RuntimeError on {device}", abs_tol=1e-4)
        _s.touch("a", 30)
        _s.touch("d", 60)
        assert_plain_equal(_s.log[-2:], ["evict:b", "add:d"], f"a miss that frees a slot by eviction on {device}")
        for _args in (("", 5), (3, 5), ("x", 0), ("x", 101)):
            assert_raises(ValueError, f"touch{_args!r} on {device}", _s.touch, *_args)
        assert_plain_equal([_s.time, len(_s.log)], [5, 6], f"[time, len(log)] after rejected input on {device}")
        _empty = TensorKVCacheScheduler(50, 3, device=device)
        assert_plain_equal([_empty.snapshot(), _empty.log, _empty.current_bytes, _empty.time], [[], [], 0, 0],
                           f"a new TensorKVCacheScheduler(50, 3) on {device}")


    def _filled(n, rescore):
        s = TensorKVCacheScheduler(n, n, rescore=rescore)
        s.schedule([(f"p{i}", 1) for i in range(n)])
        return s


    for _rescore in (False, True):
        _small_s, _large_s = _filled(8, _rescore), _filled(2048, _rescore)

        def _evict_one(hits, size, last_used, priority, alive, _sched):
            _sched.hits, _sched.bytes, _sched.last_used, _sched.priority, _sched.alive = hits, size, last_used, priority, alive
            _sched.touch("new", 1)

        def _args(s):
            return (s.hits, s.bytes, s.last_used, s.priority, s.alive, s)

        assert_no_python_loop(_evict_one, _args(_small_s), _args(_large_s), f"TensorKVCacheScheduler.touch (rescore={_rescore})")
        assert_plain_equal(_large_s.log[-2:], ["evict:p0", "add:new"], f"the eviction in a full table of 2048 (rescore={_rescore})")
    ### END HIDDEN TESTS


_check_task5_3_TensorKVCacheScheduler()

# %% [markdown]
# ## Experiment 1: frozen and rescored scores over time | 实验 1：冻结分数与重新评分随时间的变化
#
# The score of one entry as it ages, stored at its last touch (frozen, what the heap holds) and recomputed at
# every step (rescored). Move the sliders: the frozen line never moves, so two entries with equal hits and
# size are told apart only by their last_used; the rescored curve decays by up to 0.5, never more than one hit.
#
# 一个条目的分数随年龄的变化：在最近一次访问时存下的分数（冻结，也就是堆中保存的值）与每一步重新计算的分数（重新评分）。
# 拖动滑块：冻结的线从不移动，因此 hits 与大小都相同的两个条目只能靠 last_used 区分；重新评分的曲线最多下降 0.5，永远不到一次命中。

# %%
import ipywidgets as widgets
import matplotlib.pyplot as plt


def draw_scores(hits=2, size_kib=256, capacity_kib=1024):
    sim = KVCacheSchedulerSim(capacity_kib)
    ages = list(range(0, 31))
    frozen = sim._score(hits, size_kib, 0)          # computed at the touch: time == last_used == 0
    rescored = []
    for age in ages:
        sim.time = age                              # the same entry, scored at a later time
        rescored.append(sim._score(hits, size_kib, 0))
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.plot(ages, [frozen] * len(ages), label="frozen (stored at the touch)")
    ax.plot(ages, rescored, label="rescored (at eviction time)")
    ax.axhline(hits - 1 + 0.5, color="grey", lw=0.8, ls=":", label="best score with one hit fewer")
    ax.set_title(f"Score of one entry: hits={hits}, size={size_kib} KiB of {capacity_kib} KiB")
    ax.set_xlabel("age: steps since the last touch")
    ax.set_ylabel("score (dimensionless)")
    ax.legend(loc="lower left")
    plt.tight_layout()
    plt.show()


widgets.interact(draw_scores, hits=widgets.IntSlider(value=2, min=1, max=6),
                 size_kib=widgets.IntSlider(value=256, min=16, max=1024, step=16),
                 capacity_kib=widgets.fixed(1024))

# %% [markdown]
# ## Experiment 2: frozen vs rescored vs LRU vs Belady | 实验 2：冻结评分、重新评分、LRU 与 Belady 的比较
#
# Two workloads from `course.traces`: interleaved multi-turn **chat** sessions that share a few system prompts, and
# **Zipf** document question answering. Every prefix block is an entry, and each request touches its blocks in order.
# We replay them against caches of several sizes with the frozen scheduler (your `KVCacheSchedulerSim`), the rescored
# one (your `TensorKVCacheScheduler(rescore=True)`), LRU and Belady, twice:
#
# - **unit-size blocks** (every block 1 byte, capacity in blocks): LRU and Belady's MIN come from the course's replay
#   engine, `course.replay.replay(trace, capacity, policy)`, and MIN is the true optimum, the ceiling;
# - **varied sizes** (16 to 128 KiB, fixed per block): the engine replays unit-size blocks only, so LRU and Belady's
#   furthest-next-use rule are written here on bytes (the cell checks them against the engine on unit sizes). With
#   varied sizes the Belady rule is a strong offline heuristic, not a bound. We report the **hit ratio** (touches that
#   reuse an entry) and the **byte hit ratio** (bytes served from the cache over bytes requested, closer to the
#   prefill time saved).
#
# 两个来自 `course.traces` 的负载：共享少量系统提示、交错进行的多轮 **对话** 会话，以及 **Zipf** 分布的文档问答。每个前缀块是一个
# 条目，每个请求按顺序访问它的块。我们在多个缓存大小下用冻结评分调度器（你的 `KVCacheSchedulerSim`）、重新评分调度器（你的
# `TensorKVCacheScheduler(rescore=True)`）、LRU 和 Belady 回放它们，分两种情况：
#
# - **单位大小的块**（每块 1 字节，容量以块计）：LRU 和 Belady 的 MIN 来自课程的回放引擎 `course.replay.replay(trace, capacity, policy)`，
#   此时 MIN 是真正的最优解，即上限；
# - **大小不同的块**（16 到 128 KiB，每块固定）：回放引擎只支持单位大小的块，所以这里按字节编写 LRU 和 Belady 的"下次使用最远者先出"
#   规则（代码会在单位大小上与引擎核对）。块大小不同时 Belady 规则是很强的离线启发式，而不是上界。我们报告 **命中率**
#   （复用条目的访问占比）和 **字节命中率**（从缓存提供的字节占请求字节的比例，更接近节省的预填充时间）。

# %%
import random
from collections import OrderedDict

from course.plots import plot_hit_ratio_curves
from course.replay import replay
from course.traces import chat_sessions, flatten, zipf_documents

KIB_SIZES = (16, 32, 64, 128)
FRACTIONS = (0.05, 0.1, 0.2, 0.4)
POLICIES = ("frozen (heap)", "rescored (tensor)", "LRU", "Belady")


def lru_hits(requests, capacity):
    """LRU on bytes: one bool per touch, True for a hit."""
    cache, used, hits = OrderedDict(), 0, []
    for prefix, size in requests:
        hits.append(prefix in cache)
        if prefix in cache:
            cache.move_to_end(prefix)
            continue
        while used + size > capacity:
            used -= cache.popitem(last=False)[1]
        cache[prefix] = size
        used += size
    return hits


def belady_hits(requests, capacity):
    """Belady's rule on bytes: evict the cached entry whose next use is furthest away."""
    next_use, seen = [0] * len(requests), {}
    for i in range(len(requests) - 1, -1, -1):
        next_use[i] = seen.get(requests[i][0], len(requests))
        seen[requests[i][0]] = i
    cache, used, hits = {}, 0, []          # prefix -> [size, next use]
    for i, (prefix, size) in enumerate(requests):
        hits.append(prefix in cache)
        if prefix in cache:
            cache[prefix][1] = next_use[i]
            continue
        while used + size > capacity:
            used -= cache.pop(max(cache, key=lambda p: (cache[p][1], p)))[0]
        cache[prefix] = [size, next_use[i]]
        used += size
    return hits


def scheduler_hits(scheduler, requests):
    hits = []
    for prefix, size in requests:
        scheduler.touch(prefix, size)
        hits.append(scheduler.log[-1] == f"reuse:{prefix}")
    return hits


traces = {
    "chat": chat_sessions(num_sessions=40, turns=4, system_prompts=3, system_prompt_blocks=4,
                          blocks_per_turn=2, seed=0),
    "zipf": zipf_documents(num_requests=200, num_documents=120, blocks_per_document=5,
                           system_prompt_blocks=2, alpha=0.9, seed=0),
}
size_rng = random.Random(0)
unit_curves, results = {}, {}
for name, trace in traces.items():
    blocks = flatten(trace).tolist()
    size_of = {block: size_rng.choice(KIB_SIZES) for block in sorted(set(blocks))}
    unit = [(f"blk{b}", 1) for b in blocks]
    sized = [(f"blk{b}", size_of[b]) for b in blocks]
    curves = {policy: {} for policy in POLICIES}
    for fraction in FRACTIONS:
        # Unit-size blocks: capacity in blocks; LRU and Belady's MIN from the course's replay engine.
        capacity = max(1, int(fraction * len(size_of)))
        lru, belady = replay(trace, capacity, "lru"), replay(trace, capacity, "belady")
        assert sum(lru_hits(unit, capacity)) == lru.hits and sum(belady_hits(unit, capacity)) == belady.hits
        curves["frozen (heap)"][capacity] = sum(scheduler_hits(KVCacheSchedulerSim(capacity), unit)) / len(unit)
        curves["rescored (tensor)"][capacity] = sum(scheduler_hits(
            TensorKVCacheScheduler(capacity, len(size_of), rescore=True), unit)) / len(unit)
        curves["LRU"][capacity], curves["Belady"][capacity] = lru.hit_ratio, belady.hit_ratio
        # Varied sizes: capacity in KiB.
        capacity_kib = max(max(KIB_SIZES), int(fraction * sum(size_of.values())))
        runs = {
            "frozen (heap)": scheduler_hits(KVCacheSchedulerSim(capacity_kib), sized),
            "rescored (tensor)": scheduler_hits(
                TensorKVCacheScheduler(capacity_kib, len(size_of), rescore=True), sized),
            "LRU": lru_hits(sized, capacity_kib),
            "Belady": belady_hits(sized, capacity_kib),
        }
        total_kib = sum(size for _, size in sized)
        for policy, hits in runs.items():
            hit_kib = sum(size for (_, size), hit in zip(sized, hits) if hit)
            results[name, fraction, policy] = (sum(hits) / len(hits), hit_kib / total_kib)
    unit_curves[name] = curves
    print(f"{name}: {len(blocks)} block references, {len(size_of)} distinct blocks, "
          f"{sum(size_of.values())} KiB if all were cached")

fig, axes = plt.subplots(2, 3, figsize=(14, 7))
for row, name in enumerate(traces):
    curves = dict(unit_curves[name])
    plot_hit_ratio_curves({p: curves[p] for p in POLICIES[:3]}, belady=curves["Belady"],
                          title=f"{name}, unit-size blocks: hit ratio", ax=axes[row][0])
    for col, (metric, index) in enumerate((("hit ratio", 0), ("byte hit ratio", 1)), start=1):
        ax = axes[row][col]
        for policy in POLICIES:
            ax.plot([100 * f for f in FRACTIONS], [100 * results[name, f, policy][index] for f in FRACTIONS],
                    marker="o", markersize=3, label=policy, linestyle="--" if policy == "Belady" else "-")
        ax.set_title(f"{name}, varied sizes: {metric}")
        ax.set_xlabel("cache capacity (% of all distinct KiB)")
        ax.set_ylabel(f"{metric} (%)")
        ax.set_ylim(0, 100)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# What the plots show (the traces are seeded, so you should see the same curves):
#
# - **Unit-size blocks: frozen and rescored coincide.** With equal sizes the size term is the same for every entry,
#   and among entries with equal hits rescoring ranks them by recency, which decays in the same order as last_used:
#   the very tie-break the frozen scores use. Both beat LRU at small caches, because the hits term protects blocks that
#   were already reused (the shared system prompts, popular documents) from a burst of one-off blocks; on chat, LRU
#   catches up once the cache holds the live sessions. MIN stays 10 to 20 points above all three.
# - **Varied sizes: now they differ.** With frozen scores, among equal hits the size term decides (recency is a
#   constant), so the biggest blocks go first: the best hit ratio of the online policies at most sizes, because many small blocks
#   stay. Rescoring lets an old small block lose to a recent big one: a lower hit ratio, but on small chat caches a
#   clearly higher byte hit ratio. Which one matters depends on what a miss costs; prefill time grows with the tokens
#   of a block, so the byte hit ratio is the closer measure of time saved.
# - Belady's rule, which knows the future, stays well above every online policy: room that better prediction could
#   still win.
#
# 图中可以看到（轨迹使用了固定种子，你应当看到同样的曲线）：
#
# - **单位大小的块：冻结评分与重新评分完全重合。** 大小相同时，大小项对所有条目都一样；在 hits 相同的条目之间，重新评分按新近度排序，
#   而新近度的衰减顺序与 last_used 的顺序相同，这正是冻结评分使用的平局规则。两者在小缓存上都优于 LRU，因为 hits 项保护已被复用的块
#   （共享系统提示、热门文档），不让一阵只用一次的块把它们挤出去；在对话负载上，缓存能容纳活跃会话后 LRU 就追了上来。
#   MIN 比三者都高 10 到 20 个百分点。
# - **大小不同的块：两者出现差别。** 冻结评分时，在 hits 相同的条目之间由大小项决定（新近度是常数），所以最大的块最先被驱逐：
#   在多数缓存大小下这给出在线策略中最高的命中率，因为留下了许多小块。重新评分让旧的小块可能输给新近的大块：命中率较低，但在对话负载的小缓存上
#   字节命中率明显更高。哪个指标更重要取决于未命中的代价；预填充时间随块的 token 数增长，因此字节命中率更接近节省的时间。
# - 知道未来的 Belady 规则始终明显高于所有在线策略：这是更好的预测仍可赢得的空间。
#
# ## Experiment 3: heap vs tensor as the cache grows | 实验 3：缓存变大时堆与张量的对比
#
# Throughput (evictions per second) of a cache that is full of `n` one-byte entries, where every request is a miss
# that evicts exactly one entry. For frozen scores we time your heap simulator and your tensor scheduler; for
# rescored scores the heap has to rescore every entry in Python and rebuild itself before each choice
# (`RescoringSim` below, which makes the same decisions as `rescore=True`), while the tensor scheduler runs a few
# whole-tensor operations. We plot tensor throughput divided by heap throughput. The sizes stay small here (up to
# 10^4 on the CPU); `bench/bench_scheduler.py` goes to 10^6 live entries and reports the crossover. On a GPU each
# tensor operation costs a kernel launch (microseconds) whatever `n` is, so the tensor scheduler pays off only at
# large `n`: thousands to millions of entries.
#
# 一个装满 `n` 个 1 字节条目的缓存的吞吐量（每秒驱逐次数），其中每个请求都未命中并恰好驱逐一个条目。冻结评分时，我们计时你的堆模拟器
# 和你的张量调度器；重新评分时，堆必须在每次选择前用 Python 为每个条目重新评分并重建自身（下面的 `RescoringSim`，它的决定与
# `rescore=True` 相同），而张量调度器只需几个整张量运算。图中画出张量吞吐量除以堆吞吐量之比。这里规模较小（CPU 上最多 10^4）；
# `bench/bench_scheduler.py` 测到 10^6 个条目并报告交叉点。在 GPU 上，每个张量运算无论 `n` 多大都要一次内核启动（微秒级），因此张量
# 调度器只在 `n` 很大（数千到数百万个条目）时才划算。

# %%
import heapq
import time

from course.env import in_autograder


class RescoringSim(KVCacheSchedulerSim):
    """The heap simulator, rescoring every entry and rebuilding the heap before it evicts."""

    def _evict_until_fit(self, needed):
        if self.entries and self.current_bytes + needed > self.capacity_bytes:
            for entry in self.entries.values():
                entry.priority = self._score(entry.hits, entry.bytes, entry.last_used)
            self.queue = [(e.priority, e.last_used, e.prefix) for e in self.entries.values()]
            heapq.heapify(self.queue)
        super()._evict_until_fit(needed)


# The two rescored schedulers agree on a real trace (and the frozen ones do too: see the property test in tests/).
_chat = [(f"blk{b}", 16 * (1 + b % 8)) for b in flatten(traces["chat"]).tolist()]
_cap = int(0.1 * sum(dict(_chat).values()))
assert RescoringSim(_cap).schedule(_chat) == TensorKVCacheScheduler(_cap, len(dict(_chat)), rescore=True).schedule(_chat)


def evictions_per_second(scheduler, n, budget_s=0.15, min_ops=5):
    """Touch new prefixes into a full cache of n one-byte entries; each touch evicts one."""
    ops, started = 0, time.perf_counter()
    while ops < min_ops or time.perf_counter() - started < budget_s:
        scheduler.touch(f"new{ops}", 1)
        ops += 1
    return ops / (time.perf_counter() - started)


def full(scheduler, n):
    for i in range(n):
        scheduler.touch(f"p{i}", 1)
    return scheduler


SIZES = [100, 1000] if in_autograder() else [100, 1000, 10000]
rates = {}
for n in SIZES:
    rates["frozen", n] = (evictions_per_second(full(KVCacheSchedulerSim(n), n), n),
                          evictions_per_second(full(TensorKVCacheScheduler(n, n, device=DEVICE), n), n))
    rates["rescored", n] = (evictions_per_second(full(RescoringSim(n), n), n),
                            evictions_per_second(full(TensorKVCacheScheduler(n, n, device=DEVICE, rescore=True), n), n))
    print(f"n={n:>6}: frozen heap {rates['frozen', n][0]:>9.0f}/s tensor {rates['frozen', n][1]:>8.0f}/s | "
          f"rescored heap {rates['rescored', n][0]:>8.0f}/s tensor {rates['rescored', n][1]:>8.0f}/s")

fig, ax = plt.subplots(figsize=(7, 3.4))
for mode in ("frozen", "rescored"):
    ax.plot(SIZES, [rates[mode, n][1] / rates[mode, n][0] for n in SIZES], marker="o", label=f"{mode} scores")
ax.axhline(1.0, color="grey", lw=0.8, ls="--", label="equal throughput")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_title(f"Tensor scheduler ({DEVICE.type}) vs heap simulator")
ax.set_xlabel("live entries n")
ax.set_ylabel("throughput ratio tensor / heap")
ax.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# Read the plot with the algorithms in mind. With frozen scores the heap needs $O(\log n)$ per eviction and the
# tensor scheduler $O(n)$ work (in a few vectorized operations) plus a fixed cost per operation, so the heap stays
# ahead: about 20 times on the CPU at these sizes, and the gap widens with $n$ (the bench measures several hundred
# times at 10^6 on one CPU thread). Do not move a cheap heap onto tensors for its own sake. With rescored scores the
# heap has to touch every entry in Python, $O(n)$ interpreted work, and the tensor scheduler overtakes it between
# 10^2 and 10^3 entries and wins by a factor that grows with $n$ (30 to 70 times from 10^4 to 10^6 in the bench).
# The tensors buy you the policy the heap cannot afford, not speed for the policy it already does well.
#
# 结合算法来读这张图。冻结评分时，堆每次驱逐需要 $O(\log n)$，张量调度器需要 $O(n)$ 的工作（用几个向量化运算完成）外加每次运算的固定开销，
# 因此堆保持领先：在这些规模上 CPU 上约快 20 倍，而且差距随 $n$ 增大（基准测试在单个 CPU 线程、10^6 个条目时测得数百倍）。不要只为了用张量
# 而把便宜的堆搬到张量上。重新评分时，堆必须在 Python 中访问每个条目，即 $O(n)$ 的解释执行工作；张量调度器在 10^2 到 10^3 个条目之间反超，
# 且领先倍数随 $n$ 增长（基准测试中从 10^4 到 10^6 为 30 到 70 倍）。张量带给你的是堆负担不起的策略，而不是堆本来就做得好的策略的速度。
#
# ## Summary | 小结
#
# **Remember:** a score is only as fresh as the moment it was computed: the heap's lazy deletion keeps decisions
# correct for stale *items*, but only recomputing at eviction time, cheap with tensors, keeps the *scores* fresh.
#
# **记住：** 分数只和它被计算的那一刻一样新：堆的惰性删除让决定在面对过时*元素*时仍然正确，但只有在驱逐时刻重新计算
# （用张量很便宜）才能让*分数*保持新鲜。
#
# Next: [06. Prefix cache for a real decoder](../06_prefix_cache/06_prefix_cache.ipynb), where eviction decides how much
# prefill a real model skips. | 下一节：[06. 真实解码器的前缀缓存](../06_prefix_cache/06_prefix_cache.ipynb)，在那里驱逐决定一个真实模型能跳过多少预填充。
#
# ## References | 参考文献
#
# - The seed design of this notebook: the "KV Cache Scheduling" chapter of Datawhale's llm-algo-leetcode
#   (https://github.com/datawhalechina/llm-algo-leetcode; text CC BY 4.0, code Apache-2.0): the `CacheEntry` /
#   `KVCacheSchedulerSim` design, its score and its known answer. The code and prose here are written anew.
#   本 notebook 的种子设计来自 Datawhale llm-algo-leetcode 的 "KV Cache Scheduling" 一章（文字 CC BY 4.0，代码 Apache-2.0）；
#   这里的代码和文字均为重新编写。
# - The other seed design of the course: the "KV Eviction formula-to-code" walkthrough (LLM-REVIEW).
# - L. A. Belady, "A study of replacement algorithms for a virtual-storage computer", *IBM Systems Journal*, 1966.
# - W. Kwon et al., "Efficient Memory Management for Large Language Model Serving with PagedAttention" (vLLM), SOSP 2023.
# - L. Zheng et al., "SGLang: Efficient Execution of Structured Language Model Programs" (RadixAttention), NeurIPS 2024.
# - N. Megiddo, D. S. Modha, "ARC: A Self-Tuning, Low Overhead Replacement Cache", FAST 2003 (recency and frequency in one policy).
# - P. Cao, S. Irani, "Cost-Aware WWW Proxy Caching Algorithms" (GreedyDual-Size), USITS 1997 (scores that weigh size, and aging them).
# - Python documentation, `heapq`: "Priority Queue Implementation Notes" (marking removed entries instead of deleting them).
