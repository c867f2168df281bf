# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: nbgrader,given,tags,-all
#     formats: source/09_triton_kernels//ipynb,authoring//py:percent
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
# # 09. The KV cache's GPU kernels in Triton | 用 Triton 编写 KV 缓存的 GPU 内核
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/kvcache-course/kv-cache-eviction/blob/main/release/09_triton_kernels/09_triton_kernels.ipynb)
# [![Open in ModelScope](https://img.shields.io/badge/ModelScope-Open%20in%20ModelScope-624aff)](https://modelscope.cn/notebook/share/github/kvcache-course/kv-cache-eviction/blob/main/release/09_triton_kernels/09_triton_kernels.ipynb)
# [![GitHub](https://img.shields.io/badge/GitHub-release%2F09_triton_kernels-black)](https://github.com/kvcache-course/kv-cache-eviction/blob/main/release/09_triton_kernels/09_triton_kernels.ipynb)
#
# **Difficulty:** ★★★ advanced · **Time:** about 180 minutes · **Points:** 20 · **GPU:** the kernels compile for the GPU when CUDA is present; without it they run in Triton's interpreter on the CPU (correct results, meaningless times). Triton installs on Linux only: use Colab or Linux.
#
# **难度：** ★★★ 进阶 · **用时：** 约 180 分钟 · **总分：** 20 · **GPU：** 有 CUDA 时内核编译后在 GPU 上运行；没有时在 CPU 上由 Triton 的解释器运行（结果正确，但耗时没有意义）。Triton 只能安装在 Linux 上：请使用 Colab 或 Linux。
#
# **ModelScope (魔搭):** log in to ModelScope, then click the ModelScope badge: it opens this notebook from
# GitHub in a notebook instance of yours (choose CPU or GPU). Where that link does not work, choose
# *File → Open from URL…* in the instance's JupyterLab and paste <https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/09_triton_kernels/09_triton_kernels.ipynb>.
# 先登录魔搭，再点击 ModelScope 徽章：魔搭会从 GitHub 取来本 notebook，在你自己的 Notebook 实例中打开（可选 CPU 或 GPU）。
# 如果这个链接打不开，在实例的 JupyterLab 中选择 *File → Open from URL…*，粘贴 <https://raw.githubusercontent.com/kvcache-course/kv-cache-eviction/main/release/09_triton_kernels/09_triton_kernels.ipynb>。
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

# Triton: without a CUDA device its interpreter runs the kernels on the CPU, through numpy (correct results,
# meaningless times); TRITON_INTERPRET must be set before triton is imported. Triton installs on Linux only:
# on macOS, or Windows without WSL, open this notebook in Colab or on a Linux machine.
if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
if importlib.util.find_spec("triton") is None:
    if not sys.platform.startswith("linux"):
        raise RuntimeError("Triton installs on Linux only: open this notebook in Colab or on Linux (WSL on Windows). "
                           "Triton 只能安装在 Linux 上：请在 Colab 或 Linux（Windows 上用 WSL）中打开本 notebook。")
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", "triton"])
import triton

if os.environ.get("TRITON_INTERPRET") == "1":
    # The interpreter sets up triton.language again at every tl.sum, tl.max... in a kernel, where once per launch
    # is enough, and works out overflow checks that it then discards: both are skipped (the same results, sooner).
    from course.kernels import speed_up_interpreter

    speed_up_interpreter()
print(f"triton {triton.__version__}: " + ("kernels compile for the GPU" if torch.cuda.is_available() else
      "no CUDA device, so TRITON_INTERPRET=1: kernels run in Triton's interpreter on the CPU"))

# %% [markdown]
# ## 导读 | Overview
#
# 到目前为止，本课程的每道练习都是把 PyTorch 操作组合起来：`gather_kv` 用高级索引把各个块复制成一个连续存储的张量，`paged_attention` 再在这份副本上计算注意力。推理引擎真正为 KV 缓存编写的是**内核**（kernel）：分页注意力通过块表直接读取 K/V，不做副本；写时复制在一次启动中复制许多块；为驱逐打分的归约与注意力融合在一起，注意力矩阵从不写回显存。vLLM 和 SGLang 都用 Triton 编写了这样的内核。解码一步要把整个 KV 缓存读一遍，计算却很少，所以它的快慢取决于搬运了多少字节：少写一份副本，就少读写一遍显存。
#
# 在本 notebook 中，你将用 Triton 编写四个内核：通过块表读取 K/V 的分页收集；在一次启动中复制许多对块的批量块复制；带在线 softmax 和分组查询注意力（GQA）的分页解码注意力；以及融合的驱逐打分：它用两遍扫描累积 H2O 的分数，再为每条序列选出受害者 token。没有 GPU 也能完成：Triton 的**解释器**（`TRITON_INTERPRET=1`）在 CPU 上借助 numpy 逐个运行程序实例，执行的是同样的 `@triton.jit` 内核，所以这些内核在任何 Linux 机器上都能测试和评分；有 GPU 时，同样的代码会被编译并计时。
#
# So far every exercise of this course composed PyTorch operations: `gather_kv` copied the blocks into a contiguous
# tensor with advanced indexing, and `paged_attention` attended over the copy. What inference engines write for the
# KV cache are **kernels**: paged attention reads K/V through the block table without a copy; copy-on-write copies
# many blocks in one launch; the reduction that scores tokens for eviction is fused with attention, so the attention
# matrix never goes back to memory. vLLM and SGLang write such kernels in Triton. A decode step reads the whole KV
# cache and computes little, so its speed is the bytes it moves: one copy less is one pass over memory less.
#
# In this notebook you write four Triton kernels: a paged gather through the block table, a block copy of many pairs
# in one launch, paged decode attention with an online softmax and grouped-query attention (GQA), and a fused
# eviction score that accumulates H2O's scores in two passes and picks each sequence's victim token. No GPU is needed:
# Triton's **interpreter** (`TRITON_INTERPRET=1`) runs the same `@triton.jit` kernels on the CPU through numpy, one
# program after another, so they are tested and graded on any Linux machine; on a GPU the same code compiles and is
# timed.

# %% [markdown]
# ## Learning goals | 学习目标
#
# After this notebook you can:
# 1. write a Triton kernel and its launcher: the launch grid, `tl.program_id`, pointers plus offsets times strides,
#    masked loads and stores, and say why a masked lane reads nothing;
# 2. read a paged KV cache through an int32 block table, in any memory layout (through the strides), without reading
#    a slot past a sequence's length or a block outside the pool;
# 3. compute decode attention block by block with an online softmax (running max and running sum), with several
#    query heads per KV head, and match `torch.nn.functional.scaled_dot_product_attention` in float32 and float16;
# 4. fuse an eviction score into attention without materializing the attention matrix, and say what the
#    interpreter can and cannot tell you about a kernel (results yes; speed and races no).
#
# 完成本 notebook 后，你能够：
# 1. 编写 Triton 内核及其启动函数：启动网格、`tl.program_id`、用“指针 + 偏移 × 步长”寻址、带掩码的读取和写入，并说明为什么被掩码屏蔽的通道不读取任何内存；
# 2. 通过 int32 块表读取分页 KV 缓存：借助步长支持任意内存布局，并且既不读取序列长度之后的槽位，也不读取池之外的块；
# 3. 用在线 softmax（运行最大值和运行和）逐块计算解码注意力，允许多个查询头共享一个 KV 头，并在 float32 和 float16 下与 `torch.nn.functional.scaled_dot_product_attention` 的结果一致；
# 4. 把驱逐分数融合进注意力计算，而不生成完整的注意力矩阵；并说明解释器能告诉你内核的什么（结果是否正确），不能告诉你什么（速度和数据竞争）。
#
# ## Triton in one page | 一页讲清 Triton
#
# A **kernel** is a function that runs as many **programs** at once, one for each point of its **launch grid**:
# `kernel[(num_seqs, max_blocks)](...)` starts `num_seqs * max_blocks` programs, and `tl.program_id(0)`,
# `tl.program_id(1)` tell each one which point it is. A tensor argument arrives as a pointer to its first element;
# the element at index $(i, j, k)$ lies at `ptr + i * s0 + j * s1 + k * s2`, with the **strides** `(s0, s1, s2) =
# tensor.stride()` counted in elements. A program works on small vectors at once: `tl.arange(0, N)` (N a power of
# two, fixed at compile time: a `tl.constexpr`) gives N offsets, `tl.load(ptr + offsets, mask=m, other=0.0)` reads
# the lanes where `m` is true and gives `0.0` elsewhere, `tl.store(ptr + offsets, values, mask=m)` writes where `m`
# is true. **A masked lane touches no memory**: that is how a kernel stops at a length that does not fill its last
# block. Nothing checks bounds: an address outside a tensor reads another tensor's memory, or crashes the process.
# The tests of this notebook put blocks of NaN around the pool, so that a read outside it shows up as NaN.
# Reductions (`tl.sum`, `tl.max`), `tl.exp`, `tl.where`, `tl.maximum` and casts (`x.to(tl.float32)`) work on
# whole vectors; a `for block in range(n)` loop runs inside the program. Program ids and int32 block ids times
# strides can exceed $2^{31}$ in a large pool, so offsets are computed in int64 (`.to(tl.int64)`).
#
# Without a CUDA device, the setup cell sets `TRITON_INTERPRET=1` before importing triton: the **interpreter** then
# runs the programs one after another, each vector operation a numpy call. Results are the same; it is thousands of
# times slower, and since programs never run at the same time, a data race cannot show there. Its timings mean nothing.
#
# **内核**是这样一个函数：它同时作为许多**程序实例**运行，**启动网格**中的每个点对应一个程序实例：`kernel[(num_seqs, max_blocks)](...)` 启动 `num_seqs * max_blocks` 个程序实例，每个程序实例通过 `tl.program_id(0)`、`tl.program_id(1)` 得知自己是网格中的哪个点。张量参数以指向其首元素的指针传入；下标为 $(i, j, k)$ 的元素位于 `ptr + i * s0 + j * s1 + k * s2`，其中**步长** `(s0, s1, s2) = tensor.stride()` 以元素个数计。一个程序实例一次处理一小段向量：`tl.arange(0, N)` 给出 N 个偏移（N 必须是 2 的幂，并在编译时固定，即 `tl.constexpr`）；`tl.load(ptr + offsets, mask=m, other=0.0)` 读取 `m` 为真的通道，其余通道得到 `0.0`；`tl.store(ptr + offsets, values, mask=m)` 只写入 `m` 为真的通道。**被掩码屏蔽的通道不访问任何内存**：序列长度没有填满最后一块时，内核正是靠掩码停在长度处。Triton 不做任何越界检查：张量之外的地址会读到别的张量的内存，甚至让进程崩溃。本 notebook 的测试在池的前后各放了几个全是 NaN 的**保护块**，越出池的读取因此会以 NaN 的形式显现出来。归约（`tl.sum`、`tl.max`）、`tl.exp`、`tl.where`、`tl.maximum` 和类型转换（`x.to(tl.float32)`）都作用于整个向量；`for block in range(n)` 循环在程序实例内部执行。在大的池中，程序实例编号或 int32 块 id 乘以步长可能超过 $2^{31}$，所以偏移要用 int64 计算（`.to(tl.int64)`）。
#
# 没有 CUDA 设备时，环境配置单元会在导入 triton 之前设置 `TRITON_INTERPRET=1`：此时由**解释器**逐个运行程序实例，每个向量操作都是一次 numpy 调用。结果相同，但要慢几千倍；而且程序实例从不同时运行，所以数据竞争在解释器中不会显现。它测出的耗时没有意义。
#
# ## The formulas | 公式
#
# **Paged layout** (notebook 02): a pool `[num_blocks, block_size, num_kv_heads, head_dim]`; token $t$ of sequence
# $s$ lies in block `block_tables[s, t // B]`, slot `t % B`, where $B$ is the block size; sequence $s$ uses the first
# $\lceil \ell_s / B \rceil$ entries of its row, $\ell_s$ its length.
#
# **Decode attention with grouped-query heads.** One new token per sequence has $H_q$ query heads; the cache has
# $H_{kv}$ KV heads, $H_q = G \cdot H_{kv}$. Query head $h$ reads KV head $\lfloor h / G \rfloor$ (the grouping of
# `scaled_dot_product_attention(..., enable_gqa=True)`):
#
# $$o_h = \sum_{t < \ell} p_{h,t}\, v_{t, \lfloor h/G \rfloor}, \qquad p_{h,t} = \frac{e^{x_{h,t}}}{\sum_{u < \ell} e^{x_{h,u}}},
# \qquad x_{h,t} = c \cdot q_h \cdot k_{t, \lfloor h/G \rfloor}, \quad c = 1/\sqrt{\text{head\_dim}} \text{ unless given}.$$
#
# **Online softmax** (Milakov and Gimelshein, 2018; FlashAttention): visit the blocks in order with a running max
# $m$, a running sum $l$ and an accumulator $a$, starting from $m = -\infty$, $l = 0$, $a = 0$. For each block with
# scores $x_j$ (the tokens of the block below $\ell$):
#
# $$m' = \max(m, \max_j x_j), \qquad l' = l\, e^{m - m'} + \sum_j e^{x_j - m'}, \qquad a' = a\, e^{m - m'} + \sum_j e^{x_j - m'} v_j,$$
#
# and at the end $o = a / l$. Every exponent is $\le 0$, so nothing overflows, and the result is the softmax's exactly
# (up to rounding), whatever the block size and order.
#
# **H2O's accumulated attention** (notebook 07), per token and summed over the query heads: $S_t \leftarrow S_t +
# \sum_h p_{h,t}$. $p_{h,t}$ needs the final $m$ and $l$ of head $h$, known only after the last block: a first pass
# computes them, a second pass adds $e^{x_{h,t} - m_h} / l_h$ to $S_t$, and the $H_q \times \ell$ attention matrix is
# never written. The victim is the evictable token (older than the last `recent`) with the smallest $S_t$, ties to
# the lower position.
#
# **分页布局**（notebook 02）：池的形状为 `[num_blocks, block_size, num_kv_heads, head_dim]`；记块大小为 $B$，序列 $s$ 的第 $t$ 个 token 位于块 `block_tables[s, t // B]` 的槽位 `t % B`；记序列 $s$ 的长度为 $\ell_s$，它只用到块表第 $s$ 行的前 $\lceil \ell_s / B \rceil$ 项。
#
# **分组查询注意力下的解码注意力。** 每条序列的新 token 有 $H_q$ 个查询头；缓存有 $H_{kv}$ 个 KV 头，$H_q = G \cdot H_{kv}$。查询头 $h$ 读取第 $\lfloor h / G \rfloor$ 个 KV 头（与 `scaled_dot_product_attention(..., enable_gqa=True)` 的分组方式相同）：
#
# $$o_h = \sum_{t < \ell} p_{h,t}\, v_{t, \lfloor h/G \rfloor}, \qquad p_{h,t} = \frac{e^{x_{h,t}}}{\sum_{u < \ell} e^{x_{h,u}}},
# \qquad x_{h,t} = c \cdot q_h \cdot k_{t, \lfloor h/G \rfloor}, \quad \text{未给定时 } c = 1/\sqrt{\text{head\_dim}}.$$
#
# **在线 softmax**（Milakov 与 Gimelshein，2018；FlashAttention）：按顺序逐块处理，同时维护运行最大值 $m$、运行和 $l$ 和累加器 $a$，初值为 $m = -\infty$、$l = 0$、$a = 0$。设一个块中位置小于 $\ell$ 的各个 token 的分数为 $x_j$，则：
#
# $$m' = \max(m, \max_j x_j), \qquad l' = l\, e^{m - m'} + \sum_j e^{x_j - m'}, \qquad a' = a\, e^{m - m'} + \sum_j e^{x_j - m'} v_j,$$
#
# 最后 $o = a / l$。所有指数都 $\le 0$，所以不会溢出；无论块大小和处理顺序如何，结果都与直接计算的 softmax 相同（只差舍入误差）。
#
# **H2O 的累积注意力**（notebook 07）：每个 token 有一个分数，每个解码步都加上所有查询头给它的注意力，即 $S_t \leftarrow S_t + \sum_h p_{h,t}$。计算 $p_{h,t}$ 需要查询头 $h$ 最终的 $m_h$ 和 $l_h$，而它们要处理完最后一个块才知道：所以第一遍扫描先算出它们，第二遍扫描再把 $e^{x_{h,t} - m_h} / l_h$ 加到 $S_t$ 上，$H_q \times \ell$ 的注意力矩阵从不写入内存。受害者是可驱逐 token（不在最后 `recent` 个位置中的 token）里 $S_t$ 最小的那个，平局时取位置更小的。

# %% [markdown]
# ### A first kernel | 第一个内核
#
# Run the cell below: a kernel that doubles a vector of 10 numbers, 4 per program. The grid has
# $\lceil 10 / 4 \rceil = 3$ programs; the third one's last two lanes are masked, so it neither reads nor writes past
# the 10th element. `inputs.stride(0)` is 1 here; the kernels of the tasks take every stride as an argument.
#
# 运行下面的单元：这个内核把一个含 10 个数的向量乘以 2，每个程序实例处理 4 个数。网格中有 $\lceil 10 / 4 \rceil = 3$ 个程序实例；第三个程序实例的最后两个通道被掩码屏蔽，所以它既不读也不写第 10 个元素之后的内存。这里 `inputs.stride(0)` 等于 1；各任务中的内核把每个步长都作为参数接收。

# %%
import torch
import triton
import triton.language as tl


@triton.jit
def double_kernel(inputs_ptr, outputs_ptr, count, stride, PER_PROGRAM: tl.constexpr):
    offsets = tl.program_id(0) * PER_PROGRAM + tl.arange(0, PER_PROGRAM)
    mask = offsets < count
    values = tl.load(inputs_ptr + offsets * stride, mask=mask)
    tl.store(outputs_ptr + offsets, 2 * values, mask=mask)


inputs = torch.arange(10.0, device=DEVICE)
outputs = torch.full((12,), -1.0, device=DEVICE)  # two extra entries that no program may write
double_kernel[(triton.cdiv(10, 4),)](inputs, outputs, 10, inputs.stride(0), PER_PROGRAM=4)
print("programs:", triton.cdiv(10, 4), "| outputs:", outputs.tolist())

