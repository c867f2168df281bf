"""The kernel's side of the judge: serves a test cell's requests with the student's objects.

The grader sends this module's source (and that of wire, pairs, codec and peer) into the
student's kernel as a hidden first cell (grading/judge/prelude.py), which calls `connect`; each
test cell then runs ``agent.serve(EPOCH)`` in the kernel while the judge process runs the test.
Everything here is the student's to change: a kernel can replace this code, lie or hang, and the
judge only ever gets values, exceptions or silence from it. So this side does whatever the judge
asks (`OPS` and the requests of `AgentPeer.handle`) and lends the judge every object that is not
plain data as a handle (an oid); objects of the judge that reach the student's code become
proxies that can only call the judge back (`JudgeObject`, `_judge_function`).

Only the standard library is imported here, and NumPy and torch in the modules it needs; counting a function's
torch operations imports course.checks, which the notebooks import anyway.
"""

from __future__ import annotations

import contextlib
import copy
import dis
import gc
import inspect
import keyword
import operator
import socket
import sys
import threading
import types

from .pairs import PAIR_TAGS, compare_bytes
from .peer import (
    ABSENT,
    CLASS_DICT,
    CLASS_MRO,
    CLASS_NAME,
    CLASS_QUALNAME,
    END,
    HELLO,
    MODULE_DICT,
    NOT_SHARED,
    READY,
    REQ,
    Peer,
    global_node,
    kernel_may_name,
    keywords,
    own_attribute,
    string_key_get,
)
from .stored import HASHED_WITHOUT_CODE
from .wire import CLASS_NAMES, Tag, WireError, expect, text

FUNCTION, CALLABLE = 1, 2  # Flags of an object node: a plain function (bound as a method), callable.
# The special methods that a lent object's class may have or not, each a flag of the judge's object node after those
# two: its proxy has the same ones, so that ``callable(x)``, ``hasattr(x, "__iter__")`` or ``collections.abc.Iterable``
# answer in the kernel as in one process (Python's fallbacks, such as ``in`` through ``__iter__``, then do too).
PROTOCOL_FLAGS = {name: 4 << index for index, name in enumerate(
    ("len", "iter", "next", "contains", "getitem", "index", "int", "float", "bool"))}
# Flags of a class node: which attribute hooks it overrides, whether its instances have a __dict__, and whether they
# run code when they are freed (a ``__del__``, a generator's ``finally``).
CUSTOM_GET, CUSTOM_SET, CUSTOM_DEL, HAS_DICT, FINALIZER = 1, 2, 4, 8, 16
PYTHON_HASH = 32  # Hashing its objects may run Python code (`object_hash`); the judge does not read this flag.
_MISSING = object()
EAGER_DICT_ITEMS = 16  # An object's __dict__ of at most this many items crosses with the object itself.

def _one_side(method: str):
    """A comparison as its left operand's class answers it, which may be NotImplemented: the side that asked then
    tries the reflected one and falls back to identity itself, as Python does in one process. ``operator.eq``
    here would ask the right operand too, and where that is the other side's object (a test's object compared
    with a student's) each side would hand the reflected comparison back to the other, for ever."""
    return lambda left, right: getattr(type(left), method)(left, right)


OPS = {
    "len": len, "iter": iter, "next": next, "repr": repr, "str": str, "bool": bool, "hash": hash, "format": format,
    "dir": dir, "contains": operator.contains, "getitem": operator.getitem, "setitem": operator.setitem,
    "delitem": operator.delitem, **{name: _one_side(f"__{name}__") for name in ("eq", "ne", "lt", "le", "gt", "ge")},
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
    "matmul": operator.matmul, "and": operator.and_, "or": operator.or_, "xor": operator.xor,
    "lshift": operator.lshift, "rshift": operator.rshift, "neg": operator.neg, "pos": operator.pos, "abs": abs,
    "invert": operator.invert, "index": operator.index, "int": int, "float": float, "complex": complex,
    "round": round, "isinstance": isinstance, "issubclass": issubclass, "copy": copy.copy,
    "deepcopy": copy.deepcopy, "callable": callable, "divmod": divmod,
}


class KernelError:
    """What the judge's mirror of an error whose message it asks for later calls the error's class."""


_HOOKS = {"__getattribute__": object.__getattribute__, "__setattr__": object.__setattr__,
          "__delattr__": object.__delattr__, "__hash__": object.__hash__}
# The hashes that run no code of anyone's: an object's identity, and the values of strings, bytes and numbers (a
# tuple's or a frozenset's calls its items' hashes, which may be the student's).
_PLAIN_HASHES = tuple(vars(kind)["__hash__"] for kind in (object, str, bytes, int, float, complex))


def _defines(cls: type, *names: str) -> bool:
    """Whether ``cls`` or a base defines one of ``names``, read in the classes' own dicts (no descriptor's
    ``__get__`` runs: red team, 2026-12-07)."""
    return any(own_attribute(klass, name, ABSENT) is not ABSENT for klass in CLASS_MRO.__get__(cls) for name in names)


