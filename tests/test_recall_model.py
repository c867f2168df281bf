"""Tests of notebook 07's model: the recall task, the shipped trained decoder, its training script and the
weights file format. tests/test_decoder_cache.py tests the decoder's attention and pruned caches."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

import pytest
import torch

from course import recall
from course.env import available_devices
from course.model import (
    TinyDecoder,
    load_decoder,
    load_recall_decoder,
    recall_weights_path,
    save_decoder,
)
from course.train_recall import main as train_main
from grading.config import ROOT

TOLERANCE = 1e-5
EVALUATION_SEED = 5_000_000
"""A seed that neither training (seeds below 1,000,000) nor the training script's held-out set used."""


def rotary_model(seed: int = 0, vocab_size: int = 40) -> TinyDecoder:
    return TinyDecoder(vocab_size=vocab_size, num_layers=2, num_heads=2, head_dim=8, seed=seed, positions="rotary")


# ------------------------------------------------------------------------------------------------
# The task.
# ------------------------------------------------------------------------------------------------

def test_recall_batch_follows_the_documented_format():
    batch = recall.recall_batch(50, seed=3)
    tokens = batch.tokens
    assert tokens.shape == (50, recall.SEQUENCE_LENGTH) == (50, 69) and tokens.dtype == torch.long
    assert recall.VOCAB_SIZE == 66 and batch.context_length == recall.CONTEXT_LENGTH == 57
    assert torch.equal(batch.answer_positions, torch.tensor([58, 61, 64, 67]))
    assert (tokens[:, 0] == recall.BOS).all()
    keys, values = tokens[:, 1:57:2], tokens[:, 2:57:2]
    assert ((keys >= recall.FIRST_KEY) & (keys < recall.FIRST_VALUE)).all()
    assert ((values >= recall.FIRST_VALUE) & (values < recall.VOCAB_SIZE)).all()
    assert all(len(set(row.tolist())) == recall.NUM_PAIRS for row in keys), "keys of a sequence are distinct"
    queries = tokens[:, 57:].reshape(50, 4, 3)
    assert (queries[:, :, 0] == recall.QUERY).all()
    for row in range(50):
        pairs = batch.queried_pairs[row].tolist()
        assert len(set(pairs)) == 4
        for j, pair in enumerate(pairs):
            assert queries[row, j, 1] == tokens[row, 1 + 2 * pair]
            assert queries[row, j, 2] == tokens[row, 2 + 2 * pair] == batch.answers[row, j]
            assert tokens[row, batch.answer_positions[j] + 1] == batch.answers[row, j]


def test_recall_batch_is_seeded_and_checks_its_arguments():
    assert torch.equal(recall.recall_batch(4, seed=1).tokens, recall.recall_batch(4, seed=1).tokens)
    assert not torch.equal(recall.recall_batch(4, seed=1).tokens, recall.recall_batch(4, seed=2).tokens)
    short = recall.recall_batch(3, seed=0, num_pairs=5, num_queries=2)
    assert short.tokens.shape == (3, 11 + 6) and short.context_length == 11
    for arguments, error in [((0, 0), ValueError), ((2, -1), ValueError), ((2.0, 0), TypeError),
                             ((2, 0, 33), ValueError), ((2, 0, 4, 5), ValueError), ((2, 0, 4, 0), ValueError)]:
        with pytest.raises(error, match="recall_batch"):
            recall.recall_batch(*arguments)


# ------------------------------------------------------------------------------------------------
# The shipped model.
# ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def trained() -> TinyDecoder:
    return load_recall_decoder()


def test_shipped_weights_are_small_and_load_without_pickle():
    path = recall_weights_path()
    assert path.is_file(), f"{path} must be committed"
    assert path.stat().st_size <= 2_000_000
    saved = torch.load(path, map_location="cpu", weights_only=True)
    assert all(tensor.dtype == torch.float16 for tensor in saved["state_dict"].values())


def test_shipped_model_meets_its_documented_accuracy_on_fresh_sequences(trained):
    assert (trained.vocab_size, trained.num_layers, trained.num_heads, trained.head_dim) == (66, 2, 4, 16)
    assert trained.positions == "rotary" and not any(p.requires_grad for p in trained.parameters())
    documented = trained.metadata["recall_accuracy"]
    assert documented >= 0.98
    fresh = recall.recall_batch(1000, seed=EVALUATION_SEED)
    accuracy, loss = recall.recall_accuracy(trained, fresh)
    # 4000 answers: a binomial standard error below 0.003 at 98%.
    assert accuracy >= documented - 0.015, f"recall {accuracy:.4f} on fresh sequences, documented {documented}"
    assert loss < 0.2


