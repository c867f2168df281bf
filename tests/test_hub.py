"""The instructor's real loop on a JupyterHub, with real Unix users, nbgrader's exchange and a browser.

One run (tests/hubsetup.py makes and removes the machine): JupyterHub from the course's own
configuration (deploy/jupyterhub/), PAM logins, LocalProcessSpawner, configurable-http-proxy,
nbgrader's exchange in a fresh folder, formgrader as the hub service. On notebook 01:

- the instructor generates and releases the assignment;
- the honest student logs in with Chromium, fetches it from the Assignments tab, opens it,
  (writes the reference solution), submits it, and later fetches the feedback there;
- the student with typical mistakes fetches and submits on the command line;
- the hostile student submits under the honest student's id (``--student`` and a folder made by
  hand with a later time), makes a submission of her own whose notebook is a link to the
  instructor's source notebook, leaves a malformed folder in the exchange, and tries to read or
  move what is not hers;
- the instructor collects: first with nbgrader's own collect into a scratch folder (the forgery
  replaces the honest student's work and the link hands the hostile student the solutions), then
  with the course's (grading/pipeline/exchange.py), grades with ``python -m grading.grade``, releases the
  feedback;
- every student fetches feedback; the instructor opens formgrader through the hub, a student cannot.

Skipped with the reason where it cannot run (not root, no configurable-http-proxy, no Chromium);
in CI a missing package fails it instead.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from grading.config import ASSIGNMENTS, modelscope_url

ASSIGNMENT = ASSIGNMENTS[0]
CHROMIUM = Path("/usr/bin/chromium")
FORGED = "forged by the hostile student"


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "the hub test makes Unix users and runs JupyterHub as root: run it as root"
    missing = [what for what, there in (("configurable-http-proxy (apt-get install node-configurable-http-proxy)",
                                         shutil.which("configurable-http-proxy")),
                                        ("Debian's chromium (apt-get install chromium)", CHROMIUM.exists()))
               if not there]
    if missing and os.environ.get("CI"):
        raise RuntimeError(f"CI must install {', '.join(missing)} for the hub test (see .ci/run)")
    return f"not installed: {', '.join(missing)}" if missing else None


pytestmark = [pytest.mark.slow, pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))]


@pytest.fixture(scope="module")
def machine():
    from hubsetup import HubMachine

    hub = HubMachine()
    try:
        hub.create()
        yield hub
    finally:
        leftovers = hub.close()
        remaining = hub.remaining()
        assert not remaining, f"the hub test left {remaining} on the machine"
        assert not leftovers, f"the hub test had to clean up {leftovers}"


def _nbgrader(machine, role: str, *args: str, cwd=None, check: bool = True):
    return machine.run_as(role, [sys.executable, "-m", "nbgrader", *args], cwd=cwd, check=check)


def _home(machine, role: str) -> Path:
    return Path(pwd.getpwnam(machine.names[role]).pw_dir)


def _give(machine, role: str, notebook, path: Path) -> None:
    """Write ``notebook`` to ``path`` as the student would: the file is theirs."""
    nbformat.write(notebook, path)
    user = pwd.getpwnam(machine.names[role])
    os.chown(path, user.pw_uid, user.pw_gid)


# What the hostile student runs as herself: a submission under the honest student's id with a later
# time, and one of her own whose notebook is a link to the instructor's source notebook.
FORGE = r'''
import os, sys
inbound, honest, assignment, source = sys.argv[1:5]
me, own = os.environ["USER"], os.path.join(os.environ["HOME"], assignment, assignment + ".ipynb")
forged = os.path.join(inbound, f"{honest}+{assignment}+2099-01-01 00:00:00.000000 UTC+forged")
os.mkdir(forged)
text = open(own).read().replace("Eviction as ranking", "Eviction as ranking, FORGED_MARK")
open(os.path.join(forged, assignment + ".ipynb"), "w").write(text)
linked = os.path.join(inbound, f"{me}+{assignment}+2098-01-01 00:00:00.000000 UTC+link")
os.mkdir(linked)
os.symlink(source, os.path.join(linked, assignment + ".ipynb"))
'''.replace("FORGED_MARK", FORGED)

# What she tries once the feedback is out, reported as JSON: each action's error, or "allowed".
PROBE = r'''
import json, os, shutil, sys
exchange, course, honest, instructor_course = sys.argv[1:5]
def attempt(action):
    try:
        action()
        return "allowed"
    except OSError as error:
        return type(error).__name__
print(json.dumps({
    "list inbound": attempt(lambda: os.listdir(os.path.join(exchange, course, "inbound"))),
    "list feedback": attempt(lambda: os.listdir(os.path.join(exchange, course, "feedback"))),
    "read the honest student's home": attempt(lambda: os.listdir(os.path.join("/home", honest))),
    "read the instructor's course": attempt(lambda: os.listdir(instructor_course)),
    "move the course's folder": attempt(lambda: os.rename(os.path.join(exchange, course),
                                                          os.path.join(exchange, course + "-moved"))),
    "remove the course's folder": attempt(lambda: shutil.rmtree(os.path.join(exchange, course))),
}))
'''


def _browser_login(browser, url: str, name: str, password: str, next_path: str | None = None):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(f"{url}/hub/login" + (f"?next={next_path}" if next_path else ""))
    page.fill("input#username_input", name)
    page.fill("input#password_input", password)
    page.click("#login_submit")
    return context, page


@pytest.fixture(scope="module")
def loop(machine):
    """Run the whole loop once; return what each step produced, and how long the steps took."""
    from conftest import partly_right
    from playwright.sync_api import sync_playwright

    from grading.authoring.samples import sample_submissions

    started, laps = time.monotonic(), {}

    def lap(step: str) -> None:
        laps[step] = round(time.monotonic() - started, 1)

    results: dict = {"laps": laps}
    url = machine.start_hub()
    lap("hub started")
    course = machine.course
    _nbgrader(machine, "instructor", "generate_assignment", ASSIGNMENT, "--force", cwd=course)
    _nbgrader(machine, "instructor", "release_assignment", ASSIGNMENT, cwd=course)
    lap("released")
    inbound = machine.exchange / "kv-cache-eviction" / "inbound"
    results["modes"] = {name: stat.S_IMODE(os.stat(path).st_mode) for name, path in
                        (("root", machine.exchange), ("inbound", inbound),
                         ("outbound", inbound.parent / "outbound"))}
    samples = sample_submissions(ASSIGNMENT)
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                         args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            typical, results["typical"] = partly_right(ASSIGNMENT)
            # The students work at the same time: the others on the command line while the honest
            # one uses the browser (the order of their submissions does not change any check).
            with ThreadPoolExecutor(max_workers=1) as others:
                pending = others.submit(_other_students_submit, machine, typical)
                honest_page = _honest_student_submits(machine, browser, url, samples["reference_solution"],
                                                      results)
                lap("the honest student submitted in the browser")
                pending.result()
            lap("the other students submitted")
            _collect(machine, results)
            lap("collected")
            graded = machine.run_as("instructor", [sys.executable, "-m", "grading.grade", "submitted",
                                                   "--assignment", ASSIGNMENT, "--jobs", "2"], cwd=course)
            results["grading log"] = graded.stdout + graded.stderr
            lap("graded")
            _nbgrader(machine, "instructor", "release_feedback", ASSIGNMENT, cwd=course)
            results["feedback"] = _fetch_feedback(machine, honest_page)
            results["probes"] = _hostile_student_probes(machine)
            lap("feedback fetched")
            results["formgrader"] = _formgrader(machine, browser, url)
            lap("formgrader checked")
        finally:
            browser.close()
    print(json.dumps({"hub test, seconds since start": laps}))
    return results


def _honest_student_submits(machine, browser, url, solution, results):
    """Log in, fetch from the Assignments tab, open the notebook, (write the solution), submit."""
    from test_browser import answer_dialogs, open_menu_item

    _, page = _browser_login(browser, url, machine.names["honest"], machine.passwords["honest"])
    page.wait_for_url("**/user/**/lab**", timeout=180_000)
    page.wait_for_selector(".jp-DirListing-content", timeout=120_000)
    open_menu_item(page, "Nbgrader", "Assignment List", "the honest student")
    page.click("#released_assignments_list button:has-text('Fetch')")
    page.wait_for_selector("#fetched_assignments_list button:has-text('Submit')", timeout=60_000)
    # The student's work: the reference solution, written into the fetched file.
    fetched = _home(machine, "honest") / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    _give(machine, "honest", solution, fetched)
    page.click("#fetched_assignments_list a.assignment-notebooks-link")
    page.locator("#fetched_assignments_list .nested_list_item a", has_text=ASSIGNMENT).click()
    page.wait_for_selector(".jp-Notebook .jp-Cell", state="attached", timeout=120_000)
    badge = f".jp-Notebook a[href='{modelscope_url(ASSIGNMENT)}']"
    page.wait_for_selector(badge, state="attached", timeout=60_000)
    results["opened badge"] = page.locator(badge).count()
    # A kernel that a busy machine starts slowly makes JupyterLab ask "Select Kernel", over the tabs.
    answer_dialogs(page, "the honest student")
    page.locator(".lm-TabBar-tab", has_text="Assignments").click()
    page.click("#fetched_assignments_list button:has-text('Submit')")
    page.wait_for_selector("#submitted_assignments_list .list_item", timeout=60_000)
    return page


def _other_students_submit(machine, typical) -> None:
    """The student with typical mistakes submits; the hostile student forges and links."""
    _nbgrader(machine, "typical", "fetch_assignment", ASSIGNMENT)
    _give(machine, "typical", typical, _home(machine, "typical") / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    _nbgrader(machine, "typical", "submit", ASSIGNMENT)
    _nbgrader(machine, "hostile", "fetch_assignment", ASSIGNMENT)
    _nbgrader(machine, "hostile", "submit", ASSIGNMENT, f"--student={machine.names['honest']}")
    source = machine.course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    machine.run_as("hostile", [sys.executable, "-c", FORGE, str(machine.exchange / "kv-cache-eviction" / "inbound"),
                               machine.names["honest"], ASSIGNMENT, str(source)])


def _hostile_student_probes(machine) -> dict:
    run = machine.run_as("hostile", [sys.executable, "-c", PROBE, str(machine.exchange), "kv-cache-eviction",
                                     machine.names["honest"], str(machine.course)])
    return json.loads(run.stdout)


def _collect(machine, results) -> None:
    """nbgrader's own collect into a scratch folder, then the course's into submitted/."""
    course = machine.course
    unprotected = _nbgrader(machine, "instructor", "collect", ASSIGNMENT,
                            "--ExchangeFactory.collect=nbgrader.exchange.default.collect.ExchangeCollect",
                            "--CourseDirectory.submitted_directory=unprotected", cwd=course)
    results["unprotected log"] = unprotected.stdout + unprotected.stderr
    results["unprotected"] = {
        student: (course / "unprotected" / name / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text()
        for student, name in machine.names.items() if student != "instructor"}
    shutil.rmtree(course / "unprotected")
    # A malformed name, which nbgrader's own collect cannot even parse.
    machine.run_as("hostile", ["mkdir", str(machine.exchange / "kv-cache-eviction" / "inbound" /
                                            f"{machine.names['honest']}+{ASSIGNMENT}+not a time+x")])
    collected = _nbgrader(machine, "instructor", "collect", ASSIGNMENT, cwd=course)
    results["collect log"] = collected.stdout + collected.stderr
    results["collected"] = {
        student: sorted(path.name for path in (course / "submitted" / name / ASSIGNMENT).iterdir())
        for student, name in machine.names.items() if student != "instructor"}
    results["honest collected"] = (course / "submitted" / machine.names["honest"] / ASSIGNMENT /
                                   f"{ASSIGNMENT}.ipynb").read_text()


def _others_fetch_feedback(machine) -> None:
    _nbgrader(machine, "typical", "fetch_feedback", ASSIGNMENT)
    _nbgrader(machine, "hostile", "fetch_feedback", ASSIGNMENT, f"--student={machine.names['honest']}")


def _fetch_feedback(machine, honest_page) -> dict:
    """Each student fetches feedback: the honest one in the browser, the others (and tricks) on the command line."""
    with ThreadPoolExecutor(max_workers=1) as others:
        pending = others.submit(_others_fetch_feedback, machine)
        honest_page.click("#refresh_assignments_list")
        honest_page.click("#submitted_assignments_list button:has-text('Fetch Feedback')")
        deadline = time.monotonic() + 120
        while not list((_home(machine, "honest") / ASSIGNMENT).glob("feedback/*/*.html")):
            assert time.monotonic() < deadline, "the honest student's Fetch Feedback brought nothing in 120 s"
            time.sleep(0.5)
        pending.result()
    found: dict[str, dict[str, str]] = {}
    for role in ("honest", "typical", "hostile"):
        folder = _home(machine, role) / ASSIGNMENT
        found[role] = {str(path.relative_to(folder)): path.read_text() for path in folder.glob("feedback/*/*.html")}
    return found


def _formgrader(machine, browser, url) -> dict:
    """The instructor reaches formgrader through the hub (a submission page carries the policy); a student does not."""
    service = "/services/kv-cache-eviction"
    context, page = _browser_login(browser, url, machine.names["instructor"], machine.passwords["instructor"],
                                   next_path=f"{service}/formgrader/")
    page.wait_for_url(f"**{service}/formgrader/**", timeout=120_000)
    notebooks = page.request.get(f"{url}{service}/formgrader/api/submitted_notebooks/{ASSIGNMENT}/{ASSIGNMENT}").json()
    honest = next(notebook["id"] for notebook in notebooks if notebook["student"] == machine.names["honest"])
    response = page.goto(f"{url}{service}/formgrader/submissions/{honest}/")
    seen = {"instructor status": response.status, "policy": response.headers.get("content-security-policy", ""),
            "students in formgrader": sorted(notebook["student"] for notebook in notebooks)}
    context.close()
    context, page = _browser_login(browser, url, machine.names["hostile"], machine.passwords["hostile"],
                                   next_path=f"{service}/formgrader/")
    page.wait_for_load_state()
    response = page.goto(f"{url}{service}/formgrader/api/submitted_notebooks/{ASSIGNMENT}/{ASSIGNMENT}")
    seen["student status"] = response.status
    context.close()
    return seen


def _gradebook_scores(machine) -> dict[str, float]:
    from grading.pipeline.export import read_grades

    return {student: score for (student, _), score in read_grades(machine.course / "gradebook.db").scores.items()}


def test_the_exchange_has_the_permissions_nbgrader_documents_and_sticky_bits(loop):
    assert loop["modes"] == {"root": 0o1777, "inbound": 0o3733, "outbound": 0o755}


def test_the_honest_student_works_in_the_browser(loop, machine):
    assert loop["opened badge"] == 1, "the opened notebook's header must carry the ModelScope link"
    assert "BEGIN SOLUTION" not in loop["honest collected"] and "Eviction as ranking" in loop["honest collected"]
    assert FORGED not in loop["honest collected"], "the forged submission replaced the honest student's"


def test_nbgrader_own_collect_lets_the_attacks_through(loop, machine):
    """Without the course's collect, the forgery replaces the honest student's work and the link hands
    the hostile student the instructor's source notebook, hidden tests included."""
    assert FORGED in loop["unprotected"]["honest"]
    assert "### BEGIN HIDDEN TESTS" in loop["unprotected"]["hostile"]
    assert "cheating attempt?" in loop["unprotected log"]


