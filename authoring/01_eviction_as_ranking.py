# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: nbgrader,given,tags,-all
#     formats: source/01_eviction_as_ranking//ipynb,authoring//py:percent
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
# # 01. Eviction as ranking | 驱逐即排序
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/kvcache-course/kv-cache-eviction/blob/main/release/01_eviction_as_ranking/01_eviction_as_ranking.ipynb)
# [![ModelScope](https://img.shields.io/badge/ModelScope-Open%20from%20URL-624aff)](https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/01_eviction_as_ranking/01_eviction_as_ranking.ipynb)
# [![GitHub](https://img.shields.io/badge/GitHub-release%2F01_eviction_as_ranking-black)](https://github.com/kvcache-course/kv-cache-eviction/blob/main/release/01_eviction_as_ranking/01_eviction_as_ranking.ipynb)
#
# **Difficulty:** ★☆☆ introductory · **Time:** about 60 minutes · **Points:** 22 · **GPU:** tasks 1.6–1.8 run on CUDA when a GPU is present; everything also runs on the CPU.
#
# **难度：** ★☆☆ 入门 · **用时：** 约 60 分钟 · **总分：** 22 · **GPU：** 任务 1.6–1.8 在有 GPU 时于 CUDA 上运行；所有内容也都能在 CPU 上运行。
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
# 1. state any eviction policy as a ranking: give every cached sequence $s$ a value, evict the lowest;
# 2. break ties with lexicographic keys so that a policy is deterministic;
# 3. compute each tenant's fair share of a cache and find the tenant that uses more than its share;
# 4. do the same ranking on PyTorch tensors, without a Python loop, on any device.
#
# 完成本 notebook 后，你能够：
# 1. 把任何驱逐策略表述为排序：给每个缓存序列 $s$ 一个价值，驱逐价值最低者；
# 2. 用字典序键打破平局，使策略结果确定；
# 3. 计算每个租户在缓存中的公平份额，并找出超出份额的租户；
# 4. 在 PyTorch 张量上完成同样的排序，不写 Python 循环，可在任意设备上运行。
#
# ## The formulas | 公式
#
# **Victim.** A KV cache is full and a new request needs blocks. Every policy in this course answers one
# question: which cached sequence is worth least?
#
# $$\text{victim} = \arg\min_{s} \text{Value}(s) = \arg\max_{s} \text{EvictScore}(s)$$
#
# LRU uses $\text{Value}(s) = t_\text{last}(s)$, the logical time of the last access; LFU uses the pair
# $(\text{use\_count}(s), t_\text{last}(s))$. Pairs compare **lexicographically**: the first entries decide,
# and the second entry only breaks ties of the first. A final tie-break on the sequence id makes the answer
# unique: among equal values, the smaller id goes first.
#
# **受害者（被驱逐者）。** KV 缓存已满，新请求需要块。本课程中的每个策略都回答同一个问题：哪个缓存序列价值最低？
# LRU 取 $\text{Value}(s) = t_\text{last}(s)$（最近一次访问的逻辑时间）；LFU 取二元组
# $(\text{use\_count}(s), t_\text{last}(s))$。二元组按**字典序**比较：先比第一项，第一项相等时才比第二项。
# 最后再按序列 id 打破平局，使答案唯一：价值相同时，id 较小者先被驱逐。
#
# **Fair quota.** When tenants (users, applications) share one cache of $B$ blocks with weights $w_t$:
#
# $$\text{quota}_t = \frac{w_t}{\sum_j w_j}\, B, \qquad \text{overuse}_t = u_t - \text{quota}_t,$$
#
# where $u_t$ is the number of blocks tenant $t$ holds. The tenant to evict from is
# $\arg\max_t \text{overuse}_t$ over the tenants with $\text{overuse}_t > 0$; when nobody is over quota, a global
# policy decides.
#
# **公平配额。** 多个租户以权重 $w_t$ 共享一个容量为 $B$ 块的缓存时，租户 $t$ 的配额与超额量如上式，其中 $u_t$ 是
# 租户 $t$ 占用的块数。驱逐对象所在的租户是超额量 $\text{overuse}_t > 0$ 的租户中超额最多的一个；没有租户超额时，由全局策略决定。

# %% [markdown] nbgrader={"grade": false, "grade_id": "task1_1_select_victim_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 1.1: select_victim (2 points)
#
# $$\text{victim} = \arg\min_s \text{Value}(s)$$
#
# Write `select_victim(values)`: `values` maps a sequence id to its value, a number or a tuple of numbers
# (tuples compare lexicographically, as Python compares them). Return the id with the smallest value; on a
# tie, the smaller id; `None` for an empty dict. Do not change `values`.
#
# Hint: `min` takes a `key` function, and a key can be a tuple.
#
# ## 任务 1.1：select_victim（2 分）
#
# 编写 `select_victim(values)`：`values` 把序列 id 映射到其价值（数字或数字元组，元组按 Python 的字典序比较）。
# 返回价值最小的 id；平局时返回较小的 id；字典为空时返回 `None`。不要修改 `values`。
#
# 提示：`min` 接受 `key` 函数，而 key 可以是一个元组。

# %% nbgrader={"grade": false, "grade_id": "task1_1_select_victim", "locked": false, "schema_version": 3, "solution": true, "task": false}
def select_victim(values):
    """Return the key of the smallest value; ties go to the smaller key.

    Args:
        values: dict from sequence id (str) to its value: an int, a float or a tuple of numbers.
            Tuples compare lexicographically. The dict is not changed.

    Returns:
        The id (str) with the smallest value, the smallest such id on a tie, or None when
        ``values`` is empty.
    """
    ### BEGIN SOLUTION
    if not values:
        return None
    return min(values, key=lambda seq_id: (values[seq_id], seq_id))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task1_1_select_victim", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that select_victim returns the key of the smallest value, ties to the smaller key."""


