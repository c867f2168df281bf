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
# [![ModelScope](https://img.shields.io/badge/ModelScope-Open%20from%20URL-624aff)](https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/06_prefix_cache/06_prefix_cache.ipynb)
# [![GitHub](https://img.shields.io/badge/GitHub-release%2F06_prefix_cache-black)](https://github.com/kvcache-course/kv-cache-eviction/blob/main/release/06_prefix_cache/06_prefix_cache.ipynb)
#
# **Difficulty:** ★★★ advanced · **Time:** about 120 minutes · **Points:** 28 · **GPU:** task tests run on CUDA too when a GPU is present; Experiment 4 times prefill on the GPU when there is one, otherwise on the CPU (said in its output).
#
# **难度：** ★★★ 进阶 · **用时：** 约 120 分钟 · **总分：** 28 · **GPU：** 有 GPU 时各任务的测试也在 CUDA 上运行；实验 4 在有 GPU 时于 GPU 上计时预填充，否则在 CPU 上计时（其输出会说明）。
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
# This is the capstone: your eviction policies now decide how much **prefill** a server skips. After this
# notebook you can:
# 1. hash a prompt block by block so that one hash names a whole prefix (chained hashing, as vLLM does);
# 2. keep a cache of real K/V tensors with reference counts and LRU/LFU eviction that removes **leaves first**;
# 3. serve a request: reuse the longest cached prefix, run the model only on the rest, and show that the
#    logits do not change;
# 4. measure prefill tokens, hit ratio and time per policy against no cache and against Belady's optimum.
#
# 完成本 notebook 后（这是本课程的综合练习：你的驱逐策略现在决定服务器能跳过多少 **prefill**），你能够：
# 1. 按块对提示词做哈希，使一个哈希值代表整个前缀（链式哈希，与 vLLM 的做法相同）；
# 2. 维护一个存放真实 K/V 张量的缓存，带引用计数，并用 LRU/LFU 做**先叶子后父节点**的驱逐；
# 3. 服务一个请求：复用最长的已缓存前缀，只对其余部分运行模型，并证明 logits 不变；
# 4. 按策略测量 prefill token 数、命中率和时间，并与无缓存和 Belady 最优解比较。
#
# ## The formulas | 公式
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
# part dominates:
#
# $$\text{prefill time} \approx c \cdot (n - r), \qquad \text{saving} = \frac{\sum r}{\sum n}.$$
#
# **What a policy achieves.** Belady's MIN, which knows the future, is the ceiling. We report for each
# policy the fraction of Belady's reusable (leading) hit blocks it gets:
# $\text{fraction} = \text{hits}_\text{policy} / \text{hits}_\text{Belady}$.
#
# **链式块哈希。** 把提示词 $t_0 t_1 \dots t_{n-1}$ 切成每块 $B$ 个 token 的块，第 $j$ 块的哈希如上式，其中
# $h_{-1}$ 为 salt。于是 $h_j$ 依赖第 $0..j$ 块的**全部** token：命中 $h_k$ 意味着长度为 $(k+1)B$ 的整个前缀都相同，
# 其下存放的 K/V 正是该请求自己会算出的 K/V。只有 $\lfloor n/B \rfloor$ 个完整块有哈希。
#
# **Prefill 代价。** 一个有 $n$ 个提示 token、前 $r$ 个命中缓存的请求只需计算 $n - r$ 个 token。每层的投影和 MLP
# 代价 $\propto n - r$；注意力代价 $\propto (n-r)\,n$（新 token 仍要关注被复用的 token）。对这里的短提示词，线性部分占主导，
# 因此 prefill 时间约为 $c \cdot (n - r)$，节省比例为 $\sum r / \sum n$。
#
# **策略能做到多少。** 知道未来的 Belady MIN 是上限。对每个策略，我们报告它拿到了 Belady 可复用（前导）命中块的多少比例：
# $\text{fraction} = \text{hits}_\text{policy} / \text{hits}_\text{Belady}$。

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
# **链式哈希。** vLLM 的自动前缀缓存用"父块哈希 + 本块 token"的哈希来命名每个完整 KV 块（Kwon 等，SOSP 2023；vLLM
# 文档 "Automatic Prefix Caching"）。由于父块哈希被包含在内，位于不同位置的两个相同块（如 "the the the ..."）会得到不同的哈希，
# 查找时可以逐块前进、在第一个未命中处停止。SGLang 的 RadixAttention 用一棵基于 token 序列的基数树保存同样的信息
# （Zheng 等，NeurIPS 2024）。哈希在每个进程中都必须相同：Python 对 `str` 的 `hash()` 在每个进程中加了随机盐
# （`PYTHONHASHSEED`），两个 worker 或重启后的同一 worker 会得到不同结果。vLLM 用 SHA-256 对块做哈希（其 `prefix_caching_hash_algo` 设置），
# 它也能抵御刻意构造的碰撞。
#
# **只缓存完整块。** 块是分配与共享的单位。请求的最后一个不完整块仍在被写入（后续的提示 token 或解码 token 会落在其中），
# 它的哈希在写满之前也不是最终值。共享它会让一个请求的新 token 泄漏到另一个请求的缓存中，因此只缓存完整块；不完整的尾部总是重新计算。
#
# **引用计数与固定（pin）。** 请求运行期间，注意力内核会读取它的已缓存前缀。每个运行中的请求对其使用的每个块持有一个引用
# （`ref_count`）；`ref_count > 0` 的块被**固定**，绝不会被驱逐。vLLM 只把 `ref_cnt == 0` 的块放进空闲块队列；
# SGLang 的基数树为每个节点维护 `lock_ref`。
#
# **先驱逐叶子。** 只有当一个块之前的所有块都命中时，它才可能被命中，因为查找在第一个未命中处停止。因此驱逐父块会让其子块
# "搁浅"：它们仍占内存，却再也无法被访问。所以缓存只驱逐没有任何已缓存块链接在其后的块（前缀树的叶子）。vLLM 释放已完成请求的
# 块时从尾部开始，使前缀的末尾先于开头被驱逐；SGLang 只驱逐基数树的叶子，并用按最近访问时间排序的堆在叶子中选择。

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
# So `block_hashes([1, 2], 2) == [6944296732933707688]`. Tokens after the last full block get no hash. Return a list of Python
# ints (`[]` when there is no full block); do not change `tokens`. Raise `TypeError` when `block_size`, `salt`
# or a token is not an `int`, and `ValueError` when `block_size < 1`.
#
# Hint: never use Python's `hash()` on a string (it changes from process to process). `int.from_bytes(digest[:8], "big")`.
#
# ## 任务 6.1：block_hashes（6 分）
#
# 编写 `block_hashes(tokens, block_size, salt=0)`：按顺序为每个**完整**块返回一个哈希。$H$ 是固定的，以便所有进程、所有机器
# 和测试得到相同结果：
#
# 1. 用十进制写出 $h_{j-1}$ 和该块的 token id，用逗号连接：父哈希 `0` 与块 `[1, 2]` 得到文本 `"0,1,2"`；
# 2. 对该文本的 ASCII 字节求 SHA-256 摘要（`hashlib.sha256(text.encode("ascii")).digest()`）；
# 3. 把摘要的前 8 个字节按大端无符号整数读出，再右移一位（得到永不为负的 63 位整数）：这就是 $h_j$，也是下一块的父哈希。
#
# 因此 `block_hashes([1, 2], 2) == [6944296732933707688]`。最后一个完整块之后的 token 没有哈希。返回由 Python int 组成的列表（没有完整块时为 `[]`）；
# 不要修改 `tokens`。当 `block_size`、`salt` 或某个 token 不是 `int` 时抛出 `TypeError`；当 `block_size < 1` 时抛出 `ValueError`。
#
# 提示：绝不要对字符串使用 Python 的 `hash()`（它在不同进程中会变化）。`int.from_bytes(digest[:8], "big")`。

# %% nbgrader={"grade": false, "grade_id": "task6_1_block_hashes", "locked": false, "schema_version": 3, "solution": true, "task": false}
import hashlib


