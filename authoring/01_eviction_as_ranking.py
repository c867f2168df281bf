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
# [![Open in ModelScope](https://img.shields.io/badge/ModelScope-Open%20in%20ModelScope-624aff)](https://modelscope.cn/notebook/share/github/kvcache-course/kv-cache-eviction/blob/main/release/01_eviction_as_ranking/01_eviction_as_ranking.ipynb)
# [![GitHub](https://img.shields.io/badge/GitHub-release%2F01_eviction_as_ranking-black)](https://github.com/kvcache-course/kv-cache-eviction/blob/main/release/01_eviction_as_ranking/01_eviction_as_ranking.ipynb)
#
# **Difficulty:** ★☆☆ introductory · **Time:** about 60 minutes · **Points:** 22 · **GPU:** tasks 1.6–1.8 run on CUDA when a GPU is present; everything also runs on the CPU.
#
# **难度：** ★☆☆ 入门 · **用时：** 约 60 分钟 · **总分：** 22 · **GPU：** 任务 1.6–1.8 在有 GPU 时于 CUDA 上运行；所有内容也都能在 CPU 上运行。
#
# **ModelScope (魔搭):** log in to ModelScope, then click the ModelScope badge: it opens this notebook from
# GitHub in a notebook instance of yours (choose CPU or GPU). Where that link does not work, choose
# *File → Open from URL…* in the instance's JupyterLab and paste <https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/01_eviction_as_ranking/01_eviction_as_ranking.ipynb>.
# 先登录魔搭，再点击 ModelScope 徽章：魔搭会从 GitHub 取来本 notebook，在你自己的 Notebook 实例中打开（可选 CPU 或 GPU）。
# 如果这个链接打不开，在实例的 JupyterLab 中选择 *File → Open from URL…*，粘贴 <https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/01_eviction_as_ranking/01_eviction_as_ranking.ipynb>。
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
# **导读。** 大模型推理服务把每个请求已经算出的键（key）和值（value）存放在 KV 缓存里。缓存满了、新请求又需要块时，系统必须决定驱逐（evict）哪个序列：选错了，下一次访问就要把整段提示词重新预填充一遍，首 token 时延（TTFT）随之上升。
# 本 notebook 把所有驱逐策略写成同一件事：给每个缓存序列一个价值，驱逐价值最低的那个，并用字典序键打破平局，使结果唯一确定。接着计算多个租户共享一个缓存时每个租户的配额与超额量，找出超额最多的租户。最后在 PyTorch 张量上不写 Python 循环地完成同样的排序，使它在 GPU 上也能运行。你要写 8 个小函数：`select_victim`、`eviction_order`、`quotas`、`overuse`、`victim_tenant`、`argmin_victim`、`lex_argmin`、`quotas_tensor`。
#
# **Overview.** An LLM server keeps the keys and values it has computed for each request in a KV cache. When
# the cache is full and a new request needs blocks, the server must choose which sequence to evict: a bad
# choice means that the next access runs the prompt's prefill again, and the time to first token (TTFT)
# goes up. This notebook states every eviction policy as one operation: give every cached sequence a value
# and evict the lowest, with lexicographic tie-breaks that make the answer unique. Then it computes each
# tenant's quota and overuse when tenants share one cache, and finds the tenant most over its quota.
# Last, it does the same ranking on PyTorch tensors without a Python loop, so that it also runs on a GPU.
# You write eight small functions: `select_victim`, `eviction_order`, `quotas`, `overuse`,
# `victim_tenant`, `argmin_victim`, `lex_argmin`, `quotas_tensor`.

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
# 1. 把任何驱逐策略表述为一次排序：给每个缓存序列 $s$ 一个价值，驱逐价值最低者；
# 2. 用字典序键打破平局，使策略的结果确定；
# 3. 计算每个租户在缓存中的公平份额，并找出占用超过份额的租户；
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
# unique: among equal values, the smaller id goes first. Every tie in this course goes to the smaller id
# (or the lower index, or the smaller tenant name).
#
# **Fair quota.** When tenants (users, applications) share one cache of $B$ blocks with weights $w_t \ge 0$:
#
# $$\text{quota}_t = \frac{w_t}{\sum_j w_j}\, B, \qquad \text{overuse}_t = u_t - \text{quota}_t,$$
#
# where $u_t$ is the number of blocks tenant $t$ holds. The tenant to evict from is
# $\arg\max_t \text{overuse}_t$ over the tenants with $\text{overuse}_t > 0$ (a tie goes to the smaller
# name); when nobody is over quota, a global policy such as LRU decides. When the weights sum to 0 the
# shares $w_t / \sum_j w_j$ are undefined: the course raises `ValueError` then (here and in notebook 04).
#
# **受害者（victim）。** KV 缓存已满而新请求需要块。本课程中的每个驱逐策略都回答同一个问题：哪个缓存序列价值最低？
#
# $$\text{victim} = \arg\min_{s} \text{Value}(s) = \arg\max_{s} \text{EvictScore}(s)$$
#
# LRU（最近最少使用）取 $\text{Value}(s) = t_\text{last}(s)$，即最近访问时刻（逻辑时钟上的时间）；LFU（最不经常使用）取二元组 $(\text{use\_count}(s), t_\text{last}(s))$。二元组按**字典序**比较：先比第一项，第一项相等时才比第二项。
# 最后再按序列 id 打破平局，使答案唯一：价值相同时，id 较小者先被驱逐。本课程中所有平局都取较小的 id（或较小的索引、较小的租户名）。
#
# **公平配额。** 多个租户（用户、应用）以权重 $w_t \ge 0$ 共享一个容量为 $B$ 块的缓存时：
#
# $$\text{quota}_t = \frac{w_t}{\sum_j w_j}\, B, \qquad \text{overuse}_t = u_t - \text{quota}_t,$$
#
# 其中 $u_t$ 是租户 $t$ 占用的块数。受害租户（victim tenant）是超额量 $\text{overuse}_t > 0$ 的租户中超额量最大的一个（平局时取名字较小者）；没有租户超额时，由 LRU 等全局策略决定。权重之和为 0 时，份额 $w_t / \sum_j w_j$ 没有定义：本课程此时抛出 `ValueError`（本 notebook 与 notebook 04 都如此）。

# %% [markdown] nbgrader={"grade": false, "grade_id": "task1_1_select_victim_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 1.1: select_victim (2 points)
#
# $$\text{victim} = \arg\min_s \text{Value}(s)$$
#
# Write `select_victim(values)`: `values` maps a sequence id to its value, a number or a tuple of numbers
# (tuples compare lexicographically, as Python compares them). Return the id with the smallest value; on a
# tie, the smaller id; `None` for an empty dict. Do not change `values`: choosing a victim is not evicting
# it.
#
# ## 任务 1.1：select_victim（2 分）
#
# $$\text{victim} = \arg\min_s \text{Value}(s)$$
#
# 编写 `select_victim(values)`：`values` 把序列 id 映射到其价值，价值是一个数或一个数的元组（元组按 Python 的方式以字典序比较）。
# 返回价值最小的 id；平局时返回较小的 id；字典为空时返回 `None`。不要修改 `values`：选出受害者并不等于驱逐它。

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
    # TODO 1.1.1: return None when values is empty.
    # 提示：空字典在 if 中为假（if not values）。
    # Hint: an empty dict is false in an if (if not values).
    ### BEGIN SOLUTION
    if not values:
        return None
    ### END SOLUTION
    # TODO 1.1.2: return the id with the smallest value, the smaller id on a tie.
    # 提示：min 的 key 可以返回元组 (values[seq_id], seq_id)：先比价值，价值相同再比 id。
    # Hint: min's key may return the tuple (values[seq_id], seq_id): value first, then the id.
    ### BEGIN SOLUTION
    return min(values, key=lambda seq_id: (values[seq_id], seq_id))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task1_1_select_victim", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that select_victim returns the key of the smallest value, ties to the smaller key."""


def _check_task1_1_select_victim():
    from course.checks import assert_plain_equal, check_type

    assert_plain_equal(select_victim({"a": 3, "b": 1, "c": 2}), "b", "select_victim({'a': 3, 'b': 1, 'c': 2})")
    assert_plain_equal(select_victim({"y": 5, "x": 5}), "x", "select_victim({'y': 5, 'x': 5}) (a tie goes to the smaller key)")
    assert_plain_equal(select_victim({"s9": 1, "s10": 1}), "s10",
                       "select_victim({'s9': 1, 's10': 1}) (the smaller key as strings compare: 's10' < 's9')")
    check_type(select_victim({}), type(None), "select_victim({})")
    assert_plain_equal(select_victim({"only": 4}), "only", "select_victim({'only': 4})")
    assert_plain_equal(select_victim({"s1": (2, 7), "s2": (2, 3), "s3": (5, 0)}), "s2",
                       "select_victim({'s1': (2, 7), 's2': (2, 3), 's3': (5, 0)}) (tuples compare lexicographically)")
    values = {"b": 0.5, "a": 2.0, "c": 0.5}
    assert_plain_equal(select_victim(values), "b", "select_victim({'b': 0.5, 'a': 2.0, 'c': 0.5})")
    assert_plain_equal(list(values.items()), [("b", 0.5), ("a", 2.0), ("c", 0.5)],
                       "list(values.items()) after select_victim (it must not change values, nor their order)")

    ### BEGIN HIDDEN TESTS
    import random


    def oracle(values):
        best = None
        for key in sorted(values):
            if best is None or values[key] < values[best]:
                best = key
        return best


    rng = random.Random(1101)
    for case in range(150):
        keys = rng.sample([f"seq{i:02d}" for i in range(60)], rng.randint(1, 15))
        kind = case % 3
        if kind == 0:
            values = {k: rng.randint(-3, 3) for k in keys}
        elif kind == 1:
            values = {k: rng.choice([0.5, 1.25, -2.0, 7.0]) for k in keys}
        else:
            values = {k: (rng.randint(0, 2), rng.randint(0, 2), rng.randint(0, 1)) for k in keys}
        copy = dict(values)
        result = select_victim(values)
        assert_plain_equal(result, oracle(copy), f"select_victim on random case {case}", reveal=False)
        assert list(values.items()) == list(copy.items()), f"select_victim changed its input on random case {case}"
    # Keys of different lengths, with many ties: the smaller key as strings compare ('s10' < 's9').
    rng = random.Random(1102)
    for case in range(40):
        values = {k: rng.randint(0, 1) for k in rng.sample([f"s{i}" for i in range(120)], rng.randint(2, 12))}
        copy = dict(values)
        assert_plain_equal(select_victim(values), oracle(copy), f"select_victim on random case {case} of keys of "
                           "different lengths", reveal=False)
    for single in ({"only": 4}, {"z": (1,)}):
        assert_plain_equal(select_victim(single), next(iter(single)), f"select_victim({single})")
    check_type(select_victim(dict()), type(None), "select_victim(dict())")
    ### END HIDDEN TESTS


