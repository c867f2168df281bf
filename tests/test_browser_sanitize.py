"""A submission never runs in a grader's browser: hostile notebooks graded, then opened in Chromium.

One batch: for the first and the last notebook of the course, a hostile submission (tests/payloads.py:
every payload class, on top of the reference solution) is graded twice through the grading command,
as ``hostile`` with the protection on and as ``hostile_unprotected`` with the sanitizer off. Then:

- **feedback**: each feedback HTML file is opened as a file; no payload of ``hostile`` runs, while
  the live ones of ``hostile_unprotected`` do (so the check can fail), and neither shows hidden tests;
- **formgrader**: one JupyterLab, started the way ``python -m grading.pipeline.formgrader`` starts it
  (authenticated, XSRF checks on, the Content-Security-Policy of grading/isolation/csp.py), opens each
  submission's formgrader page. With the protection on, no payload runs: no marker is set, no
  grade changes (read through ``/formgrader/api/grades``), no kernel is started and no file is
  written through ``/api/kernels``. Each layer holds alone: the sanitized page without the policy
  (the test strips the header) and the unsanitized page with it. Without either, the attack runs:
  every grade becomes full marks and a kernel writes a file in the course root. Formgrader's own
  UI works under the policy, in JupyterLab's formgrader panel too.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request

import nbformat
import pytest
from conftest import copy_course
from payloads import INERT, LEAK_PREFIX, LIVE, MARKER, hostile_submission, read
from test_browser import CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS, _free_port, open_menu_item, playwright

from grading.config import ASSIGNMENTS
from grading.pipeline.feedback import hidden_lines
from grading.pipeline.formgrader import server_command
from grading.pipeline.run import grade_folder

UNDER_TEST = list(dict.fromkeys([ASSIGNMENTS[0], ASSIGNMENTS[-1]]))  # the first and the last notebook
PROTECTED, UNPROTECTED = "hostile", "hostile_unprotected"
# nbgrader's feedback page loads no jQuery, so a JavaScript output's first line fails there.
LIVE_IN_FEEDBACK = [name for name in LIVE if name != "out_javascript"]
TOKEN = "sanitize-test-token"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course directory where both hostile submissions of every notebook under test were graded."""
    root = copy_course(tmp_path_factory.mktemp("sanitize-course"))  # release/ is current (test_pipeline)
    rows = {}
    for student, sanitize in ((PROTECTED, True), (UNPROTECTED, False)):
        folder = tmp_path_factory.mktemp(student)
        for assignment in UNDER_TEST:
            notebook = hostile_submission(read(root, "release", assignment), read(root, "source", assignment))
            (folder / student / assignment).mkdir(parents=True)
            nbformat.write(notebook, folder / student / assignment / f"{assignment}.ipynb")
        for scores, status in grade_folder(folder, root, UNDER_TEST, log=lambda line: None, sanitize=sanitize):
            rows[(scores.student, scores.assignment)] = (scores, status)
    return root, rows


def test_hostile_submissions_keep_their_score_and_are_flagged(course):
    _, rows = course
    for (student, assignment), (scores, status) in rows.items():
        assert scores.tasks and scores.total == scores.max_total, (student, assignment, scores.tasks, status)
        assert status.startswith("needs a manual look"), status
        for reason in ("displays HTML, JavaScript or Markdown", "raw HTML or script links", "<script>",
                       "a javascript: link"):
            assert reason in status, (reason, status)


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _markers(page) -> set[str]:
    return set(page.evaluate(f"() => Object.keys(window).filter(k => k.startsWith('{MARKER}'))"
                             f".map(k => k.slice({len(MARKER)}))"))


def _click_script_links(page) -> None:
    """Click every javascript: link in the notebook, as a curious grader would."""
    for link in page.query_selector_all("#notebook-container a[href]"):
        if link.get_attribute("href").strip().lower().startswith("javascript:"):
            link.click()


