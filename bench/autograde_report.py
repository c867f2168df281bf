"""What bench/bench_autograde.py prints and draws from its runs: the figures the README's grading rows need.

`report` prints, in order: nbgrader's own route; the grading command before and now (machine-seconds
per student and per run, the target as a ratio); where a student's machine-seconds go, by component
and per notebook, the judge's share included; ``--jobs 2`` against ``--jobs 1``; the 500-student
projection from those figures; and the README's rows, ready to paste. `plot` draws machine-seconds
per student by component.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from grading.config import ASSIGNMENTS

COMPONENTS = ("warm process", "kernel start", "cells", "judge", "nbgrader's steps", "feedback", "the rest")
# The grading command's report of each notebook (grading/pipeline/worker.py), by component.
_KEYS = {"warm process cpu": "warm process", "kernel start cpu": "kernel start", "cells cpu": "cells",
         "judge cpu": "judge", "nbgrader cpu": "nbgrader's steps", "feedback cpu": "feedback"}
# The grading command's runs, in the order they are printed and drawn, and their labels in the plot.
RUNS = {"before": "grading command\nbefore", "no judge": "now, test cells\nin the kernel (no judge)",
        "now": "grading command\nnow"}
_PLACES = (("one 32-core server, `--jobs 32`", 32, 0.0), ("20 nodes of 32 cores, `--array=1-20`", 640, None))


def scaling(one: dict, many: dict) -> tuple[float, float]:
    """Machine-seconds per student (the slope between the two runs) and per run (the intercept)."""
    slope = (many["machine-s"] - one["machine-s"]) / (many["students"] - one["students"])
    return slope, one["machine-s"] - slope * one["students"]


def breakdown(run: dict, slope: float, cold_start: float | None) -> dict:
    """Machine-seconds per student by component (`COMPONENTS`), from the grading command's own report."""
    totals = dict.fromkeys(COMPONENTS, 0.0)
    for record in run["records"].values():
        for result in record["assignments"].values():
            for key, component in _KEYS.items():
                totals[component] += result["seconds"].get(key, 0.0) / run["students"]
    if cold_start is not None:  # Before: every notebook started a kernel from scratch.
        totals["kernel start"] = cold_start * len(ASSIGNMENTS)
    totals["the rest"] = slope - sum(value for key, value in totals.items() if key != "the rest")
    return totals


def _reports(run: dict, key: str) -> bool:
    """Whether the grading command of ``run`` reported ``key`` for any notebook."""
    return any(key in result["seconds"] for record in run["records"].values()
               for result in record["assignments"].values())


def per_notebook(run: dict) -> dict[str, dict[str, float]]:
    """Machine-seconds per notebook (mean over students) of each component the grading command reports."""
    table: dict[str, dict[str, float]] = {}
    for record in run["records"].values():
        for assignment, result in record["assignments"].items():
            row = table.setdefault(assignment, dict.fromkeys(_KEYS, 0.0))
            for key in _KEYS:
                row[key] += result["seconds"].get(key, 0.0) / run["students"]
    return table


def report(found: dict, students: int, how: str) -> dict:
    """Print the figures; return the summary that --json writes and --plot draws."""
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end; "
          f"{datetime.now():%Y-%m-%d}; machine-seconds counted by {how}\n")
    route = found["nbgrader route"]
    print(f"1. nbgrader's route, one student, one process per notebook and per feedback (each autograde "
          f"starts its own judge): {route['machine-s']:.1f} machine-s ({route['autograde']:.1f} autograde, "
          f"{route['feedback']:.1f} feedback; {route['wall']:.0f} s wall)")
    print(f"   one cold sandboxed kernel start (Python, torch and the rest imported): "
          f"{found['cold kernel start']:.2f} machine-s")
    summary = {"nbgrader route": {"autograde": route["autograde"], "feedback": route["feedback"]},
               "students": students}
    summary.update(_report_scaling(found, students))
    _report_components(found, summary)
    summary["jobs 2 speedup"] = _report_throughput(found, students)
    summary["projection"] = _report_projection(summary)
    _readme_rows(found, summary)
    return summary


