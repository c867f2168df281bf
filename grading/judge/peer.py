"""One side of the judge's connection to a kernel: messages, requests, exceptions, shared pairs.

A message is one frame (wire.py) holding ``[kind, epoch, seq, sync, body]``:

- ``kind``: ``req`` (a request: an operation and its arguments), ``ok`` or ``err`` (the reply to
  the request ``seq``), ``ready`` (the kernel serves the test ``epoch``), ``end`` (the judge
  ended that test), ``hello`` (a harness kernel says whether the answer ran).
- ``epoch``: the test cell the message belongs to. A side drops messages of any other epoch, so
  that what an earlier, interrupted test left in the socket never reaches the next one. Every
  table (pairs, exported objects, handles) is fresh for each epoch.
- ``sync``: the new content of every shared pair the sender changed since it last crossed, and
  what each side adds (`outgoing`): the pairs and handles the judge dropped, the global names the
  kernel rebound.

The protocol is single-threaded and re-entrant: while a side waits for its reply it serves the
other side's requests (a judge function that the student's code calls, which calls the student's
code again...). `Peer` does all of this for both sides; `judge.remote.JudgePeer` and
`agent.AgentPeer` say what a request may do and what an object that is not data becomes.

This module runs in the student's kernel too (see grading/judge/wire.py).
"""

from __future__ import annotations

import abc
import builtins
import importlib
import itertools
import socket
import sys
import types

import torch

from .codec import Codec
from .names import allowed_module, dotted
from .pairs import PairTable
from .wire import LIMITS, Framing, Limits, Tag, WireError, expect, text

REQ, OK, ERR, READY, END, HELLO = "req", "ok", "err", "ready", "end", "hello"
_KINDS = frozenset({REQ, OK, ERR, READY, END, HELLO})
# What the codec does to tensors (reading a changed one's bytes, writing an update) is no torch operation of the
# test's, which a torch function mode of course.checks counts, and none of the student's, whose dispatch mode could
# answer the codec's ``detach`` of an argument it wrote with the argument's old values (red team, 2026-12-07).
_NO_TORCH_FUNCTION, _NO_TORCH_DISPATCH = torch._C.DisableTorchFunction, torch._C._DisableTorchDispatch
_PLAIN_ARGS = (str, float, bool, type(None))
_INT64 = range(-(1 << 63), 1 << 63)  # The ints an exception's argument crosses as.
# An exception's own arguments, a class's MRO, dict, names and module, and a module's dict, read through Python's own
# descriptors: never a property of the student's class or metaclass, or a module's __getattr__ (the agent reads
# classes this way too).
_ARGS = BaseException.args
CLASS_MRO, CLASS_DICT, CLASS_NAME = type.__dict__["__mro__"], type.__dict__["__dict__"], type.__dict__["__name__"]
CLASS_QUALNAME, CLASS_MODULE = type.__dict__["__qualname__"], type.__dict__["__module__"]
MODULE_DICT = types.ModuleType.__dict__["__dict__"]