def class_info(cls: type) -> list:
    """``[name, qualname, module, flags, data descriptors, plain functions]`` of a class (see `CUSTOM_GET`).

    Everything is read from the classes' own dicts, through Python's own descriptors: a metaclass's or a descriptor's
    code sees no lookup (red team, 2026-12-07: a descriptor bound to ``__delattr__`` in a class body saw the judge read
    it, and the answer behaved only when judged)."""
    data, methods, own_dict, finalizer, hooks = set(), set(), False, False, dict(_HOOKS)
    for klass in reversed(CLASS_MRO.__get__(cls)):
        for name, value in CLASS_DICT.__get__(klass).items():
            if type(name) is not str:  # Compared with nothing: its __eq__ would be the student's code.
                continue
            data.discard(name)
            methods.discard(name)
            if name == "__del__":
                finalizer = value is not None
            if name in hooks:
                hooks[name] = value
            if name == "__dict__":  # Python's own, not a property of that name (agent.JudgeObject's).
                own_dict = type(value) is types.GetSetDescriptorType
            if type(value) is types.FunctionType:  # Not isinstance, which would read a __class__ of the student's.
                methods.add(name)
            elif _defines(type(value), "__set__", "__delete__"):
                data.add(name)
    flags = (CUSTOM_GET * (hooks["__getattribute__"] is not object.__getattribute__)
             | CUSTOM_SET * (hooks["__setattr__"] is not object.__setattr__)
             | CUSTOM_DEL * (hooks["__delattr__"] is not object.__delattr__)
             | HAS_DICT * ("__dict__" in data and own_dict) | FINALIZER * finalizer
             | PYTHON_HASH * (hooks["__hash__"] is not None and not any(hooks["__hash__"] is plain
                                                                         for plain in _PLAIN_HASHES)))
    module = own_attribute(cls, "__module__", "?")
    names = [str(CLASS_NAME.__get__(cls)), str(CLASS_QUALNAME.__get__(cls)), module if type(module) is str else "?"]
    return [*names, flags, sorted(n for n in data if type(n) is str), sorted(n for n in methods if type(n) is str)]


COUNT_TORCH_CALLS, COUNT_LAUNCHES = 1, 2  # What the judge counts, in its sync (remote.JudgePeer.outgoing).


def _counting_mode():
    """A fresh counter of torch operations that counts as course.checks does (the notebooks whose tests count import
    course anyway)."""
    from course.checks import _CountingMode

    return _CountingMode()


def count_torch_calls(function, args, kwargs):
    """``(result, number of torch operations it made)``, in this process; the arguments stay plain tensors."""
    with _counting_mode() as mode:
        result = function(*args, **kwargs)
    return result, mode.calls


class _LaunchCounter:
    """Counts the Triton kernels launched while it is active, as course.kernels.count_launches does:
    compiled launches (``JITFunction.run``) and interpreted ones (``GridExecutor.__call__``)."""

    def __init__(self) -> None:
        self.calls = 0
        self.patched: list[tuple[type, str, object]] = []

    def __enter__(self) -> _LaunchCounter:
        from triton.runtime import interpreter, jit

        for owner, name in ((jit.JITFunction, "run"), (interpreter.GridExecutor, "__call__")):
            original = getattr(owner, name)
            self.patched.append((owner, name, original))
            setattr(owner, name, self.counted(original))
        return self

    def counted(self, launch):
        def counting(kernel, *args, **kwargs):
            self.calls += not kwargs.get("warmup", False)
            return launch(kernel, *args, **kwargs)
        return counting

    def __exit__(self, *exc) -> None:
        while self.patched:
            owner, name, original = self.patched.pop()
            setattr(owner, name, original)


def count_launches(function, args, kwargs):
    """``(result, number of Triton kernels it launched)``, in this process."""
    with _LaunchCounter() as counter:
        result = function(*args, **kwargs)
    return result, counter.calls


class MidMessage(RuntimeError):
    """The student's code called an object of the test while the kernel made or read a message
    (`AgentPeer.call_judge`)."""


def _frees_with_code(cls: type) -> bool:
    """Whether a class of the student's runs code when its objects are freed: a ``__del__`` in its own or its bases'
    dicts (read there, so that no hook of a metaclass sees it). The student's: made in ``__main__``, or a class that
    the module it names does not hold (``__module__`` set in its body, ``dataclasses.make_dataclass``)."""
    try:
        name = own_attribute(cls, "__module__")
        module = sys.modules.get(name) if type(name) is str and name != "__main__" else None
        students = module is None or _held_by(module, CLASS_QUALNAME.__get__(cls)) is not cls
        return students and any(own_attribute(klass, "__del__", ABSENT) is not ABSENT
                                for klass in CLASS_MRO.__get__(cls) if klass is not object)
    except Exception:  # noqa: BLE001 - a class whose attributes cannot be read: count it.
        return True


def _held_by(module, qualname: str):
    """What a module's dict, then class dicts, hold under ``qualname``, found without running code (no module
    ``__getattr__``, which may warn or import: red team, 2026-12-07); None when it holds nothing there."""
    if type(module) is not types.ModuleType or type(qualname) is not str:
        return None
    first, _, rest = qualname.partition(".")
    value = string_key_get(MODULE_DICT.__get__(module), first)
    for part in rest.split(".") if rest else ():
        if not issubclass(type(value), type):
            return None
        value = own_attribute(value, part)
    return value


_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
# ``yield from`` and ``await`` (the SEND instruction): freeing the generator closes what it delegates to, which may be
# the student's iterator with a ``close``.
_DELEGATES = bytes([dis.opmap["SEND"]]) if "SEND" in dis.opmap else b"\xff\xff"


_WRAPPED_FUNCTIONS = (classmethod, staticmethod, types.MethodType)


