"""Saving and loading `TinyDecoder` weights without pickle, and the shipped trained weights.

Used in notebook 07 (through ``course.model``) and by ``course.train_recall``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, Union

import torch

from course.model.decoder import TinyDecoder

RECALL_WEIGHTS = "recall_decoder.pt"
"""The file name of the trained weights inside the package (``course/weights/``)."""


def save_decoder(model: TinyDecoder, path: Union[str, "os.PathLike[str]"], metadata: Dict[str, object]) -> None:
    """Save ``model``'s weights as float16 with its shape and ``metadata``, loadable without pickle.

    The file is ``torch.save`` of a dict of plain types (ints, floats, strings, tensors), which
    ``torch.load(..., weights_only=True)`` reads without running any code. Float16 halves the
    file; the weights are float32 again once loaded (`load_decoder`), and the accuracy stated
    in ``metadata`` must be measured on these rounded weights.

    Used by course.train_recall.
    """
    for key, value in metadata.items():
        if type(key) is not str or type(value) not in (int, float, str, bool):
            raise TypeError(f"save_decoder: metadata must map str to int, float, str or bool; {key!r}: {value!r}")
    state = {name: tensor.detach().to("cpu", torch.float16).contiguous() for name, tensor in model.state_dict().items()}
    shape = {"vocab_size": model.vocab_size, "num_layers": model.num_layers,
             "num_heads": model.num_heads, "head_dim": model.head_dim, "positions": model.positions}
    torch.save({"format": 1, "shape": shape, "metadata": dict(metadata), "state_dict": state}, path)


def load_decoder(path: Union[str, "os.PathLike[str]"], device: Union[str, torch.device, None] = None) -> TinyDecoder:
    """Load a `TinyDecoder` saved by `save_decoder` (float32 weights, gradients off, eval mode).

    The metadata saved with it is in the model's ``metadata`` attribute (a dict).

    Raises:
        ValueError: when the file is not such a file.
    """
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise
    except Exception as error:  # torch raises several types for a file that is not a checkpoint.
        raise ValueError(f"load_decoder: {path} is not a weights file saved by save_decoder ({error})") from error
    if not isinstance(saved, dict) or saved.get("format") != 1 or not isinstance(saved.get("shape"), dict):
        raise ValueError(f"load_decoder: {path} is not a weights file saved by save_decoder")
    model = TinyDecoder(seed=0, **saved["shape"])
    model.load_state_dict({name: tensor.to(torch.float32) for name, tensor in saved["state_dict"].items()})
    model.metadata = dict(saved["metadata"])
    return model.to(device) if device is not None else model


def recall_weights_path() -> Path:
    """The path of the shipped weights of `load_recall_decoder` (inside the installed package)."""
    return Path(__file__).resolve().parent.parent / "weights" / RECALL_WEIGHTS


def load_recall_decoder(device: Union[str, torch.device, None] = None) -> TinyDecoder:
    """Return the `TinyDecoder` trained on the associative-recall task of `course.recall`.

    Two layers, four heads of 16 dimensions (model_dim 64), vocabulary `course.recall.VOCAB_SIZE`;
    weights shipped with the package (float16 on disk, float32 in the model), so nothing is
    downloaded. ``model.metadata`` holds how it was trained (seed, steps, time) and its recall
    accuracy on a held-out set. Trained by ``python -m course.train_recall``.

    Args:
        device: where to put the model (None: the CPU).

    Used in notebook 07.
    """
    path = recall_weights_path()
    if not path.is_file():
        raise FileNotFoundError(
            f"load_recall_decoder: the shipped weights {path} are missing; reinstall the course package, "
            "or train them with: python -m course.train_recall"
        )
    return load_decoder(path, device)
