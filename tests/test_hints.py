"""A hint points the way; it never writes the line of the solution.

Each ``# TODO N.M.k`` block of a solution cell (the TODO line, ``# 提示：`` and ``# Hint:``) is compared with the
solution region under it: a hint leaks when it contains, nearly whole, a line of the solution, the right-hand side of
an assignment, a returned expression or a condition (20 characters or more without spaces), or the same code with
other names (``min(over, key=lambda t: ...)`` for ``min(over, key=lambda tenant: ...)``).
"""

from __future__ import annotations

import difflib
import io
import keyword
import re
import tokenize

import nbformat
import pytest

from grading.config import ASSIGNMENTS, ROOT

MIN_LENGTH, SHARE = 20, 0.85
_TODO = re.compile(r"^\s*# TODO (\d+\.\d+\.\d+)\b")
# The part of a line worth comparing: the expression after "=", "return", "if", "elif", "while" or "for ... in", or
# the whole line.
_PARTS = re.compile(r"^\s*(?:return\s+|(?:el)?if\s+|while\s+|for\s+.+?\s+in\s+|[\w\[\]., ]+?\s*(?<![=!<>])=(?!=)\s*)"
                    r"(.*?):?$")


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _shape(code: str) -> str:
    """Code with every name but keywords and torch's written as ``x``: the same code under other names matches."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return _squeezed(code)
    kept = (tokenize.NAME, tokenize.OP, tokenize.NUMBER, tokenize.STRING)
    return "".join("x" if token.type == tokenize.NAME and not keyword.iskeyword(token.string)
                   and token.string != "torch" else token.string for token in tokens if token.type in kept)


def _contains(text: str, part: str, minimum: int) -> bool:
    if len(part) < minimum:
        return False
    common = difflib.SequenceMatcher(None, text, part, autojunk=False).find_longest_match(0, len(text), 0, len(part))
    return common.size >= SHARE * len(part)


def leaked(hint: str, solution: list[str]) -> list[str]:
    """The solution lines that ``hint`` writes out (nearly) whole."""
    squeezed = _squeezed(hint)
    english = hint.split("Hint:", 1)[-1].replace("`", " ")
    shaped = _shape(english)
    found = []
    for line in solution:
        code = line.split("  #")[0].strip()
        match = _PARTS.match(code)
        part = match.group(1) if match else code
        if _contains(squeezed, _squeezed(part), MIN_LENGTH) or _contains(shaped, _shape(part), MIN_LENGTH):
            found.append(line.strip())
    return found


def leaks(source: str) -> dict[str, list[str]]:
    """Each TODO label of a solution cell whose hint leaks, with the lines it gives away."""
    lines = source.splitlines()
    found = {}
    for index, line in enumerate(lines):
        todo = _TODO.match(line)
        if not todo:
            continue
        begin = next(i for i in range(index, len(lines)) if "### BEGIN SOLUTION" in lines[i])
        end = next(i for i in range(begin, len(lines)) if "### END SOLUTION" in lines[i])
        hint = " ".join(text.strip().lstrip("#") for text in lines[index:begin])
        given_away = leaked(hint, [text for text in lines[begin + 1:end] if text.strip() and not
                                   text.strip().startswith("#")])
        if given_away:
            found[todo.group(1)] = given_away
    return found


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_hint_writes_the_solution_line(assignment):
    notebook = nbformat.read(ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    found = {}
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            found.update(leaks(cell.source))
    assert not found, f"{assignment}: hints that write the solution instead of pointing the way: {found}"


def test_a_leak_is_found_and_a_pointer_is_not():
    solution = ["        digest = hashlib.sha256(text.encode('ascii')).digest()", "    if capacity_blocks < 0:"]
    assert leaked("Hint: hashlib.sha256(text.encode('ascii')).digest() is the digest",
                  solution) == [solution[0].strip()]
    assert leaked("Hint: hashlib.sha256 gives the digest of the text's ASCII bytes", solution) == []
    assert leaked("TODO: raise ValueError when capacity_blocks < 0", solution) == []
    assert leaked("Hint: model(tokens[:, step:step + 1], past_kv=kv, position=step)",
                  ["logits, kv = model(tokens[:, step:step + 1], past_kv=kv, position=step)"]) != []
    assert leaked("Hint: min(over, key=lambda t: (-over[t], t)) breaks ties by name",
                  ["    return min(over, key=lambda tenant: (-over[tenant], tenant))"]) != []
