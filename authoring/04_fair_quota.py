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
# [![Open in ModelScope](https://img.shields.io/badge/ModelScope-Open%20in%20ModelScope-624aff)](https://modelscope.cn/notebook/share/github/kvcache-course/kv-cache-eviction/blob/main/release/04_fair_quota/04_fair_quota.ipynb)
# [![GitHub](https://img.shields.io/badge/GitHub-release%2F04_fair_quota-black)](https://github.com/kvcache-course/kv-cache-eviction/blob/main/release/04_fair_quota/04_fair_quota.ipynb)
#
# **Difficulty:** ★★☆ intermediate · **Time:** about 75 minutes · **Points:** 22 · **GPU:** task 4.3 runs on CUDA when a GPU is present; everything also runs on the CPU.
#
# **难度：** ★★☆ 中级 · **用时：** 约 75 分钟 · **总分：** 22 · **GPU：** 任务 4.3 在有 GPU 时于 CUDA 上运行；所有内容也都能在 CPU 上运行。
#
# **ModelScope (魔搭):** log in to ModelScope, then click the ModelScope badge: it opens this notebook from
# GitHub in a notebook instance of yours (choose CPU or GPU). Where that link does not work, choose
# *File → Open from URL…* in the instance's JupyterLab and paste <https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/04_fair_quota/04_fair_quota.ipynb>.
# 先登录魔搭，再点击 ModelScope 徽章：魔搭会从 GitHub 取来本 notebook，在你自己的 Notebook 实例中打开（可选 CPU 或 GPU）。
# 如果这个链接打不开，在实例的 JupyterLab 中选择 *File → Open from URL…*，粘贴 <https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/04_fair_quota/04_fair_quota.ipynb>。
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
# **导读。** 一个推理服务常常同时服务多个租户（用户、应用），它们共享同一个 KV 缓存。按新近度驱逐（LRU）不看租户：一个租户不断发来只用一次的长提示词，就会把另一个租户反复复用的缓存挤出去，后者的请求只好重新预填充，首 token 时延上升。
# 这就是“吵闹的邻居”问题。本 notebook 给每个租户一个按权重计算、按块计的配额，驱逐时先找超出配额最多的租户，再在它内部按 LRU 选受害者。你要写 `FairPolicy`（分 6 个部分计分）、衡量公平性的 `jain_index`，以及在张量上不写 Python 循环做出同样决定的 `fair_victim_t`；最后在实验中看到吵闹的邻居如何被挡在自己的份额之内。
#
# **Overview.** A server often serves several tenants (users, applications) that share one KV cache. Eviction by
# recency (LRU) does not look at tenants: one tenant that keeps sending long one-off prompts pushes out the
# cache that another tenant reuses, whose requests then run their prefill again, and their time to first
# token goes up. This is the noisy-neighbour problem. This notebook gives every tenant a quota, computed from
# weights and counted in blocks; eviction first finds the tenant most over its quota, then picks the LRU
# victim inside it. You write `FairPolicy` (graded in six parts), `jain_index`, which measures fairness, and
# `fair_victim_t`, the same decision on tensors without a Python loop; the experiments then show the noisy
# neighbour held inside its own share.

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
# 1. 解释“吵闹的邻居”问题：一个租户大量的一次性提示词会把另一个租户可复用的缓存挤出去；
# 2. 实现公平配额驱逐：先选出超出加权配额最多的租户，再在该租户内部按 LRU 驱逐；
# 3. 用公平性指数（Jain）度量公平性；
# 4. 在张量上做出同样的决定：用 `index_add_`/`bincount` 按租户求和，不写 Python 循环。
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
# very long prompts take the whole cache while it looks "under quota". When the weights sum to 0 the
# quotas are undefined and `ValueError` is raised, as in notebook 01's `quotas`.
#
# $$\text{victim tenant} = \arg\max_{t:\ \text{overuse}_t > 0} \text{overuse}_t \quad(\text{ties: the smaller name}),
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
# 容量为 $B$ 块的缓存由多个租户 $t$ 共享，各租户的权重为 $w_t \ge 0$。序列属于其 id 中第一个 `"::"` 之前的名字所指的租户（`"alice::chat-7"` 属于 `alice`；不含 `"::"` 的 id 属于 `default`）。租户 $t$ 的配额、占用和超额量为：
#
# $$\text{quota}_t = \frac{w_t}{\sum_j w_j}\, B, \qquad u_t = \sum_{s \in t} \text{num\_blocks}(s), \qquad \text{overuse}_t = u_t - \text{quota}_t$$
#
# **占用按块计，而不是按序列或请求计。** 内存压力来自块：一个 30 块的提示词占用的内存是 1 块提示词的三十倍。
# 如果按请求数计配额，一个提示词很少但很长的租户可能占满整个缓存，却看起来“没有超额”。权重之和为 0 时配额没有定义，此时抛出 `ValueError`，与 notebook 01 的 `quotas` 相同。
#
# $$\text{victim tenant} = \arg\max_{t:\ \text{overuse}_t > 0} \text{overuse}_t \quad(\text{平局：名字较小者}),
# \qquad \text{victim} = \arg\min_{s \in \text{victim tenant}} \big(t_\text{last}(s),\ \text{seq\_id}\big)$$
#
# 先看公平（选哪个租户），再看新近度（选该租户的哪个序列）：受害租户是超额量大于 0 的租户中超额量最大的一个（平局时取名字较小者），受害者是该租户内 $(t_\text{last}, \text{seq\_id})$ 最小的序列。没有租户超额时，退回到对全部序列的**全局 LRU**。
# 受保护的序列（正在运行的请求）永远不会被选中，但仍计入其租户的占用；若某个超额租户的序列全部受保护，则跳过它，看下一个超额租户。
#
# **公平性指数（Jain）** 衡量 $n$ 个非负数 $x_1, \dots, x_n$（例如每个租户得到的与其应得的之比）有多均衡：
#
# $$J = \frac{\left(\sum_i x_i\right)^2}{n \sum_i x_i^2} \in \left[\tfrac{1}{n},\ 1\right]$$
#
# 所有 $x_i$ 相等时 $J = 1$，一个租户独占一切时 $J = 1/n$。

# %% [markdown]
# ## Given: the metadata and the policy interface | 已给出：元数据与策略接口
#
# The three cells below hold the reference solutions of what notebooks 02 and 03 built, `KVBlock` and
# `SequenceKVCache` (a sequence's block table and counters; `num_blocks()` is its usage) and the base class
# `EvictionPolicy` (with `candidates(sequences, protected)`, the sorted ids that may be evicted), and a helper
# `make_sequence(seq_id, num_blocks, last_access_step)` that builds a sequence of full blocks for the tests
# and experiments. They are read-only: run them, do not change them.
#
# 下面三个单元给出 notebook 02 和 03 所写内容的参考解答：`KVBlock` 与 `SequenceKVCache`（序列的块表与计数器；`num_blocks()` 即其占用）、基类 `EvictionPolicy`（含 `candidates(sequences, protected)`，返回可驱逐 id 的有序列表），以及辅助函数 `make_sequence(seq_id, num_blocks, last_access_step)`：它为测试和实验构造一个由满块组成的序列。
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
        """bool: True when every slot holds a token (filled == capacity)."""
        return self.filled >= self.capacity

    @property
    def free_slots(self) -> int:
        """int: how many slots are still empty (capacity - filled)."""
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
        """int: how many blocks the sequence holds, len(block_table)."""
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
# Write the class `FairPolicy(tenant_weights=None, total_blocks=512)`, an `EvictionPolicy`, by filling its six
# numbered blanks. **Graded in parts:** 4.1.1 `__init__` (1) · 4.1.2 `_tenant_of` (1) · 4.1.3 `_quotas` (2) ·
# 4.1.4 usage and nothing to evict (2) · 4.1.5 the victim tenant (3) · 4.1.6 the global LRU fallback (1).
#
# - **`__init__`** (4.1.1): keep a copy of the weights (`None` means no explicit weights) and `total_blocks`
#   (the cache size $B$). Raise `ValueError` with a clear message for a negative, infinite or **NaN** weight
#   (the trap of notebook 01: `nan < 0` is False, so check with `math.isfinite`), or for `total_blocks < 1`.
#   A weight of 0 is allowed.
# - **`_tenant_of(seq_id)`** (4.1.2), a `@staticmethod`: the text before the first `"::"`, or `"default"` when
#   there is none (`"a::b::c"` → `"a"`, `"::x"` → `""`, `"plain"` → `"default"`, `"a:b"` → `"default"`).
# - **`_quotas(sequences)`** (4.1.3): a new dict from tenant to its quota (a float). The tenants are the keys
#   of `tenant_weights` **and** the tenants present in `sequences`; a tenant without an explicit weight has
#   weight 1.0; $\text{quota}_t = w_t / \sum_j w_j \cdot B$. When the weights sum to 0 (every tenant has weight
#   0, or there is no tenant at all), raise `ValueError`, as notebook 01's `quotas` does. Never change the
#   stored weights: two calls with different caches must not affect each other.
# - **`select_victim(sequences, protected=frozenset())`**:
#   - (4.1.4) return `None` when no sequence can be evicted (`sequences` empty or every sequence protected),
#     **before** computing quotas, so that an empty cache never raises. Otherwise the quotas come from
#     `self._quotas(sequences)` (so weights that sum to 0 raise `ValueError` here too), and the usage $u_t$
#     of a tenant is the sum of `num_blocks()` over **all** its sequences, protected ones included.
#   - (4.1.5) among tenants with $u_t - \text{quota}_t > 0$ (exactly at quota is not over), try the largest
#     overuse first, ties to the **smaller** tenant name; pass over a tenant whose sequences are all
#     protected; return the least recently used unprotected sequence of the first tenant that has one
#     (smallest `(last_access_step, seq_id)`).
#   - (4.1.6) when no over-quota tenant has an unprotected sequence, return the global LRU unprotected
#     sequence.
#
#   Change nothing: not `sequences`, not the sequences in it, not `protected`, not the weights.
#
# ## 任务 4.1：FairPolicy（10 分）
#
# 填写六个带编号的空，完成类 `FairPolicy(tenant_weights=None, total_blocks=512)`，它是一个 `EvictionPolicy`。**分部分计分：**
# 4.1.1 `__init__`（1）· 4.1.2 `_tenant_of`（1）· 4.1.3 `_quotas`（2）· 4.1.4 占用与无可驱逐（2）· 4.1.5 受害租户（3）·
# 4.1.6 全局 LRU 兜底（1）。
#
# - **`__init__`**（4.1.1）：保存权重的副本（`None` 表示没有显式权重）和 `total_blocks`（缓存大小 $B$）。权重为负数、无穷大或 **NaN**，或 `total_blocks < 1` 时，抛出带有清晰消息的 `ValueError`（这是 notebook 01 的陷阱：`nan < 0` 为 False，所以要用 `math.isfinite` 检查）。权重可以为 0。
# - **`_tenant_of(seq_id)`**（4.1.2），一个 `@staticmethod`：返回第一个 `"::"` 之前的文本；没有 `"::"` 时返回 `"default"`（`"a::b::c"` → `"a"`，`"::x"` → `""`，`"plain"` → `"default"`，`"a:b"` → `"default"`）。
# - **`_quotas(sequences)`**（4.1.3）：返回一个新字典，把租户映射到它的配额（float）。租户集合是 `tenant_weights` 的键**与**
#   `sequences` 中出现的租户之并；没有显式权重的租户权重为 1.0；$\text{quota}_t = w_t / \sum_j w_j \cdot B$。权重之和为 0 时（每个租户的权重都是 0，或者根本没有租户），抛出 `ValueError`，与 notebook 01 的 `quotas` 相同。不要修改保存的权重：用不同的缓存调用两次，结果不能互相影响。
# - **`select_victim(sequences, protected=frozenset())`**：
#   - （4.1.4）没有可驱逐的序列时（`sequences` 为空，或所有序列都受保护）返回 `None`，而且要在计算配额**之前**返回，这样空缓存永远不会抛出异常。否则配额来自 `self._quotas(sequences)`（因此权重之和为 0 时这里同样抛出 `ValueError`），租户的占用 $u_t$ 是它**所有**序列（包括受保护的）`num_blocks()` 之和。
#   - （4.1.5）在 $u_t - \text{quota}_t > 0$ 的租户中（恰好等于配额不算超额），按超额量从大到小尝试，平局时名字**较小**的租户优先；序列全部受保护的租户跳过；返回第一个拥有未受保护序列的租户中最久未使用的未受保护序列（`(last_access_step, seq_id)` 最小）。
#   - （4.1.6）若没有任何超额租户拥有未受保护的序列，返回全局 LRU 的未受保护序列。
#
#   不要修改任何东西：不改 `sequences`、其中的序列、`protected`，也不改权重。

