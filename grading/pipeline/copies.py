"""Flags students whose solutions are the same once whitespace and comments are set aside.

nbgrader has no such check. Each graded notebook keeps a fingerprint of its solution cells in its
shard's results (`fingerprint`); `find_copies` compares them across every shard at merge time
(grading/pipeline/merge.py), so it works however the students were split. A flag never changes a score:
both students get ``needs a manual look: same solution as <other> (tasks)``.

What counts (the rule the README states):

- A solution cell's code is compared as Python tokens: comments, blank lines, spaces and line
  breaks inside brackets are set aside; names, strings, numbers, statements and indentation count.
- A cell identical to the release skeleton (not written) or to the course's reference solution
  (published in solutions/, and what many honest students converge on) is not compared.
- A written cell counts when it has at least `MIN_TOKENS` tokens more than the skeleton: a
  one-line answer that many honest students write the same way proves nothing.
- Two students of one assignment are flagged when they share a counted cell, or when all their
  written cells are the same and together have at least `MIN_TOKENS` tokens more than the skeleton.
"""

from __future__ import annotations

import hashlib
import io
import re
import tokenize

import nbformat

# Tokens a cell must have beyond its skeleton for two identical copies of it to be flagged.
MIN_TOKENS = 50
_IGNORED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}


def tokens(source: str) -> list[str]:
    """The code of a cell as tokens, without comments and layout; where the tokenizer stops, the rest
    counts as one token without its whitespace."""
    found: list[str] = []
    lines = io.StringIO(source)
    try:
        for token in tokenize.generate_tokens(lines.readline):
            if token.type not in _IGNORED:
                found.append(token.string if token.type != tokenize.INDENT else "<indent>")
    except (tokenize.TokenError, SyntaxError):
        found.append("".join(lines.read().split()))
    return found


def _digest(parts: list[str]) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:24]


def fingerprint(notebook: nbformat.NotebookNode, release: nbformat.NotebookNode | None,
                reference: dict[str, str]) -> dict[str, list]:
    """``{grade id: [digest, tokens beyond the skeleton]}`` for each written solution cell (see the module).

    ``reference`` holds the reference solution's code by grade id.
    """
    cells = release.cells if release else []
    skeletons = {cell.metadata["nbgrader"]["grade_id"]: tokens(cell.source) for cell in cells
                 if cell.metadata.get("nbgrader", {}).get("solution")}
    known = {grade_id: _digest(tokens(code)) for grade_id, code in reference.items()}
    found: dict[str, list] = {}
    for cell in notebook.cells:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id not in skeletons or cell.cell_type != "code":
            continue
        code = tokens(cell.source)
        digest = _digest(code)
        if digest != _digest(skeletons[grade_id]) and digest != known.get(grade_id):
            found[grade_id] = [digest, max(len(code) - len(skeletons[grade_id]), 0)]
    return found


def _label(grade_id: str) -> str:
    match = re.match(r"task(\d+)_(\d+)_", grade_id)
    return f"{match.group(1)}.{match.group(2)}" if match else grade_id


def find_copies(records: dict[str, dict], min_tokens: int = MIN_TOKENS) -> dict[tuple[str, str], str]:
    """``{(student, assignment): note}`` for every submission whose solution another student's matches.

    ``records`` are the merged results: ``{student: {"assignments": {assignment: {"fingerprint": ...}}}}``.
    """
    partners: dict[tuple[str, str], dict[str, set[str]]] = {}
    by_key: dict[tuple, list[tuple[str, tuple[str, ...]]]] = {}
    for student, record in records.items():
        for assignment, result in record.get("assignments", {}).items():
            cells = result.get("fingerprint") or {}
            for grade_id, (digest, written) in cells.items():
                if written >= min_tokens:
                    by_key.setdefault((assignment, grade_id, digest), []).append((student, (grade_id,)))
            if cells and sum(written for _, written in cells.values()) >= min_tokens:
                whole = tuple(sorted((grade_id, digest) for grade_id, (digest, _) in cells.items()))
                by_key.setdefault((assignment, whole), []).append((student, tuple(sorted(cells))))
    for key, owners in by_key.items():
        for student, grade_ids in owners:
            for other, _ in owners:
                if other != student:
                    partners.setdefault((student, key[0]), {}).setdefault(other, set()).update(grade_ids)
    notes = {}
    for (student, assignment), others in partners.items():
        names = sorted(others)
        tasks = sorted({_label(grade_id) for grade_ids in others.values() for grade_id in grade_ids})
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        notes[(student, assignment)] = f"same solution as {shown} (task{'s' if len(tasks) > 1 else ''} " \
                                       f"{', '.join(tasks)})"
    return notes


def flagged(status: str, note: str) -> str:
    """A status with the copy note, as a status that needs a manual look (the score is unchanged)."""
    prefix = "needs a manual look: "
    if status.startswith(prefix):
        return prefix + note + "; " + status[len(prefix):]
    if status == "graded" or status.startswith("graded; "):
        return prefix + note + status[len("graded"):]
    if status.startswith("timed out"):  # It says that it needs a manual look already.
        return f"{status}; {note}"
    return prefix + note + "; " + status