def _runs_code_when_freed(namespace: dict) -> bool:
    """Whether the notebook's names hold a class of the student's whose objects run code when freed, or a function
    that is or defines a generator function that runs code when the generator is freed, or a class with a
    ``__del__`` (`_makes_finalizers`), also among the classes' own attributes and in containers (one level down).
    A class that crosses later is looked at then (`AgentPeer.class_node`). Nothing watches class statements as they
    run: a hook in ``builtins.__build_class__`` was a Python function that the student's code could see, by name or
    by the frame it added (red team, round 17)."""
    # Read with type() and the classes' own dicts: an object's __class__ or __getattr__ of the student's sees no
    # lookup (they run at the start of every test cell, and only when judged).
    values = list(namespace.values())
    values += [inner for value in values if issubclass(type(value), type)
               for inner in list(CLASS_DICT.__get__(value).values())]
    values += [inner for value in values if type(value) is dict or type(value) is list or type(value) is tuple
               for inner in list(value.values() if type(value) is dict else value)[:1000]]  # In a container.
    for value in values:
        if issubclass(type(value), type):
            if _frees_with_code(value):
                return True
        else:
            # A class or static method's function, or a bound method's.
            kind = type(value)  # Compared by identity: a metaclass's __eq__ never runs.
            function = value.__func__ if any(kind is wrapped for wrapped in _WRAPPED_FUNCTIONS) else value
            if (type(function) is types.FunctionType and type(function.__module__) is str
                    and function.__module__ == "__main__"
                    and _makes_finalizers(function.__code__)):
                return True
    return False


def _makes_finalizers(code: types.CodeType, depth: int = 0) -> bool:
    """Whether a function's code, or code defined inside it, makes objects that run code when freed: a generator's
    that handles exceptions (a ``finally``, a ``with`` or an ``except``: Python 3.11 gives such code an exception
    table, and a plain generator or a generator expression none) or delegates (`_DELEGATES`), or a class body that
    names ``__del__`` (a class statement in a function, whose class no name holds until the function runs)."""
    if code.co_flags & _GENERATOR_FLAGS and (code.co_exceptiontable or _DELEGATES in code.co_code[::2]):
        return True
    if "__del__" in code.co_names:
        return True
    return depth < 8 and any(type(inner) is types.CodeType and _makes_finalizers(inner, depth + 1)
                             for inner in code.co_consts)


def _in_history(source: str, namespace: dict) -> None:
    """Put a test cell's source where IPython's history holds the line that serves it: ``In`` and ``_ih``, ``_i<N>``,
    the ``_i``, ``_ii`` and ``_iii`` of the next cells, and what the history's database gets. One process holds the
    test cell there, and the student's code may read it (red team, round 17: ``_i<N>`` named the agent). Read and
    written only where they hold that line, as plain strings."""
    try:
        from IPython import get_ipython
    except ImportError:  # A kernel without IPython (grading/judge/host.py): no history.
        return
    shell = get_ipython()
    manager = getattr(shell, "history_manager", None)
    raw = getattr(manager, "input_hist_raw", None)
    if type(raw) is not list or not raw or type(raw[-1]) is not str:
        return
    serving, text = raw[-1], source.rstrip("\n")
    raw[-1] = text
    parsed = manager.input_hist_parsed
    if type(parsed) is list and parsed and type(parsed[-1]) is str:
        parsed[-1] = text
    if type(manager._i00) is str and manager._i00 == serving:
        manager._i00 = text
    for number in (shell.execution_count - 1, shell.execution_count):  # IPython 8 counts the cell before it runs.
        name = f"_i{number}"
        if type(namespace.get(name)) is str and namespace[name] == serving:
            namespace[name] = text
    with manager.db_input_cache_lock:
        cache = manager.db_input_cache
        if cache and type(cache[-1]) is tuple and len(cache[-1]) == 3 and cache[-1][2] == serving:
            cache[-1] = (cache[-1][0], text, text)


def object_hash(value, python_hash: bool = False, needed: bool = False, stored=None):
    """What the judge's handle of ``value`` hashes as: its hash here; None for an unhashable object (or a broken
    ``__hash__``: the judge raises TypeError); False where its ``__hash__`` calls an object of the test, which it
    cannot while the object crosses, or may run Python code (``python_hash``: a ``__hash__`` of the student's, a
    dataclass's, an item's of a tuple subclass; `class_info`'s `PYTHON_HASH`) while the judge does not need the hash
    to read the message (``needed``: the object is, or is in, a dict's key or a set's item): the judge asks for it
    when the test hashes the object (handles.Handle.__hash__), so that such code runs when it would in one process
    (red team, 2026-12-07: a ``__hash__`` that noted its first call told the answer it was judged). A string of a
    class of the student's (a ``StrEnum`` member) that hashes as its plain value, as in one process, comes as
    ``[that value]``, which the judge hashes itself: Python salts a string's hash in each process, so a key of that
    class would not find the judge's own string. ``stored``: the hash that the dict or set the object is a key of
    stored for it (codec.Codec.stored_hash), taken in place of hashing it again (red team, round 17)."""
    if python_hash and not needed:
        return False
    if stored is not None:
        hashed = stored
    else:
        try:
            hashed = hash(value)
        except MidMessage:  # Its __hash__ calls an object of the test: the judge asks for it when it needs it.
            return False
        except Exception:  # noqa: BLE001 - as above.
            return None
    if issubclass(type(value), str) and type(value) is not str:
        plain = str.__str__(value)
        if hash(plain) == hashed:
            return [plain]
    return hashed