# %% nbgrader={"grade": false, "grade_id": "task4_1_FairPolicy", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math


class FairPolicy(EvictionPolicy):
    """Fair-quota eviction: evict from the tenant most over its weighted quota, LRU inside it.

    Args:
        tenant_weights: dict from tenant name (str) to weight (int or float, finite, >= 0), or None.
            Tenants present in the cache without a weight here have weight 1.0. Not changed.
        total_blocks: the cache size B in blocks (int >= 1).

    Raises:
        ValueError: at construction, for a negative, infinite or NaN weight or total_blocks < 1.

    Methods:
        _tenant_of(seq_id) -> str (static): text before the first "::", else "default".
        _quotas(sequences) -> dict[str, float]: w_t / sum(w) * total_blocks for every tenant of
            tenant_weights and of sequences; ValueError when the weights sum to 0.
        select_victim(sequences, protected=frozenset()) -> str | None: see the task.
    """

    def __init__(self, tenant_weights=None, total_blocks=512):
        # TODO 4.1.1: copy the weights (None: no weights), check every weight and total_blocks, keep both.
        # 提示：对字典调用 dict(...) 得到副本（None 时用空字典）；math.isfinite(w) 对 NaN 和 ±inf 为 False；不合法时抛出 ValueError。
        # Hint: dict(...) of a dict is a copy (an empty dict for None); math.isfinite(w) is False for NaN and ±inf; raise
        #       ValueError for a bad value.
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
        # TODO 4.1.2: return the text before the first "::", or "default" when seq_id has no "::".
        # 提示：str.partition 在第一个分隔符处切开，返回（前面, 分隔符, 后面）三元组；找不到分隔符时，中间那一项是空字符串。
        # Hint: str.partition cuts at the first separator and returns a triple (before, separator, after); the middle item is ""
        #       when the separator is absent.
        ### BEGIN SOLUTION
        tenant, separator, _ = seq_id.partition("::")
        return tenant if separator else "default"
        ### END SOLUTION

    def _quotas(self, sequences):
        # TODO 4.1.3: weight 1.0 for every tenant present, then the explicit weights; ValueError when they sum
        #             to 0; return a new dict from tenant to weight / total * total_blocks.
        # 提示：dict.fromkeys(租户们, 1.0) 再 .update(权重的副本)；不要在 self 保存的字典上直接修改。
        # Hint: dict.fromkeys(tenants, 1.0), then .update(the stored weights); never change the stored dict itself.
        ### BEGIN SOLUTION
        weights = dict.fromkeys((self._tenant_of(seq_id) for seq_id in sequences), 1.0)
        weights.update(self.tenant_weights)
        total_weight = sum(weights.values())
        if total_weight == 0:
            raise ValueError("the weights of the tenants sum to 0: their quotas are undefined")
        return {tenant: weight / total_weight * self.total_blocks for tenant, weight in weights.items()}
        ### END SOLUTION

    def select_victim(self, sequences, protected=frozenset()):
        """Return the seq_id to evict (see the task), or None when no sequence can be evicted."""
        # TODO 4.1.4: return None when nothing can be evicted; then the quotas of _quotas,
        #             usage = {tenant: blocks of all its sequences} and evictable = {tenant: [unprotected ids]},
        #             both with a key for every tenant of the quotas.
        # 提示：notebook 03 的基类方法 candidates 列出可驱逐的 id；占用加的是每个序列的 num_blocks()，不是 1。
        # Hint: the base class's candidates (notebook 03) lists the evictable ids; usage adds each sequence's num_blocks(), not
        #       1.
        ### BEGIN SOLUTION
        if not self.candidates(sequences, protected):
            return None
        quotas = self._quotas(sequences)
        usage = dict.fromkeys(quotas, 0)
        evictable = {tenant: [] for tenant in quotas}
        for seq_id, seq in sequences.items():
            tenant = self._tenant_of(seq_id)
            usage[tenant] += seq.num_blocks()
            if seq_id not in protected:
                evictable[tenant].append(seq_id)
        ### END SOLUTION

        def lru(ids):
            """The least recently used of ``ids``: the smallest (last_access_step, seq_id)."""
            return min(ids, key=lambda seq_id: (sequences[seq_id].last_access_step, seq_id))

        # TODO 4.1.5: try the tenants with overuse > 0, the largest overuse first (ties: the smaller name); return
        #             lru(...) of the first one that has an evictable sequence.
        # 提示：sorted 的 key 可以返回元组：超额量取负数让大的排在前面，名字再打破平局；注意用 max 取 (超额量, 名字) 的最大者，会把平局给名字较大者。
        # Hint: the key of sorted may return a tuple: negate the overuse so that the largest comes first, and let the name break
        #       ties; max over (overuse, name) would break a tie toward the larger name.
        ### BEGIN SOLUTION
        overuse = {tenant: usage[tenant] - quotas[tenant] for tenant in quotas}
        over = [tenant for tenant in quotas if overuse[tenant] > 0]
        for tenant in sorted(over, key=lambda t: (-overuse[t], t)):
            if evictable[tenant]:
                return lru(evictable[tenant])
        ### END SOLUTION
        # TODO 4.1.6: no over-quota tenant has an evictable sequence: return the global LRU evictable sequence.
        # 提示：把 evictable 的所有列表合成一个，再交给 lru。
        # Hint: put all the lists of evictable together and pass them to lru.
        ### BEGIN SOLUTION
        return lru([seq_id for ids in evictable.values() for seq_id in ids])
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task4_1_1_init", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that FairPolicy is an EvictionPolicy and that __init__ rejects bad weights and sizes."""


def _check_task4_1_1_init():
    from course.checks import assert_raises

    assert issubclass(FairPolicy, EvictionPolicy), "FairPolicy must be a subclass of EvictionPolicy"
    FairPolicy()
    FairPolicy({"a": 2, "b": 0.5, "idle": 0}, 1)
    assert_raises(ValueError, "FairPolicy({'a': -1.0})", FairPolicy, {"a": -1.0})
    assert_raises(ValueError, "FairPolicy({'a': float('nan')}) (NaN is not a weight)", FairPolicy, {"a": float("nan")})
    assert_raises(ValueError, "FairPolicy({'a': 1.0, 'b': float('inf')})", FairPolicy, {"a": 1.0, "b": float("inf")})
    assert_raises(ValueError, "FairPolicy(None, 0)", FairPolicy, None, 0)
    assert_raises(ValueError, "FairPolicy(None, 0.5) (total_blocks < 1)", FairPolicy, None, 0.5)
    weights = {"a": 1.0}
    FairPolicy(weights, 8)
    assert weights == {"a": 1.0}, "FairPolicy(weights, 8) changed the caller's weights"
    for given in ({"a": 2, "b": 2**53 + 1}, {"a": 2, "b": -1}):
        original = dict(given)
        try:
            FairPolicy(given, 8)
        except ValueError:
            pass  # The second weights are refused: they must still be as they were.
        assert [(t, type(w), w) for t, w in given.items()] == [(t, type(w), w) for t, w in original.items()], (
            f"FairPolicy({original!r}, 8) changed the caller's weights to {given!r} (keep a copy; change nothing)")

    assert_raises(ValueError, "FairPolicy({'a': -1e-13, 'b': 1.0}) (a weight just below 0 is negative)", FairPolicy,
                  {"a": -1e-13, "b": 1.0})
    FairPolicy({"a": -0.0, "b": 1.0}, 8)  # -0.0 is not negative (-0.0 < 0 is False): a weight of 0, which is allowed.

    ### BEGIN HIDDEN TESTS
    for bad in ({"a": -0.5}, {"a": float("inf"), "b": 1.0}, {"a": 1.0, "b": float("-inf")}, {"b": 1, "a": float("nan")},
                {"z": -1}):
        assert_raises(ValueError, f"FairPolicy({bad}, 16)", FairPolicy, bad, 16)
    for bad_total in (0, -3, 0.5):
        assert_raises(ValueError, f"FairPolicy(None, {bad_total})", FairPolicy, None, bad_total)
        assert_raises(ValueError, f"FairPolicy({{'a': 1}}, {bad_total})", FairPolicy, {"a": 1}, bad_total)
    FairPolicy({}, 1)
    FairPolicy({"only": 0.0})
    ### END HIDDEN TESTS


_check_task4_1_1_init()

# %% nbgrader={"grade": true, "grade_id": "test_task4_1_2_tenant_of", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that FairPolicy._tenant_of is a static method that returns the text before the first "::", else "default"."""


def _check_task4_1_2_tenant_of():
    from course.checks import assert_plain_equal

    for seq_id, tenant in (("alice::chat-7", "alice"), ("a::b::c", "a"), ("plain", "default"), ("::x", ""),
                           ("a:b", "default")):
        assert_plain_equal(FairPolicy._tenant_of(seq_id), tenant, f"FairPolicy._tenant_of({seq_id!r})")
    assert_plain_equal(FairPolicy()._tenant_of("bob::1"), "bob", "FairPolicy()._tenant_of('bob::1') (on an instance)")

    ### BEGIN HIDDEN TESTS
    for seq_id, tenant in (("x::y", "x"), ("::y", ""), ("x::", "x"), ("x:y", "default"), ("", "default"),
                           ("default::z", "default"), ("t1::t2::t3", "t1"), ("a:::b", "a"), (":::", ""),
                           ("中文::会话", "中文")):
        assert_plain_equal(FairPolicy._tenant_of(seq_id), tenant, f"FairPolicy._tenant_of({seq_id!r})", reveal=False)
    ### END HIDDEN TESTS


_check_task4_1_2_tenant_of()

# %% nbgrader={"grade": true, "grade_id": "test_task4_1_3_quotas", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that FairPolicy._quotas covers weighted and present tenants, gives floats, and raises on weights that sum to 0."""


def _check_task4_1_3_quotas():
    from course.checks import assert_plain_equal, assert_raises

    def cache_of(*seqs):
        return {seq.seq_id: seq for seq in seqs}

    cache = cache_of(make_sequence("a::1", 3, 5), make_sequence("a::2", 3, 1), make_sequence("b::1", 2, 0))
    assert_plain_equal(FairPolicy({"a": 2, "idle": 1}, 64)._quotas(cache), {"a": 32.0, "idle": 16.0, "b": 16.0},
                       "FairPolicy({'a': 2, 'idle': 1}, 64)._quotas(a::1, a::2, b::1) (b has weight 1.0; idle has no sequence)")
    assert_plain_equal(FairPolicy(None, 8)._quotas(cache), {"a": 4.0, "b": 4.0}, "FairPolicy(None, 8)._quotas(a::1, a::2, b::1)")
    assert_plain_equal(FairPolicy({"a": 0}, 8)._quotas(cache), {"a": 0.0, "b": 8.0},
                       "FairPolicy({'a': 0}, 8)._quotas(a::1, a::2, b::1) (a weight of 0 gives quota 0.0)")
    assert_raises(ValueError, "FairPolicy({'a': 0, 'b': 0}, 8)._quotas(a::1, a::2, b::1) (weights sum to 0)",
                  FairPolicy({"a": 0, "b": 0}, 8)._quotas, cache)
    assert_raises(ValueError, "FairPolicy()._quotas({}) (no tenant: weights sum to 0)", FairPolicy()._quotas, {})
    assert_plain_equal(FairPolicy({"q": 1})._quotas({}), {"q": 512.0}, "FairPolicy({'q': 1})._quotas({}) (default total_blocks)")
    weights = {"a": 2}
    policy = FairPolicy(weights, 64)
    policy._quotas(cache)
    assert_plain_equal(policy._quotas({}), {"a": 64.0},
                       "FairPolicy({'a': 2}, 64)._quotas({}) after a call with tenant b (never change the stored weights)")
    assert weights == {"a": 2}, "FairPolicy._quotas changed the caller's weights"
    mine = {"a": 1, "b": 1}
    policy = FairPolicy(mine, 8)
    mine["a"] = 3
    mine["c"] = 4
    assert_plain_equal(policy._quotas({}), {"a": 4.0, "b": 4.0},
                       "FairPolicy(weights := {'a': 1, 'b': 1}, 8)._quotas({}) after the caller set weights['a'] = 3 "
                       "and weights['c'] = 4 (__init__ keeps a copy of the weights)")
    # Each call returns a new dict: a result the caller keeps, or writes into, stays as it was.
    policy = FairPolicy({"a": 1}, 8)
    first = policy._quotas(cache)
    second = policy._quotas({})
    assert_plain_equal([first, second], [{"a": 4.0, "b": 4.0}, {"a": 8.0}],
                       "[_quotas(a::1, a::2, b::1), _quotas({})] of one FairPolicy({'a': 1}, 8), both kept (each call "
                       "returns a new dict)")
    second["a"] = 99.0
    assert_plain_equal(policy._quotas({}), {"a": 8.0},
                       "FairPolicy({'a': 1}, 8)._quotas({}) after the caller wrote into an earlier result")

    ### BEGIN HIDDEN TESTS
    import random

    from course.checks import replay


    def tenant_of(seq_id):
        return seq_id.split("::")[0] if "::" in seq_id else "default"


    rng = random.Random(4103)
    for case in range(100):
        names = rng.sample(["ann", "bob", "cat", "dan", "eve"], rng.randint(1, 4))
        made = []
        for i in range(rng.randint(0, 10)):
            seq_id = f"req{i:02d}" if rng.random() < 0.15 else f"{rng.choice(names)}::{i:02d}"
            made.append(("__call__", (seq_id, rng.randint(0, 5), rng.randint(0, 6))))
        # One replay makes every sequence of the case.
        cache = {args[0]: seq for (_, args), seq in zip(made, replay(make_sequence, made))}
        present = {tenant_of(s) for s in cache}
        weights = {t: rng.choice([0, 1, 2, 0.5, 3.25]) for t in rng.sample(sorted(present) + ["zz-idle"], rng.randint(0, min(3, len(present) + 1)))}
        total = rng.randint(1, 600)
        tenants = set(weights) | present
        weight_sum = sum(weights.get(t, 1.0) for t in tenants)
        policy = FairPolicy(dict(weights), total)
        call = f"FairPolicy(...)._quotas on random case {case}"
        if weight_sum == 0:
            assert_raises(ValueError, call, policy._quotas, cache)
        else:
            expected = {t: weights.get(t, 1.0) / weight_sum * total for t in tenants}
            assert_plain_equal(policy._quotas(cache), expected, call, reveal=False)
            assert_plain_equal(policy._quotas(cache), expected, call + " (called a second time)", reveal=False)
    mine = {"ann": 1.0, "bob": 3.0}
    policy = FairPolicy(mine, 40)
    mine.clear()
    mine["ann"] = 0.0
    cache = {seq.seq_id: seq for seq in (make_sequence("ann::1", 2, 0), make_sequence("cat::1", 1, 1))}
    assert_plain_equal(policy._quotas(cache), {"ann": 8.0, "bob": 24.0, "cat": 8.0},
                       "FairPolicy({'ann': 1.0, 'bob': 3.0}, 40)._quotas(ann::1, cat::1) after the caller changed its "
                       "dict", reveal=False)
    ### END HIDDEN TESTS


