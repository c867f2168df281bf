"""Tests of course.traces: generators, the Mooncake loader and flatten."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from course import traces
from course.traces import Request, mooncake

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACE = REPO.parent / "shared" / "traces" / "mooncake_synthetic_trace.jsonl"


def write_jsonl(path: Path, lines: list[str]) -> str:
    """Write raw lines to ``path`` and return it as a str."""
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def good_line(hash_ids: list[int], timestamp: int = 0) -> str:
    """Return one well-formed Mooncake JSONL line."""
    return json.dumps({"timestamp": timestamp, "input_length": 512 * len(hash_ids),
                       "output_length": 3, "hash_ids": hash_ids})


def test_request_converts_list_and_rejects_bad_fields() -> None:
    assert Request([1, 2]).hash_ids == (1, 2)
    with pytest.raises(TypeError):
        Request("abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Request((1.5,))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="input_length"):
        Request((1,), input_length=-1)


@pytest.mark.parametrize("make", [
    lambda s: traces.zipf_documents(50, 10, 4, 3, 1.0, s),
    lambda s: traces.loop(20, 30, 7, s),
    lambda s: traces.chat_sessions(6, 3, 2, 4, 2, s),
])
def test_generators_are_seeded_and_deterministic(make) -> None:
    assert make(1) == make(1)
    assert all(isinstance(r, Request) for r in make(1))


def test_zipf_documents_shape_and_popularity() -> None:
    trace = traces.zipf_documents(2000, 20, 5, 3, 1.2, seed=0)
    assert len(trace) == 2000
    for request in trace:
        assert request.hash_ids[:3] == (0, 1, 2)
        assert len(request.hash_ids) == 8
        first = request.hash_ids[3]
        assert (first - 3) % 5 == 0 and request.hash_ids[3:] == tuple(range(first, first + 5))
    counts = np.bincount([(r.hash_ids[3] - 3) // 5 for r in trace], minlength=20)
    assert counts[0] > counts[5] > counts[19]


def test_loop_is_a_cycle() -> None:
    flat = traces.flatten(traces.loop(10, 7, 3, seed=4))
    assert len(set(flat.tolist())) == 7
    assert np.array_equal(flat[7:], flat[:-7])


def test_chat_sessions_grow_by_one_turn() -> None:
    trace = traces.chat_sessions(num_sessions=5, turns=4, system_prompts=2,
                                 system_prompt_blocks=3, blocks_per_turn=2, seed=7)
    assert len(trace) == 20
    by_session: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
    for request in trace:
        # The first new turn's ids identify the session.
        by_session.setdefault(request.hash_ids[3:5], []).append(request.hash_ids)
    assert len(by_session) == 5
    for turns in by_session.values():
        assert [len(t) for t in turns] == [5, 7, 9, 11]
        for earlier, later in zip(turns, turns[1:]):
            assert later[: len(earlier)] == earlier
        assert turns[0][:3] in ((0, 1, 2), (3, 4, 5))


def test_multi_tenant_tags_and_never_shares_blocks() -> None:
    docs = traces.zipf_documents(30, 5, 3, 2, 1.0, seed=1)
    merged = traces.multi_tenant(
        {"a": docs, "b": {"kind": "loop", "num_requests": 20, "loop_blocks": 9,
                          "blocks_per_request": 2}},
        seed=3,
    )
    assert len(merged) == 50
    assert merged == traces.multi_tenant(
        {"a": docs, "b": {"kind": "loop", "num_requests": 20, "loop_blocks": 9,
                          "blocks_per_request": 2}}, seed=3)
    blocks = {t: {h for r in merged if r.tenant == t for h in r.hash_ids} for t in ("a", "b")}
    assert blocks["a"] and blocks["b"] and not blocks["a"] & blocks["b"]
    # Each tenant keeps its own request order and prefix structure.
    assert [r.hash_ids for r in merged if r.tenant == "a"] == [r.hash_ids for r in docs]
    with pytest.raises(ValueError, match="kind"):
        traces.multi_tenant({"a": {"kind": "nope"}}, seed=0)
    with pytest.raises(ValueError, match=">= 0"):
        traces.multi_tenant({"a": [Request((-1,))]}, seed=0)


def test_flatten_accepts_requests_and_plain_lists() -> None:
    flat = traces.flatten([Request((3, 4)), [5], (), np.array([6, 7])])
    assert flat.dtype == np.int64 and flat.tolist() == [3, 4, 5, 6, 7]
    assert traces.flatten([]).shape == (0,)
    with pytest.raises(TypeError):
        traces.flatten([["a"]])  # type: ignore[list-item]


def test_load_mooncake_reads_lines_and_limit(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [good_line([0, 1, 2]), "", good_line([0, 1, 7], 5)])
    trace = traces.load_mooncake(path)
    assert [r.hash_ids for r in trace] == [(0, 1, 2), (0, 1, 7)]
    assert trace[1].timestamp == 5.0 and trace[1].input_length == 1536
    assert trace[0].output_length == 3
    assert len(traces.load_mooncake(path, limit=1)) == 1


@pytest.mark.parametrize("bad, message", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "JSON object"),
    (json.dumps({"timestamp": 0, "input_length": 1, "output_length": 1}), "missing key"),
    (json.dumps({"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1, "x"]}),
     "hash_ids"),
    (json.dumps({"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": 3}),
     "hash_ids"),
    (json.dumps({"timestamp": 0, "input_length": -1, "output_length": 1, "hash_ids": []}),
     "input_length"),
    (json.dumps({"timestamp": "x", "input_length": 1, "output_length": 1, "hash_ids": []}),
     "timestamp"),
])
def test_load_mooncake_names_the_bad_line(tmp_path: Path, bad: str, message: str) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [good_line([1]), good_line([2]), bad])
    with pytest.raises(ValueError, match=f"line 3: .*{message}"):
        traces.load_mooncake(path)


def test_load_mooncake_download_failure_is_clear() -> None:
    with pytest.raises(ConnectionError, match="could not download"):
        traces.load_mooncake("http://127.0.0.1:9/trace.jsonl", timeout=2)


def test_mooncake_or_synthetic_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    # The URL is read where mooncake_or_synthetic is defined, so it is patched there.
    monkeypatch.setattr(mooncake, "MOONCAKE_TRACE_URL", "http://127.0.0.1:9/none.jsonl")
    trace, description = traces.mooncake_or_synthetic(limit=100, timeout=2)
    assert len(trace) == 100 and "SYNTHETIC" in description
    assert 15 <= np.mean([len(r.hash_ids) for r in trace]) <= 40


@pytest.mark.skipif(not SHARED_TRACE.exists(), reason="shared Mooncake trace not present")
def test_real_mooncake_file() -> None:
    trace = traces.load_mooncake(str(SHARED_TRACE))
    assert len(trace) == 3993
    assert trace[0].hash_ids[:3] == (0, 1, 2) and trace[0].input_length == 40160


def test_load_mooncake_reads_gzip_a_byte_order_mark_and_paths(tmp_path: Path) -> None:
    """Other real traces (red team 2026-12-07): a .jsonl.gz file and a file saved with a UTF-8 byte-order mark load as
    the plain file does; a pathlib.Path is a path like its str."""
    import gzip

    text = "\n".join([good_line([0, 1, 2]), good_line([0, 1, 7], 5)]) + "\n"
    (tmp_path / "t.jsonl.gz").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + text.encode())
    for path in (str(tmp_path / "t.jsonl.gz"), str(tmp_path / "bom.jsonl"), tmp_path / "bom.jsonl"):
        assert [r.hash_ids for r in traces.load_mooncake(path)] == [(0, 1, 2), (0, 1, 7)], path
    (tmp_path / "latin1.jsonl").write_bytes(text.encode() + b'{"note": "caf\xe9"}\n')
    with pytest.raises(ValueError, match=r"latin1.jsonl, line 3: not UTF-8 text \(byte 13 of the line is 0xe9\)"):
        traces.load_mooncake(tmp_path / "latin1.jsonl")
    (tmp_path / "cut.jsonl.gz").write_bytes(gzip.compress(text.encode())[:-12])
    with pytest.raises(ValueError, match="cut.jsonl.gz: a gzip file that cannot be read"):
        traces.load_mooncake(tmp_path / "cut.jsonl.gz")


def test_load_mooncake_with_a_limit_reads_no_further_than_it_needs(tmp_path: Path) -> None:
    """A limit stopped nothing from being read: the whole file (or download) was read and decoded before its first
    lines were parsed (red team 2026-12-07). Now a line past the limit is never looked at, and a download that has
    sent the requests asked for is not waited on for the rest."""
    path = write_jsonl(tmp_path / "t.jsonl", [good_line([0, 1]), good_line([0, 2]), "not json", "\xff"])
    assert [r.hash_ids for r in traces.load_mooncake(path, limit=2)] == [(0, 1), (0, 2)]
    with pytest.raises(ValueError, match="line 3: not valid JSON"):
        traces.load_mooncake(path, limit=3)
    line = (good_line([0, 1]) + "\n").encode()
    server, url = _serve_once(line * 10, declared=100_000)  # The other 99,000 bytes never come.
    try:
        assert len(traces.load_mooncake(url, limit=5, timeout=10)) == 5
    finally:
        server.server_close()
    # Review of the streaming reader (2026-12-07): the line after the limit was still read and decoded, and a download
    # was read in blocks of 8 KiB, so that one that stalled after the lines wanted timed out.
    raw = tmp_path / "raw.jsonl"
    raw.write_bytes((good_line([0, 1]) + "\n" + good_line([0, 2]) + "\n").encode() + b"\xff\n")
    assert len(traces.load_mooncake(raw, limit=2)) == 2
    raw.write_bytes(b"\xff\n")
    assert traces.load_mooncake(raw, limit=0) == []
    for sent in (line * 3, line * 3 + b'{"timest'):
        server, url = _serve_once(sent, declared=100_000, hold_s=20)
        try:
            started = time.monotonic()
            assert len(traces.load_mooncake(url, limit=3, timeout=10)) == 3
            assert time.monotonic() - started < 5, "waited for the rest of a download it did not need"
        finally:
            server.server_close()
    body = b"\x1f\x8b not gzip at all\n"
    server, url = _serve_once(body, declared=len(body))
    try:
        with pytest.raises(ValueError, match="a gzip file that cannot be read"):
            traces.load_mooncake(url, timeout=10)
    finally:
        server.server_close()


def test_a_line_of_blank_characters_that_json_does_not_allow_is_malformed(tmp_path: Path) -> None:
    """str.strip() took lines of \\x1c or U+2028 for blank lines and skipped them; JSON allows only spaces, tabs and
    line ends between values (review of the streaming reader, 2026-12-07)."""
    for blank in ("\x1c", "\u2028", "\u3000"):
        path = write_jsonl(tmp_path / "t.jsonl", [good_line([0]), "  \t", blank, good_line([1])])
        with pytest.raises(ValueError, match="line 3: not valid JSON"):
            traces.load_mooncake(path)


@pytest.mark.parametrize("record, message", [
    ({"timestamp": float("nan"), "hash_ids": [1]}, "timestamp must be a finite number"),
    ({"timestamp": float("inf"), "hash_ids": [1]}, "timestamp must be a finite number"),
    ({"timestamp": 0, "hash_ids": [1, 2.0]}, r"hash_ids\[1\] is 2.0"),
    ({"timestamp": 0, "hash_ids": [1, 2**64 - 1]}, r"hash_ids\[1\] = 18446744073709551615: .*64 signed bits"),
    ({"timestamp": 0, "hash_ids": [-(2**63) - 1]}, "64 signed bits"),
])
def test_load_mooncake_names_a_bad_timestamp_or_hash_id(tmp_path: Path, record: dict, message: str) -> None:
    """A NaN timestamp was taken; an unsigned 64-bit hash id loaded, then failed deep inside the replay engine with an
    OverflowError that named no id (red team 2026-12-07)."""
    line = json.dumps({"input_length": 1, "output_length": 1, **record})
    with pytest.raises(ValueError, match=f"line 2: .*{message}"):
        traces.load_mooncake(write_jsonl(tmp_path / "bad.jsonl", [good_line([1]), line]))


def test_hash_ids_past_64_signed_bits_are_refused_clearly_where_the_engine_stores_them() -> None:
    from course.replay.reuse import flat_references

    with pytest.raises(ValueError, match="64 signed bits"):
        traces.flatten([Request((1, 2**63))])
    with pytest.raises(ValueError, match="64 signed bits"):
        flat_references([(1, 2**63)])
    assert traces.flatten([Request((2**63 - 1, -(2**63)))]).tolist() == [2**63 - 1, -(2**63)]


def _serve_once(body: bytes, declared: int, hold_s: float = 0.0):
    """A local HTTP server that answers one GET with ``declared`` as its Content-Length and ``body``, then keeps the
    connection open for ``hold_s`` seconds (a download that stalls); its URL."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", str(declared))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            time.sleep(hold_s)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.handle_request, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}/trace.jsonl"


