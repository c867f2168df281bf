"""Notebook 05's test code that several test cells share, written once here.

``make notebooks`` copies each definition that a test cell names in its ``# BEGIN SHARED`` line into that
cell (grading/authoring/shared_code.py), so every graded part still carries the code it runs.
"""


def victim_of(hits, size, last_used, priority, alive, sched):
    """``sched._victim()`` on these columns: what 5.3.3 and 5.3.6 count the torch operations of."""
    sched.hits, sched.bytes, sched.last_used, sched.priority, sched.alive = hits, size, last_used, priority, alive
    return sched._victim()
