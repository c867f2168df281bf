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
# [![Open in ModelScope](https://img.shields.io/badge/ModelScope-Open%20in%20ModelScope-624aff)](https://modelscope.cn/notebook/share/github/kvcache-course/kv-cache-eviction/blob/main/release/05_scheduler_sim/05_scheduler_sim.ipynb)
# [![GitHub](https://img.shields.io/badge/GitHub-release%2F05_scheduler_sim-black)](https://github.com/kvcache-course/kv-cache-eviction/blob/main/release/05_scheduler_sim/05_scheduler_sim.ipynb)
#
# **Difficulty:** ★★☆ intermediate · **Time:** about 90 minutes · **Points:** 22 · **GPU:** task 5.3 and the throughput experiment run on CUDA when a GPU is present; everything also runs on the CPU.
#
# **难度：** ★★☆ 中级 · **用时：** 约 90 分钟 · **总分：** 22 · **GPU：** 任务 5.3 和吞吐量实验在有 GPU 时于 CUDA 上运行；所有内容也都能在 CPU 上运行。
#
# **ModelScope (魔搭):** log in to ModelScope, then click the ModelScope badge: it opens this notebook from
# GitHub in a notebook instance of yours (choose CPU or GPU). Where that link does not work, choose
# *File → Open from URL…* in the instance's JupyterLab and paste <https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/05_scheduler_sim/05_scheduler_sim.ipynb>.
# 先登录魔搭，再点击 ModelScope 徽章：魔搭会从 GitHub 取来本 notebook，在你自己的 Notebook 实例中打开（可选 CPU 或 GPU）。
# 如果这个链接打不开，在实例的 JupyterLab 中选择 *File → Open from URL…*，粘贴 <https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/05_scheduler_sim/05_scheduler_sim.ipynb>。
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
# 前缀缓存把系统提示、文档、对话历史等提示前缀的 KV 张量留在显存里，让之后带有相同前缀的请求跳过预填充；可显存容量有限，新前缀放不下时调度器必须驱逐一些条目。本 notebook 的调度器给每个条目打分（命中次数、新近度、大小），驱逐分数最低者，并用带惰性删除的最小堆找到它。
# 这里有两个容易出错的地方：堆里会留下过期条目，而只按分数判断一个元素是否过期，一旦分数可能回落就会驱逐错误的前缀；另外分数只在访问时计算一次，它的新近度项其实从不变化。你先写出条目记录和堆调度器（按方法分部分计分），再把状态搬到张量中，复现同样的决定，并做到堆难以低成本完成的事：在驱逐时刻为每个条目重新评分；最后在访问轨迹上把两者与 LRU 和 Belady 比较，并测量张量版本何时比堆快。
#
# A prefix cache keeps the KV tensors of prompt prefixes (a system prompt, a document, a chat's history) in device
# memory so that a later request with the same prefix skips its prefill; the memory is fixed, so when a new prefix does
# not fit, the scheduler must evict entries. The scheduler of this notebook scores every entry (hits, recency, size),
# evicts the lowest score, and finds it with a min-heap with lazy deletion. Two things go wrong easily: the heap keeps
# stale entries, and a staleness check on the score alone evicts the wrong prefix as soon as scores can fall back; and
# the score is computed once, at the touch, so its recency term never changes. You write the entry record and the heap scheduler (graded method by
# method), then move the state into tensors, reproduce the same decisions, and do what the heap cannot do cheaply:
# rescore every entry at the moment of eviction; finally you compare both with LRU and Belady on traces and measure
# when the tensors beat the heap.
#
# ## Learning goals | 学习目标
#
# After this notebook you can:
# 1. state a score-based cache scheduler as three decisions: what to keep, what to evict, and how not to act on
#    stale information;
# 2. implement a min-heap with lazy deletion and explain where its stale entries come from;
# 3. read a scoring formula critically: find out *when* each term is evaluated, and what that does to it;
# 4. move the scheduler's state into tensors, reproduce the heap's decisions exactly, and do what the heap cannot
#    do cheaply: rescore every entry at the moment of eviction.
#
# 完成本 notebook 后，你能够：
# 1. 把基于评分的缓存调度器表述为三个决定：保留什么、驱逐什么、以及如何避免依据过期信息做决定；
# 2. 实现带惰性删除的最小堆，并解释其中过期条目的来源；
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
# 前缀缓存保存提示前缀（系统提示、文档、对话历史）的 KV 张量，使之后带有相同前缀的请求可以跳过预填充。内存容量是定值（`capacity_bytes`），因此调度器在每个请求上都要回答三个问题：
#
# 1. **保留什么？** 给每个缓存条目一个分数，估计它将来有多大用处。
# 2. **驱逐什么？** 新条目放不下时，驱逐分数最低的条目，反复进行，直到放得下。
# 3. **如何避免依据过期信息？** 条目被使用时分数会改变。不能原地更新元素的优先队列会留下旧副本；调度器必须识别并跳过它们。
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
# 本 notebook 的调度器（来自 Datawhale llm-algo-leetcode 的 "KV Cache Scheduling" 一章的设计）在逻辑时间 $t$ 为条目 $e$ 评分：
#
# $$\text{score}(e, t) = \underbrace{\text{hits}(e)}_{\text{频率}}
#  + 0.5 \cdot \underbrace{\frac{1}{1 + \max(t - t_\text{last}(e),\, 0)}}_{\text{新近度} \in (0, 1]}
#  - 0.25 \cdot \underbrace{\frac{\text{bytes}(e)}{\text{capacity\_bytes}}}_{\text{大小} \in (0, 1]}$$
#
# - **hits（命中次数）**：前缀被请求的次数（加入时为 1，每次复用加 1）。它起主导作用：多一次命中的分量超过另两项之和（另两项对分数的影响小于 0.5 + 0.25）。
# - **新近度（recency）**：在时间 $t$ 被访问的条目为 1，之后随年龄变为 1/2、1/3……；权重 0.5。
# - **大小（size）**：条目占缓存的比例；大条目占用的空间本可以容纳多个小条目，因此最多扣 0.25 分。
#
# 受害者（victim）是二元组 (priority, last_used) 按字典序最小的条目：分数最低者；分数相同时，最久未使用者。
#
# ## The lazy-deletion heap | 惰性删除堆
#
# Python's `heapq` finds the minimum in $O(\log n)$ but cannot change the priority of an item already in the heap.
# So when an entry is reused, the scheduler pushes a **new** item `(priority, last_used, prefix)` and leaves the
# old one where it is. The old item is now **stale**: it names a live prefix, but with a priority and a
# last_used that are no longer the entry's. Evicted entries leave items behind too. Eviction therefore pops until
# it finds an item that agrees with its live entry on *both* priority and last_used, and throws the others away.
# Checking the priority alone is not enough as soon as a score can fall back to an earlier value (a score that ages,
# as in Task 5.3's rescoring, or a priority set from outside): an old item then agrees with its entry on the priority
# and differs only in last_used, and evicting through it evicts the wrong entry. (With this simulator's frozen scores
# a cached prefix's priority only grows, so a run of touch calls never shows the difference; the test of part 5.2.4
# builds such a heap by hand, and the contract asks for both fields.) This is the same trick as SGLang's heap over radix-tree leaves and vLLM's evictor, which skip outdated
# heap items instead of deleting them.
#
# Python 的 `heapq` 能以 $O(\log n)$ 找到最小值，却不能修改已在堆中的元素的优先级。因此条目被复用时，调度器压入一个**新的**元素 `(priority, last_used, prefix)`，旧元素原样留在堆中。旧元素于是成了**过期条目**：它指向一个仍在缓存中的前缀，但其 priority 和 last_used 已不再是该条目的当前值。被驱逐的条目同样会留下元素。所以驱逐时要不断弹出，直到找到一个 priority 与 last_used *都*与其在缓存中的条目一致的元素，其余的丢弃。一旦分数可能回落到以前的值（例如会随时间衰减的分数，就像任务 5.3 的重新评分，或从外部设置的优先级），只检查 priority 就不够了：旧元素会在 priority 上与条目一致、只在 last_used 上不同，通过它驱逐就会驱逐错误的条目。（本模拟器的分数是冻结的，缓存中前缀的优先级只增不减，所以只调用 touch 的运行看不出差别；5.2.4 部分的测试会手工构造这样的堆，而契约要求两个字段都检查。）SGLang 在基数树叶子上的堆和 vLLM 的驱逐器也用同样的技巧：跳过过期的堆元素，而不是删除它们。

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
# victim of the score section, and `==` ignores prefix, hits and bytes. The three required fields must be given
# (`CacheEntry(1.0, 2)` raises `TypeError`), the fields can be given by position in this order, and they stay
# writable: the scheduler updates them in place. Fill in TODO 5.1.1 and TODO 5.1.2.
#
# ## 任务 5.1：CacheEntry（3 分）
#
# 编写调度器为每个前缀保存的记录：一个 `dataclass(order=True)`，字段依次为：
#
# | 字段 | 类型 | 参与比较？ | 默认值 |
# |---|---|---|---|
# | `priority` | float | 是 | （必须给出） |
# | `last_used` | int | 是 | （必须给出） |
# | `prefix` | str | 否 | （必须给出） |
# | `hits` | int | 否 | 0 |
# | `bytes` | int | 否 | 0 |
#
# 两个条目只按 `(priority, last_used)` 比较（`<`、`<=`、`==` 等），因此 `min(entries)` 恰好是“评分公式”一节所说的受害者，而 `==` 忽略 prefix、hits 与 bytes。三个必需字段必须给出（`CacheEntry(1.0, 2)` 抛出 `TypeError`），字段可以按上表顺序按位置传入，并且必须可写：调度器会原地更新它们。请完成 TODO 5.1.1 和 TODO 5.1.2。

# %% nbgrader={"grade": false, "grade_id": "task5_1_CacheEntry", "locked": false, "schema_version": 3, "solution": true, "task": false}
from dataclasses import dataclass, field


@dataclass(order=True)
class CacheEntry:
    """One cached prefix. Entries compare by (priority, last_used) only.

    Fields, in order: priority (float), last_used (int, the logical time of the last touch),
    prefix (str, not compared), hits (int, default 0, not compared), bytes (int, default 0,
    not compared). Instances are mutable.
    """

    # TODO 5.1.1: the two compared fields, priority (float) and last_used (int), in this order, without defaults.
    # 提示：dataclass(order=True) 按字段声明的顺序逐个比较；写成 `名字: 类型` 的字段没有默认值，必须传入，并参与比较。
    # Hint: dataclass(order=True) compares the fields in the order they are declared; a field written `name: type`
    #       has no default, must be given, and is compared.
    ### BEGIN SOLUTION
    priority: float
    last_used: int
    ### END SOLUTION
    # TODO 5.1.2: prefix (str, required), hits (int, default 0) and bytes (int, default 0), none of them compared.
    # 提示：field(compare=False) 让字段不参与比较；field(default=0, compare=False) 再给它一个默认值。
    #       有默认值的字段必须排在没有默认值的字段之后。
    # Hint: field(compare=False) keeps a field out of comparisons; field(default=0, compare=False) also gives it a
    #       default. Fields with a default must come after the fields without one.
    ### BEGIN SOLUTION
    prefix: str = field(compare=False)
    hits: int = field(default=0, compare=False)
    bytes: int = field(default=0, compare=False)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task5_1_CacheEntry", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that CacheEntry has the five fields and compares by (priority, last_used) only."""


def _check_task5_1_CacheEntry():
    from course.checks import assert_plain_equal, assert_raises, check_type


    def fields(entry):
        return [entry.priority, entry.last_used, entry.prefix, entry.hits, entry.bytes]


    assert_plain_equal(fields(CacheEntry(1.5, 3, "sys-prompt")), [1.5, 3, "sys-prompt", 0, 0],
                       "[priority, last_used, prefix, hits, bytes] of CacheEntry(1.5, 3, 'sys-prompt') (defaults hits 0, bytes 0)")
    assert_plain_equal(fields(CacheEntry(priority=2.0, last_used=7, prefix="doc", hits=4, bytes=96)), [2.0, 7, "doc", 4, 96],
                       "the fields of CacheEntry(priority=2.0, last_used=7, prefix='doc', hits=4, bytes=96)")
    assert_plain_equal(fields(CacheEntry(0.5, 4, "q", 6, 128)), [0.5, 4, "q", 6, 128],
                       "the fields of CacheEntry(0.5, 4, 'q', 6, 128) (all five by position)")
    assert_raises(TypeError, "CacheEntry(1.0, 2) (prefix is required)", CacheEntry, 1.0, 2)
    check_type(CacheEntry(1.0, 5, "x") < CacheEntry(2.0, 1, "y"), bool, "CacheEntry(1.0, 5, 'x') < CacheEntry(2.0, 1, 'y')")
    assert CacheEntry(1.0, 5, "x") < CacheEntry(2.0, 1, "y"), "a lower priority must compare smaller, whatever last_used is"
    assert CacheEntry(1.0, 2, "z") < CacheEntry(1.0, 3, "a"), "on equal priority the smaller last_used must compare smaller (prefix is not compared)"
    assert CacheEntry(1.0, 2, "a", hits=3, bytes=9) == CacheEntry(1.0, 2, "b"), "== must ignore prefix, hits and bytes"
    assert not CacheEntry(1.0, 2, "a", hits=0) < CacheEntry(1.0, 2, "b", hits=5), "hits must not be compared"
    assert_plain_equal(min([CacheEntry(1.4, 2, "b"), CacheEntry(1.4, 1, "a2"), CacheEntry(2.4, 0, "c")]).prefix, "a2",
                       "min of entries (1.4, 2, 'b'), (1.4, 1, 'a2'), (2.4, 0, 'c')")
    entry = CacheEntry(1.0, 1, "p")
    entry.hits += 2
    entry.priority, entry.last_used, entry.bytes = 3.25, 9, 64
    assert_plain_equal(fields(entry), [3.25, 9, "p", 2, 64], "a CacheEntry after updating its fields in place")

    ### BEGIN HIDDEN TESTS
    import heapq
    import random

    a, b = CacheEntry(1.0, 3, "a"), CacheEntry(1.0, 3, "b", hits=5, bytes=7)
    assert a <= b and a >= b and not (a < b) and not (a > b) and a == b, \
        "entries with equal (priority, last_used) must be equal under every comparison"
    assert CacheEntry(2.0, 1, "x") > CacheEntry(1.0, 9, "y") and CacheEntry(1.0, 9, "y") <= CacheEntry(2.0, 1, "x"), \
        "> and <= must follow (priority, last_used)"
    assert CacheEntry(1.0, 2, "same") != CacheEntry(1.0, 3, "same"), "entries with different last_used must not be equal"
    assert CacheEntry(1.0, 2, "same") != CacheEntry(1.5, 2, "same"), "entries with different priority must not be equal"
    assert_raises(TypeError, "CacheEntry()", CacheEntry)
    assert_raises(TypeError, "CacheEntry(1.0)", CacheEntry, 1.0)
    assert_raises(TypeError, "CacheEntry(1.0, 2, 'p', 1, 2, 3) (six fields)", CacheEntry, 1.0, 2, "p", 1, 2, 3)
    rng = random.Random(5101)
    for case in range(40):
        rows = [(rng.choice([0.5, 1.25, 1.5, 2.0]), rng.randint(0, 6), f"p{i}", rng.randint(0, 3), rng.randint(1, 9))
                for i in range(rng.randint(1, 12))]
        entries = [CacheEntry(*row) for row in rows]
        expected = sorted((row[0], row[1]) for row in rows)
        assert_plain_equal([(x.priority, x.last_used) for x in sorted(entries)], expected,
                           f"sorted(entries) on random case {case}", reveal=False)
        heap = list(entries)
        heapq.heapify(heap)
        smallest = heapq.heappop(heap)
        assert_plain_equal((smallest.priority, smallest.last_used), expected[0],
                           f"heapq.heappop on entries, random case {case}", reveal=False)
        assert_plain_equal([fields(x) for x in entries], [list(row) for row in rows],
                           f"the fields of the entries on random case {case}", reveal=False)
    ### END HIDDEN TESTS


_check_task5_1_CacheEntry()

