# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: nbgrader,given,tags,-all
#     formats: source/04_fair_quota//ipynb,authoring//py:percent
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
# # 04. Fair quota | 公平配额
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/kvcache-course/kv-cache-eviction/blob/main/release/04_fair_quota/04_fair_quota.ipynb)
# [![ModelScope](https://img.shields.io/badge/ModelScope-Open%20from%20URL-624aff)](https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/04_fair_quota/04_fair_quota.ipynb)
# [![GitHub](https://img.shields.io/badge/GitHub-release%2F04_fair_quota-black)](https://github.com/kvcache-course/kv-cache-eviction/blob/main/release/04_fair_quota/04_fair_quota.ipynb)
#
# **Difficulty:** ★★☆ intermediate · **Time:** about 75 minutes · **Points:** 22 · **GPU:** task 4.3 runs on CUDA when a GPU is present; everything also runs on the CPU.
#
# **难度：** ★★☆ 中级 · **用时：** 约 75 分钟 · **总分：** 22 · **GPU：** 任务 4.3 在有 GPU 时于 CUDA 上运行；所有内容也都能在 CPU 上运行。
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
# 1. explain the noisy-neighbour problem: one tenant's flood of one-off prompts evicts another tenant's reusable cache;
# 2. implement fair-quota eviction: pick the tenant most over its weighted quota, then evict LRU inside it;
# 3. measure fairness with Jain's index;
# 4. make the same decision on tensors, with per-tenant sums by `index_add_`/`bincount` and no Python loop.
#
# 完成本 notebook 后，你能够：
# 1. 解释"吵闹邻居"问题：一个租户大量的一次性提示词会把另一个租户可复用的缓存挤出去；
# 2. 实现公平配额驱逐：先选出超出加权配额最多的租户，再在该租户内部按 LRU 驱逐；
# 3. 用 Jain 公平指数度量公平性；
# 4. 在张量上做出同样的决定：用 `index_add_`/`bincount` 做按租户求和，不写 Python 循环。
#
# ## The formulas | 公式
#
# A cache of $B$ blocks is shared by tenants $t$ with weights $w_t \ge 0$. A sequence belongs to the tenant
# named before the first `"::"` of its id (`"alice::chat-7"` belongs to `alice`; an id without `"::"`
# belongs to `default`).
#
# $$\text{quota}_t = \frac{w_t}{\sum_j w_j}\, B, \qquad u_t = \sum_{s \in t} \text{num\_blocks}(s), \qquad \text{overuse}_t = u_t - \text{quota}_t$$
#
# **Usage is counted in blocks, not in sequences or requests.** Memory pressure is blocks: a 30-block
# prompt takes thirty times the memory of a 1-block one. A quota in requests would let a tenant with few,
# very long prompts take the whole cache while it looks "under quota".
#
# $$\text{victim tenant} = \arg\max_{t:\ \text{overuse}_t > 0} \text{overuse}_t \quad(\text{ties: the larger name}),
# \qquad \text{victim} = \arg\min_{s \in \text{victim tenant}} \big(t_\text{last}(s),\ \text{seq\_id}\big)$$
#
# Fairness comes first (which tenant), recency second (which of its sequences). When nobody is over quota,
# the policy falls back to **global LRU** over all sequences. Protected sequences (those of running
# requests) are never chosen, but they still count in their tenant's usage; an over-quota tenant whose
# sequences are all protected is passed over for the next one.
#
# **Jain's fairness index** of $n$ non-negative numbers $x_1, \dots, x_n$ (for example, what each tenant
# gets relative to what it is entitled to):
#
# $$J = \frac{\left(\sum_i x_i\right)^2}{n \sum_i x_i^2} \in \left[\tfrac{1}{n},\ 1\right]$$
#
# $J = 1$ when all $x_i$ are equal, $J = 1/n$ when one tenant gets everything.
#
# 容量为 $B$ 块的缓存由多个租户 $t$ 共享，权重为 $w_t \ge 0$。序列属于其 id 中第一个 `"::"` 之前的名字所指的租户
# （`"alice::chat-7"` 属于 `alice`；不含 `"::"` 的 id 属于 `default`）。配额、占用和超额量如上式。
#
# **占用按块计，而不是按序列或请求计。** 内存压力来自块：一个 30 块的提示词占用的内存是 1 块提示词的三十倍。
# 如果按请求数计配额，一个提示词很少但很长的租户可能占满整个缓存，却看起来"没有超额"。
#
# 先看公平（选哪个租户），再看新近度（选该租户的哪个序列）：受害租户是超额量大于 0 的租户中超额最多的一个（平局时取名字较大者），
# 受害者是该租户内 $(t_\text{last}, \text{seq\_id})$ 最小的序列。没有租户超额时，退回到对全部序列的**全局 LRU**。
# 受保护的序列（正在运行的请求）永远不会被选中，但仍计入其租户的占用；若某个超额租户的序列全部受保护，则跳过它，看下一个超额租户。
#
# **Jain 公平指数**衡量 $n$ 个非负数（例如每个租户得到的与其应得的之比）有多均衡：所有 $x_i$ 相等时 $J = 1$，
# 一个租户独占一切时 $J = 1/n$。

# %% [markdown]
# ## Given: the metadata and the policy interface | 已给出：元数据与策略接口
#
# The three cells below hold the reference solutions of what notebooks 02 and 03 built, `KVBlock` and
# `SequenceKVCache` (a sequence's block table and counters; `num_blocks()` is its usage) and the base class
# `EvictionPolicy` (with `candidates`), and a helper `make_sequence` that the tests and experiments use.
# They are read-only: run them, do not change them.
#
# 下面三个单元给出 notebook 02 和 03 所写内容的参考解答：`KVBlock` 与 `SequenceKVCache`（序列的块表与计数器；
# `num_blocks()` 即其占用）、基类 `EvictionPolicy`（含 `candidates`），以及测试和实验使用的辅助函数 `make_sequence`。
# 它们是只读的：运行即可，不要修改。

# %% nbgrader={"grade": false, "grade_id": "given_kv_metadata", "locked": true, "schema_version": 3, "solution": false, "task": false} given=["02_paged_kv_cache/task2_1_KVBlock", "02_paged_kv_cache/task2_3_SequenceKVCache"]
# Given (read-only): the reference solutions of tasks 2.1 KVBlock, 2.3 SequenceKVCache (notebook 02).
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
        return self.filled >= self.capacity

    @property
    def free_slots(self) -> int:
        return self.capacity - self.filled


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
        return len(self.block_table)


# %% nbgrader={"grade": false, "grade_id": "helper_make_sequence", "locked": true, "schema_version": 3, "solution": false, "task": false}
# A helper for the tests and experiments of this notebook.
def make_sequence(seq_id, num_blocks, last_access_step, use_count=1, block_size=16):
    """Return a SequenceKVCache holding ``num_blocks`` full blocks (for tests and experiments)."""
    blocks = [KVBlock(i, block_size, block_size, 1) for i in range(num_blocks)]
    return SequenceKVCache(seq_id, blocks, num_blocks * block_size, last_access_step, use_count)


# %% nbgrader={"grade": false, "grade_id": "given_eviction_policy", "locked": true, "schema_version": 3, "solution": false, "task": false} given=["03_lru_lfu/task3_1_EvictionPolicy"]
# Given (read-only): the reference solutions of tasks 3.1 EvictionPolicy (notebook 03).
# Run this cell; do not change it (grading puts it back as it is here).
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
        return sorted(seq_id for seq_id in sequences if seq_id not in protected)

    def select_victim(self, sequences, protected=frozenset()):
        """Return the seq_id to evict, or None when every sequence is protected (abstract)."""
        raise NotImplementedError(f"{type(self).__name__} must implement select_victim")


