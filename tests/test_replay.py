"""Tests of course.replay: built-in policies, custom policy objects, libCacheSim, the LRU curve."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course import replay as R
from course import traces

# Small traces: lists of requests, each a list of block ids from a small alphabet.
small_traces = st.lists(st.lists(st.integers(0, 12), min_size=0, max_size=6), max_size=25)


def reference_replay(trace: list[list[int]], capacity: int, policy: str) -> tuple[int, int]:
    """Return (hits, prefix hits) of a deliberately naive simulator, for cross-checking."""
    cache: dict[int, list[int]] = {}  # block -> [use_count, last_access_step, inserted_step]
    step = hits = prefix = 0
    for request in trace:
        leading = True
        for block in request:
            if block in cache:
                hits += 1
                prefix += leading
                cache[block][0] += 1
                cache[block][1] = step
            else:
                leading = False
                if len(cache) >= capacity:
                    if policy == "lru":
                        victim = min(cache, key=lambda b: cache[b][1])
                    elif policy == "lfu":
                        victim = min(cache, key=lambda b: (cache[b][0], cache[b][1], b))
                    else:
                        victim = min(cache, key=lambda b: cache[b][2])
                    del cache[victim]
                cache[block] = [1, step, step]
            step += 1
    return hits, prefix


def seeded_trace(seed: int, requests: int = 60, alphabet: int = 40) -> list[list[int]]:
    """A random trace with shared prefixes: requests are prefixes of a few random chains."""
    rng = random.Random(seed)
    chains = [[rng.randrange(alphabet) for _ in range(12)] for _ in range(5)]
    out = []
    for _ in range(requests):
        chain = rng.choice(chains)
        out.append(chain[: rng.randint(1, 12)] + [rng.randrange(alphabet * 3) for _ in range(2)])
    return out


class StudentLRU:
    """An LRU written the way notebook 02's students write it, over BlockRecord-like objects."""

    def select_victim(self, sequences, protected=frozenset()):
        candidates = [s for s in sequences.values() if s.seq_id not in protected]
        return min(candidates, key=lambda s: (s.last_access_step, s.seq_id)).seq_id


class StudentLFU:
    """An LFU over records: min (use_count, last_access_step)."""

    def select_victim(self, sequences, protected=frozenset()):
        candidates = [s for s in sequences.values() if s.seq_id not in protected]
        return min(candidates, key=lambda s: (s.use_count, s.last_access_step)).seq_id


@settings(max_examples=60, deadline=None)
@given(trace=small_traces, capacity=st.integers(1, 8),
       policy=st.sampled_from(["lru", "lfu", "fifo"]))
def test_builtins_match_naive_simulator(trace, capacity, policy) -> None:
    result = R.replay(trace, capacity, policy)
    assert (result.hits, result.prefix_hit_blocks) == reference_replay(trace, capacity, policy)
    assert result.hits + result.misses == result.references == sum(map(len, trace))
    assert result.evictions == max(0, result.misses - capacity)
    assert result.request_hits.sum() == result.hits
    assert result.request_prefix_hits.sum() == result.prefix_hit_blocks


@settings(max_examples=60, deadline=None)
@given(trace=small_traces, capacities=st.lists(st.integers(1, 15), min_size=1, max_size=5))
def test_one_pass_curve_equals_separate_replays(trace, capacities) -> None:
    curve = R.lru_hit_ratio_curve(trace, capacities)
    for capacity in capacities:
        single = R.replay(trace, capacity, "lru")
        point = curve[capacity]
        assert (point.hits, point.misses, point.evictions, point.prefix_hit_blocks) == (
            single.hits, single.misses, single.evictions, single.prefix_hit_blocks)


@settings(max_examples=40, deadline=None)
@given(trace=small_traces, capacity=st.integers(1, 8))
def test_belady_is_an_upper_bound_and_student_lru_matches(trace, capacity) -> None:
    best = R.replay(trace, capacity, "belady").hits
    for policy in ("lru", "lfu", "fifo"):
        assert R.replay(trace, capacity, policy).hits <= best
    builtin = R.replay(trace, capacity, "lru")
    student = R.replay(trace, capacity, StudentLRU())
    assert (student.hits, student.prefix_hit_blocks, student.evictions) == (
        builtin.hits, builtin.prefix_hit_blocks, builtin.evictions)


@settings(max_examples=40, deadline=None)
@given(blocks=st.lists(st.integers(0, 12), max_size=60), capacity=st.integers(1, 8))
def test_student_lfu_matches_builtin_on_single_block_requests(blocks, capacity) -> None:
    # With one block per request nothing is ever protected, so the two LFUs must agree exactly.
    # (With longer requests they may differ: built-in LFU may evict a block the current request
    # just inserted, which protection forbids.)
    trace = [[b] for b in blocks]
    student = R.replay(trace, capacity, StudentLFU())
    builtin = R.replay(trace, capacity, "lfu")
    assert (student.hits, student.evictions) == (builtin.hits, builtin.evictions)


