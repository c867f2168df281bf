"""nbgrader's Execute and SaveAutoGrades steps with every test verdict taken from the judge.

`JudgedExecute` runs the notebook in the student's kernel as nbgrader does, so that the
autograded notebook and the feedback show the student's outputs, with two changes made only while
grading (the notebook it saves is unchanged):

1. a hidden first cell (grading/judge/prelude.py) loads the judge's agent into the kernel and
   connects it to a fresh socket of the judge process, in a folder of the grader's that the
   sandbox shows read-only (the plan's ``judge_dir``), outside IPython's history;
2. each graded test cell runs in the judge (grading/judge/runner.py) while the kernel, in place of
   the cell, serves the judge's requests (IPython's history holds the cell's own source, as in one
   process). The judge's verdict goes into ``resources`` and, when
   the cell failed, into the cell's outputs as one error (the failing check's message), which is
   what feedback shows; errors the kernel itself printed in a test cell are dropped.

Every output the kernel sends is bounded in bytes as it arrives (grading/isolation/outputs.py: `OutputBudget`),
in both forms: nbgrader's ``LimitOutput`` counts lines only, after the notebook ran.

`SaveVerdicts` writes the gradebook from the verdicts alone: a test cell earns its points when
the judge says it passed, and a cell without a verdict (its kernel died before it) earns none.
With ``judge = False`` both steps are nbgrader's own (the attack tests show what that allows).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
from pathlib import Path

from nbclient.util import run_sync
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell
from nbgrader.preprocessors import Execute, SaveAutoGrades
from traitlets import Bool, Int

from grading.isolation.guard import PLAN_VARIABLE, SandboxKernelManager
from grading.isolation.outputs import (
    MAX_CELL_OUTPUT_BYTES,
    MAX_JUDGE_MESSAGE_CHARS,
    MAX_NOTEBOOK_OUTPUT_BYTES,
    MAX_OUTPUT_BYTES,
    OutputBudget,
    clip_text,
)
from grading.judge import client, prelude
from grading.judge.names import trusted_names

VERDICTS = "judge_verdicts"
NOT_JUDGED = "this test cell was not judged (the kernel ended before it)"  # A test cell without a verdict.
NO_TIMEOUT = 600.0  # The judge's limit for a test cell when nbgrader has none.


def is_test_cell(cell: NotebookNode) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


def _read_only_sources(nb: NotebookNode) -> list[str]:
    """The notebook's own read-only cells (nbgrader puts back their source from the release)."""
    return [cell.source for cell in nb.cells if cell.cell_type == "code"
            and cell.metadata.get("nbgrader", {}).get("locked") and not is_test_cell(cell)
            and not cell.metadata["nbgrader"].get("solution")]


def _plan() -> dict:
    path = os.environ.get(PLAN_VARIABLE)
    return json.loads(Path(path).read_text()) if path else {}


def error_output(message: str, lines: list[str] | None = None) -> NotebookNode:
    name, _, value = message.partition(": ")
    return NotebookNode(output_type="error", ename=name or "Error", evalue=value,
                        traceback=[*(lines or []), message])


def settle(cell: NotebookNode, verdict: dict | None) -> None:
    """A test cell's outputs after grading: the kernel's, without its errors, then the judge's failure.

    The judge's message is one line of at most `MAX_JUDGE_MESSAGE_CHARS` characters (grading/judge/runner.py), its
    traceback at most 8 lines of the test cell's own code; both are cut here too, whatever the judge sent.
    """
    cell.outputs = [output for output in cell.outputs if output.output_type != "error"]
    if verdict is None:
        cell.outputs.append(error_output(f"JudgeError: {NOT_JUDGED}"))
    elif not verdict["passed"]:
        lines = [clip_text(str(line), MAX_JUDGE_MESSAGE_CHARS) for line in (verdict.get("traceback") or [])[-8:]]
        cell.outputs.append(error_output(str(verdict["message"])[:MAX_JUDGE_MESSAGE_CHARS], lines))