def _check_task1_1_select_victim():
    from course.checks import assert_plain_equal, check_type

    assert_plain_equal(select_victim({"a": 3, "b": 1, "c": 2}), "b", "select_victim({'a': 3, 'b': 1, 'c': 2})")
    assert_plain_equal(select_victim({"y": 5, "x": 5}), "x", "select_victim({'y': 5, 'x': 5}) (a tie goes to the smaller key)")
    check_type(select_victim({}), type(None), "select_victim({})")
    assert_plain_equal(select_victim({"s1": (2, 7), "s2": (2, 3), "s3": (5, 0)}), "s2",
                       "select_victim({'s1': (2, 7), 's2': (2, 3), 's3': (5, 0)}) (tuples compare lexicographically)")

    ### BEGIN HIDDEN TESTS
    import random as _random


    def _oracle_victim(values):
        best = None
        for key in sorted(values):
            if best is None or values[key] < values[best]:
                best = key
        return best


    _rng = _random.Random(1101)
    for _case in range(400):
        _keys = _rng.sample([f"seq{i:02d}" for i in range(60)], _rng.randint(1, 15))
        _kind = _case % 3
        if _kind == 0:
            _values = {k: _rng.randint(-3, 3) for k in _keys}
        elif _kind == 1:
            _values = {k: _rng.choice([0.5, 1.25, -2.0, 7.0]) for k in _keys}
        else:
            _values = {k: (_rng.randint(0, 2), _rng.randint(0, 2), _rng.randint(0, 1)) for k in _keys}
        _copy = dict(_values)
        _result = select_victim(_values)
        assert_plain_equal(_result, _oracle_victim(_copy), f"select_victim on random case {_case}", reveal=False)
        assert _values == _copy, f"select_victim changed its input on random case {_case}"
    for _single in ({"only": 4}, {"z": (1,)}):
        assert_plain_equal(select_victim(_single), next(iter(_single)), f"select_victim({_single})")
    check_type(select_victim(dict()), type(None), "select_victim(dict())")
    ### END HIDDEN TESTS


_check_task1_1_select_victim()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task1_2_eviction_order_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 1.2: eviction_order (2 points)
#
# Eviction rarely stops at one victim: a request that needs ten blocks may free several sequences. Write
# `eviction_order(values)`: every key, the first victim first, with the same tie rule as Task 1.1 (so
# `eviction_order(values)[0] == select_victim(values)` whenever `values` is not empty).
#
# Hint: `sorted` with the same key as before.
#
# ## 任务 1.2：eviction_order（2 分）
#
# 驱逐很少只选一个：一个需要十个块的请求可能要释放多个序列。编写 `eviction_order(values)`：返回全部 key，
# 最先被驱逐的排在最前，平局规则与任务 1.1 相同（因此 `values` 非空时 `eviction_order(values)[0] == select_victim(values)`）。
#
# 提示：用与之前相同的 key 调用 `sorted`。

# %% nbgrader={"grade": false, "grade_id": "task1_2_eviction_order", "locked": false, "schema_version": 3, "solution": true, "task": false}
def eviction_order(values):
    """Return every key, first victim first: ascending value, ties by ascending key.

    Args:
        values: dict from sequence id (str) to an int, float or tuple of numbers. Not changed.

    Returns:
        A list (a new list) of all keys in eviction order; [] for an empty dict.
    """
    ### BEGIN SOLUTION
    return sorted(values, key=lambda seq_id: (values[seq_id], seq_id))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task1_2_eviction_order", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that eviction_order lists every key by ascending value, ties by ascending key."""


def _check_task1_2_eviction_order():
    from course.checks import assert_plain_equal

    assert_plain_equal(eviction_order({"a": 3, "b": 1, "c": 2}), ["b", "c", "a"], "eviction_order({'a': 3, 'b': 1, 'c': 2})")
    assert_plain_equal(eviction_order({"d": 1, "c": 1, "b": 0}), ["b", "c", "d"],
                       "eviction_order({'d': 1, 'c': 1, 'b': 0}) (ties go to the smaller key)")
    assert_plain_equal(eviction_order({}), [], "eviction_order({})")
    assert_plain_equal(eviction_order({"p": (1, 9), "q": (1, 2), "r": (0, 50)}), ["r", "q", "p"],
                       "eviction_order({'p': (1, 9), 'q': (1, 2), 'r': (0, 50)})")

    ### BEGIN HIDDEN TESTS
    import random as _random


    def _oracle_order(values):
        by_key = sorted(values)
        return sorted(by_key, key=lambda k: values[k])


    _rng = _random.Random(1202)
    for _case in range(300):
        _keys = _rng.sample([f"s{i}" for i in range(80)], _rng.randint(0, 20))
        if _case % 2:
            _values = {k: _rng.randint(0, 4) for k in _keys}
        else:
            _values = {k: (_rng.randint(0, 1), _rng.uniform(0, 1) if _rng.random() < 0.3 else 0.5) for k in _keys}
        _copy = dict(_values)
        assert_plain_equal(eviction_order(_values), _oracle_order(_copy), f"eviction_order on random case {_case}", reveal=False)
        assert _values == _copy, f"eviction_order changed its input on random case {_case}"
    ### END HIDDEN TESTS


_check_task1_2_eviction_order()