# %% [markdown] nbgrader={"grade": false, "grade_id": "task4_1_FairPolicy_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 4.1: FairPolicy (10 points)
#
# Write the class `FairPolicy(tenant_weights=None, total_blocks=512)`, an `EvictionPolicy`, with:
#
# - **`__init__`**: keep the weights (`None` means no explicit weights) and `total_blocks` (the cache size $B$).
#   Raise `ValueError` with a clear message for a negative, infinite or NaN weight, or for `total_blocks < 1`.
# - **`_tenant_of(seq_id)`**, a `@staticmethod`: the text before the first `"::"`, or `"default"` when there
#   is none (`"a::b::c"` → `"a"`, `"plain"` → `"default"`).
# - **`_quotas(sequences)`**: a dict from tenant to its quota (a float). The tenants are the keys of
#   `tenant_weights` **and** the tenants present in `sequences`; a tenant without an explicit weight has
#   weight 1.0; $\text{quota}_t = w_t / \sum_j w_j \cdot B$. If all weights are 0, every quota is 0.0.
# - **`select_victim(sequences, protected=frozenset())`**: usage $u_t$ = the sum of `num_blocks()` over the
#   tenant's sequences (protected ones included). Among tenants with $u_t - \text{quota}_t > 0$, take the
#   largest overuse (ties: the larger tenant name) that has at least one sequence not in `protected`, and
#   return its least recently used unprotected sequence (smallest `(last_access_step, seq_id)`). When no
#   over-quota tenant has an unprotected sequence, return the global LRU unprotected sequence. `None` when
#   every sequence is protected or `sequences` is empty. Change nothing.
#
# Hints: `str.partition`; `sorted(..., key=lambda t: (overuse[t], t), reverse=True)` lists tenants in the
# order to try them; `min(ids, key=lambda s: (sequences[s].last_access_step, s))` is LRU.
#
# ## 任务 4.1：FairPolicy（10 分）
#
# 编写类 `FairPolicy(tenant_weights=None, total_blocks=512)`，它是一个 `EvictionPolicy`，包含：
#
# - **`__init__`**：保存权重（`None` 表示没有显式权重）和 `total_blocks`（缓存大小 $B$）。权重为负数、无穷大或 NaN，
#   或 `total_blocks < 1` 时，抛出带有清晰消息的 `ValueError`。
# - **`_tenant_of(seq_id)`**，一个 `@staticmethod`：返回第一个 `"::"` 之前的文本；没有 `"::"` 时返回 `"default"`
#   （`"a::b::c"` → `"a"`，`"plain"` → `"default"`）。
# - **`_quotas(sequences)`**：从租户到配额（float）的字典。租户集合是 `tenant_weights` 的键**与** `sequences` 中出现的租户之并；
#   没有显式权重的租户权重为 1.0；$\text{quota}_t = w_t / \sum_j w_j \cdot B$。若所有权重都为 0，则每个配额都是 0.0。
# - **`select_victim(sequences, protected=frozenset())`**：占用 $u_t$ 为该租户所有序列（包括受保护的）`num_blocks()` 之和。
#   在 $u_t - \text{quota}_t > 0$ 的租户中，按超额量从大到小（平局时名字较大者优先）找到第一个拥有不在 `protected` 中的序列的租户，
#   返回其最久未使用的未受保护序列（`(last_access_step, seq_id)` 最小）。若没有这样的超额租户，返回全局 LRU 的未受保护序列。
#   所有序列都受保护或 `sequences` 为空时返回 `None`。不要修改任何东西。
#
# 提示：`str.partition`；`sorted(..., key=lambda t: (overuse[t], t), reverse=True)` 给出尝试租户的顺序；
# `min(ids, key=lambda s: (sequences[s].last_access_step, s))` 就是 LRU。

# %% nbgrader={"grade": false, "grade_id": "task4_1_FairPolicy", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math


class FairPolicy(EvictionPolicy):
    """Fair-quota eviction: evict from the tenant most over its weighted quota, LRU inside it.

    Args:
        tenant_weights: dict from tenant name (str) to weight (int or float, finite, >= 0), or None.
            Tenants present in the cache without a weight here have weight 1.0.
        total_blocks: the cache size B in blocks (int >= 1).

    Raises:
        ValueError: at construction, for a negative, infinite or NaN weight or total_blocks < 1.

    Methods:
        _tenant_of(seq_id) -> str (static): text before the first "::", else "default".
        _quotas(sequences) -> dict[str, float]: w_t / sum(w) * total_blocks for every tenant of
            tenant_weights and of sequences; all 0.0 when every weight is 0.
        select_victim(sequences, protected=frozenset()) -> str | None: see the task.
    """

    def __init__(self, tenant_weights=None, total_blocks=512):
        ### BEGIN SOLUTION
        weights = dict(tenant_weights or {})
        for tenant, weight in weights.items():
            if not math.isfinite(weight) or weight < 0:
                raise ValueError(f"weight of tenant {tenant!r} must be finite and >= 0, got {weight}")
        if total_blocks < 1:
            raise ValueError(f"total_blocks must be >= 1, got {total_blocks}")
        self.tenant_weights = weights
        self.total_blocks = total_blocks
        ### END SOLUTION

    @staticmethod
    def _tenant_of(seq_id):
        ### BEGIN SOLUTION
        tenant, separator, _ = seq_id.partition("::")
        return tenant if separator else "default"
        ### END SOLUTION

    def _quotas(self, sequences):
        ### BEGIN SOLUTION
        weights = dict.fromkeys((self._tenant_of(seq_id) for seq_id in sequences), 1.0)
        weights.update(self.tenant_weights)
        total_weight = sum(weights.values())
        if total_weight == 0:
            return {tenant: 0.0 for tenant in weights}
        return {tenant: weight / total_weight * self.total_blocks for tenant, weight in weights.items()}
        ### END SOLUTION

    def select_victim(self, sequences, protected=frozenset()):
        ### BEGIN SOLUTION
        quotas = self._quotas(sequences)
        usage = dict.fromkeys(quotas, 0)
        evictable = {tenant: [] for tenant in quotas}
        for seq_id, seq in sequences.items():
            tenant = self._tenant_of(seq_id)
            usage[tenant] += seq.num_blocks()
            if seq_id not in protected:
                evictable[tenant].append(seq_id)

        def lru(ids):
            return min(ids, key=lambda seq_id: (sequences[seq_id].last_access_step, seq_id), default=None)

        overuse = {tenant: usage[tenant] - quotas[tenant] for tenant in quotas}
        over = [tenant for tenant in quotas if overuse[tenant] > 0]
        for tenant in sorted(over, key=lambda t: (overuse[t], t), reverse=True):
            if evictable[tenant]:
                return lru(evictable[tenant])
        return lru([seq_id for ids in evictable.values() for seq_id in ids])
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task4_1_FairPolicy", "locked": true, "points": 10, "schema_version": 3, "solution": false, "task": false}
"""Check that FairPolicy splits the cache by weight, counts blocks, and evicts LRU inside the most over-quota tenant."""


