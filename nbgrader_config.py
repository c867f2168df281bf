"""nbgrader settings of the course. The repository root is nbgrader's course directory.

Each hardened setting below is proven by a test in tests/test_grading_hardening.py that autogrades a
crafted submission.
"""

import os
import secrets
import sys

from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
from nbgrader.converters import GenerateAssignment
from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, ClearMarkScheme, ClearOutput, GetGrades,
                                    IgnorePattern, IncludeHeaderFooter, LimitOutput, LockCells, SaveAutoGrades)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grading.build import DropAuthoringMetadata  # noqa: E402 - needs the course directory on sys.path.
from grading.feedback import HideHiddenTests  # noqa: E402 - the same.
from grading.guard import GuardedExecute  # noqa: E402 - the same.
from grading.sanitize import SanitizeNotebook  # noqa: E402 - the same.

c = get_config()  # noqa: F821 - nbgrader provides get_config when it loads this file.

c.CourseDirectory.course_id = "kv-cache-eviction"
c.CourseDirectory.solution_directory = "solutions"

# The reference solutions are generated without running them: fast, and the same on every machine.
# Self-learners run them; the tests run every source notebook headless.
c.GenerateSolution.preprocessors = [IncludeHeaderFooter, LockCells, ClearOutput, ClearMarkScheme, DropAuthoringMetadata]

# nbgrader's own steps for the student notebooks, then the authoring metadata goes (grading/build.py).
c.GenerateAssignment.preprocessors = [*GenerateAssignment.class_traits()["preprocessors"].default(),
                                      DropAuthoringMetadata]

# A cell that runs longer than this is interrupted; grading goes on with the next cell, so an
# infinite loop costs the student the tests that depend on it and nothing else. The grading command
# also puts a wall-clock limit on each student's whole run.
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True

# nbgrader skips cells tagged with this value. The default, "skip-execution", is a tag any student
# can add to a test cell; a fresh random tag on every run cannot be guessed.
c.Execute.skip_cells_with_tag = "never-skip-" + secrets.token_hex(16)

# nbgrader gives 0 points to a test cell with any output on stderr. Warnings and progress bars
# write there, so stderr is dropped; a failing test still fails, because it raises an error.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"[\s\S]"

# A test cell earns points only if its last line ran in a kernel whose test helpers and libraries
# were not patched; kernels start in the grading command's sandbox when it asks for one
# (grading/guard.py, grading/sandbox.py). Otherwise these are nbgrader's own autograding steps.
# Last, the autograded notebook (what formgrader renders) is sanitized: no markup, output or
# metadata that a student wrote or made while grading can run script in a grader's browser
# (grading/sanitize.py).
c.Autograde.autograde_preprocessors = [GuardedExecute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
                                       SaveAutoGrades, AssignLatePenalties, CheckCellMetadata, SanitizeNotebook]
c.SanitizeNotebook.release_directory = os.path.join(os.path.dirname(os.path.abspath(__file__)), "release")

# A test cell that a student deleted is put back from the gradebook and graded.
c.OverwriteCells.add_missing_cells = True

# Feedback shows scores, visible tests and the checks' messages, never the hidden tests' code, and
# is sanitized again (an autograded notebook from an older run may not have been).
c.GenerateFeedback.preprocessors = [GetGrades, HideHiddenTests, SanitizeNotebook, CSSHTMLHeaderPreprocessor]
