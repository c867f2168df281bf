"""Which modules' objects each side takes from its own import, and the names a notebook's read-only cells import
from them. Standard library only: the grading process, its workers and every nbgrader command load it (through
nbgrader_config.py and grading/judge/execute.py) without importing torch, and the kernel gets it with the agent
(prelude.py).
"""

from __future__ import annotations

import ast
import re

# Modules whose functions and classes each side takes from its own import (GLOBAL, MODULE): the
# standard library a test cell uses, NumPy, torch and the course's helper package.
ALLOWED_MODULES = frozenset({
    "abc", "builtins", "bisect", "collections", "copy", "dataclasses", "enum", "fractions", "functools", "hashlib",
    "heapq", "itertools", "math", "numbers", "operator", "random", "re", "statistics", "string", "types", "typing",
    "numpy", "torch", "course"})

_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def dotted(name) -> bool:
    """Whether ``name`` is a dotted Python name (``torch.nn.functional``, ``Tensor.add``)."""
    return type(name) is str and len(name) <= 300 and _DOTTED.fullmatch(name) is not None


def allowed_module(name) -> bool:
    """Whether ``name`` is an allowed module or one of their submodules."""
    return dotted(name) and name.split(".")[0] in ALLOWED_MODULES


def trusted_names(sources: list[str]) -> dict[str, tuple[str, str | None]]:
    """What the notebook's read-only cells import from allowed modules: name -> (module, attribute or None)."""
    names: dict[str, tuple[str, str | None]] = {}
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if allowed_module(alias.name):
                        bound = alias.asname or alias.name.split(".")[0]
                        names[bound] = (alias.name if alias.asname else alias.name.split(".")[0], None)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and allowed_module(node.module or ""):
                for alias in node.names:
                    if alias.name != "*":
                        names[alias.asname or alias.name] = (node.module, alias.name)
    return names
