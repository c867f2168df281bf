"""Tests of course.plots."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course.plots import gap_closed, plot_hit_ratio_curves  # noqa: E402


def test_plot_draws_one_line_per_policy_and_labels_belady() -> None:
    ax = plot_hit_ratio_curves(
        {"LRU": {10: 0.2, 20: 0.4}, "LFU": {20: 0.45, 10: 0.25}},
        belady={10: 0.5, 20: 0.7},
        title="Mooncake",
    )
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[:2] == ["LRU", "LFU"] and "Belady" in labels[2]
    assert ax.get_lines()[2].get_linestyle() == "--"
    assert list(ax.get_lines()[1].get_xdata()) == [10, 20]
    assert ax.get_title() == "Mooncake"
    assert "blocks" in ax.get_xlabel() and "%" in ax.get_ylabel()
    assert ax.get_xlabel().startswith("cache capacity (blocks)") and ax.get_ylabel().startswith("hit ratio (%)")
    assert ax.get_legend() is not None
    plt.close(ax.figure)


def test_plot_uses_given_axes_and_rejects_bad_curves() -> None:
    fig, ax = plt.subplots()
    assert plot_hit_ratio_curves({"LRU": {1: 0.5}}, None, "t", ax=ax) is ax
    with pytest.raises(ValueError, match="not in"):
        plot_hit_ratio_curves({"LRU": {1: 1.5}}, None, "t", ax=ax)
    with pytest.raises(TypeError):
        plot_hit_ratio_curves({"LRU": [0.5]}, None, "t", ax=ax)  # type: ignore[dict-item]
    plt.close(fig)


def test_gap_closed() -> None:
    assert gap_closed(0.3, 0.2, 0.4) == pytest.approx(0.5)
    assert gap_closed(0.2, 0.2, 0.4) == 0.0
    assert gap_closed(0.4, 0.2, 0.4) == 1.0
    assert gap_closed(0.1, 0.2, 0.4) == pytest.approx(-0.5)
    assert gap_closed(0.3, 0.3, 0.3) == 1.0
    assert gap_closed(0.2, 0.3, 0.3) == -math.inf
    with pytest.raises(ValueError, match="below lru_ratio"):
        gap_closed(0.3, 0.5, 0.4)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        gap_closed(30.0, 0.2, 0.4)


def test_label_is_bilingual_only_where_chinese_renders(monkeypatch) -> None:
    import course.plots as plots

    monkeypatch.setattr(plots, "_cjk_font", [None])
    assert plots.label("Hit ratio", "命中率") == "Hit ratio"
    monkeypatch.setattr(plots, "_cjk_font", ["Noto Sans CJK SC"])
    assert plots.label("Hit ratio", "命中率") == "Hit ratio / 命中率"
    with pytest.raises(TypeError):
        plots.label("Hit ratio", None)


def test_the_first_english_only_label_of_a_cell_says_so(monkeypatch, capsys) -> None:
    import course.plots as plots

    monkeypatch.setattr(plots, "_cjk_font", [None])
    monkeypatch.setattr(plots, "_noted_cells", set())
    cell = [7]
    monkeypatch.setattr(plots, "_cell_number", lambda: cell[0])
    plots.label("Hit ratio", "命中率")
    plots.label("Capacity", "容量")
    assert capsys.readouterr().out.count("English only") == 1, "one note per cell"
    cell[0] = 8
    plots.label("Hit ratio", "命中率")
    assert "图中标签只有英文" in capsys.readouterr().out, "the next cell says so again"
    monkeypatch.setattr(plots, "_cjk_font", ["Noto Sans CJK SC"])
    plots.label("Hit ratio", "命中率")
    assert capsys.readouterr().out == "", "no note where Chinese renders"


def test_claim_prints_a_checked_line(capsys) -> None:
    from course.plots import CLAIM_PREFIX, claim

    claim("the curve rises", 3 > 2)
    claim("the curve falls", [])
    assert capsys.readouterr().out.splitlines() == [f"{CLAIM_PREFIX}the curve rises: True",
                                                    f"{CLAIM_PREFIX}the curve falls: False"]
    with pytest.raises(TypeError):
        claim(None, True)


def test_a_cjk_font_installed_after_matplotlib_listed_its_fonts_is_found(monkeypatch) -> None:
    """Matplotlib lists the system's fonts once and keeps that list (its cache): a font installed later (in a running
    Colab session, say) is only on disk, and cjk_font adds its files to matplotlib's list."""
    from matplotlib import font_manager

    import course.plots as plots

    on_disk = [path for path in font_manager.findSystemFonts()
               if any(part in Path(path).name.lower() for part in plots._CJK_FILE_NAMES)]
    if not on_disk:
        pytest.skip("no font with Chinese glyphs here (Debian: apt-get install fonts-noto-cjk)")
    listed = [font for font in font_manager.fontManager.ttflist if font.name not in plots._CJK_FAMILIES]
    monkeypatch.setattr(font_manager.fontManager, "ttflist", listed)  # The list as before the font was installed.
    monkeypatch.setattr(plots, "_cjk_font", [])
    assert plots.cjk_font() in plots._CJK_FAMILIES


def test_a_chinese_label_renders_glyphs_when_a_cjk_font_is_installed() -> None:
    import warnings

    import course.plots as plots

    plots._cjk_font.clear()
    if plots.cjk_font() is None:
        pytest.skip("no font with Chinese glyphs here (Debian: apt-get install fonts-noto-cjk)")
    fig, ax = plt.subplots()
    ax.set_title(plots.label("Hit ratio", "命中率"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns "Glyph ... missing from font(s)" for boxes.
        fig.canvas.draw()
    plt.close(fig)
