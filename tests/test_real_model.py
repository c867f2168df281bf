"""Notebook 07's real-model section, run offline: the functions the notebook calls (course/gpt2.py), end to end on a
small random-weight GPT-2 and a word-level tokenizer built here, with the reference keep functions of notebook 07.

Prefill, eviction, decoding on the pruned cache and perplexity all run; only the weights differ from the notebook's
GPT-2. An API change in ``transformers`` (the cache argument, DynamicCache, attention masks, position ids) fails
here before it reaches a student. About 5 s, most of it importing ``transformers``.
"""

from __future__ import annotations

import math

import pytest

from course import gpt2

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

PROMPT, SCORED = 48, 16


@pytest.fixture(scope="module")
def model_and_tokenizer():
    import torch

    words = sorted(set(gpt2.long_text().split()))
    vocabulary = {"[UNK]": 0, **{word: index + 1 for index, word in enumerate(words)}}
    word_level = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocabulary, unk_token="[UNK]"))
    word_level.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=word_level, unk_token="[UNK]")
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=len(vocabulary), n_positions=128, n_embd=32, n_layer=2, n_head=4,
                                     bos_token_id=0, eos_token_id=0)
    model = transformers.GPT2LMHeadModel._from_config(config, attn_implementation="eager").eval()
    return model, tokenizer


@pytest.fixture(scope="module")
def keeps():
    """The keep functions of notebook 07's reference solutions, wrapped as the notebook wraps the student's."""
    import torch
    import torch.nn.functional as F

    from grading.authoring.reference import Reference

    solutions = Reference("07_token_eviction")
    namespace = {"torch": torch, "F": F}
    for grade_id in ("task7_2_streaming_keep", "task7_3_h2o_keep", "task7_4_snapkv_keep"):
        exec(solutions[grade_id], namespace)
    return gpt2.keep_functions(namespace["streaming_keep"], namespace["h2o_keep"], namespace["snapkv_keep"])


def test_the_section_runs_end_to_end_and_a_full_budget_changes_nothing(model_and_tokenizer, keeps):
    model, tokenizer = model_and_tokenizer
    result = gpt2.eviction_perplexities(model, tokenizer, keeps, budgets=(8, PROMPT), prompt_tokens=PROMPT,
                                        scored_tokens=SCORED)
    assert [(budget, name) for budget, name, _ in result.rows] == [
        (budget, name) for budget in (8, PROMPT) for name in ("StreamingLLM", "H2O", "SnapKV")]
    assert all(math.isfinite(value) and value > 1 for _, _, value in result.rows) and math.isfinite(result.full)
    # Every policy keeps the whole prompt at budget = prompt: decoding on that cache, with the scored tokens at
    # positions PROMPT.., must give the logits of one pass over the whole text.
    for budget, name, value in result.rows:
        if budget == PROMPT:
            assert value == pytest.approx(result.full, rel=1e-4), f"{name} at the full budget"
    small = {name: value for budget, name, value in result.rows if budget == 8}
    assert all(value != pytest.approx(result.full, rel=1e-6) for value in small.values()), small
    assert result.report().splitlines()[0].startswith(f"no eviction: perplexity of the next {SCORED} tokens")


def test_a_keep_mask_of_the_wrong_count_is_refused(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer

    def keeps_one_too_many(attention, budget):
        mask = attention.new_zeros(attention.shape[:-1], dtype=bool)
        mask[..., :budget + 1] = True
        return mask

    with pytest.raises(ValueError, match="positions per head"):
        gpt2.eviction_perplexities(model, tokenizer, {"wrong": keeps_one_too_many}, budgets=(8,), prompt_tokens=PROMPT,
                                   scored_tokens=SCORED)


def test_the_section_says_skipped_without_transformers_or_in_a_headless_run(monkeypatch):
    import importlib.util

    monkeypatch.setenv("COURSE_AUTOGRADE", "1")
    assert gpt2.load_gpt2().startswith("Skipped: a headless or graded run")
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "transformers" else find_spec(name))
    assert gpt2.load_gpt2().startswith("Skipped: the transformers package is not installed")