def test_a_download_that_stops_part_way_or_holds_nothing_falls_back_to_the_stand_in(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection that closes before the declared length raised http.client.IncompleteRead, which is not an OSError,
    and stopped notebooks 03, 06 and 08 instead of falling back; an empty download counted as the published trace
    (red team 2026-12-07)."""
    line = (good_line([0, 1]) + "\n").encode()
    server, url = _serve_once(line * 10, declared=100_000)
    try:
        with pytest.raises(ConnectionError, match="could not download"):
            traces.load_mooncake(url, timeout=10)
    finally:
        server.server_close()
    # A body cut before its declared length, in the middle of a line or of a gzip stream, is a failed download, not a
    # malformed file (review of the streaming reader, 2026-12-07).
    import gzip

    for body in (line * 10 + b'{"timest', gzip.compress(line * 200)[:300]):
        server, url = _serve_once(body, declared=len(body) + 1000)
        try:
            with pytest.raises(ConnectionError, match="1000 bytes before the end"):
                traces.load_mooncake(url, timeout=10)
        finally:
            server.server_close()
    for body, declared in ((line * 10, 100_000), (b"", 0)):
        server, url = _serve_once(body, declared)
        monkeypatch.setattr(mooncake, "MOONCAKE_TRACE_URL", url)
        try:
            trace, description = traces.mooncake_or_synthetic(limit=20, timeout=10)
        finally:
            server.server_close()
        assert len(trace) == 20 and description.startswith("SYNTHETIC stand-in"), description
