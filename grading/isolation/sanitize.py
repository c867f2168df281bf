"""Nothing a student wrote runs in a grader's browser: the notebooks the course renders as HTML are sanitized.

Formgrader shows a submission by converting ``autograded/<student>/<assignment>/<notebook>.ipynb``
to HTML with nbconvert, and ``nbgrader generate_feedback`` does the same for the feedback files.
Neither sanitizes: raw HTML in a markdown cell, a ``javascript:`` link, ``display(HTML(...))``,
``display(Javascript(...))`` or an image's width in an output's metadata all reach the page as they
are, and run with the instructor's Jupyter session. `SanitizeNotebook` runs as the last step of
autograding and of feedback (nbgrader_config.py), so every notebook formgrader or feedback renders
has already been cleaned:

- **Markdown and raw cells** that are not the course's own (added or edited by the student) are
  rendered to HTML as nbconvert renders them, the HTML is cleaned by bleach (the sanitizer that
  nbconvert itself uses) with the allow-list below, and the cell's source becomes that clean HTML
  on one line, which every Markdown renderer passes through unchanged. Tags that are not allowed
  show as text, so the instructor sees what the student wrote.
- **Outputs** keep only the formats that cannot hold script: text, PNG, JPEG, JSON and LaTeX as
  they are, HTML cleaned by bleach, Markdown rendered and cleaned into HTML. JavaScript, SVG,
  widget views and every other format are removed (an output left empty gets a one-line note).
  Output metadata keeps only numeric sizes and alt text; tracebacks and streams are text, which
  nbconvert escapes.
- **Metadata that templates trust** is reduced to what grading needs: nbgrader's fields (a grade id
  must be a plain identifier), tags that are plain words, the notebook's kernel and language.

`markdown_findings` lists the raw HTML, scripts and script links in a student's markdown, for the
grading command's "needs a manual look" status (the score is unchanged).
"""

from __future__ import annotations

import copy
import functools
import html
import re
from pathlib import Path

import bleach
import mistune
import nbformat
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbconvert.filters.strings import strip_files_prefix
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# What nbconvert's own clean_html filter allows, plus what Markdown renders to.
ALLOWED_TAGS = frozenset(bleach.ALLOWED_TAGS) | HEADINGS | {
    "p", "br", "hr", "div", "span", "pre", "code", "kbd", "samp", "var", "sub", "sup", "del", "s", "ins", "mark",
    "small", "u", "q", "dl", "dt", "dd", "img", "table", "thead", "tbody", "tfoot", "tr", "th", "td", "caption",
    "colgroup", "col", "figure", "figcaption", "details", "summary"}
ALLOWED_PROTOCOLS = frozenset({"http", "https", "mailto", "data"})
# Output formats that are shown as they are (nbconvert escapes them or puts them in an <img> as base64).
SAFE_OUTPUT_TYPES = frozenset({"text/plain", "text/latex", "application/json", "image/png", "image/jpeg"})
_IMAGE_DATA_URL = re.compile(r"data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]*", re.IGNORECASE)
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
# nbgrader names cells with ids like these; anything else in a grade id could break out of an attribute.
GRADE_ID = re.compile(r"[A-Za-z0-9_-]+")
_TAG = re.compile(r"[A-Za-z0-9_.:-]+")
_NBGRADER_FIELDS = {"grade": bool, "solution": bool, "locked": bool, "task": bool, "points": (int, float),
                    "schema_version": int, "checksum": str, "cell_type": str, "grade_id": str, "score": (int, float),
                    "comment": str}
# Ids of formgrader's own elements: a student's heading with one of them would capture formgrader's widgets.
_PAGE_IDS = frozenset({"notebook", "notebook-container", "statusmessage", "toc", "top"})
WRAPPER_CLASS = "course-sanitized"
# The nbgrader option that turns the sanitizer off (the tests that prove it works use it).
UNSANITIZED = "--SanitizeNotebook.enabled=False"


def _scheme(value: str) -> str:
    """The URL scheme of ``value`` as a browser reads it (control characters and spaces dropped)."""
    compact = re.sub(r"[\x00-\x20]", "", html.unescape(value)).lower()
    match = re.match(r"([a-z][a-z0-9+.-]*):", compact)
    return match.group(1) if match else ""


