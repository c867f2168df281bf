# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: nbgrader,given,tags,-all
#     formats: source/07_token_eviction//ipynb,authoring//py:percent
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
# # 07. Token-level KV eviction: StreamingLLM, H2O, SnapKV, PyramidKV | token 级 KV 驱逐：StreamingLLM、H2O、SnapKV 与 PyramidKV
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/kvcache-course/kv-cache-eviction/blob/main/release/07_token_eviction/07_token_eviction.ipynb)
# [![Open in ModelScope](https://img.shields.io/badge/ModelScope-Open%20in%20ModelScope-624aff)](https://modelscope.cn/notebook/share/github/kvcache-course/kv-cache-eviction/blob/main/release/07_token_eviction/07_token_eviction.ipynb)
# [![GitHub](https://img.shields.io/badge/GitHub-release%2F07_token_eviction-black)](https://github.com/kvcache-course/kv-cache-eviction/blob/main/release/07_token_eviction/07_token_eviction.ipynb)
#
# **Difficulty:** ★★★ advanced · **Time:** about 150 minutes · **Points:** 27 · **GPU:** task tests run on CUDA too when a GPU is present; the experiments run on the CPU (a 104k-parameter model).
#
# **难度：** ★★★ 进阶 · **用时：** 约 150 分钟 · **总分：** 27 · **GPU：** 有 GPU 时各任务的测试也在 CUDA 上运行；实验在 CPU 上运行（模型只有约 10 万个参数）。
#
# **ModelScope (魔搭):** log in to ModelScope, then click the ModelScope badge: it opens this notebook from
# GitHub in a notebook instance of yours (choose CPU or GPU). Where that link does not work, choose
# *File → Open from URL…* in the instance's JupyterLab and paste <https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/07_token_eviction/07_token_eviction.ipynb>.
# 先登录魔搭，再点击 ModelScope 徽章：魔搭会从 GitHub 取来本 notebook，在你自己的 Notebook 实例中打开（可选 CPU 或 GPU）。
# 如果这个链接打不开，在实例的 JupyterLab 中选择 *File → Open from URL…*，粘贴 <https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/07_token_eviction/07_token_eviction.ipynb>。
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
# 前面的 notebook 驱逐的是整个序列或整个块。近年来 KV 缓存文献中所说的“驱逐”，大多发生在**一条长序列的内部**：在一个预算（budget）之下，保留哪些过去 token 的 K/V。一个 32K token 的提示词，其 KV 缓存可能比模型权重还大；只保留其中一小部分，显存和每步解码要读的字节都按比例减少——前提是模型仍然能答对。
# StreamingLLM 保留开头的几个**注意力汇点**（attention sink）和一个**最近窗口**；H2O 保留累积注意力最高的**重击者**（heavy hitter）加最近窗口；SnapKV 让提示词最后几个查询组成的**观察窗口**投票，池化后取前 k 个；PyramidKV 让低层得到更多预算、高层更少。
#
# 本 notebook 中你将实现这些策略的保留掩码、带保留掩码的注意力、逐层预算，以及一个边生成边驱逐的解码循环；然后在一个真正学会了东西的小模型上测量它们：一个在“联想回忆”任务上训练过的 2 层解码器（`course.model.load_recall_decoder`，约 10 万个参数，随课程包一起提供）。上下文列出 28 个键值对，然后问其中某个键的值：被驱逐掉那一对的 K/V，模型就答不出来。
# 于是“回忆准确率随预算的变化”直接度量了驱逐策略的好坏，全缓存是上限。
#
# The earlier notebooks evict whole sequences and blocks. What most of the recent KV-cache literature calls
# "eviction" happens **inside one long sequence**: under a budget, which past tokens' K/V to keep. The KV cache of a
# 32K-token prompt can outgrow the model's weights; keeping a small part of it shrinks memory and the bytes each decode
# step reads in proportion — as long as the model still answers right. StreamingLLM keeps a few first **attention
# sinks** and a **recent window**; H2O keeps the **heavy hitters** by accumulated attention plus a recent window; SnapKV
# lets the prompt's last queries (the **observation window**) vote, pooled, for the top-k; PyramidKV gives the lower
# layers more of the budget and the upper layers less.
#
# In this notebook you write these policies' keep masks, attention with a keep mask, per-layer budgets and a decode
# loop that evicts while it generates; then you measure them on a small model that has learned something: a 2-layer
# decoder trained on an associative-recall task (`course.model.load_recall_decoder`, about 100k parameters, shipped
# with the course package). The context lists 28 key–value pairs, then asks for one key's value: a cache that evicted
# that pair's K/V cannot answer. So recall accuracy against the budget measures an eviction policy directly, with the
# full cache as the ceiling.

# %% [markdown]
# ## Learning goals | 学习目标
#
# After this notebook you can:
# 1. compute attention over the cached positions a keep mask marks, with exact zeros at evicted positions and a clear
#    error where nothing is kept;
# 2. write the keep masks of StreamingLLM, H2O and SnapKV on batched tensors, ties to the earlier position, without a
#    Python loop over tokens, on any device; and PyramidKV's per-layer budgets in exact integer arithmetic;
# 3. run a decode loop that evicts under a budget at every step and equals the full-cache model when the budget
#    covers everything;
# 4. measure recall and loss against the budget, find the attention sink, and say what a 100k-parameter model can and
#    cannot show about the papers' claims.
#
# 完成本 notebook 后，你能够：
# 1. 计算只覆盖保留掩码所标记的缓存位置的注意力：被驱逐的位置概率严格为 0，什么都没保留时给出清楚的错误；
# 2. 在批量张量上编写 StreamingLLM、H2O 和 SnapKV 的保留掩码（平局时保留位置更靠前的 token，不对 token 写 Python 循环，可在任意设备上运行），并用精确的整数运算算出 PyramidKV 的逐层预算；
# 3. 编写一个每步都在预算下驱逐的解码循环，并保证预算覆盖全部 token 时它与全缓存模型完全相同；
# 4. 测量回忆准确率和损失随预算的变化，找到注意力汇点，并说明一个约 10 万参数的模型能说明、不能说明论文中的哪些结论。
#
# ## The model | 模型
#
# A layer's cache holds, for every head $h$, the keys $k_j$ and values $v_j$ of the cached positions $j = 0, \dots,
# T-1$. A **keep mask** $m \in \{0, 1\}^T$ (one per head) says which of them stay. A query $q$ then attends only to
# the kept positions:
#
# $$p_j = \frac{m_j \exp(q \cdot k_j / \sqrt{d})}{\sum_{i} m_i \exp(q \cdot k_i / \sqrt{d})}, \qquad o = \sum_j p_j v_j,$$
#
# which is exactly the attention over a cache from which the other positions were deleted. A policy chooses $m$ with
# $\sum_j m_j = $ the **budget** $B$ (or keeps everything when $B \ge T$):
#
# - **StreamingLLM**: the first $\min(S, B)$ positions (the sinks) and the last $B - \min(S, B)$ (the recent window);
# - **H2O**: the last $R$ positions, and the $B - R$ others with the highest **accumulated attention**
#   $s_j = \sum_i p_{ij}$ (summed over every query $i$ that has seen $j$);
# - **SnapKV**: the last $W$ prompt positions (the observation window) vote: $s_j = \sum_{i \ge T-W} p_{ij}$ for the
#   earlier positions, averaged over a neighbourhood of $K$ positions (**pooling**), top $B - W$ kept, plus the window;
# - **PyramidKV**: SnapKV's selection with per-layer budgets $B_0 > B_1 > \dots$ that fall linearly with depth and sum
#   to $L \cdot \bar B$.
#
# 一层的缓存为每个注意力头 $h$ 保存缓存位置 $j = 0, \dots, T-1$ 的键 $k_j$ 和值 $v_j$。**保留掩码** $m \in \{0, 1\}^T$（每个头一个）指出哪些位置留下。查询向量 $q$ 只关注被保留的位置：
#
# $$p_j = \frac{m_j \exp(q \cdot k_j / \sqrt{d})}{\sum_{i} m_i \exp(q \cdot k_i / \sqrt{d})}, \qquad o = \sum_j p_j v_j,$$
#
# 这与在删掉其余位置的缓存上做注意力完全相同。驱逐策略选出满足 $\sum_j m_j = B$ 的 $m$，$B$ 称为**预算**（$B \ge T$ 时全部保留）：
#
# - **StreamingLLM**：前 $\min(S, B)$ 个位置（注意力汇点）和最后 $B - \min(S, B)$ 个位置（最近窗口）；
# - **H2O**：最后 $R$ 个位置，以及其余位置中**累积注意力** $s_j = \sum_i p_{ij}$（对所有看到过 $j$ 的查询 $i$ 求和）最高的 $B - R$ 个；
# - **SnapKV**：提示词最后 $W$ 个位置（观察窗口）投票：对更早的位置计算 $s_j = \sum_{i \ge T-W} p_{ij}$，在 $K$ 个相邻位置上取平均（**池化**），保留最高的 $B - W$ 个，再加上观察窗口本身；
# - **PyramidKV**：沿用 SnapKV 的选择方式，但逐层预算 $B_0 > B_1 > \dots$ 随深度线性递减，总和为 $L \cdot \bar B$。

# %% [markdown] nbgrader={"grade": false, "grade_id": "task7_1_attend_kept_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 7.1: attend_kept (4 points)
#
# `attend_kept(query, keys, values, keep)` computes the formula of the model section on batched tensors: `query` is a
# float tensor `[..., num_queries, head_dim]`, `keys` and `values` float tensors `[..., num_tokens, head_dim]` with
# exactly the same leading dimensions (for example batch and heads) and the same `head_dim`, `keep` a `bool` tensor
# `[..., num_tokens]` of exactly `keys`'s shape without its last dimension. Every query sees every kept position (cached
# positions all come before the queries: no causal mask). Return the pair `(output, probabilities)`: `output`
# `[..., num_queries, head_dim]`, `probabilities` `[..., num_queries, num_tokens]`, in the query's dtype and on its
# device, each row summing to 1 over the kept positions and **exactly 0** at the evicted ones. Scale the scores by
# $1/\sqrt{\text{head\_dim}}$. Every floating dtype is allowed (`float16`, `bfloat16`, `float32`, `float64`), but
# `query`, `keys` and `values` must share one. No argument is changed. No Python loop over tokens (a test counts torch
# operations).
#
# Errors: `TypeError` when `query`, `keys` or `values` is not a floating-point `torch.Tensor` or `keep` not a `bool`
# tensor (a list, or an integer tensor, is not converted); `ValueError` when the shapes disagree (shapes that would
# broadcast, such as a leading dimension of 1 against 3, disagree too), when `query`, `keys` and `values` have
# different dtypes, when the tensors are on different devices, or when some row of `keep` keeps no position. The
# `TypeError` checks come first: `int64` keys with a `float32` query are a `TypeError`, although their dtypes differ
# too. Traps:
# multiplying the probabilities by the mask after the softmax leaves rows that no longer sum to 1; a row with nothing
# kept gives `NaN` (0/0) unless you refuse it; scores of large magnitude overflow an `exp` without the maximum subtracted
# (`torch.softmax` subtracts it); a large finite negative such as `-1e9` in place of `-inf` is not "exactly 0" when the
# kept scores are themselves near `-1e30` (the tests pass such scores), and does not fit in `float16` at all.
# The tests compare float32 results with a tolerance of about `1e-5`, float16 ones with about `1e-2`, bfloat16 ones
# with about `5e-2` and float64 ones with about `1e-10`; they use the meta device (shapes without data) as the "other
# device" on a machine without a GPU (for `keep` too), so check the devices before you read `keep`'s values.
#
# Graded in parts: 7.1.1 attention (3) · 7.1.2 bad input (1).
#
# ## 任务 7.1：attend_kept（4 分）
#
# `attend_kept(query, keys, values, keep)` 在带批次维的张量上计算注意力 $p_j = m_j e^{q \cdot k_j/\sqrt{d}} / \sum_i m_i e^{q \cdot k_i/\sqrt{d}}$、$o = \sum_j p_j v_j$（$d$ 即 `head_dim`）。`query` 是浮点张量 `[..., num_queries, head_dim]`；`keys` 和 `values` 是浮点张量 `[..., num_tokens, head_dim]`，它们的前导维度（例如批次和注意力头）和 `head_dim` 都与 `query` 完全相同；`keep` 是 `bool` 张量 `[..., num_tokens]`，形状恰好等于 `keys` 的形状去掉最后一维。每个查询都能看到所有被保留的位置（缓存中的位置都在查询之前，不需要因果掩码）。返回二元组 `(output, probabilities)`：`output` 的形状为 `[..., num_queries, head_dim]`，`probabilities` 的形状为 `[..., num_queries, num_tokens]`，两者的数据类型和设备都与 `query` 相同；`probabilities` 的每一行在被保留的位置上之和为 1，在被驱逐的位置上**严格为 0**。分数要乘以 $1/\sqrt{\text{head\_dim}}$。任何浮点数据类型都可以（`float16`、`bfloat16`、`float32`、`float64`），但 `query`、`keys` 和 `values` 的数据类型必须相同。不修改任何参数。不允许对 token 写 Python 循环（测试会统计 torch 操作的次数）。
#
# 错误：`query`、`keys` 或 `values` 不是浮点 `torch.Tensor`，或 `keep` 不是 `bool` 张量时，抛出 `TypeError`（列表和整数张量都不会被转换）；形状不一致（能够广播的形状也算不一致，例如前导维度 1 对 3）、`query`、`keys` 和 `values` 的数据类型不同、张量不在同一个设备上，或 `keep` 的某一行一个位置都没有保留时，抛出 `ValueError`。先做 `TypeError` 的检查：`int64` 的键配上 `float32` 的查询是 `TypeError`，尽管它们的数据类型也不同。陷阱：softmax 之后再乘以掩码，各行之和就不再是 1；一行什么都没保留时会得到 `NaN`（0/0），除非你拒绝这种输入；分数很大时，不减去最大值的 `exp` 会溢出（`torch.softmax` 会减去最大值）；用 `-1e9` 这样很大的有限负数代替 `-inf` 时，如果被保留的分数本身就接近 `-1e30`（测试会传入这样的分数），被驱逐位置的概率就不是“严格为 0”，何况 `-1e9` 根本放不进 `float16`。测试比较结果时，float32 的容差约为 `1e-5`，float16 约为 `1e-2`，bfloat16 约为 `5e-2`，float64 约为 `1e-10`；在没有 GPU 的机器上，测试用 meta 设备（只有形状、没有数据）充当“另一个设备”（`keep` 也是如此），所以要先检查设备，再读取 `keep` 的值。
#
# 分部分计分：7.1.1 注意力（3 分）· 7.1.2 错误输入（1 分）。

# %% nbgrader={"grade": false, "grade_id": "task7_1_attend_kept", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math

import torch


def attend_kept(query, keys, values, keep):
    """Attention of every query over the cached positions that keep marks.

    Args:
        query: float tensor [..., num_queries, head_dim], any floating dtype.
        keys, values: float tensors [..., num_tokens, head_dim] of query's dtype, exactly the same leading dimensions
            and head_dim as query (no broadcasting).
        keep: bool tensor [..., num_tokens], exactly keys.shape[:-1]; True where the position is still cached.

    Returns:
        (output [..., num_queries, head_dim], probabilities [..., num_queries, num_tokens]) in query's dtype and on
        its device; probabilities are softmax(q . k / sqrt(head_dim)) over the kept positions and exactly 0 elsewhere.
        No argument is changed.

    Raises:
        TypeError: query, keys or values not a floating-point tensor, or keep not a bool tensor.
        ValueError: shapes that disagree (broadcastable ones included), dtypes of query, keys and values that differ,
            tensors on different devices, or a row of keep with no True.
    """
    # TODO 7.1.1: check the types, shapes, dtypes, devices, and that every row of keep keeps something.
    # 提示：keys.shape[:-1] 必须等于 keep.shape（比较形状本身，不要依赖广播）；any 和 all 都能沿某一维归约：
    # 先看每一行有没有 True，再看是不是每一行都有。
    # Hint: keys.shape[:-1] must equal keep.shape (compare the shapes themselves, do not rely on broadcasting); any and
    # all both reduce along a dimension: first whether each row has a True, then whether every row does.
    ### BEGIN SOLUTION
    for name, tensor in (("query", query), ("keys", keys), ("values", values)):
        if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
            raise TypeError(f"attend_kept: {name} must be a floating-point torch.Tensor")
    if not isinstance(keep, torch.Tensor) or keep.dtype != torch.bool:
        raise TypeError("attend_kept: keep must be a bool torch.Tensor")
    if (query.dim() < 2 or keys.dim() != query.dim() or keys.shape != values.shape or keys.shape[:-1] != keep.shape
            or query.shape[:-2] != keys.shape[:-2] or query.shape[-1] != keys.shape[-1]):
        raise ValueError(f"attend_kept: shapes disagree: query {list(query.shape)}, keys {list(keys.shape)}, "
                         f"values {list(values.shape)}, keep {list(keep.shape)}")
    if not query.dtype == keys.dtype == values.dtype:
        raise ValueError(f"attend_kept: query, keys and values must share one dtype, got {query.dtype}, "
                         f"{keys.dtype} and {values.dtype}")
    if len({query.device, keys.device, values.device, keep.device}) > 1:
        raise ValueError("attend_kept: query, keys, values and keep must be on one device")
    if not bool(keep.any(dim=-1).all()):
        raise ValueError("attend_kept: some row of keep keeps no position (its attention would be 0/0)")
    ### END SOLUTION
    # TODO 7.1.2: scaled scores, -inf where evicted, softmax over the positions, then the weighted sum of the values.
    # 提示：分数的形状是 [..., num_queries, num_tokens]，keep 的形状是 [..., num_tokens]：在倒数第二维插入一个长度为 1 的维度，
    # 掩码才能广播到每个查询；把被驱逐位置的分数设为负无穷，softmax 之后它们恰好为 0（exp(-inf) = 0）。
    # Hint: the scores are [..., num_queries, num_tokens] and keep is [..., num_tokens]: insert a dimension of size 1
    # before the last one so that the mask broadcasts over the queries; an evicted position scored minus infinity gets
    # exactly 0 from the softmax (exp(-inf) = 0).
    ### BEGIN SOLUTION
    scores = query @ keys.transpose(-1, -2) / math.sqrt(query.shape[-1])
    scores = scores.masked_fill(~keep.unsqueeze(-2), float("-inf"))
    probabilities = torch.softmax(scores, dim=-1)
    return probabilities @ values, probabilities
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task7_1_1_attention", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that attend_kept equals attention over the kept positions only, with exact zeros at evicted ones."""