def block_hashes(tokens, block_size, salt=0):
    """Return one chained hash per full block of ``tokens``.

    h_j = H(h_{j-1}, tokens of block j) with h_{-1} = salt, where H(parent, block) is the first
    8 bytes (big-endian) of sha256 over the ASCII text "parent,t_0,t_1,...", shifted right by 1.

    Args:
        tokens: list of int token ids; not changed.
        block_size: tokens per block, an int >= 1.
        salt: an int that starts the chain (different salts give different hashes).

    Returns:
        A list of len(tokens) // block_size Python ints in [0, 2**63); [] when no block is full.

    Raises:
        TypeError: when block_size, salt or a token is not an int.
        ValueError: when block_size < 1.
    """
    ### BEGIN SOLUTION
    if type(block_size) is not int or type(salt) is not int:
        raise TypeError(f"block_size and salt must be ints, got {type(block_size).__name__} and {type(salt).__name__}")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    for token in tokens:
        if type(token) is not int:
            raise TypeError(f"every token must be an int, got {token!r} ({type(token).__name__})")
    hashes = []
    parent = salt
    for start in range(0, len(tokens) - block_size + 1, block_size):
        text = ",".join(str(value) for value in [parent, *tokens[start:start + block_size]])
        digest = hashlib.sha256(text.encode("ascii")).digest()
        parent = int.from_bytes(digest[:8], "big") >> 1
        hashes.append(parent)
    return hashes
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task6_1_block_hashes", "locked": true, "points": 6, "schema_version": 3, "solution": false, "task": false}
"""Check that block_hashes gives one chained, deterministic hash per full block."""


def _check_task6_1_block_hashes():
    from course.checks import assert_plain_equal, assert_raises, check_type

    hashes = block_hashes([1, 2, 3, 4, 5], 2)
    check_type(hashes, list, "block_hashes([1, 2, 3, 4, 5], 2)")
    assert_plain_equal(hashes, [6944296732933707688, 3513534049782144427],
                       "block_hashes([1, 2, 3, 4, 5], 2) (token 5 is a partial block: no hash)")
    repeated = block_hashes([7, 7, 7, 7], 2)
    assert repeated[0] != repeated[1], (
        "block_hashes([7, 7, 7, 7], 2) gave two equal hashes: equal blocks at different positions must differ "
        "(put the parent hash into each block's hash)")
    assert_plain_equal(block_hashes([1, 2, 3, 4, 9, 9], 2)[:2], hashes,
                       "block_hashes([1, 2, 3, 4, 9, 9], 2)[:2] (equal prefixes give equal leading hashes)")
    salted = block_hashes([1, 2, 3, 4], 2, salt=1)
    assert salted[0] != hashes[0] and salted[1] != hashes[1], "block_hashes(..., salt=1) must change every hash"
    assert_plain_equal(block_hashes([1], 2), [], "block_hashes([1], 2) (no full block)")
    assert_raises(ValueError, "block_hashes([1, 2], 0)", block_hashes, [1, 2], 0)
    assert_raises(TypeError, "block_hashes([1, 2.0], 2)", block_hashes, [1, 2.0], 2)

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
        assert_plain_equal(_got, _oracle_hashes(_copy, _block_size, _salt), f"block_hashes on random case {_case}", reveal=False)
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
        assert all(x != y for x, y in zip(_a[_j:], _b[_j:])), f"block_hashes: a change in block {_j} left a later hash unchanged (case {_case})"
    # Equal blocks at every position, and the chain over many identical blocks.
    _same = block_hashes([5] * 40, 4)
    assert len(set(_same)) == 10, "block_hashes([5] * 40, 4): equal blocks at different positions collided"
    assert_plain_equal(block_hashes([], 3), [], "block_hashes([], 3)")
    assert_plain_equal(block_hashes([1, 2, 3, 4, 5, 6], 6), _oracle_hashes([1, 2, 3, 4, 5, 6], 6, 0), "block_hashes(6 tokens, 6)", reveal=False)
    for _bad_args, _error in ((([1, 2], -1), ValueError), (([1, 2], 2.0), TypeError), (([1, "2"], 1), TypeError),
                              (([1, 2], 1, 0.5), TypeError), (([1.5, 2], 1), TypeError)):
        assert_raises(_error, f"block_hashes{_bad_args}", block_hashes, *_bad_args)
    ### END HIDDEN TESTS


_check_task6_1_block_hashes()

# %% [markdown] nbgrader={"grade": false, "grade_id": "task6_2_PrefixCache_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 6.2: PrefixCache (14 points)
#
# A cache of K/V blocks keyed by the hashes of Task 6.1. Read the docstring: it is the contract. In short:
#
# - `match(hashes)`: how many **leading** hashes are cached (stop at the first miss); an access of those blocks.
# - `get_kv(hashes)`: per layer, the cached blocks' K and V concatenated along the token dimension.
# - `insert(hashes, kv)`: store the blocks not cached yet, block $i$ being rows $[iB, (i+1)B)$ of the request's
#   K/V, evicting one victim at a time while the cache is full; when nothing is evictable, stop and return how
#   many were stored (never raise for that).
# - `pin` / `unpin`: reference counts of running requests; a pinned block is never evicted.
# - The victim is the smallest key among **evictable** blocks: unpinned, **no cached block chains from it**
#   (a leaf), and not one of the hashes of the current `insert` call. LRU key
#   $(t_\text{last}, h)$, LFU key $(\text{use\_count}, t_\text{last}, h)$: the rules of notebook 03, with the
#   block hash in the role of the seq_id.
# - `stats`: hits, misses, evictions; `len(cache)` and `block_hash in cache` let you (and the tests) look
#   inside without counting as an access.
#
# Hints: keep a dict from hash to the block's state (K/V per layer, parent, ref_count, use_count,
# last_access_step) and count each block's cached children, or keep the set of leaves. `tensor[a:b].clone()`
# copies a slice so that the cache does not keep the whole request's K/V alive.
#
# ## 任务 6.2：PrefixCache（14 分）
#
# 一个以任务 6.1 的哈希为键、存放 K/V 块的缓存。请阅读 docstring：它就是契约。简而言之：
#
# - `match(hashes)`：有多少个**前导**哈希已被缓存（遇到第一个未命中就停止）；这算作对这些块的一次访问。
# - `get_kv(hashes)`：按层返回这些缓存块的 K 和 V，沿 token 维拼接。
# - `insert(hashes, kv)`：存入尚未缓存的块，第 $i$ 块是请求 K/V 的第 $[iB, (i+1)B)$ 行；缓存满时每次驱逐一个受害者；
#   没有可驱逐的块时停止并返回已存入的块数（不要因此抛出异常）。
# - `pin` / `unpin`：运行中请求的引用计数；被固定的块绝不被驱逐。
# - 受害者是**可驱逐**块中键最小者：未被固定、**没有任何已缓存块链接在它之后**（叶子），且不属于本次 `insert` 调用的哈希。
#   LRU 的键为 $(t_\text{last}, h)$，LFU 的键为 $(\text{use\_count}, t_\text{last}, h)$：与 notebook 03 的规则相同，块哈希充当 seq_id。
# - `stats`：命中、未命中、驱逐次数；`len(cache)` 和 `block_hash in cache` 让你（以及测试）查看缓存内容，且不算作访问。
#
# 提示：用一个字典把哈希映射到块的状态（每层的 K/V、父块、ref_count、use_count、last_access_step），并记录每个块已缓存的子块数，
# 或维护叶子集合。`tensor[a:b].clone()` 会复制切片，使缓存不必保留整个请求的 K/V。

# %% nbgrader={"grade": false, "grade_id": "task6_2_PrefixCache", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch


class PrefixCache:
    """A cache of K/V blocks keyed by chained block hashes, with LRU or LFU eviction, leaf-first.

    Args:
        capacity_blocks: the most blocks held at once, an int >= 0.
        block_size: tokens per block, an int >= 1 (read it as ``cache.block_size``).
        policy: "lru" or "lfu".

    Every cached block keeps its K/V (per layer, k_cache and v_cache, each [block_size,
    num_heads, head_dim]), its parent (the hash before it in the list it was inserted with; None
    for a first block), ref_count, use_count and last_access_step. A logical clock counts calls:
    each call of match or insert first adds 1 to it (so the first call is step 1), and the blocks
    that call touches get last_access_step = that step.

    Victim, when insert needs room: among the evictable blocks (ref_count == 0, no cached block
    has it as parent, and not among the hashes of the current insert call) the smallest key;
    "lru": (last_access_step, block_hash); "lfu": (use_count, last_access_step, block_hash).

    Methods:
        match(hashes) -> int: the number m of leading hashes that are cached (it stops at the
            first that is not). Those m blocks get use_count + 1 and last_access_step = step.
            stats: hits += m, misses += len(hashes) - m.
        get_kv(hashes) -> list of tuples (k_cache, v_cache), one per layer, each the
            concatenation along dim 0 of those blocks' tensors, in the order of ``hashes``:
            [len(hashes) * block_size, num_heads, head_dim]. [] for no hashes. Not an access.
            KeyError for a hash that is not cached.
        insert(hashes, kv) -> int: kv is a request's K/V, a list of (k_cache, v_cache) per
            layer, each [num_tokens, num_heads, head_dim] with num_tokens >= len(hashes) *
            block_size (ValueError otherwise). In order, each hash i not cached yet is stored
            with a copy of rows [i * block_size, (i + 1) * block_size) of every tensor, parent
            hashes[i - 1] (None for i == 0), ref_count 0, use_count 1, last_access_step = step.
            Before storing a block, while the cache holds capacity_blocks blocks, the victim is
            evicted (stats: evictions += 1); when no block is evictable, insert stops and returns
            what it stored so far (it never raises for that). Blocks that are already cached are
            not touched. Returns the number of blocks stored.
        pin(hashes) / unpin(hashes): ref_count + 1 / - 1 for each hash. KeyError for a hash that
            is not cached; ValueError when unpin would take a ref_count below 0. Nothing changes
            when they raise.
        stats: a property, a new dict {"hits": int, "misses": int, "evictions": int}.
        len(cache): the number of cached blocks; ``block_hash in cache``: whether it is cached.
            Neither is an access.

    Raises:
        ValueError: when capacity_blocks < 0, block_size < 1 or policy is unknown.
    """

    def __init__(self, capacity_blocks, block_size, policy="lru"):
        ### BEGIN SOLUTION
        if capacity_blocks < 0:
            raise ValueError(f"capacity_blocks must be >= 0, got {capacity_blocks}")
        if block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {block_size}")
        if policy not in ("lru", "lfu"):
            raise ValueError(f"policy must be 'lru' or 'lfu', got {policy!r}")
        self.capacity_blocks = capacity_blocks
        self.block_size = block_size
        self.policy = policy
        self._blocks = {}      # block_hash -> dict with kv, parent, children, ref_count, use_count, last_access_step
        self._leaves = set()   # cached blocks that no cached block chains from
        self._step = 0
        self._hits = 0
        self._misses = 0
        self._evictions = 0
        ### END SOLUTION

    def __len__(self):
        ### BEGIN SOLUTION
        return len(self._blocks)
        ### END SOLUTION

    def __contains__(self, block_hash):
        ### BEGIN SOLUTION
        return block_hash in self._blocks
        ### END SOLUTION

    @property
    def stats(self):
        ### BEGIN SOLUTION
        return {"hits": self._hits, "misses": self._misses, "evictions": self._evictions}
        ### END SOLUTION

    def match(self, hashes):
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
        ### BEGIN SOLUTION
        missing = [h for h in hashes if h not in self._blocks]
        if missing:
            raise KeyError(f"pin: blocks not cached: {missing[:3]}")
        for block_hash in hashes:
            self._blocks[block_hash]["ref_count"] += 1
        ### END SOLUTION

    def unpin(self, hashes):
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

    def insert(self, hashes, kv):
        ### BEGIN SOLUTION
        self._step += 1
        needed = len(hashes) * self.block_size
        for layer, (k_cache, v_cache) in enumerate(kv):
            if k_cache.shape[0] < needed or v_cache.shape[0] < needed:
                raise ValueError(f"insert: kv of layer {layer} covers {k_cache.shape[0]} tokens; "
                                 f"{len(hashes)} blocks need {needed}")
        if hashes and not kv:
            raise ValueError("insert: kv has no layers")
        current = set(hashes)

        def victim():
            candidates = [h for h in self._leaves
                          if self._blocks[h]["ref_count"] == 0 and h not in current]
            if not candidates:
                return None
            if self.policy == "lru":
                return min(candidates, key=lambda h: (self._blocks[h]["last_access_step"], h))
            return min(candidates, key=lambda h: (self._blocks[h]["use_count"], self._blocks[h]["last_access_step"], h))

        stored = 0
        for index, block_hash in enumerate(hashes):
            if block_hash in self._blocks:
                continue
            while len(self._blocks) >= self.capacity_blocks:
                evicted = victim()
                if evicted is None:
                    return stored
                parent = self._blocks.pop(evicted)["parent"]
                self._leaves.discard(evicted)
                self._evictions += 1
                if parent is not None and parent in self._blocks:
                    self._blocks[parent]["children"] -= 1
                    if self._blocks[parent]["children"] == 0:
                        self._leaves.add(parent)
            parent = hashes[index - 1] if index > 0 else None
            rows = slice(index * self.block_size, (index + 1) * self.block_size)
            self._blocks[block_hash] = {
                "kv": [(k_cache[rows].clone(), v_cache[rows].clone()) for k_cache, v_cache in kv],
                "parent": parent, "children": 0, "ref_count": 0, "use_count": 1,
                "last_access_step": self._step,
            }
            self._leaves.add(block_hash)
            if parent is not None and parent in self._blocks:
                self._blocks[parent]["children"] += 1
                self._leaves.discard(parent)
            stored += 1
        return stored
        ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task6_2_PrefixCache", "locked": true, "points": 14, "schema_version": 3, "solution": false, "task": false}
"""Check that PrefixCache matches leading blocks, stores real K/V, respects pins and evicts leaves first."""