def test_no_student_submits_under_another_id(loop, machine):
    log, names = loop["collect log"], machine.names
    forged_by_option = f"claims the student {names['honest']} but was made by {names['hostile']}"
    assert log.count(forged_by_option) == 2, log
    assert f"{names['honest']}+{ASSIGNMENT}+not a time+x: not a submission's name" in log, log
    assert f"{ASSIGNMENT}.ipynb is a link, a pipe or another special file; left out" in log, log
    assert loop["collected"] == {"honest": [f"{ASSIGNMENT}.ipynb", "submission_secret.txt", "timestamp.txt"],
                                 "typical": [f"{ASSIGNMENT}.ipynb", "submission_secret.txt", "timestamp.txt"],
                                 "hostile": []}


def test_no_student_reads_or_moves_what_is_not_theirs(loop):
    assert loop["probes"] == {"list inbound": "PermissionError", "list feedback": "PermissionError",
                              "read the honest student's home": "PermissionError",
                              "read the instructor's course": "PermissionError",
                              "move the course's folder": "PermissionError",
                              "remove the course's folder": "PermissionError"}


def test_grading_gives_the_exact_scores(loop, machine):
    names = machine.names
    assert _gradebook_scores(machine) == {names["honest"]: 22.0, names["typical"]: loop["typical"]}
    assert 0 < loop["typical"] < 22