# %% [markdown] nbgrader={"grade": false, "grade_id": "task5_2_KVCacheSchedulerSim_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 5.2: KVCacheSchedulerSim (10 points)
#
# Write the simulator, one method per TODO. Its state, read and written by every method under these names:
# `capacity_bytes`, `current_bytes` (the bytes of the live entries), `time` (a logical clock, 0 at the start),
# `entries` (dict from prefix to `CacheEntry`), `queue` (the heap, a list of tuples `(priority, last_used, prefix)`),
# `log` (a list of str).
#
# - TODO 5.2.1 `__init__(capacity_bytes=1024)`: `ValueError` when `capacity_bytes < 1`; otherwise the state above,
#   empty (`current_bytes` 0, `time` 0, `entries` {}, `queue` [], `log` []).
# - TODO 5.2.2 `_score(hits, size, last_used)`: `recency = 1 / (1 + max(self.time - last_used, 0))`, then return
#   `hits + 0.5 * recency - 0.25 * size / self.capacity_bytes` (a float; compute it in this order, so that your floats
#   agree with the tests').
# - TODO 5.2.3 `_refresh_queue(prefix)`: recompute the entry's priority with `self._score(hits, bytes, last_used)`,
#   store it in the entry, and push `(priority, last_used, prefix)` onto the heap with `heapq.heappush` (the old items
#   stay: lazy deletion).
# - TODO 5.2.4 `_evict_until_fit(needed)`: while `current_bytes + needed > capacity_bytes` and something is cached:
#   pop items until one agrees with its live entry on **both** priority and last_used (skip and drop items of
#   removed prefixes and stale items); if the heap runs dry, fall back to the entry with the smallest
#   (priority, last_used), `min(self.entries.values())`; evict it (remove it, subtract its bytes) and log
#   `evict:<prefix>`. **The trap:** a check on the priority alone lets a stale item through whenever it agrees on the
#   priority (see "The lazy-deletion heap"); the visible test has such an item.
# - TODO 5.2.5 `touch(prefix, bytes_)`: first the input checks, `ValueError` when `prefix` is not a non-empty `str` (a
#   prefix of spaces, `" "`, is one: accepted),
#   when `bytes_ < 1` or `bytes_ > capacity_bytes` (for a cached prefix too); nothing changes then. Then `time += 1`.
#   A **hit** (the prefix is cached) adds 1 to `hits`, sets `last_used = time`, calls `self._refresh_queue(prefix)` and
#   logs `reuse:<prefix>`; the entry keeps its size whatever `bytes_` is. A **miss** calls
#   `self._evict_until_fit(bytes_)`, then creates the entry with `hits = 1`, `last_used = time`, `bytes = bytes_`, adds
#   its bytes to `current_bytes`, calls `self._refresh_queue(prefix)` and logs `add:<prefix>`. It returns None.
# - TODO 5.2.6 `schedule(requests)`: `self.touch` each `(prefix, bytes_)` in order and return a copy of the whole
#   log (also the lines of earlier calls). An error of `touch` reaches the caller: do not catch it (the requests before
#   it stay done).
# - TODO 5.2.7 `snapshot()`: a list of tuples `(prefix, bytes, round(priority, 4), hits)` for the live entries,
#   ordered by `(-priority, last_used, prefix)`: the most valuable first.
#
# Graded in parts: 5.2.1 `__init__` (1) · 5.2.2 `_score` (1) · 5.2.3 `_refresh_queue` (1) · 5.2.4 `_evict_until_fit`
# (2) · 5.2.5 `touch` (2) · 5.2.6 `schedule` (1) · 5.2.7 `snapshot` (1) · 5.2.8 the whole simulator (1). Each of the
# first seven tests checks one method alone: it sets the state directly (without running your `__init__`), or
# replaces the methods that the method calls by small stand-ins that record the calls. So follow the contract to
# the letter: the attribute names above, and the calls of `_score`, `_refresh_queue`, `_evict_until_fit` and `touch`
# where it names them.
#
# A worked example (it is the test of part 5.2.8): capacity 128, requests a 40, b 48, a 40, c 56, d 48, a 40.
# With recency 1 at every touch, priority = hits + 0.5 − size/512: a = 1.421875, b = 1.40625; the reuse of a
# makes it 2.421875; c (56) does not fit (88 + 56 > 128), so the smallest live item, b, goes; d does not fit either
# and the smallest is now c (1.390625); the final reuse of a gives 3.421875.
#
# ## 任务 5.2：KVCacheSchedulerSim（10 分）
#
# 按 TODO 逐个方法编写模拟器。它的状态如下，每个方法都按这些名字读写：`capacity_bytes`、`current_bytes`（在缓存中的条目的字节数）、`time`（逻辑时钟，开始时为 0）、`entries`（前缀到 `CacheEntry` 的字典）、`queue`（堆，元组 `(priority, last_used, prefix)` 的列表）、`log`（str 列表）。
#
# - TODO 5.2.1 `__init__(capacity_bytes=1024)`：`capacity_bytes < 1` 时抛出 `ValueError`；否则建立上述状态，全部为空（`current_bytes` 为 0、`time` 为 0、`entries` 为 {}、`queue` 为 []、`log` 为 []）。
# - TODO 5.2.2 `_score(hits, size, last_used)`：先算 `recency = 1 / (1 + max(self.time - last_used, 0))`，再返回 `hits + 0.5 * recency - 0.25 * size / self.capacity_bytes`（一个 float；按此顺序计算，使你的浮点结果与测试一致）。
# - TODO 5.2.3 `_refresh_queue(prefix)`：用 `self._score(hits, bytes, last_used)` 重新计算条目的优先级，存入条目，并用 `heapq.heappush` 把 `(priority, last_used, prefix)` 压入堆（旧元素留在堆中：惰性删除）。
# - TODO 5.2.4 `_evict_until_fit(needed)`：当 `current_bytes + needed > capacity_bytes` 且缓存非空时：不断弹出元素，直到某个元素的 priority 与 last_used **都**与其在缓存中的条目一致（跳过并丢弃已删除前缀的元素和过期条目）；堆被弹空时，退而选择 (priority, last_used) 最小的条目，即 `min(self.entries.values())`；驱逐它（删除条目、减去其字节数）并记录 `evict:<prefix>`。
#   **陷阱：** 只检查 priority，过期条目只要在 priority 上一致就会蒙混过关（见“惰性删除堆”一节）；可见测试中就有这样的元素。
# - TODO 5.2.5 `touch(prefix, bytes_)`：先做输入检查：`prefix` 不是非空 `str`（由空格组成的前缀，如 `" "`，也是非空 str：接受）、`bytes_ < 1` 或 `bytes_ > capacity_bytes`（已缓存的前缀也一样）时抛出 `ValueError`，此时什么都不改变。然后 `time += 1`。**命中**（前缀已缓存）时 `hits` 加 1，令 `last_used = time`，调用 `self._refresh_queue(prefix)`，记录 `reuse:<prefix>`；无论 `bytes_` 是多少，条目大小不变。**未命中**时先调用 `self._evict_until_fit(bytes_)`，再以 `hits = 1`、`last_used = time`、`bytes = bytes_` 创建条目，把字节数加到 `current_bytes`，调用 `self._refresh_queue(prefix)`，记录 `add:<prefix>`。它返回 None。
# - TODO 5.2.6 `schedule(requests)`：依次对每个 `(prefix, bytes_)` 调用 `self.touch`，返回整个日志的副本（包括之前调用留下的行）。`touch` 抛出的异常要传给调用者：不要捕获它（它之前的请求仍算完成）。
# - TODO 5.2.7 `snapshot()`：返回在缓存中的条目的元组 `(prefix, bytes, round(priority, 4), hits)` 的列表，按 `(-priority, last_used, prefix)` 排序：最有价值的在前。
#
# 分部分计分：5.2.1 `__init__`（1 分）· 5.2.2 `_score`（1 分）· 5.2.3 `_refresh_queue`（1 分）· 5.2.4 `_evict_until_fit`（2 分）·
# 5.2.5 `touch`（2 分）· 5.2.6 `schedule`（1 分）· 5.2.7 `snapshot`（1 分）· 5.2.8 整个模拟器（1 分）。前七个测试各自单独检查一个方法：它直接设置状态（不运行你的 `__init__`），或者把该方法调用的方法换成只记录调用的简单替身。所以请严格按契约来写：使用上面的属性名，并在契约点名的地方调用 `_score`、`_refresh_queue`、`_evict_until_fit` 和 `touch`。
#
# 一个算例（也是 5.2.8 部分的测试）：容量 128，请求 a 40、b 48、a 40、c 56、d 48、a 40。由于每次访问时新近度都是 1，priority = hits + 0.5 − size/512：a = 1.421875，b = 1.40625；a 被复用后为 2.421875；c（56）放不下（88 + 56 > 128），于是最小的有效元素 b 被驱逐；d 也放不下，此时最小的是 c（1.390625）；最后 a 再被复用，得 3.421875。

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
        """An empty cache of capacity_bytes bytes; ValueError when capacity_bytes < 1."""
        # TODO 5.2.1: raise ValueError when capacity_bytes < 1, then set the six attributes of an empty cache.
        # 提示：capacity_bytes 原样保存；current_bytes = 0，time = 0，entries = {}，queue = []，log = []。
        # Hint: keep capacity_bytes as given; current_bytes = 0, time = 0, entries = {}, queue = [], log = [].
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
        # TODO 5.2.2: compute recency, then the score, in the order of the task's text.
        # 提示：年龄是 self.time - last_used，last_used 在 time 之后时用 max(..., 0) 按 0 计；用 / 而不是 //
        #       （整数除法会把 1/2 变成 0）。
        # Hint: the age is self.time - last_used, counted as 0 through max(..., 0) when last_used lies after time;
        #       use /, not // (integer division turns 1/2 into 0).
        ### BEGIN SOLUTION
        recency = 1 / (1 + max(self.time - last_used, 0))
        return hits + 0.5 * recency - 0.25 * size / self.capacity_bytes
        ### END SOLUTION

    def _refresh_queue(self, prefix):
        """Recompute the entry's priority and push (priority, last_used, prefix) onto the heap."""
        # TODO 5.2.3: recompute and store the entry's priority, then push its item onto the heap.
        # 提示：用 self._score(hits, bytes, last_used) 算出条目的新优先级并存入条目；再用 heapq.heappush 把元组
        #       (priority, last_used, prefix) 压入 self.queue。不要用 append：它会破坏堆的顺序。
        # Hint: compute the entry's new priority with self._score(hits, bytes, last_used) and store it in the entry; then
        #       push the tuple (priority, last_used, prefix) onto self.queue with heapq.heappush. Not append: it would
        #       break the heap order.
        ### BEGIN SOLUTION
        entry = self.entries[prefix]
        entry.priority = self._score(entry.hits, entry.bytes, entry.last_used)
        heapq.heappush(self.queue, (entry.priority, entry.last_used, prefix))
        ### END SOLUTION

    def _evict_until_fit(self, needed):
        """Evict lowest (priority, last_used) entries until needed more bytes fit."""
        # TODO 5.2.4: evict until current_bytes + needed <= capacity_bytes (or nothing is cached), skipping stale items.
        # 提示：外层循环检查空间和缓存是否为空；内层循环用 heapq 从堆中弹出元素，到 self.entries 中查找它的条目：只有条目还在、
        #       且 priority 和 last_used 都与元素相同时，元素才有效（惰性删除）。堆空了仍没找到时，在条目中取最小者。
        # Hint: the outer loop checks the room and whether anything is cached; the inner loop pops items off the heap with
        #       heapq and looks up their entries in self.entries: an item is live only when its entry still exists and agrees on
        #       both priority and last_used (lazy deletion). When the heap runs dry, take the smallest entry.
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
        # TODO 5.2.5: the input checks, the clock, then a hit or a miss as the task says.
        # 提示：(1) 在改动任何状态之前做完所有检查；(2) 时钟加 1；(3) 命中：更新 hits 和 last_used，让本类的方法重新计算优先级并入堆，
        #       再记录日志；(4) 未命中：先腾出空间（本类的另一个方法），再放入新的 CacheEntry（priority 先随便填，重新计算时会覆盖），
        #       加上字节数、重新计算优先级，最后记录日志。
        # Hint: (1) do every check before changing any state; (2) advance the clock; (3) a hit: update hits and last_used, let
        #       this class's method recompute the priority and push the item, then log; (4) a miss: make room first (another
        #       method of this class), then put the new CacheEntry in (any priority: the recomputation overwrites it), add its
        #       bytes, recompute its priority, and log last.
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
        # TODO 5.2.6: touch every request in order, then return a copy of self.log.
        # 提示：按顺序对每个 (prefix, bytes_) 调用 touch；对列表调用 list(...) 得到一个新列表。
        # Hint: call touch for each (prefix, bytes_) in order; list(...) of a list is a new list.
        ### BEGIN SOLUTION
        for prefix, bytes_ in requests:
            self.touch(prefix, bytes_)
        return list(self.log)
        ### END SOLUTION

    def snapshot(self):
        """Return [(prefix, bytes, round(priority, 4), hits)] ordered by (-priority, last_used, prefix)."""
        # TODO 5.2.7: the live entries as tuples, the most valuable first.
        # 提示：sorted 的 key 可以返回元组：优先级取负数让大的排在前面，再接 last_used 和 prefix 打破平局；然后为每个条目组成一个元组。
        # Hint: the key of sorted may return a tuple: negate the priority so that the largest comes first, then last_used and
        #       prefix break the ties; then make one tuple per entry.
        ### BEGIN SOLUTION
        ordered = sorted(self.entries.values(), key=lambda e: (-e.priority, e.last_used, e.prefix))
        return [(e.prefix, e.bytes, round(e.priority, 4), e.hits) for e in ordered]
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task5_2_1_init", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that KVCacheSchedulerSim(capacity_bytes) starts empty and rejects a capacity below 1."""


def _check_task5_2_1_init():
    from course.checks import assert_plain_equal, assert_raises


    def state(sim):
        return [sim.capacity_bytes, sim.current_bytes, sim.time, sim.entries, sim.queue, sim.log]


    assert_plain_equal(state(KVCacheSchedulerSim(128)), [128, 0, 0, {}, [], []],
                       "[capacity_bytes, current_bytes, time, entries, queue, log] of KVCacheSchedulerSim(128)")
    assert_plain_equal(KVCacheSchedulerSim().capacity_bytes, 1024, "KVCacheSchedulerSim().capacity_bytes (the default)")
    assert_plain_equal(KVCacheSchedulerSim(1).capacity_bytes, 1, "KVCacheSchedulerSim(1).capacity_bytes (the smallest capacity)")
    assert_raises(ValueError, "KVCacheSchedulerSim(0)", KVCacheSchedulerSim, 0)
    assert_raises(ValueError, "KVCacheSchedulerSim(0.5) (capacity_bytes < 1)", KVCacheSchedulerSim, 0.5)

    ### BEGIN HIDDEN TESTS
    for bad in (-3, -1, 0):
        assert_raises(ValueError, f"KVCacheSchedulerSim({bad})", KVCacheSchedulerSim, bad)
    assert_plain_equal(state(KVCacheSchedulerSim(capacity_bytes=50)), [50, 0, 0, {}, [], []],
                       "the state of KVCacheSchedulerSim(capacity_bytes=50)", reveal=False)
    one, two = KVCacheSchedulerSim(10), KVCacheSchedulerSim(10)
    one.log.append("x")
    one.queue.append((1.0, 1, "x"))
    one.entries["x"] = None
    assert_plain_equal([two.log, two.queue, two.entries], [[], [], {}],
                       "a second simulator after the first one's log, queue and entries changed (no shared lists)",
                       reveal=False)
    sim = KVCacheSchedulerSim(10)
    assert sim.queue is not sim.log and sim.queue is not sim.entries, \
        "KVCacheSchedulerSim(10).queue and .log must be two separate lists"
    ### END HIDDEN TESTS


_check_task5_2_1_init()

# %% nbgrader={"grade": true, "grade_id": "test_task5_2_2_score", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that _score(hits, size, last_used) follows the formula at the simulator's current time."""


def _check_task5_2_2_score():
    from course.checks import assert_plain_equal, check_type


    def bare(capacity_bytes, time):
        """A simulator with only the two attributes _score reads, set by this test (its __init__ does not run)."""
        sim = object.__new__(KVCacheSchedulerSim)
        sim.capacity_bytes, sim.time = capacity_bytes, time
        return sim


    check_type(bare(256, 5)._score(1, 64, 5), float, "_score(1, 64, 5) at time 5, capacity 256")
    assert_plain_equal(bare(256, 5)._score(1, 64, 5), 1.4375, "_score(1, 64, 5) at time 5, capacity 256 (age 0: recency 1)")
    assert_plain_equal(bare(128, 6)._score(2, 64, 4), 2 + 0.5 / 3 - 0.125, "_score(2, 64, 4) at time 6, capacity 128 (age 2)")
    assert_plain_equal(bare(100, 7)._score(3, 10, 9), 3.475, "_score(3, 10, 9) at time 7, capacity 100 (last_used after time: age 0)")
    assert_plain_equal(bare(3, 5)._score(1, 1, 5), 1 + 0.5 * 1.0 - 0.25 * 1 / 3,
                       "_score(1, 1, 5) at time 5, capacity 3 (bit for bit: hits + 0.5 * recency - 0.25 * size / "
                       "capacity_bytes, in this order)", rel_tol=0, abs_tol=0)

    ### BEGIN HIDDEN TESTS
    import random

    rng = random.Random(5222)
    for case in range(300):
        capacity, now = rng.choice([1, 16, 100, 1024, 2**20]), rng.randint(0, 50)
        hits, size, last_used = rng.randint(0, 2**20), rng.randint(1, capacity), rng.randint(0, 60)
        expected = hits + 0.5 * (1 / (1 + max(now - last_used, 0))) - 0.25 * size / capacity
        result = bare(capacity, now)._score(hits, size, last_used)
        check_type(result, float, f"_score on random case {case}")
        assert_plain_equal(result, expected, f"_score on random case {case}", reveal=False)
    # The text fixes the order of the operations: the floats must be exactly those of hits + 0.5 * recency - 0.25 * ...
    for capacity, now, hits, size, last_used in ((3, 5, 1, 1, 5), (3, 4, 1, 2, 3), (7, 9, 2, 3, 6), (100, 8, 5, 33, 1),
                                                 (3, 10, 1, 1, 5)):
        expected = hits + 0.5 * (1 / (1 + max(now - last_used, 0))) - 0.25 * size / capacity
        assert_plain_equal(bare(capacity, now)._score(hits, size, last_used), expected,
                           f"_score({hits}, {size}, {last_used}) at time {now}, capacity {capacity} (bit for bit: the "
                           "terms in the order of the text)", rel_tol=0, abs_tol=0, reveal=False)
    ### END HIDDEN TESTS


