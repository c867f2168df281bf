"""Notebook 08's test code that several test cells share, written once here.

``make notebooks`` copies each definition that a test cell names in its ``# BEGIN SHARED`` line into that
cell (grading/authoring/shared_code.py), so every graded part still carries the code it runs.
"""


class Tier:
    """A small LRU tier for these tests (blocks: a list, least recent first); it logs the calls it gets."""

    def __init__(self, capacity, blocks=()):
        self.capacity, self.blocks, self.log = capacity, list(blocks), []

    def __contains__(self, block):
        return block in self.blocks

    def __len__(self):
        return len(self.blocks)

    def hit(self, block):
        self.log.append(("hit", block))
        self.blocks.remove(block)
        self.blocks.append(block)

    def insert(self, block, pinned=frozenset()):
        assert block not in self.blocks, f"the cache called insert({block!r}) on a tier that already holds it"
        self.log.append(("insert", block, sorted(pinned)))
        victim = None
        if len(self.blocks) >= self.capacity:
            victim = next((b for b in self.blocks if b not in pinned), None)
            if victim is None:
                raise RuntimeError("every block of the tier is pinned")
            self.blocks.remove(victim)
        self.blocks.append(block)
        return victim


class Filter:
    """Admits the blocks of `admitted`, or else those recorded at least `threshold` times."""

    def __init__(self, threshold=1, admitted=None):
        self.threshold, self.admitted, self.seen = threshold, admitted, {}

    def record(self, block):
        self.seen[block] = self.seen.get(block, 0) + 1

    def admits(self, block):
        if self.admitted is not None:
            return block in self.admitted
        return self.seen.get(block, 0) >= self.threshold