@pytest.mark.parametrize("assignment", UNDER_TEST)
def test_feedback_runs_no_payload_and_shows_no_hidden_test(course, browser, assignment):
    root, _ = course
    source = read(root, "source", assignment)
    hidden = {line for cell in source.cells for line in hidden_lines(cell.source)}
    ran = {}
    for student in (PROTECTED, UNPROTECTED):
        path = root / "feedback" / student / assignment / f"{assignment}.html"
        page = browser.new_page()
        page.goto(path.as_uri())
        page.wait_for_timeout(1000)
        _click_script_links(page)
        page.wait_for_timeout(300)
        ran[student] = _markers(page)
        if student == PROTECTED:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / f"feedback-hostile-{assignment}.png"), full_page=False)
        page.close()
        text = path.read_text(encoding="utf-8")
        quoted = sorted(line for line in hidden if line in text)
        assert not quoted, f"{student}'s feedback shows hidden test code: {quoted[:3]}"
    assert not ran[PROTECTED], f"payloads ran in the sanitized feedback: {sorted(ran[PROTECTED])}"
    assert set(LIVE_IN_FEEDBACK) <= ran[UNPROTECTED], (
        f"payloads that did not run without sanitizing (the test cannot fail for them): "
        f"{sorted(set(LIVE_IN_FEEDBACK) - ran[UNPROTECTED])}")
    assert not ran[UNPROTECTED] & set(INERT), sorted(ran[UNPROTECTED] & set(INERT))
    # The leak was real: the hidden tests reached the autograded notebook, which only graders see.
    autograded = json.dumps(nbformat.read(root / "autograded" / PROTECTED / assignment / f"{assignment}.ipynb",
                                          as_version=4).cells)
    assert LEAK_PREFIX in autograded and any(line in autograded for line in hidden)


@pytest.fixture(scope="module")
def formgrader(course):
    """JupyterLab with formgrader on the course, started as grading.pipeline.formgrader starts
    it; yields (base, root)."""
    root, _ = course
    port = _free_port()
    command, environment = server_command(root, port, options=[
        f"--ServerApp.token={TOKEN}", "--allow-root", "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"])
    log = open(root / "server.log", "w")  # noqa: SIM115 - closed after the server.
    server = subprocess.Popen(command, cwd=root, env=environment, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while True:
        try:
            _api(base, "/api/status")
            break
        except OSError:
            if time.time() > deadline or server.poll() is not None:
                server.kill()
                raise RuntimeError(f"JupyterLab did not start: {(root / 'server.log').read_text()[-2000:]}") from None
            time.sleep(0.5)
    yield base, root
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
    log.close()


def _api(base: str, path: str):
    request = urllib.request.Request(base + path, headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"null")


def _submission_id(base: str, assignment: str, student: str) -> str:
    notebooks = _api(base, f"/formgrader/api/submitted_notebooks/{assignment}/{assignment}")
    return next(notebook["id"] for notebook in notebooks if notebook["student"] == student)


def _grades(base: str, submission: str) -> dict[str, tuple]:
    return {grade["name"]: (grade["auto_score"], grade["manual_score"], grade["max_score"])
            for grade in _api(base, f"/formgrader/api/grades?submission_id={submission}")}


def _logged_in(browser, base: str, without_policy: bool):
    """A browser context with the grader's session (a login cookie and the _xsrf cookie).

    ``without_policy`` makes Chromium ignore every Content-Security-Policy (Playwright's
    ``bypass_csp``), as if the server sent none.
    """
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, bypass_csp=without_policy)
    page = context.new_page()
    page.goto(f"{base}/lab?token={TOKEN}")
    page.wait_for_selector(".jp-LabShell", timeout=90_000)
    page.close()
    return context


def _open(context, url: str, wait_ms: int = 2500):
    """Open formgrader's page at ``url``; return it and the policy violations Chromium reported."""
    page = context.new_page()
    page.set_default_timeout(60_000)
    violations: list[str] = []
    page.on("console", lambda message: violations.append(message.text)
            if "Content Security Policy" in message.text else None)
    page.goto(url)
    page.wait_for_selector("input.score", state="attached")
    page.wait_for_timeout(wait_ms)
    _click_script_links(page)
    page.wait_for_timeout(300)
    return page, violations