# %% [markdown] nbgrader={"grade": false, "grade_id": "task1_3_quotas_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 1.3: quotas (3 points)
#
# $$\text{quota}_t = \frac{w_t}{\sum_j w_j}\, B$$
#
# Write `quotas(weights, total_blocks)`: every tenant's quota as a float. A tenant with weight 0 gets quota 0.
# Raise `ValueError` (with a message that says what is wrong) for a negative, infinite or NaN weight, for
# weights that sum to 0 (this includes an empty dict), and for `total_blocks < 0`.
#
# Hint: `math.isfinite`. Weights are shares, not counts: a tenant with weight 3 gets three times the blocks
# of a tenant with weight 1.
#
# ## 任务 1.3：quotas（3 分）
#
# 编写 `quotas(weights, total_blocks)`：以 float 返回每个租户的配额。权重为 0 的租户配额为 0。
# 遇到负数、无穷大或 NaN 权重、权重总和为 0（包括空字典）以及 `total_blocks < 0` 时，抛出 `ValueError`，
# 并在消息中说明错误原因。
#
# 提示：`math.isfinite`。权重表示份额而非计数：权重为 3 的租户得到的块数是权重为 1 的租户的三倍。

# %% nbgrader={"grade": false, "grade_id": "task1_3_quotas", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math


def quotas(weights, total_blocks):
    """Return each tenant's fair share of the cache: w_t / sum(w) * total_blocks.

    Args:
        weights: dict from tenant name (str) to a weight (int or float), >= 0 and finite.
        total_blocks: the cache size B in blocks, an int >= 0.

    Returns:
        A new dict from every tenant in ``weights`` to its quota (a float).

    Raises:
        ValueError: for a negative, infinite or NaN weight, weights that sum to 0 (an empty dict
            included), or total_blocks < 0.
    """
    ### BEGIN SOLUTION
    if total_blocks < 0:
        raise ValueError(f"total_blocks must be >= 0, got {total_blocks}")
    for tenant, weight in weights.items():
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"weight of tenant {tenant!r} must be finite and >= 0, got {weight}")
    total_weight = sum(weights.values())
    if total_weight == 0:
        raise ValueError("weights must not sum to 0")
    return {tenant: weight / total_weight * total_blocks for tenant, weight in weights.items()}
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task1_3_quotas", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that quotas splits total_blocks in proportion to the weights and rejects bad input."""


def _check_task1_3_quotas():
    from course.checks import assert_plain_equal, assert_raises

    assert_plain_equal(quotas({"a": 1, "b": 3}, 100), {"a": 25.0, "b": 75.0}, "quotas({'a': 1, 'b': 3}, 100)")
    assert_plain_equal(quotas({"a": 2.0, "b": 2.0, "c": 0.0}, 512), {"a": 256.0, "b": 256.0, "c": 0.0},
                       "quotas({'a': 2.0, 'b': 2.0, 'c': 0.0}, 512)")
    assert_raises(ValueError, "quotas({'a': -1, 'b': 2}, 10)", quotas, {"a": -1, "b": 2}, 10)
    assert_raises(ValueError, "quotas({'a': 0, 'b': 0}, 10)", quotas, {"a": 0, "b": 0}, 10)
    assert_raises(ValueError, "quotas({'a': 1}, -5)", quotas, {"a": 1}, -5)

    ### BEGIN HIDDEN TESTS
    import math as _math
    import random as _random


    def _oracle_quotas(weights, total_blocks):
        total = _math.fsum(weights.values())
        return {t: float(w) / total * total_blocks for t, w in weights.items()}


    _rng = _random.Random(1303)
    for _case in range(300):
        _tenants = [f"tenant{i}" for i in range(_rng.randint(1, 8))]
        _weights = {t: (_rng.randint(0, 9) if _case % 2 else _rng.uniform(0, 5)) for t in _tenants}
        _weights[_tenants[0]] = _weights[_tenants[0]] or 1
        _total = _rng.choice([0, 1, 7, 100, 512, 4096])
        _copy = dict(_weights)
        assert_plain_equal(quotas(_weights, _total), _oracle_quotas(_copy, _total),
                           f"quotas on random case {_case}", rel_tol=1e-9, abs_tol=1e-9, reveal=False)
        assert _weights == _copy, f"quotas changed its input on random case {_case}"
    for _bad in ({"a": float("nan"), "b": 1.0}, {"a": float("inf")}, {"a": 1.0, "b": -0.5}, {}, {"x": 0.0}):
        assert_raises(ValueError, f"quotas({_bad}, 64)", quotas, _bad, 64)
    assert_raises(ValueError, "quotas({'a': 1.0}, -1)", quotas, {"a": 1.0}, -1)
    assert_plain_equal(quotas({"solo": 0.25}, 10), {"solo": 10.0}, "quotas({'solo': 0.25}, 10)")
    ### END HIDDEN TESTS


_check_task1_3_quotas()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task1_4_overuse_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 1.4: overuse (2 points)
#
# $$\text{overuse}_t = u_t - \text{quota}_t$$
#
# Write `overuse(usage, quota)`: for every tenant in either dict, usage minus quota as a float. A tenant
# missing from one dict counts 0 there (a tenant with blocks but no quota overuses all of them; a tenant
# with a quota but no blocks has negative overuse).
#
# ## 任务 1.4：overuse（2 分）
#
# 编写 `overuse(usage, quota)`：对出现在任一字典中的每个租户，以 float 返回"占用减配额"。
# 某租户在某个字典中缺失时按 0 计算（有块但没有配额的租户，其全部块都算超额；有配额但没有块的租户超额量为负）。

# %% nbgrader={"grade": false, "grade_id": "task1_4_overuse", "locked": false, "schema_version": 3, "solution": true, "task": false}
def overuse(usage, quota):
    """Return usage - quota for every tenant in either dict; a missing entry counts as 0.

    Args:
        usage: dict from tenant name to the number of blocks it holds (int).
        quota: dict from tenant name to its quota (float), as returned by ``quotas``.

    Returns:
        A new dict from every tenant in ``usage`` or ``quota`` to a float.
    """
    ### BEGIN SOLUTION
    tenants = set(usage) | set(quota)
    return {tenant: float(usage.get(tenant, 0)) - float(quota.get(tenant, 0.0)) for tenant in tenants}
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task1_4_overuse", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that overuse covers every tenant of both dicts and returns floats."""


