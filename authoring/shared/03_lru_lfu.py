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


def random_manager(rng, manager_class, with_steps=False):
    """A manager of ``manager_class`` (the notebook's PagedKVCacheManager) made by random allocations and forks, and
    checked against the test's own count of what those calls make: the free blocks, and each sequence's blocks with
    how many sequences hold each. The oracles read the manager through ``PlainCache``: this check keeps that copy
    the test's own data, even where a cell rebinds the given class (a fork that shares nothing would hide every
    question about shared blocks). With ``with_steps``, each sequence then gets a random last_access_step. Returns
    the manager and its PlainCache, the copy the oracle reads."""
    num_blocks, block_size = rng.randint(6, 30), rng.choice([2, 4])
    manager = manager_class(num_blocks=num_blocks, block_size=block_size)
    free, tables, tags = num_blocks, {}, 0  # tables: seq_id -> the test's own tags of its blocks.
    for index in range(rng.randint(1, 9)):
        seq_id = f"r{index}"
        if tables and rng.random() < 0.35:
            parent = rng.choice(sorted(tables))
            manager.fork(manager.sequences[parent], seq_id)
            tables[seq_id] = list(tables[parent])
        elif rng.randint(1, 12) <= (room := free * block_size):
            num_tokens = rng.randint(1, min(12, room))
            manager.allocate_for_sequence(seq_id, num_tokens)
            count = -(-num_tokens // block_size)
            tables[seq_id] = list(range(tags, tags + count))
            tags, free = tags + count, free - count
    steps = {seq_id: rng.randint(0, 6) for seq_id in tables} if with_steps else {}
    for seq_id, step in steps.items():
        manager.sequences[seq_id].last_access_step = step
    plain = PlainCache(manager)

    def renamed(block_ids_of):
        """Each sequence's blocks renamed in the order they first appear (sequences in sorted order): equal for two
        managers exactly when they share the same blocks in the same way, whatever the ids."""
        names = {}
        return {seq_id: [names.setdefault(block, len(names)) for block in block_ids_of[seq_id]]
                for seq_id in sorted(block_ids_of)}

    holders = {}  # The test's tag -> how many sequences hold it.
    for table in tables.values():
        for tag in table:
            holders[tag] = holders.get(tag, 0) + 1
    built = (len(plain.ref_counts) == num_blocks and plain.num_free == free
             and renamed({seq_id: seq.block_ids for seq_id, seq in plain.sequences.items()}) == renamed(tables)
             and all(plain.ref_counts[block_id] == holders[tag] for seq_id, table in tables.items()
                     for block_id, tag in zip(plain.sequences[seq_id].block_ids, table))
             and all(plain.sequences[seq_id].last_access_step == step for seq_id, step in steps.items()))
    assert built, (f"the given PagedKVCacheManager({num_blocks}, {block_size}) holds after {len(tables)} allocations and "
                   "forks what allocate_for_sequence and fork do not make (keep the given class as it is)")
    return manager, plain
