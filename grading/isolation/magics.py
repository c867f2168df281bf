"""A cell's IPython syntax (magics, shell escapes, help) rewritten as the Python IPython runs, in linear time.

IPython's own ``TransformerManager`` finds one piece of special syntax, rewrites it, and tokenizes
the whole cell again to find the next one: a cell of n magics costs n tokenizations of the cell
(a 12 KB cell of 500 ``%ls`` lines and filler took minutes to scan), and after 500 pieces it gives
up. `to_python` tokenizes the cell once, from top to bottom, with one tokenizer: each logical line
goes through IPython's own finders and rewriters as the tokenizer reaches it, and the tokenizer
goes on from the line after it. That gives what IPython gives because a rewritten line is a
complete statement that leaves the tokenizer where the original line left it. Where a piece breaks
that (its arguments open a bracket or a string that the tokenizer carries past the line, a
backslash continues it past its logical line), IPython's result depends on tokenizing again, so
`to_python` stops there and says so; the scan flags such a cell.
"""

from __future__ import annotations

import tokenize
from dataclasses import dataclass

_OPENING = frozenset("([{")
_CLOSING = frozenset(")]}")


@dataclass
class Rewritten:
    """The cell as plain Python, line for line as IPython would run it, and why rewriting stopped early."""

    source: str
    problem: str | None = None


@dataclass
class _LogicalLine:
    tokens: list[tokenize.TokenInfo]
    ended: bool  # It ended with a NEWLINE token (not at the end of the input, inside a string or brackets).
    balanced: bool  # Its brackets close within it, and none closes one opened before it.


class _Reader:
    """IPython's logical lines of ``lines``, as its ``make_tokens_by_line`` groups them, read lazily.

    Rows in the tokens are 1-based indices into ``lines``. An ``IndentationError`` propagates:
    IPython then runs nothing of the cell.
    """

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.position = 0
        # IPython's bracket count, which never goes below 0 and runs on across logical lines.
        self.clamped = 0

    def _readline(self) -> str:
        if self.position >= len(self.lines):
            return ""
        self.position += 1
        return self.lines[self.position - 1]

    def __iter__(self):
        from IPython.utils.tokenutil import generate_tokens_catch_errors

        group: list[tokenize.TokenInfo] = []
        depth = lowest = 0  # The tokenizer's own count, which can go below 0.
        start_depth, self.start_clamped = 0, 0
        try:
            for token in generate_tokens_catch_errors(self._readline, extra_errors_to_catch=["expected EOF"]):
                group.append(token)
                if token.type == tokenize.NEWLINE or (token.type == tokenize.NL and self.clamped <= 0):
                    yield _LogicalLine(group, token.type == tokenize.NEWLINE, depth == lowest == start_depth)
                    group, start_depth, lowest, self.start_clamped = [], depth, depth, self.clamped
                elif token.type == tokenize.OP and token.string in _OPENING:
                    self.clamped, depth = self.clamped + 1, depth + 1
                elif token.type == tokenize.OP and token.string in _CLOSING:
                    self.clamped, depth = max(self.clamped - 1, 0), depth - 1
                    lowest = min(lowest, depth)
        except tokenize.TokenError:
            pass  # The cell ends inside a string or brackets: the last logical line runs to its end.
        if group:
            yield _LogicalLine(group, False, depth == lowest == start_depth)

    def rewritten(self) -> None:
        """The last logical line was rewritten to balanced code: IPython's count is what it was before it."""
        self.clamped = self.start_clamped


def _rewrite(transformer, lines: list[str], first: int) -> list[str]:
    """Apply one of IPython's rewriters to the logical line ``lines``, which starts at row ``first`` of the cell.

    The rewriter gets that logical line alone, so that rewriting it copies nothing else.
    """
    transformer.start_line -= first
    if hasattr(transformer, "q_line"):
        transformer.q_line -= first
    return transformer.transform(lines)


def _last_row(transformer, lines: list[str]) -> int:
    """The last row (0-based) that IPython's rewriter replaces: a backslash continues a magic's line."""
    from IPython.core.inputtransformer2 import find_end_of_continued_line

    if hasattr(transformer, "q_line"):
        return transformer.q_line
    return find_end_of_continued_line(lines, transformer.start_line)


