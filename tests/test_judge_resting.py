"""A kernel's pair that nothing but its table can reach rests: the kernel stops comparing it (grading/judge/pairs.py).

The student's kernel compares tensors by their bytes at every message, since ``.data``, NumPy and Triton
write without bumping a tensor's version. A test that keeps a large input (``assert_no_python_loop``'s
``large``) made the kernel copy it at every later message. Resting is right only while no code of the
kernel can change the object: these tests hand the kernel's code every way of reaching it again (the test
sends it once more, or the student's code kept it, a view of it, ``.data``, a NumPy array over it, its
storage object, a container holding it, another tensor whose gradient it is, or a weak reference), check
that each later change still reaches the test, and that the pairs that can rest do.
"""

from __future__ import annotations

import pytest

KERNEL = '''
    import weakref
    import torch
    KEPT = []
    WEAK_VALUES = weakref.WeakValueDictionary()
    def total(x):
        return float(sum(x)) if isinstance(x, list) else float(x.sum())
    def tick():
        return 0
    def scale_quietly(t):
        t.data.mul_(2)  # No version bump: only a comparison of bytes sees it.
    def append_one(items):
        items.append(1)
    def keep(x, how):
        KEPT.append({"itself": lambda: x, "data": lambda: x.data, "numpy": lambda: x.numpy(),
                     "view": lambda: x[1:], "storage": lambda: x.untyped_storage(),
                     "in a list": lambda: [x], "as a gradient": lambda: as_gradient(x),
                     "through a weak proxy": lambda: weakref.proxy(x),
                     "in a WeakValueDictionary": lambda: keep_weak_value(x)}[how]())
    def keep_weak_value(x):
        WEAK_VALUES[len(WEAK_VALUES)] = x
    def as_gradient(x):
        holder = torch.zeros_like(x, requires_grad=True)
        holder.grad = x  # Torch holds the tensor itself; its Python object may count no reference for it.
        return holder
    def write_kept(how):
        kept = KEPT[-1]
        if how == "numpy":
            kept[:] = 7
        elif how == "storage":
            kept.fill_(0)
        elif how == "in a list":
            kept[0].data.fill_(7)
        elif how == "as a gradient":
            kept.grad.fill_(7)
        elif how == "through a weak proxy":
            kept.fill_(7)
        elif how == "in a WeakValueDictionary":
            WEAK_VALUES[len(WEAK_VALUES) - 1].fill_(7)
        elif isinstance(kept, list):
            kept.append(7)
        else:
            kept.data.fill_(7)
'''


@pytest.fixture
def resting(monkeypatch) -> list[int]:
    """How many of the kernel's pairs rest after each of its scans."""
    from grading.judge import pairs

    counts: list[int] = []
    original = pairs.PairTable.scan

    def counting_scan(self, drop_unreferenced):
        found = original(self, drop_unreferenced)
        if self.parity == 1:
            counts.append(sum(pair.resting for pair in self.by_sid.values()))
        return found

    monkeypatch.setattr(pairs.PairTable, "scan", counting_scan)
    return counts


def test_a_tensor_the_kernel_let_go_of_rests_and_wakes_when_the_test_sends_it_again(kernel, resting):
    kernel(KERNEL).passes('''
        import torch
        large = torch.ones(64, 64)
        assert total(large) == 4096.0
        for _ in range(3):
            tick()
        scale_quietly(large)
        assert large.sum().item() == 8192.0, "the write through .data did not reach the test"
        tick()
        scale_quietly(large)
        assert large.sum().item() == 16384.0, "the second write through .data did not reach the test"
    ''')
    assert max(resting) >= 1, "the tensor that only the kernel's table held never rested"


def test_a_list_the_kernel_let_go_of_rests_and_wakes_when_the_test_sends_it_again(kernel, resting):
    kernel(KERNEL).passes('''
        items = [0]
        assert total(items) == 0.0
        tick()
        tick()
        append_one(items)
        tick()
        append_one(items)
        assert items == [0, 1, 1], items
    ''')
    assert max(resting) >= 1, "the list that only the kernel's table held never rested"


@pytest.mark.parametrize("how", ["itself", "data", "numpy", "view", "storage", "in a list",
                                 "as a gradient", "through a weak proxy", "in a WeakValueDictionary"])
def test_a_tensor_whose_memory_the_student_s_code_can_still_reach_never_rests(kernel, how):
    # The student's code keeps the tensor, or something that shares its memory, and writes through it in a later
    # call that the tensor is no argument of.
    expected = "[0.0, 0.0, 0.0, 0.0]" if how == "storage" else (
        "[1.0, 7.0, 7.0, 7.0]" if how == "view" else "[7.0, 7.0, 7.0, 7.0]")
    kernel(KERNEL).passes(f'''
        import torch
        values = torch.ones(4)
        keep(values, {how!r})
        for _ in range(3):
            tick()
        write_kept({how!r})
        assert values.tolist() == {expected}, f"a write through what the kernel kept ({how}): {{values.tolist()}}"
    ''')


def test_a_list_the_student_s_code_keeps_never_rests(kernel):
    kernel(KERNEL).passes('''
        items = [0]
        keep(items, "itself")
        for _ in range(3):
            tick()
        write_kept("itself")
        assert items == [0, 7], items
    ''')


def test_a_set_the_student_s_code_keeps_a_weak_reference_to_never_rests(kernel):
    kernel(KERNEL + '''
    def keep_weakly(items):
        KEPT.append(weakref.ref(items))
    def add_to_kept(value):
        KEPT[-1]().add(value)
''').passes('''
        items = {0}
        keep_weakly(items)
        for _ in range(3):
            tick()
        add_to_kept(7)
        assert items == {0, 7}, items
    ''')
