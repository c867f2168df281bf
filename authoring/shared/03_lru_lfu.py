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
