"""Wrong and alternative answers for every task, one module per notebook.

``tests/answers/<topic>.py`` belongs to ``source/NN_<topic>/`` (``eviction_as_ranking`` to
``01_eviction_as_ranking``; grading.authoring.samples.load_mutants imports it). It defines two dicts keyed by
a solution cell's grade_id, each mapping a short description to an answer:

- ``WRONG``: plausible wrong answers, each of which must lose the task's points;
- ``ALTERNATIVES``: correct answers in another style than the reference, which must keep them.

Every answer is built from the notebook's own reference solution through grading.authoring.reference, never
typed again: a wrong answer is the reference with the few edits that make the mistake
(``ref.edit(grade_id, (old, new), ...)``); an alternative keeps the reference's signatures and
docstrings and writes the solution regions anew (``ref.solve(grade_id, name=body, ...)``). An edit
whose text is no longer in the reference raises at import, so a stale answer fails loudly.

The mutation suite (tests/test_mutants.py) runs each answer through the notebook's own test cells;
the first wrong answer of every task is also the bundled ``typical_mistakes`` submission that the
main job grades with nbgrader. ``python -m grading.authoring.task 2.4`` shows one task's answers and results.
"""

from __future__ import annotations

# A wrong answer shared by notebooks 07 and 08: an exact int check widened to numbers.Integral, which admits
# numpy's integers that the texts refuse (bool is still refused). The answer imports numbers itself.
INT_CHECK = "if type(value) is not int:"
INTEGRAL_CHECK = 'if isinstance(value, bool) or not isinstance(value, numbers.Integral):'


def numbers_integral(reference, grade_id: str) -> str:
    """``reference``'s answer to ``grade_id`` with its int check widened to numbers.Integral."""
    return "import numbers\n" + reference.edit(grade_id, (INT_CHECK, INTEGRAL_CHECK))
