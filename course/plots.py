"""Plots and summary numbers for the hit ratio experiments, bilingual plot labels, and checked claims.

Used in notebooks 03, 04, 05 and 06 (`label` in every notebook's plots, `claim` in notebooks 07 and 08).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["CLAIM_PREFIX", "cjk_font", "claim", "gap_closed", "label", "plot_hit_ratio_curves"]

# The start of the line that ``claim`` prints; tests/test_notebooks_run.py requires every such line to end in True.
CLAIM_PREFIX = "check: "

# Font families that carry Chinese glyphs, in order of preference (Noto: Debian's fonts-noto-cjk;
# the others ship with Windows, macOS or common Linux desktops; Colab has none of them).
_CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Serif CJK SC", "Source Han Sans SC", "WenQuanYi Zen Hei",
                 "WenQuanYi Micro Hei", "Microsoft YaHei", "SimHei", "PingFang SC", "Heiti SC")
# Parts of the file names of those fonts, for one installed after matplotlib listed the fonts (see `cjk_font`).
_CJK_FILE_NAMES = ("cjk", "wqy", "sourcehansans", "msyh", "simhei", "pingfang", "stheiti")
_cjk_font: list[str | None] = []  # Found once, then remembered.
# Said once per notebook cell (its IPython execution count; 0 outside IPython) when labels fall back to English.
_ENGLISH_ONLY_NOTE = ("(Plot labels in English only: no font with Chinese glyphs is installed here. "
                      "图中标签只有英文：这里没有安装含中文字形的字体。)")
_noted_cells: set[int] = set()


def cjk_font() -> str | None:
    """The name of an installed font family with Chinese glyphs, or None; it is also put first in
    matplotlib's sans-serif list, so that Chinese labels render instead of empty boxes."""
    if not _cjk_font:
        from matplotlib import font_manager, rcParams

        installed = {font.name for font in font_manager.fontManager.ttflist}
        found = next((family for family in _CJK_FAMILIES if family in installed), None)
        if found is None:
            # Matplotlib lists the fonts it found when it first ran, so one installed since (`apt-get install
            # fonts-noto-cjk` in a running Colab session) is only on disk: add those files to its list.
            for path in font_manager.findSystemFonts():
                if any(part in Path(path).name.lower() for part in _CJK_FILE_NAMES):
                    try:
                        font_manager.fontManager.addfont(path)
                    except (OSError, RuntimeError, ValueError):  # A file matplotlib cannot read is left out.
                        continue
            installed = {font.name for font in font_manager.fontManager.ttflist}
            found = next((family for family in _CJK_FAMILIES if family in installed), None)
        if found:
            rcParams["font.sans-serif"] = [found, *[f for f in rcParams["font.sans-serif"] if f != found]]
            rcParams["axes.unicode_minus"] = False
        _cjk_font.append(found)
    return _cjk_font[0]


def label(english: str, chinese: str) -> str:
    """A plot label: ``"English / 中文"`` where a font with Chinese glyphs is installed, else the English.

    Matplotlib draws Chinese as empty boxes without such a font (Colab has none), so the Chinese is
    added only where it renders; the first English-only label of a notebook cell prints a line that says so.

    Raises:
        TypeError: when either argument is not a str.
    """
    if type(english) is not str or type(chinese) is not str:
        raise TypeError("label(english, chinese) takes two strings")
    if not chinese:
        return english
    if cjk_font():
        return f"{english} / {chinese}"
    cell = _cell_number()
    if cell not in _noted_cells:
        _noted_cells.add(cell)
        print(_ENGLISH_ONLY_NOTE)
    return english


