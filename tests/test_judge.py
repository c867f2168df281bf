"""The judge runs test cells unchanged against objects that live in another kernel (grading/judge/).

Each test here starts a kernel's agent in a thread of this process, on one end of a socket pair,
with a namespace of its own, and runs test code in the judge against it (runner.run_test), as
grading does. What must hold: values keep their exact types; containers and tensors keep their
identity and every in-place change crosses; the student's objects behave as themselves (``is``,
``type``, ``isinstance``, attributes, methods, operators, dataclass fields, subclasses made by a
test); exceptions keep their builtin base; names resolve to the judge's builtins and imports first.
"""

from __future__ import annotations

import textwrap

import pytest


def test_values_cross_by_value_with_their_exact_types(kernel):
    k = kernel('''
        import numpy, torch
        BIG, NP, C, B, T = 2**200, numpy.int64(7), 1 + 2j, b"\\x00\\xff", (1, frozenset({2}), range(3), slice(1, None))
        DT, DEV, SIZE, E = torch.bfloat16, torch.device("cpu"), torch.Size([2, 3]), ...
        STRIDED = torch.arange(6.0).reshape(2, 3).t()
        META = torch.empty(4, 2, device="meta")
        ARRAY = numpy.arange(6, dtype=numpy.float32).reshape(2, 3)
        def echo(value):
            return value
    ''')
    k.passes('''
        import numpy, torch
        from course.checks import check_type
        assert type(BIG) is int and BIG == 2**200 and echo(-BIG) == -2**200
        assert type(NP) is numpy.int64 and NP == 7 and type(echo(numpy.float16(1.5))) is numpy.float16
        try:
            check_type(NP, int, "NP")
        except AssertionError:
            pass
        else:
            raise AssertionError("a numpy.int64 must not pass check_type(int)")
        assert (C, B, T, E) == (1 + 2j, b"\\x00\\xff", (1, frozenset({2}), range(3), slice(1, None)), ...)
        assert (DT, DEV, SIZE) == (torch.bfloat16, torch.device("cpu"), torch.Size([2, 3]))
        assert type(SIZE) is torch.Size
        assert not STRIDED.is_contiguous() and STRIDED.stride() == (1, 3)
        assert STRIDED.tolist() == [[0, 3], [1, 4], [2, 5]]
        assert META.device.type == "meta" and META.shape == (4, 2)
        assert type(ARRAY) is numpy.ndarray and ARRAY.dtype == numpy.float32 and ARRAY.tolist()[1] == [3, 4, 5]
        assert echo(torch.tensor([True, False])).dtype == torch.bool
    ''')


def test_containers_and_tensors_keep_their_identity_and_every_change_crosses_in_place(kernel):
    k = kernel('''
        from collections import OrderedDict
        class Cache:
            def __init__(self):
                self.ref_count = {1: 1}
                self.order = OrderedDict.fromkeys([1, 2, 3])
                self.table = [[0], [1]]
            def bump(self):
                self.ref_count[1] += 1
                self.order.move_to_end(1)
                return self.ref_count[1]
        def same(value):
            return value
        def scale_in_place(tensor):
            tensor.mul_(2)
        def write(pool, slot, value):
            pool.k_cache[slot] = value
        def append_to(items):
            items.append("student")
    ''')
    k.passes('''
        import torch
        from collections import OrderedDict
        from types import SimpleNamespace
        weights = {"a": 1.0}
        assert same(weights) is weights, "an argument the student returns is the test's own object"
        cache = Cache()
        ref_count = cache.ref_count
        assert cache.ref_count is ref_count and cache.bump() == 2 and ref_count == {1: 2}
        assert type(cache.order) is OrderedDict and list(cache.order) == [2, 3, 1]
        cache.ref_count.update({1: 5})
        assert cache.bump() == 6, "a change the test made reaches the kernel before it runs again"
        tensor = torch.ones(3)
        view = tensor[1:]
        scale_in_place(tensor)
        assert tensor.tolist() == [2.0, 2.0, 2.0] and view.tolist() == [2.0, 2.0]
        pool = SimpleNamespace(k_cache=torch.zeros(4))
        write(pool, 2, 7.0)
        assert pool.k_cache.tolist() == [0.0, 0.0, 7.0, 0.0]
        items = ["test"]
        append_to(items)
        assert items == ["test", "student"]
        cache.table[0].append(9)
        assert same(cache.table)[0] == [0, 9]
    ''')


def test_a_change_to_a_container_that_only_a_student_object_holds_reaches_the_kernel(kernel):
    # Once ``cache.items.append(3)`` ends, only the judge's table of shared values holds that list: an object with
    # __slots__, a dataclass with slots, or one whose state lives in a global has no mirrored __dict__ to hold it.
    # The change must cross before the list is forgotten on both sides.
    k = kernel('''
        from dataclasses import dataclass, field
        from functools import lru_cache
        class Slotted:
            __slots__ = ("items",)
            def __init__(self):
                self.items = [1, 2]
            def count(self):
                return len(self.items)
        @dataclass(slots=True)
        class Record:
            table: list = field(default_factory=list)
            def count(self):
                return len(self.table)
        _STATE = {}
        class Block:
            def __init__(self, block_id):
                self.block_id, self.filled = block_id, 0
        class Allocator:
            def __init__(self, n):
                _STATE[id(self)] = {"free": list(range(n))}
            @property
            def free(self):
                return _STATE[id(self)]["free"]
            @lru_cache(maxsize=None)
            def get_block(self, block_id):
                return Block(block_id)
    ''')
    k.passes('''
        slotted = Slotted()
        slotted.items.append(3)
        assert slotted.count() == 3, "an append to a list that a __slots__ object holds"
        record = Record()
        record.table.extend([7, 8])
        assert record.count() == 2, "an extend of a list that a dataclass with slots holds"
        for case in range(3):
            allocator = Allocator(4)
            allocator.free.pop()
            assert len(allocator.free) == 3, "a pop from a list that a global holds"
            expected = [0, 0]
            for op in range(6):
                allocator.get_block(op % 2).filled = op
                expected[op % 2] = op
                assert [allocator.get_block(i).filled for i in range(2)] == expected, "blocks that a cache holds"
    ''')


def test_a_view_of_a_shared_tensor_stays_a_view(kernel):
    k = kernel('''
        def rows(pool, start, stop):
            return pool[start:stop]
    ''')
    k.passes('''
        import torch
        pool = torch.arange(12.0).reshape(6, 2)
        part = rows(pool, 1, 3)
        pool.zero_()
        assert part.tolist() == [[0.0, 0.0], [0.0, 0.0]], "a view the kernel returned sees the test's write"
    ''')


def test_a_tensor_of_one_element_crosses_at_any_stride(kernel):
    # torch calls a tensor of one element contiguous whatever its stride (``zeros(1, 2)[:, 0]`` has stride 2), but
    # its memory cannot be read as bytes through a view: it crosses as a copy of its value, both ways.
    k = kernel('''
        import torch
        class Scores:
            def __init__(self, n):
                self.priority = torch.zeros((n, 2), dtype=torch.float64)[:, 0]
            def touch(self, slot, value):
                self.priority[slot] = value
        def first_column(rows):
            return torch.arange(rows * 3.0).reshape(rows, 3)[:, 0]
        def double(tensor):
            return tensor * 2
    ''')
    k.passes('''
        import torch
        scores = Scores(1)
        scores.touch(0, 2.5)
        assert scores.priority.tolist() == [2.5] and scores.priority.stride() == (2,), "a view keeps its layout"
        assert first_column(1).tolist() == [0.0] and first_column(2).tolist() == [0.0, 3.0]
        odd = torch.ones(1, 4, dtype=torch.int16)[:, 1]
        assert double(odd).tolist() == [2] and double(odd.expand(3)).tolist() == [2, 2, 2]
    ''')


def test_a_write_that_the_version_counter_never_sees_crosses_too(kernel):
    # ``.data``, a NumPy array over the tensor's memory and raw pointers write without bumping the tensor's version:
    # the kernel compares bytes, so these writes reach the test as they do in one process.
    k = kernel('''
        import torch
        def write_data(pool, slots, values):
            pool.data.view(-1)[slots] = values
        def write_numpy(pool, slot, value):
            pool.numpy().reshape(-1)[slot] = value
        def write_half(pool, slot):
            pool.data[slot] = 7
    ''')
    k.passes('''
        import torch
        pool = torch.zeros(2, 3)
        write_data(pool, torch.tensor([5, 0]), torch.tensor([4.0, 1.0]))
        assert pool.tolist() == [[1.0, 0.0, 0.0], [0.0, 0.0, 4.0]], pool
        write_numpy(pool, 2, float("nan"))
        assert pool.isnan().tolist() == [[False, False, True], [False, False, False]], pool
        column = torch.zeros(4, 2, dtype=torch.bfloat16)[:, 1]
        write_half(column, 3)
        assert column.tolist() == [0.0, 0.0, 0.0, 7.0], column
    ''')


def test_a_tensor_made_under_inference_mode_crosses_and_stays_in_step(kernel):
    # Such a tensor has no version counter (reading it raises): it is compared by its bytes.
    k = kernel('''
        import torch
        @torch.inference_mode()
        def keep(n):
            return torch.arange(n)
        class Scores:
            @torch.inference_mode()
            def __init__(self, n):
                self.values = torch.zeros(n)
            @torch.inference_mode()
            def add(self, slot, amount):
                self.values[slot] += amount
    ''')
    k.passes('''
        import torch
        assert keep(3).tolist() == [0, 1, 2]
        scores = Scores(3)
        values = scores.values
        scores.add(1, 2.5)
        assert values.tolist() == [0.0, 2.5, 0.0] and scores.values.tolist() == [0.0, 2.5, 0.0], values
        scores.add(1, 1.0)
        assert values.tolist() == [0.0, 3.5, 0.0], values
    ''')


def test_a_numpy_array_of_python_objects_is_lent_as_an_object(kernel):
    # It has no bytes to cross by value; it stays in the kernel, where the student's object keeps it.
    k = kernel('''
        import numpy
        class Recent:
            def __init__(self):
                self.ids = numpy.array([], dtype=object)
                self.count = 0
            def record(self, block):
                item = numpy.empty(1, dtype=object)
                item[0] = block
                self.ids = numpy.concatenate([self.ids, item])
                self.count += 1
                return len(self.ids)
    ''')
    k.passes('''
        recent = Recent()
        assert recent.record(("a", 1)) == 1 and recent.record("b") == 2 and recent.count == 2
        ids = recent.ids
        assert len(ids) == 2 and ids[1] == "b" and ids[0] == ("a", 1), ids
    ''')


def test_a_test_object_s_methods_are_found_on_its_class_too(kernel):
    # The student's code may call a method through the class: ``type(policy).select_victim(policy, ...)``.
    k = kernel('''
        def victim(policy, cache):
            first = type(policy).select_victim(policy, cache)
            second = policy.__class__.select_victim(policy, cache)
            return first, second, "select_victim" in vars(type(policy)), policy.select_victim(cache)
    ''')
    k.passes('''
        class Oldest:
            def select_victim(self, cache):
                return min(cache)
        assert victim(Oldest(), {"b": 1, "a": 2}) == ("a", "a", True, "a")
    ''')


def test_an_object_twice_in_one_message_crosses_once(kernel):
    # Its __dict__ crosses with the first occurrence; the second only names it.
    kernel('''
        class Node:
            def __init__(self):
                self.value = 1
        def twice():
            node = Node()
            return [node, node]
    ''', timeout=5).passes('''
        first, second = twice()
        assert first is second and first.value == 1
        first.value = 2
        assert twice()[0].value == 1 and second.value == 2
    ''')


def test_a_view_crosses_with_its_whole_storage(kernel):
    k = kernel('''
        def scribble(pool):
            # One row past the end of the view, in its storage: a guard block, as notebook 09's pools have.
            pool.as_strided((1, 2), (2, 1), pool.storage_offset() + pool.numel()).fill_(7.0)
    ''')
    k.passes('''
        import math
        import torch
        pool = torch.full((6, 2), float("nan"))[1:5]
        scribble(pool)
        assert pool._base[5].tolist() == [7.0, 7.0] and all(math.isnan(x) for x in pool._base[0].tolist())
        storage = torch.full((6, 2), float("nan"))
        first, second = storage[1:3], storage[3:5]
        scribble(first)
        scribble(second)
        assert storage[3].tolist() == [7.0, 7.0] and storage[5].tolist() == [7.0, 7.0], storage
    ''')


def test_a_tensor_that_views_part_of_its_storage_is_no_owner_on_either_side(kernel):
    # A tensor with no base that starts inside its storage, or ends before its end (``set_``), crosses as a copy that
    # owns all of its own storage on the receiving side. Views of that copy must not cross as views of it: the
    # sender's tensor could not hold them. Both ways: the kernel's such tensor viewed by the test, and the test's
    # such tensor viewed by the student's code.
    k = kernel('''
        import torch
        storage = torch.arange(40.0)
        def inside():
            return torch.empty(0).set_(storage.untyped_storage(), 4, (2, 6), (6, 1))
        def values(t):
            return t.tolist()
        def first_row(t):
            return t[:1]
        def leading(t):
            return torch.empty(0).set_(t.untyped_storage(), 0, (2,), (1,))
    ''', timeout=5)
    k.passes('''
        import torch
        t = inside()
        assert values(t[:1]) == [[4.0, 5.0, 6.0, 7.0, 8.0, 9.0]]
        assert values(t.view(12)[6:8]) == [10.0, 11.0]
        row = first_row(t)
        assert row.tolist() == [[4.0, 5.0, 6.0, 7.0, 8.0, 9.0]]
        mine = torch.arange(12.0).view(2, 6)
        part = leading(mine)
        assert part.tolist() == [0.0, 1.0] and values(part[1:]) == [1.0]
        assert first_row(part).tolist() == [0.0]
        assert values(first_row(mine)) == [[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]]
    ''')


def test_a_copy_of_a_tensor_that_is_no_owner_never_becomes_one(kernel):
    # Ownership is decided when a tensor first crosses, by its sender; an update keeps or ends it, but never claims it.
    # Both ways: the kernel writes its copy of the test's partial tensor, then sends a view of it; the test writes
    # its copy of the kernel's partial tensor, then sends a view of it.
    k = kernel('''
        import torch
        storage = torch.arange(6.0)
        def clear(t):
            t.zero_()
            return t[2:]
        def inside():
            return torch.empty(0).set_(storage.untyped_storage(), 1, (4,), (1,))
        def total(t):
            return float(t.sum())
    ''', timeout=5)
    k.passes('''
        import torch
        part = torch.arange(8.0)[1:].view(torch.float32)  # A view of another dtype has no base: it crosses whole.
        assert clear(part).tolist() == [0.0] * 5 and part.tolist() == [0.0] * 7
        t = inside()
        t[3] = 9.0
        assert total(t[..., None]) == 1.0 + 2.0 + 3.0 + 9.0
    ''')


