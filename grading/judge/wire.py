"""The judge's wire format: values as trees of plain msgpack data, framed on a stream socket.

Nothing here runs code when it decodes: a message is msgpack without maps or extension types (so
decoding builds only None, bools, ints, floats, strings, bytes and lists), and every value that is
not one of those travels as a list whose first item is a tag (`Tag`). The walkers of
``codec.py`` turn those trees into values; this module holds what both sides share: the tags, the
limits, the leaf values (tensors, NumPy arrays and scalars, dtypes, devices, big ints...) and the
framing. It imports only the standard library, msgpack, NumPy and torch, because the grader sends
its source into the student's kernel, where the agent runs it (grading/judge/agent.py). Messages
are one msgpack value each, back to back on the socket (`Framing`).

Every limit (`Limits`) is checked when a message is read or built; breaking one raises
`WireError`, which fails the test cell that was running, never the judge.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import math
import re
from dataclasses import dataclass
from enum import IntEnum

import msgpack
import numpy
import torch


class WireError(Exception):
    """A message that breaks the format or one of its limits."""


@dataclass(frozen=True)
class Limits:
    """How large a message may be, and how deep and wide its values."""

    message_bytes: int = 256 << 20
    depth: int = 64
    items: int = 4_000_000
    text: int = 1 << 20  # A name, an exception's message, a repr.
    int_bytes: int = 4096  # A big int's bytes (about 9,800 decimal digits).


LIMITS = Limits()


class Tag(IntEnum):
    """The first item of every list on the wire: what the list encodes."""

    TUPLE = 1  # [TUPLE, item...]
    LIST = 2  # [LIST, sid, [item...]]  a shared pair (peer.py), as are the next five
    DICT = 3  # [DICT, sid, [key, value, ...]]
    ODICT = 4  # [ODICT, sid, [key, value, ...]]  collections.OrderedDict
    SET = 5  # [SET, sid, [item...]]
    NAMESPACE = 6  # [NAMESPACE, sid, [name, value, ...]]  types.SimpleNamespace
    TENSOR = 7  # [TENSOR, sid, leaf]  leaf: see `encode_tensor`
    NDARRAY = 8  # [NDARRAY, sid, leaf]
    REF = 9  # [REF, sid]  a pair the receiver already has
    FROZENSET = 10  # [FROZENSET, item...]
    BIGINT = 11  # [BIGINT, signed little-endian bytes]
    COMPLEX = 12  # [COMPLEX, real, imag]
    DTYPE = 13  # [DTYPE, name]
    DEVICE = 14  # [DEVICE, "cuda:0"]
    SIZE = 15  # [SIZE, dim...]
    SLICE = 16  # [SLICE, start, stop, step]
    ELLIPSIS = 17  # [ELLIPSIS]
    NPSCALAR = 18  # [NPSCALAR, dtype str, bytes]
    RANGE = 19  # [RANGE, start, stop, step]
    MAPPINGPROXY = 20  # [MAPPINGPROXY, [key, value, ...]]  a read-only copy
    PROPERTY = 21  # [PROPERTY, fget, fset, fdel, doc]
    STATICMETHOD = 22  # [STATICMETHOD, function]
    CLASSMETHOD = 23  # [CLASSMETHOD, function]
    GLOBAL = 24  # [GLOBAL, module, qualname]  a function or class of an allowed module
    MODULE = 25  # [MODULE, name]  an allowed module
    # [OBJECT, oid, class node, hash or None, kind(, its __dict__)]  an object of the kernel;
    # [OBJECT, oid, method names or None, None, kind, GLOBAL node of its class or None]  an object of the judge
    OBJECT = 26
    CLASS = 27  # [CLASS, oid, name, qualname, module, flags, data names, method names]
    CLASSREF = 28  # [CLASSREF, oid]  a class the sender sent before in this test
    YOURS = 29  # [YOURS, oid]  an object of the receiver, coming back
    EXCEPTION = 30  # [EXCEPTION, [class names of the MRO], [arg...], message, [whether each is Python's own]]
    NOTIMPLEMENTED = 31  # [NOTIMPLEMENTED]
    BOUND = 32  # [BOUND, oid, name]  a method of the receiver's object (the judge's remote methods)
    # [VIEW, sid, owner node, shape, stride, offset]  a new tensor pair viewing a shared tensor's storage; as a view's
    # update: [VIEW, shape, stride, offset, leaf], where it lies on its owner's storage now, and its values
    VIEW = 33
    PROMOTE = 35  # [PROMOTE, sid, content]  a lazy pair the receiver has, eager from now on, and all it holds
    VALIDATE = 36  # [VALIDATE, sid, content or None, [[sid, content]...]]  a lazy pair and what changed under it
    UPDATE = 37  # [UPDATE, sid, content]  a lazy pair the receiver has, with its new content; it stays lazy


CLASS_NAMES = 2000  # At most this many attribute names in a class node, or method names in an object node.

PAIR_TAGS = frozenset({Tag.LIST, Tag.DICT, Tag.ODICT, Tag.SET, Tag.NAMESPACE, Tag.TENSOR, Tag.NDARRAY})

_DEVICE = re.compile(r"[a-z_]+(:[0-9]{1,4})?")


class Framing:
    """Messages to bytes and back, for one connection: a msgpack stream, one value per message.

    Decoding builds only None, bools, ints, floats, strings, bytes and lists: maps and extension
    types are refused, and so is a message over the size limit or with too many items.
    """

    def __init__(self, limits: Limits = LIMITS) -> None:
        self.limits = limits
        self.packer = msgpack.Packer(use_bin_type=True, unicode_errors="surrogatepass")
        self.unpacker = msgpack.Unpacker(raw=False, use_list=True, strict_map_key=True, max_map_len=0,
                                         max_ext_len=0, max_buffer_size=limits.message_bytes,
                                         max_array_len=limits.items, unicode_errors="surrogatepass")

    def pack(self, tree) -> bytes:
        try:
            data = self.packer.pack(tree)
        except (ValueError, TypeError, OverflowError) as error:
            self.packer.reset()
            raise WireError(f"a value could not be encoded: {error}") from None
        if len(data) > self.limits.message_bytes:
            raise WireError(f"a message of {len(data)} bytes is over the limit of {self.limits.message_bytes}")
        return data

    def feed(self, data: bytes) -> None:
        try:
            self.unpacker.feed(data)
        except msgpack.BufferFull:
            raise WireError(f"a message over the limit of {self.limits.message_bytes} bytes") from None

    def next(self):
        """The next whole message; None when more bytes are needed."""
        try:
            return next(self.unpacker, None)
        except (ValueError, TypeError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as error:
            raise WireError(f"a message is not valid: {error}") from None


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise WireError(what)


def text(value, limits: Limits = LIMITS) -> str:
    """A name or message from a peer: a str within the text limit."""
    expect(type(value) is str and len(value) <= limits.text, "a name or message that is not a short string")
    return value


def same_plain(old, new) -> bool:
    """Whether writing ``new``, a value that holds nothing shared (an int, a str, a device...), over ``old`` changes
    nothing anyone could see: the same type and an equal value, where -0.0 is not 0.0 (nor complex zeros alike)."""
    if old is new:
        return True
    kind = type(old)
    if kind is not type(new) or kind is complex:
        return False
    return old == new and (kind is not float or math.copysign(1.0, old) == math.copysign(1.0, new))


def encode_int(value: int):
    if -(1 << 63) <= value < (1 << 64):
        return value
    size = (value.bit_length() + 8) // 8
    if size > LIMITS.int_bytes:
        raise WireError(f"an int of {value.bit_length()} bits is over the limit")
    return [Tag.BIGINT, value.to_bytes(size, "little", signed=True)]


def decode_bigint(node: list) -> int:
    expect(len(node) == 2 and type(node[1]) is bytes and 0 < len(node[1]) <= LIMITS.int_bytes, "a malformed int")
    return int.from_bytes(node[1], "little", signed=True)


def _element_count(shape, limits: Limits) -> int:
    expect(type(shape) is list and len(shape) <= limits.depth, "a malformed shape")
    count = 1
    for size in shape:
        expect(type(size) is int and 0 <= size <= limits.message_bytes, "a malformed shape")
        count *= size
        expect(count <= limits.message_bytes, "a shape over the size limit")
    return count


@functools.cache
def _dtype_name(dtype: torch.dtype) -> str:
    """A dtype's name on the wire (found once per dtype)."""
    return str(dtype).removeprefix("torch.")