_check_task1_1_select_victim()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task1_2_eviction_order_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 1.2: eviction_order (2 points)
#
# Eviction rarely stops at one victim: a request that needs ten blocks may free several sequences. Write
# `eviction_order(values)`: a new list of every key, the first victim first, with the same tie rule as Task
# 1.1 (so `eviction_order(values)[0] == select_victim(values)` whenever `values` is not empty); `[]` for an
# empty dict. Do not change `values`.
#
# ## 任务 1.2：eviction_order（2 分）
#
# 驱逐很少只选一个：一个需要十个块的请求可能要释放多个序列。编写 `eviction_order(values)`：返回一个新列表，包含全部 key，最先被驱逐的排在最前；平局规则与任务 1.1 相同：价值小者在前，价值相同时 id 小者在前（因此 `values` 非空时 `eviction_order(values)[0] == select_victim(values)`）；字典为空时返回 `[]`。不要修改 `values`。

# %% nbgrader={"grade": false, "grade_id": "task1_2_eviction_order", "locked": false, "schema_version": 3, "solution": true, "task": false}
def eviction_order(values):
    """Return every key, first victim first: ascending value, ties by ascending key.

    Args:
        values: dict from sequence id (str) to an int, float or tuple of numbers. Not changed.

    Returns:
        A list (a new list) of all keys in eviction order; [] for an empty dict.
    """
    # TODO 1.2.1: return the keys sorted by (value, id).
    # 提示：sorted 与 min 一样接受 key 函数；对字典排序得到的是它的键。
    # Hint: sorted takes a key function, as min does; sorting a dict sorts its keys.
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
    values = {"p": (1, 9), "q": (1, 2), "r": (0, 50)}
    assert_plain_equal(eviction_order(values), ["r", "q", "p"], "eviction_order({'p': (1, 9), 'q': (1, 2), 'r': (0, 50)})")
    assert_plain_equal(list(values.items()), [("p", (1, 9)), ("q", (1, 2)), ("r", (0, 50))],
                       "list(values.items()) after eviction_order (it must not change values, nor their order)")
    eviction_order({"x": 2, "y": 1}).clear()  # The caller owns the list it gets, and may empty it.
    assert_plain_equal(eviction_order({"x": 2, "y": 1}), ["y", "x"],
                       "eviction_order({'x': 2, 'y': 1}) after the caller emptied the list of an earlier equal call "
                       "(a new list on every call)")

    ### BEGIN HIDDEN TESTS
    import random


    def oracle(values):
        by_key = sorted(values)
        return sorted(by_key, key=lambda k: values[k])


    rng = random.Random(1202)
    for case in range(150):
        keys = rng.sample([f"s{i}" for i in range(80)], rng.randint(0, 20))
        if case % 2:
            values = {k: rng.randint(0, 4) for k in keys}
        else:
            values = {k: (rng.randint(0, 1), rng.uniform(0, 1) if rng.random() < 0.3 else 0.5) for k in keys}
        copy = dict(values)
        assert_plain_equal(eviction_order(values), oracle(copy), f"eviction_order on random case {case}", reveal=False)
        assert list(values.items()) == list(copy.items()), \
            f"eviction_order changed its input (or the order of its keys) on random case {case}"
    ### END HIDDEN TESTS


_check_task1_2_eviction_order()

# %% [markdown] nbgrader={"grade": false, "grade_id": "task1_3_quotas_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 1.3: quotas (3 points)
#
# $$\text{quota}_t = \frac{w_t}{\sum_j w_j}\, B$$
#
# Write `quotas(weights, total_blocks)`: a new dict from every tenant to its quota, **a float** (a tenant
# with weight 0 gets `0.0`; int weights give float quotas too). Raise `ValueError`, with a message that
# says what is wrong, for:
#
# - a negative, infinite or **NaN** weight. The trap: every comparison with NaN is False, so a check
#   `weight < 0` lets `float("nan")` through, and one NaN weight turns every quota into NaN. `math.isfinite`
#   is False for NaN and for ±inf;
# - weights that sum to 0, an empty dict included: the shares $w_t / \sum_j w_j$ are undefined. (Notebook
#   04's `FairPolicy` follows the same rule.);
# - `total_blocks < 0`.
#
# Do not change `weights`, not even before raising. Weights are shares, not counts: a tenant with weight 3 gets three times the
# blocks of a tenant with weight 1.
#
# ## 任务 1.3：quotas（3 分）
#
# $$\text{quota}_t = \frac{w_t}{\sum_j w_j}\, B$$
#
# 编写 `quotas(weights, total_blocks)`：返回一个新字典，把每个租户映射到它的配额，配额是 **float**（权重为 0 的租户得到 `0.0`；权重是 int 时配额也是 float）。以下情况抛出 `ValueError`，并在消息中说明错在哪里：
#
# - 权重为负数、无穷大或 **NaN**。陷阱在于：与 NaN 的任何比较都为 False，所以 `weight < 0` 这样的检查会放过 `float("nan")`，而一个 NaN 权重会让所有配额都变成 NaN。`math.isfinite` 对 NaN 和 ±inf 都返回 False；
# - 权重之和为 0（包括空字典）：此时份额 $w_t / \sum_j w_j$ 没有定义（notebook 04 的 `FairPolicy` 遵循同样的规则）；
# - `total_blocks < 0`。
#
# 不要修改 `weights`，抛出异常之前也不能修改。权重表示份额而不是计数：权重为 3 的租户得到的块数是权重为 1 的租户的三倍。

# %% nbgrader={"grade": false, "grade_id": "task1_3_quotas", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math


def quotas(weights, total_blocks):
    """Return each tenant's fair share of the cache: w_t / sum(w) * total_blocks.

    Args:
        weights: dict from tenant name (str) to a weight (int or float), >= 0 and finite. Not changed.
        total_blocks: the cache size B in blocks, an int >= 0.

    Returns:
        A new dict from every tenant in ``weights`` to its quota (a float).

    Raises:
        ValueError: for a negative, infinite or NaN weight, weights that sum to 0 (an empty dict
            included), or total_blocks < 0.
    """
    # TODO 1.3.1: raise ValueError for total_blocks < 0 and for a negative, infinite or NaN weight.
    # 提示：math.isfinite(weight) 对 NaN 和 ±inf 为 False；只写 weight < 0 会放过 NaN。
    # Hint: math.isfinite(weight) is False for NaN and ±inf; weight < 0 alone lets NaN through.
    ### BEGIN SOLUTION
    if total_blocks < 0:
        raise ValueError(f"total_blocks must be >= 0, got {total_blocks}")
    for tenant, weight in weights.items():
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"weight of tenant {tenant!r} must be finite and >= 0, got {weight}")
    ### END SOLUTION
    # TODO 1.3.2: total_weight = the sum of the weights; raise ValueError when it is 0.
    # 提示：对字典的值求和（内置函数 sum）；空字典的和也是 0。
    # Hint: add up the dict's values (the built-in sum); an empty dict sums to 0 too.
    ### BEGIN SOLUTION
    total_weight = sum(weights.values())
    if total_weight == 0:
        raise ValueError("weights must not sum to 0")
    ### END SOLUTION
    # TODO 1.3.3: return a new dict from each tenant to weight / total_weight * total_blocks.
    # 提示：字典推导式；Python 3 中 / 的结果总是 float。
    # Hint: a dict comprehension; in Python 3, / always gives a float.
    ### BEGIN SOLUTION
    return {tenant: weight / total_weight * total_blocks for tenant, weight in weights.items()}
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task1_3_quotas", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that quotas splits total_blocks in proportion to the weights, as floats, and rejects bad input."""


