"""Environment detection for the notebooks' setup cell.

Every notebook's setup cell calls `pick_device`, `seed_everything` and `setup_summary`.
"""

from __future__ import annotations

import os
import platform
import random
import sys

import numpy as np
import torch

AUTOGRADE_VARIABLE = "COURSE_AUTOGRADE"


def pick_device() -> torch.device:
    """Return ``cuda`` when a CUDA device is usable, otherwise ``cpu``.

    Used in every notebook (setup cell).
    """
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def available_devices() -> list[torch.device]:
    """Return the devices that tensor tests run on: always ``cpu``, plus ``cuda`` when present.

    Used in every notebook's tensor test cells, so that one test covers every device.
    """
    devices = [torch.device("cpu")]
    if torch.cuda.is_available():
        devices.append(torch.device("cuda"))
    return devices


def in_colab() -> bool:
    """Return True when the code runs inside Google Colab.

    Used in every notebook (setup cell).
    """
    return "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ


def in_modelscope() -> bool:
    """Return True when the code runs in a ModelScope notebook (DSW) instance.

    Used in every notebook (setup cell).
    """
    return any(name.startswith("MODELSCOPE") for name in os.environ)


def in_autograder() -> bool:
    """Return True while the course's grading command runs the notebook.

    The grading command sets ``COURSE_AUTOGRADE=1``. Progress bars and other stderr output
    stay silent then, because nbgrader counts stderr in a test cell as a failure.
    """
    return os.environ.get(AUTOGRADE_VARIABLE, "") == "1"


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and PyTorch's random generators (all devices) with ``seed``.

    Used in every notebook (setup cell).

    Raises:
        TypeError: when ``seed`` is not an int.
        ValueError: when ``seed`` is negative or does not fit in 32 bits (NumPy's limit).
    """
    if type(seed) is not int:
        raise TypeError(f"seed_everything(seed={seed!r}): seed must be an int, got {type(seed).__name__}")
    if not 0 <= seed < 2**32:
        raise ValueError(f"seed_everything(seed={seed}): seed must be in [0, 2**32)")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def where_am_i() -> str:
    """Name the environment: ``colab``, ``modelscope`` or ``local``."""
    if in_colab():
        return "colab"
    if in_modelscope():
        return "modelscope"
    return "local"


def setup_summary(device: torch.device, seed: int) -> str:
    """Return one line describing the environment, e.g. for the setup cell to print.

    Used in every notebook (setup cell).
    """
    if device.type == "cuda":
        hardware = f"cuda ({torch.cuda.get_device_name(device)})"
    else:
        hardware = f"cpu ({os.cpu_count()} cores)"
    return (
        f"environment: {where_am_i()} | python {platform.python_version()} | "
        f"torch {torch.__version__} | device: {hardware} | seed {seed}"
    )
