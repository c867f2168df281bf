"""Notebook 03's test code that several test cells share, written once here.

``make notebooks`` copies each definition that a test cell names in its ``# BEGIN SHARED`` line into that
cell (grading/authoring/shared_code.py), so every graded part still carries the code it runs.
"""

import copy


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


class PlainCache:
    """The test's own copy of a manager's sequences and blocks, read once before the call: the hidden oracles of
    3.4.2 and 3.4.3 release and ask their policies here, in the judge, never on a copy in the student's process
    (whose code could watch that copy and learn the expected victims)."""

    class Sequence:
        def __init__(self, last_access_step, block_ids):
            self.last_access_step, self.block_ids = last_access_step, block_ids

    def __init__(self, manager):
        from course.checks import replay

        # num_free, then every block of the allocator (each comes with its attributes), in one replay.
        self.num_free, *blocks = replay(manager.allocator, [("num_free", None)]
                                        + [("get_block", (i,)) for i in range(manager.allocator.num_blocks)])
        self.ref_counts = [block.ref_count for block in blocks]
        self.sequences = {seq_id: self.Sequence(seq.last_access_step, [block.block_id for block in seq.block_table])
                          for seq_id, seq in manager.sequences.items()}

    def release(self, seq_id):
        """What PagedKVCacheManager.release does: one reference fewer to each block, a block at 0 is free."""
        for block_id in self.sequences.pop(seq_id).block_ids:
            self.ref_counts[block_id] -= 1
            self.num_free += self.ref_counts[block_id] == 0

    def state(self):
        """`state(manager)` of the manager this copy follows."""
        return [sorted(self.sequences), self.num_free, list(self.ref_counts)]

    def feasible(self, needed, protected):
        """Whether releasing every unprotected sequence leaves ``needed`` blocks free (this copy unchanged)."""
        trial = copy.deepcopy(self)
        for seq_id in [k for k in trial.sequences if k not in protected]:
            trial.release(seq_id)
        return trial.num_free >= needed

    def evict(self, policy, needed, protected):
        """The victims ``policy`` picks until ``needed`` blocks are free, released here; None when infeasible."""
        if not self.feasible(needed, protected):
            return None
        victims = []
        while self.num_free < needed:
            victims.append(policy.select_victim(self.sequences, protected))
            self.release(victims[-1])
        return victims
