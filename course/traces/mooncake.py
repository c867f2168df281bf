"""Mooncake's published trace: the loader of its JSONL format, and a synthetic stand-in offline.

Used in notebooks 03, 04, 05 and 06 (through ``course.traces``).
"""

from __future__ import annotations

import contextlib
import gzip
import http.client
import json
import math
import os
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator

from course.traces.request import TOO_LARGE, Request, _check_count, _is_int
from course.traces.synthetic import multi_tenant

MOONCAKE_TRACE_URL = (
    "https://raw.githubusercontent.com/kvcache-ai/Mooncake/main/"
    "FAST25-release/traces/synthetic_trace.jsonl"
)
"""Mooncake's published synthetic trace (FAST 2025, ``synthetic_trace.jsonl``): one JSON object per line."""

_MOONCAKE_KEYS = ("timestamp", "input_length", "output_length", "hash_ids")


_INT64 = (-(2**63), 2**63)  # The ids the replay engine and libCacheSim store: 64-bit signed integers.


def _is_url(path_or_url: str) -> bool:
    return path_or_url.startswith(("http://", "https://"))


def _read_lines(path_or_url: str, timeout: float) -> Iterator[tuple[int, str]]:
    """Yield the numbered text lines of a local file or of an http(s) URL as they come, gzip-compressed or not, with
    or without a UTF-8 byte-order mark: a caller that stops early (``load_mooncake``'s ``limit``) reads no further.

    A download whose body ends before the length its headers declared raises ConnectionError, even where the bytes
    that came end in a part of a line or of a gzip stream (which would otherwise read as a malformed file)."""
    if not _is_url(path_or_url):
        with open(path_or_url, "rb") as handle:
            yield from _decoded_lines(handle, path_or_url)
        return
    # A connection that drops part-way raises http.client.IncompleteRead, which is not an OSError.
    failures = (urllib.error.URLError, OSError, ValueError, http.client.HTTPException)
    try:
        response = urllib.request.urlopen(path_or_url, timeout=timeout)
    except failures as exc:
        if isinstance(exc, urllib.error.HTTPError):
            exc.close()  # The error holds the server's answer, and its socket, as long as anyone keeps the error.
        raise ConnectionError(f"could not download the trace from {path_or_url}: {exc}") from exc

    def cut_short() -> ConnectionError | None:
        missing = response.length  # What the declared length still expects, once the body has ended.
        return ConnectionError(f"could not download the trace from {path_or_url}: the connection closed {missing} "
                               "bytes before the end") if missing else None

    with response:
        lines = _decoded_lines(response, path_or_url, cut_short)
        while True:
            try:
                line = next(lines)
            except StopIteration:
                error = cut_short()
                if error:
                    raise error from None
                return
            except _Unreadable:  # The file at fault, unless the download ended early.
                error = cut_short()
                if error:
                    raise error from None
                raise
            except (OSError, http.client.HTTPException) as exc:
                raise ConnectionError(f"could not download the trace from {path_or_url}: {exc}") from exc
            yield line


class _Unreadable(Exception):
    """A trace file that is not gzip or UTF-8 text as it claims (`_decoded_lines`); the message names it."""


class _Prefixed:
    """A binary stream whose first bytes were already read (``head``): what ``gzip.GzipFile`` reads from. Each read
    returns what has come (``read1``), so that a slow download's lines are read as they arrive."""

    def __init__(self, head: bytes, stream) -> None:
        self.head, self.stream = head, stream

    def read(self, size: int = -1) -> bytes:
        if self.head:
            cut = len(self.head) if size < 0 else size
            head, self.head = self.head[:cut], self.head[cut:]
            return head
        return self.stream.read1(size if size > 0 else 1 << 16)


def _decoded_lines(stream, name: str, cut_short=lambda: None) -> Iterator[tuple[int, str]]:
    """The numbered lines of a binary stream of UTF-8 text, gunzipped first if it starts with gzip's magic number.

    A line ends at a newline (a carriage return before it is dropped; a lone one also ends a line, as old Mac files
    have it). A last line without a newline is yielded only when ``cut_short()`` says that nothing is missing."""
    head = stream.read1(1 << 16)
    if head == b"\x1f":  # One byte came: the rest of gzip's magic number may follow.
        head += stream.read1(1 << 16)
    source = _Prefixed(head, stream)
    if head[:2] == b"\x1f\x8b":  # gzip's magic number: a .jsonl.gz file.
        source = _Prefixed(b"", gzip.GzipFile(fileobj=source))  # type: ignore[arg-type]
    number = 0
    try:
        for raw, ended in _split_lines(source.read):
            if not ended and cut_short():
                return  # The caller raises the download's error.
            for piece in raw.removesuffix(b"\r").split(b"\r") if raw else [raw]:
                number += 1
                try:
                    yield number, piece.decode("utf-8-sig" if number == 1 else "utf-8")
                except UnicodeDecodeError as exc:
                    raise _Unreadable(f"{name}, line {number}: not UTF-8 text (byte {exc.start} of the line is "
                                      f"{piece[exc.start]:#04x}); a Mooncake trace is JSON lines in UTF-8") from None
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise _Unreadable(f"{name}: a gzip file that cannot be read ({exc})") from None


def _split_lines(read) -> Iterator[tuple[bytes, bool]]:
    """Each line of the chunks that ``read()`` returns (b"" at the end), without its newline, as soon as it has
    come, and whether a newline ended it (the last line may have none)."""
    parts: list[bytes] = []  # The line so far: joined once, so that a long line costs no more than its length.
    while chunk := read():
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            parts.append(chunk[start:end])
            yield b"".join(parts), True
            parts.clear()
            start = end + 1
        if start < len(chunk):
            parts.append(chunk[start:])
    if parts:
        yield b"".join(parts), False