class AgentPeer(Peer):
    """The kernel's side: does what the judge asks, with the student's namespace."""

    parity = 1
    asks_for_messages = True
    # sys.exit() in the student's code fails the test that called it; an interrupt stops serving.
    answered = (Exception, SystemExit, GeneratorExit)

    def __init__(self, connection: socket.socket, namespace: dict) -> None:
        self.namespace = namespace
        # Torch operations and Triton launches made under the judge's counts since the last message.
        self.counted = self.launched = 0
        # What the judge counts now (COUNT_TORCH_CALLS, COUNT_LAUNCHES: course.checks, course.kernels).
        self.counting = 0
        # The student's code may write a tensor through .data or a NumPy array, which its version never shows.
        compare_bytes()
        # One thread at a time talks to the judge: the student's threads may call the test's objects at once (a
        # worker that fetches the cache's K/V while the main thread reads model.device), as in one process. A
        # thread holds it from its request to the reply (serving the judge's requests meanwhile, as it does
        # alone), and the serving loop while it reads the judge's next request and sends a reply.
        self.lock = threading.RLock()
        self.letting_go: list = []  # What the judge let go in the message being read (`incoming`, `let_go`).
        # Whether the student's code made a class whose objects run code when freed (a __del__): the judge then has
        # every object it lets go of freed at once (remote.JudgePeer.free_now), since any may hold one of those. The
        # namespace (and the code its functions hold) is looked at when each test cell starts (`serve`), a class when
        # it first crosses in a test cell (`class_node`).
        self.finalizers = False
        # The collector is held off from the moment the student's code returns to the judge's request until the
        # reply is sent (`_serving`, `send`): a finalizer that only a collection runs (an object in a reference cycle)
        # would otherwise run at an allocation the student can count, between the return and the look for what the
        # code changed, and undo a change to the test's values before the judge saw it (red team, 2026-12-07:
        # 3.5's in-place write put back that way kept its "changes none of its arguments" points). Held off, it runs
        # after the reply, and what it changes crosses with the next message.
        self.holding_collector = False
        super().__init__(connection)

    def send(self, kind: str, seq: int, body: list, raw: bool = False) -> None:
        with self.lock:
            try:
                super().send(kind, seq, body, raw)
            finally:
                if self.holding_collector:
                    self.holding_collector = False
                    gc.enable()

    def receive(self) -> tuple[str, int, list]:
        with self.lock:
            kind, seq, values = super().receive()
            if kind != END:  # At the end of a test, once its objects are no longer lent (`serve`).
                self.let_go()
            return kind, seq, values

    def request(self, op: str, *args):
        with self.lock:
            return super().request(op, *args)

    def reset(self) -> None:
        super().reset()
        self.proxies: dict[int, object] = {}  # The judge's objects, by the judge's oid.
        self.proxy_oids: dict[int, int] = {}  # id(proxy) -> the judge's oid.
        self.classes_sent: set[int] = set()
        self.class_flags: dict[int, int] = {}  # By the class's id (exported, so alive): no metaclass __hash__.
        self.hashes: dict[int, object] = {}
        self.watched: dict[str, object] = {}  # Global names the judge resolved, and their values.
        self.asked = None  # The object whose __dict__ the judge asked for: it comes with it, whatever its size.
        self.replay_failure: BaseException | None = None  # What a replayed step raised (`replay`).

    def serve(self, epoch: str, source: str | None = None) -> None:
        """Serve the judge's requests for the test cell ``epoch`` until the judge ends it; ``source``: the test cell's,
        which IPython's history then holds in place of the line that called this (`_in_history`)."""
        if type(source) is str:
            _in_history(source, self.namespace)
        self.epoch = epoch
        self.reset()
        self.finalizers = self.finalizers or _runs_code_when_freed(self.namespace)
        try:
            self.send(READY, 0, [])
            while True:
                kind, seq, body = self.receive()
                if kind == END:
                    return
                expect(kind == REQ, f"an unexpected {kind!r} message")
                self.answer(seq, body)
        finally:
            self.epoch = None
            self.reset()
            self.let_go()

    # Objects.

    def encode_object(self, value, depth: int):
        oid = self.proxy_oids.get(id(value))
        if oid is not None and self.proxies.get(oid) is value:
            return [Tag.YOURS, oid]
        # Only classes that hold data cross as the judge's own; functions and modules, even of allowed modules, cross
        # as the kernel's objects (peer.kernel_may_name).
        node = global_node(value) if kernel_may_name(value) else None
        if node is not None:
            return node
        if issubclass(type(value), type):
            return self.class_node(value)
        oid, new = self.export(value)
        class_node = self.class_node(type(value))
        if new or (self.codec.keys and self.hashes.get(oid) is False):
            python_hash = bool(self.class_flags[id(type(value))] & PYTHON_HASH)
            # A key's hash of Python code is the one its dict or set stored: hashing it again would run that code
            # at a moment one process never does (red team, round 17: a Fraction subclass's properties told it).
            stored = self.codec.stored_hash(value) if python_hash and self.codec.keys else None
            self.hashes[oid] = object_hash(value, python_hash, needed=self.codec.keys > 0, stored=stored)
        flags = FUNCTION * (type(value) is types.FunctionType) | CALLABLE * callable(value)
        node = [Tag.OBJECT, oid, class_node, self.hashes.get(oid), flags]
        asked = value is self.asked
        if asked:
            self.asked = None
        found = self.plain_dict(value, asked) if depth <= 1 else None
        if found is not None:
            node.append(self.codec.encode_root(found, depth + 1))  # Saves the judge asking for it.
        return node

    def hash_runs_code(self, key: tuple, depth: int = 0) -> bool:
        """Whether hashing ``key`` (in nested tuples too) would hash an object whose hash may run Python code
        (`PYTHON_HASH`) and that the judge has no hash of yet. A frozenset's hash reads its items' stored hashes."""
        if set(map(id, map(type, key))) <= HASHED_WITHOUT_CODE:  # Most keys: numbers and strings.
            return False
        for item in key:
            kind = type(item)
            if kind is tuple:
                if depth >= self.limits.depth or self.hash_runs_code(item, depth + 1):
                    return True
            elif id(kind) not in HASHED_WITHOUT_CODE and id(kind) not in PAIR_TAGS:
                flags = self.class_flags.get(id(kind))
                if flags is None:
                    flags = self.class_flags[id(kind)] = class_info(kind)[3]
                if flags & PYTHON_HASH:
                    oid = self.export_ids.get(id(item))
                    known = self.hashes.get(oid) if oid is not None and self.exports.get(oid) is item else None
                    if type(known) is not int and type(known) is not list:
                        return True
        return False

    def error_object_node(self, error: BaseException) -> list:
        """An error whose message the judge asks for later (peer.Peer.exception_node), as an object of a class of the
        agent's own: crossing runs none of the student's code (no hash, no look at its class or its ``__dict__``)."""
        oid, new = self.export(error)
        if not new:  # The judge has it already, with its class and hash, from an earlier message.
            return self.codec.encode(error)
        return [Tag.OBJECT, oid, self.class_node(KernelError), None, 0]

    def plain_dict(self, value, any_size: bool = False) -> dict | None:
        """The ``__dict__`` of an object whose class reads attributes plainly, when it is small (or ``any_size``)."""
        if self.class_flags.get(id(type(value)), 0) & (HAS_DICT | CUSTOM_GET) != HAS_DICT:
            return None
        found = object.__getattribute__(value, "__dict__")
        return found if type(found) is dict and (any_size or len(found) <= EAGER_DICT_ITEMS) else None

    def class_node(self, cls: type) -> list:
        oid, _ = self.export(cls)
        if oid in self.classes_sent:
            return [Tag.CLASSREF, oid]
        self.classes_sent.add(oid)
        info = class_info(cls)
        self.class_flags[id(cls)] = info[3]
        if info[3] & FINALIZER and not self.finalizers:  # Its objects may be held by others that the test lets go.
            self.finalizers = _frees_with_code(cls)
        return [Tag.CLASS, oid, *info]

    def decode_object(self, node: list, depth: int):
        tag = node[0]
        found = self.decode_shared(node)
        if found is not NOT_SHARED:
            return found
        if tag == Tag.BOUND:
            expect(len(node) == 3, "a malformed method reference")
            return getattr(self.exported(node[1]), text(node[2]))
        expect(tag == Tag.OBJECT and len(node) == 7 and type(node[1]) is int and type(node[4]) is int
               and (node[6] is None or type(node[6]) is int), "a malformed object")
        methods, known_class = node[2], None
        expect(methods is None or (type(methods) is list and len(methods) <= CLASS_NAMES), "a malformed object")
        if node[5] is not None:
            expect(type(node[5]) is list and node[5] and node[5][0] == Tag.GLOBAL, "a malformed object")
            known_class = self.decode_shared(node[5])
            expect(isinstance(known_class, type), "an object whose class is not a class")
        proxy = self.proxies.get(node[1])
        if proxy is None:
            proxy = (_judge_function(self, node[1], node[3], depth) if node[4] & FUNCTION else
                     _proxy_class(frozenset(text(name, self.limits) for name in methods or ()), known_class,
                                  node[4] & ~FUNCTION, self.class_text(node[3]))(self))
            self.proxies[node[1]] = proxy
            self.proxy_oids[id(proxy)] = node[1]
            if node[6] is not None and not node[4] & FUNCTION:
                proxy._judge_seen[IDENTITY_HASH] = node[6]
        return proxy

    def class_text(self, described) -> tuple:
        """``(module, docstring, ((method, docstring, signature, qualified name)...), name, qualified name)`` of a
        lent object's class (remote.JudgePeer.encode_object); a method's docstring and signature may be None."""
        if described is None:
            return None, None, (), "JudgeObject", "JudgeObject"
        expect(type(described) is list and len(described) == 5 and type(described[2]) is list
               and len(described[2]) <= CLASS_NAMES and all(type(note) is list and len(note) == 4
                                                            for note in described[2]), "a malformed object")
        module, doc = (_text_or_none(part, self.limits) for part in described[:2])
        notes = tuple((text(name, self.limits), _text_or_none(method_doc, self.limits),
                       None if parameters is None else self.signature(parameters, 0), text(qualname, self.limits))
                      for name, method_doc, parameters, qualname in described[2])
        name, qualname = (text(part, self.limits) for part in described[3:])
        return module, doc, notes, name, qualname

    def signature(self, nodes, depth: int) -> inspect.Signature:
        """The signature that the judge described as ``[[parameter, kind, has a default, default]...]``
        (remote._parameters)."""
        expect(type(nodes) is list and len(nodes) <= CLASS_NAMES, "a malformed signature")
        parameters = []
        for node in nodes:
            expect(type(node) is list and len(node) == 4 and type(node[1]) is int and type(node[2]) is bool
                   and node[1] in _PARAMETER_KINDS, "a malformed parameter")
            default = self.codec.decode(node[3], depth + 2) if node[2] else inspect.Parameter.empty
            parameters.append(inspect.Parameter(text(node[0], self.limits), _PARAMETER_KINDS[node[1]],
                                                default=default))
        try:
            return inspect.Signature(parameters)
        except (TypeError, ValueError) as error:
            raise WireError(f"a malformed signature ({error})") from None

    def incoming(self, extra) -> None:
        expect(type(extra) is list and len(extra) == 5 and all(type(x) is list for x in (*extra[:3], extra[4]))
               and type(extra[3]) is int, "malformed sync")
        dropped, released, promoted, self.counting, demoted = extra
        # What the judge let go is freed once the message is read (`let_go`), not in the middle of reading it: a
        # student's ``__del__`` there may call an object of the test, which takes a message of its own.
        letting_go = self.letting_go
        for sid in dropped:
            letting_go.append(self.pairs.drop(sid))
        for oid in released:
            if oid not in self.classes_sent:
                letting_go.append(self.release(oid))
        for sid in promoted:  # Lazy pairs that the test can reach now.
            pair = self.pairs.get(sid)
            if pair.lazy:
                self.pairs.promote(pair)
        for sid in demoted:  # Eager pairs that the test has not read for a while (remote.JudgePeer.demote_unread).
            self.pairs.demote(self.pairs.get(sid))

    def outgoing(self, dropped: list[int]) -> list:
        rebound = [name for name, value in self.watched.items() if self.namespace.get(name, _MISSING) is not value]
        for name in rebound:
            del self.watched[name]
        counted, launched, self.counted, self.launched = self.counted, self.launched, 0, 0
        return [rebound, counted, launched, int(self.finalizers)]

    # Requests.

    def handle(self, op: str, args: list):
        if not self.counting:
            return self._serving(op, args)
        # The judge counts what a function of its own that calls the student's code does here.
        calls = _counting_mode() if self.counting & COUNT_TORCH_CALLS and op != "count" else None
        launches = _LaunchCounter() if self.counting & COUNT_LAUNCHES and op != "launches" else None
        with calls or contextlib.nullcontext(), launches or contextlib.nullcontext():
            try:
                return self._serving(op, args)
            finally:
                self.counted += calls.calls if calls else 0
                self.launched += launches.calls if launches else 0

    def _serving(self, op: str, args: list):
        """`_handle`, with the collector held off from the moment the student's code returns (see ``__init__``)."""
        try:
            return self._handle(op, args)
        finally:
            if gc.isenabled():
                gc.disable()
                self.holding_collector = True

    def _handle(self, op: str, args: list):
        if op == "op":
            return OPS[text(args[0])](*args[1:])
        if op == "getattr":
            return getattr(args[0], text(args[1]))
        if op == "setattr":
            return setattr(args[0], text(args[1]), args[2])
        if op == "delattr":
            return delattr(args[0], text(args[1]))
        if op == "sync":  # What the judge let go was freed when its message was read: nothing more to do.
            return None
        if op == "dict":
            self.asked = args[0]  # It crosses back with its __dict__, new or what changed in it; small
            return args[0] if len(args) == 1 else tuple(args)  # ones of the others too (encode_object).
        if op == "call":
            return args[0](*args[1], **keywords(args[2]))
        if op == "method":
            return getattr(args[0], text(args[1]))(*args[2], **keywords(args[3]))
        if op == "global":
            return self.lookup(text(args[0]))
        if op == "new":
            obj = object.__new__(args[0])
            self.asked = obj  # It crosses with its (empty) __dict__ (encode_object).
            return obj
        if op == "subclass":
            name, bases, namespace = text(args[0]), args[1], args[2]
            return types.new_class(name, bases, exec_body=lambda body: body.update(namespace))
        if op == "count":
            return count_torch_calls(args[0], args[1], keywords(args[2]))
        if op == "launches":
            return count_launches(args[0], args[1], keywords(args[2]))
        if op == "memory":
            from course.kernels import watch_memory

            result, use = watch_memory(args[0], *args[1], **keywords(args[2]))
            return result, use
        if op == "replay":
            return self.replay(args[0], args[1])
        if op == "replay_error":
            failure, self.replay_failure = self.replay_failure, None
            expect(failure is not None, "no replayed step failed")
            try:
                raise failure
            finally:  # Its traceback holds this frame: no cycle keeps what it holds alive (Peer.answer).
                failure = None
        raise WireError(f"an unknown request {op!r}")

    def replay(self, target, steps) -> list:
        """course.checks.replay's steps on ``target``, here: ``[whether one raised, result...]`` (what it raised waits
        for the judge's ``replay_error``); results sit one level down, objects with few attributes bring them."""
        from course.checks import apply_steps

        expect(type(steps) is tuple, "replay's steps are not a tuple")  # A tuple: no pair need hold them.
        # What a step raised reaches the judge in its place (`replay_error`). No local name holds it: its traceback
        # holds apply_steps's frame, and that frame this one, whose names would keep the error and its frames alive
        # past the reply (Peer.answer).
        results, self.replay_failure = apply_steps(target, steps, self.answered)
        self.send_by_value = True  # The results are copies (course.checks._copied): no pair need hold them.
        return [self.replay_failure is not None, *results]

    def lookup(self, name: str):
        value = self.namespace.get(name, _MISSING)
        if value is _MISSING:
            return False, None
        self.watched[name] = value
        return True, value

    def lends(self, proxy) -> bool:
        """Whether ``proxy`` stands for an object that the judge lends now (its test cell has not ended)."""
        return self.epoch is not None and self.proxies.get(self.proxy_oids.get(id(proxy))) is proxy

    def call_judge(self, proxy, op: str, *args):
        if not self.lends(proxy):
            raise RuntimeError("this object belongs to a test that has ended; it can no longer be used")
        with self.lock:
            if self.in_message:
                # The student's code runs inside this side's own message (a ``__hash__`` of an object that crosses
                # for the first time, a ``__hash__`` or ``__eq__`` of a key being decoded): a message of its own
                # now would break the one being made. `object_hash` then leaves the hash for the judge to ask.
                raise MidMessage("an object of the test cannot be used while the kernel makes or reads a message")
            return self.request(op, proxy, *args)

    def let_go(self) -> None:
        """Free what the judge let go in the message just read (`incoming`): a ``__del__`` may run now."""
        letting_go, self.letting_go = self.letting_go, []
        letting_go.clear()


