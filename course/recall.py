"""The associative-recall task that the decoder of `course.model.load_recall_decoder` was trained on.

A sequence lists key-value pairs, then asks for the values of some of the keys:

    BOS  k_1 v_1  k_2 v_2  ...  k_28 v_28   ?  k_a v_a   ?  k_b v_b   ?  k_c v_c   ?  k_d v_d
    \\_____________ context: 57 tokens ____/ \\___________ 4 queries of 3 tokens ___________/

Vocabulary (66 ids): ``BOS = 0`` opens every sequence, ``QUERY = 1`` ("?") opens every query,
ids ``2 .. 33`` are the 32 keys, ids ``34 .. 65`` the 32 values. The 28 keys of a sequence are
distinct (drawn without replacement from the 32), each value is drawn uniformly from the 32
(values may repeat), and the 4 queries ask for 4 distinct pairs of the 28, in random order. The
model is scored on one thing: after ``? k`` it must predict the value that followed ``k`` in the
context (the tokens of the context are random, so nothing else can be predicted). Uniform
guessing gets 1/32 of the answers right; the trained model almost all of them.

To answer, the model must still hold the K/V of the right pair: a cache that evicted it cannot
recall the value. That is what makes the task a measure of KV eviction.

Positions (0-based, in a sequence of the default shape): the key of pair ``i`` (0-based) is at
``1 + 2 i``, its value at ``2 + 2 i``; query ``j`` occupies ``57 + 3 j`` ("?"), ``58 + 3 j``
(the key) and ``59 + 3 j`` (the value), and the logits at ``58 + 3 j`` predict the answer.

Used in notebook 07 and by ``python -m course.train_recall``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple, Union

import torch
import torch.nn.functional as F

__all__ = [
    "BOS", "QUERY", "FIRST_KEY", "NUM_KEYS", "FIRST_VALUE", "NUM_VALUES", "VOCAB_SIZE", "NUM_PAIRS",
    "NUM_QUERIES", "CONTEXT_LENGTH", "QUERY_LENGTH", "SEQUENCE_LENGTH", "RecallBatch", "answer_loss",
    "next_token_loss", "recall_accuracy", "recall_batch", "training_loss",
]

BOS = 0
"""The token that opens every sequence."""
QUERY = 1
"""The token ("?") that opens every query."""
FIRST_KEY = 2
NUM_KEYS = 32
FIRST_VALUE = FIRST_KEY + NUM_KEYS
NUM_VALUES = 32
VOCAB_SIZE = FIRST_VALUE + NUM_VALUES
"""66 token ids: BOS, QUERY, 32 keys, 32 values."""
NUM_PAIRS = 28
"""Key-value pairs in the context of a default sequence."""
NUM_QUERIES = 4
"""Queries after the context of a default sequence."""
QUERY_LENGTH = 3
"""Tokens of one query: QUERY, the key, the value."""
CONTEXT_LENGTH = 1 + 2 * NUM_PAIRS
"""57: BOS and the pairs."""
SEQUENCE_LENGTH = CONTEXT_LENGTH + QUERY_LENGTH * NUM_QUERIES
"""69 tokens in a default sequence."""


@dataclass(frozen=True)
class RecallBatch:
    """A batch of recall sequences, all of one shape.

    Attributes:
        tokens: long ``[num_sequences, context_length + 3 * num_queries]``.
        context_length: ``1 + 2 * num_pairs``, the length of BOS and the pairs.
        answer_positions: long ``[num_queries]``: the positions whose logits must predict the
            answers (the queries' keys), the same in every sequence.
        answers: long ``[num_sequences, num_queries]``: the value token each query asks for.
        queried_pairs: long ``[num_sequences, num_queries]``: which pair (0-based) each query
            asks for; its key is at ``1 + 2 * pair`` and its value at ``2 + 2 * pair``.
    """

    tokens: torch.Tensor
    context_length: int
    answer_positions: torch.Tensor
    answers: torch.Tensor
    queried_pairs: torch.Tensor

    @property
    def num_pairs(self) -> int:
        return (self.context_length - 1) // 2

    def to(self, device: Union[str, torch.device]) -> "RecallBatch":
        """The same batch with its tensors on ``device``."""
        return RecallBatch(self.tokens.to(device), self.context_length, self.answer_positions.to(device),
                           self.answers.to(device), self.queried_pairs.to(device))


def _check_count(name: str, value: object, low: int, high: Optional[int] = None) -> int:
    if type(value) is not int:
        raise TypeError(f"recall_batch: {name} must be an int, got {type(value).__name__}")
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"recall_batch: {name} must be {bound}, got {value}")
    return value


def recall_batch(
    num_sequences: int,
    seed: int,
    num_pairs: int = NUM_PAIRS,
    num_queries: int = NUM_QUERIES,
) -> RecallBatch:
    """Draw ``num_sequences`` recall sequences (on the CPU) from a generator seeded with ``seed``.

    The same arguments give the same batch on every machine. The model was trained on the
    default shape (28 pairs, 4 queries); other shapes are for experiments.

    Args:
        num_sequences: int >= 1.
        seed: int >= 0 (the training script draws its training data from ``seed`` and its
            evaluation set from other seeds; see course.train_recall).
        num_pairs: pairs in the context, int in [1, 32].
        num_queries: queries after the context, int in [1, num_pairs].

    Raises:
        TypeError / ValueError: for arguments that are not ints or out of range.
    """
    _check_count("num_sequences", num_sequences, 1)
    _check_count("seed", seed, 0)
    _check_count("num_pairs", num_pairs, 1, NUM_KEYS)
    _check_count("num_queries", num_queries, 1, num_pairs)
    generator = torch.Generator().manual_seed(seed)
    keys = FIRST_KEY + torch.rand(num_sequences, NUM_KEYS, generator=generator).argsort(dim=1)[:, :num_pairs]
    values = FIRST_VALUE + torch.randint(0, NUM_VALUES, (num_sequences, num_pairs), generator=generator)
    queried = torch.rand(num_sequences, num_pairs, generator=generator).argsort(dim=1)[:, :num_queries]
    context = torch.empty(num_sequences, 1 + 2 * num_pairs, dtype=torch.long)
    context[:, 0] = BOS
    context[:, 1::2] = keys
    context[:, 2::2] = values
    queries = torch.empty(num_sequences, num_queries, QUERY_LENGTH, dtype=torch.long)
    queries[:, :, 0] = QUERY
    queries[:, :, 1] = keys.gather(1, queried)
    queries[:, :, 2] = values.gather(1, queried)
    tokens = torch.cat((context, queries.reshape(num_sequences, -1)), dim=1)
    context_length = context.shape[1]
    answer_positions = context_length + 1 + QUERY_LENGTH * torch.arange(num_queries)
    return RecallBatch(tokens, context_length, answer_positions, queries[:, :, 2].clone(), queried)


def answer_loss(logits: torch.Tensor, batch: RecallBatch) -> torch.Tensor:
    """Mean cross-entropy (nats) of the answers under ``logits`` ``[num_sequences, length, vocab]``."""
    picked = logits[:, batch.answer_positions.to(logits.device)]
    return F.cross_entropy(picked.reshape(-1, picked.shape[-1]), batch.answers.to(logits.device).reshape(-1))


def next_token_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy (nats) of every next token: ``logits[:, i]`` scored on ``tokens[:, i + 1]``.

    ``logits`` ``[num_sequences, length, vocab]`` are the model's outputs on ``tokens``
    ``[num_sequences, length]``; the last position has no next token and is left out.
    """
    vocab = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, vocab), tokens[:, 1:].to(logits.device).reshape(-1))


