"""The judge's view of the student's objects: handles, whose every use is a request to the kernel.

A class of the kernel becomes a *mirror*: a real class of the judge (made with `HandleMeta` from its names only), so
that ``type(block) is KVBlock`` holds for two handles exactly when it holds in the kernel, and ``isinstance`` and
``issubclass`` ask the kernel. An instance becomes a `Handle` of its class's mirror, the same handle every time the
same object comes back. What a test does to a handle (call it, read an attribute, ``len``, ``in``, ``==``, ``repr``,
``copy.deepcopy``...) becomes a request; its answer comes back by value.

Plain attributes are read where the test runs: an object whose class does not hook attribute access comes with its
``__dict__`` (a small one with the object, any other when the test asks), as a lazy shared pair (pairs.py). Reading
an attribute from it costs nothing while the kernel has not run since the dict came; otherwise the judge first asks
for what changed in it (one request, which brings only the changes). A value the test reads from it (a list, a
tensor...) becomes an eager pair, kept in step at every message. Writing a plain value (a number, a string, a
device), a container, a tensor or a student's object changes the judge's copy, which reaches the kernel before it
runs anything else (the dict becomes eager first when the value is not plain); any other value, and any attribute of
a class that hooks attribute writes or a property, is set in the kernel. A method (a plain function of the class
that no attribute of the object shadowed when its ``__dict__`` last came) is one request (`RemoteMethod`).

A test may subclass a student's class (``class Probe(KVCacheSchedulerSim)``) and make bare instances
(``object.__new__(Probe)``): the subclass is made in the kernel, its methods calling the test's functions back; a
bare instance is made in the kernel when it is first used.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .pairs import PAIR_TYPES
from .wire import WireError, same_plain

CUSTOM_GET, CUSTOM_SET, CUSTOM_DEL, HAS_DICT, FINALIZER = 1, 2, 4, 8, 16  # The flags of a class node (agent.py).
_SLOTS = ("_judge_oid", "_judge_dict", "_judge_hash", "_judge_pair", "_judge_planted")
NO_DICT = object()
_EMPTY: dict = {}
_PLAIN = frozenset({int, float, bool, str, bytes, type(None), complex, torch.device, torch.dtype})  # Hold no pair.
_SHARED_TYPES = frozenset({*PAIR_TYPES, tuple, frozenset})  # Values that are or hold shared pairs.


@dataclass(eq=False)
class MirrorInfo:
    """What the judge knows of one class of the kernel, for one test cell."""

    peer: object  # The JudgePeer.
    epoch: int  # The peer's epoch number when the mirror was made.
    oid: int
    module: str
    qualname: str
    flags: int
    data: frozenset[str]  # Names of data descriptors (properties, slots): always read in the kernel.
    methods: frozenset[str]  # Names of plain functions of the class: called in one request.
    fast_get: bool = field(init=False)  # Attributes are read from the mirrored __dict__.
    fast_set: bool = field(init=False)  # Plain values are written into it.
    instances: dict = field(init=False, default_factory=dict)  # The handles of this class, by oid (weak references).

    def __post_init__(self) -> None:
        self.fast_get = not self.flags & CUSTOM_GET and bool(self.flags & HAS_DICT)
        self.fast_set = self.fast_get and not self.flags & (CUSTOM_SET | CUSTOM_DEL)


def info_of(cls: type) -> MirrorInfo:
    info = type.__getattribute__(cls, "_judge_mirror_")
    if info.epoch != info.peer.epoch_number:
        raise RuntimeError("this object of the student's kernel belongs to an earlier test cell")
    return info


def oid_of(handle: Handle) -> int:
    """The handle's object id. A bare instance (``object.__new__(Mirror)``) is made in the kernel now: the kernel
    answers with the object, its empty ``__dict__`` with it, and this handle becomes the object's (handle_of)."""
    try:
        return handle._judge_oid
    except AttributeError:
        peer = info_of(type(handle)).peer
    peer.adopting = handle
    try:
        made = peer.request("new", type(handle))
    finally:
        peer.adopting = None
    if made is not handle:
        raise WireError("the kernel answered a malformed object")
    return handle._judge_oid


def _changed(handle: Handle, info: MirrorInfo) -> None:
    """The judge wrote into the object's mirrored ``__dict__``: it crosses with the next message."""
    pair = handle._judge_pair
    if pair.lazy or pair.quiet:  # A scanned eager pair's change is found when the next message is sent.
        info.peer.pairs.dirty[pair.sid] = pair


def _request(handle, op: str, *args):
    return info_of(type(handle)).peer.request(op, *args)


