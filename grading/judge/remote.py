"""The judge's side of the connection: what the kernel's objects become, and what the kernel may ask.

The kernel's objects arrive as handles and mirrors (handles.py); the judge's own objects that a
test passes to the student's code (a function, a stand-in model, a class body's methods) are lent
as callbacks. A request of the kernel may only call one of those, read one of its public
attributes (no name starting with ``_``) or call it (``method``: one request where reading and
calling would take two), or apply one of `CALLBACK_OPS` to it; an object id or
shared id that the judge never issued is an error, and a module, frame or code object is never
lent. Every wait for the kernel has a deadline and can be cancelled (`read_chunk`), so a kernel
that stops answering, or answers forever, ends its test with a timeout.
"""

from __future__ import annotations

import inspect
import select
import socket
import struct
import sys
import time
import types
import weakref

from course import checks, kernels

from .agent import CALLABLE, COUNT_LAUNCHES, COUNT_TORCH_CALLS, EAGER_DICT_ITEMS, FUNCTION, OPS, protocol_flags
from .handles import NO_DICT, Handle, HandleMeta, MirrorInfo, RemoteMethod, info_of, lent_qualname, make_mirror
from .pairs import lazy_pairs_in
from .peer import END, HELLO, NOT_SHARED, READY, Peer, from_kernel, global_node, keywords
from .wire import CLASS_NAMES, Tag, WireError, expect, text

# What the kernel may do to an object of the test, and how many of the kernel's values each takes besides the object:
# never more (a memo of the kernel's own passed to ``copy.deepcopy`` would come back holding the test's private
# state, which the kernel could then rewrite).
CALLBACK_OPS = {**dict.fromkeys(("len", "iter", "next", "repr", "str", "bool", "hash", "index", "int", "float",
                                 "copy", "deepcopy", "dir", "vars"), 0),
                **dict.fromkeys(("contains", "getitem", "eq", "ne", "lt", "le", "gt", "ge", "format"), 1)}
_NEVER_LENT = (types.ModuleType, types.FrameType, types.CodeType, types.TracebackType, types.CellType)
_FUNCTIONS = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.BuiltinMethodType)
_SWEEP_EVERY = 64  # Messages between two looks for lazy pairs the test let go of (pairs.PairTable.sweep).
_SIBLINGS = 63  # Other objects whose __dict__ comes with the one the judge asks for (`stale_siblings`).
_UNREAD_FOR = 64  # Messages after which a mirrored __dict__ that the test did not read becomes lazy again.
_MAPPINGS = frozenset({Tag.DICT, Tag.ODICT})
_SEQUENCES = frozenset({Tag.LIST, Tag.SET})
_CONTAINERS = _MAPPINGS | _SEQUENCES
_SLICE_MICROSECONDS = 200_000  # How often a judge waiting for the kernel looks at its deadline and the grader.


class JudgeTimeout(BaseException):
    """The test ran past its time limit (a BaseException: a test's ``except Exception`` cannot stop it)."""


class Cancelled(BaseException):
    """The grader says the kernel stopped serving this test (its cell ended)."""


def _known_class(cls: type) -> list | None:
    """The GLOBAL node of the nearest class of ``cls``'s MRO that the kernel has too (``course.model.TinyDecoder`` for a
    test's ``class CountingDecoder(TinyDecoder)``, a torch module), but ``object``: a lent object's proxy says it is
    one (``isinstance(model, torch.nn.Module)`` holds in the kernel as in one process). None where there is none."""
    for klass in cls.__mro__[:-1]:
        node = global_node(klass)
        if node is not None and node[0] == Tag.GLOBAL:
            return node
    return None


def _plain_text(value) -> str | None:
    """A module's name or a docstring as it crosses: a plain string, or None."""
    return str.__str__(value) if isinstance(value, str) else None


def _public_attributes(target) -> dict:
    """What ``vars()`` of a lent object gives the student's code: a copy of its ``__dict__`` without the private
    names, which the kernel never reads (agent.JudgeObject)."""
    found = getattr(target, "__dict__", None)
    if type(found) is not dict:
        raise TypeError("vars() argument must have __dict__ attribute")
    return {name: value for name, value in found.items() if type(name) is str and not name.startswith("_")}