def _check_task1_4_overuse():
    from course.checks import assert_plain_equal

    assert_plain_equal(overuse({"a": 30, "b": 10}, {"a": 25.0, "b": 25.0}), {"a": 5.0, "b": -15.0},
                       "overuse({'a': 30, 'b': 10}, {'a': 25.0, 'b': 25.0})")
    assert_plain_equal(overuse({"a": 30, "new": 4}, {"a": 25.0, "idle": 50.0}), {"a": 5.0, "new": 4.0, "idle": -50.0},
                       "overuse({'a': 30, 'new': 4}, {'a': 25.0, 'idle': 50.0}) (missing entries count as 0)")
    assert_plain_equal(overuse({}, {}), {}, "overuse({}, {})")

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(1404)
    for _case in range(300):
        _names = [f"t{i}" for i in range(10)]
        _usage = {t: _rng.randint(0, 100) for t in _rng.sample(_names, _rng.randint(0, 6))}
        _quota = {t: _rng.choice([0.0, 12.5, 33.25, 50.0, float(_rng.randint(0, 80))]) for t in _rng.sample(_names, _rng.randint(0, 6))}
        _expected = {}
        for _t in list(_usage) + list(_quota):
            _expected[_t] = float(_usage[_t] if _t in _usage else 0) - (_quota[_t] if _t in _quota else 0.0)
        _u, _q = dict(_usage), dict(_quota)
        assert_plain_equal(overuse(_usage, _quota), _expected, f"overuse on random case {_case}", reveal=False)
        assert _usage == _u and _quota == _q, f"overuse changed its input on random case {_case}"
    ### END HIDDEN TESTS


_check_task1_4_overuse()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task1_5_victim_tenant_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 1.5: victim_tenant (3 points)
#
# $$\text{victim tenant} = \arg\max_{t:\ \text{overuse}_t > 0} \text{overuse}_t$$
#
# Write `victim_tenant(usage, quota)`: among the tenants with overuse **strictly** greater than 0, the one
# with the largest overuse; on a tie, the **larger** tenant name (exactly what
# `max(over, key=lambda t: (overuse_t, t))` gives); `None` when nobody is over quota. You may call your
# `overuse` from Task 1.4.
#
# ## 任务 1.5：victim_tenant（3 分）
#
# 编写 `victim_tenant(usage, quota)`：在超额量**严格**大于 0 的租户中，返回超额最多的租户；平局时返回名字**较大**的租户
# （与 `max(over, key=lambda t: (overuse_t, t))` 的结果完全一致）；没有租户超额时返回 `None`。
# 你可以调用任务 1.4 中的 `overuse`。

# %% nbgrader={"grade": false, "grade_id": "task1_5_victim_tenant", "locked": false, "schema_version": 3, "solution": true, "task": false}
def victim_tenant(usage, quota):
    """Return the tenant with the largest positive overuse; ties go to the larger name.

    Args:
        usage: dict from tenant name to blocks held (int).
        quota: dict from tenant name to quota (float).

    Returns:
        The tenant name (str), or None when no tenant has overuse > 0.
    """
    ### BEGIN SOLUTION
    over = {tenant: amount for tenant, amount in overuse(usage, quota).items() if amount > 0}
    if not over:
        return None
    return max(over, key=lambda tenant: (over[tenant], tenant))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task1_5_victim_tenant", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that victim_tenant picks the largest positive overuse, ties to the larger name."""


def _check_task1_5_victim_tenant():
    from course.checks import assert_plain_equal, check_type

    assert_plain_equal(victim_tenant({"a": 30, "b": 10, "c": 60}, {"a": 25.0, "b": 25.0, "c": 50.0}), "c",
                       "victim_tenant({'a': 30, 'b': 10, 'c': 60}, {'a': 25.0, 'b': 25.0, 'c': 50.0})")
    assert_plain_equal(victim_tenant({"a": 30, "b": 30}, {"a": 25.0, "b": 25.0}), "b",
                       "victim_tenant({'a': 30, 'b': 30}, {'a': 25.0, 'b': 25.0}) (a tie goes to the larger name)")
    check_type(victim_tenant({"a": 25, "b": 5}, {"a": 25.0, "b": 25.0}), type(None),
               "victim_tenant({'a': 25, 'b': 5}, {'a': 25.0, 'b': 25.0}) (exactly at quota is not over quota)")

    ### BEGIN HIDDEN TESTS
    import random as _random


    def _oracle_tenant(usage, quota):
        best, best_amount = None, 0.0
        for t in sorted(set(usage) | set(quota)):
            amount = float(usage.get(t, 0)) - float(quota.get(t, 0.0))
            if amount > 0 and (best is None or amount >= best_amount):
                best, best_amount = t, amount
        return best


    _rng = _random.Random(1505)
    for _case in range(400):
        _names = [f"t{i}" for i in range(8)]
        _usage = {t: _rng.randint(0, 12) for t in _rng.sample(_names, _rng.randint(0, 6))}
        _quota = {t: float(_rng.randint(0, 10)) for t in _rng.sample(_names, _rng.randint(0, 6))}
        _expected = _oracle_tenant(_usage, _quota)
        _result = victim_tenant(dict(_usage), dict(_quota))
        if _expected is None:
            check_type(_result, type(None), f"victim_tenant on random case {_case}")
        else:
            assert_plain_equal(_result, _expected, f"victim_tenant on random case {_case}", reveal=False)
    check_type(victim_tenant({}, {}), type(None), "victim_tenant({}, {})")
    assert_plain_equal(victim_tenant({"newcomer": 1}, {}), "newcomer", "victim_tenant({'newcomer': 1}, {})")
    ### END HIDDEN TESTS


