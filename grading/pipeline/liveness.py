"""The run stage's watch on a student's kernel: one that dies or stops answering ends its notebook at once.

`WatchedExecute` is the autograde step that runs the notebook (grading/judge/execute.py: `JudgedExecute`, every
test cell judged outside the kernel) with a watch on the kernel. When the kernel

- dies (``os._exit``, a signal, the memory limit),
- stops answering: it ends a cell's request without a reply and does not answer a silent ``pass`` either (its
  message handler fails on every request, as after ``sys.stdout = None``; a kernel that answers it failed on that
  cell alone, which then fails, and grading goes on), or lets a cell's whole time limit pass without even taking
  up the request, or
- ignores the interrupt that ends a cell past its time limit (nbclient's wait for the kernel to go idle), or goes on
  writing output for that long after a cell's reply,

the notebook's remaining cells are not sent to it: each gets one error saying why, its test cells no verdict (so
they score 0), and grading goes on with the next steps. The test cells judged before keep their verdicts, which
the judge computed on its own (the kernel's later state cannot change them), so their points are kept. Without
this, every later cell waited out its own time limit until the student's limit killed the grading process, and the
notebook lost every point (or, after a kernel death, nbgrader's autograde failed and scored nothing).

What stopped the kernel is kept for the grading process (`reset`, `stops`), which reports it in the notebook's
status (grading/pipeline/jobs.py: `status_of`).
"""

from __future__ import annotations

import asyncio

from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import ensure_async, run_sync
from nbformat import NotebookNode
from traitlets import Float

from grading.judge.execute import NOT_JUDGED, JudgedExecute, error_output

_stops: list[dict] = []  # What stopped each notebook's kernel since `reset`, in this grading process.


def reset() -> None:
    """Forget the stops seen so far (the grading process calls it before each autograde)."""
    _stops.clear()


def stops() -> list[dict]:
    """What stopped a kernel since `reset`, each ``{"kind", "cell", "reason"}``; the kinds: ``died``, ``silent`` (it
    ended a request without a reply), ``stuck`` (it never took up a request), ``interrupt`` (it ignored the interrupt
    past a cell's time limit), ``output`` (its output did not end after its reply)."""
    return [dict(stop) for stop in _stops]


class _Stopped(Exception):
    """The kernel no longer answers: raised from nbclient's wait for a reply, caught per cell."""


