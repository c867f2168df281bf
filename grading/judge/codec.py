"""Values to wire trees and back, for one side of the connection (a `peer.Peer`).

Plain data crosses by value; mutable containers and tensors become shared pairs (pairs.py), except a
replay's arguments and results, which are copies made for it and cross as values (`Codec.by_value`); what
is neither is the side's business (`Peer.encode_object` and `Peer.decode_object`: handles,
callbacks, functions of allowed modules). Both walkers count the values of a message and how deep
they nest, and stop with `WireError` past the limits, so that no value makes either side recurse
without a bound. Decoding builds only the exact builtin types named in wire.py.

Whether a new pair is eager or lazy (pairs.py) follows from where it crosses, the same way on both
sides: in a lazy pair's content, or as a ``__dict__`` that comes with an object (`encode_root`),
it is lazy; anywhere else (a request, a reply, an eager pair's content) it is eager. A lazy pair
that crosses where an eager one would is promoted there, its whole content with it (PROMOTE), so
that an eager pair never holds a lazy one.

This module runs in the student's kernel too (see grading/judge/wire.py).
"""

from __future__ import annotations

import gc
import sys
from types import MappingProxyType

import torch

from . import pairs as shared
from .stored import stored_hashes
from .wire import (
    LIMITS,
    OWNS_STORAGE,
    PAIR_TAGS,
    SAME_STORAGE,
    Limits,
    Tag,
    WireError,
    decode_leaf,
    decode_ndarray,
    decode_tensor,
    encode_int,
    encode_leaf,
    encode_ndarray,
    encode_tensor,
    expect,
    numpy_crosses,
    tensor_crosses,
)

_SCALARS = (type(None), bool, float, str, bytes)
# The types a value may have to cross as itself, with no node and no count (an int only within 64 bits).
# Types are looked up by their id: hashing or comparing the type of a student's object would run its metaclass's
# __hash__ or __eq__ (red team, 2026-12-07).
_PLAIN = frozenset(map(id, _SCALARS))
_PLAIN_AND_INT = frozenset(map(id, (*_SCALARS, int)))
_PLAIN_AND_TUPLE = frozenset(map(id, (*_SCALARS, int, tuple)))
_ONLY_INT = frozenset({id(int)})
_PROPERTY_PARTS = tuple(property.__dict__[name] for name in ("fget", "fset", "fdel"))
_PROPERTY_DOC = property.__dict__["__doc__"]
_TUPLE_TAG = Tag.TUPLE
_SMALLEST_INT, _BEYOND_INT = -(1 << 63), 1 << 64
_SEQUENCES = {id(tuple): Tag.TUPLE, id(frozenset): Tag.FROZENSET, id(torch.Size): Tag.SIZE}
_REF, _VIEW, _PROMOTE, _TUPLE = int(Tag.REF), int(Tag.VIEW), int(Tag.PROMOTE), int(Tag.TUPLE)
NEGATIVE, CONJUGATE = 1, 2  # A view's bits (`Codec._encode_pair`): its values negate, or conjugate, its memory.
_UPDATE = int(Tag.UPDATE)
# The tags `Codec._decode_structure` reads, and those of leaves (wire.decode_leaf); any other is an object's.
_STRUCTURES = frozenset(int(tag) for tag in (Tag.FROZENSET, Tag.SIZE, Tag.SLICE, Tag.RANGE, Tag.MAPPINGPROXY,
                                             Tag.PROPERTY, Tag.STATICMETHOD, Tag.CLASSMETHOD))
_LEAVES = frozenset(int(tag) for tag in (Tag.BIGINT, Tag.COMPLEX, Tag.DTYPE, Tag.DEVICE, Tag.ELLIPSIS,
                                         Tag.NOTIMPLEMENTED, Tag.NPSCALAR))
# Errors that decoding data can raise (an unhashable key, a bad slice); they mean a malformed message.
_DATA_ERRORS = (TypeError, ValueError, OverflowError, RuntimeError, IndexError, KeyError)
# What crosses as a copy while `Codec.by_value` is set: what course.checks.replay copies, its steps' and results'.
_COPIES = frozenset((Tag.LIST, Tag.SET, Tag.DICT, Tag.ODICT, Tag.TENSOR))
COPY = 0  # The shared id of a value that crossed as a copy: no pair holds it on either side.