_check_task4_1_3_quotas()

# %% nbgrader={"grade": true, "grade_id": "test_task4_1_4_usage", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that select_victim returns None when nothing can be evicted and counts usage in blocks, protected sequences included."""


def _check_task4_1_4_usage():
    from course.checks import assert_plain_equal, assert_raises, check_type

    def cache_of(*seqs):
        return {seq.seq_id: seq for seq in seqs}

    def snapshot(cache):
        return {s: (q.last_access_step, q.use_count, len(q.block_table)) for s, q in cache.items()}

    blocks = cache_of(make_sequence("a::big", 10, 9), make_sequence("b::1", 1, 1), make_sequence("b::2", 1, 2),
                      make_sequence("b::3", 1, 3))
    assert_plain_equal(FairPolicy(None, 16).select_victim(blocks), "a::big",
                       "FairPolicy(None, 16).select_victim(a: one 10-block sequence, b: three 1-block ones) (usage is in blocks)")
    small = cache_of(make_sequence("a::1", 6, 9, block_size=4), make_sequence("b::1", 5, 1, block_size=8))
    assert_plain_equal(FairPolicy(None, 8).select_victim(small), "a::1",
                       "FairPolicy(None, 8).select_victim(a: 6 blocks of 4 tokens, b: 5 blocks of 8 tokens) (usage is in "
                       "blocks, whatever their size: a holds 6 of them, 24 tokens; b 5, 40 tokens)")
    cache = cache_of(make_sequence("a::1", 3, 5), make_sequence("a::2", 3, 1), make_sequence("b::1", 2, 0))
    policy = FairPolicy({"a": 1.0, "b": 1.0}, total_blocks=8)
    before = snapshot(cache)
    assert_plain_equal(policy.select_victim(cache, frozenset({"a::2"})), "a::1",
                       "FairPolicy({'a': 1, 'b': 1}, 8).select_victim(a: 3+3 blocks, b: 2, protected={'a::2'}) "
                       "(a protected sequence still counts in its tenant's usage)")
    assert snapshot(cache) == before, "select_victim changed the sequences"
    reused = FairPolicy(None, 8)
    assert_plain_equal(reused.select_victim(cache_of(make_sequence("a::1", 2, 0), make_sequence("b::1", 7, 3))), "b::1",
                       "FairPolicy(None, 8).select_victim(a: 2 blocks, b: 7)")
    second = cache_of(make_sequence("a::1", 3, 4), make_sequence("a::2", 2, 6), make_sequence("c::1", 3, 1))
    assert_plain_equal(reused.select_victim(second), "a::1",
                       "the same FairPolicy(None, 8) on a second cache, a: 3+2 blocks, c: 3 (the quotas of the cache it is "
                       "given, a and c 4 each, not those of the first call)")
    check_type(policy.select_victim({}), type(None), "FairPolicy(...).select_victim({})")
    check_type(policy.select_victim(cache, frozenset(cache)), type(None), "select_victim with every sequence protected")
    check_type(FairPolicy().select_victim({}), type(None), "FairPolicy().select_victim({}) (return None before computing quotas)")
    zero = FairPolicy({"a": 0, "b": 0}, 8)
    check_type(zero.select_victim(cache, frozenset(cache)), type(None),
               "FairPolicy({'a': 0, 'b': 0}, 8).select_victim(every sequence protected)")
    assert_raises(ValueError, "FairPolicy({'a': 0, 'b': 0}, 8).select_victim(a::1, a::2, b::1) (weights sum to 0)",
                  zero.select_victim, cache)

    ### BEGIN HIDDEN TESTS
    empty = cache_of(make_sequence("a::1", 0, 0), make_sequence("a::2", 0, 1), make_sequence("b::1", 3, 5))
    assert_plain_equal(FairPolicy(None, 4).select_victim(empty), "b::1",
                       "FairPolicy(None, 4).select_victim(a: two 0-block sequences, b: one 3-block sequence)", reveal=False)
    many = cache_of(*[make_sequence(f"a::{i}", 1, i) for i in range(6)], make_sequence("b::big", 7, 9))
    assert_plain_equal(FairPolicy(None, 8).select_victim(many), "b::big",
                       "FairPolicy(None, 8).select_victim(a: six 1-block sequences, b: one 7-block sequence)", reveal=False)
    plain = cache_of(make_sequence("x", 4, 3), make_sequence("y", 4, 1), make_sequence("t::1", 1, 0))
    assert_plain_equal(FairPolicy(None, 6).select_victim(plain), "y",
                       "FairPolicy(None, 6).select_victim(x, y: tenant default with 8 blocks; t::1)", reveal=False)
    guarded = cache_of(make_sequence("a::run", 6, 0), make_sequence("a::old", 1, 4), make_sequence("b::1", 2, 1))
    assert_plain_equal(FairPolicy(None, 8).select_victim(guarded, frozenset({"a::run", "zz::absent"})), "a::old",
                       "FairPolicy(None, 8).select_victim(..., protected={'a::run', 'zz::absent'})", reveal=False)
    before = snapshot(guarded)
    protected = frozenset({"a::run"})
    FairPolicy(None, 8).select_victim(guarded, protected)
    assert snapshot(guarded) == before and protected == frozenset({"a::run"}), "select_victim changed its input"
    check_type(FairPolicy({"a": 0}).select_victim({}), type(None), "FairPolicy({'a': 0}).select_victim({})")
    ### END HIDDEN TESTS


_check_task4_1_4_usage()

# %% nbgrader={"grade": true, "grade_id": "test_task4_1_5_victim_tenant", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that select_victim evicts LRU inside the tenant most over its quota, ties to the smaller name, passing over protected tenants."""


