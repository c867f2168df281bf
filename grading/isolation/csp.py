"""A second layer under grading/isolation/sanitize.py: formgrader's submission pages run no inline script
but formgrader's own.

Formgrader shows a submission as one HTML page: its own header, navigation bar and scripts, then
the notebook. This Jupyter server extension (which ``python -m grading.pipeline.formgrader`` enables) adds a
Content-Security-Policy header to those pages. The policy allows scripts from the server itself and
from the places formgrader's own ``<script src>`` tags load from, and, by their SHA-256 hashes,
exactly the inline scripts and event handlers of formgrader's own part of the page (everything
before the notebook's container, which holds nothing from the notebook). Any other inline script,
event handler or ``javascript:`` URL, which could only come from the notebook, is blocked by the
browser and reported to the server's log, even if the sanitizer missed it.

MathJax's inline configuration (a ``text/x-mathjax-config`` block) needs ``eval``, which the policy
does not allow: MathJax evaluates every such block in the page, a student's too. On these pages
MathJax therefore typesets with its defaults (display math ``$$…$$``; inline ``$…$`` stays as TeX).
"""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

from tornado.web import OutputTransform

SUBMISSION_PAGE = re.compile(r"/formgrader/submissions/[^/]+/?$")
# Formgrader's template opens this element before the first cell of the notebook.
NOTEBOOK_CONTAINER = re.compile(r"""<div\b[^>]*\bid\s*=\s*["']?notebook-container\b""", re.IGNORECASE)
_SCRIPT_TYPES = {"", "text/javascript", "application/javascript", "module"}


class _PageScripts(HTMLParser):
    """Collects the inline scripts, event handlers and script addresses of a piece of HTML."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.inline: list[str] = []
        self.handlers: list[str] = []
        self.sources: list[str] = []
        self._in_script = False
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.handlers += [value or "" for name, value in attrs if name.startswith("on")]
        if tag == "script":
            if attributes.get("src"):
                self.sources.append(attributes["src"])
            elif (attributes.get("type") or "").strip().lower() in _SCRIPT_TYPES:
                self._in_script, self._text = True, []

    def handle_data(self, data):
        if self._in_script:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "script" and self._in_script:
            self.inline.append("".join(self._text))
            self._in_script = False


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def _folder(address: str, page_url: str) -> str | None:
    """The folder a script address loads from, as a CSP source (None for the page's own server: 'self')."""
    parts = urlsplit(urljoin(page_url, address))
    if parts.scheme not in ("http", "https") or parts.netloc == urlsplit(page_url).netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}{parts.path.rsplit('/', 1)[0]}/"


def submission_page_policy(page: str, page_url: str = "http://localhost/", report_uri: str | None = None) -> str:
    """The Content-Security-Policy for one formgrader submission page (see the module's docstring).

    Only the part of ``page`` before the notebook's container counts as formgrader's own; when the
    container is not found, no inline script at all is allowed.
    """
    match = NOTEBOOK_CONTAINER.search(page)
    scripts = _PageScripts()
    scripts.feed(page[:match.start()] if match else "")
    folders = dict.fromkeys(folder for folder in (_folder(src, page_url) for src in scripts.sources) if folder)
    sources = ["'self'", "'report-sample'", *folders, *dict.fromkeys(_hash(text) for text in scripts.inline)]
    if scripts.handlers:
        sources += ["'unsafe-hashes'", *dict.fromkeys(_hash(text) for text in scripts.handlers)]
    directives = ["script-src " + " ".join(sources), "object-src 'none'", "base-uri 'self'", "frame-src 'none'"]
    if report_uri:
        directives.append(f"report-uri {report_uri}")
    return "; ".join(directives)


class SubmissionPagePolicy(OutputTransform):
    """Adds `submission_page_policy` to every formgrader submission page the server sends."""

    def __init__(self, request):
        super().__init__(request)
        self._request = request
        self._applies = request.method == "GET" and bool(SUBMISSION_PAGE.search(request.path))

    def transform_first_chunk(self, status_code, headers, chunk, finishing):
        if self._applies and status_code == 200 and headers.get("Content-Type", "").startswith("text/html"):
            page_url = f"{self._request.protocol}://{self._request.host}{self._request.path}"
            base = self._request.path.split("/formgrader/")[0]
            headers.add("Content-Security-Policy", submission_page_policy(
                chunk.decode("utf-8", "replace"), page_url, f"{base}/api/security/csp-report"))
        return status_code, headers, chunk


def _jupyter_server_extension_points():
    return [{"module": "grading.isolation.csp"}]


def _load_jupyter_server_extension(serverapp):
    # First in the list, so that it sees the page before any compression.
    serverapp.web_app.transforms.insert(0, SubmissionPagePolicy)
    serverapp.log.info("grading.isolation.csp: formgrader's submission pages carry a Content-Security-Policy")