def _kernel_runs(op: str, function, args: tuple, kwargs: dict):
    """Have the kernel call its ``function`` under one of its watches (``op``: count, launches, memory)."""
    owner = function._judge_owner if type(function) is RemoteMethod else function
    return _request(owner, op, function, args, tuple(kwargs.items()))


def _instance_dict(handle: Handle, info: MirrorInfo):
    """The object's ``__dict__`` as the kernel has it now (a shared pair); None when it has none."""
    try:
        found = handle._judge_dict
    except AttributeError:
        found = None
        if not hasattr(handle, "_judge_oid"):
            oid_of(handle)  # A bare instance, made in the kernel now: its __dict__ came with it.
            found = getattr(handle, "_judge_dict", None)
    if found is not None:
        if found is NO_DICT:
            return None
        pair = handle._judge_pair
        if not pair.lazy or pair.valid_at == info.peer.received:
            pair.read_at = info.peer.sent
            return found
    oid_of(handle)
    # The reply is the object, with its __dict__ or what changed in it (remote.JudgePeer.handle_of).
    asked_before = found is not None
    object.__setattr__(handle, "_judge_dict", NO_DICT)
    info.peer.request("dict", handle, *info.peer.stale_siblings(handle, info))  # Stale siblings' come too.
    found = handle._judge_dict
    if found is NO_DICT:
        return None
    if asked_before:
        # A test that reads the object again after the kernel ran is likely to go on doing so: its
        # __dict__ becomes eager, kept in step at every message instead of asked for at every read.
        info.peer.escape_dict(found)
    return found


def _keep_in_step(peer, results: list) -> None:
    """The ``__dict__``s that came with the objects among a replay's results become eager: a test that asked
    for many objects at once reads them after its next calls too (without this, each read would ask the
    kernel once for what changed)."""
    for result in results:
        if isinstance(result, Handle):
            found = _known_dict(result)
            if found is not _EMPTY:
                peer.escape_dict(found)


def _known_dict(handle: Handle):
    """The object's ``__dict__`` as it last came from the kernel, without asking; empty when none came."""
    try:
        found = handle._judge_dict
    except AttributeError:
        return _EMPTY
    return _EMPTY if found is NO_DICT else found


class PlantedCallRefused(RuntimeError):
    """A test's object called a function that the student's code had handed it, after that code returned."""