def _check_task7_1_1_attention():
    import torch

    from course.checks import assert_no_python_loop, assert_plain_equal, assert_same_tensor, check_type
    from course.env import available_devices

    for device in available_devices():
        query = torch.tensor([[1.0, 0.0], [0.0, 2.0]], device=device)
        keys = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], device=device)
        values = torch.tensor([[1.0, 0.0], [0.0, 1.0], [4.0, 4.0]], device=device)
        keep = torch.tensor([True, False, True], device=device)
        result = attend_kept(query, keys, values, keep)
        check_type(result, tuple, f"attend_kept(...) on {device}")
        output, probabilities = result
        # Without position 1, both queries score positions 0 and 2 equally (1/sqrt(2) and 1/sqrt(2), 0 and 2/sqrt(2)).
        first = torch.softmax(torch.tensor([1.0, 1.0]) / 2 ** 0.5, dim=0)
        second = torch.softmax(torch.tensor([0.0, 2.0]) / 2 ** 0.5, dim=0)
        expected_p = torch.tensor([[first[0], 0.0, first[1]], [second[0], 0.0, second[1]]], device=device)
        assert_same_tensor(probabilities, expected_p, f"probabilities of attend_kept (keep [T, F, T]) on {device}",
                           atol=1e-6)
        assert_same_tensor(probabilities[:, 1], torch.zeros(2, device=device),
                           f"probabilities at the evicted position 1 on {device} (must be exactly 0)")
        assert_same_tensor(output, expected_p @ values, f"output of attend_kept (keep [T, F, T]) on {device}",
                           atol=1e-6)
        # A keep mask per head: the same as attention over a cache that holds only the kept rows.
        generator = torch.Generator().manual_seed(71)
        q = torch.randn(2, 3, 4, 8, generator=generator).to(device)
        k = torch.randn(2, 3, 6, 8, generator=generator).to(device)
        v = torch.randn(2, 3, 6, 8, generator=generator).to(device)
        mask = torch.tensor([True, False, True, True, False, True], device=device).expand(2, 3, 6)
        kept = mask[0, 0].nonzero().flatten()
        pruned = torch.softmax(q @ k[..., kept, :].transpose(-1, -2) / 8 ** 0.5, dim=-1)
        arguments = [tensor.clone() for tensor in (q, k, v, mask)]
        out, _ = attend_kept(q, k, v, mask)
        assert_same_tensor(out, pruned @ v[..., kept, :], f"attend_kept on [2, 3] heads, keep of 4 of 6, on {device}",
                           atol=1e-5)
        for name, before, after in zip(("query", "keys", "values", "keep"), arguments, (q, k, v, mask)):
            assert torch.equal(before, after), f"attend_kept changed its argument {name} on {device}"
        # Every floating dtype, each with its own precision: the result is in the query's dtype.
        for dtype, tolerance in ((torch.float16, 1e-2), (torch.bfloat16, 5e-2), (torch.float64, 1e-10)):
            q_, k_, v_ = (tensor.to(dtype) for tensor in (q, k, v))
            wide = torch.softmax(q_.double() @ k_.double()[..., kept, :].transpose(-1, -2) / 8 ** 0.5, dim=-1)
            expected_p = torch.zeros(2, 3, 4, 6, dtype=torch.float64, device=device)
            expected_p[..., kept] = wide
            out, p = attend_kept(q_, k_, v_, mask)
            assert_same_tensor(p, expected_p.to(dtype), f"attend_kept's probabilities for {dtype} inputs on {device}",
                               atol=tolerance, rtol=tolerance)
            assert_same_tensor(out, (wide @ v_.double()[..., kept, :]).to(dtype),
                               f"attend_kept's output for {dtype} inputs on {device}", atol=tolerance, rtol=tolerance)
        # Large scores: the softmax must subtract the maximum.
        big, _ = attend_kept(torch.tensor([[300.0]], device=device), torch.tensor([[300.0], [299.0]], device=device),
                             torch.tensor([[1.0], [2.0]], device=device), torch.tensor([True, True], device=device))
        assert_same_tensor(big, torch.tensor([[1.0]], device=device), f"attend_kept with scores 90000 and 89700 on {device}", atol=1e-5)
        # Kept scores near -1e30 (float32) and -1e300 (float64): an evicted position still gets exactly 0, which a
        # large finite negative such as -1e9 in place of -inf does not give.
        for dtype, size in ((torch.float32, 1e15), (torch.float64, 1e150)):
            out, p = attend_kept(torch.tensor([[size]], dtype=dtype, device=device),
                                 torch.tensor([[-size], [-2 * size], [1.0]], dtype=dtype, device=device),
                                 torch.tensor([[1.0], [2.0], [4.0]], dtype=dtype, device=device),
                                 torch.tensor([True, True, False], device=device))
            assert_same_tensor(p, torch.tensor([[1.0, 0.0, 0.0]], dtype=dtype, device=device),
                               f"attend_kept's probabilities with kept scores -{size ** 2:.0e} and -{2 * size ** 2:.0e} "
                               f"({dtype}) on {device}")
            assert_same_tensor(out, torch.tensor([[1.0]], dtype=dtype, device=device),
                               f"attend_kept's output with kept scores -{size ** 2:.0e} and -{2 * size ** 2:.0e} "
                               f"({dtype}) on {device}")
        none_out, none_p = attend_kept(query[:0], keys, values, keep)
        assert_plain_equal((tuple(none_out.shape), tuple(none_p.shape)), ((0, 2), (0, 3)),
                           f"the shapes of attend_kept's output and probabilities for 0 queries on {device}")
        batch_out, batch_p = attend_kept(torch.zeros(0, 2, 4, device=device), torch.zeros(0, 3, 4, device=device),
                                         torch.zeros(0, 3, 4, device=device),
                                         torch.ones(0, 3, dtype=torch.bool, device=device))
        assert_plain_equal((tuple(batch_out.shape), tuple(batch_p.shape)), ((0, 2, 4), (0, 2, 3)),
                           f"the shapes of attend_kept's output and probabilities for a batch of 0 on {device} (keep "
                           "has no row, so no row keeps nothing: no error)")
    small = (torch.randn(2, 3, 8), torch.randn(2, 8, 8), torch.randn(2, 8, 8), torch.ones(2, 8, dtype=torch.bool))
    large = (torch.randn(2, 3, 8), torch.randn(2, 512, 8), torch.randn(2, 512, 8), torch.ones(2, 512, dtype=torch.bool))
    assert_no_python_loop(attend_kept, small, large, "attend_kept on 8 and 512 cached positions")

    ### BEGIN HIDDEN TESTS
    import random as _random

    def _oracle(q, k, v, m):
        s = (q.double() @ k.double().transpose(-1, -2)) / (q.shape[-1] ** 0.5)
        s = s - s.masked_fill(~m.unsqueeze(-2), float("-inf")).amax(dim=-1, keepdim=True)
        e = torch.exp(s) * m.unsqueeze(-2)
        p = e / e.sum(dim=-1, keepdim=True)
        return (p @ v.double()).to(q.dtype), p.to(q.dtype)

    _tolerances = {torch.float16: 1e-2, torch.bfloat16: 5e-2, torch.float32: 1e-4, torch.float64: 1e-10}
    _rng = _random.Random(7101)
    for _device in available_devices():
        for _case in range(60):
            _dtype = [torch.float32, torch.float64, torch.float16, torch.bfloat16][_case % 4]
            _lead = [_rng.randint(1, 3) for _ in range(_rng.randint(0, 2))]
            _t, _d, _nq = _rng.randint(1, 20), _rng.choice([1, 2, 4, 16]), _rng.randint(0, 5)
            _g = torch.Generator().manual_seed(_case)
            _scale = _rng.choice([1.0, 10.0, 100.0]) if _dtype in (torch.float32, torch.float64) else 1.0
            _q = (torch.randn(*_lead, _nq, _d, generator=_g) * _scale).to(_dtype).to(_device)
            _k = torch.randn(*_lead, _t, _d, generator=_g).to(_dtype).to(_device)
            _v = torch.randn(*_lead, _t, _d, generator=_g).to(_dtype).to(_device)
            _m = torch.rand(*_lead, _t, generator=_g) < _rng.random()
            _m[..., _rng.randrange(_t)] = True
            _m = _m.to(_device)
            _before = [_x.clone() for _x in (_q, _k, _v, _m)]
            _out, _p = attend_kept(_q, _k, _v, _m)
            _eo, _ep = _oracle(_q, _k, _v, _m)
            _tolerance = _tolerances[_dtype]
            assert_same_tensor(_p, _ep, f"probabilities, random case {_case} ({_dtype}) on {_device}",
                               atol=min(_tolerance, 1e-5) if _dtype == torch.float32 else _tolerance,
                               reveal=False)
            assert_same_tensor(_out, _eo, f"output, random case {_case} ({_dtype}) on {_device}", atol=_tolerance,
                               rtol=_tolerance, reveal=False)
            assert bool((_p.masked_select(~_m.unsqueeze(-2).expand_as(_p)) == 0).all()), (
                f"attend_kept: evicted probabilities are not exactly 0, random case {_case}")
            assert all(torch.equal(_a, _b) for _a, _b in zip(_before, (_q, _k, _v, _m))), (
                f"attend_kept changed an argument, random case {_case}")
        # Exact huge kept scores in two heads: -4e36 and -2e36 (float32), -4e304 and -2e304 (float64).
        for _dtype, _size in ((torch.float32, 2e18), (torch.float64, 2e152)):
            _out, _p = attend_kept(torch.tensor([[[_size]], [[-_size]]], dtype=_dtype, device=_device),
                                   torch.tensor([[[1.0], [-2 * _size], [-_size]], [[_size], [2 * _size], [3.0]]],
                                                dtype=_dtype, device=_device),
                                   torch.tensor([[[5.0], [6.0], [7.0]], [[5.0], [6.0], [7.0]]], dtype=_dtype,
                                                device=_device),
                                   torch.tensor([[False, True, True], [True, True, False]], device=_device))
            assert_same_tensor(_p, torch.tensor([[[0.0, 0.0, 1.0]], [[1.0, 0.0, 0.0]]], dtype=_dtype, device=_device),
                               f"attend_kept with huge negative kept scores ({_dtype}) on {_device}", reveal=False)
            assert_same_tensor(_out, torch.tensor([[[7.0]], [[5.0]]], dtype=_dtype, device=_device),
                               f"attend_kept's output with huge negative kept scores ({_dtype}) on {_device}",
                               reveal=False)
    ### END HIDDEN TESTS


_check_task7_1_1_attention()

# %% nbgrader={"grade": true, "grade_id": "test_task7_1_2_bad_input", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that attend_kept refuses bad input with TypeError or ValueError, and valid input only then."""


def _check_task7_1_2_bad_input():
    import torch

    from course.checks import assert_accepts, assert_raises

    q, k, v = torch.zeros(2, 4), torch.zeros(3, 4), torch.zeros(3, 4)
    keep = torch.tensor([True, True, False])
    assert_raises(TypeError, "attend_kept with an int64 keep mask", attend_kept, q, k, v, keep.long())
    assert_raises(TypeError, "attend_kept with int64 keys", attend_kept, q, k.long(), v, keep)
    assert_raises(TypeError, "attend_kept with a list as query", attend_kept, [[0.0] * 4] * 2, k, v, keep)
    assert_raises(TypeError, "attend_kept with a list as keys", attend_kept, q, k.tolist(), v, keep)
    assert_raises(TypeError, "attend_kept with a NumPy array as values", attend_kept, q, k, v.numpy(), keep)
    assert_raises(TypeError, "attend_kept with a list as keep", attend_kept, q, k, v, [True, True, False])
    assert_raises(ValueError, "attend_kept with a keep mask of 2 positions for 3 keys", attend_kept, q, k, v, keep[:2])
    assert_raises(ValueError, "attend_kept with head_dim 4 in query and 3 in keys", attend_kept, q, k[:, :3],
                  v[:, :3], keep)
    assert_raises(ValueError, "attend_kept with values of 2 positions", attend_kept, q, k, v[:2], keep)
    assert_raises(ValueError, "attend_kept with head_dim 4 in keys and 3 in values", attend_kept, q, k, v[:, :3], keep)
    assert_raises(ValueError, "attend_kept with 1-D keys and values", attend_kept, torch.zeros(2, 3), torch.zeros(3),
                  torch.zeros(3), torch.tensor(True))
    assert_raises(ValueError, "attend_kept with a 1-D query [4] (a query is [..., num_queries, head_dim])", attend_kept,
                  torch.zeros(4), k, v, keep)
    assert_raises(ValueError, "attend_kept with query [1, 2, 4] and keys [3, 3, 4] (shapes that broadcast)",
                  attend_kept, torch.zeros(1, 2, 4), torch.zeros(3, 3, 4), torch.zeros(3, 3, 4),
                  torch.ones(3, 3, dtype=torch.bool))
    assert_raises(ValueError, "attend_kept with keys [2, 3, 4] and a keep mask [3] (a mask that broadcasts)",
                  attend_kept, torch.zeros(2, 2, 4), torch.zeros(2, 3, 4), torch.zeros(2, 3, 4), keep)
    assert_raises(ValueError, "attend_kept with a float32 query and float64 keys and values", attend_kept, q,
                  k.double(), v.double(), keep)
    assert_raises(ValueError, "attend_kept with float16 values", attend_kept, q, k, v.half(), keep)
    # The meta device holds shapes without data: here it stands for a second device.
    assert_raises(ValueError, "attend_kept with query on another device (meta), the rest on the CPU", attend_kept,
                  q.to("meta"), k, v, keep)
    assert_raises(ValueError, "attend_kept with keep on another device (meta), the rest on the CPU", attend_kept,
                  q, k, v, keep.to("meta"))
    assert_raises(ValueError, "attend_kept with a row that keeps nothing", attend_kept, q, k, v,
                  torch.zeros(3, dtype=torch.bool))
    assert_raises(ValueError, "attend_kept where the second of two rows keeps nothing", attend_kept,
                  torch.zeros(2, 2, 4), torch.zeros(2, 3, 4), torch.zeros(2, 3, 4),
                  torch.tensor([[True, False, False], [False, False, False]]))
    # Valid input is not refused.
    assert_accepts("attend_kept(q, k, v, keep) with q [2, 4], k and v [3, 4], keep [3]", attend_kept, q, k, v, keep)
    assert_accepts("attend_kept with q [2, 2, 4], k and v [2, 3, 4] and keep [2, 3], a row each", attend_kept,
                   torch.zeros(2, 2, 4), torch.zeros(2, 3, 4), torch.zeros(2, 3, 4),
                   torch.tensor([[True, False, False], [False, False, True]]))

    ### BEGIN HIDDEN TESTS
    assert_raises(ValueError, "attend_kept with leading dims 2 and 3", attend_kept, torch.zeros(2, 1, 4),
                  torch.zeros(3, 3, 4), torch.zeros(3, 3, 4), torch.ones(3, 3, dtype=torch.bool))
    assert_raises(ValueError, "attend_kept with query [2, 1, 2, 4] and keys [1, 3, 3, 4]", attend_kept,
                  torch.zeros(2, 1, 2, 4), torch.zeros(1, 3, 3, 4), torch.zeros(1, 3, 3, 4),
                  torch.ones(1, 3, 3, dtype=torch.bool))
    assert_raises(ValueError, "attend_kept with a keep mask [1, 3] for keys [2, 3, 4]", attend_kept,
                  torch.zeros(2, 2, 4), torch.zeros(2, 3, 4), torch.zeros(2, 3, 4), keep[None])
    assert_raises(ValueError, "attend_kept with values [3, 8] for keys [3, 4]", attend_kept, q, k, torch.zeros(3, 8),
                  keep)
    assert_raises(TypeError, "attend_kept with int values", attend_kept, q, k, v.int(), keep)
    assert_raises(TypeError, "attend_kept with a complex query", attend_kept, q.to(torch.complex64), k, v, keep)
    assert_raises(TypeError, "attend_kept with a uint8 keep mask", attend_kept, q, k, v, keep.to(torch.uint8))
    assert_raises(ValueError, "attend_kept with bfloat16 keys", attend_kept, q, k.bfloat16(), v, keep)
    assert_raises(ValueError, "attend_kept with no cached position", attend_kept, q, torch.zeros(0, 4),
                  torch.zeros(0, 4), torch.zeros(0, dtype=torch.bool))
    assert_raises(ValueError, "attend_kept with keys on the meta device", attend_kept, q, k.to("meta"), v, keep)
    assert_raises(ValueError, "attend_kept with values on the meta device", attend_kept, q, k, v.to("meta"), keep)
    from course.env import available_devices as _devices

    if len(_devices()) > 1:
        assert_raises(ValueError, "attend_kept with keep on another device", attend_kept, q, k, v,
                      keep.to(_devices()[-1]))
    ### END HIDDEN TESTS


_check_task7_1_2_bad_input()

# %% [markdown] nbgrader={"grade": false, "grade_id": "task7_2_streaming_keep_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 7.2: streaming_keep (3 points)
#
# StreamingLLM (Xiao et al., ICLR 2024) keeps the first few tokens, the **attention sinks**, and a **recent window**.
# `streaming_keep(num_tokens, budget, num_sinks=4, device=None)` returns the `bool` tensor `[num_tokens]` on `device`
# (None: the CPU; otherwise a `torch.device` or a string such as `"cuda"`, in every case, the full cache's included)
# that keeps the first `min(num_sinks, budget)` positions and the last `budget - min(num_sinks, budget)` ones: exactly
# `budget` positions when `budget < num_tokens`, every position when `budget >= num_tokens` (the cache is not full
# yet). The three arguments must be Python `int`s (`TypeError` otherwise: `True`, `4.0` and numpy's `int64` are not)
# and `>= 0` (`ValueError` otherwise), checked before anything else, also when `budget >= num_tokens`. They may be of
# any size: `streaming_keep(3, 2**62, 2**62)` keeps all 3 positions, and `streaming_keep(-(2**70), 1, 1)` is a
# `ValueError` like any negative count, so check them as Python ints before a tensor sees them (an int64 tensor holds at
# most `2**63 - 1`). Build the mask from `torch.arange` and comparisons, no Python loop over positions (a test counts
# torch operations).
# Traps: the sinks count **inside** the budget (`budget` 8 with 4 sinks is 4 sinks + 4 recent, not 4 + 8); with a
# window of 0 positions, `keep[-0:]` is the whole tensor, not an empty slice.
#
# ## 任务 7.2：streaming_keep（3 分）
#
# StreamingLLM（Xiao 等，ICLR 2024）保留开头的几个 token（**注意力汇点**）和一个**最近窗口**。`streaming_keep(num_tokens, budget, num_sinks=4, device=None)` 返回 `device` 上的 `bool` 张量 `[num_tokens]`（`device` 为 None 时是 CPU，也可以是 `torch.device` 或 `"cuda"` 这样的字符串；无论哪种情况，包括保留全部位置时，结果都在这个设备上）。它保留前 `min(num_sinks, budget)` 个位置和最后 `budget - min(num_sinks, budget)` 个位置：`budget < num_tokens` 时恰好保留 `budget` 个位置；`budget >= num_tokens` 时缓存还没满，保留全部位置。三个参数都必须是 Python `int`（否则抛出 `TypeError`：`True`、`4.0` 和 numpy 的 `int64` 都不算），并且 `>= 0`（否则抛出 `ValueError`）；参数检查在其他一切之前完成，`budget >= num_tokens` 时也要检查。参数可以任意大：`streaming_keep(3, 2**62, 2**62)` 保留全部 3 个位置，`streaming_keep(-(2**70), 1, 1)` 和其他负数一样抛出 `ValueError`，所以要在张量接触它们之前，先把它们当作 Python `int` 检查（int64 张量最大只能存 `2**63 - 1`）。用 `torch.arange` 和比较运算构造掩码，不对位置写 Python 循环（测试会统计 torch 操作的次数）。
#
# 陷阱：注意力汇点算在预算**之内**（预算 8、4 个汇点，是 4 个汇点加 4 个最近位置，而不是 4 + 8）；窗口长度为 0 时，`keep[-0:]` 是整个张量，而不是空切片。

# %% nbgrader={"grade": false, "grade_id": "task7_2_streaming_keep", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def streaming_keep(num_tokens, budget, num_sinks=4, device=None):
    """StreamingLLM's keep mask: the first min(num_sinks, budget) positions and the most recent ones, budget in all.

    Returns:
        bool tensor [num_tokens] on device (None: the CPU); all True when budget >= num_tokens.

    Raises (the arguments are checked first, also when budget >= num_tokens):
        TypeError: an argument that is not a Python int (bool and numpy's integers excluded).
        ValueError: an argument below 0.
    """
    # TODO 7.2.1: check the three arguments.
    # 提示：bool 是 int 的子类，numpy 的整数又不是 int：isinstance 会放过前者，所以要比较参数的确切类型。
    # Hint: bool is a subclass of int and numpy's integers are not ints: isinstance lets the former through, so compare
    # the argument's exact type.
    ### BEGIN SOLUTION
    for name, value in (("num_tokens", num_tokens), ("budget", budget), ("num_sinks", num_sinks)):
        if type(value) is not int:
            raise TypeError(f"streaming_keep: {name} must be an int, got {type(value).__name__}")
        if value < 0:
            raise ValueError(f"streaming_keep: {name} must be >= 0, got {value}")
    ### END SOLUTION
    # TODO 7.2.2: compare the positions with the number of sinks and the start of the recent window.
    # 提示：先处理 budget >= num_tokens（全部保留）；否则汇点不会多于预算，预算中汇点用剩的部分全部给末尾的窗口。
    # 把位置序号（torch.arange）分别与两个边界比较，再用 | 合并两个掩码。
    # Hint: handle budget >= num_tokens first (keep everything); otherwise the sinks cannot outnumber the budget, and
    # what they leave of it goes to the window at the end. Compare the positions (torch.arange) with the two
    # boundaries and combine the two masks with |.
    ### BEGIN SOLUTION
    positions = torch.arange(num_tokens, device=device)
    if budget >= num_tokens:
        return torch.ones(num_tokens, dtype=torch.bool, device=device)
    sinks = min(num_sinks, budget)
    window = budget - sinks
    return (positions < sinks) | (positions >= num_tokens - window)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task7_2_streaming_keep", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that streaming_keep keeps the sinks and the recent window, budget positions in all."""


def _check_task7_2_streaming_keep():
    import numpy
    import torch

    from course.checks import assert_no_python_loop, assert_raises, assert_same_tensor, check_type
    from course.env import available_devices

    def mask(text, device):
        return torch.tensor([c == "1" for c in text], dtype=torch.bool, device=device)

    for device in available_devices():
        cases = [((10, 6, 2), "1100001111"), ((10, 6, 4), "1111000011"), ((10, 4, 4), "1111000000"),
                 ((10, 3, 4), "1110000000"), ((10, 5, 0), "0000011111"), ((10, 0, 4), "0000000000"),
                 ((6, 6, 2), "111111"), ((4, 9, 2), "1111"), ((0, 3, 2), "")]
        for (num_tokens, budget, num_sinks), expected in cases:
            assert_same_tensor(streaming_keep(num_tokens, budget, num_sinks, device=device), mask(expected, device),
                               f"streaming_keep({num_tokens}, {budget}, {num_sinks}, device={device!r})")
        assert_same_tensor(streaming_keep(12, 8, device=device), mask("111100001111", device),
                           f"streaming_keep(12, 8) on {device} (4 sinks by default)")
    assert_same_tensor(streaming_keep(5, 2), mask("11000", "cpu"), "streaming_keep(5, 2) without a device")
    # The meta device holds shapes without data: here it stands for a device other than the CPU. Only the full cache's
    # mask is asked for there (torch.ones makes it at no cost; a first computation on the meta device costs a kernel
    # about a second of imports); a grader with a GPU checks the others on it.
    for num_tokens, budget in ((4, 9), (6, 6)):
        call = f"streaming_keep({num_tokens}, {budget}, 2, device='meta')"
        kept = streaming_keep(num_tokens, budget, 2, device="meta")
        check_type(kept, torch.Tensor, call)
        assert (kept.device.type, kept.dtype, tuple(kept.shape)) == ("meta", torch.bool, (num_tokens,)), (
            f"{call} returned a tensor on {kept.device}, of dtype {kept.dtype} and shape {list(kept.shape)}; expected a "
            f"bool tensor of shape [{num_tokens}] on the meta device")
    assert_no_python_loop(streaming_keep, (16, 6, 2), (4096, 600, 4), "streaming_keep on 16 and 4,096 positions")
    assert_same_tensor(streaming_keep(5, 2, 1, device=torch.device("cpu")), mask("10001", "cpu"),
                       "streaming_keep(5, 2, 1, device=torch.device('cpu'))")
    # Arguments of any size: 2**62 is a budget like any other, -(2**70) a negative count (not an overflow error).
    assert_same_tensor(streaming_keep(3, 2**62, 2**62), mask("111", "cpu"), "streaming_keep(3, 2**62, 2**62)")
    for args, error in [((10, -1, 4), ValueError), ((-1, 2, 0), ValueError), ((10, 4, -2), ValueError),
                        ((10, True, 4), TypeError), ((10, 4.0, 4), TypeError), (("10", 4, 4), TypeError),
                        ((10, 4, None), TypeError), ((numpy.int64(10), 4, 4), TypeError),
                        ((10, numpy.int64(4), 4), TypeError), ((-(2**70), 1, 1), ValueError),
                        # The budget covers every position: the arguments are still checked.
                        ((3, 5, -1), ValueError), ((3, 5, True), TypeError), ((0, 0, 2.5), TypeError)]:
        assert_raises(error, f"streaming_keep{args}", streaming_keep, *args)

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(7201)
    for _device in available_devices():
        for _case in range(400):
            _n, _b, _s = _rng.randint(0, 40), _rng.randint(0, 45), _rng.randint(0, 10)
            if _b >= _n:
                _expected = [True] * _n
            else:
                _sinks = min(_s, _b)
                _expected = [_j < _sinks or _j >= _n - (_b - _sinks) for _j in range(_n)]
            assert_same_tensor(streaming_keep(_n, _b, _s, device=_device),
                               torch.tensor(_expected, dtype=torch.bool, device=_device),
                               f"streaming_keep({_n}, {_b}, {_s}) on {_device}", reveal=False)
    assert_same_tensor(streaming_keep(10**6, 6, 3)[:4], torch.tensor([True, True, True, False]),
                       "streaming_keep(10**6, 6, 3)[:4]", reveal=False)
    assert int(streaming_keep(10**6, 6, 3).sum()) == 6, "streaming_keep(10**6, 6, 3) must keep 6 positions"
    assert_same_tensor(streaming_keep(3, 2**62, 2**62), torch.ones(3, dtype=torch.bool), "streaming_keep(3, 2**62, 2**62)",
                       reveal=False)
    for _args in [(False, 1, 1), (3, 1, True), (3, -5, 1), (3, 1, 1.0), (2, 7, -3), (2, 7, None), (0, 5, False),
                  (numpy.int32(3), 1, 1), (3, 1, numpy.int64(1)), (4, 4.0, 1), (-(2**70), 1, 1)]:
        assert_raises(TypeError if any(type(a) is not int for a in _args) else ValueError, f"streaming_keep{_args}",
                      streaming_keep, *_args)
    ### END HIDDEN TESTS