def _message_of(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:  # noqa: BLE001 - a builtin whose message needs arguments of other kinds.
        return ""


class _Verbatim(str):
    """A message whose repr is itself: the argument of a KeyError whose message crossed in its argument's place."""

    __repr__ = str.__str__


def _told_message(error: BaseException) -> str:
    return error.__dict__.get("message_of_the_other_side", "")


def _asked_message(error: BaseException) -> str:
    """The message of the kernel's error, asked for now: its ``str()``, which may run the student's code."""
    found = error.__dict__.get("object_of_the_other_side")
    return "" if found is None else str(found)


class _AskedText:
    """The argument of an error of Python's own class whose message the judge asks the kernel for: its ``str`` and
    ``repr`` (which a KeyError's message is) are that message."""

    __slots__ = ("error",)

    def __init__(self, error) -> None:
        self.error = error

    def __str__(self) -> str:
        return str(self.error)

    __repr__ = __str__


ABSENT = object()  # What `string_key_get` gives for a name that is not there, where None may be a value.


def string_key_get(names, name: str, default=None):
    """``names.get(name, default)`` for a class's or a module's dict, read without running any code: in a dict with a
    key that is not a string (``type("C", (), {key: None})``) a lookup would compare that key with ``name`` by the key's
    ``__eq__``, so such a dict is searched key by key, each compared only if it is a string (red team, 2026-12-07)."""
    if all(type(key) is str for key in names):
        return names.get(name, default)
    for key, value in names.items():
        if type(key) is str and key == name:
            return value
    return default


def own_attribute(klass: type, name: str, default=None):
    """``vars(klass).get(name, default)``, read without running any code (`string_key_get`)."""
    return string_key_get(CLASS_DICT.__get__(klass), name, default)


def _python_s_message(mro: list[type]) -> bool:
    """Whether the message of an error of these classes is Python's own (no ``__str__`` of the student's)."""
    for klass in mro:
        if own_attribute(klass, "__str__", ABSENT) is not ABSENT:
            return _python_s_own(klass)
    return True


_EXCEPTION_GROUPS = getattr(builtins, "BaseExceptionGroup", ())  # Python 3.11 and later.


def _python_s_own(klass: type) -> bool:
    """Whether ``klass`` (whose name is a string) is the builtin class of its name."""
    return getattr(builtins, CLASS_NAME.__get__(klass), None) is klass


def _builtin_bases(names: list[str], builtin: list[bool]) -> tuple[type, ...]:
    """Python's own exception classes in an exception's MRO (``builtin`` says which of ``names`` are), but those that
    another of them derives from, in MRO order: ``class E(TypeError, ValueError)`` gives both, so that the test's
    ``except ValueError`` catches it as in the kernel. ``(Exception,)`` when there is none. An exception group's own
    classes are left out (its exceptions do not cross): it is an exception of its other bases."""
    found = []
    for name, flag in zip(names, builtin):
        klass = getattr(builtins, name, None) if flag else None
        if (isinstance(klass, type) and issubclass(klass, BaseException) and klass not in found
                and not issubclass(klass, _EXCEPTION_GROUPS)):
            found.append(klass)
    return tuple(klass for klass in found if not any(other is not klass and issubclass(other, klass)
                                                     for other in found)) or (Exception,)


def keywords(items) -> dict:
    """Keyword arguments, which cross as a tuple of (name, value) pairs (never a shared dict)."""
    expect(type(items) is tuple and all(type(item) is tuple and len(item) == 2 and type(item[0]) is str
                                        for item in items), "malformed keyword arguments")
    return dict(items)


# Objects of allowed modules that are neither functions nor classes but are compared by identity
# (``dataclasses.fields`` keeps the fields whose ``_field_type is _FIELD``): each side uses its own.
_WELL_KNOWN = {"dataclasses": ("_FIELD", "_FIELD_CLASSVAR", "_FIELD_INITVAR", "MISSING", "KW_ONLY")}
_WELL_KNOWN_IDS = {id(getattr(importlib.import_module(module), name)): (module, name)
                   for module, names in _WELL_KNOWN.items() for name in names}


# The functions and classes found in an allowed module, by id, with the value itself (so that an id is never reused
# while it is here): a test sends the same few again and again, and finding one imports and walks its module.
_GLOBAL_NODES: dict[int, tuple[object, list]] = {}


def global_node(value):
    """``[GLOBAL, module, qualname]`` or ``[MODULE, name]`` when the other side has ``value`` itself."""
    known = _GLOBAL_NODES.get(id(value))
    if known is not None and known[0] is value:
        return list(known[1])
    node = _find_global(value)
    if node is not None and node[0] == Tag.GLOBAL:
        _GLOBAL_NODES[id(value)] = (value, node)
        return list(node)
    return node


def _find_global(value):
    # Read with type() and Python's own descriptors: an object's __class__, a module's __getattr__ or a metaclass of
    # the student's sees no lookup (red team, 2026-12-07).
    kind = type(value)
    if kind is types.ModuleType:
        name = _module_name(value)
        return [Tag.MODULE, name] if allowed_module(name) else None
    known = _WELL_KNOWN_IDS.get(id(value))
    if known is not None:
        return [Tag.GLOBAL, *known]
    if issubclass(kind, type):
        module, qualname = CLASS_MODULE.__get__(value), CLASS_QUALNAME.__get__(value)
    elif kind is types.FunctionType or kind is types.BuiltinFunctionType:
        module, qualname = value.__module__, value.__qualname__
    else:
        return None
    if not (allowed_module(module) and type(qualname) is str and "<" not in qualname):
        return None
    try:
        return [Tag.GLOBAL, module, qualname] if resolve_global(module, qualname) is value else None
    except (ImportError, AttributeError, WireError):
        return None


def _module_name(module) -> str | None:
    """A module's name from its own dict (a module's ``__getattr__`` is not asked)."""
    name = string_key_get(MODULE_DICT.__get__(module), "__name__")
    return name if type(name) is str else None


def _plain_classes() -> frozenset:
    """The classes of allowed modules that only hold data: calling one runs no code of the kernel's choosing and
    touches nothing outside the new object (see `kernel_may_name`)."""
    import collections.abc
    import dataclasses
    import enum
    import fractions
    import numbers

    import numpy

    found = set()
    for module in (builtins, collections, collections.abc, numbers, fractions, enum, abc):
        found.update(value for name, value in vars(module).items() if isinstance(value, type) and name[0] != "_")
    found.discard(super)
    found.update((dataclasses.Field, dataclasses.InitVar, dataclasses.FrozenInstanceError, types.SimpleNamespace,
                  types.MappingProxyType, numpy.ndarray, numpy.dtype, torch.Tensor, torch.Size, torch.dtype,
                  torch.device, torch.finfo, torch.iinfo))
    found.update(value for value in vars(numpy).values()
                 if isinstance(value, type) and issubclass(value, numpy.generic))
    return frozenset(found)


def kernel_may_name(value) -> bool:
    """Whether a value of the kernel's crosses to the judge as a global, which the judge takes from its own import:
    the well-known objects, and classes that only hold data (``int``, ``OrderedDict``, ``torch.Tensor``, NumPy's
    scalar types). The kernel's functions and modules, even those of allowed modules, and every other class cross
    as the kernel's objects (handles, mirrors): the judge never calls code of its own that the kernel named, such
    as ``builtins.exec`` lent as a method of an object that a test's function calls."""
    return id(value) in _WELL_KNOWN_IDS or (issubclass(type(value), type) and id(value) in _PLAIN_CLASS_IDS)


def from_kernel(module: str, qualname: str):
    """The judge's own ``module.qualname`` for a global the kernel sent, only where `kernel_may_name` allows it."""
    expect((module, qualname) in _WELL_KNOWN_IDS.values() or dotted(qualname) and not any(
        part.startswith("_") for part in qualname.split(".")), f"{module}.{qualname} cannot cross from the kernel")
    # A private module the judge has not imported is never imported for the kernel: importing one may change what
    # the test's own code does (a testing module that sets torch's defaults).
    expect(module in sys.modules or not any(part.startswith("_") for part in str(module).split(".")),
           f"{module}.{qualname} cannot cross from the kernel: a private module the judge has not imported")
    value = resolve_global(module, qualname)
    expect(kernel_may_name(value), f"{module}.{qualname} cannot cross from the kernel: only classes that hold data do")
    return value


def resolve_global(module: str, qualname: str):
    """This side's own ``module.qualname``, only in an allowed module."""
    expect(allowed_module(module) and dotted(qualname), f"{module}.{qualname} is not in a module the judge allows")
    value = importlib.import_module(module)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


_PLAIN_CLASSES = _plain_classes()
_PLAIN_CLASS_IDS = frozenset(map(id, _PLAIN_CLASSES))
NOT_SHARED = object()


class ConnectionClosed(Exception):
    """The other side closed the connection (it ended, or crashed)."""


class Peer:
    """The state and message loop of one side; subclasses say what requests and objects mean."""

    parity = 0  # 0: the judge's ids are even; the kernel's class sets 1.
    answered: tuple[type, ...] = (Exception,)  # What a request may raise and still get a reply.
    # What a GLOBAL node from the other side becomes, and whether a MODULE node may come: the judge sets
    # `from_kernel` and False (it takes only data classes from the kernel); the kernel takes whatever the judge names.
    resolve_global = staticmethod(resolve_global)
    takes_modules = True

    def __init__(self, connection: socket.socket, limits: Limits = LIMITS) -> None:
        self.connection = connection
        self.limits = limits
        self.epoch: str | None = None
        self.framing = Framing(limits)
        self.decoding = 0  # Above 0 while a message is decoded (handles compare by identity then).
        self.in_message = 0  # Above 0 while a message is made or read (agent.AgentPeer.call_judge).
        # While a message is decoded: whether what comes new in it is handed over to this side's own objects (the
        # arguments of a request, and what fills this side's own shared containers), not the answer to a request.
        self.handing_over = False
        # One buffer for every read: a fresh 1 MiB bytes object per recv would cost an mmap each time.
        self.buffer = bytearray(1 << 20)
        self.view = memoryview(self.buffer)
        self._exception_classes: dict[tuple[str, type], type] = {}
        self.reset()

    def reset(self) -> None:
        """Fresh tables, for a new test cell."""
        self.pairs = PairTable(self.parity)
        self.codec = Codec(self, self.limits)
        self.exports: dict[int, object] = {}  # Objects of this side that the other side holds, by oid.
        self.export_ids: dict[int, int] = {}  # id(object) -> oid.
        self.next_oid = 2 + self.parity
        self.seq = 0
        self.sent = self.received = 0  # Messages of this test cell, each way.
        self.requests = 0  # Requests of this test cell, each way: how often the test crossed to the other side.
        self.send_by_value = False  # Whether the next message's body crosses as copies (`Codec.by_value`).

    # What this side lends the other.

    def export(self, obj) -> tuple[int, bool]:
        """The oid of ``obj`` for the other side, and whether it is new."""
        oid = self.export_ids.get(id(obj))
        if oid is not None and self.exports.get(oid) is obj:
            return oid, False
        oid, self.next_oid = self.next_oid, self.next_oid + 2
        self.exports[oid] = obj
        self.export_ids[id(obj)] = oid
        return oid, True

    def exported(self, oid):
        """The object this side lent as ``oid``; an oid never issued is an error."""
        if type(oid) is not int or oid not in self.exports:
            raise WireError(f"the object id {oid!r} was never issued")
        return self.exports[oid]

    def release(self, oid):
        """Forget the export ``oid``; its object (None for an unknown oid), which the caller may still hold."""
        obj = self.exports.pop(oid, None)
        if obj is not None and self.export_ids.get(id(obj)) == oid:
            del self.export_ids[id(obj)]
        return obj

    # Hooks of the two sides.

    def hash_runs_code(self, key: tuple) -> bool:
        """Whether the receiver, to hash ``key`` (a dict's key or a set's item), would ask for a hash that may run the
        student's code (the kernel's side says; codec.Codec._encode_key)."""
        return False

    def encode_object(self, value, depth: int):  # pragma: no cover - each side defines it.
        raise NotImplementedError

    def decode_object(self, node: list, depth: int):  # pragma: no cover - each side defines it.
        raise NotImplementedError

    def handle(self, op: str, args: list):  # pragma: no cover - each side defines it.
        raise NotImplementedError

    def outgoing(self, dropped: list[int]) -> list:
        """What this side adds to a message's synchronization (``dropped``: the pairs it let go)."""
        return []

    def incoming(self, extra) -> None:
        expect(extra == [], "unexpected synchronization data")

    def read_chunk(self) -> int:
        """Read what the socket has into ``self.buffer``, waiting for it; how many bytes came (0: closed).
        The judge adds its deadline and cancellation."""
        return self.connection.recv_into(self.buffer)

    # Messages.

    def send(self, kind: str, seq: int, body: list, raw: bool = False) -> None:
        """Send one message; ``raw`` bodies are already trees (an error's node)."""
        codec, pairs = self.codec, self.pairs
        codec.items = 0
        touched = codec.touched = []
        codec.updated = set()
        by_value, self.send_by_value = self.send_by_value and not raw, False
        marks = (pairs.next_sid, self.next_oid)
        self.in_message += 1
        try:
            with _NO_TORCH_FUNCTION(), _NO_TORCH_DISPATCH():
                tree, changed = self._tree(kind, seq, body, raw, by_value)
            data = self.framing.pack(tree)
        except BaseException:
            self._roll_back(marks)
            raise
        finally:
            self.in_message -= 1
            if codec.stored_tables:
                codec.stored_tables = {}  # They hold the dicts and sets they were read from.
        self.connection.sendall(data)
        self.sent += 1
        pairs.dirty = {}
        if changed or touched:
            with _NO_TORCH_FUNCTION(), _NO_TORCH_DISPATCH():
                for pair in itertools.chain(changed, touched):
                    pair.record()

    def _tree(self, kind: str, seq: int, body: list, raw: bool, by_value: bool) -> tuple[list, list]:
        """A message's tree, and the pairs whose new content it carries; ``by_value``: the body's containers and
        tensors cross as copies."""
        pairs, codec = self.pairs, self.codec
        changed, dropped = pairs.scan(self.parity == 0) if pairs.eager or pairs.orphans else ([], [])
        if pairs.dirty:
            scanned = {pair.sid for pair in changed}  # A quiet pair woken since the test wrote to it is scanned too.
            changed = changed + [pair for sid, pair in pairs.dirty.items() if sid not in scanned]
        extra = self.outgoing(dropped)
        if changed:
            changed = pairs.with_owners(changed, self.parity == 1)
            codec.updated.update(pair.sid for pair in changed)
        updates = codec.updates = [[pair.sid, codec.content(pair)] for pair in changed] if changed else []
        codec.by_value = by_value
        try:
            encoded = body if raw else [codec.encode(value) for value in body]
        finally:
            codec.by_value = False
        if raw and body and type(body[0]) is list and len(body[0]) == 6 and body[0][0] == Tag.EXCEPTION:
            # An error whose message the student's code makes: the error itself crosses, for the judge to ask when
            # the test reads the message (`exception_node`).
            body[0][5] = self.error_object_node(body[0][5])
        return [kind, self.epoch, seq, [updates, extra], encoded], changed

    def _roll_back(self, marks: tuple[int, int]) -> None:
        """Forget the pairs and exports a message registered before it failed to encode."""
        for sid in [sid for sid in self.pairs.by_sid if sid % 2 == self.parity and sid >= marks[0]]:
            self.pairs.drop(sid)
        self.pairs.next_sid = marks[0]
        for oid in [oid for oid in self.exports if oid >= marks[1]]:
            self.release(oid)
        self.next_oid = marks[1]

    def _next_tree(self):
        """The next message's tree; reads what the socket has, and waits only when no whole message is here."""
        framing = self.framing
        while True:
            tree = framing.next()
            if tree is not None:
                return tree
            size = self.read_chunk()
            if not size:
                raise ConnectionClosed("the other side closed the connection")
            framing.feed(self.view[:size])

    def receive(self) -> tuple[str, int, list]:
        """The next message of this epoch, its sync applied and its body decoded."""
        while True:
            tree = self._next_tree()
            if type(tree) is not list or len(tree) != 5:
                raise WireError("a malformed message")
            kind, epoch, seq, sync, body = tree
            if kind not in _KINDS or type(seq) is not int or not (epoch is None or type(epoch) is str):
                raise WireError("a malformed message")
            if epoch == self.epoch:
                break
        self.received += 1
        if type(sync) is not list or len(sync) != 2 or type(sync[0]) is not list or type(body) is not list:
            raise WireError("a malformed message")
        codec = self.codec
        codec.items = 0
        self.decoding += 1
        self.in_message += 1
        try:
            return self._apply(kind, seq, sync, body)
        finally:
            self.decoding -= 1
            self.in_message -= 1

    def _apply(self, kind: str, seq: int, sync: list, body: list) -> tuple[str, int, list]:
        codec = self.codec
        codec.wrote_memory = False
        with _NO_TORCH_FUNCTION(), _NO_TORCH_DISPATCH():
            self.incoming(sync[1])
            try:
                for update in sync[0]:
                    expect(type(update) is list and len(update) == 2, "a malformed update")
                    pair = self.pairs.get(update[0])
                    self.handing_over = pair.sid % 2 == self.parity  # A container of this side's own.
                    codec.fill(pair, update[1])
                    pair.record()
                self.handing_over = kind == REQ
                values = [codec.decode(node) for node in body]
            finally:
                self.handing_over = False
            if codec.wrote_memory:
                self.pairs.settle()
            return kind, seq, values

    def request(self, op: str, *args):
        """Ask the other side to do ``op``; serve its requests meanwhile; return or raise its answer."""
        self.seq += 1
        self.requests += 1
        seq = self.seq
        self.send(REQ, seq, [op, *args])
        while True:
            kind, reply_seq, body = self.receive()
            if kind == REQ:
                self.answer(reply_seq, body)
            elif kind in (OK, ERR) and reply_seq == seq:
                expect(len(body) == 1, "a malformed reply")
                if kind == ERR:
                    expect(isinstance(body[0], BaseException), "an error reply without an exception")
                    error, body = body[0], None
                    try:
                        raise error
                    finally:  # Its traceback holds this frame: no cycle keeps what the caller's frames hold alive.
                        error = None
                return body[0]
            else:
                raise WireError(f"an unexpected {kind!r} message while waiting for a reply")

    def answer(self, seq: int, body: list) -> None:
        """Do the request ``body`` and send its reply (its result, or the exception it raised)."""
        self.requests += 1
        try:
            expect(len(body) >= 1 and type(body[0]) is str, "a malformed request")
            result = self.handle(body[0], body[1:])
        except self.answered as error:  # noqa: BLE001 - every error of a request goes back to the requester.
            failure = self.exception_node(error)
        else:
            try:
                self.send(OK, seq, [result])
                return
            except self.answered as error:  # noqa: BLE001 - a result that cannot be sent is that request's error.
                # The wire's error, never the one that stopped the encoding: the student's code sets what that is (a
                # recursion limit just above its own depth made it a RecursionError, which a test that expected a
                # RuntimeError took for the student's: red team, round 17).
                if type(error) is not WireError:
                    error = WireError(f"its result could not be sent ({CLASS_NAME.__get__(type(error))})")
                failure = self.exception_node(error)
        # The error, and what its traceback kept alive (the local variables of the code that raised), is let go
        # before the reply, as the requester's ``except`` lets it go in one process: a ``__del__`` or a generator's
        # ``finally`` there runs now (``cache.unpin`` of a lease that the code held), and what it changes crosses
        # with the reply. (An error whose message the judge asks for later crosses without its traceback.)
        try:
            self.send(ERR, seq, [failure], raw=True)
        except self.answered:  # noqa: BLE001 - the error itself could not cross: its message is not known then.
            self.send(ERR, seq, [[*failure[:3], "(its message could not be read)", failure[4]]], raw=True)

    def decode_shared(self, node: list, depth: int = 0):
        """The object nodes both sides read alike (their own object, a global, a module, an exception);
        `NOT_SHARED` for the others."""
        tag = node[0]
        if tag == Tag.YOURS:
            expect(len(node) == 2, "a malformed object reference")
            return self.exported(node[1])
        if tag == Tag.GLOBAL:
            expect(len(node) == 3, "a malformed global")
            return self.resolve_global(text(node[1]), text(node[2]))
        if tag == Tag.MODULE:
            expect(self.takes_modules, "a module cannot cross from the kernel")
            expect(len(node) == 2 and allowed_module(node[1]), "a module the other side may not send")
            return importlib.import_module(node[1])
        if tag == Tag.EXCEPTION:
            return self.decode_exception(node)
        return NOT_SHARED

    # Exceptions cross as the class names of their MRO and their plain arguments.

    # Whether an error whose message needs the student's code crosses with that message unread (the kernel's side),
    # and the class of the objects of the kernel that such an error then is (the judge's side).
    asks_for_messages = False
    kernel_objects: tuple[type, ...] = ()

    def error_object_node(self, error: BaseException) -> list:
        """The node of an error that crosses as an object of this side's (the kernel's: `agent.AgentPeer`)."""
        raise WireError("an error crosses as an object only from the kernel")

    def exception_node(self, error: BaseException) -> list:
        """An error as data: its classes' names, its plain arguments and its message.

        On the kernel's side, a message that the student's code makes (a ``__str__`` of the student's class, or an
        argument that is not plain data, whose own ``__str__`` or ``__repr__`` Python's message would call) is not
        read here: that code would run before the reply's changes are looked for, where in one process it runs only
        if the test reads the message, and could undo what the failing call left (red team, 2026-12-07: an
        ``allocate_n`` that kept the blocks it took had its error's ``__str__`` give them back, and earned 2.2's
        points judged). The node then carries the error itself, and the judge asks for its message when the test
        reads it (`decode_exception`)."""
        # The first 32 classes of its MRO, and Python's own exception classes past them (a hierarchy that deep).
        mro = list(CLASS_MRO.__get__(type(error)))  # Past any metaclass of the student's (red team, 2026-12-07).
        classes = [*mro[:32], *filter(_python_s_own, mro[32:])][:64]
        names = [CLASS_NAME.__get__(klass)[:200] for klass in classes]
        # Which of them are Python's own (a student's class may be named MemoryError and derive from RuntimeError).
        builtin = [_python_s_own(klass) for klass in classes]
        args = list(_ARGS.__get__(error))
        plain = len(args) <= 8 and all(map(self._plain_argument, args))
        # A tuple argument (``KeyError((seq_id, block))``) crosses as a list: the only list an exception's node holds.
        crossing = [list(a) if type(a) is tuple else a for a in args] if plain else None
        if self.asks_for_messages and not (plain and _python_s_message(mro)):
            # It lives, with its traceback, until the judge lets go of it: the frames that read the message in one
            # process are those it would read there.
            return [Tag.EXCEPTION, names, crossing or [], None, builtin, error]
        try:
            message = str(error)[:self.limits.text]
        except Exception:  # noqa: BLE001 - a broken __str__ of the student's exception.
            message = "(its message could not be read)"
        return [Tag.EXCEPTION, names, crossing if plain else [message], message, builtin]

    def _plain_argument(self, value, nested: bool = False) -> bool:
        """Whether an exception's argument crosses as it is: None, a bool, an int of 64 bits, a float, a short
        string, or (not within another) a tuple of at most 64 of them."""
        kind = type(value)
        if kind is str:
            return len(value) <= self.limits.text
        if kind is int:
            return value in _INT64
        if kind is tuple and not nested:
            return len(value) <= 64 and all(self._plain_argument(item, True) for item in value)
        return kind is float or kind is bool or value is None  # By identity: a metaclass's __eq__ never runs.

    def decode_exception(self, node: list) -> BaseException:
        expect(len(node) in (5, 6) and type(node[1]) is list and 0 < len(node[1]) <= 64 and type(node[2]) is list
               and len(node[2]) <= 8 and type(node[4]) is list and len(node[4]) == len(node[1])
               and all(type(flag) is bool for flag in node[4]), "a malformed exception")
        names = [text(name, self.limits) for name in node[1]]
        args = [self._decode_argument(a) for a in node[2]]
        bases = _builtin_bases(names, node[4])
        # The judge's own class only for a builtin Exception; KeyboardInterrupt or SystemExit from the kernel
        # becomes a class of the kernel's (module "kernel"), never the judge's own signal.
        own = node[4][0] and bases == (getattr(builtins, names[0], None),) and issubclass(bases[0], Exception)
        if len(node) == 6:
            return self._asked_exception(names, bases, args, node, own)
        message = text(node[3], self.limits)
        cls = bases[0] if own else self._exception_class(names[0], bases)
        try:
            error = cls(*args)
        except Exception:  # noqa: BLE001 - a builtin whose constructor wants other arguments.
            return self._exception_class(names[0], bases, plain=True)(message)
        if own and len(args) == 1 and type(args[0]) is str and _message_of(error)[:self.limits.text] != message:
            # A KeyError says its argument's repr: one that crossed as its message alone says that message unquoted.
            return cls(_Verbatim(args[0]))
        if not own and _message_of(error)[:self.limits.text] != message:
            # The class has a message of its own (its __str__), which its arguments do not make: it says that one.
            try:
                told = self._exception_class(names[0], bases, told=True)(*args)
            except Exception:  # noqa: BLE001 - a builtin base whose constructor wants other arguments.
                return self._exception_class(names[0], bases, plain=True)(message)
            told.message_of_the_other_side = message
            return told
        return error

    def _decode_argument(self, value, nested: bool = False):
        """An exception's argument as `_plain_argument` lets it cross; a list is a tuple's."""
        kind = type(value)
        if kind is list and not nested:
            expect(len(value) <= 64, "a malformed exception")
            return tuple(self._decode_argument(item, True) for item in value)
        if kind is str:
            return text(value, self.limits)
        expect(kind in _PLAIN_ARGS or kind is int and value in _INT64, "a malformed exception")
        return value

    def _asked_exception(self, names: list[str], bases: tuple[type, ...], args: list, node: list,
                         own: bool) -> BaseException:
        """An error of the kernel's whose message the judge asks for each time the test reads it (`exception_node`):
        the student's code that makes it runs then, as in one process. ``own``: its class is Python's own."""
        expect(self.parity == 0 and node[3] is None, "a malformed exception")
        found = self.codec.decode(node[5], 1)
        expect(isinstance(found, self.kernel_objects), "an exception that is not the kernel's object")
        if own:
            # Python's own class (``KeyError(block)``): its one argument says the kernel's message.
            try:
                return bases[0](_AskedText(found))
            except Exception:  # noqa: BLE001 - a builtin whose constructor wants other arguments.
                pass
        try:
            error = self._exception_class(names[0], bases, asked=True)(*args)
        except Exception:  # noqa: BLE001 - a builtin base whose constructor wants other arguments.
            error = self._exception_class(names[0], bases, asked=True)()
        error.object_of_the_other_side = found
        return error

    def _exception_class(self, name: str, bases: tuple[type, ...], plain: bool = False, told: bool = False,
                         asked: bool = False) -> type:
        """A class named ``name`` derived from the builtin ``bases``, made from data only; with ``told``, its message is
        the one the other side read (`decode_exception`); with ``asked``, the one the other side says when asked."""
        key = (name + ("/plain" if plain else "/told" if told else "/asked" if asked else ""), bases)
        if key not in self._exception_classes:
            namespace = {"__module__": "kernel"}
            if plain:
                namespace.update(__init__=BaseException.__init__, __str__=BaseException.__str__)
            if told:
                namespace.update(__init__=BaseException.__init__, __str__=_told_message)
            if asked:
                namespace.update(__init__=BaseException.__init__, __str__=_asked_message)
            name = name if name.isidentifier() else "KernelError"
            try:
                made = type(name, bases, namespace)
            except TypeError:  # Bases that no class can join here (the kernel's class could not have either).
                made = type(name, bases[:1], namespace)
            self._exception_classes[key] = made
        return self._exception_classes[key]