def _judge_function(peer: AgentPeer, oid: int, described=None, depth: int = 0):
    """A real function (so that it binds as a method) that calls the judge's function ``oid``; with the name,
    qualified name, parameters, defaults, module and docstring the judge ``described``
    (remote.JudgePeer._function_node)."""

    def forward(args, kwargs):
        return peer.call_judge(function, "call", args, tuple(kwargs.items()))  # The stand-in made below.

    if described is None:
        function = _function_taking(None, "from_the_test", forward)
        return function
    expect(type(described) is list and len(described) == 5, "a malformed function")
    function = _function_taking(peer.signature(described[2], depth), text(described[0], peer.limits), forward)
    function.__qualname__ = text(described[1], peer.limits)
    function.__module__, function.__doc__ = (_text_or_none(part, peer.limits) for part in described[3:])
    return function


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _function_taking(signature: inspect.Signature | None, name: str, forward):
    """A function named ``name`` whose own code takes the parameters of ``signature`` (with its defaults) and
    returns ``forward(positional arguments, keyword arguments)``: so that what a student's code reads of a
    function or method of the test (``inspect.signature``, ``__code__.co_argcount``, ``__code__.co_varnames``,
    ``__defaults__``, ``__kwdefaults__``) is what it reads in one process. ``(*args, **kwargs)`` without one.

    Its source is made from the parameters' names, which `inspect.Parameter` has checked are identifiers and
    not keywords; the defaults are the values themselves, never their text."""
    parameters = list(signature.parameters.values()) if signature is not None else [
        inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL),
        inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)]
    taken = {parameter.name for parameter in parameters}
    forward_name, defaults_name = (_unused(base, taken) for base in ("forward_", "defaults_"))
    listed, positional, keywords, defaults, previous = [], [], [], [], None
    named_defaults, keyword_defaults = [], {}  # For `_leaving_out_defaults`.
    for parameter in parameters:
        kind = parameter.kind
        if previous is inspect.Parameter.POSITIONAL_ONLY and kind is not previous:
            listed.append("/")
        if kind is inspect.Parameter.KEYWORD_ONLY and previous in (None, *_POSITIONAL):
            listed.append("*")
        if kind is inspect.Parameter.VAR_POSITIONAL:
            listed.append(f"*{parameter.name}")
            positional.append(f"*{parameter.name}")
        elif kind is inspect.Parameter.VAR_KEYWORD:
            listed.append(f"**{parameter.name}")
            keywords.append(f"**{parameter.name}")
        else:
            item = parameter.name
            if parameter.default is not inspect.Parameter.empty:
                item += f"={defaults_name}[{len(defaults)}]"
                defaults.append(parameter.default)
            listed.append(item)
            if kind is inspect.Parameter.KEYWORD_ONLY:
                keywords.append(f"{parameter.name!r}: {parameter.name}")
                if parameter.default is not inspect.Parameter.empty:
                    keyword_defaults[parameter.name] = parameter.default
            else:
                positional.append(parameter.name)
                named_defaults.append(parameter.default)
        previous = kind
    if previous is inspect.Parameter.POSITIONAL_ONLY:
        listed.append("/")
    code_name = name if name.isidentifier() and not keyword.iskeyword(name) else "from_the_test"
    arguments = "".join(f"{item}, " for item in positional)
    source = (f"def {code_name}({', '.join(listed)}):\n"
              f"    return {forward_name}(({arguments}), {{{', '.join(keywords)}}})\n")
    namespace = {forward_name: _leaving_out_defaults(forward, named_defaults, keyword_defaults),
                 defaults_name: tuple(defaults)}
    exec(compile(source, f"<the test's {code_name}>", "exec"), namespace)  # Safe: see the docstring.
    function = namespace[code_name]
    function.__name__ = function.__qualname__ = name
    return function


