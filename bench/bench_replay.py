"""Benchmark the replay engine on one trace, in one run, and print a table.

Usage: .venv/bin/python bench/bench_replay.py [--trace PATH] [--capacity N]

Reports block references per second for the built-in LRU, LFU, FIFO and Belady, and for
libCacheSim driven the way a Python user drives it (one ``get`` per block in a Python loop), with
hit counts side by side; then the one-pass LRU curve against 20 separate LRU replays. Each time is
the best of a few repeats, because a shared machine is noisy.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

# The repository root goes on the path so that the script runs from any directory.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from course import replay as R  # noqa: E402
from course import traces  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = REPO.parent / "shared" / "traces" / "mooncake_synthetic_trace.jsonl"


def best_time(function, repeats: int):
    """Return (best wall seconds, best CPU seconds, last result) over ``repeats`` calls.

    CPU time (this process only) is printed too: on a loaded machine it stays close to what an
    idle core would take, while wall time also counts waiting for the CPU.
    """
    best_wall, best_cpu, result = float("inf"), float("inf"), None
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        result = function()
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
    return best_wall, max(best_cpu, 1e-9), result


def load_trace(path: str | None) -> list:
    """Return the Mooncake-format trace at ``path``; without one, the shared trace when this machine has it, or else
    Mooncake's published one (or its stand-in). A trace that was named and is missing is an error, not a fallback."""
    if path is None and not DEFAULT_TRACE.exists():
        trace, description = traces.mooncake_or_synthetic()
        print(f"trace: {DEFAULT_TRACE} not found; using {description}")
        return trace
    path = path or str(DEFAULT_TRACE)
    if not Path(path).is_file():
        sys.exit(f"bench_replay: no trace file at {path}")
    try:
        trace = traces.load_mooncake(path)
    except ValueError as error:
        sys.exit(f"bench_replay: {error}")
    print(f"trace: {Path(path).resolve()} ({len(trace)} requests)")
    return trace


def policy_table(trace: list, capacity: int, references: int) -> None:
    """Time every policy at ``capacity`` and print references per second and hits, ours next to libCacheSim's."""
    rows = []
    for label, policy, repeats in (
        ("ours LRU", "lru", 5), ("ours LFU", "lfu", 3), ("ours FIFO", "fifo", 3),
        ("ours Belady", "belady", 3),
        ("libCacheSim LRU (Python loop)", "lcs:LRU", 1),
        ("libCacheSim FIFO (Python loop)", "lcs:FIFO", 1),
        ("libCacheSim Belady (Python loop)", "lcs:Belady", 1),
    ):
        wall, cpu, result = best_time(
            lambda policy=policy: R.replay(trace, capacity, policy, progress=False), repeats)
        rows.append((label, policy, wall, cpu, result))

    hits = {policy: result.hits for _, policy, _, _, result in rows}
    print(f"{'policy':34} {'refs/s wall':>12} {'refs/s CPU':>12} {'hits':>8} {'hit ratio':>9}"
          "  vs libCacheSim")
    for label, policy, wall, cpu, result in rows:
        twin = {"lru": "lcs:LRU", "fifo": "lcs:FIFO", "belady": "lcs:Belady"}.get(policy)
        check = "" if twin is None else ("same" if hits[twin] == result.hits else "DIFFERENT")
        print(f"{label:34} {references / wall:12,.0f} {references / cpu:12,.0f} "
              f"{result.hits:8d} {result.hit_ratio:9.4f}  {check}")


def curve_against_replays(trace: list, distinct: int) -> None:
    """Time the one-pass LRU curve at 20 capacities against 20 separate LRU replays; print both."""
    capacities = sorted({int(c) for c in np.geomspace(max(1, distinct // 200), distinct, 20)})
    curve_seconds, curve_cpu, curve = best_time(
        lambda: R.lru_hit_ratio_curve(trace, capacities), 3)
    separate_seconds, separate_cpu, separate = best_time(
        lambda: {c: R.replay(trace, c, "lru", progress=False) for c in capacities}, 1)
    equal = all(
        (curve[c].hits, curve[c].prefix_hit_blocks)
        == (separate[c].hits, separate[c].prefix_hit_blocks)
        for c in capacities
    )
    print(f"\nLRU curve at {len(capacities)} capacities "
          f"({capacities[0]}..{capacities[-1]} blocks):")
    print(f"  one pass (stack distances): {curve_seconds * 1000:8.1f} ms wall "
          f"{curve_cpu * 1000:8.1f} ms CPU")
    print(f"  {len(capacities)} separate replays:        {separate_seconds * 1000:8.1f} ms wall "
          f"{separate_cpu * 1000:8.1f} ms CPU")
    print(f"  speed-up: {separate_seconds / curve_seconds:.1f}x wall, "
          f"{separate_cpu / curve_cpu:.1f}x CPU; hits and prefix hits "
          f"{'identical' if equal else 'DIFFERENT'}")


def main() -> None:
    """Parse the arguments, run every measurement once, and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default=None,
                        help=f"Mooncake-format JSONL trace (default: {DEFAULT_TRACE}, or the published one)")
    parser.add_argument("--capacity", type=int, default=None,
                        help="cache capacity in blocks (default: 20%% of the distinct blocks)")
    args = parser.parse_args()

    if args.capacity is not None and args.capacity < 1:
        parser.error(f"--capacity must be at least 1 block, got {args.capacity}")
    trace = load_trace(args.trace)
    try:
        flat = traces.flatten(trace)
    except ValueError as error:
        sys.exit(f"bench_replay: {error}")
    references, distinct = flat.shape[0], np.unique(flat).shape[0]
    if references == 0:
        sys.exit("bench_replay: the trace has no block reference (no request has a hash id)")
    if int(flat.min()) < 0:
        sys.exit("bench_replay: the trace has negative hash ids, which libCacheSim's rows cannot take")
    capacity = args.capacity if args.capacity is not None else max(1, distinct // 5)
    print(f"{references} block references, {distinct} distinct blocks, "
          f"capacity {capacity} blocks\n")
    policy_table(trace, capacity, references)
    curve_against_replays(trace, distinct)


if __name__ == "__main__":
    main()
