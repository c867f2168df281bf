"""Wrong and alternative answers for every task, by notebook.

Each ``<assignment>.py`` here defines two dicts keyed by a solution cell's grade_id:
``WRONG`` (plausible wrong answers that must lose the task's points) and ``ALTERNATIVES``
(correct answers in another style than the reference, which must keep every point). The test
suite runs each through the notebook's own test cells; the first wrong answer of every task is
also the bundled ``typical_mistakes`` submission that the main job grades with nbgrader.
"""