class Handle:
    """An object of the student's kernel (see the module's docstring)."""

    __slots__ = (*_SLOTS, "__weakref__")

    def __getattr__(self, name: str):
        if name in _SLOTS:
            raise AttributeError(name)
        info = info_of(type(self))
        oid_of(self)
        if info.fast_get:
            if name in info.methods and name not in _known_dict(self):
                return RemoteMethod(self, name)
            found = _instance_dict(self, info)
            if found is not None:
                if name in found and name not in info.data:
                    value = found[name]
                    if type(value) not in _PLAIN and self._judge_pair.lazy:
                        info.peer.escape(value)  # The test holds it now: it must stay in step.
                    return value
                if name == "__dict__":
                    info.peer.escape(found)
                    info.peer.pairs.wake(self._judge_pair)  # The test holds the dict itself now.
                    return found
            if name in info.methods:
                return RemoteMethod(self, name)
        return info.peer.request("getattr", self, name)

    def __setattr__(self, name: str, value) -> None:
        if name in _SLOTS:
            raise AttributeError(f"{name} is the judge's")
        info = info_of(type(self))
        plain = type(value) in _PLAIN
        # A container or tensor (a shared pair), or a student's object, crosses in the dict as it would as an argument.
        writable = info.fast_set and name not in info.data and (
            plain or type(value) in _SHARED_TYPES or isinstance(value, Handle))
        found = _instance_dict(self, info) if writable else None
        if found is None:
            oid_of(self)
            info.peer.request("setattr", self, name, value)
            return
        if not plain and self._judge_pair.lazy:
            # The value will be a shared pair inside this __dict__, and the test may still hold it: the dict
            # becomes eager first, so that what crosses inside it is eager too and the test's changes to the
            # value keep crossing (codec.py).
            info.peer.escape_dict(found)
        elif plain and name in found and same_plain(found[name], value):
            return  # Nothing changes (``cache.misses += 0``): the dict need not cross again.
        found[name] = value
        _changed(self, info)

    def __delattr__(self, name: str) -> None:
        info = info_of(type(self))
        found = _instance_dict(self, info) if info.fast_set and name not in info.data else None
        if found is None:
            oid_of(self)
            info.peer.request("delattr", self, name)
        elif name in found:
            del found[name]
            _changed(self, info)
        else:
            raise AttributeError(name)

    def __hash__(self) -> int:
        oid_of(self)
        value = self._judge_hash
        if value is False:  # Its __hash__ calls an object of the test (agent.object_hash): asked now, once.
            peer = info_of(type(self)).peer
            if peer.decoding:
                raise TypeError(f"the hash of a '{type(self).__name__}' that calls the test's objects is not known "
                                "while a message is read")
            value = _request(self, "op", "hash", self)
            if type(value) is not int:
                raise WireError("the kernel answered a hash that is not an int")
            object.__setattr__(self, "_judge_hash", value)
        if type(value) is not int:
            raise TypeError(f"unhashable type: '{type(self).__name__}'")
        return value

    def __eq__(self, other):
        if info_of(type(self)).peer.decoding:
            return self is other
        return _request(self, "op", "eq", self, other)

    def __ne__(self, other):
        if info_of(type(self)).peer.decoding:
            return self is not other
        return _request(self, "op", "ne", self, other)

    def __call__(self, *args, **kwargs):
        info = info_of(type(self))
        if not info.peer.serving and getattr(self, "_judge_planted", False):
            raise PlantedCallRefused(
                f"the test called {type(self).__qualname__!r} of the student's code after that code had returned: "
                "the student's code gave it to one of the test's objects (a hook, a callback), and the judge runs the "
                "student's code only while the test calls it, never from inside the test's own computations")
        return info.peer.request("call", self, args, tuple(kwargs.items()))

    def __deepcopy__(self, memo):
        return _request(self, "op", "deepcopy", self)

    def __round__(self, *digits):
        return _request(self, "op", "round", self, *digits)

    def __setitem__(self, key, value) -> None:
        _request(self, "op", "setitem", self, key, value)

    def __reduce_ex__(self, protocol):
        raise TypeError("an object of the student's kernel cannot be pickled")

    def __del__(self) -> None:
        try:
            info = type.__getattribute__(type(self), "_judge_mirror_")
            if info.epoch == info.peer.epoch_number:
                peer, pair = info.peer, getattr(self, "_judge_pair", None)
                peer.released.append(self._judge_oid)
                if pair is not None and pair.quiet:
                    peer.pairs.orphans.append(pair)
                if (info.flags & FINALIZER or peer.finalizers) and peer.idle():
                    # An object that runs code when it is freed, or any object once the student's code made a class
                    # whose objects do (it may hold one), is freed now, as in one process (the kernel frees what the
                    # judge let go when it reads the judge's next message): a ``__del__`` that changes the test's
                    # values must do so before the test's next check reads them.
                    peer.free_now(self._judge_oid, pair)
        except BaseException:  # noqa: BLE001 - a bare instance, or the interpreter is shutting down; an error or a
            pass  # time limit that a sync met shows at the test's next request.

    @staticmethod
    def judge_count_torch_calls(function, *args, **kwargs):
        """course.checks.count_torch_calls of a function of the kernel: the kernel counts (and can lie)."""
        return _kernel_runs("count", function, args, kwargs)

    @staticmethod
    def judge_replay(target, steps: list):
        """course.checks.replay on a kernel's object: all steps in one request, their arguments copies as in process."""
        info = info_of(target if isinstance(target, HandleMeta) else type(target))
        info.peer.send_by_value = True
        reply = info.peer.request("replay", target, tuple(steps))  # [whether a step raised, result...]
        # A result for every step, or for every step before one that raised, never fewer: a test may loop over them.
        if not (type(reply) is list and reply and type(reply[0]) is bool
                and (len(reply) - 1 < len(steps) if reply[0] else len(reply) - 1 == len(steps))):
            raise WireError("a malformed answer to a replay")
        _keep_in_step(info.peer, reply[1:])
        yield from reply[1:]
        if reply[0]:
            info.peer.request("replay_error", target)  # It raises what the failing step raised.
            raise WireError("the kernel said a replayed step failed, then that none did")

    @staticmethod
    def judge_count_launches(function, *args, **kwargs):
        """course.kernels.count_launches of a function of the kernel: the kernel counts (and can lie)."""
        return _kernel_runs("launches", function, args, kwargs)

    @staticmethod
    def judge_watch_memory(function, *args, **kwargs):
        """course.kernels.watch_memory of a function of the kernel: the kernel watches (and can lie)."""
        return _kernel_runs("memory", function, args, kwargs)


def _unary(op: str):
    def method(self):
        return _request(self, "op", op, self)
    return method


def _binary(op: str, reflected: bool = False):
    def method(self, other):
        return _request(self, "op", op, other, self) if reflected else _request(self, "op", op, self, other)
    return method


for _name in ("len", "iter", "next", "repr", "str", "bool", "index", "int", "float", "complex", "neg", "pos",
              "abs", "invert", "dir", "copy"):
    setattr(Handle, f"__{_name}__", _unary(_name))