def _check_task1_3_quotas():
    from course.checks import assert_plain_equal, assert_raises

    assert_plain_equal(quotas({"a": 1, "b": 3}, 100), {"a": 25.0, "b": 75.0}, "quotas({'a': 1, 'b': 3}, 100)")
    assert_plain_equal(quotas({"a": 2.0, "b": 2.0, "c": 0.0}, 512), {"a": 256.0, "b": 256.0, "c": 0.0},
                       "quotas({'a': 2.0, 'b': 2.0, 'c': 0.0}, 512)")
    assert_plain_equal(quotas({"a": 2, "b": 0}, 8), {"a": 8.0, "b": 0.0}, "quotas({'a': 2, 'b': 0}, 8) (quotas are floats)")
    assert_plain_equal(quotas({"a": 1, "b": 1}, 0), {"a": 0.0, "b": 0.0}, "quotas({'a': 1, 'b': 1}, 0)")
    assert_raises(ValueError, "quotas({'a': -1, 'b': 2}, 10)", quotas, {"a": -1, "b": 2}, 10)
    assert_raises(ValueError, "quotas({'a': float('nan'), 'b': 1.0}, 10) (NaN is not a weight)", quotas,
                  {"a": float("nan"), "b": 1.0}, 10)
    assert_raises(ValueError, "quotas({'a': float('inf')}, 10)", quotas, {"a": float("inf")}, 10)
    assert_raises(ValueError, "quotas({'a': 0, 'b': 0}, 10) (weights sum to 0)", quotas, {"a": 0, "b": 0}, 10)
    assert_raises(ValueError, "quotas({}, 10) (no weights: they sum to 0)", quotas, {}, 10)
    assert_raises(ValueError, "quotas({'a': 1}, -5)", quotas, {"a": 1}, -5)
    # Each error's message says what is wrong: an empty one says nothing.
    for weights, total_blocks in (({"a": -1, "b": 2}, 10), ({"a": 0, "b": 0}, 10), ({"a": 1}, -5)):
        try:
            quotas(weights, total_blocks)
        except ValueError as error:
            assert str(error).strip(), (f"quotas({weights!r}, {total_blocks}) raised ValueError with an empty message "
                                        "(say what is wrong)")
    weights = {"b": 3.0, "a": 1}
    quotas(weights, 64)
    assert_plain_equal(list(weights.items()), [("b", 3.0), ("a", 1)],
                       "list(weights.items()) after quotas({'b': 3.0, 'a': 1}, 64) (it must not change weights, nor "
                       "their order, nor turn the int 1 into a float)")
    bad = {"a": 1.0, "b": -0.5}
    assert_raises(ValueError, "quotas({'a': 1.0, 'b': -0.5}, 64)", quotas, bad, 64)
    assert_plain_equal(bad, {"a": 1.0, "b": -0.5}, "weights after quotas raised ValueError (it changed them before raising)")
    assert_raises(ValueError, "quotas({'a': float('nan')}, 0) (the weights are checked when total_blocks is 0 too)",
                  quotas, {"a": float("nan")}, 0)
    quotas({"x": 1, "y": 1}, 10).clear()  # The caller owns the dict it gets, and may empty it.
    assert_plain_equal(quotas({"x": 1, "y": 1}, 10), {"x": 5.0, "y": 5.0},
                       "quotas({'x': 1, 'y': 1}, 10) after the caller emptied the dict of an earlier equal call "
                       "(a new dict on every call)")

    # Tiny weights are weights: only a sum of exactly 0 is refused, only a weight below 0 is negative, and a quota is
    # not rounded (relative tolerance only: 1e-12 is not 0).
    assert_plain_equal(quotas({"a": 1e-12, "b": 3e-12}, 8), {"a": 2.0, "b": 6.0},
                       "quotas({'a': 1e-12, 'b': 3e-12}, 8) (tiny weights, not a sum of 0)", abs_tol=0.0)
    assert_raises(ValueError, "quotas({'a': -1e-13, 'b': 1}, 10) (a weight just below 0 is negative)", quotas,
                  {"a": -1e-13, "b": 1}, 10)
    assert_plain_equal(quotas({"a": 1, "b": 1e-12}, 1), {"a": 1.0, "b": 1e-12},
                       "quotas({'a': 1, 'b': 1e-12}, 1) (a quota of 1e-12 is not 0)", abs_tol=0.0)
    assert_plain_equal(quotas({"a": -0.0, "b": 1.0}, 10), {"a": 0.0, "b": 10.0},
                       "quotas({'a': -0.0, 'b': 1.0}, 10) (-0.0 is not negative: -0.0 < 0 is False)")

    ### BEGIN HIDDEN TESTS
    import math
    import random


    def oracle(weights, total_blocks):
        total = math.fsum(weights.values())
        return {t: float(w) / total * total_blocks for t, w in weights.items()}


    rng = random.Random(1303)
    for case in range(150):
        tenants = [f"tenant{i}" for i in range(rng.randint(1, 8))]
        weights = {t: (rng.randint(0, 9) if case % 2 else rng.uniform(0, 5)) for t in tenants}
        weights[tenants[0]] = weights[tenants[0]] or 1
        total = rng.choice([0, 1, 7, 100, 512, 4096])
        copy = dict(weights)
        result = quotas(weights, total)
        assert_plain_equal(result, oracle(copy, total), f"quotas on random case {case}", rel_tol=1e-9, abs_tol=1e-9,
                           reveal=False)
        assert [(k, type(v), v) for k, v in weights.items()] == [(k, type(v), v) for k, v in copy.items()], \
            f"quotas changed its input (its values, their types or the order of its keys) on random case {case}"
        assert result is not weights, f"quotas on random case {case} returned its input dict, not a new one"
    for bad in ({"a": float("nan"), "b": 1.0}, {"a": 1.0, "b": float("nan")}, {"a": float("inf")},
                {"a": 1.0, "b": float("-inf")}, {"a": 1.0, "b": -0.5}, {}, {"x": 0.0}, {"x": 0, "y": 0.0}):
        copy = dict(bad)
        assert_raises(ValueError, f"quotas({bad}, 64)", quotas, bad, 64)
        assert bad == copy, f"quotas({copy}, 64) changed its input before raising"
    for bad in ({"b": 1.0, "a": float("nan")}, {"z": float("inf"), "y": 2}, {"b": 1.0, "a": -0.5}, {}, {"y": 0, "x": 0.0}):
        copy = dict(bad)
        assert_raises(ValueError, f"quotas({bad}, 0)", quotas, bad, 0)
        assert list(bad.items()) == list(copy.items()), f"quotas({copy}, 0) changed its input before raising"
    weights = {"tenant3": 2.0, "tenant1": 1, "tenant2": 0.5}
    copy = dict(weights)
    assert_plain_equal(quotas(weights, 70), {"tenant3": 40.0, "tenant1": 20.0, "tenant2": 10.0},
                       "quotas({'tenant3': 2.0, 'tenant1': 1, 'tenant2': 0.5}, 70)", reveal=False)
    assert list(weights.items()) == list(copy.items()), \
        f"quotas({copy}, 70) changed its input (or the order of its keys)"
    assert_raises(ValueError, "quotas({'a': 1.0}, -1)", quotas, {"a": 1.0}, -1)
    assert_plain_equal(quotas({"solo": 0.25}, 10), {"solo": 10.0}, "quotas({'solo': 0.25}, 10)")
    assert_plain_equal(quotas({"a": 3, "b": 0}, 7), {"a": 7.0, "b": 0.0}, "quotas({'a': 3, 'b': 0}, 7)")
    ### END HIDDEN TESTS


_check_task1_3_quotas()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task1_4_overuse_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 1.4: overuse (2 points)
#
# $$\text{overuse}_t = u_t - \text{quota}_t$$
#
# Write `overuse(usage, quota)`: a new dict from every tenant in either dict to its usage minus its quota,
# **a float** (also when both are ints). A tenant missing from one dict counts 0 there: a tenant with
# blocks but no quota overuses all of them; a tenant with a quota but no blocks has negative overuse.
# Do not change `usage` or `quota`.
#
# ## 任务 1.4：overuse（2 分）
#
# $$\text{overuse}_t = u_t - \text{quota}_t$$
#
# 编写 `overuse(usage, quota)`：返回一个新字典，把出现在任一字典中的每个租户映射到“占用减配额”，结果是 **float**（两者都是 int 时也是）。
# 某租户在某个字典中缺失时，在那里按 0 计算：有块但没有配额的租户，其全部块都算超额；有配额但没有块的租户超额量为负。
# 不要修改 `usage` 和 `quota`。

# %% nbgrader={"grade": false, "grade_id": "task1_4_overuse", "locked": false, "schema_version": 3, "solution": true, "task": false}
def overuse(usage, quota):
    """Return usage - quota for every tenant in either dict, as a float; a missing entry counts as 0.

    Args:
        usage: dict from tenant name to the number of blocks it holds (int). Not changed.
        quota: dict from tenant name to its quota (float, or int), as returned by ``quotas``. Not changed.

    Returns:
        A new dict from every tenant in ``usage`` or ``quota`` to a float.
    """
    # TODO 1.4.1: collect every tenant of usage and of quota.
    # 提示：一个租户可能只出现在其中一个字典里；把两个字典的键各做成集合，再取并集（集合的 | 运算）。
    # Hint: a tenant may appear in only one of the two dicts; make a set of each dict's keys and take their union (the
    #       | operator of sets).
    ### BEGIN SOLUTION
    tenants = set(usage) | set(quota)
    ### END SOLUTION
    # TODO 1.4.2: return a dict from each tenant to float(usage) - float(quota), 0 where missing.
    # 提示：dict.get(key, 0) 在键缺失时返回 0；用 float(...) 保证结果是 float。
    # Hint: dict.get(key, 0) gives 0 for a missing key; float(...) makes the result a float.
    ### BEGIN SOLUTION
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
    assert_plain_equal(overuse({"a": 7}, {"a": 2}), {"a": 5.0}, "overuse({'a': 7}, {'a': 2}) (a float, also for ints)")
    assert_plain_equal(overuse({}, {}), {}, "overuse({}, {})")
    usage, quota = {"a": 3}, {"b": 1.5}
    overuse(usage, quota)
    assert_plain_equal((usage, quota), ({"a": 3}, {"b": 1.5}), "usage and quota after overuse (it must not change them)")
    overuse({"x": 4}, {"x": 1.0}).clear()  # The caller owns the dict it gets, and may empty it.
    assert_plain_equal(overuse({"x": 4}, {"x": 1.0}), {"x": 3.0},
                       "overuse({'x': 4}, {'x': 1.0}) after the caller emptied the dict of an earlier equal call "
                       "(a new dict on every call)")

    assert_plain_equal(overuse({"a": 1}, {"a": 1 - 1e-12}), {"a": 1 - (1 - 1e-12)},
                       "overuse({'a': 1}, {'a': 1 - 1e-12}) (an overuse of about 1e-12 is not 0)", abs_tol=0.0)

    ### BEGIN HIDDEN TESTS
    import random

    rng = random.Random(1404)
    for case in range(150):
        names = [f"t{i}" for i in range(10)]
        usage = {t: rng.randint(0, 100) for t in rng.sample(names, rng.randint(0, 6))}
        quota = {t: rng.choice([0.0, 12.5, 33.25, 50.0, float(rng.randint(0, 80)), rng.randint(0, 80)])
                 for t in rng.sample(names, rng.randint(0, 6))}
        expected = {}
        for t in list(usage) + list(quota):
            expected[t] = float(usage[t] if t in usage else 0) - float(quota[t] if t in quota else 0.0)
        u, q = dict(usage), dict(quota)
        assert_plain_equal(overuse(usage, quota), expected, f"overuse on random case {case}", reveal=False)
        assert usage == u and quota == q, f"overuse changed its input on random case {case}"
    ### END HIDDEN TESTS


_check_task1_4_overuse()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task1_5_victim_tenant_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 1.5: victim_tenant (3 points)
#
# $$\text{victim tenant} = \arg\max_{t:\ \text{overuse}_t > 0} \text{overuse}_t$$
#
# Write `victim_tenant(usage, quota)`: among the tenants with overuse **strictly** greater than 0, the one
# with the largest overuse; on a tie, the **smaller** tenant name, like every tie in this course; `None`
# when nobody is over quota (a tenant exactly at its quota is not over it). Overuse, not usage, decides: a
# tenant that holds the most blocks may be well inside its quota. You may call your `overuse` from Task 1.4.
# Do not change `usage` or `quota`.
#
# The trap: `max(over, key=lambda t: (over[t], t))` breaks a tie toward the **larger** name, because on
# equal overuse `max` takes the larger second entry. Negate the overuse and take the `min` instead.
#
# ## 任务 1.5：victim_tenant（3 分）
#
# $$\text{victim tenant} = \arg\max_{t:\ \text{overuse}_t > 0} \text{overuse}_t$$
#
# 编写 `victim_tenant(usage, quota)`：在超额量**严格**大于 0 的租户中，返回超额量最大的租户；平局时取名字**较小**的租户，与本课程中的所有平局规则一致；没有租户超额时返回 `None`（恰好等于配额的租户不算超额）。决定受害租户的是超额量而不是占用：占用块数最多的租户可能仍远在其配额之内。你可以调用任务 1.4 中你写的 `overuse`。不要修改 `usage` 和 `quota`。
#
# 陷阱：`max(over, key=lambda t: (over[t], t))` 在平局时会选名字**较大**的租户，因为超额量相等时 `max` 取第二项较大者。应当把超额量取负，再取 `min`。

