"""Throughput of notebook 05's heap simulator vs its tensor scheduler, 10^2 ... 10^6 live entries.

    python bench/bench_scheduler.py [--sizes 100 1000 ...] [--device cpu|cuda] [--budget 0.5]

The classes are the reference solutions of source/05_scheduler_sim, loaded with
grading.authoring.harness.NotebookHarness (the solutions live only in the notebook). For every size n the
cache is filled with n live one-byte entries (capacity n bytes) directly, in bulk, and then
timed on requests for new prefixes: each is a miss that evicts exactly one entry, so n stays
constant. Two comparisons, each measured in this one run:

- frozen scores: KVCacheSchedulerSim (lazy-deletion heap, O(log n) per eviction) against
  TensorKVCacheScheduler(rescore=False) (a few whole-tensor operations, O(n) work);
- rescored scores: the heap simulator rescoring every entry in Python and rebuilding its heap
  before each eviction (O(n) interpreted work) against TensorKVCacheScheduler(rescore=True).

It prints evictions per second, the ratio tensor / heap, and the crossover: the smallest size
at which the tensor scheduler is at least as fast. Nothing here is a test; the numbers depend on
the machine. About 1 minute on 2 CPU cores with the default sizes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # rescoring_sim, the heap simulator the property test checks against
os.environ.setdefault("COURSE_AUTOGRADE", "1")  # no progress bars or installs from the setup cell

import torch  # noqa: E402
from rescoring_sim import make_rescoring_sim  # noqa: E402

from grading.authoring.harness import NotebookHarness  # noqa: E402

NOTEBOOK = ROOT / "source" / "05_scheduler_sim" / "05_scheduler_sim.ipynb"


def load_classes() -> tuple[type, type, type]:
    """Return CacheEntry, KVCacheSchedulerSim and TensorKVCacheScheduler from the notebook."""
    base = NotebookHarness(NOTEBOOK).base
    return base["CacheEntry"], base["KVCacheSchedulerSim"], base["TensorKVCacheScheduler"]


CacheEntry, KVCacheSchedulerSim, TensorKVCacheScheduler = load_classes()
RescoringSim = make_rescoring_sim(KVCacheSchedulerSim)


def full_heap(cls: type, n: int):
    """A heap simulator holding n one-byte entries p0..p{n-1}, touched at times 1..n."""
    sim = cls(n)
    priority = sim._score(1, 1, 0)  # recency 1 at the touch (time 0 == last_used 0)
    sim.entries = {f"p{i}": CacheEntry(priority, i + 1, f"p{i}", 1, 1) for i in range(n)}
    sim.queue = [(priority, i + 1, f"p{i}") for i in range(n)]  # sorted, hence a heap
    sim.time = sim.current_bytes = n
    return sim


def full_tensor(n: int, device: torch.device, rescore: bool):
    """A tensor scheduler in the same state as full_heap(n), filled in bulk."""
    sched = TensorKVCacheScheduler(n, n, device=device, rescore=rescore)
    names = [f"p{i}" for i in range(n)]
    sched.slots = dict(zip(names, range(n)))
    sched.prefix_of = names
    sched.hits.fill_(1)
    sched.bytes.fill_(1)
    sched.last_used.copy_(torch.arange(1, n + 1, device=device))
    sched.priority.fill_(1 + 0.5 * 1.0 - 0.25 * 1 / n)
    sched.alive.fill_(True)
    sched.time = sched.current_bytes = n
    return sched


def evictions_per_second(scheduler, budget_s: float, min_ops: int = 3) -> float:
    """Touch new one-byte prefixes into the full cache for budget_s seconds (at least min_ops)."""
    ops = 0
    started = time.perf_counter()
    while ops < min_ops or time.perf_counter() - started < budget_s:
        scheduler.touch(f"new{ops}", 1)
        ops += 1
    if isinstance(scheduler, TensorKVCacheScheduler) and scheduler.device.type == "cuda":
        torch.cuda.synchronize()
    return ops / (time.perf_counter() - started)


def crossover(sizes: list[int], ratios: list[float]) -> str:
    """Return the first size from which the ratio stays >= 1, as text."""
    for index, size in enumerate(sizes):
        if all(r >= 1.0 for r in ratios[index:]):
            return f"n = {size:,}" if index else f"n <= {size:,} (the smallest size measured)"
    return f"none up to n = {sizes[-1]:,} (the heap is faster at every size measured)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**2, 10**3, 10**4, 10**5, 10**6])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--budget", type=float, default=0.5, help="seconds of timing per measurement")
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads for torch (default 1: the heap runs on one core too, and "
                             "intra-op threads stall on a busy shared machine)")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    print(f"notebook 05 scheduler throughput: evictions per second, tensor on {device}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} of {os.cpu_count()} CPU cores for torch")
    header = (f"{'live entries':>12} | {'frozen heap':>12} {'frozen tensor':>13} {'ratio':>7} | "
              f"{'rescored heap':>13} {'rescored tensor':>15} {'ratio':>7}")
    print(header)
    print("-" * len(header))
    # The two sides of each comparison make the same decisions (checked on the smallest size).
    n = args.sizes[0]
    for heap, tensor in ((full_heap(KVCacheSchedulerSim, n), full_tensor(n, device, rescore=False)),
                         (full_heap(RescoringSim, n), full_tensor(n, device, rescore=True))):
        requests = [(f"new{i}", 1) for i in range(2 * n)] + [(f"new{i}", 1) for i in range(0, 2 * n, 3)]
        if heap.schedule(requests) != tensor.schedule(requests):
            raise AssertionError(f"heap and tensor schedulers disagree at n = {n}")
    ratios: dict[str, list[float]] = {"frozen": [], "rescored": []}
    for n in args.sizes:
        frozen = (evictions_per_second(full_heap(KVCacheSchedulerSim, n), args.budget),
                  evictions_per_second(full_tensor(n, device, rescore=False), args.budget))
        rescored = (evictions_per_second(full_heap(RescoringSim, n), args.budget),
                    evictions_per_second(full_tensor(n, device, rescore=True), args.budget))
        ratios["frozen"].append(frozen[1] / frozen[0])
        ratios["rescored"].append(rescored[1] / rescored[0])
        print(f"{n:>12,} | {frozen[0]:>12,.0f} {frozen[1]:>13,.0f} {ratios['frozen'][-1]:>7.3g} | "
              f"{rescored[0]:>13,.1f} {rescored[1]:>15,.0f} {ratios['rescored'][-1]:>7.3g}", flush=True)
    print(f"crossover, frozen scores (tensor >= heap):   {crossover(args.sizes, ratios['frozen'])}")
    print(f"crossover, rescored scores (tensor >= heap): {crossover(args.sizes, ratios['rescored'])}")
    print(f"total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
