"""A kernel that attacks the judge's protocol gets failed test cells, never a verdict, a crash or a hang.

Each class of attack is tried in several variants against the judge's side (remote.JudgePeer and
runner.run_test) by a kernel that writes its own messages on the socket: malformed messages,
messages over the size, depth or item limits, object and shared ids the judge never issued, a
kernel that never serves or serves forever, and one whose every answer is forged. Each must fail
the test cell it happened in, within the cell's time limit, with a clear message, and leave the
judge able to judge the next kernel. A student's code that gets one of the test's objects can call
it and read its public attributes, and reach nothing else of the judge. End to end, with the
sandbox, tests/test_grading_isolation.py grades such attackers through the grading command.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path

import msgpack
import pytest
from judge_kernel import Kernel

from grading.judge import server
from grading.judge.peer import from_kernel
from grading.judge.remote import JudgePeer
from grading.judge.runner import run_test
from grading.judge.wire import Framing, Limits, Tag, WireError

SMALL = Limits(message_bytes=1 << 16, depth=16, items=2000)
TEST = "from course.checks import check_type\ncheck_type(victim(), str, 'victim()')"


class ForgingKernel:
    """A kernel that says hello, then runs ``script(kernel)`` instead of the agent."""

    def __init__(self, script) -> None:
        judge_end, self.connection = socket.socketpair()
        self.framing = Framing()
        self.thread = threading.Thread(target=self._run, args=(script,), daemon=True)
        self.judge = JudgePeer(judge_end, limits=SMALL)
        self.thread.start()
        assert self.judge.hello() == (True, "")

    def _run(self, script) -> None:
        try:
            self.send(["hello", None, 0, [[], [[], 0, 0, 0]], [True, ""]])
            script(self)
        except OSError:
            pass

    def send(self, tree) -> None:
        self.connection.sendall(msgpack.packb(tree, use_bin_type=True))

    def raw(self, data: bytes) -> None:
        self.connection.sendall(data)

    def receive(self):
        while (tree := self.framing.next()) is None:
            chunk = self.connection.recv(1 << 16)
            if not chunk:
                raise OSError("closed")
            self.framing.feed(chunk)
        return tree

    def ready_then_answer(self, answer) -> None:
        """Serve test "1": ready, then reply to the first request with ``answer(seq)`` (a whole message)."""
        self.send(["ready", "1", 0, [[], [[], 0, 0, 0]], []])
        request = self.receive()
        reply = answer(request[2])
        if isinstance(reply, bytes):
            self.raw(reply)
        else:
            self.send(reply)
        time.sleep(3)

    def verdict(self, timeout: float = 2.0, test: str = TEST):
        started = time.monotonic()
        result = run_test(self.judge, "1", "test_attack", test, {}, timeout)
        return result, time.monotonic() - started


def _ok(value):
    return lambda seq: ["ok", "1", seq, [[], [[], 0, 0, 0]], [value]]


def _lookup_then(answer):
    """The first request is the lookup of ``victim``: answer it with a function, then ``answer`` the call."""

    def script(kernel: ForgingKernel) -> None:
        kernel.send(["ready", "1", 0, [[], [[], 0, 0, 0]], []])
        lookup = kernel.receive()
        function = [Tag.OBJECT, 1, [Tag.CLASS, 3, "function", "function", "builtins", 0, [], []], 1, 3]
        kernel.send(["ok", "1", lookup[2], [[], [[], 0, 0, 0]], [[Tag.TUPLE, True, function]]])
        call = kernel.receive()
        reply = answer(call[2])
        kernel.raw(reply) if isinstance(reply, bytes) else kernel.send(reply)
        time.sleep(3)

    return script


MALFORMED = {
    "a map": lambda seq: msgpack.packb({"kind": "ok"}),
    "an extension type": lambda seq: msgpack.packb(msgpack.ExtType(5, b"\x00")),
    "a list without its tag": _ok([["not a tag"]]),
    "an unknown tag": _ok([999, 1]),
    "not a message": lambda seq: msgpack.packb([1, 2, 3]),
    "a reply to another request": lambda seq: ["ok", "1", seq + 7, [[], [[], 0, 0, 0]], ["a"]],
    "garbage bytes": lambda seq: b"\xc1\xc1\xc1\xc1",
    "a copy of an array (never one)": _ok([Tag.NDARRAY, 0, ["<f4", [1], b"\x00" * 4]]),
    "a copy of a dict with a key and no value": _ok([Tag.DICT, 0, [1]]),
    "a copy of a set with an unhashable item": _ok([Tag.SET, 0, [[Tag.LIST, 0, []]]]),
    "a copy of a tensor whose bytes do not match its shape": _ok([Tag.TENSOR, 0, ["float32", [4], None, "cpu",
                                                                                  b"\x00" * 3]]),
}
def _colliding(k: int) -> list:
    """A big int node of k * (2**61 - 1), whose hash is 0 whatever k is."""
    value = k * ((1 << 61) - 1)
    return [Tag.BIGINT, value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)]


def _nest(depth: int):
    node = "bottom"
    for _ in range(depth):
        node = [Tag.TUPLE, node]
    return node


LIMITS = {
    "a message over the size limit": lambda seq: ["ok", "1", seq, [[], [[], 0, 0, 0]], ["x" * (1 << 17)]],
    "values nested too deep": _ok(_nest(40)),
    "too many values": _ok([Tag.TUPLE, *([[Tag.TUPLE]] * 3000)]),
    "a tensor whose bytes do not match its shape": _ok([Tag.TENSOR, 1, ["float32", [4], None, "cpu", b"\x00" * 3]]),
    "a tensor of an unknown dtype": _ok([Tag.TENSOR, 1, ["os.system", [1], None, "cpu", b"\x00"]]),
    "a huge shape": _ok([Tag.TENSOR, 1, ["float32", [1 << 40, 1 << 40], None, "cpu", b""]]),
    "a big int past the limit": _ok([Tag.BIGINT, b"\x01" * 10_000]),
    # Keys that all hash alike (k * (2**61 - 1) hashes to 0) take time that grows with the square of their number to
    # build into a set or dict: a message of a million of them would hold the judge for hours.
    "a set of keys that all hash alike": _ok([Tag.SET, 1, [_colliding(k) for k in range(1, 200)]]),
    "a frozenset of keys that all hash alike": _ok([Tag.FROZENSET, *(_colliding(k) for k in range(1, 200))]),
    "a dict of keys that all hash alike": _ok([Tag.DICT, 1, [x for k in range(1, 200) for x in (_colliding(k), 0)]]),
}
NEVER_ISSUED = {
    "an object of the judge's it never lent": _ok([Tag.YOURS, 4242]),
    "a shared id never issued": _ok([Tag.REF, 77]),
    "an update of a pair never issued": lambda seq: ["ok", "1", seq, [[[99, []]], [[], 0, 0, 0]], [None]],
    "a new pair with the judge's kind of id": _ok([Tag.LIST, 2, []]),
    "a class never sent": _ok([Tag.OBJECT, 5, [Tag.CLASSREF, 41], None, 0]),
    "a module the judge does not allow": _ok([Tag.MODULE, "os"]),
    "a function of a module the judge does not allow": _ok([Tag.GLOBAL, "subprocess", "run"]),
    # The judge takes only classes that hold data from the kernel (grading/judge/peer.py, kernel_may_name): never
    # one of its own functions or modules that a test could then call with the kernel's arguments.
    "the judge's own exec": _ok([Tag.GLOBAL, "builtins", "exec"]),
    "the judge's own setattr": _ok([Tag.GLOBAL, "builtins", "setattr"]),
    "a method of the judge's builtins' loader": _ok([Tag.GLOBAL, "builtins", "__loader__.load_module"]),
    "the judge's module of checks": _ok([Tag.MODULE, "course.checks"]),
    "the judge's builtins module": _ok([Tag.MODULE, "builtins"]),
    "a class that opens files": _ok([Tag.GLOBAL, "numpy", "memmap"]),
    "a class that makes functions": _ok([Tag.GLOBAL, "types", "FunctionType"]),
    "a function of the course": _ok([Tag.GLOBAL, "course.checks", "assert_plain_equal"]),
    "a view outside its tensor": lambda seq: ["ok", "1", seq, [[], [[], 0, 0, 0]],
                                              [[Tag.VIEW, 9, [Tag.REF, 1], [5], [1], 0]]],
}


@pytest.mark.parametrize("answer", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_messages_fail_the_test_cell(answer):
    verdict, seconds = ForgingKernel(_lookup_then(answer)).verdict()
    assert not verdict.passed and verdict.message.startswith("KernelError"), verdict
    assert seconds < 2.5


@pytest.mark.parametrize("answer", LIMITS.values(), ids=LIMITS.keys())
def test_messages_past_the_limits_fail_the_test_cell(answer):
    verdict, seconds = ForgingKernel(_lookup_then(answer)).verdict()
    assert not verdict.passed and verdict.message.startswith("KernelError"), verdict
    assert seconds < 2.5


@pytest.mark.parametrize("answer", NEVER_ISSUED.values(), ids=NEVER_ISSUED.keys())
def test_ids_the_judge_never_issued_fail_the_test_cell(answer):
    verdict, _ = ForgingKernel(_lookup_then(answer)).verdict()
    assert not verdict.passed and verdict.message.startswith("KernelError"), verdict


def _never_ready(kernel):
    time.sleep(5)


def _stale_forever(kernel):
    for _ in range(2000):
        kernel.send(["ready", "an earlier test", 0, [[], [[], 0, 0, 0]], []])
        time.sleep(0.002)


def _ready_then_silent(kernel):
    kernel.send(["ready", "1", 0, [[], [[], 0, 0, 0]], []])
    kernel.receive()
    time.sleep(5)


def _requests_forever(kernel):
    """Never replies: asks the judge something it refuses (to call None) again and again."""
    kernel.send(["ready", "1", 0, [[], [[], 0, 0, 0]], []])
    kernel.receive()
    for seq in range(1, 100_000):
        kernel.send(["req", "1", seq, [[], [[], 0, 0, 0]], ["call", None, [Tag.TUPLE], [Tag.TUPLE]]])
        try:
            kernel.receive()
        except OSError:
            return


SILENT = {"never ready": _never_ready, "stale messages forever": _stale_forever,
          "ready, then silent": _ready_then_silent, "requests forever": _requests_forever}


@pytest.mark.parametrize("script", SILENT.values(), ids=SILENT.keys())
def test_a_kernel_that_never_serves_or_serves_forever_times_out(script):
    verdict, seconds = ForgingKernel(script).verdict(timeout=1.5)
    assert not verdict.passed and "TimeoutError" in verdict.message, verdict
    assert seconds < 3


@pytest.mark.parametrize("value", ["a", [Tag.TUPLE], None, 0], ids=["str", "tuple", "None", "int"])
def test_forged_answers_are_only_values(value):
    """A lying kernel that answers 'a' to everything passes only the checks that 'a' passes."""
    verdict, _ = ForgingKernel(_lookup_then(_ok(value))).verdict(test=TEST + "\nassert victim() == 'b'")
    assert not verdict.passed, verdict


def test_the_judge_goes_on_judging_after_an_attack():
    ForgingKernel(_lookup_then(MALFORMED["garbage bytes"])).verdict()
    honest = Kernel("def victim():\n    return 'b'")
    try:
        honest.passes(TEST + "\nassert victim() == 'b'")
    finally:
        honest.close()


def test_a_callback_lends_calls_and_public_attributes_only():
    """The student's code gets one of the test's objects: every way past its public surface shows nothing
    of the judge (what it can reach is the kernel's own proxy, never the test's class, globals or modules)."""
    honest = Kernel('''
        def probe(thing):
            attempts = {
                "underscore attribute": lambda: thing._secret,
                "class": lambda: thing.__class__.__name__,
                "dict": lambda: thing.__dict__,
                "globals of a method": lambda: sorted(thing.method.__globals__),
                "a function's closure": lambda: thing.method.__closure__[0].cell_contents,
                "module of the test": lambda: thing.module,
                "setattr": lambda: setattr(thing, "value", 0),
                "frame": lambda: thing.frame,
                "call a method by its dunder": lambda: thing.__getattribute__("_secret"),
                "a private method in one request": lambda: repr(object.__getattribute__(
                    thing, "_judge_peer").call_judge(thing, "method", "__reduce_ex__", (2,), ())),
            }
            seen = {}
            for name, attempt in attempts.items():
                try:
                    seen[name] = repr(attempt())
                except Exception as error:
                    seen[name] = "refused: " + type(error).__name__
            return seen, thing.value, thing.method(2)
    ''')
    try:
        honest.passes('''
            import os, sys
            class Thing:
                value = 5
                _secret = "hidden"
                module = os
                frame = sys._getframe()
                def method(self, x):
                    return x * self.value
            seen, value, doubled = probe(Thing())
            # The proxy's class has the name of the test's class, as the object's class has in one process.
            assert seen.pop("class") == repr("Thing"), seen
            leaks = {name: what for name, what in seen.items()
                     if any(word in what for word in ("hidden", "Thing", "os", "frame", "_check"))}
            assert leaks == {}, leaks
            assert seen["setattr"].startswith("refused") and (value, doubled) == (5, 10)
        ''')
    finally:
        honest.close()


def test_a_test_s_names_do_not_say_which_test_cell_runs():
    """A test's class, its methods, a test's function and a test's subclass of a student's class, all defined in
    the test cell's check function, reach the student's code with their own names but without that function's:
    ``_check_task5_2_6_schedule.<locals>.Probe`` had told the student's code which test cell ran, so that a
    wrong answer could behave well only there (red team, 2026-12-07)."""
    kernel = Kernel('''
        class Base:
            def step(self):
                return "base"

        def names(thing, function, subclass):
            method = thing.method
            return [type(thing).__name__, type(thing).__qualname__, method.__qualname__, function.__name__,
                    function.__qualname__, subclass.__name__, subclass.__qualname__, subclass.step.__qualname__,
                    repr(type(thing)), repr(subclass)]
    ''')
    try:
        kernel.passes('''
            def _check_task9_9_names():
                class Thing:
                    def method(self):
                        return 1

                def helper():
                    return 2

                class Probe(Base):
                    def step(self):
                        return "probe"

                seen = names(Thing(), helper, Probe)
                assert [name for name in seen if "_check" in name or "<locals>" in name] == [], seen
                assert seen[:8] == ["Thing", "Thing", "Thing.method", "helper", "helper", "Probe", "Probe",
                                    "Probe.step"], seen

            _check_task9_9_names()
        ''')
    finally:
        kernel.close()


def test_what_the_kernel_passes_to_an_operation_on_a_test_s_object_never_reaches_its_private_state():
    """The kernel's agent is the student's: its code can ask the judge anything the protocol has. An operation on a
    test's object takes exactly the values it needs (a memo of the kernel's passed to ``copy.deepcopy`` came back
    holding the test object's private ``__dict__``, which the kernel then rewrote: 8.5.2 and 6.3 passed with wrong
    answers); a default of a test's function crosses as a copy, so that writing to it changes nothing of the
    test's (a stand-in whose default held the test's record); and a private module the judge has not imported is
    never imported for the kernel."""
    attacker = Kernel('''
        def attack(tier, record):
            peer = object.__getattribute__(tier, "_judge_peer")
            found = {"plain len": repr(peer.call_judge(tier, "op", "len"))}
            for op, extra in [("deepcopy", ({},)), ("copy", ({},)), ("len", (1,)), ("eq", (1, 2)), ("format", ())]:
                try:
                    found[op] = repr(peer.call_judge(tier, "op", op, *extra))
                except Exception as error:
                    found[op] = "refused: " + type(error).__name__
            record.__defaults__[0].append(("insert", 99))
            record()
            return found
    ''')
    try:
        attacker.passes('''
            class Tier:
                def __init__(self):
                    self._log = [("hit", 1)]
                def __len__(self):
                    return len(self._log)
            tier = Tier()
            log = []
            def record(into=log):
                into.append("called")
            found = attack(tier, record)
            assert found.pop("plain len") == "1", found
            assert all(outcome.startswith("refused") for outcome in found.values()), found
            assert tier._log == [("hit", 1)] and log == ["called"], (tier._log, log)
        ''')
    finally:
        attacker.close()
    sys.modules.pop("numpy._pyinstaller", None)
    for module, name in [("numpy._pyinstaller", "hook"), ("torch._dynamo", "OptimizedModule")]:
        if module not in sys.modules:  # What a forged GLOBAL node names: refused before anything is imported.
            with pytest.raises(WireError, match="private module"):
                from_kernel(module, name)
            assert module not in sys.modules


def test_a_test_that_calls_what_the_student_s_code_gave_it_runs_the_kernel_s_code_never_the_judge_s():
    """A test's code calls things the student's code handed it: a method of an object the student made
    (``cache.admission.admits(victim)``), or, in a function of the test lent to the kernel (a method of a test's
    subclass), a method of the ``self`` the student's code passed. Whatever the student names there, the
    judge's own ``exec``, ``setattr``, ``open``, a module or a class that makes functions, it runs in the kernel:
    only classes that hold data cross as the judge's own (int, OrderedDict, torch.Tensor), and they stay them."""
    honest = Kernel('''
        import builtins, collections, os, types
        import numpy, torch
        import course.checks
        NAMED = {"exec": builtins.exec, "eval": builtins.eval, "setattr": builtins.setattr, "open": builtins.open,
                 "import": builtins.__import__, "checks": course.checks, "builtins": builtins, "os": os,
                 "function": types.FunctionType, "code": types.CodeType, "memmap": numpy.memmap,
                 "load": torch.load, "check": course.checks.assert_plain_equal}
        DATA = {"int": int, "odict": collections.OrderedDict, "tensor": torch.Tensor, "int64": numpy.int64}
        class Cache:
            def __init__(self, name):
                self.admission = types.SimpleNamespace(admits=NAMED[name])
        class Base:
            def __init_subclass__(cls, **kwargs):
                super().__init_subclass__(**kwargs)
                for name, value in NAMED.items():  # A method of the test's subclass, with a self of the student's.
                    cls.check(types.SimpleNamespace(helper=value), name)
        def data_classes():
            return DATA
    ''')
    try:
        honest.passes('''
            import builtins, collections, os, types
            import numpy, torch
            import course.checks
            own = {"exec": builtins.exec, "eval": builtins.eval, "setattr": builtins.setattr, "open": builtins.open,
                   "import": builtins.__import__, "checks": course.checks, "builtins": builtins, "os": os,
                   "function": types.FunctionType, "code": types.CodeType, "memmap": numpy.memmap,
                   "load": torch.load, "check": course.checks.assert_plain_equal}
            taken = [name for name in own if Cache(name).admission.admits is own[name]]
            assert taken == [], f"a test's call of what the student's object holds would run the judge's own {taken}"
            helpers = []
            class Probe(Base):
                def check(self, name):
                    helpers.append((name, self.helper is own[name]))
            assert len(helpers) == len(own) and not any(is_own for _, is_own in helpers), helpers
            # What still crosses as the judge's own: classes that hold data.
            assert data_classes() == {"int": int, "odict": collections.OrderedDict, "tensor": torch.Tensor,
                                      "int64": numpy.int64}
            assert all(value is own_class for value, own_class in zip(data_classes().values(), (
                int, collections.OrderedDict, torch.Tensor, numpy.int64)))
        ''')
    finally:
        honest.close()


