"""nbgrader settings of the course. The repository root is nbgrader's course directory.

Each hardened setting below is proven by a test in tests/test_grading_hardening.py that autogrades a
crafted submission.
"""

import os
import secrets
import sys

from nbgrader.converters import GenerateAssignment
from nbgrader.preprocessors import ClearMarkScheme, ClearOutput, IncludeHeaderFooter, LockCells

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grading.authoring.build import DropAuthoringMetadata  # noqa: E402 - needs the course directory on sys.path.
from grading.pipeline.exchange import OwnerCheckedCollect, StickyReleaseAssignment  # noqa: E402 - the same.
from grading.pipeline.stages import configure as configure_pipeline  # noqa: E402 - the same.

c = get_config()  # noqa: F821 - nbgrader provides get_config when it loads this file.

c.CourseDirectory.course_id = "kv-cache-eviction"
c.CourseDirectory.solution_directory = "solutions"

# The reference solutions are generated without running them: fast, and the same on every machine.
# Self-learners run them; the tests run every source notebook headless.
c.GenerateSolution.preprocessors = [IncludeHeaderFooter, LockCells, ClearOutput, ClearMarkScheme, DropAuthoringMetadata]

# nbgrader's own steps for the student notebooks, then the authoring metadata goes (grading/authoring/build.py).
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

# Every test cell's verdict comes from the judge, a process of the grader's where the test code, the checks,
# torch and NumPy run; the autograded notebook and the feedback are sanitized; feedback never shows the hidden
# tests. The pipeline's steps and their order are in one place: grading/pipeline/stages.py.
configure_pipeline(c, os.path.dirname(os.path.abspath(__file__)))

# nbgrader's exchange on a shared machine (a JupyterHub, deploy/jupyterhub/): collect takes a
# submission only from the Unix user of the student id it claims, and only its plain files; release
# keeps the exchange root and the inbound folder sticky, so that no student can replace the course's
# folder or remove another's submission (grading/pipeline/exchange.py, tests/test_hub.py).
c.ExchangeFactory.collect = OwnerCheckedCollect
c.ExchangeFactory.release_assignment = StickyReleaseAssignment

# The grading command's options (grading/pipeline/options.py, `python -m grading.grade --help`) may be set
# here too, and the command line overrides them; for example:
# c.GradingOptions.memory_limit_gb = 4
