"""Plots and summary numbers for the hit ratio experiments, and bilingual plot labels.

Used in notebooks 03, 04, 05 and 06 (`label` in every notebook's plots).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["cjk_font", "gap_closed", "label", "plot_hit_ratio_curves"]

# Font families that carry Chinese glyphs, in order of preference (Noto: Debian's fonts-noto-cjk;
# the others ship with Windows, macOS or common Linux desktops; Colab has none of them).
_CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Serif CJK SC", "Source Han Sans SC", "WenQuanYi Zen Hei",
                 "WenQuanYi Micro Hei", "Microsoft YaHei", "SimHei", "PingFang SC", "Heiti SC")
_cjk_font: list[str | None] = []  # Found once, then remembered.


def cjk_font() -> str | None:
    """The name of an installed font family with Chinese glyphs, or None; it is also put first in
    matplotlib's sans-serif list, so that Chinese labels render instead of empty boxes."""
    if not _cjk_font:
        from matplotlib import font_manager, rcParams

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
    added only where it renders.

    Raises:
        TypeError: when either argument is not a str.
    """
    if type(english) is not str or type(chinese) is not str:
        raise TypeError("label(english, chinese) takes two strings")
    return f"{english} / {chinese}" if chinese and cjk_font() else english


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
    title: str = "Hit ratio vs cache size",
    ax: Any = None,
) -> Any:
    """Plot hit ratio (y, in %) against cache capacity in blocks (x), one line per policy.

    ``curves`` maps a policy name to {capacity: hit ratio in [0, 1]}. ``belady``, when given, is
    drawn as a dashed black line labelled as the optimal ceiling. Draws on ``ax`` or on a new
    figure, and returns the matplotlib Axes. Raises TypeError or ValueError for malformed curves.
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
                label="Belady MIN (optimal ceiling)")
    ax.set_xlabel("cache capacity (blocks)")
    ax.set_ylabel("hit ratio (%)")
    ax.set_ylim(0, 100)
    ax.set_title(title)
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