def _report_scaling(found: dict, students: int) -> dict:
    summary = {}
    rows = [("now", "now, 1 student")] + ([("before", "before, 1 student")] if "before" in found else [])
    rows += [("no judge", "no judge, 1 student")] if "no judge" in found else []
    print(f"\n2. the grading command, --jobs 1, all {len(ASSIGNMENTS)} notebooks with feedback:")
    for name, single in rows:
        slope, fixed = scaling(found[single], found[name])
        # Code from before warm processes reports no kernel start: each of its notebooks started a cold kernel.
        cold_kernels = name == "before" and not _reports(found[name], "kernel start cpu")
        cold = found["cold kernel start"] if cold_kernels else None
        summary[name] = {"per student": slope, "fixed": fixed, "wall per student": found[name]["wall"] / students,
                         "components": breakdown(found[name], slope, cold),
                         "before grading": found[name]["before grading"],
                         "merge and export": found[name]["merge and export"]}
        print(f"   {name:<8} {found[single]['machine-s']:6.1f} machine-s for 1 student, "
              f"{found[name]['machine-s']:6.1f} for {students}: {slope:5.1f} per student, {fixed:5.1f} per run "
              f"({found[name]['wall'] / students:.1f} s wall per student)")
    for name in [key for key in ("before", "now") if key in summary]:
        print(f"   {name}: {found[name]['before grading']:.1f} machine-s before grading starts (scratch course, "
              f"placing, probe), {found[name]['merge and export']:.1f} to merge and export")
    first = found["first run on this machine"]["machine-s"] - found["now, 1 student"]["machine-s"]
    summary["first run extra"] = first
    print(f"   the first run on a machine also builds its cache: {first:+.1f} machine-s, once")
    now = summary["now"]["per student"]
    factor = summary["before"]["per student"] / now if "before" in summary else None
    before = "" if factor is None else f"; {factor:.1f}x less than before" if factor >= 1 \
        else f"; {1 / factor:.1f}x more than before"
    print(f"   target: at most 20 machine-s per student: {now:.1f} / 20 = {now / 20:.2f}{before}; "
          f"{found['nbgrader route']['machine-s'] / now:.1f}x less than nbgrader's route")
    if "no judge" in summary:
        plain = summary["no judge"]["per student"]
        summary["judge factor"] = now / plain
        print(f"   the judge: {now:.1f} machine-s per student against {plain:.1f} with every test cell in the kernel "
              f"(the same code and notebooks, judge = False): {now / plain:.2f}x; target at most 1.2x: "
              f"{now / plain / 1.2:.2f}")
    return summary


def _report_components(found: dict, summary: dict) -> None:
    print("\n3. machine-seconds per student, by component:")
    for name in [key for key in RUNS if key in summary]:
        parts = ", ".join(f"{key} {value:.1f}" for key, value in summary[name]["components"].items())
        print(f"   {name:<8} {parts}")
    now = summary["now"]
    print(f"   the judge's share now: {now['components']['judge']:.1f} of {now['per student']:.1f} machine-s "
          f"per student ({100 * now['components']['judge'] / now['per student']:.0f}%)")
    print("   now, per notebook (mean over students): " + ", ".join(_KEYS.values()))
    for assignment, row in sorted(per_notebook(found["now"]).items()):
        print(f"     {assignment:<24} " + "  ".join(f"{value:5.2f}" for value in row.values()))


def throughput_walls(found: dict) -> tuple[float, float, list[tuple[float, float]]]:
    """The summed wall times of the ``--jobs 1`` and ``--jobs 2`` runs on the same students, and each pair's."""
    pairs = [(found[one]["wall"], found[two]["wall"])
             for one, two in (("now", "now, --jobs 2"), ("now, again", "now, --jobs 2, again")) if two in found]
    return sum(one for one, _ in pairs), sum(two for _, two in pairs), pairs


def _report_throughput(found: dict, students: int) -> float:
    one, two, pairs = throughput_walls(found)
    each = ", ".join(f"{a:.0f} s and {b:.0f} s: {a / b:.2f}x" for a, b in pairs)
    print(f"\n4. throughput, --jobs 2 against --jobs 1 on {students} students, {len(pairs)} pair(s) of runs in turn: "
          f"{one / two:.2f}x ({each}); target at least 1.7x: {one / two:.2f} / 1.7 = {one / two / 1.7:.2f}")
    if found["slurm"] is not None:
        print(f"\n5. Slurm, 3 shards and a merge job: {found['slurm']:.0f} s against {two:.0f} s with --jobs 2 "
              f"locally: {(found['slurm'] - two) / 3:+.1f} s per shard")
        found["slurm per shard"] = (found["slurm"] - two) / 3
    return one / two


