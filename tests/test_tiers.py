"""Tests of course.tiers, and of notebook 08's reference ARC against libCacheSim's ARC."""

from __future__ import annotations

import random
import re
from collections import OrderedDict

import pytest
import torch

from course import replay as R
from course import tiers, traces
from grading.authoring.reference import Reference


class SimpleLRU:
    """An LRU tier with the interface of notebook 08: capacity, in, len, hit, insert -> victim or None."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.blocks: OrderedDict[int, None] = OrderedDict()

    def __contains__(self, block: int) -> bool:
        return block in self.blocks

    def __len__(self) -> int:
        return len(self.blocks)

    def hit(self, block: int) -> None:
        self.blocks.move_to_end(block)

    def insert(self, block: int):
        victim = None
        if len(self.blocks) >= self.capacity:
            victim, _ = self.blocks.popitem(last=False)
        self.blocks[block] = None
        return victim


def seeded_trace(seed: int, requests: int = 80) -> list[list[int]]:
    """Requests that share prefixes of a few chains, plus a few fresh blocks each."""
    rng = random.Random(seed)
    chains = [[rng.randrange(60) for _ in range(10)] for _ in range(6)]
    return [rng.choice(chains)[: rng.randint(1, 10)] + [1000 + rng.randrange(300) for _ in range(2)]
            for _ in range(requests)]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("capacity", [1, 5, 40])
def test_replay_tier_of_an_lru_object_equals_the_builtin_lru(seed: int, capacity: int) -> None:
    trace = seeded_trace(seed)
    ours = tiers.replay_tier(trace, SimpleLRU(capacity), tokens_per_block=4)
    builtin = R.replay(trace, capacity, "lru", tokens_per_block=4)
    assert (ours.hits, ours.prefix_hit_blocks, ours.references) == (builtin.hits, builtin.prefix_hit_blocks,
                                                                   builtin.references)
    assert ours.evictions == max(0, ours.misses - capacity) == builtin.evictions
    assert ours.request_hits.tolist() == builtin.request_hits.tolist()
    assert ours.policy == "SimpleLRU" and ours.capacity == capacity
    assert ours.prefix_hit_tokens == 4 * ours.prefix_hit_blocks


def test_replay_tier_refuses_broken_tiers() -> None:
    class NoInsert:
        capacity = 2

        def hit(self, block):
            pass

        def __contains__(self, block):
            return False

        def __len__(self):
            return 0

    with pytest.raises(TypeError, match="insert"):
        tiers.replay_tier([[1]], NoInsert())
    bad = SimpleLRU(2)
    bad.capacity = 0
    with pytest.raises(TypeError, match="capacity"):
        tiers.replay_tier([[1]], bad)

    class Overflowing(SimpleLRU):
        def insert(self, block):
            self.blocks[block] = None

    with pytest.raises(ValueError, match="capacity is 2"):
        tiers.replay_tier([[1, 2, 3]], Overflowing(2))
    with pytest.raises(TypeError, match="tokens_per_block"):
        tiers.replay_tier([[1]], SimpleLRU(2), tokens_per_block=2.0)


class ScriptedCache:
    """A stand-in two-tier cache: block ids below 10 hit the device, 10-19 the host, the rest miss."""

    def __init__(self, block_bytes: int = 8) -> None:
        self.block_bytes = block_bytes
        self.bytes_to_host = 100  # Counters that already moved before the replay.
        self.bytes_to_device = 50

    def serve_request(self, blocks):
        device = sum(b < 10 for b in blocks)
        host = sum(10 <= b < 20 for b in blocks)
        miss = len(blocks) - device - host
        self.bytes_to_device += host * self.block_bytes
        self.bytes_to_host += miss * self.block_bytes
        return device, host, miss


def test_replay_two_tier_collects_per_request_counts_and_bytes() -> None:
    trace = [[1, 2, 15, 30], [], [12, 40, 41], traces.Request((5, 6, 7))]
    result = tiers.replay_two_tier(trace, ScriptedCache(), tokens_per_block=512)
    assert result.device_hits.tolist() == [2, 0, 0, 3]
    assert result.host_hits.tolist() == [1, 0, 1, 0]
    assert result.misses.tolist() == [1, 0, 2, 0]
    assert result.device_hits.dtype == torch.int64 and result.device_hits.device.type == "cpu"
    assert (result.bytes_to_host, result.bytes_to_device) == (3 * 8, 2 * 8), "only what the replay moved"
    assert result.references == 10
    assert result.device_hit_ratio == 0.5 and result.host_hit_ratio == 0.2 and result.hit_ratio == 0.7
    assert result.recomputed_tokens.tolist() == [512, 0, 1024, 0]
    assert result.loaded_tokens.tolist() == [512, 0, 512, 0]
    empty = tiers.replay_two_tier([], ScriptedCache())
    assert empty.references == 0 and empty.hit_ratio == 0.0 and empty.device_hits.shape == (0,)


@pytest.mark.parametrize("answer, error, text", [
    ([1, 0, 0], TypeError, "tuple of three ints"),
    ((1, 0), TypeError, "tuple of three ints"),
    ((True, 0, 0), TypeError, "tuple of three ints"),
    ((1, 1, 0), ValueError, "add up"),
    ((2, -1, 0), ValueError, "add up"),
])
def test_replay_two_tier_refuses_wrong_counts(answer, error, text) -> None:
    class Wrong(ScriptedCache):
        def serve_request(self, blocks):
            return answer

    with pytest.raises(error, match=text):
        tiers.replay_two_tier([[1]], Wrong())


def test_replay_two_tier_refuses_objects_without_the_interface() -> None:
    with pytest.raises(TypeError, match="serve_request"):
        tiers.replay_two_tier([[1]], object())
    cache = ScriptedCache()
    cache.bytes_to_host = 1.5
    with pytest.raises(TypeError, match="bytes_to_host"):
        tiers.replay_two_tier([[1]], cache)


def test_no_progress_bar_while_autograding(monkeypatch, capsys) -> None:
    monkeypatch.setenv("COURSE_AUTOGRADE", "1")
    big = [[i % 50 for i in range(start, start + 40)] for start in range(6000)]
    tiers.replay_tier(big, SimpleLRU(30))
    assert capsys.readouterr().err == ""


@pytest.fixture(scope="module")
def reference_arc():
    """The reference solution of notebook 08's Task 8.2, ARCTier, as a class."""
    namespace: dict = {}
    exec(Reference("08_tiered_cache")["task8_2_ARCTier"], namespace)  # noqa: S102 - our own reference solution.
    return namespace["ARCTier"]