# %% nbgrader={"grade": false, "grade_id": "task1_5_victim_tenant", "locked": false, "schema_version": 3, "solution": true, "task": false}
def victim_tenant(usage, quota):
    """Return the tenant with the largest positive overuse; ties go to the smaller name.

    Args:
        usage: dict from tenant name to blocks held (int). Not changed.
        quota: dict from tenant name to quota (float). Not changed.

    Returns:
        The tenant name (str), or None when no tenant has overuse > 0.
    """
    # TODO 1.5.1: over = {tenant: overuse} for the tenants whose overuse is strictly greater than 0.
    # 提示：用任务 1.4 的 overuse(usage, quota)，再用字典推导式筛选 amount > 0 的项。
    # Hint: call overuse(usage, quota) from Task 1.4, then keep the items with amount > 0.
    ### BEGIN SOLUTION
    over = {tenant: amount for tenant, amount in overuse(usage, quota).items() if amount > 0}
    ### END SOLUTION
    # TODO 1.5.2: return None when no tenant is over quota, else the largest overuse, the smaller name on a tie.
    # 提示：min 的 key 可以返回元组：把超额量取负，最大的超额量就成了最小的键；名字作为元组的第二项打破平局。
    # Hint: the key of min may return a tuple: negate the overuse, so that the largest overuse gives the smallest key, and
    #       let the name, second in the tuple, break ties.
    ### BEGIN SOLUTION
    if not over:
        return None
    return min(over, key=lambda tenant: (-over[tenant], tenant))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task1_5_victim_tenant", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that victim_tenant picks the largest positive overuse, ties to the smaller name."""


def _check_task1_5_victim_tenant():
    from course.checks import assert_plain_equal, check_type

    assert_plain_equal(victim_tenant({"a": 30, "b": 10, "c": 60}, {"a": 25.0, "b": 25.0, "c": 50.0}), "c",
                       "victim_tenant({'a': 30, 'b': 10, 'c': 60}, {'a': 25.0, 'b': 25.0, 'c': 50.0})")
    assert_plain_equal(victim_tenant({"a": 30, "b": 30}, {"a": 25.0, "b": 25.0}), "a",
                       "victim_tenant({'a': 30, 'b': 30}, {'a': 25.0, 'b': 25.0}) (a tie goes to the smaller name)")
    assert_plain_equal(victim_tenant({"a": 60, "b": 40}, {"a": 55.0, "b": 20.0}), "b",
                       "victim_tenant({'a': 60, 'b': 40}, {'a': 55.0, 'b': 20.0}) (the largest overuse, not usage)")
    check_type(victim_tenant({"a": 25, "b": 5}, {"a": 25.0, "b": 25.0}), type(None),
               "victim_tenant({'a': 25, 'b': 5}, {'a': 25.0, 'b': 25.0}) (exactly at quota is not over quota)")
    assert_plain_equal(victim_tenant({"newcomer": 1}, {"idle": 8.0}), "newcomer",
                       "victim_tenant({'newcomer': 1}, {'idle': 8.0}) (no quota: every block is overuse)")
    check_type(victim_tenant({}, {}), type(None), "victim_tenant({}, {})")
    assert_plain_equal(victim_tenant({"a": 3, "b": 1}, {"a": 3 - 1e-12, "b": 1.0}), "a",
                       "victim_tenant({'a': 3, 'b': 1}, {'a': 3 - 1e-12, 'b': 1.0}) (any overuse above 0 counts, "
                       "however small)")
    usage, quota = {"a": 3}, {"a": 1.0}
    victim_tenant(usage, quota)
    assert_plain_equal((usage, quota), ({"a": 3}, {"a": 1.0}), "usage and quota after victim_tenant (it must not change them)")

    assert_plain_equal(victim_tenant({"a": 10, "b": 10}, {"a": 5.0000001, "b": 5.0}), "b",
                       "victim_tenant({'a': 10, 'b': 10}, {'a': 5.0000001, 'b': 5.0}) (b's overuse is larger by 1e-7: "
                       "not a tie)")

    ### BEGIN HIDDEN TESTS
    import random


    def oracle(usage, quota):
        best, best_amount = None, 0.0
        for t in sorted(set(usage) | set(quota)):
            amount = float(usage.get(t, 0)) - float(quota.get(t, 0.0))
            if amount > 0 and (best is None or amount > best_amount):
                best, best_amount = t, amount
        return best


    rng = random.Random(1505)
    for case in range(150):
        names = [f"t{i}" for i in range(8)]
        usage = {t: rng.randint(0, 12) for t in rng.sample(names, rng.randint(0, 6))}
        quota = {t: float(rng.randint(0, 10)) for t in rng.sample(names, rng.randint(0, 6))}
        u, q = dict(usage), dict(quota)
        expected = oracle(usage, quota)
        result = victim_tenant(usage, quota)
        if expected is None:
            check_type(result, type(None), f"victim_tenant on random case {case}")
        else:
            assert_plain_equal(result, expected, f"victim_tenant on random case {case}", reveal=False)
        assert usage == u and quota == q, f"victim_tenant changed its input on random case {case}"
    assert_plain_equal(victim_tenant({"z": 9, "y": 9, "x": 1}, {}), "y", "victim_tenant({'z': 9, 'y': 9, 'x': 1}, {})",
                       reveal=False)
    assert_plain_equal(victim_tenant({"x": 1, "y": 7}, {"x": 0.9999999999999999, "y": 7.0}), "x",
                       "victim_tenant({'x': 1, 'y': 7}, {'x': 0.9999999999999999, 'y': 7.0})", reveal=False)
    ### END HIDDEN TESTS


_check_task1_5_victim_tenant()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task1_6_argmin_victim_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 1.6: argmin_victim on tensors (3 points)
#
# A server tracks thousands of sequences; their values live in a tensor on the GPU, and a Python loop over
# them would be slow. Write `argmin_victim(values, evictable=None)`: `values` is a 1-D tensor of any real
# dtype (integer or floating point; no NaN) on any device, `evictable` a bool tensor of the same shape and
# device (`None` means every entry is evictable). Return, as a Python `int`, the index of the smallest value
# among the evictable entries; the **lowest index** on a tie; `-1` when nothing is evictable (this includes
# an empty tensor). Do not change `values` or `evictable`. Use whole-tensor operations: no Python loop over
# the entries (the test counts torch operations on 8 and on 4,096 entries).
#
# Two traps, both in the visible test:
#
# - Masking with `+inf` (`values.masked_fill(~evictable, float("inf"))`) **crashes on int64** values
#   (an int64 tensor cannot hold inf), and it picks a protected entry when every evictable value is `+inf`
#   itself.
# - Converting int64 values to float to make room for inf loses precision: $2^{53}+1$ and $2^{53}$ are the
#   same float64.
#
# Select the evictable indices first instead, and compare only their values.
#
# ## 任务 1.6：张量上的 argmin_victim（3 分）
#
# 服务器要跟踪成千上万个序列，它们的价值存放在 GPU 上的一个张量里，对其写 Python 循环会很慢。编写 `argmin_victim(values, evictable=None)`：`values` 是任意设备上的一维张量，其数据类型（dtype）可以是任意实数类型（整数或浮点数，不含 NaN）；`evictable` 是同形状、同设备的 bool 张量（`None` 表示全部条目都可驱逐）。以 Python `int` 返回可驱逐条目中最小值的索引；平局时返回**最小索引**；没有可驱逐条目时（包括空张量）返回 `-1`。不要修改 `values` 和 `evictable`。只使用整张量运算，不要对条目写 Python 循环（测试会统计在 8 个和 4,096 个条目上的 torch 运算次数）。
#
# 两个陷阱，可见测试中都有：
#
# - 用 `+inf` 做掩码（`values.masked_fill(~evictable, float("inf"))`）在 int64 的值上**会崩溃**（int64 张量存不下 inf），而且当每个可驱逐的值本身就是 `+inf` 时，它会选中一个受保护的条目。
# - 为了能放下 inf 而把 int64 转成浮点数会损失精度：$2^{53}+1$ 与 $2^{53}$ 是同一个 float64。
#
# 应当先选出可驱逐条目的索引，只比较它们的值。

# %% nbgrader={"grade": false, "grade_id": "task1_6_argmin_victim", "locked": false, "schema_version": 3, "solution": true, "task": false}
def argmin_victim(values, evictable=None):
    """Return the index of the smallest evictable value (lowest index on ties), or -1.

    Args:
        values: 1-D tensor of a real dtype (no NaN), on any device. Not changed.
        evictable: bool tensor of the same shape and device, or None (every entry evictable). Not changed.

    Returns:
        A Python int: the index into ``values``, or -1 when no entry is evictable.
    """
    # TODO 1.6.1: candidates = the indices of the evictable entries, a 1-D int64 tensor on values' device.
    # 提示：evictable 为 None 时，每个下标都是候选（torch.arange，放在 values 所在的设备上）；否则取值为 True 的位置
    #       （torch.nonzero，再展平成一维）。
    # Hint: when evictable is None every index is a candidate (torch.arange, on values' device); otherwise take the positions
    #       of the True entries (torch.nonzero, flattened to 1-D).
    ### BEGIN SOLUTION
    if evictable is None:
        candidates = torch.arange(values.shape[0], device=values.device)
    else:
        candidates = torch.nonzero(evictable).flatten()
    ### END SOLUTION
    # TODO 1.6.2: return -1 when there is no candidate.
    # 提示：张量的 numel() 是它的元素个数。
    # Hint: a tensor's numel() is its number of elements.
    ### BEGIN SOLUTION
    if candidates.numel() == 0:
        return -1
    ### END SOLUTION
    # TODO 1.6.3: return the candidate whose value is smallest, as a Python int.
    # 提示：values[candidates] 只取候选的值；torch.argmin 返回最小值第一次出现的位置；int(...) 把单元素张量变成 int。
    # Hint: values[candidates] keeps the candidates' values; torch.argmin gives the first minimum; int(...) makes an int.
    ### BEGIN SOLUTION
    return int(candidates[torch.argmin(values[candidates])])
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task1_6_argmin_victim", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that argmin_victim finds the smallest evictable value, lowest index on ties, on every device, without a loop."""


