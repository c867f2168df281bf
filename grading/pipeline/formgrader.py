"""Formgrader in JupyterLab, the course's way: the Content-Security-Policy of grading/isolation/csp.py is on.

    python -m grading.pipeline.formgrader [--port 8888] [--ip 127.0.0.1] [-- more JupyterLab options]
    python -m grading.pipeline.formgrader --hub [-- more options]

Starts JupyterLab in the course directory (where nbgrader_config.py is, so formgrader finds the
gradebook and the autograded notebooks) with the server extension ``grading.isolation.csp`` enabled, next to
nbgrader's own. Open *Nbgrader → Formgrader* and grade as usual. What formgrader shows of a
submission was sanitized when it was graded (grading/isolation/sanitize.py); the policy is the second layer.

With ``--hub`` it is a JupyterHub service (deploy/jupyterhub/jupyterhub_config.py): the same
server under ``jupyterhub-singleuser``, which takes its address from the hub and lets in only the
hub's users whose role grants access to the service.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from grading.config import ROOT

EXTENSION = "grading.isolation.csp"


def server_command(root: Path, port: int, ip: str = "127.0.0.1", options: list[str] | None = None,
                   hub: bool = False) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that start formgrader's JupyterLab for the course in ``root``.

    Run it with ``root`` as the working directory: formgrader reads ``root/nbgrader_config.py``
    and the server imports ``grading.isolation.csp`` from there. With ``hub``, it runs as a JupyterHub
    service, whose address the hub gives in the environment (``port`` and ``ip`` are not used).
    """
    server = ["jupyterhub.singleuser"] if hub else ["jupyterlab", "--no-browser", f"--port={port}", f"--ip={ip}"]
    command = [sys.executable, "-m", *server, f"--ServerApp.root_dir={root}",
               f"--ServerApp.jpserver_extensions={EXTENSION}=True", *(options or [])]
    environment = dict(os.environ)
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment.get('PATH', '')}"
    environment["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [environment.get("PYTHONPATH")])])
    return command, environment


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m grading.pipeline.formgrader", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8888)
    parser.add_argument("--ip", default="127.0.0.1")
    parser.add_argument("--hub", action="store_true", help="run as a JupyterHub service (jupyterhub-singleuser)")
    parser.add_argument("options", nargs="*", help="more JupyterLab options (after --)")
    args = parser.parse_args(argv)
    command, environment = server_command(ROOT, args.port, args.ip, args.options, hub=args.hub)
    # The server takes this process's place, so that a stop signal (the hub's, or Ctrl-C) reaches it.
    os.chdir(ROOT)
    os.execve(command[0], command, environment)


if __name__ == "__main__":
    main(sys.argv[1:])