_PLANTER = """
    import functools
    import torch

    class Caller:
        def __call__(self, module, args, output):
            return torch.zeros_like(output)

        def hook(self, module, args, output):
            return torch.zeros_like(output)

    def zeroing(module, args, output):
        return torch.zeros_like(output)

    HOOKS = {"function": lambda: zeroing, "lambda": lambda: (lambda module, args, output: output * 0),
             "bound method": lambda: Caller().hook, "callable object": Caller,
             "partial": lambda: functools.partial(zeroing)}

    def plant(model, kind, how):
        hook = HOOKS[kind]()
        if how == "forward hook":
            model.register_forward_hook(hook)
        elif how == "stored by the test's object":
            model.register(hook)
        elif how == "put in the test's list":
            model.hooks.append(hook)  # The test's own list: it crosses back as an update of the list.
        else:  # "returned afterwards": handed to the test's object, then returned as if it were a result.
            model.register(hook)
            return hook
        return model(torch.ones(1, 2)).abs().sum().item()  # The hook runs here, while the student's code runs.

    def make_hook(kind):
        return HOOKS[kind]()

    KEPT = {}

    def hand_out(kind):
        KEPT[kind] = HOOKS[kind]()
        return KEPT[kind]

    def plant_kept(model, kind):
        model.register(KEPT[kind])  # The test got this very object before, as a result.
        return model(torch.ones(1, 2)).abs().sum().item()
"""