def _check_task4_1_5_victim_tenant():
    from course.checks import assert_plain_equal

    def cache_of(*seqs):
        return {seq.seq_id: seq for seq in seqs}

    cache = cache_of(make_sequence("a::1", 3, 5), make_sequence("a::2", 3, 1), make_sequence("b::1", 2, 0))
    # usage a = 6 blocks > quota 4, b = 2: evict a's least recently used sequence (not b::1, the global LRU).
    assert_plain_equal(FairPolicy({"a": 1.0, "b": 1.0}, 8).select_victim(cache), "a::2",
                       "FairPolicy({'a': 1, 'b': 1}, 8).select_victim(a: 3+3 blocks, b: 2)")
    tie = cache_of(make_sequence("b::1", 4, 0), make_sequence("a::1", 4, 3))
    assert_plain_equal(FairPolicy(None, 4).select_victim(tie), "a::1",
                       "FairPolicy(None, 4).select_victim(a and b both 2 blocks over) (a tie goes to the smaller tenant name)")
    passed = cache_of(make_sequence("a::1", 6, 5), make_sequence("b::1", 3, 9), make_sequence("b::2", 2, 8),
                      make_sequence("c::1", 1, 0))
    assert_plain_equal(FairPolicy(None, 6).select_victim(passed, frozenset({"a::1"})), "b::2",
                       "FairPolicy(None, 6).select_victim(a: 6 blocks, all protected; b: 5; c: 1) "
                       "(a is passed over for b, the next over-quota tenant)")
    larger = cache_of(make_sequence("a::1", 5, 0), make_sequence("b::1", 7, 4))
    assert_plain_equal(FairPolicy(None, 8).select_victim(larger), "b::1",
                       "FairPolicy(None, 8).select_victim(a: 5 blocks, b: 7) (b is more over its quota)")
    weighted = cache_of(make_sequence("a::1", 2, 4), make_sequence("a::2", 1, 3), make_sequence("b::1", 5, 9))
    assert_plain_equal(FairPolicy({"a": 3, "b": 1}, 8).select_victim(weighted), "b::1",
                       "FairPolicy({'a': 3, 'b': 1}, 8).select_victim(a: 3 blocks, b: 5)")
    assert_plain_equal(FairPolicy({"a": 0}, 8).select_victim(weighted), "a::2",
                       "FairPolicy({'a': 0}, 8).select_victim(a: 3 blocks, b: 5) (a weight-0 tenant is over quota with any block)")
    same_step = cache_of(make_sequence("a::y", 3, 2), make_sequence("a::x", 3, 2), make_sequence("b::1", 1, 0))
    assert_plain_equal(FairPolicy(None, 4).select_victim(same_step), "a::x",
                       "FairPolicy(None, 4).select_victim(a::y, a::x at the same step) (LRU ties go to the smaller seq_id)")
    hair = cache_of(make_sequence("a::1", 1, 5), make_sequence("b::1", 0, 1))
    assert_plain_equal(FairPolicy({"a": 1.0, "b": 1e-10}, 1).select_victim(hair), "a::1",
                       "FairPolicy({'a': 1.0, 'b': 1e-10}, 1).select_victim(a: 1 block, quota 1 / (1 + 1e-10)) "
                       "(over by 1e-10 is over: any overuse above 0 counts)")
    assert_plain_equal(FairPolicy({"a": 1.0, "b": 1e-15}, 1).select_victim(hair), "a::1",
                       "FairPolicy({'a': 1.0, 'b': 1e-15}, 1).select_victim(a: 1 block, quota 1 / (1 + 1e-15)) "
                       "(over by about 1e-15 is over too: no threshold, however small)")

    # Tiny weights are weights (only a sum of exactly 0 is refused); overuses 5e-9 apart are not a tie.
    tiny = cache_of(make_sequence("a::1", 4, 0), make_sequence("b::1", 1, 3))
    assert_plain_equal(FairPolicy({"a": 1e-12, "b": 3e-12}, 8).select_victim(tiny), "a::1",
                       "FairPolicy({'a': 1e-12, 'b': 3e-12}, 8).select_victim(a: 4 blocks, b: 1) (quotas 2 and 6)")
    near = cache_of(make_sequence("a::1", 15, 0), make_sequence("b::1", 15, 1))
    assert_plain_equal(FairPolicy({"a": 1.0, "b": 1 - 1e-9, "c": 2.0}, 40).select_victim(near), "b::1",
                       "FairPolicy({'a': 1, 'b': 1 - 1e-9, 'c': 2}, 40).select_victim(a: 15 blocks, b: 15) (b's quota is "
                       "smaller by 5e-9: its overuse is larger, not a tie)")
    assert_plain_equal(FairPolicy({"a": 1.0, "b": 1 - 1e-11, "c": 2.0}, 40).select_victim(near), "b::1",
                       "FairPolicy({'a': 1, 'b': 1 - 1e-11, 'c': 2}, 40).select_victim(a: 15 blocks, b: 15) (overuses "
                       "5e-11 apart are not a tie either: compare them exactly)")
    assert_plain_equal(FairPolicy({"a": 1.0, "b": 1 - 1e-15, "c": 2.0}, 40).select_victim(near), "b::1",
                       "FairPolicy({'a': 1, 'b': 1 - 1e-15, 'c': 2}, 40).select_victim(a: 15 blocks, b: 15) (overuses "
                       "9e-15 apart are not a tie: no rounding, however fine)")
    # A tenant passed over for being all protected does not win the tie it is in.
    tie = cache_of(make_sequence("a::1", 4, 0), make_sequence("b::1", 4, 1))
    assert_plain_equal(FairPolicy(None, 4).select_victim(tie, frozenset({"a::1"})), "b::1",
                       "FairPolicy(None, 4).select_victim(a: 4 blocks, b: 4, protected={'a::1'}) (a and b tie; a has "
                       "nothing to evict, so b's LRU goes)")
    # Ids in protected that are not cached are ignored: they protect nothing, nor do they fill the cache.
    one = cache_of(make_sequence("a::1", 4, 0))
    assert_plain_equal(FairPolicy(None, 4).select_victim(one, frozenset({"x::ghost"})), "a::1",
                       "FairPolicy(None, 4).select_victim(a::1, protected={'x::ghost'}) (x::ghost is not cached)")
    assert_plain_equal(FairPolicy(None, 4).select_victim(one, frozenset({"a::1", "x::ghost"})), None,
                       "FairPolicy(None, 4).select_victim(a::1, protected={'a::1', 'x::ghost'}) (every cached id is "
                       "protected)")

    ### BEGIN HIDDEN TESTS
    import random
    from fractions import Fraction

    from course.checks import replay


    def tenant_of(seq_id):
        return seq_id.split("::")[0] if "::" in seq_id else "default"


    def oracle(weights, total, rows, protected):
        """The expected victim and its tenant, from the test's own rows (seq_id -> (blocks, last_access_step)), never
        from the sequences that make_sequence returned."""
        tenants = set(weights) | {tenant_of(s) for s in rows}
        w = {t: Fraction(weights.get(t, 1.0)) for t in tenants}
        total_w = sum(w.values())
        quota = {t: w[t] / total_w * total for t in tenants}
        usage = {t: 0 for t in tenants}
        for s, (blocks, _) in rows.items():
            usage[tenant_of(s)] += blocks
        free = sorted((step, s) for s, (_, step) in rows.items() if s not in protected)
        best, best_over = None, None
        for t in sorted(tenants):
            over = usage[t] - quota[t]
            if over > 0 and any(tenant_of(s) == t for _, s in free) and (best is None or over > best_over):
                best, best_over = t, over
        for _, s in free:
            if best is None or tenant_of(s) == best:
                return s, best
        return None, best


    def dyadic_weights(rng, present, extra):
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


    def random_cache(rng, names):
        made = []
        for i in range(rng.randint(1, 14)):
            kind = rng.random()
            if kind < 0.15:
                seq_id = f"req{i:02d}"
            elif kind < 0.3:
                seq_id = f"{rng.choice(names)}::{i:02d}::turn{rng.randint(0, 3)}"
            else:
                seq_id = f"{rng.choice(names)}::{i:02d}"
            made.append(("__call__", (seq_id, rng.randint(0, 7), rng.randint(0, 6), rng.randint(1, 4))))
        # One replay makes every sequence of the case; the rows (blocks, last_access_step) are the test's own.
        cache = {args[0]: seq for (_, args), seq in zip(made, replay(make_sequence, made))}
        return cache, {args[0]: (args[1], args[2]) for _, args in made}


    rng = random.Random(4105)
    for case in range(200):
        names = rng.sample(["ann", "bob", "cat", "dan", "eve"], rng.randint(1, 4))
        cache, rows = random_cache(rng, names)
        present = sorted({tenant_of(s) for s in cache})
        if case % 5 == 4:
            weights = {t: rng.uniform(0.05, 4.0) for t in rng.sample(present + ["zz-idle"], rng.randint(0, len(present)))}
        else:
            weights = dyadic_weights(rng, present, ["idle"] if rng.random() < 0.3 else [])
        total = rng.randint(1, 60)
        ids = sorted(cache)
        protected = frozenset(s for s in ids if rng.random() < 0.25)
        snapshot = {s: (q.last_access_step, q.use_count, len(q.block_table)) for s, q in cache.items()}
        if sum(weights.get(t, 1.0) for t in set(weights) | set(present)) == 0:
            continue
        want, victim_tenant = oracle(weights, total, rows, protected)
        if victim_tenant is None:
            continue  # No over-quota tenant can give a sequence: part 4.1.6 checks the global LRU fallback.
        got = FairPolicy(dict(weights), total).select_victim(cache, protected)
        call = f"FairPolicy(...).select_victim on random case {case}"
        assert_plain_equal(got, want, call, reveal=False)
        assert {s: (q.last_access_step, q.use_count, len(q.block_table)) for s, q in cache.items()} == snapshot, \
            f"{call} changed the sequences"
    three = cache_of(make_sequence("c::1", 5, 0), make_sequence("b::1", 5, 1), make_sequence("a::1", 5, 2),
                     make_sequence("d::1", 1, 3))
    assert_plain_equal(FairPolicy(None, 8).select_victim(three), "a::1",
                       "FairPolicy(None, 8).select_victim(a, b, c tied at 3 blocks over)", reveal=False)
    ### END HIDDEN TESTS


_check_task4_1_5_victim_tenant()

# %% nbgrader={"grade": true, "grade_id": "test_task4_1_6_fallback", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that select_victim falls back to the global LRU unprotected sequence when no over-quota tenant can give one."""


def _check_task4_1_6_fallback():
    from course.checks import assert_plain_equal

    def cache_of(*seqs):
        return {seq.seq_id: seq for seq in seqs}

    cache = cache_of(make_sequence("a::1", 3, 5), make_sequence("a::2", 3, 1), make_sequence("b::1", 2, 0))
    assert_plain_equal(FairPolicy(None, 100).select_victim(cache), "b::1",
                       "FairPolicy(None, 100).select_victim(a: 3+3 blocks, b: 2) (nobody over quota: global LRU)")
    assert_plain_equal(FairPolicy({"a": 1.0, "b": 1.0}, 8).select_victim(cache, frozenset({"a::1", "a::2"})), "b::1",
                       "FairPolicy({'a': 1, 'b': 1}, 8).select_victim(..., protected={'a::1', 'a::2'}) "
                       "(a is over quota but all protected: global LRU)")
    exact = cache_of(make_sequence("a::1", 4, 5), make_sequence("b::1", 3, 0))
    assert_plain_equal(FairPolicy({"a": 1, "b": 1}, 8).select_victim(exact), "b::1",
                       "FairPolicy({'a': 1, 'b': 1}, 8).select_victim(a: 4 blocks = quota 4, b: 3) (exactly at quota is not over)")
    same_step = cache_of(make_sequence("b::2", 1, 4), make_sequence("a::9", 1, 4), make_sequence("c::1", 1, 7))
    assert_plain_equal(FairPolicy(None, 30).select_victim(same_step), "a::9",
                       "FairPolicy(None, 30).select_victim(b::2, a::9 at the same step) (global LRU ties go to the smaller seq_id)")

    ### BEGIN HIDDEN TESTS
    import random

    guarded = cache_of(make_sequence("a::1", 5, 3), make_sequence("a::2", 4, 2), make_sequence("b::1", 6, 9),
                       make_sequence("c::1", 1, 5), make_sequence("c::2", 1, 4))
    assert_plain_equal(FairPolicy(None, 9).select_victim(guarded, frozenset({"a::1", "a::2", "b::1"})), "c::2",
                       "FairPolicy(None, 9).select_victim(a and b over quota, all protected)", reveal=False)
    exact = cache_of(make_sequence("a::1", 2, 1), make_sequence("a::2", 2, 0), make_sequence("b::1", 4, 3))
    assert_plain_equal(FairPolicy({"a": 1, "b": 1}, 8).select_victim(exact), "a::2",
                       "FairPolicy({'a': 1, 'b': 1}, 8).select_victim(b exactly at quota)", reveal=False)
    from course.checks import replay

    rng = random.Random(4106)
    for case in range(300):
        made = []
        for i in range(rng.randint(1, 12)):
            seq_id = f"{rng.choice(['ann', 'bob', 'cat'])}::{i:02d}" if rng.random() < 0.8 else f"req{i:02d}"
            made.append(("__call__", (seq_id, rng.randint(0, 5), rng.randint(0, 4))))
        # One replay makes every sequence of the case.
        cache = {args[0]: seq for (_, args), seq in zip(made, replay(make_sequence, made))}
        protected = frozenset(s for s in sorted(cache) if rng.random() < 0.3)
        free = sorted((args[2], args[0]) for _, args in made if args[0] not in protected)  # The test's own steps.
        # Room for every block in every tenant's quota (the blocks each sequence was made with): nobody is over
        # quota, so the global LRU decides.
        total = 8 * sum(args[1] for _, args in made) + 8
        got = FairPolicy({"zz-idle": 1.0}, total).select_victim(cache, protected)
        assert_plain_equal(got, free[0][1] if free else None, f"FairPolicy(...).select_victim on random case {case} "
                           "(nobody over quota)", reveal=False)
    ### END HIDDEN TESTS


_check_task4_1_6_fallback()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task4_2_jain_index_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 4.2: jain_index (4 points)
#
# $$J = \frac{\left(\sum_i x_i\right)^2}{n \sum_i x_i^2}$$
#
# Write `jain_index(xs)`: Jain's fairness index of a list of non-negative numbers (Python ints, such as 2**62, whose
# square overflows int64; or floats; every value 0 or from 10**-100 to below 10**100, so that a float holds its
# square and the square of the sum), as a **float** (also for a list of ints). Return 1.0 for an empty list
# and for a list of zeros (nobody gets anything, so nobody gets less than another). Do not change `xs`.
#
# ## 任务 4.2：jain_index（4 分）
#
# $$J = \frac{\left(\sum_i x_i\right)^2}{n \sum_i x_i^2}$$
#
# 编写 `jain_index(xs)`：以 **float** 返回一组非负数（Python 的 int，例如 2**62，它的平方在 int64 中会溢出；或 float；每个值要么是 0，要么不小于 10**-100 且小于 10**100，所以 float 能容纳它的平方和总和的平方）的公平性指数（Jain）；即使元素都是 int，结果也是 float。
# 空列表和全零列表返回 1.0（谁都没得到，因此没有人比别人得到的少）。不要修改 `xs`。

# %% nbgrader={"grade": false, "grade_id": "task4_2_jain_index", "locked": false, "schema_version": 3, "solution": true, "task": false}
def jain_index(xs):
    """Return Jain's fairness index (sum x)^2 / (n * sum x^2) of a list of numbers, as a float.

    Args:
        xs: list of non-negative ints or floats. Not changed.

    Returns:
        A float in [1/n, 1]; 1.0 for an empty list or a list of zeros.
    """
    # TODO 4.2.1: the values as floats and the sum of their squares; return 1.0 when that sum is 0.
    # 提示：列表推导式可以把每个值转成 float，得到一个新列表（xs 保持不变）；空列表的平方和也是 0。
    # Hint: a list comprehension can turn every value into a float, in a new list (xs stays as it is); the sum of squares of
    #       [] is 0 too.
    ### BEGIN SOLUTION
    values = [float(x) for x in xs]
    square_sum = sum(x * x for x in values)
    if square_sum == 0:
        return 1.0
    ### END SOLUTION
    # TODO 4.2.2: return (sum x)^2 / (n * sum x^2).
    # 提示：n 是 len(values)；别忘了分母里的 n。
    # Hint: n is len(values); do not forget the n in the denominator.
    ### BEGIN SOLUTION
    return sum(values) ** 2 / (len(values) * square_sum)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task4_2_jain_index", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
"""Check that jain_index returns (sum x)^2 / (n sum x^2) as a float, and 1.0 for nothing to share."""


