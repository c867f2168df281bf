"""Shared pairs: a mutable container or tensor that crossed, held by both sides and kept in step.

Each side holds a real object of the exact builtin type (a list is a list, never a subclass), and
both objects have the same shared id (sid). The judge's ids are even, the kernel's odd, so that
neither side can name a pair the other made up. The receiver of new content updates its own object
in place (`apply`), so that every reference to it stays valid. Change detection never calls a
value's ``__eq__`` (which for a handle would be a remote call): containers compare the identity of
their items with a shallow snapshot, tensors compare autograd's version counter (views share it)
and, where the counter cannot be trusted, their bytes too; NumPy arrays compare their bytes. The
counter never sees a write through ``.data``, through a NumPy array that shares the tensor's memory,
or through a Triton kernel's raw pointers: so the student's kernel, where any of these may run,
compares bytes (`compare_bytes`), and so does any process where Triton is loaded. A view of part of a
tensor's storage crosses with the whole storage (`unshared_base`), so that both sides' views
share what lies around them as they do in one process.

Views need both sides to agree on which tensor *owns* a storage (`PairTable.own`): the sender of a
tensor's first content decides, and says so in it, that the tensor covers all of its storage object
and that no other owner has it. A copy of a tensor that covers only part of its storage is no owner
on either side, though it owns all of its own. An owner's later updates keep that or end it, and say
whether it is still on the same storage object (`storage_key`: ``resize_`` keeps the object, ``set_``
changes it), so that the receiver resizes and reshapes its own in place (`apply_to_owner`). A view
(`Pair.keep`) that is still on its owner's storage sends its shape, strides, offset and values,
which the receiver writes through its own view (`rewrite_view`): a view with gaps in its strides
stays a view, where its values alone would make a contiguous copy. One that left it (``set_``, a
resize that moved it) leaves it on both sides (`detach`). Updates cross owners first
(`PairTable.with_owners`), with the owners that only their views reach.

A pair is *eager* or *lazy*, alike on both sides (codec.py says when each is which):

- eager: an object the test can reach (it made it, or got it from a call). Before a side sends
  any message it finds the eager pairs it changed since they last crossed (`PairTable.scan`) and
  sends their new content, so the other side never sees an old one.
- lazy: an object the test cannot reach yet: a ``__dict__`` of a student's object that the judge
  mirrors (handles.py), and what crossed inside one. Neither side looks for its changes at every
  message. The judge asks for a lazy pair's new content when the test reads it and the kernel may
  have changed it since (`Pair.valid_at`), and it becomes eager as soon as the test holds it.
  A new ``__dict__`` that holds a lazy pair the student's code changed since it crossed brings its
  new content along (``Tag.UPDATE``: the judge takes a new ``__dict__`` as current).
  A mirrored ``__dict__`` that the test has not read for a while, and what only it holds, become
  lazy again (`PairTable.demote`), on both sides.

On the judge's side an eager mirrored ``__dict__`` is also *quiet* while only its handle holds it
(`PairTable.quieten`): the test cannot change it but through the handle, which marks the change
itself, so the judge does not look for changes in it at every message (the kernel, where the
student's code changes it, still does).

On the kernel's side an eager pair *rests* while nothing but the table can reach its object
(`PairTable.scan`): its reference count says no name, container or object of the kernel holds it,
no weak reference points to it, and, for a tensor, no other tensor, view, NumPy array or storage
object shares its memory. (The kernel's code could still find it through ``gc`` or a raw pointer
it kept: no honest answer does, and the kernel is the student's anyway.) Then no
code of the kernel can change it, so `scan` stops comparing it (the student's kernel compares
tensors by their bytes, which for the large inputs a test keeps was most of what serving it cost).
It wakes as soon as the table hands it out again: a message names it (`PairTable.get`) or a value
being encoded is it (`PairTable.find`). The judge drops such a pair instead, and the kernel's
pair with it; the kernel keeps them, since the test still holds its side.

So the cost of a message grows with what the test holds and reads, not with everything that ever
crossed.

This module runs in the student's kernel too (see grading/judge/wire.py).
"""

from __future__ import annotations

import operator
import sys
import weakref
from collections import OrderedDict
from ctypes import string_at
from types import SimpleNamespace

import numpy
import torch

from .stored import HASHED_WITHOUT_CODE, ordered_keys_and_values
from .wire import Tag, WireError, dense, expect, flat_bytes, memory_bytes

PAIR_TYPES = {list: Tag.LIST, dict: Tag.DICT, OrderedDict: Tag.ODICT, set: Tag.SET, SimpleNamespace: Tag.NAMESPACE,
              torch.Tensor: Tag.TENSOR, numpy.ndarray: Tag.NDARRAY}
PAIR_TAGS = {id(kind): tag for kind, tag in PAIR_TYPES.items()}  # By the type's id: no metaclass's __hash__ runs.
_LIST, _SET, _DICT, _ODICT, _TENSOR = Tag.LIST, Tag.SET, Tag.DICT, Tag.ODICT, Tag.TENSOR
MAKERS = {Tag.LIST: list, Tag.DICT: dict, Tag.ODICT: OrderedDict, Tag.SET: set, Tag.NAMESPACE: SimpleNamespace}


_BYTES = {"always": False}  # Whether tensors are compared by their bytes in every process (`compare_bytes`).


def compare_bytes() -> None:
    """From now on this process compares tensors by their bytes too (the student's kernel calls it)."""
    _BYTES["always"] = True


def _by_bytes() -> bool:
    return _BYTES["always"] or "triton" in sys.modules


