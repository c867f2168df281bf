"""Victim selection: notebook 03's tensor version against its dict version, measured in one run.

    python bench/bench_victim.py [--sizes 1000 100000 1000000] [--device cpu|cuda]

The functions are the reference solutions of source/03_lru_lfu (LRUPolicy / LFUPolicy over a dict
of SequenceKVCache, lru_victim_t / lfu_victim_t over int64 columns), loaded with
grading.authoring.harness.NotebookHarness. For each number of sequences n it times one victim choice of
each kind (best of several repeats), checks that both pick the same sequence, and prints the speed
ratio. On CUDA it also prints microseconds per eviction against the memory-bandwidth bound of
reading the key columns once (the device's peak bandwidth is given with --bandwidth-gbs). Torch
uses one CPU thread unless --threads says otherwise.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("COURSE_AUTOGRADE", "1")

import torch  # noqa: E402

from grading.authoring.harness import NotebookHarness  # noqa: E402

NOTEBOOK = ROOT / "source" / "03_lru_lfu" / "03_lru_lfu.ipynb"


def best_time(function, repeats: int, synchronize=None) -> tuple[float, object]:
    """Return the fastest of ``repeats`` calls (seconds) and the last result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = function()
        if synchronize:
            synchronize()
        best = min(best, time.perf_counter() - started)
    return best, result


def measure(n: int, names: dict, device: torch.device, bandwidth_gbs: float) -> None:
    """Time one LRU and one LFU victim choice among ``n`` random sequences, dict against tensor; print both."""
    sequence_class, lru, lfu = names["SequenceKVCache"], names["LRUPolicy"](), names["LFUPolicy"]()
    lru_t, lfu_t = names["lru_victim_t"], names["lfu_victim_t"]
    sync = torch.cuda.synchronize if device.type == "cuda" else None
    rng = random.Random(n)
    ids = [f"seq{i:08d}" for i in range(n)]
    steps = [rng.randrange(10 * n) for _ in range(n)]
    counts = [rng.randrange(1, 50) for _ in range(n)]
    sequences = {seq_id: sequence_class(seq_id, [], 16, step, count)
                 for seq_id, step, count in zip(ids, steps, counts)}
    step_t = torch.tensor(steps, dtype=torch.int64, device=device)
    count_t = torch.tensor(counts, dtype=torch.int64, device=device)
    evictable = torch.ones(n, dtype=torch.bool, device=device)
    repeats = 3 if n >= 1_000_000 else 10
    for name, policy, tensor_call in (
        ("LRU", lru, lambda: lru_t(step_t, evictable)),
        ("LFU", lfu, lambda: lfu_t(count_t, step_t, evictable)),
    ):
        dict_s, dict_victim = best_time(lambda policy=policy: policy.select_victim(sequences), repeats)
        tensor_call()  # warm-up
        tensor_s, index = best_time(tensor_call, repeats * 3, sync)
        same = ids[index] == dict_victim
        print(f"{n:>10,}  {name:>6}  {dict_s * 1e3:>8.2f}ms  {tensor_s * 1e3:>8.3f}ms  "
              f"{dict_s / tensor_s:>14.0f}x  {same}")
        if device.type == "cuda":
            bytes_read = n * (8 if name == "LRU" else 16) + n
            bound_us = bytes_read / (bandwidth_gbs * 1e9) * 1e6
            print(f"{'':>10}  {'':>6}  {tensor_s * 1e6:.1f} us per eviction; reading the keys once takes "
                  f"{bound_us:.2f} us at {bandwidth_gbs:g} GB/s")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 100_000, 1_000_000])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (1 by default: extra threads stall on a shared machine)")
    parser.add_argument("--bandwidth-gbs", type=float, default=4800.0, help="peak memory bandwidth (H200: 4800)")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    names = NotebookHarness(NOTEBOOK).base
    print(f"victim selection, dict (notebook 03 LRUPolicy/LFUPolicy) vs tensor (lru_victim_t/lfu_victim_t) on {device}")
    print(f"{'sequences':>10}  {'policy':>6}  {'dict':>10}  {'tensor':>10}  {'tensor speed-up':>15}  same victim")
    for n in args.sizes:
        measure(n, names, device, args.bandwidth_gbs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
