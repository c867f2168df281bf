"""The judge asks the kernel less often, and what the test sees does not change.

Two ways a test used to cost one request per object, each checked here for what it must keep:

- writing a container, a tensor, a device or a student's object into an attribute of a student's object
  whose class reads and writes attributes plainly: the judge writes it into its copy of the object's
  ``__dict__``, which reaches the kernel with the next message (handles.Handle.__setattr__). A property, a
  class that hooks attribute writes, and ``__class__`` are still set in the kernel, and their errors
  still raise where the test wrote;
- reading the attributes of many objects after the kernel ran: the request for one object's ``__dict__``
  brings its stale siblings' too (remote.JudgePeer.stale_siblings).
"""

from __future__ import annotations

import pytest

from grading.judge import remote

KERNEL = '''
    import torch
    class Entry:
        def __init__(self, key):
            self.key, self.hits = key, 0
    class Big:
        def __init__(self):
            for index in range(40):  # More items than come with the object by themselves.
                setattr(self, f"item{index}", index)
    class Cache:
        def __init__(self, size):
            self.entries = {key: Entry(key) for key in range(size)}
            self.bigs = [Big() for _ in range(3)]
        def touch_all(self):
            for entry in self.entries.values():
                entry.hits += 1
            for big in self.bigs:
                big.item7 += 1
        def total(self):
            return sum(len(entry.log) + int(entry.weights.sum()) for entry in self.entries.values())
        def owners(self):
            return [entry.owner.key for entry in self.entries.values()]
    def size_of_log(entry):
        return len(entry.log)
    class Guarded:
        def __setattr__(self, name, value):
            if name == "forbidden":
                raise ValueError("no forbidden attribute here")
            object.__setattr__(self, name, value)
    class WithProperty:
        @property
        def size(self):
            return 3
    def read(obj, name):
        return getattr(obj, name)
    def class_name(obj):
        return type(obj).__name__
'''


def test_writing_containers_tensors_and_objects_into_a_plain_object_costs_no_request(kernel):
    k = kernel(KERNEL)
    k.passes('''
        cache = Cache(50)
        entries = list(cache.entries.values())
        logs = []
        for entry in entries:
            entry.log = [entry.key]
            entry.weights = torch.ones(2, dtype=torch.int64)
            entry.device = torch.device("cpu")
            entry.owner = entries[0]
            logs.append(entry.log)
        assert cache.total() == sum(1 + 2 for _ in entries)
        logs[3].append("more")  # The test still holds the list it wrote: its changes cross too.
        entries[4].weights.add_(1)  # And the tensor's.
        assert cache.total() == 150 + 1 + 2
        assert cache.owners() == [0] * 50
        assert read(entries[3], "log") == [3, "more"] and read(entries[5], "device") == torch.device("cpu")
        fresh, held = Entry(7), [1]  # An object whose __dict__ only came with it (a lazy one) ...
        fresh.log = held
        assert size_of_log(fresh) == 1
        held.append(2)  # ... still passes on the test's later changes to what it holds.
        assert size_of_log(fresh) == 2
    ''')
    # 50 objects, four writes each: a request apiece would be 200 on their own.
    assert k.judge.crossings < 40, k.judge.crossings


def test_writes_the_kernel_must_do_still_go_there_and_fail_where_the_test_wrote(kernel):
    k = kernel(KERNEL)
    k.passes('''
        guarded, fixed = Guarded(), WithProperty()
        guarded.items = [1, 2]
        assert read(guarded, "items") == [1, 2]
        try:
            guarded.forbidden = [1]
        except ValueError as error:
            assert "no forbidden attribute" in str(error)
        else:
            raise AssertionError("the class's __setattr__ did not run")
        try:
            fixed.size = [4]
        except AttributeError:
            pass
        else:
            raise AssertionError("a property without a setter took a value")
        entry = Entry(1)
        entry.__class__ = Big
        assert class_name(entry) == "Big"
    ''')


@pytest.mark.parametrize("size", [10, 3 * remote._SIBLINGS])
def test_reading_many_objects_after_the_kernel_ran_asks_once_per_batch(kernel, size):
    k = kernel(KERNEL)
    k.passes(f'''
        cache = Cache({size})
        entries = list(cache.entries.values())
        for round in range(1, 4):
            cache.touch_all()
            assert [entry.hits for entry in entries] == [round] * {size}
            assert [big.item7 for big in cache.bigs] == [7 + round] * 3
        assert [entry.key for entry in entries] == list(range({size}))
    ''')
    # Three rounds: each asks once per batch of siblings, plus the big objects one by one, plus a few calls;
    # asking object by object would cost at least 3 * size. The batches follow the order in which the objects
    # came (remote.JudgePeer.stale_siblings): those after the one asked for first (without that order, 142 crossings
    # for 189 objects).
    batches = -(-size // (remote._SIBLINGS + 1))
    assert k.judge.crossings <= 3 * (batches + 3) + 12, (size, k.judge.crossings)