def training_loss(logits: torch.Tensor, batch: RecallBatch) -> torch.Tensor:
    """What course.train_recall minimizes: `next_token_loss` plus `answer_loss` (answers count twice).

    The next-token part trains every position, as a language model is trained; without it the
    model has no reason to do anything useful at the context's positions, and no head develops
    an attention sink. The answer part keeps the few recall targets from drowning among the ~60
    random tokens of a sequence.
    """
    return next_token_loss(logits, batch.tokens) + answer_loss(logits, batch)


@torch.no_grad()
def recall_accuracy(model: torch.nn.Module, batch: RecallBatch, chunk: int = 512) -> Tuple[float, float]:
    """Return ``(accuracy, loss)`` of ``model`` on ``batch`` with the full cache.

    accuracy: the fraction of answers whose arg-max prediction is right; loss: their mean
    cross-entropy in nats. Runs the batch in chunks of ``chunk`` sequences on the model's device.
    """
    correct, loss_sum, count = 0, 0.0, 0
    device = model.device
    for start in range(0, batch.tokens.shape[0], chunk):
        rows = slice(start, start + chunk)
        part = RecallBatch(batch.tokens[rows], batch.context_length, batch.answer_positions,
                           batch.answers[rows], batch.queried_pairs[rows]).to(device)
        logits, _ = model(part.tokens)
        picked = logits[:, part.answer_positions]
        correct += int((picked.argmax(dim=-1) == part.answers).sum())
        loss_sum += float(answer_loss(logits, part)) * part.answers.numel()
        count += part.answers.numel()
    return correct / count, loss_sum / count