def _parse_mooncake_line(line: str, where: str) -> Request:
    """Parse one JSONL line of a Mooncake trace; ``where`` names the line in error messages."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not valid JSON ({exc.msg})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(record).__name__}")
    missing = [key for key in _MOONCAKE_KEYS if key not in record]
    if missing:
        raise ValueError(f"{where}: missing key(s) {missing}")
    timestamp = record["timestamp"]
    if isinstance(timestamp, bool) or not isinstance(timestamp, (int, float)) or not math.isfinite(timestamp):
        raise ValueError(f"{where}: timestamp must be a finite number, got {timestamp!r}")
    for key in ("input_length", "output_length"):
        value = record[key]
        if not _is_int(value) or value < 0:
            raise ValueError(f"{where}: {key} must be a non-negative int, got {value!r}")
    hash_ids = record["hash_ids"]
    if not isinstance(hash_ids, list):
        raise ValueError(f"{where}: hash_ids must be a list of ints, got {type(hash_ids).__name__}")
    for index, block in enumerate(hash_ids):
        if not _is_int(block):
            raise ValueError(f"{where}: hash_ids must be a list of ints; hash_ids[{index}] is {block!r}")
        if not _INT64[0] <= block < _INT64[1]:
            raise ValueError(f"{where}: hash_ids[{index}] = {block}: {TOO_LARGE}")
    return Request(
        hash_ids=tuple(hash_ids),
        timestamp=float(timestamp),
        input_length=record["input_length"],
        output_length=record["output_length"],
    )


def load_mooncake(
    path_or_url: str, limit: int | None = None, timeout: float = 30.0
) -> list[Request]:
    """Load a Mooncake-format JSONL trace from a local path or an http(s) URL.

    Each non-blank line is an object with ``timestamp`` (a finite number), ``input_length``,
    ``output_length`` and ``hash_ids`` (a list of ints that fit in 64 signed bits). At most ``limit``
    requests are returned (all when None), in the file's order, which is the order they are replayed
    in: timestamps are kept, not sorted. A gzip-compressed file and a UTF-8 byte-order mark are read
    too. Raises ValueError naming the line number for a malformed line (or the file, for one that is
    not UTF-8 text), ConnectionError when a download fails, and FileNotFoundError for a missing
    file. The file is read as it is parsed: with a ``limit``, reading stops at the line of the last
    request wanted (a gzip file's checksum, at its end, is then not checked). Used in notebooks 03-06.
    """
    if isinstance(path_or_url, os.PathLike):
        path_or_url = os.fspath(path_or_url)
    if not isinstance(path_or_url, str):
        raise TypeError(f"path_or_url must be a str or a path, got {type(path_or_url).__name__}")
    if not _is_url(path_or_url):
        path_or_url = os.path.expanduser(path_or_url)
    if limit is not None:
        limit = _check_count("limit", limit, 0)
    requests: list[Request] = []
    if limit == 0:
        if not _is_url(path_or_url):
            open(path_or_url, "rb").close()  # A missing file is an error whatever the limit; nothing is read.
        return requests
    with contextlib.closing(_read_lines(path_or_url, timeout)) as lines:
        try:
            for number, line in lines:
                # Only what JSON calls whitespace: a line of other blank characters is a malformed line.
                if line.strip(" \t\r\n"):
                    requests.append(_parse_mooncake_line(line, f"{path_or_url}, line {number}"))
                    if len(requests) == limit:
                        break  # The rest of the file is not read.
        except _Unreadable as exc:
            raise ValueError(str(exc)) from None
    return requests


def mooncake_or_synthetic(
    limit: int | None = None, timeout: float = 5.0
) -> tuple[list[Request], str]:
    """Return Mooncake's published synthetic trace, or a stand-in generated here when it cannot be downloaded.

    Mooncake (FAST 2025) published ``synthetic_trace.jsonl``, a synthetic trace in its own format;
    the second value says whether that file or the stand-in came back (it starts with "Mooncake"
    for the published file and with "SYNTHETIC stand-in" for the generated one). The stand-in has
    the published trace's shape: 3,993
    requests (or ``limit``), about 30 blocks per request, with shared system prompts and
    multi-turn reuse (``chat_sessions`` mixed with ``zipf_documents``, seed 0). Used in
    notebooks 03-06.
    """
    try:
        trace = load_mooncake(MOONCAKE_TRACE_URL, limit=limit, timeout=timeout)
        if trace or limit == 0:
            return trace, (f"Mooncake's published synthetic trace ({len(trace)} requests) downloaded from "
                           f"{MOONCAKE_TRACE_URL}")
        reason = f"{MOONCAKE_TRACE_URL} held no request"
    except (ConnectionError, ValueError) as exc:
        reason = str(exc)
    count = 3993 if limit is None else _check_count("limit", limit, 0)
    trace = multi_tenant(
        {
            "chat": {"kind": "chat_sessions", "num_sessions": (count + 3) // 4, "turns": 2,
                     "system_prompts": 8, "system_prompt_blocks": 12, "blocks_per_turn": 8},
            "documents": {"kind": "zipf_documents", "num_requests": count // 2,
                          "num_documents": 2000, "blocks_per_document": 24,
                          "system_prompt_blocks": 4, "alpha": 0.9},
        },
        seed=0,
    )[:count]
    trace = [Request(r.hash_ids, r.timestamp, r.input_length, r.output_length) for r in trace]
    return trace, (
        f"SYNTHETIC stand-in ({len(trace)} requests) generated by course.traces in the Mooncake format, "
        f"not Mooncake's published synthetic trace: the download failed ({reason})"
    )