_check_task1_5_victim_tenant()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task1_6_argmin_victim_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 1.6: argmin_victim on tensors (3 points)
#
# A server tracks thousands of sequences; their values live in a tensor on the GPU, and a Python loop over
# them would be slow. Write `argmin_victim(values, evictable=None)`: `values` is a 1-D tensor (any real dtype,
# any device), `evictable` a bool tensor of the same shape (`None` means every entry is evictable).
# Return, as a Python `int`, the index of the smallest value among the evictable entries; the **lowest
# index** on a tie; `-1` when nothing is evictable (this includes an empty tensor). Use whole-tensor
# operations: no Python loop over the entries.
#
# Hint: `torch.nonzero`, indexing with a tensor of indices, `torch.argmin` (it returns the first
# occurrence of the minimum). Masking with `+inf` is tempting: think about int64 values and about an
# evictable entry whose value is itself the largest possible.
#
# ## 任务 1.6：张量上的 argmin_victim（3 分）
#
# 服务器要跟踪成千上万个序列，它们的价值存放在 GPU 上的张量里，对其做 Python 循环会很慢。编写
# `argmin_victim(values, evictable=None)`：`values` 是一维张量（任意实数 dtype、任意设备），`evictable` 是同形状的
# bool 张量（`None` 表示全部可驱逐）。以 Python `int` 返回可驱逐条目中最小值的下标；平局时返回**最小下标**；
# 没有可驱逐条目时（包括空张量）返回 `-1`。只使用整张量运算，不要对条目写 Python 循环。
#
# 提示：`torch.nonzero`、用下标张量索引、`torch.argmin`（返回最小值第一次出现的位置）。用 `+inf` 做掩码很诱人：
# 想一想 int64 的值，以及本身就是最大可能值的可驱逐条目。

# %% nbgrader={"grade": false, "grade_id": "task1_6_argmin_victim", "locked": false, "schema_version": 3, "solution": true, "task": false}
def argmin_victim(values, evictable=None):
    """Return the index of the smallest evictable value (lowest index on ties), or -1.

    Args:
        values: 1-D tensor of a real dtype, on any device.
        evictable: bool tensor of the same shape and device, or None (every entry evictable).

    Returns:
        A Python int: the index into ``values``, or -1 when no entry is evictable.
    """
    ### BEGIN SOLUTION
    if evictable is None:
        candidates = torch.arange(values.shape[0], device=values.device)
    else:
        candidates = torch.nonzero(evictable).flatten()
    if candidates.numel() == 0:
        return -1
    return int(candidates[torch.argmin(values[candidates])])
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task1_6_argmin_victim", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that argmin_victim finds the smallest evictable value, lowest index on ties, on every device."""


def _check_task1_6_argmin_victim():
    from course.checks import assert_no_python_loop, assert_plain_equal
    from course.env import available_devices

    for device in available_devices():
        values = torch.tensor([3.0, 1.0, 2.0, 1.0], device=device)
        assert_plain_equal(argmin_victim(values), 1, f"argmin_victim([3., 1., 2., 1.]) on {device}")
        mask = torch.tensor([True, False, True, True], device=device)
        assert_plain_equal(argmin_victim(values, mask), 3, f"argmin_victim([3., 1., 2., 1.], mask [T, F, T, T]) on {device}")
        none = torch.zeros(4, dtype=torch.bool, device=device)
        assert_plain_equal(argmin_victim(values, none), -1, f"argmin_victim(values, all False) on {device}")
        steps = torch.tensor([9, 4, 4, 7], dtype=torch.int64, device=device)
        assert_plain_equal(argmin_victim(steps), 1, f"argmin_victim(int64 [9, 4, 4, 7]) on {device}")

    ### BEGIN HIDDEN TESTS
    import random as _random


    def _oracle_argmin(values, mask):
        best = -1
        for i, (v, m) in enumerate(zip(values, mask)):
            if m and (best < 0 or v < values[best]):
                best = i
        return best


    _rng = _random.Random(1606)
    for device in available_devices():
        for _case in range(150):
            _n = _rng.randint(0, 40)
            _vals = [_rng.randint(-3, 3) for _ in range(_n)]
            _mask = [_rng.random() < 0.6 for _ in range(_n)]
            _dtype = [torch.int64, torch.float32, torch.float64, torch.int32][_case % 4]
            _t = torch.tensor(_vals, dtype=_dtype, device=device)
            _m = torch.tensor(_mask, dtype=torch.bool, device=device)
            assert_plain_equal(argmin_victim(_t, _m), _oracle_argmin(_vals, _mask),
                               f"argmin_victim on random case {_case} ({_dtype}, {device})", reveal=False)
            assert_plain_equal(argmin_victim(_t), _oracle_argmin(_vals, [True] * _n),
                               f"argmin_victim without a mask on random case {_case} ({_dtype}, {device})", reveal=False)
        _big = torch.tensor([2**62, 2**63 - 1, 2**63 - 1], dtype=torch.int64, device=device)
        assert_plain_equal(argmin_victim(_big, torch.tensor([False, True, True], device=device)), 1,
                           f"argmin_victim with int64 values at the top of the range on {device}")
        _inf = torch.tensor([float("inf"), float("inf")], device=device)
        assert_plain_equal(argmin_victim(_inf, torch.tensor([False, True], device=device)), 1,
                           f"argmin_victim with an evictable value of +inf on {device}")
        assert_plain_equal(argmin_victim(torch.tensor([], device=device)), -1, f"argmin_victim(empty tensor) on {device}")
    _small = (torch.arange(8.0).flip(0), torch.ones(8, dtype=torch.bool))
    _large = (torch.arange(4096.0).flip(0), torch.ones(4096, dtype=torch.bool))
    assert_no_python_loop(argmin_victim, _small, _large, "argmin_victim")
    ### END HIDDEN TESTS