def _check_task4_1_FairPolicy():
    from course.checks import assert_plain_equal, assert_raises, check_type


    def cache_of(*seqs):
        return {seq.seq_id: seq for seq in seqs}


    assert issubclass(FairPolicy, EvictionPolicy), "FairPolicy must be a subclass of EvictionPolicy"
    assert_plain_equal(FairPolicy._tenant_of("alice::chat-7"), "alice", "FairPolicy._tenant_of('alice::chat-7')")
    assert_plain_equal(FairPolicy._tenant_of("a::b::c"), "a", "FairPolicy._tenant_of('a::b::c')")
    assert_plain_equal(FairPolicy._tenant_of("plain"), "default", "FairPolicy._tenant_of('plain')")

    cache = cache_of(make_sequence("a::1", 3, 5), make_sequence("a::2", 3, 1), make_sequence("b::1", 2, 0))
    assert_plain_equal(FairPolicy({"a": 2, "idle": 1}, 64)._quotas(cache), {"a": 32.0, "idle": 16.0, "b": 16.0},
                       "FairPolicy({'a': 2, 'idle': 1}, 64)._quotas(a::1, a::2, b::1) (b has weight 1.0)")
    policy = FairPolicy({"a": 1.0, "b": 1.0}, total_blocks=8)
    # usage a = 6 blocks > quota 4, b = 2: evict a's least recently used sequence (not b::1, the global LRU).
    assert_plain_equal(policy.select_victim(cache), "a::2", "FairPolicy({'a': 1, 'b': 1}, 8).select_victim(a: 3+3 blocks, b: 2)")
    assert_plain_equal(policy.select_victim(cache, frozenset({"a::2"})), "a::1",
                       "the same call with protected={'a::2'}")
    assert_plain_equal(policy.select_victim(cache, frozenset({"a::1", "a::2"})), "b::1",
                       "the same call with a's sequences all protected (a is passed over; global LRU)")
    assert_plain_equal(FairPolicy(None, 100).select_victim(cache), "b::1",
                       "FairPolicy(None, 100).select_victim(...) (nobody over quota: global LRU)")
    blocks = cache_of(make_sequence("a::big", 10, 9), make_sequence("b::1", 1, 1), make_sequence("b::2", 1, 2),
                      make_sequence("b::3", 1, 3))
    assert_plain_equal(FairPolicy(None, 16).select_victim(blocks), "a::big",
                       "FairPolicy(None, 16).select_victim(a: one 10-block sequence, b: three 1-block ones) (usage is in blocks)")
    tie = cache_of(make_sequence("a::1", 4, 0), make_sequence("b::1", 4, 3))
    assert_plain_equal(FairPolicy(None, 4).select_victim(tie), "b::1",
                       "FairPolicy(None, 4).select_victim(a and b both 2 blocks over) (a tie goes to the larger tenant name)")
    check_type(policy.select_victim({}), type(None), "select_victim({})")
    check_type(policy.select_victim(cache, frozenset(cache)), type(None), "select_victim with every sequence protected")
    assert_raises(ValueError, "FairPolicy({'a': -1.0})", FairPolicy, {"a": -1.0})
    assert_raises(ValueError, "FairPolicy({'a': float('nan')})", FairPolicy, {"a": float("nan")})
    assert_raises(ValueError, "FairPolicy(None, 0)", FairPolicy, None, 0)

    ### BEGIN HIDDEN TESTS
    import random as _random
    from fractions import Fraction as _Fraction


    def _oracle_tenant(seq_id):
        return seq_id.split("::")[0] if "::" in seq_id else "default"


    def _oracle_victim(weights, total, sequences, protected):
        tenants = set(weights) | {_oracle_tenant(s) for s in sequences}
        w = {t: _Fraction(weights.get(t, 1.0)) for t in tenants}
        total_w = sum(w.values())
        quota = {t: (w[t] / total_w * total if total_w else _Fraction(0)) for t in tenants}
        usage = {t: 0 for t in tenants}
        for s, seq in sequences.items():
            usage[_oracle_tenant(s)] += len(seq.block_table)
        free = sorted((seq.last_access_step, s) for s, seq in sequences.items() if s not in protected)
        best, best_over = None, None
        for t in sorted(tenants):
            over = usage[t] - quota[t]
            if over > 0 and any(_oracle_tenant(s) == t for _, s in free) and (best is None or over >= best_over):
                best, best_over = t, over
        for _, s in free:
            if best is None or _oracle_tenant(s) == best:
                return s
        return None


    def _dyadic_weights(rng, present, extra):
        # Explicit weights chosen so that all weights sum to a power of two: every quota is exact.
        explicit = [t for t in present if rng.random() < 0.5] + extra
        implicit = [t for t in present if t not in explicit]
        if not explicit:
            explicit = ["zz-idle"]
        power = 1
        while power < len(implicit) + 1:
            power *= 2
        power *= rng.choice([1, 2, 4])
        halves = 2 * (power - len(implicit))
        cuts = sorted(rng.randint(0, halves) for _ in range(len(explicit) - 1))
        parts = [b - a for a, b in zip([0] + cuts, cuts + [halves])]
        return {t: p / 2 for t, p in zip(explicit, parts)}


    def _random_cache(rng, names):
        cache = {}
        for i in range(rng.randint(0, 14)):
            kind = rng.random()
            if kind < 0.15:
                seq_id = f"req{i:02d}"
            elif kind < 0.3:
                seq_id = f"{rng.choice(names)}::{i:02d}::turn{rng.randint(0, 3)}"
            else:
                seq_id = f"{rng.choice(names)}::{i:02d}"
            cache[seq_id] = make_sequence(seq_id, rng.randint(0, 7), rng.randint(0, 6), rng.randint(1, 4))
        return cache


    _rng = _random.Random(4101)
    for _case in range(600):
        _names = _rng.sample(["ann", "bob", "cat", "dan", "eve"], _rng.randint(1, 4))
        _cache = _random_cache(_rng, _names)
        _present = sorted({_oracle_tenant(s) for s in _cache})
        if _case % 5 == 4:
            _weights = {t: _rng.uniform(0.05, 4.0) for t in _rng.sample(_present + ["zz-idle"], _rng.randint(0, len(_present)))}
        else:
            _weights = _dyadic_weights(_rng, _present, ["idle"] if _rng.random() < 0.3 else [])
        _total = _rng.randint(1, 60)
        _ids = sorted(_cache)
        _protected = frozenset(s for s in _ids if _rng.random() < 0.25)
        _snapshot = {s: (q.last_access_step, q.use_count, len(q.block_table)) for s, q in _cache.items()}
        _policy = FairPolicy(dict(_weights), _total)
        _got = _policy.select_victim(_cache, _protected)
        _want = _oracle_victim(_weights, _total, _cache, _protected)
        _call = f"FairPolicy(...).select_victim on random case {_case}"
        if _want is None:
            check_type(_got, type(None), _call)
        else:
            assert_plain_equal(_got, _want, _call, reveal=False)
        assert {s: (q.last_access_step, q.use_count, len(q.block_table)) for s, q in _cache.items()} == _snapshot, \
            f"{_call} changed the sequences"
        if _case % 5 != 4:
            _tenants = set(_weights) | set(_present)
            _sum = sum(_weights.get(t, 1.0) for t in _tenants)
            _expected = {t: (_weights.get(t, 1.0) / _sum * _total if _sum else 0.0) for t in _tenants}
            assert_plain_equal(_policy._quotas(_cache), _expected, f"FairPolicy(...)._quotas on random case {_case}", reveal=False)

    for _seq_id, _tenant in (("x::y", "x"), ("::y", ""), ("x::", "x"), ("x:y", "default"), ("", "default"),
                             ("default::z", "default"), ("t1::t2::t3", "t1")):
        assert_plain_equal(FairPolicy._tenant_of(_seq_id), _tenant, f"FairPolicy._tenant_of({_seq_id!r})")
    _zero = cache_of(make_sequence("a::1", 2, 4), make_sequence("a::2", 1, 3), make_sequence("b::1", 5, 9))
    assert_plain_equal(FairPolicy({"a": 0, "b": 0}, 8)._quotas(_zero), {"a": 0.0, "b": 0.0},
                       "FairPolicy({'a': 0, 'b': 0}, 8)._quotas(...) (all weights 0)")
    assert_plain_equal(FairPolicy({"a": 0, "b": 0}, 8).select_victim(_zero), "b::1",
                       "FairPolicy({'a': 0, 'b': 0}, 8).select_victim(...) (all weights 0)")
    assert_plain_equal(FairPolicy({"a": 0}, 8).select_victim(_zero), "a::2",
                       "FairPolicy({'a': 0}, 8).select_victim(...) (a weight-0 tenant is over quota with any block)")
    assert_plain_equal(FairPolicy({"a": 3, "b": 1}, 8).select_victim(_zero), "b::1",
                       "FairPolicy({'a': 3, 'b': 1}, 8).select_victim(...)")
    _exact = cache_of(make_sequence("a::1", 4, 5), make_sequence("b::1", 3, 0))
    assert_plain_equal(FairPolicy({"a": 1, "b": 1}, 8).select_victim(_exact), "b::1",
                       "FairPolicy({'a': 1, 'b': 1}, 8).select_victim(...) (exactly at quota is not over quota)", reveal=False)
    _over = cache_of(make_sequence("a::1", 4, 0), make_sequence("b::1", 5, 3), make_sequence("b::2", 1, 7))
    assert_plain_equal(FairPolicy({"a": 1, "b": 1}, 10).select_victim(_over), "b::1",
                       "FairPolicy({'a': 1, 'b': 1}, 10).select_victim(...) (b over quota, a under)", reveal=False)
    _pass = cache_of(make_sequence("a::1", 6, 5), make_sequence("b::1", 3, 9), make_sequence("b::2", 2, 8),
                     make_sequence("c::1", 1, 0))
    assert_plain_equal(FairPolicy(None, 6).select_victim(_pass, frozenset({"a::1"})), "b::2",
                       "FairPolicy(None, 6).select_victim(..., protected={'a::1'}) (the next over-quota tenant)", reveal=False)
    for _bad in ({"a": -0.5}, {"a": float("inf"), "b": 1.0}, {"a": 1.0, "b": float("-inf")}, {"a": float("nan")}):
        assert_raises(ValueError, f"FairPolicy({_bad}, 16)", FairPolicy, _bad, 16)
    for _bad_total in (0, -3):
        assert_raises(ValueError, f"FairPolicy(None, {_bad_total})", FairPolicy, None, _bad_total)
    check_type(FairPolicy()._quotas({}), dict, "FairPolicy()._quotas({})")
    assert_plain_equal(FairPolicy()._quotas({}), {}, "FairPolicy()._quotas({})")
    assert_plain_equal(FairPolicy({"q": 1})._quotas({}), {"q": 512.0}, "FairPolicy({'q': 1})._quotas({}) (default total_blocks)")
    ### END HIDDEN TESTS


