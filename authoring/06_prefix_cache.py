# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: nbgrader,given,tags,-all
#     formats: source/06_prefix_cache//ipynb,authoring//py:percent
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
# # 06. Prefix cache for a real decoder | 真实解码器上的前缀缓存
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/kvcache-course/kv-cache-eviction/blob/main/release/06_prefix_cache/06_prefix_cache.ipynb)
# [![Open in ModelScope](https://img.shields.io/badge/ModelScope-Open%20in%20ModelScope-624aff)](https://modelscope.cn/notebook/share/github/kvcache-course/kv-cache-eviction/blob/main/release/06_prefix_cache/06_prefix_cache.ipynb)
# [![GitHub](https://img.shields.io/badge/GitHub-release%2F06_prefix_cache-black)](https://github.com/kvcache-course/kv-cache-eviction/blob/main/release/06_prefix_cache/06_prefix_cache.ipynb)
#
# **Difficulty:** ★★★ advanced · **Time:** about 120 minutes · **Points:** 28 · **GPU:** task tests run on CUDA too when a GPU is present; Experiments 2 and 4 time prefill on the GPU when there is one (wall time), otherwise on the CPU (the CPU time of one thread); their output says which.
#
# **难度：** ★★★ 进阶 · **用时：** 约 120 分钟 · **总分：** 28 · **GPU：** 有 GPU 时各任务的测试也在 CUDA 上运行；实验 2 和实验 4 在有 GPU 时于 GPU 上为预填充计时（墙钟时间），否则在 CPU 上计时（一个线程的 CPU 时间）；它们的输出会说明是哪一种。
#
# **ModelScope (魔搭):** log in to ModelScope, then click the ModelScope badge: it opens this notebook from
# GitHub in a notebook instance of yours (choose CPU or GPU). Where that link does not work, choose
# *File → Open from URL…* in the instance's JupyterLab and paste <https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/06_prefix_cache/06_prefix_cache.ipynb>.
# 先登录魔搭，再点击 ModelScope 徽章：魔搭会从 GitHub 取来本 notebook，在你自己的 Notebook 实例中打开（可选 CPU 或 GPU）。
# 如果这个链接打不开，在实例的 JupyterLab 中选择 *File → Open from URL…*，粘贴 <https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/06_prefix_cache/06_prefix_cache.ipynb>。
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
# 多轮对话的每一轮、共用同一段系统提示词的请求、针对同一篇文档的多次提问：服务器收到的提示词，大多以它已经算过的 token 开头。预填充（prefill）要为提示词的每个 token 计算每一层的 K/V，它占了首 token 时延（TTFT）的大部分；每次都从头算，就是一遍遍重复同样的工作。前缀缓存把算好的 K/V 按块保存下来，新请求只需计算缓存里没有的部分。难点有三：怎样确认“前缀相同”（链式哈希）；正在运行的请求读取的块不能被驱逐（引用计数与固定）；缓存满了该驱逐谁（只驱逐叶子，按 LRU 或 LFU 选出受害者）。本 notebook 中你将实现块哈希（任务 6.1）、一个存放真实 K/V 张量的前缀缓存（任务 6.2）和带前缀复用的预填充 `serve`（任务 6.3），然后在一个真实的小型解码器上验证输出不变，并测量每个驱逐策略能省下多少预填充。
#
# Each turn of a chat, requests that share a system prompt, several questions about one document: most prompts a server
# receives begin with tokens it has already run. Prefill computes every layer's K/V for every prompt token; it is most
# of the time to first token (TTFT), and computing it from scratch each time repeats the same work. A prefix cache keeps
# computed K/V block by block, so that a new request computes only what is not cached. Three things are hard: knowing
# that a prefix is the same (chained hashes); never evicting a block that a running request reads (reference counts and
# pinning); choosing what to evict when the cache is full (leaves only, the victim picked by LRU or LFU). You build the
# block hashes (Task 6.1), a prefix cache of real K/V tensors (Task 6.2) and prefill with prefix reuse, `serve`
# (Task 6.3); then you check on a real small decoder that the output does not change, and measure how much prefill each
# eviction policy saves.

# %% [markdown]
# ## Learning goals | 学习目标
#
# This is the capstone: your eviction policies now decide how much **prefill** a server skips. After this
# notebook you can:
# 1. hash a prompt block by block so that one hash names a whole prefix (chained hashing, as vLLM does);
# 2. keep a cache of real K/V tensors with reference counts and LRU/LFU eviction that removes **leaves first**;
# 3. serve a request: reuse the longest cached prefix, run the model only on the rest, and show that the
#    logits do not change;
# 4. measure, per policy, the prefill tokens computed, the hit ratio and the model's time, against no cache and against
#    Belady's optimum, and say what a CPU shows and what it does not.
#
# ## The formulas
#
# **Chained block hash.** Cut the prompt $t_0 t_1 \dots t_{n-1}$ into blocks of $B$ tokens. Block $j$ gets
#
# $$h_j = H\big(h_{j-1},\ t_{jB}, \dots, t_{jB+B-1}\big), \qquad h_{-1} = \text{salt},$$
#
# so $h_j$ depends on **every** token of blocks $0..j$: a cache hit on $h_k$ means the whole prefix of
# $(k+1)B$ tokens matched, and the K/V stored under it are exactly the K/V this request would compute.
# Only the $\lfloor n/B \rfloor$ full blocks get a hash.
#
# **Prefill cost.** A request of $n$ prompt tokens whose first $r$ tokens hit the cache computes only
# $n - r$ tokens. Every layer's projections and MLP cost $\propto n - r$; attention costs
# $\propto (n-r)\,n$ (the new tokens still attend to the reused ones). For the short prompts here the linear
# part dominates, plus a fixed cost $a$ for each call of the model (launching its many small operations):
#
# $$\text{prefill time} \approx a + c \cdot (n - r), \qquad \text{tokens saved} = \frac{\sum r}{\sum n}.$$
#
# Serving a large model on a GPU, $c \cdot (n - r)$ dwarfs $a$; for this notebook's tiny model on a CPU, $a$ is a large
# part of a prefill (Experiment 2 measures both).
#
# **What a policy achieves.** Belady's MIN, which knows the future, is the ceiling. We report for each
# policy the fraction of Belady's reusable (leading) hit blocks it gets:
#
# $$\text{fraction} = \frac{\text{hit blocks of the policy}}{\text{hit blocks of Belady}}.$$
#
# 完成本 notebook 后（这是本课程的综合练习：你的驱逐策略现在决定服务器能跳过多少**预填充**），你能够：
# 1. 按块对提示词做哈希，使一个哈希值代表整个前缀（链式哈希，与 vLLM 的做法相同）；
# 2. 维护一个存放真实 K/V 张量的缓存，带引用计数，并用 LRU/LFU 做**先驱逐叶子**的驱逐；
# 3. 服务一个请求：复用最长的已缓存前缀，只对其余部分运行模型，并证明 logits 不变；
# 4. 按策略测量计算的预填充 token 数、命中率和模型耗时，与无缓存和 Belady 最优解比较，并说清 CPU 能显示什么、不能显示什么。
#
# ## 公式
#
# **链式块哈希。** 把提示词 $t_0 t_1 \dots t_{n-1}$ 切成每块 $B$ 个 token 的块，第 $j$ 块的哈希为
#
# $$h_j = H\big(h_{j-1},\ t_{jB}, \dots, t_{jB+B-1}\big), \qquad h_{-1} = \text{盐（salt）},$$
#
# 因此 $h_j$ 依赖第 $0..j$ 块的**每一个** token：命中 $h_k$ 意味着长度为 $(k+1)B$ 的整个前缀都相同，其下保存的 K/V 正是该请求自己会算出的 K/V。只有 $\lfloor n/B \rfloor$ 个完整块有哈希。
#
# **预填充代价。** 一个有 $n$ 个提示 token、其中前 $r$ 个命中缓存的请求只需计算 $n - r$ 个 token。每层的投影和 MLP 代价 $\propto n - r$；注意力代价 $\propto (n-r)\,n$（新 token 仍要关注被复用的 token）。对这里的短提示词，线性部分占主导，另加每次调用模型的固定开销 $a$（启动模型中许多小运算的开销）：
#
# $$\text{预填充时间} \approx a + c \cdot (n - r), \qquad \text{节省的 token 比例} = \frac{\sum r}{\sum n}.$$
#
# 在 GPU 上服务大模型时，$c \cdot (n - r)$ 远大于 $a$；在 CPU 上运行本 notebook 的小模型时，$a$ 占一次预填充的很大一部分（实验 2 会测出 $a$ 和 $c$）。
#
# **策略能做到多少。** 知道未来的 Belady MIN 是上限。对每个策略，我们报告它拿到了 Belady 可复用（前导）命中块的多少比例：
#
# $$\text{比例} = \frac{\text{该策略的命中块数}}{\text{Belady 的命中块数}}.$$

# %% [markdown]
# ## How a prefix cache works | 前缀缓存如何工作
#
# **Chained hashing.** vLLM's automatic prefix caching names every full KV block by a hash of its parent
# block's hash and its own tokens (Kwon et al., SOSP 2023; vLLM docs, "Automatic Prefix Caching"). Because
# the parent's hash is inside, two equal blocks at different places ("the the the ...") get different
# hashes, and a lookup can walk the prompt block by block and stop at the first miss. SGLang's RadixAttention
# keeps the same information as a radix tree over token sequences (Zheng et al., NeurIPS 2024). The hash must
# be the same in every process: Python's `hash()` of a `str` is salted per process (`PYTHONHASHSEED`), so two
# workers, or one worker after a restart, would disagree. vLLM hashes blocks with SHA-256 (its
# `prefix_caching_hash_algo` setting), which is also safe against deliberately built collisions.
#
# **Only full blocks.** A block is the unit of allocation and sharing. The last, partial block of a request
# is still being written (the next prompt or decode tokens land in it), and its hash is not final until it
# is full. Sharing it would let one request's new tokens leak into another's cache, so only full blocks are
# cached; the partial tail is always computed.
#
# **Reference counts and pinning.** While a request runs, the attention kernels read its cached prefix.
# Each running request holds a reference (`ref_count`) on every block it uses; a block with
# `ref_count > 0` is **pinned** and is never evicted. vLLM puts only blocks with `ref_cnt == 0` into its
# free-block queue; SGLang's radix tree keeps a `lock_ref` per node.
#
# **Leaf-first eviction.** A block can only be hit when every block before it hits, because a lookup stops
# at the first miss. Evicting a parent therefore strands its children: they stay in memory but can never
# be reached. So a cache evicts only blocks that no cached block chains from (the leaves of the prefix
# tree). vLLM frees a finished request's blocks tail first, so that the end of a prefix is evicted before its
# beginning; SGLang evicts only radix-tree leaves, picking among them with a heap ordered by last access.
#
# **链式哈希。** vLLM 的自动前缀缓存（Automatic Prefix Caching）用“父块的哈希 + 本块的 token”的哈希来命名每个完整的 KV 块（Kwon 等，SOSP 2023；vLLM 文档 "Automatic Prefix Caching"）。由于哈希中包含父块的哈希，位于不同位置的两个相同的块（例如 "the the the ..."）会得到不同的哈希；查找时可以逐块前进，在第一个未命中处停止。SGLang 的 RadixAttention 用一棵建在 token 序列上的基数树（radix tree）保存同样的信息（Zheng 等，NeurIPS 2024）。哈希在每个进程中都必须相同：Python 对 `str` 的 `hash()` 在每个进程中加了不同的随机盐（`PYTHONHASHSEED`），两个 worker，或重启后的同一个 worker，会得到不同的结果。
# vLLM 用 SHA-256 对块做哈希（其 `prefix_caching_hash_algo` 设置），它也能抵御刻意构造的碰撞。
#
# **只缓存完整块。** 块是分配与共享的单位。请求的最后一个不完整块仍在被写入（后续的提示 token 或解码 token 会落在其中），它的哈希在写满之前也不是最终值。共享它会让一个请求的新 token 泄漏到另一个请求的缓存中，因此只缓存完整块；不完整的尾部总是重新计算。
#
# **引用计数与固定。** 请求运行期间，注意力内核会读取它已缓存的前缀。每个运行中的请求对它用到的每个块持有一个引用（`ref_count`）；`ref_count > 0` 的块处于**固定**（pinned）状态，绝不会被驱逐。vLLM 只把 `ref_cnt == 0` 的块放进空闲块队列；SGLang 的基数树为每个节点维护一个 `lock_ref`。
#
# **先驱逐叶子。** 只有当一个块之前的所有块都命中时，它才可能被命中，因为查找在第一个未命中处停止。因此驱逐父块会让它的子块“搁浅”：它们仍占着内存，却再也无法被命中。所以缓存只驱逐没有任何已缓存块以它为父块的块（前缀树的叶子）。vLLM 释放已完成请求的块时从尾部开始，使前缀的末尾先于开头被驱逐；SGLang 只驱逐基数树的叶子，并用一个按最近访问时刻排序的堆在叶子中挑选。

# %% nbgrader={"grade": false, "grade_id": "given_cpu_threads", "locked": true, "schema_version": 3, "solution": false, "task": false}
# The decoder of this notebook is tiny: its matrices are 64 wide. On a CPU, splitting such small
# matrices over several threads costs more than it saves, and on a busy machine it can be 50x slower,
# so this notebook runs PyTorch's CPU operations on one thread. (GPU work is not affected.)
torch.set_num_threads(1)

# %% [markdown] nbgrader={"grade": false, "grade_id": "task6_1_block_hashes_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 6.1: block_hashes (6 points)
#
# $$h_j = H\big(h_{j-1},\ t_{jB}, \dots, t_{jB+B-1}\big), \qquad h_{-1} = \text{salt}$$
#
# Write `block_hashes(tokens, block_size, salt=0)`: one hash per **full** block, in order. $H$ is pinned so that
# every process, every machine and the tests agree:
#
# 1. write $h_{j-1}$ and the block's token ids in decimal, joined by commas: parent `0` and block `[1, 2]`
#    give the text `"0,1,2"`;
# 2. take the SHA-256 digest of that text's ASCII bytes (`hashlib.sha256(text.encode("ascii")).digest()`);
# 3. read its first 8 bytes as a big-endian unsigned integer and shift it right by one bit (a 63-bit int,
#    never negative): that is $h_j$, and the parent of the next block.
#
# So `block_hashes([1, 2], 2) == [6944296732933707688]`. Tokens after the last full block get no hash. Return a list
# of Python ints (`[]` when there is no full block); do not change `tokens`. Raise `TypeError` when `block_size`,
# `salt` or any token is not exactly an `int` (the tokens of the partial last block count too; `True` is a `bool`,
# not a token id, although `isinstance(True, int)` holds), and `ValueError` when `block_size < 1`.
#
# Traps: never use Python's `hash()` on a string (it changes from process to process); put the parent's hash into
# every block's text, or equal blocks at different positions collide (`[7, 7, 7, 7]` must give two different hashes).
#
# Graded in parts: **6.1.1** the argument checks (2 points) · **6.1.2** the hashes (4 points).
#
# ## 任务 6.1：block_hashes（6 分）
#
# $$h_j = H\big(h_{j-1},\ t_{jB}, \dots, t_{jB+B-1}\big), \qquad h_{-1} = \text{盐（salt）}$$
#
# 编写 `block_hashes(tokens, block_size, salt=0)`：按顺序为每个**完整**块返回一个哈希。$H$ 是固定的，以便所有进程、所有机器和测试得到相同的结果：
#
# 1. 用十进制写出 $h_{j-1}$ 和该块的 token id，用逗号连接：父哈希 `0` 与块 `[1, 2]` 得到文本 `"0,1,2"`；
# 2. 对该文本的 ASCII 字节求 SHA-256 摘要（`hashlib.sha256(text.encode("ascii")).digest()`）；
# 3. 把摘要的前 8 个字节按大端无符号整数读出，再右移一位（得到永不为负的 63 位整数，在 $[0, 2^{63})$ 之内）：这就是 $h_j$，也是下一块的父哈希。
#
# 因此 `block_hashes([1, 2], 2) == [6944296732933707688]`。最后一个完整块之后的 token 没有哈希。返回由 Python int 组成的列表（没有完整块时为 `[]`）；不要修改 `tokens`。当 `block_size`、`salt` 或任何一个 token 不恰好是 `int` 时抛出 `TypeError`（最后那个不完整块中的 token 也要检查；`True` 是 `bool`，不是 token id，尽管 `isinstance(True, int)` 成立）；当 `block_size < 1` 时抛出 `ValueError`。
#
# 陷阱：绝不要对字符串使用 Python 的 `hash()`（它在不同进程中会变化）；每个块的文本都要包含父块的哈希，否则位于不同位置的相同块会碰撞（`[7, 7, 7, 7]` 必须得到两个不同的哈希）。
#
# 分部分计分：**6.1.1** 参数检查（2 分）· **6.1.2** 哈希值（4 分）。

# %% nbgrader={"grade": false, "grade_id": "task6_1_block_hashes", "locked": false, "schema_version": 3, "solution": true, "task": false}
import hashlib


def block_hashes(tokens, block_size, salt=0):
    """Return one chained hash per full block of ``tokens``.

    h_j = H(h_{j-1}, tokens of block j) with h_{-1} = salt, where H(parent, block) is the first
    8 bytes (big-endian) of sha256 over the ASCII text "parent,t_0,t_1,...", shifted right by 1.

    Args:
        tokens: list of token ids, each exactly an int (not a bool, not a numpy integer); not changed.
        block_size: tokens per block, an int >= 1.
        salt: an int that starts the chain (different salts give different hashes).

    Returns:
        A list of len(tokens) // block_size Python ints in [0, 2**63); [] when no block is full.

    Raises:
        TypeError: when block_size, salt or any token (those of the partial last block too) is not an int.
        ValueError: when block_size < 1.
    """
    # TODO 6.1.1: raise TypeError unless block_size, salt and every token are exactly int, then ValueError when
    # block_size < 1.
    # 提示：用 type(x) is not int 判断：isinstance(True, int) 为 True，会放过 bool；最后那个不完整块中的 token 也要检查。
    # Hint: test type(x) is not int: isinstance(True, int) is True and would let a bool through; check the tokens of
    # the partial last block too.
    ### BEGIN SOLUTION
    if type(block_size) is not int or type(salt) is not int:
        raise TypeError(f"block_size and salt must be ints, got {type(block_size).__name__} and {type(salt).__name__}")
    for token in tokens:
        if type(token) is not int:
            raise TypeError(f"every token must be an int, got {token!r} ({type(token).__name__})")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    ### END SOLUTION
    # TODO 6.1.2: for each of the len(tokens) // block_size full blocks, hash the text "parent,t_0,...,t_{B-1}";
    # the hash of a block is the parent of the next one, and the first parent is salt.
    # 提示：str.join 用逗号把父哈希和块中的 token 连接起来（每个数先转成 str）；按任务中的步骤 2 和 3 对这段文本求哈希：
    # hashlib.sha256 的 digest() 是字节串，取前 8 个字节，int.from_bytes 按大端读出，再右移一位。
    # Hint: str.join puts commas between the parent hash and the block's tokens (each turned into a str first); hash that
    # text as steps 2 and 3 of the task say: hashlib.sha256's digest() is bytes; take the first 8, read them with
    # int.from_bytes, big-endian, and shift right by one bit.
    ### BEGIN SOLUTION
    hashes = []
    parent = salt
    for start in range(0, len(tokens) - block_size + 1, block_size):
        text = ",".join(str(value) for value in [parent, *tokens[start:start + block_size]])
        digest = hashlib.sha256(text.encode("ascii")).digest()
        parent = int.from_bytes(digest[:8], "big") >> 1
        hashes.append(parent)
    return hashes
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task6_1_1_checks", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that block_hashes raises TypeError for anything but an int, and ValueError for block_size < 1."""