_TEST_MODEL = """
    import torch

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(2, 2)
            torch.nn.init.ones_(self.linear.weight)
            self._hooks = []

            self.hooks = []

        def register(self, hook):
            self._hooks.append(hook)

        def forward(self, x):
            y = self.linear(x)
            for hook in self._hooks + self.hooks:
                y = hook(self, (x,), y)
            return y

    model = Model()
"""


@pytest.mark.parametrize("how", ["forward hook", "stored by the test's object", "put in the test's list",
                                 "returned afterwards"])
@pytest.mark.parametrize("kind", ["function", "lambda", "bound method", "callable object", "partial"])
def test_what_the_student_s_code_plants_in_a_test_s_object_runs_only_while_that_code_runs(kernel, kind, how):
    """A student's code that gets one of the test's objects (a model) can hand it a callable (a forward hook, a
    callback it stores), which the test's object calls later, when the test computes its expected values with it
    (7.6.2's oracle ran the lent model after the call: a hook zeroed what it returned). Inside the student's
    call the callable runs; called from the test's own code afterwards (even after the student's code returned
    it), the test cell fails with the reason. A callable that the student's code only returns is the test's to
    call."""
    attacker = kernel(_PLANTER)
    planted = attacker.run(_TEST_MODEL + f"""
    inside = plant(model, {kind!r}, {how!r})
    if {how!r} != "returned afterwards":
        assert inside == 0.0, inside  # The hook ran during the student's call.
    expected = model(torch.ones(1, 2))  # The test's own computation: the hook must not run now.
    """)
    assert not planted.passed and "after that code had returned" in planted.message, planted.message
    attacker.passes(_TEST_MODEL + f"""
    hook = make_hook({kind!r})
    assert float(hook(model, (None,), torch.ones(2)).abs().sum()) == 0.0  # Returned to the test: it may call it.
    model.register(hook)
    assert float(model(torch.ones(1, 2)).abs().sum()) == 0.0  # The test's own object calls what the test gave it.
    """)