def interned(text: str) -> str:
    """``text``, interned where Python interns it in one process: the compiler interns every string constant made
    only of ASCII letters, digits and underscores, so that a student's ``policy is "lru"`` holds there when the test
    passed the literal ``"lru"``. A string decoded from a message is a new object; such a one is interned too."""
    return sys.intern(text) if text.isascii() and text.replace("_", "a").isalnum() else text


class Codec:
    """The encoder and decoder of one side; `start` before each message."""

    def __init__(self, peer, limits: Limits = LIMITS) -> None:
        self.peer = peer
        self.limits = limits
        self.items = 0
        self.lazy = False  # Whether what is encoded or decoded now is in a lazy pair's content.
        # How deep the value being encoded is within a dict's key or a set's item, which the receiver hashes as it
        # decodes them (an object whose hash needs the student's code is otherwise hashed only when the test asks).
        self.keys = 0
        # The dicts and sets whose keys or items are being encoded, innermost last, and the hashes each stored for
        # them, read at most once per message (`stored_hash`).
        self.key_sources: list = []
        self.stored_tables: dict[int, tuple] = {}
        self.touched: list[shared.Pair] = []  # Pairs whose snapshot is taken once the message is sent.
        # The pairs whose new content the message being encoded carries: in its updates, or in its body (lazy ones).
        self.updated: set[int] = set()
        # The message's updates (peer.Peer._tree), which the receiver applies before it decodes the body: the kernel
        # adds the lazy owners of the views that the body hands out (`_owner_with`).
        self.updates: list = []
        # Whether decoding the message wrote into a tensor or array this side already held (`PairTable.settle`).
        self.wrote_memory = False
        # Whether lists, sets, dicts and tensors cross as copies, with no pair (a replay's results: copies that
        # nothing in the kernel holds, so neither side need keep them in step); what a __dict__ holds never does.
        self.by_value = False

    def _count(self, depth: int) -> None:
        self.items += 1
        if self.items > self.limits.items:
            raise WireError(f"a message with more than {self.limits.items} values")
        if depth > self.limits.depth:
            raise WireError(f"a value nested more than {self.limits.depth} levels deep")

    # Encoding.

    def encode(self, value, depth: int = 0):
        kind = type(value)
        if kind is str or kind is float or kind is bool or value is None or kind is bytes:
            return value
        if kind is int:
            return value if -(1 << 63) <= value < (1 << 64) else encode_int(value)
        self.items += 1
        if self.items > self.limits.items or depth >= self.limits.depth - 1:
            if depth >= self.limits.depth - 1 and (id(kind) in shared.PAIR_TAGS or id(kind) in _SEQUENCES):
                return self._lend_deep(value, depth)
            self._count(depth)
        tag = shared.PAIR_TAGS.get(id(kind))
        if tag is not None and (tensor_crosses(value) if tag is Tag.TENSOR else
                                numpy_crosses(value.dtype) if tag is Tag.NDARRAY else True):
            return self._encode_pair(value, tag, depth)  # A sparse tensor or an array of objects is lent instead.
        tag = _SEQUENCES.get(id(kind))
        if tag is not None:
            items = self._as_keys(self._encode_keys, value, depth, value) if tag is Tag.FROZENSET else \
                self._encode_items(value, depth)
            return [tag, *items]
        if kind is slice or kind is range:
            return [Tag.SLICE if kind is slice else Tag.RANGE, *(self.encode(getattr(value, name), depth + 1)
                                                                 for name in ("start", "stop", "step"))]
        return self._encode_other(value, kind, depth)

    def _lend_deep(self, value, depth: int):
        """A container or tensor as deep as a message may nest (a linked list of tuples, a trie of dicts): lent as an
        object, as an object of the student's is, so that the message stays within the depth its reader allows."""
        return self.peer.encode_object(value, depth)

    def _encode_items(self, values, depth: int) -> list:
        """The nodes of a sequence's items. Items that all cross as themselves (see `encode`) are taken as they
        are, in one step: most of what a test sends is lists and tuples of numbers and strings."""
        kinds = set(map(id, map(type, values)))
        if kinds <= _PLAIN or (kinds <= _PLAIN_AND_INT and _ints_fit(values, kinds)):
            return list(values)
        if kinds <= _PLAIN_AND_TUPLE:  # Such as the steps of a replay: ("in", (block,), ("hit", "insert")).
            return [self._encode_tuple(item, depth + 1) if type(item) is tuple else self.encode(item, depth + 1)
                    for item in values]
        return [self.encode(item, depth + 1) for item in values]

    def _encode_tuple(self, value: tuple, depth: int) -> list:
        """What `encode` makes of a tuple, without asking what it is."""
        self.items += 1
        if self.items > self.limits.items or depth >= self.limits.depth - 1:
            if depth >= self.limits.depth - 1:
                return self._lend_deep(value, depth)
            self._count(depth)
        return [_TUPLE_TAG, *self._encode_items(value, depth)]

    def _encode_other(self, value, kind: type, depth: int):
        leaf = encode_leaf(value)
        if leaf is not None:
            return leaf
        if kind is MappingProxyType:
            # What it wraps, found without asking it (its items() would call a mapping of the student's): a plain
            # dict crosses as a read-only copy, anything else is lent (red team, 2026-12-07).
            wrapped = gc.get_referents(value)
            if len(wrapped) == 1 and type(wrapped[0]) is dict:
                return [Tag.MAPPINGPROXY, self._flat(dict.items(wrapped[0]), depth, wrapped[0])]
            return self.peer.encode_object(value, depth)
        if issubclass(kind, property):  # A subclass of property (abc.abstractproperty) is a property to the test.
            # Its parts read through property's own descriptors: a subclass's attributes of those names never run.
            doc = _PROPERTY_DOC.__get__(value)
            return [Tag.PROPERTY, *(self.encode(part.__get__(value), depth + 1) for part in _PROPERTY_PARTS),
                    doc if type(doc) is str else None]
        if kind is staticmethod or kind is classmethod:
            wrapper = Tag.STATICMETHOD if kind is staticmethod else Tag.CLASSMETHOD
            return [wrapper, self.encode(value.__func__, depth + 1)]
        return self.peer.encode_object(value, depth)

    def _as_keys(self, encode, value, depth: int, source):
        """``encode(value, depth)`` of a dict's key or a set's items (see `keys`); ``source``: that dict or set."""
        self.keys += 1
        self.key_sources.append(source)
        try:
            return encode(value, depth)
        finally:
            self.keys -= 1
            self.key_sources.pop()

    def _encode_keys(self, values, depth: int) -> list:
        """The nodes of a set's items (see `_encode_key`)."""
        kinds = set(map(id, map(type, values)))
        if kinds <= _PLAIN or (kinds <= _PLAIN_AND_INT and _ints_fit(values, kinds)):
            return list(values)
        return [self._encode_key(item, depth + 1) for item in values]

    def _encode_key(self, key, depth: int):
        """A dict's key or a set's item. A tuple that the receiver could hash only by asking for a hash that may run
        the student's code (one of its objects' hashes) is lent as an object, with the hash its dict or set stored
        (`stored_hash`), as the student's own objects in keys are."""
        if type(key) is tuple and self.peer.hash_runs_code(key):
            return self.peer.encode_object(key, depth)
        return self.encode(key, depth)

    def stored_hash(self, value):
        """The hash that the dict or set whose key or item ``value`` is (the innermost being encoded that holds it)
        stored for it when it went in; None where it cannot be read (grading/judge/stored.py)."""
        for source in reversed(self.key_sources):
            kept = self.stored_tables.get(id(source))
            if kept is None or kept[0] is not source:
                kept = self.stored_tables[id(source)] = (source, stored_hashes(source) or {})
            found = kept[1].get(id(value))
            if found is not None:
                return found
        return None

    def _flat(self, items, depth: int, source) -> list:
        """A dict's (``source``'s) ``items`` as one list: key, value, key, value..."""
        out = []
        for key, value in items:
            # Most keys are strings, which cross as themselves.
            out.append(key if type(key) is str else self._as_keys(self._encode_key, key, depth + 1, source))
            out.append(self.encode(value, depth + 1))
        return out

    def _encode_pair(self, value, tag: int, depth: int) -> list:
        if self.by_value and not self.lazy and tag in _COPIES:  # A copy (see `by_value`); never in a __dict__.
            return [tag, COPY, self._content_of(tag, value, depth)]
        pairs = self.peer.pairs
        pair = pairs.find(value)
        if pair is not None:
            if pair.lazy and not self.lazy:
                pairs.promote(pair)
                self.touched.append(pair)
                self._owner_with(pair)
                return [Tag.PROMOTE, pair.sid, self.content(pair, depth)]
            if pair.lazy and self.peer.parity == 1 and pair.sid not in self.updated and self._stale(pair):
                # The student's code changed it, or a lazy pair it holds, since it crossed, and a new object's
                # __dict__ (which the judge takes as current) holds it: its new content comes with it.
                self.updated.add(pair.sid)
                self.touched.append(pair)
                self._owner_with(pair)
                return [Tag.UPDATE, pair.sid, self.content(pair, depth)]
            return [Tag.REF, pair.sid]
        owner = pairs.owner_of(value) if tag is Tag.TENSOR else None
        owner_node = None
        if owner is None and tag is Tag.TENSOR:
            base = shared.unshared_base(pairs, value)
            if base is not None:
                # The whole storage crosses with a view of part of it, as one: notebook 09's pools lie between
                # guard blocks, which a kernel that writes past a pool must hit on both sides alike.
                owner_node = self._encode_pair(base, Tag.TENSOR, depth + 1)
                owner = pairs.find(base)
                if owner is None or not pairs.is_owner(owner):  # It crossed, but another tensor owns its storage.
                    owner = None
        pair = pairs.add(value, tag, lazy=self.lazy)
        self.touched.append(pair)
        if owner is not None:
            pair.keep, pair.view_form = owner.obj, shared.view_form(value)
            if owner_node is None and owner.lazy and self.peer.parity == 1 and owner.changed():
                # The kernel's lazy owner is the student's own tensor, which its code may have changed through
                # another view since it crossed: it comes with its content, as the view is built on it.
                pairs.promote(owner)
                self.touched.append(owner)
                owner_node = [Tag.PROMOTE, owner.sid, self.content(owner, depth + 1)]
            elif owner_node is None:
                owner_node = self._encode_pair(owner.obj, Tag.TENSOR, depth + 1)
            node = [Tag.VIEW, pair.sid, owner_node, list(value.shape), list(value.stride()), value.storage_offset()]
            bits = (NEGATIVE if value.is_neg() else 0) | (CONJUGATE if value.is_conj() else 0)
            if value.dtype != owner.obj.dtype or bits:
                # A view of another dtype (``Tensor.view(dtype)``), or whose values negate or conjugate its memory.
                node += [encode_leaf(value.dtype) if value.dtype != owner.obj.dtype else None, bits]
            return node
        return [tag, pair.sid, self.content(pair, depth)]

    def _owner_with(self, view: shared.Pair) -> None:
        """(The kernel's side.) A lazy view that crosses with its content finds its owner as it is now: the owner, a
        lazy pair too, which no scan looks at, may have changed through another view of the student's code, and the
        judge's copy would keep its old elements around the view's. Its new content goes into the message's
        updates, which the receiver applies before the body."""
        if self.peer.parity != 1:
            return
        owner = self.peer.pairs.owner_pair(view)
        if owner is None or not owner.lazy or owner.sid in self.updated or not owner.changed():
            return
        self.updated.add(owner.sid)
        self.touched.append(owner)
        self.updates.append([owner.sid, self.content(owner)])

    def _stale(self, pair: shared.Pair) -> bool:
        """Whether a lazy pair, or a lazy pair it holds, changed since it last crossed."""
        return any(each.changed() for each in shared.lazy_pairs_in(self.peer.pairs, [pair.obj]))

    def content(self, pair: shared.Pair, depth: int = 0):
        """What a pair holds now, as a tree (in a new pair's node, or in an update). A tensor's says whether it owns
        its whole storage, which makes it, on both sides, the owner whose views cross as views (`PairTable.own`)."""
        if pair.tag is Tag.TENSOR:
            pairs, obj = self.peer.pairs, pair.obj
            if pair.keep is not None:
                if pairs.on_owner(pair):
                    # A view that is still on its owner's storage: its shape, strides and offset there, and its
                    # values, which the receiver writes through its own view (`_fill_view`).
                    return [Tag.VIEW, list(obj.shape), list(obj.stride()), obj.storage_offset(), encode_tensor(obj)]
                pair.keep = None  # It left its owner's storage (``set_``, a resize): the receiver's leaves it too.
            leaf = encode_tensor(obj)
            # Only a new pair may become its storage's owner: the receiver's copy is then new, and owns all of its
            # storage. An update keeps an ownership both sides agreed on, or ends it, but never claims one: the
            # receiver's tensor may view part of its storage there, or share it with another owner.
            owns = pairs.own(pair, shared.owns_storage(obj) and (pair.recorded is None or pair.owner_key is not None))
            if owns:
                leaf[5] |= OWNS_STORAGE
            if pair.recorded is None:
                pairs.check_shared_memory(pair, copy=not owns)
            # A tensor that was an owner and is still at the start of its storage object (``resize_`` keeps it,
            # ``set_`` does not) says so: the receiver keeps its own on its storage, with the views on it.
            if pair.home is not None and pair.recorded is not None:
                if shared.storage_key(obj) == pair.home and obj.storage_offset() == 0:
                    leaf[5] |= SAME_STORAGE
                else:
                    pair.home = None
            return leaf
        return self._content_of(pair.tag, pair.obj, depth, pair.lazy)

    def _content_of(self, tag: int, obj, depth: int, lazy: bool = False):
        """What ``obj``, of a pair's type, holds now, as a tree; ``lazy``: whether it is a lazy pair's content."""
        if tag is Tag.TENSOR:
            return encode_tensor(obj)
        if tag is Tag.NDARRAY:
            return encode_ndarray(obj)
        outer, self.lazy = self.lazy, lazy
        try:
            if tag is Tag.LIST:
                return self._encode_items(obj, depth)
            if tag is Tag.SET:
                return self._as_keys(self._encode_keys, obj, depth, obj)
            if tag is Tag.ODICT:  # Its items() would hash its keys again (grading/judge/stored.py).
                return self._flat(zip(*shared.ordered_keys_and_values(obj)), depth, obj)
            mapping = vars(obj) if tag is Tag.NAMESPACE else obj
            return self._flat(mapping.items(), depth, mapping)
        finally:
            self.lazy = outer

    def encode_root(self, found: dict, depth: int):
        """The ``__dict__`` of an object that crosses with it: a lazy pair, new (with its content) or
        known; a known lazy one comes with what changed in it and in the lazy pairs it holds (VALIDATE)."""
        pair = self.peer.pairs.find(found)
        if pair is None or not pair.lazy:
            outer, self.lazy = self.lazy, True
            try:
                return self.encode(found, depth)
            finally:
                self.lazy = outer
        pairs = self.peer.pairs
        stale = pairs.with_owners([each for each in shared.lazy_pairs_in(pairs, [found]) if each.changed()],
                                  self.peer.parity == 1)
        self.touched.extend(stale)
        # The receiver fills the others first, then the root (`decode_root`): their contents are made in that order.
        # One that an earlier content carried already (an UPDATE node) is not sent twice.
        others = []
        for each in stale:
            if each is not pair and each.sid not in self.updated:
                self.updated.add(each.sid)
                others.append([each.sid, self.content(each, depth)])
        root = self.content(pair, depth) if any(each is pair for each in stale) else None
        return [Tag.VALIDATE, pair.sid, root, others]

    # Decoding.

    def decode(self, node, depth: int = 0):
        if type(node) is not list:
            if type(node) is str:
                return interned(node)
            if type(node) is dict:
                raise WireError("a message with a map")
            return node
        self.items += 1
        if self.items > self.limits.items or depth > self.limits.depth:
            self._count(depth)
        if not node or type(node[0]) is not int:
            raise WireError("a list without its tag")
        tag = node[0]
        try:
            if tag == _TUPLE:
                return tuple(self._decode_items(node[1:], depth))
            if tag in PAIR_TAGS:
                return self._decode_pair(node, depth)
            if tag == _REF:
                expect(len(node) == 2, "a malformed reference")
                pair = self.peer.pairs.get(node[1])
                expect(self.lazy or not pair.lazy, "a reference to a lazy shared value where it must be promoted")
                if pair.quiet:  # A mirrored __dict__ that the kernel sends as a value: the test may hold it now.
                    self.peer.pairs.wake(pair)
                return pair.obj
            if tag == _PROMOTE:
                return self._decode_promotion(node, depth)
            if tag == _UPDATE:
                expect(len(node) == 3, "a malformed update")
                pair = self.peer.pairs.get(node[1])
                self.fill(pair, node[2], depth)
                pair.record()
                return pair.obj
            if tag == _VIEW:
                return self._decode_view(node, depth)
            return self._decode_value(tag, node, depth)
        except WireError:
            raise
        except _DATA_ERRORS as error:
            raise WireError(f"a malformed value ({type(error).__name__}: {error})") from None

    def _items(self, node, depth: int, start: int = 1) -> list:
        return self._decode_items(node[start:], depth)

    def _decode_items(self, nodes: list, depth: int) -> list:
        """The values of a list of nodes; one without a list (or a map) among them holds only plain values, which
        decode to themselves (see `decode`; name-like strings interned), and is taken as it is."""
        kinds = set(map(type, nodes))
        if list not in kinds and dict not in kinds:
            return [interned(item) if type(item) is str else item for item in nodes] if str in kinds else nodes
        return [self.decode(item, depth + 1) for item in nodes]

    def _decode_value(self, tag: int, node: list, depth: int):
        if tag in _STRUCTURES:
            return self._decode_structure(tag, node, depth)
        if tag in _LEAVES:
            return decode_leaf(node)
        return self.peer.decode_object(node, depth)

    def _decode_structure(self, tag: int, node: list, depth: int):
        if tag == Tag.FROZENSET:
            items = self._items(node, depth)
            shared.spread_keys(items)
            return frozenset(items)
        if tag == Tag.SIZE:
            dims = self._items(node, depth)
            expect(all(type(d) is int for d in dims), "a malformed torch.Size")
            return torch.Size(dims)
        if tag in (Tag.SLICE, Tag.RANGE):
            expect(len(node) == 4, "a malformed slice or range")
            parts = self._items(node, depth)
            if tag == Tag.RANGE:
                expect(all(type(p) is int for p in parts), "a malformed range")
                return range(*parts)
            return slice(*parts)
        if tag == Tag.MAPPINGPROXY:
            expect(len(node) == 2 and type(node[1]) is list and len(node[1]) % 2 == 0, "a malformed mapping")
            flat = self._items(node[1], depth, start=0)
            shared.spread_keys(flat[0::2])
            return MappingProxyType(dict(zip(flat[0::2], flat[1::2])))
        if tag == Tag.PROPERTY:
            expect(len(node) == 5 and (node[4] is None or type(node[4]) is str), "a malformed property")
            return property(*self._items(node[:4], depth), node[4])
        if tag in (Tag.STATICMETHOD, Tag.CLASSMETHOD):
            expect(len(node) == 2, "a malformed method wrapper")
            function = self.decode(node[1], depth + 1)
            return staticmethod(function) if tag == Tag.STATICMETHOD else classmethod(function)
        raise WireError(f"an unknown structure (tag {tag})")

    def _decode_pair(self, node: list, depth: int):
        expect(len(node) == 3, "a malformed shared value")
        tag, sid, content = node
        if sid == COPY and type(sid) is int:
            return self._decode_copy(tag, content, depth)
        pairs = self.peer.pairs
        if tag == Tag.TENSOR:
            pair = pairs.add(decode_tensor(content, self.limits), tag, sid, self.lazy)
            self._own(pair, content)
            pairs.note_memory(pair)
        elif tag == Tag.NDARRAY:
            pair = pairs.add(decode_ndarray(content, self.limits), tag, sid, self.lazy)
        else:
            pair = pairs.add(shared.MAKERS[tag](), tag, sid, self.lazy)
            self.fill(pair, content, depth)
        pair.record()
        return pair.obj

    def _decode_copy(self, tag: int, content, depth: int):
        """A list, set, dict or tensor that crossed as a copy (`by_value`): a new object that no pair holds."""
        expect(tag in _COPIES and (tag == Tag.TENSOR or type(content) is list), "a malformed copy")
        if tag == Tag.TENSOR:
            return decode_tensor(content, self.limits)
        obj = shared.MAKERS[tag]()
        self._fill_items(tag, obj, content, depth)
        return obj

    def _decode_promotion(self, node: list, depth: int):
        """A lazy pair that the sender promoted, with its whole content (see `_encode_pair`)."""
        expect(len(node) == 3, "a malformed promotion")
        pair = self.peer.pairs.get(node[1])
        if pair.lazy:
            self.peer.pairs.promote(pair)
        self.fill(pair, node[2], depth)
        pair.record()
        return pair.obj

    def decode_root(self, node, depth: int) -> shared.Pair:
        """The ``__dict__`` that came with an object (see `encode_root`), as its pair."""
        outer, self.lazy = self.lazy, True
        try:
            if type(node) is list and node and node[0] == Tag.VALIDATE:
                expect(len(node) == 4 and type(node[3]) is list, "a malformed validation")
                pair = self.peer.pairs.get(node[1])
                root = [[node[1], node[2]]] if node[2] is not None else []
                for update in node[3] + root:
                    expect(type(update) is list and len(update) == 2, "a malformed update")
                    each = self.peer.pairs.get(update[0])
                    self.fill(each, update[1], depth)
                    each.record()
            elif type(node) is list and len(node) == 2 and node[0] == _REF:
                pair = self.peer.pairs.get(node[1])  # A known one, which stays quiet if it is (it is not a value).
            else:
                pair = self.peer.pairs.find(self.decode(node, depth))
        finally:
            self.lazy = outer
        expect(pair is not None and pair.tag is Tag.DICT, "an object whose __dict__ is not a dict")
        return pair

    def _own(self, pair: shared.Pair, leaf: list) -> None:
        """A shared tensor that came with its content owns its storage here when it does on the sender's side too
        (a tensor that only views part of its storage there owns all of its copy here)."""
        self.peer.pairs.own(pair, bool(leaf[5] & OWNS_STORAGE) and shared.owns_storage(pair.obj, exact=False),
                            sent=False)

    def _decode_view(self, node: list, depth: int) -> torch.Tensor:
        """A tensor that views the storage of a shared tensor, as it does on the other side: with the owner's dtype,
        or (the node's seventh item) another, in whose elements its offset and strides count, and (its eighth) with
        its negative and conjugate bits."""
        expect(len(node) in (6, 8), "a malformed view")
        _, sid, owner_node, shape, stride, offset = node[:6]
        owner = self.peer.pairs.find(self.decode(owner_node, depth + 1))
        expect(owner is not None and owner.tag is Tag.TENSOR and self.peer.pairs.is_owner(owner),
               "a view of a tensor that does not own its storage")
        dtype, bits = (None, 0) if len(node) == 6 else (node[6], node[7])
        expect(type(bits) is int and 0 <= bits <= NEGATIVE | CONJUGATE
               and (len(node) == 6 or dtype is not None or bits), "a malformed view")
        if dtype is None:
            self._check_view(owner, shape, stride, offset)
            view = owner.obj.as_strided(shape, stride, offset)
        else:
            dtype = self.decode(dtype, depth + 1)
            expect(type(dtype) is torch.dtype and dtype != owner.obj.dtype, "a malformed view")
            self._check_view(owner, shape, stride, offset, dtype)
            view = torch.empty(0, dtype=dtype, device=owner.obj.device).set_(
                owner.obj.untyped_storage(), offset, shape, stride)
        try:
            view = torch._neg_view(view) if bits & NEGATIVE else view
        except RuntimeError:  # A dtype that has no negative (bool).
            raise WireError("a malformed view") from None
        if bits & CONJUGATE:
            expect(view.dtype.is_complex, "a malformed view")
            view = view.conj()
        pair = self.peer.pairs.add(view, Tag.TENSOR, sid, self.lazy)
        pair.keep, pair.view_form = owner.obj, shared.view_form(view)
        pair.record()
        return view

    def _check_view(self, owner: shared.Pair | None, shape, stride, offset, dtype: torch.dtype | None = None) -> None:
        """Refuse a view's shape, strides and offset unless they are well formed and lie within its owner (in the
        elements of ``dtype``, where it is not the owner's)."""
        dims = (shape, stride)
        expect(all(type(d) is list and len(d) <= self.limits.depth and all(type(x) is int and x >= 0 for x in d)
                   for d in dims) and len(shape) == len(stride) and type(offset) is int and offset >= 0,
               "a malformed view")
        if owner is not None:
            count = owner.obj.numel()
            if dtype is not None:  # In the view's elements.
                count = count * owner.obj.element_size() // dtype.itemsize
            expect(shared.within(shape, stride, offset, count), "a view outside its tensor")

    def _fill_view(self, pair: shared.Pair, node: list) -> None:
        """A view's place on its owner's storage and its values (`content`), written where it lies: a view with gaps
        in its strides stays a view of its owner, where its values alone would make a contiguous copy."""
        expect(len(node) == 5, "a malformed view")
        pairs = self.peer.pairs
        _, shape, stride, offset, leaf = node
        values = decode_tensor(leaf, self.limits)
        expect(list(values.shape) == shape and values.dtype == pair.obj.dtype, "a view's values of another shape")
        self._check_view(None, shape, stride, offset)
        if pairs.on_owner(pair):
            shared.rewrite_view(pair.obj, shape, stride, offset, values)
        else:  # The view left its owner's storage here: it keeps its values, as a tensor of its own.
            shared.detach(pair, values)

    def fill(self, pair: shared.Pair, content, depth: int = 0) -> None:
        """Give ``pair`` the ``content`` the other side sent (a new pair, or an update), in place."""
        tag = pair.tag
        if tag == Tag.TENSOR:
            if type(content) is list and content and content[0] == _VIEW and type(content[0]) is int:
                self._fill_view(pair, content)
            elif pair.keep is not None:
                # A view that left its owner's storage on the sender's side leaves it here too.
                shared.detach(pair, decode_tensor(content, self.limits))
            else:
                new = decode_tensor(content, self.limits)
                obj = pair.obj
                if (content[5] & SAME_STORAGE and pair.home is not None and shared.storage_key(obj) == pair.home
                        and obj.dtype == new.dtype and obj.storage_offset() == 0):
                    shared.apply_to_owner(obj, new)
                else:
                    pair.home = None
                    shared.apply(tag, obj, new)
                self._own(pair, content)
            self.wrote_memory = True
            return
        if tag == Tag.NDARRAY:
            shared.apply(tag, pair.obj, decode_ndarray(content, self.limits))
            self.wrote_memory = True
            return
        expect(type(content) is list, "a malformed shared value")
        outer, self.lazy = self.lazy, pair.lazy
        try:
            self._fill_items(tag, pair.obj, content, depth)
        finally:
            self.lazy = outer

    def _fill_items(self, tag: int, obj, content: list, depth: int) -> None:
        """Give the container ``obj``, of a pair's type, the values of ``content``'s nodes, in place."""
        items = self._decode_items(content, depth)
        if tag in (Tag.DICT, Tag.ODICT, Tag.NAMESPACE):
            expect(len(items) % 2 == 0, "a malformed mapping")
        try:
            shared.apply(tag, obj, items)
        except WireError:
            raise
        except _DATA_ERRORS as error:
            raise WireError(f"a malformed shared value ({type(error).__name__}: {error})") from None


def _ints_fit(values, kinds: set) -> bool:
    """Whether every int among ``values`` (all of plain types) crosses as itself; only asked of all-int values."""
    return kinds == _ONLY_INT and _SMALLEST_INT <= min(values) and max(values) < _BEYOND_INT if values else True