def snapshot(tag: int, obj):
    """What `changed` compares with: the items themselves (for identity), or a tensor's version (and, where it is
    compared by its bytes, those too: `_content`)."""
    if tag in (Tag.LIST, Tag.SET):
        return list(obj)
    if tag == Tag.DICT:
        return list(obj), list(obj.values())
    if tag == Tag.ODICT:
        # Its keys and values in its dict's order too, where each key's hash runs no code: while its dict holds the
        # same keys, `changed` may then iterate it, which hashes them (stored.py), and compare values as a dict's.
        keys = list(dict.keys(obj))
        if all(map(HASHED_WITHOUT_CODE.__contains__, map(id, map(type, keys)))):
            return list(obj), list(obj.values()), keys, list(dict.values(obj))
        return (*ordered_keys_and_values(obj), None, None)
    if tag == Tag.NAMESPACE:
        items = vars(obj)
        return list(items), list(items.values())
    if tag == Tag.TENSOR:
        return (_version_of(obj), obj.shape, obj.data_ptr(), *_content(obj), obj.dtype, obj.is_neg(), obj.is_conj())
    return obj.shape, obj.dtype.str, obj.tobytes()


def _content(tensor: torch.Tensor) -> tuple:
    """``(where its bytes were read from its memory, or None; its bytes)`` where the tensor is compared by its bytes
    (`_by_bytes`, or made under inference mode); ``(None, None)`` elsewhere, and for a meta tensor, which has no
    memory. Its memory is ``(strides, byte count)`` of a tensor that `_readable` allows: `changed` reads the same
    bytes at the same address again while the tensor's address, shape and strides stay as they were."""
    if not (_by_bytes() or tensor.is_inference()) or tensor.is_meta:
        return None, None
    if _readable(tensor):
        return (tensor.stride(), tensor.numel() * tensor.element_size()), memory_bytes(tensor)
    return None, _bytes_of(tensor)


def _version_of(tensor: torch.Tensor) -> int:
    """Autograd's version counter; -1 for a tensor made under ``torch.inference_mode()``, which has none (such a
    tensor is always compared by its bytes). Read first and refused only then: this runs for every eager tensor at
    every message, and an inference tensor is the rare case."""
    try:
        return tensor._version
    except RuntimeError:  # "Inference tensors do not track version counter."
        return -1


def _readable(tensor: torch.Tensor) -> bool:
    """Whether a tensor's bytes can be read straight from its memory (`wire.memory_bytes`), in a fraction of the time
    `_bytes_of` takes: a contiguous CPU tensor of plain layout, neither a conjugate nor a negative view. Both give
    the elements in row-major order, so either may read what the other recorded."""
    return (tensor.device.type == "cpu" and tensor.layout == torch.strided and tensor.is_contiguous()
            and not tensor.is_conj() and not tensor.is_neg())


def _bytes_of(tensor: torch.Tensor) -> bytes | None:
    """A tensor's content, for a process whose version counters cannot be trusted: ``.data``, a NumPy array
    that shares the memory and a Triton kernel (compiled, or interpreted: the interpreter copies its results
    back through ``.data``) write a tensor's memory without bumping its version, so there a tensor changed
    when its bytes did. None for a layout that has no plain bytes."""
    return flat_bytes(tensor) if tensor.layout == torch.strided else None


_STORAGE_USE_COUNT = getattr(torch._C, "_storage_Use_Count", None)  # How many tensors share a storage.
_ALONE: dict[str, tuple[int, int]] = {}  # `_memory_refs` of a tensor that shares its memory with none, by device.


def _memory_refs(tensor: torch.Tensor) -> tuple[int, int]:
    """The references to a tensor's memory that its own reference count leaves out: its storage object's (someone
    holds it) and torch's count of the tensors that use the storage (views, ``.data``, NumPy arrays, ``set_``).
    What torch itself holds of the tensor (another tensor's ``.grad``) shows in the tensor's reference count."""
    storage = tensor.untyped_storage()
    return sys.getrefcount(storage), _STORAGE_USE_COUNT(storage._cdata)


def _memory_alone(tensor: torch.Tensor) -> bool:
    """Whether nothing shares a pair's tensor's memory (a pair's record holds only its bytes): compared with a probe
    on the same device."""
    if (_STORAGE_USE_COUNT is None or type(tensor) is not torch.Tensor or tensor.layout != torch.strided
            or tensor.is_meta):
        return False
    alone = _ALONE.get(tensor.device.type)
    if alone is None:
        alone = _ALONE[tensor.device.type] = _memory_refs(torch.zeros(2, device=tensor.device))
    return all(map(operator.le, _memory_refs(tensor), alone))


def _same(items, recorded) -> bool:
    return len(items) == len(recorded) and all(map(operator.is_, items, recorded))