@functools.cache
def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


# What a tensor's flags say (`encode_tensor`): autograd records what is done with it (a leaf, or the result of an
# operation that autograd recorded), or it was made under `torch.inference_mode()`. Each decides which in-place writes
# torch allows, so the receiver makes its tensor so too. A shared tensor's content also says whether the sender's
# tensor owns its whole storage (`codec.Codec.content`): only then may views of it cross as views (pairs.py); and,
# for an owner's update, whether it is still on the storage object it owned before (`pairs.apply_to_owner`).
REQUIRES_GRAD, NOT_A_LEAF, INFERENCE, OWNS_STORAGE, SAME_STORAGE = 1, 2, 4, 8, 16


def encode_tensor(tensor: torch.Tensor) -> list:
    """``[dtype, shape, stride or None, device, bytes, flags]``: the values, wherever the tensor lives."""
    if not tensor_crosses(tensor):
        raise WireError(f"a {'quantized' if tensor.is_quantized else 'nested' if tensor.is_nested else tensor.layout} "
                        "tensor cannot cross")
    device = tensor.device
    data = flat_bytes(tensor) if device.type != "meta" else b""
    strides = tensor.stride()
    # The strides cross where they are not the default ones: torch calls a tensor contiguous whatever the strides of
    # its dimensions of one element, yet compares them (an ``out=`` that is its input, laid out alike, may be written
    # in place; laid out otherwise, it is refused). Strides with gaps or on which elements share a place (``expand``)
    # cross too, where the memory they span is not much more than the elements' (`_spans`): a tensor that crosses as
    # a copy of its values (a view of a storage too large to send whole, a view that requires grad of a parameter)
    # keeps its layout, so that ``is_contiguous()``, and whether torch lets a test write it, are on the judge's side
    # as in the kernel (red team, round 18).
    if tensor.is_contiguous():
        stride = list(strides) if strides != _default_strides(tensor.shape) else None
    elif _spans(tensor.shape, strides) is not None:
        stride = list(strides)
    else:
        # Strides that span too much memory to allocate on the other side: a layout of the same kind stands in for
        # them, every other element apart (or none apart where they share a place), so that it is not contiguous
        # there either.
        stride = [0 if step == 0 and size > 1 else 2 * default
                  for step, size, default in zip(strides, tensor.shape, _default_strides(tensor.shape))]
    flags = (REQUIRES_GRAD | (0 if tensor.is_leaf else NOT_A_LEAF) if tensor.requires_grad else 0) | (
        INFERENCE if tensor.is_inference() else 0)
    return [_dtype_name(tensor.dtype), list(tensor.shape), stride, str(device), data, flags]