def test_the_instructor_grades_in_the_sandbox(loop):
    """The instructor is no root: the grading command's sandbox runs in a user namespace of theirs."""
    log = loop["grading log"]
    warning = next((line for line in log.splitlines() if "grading without isolation" in line), None)
    forbidden = ("setting up uid map", "No permission", "Operation not permitted", "Creating new namespace failed")
    if warning and any(text in warning for text in forbidden):
        pytest.skip(f"this machine does not allow unprivileged user namespaces: {warning}")
    assert "isolation: each kernel runs in a bubblewrap sandbox" in log, log


def test_feedback_reaches_its_student_only(loop, machine):
    feedback = loop["feedback"]
    assert len(feedback["honest"]) == 1 and len(feedback["typical"]) == 1, feedback.keys()
    assert feedback["hostile"] == {}, "the hostile student fetched feedback that is not hers"
    (honest,), (typical,) = feedback["honest"].values(), feedback["typical"].values()
    assert "22.0 / 22.0" in honest and f"{loop['typical']:.1f} / 22.0" in typical
    assert honest != typical


def test_formgrader_is_a_hub_service_for_the_instructor_only(loop, machine):
    seen = loop["formgrader"]
    assert seen["instructor status"] == 200
    assert "script-src 'self'" in seen["policy"], seen["policy"]
    assert seen["students in formgrader"] == sorted([machine.names["honest"], machine.names["typical"]])
    assert seen["student status"] == 403