def _check_task4_2_jain_index():
    from course.checks import assert_plain_equal

    assert_plain_equal(jain_index([1, 1, 1]), 1.0, "jain_index([1, 1, 1]) (a float, also for ints)")
    assert_plain_equal(jain_index([1.0, 0.0]), 0.5, "jain_index([1.0, 0.0])")
    assert_plain_equal(jain_index([3, 1]), 0.8, "jain_index([3, 1])")
    assert_plain_equal(jain_index([7, 0, 0, 0]), 0.25, "jain_index([7, 0, 0, 0]) (one of four gets everything: 1/4)")
    assert_plain_equal(jain_index([]), 1.0, "jain_index([])")
    assert_plain_equal(jain_index([0, 0, 0]), 1.0, "jain_index([0, 0, 0])")
    xs = [2.0, 1.0]
    jain_index(xs)
    assert xs == [2.0, 1.0], "jain_index changed its input"
    ints = [3, 2**62 + 1]
    jain_index(ints)
    assert [(type(x), x) for x in ints] == [(int, 3), (int, 2**62 + 1)], (
        f"jain_index([3, 2**62 + 1]) changed its input to {ints!r} (turn the values into floats in a new list)")
    assert_plain_equal(jain_index([2**62, 1]), 0.5, "jain_index([2**62, 1]) (a Python int whose square "
                       "overflows int64)", rel_tol=1e-9)

    assert_plain_equal(jain_index([1e-7, 0]), 0.5, "jain_index([1e-7, 0]) (a tiny value is not a zero)")

    ### BEGIN HIDDEN TESTS
    import random
    from fractions import Fraction

    rng = random.Random(4202)
    for case in range(400):
        n = rng.randint(1, 12)
        if case % 3 == 0:
            xs = [rng.randint(0, 9) for _ in range(n)]
        elif case % 3 == 1:
            xs = [rng.uniform(0, 1) for _ in range(n)]
        else:
            xs = [rng.choice([0.0, 0.25, 1.0, 1e-3, 123.5]) for _ in range(n)]
        copy = list(xs)
        squares = sum(Fraction(x) ** 2 for x in xs)
        expected = 1.0 if squares == 0 else float(sum(Fraction(x) for x in xs) ** 2 / (len(xs) * squares))
        assert_plain_equal(jain_index(xs), expected, f"jain_index on random case {case}", rel_tol=1e-9, reveal=False)
        assert xs == copy, f"jain_index changed its input on random case {case}"
    assert_plain_equal(jain_index([5]), 1.0, "jain_index([5])")
    assert_plain_equal(jain_index([0.0]), 1.0, "jain_index([0.0])")
    assert_plain_equal(jain_index([2, 2]), 1.0, "jain_index([2, 2])")
    assert_plain_equal(jain_index([1, 2, 3, 4]), 100 / 120, "jain_index([1, 2, 3, 4])", reveal=False)
    for xs in ([2**32, 1], [10**12, 10**12, 0], [3 * 2**40, 2**62]):  # Python ints whose squares overflow int64.
        squares = sum(Fraction(x) ** 2 for x in xs)
        assert_plain_equal(jain_index(xs), float(sum(Fraction(x) for x in xs) ** 2 / (len(xs) * squares)),
                           f"jain_index({xs})", rel_tol=1e-9, reveal=False)
    ### END HIDDEN TESTS


_check_task4_2_jain_index()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task4_3_fair_victim_t_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 4.3: fair_victim_t (8 points)
#
# The same decision as `FairPolicy.select_victim`, on columns of metadata. Tenants are numbered in sorted
# name order and sequences sit in sorted-id order, so "the smaller tenant name" becomes **the smaller tenant
# index** and "the smaller seq_id" becomes **the smaller sequence index**. **Graded in parts:** 4.3.1 usage per
# tenant (2) · 4.3.2 the victim tenant (2) · 4.3.3 LRU, fallback and −1 (2) · 4.3.4 no Python loop (2).
#
# Write `fair_victim_t(tenant, num_blocks, last_access_step, weights, total_blocks, evictable)`:
#
# - `tenant`, `num_blocks`, `last_access_step`: int64 tensors of shape `[n]` (sequence $i$ belongs to tenant
#   `tenant[i]`, with `0 <= tenant[i] < T`); `evictable`: bool `[n]` (False for protected sequences);
#   `weights`: `[T]`, any real dtype, finite and >= 0, one weight per tenant (missing weights already
#   filled with 1.0); `total_blocks`: an int. All on one device; do not change any of them.
# - (4.3.1) Return −1 when nothing is evictable (before anything else). Usage per tenant with
#   `torch.bincount(..., weights=..., minlength=T)` or `Tensor.index_add_`, exactly (int64 or float64: block
#   counts reach $2^{40}$, which float32 rounds). An empty tenant (one that holds no sequence) has usage 0,
#   wherever its index is. The trap: **without `minlength`, `bincount` returns only `tenant.max() + 1` entries**,
#   fewer than $T$ when the last tenants are empty.
# - (4.3.2) Quotas in float64 as $w_t / \sum_j w_j \cdot B$, the sum taken in float64 too (float16 weights of
#   60,000 sum past float16's largest value); `ValueError` when the weights sum to 0. Among
#   tenants with overuse > 0 that have an evictable sequence, the largest overuse, ties to the smaller
#   tenant index.
# - (4.3.3) Return the index (a Python `int`) of the LRU evictable sequence of that tenant, or of all
#   evictable sequences when there is no such tenant; ties to the smaller index. Steps may be any int64, up to
#   $2^{63}-1$ (the trap of Task 3.5: a masked-out entry must not win a tie at the largest value).
# - (4.3.4) Any device; no Python loop over sequences or tenants (the test counts torch operations on 8
#   sequences of 2 tenants and on 4,096 sequences of 256 tenants; the part counts only where the victim is
#   right on both).
#
# Hints: `torch.where(mask, values, other)`, `.max()`, `torch.nonzero(mask)` (its first row is the smallest
# index); `int(...)` turns a one-element tensor into a Python int.
#
# ## 任务 4.3：fair_victim_t（8 分）
#
# 在元数据列上做出与 `FairPolicy.select_victim` 相同的决定。租户按名字排序编号，序列按 id 排序排列，因此“名字较小的租户” 变为**索引较小的租户**，“较小的 seq_id”变为**较小的序列索引**。**分部分计分：** 4.3.1 每个租户的占用（2）·
# 4.3.2 受害租户（2）· 4.3.3 LRU、兜底与 −1（2）· 4.3.4 不写 Python 循环（2）。
#
# 编写 `fair_victim_t(tenant, num_blocks, last_access_step, weights, total_blocks, evictable)`：
#
# - `tenant`、`num_blocks`、`last_access_step`：形状为 `[n]` 的 int64 张量（序列 $i$ 属于租户 `tenant[i]`，`0 <= tenant[i] < T`）；`evictable`：bool `[n]`（受保护的序列为 False）；`weights`：`[T]`，任意实数数据类型，有限且 >= 0，每个租户一个权重（缺失的权重已填为 1.0）；`total_blocks`：int。它们都在同一设备上；不要修改其中任何一个。
# - （4.3.1）没有可驱逐的序列时返回 −1（先于其他一切）。用 `torch.bincount(..., weights=..., minlength=T)` 或 `Tensor.index_add_` 精确地计算每个租户的占用（用 int64 或 float64：块数可达 $2^{40}$，float32 会把它舍入）。空租户（没有任何序列的租户）的占用为 0，不论它的索引在哪里。陷阱：**不写 `minlength` 时，`bincount` 只返回 `tenant.max() + 1` 项**，当编号最大的几个租户为空时少于 $T$ 项。
# - （4.3.2）以 float64 计算配额 $w_t / \sum_j w_j \cdot B$，权重之和也要用 float64 计算（60,000 这样的 float16 权重相加会超出 float16 的最大值）；权重之和为 0 时抛出 `ValueError`。在超额量 > 0 且拥有可驱逐序列的租户中取超额量最大的，平局时取索引较小的租户。
# - （4.3.3）以 Python `int` 返回该租户中 LRU 的可驱逐序列的索引；没有这样的租户时，在全部可驱逐序列中取 LRU；平局取较小索引。访问时刻可以是任意 int64，最大到 $2^{63}-1$（任务 3.5 的陷阱：不得让被掩码排除的项在最大值处的平局中胜出）。
# - （4.3.4）支持任意设备；不写遍历序列或租户的 Python 循环（测试会统计在 2 个租户的 8 个序列上和 256 个租户的 4,096 个序列上的 torch 运算次数；只有两组输入上的受害者都正确时，这部分才得分）。
#
# 提示：`torch.where(mask, values, other)`、`.max()`、`torch.nonzero(mask)`（其第一行就是最小索引）；`int(...)` 把单元素张量变成 Python int。

# %% nbgrader={"grade": false, "grade_id": "task4_3_fair_victim_t", "locked": false, "schema_version": 3, "solution": true, "task": false}
def fair_victim_t(tenant, num_blocks, last_access_step, weights, total_blocks, evictable):
    """Return the index of the fair-quota victim (as FairPolicy.select_victim), or -1.

    Args:
        tenant: int64 tensor [n], the tenant index (into ``weights``) of each sequence.
        num_blocks: int64 tensor [n], blocks held by each sequence.
        last_access_step: int64 tensor [n], logical time of each sequence's last access.
        weights: real tensor [T] (any dtype, finite, >= 0), one weight per tenant in sorted-name order.
        total_blocks: int, the cache size in blocks.
        evictable: bool tensor [n]; False marks a protected sequence.
        All tensors are on the same device; sequences are in sorted-id order. None is changed.

    Returns:
        A Python int: the victim's index, or -1 when no sequence is evictable. Ties between tenants
        go to the smaller tenant index, ties inside a tenant to the smaller sequence index.

    Raises:
        ValueError: when some sequence is evictable and the weights sum to 0.
    """
    num_tenants = weights.shape[0]
    # TODO 4.3.1: return -1 when nothing is evictable; then usage[T] (blocks per tenant, exact) and
    #             has_evictable[T] (bool: the tenant has an evictable sequence).
    # 提示：torch.zeros(T, dtype=torch.int64, device=...).index_add_(0, tenant, num_blocks)；或 bincount 加上 minlength=T。
    # Hint: torch.zeros(T, dtype=torch.int64, device=...).index_add_(0, tenant, num_blocks); or bincount with minlength=T.
    ### BEGIN SOLUTION
    if not bool(evictable.any()):
        return -1
    usage = torch.zeros(num_tenants, dtype=torch.int64, device=weights.device).index_add_(0, tenant, num_blocks)
    has_evictable = torch.zeros(num_tenants, dtype=torch.int64, device=weights.device).index_add_(
        0, tenant, evictable.to(torch.int64)) > 0
    ### END SOLUTION
    # TODO 4.3.2: quotas in float64 (ValueError when the weights sum to 0) and overuse; then mask = the evictable
    #             sequences of the victim tenant, or every evictable sequence when no tenant qualifies.
    # 提示：候选租户是超额量 > 0 且有可驱逐序列的租户；把非候选的超额量换成 -inf（torch.where）后取最大值；torch.nonzero 的第一行
    #       是取到最大值的租户中索引最小的那个。
    # Hint: a candidate tenant has overuse > 0 and an evictable sequence; replace the others' overuse with -inf
    #       (torch.where) and take the maximum; the first row of torch.nonzero is the smallest tenant index that reaches it.
    ### BEGIN SOLUTION
    weights = weights.to(torch.float64)
    total_weight = weights.sum()
    if float(total_weight) == 0.0:
        raise ValueError("the weights sum to 0: the quotas are undefined")
    quota = weights / total_weight * total_blocks
    overuse = usage.to(torch.float64) - quota
    candidate = (overuse > 0) & has_evictable
    mask = evictable
    if bool(candidate.any()):
        largest = torch.where(candidate, overuse, torch.full_like(overuse, float("-inf"))).max()
        victim_tenant = torch.nonzero(candidate & (overuse == largest))[0, 0]
        mask = evictable & (tenant == victim_tenant)
    ### END SOLUTION
    # TODO 4.3.3: return the index of mask's LRU sequence (smallest last_access_step, then smaller index) as an int.
    # 提示：先在掩码选中的序列里求最小的最近访问时刻，再用 torch.nonzero 找出第一个同时在掩码中、且时刻等于它的索引。
    # Hint: take the smallest last_access_step among the masked sequences, then torch.nonzero finds the first index that is
    #       in the mask and has that step.
    ### BEGIN SOLUTION
    oldest = last_access_step[mask].min()
    return int(torch.nonzero(mask & (last_access_step == oldest))[0, 0])
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task4_3_1_usage", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that fair_victim_t counts each tenant's blocks exactly, for every tenant, protected sequences included."""


