"""The hashes that CPython's dicts and sets stored for their keys, read from their memory.

A dict stores each key's hash when the key goes in, and never asks for it again: in one process, a ``__hash__`` of
the student's runs when its object is put in a dict or a set, or looked up. When such a dict crosses to the judge,
the judge's copy needs each key's hash too; asked for it, the kernel would run that ``__hash__`` once more, at a
moment one process never does, and code there could tell that it is judged (red team, rounds 16 and 17). So the
kernel sends the hash its dict or set stored, read here, where Python has no way to ask for it. An OrderedDict is
worse: iterating it hashes every key again, to find the key's place in its order; the kernel reads that order here.

The layouts read are CPython's from 3.11 to 3.13 (``Include/internal/pycore_dict.h``: a dict's keys object, its
index table, then entries of hash, key and value; ``Include/cpython/setobject.h``: a set's table of key and hash;
``Objects/odictobject.c``: an OrderedDict's linked nodes of key and hash after its dict).
`LAYOUT_READ` says whether this interpreter is one of them: it is worked out once, by reading dicts and sets whose
hashes are known; elsewhere `stored_hashes` gives None and the kernel hashes the key, as before.

This module runs in the student's kernel (see grading/judge/wire.py).
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from ctypes import c_ssize_t, sizeof, string_at  # Bound as the agent loads: no later change to ctypes reaches here.

_WORD = sizeof(c_ssize_t)
_GENERAL_KEYS = 0  # dk_kind: keys of any type, each entry with its hash (the others hold only strings).
# Types whose hash runs no Python code: Python's numbers, strings and bytes, and a frozenset (whose hash reads the
# hashes it stored for its items).
HASHED_WITHOUT_CODE = frozenset(map(id, (str, bytes, int, float, complex, bool, type(None), frozenset)))


def _words(address: int, count: int) -> memoryview:
    """``count`` machine words at ``address``, copied in one step (no Python code runs between two of them)."""
    return memoryview(string_at(address, count * _WORD)).cast("n")


def _dict_hashes(mapping: dict) -> dict[int, int]:
    # PyDictObject: refcount, type, ma_used, ma_version_tag, ma_keys, ma_values.
    head = _words(id(mapping), 6)
    keys, values = head[4], head[5]
    if values:  # A split table (an instance's __dict__): its keys are strings only.
        return {}
    # PyDictKeysObject: refcount; log2 size, log2 index bytes, kind (a byte each) and a 32-bit version; usable;
    # number of entries; then the index table and the entries.
    fields = string_at(keys + _WORD, 3)
    if fields[2] != _GENERAL_KEYS:
        return {}
    count = _words(keys + 3 * _WORD, 1)[0]
    entries = _words(keys + 4 * _WORD + (1 << fields[1]), 3 * count)
    # An entry whose key went out has no key (3.11) or no value.
    return {entries[at + 1]: entries[at] for at in range(0, 3 * count, 3) if entries[at + 1] and entries[at + 2]}


def _set_hashes(members) -> dict[int, int]:
    # PySetObject: refcount, type, fill, used, mask, table; each entry a key and its hash. A key that went out
    # leaves a dummy entry, whose hash is -1: no hash is (Python makes -1 into -2).
    head = _words(id(members), 6)
    entries = _words(head[5], 2 * (head[4] + 1))
    return {entries[at]: entries[at + 1] for at in range(0, len(entries), 2) if entries[at] and entries[at + 1] != -1}


def _ordered_key_ids(ordered: OrderedDict) -> list[int]:
    # PyODictObject: a dict (six words), then its first node; each node a key, its hash, the next and the previous.
    node, ids = _words(id(ordered) + 6 * _WORD, 1)[0], []
    for _ in range(dict.__len__(ordered)):
        if not node:
            break
        key, _, node, _ = _words(node, 4)
        ids.append(key)
    return ids


def _reads_this_layout() -> bool:
    """Whether dicts and sets of keys with known hashes read back their keys' hashes here."""
    if sys.implementation.name != "cpython" or not (3, 11) <= sys.version_info[:2] <= (3, 13) or _WORD != 8:
        return False

    class Known:
        def __init__(self, code: int) -> None:
            self.code = code

        def __hash__(self) -> int:
            return self.code

    try:
        keys = [Known(code) for code in (7, -5, 1 << 40, 12345)] + [(1, "two"), 3.5]
        gone = Known(99)
        table = {key: index for index, key in enumerate(keys)}
        table[gone] = 0
        del table[gone]  # A deleted entry reads as none.
        members = set(keys)
        members.add(gone)
        members.discard(gone)
        ordered = OrderedDict(table)
        ordered.move_to_end(keys[1])
        ordered.move_to_end(keys[2], last=False)
        del ordered[keys[0]]
        expected = {id(key): hash(key) for key in keys}
        return (all(found == expected for found in (_dict_hashes(table), _set_hashes(members),
                                                    _set_hashes(frozenset(keys))))
                and _ordered_key_ids(ordered) == [id(key) for key in ordered])
    except Exception:  # noqa: BLE001 - any surprise means another layout: the kernel then hashes keys itself.
        return False


LAYOUT_READ = _reads_this_layout()


def stored_hashes(container) -> dict[int, int] | None:
    """``{id(key): hash}`` of what a dict (or OrderedDict), set or frozenset holds, as it stored them; None where
    this interpreter's layout is not the one read here, or ``container`` is none of those exact types."""
    if not LAYOUT_READ:
        return None
    kind = type(container)
    if kind is set or kind is frozenset:
        return _set_hashes(container)
    if kind is dict or kind is OrderedDict:
        return _dict_hashes(container)
    return None


def ordered_keys_and_values(ordered: OrderedDict) -> tuple[list, list]:
    """An OrderedDict's keys and values, in its order. Iterating it hashes each key again, to find the key's place
    in its order (CPython's ``odictobject.c``), so a key's ``__hash__`` of the student's would run for each look at
    it, at every message; where a key's hash may run Python code and this layout is read, the order is read from
    its memory and the items from its dict, with no hash."""
    # Its dict's own iteration hashes nothing.
    if LAYOUT_READ and not set(map(id, map(type, dict.keys(ordered)))) <= HASHED_WITHOUT_CODE:
        items = {id(key): (key, value) for key, value in dict.items(ordered)}
        order = _ordered_key_ids(ordered)
        if len(order) != len(items) or not all(key in items for key in order):
            # Its order and its dict disagree (``dict.__setitem__`` on it changes only the dict, and iterating it
            # would hash the keys): the dict's order stands (red team, round 17).
            order = list(items)
        keys = [items[key][0] for key in order]
        return keys, [items[key][1] for key in order]
    return list(ordered), list(ordered.values())