_check_task4_1_FairPolicy()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task4_2_jain_index_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 4.2: jain_index (4 points)
#
# $$J = \frac{\left(\sum_i x_i\right)^2}{n \sum_i x_i^2}$$
#
# Write `jain_index(xs)`: Jain's fairness index of a list of non-negative numbers, as a float. Return 1.0
# for an empty list and for a list of zeros (nobody gets anything, so nobody gets less than another).
# Do not change `xs`.
#
# ## 任务 4.2：jain_index（4 分）
#
# 编写 `jain_index(xs)`：以 float 返回一组非负数的 Jain 公平指数。空列表和全零列表返回 1.0（谁都没得到，
# 因此没有人比别人得到的少）。不要修改 `xs`。

# %% nbgrader={"grade": false, "grade_id": "task4_2_jain_index", "locked": false, "schema_version": 3, "solution": true, "task": false}
def jain_index(xs):
    """Return Jain's fairness index (sum x)^2 / (n * sum x^2) of a list of numbers, as a float.

    Args:
        xs: list of non-negative ints or floats. Not changed.

    Returns:
        A float in [1/n, 1]; 1.0 for an empty list or a list of zeros.
    """
    ### BEGIN SOLUTION
    values = [float(x) for x in xs]
    square_sum = sum(x * x for x in values)
    if square_sum == 0:
        return 1.0
    return sum(values) ** 2 / (len(values) * square_sum)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task4_2_jain_index", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
"""Check that jain_index returns (sum x)^2 / (n sum x^2) as a float, and 1.0 for nothing to share."""


def _check_task4_2_jain_index():
    from course.checks import assert_plain_equal

    assert_plain_equal(jain_index([1, 1, 1]), 1.0, "jain_index([1, 1, 1])")
    assert_plain_equal(jain_index([1.0, 0.0]), 0.5, "jain_index([1.0, 0.0])")
    assert_plain_equal(jain_index([3, 1]), 0.8, "jain_index([3, 1])")
    assert_plain_equal(jain_index([]), 1.0, "jain_index([])")
    assert_plain_equal(jain_index([0, 0, 0]), 1.0, "jain_index([0, 0, 0])")

    ### BEGIN HIDDEN TESTS
    import random as _random
    from fractions import Fraction as _Fraction

    _rng = _random.Random(4202)
    for _case in range(400):
        _n = _rng.randint(1, 12)
        if _case % 3 == 0:
            _xs = [_rng.randint(0, 9) for _ in range(_n)]
        elif _case % 3 == 1:
            _xs = [_rng.uniform(0, 1) for _ in range(_n)]
        else:
            _xs = [_rng.choice([0.0, 0.25, 1.0, 1e-3, 123.5]) for _ in range(_n)]
        _copy = list(_xs)
        _sq = sum(_Fraction(x) ** 2 for x in _xs)
        _expected = 1.0 if _sq == 0 else float(sum(_Fraction(x) for x in _xs) ** 2 / (len(_xs) * _sq))
        assert_plain_equal(jain_index(_xs), _expected, f"jain_index on random case {_case}", rel_tol=1e-9, reveal=False)
        assert _xs == _copy, f"jain_index changed its input on random case {_case}"
    assert_plain_equal(jain_index([5]), 1.0, "jain_index([5])")
    assert_plain_equal(jain_index([0.0]), 1.0, "jain_index([0.0])")
    assert_plain_equal(jain_index([7, 0, 0, 0]), 0.25, "jain_index([7, 0, 0, 0])")
    assert_plain_equal(jain_index([2, 2]), 1.0, "jain_index([2, 2])")
    assert_plain_equal(jain_index((1.0, 3.0)), 0.8, "jain_index((1.0, 3.0))")
    ### END HIDDEN TESTS