def changed(tag: int, obj, recorded) -> bool:
    if tag is _TENSOR:
        # Its version, memory, shape, dtype and negative and conjugate bits, read one by one (a snapshot of each of many
        # tensors at every message was much of a scan's time); where the counter cannot be trusted, its bytes too
        # (`snapshot`). The dtype: a ``.data`` of another dtype of the same size (``t.data = t.data.view(torch.int64)``
        # on float64) keeps the memory, the shape and the version. The bits: ``torch._C._set_neg(t, True)`` negates
        # what ``t`` reads without writing its memory or bumping its version.
        if (_version_of(obj) != recorded[0] or obj.data_ptr() != recorded[2] or obj.shape != recorded[1]
                or obj.dtype != recorded[5] or obj.is_neg() is not recorded[6] or obj.is_conj() is not recorded[7]):
            return True
        if recorded[4] is None:
            # Recorded while versions were trusted (Triton was imported since), or a layout without plain bytes. An
            # inference tensor is recorded with its bytes where it has any: while versions are trusted, nothing here
            # could give bytes now.
            return _by_bytes() and _content(obj)[1] is not None
        memory = recorded[3]
        if memory is not None and obj.stride() == memory[0]:
            return string_at(recorded[2], memory[1]) != recorded[4]
        return _bytes_of(obj) != recorded[4]
    if tag in (Tag.LIST, Tag.SET):
        return not _same(obj, recorded)
    if tag == Tag.DICT:
        return not (_same(obj, recorded[0]) and _same(obj.values(), recorded[1]))
    if tag == Tag.ODICT:
        if recorded[2] is not None and _same(dict.keys(obj), recorded[2]):
            return not (_same(dict.values(obj), recorded[3]) and _same(obj, recorded[0]))
        keys, values = ordered_keys_and_values(obj)
        return not (_same(keys, recorded[0]) and _same(values, recorded[1]))
    if tag == Tag.NAMESPACE:
        items = vars(obj)
        return not (_same(items, recorded[0]) and _same(items.values(), recorded[1]))
    return snapshot(tag, obj) != recorded


_SAME_HASH = 64  # At most this many keys of one set or dict from the other side may share a hash.


def spread_keys(keys) -> None:
    """Refuse keys of which more than `_SAME_HASH` share one hash: a set or dict of them would take time that grows
    with the square of their number to build (ints k * (2**61 - 1) all hash to 0), so that one message could
    hold the judge past every time limit. Sets and dicts of fewer keys cost little whatever their hashes."""
    if len(keys) > _SAME_HASH:
        counts: dict[int, int] = {}
        for key in keys:
            code = hash(key)
            counts[code] = found = counts.get(code, 0) + 1
            expect(found <= _SAME_HASH, f"a set or dict with more than {_SAME_HASH} keys of one hash")


def apply(tag: int, obj, content) -> None:
    """Give ``obj`` (of the pair's type) the decoded ``content``, in place."""
    if tag == Tag.LIST:
        obj[:] = content
    elif tag == Tag.SET:
        spread_keys(content)
        obj.clear()
        obj.update(content)
    elif tag in (Tag.DICT, Tag.ODICT, Tag.NAMESPACE):
        items = vars(obj) if tag == Tag.NAMESPACE else obj
        keys, values = content[0::2], content[1::2]
        spread_keys(keys)
        if tag == Tag.NAMESPACE:
            expect(all(type(key) is str for key in keys), "a namespace with a name that is not a string")
        items.clear()
        items.update(zip(keys, values))
    elif tag == Tag.TENSOR:
        _apply_tensor(obj, content)
    else:
        expect(obj.shape == content.shape and obj.dtype == content.dtype, "a shared array changed its shape or dtype")
        obj[...] = content


def _writing(tensor: torch.Tensor):
    """Where a tensor's values and layout are written: a tensor made under inference mode can only be written in it."""
    return torch.inference_mode() if tensor.is_inference() else torch.no_grad()


def rewrite_view(view: torch.Tensor, shape: list, stride: list, offset: int, values: torch.Tensor) -> None:
    """Give a view the shape, strides and offset the sender's has on the storage it views (the sender's may have
    changed them in place: ``unsqueeze_``, ``transpose_``, a ``resize_`` that grew the storage), then its values,
    written through it."""
    with _writing(view):
        if view.shape != values.shape or view.stride() != tuple(stride) or view.storage_offset() != offset:
            last = last_element(shape, stride, offset)
            if last is not None:
                grow_storage(view, last + 1)
            view.as_strided_(shape, stride, offset)
        _write_through(view, values)


def _write_through(tensor: torch.Tensor, values: torch.Tensor) -> None:
    """Write ``values`` (of its shape) into ``tensor``'s memory, at its strides."""
    if torch._debug_has_internal_overlap(tensor) != 1:  # 1: it overlaps; 2: torch cannot tell cheaply (a gap).
        tensor.copy_(values)
    elif tensor.numel():
        # Its elements overlap (``expand``), and torch refuses to write such a tensor: each element is written where
        # it lies in the storage (elements that share a place have one value, read from one memory).
        # The memory holds what the tensor's negative and conjugate bits turn into its values: each is its own inverse.
        if tensor.is_neg():
            values = values.neg()
        if tensor.is_conj():
            values = values.conj().resolve_conj()
        flat = _storage_tensor(tensor)
        places = torch.arange(flat.numel(), device=tensor.device)
        flat[places.as_strided(tensor.shape, tensor.stride(), tensor.storage_offset()).reshape(-1)] = (
            values.reshape(-1).to(tensor.device))


def detach(pair: Pair, new: torch.Tensor) -> None:
    """A view that left its owner's storage on the sender's side: it leaves it here too, with the new values."""
    _apply_tensor(pair.obj, new, in_place=False)
    pair.keep = None


def apply_to_owner(obj: torch.Tensor, new: torch.Tensor) -> None:
    """New values of a tensor that is still on its storage object on the sender's side (`Pair.home`): on the one it
    has here, grown in place where they need more room (``resize_``, ``torch.cat(..., out=owner)``; a storage
    never shrinks, in one process either), and reshaped in place (``unsqueeze_``, ``t_``), so that the views on that
    storage stay on it, as they do on the sender's side."""
    with _writing(obj):
        grow_storage(obj, new.numel())
        obj.as_strided_(new.shape, new.stride(), 0)
        obj.copy_(new)