def test_a_storage_keeps_the_owner_it_has(kernel):
    # A tensor of another dtype over a whole storage owns it when it crosses first: a view whose base crosses with it
    # then crosses as a copy, and a view set onto the owner's storage does not take its place.
    k = kernel('''
        import torch
        kept = {}
        def make():
            kept['x'] = torch.arange(12).reshape(4, 3)
            return kept['x']
        def as_float():
            return kept['x'].view(torch.float64)
        def rows():
            return kept['x'][1:]
        class Box:
            pass
        def box(x):
            b = Box()
            b.t, b.u = x, x[1:]
            return b
        def bump():
            kept['x'].add_(4)
            return kept['x'].squeeze()
    ''', timeout=5)
    k.passes('''
        x = make()
        f = as_float()
        assert rows().tolist() == [[3, 4, 5], [6, 7, 8], [9, 10, 11]]
        b = box(x)
        b.u.set_(b.t)
        assert bump().tolist() == [[4 + 3 * i + j for j in range(3)] for i in range(4)]
    ''')


def test_a_view_with_gaps_stays_a_view_of_its_owner_after_writes_on_either_side(kernel):
    # A view's update says where it lies on its owner's storage, with its values written through it: a view whose
    # strides have gaps stays a view (its values alone would make a contiguous copy of its own).
    k = kernel('''
        kept = {}
        def evens(x):
            return x[::2]
        def bump(x):
            x.add_(1)
        def keep(x):
            kept['x'], kept['odd'] = x, x[1::2]
            return kept['odd']
        def odd_after_doubling():
            kept['x'].mul_(2)
            return kept['odd'].tolist()
        def column(x):
            return x[:, 1]
    ''', timeout=5)
    k.passes('''
        import torch
        x = torch.arange(8.0)
        even = evens(x)
        bump(x)
        x.zero_()
        assert even.tolist() == [0.0] * 4
        odd = keep(torch.arange(8.0))
        odd.add_(5)
        assert odd_after_doubling() == [12.0, 16.0, 20.0, 24.0]
        pool = torch.zeros(3, 4)
        second = column(pool)
        second.fill_(7.0)
        bump(pool)
        assert pool[:, 1].tolist() == [8.0] * 3 and second.tolist() == [8.0] * 3 and second.stride() == (4,)
    ''')


def test_a_tensor_changed_in_place_stays_on_its_storage(kernel):
    # In-place changes of shape, strides or size (``transpose_``, ``unsqueeze_``, an ``out=`` that resizes, a
    # ``resize_`` that moves the memory) leave a tensor on its storage object, with every view on it: so on both sides.
    k = kernel('''
        import torch
        def make():
            return {'x': torch.arange(12).reshape(3, 4)}
        def flip(d):
            d['x'].transpose_(0, 1)
        def column_plus_one(x):
            torch.add(x[:, 2], 1, out=x)
        def grow(x, y):
            torch.cat([y, y], out=x)
    ''', timeout=5)
    k.passes('''
        import torch
        d = make()
        first = d['x'][0]
        flip(d)
        first.add_(100)
        assert d['x'].tolist() == [[100, 4, 8], [101, 5, 9], [102, 6, 10], [103, 7, 11]]
        x = torch.arange(12).reshape(4, 3)
        col = x[:, 2]
        column_plus_one(x)
        assert x.tolist() == [3, 6, 9, 12]
        col.resize_(8).fill_(102)
        assert x.tolist() == [3, 6, 102, 102]
        y = torch.arange(6.0)
        tail = y[1:]
        grow(y, torch.ones(5))
        tail.fill_(-1.0)
        assert y.shape == (10,) and y[0].item() == 1.0 and y[1:6].tolist() == [-1.0] * 5
    ''')


def test_a_dimension_of_one_element_crosses_with_any_stride(kernel):
    # torch ignores the stride of a dimension of one element, which may be larger than the tensor (the first row of a
    # longer tensor, permuted, has its row stride): it crosses as it is, both ways.
    k = kernel('''
        import torch
        def permuted():
            return torch.empty_strided((3, 1, 4), (1, 24, 3)).copy_(torch.arange(12.0).reshape(4, 3).t()[:, None])
        def same(t):
            return t.stride(), t.tolist()
    ''', timeout=5)
    k.passes('''
        import torch
        t = permuted()
        assert t.shape == (3, 1, 4) and t.stride() == (1, 24, 3) and t[0, 0].tolist() == [0.0, 3.0, 6.0, 9.0]
        mine = torch.empty_strided((2, 1, 3), (1, 50, 2)).copy_(torch.arange(6.0).reshape(3, 2).t()[:, None])
        assert same(mine) == ((1, 50, 2), [[[0.0, 2.0, 4.0]], [[1.0, 3.0, 5.0]]])
    ''')


def test_an_owner_that_only_its_views_reach_is_kept_in_step(kernel):
    # The owner of the views inside a student's object crosses lazily with them, and the test cannot reach it. A write
    # or a resize through one of the views changes it all the same: each view's update says where it lies on the
    # owner's storage, with its values, and the kernel writes them there (growing that storage as the test did).
    k = kernel('''
        import torch
        kept = {}
        class Box:
            pass
        def make():
            kept['base'] = torch.arange(8.0)
            kept['middle'] = kept['base'][2:6]
            b = Box()
            b.head, b.tail = kept['base'][:4], kept['base'][4:]
            return b
        def read():
            return kept['base'].tolist(), kept['middle'].tolist()
    ''', timeout=5)
    k.passes('''
        b = make()
        b.tail.add_(10.0)
        assert read() == ([0.0, 1.0, 2.0, 3.0, 14.0, 15.0, 16.0, 17.0], [2.0, 3.0, 14.0, 15.0])
        b.head.resize_(10)
        b.head[:8].fill_(1.0)
        assert read() == ([1.0] * 8, [1.0] * 4)
    ''')


def test_a_changed_tensor_in_a_new_object_comes_with_its_new_values(kernel):
    # A student's object that crosses for the first time may hold a tensor or a list that crossed before, inside
    # another object, and that the student's code changed since: its new content comes with the new object.
    k = kernel('''
        import torch
        kept = {}
        class Box:
            pass
        def first():
            kept['x'], kept['ids'] = torch.zeros(3), [1]
            b = Box()
            b.t, b.ids = kept['x'], [kept['ids']]
            return [b]
        def change():
            kept['x'].add_(1)
            kept['ids'].append(2)
        def second():
            b = Box()
            b.t, b.ids = kept['x'], [kept['ids']]
            return b
    ''', timeout=5)
    k.passes('''
        a = first()
        change()
        b = second()
        assert b.t.tolist() == [1.0, 1.0, 1.0] and b.ids == [[1, 2]], (b.t, b.ids)
    ''')


def test_a_view_handed_out_again_finds_its_owner_as_it_is_now(kernel):
    # The kernel's tensor outlives the test cell that sent it, so its pair goes; a view of it that crosses inside an
    # object's __dict__ then brings it back as a lazy owner. The student's code changes the whole owner; when the
    # view crosses again (returned, or in a new object's __dict__), the owner's new content comes with it. Else the
    # judge's copy keeps its old elements around the view's, and a new view of it that the test sends back would
    # write them into the student's tensor (found by tests/judge_fuzz.py, seed 514945).
    k = kernel('''
        import torch
        kept = {}
        class Box:
            pass
        def keep(x):
            kept['g'] = x
            kept['column'] = x[:, 3]
        def boxed():
            b = Box()
            b.t = kept['column']
            return [b]
        def flip():
            kept['g'].copy_(kept['g'].flip(0))
        def column():
            return kept['column']
        def send(view):
            kept['sent'] = view
        def look():
            return kept['g'].tolist()
    ''', timeout=5)
    for hand_out in ("column()", "boxed()[0].t"):
        k.passes('''
            keep(torch.arange(16.0).reshape(4, 4).t())
        ''')
        k.passes(f'''
            kept = boxed()
            flip()
            send({hand_out}.unsqueeze(-1))
            want = torch.arange(16.0).reshape(4, 4).t().flip(0).tolist()
            assert look() == want, look()
        ''')


def test_a_view_that_crosses_twice_in_one_message_stays_a_view(kernel):
    # The view crosses first inside a new object's __dict__ (a lazy pair, made in this message), then again as an item
    # of the list (made eager): the second time it says where it lies on its owner, as any view's update does, and
    # stays a view of the owner on both sides. Before, it came with its values alone, and the judge's copy left the
    # owner's storage (found by tests/judge_fuzz.py, seed 702981 with --steps 40).
    k = kernel('''
        import torch
        kept = {}
        class Box:
            pass
        def make():
            kept['g'] = torch.arange(12).reshape(3, 4)
            b = Box()
            b.t = kept['g'][1:]
            return [b, b.t]
        def other_view():
            return kept['g'][::2]
        def look():
            return kept['g'].tolist()
    ''', timeout=5)
    k.passes('''
        b, view = make()
        assert b.t is view
        rows = other_view()
        rows[1, 0] = 93
        assert view[1, 0] == 93, view
        view[0, 0] = 94
        assert look() == [[0, 1, 2, 3], [94, 5, 6, 7], [93, 9, 10, 11]], look()
    ''')


def test_views_of_any_layout_keep_their_values_and_strides(kernel):
    # A transposed owner stays an owner; a view whose elements overlap (``expand``) is written where its elements
    # lie; the strides of dimensions of one element cross as they are, which torch compares before it lets an
    # ``out=`` that is its own input be written.
    k = kernel('''
        import torch
        kept = {}
        class Box:
            pass
        def make(x):
            b = Box()
            b.t = x
            kept['b'] = b
            return b
        def read():
            return kept['b'].t.tolist()
        def spread(x):
            kept['wide'] = x.unsqueeze(0).expand(2, *x.shape)
            return kept['wide']
        def same(x):
            kept['y'] = x
            return x.mT
        def add_in_place(view):
            torch.add(view, 1, out=kept['y'].transpose_(0, 1))
            return kept['y'].tolist()
    ''', timeout=5)
    k.passes('''
        import torch
        x = torch.arange(12.0).reshape(3, 4)
        x.transpose_(0, 1)
        b = make(x)
        b.v = x[:2]
        b.v[0:1].add_(2)
        assert read()[0] == [2.0, 6.0, 10.0], read()
        base = torch.arange(6.0)
        wide = spread(base)
        wide.zero_()
        assert base.tolist() == [0.0] * 6 and spread(base).tolist() == [[0.0] * 6] * 2
        y = torch.arange(4, dtype=torch.int32).unsqueeze(0)
        assert add_in_place(same(y)) == [[1], [2], [3], [4]]
    ''')


def test_a_write_through_a_view_crosses_once(kernel):
    # A view and its base share their memory and version counter: the update written into one changes the other on
    # the receiving side, which must not send it back (each side would then send it at every message, for ever).
    k = kernel('''
        def rows(pool, start, stop):
            return pool[start:stop]
        def total(pool):
            return float(pool.sum())
    ''')
    updates = []
    for side in (k.judge, k.agent):
        pack = side.framing.pack
        side.framing.pack = lambda tree, pack=pack: updates.append(len(tree[3][0])) or pack(tree)
    k.passes('''
        import torch
        pool = torch.zeros(6, 2)
        part = rows(pool, 1, 3)
        part.fill_(1.0)
        for _ in range(20):
            assert total(pool) == 4.0
        part.add_(1.0)
        for _ in range(20):
            assert total(pool) == 8.0
    ''')
    assert sum(updates) <= 4, updates


def test_writing_an_attribute_s_own_value_again_crosses_nothing(kernel):
    # A stand-in the student's code calls back may count with ``cache.misses += 0``: the object's __dict__ is sent
    # only when a value in it changes (a float's sign too).
    k = kernel('''
        class Counters:
            def __init__(self):
                self.misses, self.ratio, self.name = 0, 0.0, "c"
        counters = Counters()
        def read(counters):
            return (counters.misses, counters.ratio)
    ''')
    updates = []
    pack = k.judge.framing.pack
    k.judge.framing.pack = lambda tree: updates.append(len(tree[3][0])) or pack(tree)
    k.passes('''
        import math
        assert read(counters) == (0, 0.0)
        for _ in range(20):
            counters.misses += 0
            counters.name = "c"
            assert read(counters) == (0, 0.0)
        counters.ratio = -0.0
        assert math.copysign(1.0, read(counters)[1]) == -1.0, "-0.0 is not 0.0"
    ''')
    assert sum(updates) <= 2, updates


def test_an_object_whose_attributes_the_test_sets_one_by_one_crosses_once_per_message(kernel):
    # A test that builds a bare object (``object.__new__``) sets a dozen attributes before it calls a method: the
    # object's __dict__ goes with that call once, not once for each attribute set.
    k = kernel('''
        class Table:
            def total(self):
                return self.a + self.b + self.c + self.d + sum(self.rows)
    ''')
    updates = []
    pack = k.judge.framing.pack
    k.judge.framing.pack = lambda tree: updates.append(len(tree[3][0])) or pack(tree)
    k.passes('''
        table = object.__new__(Table)
        for round in range(5):
            table.a, table.b, table.c, table.d = 1, 2, 3, round
            table.rows = [round, 10]
            assert table.total() == 16 + 2 * round
    ''')
    # Per round, one update of the __dict__, and one of the new list on the first round.
    assert sum(updates) <= 5 + 1, updates


def test_a_bare_instance_comes_with_its_empty_dict(kernel):
    # ``object.__new__(Cls)`` is made in the kernel at its first use; the reply brings the object's (empty) __dict__,
    # so that setting attributes and calling a method cost one request more, not two. The hash stays the kernel's.
    k = kernel('''
        class Table:
            def total(self):
                return self.a + self.b
        class Unhashable:
            __hash__ = None
    ''')
    k.passes('''
        table = object.__new__(Table)
        table.a, table.b = 1, 2
        assert table.total() == 3 and table.__dict__ == {"a": 1, "b": 2}
        assert type(table) is Table and isinstance(table, Table)
        other = object.__new__(Table)
        other.a, other.b = 5, 5
        assert other.total() == 10 and table is not other and hash(table) != hash(other)
    ''')
    # The name Table; new and total, twice; the __dict__ read after total ran (8 when a bare instance's dict was asked
    # for on its own).
    assert k.judge.crossings == 1 + 2 * 2 + 1, k.judge.crossings
    k.passes('''
        bare = object.__new__(Unhashable)
        bare.x = 1
        assert bare.x == 1
        try:
            hash(bare)
        except TypeError:
            pass
        else:
            raise AssertionError("an unhashable object of the kernel must not be hashable in the judge")
    ''')
    # A kernel that answers with another object (one the test holds, one of another class, a number) fails the test
    # cell; a fresh object of the class asked for is what a kernel makes anyway.
    for forged in ("held", "another class", "number"):
        handle = k.agent._handle

        def forge(op, args, handle=handle, forged=forged):
            if op != "new":
                return handle(op, args)
            other = object.__new__(k.namespace["Unhashable"])
            return {"held": k.namespace["table"], "another class": other, "number": 7}[forged]

        k.namespace["table"] = k.namespace["Table"]()
        k.agent._handle = forge
        verdict = k.run('''
            held = table
            bare = object.__new__(Table)
            bare.a, bare.b = 1, 2
            assert bare.total() == 3
        ''')
        k.agent._handle = handle
        assert not verdict.passed and "malformed object" in verdict.message, (forged, verdict.message)