_check_task7_2_streaming_keep()

# %% [markdown] nbgrader={"grade": false, "grade_id": "task7_3_h2o_keep_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 7.3: h2o_keep (4 points)
#
# H2O (Zhang et al., NeurIPS 2023) observed that a few tokens, the **heavy hitters**, collect most of the attention,
# and keeps them by their **accumulated attention**. `h2o_keep(attention, budget, recent)` takes attention
# probabilities `attention`, a floating-point tensor `[..., num_queries, num_tokens]` (row $i$: how much query $i$
# attended to each position; leading dimensions such as batch and heads are independent), and returns the `bool` keep
# mask `[..., num_tokens]` on its device:
#
# 1. the scores $s_j = \sum_i p_{ij}$, the sum over the queries (dimension `-2`);
# 2. the last `recent` positions are kept (the recent window), whatever their scores;
# 3. among the other `num_tokens - recent` positions, the `budget - recent` with the highest scores are kept; **ties go
#    to the earlier position**; the recent positions are not candidates (they are kept already);
# 4. every position is kept when `budget >= num_tokens`.
#
# `budget` and `recent` are Python `int`s (`TypeError` otherwise: `True` and numpy's `int64` are not) with
# `0 <= recent <= budget` (`ValueError` otherwise); `attention` must be a floating-point tensor of any floating dtype
# (`float16` … `float64`; `TypeError` otherwise, a list included) with at least 2 dimensions and no `NaN`
# (`ValueError`). Every check comes first, also when `budget >= num_tokens`. The function ranks whatever finite values
# it is given, negative ones included (it does not check that the rows are probabilities), and changes none of its
# arguments. No Python loop over rows or tokens (a test counts torch operations).
# Traps: `torch.topk` does not promise which of equal scores it returns; sort with `stable=True` (descending) so that
# equal scores keep their order. Leave the recent positions out of the ranking by slicing them off, not by giving them
# a score such as `-1e9`: the tests pass scores far below it. Ties are between equal computed scores: wherever a tie
# matters, the tests use values whose sums are exact in floating point (multiples of 1/64); elsewhere, of two scores
# closer than about `1e-5` relative, either may be kept.
#
# Graded in parts: 7.3.1 heavy hitters (2) · 7.3.2 recent window, ties and bad input (2).
#
# ## 任务 7.3：h2o_keep（4 分）
#
# H2O（Zhang 等，NeurIPS 2023）观察到，少数 token（**重击者**）获得了大部分注意力，于是按**累积注意力**保留它们。`h2o_keep(attention, budget, recent)` 接受注意力概率 `attention`：浮点张量 `[..., num_queries, num_tokens]`，第 $i$ 行是查询 $i$ 对每个位置的注意力，批次、注意力头等前导维度相互独立。它返回同一设备上的 `bool` 保留掩码 `[..., num_tokens]`：
#
# 1. 分数 $s_j = \sum_i p_{ij}$，即对所有查询（第 `-2` 维）求和；
# 2. 最后 `recent` 个位置（最近窗口）无论分数高低都保留；
# 3. 在其余 `num_tokens - recent` 个位置中，保留分数最高的 `budget - recent` 个；**平局时保留位置更靠前的**；最近窗口中的位置不参与竞争（它们已经被保留了）；
# 4. `budget >= num_tokens` 时保留全部位置。
#
# `budget` 和 `recent` 是 Python `int`（否则抛出 `TypeError`：`True` 和 numpy 的 `int64` 都不算），且满足 `0 <= recent <= budget`（否则抛出 `ValueError`）。`attention` 必须是浮点张量，任何浮点数据类型都可以（`float16` … `float64`；否则抛出 `TypeError`，列表也一样），至少 2 维，且不含 `NaN`（否则抛出 `ValueError`）。所有检查都最先做，`budget >= num_tokens` 时也一样。函数对给定的任何有限值排序，包括负数（它不检查每一行是不是概率），并且不修改任何参数。不允许对行或 token 写 Python 循环（测试会统计 torch 操作的次数）。陷阱：`torch.topk` 不保证分数相等时返回哪一个；改用 `stable=True` 的降序排序，相等的分数就会保持原来的先后顺序。要让最近窗口的位置不参与排序，就把它们切片切掉，不要给它们 `-1e9` 这样的分数：测试会传入比它小得多的分数。平局指计算出来的分数恰好相等：凡是平局会影响结果的地方，测试用的值都是 1/64 的倍数，它们的和在浮点运算中没有舍入误差；其他地方，两个分数的相对差小于约 `1e-5` 时，保留哪一个都可以。
#
# 分部分计分：7.3.1 重击者（2 分）· 7.3.2 最近窗口、平局与错误输入（2 分）。

# %% nbgrader={"grade": false, "grade_id": "task7_3_h2o_keep", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


def h2o_keep(attention, budget, recent):
    """H2O's keep mask: the recent window plus the heavy hitters by accumulated attention, budget positions in all.

    Args:
        attention: float tensor [..., num_queries, num_tokens] of attention probabilities (any finite values are
            ranked, negative ones included); not changed.
        budget: int >= recent, the positions to keep per row.
        recent: int >= 0, the most recent positions that are always kept.

    Returns:
        bool tensor [..., num_tokens] on attention's device; all True when budget >= num_tokens. Ties between equal
        scores go to the earlier position.

    Raises (checked first, also when budget >= num_tokens):
        TypeError: attention not a floating-point tensor; budget or recent not a Python int (bool and numpy's
            integers excluded).
        ValueError: attention with fewer than 2 dimensions or a NaN; recent < 0 or recent > budget.
    """
    if not isinstance(attention, torch.Tensor) or not attention.is_floating_point():
        raise TypeError("h2o_keep: attention must be a floating-point torch.Tensor")
    for name, value in (("budget", budget), ("recent", recent)):
        if type(value) is not int:
            raise TypeError(f"h2o_keep: {name} must be an int, got {type(value).__name__}")
    if not 0 <= recent <= budget:
        raise ValueError(f"h2o_keep: need 0 <= recent <= budget, got recent={recent}, budget={budget}")
    if attention.dim() < 2 or bool(torch.isnan(attention).any()):
        raise ValueError("h2o_keep: attention must be [..., num_queries, num_tokens] without NaN")
    # TODO 7.3.1: the accumulated scores, then the keep mask of the top budget - recent older positions.
    # 提示：对查询所在的那一维求和得到分数；只对更早的位置做稳定的降序排序，取排序结果的前 budget - recent 个下标，
    # 再用 scatter 在一个全 False 的掩码中把它们置为 True。
    # Hint: sum over the queries' dimension for the scores; sort only the older positions, stably and descending, take
    # the first budget - recent indices of that order, and set them to True in an all-False mask with scatter.
    ### BEGIN SOLUTION
    scores = attention.sum(dim=-2)
    num_tokens = scores.shape[-1]
    if budget >= num_tokens:
        return torch.ones_like(scores, dtype=torch.bool)
    older = num_tokens - recent
    order = torch.sort(scores[..., :older], dim=-1, descending=True, stable=True).indices
    keep_older = torch.zeros_like(scores[..., :older], dtype=torch.bool)
    keep_older.scatter_(-1, order[..., :budget - recent], True)
    ### END SOLUTION
    # TODO 7.3.2: append the recent window, kept whatever its scores.
    # 提示：torch.cat 把 keep_older 和一段长度为 recent 的全 True 张量沿最后一维拼起来。
    # Hint: torch.cat joins keep_older and an all-True tensor of length recent along the last dimension.
    ### BEGIN SOLUTION
    keep_recent = torch.ones_like(scores[..., older:], dtype=torch.bool)
    return torch.cat((keep_older, keep_recent), dim=-1)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task7_3_1_heavy_hitters", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that h2o_keep keeps the positions of the highest accumulated attention."""