def _apply_tensor(obj: torch.Tensor, new: torch.Tensor, in_place: bool = True) -> None:
    """Give ``obj`` the values of ``new``: written into its memory where the layout allows (``in_place``), else on
    new memory of its own."""
    if obj.device.type == "meta":
        expect(new.device.type == "meta" and obj.dtype == new.dtype, "a meta tensor got data or another dtype")
        return
    with _writing(obj):
        if obj.dtype != new.dtype:  # ``tensor.data = tensor.data.to(torch.float64)``: the same object, another dtype.
            _clear_bits(obj)
            obj.data = new.to(obj.device)
        # New values of the same shape are written where ``obj`` lies, whatever the strides they came with (a layout
        # that spans too much memory crosses as another of its kind: wire.encode_tensor), so that memory it shares
        # with other tensors here gets them too (red team, round 18); where ``obj``'s elements share places, only
        # alike strides are the same values.
        elif in_place and obj.shape == new.shape and (obj.stride() == new.stride()
                                                      or torch._debug_has_internal_overlap(obj) != 1):
            _write_through(obj, new)  # Through its negative or conjugate bits: it then reads ``new``.
        else:
            _clear_bits(obj)
            obj.set_(new.to(obj.device))


def _clear_bits(tensor: torch.Tensor) -> None:
    """Clear a tensor's negative and conjugate bits (a view that crossed with them, `view_form`), before it gets new
    memory holding values as they read."""
    if tensor.is_neg():
        torch._C._set_neg(tensor, False)
    if tensor.is_conj():
        torch._C._set_conj(tensor, False)


def _parts(pair: Pair):
    """The values a container pair holds (a dict's keys too); none for tensors and arrays."""
    tag, obj = pair.tag, pair.obj
    if tag is _LIST or tag is _SET:
        return obj
    if tag is _DICT:
        return [*obj, *obj.values()]
    if tag is _ODICT:
        return [*dict.keys(obj), *dict.values(obj)]  # Iterating an OrderedDict hashes its keys again (stored.py).
    return vars(obj).values() if tag is Tag.NAMESPACE else ()


# What can neither be a pair nor hold one: left out of `lazy_pairs_in`'s walk as soon as it is seen.
_LEAVES = frozenset({int, float, complex, str, bytes, bool, type(None)})


def lazy_pairs_in(table: PairTable, values) -> list[Pair]:
    """The lazy pairs among ``values`` and all they hold, through tuples, frozensets and lazy pairs (an
    eager pair holds only eager ones); the first value's pair first.

    Numbers and strings never go on the walk's stack: a lazy pair is often a long list of block ids, and
    the kernel walks what an object's ``__dict__`` holds each time the object crosses again."""
    leaves = _LEAVES
    found, seen, stack = [], set(), [value for value in reversed(values) if type(value) not in leaves]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is tuple or kind is frozenset:
            stack.extend([item for item in value if type(item) not in leaves])
        elif id(kind) in PAIR_TAGS or issubclass(kind, torch.Tensor):
            pair = table.find(value)
            if pair is not None and pair.lazy and pair.sid not in seen:
                seen.add(pair.sid)
                found.append(pair)
                stack.extend([item for item in _parts(pair) if type(item) not in leaves])
    return found


def storage_key(tensor: torch.Tensor) -> tuple[str, int]:
    """The storage object a tensor uses: the same after ``resize_`` moves its memory, which every tensor on it follows,
    and another one after ``set_``."""
    return str(tensor.device), tensor.untyped_storage()._cdata


def owns_storage(tensor: torch.Tensor, exact: bool = True) -> bool:
    """Whether ``tensor`` starts at its storage and covers all of it (or, not ``exact``, at least its start),
    densely, so that a view of it can be rebuilt: in any order of its dimensions, so that ``t_()`` leaves an owner
    one."""
    if tensor.device.type == "meta" or tensor.layout != torch.strided or tensor.storage_offset() != 0:
        return False
    size, elements = tensor.untyped_storage().nbytes(), tensor.numel() * tensor.element_size()
    # All of it but fewer bytes than an element (a storage of an odd number of bytes under a float32 tensor) is all
    # that a tensor of its dtype can cover.
    return (tensor.is_contiguous() or dense(tensor)) and elements > 0 and (
        elements <= size < elements + tensor.element_size() or not exact and size > elements)


def last_element(shape, stride, offset: int) -> int | None:
    """Where the last element of a tensor of this layout lies in its storage (in elements); None when it has none."""
    if not all(shape):
        return None
    return offset + sum((size - 1) * step for size, step in zip(shape, stride))


def within_bytes(tensor: torch.Tensor, owner: torch.Tensor) -> bool:
    """Whether every element of ``tensor`` lies among the bytes of ``owner``'s elements, on their storage."""
    places = _byte_range(tensor)
    return places is None or places[1] <= owner.numel() * owner.element_size()


def _byte_range(tensor: torch.Tensor) -> tuple[int, int] | None:
    """The bytes of its storage from a tensor's first element to the end of its last; None when it has none."""
    last = last_element(tensor.shape, tensor.stride(), tensor.storage_offset())
    size = tensor.element_size()
    return None if last is None else (tensor.storage_offset() * size, (last + 1) * size)


def within(shape, stride, offset: int, count: int) -> bool:
    """Whether every element of a tensor of this layout lies among the first ``count`` elements of its storage."""
    last = last_element(shape, stride, offset)
    return last is None or last < count