def _cell_number() -> int:
    """The execution count of the notebook cell that runs now, or 0 outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return 0
    shell = get_ipython()
    return int(getattr(shell, "execution_count", 0) or 0) if shell is not None else 0


def claim(text: str, holds: object) -> None:
    """Print a claim that the prose under an experiment makes, and whether this run's numbers bear it out:
    ``check: <text>: True``. The notebooks' test run fails on a ``False``. Used in notebooks 07 and 08.

    Raises:
        TypeError: when ``text`` is not a str.
    """
    if type(text) is not str:
        raise TypeError("claim(text, holds) takes the claim as a str")
    print(f"{CLAIM_PREFIX}{text}: {bool(holds)}")


def _check_curve(name: str, curve: object) -> list[tuple[int, float]]:
    """Return a curve's (capacity, hit ratio) points sorted by capacity, after checking them."""
    if not isinstance(curve, Mapping) or not curve:
        raise TypeError(f"curve {name!r} must be a non-empty dict mapping capacity to hit ratio")
    points = []
    for capacity, ratio in curve.items():
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
            raise ValueError(f"curve {name!r}: capacity {capacity!r} is not a non-negative int")
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 <= ratio <= 1:
            raise ValueError(
                f"curve {name!r}: hit ratio {ratio!r} at capacity {capacity} is not in [0, 1]"
            )
        points.append((capacity, float(ratio)))
    return sorted(points)


def plot_hit_ratio_curves(
    curves: Mapping[str, Mapping[int, float]],
    belady: Mapping[int, float] | None = None,
    title: str | None = None,
    ax: Any = None,
) -> Any:
    """Plot hit ratio (y, in %) against cache capacity in blocks (x), one line per policy.

    ``curves`` maps a policy name to {capacity: hit ratio in [0, 1]}. ``belady``, when given, is
    drawn as a dashed black line labelled as the optimal ceiling. ``title`` defaults to "Hit ratio vs cache
    size" (bilingual where Chinese renders, as are the axis labels). Draws on ``ax`` or on a new figure, and
    returns the matplotlib Axes. Raises TypeError or ValueError for malformed curves.
    Used in notebooks 03-06.
    """
    import matplotlib.pyplot as plt

    if not isinstance(curves, Mapping):
        kind = type(curves).__name__
        raise TypeError(f"curves must be a dict of policy name -> curve, got {kind}")
    checked = {str(name): _check_curve(str(name), curve) for name, curve in curves.items()}
    if belady is not None:
        ceiling = _check_curve("Belady", belady)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4.5))
    for name, points in checked.items():
        capacities, ratios = zip(*points)
        ax.plot(capacities, [100.0 * r for r in ratios], marker="o", markersize=3, label=name)
    if belady is not None:
        capacities, ratios = zip(*ceiling)
        ax.plot(capacities, [100.0 * r for r in ratios], linestyle="--", color="black",
                label=label("Belady MIN (optimal ceiling)", "Belady MIN（最优上限）"))
    ax.set_xlabel(label("cache capacity (blocks)", "缓存容量（块）"))
    ax.set_ylabel(label("hit ratio (%)", "命中率（%）"))
    ax.set_ylim(0, 100)
    ax.set_title(label("Hit ratio vs cache size", "命中率随缓存大小的变化") if title is None else title)
    ax.grid(True, alpha=0.3)
    if checked or belady is not None:
        ax.legend(loc="lower right")
    return ax


def gap_closed(policy_ratio: float, lru_ratio: float, belady_ratio: float) -> float:
    """Return the fraction of the LRU-to-Belady gap that a policy closes.

    ``(policy - lru) / (belady - lru)``: 0.0 means no better than LRU, 1.0 means as good as Belady,
    negative means worse than LRU. When LRU already equals Belady (no gap), the result is 1.0 if
    the policy matches them too and ``-inf`` if it is worse. All ratios must be in [0, 1] and Belady
    must be at least LRU (it is optimal), else ValueError. Used in notebooks 04 and 06.
    """
    values = {"policy_ratio": policy_ratio, "lru_ratio": lru_ratio, "belady_ratio": belady_ratio}
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number, got {type(value).__name__}")
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be a hit ratio in [0, 1], got {value}")
    if belady_ratio < lru_ratio:
        raise ValueError(
            f"belady_ratio ({belady_ratio}) is below lru_ratio ({lru_ratio}); Belady is optimal, "
            "so the ratios were probably swapped or measured on different traces"
        )
    gap = belady_ratio - lru_ratio
    if gap == 0.0:
        return 1.0 if policy_ratio >= lru_ratio else -math.inf
    return (policy_ratio - lru_ratio) / gap