def test_the_student_s_objects_behave_as_themselves(kernel):
    k = kernel('''
        import copy, dataclasses
        @dataclasses.dataclass
        class Block:
            block_id: int
            filled: int = 0
            @property
            def is_full(self):
                return self.filled >= 4
        class Base:
            def candidates(self, items):
                return sorted(items)
            def select(self, items):
                raise NotImplementedError
        class Allocator:
            def __init__(self, n):
                self.blocks = [Block(i) for i in range(n)]
            def get(self, i):
                return self.blocks[i]
            def __len__(self):
                return len(self.blocks)
            def __contains__(self, i):
                return 0 <= i < len(self.blocks)
            def __iter__(self):
                return iter(self.blocks)
            def __getitem__(self, i):
                return self.blocks[i]
    ''')
    k.passes('''
        import copy, dataclasses
        allocator = Allocator(3)
        first = allocator.get(0)
        assert first is allocator.get(0) and type(first) is Block and isinstance(first, Block)
        assert not isinstance(first, Allocator) and issubclass(Block, object)
        assert dataclasses.is_dataclass(Block) and [f.name for f in dataclasses.fields(Block)] == ["block_id", "filled"]
        assert isinstance(vars(Block).get("is_full"), property)
        first.filled = 4
        assert first.is_full and allocator.get(0).filled == 4
        assert len(allocator) == 3 and 2 in allocator and 5 not in allocator
        assert [b.block_id for b in allocator] == [0, 1, 2] and allocator[1].block_id == 1
        assert first == Block(0, 4) and first != Block(1)
        try:
            hash(first)
        except TypeError as error:
            assert "unhashable type: 'Block'" in str(error)
        assert "Block(block_id=0" in repr(first)
        clone = copy.deepcopy(allocator)
        assert clone is not allocator and clone.get(0) is not first and clone.get(0).filled == 4

        class First(Base):
            def select(self, items):
                return self.candidates(items)[0]

        assert First().select([3, 1, 2]) == 1 and issubclass(First, Base)
        bare = object.__new__(First)
        bare.seen = []
        assert bare.select([5, 4]) == 4 and bare.seen == []
    ''')


def test_a_function_of_the_test_installed_on_a_student_object_is_called_back(kernel):
    k = kernel('''
        class Tier:
            def __init__(self):
                self.ref_count = {}
            def access(self, block):
                raise AssertionError("the test's function replaces this one")
            def get(self, block):
                return self.access(block)
    ''')
    k.passes('''
        tier = Tier()
        calls = []
        def scripted_access(block):
            calls.append(block)
            tier.ref_count.update({block: tier.ref_count.get(block, 0) + 1})
            return "hit"
        tier.access = scripted_access
        assert tier.get(3) == "hit" and tier.get(3) == "hit" and calls == [3, 3] and tier.ref_count == {3: 2}
    ''')


def test_a_replay_runs_its_steps_in_the_kernel_in_one_request_with_in_process_results(kernel):
    """course.checks.replay and assert_steps on a student's object: one request, results and errors as in process."""
    k = kernel('''
        from collections import OrderedDict, deque
        class Filter:
            def __init__(self):
                self.order, self.counts, self.calls = deque(), OrderedDict(), 0
            def record(self, block, pinned=()):
                self.calls += 1
                if block in pinned:
                    raise KeyError(block)
                self.order.append(block)
                self.counts[block] = self.counts.get(block, 0) + 1
                return self.counts
            def __contains__(self, block):
                return block in self.counts
    ''')
    k.passes('''
        from course.checks import assert_steps, replay
        table = Filter()
        pinned = frozenset({9})
        steps = [("record", (1, pinned)), ("in", (1,)), ("record", (1, pinned)), ("order", list), ("counts", "items"),
                 ("calls", None), ("record", (9, pinned)), ("record", (2, pinned))]
        results = replay(table, steps)
        got = [next(results) for _ in range(6)]
        assert got == [{1: 1}, True, {1: 2}, [1, 1], [(1, 2)], 2], got
        assert type(got[0]).__name__ == "OrderedDict" and type(got[3]) is list
        try:
            next(results)
        except KeyError as error:  # The kernel's KeyError, raised in the failing step's place.
            assert error.args == (9,)
        else:
            raise AssertionError("the failing step must raise")
        assert table.calls == 3 and list(table.order) == [1, 1]  # No step after the failing one ran.
        assert_steps(table, [([("record", (2,))], None, None),
                             ([("counts", dict), ("in", (2,))], ({1: 2, 2: 1}, True), "(counts, 2 in table)")])
    ''')
    assert k.judge.crossings < 60, k.judge.crossings  # A few per replay, not one per step.
    verdict = k.run('''
        from course.checks import assert_steps
        assert_steps(Filter(), [([("record", (5,))], None, None), ([("in", (5,))], False, "5 in table")], reveal=False)
    ''')
    assert not verdict.passed and verdict.message == "AssertionError: 5 in table returned True, which is wrong", verdict
    # A kernel that answers a replay with fewer results than steps (a loop over them would check less) fails.
    for forged in ([False], [False, 1, 2, 3], [True, 1, 2], (False, 1), "results"):
        k.agent.replay = lambda target, steps, forged=forged: forged
        verdict = k.run('''
            from course.checks import replay
            for got in replay(Filter(), [("record", (1,)), ("in", (1,))]):
                assert got is not None
        ''')
        assert not verdict.passed and "a malformed answer to a replay" in verdict.message, (forged, verdict)


def _pairs_added(monkeypatch) -> list:
    """Every pair either side adds from now on, as (side's parity, tag name, lazy): 0 is the judge, 1 the kernel."""
    from grading.judge import pairs
    from grading.judge.wire import Tag

    added = []
    original = pairs.PairTable.add

    def counting_add(self, obj, tag, sid=None, lazy=False):
        added.append((self.parity, Tag(tag).name, lazy))
        return original(self, obj, tag, sid, lazy)

    monkeypatch.setattr(pairs.PairTable, "add", counting_add)
    return added


def test_a_replay_s_results_cross_as_copies_that_no_pair_holds_on_either_side(kernel, monkeypatch):
    """A replay's results are copies made for it (course.checks._copied), which nothing in the kernel holds: its
    lists, dicts, sets and tensors cross as values, and neither side keeps them in step at every message. An object
    among the results is still the student's, its attributes kept in step."""
    k = kernel('''
        import torch
        class Box:
            def __init__(self):
                self.items, self.weights, self.inner = [1, 2], torch.arange(4.0), None
            def grow(self):
                self.bump()
                return self.items
            def bump(self):
                self.items.append(len(self.items) + 1)
            def parts(self):
                return {"items": self.items, "seen": {1, 2}, "weights": self.weights}
    ''')
    added = _pairs_added(monkeypatch)
    k.passes('''
        from course.checks import replay
        box = Box()
        box.inner = Box()
        got = list(replay(box, [("grow", ()), ("items", list), ("weights", None), ("parts", ()), ("inner", None)]))
        assert got[:2] == [[1, 2, 3], [1, 2, 3]] and torch.equal(got[2], torch.arange(4.0))
        assert got[3]["items"] == [1, 2, 3] and got[3]["seen"] == {1, 2} and torch.equal(got[3]["weights"], got[2])
        got[0].append(99)  # A copy: changing it changes nothing in the kernel.
        got[2].add_(1)
        box.bump()
        assert box.items == [1, 2, 3, 4] and torch.equal(box.weights, torch.arange(4.0)), (box.items, box.weights)
        assert got[4].items == [1, 2]  # The student's object, with its attributes.
        got[4].bump()
        assert got[4].items == [1, 2, 3]
    ''')
    eager = [(side, tag) for side, tag, lazy in added if not lazy]
    assert eager == [], eager  # Without copies: an eager pair on each side for every one, scanned at every message.
    assert any(tag == "DICT" for _, tag, _ in added), added  # The objects' attributes still come as pairs.


def test_a_replay_s_arguments_cross_as_copies_as_in_process(kernel, monkeypatch):
    """A replay's steps carry copies of their arguments, as course.checks.replay makes them in process: what the
    student's code does to them, or keeps of them, stays in the kernel, and no pair holds them on either side (before,
    every list and tensor a step passed stayed an eager pair, looked over at every later message)."""
    k = kernel('''
        import torch
        class Keeper:
            def __init__(self):
                self.kept = []
            def keep(self, items, weights):
                items.append(0)
                weights.add_(1)
                self.kept.append((items, weights))
                return len(self.kept)
    ''')
    added = _pairs_added(monkeypatch)
    k.passes('''
        from course.checks import replay
        keeper, items, weights = Keeper(), [1, 2], torch.zeros(2)
        got = list(replay(keeper, [("keep", (items, weights)), ("keep", (items, weights))]))
        assert got == [1, 2] and items == [1, 2] and torch.equal(weights, torch.zeros(2)), (got, items, weights)
        first, second = keeper.kept
        assert first[0] == second[0] == [1, 2, 0] and torch.equal(second[1], torch.ones(2)), keeper.kept
    ''')
    eager = [(side, tag) for side, tag, lazy in added if not lazy]
    # Only keeper.kept and what it holds, which the test read afterwards, are eager: the kernel's pairs, no judge's.
    assert all(side == 1 for side, _ in eager), eager


def test_a_replay_s_results_read_as_after_its_last_step_in_one_process_and_judged(kernel):
    """Every step of a replay runs before its first result comes, in one process as when grading: an object among
    the results reads as it is after the last step, whenever the test reads it (red team, 2026-12-07: a lazy replay
    in one process let a block read between two steps say what the judged run, which read it after all of them,
    did not). A step that raises raises after the results before it, and the later steps do not run."""
    source = '''
        class Box:
            def __init__(self):
                self.value = 0
        class Maker:
            def __init__(self):
                self.box, self.calls = Box(), 0
            def get(self):
                self.calls += 1
                return self.box
            def bump(self):
                self.calls += 1
                self.box.value += 1
            def fail(self):
                self.calls += 1
                raise KeyError("no")
    '''
    test = '''
        from course.checks import replay
        maker = Maker()
        results = replay(maker, [("get", ()), ("bump", ()), ("fail", ()), ("bump", ())])
        first = next(results)
        assert first.value == 1, first.value
        assert next(results) is None
        try:
            next(results)
        except KeyError:
            pass
        else:
            raise AssertionError("the failing step raised nothing")
        assert maker.calls == 3 and maker.box.value == 1, (maker.calls, maker.box.value)
    '''
    namespace = {"__name__": "__main__"}
    exec(textwrap.dedent(source) + textwrap.dedent(test), namespace)  # In one process.
    kernel(source).passes(test)


def test_a_replay_makes_many_objects_of_a_kernel_class_and_keeps_them_in_step(kernel):
    """("__call__", args) steps on a class or a function of the kernel make its objects in one request; their
    attributes are then kept in step, so that a later read costs no request and sees the kernel's changes."""
    k = kernel('''
        class Entry:
            def __init__(self, name, size, step=0):
                self.name, self.size, self.step = name, size, step
        def make(name, size):
            return Entry(name, size, 1)
        def grow(entries, by):
            for entry in entries.values():
                entry.size += by
            return len(entries)
    ''')
    k.passes('''
        from course.checks import replay
        made = replay(Entry, [("__call__", (f"e{i}", i)) for i in range(20)])
        entries = {f"e{i}": entry for i, entry in enumerate(made)}
        made = list(replay(make, [("__call__", ("m", 5))]))
        assert [(e.name, e.size, e.step) for e in entries.values()][:2] == [("e0", 0, 0), ("e1", 1, 0)]
        assert (made[0].name, made[0].step) == ("m", 1) and type(made[0]) is Entry
        assert grow(entries, 10) == 20
        assert [e.size for e in entries.values()] == [i + 10 for i in range(20)]
    ''')
    # One request for the objects, one for the function's object, one for grow and a few for names; not one per
    # object for each read after grow.
    assert k.judge.crossings < 15, k.judge.crossings


def test_exceptions_keep_their_builtin_base(kernel):
    k = kernel('''
        class BlockError(ValueError):
            pass
        def fail(kind):
            if kind == "own":
                raise BlockError("no block 7")
            if kind == "key":
                raise KeyError("h")
            if kind == "exit":
                raise SystemExit(3)
            raise NotImplementedError()
    ''')
    k.passes('''
        from course.checks import assert_raises
        assert_raises(ValueError, "fail('own')", fail, "own")
        try:
            fail("own")
        except ValueError as error:
            assert type(error).__name__ == "BlockError" and str(error) == "no block 7"
        try:
            fail("key")
        except KeyError as error:
            assert str(error) == "'h'"
        try:
            assert_raises(RuntimeError, "fail('todo')", fail, "todo")
        except AssertionError as error:
            assert "not written yet" in str(error)
    ''')
    verdict = k.run("fail('exit')")
    assert not verdict.passed and verdict.message.startswith("SystemExit"), verdict
    k.passes("assert fail is not None")  # The judge goes on after a kernel's SystemExit.


def test_exceptions_keep_their_arguments_as_in_one_process(kernel):
    # Mixed ints and strings, a tuple key, OSError's errno, and a KeyError of an object: each compares and reads as in
    # one process (a KeyError's message is its argument's repr; an object's argument crosses as that message).
    k = kernel('''
        class Block:
            def __repr__(self):
                return "Block(7)"
        def fail(kind):
            if kind == "mixed":
                raise ValueError("no room for block", 7, 2.5, None)
            if kind == "tuple":
                raise KeyError((3, "seq-1"))
            if kind == "os":
                raise FileNotFoundError(2, "No such file")
            raise KeyError(Block())
    ''')
    k.passes('''
        try:
            fail("mixed")
        except ValueError as error:
            assert error.args == ("no room for block", 7, 2.5, None), error.args
            assert str(error) == "('no room for block', 7, 2.5, None)"
        try:
            fail("tuple")
        except KeyError as error:
            assert type(error) is KeyError and error.args == ((3, "seq-1"),), error.args
            assert str(error) == "(3, 'seq-1')", str(error)
        try:
            fail("os")
        except OSError as error:
            assert type(error) is FileNotFoundError and error.errno == 2 and error.strerror == "No such file"
            assert str(error) == "[Errno 2] No such file", str(error)
        try:
            fail("object")
        except KeyError as error:
            assert type(error) is KeyError and str(error) == "Block(7)", str(error)
    ''')


