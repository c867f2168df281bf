"""How many bytes a notebook's outputs may hold while it is graded, counted as each message arrives from the kernel.

nbgrader's ``LimitOutput`` counts lines, never bytes, and runs after the notebook has run: a solution cell that
printed 300 MB on one line, or raised an exception with a 400 MB message, went whole into the grading process's
memory (above 5 GB), the autograded notebook and the feedback. `OutputBudget` bounds every output as it arrives,
in grading/judge/execute.py (`JudgedExecute.process_message`, before nbclient stores anything): stream text
(before nbclient joins a cell's streams), an error's name, value and traceback (the kernel's message, and its
execute reply, which nbgrader adds when no error of that name was printed), display data and execute results of
every MIME type with their metadata, display updates, and the widget state that comm messages carry.

An output that fits what is left (the least of `MAX_OUTPUT_BYTES`, what is left of `MAX_CELL_OUTPUT_BYTES` for its
cell and of `MAX_NOTEBOOK_OUTPUT_BYTES` for the notebook) is kept exactly as it came, so honest notebooks are graded
byte for byte as before (a figure is about 0.1 MB, a large one 4 MB). A larger one is cut to what is left and ends
with a marker that says how many bytes the grader cut and which limit did it; once nothing is left, further outputs
of the cell are dropped, and one line at the end of the cell says how many and how many bytes. A cell's outputs that
``clear_output`` removed no longer count.
"""

from __future__ import annotations

MAX_OUTPUT_BYTES = 8 << 20  # One output: a print (one stream message), an image, an error, a widget's state.
MAX_CELL_OUTPUT_BYTES = 16 << 20  # Every output of one cell together.
MAX_NOTEBOOK_OUTPUT_BYTES = 32 << 20  # Every output of one notebook together.
# The most characters of a failing check's message (a student's value can be in it) that the judge sends and that
# a test cell's error shows (grading/judge/runner.py, grading/judge/execute.py: `settle`).
MAX_JUDGE_MESSAGE_CHARS = 4000
# What a cut output keeps of what identifies it: an error's name, a display's id, a widget state's small entries.
_NAME_BYTES = 256
_ENCODE_CHUNK = 1 << 20
_SHOWN = ("stream", "display_data", "execute_result", "update_display_data", "error")
_COMMS = ("comm_open", "comm_msg")


def text_bytes(text: str) -> int:
    """The size of ``text`` in UTF-8, without copying it whole (an ASCII string answers at once)."""
    if text.isascii():
        return len(text)
    return sum(len(text[start:start + _ENCODE_CHUNK].encode("utf-8", "surrogatepass"))
               for start in range(0, len(text), _ENCODE_CHUNK))


def clip_text(text: str, limit: int) -> str:
    """The longest start of ``text`` that holds at most ``limit`` bytes in UTF-8."""
    limit = max(limit, 0)
    if text.isascii() or len(text) * 4 <= limit:
        return text[:limit]
    return text[:limit].encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")


def measure(value) -> int:
    """About the bytes ``value`` takes as JSON: its strings in UTF-8, and a little for each other value."""
    total, pending = 0, [value]
    while pending:  # Not recursive: a kernel's JSON may nest deeper than Python recurses.
        item = pending.pop()
        if isinstance(item, str):
            total += text_bytes(item)
        elif isinstance(item, (bytes, bytearray, memoryview)):
            total += len(item)
        elif isinstance(item, dict):
            total += 2 + 2 * len(item)
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, (list, tuple)):
            total += 2 + len(item)
            pending.extend(item)
        else:
            total += 8
    return total


def _mebibytes(count: int) -> str:
    return f"{count / (1 << 20):g} MiB"


