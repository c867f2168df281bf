"""Notebook 09's Triton kernels against their PyTorch compositions: ratios and bandwidth on a GPU.

    python bench/bench_kernels.py [--contexts 1024 4096 16384 65536] [--batches 1 8 64] [--bandwidth-gbs 4800]

The kernels are the reference solutions of source/09_triton_kernels, loaded with
grading.authoring.harness.NotebookHarness (the solutions live only in the notebook). The model is shaped like
Llama-3-8B: 8 KV heads, 32 query heads, head dimension 128, float16, blocks of 16 tokens; every
sequence of a batch has the context's length. For each context length and batch size it times, with
triton.testing.do_bench (median of many runs, in one process), each kernel and its PyTorch
composition:

- paged_gather (keys) against advanced indexing of the block table, zeroed past each length;
- copy_blocks (1024 pairs, or half the pool) against index_copy_ on both pools;
- paged_decode against paged_gather-style indexing then scaled_dot_product_attention (enable_gqa);
- h2o_victims against the attention matrix, a softmax and a sum over the heads, then an argmin.

It prints both times, the ratio PyTorch / kernel, and each kernel's achieved bandwidth (the bytes it
must move, divided by its time) as a share of the device's peak (from the device's memory clock and
bus width, or --bandwidth-gbs). Batches whose tensors would not fit in the free memory are skipped.

Without a CUDA device the kernels run in Triton's interpreter, whose timings mean nothing (each
program runs after the previous one, every vector operation a numpy call): it says so, and only checks
that each kernel equals its composition on a small batch.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("COURSE_AUTOGRADE", "1")  # no installs or progress bars from the setup cell

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from course.kernels import paged_batch  # noqa: E402
from grading.authoring.harness import NotebookHarness  # noqa: E402

NOTEBOOK = ROOT / "source" / "09_triton_kernels" / "09_triton_kernels.ipynb"
BLOCK = 16
GPU_SHAPE = {"kv_heads": 8, "q_heads": 32, "head_dim": 128}  # Llama-3-8B's attention
CPU_SHAPE = {"kv_heads": 2, "q_heads": 4, "head_dim": 16}  # small enough for the interpreter
KERNELS: dict = {}  # the notebook's launchers by name, loaded by main


def torch_gather(cache, block_tables, lengths, zero_past_length=True):
    """Advanced indexing of every table entry (padding clamped): [S, T, H, D], zeroed past each length in place."""
    rows = cache[block_tables.clamp(min=0).long()].flatten(1, 2)
    if zero_past_length:
        rows[torch.arange(rows.shape[1], device=rows.device)[None, :] >= lengths[:, None]] = 0
    return rows


def torch_decode(q, batch):
    """The gather of K and V, then scaled_dot_product_attention with a mask of each length."""
    keys, values = (torch_gather(cache, batch.block_tables, batch.lengths, False).transpose(1, 2)
                    for cache in (batch.k_cache, batch.v_cache))
    mask = torch.arange(keys.shape[2], device=q.device)[None, :] < batch.lengths[:, None]
    return F.scaled_dot_product_attention(q[:, :, None], keys, values, attn_mask=mask[:, None, None],
                                          enable_gqa=True)[:, :, 0]


def torch_h2o(q, batch, scores, recent):
    """The attention matrix per query head (grouped, without copying K per head), summed, then the argmin."""
    keys = torch_gather(batch.k_cache, batch.block_tables, batch.lengths, False).transpose(1, 2)  # [S, Hkv, T, D]
    grouped = q.reshape(q.shape[0], keys.shape[1], -1, q.shape[2])  # [S, Hkv, G, D]
    logits = torch.einsum("skgd,sktd->skgt", grouped.float(), keys.float()) / math.sqrt(q.shape[2])
    positions = torch.arange(keys.shape[2], device=q.device)[None, :]
    logits = logits.masked_fill(~(positions < batch.lengths[:, None])[:, None, None], float("-inf"))
    scores += torch.softmax(logits, dim=-1).sum(dim=(1, 2))
    evictable = positions < (batch.lengths.long() - recent)[:, None]
    return torch.where(evictable, scores, torch.full_like(scores, float("inf"))).argmin(dim=1)


def load_kernels() -> None:
    """Put the notebook's four launchers in KERNELS."""
    base = NotebookHarness(NOTEBOOK).base
    KERNELS.update({name: base[name] for name in ("paged_gather", "copy_blocks", "paged_decode", "h2o_victims")})