def test_a_kernel_that_reads_a_replay_s_steps_ahead_learns_only_what_the_steps_say():
    """course.checks.replay sends every step before the first answer. A student's code that looks ahead
    (here: at the frames of the kernel's replay) can forge an answer that a later step gives away; a test
    whose steps branch on the student's own answer gives nothing away, and the forger fails."""
    source = '''
        import sys
        class Cache:
            def __init__(self):
                self.blocks = set()
            def __contains__(self, block):
                frame = sys._getframe(1)
                while frame is not None and "steps" not in frame.f_locals:
                    frame = frame.f_back
                steps = frame.f_locals["steps"] if frame is not None else []
                # The step after this one: a hit means the test expects "resident".
                here = next(i for i, step in enumerate(steps) if step[0] == "in" and step[1] == (block,)
                            and i >= self.__dict__.setdefault("at", 0))
                self.at = here + 1
                following = steps[here + 1] if here + 1 < len(steps) else ("", ())
                return following[0] == "hit"
            def hit(self, block):
                pass
            def insert(self, block):
                self.blocks.add(block)
    '''
    trace = "[3, 1, 3, 2, 1, 3, 4, 1]"
    expected = "[False, False, True, False, True, True, False, True]"  # An unbounded cache: seen before.
    leaky = f'''
        from course.checks import assert_steps
        plan, seen = [], set()
        for i, block in enumerate({trace}):
            plan.append(([("in", (block,))], block in seen, f"in at step {{i}}"))
            plan.append(([("hit" if block in seen else "insert", (block,))], None, None))
            seen.add(block)
        assert_steps(Cache(), plan, reveal=False)
        assert {expected} == [block in set({trace}[:i]) for i, block in enumerate({trace})]
    '''
    branching = f'''
        from course.checks import assert_steps
        plan, seen = [], set()
        for i, block in enumerate({trace}):
            plan.append(([("in", (block,), ("hit", "insert"))], block in seen, f"in at step {{i}}"))
            seen.add(block)
        assert_steps(Cache(), plan, reveal=False)
    '''
    forger = Kernel(source)
    try:
        forger.passes(leaky)  # The lookahead forges every answer of a plan whose steps follow the oracle...
        verdict = forger.run(branching)  # ...and none of one whose steps follow the student's answers.
        assert not verdict.passed and "in at step 2" in verdict.message, verdict
    finally:
        forger.close()