def _check_task1_6_argmin_victim():
    from course.checks import assert_no_python_loop, assert_plain_equal
    from course.env import available_devices

    for device in available_devices():
        values = torch.tensor([3.0, 1.0, 2.0, 1.0], device=device)
        assert_plain_equal(argmin_victim(values), 1, f"argmin_victim([3., 1., 2., 1.]) on {device} (a tie goes to the lower index)")
        mask = torch.tensor([True, False, True, True], device=device)
        assert_plain_equal(argmin_victim(values, mask), 3, f"argmin_victim([3., 1., 2., 1.], mask [T, F, T, T]) on {device}")
        none = torch.zeros(4, dtype=torch.bool, device=device)
        assert_plain_equal(argmin_victim(values, none), -1, f"argmin_victim(values, all False) on {device}")
        empty = torch.tensor([], device=device)
        assert_plain_equal(argmin_victim(empty), -1, f"argmin_victim(empty tensor) on {device}")
        steps = torch.tensor([9, 4, 4, 7], dtype=torch.int64, device=device)
        assert_plain_equal(argmin_victim(steps), 1, f"argmin_victim(int64 [9, 4, 4, 7]) on {device}")
        top = torch.tensor([2**62, 2**63 - 1, 2**63 - 1], dtype=torch.int64, device=device)
        assert_plain_equal(argmin_victim(top, torch.tensor([False, True, True], device=device)), 1,
                           f"argmin_victim(int64 [2**62, 2**63 - 1, 2**63 - 1], mask [F, T, T]) on {device} "
                           f"(an int64 tensor cannot hold +inf)")
        bottom = torch.tensor([-(2**63) + 1, -(2**63), 5], dtype=torch.int64, device=device)
        assert_plain_equal(argmin_victim(bottom), 1, f"argmin_victim(int64 [-(2**63) + 1, -(2**63), 5]) on {device} "
                           "(the smallest int64: negating it gives itself again)")
        close = torch.tensor([2**53 + 1, 2**53], dtype=torch.int64, device=device)
        assert_plain_equal(argmin_victim(close), 1,
                           f"argmin_victim(int64 [2**53 + 1, 2**53]) on {device} (in float64 both are 2**53)")
        infinite = torch.tensor([float("inf"), float("inf")], device=device)
        assert_plain_equal(argmin_victim(infinite, torch.tensor([False, True], device=device)), 1,
                           f"argmin_victim([inf, inf], mask [F, T]) on {device} (an evictable value may be +inf)")
        fine = torch.tensor([1.0 + 2**-40, 1.0], dtype=torch.float64, device=device)
        assert_plain_equal(argmin_victim(fine), 1,
                           f"argmin_victim(float64 [1 + 2**-40, 1.0]) on {device} (in float32 both are 1.0)")
        argmin_victim(values, mask)
        assert values.tolist() == [3.0, 1.0, 2.0, 1.0] and mask.tolist() == [True, False, True, True], \
            f"argmin_victim changed its input (values or evictable) on {device}"
        for dtype in (torch.int32, torch.float64):
            typed = torch.tensor([5, 2, 2, 8], dtype=dtype, device=device)
            assert_plain_equal(argmin_victim(typed, mask), 2, f"argmin_victim({dtype} [5, 2, 2, 8], mask [T, F, T, T]) on {device}")
    small = (torch.arange(8.0).flip(0), torch.ones(8, dtype=torch.bool))
    large = (torch.arange(4096.0).flip(0), torch.ones(4096, dtype=torch.bool))
    assert_no_python_loop(argmin_victim, small, large, "argmin_victim")

    ### BEGIN HIDDEN TESTS
    import random


    def oracle(values, mask):
        best = -1
        for i, (v, m) in enumerate(zip(values, mask)):
            if m and (best < 0 or v < values[best]):
                best = i
        return best


    rng = random.Random(1606)
    dtypes = [torch.int64, torch.float32, torch.float64, torch.int32, torch.int16, torch.uint8, torch.float16]
    for device in available_devices():
        for case in range(175):
            n = rng.randint(0, 40)
            dtype = dtypes[case % len(dtypes)]
            low = 0 if dtype == torch.uint8 else -3
            vals = [rng.randint(low, low + 6) for _ in range(n)]
            mask = [rng.random() < 0.6 for _ in range(n)]
            t = torch.tensor(vals, dtype=dtype, device=device)
            m = torch.tensor(mask, dtype=torch.bool, device=device)
            assert_plain_equal(argmin_victim(t, m), oracle(vals, mask),
                               f"argmin_victim on random case {case} ({dtype}, {device})", reveal=False)
            assert_plain_equal(argmin_victim(t), oracle(vals, [True] * n),
                               f"argmin_victim without a mask on random case {case} ({dtype}, {device})", reveal=False)
            assert t.tolist() == vals and m.tolist() == mask, f"argmin_victim changed its input on random case {case}"
        for dtype in (torch.int64, torch.int32):
            top = torch.iinfo(dtype).max
            big = torch.tensor([top - 1, top, top, top - 2], dtype=dtype, device=device)
            assert_plain_equal(argmin_victim(big, torch.tensor([False, True, True, False], device=device)), 1,
                               f"argmin_victim with {dtype} values at the top of the range on {device}", reveal=False)
        close = torch.tensor([2**60 + 3, 2**60 + 1, 2**60 + 2], dtype=torch.int64, device=device)
        assert_plain_equal(argmin_victim(close, torch.tensor([True, True, True], device=device)), 1,
                           f"argmin_victim with large int64 values that differ by 1 on {device}", reveal=False)
        infinite = torch.tensor([1.0, float("inf"), float("inf")], dtype=torch.float64, device=device)
        assert_plain_equal(argmin_victim(infinite, torch.tensor([False, True, True], device=device)), 1,
                           f"argmin_victim with evictable values of +inf on {device}", reveal=False)
        tiny = torch.tensor([1e-46, 0.0, 1e-300], dtype=torch.float64, device=device)
        assert_plain_equal(argmin_victim(tiny), 1, f"argmin_victim with float64 values below float32's range on {device}",
                           reveal=False)
    ### END HIDDEN TESTS


_check_task1_6_argmin_victim()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task1_7_lex_argmin_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 1.7: lex_argmin on tensors (4 points)
#
# LFU ranks by the pair $(\text{use\_count}, t_\text{last})$. On tensors the pair is a list of key columns:
# `keys[0]` decides, `keys[1]` breaks its ties, and so on. Write `lex_argmin(keys, evictable=None)`: the index
# (a Python `int`) of the lexicographically smallest evictable entry, the **lowest index** when all keys tie,
# `-1` when nothing is evictable (an empty column included). Keys are 1-D int64 tensors of equal length on
# one device; `evictable` is a bool tensor of that length, or `None` for all. Raise `ValueError` when `keys`
# is empty. Do not change the key tensors or `evictable`.
#
# It must be correct for **any** int64 values. The trap: a common trick packs two keys into one number,
# `keys[0] * 2**32 + keys[1]`. It overflows for large values, and it ranks wrongly as soon as `keys[1]`
# reaches $2^{32}$: $(0, 2^{33})$ packs to $2^{33}$, more than $(1, 0)$ packed to $2^{32}$. Loop over the
# key columns instead (a handful), never over the entries (the test counts torch operations on 8 and on
# 4,096 entries): narrow the set of candidates one key at a time.
#
# ## 任务 1.7：张量上的 lex_argmin（4 分）
#
# LFU 按二元组 $(\text{use\_count}, t_\text{last})$ 排序。在张量上，这个元组是一组键列：`keys[0]` 先决定，`keys[1]` 打破它的平局，依此类推。编写 `lex_argmin(keys, evictable=None)`：以 Python `int` 返回字典序最小的可驱逐条目的索引；所有键都相同时返回**最小索引**；没有可驱逐条目时（包括空的键列）返回 `-1`。键是同一设备上等长的一维 int64 张量；`evictable` 是同长度的 bool 张量，`None` 表示全部可驱逐。`keys` 为空时抛出 `ValueError`。不要修改键张量和 `evictable`。
#
# 它必须对**任意** int64 值都正确。陷阱：常见技巧是把两个键打包成一个数 `keys[0] * 2**32 + keys[1]`。数值大时它会溢出，而且只要 `keys[1]` 达到 $2^{32}$ 排序就会出错：$(0, 2^{33})$ 打包成 $2^{33}$，比 $(1, 0)$ 打包成的 $2^{32}$ 还大。
# 应当对键列写循环（只有几列），而不要对条目写循环（测试会统计在 8 个和 4,096 个条目上的 torch 运算次数）：每次用一个键缩小候选集合。

# %% nbgrader={"grade": false, "grade_id": "task1_7_lex_argmin", "locked": false, "schema_version": 3, "solution": true, "task": false}
def lex_argmin(keys, evictable=None):
    """Return the index of the lexicographically smallest evictable entry, or -1.

    Args:
        keys: non-empty list of 1-D int64 tensors of equal length on one device; keys[0] is
            compared first, keys[1] breaks its ties, and so on. Not changed.
        evictable: bool tensor of the same length, or None (every entry evictable). Not changed.

    Returns:
        A Python int: the lowest index among the smallest entries, or -1 when none is evictable.

    Raises:
        ValueError: when ``keys`` is empty.
    """
    # TODO 1.7.1: raise ValueError when keys is empty.
    # 提示：len(keys) == 0。
    # Hint: len(keys) == 0.
    ### BEGIN SOLUTION
    if len(keys) == 0:
        raise ValueError("lex_argmin needs at least one key tensor")
    ### END SOLUTION
    # TODO 1.7.2: candidates = a bool mask (a copy: never change evictable); return -1 when it is all False.
    # 提示：evictable 为 None 时用全为 True 的掩码（torch.ones_like，指定 bool 类型）；否则用 evictable 的副本（clone），
    #       而不是它本身；.any() 判断是否还有候选。
    # Hint: when evictable is None, a mask of all True (torch.ones_like with a bool dtype); otherwise a copy of evictable
    #       (clone), never evictable itself; .any() says whether a candidate is left.
    ### BEGIN SOLUTION
    if evictable is None:
        candidates = torch.ones_like(keys[0], dtype=torch.bool)
    else:
        candidates = evictable.clone()
    if not bool(candidates.any()):
        return -1
    ### END SOLUTION
    # TODO 1.7.3: for each key column, keep only the candidates whose key equals the smallest candidate key.
    # 提示：torch.where 把非候选处填成 torch.iinfo(torch.int64).max，其 .min() 就是候选中最小的键；再只保留键等于它的候选。
    # Hint: torch.where fills non-candidates with torch.iinfo(torch.int64).max; its .min() is the smallest
    # candidate key. Then keep only the candidates whose key equals it.
    ### BEGIN SOLUTION
    for key in keys:
        largest = torch.iinfo(key.dtype).max
        smallest_value = torch.where(candidates, key, torch.full_like(key, largest)).min()
        candidates = candidates & (key == smallest_value)
    ### END SOLUTION
    # TODO 1.7.4: return the lowest index that is still a candidate, as a Python int.
    # 提示：torch.nonzero(candidates) 按升序列出索引；第一行就是最小索引。
    # Hint: torch.nonzero(candidates) lists the indices in ascending order; its first row is the lowest.
    ### BEGIN SOLUTION
    return int(torch.nonzero(candidates)[0, 0])
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task1_7_lex_argmin", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
"""Check that lex_argmin compares keys lexicographically, for any int64 values, on every device, without a loop."""