def _method_notes(codec, cls: type, methods: list[str], depth: int) -> list[list]:
    """``[[name, docstring or None, parameters or None, qualified name]...]`` of ``methods`` (a class's plain
    functions): what a lent object's proxy says of its methods (agent._proxy_class). The parameters are
    `_parameters`', ``self`` first."""
    notes = []
    for name in methods:
        function = getattr(cls, name, None)
        notes.append([name, _plain_text(getattr(function, "__doc__", None)), _parameters(codec, function, depth),
                      lent_qualname(_plain_text(getattr(function, "__qualname__", None))) or name])
    return notes


def _parameters(codec, function, depth: int) -> list | None:
    """``[[parameter, kind, has a default, default]...]`` of ``function``'s signature; None where Python gives it
    none."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    empty = inspect.Parameter.empty
    # The defaults cross as copies: the student's code reads them as in one process, but its changes to a list or
    # dict there never reach the test's own (a test's record passed as a default).
    by_value, codec.by_value = codec.by_value, True
    try:
        return [[parameter.name, int(parameter.kind), parameter.default is not empty,
                 None if parameter.default is empty else codec.encode(parameter.default, depth + 2)]
                for parameter in signature.parameters.values()]
    finally:
        codec.by_value = by_value


def _method_names(value) -> list[str]:
    """The public plain functions of a test object's class that no attribute of the object shadows: the kernel
    calls them in one request (``method``) instead of reading the attribute and then calling what it got."""
    own = getattr(value, "__dict__", None)
    seen, names = set(), []
    for klass in type(value).__mro__[:-1]:  # Not object's own.
        for name, attribute in vars(klass).items():
            if name in seen:
                continue
            seen.add(name)
            if (type(attribute) is types.FunctionType and not name.startswith("_")
                    and not (type(own) is dict and name in own)):
                names.append(name)
    return names[:CLASS_NAMES]


class JudgePeer(Peer):
    parity = 0
    kernel_objects = (Handle,)
    resolve_global = staticmethod(from_kernel)  # Only classes that hold data (peer.kernel_may_name).
    takes_modules = False

    def __init__(self, connection, limits=None, control=None) -> None:
        self.epoch_number = 0
        self.crossings = 0  # The last test cell's requests, both ways.
        self.deadline: float | None = None
        self.control = control  # The grader's channel (server.Control): a line on it cancels the test.
        self.on_rebound = None  # Called with the global names the kernel rebound (runner.CellGlobals).
        self.adopting = None  # A bare instance that becomes the object the kernel sends next (handles.oid_of).
        self.serving = 0  # Above 0 while the judge answers a request of the kernel (the student's code is running).
        self.waiting = 0  # Above 0 while the judge waits for the kernel's answer to one of its requests.
        self.dying: set[int] = set()  # The oids whose handle's __del__ has the kernel free their object now.
        self.finalizers = False  # The kernel said its student's code made objects that run code when freed.
        self.testing = False  # The test's code runs (from `begin` to `finish`): a handle's __del__ may ask the kernel.
        self.deferred: BaseException | None = None  # What a `free_now` met, raised at the test's next request.
        super().__init__(connection, *(limits,) if limits else ())
        # A blocking receive that gives up every slice, so that the deadline and the grader's
        # cancellation are looked at without a select() before every message.
        connection.settimeout(None)
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 0, _SLICE_MICROSECONDS))

    def reset(self) -> None:
        super().reset()
        self.epoch_number += 1
        self.handles: dict[int, weakref.ref] = {}
        self.mirrors: dict[int, HandleMeta] = {}
        self.released: list[int] = []
        self.dropped_soon: list[int] = []  # Pairs dropped between two messages (`free_now`): sent with the next.
        self.promoted: list[int] = []  # Lazy pairs the test got hold of since the last message.

    # The test's life: the kernel says it is ready, the judge ends it.

    def hello(self) -> tuple[bool, str]:
        """The kernel's first message: whether its code ran (a harness kernel), and why not."""
        kind, _, body = self.receive()
        expect(kind == HELLO and len(body) == 2 and type(body[0]) is bool, "a kernel that did not say hello")
        return body[0], text(body[1], self.limits)

    def begin(self, epoch: str, deadline: float) -> None:
        self.epoch, self.deadline = epoch, deadline
        self.reset()
        kind, _, _ = self.receive()
        expect(kind == READY, f"a {kind!r} message before the kernel was ready")
        self.testing, self.deferred = True, None

    def finish(self) -> None:
        """The test's code has ended: what it lets go of from now on crosses with the end of the test (`free_now` no
        longer asks the kernel); an error that a `free_now` met while the test ran is raised here."""
        self.testing = False
        deferred, self.deferred = self.deferred, None
        if deferred is not None:
            try:
                raise deferred
            finally:
                deferred = None

    def end(self) -> None:
        try:
            self.send(END, 0, [])
        except (OSError, WireError):
            pass
        finally:
            self.crossings = self.requests  # The test cell's requests, both ways (`compare --stats`).
            self.epoch, self.deadline, self.on_rebound = None, None, None
            self.reset()

    def read_chunk(self) -> int:
        while True:
            self._check_deadline()
            try:
                return self.connection.recv_into(self.buffer)
            except (BlockingIOError, TimeoutError):  # The slice passed with nothing from the kernel.
                self._check_control()

    def _check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise JudgeTimeout()

    def _check_control(self) -> None:
        control = self.control
        if control is None:
            return
        if not control.pending() and select.select([control], [], [], 0)[0]:
            control.fill()
        if control.pending():
            raise Cancelled()

    def request(self, op: str, *args):
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise JudgeTimeout()
        if self.deferred is not None and not self.waiting:
            self.finish()  # What a `free_now` met (a time limit, the kernel's end) ends the test at its next request.
        self.waiting += 1
        try:
            return super().request(op, *args)
        finally:
            self.waiting -= 1

    def free_now(self, oid: int, pair) -> None:
        """Have the kernel free, at once, the object ``oid`` of a handle that the test let go of, from the handle's
        ``__del__`` (``pair``: the pair of its ``__dict__``, which holds the object in the kernel, or None): what the
        test wrote into it crosses first."""
        self.dying.add(oid)  # Its handle's weak reference still answers while its __del__ runs (`outgoing`).
        try:
            if pair is not None and pair.sid in self.pairs.dirty:
                self.request("sync")
            if pair is not None and self.pairs.by_sid.get(pair.sid) is pair:
                # Listed first: dropping it may free handles that only its __dict__ held, whose own free_now sends it.
                self.dropped_soon.append(pair.sid)
                self.pairs.drop(pair.sid)
            self.request("sync")
        except BaseException as error:  # noqa: BLE001 - a __del__ cannot raise: the test's next request does.
            self.deferred = self.deferred or error
        finally:
            self.dying.discard(oid)

    def idle(self) -> bool:
        """Whether the judge is between two requests, in the test's own code: a request may start now."""
        return self.testing and not (self.waiting or self.serving or self.in_message or self.decoding)

    def answer(self, seq: int, body: list) -> None:
        self.serving += 1
        try:
            super().answer(seq, body)
        finally:
            self.serving -= 1

    # Objects.

    def stale_siblings(self, handle: Handle, info) -> list[Handle]:
        """Other handles of ``handle``'s class whose ``__dict__`` the judge would have to ask for too (none came
        yet, or a message came since), at most `_SIBLINGS`: a test that reads an object's attributes after the
        kernel ran mostly reads its siblings' next (a cache's entries, a sequence's blocks), and the request for
        one brings theirs along (agent.AgentPeer's "dict"). Each comes as it would if asked for alone. Those that
        came to the judge after ``handle`` come first: the test reads in that order more often than not, and the
        ones before it, which it has likely read already, count as stale again after this very request. Their
        dicts stay lazy: made eager, as the asked one becomes when the test reads it again
        (handles._instance_dict), they saved notebooks 02, 03, 05 and 08 2,203 more crossings but doubled the
        pairs the kernel compares at every message (2.3 to 5.6 million)."""
        after, before, dead, received, passed = [], [], [], self.received, False
        for oid, ref in info.instances.items():
            other = ref()
            if other is None:
                dead.append(oid)
            elif other is handle:
                passed = True
            else:
                known = getattr(other, "_judge_dict", None)
                pair = getattr(other, "_judge_pair", None)
                # A dict of more than EAGER_DICT_ITEMS comes only when asked for itself.
                if known is None or (known is not NO_DICT and pair.lazy and pair.valid_at != received
                                     and len(known) <= EAGER_DICT_ITEMS):
                    if passed:
                        after.append(other)
                        if len(after) == _SIBLINGS:
                            break
                    elif len(before) < _SIBLINGS:
                        before.append(other)
        for oid in dead:
            del info.instances[oid]
        return (after + before)[:_SIBLINGS]

    def encode_object(self, value, depth: int):
        if isinstance(value, Handle):
            if not hasattr(value, "_judge_oid"):
                raise WireError("an instance made with object.__new__ must be used once before it is passed on")
            return [Tag.YOURS, value._judge_oid]
        if type(value) is HandleMeta:
            return [Tag.YOURS, type.__getattribute__(value, "_judge_mirror_").oid]
        if type(value) is RemoteMethod:
            return [Tag.BOUND, value._judge_owner._judge_oid, value._judge_name]
        node = global_node(value)
        if node is not None:
            return node
        if isinstance(value, _NEVER_LENT):
            raise WireError(f"a {type(value).__name__} of the judge cannot be lent to the student's code")
        oid, new = self.export(value)
        lent = new and not isinstance(value, (type, *_FUNCTIONS))
        methods = _method_names(value) if lent else None
        flags = FUNCTION * isinstance(value, _FUNCTIONS) | CALLABLE * callable(value)
        if lent:
            flags |= protocol_flags(type(value))
        if new and type(value) is types.FunctionType:
            described = self._function_node(value, depth)
        else:  # A lent object's class's names, module and docstrings, and its methods': its proxy's class says them.
            cls = type(value)
            described = [_plain_text(cls.__module__), _plain_text(cls.__doc__),
                         _method_notes(self.codec, cls, methods, depth), _plain_text(cls.__name__) or "JudgeObject",
                         lent_qualname(_plain_text(cls.__qualname__)) or "JudgeObject"] if lent else None
        # Its hash where it is its identity's (which never changes), so that the kernel can hash it while it reads a
        # message, when it cannot ask (a frozenset of the test's tiers that a student's object keeps crosses back).
        identity = hash(value) if lent and type(value).__hash__ is object.__hash__ else None
        return [Tag.OBJECT, oid, methods, described, flags, _known_class(type(value)) if lent else None, identity]

    def _function_node(self, function, depth: int) -> list | None:
        """``[name, qualname, [[parameter, kind, has a default, default]...], module, docstring]`` of a test's function
        lent to the student's code: its stand-in there (agent._judge_function) says the same of itself, which
        a student's ``__init_subclass__`` or ``inspect.signature`` may check (a method of a test's subclass of the
        student's class). None where Python gives it no signature."""
        parameters = _parameters(self.codec, function, depth)
        if parameters is None:
            return None
        return [function.__name__, lent_qualname(_plain_text(function.__qualname__)) or function.__name__, parameters,
                _plain_text(function.__module__), _plain_text(function.__doc__)]

    def decode_object(self, node: list, depth: int):
        tag = node[0]
        found = self.decode_shared(node)
        if found is not NOT_SHARED:
            return found
        if tag in (Tag.CLASS, Tag.CLASSREF):
            return self.mirror(node)
        expect(tag == Tag.OBJECT and len(node) in (5, 6) and type(node[1]) is int and node[1] % 2 == 1,
               f"a value of an unknown kind (tag {tag})")
        return self.handle_of(node, depth)

    def mirror(self, node: list) -> HandleMeta:
        if node[0] == Tag.CLASSREF:
            expect(len(node) == 2 and node[1] in self.mirrors, "a class reference never sent")
            return self.mirrors[node[1]]
        expect(len(node) == 8 and type(node[1]) is int and node[1] % 2 == 1 and node[1] not in self.mirrors
               and type(node[5]) is int, "a malformed class")
        name, qualname, module = (text(part, self.limits) for part in node[2:5])
        names = []
        for group in node[6:8]:
            expect(type(group) is list and len(group) <= CLASS_NAMES, "a malformed class")
            names.append(frozenset(text(item, self.limits) for item in group))
        info = MirrorInfo(self, self.epoch_number, node[1], module, qualname, node[5], names[0], names[1])
        self.mirrors[node[1]] = cls = make_mirror(info, name)
        return cls

    def handle_of(self, node: list, depth: int) -> Handle:
        oid, class_node, hashed = node[1:4]
        expect(type(class_node) is list and class_node and class_node[0] in (Tag.CLASS, Tag.CLASSREF),
               "an object without its class")
        cls = self.mirror(class_node)
        if type(hashed) is list:  # A string of the student's class that hashes as its plain value (agent.object_hash).
            expect(len(hashed) == 1 and type(hashed[0]) is str, "a malformed hash")
            hashed = hash(text(hashed[0], self.limits))
        expect(hashed is None or hashed is False or type(hashed) is int, "a malformed hash")
        found = self.handles.get(oid)
        handle = found() if found is not None else None
        if handle is not None and handle._judge_hash is False and type(hashed) is int:
            object.__setattr__(handle, "_judge_hash", hashed)  # Sent now that a key or a set item needs it.
        if handle is None or type(handle) is not cls:
            adopting, self.adopting = self.adopting, None
            handle = adopting if type(adopting) is cls and not hasattr(adopting, "_judge_oid") else object.__new__(cls)
            object.__setattr__(handle, "_judge_oid", oid)
            object.__setattr__(handle, "_judge_hash", hashed)
            object.__setattr__(handle, "_judge_planted", False)
            self.handles[oid] = info_of(cls).instances[oid] = weakref.ref(handle)
        if self.handing_over:
            # An object that comes as an argument of the kernel's request, or in what the kernel put into one of the
            # test's own containers, was handed to the test's objects by the student's code (a hook, a callback),
            # whether or not the test had it before: it stays so, even if the student's code returns it later
            # (handles.Handle.__call__).
            object.__setattr__(handle, "_judge_planted", True)
        if len(node) == 6:
            pair = self.codec.decode_root(node[5], depth + 1)
            pair.valid_at, pair.read_at = self.received, self.sent
            object.__setattr__(handle, "_judge_dict", pair.obj)
            object.__setattr__(handle, "_judge_pair", pair)
        return handle

    def escape(self, value) -> None:
        """The test holds ``value`` now: every lazy pair in it becomes eager, here and in the kernel."""
        for pair in lazy_pairs_in(self.pairs, [value]):
            self.pairs.promote(pair)
            self.promoted.append(pair.sid)

    def escape_dict(self, found: dict) -> None:
        """A mirrored ``__dict__`` (and all it holds) becomes eager, as `escape` does; the dict itself becomes
        quiet here (pairs.PairTable.quieten) when it was lazy, which says that only its handle holds it (the
        test never held a lazy one: `demote_unread` demotes only what the test does not hold)."""
        pair = self.pairs.find(found)
        was_lazy = pair is not None and pair.lazy
        self.escape(found)
        if was_lazy:
            self.pairs.quieten(pair)

    def incoming(self, extra) -> None:
        if (type(extra) is not list or len(extra) != 4 or type(extra[0]) is not list or type(extra[1]) is not int
                or type(extra[2]) is not int or type(extra[3]) is not int):
            raise WireError("malformed synchronization data")
        self.finalizers = extra[3] == 1  # The kernel holds objects that run code when freed (`free_now`).
        if extra[0] and self.on_rebound is not None:
            self.on_rebound([text(name, self.limits) for name in extra[0]])
        # Torch operations and Triton launches the student's code made while the test counted them
        # (the kernel's word for it).
        if extra[1] > 0:
            for mode in checks.COUNTING:
                mode.calls += min(extra[1], 1 << 40)
        if extra[2] > 0:
            for counter in kernels.COUNTING:
                counter.launches += min(extra[2], 1 << 40)

    def outgoing(self, dropped: list[int]) -> list:
        if self.dropped_soon:
            dropped, self.dropped_soon = dropped + self.dropped_soon, []
        released = []
        if self.released:
            for oid in set(self.released):
                found = self.handles.get(oid)
                if found is None or found() is None or oid in self.dying:
                    self.handles.pop(oid, None)
                    released.append(oid)
            self.released = []
        demoted = []
        if self.sent % _SWEEP_EVERY == _SWEEP_EVERY - 1:
            dropped = dropped + self.pairs.sweep()
            demoted = self.demote_unread(set(self.promoted))
        # A pair promoted and then dropped before this message (the test let go of it at once) is not
        # promoted: the kernel drops it first and would not find it.
        promoted = [sid for sid in self.promoted if sid in self.pairs.by_sid] if self.promoted else []
        self.promoted = []
        counting = COUNT_TORCH_CALLS * bool(checks.COUNTING) | COUNT_LAUNCHES * bool(kernels.COUNTING)
        return [dropped, released, promoted, counting, demoted]

    def demote_unread(self, promoted: set[int]) -> list[int]:
        """The eager ``__dict__``s of the kernel's objects that the test has not read for `_UNREAD_FOR` messages
        and does not hold, and the containers that only they hold, become lazy again; their sids.

        Both sides stop looking for their changes at every message (most of a message's cost once a test has
        read many objects: notebook 08's tests scanned 48 pairs per message, 95% of them untouched for 200
        messages). A later read asks for what changed (handles._instance_dict), as for any lazy ``__dict__``.
        The test holds none of them: reference counts say that only the pair table, the handle and the
        demoted containers (with their snapshots) refer to each, so no eager pair holds a lazy one.
        """
        table, horizon, demoted = self.pairs, self.sent - _UNREAD_FOR, []
        for ref in list(self.handles.values()):
            handle = ref()
            try:
                root = handle._judge_pair if handle is not None else None
            except AttributeError:
                continue
            # Holders of the __dict__: its pair, the handle's slot and getrefcount's argument.
            if (root is None or root.lazy or root.read_at > horizon or root.sid in promoted or root.recorded is None
                    or table.by_sid.get(root.sid) is not root or sys.getrefcount(root.obj) != 3 or root.changed()):
                continue
            table.demote(root)
            root.valid_at = self.received
            demoted.append(root.sid)
            demoted.extend(self._demote_held(root, promoted))
        return demoted

    def _demote_held(self, holder, promoted: set[int]) -> list[int]:
        """The eager containers that only ``holder`` (a pair being demoted) holds, and what only they hold."""
        table, demoted, stack = self.pairs, [], [holder]
        while stack:
            pair = stack.pop()
            items = pair.obj.values() if pair.tag in _MAPPINGS else pair.obj if pair.tag in _SEQUENCES else ()
            for item in items:
                held = table.find(item)
                # Holders: its pair, the container, the container's snapshot, this loop and getrefcount's argument.
                if (held is None or held.lazy or held.tag not in _CONTAINERS or held.sid in promoted
                        or held.recorded is None or sys.getrefcount(item) != 5 or held.changed()):
                    continue
                table.demote(held)
                demoted.append(held.sid)
                stack.append(held)
        return demoted

    # What the kernel may ask of the judge's objects.

    def handle(self, op: str, args: list):
        expect(len(args) >= 1, "a request without its object")
        target = args[0]
        oid = self.export_ids.get(id(target))
        expect(oid is not None and self.exports.get(oid) is target, "a request about an object the judge never lent")
        if op == "call":
            expect(len(args) == 3 and type(args[1]) is tuple, "a malformed call")
            return target(*args[1], **keywords(args[2]))
        if op == "method":  # ``obj.name(*args)`` in one request (agent.JudgeObject); the name is looked up now.
            expect(len(args) == 4 and type(args[2]) is tuple, "a malformed method call")
            name = text(args[1], self.limits)
            if not name or name.startswith("_"):
                raise AttributeError(f"the test's objects lend no attribute {name!r} to the student's code")
            return getattr(target, name)(*args[2], **keywords(args[3]))
        if op == "getattr":
            name = text(args[1], self.limits) if len(args) == 2 else None
            if not name or name.startswith("_"):
                raise AttributeError(f"the test's objects lend no attribute {name!r} to the student's code")
            return getattr(target, name)
        if op == "op":
            name = text(args[1], self.limits) if len(args) >= 2 else None
            expect(name in CALLBACK_OPS and len(args) == 2 + CALLBACK_OPS[name],
                   f"the operation {name!r} on an object of the test, with {len(args) - 2} values")
            if name == "vars":
                return _public_attributes(target)
            return OPS[name](target, *args[2:])
        raise WireError(f"an unknown request {op!r} from the kernel")