def _attribute_filter(reserved_ids: frozenset[str]):
    def allowed(tag: str, name: str, value: str) -> bool:
        if name in ("class", "title"):
            return True
        if name == "id":
            return tag in HEADINGS and value not in reserved_ids and value not in _PAGE_IDS
        if tag == "a" and name == "href":
            return _scheme(value) != "data"
        if tag == "img" and name == "src":
            # An image loads as the page opens, with the grader's cookies: no address on the Jupyter
            # server itself (a relative "/logout" would log the grader out), only the web and data: images.
            scheme = _scheme(value)
            return scheme in ("http", "https") or (scheme == "data" and bool(_IMAGE_DATA_URL.fullmatch(value.strip())))
        if tag == "img" and name in ("alt", "width", "height"):
            return True
        if tag in ("td", "th") and name in ("align", "colspan", "rowspan"):
            return True
        return tag == "ol" and name == "start"
    return allowed


@functools.lru_cache(maxsize=64)
def _cleaner(reserved_ids: frozenset[str]) -> bleach.Cleaner:
    return bleach.Cleaner(tags=ALLOWED_TAGS, attributes=_attribute_filter(reserved_ids), protocols=ALLOWED_PROTOCOLS,
                          strip=False, strip_comments=True)


def clean_html(text: str, reserved_ids: frozenset[str] = frozenset()) -> str:
    """``text`` with every tag, attribute and URL that is not on the allow-list made harmless (bleach).

    Tags that are not allowed are escaped, so they show as text; attributes that are not allowed
    (event handlers, ``style``, ``srcdoc``) and URLs with other schemes (``javascript:``) are
    dropped. ``reserved_ids`` are element ids a heading may not take (formgrader's widgets use them).
    """
    return _cleaner(frozenset(reserved_ids)).clean(text)


def render_markdown(source: str, attachments: dict | None = None) -> str:
    """``source`` as HTML, rendered the way nbconvert's HTML export (formgrader, feedback) renders it.

    Raises:
        Exception: whatever nbconvert raises for Markdown it cannot render (a missing attachment).
    """
    renderer = IPythonRenderer(escape=False, attachments=attachments or {})
    return strip_files_prefix(MarkdownWithMath(renderer=renderer).render(source))


def as_markdown(clean: str) -> str:
    """Clean HTML as Markdown source that renders to exactly that HTML.

    Markdown passes an HTML block through as it is until the first blank line, so the HTML is put
    in one ``<div>`` on one line: every newline becomes ``&#10;``, the same character to a browser.
    """
    return f'<div class="{WRAPPER_CLASS}">' + clean.strip().replace("\r", "").replace("\n", "&#10;") + "</div>"


def sanitized_markdown(source: str, attachments: dict | None = None,
                       reserved_ids: frozenset[str] = frozenset()) -> str:
    """Markdown source whose rendering is ``source``'s rendering cleaned by bleach (see `as_markdown`).

    Markdown that nbconvert cannot render (for example one that names a missing attachment) is
    shown as escaped text instead.
    """
    try:
        rendered = render_markdown(source, attachments)
    except Exception:  # noqa: BLE001 - any Markdown nbconvert cannot render is shown as text.
        rendered = f"<pre>{html.escape(source)}</pre>"
    return as_markdown(clean_html(rendered, reserved_ids))


def _safe_image(data) -> bool:
    return isinstance(data, str) and bool(_BASE64.fullmatch(data))


def _clean_output_metadata(metadata: dict) -> dict:
    """Keep only what nbconvert's templates use to size and describe an image, as plain values."""
    kept = {}
    for mime, values in (metadata or {}).items():
        if mime not in ("image/png", "image/jpeg") or not isinstance(values, dict):
            continue
        entry = {key: values[key] for key in ("width", "height")
                 if type(values.get(key)) in (int, float) and values[key] >= 0}
        if isinstance(values.get("alt"), str):
            entry["alt"] = values["alt"]
        if values.get("unconfined") is True:
            entry["unconfined"] = True
        if entry:
            kept[mime] = entry
    return kept


def _as_text(value) -> str:
    return "".join(value) if isinstance(value, list) else value if isinstance(value, str) else str(value)