_check_task4_2_jain_index()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task4_3_fair_victim_t_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 4.3: fair_victim_t (8 points)
#
# The same decision as `FairPolicy.select_victim`, on columns of metadata. Tenants are numbered in sorted
# name order and sequences sit in sorted-id order, so "the larger tenant name" becomes **the larger tenant
# index** and "the smaller seq_id" becomes **the smaller sequence index**.
#
# Write `fair_victim_t(tenant, num_blocks, last_access_step, weights, total_blocks, evictable)`:
#
# - `tenant`, `num_blocks`, `last_access_step`: int64 tensors of shape `[n]` (sequence $i$ belongs to tenant
#   `tenant[i]`); `evictable`: bool `[n]` (False for protected sequences); `weights`: `[T]`, any real dtype,
#   one weight per tenant (missing weights already filled with 1.0); `total_blocks`: an int.
# - Usage per tenant with `torch.bincount(..., weights=...)` or `Tensor.index_add_` (no Python loop);
#   quotas in float64 as $w_t / \sum_j w_j \cdot B$ (all 0.0 when the weights sum to 0).
# - Return the index (a Python `int`) of the victim, with every rule of Task 4.1: largest positive overuse
#   among tenants that have an evictable sequence, ties to the larger tenant index; LRU inside it, ties to
#   the smaller index; global LRU otherwise; −1 when nothing is evictable. Any device; no Python loop over
#   sequences or tenants.
#
# Hints: `torch.where(mask, values, other)`, `.max()`, `torch.nonzero(mask)` (its last row is the largest
# index); `int(...)` turns a one-element tensor into a Python int.
#
# ## 任务 4.3：fair_victim_t（8 分）
#
# 在元数据列上做出与 `FairPolicy.select_victim` 相同的决定。租户按名字排序编号，序列按 id 排序排列，
# 因此"名字较大的租户"变为**下标较大的租户**，"较小的 seq_id"变为**较小的序列下标**。
#
# 编写 `fair_victim_t(tenant, num_blocks, last_access_step, weights, total_blocks, evictable)`：
#
# - `tenant`、`num_blocks`、`last_access_step`：形状 `[n]` 的 int64 张量（序列 $i$ 属于租户 `tenant[i]`）；`evictable`：
#   bool `[n]`（受保护的序列为 False）；`weights`：`[T]`，任意实数 dtype，每个租户一个权重（缺失的权重已填为 1.0）；`total_blocks`：int。
# - 用 `torch.bincount(..., weights=...)` 或 `Tensor.index_add_` 计算每个租户的占用（不写 Python 循环）；
#   以 float64 计算配额 $w_t / \sum_j w_j \cdot B$（权重之和为 0 时全部为 0.0）。
# - 以 Python `int` 返回受害者的下标，遵循任务 4.1 的全部规则：在拥有可驱逐序列的租户中取正超额量最大的，平局取下标较大的租户；
#   在该租户内按 LRU 选择，平局取较小下标；否则全局 LRU；没有可驱逐序列时返回 −1。支持任意设备；不写遍历序列或租户的 Python 循环。
#
# 提示：`torch.where(mask, values, other)`、`.max()`、`torch.nonzero(mask)`（其最后一行就是最大下标）；`int(...)` 把单元素张量变成 Python int。

# %% nbgrader={"grade": false, "grade_id": "task4_3_fair_victim_t", "locked": false, "schema_version": 3, "solution": true, "task": false}
def fair_victim_t(tenant, num_blocks, last_access_step, weights, total_blocks, evictable):
    """Return the index of the fair-quota victim (as FairPolicy.select_victim), or -1.

    Args:
        tenant: int64 tensor [n], the tenant index (into ``weights``) of each sequence.
        num_blocks: int64 tensor [n], blocks held by each sequence.
        last_access_step: int64 tensor [n], logical time of each sequence's last access.
        weights: real tensor [T] (any dtype), one weight per tenant in sorted-name order.
        total_blocks: int, the cache size in blocks.
        evictable: bool tensor [n]; False marks a protected sequence.
        All tensors are on the same device; sequences are in sorted-id order.

    Returns:
        A Python int: the victim's index, or -1 when no sequence is evictable. Ties between tenants
        go to the larger tenant index, ties inside a tenant to the smaller sequence index.
    """
    ### BEGIN SOLUTION
    num_tenants = weights.shape[0]
    usage = torch.zeros(num_tenants, dtype=torch.int64, device=weights.device).index_add_(0, tenant, num_blocks)
    has_evictable = torch.zeros(num_tenants, dtype=torch.int64, device=weights.device).index_add_(
        0, tenant, evictable.to(torch.int64)) > 0
    weights = weights.to(torch.float64)
    total_weight = weights.sum()
    quota = torch.where(total_weight > 0, weights / total_weight * total_blocks, torch.zeros_like(weights))
    overuse = usage.to(torch.float64) - quota
    candidate = (overuse > 0) & has_evictable
    mask = evictable
    if bool(candidate.any()):
        largest = torch.where(candidate, overuse, torch.full_like(overuse, float("-inf"))).max()
        victim_tenant = torch.nonzero(candidate & (overuse == largest))[-1, 0]
        mask = evictable & (tenant == victim_tenant)
    if not bool(mask.any()):
        return -1
    oldest = last_access_step[mask].min()
    return int(torch.nonzero(mask & (last_access_step == oldest))[0, 0])
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task4_3_fair_victim_t", "locked": true, "points": 8, "schema_version": 3, "solution": false, "task": false}
"""Check that fair_victim_t makes FairPolicy's decision on tensors, ties included, on every device, without a loop."""


