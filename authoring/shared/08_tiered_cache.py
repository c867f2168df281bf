"""Notebook 08's test code that several test cells share, written once here.

``make notebooks`` copies each definition that a test cell names in its ``# BEGIN SHARED`` line into that
cell (grading/authoring/shared_code.py), so every graded part still carries the code it runs.
"""


class Tier:
    """A small LRU tier for these tests (_blocks: a list, least recent first); it logs the calls it gets in _log.

    Its records have private names: the cache under test gets this object, and may use only what the task names
    (capacity, in, len, hit, insert).
    """

    def __init__(self, capacity, blocks=()):
        self.capacity, self._blocks, self._log = capacity, list(blocks), []

    def __contains__(self, block):
        return block in self._blocks

    def __len__(self):
        return len(self._blocks)

    def hit(self, block):
        self._log.append(("hit", block))
        self._blocks.remove(block)
        self._blocks.append(block)

    def insert(self, block, pinned=frozenset()):
        assert block not in self._blocks, f"the cache called insert({block!r}) on a tier that already holds it"
        pinned = list(pinned)  # Read once: what it records is what it works on.
        self._log.append(("insert", block, sorted(pinned)))
        victim = None
        if len(self._blocks) >= self.capacity:
            victim = next((b for b in self._blocks if b not in pinned), None)
            if victim is None:
                raise RuntimeError("every block of the tier is pinned")
            self._blocks.remove(victim)
        self._blocks.append(block)
        return victim


class Filter:
    """Admits the blocks of `admitted`, or else those recorded at least `threshold` times (counts in _seen)."""

    def __init__(self, threshold=1, admitted=None):
        self._threshold, self._admitted, self._seen = threshold, admitted, {}

    def record(self, block):
        self._seen[block] = self._seen.get(block, 0) + 1

    def admits(self, block):
        if self._admitted is not None:
            return block in self._admitted
        return self._seen.get(block, 0) >= self._threshold