class WatchedExecute(JudgedExecute):
    """`JudgedExecute` that ends a notebook at once when its kernel dies or stops answering (see the module)."""

    reply_grace = Float(5.0, help="Seconds a cell's reply may come after the kernel said it is idle again; past "
                                  "them the kernel is taken to have stopped answering.").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict, km=None):
        self._stop: dict | None = None
        self._timer: asyncio.TimerHandle | None = None
        shutdown = self.shutdown_kernel
        try:
            nb, resources = super().preprocess(nb, resources, km=km)
        finally:
            self.shutdown_kernel = shutdown
            if self._timer is not None:
                self._timer.cancel()
        if self._stop is not None:
            _stops.append(self._stop)
            self.log.error("%s; the notebook's remaining cells were not run", self._stop["reason"])
            for cell in nb.cells:  # `settle` names no reason for the test cells that were not run.
                for output in cell.get("outputs", []):
                    if output.output_type == "error" and output.get("evalue") == NOT_JUDGED:
                        output.evalue = f"this test cell was not run: {self._stop['reason']}"
                        output.traceback = [f"JudgeError: {output.evalue}"]
        return nb, resources

    def _where(self, cell: NotebookNode, cell_index: int) -> str:
        """The cell as a status names it: its number in the student's notebook, and its grade id if it has one."""
        number = cell_index + (0 if getattr(self, "_judge", None) is not None else 1)  # The judge's first cell.
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        return f"cell {number} ({grade_id})" if grade_id else f"cell {number}"

    async def async_execute_cell(self, cell: NotebookNode, cell_index: int, execution_count=None,
                                 store_history: bool = True):
        if self._stop is not None:
            if cell.cell_type == "code" and cell.source.strip() \
                    and self.skip_cells_with_tag not in cell.metadata.get("tags", []):
                cell.outputs = [error_output(f"KernelStopped: not run: {self._stop['reason']}")]
            return cell
        self._seen: set[str] = set()
        self._timed_out: float | None = None  # The cell's time limit, once it ran past it.
        self._unreplied = False  # The kernel ended the cell's request without a reply.
        self._cell, self._cell_index = cell, cell_index
        try:
            return await super().async_execute_cell(cell, cell_index, execution_count, store_history)
        except (_Stopped, DeadKernelError, CellTimeoutError) as error:
            if self._unreplied and self._stop is None:
                if await self._answers():
                    # That request alone failed in the kernel (its parser gave up on the cell, say): the cell fails.
                    cell.outputs.append(error_output("KernelError: the kernel ended this cell without a reply (its "
                                                     "message handler raised)"))
                    return cell
                alive = await ensure_async(self.km.is_alive())
                self._stop = self._silent(cell, cell_index) if alive else self._why(DeadKernelError(), cell, cell_index)
            self._stop = self._stop or self._why(error, cell, cell_index)
            # The kernel is not asked to shut down (it would not answer): it is ended at once.
            self.shutdown_kernel = "immediate"
            cell.outputs.append(error_output(f"KernelStopped: {self._stop['reason']}"))
            return cell
        finally:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    # nbclient binds its synchronous form to its own coroutine; this one is bound to the override.
    execute_cell = run_sync(async_execute_cell)

    def _why(self, error: Exception, cell: NotebookNode, cell_index: int) -> dict:
        where = self._where(cell, cell_index)
        if isinstance(error, DeadKernelError):
            return {"kind": "died", "cell": where, "reason": f"the kernel died in {where}"}
        if self._timed_out is not None:
            return {"kind": "interrupt", "cell": where,
                    "reason": f"a cell ignored the interrupt: {where} ran past its {self._timed_out:g} s time limit "
                              f"and the kernel did not answer the interrupt within {self.iopub_timeout:g} s"}
        return {"kind": "output", "cell": where,
                "reason": f"the kernel did not finish {where}: its output went on for more than "
                          f"{self.iopub_timeout:g} s after the cell's reply"}

    def process_message(self, msg: dict, cell: NotebookNode, cell_index: int):
        kind = msg.get("msg_type", "")
        state = msg.get("content", {}).get("execution_state") if kind == "status" else None
        self._seen.add(state or kind)
        if state == "idle" and self._timer is None:
            # The kernel is done with the request: ipykernel sent its reply before saying so, unless its message
            # handler failed (the kernel then answers no request any more).
            self._arm(self.task_poll_for_reply, cell, cell_index)
        return super().process_message(msg, cell, cell_index)

    def _arm(self, task: asyncio.Future, cell: NotebookNode, cell_index: int) -> None:
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self.reply_grace, self._no_reply, task, cell, cell_index,
                                      loop.time() + self.reply_grace)

    def _no_reply(self, task: asyncio.Future, cell: NotebookNode, cell_index: int, due: float) -> None:
        if task is None or task.done() or self._stop is not None:
            return
        if asyncio.get_running_loop().time() - due > self.reply_grace / 2:
            # This process did not run for a while (a busy machine): the reply may be waiting to be read.
            self._arm(task, cell, cell_index)
            return
        self._unreplied = True
        task.cancel()  # nbclient then raises DeadKernelError; `async_execute_cell` asks the kernel whether it answers.

    async def _answers(self) -> bool:
        """Whether the kernel still answers a request: a silent ``pass`` gets its reply within ``reply_grace``."""
        loop = asyncio.get_running_loop()
        try:
            probe = await ensure_async(self.kc.execute("pass", silent=True, store_history=False))
            deadline = loop.time() + self.reply_grace
            while deadline > loop.time():
                reply = await ensure_async(self.kc.shell_channel.get_msg(timeout=deadline - loop.time()))
                if reply["parent_header"].get("msg_id") == probe:
                    return True
        except Exception:  # noqa: BLE001 - Empty (no reply in time), or the kernel's channels are gone.
            return False
        return False

    def _silent(self, cell: NotebookNode, cell_index: int) -> dict:
        where = self._where(cell, cell_index)
        return {"kind": "silent", "cell": where,
                "reason": f"the kernel stopped answering in {where}: it ended the cell's request without a reply (its "
                          "message handler fails, so no later request gets one)"}

    async def _async_handle_timeout(self, timeout: int, cell: NotebookNode | None = None):
        if "idle" in self._seen:  # Done with the request, yet no reply (as `_no_reply`, when the limit came first).
            self._unreplied = True
            raise _Stopped("no reply")
        if not self._seen & {"busy", "execute_input"}:
            where = self._where(self._cell, self._cell_index)
            self._stop = {"kind": "stuck", "cell": where,
                          "reason": f"the kernel stopped answering in {where}: in the cell's {timeout:g} s time limit "
                                    "it never took up the request"}
            raise _Stopped(self._stop["reason"])
        self._timed_out = timeout
        return await super()._async_handle_timeout(timeout, cell)
