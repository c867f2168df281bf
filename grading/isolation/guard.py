"""The kernel manager that starts every grading kernel in the student's sandbox and limits.

Scores no longer come from the kernel: every test cell is judged in a process of its own
(grading/judge/), so nothing here guards the kernel any more. What is left is how nbgrader
starts a kernel while grading: `SandboxKernelManager` has the student's warm process fork it in
the student's sandbox, with the plan that the grading command wrote for the student
(``COURSE_SANDBOX_PLAN``). Both live in grading/isolation/kernels.py; this module keeps the names that
nbgrader's configuration and the judge import.
"""

from __future__ import annotations

from grading.isolation.kernels import PLAN_VARIABLE, SandboxKernelManager

__all__ = ["PLAN_VARIABLE", "SandboxKernelManager"]