def _stray(tokens: list[tokenize.TokenInfo], before: tuple[int, int] | None = None) -> bool:
    """Whether the tokenizer gave up on a character (a lone quote, say) in ``tokens`` (before a position)."""
    return any(token.type == tokenize.ERRORTOKEN and token.string.strip() and (before is None or token.start < before)
               for token in tokens)


def _unsafe(transformer, line: _LogicalLine, lines: list[str]) -> str | None:
    """Why going on after rewriting this logical line could differ from IPython's result, or None."""
    last = line.tokens[-1].start[0] - 1
    if not line.ended or not line.balanced or _last_row(transformer, lines) != last:
        return "its arguments run past the line (a bracket, a string or a backslash)"
    if _stray(line.tokens, (transformer.start_line + 1, transformer.start_col)):
        return "a stray quote or character before it"
    return None


def _complete(replacement: list[str], finders) -> bool:
    """Whether a rewritten logical line is plain Python that ends where it ends, with nothing left to rewrite.

    IPython tokenizes the rewritten cell again; when that finds more special syntax in the line or
    carries a bracket or a string past it (``,%`` rewrites to ``%("")``), only doing the same
    would give IPython's result.
    """
    ending = {tokenize.DEDENT, tokenize.ENDMARKER, tokenize.NL, tokenize.COMMENT}
    groups = [line for line in _Reader(replacement) if any(token.type not in ending for token in line.tokens)]
    return bool(groups) and groups[-1].ended and all(
        line.balanced and not _stray(line.tokens) and not any(cls.find([line.tokens]) for cls in finders)
        for line in groups)


def to_python(source: str) -> Rewritten:
    """``source`` with IPython's special syntax rewritten as IPython rewrites it (see the module's docstring)."""
    from IPython.core.inputtransformer2 import TransformerManager

    manager = TransformerManager()
    lines = (source if source.endswith("\n") else source + "\n").splitlines(keepends=True)
    for transform in manager.cleanup_transforms + manager.line_transforms:
        lines = transform(lines)
    rewritten: list[str] = []
    done = 0  # Rows before this one are in ``rewritten``.
    # A rewriter that failed on the first piece it found keeps finding that piece in IPython, which
    # tries the other rewriters instead: here it is left out for the rest of the cell.
    stuck: set[type] = set()
    reader = _Reader(lines)
    try:
        for line in reader:
            finders = [cls for cls in manager.token_transformers if cls not in stuck]
            found = [transformer for transformer in (cls.find([line.tokens]) for cls in finders) if transformer]
            if not found:
                continue
            first, last = line.tokens[0].start[0] - 1, line.tokens[-1].start[0] - 1
            replacement, problem = _first_rewrite(found, line, lines, first, stuck)
            if replacement is not None:
                rewritten.extend(lines[done:first])
                rewritten.extend(replacement)
                done = last + 1
                reader.rewritten()
                if not _complete(replacement, manager.token_transformers):
                    problem = f"IPython syntax on line {first + 1} that the scan cannot follow: " \
                              "it rewrites to more IPython syntax"
            if problem:
                return Rewritten("".join(rewritten + lines[done:]), problem)
    except SyntaxError:
        pass  # IPython's tokenizer raised (an indentation error): the kernel runs nothing of the cell.
    return Rewritten("".join(rewritten + lines[done:]))


def _first_rewrite(found: list, line: _LogicalLine, lines: list[str], first: int, stuck: set[type]
                   ) -> tuple[list[str] | None, str | None]:
    """The logical line rewritten by the first of IPython's rewriters that takes it, or why that cannot be followed.

    IPython tries the rewriters that found something in the order of where they found it; one that
    raises SyntaxError is skipped. When none takes the line, all of them are ``stuck``.
    """
    from IPython.core.inputtransformer2 import TokenTransformBase

    for transformer in sorted(found, key=TokenTransformBase.sortby):
        problem = _unsafe(transformer, line, lines)
        if problem:
            return None, f"IPython syntax on line {transformer.start_line + 1} that the scan cannot follow: {problem}"
        try:
            return _rewrite(transformer, lines[first:line.tokens[-1].start[0]], first), None
        except SyntaxError:
            continue
    stuck.update(type(transformer) for transformer in found)
    return None, None