@pytest.mark.parametrize("assignment", UNDER_TEST)
def test_formgrader_runs_no_payload_and_grades_cannot_change(course, formgrader, browser, assignment):
    base, root = formgrader
    contexts = {without_policy: _logged_in(browser, base, without_policy) for without_policy in (False, True)}
    submissions = {student: _submission_id(base, assignment, student) for student in (PROTECTED, UNPROTECTED)}
    before = {student: _grades(base, submission) for student, submission in submissions.items()}
    kernels = len(_api(base, "/api/kernels"))

    def check_nothing_ran(student: str, strip_policy: bool) -> list[str]:
        page, violations = _open(contexts[strip_policy], f"{base}/formgrader/submissions/{submissions[student]}/")
        ran = _markers(page)
        page.wait_for_timeout(1500)  # Time for a fetch or a kernel start that a payload began.
        placeholders = page.evaluate("() => [...document.querySelectorAll('input.score')].map(e => e.placeholder)")
        page.close()
        where = f"{student}'s page {'without' if strip_policy else 'with'} the policy"
        assert not ran, f"payloads ran on {where}: {sorted(ran)}"
        assert _grades(base, submissions[student]) == before[student], f"grades changed from {where}"
        assert len(_api(base, "/api/kernels")) == kernels, f"a kernel was started from {where}"
        assert not list(root.glob("pwned-*")), f"a file was written from {where}"
        # Formgrader's own scripts ran: its score inputs show the autograded scores.
        assert placeholders and all(placeholders), f"formgrader's UI did not load on {where}: {placeholders}"
        return violations

    violations = check_nothing_ran(PROTECTED, strip_policy=False)
    assert not violations, f"the policy blocked something on the sanitized page: {violations[:3]}"
    check_nothing_ran(PROTECTED, strip_policy=True)  # The sanitizer alone.
    blocked = check_nothing_ran(UNPROTECTED, strip_policy=False)  # The policy alone.
    assert blocked, "the policy reported nothing, yet the unsanitized page carries inline script"

    # Neither layer: the attack of issue 14 runs, so the checks above can fail.
    page, _ = _open(contexts[True], f"{base}/formgrader/submissions/{submissions[UNPROTECTED]}/")
    ran = _markers(page)
    deadline = time.time() + 60
    while not list(root.glob("pwned-*")) and time.time() < deadline:
        page.wait_for_timeout(500)
    page.close()
    assert set(LIVE) <= ran, f"payloads that did not run without protection: {sorted(set(LIVE) - ran)}"
    assert not ran & set(INERT), sorted(ran & set(INERT))
    after = _grades(base, submissions[UNPROTECTED])
    assert all(manual == maximum for _, manual, maximum in after.values()), after
    assert (root / "pwned-md_img_onerror").exists(), "the kernel started by the payload wrote no file"
    for kernel in _api(base, "/api/kernels"):
        request = urllib.request.Request(f"{base}/api/kernels/{kernel['id']}", method="DELETE",
                                         headers={"Authorization": f"token {TOKEN}"})
        urllib.request.urlopen(request, timeout=10).close()
    for path in root.glob("pwned-*"):
        path.unlink()
    for context in contexts.values():
        context.close()


def test_formgrader_panel_in_jupyterlab_works_under_the_policy(course, formgrader, browser):
    """JupyterLab's Nbgrader → Formgrader panel shows a submission; "Full credit" still saves a grade."""
    base, root = formgrader
    assignment = UNDER_TEST[0]
    submission = _submission_id(base, assignment, PROTECTED)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)
    page.goto(f"{base}/lab/workspaces/formgrader?reset&token={TOKEN}")
    page.wait_for_selector(".jp-LabShell", timeout=90_000)
    open_menu_item(page, "Nbgrader", "Formgrader", assignment)
    frame_element = page.wait_for_selector("iframe[src*='formgrader']")
    frame = frame_element.content_frame()
    frame.wait_for_load_state()
    frame.goto(f"{base}/formgrader/submissions/{submission}/")
    frame.wait_for_selector("input.score", state="attached")
    page.wait_for_timeout(2000)
    first = frame.locator(".nbgrader_cell:has(input.score)").first
    grade_id = first.locator("input.score").get_attribute("id")
    first.locator("button.full-credit").click()
    deadline = time.time() + 20
    while _grades(base, submission)[grade_id][1] is None and time.time() < deadline:
        page.wait_for_timeout(300)
    auto, manual, maximum = _grades(base, submission)[grade_id]
    assert manual == maximum, "formgrader's Full credit button did not save a grade under the policy"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "formgrader-hostile-submission.png"), full_page=False)
    assert not _markers(frame), "a payload ran in JupyterLab's formgrader panel"
    page.close()