_check_task5_2_2_score()

# %% nbgrader={"grade": true, "grade_id": "test_task5_2_3_refresh_queue", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that _refresh_queue stores the entry's new priority and pushes its item onto the heap."""


def _check_task5_2_3_refresh_queue():
    import heapq

    from course.checks import assert_plain_equal


    class FixedScore(KVCacheSchedulerSim):
        """_score is a stand-in here (not the real formula), so that this test checks _refresh_queue alone."""

        def _score(self, hits, size, last_used):
            return 10.0 * hits + size / 1000 + last_used / 100


    def bare(entries, queue):
        """A FixedScore simulator whose state this test sets directly (its __init__ does not run)."""
        sim = object.__new__(FixedScore)
        sim.capacity_bytes, sim.time, sim.log = 100, 9, []
        sim.entries = {entry.prefix: entry for entry in entries}
        sim.current_bytes = sum(entry.bytes for entry in entries)
        sim.queue = sorted(queue)
        return sim


    def is_heap(items):
        return all(items[(i - 1) // 2] <= items[i] for i in range(1, len(items)))


    sim = bare([CacheEntry(priority=0.0, last_used=3, prefix="a", hits=2, bytes=40),
                CacheEntry(priority=5.0, last_used=2, prefix="b", hits=1, bytes=10)],
               [(1.0, 1, "b"), (5.0, 2, "b"), (19.0, 3, "a")])
    sim._refresh_queue("a")
    a = sim.entries["a"]
    assert_plain_equal([a.priority, a.last_used, a.hits, a.bytes], [20.07, 3, 2, 40],
                       "[priority, last_used, hits, bytes] of entry a after _refresh_queue('a') (stand-in score 20.07)")
    assert_plain_equal(sorted(sim.queue), [(1.0, 1, "b"), (5.0, 2, "b"), (19.0, 3, "a"), (20.07, 3, "a")],
                       "sorted(queue) after _refresh_queue('a') with a's old item (19.0, 3, 'a') in it (the old items stay: "
                       "lazy deletion)")
    sim.entries["c"] = CacheEntry(priority=9.0, last_used=1, prefix="c", hits=0, bytes=5)
    sim._refresh_queue("c")
    assert_plain_equal(sim.entries["c"].priority, 0.015, "entry c's priority after _refresh_queue('c') (stand-in score 0.015)")
    assert_plain_equal(heapq.heappop(list(sim.queue)), (0.015, 1, "c"),
                       "the smallest item of queue after _refresh_queue('c')")
    assert is_heap(sim.queue), f"queue must stay a heap (push with heapq.heappush); it is {sim.queue}"
    b = sim.entries["b"]
    assert_plain_equal([b.priority, b.last_used, b.hits, b.bytes, sim.current_bytes, sim.log], [5.0, 2, 1, 10, 50, []],
                       "[entry b, current_bytes, log] after _refresh_queue('a') and ('c') (it must not change another field or entry)")

    ### BEGIN HIDDEN TESTS
    import random

    rng = random.Random(5233)
    for case in range(60):
        names = [f"p{i}" for i in range(rng.randint(1, 8))]
        # The expected values come from this test's own numbers, never from what the student's objects report.
        fields = {n: dict(priority=rng.random(), last_used=rng.randint(0, 9), prefix=n, hits=rng.randint(0, 5),
                          bytes=rng.randint(1, 99)) for n in names}
        entries = [CacheEntry(**row) for row in fields.values()]
        queue = [(rng.random() * 60, rng.randint(0, 9), rng.choice(names)) for _ in range(rng.randint(0, 10))]
        sim = bare(entries, queue)
        chosen = rng.choice(names)
        before = {n: (row["last_used"], row["hits"], row["bytes"]) for n, row in fields.items()}
        others = {n: row["priority"] for n, row in fields.items() if n != chosen}
        sim._refresh_queue(chosen)
        row, entry = fields[chosen], sim.entries[chosen]
        expected = 10.0 * row["hits"] + row["bytes"] / 1000 + row["last_used"] / 100
        assert_plain_equal(entry.priority, expected, f"the priority stored by _refresh_queue on random case {case}", reveal=False)
        assert_plain_equal(sorted(sim.queue), sorted(queue + [(expected, row["last_used"], chosen)]),
                           f"sorted(queue) after _refresh_queue on random case {case}", reveal=False)
        assert is_heap(sim.queue), f"queue is not a heap after _refresh_queue on random case {case}"
        assert_plain_equal({p: (e.last_used, e.hits, e.bytes) for p, e in sim.entries.items()}, before,
                           f"the entries' (last_used, hits, bytes) after _refresh_queue on random case {case} (it must "
                           "not change them)", reveal=False)
        assert_plain_equal({p: e.priority for p, e in sim.entries.items() if p != chosen}, others,
                           f"the other entries' priorities after _refresh_queue on random case {case}", reveal=False)
        item = [i for i in sim.queue if i[2] == chosen and i[0] == expected][0]
        assert type(item) is tuple and type(item[0]) is float and type(item[1]) is int and type(item[2]) is str, \
            f"a queue item must be a tuple (float, int, str); got {item!r} on random case {case}"
    ### END HIDDEN TESTS


_check_task5_2_3_refresh_queue()

# %% nbgrader={"grade": true, "grade_id": "test_task5_2_4_evict_until_fit", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that _evict_until_fit evicts the smallest live (priority, last_used) until the bytes fit, skipping stale items."""


def _check_task5_2_4_evict_until_fit():
    from course.checks import assert_plain_equal


    def entry(prefix, priority, last_used, size, hits=1):
        return CacheEntry(priority=priority, last_used=last_used, prefix=prefix, hits=hits, bytes=size)


    def bare(entries, queue, capacity_bytes=100):
        """A simulator whose state this test sets directly (its __init__ does not run); queue is sorted, so a heap."""
        sim = object.__new__(KVCacheSchedulerSim)
        sim.capacity_bytes, sim.time, sim.log = capacity_bytes, 9, []
        sim.entries = {e.prefix: e for e in entries}
        sim.current_bytes = sum(e.bytes for e in entries)
        sim.queue = sorted(queue)
        return sim


    def result(sim):
        return [sim.log, sorted(sim.entries), sim.current_bytes]


    # The trap: a's old item (1.475, 1, 'a') agrees with a on the priority, not on last_used (7).
    sim = bare([entry("a", 1.475, 7, 10), entry("b", 1.475, 2, 10)], [(1.475, 1, "a"), (1.475, 2, "b"), (1.475, 7, "a")])
    sim._evict_until_fit(81)
    assert_plain_equal(result(sim), [["evict:b"], ["a"], 10],
                       "[log, entries, current_bytes] after _evict_until_fit(81): a 1.475@7, b 1.475@2, stale item (1.475, 1, 'a')")
    # ... and an old item that agrees on last_used but not on the priority.
    sim = bare([entry("a", 5.475, 1, 10, hits=5), entry("b", 1.475, 2, 10)], [(1.475, 1, "a"), (1.475, 2, "b"), (5.475, 1, "a")])
    sim._evict_until_fit(81)
    assert_plain_equal(result(sim), [["evict:b"], ["a"], 10],
                       "[log, entries, current_bytes] after _evict_until_fit(81): a 5.475@1, b 1.475@2, stale item (1.475, 1, 'a')")
    # Priorities that are close but not equal do not agree: an item agrees with its entry exactly, on both fields.
    for gap in (1e-5, 1e-10):
        a, b, stale = 2.0 + 4 * gap, 2.0 + 2 * gap, 2.0 + gap
        sim = bare([entry("a", a, 1, 10), entry("b", b, 2, 10)], [(stale, 1, "a"), (b, 2, "b"), (a, 1, "a")])
        sim._evict_until_fit(81)
        assert_plain_equal(result(sim), [["evict:b"], ["a"], 10],
                           f"[log, entries, current_bytes] after _evict_until_fit(81): a {a!r}@1, b {b!r}@2, stale item "
                           f"({stale!r}, 1, 'a') (it agrees with a on last_used only: compare the priorities exactly)")
    # Items of removed prefixes are dropped; two evictions are needed, and it stops as soon as 50 bytes fit.
    sim = bare([entry("x", 1.2, 1, 30), entry("y", 1.3, 2, 30), entry("z", 2.0, 3, 40)],
               [(0.5, 0, "gone"), (1.2, 1, "x"), (1.3, 2, "y"), (2.0, 3, "z")])
    sim._evict_until_fit(50)
    assert_plain_equal(result(sim), [["evict:x", "evict:y"], ["z"], 40],
                       "[log, entries, current_bytes] after _evict_until_fit(50) with x 30, y 30, z 40 bytes, capacity 100")
    assert_plain_equal(sorted(sim.queue), [(2.0, 3, "z")],
                       "sorted(queue) after that call (the items of gone, x and y are popped and dropped)")
    sim._evict_until_fit(60)
    assert_plain_equal(result(sim), [["evict:x", "evict:y"], ["z"], 40],
                       "[log, entries, current_bytes] after _evict_until_fit(60) when 40 + 60 fits exactly (nothing evicted)")
    # When the heap runs dry, the entry with the smallest (priority, last_used) goes, whatever the dict's order.
    sim = bare([entry("p", 1.4, 5, 30), entry("q", 1.4, 2, 30), entry("r", 1.2, 8, 30)], [])
    sim._evict_until_fit(60)
    assert_plain_equal(result(sim), [["evict:r", "evict:q"], ["p"], 30],
                       "[log, entries, current_bytes] after _evict_until_fit(60) with an empty heap (p 1.4@5, q 1.4@2, r 1.2@8, "
                       "30 bytes each)")
    sim._evict_until_fit(150)
    assert_plain_equal(result(sim), [["evict:r", "evict:q", "evict:p"], [], 0],
                       "[log, entries, current_bytes] after _evict_until_fit(150), capacity 100, with only p cached (it stops "
                       "when nothing is cached)")

    ### BEGIN HIDDEN TESTS
    import random

    rng = random.Random(5244)
    for case in range(80):
        names = [f"p{i}" for i in range(rng.randint(1, 8))]
        # The test's own rows (priority, last_used, bytes): the oracle reads these, never the student's entries.
        rows = {n: (rng.choice([1.25, 1.5, 2.5, 3.0]), rng.randint(0, 9), rng.randint(1, 40)) for n in names}
        entries = [entry(n, *rows[n]) for n in names]
        queue = [(rows[n][0], rows[n][1], n) for n in names if rng.random() < 0.85]
        queue += [(rng.choice([1.25, 1.5, 2.5]), rng.randint(0, 9), rng.choice(names + ["gone", "lost"]))
                  for _ in range(rng.randint(0, 8))]
        capacity = rng.randint(max(row[2] for row in rows.values()), 200)
        needed = rng.randint(0, capacity)
        sim = bare(entries, queue, capacity)
        # Oracle: pop the sorted items, keep the first that agrees with a live entry on both fields.
        expected, used, left, items = [], sum(row[2] for row in rows.values()), dict(rows), sorted(queue)
        while left and used + needed > capacity:
            victim = None
            while items:
                priority, last_used, name = items.pop(0)
                if name in left and left[name][:2] == (priority, last_used):
                    victim = name
                    break
            if victim is None:
                victim = min(left, key=lambda n: left[n][:2])
            used -= left.pop(victim)[2]
            expected.append("evict:" + victim)
        sim._evict_until_fit(needed)
        assert_plain_equal(result(sim), [expected, sorted(left), used], f"_evict_until_fit on random case {case}", reveal=False)
        assert all(sim.queue[(i - 1) // 2] <= sim.queue[i] for i in range(1, len(sim.queue))), \
            f"queue is no longer a heap after _evict_until_fit on random case {case}"
    sim = bare([entry("only", 1.0, 1, 100)], [(1.0, 1, "only")])
    sim._evict_until_fit(100)
    assert_plain_equal(result(sim), [["evict:only"], [], 0], "_evict_until_fit(100) with one entry of 100 bytes", reveal=False)
    sim._evict_until_fit(100)
    assert_plain_equal(result(sim), [["evict:only"], [], 0], "_evict_until_fit(100) on an empty cache", reveal=False)
    ### END HIDDEN TESTS


_check_task5_2_4_evict_until_fit()

# %% nbgrader={"grade": true, "grade_id": "test_task5_2_5_touch", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that touch checks its input first, then records a hit or a miss through _evict_until_fit and _refresh_queue."""


def _check_task5_2_5_touch():
    from course.checks import assert_plain_equal, assert_raises, check_type


    recorded = []  # How touch called the stand-ins; the test keeps it, where the student's code cannot rewrite it.

    class Probe(KVCacheSchedulerSim):
        """touch alone: the two helpers are stand-ins that only record how touch calls them (nothing is evicted)."""

        def _evict_until_fit(self, needed):
            recorded.append(["_evict_until_fit", needed, sorted(self.entries), self.current_bytes])

        def _refresh_queue(self, prefix):
            entry = self.entries[prefix]
            recorded.append(["_refresh_queue", prefix, entry.hits, entry.last_used, entry.bytes])


    def bare(entries=()):
        """A Probe with capacity 100 whose state this test sets directly (its __init__ does not run)."""
        sim = object.__new__(Probe)
        sim.capacity_bytes, sim.time, sim.log, sim.queue = 100, 0, [], []
        recorded.clear()
        sim.entries = {e.prefix: e for e in entries}
        sim.current_bytes = sum(e.bytes for e in entries)
        return sim


    def state(sim):
        return [sim.time, sim.current_bytes, list(sim.log), [list(c) for c in recorded],
                {k: [e.prefix, e.hits, e.last_used, e.bytes] for k, e in sim.entries.items()}]


    # A miss that does not fit: _evict_until_fit(40) before the entry exists and before its bytes are added to
    # current_bytes, _refresh_queue after. Each call of _evict_until_fit is recorded with the cached prefixes and
    # current_bytes as they were then.
    sim = bare([CacheEntry(priority=1.3, last_used=0, prefix="old", hits=1, bytes=80)])
    check_type(sim.touch("a", 40), type(None), "touch('a', 40)")
    check_type(sim.entries["a"], CacheEntry, "entries['a'] after touch('a', 40)")
    assert_plain_equal(state(sim), [1, 120, ["add:a"], [["_evict_until_fit", 40, ["old"], 80],
                                                        ["_refresh_queue", "a", 1, 1, 40]],
                                    {"old": ["old", 1, 0, 80], "a": ["a", 1, 1, 40]}],
                       "[time, current_bytes, log, calls, entries] after touch('a', 40) with 'old' (80 bytes) cached "
                       "(the stand-ins evict nothing; _evict_until_fit is recorded with the entries and current_bytes "
                       "it found)")
    # A hit keeps the size, whatever bytes_ says, and does not evict.
    check_type(sim.touch("a", 60), type(None), "touch('a', 60), a hit")
    after = state(sim)
    assert_plain_equal(after[:3] + [after[3][2:], after[4]["a"]],
                       [2, 120, ["add:a", "reuse:a"], [["_refresh_queue", "a", 2, 2, 40]], ["a", 2, 2, 40]],
                       "[time, current_bytes, log, new calls, entries['a']] after touch('a', 60), a hit")
    # Bad input: ValueError before anything changes (a cached prefix with too many bytes too).
    before = state(sim)
    for args in (("", 5), (7, 5), ("b", 0), ("b", 101), ("a", 101), ("a", 0), ("a", -5)):
        assert_raises(ValueError, f"touch{args!r} with capacity 100{' (a cached prefix)' if args[0] == 'a' else ''}",
                      sim.touch, *args)
        assert_plain_equal(state(sim), before, f"[time, current_bytes, log, calls, entries] after touch{args!r} raised")
    # A prefix of spaces is a non-empty str: accepted.
    sim = bare()
    sim.touch(" ", 5)
    assert_plain_equal([sim.time, sim.current_bytes, sim.log], [1, 5, ["add: "]],
                       "[time, current_bytes, log] after touch(' ', 5) (a non-empty str: accepted)")

    ### BEGIN HIDDEN TESTS
    import random

    # A miss that fits: calling _evict_until_fit is allowed (it would evict nothing), not required.
    sim = bare()
    sim.touch("z", 10)
    calls = [c for c in recorded if c[0] != "_evict_until_fit" or c != ["_evict_until_fit", 10, [], 0]]
    assert_plain_equal([sim.time, sim.current_bytes, sim.log, calls], [1, 10, ["add:z"], [["_refresh_queue", "z", 1, 1, 10]]],
                       "[time, current_bytes, log, calls] after touch('z', 10) on an empty cache", reveal=False)
    sim.touch("z", 100)
    assert_plain_equal(sim.log, ["add:z", "reuse:z"], "the log after touch('z', 100), a hit with bytes_ == capacity", reveal=False)
    for args in ((None, 5), (("t",), 5), ("c", -1), ("c", 10**9)):
        before = state(sim)
        assert_raises(ValueError, f"touch{args!r}", sim.touch, *args)
        assert_plain_equal(state(sim), before, f"the state after touch{args!r} raised", reveal=False)
    rng = random.Random(5255)
    for case in range(40):
        sim, model, used, clock = bare(), {}, 0, 0
        for _ in range(rng.randint(1, 20)):
            name, size = rng.choice("abcdef"), rng.randint(1, 100)
            recorded.clear()
            sim.touch(name, size)
            clock += 1
            if name in model:
                model[name] = [name, model[name][1] + 1, clock, model[name][3]]
                want = [["_refresh_queue", name, model[name][1], clock, model[name][3]]]
                line = "reuse:" + name
            else:
                evict_calls = [c for c in recorded if c[0] == "_evict_until_fit"]
                if used + size > 100:
                    assert_plain_equal(evict_calls, [["_evict_until_fit", size, sorted(model), used]],
                                       f"the _evict_until_fit calls of a miss on random case {case}", reveal=False)
                model[name] = [name, 1, clock, size]
                used += size
                want = [["_refresh_queue", name, 1, clock, size]]
                line = "add:" + name
            assert_plain_equal([c for c in recorded if c[0] == "_refresh_queue"], want,
                               f"the _refresh_queue calls of touch on random case {case}", reveal=False)
            assert_plain_equal(sim.log[-1], line, f"the last log line on random case {case}", reveal=False)
        assert_plain_equal([sim.time, sim.current_bytes, state(sim)[4]], [clock, used, model],
                           f"[time, current_bytes, entries] on random case {case}", reveal=False)
    ### END HIDDEN TESTS


_check_task5_2_5_touch()

# %% nbgrader={"grade": true, "grade_id": "test_task5_2_6_schedule", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that schedule touches every request in order and returns a copy of the whole log."""


def _check_task5_2_6_schedule():
    from course.checks import assert_plain_equal, assert_raises, check_type


    class Probe(KVCacheSchedulerSim):
        """schedule alone: touch is a stand-in that logs what it was given, raises TypeError for a prefix that is not
        a str and ValueError for 'bad' and '' (one stand-in for every case, so that it tells schedule nothing about
        which case runs)."""

        def touch(self, prefix, bytes_):
            if type(prefix) is not str:
                raise TypeError("touch: a prefix that is not a str")
            if prefix in ("bad", ""):
                raise ValueError("touch: a bad request")
            self.log.append(f"touch:{prefix}:{bytes_}")


    sim = object.__new__(Probe)  # its __init__ does not run: only the log is needed
    sim.log = ["earlier line"]
    result = sim.schedule([("a", 40), ("b", 48), ("a", 40)])
    check_type(result, list, "schedule([a40, b48, a40])")
    assert_plain_equal(result, ["earlier line", "touch:a:40", "touch:b:48", "touch:a:40"],
                       "schedule([a40, b48, a40]) after one earlier log line (the whole log)")
    result.append("changed by the caller")
    assert_plain_equal(sim.log, ["earlier line", "touch:a:40", "touch:b:48", "touch:a:40"],
                       "sim.log after the caller appended to what schedule returned (return a copy)")
    assert_plain_equal(sim.schedule([]), ["earlier line", "touch:a:40", "touch:b:48", "touch:a:40"], "schedule([]) afterwards")


    # touch's errors reach the caller of schedule.
    sim = object.__new__(Probe)
    sim.log = []
    assert_raises(ValueError, "schedule([('x', 1), ('bad', 2), ('y', 3)]) when touch('bad', 2) raises ValueError (do not "
                  "catch it)", sim.schedule, [("x", 1), ("bad", 2), ("y", 3)])
    assert_plain_equal(sim.log, ["touch:x:1"], "the log after schedule([('x', 1), ('bad', 2), ('y', 3)]) raised at its "
                       "second request")
    # touch decides which requests are bad, one at a time: the requests before a bad one stay done.
    for bad, error in (("", ValueError), (7, TypeError)):
        sim = object.__new__(Probe)
        sim.log = []
        assert_raises(error, f"schedule([('x', 1), ({bad!r}, 2)]) when touch({bad!r}, 2) raises {error.__name__}",
                      sim.schedule, [("x", 1), (bad, 2)])
        assert_plain_equal(sim.log, ["touch:x:1"], f"the log after schedule([('x', 1), ({bad!r}, 2)]) raised (touch "
                           "checks each request when it comes: the one before it is done)")

    ### BEGIN HIDDEN TESTS
    sim = object.__new__(Probe)
    sim.log = []
    assert_plain_equal(sim.schedule((("x", 1), ("y", 2))), ["touch:x:1", "touch:y:2"], "schedule(a tuple of pairs)", reveal=False)
    assert_plain_equal(sim.schedule(iter([("z", 3)])), ["touch:x:1", "touch:y:2", "touch:z:3"], "schedule(an iterator)",
                       reveal=False)
    first, second = sim.schedule([]), sim.schedule([])
    assert first is not second and first is not sim.log, "schedule must return a new list on every call"
    ### END HIDDEN TESTS


_check_task5_2_6_schedule()

# %% nbgrader={"grade": true, "grade_id": "test_task5_2_7_snapshot", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that snapshot lists (prefix, bytes, round(priority, 4), hits), the most valuable first."""


def _check_task5_2_7_snapshot():
    from course.checks import assert_plain_equal


    def bare(entries):
        """A simulator whose entries this test sets directly (its __init__ does not run)."""
        sim = object.__new__(KVCacheSchedulerSim)
        sim.capacity_bytes, sim.time, sim.log, sim.queue = 128, 9, [], []
        sim.entries = {e.prefix: e for e in entries}
        sim.current_bytes = sum(e.bytes for e in entries)
        return sim


    sim = bare([CacheEntry(priority=1.40625, last_used=2, prefix="b", hits=1, bytes=48),
                CacheEntry(priority=3.421875, last_used=6, prefix="a", hits=3, bytes=40),
                CacheEntry(priority=1.40625, last_used=1, prefix="d", hits=1, bytes=48),
                CacheEntry(priority=1.40625, last_used=1, prefix="c", hits=1, bytes=48)])
    assert_plain_equal(sim.snapshot(), [("a", 40, 3.4219, 3), ("c", 48, 1.4062, 1), ("d", 48, 1.4062, 1), ("b", 48, 1.4062, 1)],
                       "snapshot() of a 3.421875@6, and b@2, d@1, c@1 all 1.40625 (equal priority: older first, then the prefix)")
    assert_plain_equal([(p, e.priority) for p, e in sorted(sim.entries.items())],
                       [("a", 3.421875), ("b", 1.40625), ("c", 1.40625), ("d", 1.40625)],
                       "the entries and their priorities after snapshot() (snapshot must not change them)")
    assert_plain_equal(bare([]).snapshot(), [], "snapshot() of an empty cache")
    # Priorities that differ by less than round(..., 4) shows: the order comes from the priorities themselves.
    assert_plain_equal(bare([CacheEntry(1.00001, 1, "x", 1, 8), CacheEntry(1.00002, 5, "y", 1, 8)]).snapshot(),
                       [("y", 8, 1.0, 1), ("x", 8, 1.0, 1)],
                       "snapshot() of x 1.00001@1 and y 1.00002@5 (y is worth more, though both round to 1.0)")

    ### BEGIN HIDDEN TESTS
    import random

    rng = random.Random(5277)
    for case in range(60):
        # The expected snapshot comes from this test's own numbers, never from what the student's objects report.
        rows = [dict(priority=rng.choice([1.0, 1.123456789, 2.5, rng.random() * 5]), last_used=rng.randint(0, 5),
                     prefix=f"p{i}", hits=rng.randint(1, 5), bytes=rng.randint(1, 128)) for i in range(rng.randint(0, 9))]
        expected = [(r["prefix"], r["bytes"], round(r["priority"], 4), r["hits"])
                    for r in sorted(rows, key=lambda r: (-r["priority"], r["last_used"], r["prefix"]))]
        sim = bare([CacheEntry(**row) for row in rows])
        assert_plain_equal(sim.snapshot(), expected, f"snapshot() on random case {case}", reveal=False)
        assert_plain_equal([e.priority for e in sim.entries.values()], [r["priority"] for r in rows],
                           f"the entries' priorities after snapshot() on random case {case} (it must not change them)",
                           reveal=False)
    ### END HIDDEN TESTS


_check_task5_2_7_snapshot()

# %% nbgrader={"grade": true, "grade_id": "test_task5_2_8_whole_simulator", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that the whole KVCacheSchedulerSim handles the worked example and random request lists as specified."""


def _check_task5_2_8_whole_simulator():
    from course.checks import assert_plain_equal

    sim = KVCacheSchedulerSim(128)
    log = sim.schedule([("a", 40), ("b", 48), ("a", 40), ("c", 56), ("d", 48), ("a", 40)])
    assert_plain_equal(log, ["add:a", "add:b", "reuse:a", "evict:b", "add:c", "evict:c", "add:d", "reuse:a"],
                       "KVCacheSchedulerSim(128).schedule([a40, b48, a40, c56, d48, a40])")
    assert_plain_equal(sim.snapshot(), [("a", 40, 3.4219, 3), ("d", 48, 1.4062, 1)], "snapshot() after that schedule")
    assert_plain_equal([sim.time, sim.current_bytes, sorted(sim.entries)], [6, 88, ["a", "d"]],
                       "[time, current_bytes, sorted(entries)] after that schedule")
    assert_plain_equal(KVCacheSchedulerSim(100).schedule([("a", 50), ("b", 50), ("c", 100)]),
                       ["add:a", "add:b", "evict:a", "evict:b", "add:c"],
                       "KVCacheSchedulerSim(100).schedule([a50, b50, c100]) (50 + 50 fits exactly; c needs everything)")

    ### BEGIN HIDDEN TESTS
    import heapq
    import random


    def oracle_schedule(capacity, requests):
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


    rng = random.Random(5202)
    for case in range(100):
        capacity = rng.choice([16, 64, 100, 128, 1000])
        names = [f"p{i}" for i in range(rng.randint(1, 10))]
        pool = rng.choice([[capacity // 4], [capacity // 8, capacity // 4, capacity // 2], list(range(1, capacity + 1))])
        sizes = {n: rng.choice(pool) for n in names}
        requests = [(n, sizes[n] if rng.random() < 0.8 else rng.choice(pool))
                    for n in (rng.choice(names) for _ in range(rng.randint(1, 40)))]
        sim = KVCacheSchedulerSim(capacity)
        split = rng.randint(0, len(requests))
        sim.schedule(requests[:split])
        log = sim.schedule(requests[split:])
        exp_log, exp_snap, exp_live, exp_used = oracle_schedule(capacity, requests)
        assert_plain_equal(log, exp_log, f"the log of schedule (in two calls) on random case {case}", reveal=False)
        assert_plain_equal(sim.snapshot(), exp_snap, f"snapshot() on random case {case}", reveal=False)
        assert_plain_equal([sim.time, sim.current_bytes], [len(requests), exp_used],
                           f"[time, current_bytes] on random case {case}", reveal=False)
        # The entries and each entry's fields are read once, so that every check below sees what the first read saw.
        entries = dict(sim.entries)
        read = {k: (e.hits, e.bytes, e.last_used, e.prefix, e.priority) for k, e in entries.items()}
        assert_plain_equal({k: list(fields[:3]) for k, fields in read.items()},
                           {k: v[:3] for k, v in exp_live.items()}, f"entries on random case {case}", reveal=False)
        for k, e in entries.items():
            prefix = read[k][3]
            assert type(e) is CacheEntry and type(prefix) is str and prefix == k, \
                f"entries[{k!r}] must be the CacheEntry of {k!r} (case {case})"
        items = list(sim.queue)
        for item in items:
            assert type(item) is tuple and len(item) == 3 and type(item[0]) is float and type(item[1]) is int \
                and type(item[2]) is str, f"queue items must be (priority: float, last_used: int, prefix: str); got {item!r}"
        for k in entries:
            priority, last_used = read[k][4], read[k][2]  # Compared only as a float and an int.
            assert type(priority) is float and type(last_used) is int, \
                f"entries[{k!r}] must hold a float priority and an int last_used; got {priority!r}, {last_used!r}"
            assert (priority, last_used, k) in items, \
                f"queue lacks the current item (priority, last_used, prefix) of live entry {k!r} on case {case}"
        assert [heapq.heappop(items) for _ in range(len(items))] == sorted(sim.queue), f"queue is not a heap on case {case}"
    ### END HIDDEN TESTS


_check_task5_2_8_whole_simulator()


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
# 看看 `_score` 在哪里被调用：只在 `_refresh_queue` 中，紧跟在 `last_used = time` 之后。因此此刻 `time - last_used = 0`，**新近度总是恰好为 1**。存入堆中的优先级是 hits + 0.5 − 0.25 · size/capacity，条目等待期间它从不重新计算：1,000 步之前用过的前缀，仍保持它被访问那一刻的优先级。新近度项是一个常数；新近度只通过 **last_used 上的打破平局规则** 起作用，且只在 hits 和大小都相同的条目之间。实际上这是带大小惩罚、以 LRU 打破平局的 LFU。
#
# 修正的办法是在需要时（驱逐时刻）为每个候选条目计算分数。堆很难低成本做到：每个元素的键在每个时刻都会变，堆只能重建，每次驱逐都要 $O(n)$ 的 Python 工作。张量把所有键并排存放，重新评分只需几个整张量运算，这就是任务 5.3。
#
# 由于一次命中的分量超过另两项之和，重新评分永远不会推翻 hits 的排序：它只在 hits 相同的条目之间改变选择，此时一个旧的小条目可能输给一个新近的大条目。

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
# | `alive` | bool | whether the slot holds a live entry (all False at the start) |
#
# The other attributes, by these names: `capacity_bytes`, `max_entries`, `device` (a `torch.device`), `rescore`, and
# the only Python-side bookkeeping per entry, `slots` (a dict from prefix to slot index) and `prefix_of` (a list of
# `max_entries` items, the prefix in each slot, `None` for a free slot). A new entry takes any free slot. `schedule`
# is given; it is the one of Task 5.2.
#
# - TODO 5.3.1 `__init__`: `ValueError` when `capacity_bytes < 1` or `max_entries < 1`; then the empty state. The tests
#   also build a scheduler on PyTorch's `meta` device (tensors with a shape and no data), so that a scheduler that
#   ignores `device` is caught on a machine without a GPU; `__init__` only creates tensors, it never reads them.
# - TODO 5.3.2 in `_victim()`: with `rescore=True`, first recompute **every live entry's** priority with the current
#   time (the formula of `_score`, same order of operations, in float64) and store it in `priority`, with tensor
#   operations for all slots at once (no Python loop over the slots: 5.3.3's count of torch operations covers all of
#   `_victim()`); with `rescore=False` the priorities stay as they are.
# - TODO 5.3.3 in `_victim()`: return the live slot with the lexicographically smallest `(priority, last_used)`, as a
#   Python `int` (equal means exactly equal: no tolerance), found with tensor operations (no Python loop over the
#   slots: the test counts torch operations on 8 and 2,048 slots). `touch` calls `_victim()` only when at least one
#   slot is live.
# - TODO 5.3.4 `touch`: the checks of Task 5.2, and a `RuntimeError` when a miss needs a new slot while all
#   `max_entries` slots are live and nothing has to be evicted for bytes (an exact fit,
#   `current_bytes + bytes_ == capacity_bytes`, included; when the bytes do not fit, evicting frees a slot); the
#   state is not changed when it raises. A hit: hits + 1, last_used = time, priority = the score at this time
#   (recency 1), log `reuse:<prefix>`; nothing else changes. A miss: while the bytes do not fit, evict
#   `self._victim()` (free its slot, subtract its bytes, log `evict:<prefix>`); then write the new entry into a free
#   slot (hits 1, its bytes, last_used = time, priority = the score at this time), update `slots` and `prefix_of`,
#   add its bytes and log `add:<prefix>`.
# - TODO 5.3.5 `snapshot()`: as in Task 5.2, with plain Python values (`int`, `float`, `str`), not tensors.
#
# With `rescore=False` the log and the snapshot equal `KVCacheSchedulerSim`'s on every trace; with `rescore=True` the
# victim is chosen with fresh scores.
#
# Graded in parts: 5.3.1 `__init__` (1) · 5.3.2 rescoring (1) · 5.3.3 choosing the victim (2) · 5.3.4 `touch` (2) ·
# 5.3.5 `snapshot` (1) · 5.3.6 the whole scheduler against the heap simulator (2). As in Task 5.2, the tests of parts
# 5.3.2 to 5.3.5 set the state directly, and the test of `touch` replaces `_victim` with a stand-in.
#
# Hints: mask dead slots with `torch.where(alive, priority, inf)`, not with a large finite number (hits, and so
# priorities, can be large); find the minimum priority, then among the slots that have it the smallest last_used.
# Read single values back with `int(...)` / `float(...)`.
#
# ## 任务 5.3：TensorKVCacheScheduler（9 分）
#
# 编写 `TensorKVCacheScheduler(capacity_bytes, max_entries, device=None, rescore=False)`，其 `touch`、`schedule`、`snapshot`、`log`、`current_bytes` 和 `time` 与任务 5.2 相同，但条目存放在 `device`（`None` 表示 CPU）上形状为 `(max_entries,)` 的张量中，每个条目一个槽位：
#
# | 属性 | 数据类型（dtype） | 含义 |
# |---|---|---|
# | `hits` | int64 | 槽位中条目的命中次数 |
# | `bytes` | int64 | 它的大小 |
# | `last_used` | int64 | 它最近一次被访问的时间 |
# | `priority` | **float64** | 它存下的分数 |
# | `alive` | bool | 槽位中是否有在缓存中的条目（开始时全为 False） |
#
# 其他属性使用这些名字：`capacity_bytes`、`max_entries`、`device`（一个 `torch.device`）、`rescore`，以及每个条目在 Python 端仅有的记录：`slots`（前缀到槽位下标的字典）和 `prefix_of`（长度为 `max_entries` 的列表，每个槽位中的前缀，空闲槽位为 `None`）。新条目可以占用任意空闲槽位。`schedule` 已给出，与任务 5.2 的相同。
#
# - TODO 5.3.1 `__init__`：`capacity_bytes < 1` 或 `max_entries < 1` 时抛出 `ValueError`；然后建立空的状态。测试还会在 PyTorch 的 `meta` 设备（只有形状、没有数据的张量）上创建调度器，这样在没有 GPU 的机器上也能发现忽略 `device` 的调度器；`__init__` 只创建张量，从不读取它们。
# - TODO 5.3.2（在 `_victim()` 中）：`rescore=True` 时，先用当前时间重新计算**每个有效条目**的优先级（`_score` 的公式，运算顺序相同，使用 float64），用张量运算一次算出所有槽位的结果，写入 `priority`（不要对槽位写 Python 循环：5.3.3 统计 torch 运算次数时覆盖整个 `_victim()`）；`rescore=False` 时优先级保持不变。
# - TODO 5.3.3（在 `_victim()` 中）：返回 `(priority, last_used)` 按字典序最小的有效槽位，类型为 Python `int`（相等指完全相等：不设容差），必须用张量运算求出（不能用 Python 循环遍历槽位：测试会数出在 8 个和 2,048 个槽位上各做了多少次 torch 运算）。`touch` 只在至少有一个有效槽位时调用 `_victim()`。
# - TODO 5.3.4 `touch`：任务 5.2 的输入检查；未命中需要新槽位而 `max_entries` 个槽位全部有效、且不需要为字节驱逐任何条目时（包括恰好放下，即 `current_bytes + bytes_ == capacity_bytes`），抛出 `RuntimeError`（字节放不下时，驱逐会腾出槽位）；抛出异常时状态不变。命中：hits 加 1，last_used = time，priority = 此刻的分数（新近度为 1），记录 `reuse:<prefix>`；其他都不变。未命中：只要字节放不下，就驱逐 `self._victim()`（释放它的槽位、减去它的字节数、记录 `evict:<prefix>`）；然后把新条目写入一个空闲槽位（hits 为 1、它的字节数、last_used = time、priority = 此刻的分数），更新 `slots` 和 `prefix_of`，加上它的字节数并记录 `add:<prefix>`。
# - TODO 5.3.5 `snapshot()`：与任务 5.2 相同，返回普通的 Python 值（`int`、`float`、`str`），而不是张量。
#
# `rescore=False` 时，在任何访问轨迹上日志和快照都与 `KVCacheSchedulerSim` 相同；`rescore=True` 时，用新算出的分数选择受害者。
#
# 分部分计分：5.3.1 `__init__`（1 分）· 5.3.2 重新评分（1 分）· 5.3.3 选择受害者（2 分）· 5.3.4 `touch`（2 分）· 5.3.5 `snapshot`（1 分）· 5.3.6 整个调度器与堆模拟器的对照（2 分）。与任务 5.2 一样，5.3.2 到 5.3.5 部分的测试直接设置状态，`touch` 的测试把 `_victim` 换成一个替身。
#
# 提示：用 `torch.where(alive, priority, inf)` 屏蔽空槽位，不要用一个很大的有限数（hits 以及优先级可能很大）；先求最小优先级，再在具有该优先级的槽位中找最小的 last_used。用 `int(...)` / `float(...)` 读回单个值。

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
    (max_entries,) on device; capacity_bytes, max_entries, device (torch.device), rescore;
    slots (dict from prefix to slot), prefix_of (list: the prefix in each slot, None when free);
    log, current_bytes, time.

    Raises:
        ValueError: capacity_bytes < 1 or max_entries < 1; bad input to touch as in Task 5.2.
        RuntimeError: a miss needs a slot while every slot is live (the state is not changed).
    """

    def __init__(self, capacity_bytes, max_entries, device=None, rescore=False):
        """An empty scheduler: every slot free, the five tensors on device."""
        # TODO 5.3.1: check the arguments, then set every attribute of the empty scheduler.
        # 提示：device=None 时用 torch.device("cpu")，否则 torch.device(device)；张量用 torch.zeros(max_entries, dtype=..., device=...)。
        #       alive 全为 False；slots = {}，prefix_of = [None] * max_entries。
        # Hint: device None means torch.device("cpu"), otherwise torch.device(device); make the tensors with
        #       torch.zeros(max_entries, dtype=..., device=...). alive is all False; slots = {}, prefix_of = [None] * max_entries.
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
        self.prefix_of = [None] * max_entries
        zeros = dict(size=(max_entries,), device=self.device)
        self.hits = torch.zeros(**zeros, dtype=torch.int64)
        self.bytes = torch.zeros(**zeros, dtype=torch.int64)
        self.last_used = torch.zeros(**zeros, dtype=torch.int64)
        self.priority = torch.zeros(**zeros, dtype=torch.float64)
        self.alive = torch.zeros(**zeros, dtype=torch.bool)
        ### END SOLUTION

    def _victim(self):
        """Return the live slot with the smallest (priority, last_used), rescoring first if asked."""
        # TODO 5.3.2: when self.rescore, store the score at self.time of every live slot in self.priority.
        # 提示：年龄是 time 与 last_used 之差（不小于 0，转成 float64），分数公式见“评分公式”一节，对所有槽位一次算出；再用
        #       torch.where 只替换有效槽位的优先级。
        # Hint: the age is time minus last_used (at least 0, in float64), and the score is the formula of the scoring section,
        #       computed for every slot at once; then torch.where replaces the priority of the live slots only.
        ### BEGIN SOLUTION
        if self.rescore:
            age = (self.time - self.last_used).clamp(min=0).to(torch.float64)
            scores = (self.hits.to(torch.float64) + 0.5 * (1.0 / (1.0 + age))
                      - 0.25 * self.bytes.to(torch.float64) / self.capacity_bytes)
            self.priority = torch.where(self.alive, scores, self.priority)
        ### END SOLUTION
        # TODO 5.3.3: return the live slot with the smallest (priority, last_used) as a Python int.
        # 提示：先把空槽位的 priority 换成 inf 求最小值，得到掩码 tied = alive & (priority == 最小值)；再在 tied 之外的槽位把
        #       last_used 换成 int64 的最大值，取 argmin。
        # Hint: replace the priority of free slots with inf and take the minimum, giving the mask tied = alive & (priority
        #       == that minimum); then replace last_used outside tied with the largest int64 and take the argmin.
        ### BEGIN SOLUTION
        inf = torch.full_like(self.priority, float("inf"))
        priority = torch.where(self.alive, self.priority, inf)
        tied = self.alive & (priority == priority.min())
        latest = torch.full_like(self.last_used, torch.iinfo(torch.int64).max)
        return int(torch.argmin(torch.where(tied, self.last_used, latest)))
        ### END SOLUTION

    def touch(self, prefix, bytes_):
        """Request prefix (bytes_ bytes), exactly as KVCacheSchedulerSim.touch."""
        # TODO 5.3.4: the checks (ValueError, then RuntimeError), the clock, then a hit or a miss.
        # 提示：(1) 所有检查都在改动状态之前：RuntimeError 的条件是“未命中、len(self.slots) == max_entries、且字节放得下”；
        #       (2) 命中只改这个槽位的 hits、last_used、priority；(3) 未命中：循环驱逐 self._victim() 直到放得下，
        #       再找一个空闲槽位（alive 为 False 的第一个下标），写入新条目。
        # Hint: (1) every check comes before any change: the RuntimeError is for "a miss, len(self.slots) == max_entries and
        #       the bytes fit"; (2) a hit changes only this slot's hits, last_used and priority; (3) a miss: evict
        #       self._victim() in a loop until the bytes fit, then take a free slot (the first index where alive is False) and
        #       write the new entry there.
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
            name = self.prefix_of[victim]
            self.alive[victim] = False
            self.prefix_of[victim] = None
            del self.slots[name]
            self.current_bytes -= int(self.bytes[victim])
            self.log.append(f"evict:{name}")
        slot = int(torch.argmin(self.alive.to(torch.uint8)))  # the first free slot
        self.slots[prefix] = slot
        self.prefix_of[slot] = prefix
        self.hits[slot] = 1
        self.bytes[slot] = bytes_
        self.last_used[slot] = self.time
        self.priority[slot] = 1 + 0.5 * (1 / (1 + 0)) - 0.25 * bytes_ / self.capacity_bytes
        self.alive[slot] = True
        self.current_bytes += bytes_
        self.log.append(f"add:{prefix}")
        ### END SOLUTION

    def schedule(self, requests):
        """Touch every (prefix, bytes_) of requests in order; return a copy of the whole log (given)."""
        for prefix, bytes_ in requests:
            self.touch(prefix, bytes_)
        return list(self.log)

    def snapshot(self):
        """Return [(prefix, bytes, round(priority, 4), hits)] ordered by (-priority, last_used, prefix)."""
        # TODO 5.3.5: the live slots as tuples of plain Python values, the most valuable first.
        # 提示：tensor.tolist() 一次把整个张量读成 Python 数字的列表；再按 slots 取出每个前缀的值并排序。
        # Hint: tensor.tolist() reads a whole tensor back as a list of Python numbers; then take each prefix's values through
        #       slots and sort.
        ### BEGIN SOLUTION
        priority, size = self.priority.tolist(), self.bytes.tolist()
        hits, last_used = self.hits.tolist(), self.last_used.tolist()
        ordered = sorted(self.slots.items(), key=lambda item: (-priority[item[1]], last_used[item[1]], item[0]))
        return [(prefix, size[slot], round(priority[slot], 4), hits[slot]) for prefix, slot in ordered]
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task5_3_1_init", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that TensorKVCacheScheduler starts with every slot free, its five tensors of the right dtype on its device."""


def _check_task5_3_1_init():
    from course.checks import assert_plain_equal, assert_raises, check_type
    from course.env import available_devices

    DTYPES = (("hits", torch.int64), ("bytes", torch.int64), ("last_used", torch.int64), ("priority", torch.float64),
              ("alive", torch.bool))


    def check_tensors(sched, n, device, call):
        for name, dtype in DTYPES:
            tensor = getattr(sched, name)
            check_type(tensor, torch.Tensor, f"{call}.{name}")
            assert tensor.dtype == dtype and tuple(tensor.shape) == (n,) and tensor.device.type == device.type, (
                f"{call}.{name} must be a {dtype} tensor of shape ({n},) on {device}; "
                f"got {tensor.dtype}, {tuple(tensor.shape)}, {tensor.device}")


    for device in available_devices():
        sched = TensorKVCacheScheduler(128, 8, device=device)
        check_tensors(sched, 8, device, f"TensorKVCacheScheduler(128, 8, device={device})")
        assert_plain_equal(sched.alive.tolist(), [False] * 8, f"alive of a new TensorKVCacheScheduler(128, 8) on {device}")
        assert_plain_equal([sched.capacity_bytes, sched.max_entries, sched.rescore, sched.slots, sched.prefix_of, sched.log,
                            sched.current_bytes, sched.time], [128, 8, False, {}, [None] * 8, [], 0, 0],
                           "[capacity_bytes, max_entries, rescore, slots, prefix_of, log, current_bytes, time] of "
                           f"TensorKVCacheScheduler(128, 8) on {device}")
        assert sched.device.type == device.type, f"sched.device must be {device}; got {sched.device}"
    default = TensorKVCacheScheduler(64, 4)
    check_tensors(default, 4, torch.device("cpu"), "TensorKVCacheScheduler(64, 4) (device None)")
    check_type(default.device, torch.device, "TensorKVCacheScheduler(64, 4).device")
    assert_plain_equal(str(default.device), "cpu", "str(TensorKVCacheScheduler(64, 4).device) (None means the CPU)")
    check_tensors(TensorKVCacheScheduler(64, 4, device="meta"), 4, torch.device("meta"),
                  "TensorKVCacheScheduler(64, 4, device='meta')")
    assert_plain_equal(TensorKVCacheScheduler(64, 4, rescore=True).rescore, True, "TensorKVCacheScheduler(64, 4, rescore=True).rescore")
    assert_raises(ValueError, "TensorKVCacheScheduler(0, 4)", TensorKVCacheScheduler, 0, 4)
    assert_raises(ValueError, "TensorKVCacheScheduler(0.5, 4) (capacity_bytes < 1)", TensorKVCacheScheduler, 0.5, 4)
    assert_raises(ValueError, "TensorKVCacheScheduler(64, 0)", TensorKVCacheScheduler, 64, 0)
    one = TensorKVCacheScheduler(1, 1, device="cpu")
    check_tensors(one, 1, torch.device("cpu"), "TensorKVCacheScheduler(1, 1, device='cpu')")
    check_type(one.device, torch.device, "TensorKVCacheScheduler(1, 1, device='cpu').device (a str device becomes a torch.device)")
    # Every scheduler has tensors, a log and tables of its own: a write into one of its int64 tensors changes no other.
    first, second = TensorKVCacheScheduler(128, 4), TensorKVCacheScheduler(128, 4)
    assert first.log is not second.log and first.slots is not second.slots and first.prefix_of is not second.prefix_of, (
        "two TensorKVCacheScheduler objects share their log, slots or prefix_of: each needs its own")
    counters = [name for name, _ in DTYPES[:3]]  # hits, bytes and last_used: the int64 tensors.
    for name in counters:
        getattr(first, name).fill_(7)
        for sched in (first, second):
            for other in counters:
                if (sched, other) != (first, name):
                    assert_plain_equal(getattr(sched, other).tolist(), [0] * 4,
                                       f"{'the same' if sched is first else 'another'} scheduler's {other} after "
                                       f"{name}.fill_(7) (each tensor is its own memory)")
        getattr(first, name).zero_()

    ### BEGIN HIDDEN TESTS
    for args in ((-1, 4), (64, -2), (0, 0)):
        assert_raises(ValueError, f"TensorKVCacheScheduler{args!r}", TensorKVCacheScheduler, *args)
    sched = TensorKVCacheScheduler(1, 1, device=torch.device("meta"), rescore=False)
    check_tensors(sched, 1, torch.device("meta"), "TensorKVCacheScheduler(1, 1, device=torch.device('meta'))")
    assert type(sched.device) is torch.device and sched.device.type == "meta", "sched.device must be a torch.device"
    assert type(TensorKVCacheScheduler(8, 2).device) is torch.device, "sched.device must be a torch.device when device is None"
    ### END HIDDEN TESTS


_check_task5_3_1_init()

# %% nbgrader={"grade": true, "grade_id": "test_task5_3_2_rescoring", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that _victim rescores every live slot at the current time when rescore is True, and only then."""


def _check_task5_3_2_rescoring():
    from course.checks import assert_plain_equal
    from course.env import available_devices


    def bare(rows, time, rescore, device, capacity_bytes=100):
        """A scheduler whose state this test sets directly (its __init__ does not run).

        rows: one (prefix, hits, bytes, last_used, priority) per slot; prefix None marks a free slot.
        """
        s = object.__new__(TensorKVCacheScheduler)
        s.capacity_bytes, s.max_entries, s.device, s.rescore = capacity_bytes, len(rows), torch.device(device), rescore
        s.time, s.log = time, []
        s.prefix_of = [row[0] for row in rows]
        s.slots = {row[0]: i for i, row in enumerate(rows) if row[0] is not None}
        s.current_bytes = sum(row[2] for row in rows if row[0] is not None)
        for name, column, dtype in (("hits", 1, torch.int64), ("bytes", 2, torch.int64), ("last_used", 3, torch.int64),
                                    ("priority", 4, torch.float64)):
            setattr(s, name, torch.tensor([row[column] for row in rows], dtype=dtype, device=device))
        s.alive = torch.tensor([row[0] is not None for row in rows], dtype=torch.bool, device=device)
        return s


    def others(s):
        return [s.hits.tolist(), s.bytes.tolist(), s.last_used.tolist(), s.alive.tolist()]


    ROWS = [("a", 1, 10, 1, 1.475), (None, 0, 0, 0, -7.0), ("c", 2, 58, 4, 2.355), ("d", 1, 20, 7, 0.0),
            ("big", 2**25, 1, 5, 0.0)]
    for device in available_devices():
        s = bare(ROWS, 5, True, device)
        before = others(s)
        s._victim()
        assert s.priority.dtype == torch.float64 and s.priority.device.type == device.type, \
            f"priority must stay a float64 tensor on {device}; got {s.priority.dtype} on {s.priority.device}"
        live = [s.priority.tolist()[i] for i in (0, 2, 3, 4)]
        assert_plain_equal(live, [1.075, 2.105, 1.45, 2**25 + 0.4975],
                           f"priority of the live slots a, c, d, big after _victim() at time 5, rescore=True, on {device} "
                           "(a: age 4; c: age 1; d: last_used 7 > time, age 0; big: 2**25 hits)", rel_tol=0, abs_tol=1e-6)
        assert_plain_equal(others(s), before, f"[hits, bytes, last_used, alive] after rescoring on {device} (only priority changes)")
        s = bare(ROWS, 5, False, device)
        s._victim()
        assert_plain_equal([s.priority.tolist()[i] for i in (0, 2, 3, 4)], [1.475, 2.355, 0.0, 0.0],
                           f"priority of the live slots after _victim() with rescore=False on {device} (unchanged)")
    # Same order of operations, in float64: the priorities are bit for bit those of _score's formula.
    rows = [("a", 1, 1, 2, 0.0), ("b", 3, 7, 0, 0.0), ("c", 2**30, 33, 5, 0.0), ("d", 0, 99, 1, 0.0), ("e", 5, 10, 3, 0.0)]
    expected = [row[1] + 0.5 * (1 / (1 + max(9 - row[3], 0))) - 0.25 * row[2] / 100 for row in rows]
    for device in available_devices():
        s = bare(rows, 9, True, device)
        s._victim()
        assert_plain_equal(s.priority.tolist(), expected, f"the priorities after _victim() at time 9, rescore=True, on "
                           f"{device} (bit for bit: the formula of _score, in its order, in float64)", rel_tol=0, abs_tol=0)

    # With a capacity of 714 the order shows in the bits: the size term subtracted before the recency term is added
    # gives 8.03606442577031 for a (hits 8, age 3, 254 bytes), not 8.036064425770308.
    rows = [("a", 8, 254, 6, 0.0), ("b", 1, 1, 9, 0.0), ("c", 3, 500, 2, 0.0), ("d", 2, 37, 8, 0.0)]
    expected = [row[1] + 0.5 * (1 / (1 + max(9 - row[3], 0))) - 0.25 * row[2] / 714 for row in rows]
    for device in available_devices():
        s = bare(rows, 9, True, device, capacity_bytes=714)
        s._victim()
        assert_plain_equal(s.priority.tolist(), expected, f"the priorities after _victim() at time 9, rescore=True, "
                           f"capacity 714, on {device} (bit for bit: the formula of _score, in its order)",
                           rel_tol=0, abs_tol=0)

    ### BEGIN HIDDEN TESTS
    import random

    rng = random.Random(5322)
    for device in available_devices():
        for case in range(100):
            n, capacity, now = rng.randint(1, 12), rng.choice([16, 100, 1024]), rng.randint(0, 40)
            rows = [((f"p{i}" if rng.random() < 0.8 or i == 0 else None), rng.choice([0, 1, 3, 2**20, 2**30]),
                     rng.randint(1, capacity), rng.randint(0, 45), rng.random()) for i in range(n)]
            for rescore in (True, False):
                s = bare(rows, now, rescore, device, capacity)
                s._victim()
                got = s.priority.tolist()
                for i, row in enumerate(rows):
                    if row[0] is None:
                        continue
                    expected = (row[1] + 0.5 * (1 / (1 + max(now - row[3], 0))) - 0.25 * row[2] / capacity) if rescore else row[4]
                    assert_plain_equal(got[i], expected, f"slot {i}'s priority after _victim() on random case {case} "
                                       f"(rescore={rescore}, {device})", rel_tol=0, abs_tol=1e-6, reveal=False)
    ### END HIDDEN TESTS


_check_task5_3_2_rescoring()

# %% nbgrader={"grade": true, "grade_id": "test_task5_3_3_victim", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that _victim returns the live slot with the smallest (priority, last_used), as an int, without a Python loop."""


def _check_task5_3_3_victim():
    from course.checks import assert_no_python_loop, assert_plain_equal, check_type
    from course.env import available_devices


    def bare(rows, device, time=9, rescore=False, capacity_bytes=100):
        """A scheduler whose state this test sets directly (its __init__ does not run).

        rows: one (prefix, hits, bytes, last_used, priority) per slot; prefix None marks a free slot.
        """
        s = object.__new__(TensorKVCacheScheduler)
        s.capacity_bytes, s.max_entries, s.device, s.rescore = capacity_bytes, len(rows), torch.device(device), rescore
        s.time, s.log = time, []
        s.prefix_of = [row[0] for row in rows]
        s.slots = {row[0]: i for i, row in enumerate(rows) if row[0] is not None}
        s.current_bytes = sum(row[2] for row in rows if row[0] is not None)
        for name, column, dtype in (("hits", 1, torch.int64), ("bytes", 2, torch.int64), ("last_used", 3, torch.int64),
                                    ("priority", 4, torch.float64)):
            setattr(s, name, torch.tensor([row[column] for row in rows], dtype=dtype, device=device))
        s.alive = torch.tensor([row[0] is not None for row in rows], dtype=torch.bool, device=device)
        return s


    for device in available_devices():
        s = bare([("a", 1, 10, 5, 1.4), ("b", 1, 10, 2, 1.4), (None, 0, 0, 0, 0.5), ("c", 2, 10, 1, 2.4)], device)
        check_type(s._victim(), int, f"_victim() on {device}")
        assert_plain_equal(s._victim(), 1, f"_victim() with a 1.4@5, b 1.4@2, a free slot holding 0.5, c 2.4@1 on {device} "
                           "(equal priority: older first; a free slot never wins)")
        s = bare([("x", 2**40, 1, 3, 2**40 + 1.5), (None, 0, 0, 0, 0.0), ("y", 2**40, 1, 2, 2**40 + 1.25)], device)
        assert_plain_equal(s._victim(), 2, f"_victim() with x {2**40 + 1.5}@3, a free slot, y {2**40 + 1.25}@2 on {device} "
                           "(large priorities: mask free slots with inf)")
        s = bare([("only", 1, 10, 4, 1.475)] + [(None, 0, 0, 0, -1.0)] * 3, device)
        assert_plain_equal(s._victim(), 0, f"_victim() with one live slot (slot 0) among 4 on {device}")
        s = bare([("x", 2**40, 1, 1, 2.0**40 + 5.5), ("y", 2**40, 1, 3, 2.0**40 + 1.5)], device)
        assert_plain_equal(s._victim(), 1, f"_victim() with x {2**40 + 5.5}@1 and y {2**40 + 1.5}@3 on {device} (y's "
                           "priority is smaller: equal means exactly equal, no tolerance)")
        # A state set by hand may hold a last_used after the clock: the smallest priority still wins.
        s = bare([("a", 1, 10, 0, 2.0), ("b", 1, 10, 5, 1.0)], device, time=0)
        assert_plain_equal(s._victim(), 1, f"_victim() with a 2.0@0 and b 1.0@5 at time 0 on {device}")


    # BEGIN SHARED victim_of (authoring/shared/05_scheduler_sim.py)
    def victim_of(hits, size, last_used, priority, alive, sched):
        """``sched._victim()`` on these columns: what 5.3.3 and 5.3.6 count the torch operations of."""
        sched.hits, sched.bytes, sched.last_used, sched.priority, sched.alive = hits, size, last_used, priority, alive
        return sched._victim()
    # END SHARED


    for rescore in (False, True):
        small = bare([(f"p{i}", 1, 1, i + 1, 1.4) for i in range(8)], "cpu", rescore=rescore)
        large = bare([(f"p{i}", 1, 1, i + 1, 1.4) for i in range(2048)], "cpu", rescore=rescore)
        assert_no_python_loop(victim_of, (small.hits, small.bytes, small.last_used, small.priority, small.alive, small),
                              (large.hits, large.bytes, large.last_used, large.priority, large.alive, large),
                              f"TensorKVCacheScheduler._victim (rescore={rescore})")

    ### BEGIN HIDDEN TESTS
    import random

    rng = random.Random(5333)
    for device in available_devices():
        for case in range(200):
            n = rng.randint(1, 16)
            rows = [((f"p{i}" if rng.random() < 0.75 else None), rng.randint(0, 3), rng.randint(1, 100), rng.randint(0, 9),
                     rng.choice([1.0, 1.25, 2.5, -3.0, 2.0**40, float(2**53)])) for i in range(n)]
            if all(row[0] is None for row in rows):
                rows[rng.randrange(n)] = ("forced", 1, 1, 1, 1.0)
            live = [i for i, row in enumerate(rows) if row[0] is not None]
            expected = min(live, key=lambda i: (rows[i][4], rows[i][3], i))
            if sum(1 for i in live if (rows[i][4], rows[i][3]) == (rows[expected][4], rows[expected][3])) > 1:
                continue  # equal (priority, last_used) in two slots: the contract does not say which
            result = bare(rows, device)._victim()
            check_type(result, int, f"_victim() on random case {case}")
            assert_plain_equal(result, expected, f"_victim() on random case {case} ({device})", reveal=False)
        # With rescore, the choice uses the fresh scores: a, the oldest of three equal entries, has decayed most.
        s = bare([("a", 1, 10, 1, 1.475), ("b", 1, 10, 2, 1.475), ("c", 1, 10, 3, 1.475), ("d", 1, 58, 4, 1.355)], device,
                 time=5, rescore=True)
        assert_plain_equal(s._victim(), 0, f"_victim() rescored at time 5 on {device}", reveal=False)
        s.rescore = False
        s.priority = torch.tensor([1.475, 1.475, 1.475, 1.355], dtype=torch.float64, device=device)
        assert_plain_equal(s._victim(), 3, f"_victim() with frozen scores on {device}", reveal=False)
    ### END HIDDEN TESTS


_check_task5_3_3_victim()

# %% nbgrader={"grade": true, "grade_id": "test_task5_3_4_touch", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that touch writes hits and misses into the slots, evicts through _victim, and raises before changing anything."""


def _check_task5_3_4_touch():
    from course.checks import assert_plain_equal, assert_raises, check_type
    from course.env import available_devices


    order = ["b", "a", "c", "d", "e"]  # The stand-in's order of the prefixes, which the test sets (a list it keeps).


    class Probe(TensorKVCacheScheduler):
        """touch alone: _victim is a stand-in that picks the live slot of the first cached prefix in the test's order,
        which touch cannot tell by itself: touch must ask it. What to expect comes from the test's own record of
        the cached prefixes, never from the student's slots."""

        def _victim(self):
            slots, alive = self.slots, self.alive.tolist()
            return slots[next(prefix for prefix in order if prefix in slots and alive[slots[prefix]])]


    def bare(n, device, rescore=False, capacity_bytes=100):
        """A Probe with n free slots whose state this test sets directly (its __init__ does not run)."""
        s = object.__new__(Probe)
        s.capacity_bytes, s.max_entries, s.device, s.rescore = capacity_bytes, n, torch.device(device), rescore
        s.time, s.log, s.current_bytes, s.slots, s.prefix_of = 0, [], 0, {}, [None] * n
        for name in ("hits", "bytes", "last_used"):
            setattr(s, name, torch.zeros(n, dtype=torch.int64, device=device))
        s.priority = torch.zeros(n, dtype=torch.float64, device=device)
        s.alive = torch.zeros(n, dtype=torch.bool, device=device)
        return s


    def row(s, prefix):
        slot = s.slots[prefix]
        return [s.prefix_of[slot], int(s.hits[slot]), int(s.bytes[slot]), int(s.last_used[slot]), float(s.priority[slot]),
                bool(s.alive[slot])]


    def state(s):
        return [s.time, s.current_bytes, list(s.log), dict(s.slots), list(s.prefix_of), s.hits.tolist(), s.bytes.tolist(),
                s.last_used.tolist(), s.priority.tolist(), s.alive.tolist()]


    for device in available_devices():
        s = bare(3, device)
        check_type(s.touch("a", 40), type(None), f"touch('a', 40) on {device}")
        assert_plain_equal([s.time, s.current_bytes, s.log, row(s, "a")], [1, 40, ["add:a"], ["a", 1, 40, 1, 1.4, True]],
                           f"[time, current_bytes, log, [prefix_of, hits, bytes, last_used, priority, alive] of a's slot] "
                           f"after touch('a', 40), capacity 100, on {device}")
        s.priority[s.slots["a"]] = 0.5  # As a rescore would have aged it: a hit sets the score, not adds to it.
        s.touch("a", 60)
        assert_plain_equal([s.time, s.current_bytes, s.log[-1], row(s, "a")], [2, 40, "reuse:a", ["a", 2, 40, 2, 2.4, True]],
                           f"[time, current_bytes, last log line, a's slot] after touch('a', 60), a hit, on {device} (a's "
                           "priority had been set to 0.5, as a rescore would age it: the hit sets the score at this time)")
        s.touch("b", 50)
        s.touch("c", 30)
        assert_plain_equal([s.log[-2:], sorted(s.slots), s.current_bytes, int(s.alive.sum())],
                           [["evict:b", "add:c"], ["a", "c"], 70, 2],
                           f"[last log lines, slots, current_bytes, live slots] after touch('c', 30) at 90 of 100 bytes on {device} "
                           "(evict self._victim(): here a stand-in that picks the first cached prefix in the order b, a, c, "
                           "d, e)")
        assert "b" not in s.prefix_of, f"prefix_of still names the evicted 'b' on {device}: {s.prefix_of}"
        assert_plain_equal(row(s, "c")[:4], ["c", 1, 30, 4], f"c's slot after touch('c', 30) on {device}")
        s.touch("d", 10)
        before = state(s)
        assert_raises(RuntimeError, f"touch('e', 1) with all 3 slots live and room for 1 byte on {device}", s.touch, "e", 1)
        assert_plain_equal(state(s), before, f"the state after that RuntimeError on {device} (nothing may change)")
        for args in (("", 5), (3, 5), ("x", 0), ("x", 101), ("d", 101), ("d", 0), ("d", -5)):
            assert_raises(ValueError, f"touch{args!r} on {device}{' (a cached prefix)' if args[0] == 'd' else ''}",
                          s.touch, *args)
            assert_plain_equal(state(s), before, f"the state after touch{args!r} raised on {device}")
        s.touch("d", 5)
        assert_plain_equal([s.log[-1], row(s, "d")[:4]], ["reuse:d", ["d", 2, 10, 6]],
                           f"[last log line, d's slot] after touch('d', 5), a hit while all 3 slots are live, on {device}")
        s.touch("e", 100)
        assert_plain_equal([s.log[-1], sorted(s.slots), row(s, "e")[:4], s.current_bytes, [p for p in s.prefix_of if p is not None]],
                           ["add:e", ["e"], ["e", 1, 100, 7], 100, ["e"]],
                           f"[last log line, slots, e's slot, current_bytes, the prefixes in prefix_of] after touch('e', 100) with "
                           f"all slots live on {device} (eviction frees the slots; a reused slot starts at 1 hit)")
        s = bare(3, device, rescore=True)
        s.touch("a", 10)
        s.touch("b", 10)
        s.touch("a", 10)
        assert_plain_equal(row(s, "b")[4], 1.475, f"b's priority after a's hit, rescore=True, on {device} (a hit changes only its slot)")
        # An exact fit with every slot live is still a RuntimeError (nothing has to be evicted for the bytes).
        s = bare(2, device)
        s.touch("a", 40)
        s.touch("b", 30)
        before = state(s)
        assert_raises(RuntimeError, f"touch('c', 30) with both slots live at 70 of 100 bytes on {device} (an exact fit: "
                      "nothing has to be evicted)", s.touch, "c", 30)
        assert_plain_equal(state(s), before, f"the state after touch('c', 30) raised on {device} (nothing may change)")

    # With a capacity of 3 the order shows in the bits: a new 1-byte prefix scores 1 + 0.5 - 0.25 / 3 =
    # 1.4166666666666667, where the size term subtracted first gives 1.4166666666666665.
    for device in available_devices():
        s = bare(2, device, capacity_bytes=3)
        s.touch("a", 1)
        s.touch("a", 1)
        s.touch("b", 1)
        assert_plain_equal([row(s, "a")[4], row(s, "b")[4]], [2 + 0.5 * (1 / (1 + 0)) - 0.25 * 1 / 3,
                                                               1 + 0.5 * (1 / (1 + 0)) - 0.25 * 1 / 3],
                           f"the priorities of a (hit once) and b (new), 1 byte each, capacity 3, on {device} (bit for "
                           "bit: the formula of _score, in its order)", rel_tol=0, abs_tol=0)

    ### BEGIN HIDDEN TESTS
    import random

    rng, order_rng = random.Random(5344), random.Random(5345)
    for device in available_devices():
        for case in range(30):
            capacity, n = rng.choice([50, 100]), rng.randint(1, 5)
            s = bare(n, device, rescore=rng.random() < 0.5, capacity_bytes=capacity)
            order[:] = order_rng.sample("abcdefg", 7)
            model, clock = {}, 0  # prefix -> [hits, bytes, last_used]
            for _ in range(rng.randint(1, 25)):
                name, size = rng.choice("abcdefg"), rng.randint(1, capacity)
                used = sum(v[1] for v in model.values())
                if name not in model and len(model) == n and used + size <= capacity:
                    before = state(s)
                    assert_raises(RuntimeError, f"touch on random case {case} (every slot live)", s.touch, name, size)
                    assert state(s) == before, f"touch changed the state before its RuntimeError on random case {case}"
                    continue
                lines = len(s.log)
                s.touch(name, size)
                clock += 1
                if name in model:
                    model[name] = [model[name][0] + 1, model[name][1], clock]
                    assert_plain_equal(s.log[lines:], ["reuse:" + name], f"the log of a hit on random case {case}", reveal=False)
                else:
                    evicted = []
                    while model and sum(v[1] for v in model.values()) + size > capacity:
                        victim = next(p for p in order if p in model)  # the stand-in: the first cached prefix in its order
                        del model[victim]
                        evicted.append("evict:" + victim)
                    model[name] = [1, size, clock]
                    assert_plain_equal(s.log[lines:], evicted + ["add:" + name], f"the log of a miss on random case {case}",
                                       reveal=False)
                assert_plain_equal({p: row(s, p)[1:4] for p in s.slots}, model, f"the slots on random case {case} ({device})",
                                   reveal=False)
                assert_plain_equal(row(s, name)[4], model[name][0] + 0.5 - 0.25 * model[name][1] / capacity,
                                   f"the priority written by touch on random case {case}", reveal=False)
            assert_plain_equal([s.time, s.current_bytes, int(s.alive.sum())],
                               [clock, sum(v[1] for v in model.values()), len(model)],
                               f"[time, current_bytes, live slots] on random case {case} ({device})", reveal=False)
            assert sorted(p for p in s.prefix_of if p is not None) == sorted(model), \
                f"prefix_of does not match the live prefixes on random case {case}"
    ### END HIDDEN TESTS


_check_task5_3_4_touch()

# %% nbgrader={"grade": true, "grade_id": "test_task5_3_5_snapshot", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that snapshot lists the live slots as plain Python tuples, the most valuable first."""


def _check_task5_3_5_snapshot():
    from course.checks import assert_plain_equal
    from course.env import available_devices


    def bare(rows, device):
        """A scheduler whose state this test sets directly (its __init__ does not run).

        rows: one (prefix, hits, bytes, last_used, priority) per slot; prefix None marks a free slot.
        """
        s = object.__new__(TensorKVCacheScheduler)
        s.capacity_bytes, s.max_entries, s.device, s.rescore = 128, len(rows), torch.device(device), False
        s.time, s.log = 9, []
        s.prefix_of = [row[0] for row in rows]
        s.slots = {row[0]: i for i, row in enumerate(rows) if row[0] is not None}
        s.current_bytes = sum(row[2] for row in rows if row[0] is not None)
        for name, column, dtype in (("hits", 1, torch.int64), ("bytes", 2, torch.int64), ("last_used", 3, torch.int64),
                                    ("priority", 4, torch.float64)):
            setattr(s, name, torch.tensor([row[column] for row in rows], dtype=dtype, device=device))
        s.alive = torch.tensor([row[0] is not None for row in rows], dtype=torch.bool, device=device)
        return s


    for device in available_devices():
        s = bare([("b", 1, 48, 2, 1.40625), (None, 9, 9, 9, 9.0), ("a", 3, 40, 6, 3.421875), ("d", 1, 48, 1, 1.40625),
                  ("c", 1, 48, 1, 1.40625)], device)
        assert_plain_equal(s.snapshot(), [("a", 40, 3.4219, 3), ("c", 48, 1.4062, 1), ("d", 48, 1.4062, 1), ("b", 48, 1.4062, 1)],
                           f"snapshot() of a 3.421875@6 and b@2, d@1, c@1 all 1.40625, and a free slot, on {device}")
        assert_plain_equal(bare([(None, 0, 0, 0, 0.0)] * 3, device).snapshot(), [], f"snapshot() with every slot free on {device}")
        assert_plain_equal(s.priority.tolist(), [1.40625, 9.0, 3.421875, 1.40625, 1.40625],
                           f"the priorities after snapshot() on {device} (snapshot must not change them)")
        # round(priority, 4) is Python's round of the float64 value: 1.49625 is stored as 1.4962500000000000355...
        # and rounds up; 1.49375 as 1.4937499999999999... and rounds down (scaling by 10**4 first makes both halves).
        halves = bare([("a", 1, 6, 1, 1.49625), ("b", 1, 10, 2, 1.49375)], device)
        assert_plain_equal(halves.snapshot(), [("a", 6, 1.4963, 1), ("b", 10, 1.4937, 1)],
                           f"snapshot() of a 1.49625@1 and b 1.49375@2 on {device} (round(priority, 4) of each float64 "
                           "priority, as Python's round gives it)")
        # Priorities that differ by less than round(..., 4) shows: the order comes from the priorities themselves.
        close = bare([("x", 1, 8, 1, 1.00001), ("y", 1, 8, 5, 1.00002)], device)
        assert_plain_equal(close.snapshot(), [("y", 8, 1.0, 1), ("x", 8, 1.0, 1)],
                           f"snapshot() of x 1.00001@1 and y 1.00002@5 on {device} (y is worth more, though both round "
                           "to 1.0)")
        # Priorities that float32 cannot tell apart (x, y), and one that float32 would round the other way (z):
        # the float64 values themselves are sorted and rounded.
        closer = bare([("x", 1, 8, 1, 1.00000001), ("y", 1, 8, 5, 1.00000002), ("z", 1, 8, 2, 1.23455000001)], device)
        assert_plain_equal(closer.snapshot(), [("z", 8, 1.2346, 1), ("y", 8, 1.0, 1), ("x", 8, 1.0, 1)],
                           f"snapshot() of x 1.00000001@1, y 1.00000002@5 and z 1.23455000001@2 on {device} (float32 holds "
                           "x and y as one number, and z as 1.23454999...: sort and round the float64 priorities)")

    ### BEGIN HIDDEN TESTS
    import random

    rng = random.Random(5355)
    for device in available_devices():
        for case in range(100):
            rows = [((f"p{i}" if rng.random() < 0.7 else None), rng.randint(1, 5), rng.randint(1, 128), rng.randint(0, 5),
                     rng.choice([1.0, 1.123456789, 2.5, rng.random() * 5])) for i in range(rng.randint(1, 10))]
            live = [row for row in rows if row[0] is not None]
            expected = [(r[0], r[2], round(r[4], 4), r[1]) for r in sorted(live, key=lambda r: (-r[4], r[3], r[0]))]
            s = bare(rows, device)
            assert_plain_equal(s.snapshot(), expected, f"snapshot() on random case {case} ({device})", reveal=False)
            assert s.priority.tolist() == [row[4] for row in rows], f"snapshot() changed priority on random case {case}"
    ### END HIDDEN TESTS


_check_task5_3_5_snapshot()

# %% nbgrader={"grade": true, "grade_id": "test_task5_3_6_whole_scheduler", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that TensorKVCacheScheduler reproduces the heap simulator, and rescores on request, on every device."""


def _check_task5_3_6_whole_scheduler():
    from course.checks import assert_plain_equal
    from course.env import available_devices

    KNOWN = [("a", 40), ("b", 48), ("a", 40), ("c", 56), ("d", 48), ("a", 40)]
    AGING = [("a", 10), ("b", 10), ("c", 10), ("d", 58), ("e", 20)]
    for device in available_devices():
        sched = TensorKVCacheScheduler(128, 8, device=device)
        assert_plain_equal(sched.schedule(KNOWN),
                           ["add:a", "add:b", "reuse:a", "evict:b", "add:c", "evict:c", "add:d", "reuse:a"],
                           f"TensorKVCacheScheduler(128, 8).schedule([a40, b48, a40, c56, d48, a40]) on {device}")
        assert_plain_equal(sched.snapshot(), [("a", 40, 3.4219, 3), ("d", 48, 1.4062, 1)], f"snapshot() after that schedule on {device}")
        assert_plain_equal([sched.time, sched.current_bytes, int(sched.alive.sum())], [6, 88, 2],
                           f"[time, current_bytes, live slots] after that schedule on {device}")
        # Frozen scores evict the big recent d; rescored at time 5, the old a has decayed most.
        assert_plain_equal(TensorKVCacheScheduler(100, 8, device=device).schedule(AGING),
                           ["add:a", "add:b", "add:c", "add:d", "evict:d", "add:e"],
                           f"rescore=False on [a10, b10, c10, d58, e20], capacity 100, on {device}")
        rescored = TensorKVCacheScheduler(100, 8, device=device, rescore=True)
        assert_plain_equal(rescored.schedule(AGING), ["add:a", "add:b", "add:c", "add:d", "evict:a", "add:e"],
                           f"rescore=True on [a10, b10, c10, d58, e20], capacity 100, on {device}")
        assert_plain_equal(rescored.snapshot(), [("e", 20, 1.45, 1), ("c", 10, 1.1417, 1), ("d", 58, 1.105, 1), ("b", 10, 1.1, 1)],
                           f"snapshot() after rescore=True on that trace, on {device}")
        rescored.touch("c", 10)
        assert_plain_equal(rescored.snapshot(), [("c", 10, 2.475, 2), ("e", 20, 1.45, 1), ("d", 58, 1.105, 1), ("b", 10, 1.1, 1)],
                           f"snapshot() after a hit on c at time 6, rescore=True, on {device} (no eviction: nothing is rescored)")

    ### BEGIN HIDDEN TESTS
    import random


    def oracle_run(capacity, requests, rescore):
        """Rows of [hits, size, last_used, priority]; the victim is a scan, rescored first when asked."""
        rows, log, used = {}, [], 0

        def value(row, now):
            return row[0] + 0.5 * (1 / (1 + max(now - row[2], 0))) - 0.25 * row[1] / capacity

        for now, (name, size) in enumerate(requests, start=1):
            if name in rows:
                rows[name][0] += 1
                rows[name][2] = now
                rows[name][3] = value(rows[name], now)
                log.append("reuse:" + name)
                continue
            while rows and used + size > capacity:
                if rescore:
                    for row in rows.values():
                        row[3] = value(row, now)
                victim = min(rows, key=lambda k: (rows[k][3], rows[k][2]))
                used -= rows.pop(victim)[1]
                log.append("evict:" + victim)
            rows[name] = [1, size, now, 0.0]
            rows[name][3] = value(rows[name], now)
            used += size
            log.append("add:" + name)
        order = sorted(rows, key=lambda k: (-rows[k][3], rows[k][2], k))
        return log, [(k, rows[k][1], round(rows[k][3], 4), rows[k][0]) for k in order], used


    rng = random.Random(5303)
    for device in available_devices():
        for case in range(120):
            capacity = rng.choice([16, 64, 100, 128, 1000])
            names = [f"p{i}" for i in range(rng.randint(1, 9))]
            pool = rng.choice([[capacity // 4], [capacity // 8, capacity // 4, capacity // 2], list(range(1, capacity + 1))])
            sizes = {n: rng.choice(pool) for n in names}
            requests = [(n, sizes[n]) for n in (rng.choice(names) for _ in range(rng.randint(1, 30)))]
            for rescore in (False, True):
                # The oracle runs first, and schedule gets a copy: the test's own list stays the test's.
                exp_log, exp_snap, exp_used = oracle_run(capacity, requests, rescore)
                s = TensorKVCacheScheduler(capacity, len(names), device=device, rescore=rescore)
                log = s.schedule(list(requests))
                where = f"random case {case}, rescore={rescore}, {device}"
                assert_plain_equal(log, exp_log, f"the log on {where}", reveal=False)
                assert_plain_equal(s.snapshot(), exp_snap, f"snapshot() on {where}", abs_tol=1e-4, reveal=False)
                assert_plain_equal([s.time, s.current_bytes, int(s.alive.sum()), sorted(s.slots)],
                                   [len(requests), exp_used, len(exp_snap), sorted(r[0] for r in exp_snap)],
                                   f"[time, current_bytes, live slots, sorted(slots)] on {where}", reveal=False)
        # A longer trace over 31 slots, frozen scores, against the test's own simulator: never the student's heap
        # simulator of Task 5.2, so that this task's points do not depend on that task's answer.
        requests = [(f"blk{rng.randint(0, 30)}", rng.choice([16, 32, 64])) for _ in range(200)]
        exp_log, exp_snap, _ = oracle_run(256, requests, False)
        tensor = TensorKVCacheScheduler(256, 31, device=device)
        assert_plain_equal(tensor.schedule(list(requests)), exp_log, f"the log of 200 requests over 31 slots ({device})",
                           reveal=False)
        assert_plain_equal(tensor.snapshot(), exp_snap, f"snapshot() after 200 requests over 31 slots ({device})",
                           abs_tol=1e-4, reveal=False)


    def filled(n, rescore):
        s = TensorKVCacheScheduler(n, n, rescore=rescore)
        s.schedule([(f"p{i}", 1) for i in range(n)])
        return s


    from course.checks import assert_no_python_loop

    # BEGIN SHARED victim_of (authoring/shared/05_scheduler_sim.py)
    def victim_of(hits, size, last_used, priority, alive, sched):
        """``sched._victim()`` on these columns: what 5.3.3 and 5.3.6 count the torch operations of."""
        sched.hits, sched.bytes, sched.last_used, sched.priority, sched.alive = hits, size, last_used, priority, alive
        return sched._victim()
    # END SHARED


    def args(s):
        return (s.hits, s.bytes, s.last_used, s.priority, s.alive, s)


    for rescore in (False, True):
        small, large = filled(8, rescore), filled(2048, rescore)
        # The text asks _victim for tensor operations only: touch may find its free slot any way it likes.
        assert_no_python_loop(victim_of, args(small), args(large),
                              f"TensorKVCacheScheduler._victim in a full table that schedule filled (rescore={rescore})")
        large.touch("new", 1)
        assert_plain_equal(large.log[-2:], ["evict:p0", "add:new"], f"the eviction in a full table of 2048 (rescore={rescore})",
                           reveal=False)
    ### END HIDDEN TESTS


_check_task5_3_6_whole_scheduler()

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

from course.plots import label


def draw_scores(hits=2, size_kib=256, capacity_kib=1024):
    sim = KVCacheSchedulerSim(capacity_kib)
    ages = list(range(0, 31))
    frozen = sim._score(hits, size_kib, 0)          # computed at the touch: time == last_used == 0
    rescored = []
    for age in ages:
        sim.time = age                              # the same entry, scored at a later time
        rescored.append(sim._score(hits, size_kib, 0))
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.plot(ages, [frozen] * len(ages), label=label("frozen (stored at the touch)", "冻结（访问时存下）"))
    ax.plot(ages, rescored, label=label("rescored (at eviction time)", "重新评分（驱逐时刻）"))
    ax.axhline(hits - 1 + 0.5, color="grey", lw=0.8, ls=":", label=label("best score with one hit fewer", "少一次命中时的最高分"))
    ax.set_title(label(f"Score of one entry: hits={hits}, size={size_kib} KiB of {capacity_kib} KiB",
                       f"一个条目的分数：命中 {hits} 次，大小 {size_kib} KiB（共 {capacity_kib} KiB）"))
    ax.set_xlabel(label("age: steps since the last touch", "年龄：距最近一次访问的步数"))
    ax.set_ylabel(label("score (dimensionless)", "分数（无量纲）"))
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
# The cell prints every point of the plots as a table; the text below it reads that table.
#
# 两个来自 `course.traces` 的工作负载：共享少量系统提示、交错进行的多轮**对话**会话，以及 **Zipf** 分布的文档问答。每个前缀块是一个条目，每个请求按顺序访问它的块。我们在多个缓存大小下用冻结评分调度器（你的 `KVCacheSchedulerSim`）、重新评分调度器（你的 `TensorKVCacheScheduler(rescore=True)`）、LRU 和 Belady 回放它们，分两种情况：
#
# - **单位大小的块**（每块 1 字节，容量以块计）：LRU 和 Belady 的 MIN 来自课程的回放引擎 `course.replay.replay(trace, capacity, policy)`，此时 MIN 是真正的最优解，即上限；
# - **大小不同的块**（16 到 128 KiB，每块大小不变）：回放引擎只支持单位大小的块，所以这里按字节编写 LRU 和 Belady 的“下次使用最远者先出” 规则（代码会在单位大小上与引擎核对）。块大小不同时 Belady 规则是很强的离线启发式，而不是上界。我们报告**命中率**（复用条目的访问占比）和**字节命中率**（从缓存提供的字节占请求字节的比例，更接近节省的预填充时间）。
#
# 单元把图中的每个点打印成一张表；下面的文字解读的就是这张表。

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
    ax = plot_hit_ratio_curves({p: curves[p] for p in POLICIES[:3]}, belady=curves["Belady"],
                               title=label(f"{name}, unit-size blocks: hit ratio", f"{name}，大小相同的块：命中率"),
                               ax=axes[row][0])
    ax.set_xlabel(label("cache capacity (blocks)", "缓存容量（块）"))
    ax.set_ylabel(label("hit ratio (%)", "命中率（%）"))
    for col, (metric, metric_zh, index) in enumerate((("hit ratio", "命中率", 0), ("byte hit ratio", "字节命中率", 1)), start=1):
        ax = axes[row][col]
        for policy in POLICIES:
            ax.plot([100 * f for f in FRACTIONS], [100 * results[name, f, policy][index] for f in FRACTIONS],
                    marker="o", markersize=3, label=policy, linestyle="--" if policy == "Belady" else "-")
        ax.set_title(label(f"{name}, varied sizes: {metric}", f"{name}，大小不一：{metric_zh}"))
        ax.set_xlabel(label("cache capacity (% of all distinct KiB)", "缓存容量（占全部不同块 KiB 的 %）"))
        ax.set_ylabel(label(f"{metric} (%)", f"{metric_zh}（%）"))
        ax.set_ylim(0, 100)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
plt.tight_layout()
plt.show()

print(f"{'workload':8s} {'capacity':>9s} {'sizes':>7s} {'metric':>15s} " + " ".join(f"{p:>18s}" for p in POLICIES))
for name in traces:
    for fraction in FRACTIONS:
        capacity = sorted(unit_curves[name]["LRU"])[FRACTIONS.index(fraction)]
        print(f"{name:8s} {capacity:>9d} {'unit':>7s} {'hit ratio %':>15s} "
              + " ".join(f"{100 * unit_curves[name][p][capacity]:18.1f}" for p in POLICIES))
    for fraction in FRACTIONS:
        for metric, index in (("hit ratio %", 0), ("byte hit ratio %", 1)):
            print(f"{name:8s} {f'{100 * fraction:.0f}% KiB':>9s} {'varied':>7s} {metric:>15s} "
                  + " ".join(f"{100 * results[name, fraction, p][index]:18.1f}" for p in POLICIES))
gaps = [100 * (unit_curves[name]["Belady"][c] - max(unit_curves[name][p][c] for p in POLICIES[:3]))
        for name in traces for c in unit_curves[name]["LRU"]]
print(f"unit sizes: Belady's MIN is {min(gaps):.1f} to {max(gaps):.1f} points above the best of the three online policies")

# %% [markdown]
# What the table shows (the traces are seeded, so you see the same numbers):
#
# - **Unit-size blocks: frozen and rescored coincide**, to the last hit. With equal sizes the size term is the same for
#   every entry, and among entries with equal hits rescoring ranks them by recency, which decays in the same order as
#   last_used: the very tie-break the frozen scores use. At small caches both beat LRU (chat: 29.0 and 46.4% against
#   20.8 and 40.6% at 16 and 33 blocks; Zipf: 40.6 against 33.8% at 19 blocks, a tie at 38), because the hits term protects blocks that were
#   already reused (the shared system prompts, popular documents) from a burst of one-off blocks; on chat, LRU catches
#   up and passes them once the cache holds the live sessions (55.1% against 51.4% at 66 blocks). Belady's MIN stays
#   above all three by the margin the last line prints, about 9 to 19 points.
# - **Varied sizes: now they differ.** With frozen scores, among equal hits the size term decides (recency is a
#   constant), so the biggest blocks go first and many small blocks stay: the frozen scheduler has the best hit ratio
#   of the online policies on Zipf at every size and on chat from 20% up. Rescoring lets an old small block lose to a
#   recent big one, which costs hit ratio there; on the small chat caches (5% and 10%) it wins on both counts, and by
#   far on the byte hit ratio (33.9 against 28.6%, 54.0 against 40.9%). Which ratio matters depends on what a miss
#   costs: prefill time grows with the tokens of a block, so the byte hit ratio is the closer measure of time saved.
# - Belady's rule, which knows the future, stays above every online policy on both ratios: room that better prediction
#   could still win.
#
# 表中可以看到（访问轨迹使用了固定种子，你看到的数字相同）：
#
# - **单位大小的块：冻结评分与重新评分完全重合**，一次命中都不差。大小相同时，大小项对所有条目都一样；在 hits 相同的条目之间，重新评分按新近度排序，而新近度的衰减顺序与 last_used 的顺序相同，这正是冻结评分使用的打破平局规则。缓存小时两者都优于 LRU（对话在 16 与 33 个块时为 29.0% 与 46.4%，LRU 为 20.8% 与 40.6%；Zipf 在 19 个块时为 40.6%，LRU 为 33.8%，38 个块时持平），因为 hits 项保护已被复用的块（共享系统提示、热门文档），不让一阵只用一次的块把它们挤出去；在对话工作负载上，缓存能容纳活跃会话后 LRU 追上并超过了它们（66 个块时 55.1% 对 51.4%）。Belady 的 MIN 始终高于三者，高出的幅度见最后一行输出，约 9 到 19 个百分点。
# - **大小不同的块：两者出现差别。** 冻结评分时，在 hits 相同的条目之间由大小项决定（新近度是常数），所以最大的块最先被驱逐，许多小块留了下来：冻结调度器在 Zipf 上的每个缓存大小、以及对话从 20% 起，命中率都是在线策略中最高的。重新评分让旧的小块可能输给新近的大块，在这些地方损失了命中率；在对话的小缓存上（5% 和 10%），它两项都赢，字节命中率更是大幅领先（33.9% 对 28.6%，54.0% 对 40.9%）。
#   哪个指标更重要取决于未命中的代价：预填充时间随块的 token 数增长，因此字节命中率更接近节省的时间。
# - 知道未来的 Belady 规则在两个指标上都高于所有在线策略：这是更好的预测仍可赢得的空间。

# %% [markdown]
# ## Experiment 3: heap vs tensor as the cache grows | 实验 3：缓存变大时堆与张量的对比
#
# Throughput (evictions per second) of a cache that is full of `n` one-byte entries, where every request is a miss
# that evicts exactly one entry. For frozen scores we time your heap simulator and your tensor scheduler; for
# rescored scores the heap has to rescore every entry in Python and rebuild itself before each choice
# (`RescoringSim` below, which makes the same decisions as `rescore=True`), while the tensor scheduler runs a few
# whole-tensor operations. We plot tensor throughput divided by heap throughput, and the cell prints each rate and
# ratio. The sizes stay small here (up to 10^4 on the CPU; 10^3 while the notebook is graded); `bench/bench_scheduler.py`
# goes to 10^6 live entries and reports the crossover. Wall-clock rates on a shared CPU are noisy: read the ratios
# for their order of magnitude. On a GPU each tensor operation costs a kernel launch (microseconds) whatever `n` is,
# so the tensor scheduler pays off only at large `n`: thousands to millions of entries.
#
# 一个装满 `n` 个 1 字节条目的缓存的吞吐量（每秒驱逐次数），其中每个请求都未命中并恰好驱逐一个条目。冻结评分时，我们计时你的堆模拟器和你的张量调度器；重新评分时，堆必须在每次选择前用 Python 为每个条目重新评分并重建自身（下面的 `RescoringSim`，它的决定与 `rescore=True` 相同），而张量调度器只需几个整张量运算。图中画出张量吞吐量除以堆吞吐量之比，单元还打印出每个速率和比值。这里规模较小（CPU 上最多 10^4；评分时最多 10^3）；`bench/bench_scheduler.py` 测到 10^6 个条目并报告交叉点。共享 CPU 上的墙钟速率有噪声：比值只看数量级。在 GPU 上，每个张量运算无论 `n` 多大都要一次内核启动（微秒级），因此张量调度器只在 `n` 很大（数千到数百万个条目）时才划算。

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


# The two rescored schedulers agree on the chat workload of experiment 2 (the frozen ones do too: see the property
# test in tests/).
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
    print(f"n={n:>6}: frozen heap {rates['frozen', n][0]:>9.0f}/s tensor {rates['frozen', n][1]:>8.0f}/s "
          f"(tensor/heap {rates['frozen', n][1] / rates['frozen', n][0]:.3f}) | "
          f"rescored heap {rates['rescored', n][0]:>8.0f}/s tensor {rates['rescored', n][1]:>8.0f}/s "
          f"(tensor/heap {rates['rescored', n][1] / rates['rescored', n][0]:.2f})")

fig, ax = plt.subplots(figsize=(7, 3.4))
for mode, mode_zh in (("frozen", "冻结"), ("rescored", "重新评分")):
    ax.plot(SIZES, [rates[mode, n][1] / rates[mode, n][0] for n in SIZES], marker="o",
            label=label(f"{mode} scores", f"{mode_zh}分数"))
ax.axhline(1.0, color="grey", lw=0.8, ls="--", label=label("equal throughput", "吞吐量相等"))
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_title(label(f"Tensor scheduler ({DEVICE.type}) vs heap simulator", f"张量调度器（{DEVICE.type}）对比堆模拟器"))
ax.set_xlabel(label("live entries n", "在缓存中的条目数 n"))
ax.set_ylabel(label("throughput ratio tensor / heap", "吞吐量之比 张量 / 堆"))
ax.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# Read the plot with the algorithms in mind. With frozen scores the heap needs $O(\log n)$ per eviction and the
# tensor scheduler $O(n)$ work (in a few vectorized operations) plus a fixed cost per operation, so the heap stays
# ahead at every size: the printed tensor/heap ratios are far below 1. The README's benchmark table
# (measured on 2026-11-30 on 2 cores of an AMD EPYC with one torch thread) gives tensor/heap 0.058 at $10^2$ down to
# 0.0008 at $10^6$ for frozen scores: no crossover. Do not move a cheap heap onto tensors for its own sake. With
# rescored scores the heap has to touch every entry in Python, $O(n)$ interpreted work, and the tensor scheduler
# overtakes it: in the same table tensor/heap is 0.42 at $10^2$, 4.4 at $10^3$ (the crossover), 24 at $10^4$, 56 at
# $10^5$ and 20 at $10^6$. So the gain is largest around $10^5$ entries, not ever-growing; your printed ratios, on your
# machine and at the sizes above, show the crossover between $10^2$ and $10^3$. The tensors buy you the policy the heap
# cannot afford, not speed for the policy it already does well.
#
# 结合算法来读这张图。冻结评分时，堆每次驱逐需要 $O(\log n)$，张量调度器需要 $O(n)$ 的工作（用几个向量化运算完成）外加每次运算的固定开销，因此在每个规模上堆都领先：打印出的“张量/堆”比值都远小于 1。README 的基准测试表（2026-11-30 在 AMD EPYC 的 2 个核上、单个 torch 线程测得）给出冻结评分时“张量/堆”从 $10^2$ 的 0.058 降到 $10^6$ 的 0.0008：没有交叉点。不要只为了用张量而把便宜的堆搬到张量上。重新评分时，堆必须在 Python 中访问每个条目，即 $O(n)$ 的解释执行工作，张量调度器于是反超：同一张表中“张量/堆”在 $10^2$ 为 0.42，$10^3$ 为 4.4（交叉点），$10^4$ 为 24，$10^5$ 为 56，$10^6$ 为 20。所以收益在约 $10^5$ 个条目时最大，而不是一直增长；你打印出的比值（在你的机器上、上面的规模下）显示交叉点在 $10^2$ 与 $10^3$ 之间。张量带给你的是堆负担不起的策略，而不是堆本来就做得好的策略的速度。
#
# ## Summary | 小结
#
# **Remember:** a score is only as fresh as the moment it was computed: the heap's lazy deletion keeps decisions
# correct for stale *items*, but only recomputing at eviction time, cheap with tensors, keeps the *scores* fresh.
#
# **一句话记住：** 分数只和它被计算的那一刻一样新：堆的惰性删除让决定在面对过期*元素*时仍然正确，但只有在驱逐时刻重新计算（用张量很便宜）才能让*分数*保持新鲜。
#
# ## Prerequisites and further reading | 前置与相关阅读
#
# - Before: [03. LRU and LFU](../03_lru_lfu/03_lru_lfu.ipynb) (victims as the minimum of a key, ties, Belady's MIN)
#   and Python's `heapq`. | 前置：[03. LRU 与 LFU](../03_lru_lfu/03_lru_lfu.ipynb)（受害者是某个键的最小值、打破平局、Belady 的 MIN）以及 Python 的 `heapq`。
# - Next: [06. Prefix cache for a real decoder](../06_prefix_cache/06_prefix_cache.ipynb), where eviction decides how
#   much prefill a real model skips. | 下一节：[06. 真实解码器的前缀缓存](../06_prefix_cache/06_prefix_cache.ipynb)，在那里驱逐决定一个真实模型能跳过多少预填充。
# - Further: GreedyDual-Size (scores that weigh size, and an aging term that keeps them fresh without rescoring), and
#   the `heapq` notes on marking removed entries. | 延伸阅读：GreedyDual-Size（按大小加权的分数，以及一个无需重新评分就能让分数保持新鲜的老化项），以及 `heapq` 文档中关于标记已删除条目的说明。
#
# ## References | 参考文献
#
# - The seed design of this notebook: the "KV Cache Scheduling" chapter of Datawhale's llm-algo-leetcode
#   (https://github.com/datawhalechina/llm-algo-leetcode; text CC BY 4.0, code Apache-2.0): the `CacheEntry` /
#   `KVCacheSchedulerSim` design, its score and its known answer. The code and prose here are written anew.
#   本 notebook 的种子设计来自 Datawhale llm-algo-leetcode 的 "KV Cache Scheduling" 一章（文字 CC BY 4.0，代码 Apache-2.0）；这里的代码和文字均为重新编写。
# - The other seed design of the course: the "KV Eviction formula-to-code" walkthrough (LLM-REVIEW).
# - L. A. Belady, "A study of replacement algorithms for a virtual-storage computer", *IBM Systems Journal* 5(2), 1966.
# - W. Kwon et al., "Efficient Memory Management for Large Language Model Serving with PagedAttention", SOSP 2023 (vLLM).
# - L. Zheng et al., "SGLang: Efficient Execution of Structured Language Model Programs", NeurIPS 2024 (RadixAttention).
# - N. Megiddo, D. S. Modha, "ARC: A Self-Tuning, Low Overhead Replacement Cache", FAST 2003 (recency and frequency in one policy).
# - P. Cao, S. Irani, "Cost-Aware WWW Proxy Caching Algorithms", USITS 1997 (GreedyDual-Size: scores that weigh size, and aging them).
# - Python documentation, `heapq`: "Priority Queue Implementation Notes" (marking removed entries instead of deleting them).