def _check_task6_1_1_checks():
    import numpy as np

    from course.checks import assert_raises, check_type

    assert_raises(ValueError, "block_hashes([1, 2], 0)", block_hashes, [1, 2], 0)
    assert_raises(ValueError, "block_hashes([1, 2], -1)", block_hashes, [1, 2], -1)
    assert_raises(TypeError, "block_hashes([1, 2.0], 2)", block_hashes, [1, 2.0], 2)
    assert_raises(TypeError, "block_hashes([1, True], 2) (a bool is not a token id)", block_hashes, [1, True], 2)
    assert_raises(TypeError, "block_hashes([1, 2, 3.0], 2) (3.0 is in the partial last block: it is checked too)",
                  block_hashes, [1, 2, 3.0], 2)
    assert_raises(TypeError, "block_hashes([numpy.int64(3), 4], 2) (a numpy integer is not exactly an int)", block_hashes,
                  [np.int64(3), 4], 2)

    class TokenId(int):
        """An int subclass: not exactly an int."""

    assert_raises(TypeError, "block_hashes([TokenId(3), 4], 2) (an instance of a subclass of int is not exactly an int)",
                  block_hashes, [TokenId(3), 4], 2)
    assert_raises(TypeError, "block_hashes([1, 2], 2.0)", block_hashes, [1, 2], 2.0)
    assert_raises(TypeError, "block_hashes([1, 2], 2, salt=0.5)", block_hashes, [1, 2], 2, salt=0.5)
    # block_size and salt, too, exactly an int: not a numpy integer, not a subclass of int.
    assert_raises(TypeError, "block_hashes([1, 2], numpy.int64(2))", block_hashes, [1, 2], np.int64(2))
    assert_raises(TypeError, "block_hashes([1, 2], 2, salt=numpy.int64(0))", block_hashes, [1, 2], 2, salt=np.int64(0))
    assert_raises(TypeError, "block_hashes([1, 2], TokenId(2))", block_hashes, [1, 2], TokenId(2))
    check_type(block_hashes([1, 2, 3], 2, salt=-5), list, "block_hashes([1, 2, 3], 2, salt=-5) (valid arguments)")

    ### BEGIN HIDDEN TESTS
    import numpy as _np
    import torch as _torch

    for _args, _kwargs, _error in (
            (([1, 2], -7), {}, ValueError),
            (([], 0), {}, ValueError),
            (([1, 2], True), {}, TypeError),
            (([1, 2], "2"), {}, TypeError),
            (([1, 2], None), {}, TypeError),
            (([1, 2], 2), {"salt": True}, TypeError),
            (([1, 2], 2), {"salt": "0"}, TypeError),
            (([1, 2], 1, 3.0), {}, TypeError),
            (([1, "2"], 1), {}, TypeError),
            (([1, None], 1), {}, TypeError),
            (([_np.int64(3), 4], 2), {}, TypeError),
            (([3, 4, 5, 6, _np.int32(7)], 2), {}, TypeError),
            (([_torch.tensor(3), 4], 2), {}, TypeError),
            (([1.5, 2], 1), {}, TypeError),
            (([1, 2, 3, 4, False], 2), {}, TypeError)):
        _shown = ", ".join([repr(a) for a in _args] + [f"{k}={v!r}" for k, v in _kwargs.items()])
        assert_raises(_error, f"block_hashes({_shown})", block_hashes, *_args, **_kwargs)
    for _args in (([1, 2, 3], 1000), ([], 1), ([0, 2**40, 7], 2, 2**62 + 3), ([5, 6], 1, -(2**40))):
        check_type(block_hashes(*_args), list, f"block_hashes{_args} (valid arguments)")
    ### END HIDDEN TESTS


_check_task6_1_1_checks()

# %% nbgrader={"grade": true, "grade_id": "test_task6_1_2_hashes", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
"""Check that block_hashes gives one chained, deterministic hash per full block, and leaves its tokens alone."""