_check_task1_6_argmin_victim()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task1_7_lex_argmin_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 1.7: lex_argmin on tensors (4 points)
#
# LFU ranks by the pair $(\text{use\_count}, t_\text{last})$. On tensors the pair is a list of key columns:
# `keys[0]` decides, `keys[1]` breaks its ties, and so on. Write `lex_argmin(keys, evictable=None)`: the index
# of the lexicographically smallest evictable entry, lowest index when all keys tie, `-1` when nothing is
# evictable. Keys are int64 tensors of equal length on one device. Raise `ValueError` when `keys` is empty.
#
# It must be correct for **any** int64 values. A common trick packs two keys into one number,
# `keys[0] * 2**32 + keys[1]`: it overflows for large values and silently picks the wrong victim. Loop over
# the key columns instead (a handful), never over the entries: narrow the set of candidates one key at a time.
#
# ## 任务 1.7：张量上的 lex_argmin（4 分）
#
# LFU 按二元组 $(\text{use\_count}, t_\text{last})$ 排序。在张量上，这个元组是一组键列：`keys[0]` 先决定，
# `keys[1]` 打破其平局，依此类推。编写 `lex_argmin(keys, evictable=None)`：返回字典序最小的可驱逐条目的下标；
# 所有键都相同时返回最小下标；没有可驱逐条目时返回 `-1`。键是同一设备上等长的 int64 张量。`keys` 为空时抛出 `ValueError`。
#
# 它必须对**任意** int64 值都正确。常见技巧是把两个键打包成一个数 `keys[0] * 2**32 + keys[1]`：数值大时会溢出，
# 并悄无声息地选错受害者。应当对键列做循环（只有几列），而不是对条目循环：每次用一个键缩小候选集合。

# %% nbgrader={"grade": false, "grade_id": "task1_7_lex_argmin", "locked": false, "schema_version": 3, "solution": true, "task": false}
def lex_argmin(keys, evictable=None):
    """Return the index of the lexicographically smallest evictable entry, or -1.

    Args:
        keys: non-empty list of 1-D int64 tensors of equal length on one device; keys[0] is
            compared first, keys[1] breaks its ties, and so on.
        evictable: bool tensor of the same length, or None (every entry evictable).

    Returns:
        A Python int: the lowest index among the smallest entries, or -1 when none is evictable.

    Raises:
        ValueError: when ``keys`` is empty.
    """
    ### BEGIN SOLUTION
    if len(keys) == 0:
        raise ValueError("lex_argmin needs at least one key tensor")
    if evictable is None:
        candidates = torch.ones_like(keys[0], dtype=torch.bool)
    else:
        candidates = evictable.clone()
    if not bool(candidates.any()):
        return -1
    for key in keys:
        largest = torch.iinfo(key.dtype).max
        smallest_value = torch.where(candidates, key, torch.full_like(key, largest)).min()
        candidates = candidates & (key == smallest_value)
    return int(torch.nonzero(candidates)[0, 0])
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task1_7_lex_argmin", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
"""Check that lex_argmin compares keys lexicographically, for any int64 values, on every device."""


def _check_task1_7_lex_argmin():
    from course.checks import assert_no_python_loop, assert_plain_equal, assert_raises
    from course.env import available_devices

    for device in available_devices():
        use_count = torch.tensor([2, 1, 1, 3], device=device)
        last_access_step = torch.tensor([5, 9, 4, 1], device=device)
        assert_plain_equal(lex_argmin([use_count, last_access_step]), 2,
                           f"lex_argmin([use_count [2, 1, 1, 3], last_access_step [5, 9, 4, 1]]) on {device}")
        mask = torch.tensor([True, True, False, True], device=device)
        assert_plain_equal(lex_argmin([use_count, last_access_step], mask), 1,
                           f"lex_argmin(same keys, mask [T, T, F, T]) on {device}")
        huge = torch.tensor([2**62, -2**62, -2**62], device=device)
        tie_break = torch.tensor([0, 2**63 - 1, -2**63], device=device)
        assert_plain_equal(lex_argmin([huge, tie_break]), 2, f"lex_argmin with values near the int64 limits on {device}")
        assert_plain_equal(lex_argmin([use_count], torch.zeros(4, dtype=torch.bool, device=device)), -1,
                           f"lex_argmin(keys, all False) on {device}")
    assert_raises(ValueError, "lex_argmin([])", lex_argmin, [])

    ### BEGIN HIDDEN TESTS
    import random as _random


    def _oracle_lex(columns, mask):
        rows = [tuple(column[i] for column in columns) + (i,) for i in range(len(mask)) if mask[i]]
        return min(rows)[-1] if rows else -1


    _rng = _random.Random(1707)
    _extremes = [-2**63, -2**62, -1, 0, 1, 2**31, 2**32 + 1, 2**62, 2**63 - 1]
    for device in available_devices():
        for _case in range(200):
            _n = _rng.randint(1, 30)
            _k = _rng.randint(1, 3)
            if _case % 3 == 0:
                _columns = [[_rng.choice(_extremes) for _ in range(_n)] for _ in range(_k)]
            else:
                _columns = [[_rng.randint(0, 3) for _ in range(_n)] for _ in range(_k)]
            _mask = [_rng.random() < 0.7 for _ in range(_n)]
            _tensors = [torch.tensor(c, dtype=torch.int64, device=device) for c in _columns]
            _m = torch.tensor(_mask, device=device)
            assert_plain_equal(lex_argmin(_tensors, _m), _oracle_lex(_columns, _mask),
                               f"lex_argmin on random case {_case} ({_k} keys, {device})", reveal=False)
            assert_plain_equal(lex_argmin(_tensors), _oracle_lex(_columns, [True] * _n),
                               f"lex_argmin without a mask on random case {_case} ({device})", reveal=False)
            assert all(torch.equal(t.cpu(), torch.tensor(c)) for t, c in zip(_tensors, _columns)), \
                f"lex_argmin changed its key tensors on random case {_case}"
    _small = ([torch.arange(8).flip(0), torch.zeros(8, dtype=torch.int64)], torch.ones(8, dtype=torch.bool))
    _large = ([torch.arange(4096).flip(0), torch.zeros(4096, dtype=torch.int64)], torch.ones(4096, dtype=torch.bool))
    assert_no_python_loop(lex_argmin, _small, _large, "lex_argmin")
    ### END HIDDEN TESTS


