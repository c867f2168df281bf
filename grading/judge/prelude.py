"""The hidden first cell that brings the judge's agent into a student's kernel, and the serving line.

The agent (agent.py and the modules it uses) is sent as source: nothing new is installed in the
sandbox, whose Python environment already has msgpack, NumPy and torch. The cell makes a private
package of those modules, connects to the judge's socket and keeps the agent in that package under a
fresh name, not in the notebook's globals, where ``dir()`` would list it (red team, round 17); each
test cell is then swapped, while it runs, for one line that serves the judge (`serve_line`).
"""

from __future__ import annotations

import secrets
from pathlib import Path

AGENT_MODULES = ("names", "wire", "stored", "pairs", "codec", "peer", "agent")
PACKAGE = "_course_judge_agent"


def agent_sources() -> dict[str, str]:
    folder = Path(__file__).resolve().parent
    return {name: (folder / f"{name}.py").read_text(encoding="utf-8") for name in AGENT_MODULES}


def new_name() -> str:
    """A fresh name for the agent in its package in the kernel (not a secret)."""
    return "_course_judge_" + secrets.token_hex(6)


def prelude(socket_path: str, name: str) -> str:
    """The source of the first cell: load the agent and connect it to ``socket_path``, as ``name``."""
    return f'''
def _course_judge_boot(sources, path):
    import sys, types
    package = types.ModuleType({PACKAGE!r})
    package.__path__ = []
    sys.modules[{PACKAGE!r}] = package
    for module_name, source in sources.items():
        module = types.ModuleType({PACKAGE!r} + "." + module_name)
        module.__package__ = {PACKAGE!r}
        sys.modules[module.__name__] = module
        exec(compile(source, "<judge agent " + module_name + ">", "exec"), module.__dict__)
    package.{name} = sys.modules[{PACKAGE!r} + ".agent"].connect(path, globals())
_course_judge_boot({agent_sources()!r}, {socket_path!r})
del _course_judge_boot
'''


def serve_line(name: str, epoch: str, source: str | None = None) -> str:
    """What runs in the kernel in place of a test cell: serve the judge until the test ends. ``source``: the test
    cell's own, which the agent puts in IPython's history in place of this line, as one process holds it there."""
    return f"__import__({PACKAGE!r}).{name}.serve({epoch!r}, {source!r})"