def _check_task4_3_1_usage():
    from course.checks import assert_plain_equal
    from course.env import available_devices

    for device in available_devices():
        def t(values, dtype=torch.int64, device=device):
            return torch.tensor(values, dtype=dtype, device=device)

        def yes(n, device=device):
            return torch.ones(n, dtype=torch.bool, device=device)

        # Sequences a::1, a::2, b::1 as in Task 4.1: a (tenant 0) holds 6 blocks > quota 4.
        args = (t([0, 0, 1]), t([3, 3, 2]), t([5, 1, 0]), t([1.0, 1.0], torch.float64), 8)
        assert_plain_equal(fair_victim_t(*args, t([True, False, True], torch.bool)), 0,
                           f"fair_victim_t(a: 3+3 blocks, b: 2, weights [1, 1], 8, sequence 1 protected) on {device} "
                           f"(protected blocks still count)")
        blocks = (t([0, 1, 1, 1]), t([10, 1, 1, 1]), t([9, 1, 2, 3]), t([1.0, 1.0]), 16, yes(4))
        assert_plain_equal(fair_victim_t(*blocks), 0,
                           f"fair_victim_t(tenant 0: one 10-block sequence, tenant 1: three 1-block ones, 16) on {device} "
                           f"(usage is in blocks)")
        trailing = (t([0, 1, 0]), t([2, 1, 1]), t([4, 0, 3]), t([1.0, 1.0, 1.0]), 3, yes(3))
        assert_plain_equal(fair_victim_t(*trailing), 2,
                           f"fair_victim_t(tenants [0, 1, 0], weights of 3 tenants) on {device} "
                           f"(tenant 2 is empty: bincount needs minlength=3)")
        big = (t([0, 1, 1]), t([2**40, 2**40, 1]), t([7, 7, 7]), t([1.0, 1.0]), 2**41, yes(3))
        assert_plain_equal(fair_victim_t(*big), 1,
                           f"fair_victim_t(tenant 0: 2**40 blocks, tenant 1: 2**40 + 1, quotas 2**40) on {device} "
                           f"(float32 rounds 2**40 + 1)")
        columns = [t([0, 0, 1]), t([3, 3, 2]), t([5, 1, 0]), t([1.0, 1.0], torch.float64)]
        mask = t([True, False, True], torch.bool)
        fair_victim_t(*columns, 8, mask)
        assert [c.tolist() for c in columns] == [[0, 0, 1], [3, 3, 2], [5, 1, 0], [1.0, 1.0]] \
            and mask.tolist() == [True, False, True], f"fair_victim_t changed its input tensors on {device}"

    ### BEGIN HIDDEN TESTS
    for device in available_devices():
        def t(values, dtype=torch.int64, device=device):
            return torch.tensor(values, dtype=dtype, device=device)

        middle = (t([0, 0, 2]), t([1, 1, 5]), t([3, 4, 0]), t([1.0, 1.0, 1.0, 1.0]), 8, t([True, True, True], torch.bool))
        assert_plain_equal(fair_victim_t(*middle), 2, f"fair_victim_t with tenants 1 and 3 empty on {device}", reveal=False)
        zero_blocks = (t([0, 0, 1]), t([0, 0, 3]), t([0, 1, 2]), t([1.0, 1.0]), 4, t([True, True, True], torch.bool))
        assert_plain_equal(fair_victim_t(*zero_blocks), 2, f"fair_victim_t with 0-block sequences on {device}", reveal=False)
        many = (t([0] * 6 + [1]), t([1] * 6 + [7]), t(list(range(6)) + [9]), t([1.0, 1.0]), 8, t([True] * 7, torch.bool))
        assert_plain_equal(fair_victim_t(*many), 6, f"fair_victim_t(tenant 0: six 1-block sequences, tenant 1: one of 7) on {device}",
                           reveal=False)
        huge = (t([1, 0, 0]), t([2**45 + 1, 2**45, 1]), t([3, 1, 2]), t([1.0, 1.0], torch.float32), 2**46,
                t([True, True, True], torch.bool))
        assert_plain_equal(fair_victim_t(*huge), 1, f"fair_victim_t with 2**45 blocks on {device}", reveal=False)
    ### END HIDDEN TESTS


_check_task4_3_1_usage()

# %% nbgrader={"grade": true, "grade_id": "test_task4_3_2_victim_tenant", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that fair_victim_t picks the tenant most over its quota, ties to the smaller index, passing over protected tenants."""


def _check_task4_3_2_victim_tenant():
    from course.checks import assert_plain_equal, assert_raises
    from course.env import available_devices

    for device in available_devices():
        def t(values, dtype=torch.int64, device=device):
            return torch.tensor(values, dtype=dtype, device=device)

        def yes(n, device=device):
            return torch.ones(n, dtype=torch.bool, device=device)

        args = (t([0, 0, 1]), t([3, 3, 2]), t([5, 1, 0]), t([1.0, 1.0], torch.float64), 8)
        assert_plain_equal(fair_victim_t(*args, yes(3)), 1, f"fair_victim_t(a: 3+3 blocks, b: 2, weights [1, 1], 8) on {device}")
        assert_plain_equal(fair_victim_t(*args, t([False, False, True], torch.bool)), 2,
                           f"the same with tenant 0 all protected (passed over, global LRU) on {device}")
        tie = (t([0, 1]), t([4, 4]), t([3, 0]), t([1.0, 1.0]), 4, yes(2))
        assert_plain_equal(fair_victim_t(*tie), 0,
                           f"fair_victim_t(two tenants 2 blocks over each) on {device} (a tie goes to the smaller tenant index)")
        passed = (t([0, 1, 1, 2]), t([6, 3, 2, 1]), t([5, 9, 8, 0]), t([1.0, 1.0, 1.0]), 6, t([False, True, True, True], torch.bool))
        assert_plain_equal(fair_victim_t(*passed), 2,
                           f"fair_victim_t(tenant 0: 6 blocks, all protected; tenant 1: 5; tenant 2: 1; 6) on {device} "
                           f"(tenant 1 is next)")
        exact = (t([0, 1]), t([4, 3]), t([5, 0]), t([1.0, 1.0]), 8, yes(2))
        assert_plain_equal(fair_victim_t(*exact), 1,
                           f"fair_victim_t(tenant 0 exactly at quota 4) on {device} (exactly at quota is not over)")
        weighted = (t([0, 0, 1]), t([2, 1, 5]), t([4, 3, 9]), t([3.0, 1.0], torch.float32), 8, yes(3))
        assert_plain_equal(fair_victim_t(*weighted), 2, f"fair_victim_t(..., float32 weights [3, 1], 8) on {device}")
        # Quota 0 is (3 * 2**24 + 4) / 3 = 2**24 + 4/3 in float64, but 2**24 + 2 in float32: tenant 0 holds 2**24 + 2.
        rounding = (t([0, 1]), t([2**24 + 2, 1]), t([5, 0]), t([1.0, 2.0], torch.float32), 3 * 2**24 + 4, yes(2))
        assert_plain_equal(fair_victim_t(*rounding), 0,
                           f"fair_victim_t(tenant 0: 2**24 + 2 blocks, float32 weights [1, 2], 3 * 2**24 + 4) on {device} "
                           f"(quotas in float64: quota 0 is 2**24 + 4/3, which float32 rounds to 2**24 + 2)")
        assert_raises(ValueError, f"fair_victim_t(..., weights [0, 0], ...) on {device} (weights sum to 0)", fair_victim_t,
                      t([0, 1]), t([1, 1]), t([0, 1]), t([0.0, 0.0]), 4, yes(2))
        half = (t([0, 0, 1]), t([3, 2, 4]), t([5, 0, 9]), t([60000.0, 30000.0], torch.float16), 9, yes(3))
        assert_plain_equal(fair_victim_t(*half), 2, f"fair_victim_t(..., float16 weights [60000, 30000], 9) on {device} "
                           "(their sum overflows float16: sum them in float64; quotas 6 and 3, tenant 1 is over)")
        assert_plain_equal(fair_victim_t(t([0, 1]), t([3, 1]), t([0, 1]), t([1e-13, 1e-13], torch.float64), 4, yes(2)), 0,
                           f"fair_victim_t(..., weights [1e-13, 1e-13], 4) on {device} (tiny weights, but their sum is not 0)")
        close = (t([0, 1]), t([2**41 + 1, 2**41 + 3]), t([0, 1]), t([1.0, 1.0], torch.float64), 2, yes(2))
        assert_plain_equal(fair_victim_t(*close), 1, f"fair_victim_t(usage [2**41 + 1, 2**41 + 3], equal weights, 2) on {device} "
                           "(overuse in float64: float32 would round both to one value)")
        shares = (t([0, 1]), t([2**40 + 1, 2**41]), t([1, 0]), t([1.0, 2.0], torch.float64), 3 * 2**40, yes(2))
        assert_plain_equal(fair_victim_t(*shares), 0, f"fair_victim_t(usage [2**40 + 1, 2**41], float64 weights [1, 2], "
                           f"3 * 2**40) on {device} (the shares w / sum w in float64 too: tenant 0 is 1 block over)")

    for device in available_devices():
        def t(values, dtype=torch.int64, device=device):
            return torch.tensor(values, dtype=dtype, device=device)

        near = (t([0, 1]), t([15, 15]), t([0, 1]), t([1.0, 1 - 1e-9, 2.0], torch.float64), 40,
                torch.ones(2, dtype=torch.bool, device=device))
        assert_plain_equal(fair_victim_t(*near), 1, f"fair_victim_t(tenants 0 and 1: 15 blocks each, weights [1, 1 - 1e-9, "
                           f"2], 40) on {device} (tenant 1's quota is smaller by 5e-9: its overuse is larger, not a tie)")
        slight = (t([0, 1]), t([1, 0]), t([5, 1]), t([1.0, 1e-10], torch.float64), 1,
                  torch.ones(2, dtype=torch.bool, device=device))
        assert_plain_equal(fair_victim_t(*slight), 0, f"fair_victim_t(tenant 0: 1 block at step 5, tenant 1: none at step "
                           f"1, weights [1, 1e-10], 1) on {device} (tenant 0 is 1e-10 over its quota: over is over)")
        faint = (*slight[:3], t([1.0, 1e-15], torch.float64), 1, slight[5])
        assert_plain_equal(fair_victim_t(*faint), 0, f"fair_victim_t(tenant 0: 1 block at step 5, tenant 1: none at step "
                           f"1, weights [1, 1e-15], 1) on {device} (tenant 0 is about 1e-15 over: no threshold, however "
                           "small)")
        nearer = (*near[:3], t([1.0, 1 - 1e-15, 2.0], torch.float64), 40, near[5])
        assert_plain_equal(fair_victim_t(*nearer), 1, f"fair_victim_t(tenants 0 and 1: 15 blocks each, weights [1, "
                           f"1 - 1e-15, 2], 40) on {device} (overuses 9e-15 apart are not a tie: no rounding, however fine)")

    ### BEGIN HIDDEN TESTS
    import random
    from fractions import Fraction


    def oracle(tenant, blocks, steps, weights, total, evictable):
        n_t = len(weights)
        w_sum = sum(Fraction(w) for w in weights)
        quota = [Fraction(w) / w_sum * total for w in weights]
        usage = [0] * n_t
        for i in range(len(tenant)):
            usage[tenant[i]] += blocks[i]
        free = [i for i in range(len(tenant)) if evictable[i]]
        order = sorted(range(n_t), key=lambda k: (-(usage[k] - quota[k]), k))
        for k in order:
            mine = [i for i in free if tenant[i] == k]
            if usage[k] - quota[k] > 0 and mine:
                return min(mine, key=lambda i: (steps[i], i))
        return min(free, key=lambda i: (steps[i], i)) if free else -1


    def weights_power_of_two(rng, n_t):
        # Halves that add up to a power of two, so that every quota is exact in float64.
        halves = 2 * rng.choice([1, 2, 4, 8, 16])
        cuts = sorted(rng.randint(0, halves) for _ in range(n_t - 1))
        return [(b - a) / 2 for a, b in zip([0] + cuts, cuts + [halves])]


    rng = random.Random(4303)
    for device in available_devices():
        for case in range(300):
            n_t = rng.randint(1, 5)
            n = rng.randint(1, 14)
            tenant = [rng.randrange(n_t) for _ in range(n)]
            blocks = [rng.randint(0, 7) for _ in range(n)]
            steps = [rng.randint(0, 5) for _ in range(n)]
            evictable = [rng.random() < 0.75 for _ in range(n)]
            if case % 6 == 5:
                weights = [rng.uniform(0.05, 3.0) for _ in range(n_t)]
            elif case % 6 == 4:
                weights = [float(rng.randint(0, 1)) for _ in range(n_t)]
                if sum(weights) not in (1.0, 2.0, 4.0):
                    weights = [1.0] * n_t
            else:
                weights = weights_power_of_two(rng, n_t)
            total = rng.randint(1, 60)
            dtype = [torch.float64, torch.float32, torch.float64][case % 3]
            args = (torch.tensor(tenant, dtype=torch.int64, device=device), torch.tensor(blocks, dtype=torch.int64, device=device),
                    torch.tensor(steps, dtype=torch.int64, device=device),
                    torch.tensor(weights, dtype=torch.float64, device=device).to(dtype), total,
                    torch.tensor(evictable, dtype=torch.bool, device=device))
            if dtype == torch.float32:
                weights = [float(w) for w in args[3].cpu().tolist()]
            expected = oracle(tenant, blocks, steps, weights, total, evictable)
            assert_plain_equal(fair_victim_t(*args), expected, f"fair_victim_t on random case {case} ({device})", reveal=False)
            assert args[1].cpu().tolist() == blocks and args[5].cpu().tolist() == evictable, \
                f"fair_victim_t changed its input tensors on random case {case}"
        three = (torch.tensor([2, 1, 0, 3], device=device), torch.tensor([5, 5, 5, 1], device=device),
                 torch.tensor([0, 1, 2, 3], device=device), torch.ones(4, dtype=torch.float64, device=device), 8,
                 torch.ones(4, dtype=torch.bool, device=device))
        assert_plain_equal(fair_victim_t(*three), 2, f"fair_victim_t with three tenants tied on {device}", reveal=False)
        assert_raises(ValueError, f"fair_victim_t(..., int64 weights [0, 0, 0], ...) on {device}", fair_victim_t,
                      torch.tensor([0, 2], device=device), torch.tensor([1, 1], device=device),
                      torch.tensor([0, 1], device=device), torch.zeros(3, dtype=torch.int64, device=device), 4,
                      torch.ones(2, dtype=torch.bool, device=device))
        # int64 weights whose int64 sum overflows (3 * 2**62 > 2**63 - 1): quotas 2, 2 and 2, nobody over, global LRU.
        huge = (torch.tensor([0, 1], device=device), torch.tensor([1, 0], device=device), torch.tensor([5, 0], device=device),
                torch.full((3,), 2**62, dtype=torch.int64, device=device), 6, torch.ones(2, dtype=torch.bool, device=device))
        assert_plain_equal(fair_victim_t(*huge), 1, f"fair_victim_t(..., int64 weights [2**62, 2**62, 2**62], 6) on "
                           f"{device} (their int64 sum overflows: sum them in float64)", reveal=False)
    ### END HIDDEN TESTS