def _leaving_out_defaults(forward, named_defaults: list, keyword_defaults: dict):
    """``forward`` without the arguments that are still the stand-in's own defaults, which the caller left out: the
    test's function then uses its own defaults, not the copies the kernel holds (remote._parameters). A default
    before a positional argument that the caller gave, or before extra positional ones, goes as its copy."""
    empty = inspect.Parameter.empty

    def forward_given(args: tuple, kwargs: dict):
        count = len(args)
        if count == len(named_defaults):  # No extra positional arguments: the trailing defaults can be left out.
            while count and named_defaults[count - 1] is not empty and args[count - 1] is named_defaults[count - 1]:
                count -= 1
            args = args[:count]
        for name, default in keyword_defaults.items():
            if kwargs.get(name, empty) is default:
                del kwargs[name]
        return forward(args, kwargs)

    return forward_given


def _unused(base: str, taken: set[str]) -> str:
    while base in taken:
        base += "_"
    return base


def _text_or_none(value, limits):
    """A module's name or a docstring the judge sent (remote._plain_text): a string within the limits, or None."""
    return None if value is None else text(value, limits)


_PARAMETER_KINDS = {int(kind): kind for kind in (
    inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.VAR_POSITIONAL,
    inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)}


def _judge_method(name: str, signature: inspect.Signature | None = None):
    """A method of a test object's class, as a function of its proxy's class: calling it is one request. With the
    test's method's ``signature`` (``self`` first), it takes the same parameters (`_function_taking`)."""

    def forward(args, kwargs):
        if not args:
            raise TypeError(f"{name}() needs the object it is called on")
        return args[0]._judge_peer.call_judge(args[0], "method", name, args[1:], tuple(kwargs.items()))

    return _function_taking(signature, name, forward)


