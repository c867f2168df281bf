"""The grading pipeline, in the order a submission goes through it: each stage is a module with one job.

=========  ==============================================================================================
collect    pipeline/collect.py finds each student's notebooks in a folder (pipeline/zipped.py reads a .zip,
           pipeline/lms.py Canvas's files), reading them without following a link out of it.
place      pipeline/prepare.py reads, repairs (pipeline/repair.py) and scans (isolation/scan.py) each
           notebook in a process of its own, then places it in the scratch course (pipeline/course.py).
run        pipeline/jobs.py hands each student to a grading process (pipeline/worker.py), which runs
           nbgrader's autograde; the student's kernels run in the sandbox and limits (isolation/).
score      the autograde steps below: every test cell runs in the judge (judge/execute.py), and the
           gradebook is written from its verdicts alone; a kernel that dies or stops answering ends its
           notebook at once, the cells judged before keeping their points (pipeline/liveness.py).
sanitize   the last autograde step: nothing a student wrote runs in a grader's browser (isolation/sanitize.py).
feedback   the feedback steps below: scores and visible tests, never the hidden tests (pipeline/feedback.py).
merge      pipeline/merge.py merges the jobs' and shards' gradebooks into the course's; pipeline/copies.py
           flags students whose solutions are the same.
export     pipeline/export.py writes the grades CSV, Canvas's gradebook or Moodle's grade import.
=========  ==============================================================================================

pipeline/run.py calls the stages from collect to merge in this order; nbgrader_config.py calls `configure`,
which sets the nbgrader steps of score, sanitize and feedback, in their order.
"""

from __future__ import annotations

import os


def autograde_steps() -> list:
    """score → sanitize: nbgrader's autograde steps, each test cell's verdict from the judge.

    The student's kernel only serves the judge's requests while a test runs, so nothing the student's code
    does there can change a check or its outcome. Otherwise these are nbgrader's steps. Last, the autograded
    notebook (what formgrader renders) is sanitized: no markup, output or metadata that a student wrote or
    made while grading can run script in a grader's browser.
    """
    from nbconvert.preprocessors import ClearMetadataPreprocessor
    from nbgrader.preprocessors import AssignLatePenalties, IgnorePattern, LimitOutput

    from grading.isolation.sanitize import SanitizeNotebook
    from grading.judge.execute import SaveVerdicts
    from grading.pipeline.liveness import WatchedExecute
    from grading.pipeline.steps import CheckCellMetadata

    return [WatchedExecute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput, SaveVerdicts, AssignLatePenalties,
            CheckCellMetadata, SanitizeNotebook]


def first_pass_steps() -> list:
    """nbgrader's first pass over a submission, with its metadata check validating each distinct metadata once
    per grading process (pipeline/steps.py), as in the last step of autograding."""
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import CheckCellMetadata as NbgraderCheckCellMetadata

    from grading.pipeline.steps import CheckCellMetadata

    return [CheckCellMetadata if step is NbgraderCheckCellMetadata else step
            for step in Autograde.class_traits()["sanitize_preprocessors"].default()]


def feedback_steps() -> list:
    """feedback: scores, visible tests and the checks' messages, never the hidden tests' code, sanitized again
    (an autograded notebook from an older run may not have been)."""
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import GetGrades

    from grading.isolation.sanitize import SanitizeNotebook
    from grading.pipeline.feedback import HideHiddenTests

    return [GetGrades, HideHiddenTests, SanitizeNotebook, CSSHTMLHeaderPreprocessor]


def configure(c, course_directory: str) -> None:
    """Set the pipeline's nbgrader steps on the configuration ``c`` of the course at ``course_directory``."""
    c.Autograde.sanitize_preprocessors = first_pass_steps()
    c.Autograde.autograde_preprocessors = autograde_steps()
    c.SanitizeNotebook.release_directory = os.path.join(course_directory, "release")
    # A test cell that a student deleted is put back from the gradebook and graded.
    c.OverwriteCells.add_missing_cells = True
    c.GenerateFeedback.preprocessors = feedback_steps()
    # The same cells are highlighted for every student: once per grading process is enough. The exporter
    # compiles its templates once per grading process and parses no page twice.
    c.HTMLExporter.filters = {"highlight_code": "grading.pipeline.feedback.highlight_code"}
    c.GenerateFeedback.exporter_class = "grading.pipeline.feedback.FeedbackExporter"