for _name in ("getitem", "delitem", "contains", "lt", "le", "gt", "ge", "format", "add", "sub", "mul", "truediv",
              "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift", "rshift", "divmod"):
    setattr(Handle, f"__{_name}__", _binary(_name))
for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift",
              "rshift", "divmod"):
    setattr(Handle, f"__r{_name}__", _binary(_name, reflected=True))


class RemoteMethod:
    """``handle.method``: a plain function of the object's class, called in one request."""

    __slots__ = ("_judge_owner", "_judge_name")

    def __init__(self, owner: Handle, name: str) -> None:
        self._judge_owner, self._judge_name = owner, name

    @property
    def __self__(self) -> Handle:
        return self._judge_owner

    @property
    def __name__(self) -> str:
        return self._judge_name

    def __call__(self, *args, **kwargs):
        return _request(self._judge_owner, "method", self._judge_owner, self._judge_name, args, tuple(kwargs.items()))

    def __getattr__(self, name: str):
        if name.startswith("_judge_"):
            raise AttributeError(name)
        return getattr(_request(self._judge_owner, "getattr", self._judge_owner, self._judge_name), name)

    def __eq__(self, other) -> bool:
        return (type(other) is RemoteMethod and other._judge_owner is self._judge_owner
                and other._judge_name == self._judge_name)

    def __hash__(self) -> int:
        return hash((id(self._judge_owner), self._judge_name))

    def __repr__(self) -> str:
        return f"<bound method {type(self._judge_owner).__qualname__}.{self._judge_name} of the student's object>"

    judge_count_torch_calls = Handle.judge_count_torch_calls
    judge_count_launches = Handle.judge_count_launches
    judge_watch_memory = Handle.judge_watch_memory


class HandleMeta(type):
    """The type of every mirror: class-level uses of a mirror are requests too."""

    def __new__(mcls, name, bases, namespace, **keywords):
        if "_judge_mirror_" in namespace:
            return super().__new__(mcls, name, bases, namespace)
        return _remote_subclass(name, bases, namespace, keywords)

    def __call__(cls, *args, **kwargs):
        return info_of(cls).peer.request("call", cls, args, tuple(kwargs.items()))

    def __getattr__(cls, name: str):
        if name.startswith("_judge_"):
            raise AttributeError(name)
        return info_of(cls).peer.request("getattr", cls, name)

    def __setattr__(cls, name: str, value) -> None:
        info_of(cls).peer.request("setattr", cls, name, value)

    def __delattr__(cls, name: str) -> None:
        info_of(cls).peer.request("delattr", cls, name)

    def __instancecheck__(cls, obj) -> bool:
        return type(obj) is cls or bool(info_of(cls).peer.request("op", "isinstance", obj, cls))

    def __subclasscheck__(cls, sub) -> bool:
        return sub is cls or bool(info_of(cls).peer.request("op", "issubclass", sub, cls))

    def __repr__(cls) -> str:
        info = type.__getattribute__(cls, "_judge_mirror_")
        return f"<class '{info.module}.{info.qualname}'>"

    @property
    def __dict__(cls):
        return info_of(cls).peer.request("getattr", cls, "__dict__")

    # course.checks.replay on a class of the kernel (``("__call__", args)`` steps make many objects at once).
    judge_replay = staticmethod(Handle.judge_replay)


def make_mirror(info: MirrorInfo, name: str) -> HandleMeta:
    namespace = {"__slots__": (), "_judge_mirror_": info, "__module__": info.module, "__qualname__": info.qualname}
    return HandleMeta(name if name.isidentifier() else "StudentClass", (Handle,), namespace)


def lent_qualname(qualname: str | None) -> str | None:
    """A test's qualified name as the student's code sees it: without the test function it was defined in
    (``_check_task5_2_6_schedule.<locals>.Probe`` is lent as ``Probe``), which would tell that code which test cell
    runs; the name itself stays, for the student's messages."""
    return qualname.rpartition("<locals>.")[2] if qualname else qualname


def _remote_subclass(name: str, bases: tuple, namespace: dict, keywords: dict) -> HandleMeta:
    """``class Probe(StudentClass): ...`` in a test: the class is made in the kernel."""
    if keywords:
        raise TypeError("a subclass of a student's class takes no class keywords here")
    mirrors = [base for base in bases if type(base) is HandleMeta]
    cell = namespace.get("__classcell__")
    body = {key: value for key, value in namespace.items() if key != "__classcell__"}
    if type(body.get("__qualname__")) is str:
        body["__qualname__"] = lent_qualname(body["__qualname__"])
    cls = info_of(mirrors[0]).peer.request("subclass", name, tuple(bases), body)
    if type(cls) is not HandleMeta:
        raise WireError("the kernel did not answer a class")
    if cell is not None:
        cell.cell_contents = cls
    return cls