def _check_task1_7_lex_argmin():
    from course.checks import assert_no_python_loop, assert_plain_equal, assert_raises
    from course.env import available_devices

    for device in available_devices():
        def t(values, device=device):
            return torch.tensor(values, dtype=torch.int64, device=device)

        use_count, last_access_step = t([2, 1, 1, 3]), t([5, 9, 4, 1])
        assert_plain_equal(lex_argmin([use_count, last_access_step]), 2,
                           f"lex_argmin([use_count [2, 1, 1, 3], last_access_step [5, 9, 4, 1]]) on {device}")
        mask = torch.tensor([True, True, False, True], device=device)
        assert_plain_equal(lex_argmin([use_count, last_access_step], mask), 1,
                           f"lex_argmin(same keys, mask [T, T, F, T]) on {device}")
        assert_plain_equal(lex_argmin([t([0, 1]), t([2**33, 0])]), 0,
                           f"lex_argmin([[0, 1], [2**33, 0]]) on {device} ((0, 2**33) < (1, 0): do not pack the keys)")
        assert_plain_equal(lex_argmin([t([2**62, -2**62, -2**62]), t([0, 2**63 - 1, -2**63])]), 2,
                           f"lex_argmin with values near the int64 limits on {device}")
        assert_plain_equal(lex_argmin([t([5, 5, 5]), t([2, 2, 2])]), 0, f"lex_argmin(every key ties) on {device} (the lowest index)")
        assert_plain_equal(lex_argmin([t([5, 5, 5])], torch.tensor([False, True, True], device=device)), 1,
                           f"lex_argmin([[5, 5, 5]], mask [F, T, T]) on {device} (the lowest evictable index)")
        assert_plain_equal(lex_argmin([use_count], torch.zeros(4, dtype=torch.bool, device=device)), -1,
                           f"lex_argmin(keys, all False) on {device}")
        assert_plain_equal(lex_argmin([t([])]), -1, f"lex_argmin([empty column]) on {device}")
        lex_argmin([use_count, last_access_step], mask)
        assert use_count.tolist() == [2, 1, 1, 3] and last_access_step.tolist() == [5, 9, 4, 1], \
            f"lex_argmin changed its key tensors on {device}"
        assert mask.tolist() == [True, True, False, True], f"lex_argmin changed evictable on {device}"
    assert_raises(ValueError, "lex_argmin([])", lex_argmin, [])
    assert_raises(ValueError, "lex_argmin([], mask of all False) (checked even when nothing is evictable)", lex_argmin, [],
                  torch.zeros(3, dtype=torch.bool))
    small = ([torch.arange(8).flip(0), torch.zeros(8, dtype=torch.int64)], torch.ones(8, dtype=torch.bool))
    large = ([torch.arange(4096).flip(0), torch.zeros(4096, dtype=torch.int64)], torch.ones(4096, dtype=torch.bool))
    assert_no_python_loop(lex_argmin, small, large, "lex_argmin")

    ### BEGIN HIDDEN TESTS
    import random


    def oracle(columns, mask):
        rows = [tuple(column[i] for column in columns) + (i,) for i in range(len(mask)) if mask[i]]
        return min(rows)[-1] if rows else -1


    rng = random.Random(1707)
    extremes = [-2**63, -2**62, -1, 0, 1, 2**31, 2**32 + 1, 2**33, 2**62, 2**63 - 1]
    for device in available_devices():
        for case in range(200):
            n = rng.randint(1, 30)
            k = rng.randint(1, 3)
            if case % 3 == 0:
                columns = [[rng.choice(extremes) for _ in range(n)] for _ in range(k)]
            else:
                columns = [[rng.randint(0, 3) for _ in range(n)] for _ in range(k)]
            mask = [rng.random() < 0.7 for _ in range(n)]
            tensors = [torch.tensor(c, dtype=torch.int64, device=device) for c in columns]
            m = torch.tensor(mask, device=device)
            assert_plain_equal(lex_argmin(tensors, m), oracle(columns, mask),
                               f"lex_argmin on random case {case} ({k} keys, {device})", reveal=False)
            assert_plain_equal(lex_argmin(tensors), oracle(columns, [True] * n),
                               f"lex_argmin without a mask on random case {case} ({device})", reveal=False)
            assert all(x.tolist() == c for x, c in zip(tensors, columns)) and m.tolist() == mask, \
                f"lex_argmin changed its input tensors on random case {case}"
        four = [torch.tensor(c, dtype=torch.int64, device=device) for c in ([1, 1, 1, 1], [0, 0, 0, 0], [3, 2, 2, 2], [9, 8, 7, 7])]
        assert_plain_equal(lex_argmin(four), 2, f"lex_argmin with four key columns on {device}", reveal=False)
    ### END HIDDEN TESTS


_check_task1_7_lex_argmin()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task1_8_quotas_tensor_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 1.8: quotas_tensor (3 points)
#
# The tensor form of Task 1.3: `weights` is a 1-D tensor with one weight per tenant (any real dtype, any
# device). Return $w_t / \sum_j w_j \cdot B$ as a **float64** tensor on the weights' device (float64 so that it
# agrees with the Python floats of `quotas`; int64 weights give float64 quotas too, and are summed in float64:
# `[2**62, 2**62]` would overflow an int64 sum). Raise `ValueError` in
# the same cases as `quotas`: a negative, infinite or **NaN** weight (`torch.isfinite` is False for NaN and
# ±inf; `weights < 0` is False for NaN), weights that sum to 0 (an empty tensor included), `total_blocks < 0`.
#
# Do not change `weights`. The trap: `weights.to(torch.float64)` returns **the same tensor** when `weights`
# is already float64, so an in-place division (`w /= w.sum()`) would change the caller's weights. Divide
# out of place (`w / w.sum()`).
#
# ## 任务 1.8：quotas_tensor（3 分）
#
# 任务 1.3 的张量版本：`weights` 是一维张量，每个租户一个权重（任意实数数据类型、任意设备）。以 **float64** 张量返回 $w_t / \sum_j w_j \cdot B$，并放在 weights 所在的设备上（使用 float64，以便与 `quotas` 的 Python float 一致；int64 权重得到的配额也是 float64，并且要在 float64 中求和：`[2**62, 2**62]` 的 int64 求和会溢出）。在与 `quotas` 相同的情况下抛出 `ValueError`：负数、无穷大或 **NaN** 权重（`torch.isfinite` 对 NaN 和 ±inf 为 False；`weights < 0` 对 NaN 为 False）、权重之和为 0（包括空张量）、`total_blocks < 0`。
#
# 不要修改 `weights`。陷阱：当 `weights` 已经是 float64 时，`weights.to(torch.float64)` 返回的是**同一个张量**，因此原地除法（`w /= w.sum()`）会改掉调用者的权重。应当做非原地的除法（`w / w.sum()`）。