def sanitize_outputs(outputs: list, reserved_ids: frozenset[str] = frozenset()) -> list:
    """The outputs of one code cell, with every format that can hold script cleaned or removed."""
    kept = []
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            kept.append(nbformat.v4.new_output("stream", name="stderr" if output.get("name") == "stderr"
                                               else "stdout", text=_as_text(output.get("text", ""))))
        elif kind == "error":
            kept.append(nbformat.v4.new_output(
                "error", ename=_as_text(output.get("ename", "")), evalue=_as_text(output.get("evalue", "")),
                traceback=[_as_text(line) for line in output.get("traceback", [])]))
        elif kind in ("display_data", "execute_result"):
            data, removed = {}, []
            for mime, value in (output.get("data") or {}).items():
                if mime in ("image/png", "image/jpeg"):
                    if _safe_image(value):
                        data[mime] = value
                    else:
                        removed.append(mime)
                elif mime in SAFE_OUTPUT_TYPES:
                    data[mime] = value if mime == "application/json" else _as_text(value)
                elif mime == "text/html":
                    data["text/html"] = clean_html(_as_text(value), reserved_ids)
                elif mime == "text/markdown" and "text/html" not in output.get("data", {}):
                    data["text/html"] = clean_html(render_markdown(_as_text(value)), reserved_ids)
                elif mime != "text/markdown":
                    removed.append(mime)
            if not data:
                data["text/plain"] = f"[output removed before grading: {', '.join(removed) or 'empty'} can run script]"
            new = nbformat.v4.new_output(kind, data=data, metadata=_clean_output_metadata(output.get("metadata")))
            if kind == "execute_result":
                count = output.get("execution_count")
                new["execution_count"] = count if type(count) is int else None
            kept.append(new)
    return kept


def _clean_cell_metadata(metadata: dict) -> dict:
    """Keep nbgrader's fields (with a plain grade id) and plain tags; drop the rest, which templates may trust."""
    kept = {}
    nbgrader = metadata.get("nbgrader")
    if isinstance(nbgrader, dict) and isinstance(nbgrader.get("grade_id"), str) and GRADE_ID.fullmatch(
            nbgrader["grade_id"]):
        kept["nbgrader"] = {key: value for key, value in nbgrader.items()
                            if key in _NBGRADER_FIELDS and isinstance(value, _NBGRADER_FIELDS[key])
                            and not (key == "checksum" and not re.fullmatch(r"[0-9a-f]*", value))}
    tags = metadata.get("tags")
    if isinstance(tags, list):
        kept["tags"] = [tag for tag in tags if isinstance(tag, str) and _TAG.fullmatch(tag)]
    for key in ("deletable", "editable"):
        if isinstance(metadata.get(key), bool):
            kept[key] = metadata[key]
    return kept


def _clean_notebook_metadata(metadata: dict) -> dict:
    kept = {}
    kernelspec = metadata.get("kernelspec")
    if isinstance(kernelspec, dict) and all(isinstance(kernelspec.get(key), str) for key in ("name", "display_name")):
        kept["kernelspec"] = {key: value for key, value in kernelspec.items()
                              if key in ("name", "display_name", "language") and isinstance(value, str)}
    language = metadata.get("language_info")
    if isinstance(language, dict) and isinstance(language.get("name"), str):
        kept["language_info"] = {key: value for key, value in language.items()
                                 if key in ("name", "version", "file_extension", "mimetype", "pygments_lexer",
                                            "nbconvert_exporter") and isinstance(value, str)}
    return kept


def _given_sources(release: NotebookNode | None) -> set[str]:
    return {cell.source for cell in (release.cells if release else []) if cell.cell_type in ("markdown", "raw")}