class JudgedExecute(Execute):
    """nbgrader's Execute with every test cell judged outside the kernel (see the module's docstring)."""

    judge = Bool(True, help="Judge test cells in the judge process; False runs them in the kernel, as plain "
                            "nbgrader does.").tag(config=True)
    max_output_bytes = Int(MAX_OUTPUT_BYTES, help="Bytes one output may hold (a print, an image, an error); "
                                                  "more is cut, with a marker").tag(config=True)
    max_cell_output_bytes = Int(MAX_CELL_OUTPUT_BYTES, help="Bytes a cell's outputs may hold together").tag(config=True)
    max_notebook_output_bytes = Int(MAX_NOTEBOOK_OUTPUT_BYTES, help="Bytes a notebook's outputs may hold together"
                                    ).tag(config=True)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", SandboxKernelManager)
        super().__init__(*args, **kwargs)
        self._judge: client.JudgeProcess | None = None
        self._agent = ""
        self._verdicts: dict[str, dict] = {}
        self._outputs = self._budget()

    def preprocess(self, nb: NotebookNode, resources: dict, km=None):
        try:
            if not self.judge:
                return super().preprocess(nb, resources, km=km)
            return self._judged(nb, resources, km)
        finally:
            # The tag of the skipped cells is random for each run; the graded notebook does not show it.
            for cell in nb.cells:
                tags = cell.metadata.get("tags")
                if tags and self.skip_cells_with_tag in tags:
                    tags.remove(self.skip_cells_with_tag)
                    if not tags:
                        del cell.metadata["tags"]

    def _judged(self, nb: NotebookNode, resources: dict, km=None):
        plan = _plan()
        judge = client.current()
        own = judge is None
        folder = plan.get("judge_dir") or tempfile.mkdtemp(prefix="course-judge-")
        if own:
            judge = client.JudgeProcess.start()
        self._judge, self._agent, self._verdicts = judge, prelude.new_name(), {}
        socket_path = os.path.join(folder, f"judge-{secrets.token_hex(6)}.sock")
        judge.open(socket_path, trusted_names(_read_only_sources(nb)), plan.get("uid") if plan.get("sandbox") else None)
        first = self._prelude = new_code_cell(prelude.prelude(socket_path, self._agent))
        nb.cells.insert(0, first)
        try:
            nb, resources = super().preprocess(nb, resources, km=km)
        finally:
            nb.cells.remove(first)
            judge.close_notebook()
            if own:
                judge.stop()
            if not plan.get("judge_dir"):
                shutil.rmtree(folder, ignore_errors=True)
            self._judge = None
        for cell in nb.cells:
            if is_test_cell(cell):
                settle(cell, self._verdicts.get(cell.metadata["nbgrader"]["grade_id"]))
        resources[VERDICTS] = dict(self._verdicts)
        return nb, resources

    def reset_execution_trackers(self) -> None:
        super().reset_execution_trackers()
        self._outputs = self._budget()  # A fresh count for each run of the notebook.

    def _budget(self) -> OutputBudget:
        return OutputBudget(self.max_output_bytes, self.max_cell_output_bytes, self.max_notebook_output_bytes)

    def process_message(self, msg: dict, cell: NotebookNode, cell_index: int):
        """nbclient's, with each output bounded in bytes before anything keeps it (grading/isolation/outputs.py)."""
        msg_type = msg.get("msg_type")
        # What nbclient clears of the cell's own outputs no longer counts (an Output widget's hook clears its own).
        if not self.output_hook_stack.get((msg.get("parent_header") or {}).get("msg_id")):
            if msg_type == "clear_output" and not (msg.get("content") or {}).get("wait"):
                self._outputs.cleared()
            elif self.clear_before_next_output and msg_type in ("stream", "display_data", "execute_result", "error"):
                self._outputs.cleared()  # nbclient clears them before it adds this output.
        bounded = self._outputs.bound(msg)
        if bounded is None:
            return None
        return super().process_message(bounded, cell, cell_index)

    def on_cell_executed(self, **kwargs):
        """nbgrader's, which adds the execute reply's error when no error of its name was printed: bounded too."""
        reply, cell = kwargs.get("execute_reply"), kwargs.get("cell")
        if reply and (reply.get("content") or {}).get("status") == "error":
            kwargs["execute_reply"] = dict(reply, content=self._outputs.reply(reply["content"]))
        before = len(cell.outputs) if cell is not None else 0
        result = super().on_cell_executed(**kwargs)
        for output in cell.outputs[before:] if cell is not None else []:
            self._outputs.counted(output)
        return result

    async def async_execute_cell(self, cell: NotebookNode, cell_index: int, execution_count=None,
                                 store_history: bool = True):
        self._outputs.start_cell()
        try:
            return await self._execute_cell(cell, cell_index, execution_count, store_history)
        finally:
            note = self._outputs.end_cell()
            if note is not None:
                cell.outputs.append(note)

    async def _execute_cell(self, cell: NotebookNode, cell_index: int, execution_count, store_history: bool):
        # IPython's history (``In``, ``_i1``...) holds the cells one process runs, numbered as there: not the hidden
        # first cell, and a test cell's own source where its serve line ran (the agent puts it there: red team,
        # round 17, an ``_i<N>`` that named the agent told an answer it was judged).
        if cell is getattr(self, "_prelude", None):
            store_history = False
        if self._judge is None or not is_test_cell(cell):
            return await super().async_execute_cell(cell, cell_index, execution_count, store_history)
        grade_id, source = cell.metadata["nbgrader"]["grade_id"], cell.source
        timeout = float(self.timeout) if self.timeout else NO_TIMEOUT
        epoch = secrets.token_hex(8)
        self._judge.start_test(epoch, grade_id, source, timeout)
        cell.source = prelude.serve_line(self._agent, epoch, source)
        try:
            return await super().async_execute_cell(cell, cell_index, execution_count, store_history)
        finally:
            cell.source = source
            self._judge.cell_done(epoch)
            self._verdicts[grade_id] = self._judge.verdict(grade_id, timeout + 60)

    # nbclient binds its synchronous form to its own coroutine; this one is bound to the override.
    execute_cell = run_sync(async_execute_cell)


class SaveVerdicts(SaveAutoGrades):
    """nbgrader's SaveAutoGrades, with a test cell's score from the judge's verdict alone (all or nothing)."""

    judged = Bool(True, help="Score test cells by the judge's verdicts; False keeps nbgrader's rule.").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict):
        self._verdicts = resources.get(VERDICTS, {})
        return super().preprocess(nb, resources)

    def _add_score(self, cell: NotebookNode, resources: dict) -> None:
        if not self.judged or not is_test_cell(cell):
            return super()._add_score(cell, resources)
        grade_id = cell.metadata["nbgrader"]["grade_id"]
        grade = self.gradebook.find_grade(grade_id, self.notebook_id, self.assignment_id, self.student_id)
        verdict = self._verdicts.get(grade_id)
        grade.auto_score = float(cell.metadata["nbgrader"]["points"]) if verdict and verdict["passed"] else 0.0
        grade.needs_manual_grade = grade.manual_score is not None
        self.gradebook.db.commit()