def flat_bytes(tensor: torch.Tensor) -> bytes:
    """The values of a strided tensor in row-major order, as bytes on the CPU (b"" when it has none).

    A CPU tensor's are read from its memory, at its strides, without any operation of torch's: the student's code
    may have put a kernel of its own in place of one (``torch.library``, red team 2026-12-07: a ``detach`` that gave
    an argument's old values back hid an in-place write from the judge)."""
    if tensor.device.type == "cpu":
        if not (tensor.is_neg() or tensor.is_conj()):
            return _strided_bytes(tensor)
        resolved = _resolved_bits(tensor)
        if resolved is not None:
            return resolved
    flat = tensor.detach().resolve_conj().resolve_neg().reshape(-1)  # A view of a contiguous tensor, else a copy.
    if not flat.numel():
        return b""
    if flat.stride(0) != 1:
        # One element may lie at any stride (``torch.zeros(1, 2)[:, 0]``), and torch calls that contiguous.
        flat = flat.clone(memory_format=torch.contiguous_format)
    return memory_bytes(flat.cpu())


_NUMPY_OF = {torch.float16: numpy.float16, torch.float32: numpy.float32, torch.float64: numpy.float64,
             torch.int8: numpy.int8, torch.int16: numpy.int16, torch.int32: numpy.int32, torch.int64: numpy.int64,
             torch.uint8: numpy.uint8, torch.complex64: numpy.complex64, torch.complex128: numpy.complex128}


