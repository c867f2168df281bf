"""Notebook 03's test code that several test cells share, written once here.

``make notebooks`` copies each definition that a test cell names in its ``# BEGIN SHARED`` line into that
cell (grading/authoring/shared_code.py), so every graded part still carries the code it runs.
"""


class ListedOrder:
    """A policy for this test: evicts the first unprotected id of a fixed list."""

    def __init__(self, order):
        self.order = order

    def select_victim(self, sequences, protected=frozenset()):
        return next((seq_id for seq_id in self.order if seq_id in sequences and seq_id not in protected), None)


def state(manager):
    """The visible parts' state (sorted ids, num_free, every block's ref_count), with num_free and every block
    of the allocator read in one replay: the hidden parts of 3.4.2 and 3.4.3 use this copy."""
    from course.checks import replay

    # num_free, then every block of the allocator (each comes with its attributes), in one replay.
    num_free, *blocks = replay(manager.allocator, [("num_free", None)]
                               + [("get_block", (i,)) for i in range(manager.allocator.num_blocks)])
    return [sorted(manager.sequences), num_free, [block.ref_count for block in blocks]]
