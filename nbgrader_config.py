"""nbgrader settings of the course. The repository root is nbgrader's course directory.

Each hardened setting below is proven by a test in tests/test_grading_hardening.py that autogrades a
crafted submission.
"""

import os
import secrets
import sys

from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
from nbgrader.converters import Autograde, GenerateAssignment
from nbgrader.preprocessors import (
                                    AssignLatePenalties,
                                    ClearMarkScheme,
                                    ClearOutput,
                                    GetGrades,
                                    IgnorePattern,
                                    IncludeHeaderFooter,
                                    LimitOutput,
                                    LockCells,
)
from nbgrader.preprocessors import CheckCellMetadata as NbgraderCheckCellMetadata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grading.build import DropAuthoringMetadata  # noqa: E402 - needs the course directory on sys.path.
from grading.exchange import OwnerCheckedCollect, StickyReleaseAssignment  # noqa: E402 - the same.
from grading.feedback import HideHiddenTests  # noqa: E402 - the same.
from grading.judge.execute import JudgedExecute, SaveVerdicts  # noqa: E402 - the same.
from grading.sanitize import SanitizeNotebook  # noqa: E402 - the same.
from grading.steps import CheckCellMetadata  # noqa: E402 - the same; nbgrader's, validating each metadata once.

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

# Every test cell's verdict comes from the judge, a process of the grader's where the test code, the
# checks, torch and NumPy run: the student's kernel only serves the judge's requests while the test runs,
# so nothing the student's code does there can change a check or its outcome. The gradebook is written
# from the verdicts alone (grading/judge/). Kernels are forked by each student's warm process in the
# grading command's sandbox and limits (grading/kernels.py, grading/sandbox.py). Otherwise these are
# nbgrader's steps. Last, the autograded notebook (what formgrader renders) is sanitized: no markup,
# output or metadata that a student wrote or made while grading can run script in a grader's browser
# (grading/sanitize.py).
c.Autograde.autograde_preprocessors = [JudgedExecute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
                                       SaveVerdicts, AssignLatePenalties, CheckCellMetadata, SanitizeNotebook]
c.SanitizeNotebook.release_directory = os.path.join(os.path.dirname(os.path.abspath(__file__)), "release")

# A test cell that a student deleted is put back from the gradebook and graded.
c.OverwriteCells.add_missing_cells = True

# nbgrader's first pass over a submission, with its metadata check validating each distinct
# metadata once per grading process (grading/steps.py), as in the last step of autograding.
c.Autograde.sanitize_preprocessors = [CheckCellMetadata if step is NbgraderCheckCellMetadata else step
                                      for step in Autograde.class_traits()["sanitize_preprocessors"].default()]

# Feedback shows scores, visible tests and the checks' messages, never the hidden tests' code, and
# is sanitized again (an autograded notebook from an older run may not have been).
c.GenerateFeedback.preprocessors = [GetGrades, HideHiddenTests, SanitizeNotebook, CSSHTMLHeaderPreprocessor]
# The same cells are highlighted for every student: once per grading process is enough. The
# exporter compiles its templates once per grading process and parses no page twice.
c.HTMLExporter.filters = {"highlight_code": "grading.feedback.highlight_code"}
c.GenerateFeedback.exporter_class = "grading.feedback.FeedbackExporter"

# nbgrader's exchange on a shared machine (a JupyterHub, deploy/jupyterhub/): collect takes a
# submission only from the Unix user of the student id it claims, and only its plain files; release
# keeps the exchange root and the inbound folder sticky, so that no student can replace the course's
# folder or remove another's submission (grading/exchange.py, tests/test_hub.py).
c.ExchangeFactory.collect = OwnerCheckedCollect
c.ExchangeFactory.release_assignment = StickyReleaseAssignment