def _check_task4_3_fair_victim_t():
    from course.checks import assert_no_python_loop, assert_plain_equal
    from course.env import available_devices

    for device in available_devices():
        def t(values, dtype=torch.int64, device=device):
            return torch.tensor(values, dtype=dtype, device=device)

        # Sequences a::1, a::2, b::1 as in Task 4.1: a (tenant 0) holds 6 blocks > quota 4.
        args = (t([0, 0, 1]), t([3, 3, 2]), t([5, 1, 0]), t([1.0, 1.0], torch.float64), 8)
        assert_plain_equal(fair_victim_t(*args, t([True, True, True], torch.bool)), 1,
                           f"fair_victim_t(a: 3+3 blocks, b: 2, weights [1, 1], 8) on {device}")
        assert_plain_equal(fair_victim_t(*args, t([True, False, True], torch.bool)), 0,
                           f"the same with sequence 1 protected on {device}")
        assert_plain_equal(fair_victim_t(*args, t([False, False, True], torch.bool)), 2,
                           f"the same with tenant 0 all protected (passed over, global LRU) on {device}")
        assert_plain_equal(fair_victim_t(*args, t([False, False, False], torch.bool)), -1,
                           f"the same with nothing evictable on {device}")
        nobody = (t([0, 0, 1]), t([3, 3, 2]), t([5, 1, 0]), t([1, 1]), 100, t([True, True, True], torch.bool))
        assert_plain_equal(fair_victim_t(*nobody), 2, f"fair_victim_t(..., total_blocks=100) (nobody over: global LRU) on {device}")
        tie = (t([0, 1]), t([4, 4]), t([0, 3]), t([1.0, 1.0]), 4, t([True, True], torch.bool))
        assert_plain_equal(fair_victim_t(*tie), 1, f"fair_victim_t(two tenants 2 blocks over each) (tie: larger tenant index) on {device}")
        lru_tie = (t([0, 0, 0]), t([1, 1, 1]), t([2, 2, 2]), t([1.0]), 1, t([False, True, True], torch.bool))
        assert_plain_equal(fair_victim_t(*lru_tie), 1, f"fair_victim_t(equal last_access_step) (tie: smaller index) on {device}")

    ### BEGIN HIDDEN TESTS
    import random as _random
    from fractions import Fraction as _Fraction


    def _oracle_index(tenant, blocks, steps, weights, total, evictable):
        n_t = len(weights)
        w_sum = sum(_Fraction(w) for w in weights)
        quota = [(_Fraction(w) / w_sum * total if w_sum else _Fraction(0)) for w in weights]
        usage = [0] * n_t
        for i in range(len(tenant)):
            usage[tenant[i]] += blocks[i]
        free = [i for i in range(len(tenant)) if evictable[i]]
        order = sorted(range(n_t), key=lambda k: (usage[k] - quota[k], k), reverse=True)
        for k in order:
            mine = [i for i in free if tenant[i] == k]
            if usage[k] - quota[k] > 0 and mine:
                return min(mine, key=lambda i: (steps[i], i))
        return min(free, key=lambda i: (steps[i], i)) if free else -1


    def _weights_power_of_two(rng, n_t):
        # Halves that add up to a power of two, so that every quota is exact in float64.
        halves = 2 * rng.choice([1, 2, 4, 8, 16])
        cuts = sorted(rng.randint(0, halves) for _ in range(n_t - 1))
        return [(b - a) / 2 for a, b in zip([0] + cuts, cuts + [halves])]


    _rng = _random.Random(4303)
    for device in available_devices():
        for _case in range(300):
            _n_t = _rng.randint(1, 5)
            _n = _rng.randint(0, 14)
            _tenant = [_rng.randrange(_n_t) for _ in range(_n)]
            _blocks = [_rng.randint(0, 7) for _ in range(_n)]
            _steps = [_rng.randint(0, 5) for _ in range(_n)]
            _evictable = [_rng.random() < 0.75 for _ in range(_n)]
            if _case % 6 == 5:
                _weights = [_rng.uniform(0.05, 3.0) for _ in range(_n_t)]
            elif _case % 6 == 4:
                _weights = [float(_rng.randint(0, 1)) for _ in range(_n_t)]
                if sum(_weights) not in (0.0, 1.0, 2.0, 4.0):
                    _weights = [0.0] * _n_t
            else:
                _weights = _weights_power_of_two(_rng, _n_t)
            _total = _rng.randint(1, 60)
            _dtype = [torch.float64, torch.float32, torch.float64][_case % 3]
            _args = (torch.tensor(_tenant, dtype=torch.int64, device=device), torch.tensor(_blocks, dtype=torch.int64, device=device),
                     torch.tensor(_steps, dtype=torch.int64, device=device), torch.tensor(_weights, dtype=torch.float64, device=device).to(_dtype),
                     _total, torch.tensor(_evictable, dtype=torch.bool, device=device))
            if _dtype == torch.float32:
                _weights = [float(w) for w in _args[3].cpu().tolist()]
            _expected = _oracle_index(_tenant, _blocks, _steps, _weights, _total, _evictable)
            assert_plain_equal(fair_victim_t(*_args), _expected, f"fair_victim_t on random case {_case} ({device})", reveal=False)
            assert _args[1].cpu().tolist() == _blocks and _args[5].cpu().tolist() == _evictable, \
                f"fair_victim_t changed its input tensors on random case {_case}"
        _big = (torch.tensor([0, 1, 1], device=device), torch.tensor([2**40, 2**40, 1], device=device),
                torch.tensor([2**62, 2**62, 2**62], device=device), torch.tensor([1.0, 1.0], device=device), 2**41,
                torch.tensor([True, True, True], device=device))
        assert_plain_equal(fair_victim_t(*_big), 1, f"fair_victim_t with large counts on {device}", reveal=False)


    def _loop_args(n):
        g = torch.Generator().manual_seed(n)
        return (torch.randint(0, 4, (n,), generator=g), torch.randint(1, 5, (n,), generator=g),
                torch.randint(0, 100, (n,), generator=g), torch.ones(4, dtype=torch.float64), n,
                torch.ones(n, dtype=torch.bool))


    assert_no_python_loop(fair_victim_t, _loop_args(8), _loop_args(4096), "fair_victim_t")
    ### END HIDDEN TESTS


_check_task4_3_fair_victim_t()

# %% [markdown]
# ## Experiment 1: the noisy neighbour | 实验 1：吵闹的邻居
#
# Two tenants share a prefix cache of 128 blocks. Tenant **A** floods it with one-off long prompts: a
# 4-block system prompt (reused) followed by a 28-block document that is never seen again. Tenant **B**
# reuses a steady working set: a 1-block system prompt and one of 10 contexts of 5 blocks (51 blocks in all,
# well under half the cache). Every prompt segment is one cached sequence named `tenant::segment`; a
# request hits the blocks of the segments already cached, and the segments of the running request are
# protected while it inserts the missing ones.
#
# The replay below is a small loop written for this notebook (the course's replay engine works on block
# hashes; fair eviction needs the tenant in the seq_id). For each policy it reports each tenant's hit ratio
# (in blocks) and Jain's index of $x_t$ = the tenant's hit ratio divided by the hit ratio it gets **alone in a
# private cache of $\lfloor\text{quota}_t\rfloor$ blocks** (LRU), its entitlement. LRU and LFU are measured
# against equal shares.
#
# 两个租户共享一个 128 块的前缀缓存。租户 **A** 用一次性的长提示词淹没缓存：4 块系统提示词（会复用）加上一篇 28 块、
# 之后再也不会出现的文档。租户 **B** 复用一个稳定的工作集：1 块系统提示词加上 10 个 5 块上下文之一（共 51 块，远小于缓存的一半）。
# 每个提示词片段是一个名为 `tenant::segment` 的缓存序列；请求命中已缓存片段的块，正在运行的请求的片段在插入缺失片段时受保护。
#
# 下面的回放是本 notebook 自带的小循环（课程的回放引擎基于块哈希工作，而公平驱逐需要 seq_id 中带有租户名）。
# 对每个策略，它报告每个租户的命中率（按块计），以及 $x_t$ 的 Jain 指数：$x_t$ 是该租户的命中率除以它**独占一个
# $\lfloor\text{quota}_t\rfloor$ 块的私有缓存**（LRU）时的命中率，即它应得的份额。LRU 和 LFU 以平均份额为基准。

# %%
import math
import random
from collections import Counter

import matplotlib.pyplot as plt

CAPACITY = 128  # blocks in the shared cache


class LRUPolicy(EvictionPolicy):
    """Notebook 03's LRU: the smallest (last_access_step, seq_id) goes first."""

    def select_victim(self, sequences, protected=frozenset()):
        ids = [s for s in sequences if s not in protected]
        return min(ids, key=lambda s: (sequences[s].last_access_step, s), default=None)


class LFUPolicy(EvictionPolicy):
    """Notebook 03's LFU: the smallest (use_count, last_access_step, seq_id) goes first."""

    def select_victim(self, sequences, protected=frozenset()):
        ids = [s for s in sequences if s not in protected]
        return min(ids, key=lambda s: (sequences[s].use_count, sequences[s].last_access_step, s), default=None)


def noisy_neighbour_trace(num_requests=1200, flood_share=0.5, seed=4):
    """Requests as (tenant, [(segment, num_blocks), ...]): A floods with one-off documents, B reuses 10 contexts."""
    rng = random.Random(seed)
    trace = []
    for i in range(num_requests):
        if rng.random() < flood_share:
            trace.append(("A", [("system", 4), (f"doc{i}", 28)]))
        else:
            trace.append(("B", [("system", 1), (f"ctx{rng.randrange(10)}", 5)]))
    return trace