def _check_task7_3_1_heavy_hitters():
    import torch

    from course.checks import assert_no_python_loop, assert_same_tensor
    from course.env import available_devices

    for device in available_devices():
        # Two queries over 5 positions: scores 0.7, 0.3, 0.6, 0.2, 0.2.
        attention = torch.tensor([[0.5, 0.25, 0.25, 0.0, 0.0], [0.2, 0.05, 0.35, 0.2, 0.2]], device=device)
        assert_same_tensor(h2o_keep(attention, 2, 0), torch.tensor([True, False, True, False, False], device=device),
                           f"h2o_keep(scores [0.7, 0.3, 0.6, 0.2, 0.2], budget 2, recent 0) on {device}")
        assert_same_tensor(h2o_keep(attention, 3, 0), torch.tensor([True, True, True, False, False], device=device),
                           f"h2o_keep(scores [0.7, 0.3, 0.6, 0.2, 0.2], budget 3, recent 0) on {device}")
        # The scores are summed over the queries, not taken from the last one (which would keep 2, 0, 3).
        assert_same_tensor(h2o_keep(attention, 1, 0), torch.tensor([True, False, False, False, False], device=device),
                           f"h2o_keep(budget 1, recent 0) on {device}: the sum over both queries")
        # Leading dims are independent rows (batch 2 x heads 1).
        batched = torch.stack((attention, attention.flip(-1)))[:, None]
        assert_same_tensor(h2o_keep(batched, 2, 0),
                           torch.tensor([[[True, False, True, False, False]], [[False, False, True, False, True]]],
                                        device=device), f"h2o_keep on [2, 1, 2, 5] attention on {device}")
        # Every floating dtype.
        for dtype in (torch.float16, torch.bfloat16, torch.float64):
            assert_same_tensor(h2o_keep(attention.to(dtype), 3, 0),
                               torch.tensor([True, True, True, False, False], device=device),
                               f"h2o_keep({dtype} scores [0.7, 0.3, 0.6, 0.2, 0.2], budget 3, recent 0) on {device}")
        # float64 scores that float32 cannot hold apart (too large, too small): ranked in their own dtype.
        for values in ([1e39, 2e39, 0.5, 0.25], [1e-50, 2e-50, 0.0, 0.0]):
            assert_same_tensor(h2o_keep(torch.tensor([values], dtype=torch.float64, device=device), 1, 0),
                               torch.tensor([False, True, False, False], device=device),
                               f"h2o_keep(float64 scores {values}, budget 1, recent 0) on {device} (summed in float64)")
    small = (torch.rand(2, 4, 3, 16), 4, 2)
    large = (torch.rand(64, 4, 3, 512), 4, 2)
    assert_no_python_loop(h2o_keep, small, large, "h2o_keep on [2, 4, 3, 16] and [64, 4, 3, 512] attention")

    ### BEGIN HIDDEN TESTS
    import random as _random

    def _check_keep(got, att, budget, recent, exact, what):
        """Fail unless got is H2O's mask for att: exactly, or (exact False) up to scores closer than 1e-5."""
        scores = att.double().sum(dim=-2).cpu()
        n = scores.shape[-1]
        if type(got) is not torch.Tensor or (got.dtype, got.shape, got.device) != (torch.bool, scores.shape, att.device):
            raise AssertionError(f"{what} returned {type(got).__name__} "
                                 f"{getattr(got, 'dtype', '')} {tuple(getattr(got, 'shape', ()))}, which is wrong")
        tolerance = 1e-5 * (1.0 + float(scores.abs().max())) if scores.numel() and not exact else 0.0
        for kept, row in zip(got.cpu().reshape(-1, n).tolist(), scores.reshape(-1, n).tolist()):
            if budget >= n:
                assert all(kept), f"{what} returned a wrong mask"
                continue
            older = n - recent
            chosen = [j for j in range(older) if kept[j]]
            dropped = [j for j in range(older) if not kept[j]]
            assert all(kept[older:]) and len(chosen) == budget - recent, f"{what} returned a wrong mask"
            if exact:
                assert chosen == sorted(sorted(range(older), key=lambda j: (-row[j], j))[:budget - recent]), (
                    f"{what} returned a wrong mask")
            elif chosen and dropped:
                assert min(row[j] for j in chosen) >= max(row[j] for j in dropped) - tolerance, (
                    f"{what} returned a wrong mask")

    _rng = _random.Random(7301)
    for _device in available_devices():
        for _case in range(150):
            _lead = [_rng.randint(1, 3) for _ in range(_rng.randint(0, 2))]
            _n, _q = _rng.randint(1, 24), _rng.randint(1, 4)
            _g = torch.Generator().manual_seed(_case)
            _exact = _case % 3 == 0
            if _exact:  # multiples of 1/4 with many ties: every sum is exact in every floating dtype
                _dtype = [torch.float32, torch.float64, torch.float16, torch.bfloat16][_case // 3 % 4]
                _att = torch.randint(0, 4, (*_lead, _q, _n), generator=_g).to(_dtype) / 4
            else:
                _dtype = [torch.float32, torch.float64][_case % 2]
                _att = torch.softmax(torch.randn(*_lead, _q, _n, generator=_g, dtype=_dtype) * 3, dim=-1)
            _att = _att.to(_device)
            _before = _att.clone()
            _budget = _rng.randint(0, _n + 2)
            _recent = 0 if _case % 2 else _rng.randint(0, _budget)
            _check_keep(h2o_keep(_att, _budget, _recent), _att, _budget, _recent, _exact,
                        f"h2o_keep(budget {_budget}, recent {_recent}) on random case {_case} ({_dtype}) on {_device}")
            assert torch.equal(_att, _before), f"h2o_keep changed its attention on random case {_case}"
    ### END HIDDEN TESTS


_check_task7_3_1_heavy_hitters()

# %% nbgrader={"grade": true, "grade_id": "test_task7_3_2_window_ties", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that h2o_keep keeps the recent window, breaks ties to the earlier position, and refuses bad input."""


def _check_task7_3_2_window_ties():
    import numpy
    import torch

    from course.checks import assert_raises, assert_same_tensor
    from course.env import available_devices

    for device in available_devices():
        attention = torch.tensor([[0.5, 0.25, 0.25, 0.0, 0.0], [0.2, 0.05, 0.35, 0.2, 0.2]], device=device)
        assert_same_tensor(h2o_keep(attention, 3, 2), torch.tensor([True, False, False, True, True], device=device),
                           f"h2o_keep(scores [0.7, 0.3, 0.6, 0.2, 0.2], budget 3, recent 2) on {device}")
        assert_same_tensor(h2o_keep(attention, 4, 2), torch.tensor([True, False, True, True, True], device=device),
                           f"h2o_keep(scores [0.7, 0.3, 0.6, 0.2, 0.2], budget 4, recent 2) on {device}")
        assert_same_tensor(h2o_keep(attention, 2, 2), torch.tensor([False, False, False, True, True], device=device),
                           f"h2o_keep(budget 2, recent 2) on {device}: the window only")
        # The recent position 3 has the highest score, but it is kept already: the heavy hitter is position 1.
        one_query = torch.tensor([[0.1, 0.2, 0.1, 0.6]], device=device)
        assert_same_tensor(h2o_keep(one_query, 2, 1), torch.tensor([False, True, False, True], device=device),
                           f"h2o_keep(scores [0.1, 0.2, 0.1, 0.6], budget 2, recent 1) on {device}")
        assert_same_tensor(one_query, torch.tensor([[0.1, 0.2, 0.1, 0.6]], device=device),
                           f"the attention after h2o_keep(attention, 2, 1) on {device} (it must not change)")
        # Scores far below -1e9: the recent position is left out of the ranking, not given a low score.
        assert_same_tensor(h2o_keep(torch.tensor([[-1e35, -1e35, 0.5, 0.25]], device=device), 3, 1),
                           torch.tensor([True, False, True, True], device=device),
                           f"h2o_keep(scores [-1e35, -1e35, 0.5, 0.25], budget 3, recent 1) on {device}")
        # Finite values whose total overflows (a sum of them all may be inf - inf, NaN): there is no NaN in them.
        assert_same_tensor(h2o_keep(torch.tensor([[3e38, -3e38] * 8], device=device), 2, 0),
                           torch.tensor([True, False, True] + [False] * 13, device=device),
                           f"h2o_keep(scores [3e38, -3e38] * 8, budget 2, recent 0) on {device}")
        # Ties go to the earlier position.
        ties = torch.tensor([[0.25, 0.5, 0.25, 0.5, 0.25, 0.25]], device=device)
        assert_same_tensor(h2o_keep(ties, 3, 0), torch.tensor([True, True, False, True, False, False], device=device),
                           f"h2o_keep(scores [0.25, 0.5, 0.25, 0.5, 0.25, 0.25], budget 3, recent 0) on {device}")
        assert_same_tensor(h2o_keep(ties, 3, 1), torch.tensor([False, True, False, True, False, True], device=device),
                           f"h2o_keep(scores [0.25, 0.5, 0.25, 0.5, 0.25, 0.25], budget 3, recent 1) on {device}")
        assert_same_tensor(h2o_keep(torch.zeros(2, 16, device=device), 2, 0),
                           torch.arange(16, device=device) < 2, f"h2o_keep of 16 equal scores, budget 2, on {device}")
        # Many equal scores: an unstable sort (torch.sort without stable=True) returns them in any order.
        assert_same_tensor(h2o_keep(torch.zeros(2, 40, device=device), 3, 1),
                           (torch.arange(40, device=device) < 2) | (torch.arange(40, device=device) == 39),
                           f"h2o_keep of 40 equal scores, budget 3, recent 1, on {device}")
        assert_same_tensor(h2o_keep(attention, 5, 1), torch.ones(5, dtype=torch.bool, device=device),
                           f"h2o_keep(budget 5 = num_tokens) on {device}")
        assert_same_tensor(h2o_keep(attention, 9, 3), torch.ones(5, dtype=torch.bool, device=device),
                           f"h2o_keep(budget 9 > num_tokens) on {device}")
        assert_same_tensor(h2o_keep(attention, 9, 7), torch.ones(5, dtype=torch.bool, device=device),
                           f"h2o_keep(budget 9, recent 7 > num_tokens) on {device}")
    attention = torch.full((2, 5), 0.2)
    for args, error in [((attention, 2, 3), ValueError), ((attention, -1, 0), ValueError),
                        ((attention, 2, -1), ValueError), ((attention, True, 0), TypeError),
                        ((attention, 2, 1.0), TypeError), ((attention, numpy.int64(2), 0), TypeError),
                        ((attention.long(), 2, 0), TypeError),
                        ((torch.full((5,), 0.2), 2, 0), ValueError),
                        ((torch.tensor([[0.5, float("nan")]]), 1, 0), ValueError),
                        # The budget covers every position: everything is still checked.
                        ((attention, 9, 10), ValueError), ((torch.full((5,), 0.2), 9, 0), ValueError),
                        ((torch.tensor([[0.5, float("nan")]]), 4, 0), ValueError)]:
        assert_raises(error, f"h2o_keep(attention {list(args[0].shape)} {args[0].dtype}, {args[1]!r}, {args[2]!r})",
                      h2o_keep, *args)
    assert_raises(TypeError, "h2o_keep with a list as attention", h2o_keep, [[0.5, 0.5]], 1, 0)

    ### BEGIN HIDDEN TESTS
    for _device in available_devices():
        _scores = torch.tensor([[3.0, 1.0, 3.0, 2.0, 1.0, 3.0, 0.0, 0.0]], device=_device)
        assert_same_tensor(h2o_keep(_scores, 4, 2), torch.tensor([True, False, True, False, False, False, True, True],
                                                                  device=_device),
                           f"h2o_keep ties (3.0 at 0, 2, 5) budget 4 recent 2 on {_device}", reveal=False)
        assert_same_tensor(h2o_keep(_scores, 8, 8), torch.ones(8, dtype=torch.bool, device=_device),
                           "h2o_keep(budget 8, recent 8)", reveal=False)
        assert_same_tensor(h2o_keep(_scores, 0, 0), torch.zeros(8, dtype=torch.bool, device=_device),
                           "h2o_keep(budget 0)", reveal=False)
        _big = torch.tensor([[1e30, 1e30, 2e30, -1e30]], device=_device)
        assert_same_tensor(h2o_keep(_big, 2, 0), torch.tensor([True, False, True, False], device=_device),
                           "h2o_keep with scores 1e30, 1e30, 2e30, -1e30", reveal=False)
        _low = torch.tensor([[[-3e38, -2e38, -3e38, 1.0, -1.0]]], device=_device)
        assert_same_tensor(h2o_keep(_low, 3, 2), torch.tensor([[False, True, False, True, True]], device=_device),
                           "h2o_keep with scores -3e38, -2e38, -3e38 before the window", reveal=False)
        _same = torch.tensor([[0.5, 0.25], [0.25, 0.5]], device=_device, dtype=torch.float16)
        _copy = _same.clone()
        h2o_keep(_same[:1], 1, 1)
        assert torch.equal(_same, _copy), "h2o_keep changed its attention (one query, recent 1)"
        _flat = torch.full((3, 2, 100), 0.25, device=_device)
        assert_same_tensor(h2o_keep(_flat, 7, 2), (torch.arange(100, device=_device) < 5).expand(3, 100)
                           | (torch.arange(100, device=_device) >= 98), "h2o_keep of 100 equal scores, budget 7, recent 2",
                           reveal=False)
        _empty = h2o_keep(torch.zeros(3, 2, 0, device=_device), 0, 0)
        assert_same_tensor(_empty, torch.zeros(3, 0, dtype=torch.bool, device=_device), "h2o_keep on 0 positions",
                           reveal=False)
    assert_raises(TypeError, "h2o_keep(budget=2, recent=False)", h2o_keep, torch.ones(1, 3), 2, False)
    assert_raises(TypeError, "h2o_keep(budget=numpy.int32(3), recent=0)", h2o_keep, torch.ones(1, 3), numpy.int32(3), 0)
    assert_raises(TypeError, "h2o_keep on a complex tensor", h2o_keep, torch.ones(1, 3, dtype=torch.complex64), 2, 0)
    assert_raises(ValueError, "h2o_keep with a NaN in a later row", h2o_keep,
                  torch.tensor([[[0.5, 0.5]], [[0.5, float("nan")]]]), 2, 0)
    assert_raises(ValueError, "h2o_keep with a NaN and budget 9 over 2 positions", h2o_keep,
                  torch.tensor([[[0.5, 0.5]], [[float("nan"), 0.5]]]), 9, 1)
    assert_raises(ValueError, "h2o_keep(recent 3 > budget 2, 2 positions)", h2o_keep, torch.ones(1, 2), 2, 3)
    assert_raises(ValueError, "h2o_keep on a 0-D tensor", h2o_keep, torch.tensor(0.5), 3, 0)
    ### END HIDDEN TESTS


_check_task7_3_2_window_ties()

# %% [markdown] nbgrader={"grade": false, "grade_id": "task7_4_snapkv_keep_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 7.4: snapkv_keep (5 points)
#
# SnapKV (Li et al., 2024) observed that the prompt's last queries already attend to what the answer will need. After
# the prefill of a prompt of `num_tokens` positions, `snapkv_keep(attention, budget, window, kernel_size=5)` takes the
# prefill's attention probabilities `attention`, a floating-point tensor `[..., num_tokens, num_tokens]` of any floating
# dtype (row $i$ is query $i$, causal: entries above the diagonal are 0), and returns the `bool` keep mask
# `[..., num_tokens]` on its device:
#
# 1. **votes**: the last `window` rows (the observation window, queries `num_tokens - window ...`) vote for the earlier
#    positions `0 ... num_tokens - window - 1`: $s_j = \sum_{i \ge T - W} p_{ij}$;
# 2. **pooling**: each earlier position's score is the **mean** of the votes of the positions `j - kernel_size // 2`
#    to `j + kernel_size // 2` **that exist** among the earlier positions (near the two ends the mean is over fewer
#    votes; the window's own positions have no vote; padding does not count:
#    `torch.nn.functional.avg_pool1d(..., stride=1, padding=kernel_size // 2, count_include_pad=False)`); with
#    `kernel_size = 1` the scores are the votes;
# 3. **selection**: the `budget - window` earlier positions with the highest pooled scores, **ties to the earlier
#    position**, plus the whole window; every position when `budget >= num_tokens`.
#
# `budget`, `window` and `kernel_size` are Python `int`s (`TypeError` otherwise: `True` and numpy's `int64` are not);
# `ValueError` when `window < 1`, `window > budget`, `window > num_tokens`, `kernel_size` is not odd and positive, or
# `attention` does not end in two equal dimensions; `TypeError` when `attention` is not a floating-point tensor. Every
# check comes first, also when `budget >= num_tokens`. No argument is changed. No Python loop over rows or tokens.
# Ties are between equal computed scores, and a mean can be computed in several orders that round differently: wherever
# a tie matters, the tests use votes that are exact in floating point (multiples of 1/64, with kernel 1 or with tied
# positions whose neighbourhoods hold the same votes); elsewhere, of two pooled scores closer than about `1e-5`
# relative, either may be kept. SnapKV's released code uses a window of 32 prompt tokens, kernel 5 and average pooling,
# for prompts of thousands of tokens; the pooling keeps the neighbours of a voted token, so that a kept fact keeps its
# context.
#
# Graded in parts: 7.4.1 votes and selection (2) · 7.4.2 pooling (2) · 7.4.3 edge cases and bad input (1).
#
# ## 任务 7.4：snapkv_keep（5 分）
#
# SnapKV（Li 等，2024）观察到，提示词最后几个查询所关注的位置，正是之后生成答案时需要的位置。对一个有 `num_tokens` 个位置的提示词做完预填充之后，`snapkv_keep(attention, budget, window, kernel_size=5)` 接受预填充时的注意力概率 `attention`：任意浮点数据类型的张量 `[..., num_tokens, num_tokens]`，第 $i$ 行是查询 $i$，注意力是因果的（对角线以上为 0）。它返回同一设备上的 `bool` 保留掩码 `[..., num_tokens]`：
#
# 1. **投票**：最后 `window` 行（观察窗口，即查询 `num_tokens - window ...`）为更早的位置 `0 ... num_tokens - window - 1` 投票：$s_j = \sum_{i \ge T - W} p_{ij}$；
# 2. **池化**：更早位置 $j$ 的分数，是位置 `j - kernel_size // 2` 到 `j + kernel_size // 2` 的投票的**平均值**，但只算其中**确实存在**的更早位置（靠近两端时参与平均的投票更少；观察窗口自己的位置没有投票；填充不计入：`torch.nn.functional.avg_pool1d(..., stride=1, padding=kernel_size // 2, count_include_pad=False)`）；`kernel_size = 1` 时分数就是投票本身；
# 3. **选择**：保留池化分数最高的 `budget - window` 个更早位置（**平局时保留位置更靠前的**），再加上整个观察窗口；`budget >= num_tokens` 时保留全部位置。
#
# `budget`、`window` 和 `kernel_size` 是 Python `int`（否则抛出 `TypeError`：`True` 和 numpy 的 `int64` 都不算）；`window < 1`、`window > budget`、`window > num_tokens`、`kernel_size` 不是正奇数，或 `attention` 的最后两维长度不相等时，抛出 `ValueError`；`attention` 不是浮点张量时，抛出 `TypeError`。所有检查都最先做，`budget >= num_tokens` 时也一样。不修改任何参数。不允许对行或 token 写 Python 循环。平局指计算出来的分数恰好相等，而平均值可以按不同的顺序计算，舍入结果也可能不同：凡是平局会影响结果的地方，测试用的投票都是 1/64 的倍数，在浮点运算中没有舍入误差，而且要么池化核大小为 1，要么平局的各个位置的邻域中投票完全相同；其他地方，两个池化分数的相对差小于约 `1e-5` 时，保留哪一个都可以。SnapKV 公开的代码对几千个 token 的提示词使用 32 个 token 的观察窗口、大小为 5 的池化核和平均池化；池化让被投票位置的邻居也一并留下，于是一个被保留的事实会连同它的上下文一起保留。
#
# 分部分计分：7.4.1 投票与选择（2 分）· 7.4.2 池化（2 分）· 7.4.3 边界情况与错误输入（1 分）。

# %% nbgrader={"grade": false, "grade_id": "task7_4_snapkv_keep", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch
import torch.nn.functional as F


def snapkv_keep(attention, budget, window, kernel_size=5):
    """SnapKV's keep mask: the observation window plus the earlier positions it votes for, pooled, budget in all.

    Args:
        attention: float tensor [..., num_tokens, num_tokens], the prefill's attention probabilities; not changed.
        budget: int >= window, positions to keep per row.
        window: int in [1, num_tokens], the last prompt positions whose queries vote (always kept).
        kernel_size: odd int >= 1, the width of the average pooling over the votes.

    Returns:
        bool tensor [..., num_tokens] on attention's device; all True when budget >= num_tokens. Ties go to the
        earlier position.

    Raises (checked first, also when budget >= num_tokens):
        TypeError: attention not a floating-point tensor; budget, window or kernel_size not a Python int (bool and
            numpy's integers excluded).
        ValueError: the last two dims of attention differ; window < 1, window > budget or window > num_tokens;
            kernel_size not odd and positive.
    """
    if not isinstance(attention, torch.Tensor) or not attention.is_floating_point():
        raise TypeError("snapkv_keep: attention must be a floating-point torch.Tensor")
    for name, value in (("budget", budget), ("window", window), ("kernel_size", kernel_size)):
        if type(value) is not int:
            raise TypeError(f"snapkv_keep: {name} must be an int, got {type(value).__name__}")
    if attention.dim() < 2 or attention.shape[-1] != attention.shape[-2]:
        raise ValueError(f"snapkv_keep: attention must be [..., num_tokens, num_tokens], got {list(attention.shape)}")
    num_tokens = attention.shape[-1]
    if not 1 <= window <= min(budget, num_tokens):
        raise ValueError(f"snapkv_keep: need 1 <= window <= budget and window <= num_tokens ({num_tokens}), "
                         f"got window={window}, budget={budget}")
    if kernel_size < 1 or kernel_size % 2 == 0:
        raise ValueError(f"snapkv_keep: kernel_size must be odd and >= 1, got {kernel_size}")
    if budget >= num_tokens:
        return torch.ones(attention.shape[:-1], dtype=torch.bool, device=attention.device)
    prefix = num_tokens - window
    # TODO 7.4.1: the votes of the window's queries for the earlier positions.
    # 提示：观察窗口的查询是最后 window 行，更早的位置是前 prefix 列；先切出这一块，再对查询所在的那一维求和。
    # Hint: the window's queries are the last window rows and the earlier positions the first prefix columns; slice
    # that block out, then sum over the queries' dimension.
    ### BEGIN SOLUTION
    votes = attention[..., prefix:, :prefix].sum(dim=-2)
    ### END SOLUTION
    # TODO 7.4.2: average pooling along the positions, padding not counted.
    # 提示：avg_pool1d 要求输入的形状是 [N, 1, L]：先把所有前导维度合并成 N，池化之后再恢复 votes 原来的形状。
    # Hint: avg_pool1d takes input of shape [N, 1, L]: merge every leading dimension into N first, and give the result
    # votes' shape again after pooling.
    ### BEGIN SOLUTION
    pooled = F.avg_pool1d(votes.reshape(-1, 1, prefix), kernel_size, stride=1, padding=kernel_size // 2,
                          count_include_pad=False).reshape(votes.shape)
    ### END SOLUTION
    # TODO 7.4.3: keep the top budget - window earlier positions (ties to the earlier one), then the window.
    # 提示：与任务 7.3 相同：stable=True 的降序排序、scatter，再用 torch.cat 接上全 True 的窗口。
    # Hint: as in Task 7.3: a stable descending sort, scatter, then torch.cat with an all-True window.
    ### BEGIN SOLUTION
    order = torch.sort(pooled, dim=-1, descending=True, stable=True).indices
    keep_prefix = torch.zeros_like(pooled, dtype=torch.bool)
    keep_prefix.scatter_(-1, order[..., :budget - window], True)
    keep_window = torch.ones(*pooled.shape[:-1], window, dtype=torch.bool, device=attention.device)
    return torch.cat((keep_prefix, keep_window), dim=-1)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task7_4_1_votes", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that snapkv_keep keeps the positions the observation window votes for, and the window."""


def _check_task7_4_1_votes():
    import torch

    from course.checks import assert_no_python_loop, assert_same_tensor
    from course.env import available_devices

    def prompt_attention(device):
        # Rows 4 and 5 (the window of 2) vote [0.5, 0, 0.25, 0.5] for positions 0-3; rows 0-3 attend uniformly.
        rows = [[1.0, 0, 0, 0, 0, 0], [0.5, 0.5, 0, 0, 0, 0], [1 / 3, 1 / 3, 1 / 3, 0, 0, 0], [0.25] * 4 + [0, 0],
                [0.5, 0.0, 0.0, 0.25, 0.25, 0.0], [0.0, 0.0, 0.25, 0.25, 0.25, 0.25]]
        return torch.tensor(rows, device=device)

    def mask(text, device):
        return torch.tensor([c == "1" for c in text], dtype=torch.bool, device=device)

    for device in available_devices():
        attention = prompt_attention(device)
        for budget, expected in [(3, "100011"), (4, "100111"), (5, "101111"), (2, "000011")]:
            assert_same_tensor(snapkv_keep(attention, budget, 2, kernel_size=1), mask(expected, device),
                               f"snapkv_keep(votes [0.5, 0, 0.25, 0.5], budget {budget}, window 2, kernel_size 1) "
                               f"on {device}")
        # Window 1: only the last row votes, [0, 0, 0.25, 0.25, 0.25] for positions 0-4.
        assert_same_tensor(snapkv_keep(attention, 2, 1, kernel_size=1), mask("001001", device),
                           f"snapkv_keep(budget 2, window 1, kernel_size 1) on {device}")
        batched = torch.stack((attention, attention)).unsqueeze(1).expand(2, 3, 6, 6)
        assert_same_tensor(snapkv_keep(batched, 3, 2, kernel_size=1), mask("100011", device).expand(2, 3, 6),
                           f"snapkv_keep on [2, 3, 6, 6] attention on {device}")
        # 40 equal votes (every window row gives 1/64 to each earlier position): ties go to the earlier positions,
        # which an unstable sort (torch.sort without stable=True) does not promise.
        assert_same_tensor(snapkv_keep(torch.ones(42, 42, device=device).tril() / 64, 4, 2, kernel_size=1),
                           mask("11" + "0" * 38 + "11", device),
                           f"snapkv_keep(40 equal votes, budget 4, window 2, kernel_size 1) on {device}")
        # Every floating dtype (these votes are exact in each).
        for dtype in (torch.float16, torch.bfloat16, torch.float64):
            assert_same_tensor(snapkv_keep(attention.to(dtype), 4, 2, kernel_size=1), mask("100111", device),
                               f"snapkv_keep({dtype} attention, budget 4, window 2, kernel_size 1) on {device}")
        # float64 votes too small for float32 (a softmax row can hold them): ranked in their own dtype.
        tiny = torch.eye(4, dtype=torch.float64, device=device)
        tiny[3] = torch.tensor([1e-50, 2e-50, 0.0, 1.0], dtype=torch.float64)
        assert_same_tensor(snapkv_keep(tiny, 2, 1, kernel_size=1), mask("0101", device),
                           f"snapkv_keep(float64 attention whose last row votes [1e-50, 2e-50, 0], budget 2, window 1, "
                           f"kernel_size 1) on {device} (summed in float64)")
        before = attention.clone()
        snapkv_keep(attention, 3, 2, kernel_size=3)
        snapkv_keep(attention, 3, 1, kernel_size=1)
        assert_same_tensor(attention, before, f"the attention after snapkv_keep on {device} (it must not change)")
    small = (torch.rand(2, 4, 16, 16), 6, 2, 3)
    large = (torch.rand(32, 4, 256, 256), 6, 2, 3)
    assert_no_python_loop(snapkv_keep, small, large, "snapkv_keep on 16 and 256 prompt positions")

    ### BEGIN HIDDEN TESTS
    import random as _random

    def _check_keep(got, att, budget, window, kernel, exact, what):
        """Fail unless got is SnapKV's mask for att: exactly, or (exact False) up to pooled scores closer than 1e-5."""
        n = att.shape[-1]
        if type(got) is not torch.Tensor or (got.dtype, got.shape, got.device) != (torch.bool, att.shape[:-1],
                                                                                    att.device):
            raise AssertionError(f"{what} returned {type(got).__name__} "
                                 f"{getattr(got, 'dtype', '')} {tuple(getattr(got, 'shape', ()))}, which is wrong")
        rows = got.cpu().reshape(-1, n).tolist()
        if budget >= n:
            assert all(all(row) for row in rows), f"{what} returned a wrong mask"
            return
        prefix, half = n - window, kernel // 2
        votes = att.double()[..., prefix:, :prefix].sum(dim=-2).cpu().reshape(-1, prefix).tolist()
        for kept, row in zip(rows, votes):
            pooled = [sum(row[max(0, j - half):j + half + 1]) / len(row[max(0, j - half):j + half + 1])
                      for j in range(prefix)]
            chosen = [j for j in range(prefix) if kept[j]]
            dropped = [j for j in range(prefix) if not kept[j]]
            assert all(kept[prefix:]) and len(chosen) == budget - window, f"{what} returned a wrong mask"
            if exact:
                assert chosen == sorted(sorted(range(prefix), key=lambda j: (-pooled[j], j))[:budget - window]), (
                    f"{what} returned a wrong mask")
            elif chosen and dropped:
                tolerance = 1e-5 * (1.0 + max(abs(x) for x in pooled))
                assert min(pooled[j] for j in chosen) >= max(pooled[j] for j in dropped) - tolerance, (
                    f"{what} returned a wrong mask")

    _rng = _random.Random(7401)
    for _device in available_devices():
        for _case in range(120):
            _lead = [_rng.randint(1, 3) for _ in range(_rng.randint(0, 2))]
            _n = _rng.randint(1, 24)
            _g = torch.Generator().manual_seed(_case)
            _window = _rng.randint(1, _n)
            _budget = _rng.randint(_window, _n + 2)
            _exact = _case % 4 == 0
            _causal = torch.ones(_n, _n, dtype=torch.bool).tril()
            if _exact:  # multiples of 1/4 with many ties, kernel 1: the votes are exact in every dtype
                _dtype = [torch.float32, torch.float64, torch.float16, torch.bfloat16][_case // 4 % 4]
                _att = (torch.randint(0, 4, (*_lead, _n, _n), generator=_g) * _causal).to(_dtype) / 4
                _kernel = 1
            else:
                _dtype = [torch.float32, torch.float64][_case % 2]
                _scores = torch.randn(*_lead, _n, _n, generator=_g, dtype=_dtype) * 2
                _att = torch.softmax(_scores.masked_fill(~_causal, float("-inf")), dim=-1)
                _kernel = 1 if _case % 3 else _rng.choice([1, 3, 5, 7, 9, 31])
            _att = _att.to(_device)
            _before = _att.clone()
            _check_keep(snapkv_keep(_att, _budget, _window, _kernel), _att, _budget, _window, _kernel, _exact,
                        f"snapkv_keep(budget {_budget}, window {_window}, kernel {_kernel}), random case {_case} "
                        f"({_dtype}) on {_device}")
            assert torch.equal(_att, _before), f"snapkv_keep changed its attention on random case {_case}"
        _flat = (torch.ones(2, 80, 80, device=_device) / 64).tril()
        assert_same_tensor(snapkv_keep(_flat, 9, 3, 1), ((torch.arange(80, device=_device) < 6)
                                                         | (torch.arange(80, device=_device) >= 77)).expand(2, 80),
                           f"snapkv_keep of 77 equal votes, budget 9, window 3, kernel 1, on {_device}", reveal=False)
    ### END HIDDEN TESTS


_check_task7_4_1_votes()

# %% nbgrader={"grade": true, "grade_id": "test_task7_4_2_pooling", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that snapkv_keep averages the votes over the neighbours that exist before it selects."""


def _check_task7_4_2_pooling():
    import torch

    from course.checks import assert_same_tensor
    from course.env import available_devices

    def mask(text, device):
        return torch.tensor([c == "1" for c in text], dtype=torch.bool, device=device)

    for device in available_devices():
        rows = [[1.0, 0, 0, 0, 0, 0], [0.5, 0.5, 0, 0, 0, 0], [0.25, 0.25, 0.5, 0, 0, 0], [0.25] * 4 + [0, 0],
                [0.5, 0.0, 0.0, 0.25, 0.25, 0.0], [0.0, 0.0, 0.25, 0.25, 0.25, 0.25]]
        attention = torch.tensor(rows, device=device)
        # Votes [0.5, 0, 0.25, 0.5]; kernel 3 pools them to [0.25, 0.25, 0.25, 0.375] (the ends average 2 votes).
        assert_same_tensor(snapkv_keep(attention, 3, 2, kernel_size=3), mask("000111", device),
                           f"snapkv_keep(votes [0.5, 0, 0.25, 0.5], budget 3, window 2, kernel_size 3) on {device}")
        # Votes [0, 0, 0.5, 0.25, 0.5]; kernel 3 pools them to [0, 1/6, 0.25, 5/12, 0.375]: position 4, at the end,
        # averages 2 votes and beats position 2, which averages 3.
        uniform = [[1 / (i + 1)] * (i + 1) + [0.0] * (6 - i) for i in range(5)]
        votes = torch.tensor(uniform + [[0, 0, 0.25, 0.25, 0.25, 0.25, 0], [0, 0, 0.25, 0, 0.25, 0.25, 0.25]],
                             device=device)
        assert_same_tensor(snapkv_keep(votes, 4, 2, kernel_size=3), mask("0001111", device),
                           f"snapkv_keep(votes [0, 0, 0.5, 0.25, 0.5], budget 4, window 2, kernel_size 3) on {device}")
        # Kernel 5 over 4 votes: [0.25, 0.3125, 0.3125, 0.25]; positions 1 and 2 average the same 4 votes (a tie).
        assert_same_tensor(snapkv_keep(attention, 3, 2, kernel_size=5), mask("010011", device),
                           f"snapkv_keep(votes [0.5, 0, 0.25, 0.5], budget 3, window 2, kernel_size 5) on {device}")
        # A kernel wider than the prompt: every position averages every vote (a tie, so the earliest wins).
        assert_same_tensor(snapkv_keep(attention, 3, 2, kernel_size=9), mask("100011", device),
                           f"snapkv_keep(budget 3, window 2, kernel_size 9) on {device}")
        assert_same_tensor(snapkv_keep(attention, 3, 2), mask("010011", device),
                           f"snapkv_keep(budget 3, window 2) on {device} (kernel_size 5 by default)")

    ### BEGIN HIDDEN TESTS
    for _device in available_devices():
        _n = 9
        _att = torch.zeros(_n, _n, device=_device)
        _att[-1, :] = torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 0.5], device=_device)
        _att[-2, :8] = torch.tensor([0.75, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.25], device=_device)
        # Window 2, votes for 0-6: [0.75, 0, 0, 0, 0, 0, 0]; kernel 3: [0.375, 0.25, 0, 0, 0, 0, 0].
        assert_same_tensor(snapkv_keep(_att, 4, 2, 3), torch.tensor([1, 1, 0, 0, 0, 0, 0, 1, 1], dtype=torch.bool,
                                                                    device=_device),
                           f"snapkv_keep with a vote at the edge, kernel 3, on {_device}", reveal=False)
        # Kernel 5: [0.25, 0.1875, 0.15, 0, 0, 0, 0] -> keep 0, 1, 2.
        assert_same_tensor(snapkv_keep(_att, 5, 2, 5), torch.tensor([1, 1, 1, 0, 0, 0, 0, 1, 1], dtype=torch.bool,
                                                                    device=_device),
                           f"snapkv_keep with a vote at the edge, kernel 5, on {_device}", reveal=False)
    ### END HIDDEN TESTS


_check_task7_4_2_pooling()

# %% nbgrader={"grade": true, "grade_id": "test_task7_4_3_edges", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that snapkv_keep handles a budget that covers the prompt or equals the window, and refuses bad input."""