def sanitize_notebook(notebook: NotebookNode, release: NotebookNode | None = None) -> NotebookNode:
    """A copy of ``notebook`` that shows nothing active in any HTML rendering (see the module's docstring).

    Markdown and raw cells identical to one of ``release`` (the course's own text, no attachments)
    are kept as they are; every other one is cleaned.
    """
    notebook = copy.deepcopy(notebook)
    given = _given_sources(release)
    grade_ids = {cell.metadata.get("nbgrader", {}).get("grade_id") for cell in notebook.cells}
    reserved = frozenset(str(grade_id) + suffix for grade_id in grade_ids if grade_id
                         for suffix in ("", "-comment", "_extra_credit"))
    notebook.metadata = _clean_notebook_metadata(notebook.get("metadata", {}))
    for cell in notebook.cells:
        cell.metadata = _clean_cell_metadata(cell.get("metadata", {}))
        comment = cell.metadata.get("nbgrader", {}).get("comment")
        if comment:
            cell.metadata["nbgrader"]["comment"] = sanitized_markdown(comment, None, reserved)
        if cell.cell_type in ("markdown", "raw"):
            attachments = cell.pop("attachments", None)
            if cell.cell_type == "raw":
                cell.source = clean_html(cell.source, reserved)
            elif attachments or cell.source not in given:
                cell.source = sanitized_markdown(cell.source, attachments, reserved)
        elif cell.cell_type == "code":
            cell.outputs = sanitize_outputs(cell.get("outputs", []), reserved)
    return notebook


@functools.lru_cache(maxsize=16)
def _read_release(path: str, modified: float) -> NotebookNode | None:
    return nbformat.read(path, as_version=4)


class SanitizeNotebook(NbGraderPreprocessor):
    """nbgrader step that applies `sanitize_notebook` (the last step of autograding and of feedback).

    ``--SanitizeNotebook.enabled=False`` turns it off (only the tests that prove it works do that).
    """

    release_directory = Unicode(
        "release", help="Folder of the release notebooks (<assignment>/<notebook>.ipynb): their own "
                        "markdown is the course's and is kept as it is.").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        info = resources.get("nbgrader", {})
        path = Path(self.release_directory) / str(info.get("assignment")) / f"{info.get('notebook')}.ipynb"
        release = _read_release(str(path), path.stat().st_mtime) if path.is_file() else None
        return sanitize_notebook(nb, release), resources


def _tags(raw: str) -> list[str]:
    return [name.lower() for name in re.findall(r"<\s*([A-Za-z][A-Za-z0-9:-]*)", raw)]


def _walk(tokens: list) -> list:
    for token in tokens:
        yield token
        yield from _walk(token.get("children") or [])


def markdown_findings(notebook: NotebookNode, release: NotebookNode | None = None, limit: int = 8) -> list[str]:
    """Notes on raw HTML, attachments and script links in the markdown a student added or edited.

    One note per kind of thing found, naming the cells (``<script> (cells 4, 6)``). Cells
    identical to one of ``release`` are the course's own and are not looked at; tags that the
    release's own markdown uses (a ``<br>``, say) are not noted either.
    """
    given = _given_sources(release)
    parse = mistune.create_markdown(renderer=None)
    known = {tag for source in given for token in _walk(parse(source))
             if token["type"] in ("block_html", "inline_html") for tag in _tags(token.get("raw", ""))}
    cells_by_finding: dict[str, list[int]] = {}
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type not in ("markdown", "raw") or (cell.source in given and not cell.get("attachments")):
            continue
        found = []
        if cell.cell_type == "raw":
            found += [f"<{tag}>" for tag in _tags(cell.source)]
        else:
            for token in _walk(parse(cell.source)):
                if token["type"] in ("block_html", "inline_html"):
                    found += [f"<{tag}>" for tag in _tags(token.get("raw", "")) if tag not in known]
                elif token["type"] in ("link", "image"):
                    scheme = _scheme(token.get("attrs", {}).get("url", ""))
                    if scheme and scheme not in ("http", "https", "mailto", "attachment"):
                        found.append(f"a {scheme}: link")
        for bundle in (cell.get("attachments") or {}).values():
            found += [f"an attachment of type {mime}" for mime in bundle
                      if mime not in ("image/png", "image/jpeg", "image/gif")]
        for what in dict.fromkeys(found):
            cells_by_finding.setdefault(what, []).append(index + 1)
    notes = [f"{what} (cell{'s' if len(cells) > 1 else ''} {', '.join(map(str, cells))})"
             for what, cells in cells_by_finding.items()]
    if len(notes) > limit:
        notes = notes[:limit] + [f"and {len(notes) - limit} more"]
    return notes