def test_exceptions_keep_every_builtin_base_their_message_and_only_python_s_own_names_are_builtins(kernel):
    """An exception class of the kernel's with several of Python's exception classes among its bases is each of them in
    the test, a class of the student's that is named like one of Python's (``class MemoryError(RuntimeError)``)
    is not that one, and one with a ``__str__`` of its own says what it says in the kernel: the test catches and
    reads what it would in process."""
    k = kernel('''
        class WeightError(TypeError, ValueError):
            pass
        class Base(LookupError):
            pass
        class Full(Base, MemoryError, RuntimeError):
            pass
        class MemoryError(RuntimeError):
            pass
        class KeyError(Exception):
            pass
        class Told(RuntimeError):
            def __init__(self, asked, free):
                super().__init__("out of blocks")
                self.asked, self.free = asked, free
            def __str__(self):
                return f"asked for {self.asked}, {self.free} free"
        class Grouped(ExceptionGroup, RuntimeError):
            pass
        Deep = TypeError
        for depth in range(40):
            Deep = type(f"Deep{depth}", (Deep,), {})
        def fail(kind):
            if kind == "told":
                raise Told(5, 1)
            if kind == "grouped":
                raise Grouped("two failed", [ValueError(1), KeyError(2)])
            if kind == "forty":
                raise Deep("forty classes down")
            raise {"both": WeightError, "deep": Full, "memory": MemoryError, "key": KeyError}[kind]("no room")
    ''')
    k.passes('''
        from course.checks import assert_raises
        import builtins
        for expected in (TypeError, ValueError):
            assert_raises(expected, "fail('both')", fail, "both")
        for expected in (LookupError, builtins.MemoryError, RuntimeError):
            assert_raises(expected, "fail('deep')", fail, "deep")
        assert_raises(RuntimeError, "fail('memory')", fail, "memory")
        try:
            fail("memory")
        except builtins.MemoryError:
            raise AssertionError("the student's MemoryError became Python's")
        except RuntimeError as error:
            assert type(error).__name__ == "MemoryError" and str(error) == "no room"
        try:
            fail("key")
        except builtins.KeyError:
            raise AssertionError("the student's KeyError became Python's")
        except Exception as error:
            assert type(error).__name__ == "KeyError" and type(error).__module__ == "kernel"
        try:
            fail("told")
        except RuntimeError as error:  # Its own __str__ speaks, as in process; its args are its args.
            assert str(error) == "asked for 5, 1 free" and error.args == ("out of blocks",), (str(error), error.args)
        assert_raises(RuntimeError, "fail('grouped')", fail, "grouped")  # An exception group: of its other bases.
        assert_raises(TypeError, "fail('forty')", fail, "forty")  # Python's own class, past the first 32 of the MRO.
    ''')


def test_an_object_of_the_test_lent_to_the_kernel_answers_the_student_s_checks_as_in_one_process(kernel):
    """A test object lent to the student's code answers what the student's code may ask of its kind as in one
    process: ``isinstance`` with a class the kernel has too (the course's model, a torch module, also for a class of
    the test's own derived from one), the special methods its class has and no others (``callable``,
    ``hasattr(x, "__iter__")``, ``collections.abc`` checks, ``in`` through ``__iter__``), and a weak reference; its
    proxy's type stays the proxy's."""
    k = kernel('''
        import collections.abc
        import weakref
        import torch
        from course.model import TinyDecoder
        def kinds(model):
            if not isinstance(model, torch.nn.Module):
                raise TypeError("model must be a torch.nn.Module")
            return [isinstance(model, TinyDecoder), isinstance(model, torch.nn.Linear),
                    issubclass(model.__class__, torch.nn.Module), type(model) is model.__class__]
        def shape(thing):
            return [isinstance(thing, torch.nn.Module), type(thing).__name__, callable(thing),
                    hasattr(thing, "__iter__"), hasattr(thing, "__len__"), isinstance(thing, collections.abc.Iterable),
                    isinstance(thing, collections.abc.Sized), isinstance(thing, collections.abc.Container)]
        def holds(thing, item):
            return item in thing
        def remembered(thing):
            return weakref.ref(thing)() is thing
    ''')
    k.passes('''
        import torch
        from course.model import TinyDecoder
        assert kinds(torch.nn.Linear(2, 2)) == [False, True, True, False]
        model = TinyDecoder(vocab_size=8, num_layers=1, num_heads=1, head_dim=4, seed=1)
        assert kinds(model) == [True, False, True, False]
        class Counting(TinyDecoder):
            pass
        counting = Counting(vocab_size=8, num_layers=1, num_heads=1, head_dim=4, seed=1)
        assert kinds(counting) == [True, False, True, False]
        class OnlyIn:
            def __contains__(self, item):
                return item == 3
        class Listed:
            def __iter__(self):
                return iter([1, 2])
        class Factory:
            def __call__(self):
                return 1
            def __len__(self):
                return 0
        assert shape(OnlyIn()) == [False, "OnlyIn", False, False, False, False, False, True]
        assert shape(Listed()) == [False, "Listed", False, True, False, True, False, False]
        assert shape(Factory()) == [False, "Factory", True, False, True, False, True, False]
        assert holds(OnlyIn(), 3) and holds(Listed(), 2) and not holds(Listed(), 3)
        assert remembered(OnlyIn())
    ''')


def test_a_tensor_that_crossed_can_still_grow_in_place(kernel):
    """A tensor's storage stays resizable after it crossed, on both sides, as in one process: a student's buffer that
    came with its object, or that the test read, grows with ``resize_`` or an ``out=`` of another size; so does the
    test's tensor that the student's code read. (Crossing once made a NumPy array over the memory, which torch
    marks as a storage that can never be resized.) A shared tensor may change its dtype in place too (``.data``)."""
    k = kernel('''
        import torch
        class Costs:
            def __init__(self):
                self.buffer = torch.empty(0, dtype=torch.float64)
            def total(self, tokens):
                self.buffer.resize_(tokens.shape)
                torch.mul(tokens.to(torch.float64), 2.0, out=self.buffer)
                return self.buffer.clone()
            def joined(self, parts):
                torch.cat(parts, out=self.buffer)
                return self.buffer
            def widen(self):
                self.buffer.data = self.buffer.data.to(torch.float32)  # The same tensor, another dtype.
                return self.buffer
            def reinterpret(self):
                self.buffer.data = self.buffer.data.view(torch.int32)  # The same memory read as another dtype.
                return int(self.buffer.sum())
        def grow(tensor, n):
            return tensor.resize_(n).shape[0]
    ''')
    k.passes('''
        import torch
        costs = Costs()
        assert costs.buffer.numel() == 0
        assert costs.total(torch.tensor([1, 2])).tolist() == [2.0, 4.0]
        assert costs.total(torch.tensor([1, 2, 3, 4])).tolist() == [2.0, 4.0, 6.0, 8.0]
        held = costs.joined([torch.ones(2, dtype=torch.float64), torch.zeros(5, dtype=torch.float64)])
        assert held.shape == (7,) and costs.joined([torch.ones(9, dtype=torch.float64)]).shape == (9,)
        mine = torch.zeros(2)
        assert grow(mine, 6) == 6 and mine.shape == (6,)
        mine.resize_(10)
        assert mine.untyped_storage().resizable()
        widened = costs.widen()
        assert widened.dtype == torch.float32 and costs.buffer is widened
        # A dtype of the same size changes neither the memory, nor the shape, nor the version (red team 2026-12-07).
        costs.reinterpret()
        assert costs.buffer.dtype == torch.int32 and costs.buffer is widened, costs.buffer.dtype
    ''')




def test_what_runs_when_the_test_lets_go_of_an_object_runs_before_the_test_s_next_line(kernel):
    """An object whose class runs code when it is freed (a ``__del__``, a generator's ``finally``) is freed in the
    kernel as soon as the test lets go of it, as in one process, not with the judge's next message: what that code
    changes in the test's values shows at the test's next check (red team, round 14: a temporary policy whose
    ``__del__`` changed the cache it had ranked earned 3.2's and 3.3's 7 points judged). Once the student's code has
    such a class or a generator function, every object the test lets go of is freed at once: one that has no such code
    may hold one that has (a guard in a closure, a generator in an attribute)."""
    k = kernel('''
        class Policy:
            def pick(self, cache):
                self.cache = cache
                return min(cache)
            def __del__(self):
                self.cache["a"] += 1
        def steps(log):
            try:
                yield 1
            finally:
                log.append("closed")
        class Guard:
            def __init__(self, cache):
                self.cache = cache
            def __del__(self):
                self.cache["b"] += 1
        class Holder:
            def pick(self, cache):
                guard = Guard(cache)
                self.keep = lambda: guard  # Held in a closure: the guard never crosses.
                return min(cache)
            def hold(self, cache):
                def held():
                    try:
                        yield
                    finally:
                        cache["b"] += 10
                self.generator = held()
                next(self.generator)
    ''')
    k.passes('''
        held = {"a": 1, "b": 2}
        assert Holder().pick(held) == "a"
        assert held == {"a": 1, "b": 3}, held
        Holder().hold(held)
        assert held == {"a": 1, "b": 13}, held
        cache = {"a": 1, "b": 2}
        assert Policy().pick(cache) == "a"
        assert cache == {"a": 2, "b": 2}, cache
        policy = Policy()
        policy.pick(cache)
        policy.note = "written by the test"
        del policy
        assert cache == {"a": 3, "b": 2}, cache
        log = []
        assert next(steps(log)) == 1
        assert log == ["closed"], log
    ''')


def test_a_finalizer_let_go_as_a_test_ends_costs_no_time_and_one_that_hangs_fails_its_test(kernel):
    """Objects with a ``__del__`` that the test lets go of once its code has ended (its names cleared, the test's
    tables reset) cross with the end of the test: no request after its last one, so neither a wait for a kernel that
    serves the next test already nor a lost next test (red team, round 14: a BlockAllocator holding a helper with an
    empty ``__del__`` hung the harness; ``x.pop()`` as a test's last line cost its time limit and failed the next
    test). A ``__del__`` that never returns, run by the test's last line, fails that test on its time limit, as the
    cell would in one process, where the judge had let it pass."""
    import time

    k = kernel('''
        class Lease:
            def __del__(self):
                pass
        class Holder:
            def __init__(self):
                self.lease = Lease()
        def leases():
            return [Lease(), Lease()]
    ''', timeout=3)
    started = time.monotonic()
    k.passes("holder = Holder()\nassert holder.lease is not None")
    k.passes("held = leases()\nheld.pop()")
    k.passes("assert 1")
    assert time.monotonic() - started < 2, "a finalizer let go as a test ended cost a time limit"
    stuck = kernel('''
        import time
        class Stuck:
            def __del__(self):
                time.sleep(3)
        def value():
            return 1
    ''', timeout=1)
    verdict = stuck.run("s = Stuck()\nassert value() == 1\ndel s")
    assert not verdict.passed and "did not finish within" in verdict.message, verdict


def test_the_judge_s_own_computation_ends_at_the_test_s_time_limit(kernel):
    """A lent object of the test runs in the judge: the student's code can give it an argument that costs it minutes
    (red team, 2026-12-07: ``ToyCache.unpin`` of 100,000 equal hashes, quadratic in them, kept a judge 30 s per test
    cell past a 10 s limit, and longer lists would have held it for hours). The judge ends the test at its time limit
    wherever it computes, as it does while it waits for the kernel; so does the test's own code."""
    import time

    k = kernel('''
        def hand(stand_in, size):
            return stand_in.count(list(range(size)))
    ''', timeout=1)
    started = time.monotonic()
    verdict = k.run('''
        class StandIn:
            def count(self, items):
                return sum(items.count(item) for item in items)
        hand(StandIn(), 200_000)
    ''')
    assert not verdict.passed and "did not finish within 1 s" in verdict.message, verdict
    assert time.monotonic() - started < 3, f"the test ended {time.monotonic() - started:.1f} s after it started"
    started = time.monotonic()
    verdict = kernel("", timeout=1).run("total = 0\nwhile True:\n    total += 1")
    assert not verdict.passed and "did not finish within 1 s" in verdict.message, verdict
    assert time.monotonic() - started < 3, f"the test ended {time.monotonic() - started:.1f} s after it started"


@pytest.mark.parametrize(("source", "runs"), [
    ("class Lease:\n    def __del__(self):\n        pass", True),
    ("class Lease:\n    __module__ = 'helpers'\n    def __del__(self):\n        pass", True),
    ("import dataclasses\nLease = dataclasses.make_dataclass('Lease', ['x'], namespace={'__del__': print})", True),
    ("def steps(log):\n    try:\n        yield 1\n    finally:\n        log.append(1)", True),
    ("def steps(inner):\n    yield from inner", True),
    ("def make():\n    def steps():\n        with open('x'):\n            yield 1\n    return steps()", True),
    ("def make():\n    def steps():\n        try:\n            yield\n        finally:\n            pass\n"
     "    return steps\nTOOLS = {'steps': make()}\ndel make", True),
    ("def total(xs):\n    return sum(x for x in xs)", False),
    ("import tempfile\nclass Plain:\n    def size(self):\n        return 1", False),
    ("def lease():\n    class Lease:\n        def __del__(self):\n            pass\n    return Lease()", True),
], ids=["a __del__", "a __del__ with another module's name", "make_dataclass", "a generator's finally",
        "yield from", "a with in a nested generator", "a generator kept in a dict", "a generator expression",
        "no finalizer", "a class statement in a function"])
def test_the_kernel_knows_when_the_student_s_code_may_run_as_an_object_is_freed(source, runs):
    """What turns on freeing every object the test lets go of at once (agent._runs_code_when_freed): the
    student's classes with a __del__, however made, and generator functions that handle exceptions or delegate,
    however kept (red team, round 14), and functions whose class statements make such classes (no hook watches
    class statements: red team, round 17); a plain generator expression or a library class is not counted."""
    from grading.judge.agent import _runs_code_when_freed

    namespace = {"__name__": "__main__"}
    exec(compile(source, "<cell>", "exec"), namespace)
    assert _runs_code_when_freed(namespace) is runs