def _check_task7_4_3_edges():
    import numpy
    import torch

    from course.checks import assert_raises, assert_same_tensor
    from course.env import available_devices

    for device in available_devices():
        attention = torch.full((2, 6, 6), 1 / 6, device=device).tril()
        assert_same_tensor(snapkv_keep(attention, 6, 2, 3), torch.ones(2, 6, dtype=torch.bool, device=device),
                           f"snapkv_keep(budget 6 = num_tokens) on {device}")
        assert_same_tensor(snapkv_keep(attention, 10, 6, 3), torch.ones(2, 6, dtype=torch.bool, device=device),
                           f"snapkv_keep(budget 10, window 6 = num_tokens) on {device}")
        assert_same_tensor(snapkv_keep(attention, 3, 3, 3), (torch.arange(6, device=device) >= 3).expand(2, 6),
                           f"snapkv_keep(budget 3 = window 3) on {device}: the window only")
    attention = torch.full((6, 6), 1 / 6).tril()
    for args, error in [((attention, 3, 4, 3), ValueError), ((attention, 3, 0, 3), ValueError),
                        ((attention, 8, 7, 3), ValueError), ((attention, 4, 2, 4), ValueError),
                        ((attention, 4, 2, 0), ValueError), ((attention[:5], 4, 2, 3), ValueError),
                        ((attention, 4, 2, True), TypeError), ((attention, 4.0, 2, 3), TypeError),
                        ((attention, 4, 2, numpy.int64(3)), TypeError), ((attention.long(), 4, 2, 3), TypeError),
                        ((attention.tolist(), 4, 2, 3), TypeError),
                        # The budget covers the prompt: everything is still checked.
                        ((attention, 6, 2, 4), ValueError), ((attention, 9, 0, 3), ValueError),
                        ((attention[:5], 9, 2, 3), ValueError)]:
        shown = f"attention {list(args[0].shape)} {args[0].dtype}" if isinstance(args[0], torch.Tensor) else "a list"
        assert_raises(error, f"snapkv_keep({shown}, {args[1]!r}, {args[2]!r}, {args[3]!r})", snapkv_keep, *args)

    ### BEGIN HIDDEN TESTS
    assert_raises(ValueError, "snapkv_keep(kernel_size -3)", snapkv_keep, attention, 4, 2, -3)
    assert_raises(TypeError, "snapkv_keep(window=True)", snapkv_keep, attention, 4, True, 3)
    assert_raises(TypeError, "snapkv_keep(budget=numpy.int32(4))", snapkv_keep, attention, numpy.int32(4), 2, 3)
    assert_raises(TypeError, "snapkv_keep(kernel_size=3.0)", snapkv_keep, attention, 4, 2, 3.0)
    assert_raises(TypeError, "snapkv_keep on a complex tensor", snapkv_keep, attention.to(torch.complex64), 4, 2, 3)
    assert_raises(ValueError, "snapkv_keep on a 1-D tensor", snapkv_keep, torch.ones(6), 4, 2, 3)
    assert_raises(ValueError, "snapkv_keep on a 1-D tensor, budget 9", snapkv_keep, torch.ones(6), 9, 2, 3)
    assert_raises(ValueError, "snapkv_keep(kernel_size 2) with budget 7 over 6 positions", snapkv_keep, attention, 7, 1,
                  2)
    assert_raises(ValueError, "snapkv_keep(kernel_size -1) with budget 7 over 6 positions", snapkv_keep, attention, 7,
                  1, -1)
    assert_raises(ValueError, "snapkv_keep(window 7 > 6 positions) with budget 7", snapkv_keep, attention, 7, 7, 1)
    assert_raises(ValueError, "snapkv_keep on [2, 6, 5] attention with budget 9", snapkv_keep,
                  torch.zeros(2, 6, 5), 9, 2, 3)
    for _device in available_devices():
        _one = torch.ones(1, 1, device=_device)
        assert_same_tensor(snapkv_keep(_one, 1, 1, 1), torch.ones(1, dtype=torch.bool, device=_device),
                           "snapkv_keep on one position", reveal=False)
        _att = torch.full((7, 7), 1 / 7, device=_device, dtype=torch.float64).tril()
        assert_same_tensor(snapkv_keep(_att, 3, 1, 1), torch.tensor([1, 1, 0, 0, 0, 0, 1], dtype=torch.bool,
                                                                     device=_device),
                           "snapkv_keep on float64 attention with tied votes", reveal=False)
        _half = torch.full((2, 7, 7), 0.25, device=_device, dtype=torch.float16).tril()
        assert_same_tensor(snapkv_keep(_half, 9, 3, 5), torch.ones(2, 7, dtype=torch.bool, device=_device),
                           "snapkv_keep on float16 attention, budget 9", reveal=False)
    ### END HIDDEN TESTS


_check_task7_4_3_edges()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task7_5_pyramid_budgets_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 7.5: pyramid_budgets (3 points)
#
# PyramidKV (Cai et al., 2024) found attention spread widely in the lower layers and concentrated on a few tokens in
# the upper ones ("pyramidal information funneling"), and so gives the lower layers more of the budget. With $L$
# layers, a total budget $B_\text{total}$ (the average $\bar B = B_\text{total} / L$) and a ratio $\beta$, the top
# layer gets $\bar B / \beta$, the bottom layer $2\bar B - \bar B/\beta$, and the layers between lie on the straight
# line, so the $L$ budgets average $\bar B$. For layer $l = 0, \dots, L-1$ (0 is the lowest) that is exactly
#
# $$b_l = \frac{N_l}{D}, \qquad N_l = B_\text{total}\,\big((2\beta - 1)(L - 1) - 2l(\beta - 1)\big), \qquad D = L\,\beta\,(L - 1).$$
#
# `pyramid_budgets(total, num_layers, beta=20)` returns the list of `num_layers` Python `int`s $\lfloor N_l / D\rfloor$,
# then adds 1 to each of the first $B_\text{total} - \sum_l \lfloor N_l / D \rfloor$ layers (layers 0, 1, …), so that
# the budgets sum to `total` exactly. With one layer it returns `[total]`. The three arguments are Python `int`s
# (`TypeError` otherwise: `True`, `10.0` and numpy's `int64` are not) with `total >= 0`, `num_layers >= 1`, `beta >= 1`
# (`ValueError` otherwise), checked first, with one layer too; `beta = 1` gives equal budgets. PyramidKV uses
# $\beta = 20$. The result is exact for any `total`, however large (the tests go to $10^{40}$, far beyond $2^{53}$, the
# limit up to which float64 holds every integer). Traps: the same formula in
# floating point (the average, then the top, then the line) floors `pyramid_budgets(28, 5, 2)` to `[9, 7, 6, 4, 2]`
# instead of `[9, 8, 5, 4, 2]`, because 7.999999… floors to 7: compute $N_l$ and $D$ as integers and use `//` (also
# `int(N / D)` goes through a float, which holds only 53 bits); the units left over go one to each layer, so several
# layers may get one.
#
# ## 任务 7.5：pyramid_budgets（3 分）
#
# PyramidKV（Cai 等，2024）发现，低层的注意力分布很广，高层的注意力则集中在少数 token 上（“金字塔式信息汇聚”），于是把更多的预算分给低层。设有 $L$ 层、总预算 $B_\text{total}$（平均每层 $\bar B = B_\text{total} / L$）和比值 $\beta$：最高层得到 $\bar B / \beta$，最低层得到 $2\bar B - \bar B/\beta$，中间各层落在两者之间的直线上，因此 $L$ 个预算的平均值是 $\bar B$。对第 $l = 0, \dots, L-1$ 层（第 0 层最低），精确地写出来就是
#
# $$b_l = \frac{N_l}{D}, \qquad N_l = B_\text{total}\,\big((2\beta - 1)(L - 1) - 2l(\beta - 1)\big), \qquad D = L\,\beta\,(L - 1).$$
#
# `pyramid_budgets(total, num_layers, beta=20)` 先算出每层的 $\lfloor N_l / D\rfloor$，再给前 $B_\text{total} - \sum_l \lfloor N_l / D \rfloor$ 层（第 0、1、… 层）各加 1，使预算之和恰好等于 `total`，然后返回这 `num_layers` 个 Python `int` 组成的列表。只有一层时返回 `[total]`。三个参数都是 Python `int`（否则抛出 `TypeError`：`True`、`10.0` 和 numpy 的 `int64` 都不算），且 `total >= 0`、`num_layers >= 1`、`beta >= 1`（否则抛出 `ValueError`）；参数最先检查，只有一层时也要检查。`beta = 1` 时各层预算相等。PyramidKV 使用 $\beta = 20$。无论 `total` 多大，结果都必须精确（测试会用到 $10^{40}$，远远超过 $2^{53}$，而 float64 只在 $2^{53}$ 以内才能精确表示每一个整数）。陷阱：用浮点数计算同一个公式（先算平均值，再算最高层，再算直线）时，`pyramid_budgets(28, 5, 2)` 会向下取整成 `[9, 7, 6, 4, 2]`，而不是 `[9, 8, 5, 4, 2]`，因为 7.999999… 向下取整是 7。所以要用整数计算 $N_l$ 和 $D$，再用 `//` 相除（`int(N / D)` 也要经过浮点数，而浮点数只有 53 位有效数字）；剩下的单位每层最多加 1，所以可能有好几层各加 1。

# %% nbgrader={"grade": false, "grade_id": "task7_5_pyramid_budgets", "locked": false, "schema_version": 3, "solution": true, "task": false}
def pyramid_budgets(total, num_layers, beta=20):
    """PyramidKV's per-layer budgets: falling linearly with depth, summing to total.

    Returns:
        list of num_layers ints, layer 0 (the lowest) first: floor(N_l / D), plus 1 for each of the first
        total - sum(floors) layers. [total] for one layer.

    Raises (checked first, with one layer too):
        TypeError: an argument that is not a Python int (bool and numpy's integers excluded).
        ValueError: total < 0, num_layers < 1 or beta < 1.
    """
    for name, value, low in (("total", total, 0), ("num_layers", num_layers, 1), ("beta", beta, 1)):
        if type(value) is not int:
            raise TypeError(f"pyramid_budgets: {name} must be an int, got {type(value).__name__}")
        if value < low:
            raise ValueError(f"pyramid_budgets: {name} must be >= {low}, got {value}")
    if num_layers == 1:
        return [total]
    # TODO 7.5.1: the floors of N_l / D in integer arithmetic.
    # 提示：N_l 和 D 都是整数；整数的 // 就是精确的向下取整。
    # Hint: N_l and D are integers; // on ints is the exact floor.
    ### BEGIN SOLUTION
    denominator = num_layers * beta * (num_layers - 1)
    budgets = [total * ((2 * beta - 1) * (num_layers - 1) - 2 * layer * (beta - 1)) // denominator
               for layer in range(num_layers)]
    ### END SOLUTION
    # TODO 7.5.2: give the units left over to the lowest layers, one each.
    # 提示：剩下的单位数 total - sum(budgets) 小于 num_layers。
    # Hint: the units left over, total - sum(budgets), are fewer than num_layers.
    ### BEGIN SOLUTION
    left_over = total - sum(budgets)
    return [budget + (layer < left_over) for layer, budget in enumerate(budgets)]
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task7_5_pyramid_budgets", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that pyramid_budgets falls linearly with depth, sums to the total and uses exact arithmetic."""