def _resolved_bits(tensor: torch.Tensor) -> bytes | None:
    """The values of a CPU tensor with its negative or conjugate bit set, worked out from its memory with NumPy (None
    for a dtype NumPy lacks: torch's own operations then read it)."""
    kind = _NUMPY_OF.get(tensor.dtype)
    if kind is None:
        return None
    values = numpy.frombuffer(_strided_bytes(tensor), dtype=kind)
    if tensor.is_conj():
        values = numpy.conj(values)
    if tensor.is_neg():
        values = numpy.negative(values)
    return values.tobytes()


def _strided_bytes(tensor: torch.Tensor) -> bytes:
    """A CPU tensor's elements in row-major order, read at its strides from its memory with NumPy."""
    count, size = tensor.numel(), tensor.element_size()
    if not count:
        return b""
    if tensor.is_contiguous():
        return ctypes.string_at(tensor.data_ptr(), count * size)
    span = (sum((n - 1) * stride for n, stride in zip(tensor.shape, tensor.stride())) + 1) * size
    memory = numpy.frombuffer((ctypes.c_char * span).from_address(tensor.data_ptr()), dtype=numpy.uint8)
    elements = numpy.lib.stride_tricks.as_strided(memory, shape=(*tensor.shape, size),
                                                  strides=(*(stride * size for stride in tensor.stride()), 1))
    return elements.tobytes()


def memory_bytes(tensor: torch.Tensor) -> bytes:
    """The bytes of a contiguous CPU tensor's elements, read from its memory. No NumPy array is made over that
    memory: torch would mark the tensor's storage as one that cannot be resized, for good, and a student's buffer
    that crossed once could no longer grow (``buffer.resize_(n)``, ``torch.cat(..., out=buffer)``)."""
    return ctypes.string_at(tensor.data_ptr(), tensor.numel() * tensor.element_size())