_check_task4_3_2_victim_tenant()

# %% nbgrader={"grade": true, "grade_id": "test_task4_3_3_lru", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that fair_victim_t returns the LRU index as an int, falls back to global LRU, and returns -1 when nothing is evictable."""


def _check_task4_3_3_lru():
    from course.checks import assert_plain_equal
    from course.env import available_devices

    for device in available_devices():
        def t(values, dtype=torch.int64, device=device):
            return torch.tensor(values, dtype=dtype, device=device)

        nobody = (t([0, 0, 1]), t([3, 3, 2]), t([5, 1, 0]), t([1, 1]), 100, t([True, True, True], torch.bool))
        assert_plain_equal(fair_victim_t(*nobody), 2, f"fair_victim_t(..., total_blocks=100) (nobody over: global LRU) on {device}")
        lru_tie = (t([0, 0, 0]), t([1, 1, 1]), t([2, 2, 2]), t([1.0]), 1, t([False, True, True], torch.bool))
        assert_plain_equal(fair_victim_t(*lru_tie), 1, f"fair_victim_t(equal last_access_step) on {device} (tie: smaller index)")
        inside = (t([0, 0, 0, 1]), t([2, 2, 2, 1]), t([6, 4, 8, 0]), t([1.0, 1.0]), 4, t([True, True, True, True], torch.bool))
        assert_plain_equal(fair_victim_t(*inside), 1, f"fair_victim_t(tenant 0 over quota, steps [6, 4, 8]) on {device} (its LRU)")
        assert_plain_equal(fair_victim_t(t([0, 1]), t([3, 3]), t([1, 0]), t([1.0, 1.0]), 4, t([False, False], torch.bool)), -1,
                           f"fair_victim_t(nothing evictable) on {device}")
        assert_plain_equal(fair_victim_t(t([]), t([]), t([]), t([1.0, 1.0]), 4, t([], torch.bool)), -1,
                           f"fair_victim_t(no sequence at all) on {device}")
        assert_plain_equal(fair_victim_t(t([0, 1]), t([3, 3]), t([1, 0]), t([0.0, 0.0]), 4, t([False, False], torch.bool)), -1,
                           f"fair_victim_t(nothing evictable, weights [0, 0]) on {device} (-1 before anything else)")
        latest = (t([0, 1, 1]), t([1, 5, 5]), t([2**63 - 1] * 3), t([1.0, 1.0]), 4, t([True, False, True], torch.bool))
        assert_plain_equal(fair_victim_t(*latest), 2, f"fair_victim_t(every step 2**63 - 1, sequence 1 protected) on {device} "
                           "(a masked-out sequence must not win the tie at the largest step)")
        large = (t([0, 0, 0]), t([1, 1, 1]), t([2**62 + 3, 2**62 + 1, 2**62 + 2]), t([1.0]), 3, t([True, True, True], torch.bool))
        assert_plain_equal(fair_victim_t(*large), 1, f"fair_victim_t(steps [2**62 + 3, 2**62 + 1, 2**62 + 2]) on {device} "
                           "(int64 steps compared exactly: float64 cannot tell them apart)")
        earliest = (t([0, 0]), t([1, 1]), t([-(2**63), 0]), t([1.0]), 2, t([True, True], torch.bool))
        assert_plain_equal(fair_victim_t(*earliest), 0, f"fair_victim_t(steps [-(2**63), 0]) on {device} (the smallest "
                           "int64 is a step too: negating it gives itself again)")

    ### BEGIN HIDDEN TESTS
    import random

    rng = random.Random(4333)
    for device in available_devices():
        for case in range(200):
            n = rng.randint(0, 14)
            one_tenant = case % 2 == 0
            n_t = 1 if one_tenant else rng.randint(2, 4)
            tenant = [rng.randrange(n_t) for _ in range(n)]
            blocks = [rng.randint(0, 7) for _ in range(n)]
            # Large steps that float64 rounds together, and the smallest int64, which negation gives back.
            base = rng.choice([0, 0, 2**53, 2**62, 2**63 - 6, -(2**63)])
            steps = [base + rng.randint(0, 5) for _ in range(n)]
            evictable = [rng.random() < 0.7 for _ in range(n)]
            # One tenant, or room for everyone: the victim is the LRU of every evictable sequence.
            total = rng.randint(1, 60) if one_tenant else 8 * sum(blocks) + 8
            free = [i for i in range(n) if evictable[i]]
            expected = min(free, key=lambda i: (steps[i], i)) if free else -1
            args = (torch.tensor(tenant, dtype=torch.int64, device=device), torch.tensor(blocks, dtype=torch.int64, device=device),
                    torch.tensor(steps, dtype=torch.int64, device=device), torch.ones(n_t, dtype=torch.float64, device=device),
                    total, torch.tensor(evictable, dtype=torch.bool, device=device))
            assert_plain_equal(fair_victim_t(*args), expected, f"fair_victim_t on random case {case} ({device})", reveal=False)
    ### END HIDDEN TESTS


_check_task4_3_3_lru()

# %% nbgrader={"grade": true, "grade_id": "test_task4_3_4_no_loop", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that fair_victim_t finds the right victim among 8 sequences of 2 tenants and 4,096 of 256, with about as many torch operations on both."""


def _check_task4_3_4_no_loop():
    from fractions import Fraction

    from course.checks import assert_no_python_loop, assert_plain_equal

    def loop_args(n, num_tenants):
        g = torch.Generator().manual_seed(n)
        return (torch.randint(0, num_tenants, (n,), generator=g), torch.randint(1, 5, (n,), generator=g),
                torch.randint(0, 100, (n,), generator=g), torch.ones(num_tenants, dtype=torch.float64), n,
                torch.ones(n, dtype=torch.bool))

    def victim(args):
        # Every sequence is evictable and every weight is 1: the LRU sequence of the tenant furthest over its quota.
        tenant, blocks, steps = (column.tolist() for column in args[:3])
        num_tenants, total = len(args[3]), args[4]
        usage = [0] * num_tenants
        for owner, count in zip(tenant, blocks):
            usage[owner] += count
        overuse = [used - Fraction(total, num_tenants) for used in usage]
        worst = max(range(num_tenants), key=lambda k: (overuse[k], -k))
        pool = [i for i in range(len(tenant)) if tenant[i] == worst] if overuse[worst] > 0 else range(len(tenant))
        return min(pool, key=lambda i: (steps[i], i))

    def assert_right_without_loop(small, large, call):
        # Counting operations rewards only a function that decides right: a stub that returns 0 makes none at all.
        for args in (small, large):
            tensors = [column for column in args if type(column) is torch.Tensor]
            expected, before = victim(args), [tensor.clone() for tensor in tensors]
            assert_plain_equal(fair_victim_t(*args), expected, f"{call} on {args[4]} sequences of {len(args[3])} tenants")
            assert all(map(torch.equal, before, tensors)), \
                f"{call} changed its input tensors ({args[4]} sequences of {len(args[3])} tenants)"
        assert_no_python_loop(fair_victim_t, small, large, call)

    assert_right_without_loop(loop_args(8, 2), loop_args(4096, 256), "fair_victim_t")

    ### BEGIN HIDDEN TESTS
    assert_right_without_loop(loop_args(8, 4), loop_args(4096, 4), "fair_victim_t (more sequences)")
    assert_right_without_loop(loop_args(512, 2), loop_args(512, 400), "fair_victim_t (more tenants)")
    ### END HIDDEN TESTS


_check_task4_3_4_no_loop()

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
# 两个租户共享一个 128 块的前缀缓存。租户 **A** 用一次性的长提示词淹没缓存：4 块系统提示词（会复用）加上一篇 28 块、之后再也不会出现的文档。租户 **B** 复用一个稳定的工作集：1 块系统提示词加上 10 个 5 块上下文之一（共 51 块，远小于缓存的一半）。
# 每个提示词片段是一个名为 `tenant::segment` 的缓存序列；请求命中已缓存片段的块，正在运行的请求的各片段在插入缺失片段时受保护。
#
# 下面的回放是本 notebook 自带的一个小循环（课程的回放引擎基于块哈希工作，而公平驱逐需要 seq_id 中带有租户名）。
# 对每个策略，它报告每个租户的命中率（按块计），以及 $x_t$ 的公平性指数（Jain）：$x_t$ 是该租户的命中率除以它**独自使用一个 $\lfloor\text{quota}_t\rfloor$ 块的私有缓存**（LRU）时的命中率，即它应得的命中率。LRU 和 LFU 以相等的份额为基准。

# %%
import math
import random
from collections import Counter

import matplotlib.pyplot as plt

from course.plots import label

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
print(f"{'policy':<16}{'hit A':>8}{'hit B':>8}{'B / its entitlement':>22}{'Jain':>8}")
for name, (policy, entitled) in configs.items():
    results[name] = replay_tenants(trace, CAPACITY, policy)
    ratio = results[name]["hit_ratio"]
    print(f"{name:<16}{ratio['A']:>8.3f}{ratio['B']:>8.3f}{ratio['B'] / entitled['B']:>22.3f}"
          f"{fairness(results[name], entitled):>8.3f}")
print(f"entitled hit ratio of B: {equal['B']:.3f} alone in 64 blocks, "
      f"{configs['Fair A:B = 3:1'][1]['B']:.3f} alone in 32 blocks")

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
names = list(results)
for offset, tenant in ((-0.2, "A"), (0.2, "B")):
    axes[0].bar([i + offset for i in range(len(names))], [results[n]["hit_ratio"][tenant] for n in names],
                width=0.4, label=label(f"tenant {tenant}", f"租户 {tenant}"))
axes[0].set_xticks(range(len(names)), names, rotation=15)
axes[0].set_ylabel(label("hit ratio (fraction of blocks)", "命中率（按块计）"))
axes[0].set_title(label("Per-tenant hit ratio, 128-block cache", "各租户的命中率，128 块缓存"))
axes[0].legend()
jain = [fairness(results[n], configs[n][1]) for n in names]
axes[1].bar(names, jain, color="tab:green", label=label("Jain's index", "公平性指数（Jain）"))
axes[1].axhline(0.5, color="gray", linestyle=":", label=label("1/n (one tenant gets all)", "1/n（一个租户得到全部）"))
axes[1].set_ylim(0, 1.05)
axes[1].set_ylabel(label("Jain's index (1 = fair)", "公平性指数（1 = 公平）"))
axes[1].set_title(label("Fairness of hit ratio relative to entitlement", "命中率相对应得值的公平性"))
axes[1].tick_params(axis="x", rotation=15)
axes[1].legend(loc="lower right")
plt.tight_layout()
plt.show()


