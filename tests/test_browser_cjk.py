"""Chinese text renders as Chinese glyphs in the browser tests' Chromium, not as empty boxes.

A browser without a font for Chinese draws every Chinese character as the same missing-glyph box
("tofu"), so two different Chinese strings of equal length give identical pictures. Each release
notebook is exported to HTML with nbconvert (the page layout students and instructors see), opened in
headless Chromium, and its first Chinese passage is photographed twice: as written, and with its
characters replaced by other Chinese characters. The two screenshots must differ, and neither may be
blank. The screenshots go to build/screenshots/ for review. `.ci/run` installs Debian's
fonts-noto-cjk; without it this test fails, which is the point.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import nbformat
import pytest
from nbconvert import HTMLExporter

from grading.config import ASSIGNMENTS, ROOT

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = ROOT / "build" / "screenshots"
CHINESE = re.compile(r"[\u4e00-\u9fff]")
# Characters of the course's glossary, used to replace the passage's own (any other Chinese would do).
REPLACEMENTS = "驱逐受害者配额租户缓存前缀调度"

if not CHROMIUM.exists():
    if os.environ.get("CI"):
        raise RuntimeError("CI must install Debian's chromium package for the browser tests (see .ci/run)")
    pytest.skip("Debian's chromium is not installed (apt-get install chromium)", allow_module_level=True)

playwright = pytest.importorskip("playwright.sync_api")
image = pytest.importorskip("PIL.Image")

# Marks the first rendered element whose own text is mostly Chinese and returns that text.
MARK_FIRST_CHINESE = r"""() => {
    const chinese = /[\u4e00-\u9fff]/g;
    for (const element of document.querySelectorAll('.jp-RenderedMarkdown p, .jp-RenderedMarkdown li, '
                                                   + '.jp-RenderedMarkdown h1, .jp-RenderedMarkdown h2, '
                                                   + '.jp-RenderedMarkdown h3')) {
        const text = element.innerText.trim();
        const count = (text.match(chinese) || []).length;
        if (count >= 4 && count * 2 >= text.length && text.length <= 80) {
            element.id = 'chinese-under-test';
            return text;
        }
    }
    return null;
}"""


@pytest.fixture(scope="module")
def page():
    with playwright.sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                          args=["--no-sandbox", "--disable-gpu"])
        yield chromium.new_page(viewport={"width": 1000, "height": 800})
        chromium.close()


def _distinct_colours(png: bytes) -> int:
    with image.open(io.BytesIO(png)) as picture:
        return len(picture.convert("L").getcolors(maxcolors=256) or range(257))


def _replaced(text: str) -> str:
    """``text`` with every Chinese character swapped for another one (never itself)."""
    swapped, index = [], 0
    for character in text:
        if CHINESE.match(character):
            choices = [c for c in REPLACEMENTS if c != character]
            swapped.append(choices[index % len(choices)])
            index += 1
        else:
            swapped.append(character)
    return "".join(swapped)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_chinese_renders_as_glyphs(page, tmp_path, assignment):
    notebook = nbformat.read(ROOT / "release" / assignment / f"{assignment}.ipynb", as_version=4)
    html, _ = HTMLExporter(template_name="lab").from_notebook_node(notebook)
    document = tmp_path / f"{assignment}.html"
    document.write_text(html, encoding="utf-8")
    page.goto(document.as_uri())
    text = page.evaluate(MARK_FIRST_CHINESE)
    assert text, f"{assignment}: no rendered Chinese passage found (every notebook opens with a 导读)"
    element = page.locator("#chinese-under-test")
    written = element.screenshot()
    element.evaluate("(element, text) => { element.innerText = text; }", _replaced(text))
    swapped = element.screenshot()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS / f"chinese_{assignment}.png").write_bytes(written)
    assert _distinct_colours(written) > 2, f"{assignment}: the Chinese passage {text!r} rendered blank"
    assert written != swapped, (
        f"{assignment}: two different Chinese texts look identical in Chromium, so its Chinese shows as "
        f"empty boxes: install a CJK font (Debian: apt-get install fonts-noto-cjk). Passage: {text!r}")