def make_batch(lengths: list[int], shape: dict, device: torch.device, dtype: torch.dtype, seed: int = 0):
    """Sequences of these lengths, their queries and block pairs to copy (1024, or half the pool)."""
    batch = paged_batch(lengths, BLOCK, shape["kv_heads"], shape["head_dim"], dtype=dtype, device=device, seed=seed,
                        free_blocks=0, share_first_block=False)
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(len(lengths), shape["q_heads"], shape["head_dim"], generator=generator).to(device=device,
                                                                                               dtype=dtype)
    count = min(1024, batch.k_cache.shape[0] // 2)
    pairs = torch.stack((torch.arange(count), torch.arange(count, 2 * count)), dim=1).to(device)
    return batch, q, pairs


def cases(batch, q, pairs, recent: int = 4) -> dict:
    """{name: (kernel call, composition call, bytes the kernel must move)} for one batch.

    The calls of h2o_victims and of its composition each update scores of their own; the block copies
    change the pools, which the other cases then read (their data does not matter to the timing).
    """
    token_bytes = batch.k_cache.shape[2] * batch.k_cache.shape[3] * batch.k_cache.element_size()
    tokens, padded = int(batch.lengths.long().sum()), batch.block_tables.numel() * BLOCK
    width = batch.block_tables.shape[1] * BLOCK
    kernel_scores = torch.zeros(len(batch.lengths), width, device=q.device)
    torch_scores = kernel_scores.clone()
    paged = (batch.block_tables, batch.lengths)
    return {
        "paged_gather": (lambda: KERNELS["paged_gather"](batch.k_cache, *paged),
                         lambda: torch_gather(batch.k_cache, *paged), token_bytes * (2 * tokens + padded)),
        "copy_blocks": (lambda: KERNELS["copy_blocks"](batch.k_cache, batch.v_cache, pairs),
                        lambda: (batch.k_cache.index_copy_(0, pairs[:, 1], batch.k_cache[pairs[:, 0]]),
                                 batch.v_cache.index_copy_(0, pairs[:, 1], batch.v_cache[pairs[:, 0]])),
                        4 * BLOCK * token_bytes * len(pairs)),
        "paged_decode": (lambda: KERNELS["paged_decode"](q, batch.k_cache, batch.v_cache, *paged),
                         lambda: torch_decode(q, batch), 2 * token_bytes * tokens),
        "h2o_victims": (lambda: (KERNELS["h2o_victims"](q, batch.k_cache, *paged, kernel_scores, recent),
                                 kernel_scores),
                        lambda: (torch_h2o(q, batch, torch_scores, recent), torch_scores),
                        2 * token_bytes * tokens + q.shape[1] * 2 * 4 * tokens),
    }


def peak_bandwidth(device: torch.device, given_gbs: float | None) -> float:
    """The device's peak memory bandwidth in bytes per second: given, or from its clock and bus width."""
    if given_gbs:
        return given_gbs * 1e9
    props = torch.cuda.get_device_properties(device)
    clock_khz, bus_bits = getattr(props, "memory_clock_rate", 0), getattr(props, "memory_bus_width", 0)
    if not clock_khz or not bus_bits:
        raise SystemExit("this torch does not report the memory clock and bus width: pass --bandwidth-gbs")
    return 2 * clock_khz * 1e3 * bus_bits / 8  # double data rate


def fits(num_seqs: int, context: int) -> bool:
    """Whether the pools, the gathered copies and the float32 attention matrix fit in free device memory."""
    pool = 2 * num_seqs * context * GPU_SHAPE["kv_heads"] * GPU_SHAPE["head_dim"] * 2
    matrix = num_seqs * GPU_SHAPE["q_heads"] * context * 4
    return 2.5 * pool + 3 * matrix < 0.8 * torch.cuda.mem_get_info()[0]


def bench_gpu(args) -> None:
    """Time every kernel and its composition for every context length and batch size; print ratios and bandwidth."""
    from triton.testing import do_bench

    device = torch.device("cuda")
    peak = peak_bandwidth(device, args.bandwidth_gbs)
    print(f"{torch.cuda.get_device_name(device)}, torch {torch.__version__}, peak {peak / 1e9:,.0f} GB/s; "
          f"{GPU_SHAPE}, float16, blocks of {BLOCK}")
    print(f"{'context':>8} {'batch':>5}  {'kernel':<13} {'kernel ms':>10} {'PyTorch ms':>11} {'PyTorch/kernel':>15} "
          f"{'GB/s':>7} {'of peak':>8}")
    for context in args.contexts:
        for num_seqs in args.batches:
            if not fits(num_seqs, context):
                print(f"{context:>8,} {num_seqs:>5}  skipped: would not fit in free memory")
                continue
            batch, q, pairs = make_batch([context] * num_seqs, GPU_SHAPE, device, torch.float16)
            for name, (kernel, composition, moved) in cases(batch, q, pairs).items():
                try:
                    kernel_ms, composition_ms = do_bench(kernel), do_bench(composition)
                except torch.cuda.OutOfMemoryError:
                    print(f"{context:>8,} {num_seqs:>5}  {name:<13} skipped: out of memory")
                    torch.cuda.empty_cache()
                    continue
                rate = moved / (kernel_ms / 1e3)
                print(f"{context:>8,} {num_seqs:>5}  {name:<13} {kernel_ms:>10.3f} {composition_ms:>11.3f} "
                      f"{composition_ms / kernel_ms:>14.2f}x {rate / 1e9:>7.0f} {rate / peak:>7.0%}")
            del batch, q, pairs
            torch.cuda.empty_cache()


def largest_difference(first, second) -> float:
    """The largest absolute difference between two results (tensors, or tuples of them)."""
    pairs = zip(first, second) if isinstance(first, tuple) else [(first, second)]
    return max(float((a.double() - b.double()).abs().max()) for a, b in pairs)


def check_cpu() -> int:
    """Each kernel against its composition on a small batch, in the interpreter; return 1 when one differs."""
    print("No CUDA device: the kernels run in Triton's interpreter, whose timings mean nothing (one program after "
          "another, every vector operation a numpy call). Checking correctness only, on 3 sequences of 40, 17 and "
          f"33 tokens, {CPU_SHAPE}, float32.")
    batch, q, pairs = make_batch([40, 17, 33], CPU_SHAPE, torch.device("cpu"), torch.float32)
    failures = 0
    for name, (kernel, composition, _) in cases(batch, q, pairs[:2]).items():
        if name == "copy_blocks":  # compare the pools after each copy, from the same start
            start = (batch.k_cache.clone(), batch.v_cache.clone())
            composition()
            want = (batch.k_cache.clone(), batch.v_cache.clone())
            batch.k_cache.copy_(start[0])
            batch.v_cache.copy_(start[1])
            kernel()
            got = (batch.k_cache, batch.v_cache)
        else:
            got, want = kernel(), composition()
        difference = largest_difference(got, want)
        failures += difference > 1e-4
        print(f"  {name:<13} largest difference from the PyTorch composition {difference:.2e}  "
              f"{'ok' if difference <= 1e-4 else 'WRONG'}")
    return int(failures > 0)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contexts", type=int, nargs="+", default=[1024, 4096, 16384, 65536])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--bandwidth-gbs", type=float, default=None,
                        help="peak memory bandwidth in GB/s (default: from the device; H200: 4800)")
    args = parser.parse_args(argv)
    load_kernels()
    if not torch.cuda.is_available():
        return check_cpu()
    bench_gpu(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