def test_lru_and_lfu_on_a_known_trace() -> None:
    trace = [[1, 2, 3], [1, 4], [1, 2], [5, 1]]
    # LRU, capacity 3: hit 1; 4 evicts 2; miss 2 (evicts 3); 5 evicts 4; hit 1.
    lru = R.replay(trace, 3, "lru")
    assert (lru.hits, lru.prefix_hit_blocks, lru.evictions) == (3, 2, 3)
    # LFU keeps the twice-used block 1 and evicts the oldest single-use block.
    lfu = R.replay(trace, 3, "lfu")
    assert lfu.hits == 3
    assert R.replay([[1, 2, 3, 1, 4, 5, 1, 2, 3, 4, 5]], 3, "belady").hits == 4
    assert R.replay(trace, 3, "lru", tokens_per_block=512).prefix_hit_tokens == 1024


def test_custom_policy_sees_records_and_protection() -> None:
    seen = []

    class Spy:
        def select_victim(self, sequences, protected=frozenset()):
            record = next(iter(sequences.values()))
            assert isinstance(record.seq_id, str) and record.num_blocks() == 1
            assert record.block_table == [int(record.seq_id)] and record.num_tokens == 16
            seen.append((sorted(sequences), sorted(protected)))
            return min(set(sequences) - protected)

    R.replay([[1, 2], [3, 4]], 2, Spy(), tokens_per_block=16)
    # Request 2: inserting 3 evicts from {1, 2}; inserting 4 must spare 3 (just used).
    assert seen == [(["1", "2"], []), (["2", "3"], ["3"])]


def test_custom_policy_errors_are_clear() -> None:
    class Bad:
        def select_victim(self, sequences, protected=frozenset()):
            return "999"

    class EvictsProtected:
        def select_victim(self, sequences, protected=frozenset()):
            return next(iter(protected)) if protected else next(iter(sequences))

    with pytest.raises(ValueError, match="not the seq_id of a cached block"):
        R.replay([[1, 2, 3]], 2, Bad())
    with pytest.raises(ValueError, match="protected"):
        R.replay([[1, 2], [3, 4]], 2, EvictsProtected())


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown policy"):
        R.replay([[1]], 2, "mru")
    with pytest.raises(TypeError, match="select_victim"):
        R.replay([[1]], 2, 42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="capacity"):
        R.replay([[1]], 0, "lru")
    with pytest.raises(TypeError, match="capacity"):
        R.replay([[1]], 2.5, "lru")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        R.replay([["a"]], 2, "lru")  # type: ignore[list-item]
    with pytest.raises(TypeError, match="capacities"):
        R.lru_hit_ratio_curve([[1]], 5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown libCacheSim policy"):
        R.replay([[1]], 2, "lcs:Nope")
    with pytest.raises(ValueError, match="needs capacity"):
        R.replay([[1]], 2, "lcs:S3FIFO")


def test_empty_trace() -> None:
    assert R.replay([], 4, "belady").hit_ratio == 0.0
    assert R.lru_hit_ratio_curve([[], []], [1, 2])[2].hits == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("capacity", [1, 3, 10, 25])
def test_lru_and_belady_equal_libcachesim(seed: int, capacity: int) -> None:
    pytest.importorskip("libcachesim")
    trace = seeded_trace(seed)
    for ours, theirs in (("lru", "lcs:LRU"), ("belady", "lcs:Belady"), ("fifo", "lcs:FIFO")):
        a, b = R.replay(trace, capacity, ours), R.replay(trace, capacity, theirs)
        assert (a.hits, a.prefix_hit_blocks, a.evictions) == (
            b.hits, b.prefix_hit_blocks, b.evictions), (ours, theirs)


def test_libcachesim_other_policies_run() -> None:
    pytest.importorskip("libcachesim")
    trace = traces.zipf_documents(200, 30, 4, 2, 1.0, seed=0)
    for name in ("ARC", "S3FIFO", "Sieve"):
        result = R.replay(trace, 40, f"lcs:{name}")
        assert 0 < result.hits < result.references
        assert result.hits <= R.replay(trace, 40, "belady").hits


def test_loop_defeats_lru() -> None:
    trace = traces.loop(50, 30, 5, seed=0)
    assert R.replay(trace, 20, "lru").hits == 0
    assert R.replay(trace, 20, "belady").hits > 0


def test_progress_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COURSE_AUTOGRADE", raising=False)
    assert not R.progress_enabled(1000)
    assert R.progress_enabled(1_000_000)
    assert R.progress_enabled(5, progress=True)
    monkeypatch.setenv("COURSE_AUTOGRADE", "1")
    assert not R.progress_enabled(1_000_000)


def test_progress_bar_does_not_change_results(capsys: pytest.CaptureFixture[str]) -> None:
    trace = seeded_trace(3)
    assert R.replay(trace, 5, "lru", progress=True).hits == R.replay(trace, 5, "lru").hits
    assert R.replay(trace, 5, "lru", progress=False).hits == R.replay(trace, 5, "lru").hits