def _default_strides(shape) -> tuple:
    """The strides torch gives a new tensor of ``shape`` (``torch.empty(shape).stride()``)."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _spans(shape, stride) -> int | None:
    """How many elements of memory a layout spans, from its first element to its last; None where that is more than
    four times its elements (and 4,096 more): the receiver allocates what it spans."""
    extent, count = 1, 1
    for step, size in zip(stride, shape):
        if size > 1:
            extent += (size - 1) * step
            count *= size
    return extent if extent <= 4 * count + 4096 else None


def _overlaps(shape, stride) -> bool:
    """Whether two elements of a layout lie at one place (``expand`` gives such a layout)."""
    extent = 1
    for step, size in sorted((step, size) for step, size in zip(stride, shape) if size > 1):
        if step < extent:
            return True  # This dimension's steps land among the elements of the ones before it.
        extent += (size - 1) * step
    return False


def dense(tensor: torch.Tensor) -> bool:
    """Whether the strides cover each element once (so that they can be rebuilt)."""
    if tensor.is_contiguous():
        return False  # The default strides; nothing to send.
    pairs = sorted((s, n) for s, n in zip(tensor.stride(), tensor.shape) if n > 1)
    expected = 1
    for stride, size in pairs:
        if stride != expected:
            return False
        expected *= size
    return True


def decode_tensor(leaf, limits: Limits = LIMITS) -> torch.Tensor:
    expect(type(leaf) is list and len(leaf) == 6, "a malformed tensor")
    name, shape, stride, device, data, flags = leaf
    expect(type(flags) is int and 0 <= flags <= REQUIRES_GRAD | NOT_A_LEAF | INFERENCE | OWNS_STORAGE | SAME_STORAGE
           and (flags & REQUIRES_GRAD or not flags & NOT_A_LEAF), "a tensor with malformed flags")
    # An inference tensor is made in inference mode, where autograd records nothing: it is a leaf.
    with torch.inference_mode() if flags & INFERENCE else contextlib.nullcontext():
        values = _decoded_values(name, shape, stride, device, data, limits)
        if flags & REQUIRES_GRAD:
            expect(values.dtype.is_floating_point or values.dtype.is_complex, "an integer tensor that requires grad")
            values.requires_grad_(True)
    if flags & NOT_A_LEAF and not flags & INFERENCE:
        return values.clone()  # Recorded by autograd: written in place as an operation's result may be.
    return values


def _decoded_values(name, shape, stride, device, data, limits: Limits) -> torch.Tensor:
    dtype = decode_dtype([Tag.DTYPE, name])
    count = _element_count(shape, limits)
    device = decode_device([Tag.DEVICE, device])
    expect(type(data) is bytes, "a malformed tensor")
    if device.type == "meta":
        expect(not data, "a meta tensor with data")
        return torch.empty(shape, dtype=dtype, device=device)
    itemsize = _itemsize(dtype)
    expect(len(data) == count * itemsize, "a tensor whose bytes do not match its shape and dtype")
    values = _tensor_of_bytes(data, dtype, shape)
    if stride is not None:
        # A dimension of one element, or any of a tensor without elements, may have any stride (no element lies
        # there): ``t[:1]`` of a longer tensor, permuted.
        expect(type(stride) is list and len(stride) == len(shape)
               and all(type(s) is int and 0 <= s <= (_ANY_STRIDE if n <= 1 or not count else 4 * count + 4096)
                       for s, n in zip(stride, shape)), "a malformed stride")
        spans = _spans(shape, stride) if count else 0
        expect(spans is not None, "a stride that spans too much memory")
        overlaps = count and _overlaps(shape, stride)
        if not overlaps and (spans == count or not count):
            strided = torch.empty_strided(shape, stride, dtype=dtype)
            strided.copy_(values)
        elif not overlaps:  # Gaps between the elements: they read as zeros.
            strided = torch.zeros(spans, dtype=dtype).as_strided(shape, stride)
            strided.copy_(values)
        else:
            # Elements that share a place (``expand``), which torch refuses to write through: each is written where it
            # lies (elements at one place have one value on the sender's side).
            memory = torch.zeros(spans, dtype=dtype)
            memory[torch.arange(spans).as_strided(shape, stride).reshape(-1)] = values.reshape(-1)
            strided = memory.as_strided(shape, stride)
        values = strided
    return values.to(device) if device.type != "cpu" else values


_ANY_STRIDE = 2**62  # The largest stride a dimension of one element may have (`_decoded_values`).


def _tensor_of_bytes(data: bytes, dtype: torch.dtype, shape: list) -> torch.Tensor:
    """A new tensor with these bytes, which owns its memory: no base that a view of it would keep, so that
    nothing but the tensor itself shares its storage (what the kernel looks for: pairs.PairTable.scan)."""
    values = torch.empty(shape, dtype=dtype)
    if data:  # Its length was checked against the shape and dtype; written as `memory_bytes` reads.
        ctypes.memmove(values.data_ptr(), data, len(data))
    return values


def encode_ndarray(array: numpy.ndarray) -> list:
    if array.dtype.hasobject:
        raise WireError("a NumPy array of Python objects cannot cross")
    return [array.dtype.str, list(array.shape), numpy.ascontiguousarray(array).tobytes()]


def decode_ndarray(leaf, limits: Limits = LIMITS) -> numpy.ndarray:
    expect(type(leaf) is list and len(leaf) == 3, "a malformed array")
    dtype = _numpy_dtype(leaf[0])
    count = _element_count(leaf[1], limits)
    expect(type(leaf[2]) is bytes and len(leaf[2]) == count * dtype.itemsize, "an array whose bytes do not match")
    return numpy.frombuffer(leaf[2], dtype=dtype).reshape(leaf[1]).copy()


# A NumPy dtype's string that may cross: a kind, an item size, and a datetime's or timedelta's unit ("<M8[10s]").
_NUMPY_DTYPE = re.compile(r"[<>|=]?[a-zA-Z][0-9]{0,9}(\[[0-9]{0,9}[a-zA-Z]{1,2}\])?")


def numpy_crosses(dtype: numpy.dtype) -> bool:
    """Whether arrays and scalars of a NumPy dtype cross by value: its string says all of it (not Python objects,
    records with fields or sub-arrays, which the string leaves out). An array or scalar of any other is lent as an
    object, as any object of the student's."""
    return (not dtype.hasobject and dtype.fields is None and dtype.subdtype is None
            and _NUMPY_DTYPE.fullmatch(dtype.str) is not None)