_check_task1_7_lex_argmin()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task1_8_quotas_tensor_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 1.8: quotas_tensor (3 points)
#
# The tensor form of Task 1.3: `weights` is a 1-D tensor with one weight per tenant (any real dtype, any
# device). Return the quotas as a **float64** tensor on the weights' device (float64 so that it agrees with
# the Python floats of `quotas`). Raise `ValueError` in the same cases as `quotas`: a negative, infinite or
# NaN weight, weights that sum to 0 (an empty tensor included), `total_blocks < 0`.
#
# ## 任务 1.8：quotas_tensor（3 分）
#
# 任务 1.3 的张量版本：`weights` 是一维张量，每个租户一个权重（任意实数 dtype、任意设备）。以 **float64** 张量返回配额，
# 并放在与 weights 相同的设备上（使用 float64 以便与 `quotas` 的 Python float 一致）。在与 `quotas` 相同的情况下抛出
# `ValueError`：负数、无穷大或 NaN 权重，权重总和为 0（包括空张量），`total_blocks < 0`。

# %% nbgrader={"grade": false, "grade_id": "task1_8_quotas_tensor", "locked": false, "schema_version": 3, "solution": true, "task": false}
def quotas_tensor(weights, total_blocks):
    """Return w / sum(w) * total_blocks as a float64 tensor on the weights' device.

    Args:
        weights: 1-D tensor of weights (any real dtype), one per tenant, on any device.
        total_blocks: the cache size in blocks, an int >= 0.

    Returns:
        A float64 tensor of the same shape and device as ``weights``.

    Raises:
        ValueError: for a negative, infinite or NaN weight, weights that sum to 0 (an empty
            tensor included), or total_blocks < 0.
    """
    ### BEGIN SOLUTION
    if total_blocks < 0:
        raise ValueError(f"total_blocks must be >= 0, got {total_blocks}")
    weights = weights.to(torch.float64)
    if not bool(torch.isfinite(weights).all()) or bool((weights < 0).any()):
        raise ValueError("every weight must be finite and >= 0")
    total_weight = weights.sum()
    if float(total_weight) == 0.0:
        raise ValueError("weights must not sum to 0")
    return weights / total_weight * total_blocks
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task1_8_quotas_tensor", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that quotas_tensor returns float64 quotas on the weights' device and rejects bad input."""


def _check_task1_8_quotas_tensor():
    from course.checks import assert_raises, assert_same_tensor
    from course.env import available_devices

    for device in available_devices():
        weights = torch.tensor([1.0, 3.0], device=device)
        assert_same_tensor(quotas_tensor(weights, 100), torch.tensor([25.0, 75.0], dtype=torch.float64, device=device),
                           f"quotas_tensor([1., 3.], 100) on {device}")
        counts = torch.tensor([2, 2, 0], device=device)
        assert_same_tensor(quotas_tensor(counts, 512), torch.tensor([256.0, 256.0, 0.0], dtype=torch.float64, device=device),
                           f"quotas_tensor(int64 [2, 2, 0], 512) on {device}")
        assert_raises(ValueError, f"quotas_tensor([-1., 2.], 10) on {device}", quotas_tensor,
                      torch.tensor([-1.0, 2.0], device=device), 10)
        assert_raises(ValueError, f"quotas_tensor([0., 0.], 10) on {device}", quotas_tensor,
                      torch.tensor([0.0, 0.0], device=device), 10)

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(1808)
    for device in available_devices():
        for _case in range(100):
            _n = _rng.randint(1, 12)
            _w = [(_rng.randint(0, 9) if _case % 2 else _rng.uniform(0, 3)) for _ in range(_n)]
            _w[0] = _w[0] or 1
            _total = _rng.choice([0, 1, 64, 512, 10000])
            _dtype = [torch.float32, torch.float64, torch.int64][_case % 3]
            _t = torch.tensor(_w, device=device).to(_dtype)
            _w64 = _t.cpu().to(torch.float64)
            _expected = (_w64 / _w64.sum() * _total).to(device)
            assert_same_tensor(quotas_tensor(_t, _total), _expected, f"quotas_tensor on random case {_case} ({_dtype}, {device})",
                               atol=1e-9, rtol=1e-12, reveal=False)
        for _bad in ([float("nan"), 1.0], [float("inf")], [1.0, -0.5], [], [0.0]):
            assert_raises(ValueError, f"quotas_tensor({_bad}, 64) on {device}", quotas_tensor,
                          torch.tensor(_bad, dtype=torch.float64, device=device), 64)
        assert_raises(ValueError, f"quotas_tensor([1.], -1) on {device}", quotas_tensor, torch.tensor([1.0], device=device), -1)
    ### END HIDDEN TESTS


_check_task1_8_quotas_tensor()