def _check_task7_5_pyramid_budgets():
    import numpy

    from course.checks import assert_plain_equal, assert_raises, check_type

    result = pyramid_budgets(40, 2)
    check_type(result, list, "pyramid_budgets(40, 2)")
    check_type(result[0], int, "pyramid_budgets(40, 2)[0]")
    assert_plain_equal(result, [39, 1], "pyramid_budgets(40, 2) (average 20: top 20/20 = 1, bottom 40 - 1 = 39)")
    assert_plain_equal(pyramid_budgets(64, 4), [32, 22, 10, 0], "pyramid_budgets(64, 4)")
    assert_plain_equal(pyramid_budgets(16, 2), [16, 0], "pyramid_budgets(16, 2) (floors 15 and 0, one unit left)")
    assert_plain_equal(pyramid_budgets(100, 3, 20), [66, 33, 1], "pyramid_budgets(100, 3, 20)")
    assert_plain_equal(pyramid_budgets(30, 3, 1), [10, 10, 10], "pyramid_budgets(30, 3, beta=1)")
    assert_plain_equal(pyramid_budgets(31, 3, 1), [11, 10, 10], "pyramid_budgets(31, 3, beta=1) (one unit left)")
    assert_plain_equal(pyramid_budgets(28, 5, 2), [9, 8, 5, 4, 2], "pyramid_budgets(28, 5, 2) (exact floors)")
    assert_plain_equal(pyramid_budgets(32, 3, 1), [11, 11, 10], "pyramid_budgets(32, 3, beta=1) (two units left)")
    assert_plain_equal(pyramid_budgets(7, 1), [7], "pyramid_budgets(7, 1)")
    assert_plain_equal(pyramid_budgets(0, 3), [0, 0, 0], "pyramid_budgets(0, 3)")
    # Exact for any size: a float holds only 53 bits.
    assert_plain_equal(pyramid_budgets(10**30 + 7, 3, 7),
                       [619047619047619047619047619052, 333333333333333333333333333336, 47619047619047619047619047619],
                       "pyramid_budgets(10**30 + 7, 3, 7)")
    for args, error in [((-1, 2), ValueError), ((10, 0), ValueError), ((10, 2, 0), ValueError),
                        ((10.0, 2), TypeError), ((10, True), TypeError), ((10, 2, 2.5), TypeError),
                        ((numpy.int64(10), 2), TypeError),
                        # One layer: the arguments are still checked.
                        ((-1, 1), ValueError), ((5, 1, 0), ValueError), ((5, 1, 2.5), TypeError),
                        ((5.0, 1), TypeError)]:
        assert_raises(error, f"pyramid_budgets{args}", pyramid_budgets, *args)

    ### BEGIN HIDDEN TESTS
    import random as _random
    from fractions import Fraction as _Fraction

    def _oracle(total, layers, beta):
        if layers == 1:
            return [total]
        average = _Fraction(total, layers)
        top = average / beta
        bottom = 2 * average - top
        floors = [int((bottom - (bottom - top) * _l / (layers - 1)) // 1) for _l in range(layers)]
        left = total - sum(floors)
        return [_b + (1 if _l < left else 0) for _l, _b in enumerate(floors)]

    _rng = _random.Random(7501)
    for _case in range(600):
        _total, _layers, _beta = _rng.randint(0, 5000), _rng.randint(1, 40), _rng.choice([1, 2, 3, 5, 7, 10, 20, 97])
        _got = pyramid_budgets(_total, _layers, _beta)
        assert_plain_equal(_got, _oracle(_total, _layers, _beta),
                           f"pyramid_budgets({_total}, {_layers}, {_beta})", reveal=False)
        assert all(type(_b) is int for _b in _got), f"pyramid_budgets({_total}, {_layers}, {_beta}) must hold ints"
    assert_plain_equal(pyramid_budgets(10**15, 3, 20), _oracle(10**15, 3, 20), "pyramid_budgets(10**15, 3, 20)",
                       reveal=False)
    for _case in range(60):
        _total, _layers = _rng.randint(0, 10**40), _rng.randint(1, 12)
        _beta = _rng.choice([1, 2, 3, 20, _rng.randint(1, 10**6)])
        assert_plain_equal(pyramid_budgets(_total, _layers, _beta), _oracle(_total, _layers, _beta),
                           f"pyramid_budgets({_total}, {_layers}, {_beta})", reveal=False)
    assert_plain_equal(pyramid_budgets(205, 3, 5), [124, 68, 13], "pyramid_budgets(205, 3, 5)", reveal=False)
    for _args in [(5, 2, -4), (5, -1), (-(10**9), 1), (3, 1, -(10**20)), (0, 1, 0)]:
        assert_raises(ValueError, f"pyramid_budgets{_args}", pyramid_budgets, *_args)
    for _args in [(False, 1), ("5", 2), (5, 2, None), (5, 1, True), (5, 1, None), (numpy.int32(5), 1),
                  (5, numpy.int64(2)), (5, 2, numpy.int8(3)), (5, 1.0)]:
        assert_raises(TypeError, f"pyramid_budgets{_args}", pyramid_budgets, *_args)
    ### END HIDDEN TESTS


_check_task7_5_pyramid_budgets()

# %% [markdown] nbgrader={"grade": false, "grade_id": "task7_6_decode_with_eviction_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 7.6: decode_with_eviction (8 points)
#
# In generation the cache grows by one token per step, and a policy must evict **while** it generates: StreamingLLM
# and H2O do it at every step. `decode_with_eviction(model, tokens, budget, keep_fn)` feeds the integer tensor
# `tokens` `[batch, length]`, on the model's device, through `model` (a `TinyDecoder`; batched calls as in the
# model's docstring) one token at a time, and after every step cuts each layer back to `budget` slots with the policy
# `keep_fn`:
#
# - step `t` runs `tokens[:, t:t + 1]` with the cache and `position=t` (its true position: after an eviction the
#   cache holds fewer slots than `t`), with `return_attention=True`, and keeps its logits;
# - each layer keeps **scores**, `[batch, num_heads, num_slots]` in the attention's dtype (float32 here), one per
#   cache slot: the accumulated attention the slot received, the sum of its attention at every step since it entered
#   the cache (the step's own token included: the new slot starts at the attention it paid to itself). After step
#   `t`, add the step's attention row (`attention[layer][:, :, 0, :]`) to the scores, with a new entry for the new
#   slot;
# - then, when a layer holds more than `budget` slots, call `keep = keep_fn(scores, budget)` for that layer and keep
#   the masked slots of its K/V (`course.model.prune_cache`) **and** of its scores, so that slot $j$'s score stays
#   slot $j$'s. `keep` must be a `bool` tensor of the scores' shape with exactly `budget` `True` per row (`ValueError`
#   otherwise: a policy that keeps more or fewer slots is a bug to report, not to hide).
#
# Return `(logits, kv)`: `logits` `[batch, length, vocab_size]` (step `t`'s logits at `[:, t]`), `kv` the final cache.
# When `budget >= length` nothing is evicted and the logits **equal** the full-cache model's, step for step. `tokens`
# may have any integer dtype (`int64`, `int32`, `uint8` …). `TypeError` when `tokens` is not an integer tensor, `budget`
# not a Python `int` (`True` and numpy's `int64` are not) or `keep_fn` not callable; `ValueError` when `tokens` is not
# 2-D or holds no token (`[0, length]` too), or `budget < 1`. These checks come before the first step: a `keep_fn` that
# is not callable is a `TypeError` also when nothing would be evicted. The mask's shape must be exactly the scores'
# shape: a `[num_heads, num_slots]` or `[num_slots]` mask that would broadcast is a `ValueError` (for a batch of 1 too).
# The loop over the steps is the decode loop itself; inside a step, no Python loop over sequences, heads or slots (a
# loop over the layers is fine). Traps: evicting before the step's own token is in the cache (the next step then cannot
# see it); scores that stay behind when the slots move (prune them with the same mask); a position taken from the
# cache's length after an eviction; one layer's scores used for every layer (each layer has its own).
#
# Graded in parts: 7.6.1 no eviction equals the full cache (2) · 7.6.2 eviction and positions (3) · 7.6.3 accumulated
# scores (2) · 7.6.4 bad input (1).
#
# ## 任务 7.6：decode_with_eviction（8 分）
#
# 生成时缓存每步增加一个 token，驱逐策略必须**边生成边**驱逐：StreamingLLM 和 H2O 每一步都这样做。`decode_with_eviction(model, tokens, budget, keep_fn)` 把整数张量 `tokens` `[batch, length]`（与模型在同一设备上）一次一个 token 地送入 `model`（一个 `TinyDecoder`；按批次调用的方式见模型的文档字符串），每一步之后用驱逐策略 `keep_fn` 把每一层裁剪回 `budget` 个槽位：
#
# - 第 `t` 步用当前缓存运行 `tokens[:, t:t + 1]`，传入 `position=t`（这是它真实的位置：驱逐之后缓存中的槽位数少于 `t`）和 `return_attention=True`，并保存这一步的 logits；
# - 每一层维护**分数**：`[batch, num_heads, num_slots]` 张量，数据类型与注意力相同（这里是 float32），每个缓存槽位一项，即这个槽位收到的累积注意力，也就是它进入缓存以来每一步得到的注意力之和（包括它进入缓存的那一步：新槽位的初始分数，就是这一步的查询对它的注意力）。第 `t` 步之后，把这一步的注意力行（`attention[layer][:, :, 0, :]`）加到分数上，并为新槽位添加一项；
# - 然后，若某一层的槽位多于 `budget` 个，就对这一层调用 `keep = keep_fn(scores, budget)`，按掩码保留它的 K/V（`course.model.prune_cache`）**以及**它的分数，使第 $j$ 个槽位的分数仍然属于第 $j$ 个槽位。`keep` 必须是与分数形状相同的 `bool` 张量，且每一行恰好有 `budget` 个 `True`（否则抛出 `ValueError`：保留多了或少了的策略有错误，应当报告出来，而不是悄悄掩盖）。
#
# 返回 `(logits, kv)`：`logits` 的形状为 `[batch, length, vocab_size]`（第 `t` 步的 logits 在 `[:, t]`），`kv` 是最终的缓存。`budget >= length` 时什么也不驱逐，每一步的 logits 都与全缓存模型的**相等**。`tokens` 可以是任何整数数据类型（`int64`、`int32`、`uint8` …）。`tokens` 不是整数张量、`budget` 不是 Python `int`（`True` 和 numpy 的 `int64` 都不算），或 `keep_fn` 不可调用时，抛出 `TypeError`；`tokens` 不是二维或一个 token 都没有（`[0, length]` 也算），或 `budget < 1` 时，抛出 `ValueError`。这些检查在第一步之前完成：即使什么都不需要驱逐，不可调用的 `keep_fn` 也要抛出 `TypeError`。掩码的形状必须恰好等于分数的形状：能够广播成分数形状的 `[num_heads, num_slots]` 或 `[num_slots]` 掩码也要抛出 `ValueError`（batch 为 1 时也一样）。逐步执行的循环就是解码循环本身；在一步之内，不对序列、注意力头或槽位写 Python 循环（对层的循环可以）。陷阱：在这一步自己的 token 进入缓存之前就驱逐（下一步就看不到它了）；槽位移动了，分数却留在原处（要用同一个掩码裁剪分数）；驱逐之后把缓存的长度当作位置；把一层的分数用于所有层（每一层有自己的分数）。
#
# 分部分计分：7.6.1 不驱逐时等于全缓存（2 分）· 7.6.2 驱逐与位置（3 分）· 7.6.3 累积分数（2 分）· 7.6.4 错误输入（1 分）。

# %% nbgrader={"grade": false, "grade_id": "task7_6_decode_with_eviction", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch

from course.model import prune_cache


def decode_with_eviction(model, tokens, budget, keep_fn):
    """Decode tokens one at a time, cutting every layer back to budget slots after each step with keep_fn.

    Args:
        model: a TinyDecoder.
        tokens: integer tensor [batch, length] (any integer dtype, at least one token) on the model's device.
        budget: int >= 1, the most slots each layer keeps after a step.
        keep_fn: keep_fn(scores, budget) -> bool tensor of exactly scores' shape [batch, num_heads, num_slots] with
            exactly budget True per row; scores are each slot's accumulated attention (each layer its own).

    Returns:
        (logits [batch, length, vocab_size], kv): every step's logits, and the final cache.

    Raises (the arguments are checked before the first step):
        TypeError: tokens not an integer tensor, budget not a Python int (bool and numpy's integers excluded), keep_fn
            not callable.
        ValueError: tokens not 2-D or empty, budget < 1, or a mask from keep_fn that is not bool of exactly the
            scores' shape with budget True per row.
    """
    if not isinstance(tokens, torch.Tensor) or tokens.dtype.is_floating_point or tokens.dtype == torch.bool:
        raise TypeError("decode_with_eviction: tokens must be an integer torch.Tensor")
    if type(budget) is not int:
        raise TypeError(f"decode_with_eviction: budget must be an int, got {type(budget).__name__}")
    if not callable(keep_fn):
        raise TypeError("decode_with_eviction: keep_fn must be callable")
    if tokens.dim() != 2 or tokens.numel() == 0 or budget < 1:
        raise ValueError(f"decode_with_eviction: need tokens [batch, length] with at least one token and budget >= 1, "
                         f"got shape {list(tokens.shape)} and budget {budget}")
    kv, scores, steps = None, None, []
    for step in range(tokens.shape[1]):
        # TODO 7.6.1: run this step's token at its true position, with the attention; keep its logits.
        # 提示：只把这一步的一个 token（保持 [batch, 1] 的形状）连同当前缓存交给模型；位置参数是它在整条序列中的位置，而不是缓存的长度；
        # 要求模型同时返回注意力。任务说明的第一条列出了所有参数。
        # Hint: give the model this step's one token (keep the shape [batch, 1]) with the current cache; its position is its
        # place in the whole sequence, not the cache's length; ask the model for the attention too. The task's first bullet
        # names every argument.
        ### BEGIN SOLUTION
        logits, kv, attention = model(tokens[:, step:step + 1], past_kv=kv, position=step, return_attention=True)
        steps.append(logits)
        ### END SOLUTION
        # TODO 7.6.2: add this step's attention row to each layer's scores, with a new entry for the new slot.
        # 提示：旧分数后面接一列 0（torch.cat 或 F.pad），再加上 attention[layer][:, :, 0, :]。
        # Hint: append a column of zeros to the old scores (torch.cat or F.pad), then add attention[layer][:, :, 0, :].
        ### BEGIN SOLUTION
        rows = [layer_attention[:, :, 0, :] for layer_attention in attention]
        if scores is None:
            scores = rows
        else:
            scores = [torch.cat((old, torch.zeros_like(old[..., :1])), dim=-1) + row for old, row in zip(scores, rows)]
        ### END SOLUTION
        # TODO 7.6.3: when the cache holds more than budget slots, ask keep_fn, check its mask, prune K/V and scores.
        # 提示：每一层调用一次 keep_fn，在裁剪任何东西之前先检查每个掩码（类型、数据类型、确切的形状、每行 budget 个 True）；
        # prune_cache 接受由每层一个掩码组成的列表。用同一个掩码做布尔索引会把一层的分数展平，要再把它们变回每行 budget 个槽位。
        # Hint: call keep_fn once per layer and check every mask (type, dtype, exact shape, budget True per row) before
        # pruning anything; prune_cache takes a list of masks, one per layer. Boolean indexing with the same mask
        # flattens a layer's scores: bring them back to budget slots per row.
        ### BEGIN SOLUTION
        if kv[0][0].shape[1] > budget:
            keeps = []
            for layer_scores in scores:
                keep = keep_fn(layer_scores, budget)
                if (not isinstance(keep, torch.Tensor) or keep.dtype != torch.bool or keep.shape != layer_scores.shape
                        or not bool((keep.sum(dim=-1) == budget).all())):
                    raise ValueError(f"decode_with_eviction: keep_fn must return a bool mask of shape "
                                     f"{list(layer_scores.shape)} with {budget} True per row")
                keeps.append(keep)
            kv = prune_cache(kv, keeps)
            scores = [layer_scores[keep].reshape(*layer_scores.shape[:-1], budget)
                      for layer_scores, keep in zip(scores, keeps)]
        ### END SOLUTION
    return torch.cat(steps, dim=1), kv


# %% nbgrader={"grade": true, "grade_id": "test_task7_6_1_full_budget", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that decode_with_eviction equals the full-cache model when the budget covers every token."""


def _check_task7_6_1_full_budget():
    import torch

    from course.checks import assert_plain_equal, assert_same_tensor, check_type
    from course.env import available_devices
    from course.model import TinyDecoder

    def window(scores, budget):
        return torch.arange(scores.shape[-1], device=scores.device) >= scores.shape[-1] - budget

    for device in available_devices():
        model = TinyDecoder(vocab_size=23, num_layers=2, num_heads=2, head_dim=4, seed=7, positions="rotary").to(device)
        # The expected values come from a twin that decode_with_eviction never gets, before it runs.
        twin = TinyDecoder(vocab_size=23, num_layers=2, num_heads=2, head_dim=4, seed=7, positions="rotary").to(device)
        tokens = torch.randint(0, 23, (3, 10), generator=torch.Generator().manual_seed(76)).to(device)
        expected, kv = [], None
        for step in range(10):
            logits, kv = twin(tokens[:, step:step + 1], past_kv=kv)
            expected.append(logits)
        expected = torch.cat(expected, dim=1)
        whole, _ = twin(tokens)
        for budget in (10, 64):
            result = decode_with_eviction(model, tokens, budget, window)
            check_type(result, tuple, f"decode_with_eviction(..., budget={budget})")
            logits, final = result
            assert_same_tensor(logits, expected, f"decode_with_eviction logits with budget {budget} on {device} "
                                                 "(nothing evicted: the full cache, step for step)")
            assert_plain_equal([tuple(k.shape) for k, _ in final], [(3, 10, 2, 4)] * 2,
                               f"the final cache's shapes with budget {budget} on {device}")
            assert_same_tensor(final[1][1], kv[1][1], f"the final cache's layer-1 values with budget {budget} on {device}")
        assert_same_tensor(decode_with_eviction(model, tokens, 10, window)[0], whole,
                           f"decode_with_eviction(budget 10) against one call on the whole sequence on {device}",
                           atol=1e-5)
        for dtype in (torch.int32, torch.uint8):
            assert_same_tensor(decode_with_eviction(model, tokens.to(dtype), 10, window)[0], expected,
                               f"decode_with_eviction logits of {dtype} tokens with budget 10 on {device}")

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(7601)
    for _case in range(4):
        _shape = dict(vocab_size=11, num_layers=_rng.randint(1, 3), num_heads=_rng.randint(1, 3), head_dim=2,
                      seed=_case, positions=_rng.choice(["rotary", "sinusoidal"]))
        _model, _twin = TinyDecoder(**_shape), TinyDecoder(**_shape)
        _length = _rng.randint(1, 9)
        _tokens = torch.randint(0, 11, (_rng.randint(1, 3), _length), generator=torch.Generator().manual_seed(_case))
        _expected, _kv = [], None
        for _step in range(_length):
            _logits, _kv = _twin(_tokens[:, _step:_step + 1], past_kv=_kv)
            _expected.append(_logits)

        def _refuse(scores, budget):
            raise AssertionError("keep_fn was called although nothing had to be evicted")

        _dtype = [torch.int64, torch.int32, torch.int16, torch.uint8][_case]
        _got, _final = decode_with_eviction(_model, _tokens.to(_dtype), _length + _rng.randint(0, 3), _refuse)
        assert_same_tensor(_got, torch.cat(_expected, dim=1), f"full budget, random case {_case}", reveal=False)
        assert_same_tensor(_final[-1][0], _kv[-1][0], f"final keys, full budget, random case {_case}", reveal=False)
    ### END HIDDEN TESTS


_check_task7_6_1_full_budget()

# %% nbgrader={"grade": true, "grade_id": "test_task7_6_2_eviction", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that decode_with_eviction prunes to budget slots after each step and keeps the true positions."""


def _check_task7_6_2_eviction():
    import torch

    from course.checks import assert_no_python_loop, assert_plain_equal, assert_same_tensor
    from course.env import available_devices
    from course.model import TinyDecoder, prune_cache

    def window(scores, budget, /):  # Positional only: the text calls keep_fn(scores, budget).
        return (torch.arange(scores.shape[-1], device=scores.device) >= scores.shape[-1] - budget).expand(scores.shape)

    for device in available_devices():
        model = TinyDecoder(vocab_size=23, num_layers=2, num_heads=2, head_dim=4, seed=7, positions="rotary").to(device)
        # The expected values come from a twin that decode_with_eviction never gets, before it runs.
        twin = TinyDecoder(vocab_size=23, num_layers=2, num_heads=2, head_dim=4, seed=7, positions="rotary").to(device)
        tokens = torch.randint(0, 23, (3, 10), generator=torch.Generator().manual_seed(76)).to(device)
        full, kv = [], None
        for step in range(5):
            logits, kv = twin(tokens[:, step:step + 1], past_kv=kv)
            full.append(logits)
        # After step 4 the window keeps slots 1-4; step 5 runs at position 5 on them.
        keep = torch.tensor([False, True, True, True, True], device=device)
        step5, _ = twin(tokens[:, 5:6], past_kv=prune_cache(kv, [keep, keep]), position=5)
        logits, final = decode_with_eviction(model, tokens, 4, window)
        assert_same_tensor(logits[:, :5], torch.cat(full, dim=1),
                           f"decode_with_eviction(budget 4) logits of steps 0-4 on {device} (nothing evicted yet)")
        assert_same_tensor(logits[:, 5], step5[:, 0], f"decode_with_eviction(budget 4) logits of step 5 on {device} "
                                                      "(the cache holds positions 1-4; the token is at position 5)",
                           atol=1e-6)
        assert_plain_equal([tuple(k.shape) for k, _ in final], [(3, 4, 2, 4)] * 2,
                           f"the final cache's shapes with budget 4 on {device}")
        assert_plain_equal(tuple(logits.shape), (3, 10, 23), f"the logits' shape with budget 4 on {device}")

    # Inside a step, no Python loop over sequences or heads: as many torch operations for 1 sequence with 1 head as
    # for 6 sequences with 4 heads (the same 6 steps, budget and evictions).
    small_model, large_model = (TinyDecoder(vocab_size=23, num_layers=2, num_heads=heads, head_dim=4, seed=9,
                                            positions="rotary") for heads in (1, 4))
    small_tokens, large_tokens = (torch.randint(0, 23, (batch, 6), generator=torch.Generator().manual_seed(77))
                                  for batch in (1, 6))
    assert_no_python_loop(decode_with_eviction, (small_model, small_tokens, 3, window),
                          (large_model, large_tokens, 3, window),
                          "decode_with_eviction on 1 sequence with 1 head and on 6 sequences with 4 heads")

    ### BEGIN HIDDEN TESTS
    import random as _random

    def _oracle(model, tokens, budget, keep_fn):
        batch, length = tokens.shape
        kv, scores, out = None, None, []
        for t in range(length):
            logits, kv, att = model(tokens[:, t:t + 1], past_kv=kv, position=t, return_attention=True)
            out.append(logits)
            if scores is None:
                scores = [a[:, :, 0, :].clone() for a in att]
            else:
                scores = [torch.nn.functional.pad(s, (0, 1)) + a[:, :, 0, :] for s, a in zip(scores, att)]
            if kv[0][0].shape[1] > budget:
                new_kv, new_scores = [], []
                for (k, v), s in zip(kv, scores):
                    m = keep_fn(s, budget)
                    index = torch.sort(torch.where(m, torch.arange(s.shape[-1], device=s.device), s.shape[-1]),
                                       dim=-1).values[..., :budget]
                    gather = index.transpose(1, 2)[..., None].expand(batch, budget, k.shape[2], k.shape[3])
                    new_kv.append((k.gather(1, gather), v.gather(1, gather)))
                    new_scores.append(s.gather(-1, index))
                kv, scores = new_kv, new_scores
        return torch.cat(out, dim=1), kv

    def _sinks(scores, budget):
        n = scores.shape[-1]
        positions = torch.arange(n, device=scores.device)
        return ((positions < 1) | (positions >= n - budget + 1)).expand(scores.shape)

    def _heavy(scores, budget):
        order = torch.sort(scores[..., :-1], dim=-1, descending=True, stable=True).indices[..., :budget - 1]
        keep = torch.zeros_like(scores, dtype=torch.bool)
        keep[..., :-1].scatter_(-1, order, True)
        keep[..., -1] = True
        return keep

    _rng = _random.Random(7602)
    for _device in available_devices():
        # Cases 6 to 8 have three layers: each one is cut back to the budget, on its own scores.
        for _case in range(9):
            _layers = 2 if _case < 6 else 3
            _model, _twin = (TinyDecoder(vocab_size=13, num_layers=_layers, num_heads=2, head_dim=4, seed=10 + _case,
                                         positions="rotary").to(_device) for _ in range(2))
            _tokens = torch.randint(0, 13, (2, 12), generator=torch.Generator().manual_seed(_case)).to(_device)
            _budget = _rng.randint(2, 6)
            _fn = [window, _sinks, _heavy][_case % 3]
            _want, _want_kv = _oracle(_twin, _tokens.clone(), _budget, _fn)
            _got, _final = decode_with_eviction(_model, _tokens, _budget, _fn)
            _where = f"random case {_case} ({_layers} layers, budget {_budget}) on {_device}"
            assert_same_tensor(_got, _want, f"logits with eviction, {_where}", atol=1e-5, reveal=False)
            assert_plain_equal([tuple(k.shape) for k, _ in _final], [tuple(k.shape) for k, _ in _want_kv],
                               f"the final cache's shapes, layer by layer, {_where}", reveal=False)
            for _layer in range(_layers):
                for _side, _what in enumerate(("keys", "values")):
                    assert_same_tensor(_final[_layer][_side], _want_kv[_layer][_side],
                                       f"final {_what} of layer {_layer}, {_where}", atol=1e-5, reveal=False)
    ### END HIDDEN TESTS


_check_task7_6_2_eviction()

# %% nbgrader={"grade": true, "grade_id": "test_task7_6_3_scores", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that decode_with_eviction passes keep_fn each slot's accumulated attention, pruned with its slot."""


def _check_task7_6_3_scores():
    import torch

    from course.checks import assert_plain_equal, assert_same_tensor
    from course.env import available_devices
    from course.model import TinyDecoder

    def matching(calls, want, layer):
        """The call among ``calls`` (one eviction's, one per layer, in whatever order the answer visits the layers)
        that got ``want``; else the call at ``layer`` (whose comparison then fails with the usual message)."""
        found = (c for c in calls if c.shape == want.shape and bool(torch.allclose(c, want, atol=1e-5)))
        return next(found, calls[layer] if layer < len(calls) else None)

    for device in available_devices():
        model = TinyDecoder(vocab_size=23, num_layers=2, num_heads=2, head_dim=4, seed=7, positions="rotary").to(device)
        # The expected values come from a twin that decode_with_eviction never gets, before it runs.
        twin = TinyDecoder(vocab_size=23, num_layers=2, num_heads=2, head_dim=4, seed=7, positions="rotary").to(device)
        tokens = torch.randint(0, 23, (3, 10), generator=torch.Generator().manual_seed(76)).to(device)
        _, _, attention = twin(tokens[:, :5], return_attention=True)
        seen = []

        def one_sink(scores, budget, seen=seen):
            # Keep slot 0 and the last budget - 1 slots, and remember the scores.
            seen.append(scores.clone())
            n = scores.shape[-1]
            positions = torch.arange(n, device=scores.device)
            return ((positions < 1) | (positions >= n - budget + 1)).expand(scores.shape)

        decode_with_eviction(model, tokens, 4, one_sink)
        assert_plain_equal(len(seen), 2 * 6, f"keep_fn calls with budget 4 over 10 steps, 2 layers, on {device}")
        assert_plain_equal([tuple(s.shape) for s in seen[:2]], [(3, 2, 5)] * 2,
                           f"the scores' shapes at the first eviction on {device}")
        # Each eviction calls keep_fn once per layer; the text fixes no order of the layers.
        first = [matching(seen[:2], attention[layer].sum(dim=-2), layer) for layer in range(2)]
        for layer in range(2):
            assert_same_tensor(first[layer], attention[layer].sum(dim=-2),
                               f"layer {layer}'s scores at the first eviction (after step 4) on {device}: the sum of "
                               "the attention of steps 0-4", atol=1e-5)
        # At the second eviction: slot 1 was evicted, one step's attention (which sums to 1) was added.
        for layer in range(2):
            expected_sum = 5 - first[layer][..., 1] + 1
            assert_same_tensor(matching([s.sum(dim=-1) for s in seen[2:4]], expected_sum, layer), expected_sum,
                               f"layer {layer}'s scores summed over the slots at the second eviction on {device}",
                               atol=1e-5)

    ### BEGIN HIDDEN TESTS
    for _device in available_devices():
        _model, _twin = (TinyDecoder(vocab_size=17, num_layers=2, num_heads=3, head_dim=4, seed=3,
                                     positions="rotary").to(_device) for _ in range(2))
        _tokens = torch.randint(0, 17, (2, 11), generator=torch.Generator().manual_seed(3)).to(_device)
        _seen = []

        def _recording(_seen):
            # A closure, not a default argument: the student's code gets this function and could read its defaults.
            def heavy(scores, budget):
                _seen.append(scores.clone())
                order = torch.sort(scores[..., :-1], dim=-1, descending=True, stable=True).indices[..., :budget - 1]
                keep = torch.zeros_like(scores, dtype=torch.bool)
                keep[..., :-1].scatter_(-1, order, True)
                keep[..., -1] = True
                return keep

            return heavy

        _heavy = _recording(_seen)

        # An independent replay of the scores with the same policy, on a twin that decode_with_eviction never gets.
        _want, _kv, _scores = [], None, None
        from course.model import prune_cache as _prune

        for _t in range(11):
            _, _kv, _att = _twin(_tokens[:, _t:_t + 1], past_kv=_kv, position=_t, return_attention=True)
            _rows = [_a[:, :, 0, :] for _a in _att]
            _scores = _rows if _scores is None else [torch.cat((_s, torch.zeros_like(_s[..., :1])), -1) + _r
                                                     for _s, _r in zip(_scores, _rows)]
            if _kv[0][0].shape[1] > 3:
                _keeps = []
                for _s in _scores:
                    _want.append(_s.clone())
                    _order = torch.sort(_s[..., :-1], dim=-1, descending=True, stable=True).indices[..., :2]
                    _k = torch.zeros_like(_s, dtype=torch.bool)
                    _k[..., :-1].scatter_(-1, _order, True)
                    _k[..., -1] = True
                    _keeps.append(_k)
                _kv = _prune(_kv, _keeps)
                _scores = [_s[_k].reshape(*_s.shape[:-1], 3) for _s, _k in zip(_scores, _keeps)]
        decode_with_eviction(_model, _tokens, 3, _heavy)
        for _calls, _expected in enumerate(_want):
            _step = _calls - _calls % 2  # The first call of this eviction: one per layer, in any order.
            _got = matching(_seen[_step:_step + 2], _expected, _calls % 2)
            if _got is None:
                break  # Fewer calls than evictions: the count below says so.
            assert_same_tensor(_got, _expected, f"scores passed to keep_fn, call {_calls}, on {_device}", atol=1e-5,
                               reveal=False)
        _calls = len(_want)
        assert_plain_equal(len(_seen), _calls, "the number of keep_fn calls", reveal=False)
    ### END HIDDEN TESTS


_check_task7_6_3_scores()

# %% nbgrader={"grade": true, "grade_id": "test_task7_6_4_bad_input", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that decode_with_eviction refuses bad input and policies that keep the wrong number of slots, and only those."""


def _check_task7_6_4_bad_input():
    import numpy
    import torch

    from course.checks import assert_accepts, assert_raises
    from course.model import TinyDecoder

    calls = []

    class Recording(TinyDecoder):
        """The test's model, which records each forward call (in a list the test keeps)."""

        def forward(self, *args, **kwargs):
            calls.append("forward")
            return super().forward(*args, **kwargs)

        forward.__doc__ = TinyDecoder.forward.__doc__

    class KeepFn:
        """Every keep_fn of this test, valid or not, is one of these, told apart only by a private kind: nothing the
        student's code can read says which mask it returns."""

        def __init__(self, kind):
            self._kind, self._calls = kind, 0

        def __call__(self, scores, budget):
            window = (torch.arange(scores.shape[-1]) >= scores.shape[-1] - budget).expand(scores.shape)
            kind = self._kind
            self._calls += 1
            if kind == "too_many" or (kind == "second_call_too_many" and self._calls == 2):
                return (torch.arange(scores.shape[-1]) >= scores.shape[-1] - budget - 1).expand(scores.shape)
            if kind == "too_few":
                return (torch.arange(scores.shape[-1]) >= scores.shape[-1] - budget + 1).expand(scores.shape)
            if kind == "as_int":
                return window.long()
            if kind == "as_list":
                return window.tolist()
            if kind == "one_row":
                return window[0, 0]
            if kind == "per_head":
                return window[0]
            if kind == "per_head_fresh":
                return (torch.arange(scores.shape[-1]) >= scores.shape[-1] - budget).repeat(scores.shape[1], 1)
            if kind == "batch_of_one":
                return window[:1]
            if kind == "uneven":
                keep = window.clone()
                keep[0, 0, scores.shape[-1] - budget - 1] = True  # One slot more in the first row ...
                keep[-1, -1, -1] = False  # ... and one fewer in the last: as many True in all as budget per row gives.
                return keep
            return window

    # One model for every case: it records each forward call, so the cases whose arguments are refused can check
    # that the model never ran (the checks come before the first step).
    model = Recording(vocab_size=23, num_layers=2, num_heads=2, head_dim=4, seed=7, positions="rotary")
    tokens = torch.randint(0, 23, (2, 6), generator=torch.Generator().manual_seed(76))
    window = KeepFn("window")

    def refused(error, what, args, before_first_step):
        calls.clear()
        assert_raises(error, f"decode_with_eviction with {what}", decode_with_eviction, model, *args)
        assert not (before_first_step and calls), (f"decode_with_eviction with {what} ran the model before it refused "
                                                   "them (check the arguments before the first step)")

    for args, error, what in [((tokens, 0, window), ValueError, "budget 0"),
                              ((tokens, -3, window), ValueError, "budget -3"),
                              ((tokens, True, window), TypeError, "budget True"),
                              ((tokens, 2.0, window), TypeError, "budget 2.0"),
                              ((tokens, numpy.int64(3), window), TypeError, "budget numpy.int64(3)"),
                              ((tokens[0], 3, window), ValueError, "1-D tokens"),
                              ((tokens[:, :0], 3, window), ValueError, "tokens [2, 0] (no token)"),
                              ((tokens[:0, :5], 3, window), ValueError, "tokens [0, 5] (no sequence: no token)"),
                              ((tokens[:0], 10, window), ValueError, "tokens [0, 6] (no sequence), budget 10"),
                              ((tokens.float(), 3, window), TypeError, "float tokens"),
                              ((tokens, 3, "window"), TypeError, "a keep_fn that is a string"),
                              ((tokens, 10, "window"), TypeError, "a keep_fn that is a string, budget 10 (no eviction)")]:
        refused(error, what, args, before_first_step=True)
    # A mask is only seen once the cache is full: these run the model first.
    for args, what in [((tokens, 3, KeepFn("too_many")), "a keep_fn that keeps budget + 1 slots"),
                       ((tokens, 3, KeepFn("uneven")),
                        "a keep_fn that keeps budget + 1 slots in one row and budget - 1 in another"),
                       ((tokens, 3, KeepFn("as_int")), "a keep_fn that returns an int64 mask"),
                       ((tokens, 3, KeepFn("one_row")), "a keep_fn that returns one row for every head"),
                       ((tokens, 3, KeepFn("per_head")), "a keep_fn that returns a [num_heads, num_slots] mask for a "
                                                         "batch of 2"),
                       ((tokens[:1], 3, KeepFn("per_head_fresh")),
                        "a keep_fn that returns a [num_heads, num_slots] mask for a batch of 1 (as many entries as the "
                        "scores, not their shape)"),
                       # The first step that evicts calls keep_fn once for each of the model's 2 layers: every mask
                       # is checked, not only the first layer's.
                       ((tokens, 3, KeepFn("second_call_too_many")),
                        "a keep_fn that keeps budget + 1 slots at its second call only (the second layer's mask)")]:
        refused(ValueError, what, args, before_first_step=False)
    # Valid input is not refused: with eviction (budget 3 of 6 steps) and without (budget 10).
    for budget in (3, 10):
        assert_accepts(f"decode_with_eviction(model, tokens [2, 6], {budget}, window)", decode_with_eviction, model,
                       tokens, budget, window)

    ### BEGIN HIDDEN TESTS
    refused(ValueError, "a keep_fn that keeps budget - 1 slots", (tokens, 3, KeepFn("too_few")), False)
    refused(ValueError, "a keep_fn that returns a list", (tokens, 3, KeepFn("as_list")), False)
    refused(ValueError, "a keep_fn that returns a [1, num_heads, num_slots] mask for a batch of 2",
            (tokens, 3, KeepFn("batch_of_one")), False)
    for args, error, what in [((tokens.tolist(), 3, window), TypeError, "tokens as a list"),
                              ((tokens > 5, 3, window), TypeError, "bool tokens"),
                              ((tokens, 3, None), TypeError, "keep_fn None"),
                              ((tokens[None], 3, window), ValueError, "3-D tokens"),
                              ((tokens[:0], 3, window), ValueError, "tokens [0, 6] (no sequence)"),
                              ((tokens, 6, None), TypeError, "keep_fn None, budget 6 (no eviction)"),
                              ((tokens, numpy.int32(8), window), TypeError, "budget numpy.int32(8), no eviction")]:
        refused(error, what, args, True)
    ### END HIDDEN TESTS


_check_task7_6_4_bad_input()

# %% [markdown]
# ## Experiments | 实验
#
# The experiments use your functions on the trained recall decoder. A sequence is `BOS k1 v1 … k28 v28` (57 context
# tokens), then four queries `? k v`: after `? k` the model must predict `k`'s value. The cell below loads the model
# (no download: the weights ship with the course package), draws 250 fresh sequences and prints the full cache's recall,
# the ceiling of every curve below. The model is tiny, so it runs on the CPU with one thread, on any machine.
#
# 实验在训练好的联想回忆解码器上使用你写的函数。一条序列是 `BOS k1 v1 … k28 v28`（57 个上下文 token），后面是 4 个查询 `? k v`：模型看到 `? k` 之后必须预测出 `k` 的值。下面的单元加载模型（不需要下载：权重随课程包一起提供），抽取 250 条新序列，并打印全缓存的回忆准确率，它是下面每条曲线的上限。模型很小，所以在任何机器上都用 CPU 的一个线程运行。

# %%
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from course import recall
from course.model import load_recall_decoder, prune_cache
from course.plots import claim, label

torch.set_num_threads(1)  # The 100k-parameter model is fastest on one thread; more threads only add overhead.
experiment_started = time.perf_counter()
model = load_recall_decoder()
batch = recall.recall_batch(250, seed=7_000_000)
CONTEXT = batch.context_length
full_recall, full_loss = recall.recall_accuracy(model, batch)
print(f"model: {sum(p.numel() for p in model.parameters()):,} parameters, {model.num_layers} layers x "
      f"{model.num_heads} heads; trained {model.metadata['steps']} steps; held-out recall "
      f"{model.metadata['recall_accuracy']:.4f}")
print(f"{batch.tokens.shape[0]} sequences of {batch.tokens.shape[1]} tokens ({CONTEXT} of context); full cache: "
      f"recall {full_recall:.3f}, answer loss {full_loss:.4f} nats")
claim("the full cache answers at least 95% of the queries", full_recall >= 0.95)

# %% [markdown]
# ### Experiment 1: recall against the budget | 实验 1：回忆准确率随预算的变化
#
# Prefill the 57 context tokens with the full cache, then evict once: in every layer and head keep `budget` of the 57
# context slots, chosen by each policy, and ask the four queries on the pruned cache (the queries' own tokens are never
# evicted). Policies: **random** (a random `budget` per head, the floor any policy should beat), **recent window**
# (`streaming_keep` with 0 sinks), **StreamingLLM** (4 sinks), **H2O** (accumulated attention of all 57 context
# queries, half the budget as the recent window), **SnapKV** (an observation window of the last `min(4, budget // 2)`
# context tokens, kernel 5), **PyramidKV** (SnapKV's selection with `pyramid_budgets(2 * budget, 2)` per layer),
# and **SnapKV with the question**: the prompt is the context plus the question `? k`, which is the observation
# window (one prefill per query) — the setting of SnapKV's paper, where the question ends the prompt.
#
# 用全缓存预填充 57 个上下文 token，然后驱逐一次：在每一层、每个注意力头中，按各驱逐策略从 57 个上下文槽位中保留 `budget` 个，再在裁剪后的缓存上提出 4 个查询（查询自己的 token 永远不会被驱逐）。驱逐策略：**随机**（每个头随机保留 `budget` 个，任何策略都应当超过这个下限）、**最近窗口**（汇点数为 0 的 `streaming_keep`）、**StreamingLLM**（4 个注意力汇点）、**H2O**（57 个上下文查询的累积注意力，预算的一半作为最近窗口）、**SnapKV**（观察窗口为最后 `min(4, budget // 2)` 个上下文 token，核大小 5）、**PyramidKV**（逐层预算为 `pyramid_budgets(2 * budget, 2)`，每层按 SnapKV 的方式选择），以及**带问题的 SnapKV**：提示词是上下文加上问题 `? k`，问题就是观察窗口（每个查询预填充一次）—— 这正是 SnapKV 论文的设定：问题位于提示词的末尾。

# %%
BUDGETS = [2, 4, 8, 16, 32, 48]
NUM_SEQUENCES, HEADS, LAYERS = batch.tokens.shape[0], model.num_heads, model.num_layers


def snapkv_window(budget):
    """The observation window for a budget: the last min(4, budget // 2) prompt tokens, at least 1."""
    return max(1, min(4, budget // 2))


def layer_snapkv(attention, budget):
    """SnapKV's keep mask for one layer; a budget of 0 keeps nothing (PyramidKV can give a layer 0)."""
    if budget == 0:
        return torch.zeros(attention.shape[:-1], dtype=torch.bool)
    return snapkv_keep(attention, budget, snapkv_window(budget), kernel_size=5)


def capped(budgets, ceiling):
    """Move the part of a layer's budget above ceiling (the prompt length) to the next layers."""
    budgets, excess = list(budgets), 0
    for layer, value in enumerate(budgets):
        budgets[layer] = min(value + excess, ceiling)
        excess = value + excess - budgets[layer]
    return budgets


def ask(kv, keeps, queries, position, answers, answer_at):
    """Run the queries on the context cache pruned by keeps; return (correct answers, answer loss sum, count)."""
    logits, _ = model(queries, past_kv=prune_cache(kv, keeps), position=position)
    picked = logits[:, answer_at]
    correct = int((picked.argmax(dim=-1) == answers).sum())
    loss = float(F.cross_entropy(picked.reshape(-1, picked.shape[-1]), answers.reshape(-1), reduction="sum"))
    return correct, loss, answers.numel()


started, cpu_started = time.perf_counter(), time.process_time()
_, context_kv, context_attention = model(batch.tokens[:, :CONTEXT], return_attention=True)
context_kv = [(k, v) for k, v in context_kv]
queries = batch.tokens[:, CONTEXT:]
answer_at = batch.answer_positions - CONTEXT
# One prefill per query for SnapKV with the question: the context, then "? k".
question_runs = []
for j in range(recall.NUM_QUERIES):
    start = CONTEXT + recall.QUERY_LENGTH * j
    prompt = torch.cat((batch.tokens[:, :CONTEXT], batch.tokens[:, start:start + 2]), dim=1)
    _, kv_q, attention_q = model(prompt, return_attention=True)
    question_runs.append((start, [(k[:, :CONTEXT], v[:, :CONTEXT]) for k, v in kv_q], attention_q))

generator = torch.Generator().manual_seed(0)
results = {}  # policy -> list of (recall, answer loss) per budget
for budget in BUDGETS:
    random_scores = [torch.rand(NUM_SEQUENCES, HEADS, 1, CONTEXT, generator=generator) for _ in range(LAYERS)]
    policies = {
        "random": [h2o_keep(scores, budget, 0) for scores in random_scores],
        "recent window": [streaming_keep(CONTEXT, budget, 0)] * LAYERS,
        "StreamingLLM (4 sinks)": [streaming_keep(CONTEXT, budget, 4)] * LAYERS,
        "H2O": [h2o_keep(attention, budget, budget // 2) for attention in context_attention],
        "SnapKV": [layer_snapkv(attention, budget) for attention in context_attention],
        "PyramidKV": [layer_snapkv(attention, layer_budget) for attention, layer_budget
                      in zip(context_attention, capped(pyramid_budgets(LAYERS * budget, LAYERS), CONTEXT))],
    }
    for name, keeps in policies.items():
        keeps = [keep.expand(NUM_SEQUENCES, HEADS, CONTEXT) for keep in keeps]
        correct, loss, count = ask(context_kv, keeps, queries, CONTEXT, batch.answers, answer_at)
        results.setdefault(name, []).append((correct / count, loss / count))
    total = [0, 0.0, 0]
    for j, (start, kv_q, attention_q) in enumerate(question_runs):
        # The question's two tokens vote over the 57 context positions (summed, pooled with kernel 5).
        keeps = []
        for attention in attention_q:
            votes = attention[..., CONTEXT:, :CONTEXT + 2]
            square = torch.zeros(*votes.shape[:-2], CONTEXT + 2, CONTEXT + 2)
            square[..., CONTEXT:, :] = votes
            keeps.append(snapkv_keep(square, budget + 2, 2, kernel_size=5)[..., :CONTEXT])
        correct, loss, count = ask(kv_q, keeps, batch.tokens[:, start:start + 2], CONTEXT,
                                   batch.answers[:, j:j + 1], torch.tensor([1]))
        total = [total[0] + correct, total[1] + loss, total[2] + count]
    results.setdefault("SnapKV with the question", []).append((total[0] / total[2], total[1] / total[2]))
print(f"{len(BUDGETS)} budgets x {len(results)} policies on {NUM_SEQUENCES} sequences: "
      f"{time.perf_counter() - started:.1f} s wall, {time.process_time() - cpu_started:.1f} s CPU")
print("PyramidKV's layer budgets (capped at the context, the excess moved up):",
      {budget: capped(pyramid_budgets(LAYERS * budget, LAYERS), CONTEXT) for budget in BUDGETS})
print(f"\nrecall accuracy (full cache {full_recall:.3f}); budget = context slots kept per layer and head, of {CONTEXT}")
print(f"{'policy':>26} | " + " ".join(f"{budget:>6}" for budget in BUDGETS))
for name, rows in results.items():
    print(f"{name:>26} | " + " ".join(f"{accuracy:6.3f}" for accuracy, _ in rows))
print(f"\nanswer loss, nats (full cache {full_loss:.4f})")
for name, rows in results.items():
    print(f"{name:>26} | " + " ".join(f"{loss:6.2f}" for _, loss in rows))

accumulated = context_attention[-1].sum(dim=-2).mean(dim=(0, 1))
print("H2O's accumulated attention in the top layer, mean over sequences and heads, at positions 0, 1, 28, 56: "
      + ", ".join(f"{float(accumulated[j]):.2f}" for j in (0, 1, 28, 56)))
agnostic = [name for name in results if name != "SnapKV with the question"]
for index, budget in enumerate(BUDGETS):
    best = max(agnostic, key=lambda name: results[name][index][0])
    print(f"budget {budget:>2}: best question-agnostic policy {best} ({results[best][index][0]:.3f}), random "
          f"{results['random'][index][0]:.3f}, SnapKV with the question {results['SnapKV with the question'][index][0]:.3f}, "
          f"budget / context {budget / CONTEXT:.3f}")
recall_of = {name: dict(zip(BUDGETS, (accuracy for accuracy, _ in rows))) for name, rows in results.items()}
top_layer_budget = {budget: capped(pyramid_budgets(LAYERS * budget, LAYERS), CONTEXT)[-1] for budget in BUDGETS}
claim("every question-agnostic policy but PyramidKV recalls at most 1.5 x budget / context + 0.03 at every budget",
      all(recall_of[name][b] <= 1.5 * b / CONTEXT + 0.03 for name in agnostic if name != "PyramidKV" for b in BUDGETS))
claim("random selection is within 0.05 of the best question-agnostic policy at every budget",
      all(recall_of["random"][b] >= max(recall_of[name][b] for name in agnostic) - 0.05 for b in BUDGETS))
claim("PyramidKV recalls at most 0.05 at every budget that leaves the top layer 0 slots",
      all(recall_of["PyramidKV"][b] <= 0.05 for b in BUDGETS if top_layer_budget[b] == 0))
claim("SnapKV with the question recalls within 0.01 of the full cache from budget 8 on",
      all(recall_of["SnapKV with the question"][b] >= full_recall - 0.01 for b in BUDGETS if b >= 8))
claim("H2O's accumulated attention falls at positions 0, 1, 28 and 56, and position 0 collects over 10 times "
      "position 28's", bool((accumulated[[0, 1, 28]] > accumulated[[1, 28, 56]]).all())
      and float(accumulated[0]) > 10 * float(accumulated[28]))
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
for index, (name, rows) in enumerate(results.items()):
    axes[0].plot(BUDGETS, [accuracy for accuracy, _ in rows], marker="o", label=name, color=f"C{index}")
    axes[1].plot(BUDGETS, [loss for _, loss in rows], marker="o", label=name, color=f"C{index}")
axes[0].axhline(full_recall, color="black", linestyle="--", label=label("full cache", "全缓存"))
axes[1].axhline(full_loss, color="black", linestyle="--", label=label("full cache", "全缓存"))
for axis, title in zip(axes, (label("Recall accuracy", "回忆准确率"), label("Answer loss (nats)", "答案损失（nats）"))):
    axis.set_xscale("log", base=2)
    axis.set_xticks(BUDGETS, [str(budget) for budget in BUDGETS])
    axis.set_xlabel(label(f"budget (context slots kept of {CONTEXT})", f"预算（{CONTEXT} 个上下文槽位中保留的个数）"))
    axis.set_title(title)
axes[0].legend(fontsize=7)
plt.tight_layout()
plt.show()

# %% [markdown]
# **What the curves say.** Read the printed table and the `check:` lines under it. The full cache answers almost
# every query. The policies that must choose before they see the question (random, the recent window, StreamingLLM,
# H2O, SnapKV on the context's last tokens) recall roughly in proportion to the budget, never more than about 1.5 times
# the share of the context they keep: the 28 pairs are equally likely to be asked and nothing in the context says which
# one will be, so on this task no question-agnostic ranking can do much better than chance, and random selection is
# among the best of them at every budget. H2O's accumulated attention favours the early positions (a position is summed
# over every later query, so position 0 collects 57 rows and position 56 one: the printed scores at positions 0, 1, 28
# and 56 fall steeply), which is no help here. PyramidKV falls below even that: its row stays near zero at every budget
# that leaves the top layer no slot (the printed layer budgets give the top layer 0 slots up to budget 16), and
# Experiment 2 shows that the top layer's cache is the one the answer reads. SnapKV with the question in its
# observation window is the exception upwards: from budget 8 on it matches the full cache's recall, because the
# question's queries attend to exactly the pair they ask for; at the smallest budgets its pooling (kernel 5, wider than
# the budget) spends the slots on the asked value's neighbours.
#
# **曲线说明了什么。** 请看打印出的表格和表格下方以 `check:` 开头的几行。全缓存几乎答对所有查询。必须在看到问题之前做出选择的策略（随机、最近窗口、StreamingLLM、H2O，以及以上下文最后几个 token 为观察窗口的 SnapKV），回忆准确率大致与预算成正比，从不超过所保留的上下文比例的 1.5 倍左右：28 个键值对被问到的可能性相同，上下文也不透露会问哪一对，所以在这个任务上，任何不看问题的排序都不会比随机好多少；在每个预算下，随机选择都排在这些策略的前列。H2O 的累积注意力偏向靠前的位置：一个位置的分数是它之后所有查询给它的注意力之和，位置 0 累加了 57 行，位置 56 只累加 1 行，所以打印出的位置 0、1、28、56 的分数急剧下降；这对本任务毫无帮助。PyramidKV 连这个水平都达不到：只要最高层分不到槽位（打印出的逐层预算显示，预算不超过 16 时最高层分到 0 个），它那一行就一直接近 0；实验 2 会说明，答案读取的正是最高层的缓存。观察窗口中包含问题的 SnapKV 则是向上的例外：从预算 8 起，它的回忆准确率就与全缓存相同，因为问题的查询向量关注的恰好是被问到的那一对；在最小的几个预算下，它的池化（核大小 5，比预算还宽）把槽位花在了被问到的值的邻居上。

# %% [markdown]
# ### Experiment 2: which layer's cache matters | 实验 2：哪一层的缓存重要
#
# Evict in one layer only (the other keeps its full cache), at budget 8, and compare PyramidKV's split with its
# reverse (the larger budget to the top layer).
#
# 只在一层中驱逐（另一层保留全缓存），预算为 8；并把 PyramidKV 的分配与其反向分配（较大的预算给最高层）比较。

# %%
budget = 8
full_keep = torch.ones(NUM_SEQUENCES, HEADS, CONTEXT, dtype=torch.bool)
layer_results = {}
for layer in range(LAYERS):
    for name, keep in (("random", h2o_keep(torch.rand(NUM_SEQUENCES, HEADS, 1, CONTEXT, generator=generator), budget, 0)),
                       ("StreamingLLM", streaming_keep(CONTEXT, budget, 4).expand(NUM_SEQUENCES, HEADS, CONTEXT))):
        keeps = [full_keep] * LAYERS
        keeps[layer] = keep
        correct, _, count = ask(context_kv, keeps, queries, CONTEXT, batch.answers, answer_at)
        layer_results[(name, layer)] = correct / count
for name in ("random", "StreamingLLM"):
    print(f"{name:>13}, budget {budget} in one layer: " + ", ".join(
        f"layer {layer} only {layer_results[(name, layer)]:.3f}" for layer in range(LAYERS)))
split = capped(pyramid_budgets(LAYERS * budget, LAYERS), CONTEXT)
for title, budgets in (("PyramidKV", split), ("PyramidKV reversed", split[::-1])):
    keeps = [layer_snapkv(attention, b).expand(NUM_SEQUENCES, HEADS, CONTEXT)
             for attention, b in zip(context_attention, budgets)]
    correct, _, count = ask(context_kv, keeps, queries, CONTEXT, batch.answers, answer_at)
    layer_results[title] = correct / count
    print(f"{title:>18}, layer budgets {budgets}: recall {correct / count:.3f}")
claim("evicting in layer 0 alone keeps recall within 0.02 of the full cache, evicting in layer 1 alone loses more "
      "than half of it", all(layer_results[(name, 0)] >= full_recall - 0.02 and layer_results[(name, 1)] < full_recall / 2
                             for name in ("random", "StreamingLLM")))
claim("the reversed split recalls more than PyramidKV's", layer_results["PyramidKV reversed"] > layer_results["PyramidKV"])

# %% [markdown]
# After a full prefill, the top layer's K/V already hold what the lower layer computed about each pair: in the top
# layer, the attention key cached at a value's position already encodes which task key came right before it. At query
# time the lower layer mostly needs the query's own tokens, so evicting only there costs little, and evicting in the
# top layer costs most of the recall: read the lines above and the `check:` lines under them. PyramidKV's premise
# (lower layers need more) comes from 32-layer models whose lower layers spread attention widely; in this 2-layer model
# the opposite split is the better one. How a budget is split across layers is a property of the model, to be measured,
# not assumed.
#
# 完整预填充之后，最高层的 K/V 已经包含了低层为每个键值对算出的信息：在最高层，某个值所在位置缓存的注意力键向量，已经编码了紧挨在它前面的是哪一个任务键。查询时，低层主要只需要查询自己的 token，所以只在低层驱逐代价很小，而在最高层驱逐会损失大部分回忆准确率：请看上面打印的几行和它们下方以 `check:` 开头的几行。PyramidKV 的前提（低层需要更多预算）来自 32 层的模型，那些模型的低层注意力分布得很广；在这个 2 层模型中，反过来分配更好。预算在各层之间怎样分配，是模型本身的性质，需要测量，不能假设。

# %% [markdown]
# ### Experiment 3: the attention sink | 实验 3：注意力汇点
#
# How much attention does each head put on position 0 (BOS), compared with the uniform share $1/(i+1)$ of a query at
# position $i$? The bars average over the context's queries (positions 1–56) and over the queries' tokens (57–68).
#
# 每个注意力头在位置 0（BOS）上放了多少注意力？与之比较的是位置 $i$ 的查询在均匀分布下的份额 $1/(i+1)$。柱状图分别对上下文的查询（位置 1–56）和查询部分的 token（位置 57–68）取平均。

# %%
_, _, sequence_attention = model(batch.tokens, return_attention=True)
length = batch.tokens.shape[1]
row_groups = {("context rows 1-56", "上下文各行 1-56"): range(1, CONTEXT),
              ("query rows 57-68", "查询各行 57-68"): range(CONTEXT, length)}
fig, axes = plt.subplots(1, 2, figsize=(12, 3.4), sharey=True)
for axis, ((title, title_zh), rows) in zip(axes, row_groups.items()):
    rows = list(rows)
    uniform = sum(1.0 / (i + 1) for i in rows) / len(rows)
    shares = torch.stack([attention[:, :, rows, 0].mean(dim=(0, 2)) for attention in sequence_attention])  # [L, H]
    names = [f"L{layer}H{head}" for layer in range(LAYERS) for head in range(HEADS)]
    axis.bar(names, shares.flatten().tolist(), color=[f"C{layer}" for layer in range(LAYERS) for _ in range(HEADS)])
    axis.axhline(uniform, color="black", linestyle="--", label=label("uniform share", "均匀份额"))
    axis.set_title(label(f"attention on BOS, {title}", f"BOS 上的注意力，{title_zh}"), fontsize=10)
    axis.legend(fontsize=8)
    print(f"{title}: uniform share {uniform:.3f}; per head " + ", ".join(
        f"{name} {share:.3f}" for name, share in zip(names, shares.flatten().tolist())))
    if rows[0] == 1:
        claim("on the context rows every head puts more than the uniform share on BOS", bool((shares > uniform).all()))
    else:
        claim("on the query rows every head of the top layer puts less than the uniform share on BOS",
              bool((shares[-1] < uniform).all()))
plt.tight_layout()
plt.show()
no_bos = torch.ones(NUM_SEQUENCES, HEADS, CONTEXT, dtype=torch.bool)
no_bos[..., 0] = False
correct, _, count = ask(context_kv, [no_bos] * LAYERS, queries, CONTEXT, batch.answers, answer_at)
print(f"recall with only BOS evicted (every layer and head, after a full prefill): {correct / count:.3f}")
claim("evicting only BOS keeps recall within 0.01 of the full cache", correct / count >= full_recall - 0.01)

# %% [markdown]
# Heads whose bar stands far above the dashed line park attention on BOS: an **attention sink**, the pattern
# StreamingLLM found in large models (a softmax row must sum to 1, and a head with nothing to read puts the mass on a
# token that every query can see). Here the sink forms on the context rows, where most tokens are unpredictable; on the
# query rows the top layer's heads, which retrieve the answer, put less than the uniform share there (the two `check:`
# lines). Evicting only BOS after a full prefill costs this model almost nothing (the last lines): what the sink holds
# is not information. The sink matters for **streaming**: once the context has scrolled past, a model whose heads expect
# a sink and find none is in a state it never saw in training. Experiment 4 measures that.
#
# 柱子远高于虚线的注意力头把注意力“停放”在 BOS 上：这就是**注意力汇点**，StreamingLLM 在大模型中发现的现象（softmax 的每一行之和必须为 1，无物可读的注意力头就把概率放在每个查询都看得到的 token 上）。在这里，注意力汇点出现在上下文的各行，那里的大多数 token 都无法预测；而在查询的各行，负责取出答案的最高层注意力头放在 BOS 上的注意力低于均匀份额（见两行 `check:`）。完整预填充之后只驱逐 BOS，这个模型几乎没有损失（见最后几行输出）：注意力汇点里存的并不是信息。注意力汇点在**流式生成**中才重要：上下文滚动过去之后，注意力头期待一个汇点却找不到，模型就处在训练中从未见过的状态。实验 4 测量的正是这一点。

# %% [markdown]
# ### Experiment 4: evicting while generating | 实验 4：边生成边驱逐
#
# Your `decode_with_eviction` feeds all 69 tokens of 100 sequences one at a time and cuts the cache back to the budget
# after every step: StreamingLLM (4 sinks), the recent window alone, and H2O on the accumulated scores (half the budget
# as its recent window). The next-token loss is the mean over all 68 predictions (most tokens are random, so even the
# full cache pays about $\ln 32 \approx 3.5$ nats on the values it cannot know); recall is measured at the answers.
#
# 你的 `decode_with_eviction` 把 100 条序列的全部 69 个 token 一次一个地送入模型，每一步之后把缓存裁剪回预算：StreamingLLM（4 个注意力汇点）、只有最近窗口，以及基于累积分数的 H2O（预算的一半作为最近窗口）。下一个 token 的损失是全部 68 个预测的平均值（大多数 token 是随机的，所以即使是全缓存，在无法知道的值上也要付出约 $\ln 32 \approx 3.5$ nats）；回忆准确率在答案处测量。

# %%
stream = recall.recall_batch(100, seed=7_000_001)
DECODE_BUDGETS = [8, 16, 32, stream.tokens.shape[1]]
decode_policies = {
    "StreamingLLM (4 sinks)": lambda scores, b: streaming_keep(scores.shape[-1], b, 4).expand(scores.shape),
    "recent window": lambda scores, b: streaming_keep(scores.shape[-1], b, 0).expand(scores.shape),
    "H2O": lambda scores, b: h2o_keep(scores.unsqueeze(-2), b, b // 2),
}
started, cpu_started = time.perf_counter(), time.process_time()
decode_results = {}
for name, keep_fn in decode_policies.items():
    for budget in DECODE_BUDGETS:
        logits, _ = decode_with_eviction(model, stream.tokens, budget, keep_fn)
        picked = logits[:, stream.answer_positions]
        accuracy = float((picked.argmax(dim=-1) == stream.answers).float().mean())
        decode_results[(name, budget)] = (accuracy, float(recall.next_token_loss(logits, stream.tokens)))
reference_logits, _ = model(stream.tokens)
full_decode, _ = decode_with_eviction(model, stream.tokens, stream.tokens.shape[1], decode_policies["recent window"])
print(f"{len(decode_results)} decode runs: {time.perf_counter() - started:.1f} s wall, "
      f"{time.process_time() - cpu_started:.1f} s CPU")
print(f"budget {stream.tokens.shape[1]} (everything) against one call on the whole sequence: max |logit difference| "
      f"{float((full_decode - reference_logits).abs().max()):.1e}")
print(f"{'budget':>8} | " + " | ".join(f"{name:>26}" for name in decode_policies))
for budget in DECODE_BUDGETS:
    print(f"{budget:>8} | " + " | ".join(
        f"recall {decode_results[(name, budget)][0]:.3f} loss {decode_results[(name, budget)][1]:.3f}"
        for name in decode_policies))
lowest = {}
for budget in DECODE_BUDGETS[:-1]:
    sinks, window = decode_results[("StreamingLLM (4 sinks)", budget)], decode_results[("recent window", budget)]
    lowest[budget] = min(decode_policies, key=lambda name: decode_results[(name, budget)][1])
    print(f"budget {budget:>2}: the 4 sinks change the loss by {sinks[1] - window[1]:+.3f} nats and recall by "
          f"{sinks[0] - window[0]:+.3f} against the recent window; lowest loss: {lowest[budget]}")
claim("with the whole sequence in budget the loop matches one call on the whole sequence within 1e-4",
      float((full_decode - reference_logits).abs().max()) < 1e-4)
claim("the 4 sinks lower the loss against the recent window of the same size at every budget below 69",
      all(decode_results[("StreamingLLM (4 sinks)", b)][1] < decode_results[("recent window", b)][1]
          for b in DECODE_BUDGETS[:-1]))
claim("H2O has the lowest loss of the three at every budget below 69", set(lowest.values()) == {"H2O"})
fig, axes = plt.subplots(1, 2, figsize=(11, 3.5))
for name in decode_policies:
    axes[0].plot(DECODE_BUDGETS, [decode_results[(name, b)][0] for b in DECODE_BUDGETS], marker="o", label=name)
    axes[1].plot(DECODE_BUDGETS, [decode_results[(name, b)][1] for b in DECODE_BUDGETS], marker="o", label=name)
axes[0].set_title(label("Recall while generating", "生成时的回忆准确率"))
axes[1].set_title(label("Next-token loss (nats)", "下一个 token 的损失（nats）"))
for axis in axes:
    axis.set_xlabel(label("budget (slots per layer and head)", "预算（每层每头的槽位数）"))
axes[0].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# With the whole sequence in budget the loop reproduces the full model up to float rounding (the printed maximum
# difference), so every gap in the table is the eviction's. Compare the loss of StreamingLLM with that of the recent
# window of the same size (the lines under the table): keeping the 4 sinks lowers the loss of the stream at every
# budget, which is StreamingLLM's claim in miniature, while it can cost recall (4 slots are spent on tokens that are
# not pairs). H2O, which keeps the positions that received the most attention, has the lowest loss of the three at
# every budget (the `check:` lines). Loss and recall measure different things: the loss averages over all 68
# predictions, most of which need only the recent tokens; recall asks for one old fact.
#
# 预算覆盖整条序列时，这个循环在浮点舍入误差之内重现了完整模型（见打印出的最大差值），所以表中的每一处差距都来自驱逐。把 StreamingLLM 的损失与同样大小的最近窗口比较（见表格下方的几行）：保留 4 个注意力汇点在每个预算下都降低了整条序列的损失，这正是 StreamingLLM 结论的缩小版；但它可能降低回忆准确率（4 个槽位花在了不是键值对的 token 上）。H2O 保留得到注意力最多的位置，它的损失在每个预算下都是三者中最低的（见 `check:` 几行）。损失和回忆准确率度量的是不同的东西：损失是全部 68 个预测的平均，其中大多数只需要最近的 token；回忆准确率问的却是很早以前的一个事实。

# %% [markdown]
# ### Experiment 5: which tokens each policy keeps | 实验 5：每个策略保留了哪些 token
#
# One sequence, the top layer (layer 1), head 0: each row shows the 57 context positions, dark where the policy keeps
# the slot. The red frame marks the pair that the first query asks for (its key and its value). Move the slider to
# change the budget. Without `ipywidgets`, or in a headless run (`COURSE_AUTOGRADE=1`, as when grading), there is no
# slider: the cell draws the picture for budget 8 once and says why.
#
# 一条序列、最高层（第 1 层）、第 0 个注意力头：每一行是 57 个上下文位置，被策略保留的槽位画成深色。红框标出第一个查询所问的那一对（它的键和值）。拖动滑块可以改变预算。没有 `ipywidgets`，或者在无界面运行中（`COURSE_AUTOGRADE=1`，例如评分时），没有滑块：单元只画一次预算为 8 的图，并说明原因。

# %%
from course.env import in_autograder

EXAMPLE, LAYER, HEAD = 0, LAYERS - 1, 0


def kept_positions(budget):
    """Each policy's keep mask over the context, for the example sequence's layer LAYER and head HEAD."""
    attention = context_attention[LAYER][EXAMPLE:EXAMPLE + 1]
    question_attention = question_runs[0][2][LAYER][EXAMPLE:EXAMPLE + 1, :, CONTEXT:, :CONTEXT + 2]
    square = torch.zeros(1, HEADS, CONTEXT + 2, CONTEXT + 2)
    square[..., CONTEXT:, :] = question_attention
    pyramid = capped(pyramid_budgets(LAYERS * budget, LAYERS), CONTEXT)[LAYER]
    masks = {
        "random": h2o_keep(torch.rand(1, HEADS, 1, CONTEXT, generator=torch.Generator().manual_seed(budget)), budget, 0),
        "recent window": streaming_keep(CONTEXT, budget, 0).expand(1, HEADS, CONTEXT),
        "StreamingLLM": streaming_keep(CONTEXT, budget, 4).expand(1, HEADS, CONTEXT),
        "H2O": h2o_keep(attention, budget, budget // 2),
        "SnapKV": layer_snapkv(attention, budget),
        f"PyramidKV ({pyramid} here)": layer_snapkv(attention, pyramid),
        "SnapKV + question": snapkv_keep(square, budget + 2, 2, kernel_size=5)[..., :CONTEXT],
    }
    return {name: mask[0, HEAD] for name, mask in masks.items()}


def draw(budget):
    masks = kept_positions(budget)
    pair = int(batch.queried_pairs[EXAMPLE, 0])
    fig, axis = plt.subplots(figsize=(11, 2.8))
    axis.imshow(torch.stack(list(masks.values())).float().numpy(), cmap="Greys", aspect="auto", vmin=0, vmax=1.3)
    axis.add_patch(plt.Rectangle((1 + 2 * pair - 0.5, -0.5), 2, len(masks), fill=False, edgecolor="red", linewidth=2))
    axis.set_yticks(range(len(masks)), list(masks))
    axis.set_xlabel(label("context position (0 = BOS, then key, value, key, value, ...)",
                          "上下文位置（0 = BOS，之后是键、值、键、值……）"))
    axis.set_title(label(f"budget {budget}: kept slots of layer {LAYER}, head {HEAD}; red: the pair asked for",
                         f"预算 {budget}：第 {LAYER} 层第 {HEAD} 个头保留的槽位；红框：被问到的那一对"))
    plt.tight_layout()
    plt.show()
    asked = {name: bool(mask[2 + 2 * pair]) for name, mask in masks.items()}
    print(f"budget {budget}: the asked pair is {pair} (key at {1 + 2 * pair}, value at {2 + 2 * pair}); its value "
          "slot is kept by: " + (", ".join(name for name, kept in asked.items() if kept) or "no policy"))


try:
    import ipywidgets as widgets
    from IPython.display import display
except ImportError:
    widgets = None
if widgets is None or in_autograder():
    why = "ipywidgets is not installed" if widgets is None else "a headless run (COURSE_AUTOGRADE=1) shows no widget"
    print(f"{why}, so there is no slider: the picture is for budget 8.")
    draw(8)
else:
    slider = widgets.IntSlider(value=8, min=1, max=CONTEXT - 1, description="budget", continuous_update=False)
    picture = widgets.Output()

    def redraw(change=None):
        with picture:
            picture.clear_output(wait=True)
            draw(slider.value)

    slider.observe(redraw, names="value")
    display(widgets.VBox([slider, picture]))
    redraw()

# %% [markdown]
# ### What the papers claim, and what this model can show | 论文的结论，以及这个模型能说明什么
#
# - **StreamingLLM** (Xiao et al., ICLR 2024): with 4 initial tokens kept as sinks plus a recent window, Llama-2, MPT,
#   Falcon and Pythia model text stably over up to 4 million tokens, where a window alone breaks down as soon as the
#   first tokens leave it; adding a dedicated sink token in pre-training makes one sink enough. Here: the sink is real
#   (Experiment 3) and keeping it lowers the streaming loss against a window of the same size (Experiment 4). A
#   69-token sequence cannot show the collapse over millions of tokens.
# - **H2O** (Zhang et al., NeurIPS 2023): a KV cache of 20% (heavy hitters plus recent tokens) keeps the quality of
#   OPT, LLaMA and GPT-NeoX on their tasks and raises throughput up to 29 times. Here: accumulated attention favours
#   early positions and the sink, and on a task where every pair is equally likely to be asked it does not beat random
#   selection (Experiment 1); online, while generating, it gives the lowest next-token loss of the three (Experiment 4).
#   Natural text has heavy hitters (frequent, reused tokens); random key–value pairs have none by construction.
# - **SnapKV** (Li et al., 2024): with an observation window at the end of the prompt (32 tokens in its code, pooling
#   kernel 5 to 7), it compresses 16K-token prompts with a 3.6 times faster generation and 8.2 times better memory
#   efficiency at comparable accuracy on LongBench, and processes up to 380K tokens on one A100-80GB GPU. Here: the
#   same effect at full strength when the question is in the window (Experiment 1), and none when the window holds only
#   the context's last tokens: SnapKV works because the prompt's end says what will be asked.
# - **PyramidKV** (Cai et al., 2024): budgets falling with depth ($\beta = 20$) match the full cache on LongBench with
#   12% of the KV cache and beat the other methods at 0.7%. Here the premise does not hold: in a 2-layer model the top
#   layer's cache is the one the answer reads (Experiment 2), so the pyramid's split is the worst and its reverse the
#   better one.
#
# What a 100k-parameter model trained on one synthetic task **can** show: the mechanics of each policy exactly
# (the same masks as on a 70B model), attention sinks, the gap between question-aware and question-agnostic selection,
# how a layer's cache matters differently, and loss and recall disagreeing. What it **cannot**: the papers' numbers
# (their models have 32–80 layers, prompts of 4K–128K tokens, natural text with heavy hitters and local structure that
# pooling exploits), throughput or memory savings on a GPU, or the behaviour over millions of streamed tokens.
#
# - **StreamingLLM**（Xiao 等，ICLR 2024）：保留开头 4 个 token 作为注意力汇点再加一个最近窗口，Llama-2、MPT、Falcon 和 Pythia 能在多达 400 万个 token 上稳定地建模文本；而只用最近窗口时，开头的 token 一离开窗口模型就崩溃；在预训练中加入一个专门的汇点 token，一个注意力汇点就够了。
#   在这里：注意力汇点确实存在（实验 3），保留它比同样大小的最近窗口降低了流式生成的损失（实验 4）。一条 69 个 token 的序列无法展示几百万个 token 之后的崩溃。
# - **H2O**（Zhang 等，NeurIPS 2023）：20% 的 KV 缓存（重击者加最近的 token）保持了 OPT、LLaMA 和 GPT-NeoX 在各项任务上的质量，吞吐量最多提高 29 倍。在这里：累积注意力偏向靠前的位置和注意力汇点，在一个每一对被问到的可能性都相同的任务上，它并不比随机选择好（实验 1）；在生成过程中在线使用时，它在三种策略中下一个 token 的损失最低（实验 4）。自然文本中有重击者（频繁出现、反复使用的 token）；随机的键值对按构造就没有重击者。
# - **SnapKV**（Li 等，2024）：观察窗口位于提示词末尾（其代码中为 32 个 token，池化核大小为 5 到 7），在 LongBench 上压缩 16K token 的提示词时，生成速度提高 3.6 倍、内存效率提高 8.2 倍，准确率相当；在一块 A100-80GB GPU 上能处理多达 38 万个 token。在这里：当问题位于观察窗口中时，同样的效果完整地出现（实验 1）；当窗口中只有上下文的最后几个 token 时，效果完全消失：SnapKV 之所以有效，是因为提示词的末尾说明了要问什么。
# - **PyramidKV**（Cai 等，2024）：随深度递减的预算（$\beta = 20$）在 LongBench 上只用 12% 的 KV 缓存就达到全缓存的水平，在只保留 0.7% 时优于其他方法。在这里前提不成立：在 2 层模型中，答案读取的是最高层的缓存（实验 2），所以金字塔式的分配最差，反过来的分配更好。
#
# 一个只在一个合成任务上训练、约 10 万参数的模型**能够**说明：每种策略的机制（与 70B 模型上完全相同的掩码）、注意力汇点、知道问题与不知道问题的选择之间的差距、不同层的缓存重要性不同，以及损失与回忆准确率的不一致。它**不能**说明：论文中的数字（那些模型有 32–80 层，提示词有 4K–128K 个 token，自然文本中有重击者和池化可以利用的局部结构）、GPU 上的吞吐量或显存节省，以及几百万个 token 的流式生成中的表现。

# %% [markdown]
# ### Optional: a real model | 可选：一个真实的模型
#
# Where `transformers` is installed and the network works (Colab), the cell below loads GPT-2 (124M parameters),
# prefills the first 512 tokens of a long text (the documentation of a few Python standard modules, which every Python
# has), keeps `budget` of them per layer and head with your `streaming_keep` (4 sinks), `h2o_keep` (half the budget as
# the recent window) and `snapkv_keep` (a window of up to 32 queries, kernel 5), and reports the perplexity of the next
# 256 tokens on the pruned cache, with the full cache's perplexity first. The work is done by `course.gpt2`, which the
# course's tests run offline on a small GPT-2 with random weights, so the code follows the installed `transformers`.
# Without `transformers`, without the network, or in a headless run (which never downloads the 500 MB of weights), it
# prints one sentence that starts with "Skipped" and does nothing else.
#
# 在安装了 `transformers` 且能联网的环境中（例如 Colab），下面的单元加载 GPT-2（1.24 亿参数），预填充一段长文本（几个 Python 标准模块的文档，每个 Python 环境都有）的前 512 个 token，用你的 `streaming_keep`（4 个注意力汇点）、`h2o_keep`（预算的一半作为最近窗口）和 `snapkv_keep`（观察窗口最多 32 个查询，核大小 5）在每层每个注意力头中保留其中的 `budget` 个，然后报告在裁剪后的缓存上接下来 256 个 token 的困惑度，第一行是全缓存的困惑度。具体工作由 `course.gpt2` 完成；课程的测试会在一个随机权重的小 GPT-2 上离线运行这段代码，所以它与安装的 `transformers` 版本保持一致。没有 `transformers`、不能联网，或者在无界面运行中（这时绝不下载 500 MB 的权重），它只打印一句以 "Skipped" 开头的话，别的什么也不做。

# %%
from course.gpt2 import eviction_perplexities, keep_functions, load_gpt2


def real_model_section():
    """GPT-2's perplexity on the next 256 tokens of a long text, its 512-token prompt evicted to each budget."""
    loaded = load_gpt2()
    if isinstance(loaded, str):
        return loaded
    gpt2, tokenizer = loaded
    keeps = keep_functions(streaming_keep, h2o_keep, snapkv_keep)
    return eviction_perplexities(gpt2, tokenizer, keeps, budgets=(32, 64, 128, 256, 512)).report()


try:
    print(real_model_section())
except Exception as error:  # noqa: BLE001 - an optional section must never stop the notebook.
    print(f"Skipped: the real-model section failed ({type(error).__name__}: {error}).")
print(f"experiments: {time.perf_counter() - experiment_started:.1f} s in all")

# %% [markdown]
# ## Summary | 小结
#
# **Remember:** token-level eviction is a ranking of cached positions under a budget; what a policy ranks by (position,
# accumulated attention, the votes of the last queries) decides what survives, and only a measurement on a model that
# needs the evicted facts shows whether the ranking was right.
#
# **一句话记住：** token 级驱逐就是在预算之下为缓存中的位置排序；驱逐策略依据什么排序（位置、累积注意力、最后几个查询的投票）决定了谁能留下，而排序对不对，只有在一个确实需要被驱逐内容的模型上测量才知道。
#
# ## Prerequisites and further reading | 前置与相关阅读
#
# Before: notebook 01 (eviction as ranking, ties to the lower index), notebook 02 (the KV bytes of a token), notebook 06
# (the `TinyDecoder` and its per-layer K/V). Further: the four papers below; NVIDIA's kvpress library, which implements
# these policies (and many more) as "presses" on Hugging Face models; the "Ada-KV" and "Quest" lines of work, which
# choose budgets per head or read only a query-dependent subset of the cache instead of deleting it.
#
# 之前：notebook 01（驱逐即排序，平局时取较小的索引）、notebook 02（一个 token 的 KV 字节数）、notebook 06（`TinyDecoder` 和它逐层的 K/V）。
# 延伸：下列四篇论文；NVIDIA 的 kvpress 库，它把这些策略（以及更多策略）实现为作用在 Hugging Face 模型上的 "press"；Ada-KV 和 Quest 等工作，它们为每个注意力头分别选择预算，或者不删除缓存、只读取与查询有关的一部分。
#
# ## References | 参考文献
#
# - Xiao, G., Tian, Y., Chen, B., Han, S., Lewis, M. "Efficient Streaming Language Models with Attention Sinks." ICLR 2024 (StreamingLLM).
# - Zhang, Z., et al. "H2O: Heavy-Hitter Oracle for Efficient Generative Inference of Large Language Models." NeurIPS 2023.
# - Li, Y., et al. "SnapKV: LLM Knows What You are Looking for Before Generation." NeurIPS 2024.
# - Cai, Z., et al. "PyramidKV: Dynamic KV Cache Compression based on Pyramidal Information Funneling." arXiv:2406.02069, 2024.
# - NVIDIA kvpress (github.com/NVIDIA/kvpress): `StreamingLLMPress`, `SnapKVPress`, `PyramidKVPress`, `ObservedAttentionPress`.
# - The seed designs: the "KV Eviction formula-to-code" walkthrough (LLM-REVIEW) and the "KV Cache Scheduling" chapter of Datawhale's llm-algo-leetcode (text CC BY 4.0, code Apache-2.0).