def test_a_dead_judge_fails_the_student_s_remaining_cells_with_its_reason(tmp_path):
    """The grading process's side (grading/judge/client.py): a judge that ended owes failed verdicts."""
    from grading.judge.client import JudgeProcess

    judge = JudgeProcess.start()
    try:
        judge.open(str(tmp_path / "judge.sock"), {}, None)
        judge.process.kill()
        judge.process.wait()
        judge.start_test("e1", "test_task1_1", "pass", 5)
        verdict = judge.verdict("test_task1_1", 5)
        assert not verdict["passed"] and verdict["message"].startswith("JudgeError: the judge process ended"), verdict
        assert judge.failure
    finally:
        judge.stop()


def _data_held(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmData:")).split()[1]) * 1024


def test_judges_forked_by_the_spawner_serve_start_cheaply_and_end_like_started_ones(tmp_path):
    """grading/judge/spawner.py: a worker's judges are forks of one process that imported torch and the judge."""
    from grading.judge import client

    client.start_spawner()
    first = second = None
    try:
        first, second = client.JudgeProcess.start(), client.JudgeProcess.start()
        assert isinstance(first.process, client.ForkedJudge) and first.process.pid != second.process.pid
        for number, judge in enumerate((first, second)):
            judge.open(str(tmp_path / f"judge{number}.sock"), {}, None)
            judge.start_test("e1", "test_task1_1", "pass", 1)
            verdict = judge.verdict("test_task1_1", 30)  # No kernel connects: the judge says so when its time is up.
            assert verdict["message"].startswith("KernelError: the kernel never connected"), verdict
        # The fork has the imports already: serving a notebook costs it a fraction of what importing torch costs.
        assert first.cpu_seconds() < 0.5, first.cpu_seconds()
        # Whatever a kernel sends, its judge allocates at most JUDGE_MEMORY_BYTES more than the spawner held.
        limits = Path(f"/proc/{first.process.pid}/limits").read_text()
        data_limit = int(next(line for line in limits.splitlines() if line.startswith("Max data size")).split()[3])
        assert data_limit <= _data_held(first.process.pid) + server.JUDGE_MEMORY_BYTES, limits
        first.process.kill()
        first.process.wait(10)
        assert first.process.poll() is not None and second.process.poll() is None
        first.start_test("e2", "test_task1_1", "pass", 5)
        assert first.verdict("test_task1_1", 5)["message"].startswith("JudgeError: the judge process ended")
        # Without a spawner (it ended), a judge is started as a process of its own.
        client._SPAWNER.process.kill()
        client._SPAWNER.process.wait()
        third = client.JudgeProcess.start()
        assert not isinstance(third.process, client.ForkedJudge)
        third.stop()
    finally:
        for judge in (first, second):
            if judge is not None:
                judge.stop()
        spawner = client._SPAWNER
        client.stop_spawner()
    assert spawner.process.poll() is not None


@pytest.mark.parametrize("kind", ["function", "lambda", "bound method", "callable object", "partial"])
def test_a_callable_the_test_already_holds_is_held_back_once_the_student_s_code_plants_it(kernel, kind):
    """The student's code first returns a callable (the test may call it), then hands that same object to one of
    the test's objects: from then on it runs only while the student's code runs, as one planted at once does."""
    attacker = kernel(_PLANTER)
    planted = attacker.run(_TEST_MODEL + f"""
    first = hand_out({kind!r})  # The test holds it now, as a result of the student's code.
    inside = plant_kept(model, {kind!r})
    assert inside == 0.0, inside  # The hook ran during the student's call.
    expected = model(torch.ones(1, 2))  # The test's own computation: the hook must not run now.
    """)
    assert not planted.passed and "after that code had returned" in planted.message, planted.message