# %% [markdown]
# ## Experiment 1: one ranking, drawn | 实验 1：画出一次排序
#
# Eight sequences with their last access step (LRU's value). The bars are sorted in eviction order by your
# `eviction_order`; the red bar is `select_victim`'s choice. Change the steps and re-run: the victim is
# always the leftmost bar, and equal steps line up by id.
#
# 八个序列及其最近访问步（LRU 的价值）。柱子按你的 `eviction_order` 排成驱逐顺序；红色柱子是 `select_victim` 选出的受害者。
# 修改访问步后重新运行：受害者总是最左边的柱子，访问步相同时按 id 排列。

# %%
import matplotlib.pyplot as plt

last_access_step = {"chat-17": 41, "doc-03": 12, "chat-02": 12, "code-88": 57,
                    "doc-11": 30, "chat-40": 5, "sys-00": 63, "code-09": 30}
order = eviction_order(last_access_step)
victim = select_victim(last_access_step)

fig, ax = plt.subplots(figsize=(8, 3.2))
colors = ["tab:red" if seq_id == victim else "tab:blue" for seq_id in order]
ax.bar(order, [last_access_step[seq_id] for seq_id in order], color=colors)
ax.set_title(f"LRU ranking: victim = {victim} (red), then left to right")
ax.set_xlabel("sequence id, in eviction order")
ax.set_ylabel("last access step (logical time)")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Experiment 2: move the weights | 实验 2：调整权重
#
# Three tenants share a cache of 512 blocks. Their usage is fixed; move the weight sliders and watch each
# quota, each tenant's overuse and the tenant that eviction would take a block from (your `quotas`,
# `overuse` and `victim_tenant`). Notice that giving a tenant more weight can move the victim elsewhere, and
# that when nobody is over quota the fair policy hands the choice back to a global policy such as LRU.
#
# 三个租户共享 512 块的缓存。它们的占用固定；拖动权重滑块，观察每个租户的配额、超额量，以及驱逐将从哪个租户取块
# （使用你的 `quotas`、`overuse` 和 `victim_tenant`）。注意：提高某个租户的权重可能使受害者转到别的租户；
# 当没有租户超额时，公平策略把决定交还给 LRU 等全局策略。

# %%
import ipywidgets as widgets
from IPython.display import display

USAGE = {"tenant-A": 300, "tenant-B": 150, "tenant-C": 62}
TOTAL_BLOCKS = 512
sliders = {t: widgets.FloatSlider(value=1.0, min=0.0, max=5.0, step=0.1, description=t) for t in USAGE}
table = widgets.HTML()
plot = widgets.Output()


def redraw(change=None):
    weights = {t: slider.value for t, slider in sliders.items()}
    try:
        quota = quotas(weights, TOTAL_BLOCKS)
    except ValueError as error:
        table.value = f"<b>quotas raised ValueError:</b> {error}"
        return
    over = overuse(USAGE, quota)
    victim = victim_tenant(USAGE, quota)
    rows = "".join(f"<tr><td>{t}</td><td>{weights[t]:.1f}</td><td>{quota[t]:.1f}</td><td>{USAGE[t]}</td>"
                   f"<td>{over[t]:+.1f}</td></tr>" for t in USAGE)
    table.value = ("<table><tr><th>tenant</th><th>weight</th><th>quota (blocks)</th><th>usage (blocks)</th>"
                   f"<th>overuse</th></tr>{rows}</table><p>victim tenant: <b>{victim or 'nobody over quota: global LRU decides'}</b></p>")
    with plot:
        plot.clear_output(wait=True)
        fig, ax = plt.subplots(figsize=(6, 2.8))
        names = list(USAGE)
        ax.bar([i - 0.2 for i in range(3)], [quota[t] for t in names], width=0.4, label="quota")
        ax.bar([i + 0.2 for i in range(3)], [USAGE[t] for t in names], width=0.4, label="usage")
        ax.set_xticks(range(3), names)
        ax.set_ylabel("blocks")
        ax.set_title(f"Quota vs usage of {TOTAL_BLOCKS} blocks; victim tenant: {victim}")
        ax.legend()
        plt.show()


for slider in sliders.values():
    slider.observe(redraw, names="value")
redraw()
display(widgets.VBox([*sliders.values(), table, plot]))

# %% [markdown]
# ## Summary | 小结
#
# **Remember:** every eviction policy is a ranking, victim = argmin Value(s), and a complete tie-break (down
# to the sequence id) is what makes it deterministic, on dicts and on tensors alike.
#
# **记住：** 每个驱逐策略都是一次排序，受害者 = argmin Value(s)；正是完整的平局规则（直到序列 id）让结果确定，
# 无论在字典上还是在张量上。
#
# Next: [02. Paged KV cache](../02_paged_kv_cache/02_paged_kv_cache.ipynb), the blocks and metadata that these
# rankings free. | 下一节：[02. 分页 KV 缓存](../02_paged_kv_cache/02_paged_kv_cache.ipynb)，这些排序所释放的块与元数据。
#
# ## References | 参考文献
#
# - L. A. Belady, "A study of replacement algorithms for a virtual-storage computer", *IBM Systems Journal*, 1966 (the optimal offline policy, MIN).
# - W. Kwon et al., "Efficient Memory Management for Large Language Model Serving with PagedAttention" (vLLM), SOSP 2023.
# - L. Zheng et al., "SGLang: Efficient Execution of Structured Language Model Programs" (RadixAttention), NeurIPS 2024.
# - Y. Sheng et al., "Fairness in Serving Large Language Models" (Virtual Token Counter), OSDI 2024.
# - R. Jain, D.-M. Chiu, W. Hawe, "A Quantitative Measure of Fairness and Discrimination for Resource Allocation in Shared Computer Systems", DEC-TR-301, 1984.
# - Seed designs of this course: the "KV Eviction formula-to-code" walkthrough (LLM-REVIEW) and the "KV Cache Scheduling" chapter of Datawhale's llm-algo-leetcode (text CC BY 4.0, code Apache-2.0).