def test_shipped_model_needs_the_right_pair(trained):
    """Evicting the queried pair's two tokens (every layer, every head) destroys recall: the task
    measures what the cache holds. Evicting two other tokens changes almost nothing."""
    batch = recall.recall_batch(200, seed=EVALUATION_SEED + 1, num_queries=1)
    context = batch.context_length
    _, kv = trained(batch.tokens[:, :context])
    question = batch.tokens[:, context:context + 2]
    heads = trained.num_heads

    def accuracy_without(pairs):
        keep = torch.ones(len(pairs), heads, context, dtype=torch.bool)
        for row, pair in enumerate(pairs.tolist()):
            keep[row, :, 1 + 2 * pair:3 + 2 * pair] = False
        index = torch.stack([torch.where(row[0])[0] for row in keep])  # same slots for every head
        pruned = [(k[torch.arange(len(pairs))[:, None], index], v[torch.arange(len(pairs))[:, None], index])
                  for k, v in kv]
        logits, _ = trained(question, past_kv=pruned, position=context)
        return float((logits[:, -1].argmax(-1) == batch.answers[:, 0]).float().mean())

    queried = batch.queried_pairs[:, 0]
    assert accuracy_without(queried) < 0.15
    assert accuracy_without((queried + 1) % batch.num_pairs) > 0.9


def test_load_recall_decoder_moves_the_model(trained):
    for device in available_devices():
        model = load_recall_decoder(device)
        assert model.device.type == device.type
    tokens = recall.recall_batch(2, seed=1).tokens
    torch.testing.assert_close(load_recall_decoder()(tokens)[0], trained(tokens)[0], atol=0, rtol=0)


def test_weights_file_is_package_data(tmp_path):
    """A wheel built from the checkout holds the weights, so `pip install git+...` installs them."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "course", source / "course", ignore=shutil.ignore_patterns("__pycache__"))
    build = "import sys; from setuptools import build_meta; print(build_meta.build_wheel(sys.argv[1]))"
    built = subprocess.run([sys.executable, "-c", build, str(tmp_path)], cwd=source, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = tmp_path / built.stdout.strip().splitlines()[-1]
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert "course/weights/recall_decoder.pt" in names
        assert archive.read("course/weights/recall_decoder.pt") == recall_weights_path().read_bytes()
    # Every module of the package, its subpackages' too (course.model, course.replay...), is in the wheel.
    modules = {path.relative_to(ROOT).as_posix() for path in (ROOT / "course").rglob("*.py")}
    assert modules <= set(names), f"modules missing from the wheel: {sorted(modules - set(names))}"


# ------------------------------------------------------------------------------------------------
# The training script.
# ------------------------------------------------------------------------------------------------

def test_training_script_smoke_run(tmp_path, capsys):
    output = tmp_path / "smoke.pt"
    arguments = ["--steps", "3", "--batch-size", "8", "--eval-sequences", "16", "--output", str(output), "--quiet"]
    metadata = train_main(arguments)
    printed = capsys.readouterr().out
    assert "recall accuracy on 16 held-out sequences" in printed and "trained" in printed
    model = load_decoder(output)
    assert model.metadata == metadata
    assert metadata["steps"] == 3 and 0.0 <= metadata["recall_accuracy"] <= 1.0
    assert metadata["evaluation_seed"] == 1_000_000
    # Seeded: the same arguments give the same weights.
    again = tmp_path / "again.pt"
    train_main(arguments[:-3] + ["--output", str(again), "--quiet"])
    first, second = load_decoder(output).state_dict(), load_decoder(again).state_dict()
    assert all(torch.equal(first[name], second[name]) for name in first)
    # The steps changed the weights.
    untrained = TinyDecoder(vocab_size=66, num_layers=2, num_heads=4, head_dim=16, seed=0, positions="rotary")
    assert not torch.equal(untrained.blocks[0].qkv.weight.half().float(), model.blocks[0].qkv.weight)


@pytest.mark.parametrize("arguments", [["--steps", "0"], ["--batch-size", "0"], ["--seed", "-1"],
                                       ["--learning-rate", "0"], ["--eval-sequences", "0"]])
def test_training_script_rejects_bad_arguments(arguments, tmp_path):
    with pytest.raises(SystemExit):
        train_main(arguments + ["--output", str(tmp_path / "x.pt"), "--quiet"])
    assert not (tmp_path / "x.pt").exists()


# ------------------------------------------------------------------------------------------------
# The weights file.
# ------------------------------------------------------------------------------------------------

def test_weights_file_round_trip_and_bad_files(tmp_path):
    model = rotary_model(5)
    path = tmp_path / "model.pt"
    save_decoder(model, path, {"note": "test", "steps": 1})
    loaded = load_decoder(path)
    assert loaded.metadata == {"note": "test", "steps": 1} and loaded.positions == "rotary"
    for name, tensor in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor.half().float())
    with pytest.raises(TypeError, match="metadata"):
        save_decoder(model, tmp_path / "bad.pt", {"tensor": torch.zeros(1)})
    not_weights = tmp_path / "text.pt"
    not_weights.write_text("hello")
    with pytest.raises(ValueError, match="not a weights file"):
        load_decoder(not_weights)
    torch.save({"something": torch.zeros(2)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a weights file"):
        load_decoder(tmp_path / "other.pt")
    with pytest.raises(FileNotFoundError):
        load_decoder(tmp_path / "missing.pt")