# %% [markdown]
# **What to see.** With a correct `FairPolicy` the cell above prints these numbers (the trace is seeded).
# Under LRU the flood pushes many of B's contexts out before B comes back to them: B's hit ratio is 0.450,
# 0.456 of the 0.986 it gets alone in its own half of the cache (64 blocks), and Jain's index drops to
# 0.878. LFU also protects B here (0.952), but by accident: A's documents are used once, so they have the
# lowest use counts. LFU knows nothing about tenants: it cannot express weights, and a tenant whose entries
# are all hot keeps them whatever its share. Fair quota keeps A inside its share: A's new document makes A
# the over-quota tenant, A evicts its own old documents, B's working set stays (0.986, exactly its
# entitlement), and the index is 1.000. With weights 3:1 for A, B is entitled to only 32 blocks, fewer than
# its working set of 51: B's hit ratio falls to 0.736, yet stays above the 0.644 it would get alone in a
# private 32-block cache (ratio 1.142), because A does not fill its quota all the time; the index is 0.996.
# A's hit ratio is 0.125 under every policy: only its 4-block system prompt is ever reused (4 of every 32
# blocks), so fairness costs A nothing here. (The replay admits a new sequence before it evicts, so the
# blocks being allocated count in their tenant's usage.)
#
# **看什么。** 若你的 `FairPolicy` 正确，上面的单元打印的就是这里引用的数字（访问轨迹使用固定的随机种子）。在 LRU 下，洪水在 B 回来之前就把 B 的许多上下文挤了出去：B 的命中率是 0.450，只是它独自使用半个缓存（64 块）时命中率 0.986 的 0.456 倍，公平性指数降到 0.878。LFU 在这里也保护了 B（0.952），但只是碰巧：A 的文档只使用一次，因此使用次数最低。LFU 对租户一无所知：它无法表达权重，而一个所有条目都很热的租户不论份额多少都能保住它们。公平配额把 A 限制在它的份额内：A 的新文档使 A 成为超额租户，A 驱逐自己的旧文档，B 的工作集得以保留（0.986，正好等于它应得的命中率），指数为 1.000。当 A:B 的权重为 3:1 时，B 只应得 32 块，少于它 51 块的工作集：B 的命中率降到 0.736，但仍高于它独自使用一个 32 块私有缓存时的 0.644（比值 1.142），因为 A 并不总是用满自己的配额；指数为 0.996。A 的命中率在每个策略下都是 0.125：只有它 4 块的系统提示词会被复用（每 32 块中的 4 块），所以在这里公平对 A 没有代价。（回放先接纳新序列再驱逐，因此正在分配的块计入其租户的占用。）
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
    ax.stackplot(steps, *occupancy.values(), labels=[label(f"tenant {t}", f"租户 {t}") for t in occupancy], alpha=0.8)
    ax.axhline(CAPACITY, color="black", linewidth=1, label=label("capacity", "容量"))
    for level in quota_lines:
        ax.axhline(level, color="black", linestyle="--", linewidth=1, label=label("quota of A", "A 的配额"))
    ax.set_ylim(0, CAPACITY * 1.3)
    ax.set_xlabel(label("request number", "请求序号"))
    ax.set_ylabel(label("blocks held", "占用块数"))
    ax.set_title(title)
    ax.legend(loc="upper left", ncol=4, fontsize="small")


fig, axes = plt.subplots(1, 2, figsize=(11, 3.4), sharey=True)
plot_occupancy(axes[0], results["LRU"], label("LRU: the flood takes the cache", "LRU：洪水占满缓存"), [CAPACITY / 2])
plot_occupancy(axes[1], results["Fair A:B = 1:1"], label("Fair quota 1:1: B keeps its working set", "公平配额 1:1：B 保住工作集"),
               [CAPACITY / 2])
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Experiment 3: move the weights | 实验 3：调整权重
#
# Each slider is one tenant's weight. Every change re-runs the replay with your `FairPolicy` and redraws the
# hit ratios and the occupancy. Try giving B almost nothing: its quota shrinks below its working set of 51
# blocks (the working set no longer fits in its quota), so B keeps evicting its own contexts. With one weight
# at 0, that tenant's quota is 0 and any block it holds is over quota. With both weights at 0 the quotas are
# undefined: `FairPolicy` raises `ValueError` and the cell shows its message instead of a plot.
#
# 每个滑块是一个租户的权重。每次改动都会用你的 `FairPolicy` 重新回放，并重画命中率和占用。试着几乎不给 B 权重：它的配额缩小到 51 块的工作集以下（工作集超出了它的配额，装不下了），于是 B 不断驱逐自己的上下文。一个权重为 0 时，该租户的配额为 0，它占用的任何块都算超额。两个权重都为 0 时配额没有定义：`FairPolicy` 抛出 `ValueError`，单元显示这条消息而不是图。

# %%
import ipywidgets as widgets
from IPython.display import display

sliders = {t: widgets.FloatSlider(value=1.0, min=0.0, max=5.0, step=0.25, description=f"weight {t}")
           for t in ("A", "B")}
output = widgets.Output()


def rerun(change=None):
    weights = {t: slider.value for t, slider in sliders.items()}
    with output:
        output.clear_output(wait=True)
        try:
            result = replay_tenants(trace, CAPACITY, FairPolicy(weights, CAPACITY))
        except ValueError as error:
            print(f"FairPolicy raised ValueError: {error}")
            return
        total = sum(weights.values())
        quota = {t: w / total * CAPACITY for t, w in weights.items()}
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.2), gridspec_kw={"width_ratios": [1, 2.5]})
        ratio = result["hit_ratio"]
        axes[0].bar(list(ratio), list(ratio.values()), color=["tab:blue", "tab:orange"])
        axes[0].set_ylim(0, 1)
        axes[0].set_ylabel(label("hit ratio (fraction of blocks)", "命中率（按块计）"))
        axes[0].set_xlabel(label("tenant", "租户"))
        axes[0].set_title(label("Hit ratio per tenant", "各租户的命中率"))
        plot_occupancy(axes[1], result, label(f"Occupancy, quotas A={quota['A']:.0f}, B={quota['B']:.0f} blocks",
                                              f"占用，配额 A={quota['A']:.0f}、B={quota['B']:.0f} 块"), [quota["A"]])
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
# `fair_victim_t` on the columns choose the same sequence. The cell prints the number of torch operations
# `fair_victim_t` makes (a count, the same on every machine: a few dozen, whatever the number of
# sequences) and the median of five timings of each version, with their ratio. The timings run on one CPU
# thread (or on the GPU when there is one): the dict version is single-threaded Python, and on a shared,
# busy CPU torch's threads would mostly wait for each other. Times vary from run to run; the ratio much less.
#
# 一个包含 100,000 个序列、8 个租户的随机缓存：字典上的 `FairPolicy.select_victim` 与列上的 `fair_victim_t` 选出同一个序列。
# 单元打印 `fair_victim_t` 所做的 torch 运算次数（这是一个计数，在任何机器上都相同：无论序列有多少，都只有几十次），以及两个版本各计时五次的中位数和两者之比。计时只用一个 CPU 线程（有 GPU 时在 GPU 上）：字典版本是单线程的 Python，而在共享且繁忙的 CPU 上，torch 的多个线程大多在互相等待。每次运行的时间会有波动，比值则稳定得多。

# %%
import statistics
import time

from course.checks import count_torch_calls

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
columns = [c.to(DEVICE) for c in (tenant_col, blocks_col, steps_col, weights_col)]
everyone = torch.ones(n, dtype=torch.bool, device=DEVICE)


def median_seconds(run, repeats=5):
    """The median wall time of ``repeats`` calls of ``run`` (the GPU is synchronized around each)."""
    times = []
    for _ in range(repeats):
        if DEVICE.type == "cuda":
            torch.cuda.synchronize()
        started = time.perf_counter()
        run()
        if DEVICE.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


dict_choice = policy.select_victim(sequences)
index = fair_victim_t(*columns, total_blocks, everyone)
_, operations = count_torch_calls(fair_victim_t, *columns, total_blocks, everyone)
threads = torch.get_num_threads()
# Both versions on one CPU core: the dict version is single-threaded Python, and on a shared CPU torch's
# threads wait for each other.
torch.set_num_threads(1)
try:
    dict_s = median_seconds(lambda: policy.select_victim(sequences))
    tensor_s = median_seconds(lambda: fair_victim_t(*columns, total_blocks, everyone))
finally:
    torch.set_num_threads(threads)
print(f"dict version:   {dict_choice}  (median {dict_s * 1e3:.1f} ms)")
print(f"tensor version: {ids[index]}  (median {tensor_s * 1e3:.1f} ms on {DEVICE}, one CPU thread)")
print(f"same victim: {dict_choice == ids[index]}; the tensor version is {dict_s / tensor_s:.0f} times faster here")
print(f"fair_victim_t made {operations} torch operations for {n:,} sequences; the dict version visits every "
      f"sequence in Python")

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
# - **共享缓存中的加权配额。** 多租户键值缓存给每个租户保留一份内存，允许其他租户使用闲置的份额，并优先从超出份额的租户驱逐（Memshare，USENIX ATC 2017）；FairRide（NSDI 2016）研究多个共享数据的用户如何公平地共享一个缓存。vLLM、SGLang 等 LLM 服务引擎并不按租户划分 KV 缓存：它们按新近度驱逐（vLLM 的空闲块队列、SGLang 在基数树叶子上的 LRU），这正是实验 1 中吵闹的邻居问题的来源。
# - **虚拟 token 计数器（Virtual Token Counter，VTC）。** Sheng 等人（OSDI 2024）为每个客户端维护一个已获服务量的计数器（输入与输出 token 加权计），总是优先服务有积压请求且计数最小的客户端，从而公平地调度 LLM 请求。与本 notebook 一样，它统计的是消耗显存与算力的资源（token，本 notebook 中是块），而不是请求的个数。
#
# ## Summary | 小结
#
# **Remember:** fair eviction asks "which tenant is most over its weighted share, counted in blocks?" first,
# and "which of its sequences is least recently used?" second; when nobody is over quota, it is plain LRU.
#
# **一句话记住：** 公平驱逐先问“哪个租户超出其加权份额（按块计）最多？”，再问“它的哪个序列最久未被使用？”；没有租户超额时，它就是普通的 LRU。
#
# ## Prerequisites and further reading | 前置与相关阅读
#
# - **Prerequisites:** notebook 01 (quotas, overuse, ties to the smaller name, ranking on tensors), notebook 02
#   (`SequenceKVCache`, `num_blocks()`) and notebook 03 (`EvictionPolicy`, LRU and LFU).
# - **Further reading:** Jain, Chiu and Hawe (1984) for the fairness index and its properties; Memshare (2017)
#   and FairRide (2016) for fair sharing of caches; Sheng et al. (2024) for fairness of LLM serving.
# - Next: [05. KV cache scheduler](../05_scheduler_sim/05_scheduler_sim.ipynb), which decides which requests
#   run, not only which blocks go.
#
# - **前置知识：** notebook 01（配额、超额量、平局取名字较小者、张量上的排序），notebook 02（`SequenceKVCache`、`num_blocks()`），notebook 03（`EvictionPolicy`、LRU 与 LFU）。
# - **相关阅读：** Jain、Chiu 与 Hawe（1984）关于公平性指数及其性质的报告；Memshare（2017）与 FairRide（2016）关于公平共享缓存；Sheng 等（2024）关于 LLM 服务的公平性。
# - 下一节：[05. KV 缓存调度器](../05_scheduler_sim/05_scheduler_sim.ipynb)，它不仅决定哪些块被驱逐，还决定哪些请求运行。
#
# ## References | 参考文献
#
# - Sheng, Y., Cao, S., Li, D., Zhu, B., Li, Z., Zhuo, D., Gonzalez, J. E., Stoica, I. "Fairness in Serving Large Language Models." OSDI 2024 (Virtual Token Counter).
# - Jain, R., Chiu, D.-M., Hawe, W. "A Quantitative Measure of Fairness and Discrimination for Resource Allocation in Shared Computer Systems." DEC-TR-301, 1984.
# - Pu, Q., Li, H., Zaharia, M., Ghodsi, A., Stoica, I. "FairRide: Near-Optimal, Fair Cache Sharing." NSDI 2016.
# - Cidon, A., Rushton, D., Rumble, S. M., Stutsman, R. "Memshare: a Dynamic Multi-tenant Key-value Cache." USENIX ATC 2017.
# - Kwon, W., et al. "Efficient Memory Management for Large Language Model Serving with PagedAttention." SOSP 2023 (vLLM).
# - Zheng, L., et al. "SGLang: Efficient Execution of Structured Language Model Programs." NeurIPS 2024 (RadixAttention).
# - The seed designs: the "KV Eviction formula-to-code" walkthrough (LLM-REVIEW) and the "KV Cache Scheduling" chapter of Datawhale's llm-algo-leetcode (text CC BY 4.0, code Apache-2.0).