def _check_task6_1_2_hashes():
    from course.checks import assert_plain_equal, check_type

    tokens = [1, 2, 3, 4, 5]
    hashes = block_hashes(tokens, 2)
    check_type(hashes, list, "block_hashes([1, 2, 3, 4, 5], 2)")
    for index, value in enumerate(hashes):
        check_type(value, int, f"block_hashes([1, 2, 3, 4, 5], 2)[{index}]")
    assert_plain_equal(hashes, [6944296732933707688, 3513534049782144427],
                       "block_hashes([1, 2, 3, 4, 5], 2) (token 5 is a partial block: no hash)")
    assert_plain_equal(tokens, [1, 2, 3, 4, 5], "tokens after block_hashes(tokens, 2) (do not change them)")
    repeated = block_hashes([7, 7, 7, 7], 2)
    assert repeated[0] != repeated[1], (
        "block_hashes([7, 7, 7, 7], 2) gave two equal hashes: equal blocks at different positions must differ "
        "(put the parent hash into each block's text)")
    assert_plain_equal(block_hashes([1, 2, 3, 4, 9, 9], 2)[:2], hashes,
                       "block_hashes([1, 2, 3, 4, 9, 9], 2)[:2] (equal prefixes give equal leading hashes)")
    salted = block_hashes([1, 2, 3, 4], 2, salt=1)
    assert salted[0] != hashes[0] and salted[1] != hashes[1], "block_hashes(..., salt=1) must change every hash"
    assert_plain_equal(block_hashes([1], 2), [], "block_hashes([1], 2) (no full block)")
    assert_plain_equal(block_hashes([], 3), [], "block_hashes([], 3)")
    assert all(0 <= h < 2**63 for h in block_hashes(list(range(64)), 1)), (
        "block_hashes(list(range(64)), 1) returned a hash outside [0, 2**63) (shift right by one bit)")

    ### BEGIN HIDDEN TESTS
    import hashlib as _hashlib
    import random as _random


    def _oracle_hashes(tokens, block_size, salt):
        result = []
        previous = salt
        for index in range(len(tokens) // block_size):
            parts = [str(previous)] + [str(t) for t in tokens[index * block_size:(index + 1) * block_size]]
            previous = int(_hashlib.sha256(",".join(parts).encode()).hexdigest()[:16], 16) // 2
            result.append(previous)
        return result


    _rng = _random.Random(6101)
    for _case in range(300):
        _block_size = _rng.choice([1, 2, 3, 4, 8, 16])
        _tokens = [_rng.choice([0, 1, 2, 7, 255, 50000, _rng.randrange(0, 2**20)]) for _ in range(_rng.randint(0, 70))]
        _salt = _rng.choice([0, 0, 1, -5, 2**62 + 3, _rng.randrange(-2**40, 2**40)])
        _copy = list(_tokens)
        _got = block_hashes(_tokens, _block_size, _salt) if _case % 3 else block_hashes(_tokens, _block_size, salt=_salt)
        check_type(_got, list, f"block_hashes on random case {_case}")
        for _value in _got:
            check_type(_value, int, f"an item of block_hashes on random case {_case}")
        assert_plain_equal(_got, _oracle_hashes(_copy, _block_size, _salt), f"block_hashes on random case {_case}",
                           reveal=False)
        assert _tokens == _copy, f"block_hashes changed its tokens on random case {_case}"
        assert all(0 <= h < 2**63 for h in _got), f"block_hashes on random case {_case} returned a hash outside [0, 2**63)"
    # A change in block j changes hashes j and after, and nothing before.
    for _case in range(60):
        _block_size = _rng.randint(1, 6)
        _blocks = _rng.randint(2, 8)
        _tokens = [_rng.randrange(0, 1000) for _ in range(_blocks * _block_size + _rng.randint(0, _block_size - 1))]
        _j = _rng.randrange(_blocks)
        _changed = list(_tokens)
        _changed[_j * _block_size + _rng.randrange(_block_size)] += 1
        _a, _b = block_hashes(_tokens, _block_size), block_hashes(_changed, _block_size)
        assert _a[:_j] == _b[:_j], f"block_hashes: a change in block {_j} changed an earlier hash (case {_case})"
        assert all(x != y for x, y in zip(_a[_j:], _b[_j:])), (
            f"block_hashes: a change in block {_j} left a later hash unchanged (case {_case})")
    # Equal blocks at every position, and the chain over many identical blocks.
    _same = block_hashes([5] * 40, 4)
    assert len(set(_same)) == 10, "block_hashes([5] * 40, 4): equal blocks at different positions collided"
    assert_plain_equal(block_hashes([1, 2, 3, 4, 5, 6], 6), _oracle_hashes([1, 2, 3, 4, 5, 6], 6, 0),
                       "block_hashes(6 tokens, 6)", reveal=False)
    ### END HIDDEN TESTS


_check_task6_1_2_hashes()

# %% [markdown] nbgrader={"grade": false, "grade_id": "task6_2_PrefixCache_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 6.2: PrefixCache (14 points)
#
# A cache of K/V blocks keyed by the hashes of Task 6.1. The class is given as a skeleton: its state (a dict
# `self._blocks` from block hash to the block's entry, the set `self._leaves`, the clock `self._step` and three
# counters), `len(cache)`, `block_hash in cache`, `stats`, and the loop of `insert` are written; you fill in the
# numbered `# TODO`s. Each method's docstring is its contract. In short:
#
# - `insert(hashes, kv)`: store the blocks not cached yet, block $i$ being a **copy** of rows $[iB, (i+1)B)$ of the
#   request's K/V (`tensor[a:b].clone()`: a view would change when the request's tensors are reused, and would keep
#   them all alive). Check `kv` **before** anything changes. While the cache is full, evict one victim at a time;
#   when nothing is evictable, stop and return how many were stored (never raise for that).
# - `match(hashes)`: how many **leading** hashes are cached (stop at the first miss); an access of those blocks only,
#   one per listed hash (a hash listed twice among them gets `use_count` + 2).
# - `get_kv(hashes)`: per layer, the cached blocks' K and V concatenated along the token dimension (dim 0), in the
#   order of `hashes`: new tensors, for one block too (the caller may write into them). Not an access.
# - `pin` / `unpin`: reference counts of running requests; a pinned block is never evicted. When they raise,
#   nothing has changed (check every hash first, then change the counts).
# - Errors: `ValueError` from the constructor for a bad argument (a policy that is not a str, a list too) and from
#   `insert` for a bad `kv`; `KeyError` from `get_kv`, `pin` and `unpin` for a hash that is not cached; `ValueError`
#   from `unpin` when a block would be unpinned more often than it was pinned.
# - A block keeps the dtype (float16, float32, float64, ...) and the device of the K/V it was copied from, and
#   `get_kv` returns it so.
# - The victim is the smallest key among **evictable** blocks: unpinned, a **leaf** (no cached block has it as
#   parent), and not one of the hashes of the current `insert` call. LRU key $(t_\text{last}, h)$, LFU key
#   $(\text{use\_count}, t_\text{last}, h)$: the rules of notebook 03, with the block hash in the role of the seq_id
#   (ties go to the smaller hash). $t_\text{last}$ is the step of the last `match` or `insert` call that touched the
#   block: one clock tick per **call**, not per block (`match([])` and `insert([], [])` too); a new block starts with
#   `use_count` 1.
#
# Traps: a parent that loses its last cached child becomes a leaf again; `get_kv`, `pin`, `unpin`, `len`, `in` and
# `stats` are not accesses (they change no `last_access_step` or `use_count`); `insert` does not touch blocks that
# are already cached; `unpin([h, h])` needs `ref_count >= 2`.
#
# Graded in parts, one per TODO: **6.2.1** the constructor's checks (1 point) · **6.2.2** `insert` and `_store`
# with room to spare (3) · **6.2.3** `match` (2) · **6.2.4** `get_kv` (2) · **6.2.5** `pin` and `unpin` (2) ·
# **6.2.6** `_victim`, which block is evicted (2) · **6.2.7** `_evict`, what eviction leaves behind (2). The tests of
# a part use only the simplest calls of the other methods, so a slip in one method costs mainly its own part.
#
# ## 任务 6.2：PrefixCache（14 分）
#
# 一个以任务 6.1 的哈希为键、存放 K/V 块的缓存。这个类以骨架形式给出：它的状态（从块哈希到块条目的字典 `self._blocks`、集合 `self._leaves`、时钟 `self._step` 和三个计数器）、`len(cache)`、`block_hash in cache`、`stats` 以及 `insert` 中的循环都已写好；你来填写带编号的 `# TODO`。每个方法的 docstring 就是它的契约。简而言之：
#
# - `insert(hashes, kv)`：存入尚未缓存的块，第 $i$ 块是请求 K/V 第 $[iB, (i+1)B)$ 行的**副本**（`tensor[a:b].clone()`：视图会在请求的张量被复用时跟着改变，还会让整个请求的张量一直留在内存中）。**先**检查 `kv`，再做任何改动。缓存满时每次驱逐一个受害者；没有可驱逐的块时停止，并返回已存入的块数（不要因此抛出异常）。
# - `match(hashes)`：有多少个**前导**哈希已被缓存（遇到第一个未命中就停止）；只有这些块算作被访问，每列出一次算一次访问（其中出现两次的哈希，`use_count` 加 2）。
# - `get_kv(hashes)`：按层返回这些缓存块的 K 和 V，按 `hashes` 的顺序沿 token 维（第 0 维）拼接：返回新的张量，只有一个块时也一样（调用者可以写入它们）。不算访问。
# - `pin` / `unpin`：运行中请求的引用计数；被固定的块绝不会被驱逐。它们抛出异常时，什么都不能改变（先检查每个哈希，再修改计数）。
# - 错误：构造函数的参数不合法时（包括不是 str 的 policy，例如列表）、`insert` 的 `kv` 不合法时抛出 `ValueError`；`get_kv`、`pin` 和 `unpin` 遇到未缓存的哈希时抛出 `KeyError`；`unpin` 使某个块被解除固定的次数多于被固定的次数时抛出 `ValueError`。
# - 块保留它所复制的 K/V 的数据类型（float16、float32、float64 等）和设备，`get_kv` 也按这个数据类型和设备返回。
# - 受害者是**可驱逐**块中键最小者：未被固定、是**叶子**（没有任何已缓存块以它为父块），且不属于本次 `insert` 调用的哈希。
#   LRU 的键为 $(t_\text{last}, h)$，LFU 的键为 $(\text{use\_count}, t_\text{last}, h)$：与 notebook 03 的规则相同，块哈希充当 seq_id（平局时选较小的哈希）。$t_\text{last}$ 是最后一次触及该块的 `match` 或 `insert` 调用的时刻：逻辑时钟每次**调用**加 1，而不是每个块加 1（`match([])` 和 `insert([], [])` 也一样）；新块的 `use_count` 从 1 开始。
#
# 陷阱：父块失去最后一个已缓存的子块后，会重新成为叶子；`get_kv`、`pin`、`unpin`、`len`、`in` 和 `stats` 都不算访问（不改变任何 `last_access_step` 或 `use_count`）；`insert` 不触及已缓存的块；`unpin([h, h])` 要求 `ref_count >= 2`。
#
# 分部分计分，每个 TODO 一部分：**6.2.1** 构造函数的检查（1 分）· **6.2.2** 空间充足时的 `insert` 与 `_store`（3 分）·
# **6.2.3** `match`（2 分）· **6.2.4** `get_kv`（2 分）· **6.2.5** `pin` 与 `unpin`（2 分）· **6.2.6** `_victim`：驱逐哪个块（2 分）· **6.2.7** `_evict`：驱逐之后留下什么（2 分）。每部分的测试只用到其他方法最简单的调用，因此一个方法中的失误主要只影响它自己那一部分。

# %% nbgrader={"grade": false, "grade_id": "task6_2_PrefixCache", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


class PrefixCache:
    """A cache of K/V blocks keyed by chained block hashes, with LRU or LFU eviction, leaf-first.

    Args:
        capacity_blocks: the most blocks held at once, an int >= 0.
        block_size: tokens per block, an int >= 1 (read it as ``cache.block_size``).
        policy: "lru" or "lfu" (exactly these strings).

    Every cached block has an entry in ``self._blocks``: its K/V ("kv": per layer a pair (k_cache,
    v_cache), each [block_size, num_heads, head_dim]), its "parent" (the hash before it in the list
    it was inserted with; None for a first block), its number of cached "children" (blocks whose
    parent it is), "ref_count", "use_count" and "last_access_step". ``self._leaves`` holds the
    cached blocks that have no cached child. A logical clock ``self._step`` counts calls: each call
    of match or insert, with no hashes too, first adds 1 to it (so the first call is step 1), and the blocks that call
    touches get last_access_step = that step. get_kv, pin, unpin, len(cache), ``block_hash in
    cache`` and stats are not accesses: they change no last_access_step and no use_count.

    Victim, when insert needs room: among the evictable blocks (ref_count == 0, a leaf, and not
    among the hashes of the current insert call) the one with the smallest key;
    "lru": (last_access_step, block_hash); "lfu": (use_count, last_access_step, block_hash).

    stats is a new dict {"hits": int, "misses": int, "evictions": int}; len(cache) is the number
    of cached blocks; ``block_hash in cache`` says whether that block is cached.

    Raises:
        ValueError: when capacity_blocks < 0, block_size < 1 or policy is not "lru" or "lfu" (a list too).
    """

    def __init__(self, capacity_blocks, block_size, policy="lru"):
        # TODO 6.2.1: raise ValueError when capacity_blocks < 0, block_size < 1, or policy is not "lru" or "lfu".
        # 提示：每个检查一个 if；错误信息写出收到的值。capacity_blocks == 0 是允许的（这样的缓存什么也存不下）。
        # Hint: one `if` per check, and say the value you got. capacity_blocks == 0 is allowed (it stores nothing).
        ### BEGIN SOLUTION
        if capacity_blocks < 0:
            raise ValueError(f"capacity_blocks must be >= 0, got {capacity_blocks}")
        if block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {block_size}")
        if policy not in ("lru", "lfu"):
            raise ValueError(f"policy must be 'lru' or 'lfu', got {policy!r}")
        ### END SOLUTION
        self.capacity_blocks = capacity_blocks
        self.block_size = block_size
        self.policy = policy
        # block_hash -> {"kv": [(k_cache, v_cache), ...], "parent": hash or None, "children": int,
        #                "ref_count": int, "use_count": int, "last_access_step": int}
        self._blocks = {}
        self._leaves = set()  # The cached blocks that no cached block has as parent.
        self._step = 0  # The logical clock: +1 at the start of every match and insert call.
        self._hits = self._misses = self._evictions = 0

    def __len__(self):
        return len(self._blocks)

    def __contains__(self, block_hash):
        return block_hash in self._blocks

    @property
    def stats(self):
        return {"hits": self._hits, "misses": self._misses, "evictions": self._evictions}

    def insert(self, hashes, kv):
        """Store the blocks of ``hashes`` that are not cached yet; return how many were stored (an int).

        kv is the request's K/V: a list of (k_cache, v_cache) per layer, each [num_tokens, num_heads,
        head_dim] with num_tokens >= len(hashes) * block_size. In order, each hash i that is not cached
        yet is stored by ``_store``. Blocks already cached are not touched. Before storing a block,
        while the cache holds capacity_blocks blocks, the victim is evicted; when no block is
        evictable, insert stops and returns what it stored so far (it never raises for that).

        Raises:
            ValueError: when hashes is not empty and kv has no layer, or when a k_cache or a v_cache
                covers fewer than len(hashes) * block_size tokens. Nothing changes then.
        """
        # TODO 6.2.2: raise ValueError when hashes is not empty and kv is empty, or when any layer's k_cache or
        # v_cache has fewer than len(hashes) * block_size rows; do it before anything changes.
        # 提示：在修改任何状态之前完成全部检查；k_cache.shape[0] 是它覆盖的 token 数；K 和 V 都要检查。
        # Hint: finish every check before changing any state; k_cache.shape[0] is the number of tokens it covers;
        # check both K and V.
        ### BEGIN SOLUTION
        needed = len(hashes) * self.block_size
        if hashes and not kv:
            raise ValueError("insert: kv has no layers")
        for layer, (k_cache, v_cache) in enumerate(kv):
            if k_cache.shape[0] < needed or v_cache.shape[0] < needed:
                raise ValueError(f"insert: kv of layer {layer} covers {k_cache.shape[0]} and {v_cache.shape[0]} "
                                 f"tokens; {len(hashes)} blocks need {needed}")
        ### END SOLUTION
        self._step += 1
        stored = 0
        for index, block_hash in enumerate(hashes):
            if block_hash in self._blocks:
                continue  # Already cached: not touched.
            while len(self._blocks) >= self.capacity_blocks:
                victim = self._victim(hashes)
                if victim is None:
                    return stored  # Nothing is evictable: stop here, never raise.
                self._evict(victim)
            self._store(index, hashes, kv)
            stored += 1
        return stored

    def _store(self, index, hashes, kv):
        """Store block ``hashes[index]``, which is not cached, from the request's ``kv``.

        Its entry: "kv" a copy of rows [index * block_size, (index + 1) * block_size) of every k_cache
        and v_cache; "parent" hashes[index - 1] (None for index 0); "children" 0; "ref_count" 0;
        "use_count" 1; "last_access_step" the current step. It is a leaf; its parent (always cached)
        has one more cached child and is no longer a leaf.
        """
        # TODO 6.2.2: add the entry of hashes[index] to self._blocks; update self._leaves and the parent's "children".
        # 提示：块 index 覆盖请求 K/V 的第 index * block_size 行到第 (index + 1) * block_size 行（不含）；每层存这些行的副本
        # （clone），而不是视图。新块加入叶子集合；父块的 children 加 1，并移出叶子集合。
        # Hint: block index covers rows index * block_size up to (index + 1) * block_size (excluded) of the request's K/V;
        # store a copy (clone) of those rows per layer, not a view. The new block joins the leaves; the parent's "children" goes up by
        # 1 and the parent leaves the set of leaves.
        ### BEGIN SOLUTION
        block_hash = hashes[index]
        parent = hashes[index - 1] if index > 0 else None
        rows = slice(index * self.block_size, (index + 1) * self.block_size)
        self._blocks[block_hash] = {
            "kv": [(k_cache[rows].clone(), v_cache[rows].clone()) for k_cache, v_cache in kv],
            "parent": parent, "children": 0, "ref_count": 0, "use_count": 1,
            "last_access_step": self._step,
        }
        self._leaves.add(block_hash)
        if parent is not None:
            self._blocks[parent]["children"] += 1
            self._leaves.discard(parent)
        ### END SOLUTION

    def match(self, hashes):
        """The number m of leading hashes that are cached (it stops at the first that is not), an int.

        An access: the clock first advances by 1 (for no hashes too); those m blocks get use_count + 1 (a hash
        listed twice, + 2) and last_access_step = the new step; blocks after the first miss are not touched.
        stats: hits += m, misses += len(hashes) - m.
        """
        # TODO 6.2.3: advance the clock, count and touch the leading cached blocks, update the hit and miss counters.
        # 提示：遇到第一个不在 self._blocks 中的哈希就 break；它之后的块即使已缓存也不算命中、不被触及。
        # Hint: break at the first hash that is not in self._blocks; blocks after it are neither hits nor touched,
        # even when they are cached.
        ### BEGIN SOLUTION
        self._step += 1
        matched = 0
        for block_hash in hashes:
            block = self._blocks.get(block_hash)
            if block is None:
                break
            block["use_count"] += 1
            block["last_access_step"] = self._step
            matched += 1
        self._hits += matched
        self._misses += len(hashes) - matched
        return matched
        ### END SOLUTION

    def get_kv(self, hashes):
        """The cached K/V of ``hashes``, ready to pass to the model as ``past_kv``.

        Returns a list with one tuple (k_cache, v_cache) per layer, each the concatenation along dim 0
        of those blocks' tensors in the order of ``hashes``: [len(hashes) * block_size, num_heads,
        head_dim], with the dtype and on the device they were stored with. [] for no hashes.
        New tensors, for one block too: writing into them leaves the cache as it was.
        Not an access: nothing changes.

        Raises:
            KeyError: for a hash that is not cached.
        """
        # TODO 6.2.4: raise KeyError for a hash that is not cached; return [] for no hashes; otherwise one
        # (torch.cat of the K blocks, torch.cat of the V blocks) tuple per layer.
        # 提示：layer 层的 K 为 torch.cat([self._blocks[h]["kv"][layer][0] for h in hashes])，V 用下标 1。
        # Hint: layer's K is torch.cat([self._blocks[h]["kv"][layer][0] for h in hashes]); V uses index 1.
        ### BEGIN SOLUTION
        missing = [h for h in hashes if h not in self._blocks]
        if missing:
            raise KeyError(f"get_kv: blocks not cached: {missing[:3]}")
        if not hashes:
            return []
        blocks = [self._blocks[h]["kv"] for h in hashes]
        return [(torch.cat([kv[layer][0] for kv in blocks]), torch.cat([kv[layer][1] for kv in blocks]))
                for layer in range(len(blocks[0]))]
        ### END SOLUTION

    def pin(self, hashes):
        """ref_count + 1 for each hash (+2 for a hash listed twice): a pinned block is never evicted.

        Raises:
            KeyError: for a hash that is not cached; nothing changes then.
        """
        # TODO 6.2.5: raise KeyError if any hash is not cached (before changing anything), then add 1 per listed hash.
        # 提示：先用一个循环检查全部哈希，再用第二个循环修改计数，这样抛出异常时什么都没改变。
        # Hint: one loop checks every hash, a second loop changes the counts, so nothing has changed when it raises.
        ### BEGIN SOLUTION
        missing = [h for h in hashes if h not in self._blocks]
        if missing:
            raise KeyError(f"pin: blocks not cached: {missing[:3]}")
        for block_hash in hashes:
            self._blocks[block_hash]["ref_count"] += 1
        ### END SOLUTION

    def unpin(self, hashes):
        """ref_count - 1 for each hash (-2 for a hash listed twice).

        Raises:
            KeyError: for a hash that is not cached. ValueError: when a ref_count would go below 0 (a
                hash listed k times needs ref_count >= k). Nothing changes when it raises.
        """
        # TODO 6.2.5: raise KeyError for a hash that is not cached and ValueError when a block is listed more times
        # than its ref_count, both before changing anything; then subtract 1 per listed hash.
        # 提示：list(hashes).count(h) 是 h 出现的次数；先检查全部哈希，再修改计数。
        # Hint: list(hashes).count(h) is how many times h is listed; check every hash first, then change the counts.
        ### BEGIN SOLUTION
        missing = [h for h in hashes if h not in self._blocks]
        if missing:
            raise KeyError(f"unpin: blocks not cached: {missing[:3]}")
        for block_hash in set(hashes):
            if self._blocks[block_hash]["ref_count"] < list(hashes).count(block_hash):
                raise ValueError(f"unpin: block {block_hash} is not pinned that many times")
        for block_hash in hashes:
            self._blocks[block_hash]["ref_count"] -= 1
        ### END SOLUTION

    def _victim(self, current):
        """The block to evict, or None when no block is evictable.

        Evictable: a leaf (in self._leaves), ref_count == 0, and not among ``current`` (the hashes of
        the insert call that needs room). The victim is the evictable block with the smallest key:
        "lru": (last_access_step, block_hash); "lfu": (use_count, last_access_step, block_hash).
        """
        # TODO 6.2.6: return the evictable leaf with the smallest key for self.policy, or None when there is none.
        # 提示：只在 self._leaves 中找候选；min(candidates, key=lambda h: (...)) 的键是元组，按字典序比较，
        # 最后一项 h 打破平局（较小的哈希先被驱逐）。
        # Hint: look for candidates in self._leaves only; min(candidates, key=lambda h: (...)) with a tuple key
        # compares lexicographically, and its last item h breaks ties (the smaller hash goes first).
        ### BEGIN SOLUTION
        current = set(current)
        candidates = [h for h in self._leaves if self._blocks[h]["ref_count"] == 0 and h not in current]
        if not candidates:
            return None
        if self.policy == "lru":
            return min(candidates, key=lambda h: (self._blocks[h]["last_access_step"], h))
        return min(candidates, key=lambda h: (self._blocks[h]["use_count"], self._blocks[h]["last_access_step"], h))
        ### END SOLUTION

    def _evict(self, block_hash):
        """Remove the leaf ``block_hash``: stats evictions + 1; its parent (if any) has one cached child
        fewer and becomes a leaf when it has none left."""
        # TODO 6.2.7: remove the block from self._blocks and self._leaves, count the eviction, update the parent.
        # 提示：父块的 children 减到 0 时，把父块加入 self._leaves，它从此可以被驱逐。
        # Hint: when the parent's "children" reaches 0, add the parent to self._leaves: it may be evicted from then on.
        ### BEGIN SOLUTION
        parent = self._blocks.pop(block_hash)["parent"]
        self._leaves.discard(block_hash)
        self._evictions += 1
        if parent is not None:
            self._blocks[parent]["children"] -= 1
            if self._blocks[parent]["children"] == 0:
                self._leaves.add(parent)
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task6_2_1_constructor", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that PrefixCache's constructor rejects a negative capacity, a block_size below 1 and an unknown policy."""


def _check_task6_2_1_constructor():
    from course.checks import assert_plain_equal, assert_raises

    assert_raises(ValueError, "PrefixCache(-1, 2)", PrefixCache, -1, 2)
    assert_raises(ValueError, "PrefixCache(4, 0)", PrefixCache, 4, 0)
    assert_raises(ValueError, "PrefixCache(4, 2, 'fifo')", PrefixCache, 4, 2, "fifo")
    assert_raises(ValueError, "PrefixCache(4, 2, 'LRU') (the policy is 'lru' or 'lfu', in lower case)",
                  PrefixCache, 4, 2, "LRU")
    assert_raises(ValueError, "PrefixCache(4, 2, ['lru']) (a policy that is not a str, a list too, is a bad argument)",
                  PrefixCache, 4, 2, ["lru"])
    for args in ((0, 1), (4, 2, "lru"), (4, 2, "lfu")):
        cache = PrefixCache(*args)
        assert_plain_equal(len(cache), 0, f"len(PrefixCache{args})")
        assert_plain_equal(cache.block_size, args[1], f"PrefixCache{args}.block_size")
        assert_plain_equal(cache.stats, {"hits": 0, "misses": 0, "evictions": 0}, f"PrefixCache{args}.stats")

    ### BEGIN HIDDEN TESTS
    for _args in ((-5, 1), (-1, 1, "lfu"), (1, -3), (3, 0, "lfu"), (2, 1, "LFU"), (2, 1, ""), (2, 1, None),
                  (2, 1, "lru ")):
        assert_raises(ValueError, f"PrefixCache{_args}", PrefixCache, *_args)
    for _args in ((0, 7, "lfu"), (1, 1), (10**6, 64, "lru")):
        assert_plain_equal(len(PrefixCache(*_args)), 0, f"len(PrefixCache{_args})", reveal=False)
    # A policy that is not a str (a list cannot even be hashed) is a bad argument too: ValueError.
    for _policy in ([], {"lru": 1}):
        assert_raises(ValueError, f"PrefixCache(2, 1, {_policy!r})", PrefixCache, 2, 1, _policy)
    ### END HIDDEN TESTS


_check_task6_2_1_constructor()

# %% nbgrader={"grade": true, "grade_id": "test_task6_2_2_insert", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that insert stores a copy of the right rows for each block not cached yet, and checks kv before any change."""


def _check_task6_2_2_insert():
    import torch

    from course.checks import assert_plain_equal, assert_raises, assert_same_tensor, check_type

    def toy_kv(hashes, block_size, extra_tokens=0):
        """One layer, one head, head_dim 2: row r of block h holds [h + r / 8, -h]; V = K + 0.5."""
        rows = [[h + r / 8, -h] for h in hashes for r in range(block_size)] + [[-1.0, -1.0]] * extra_tokens
        k_cache = torch.tensor(rows, dtype=torch.float32).reshape(-1, 1, 2)
        return [(k_cache, k_cache + 0.5)]

    cache = PrefixCache(capacity_blocks=8, block_size=2)
    kv = toy_kv([1, 2], 2, extra_tokens=1)
    stored = cache.insert([1, 2], kv)
    check_type(stored, int, "insert([1, 2], kv of 5 tokens)")
    assert_plain_equal(stored, 2, "insert([1, 2], kv of 5 tokens) into an empty cache")
    assert_plain_equal(len(cache), 2, "len(cache) after insert([1, 2], ...)")
    assert 1 in cache and 2 in cache and 3 not in cache, "after insert([1, 2], ...), blocks 1 and 2 are cached, 3 is not"
    assert_same_tensor(cache.get_kv([2])[0][0], kv[0][0][2:4],
                       "get_kv([2])[0][0] (K of block 2: rows 2 and 3 of the request's K)")
    assert_same_tensor(cache.get_kv([2])[0][1], kv[0][1][2:4], "get_kv([2])[0][1] (V of block 2: rows 2 and 3)")
    kv[0][0].fill_(0.0)
    kv[0][1].fill_(0.0)
    assert_same_tensor(cache.get_kv([1])[0][0], toy_kv([1], 2)[0][0],
                       "get_kv([1])[0][0] after the request's K was overwritten (store a copy: tensor[a:b].clone())")
    assert_same_tensor(cache.get_kv([1])[0][1], toy_kv([1], 2)[0][1],
                       "get_kv([1])[0][1] after the request's V was overwritten (store a copy)")
    # Each block holds a copy of its own rows, not a copy of the whole request's K/V: copy.deepcopy(k_cache[a:b]) or
    # k_cache.clone()[a:b] is a view of a copy of every row, so each block would keep the whole request in memory.
    def held_bytes(value, tensors, seen):
        """Add every tensor reachable from value (dicts, lists, tuples, sets, objects' attributes) to tensors."""
        if id(value) in seen or value is None or isinstance(value, (int, float, str)):
            return
        seen.add(id(value))
        if isinstance(value, torch.Tensor):
            tensors[value.untyped_storage().data_ptr(), str(value.device)] = value.untyped_storage().nbytes()
        elif isinstance(value, dict):
            for item in value.values():
                held_bytes(item, tensors, seen)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for item in value:
                held_bytes(item, tensors, seen)
        elif hasattr(value, "__dict__"):
            for item in vars(value).values():
                held_bytes(item, tensors, seen)

    lean = PrefixCache(capacity_blocks=8, block_size=2)
    lean.insert([1, 2, 3, 4], [toy_kv([1, 2, 3, 4], 2, extra_tokens=1)[0]] * 2)
    held = {}
    held_bytes(lean._blocks, held, set())
    assert sum(held.values()) <= 4 * 2 * 2 * (2 * 1 * 2 * 4), (
        f"after insert([1, 2, 3, 4], 2 layers of K/V of 9 tokens) with block_size 2, the cache's blocks hold "
        f"{sum(held.values())} bytes of tensors; 4 blocks of 2 layers of K and V, each [2, 1, 2] float32, are "
        f"{4 * 2 * 2 * (2 * 1 * 2 * 4)} bytes: store a copy of each block's own rows (tensor[a:b].clone()), not a view "
        "of a copy of the whole request's K/V (copy.deepcopy(tensor[a:b]) or tensor.clone()[a:b])")
    other = toy_kv([7, 8, 3], 2)
    assert_plain_equal(cache.insert([1, 2, 3], other), 1, "insert([1, 2, 3], ...) with 1 and 2 cached (stores only 3)")
    assert_same_tensor(cache.get_kv([3])[0][0], other[0][0][4:6],
                       "get_kv([3])[0][0] (block 3 is at position 2 of its list: rows 4 and 5 of that request's K)")
    assert_same_tensor(cache.get_kv([1])[0][0], toy_kv([1], 2)[0][0],
                       "get_kv([1])[0][0] after insert([1, 2, 3], other K/V) (a cached block is not touched)")
    assert_raises(ValueError, "insert([5, 6], kv of 3 tokens) with block_size 2", cache.insert, [5, 6],
                  toy_kv([5], 2, extra_tokens=1))
    assert 5 not in cache and len(cache) == 3, (
        "insert([5, 6], kv of 3 tokens) raised ValueError but block 5 is cached now: check kv before storing anything")
    assert_raises(ValueError, "insert([5, 6], k_cache of 4 tokens, v_cache of 2)", cache.insert, [5, 6],
                  [(toy_kv([5, 6], 2)[0][0], toy_kv([5], 2)[0][1])])
    assert_raises(ValueError, "insert([5], []) (kv with no layer)", cache.insert, [5], [])
    assert 5 not in cache and len(cache) == 3, "block 5 is cached after insert calls that raised ValueError"
    assert_plain_equal(cache.insert([], []), 0, "insert([], [])")
    # Every insert call advances the clock first, insert([], []) too; a new block starts with use_count 1.
    clock = PrefixCache(8, 1)
    clock.insert([], [])
    assert_plain_equal(clock._step, 1, "cache._step after insert([], []) on a new cache (every insert call advances "
                       "the clock)")
    clock.insert([1], toy_kv([1], 1))
    assert_plain_equal(clock._step, 2, "cache._step after insert([], []) then insert([1], kv)")
    assert_raises(ValueError, "insert([2, 3], kv of 1 token) with block_size 1", clock.insert, [2, 3], toy_kv([2], 1))
    assert_plain_equal(clock._step, 2, "cache._step after an insert that raised ValueError (kv is checked before "
                       "anything changes, the clock included)")
    entry = clock._blocks[1]
    assert_plain_equal(entry["use_count"] if isinstance(entry, dict) else entry.use_count, 1,
                       "the use_count of block 1 right after insert([1], kv) stored it (a new block starts at 1)")
    # A cache of capacity 0 stores nothing, but each insert is still a call: kv is checked and the clock advances.
    nothing = PrefixCache(0, 1)
    assert_plain_equal(nothing.insert([1], toy_kv([1], 1)), 0, "PrefixCache(0, 1).insert([1], kv)")
    assert_plain_equal(nothing._step, 1, "cache._step after an insert into a cache of capacity 0 (every insert call "
                       "advances the clock)")
    assert_raises(ValueError, "PrefixCache(0, 1).insert([2, 3], kv of 1 token) (kv is checked whatever the capacity)",
                  nothing.insert, [2, 3], toy_kv([2], 1))
    assert_plain_equal(nothing._step, 1, "cache._step of a cache of capacity 0 after an insert that raised ValueError")

    # A hash listed twice needs its rows twice: kv must cover len(hashes) * block_size tokens, repeats counted.
    twice = PrefixCache(4, 1)
    assert_raises(ValueError, "insert([5, 5], kv of 1 token) with block_size 1 (kv must cover len(hashes) * block_size "
                  "= 2 tokens: a hash listed twice counts twice)", twice.insert, [5, 5], toy_kv([5], 1))
    assert 5 not in twice and len(twice) == 0, "block 5 is cached after insert([5, 5], kv of 1 token) raised ValueError"

    ### BEGIN HIDDEN TESTS
    import random as _random

    from course.checks import replay
    from course.env import available_devices

    _rng = _random.Random(6222)
    for _case in range(40):
        _block_size = _rng.choice([1, 2, 3, 5])
        _layers, _heads, _dim = _rng.randint(1, 3), _rng.randint(1, 3), _rng.randint(1, 4)
        _dtype = _rng.choice([torch.float32, torch.float32, torch.float16, torch.float64])
        _cache = PrefixCache(1000, _block_size, _rng.choice(["lru", "lfu"]))
        _want = {}
        _where = f"PrefixCache(1000, {_block_size}) with {_layers} layers of {_dtype} on random case {_case}"
        for _call in range(6):
            _hashes = _rng.sample(range(100, 112), _rng.randint(0, 6))
            _n = len(_hashes) * _block_size + _rng.randint(0, 2 * _block_size)
            _gen = torch.Generator().manual_seed(_case * 100 + _call)
            _kv = [(torch.randn(_n, _heads, _dim, generator=_gen).to(_dtype),
                    torch.randn(_n, _heads, _dim, generator=_gen).to(_dtype)) for _ in range(_layers)]
            if _hashes and _rng.random() < 0.3:
                _needed = len(_hashes) * _block_size
                _layer, _side = _rng.randrange(_layers), _rng.randrange(2)
                _bad = [list(_pair) for _pair in _kv]
                _bad[_layer][_side] = _bad[_layer][_side][:_rng.randrange(_needed)]
                _bad = [tuple(_pair) for _pair in _bad]
                _before = len(_cache)
                assert_raises(ValueError, f"{_where}, call {_call}: insert with a tensor of layer {_layer} too short",
                              _cache.insert, _hashes, _bad)
                assert_plain_equal(len(_cache), _before, f"{_where}, call {_call}: len(cache) after insert raised",
                                   reveal=False)
            _new = 0
            for _i, _h in enumerate(_hashes):
                if _h not in _want:
                    _rows = slice(_i * _block_size, (_i + 1) * _block_size)
                    _want[_h] = [(_k[_rows].clone(), _v[_rows].clone()) for _k, _v in _kv]
                    _new += 1
            _got = _cache.insert(_hashes, _kv)
            assert_plain_equal(_got, _new, f"{_where}, call {_call}: insert", reveal=False)
            for _k, _v in _kv:
                _k.fill_(7.0)
                _v.fill_(-7.0)
            assert_plain_equal(len(_cache), len(_want), f"{_where}, after call {_call}: len(cache)", reveal=False)
            # One replay asks for every stored block: whether it is cached, then its K and V.
            _found = replay(_cache, [_step for _h in _want for _step in (("in", (_h,)), ("get_kv", ([_h],)))])
            for _h, _blocks in _want.items():
                assert next(_found), f"{_where}, after call {_call}: a stored block is missing"
                _kv_got = next(_found)
                for _layer, (_k, _v) in enumerate(_blocks):
                    assert_same_tensor(_kv_got[_layer][0], _k, f"{_where}, after call {_call}: K of a block",
                                       reveal=False)
                    assert_same_tensor(_kv_got[_layer][1], _v, f"{_where}, after call {_call}: V of a block",
                                       reveal=False)
    # Nothing changes when the last layer is short, on every device; kv that covers exactly the blocks is enough.
    for device in available_devices():
        _cache = PrefixCache(8, 2)
        _k = torch.arange(24, dtype=torch.float32, device=device).reshape(6, 2, 2)
        _bad = [(_k, _k), (_k, _k[:5])]
        assert_raises(ValueError, f"insert([1, 2, 3], 2 layers, the second V of 5 tokens) on {device}", _cache.insert,
                      [1, 2, 3], _bad)
        assert_plain_equal(len(_cache), 0, f"len(cache) after insert raised on {device}", reveal=False)
        assert_plain_equal(_cache.insert([1, 2, 3], [(_k, -_k), (_k + 1, _k - 1)]), 3,
                           f"insert([1, 2, 3], kv of exactly 6 tokens) on {device}")
        assert_same_tensor(_cache.get_kv([3])[1][1], (_k - 1)[4:6], f"get_kv([3]) layer 1 V on {device}", reveal=False)
    ### END HIDDEN TESTS


_check_task6_2_2_insert()

# %% nbgrader={"grade": true, "grade_id": "test_task6_2_3_match", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that match counts the leading cached hashes only, touches them, and counts hits and misses in stats."""


def _check_task6_2_3_match():
    import torch

    from course.checks import assert_plain_equal, check_type

    # BEGIN SHARED toy_kv, touches (authoring/shared/06_prefix_cache.py)
    def toy_kv(hashes, block_size):
        """One layer, one head, head_dim 2."""
        k_cache = torch.tensor([[h + r / 8, -h] for h in hashes for r in range(block_size)]).reshape(-1, 1, 2)
        return [(k_cache, k_cache + 0.5)]

    def touches(entry):
        """[use_count, last_access_step] of a cached block's entry in ``cache._blocks``: a dict, or a record with those
        attributes (the task allows both)."""
        if isinstance(entry, dict):
            return [entry["use_count"], entry["last_access_step"]]
        return [entry.use_count, entry.last_access_step]
    # END SHARED

    cache = PrefixCache(capacity_blocks=8, block_size=1)
    cache.insert([1, 2], toy_kv([1, 2], 1))
    cache.insert([5], toy_kv([5], 1))
    before = cache.stats
    matched = cache.match([1, 2, 3])
    check_type(matched, int, "match([1, 2, 3])")
    assert_plain_equal(matched, 2, "match([1, 2, 3]) with 1 and 2 cached")
    assert_plain_equal(cache.match([9, 2]), 0, "match([9, 2]) (2 is cached but 9 is not: only LEADING hits count)")
    assert_plain_equal(cache.match([5, 1]), 2, "match([5, 1]) (the hashes need not chain)")
    assert_plain_equal(cache.match([]), 0, "match([])")
    check_type(cache.stats, dict, "cache.stats")
    assert_plain_equal(cache.stats, {"hits": 4, "misses": 3, "evictions": 0},
                       "cache.stats after match([1, 2, 3]), match([9, 2]), match([5, 1]) and match([]) "
                       "(misses: 1 + 2 + 0 + 0)")
    assert_plain_equal(len(cache), 3, "len(cache) after the match calls (match stores nothing)")
    assert_plain_equal(before, {"hits": 0, "misses": 0, "evictions": 0},
                       "the dict cache.stats returned before the match calls, read after them (stats is a new dict "
                       "each time: one read earlier does not change)")
    # Every match call advances the clock first, match([]) too.
    clock = PrefixCache(8, 1)
    clock.match([])
    assert_plain_equal(clock._step, 1, "cache._step after match([]) on a new cache (every match call advances the "
                       "clock)")
    clock.insert([4], toy_kv([4], 1))
    assert_plain_equal(clock._step, 2, "cache._step after match([]) then insert([4], kv)")
    # Each listed hash is one access: a hash listed twice among the matched ones gets use_count + 2.
    assert_plain_equal(clock.match([4, 4]), 2, "match([4, 4]) with 4 cached")
    assert_plain_equal(touches(clock._blocks[4]), [3, 3],
                       "[use_count, last_access_step] of block 4 after insert([4], kv) then match([4, 4]) (one access "
                       "per listed hash: 1 + 2; the clock ticks once per call)")

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(6223)
    for _case in range(20):
        _cache = PrefixCache(10_000, 1, _rng.choice(["lru", "lfu"]))
        _cached = set()
        _hits = _misses = 0
        _step, _touched = 0, {}  # The clock, and each cached block's [use_count, last_access_step].
        for _call in range(20):
            _hashes = [_rng.randrange(30) for _ in range(_rng.randint(0, 8))]
            _step += 1
            if _rng.random() < 0.4:
                _cache.insert(_hashes, toy_kv(_hashes, 1))
                _cached.update(_hashes)
                for _h in _hashes:
                    _touched.setdefault(_h, [1, _step])  # A new block; one already cached is not touched.
                continue
            _want = 0
            while _want < len(_hashes) and _hashes[_want] in _cached:
                _want += 1
            for _h in _hashes[:_want]:
                _touched[_h] = [_touched[_h][0] + 1, _step]
            _got = _cache.match(_hashes)
            _where = f"match on random case {_case}, call {_call}"
            check_type(_got, int, _where)
            assert_plain_equal(_got, _want, _where, reveal=False)
            _hits += _want
            _misses += len(_hashes) - _want
        assert_plain_equal(_cache.stats, {"hits": _hits, "misses": _misses, "evictions": 0},
                           f"stats on random case {_case}", reveal=False)
        assert_plain_equal(len(_cache), len(_cached), f"len(cache) on random case {_case}", reveal=False)
        # match touches the blocks it counts: use_count + 1 and last_access_step = its step, for each of them.
        assert_plain_equal({_h: touches(_cache._blocks[_h]) for _h in sorted(_cached)},
                           {_h: _touched[_h] for _h in sorted(_cached)},
                           f"{{hash: [use_count, last_access_step]}} of the cached blocks on random case {_case}",
                           reveal=False)
    ### END HIDDEN TESTS


_check_task6_2_3_match()

# %% nbgrader={"grade": true, "grade_id": "test_task6_2_4_get_kv", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that get_kv concatenates the cached K and V of each layer in the order of the hashes, and changes nothing."""


def _check_task6_2_4_get_kv():
    import torch

    from course.checks import assert_plain_equal, assert_raises, assert_same_tensor, check_type
    from course.env import available_devices

    # BEGIN SHARED touches (authoring/shared/06_prefix_cache.py)
    def touches(entry):
        """[use_count, last_access_step] of a cached block's entry in ``cache._blocks``: a dict, or a record with those
        attributes (the task allows both)."""
        if isinstance(entry, dict):
            return [entry["use_count"], entry["last_access_step"]]
        return [entry.use_count, entry.last_access_step]
    # END SHARED

    for device in available_devices():
        cache = PrefixCache(capacity_blocks=8, block_size=2)
        k_cache = torch.arange(24, dtype=torch.float32, device=device).reshape(6, 2, 2)  # 3 blocks, 2 heads
        kv = [(k_cache, -k_cache), (k_cache + 100, k_cache - 100)]  # 2 layers
        cache.insert([1, 2, 3], kv)
        got = cache.get_kv([1, 2])
        check_type(got, list, f"get_kv([1, 2]) on {device}")
        assert_plain_equal(len(got), 2, f"len(get_kv([1, 2])) on {device} (one pair per layer)")
        for layer in range(2):
            check_type(got[layer], tuple, f"get_kv([1, 2])[{layer}] on {device}")
            assert_same_tensor(got[layer][0], kv[layer][0][:4], f"get_kv([1, 2])[{layer}][0] on {device} "
                               f"(K of blocks 1 and 2 in layer {layer}: shape [4, 2, 2])")
            assert_same_tensor(got[layer][1], kv[layer][1][:4], f"get_kv([1, 2])[{layer}][1] on {device} (V)")
        assert_same_tensor(cache.get_kv([3, 1])[0][0], torch.cat([k_cache[4:6], k_cache[0:2]]),
                           f"get_kv([3, 1])[0][0] on {device} (in the order of the hashes: block 3, then block 1)")
        assert_same_tensor(cache.get_kv([2, 2])[1][0], torch.cat([kv[1][0][2:4], kv[1][0][2:4]]),
                           f"get_kv([2, 2])[1][0] on {device} (a hash listed twice gives its block twice: "
                           "len(hashes) * block_size rows)")
        assert_plain_equal(cache.get_kv([]), [], "get_kv([])")
        assert_raises(KeyError, "get_kv([1, 404])", cache.get_kv, [1, 404])
        assert_plain_equal(cache.stats, {"hits": 0, "misses": 0, "evictions": 0},
                           "cache.stats after insert([1, 2, 3]) and get_kv calls (get_kv is not an access)")
        assert_plain_equal(touches(cache._blocks[1]), [1, 1],
                           f"[use_count, last_access_step] of block 1 after insert([1, 2, 3]) and get_kv calls on {device} "
                           "(get_kv is not an access: it changes neither)")
        assert_plain_equal(len(cache), 3, "len(cache) after get_kv calls")
    half = PrefixCache(capacity_blocks=2, block_size=1)
    k_half = torch.tensor([[[1.5, -2.0]]], dtype=torch.float16)
    half.insert([7], [(k_half, -k_half)])
    assert_same_tensor(half.get_kv([7])[0][0], k_half, "get_kv([7])[0][0] of K stored as float16 (keep its dtype)")
    # The result is the caller's: writing into it, for one block too, leaves the cache as it was.
    k_one = torch.arange(12, dtype=torch.float32).reshape(6, 1, 2)
    want = [(k_one[0:2].clone(), (-k_one)[0:2].clone()), (k_one[0:2] + 1, (-k_one)[0:2] - 1)]
    cache = PrefixCache(4, 2)
    cache.insert([1, 2, 3], [(k_one, -k_one), (k_one + 1, -k_one - 1)])
    for layer in cache.get_kv([1]):
        for tensor in layer:
            tensor.fill_(0.0)
    again = cache.get_kv([1])
    for layer in range(2):
        for side in range(2):
            assert_same_tensor(again[layer][side], want[layer][side],
                               f"get_kv([1])[{layer}][{side}] after the caller wrote zeros into what an earlier "
                               "get_kv([1]) returned (return new tensors, not the cached ones)")

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(6224)
    for _case in range(40):
        _block_size = _rng.choice([1, 2, 4])
        _layers, _heads, _dim = _rng.randint(1, 4), _rng.randint(1, 3), _rng.randint(1, 5)
        _dtype = _rng.choice([torch.float32, torch.float16, torch.float64])
        _gen = torch.Generator().manual_seed(_case)
        _ids = _rng.sample(range(1, 500), 6)
        _n = len(_ids) * _block_size
        _kv = [(torch.randn(_n, _heads, _dim, generator=_gen).to(_dtype),
                torch.randn(_n, _heads, _dim, generator=_gen).to(_dtype)) for _ in range(_layers)]
        # The expected rows are copies made before insert gets the tensors, which the student's code could change.
        _given = [(_k.clone(), _v.clone()) for _k, _v in _kv]
        _cache = PrefixCache(100, _block_size, "lfu")
        _cache.insert(_ids, _kv)
        _rows = {h: slice(i * _block_size, (i + 1) * _block_size) for i, h in enumerate(_ids)}
        _where = f"get_kv on random case {_case} ({_layers} layers of {_dtype})"
        for _ in range(5):
            _asked = _rng.sample(_ids, _rng.randint(1, len(_ids)))
            _got = _cache.get_kv(_asked)
            check_type(_got, list, _where)
            assert_plain_equal(len(_got), _layers, f"{_where}: number of layers", reveal=False)
            for _layer in range(_layers):
                check_type(_got[_layer], tuple, f"{_where}: layer {_layer}")
                assert_plain_equal(len(_got[_layer]), 2, f"{_where}: length of layer {_layer}'s tuple", reveal=False)
                for _side in range(2):
                    _want = torch.cat([_given[_layer][_side][_rows[h]] for h in _asked])
                    assert_same_tensor(_got[_layer][_side], _want, f"{_where}: layer {_layer}", reveal=False)
        # Writing into a result, of one block too, leaves the cache as it was.
        for _pair in _cache.get_kv([_ids[0]]):
            for _tensor in _pair:
                _tensor.fill_(0)
        _again = _cache.get_kv([_ids[0]])
        for _layer in range(_layers):
            for _side in range(2):
                assert_same_tensor(_again[_layer][_side], _given[_layer][_side][_rows[_ids[0]]],
                                   f"{_where}: get_kv of one block after the caller wrote zeros into an earlier result "
                                   "of it", reveal=False)
        assert_raises(KeyError, f"{_where}: get_kv of a hash that is not cached", _cache.get_kv, [_ids[0], 10**6])
        assert_raises(KeyError, f"{_where}: get_kv of a hash that is not cached", _cache.get_kv, [10**6])
        assert_plain_equal(_cache.stats, {"hits": 0, "misses": 0, "evictions": 0}, f"{_where}: stats", reveal=False)
        # get_kv is not an access: every block keeps use_count 1 and the step of the one insert call.
        assert_plain_equal({_h: touches(_cache._blocks[_h]) for _h in sorted(_ids)},
                           {_h: [1, 1] for _h in sorted(_ids)},
                           f"{{hash: [use_count, last_access_step]}} after get_kv calls on {_where}", reveal=False)
    ### END HIDDEN TESTS


_check_task6_2_4_get_kv()

# %% nbgrader={"grade": true, "grade_id": "test_task6_2_5_pin_unpin", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that pin and unpin count references, raise KeyError and ValueError as stated, and change nothing when they raise."""


def _check_task6_2_5_pin_unpin():
    import torch

    from course.checks import assert_raises

    k_cache = torch.zeros(2, 1, 2)
    cache = PrefixCache(capacity_blocks=8, block_size=1)
    cache.insert([1, 2], [(k_cache, k_cache)])
    cache.pin([1])
    cache.unpin([1])
    assert_raises(ValueError, "unpin([1]) after pin([1]) and unpin([1]) (block 1 is not pinned)", cache.unpin, [1])
    cache.pin([1, 1, 2])
    cache.unpin([1, 2])
    cache.unpin([1])
    assert_raises(ValueError, "unpin([2]) after pin([1, 1, 2]), unpin([1, 2]) and unpin([1])", cache.unpin, [2])
    assert_raises(KeyError, "pin([404])", cache.pin, [404])
    assert_raises(KeyError, "unpin([404])", cache.unpin, [404])
    assert_raises(KeyError, "pin([1, 404])", cache.pin, [1, 404])
    assert_raises(ValueError, "unpin([1]) after pin([1, 404]) raised KeyError (nothing may change when pin raises, "
                  "so block 1 is not pinned)", cache.unpin, [1])
    cache.pin([1])
    assert_raises(ValueError, "unpin([1, 1]) when block 1 is pinned once", cache.unpin, [1, 1])
    assert_raises(KeyError, "unpin([1, 404])", cache.unpin, [1, 404])
    try:
        cache.unpin([1])
    except ValueError:
        raise AssertionError("unpin([1]) raised ValueError after pin([1]), unpin([1, 1]) and unpin([1, 404]): nothing "
                             "may change when unpin raises, so block 1 is still pinned once") from None

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(6225)
    for _case in range(20):
        _cache = PrefixCache(100, 1, "lru")
        _ids = list(range(1, 7))
        _cache.insert(_ids, [(torch.zeros(6, 1, 1), torch.zeros(6, 1, 1))])
        _refs = {h: 0 for h in _ids}
        for _call in range(25):
            _hashes = [_rng.choice(_ids + [99]) if _rng.random() < 0.1 else _rng.choice(_ids)
                       for _ in range(_rng.randint(0, 4))]
            _where = f"random case {_case}, call {_call}: {{}}({_hashes})"
            if _rng.random() < 0.5:
                if any(h not in _refs for h in _hashes):
                    assert_raises(KeyError, _where.format("pin"), _cache.pin, _hashes)
                    continue
                _cache.pin(_hashes)
                for _h in _hashes:
                    _refs[_h] += 1
            else:
                _missing = any(h not in _refs for h in _hashes)
                _below = any(h in _refs and _refs[h] < _hashes.count(h) for h in _hashes)
                if _missing and _below:
                    continue  # The text does not say which of the two errors comes first.
                if _missing:
                    assert_raises(KeyError, _where.format("unpin"), _cache.unpin, _hashes)
                    continue
                if _below:
                    assert_raises(ValueError, _where.format("unpin"), _cache.unpin, _hashes)
                    continue
                _cache.unpin(_hashes)
                for _h in _hashes:
                    _refs[_h] -= 1
        for _h, _count in _refs.items():
            for _ in range(_count):
                _cache.unpin([_h])
            assert_raises(ValueError, f"random case {_case}: unpin of block {_h} once more than it was pinned",
                          _cache.unpin, [_h])
    ### END HIDDEN TESTS


_check_task6_2_5_pin_unpin()

# %% nbgrader={"grade": true, "grade_id": "test_task6_2_6_victim", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that a full cache evicts the evictable leaf with the smallest LRU or LFU key."""


def _check_task6_2_6_victim():
    import torch

    from course.checks import assert_plain_equal

    # BEGIN SHARED toy_kv, evicts (authoring/shared/06_prefix_cache.py)
    def toy_kv(hashes, block_size):
        """One layer, one head, head_dim 2."""
        k_cache = torch.tensor([[h + r / 8, -h] for h in hashes for r in range(block_size)]).reshape(-1, 1, 2)
        return [(k_cache, k_cache + 0.5)]

    def evicts(cache, new, candidates, expected, why):
        """insert(new) into a full cache must evict exactly ``expected`` among ``candidates``."""
        before = [h for h in candidates if h in cache]
        cache.insert(new, toy_kv(new, cache.block_size))
        gone = [h for h in before if h not in cache]
        assert gone == expected, f"{why}: insert({new}) evicted {gone}; expected {expected}"
    # END SHARED

    def filled(capacity, policy, *calls):
        """A PrefixCache(capacity, 1, policy) after the given calls, each ("insert" or "match", hashes)."""
        cache = PrefixCache(capacity, 1, policy)
        for name, hashes in calls:
            if name == "insert":
                cache.insert(hashes, toy_kv(hashes, 1))
            else:
                cache.match(hashes)
        return cache

    cache = filled(2, "lru", ("insert", [1]), ("insert", [2]), ("match", [1]))
    evicts(cache, [3], [1, 2], [2], "LRU, blocks 1 and 2 inserted one per call, then match([1])")
    cache = filled(2, "lru", ("insert", [30]), ("insert", [10]), ("match", [30, 10]))
    evicts(cache, [20], [10, 30], [10], "LRU, blocks 30 and 10 last touched by the same match call (one clock tick "
           "per call: a tie, and the smaller hash goes)")
    cache = filled(2, "lru", ("insert", [30]), ("insert", [10]), ("match", [10]), ("match", [30, 10]))
    evicts(cache, [20], [10, 30], [10], "LRU, blocks 30 (used twice) and 10 (used three times) last touched by the same "
           "match call (a tie of steps: use_count plays no part in LRU, the smaller hash goes)")
    cache = PrefixCache(3, 2, "lru")
    cache.insert([1, 2], toy_kv([1, 2], 2))
    cache.insert([5], toy_kv([5], 2))
    evicts(cache, [6], [1, 2, 5], [2], "LRU, 1 -> 2 inserted together, then 5 (block 1 is as old as 2, but 2 chains "
           "from it: 1 is not a leaf)")
    cache.pin([1])
    evicts(cache, [7], [1, 5, 6], [5], "LRU, then block 1 pinned (a leaf now, the oldest, but pinned)")
    cache = filled(3, "lru", ("insert", [1, 2]), ("insert", [7]))
    evicts(cache, [1, 2, 8], [1, 2, 7], [7], "LRU, 1 -> 2 then 7 cached (block 2 is older than 7, but belongs to "
           "this insert call)")
    cache = filled(2, "lru", ("insert", [2]), ("insert", [1]))
    cache.get_kv([2])
    assert 2 in cache and len(cache) == 2 and cache.stats["hits"] == 0, "get_kv([2]) changed the cache's contents"
    cache.pin([2])
    cache.unpin([2])
    evicts(cache, [3], [1, 2], [2], "LRU, 2 then 1 inserted, then get_kv([2]), 2 in cache, len, stats, pin([2]) and "
           "unpin([2]) (none of them is an access)")
    cache = filled(2, "lru", ("insert", [1]), ("insert", [2]), ("match", [9, 1]))
    evicts(cache, [3], [1, 2], [1], "LRU, 1 then 2 inserted, then match([9, 1]) (9 misses, so block 1 is not touched)")
    cache = filled(2, "lru", ("insert", [1]), ("insert", [2]), ("insert", [1]))
    evicts(cache, [3], [1, 2], [1], "LRU, 1 then 2 inserted, then insert([1]) again (insert does not touch a cached "
           "block)")
    cache = filled(2, "lfu", ("insert", [1]), ("match", [1]), ("match", [1]), ("insert", [2]))
    evicts(cache, [3], [1, 2], [2], "LFU, block 1 used 3 times, block 2 once")
    cache = filled(2, "lfu", ("insert", [2]), ("insert", [1]))
    evicts(cache, [3], [1, 2], [2], "LFU, blocks 2 then 1 inserted, each used once (a tie in use_count: the least "
           "recent goes)")
    cache = filled(2, "lfu", ("insert", [9]), ("insert", [4]), ("match", [9, 4]))
    evicts(cache, [5], [4, 9], [4], "LFU, blocks 9 and 4 used twice each, last by the same match call (the smaller "
           "hash goes)")
    cache = filled(3, "lru", ("insert", [2]), ("insert", [9, 2, 3]))
    evicts(cache, [4], [2, 3, 9], [3], "LRU, 2 inserted, then insert([9, 2, 3]) stored 9 and 3 in one call (one clock "
           "tick per call, not per stored block: a tie, and the smaller hash goes)")
    # Every hash of the insert call is spared, those after the block being stored too (hashes need not chain).
    for hashes in ([1, 5], [5, 1]):
        cache = filled(1, "lru", ("insert", [5]))
        stored = cache.insert(hashes, toy_kv(hashes, 1))
        assert_plain_equal([stored, 5 in cache, 1 in cache], [0, True, False],
                           f"[stored, 5 in cache, 1 in cache] after insert({hashes}) into a PrefixCache(1, 1) holding "
                           "block 5 (5 is among the hashes of this insert call, so no block is evictable: nothing "
                           "is stored)")
    cache = filled(2, "lfu", ("insert", [1]), ("insert", [2]))
    for _ in range(2):
        cache.pin([1])
        cache.unpin([1])
    evicts(cache, [3], [1, 2], [1], "LFU, 1 then 2 inserted, then pin([1]), unpin([1]) twice (pin and unpin are not "
           "accesses: they change no use_count, so both are used once and the least recent goes)")

    ### BEGIN HIDDEN TESTS
    import random as _random

    from course.checks import assert_plain_equal, replay

    # BEGIN SHARED _Oracle, _tree, _last_answer (authoring/shared/06_prefix_cache.py)
    class _Oracle:
        """The contract, written as directly as possible: recompute every key from scratch."""

        def __init__(self, capacity, policy):
            self.capacity, self.policy = capacity, policy
            self.state = {}  # block_hash -> [parent, ref_count, use_count, last_access_step]
            self.clock = 0
            self.hits = self.misses = self.evictions = 0

        def leading(self, hashes):
            count = 0
            while count < len(hashes) and hashes[count] in self.state:
                count += 1
            return count

        def match(self, hashes):
            self.clock += 1
            count = self.leading(hashes)
            for h in hashes[:count]:
                self.state[h][2] += 1
                self.state[h][3] = self.clock
            self.hits += count
            self.misses += len(hashes) - count
            return count

        def insert(self, hashes):
            self.clock += 1
            stored = 0
            for i, h in enumerate(hashes):
                if h in self.state:
                    continue
                while len(self.state) >= self.capacity:
                    parents = {s[0] for s in self.state.values()}
                    keys = []
                    for x, s in self.state.items():
                        if s[1] == 0 and x not in parents and x not in hashes:
                            keys.append(((s[2], s[3], x) if self.policy == "lfu" else (s[3], x), x))
                    if not keys:
                        return stored
                    del self.state[sorted(keys)[0][1]]
                    self.evictions += 1
                self.state[h] = [hashes[i - 1] if i else None, 0, 1, self.clock]
                stored += 1
            return stored

    def _tree(rng, size):
        ids = rng.sample(range(1, 4000), size)
        parent = {}
        for i, node in enumerate(ids):
            parent[node] = None if i == 0 or rng.random() < 0.2 else ids[rng.randrange(i)]
        paths = {}
        for node in ids:
            path, x = [], node
            while x is not None:
                path.append(x)
                x = parent[x]
            paths[node] = path[::-1]
        return ids, paths

    def _last_answer(cache, steps):
        """One replay of ``steps``, then ``len(cache)``: the answer of the last step (None when there is none), and the
        replay's results, which give ``len(cache)`` next."""
        from course.checks import replay

        results = replay(cache, [*steps, ("len", ())])
        answer = None
        for _ in steps:
            answer = next(results)
        return answer, results
    # END SHARED

    _rng = _random.Random(6226)
    for _case in range(15):
        _policy = ("lru", "lfu")[_case % 2]
        _capacity = [1, 2, 3, 5, 8, 13][(_case // 2) % 6]
        _ids, _paths = _tree(_rng, _rng.randint(6, 30))
        _cache = PrefixCache(_capacity, 1, _policy)
        _oracle = _Oracle(_capacity, _policy)
        _pinned = []
        _where = f"PrefixCache({_capacity}, 1, {_policy!r}) on random case {_case}"
        _steps = []  # The calls since the last comparison: they run with the next one, in one replay.
        for _op in range(70):
            _path = _paths[_rng.choice(_ids)]
            _r = _rng.random()
            if _r < 0.4:
                _steps.append(("insert", (_path, toy_kv(_path, 1))))
                _stored = _oracle.insert(_path)
            elif _r < 0.75:
                _asked = list(_path)
                if len(_asked) > 2 and _rng.random() < 0.3:
                    _asked[_rng.randrange(len(_asked) - 1)] = 99999
                _steps.append(("match", (_asked,)))
                _oracle.match(_asked)
            elif _r < 0.88:
                _m = _oracle.leading(_path)
                if _m:
                    _steps.append(("pin", (_path[:_m],)))
                    for _h in _path[:_m]:
                        _oracle.state[_h][1] += 1
                    _pinned.append(_path[:_m])
            elif _pinned:
                _list = _pinned.pop(_rng.randrange(len(_pinned)))
                _steps.append(("unpin", (_list,)))
                for _h in _list:
                    _oracle.state[_h][1] -= 1
            # Only insert changes which blocks are cached, so they are compared after each insert and at the end:
            # as many blocks as the oracle's, and each block of the tree cached exactly when the oracle's is (one
            # replay asks for every block of the tree, so its steps never say which ones the oracle holds).
            # The calls since the last comparison and len(cache) run in one replay: an insert is its last call, and
            # no step depends on its answer (a pin names blocks the last comparison found).
            if not (_r < 0.4 or _op == 69):
                continue
            _got, _results = _last_answer(_cache, _steps)
            if _r < 0.4:
                assert_plain_equal(_got, _stored, f"{_where}, call {_op}: insert", reveal=False)
            _steps = []
            _held = replay(_cache, [("in", (_h,)) for _h in sorted(_ids)])
            if next(_results) != len(_oracle.state) or any(next(_held) != (_h in _oracle.state) for _h in sorted(_ids)):
                raise AssertionError(f"{_where}, after call {_op}: the wrong blocks are cached (compare the keys "
                                     "of the evictable leaves)")
    ### END HIDDEN TESTS


_check_task6_2_6_victim()

# %% nbgrader={"grade": true, "grade_id": "test_task6_2_7_evict", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that eviction makes a parent a leaf again, counts evictions, and stops insert when nothing is evictable."""


def _check_task6_2_7_evict():
    import torch

    from course.checks import assert_plain_equal

    # BEGIN SHARED toy_kv, evicts (authoring/shared/06_prefix_cache.py)
    def toy_kv(hashes, block_size):
        """One layer, one head, head_dim 2."""
        k_cache = torch.tensor([[h + r / 8, -h] for h in hashes for r in range(block_size)]).reshape(-1, 1, 2)
        return [(k_cache, k_cache + 0.5)]

    def evicts(cache, new, candidates, expected, why):
        """insert(new) into a full cache must evict exactly ``expected`` among ``candidates``."""
        before = [h for h in candidates if h in cache]
        cache.insert(new, toy_kv(new, cache.block_size))
        gone = [h for h in before if h not in cache]
        assert gone == expected, f"{why}: insert({new}) evicted {gone}; expected {expected}"
    # END SHARED

    cache = PrefixCache(3, 1, "lru")
    cache.insert([1, 2, 3], toy_kv([1, 2, 3], 1))
    evicts(cache, [4], [1, 2, 3], [3], "LRU, the chain 1 -> 2 -> 3 cached (only 3 is a leaf)")
    evicts(cache, [5], [1, 2, 4], [2], "LRU, then block 3 evicted (block 2 has no cached child left: a leaf again, "
           "older than 4)")
    evicts(cache, [6], [1, 4, 5], [1], "LRU, then block 2 evicted (block 1 is a leaf again)")
    assert_plain_equal(cache.stats["evictions"], 3, "cache.stats['evictions'] after three evictions")
    assert_plain_equal(len(cache), 3, "len(cache) after three evictions in a cache of 3 blocks")

    cache = PrefixCache(2, 1, "lru")
    cache.insert([1, 2], toy_kv([1, 2], 1))
    cache.pin([1])
    evicts(cache, [3], [1, 2], [2], "LRU, the chain 1 -> 2 cached, block 1 pinned")
    cache.unpin([1])
    evicts(cache, [4], [1, 3], [1], "LRU, then block 2 evicted while its parent 1 was pinned, and 1 unpinned (1 became a "
           "leaf when it lost its last child, pinned or not)")

    cache = PrefixCache(2, 1, "lru")
    cache.insert([1], toy_kv([1], 1))
    cache.insert([2], toy_kv([2], 1))
    cache.pin([1, 2])
    assert_plain_equal(cache.insert([3, 4], toy_kv([3, 4], 1)), 0,
                       "insert([3, 4]) when every cached block is pinned (store nothing, raise nothing)")
    assert 3 not in cache and len(cache) == 2, "insert([3, 4]) into a cache full of pinned blocks stored a block"
    cache.unpin([2])
    assert_plain_equal(cache.insert([3, 4], toy_kv([3, 4], 1)), 1,
                       "insert([3, 4]) when only block 2 is evictable (evict 2, store 3, then stop: 1 is pinned and 3 "
                       "belongs to this call)")
    assert 2 not in cache and 3 in cache and 4 not in cache, "insert([3, 4]) must evict 2, store 3 and stop"
    assert_plain_equal(cache.stats["evictions"], 1, "cache.stats['evictions'] after that")

    cache = PrefixCache(3, 1, "lfu")
    assert_plain_equal(cache.insert([1, 2, 3, 4, 5], toy_kv([1, 2, 3, 4, 5], 1)), 3,
                       "insert of 5 blocks into an empty cache of 3 (it never evicts its own blocks)")
    assert all(h in cache for h in (1, 2, 3)), "insert of 5 blocks into a cache of 3 must keep blocks 1, 2, 3"
    cache = PrefixCache(0, 1)
    assert_plain_equal(cache.insert([1], toy_kv([1], 1)), 0, "PrefixCache(0, 1).insert([1], ...)")
    assert_plain_equal(cache.stats, {"hits": 0, "misses": 0, "evictions": 0}, "PrefixCache(0, 1).stats after an insert")

    ### BEGIN HIDDEN TESTS
    import random as _random

    from course.checks import replay

    # BEGIN SHARED _Oracle, _tree, _last_answer (authoring/shared/06_prefix_cache.py)
    class _Oracle:
        """The contract, written as directly as possible: recompute every key from scratch."""

        def __init__(self, capacity, policy):
            self.capacity, self.policy = capacity, policy
            self.state = {}  # block_hash -> [parent, ref_count, use_count, last_access_step]
            self.clock = 0
            self.hits = self.misses = self.evictions = 0

        def leading(self, hashes):
            count = 0
            while count < len(hashes) and hashes[count] in self.state:
                count += 1
            return count

        def match(self, hashes):
            self.clock += 1
            count = self.leading(hashes)
            for h in hashes[:count]:
                self.state[h][2] += 1
                self.state[h][3] = self.clock
            self.hits += count
            self.misses += len(hashes) - count
            return count

        def insert(self, hashes):
            self.clock += 1
            stored = 0
            for i, h in enumerate(hashes):
                if h in self.state:
                    continue
                while len(self.state) >= self.capacity:
                    parents = {s[0] for s in self.state.values()}
                    keys = []
                    for x, s in self.state.items():
                        if s[1] == 0 and x not in parents and x not in hashes:
                            keys.append(((s[2], s[3], x) if self.policy == "lfu" else (s[3], x), x))
                    if not keys:
                        return stored
                    del self.state[sorted(keys)[0][1]]
                    self.evictions += 1
                self.state[h] = [hashes[i - 1] if i else None, 0, 1, self.clock]
                stored += 1
            return stored

    def _tree(rng, size):
        ids = rng.sample(range(1, 4000), size)
        parent = {}
        for i, node in enumerate(ids):
            parent[node] = None if i == 0 or rng.random() < 0.2 else ids[rng.randrange(i)]
        paths = {}
        for node in ids:
            path, x = [], node
            while x is not None:
                path.append(x)
                x = parent[x]
            paths[node] = path[::-1]
        return ids, paths

    def _last_answer(cache, steps):
        """One replay of ``steps``, then ``len(cache)``: the answer of the last step (None when there is none), and the
        replay's results, which give ``len(cache)`` next."""
        from course.checks import replay

        results = replay(cache, [*steps, ("len", ())])
        answer = None
        for _ in steps:
            answer = next(results)
        return answer, results
    # END SHARED

    _rng = _random.Random(6227)
    for _case in range(30):
        _policy = ("lru", "lfu")[_case % 2]
        _capacity = [0, 1, 2, 3, 5, 8][(_case // 2) % 6]
        _ids, _paths = _tree(_rng, _rng.randint(6, 30))
        _cache = PrefixCache(_capacity, 1, _policy)
        _oracle = _Oracle(_capacity, _policy)
        _pinned = []
        _where = f"PrefixCache({_capacity}, 1, {_policy!r}) on random case {_case}"
        _steps = []  # The calls since the last comparison: they run with the next one, in one replay.
        for _op in range(70):
            _path = _paths[_rng.choice(_ids)]
            _r = _rng.random()
            if _r < 0.4:
                _steps.append(("insert", (_path, toy_kv(_path, 1))))
                _stored = _oracle.insert(_path)
            elif _r < 0.7:
                _steps.append(("match", (_path,)))
                _oracle.match(_path)
            elif _r < 0.85:
                _m = _oracle.leading(_path)
                if _m:
                    _steps.append(("pin", (_path[:_m],)))
                    for _h in _path[:_m]:
                        _oracle.state[_h][1] += 1
                    _pinned.append(_path[:_m])
            elif _pinned:
                _list = _pinned.pop(_rng.randrange(len(_pinned)))
                _steps.append(("unpin", (_list,)))
                for _h in _list:
                    _oracle.state[_h][1] -= 1
            # Only insert changes which blocks are cached and the evictions: they are compared after each insert
            # and at the end. The calls since the last comparison and len(cache) run in one replay: an insert is
            # its last call, and no step depends on its answer (a pin names blocks the last comparison found).
            if not (_r < 0.4 or _op == 69):
                continue
            _got, _results = _last_answer(_cache, _steps)
            if _r < 0.4:
                assert_plain_equal(_got, _stored, f"{_where}, call {_op}: insert", reveal=False)
            _steps = []
            # The same number of blocks, and each block of the tree cached exactly when the oracle's is: the same
            # blocks (one replay asks for every block of the tree, so its steps never say which ones the oracle holds).
            assert_plain_equal(next(_results), len(_oracle.state), f"{_where}, after call {_op}: len(cache)",
                               reveal=False)
            _held = replay(_cache, [*(("in", (_h,)) for _h in sorted(_ids)), ("stats", None)])
            if any(next(_held) != (_h in _oracle.state) for _h in sorted(_ids)):
                raise AssertionError(f"{_where}, after call {_op}: the wrong blocks are cached")
            assert_plain_equal(next(_held)["evictions"], _oracle.evictions, f"{_where}, after call {_op}: evictions",
                               reveal=False)
    ### END HIDDEN TESTS


_check_task6_2_7_evict()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task6_3_serve_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 6.3: serve (8 points)
#
# Put it together. `serve(model, cache, tokens)` prefills one request with prefix reuse:
#
# 1. `hashes = block_hashes(tokens, cache.block_size)` and `matched = cache.match(hashes)`: match **all** of them,
#    once, so that the cache's statistics count every full block;
# 2. reuse `min(matched, (len(tokens) - 1) // block_size)` blocks: at least one token must be computed, because the
#    logits of the last position are what the next token is sampled from (vLLM does the same when a whole prompt
#    hits);
# 3. `pin` the reused blocks, then `get_kv` them (pass `past_kv=None` when nothing is reused: `[]` is not a valid
#    `past_kv`); the model runs after these K/V as the cache holds them, whichever model wrote them (a test gives
#    `serve` a cache whose blocks another model wrote);
# 4. run the model **once**, on the remaining tokens, as a `torch.long` tensor on the model's device
#    (`model.device`): `logits, kv = model(new_tokens, past_kv=past_kv)`; `kv` covers the whole request;
# 5. `cache.insert(hashes, kv)`, and `unpin` the reused blocks in a `finally` block, so that they are unpinned also
#    when the model or `insert` raises (the error, a `RuntimeError` in the tests, still reaches the caller).
#
# Return `(logits, counts)`: the logits of the computed positions, `[tokens_computed, vocab_size]`, and
# `{"tokens_reused": int, "tokens_computed": int}`. The reused positions have no logits: the model never ran them,
# which is the whole saving, and a server only needs the last position's logits to pick the next token. Raise
# `ValueError` for an empty `tokens`. The model is `course.model.TinyDecoder`: `model(tokens, past_kv=None)` returns
# `(logits, kv)` with `kv` a list of `(k_cache, v_cache)` per layer, each `[num_tokens, num_heads, head_dim]`; the new
# tokens continue at position `len(past)`.
#
# Graded in parts: **6.3.1** what is reused, and the counts (TODO 6.3.1, 3 points) · **6.3.2** the logits: the
# model runs once, on the tokens not reused, after their cached K/V (TODO 6.3.2, 3) · **6.3.3** the cache's
# protocol: match, pin, get_kv, insert, unpin in this order, nothing left pinned even when the model or `insert`
# raises (TODO 6.3.2, 2). The tests give `serve` a small cache of their own that keeps `PrefixCache`'s contract and
# records every call, so a slip in Task 6.2 does not cost points here; its methods take the hashes as a list or a
# tuple (`block_hashes` returns a list, and a slice of it is one).
#
# ## 任务 6.3：serve（8 分）
#
# 把各部分组合起来。`serve(model, cache, tokens)` 对一个请求做带前缀复用的预填充：
#
# 1. `hashes = block_hashes(tokens, cache.block_size)`，`matched = cache.match(hashes)`：对**全部**哈希调用一次 match，使缓存的统计覆盖每个完整块；
# 2. 复用 `min(matched, (len(tokens) - 1) // block_size)` 个块：至少要计算一个 token，因为下一个 token 是根据最后一个位置的 logits 采样的（整个提示词都命中时 vLLM 也这样做）；
# 3. 先 `pin` 被复用的块，再对它们调用 `get_kv`（没有复用时传 `past_kv=None`：`[]` 不是合法的 `past_kv`）；模型接在缓存中保存的这些 K/V 之后运行，不论它们是哪个模型写入的（有一个测试给 `serve` 的缓存，其中的块是另一个模型写入的）；
# 4. 在模型所在的设备（`model.device`）上，把其余 token 作为 `torch.long` 张量，**只调用一次**模型：`logits, kv = model(new_tokens, past_kv=past_kv)`；`kv` 覆盖整个请求；
# 5. `cache.insert(hashes, kv)`，并在 `finally` 块中对被复用的块调用 `unpin`，这样即使模型或 `insert` 抛出异常，这些块也会被取消固定（异常仍会传给调用者；测试中用的是 `RuntimeError`）。
#
# 返回 `(logits, counts)`：被计算位置的 logits，形状 `[tokens_computed, vocab_size]`，以及 `{"tokens_reused": int, "tokens_computed": int}`。被复用的位置没有 logits：模型根本没有运行它们，这正是节省所在；服务器只需要最后一个位置的 logits 来选择下一个 token。`tokens` 为空时抛出 `ValueError`。模型是 `course.model.TinyDecoder`：`model(tokens, past_kv=None)` 返回 `(logits, kv)`，`kv` 是每层一个 `(k_cache, v_cache)` 的列表，每个张量的形状为 `[num_tokens, num_heads, head_dim]`；新 token 从位置 `len(past)` 开始继续编号。
#
# 分部分计分：**6.3.1** 复用哪些块，以及计数（TODO 6.3.1，3 分）· **6.3.2** logits：模型只运行一次，在已缓存的 K/V 之后只处理未复用的 token（TODO 6.3.2，3 分）· **6.3.3** 与缓存交互的规程：按 match、pin、get_kv、insert、unpin 的顺序调用，即使模型或 `insert` 抛出异常也不留下被固定的块（TODO 6.3.2，2 分）。测试给 `serve` 传入测试自带的一个小缓存，它遵守 `PrefixCache` 的契约并记录每次调用，因此任务 6.2 中的失误不会在这里扣分；它的方法接受以列表或元组形式传入的哈希（`block_hashes` 返回列表，列表的切片也是列表）。

# %% nbgrader={"grade": false, "grade_id": "task6_3_serve", "locked": false, "schema_version": 3, "solution": true, "task": false}
def serve(model, cache, tokens):
    """Prefill ``tokens`` with the longest cached prefix reused; return logits and counts.

    Args:
        model: a course.model.TinyDecoder (its device is ``model.device``).
        cache: a PrefixCache (or any object with block_size, match, pin, get_kv, insert, unpin).
        tokens: non-empty list of int token ids.

    Returns:
        (logits, counts): logits float32 [tokens_computed, vocab_size] on the model's device,
        those of the model run after the cached K/V as get_kv returns them (so, when this model
        wrote them, equal up to float32 rounding to the last tokens_computed rows of the logits of
        the whole prompt run without a cache); counts {"tokens_reused": int, "tokens_computed": int}
        with tokens_reused = block_size * min(matched, (len(tokens) - 1) // block_size),
        tokens_computed >= 1, and their sum len(tokens).

    Order of the calls: match(all full-block hashes) once, pin(reused), get_kv(reused), the model
    once on the other tokens, insert(all full-block hashes, kv of the whole request), and
    unpin(reused) in a finally block (also when the model or insert raises).

    Raises:
        ValueError: when tokens is empty.
    """
    # TODO 6.3.1: raise ValueError for empty tokens; hash the full blocks and match them all; keep in `reused` the
    # hashes of the min(matched, (len(tokens) - 1) // block_size) blocks to reuse, and build `counts`.
    # 提示：每个复用的块省下 block_size 个 token；其余的 token 都要计算。两个计数都是 int。
    # Hint: each reused block saves block_size tokens; every other token is computed. Both counts are ints.
    ### BEGIN SOLUTION
    if len(tokens) == 0:
        raise ValueError("serve needs at least one token")
    block_size = cache.block_size
    hashes = block_hashes(tokens, block_size)
    matched = cache.match(hashes)
    reused = hashes[:min(matched, (len(tokens) - 1) // block_size)]
    tokens_reused = len(reused) * block_size
    counts = {"tokens_reused": tokens_reused, "tokens_computed": len(tokens) - tokens_reused}
    ### END SOLUTION
    # TODO 6.3.2: pin the reused blocks; then, in a try block, get their K/V (past_kv=None when nothing is reused),
    # run the model on the other tokens and insert all hashes with the model's kv; unpin in the finally block.
    # 提示：模型要的是模型所在设备上的 torch.long 张量，只包含未复用的 token；finally 块不论 try 块是否抛出异常都会运行。
    # Hint: the model takes a torch.long tensor on the model's device holding only the tokens not reused; a finally block
    # runs whether or not the try block raises.
    ### BEGIN SOLUTION
    cache.pin(reused)
    try:
        past_kv = cache.get_kv(reused) if reused else None
        new_tokens = torch.tensor(tokens[tokens_reused:], dtype=torch.long, device=model.device)
        logits, kv = model(new_tokens, past_kv=past_kv)
        cache.insert(hashes, kv)
    finally:
        cache.unpin(reused)
    ### END SOLUTION
    return logits, counts


# %% nbgrader={"grade": true, "grade_id": "test_task6_3_1_counts", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that serve matches every full block once, reuses at most (len(tokens) - 1) // block_size blocks, and counts tokens."""


def _check_task6_3_1_counts():
    import torch

    from course.checks import assert_plain_equal, assert_raises, check_type
    from course.model import TinyDecoder

    # BEGIN SHARED full_block_hashes, ToyCache, CountingDecoder (authoring/shared/06_prefix_cache.py)
    def full_block_hashes(block_hashes, tokens, block_size):
        """``block_hashes(tokens, block_size)`` as a list: Task 6.1's answer, which ``serve`` calls too, so that a check
        of serve's calls does not hang on 6.1's hash values (nor on 6.1's slips, such as a hash of the partial last
        block too); checked for what those checks rely on, at least one hash per full block (a later cell may rebind
        ``block_hashes`` to hide that ``serve`` leaves blocks out)."""
        hashes = list(block_hashes(list(tokens), block_size))
        full = len(tokens) // block_size
        if len(hashes) < full:
            raise AssertionError(
                f"block_hashes({len(tokens)} tokens, {block_size}) gave {len(hashes)} hash(es) where the tokens have {full} "
                f"full block(s): the checks of serve need block_hashes (Task 6.1) to give one hash per full block")
        return hashes

    class ToyCache:
        """An unbounded cache that keeps PrefixCache's contract and records how serve calls it.

        What it holds and records has private names: the student's code can call its public methods (grading
        lends them), but not change its record or its pins by hand."""

        def __init__(self, block_size):
            self.block_size = block_size
            self._kv, self._refs, self._log = {}, {}, []
            self._fail_insert = False

        @staticmethod
        def _read(hashes, method):
            """The hashes of a call, read once (what the cache records is what it works on): a list or a tuple."""
            if type(hashes) not in (list, tuple):
                raise TypeError(f"the test's cache: {method} takes the hashes as a list or a tuple, as block_hashes returns "
                                f"them; got {type(hashes).__name__}")
            return list(hashes)

        def match(self, hashes):
            hashes = self._read(hashes, "match")
            self._log.append(("match", hashes))
            count = 0
            while count < len(hashes) and hashes[count] in self._kv:
                count += 1
            return count

        def pin(self, hashes):
            hashes = self._read(hashes, "pin")
            self._log.append(("pin", hashes))
            if any(h not in self._kv for h in hashes):
                raise KeyError("pin of a block that is not cached")
            for h in hashes:
                self._refs[h] = self._refs.get(h, 0) + 1

        def unpin(self, hashes):
            hashes = self._read(hashes, "unpin")
            self._log.append(("unpin", hashes))
            wanted = {}  # How many times each hash is listed, counted in one pass (its cost grows with the list alone).
            for h in hashes:
                wanted[h] = wanted.get(h, 0) + 1
            if any(self._refs.get(h, 0) < count for h, count in wanted.items()):
                raise ValueError("unpin of a block that is not pinned")
            for h in hashes:
                self._refs[h] -= 1

        def get_kv(self, hashes):
            hashes = self._read(hashes, "get_kv")
            self._log.append(("get_kv", hashes))
            if any(self._refs.get(h, 0) < 1 for h in hashes):
                raise AssertionError("serve called get_kv on a block it had not pinned (pin the reused blocks first)")
            if not hashes:
                return []
            return [tuple(torch.cat([self._kv[h][layer][side] for h in hashes]) for side in (0, 1))
                    for layer in range(len(self._kv[hashes[0]]))]

        def insert(self, hashes, kv):
            hashes, kv = self._read(hashes, "insert"), [tuple(layer) for layer in kv]
            self._log.append(("insert", hashes, [k.shape[0] for k, _ in kv]))
            if self._fail_insert:
                raise RuntimeError("insert failed (the test's cache raises on purpose)")
            for i, h in enumerate(hashes):
                if h not in self._kv:
                    rows = slice(i * self.block_size, (i + 1) * self.block_size)
                    self._kv[h] = [(k[rows].clone(), v[rows].clone()) for k, v in kv]
            return len(hashes)

        def _calls(self, name=None):
            """The calls since the last look (of one method, or all), without those on an empty list
            (serve may make them or not), as (method, hashes), the hashes of pin and unpin sorted (their order within
            one call changes nothing); the log starts again."""
            calls = [(entry[0], sorted(entry[1]) if entry[0] in ("pin", "unpin") else entry[1])
                     for entry in self._log if entry[1] and name in (None, entry[0])]
            self._log.clear()
            return calls

        def pinned(self):
            return sorted(h for h, count in self._refs.items() if count)

    class CountingDecoder(TinyDecoder):
        """A TinyDecoder that records every call as (new tokens, past tokens); every test of serve gives serve one, so
        that the model's class tells serve nothing about which test runs."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._calls = []  # Private: the student's code, which gets the model, cannot rewrite the record.
            self._dtypes = []  # The dtype of the tokens of each call, as a string.

        def forward(self, tokens, past_kv=None, **options):
            # TinyDecoder's keyword arguments (position, return_attention) pass through, as the text's model takes them.
            self._calls.append((len(tokens), 0 if past_kv is None else int(past_kv[0][0].shape[0])))
            self._dtypes.append(str(tokens.dtype) if isinstance(tokens, torch.Tensor) else type(tokens).__name__)
            return super().forward(tokens, past_kv, **options)
    # END SHARED

    model = CountingDecoder(vocab_size=64, num_layers=2, num_heads=2, head_dim=8, seed=0)
    cache = ToyCache(block_size=4)
    first = [3, 14, 15, 9, 26, 5, 35, 8, 9, 7]
    second = first[:8] + [32, 38, 46, 2]
    for tokens, (reused, computed), why in (
            (first, (0, 10), "empty cache"),
            (second, (8, 4), "2 full blocks shared with the first request"),
            (first, (8, 2), "the first request again: its 2 full blocks hit, its 2 tail tokens are computed"),
            (first[:8], (4, 4), "both blocks cached: the last block is computed again, for the last position's logits"),
            ([5, 6], (0, 2), "shorter than one block: nothing to reuse")):
        name = f"serve(model, cache, {len(tokens)} tokens) ({why})"
        hashes = full_block_hashes(block_hashes, tokens, 4)
        _, counts = serve(model, cache, list(tokens))
        check_type(counts, dict, f"{name}[1]")
        assert_plain_equal(counts, {"tokens_reused": reused, "tokens_computed": computed}, f"{name}: counts")
        assert_plain_equal(cache._calls("match"), [("match", hashes)] if hashes else [],
                           f"{name}: its calls of cache.match (one call, with the hashes of ALL full blocks)")
    assert_raises(ValueError, "serve(model, cache, [])", serve, model, cache, [])

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(6331)
    for _block_size in (1, 2, 3, 4, 5):
        _cache = ToyCache(_block_size)
        _seen = set()
        _conversations = [[_rng.randrange(64) for _ in range(_rng.randint(1, 9))] for _ in range(3)]
        for _turn in range(12):
            _c = _rng.randrange(3)
            _tokens = list(_conversations[_c])
            if _rng.random() < 0.2:
                _tokens = _tokens[:_rng.randint(1, len(_tokens))]
            _limit = (len(_tokens) - 1) // _block_size
            _blocks = 0
            while _blocks < _limit and tuple(_tokens[:(_blocks + 1) * _block_size]) in _seen:
                _blocks += 1
            _where = f"serve(model, cache with block_size {_block_size}, request {_turn} of {len(_tokens)} tokens)"
            _hashes = full_block_hashes(block_hashes, _tokens, _block_size)
            _, _counts = serve(model, _cache, list(_tokens))
            assert_plain_equal(_counts, {"tokens_reused": _blocks * _block_size,
                                         "tokens_computed": len(_tokens) - _blocks * _block_size},
                               f"{_where}: counts", reveal=False)
            assert_plain_equal(_cache._calls("match"), [("match", _hashes)] if _hashes else [],
                               f"{_where}: its calls of cache.match", reveal=False)
            for _b in range(1, len(_tokens) // _block_size + 1):
                _seen.add(tuple(_tokens[:_b * _block_size]))
            _conversations[_c] = _tokens + [_rng.randrange(64) for _ in range(_rng.randint(1, 7))]
    assert_raises(ValueError, "serve(model, cache, []) with block_size 1", serve, model, ToyCache(1), [])
    ### END HIDDEN TESTS


_check_task6_3_1_counts()

# %% nbgrader={"grade": true, "grade_id": "test_task6_3_2_logits", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that serve runs the model once, on the tokens not reused after their cached K/V, and returns its logits."""


def _check_task6_3_2_logits():
    import torch

    from course.checks import assert_plain_equal, assert_same_tensor
    from course.env import available_devices
    from course.model import TinyDecoder

    # BEGIN SHARED full_block_hashes, ToyCache, CountingDecoder (authoring/shared/06_prefix_cache.py)
    def full_block_hashes(block_hashes, tokens, block_size):
        """``block_hashes(tokens, block_size)`` as a list: Task 6.1's answer, which ``serve`` calls too, so that a check
        of serve's calls does not hang on 6.1's hash values (nor on 6.1's slips, such as a hash of the partial last
        block too); checked for what those checks rely on, at least one hash per full block (a later cell may rebind
        ``block_hashes`` to hide that ``serve`` leaves blocks out)."""
        hashes = list(block_hashes(list(tokens), block_size))
        full = len(tokens) // block_size
        if len(hashes) < full:
            raise AssertionError(
                f"block_hashes({len(tokens)} tokens, {block_size}) gave {len(hashes)} hash(es) where the tokens have {full} "
                f"full block(s): the checks of serve need block_hashes (Task 6.1) to give one hash per full block")
        return hashes

    class ToyCache:
        """An unbounded cache that keeps PrefixCache's contract and records how serve calls it.

        What it holds and records has private names: the student's code can call its public methods (grading
        lends them), but not change its record or its pins by hand."""

        def __init__(self, block_size):
            self.block_size = block_size
            self._kv, self._refs, self._log = {}, {}, []
            self._fail_insert = False

        @staticmethod
        def _read(hashes, method):
            """The hashes of a call, read once (what the cache records is what it works on): a list or a tuple."""
            if type(hashes) not in (list, tuple):
                raise TypeError(f"the test's cache: {method} takes the hashes as a list or a tuple, as block_hashes returns "
                                f"them; got {type(hashes).__name__}")
            return list(hashes)

        def match(self, hashes):
            hashes = self._read(hashes, "match")
            self._log.append(("match", hashes))
            count = 0
            while count < len(hashes) and hashes[count] in self._kv:
                count += 1
            return count

        def pin(self, hashes):
            hashes = self._read(hashes, "pin")
            self._log.append(("pin", hashes))
            if any(h not in self._kv for h in hashes):
                raise KeyError("pin of a block that is not cached")
            for h in hashes:
                self._refs[h] = self._refs.get(h, 0) + 1

        def unpin(self, hashes):
            hashes = self._read(hashes, "unpin")
            self._log.append(("unpin", hashes))
            wanted = {}  # How many times each hash is listed, counted in one pass (its cost grows with the list alone).
            for h in hashes:
                wanted[h] = wanted.get(h, 0) + 1
            if any(self._refs.get(h, 0) < count for h, count in wanted.items()):
                raise ValueError("unpin of a block that is not pinned")
            for h in hashes:
                self._refs[h] -= 1

        def get_kv(self, hashes):
            hashes = self._read(hashes, "get_kv")
            self._log.append(("get_kv", hashes))
            if any(self._refs.get(h, 0) < 1 for h in hashes):
                raise AssertionError("serve called get_kv on a block it had not pinned (pin the reused blocks first)")
            if not hashes:
                return []
            return [tuple(torch.cat([self._kv[h][layer][side] for h in hashes]) for side in (0, 1))
                    for layer in range(len(self._kv[hashes[0]]))]

        def insert(self, hashes, kv):
            hashes, kv = self._read(hashes, "insert"), [tuple(layer) for layer in kv]
            self._log.append(("insert", hashes, [k.shape[0] for k, _ in kv]))
            if self._fail_insert:
                raise RuntimeError("insert failed (the test's cache raises on purpose)")
            for i, h in enumerate(hashes):
                if h not in self._kv:
                    rows = slice(i * self.block_size, (i + 1) * self.block_size)
                    self._kv[h] = [(k[rows].clone(), v[rows].clone()) for k, v in kv]
            return len(hashes)

        def _calls(self, name=None):
            """The calls since the last look (of one method, or all), without those on an empty list
            (serve may make them or not), as (method, hashes), the hashes of pin and unpin sorted (their order within
            one call changes nothing); the log starts again."""
            calls = [(entry[0], sorted(entry[1]) if entry[0] in ("pin", "unpin") else entry[1])
                     for entry in self._log if entry[1] and name in (None, entry[0])]
            self._log.clear()
            return calls

        def pinned(self):
            return sorted(h for h, count in self._refs.items() if count)

    class CountingDecoder(TinyDecoder):
        """A TinyDecoder that records every call as (new tokens, past tokens); every test of serve gives serve one, so
        that the model's class tells serve nothing about which test runs."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._calls = []  # Private: the student's code, which gets the model, cannot rewrite the record.
            self._dtypes = []  # The dtype of the tokens of each call, as a string.

        def forward(self, tokens, past_kv=None, **options):
            # TinyDecoder's keyword arguments (position, return_attention) pass through, as the text's model takes them.
            self._calls.append((len(tokens), 0 if past_kv is None else int(past_kv[0][0].shape[0])))
            self._dtypes.append(str(tokens.dtype) if isinstance(tokens, torch.Tensor) else type(tokens).__name__)
            return super().forward(tokens, past_kv, **options)
    # END SHARED

    first = [3, 14, 15, 9, 26, 5, 35, 8, 9, 7]
    second = first[:8] + [32, 38, 46, 2]
    for device in available_devices():
        model = CountingDecoder(vocab_size=64, num_layers=2, num_heads=2, head_dim=8, seed=0).to(device)
        plain = TinyDecoder(vocab_size=64, num_layers=2, num_heads=2, head_dim=8, seed=0).to(device)
        cache = ToyCache(block_size=4)
        for tokens, reused in ((first, 0), (second, 8), (first[:8], 4)):
            expected, _ = plain(torch.tensor(tokens, device=device))
            model._calls.clear()
            model._dtypes.clear()
            logits, _ = serve(model, cache, list(tokens))
            name = f"serve(model on {device}, cache, {len(tokens)} tokens, {reused} of them cached)"
            assert_same_tensor(logits, expected[reused:], f"{name}: logits (the rows of the computed positions, "
                               "equal to the logits without a cache)", atol=1e-5, rtol=1e-5)
            assert_plain_equal(model._calls, [(len(tokens) - reused, reused)],
                               f"{name}: the model's calls as (new tokens, past tokens) (one call, on the tokens "
                               "not reused, after their K/V)")
            assert_plain_equal(model._dtypes, ["torch.int64"], f"{name}: the dtype of the tokens given to the model "
                               "(a torch.long tensor)")
        # A cache whose two blocks another model wrote: the model runs after their K/V as the cache holds them.
        other = TinyDecoder(vocab_size=64, num_layers=2, num_heads=2, head_dim=8, seed=1).to(device)
        _, other_kv = other(torch.tensor(first[:8], device=device))
        foreign = ToyCache(block_size=4)
        foreign.insert(full_block_hashes(block_hashes, first[:8], 4), other_kv)
        expected, _ = plain(torch.tensor(first[8:], device=device), past_kv=other_kv)
        model._calls.clear()
        logits, _ = serve(model, foreign, list(first))
        name = f"serve(model on {device}, a cache whose 2 blocks another model wrote, 10 tokens)"
        assert_same_tensor(logits, expected, f"{name}: logits (those of the model run after the K/V the cache holds, "
                           "as get_kv returns them)", atol=1e-5, rtol=1e-5)
        assert_plain_equal(model._calls, [(2, 8)], f"{name}: the model's calls as (new tokens, past tokens)")

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(6332)
    for device in available_devices():
        _model = CountingDecoder(vocab_size=50, num_layers=2, num_heads=2, head_dim=4, seed=3).to(device)
        _plain = TinyDecoder(vocab_size=50, num_layers=2, num_heads=2, head_dim=4, seed=3).to(device)
        for _block_size in (1, 3, 4):
            _cache = ToyCache(_block_size)
            _seen = set()
            _conversations = [[_rng.randrange(50) for _ in range(_rng.randint(1, 9))] for _ in range(3)]
            for _turn in range(9):
                _c = _rng.randrange(3)
                _tokens = list(_conversations[_c])
                _limit = (len(_tokens) - 1) // _block_size
                _blocks = 0
                while _blocks < _limit and tuple(_tokens[:(_blocks + 1) * _block_size]) in _seen:
                    _blocks += 1
                _reused = _blocks * _block_size
                _where = (f"serve(model on {device}, cache with block_size {_block_size}, request {_turn} of "
                          f"{len(_tokens)} tokens)")
                _full, _ = _plain(torch.tensor(_tokens, device=device))
                _model._calls.clear()
                _model._dtypes.clear()
                _logits, _ = serve(_model, _cache, list(_tokens))
                assert_same_tensor(_logits, _full[_reused:], f"{_where}: logits", atol=1e-4, rtol=1e-4, reveal=False)
                assert_plain_equal(_model._calls, [(len(_tokens) - _reused, _reused)], f"{_where}: the model's calls",
                                   reveal=False)
                assert_plain_equal(_model._dtypes, ["torch.int64"], f"{_where}: the dtype of the tokens given to the "
                                   "model", reveal=False)
                for _b in range(1, len(_tokens) // _block_size + 1):
                    _seen.add(tuple(_tokens[:_b * _block_size]))
                _conversations[_c] = _tokens + [_rng.randrange(50) for _ in range(_rng.randint(1, 7))]
        _other_rng = _random.Random(6333)
        for _block_size in (1, 2, 3):
            _other = TinyDecoder(vocab_size=50, num_layers=2, num_heads=2, head_dim=4, seed=30 + _block_size).to(device)
            _tokens = [_other_rng.randrange(50) for _ in range(_other_rng.randint(_block_size + 1, 4 * _block_size + 1))]
            _prefix = _tokens[:(len(_tokens) - 1) // _block_size * _block_size]
            _, _other_kv = _other(torch.tensor(_prefix, device=device))
            _foreign = ToyCache(_block_size)
            _foreign.insert(full_block_hashes(block_hashes, _prefix, _block_size), _other_kv)
            _want, _ = _plain(torch.tensor(_tokens[len(_prefix):], device=device), past_kv=_other_kv)
            _model._calls.clear()
            _logits, _ = serve(_model, _foreign, list(_tokens))
            _where = (f"serve(model on {device}, a cache with block_size {_block_size} whose blocks another model wrote, "
                      f"{len(_tokens)} tokens)")
            assert_same_tensor(_logits, _want, f"{_where}: logits", atol=1e-4, rtol=1e-4, reveal=False)
            assert_plain_equal(_model._calls, [(len(_tokens) - len(_prefix), len(_prefix))],
                               f"{_where}: the model's calls", reveal=False)
    ### END HIDDEN TESTS


_check_task6_3_2_logits()

# %% nbgrader={"grade": true, "grade_id": "test_task6_3_3_protocol", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that serve calls match, pin, get_kv, insert and unpin in order, and leaves nothing pinned, even on errors."""


def _check_task6_3_3_protocol():
    import torch

    from course.checks import assert_plain_equal, assert_raises
    from course.model import TinyDecoder

    # BEGIN SHARED full_block_hashes, ToyCache, CountingDecoder (authoring/shared/06_prefix_cache.py)
    def full_block_hashes(block_hashes, tokens, block_size):
        """``block_hashes(tokens, block_size)`` as a list: Task 6.1's answer, which ``serve`` calls too, so that a check
        of serve's calls does not hang on 6.1's hash values (nor on 6.1's slips, such as a hash of the partial last
        block too); checked for what those checks rely on, at least one hash per full block (a later cell may rebind
        ``block_hashes`` to hide that ``serve`` leaves blocks out)."""
        hashes = list(block_hashes(list(tokens), block_size))
        full = len(tokens) // block_size
        if len(hashes) < full:
            raise AssertionError(
                f"block_hashes({len(tokens)} tokens, {block_size}) gave {len(hashes)} hash(es) where the tokens have {full} "
                f"full block(s): the checks of serve need block_hashes (Task 6.1) to give one hash per full block")
        return hashes

    class ToyCache:
        """An unbounded cache that keeps PrefixCache's contract and records how serve calls it.

        What it holds and records has private names: the student's code can call its public methods (grading
        lends them), but not change its record or its pins by hand."""

        def __init__(self, block_size):
            self.block_size = block_size
            self._kv, self._refs, self._log = {}, {}, []
            self._fail_insert = False

        @staticmethod
        def _read(hashes, method):
            """The hashes of a call, read once (what the cache records is what it works on): a list or a tuple."""
            if type(hashes) not in (list, tuple):
                raise TypeError(f"the test's cache: {method} takes the hashes as a list or a tuple, as block_hashes returns "
                                f"them; got {type(hashes).__name__}")
            return list(hashes)

        def match(self, hashes):
            hashes = self._read(hashes, "match")
            self._log.append(("match", hashes))
            count = 0
            while count < len(hashes) and hashes[count] in self._kv:
                count += 1
            return count

        def pin(self, hashes):
            hashes = self._read(hashes, "pin")
            self._log.append(("pin", hashes))
            if any(h not in self._kv for h in hashes):
                raise KeyError("pin of a block that is not cached")
            for h in hashes:
                self._refs[h] = self._refs.get(h, 0) + 1

        def unpin(self, hashes):
            hashes = self._read(hashes, "unpin")
            self._log.append(("unpin", hashes))
            wanted = {}  # How many times each hash is listed, counted in one pass (its cost grows with the list alone).
            for h in hashes:
                wanted[h] = wanted.get(h, 0) + 1
            if any(self._refs.get(h, 0) < count for h, count in wanted.items()):
                raise ValueError("unpin of a block that is not pinned")
            for h in hashes:
                self._refs[h] -= 1

        def get_kv(self, hashes):
            hashes = self._read(hashes, "get_kv")
            self._log.append(("get_kv", hashes))
            if any(self._refs.get(h, 0) < 1 for h in hashes):
                raise AssertionError("serve called get_kv on a block it had not pinned (pin the reused blocks first)")
            if not hashes:
                return []
            return [tuple(torch.cat([self._kv[h][layer][side] for h in hashes]) for side in (0, 1))
                    for layer in range(len(self._kv[hashes[0]]))]

        def insert(self, hashes, kv):
            hashes, kv = self._read(hashes, "insert"), [tuple(layer) for layer in kv]
            self._log.append(("insert", hashes, [k.shape[0] for k, _ in kv]))
            if self._fail_insert:
                raise RuntimeError("insert failed (the test's cache raises on purpose)")
            for i, h in enumerate(hashes):
                if h not in self._kv:
                    rows = slice(i * self.block_size, (i + 1) * self.block_size)
                    self._kv[h] = [(k[rows].clone(), v[rows].clone()) for k, v in kv]
            return len(hashes)

        def _calls(self, name=None):
            """The calls since the last look (of one method, or all), without those on an empty list
            (serve may make them or not), as (method, hashes), the hashes of pin and unpin sorted (their order within
            one call changes nothing); the log starts again."""
            calls = [(entry[0], sorted(entry[1]) if entry[0] in ("pin", "unpin") else entry[1])
                     for entry in self._log if entry[1] and name in (None, entry[0])]
            self._log.clear()
            return calls

        def pinned(self):
            return sorted(h for h, count in self._refs.items() if count)

    class CountingDecoder(TinyDecoder):
        """A TinyDecoder that records every call as (new tokens, past tokens); every test of serve gives serve one, so
        that the model's class tells serve nothing about which test runs."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._calls = []  # Private: the student's code, which gets the model, cannot rewrite the record.
            self._dtypes = []  # The dtype of the tokens of each call, as a string.

        def forward(self, tokens, past_kv=None, **options):
            # TinyDecoder's keyword arguments (position, return_attention) pass through, as the text's model takes them.
            self._calls.append((len(tokens), 0 if past_kv is None else int(past_kv[0][0].shape[0])))
            self._dtypes.append(str(tokens.dtype) if isinstance(tokens, torch.Tensor) else type(tokens).__name__)
            return super().forward(tokens, past_kv, **options)
    # END SHARED

    model = CountingDecoder(vocab_size=64, num_layers=2, num_heads=2, head_dim=8, seed=0)
    cache = ToyCache(block_size=4)
    first = [3, 14, 15, 9, 26, 5, 35, 8, 9, 7]
    second = first[:8] + [32, 38, 46, 2]
    # Before the calls.
    hashes, second_hashes = full_block_hashes(block_hashes, first, 4), full_block_hashes(block_hashes, second, 4)
    serve(model, cache, list(first))
    inserts = [entry for entry in cache._log if entry[0] == "insert"]
    assert_plain_equal(inserts, [("insert", hashes, [10, 10])],
                       "serve(model, empty cache, 10 tokens): its calls of cache.insert as (name, hashes, tokens of kv "
                       "per layer) (all full-block hashes, with the model's kv of all 10 tokens in both layers)")
    cache._log.clear()
    serve(model, cache, list(second))
    hashes = second_hashes
    assert_plain_equal(cache._calls(), [("match", hashes), ("pin", sorted(hashes[:2])), ("get_kv", hashes[:2]),
                                       ("insert", hashes), ("unpin", sorted(hashes[:2]))],
                       "serve(model, cache, second): its calls of the cache, in order (calls on an empty list left out; "
                       "the hashes of pin and unpin sorted, as their order within one call changes nothing)")
    assert_plain_equal(cache.pinned(), [], "the blocks still pinned after serve returned")
    assert_raises(ValueError, "serve(model, cache, first[:8] + [999]) (token 999 is outside the vocabulary of 64: the "
                  "model raises ValueError, and serve must let it through)", serve, model, cache, first[:8] + [999])
    assert_plain_equal(cache.pinned(), [], "the blocks still pinned after the model raised inside serve (unpin in a "
                       "finally block)")
    cache._fail_insert = True
    assert_raises(RuntimeError, "serve(model, cache whose insert raises RuntimeError, second)", serve, model, cache,
                  list(second))
    assert_plain_equal(cache.pinned(), [], "the blocks still pinned after cache.insert raised inside serve (unpin in a "
                       "finally block)")

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(6333)
    for _block_size in (1, 2, 4):
        _cache = ToyCache(_block_size)
        _seen = set()
        _conversations = [[_rng.randrange(64) for _ in range(_rng.randint(1, 9))] for _ in range(3)]
        for _turn in range(15):
            _c = _rng.randrange(3)
            _tokens = list(_conversations[_c])
            _limit = (len(_tokens) - 1) // _block_size
            _blocks = 0
            while _blocks < _limit and tuple(_tokens[:(_blocks + 1) * _block_size]) in _seen:
                _blocks += 1
            _hashes = full_block_hashes(block_hashes, _tokens, _block_size)
            _reused = _hashes[:_blocks]
            _where = f"serve with block_size {_block_size}, request {_turn} of {len(_tokens)} tokens"
            _failure = _rng.choice([None, None, "model", "insert"])
            if _failure == "model":
                _tokens = _tokens + [10**3]
                _hashes = full_block_hashes(block_hashes, _tokens, _block_size)
                _limit = (len(_tokens) - 1) // _block_size
                while _blocks < _limit and tuple(_tokens[:(_blocks + 1) * _block_size]) in _seen:
                    _blocks += 1
                _reused = _hashes[:_blocks]
                assert_raises(ValueError, f"{_where}, a token outside the vocabulary", serve, model, _cache,
                              list(_tokens))
                _want = [("match", _hashes), ("pin", sorted(_reused)), ("get_kv", _reused),
                         ("unpin", sorted(_reused))]
            elif _failure == "insert":
                _cache._fail_insert = True
                assert_raises(RuntimeError, f"{_where}, insert raises", serve, model, _cache, list(_tokens))
                _cache._fail_insert = False
                _want = [("match", _hashes), ("pin", sorted(_reused)), ("get_kv", _reused), ("insert", _hashes),
                         ("unpin", sorted(_reused))]
            else:
                serve(model, _cache, list(_tokens))
                _want = [("match", _hashes), ("pin", sorted(_reused)), ("get_kv", _reused), ("insert", _hashes),
                         ("unpin", sorted(_reused))]
                for _b in range(1, len(_tokens) // _block_size + 1):
                    _seen.add(tuple(_tokens[:_b * _block_size]))
                _conversations[_c] = _tokens + [_rng.randrange(64) for _ in range(_rng.randint(1, 7))]
            _log = list(_cache._log)
            assert_plain_equal(_cache._calls(), [entry for entry in _want if entry[1]], f"{_where}: the calls of the cache",
                               reveal=False)
            for _entry in _log:
                if _entry[0] == "insert":
                    assert_plain_equal(_entry[2], [len(_tokens)] * 2, f"{_where}: tokens of the kv given to insert",
                                       reveal=False)
            assert_plain_equal(_cache.pinned(), [], f"{_where}: the blocks still pinned afterwards", reveal=False)
    ### END HIDDEN TESTS


_check_task6_3_3_protocol()

# %% [markdown]
# ## Experiment 1: correctness first | 实验 1：先验证正确性
#
# A cache that saves time but changes the output is worthless. We build the course's `TinyDecoder` (random,
# seeded weights: 2 layers, 4 heads of 16 dimensions, a vocabulary of 256) and a multi-turn chat workload from
# `course.traces.chat_sessions`: 16 conversations, each starting with one of 3 shared system prompts of 4 blocks
# and growing by 2 blocks per turn for 4 turns, interleaved at random. Every block id of the trace becomes 16
# fixed token ids. Then every request goes through your `serve` with a 48-block LRU cache, and its logits are
# compared with the logits of the same prompt run without any cache.
#
# 节省时间却改变输出的缓存毫无价值。我们构建课程的 `TinyDecoder`（随机但固定种子的权重：2 层、4 个 16 维的注意力头、词表大小 256），并用 `course.traces.chat_sessions` 生成一个多轮对话工作负载：16 个对话，每个对话以 3 个共享系统提示词之一（4 个块）开始，共 4 轮、每轮增加 2 个块，对话之间随机交错。访问轨迹中的每个块 id 对应 16 个固定的 token id。随后每个请求都通过你的 `serve`（使用 48 块的 LRU 缓存），并把它的 logits 与不使用任何缓存、直接运行同一提示词得到的 logits 比较。

# %%
import random
import statistics
import time

import matplotlib.pyplot as plt

from course.model import TinyDecoder
from course.plots import label
from course.replay import replay
from course.traces import chat_sessions, hash_id_lists, mooncake_or_synthetic

BLOCK_SIZE = 16
VOCAB_SIZE = 256
model = TinyDecoder(vocab_size=VOCAB_SIZE, num_layers=2, num_heads=4, head_dim=16, seed=SEED).to(DEVICE)
chat = chat_sessions(num_sessions=16, turns=4, system_prompts=3, system_prompt_blocks=4, blocks_per_turn=2, seed=SEED)


def block_tokens(block_id, block_size=BLOCK_SIZE):
    """The fixed token ids behind one block id of the trace."""
    rng = random.Random(block_id)
    return [rng.randrange(VOCAB_SIZE) for _ in range(block_size)]


prompts = [[token for block_id in request.hash_ids for token in block_tokens(block_id)] for request in chat]
total_tokens = sum(len(p) for p in prompts)
distinct_blocks = len({block_id for request in chat for block_id in request.hash_ids})
print(f"{len(prompts)} requests, {total_tokens} prompt tokens ({min(map(len, prompts))}-{max(map(len, prompts))} "
      f"each), {distinct_blocks} distinct blocks of {BLOCK_SIZE} tokens")


def no_cache_logits(tokens):
    return model(torch.tensor(tokens, dtype=torch.long, device=DEVICE))[0]


cache = PrefixCache(capacity_blocks=48, block_size=BLOCK_SIZE, policy="lru")
worst = 0.0
reused_total = 0
for tokens in prompts:
    logits, counts = serve(model, cache, tokens)
    reference = no_cache_logits(tokens)[counts["tokens_reused"]:]
    worst = max(worst, float((logits - reference).abs().max()))
    reused_total += counts["tokens_reused"]
assert worst < 1e-4, f"serve changed the logits by up to {worst}"
print(f"every request: logits with reuse == logits without cache (largest difference {worst:.1e}); "
      f"{reused_total} of {total_tokens} prompt tokens were reused")


# %% [markdown]
# The largest difference is zero or a few units of float32 rounding: the reused K/V are exactly the K/V the
# model would have computed, because the chained hash guarantees that the whole prefix is the same and the
# model continues the positions from the length of the reused prefix.
#
# 最大差异为零，或只是几个 float32 舍入单位：被复用的 K/V 与模型自己会算出的 K/V 完全相同，因为链式哈希保证了整个前缀相同，而且模型从被复用前缀的长度处继续为位置编号。
#
# ## Experiment 2: what each policy saves on multi-turn chat | 实验 2：多轮对话中各策略能节省多少
#
# The same requests at several cache capacities (the first printed line above gives the number of distinct blocks),
# with your LRU and LFU, against no cache and against Belady's MIN replayed by `course.replay` on the same block
# hashes. We count the reusable (leading) hit blocks and the prefill tokens computed: these counts are exact, the same
# on every machine, and they are what a policy saves. What that saving is worth in time depends on the device, so we
# also time the model there: inside `serve` with LRU at every capacity, and without a cache (3 runs each,
# interleaved), and fit the cost formula $a + c \cdot (n - r)$ to those runs, which gives this device's $a$ and $c$. We
# also time the cache's own work around the model: hashing every full block, copying K/V out of the cache and into
# it, choosing victims. On a GPU the clock is the wall clock after synchronizing; on a CPU it is the CPU time of this
# thread (the model runs on one thread), which other programs on a busy machine do not stretch the way they stretch
# the wall clock, though they still make it vary from run to run.
#
# 同样的请求，在多个缓存容量下运行（上面第一行输出给出了不同块的数目），使用你的 LRU 和 LFU，并与无缓存以及 `course.replay` 在同一组块哈希上回放的 Belady MIN 比较。我们统计可复用（前导）命中块数和计算的预填充 token 数：这些计数是精确的，在每台机器上都相同，它们就是一个策略省下的东西。这些节省值多少时间取决于设备，所以我们也在设备上为模型计时：在每个容量下、在使用 LRU 的 `serve` 中计时，以及不用缓存时计时（各 3 遍，交错进行），再把代价公式 $a + c \cdot (n - r)$ 拟合到这些测量上，得到本设备的 $a$ 和 $c$。我们还测量模型之外缓存自身的工作：为每个完整块计算哈希、把 K/V 从缓存中复制出来和复制进去、选择受害者。在 GPU 上用同步之后的墙钟时间；在 CPU 上用本线程的 CPU 时间（模型只在一个线程上运行）：繁忙机器上的其他程序不会像拉长墙钟时间那样拉长它，但仍会让它在多次运行之间波动。

# %%
def synchronize():
    """Wait until the GPU has done its queued work (a CPU has nothing to wait for)."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


# The clock of the model's work: see the text above.
model_clock = time.perf_counter if DEVICE.type == "cuda" else time.thread_time
CLOCK = "wall time" if DEVICE.type == "cuda" else "CPU time of this thread"
TIMING_RUNS = 3


class TimedDecoder(TinyDecoder):
    """The decoder above (same arguments, same weights); each call adds its time to ``seconds``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seconds = 0.0

    def forward(self, tokens, past_kv=None, **options):
        synchronize()
        started = model_clock()
        result = super().forward(tokens, past_kv, **options)
        synchronize()
        self.seconds += model_clock() - started
        return result


timed_model = TimedDecoder(vocab_size=VOCAB_SIZE, num_layers=2, num_heads=4, head_dim=16, seed=SEED).to(DEVICE)


def run_policy(policy, capacity):
    """Serve every prompt through a fresh cache: the counts, and the model's and serve's time per request (ms)."""
    cache = PrefixCache(capacity_blocks=capacity, block_size=BLOCK_SIZE, policy=policy)
    timed_model.seconds = 0.0
    synchronize()
    started = model_clock()
    per_request = [serve(timed_model, cache, tokens)[1] for tokens in prompts]
    synchronize()
    stats = cache.stats
    return {"hits": stats["hits"], "references": stats["hits"] + stats["misses"], "per_request": per_request,
            "computed": sum(c["tokens_computed"] for c in per_request),
            "model_ms": timed_model.seconds * 1000 / len(prompts),
            "serve_ms": (model_clock() - started) * 1000 / len(prompts)}


def run_no_cache():
    """The model alone on every whole prompt: its time per request (ms)."""
    timed_model.seconds = 0.0
    for tokens in prompts:
        timed_model(torch.tensor(tokens, dtype=torch.long, device=DEVICE))
    return timed_model.seconds * 1000 / len(prompts)


timed_model(torch.tensor(prompts[0], device=DEVICE))  # Warm-up.
CAPACITIES = [8, 16, 32, 64, 128]
POLICIES = ["lru", "lfu"]
# The counts, once per policy and capacity; then more timed runs of LRU and of no cache, interleaved so that a
# slow minute of a shared machine does not fall on one capacity only.
results = {(policy, capacity): run_policy(policy, capacity) for capacity in CAPACITIES for policy in POLICIES}
lru_runs = {capacity: [results["lru", capacity]] for capacity in CAPACITIES}
no_cache_runs = [run_no_cache()]
for _ in range(TIMING_RUNS - 1):
    no_cache_runs.append(run_no_cache())
    for capacity in CAPACITIES:
        lru_runs[capacity].append(run_policy("lru", capacity))
no_cache_ms = statistics.median(no_cache_runs)
measured = {c: sorted(run["model_ms"] for run in runs) for c, runs in lru_runs.items()}
cache_work_ms = statistics.median(run["serve_ms"] - run["model_ms"] for runs in lru_runs.values() for run in runs)
# The cost formula a + c * (tokens computed per request), fitted by least squares to every timed run.
tokens_per_request = [total_tokens / len(prompts)] * len(no_cache_runs) + [
    results["lru", c]["computed"] / len(prompts) for c in CAPACITIES for _ in lru_runs[c]]
model_ms_per_request = no_cache_runs + [run["model_ms"] for c in CAPACITIES for run in lru_runs[c]]
cost_c, cost_a = statistics.linear_regression(tokens_per_request, model_ms_per_request)
chat_hashes = [block_hashes(tokens, BLOCK_SIZE) for tokens in prompts]
belady = {capacity: replay(chat_hashes, capacity, "belady") for capacity in CAPACITIES}


def modelled_ms(computed):
    """The cost formula's prefill time per request (ms) for ``computed`` tokens over all requests."""
    return cost_a + cost_c * computed / len(prompts)


print(f"{'capacity':>8} | {'LRU hits':>8} {'LFU hits':>8} {'Belady':>7} | {'LRU/Belady':>10} {'LFU/Belady':>10} | "
      f"{'tokens computed LRU':>19} {'LFU':>6} {'no cache':>8}")
for capacity in CAPACITIES:
    lru, lfu, best = results["lru", capacity], results["lfu", capacity], belady[capacity].prefix_hit_blocks
    print(f"{capacity:>8} | {lru['hits']:>8} {lfu['hits']:>8} {best:>7} | {lru['hits'] / best:>10.0%} "
          f"{lfu['hits'] / best:>10.0%} | {lru['computed']:>19} {lfu['computed']:>6} {total_tokens:>8}")

fig, axes = plt.subplots(1, 3, figsize=(15, 4))
references = results["lru", CAPACITIES[0]]["references"]
for policy, marker in zip(POLICIES, "os"):
    axes[0].plot(CAPACITIES, [results[policy, c]["hits"] / references for c in CAPACITIES], marker=marker,
                 label=policy.upper())
    axes[1].plot(CAPACITIES, [results[policy, c]["computed"] for c in CAPACITIES], marker=marker, label=policy.upper())
    axes[2].plot(CAPACITIES, [modelled_ms(results[policy, c]["computed"]) for c in CAPACITIES], marker=marker,
                 label=label(f"{policy.upper()}: cost formula", f"{policy.upper()}：代价公式"))
axes[0].plot(CAPACITIES, [belady[c].prefix_hit_ratio for c in CAPACITIES], "k--", marker="^",
             label=label("Belady (MIN)", "Belady（MIN）"))
axes[1].axhline(total_tokens, color="gray", linestyle=":", label=label("no cache", "无缓存"))
axes[2].axhline(modelled_ms(total_tokens), color="gray", linestyle=":",
                label=label("no cache: cost formula", "无缓存：代价公式"))
medians = [statistics.median(measured[c]) for c in CAPACITIES]
axes[2].errorbar(CAPACITIES, medians, yerr=[[m - measured[c][0] for m, c in zip(medians, CAPACITIES)],
                                            [measured[c][-1] - m for m, c in zip(medians, CAPACITIES)]],
                 fmt="x", color="black", capsize=3, label=label("LRU: measured in serve", "LRU：serve 中的实测值"))
axes[2].axhline(no_cache_ms, color="gray", linestyle="-", linewidth=0.8,
                label=label("no cache: measured", "无缓存：实测值"))
titles = [label("Reusable hit ratio (leading blocks)", "可复用命中率（前导块）"),
          label("Prefill tokens computed", "计算的预填充 token 数"),
          label(f"Model time per request on {DEVICE.type}", f"{DEVICE.type} 上每个请求的模型时间")]
ylabels = [label("hits / full blocks requested", "命中块数 / 请求的完整块数"), label("tokens", "token 数"),
           label(f"milliseconds ({CLOCK})", "毫秒")]
for ax, title, ylabel in zip(axes, titles, ylabels):
    ax.set_xscale("log", base=2)
    ax.set_xticks(CAPACITIES, [str(c) for c in CAPACITIES])
    ax.set_xlabel(label("cache capacity (blocks of 16 tokens)", "缓存容量（块，每块 16 个 token）"))
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
axes[2].set_ylim(bottom=0)
plt.tight_layout()
plt.show()

print(f"the model on {DEVICE.type} ({CLOCK}), the cost formula fitted to {len(model_ms_per_request)} timed runs: "
      f"a = {cost_a:.2f} ms per call + c = {cost_c * 1000:.1f} µs per token computed; without a cache a request of "
      f"{total_tokens // len(prompts)} tokens costs {cost_a:.2f} + {cost_c * total_tokens / len(prompts):.2f} ms")
for capacity in CAPACITIES:
    lru, lfu, best = results["lru", capacity], results["lfu", capacity], belady[capacity].prefix_hit_blocks
    print(f"capacity {capacity:>3}: LRU gets {lru['hits'] / best:.0%} and LFU {lfu['hits'] / best:.0%} of Belady's "
          f"reusable hits; LRU computes {lru['computed'] / total_tokens:.0%} of the no-cache tokens; by the cost "
          f"formula that takes {modelled_ms(lru['computed']) / modelled_ms(total_tokens):.0%} of the no-cache time; "
          f"measured: {statistics.median(measured[capacity]) / no_cache_ms:.0%} "
          f"(runs {measured[capacity][0] / no_cache_ms:.0%} to {measured[capacity][-1] / no_cache_ms:.0%})")
worth = [c for c in CAPACITIES if cost_c * (total_tokens - results["lru", c]["computed"]) / len(prompts) > cache_work_ms]
print(f"the cache's own work (hashing, copies, victims) took {cache_work_ms:.2f} ms per request, the cost of "
      f"{cache_work_ms / max(cost_c, 1e-9):.0f} tokens of prefill here; by the cost formula, the tokens LRU saved were "
      f"worth more than that at capacities {worth or 'none'}")

# %% [markdown]
# Read the three panels together. Tokens computed fall as the hit ratio rises: each hit block is 16 tokens not
# computed. The third panel puts a time on them. The crosses are the model's time measured inside `serve` (the
# median of the runs; the bars span the fastest and the slowest run); the lines are the cost formula fitted to those
# runs, with this device's $a$ and $c$ (the first printed line), for the tokens each policy computes. The time falls
# with the tokens computed, but not in proportion, because every request still pays the fixed cost $a$ of calling
# the model, however few tokens it computes; this tiny model does little work per token, so $a$ is a large part of
# its prefill. On a shared machine the crosses scatter around the line from run to run, and their exact shape is
# noise: compare them with the line, not with each other. On a GPU this
# tiny model is nearly all fixed cost, so its time hardly moves with the tokens; Experiment 4 times a larger model
# there. The last printed line weighs the cache's own work, which a prefill without cache never does, against the
# prefill the cache saves: with a model this small, a cache that hits little can cost more time than it saves.
# Serving a real model, a prefill of thousands of tokens takes tens to hundreds of milliseconds on a GPU while the
# cache's work stays small, and the time saved follows the tokens saved. That is why the hit counts and the tokens
# computed, exact on every machine, are the measure of a policy; the times say what this device makes of them.
#
# The printed lines also say what fraction of the possible saving (Belady's reusable hits) each policy gets. On this
# workload LFU does at least as well as LRU: every turn of a conversation re-reads its whole history, so the blocks
# of conversations in progress collect use counts, while the newest blocks of a conversation (use count 1) are the
# first to go. LFU's known weakness (notebook 03) is the other side of the same rule: blocks of finished
# conversations keep their high counts and can squat in the cache on a longer trace. With enough capacity for the
# whole working set every policy reaches the ceiling. Belady's MIN is replayed block by block and is not bound by the
# leaf-first rule, so it is a ceiling, not a policy a server can run.
#
# 把三幅图放在一起看。命中率上升时，计算的 token 数下降：每个命中块就是 16 个不必计算的 token。第三幅图给这些 token 标上时间。叉号是在 `serve` 中实测的模型时间（多次运行的中位数；竖线从最快的一次延伸到最慢的一次）；几条线是拟合到这些测量上的代价公式 $a + c \cdot (n - r)$，用的是本设备的 $a$ 和 $c$（第一行输出），按每个策略计算的 token 数画出。时间随计算的 token 数下降，但下降的比例没有 token 数那么大，因为无论一个请求计算的 token 多么少，它都要付调用模型的固定开销 $a$；这个很小的模型每个 token 的计算量很少，所以 $a$ 占了它预填充时间的很大一部分。在共享机器上，叉号每次运行都会在线的周围波动，它们的具体形状只是噪声：应当把它们与线比较，而不是彼此比较。在 GPU 上，这个小模型几乎全是固定开销，它的时间几乎不随 token 数变化；实验 4 在 GPU 上改用一个更大的模型来计时。
# 最后一行输出把缓存自身的工作（不用缓存的预填充从来不做这些）与缓存省下的预填充作比较：模型这么小时，一个命中很少的缓存花掉的时间可能比它省下的还多。服务真实模型时，在 GPU 上预填充数千个 token 需要几十到几百毫秒，而缓存自身的工作仍然很少，所以省下的时间与省下的 token 数成正比。正因如此，衡量一个策略要看命中块数和计算的 token 数（它们在每台机器上都精确相同）；时间说明的是本设备如何体现这些数字。
#
# 输出的各行还给出了每个策略拿到了可能节省量（Belady 的可复用命中）的多少比例。在这个工作负载上，LFU 至少与 LRU 一样好：对话的每一轮都会重新读取整个历史，因此进行中的对话的块不断累积使用次数，而对话最新的块（使用次数为 1）最先被驱逐。LFU 的已知弱点（notebook 03）正是同一规则的另一面：已结束对话的块保留着较高的使用次数，在更长的访问轨迹上可能长期占据缓存。
# 容量足以容纳整个工作集时，每个策略都能达到上限。Belady MIN 是逐块回放的，不受“先驱逐叶子”规则的约束，所以它是上限，而不是服务器能运行的策略。
#
# Explore: pick a policy and a capacity to see, request by request, how many tokens were reused and computed.
#
# 动手探索：选择策略和容量，逐个请求查看复用和计算的 token 数。

# %%
import ipywidgets as widgets
from IPython.display import display

policy_choice = widgets.Dropdown(options=POLICIES, value="lru", description="policy")
capacity_choice = widgets.SelectionSlider(options=CAPACITIES, value=32, description="capacity")
request_plot = widgets.Output()


def draw_requests(change=None):
    counts = results[policy_choice.value, capacity_choice.value]["per_request"]
    with request_plot:
        request_plot.clear_output(wait=True)
        fig, ax = plt.subplots(figsize=(10, 3))
        index = range(len(counts))
        reused = [c["tokens_reused"] for c in counts]
        ax.bar(index, reused, label=label("reused (from the cache)", "复用（来自缓存）"))
        ax.bar(index, [c["tokens_computed"] for c in counts], bottom=reused,
               label=label("computed (prefill)", "计算（预填充）"))
        ax.set_xlabel(label("request (arrival order)", "请求（到达顺序）"))
        ax.set_ylabel(label("prompt tokens", "提示 token 数"))
        ax.set_title(label(f"{policy_choice.value.upper()}, {capacity_choice.value} blocks: "
                           f"{sum(reused)} of {total_tokens} tokens reused",
                           f"{policy_choice.value.upper()}，{capacity_choice.value} 块：{total_tokens} 个 token 中复用了 "
                           f"{sum(reused)} 个"))
        ax.legend()
        plt.show()


policy_choice.observe(draw_requests, names="value")
capacity_choice.observe(draw_requests, names="value")
draw_requests()
display(widgets.VBox([widgets.HBox([policy_choice, capacity_choice]), request_plot]))

# %% [markdown]
# ## Experiment 3: the production-scale picture (Mooncake) | 实验 3：生产规模的情形（Mooncake）
#
# Mooncake, the serving platform of Kimi (Qin et al., FAST 2025), published a synthetic trace
# (`synthetic_trace.jsonl` in its FAST'25 release) in which every request lists the hash ids of its prompt's blocks
# of 512 tokens, so equal ids are shared prefix blocks. No model runs here: your `PrefixCache` only needs K/V tensors
# with zero bytes per block to replay the trace's metadata. The cell downloads Mooncake's published synthetic trace
# when a network is available; otherwise it uses a stand-in that `course.traces` generates in the same format, and
# **says so in its first printed line**. Each request is matched and then inserted, as `serve` would.
#
# Mooncake 是 Kimi 的推理服务平台（Qin 等，FAST 2025），它公开发布了一条合成访问轨迹（FAST'25 发布中的 `synthetic_trace.jsonl`）：每个请求列出其提示词中每 512 个 token 一块的哈希 id，相同的 id 就是共享的前缀块。这里不运行模型：你的 `PrefixCache` 只需每块零字节的 K/V 张量，就能回放这条访问轨迹的元数据。有网络时，本单元下载 Mooncake 公开的合成访问轨迹；否则改用 `course.traces` 生成的、格式相同的替代访问轨迹，并**在第一行输出中说明**。每个请求先 match 再 insert，与 `serve` 的做法相同。

# %%
trace, trace_note = mooncake_or_synthetic(limit=1000, timeout=5.0)
published = trace_note.startswith("Mooncake")  # Otherwise course.traces generated a stand-in.
print(trace_note)
trace_hashes = hash_id_lists(trace)
MOONCAKE_TOKENS_PER_BLOCK = 512
references = sum(len(h) for h in trace_hashes)
print(f"{len(trace_hashes)} requests, {references} block references, "
      f"{len({b for h in trace_hashes for b in h})} distinct blocks")


def replay_prefix_cache(policy, capacity, deadline):
    """Match, then insert, every request; K/V of zero bytes (metadata only). None if past the deadline."""
    cache = PrefixCache(capacity_blocks=capacity, block_size=1, policy=policy)
    for hashes in trace_hashes:
        cache.match(hashes)
        empty = torch.empty(len(hashes), 1, 0)
        cache.insert(hashes, [(empty, empty)])
        if time.thread_time() > deadline:
            return None
    return cache.stats["hits"]


# A victim search that scans every cached block costs O(capacity) per eviction; give the replays 20 seconds of
# CPU time in all (a busy machine does not shorten that) and plot what finished.
MOONCAKE_CAPACITIES = [250, 500, 1000, 2000, 4000]
deadline = time.thread_time() + 20.0
mooncake = {(policy, c): replay_prefix_cache(policy, c, deadline) for c in MOONCAKE_CAPACITIES for policy in POLICIES}
if any(hits is None for hits in mooncake.values()):
    print("Your PrefixCache needed more than 20 s of CPU time, so the larger capacities are left out. Look for a victim "
          "among self._leaves only (not among every cached block).")
MOONCAKE_CAPACITIES = [c for c in MOONCAKE_CAPACITIES if all(mooncake[p, c] is not None for p in POLICIES)]
mooncake_belady = {c: replay(trace_hashes, c, "belady") for c in MOONCAKE_CAPACITIES}

fig, ax = plt.subplots(figsize=(7, 4))
for policy, marker in zip(POLICIES, "os"):
    ax.plot(MOONCAKE_CAPACITIES, [mooncake[policy, c] / references for c in MOONCAKE_CAPACITIES], marker=marker,
            label=label(f"your {policy.upper()} (leaf-first)", f"你的 {policy.upper()}（先驱逐叶子）"))
ax.plot(MOONCAKE_CAPACITIES, [mooncake_belady[c].prefix_hit_ratio for c in MOONCAKE_CAPACITIES], "k--", marker="^",
        label=label("Belady (MIN)", "Belady（MIN）"))
ax.set_xscale("log", base=2)
ax.set_xticks(MOONCAKE_CAPACITIES, [str(c) for c in MOONCAKE_CAPACITIES])
ax.set_xlabel(label("cache capacity (blocks of 512 tokens)", "缓存容量（块，每块 512 个 token）"))
ax.set_ylabel(label("reusable hit ratio (leading blocks)", "可复用命中率（前导块）"))
ax.set_title(label("Mooncake's published synthetic trace", "Mooncake 公开的合成访问轨迹") if published else
             label("GENERATED stand-in for Mooncake's synthetic trace", "生成的替代访问轨迹（不是 Mooncake 的）"))
ax.legend()
plt.tight_layout()
plt.show()
for c in MOONCAKE_CAPACITIES:
    best = mooncake_belady[c].prefix_hit_blocks
    print(f"capacity {c:>5} blocks ({c * MOONCAKE_TOKENS_PER_BLOCK / 1e6:.1f} M tokens): LRU skips the prefill of "
          f"{mooncake['lru', c] * MOONCAKE_TOKENS_PER_BLOCK / 1e6:.1f} M tokens, LFU "
          f"{mooncake['lfu', c] * MOONCAKE_TOKENS_PER_BLOCK / 1e6:.1f} M, Belady {best * MOONCAKE_TOKENS_PER_BLOCK / 1e6:.1f} M "
          f"(LRU gets {mooncake['lru', c] / best:.0%} of it, LFU {mooncake['lfu', c] / best:.0%})")

# %% [markdown]
# At production scale the same picture holds: the cache capacity decides most of the hit ratio, and the policy
# decides how close to the ceiling a given capacity gets. Every hit block is 512 tokens of prefill a GPU does not
# compute. Mooncake's published trace is synthetic (its file is `synthetic_trace.jsonl`), not a log of real requests.
# If the first printed line says the trace was generated here, these numbers describe that stand-in, not Mooncake's
# published trace.
#
# 在生产规模下结论相同：缓存容量决定了命中率的大部分，而策略决定在给定容量下离上限有多近。每个命中块都是 GPU 不必计算的 512 个 token 的预填充。Mooncake 公开的访问轨迹是合成的（文件名就是 `synthetic_trace.jsonl`），不是真实请求的日志。如果第一行输出说明访问轨迹是在这里生成的，这些数字描述的就是那条替代访问轨迹，而不是 Mooncake 公开的访问轨迹。
#
# ## Experiment 4: time saved per request | 实验 4：每个请求节省的时间
#
# Prefill time is what the user waits for before the first token (time to first token). Each request of the chat
# workload goes through `serve` with a large cache; then we time the model's prefill of the whole prompt and its
# prefill of the remaining tokens after the K/V that your cache returns (the median of 3 runs each, with the clock of
# Experiment 2), on this notebook's device. On a GPU the model is made larger (8 layers, 16 heads of 64 dimensions)
# and the blocks longer (64 tokens), so that prefill is real work for the GPU; on a CPU the small model of
# Experiment 1 is used. The output says which.
#
# 预填充时间就是用户在看到第一个 token 之前等待的时间（首 token 时延）。对话工作负载中的每个请求先通过使用大缓存的 `serve`；然后在本 notebook 的设备上分别为模型对整个提示词的预填充，以及在你的缓存返回的 K/V 之后只对其余 token 的预填充计时（各取 3 次运行的中位数，时钟与实验 2 相同）。在 GPU 上，模型更大（8 层、16 个 64 维的注意力头），块也更长（64 个 token），使预填充对 GPU 来说是真正的计算量；在 CPU 上使用实验 1 的小模型。输出会说明用的是哪一种。

# %%
if DEVICE.type == "cuda":
    timing_model = TinyDecoder(vocab_size=VOCAB_SIZE, num_layers=8, num_heads=16, head_dim=64, seed=SEED).to(DEVICE)
    timing_block_size = 64
else:
    timing_model, timing_block_size = model, BLOCK_SIZE
timing_prompts = [[t for block_id in request.hash_ids for t in block_tokens(block_id, timing_block_size)]
                  for request in chat]


def timed(function, *args):
    """The median time of TIMING_RUNS calls, in milliseconds, by the clock of Experiment 2."""
    times = []
    for _ in range(TIMING_RUNS):
        synchronize()
        started = model_clock()
        function(*args)
        synchronize()
        times.append((model_clock() - started) * 1000)
    return statistics.median(times)


for tokens in timing_prompts[:3]:
    timing_model(torch.tensor(tokens, dtype=torch.long, device=DEVICE))  # Warm-up.
timing_cache = PrefixCache(capacity_blocks=10_000, block_size=timing_block_size, policy="lru")
saved_ms, reused_tokens, full_ms = [], [], []
for tokens in timing_prompts:
    _, counts = serve(timing_model, timing_cache, tokens)  # Fills the cache, as a server would.
    reused = counts["tokens_reused"]
    ids = torch.tensor(tokens, dtype=torch.long, device=DEVICE)
    prefix_kv = timing_cache.get_kv(block_hashes(tokens, timing_block_size)[:reused // timing_block_size]) or None
    without = timed(timing_model, ids)
    with_reuse = timed(timing_model, ids[reused:], prefix_kv)
    full_ms.append(without)
    saved_ms.append(without - with_reuse)
    reused_tokens.append(reused)

if DEVICE.type == "cuda":
    where = f"cuda ({torch.cuda.get_device_name(DEVICE)}, wall time)"
    where_zh = f"cuda（{torch.cuda.get_device_name(DEVICE)}，墙钟时间）"
else:
    where, where_zh = "cpu (1 thread, CPU time)", "cpu（1 个线程，CPU 时间）"
fig, ax = plt.subplots(figsize=(7, 4))
ax.scatter(reused_tokens, saved_ms, alpha=0.7, label=label("one request", "一个请求"))
ax.axhline(0, color="gray", linewidth=0.8)
ax.set_xlabel(label("prompt tokens reused from the cache", "从缓存复用的提示 token 数"))
ax.set_ylabel(label("prefill time saved (ms)", "节省的预填充时间（毫秒）"))
ax.set_title(label(f"Time saved per request, measured on {where}", f"每个请求节省的时间，测量于 {where_zh}"))
ax.legend()
plt.tight_layout()
plt.show()
hits = [s for s, r in zip(saved_ms, reused_tokens) if r > 0]
slope, _ = statistics.linear_regression(reused_tokens, saved_ms)
print(f"measured on {where}, median of {TIMING_RUNS} runs per prefill: {len(hits)} of {len(saved_ms)} requests reused "
      f"a prefix; they saved {sum(hits) / max(1, len(hits)):.2f} ms of prefill each on average, out of "
      f"{sum(full_ms) / len(full_ms):.2f} ms for a prefill without cache (the cache's own work not included); each "
      f"reused token saved about {slope * 1000:.1f} µs (the slope of a least-squares line through the points)")

# %% [markdown]
# The saving grows with the tokens reused, as the cost formula says: the printed slope is what one reused token
# saves on this device, and the points scatter around that line because single timings on a shared machine vary.
# With the tiny model on a CPU the absolute numbers are small (a prefill takes milliseconds); on a GPU serving a real
# model, the prefill of thousands of tokens takes tens to hundreds of milliseconds, and prefix caching is one of the
# main ways chat servers keep the time to first token low.
#
# 节省量随复用的 token 数增长，正如代价公式所示：输出的斜率就是在本设备上每复用一个 token 省下的时间；由于共享机器上单次计时会波动，这些点散布在这条直线周围。在 CPU 上使用这个很小的模型时，绝对数值很小（一次预填充只需几毫秒）；在 GPU 上服务真实模型时，数千个 token 的预填充需要几十到几百毫秒，而前缀缓存是对话服务器降低首 token 时延的主要手段之一。

# %% [markdown]
# ## Summary | 小结
#
# **Remember:** a prefix cache reuses K/V only through chained hashes of full blocks, so a hit always means the
# whole prefix matched and the output cannot change; its eviction policy, applied to unpinned leaves only, decides
# how much prefill the server skips, and the tokens not computed, not a CPU's timer, are the measure of it.
#
# **一句话记住：** 前缀缓存只通过完整块的链式哈希复用 K/V，所以一次命中总意味着整个前缀都相同、输出不可能改变；它的驱逐策略（只作用于未被固定的叶子）决定了服务器能跳过多少预填充，衡量它的是没有计算的 token 数，而不是 CPU 上的计时。
#
# This is the last notebook of the course. Go back to [01. Eviction as ranking](../01_eviction_as_ranking/01_eviction_as_ranking.ipynb)
# to see how far the one formula $\text{victim} = \arg\min_s \text{Value}(s)$ has carried you.
#
# 这是本课程的最后一个 notebook。回到 [01. 驱逐即排序](../01_eviction_as_ranking/01_eviction_as_ranking.ipynb)，看看公式 $\text{受害者} = \arg\min_s \text{价值}(s)$ 带你走了多远。
#
# ## Prerequisites and further reading | 前置与相关阅读
#
# - Before: [02. Paged KV cache](../02_paged_kv_cache/02_paged_kv_cache.ipynb) (blocks, reference counts, sharing) and
#   [03. LRU and LFU](../03_lru_lfu/03_lru_lfu.ipynb) (the keys $(t_\text{last}, \text{id})$ and
#   $(\text{use\_count}, t_\text{last}, \text{id})$ that `_victim` uses).
# - Further: vLLM's documentation, "Automatic Prefix Caching" (the hash of the parent block and the tokens, the
#   free-block queue, tail-first freeing); SGLang's RadixAttention (a radix tree of prefixes, leaf eviction,
#   `lock_ref`); Mooncake (prefix caching across machines, with K/V kept in host memory and on SSD).
#
# - 先修：[02. 分页 KV 缓存](../02_paged_kv_cache/02_paged_kv_cache.ipynb)（块、引用计数、共享）和 [03. LRU 与 LFU](../03_lru_lfu/03_lru_lfu.ipynb)（`_victim` 用到的键 $(t_\text{last}, \text{id})$ 和 $(\text{use\_count}, t_\text{last}, \text{id})$）。
# - 延伸：vLLM 文档 "Automatic Prefix Caching"（父块哈希加 token 的哈希、空闲块队列、从尾部开始释放）；SGLang 的 RadixAttention（前缀的基数树、只驱逐叶子、`lock_ref`）；Mooncake（跨机器的前缀缓存，K/V 保存在主机内存和 SSD 上）。
#
# ## References | 参考文献
#
# - Kwon, W., et al. "Efficient Memory Management for Large Language Model Serving with PagedAttention." SOSP 2023 (vLLM); vLLM documentation, "Automatic Prefix Caching".
# - Zheng, L., et al. "SGLang: Efficient Execution of Structured Language Model Programs." NeurIPS 2024 (RadixAttention).
# - Qin, R., et al. "Mooncake: Trading More Storage for Less Computation — A KVCache-centric Architecture for Serving LLM Chatbot." FAST 2025. Its trace release includes `synthetic_trace.jsonl` (github.com/kvcache-ai/Mooncake), the synthetic trace of Experiment 3.
# - Belady, L. A. "A study of replacement algorithms for a virtual-storage computer." *IBM Systems Journal* 5(2), 1966.
# - Vaswani, A., et al. "Attention Is All You Need." NeurIPS 2017 (the decoder and its sinusoidal positions).
# - The seed designs: the "KV Eviction formula-to-code" walkthrough (LLM-REVIEW) and the "KV Cache Scheduling" chapter of Datawhale's llm-algo-leetcode (text CC BY 4.0, code Apache-2.0).