# %% [markdown] nbgrader={"grade": false, "grade_id": "task9_1_paged_gather_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 9.1: paged_gather (4 points)
#
# `paged_gather(cache, block_tables, lengths)` copies every sequence's cached rows, in token order, into a new
# contiguous tensor: notebook 02's `gather_kv` for a whole batch, as one kernel. `cache` is one pool (the keys or
# the values) `[num_blocks, block_size, num_heads, head_dim]`, float16 or float32, in **any layout**: address it
# through its strides, never through `num_heads * head_dim`. `block_tables` is int32 `[num_seqs, max_blocks]`,
# `lengths` int32 `[num_seqs]`. Return a new tensor `[num_seqs, max_blocks * block_size, num_heads, head_dim]` in
# the cache's dtype and on its device: row `t` of sequence `s` is token `t` (block
# `block_tables[s, t // block_size]`, slot `t % block_size`) for `t < lengths[s]`, and **zero** for the rows past
# the length.
#
# The kernel has one program per (sequence, logical block): grid `(num_seqs, max_blocks)`; it copies every head of
# its block. The given first lines of the launcher check the input with `course.kernels.check_paged_batch` (read its
# docstring): a `TypeError` or `ValueError` before any launch for a wrong type, dtype or shape, a length outside
# `[0, max_blocks * block_size]`, or a block id that a length uses outside the pool; block size and head dimension
# must be powers of two (so that `tl.arange` covers them exactly).
#
# Traps: the last block of a sequence has slots past its length that hold **stale tokens** of an earlier sequence:
# mask them (`tokens < length`), do not copy whole blocks. Entries of a row past the sequence's blocks are **padding**
# (-1 in the tests): the program of such a block must not read the block it names; it masks every lane. The tests use
# a pool whose keys and values sit side by side in memory (`paged_pool(..., interleaved=True)`: the slot stride is
# twice `num_heads * head_dim`), a sequence of length 0, a block shared by two sequences, and free blocks.
#
# ## 任务 9.1：paged_gather（4 分）
#
# `paged_gather(cache, block_tables, lengths)` 把每条序列缓存的行按 token 顺序复制到一个新的、连续存储的张量中：它相当于 notebook 02 的 `gather_kv`，只是一次处理整个批次，并且只用一个内核。`cache` 是一个池（键或值），形状为 `[num_blocks, block_size, num_heads, head_dim]`，数据类型为 float16 或 float32，内存布局**任意**：要通过它的步长寻址，绝不能用 `num_heads * head_dim` 推算偏移。`block_tables` 是形状为 `[num_seqs, max_blocks]` 的 int32 张量，`lengths` 是形状为 `[num_seqs]` 的 int32 张量。返回一个形状为 `[num_seqs, max_blocks * block_size, num_heads, head_dim]` 的新张量，数据类型和设备与池相同：当 `t < lengths[s]` 时，序列 `s` 的第 `t` 行是它的第 `t` 个 token（块 `block_tables[s, t // block_size]` 的槽位 `t % block_size`）；长度之后的行都是**零**。
#
# 内核为每个（序列，逻辑块）启动一个程序实例：网格为 `(num_seqs, max_blocks)`；每个程序实例复制它负责的块中所有注意力头的数据。启动函数开头给定的几行用 `course.kernels.check_paged_batch` 检查输入（请阅读它的文档字符串）：类型、数据类型或形状不对，长度不在 `[0, max_blocks * block_size]` 内，或者某个长度用到的块 id 不在池内时，它在任何启动之前抛出 `TypeError` 或 `ValueError`；块大小和头维度必须是 2 的幂（这样 `tl.arange` 恰好覆盖它们）。
#
# 陷阱：序列最后一个块中、长度之后的槽位存放着早先某条序列留下的**旧 token**：要用掩码（`tokens < length`）屏蔽它们，不要整块复制。块表的一行中，序列所用的块之后的项是**填充**（测试中为 -1）：负责这种块的程序实例不得读取该项所指的块，而要屏蔽所有通道。测试用到一个键和值在内存中交错存放的池（`paged_pool(..., interleaved=True)`：槽位的步长是 `num_heads * head_dim` 的两倍）、一条长度为 0 的序列、一个被两条序列共享的块，以及空闲块。

# %% nbgrader={"grade": false, "grade_id": "task9_1_paged_gather", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch
import triton
import triton.language as tl

from course.kernels import check_paged_batch


@triton.jit
def _paged_gather_kernel(cache_ptr, block_tables_ptr, lengths_ptr, out_ptr,
                         stride_block, stride_slot, stride_head, stride_dim, stride_table,
                         stride_out_seq, stride_out_token, stride_out_head, num_heads,
                         BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr):
    # One program copies one logical block of one sequence, every head of it.
    seq = tl.program_id(0).to(tl.int64)
    block = tl.program_id(1)
    slots = tl.arange(0, BLOCK_SIZE)
    dims = tl.arange(0, HEAD_DIM)
    # TODO 9.1.1: the sequence's length, this block's physical id (int64), the token of each slot, and the mask of
    #   the slots that hold one of the sequence's tokens.
    # 提示：长度是 lengths_ptr 之后第 seq 个 int32，用 tl.load 读出；物理块 id 是块表第 seq 行（行与行相隔 stride_table
    #       个元素）中下标为 block 的项，读出后先转成 int64，再去乘步长。逻辑块 b 的槽位 j 存放序列的第 b * BLOCK_SIZE + j
    #       个 token。掩码只在长度之内为真，所以填充块的所有通道都为假。
    # Hint: the length is the int32 that lies seq places after lengths_ptr (read it with tl.load); the physical id is
    #       entry block of row seq of the table, whose rows lie stride_table elements apart: widen it to int64 before
    #       it multiplies a stride. Slot j of logical block b holds the sequence's token b * BLOCK_SIZE + j. The mask is
    #       true only below the length, so every lane of a padding block is false.
    ### BEGIN SOLUTION
    length = tl.load(lengths_ptr + seq)
    physical = tl.load(block_tables_ptr + seq * stride_table + block).to(tl.int64)
    tokens = block * BLOCK_SIZE + slots
    mask = tokens < length
    ### END SOLUTION
    for head in range(num_heads):
        # TODO 9.1.2: load this head's [BLOCK_SIZE, HEAD_DIM] values through the cache's strides, masked, and store
        #   them at rows `tokens` of the output (the output is contiguous: its last stride is 1).
        # 提示：一个元素的地址是 cache_ptr 加上每个下标（物理块、槽位、头、维度）乘以它那一维的步长；让槽位沿第 0 维、
        #       维度沿第 1 维展开（[:, None] 与 [None, :]），就得到一块 [BLOCK_SIZE, HEAD_DIM] 的地址。输出中的行号是 token，
        #       不是槽位。读取和写入都用扩展成两维的掩码。
        # Hint: an element's address is cache_ptr plus each index (physical block, slot, head, dimension) times the
        #       stride of its dimension; spread the slots along axis 0 and the dimensions along axis 1 ([:, None] and
        #       [None, :]) to get a [BLOCK_SIZE, HEAD_DIM] tile of addresses. The output's row is the token, not the slot.
        #       Load and store with the mask broadcast to two dimensions.
        ### BEGIN SOLUTION
        source = (cache_ptr + physical * stride_block + slots[:, None] * stride_slot + head * stride_head
                  + dims[None, :] * stride_dim)
        values = tl.load(source, mask=mask[:, None])
        target = (out_ptr + seq * stride_out_seq + tokens[:, None] * stride_out_token + head * stride_out_head
                  + dims[None, :])
        tl.store(target, values, mask=mask[:, None])
        ### END SOLUTION


def paged_gather(cache, block_tables, lengths):
    """Every sequence's cached rows in token order, zero past its length, with one kernel launch.

    Args:
        cache: float16 or float32 tensor [num_blocks, block_size, num_heads, head_dim], any strides; block_size
            and head_dim powers of two.
        block_tables: int32 tensor [num_seqs, max_blocks]; entries past a sequence's blocks are not read.
        lengths: int32 tensor [num_seqs], each in [0, max_blocks * block_size].

    Returns:
        A new tensor [num_seqs, max_blocks * block_size, num_heads, head_dim] in cache's dtype on its device: row t
        of sequence s is token t (block block_tables[s, t // block_size], slot t % block_size) for t < lengths[s],
        zero after.

    Raises:
        TypeError, ValueError: from check_paged_batch, before any launch.
    """
    check_paged_batch("paged_gather", cache, block_tables, lengths)
    block_tables, lengths = block_tables.contiguous(), lengths.contiguous()
    num_blocks, block_size, num_heads, head_dim = cache.shape
    num_seqs, max_blocks = block_tables.shape
    # TODO 9.1.3: a zero tensor for the result, then one launch of _paged_gather_kernel on the grid
    #   (num_seqs, max_blocks), with the cache's four strides, the table's row stride and the result's first three.
    # 提示：torch.zeros 的 dtype 和 device 取自池；启动写作 kernel[grid](...)，tl.constexpr 参数（BLOCK_SIZE、HEAD_DIM）
    #       按关键字传入；*cache.stride() 展开池的四个步长，输出的前三个步长也可以这样展开。
    # Hint: take torch.zeros's dtype and device from the pool; a launch is kernel[grid](...), with the tl.constexpr
    #       parameters (BLOCK_SIZE, HEAD_DIM) passed by keyword; *cache.stride() spreads the pool's four strides, and the
    #       output's first three spread alike.
    ### BEGIN SOLUTION
    out = torch.zeros(num_seqs, max_blocks * block_size, num_heads, head_dim, dtype=cache.dtype, device=cache.device)
    _paged_gather_kernel[(num_seqs, max_blocks)](
        cache, block_tables, lengths, out, *cache.stride(), block_tables.stride(0), *out.stride()[:3], num_heads,
        BLOCK_SIZE=block_size, HEAD_DIM=head_dim)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task9_1_1_gathers", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that paged_gather copies each sequence's tokens in order, zero past its length, in any layout."""


def _check_task9_1_1_gathers():
    import torch

    from course.checks import assert_raises, assert_same_tensor
    from course.env import pick_device
    from course.kernels import paged_batch, paged_pool

    device = pick_device()

    def rows(cache, table, length):
        """The rows of one sequence in token order, from its block table: the expected values."""
        block_size = cache.shape[1]
        used = table[:(length + block_size - 1) // block_size].long()
        return cache[used].flatten(0, 1)[:length]

    def expected(batch, cache):
        out = torch.zeros(len(batch.lengths), batch.block_tables.shape[1] * cache.shape[1], *cache.shape[2:],
                          dtype=cache.dtype, device=cache.device)
        for s, length in enumerate(batch.lengths.tolist()):
            out[s, :length] = rows(cache, batch.block_tables[s], length)
        return out

    # A pool of 6 blocks of 4 slots, 1 head of dimension 2, where the key of slot (b, j) is [10 * b + j, -(10 * b + j)].
    k_cache, _, _ = paged_pool(6, 4, 1, 2, device=device)
    ids = torch.arange(24.0, device=device).reshape(6, 4) + 6 * torch.arange(6.0, device=device)[:, None]
    k_cache.copy_(torch.stack((ids, -ids), dim=-1)[:, :, None, :])
    table = torch.tensor([[4, 1, 3], [2, -1, -1]], dtype=torch.int32, device=device)
    lengths = torch.tensor([10, 3], dtype=torch.int32, device=device)
    first = torch.tensor([40.0, 41, 42, 43, 10, 11, 12, 13, 30, 31], device=device)
    want = torch.zeros(2, 12, 1, 2, device=device)
    want[0, :10, 0] = torch.stack((first, -first), dim=-1)
    want[1, :3, 0] = torch.tensor([[20.0, -20.0], [21.0, -21.0], [22.0, -22.0]], device=device)
    assert_same_tensor(paged_gather(k_cache, table, lengths), want,
                       f"paged_gather(tables [[4, 1, 3], [2, -1, -1]], lengths [10, 3]) on {device} "
                       "(the key of slot j of block b is [10 * b + j, -(10 * b + j)])")
    cases = [dict(lengths=[5, 0, 9], block_size=4, num_heads=2, head_dim=8, seed=1),
             dict(lengths=[8, 8, 3], block_size=4, num_heads=3, head_dim=4, seed=2, interleaved=True),
             dict(lengths=[7, 16], block_size=8, num_heads=2, head_dim=16, seed=3, dtype=torch.float16),
             dict(lengths=[6], block_size=2, num_heads=1, head_dim=4, seed=4, extra_table_columns=2)]
    for case in cases:
        batch = paged_batch(device=device, **case)
        # Both expected values come before the first call: the keys and the values may share one tensor's memory.
        wants = [expected(batch, batch.k_cache), expected(batch, batch.v_cache)]
        for name, cache, want in (("keys", batch.k_cache, wants[0]), ("values", batch.v_cache, wants[1])):
            assert_same_tensor(paged_gather(cache, batch.block_tables, batch.lengths), want,
                               f"paged_gather of the {name} of paged_batch({case}) on {device}")
    batch = paged_batch([5, 3], 4, 2, 8, device=device)
    for args, error, what in [
            ((batch.k_cache, batch.block_tables.long(), batch.lengths), TypeError, "an int64 block table"),
            ((batch.k_cache, batch.block_tables, torch.tensor([5, 9], dtype=torch.int32, device=device)),
             ValueError, "a length of 9 in 2 blocks of 4"),
            ((batch.k_cache, torch.full_like(batch.block_tables, 6), batch.lengths), ValueError,
             "block id 6 in a pool of 5 blocks")]:
        assert_raises(error, f"paged_gather with {what} on {device}", paged_gather, *args)
    # Any int32 tensors of those shapes will do: here a block table stored column by column and strided lengths.
    batch = paged_batch([7, 5, 9], 4, 2, 4, device=device, seed=5)
    want = expected(batch, batch.k_cache)
    columns, strided = batch.block_tables.t().contiguous().t(), batch.lengths.repeat_interleave(2)[::2]
    assert_same_tensor(paged_gather(batch.k_cache, columns, strided), want,
                       f"paged_gather on {device} with block_tables.t().contiguous().t() (the same table, stored column "
                       "by column: strides (1, num_seqs)) and lengths a view with stride 2")
    # The same pool stored heads last: a head's elements are num_heads apart and the heads are adjacent.
    heads_last = batch.k_cache.permute(0, 1, 3, 2).contiguous().permute(0, 1, 3, 2)
    assert_same_tensor(paged_gather(heads_last, batch.block_tables, batch.lengths), want,
                       f"paged_gather on {device} with the cache stored heads last (its strides "
                       f"{tuple(heads_last.stride())}: head stride 1, dimension stride num_heads)")

    # Blocks whose slots are followed by unused ones: a block's address is its stride, not block_size slots.
    padded = torch.full((batch.k_cache.shape[0], 4 + 3, 2, 4), float("nan"), device=device)
    padded[:, :4] = batch.k_cache
    assert_same_tensor(paged_gather(padded[:, :4], batch.block_tables, batch.lengths), want,
                       f"paged_gather on {device} with blocks of 4 slots each followed by 3 unused slots of NaN (the "
                       "block stride is 7 slots: address a block through its stride)")
    ### BEGIN HIDDEN TESTS
    import random as _random

    # Each head's [num_blocks, block_size, head_dim] stored apart: a head stride past the whole pool.
    _heads_apart = batch.v_cache.permute(2, 0, 1, 3).contiguous().permute(1, 2, 0, 3)
    assert_same_tensor(paged_gather(_heads_apart, batch.block_tables, batch.lengths), expected(batch, batch.v_cache),
                       "paged_gather with each head's blocks stored apart (head stride num_blocks * block_size * "
                       "head_dim)", reveal=False)
    _rng = _random.Random(9101)
    for _case in range(8):
        _block = _rng.choice([2, 4, 8])
        _lengths = [_rng.randint(0, 3 * _block) for _ in range(_rng.randint(1, 3))]
        _spec = dict(num_heads=_rng.randint(1, 3), head_dim=_rng.choice([4, 8, 16]), seed=9100 + _case,
                     dtype=torch.float16 if _case % 2 else torch.float32, interleaved=_case % 3 == 0,
                     free_blocks=_rng.randint(0, 3), extra_table_columns=_rng.randint(0, 1))
        _batch = paged_batch(_lengths, _block, device=device, **_spec)
        _wants = [expected(_batch, _batch.k_cache), expected(_batch, _batch.v_cache)]
        for _cache, _want in zip((_batch.k_cache, _batch.v_cache), _wants):
            assert_same_tensor(paged_gather(_cache, _batch.block_tables, _batch.lengths), _want,
                               f"paged_gather on random case {_case} (lengths {_lengths}, block_size {_block})",
                               reveal=False)
    _batch = paged_batch([9, 2, 16, 5], 4, 2, 8, device=device, seed=9111, interleaved=True, extra_table_columns=1)
    _want = expected(_batch, _batch.v_cache)
    _wide = torch.stack((_batch.block_tables, torch.zeros_like(_batch.block_tables)), dim=-1)  # [seqs, blocks, 2]
    assert_same_tensor(paged_gather(_batch.v_cache, _wide[..., 0], _batch.lengths), _want,
                       "paged_gather with block_tables a strided view (every other int32 of a wider tensor)",
                       reveal=False)
    ### END HIDDEN TESTS


_check_task9_1_1_gathers()

# %% nbgrader={"grade": true, "grade_id": "test_task9_1_2_one_launch", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that paged_gather gathers a whole batch with one kernel launch."""


def _check_task9_1_2_one_launch():
    from course.checks import assert_plain_equal
    from course.env import pick_device
    from course.kernels import count_launches, paged_batch

    device = pick_device()
    batch = paged_batch([5, 0, 9], 4, 2, 8, device=device, seed=11)
    _, launches = count_launches(paged_gather, batch.k_cache, batch.block_tables, batch.lengths)
    assert_plain_equal(launches, 1, f"the number of kernel launches of paged_gather for 3 sequences on {device}")

    ### BEGIN HIDDEN TESTS
    _batch = paged_batch([1], 2, 1, 4, device=device, seed=12)
    _, _launches = count_launches(paged_gather, _batch.k_cache, _batch.block_tables, _batch.lengths)
    assert_plain_equal(_launches, 1, "the number of kernel launches of paged_gather for 1 sequence", reveal=False)
    ### END HIDDEN TESTS


_check_task9_1_2_one_launch()

# %% [markdown] nbgrader={"grade": false, "grade_id": "task9_2_copy_blocks_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 9.2: copy_blocks (4 points)
#
# Copy-on-write (notebook 02) copies a shared block before a sequence writes into it; after a beam search step or a
# parallel-sampling fork, an engine copies many blocks at once. `copy_blocks(k_cache, v_cache, pairs)` copies block
# `pairs[i, 0]` (the source) onto block `pairs[i, 1]` (the destination) for every row `i`, in both pools, **in one
# launch** with one program per pair, and returns `None`. `k_cache` and `v_cache` are two float16 or float32 pools of
# the same shape, strides, dtype and device (the given lines check it); `pairs` is an int32 or int64 tensor
# `[num_pairs, 2]` on their device (exactly 2-D: a `[2, 2, 2]` tensor is not `[num_pairs, 2]`). Without pairs there is
# nothing to launch, but an empty `pairs` is checked like any other (`torch.tensor([])` is a float tensor: `TypeError`).
#
# Rejected **before the launch**, so that nothing is copied: `TypeError` when `pairs` is not an int32 or int64
# tensor (an int16, float or bool tensor, or a list); `ValueError` when it is not `[num_pairs, 2]`, is on another
# device, names a block outside the pool, names **one destination twice**, or names a block that is **both a source
# and a destination** (a pair `(b, b)` included); check the shape and the device before the ids (the tests stand in
# for another device with the meta device, whose tensors hold shapes without data). The programs of a launch run at
# the same time, in no fixed order:
# with a repeated destination, which copy lands last is a race; with a block that one program writes and another
# reads, the reader may see the block before or after the write. (A source copied to several destinations is fine:
# the programs only read it.) The interpreter runs the programs one after another, so it never shows such a race:
# the check is the only guard.
#
# Graded in parts: 9.2.1 copies (2) · 9.2.2 rejected before the launch (1) · 9.2.3 one launch (1).
#
# ## 任务 9.2：copy_blocks（4 分）
#
# 写时复制（notebook 02）在序列写入一个共享块之前先复制这个块；束搜索走一步或并行采样分叉之后，引擎要一次复制许多块。`copy_blocks(k_cache, v_cache, pairs)` 对 `pairs` 的每一行 `i`，在两个池中都把块 `pairs[i, 0]`（源）复制到块 `pairs[i, 1]`（目标）上，所有的对在**一次启动**中完成，每对一个程序实例；它返回 `None`。`k_cache` 和 `v_cache` 是两个 float16 或 float32 的池，形状、步长、数据类型和设备都相同（给定的几行会检查这一点）；`pairs` 是与它们位于同一设备上、形状为 `[num_pairs, 2]` 的 int32 或 int64 张量（必须恰好是二维的：`[2, 2, 2]` 的张量不是 `[num_pairs, 2]`）。没有任何对时，不启动内核，但空的 `pairs` 也要像其他输入一样检查（`torch.tensor([])` 是浮点张量：抛出 `TypeError`）。
#
# 以下输入在**启动之前**就被拒绝，因此什么都不会被复制：`pairs` 不是 int32 或 int64 张量（例如 int16、浮点或 bool 张量，或者一个列表）时抛出 `TypeError`；它的形状不是 `[num_pairs, 2]`、位于另一个设备上、含有池之外的块、**同一个目标出现两次**，或者某个块**既是源又是目标**（包括 `(b, b)` 这样的对）时抛出 `ValueError`；先检查形状和设备，再检查块号（测试用 meta 设备充当另一个设备，它的张量只有形状、没有数据）。一次启动中的程序实例同时运行，没有固定的顺序：目标重复时，哪一次复制最后生效取决于执行的先后，这就是数据竞争；一个块被某个程序实例写入、又被另一个程序实例读取时，读到的可能是写入之前的内容，也可能是写入之后的内容。（同一个源复制到多个目标没有问题：这些程序实例只读取它。）解释器逐个运行程序实例，永远不会暴露这样的数据竞争：所以这项检查是唯一的保护。
#
# 分部分计分：9.2.1 复制（2 分）· 9.2.2 启动前拒绝（1 分）· 9.2.3 一次启动（1 分）。

# %% nbgrader={"grade": false, "grade_id": "task9_2_copy_blocks", "locked": false, "schema_version": 3, "solution": true, "task": false}
import torch
import triton
import triton.language as tl


@triton.jit
def _copy_blocks_kernel(k_ptr, v_ptr, pairs_ptr, stride_block, stride_slot, stride_head, stride_dim, num_heads,
                        BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr):
    # One program copies one pair's block: every slot and head, in both pools.
    pair = tl.program_id(0).to(tl.int64)
    slots = tl.arange(0, BLOCK_SIZE)[:, None]
    dims = tl.arange(0, HEAD_DIM)[None, :]
    # TODO 9.2.1: this program's source and destination block ids, as int64 (pairs is contiguous int64 [num_pairs, 2]).
    # 提示：每行有两个元素，所以第 pair 行从 pairs_ptr 之后第 2 * pair 个元素开始：源在前，目标紧随其后；各用一次 tl.load。
    # Hint: each row holds two entries, so row pair starts 2 * pair elements after pairs_ptr: the source first, the
    #       destination right after it; one tl.load each.
    ### BEGIN SOLUTION
    source = tl.load(pairs_ptr + 2 * pair)
    target = tl.load(pairs_ptr + 2 * pair + 1)
    ### END SOLUTION
    for head in range(num_heads):
        offsets = slots * stride_slot + head * stride_head + dims * stride_dim
        # TODO 9.2.2: copy this head's [BLOCK_SIZE, HEAD_DIM] values from block source to block target, in k and in v.
        # 提示：offsets 已经覆盖了这个头在一个块内的整块 [BLOCK_SIZE, HEAD_DIM]；一个块从池的指针加上块 id 乘以 stride_block
        #       处开始。从源块 tl.load，再 tl.store 到目标块；k 和 v 各做一次（两个池的步长相同）。整块都要复制，不需要掩码。
        # Hint: offsets already spans this head's whole [BLOCK_SIZE, HEAD_DIM] tile within a block; a block starts at the
        #       pool's pointer plus its id times stride_block. tl.load from the source block and tl.store into the
        #       destination block, once in k and once in v (both pools have the same strides). The whole block is
        #       copied: no mask.
        ### BEGIN SOLUTION
        tl.store(k_ptr + target * stride_block + offsets, tl.load(k_ptr + source * stride_block + offsets))
        tl.store(v_ptr + target * stride_block + offsets, tl.load(v_ptr + source * stride_block + offsets))
        ### END SOLUTION


def copy_blocks(k_cache, v_cache, pairs):
    """Copy block pairs[i, 0] onto block pairs[i, 1] in both pools, every pair in one kernel launch.

    Args:
        k_cache, v_cache: pools [num_blocks, block_size, num_heads, head_dim] of the same shape, strides, dtype and
            device; block_size and head_dim powers of two.
        pairs: int32 or int64 tensor [num_pairs, 2] of (source, destination) block ids on the pools' device.

    Returns:
        None; the destinations of both pools hold copies of their sources, every other block is unchanged.

    Raises:
        TypeError: a pool or pairs that is not a tensor, or pairs not int32 or int64.
        ValueError: pools that differ; pairs not [num_pairs, 2], on another device, naming a block outside the pool,
            a destination twice, or a block that is both a source and a destination. Nothing is copied then.
    """
    if type(k_cache) is not torch.Tensor or type(v_cache) is not torch.Tensor or type(pairs) is not torch.Tensor:
        raise TypeError("copy_blocks: k_cache, v_cache and pairs must be torch.Tensor")
    if (k_cache.dim() != 4 or k_cache.shape != v_cache.shape or k_cache.stride() != v_cache.stride()
            or k_cache.dtype != v_cache.dtype or k_cache.device != v_cache.device):
        raise ValueError("copy_blocks: k_cache and v_cache must be pools of one shape, strides, dtype and device")
    num_blocks, block_size, num_heads, head_dim = k_cache.shape
    if block_size & (block_size - 1) or head_dim & (head_dim - 1):
        raise ValueError(f"copy_blocks: block_size and head_dim must be powers of two, got {block_size}, {head_dim}")
    # TODO 9.2.3: check pairs (dtype, shape, device, ids in [0, num_blocks), no repeated destination, no block both a
    #   source and a destination), each with a message that names the problem; all before any launch.
    # 提示：按 TODO 中的顺序检查，每项一个 if，错误信息写出出错的值；目标去重（unique）之后个数变少，说明有重复的目标；
    #       torch.isin 能告诉你哪些目标也出现在源中。所有检查都在启动之前完成。
    # Hint: check in the TODO's order, one if each, with a message that names the value at fault; fewer destinations after
    #       unique() means a repeated one; torch.isin tells which destinations also appear among the sources. Every
    #       check comes before the launch.
    ### BEGIN SOLUTION
    if pairs.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"copy_blocks: pairs must be int32 or int64, got {pairs.dtype}")
    if pairs.dim() != 2 or pairs.shape[1] != 2:
        raise ValueError(f"copy_blocks: pairs must be [num_pairs, 2], got {list(pairs.shape)}")
    if pairs.device != k_cache.device:
        raise ValueError(f"copy_blocks: pairs are on {pairs.device}, the pools on {k_cache.device}")
    outside = (pairs < 0) | (pairs >= num_blocks)
    if bool(outside.any()):
        row, column = (int(index) for index in outside.nonzero()[0])
        raise ValueError(f"copy_blocks: pairs[{row}, {column}] = {int(pairs[row, column])} is not a block of the pool "
                         f"(0 to {num_blocks - 1})")
    sources, targets = pairs[:, 0], pairs[:, 1]
    if targets.unique().numel() < targets.numel():
        values, counts = targets.unique(return_counts=True)
        raise ValueError(f"copy_blocks: block {int(values[counts > 1][0])} is a destination twice (a race)")
    both = torch.isin(targets, sources)
    if bool(both.any()):
        raise ValueError(f"copy_blocks: block {int(targets[both][0])} is both a source and a destination (a race)")
    ### END SOLUTION
    # TODO 9.2.4: nothing to do without pairs; otherwise one launch of _copy_blocks_kernel with one program per pair,
    #   on the pairs as a contiguous int64 tensor.
    # 提示：没有对时直接返回 None；内核把 pairs 当作连续存储的 int64 张量读取，所以启动前先转换数据类型，并保证连续存储；
    #       网格中每对一个程序实例。
    # Hint: return None at once without pairs; the kernel reads pairs as a contiguous int64 tensor, so convert the dtype
    #       and make it contiguous before the launch; the grid has one program per pair.
    ### BEGIN SOLUTION
    if pairs.shape[0] == 0:
        return None
    pairs = pairs.to(torch.int64).contiguous()
    _copy_blocks_kernel[(pairs.shape[0],)](k_cache, v_cache, pairs, *k_cache.stride(), num_heads,
                                           BLOCK_SIZE=block_size, HEAD_DIM=head_dim)
    return None
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task9_2_1_copies", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that copy_blocks copies every pair's block in both pools and changes nothing else."""