def test_a_shared_tensor_negated_or_conjugated_in_place_reaches_the_other_side(kernel):
    """``torch._C._set_neg`` and ``_set_conj`` flip what a tensor reads without writing its memory, bumping its
    version or changing its shape or dtype: the test's tensor that the student's code negated in place reads negated
    in the test, as in one process, and so does a student's buffer that the test read before (red team, round 14:
    an answer that negated the test's attention in place had kept 7.3's "changes none of its arguments" points)."""
    k = kernel('''
        import torch
        def negate(tensor):
            torch._C._set_neg(tensor, True)
            return None
        def conjugate(tensor):
            torch._C._set_conj(tensor, True)
            return None
        class Held:
            def __init__(self):
                self.values = torch.tensor([1.0, -2.0])
            def flip(self):
                torch._C._set_neg(self.values, True)
    ''')
    k.passes('''
        import torch
        attention = torch.tensor([[0.25, 0.75], [0.5, 0.5]])
        negate(attention)
        assert attention.tolist() == [[-0.25, -0.75], [-0.5, -0.5]], attention
        numbers = torch.tensor([1 + 2j, 3 - 1j])
        conjugate(numbers)
        assert numbers.tolist() == [1 - 2j, 3 + 1j], numbers
        held = Held()
        values = held.values
        assert values.tolist() == [1.0, -2.0]
        held.flip()
        assert values.tolist() == [-1.0, 2.0], values
    ''')

def test_a_torch_dispatch_or_function_mode_of_the_student_s_cannot_change_what_the_kernel_reports(kernel):
    """The kernel reads and writes the test's tensors with torch operations (``detach``, ``copy_``): a dispatch or
    function mode that the student's code entered and never left sees none of them, so the test reads what the
    student's code wrote (red team, 2026-12-07: a mode that answered the kernel's ``detach`` of an argument written in
    place with a copy of its old values kept 3.5's and 7.3's "changes none of its arguments" points)."""
    k = kernel('''
        import torch
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode
        KEPT, SEEN = {}, []
        aten = torch.ops.aten
        READS = {aten.detach.default, aten.alias.default, aten.clone.default, aten._to_copy.default, aten.view.default}
        class Hide(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                SEEN.append(str(func))
                if func in READS and args and id(args[0]) in KEPT and KEPT[id(args[0])][0] is args[0]:
                    return KEPT[id(args[0])][1]  # Reads of the argument it wrote give its old values.
                return func(*args, **(kwargs or {}))
        class Watch(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                SEEN.append(getattr(func, "__name__", str(func)))
                return func(*args, **(kwargs or {}))
        def overwrite(tensor):
            if not KEPT:  # Entered in the thread that serves the judge (this harness's kernel), never left.
                Hide().__enter__()
                Watch().__enter__()
            KEPT[id(tensor)] = (tensor, tensor.clone())
            tensor.fill_(7.0)
            SEEN.clear()
        def seen():
            return list(SEEN)
    ''')
    k.passes('''
        import torch
        scores = torch.tensor([1.0, 2.0, 3.0])
        overwrite(scores)
        assert scores.tolist() == [7.0, 7.0, 7.0], scores
        assert seen() == [], seen()
    ''')


def test_a_finalizer_that_a_collection_runs_cannot_undo_a_change_before_the_judge_sees_it(kernel):
    """An object in a reference cycle is freed, and its ``__del__`` run, by the collector, at an allocation that the
    student's code can count: the kernel holds the collector off from the moment that code returns until its reply
    is sent, so a finalizer that puts back a test's tensor runs after the change crossed, as the test's next line in
    one process reads the change (red team, 2026-12-07: 3.5's in-place write put back that way had kept its points)."""
    import gc

    k = kernel('''
        import gc
        class Undo:
            def __init__(self, tensor, saved):
                self.tensor, self.saved, self.me = tensor, saved, self
            def __del__(self):
                self.tensor.copy_(self.saved)
        def overwrite(tensor):
            saved = tensor.clone()
            tensor.fill_(7.0)
            Undo(tensor, saved)
            gc.set_threshold(1)  # The next allocation collects: the __del__ puts the tensor back.
    ''')
    threshold = gc.get_threshold()
    try:
        k.passes('''
            import torch
            scores = torch.tensor([1.0, 2.0])
            overwrite(scores)
            assert scores.tolist() == [7.0, 7.0], scores
        ''')
    finally:
        gc.set_threshold(*threshold)


def test_a_value_that_cannot_cross_by_value_is_lent_and_every_numpy_dtype_that_can_crosses(kernel):
    """NumPy values of every dtype whose string says all of it cross by value (datetimes and timedeltas with their
    unit, strings of any length); a record array, a sparse, nested or quantized tensor is lent as an object, as a
    student's object is, so that an object holding one still crosses with its ``__dict__``, where such a value
    broke the message (and a sparse tensor ended the kernel's serving)."""
    k = kernel('''
        import numpy as np
        import torch
        class Policy:
            def __init__(self):
                self.created = np.datetime64("2026-01-01")
                self.ttl = np.timedelta64(30, "s")
                self.name = np.str_("fair-quota policy " + "-" * 90)
                self.raw = np.zeros(2, dtype="S100")
                self.table = np.array([("a", 1.0)], dtype=[("tenant", "U32"), ("weight", "f8")])
                self.sparse = torch.eye(3).to_sparse()
                self.csr = torch.eye(3).to_sparse_csr()
                self.nested = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)])
                self.quantized = torch.quantize_per_tensor(torch.ones(2), 0.5, 0, torch.quint8)
                self.dates = np.array(["2026-01-01", "2026-02-01"], dtype="datetime64[D]")
            def total(self):
                return float(self.table["weight"].sum() + self.sparse.to_dense().sum() + len(self.name))
    ''')
    k.passes('''
        import numpy as np
        policy = Policy()
        assert policy.total() == 1.0 + 3.0 + 108
        assert policy.created == np.datetime64("2026-01-01") and policy.ttl == np.timedelta64(30, "s")
        assert policy.name.endswith("-") and len(policy.name) == 108 and policy.raw.dtype == np.dtype("S100")
        assert (policy.dates[1] - policy.dates[0]) == np.timedelta64(31, "D")
        assert len(policy.table) == 1 and policy.sparse.shape == (3, 3)
    ''')


def test_property_subclasses_str_keys_and_dead_weak_proxies_of_the_student_s_behave_as_in_one_process(kernel):
    """A class's property made with a subclass of ``property`` is a property to the test; a string of the student's
    class (a ``StrEnum`` member) finds the test's plain string in a dict or set (its hash comes as its plain value,
    which the judge hashes: Python salts string hashes in each process, which a kernel in this thread shares); a dead
    ``weakref.proxy`` in an object's ``__dict__`` crosses as an object (it ended the kernel's serving)."""
    from grading.judge.agent import object_hash

    k = kernel('''
        import enum
        import weakref
        class computed(property):
            """A read-only property."""
        class Block:
            def __init__(self):
                self.tokens = 0
            @computed
            def is_full(self):
                return self.tokens >= 4
        class Stat(enum.StrEnum):
            TOTAL = "total_blocks"
            FREE = "free_blocks"
        def summary():
            return {Stat.TOTAL: 8, Stat.FREE: 3}
        class Owner:
            pass
        class Holder:
            def __init__(self):
                self.owner = weakref.proxy(Owner())  # Dead at once: only the proxy held it.
                self.count = 1
            def again(self):
                return self
    ''')
    k.passes('''
        assert isinstance(Block.is_full, property) and not Block().is_full
        found = summary()
        assert set(found) == {"total_blocks", "free_blocks"} and found["total_blocks"] == 8
        holder = Holder()
        assert holder.again() is holder and holder.again().count == 1
    ''')

    class Stat(str):
        pass

    assert object_hash(Stat("total_blocks")) == ["total_blocks"] and object_hash("plain") == hash("plain")


def test_values_nested_deeper_than_a_message_may_be_are_lent_as_objects(kernel):
    """A student's state nested deeper than a message may nest (an undo history as a linked list of tuples, a trie of
    dicts, 200 levels) crosses with its object: what lies at the limit is lent as an object, which the test can
    still walk; the test's own deep values reach the student's code the same way."""
    k = kernel('''
        class History:
            def __init__(self):
                self.undo = None
                self.trie = {}
            def push(self, item):
                self.undo = (item, self.undo)
                node = self.trie
                for _ in range(len(self.items())):
                    node = node.setdefault("next", {})
                return self
            def items(self):
                found, node = [], self.undo
                while node is not None:
                    found.append(node[0])
                    node = node[1]
                return found
        def depth(chain):
            count = 0
            while chain is not None:
                count, chain = count + 1, chain[1]
            return count
    ''')
    k.passes('''
        history = History()
        for item in range(200):
            assert history.push(item) is history
        assert history.items() == list(range(199, -1, -1))
        node, count = history.undo, 0
        while node is not None:
            count, node = count + 1, node[1]
        assert count == 200
        chain = None
        for item in range(150):
            chain = (item, chain)
        assert depth(chain) == 150
    ''')


def test_a_test_s_function_seen_from_the_kernel_has_its_name_signature_and_defaults(kernel):
    """A test's subclass of a student's class is made in the kernel with stand-ins for the test's methods: they say
    the methods' names, qualified names, signatures and defaults, so that a student's ``__init_subclass__`` that
    checks them (``__defaults__``, ``__qualname__``, ``inspect.signature``) accepts the test's class, and a student's
    code that asks a function the test passed for its parameters gets them."""
    k = kernel('''
        import inspect
        class Policy:
            def __init_subclass__(cls, **kwargs):
                super().__init_subclass__(**kwargs)
                method = cls.select_victim
                if method.__defaults__ != (frozenset(),) or not method.__qualname__.endswith(".select_victim"):
                    raise TypeError(f"{cls.__name__}.select_victim must default protected to frozenset()")
                if list(inspect.signature(method).parameters) != ["self", "sequences", "protected"]:
                    raise TypeError("select_victim must take (sequences, protected)")
            def select_victim(self, sequences, protected=frozenset()):
                raise NotImplementedError
        def parameters(function):
            signature = inspect.signature(function)
            return ([p.name for p in signature.parameters.values()],
                    [p.default for p in signature.parameters.values() if p.default is not p.empty],
                    function.__defaults__, function.__kwdefaults__, function.__name__)
    ''')
    k.passes('''
        class First(Policy):
            def select_victim(self, sequences, protected=frozenset()):
                return next(iter(sorted(set(sequences) - set(protected))), None)
        assert First().select_victim({3: 1, 2: 1}) == 2
        def scorer(block, weight=2.0, *, scale=1):
            return block * weight * scale
        assert parameters(scorer) == (["block", "weight", "scale"], [2.0, 1], (2.0,), {"scale": 1}, "scorer")
    ''')


def test_a_lent_object_lists_its_attributes_and_says_its_class_s_module_and_docstring(kernel):
    """``dir()`` of a test object lent to the student's code lists its attributes; ``__doc__`` and ``__module__`` are
    its class's (its methods' docstrings too), and a lent function's are its own, as in one process (a student who
    checked ``"num_layers" in dir(model)`` or the model's docstring lost all of 7.6)."""
    k = kernel('''
        def describe(model, keep_fn):
            return ["num_layers" in dir(model), model.__doc__, model.__module__, model.forward.__doc__,
                    keep_fn.__doc__, keep_fn.__module__, keep_fn.__name__]
    ''')
    k.passes('''
        from course.model import TinyDecoder
        model = TinyDecoder(vocab_size=8, num_layers=1, num_heads=1, head_dim=4, seed=1)
        def keep_fn(scores, budget):
            """Keep the first budget slots."""
            return list(range(budget))
        found = describe(model, keep_fn)
        assert found == [True, TinyDecoder.__doc__, TinyDecoder.__module__, TinyDecoder.forward.__doc__,
                         keep_fn.__doc__, keep_fn.__module__, "keep_fn"], found
    ''')


def test_a_lent_object_s_methods_have_their_signatures(kernel):
    """A method of a test object lent to the student's code takes the test's method's parameters: what
    ``inspect.signature``, ``__code__.co_argcount`` and ``co_varnames``, ``__defaults__`` and ``__qualname__`` say
    is what they say in one process (3.4 answers that checked ``select_victim``'s parameters, to call an older
    policy without ``protected``, lost their points); a default that is a list is a copy of the test's (the test's
    own is what its method uses, and the student's code cannot change it); the proxy's class has the name and
    qualified name of the test's class."""
    k = kernel('''
        import inspect
        def parameters(policy):
            bound = inspect.signature(policy.select_victim)
            unbound = inspect.signature(type(policy).select_victim)
            code = type(policy).select_victim.__code__
            return ([(p.name, p.default) for p in bound.parameters.values() if p.default is not p.empty],
                    list(unbound.parameters),
                    str(inspect.signature(policy.note)), policy.select_victim([4, 2]), policy.note("x"),
                    inspect.signature(policy.note).parameters["into"].default,
                    [code.co_argcount, code.co_kwonlyargcount, code.co_varnames[:code.co_argcount]],
                    [policy.note.__defaults__, policy.select_victim.__kwdefaults__, policy.select_victim.__qualname__],
                    [type(policy).__name__, type(policy).__qualname__, policy.select_victim([5, 3], limit=1)])
        def older(policy, candidates):
            # A policy of an older interface takes no ``protected``.
            if policy.select_victim.__code__.co_argcount >= 3:
                return policy.select_victim(candidates, ())
            return policy.select_victim(candidates)
    ''')
    k.passes('''
        class Old:
            def select_victim(self, candidates):
                return max(candidates)
        class New:
            def select_victim(self, candidates, protected):
                return min(set(candidates) - set(protected))
        assert (older(Old(), [1, 2]), older(New(), [1, 2])) == (2, 1)
    ''')
    k.passes('''
        import inspect
        class Policy:
            def select_victim(self, candidates, *, protected=None, limit=3):
                return min(candidates)
            def note(self, text, into=[]):
                into.append(text)
                return text * 2
        policy = Policy()
        found = parameters(policy)
        assert Policy.note.__defaults__ == (["x"],)  # The test's own default got the call.
        assert found == ([("protected", None), ("limit", 3)],
                         ["self", "candidates", "protected", "limit"], "(text, into=[])", 2, "xx", [],
                         [2, 2, ("self", "candidates")],
                         [([],), {"protected": None, "limit": 3}, "Policy.select_victim"],
                         ["Policy", "Policy", 3]), found
    ''')


