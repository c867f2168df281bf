"""Objects the test stopped reading cost nothing per message, and still read right when the test comes back.

A mirrored ``__dict__`` that the test has not read for a while, and the containers that only it holds,
become lazy again on both sides (remote.JudgePeer.demote_unread): neither side compares them at every
message any more. What must hold: what the test holds stays in step at every message; a demoted object
read again shows what the kernel did to it meanwhile; a write into it reaches the kernel.
"""

from __future__ import annotations

import pytest

from grading.judge import pairs, remote

KERNEL = '''
    from collections import OrderedDict
    class Cache:
        """Three containers that bump() changes in place: a dict, an OrderedDict and a list of lists."""
        def __init__(self):
            self.ref_count, self.table = {1: 1}, [[0], [1]]
            self.order = OrderedDict.fromkeys([1, 2, 3])
        def bump(self):
            self.table[0].append(len(self.table[0]))
            self.order.move_to_end(1)
            self.ref_count[1] += 1
        def extra_value(self):
            return self.extra
'''

# The test reads three caches twice (their __dict__s and what they hold become eager), then drives only the
# first for many messages, holding the third's table; then it comes back to the second and the third.
TEST = '''
    caches = [Cache() for _ in range(3)]
    for _ in range(2):
        for cache in caches:
            assert cache.ref_count[1] == 1 and list(cache.order) == [1, 2, 3] and cache.table[0] == [0]
    held = caches[2].table
    for step in range(IDLE):
        caches[0].bump()
    caches[1].bump()
    caches[2].bump()
    assert caches[1].ref_count == {1: 2}, caches[1].ref_count
    assert list(caches[1].order) == [2, 3, 1] and caches[1].table == [[0, 1], [1]]
    assert held == [[0, 1], [1]], held
    caches[1].extra = 5
    assert caches[1].extra_value() == 5
    caches[1].table[1].append(7)
    caches[1].bump()
    assert caches[1].table == [[0, 1, 2], [1, 7]]
'''


@pytest.fixture
def eager_counts(monkeypatch):
    """The number of eager pairs each side (0: the judge, 1: the kernel) compared, message by message."""
    counts: dict[int, list[int]] = {0: [], 1: []}
    scan = pairs.PairTable.scan

    def counting_scan(self, drop_unreferenced):
        counts[self.parity].append(len(self.eager))
        return scan(self, drop_unreferenced)

    monkeypatch.setattr(pairs.PairTable, "scan", counting_scan)
    return counts


def test_unread_objects_leave_the_scan_and_read_right_when_the_test_comes_back(kernel, eager_counts):
    k = kernel(KERNEL)
    k.passes(TEST.replace("IDLE", str(3 * remote._UNREAD_FOR)))
    for side in (0, 1):
        busiest = max(eager_counts[side])
        # After the idle stretch only the driven cache (its dict and three containers) and the held table stay.
        late = eager_counts[side][-remote._UNREAD_FOR:-20]
        assert busiest >= 12 and max(late) <= busiest - 4, (side, busiest, max(late))


def test_without_an_idle_stretch_nothing_is_demoted(kernel, eager_counts):
    k = kernel(KERNEL)
    k.passes(TEST.replace("IDLE", "3"))
    assert all(count >= 12 for count in eager_counts[0][-5:])


def test_a_demoted_object_in_a_reply_and_in_a_request_crosses_right(kernel):
    k = kernel(KERNEL + '''
    def same(value):
        return value
    def table_of(cache):
        return cache.table
''')
    k.passes(f'''
        caches = [Cache() for _ in range(2)]
        for _ in range(2):
            assert caches[1].table == [[0], [1]]
        for _ in range({3 * remote._UNREAD_FOR}):
            caches[0].bump()
        caches[1].bump()
        table = table_of(caches[1])  # Promoted again where the test holds it.
        assert table == [[0, 1], [1]] and same(table) is table
        caches[1].bump()
        assert table == [[0, 1, 2], [1]] and caches[1].table is table
    ''')


QUIET_KERNEL = '''
    class Box:
        def __init__(self):
            self.a, self.b, self.items = 0, 1, [1]
        def bump(self):
            self.a += 1
            return self.a
        def itself(self):
            return self
    def dict_of(box):
        return vars(box)
    def b_of(box):
        return box.b if hasattr(box, "b") else None
'''


def test_a_mirrored_dict_the_test_does_not_hold_is_not_scanned_in_the_judge_and_writes_still_cross(
        kernel, eager_counts, monkeypatch):
    # Each box's __dict__ is asked for by itself, so that reading it again makes it eager (a request for one
    # object's dict otherwise brings its siblings', which stay lazy: tests/test_judge_requests.py).
    monkeypatch.setattr(remote.JudgePeer, "stale_siblings", lambda self, handle, info: [])
    k = kernel(QUIET_KERNEL)
    k.passes('''
        from course.checks import replay
        boxes = [Box() for _ in range(4)]
        for _ in range(2):
            for box in boxes:
                assert box.a == 0 and box.b == 1  # Read again after the kernel ran: each __dict__ becomes eager.
        for box in boxes:
            box.bump()
        assert [box.a for box in boxes] == [1, 1, 1, 1]
        boxes[0].b = 5  # A write into a dict the judge does not scan reaches the kernel all the same.
        assert boxes[0].bump() == 2 and b_of(boxes[0]) == 5
        raw = boxes[1].__dict__  # The test holds the dict itself: its own writes into it cross.
        raw["b"] = 7
        assert b_of(boxes[1]) == 7
        assert list(replay(boxes[1], [("itself", ())])) == [boxes[1]]  # A replay's objects stay in step ...
        raw["b"] = 8
        assert b_of(boxes[1]) == 8  # ... and a dict the test holds stays scanned.
        returned = dict_of(boxes[2])  # The kernel sends the dict as a value: the test's writes cross too.
        boxes[2].bump()
        returned["b"] = 9
        assert b_of(boxes[2]) == 9 and returned == {"a": 2, "b": 9, "items": [1]} and boxes[2].a == 2
        del boxes[3].b
        assert b_of(boxes[3]) is None and boxes[3].a == 1
    ''')
    # While the test only reads and calls, the kernel compares the four dicts and the four lists in them at every
    # message; the judge only the lists.
    middle = len(eager_counts[0]) // 3
    assert eager_counts[1][middle] >= 8 and eager_counts[0][middle] <= eager_counts[1][middle] - 4, (
        eager_counts[0][middle], eager_counts[1][middle])