def _check_task9_2_1_copies():
    import torch

    from course.checks import assert_plain_equal, assert_same_tensor
    from course.env import pick_device
    from course.kernels import paged_pool

    device = pick_device()

    def expected_storage(storage, k_cache, v_cache, pairs):
        """The whole storage (guard blocks included) after copying every pair in k and v, computed with torch."""
        want = storage.clone()
        k_view, v_view = want.as_strided(k_cache.shape, k_cache.stride(), k_cache.storage_offset()), want.as_strided(
            v_cache.shape, v_cache.stride(), v_cache.storage_offset())
        for source, target in pairs.tolist():
            k_view[target], v_view[target] = k_cache[source].clone(), v_cache[source].clone()
        return want

    # Blocks 0 and 3 forked onto 5, 6 and 7 (block 0 twice, as a beam search does), in a contiguous pool.
    k_cache, v_cache, storage = paged_pool(8, 4, 2, 8, device=device, seed=1)
    pairs = torch.tensor([[0, 5], [3, 6], [0, 7]], device=device)
    want = expected_storage(storage, k_cache, v_cache, pairs)
    assert_plain_equal(copy_blocks(k_cache, v_cache, pairs), None, "copy_blocks(k, v, [[0, 5], [3, 6], [0, 7]])")
    assert_same_tensor(storage, want, f"the pools after copy_blocks(k, v, [[0, 5], [3, 6], [0, 7]]) on {device} "
                       "(every block of k and v, and the NaN guard blocks around them)")
    for spec in (dict(num_blocks=6, block_size=2, num_heads=3, head_dim=4, interleaved=True, seed=2),
                 dict(num_blocks=5, block_size=8, num_heads=1, head_dim=16, dtype=torch.float16, seed=3)):
        k_cache, v_cache, storage = paged_pool(device=device, **spec)
        pairs = torch.tensor([[4, 1], [2, 0]], dtype=torch.int32, device=device)
        want = expected_storage(storage, k_cache, v_cache, pairs)
        copy_blocks(k_cache, v_cache, pairs)
        assert_same_tensor(storage, want, f"the pools after copy_blocks(int32 [[4, 1], [2, 0]]) on paged_pool({spec}) "
                           f"on {device}")
    copy_blocks(k_cache, v_cache, torch.zeros(0, 2, dtype=torch.int64, device=device))
    assert_same_tensor(storage, want, f"the pools after copy_blocks with no pairs on {device}")
    # Any int32 or int64 tensor [num_pairs, 2] will do: here int64 pairs stored column by column.
    k_cache, v_cache, storage = paged_pool(6, 2, 1, 4, device=device, seed=4)
    pairs = torch.tensor([[0, 3], [1, 4], [2, 5]], device=device).t().contiguous().t()
    want = expected_storage(storage, k_cache, v_cache, pairs)
    copy_blocks(k_cache, v_cache, pairs)
    assert_same_tensor(storage, want, f"the pools after copy_blocks(int64 [[0, 3], [1, 4], [2, 5]] stored column by "
                       f"column: .t().contiguous().t(), strides (1, 3)) on {device}")

    # Blocks of 4 slots each followed by 3 unused slots of NaN (the block stride is 7 slots).
    padded_storage = torch.randn(2, 6, 4 + 3, 2, 4, generator=torch.Generator().manual_seed(9212)).to(device)
    padded_storage[:, :, 4:] = float("nan")
    padded_k, padded_v = padded_storage[0, :, :4], padded_storage[1, :, :4]
    padded_pairs = torch.tensor([[1, 4], [5, 2]], device=device)
    padded_want = expected_storage(padded_storage, padded_k, padded_v, padded_pairs)
    copy_blocks(padded_k, padded_v, padded_pairs)
    assert_same_tensor(padded_storage, padded_want, f"the pools after copy_blocks([[1, 4], [5, 2]]) on {device} with "
                       "blocks of 4 slots each followed by 3 unused slots of NaN (the block stride is 7 slots)")
    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(9201)
    for _case in range(10):
        _blocks = _rng.randint(2, 9)
        _spec = dict(block_size=_rng.choice([2, 4, 8]), num_heads=_rng.randint(1, 3), head_dim=_rng.choice([4, 8]),
                     interleaved=_case % 3 == 0, dtype=torch.float16 if _case % 2 else torch.float32, seed=9200 + _case)
        _k, _v, _storage = paged_pool(_blocks, device=device, **_spec)
        _order = list(range(_blocks))
        _rng.shuffle(_order)
        _count = _rng.randint(1, _blocks // 2)
        _targets = _order[:_count]
        _sources = [_rng.choice(_order[_count:]) for _ in range(_count)]
        _pairs = torch.tensor(list(zip(_sources, _targets)), device=device,
                              dtype=torch.int64 if _case % 2 else torch.int32)
        _want = expected_storage(_storage, _k, _v, _pairs)
        copy_blocks(_k, _v, _pairs)
        assert_same_tensor(_storage, _want, f"the pools after copy_blocks on random case {_case} ({_blocks} blocks, "
                           f"pairs {_pairs.tolist()})", reveal=False)
    _k, _v, _storage = paged_pool(7, 4, 2, 4, device=device, seed=9211, interleaved=True)
    _pairs = torch.tensor([[6, 3, 0, 3], [5, 3, 1, 3], [4, 3, 2, 3]], device=device)[:, ::2]  # strides (4, 2)
    _want = expected_storage(_storage, _k, _v, _pairs)
    copy_blocks(_k, _v, _pairs)
    assert_same_tensor(_storage, _want, "the pools after copy_blocks with int64 pairs [[6, 0], [5, 1], [4, 2]], a view "
                       "of every other column of a wider tensor", reveal=False)
    ### END HIDDEN TESTS


_check_task9_2_1_copies()

# %% nbgrader={"grade": true, "grade_id": "test_task9_2_2_rejected_before_launch", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that copy_blocks refuses bad pairs with TypeError or ValueError before it copies anything, and only bad ones."""


def _check_task9_2_2_rejected_before_launch():
    import torch

    from course.checks import assert_accepts, assert_raises, assert_same_tensor
    from course.env import pick_device
    from course.kernels import paged_pool

    device = pick_device()
    k_cache, v_cache, storage = paged_pool(6, 4, 2, 4, device=device, seed=5)
    before = storage.clone()
    for pairs, error, what in [
            (torch.tensor([[0.0, 1.0]], device=device), TypeError, "float pairs"),
            (torch.tensor([[0, 1]], dtype=torch.uint8, device=device), TypeError, "uint8 pairs (int32 or int64 only)"),
            (torch.tensor([[0, 1]], dtype=torch.int8, device=device), TypeError, "int8 pairs (int32 or int64 only)"),
            (torch.tensor([0, 1], device=device), ValueError, "pairs of shape [2]"),
            (torch.tensor([[0, 1, 2]], device=device), ValueError, "pairs of shape [1, 3]"),
            (torch.tensor([[0, 6]], device=device), ValueError, "block 6 of a pool of 6"),
            (torch.tensor([[-1, 2]], device=device), ValueError, "block -1"),
            (torch.tensor([[0, 2**32 + 1]], device=device), ValueError,
             "block 2**32 + 1 (int64: check the ids before any conversion to int32, which would make it block 1)"),
            (torch.tensor([[0, 4], [1, 4]], device=device), ValueError, "destination 4 twice"),
            (torch.tensor([[0, 1], [1, 2]], device=device), ValueError, "block 1 both a destination and a source"),
            (torch.tensor([[2, 3], [3, 5]], device=device), ValueError, "block 3 a destination, then a source"),
            (torch.tensor([[4, 4]], device=device), ValueError, "the pair (4, 4)"),
            (torch.tensor([], device=device), TypeError, "torch.tensor([]) (no pairs, but float32)"),
            (torch.zeros(0, 3, dtype=torch.int64, device=device), ValueError, "no pairs, of shape [0, 3]"),
            (torch.tensor([[[0, 1], [2, 3]], [[0, 1], [4, 5]]], device=device), ValueError,
             "pairs of shape [2, 2, 2] (not [num_pairs, 2], though its last dimension is 2)"),
            # The meta device holds shapes without data: here it stands for another device than the pools'.
            (torch.tensor([[0, 1]], device="meta"), ValueError, "pairs on the meta device (not the pools' device)")]:
        assert_raises(error, f"copy_blocks with {what} on {device}", copy_blocks, k_cache, v_cache, pairs)
        assert_same_tensor(storage, before, f"the pools after copy_blocks with {what} raised on {device} "
                           "(nothing may be copied)")
    _, other_v, _ = paged_pool(6, 4, 2, 8, device=device)
    assert_raises(ValueError, f"copy_blocks with pools of head_dim 4 and 8 on {device}", copy_blocks, k_cache, other_v,
                  torch.tensor([[0, 1]], device=device))
    # Valid pairs are not refused: one source copied to two destinations, and no pairs at all.
    for pairs, what in [(torch.tensor([[0, 4], [0, 5]], device=device), "pairs [[0, 4], [0, 5]]"),
                        (torch.zeros(0, 2, dtype=torch.int64, device=device), "no pairs, int64 [0, 2]")]:
        assert_accepts(f"copy_blocks with {what} on {device}", copy_blocks, k_cache, v_cache, pairs)
    before = storage.clone()  # What those copies wrote stays: the checks below compare with this.

    ### BEGIN HIDDEN TESTS
    for _pairs, _error, _what in [
            (torch.tensor([[0, 1], [2, 3], [5, 1]], device=device), ValueError, "destination 1 twice, rows 0 and 2"),
            (torch.tensor([[5, 0], [2, 3], [1, 5]], device=device), ValueError, "block 5 a source, then a destination"),
            (torch.tensor([[0, 1]], dtype=torch.int16, device=device), TypeError, "int16 pairs"),
            (torch.zeros(0, 2, dtype=torch.int16, device=device), TypeError, "no pairs, int16"),
            (torch.tensor([[True, False]], device=device), TypeError, "bool pairs"),
            ([[0, 1]], TypeError, "a list of pairs"),
            (torch.tensor([[0, 100]], device=device), ValueError, "block 100")]:
        assert_raises(_error, f"copy_blocks with {_what}", copy_blocks, k_cache, v_cache, _pairs)
        assert_same_tensor(storage, before, f"the pools after copy_blocks with {_what} raised", reveal=False)
    _, _half_v, _ = paged_pool(6, 4, 2, 4, device=device, dtype=torch.float16)
    assert_raises(ValueError, "copy_blocks with a float32 and a float16 pool", copy_blocks, k_cache, _half_v,
                  torch.tensor([[0, 1]], device=device))
    ### END HIDDEN TESTS


_check_task9_2_2_rejected_before_launch()

# %% nbgrader={"grade": true, "grade_id": "test_task9_2_3_one_launch", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that copy_blocks copies many pairs with one kernel launch, and launches nothing without pairs."""


def _check_task9_2_3_one_launch():
    import torch

    from course.checks import assert_plain_equal
    from course.env import pick_device
    from course.kernels import count_launches, paged_pool

    device = pick_device()
    k_cache, v_cache, _ = paged_pool(10, 2, 1, 4, device=device, seed=7)
    pairs = torch.tensor([[0, 5], [1, 6], [2, 7], [3, 8], [0, 9]], device=device)
    _, launches = count_launches(copy_blocks, k_cache, v_cache, pairs)
    assert_plain_equal(launches, 1, f"the number of kernel launches of copy_blocks with 5 pairs on {device}")
    _, launches = count_launches(copy_blocks, k_cache, v_cache, pairs[:0])
    assert_plain_equal(launches, 0, f"the number of kernel launches of copy_blocks with no pairs on {device}")

    ### BEGIN HIDDEN TESTS
    _, _launches = count_launches(copy_blocks, k_cache, v_cache, pairs[:1])
    assert_plain_equal(_launches, 1, "the number of kernel launches of copy_blocks with 1 pair", reveal=False)
    ### END HIDDEN TESTS


_check_task9_2_3_one_launch()

# %% [markdown] nbgrader={"grade": false, "grade_id": "task9_3_paged_decode_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 9.3: paged_decode (6 points)
#
# A decode step of a whole batch in one launch. `paged_decode(q, k_cache, v_cache, block_tables, lengths,
# scale=None)` takes the new tokens' queries `q`, `[num_seqs, num_q_heads, head_dim]`, and two pools of
# `num_kv_heads` heads read through the block tables (as in Task 9.1, with every length at least 1), and returns
# `[num_seqs, num_q_heads, head_dim]` in `q`'s dtype: $o_h$ of the formulas section for every sequence and query head,
# query head `h` reading KV head `h // (num_q_heads // num_kv_heads)`. The scale is $1/\sqrt{\text{head\_dim}}$ when
# `scale` is None; a given scale is used as it is, `0.0` included.
#
# The kernel has one program per (sequence, query head): grid `(num_seqs, num_q_heads)`. It walks the sequence's
# `ceil(length / block_size)` blocks with the **online softmax** of the formulas section, in float32 whatever the
# dtype, and never reads a slot past the length. It must equal `torch.nn.functional.scaled_dot_product_attention`
# (`enable_gqa=True`) on the gathered K/V: in float32 within `1e-5`, absolute and relative (`1e-4` for scores in the
# hundreds); in float16 within `2e-3` of the same attention computed in float32 and rounded to float16.
#
# Errors (before any launch): those of `check_paged_batch`, with lengths of at least 1 (attention over no token is
# 0/0); `TypeError` when `q` or `v_cache` is not a tensor, or `q`, `k_cache` and `v_cache` differ in dtype;
# `ValueError` when `v_cache` differs from `k_cache` in shape, strides or device, when `q` is on another device, or
# when `q` is not `[num_seqs, num_q_heads, head_dim]` with `num_q_heads` a positive multiple of `num_kv_heads`.
# Traps: without the running max, $e^{x}$ overflows float32 for scores above 88 (a test has scores in the hundreds);
# the running sum and the accumulator must **both** be rescaled by $e^{m - m'}$ when the max grows; query head `h`
# reads KV head `h // group`, not `h` (with 8 query heads and 2 KV heads, head 5 reads KV head 1); the last block's
# slots past the length hold stale tokens (mask them to $-\infty$ before the max and the sum, and load V under the
# same mask: a stale V may be NaN, and $0 \cdot \text{NaN}$ is NaN); the tests use the interleaved layout of Task 9.1,
# so the strides matter.
#
# Graded in parts: 9.3.1 multi-head attention (2) · 9.3.2 grouped-query heads (2) · 9.3.3 float16 and large
# scores (1) · 9.3.4 one launch and bad input (1).
#
# ## 任务 9.3：paged_decode（6 分）
#
# 用一次启动完成整个批次的一个解码步。`paged_decode(q, k_cache, v_cache, block_tables, lengths, scale=None)` 接收新 token 的查询向量 `q`（形状为 `[num_seqs, num_q_heads, head_dim]`），以及两个有 `num_kv_heads` 个 KV 头、通过块表读取的池（块表和长度与任务 9.1 相同，但每个长度至少为 1）；它返回形状为 `[num_seqs, num_q_heads, head_dim]`、数据类型与 `q` 相同的张量：对每条序列的每个查询头计算 $o_h = \sum_{t < \ell} p_{h,t} v_{t, \lfloor h/G \rfloor}$（见公式一节），其中查询头 `h` 读取第 `h // (num_q_heads // num_kv_heads)` 个 KV 头。`scale` 为 None 时缩放系数是 $1/\sqrt{\text{head\_dim}}$；给定的 `scale` 原样使用，`0.0` 也不例外。
#
# 内核为每个（序列，查询头）启动一个程序实例：网格为 `(num_seqs, num_q_heads)`。它用**在线 softmax** 按顺序逐块处理这条序列的 `ceil(length / block_size)` 个块：$m' = \max(m, \max_j x_j)$，$l' = l e^{m - m'} + \sum_j e^{x_j - m'}$，$a' = a e^{m - m'} + \sum_j e^{x_j - m'} v_j$，最后 $o = a / l$；无论输入的数据类型是什么，都用 float32 计算，并且从不读取长度之后的槽位。结果必须与在收集出的 K/V 上调用 `torch.nn.functional.scaled_dot_product_attention`（`enable_gqa=True`）的结果一致：float32 下绝对误差和相对误差都在 `1e-5` 以内（分数达到几百时为 `1e-4`）；float16 下与“先用 float32 计算、再舍入到 float16”的结果相差不超过 `2e-3`。
#
# 错误（都在任何启动之前抛出）：`check_paged_batch` 的各项错误，并且每个长度至少为 1（对零个 token 做注意力是 0/0）；`q` 或 `v_cache` 不是张量，或者 `q`、`k_cache` 和 `v_cache` 的数据类型不一致时，抛出 `TypeError`；`v_cache` 与 `k_cache` 的形状、步长或设备不同，`q` 位于另一个设备上，或者 `q` 的形状不是 `[num_seqs, num_q_heads, head_dim]`、`num_q_heads` 不是 `num_kv_heads` 的正整数倍时，抛出 `ValueError`。陷阱：没有运行最大值时，分数一旦超过 88，$e^{x}$ 就会在 float32 中溢出（有一个测试的分数达到几百）；最大值增大时，运行和与累加器**都**要乘以 $e^{m - m'}$；查询头 `h` 读取第 `h // group` 个 KV 头，而不是第 `h` 个（8 个查询头、2 个 KV 头时，查询头 5 读取 KV 头 1）；最后一个块中长度之后的槽位存放的是旧 token（在求最大值和求和之前，把它们的分数屏蔽为 $-\infty$，并用同一个掩码加载 V：旧的 V 可能是 NaN，而 $0 \cdot \text{NaN}$ 仍是 NaN）；测试使用任务 9.1 中键和值交错存放的布局，所以步长很重要。
#
# 分部分计分：9.3.1 多头注意力（2 分）· 9.3.2 分组查询头（2 分）· 9.3.3 float16 与大分数（1 分）· 9.3.4 一次启动与错误输入（1 分）。

# %% nbgrader={"grade": false, "grade_id": "task9_3_paged_decode", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math

import torch
import triton
import triton.language as tl

from course.kernels import check_paged_batch


@triton.jit
def _paged_decode_kernel(q_ptr, k_ptr, v_ptr, block_tables_ptr, lengths_ptr, out_ptr, scale,
                         stride_q_seq, stride_q_head, stride_block, stride_slot, stride_head, stride_dim,
                         stride_table, group_size, BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr):
    # One program attends for one query head of one sequence, block by block.
    seq = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    length = tl.load(lengths_ptr + seq)
    slots = tl.arange(0, BLOCK_SIZE)
    dims = tl.arange(0, HEAD_DIM)
    # TODO 9.3.1: the KV head that this query head reads, and the query vector in float32.
    # 提示：同一组的 group_size 个查询头共享一个 KV 头，用整除得到它；q 中（seq, head）这一行的 HEAD_DIM 个数连续存放，
    #       用 q 的两个步长找到这一行的起点，读出后转成 float32。
    # Hint: the group_size query heads of a group share one KV head: an integer division finds it; the HEAD_DIM numbers
    #       of row (seq, head) of q lie side by side, starting where q's two strides place the row; load them, then
    #       cast to float32.
    ### BEGIN SOLUTION
    kv_head = head // group_size
    q = tl.load(q_ptr + seq * stride_q_seq + head * stride_q_head + dims).to(tl.float32)
    ### END SOLUTION
    running_max = -float("inf")
    running_sum = 0.0
    acc = tl.zeros([HEAD_DIM], dtype=tl.float32)
    for block in range(0, tl.cdiv(length, BLOCK_SIZE)):
        physical = tl.load(block_tables_ptr + seq * stride_table + block).to(tl.int64)
        valid = block * BLOCK_SIZE + slots < length
        offsets = (physical * stride_block + slots[:, None] * stride_slot + kv_head * stride_head
                   + dims[None, :] * stride_dim)
        # TODO 9.3.2: the scores of this block's slots in float32: scale * q . k, and -inf where valid is false.
        # 提示：在 offsets 处读取这一块的 K：掩码是扩展成两维的 valid，被屏蔽的通道填 0，再转成 float32；点积就是逐元素相乘后
        #       沿 HEAD_DIM 所在的轴求和（tl.sum）；最后用 tl.where 把无效槽位的分数换成 -inf，否则旧 token 会进入最大值和求和。
        # Hint: load this block's K at offsets, with valid broadcast to two dimensions as the mask and 0 in the masked lanes,
        #       then cast to float32; a dot product is an elementwise product summed (tl.sum) along the HEAD_DIM axis;
        #       last, tl.where puts -inf at the invalid slots, or stale tokens would enter the max and the sum.
        ### BEGIN SOLUTION
        k = tl.load(k_ptr + offsets, mask=valid[:, None], other=0.0).to(tl.float32)
        scores = tl.where(valid, tl.sum(k * q[None, :], axis=1) * scale, -float("inf"))
        ### END SOLUTION
        # TODO 9.3.3: one step of the online softmax: the new running max; rescale running_sum and acc by
        #   exp(running_max - new max); add this block's exp(scores - new max) and the values they weigh.
        # 提示：新的最大值是运行最大值与本块最大分数中较大的那个（tl.max 求本块的，tl.maximum 比较两个）；运行和与 acc 都要
        #       乘以 e 的（旧最大值 - 新最大值）次方；本块的权重是 e 的（分数 - 新最大值）次方；V 的读取方式与 K 相同；acc 加上
        #       V 各行按权重加权后沿槽位所在的轴求和的结果。最后才更新运行最大值。
        # Hint: the new max is the larger of the running max and this block's largest score (tl.max finds the block's,
        #       tl.maximum compares the two); the running sum and acc are both multiplied by e to the (old max - new max);
        #       this block's weights are e to the (score - new max); load V the way K was loaded; acc gains the rows of V
        #       times their weights, summed along the slot axis. Update the running max last.
        ### BEGIN SOLUTION
        new_max = tl.maximum(running_max, tl.max(scores, axis=0))
        rescale = tl.exp(running_max - new_max)
        weights = tl.exp(scores - new_max)
        v = tl.load(v_ptr + offsets, mask=valid[:, None], other=0.0).to(tl.float32)
        running_sum = running_sum * rescale + tl.sum(weights, axis=0)
        acc = acc * rescale + tl.sum(weights[:, None] * v, axis=0)
        running_max = new_max
        ### END SOLUTION
    # TODO 9.3.4: store acc / running_sum, in the output's dtype, at out[seq, head] (out has q's strides).
    # 提示：输出的步长与 q 相同，所以（seq, head）这一行在输出中的位置与在 q 中相同，只是从 out_ptr 开始；写入前先转成输出的
    #       数据类型：指针的 dtype.element_ty 就是它所指元素的类型。
    # Hint: the output has q's strides, so row (seq, head) lies where it lies in q, counted from out_ptr; cast to the
    #       output's dtype before the store: a pointer's dtype.element_ty is the type of what it points to.
    ### BEGIN SOLUTION
    tl.store(out_ptr + seq * stride_q_seq + head * stride_q_head + dims,
             (acc / running_sum).to(out_ptr.dtype.element_ty))
    ### END SOLUTION


def paged_decode(q, k_cache, v_cache, block_tables, lengths, scale=None):
    """Decode attention of one query token per sequence over its paged K/V, every sequence in one launch.

    Args:
        q: tensor [num_seqs, num_q_heads, head_dim], in the pools' dtype and on their device.
        k_cache, v_cache: pools [num_blocks, block_size, num_kv_heads, head_dim] of one shape, strides, dtype
            (float16 or float32) and device; num_q_heads a multiple of num_kv_heads.
        block_tables, lengths: as in paged_gather, every length at least 1.
        scale: float, or None for 1 / sqrt(head_dim).

    Returns:
        A tensor [num_seqs, num_q_heads, head_dim] in q's dtype on its device: softmax(scale * q[s, h] . K) V over
        the lengths[s] tokens of sequence s, with KV head h // (num_q_heads // num_kv_heads).

    Raises:
        TypeError: q or v_cache not a tensor, or dtypes that differ; and check_paged_batch's.
        ValueError: v_cache unlike k_cache, q on another device or of the wrong shape; and check_paged_batch's.
    """
    check_paged_batch("paged_decode", k_cache, block_tables, lengths, min_length=1)
    if type(q) is not torch.Tensor or type(v_cache) is not torch.Tensor:
        raise TypeError("paged_decode: q and v_cache must be torch.Tensor")
    if q.dtype != k_cache.dtype or v_cache.dtype != k_cache.dtype:
        raise TypeError(f"paged_decode: q, k_cache and v_cache must share a dtype, got {q.dtype}, {k_cache.dtype}, "
                        f"{v_cache.dtype}")
    if v_cache.shape != k_cache.shape or v_cache.stride() != k_cache.stride() or v_cache.device != k_cache.device:
        raise ValueError("paged_decode: v_cache must have k_cache's shape, strides and device")
    if q.device != k_cache.device:
        raise ValueError(f"paged_decode: q is on {q.device}, the pools on {k_cache.device}")
    block_tables, lengths = block_tables.contiguous(), lengths.contiguous()
    num_blocks, block_size, num_kv_heads, head_dim = k_cache.shape
    # TODO 9.3.5: ValueError unless q is [num_seqs, num_q_heads, head_dim] with num_q_heads a multiple of
    #   num_kv_heads; then the scale (1 / sqrt(head_dim) when None).
    # 提示：q 必须是三维的：第 0 维等于序列数，第 2 维等于池的 head_dim，第 1 维是 num_kv_heads 的正整数倍（用取余判断，
    #       并排除 0）。判断 scale 时要与 None 比较，不能看它的真值：0.0 也是给定的值。
    # Hint: q must have three dimensions: as many rows as sequences, the pool's head_dim last, and a positive multiple of
    #       num_kv_heads in between (a remainder tells; 0 is not positive). Compare scale with None rather than test its
    #       truth: 0.0 is a given scale too.
    ### BEGIN SOLUTION
    if (q.dim() != 3 or q.shape[0] != lengths.shape[0] or q.shape[2] != head_dim or q.shape[1] == 0
            or q.shape[1] % num_kv_heads):
        raise ValueError(f"paged_decode: q must be [{lengths.shape[0]}, a multiple of {num_kv_heads}, {head_dim}], "
                         f"got {list(q.shape)}")
    if scale is None:
        scale = 1.0 / math.sqrt(head_dim)
    ### END SOLUTION
    # TODO 9.3.6: a contiguous q, an output like it, and one launch of _paged_decode_kernel on the grid
    #   (num_seqs, num_q_heads); return the output.
    # 提示：q = q.contiguous()；out = torch.empty_like(q)；group_size = num_q_heads // num_kv_heads。
    # Hint: q = q.contiguous(); out = torch.empty_like(q); group_size = num_q_heads // num_kv_heads.
    ### BEGIN SOLUTION
    q = q.contiguous()
    out = torch.empty_like(q)
    num_seqs, num_q_heads, _ = q.shape
    _paged_decode_kernel[(num_seqs, num_q_heads)](
        q, k_cache, v_cache, block_tables, lengths, out, float(scale), q.stride(0), q.stride(1), *k_cache.stride(),
        block_tables.stride(0), num_q_heads // num_kv_heads, BLOCK_SIZE=block_size, HEAD_DIM=head_dim)
    return out
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task9_3_1_multi_head", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that paged_decode equals scaled_dot_product_attention on the gathered K/V, one KV head per query head."""


def _check_task9_3_1_multi_head():
    import torch
    import torch.nn.functional as F

    from course.checks import assert_same_tensor
    from course.env import pick_device
    from course.kernels import paged_batch

    device = pick_device()

    def reference(q, batch, scale=None):
        """scaled_dot_product_attention of each sequence's query over its gathered K/V, in float32."""
        block_size, out = batch.k_cache.shape[1], []
        for s, length in enumerate(batch.lengths.tolist()):
            used = batch.block_tables[s, :(length + block_size - 1) // block_size].long()
            keys, values = (cache[used].flatten(0, 1)[:length].float().transpose(0, 1)
                            for cache in (batch.k_cache, batch.v_cache))
            out.append(F.scaled_dot_product_attention(q[s].float()[:, None], keys, values, scale=scale,
                                                      enable_gqa=True)[:, 0])
        return torch.stack(out).to(q.dtype)

    generator = torch.Generator().manual_seed(931)
    for spec in (dict(lengths=[10, 3, 16], block_size=4, num_heads=2, head_dim=8, seed=31),
                 dict(lengths=[1, 9], block_size=8, num_heads=3, head_dim=16, seed=32, interleaved=True),
                 dict(lengths=[5, 12], block_size=4, num_heads=1, head_dim=4, seed=33, extra_table_columns=1)):
        batch = paged_batch(device=device, **spec)
        q = torch.randn(len(spec["lengths"]), spec["num_heads"], spec["head_dim"], generator=generator).to(device)
        expected = reference(q, batch)  # Before the call: what paged_decode does to its inputs cannot move it.
        assert_same_tensor(paged_decode(q, batch.k_cache, batch.v_cache, batch.block_tables, batch.lengths),
                           expected, f"paged_decode on paged_batch({spec}) vs scaled_dot_product_attention "
                           f"on {device}", atol=1e-5, rtol=1e-5)
    # Each scale case gets a new batch (the last spec again) and a new query, and its expected value comes before the
    # call: what one call does to the tensors it receives cannot move another case's expected value.
    batch = paged_batch(device=device, **spec)
    q = torch.randn(len(spec["lengths"]), spec["num_heads"], spec["head_dim"], generator=generator).to(device)
    expected = reference(q, batch, scale=0.3)
    assert_same_tensor(paged_decode(q, batch.k_cache, batch.v_cache, batch.block_tables, batch.lengths, scale=0.3),
                       expected, f"paged_decode(..., scale=0.3) on {device}", atol=1e-5, rtol=1e-5)
    batch = paged_batch(device=device, **spec)
    q = torch.randn(len(spec["lengths"]), spec["num_heads"], spec["head_dim"], generator=generator).to(device)
    mean = torch.stack([batch.v_cache[batch.block_tables[s, :(length + 3) // 4].long()].flatten(0, 1)[:length].mean(0)
                        for s, length in enumerate(batch.lengths.tolist())])  # blocks of 4 slots
    assert_same_tensor(paged_decode(q, batch.k_cache, batch.v_cache, batch.block_tables, batch.lengths, scale=0.0),
                       mean, f"paged_decode(..., scale=0.0) on {device}: a given scale, even 0.0, is used (every token "
                       "weighs the same)", atol=1e-5, rtol=1e-5)
    batch = paged_batch([10, 3, 16], 4, 2, 8, device=device, seed=34)
    q = torch.randn(3, 2, 8, generator=generator).to(device)
    expected = reference(q, batch)
    columns, strided = batch.block_tables.t().contiguous().t(), batch.lengths.repeat_interleave(2)[::2]
    assert_same_tensor(paged_decode(q, batch.k_cache, batch.v_cache, columns, strided), expected,
                       f"paged_decode on {device} with block_tables.t().contiguous().t() (the same table, stored column "
                       "by column: strides (1, num_seqs)) and lengths a view with stride 2", atol=1e-5, rtol=1e-5)

    ### BEGIN HIDDEN TESTS
    import random as _random

    def _oracle(q, batch, scale):
        block_size, group, rows = batch.k_cache.shape[1], q.shape[1] // batch.k_cache.shape[2], []
        for s, length in enumerate(batch.lengths.tolist()):
            used = batch.block_tables[s, :(length + block_size - 1) // block_size].long()
            keys, values = (cache[used].flatten(0, 1)[:length].double().repeat_interleave(group, dim=1)
                            for cache in (batch.k_cache, batch.v_cache))
            scores = torch.einsum("hd,thd->ht", q[s].double(), keys) * scale
            rows.append(torch.einsum("ht,thd->hd", torch.softmax(scores, dim=-1), values))
        return torch.stack(rows).to(q.dtype)

    _rng = _random.Random(9301)
    for _case in range(5):
        _block, _dim = _rng.choice([2, 4, 8]), _rng.choice([4, 8, 16])
        _lengths = [_rng.randint(1, 3 * _block) for _ in range(_rng.randint(1, 3))]
        _heads = _rng.randint(1, 3)
        _batch = paged_batch(_lengths, _block, _heads, _dim, device=device, seed=9300 + _case,
                             interleaved=_case % 2 == 0, free_blocks=_rng.randint(0, 3))
        _q = (torch.randn(len(_lengths), _heads, _dim, generator=generator) * 2).to(device)
        _scale = None if _case % 3 else _rng.uniform(0.05, 1.0)
        _expected = _oracle(_q, _batch, _dim ** -0.5 if _scale is None else _scale)
        _got = paged_decode(_q, _batch.k_cache, _batch.v_cache, _batch.block_tables, _batch.lengths, scale=_scale)
        assert_same_tensor(_got, _expected,
                           f"paged_decode on random case {_case} (lengths {_lengths}, block_size {_block}, {_heads} "
                           f"heads, head_dim {_dim}, scale {_scale})", atol=1e-5, rtol=1e-5, reveal=False)
    _batch = paged_batch([5, 12, 8, 1], 4, 1, 4, device=device, seed=9311, extra_table_columns=1)
    _q = torch.randn(4, 1, 4, generator=torch.Generator().manual_seed(9311)).to(device)
    _expected = _oracle(_q, _batch, 0.5)
    _wide = torch.stack((_batch.block_tables, torch.zeros_like(_batch.block_tables)), dim=-1)  # [seqs, blocks, 2]
    assert_same_tensor(paged_decode(_q, _batch.k_cache, _batch.v_cache, _wide[..., 0], _batch.lengths, scale=0.5),
                       _expected, "paged_decode with block_tables a strided view (every other int32 of a wider tensor)",
                       atol=1e-5, rtol=1e-5, reveal=False)
    ### END HIDDEN TESTS


_check_task9_3_1_multi_head()

# %% nbgrader={"grade": true, "grade_id": "test_task9_3_2_grouped_heads", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that paged_decode gives query head h the KV head h // (num_q_heads // num_kv_heads)."""


def _check_task9_3_2_grouped_heads():
    import torch
    import torch.nn.functional as F

    from course.checks import assert_same_tensor
    from course.env import pick_device
    from course.kernels import paged_batch

    device = pick_device()

    def reference(q, batch):
        """Each KV head repeated for its group of query heads (what enable_gqa=True does), then attention."""
        size, group = batch.k_cache.shape[1], q.shape[1] // batch.k_cache.shape[2]
        rows = []
        for s, length in enumerate(batch.lengths.tolist()):
            gathered = [cache[batch.block_tables[s, :(length + size - 1) // size].long()].flatten(0, 1)[:length]
                        for cache in (batch.k_cache, batch.v_cache)]
            keys, values = (part.repeat_interleave(group, dim=1).transpose(0, 1).float() for part in gathered)
            rows.append(F.scaled_dot_product_attention(q[s].float()[:, None], keys, values)[:, 0])
        return torch.stack(rows).to(q.dtype)

    generator = torch.Generator().manual_seed(932)
    for spec, num_q_heads in ((dict(lengths=[7, 12], block_size=4, num_heads=2, head_dim=8, seed=41), 8),
                              (dict(lengths=[9, 2, 4], block_size=4, num_heads=1, head_dim=16, seed=42,
                                    interleaved=True), 3),
                              (dict(lengths=[6], block_size=2, num_heads=2, head_dim=4, seed=43), 4)):
        batch = paged_batch(device=device, **spec)
        q = torch.randn(len(spec["lengths"]), num_q_heads, spec["head_dim"], generator=generator).to(device)
        expected = reference(q, batch)  # Before the call: what paged_decode does to its inputs cannot move it.
        assert_same_tensor(paged_decode(q, batch.k_cache, batch.v_cache, batch.block_tables, batch.lengths),
                           expected, f"paged_decode with {num_q_heads} query heads on paged_batch({spec}) "
                           f"vs scaled_dot_product_attention(enable_gqa=True) on {device}", atol=1e-5, rtol=1e-5)
    # NaN in V past each sequence's length: those slots weigh 0, and 0 * NaN is NaN, so V is loaded under K's mask.
    batch = paged_batch([5, 3], 4, 1, 4, device=device, seed=44)
    batch.v_cache[int(batch.block_tables[0, 1]), 1:] = float("nan")
    batch.v_cache[int(batch.block_tables[1, 0]), 3:] = float("nan")
    q = torch.randn(2, 2, 4, generator=torch.Generator().manual_seed(933)).to(device)
    expected = reference(q, batch)
    assert_same_tensor(paged_decode(q, batch.k_cache, batch.v_cache, batch.block_tables, batch.lengths), expected,
                       f"paged_decode of lengths [5, 3] with NaN in V past each length on {device} (load V under the mask "
                       "of K: a weight of 0 times NaN is NaN)", atol=1e-5, rtol=1e-5)

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(9302)
    for _case in range(4):
        _block, _dim, _kv = _rng.choice([2, 4, 8]), _rng.choice([4, 8, 16]), _rng.randint(1, 3)
        _q_heads = _kv * _rng.randint(2, 4)
        _lengths = [_rng.randint(1, 3 * _block) for _ in range(_rng.randint(1, 3))]
        _batch = paged_batch(_lengths, _block, _kv, _dim, device=device, seed=9310 + _case, interleaved=_case % 2 == 1)
        _q = torch.randn(len(_lengths), _q_heads, _dim, generator=generator).to(device)
        _expected = reference(_q, _batch)
        assert_same_tensor(paged_decode(_q, _batch.k_cache, _batch.v_cache, _batch.block_tables, _batch.lengths),
                           _expected, f"paged_decode with {_q_heads} query heads and {_kv} KV heads, "
                           f"random case {_case}", atol=1e-5, rtol=1e-5, reveal=False)
    # A query that is a view whose head_dim is not contiguous, and NaN in V after each sequence's last token: the slots
    # past the length are neither read into the result nor weighed, so a kernel masks its V loads as its K loads.
    for _case in range(4, 6):
        _block, _dim, _kv = _rng.choice([2, 4, 8]), _rng.choice([4, 8, 16]), _rng.randint(1, 3)
        _q_heads = _kv * _rng.randint(2, 4)
        _lengths = [_rng.randint(1, 3 * _block) for _ in range(_rng.randint(2, 3))]
        _batch = paged_batch(_lengths, _block, _kv, _dim, device=device, seed=9310 + _case, interleaved=_case % 2 == 1)
        for _s, _length in enumerate(_lengths):
            if _length % _block:
                _batch.v_cache[int(_batch.block_tables[_s, (_length - 1) // _block]), _length % _block:] = float("nan")
        _q = torch.randn(len(_lengths), _dim, _q_heads, generator=generator).to(device).transpose(1, 2)
        _expected = reference(_q, _batch)
        assert bool(torch.isfinite(_expected).all()), "the test's reference read a slot past a sequence's length"
        assert_same_tensor(paged_decode(_q, _batch.k_cache, _batch.v_cache, _batch.block_tables, _batch.lengths),
                           _expected, f"paged_decode with a query that is a transposed view and NaN in V past each "
                           f"sequence's length, random case {_case}", atol=1e-5, rtol=1e-5, reveal=False)
    ### END HIDDEN TESTS


_check_task9_3_2_grouped_heads()

# %% nbgrader={"grade": true, "grade_id": "test_task9_3_3_float16_large_scores", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that paged_decode is right in float16 and stays finite and right for scores in the hundreds."""


def _check_task9_3_3_float16_large_scores():
    import torch
    import torch.nn.functional as F

    from course.checks import assert_same_tensor
    from course.env import pick_device
    from course.kernels import paged_batch

    device = pick_device()

    def reference(q, batch):
        """scaled_dot_product_attention in float32 of each sequence over its gathered K/V, in q's dtype."""
        block_size, out = batch.k_cache.shape[1], []
        for s, length in enumerate(batch.lengths.tolist()):
            used = batch.block_tables[s, :(length + block_size - 1) // block_size].long()
            keys, values = (cache[used].flatten(0, 1)[:length].float().transpose(0, 1)
                            for cache in (batch.k_cache, batch.v_cache))
            out.append(F.scaled_dot_product_attention(q[s].float()[:, None], keys, values, enable_gqa=True)[:, 0])
        return torch.stack(out).to(q.dtype)

    generator = torch.Generator().manual_seed(933)
    batch = paged_batch([11, 4, 8], 4, 2, 16, dtype=torch.float16, device=device, seed=51, interleaved=True)
    q = torch.randn(3, 4, 16, generator=generator).to(device=device, dtype=torch.float16)
    expected = reference(q, batch)  # Before each call: what paged_decode does to its inputs cannot move it.
    assert_same_tensor(paged_decode(q, batch.k_cache, batch.v_cache, batch.block_tables, batch.lengths),
                       expected, f"paged_decode in float16 (lengths [11, 4, 8], 4 query heads, 2 KV heads) "
                       f"on {device}", atol=2e-3, rtol=2e-3)
    batch = paged_batch([13, 6], 4, 2, 8, device=device, seed=52)
    loud = torch.randn(2, 2, 8, generator=generator).to(device) * 300
    expected = reference(loud, batch)
    assert_same_tensor(paged_decode(loud, batch.k_cache, batch.v_cache, batch.block_tables, batch.lengths),
                       expected, f"paged_decode with 300 * q on {device}: scores in the hundreds must "
                       "not overflow the softmax", atol=1e-4, rtol=1e-4)
    batch = paged_batch([13, 6], 4, 2, 8, device=device, seed=52)  # a new batch: the last call got the other one
    batch.k_cache.abs_().add_(0.5)  # positive keys, so that a negative query scores every token below -100
    low = -torch.full((2, 2, 8), 200.0, device=device)
    expected = reference(low, batch)
    assert_same_tensor(paged_decode(low, batch.k_cache, batch.v_cache, batch.block_tables, batch.lengths),
                       expected, f"paged_decode with every score below -100 on {device} (the running max "
                       "starts at -inf, not 0)", atol=1e-4, rtol=1e-4)
    # Heads of 128 dimensions and larger queries in float16: products summed in float16 drift past the tolerance.
    batch = paged_batch([9, 14], 4, 2, 128, dtype=torch.float16, device=device, seed=53)
    wide = (torch.randn(2, 2, 128, generator=generator) * 4).to(device=device, dtype=torch.float16)
    expected = reference(wide, batch)
    assert_same_tensor(paged_decode(wide, batch.k_cache, batch.v_cache, batch.block_tables, batch.lengths),
                       expected, f"paged_decode in float16 with head_dim 128 and 4 * randn queries on {device} (the "
                       "products and their sums in float32)", atol=2e-3, rtol=2e-3)

    # Values of 100 * randn in float16: the weights times V in float16 drift past the tolerance.
    loud_values = paged_batch([11, 6], 4, 2, 16, dtype=torch.float16, device=device, seed=9330)
    loud_values.v_cache.mul_(100)
    q100 = torch.randn(2, 4, 16, generator=generator).to(device=device, dtype=torch.float16)
    expected = reference(q100, loud_values)
    assert_same_tensor(paged_decode(q100, loud_values.k_cache, loud_values.v_cache, loud_values.block_tables, loud_values.lengths),
                       expected, f"paged_decode in float16 with values of 100 * randn on {device} (the weights "
                       "times V in float32)",
                       atol=2e-3, rtol=2e-3)
    # Every score near -3e32 in float32: stale slots masked to -1e30 (not -inf) would outweigh them all.
    far_below = paged_batch([13, 6], 4, 2, 8, device=device, seed=9331)
    far_below.k_cache.abs_().add_(0.5)
    very_low = -torch.full((2, 2, 8), 1e32, device=device)
    expected = reference(very_low, far_below)
    assert_same_tensor(paged_decode(very_low, far_below.k_cache, far_below.v_cache, far_below.block_tables, far_below.lengths),
                       expected, f"paged_decode in float32 with every score near -3e32 on {device} (stale slots "
                       "masked to -inf, not to a large negative number)",
                       atol=1e-4, rtol=1e-4)
    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(9303)
    for _case in range(4):
        _block, _dim, _kv = _rng.choice([2, 4, 8]), _rng.choice([4, 8, 16]), _rng.randint(1, 2)
        _lengths = [_rng.randint(1, 3 * _block) for _ in range(_rng.randint(1, 3))]
        _half = _case % 2 == 0
        _batch = paged_batch(_lengths, _block, _kv, _dim, device=device, seed=9320 + _case,
                             dtype=torch.float16 if _half else torch.float32, interleaved=_case % 3 == 0)
        _q = torch.randn(len(_lengths), _kv * _rng.randint(1, 2), _dim, generator=generator) * (1 if _half else 200)
        _q = _q.to(device=device, dtype=_batch.k_cache.dtype)
        _tolerance = 2e-3 if _half else 1e-4
        _expected = reference(_q, _batch)
        assert_same_tensor(paged_decode(_q, _batch.k_cache, _batch.v_cache, _batch.block_tables, _batch.lengths),
                           _expected, f"paged_decode on random case {_case} ({_batch.k_cache.dtype})",
                           atol=_tolerance, rtol=_tolerance, reveal=False)
    ### END HIDDEN TESTS


_check_task9_3_3_float16_large_scores()

# %% nbgrader={"grade": true, "grade_id": "test_task9_3_4_launch_and_bad_input", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that paged_decode launches one kernel for the batch, reads no slot past a length, and refuses bad input before
any launch."""


def _check_task9_3_4_launch_and_bad_input():
    import torch

    from course.checks import assert_plain_equal, assert_raises
    from course.env import pick_device
    from course.kernels import count_launches, paged_batch, watch_memory

    device = pick_device()
    batch = paged_batch([5, 9, 2], 4, 2, 8, device=device, seed=61)
    q = torch.zeros(3, 4, 8, device=device)
    args = (batch.k_cache, batch.v_cache, batch.block_tables, batch.lengths)
    _, launches = count_launches(paged_decode, q, *args)
    assert_plain_equal(launches, 1, f"the number of kernel launches of paged_decode for 3 sequences on {device}")
    # BEGIN SHARED check_memory (authoring/shared/09_triton_kernels.py)
    def check_memory(use, batch, caller, pools, may_write=None, written_elsewhere=None):
        """Fail when a kernel, as `course.kernels.watch_memory` saw it (``use``), read a pool slot past a sequence's
        length (``pools``: ``{position: name}`` of the K/V pools among the arguments); with ``may_write``
        (``{position: bool mask of the elements it may write}``), when it wrote any other element of an argument; with
        ``written_elsewhere``, when it wrote more bytes than that outside its arguments and result. Nothing is checked
        where nothing could be watched (a compiled kernel on a GPU)."""
        if not use["watched"]:
            return
        block_size = batch.k_cache.shape[1]
        in_use = torch.zeros(batch.k_cache.shape[:2], dtype=torch.bool)
        for s, length in enumerate(batch.lengths.tolist()):
            for t in range(length):
                in_use[int(batch.block_tables[s, t // block_size]), t % block_size] = True
        for position, name in pools.items():
            past = use["read"][position].flatten(2).any(-1) & ~in_use
            assert not bool(past.any()), (
                f"{caller} read {name} at (block, slot) {past.nonzero().tolist()[:4]}: slots past the sequences' lengths "
                "(the kernel never reads them: load under the mask)")
        if may_write is not None:
            for position, written in enumerate(use["written"]):
                allowed = may_write.get(position)
                wrong = written if allowed is None or written is None else written & ~allowed
                assert wrong is None or not bool(wrong.any()), (
                    f"{caller} wrote into its argument {position} at {wrong.nonzero().tolist()[:4]}: it may not write there")
        if written_elsewhere is not None:
            assert use["written elsewhere"] <= written_elsewhere, (
                f"{caller} wrote {use['written elsewhere']} bytes outside its result and arguments, more than "
                f"{written_elsewhere} (a tensor of its own as large as the attention matrix?)")
    # END SHARED
    # Under Triton's interpreter every load and store is seen: no slot past a length is read.
    _, use = watch_memory(paged_decode, q, *args)
    check_memory(use, batch, f"paged_decode for 3 sequences on {device}", {1: "k_cache", 2: "v_cache"})
    for bad_q, error, what in [(torch.zeros(3, 3, 8, device=device), ValueError, "3 query heads for 2 KV heads"),
                               (torch.zeros(2, 4, 8, device=device), ValueError, "q for 2 of 3 sequences"),
                               (torch.zeros(3, 4, 4, device=device), ValueError, "q of head_dim 4 (the pool's is 8)"),
                               (torch.zeros(3, 4, 8, 1, device=device), ValueError, "q of 4 dimensions"),
                               (q[:, :0], ValueError, "q of 0 query heads"),
                               (q.tolist(), TypeError, "a list as q"),
                               (q.half(), TypeError, "a float16 q for float32 pools")]:
        assert_raises(error, f"paged_decode with {what} on {device}", paged_decode, bad_q, *args)
    assert_raises(ValueError, f"paged_decode with pools of 2 and 1 KV heads on {device}", paged_decode, q,
                  batch.k_cache, batch.v_cache[:, :, :1], batch.block_tables, batch.lengths)
    assert_raises(ValueError, f"paged_decode with a length of 0 on {device}", paged_decode, q, batch.k_cache,
                  batch.v_cache, batch.block_tables, torch.tensor([5, 0, 2], dtype=torch.int32, device=device))
    assert_raises(TypeError, f"paged_decode with a list as v_cache on {device}", paged_decode, q, batch.k_cache,
                  batch.v_cache.tolist(), batch.block_tables, batch.lengths)
    heads_last = batch.v_cache.transpose(2, 3).contiguous().transpose(2, 3)  # The same shape and values, other strides.
    assert_raises(ValueError, f"paged_decode with a v_cache of other strides than k_cache's on {device}", paged_decode,
                  q, batch.k_cache, heads_last, batch.block_tables, batch.lengths)

    ### BEGIN HIDDEN TESTS
    _four = paged_batch([5, 9, 2], 4, 4, 8, device=device)
    assert_raises(ValueError, "paged_decode with 6 query heads for 4 KV heads", paged_decode,
                  torch.zeros(3, 6, 8, device=device), _four.k_cache, _four.v_cache, _four.block_tables, _four.lengths)
    assert_raises(TypeError, "paged_decode with a float16 v_cache", paged_decode, q, batch.k_cache,
                  batch.v_cache.half(), batch.block_tables, batch.lengths)
    assert_raises(TypeError, "paged_decode with an int64 lengths", paged_decode, q, batch.k_cache, batch.v_cache,
                  batch.block_tables, batch.lengths.long())
    _, _launches = count_launches(paged_decode, torch.zeros(1, 2, 8, device=device), batch.k_cache, batch.v_cache,
                                  batch.block_tables[:1], batch.lengths[:1])
    assert_plain_equal(_launches, 1, "the number of kernel launches of paged_decode for 1 sequence", reveal=False)
    ### END HIDDEN TESTS


_check_task9_3_4_launch_and_bad_input()

# %% [markdown] nbgrader={"grade": false, "grade_id": "task9_4_h2o_victims_description", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Task 9.4: h2o_victims (6 points)
#
# H2O (notebook 07) keeps the tokens with the most **accumulated attention**. An engine keeps that score per token,
# adds each decode step's attention to it, and evicts the lowest-scoring token when a budget is reached.
# `h2o_victims(q, k_cache, block_tables, lengths, scores, recent, scale=None)` does one step of that for a batch:
#
# 1. **scores, in place**: `scores` is a float32 tensor `[num_seqs, max_blocks * block_size]` (H2O's accumulated
#    attention), possibly a view of a larger tensor (the given lines let the kernel write a contiguous copy, then
#    copy it back); for every sequence `s` and position `t < lengths[s]`, add $\sum_h p_{h,t}$, the attention that
#    this step's query heads give token `t` ($p$ and the grouping of Task 9.3; `q`, `k_cache`, `block_tables`,
#    `lengths`, `scale` as there), computed in float32: the tests accept `2e-5` of absolute error. Entries at
#    `t >= lengths[s]` stay as they are. No `v_cache`: only the probabilities are needed.
# 2. **victims**: return an int64 tensor `[num_seqs]`: the position `t < lengths[s] - recent` with the smallest
#    updated score, **ties to the lower position**, or `-1` when `lengths[s] <= recent` (every token is in the recent
#    window, which H2O never evicts).
#
# The kernel has one program per sequence: grid `(num_seqs,)`. For each query head it makes **two passes** over the
# sequence's blocks: the first computes the head's running max $m$ and running sum $l$ (Task 9.3's online softmax
# without values), the second adds $e^{x_t - m} / l$ to the scores of the block's tokens (a masked load, an add, a
# masked store). It never writes the attention matrix: the scores and the victims are all that leave it. The victims
# may be chosen with torch on the updated scores (`torch.argmin` returns the first of equal minima) or in the kernel.
#
# Errors (before any launch): those of `check_paged_batch` with lengths of at least 1, and of `q` as in Task 9.3;
# `TypeError` when `scores` is not a float32 tensor or `recent` not an `int` (`True` included); `ValueError` when
# `scores` is not `[num_seqs, max_blocks * block_size]` on the pool's device, when it holds a value that is not finite
# (NaN, `inf` or `-inf`), or when `recent < 0`; check the shape and the device of `scores` before its values (the
# tests stand in for another device with the meta device, whose tensors hold shapes without data). Traps: the
# probabilities need the **final** max and sum: dividing by the running sum so far (one pass only) gives the early
# blocks too much; only the positions below the length may change; a masked position must never win the argmin (scores
# may be far above `1e30`: mask with `inf`, not with a large finite number).
#
# Graded in parts: 9.4.1 accumulated scores (3) · 9.4.2 victims, ties and the recent window (2) · 9.4.3 one launch
# and bad input (1).
#
# ## 任务 9.4：h2o_victims（6 分）
#
# H2O（notebook 07）保留**累积注意力**最多的 token。推理引擎为每个 token 保存这个分数，每个解码步都把这一步的注意力加上去，达到预算时驱逐分数最低的 token。`h2o_victims(q, k_cache, block_tables, lengths, scores, recent, scale=None)` 为一个批次完成其中的一步：
#
# 1. **原地更新分数**：`scores` 是形状为 `[num_seqs, max_blocks * block_size]` 的 float32 张量（H2O 的累积注意力分数），它也可能是一个更大张量的视图（给定的几行让内核写入一个连续存储的副本，再把结果复制回去）。对每条序列 `s` 的每个位置 `t < lengths[s]`，加上 $\sum_h p_{h,t}$，即这一步所有查询头给 token `t` 的注意力（$p_{h,t} = e^{x_{h,t}} / \sum_{u < \ell} e^{x_{h,u}}$，分组方式与任务 9.3 相同；`q`、`k_cache`、`block_tables`、`lengths`、`scale` 的含义也与任务 9.3 相同），并用 float32 计算：测试允许 `2e-5` 的绝对误差。`t >= lengths[s]` 处的项保持不变。不需要 `v_cache`：这里只用到概率。
# 2. **受害者**：返回形状为 `[num_seqs]` 的 int64 张量：在位置 `t < lengths[s] - recent` 中，更新后分数最小的那个位置，**平局时取位置更小的**；`lengths[s] <= recent` 时返回 `-1`（所有 token 都在最近窗口内，而 H2O 从不驱逐最近窗口中的 token）。
#
# 内核为每条序列启动一个程序实例：网格为 `(num_seqs,)`。对每个查询头，它对序列的块做**两遍扫描**：第一遍算出该头的运行最大值 $m$ 和运行和 $l$（即任务 9.3 的在线 softmax，只是不需要 V），第二遍把 $e^{x_t - m} / l$ 加到块中各个 token 的分数上（带掩码读取、相加、带掩码写入）。它从不写出注意力矩阵：离开内核的只有分数和受害者。受害者可以在更新后的分数上用 torch 选出（有多个相等的最小值时，`torch.argmin` 返回第一个），也可以在内核中选出。
#
# 错误（都在任何启动之前抛出）：`check_paged_batch` 的各项错误（每个长度至少为 1），以及与任务 9.3 相同的关于 `q` 的错误；`scores` 不是 float32 张量，或者 `recent` 不是 `int`（`True` 也不行）时，抛出 `TypeError`；`scores` 的形状不是 `[num_seqs, max_blocks * block_size]`、不在池所在的设备上、含有非有限值（NaN、`inf` 或 `-inf`），或者 `recent < 0` 时，抛出 `ValueError`；先检查 `scores` 的形状和设备，再检查它的值（测试用 meta 设备充当另一个设备，它的张量只有形状、没有数据）。陷阱：概率需要**最终的**最大值和运行和：只扫描一遍、除以当时为止的运行和，会让前面的块得到过多的分数；只有长度之内的位置可以改变；被掩码屏蔽的位置绝不能在 argmin 中胜出（分数可能远大于 `1e30`：要用 `inf` 屏蔽，而不是用一个很大的有限数）。
#
# 分部分计分：9.4.1 累积分数（3 分）· 9.4.2 受害者、平局与最近窗口（2 分）· 9.4.3 一次启动与错误输入（1 分）。

# %% nbgrader={"grade": false, "grade_id": "task9_4_h2o_victims", "locked": false, "schema_version": 3, "solution": true, "task": false}
import math

import torch
import triton
import triton.language as tl

from course.kernels import check_paged_batch


@triton.jit
def _h2o_scores_kernel(q_ptr, k_ptr, block_tables_ptr, lengths_ptr, scores_ptr, scale,
                       stride_q_seq, stride_q_head, stride_block, stride_slot, stride_head, stride_dim,
                       stride_table, stride_scores, num_q_heads, group_size,
                       BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr):
    # One program adds one sequence's attention, summed over its query heads, to its scores.
    seq = tl.program_id(0).to(tl.int64)
    length = tl.load(lengths_ptr + seq)
    slots = tl.arange(0, BLOCK_SIZE)
    dims = tl.arange(0, HEAD_DIM)
    for head in range(num_q_heads):
        q = tl.load(q_ptr + seq * stride_q_seq + head * stride_q_head + dims).to(tl.float32)
        head_offset = (head // group_size) * stride_head + dims[None, :] * stride_dim
        running_max = -float("inf")
        running_sum = 0.0
        for block in range(0, tl.cdiv(length, BLOCK_SIZE)):
            physical = tl.load(block_tables_ptr + seq * stride_table + block).to(tl.int64)
            valid = block * BLOCK_SIZE + slots < length
            k = tl.load(k_ptr + physical * stride_block + slots[:, None] * stride_slot + head_offset,
                        mask=valid[:, None], other=0.0).to(tl.float32)
            x = tl.where(valid, tl.sum(k * q[None, :], axis=1) * scale, -float("inf"))
            # TODO 9.4.1: the first pass: update running_max and running_sum with this block's scores x.
            # 提示：就是任务 9.3 的在线 softmax，只是没有 acc：先求新的最大值，再用 e 的（旧最大值 - 新最大值）次方缩放运行和，
            #       并加上本块各个 e 的（x - 新最大值）次方之和；最后更新运行最大值。
            # Hint: Task 9.3's online softmax without acc: find the new max, rescale the running sum by e to the
            #       (old max - new max) and add the sum of this block's e to the (x - new max); update the running max last.
            ### BEGIN SOLUTION
            new_max = tl.maximum(running_max, tl.max(x, axis=0))
            running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
            running_max = new_max
            ### END SOLUTION
        for block in range(0, tl.cdiv(length, BLOCK_SIZE)):
            physical = tl.load(block_tables_ptr + seq * stride_table + block).to(tl.int64)
            tokens = block * BLOCK_SIZE + slots
            valid = tokens < length
            k = tl.load(k_ptr + physical * stride_block + slots[:, None] * stride_slot + head_offset,
                        mask=valid[:, None], other=0.0).to(tl.float32)
            x = tl.where(valid, tl.sum(k * q[None, :], axis=1) * scale, -float("inf"))
            # TODO 9.4.2: the second pass: add this head's probability of each token, from the first pass's final max
            #   and sum, to scores[seq, tokens], only where valid.
            # 提示：这个头给每个 token 的概率用第一遍扫描结束时的最大值和运行和来算；分数第 seq 行从 scores_ptr 之后
            #       seq 个行步长处开始，其中第 t 项是 token t 的分数；带掩码读出这些分数、加上概率，再带掩码写回，掩码都是 valid。
            # Hint: this head's probability of each token uses the max and the running sum at the end of the first pass;
            #       row seq of the scores starts seq row strides after scores_ptr, and its entry t is token t's score;
            #       load these scores with a mask, add the probabilities, store them back with a mask: valid, both times.
            ### BEGIN SOLUTION
            probabilities = tl.exp(x - running_max) / running_sum
            target = scores_ptr + seq * stride_scores + tokens
            tl.store(target, tl.load(target, mask=valid) + probabilities, mask=valid)
            ### END SOLUTION


def h2o_victims(q, k_cache, block_tables, lengths, scores, recent, scale=None):
    """Add this decode step's attention, summed over the query heads, to H2O's scores; return each victim.

    Args:
        q: tensor [num_seqs, num_q_heads, head_dim] in the pool's dtype on its device.
        k_cache: pool [num_blocks, block_size, num_kv_heads, head_dim]; num_q_heads a multiple of num_kv_heads.
        block_tables, lengths: as in paged_gather, every length at least 1.
        scores: float32 tensor [num_seqs, max_blocks * block_size] of finite values, updated in place.
        recent: int >= 0, the last positions of each sequence that are never victims.
        scale: float, or None for 1 / sqrt(head_dim).

    Returns:
        An int64 tensor [num_seqs] on the pool's device: the position t < lengths[s] - recent with the smallest
        updated scores[s, t], ties to the lower t; -1 when lengths[s] <= recent.

    Raises:
        TypeError: q, scores or recent of the wrong type or dtype; and check_paged_batch's.
        ValueError: q or scores of the wrong shape or device, a score that is not finite, recent < 0; and
            check_paged_batch's.
    """
    check_paged_batch("h2o_victims", k_cache, block_tables, lengths, min_length=1)
    if type(q) is not torch.Tensor or q.dtype != k_cache.dtype:
        raise TypeError("h2o_victims: q must be a torch.Tensor of the pool's dtype")
    block_tables, lengths = block_tables.contiguous(), lengths.contiguous()
    num_blocks, block_size, num_kv_heads, head_dim = k_cache.shape
    num_seqs, max_blocks = block_tables.shape
    if (q.device != k_cache.device or q.dim() != 3 or q.shape[0] != num_seqs or q.shape[2] != head_dim
            or q.shape[1] == 0 or q.shape[1] % num_kv_heads):
        raise ValueError(f"h2o_victims: q must be [{num_seqs}, a multiple of {num_kv_heads}, {head_dim}] on "
                         f"{k_cache.device}, got {list(q.shape)} on {q.device}")
    scale = 1.0 / math.sqrt(head_dim) if scale is None else scale
    # TODO 9.4.3: check scores (a float32 tensor [num_seqs, max_blocks * block_size] on the pool's device, every value
    #   finite) and recent (an int >= 0, bool excluded), before any launch.
    # 提示：isinstance(True, int) 为真，所以要比较 recent 的 type 本身才能把 bool 挡在外面；torch.isfinite 对 NaN 和
    #       正负无穷都为假。
    # Hint: isinstance(True, int) is true, so only a comparison of recent's type itself keeps a bool out;
    #       torch.isfinite is false for NaN and for both infinities.
    ### BEGIN SOLUTION
    if type(scores) is not torch.Tensor or scores.dtype != torch.float32:
        raise TypeError("h2o_victims: scores must be a float32 torch.Tensor")
    if tuple(scores.shape) != (num_seqs, max_blocks * block_size) or scores.device != k_cache.device:
        raise ValueError(f"h2o_victims: scores must be [{num_seqs}, {max_blocks * block_size}] on {k_cache.device}, "
                         f"got {list(scores.shape)} on {scores.device}")
    if not bool(torch.isfinite(scores).all()):
        raise ValueError("h2o_victims: every score must be finite")
    if type(recent) is not int:
        raise TypeError(f"h2o_victims: recent must be an int, got {type(recent).__name__}")
    if recent < 0:
        raise ValueError(f"h2o_victims: recent must be >= 0, got {recent}")
    ### END SOLUTION
    q = q.contiguous()
    work = scores if scores.is_contiguous() else scores.contiguous()  # the kernel writes a contiguous tensor
    # TODO 9.4.4: one launch of _h2o_scores_kernel on q and work, one program per sequence.
    # 提示：网格是 (num_seqs,)；stride_scores 是 work.stride(0)；num_q_heads 是 q.shape[1]，group_size 是 q.shape[1] // num_kv_heads。
    # Hint: the grid is (num_seqs,); stride_scores is work.stride(0); num_q_heads is q.shape[1], group_size
    #       q.shape[1] // num_kv_heads.
    ### BEGIN SOLUTION
    _h2o_scores_kernel[(num_seqs,)](
        q, k_cache, block_tables, lengths, work, float(scale), q.stride(0), q.stride(1), *k_cache.stride(),
        block_tables.stride(0), work.stride(0), q.shape[1], q.shape[1] // num_kv_heads,
        BLOCK_SIZE=block_size, HEAD_DIM=head_dim)
    ### END SOLUTION
    if work is not scores:
        scores.copy_(work)
    # TODO 9.4.5: the victims: the argmin of the scores with +inf at every position t >= lengths[s] - recent, and -1
    #   where no position is evictable.
    # 提示：位置 t 可驱逐当且仅当 t < lengths[s] - recent：把一行位置（torch.arange）与一列界限广播比较，得到一个布尔矩阵；
    #       其余位置填成 +inf 之后，argmin(dim=1) 返回第一个最小值，也就是平局时位置更小的那个；一行中没有可驱逐的位置时，
    #       用 torch.where 换成 -1。
    # Hint: position t is evictable when t < lengths[s] - recent: compare a row of positions (torch.arange) with a column
    #       of bounds, by broadcasting, for a boolean matrix; with +inf at every other position, argmin(dim=1) returns
    #       the first smallest, the lower position on a tie; where a row has no evictable position, torch.where puts -1.
    ### BEGIN SOLUTION
    # recent may be any int >= 0 (2**70 too): no more than a whole row is recent.
    recent = min(recent, scores.shape[1])
    positions = torch.arange(scores.shape[1], device=scores.device)
    evictable = positions[None, :] < (lengths.long() - recent)[:, None]
    victims = torch.where(evictable, scores, torch.full_like(scores, float("inf"))).argmin(dim=1)
    return torch.where(evictable.any(dim=1), victims, torch.full_like(victims, -1))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_task9_4_1_scores", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
"""Check that h2o_victims adds each token's attention, summed over the query heads, to its score in place."""


def _check_task9_4_1_scores():
    import torch

    from course.checks import assert_same_tensor
    from course.env import pick_device
    from course.kernels import paged_batch

    device = pick_device()

    # BEGIN SHARED expected_scores (authoring/shared/09_triton_kernels.py)
    def expected_scores(q, batch, scores, scale=None):
        """The scores plus this step's attention, summed over the query heads, computed with torch."""
        block_size, group = batch.k_cache.shape[1], q.shape[1] // batch.k_cache.shape[2]
        want = scores.clone()
        for s, length in enumerate(batch.lengths.tolist()):
            used = batch.block_tables[s, :(length + block_size - 1) // block_size].long()
            keys = batch.k_cache[used].flatten(0, 1)[:length].float().repeat_interleave(group, dim=1)
            x = torch.einsum("hd,thd->ht", q[s].float(), keys) * (q.shape[2] ** -0.5 if scale is None else scale)
            want[s, :length] += torch.softmax(x, dim=-1).sum(dim=0)
        return want
    # END SHARED

    generator = torch.Generator().manual_seed(941)
    for spec, num_q_heads in ((dict(lengths=[10, 3, 16], block_size=4, num_heads=2, head_dim=8, seed=71), 2),
                              (dict(lengths=[9, 5], block_size=8, num_heads=1, head_dim=16, seed=72,
                                    interleaved=True, extra_table_columns=1), 4),
                              (dict(lengths=[6], block_size=2, num_heads=2, head_dim=4, seed=73,
                                    dtype=torch.float16), 4)):
        batch = paged_batch(device=device, **spec)
        width = batch.block_tables.shape[1] * spec["block_size"]
        scores = torch.rand(len(spec["lengths"]), width, generator=generator).to(device)
        q = torch.randn(len(spec["lengths"]), num_q_heads, spec["head_dim"], generator=generator)
        q = q.to(device=device, dtype=batch.k_cache.dtype)
        want = expected_scores(q, batch, scores)
        h2o_victims(q, batch.k_cache, batch.block_tables, batch.lengths, scores, 0)
        assert_same_tensor(scores, want, f"the scores after h2o_victims with {num_q_heads} query heads on "
                           f"paged_batch({spec}) on {device} (entries past each length unchanged)", atol=2e-5)
    batch = paged_batch([5, 8], 4, 2, 8, device=device, seed=75)
    wide = torch.rand(2, 3 + 8, generator=generator).to(device)
    scores, before = wide[:, 3:], wide.clone()  # a view: every row starts 3 entries into a wider one
    q = torch.randn(2, 2, 8, generator=generator).to(device)
    want = expected_scores(q, batch, scores)
    h2o_victims(q, batch.k_cache, batch.block_tables, batch.lengths, scores, 0)
    assert_same_tensor(wide, torch.cat((before[:, :3], want), dim=1), f"the scores after h2o_victims on scores that "
                       f"are columns 3 to 10 of a [2, 11] tensor on {device} (updated in place, the rest unchanged)",
                       atol=2e-5)
    batch = paged_batch([12, 7], 4, 1, 8, device=device, seed=74)
    scores = torch.zeros(2, 12, device=device)
    loud = torch.randn(2, 3, 8, generator=generator).to(device) * 300
    want = expected_scores(loud, batch, scores, scale=0.5)
    h2o_victims(loud, batch.k_cache, batch.block_tables, batch.lengths, scores, 0, scale=0.5)
    assert_same_tensor(scores, want, f"the scores after h2o_victims with 300 * q and scale 0.5 on {device} "
                       "(scores in the hundreds must not overflow)", atol=2e-5)
    scores = torch.zeros(2, 12, device=device)
    want = expected_scores(loud, batch, scores, scale=0.0)
    h2o_victims(loud, batch.k_cache, batch.block_tables, batch.lengths, scores, 0, scale=0.0)
    assert_same_tensor(scores, want, f"the scores after h2o_victims with scale=0.0 on {device} (a given scale, even 0.0, "
                       "is used: every token of a sequence gets the same attention)", atol=2e-5)
    batch = paged_batch([10, 3, 16], 4, 2, 8, device=device, seed=76)
    scores = torch.rand(3, 16, generator=generator).to(device)
    q = torch.randn(3, 2, 8, generator=generator).to(device)
    want = expected_scores(q, batch, scores)
    columns, strided = batch.block_tables.t().contiguous().t(), batch.lengths.repeat_interleave(2)[::2]
    h2o_victims(q, batch.k_cache, columns, strided, scores, 0)
    assert_same_tensor(scores, want, f"the scores after h2o_victims on {device} with block_tables.t().contiguous().t() "
                       "(the same table, stored column by column: strides (1, num_seqs)) and lengths a view with "
                       "stride 2", atol=2e-5)

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(9401)
    for _case in range(4):
        _block, _dim, _kv = _rng.choice([2, 4, 8]), _rng.choice([4, 8, 16]), _rng.randint(1, 2)
        _lengths = [_rng.randint(1, 3 * _block) for _ in range(_rng.randint(1, 3))]
        _batch = paged_batch(_lengths, _block, _kv, _dim, device=device, seed=9400 + _case,
                             interleaved=_case % 2 == 1, extra_table_columns=_rng.randint(0, 1))
        _scores = (torch.rand(len(_lengths), _batch.block_tables.shape[1] * _block, generator=generator) * 5).to(device)
        if _case == 1:  # a transposed copy: the same values, another layout
            _scores = _scores.t().contiguous().t()
        _q = (torch.randn(len(_lengths), _kv * _rng.randint(1, 3), _dim, generator=generator) * 3).to(device)
        _scale = None if _case % 2 else _rng.uniform(0.1, 1.0)
        _want = expected_scores(_q, _batch, _scores, _scale)
        h2o_victims(_q, _batch.k_cache, _batch.block_tables, _batch.lengths, _scores, _rng.randint(0, 3), scale=_scale)
        assert_same_tensor(_scores, _want, f"the scores after h2o_victims on random case {_case} (lengths {_lengths})",
                           atol=2e-5, reveal=False)
    _batch = paged_batch([6, 13, 2], 4, 2, 4, device=device, seed=9411, extra_table_columns=1)
    _scores = torch.zeros(3, _batch.block_tables.shape[1] * 4, device=device)
    _q = torch.randn(3, 4, 4, generator=torch.Generator().manual_seed(9411)).to(device)
    _want = expected_scores(_q, _batch, _scores)
    _wide = torch.stack((_batch.block_tables, torch.zeros_like(_batch.block_tables)), dim=-1)  # [seqs, blocks, 2]
    h2o_victims(_q, _batch.k_cache, _wide[..., 0], _batch.lengths, _scores, 0)
    assert_same_tensor(_scores, _want, "the scores after h2o_victims with block_tables a strided view (every other "
                       "int32 of a wider tensor)", atol=2e-5, reveal=False)
    # A query that is a view whose head_dim is not contiguous (as in Task 9.3): q is read through its strides, or made
    # contiguous first.
    _batch = paged_batch([7, 3], 4, 2, 8, device=device, seed=9412, interleaved=True)
    _scores = torch.zeros(2, _batch.block_tables.shape[1] * 4, device=device)
    _q = torch.randn(2, 8, 4, generator=torch.Generator().manual_seed(9412)).to(device).transpose(1, 2)
    _want = expected_scores(_q, _batch, _scores)
    h2o_victims(_q, _batch.k_cache, _batch.block_tables, _batch.lengths, _scores, 0)
    assert_same_tensor(_scores, _want, "the scores after h2o_victims with a query that is a transposed view (its "
                       "head_dim not contiguous)", atol=2e-5, reveal=False)
    ### END HIDDEN TESTS


_check_task9_4_1_scores()

# %% nbgrader={"grade": true, "grade_id": "test_task9_4_2_victims", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
"""Check that h2o_victims returns the lowest-scoring evictable position, ties to the lower one, -1 when none."""


def _check_task9_4_2_victims():
    import torch

    from course.checks import assert_same_tensor
    from course.env import pick_device
    from course.kernels import paged_batch

    device = pick_device()

    # BEGIN SHARED expected_scores (authoring/shared/09_triton_kernels.py)
    def expected_scores(q, batch, scores, scale=None):
        """The scores plus this step's attention, summed over the query heads, computed with torch."""
        block_size, group = batch.k_cache.shape[1], q.shape[1] // batch.k_cache.shape[2]
        want = scores.clone()
        for s, length in enumerate(batch.lengths.tolist()):
            used = batch.block_tables[s, :(length + block_size - 1) // block_size].long()
            keys = batch.k_cache[used].flatten(0, 1)[:length].float().repeat_interleave(group, dim=1)
            x = torch.einsum("hd,thd->ht", q[s].float(), keys) * (q.shape[2] ** -0.5 if scale is None else scale)
            want[s, :length] += torch.softmax(x, dim=-1).sum(dim=0)
        return want
    # END SHARED
    # A zero query attends to every token equally, so each step adds the same amount to every score of a sequence:
    # the victims follow the scores given here.
    batch = paged_batch([6, 5, 2, 8], 4, 1, 4, device=device, seed=81)
    q = torch.zeros(4, 2, 4, device=device)
    scores = torch.tensor([[3.0, 1.0, 2.0, 1.0, 0.5, 0.0, 9.0, 9.0],
                           [2.0, 2.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0],
                           [1.0, 0.0, -5.0, -5.0, -5.0, -5.0, -5.0, -5.0],
                           [4.0, 4.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0]], device=device)
    for recent, want in ((0, [5, 0, 1, 2]), (1, [4, 0, 0, 2]), (2, [1, 0, -1, 2]), (5, [0, -1, -1, 2]),
                         (8, [-1, -1, -1, -1]), (2**32 + 1, [-1, -1, -1, -1]), (2**70, [-1, -1, -1, -1])):
        victims = h2o_victims(q, batch.k_cache, batch.block_tables, batch.lengths, scores.clone(), recent)
        assert_same_tensor(victims, torch.tensor(want, device=device),
                           f"h2o_victims(zero q, lengths [6, 5, 2, 8], recent {recent}) with scores {scores.tolist()} "
                           f"on {device}: the victims (ties to the lower position; positions past the length never win)")
    # Finite scores may be far above 1e30: a masked position must still never win (mask with inf).
    high = torch.full((4, 8), 3e30, device=device)
    high[0, 1:3], high[1, 3], high[2, 0], high[3, 6] = 2e30, 2e30, 2e30, 2e30  # the lowest scores
    victims = h2o_victims(q, batch.k_cache, batch.block_tables, batch.lengths, high, 1)
    assert_same_tensor(victims, torch.tensor([1, 3, 0, 6], device=device),
                       f"h2o_victims(zero q, lengths [6, 5, 2, 8], recent 1) with scores of 2e30 and 3e30 on {device} "
                       "(finite scores can be far above 1e30: a masked position must still never win)")

    # Equal scores and a query that attends unequally: the victim is the token this step attends to least (the
    # victims follow the scores after this step's attention is added to them).
    batch = paged_batch([6, 5], 4, 1, 4, device=device, seed=82)
    q = torch.randn(2, 2, 4, generator=torch.Generator().manual_seed(82)).to(device)
    updated = expected_scores(q, batch, torch.ones(2, 8, device=device))
    rows = updated.tolist()
    want = [min(range(length), key=lambda t, row=rows[s]: (row[t], t)) for s, length in enumerate([6, 5])]
    victims = h2o_victims(q, batch.k_cache, batch.block_tables, batch.lengths, torch.ones(2, 8, device=device), 0)
    assert_same_tensor(victims, torch.tensor(want, device=device),
                       f"h2o_victims(random q, lengths [6, 5], recent 0) with every score 1.0 on {device}: the victims "
                       "(the tokens this step attends to least)")

    ### BEGIN HIDDEN TESTS
    import random as _random

    _rng = _random.Random(9402)
    _generator = torch.Generator().manual_seed(9402)
    for _case in range(6):
        _block = _rng.choice([2, 4])
        _lengths = [_rng.randint(1, 3 * _block) for _ in range(_rng.randint(1, 4))]
        _batch = paged_batch(_lengths, _block, 1, 4, device=device, seed=9410 + _case)
        _width = _batch.block_tables.shape[1] * _block
        _scores = torch.randint(0, 3, (len(_lengths), _width), generator=_generator).float().to(device)
        _q = torch.randn(len(_lengths), 2, 4, generator=_generator).to(device) * (_case % 2)
        _recent = _rng.randint(0, 4)
        # The victims follow the scores with this step's attention added, computed here before the call (never read
        # back from what h2o_victims wrote); a victim whose score is within float error of the expected one's passes,
        # unless the two scores are exactly equal here: then the lower position goes.
        _updated = expected_scores(_q, _batch, _scores)
        _victims = h2o_victims(_q, _batch.k_cache, _batch.block_tables, _batch.lengths, _scores, _recent)
        _want = []
        for _s, _length in enumerate(_lengths):
            _row = _updated[_s].tolist()
            _choices = range(max(0, _length - _recent))
            _best = min(_choices, key=lambda t, row=_row: (row[t], t)) if _choices else -1
            _got = int(_victims[_s]) if isinstance(_victims, torch.Tensor) and _victims.shape == (len(_lengths),) else _best
            _want.append(_got if _best >= 0 and _got in _choices and 0 < abs(_row[_got] - _row[_best]) <= 1e-4 else _best)
        assert_same_tensor(_victims, torch.tensor(_want, device=device),
                           f"h2o_victims victims on random case {_case} (lengths {_lengths}, recent {_recent})",
                           reveal=False)
    # Exact ties: q = 0 adds the same attention to every slot of a sequence, and the scores are 0 or 1, so several
    # slots share the smallest score in every sum order; the lowest position among them goes.
    for _case in range(4):
        _block = _rng.choice([2, 4])
        _lengths = [_rng.randint(2, 3 * _block) for _ in range(_rng.randint(2, 4))]
        _batch = paged_batch(_lengths, _block, 1, 4, device=device, seed=9420 + _case)
        _width = _batch.block_tables.shape[1] * _block
        _scores = torch.randint(0, 2, (len(_lengths), _width), generator=_generator).float().to(device)
        _q = torch.zeros(len(_lengths), 2, 4, device=device)
        _recent = _rng.randint(0, 1)
        _updated = expected_scores(_q, _batch, _scores)
        _rows = _updated.tolist()
        _want = [min(range(_length - _recent), key=lambda t, row=_rows[_s]: (row[t], t))
                 for _s, _length in enumerate(_lengths)]
        _victims = h2o_victims(_q, _batch.k_cache, _batch.block_tables, _batch.lengths, _scores, _recent)
        assert_same_tensor(_victims, torch.tensor(_want, device=device),
                           f"h2o_victims victims on tie case {_case} (lengths {_lengths}, recent {_recent}, scores of "
                           "0 and 1, q zero: ties go to the lower position)", reveal=False)
    ### END HIDDEN TESTS


_check_task9_4_2_victims()

# %% nbgrader={"grade": true, "grade_id": "test_task9_4_3_launch_and_bad_input", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}
"""Check that h2o_victims launches one kernel, reads no slot past a length, writes only the scores and the victims, and
refuses bad scores or recent before any launch."""


def _check_task9_4_3_launch_and_bad_input():
    import numpy
    import torch

    from course.checks import assert_plain_equal, assert_raises, assert_same_tensor
    from course.env import pick_device
    from course.kernels import count_launches, paged_batch, watch_memory

    device = pick_device()
    batch = paged_batch([5, 9, 2], 4, 2, 8, device=device, seed=91)
    q = torch.zeros(3, 2, 8, device=device)
    scores = torch.zeros(3, 12, device=device)
    head = (q, batch.k_cache, batch.block_tables, batch.lengths)
    _, launches = count_launches(h2o_victims, *head, scores, 2)
    assert_plain_equal(launches, 1, f"the number of kernel launches of h2o_victims for 3 sequences on {device}")
    # BEGIN SHARED check_memory (authoring/shared/09_triton_kernels.py)
    def check_memory(use, batch, caller, pools, may_write=None, written_elsewhere=None):
        """Fail when a kernel, as `course.kernels.watch_memory` saw it (``use``), read a pool slot past a sequence's
        length (``pools``: ``{position: name}`` of the K/V pools among the arguments); with ``may_write``
        (``{position: bool mask of the elements it may write}``), when it wrote any other element of an argument; with
        ``written_elsewhere``, when it wrote more bytes than that outside its arguments and result. Nothing is checked
        where nothing could be watched (a compiled kernel on a GPU)."""
        if not use["watched"]:
            return
        block_size = batch.k_cache.shape[1]
        in_use = torch.zeros(batch.k_cache.shape[:2], dtype=torch.bool)
        for s, length in enumerate(batch.lengths.tolist()):
            for t in range(length):
                in_use[int(batch.block_tables[s, t // block_size]), t % block_size] = True
        for position, name in pools.items():
            past = use["read"][position].flatten(2).any(-1) & ~in_use
            assert not bool(past.any()), (
                f"{caller} read {name} at (block, slot) {past.nonzero().tolist()[:4]}: slots past the sequences' lengths "
                "(the kernel never reads them: load under the mask)")
        if may_write is not None:
            for position, written in enumerate(use["written"]):
                allowed = may_write.get(position)
                wrong = written if allowed is None or written is None else written & ~allowed
                assert wrong is None or not bool(wrong.any()), (
                    f"{caller} wrote into its argument {position} at {wrong.nonzero().tolist()[:4]}: it may not write there")
        if written_elsewhere is not None:
            assert use["written elsewhere"] <= written_elsewhere, (
                f"{caller} wrote {use['written elsewhere']} bytes outside its result and arguments, more than "
                f"{written_elsewhere} (a tensor of its own as large as the attention matrix?)")
    # END SHARED
    # Under Triton's interpreter every load and store is seen: no slot past a length is read, and of the arguments
    # only the scores within the lengths are written; outside them, the victims at most (3 int64s, never the
    # attention matrix).
    watched = scores.clone()
    _, use = watch_memory(h2o_victims, *head, watched, 2)
    within = torch.arange(12, device=device) < batch.lengths[:, None].to(device)
    check_memory(use, batch, f"h2o_victims for 3 sequences on {device}", {1: "k_cache"}, {4: within.cpu()}, 3 * 8)
    before = scores.clone()
    for bad_scores, recent, error, what in [(scores.double(), 0, TypeError, "float64 scores"),
                                            (scores[:, :8], 0, ValueError, "scores of 8 positions (12 needed)"),
                                            (scores, -1, ValueError, "recent -1"),
                                            (scores, 1.0, TypeError, "recent 1.0"),
                                            (scores, True, TypeError, "recent True"),
                                            (scores, numpy.int64(1), TypeError, "recent numpy.int64(1)"),
                                            (scores.reshape(36), 0, ValueError, "scores of shape [36] (as many "
                                                                                "values, the wrong shape)"),
                                            (scores.reshape(12, 3), 0, ValueError, "scores of shape [12, 3]"),
                                            (torch.zeros(3, 16, device=device), 0, ValueError,
                                             "scores of 16 positions (12 needed: not more either)"),
                                            (torch.zeros(4, 12, device=device), 0, ValueError,
                                             "scores of 4 sequences (3 needed)"),
                                            # The meta device holds shapes without data: it stands for another device.
                                            (torch.zeros(3, 12, device="meta"), 0, ValueError,
                                             "scores on the meta device (not the pool's device)")]:
        assert_raises(error, f"h2o_victims with {what} on {device}", h2o_victims, *head, bad_scores, recent)
    assert_raises(ValueError, f"h2o_victims with 3 query heads for 2 KV heads on {device}", h2o_victims,
                  torch.zeros(3, 3, 8, device=device), *head[1:], scores, 0)
    assert_raises(TypeError, f"h2o_victims with a float64 q for float32 pools on {device}", h2o_victims,
                  q.double(), *head[1:], scores, 0)
    for bad, what in [(float("nan"), "a NaN score"), (float("inf"), "an infinite score"), (float("-inf"), "a score of -inf")]:
        refused = scores.clone()
        refused[1, 3] = bad
        kept = refused.clone()
        assert_raises(ValueError, f"h2o_victims with {what} on {device}", h2o_victims, *head, refused, 0)
        assert_same_tensor(refused, kept, f"the scores after h2o_victims refused {what} on {device} (refused before any "
                           "launch, they stay as they were)")
    assert_same_tensor(scores, before, f"the scores after h2o_victims refused bad input on {device}")

    # A value that is not finite past a sequence's length is refused too: the text names every value of scores.
    for bad in (float("nan"), float("inf")):
        past = scores.clone()
        past[2, 7] = bad  # The third sequence holds 2 tokens.
        assert_raises(ValueError, f"h2o_victims with {bad} past the third sequence's length of 2 on {device}",
                      h2o_victims, *head, past, 0)
    ### BEGIN HIDDEN TESTS
    _inf = scores.clone()
    _inf[0, 0] = float("inf")
    assert_raises(ValueError, "h2o_victims with an infinite score", h2o_victims, *head, _inf, 0)
    assert_raises(TypeError, "h2o_victims with a list of scores", h2o_victims, *head, scores.tolist(), 0)
    assert_raises(ValueError, "h2o_victims with scores for 2 of 3 sequences", h2o_victims, *head, scores[:2], 0)
    assert_raises(TypeError, "h2o_victims with recent None", h2o_victims, *head, scores, None)
    assert_raises(ValueError, "h2o_victims with 0 query heads", h2o_victims, q[:, :0], *head[1:], scores, 0)
    assert_same_tensor(scores, before, "the scores after h2o_victims refused bad input", reveal=False)
    ### END HIDDEN TESTS


_check_task9_4_3_launch_and_bad_input()

# %% [markdown]
# ## Experiments | 实验
#
# ### Experiment 1: each kernel against its PyTorch composition | 实验 1：每个内核与对应的 PyTorch 组合
#
# The cell below runs your four kernels on one batch (4 sequences of 9 to 100 tokens in blocks of 16, 8 query heads
# over 2 KV heads, float16 on a GPU, float32 on the CPU) next to what a PyTorch program does for the same job: advanced
# indexing for the gather, `index_copy_` for the block copy, the gather then `scaled_dot_product_attention` for decode,
# and the attention matrix then a sum for H2O's scores. It prints the largest difference of each pair. On a GPU it
# also times both with `triton.testing.do_bench` on a larger batch (32 sequences of 4,096 tokens) and prints the
# ratio; in the interpreter it does not time at all: a kernel there runs each program's vector operations as numpy
# calls, one program after another, so its time says nothing about the GPU. `python bench/bench_kernels.py` sweeps
# context lengths from 1k to 64k and batch sizes from 1 to 64 on a GPU, with the bandwidth each kernel reaches.
#
# 下面的单元在同一个批次上（4 条序列，长度从 9 到 100 个 token，块大小 16，8 个查询头共享 2 个 KV 头；GPU 上用 float16，CPU 上用 float32）运行你的四个内核，并与完成同一工作的 PyTorch 组合对照：收集用高级索引，块复制用 `index_copy_`，解码先收集、再调用 `scaled_dot_product_attention`，H2O 的分数先算出注意力矩阵、再求和。它打印每一对结果之间的最大差异。在 GPU 上，它还在一个更大的批次上（32 条序列，每条 4096 个 token）用 `triton.testing.do_bench` 为两者计时并打印比值；在解释器中它完全不计时：解释器逐个运行程序实例，把每个向量操作当作一次 numpy 调用，这样测出的耗时说明不了 GPU 上的任何事情。`python bench/bench_kernels.py` 在 GPU 上扫描 1k 到 64k 的上下文长度和 1 到 64 的批量大小，并给出每个内核达到的带宽。

# %%
import math

import torch
import torch.nn.functional as F

from course.kernels import paged_batch
from course.plots import claim

KV_HEADS, Q_HEADS, HEAD_DIM, BLOCK = 2, 8, 32, 16
DTYPE = torch.float16 if DEVICE.type == "cuda" else torch.float32


def torch_gather(cache, block_tables, lengths):
    """The PyTorch composition of paged_gather: index every table entry (padding clamped), then zero past each length."""
    rows = cache[block_tables.clamp(min=0).long()].flatten(1, 2)
    rows[torch.arange(rows.shape[1], device=rows.device)[None, :] >= lengths[:, None]] = 0
    return rows


def torch_decode(q, batch):
    """Gather, then scaled_dot_product_attention with a mask of each sequence's length."""
    keys, values = (torch_gather(cache, batch.block_tables, batch.lengths).transpose(1, 2)
                    for cache in (batch.k_cache, batch.v_cache))
    mask = torch.arange(keys.shape[2], device=q.device)[None, :] < batch.lengths[:, None]
    return F.scaled_dot_product_attention(q[:, :, None], keys, values, attn_mask=mask[:, None, None],
                                          enable_gqa=True)[:, :, 0]


def torch_h2o(q, batch, scores):
    """The attention matrix [num_seqs, num_q_heads, tokens] of this step, summed over the heads, added to scores."""
    keys = torch_gather(batch.k_cache, batch.block_tables, batch.lengths).transpose(1, 2)  # [S, KV heads, T, D]
    grouped = q.reshape(q.shape[0], keys.shape[1], -1, q.shape[2])  # [S, KV heads, group, D]
    logits = torch.einsum("skgd,sktd->skgt", grouped.float(), keys.float()) / math.sqrt(q.shape[-1])
    mask = torch.arange(keys.shape[2], device=q.device)[None, :] < batch.lengths[:, None]
    return scores + torch.softmax(logits.masked_fill(~mask[:, None, None], float("-inf")), dim=-1).sum(dim=(1, 2))


def compare(lengths, seed=0):
    """Run every kernel and its composition on one batch; return {kernel: largest difference}."""
    batch = paged_batch(lengths, BLOCK, KV_HEADS, HEAD_DIM, dtype=DTYPE, device=DEVICE, seed=seed, free_blocks=4)
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(len(lengths), Q_HEADS, HEAD_DIM, generator=generator).to(device=DEVICE, dtype=DTYPE)
    differences = {"paged_gather": (paged_gather(batch.k_cache, batch.block_tables, batch.lengths)
                                    - torch_gather(batch.k_cache, batch.block_tables, batch.lengths)).abs().max()}
    pool = batch.k_cache.shape[0]
    pairs = torch.tensor([[0, pool - 1], [1, pool - 2]], device=DEVICE)
    k_copy, v_copy = batch.k_cache.clone(), batch.v_cache.clone()
    k_copy.index_copy_(0, pairs[:, 1], k_copy[pairs[:, 0]])
    v_copy.index_copy_(0, pairs[:, 1], v_copy[pairs[:, 0]])
    k_pool, v_pool = batch.k_cache.clone(), batch.v_cache.clone()
    copy_blocks(k_pool, v_pool, pairs)
    differences["copy_blocks"] = torch.maximum((k_pool - k_copy).abs().max(), (v_pool - v_copy).abs().max())
    differences["paged_decode"] = (paged_decode(q, batch.k_cache, batch.v_cache, batch.block_tables, batch.lengths)
                                   - torch_decode(q, batch)).abs().max()
    scores = torch.zeros(len(lengths), batch.block_tables.shape[1] * BLOCK, device=DEVICE)
    want = torch_h2o(q, batch, scores)
    victims = h2o_victims(q, batch.k_cache, batch.block_tables, batch.lengths, scores, 4)
    differences["h2o_victims (scores)"] = (scores - want).abs().max()
    evictable = torch.arange(scores.shape[1], device=DEVICE)[None, :] < (batch.lengths.long() - 4)[:, None]
    same = torch.equal(victims, want.masked_fill(~evictable, float("inf")).argmin(dim=1))
    return {name: float(value) for name, value in differences.items()}, same


differences, same_victims = compare([37, 100, 64, 9])
print(f"{DEVICE.type}, {DTYPE}: largest |kernel - PyTorch composition| on 4 sequences of 37, 100, 64 and 9 tokens")
for name, value in differences.items():
    print(f"  {name:22} {value:.2e}")
print(f"  h2o_victims victims equal the argmin of the composition's scores: {same_victims}")
claim("the gather and the block copy equal their PyTorch compositions exactly (a difference of 0)",
      differences["paged_gather"] == 0 and differences["copy_blocks"] == 0)
rounding = 10 * torch.finfo(DTYPE).eps  # ten units of the last place of a number near 1
claim(f"decode and H2O's scores differ from their compositions by rounding only (less than {rounding:.1e} in {DTYPE})",
      differences["paged_decode"] < rounding and differences["h2o_victims (scores)"] < rounding)
claim("the victims are the same", same_victims)
if DEVICE.type == "cuda":
    from triton.testing import do_bench

    big = paged_batch([4096] * 32, BLOCK, KV_HEADS, HEAD_DIM, dtype=DTYPE, device=DEVICE, free_blocks=0)
    q = torch.randn(32, Q_HEADS, HEAD_DIM, device=DEVICE, dtype=DTYPE)
    scores = torch.zeros(32, big.block_tables.shape[1] * BLOCK, device=DEVICE)
    pairs = torch.stack((torch.arange(256), torch.arange(256, 512)), dim=1).to(DEVICE)
    timings = {
        "paged_gather": (lambda: paged_gather(big.k_cache, big.block_tables, big.lengths),
                         lambda: torch_gather(big.k_cache, big.block_tables, big.lengths)),
        "copy_blocks": (lambda: copy_blocks(big.k_cache, big.v_cache, pairs),
                        lambda: (big.k_cache.index_copy_(0, pairs[:, 1], big.k_cache[pairs[:, 0]]),
                                 big.v_cache.index_copy_(0, pairs[:, 1], big.v_cache[pairs[:, 0]]))),
        "paged_decode": (lambda: paged_decode(q, big.k_cache, big.v_cache, big.block_tables, big.lengths),
                         lambda: torch_decode(q, big)),
        "h2o_victims": (lambda: h2o_victims(q, big.k_cache, big.block_tables, big.lengths, scores, 4),
                        lambda: torch_h2o(q, big, scores)),
    }
    print(f"\n{torch.cuda.get_device_name()}: 32 sequences of 4,096 tokens, median ms of triton.testing.do_bench")
    for name, (kernel, composition) in timings.items():
        kernel_ms, composition_ms = do_bench(kernel), do_bench(composition)
        print(f"  {name:14} kernel {kernel_ms:8.3f} ms   PyTorch {composition_ms:8.3f} ms   "
              f"PyTorch / kernel {composition_ms / kernel_ms:5.2f}x")
else:
    print("\nNo timing: the interpreter runs one program after another through numpy, so its times say nothing "
          "about a GPU (bench/bench_kernels.py times the kernels on one).")

# %% [markdown]
# **What the table says.** Read the printed lines and the `check:` lines under them. The gather and the block copy
# only move data, so they equal their PyTorch compositions exactly (a difference of 0). Decode and H2O's scores add
# floating-point numbers in another order than PyTorch does (block by block, with the rescaling of the online
# softmax), so they differ by rounding: a few units of the last place in float32, a few thousandths in float16; and
# the victims are the same. On the CPU nothing was timed; on a GPU the last lines give each ratio, measured in this
# run.
#
# **表格说明了什么。** 请看打印出的几行，以及其下的 `check:` 行。收集和块复制只搬运数据，所以与对应的 PyTorch 组合完全相等（差异为 0）。解码和 H2O 的分数累加浮点数的顺序与 PyTorch 不同（逐块累加，还要按在线 softmax 重新缩放），所以两者只差舍入误差：float32 下是末位的几个单位，float16 下是千分之几；选出的受害者也相同。在 CPU 上没有计时；在 GPU 上，最后几行给出本次运行测得的各个比值。

# %% [markdown]
# ### Experiment 2: the bytes a decode step moves | 实验 2：一个解码步搬运的字节数
#
# A decode step computes little per byte it reads (one multiply-add per cached number and query head), so on any GPU
# its time is about the bytes it moves divided by the memory bandwidth. The cell below counts them for a model
# shaped like Llama-3-8B (8 KV heads, 32 query heads, head dimension 128, float16): the fused kernel reads each
# token's K and V once; the composition's gather reads them, writes a copy padded to the batch's longest sequence,
# and `scaled_dot_product_attention` reads the copy again. H2O's scores alike: the fused kernel reads K twice (its
# two passes) and reads and writes the scores; the composition also writes the attention matrix in float32 and reads
# it back. Contexts from 1k to 64k tokens; in each batch of 8 the lengths are spread evenly between half the context
# and the context. The query heads of a group are assumed to share their KV head's reads (a GPU's L2 cache serves
# the repeats). The last column is the time the fused decode needs at 4.8 TB/s (an H200's peak): a bound, not a
# measurement.
#
# 解码步每读入一个字节只做很少的计算（缓存中的每个数、每个查询头只做一次乘加），所以在任何 GPU 上，它的耗时大约等于搬运的字节数除以显存带宽。下面的单元为一个形状与 Llama-3-8B 相同的模型（8 个 KV 头、32 个查询头、头维度 128、float16）计算这些字节数：融合内核对每个 token 的 K 和 V 只读一次；PyTorch 组合中的收集先读入它们，再写出一份按批次中最长序列填充的副本，`scaled_dot_product_attention` 再把副本读一遍。H2O 的分数也是如此：融合内核读两遍 K（两遍扫描），并读写分数；PyTorch 组合还要以 float32 写出注意力矩阵，再把它读回来。上下文长度从 1k 到 64k 个 token；每个批次有 8 条序列，长度均匀分布在上下文长度的一半到上下文长度之间。这里假设同一组的查询头共享对其 KV 头的读取（重复的读取由 GPU 的 L2 缓存满足）。最后一列是融合解码在 4.8 TB/s（H200 的峰值带宽）下需要的时间：这是一个下界，不是测量值。

# %%
import matplotlib.pyplot as plt

from course.plots import claim, label

KV, QH, D, BYTES, BATCH, PEAK = 8, 32, 128, 2, 8, 4.8e12


def decode_bytes(lengths):
    """(fused kernel, gather + SDPA) bytes of one decode step over sequences of these lengths."""
    token = KV * D * BYTES  # one token's K (or V) in one layer
    padded = len(lengths) * max(lengths)
    fused = 2 * token * sum(lengths)
    return fused, 2 * token * (sum(lengths) + 2 * padded)


def h2o_bytes(lengths):
    """(fused kernel, attention matrix then sum) bytes of one H2O score update.

    The fused kernel reads K in each of its two passes and reads and writes each query head's float32 scores; the
    composition gathers K (read, write the copy), reads the copy for the logits, writes them as a float32 matrix that
    the softmax reads and writes and the sum reads, then updates the scores.
    """
    token, padded = KV * D * BYTES, len(lengths) * max(lengths)
    fused = 2 * token * sum(lengths) + QH * 2 * 4 * sum(lengths)
    matrix = QH * padded * 4
    return fused, token * (sum(lengths) + 2 * padded) + 4 * matrix + 2 * 4 * padded


contexts = [1024 * 2 ** i for i in range(7)]
rows = []
for context in contexts:
    lengths = [context // 2 + (context // 2) * i // (BATCH - 1) for i in range(BATCH)]
    rows.append((context, *decode_bytes(lengths), *h2o_bytes(lengths)))
print(f"one layer, batch of {BATCH}, lengths spread from context/2 to context; MB = 10^6 bytes")
print(f"{'context':>8} {'decode fused':>13} {'gather+SDPA':>12} {'ratio':>6} {'H2O fused':>10} {'matrix+sum':>11} "
      f"{'ratio':>6} {'fused decode at 4.8 TB/s':>25}")
for context, fused, composed, h2o_fused, h2o_composed in rows:
    print(f"{context:>8,} {fused / 1e6:>11.1f}MB {composed / 1e6:>10.1f}MB {composed / fused:>6.2f} "
          f"{h2o_fused / 1e6:>8.1f}MB {h2o_composed / 1e6:>9.1f}MB {h2o_composed / h2o_fused:>6.2f} "
          f"{fused / PEAK * 1e6:>22.2f} us")
equal_fused, equal_composed = decode_bytes([contexts[-1]] * BATCH)
print(f"{BATCH} sequences of {contexts[-1]:,} tokens each: gather+SDPA / fused decode = {equal_composed / equal_fused:.2f}")
decode_ratios = [composed / fused for _, fused, composed, _, _ in rows]
h2o_ratios = [h2o_composed / h2o_fused for _, _, _, h2o_fused, h2o_composed in rows]
claim("with equal lengths, gather + SDPA moves 3 times the fused decode's bytes", equal_composed == 3 * equal_fused)
claim("with lengths from half the context to the context, it moves more than 3 times", min(decode_ratios) > 3)
claim("H2O's composition moves almost twice the fused kernel's bytes (1.5 to 2 times)",
      all(1.5 < ratio < 2 for ratio in h2o_ratios))
claim("the ratios do not depend on the context (each varies by less than 1%)",
      all(max(ratios) < 1.01 * min(ratios) for ratios in (decode_ratios, h2o_ratios)))
fig, axis = plt.subplots(figsize=(6.5, 3.6))
axis.plot(contexts, [row[1] / 1e6 for row in rows], marker="o", label=label("decode, fused kernel", "解码，融合内核"))
axis.plot(contexts, [row[2] / 1e6 for row in rows], marker="o", label=label("decode, gather + SDPA", "解码，收集 + SDPA"))
axis.plot(contexts, [row[3] / 1e6 for row in rows], marker="s", label=label("H2O, fused kernel", "H2O，融合内核"))
axis.plot(contexts, [row[4] / 1e6 for row in rows], marker="s",
          label=label("H2O, attention matrix + sum", "H2O，注意力矩阵 + 求和"))
axis.set_xscale("log", base=2)
axis.set_yscale("log")
axis.set_xlabel(label("context length (tokens)", "上下文长度（token）"))
axis.set_ylabel(label("MB moved per layer and step", "每层每步搬运的 MB"))
axis.legend(fontsize=7)
plt.tight_layout()
plt.show()

# %% [markdown]
# **What the count says.** Read the printed ratios and the `check:` lines. The gather and SDPA composition moves 3
# times the fused kernel's bytes when every sequence has the same length (the line under the table: the copy is
# written, then read once more), and more when lengths differ, because the copy is padded to the longest sequence:
# with lengths from half the context to the context, the first ratio column of the table. H2O's composition moves
# almost twice the fused kernel's bytes: the float32 attention matrix of 32 query heads is written and read several
# times. The ratios do not depend on the context, since every term grows in proportion to it. The last column is what
# one layer's fused decode costs at the H200's peak bandwidth; a 32-layer model pays it 32 times per generated token.
# That is why engines write these kernels, and why KV-cache eviction (notebooks 03–08) is a matter of bytes.
#
# **计数说明了什么。** 请看打印出的比值和 `check:` 行。所有序列长度相同时，收集加 SDPA 的组合搬运的字节数是融合内核的 3 倍（见表格下方的一行：副本要写一次、再读一次）；长度不同时还要更多，因为副本按最长的序列填充：长度分布在上下文长度的一半到上下文长度之间时，比值见表格中的第一个 ratio 列。H2O 的组合搬运的字节数接近融合内核的两倍：32 个查询头的 float32 注意力矩阵要被写入、读出好几次。这些比值与上下文长度无关，因为每一项都与上下文长度成正比地增长。最后一列是一层的融合解码在 H200 峰值带宽下的耗时；一个 32 层的模型每生成一个 token，就要付出 32 次这样的代价。这就是推理引擎要编写这些内核的原因，也是 KV 缓存驱逐（notebook 03–08）归根结底关乎字节数的原因。

# %% [markdown]
# ## Summary | 小结
#
# **Remember:** a KV-cache kernel is a grid of programs that read the pool through the block table with pointers,
# strides and masks; the online softmax lets one pass over the blocks replace the copy and the attention matrix, and
# the bytes it no longer moves are its speed.
#
# **一句话记住：** KV 缓存的内核是一个程序实例网格，每个程序实例用指针、步长和掩码，经由块表读取池；在线 softmax 让一遍扫描就取代了副本和注意力矩阵，省下的字节就是它的速度。
#
# ## Prerequisites and further reading | 前置与相关阅读
#
# Before: notebook 02 (the paged pool, block tables, `gather_kv`, `copy_block`, `paged_attention`), notebook 07
# (H2O's accumulated attention). Further: Triton's tutorials (vector addition, fused softmax, fused attention);
# vLLM's Triton attention backend (`triton_unified_attention`) and SGLang's Triton decode attention, which split long
# contexts over several programs and merge them (FlashDecoding); FlashAttention-2 and FlashInfer for the same ideas in
# CUDA. The interpreter also finds out-of-bounds accesses when a pool is surrounded by guard blocks, as in the tests.
#
# 之前：notebook 02（分页池、块表、`gather_kv`、`copy_block`、`paged_attention`）、notebook 07（H2O 的累积注意力）。延伸：Triton 的教程（向量加法、融合 softmax、融合注意力）；vLLM 的 Triton 注意力后端（`triton_unified_attention`）和 SGLang 的 Triton 解码注意力，它们把长上下文拆给多个程序实例处理，再合并结果（FlashDecoding）；FlashAttention-2 和 FlashInfer 用 CUDA 实现了同样的思想。像本 notebook 的测试那样在池的周围放上保护块，解释器也能帮你找出越界访问。
#
# ## References | 参考文献
#
# - Tillet, P., Kung, H. T., Cox, D. "Triton: An Intermediate Language and Compiler for Tiled Neural Network Computations." MAPL 2019.
# - Milakov, M., Gimelshein, N. "Online normalizer calculation for softmax." arXiv:1805.02867, 2018.
# - Dao, T., Fu, D. Y., Ermon, S., Rudra, A., Ré, C. "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness." NeurIPS 2022.
# - Kwon, W., et al. "Efficient Memory Management for Large Language Model Serving with PagedAttention." SOSP 2023 (vLLM).
# - Ainslie, J., et al. "GQA: Training Generalized Multi-Query Transformer Models from Multi-Head Checkpoints." EMNLP 2023.
# - Zhang, Z., et al. "H2O: Heavy-Hitter Oracle for Efficient Generative Inference of Large Language Models." NeurIPS 2023.
# - The seed designs: the "KV Eviction formula-to-code" walkthrough (LLM-REVIEW) and the "KV Cache Scheduling" chapter of Datawhale's llm-algo-leetcode (text CC BY 4.0, code Apache-2.0).