def test_a_student_s_object_and_a_test_s_object_compare_as_in_one_process(kernel):
    """Comparing an object of the student's with an object of the test, in either process and either order, asks
    each side's class once and falls back to identity, as in one process (both sides had asked the other's
    reflected comparison, back and forth until a RecursionError failed the test); ordering them is a TypeError."""
    k = kernel('''
        class Student:
            pass
        class Ranked:
            def __init__(self, rank):
                self.rank = rank
            def __eq__(self, other):
                return getattr(other, "rank", None) == self.rank
            def __lt__(self, other):
                return self.rank < other.rank
        def compare(policy):
            student = Student()
            try:
                student < policy
                ordered = True
            except TypeError:
                ordered = False
            return [student == policy, policy == student, student != policy, policy in [student], ordered,
                    Ranked(2) == policy, policy == Ranked(2), Ranked(1) < policy]
    ''')
    k.passes('''
        class Policy:
            rank = 2
        class Plain:
            pass
        assert compare(Policy()) == [False, False, True, False, False, True, True, True]
        student = Student()
        assert (student == Plain(), Plain() == student, student != Plain(), Ranked(2) == Policy()) == (
            False, False, True, True)
        try:
            Plain() < student
            raise AssertionError("ordered")
        except TypeError:
            pass
    ''')


def test_a_lent_object_kept_past_its_test_cell_compares_hashes_and_prints_as_in_one_process(kernel):
    """A student's code that keeps a test object in a global (the policy of the last call) and compares it with the
    next one, hashes it or prints it, in a later test cell, gets what one process gives: identity, the hash and
    the text the judge gave while it lent the object (a 3.4 answer with ``_PREVIOUS[0] == policy`` lost its
    points). Calling it or reading it still fails: its test has ended."""
    k = kernel('''
        KEPT = []
        def keep(policy):
            first = not KEPT
            KEPT.append(policy)
            if first:
                return [hash(policy), repr(policy), str(policy)]
            old = KEPT[0]
            return [old == policy, old != policy, policy == old, old == old, policy in KEPT[:1], old in KEPT,
                    hash(old), repr(old), f"{old}", len({old, policy}), sorted(dir(old)) == sorted(object.__dir__(old))]
        def use_old(name):
            try:
                return getattr(KEPT[0], name)()
            except RuntimeError as error:
                return str(error)
    ''')
    first = k.run('''
        class Policy:
            def pick(self):
                return 1
        policy = Policy()
        assert keep(policy) == [hash(policy), repr(policy), str(policy)]
    ''')
    assert first.passed, first.message
    k.passes('''
        class Policy:
            def pick(self):
                return 2
        found = keep(Policy())
        assert found[:6] == [False, True, False, True, False, True], found
        assert found[9:] == [2, True], found
        assert "Policy object at" in found[7] and found[7] == found[8], found
        assert "test that has ended" in use_old("pick")
    ''')


def test_vars_of_a_lent_object_is_a_copy_of_its_public_attributes(kernel):
    """``vars(policy)`` and ``policy.__dict__`` in the student's code (a log line that prints them) give a copy of
    the test object's public attributes, never its private ones; changing the copy leaves the object as it was."""
    k = kernel('''
        def log_line(policy):
            found = vars(policy)
            found["step"] = 99
            return [sorted(found), policy.__dict__ == {"name": "lru", "step": 3}, policy.step]
    ''')
    k.passes('''
        class Policy:
            def __init__(self):
                self.name, self.step, self._log = "lru", 3, []
        policy = Policy()
        assert log_line(policy) == [["name", "step"], True, 3]
        assert policy.step == 3 and policy._log == []
    ''')


def test_what_an_error_s_traceback_kept_is_let_go_before_the_reply(kernel):
    """When the student's code raises, the local variables its traceback kept are let go before the error
    reaches the test, as the test's ``except`` lets them go in one process: a lease's ``__del__`` or a generator's
    ``finally`` that unpins, or puts the clock back, has run when the test's next line reads the state (a 6.3
    ``serve`` and a 5.2 ``touch`` lost points), also for a step of a replay."""
    k = kernel('''
        class Lease:
            def __init__(self, cache, block):
                self.cache, self.block = cache, block
                cache.pin(block)
            def __del__(self):
                self.cache.unpin(self.block)
        def serve(cache, block, model=None):
            lease = Lease(cache, block)
            def pinned():
                cache.pin(block + 1)
                try:
                    yield
                finally:
                    cache.unpin(block + 1)
            session = pinned()
            next(session)
            if model is not None:
                return model(block)  # The test's model raises: its error comes back through the judge's reply.
            raise RuntimeError("the model raised")
        class Clock:
            def __init__(self):
                self.time = 0
            def touch(self, key):
                undo = Undo(self)
                self.time += 1
                if not key:
                    raise ValueError("an empty key")
                undo.committed = True
                return self.time
        class Undo:
            def __init__(self, owner):
                self.owner, self.time, self.committed = owner, owner.time, False
            def __del__(self):
                if not self.committed:
                    self.owner.time = self.time
    ''')
    k.passes('''
        from course.checks import assert_raises, assert_steps
        class Cache:
            def __init__(self):
                self.pinned = []
            def pin(self, block):
                self.pinned.append(block)
            def unpin(self, block):
                self.pinned.remove(block)
        cache = Cache()
        assert_raises(RuntimeError, "serve", serve, cache, 7)
        assert cache.pinned == [], cache.pinned
        def broken_model(block):
            raise RuntimeError("out of memory")
        assert_raises(RuntimeError, "serve with a model that raises", serve, cache, 3, broken_model)
        assert cache.pinned == [], cache.pinned
        clock = Clock()
        assert clock.touch("a") == 1
        assert_raises(ValueError, "touch('')", clock.touch, "")
        assert clock.time == 1, clock.time
        assert_raises(ValueError, "touch('') in a replay", assert_steps, clock, [([("touch", ("b",))], 2, "touch('b')"),
                                                                               ([("touch", ("",))], None, None)])
        assert clock.time == 2, clock.time
    ''')


def test_a_student_s_del_and_hash_may_call_the_test_s_objects(kernel):
    """A student's ``__del__`` that calls an object of the test runs when the test lets go of the object, and its
    calls are answered; a ``__hash__`` that calls one gives the test the hash when the test asks for it. Through
    the judge the first hung the kernel until the test's time limit (the object was freed, and its ``__del__``
    called the judge, in the middle of reading the judge's message, or after the test had ended), and the second
    ended the kernel (the hash was taken in the middle of making a message). The kernel hears that the test let go
    of an object with the judge's next message, where one process frees it at once."""
    k = kernel('''
        class Cache:
            def __init__(self, tier):
                self.tier = tier
            def __del__(self):
                self.tier.insert("closed")
            def __hash__(self):
                return hash(len(self.tier))
            def __eq__(self, other):
                return self is other
    ''')
    k.passes('''
        class Tier:
            def __init__(self):
                self.blocks = []
            def insert(self, block):
                self.blocks.append(block)
            def __len__(self):
                return 3
        tier = Tier()
        cache = Cache(tier)
        assert hash(cache) == hash(3) and len({cache, cache}) == 1
        cache = None
        Cache(Tier())  # The judge's next message says that the test let go of it (in one process: at once).
        assert tier.blocks == ["closed"], tier.blocks
        last = Cache(tier)
    ''')
    k.passes('''
        class Other:
            def insert(self, block):
                pass
            def __len__(self):
                return 0
        assert hash(Cache(Other())) == hash(0)  # The kernel still serves: the first test's objects were let go.
    ''')


def test_the_student_s_threads_may_call_the_test_s_objects_at_once(kernel):
    """Two of the student's threads that call objects of the test at the same time (a worker that fetches while
    the main thread reads) each get their own answer, as in one process (the messages of the two had mixed on
    the one connection: a protocol error, then the test's time limit)."""
    k = kernel('''
        import concurrent.futures
        def fetch_both(cache, model, blocks):
            with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
                fetched = [pool.submit(cache.get_kv, block) for block in blocks]
                devices = [model.device for _ in blocks]
                return [future.result() for future in fetched], devices
    ''')
    k.passes('''
        class Cache:
            def get_kv(self, block):
                total = 0
                for step in range(2000):
                    total += step % 7
                return [block, total]
        class Model:
            device = "cpu"
        found = fetch_both(Cache(), Model(), list(range(12)))
        assert found == ([[block, sum(step % 7 for step in range(2000))] for block in range(12)], ["cpu"] * 12), found
    ''')


def test_a_lent_object_is_copied_as_in_one_process(kernel):
    """``copy.copy`` and ``copy.deepcopy`` of a test object in the student's code give another object of the test,
    which answers as the original did and whose changes leave the original as it was; a deep copy of a student's
    structure that holds it copies it too."""
    k = kernel('''
        import copy
        def shallow(policy):
            twin = copy.copy(policy)
            return [twin is policy, twin.pick([3, 1, 2]), twin.advance(), policy.step]
        def deep(policy, blocks):
            trial_blocks, trial_policy = copy.deepcopy((blocks, policy))
            trial_blocks.append(9)
            return [trial_policy is policy, trial_policy.advance(), trial_policy.advance(), policy.step, blocks]
    ''')
    k.passes('''
        class Policy:
            def __init__(self):
                self.step = 0
            def pick(self, values):
                return min(values)
            def advance(self):
                self.step += 1
                return self.step
        policy = Policy()
        assert shallow(policy) == [False, 1, 1, 0]
        assert policy.step == 0
        blocks = [1, 2]
        assert deep(policy, blocks) == [False, 1, 2, 0, [1, 2]]
        assert policy.step == 0 and blocks == [1, 2]
    ''')


def test_a_name_like_string_from_the_test_is_the_student_s_literal(kernel):
    """Python interns a string constant made of letters, digits and underscores, so that in one process a student's
    ``policy is "lru"`` holds for the test's literal "lru" (a mistake that works); it holds through the judge too.
    Other strings are not interned, as in one process. (A name-like string that the test computes is interned when it
    crosses, where in one process it is not: the README lists this difference.)"""
    k = kernel('''
        def named(policy, options):
            return [policy is "lru", options[0] is "lfu", options[1] is "not a name"]
    ''')
    k.passes('''
        assert named("lru", ["lfu", "not a name"]) == [True, True, False]
    ''')


def test_the_kernel_counts_torch_operations_for_the_checks(kernel):
    k = kernel('''
        import torch
        def vectorized(x):
            return (x * 2).sum()
        def looped(x):
            return sum(v * 2 for v in x)
        def listed(x):
            return sum(v * 2 for v in x.tolist())
        class Table:
            def __init__(self):
                self.hits = torch.zeros(4)
            def victim(self):
                return int(torch.argmin(self.hits))
    ''')
    k.passes('''
        import torch
        from course.checks import assert_no_python_loop, count_torch_calls
        assert_no_python_loop(vectorized, (torch.ones(8),), (torch.ones(4096),), "vectorized")
        try:
            assert_no_python_loop(looped, (torch.ones(8),), (torch.ones(512),), "looped")
        except AssertionError as error:
            assert "loops over entries" in str(error)
        else:
            raise AssertionError("a Python loop must be caught")
        try:
            assert_no_python_loop(listed, (torch.ones(8),), (torch.ones(512),), "listed")
        except AssertionError as error:
            assert "loops over entries" in str(error)
        else:
            raise AssertionError("a Python loop over .tolist() must be caught: the kernel counts as course.checks does")
        table = Table()
        def victim_of(hits, table):
            table.hits = hits
            return table.victim()
        result, counted = count_torch_calls(victim_of, torch.tensor([3.0, 1.0]), table)
        assert result == 1 and counted >= 1, counted
    ''')


def test_names_resolve_to_builtins_and_trusted_imports_before_the_kernel(kernel):
    k = kernel('''
        import math
        len = lambda value: 0
        torch = "rebound by the student"
        SEED = 5
        def rebind():
            global SEED
            SEED = 6
    ''')
    k.passes('''
        assert len([1, 2]) == 2, "the judge's builtins win"
        assert torch.tensor([1]).tolist() == [1], "a trusted import wins"
        assert SEED == 5
        rebind()
        assert SEED == 6, "a rebinding in the kernel is seen"
    ''')


_FILL_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def _fill(out_ptr, value, COUNT: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, COUNT), tl.full([COUNT], value, tl.float32))


def fill(out, value):
    _fill[(1,)](out, value, COUNT=4)
