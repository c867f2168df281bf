"""Train the decoder that `course.model.load_recall_decoder` ships: ``python -m course.train_recall``.

The model is a `course.model.TinyDecoder` (2 layers, 4 heads of 16 dimensions, rotary positions,
vocabulary 66) trained on the associative-recall task of `course.recall`. Recipe: AdamW (peak
learning rate 2e-3, a linear warm-up over 100 steps, then a cosine decay), a batch of 32 fresh
sequences each step (no sequence is seen twice), the loss `course.recall.training_loss` (the
cross-entropy of every next token plus that of the answers), gradients clipped at norm 1.

Curriculum. Trained on 28 pairs from the start (measured with a loss on the answers only, at
learning rates from 1e-3 to 1e-2), the model sat on a plateau for over 3000 steps: it learned to
predict *some* value of the context (loss about ln 19, the number of distinct values), because
finding *the* value needs two heads that only help together (a layer-0 head that copies each key
into the value after it, and a layer-1 head that matches the query's key against those copies:
an induction head). With two pairs the pair is found within a few hundred steps, and the heads
then carry over to longer contexts. So the number of pairs of each step's batch is drawn
uniformly from 2 .. ``max_pairs``, where ``max_pairs`` grows linearly from 2 to 28 over the first
half of the steps and stays at 28; each sequence asks ``min(num_pairs, 8)`` queries.

At the end the weights are rounded to float16 (as they are shipped), their recall accuracy is
measured on 2000 held-out sequences of the default shape (28 pairs, 4 queries) drawn from another
seed, and the script prints it with the training time and writes the weights file.

Run from the repository root; the default output replaces the shipped weights:

    python -m course.train_recall                       # see the README for the time it takes
    python -m course.train_recall --steps 20 --output /tmp/smoke.pt   # a smoke run

Training is seeded and runs on one CPU thread (``--threads``), so a rerun with the same arguments
and the same torch version gives the same weights. (On a shared 2-core machine one thread was
several times faster than two.)
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

import torch
from tqdm.auto import tqdm

from course import recall
from course.model import TinyDecoder, load_decoder, recall_weights_path, save_decoder

NUM_LAYERS = 2
NUM_HEADS = 4
HEAD_DIM = 16
POSITIONS = "rotary"
MAX_QUERIES = 8
"""Queries per training sequence (fewer when it has fewer pairs): more answers per step."""
EVALUATION_SEED_OFFSET = 1_000_000
"""The held-out set is drawn with seed ``--seed + 1_000_000``; training batches never use it."""


def _parse(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m course.train_recall", description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3000, help="optimizer steps (default 3000)")
    parser.add_argument("--batch-size", type=int, default=32, help="sequences per step (default 32)")
    parser.add_argument("--learning-rate", type=float, default=2e-3, help="peak learning rate (default 2e-3)")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads of torch (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the training data (default 0)")
    parser.add_argument("--eval-sequences", type=int, default=2000,
                        help="held-out sequences for the final accuracy (default 2000)")
    parser.add_argument("--output", type=Path, default=recall_weights_path(),
                        help="where to write the weights (default: the package's shipped file)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    arguments = parser.parse_args(argv)
    for name in ("steps", "batch_size", "eval_sequences", "threads"):
        if getattr(arguments, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if arguments.seed < 0:
        parser.error("--seed must be >= 0")
    if not arguments.learning_rate > 0:
        parser.error("--learning-rate must be > 0")
    return arguments


def learning_rate_at(step: int, steps: int, peak: float) -> float:
    """Linear warm-up over the first 100 steps (or 5% of short runs), then cosine decay to 5% of ``peak``."""
    warmup = max(1, min(100, steps // 20))
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.05 + 0.95 * 0.5 * (1.0 + math.cos(math.pi * progress)))


def max_pairs_at(step: int, steps: int) -> int:
    """The curriculum: the most pairs a batch may have at ``step``, from 2 up to 28 at half the steps."""
    ramp = max(1, steps // 2)
    return min(recall.NUM_PAIRS, 2 + (recall.NUM_PAIRS - 2) * step // ramp)


def train(steps: int, batch_size: int, learning_rate: float, seed: int, quiet: bool = False) -> TinyDecoder:
    """Return a `TinyDecoder` trained for ``steps`` steps (float32, gradients off, eval mode)."""
    model = TinyDecoder(vocab_size=recall.VOCAB_SIZE, num_layers=NUM_LAYERS, num_heads=NUM_HEADS,
                        head_dim=HEAD_DIM, seed=seed, positions=POSITIONS)
    model.requires_grad_(True)
    model.train()
    decay = [p for name, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for name, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=learning_rate, betas=(0.9, 0.98))
    # Training batches come from seeds seed * steps + step: distinct for every step and every
    # seed below EVALUATION_SEED_OFFSET / steps, and never the evaluation seed. The number of
    # pairs of each batch comes from its own generator, seeded with seed as well.
    pair_counts = torch.Generator().manual_seed(seed)
    progress = tqdm(range(steps), desc="training", disable=quiet, mininterval=1.0)
    for step in progress:
        num_pairs = int(torch.randint(2, max_pairs_at(step, steps) + 1, (1,), generator=pair_counts))
        batch = recall.recall_batch(batch_size, seed=seed * steps + step, num_pairs=num_pairs,
                                    num_queries=min(num_pairs, MAX_QUERIES))
        for group in optimizer.param_groups:
            group["lr"] = learning_rate_at(step, steps, learning_rate)
        logits, _ = model(batch.tokens)
        loss = recall.training_loss(logits, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % 50 == 0:
            progress.set_postfix(loss=f"{loss.item():.3f}", pairs=num_pairs)
    model.requires_grad_(False)
    model.eval()
    return model


def main(argv: Optional[List[str]] = None) -> Dict[str, object]:
    """Train, evaluate the float16-rounded weights on a held-out set, write them; return the figures."""
    arguments = _parse(argv)
    if arguments.seed * arguments.steps + arguments.steps > EVALUATION_SEED_OFFSET:
        raise SystemExit("python -m course.train_recall: --seed * --steps must stay below 1,000,000")
    threads_before = torch.get_num_threads()
    torch.set_num_threads(arguments.threads)
    try:
        started = time.perf_counter()
        model = train(arguments.steps, arguments.batch_size, arguments.learning_rate, arguments.seed, arguments.quiet)
        training_seconds = time.perf_counter() - started
    finally:
        torch.set_num_threads(threads_before)
    evaluation_seed = arguments.seed + EVALUATION_SEED_OFFSET
    held_out = recall.recall_batch(arguments.eval_sequences, seed=evaluation_seed)
    metadata: Dict[str, object] = {
        "task": "course.recall: 28 key-value pairs then 4 queries, vocabulary 66",
        "loss": "course.recall.training_loss: every next token plus the answers",
        "curriculum": "pairs uniform in 2..max_pairs, max_pairs 2 -> 28 over the first half; min(pairs, 8) queries",
        "seed": arguments.seed, "steps": arguments.steps, "batch_size": arguments.batch_size,
        "learning_rate": arguments.learning_rate, "training_seconds": round(training_seconds, 1),
        "threads": arguments.threads, "torch": str(torch.__version__),
        "evaluation_seed": evaluation_seed, "evaluation_sequences": arguments.eval_sequences,
    }
    # Measure the weights as they are shipped: rounded to float16 and loaded back.
    with tempfile.TemporaryDirectory() as folder:
        rounded_path = Path(folder) / "rounded.pt"
        save_decoder(model, rounded_path, metadata)
        rounded = load_decoder(rounded_path)
    accuracy, loss = recall.recall_accuracy(rounded, held_out)
    metadata.update({"recall_accuracy": round(accuracy, 4), "answer_loss": round(loss, 4)})
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    save_decoder(model, arguments.output, metadata)
    parameters = sum(p.numel() for p in model.parameters())
    print(f"trained {parameters:,} parameters for {arguments.steps} steps of {arguments.batch_size} sequences "
          f"in {training_seconds:.0f} s on {arguments.threads} CPU thread(s)")
    print(f"recall accuracy on {arguments.eval_sequences} held-out sequences (seed {evaluation_seed}): "
          f"{accuracy:.4f}, answer loss {loss:.4f} nats (float16 weights)")
    print(f"wrote {arguments.output} ({arguments.output.stat().st_size / 1000:.0f} kB)")
    return metadata


if __name__ == "__main__":
    main(sys.argv[1:])