class JudgeObject:
    """An object of the test, lent to the student's code: it can be called, and its public
    attributes read; nothing else of the judge is reachable through it. The methods of its class
    (the judge says which) are functions of the proxy's class (`_proxy_class`), called in one request
    each, so that ``type(policy).select_victim(policy, ...)`` works as it does in one process.

    Once its test cell has ended, the judge no longer lends it: a student's code that kept it (a global, a class
    attribute) can still compare it, hash it and print it as in one process (by identity, with the hash and text
    the judge gave while it lent it), but not call it or read it."""

    __slots__ = ("_judge_peer", "_judge_seen", "__weakref__")

    def __init__(self, peer: AgentPeer) -> None:
        object.__setattr__(self, "_judge_peer", peer)
        object.__setattr__(self, "_judge_seen", {})  # The hash, repr and str the judge answered, by name.

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(f"an object of the test has no attribute {name!r} here")
        return self._judge_peer.call_judge(self, "getattr", name)

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError("the student's code cannot change an object of the test")

    @property
    def __dict__(self) -> dict:
        """``vars(policy)``: a copy of the test object's public attributes (its private ones are never lent); none
        once its test has ended (``dir()`` of such an object lists its class's names)."""
        if not self._judge_peer.lends(self):
            raise AttributeError("an object of a test that has ended has no __dict__ here")
        return self._judge_peer.call_judge(self, "op", "vars")

    # A copy is made by the judge, of its own object, and lent as another object of the test: in one process
    # ``copy.copy(policy)`` or ``copy.deepcopy(model)`` copies the test's object too. (A deep copy of several objects
    # shares the copies of what they share only within each lent object.)
    def __copy__(self):
        return self._judge_peer.call_judge(self, "op", "copy")

    def __deepcopy__(self, memo):
        return self._judge_peer.call_judge(self, "op", "deepcopy")