def tensor_crosses(tensor: torch.Tensor) -> bool:
    """Whether a tensor crosses by value: a plain strided one (not sparse, nested or quantized); any other is lent as
    an object, as any object of the student's."""
    return tensor.layout == torch.strided and not tensor.is_quantized and not tensor.is_nested


def _numpy_dtype(name) -> numpy.dtype:
    expect(type(name) is str and _NUMPY_DTYPE.fullmatch(name) is not None, "a malformed NumPy dtype")
    try:
        dtype = numpy.dtype(name)
    except TypeError:
        raise WireError(f"an unknown NumPy dtype {name!r}") from None
    expect(numpy_crosses(dtype), "a NumPy dtype that cannot cross")
    return dtype


def encode_npscalar(value) -> list:
    if value.dtype.hasobject:
        raise WireError("a NumPy object scalar cannot cross")
    return [Tag.NPSCALAR, value.dtype.str, value.tobytes()]


def decode_npscalar(node: list):
    expect(len(node) == 3, "a malformed NumPy scalar")
    dtype = _numpy_dtype(node[1])
    expect(type(node[2]) is bytes and len(node[2]) == dtype.itemsize, "a malformed NumPy scalar")
    return numpy.frombuffer(node[2], dtype=dtype)[0]


def decode_dtype(node: list) -> torch.dtype:
    expect(len(node) == 2 and type(node[1]) is str and node[1].isidentifier(), "a malformed dtype")
    dtype = getattr(torch, node[1], None)
    expect(type(dtype) is torch.dtype, f"an unknown dtype {node[1]!r}")
    return dtype


def decode_device(node: list) -> torch.device:
    expect(len(node) == 2 and type(node[1]) is str, "a malformed device")
    return _device_named(node[1])


@functools.lru_cache(maxsize=64)
def _device_named(name: str) -> torch.device:
    """The device of a well-formed name (the last ones decoded are kept: a test's tensors name one or two)."""
    expect(_DEVICE.fullmatch(name) is not None, "a malformed device")
    try:
        return torch.device(name)
    except RuntimeError:
        raise WireError(f"an unknown device {name!r}") from None


# NumPy's own scalar types, by id: a subclass of one (whose dtype and tobytes may be the student's) crosses as an
# object of the kernel's (red team, 2026-12-07).
_NUMPY_SCALARS = frozenset(id(kind) for kind in {*numpy.sctypeDict.values(), numpy.bool_}
                           if type(kind) is type and issubclass(kind, numpy.generic))


def encode_leaf(value):
    """The node of a value without parts or identity (complex, dtype, device, ...); None if it is not one."""
    kind = type(value)
    if kind is complex:
        return [Tag.COMPLEX, value.real, value.imag]
    if kind is torch.dtype:
        return [Tag.DTYPE, str(value).removeprefix("torch.")]
    if kind is torch.device:
        return [Tag.DEVICE, str(value)]
    if kind is type(Ellipsis):
        return [Tag.ELLIPSIS]
    if kind is type(NotImplemented):
        return [Tag.NOTIMPLEMENTED]
    # Types are read with type() only: a dead weak proxy raises on any other look (``isinstance`` reads __class__).
    if id(kind) in _NUMPY_SCALARS and numpy_crosses(value.dtype):  # NumPy's own, not a subclass of one.
        return encode_npscalar(value)
    return None


def decode_leaf(node: list):
    """The value of a leaf node (see `encode_leaf`, and big ints)."""
    tag = node[0]
    if tag == Tag.BIGINT:
        return decode_bigint(node)
    if tag == Tag.COMPLEX:
        expect(len(node) == 3 and all(type(x) is float for x in node[1:]), "a malformed complex")
        return complex(node[1], node[2])
    if tag == Tag.DTYPE:
        return decode_dtype(node)
    if tag == Tag.DEVICE:
        return decode_device(node)
    if tag == Tag.ELLIPSIS:
        expect(len(node) == 1, "a malformed Ellipsis")
        return ...
    if tag == Tag.NOTIMPLEMENTED:
        expect(len(node) == 1, "a malformed NotImplemented")
        return NotImplemented
    if tag == Tag.NPSCALAR:
        return decode_npscalar(node)
    raise WireError(f"an unknown leaf (tag {tag})")
