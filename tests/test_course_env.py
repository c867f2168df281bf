"""Unit tests of course.env."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from course import env


def test_pick_device_matches_cuda_availability():
    device = env.pick_device()
    assert type(device) is torch.device
    assert device.type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_available_devices_start_with_cpu():
    devices = env.available_devices()
    assert devices[0] == torch.device("cpu")
    assert len(devices) == 1 + torch.cuda.is_available()


def test_seed_everything_repeats_every_generator():
    env.seed_everything(7)
    first = (random.random(), np.random.rand(), torch.rand(1).item())
    env.seed_everything(7)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == first


@pytest.mark.parametrize("bad, error", [("7", TypeError), (1.5, TypeError), (-1, ValueError), (2**32, ValueError)])
def test_seed_everything_rejects_bad_seeds(bad, error):
    with pytest.raises(error, match="seed"):
        env.seed_everything(bad)


def test_environment_detection(monkeypatch):
    monkeypatch.delenv("COLAB_RELEASE_TAG", raising=False)
    assert env.in_colab() is False
    monkeypatch.setenv("COLAB_RELEASE_TAG", "release-colab-2026")
    assert env.in_colab() is True and env.where_am_i() == "colab"
    monkeypatch.setenv(env.AUTOGRADE_VARIABLE, "1")
    assert env.in_autograder() is True
    monkeypatch.setenv(env.AUTOGRADE_VARIABLE, "0")
    assert env.in_autograder() is False


def test_setup_summary_is_one_line():
    line = env.setup_summary(torch.device("cpu"), 0)
    assert "\n" not in line and "torch" in line and "seed 0" in line and "cpu" in line