def _report_projection(summary: dict) -> dict:
    efficiency = min(1.0, summary["jobs 2 speedup"] / 2)
    fixed, now = max(summary["now"]["fixed"], 0.0), summary["now"]["per student"]
    print(f"\n6. 500 students: T = F + S * c / (P * e), c = {now:.1f} machine-s, e = {efficiency:.2f}, "
          f"F = {fixed:.0f} s")
    minutes = {}
    for place, cores, _ in _PLACES:
        minutes[place] = (fixed + 500 * now / (cores * efficiency)) / 60
        print(f"   {place:<40} {minutes[place]:6.1f} min")
    return {"efficiency": efficiency, "fixed": fixed, "per student": now, "minutes": minutes}


def _readme_rows(found: dict, summary: dict) -> None:
    """The README's grading rows and projection table, from this run's figures."""
    now, route = summary["now"], found["nbgrader route"]["machine-s"]
    parts = ", ".join(f"{key} {value:.1f}" for key, value in now["components"].items())
    cut = summary["before"]["per student"] / now["per student"] if "before" in summary else None
    ratio = f"{cut:.1f}× less" if cut and cut >= 1 else f"{1 / cut:.1f}× more" if cut else ""
    before = f"; {summary['before']['per student']:.1f} before ({ratio} now)" if cut else ""
    one, two, pairs = throughput_walls(found)
    projection = summary["projection"]
    print(f"\n7. README rows ({datetime.now():%Y-%m-%d}, load average {os.getloadavg()[0]:.1f}):")
    print(f"| grading one student's whole course ({len(ASSIGNMENTS)} notebooks, sandbox, judge and feedback), "
          f"`--jobs 1` over "
          f"{summary['students']} students, counted by the cgroup | **{now['per student']:.1f} machine-s per "
          f"student** ({parts}) and {now['fixed']:.1f} per run, against {route:.1f} machine-s with one "
          f"`nbgrader autograde` and one `generate_feedback` process per notebook: "
          f"**{route / now['per student']:.1f}×** less{before} | ≤ 20 machine-s | "
          "`python bench/bench_autograde.py --students 4` |")
    walls = "; ".join(f"{a:.0f} s and {b:.0f} s wall" for a, b in pairs)
    print(f"| throughput, `--jobs 2` against `--jobs 1`, {summary['students']} students | **{one / two:.2f}×** "
          f"({walls}) | ≥ 1.7× on 2 cores | same |")
    if "judge factor" in summary:
        print(f"| what the judge costs: the same code and notebooks with every test cell in the student's kernel "
              f"(`judge = False`) | **{summary['judge factor']:.2f}×** ({now['per student']:.1f} against "
              f"{summary['no judge']['per student']:.1f} machine-s per student) | ≤ 1.2× | same |")
    print("| where | P | T |\n|---|---|---|")
    for place, cores, _ in _PLACES:
        print(f"| {place} | {cores} | {projection['fixed']:.0f} + 500 · {projection['per student']:.1f} / "
              f"({cores} · {projection['efficiency']:.2f}) ≈ **{projection['minutes'][place]:.1f} min** |")


def plot(summary: dict, path: Path) -> None:
    """Machine-seconds per student by component: nbgrader's route, before and now (horizontal stacked bars)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bars = [("nbgrader's route\n(a process per notebook)", summary["nbgrader route"])]
    bars += [(label, summary[name]["components"]) for name, label in RUNS.items() if name in summary]
    colours = dict(zip([*COMPONENTS, "autograde"], plt.get_cmap("tab10").colors))
    figure, axes = plt.subplots(figsize=(9, 1.2 + 0.9 * len(bars)))
    for row, (_, parts) in enumerate(bars):
        left = 0.0
        for key, value in parts.items():
            if value <= 0:  # "the rest" of a noisy run can come out below zero: nothing to draw.
                continue
            axes.barh(row, value, left=left, color=colours[key], edgecolor="white",
                      label=key if key not in axes.get_legend_handles_labels()[1] else None)
            left += value
        axes.text(left + 0.5, row, f"{sum(parts.values()):.1f}", va="center")
    axes.axvline(20, color="black", linestyle="--", linewidth=1, label="target: 20")
    axes.set_yticks(range(len(bars)), [label for label, _ in bars])
    axes.invert_yaxis()
    axes.set_xlabel(f"machine-seconds per student ({len(ASSIGNMENTS)} notebooks with feedback; cgroup CPU accounting)")
    axes.legend(loc="lower right", fontsize=8, ncol=2)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