def grow_storage(tensor: torch.Tensor, count: int) -> None:
    """Make the storage of ``tensor`` hold at least ``count`` of its elements, in place, as ``resize_`` does."""
    storage, size = tensor.untyped_storage(), count * tensor.element_size()
    if storage.nbytes() < size:
        storage.resize_(size)


def _math_bits(tensor: torch.Tensor) -> bool:
    """Whether a tensor's values are its memory's negated or conjugated (``_neg_view``, ``conj``). Such a tensor
    crosses as a view with its bits (`view_form`), or as a copy of its values; never as an owner, whose views would
    read its memory's signs (red team 2026-12-07: a result made with ``_neg_view`` reached the test so)."""
    return tensor.is_neg() or tensor.is_conj()


def view_form(tensor: torch.Tensor) -> tuple:
    """What a view crossed with besides its place: its dtype and its negative and conjugate bits (`PairTable.on_owner`:
    a view that changed any of them in place no longer crosses as one)."""
    return tensor.dtype, tensor.is_neg(), tensor.is_conj()


def unshared_base(table: PairTable, tensor: torch.Tensor) -> torch.Tensor | None:
    """The tensor whose whole storage ``tensor`` views, when no pair holds it yet: it crosses with the view.

    That is its ``_base`` where that can own the storage; otherwise, for a tensor that views part of its storage, a
    plain tensor made over all of it (`_storage_tensor`). ``detach()`` keeps the memory but drops the ``_base``, and
    a base of a subclass (``nn.Parameter``) cannot cross as the owner: such a view crossed as a dense copy of its
    values, with none of its strides or of the memory it shares (red team, round 18: a pool's K and V halves of one
    tensor, and a cache's blocks handed out as views, read on the judge's side as contiguous tensors of their own)."""
    if tensor.device.type == "meta" or tensor.layout != torch.strided:
        return None
    base = tensor._base
    if base is None or type(base) is not torch.Tensor or not owns_storage(base) or _math_bits(base) \
            or base.dtype != tensor.dtype and tensor.requires_grad:
        base = None if owns_storage(tensor) or tensor.requires_grad else _storage_tensor(tensor)
        if base is None:
            return None
    elif table.find(base) is not None:
        return None
    if not _worth_whole(tensor):
        return None
    key = storage_key(base)
    current = table.owners.get(key)
    if current is not None and table.is_owner(current):
        return None  # Another tensor (a view of another dtype, with no base) owns it: the base could not.
    return base if storage_key(tensor) == key else None


_WHOLE_BYTES = 16 << 20  # A storage up to this size crosses whole with a view of any part of it (`_worth_whole`).


def _worth_whole(tensor: torch.Tensor) -> bool:
    """Whether a view's whole storage crosses with it: one of at most `_WHOLE_BYTES`, or at most four times what the
    view spans. A small view of a larger storage (a scratch arena) crosses as a copy of its elements, which two
    such views may not share (`PairTable.check_shared_memory`): sent whole, the storage could pass the message's
    limit, or cost seconds at every message (fairness round, round 18: detached views of 50 to 300 MB arenas)."""
    size = tensor.untyped_storage().nbytes()
    if size <= _WHOLE_BYTES:
        return True
    places = _byte_range(tensor)
    return places is not None and size <= 4 * (places[1] - places[0])