'''


def test_triton_launches_are_counted_in_the_kernel_and_their_writes_cross(kernel, tmp_path, monkeypatch):
    # The interpreter writes a kernel's results back through .data, which leaves the version counter as it was.
    # (A test's own function that launches through the student's is counted by both sides' counters here, where
    # the kernel is a thread of the judge's process; grading counts it in the kernel's process only.)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "fill_kernel.py").write_text(_FILL_KERNEL)
    kernel('''
        import torch
        from fill_kernel import fill
        class Pool:
            def __init__(self):
                self.cache = torch.zeros(4)
            def fill(self, value):
                fill(self.cache, value)
    ''').passes('''
        import torch
        from course.kernels import count_launches
        out = torch.zeros(4)
        assert count_launches(fill, out, 2.0) == (None, 1)
        assert out.tolist() == [2.0] * 4, out
        fill(out, 3.0)
        assert out.tolist() == [3.0] * 4, out
        pool = Pool()
        cache = pool.cache
        assert count_launches(pool.fill, 5.0) == (None, 1)
        assert cache.tolist() == [5.0] * 4 and pool.cache is cache, cache
    ''')


def test_an_object_the_test_reads_again_and_lets_go_at_once_is_forgotten_on_both_sides(kernel):
    # Reading the entry again after the kernel ran makes its __dict__ eager (promoted); letting go of the entry
    # before the next message drops that pair: the kernel must not be told to promote a pair it was told to drop.
    kernel('''
        class Entry:
            def __init__(self, value):
                self.value = value
        def tick():
            return 0
    ''', timeout=5).passes('''
        for value in range(5):
            entry = Entry(value)
            assert entry.value == value
            tick()
            assert entry.value == value
            del entry
            assert tick() == 0
    ''')


def test_the_student_calls_a_method_of_a_test_object_in_one_request(kernel):
    """A method of a test object's class is called from the kernel in one request, not read and then called;
    what is not such a method (a data attribute, an attribute of the object that shadows a method, a property)
    is still read first, and a method taken without a call works when called later."""
    k = kernel('''
        def drive(tier, blocks):
            for block in blocks:
                if block not in tier:
                    tier.insert(block)
            return tier.capacity, tier.shadowed, tier.size, len(tier)
        def later(tier):
            insert = tier.insert
            return insert(99)
    ''')
    k.passes('''
        class Tier:
            def __init__(self, capacity):
                self.capacity, self.blocks, self.shadowed = capacity, [], "own"
            def __contains__(self, block):
                return block in self.blocks
            def __len__(self):
                return len(self.blocks)
            def insert(self, block):
                self.blocks.append(block)
                return len(self.blocks)
            def shadowed(self):
                raise AssertionError("the object's own attribute shadows this method")
            @property
            def size(self):
                return len(self.blocks) * 10
        tier = Tier(4)
        assert drive(tier, list(range(40))) == (4, "own", 400, 40)
        assert tier.blocks == list(range(40))
        assert later(tier) == 41 and tier.blocks[-1] == 99
    ''')
    # drive: one request, 40 "in" and 40 insert callbacks, five reads; later: one request and one call.
    assert k.judge.crossings < 100, k.judge.crossings


def test_a_tensor_crosses_with_its_autograd_and_inference_flags(kernel):
    k = kernel('''
        import torch
        with torch.inference_mode():
            FROZEN = torch.zeros(2, 3)
        LEAF = torch.zeros(2, 3, requires_grad=True)
        RESULT = LEAF * 2
        def made_under_inference_mode():
            with torch.inference_mode():
                return torch.ones(2)
        def flags(tensor):
            return [tensor.requires_grad, tensor.is_leaf, tensor.is_inference()]
    ''')
    k.passes('''
        import torch
        assert FROZEN.is_inference() and not FROZEN.requires_grad
        assert LEAF.requires_grad and LEAF.is_leaf and RESULT.requires_grad and not RESULT.is_leaf
        assert made_under_inference_mode().is_inference()
        for tensor, message in ((FROZEN, "Inplace update to inference tensor"), (LEAF, "leaf Variable")):
            try:
                tensor[0, 0] = 1.0  # Refused, as in the student's process.
            except RuntimeError as error:
                assert message in str(error), error
            else:
                raise AssertionError(f"a write into {tensor} must be refused as in one process")
        RESULT[0, 0] = 5.0  # An operation's result may be written in place.
        with torch.no_grad():
            assert flags(torch.ones(2)) == [False, True, False]
        assert flags(torch.ones(2, requires_grad=True)) == [True, True, False]
        assert flags(torch.ones(2, requires_grad=True) * 3) == [True, False, False]
        with torch.inference_mode():
            frozen = torch.ones(2)
            frozen_grad = torch.ones(2, requires_grad=True)  # Torch allows both flags on one tensor.
        assert flags(frozen) == [False, True, True]
        assert flags(frozen_grad) == [True, True, True]
    ''')


def test_a_tensor_whose_values_negate_or_conjugate_its_memory_crosses_with_its_values(kernel):
    """A view made by ``_neg_view`` or ``conj`` keeps its base's memory and flips a bit: it crossed as a view of that
    memory, without the bit, so the test read the base's values (red team 2026-12-07: negated quotas earned 3/3 judged
    and 0/3 in process). Such a tensor crosses as its values, both ways; a view of it, and a view that clears the bit
    again, too."""
    k = kernel('''
        import torch
        def negated(values):
            return torch.tensor(values, dtype=torch.float64)._neg_view()
        def twice(values):
            return torch.tensor(values)._neg_view()._neg_view()[1:]
        def conjugated():
            return torch.tensor([1 + 2j, 3 - 4j]).conj()
        def kept():
            global held
            held = torch.tensor([5.0, 6.0])
            return held, held._neg_view()
        def read(tensor):
            return tensor.tolist()
    ''')
    k.passes('''
        import torch
        assert negated([25.0, 75.0]).tolist() == [-25.0, -75.0]
        assert twice([1.0, 2.0, 3.0]).tolist() == [2.0, 3.0]
        assert conjugated().tolist() == [1 - 2j, 3 + 4j]
        plain, flipped = kept()
        assert plain.tolist() == [5.0, 6.0] and flipped.tolist() == [-5.0, -6.0]
        assert read(torch.tensor([7.0, 8.0])._neg_view()) == [-7.0, -8.0]
    ''')


def test_the_student_s_code_that_makes_an_error_s_message_runs_only_when_the_test_reads_it(kernel):
    """An error whose message the student's code makes (a ``__str__`` of the student's class, or an argument that is
    not plain data) crosses with its message unread, and the judge asks for it when the test reads it: that code
    cannot undo what the failing call left before the judge looks (red team, 2026-12-07: an ``allocate_n`` that kept
    the blocks it took had its error's ``__str__`` give them back, and earned 2.2's points judged, none in process)."""
    k = kernel('''
        class Taken(RuntimeError):
            def __init__(self, box):
                super().__init__("taken")
                self.box = box
            def __str__(self):
                self.box.clear()  # Undoes what the failing call left.
                return f"took {len(self.box)}"
        class Undo:
            def __init__(self, box):
                self.box = box
            def __repr__(self):
                self.box.clear()
                return "Undo()"
        def take(box):
            box.append(1)
            raise Taken(box)
        def take_plainly(box):
            box.append(1)
            raise RuntimeError("took one", Undo(box))
        HASHED, NOTE = [], {"done": False}
        class Guard:
            def __del__(self):
                NOTE["done"] = True
        class Late(RuntimeError):
            def __hash__(self):
                HASHED.append(1)  # Nothing hashes the error in one process.
                return 1
            def __str__(self):
                return "the frame is gone" if NOTE["done"] else "the frame lives"
        def fail_late():
            guard = Guard()  # Its frame, held by the error's traceback, keeps it while the test holds the error.
            raise Late()
        def hashed():
            return len(HASHED)
    ''')
    k.passes('''
        for call in (take, take_plainly):
            box = []
            try:
                call(box)
            except RuntimeError:
                pass
            assert box == [1], (call, box)  # In one process nothing read the message: the block stays taken.
            try:
                call(box)
            except RuntimeError as error:
                message, kind = str(error), type(error).__name__
            assert box == [], (call, box)  # The test read it: the student's code ran then, as in one process.
            assert (kind, message) in (("Taken", "took 0"), ("RuntimeError", "('took one', Undo())")), (kind, message)
        try:
            fail_late()
        except RuntimeError as error:
            assert str(error) == "the frame lives", str(error)  # As in one process: the traceback holds the frame.
        assert hashed() == 0, hashed()
    ''')
    verdict = k.run('''
        take([])
    ''')
    assert not verdict.passed and verdict.message == "Taken: took 0", verdict.message


def test_the_judge_reads_a_class_of_the_student_s_without_running_its_code(kernel):
    """When a class first crosses, the kernel reads what it needs of it (its hooks, methods, data descriptors, name)
    from the classes' own dicts, through Python's own descriptors: a descriptor bound to a special name, or a value
    whose class has a ``__class__`` property, sees no lookup, as in one process where nothing reads them (red team,
    2026-12-07: a descriptor bound to ``__delattr__`` told the answer that it was judged)."""
    k = kernel('''
        SEEN = []
        class Hook:
            def __get__(self, obj, cls=None):
                SEEN.append("__get__")
                return object.__delattr__.__get__(obj, cls) if obj is not None else object.__delattr__
        class Shy:
            @property
            def __class__(self):
                SEEN.append("__class__")
                return Shy
        class Watched:
            __delattr__ = Hook()
            shy = Shy()
            def __init__(self):
                self.size = 3
        def make():
            return Watched()
        def seen():
            return list(SEEN)
    ''')
    k.passes('''
        made = make()
        assert made.size == 3
        assert seen() == [], seen()
    ''')


def test_a_metaclass_of_the_student_s_sees_no_lookup_of_the_kernel_s(kernel):
    """The kernel reads the classes of what crosses (objects, errors, the notebook's globals at each cell's start)
    by identity and through Python's own descriptors: a metaclass's ``__getattribute__``, ``__eq__`` or ``__hash__``
    never runs for it, as nothing reads them in one process (red team, 2026-12-07: a metaclass whose ``__name__``
    property gave back the blocks a failed ``allocate_n`` kept, and one whose ``__eq__`` told the answer it was
    judged, each earned 2.2's points judged)."""
    k = kernel('''
        SEEN, ARMED = [], []
        class Loud(type):
            def __getattribute__(cls, name):
                if ARMED:
                    SEEN.append(name)
                return type.__getattribute__(cls, name)
            def __eq__(cls, other):
                if ARMED:
                    SEEN.append("__eq__")
                return cls is other
            def __hash__(cls):
                if ARMED:
                    SEEN.append("__hash__")
                return id(cls)
        Kept = Loud("Kept", (), {"__init__": lambda self, size: setattr(self, "size", size)})
        Refused = Loud("Refused", (RuntimeError,), {})
        def make(size):
            ARMED.append(True)
            return [Kept(size), {"size": Kept(size + 1)}]
        def refuse():
            ARMED.append(True)
            raise Refused("no room", 3)
        def seen():
            ARMED.clear()
            return list(SEEN)
    ''')
    k.passes('''
        made = make(4)
        assert made[0].size == 4 and made[1]["size"].size == 5
        try:
            refuse()
        except RuntimeError as error:
            assert str(error) == "('no room', 3)" and type(error).__name__ == "Refused", (error, type(error))
        assert seen() == [], seen()
    ''')


def test_an_object_s_hash_of_the_student_s_runs_when_the_test_hashes_it(kernel):
    """An object whose class hashes with code of its own crosses without its hash, which the judge asks for when the
    test hashes it, as in one process; as a dict's key or a set's item, which the judge hashes as it reads them, it
    crosses with it (red team, 2026-12-07: a ``__hash__`` that noted its first call told the answer it was judged)."""
    k = kernel('''
        CALLS = []
        class Key:
            def __init__(self, name):
                self.name = name
            def __hash__(self):
                CALLS.append(self.name)
                return len(self.name)
            def __eq__(self, other):
                return self is other
        def make():
            return Key("alone")
        class Pair(tuple):
            pass  # Hashed as a tuple: its items' hashes, one of which is the student's.
        def keyed():
            key = Key("key")
            return key, {key: 1}, {key}
        def paired():
            return Pair((Key("paired"), 1))
        def calls():
            return list(CALLS)
    ''')
    k.passes('''
        alone = make()
        assert alone.name == "alone" and calls() == [], calls()
        assert hash(alone) == 5 and calls() == ["alone"], calls()
        key, table, members = keyed()
        assert table[key] == 1 and key in members and hash(key) == 3
        before = len(calls())
        pair = paired()
        assert len(calls()) == before, calls()
    ''')


def test_a_kernel_of_the_student_s_in_place_of_torch_s_own_cannot_change_what_the_kernel_reports():
    """The kernel reads a CPU tensor's values from its memory, at its strides, with no operation of torch's: a kernel
    the student's code registered for one (``torch.library``) never runs for it (red team, 2026-12-07: a ``detach``
    that gave back an argument's old values hid an in-place write from the judge)."""
    import torch

    from grading.judge.wire import flat_bytes

    written = torch.arange(12.0).reshape(3, 4)
    old = written.clone()
    written[0, 0] = 99.0
    library = torch.library.Library("aten", "IMPL")
    try:
        library.impl("detach", lambda tensor: old.clone() if tensor is written else tensor.view_as(tensor), "CPU")
        negated = written._neg_view()  # Its values are worked out from its memory too.
        for tensor, values in ((written, written.tolist()), (written.t(), written.t().tolist()),
                               (written[:, 1::2], written[:, 1::2].tolist()), (negated, (-written).tolist())):
            assert flat_bytes(tensor) == torch.tensor(values).reshape(-1).numpy().tobytes()
    finally:
        library._destroy()


def test_values_of_the_student_s_subclasses_cross_without_their_code_running(kernel):
    """What crosses as data is read through Python's own descriptors and only for Python's own types: a NumPy scalar
    type's subclass that says it is NumPy's, a read-only view of a dict subclass, a property subclass with parts of
    its own cross as the kernel's objects or by their own values, and none of their code runs (red team, 2026-12-07:
    each let an answer tell that it was judged)."""
    k = kernel('''
        import numpy, types
        SEEN = []
        class Scalar(numpy.int64):
            __module__ = "numpy"
            def tobytes(self, *args):
                SEEN.append("tobytes")
                return numpy.int64.tobytes(self, *args)
        class Table(dict):
            def items(self):
                SEEN.append("items")
                return dict.items(self)
        class Hook:
            def __get__(self, obj, cls=None):
                SEEN.append("fdel")
                return None
        class Prop(property):
            fdel = Hook()
        class Holder:
            size = Prop(lambda self: 3)
        def make():
            return [Scalar(7), types.MappingProxyType(Table(a=1)), types.MappingProxyType({"b": 2}), Holder]
        def seen():
            return list(SEEN)
    ''')
    k.passes('''
        scalar, wrapped, plain, holder = make()
        assert plain["b"] == 2 and holder().size == 3
        assert seen() == [], seen()
    ''')


def test_a_class_s_odd_dict_or_module_name_runs_no_code_when_the_kernel_reads_it(kernel):
    """The kernel reads class dicts key by key where a key is not a string (a lookup would compare it by its own
    ``__eq__``), a function's module only when it is a string, and what a module holds from its dict, never through
    its ``__getattr__`` (red team, 2026-12-07: each ran the student's code at the start of every judged cell)."""
    import sys
    import types

    module = types.ModuleType("course_test_lazy_module")
    seen = []
    module.__getattr__ = lambda name: seen.append(name)
    sys.modules[module.__name__] = module
    try:
        k = kernel('''
            import functools
            SEEN = []
            class Key:
                def __hash__(self):
                    return hash("__del__")
                def __eq__(self, other):
                    SEEN.append("__eq__")
                    return False
            Base = type("Base", (), {Key(): None})
            class Held(Base):
                def __init__(self):
                    self.size = 2
            class Origin:
                __module__ = Key()
            @functools.wraps(Origin())
            def helper():
                return 1
            class Elsewhere:
                __module__ = "course_test_lazy_module"
                __qualname__ = "Missing"
            def make():
                return Held(), Elsewhere()
            def seen():
                return list(SEEN)
            SEEN.clear()  # Making the classes compared the key, in one process too.
        ''')
        k.passes('''
            held, elsewhere = make()
            assert held.size == 2
            assert seen() == [], seen()
        ''')
        assert seen == [], seen
    finally:
        del sys.modules[module.__name__]
def test_a_key_s_hash_of_the_student_s_crosses_as_its_dict_or_set_stored_it(kernel):
    """A dict's key or a set's item whose hash is the student's Python code crosses with the hash its dict or set
    stored when it went in: no ``__hash__`` runs as it crosses (red team, round 17: a property read in ``__hash__``,
    a ``__getattr__`` or a ``fractions.Fraction`` subclass's told the answer that the judge hashed a key again). A
    tuple key of such objects is lent as an object with its stored hash; a frozenset key's items come with theirs. An
    OrderedDict's order is read from its memory too (iterating it hashes its keys), even one whose order and dict
    disagree (round 17)."""
    k = kernel('''
        import fractions
        from collections import OrderedDict
        CALLS = []
        class Key:
            def __init__(self, name):
                self.name = name
            @property
            def mark(self):
                CALLS.append(self.name)
                return len(self.name)
            def __hash__(self):
                return hash((self.mark, 0))
            def __eq__(self, other):
                return self is other
        class Ratio(fractions.Fraction):
            @property
            def _numerator(self):
                CALLS.append("ratio")
                return 3
            @_numerator.setter
            def _numerator(self, value):
                pass
        class Holder:
            def __init__(self):
                self.a, self.b, self.ratio = Key("a"), Key("b"), Ratio(3, 4)
                self.table = {self.a: 1, (self.a, self.b): 2, frozenset([self.b]): 3, self.ratio: 4}
                self.ordered = OrderedDict([(self.b, 5)])
                self.odd = OrderedDict([(self.a, 6)])
                dict.__setitem__(self.odd, "x", 7)  # Its order no longer holds every key of its dict.
                self.members = {self.a, (self.b, 1), (self.a, (self.b, "x"))}
        def calls():
            return list(CALLS)
        def lookup(holder, key):
            return holder.table[key]
    ''')
    k.passes('''
        holder = Holder()
        before = calls()
        table, ordered, members, odd = holder.table, holder.ordered, holder.members, holder.odd
        a, b = holder.a, holder.b
        assert calls() == before, ("a key's hash ran as its dict crossed", calls(), before)
        assert table[a] == 1 and ordered[b] == 5 and a in members
        assert table[holder.ratio] == 4
        assert calls() == before, "looking up a key that crossed ran its hash"
        pair = next(key for key in table if table[key] == 2)
        assert pair[0] is a and pair[1] is b and len(pair) == 2 and pair == (a, b)
        assert next(key for key in table if table[key] == 3) == frozenset([b])
        assert lookup(holder, (a, b)) == 2
        assert (b, 1) in members
    ''')


def test_an_ordered_dict_that_the_test_holds_crosses_every_change_of_its_order_values_and_keys(kernel):
    """An OrderedDict of plain keys is compared by its dict and then its order (iterating it hashes its keys, which
    runs no code for numbers and strings): a change of order alone, of a value alone, a key put back as an equal key
    of another type, or a key whose hash is the student's code, each crosses, on either side."""
    k = kernel('''
        from collections import OrderedDict
        CALLS = []
        class Key:
            def __hash__(self):
                CALLS.append("hash")
                return 1
        class Tiers:
            def __init__(self):
                self.order = OrderedDict.fromkeys([1, 2, 3])
            def touch(self, key):
                self.order.move_to_end(key)
            def put(self, key, value):
                self.order[key] = value
            def swap_key(self):
                del self.order[1]
                self.order[1.0] = "float"
            def swap_in_odd_key(self):
                self.key = Key()
                # Its length and its dict's values stay as they were: only a key is another.
                self.order[self.key] = self.order.pop(3)
                self.order.move_to_end(self.key, last=False)
            def read(self, key):
                return self.order[key]
        def calls():
            return len(CALLS)
    ''')
    k.passes('''
        tiers = Tiers()
        order = tiers.order
        tiers.touch(1)
        assert list(order) == [2, 3, 1]
        tiers.touch(2)
        assert list(order) == [3, 1, 2]
        tiers.put(3, "three")
        assert list(order.values()) == ["three", None, None] and list(order) == [3, 1, 2]
        tiers.swap_key()
        assert list(order) == [3, 2, 1.0] and type(list(order)[2]) is float and order[1] == "float"
        order.move_to_end(3)
        order[2] = "test"
        assert tiers.read(2) == "test"
        tiers.touch(2)
        assert list(order) == [1.0, 3, 2]
        other = Tiers()
        held = other.order
        hashed = calls()
        other.swap_in_odd_key()
        assert calls() == hashed + 2, "a key's hash of the student's ran as its OrderedDict crossed"
        assert len(held) == 3 and 3 not in held and list(held)[1:] == [1, 2]
        other.touch(1)
        assert list(held)[1:] == [2, 1]
        assert calls() == hashed + 2, "a key's hash of the student's ran as its OrderedDict crossed"
    ''')


def test_a_tensor_that_views_part_of_a_storage_with_no_base_that_can_own_it_keeps_its_layout_and_sharing(kernel):
    """A tensor whose ``_base`` cannot own its storage (``detach()`` drops it, an ``nn.Parameter``'s cannot cross as
    the owner) crosses as a view of a plain tensor over its whole storage, either way; one that crosses as a copy of
    its values (a negative view) keeps its strides, gaps included (red team, round 18: a pool's K and V halves of one
    tensor read as contiguous and unshared on the judge's side, and the test's writes into a cache block that the
    student's code handed out as a detached view missed the cache)."""
    k = kernel('''
        import torch
        class Pool:
            def __init__(self, how):
                both = torch.zeros(3, 2, 4)
                if how == "parameter":
                    both = torch.nn.Parameter(both, requires_grad=False)
                    self.k, self.v = both[..., :2], both[..., 2:]
                elif how == "negative":
                    self.k, self.v = both[..., :2]._neg_view(), both[..., 2:]._neg_view()
                elif how == "one view twice":
                    self.k, self.v = both[0].detach(), both[0].detach()
                else:
                    self.k, self.v = both[..., :2].detach(), both[..., 2:].detach()
                self.both = both
            def block(self, index):
                return self.k[index].detach()
            def k_sum(self):
                return float(self.k.sum())
        def fill_column(column, value):
            column.fill_(value)
        def on_one_storage():
            memory = torch.zeros(6, dtype=torch.int64).untyped_storage()
            return [torch.empty(0, dtype=torch.int64).set_(memory, offset, (2,)) for offset in (0, 1, 4)]
        def gapped():
            return torch.empty_strided((3,), (2,)).fill_(1.0)
    ''')
    k.passes('''
        import torch
        for how in ("detached", "parameter", "negative"):
            pool = Pool(how)
            k, v = pool.k, pool.v
            assert not k.is_contiguous() and k.stride() == (8, 4, 1) and k.shape == (3, 2, 2), (how, k.stride())
        for how in ("detached", "parameter"):
            pool = Pool(how)
            k, v = pool.k, pool.v
            k[1, 0, 1] = 5.0
            assert pool.k_sum() == 5.0 and float(v.sum()) == 0.0, how
            block = pool.block(2)
            block.fill_(2.0)
            assert pool.k_sum() == 13.0 and k[2].sum() == 8.0, how
        pool = Pool("one view twice")
        k, v = pool.k, pool.v
        k[1, 1] = 3.0
        assert v[1, 1] == 3.0, "two tensors over the same memory crossed as two copies"
        both = torch.zeros(4, 2)
        column = both[:, 1].detach()
        fill_column(column, 7.0)
        assert both[:, 1].tolist() == [7.0] * 4 and both[:, 0].tolist() == [0.0] * 4
        first, second, third = on_one_storage()
        first[1] = 5
        assert second[0] == 5 and third.tolist() == [0, 0]
        ones = gapped()
        assert ones.stride() == (2,) and not ones.is_contiguous() and ones.tolist() == [1.0] * 3
    ''')


def test_views_of_another_dtype_or_with_negative_bits_cross_as_views_and_sharing_that_cannot_is_refused(kernel):
    """A view of another dtype (``Tensor.view(dtype)``) and a view whose values negate its memory (``_neg_view``)
    cross as views of their storage's owner, with their dtype and bits, so that writes on either side show in both
    (red team, round 18: K and V as float views of one uint8 tensor, negated views of one tensor, or tensors on one
    storage of an odd number of bytes had crossed as copies, and the test's write into one never showed in the
    other). Memory that no tensor can own whole (slices that require grad of an ``nn.Parameter``) is not sent as two
    copies that share it, nor are two storage objects over one memory (``torch.from_numpy``: red team, round 18): the
    crossing fails with the wire's error. A tensor that the test let go of stays shared while a ``detach()``ed view
    of it in the test holds its memory."""
    k = kernel('''
        import torch
        KEPT = {}
        class Pool:
            def __init__(self, how):
                if how == "uint8":
                    self.raw = torch.zeros(32, dtype=torch.uint8)
                    self.k = self.raw.view(torch.float32)
                    self.v = self.raw[16:].view(torch.float32)
                elif how == "negative":
                    self.k = torch.zeros(4)
                    self.v = torch._neg_view(self.k)
                elif how == "odd storage":
                    memory = torch.zeros(17, dtype=torch.uint8).untyped_storage()
                    self.k = torch.empty(0).set_(memory, 0, (4,))
                    self.v = torch.empty(0).set_(memory, 0, (4,))
                elif how == "numpy":
                    import numpy
                    memory = numpy.zeros(8, dtype=numpy.float32)
                    self.k, self.v = torch.from_numpy(memory[:4]), torch.from_numpy(memory[2:6])
                else:
                    weights = torch.nn.Parameter(torch.zeros(8))
                    self.k, self.v = weights[:4], weights[2:6]
            def total(self):
                return float(self.k.sum()), float(self.v.sum())
        def flipped_rows():
            KEPT["x"] = torch.arange(8, dtype=torch.int32)
            return torch._neg_view(KEPT["x"]).unsqueeze(0).expand(2, 8)
        def read_x():
            return KEPT["x"].tolist()
        def alias_rows(pool):
            import numpy
            return torch.from_numpy(pool.numpy()[1:3])
        def numpy_halves():
            import numpy
            memory = numpy.zeros(8, dtype=numpy.float32)
            return torch.from_numpy(memory[:4]), torch.from_numpy(memory[4:])
        def the_x():
            return KEPT["x"]
        def bump_x():
            KEPT["x"][1:3] = 52
    ''')
    k.passes('''
        import torch
        pool = Pool("uint8")
        k, v = pool.k, pool.v
        assert k.dtype == torch.float32 and k.shape == (8,) and v.shape == (4,)
        k[5] = 2.0
        assert v[1] == 2.0 and pool.total() == (2.0, 2.0)
        raw = pool.raw
        assert raw.dtype == torch.uint8 and int(raw.sum()) > 0
        pool = Pool("negative")
        k, v = pool.k, pool.v
        assert v.is_neg()
        k[1] = 3.0
        assert v[1] == -3.0 and pool.total() == (3.0, -3.0)
        v[2] = 5.0
        assert k[2] == -5.0 and pool.total() == (-2.0, 2.0)
        rows = flipped_rows()
        assert rows[1, 3] == -3 and rows.stride() == (0, 1)
        the_x()[4:].add_(1)
        assert rows[0, 4] == -5
        assert read_x() == [0, 1, 2, 3, 5, 6, 7, 8], "the negated rows' update wrote their values into the memory"
        kept = None
        def keep_detached():
            global kept
            table = flipped_rows()
            kept = table[0, 1:3].detach()
        keep_detached()
        bump_x()
        assert kept.tolist() == [-52, -52], "the test's detached view lost the memory it shares"
    ''')
    k.passes('''
        pool = Pool("odd storage")
        k, v = pool.k, pool.v
        k[1] = 4.0
        assert v[1] == 4.0 and pool.total() == (4.0, 4.0)
    ''')
    k.passes('''
        left, right = numpy_halves()
        left[0] = 1.0
        assert right.tolist() == [0.0] * 4, "two storages over memory that lies apart cross"
    ''')
    for refused in ('''
        pool = Pool("overlapping slices of a parameter")
        k, v = pool.k, pool.v
    ''', '''
        pool = Pool("numpy")
        k, v = pool.k, pool.v
    ''', '''
        import torch
        rows = alias_rows(torch.arange(6.0))
    '''):
        verdict = k.run(refused)
        assert not verdict.passed and "share memory" in verdict.message, (refused, verdict.message)


def test_the_kernel_s_side_leaves_no_trace_that_the_student_s_code_reads_by_plain_names(kernel, tmp_path):
    """The agent changes no builtin (a hook in ``builtins.__build_class__`` showed by its name, and by the frame it
    added to every class body) and binds no name in the notebook's globals (``dir()`` listed it), so that an
    answer cannot tell that it is judged from them with a clean scan (red team, round 17). Time between two requests
    still tells it (README, "Not protected")."""
    import builtins
    import socket
    import sys
    import types

    from grading.judge import prelude

    k = kernel("x = 1")
    assert type(builtins.__build_class__) is types.BuiltinFunctionType
    k.passes("assert x == 1")
    path, name = str(tmp_path / "judge.sock"), prelude.new_name()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    namespace = {"__name__": "__main__"}
    try:
        exec(compile(prelude.prelude(path, name), "<prelude>", "exec"), namespace)
        assert [key for key in namespace if not key.startswith("__")] == [], list(namespace)
        agent = getattr(sys.modules[prelude.PACKAGE], name)
        assert type(agent).__name__ == "AgentPeer" and agent.namespace is namespace
        assert prelude.serve_line(name, "e1", "x = 1").startswith(f"__import__({prelude.PACKAGE!r}).{name}.serve(")
        assert type(builtins.__build_class__) is types.BuiltinFunctionType
        agent.connection.close()
    finally:
        listener.close()
        for module in [module for module in sys.modules if module.split(".")[0] == prelude.PACKAGE]:
            del sys.modules[module]


def test_a_result_that_cannot_be_sent_fails_its_request_with_the_wire_s_error(kernel, monkeypatch):
    """A result that the kernel cannot encode fails the request with the wire's error, whatever stopped the encoding:
    the student's code chooses that (red team, round 17: a recursion limit set just above the code's own depth made it
    a RecursionError, which a test that expected the RuntimeError of a refused request took for the student's)."""
    k = kernel('''
        TRIP = ["trip"]
        def trip():
            return TRIP
    ''')
    from grading.judge.codec import Codec

    encode, trip = Codec.encode, k.namespace["TRIP"]

    def encoding(self, value, depth=0):
        if value is trip:
            raise RecursionError("maximum recursion depth exceeded")
        return encode(self, value, depth)

    monkeypatch.setattr(Codec, "encode", encoding)  # The class's: each test cell has a new codec.
    k.passes('''
        try:
            trip()
        except RuntimeError:
            raise AssertionError("the encoding's RecursionError reached the test as the student's error")
        except Exception as error:
            assert type(error).__name__ == "WireError" and "could not be sent (RecursionError)" in str(error), error
        else:
            raise AssertionError("nothing was raised")
    ''')


def test_a_student_s_set_of_the_test_s_objects_crosses_back_and_forth(kernel):
    """The test's objects lent to the student's code come with their hash where it is their identity's: the kernel
    hashes them as it reads a message that holds a frozenset of them, when it cannot ask the judge (fairness helper,
    round 17: a cache that kept its two tiers in a frozenset scored 0 judged, its kernel ended)."""
    k = kernel('''
        class Cache:
            def __init__(self, first, second):
                self.tiers = frozenset({first, second})
                self.pairs = {(first, 1): "device", (second, 2): "host"}
                self.hits = 0
            def tier_count(self):
                return len(self.tiers) + len(self.pairs)
    ''')
    k.passes('''
        class Tier:
            pass
        first, second = Tier(), Tier()
        cache = Cache(first, second)
        cache.hits = 3  # The object's __dict__, frozenset and dict included, crosses back to the kernel.
        assert cache.tier_count() == 4 and cache.tiers == frozenset({first, second}) and cache.hits == 3
        assert cache.pairs[(first, 1)] == "device"
    ''')
