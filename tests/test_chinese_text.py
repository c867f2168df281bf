"""The Chinese that students read: no line break inside a sentence, and the glossary's one term per concept.

Glossary (docs/AUTHORING.md §7): the words its notes forbid, and the variants of its terms that crept in before, never
appear in a notebook's Chinese (the glossary cell of notebook 01 quotes them and is left out).

A browser renders a line break inside a markdown paragraph as a space, and between two Chinese characters that
space is a visible gap (measured in Chromium: the same 9 characters are 144.0 px wide on one line, 147.6 px with a
break in the middle). So a Chinese sentence is written on one line: a line that ends in a Chinese character or in
full-width punctuation other than a sentence's end (。！？) is never followed by a line that continues the paragraph.
"""

from __future__ import annotations

import re

import nbformat
import pytest

from grading.config import ASSIGNMENTS, ROOT

ENDS_IN_CHINESE = re.compile(r"[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]$")
SENTENCE_END = "。！？"
CLOSING = "）」』”’)"
# A line that starts a new block rather than continuing a paragraph: a list item, heading, table row, display
# formula, code fence, quote, HTML or an image.
NEW_BLOCK = re.compile(r"^\s*(?:[-*+] |\d+[.)] |#|\||\$\$|```|>|<|!\[|\[!\[)")


def broken_sentences(markdown: str) -> list[str]:
    """Each place where a Chinese sentence continues on the next line, as ``"…end of line ⏎ start of next…"``."""
    lines = markdown.split("\n")
    found = []
    for line, following in zip(lines, lines[1:]):
        line = line.rstrip()
        if not ENDS_IN_CHINESE.search(line) or line.rstrip(CLOSING)[-1:] in tuple(SENTENCE_END):
            continue
        if following.strip() and not NEW_BLOCK.match(following):
            found.append(f"…{line[-15:]} ⏎ {following.strip()[:15]}…")
    return found


# A wrong word -> the glossary's term for that concept.
NOT_THE_GLOSSARY = {
    "召回": "回忆 (recall accuracy: 回忆准确率; associative recall: 联想回忆)",
    "(?<!联想)回忆解码器": "联想回忆解码器",
    "生成访问轨迹": "替代访问轨迹 (a stand-in trace)",
    "访问序列": "访问轨迹 (a trace; 序列 is a sequence)",
    "钉住": "固定 (pin)",
    "固定内存": "锁页内存 (page-locked host memory)",
    "牺牲": "受害者 (victim)",
    "淘汰": "驱逐 (evict)",
    "写穿": "直写 (write-through)",
    "宿主内存": "主机内存 (host memory)",
    "影子列表": "幽灵列表 (ghost list)",
    "延迟删除": "惰性删除 (lazy deletion)",
}
CHINESE = re.compile(r"[\u4e00-\u9fff]")
# Code, formulas, and the English term in parentheses at a term's first use: 预填充（prefill）.
CODE = re.compile(r"`[^`]*`|\$[^$]*\$|（[ -~]*）")


def glossary_slips(markdown: str) -> list[str]:
    """Each word of NOT_THE_GLOSSARY in the Chinese paragraphs of some markdown, and "prefill" written in them."""
    found = []
    for paragraph in re.split(r"\n\s*\n", markdown):
        if not CHINESE.search(paragraph):
            continue
        prose = CODE.sub("", paragraph)
        found += [f"{word} -> {term}" for word, term in NOT_THE_GLOSSARY.items() if re.search(word, prose)]
        if re.search(r"[\u4e00-\u9fff][^.\n]{0,40}\bprefill\b|\bprefill\b[^.\n]{0,40}[\u4e00-\u9fff]", prose):
            found.append("prefill -> 预填充 (never the English word in Chinese text)")
    return found


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_chinese_uses_the_glossary_terms(assignment):
    notebook = nbformat.read(ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    found = [f"cell {index}: {slip}" for index, cell in enumerate(notebook.cells)
             if cell.cell_type == "markdown" and cell.metadata.get("given") != "glossary"
             for slip in glossary_slips(cell.source)]
    assert not found, f"{assignment}: words that are not the glossary's (docs/AUTHORING.md §7):\n" + "\n".join(found)


def test_the_glossary_check_finds_a_slip_and_ignores_code():
    assert glossary_slips("于是“召回准确率随预算的变化”直接度量了驱逐策略的好坏。") == [
        "召回 -> 回忆 (recall accuracy: 回忆准确率; associative recall: 联想回忆)"]
    assert glossary_slips("调用 `prefill(seq_id, k, v)` 写入 K/V。") == []
    assert glossary_slips("先 prefill 整个提示词。") == ["prefill -> 预填充 (never the English word in Chinese text)"]
    assert glossary_slips("An English paragraph about prefill.") == []
    assert glossary_slips("预填充（prefill）要为提示词的每个 token 计算 K/V；联想回忆解码器很小。") == []


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_line_break_inside_a_chinese_sentence(assignment):
    notebook = nbformat.read(ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    found = [f"cell {index}: {place}" for index, cell in enumerate(notebook.cells) if cell.cell_type == "markdown"
             for place in broken_sentences(cell.source)]
    assert not found, (f"{assignment}: a line break inside a Chinese sentence renders as a stray space; write the "
                       "sentence on one line (authoring/*.py):\n" + "\n".join(found))


def test_the_detector_finds_a_break_and_accepts_sentence_ends_and_new_blocks():
    assert broken_sentences("缓存满了、新请求又需要块时，\n系统必须决定驱逐哪个序列。") == [
        "…缓存满了、新请求又需要块时， ⏎ 系统必须决定驱逐哪个序列。…"]
    assert broken_sentences("返回 `-1`（包括空张量）\n**注意**") != []
    assert broken_sentences("第一句。\n第二句。") == []
    assert broken_sentences("如下（见表）。）\n下一句") == []
    assert broken_sentences("以下情况抛出异常：\n- 权重为负数；\n- 权重之和为 0。") == []
    assert broken_sentences("公式：\n$$x = 1$$") == []
    assert broken_sentences("An English line\nthat goes on.") == []