def _storage_tensor(tensor: torch.Tensor) -> torch.Tensor | None:
    """A new plain tensor of ``tensor``'s dtype over as many of its elements as its storage holds (None where that is
    none)."""
    storage, size = tensor.untyped_storage(), tensor.element_size()
    if storage.nbytes() < size:
        return None
    return torch.empty(0, dtype=tensor.dtype, device=tensor.device).set_(storage, 0, (storage.nbytes() // size,), (1,))


class Pair:
    """One shared pair on one side."""

    __slots__ = ("sid", "tag", "obj", "recorded", "lazy", "quiet", "resting", "valid_at", "read_at", "keep",
                 "owner_key", "home", "view_form")

    def __init__(self, sid: int, tag: int, obj, lazy: bool) -> None:
        self.sid, self.tag, self.obj, self.lazy = sid, tag, obj, lazy
        self.quiet = False  # An eager mirrored __dict__ that only the judge's handle holds (`PairTable.quieten`).
        self.resting = False  # An eager pair of the kernel's that nothing but the table can reach (`PairTable.scan`).
        self.recorded = None
        self.valid_at = -1  # The judge's count of the kernel's messages when a lazy pair was last current.
        self.read_at = 0  # The judge's count of its own messages when the test last read a mirrored __dict__.
        self.keep = None  # A view's storage owner: its pair stays while the view's does (`PairTable.scan`).
        self.view_form = None  # What a view crossed with besides its place (`view_form`).
        self.owner_key = None  # The storage this tensor owns on both sides (`PairTable.own`), if any.
        # The storage object a tensor that was an owner is still on, on both sides (`codec.Codec.content`): a change of
        # size or shape keeps it there, with the views on it.
        self.home = None

    def record(self) -> None:
        self.recorded = snapshot(self.tag, self.obj)

    def changed(self) -> bool:
        """Whether the object changed since it last crossed; a pair that the message being encoded made
        (not recorded yet) carries its whole content in that message already."""
        return self.recorded is not None and changed(self.tag, self.obj, self.recorded)


class PairTable:
    """The pairs of one side for one test cell: by sid, and by the id of the object."""

    def __init__(self, parity: int) -> None:
        self.parity = parity  # 0: this side makes even ids (the judge); 1: odd ones (the kernel).
        self.by_sid: dict[int, Pair] = {}
        self.by_id: dict[int, Pair] = {}
        self.eager: dict[int, Pair] = {}  # The eager pairs, by sid: what `scan` looks at.
        self.next_sid = 2 + parity
        # Tensors that own their whole storage on both sides, by storage (`own`): a view of one crosses as a view.
        self.owners: dict[tuple[str, int], Pair] = {}
        # Lazy or quiet pairs the judge changed (its writes to a mirrored __dict__), by sid: each crosses once per
        # message, however many attributes the test set since the last one.
        self.dirty: dict[int, Pair] = {}
        self.orphans: list[Pair] = []  # Quiet pairs whose handle the test let go of (handles.Handle.__del__).
        # Tensors that crossed as copies of their values (neither an owner nor a view), by storage: no other tensor
        # that crosses may share their memory (`check_shared_memory`).
        self.copies: dict[tuple[str, int], list[Pair]] = {}
        # The memory of each storage object that a tensor crossed on, and one such pair: no two storage objects that
        # crossed may share memory (``torch.from_numpy`` makes one of its own over memory another may have).
        self.memory: dict[tuple[str, int], tuple[int, int, Pair]] = {}

    def find(self, obj) -> Pair | None:
        pair = self.by_id.get(id(obj))
        if pair is None or pair.obj is not obj:
            return None
        if pair.resting:  # Whoever gave the object can change it.
            self.rouse(pair)
        return pair

    def add(self, obj, tag: int, sid: int | None = None, lazy: bool = False) -> Pair:
        """Register ``obj``: a new pair of this side, or (with ``sid``) one the other side made."""
        if sid is None:
            sid, self.next_sid = self.next_sid, self.next_sid + 2
        else:
            expect(type(sid) is int and sid > 0 and sid % 2 != self.parity, "a shared id of the wrong side")
            expect(sid not in self.by_sid, "a shared id that is already taken")
        pair = Pair(sid, tag if type(tag) is Tag else Tag(tag), obj, lazy)
        self.by_sid[sid] = pair
        self.by_id[id(obj)] = pair
        if not lazy:
            self.eager[sid] = pair
        return pair

    def own(self, pair: Pair, owns: bool, sent: bool = True) -> bool:
        """Record whether the tensor of ``pair`` owns its storage on both sides; whether it does now. The sender of a
        tensor's content decides (``sent``): a storage keeps an owner that still owns it, and the content says
        what was decided (`codec.Codec.content`). The receiver follows (not ``sent``): a tensor that only views part
        of its storage on the sender's side owns all of its copy on the receiver's, yet is no owner there either.
        Views of an owner cross as views (`owner_of`), and the receiver rebuilds them on its own owner."""
        key = pair.owner_key
        if key is not None and self.owners.get(key) is pair:
            del self.owners[key]
        pair.owner_key = None
        if not owns:
            return False
        key = storage_key(pair.obj)
        current = self.owners.get(key)
        if sent and current is not None and self.is_owner(current):
            return False
        self.owners[key], pair.owner_key = pair, key
        if pair.home is None:
            pair.home = key
        return True

    def check_shared_memory(self, pair: Pair, copy: bool) -> None:
        """Refuse a new tensor pair that shares memory with another tensor that crossed, where one of them crosses as
        a copy of its values (``copy``: ``pair``'s does): the other side would hold two tensors of their own, and a
        write into one would not show in the other, as it does here (red team, round 18: K and V put on one storage
        of an odd number of bytes, before such a storage could have an owner). Tensors that share memory cross as an
        owner and its views (`owner_of`, `unshared_base`); what is left is views that require grad of a tensor that
        cannot cross as their owner (an ``nn.Parameter``), or of another dtype, and tensors on a storage whose owner
        a view's ``resize_`` grew. Two copies whose bytes lie apart pass."""
        obj = pair.obj
        if obj.device.type == "meta" or obj.layout != torch.strided:
            return
        key = storage_key(obj)
        self._check_storage_memory(key, pair)
        places = _byte_range(obj)
        if places is None:
            return
        others = [other for other in self.copies.get(key, ()) if other is not pair]
        owner = self.owners.get(key)
        if copy and owner is not None and owner is not pair and self.is_owner(owner):
            # (One that no longer owns its storage, a ``resize_`` of a view having grown it, shares it with its
            # former views as copies, as the README says.)
            others.append(owner)
        for other in others:
            if self.by_sid.get(other.sid) is other and storage_key(other.obj) == key:
                there = _byte_range(other.obj)
                if there is not None and places[0] < there[1] and there[0] < places[1]:
                    raise WireError("two tensors that share memory cannot cross, unless one of them covers all of "
                                    "that memory and the other views it")
        if copy:
            self.copies.setdefault(key, []).append(pair)

    def note_memory(self, pair: Pair) -> None:
        """Note the memory of a tensor that came from the other side (new memory of its own), so that no storage
        that this side's code makes over it crosses (`_check_storage_memory`)."""
        obj = pair.obj
        if obj.device.type != "meta" and obj.layout == torch.strided:
            storage = obj.untyped_storage()
            self.memory[storage_key(obj)] = (storage.data_ptr(), storage.data_ptr() + storage.nbytes(), pair)

    def _check_storage_memory(self, key: tuple[str, int], pair: Pair) -> None:
        """Refuse a tensor on a storage object other than those that crossed before it, but over memory that one of
        them has: storages that ``torch.from_numpy`` made over one NumPy array, or over a tensor's ``.numpy()``, are
        objects of their own, and their tensors would cross as owners that share nothing on the other side (red
        team, round 18: K and V made so passed 2.5's check that they are two memories, and 5.3.1's)."""
        known = self.memory.get(key)
        if known is not None and self.by_sid.get(known[2].sid) is known[2] and storage_key(known[2].obj) == key:
            return
        storage = pair.obj.untyped_storage()
        start = storage.data_ptr()
        end = start + storage.nbytes()
        if end > start:
            by_sid = self.by_sid
            for other_key, (other_start, other_end, other) in list(self.memory.items()):
                if by_sid.get(other.sid) is not other:
                    del self.memory[other_key]  # No pair holds that storage any more: its memory may be another's.
                    continue
                if other_key[0] != key[0] or not (other_start < end and start < other_end) or other_key == key:
                    continue
                if storage_key(other.obj) != other_key:
                    del self.memory[other_key]  # Its tensor moved to another storage (``set_``).
                    continue
                memory = other.obj.untyped_storage()
                if memory.data_ptr() < end and start < memory.data_ptr() + memory.nbytes():
                    raise WireError("two tensors on storages that share memory (torch.from_numpy of one array, or "
                                    "of a tensor's .numpy()) cannot cross")
        self.memory[key] = (start, end, pair)

    def is_owner(self, pair: Pair) -> bool:
        """Whether the tensor of ``pair`` is its storage's owner on both sides (`own`) and still starts it, densely.
        Its storage may be larger here than the sender's (a receiver's storage only grows: `apply_to_owner`): a view
        that crosses lies within the owner's elements (`owner_of`)."""
        key = pair.owner_key
        return (key is not None and self.owners.get(key) is pair and self.by_sid.get(pair.sid) is pair
                and storage_key(pair.obj) == key and owns_storage(pair.obj, exact=False))

    def promote(self, pair: Pair) -> None:
        """A lazy pair becomes eager (the test can reach it now)."""
        pair.lazy = False
        self.eager[pair.sid] = pair

    def demote(self, pair: Pair) -> None:
        """An eager pair becomes lazy (the test has not read it for a while: `remote.JudgePeer.demote_unread`)."""
        pair.lazy, pair.quiet, pair.resting = True, False, False
        self.eager.pop(pair.sid, None)

    def rouse(self, pair: Pair) -> None:
        """A resting pair is scanned again: the table hands its object out (`get`, `find`)."""
        pair.resting = False
        self.eager[pair.sid] = pair

    def quieten(self, pair: Pair) -> None:
        """An eager pair that only the judge's own code can change stops being scanned: the mirrored ``__dict__``
        of a student's object, which the test reads through its handle but does not hold. The judge changes it
        only in `handles.Handle.__setattr__` and ``__delattr__``, which mark it dirty (`dirty`), and through the
        kernel's updates, which record it; `wake` puts it back among the scanned ones when the test gets the
        dict itself (``obj.__dict__``, or the kernel sends it as a value). Both sides still hold it as eager."""
        if not pair.lazy and not pair.quiet:
            pair.quiet = True
            self.eager.pop(pair.sid, None)

    def wake(self, pair: Pair) -> None:
        """A quiet pair is scanned again (the test can reach the object itself now)."""
        pair.quiet = False
        if not pair.lazy:
            self.eager[pair.sid] = pair

    def owner_pair(self, view: Pair) -> Pair | None:
        """The pair of the tensor that ``view`` crossed as a view of (`Pair.keep`), while that tensor has one."""
        keep = view.keep
        if keep is None:
            return None
        owner = self.by_id.get(id(keep))
        return owner if owner is not None and owner.obj is keep else None

    def on_owner(self, pair: Pair) -> bool:
        """Whether ``pair`` is a view (it crossed as one) that is still, with its dtype, on the storage object its
        owner has on both sides (`Pair.home`), whether or not the owner still owns it: then its update says where it
        lies there, and the receiver writes it there."""
        owner = self.owner_pair(pair)
        return (owner is not None and owner.home is not None and view_form(pair.obj) == pair.view_form
                and storage_key(pair.obj) == owner.home)

    def with_owners(self, changed: list[Pair], lazy_owners: bool) -> list[Pair]:
        """The changed pairs in the order their updates cross: tensors first, since a container's new content may
        hold a new view of one, which must find its owner as it is now (grown by ``out=``, say); among them the
        owners, then the other tensors, then the views, whose updates must find their owner's ownership as it is
        now on both sides (`codec.Codec.content`). With ``lazy_owners`` (the kernel's side, whose objects are the
        student's own) the lazy owners of changed views come too, if they changed: `scan` does not look at them, and
        the student's code changes them through its views. The judge's lazy pairs are copies that may be out of
        date, which it never sends: a view's update carries its own values."""
        tensors = [pair for pair in changed if pair.tag is _TENSOR]
        if not tensors:
            return changed
        views = [pair for pair in tensors if pair.keep is not None]
        owners = []
        if lazy_owners and views:
            listed = {pair.sid for pair in changed}
            for view in views:
                owner = self.owner_pair(view)
                if owner is not None and owner.sid not in listed and owner.changed():
                    owners.append(owner)
                    listed.add(owner.sid)
        owners += [pair for pair in tensors if pair.owner_key is not None]
        others = [pair for pair in tensors if pair.keep is None and pair.owner_key is None]
        return owners + others + views + [pair for pair in changed if pair.tag is not _TENSOR]

    def owner_of(self, tensor: torch.Tensor) -> Pair | None:
        """The shared tensor whose storage ``tensor`` views (so that the view crosses as one), if any. A view of another
        dtype (``Tensor.view(dtype)``) crosses as one too, where it lies within its owner's bytes (but one that
        requires grad: the receiver makes it on the owner's storage, where autograd would not follow it), and so does
        a view whose values negate or conjugate its memory (``_neg_view``, ``conj``), with those bits."""
        if tensor.device.type == "meta" or tensor.layout != torch.strided:
            return None
        owner = self.owners.get(storage_key(tensor))
        if (owner is None or owner.obj is tensor or self.find(owner.obj) is not owner or _math_bits(owner.obj)
                or owner.obj.dtype != tensor.dtype and tensor.requires_grad):
            return None
        return owner if self.is_owner(owner) and within_bytes(tensor, owner.obj) else None

    def get(self, sid) -> Pair:
        pair = self.by_sid.get(sid) if type(sid) is int else None
        if pair is None:
            raise WireError(f"the shared id {sid!r} was never issued")
        if pair.resting:  # A message names it: its object is about to be handed out, or written.
            self.rouse(pair)
        return pair

    def scan(self, drop_unreferenced: bool) -> tuple[list[Pair], list[int]]:
        """The eager pairs whose object changed since it last crossed, and (the judge's side) the pairs
        dropped because only this table still held their object; one pass over the eager pairs. On the kernel's
        side (not ``drop_unreferenced``) an unchanged pair that only this table can reach rests instead, until
        the table hands it out again (`rouse`)."""
        if self.orphans:
            # Scanned once more, so that one that nothing else holds is dropped now (and its kernel's pair with it).
            for pair in self.orphans:
                if pair.quiet and self.by_sid.get(pair.sid) is pair:
                    self.wake(pair)
            self.orphans = []
        changed_pairs, dropped, resting = [], [], []
        is_, getrefcount, getweakrefcount = operator.is_, sys.getrefcount, weakref.getweakrefcount
        for pair in self.eager.values():
            tag, obj, recorded = pair.tag, pair.obj, pair.recorded
            # getrefcount sees the Pair's reference, the local name and its own argument. One that changed since it
            # last crossed is dropped at a later scan: its change crosses first (``obj.items.append(x)`` changes a
            # list that only this table holds once the statement ends, when the object keeps it in a slot). A tensor
            # that is no view of a shared one and whose memory another tensor shares (a ``detach()``ed view of it
            # holds no reference to it) is kept: the other side's writes into it must reach that memory.
            if (drop_unreferenced and getrefcount(obj) <= 3 and pair.sid not in self.dirty and not pair.changed()
                    and (tag is not _TENSOR or pair.keep is not None or _memory_alone(obj))):
                dropped.append(pair.sid)
                continue
            if tag is _LIST or tag is _SET:
                moved = len(obj) != len(recorded) or not all(map(is_, obj, recorded))
            elif tag is _DICT:
                moved = (len(obj) != len(recorded[0]) or not all(map(is_, obj, recorded[0]))
                         or not all(map(is_, obj.values(), recorded[1])))
            elif tag is _ODICT:
                moved = len(obj) != len(recorded[0]) or changed(tag, obj, recorded)
            else:
                moved = changed(tag, obj, recorded)
            if moved:
                changed_pairs.append(pair)
            elif (not drop_unreferenced and getrefcount(obj) <= 3
                  and not getweakrefcount(obj)  # A weak reference (a proxy, a WeakValueDictionary) reaches it too.
                  and (tag is _LIST or tag is _SET or tag is _DICT or tag is _ODICT
                       or tag is _TENSOR and _memory_alone(obj))):
                resting.append(pair)
        obj = None  # The last object scanned is not held past the scan.
        for sid in dropped:
            self.drop(sid)
        for pair in resting:
            pair.resting = True
            del self.eager[pair.sid]
        return changed_pairs, dropped

    def settle(self) -> None:
        """Record again the eager tensors and arrays that the other side's update just wrote through another one.

        A tensor and its view share their memory and their version counter: an update written into one changes
        the other too. This side has run nothing of its own since its last message, whose scan recorded every
        eager pair, so what changed now is only what the update wrote; without this, each side would send the
        other pair back at every message, for ever. Lazy pairs are left alone: their changes are only looked
        for when they are read, and an unneeded update then is all it costs."""
        for pair in self.eager.values():
            tag = pair.tag
            if (tag is _TENSOR or tag is Tag.NDARRAY) and pair.changed():
                pair.record()

    def sweep(self) -> list[int]:
        """Drop the lazy and quiet pairs whose object only this table still holds (the judge's side), but for those
        whose change the message being sent carries (`dirty`); their sids."""
        getrefcount, dropped, dirty = sys.getrefcount, [], self.dirty
        for pair in self.by_sid.values():
            obj = pair.obj
            # getrefcount sees the Pair's reference, the local name and its own argument. A dirty one (the test wrote
            # to the student's object through its handle, then let go of it) crosses with this message: a later
            # sweep drops it.
            if (pair.lazy or pair.quiet) and getrefcount(obj) <= 3 and pair.sid not in dirty:
                dropped.append(pair.sid)
        obj = None
        for sid in dropped:
            self.drop(sid)
        return dropped

    def drop(self, sid):
        """Forget the pair ``sid``; its object (None for an unknown sid), which the caller may still hold."""
        pair = self.by_sid.pop(sid, None)
        if pair is None:
            return None
        self.eager.pop(sid, None)
        if self.by_id.get(id(pair.obj)) is pair:
            del self.by_id[id(pair.obj)]
        if pair.owner_key is not None and self.owners.get(pair.owner_key) is pair:
            del self.owners[pair.owner_key]
        return pair.obj