# %% nbgrader={"grade": false, "grade_id": "task1_8_quotas_tensor", "locked": false, "schema_version": 3, "solution": true, "task": false}
def quotas_tensor(weights, total_blocks):
    """Return w / sum(w) * total_blocks as a float64 tensor on the weights' device.

    Args:
        weights: 1-D tensor of weights (any real dtype), one per tenant, on any device. Not changed.
        total_blocks: the cache size in blocks, an int >= 0.

    Returns:
        A float64 tensor of the same shape and device as ``weights``.

    Raises:
        ValueError: for a negative, infinite or NaN weight, weights that sum to 0 (an empty
            tensor included), or total_blocks < 0.
    """
    # TODO 1.8.1: raise ValueError for total_blocks < 0; convert the weights to float64.
    # 提示：Tensor.to 转换数据类型；weights 已是 float64 时它返回同一个张量，所以之后不要原地修改转换的结果。
    # Hint: Tensor.to converts the dtype; for float64 weights it returns the very same tensor, so never change its result in
    #       place afterwards.
    ### BEGIN SOLUTION
    if total_blocks < 0:
        raise ValueError(f"total_blocks must be >= 0, got {total_blocks}")
    weights = weights.to(torch.float64)
    ### END SOLUTION
    # TODO 1.8.2: raise ValueError for a negative, infinite or NaN weight, and for weights that sum to 0.
    # 提示：torch.isfinite(w).all() 与 (w < 0).any()；bool(...) 或 float(...) 把单元素张量变成 Python 值。
    # Hint: torch.isfinite(w).all() and (w < 0).any(); bool(...) or float(...) turns a one-element tensor into Python.
    ### BEGIN SOLUTION
    if not bool(torch.isfinite(weights).all()) or bool((weights < 0).any()):
        raise ValueError("every weight must be finite and >= 0")
    total_weight = weights.sum()
    if float(total_weight) == 0.0:
        raise ValueError("weights must not sum to 0")
    ### END SOLUTION
    # TODO 1.8.3: return the quotas w / Σw · B as a new tensor.
    # 提示：非原地的运算符（/ 和 *）总是返回新张量；原地的 /= 会改掉调用者的 float64 权重。
    # Hint: out-of-place operators (/ and *) always return a new tensor; an in-place /= would change the caller's float64
    #       weights.
    ### BEGIN SOLUTION
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
        huge = torch.tensor([2**62, 2**62], device=device)
        assert_same_tensor(quotas_tensor(huge, 64), torch.tensor([32.0, 32.0], dtype=torch.float64, device=device),
                           f"quotas_tensor(int64 [2**62, 2**62], 64) on {device} (their int64 sum would overflow: sum "
                           "in float64)")
        small = torch.tensor([1, 3], dtype=torch.int32, device=device)
        assert_same_tensor(quotas_tensor(small, 8), torch.tensor([2.0, 6.0], dtype=torch.float64, device=device),
                           f"quotas_tensor(int32 [1, 3], 8) on {device}")
        float64 = torch.tensor([1.0, 1.0], dtype=torch.float64, device=device)
        assert_same_tensor(quotas_tensor(float64, 8), torch.tensor([4.0, 4.0], dtype=torch.float64, device=device),
                           f"quotas_tensor(float64 [1., 1.], 8) on {device}")
        assert float64.tolist() == [1.0, 1.0], f"quotas_tensor changed its float64 weights on {device} (divide out of place)"
        for bad, why in (([-1.0, 2.0], "a negative weight"), ([float("nan"), 1.0], "NaN is not a weight"),
                         ([float("inf"), 1.0], "an infinite weight"), ([0.0, 0.0], "weights sum to 0"),
                         ([], "an empty tensor: weights sum to 0")):
            assert_raises(ValueError, f"quotas_tensor({bad}, 10) on {device} ({why})", quotas_tensor,
                          torch.tensor(bad, device=device), 10)
        for bad, dtype, why in (([-1, 2], torch.int64, "an int64 weight that is negative"),
                                ([-(10.0**-50), 1.0], torch.float64, "a float64 weight just below 0, which float32 "
                                                                     "rounds to -0.0")):
            assert_raises(ValueError, f"quotas_tensor({dtype} {bad}, 10) on {device} ({why})", quotas_tensor,
                          torch.tensor(bad, dtype=dtype, device=device), 10)
        assert_same_tensor(quotas_tensor(torch.tensor([-0.0, 1.0], device=device), 10),
                           torch.tensor([0.0, 10.0], dtype=torch.float64, device=device),
                           f"quotas_tensor([-0.0, 1.0], 10) on {device} (-0.0 is not negative: -0.0 < 0 is False)")
        assert_raises(ValueError, f"quotas_tensor([1.], -1) on {device}", quotas_tensor, torch.tensor([1.0], device=device), -1)
        assert_raises(ValueError, f"quotas_tensor([nan], 0) on {device} (the weights are checked when total_blocks is 0 too)",
                      quotas_tensor, torch.tensor([float("nan")], device=device), 0)

    for device in available_devices():
        # Tiny weights are weights (only a sum of exactly 0 is refused), and a quota is not rounded.
        tiny = torch.tensor([1e-12, 3e-12], dtype=torch.float64, device=device)
        assert_same_tensor(quotas_tensor(tiny, 8), torch.tensor([2.0, 6.0], dtype=torch.float64, device=device),
                           f"quotas_tensor(float64 [1e-12, 3e-12], 8) on {device} (tiny weights, not a sum of 0)",
                           atol=0.0, rtol=1e-9)
        uneven = torch.tensor([1.0, 1e-12], dtype=torch.float64, device=device)
        assert_same_tensor(quotas_tensor(uneven, 1), torch.tensor([1.0, 1e-12], dtype=torch.float64, device=device),
                           f"quotas_tensor(float64 [1., 1e-12], 1) on {device} (a quota of 1e-12 is not 0)",
                           atol=0.0, rtol=1e-9)

    ### BEGIN HIDDEN TESTS
    import random

    rng = random.Random(1808)
    for device in available_devices():
        for case in range(100):
            n = rng.randint(1, 12)
            dtype = [torch.float32, torch.float64, torch.int64, torch.int32][case % 4]
            w = [(rng.randint(0, 9) if case % 2 or not dtype.is_floating_point else rng.uniform(0, 3)) for _ in range(n)]
            w[0] = w[0] or 1
            total = rng.choice([0, 1, 64, 512, 10000])
            t = torch.tensor(w, device=device).to(dtype)
            before = t.tolist()
            w64 = t.cpu().to(torch.float64)
            expected = (w64 / w64.sum() * total).to(device)
            assert_same_tensor(quotas_tensor(t, total), expected, f"quotas_tensor on random case {case} ({dtype}, {device})",
                               atol=1e-9, rtol=1e-12, reveal=False)
            assert t.tolist() == before, f"quotas_tensor changed its input on random case {case}"
        # int64 weights whose sum does not fit in an int64.
        for big in ([2**62, 2**62], [2**62] * 4, [2**63 - 1, 1]):
            t = torch.tensor(big, dtype=torch.int64, device=device)
            w64 = t.cpu().to(torch.float64)
            assert_same_tensor(quotas_tensor(t, 64), (w64 / w64.sum() * 64).to(device),
                               f"quotas_tensor(int64 {big}, 64) on {device} (their sum does not fit in an int64)",
                               atol=1e-9, rtol=1e-12, reveal=False)
        for bad in ([float("nan"), 1.0], [1.0, float("nan")], [float("inf")], [1.0, float("-inf")], [1.0, -0.5], [],
                    [0.0]):
            assert_raises(ValueError, f"quotas_tensor({bad}, 64) on {device}", quotas_tensor,
                          torch.tensor(bad, dtype=torch.float64, device=device), 64)
        assert_raises(ValueError, f"quotas_tensor(int64 [0, 0], 64) on {device}", quotas_tensor,
                      torch.tensor([0, 0], device=device), 64)
        for bad in ([1.0, float("nan")], [float("-inf")], [2.0, -1.0], [], [0.0, 0.0]):
            assert_raises(ValueError, f"quotas_tensor({bad}, 0) on {device}", quotas_tensor,
                          torch.tensor(bad, dtype=torch.float64, device=device), 0)
        assert_raises(ValueError, f"quotas_tensor([1.], -1) on {device}", quotas_tensor, torch.tensor([1.0], device=device), -1)
    ### END HIDDEN TESTS


_check_task1_8_quotas_tensor()

# %% [markdown]
# ## Experiment 1: one ranking, drawn | 实验 1：画出一次排序
#
# Eight sequences with their last access step (LRU's value). The bars are sorted in eviction order by your
# `eviction_order`; the red bar is `select_victim`'s choice. Change the steps and re-run: the victim is
# always the leftmost bar, and equal steps line up by id (`doc-03` and `chat-02` share step 12, so
# `chat-02` goes first).
#
# 八个序列及其最近访问时刻（LRU 的价值）。柱子按你的 `eviction_order` 排成驱逐顺序；红色柱子是 `select_victim` 选出的受害者。
# 修改访问时刻后重新运行：受害者总是最左边的柱子，访问时刻相同时按 id 排列（`doc-03` 与 `chat-02` 的访问时刻都是 12，所以 `chat-02` 先被驱逐）。

# %%
import matplotlib.pyplot as plt

from course.plots import label

last_access_step = {"chat-17": 41, "doc-03": 12, "chat-02": 12, "code-88": 57,
                    "doc-11": 30, "chat-40": 5, "sys-00": 63, "code-09": 30}
order = eviction_order(last_access_step)
victim = select_victim(last_access_step)
print("eviction order:", order)

fig, ax = plt.subplots(figsize=(8, 3.2))
colors = ["tab:red" if seq_id == victim else "tab:blue" for seq_id in order]
ax.bar(order, [last_access_step[seq_id] for seq_id in order], color=colors)
ax.set_title(label(f"LRU ranking: victim = {victim} (red), then left to right",
                   f"LRU 排序：受害者 = {victim}（红色），其后从左到右"))
ax.set_xlabel(label("sequence id, in eviction order", "序列 id（按驱逐顺序）"))
ax.set_ylabel(label("last access step (logical time)", "最近访问时刻（逻辑时钟）"))
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Experiment 2: move the weights | 实验 2：调整权重
#
# Three tenants share a cache of 512 blocks. Their usage is fixed (300, 150 and 62 blocks); move the weight
# sliders and watch each quota, each tenant's overuse and the tenant that eviction would take a block from
# (your `quotas`, `overuse` and `victim_tenant`). Giving a tenant more weight can move the victim elsewhere;
# when nobody is over quota, the fair policy hands the choice back to a global policy such as LRU; with
# every weight at 0, `quotas` raises `ValueError` and the table shows its message.
#
# 三个租户共享一个 512 块的缓存。它们的占用固定（300、150 和 62 块）；拖动权重滑块，观察每个租户的配额、超额量，以及驱逐将从哪个租户取块（使用你的 `quotas`、`overuse` 和 `victim_tenant`）。提高某个租户的权重可能使受害租户换成别的租户；没有租户超额时，公平策略把决定交还给 LRU 等全局策略；所有权重都为 0 时，`quotas` 抛出 `ValueError`，表格显示它的消息。

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
        plot.clear_output()
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
        ax.bar([i - 0.2 for i in range(3)], [quota[t] for t in names], width=0.4, label=label("quota", "配额"))
        ax.bar([i + 0.2 for i in range(3)], [USAGE[t] for t in names], width=0.4, label=label("usage", "占用"))
        ax.set_xticks(range(3), names)
        ax.set_ylabel(label("blocks", "块数"))
        ax.set_title(label(f"Quota vs usage of {TOTAL_BLOCKS} blocks; victim tenant: {victim}",
                           f"{TOTAL_BLOCKS} 块的配额与占用；受害租户：{victim}"))
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
# to the sequence id, the smaller first) is what makes it deterministic, on dicts and on tensors alike.
#
# **一句话记住：** 每个驱逐策略都是一次排序，受害者 = argmin Value(s)；正是完整的打破平局规则（一直比到序列 id，较小者先）让结果确定，无论在字典上还是在张量上。
#
# ## Prerequisites and further reading | 前置与相关阅读
#
# - **Prerequisites:** Python dicts, `min` and `sorted` with a `key` function; PyTorch tensors, boolean
#   masks and indexing with a tensor of indices.
# - **Further reading:** Belady (1966) for the optimal offline policy (evict the entry used furthest in the
#   future), which later notebooks compare against; the vLLM paper (Kwon et al., 2023) for the blocks that
#   these rankings free; Jain et al. (1984) for the fairness index of notebook 04.
# - Next: [02. Paged KV cache](../02_paged_kv_cache/02_paged_kv_cache.ipynb), the blocks and metadata that
#   these rankings free.
#
# - **前置知识：** Python 字典，带 `key` 函数的 `min` 与 `sorted`；PyTorch 张量、bool 掩码，以及用索引张量做索引。
# - **相关阅读：** Belady（1966）提出的最优（Belady）离线策略：驱逐下一次使用最晚的条目，后面的 notebook 会以它为基准；vLLM 论文（Kwon 等，2023）介绍这些排序所释放的块；Jain 等（1984）提出 notebook 04 所用的公平性指数（Jain）。
# - 下一节：[02. 分页 KV 缓存](../02_paged_kv_cache/02_paged_kv_cache.ipynb)，这些排序所释放的块与元数据。
#
# ## References | 参考文献
#
# - Belady, L. A. "A study of replacement algorithms for a virtual-storage computer." *IBM Systems Journal* 5(2), 1966.
# - Kwon, W., et al. "Efficient Memory Management for Large Language Model Serving with PagedAttention." SOSP 2023 (vLLM).
# - Zheng, L., et al. "SGLang: Efficient Execution of Structured Language Model Programs." NeurIPS 2024 (RadixAttention).
# - Sheng, Y., Cao, S., Li, D., Zhu, B., Li, Z., Zhuo, D., Gonzalez, J. E., Stoica, I. "Fairness in Serving Large Language Models." OSDI 2024 (Virtual Token Counter).
# - Jain, R., Chiu, D.-M., Hawe, W. "A Quantitative Measure of Fairness and Discrimination for Resource Allocation in Shared Computer Systems." DEC-TR-301, 1984.
# - The seed designs: the "KV Eviction formula-to-code" walkthrough (LLM-REVIEW) and the "KV Cache Scheduling" chapter of Datawhale's llm-algo-leetcode (text CC BY 4.0, code Apache-2.0).