def _call(self, *args, **kwargs):
    return self._judge_peer.call_judge(self, "call", args, tuple(kwargs.items()))


# What an object of the test answers once its test cell has ended, as an object of a class that defines none of
# these would in one process (a hash, repr or str the judge gave while it lent the object comes first).
_RETIRED = {"eq": object.__eq__, "ne": object.__ne__, "hash": object.__hash__, "repr": object.__repr__,
            "str": object.__str__, "format": object.__format__, "dir": object.__dir__,
            **{name: lambda self, other: NotImplemented for name in ("lt", "le", "gt", "ge")}}
_REMEMBERED = ("hash", "repr", "str")
IDENTITY_HASH = "identity hash"  # The hash the judge sent with an object whose hash is its identity's (`_forward`).


def _forward(name: str):
    retired = _RETIRED.get(name)
    remembered = name in _REMEMBERED

    def method(self, *args):
        peer = self._judge_peer
        if name == "hash" and IDENTITY_HASH in self._judge_seen:  # It never changes: no request, even mid-message.
            return self._judge_seen[IDENTITY_HASH]
        if retired is not None and not peer.lends(self):
            seen = self._judge_seen
            return seen[name] if name in seen else retired(self, *args)
        found = peer.call_judge(self, "op", name, *args)
        if remembered:
            self._judge_seen[name] = found
        return found

    method.__name__ = f"__{name}__"
    return method


for _name in ("repr", "str", "hash", "eq", "ne", "lt", "le", "gt", "ge", "format", "dir"):  # What every object has.
    setattr(JudgeObject, f"__{_name}__", _forward(_name))

_PROXY_CLASSES: dict[tuple[frozenset, type | None, int, tuple], type] = {}


def protocol_flags(cls: type) -> int:
    """The `PROTOCOL_FLAGS` of a class of the judge's, for its lent objects."""
    return sum(flag for name, flag in PROTOCOL_FLAGS.items() if getattr(cls, f"__{name}__", None) is not None)


def _proxy_class(methods: frozenset[str], known_class: type | None = None, flags: int = 0,
                 described: tuple = (None, None, (), "JudgeObject", "JudgeObject")) -> type:
    """The class of a test object's proxy whose class has the public ``methods``, the special methods of ``flags``
    (`PROTOCOL_FLAGS`; ``__call__`` with `CALLABLE`) and, where the kernel has it too, the class ``known_class``: one
    class per such kind.

    With ``known_class`` (a class of the course's package or of torch, the nearest one the test object's class
    derives from), the proxy's ``__class__`` is that class, which ``isinstance`` reads when the proxy's own type is
    not a subclass: ``isinstance(model, torch.nn.Module)`` holds as in one process. Its type stays the proxy's,
    whose every use is still a request. It has the name, qualified name, module and docstring of the test object's
    class, and its methods the names, qualified names, parameters and docstrings of the class's methods
    (``described``: `AgentPeer.class_text`)."""
    key = (methods, known_class, flags, described)
    try:
        found = _PROXY_CLASSES.get(key)
    except TypeError:  # A method's default that is a list or a dict: a class of the proxy's own.
        found, key = None, None
    if found is None:
        module, doc, method_notes, name, qualname = described
        notes = {note[0]: note[1:] for note in method_notes}
        body = {}
        for method in methods:
            if method.isidentifier() and not method.startswith("_"):
                method_doc, signature, method_qualname = notes.get(method, (None, None, None))
                body[method] = function = _judge_method(method, signature)
                function.__doc__ = method_doc
                function.__qualname__ = method_qualname or f"{qualname}.{method}"
        body.update({f"__{op}__": _forward(op) for op, flag in PROTOCOL_FLAGS.items() if flags & flag})
        if flags & CALLABLE:
            body["__call__"] = _call
        if known_class is not None:
            body["__class__"] = property(lambda self: known_class)
        found = type(name, (JudgeObject,), {
            "__slots__": (), "__module__": module if module is not None else __name__, "__doc__": doc,
            "__qualname__": qualname, **body})
        if key is not None:
            _PROXY_CLASSES[key] = found
    return found


def connect(path: str, namespace: dict) -> AgentPeer:
    """Connect to the judge's socket at ``path``; the judge hears that this kernel is ready."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    peer = AgentPeer(connection, namespace)
    peer.send(HELLO, 0, [True, ""])
    return peer