class OutputBudget:
    """The bytes a notebook's outputs hold, and what is left for the next one (see the module's docstring)."""

    def __init__(self, per_output: int = MAX_OUTPUT_BYTES, per_cell: int = MAX_CELL_OUTPUT_BYTES,
                 per_notebook: int = MAX_NOTEBOOK_OUTPUT_BYTES):
        self.per_output, self.per_cell, self.per_notebook = per_output, per_cell, per_notebook
        self.earlier = 0  # Bytes of the notebook's earlier cells.
        self.cell = 0  # Bytes of the current cell.
        self.dropped = self.dropped_bytes = 0  # Outputs of the current cell dropped whole, and their bytes.
        self.reason = ""

    def start_cell(self) -> None:
        self.earlier += self.cell
        self.cell = self.dropped = self.dropped_bytes = 0

    def cleared(self) -> None:
        """The current cell's outputs were cleared (``clear_output``): they no longer count."""
        self.cell = 0

    def _left(self) -> tuple[int, str]:
        """What the next output may hold, and the limit that decides it."""
        return min((self.per_output, f"one output may hold {_mebibytes(self.per_output)}"),
                   (self.per_cell - self.cell, f"a cell's outputs may hold {_mebibytes(self.per_cell)} together"),
                   (self.per_notebook - self.earlier - self.cell,
                    f"a notebook's outputs may hold {_mebibytes(self.per_notebook)} together"),
                   key=lambda pair: pair[0])

    def _marker(self, cut: int, reason: str) -> str:
        return f"\n[the grader cut {cut:,} bytes of this output here: {reason}]\n"

    def bound(self, msg: dict) -> dict | None:
        """``msg`` as it may be kept: the same message when it fits, a cut copy when it does not, None to drop it."""
        msg_type = msg.get("msg_type") or msg.get("header", {}).get("msg_type")
        if msg_type not in _SHOWN and msg_type not in _COMMS:
            return msg
        content = msg.get("content") or {}
        if msg_type in _COMMS:
            size = measure(content.get("data")) + sum(len(buffer) for buffer in msg.get("buffers") or [])
        else:
            size = measure(content)
        left, reason = self._left()
        if size <= left:
            self.cell += size
            return msg
        if left <= 0:
            self.dropped += 1
            self.dropped_bytes += size
            self.reason = reason
            return None
        if msg_type in _COMMS:
            cut = dict(content, data=_small_entries(content.get("data")))
            kept = dict(msg, content=cut, buffers=[])
        else:
            cut = self.cut_content(msg_type, content, left, reason)
            kept = dict(msg, content=cut)
        self.cell += measure(cut) if msg_type not in _COMMS else measure(cut.get("data"))
        return kept

    def cut_content(self, msg_type: str, content: dict, left: int, reason: str) -> dict:
        """``content`` (of a message of ``msg_type``) cut to about ``left`` bytes, with the marker."""
        if msg_type == "stream":
            name = content.get("name") if content.get("name") in ("stdout", "stderr") else "stdout"
            whole = _text(content.get("text"))
            text = clip_text(whole, left)
            return {"name": name, "text": text + self._marker(text_bytes(whole) - text_bytes(text), reason)}
        if msg_type == "error":
            ename = clip_text(_text(content.get("ename")), _NAME_BYTES)
            room = max(left - text_bytes(ename), 0)
            evalue = clip_text(_text(content.get("evalue")), room // 2)
            room -= text_bytes(evalue)
            traceback = content.get("traceback")
            traceback = traceback if isinstance(traceback, list) else [_text(traceback)]
            lines = []
            for line in traceback:
                line = clip_text(_text(line), room)
                room -= text_bytes(line)
                lines.append(line)
                if room <= 0:
                    break
            kept = text_bytes(ename) + text_bytes(evalue) + sum(map(text_bytes, lines))
            whole = sum(text_bytes(_text(part)) for part in [content.get("ename"), content.get("evalue"), *traceback])
            marker = self._marker(max(whole - kept, 0), reason).strip()
            return dict({key: value for key, value in content.items() if key in ("execution_count", "status")},
                        ename=ename, evalue=f"{evalue} {marker}", traceback=[*lines, marker])
        # display_data, execute_result, update_display_data: what text/plain can keep, and the marker.
        data = content.get("data") if isinstance(content.get("data"), dict) else {}
        text = clip_text(_text(data.get("text/plain")), left)
        whole = measure([content.get("data"), content.get("metadata")])
        cut = {"data": {"text/plain": text + self._marker(max(whole - text_bytes(text), 0), reason)}, "metadata": {}}
        if "execution_count" in content:
            cut["execution_count"] = content["execution_count"]
        if isinstance(content.get("transient"), dict) and measure(content["transient"]) <= _NAME_BYTES:
            cut["transient"] = content["transient"]
        return cut

    def reply(self, content: dict) -> dict:
        """An execute reply's error, bounded as an output (nbgrader adds it to the cell when no error of that name
        was printed); not counted: `counted` does when it is added."""
        size = measure(content)
        left, reason = self._left()
        if size <= left:
            return content
        return self.cut_content("error", content, max(left, 0), reason)

    def counted(self, output: dict) -> None:
        self.cell += measure(output)

    def end_cell(self):
        """The line (a stream output) that says what was dropped of the current cell, or None."""
        if not self.dropped:
            return None
        from nbformat import NotebookNode

        outputs = "output" if self.dropped == 1 else "outputs"
        return NotebookNode(output_type="stream", name="stdout",
                            text=f"[the grader dropped {self.dropped:,} more {outputs} of this cell "
                                 f"({self.dropped_bytes:,} bytes): {self.reason}]\n")


def _text(value) -> str:
    """An output's text: nbformat allows a list of lines."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(item for item in value if isinstance(item, str))
    return ""


def _small_entries(data) -> dict:
    """A widget message's data with its small entries only (a widget's state is kept whole in the notebook)."""
    if not isinstance(data, dict):
        return {}
    kept = {}
    for key, value in data.items():
        if key == "state" and isinstance(value, dict):
            kept[key] = {name: item for name, item in value.items() if measure(item) <= _NAME_BYTES}
        elif key != "buffer_paths" and measure(value) <= _NAME_BYTES:
            kept[key] = value
    return kept