# %% [markdown] given="glossary"
# ## Glossary | 术语表
#
# The course uses one Chinese term for each concept, in every notebook, hint and table. Code identifiers stay
# in English (`seq_id`, `block_table`).
#
# 本课程对每个概念只用一个中文术语，所有 notebook、提示和表格都一样。代码标识符保留英文（`seq_id`、`block_table`）。
#
# | English | 中文 | note |
# |---|---|---|
# | eviction, evict | 驱逐 | |
# | victim | 受害者 | the entry chosen for eviction |
# | victim tenant | 受害租户 | the tenant to evict from |
# | candidate | 候选 | an entry that may be evicted |
# | fallback | 兜底 | e.g. global LRU when no tenant is over quota |
# | eviction policy | 驱逐策略 | |
# | value, score (of an entry) | 价值, 分数 | victim = argmin 价值 |
# | tie, tie-break | 平局, 打破平局 | |
# | lexicographic order | 字典序 | |
# | cache hit / miss | 命中 / 未命中 | |
# | hit ratio | 命中率 | |
# | byte hit ratio | 字节命中率 | hits weighted by size |
# | stack distance | 栈距离 | |
# | hot set | 热点集合 | |
# | capacity | 容量 | |
# | KV cache | KV 缓存 | |
# | block | 块 | a fixed number of token slots |
# | block size | 块大小 | |
# | block table | 块表 | |
# | logical / physical block | 逻辑块 / 物理块 | |
# | offset (in a block) | 偏移 | |
# | slot | 槽位 | |
# | paged (KV cache), paging | 分页 | |
# | allocator | 分配器 | |
# | free list, free block | 空闲列表, 空闲块 | |
# | fragmentation | 碎片 | internal fragmentation: 内部碎片 |
# | utilization | 利用率 | |
# | reference count | 引用计数 | |
# | copy-on-write | 写时复制 | |
# | fork (a sequence) | 分叉 | |
# | sequence | 序列 | a request's cached tokens |
# | request | 请求 | |
# | token | token | not translated |
# | prefix | 前缀 | |
# | prefix cache | 前缀缓存 | |
# | prefix hit | 前缀命中 | |
# | hash, chained hash | 哈希, 链式哈希 | |
# | parent / child block, leaf | 父块 / 子块, 叶子 | in a prefix tree |
# | radix tree | 基数树 | SGLang's RadixAttention |
# | salt | 盐 | |
# | trace | 访问轨迹 | never 访问序列 (序列 is a sequence) or 轨迹 alone |
# | stand-in trace | 替代访问轨迹 | a small trace made to behave like a real one; never 生成访问轨迹 |
# | system prompt | 系统提示 | |
# | synthetic trace | 合成访问轨迹 | Mooncake's published one is synthetic |
# | replay | 回放 | |
# | workload | 工作负载 | |
# | working set | 工作集 | |
# | recency | 新近度 | |
# | frequency, use count | 频率, 使用次数 | |
# | last access step | 最近访问时刻 | `last_access_step` |
# | logical clock | 逻辑时钟 | |
# | LRU / LFU / FIFO | LRU / LFU / FIFO | not translated; first use: 最近最少使用 / 最不经常使用 / 先进先出 |
# | optimal (Belady) | 最优（Belady） | |
# | pin, pinned | 固定 | never 钉住 |
# | protected (running request) | 受保护 | |
# | tenant | 租户 | |
# | weight | 权重 | |
# | quota | 配额 | |
# | fair share | 公平份额 | |
# | overuse | 超额量 | |
# | fairness index (Jain) | 公平性指数（Jain） | |
# | noisy neighbour | 吵闹的邻居 | |
# | scheduler | 调度器 | |
# | priority | 优先级 | |
# | heap | 堆 | |
# | stale entry | 过期条目 | a heap item whose entry changed |
# | lazy deletion | 惰性删除 | |
# | rescoring | 重新评分 | |
# | heap item | 元素 | what a heap holds |
# | frozen score | 冻结分数 | a score computed once and kept |
# | age (of an entry) | 年龄 | time since its last access |
# | live slot, live entry | 有效槽位, 有效条目 | |
# | logical time | 逻辑时间 | the logical clock's reading |
# | snapshot | 快照 | |
# | log | 日志 | |
# | tensor | 张量 | |
# | mask | 掩码 | |
# | device | 设备 | |
# | dtype | 数据类型（dtype） | |
# | index | 索引 | |
# | advanced indexing | 高级索引 | |
# | contiguous | 连续存储 | |
# | overflow | 溢出 | |
# | vectorize | 向量化 | |
# | in place | 原地 | an operation that changes its input |
# | copy / view (of a tensor) | 副本 / 视图 | |
# | skeleton (of a task) | 骨架 | the given code with TODO blanks |
# | contract (of a function) | 契约 | what its docstring promises |
# | stand-in (test double) | 替身 | |
# | gap closed | 弥补的差距 | the share of the gap to Belady closed |
# | key column | 键列 | one tensor of a lexicographic key |
# | graded in parts | 分部分计分 | |
# | prefill | 预填充 | never "prefill" in Chinese text |
# | decode (step) | 解码（步） | |
# | time to first token (TTFT) | 首 token 时延（TTFT） | |
# | throughput | 吞吐量 | |
# | latency | 时延 | |
# | wall time / CPU time | 墙钟时间 / CPU 时间 | |
# | cost model, fixed cost | 代价模型, 固定开销 | |
# | attention, attention head | 注意力, 注意力头 | |
# | query (vector) | 查询向量 | |
# | grouped-query attention (GQA) | 分组查询注意力（GQA） | |
# | parallel sampling, beam search | 并行采样, 束搜索 | |
# | attention sink | 注意力汇点 | |
# | budget (of kept tokens) | 预算 | |
# | recent window | 最近窗口 | |
# | heavy hitter | 重击者 | H2O |
# | observation window | 观察窗口 | SnapKV |
# | pooling | 池化 | |
# | keep mask | 保留掩码 | which cached positions stay (notebook 07) |
# | accumulated attention (score) | 累积注意力（分数） | H2O's sum of the attention a slot received |
# | per-layer budget | 逐层预算 | PyramidKV |
# | associative recall (task) | 联想回忆（任务） | key-value pairs, then a query for one key |
# | recall accuracy | 回忆准确率 | the share of queries answered right; 回忆 as in 联想回忆, never 召回 (a retrieval metric) |
# | next-token loss | 下一个 token 的损失 | cross-entropy, in nats |
# | perplexity | 困惑度 | |
# | streaming (generation) | 流式生成 | StreamingLLM |
# | tier (of a cache) | 层级 | |
# | offload | 卸载 | |
# | device memory / host memory | 显存 / 主机内存 | |
# | promote / demote | 提升 / 降级 | |
# | admission (filter) | 准入（过滤器） | |
# | write-through / write-back | 直写 / 回写 | |
# | selective write-through | 选择性直写 | SGLang HiCache |
# | device hit / host hit | 显存命中 / 主机命中 | |
# | resident (in a tier) | 驻留 | |
# | count table | 计数表 | of an admission filter |
# | target size (ARC's p) | 目标大小 | |
# | break-even bandwidth | 盈亏平衡带宽 | |
# | page-locked host memory | 锁页内存 | not 固定, which is for pinned blocks |
# | ghost list | 幽灵列表 | ARC |
# | recompute | 重新计算 | |
# | bandwidth | 带宽 | |
# | peak bandwidth | 峰值带宽 | a device's memory bandwidth at best |
# | batch, batch size | 批次, 批量大小 | |
# | kernel (GPU) | 内核 | a function that runs as many programs at once |
# | launch (a kernel), launch grid | 启动, 启动网格 | |
# | program (of a Triton kernel) | 程序实例 | one point of the launch grid |
# | lane (of a vector in a program) | 通道 | masked lanes touch no memory |
# | launcher | 启动函数 | the Python function that checks input and launches a kernel |
# | interpreter (Triton's) | 解释器 | `TRITON_INTERPRET=1`: kernels on the CPU through numpy |
# | stride | 步长 | elements between neighbours along a dimension |
# | guard block | 保护块 | NaN blocks around a pool in notebook 09's tests |
# | padding | 填充 | table entries past a sequence's blocks; pooling padding (07) |
# | stale token | 旧 token | a slot past a sequence's length, left by an earlier one |
# | out of bounds | 越界 | |
# | data race | 数据竞争 | |
# | query head, KV head | 查询头, KV 头 | GQA: several query heads share a KV head |
# | online softmax | 在线 softmax | |
# | running max, running sum | 运行最大值, 运行和 | the online softmax's state |
# | accumulator | 累加器 | |
# | pass (over the blocks) | 遍（扫描） | "two passes": 两遍扫描 |
# | fused (kernel), fuse | 融合 | |
# | PyTorch composition | PyTorch 组合 | the same job written as PyTorch operations |