def _check_task6_2_PrefixCache():
    from course.checks import assert_plain_equal, assert_raises, assert_same_tensor, check_type


    def toy_kv(hashes, block_size, extra_tokens=0):
        """One layer, one head, head_dim 2: row r of block h holds [h + r / 8, -h]; V = K + 0.5."""
        rows = [[h + r / 8, -h] for h in hashes for r in range(block_size)] + [[-1.0, -1.0]] * extra_tokens
        k_cache = torch.tensor(rows, dtype=torch.float32).reshape(-1, 1, 2)
        return [(k_cache, k_cache + 0.5)]


    cache = PrefixCache(capacity_blocks=3, block_size=2, policy="lru")
    assert_plain_equal(cache.insert([1, 2], toy_kv([1, 2], 2, extra_tokens=1)), 2, "insert([1, 2], kv of 5 tokens) into an empty cache")
    assert_plain_equal(cache.match([1, 2, 3]), 2, "match([1, 2, 3]) with 1 and 2 cached")
    assert_plain_equal(cache.match([9, 2]), 0, "match([9, 2]) (2 is cached but 9 is not: only LEADING hits count)")
    kv = cache.get_kv([1, 2])
    check_type(kv, list, "get_kv([1, 2])")
    check_type(kv[0], tuple, "get_kv([1, 2])[0]")
    assert_same_tensor(kv[0][0], toy_kv([1, 2], 2)[0][0], "get_kv([1, 2])[0][0] (K of blocks 1 and 2)")
    assert_same_tensor(kv[0][1], toy_kv([1, 2], 2)[0][1], "get_kv([1, 2])[0][1] (V of blocks 1 and 2)")
    assert_plain_equal(cache.insert([5], toy_kv([5], 2)), 1, "insert([5]) into a cache with one free block")
    # Full: 1 -> 2 and 5. Block 1 is as old as block 2 but block 2 chains from it: only 2 and 5 are leaves.
    assert_plain_equal(cache.insert([6], toy_kv([6], 2)), 1, "insert([6]) into a full cache")
    assert 1 in cache and 2 not in cache, "insert([6]) must evict block 2 (the least recent LEAF), never its parent 1"
    cache.pin([1])
    cache.insert([7], toy_kv([7], 2))
    assert 1 in cache and 5 not in cache, "block 1 is pinned (and a leaf now): insert([7]) must evict block 5 instead"
    cache.pin([6])
    assert_plain_equal(cache.insert([8, 9], toy_kv([8, 9], 2)), 1,
                       "insert([8, 9]) when only block 7 is evictable (stores 8, then stops: no exception)")
    cache.unpin([1])
    cache.unpin([6])
    assert_raises(ValueError, "unpin([1]) of a block that is not pinned", cache.unpin, [1])
    check_type(cache.stats, dict, "cache.stats")
    assert_plain_equal(cache.stats, {"hits": 2, "misses": 3, "evictions": 3}, "cache.stats after this sequence of calls")
    assert_plain_equal(len(cache), 3, "len(cache)")

    lfu = PrefixCache(capacity_blocks=2, block_size=1, policy="lfu")
    lfu.insert([1], toy_kv([1], 1))
    lfu.match([1])
    lfu.match([1])
    lfu.insert([2], toy_kv([2], 1))
    lfu.insert([3], toy_kv([3], 1))
    assert 1 in lfu and 2 not in lfu, "LFU must evict block 2 (used once), not block 1 (used three times)"
    assert_raises(ValueError, "PrefixCache(4, 2, 'fifo')", PrefixCache, 4, 2, "fifo")

    ### BEGIN HIDDEN TESTS
    import random as _random


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


    _rng = _random.Random(6202)
    for _case in range(36):
        _policy = ("lru", "lfu")[_case % 2]
        _capacity = [0, 1, 2, 3, 5, 8][(_case // 2) % 6]
        _block_size = _rng.choice([1, 2, 3])
        _ids, _paths = _tree(_rng, _rng.randint(6, 30))
        _cache = PrefixCache(_capacity, _block_size, _policy)
        _oracle = _Oracle(_capacity, _policy)
        _pinned = []
        _where = f"PrefixCache({_capacity}, {_block_size}, {_policy!r}) on random case {_case}"
        for _op in range(70):
            _path = _paths[_rng.choice(_ids)]
            _r = _rng.random()
            if _r < 0.35:
                _extra = _rng.randrange(_block_size)
                _got = _cache.insert(_path, toy_kv(_path, _block_size, _extra))
                assert_plain_equal(_got, _oracle.insert(_path), f"{_where}, call {_op}: insert", reveal=False)
            elif _r < 0.65:
                _asked = list(_path)
                if len(_asked) > 2 and _rng.random() < 0.3:
                    _asked[_rng.randrange(len(_asked) - 1)] = 99999
                assert_plain_equal(_cache.match(_asked), _oracle.match(_asked), f"{_where}, call {_op}: match", reveal=False)
            elif _r < 0.78:
                _m = _oracle.leading(_path)
                if _m:
                    _cache.pin(_path[:_m])
                    for _h in _path[:_m]:
                        _oracle.state[_h][1] += 1
                    _pinned.append(_path[:_m])
            elif _r < 0.88:
                if _pinned:
                    _list = _pinned.pop(_rng.randrange(len(_pinned)))
                    _cache.unpin(_list)
                    for _h in _list:
                        _oracle.state[_h][1] -= 1
            else:
                _m = _oracle.leading(_path)
                if _m:
                    _kv = _cache.get_kv(_path[:_m])
                    _want = toy_kv(_path[:_m], _block_size)
                    check_type(_kv, list, f"{_where}, call {_op}: get_kv")
                    assert_plain_equal(len(_kv), 1, f"{_where}, call {_op}: number of layers from get_kv")
                    check_type(_kv[0], tuple, f"{_where}, call {_op}: get_kv(...)[0]")
                    assert_same_tensor(_kv[0][0], _want[0][0], f"{_where}, call {_op}: get_kv K", reveal=False)
                    assert_same_tensor(_kv[0][1], _want[0][1], f"{_where}, call {_op}: get_kv V", reveal=False)
            _cached = sorted(h for h in _ids if h in _cache)
            if _cached != sorted(_oracle.state):
                raise AssertionError(f"{_where}, after call {_op}: the wrong blocks are cached")
            for _h in _cached:
                _parent = _oracle.state[_h][0]
                assert _parent is None or _parent in _cache, f"{_where}: a cached block lost its parent"
            assert_plain_equal(len(_cache), len(_oracle.state), f"{_where}, after call {_op}: len(cache)", reveal=False)
        assert_plain_equal(_cache.stats, {"hits": _oracle.hits, "misses": _oracle.misses, "evictions": _oracle.evictions},
                           f"{_where}: stats", reveal=False)

    # Many layers, several heads, tail tokens; the cache keeps copies, not views of the request's tensors.
    _cache = PrefixCache(8, 4)
    _k = torch.randn(14, 3, 5, generator=torch.Generator().manual_seed(1))
    _kv = [(_k, _k * 2), (_k + 1, _k - 1)]
    assert_plain_equal(_cache.insert([11, 12, 13], _kv), 3, "insert([11, 12, 13], kv of 2 layers, 14 tokens)")
    _saved = [(k.clone(), v.clone()) for k, v in _kv]
    _k.fill_(0.0)
    _got = _cache.get_kv([11, 12])
    assert_plain_equal(len(_got), 2, "get_kv([11, 12]) with 2 layers: number of pairs")
    for _layer in range(2):
        assert_same_tensor(_got[_layer][0], _saved[_layer][0][:8], f"get_kv([11, 12]) layer {_layer} K (after the request's K/V were overwritten)")
        assert_same_tensor(_got[_layer][1], _saved[_layer][1][:8], f"get_kv([11, 12]) layer {_layer} V")
    assert_plain_equal(_cache.get_kv([]), [], "get_kv([])")
    assert_plain_equal(_cache.match([]), 0, "match([])")
    assert_raises(KeyError, "get_kv([11, 404])", _cache.get_kv, [11, 404])
    assert_raises(KeyError, "pin([404])", _cache.pin, [404])
    assert_raises(ValueError, "insert([1, 2], kv of 4 tokens) with block_size 4", _cache.insert, [1, 2], toy_kv([1], 4))
    assert_raises(ValueError, "PrefixCache(-1, 2)", PrefixCache, -1, 2)
    assert_raises(ValueError, "PrefixCache(4, 0)", PrefixCache, 4, 0)
    # K/V on any device stay on that device.
    from course.env import available_devices

    for device in available_devices():
        _cache = PrefixCache(4, 2)
        _k = torch.arange(12, dtype=torch.float32, device=device).reshape(6, 1, 2)
        assert_plain_equal(_cache.insert([1, 2, 3], [(_k, -_k)]), 3, f"insert([1, 2, 3], K/V on {device})")
        _got = _cache.get_kv([1, 2])
        assert_same_tensor(_got[0][0], _k[:4], f"get_kv([1, 2]) of K stored on {device}")
        assert_same_tensor(_got[0][1], -_k[:4], f"get_kv([1, 2]) of V stored on {device}")
    # A request longer than the cache: insert stores what fits and never evicts its own blocks.
    _cache = PrefixCache(3, 1, "lfu")
    assert_plain_equal(_cache.insert([1, 2, 3, 4, 5], toy_kv([1, 2, 3, 4, 5], 1)), 3, "insert of 5 blocks into a cache of 3")
    assert all(_h in _cache for _h in (1, 2, 3)), "insert of 5 blocks into a cache of 3 must keep blocks 1, 2, 3 (its own prefix)"
    ### END HIDDEN TESTS


_check_task6_2_PrefixCache()


# %% [markdown] nbgrader={"grade": false, "grade_id": "task6_3_serve_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 6.3: serve (8 points)
#
# Put it together. `serve(model, cache, tokens)` prefills one request with prefix reuse:
#
# 1. `hashes = block_hashes(tokens, cache.block_size)` and `matched = cache.match(hashes)` (match **all** of them,
#    so that the cache's statistics count every full block);
# 2. reuse `reused = min(matched, (len(tokens) - 1) // block_size)` blocks: at least one token must be computed,
#    because the logits of the last position are what the next token is sampled from (vLLM does the same when
#    a whole prompt hits);
# 3. `pin` the reused blocks, then `get_kv` them (pass `past_kv=None` when nothing is reused);
# 4. run the model on the remaining tokens, `torch.long` on the model's device (`model.device`):
#    `logits, kv = model(new_tokens, past_kv=past_kv)`; `kv` covers the whole request;
# 5. `cache.insert(hashes, kv)`, and `unpin` the reused blocks, also when something above raised (`try`/`finally`).
#
# Return `(logits, counts)`: the logits of the computed positions, `[tokens_computed, vocab_size]`, and
# `{"tokens_reused": int, "tokens_computed": int}`. The reused positions have no logits: the model never
# ran them, which is the whole saving, and a server only needs the last position's logits to pick the next
# token. Raise `ValueError` for an empty `tokens`.
# The model is `course.model.TinyDecoder`: `model(tokens, past_kv=None)` returns `(logits, kv)` with `kv` a list
# of `(k_cache, v_cache)` per layer, each `[num_tokens, num_heads, head_dim]`; the new tokens continue at position
# `len(past)`.
#
# ## 任务 6.3：serve（8 分）
#
# 把各部分组合起来。`serve(model, cache, tokens)` 对一个请求做带前缀复用的 prefill：
#
# 1. `hashes = block_hashes(tokens, cache.block_size)`，`matched = cache.match(hashes)`（对**全部**哈希调用 match，
#    使缓存的统计覆盖每个完整块）；
# 2. 复用 `reused = min(matched, (len(tokens) - 1) // block_size)` 个块：至少要计算一个 token，因为下一个 token
#    是根据最后一个位置的 logits 采样的（整个提示词都命中时 vLLM 也这样做）；
# 3. 先 `pin` 被复用的块，再对它们调用 `get_kv`（没有复用时传 `past_kv=None`）；
# 4. 在模型所在设备（`model.device`）上以 `torch.long` 对剩余 token 运行模型：
#    `logits, kv = model(new_tokens, past_kv=past_kv)`；`kv` 覆盖整个请求；
# 5. `cache.insert(hashes, kv)`，然后 `unpin` 被复用的块，即使上面的步骤抛出异常也要执行（`try`/`finally`）。
#
# 返回 `(logits, counts)`：被计算位置的 logits，形状 `[tokens_computed, vocab_size]`，以及
# `{"tokens_reused": int, "tokens_computed": int}`。被复用的位置没有 logits：模型根本没有运行它们，这正是节省所在；
# 服务器只需要最后一个位置的 logits 来选择下一个 token。`tokens` 为空时抛出 `ValueError`。
# 模型是 `course.model.TinyDecoder`：`model(tokens, past_kv=None)` 返回 `(logits, kv)`，`kv` 是每层一个
# `(k_cache, v_cache)` 的列表，每个形状为 `[num_tokens, num_heads, head_dim]`；新 token 从位置 `len(past)` 继续。

# %% nbgrader={"grade": false, "grade_id": "task6_3_serve", "locked": false, "schema_version": 3, "solution": true, "task": false}
def serve(model, cache, tokens):
    """Prefill ``tokens`` with the longest cached prefix reused; return logits and counts.

    Args:
        model: a course.model.TinyDecoder (its device is ``model.device``).
        cache: a PrefixCache (or any object with block_size, match, pin, get_kv, insert, unpin).
        tokens: non-empty list of int token ids.

    Returns:
        (logits, counts): logits float32 [tokens_computed, vocab_size] on the model's device,
        equal (up to float32 rounding) to the last tokens_computed rows of the logits of the
        whole prompt run without a cache; counts {"tokens_reused": int, "tokens_computed": int}
        with tokens_reused a multiple of block_size, tokens_computed >= 1, and their sum
        len(tokens).

    Order of the calls: match(all full-block hashes), pin(reused), get_kv(reused), the model,
    insert(all full-block hashes, kv of the whole request), unpin(reused) in a finally block.

    Raises:
        ValueError: when tokens is empty.
    """
    ### BEGIN SOLUTION
    if len(tokens) == 0:
        raise ValueError("serve needs at least one token")
    block_size = cache.block_size
    hashes = block_hashes(tokens, block_size)
    matched = cache.match(hashes)
    reused_blocks = min(matched, (len(tokens) - 1) // block_size)
    reused = hashes[:reused_blocks]
    tokens_reused = reused_blocks * block_size
    cache.pin(reused)
    try:
        past_kv = cache.get_kv(reused) if reused else None
        new_tokens = torch.tensor(tokens[tokens_reused:], dtype=torch.long, device=model.device)
        logits, kv = model(new_tokens, past_kv=past_kv)
        cache.insert(hashes, kv)
    finally:
        cache.unpin(reused)
    return logits, {"tokens_reused": tokens_reused, "tokens_computed": len(tokens) - tokens_reused}
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task6_3_serve", "locked": true, "points": 8, "schema_version": 3, "solution": false, "task": false}
"""Check that serve reuses the cached prefix, computes only the rest, and never changes the logits."""


def _check_task6_3_serve():
    from course.checks import assert_plain_equal, assert_raises, assert_same_tensor, check_type
    from course.model import TinyDecoder

    model = TinyDecoder(vocab_size=64, num_layers=2, num_heads=2, head_dim=8, seed=0)
    cache = PrefixCache(capacity_blocks=16, block_size=4)
    first = [3, 14, 15, 9, 26, 5, 35, 8, 9, 7]
    logits, counts = serve(model, cache, first)
    expected, _ = model(torch.tensor(first))
    check_type(counts, dict, "serve(model, empty cache, first)[1]")
    assert_plain_equal(counts, {"tokens_reused": 0, "tokens_computed": 10}, "serve(model, empty cache, 10 tokens) counts")
    assert_same_tensor(logits, expected, "serve(model, empty cache, 10 tokens) logits", atol=1e-5, rtol=1e-5)
    second = first[:8] + [32, 38, 46, 2]
    logits, counts = serve(model, cache, second)
    expected, _ = model(torch.tensor(second))
    assert_plain_equal(counts, {"tokens_reused": 8, "tokens_computed": 4}, "serve(model, cache, second) (2 full blocks shared with first)")
    assert_same_tensor(logits, expected[8:], "serve(model, cache, second) logits (must equal the logits without a cache)",
                       atol=1e-5, rtol=1e-5)
    logits, counts = serve(model, cache, first[:8])
    assert_plain_equal(counts, {"tokens_reused": 4, "tokens_computed": 4},
                       "serve(model, cache, first[:8]) (both blocks cached: the last block is computed again for its logits)")
    assert_raises(ValueError, "serve(model, cache, [])", serve, model, cache, [])

    ### BEGIN HIDDEN TESTS
    import random as _random

    from course.env import available_devices


    class _RecordingCache:
        """An unbounded cache that follows the contract and checks how serve uses it."""

        def __init__(self, block_size):
            self.block_size = block_size
            self.kv = {}
            self.refs = {}
            self.log = []

        def match(self, hashes):
            self.log.append(("match", list(hashes)))
            count = 0
            while count < len(hashes) and hashes[count] in self.kv:
                count += 1
            return count

        def pin(self, hashes):
            self.log.append(("pin", list(hashes)))
            for h in hashes:
                if h not in self.kv:
                    raise KeyError(h)
                self.refs[h] = self.refs.get(h, 0) + 1

        def unpin(self, hashes):
            self.log.append(("unpin", list(hashes)))
            for h in hashes:
                if self.refs.get(h, 0) < 1:
                    raise ValueError(f"unpin of a block that is not pinned: {h}")
                self.refs[h] -= 1

        def get_kv(self, hashes):
            self.log.append(("get_kv", list(hashes)))
            for h in hashes:
                if self.refs.get(h, 0) < 1:
                    raise AssertionError("serve called get_kv on a block it had not pinned")
            if not hashes:
                return []
            layers = len(self.kv[hashes[0]])
            return [(torch.cat([self.kv[h][i][0] for h in hashes]), torch.cat([self.kv[h][i][1] for h in hashes]))
                    for i in range(layers)]

        def insert(self, hashes, kv):
            self.log.append(("insert", list(hashes)))
            for k_cache, _ in kv:
                if k_cache.shape[0] < len(hashes) * self.block_size:
                    raise ValueError("insert: kv does not cover every block")
            for i, h in enumerate(hashes):
                if h not in self.kv:
                    rows = slice(i * self.block_size, (i + 1) * self.block_size)
                    self.kv[h] = [(k[rows].clone(), v[rows].clone()) for k, v in kv]
            return len(hashes)


    def _expected_reuse(seen, tokens, block_size):
        limit = (len(tokens) - 1) // block_size
        best = 0
        for blocks in range(1, limit + 1):
            if tuple(tokens[:blocks * block_size]) in seen:
                best = blocks
            else:
                break
        return best * block_size


    _rng = _random.Random(6303)
    for device in available_devices():
        _model = TinyDecoder(vocab_size=50, num_layers=2, num_heads=2, head_dim=4, seed=3).to(device)
        for _block_size in (1, 3, 4):
            _cache = _RecordingCache(_block_size)
            _seen = set()
            _conversations = [[_rng.randrange(50) for _ in range(_rng.randint(1, 9))] for _ in range(3)]
            for _turn in range(9):
                _c = _rng.randrange(3)
                _tokens = list(_conversations[_c])
                _where = f"serve(model, cache with block_size {_block_size}, request {_turn} of {len(_tokens)} tokens) on {device}"
                _reused = _expected_reuse(_seen, _tokens, _block_size)
                _cache.log.clear()
                _logits, _counts = serve(_model, _cache, _tokens)
                check_type(_counts, dict, _where)
                assert_plain_equal(_counts, {"tokens_reused": _reused, "tokens_computed": len(_tokens) - _reused},
                                   f"{_where}: counts", reveal=False)
                _full, _ = _model(torch.tensor(_tokens, device=device))
                assert_same_tensor(_logits, _full[_reused:], f"{_where}: logits", atol=1e-4, rtol=1e-4, reveal=False)
                _hashes = block_hashes(_tokens, _block_size)
                _calls = [name for name, _ in _cache.log]
                assert _cache.log[0] == ("match", _hashes), f"{_where}: serve must first match the hashes of every full block"
                assert ("insert", _hashes) in _cache.log, f"{_where}: serve must insert the hashes of every full block"
                assert all(count == 0 for count in _cache.refs.values()), f"{_where}: serve left blocks pinned"
                assert _calls.count("pin") == _calls.count("unpin"), f"{_where}: pin and unpin calls do not pair up"
                for _blocks in range(1, len(_tokens) // _block_size + 1):
                    _seen.add(tuple(_tokens[:_blocks * _block_size]))
                _conversations[_c] = _tokens + [_rng.randrange(50) for _ in range(_rng.randint(1, 7))]

        # A real PrefixCache under pressure: whatever is reused, the logits must not change.
        _cache = PrefixCache(capacity_blocks=5, block_size=2, policy="lru")
        _system = [_rng.randrange(50) for _ in range(4)]
        _history = [list(_system) for _ in range(3)]
        _total_reused = 0
        for _turn in range(10):
            _c = _rng.randrange(3)
            _history[_c] = _history[_c] + [_rng.randrange(50) for _ in range(_rng.randint(1, 4))]
            _logits, _counts = serve(_model, _cache, _history[_c])
            _reused = _counts["tokens_reused"]
            _total_reused += _reused
            assert _reused % 2 == 0 and _counts["tokens_computed"] == len(_history[_c]) - _reused >= 1, (
                f"serve on turn {_turn} ({device}) returned inconsistent counts")
            _full, _ = _model(torch.tensor(_history[_c], device=device))
            assert_same_tensor(_logits, _full[_reused:], f"serve with a small PrefixCache, turn {_turn} ({device}): logits",
                               atol=1e-4, rtol=1e-4, reveal=False)
        assert _total_reused > 0, f"serve with a small PrefixCache never reused anything ({device})"
        assert_plain_equal(_cache.insert([10**9 + _i for _i in range(5)], [(torch.zeros(10, 2, 4, device=device),) * 2] * 2), 5,
                           f"PrefixCache.insert after the serve calls (are blocks still pinned?) on {device}", reveal=False)
    ### END HIDDEN TESTS


_check_task6_3_serve()

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
# 节省时间却改变输出的缓存毫无价值。我们构建课程的 `TinyDecoder`（随机、固定种子的权重：2 层、4 个 16 维的头、词表大小 256），
# 并用 `course.traces.chat_sessions` 生成多轮对话负载：16 个对话，各自以 3 个共享系统提示词之一（4 个块）开始，
# 4 轮中每轮增加 2 个块，对话之间随机交错。trace 中的每个块 id 对应 16 个固定的 token id。随后每个请求都通过你的 `serve`
# （使用 48 块的 LRU 缓存），并把它的 logits 与不使用任何缓存运行同一提示词得到的 logits 比较。

# %%
import random
import time

import matplotlib.pyplot as plt

from course.model import TinyDecoder
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
print(f"{len(prompts)} requests, {total_tokens} prompt tokens, {min(map(len, prompts))}-{max(map(len, prompts))} tokens each")


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
# 最大差异为零或仅是几个 float32 舍入单位：被复用的 K/V 与模型自己会算出的 K/V 完全相同，因为链式哈希保证整个前缀相同，
# 而且模型从被复用前缀的长度处继续编号位置。
#
# ## Experiment 2: what each policy saves on multi-turn chat | 实验 2：多轮对话中各策略能节省多少
#
# The same 64 requests at several cache capacities (the workload has 140 distinct blocks), with your LRU and LFU,
# against no cache and against Belady's MIN replayed by `course.replay` on the same block hashes. We count the
# reusable (leading) hit blocks, the prefill tokens computed and the wall time of all prefills.
#
# 同样的 64 个请求，在多个缓存容量下运行（负载共有 140 个不同的块），使用你的 LRU 和 LFU，并与无缓存以及
# `course.replay` 在同一组块哈希上重放的 Belady MIN 比较。我们统计可复用（前导）命中块数、计算的 prefill token 数以及全部 prefill 的墙钟时间。

# %%
def synchronize():
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def run_policy(policy, capacity, repeats=2):
    """Serve every prompt through a fresh cache; totals, per-request counts, best wall time of `repeats` runs."""
    best = float("inf")
    for _ in range(repeats):
        cache = PrefixCache(capacity_blocks=capacity, block_size=BLOCK_SIZE, policy=policy)
        per_request = []
        synchronize()
        started = time.perf_counter()
        for tokens in prompts:
            _, counts = serve(model, cache, tokens)
            per_request.append(counts)
        synchronize()
        best = min(best, time.perf_counter() - started)
    stats = cache.stats
    return {"hits": stats["hits"], "references": stats["hits"] + stats["misses"], "seconds": best,
            "computed": sum(c["tokens_computed"] for c in per_request), "per_request": per_request}


def run_no_cache(repeats=2):
    best = float("inf")
    for _ in range(repeats):
        synchronize()
        started = time.perf_counter()
        for tokens in prompts:
            no_cache_logits(tokens)
        synchronize()
        best = min(best, time.perf_counter() - started)
    return best


no_cache_logits(prompts[0])  # warm-up
CAPACITIES = [8, 16, 32, 64, 128]
POLICIES = ["lru", "lfu"]
results = {(policy, capacity): run_policy(policy, capacity) for policy in POLICIES for capacity in CAPACITIES}
no_cache_seconds = run_no_cache()
chat_hashes = [block_hashes(tokens, BLOCK_SIZE) for tokens in prompts]
belady = {capacity: replay(chat_hashes, capacity, "belady") for capacity in CAPACITIES}

print(f"{'capacity':>8} | {'LRU hits':>8} {'LFU hits':>8} {'Belady':>7} | {'LRU/Belady':>10} {'LFU/Belady':>10} | "
      f"{'tokens computed LRU':>19} {'LFU':>6} {'no cache':>8}")
for capacity in CAPACITIES:
    lru, lfu, best = results["lru", capacity], results["lfu", capacity], belady[capacity].prefix_hit_blocks
    print(f"{capacity:>8} | {lru['hits']:>8} {lfu['hits']:>8} {best:>7} | {lru['hits'] / best:>10.0%} "
          f"{lfu['hits'] / best:>10.0%} | {lru['computed']:>19} {lfu['computed']:>6} {total_tokens:>8}")

fig, axes = plt.subplots(1, 3, figsize=(15, 4))
references = results["lru", CAPACITIES[0]]["references"]
for policy, marker in zip(POLICIES, "os"):
    axes[0].plot(CAPACITIES, [results[policy, c]["hits"] / references for c in CAPACITIES], marker=marker, label=policy.upper())
    axes[1].plot(CAPACITIES, [results[policy, c]["computed"] for c in CAPACITIES], marker=marker, label=policy.upper())
    axes[2].plot(CAPACITIES, [results[policy, c]["seconds"] * 1000 for c in CAPACITIES], marker=marker, label=policy.upper())
axes[0].plot(CAPACITIES, [belady[c].prefix_hit_ratio for c in CAPACITIES], "k--", marker="^", label="Belady (MIN)")
axes[1].axhline(total_tokens, color="gray", linestyle=":", label="no cache")
axes[2].axhline(no_cache_seconds * 1000, color="gray", linestyle=":", label="no cache")
titles = ["Reusable hit ratio (leading blocks)", "Prefill tokens computed", f"Wall time of 64 prefills ({DEVICE.type}, best of 2)"]
labels = ["hits / full blocks requested", "tokens", "milliseconds"]
for ax, title, label in zip(axes, titles, labels):
    ax.set_xscale("log", base=2)
    ax.set_xticks(CAPACITIES, [str(c) for c in CAPACITIES])
    ax.set_xlabel("cache capacity (blocks of 16 tokens)")
    ax.set_ylabel(label)
    ax.set_title(title)
    ax.legend()
plt.tight_layout()
plt.show()

for capacity in CAPACITIES:
    best = belady[capacity].prefix_hit_blocks
    print(f"capacity {capacity:>3}: LRU gets {results['lru', capacity]['hits'] / best:.0%} and LFU "
          f"{results['lfu', capacity]['hits'] / best:.0%} of the reusable hits that Belady's MIN gets; prefill "
          f"computes {results['lru', capacity]['computed'] / total_tokens:.0%} (LRU) of the no-cache tokens")

# %% [markdown]
# Read the three panels together. Tokens computed fall as the hit ratio rises (each hit block is 16 tokens
# not computed), and the wall time follows the tokens computed: prefill cost is proportional to the tokens
# computed, plus the cost of hashing and cache bookkeeping (visible on this tiny CPU model when few blocks
# hit, and the timings of a shared machine are noisy). The printed lines say what fraction of the
# possible saving (Belady's reusable hits) each policy gets. On this workload LFU does at least as well as LRU:
# every turn of a conversation re-reads its whole history, so the blocks of conversations in progress collect
# use counts, while the newest blocks of a conversation (use count 1) are the first to go. LFU's known weakness
# (notebook 03) is the other side of the same rule: blocks of finished conversations keep their high counts and
# can squat in the cache on a longer trace. With enough capacity for the whole working set every policy reaches
# the ceiling. Belady's MIN is replayed block by block and is not bound by the leaf-first rule, so it is a
# ceiling, not a policy a server can run.
#
# 把三幅图放在一起看。命中率上升时计算的 token 数下降（每个命中块少算 16 个 token），而墙钟时间随计算的 token 数变化：
# prefill 代价与计算的 token 数成正比，另加哈希与缓存簿记开销（在这个很小的 CPU 模型上、命中块很少时可以看出这部分开销，
# 而且共享机器上的计时有噪声）。打印的各行给出每个策略拿到了可能节省量（Belady 的可复用命中）
# 的多少比例。在这个负载上 LFU 至少与 LRU 一样好：对话的每一轮都会重新读取整个历史，因此进行中对话的块不断累积使用次数，
# 而对话最新的块（使用次数为 1）最先被驱逐。LFU 的已知弱点（notebook 03）正是同一规则的另一面：已结束对话的块保留着较高的计数，
# 在更长的 trace 上可能长期占据缓存。容量足以容纳整个工作集时，每个策略都能达到上限。Belady MIN 是逐块重放的，不受"先叶子"规则约束，
# 因此它是上限，而不是服务器能运行的策略。
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
        ax.bar(index, reused, label="reused (from the cache)")
        ax.bar(index, [c["tokens_computed"] for c in counts], bottom=reused, label="computed (prefill)")
        ax.set_xlabel("request (arrival order)")
        ax.set_ylabel("prompt tokens")
        ax.set_title(f"{policy_choice.value.upper()}, {capacity_choice.value} blocks: "
                     f"{sum(reused)} of {total_tokens} tokens reused")
        ax.legend()
        plt.show()


policy_choice.observe(draw_requests, names="value")
capacity_choice.observe(draw_requests, names="value")
draw_requests()
display(widgets.VBox([widgets.HBox([policy_choice, capacity_choice]), request_plot]))

# %% [markdown]
# ## Experiment 3: the production-scale picture (Mooncake) | 实验 3：生产规模的情形（Mooncake）
#
# Mooncake, the serving platform of Kimi (Qin et al., FAST 2025), released request traces in which every
# request lists the hash ids of its prompt's blocks of 512 tokens, so equal ids are shared prefix blocks. No model runs here: your `PrefixCache`
# only needs K/V tensors with zero bytes per block to replay the trace's metadata. The cell downloads the trace
# when a network is available; otherwise it uses a generated stand-in with the same format, and **says so in
# its first printed line**. Each request is matched and then inserted, as `serve` would.
#
# Mooncake 是 Kimi 的推理服务平台（Qin 等，FAST 2025），它公开了请求 trace：每个请求列出其提示词中每 512 个 token 一块的哈希 id，
# 相同的 id 就是共享的前缀块。这里不运行模型：你的 `PrefixCache` 只需每块零字节的 K/V 张量即可重放 trace 的元数据。
# 有网络时本单元会下载该 trace；否则使用格式相同的生成 trace，并**在第一行输出中明确说明**。每个请求先 match 再 insert，与 `serve` 的做法相同。

# %%
trace, trace_note = mooncake_or_synthetic(limit=1000, timeout=5.0)
print(trace_note)
trace_hashes = hash_id_lists(trace)
MOONCAKE_TOKENS_PER_BLOCK = 512
references = sum(len(h) for h in trace_hashes)
print(f"{len(trace_hashes)} requests, {references} block references, {len({b for h in trace_hashes for b in h})} distinct blocks")


def replay_prefix_cache(policy, capacity, deadline):
    """Match, then insert, every request; K/V of zero bytes (metadata only). None if past the deadline."""
    cache = PrefixCache(capacity_blocks=capacity, block_size=1, policy=policy)
    for hashes in trace_hashes:
        cache.match(hashes)
        empty = torch.empty(len(hashes), 1, 0)
        cache.insert(hashes, [(empty, empty)])
        if time.perf_counter() > deadline:
            return None
    return cache.stats["hits"]


# A victim search that scans every cached block costs O(capacity) per eviction; give the replays
# 20 seconds in all and plot what finished.
MOONCAKE_CAPACITIES = [250, 500, 1000, 2000, 4000]
deadline = time.perf_counter() + 20.0
mooncake = {(policy, c): replay_prefix_cache(policy, c, deadline) for c in MOONCAKE_CAPACITIES for policy in POLICIES}
if any(hits is None for hits in mooncake.values()):
    print("Your PrefixCache needed more than 20 s, so the larger capacities are left out. Keep the set of "
          "leaves (or a count of cached children per block) so that a victim is found without scanning every block.")
MOONCAKE_CAPACITIES = [c for c in MOONCAKE_CAPACITIES if all(mooncake[p, c] is not None for p in POLICIES)]
mooncake_belady = {c: replay(trace_hashes, c, "belady") for c in MOONCAKE_CAPACITIES}

fig, ax = plt.subplots(figsize=(7, 4))
for policy, marker in zip(POLICIES, "os"):
    ax.plot(MOONCAKE_CAPACITIES, [mooncake[policy, c] / references for c in MOONCAKE_CAPACITIES], marker=marker,
            label=f"your {policy.upper()} (leaf-first)")
ax.plot(MOONCAKE_CAPACITIES, [mooncake_belady[c].prefix_hit_ratio for c in MOONCAKE_CAPACITIES], "k--", marker="^",
        label="Belady (MIN)")
ax.set_xscale("log", base=2)
ax.set_xticks(MOONCAKE_CAPACITIES, [str(c) for c in MOONCAKE_CAPACITIES])
ax.set_xlabel("cache capacity (blocks of 512 tokens)")
ax.set_ylabel("reusable hit ratio (leading blocks)")
ax.set_title("Mooncake trace" if trace_note.startswith("Mooncake") else "SYNTHETIC stand-in for the Mooncake trace")
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
# decides how close to the ceiling a given capacity gets. Every hit block is 512 tokens of prefill a GPU does
# not compute. If the first printed line says SYNTHETIC, these numbers describe the generated stand-in, not the
# published trace.
#
# 在生产规模下结论相同：缓存容量决定了命中率的大部分，而策略决定在给定容量下离上限有多近。每个命中块都是 GPU 无需计算的
# 512 个 prefill token。如果第一行输出写着 SYNTHETIC，这些数字描述的是生成的替代 trace，而不是公开的 trace。
#
# ## Experiment 4: time saved per request | 实验 4：每个请求节省的时间
#
# Prefill time is what the user waits for before the first token (time to first token). Each request of the
# chat workload goes through `serve` with a large cache; then we time the model's prefill of the whole prompt
# and its prefill of the remaining tokens after the K/V that your cache returns (best of 3 runs each), on this
# notebook's device. On a GPU the model is made larger (8 layers, 16 heads of 64 dimensions) and the blocks
# longer (64 tokens), so that prefill is real work for the GPU; on the CPU the small model of Experiment 1 is used.
# The output says which.
#
# Prefill 时间就是用户在看到第一个 token 之前等待的时间（首 token 时延）。对话负载中的每个请求先通过使用大缓存的 `serve`；
# 然后我们在本 notebook 的设备上分别测量模型对整个提示词的 prefill，以及在你的缓存返回的 K/V 之后只对剩余 token 的 prefill
# （各取 3 次中的最好成绩）。在 GPU 上模型更大（8 层、16 个 64 维的头）、
# 块更长（64 个 token），使 prefill 对 GPU 来说是真正的计算量；在 CPU 上使用实验 1 的小模型。输出会说明使用的是哪种。

# %%
if DEVICE.type == "cuda":
    timing_model = TinyDecoder(vocab_size=VOCAB_SIZE, num_layers=8, num_heads=16, head_dim=64, seed=SEED).to(DEVICE)
    timing_block_size = 64
else:
    timing_model, timing_block_size = model, BLOCK_SIZE
timing_prompts = [[t for block_id in request.hash_ids for t in block_tokens(block_id, timing_block_size)] for request in chat]


def timed(function, *args):
    synchronize()
    started = time.perf_counter()
    function(*args)
    synchronize()
    return time.perf_counter() - started


def full_prefill(tokens):
    return timing_model(torch.tensor(tokens, dtype=torch.long, device=DEVICE))


for tokens in timing_prompts[:3]:
    full_prefill(tokens)  # warm-up
timing_cache = PrefixCache(capacity_blocks=10_000, block_size=timing_block_size, policy="lru")
saved_ms, reused_tokens, full_ms = [], [], []
for tokens in timing_prompts:
    _, counts = serve(timing_model, timing_cache, tokens)  # fills the cache, as a server would
    reused = counts["tokens_reused"]
    ids = torch.tensor(tokens, dtype=torch.long, device=DEVICE)
    prefix_kv = timing_cache.get_kv(block_hashes(tokens, timing_block_size)[:reused // timing_block_size]) or None
    without = min(timed(timing_model, ids) for _ in range(3))
    with_reuse = min(timed(timing_model, ids[reused:], prefix_kv) for _ in range(3))
    full_ms.append(without * 1000)
    saved_ms.append((without - with_reuse) * 1000)
    reused_tokens.append(reused)

fig, ax = plt.subplots(figsize=(7, 4))
ax.scatter(reused_tokens, saved_ms, alpha=0.7, label="one request")
ax.axhline(0, color="gray", linewidth=0.8)
ax.set_xlabel("prompt tokens reused from the cache")
ax.set_ylabel("prefill time saved (ms)")
where = f"{DEVICE.type} ({torch.cuda.get_device_name(DEVICE)})" if DEVICE.type == "cuda" else "cpu, 1 thread"
ax.set_title(f"Time saved per request, measured on {where}")
ax.legend()
plt.tight_layout()
plt.show()
hits = [s for s, r in zip(saved_ms, reused_tokens) if r > 0]
print(f"measured on {where}, best of 3 runs per prefill: {len(hits)} of {len(saved_ms)} requests reused a prefix; "
      f"they saved {sum(hits) / max(1, len(hits)):.2f} ms of prefill each on average, out of "
      f"{sum(full_ms) / len(full_ms):.2f} ms for a prefill without cache (hashing and cache bookkeeping not included)")

# %% [markdown]
# The saving grows with the tokens reused, as the cost formula says. With this tiny model on a CPU the
# absolute numbers are small (a prefill takes milliseconds); on a GPU serving a real model, the prefill of
# thousands of tokens takes tens to hundreds of milliseconds, and prefix caching is one of the main ways chat
# servers keep the time to first token low.
#
# 节省量随复用的 token 数增长，正如代价公式所示。在 CPU 上用这个很小的模型时，绝对数值很小（一次 prefill 只需几毫秒）；
# 在 GPU 上服务真实模型时，数千个 token 的 prefill 需要几十到几百毫秒，而前缀缓存是对话服务器降低首 token 时延的主要手段之一。

# %% [markdown]
# ## Summary | 小结
#
# **Remember:** a prefix cache reuses K/V only through chained hashes of full blocks, so a hit always means the
# whole prefix matched and the output cannot change; its eviction policy, applied to unpinned leaves only,
# decides how much prefill the server skips.
#
# **记住：** 前缀缓存只通过完整块的链式哈希复用 K/V，因此一次命中总意味着整个前缀都相同、输出不可能改变；
# 它的驱逐策略（只作用于未被固定的叶子）决定了服务器能跳过多少 prefill。
#
# This is the last notebook of the course. Go back to [01. Eviction as ranking](../01_eviction_as_ranking/01_eviction_as_ranking.ipynb)
# to see how far the one formula $\text{victim} = \arg\min_s \text{Value}(s)$ has carried you.
#
# 这是本课程的最后一个 notebook。回到 [01. 驱逐即排序](../01_eviction_as_ranking/01_eviction_as_ranking.ipynb)，看看公式
# $\text{victim} = \arg\min_s \text{Value}(s)$ 带你走了多远。
#
# ## References | 参考文献
#
# - W. Kwon et al., "Efficient Memory Management for Large Language Model Serving with PagedAttention" (vLLM), SOSP 2023; vLLM documentation, "Automatic Prefix Caching" (design: hash of parent block and tokens, free-block queue, tail-first freeing).
# - L. Zheng et al., "SGLang: Efficient Execution of Structured Language Model Programs" (RadixAttention: radix tree of prefixes, leaf eviction, lock_ref), NeurIPS 2024.
# - R. Qin et al., "Mooncake: Trading More Storage for Less Computation — A KVCache-centric Architecture for Serving LLM Chatbot", FAST 2025 (trace: github.com/kvcache-ai/Mooncake).
# - L. A. Belady, "A study of replacement algorithms for a virtual-storage computer", *IBM Systems Journal*, 1966.
# - A. Vaswani et al., "Attention Is All You Need", NeurIPS 2017 (the decoder and its sinusoidal positions).
# - Seed designs of this course: the "KV Eviction formula-to-code" walkthrough (LLM-REVIEW) and the "KV Cache Scheduling" chapter of Datawhale's llm-algo-leetcode (text CC BY 4.0, code Apache-2.0).