def replay_tenants(trace, capacity, policy):
    """Replay ``trace`` on a cache of ``capacity`` blocks; return hit ratios and blocks held per tenant over time."""
    cache, used, step = {}, 0, 0
    tenants = sorted({tenant for tenant, _ in trace})
    hits, refs, held = Counter(), Counter(), Counter()
    occupancy = {tenant: [] for tenant in tenants}
    for tenant, segments in trace:
        ids = [f"{tenant}::{name}" for name, _ in segments]
        protected = frozenset(ids)
        for seq_id, (_, size) in zip(ids, segments):
            step += 1
            refs[tenant] += size
            if seq_id in cache:
                hits[tenant] += size
                cache[seq_id].last_access_step = step
                cache[seq_id].use_count += 1
                continue
            # Admit the new sequence first: its blocks count in its tenant's usage while we evict.
            cache[seq_id] = make_sequence(seq_id, size, step)
            used += size
            held[tenant] += size
            while used > capacity:
                victim = policy.select_victim(cache, protected)
                gone = cache.pop(victim if victim is not None else seq_id)
                used -= gone.num_blocks()
                held[gone.seq_id.partition("::")[0]] -= gone.num_blocks()
                if victim is None:
                    break
        for name in tenants:
            occupancy[name].append(held[name])
    return {"hit_ratio": {t: hits[t] / refs[t] for t in tenants}, "occupancy": occupancy}


def entitled_hit_ratios(trace, capacity, weights):
    """Each tenant's hit ratio alone, with LRU, in a private cache of floor(quota) blocks."""
    tenants = sorted({tenant for tenant, _ in trace})
    total = sum(weights.get(t, 1.0) for t in tenants)
    result = {}
    for t in tenants:
        private = math.floor(weights.get(t, 1.0) / total * capacity) if total else 0
        alone = [request for request in trace if request[0] == t]
        result[t] = replay_tenants(alone, private, LRUPolicy())["hit_ratio"][t] if private else 0.0
    return result


def fairness(result, entitled):
    """Jain's index of hit ratio / entitled hit ratio over the tenants."""
    return jain_index([result["hit_ratio"][t] / entitled[t] if entitled[t] else 1.0 for t in entitled])


trace = noisy_neighbour_trace()
equal = entitled_hit_ratios(trace, CAPACITY, {"A": 1.0, "B": 1.0})
configs = {
    "LRU": (LRUPolicy(), equal),
    "LFU": (LFUPolicy(), equal),
    "Fair A:B = 1:1": (FairPolicy({"A": 1.0, "B": 1.0}, CAPACITY), equal),
    "Fair A:B = 3:1": (FairPolicy({"A": 3.0, "B": 1.0}, CAPACITY),
                       entitled_hit_ratios(trace, CAPACITY, {"A": 3.0, "B": 1.0})),
}
results = {}
print(f"{'policy':<16}{'hit A':>8}{'hit B':>8}{'Jain':>8}")
for name, (policy, entitled) in configs.items():
    results[name] = replay_tenants(trace, CAPACITY, policy)
    ratio = results[name]["hit_ratio"]
    print(f"{name:<16}{ratio['A']:>8.3f}{ratio['B']:>8.3f}{fairness(results[name], entitled):>8.3f}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
names = list(results)
for offset, tenant in ((-0.2, "A"), (0.2, "B")):
    axes[0].bar([i + offset for i in range(len(names))], [results[n]["hit_ratio"][tenant] for n in names],
                width=0.4, label=f"tenant {tenant}")
axes[0].set_xticks(range(len(names)), names, rotation=15)
axes[0].set_ylabel("hit ratio (fraction of blocks)")
axes[0].set_title("Per-tenant hit ratio, 128-block cache")
axes[0].legend()
jain = [fairness(results[n], configs[n][1]) for n in names]
axes[1].bar(names, jain, color="tab:green", label="Jain's index")
axes[1].axhline(0.5, color="gray", linestyle=":", label="1/n (one tenant gets all)")
axes[1].set_ylim(0, 1.05)
axes[1].set_ylabel("Jain's index (1 = fair)")
axes[1].set_title("Fairness of hit ratio relative to entitlement")
axes[1].tick_params(axis="x", rotation=15)
axes[1].legend(loc="lower right")
plt.tight_layout()
plt.show()


# %% [markdown]
# **What to see.** Under LRU the flood pushes many of B's contexts out before B comes back to them: B gets
# about half the hits it would get in its own half of the cache, and Jain's index drops. LFU also protects B
# here, but by accident: A's documents are used once, so they have the lowest counts. LFU knows nothing about
# tenants: it cannot express weights, and a tenant whose entries are all hot keeps them whatever its share.
# Fair quota keeps A inside its share: A's new document makes A the over-quota tenant, A evicts its own old
# documents, B's working set stays, and the index is 1. With weights 3:1 for A, B is entitled to only 32
# blocks, fewer than its working set: B loses hits, but hardly more than it would lose in a private 32-block
# cache, so the index stays close to 1. (The replay admits a new sequence before it evicts, so the blocks
# being allocated count in their tenant's usage.)
#
# **看什么。** 在 LRU 下，洪水在 B 回来之前就把 B 的许多上下文挤了出去：B 的命中大约只有它在自己那一半缓存中所能得到的一半，
# Jain 指数下降。LFU 在这里也保护了 B，但只是碰巧：A 的文档只使用一次，因此计数最低。LFU 对租户一无所知：它无法表达权重，
# 而一个所有条目都很热的租户不论份额多少都能保住它们。公平配额把 A 限制在它的份额内：A 的新文档使 A 成为超额租户，
# A 驱逐自己的旧文档，B 的工作集得以保留，指数为 1。当 A:B 权重为 3:1 时，B 只应得 32 块，少于其工作集：B 会损失命中，
# 但几乎不会比它独占一个 32 块的私有缓存时损失得更多，因此指数仍接近 1。（回放先接纳新序列再驱逐，因此正在分配的块计入其租户的占用。）
#
# ## Experiment 2: who holds the cache | 实验 2：谁占着缓存
#
# The blocks each tenant holds after every request, under LRU and under fair quota (equal weights). The
# solid line is the capacity, the dashed line the equal quota of 64 blocks.
#
# 每个请求之后各租户占用的块数，分别在 LRU 和公平配额（等权重）下。实线是容量，虚线是相等的配额 64 块。

# %%
def plot_occupancy(ax, result, title, quota_lines=()):
    occupancy = result["occupancy"]
    steps = range(1, len(next(iter(occupancy.values()))) + 1)
    ax.stackplot(steps, *occupancy.values(), labels=[f"tenant {t}" for t in occupancy], alpha=0.8)
    ax.axhline(CAPACITY, color="black", linewidth=1, label="capacity")
    for level in quota_lines:
        ax.axhline(level, color="black", linestyle="--", linewidth=1, label="quota of A")
    ax.set_ylim(0, CAPACITY * 1.3)
    ax.set_xlabel("request number")
    ax.set_ylabel("blocks held")
    ax.set_title(title)
    ax.legend(loc="upper left", ncol=4, fontsize="small")


fig, axes = plt.subplots(1, 2, figsize=(11, 3.4), sharey=True)
plot_occupancy(axes[0], results["LRU"], "LRU: the flood takes the cache", [CAPACITY / 2])
plot_occupancy(axes[1], results["Fair A:B = 1:1"], "Fair quota 1:1: B keeps its working set", [CAPACITY / 2])
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Experiment 3: move the weights | 实验 3：调整权重
#
# Each slider is one tenant's weight. Every change re-runs the replay with your `FairPolicy` and redraws the
# hit ratios and the occupancy. Try giving B almost nothing (its working set no longer fits its quota), or
# setting both weights to 0 (every quota is 0: the tenant holding the most blocks is always the victim
# tenant).
#
# 每个滑块是一个租户的权重。每次改动都会用你的 `FairPolicy` 重新回放，并重画命中率和占用。试着几乎不给 B 权重
# （其工作集不再装得下其配额），或把两个权重都设为 0（所有配额都为 0：占用最多的租户总是受害租户）。

# %%
import ipywidgets as widgets
from IPython.display import display

sliders = {t: widgets.FloatSlider(value=1.0, min=0.0, max=5.0, step=0.25, description=f"weight {t}")
           for t in ("A", "B")}
output = widgets.Output()


def rerun(change=None):
    weights = {t: slider.value for t, slider in sliders.items()}
    result = replay_tenants(trace, CAPACITY, FairPolicy(weights, CAPACITY))
    total = sum(weights.values())
    quota = {t: (w / total * CAPACITY if total else 0.0) for t, w in weights.items()}
    with output:
        output.clear_output(wait=True)
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.2), gridspec_kw={"width_ratios": [1, 2.5]})
        ratio = result["hit_ratio"]
        axes[0].bar(list(ratio), list(ratio.values()), color=["tab:blue", "tab:orange"])
        axes[0].set_ylim(0, 1)
        axes[0].set_ylabel("hit ratio (fraction of blocks)")
        axes[0].set_xlabel("tenant")
        axes[0].set_title("Hit ratio per tenant")
        plot_occupancy(axes[1], result, f"Occupancy, quotas A={quota['A']:.0f}, B={quota['B']:.0f} blocks",
                       [quota["A"]])
        plt.tight_layout()
        plt.show()