def _arc_trace(seed: int) -> list[int]:
    rng = random.Random(seed)
    alphabet = rng.randint(5, 80)
    hot = rng.randint(1, alphabet)
    return [rng.randrange(hot) if rng.random() < 0.5 else rng.randrange(alphabet) for _ in range(rng.randint(1, 400))]


@pytest.mark.parametrize("seed", range(12))
def test_reference_arc_equals_libcachesim_arc(reference_arc, seed: int) -> None:
    """Megiddo and Modha's ARC, as notebook 08 asks for it, gives libCacheSim's hit counts."""
    pytest.importorskip("libcachesim")
    trace = _arc_trace(seed)
    for capacity in (1, 2, 3, 7, 16, 50):
        ours = tiers.replay_tier([trace], reference_arc(capacity)).hits
        assert ours == R.libcachesim_replay([trace], capacity, "ARC").hits, f"seed {seed}, capacity {capacity}"


def test_reference_arc_equals_libcachesim_on_a_mooncake_format_trace(reference_arc) -> None:
    pytest.importorskip("libcachesim")
    trace = traces.multi_tenant({
        "chat": {"kind": "chat_sessions", "num_sessions": 60, "turns": 3, "system_prompts": 4,
                 "system_prompt_blocks": 6, "blocks_per_turn": 3},
        "docs": {"kind": "zipf_documents", "num_requests": 150, "num_documents": 80, "blocks_per_document": 6,
                 "system_prompt_blocks": 2, "alpha": 0.9},
    }, seed=3)
    for capacity in (20, 80, 300):
        assert (tiers.replay_tier(trace, reference_arc(capacity)).hits
                == R.replay(trace, capacity, "lcs:ARC").hits), capacity


def test_numbers_quoted_in_the_visible_arc_check_are_libcachesims() -> None:
    """Test cell 8.2.5 states libCacheSim's hits on a seeded trace; they must be libCacheSim's."""
    pytest.importorskip("libcachesim")
    import nbformat

    from grading.config import ROOT

    notebook = nbformat.read(ROOT / "source" / "08_tiered_cache" / "08_tiered_cache.ipynb", as_version=4)
    cell = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_task8_2_5_traces")
    visible = cell.source.split("### BEGIN HIDDEN TESTS")[0]
    assert "random.Random(825)" in visible
    listed = visible.split("for capacity, hits in")[1].split("]")[0]
    quoted = [(int(c), int(h)) for c, h in re.findall(r"\((\d+), (\d+)\)", listed)]
    # The same recipe as the cell: a hot set of 20 blocks mixed with 200 colder ones.
    rng = random.Random(825)
    trace = [rng.randrange(20) if rng.random() < 0.6 else 20 + rng.randrange(200) for _ in range(3000)]
    assert quoted == [(c, R.libcachesim_replay([trace], c, "ARC").hits) for c, _ in quoted]
    lru = [R.replay([trace], c, "lru").hits for c, _ in quoted]
    assert f"LRU has {lru[0]}, {lru[1]}, {lru[2]}" in visible


def test_notebook_08_typical_mistakes_lose_points_in_every_part() -> None:
    """The bundled typical_mistakes sample (the first wrong answer of each task) fails every graded part."""
    from grading.authoring.harness import NotebookHarness
    from grading.authoring.samples import load_mutants
    from grading.config import ROOT

    harness = NotebookHarness(ROOT / "source" / "08_tiered_cache" / "08_tiered_cache.ipynb")
    for grade_id, variants in load_mutants("08_tiered_cache").WRONG.items():
        name, answer = next(iter(variants.items()))
        kept = [r.grade_id for r in harness.results(grade_id, answer) if r.passed]
        assert not kept, f"{grade_id}: the typical mistake {name!r} keeps the points of {kept}"