for slider in sliders.values():
    slider.observe(rerun, names="value")
rerun()
display(widgets.VBox([widgets.HBox(list(sliders.values())), output]))

# %% [markdown]
# ## Experiment 4: the tensor version decides the same, faster | 实验 4：张量版本做出相同的决定，而且更快
#
# A random cache of 100,000 sequences over 8 tenants: `FairPolicy.select_victim` on the dict and
# `fair_victim_t` on the columns choose the same sequence. One timing of each (a rough indication, not a
# benchmark).
#
# 一个包含 100,000 个序列、8 个租户的随机缓存：字典上的 `FairPolicy.select_victim` 与列上的 `fair_victim_t` 选出同一个序列。
# 两者各计时一次（仅作粗略参考，不是基准测试）。

# %%
import time

n, tenants = 100_000, [f"tenant{k}" for k in range(8)]
generator = torch.Generator().manual_seed(SEED)
# Sorted tenant indices make the ids below come out in sorted-id order, as fair_victim_t expects.
tenant_col = torch.randint(0, len(tenants), (n,), generator=generator).sort().values
blocks_col = torch.randint(1, 9, (n,), generator=generator)
steps_col = torch.randint(0, 10 * n, (n,), generator=generator)
weights_col = torch.tensor([1.0, 2.0, 1.0, 4.0, 1.0, 3.0, 2.0, 2.0], dtype=torch.float64)
total_blocks = int(blocks_col.sum()) - 1000
ids = [f"{tenants[k]}::{i:06d}" for i, k in enumerate(tenant_col.tolist())]
sequences = {seq_id: make_sequence(seq_id, b, s) for seq_id, b, s in zip(ids, blocks_col.tolist(), steps_col.tolist())}
policy = FairPolicy(dict(zip(tenants, weights_col.tolist())), total_blocks)

started = time.perf_counter()
dict_choice = policy.select_victim(sequences)
dict_s = time.perf_counter() - started
columns = [c.to(DEVICE) for c in (tenant_col, blocks_col, steps_col, weights_col)]
started = time.perf_counter()
index = fair_victim_t(*columns, total_blocks, torch.ones(n, dtype=torch.bool, device=DEVICE))
tensor_s = time.perf_counter() - started
print(f"dict version:   {dict_choice}  ({dict_s * 1e3:.1f} ms)")
print(f"tensor version: {ids[index]}  ({tensor_s * 1e3:.1f} ms on {DEVICE})")
print("same victim:", dict_choice == ids[index])

# %% [markdown]
# ## Production systems | 生产系统中的做法
#
# - **Weighted quotas in shared caches.** Multi-tenant key-value caches give each tenant a reserved share
#   of memory, let idle shares be used by others, and evict first from tenants above their share
#   (Memshare, USENIX ATC 2017); FairRide (NSDI 2016) studies how to share one cache fairly among users
#   who share data. LLM serving engines such as vLLM and SGLang do not partition their KV cache by tenant:
#   they evict by recency (vLLM's free-block queue, SGLang's LRU over radix-tree leaves), which is exactly
#   the noisy-neighbour exposure of Experiment 1.
# - **Virtual Token Counter (VTC).** Sheng et al. (OSDI 2024) schedule LLM requests fairly by keeping, per
#   client, a counter of the service received (input and output tokens, weighted) and always serving the
#   backlogged client with the smallest counter. Like this notebook, it counts the resource that costs
#   memory and compute (tokens, here blocks), not the number of requests.
#
# - **共享缓存中的加权配额。** 多租户键值缓存给每个租户保留一份内存，允许其他租户使用闲置的份额，并优先从超出份额的租户驱逐
#   （Memshare，USENIX ATC 2017）；FairRide（NSDI 2016）研究多个共享数据的用户如何公平地共享一个缓存。vLLM、SGLang 等
#   LLM 服务引擎并不按租户划分 KV 缓存：它们按新近度驱逐（vLLM 的空闲块队列、SGLang 在基数树叶子上的 LRU），
#   这正是实验 1 中吵闹邻居问题的来源。
# - **虚拟令牌计数器（VTC）。** Sheng 等人（OSDI 2024）为每个客户端维护一个已获服务量的计数器（输入与输出令牌加权计），
#   总是优先服务计数最小的积压客户端，从而公平地调度 LLM 请求。与本 notebook 一样，它统计的是消耗内存与算力的资源（令牌，
#   这里是块），而不是请求的个数。
#
# ## Summary | 小结
#
# **Remember:** fair eviction asks "which tenant is most over its weighted share, counted in blocks?" first,
# and "which of its sequences is least recently used?" second; when nobody is over quota, it is plain LRU.
#
# **记住：** 公平驱逐先问"哪个租户超出其加权份额（按块计）最多？"，再问"它的哪个序列最久未被使用？"；没有租户超额时，它就是普通的 LRU。
#
# Next: [05. KV cache scheduler](../05_scheduler_sim/05_scheduler_sim.ipynb), which decides which requests
# run, not only which blocks go. | 下一节：[05. KV 缓存调度器](../05_scheduler_sim/05_scheduler_sim.ipynb)，
# 它不仅决定哪些块被驱逐，还决定哪些请求运行。
#
# ## References | 参考文献
#
# - Y. Sheng, S. Cao, D. Li, B. Zhu, Z. Li, D. Zhuo, J. E. Gonzalez, I. Stoica, "Fairness in Serving Large Language Models" (Virtual Token Counter), OSDI 2024.
# - R. Jain, D.-M. Chiu, W. Hawe, "A Quantitative Measure of Fairness and Discrimination for Resource Allocation in Shared Computer Systems", DEC-TR-301, 1984.
# - Q. Pu, H. Li, M. Zaharia, A. Ghodsi, I. Stoica, "FairRide: Near-Optimal, Fair Cache Sharing", NSDI 2016.
# - A. Cidon, D. Rushton, S. M. Rumble, R. Stutsman, "Memshare: a Dynamic Multi-tenant Key-value Cache", USENIX ATC 2017.
# - W. Kwon et al., "Efficient Memory Management for Large Language Model Serving with PagedAttention" (vLLM), SOSP 2023.
# - L. Zheng et al., "SGLang: Efficient Execution of Structured Language Model Programs" (RadixAttention), NeurIPS 2024.
# - Seed designs of this course: the "KV Eviction formula-to-code" walkthrough (LLM-REVIEW) and the "KV Cache Scheduling" chapter of Datawhale's llm-algo-leetcode (text CC BY 4.0, code Apache-2.0).
