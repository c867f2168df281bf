"""Two hostile batches through ``python -m grading.grade --sandbox on``: nothing stops, stalls or outlives them.

Issue 30. As root, in a mount and PID namespace of their own whose /tmp, /var/tmp, /dev/shm and /run/lock are
empty at the start, so that whatever the batch leaves there, and any process it leaves, is seen: one folder
with honest students graded before and after a kernel that fills its socket folder with 3,000 nested folders
and worse, a cell of 500 magics, notebooks that are links, hard links and FIFOs, and two students with the
same solution; and one zip with links, ``..`` paths and a bomb. Those two took 2.6 to 4 minutes together here
(2 cores shared with other work). tests/test_grading_robust.py checks the parts on their own.
"""

from __future__ import annotations

import csv
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import nbformat
import pytest
from conftest import sandbox_problem
from notebook01 import ASSIGNMENT, FILE, own_quotas, reformatted, release_and_answers

from grading.authoring.samples import fill
from grading.config import ROOT

HOST_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
# Runs a command with fresh tmpfs on the host folders, the work folder bound back in, and reports
# what is left there and which processes are left once the command has ended.
_ISOLATED = textwrap.dedent("""\
    set -e
    mount --make-rprivate /
    cd "$WORK"
    exec 9<.
    for folder in $HOST_FOLDERS; do
        if [ -d "$folder" ]; then mount -t tmpfs -o size=8g tmpfs "$folder"; fi
    done
    mkdir -p "$WORK"
    mount --no-canonicalize --bind /proc/$$/fd/9 "$WORK"
    exec 9<&-
    cd "$COURSE_ROOT"
    set +e
    "$@" > "$WORK/grading.log" 2>&1
    echo "exit $?"
    for folder in $HOST_FOLDERS; do
        if [ -d "$folder" ]; then find "$folder" -xdev -mindepth 1 -printf 'left %p\\n'; fi
    done
    for process in /proc/[0-9]*; do
        if [ "${process#/proc/}" != 1 ]; then echo "process $(tr '\\0' ' ' < "$process/cmdline" 2>/dev/null)"; fi
    done
    """)


def _grade_isolated(work: Path, submissions: Path, *options: str) -> dict:
    """Grade ``submissions`` (a folder or a zip) with the grading command; return its rows, log and leftovers."""
    output = work / "output"
    command = [sys.executable, "-m", "grading.grade", str(submissions), "--output", str(output), "--sandbox", "on",
               "--assignment", ASSIGNMENT, "--jobs", "2", "--no-feedback", "--cell-timeout", "30", *options]
    env = {**os.environ, "WORK": str(work), "HOST_FOLDERS": " ".join(HOST_FOLDERS), "COURSE_ROOT": str(ROOT),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["unshare", "--mount", "--pid", "--fork", "--mount-proc", "sh", "-c", _ISOLATED, "sh",
                           *command], capture_output=True, text=True, env=env, cwd=ROOT, timeout=1500)
    report = done.stdout.splitlines()
    ancestors = {str(parent) for parent in [work, *work.parents]}
    result = {"exit": next((line for line in report if line.startswith("exit ")), done.stderr),
              "log": (work / "grading.log").read_text(errors="replace") if (work / "grading.log").exists() else "",
              "left": [line[5:] for line in report if line.startswith("left ") and line[5:] not in ancestors],
              "processes": [line[8:] for line in report if line.startswith("process ")], "rows": {}}
    if (output / "statuses.csv").exists():
        with open(output / "statuses.csv", newline="") as handle:
            result["rows"] = {row["student_id"]: (float(row["score"]), row["status"]) for row in csv.DictReader(handle)}
    result["csv"] = (output / "grades.csv").exists()
    autograded = output / "autograded" / "m_deep_tree" / ASSIGNMENT / FILE
    result["deep_tree_output"] = autograded.read_text() if autograded.exists() else ""
    return result


_PROBLEM = None if os.geteuid() == 0 and shutil.which("unshare") else "needs root and unshare(1)"
_SKIP = pytest.mark.skipif(_PROBLEM is not None or sandbox_problem() is not None,
                           reason=str(_PROBLEM or sandbox_problem()))


def needs_root_sandbox(test):
    """A test of the batches below: slow (here the folder batch took 95 to 149 s, the zip 61 to 93 s), root, sandbox."""
    return pytest.mark.slow(_SKIP(test))

# A cell a student adds before task 1.1: it fills the folder of the kernel's sockets (the sandbox's own /tmp; before the
# warm process, the one host folder a kernel could write).
_FILLS_ITS_FOLDER = '''
import os, subprocess, sys
from ipykernel.kernelapp import IPKernelApp
_home = os.path.dirname(IPKernelApp.instance().ip)
_descriptor = os.open(_home, os.O_DIRECTORY)
for _ in range(3000):
    os.mkdir("d", dir_fd=_descriptor)
    _deeper = os.open("d", os.O_DIRECTORY, dir_fd=_descriptor)
    os.close(_descriptor)
    _descriptor = _deeper
for _name in (b"odd\\nname \\xff", b"-rf", b"--one-file-system"):
    open(os.path.join(os.fsencode(_home), _name), "wb").write(b"x")
os.makedirs(os.path.join(_home, "locked", "inner"))
os.chmod(os.path.join(_home, "locked", "inner"), 0)
os.chmod(os.path.join(_home, "locked"), 0)
os.symlink("/", os.path.join(_home, "root"))
_held = open(os.path.join(_home, "held open"), "w")
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], stdout=_held, start_new_session=True)
print("filled", _home)
'''


def _write_batch(folder: Path, outside: Path) -> None:
    release, answers = release_and_answers()
    honest = fill(release, answers)
    for student in ("a_honest", "z_honest"):
        (folder / student).mkdir(parents=True)
        nbformat.write(honest, folder / student / FILE)
    deep = fill(release, answers)
    deep.cells.insert(next(i for i, c in enumerate(deep.cells) if "def select_victim" in c.source),
                      nbformat.v4.new_code_cell(_FILLS_ITS_FOLDER))
    flood = fill(release, answers)
    flood.cells.append(nbformat.v4.new_code_cell("\n".join(f"%ls /tmp/{i}\nfiller_{i} = {i}  # filler, filler"
                                                           for i in range(500))))
    copier_a = fill(release, {**answers, "task1_3_quotas": own_quotas()})
    copier_b = fill(release, {**answers, "task1_3_quotas": reformatted(own_quotas())})
    for student, notebook in (("m_deep_tree", deep), ("m_magic_flood", flood), ("c_copier_a", copier_a),
                              ("c_copier_b", copier_b)):
        (folder / student).mkdir()
        nbformat.write(notebook, folder / student / FILE)
    nbformat.write(honest, outside / FILE)
    for student in ("l_symlink", "l_hardlink", "l_fifo"):
        (folder / student).mkdir()
    (folder / "l_symlink" / FILE).symlink_to(f"../a_honest/{FILE}")
    os.link(outside / FILE, folder / "l_hardlink" / FILE)
    os.mkfifo(folder / "l_fifo" / FILE)


@pytest.fixture(scope="module")
def folder_batch(tmp_path_factory):
    work = tmp_path_factory.mktemp("robust-folder")
    (work / "submissions").mkdir()
    (work / "outside").mkdir()
    _write_batch(work / "submissions", work / "outside")
    return _grade_isolated(work, work / "submissions")


@pytest.fixture(scope="module")
def zip_batch(tmp_path_factory):
    work = tmp_path_factory.mktemp("robust-zip")
    release, answers = release_and_answers()
    honest = nbformat.writes(fill(release, answers))
    link = zipfile.ZipInfo(f"l_symlink/{FILE}")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(work / "canvas.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"a_honest/{FILE}", honest)
        archive.writestr(link, f"../a_honest/{FILE}")
        archive.writestr(f"../l_parent/{FILE}", honest)
        archive.writestr(f"/l_absolute/{FILE}", honest)
        archive.writestr(f"l_bomb/{FILE}", b" " * (3 << 20))
        archive.writestr(f"z_honest/{FILE}", honest)
    return _grade_isolated(work, work / "canvas.zip", "--max-notebook-mb", "2")


def _honest_and_clean(batch: dict) -> None:
    assert batch["exit"] == "exit 0", batch["log"][-3000:]
    assert batch["csv"], "the batch wrote its CSV"
    for student in ("a_honest", "z_honest"):
        assert batch["rows"][student] == (22.0, "graded"), (student, batch["rows"].get(student), batch["log"][-3000:])
    assert batch["left"] == [], "nothing of the batch is left in the host's temporary folders"
    assert batch["processes"] == [], "no process of the batch outlives it"


@needs_root_sandbox
def test_the_folder_batch_completes_cleanly_with_honest_students_at_full_marks(folder_batch):
    _honest_and_clean(folder_batch)


@needs_root_sandbox
def test_a_kernel_that_fills_its_folder_with_3000_nested_folders_does_not_stop_the_batch(folder_batch):
    score, status = folder_batch["rows"]["m_deep_tree"]
    assert score == 22 and status.startswith("needs a manual look; code that no task needs"), status
    assert "filled /tmp" in folder_batch["deep_tree_output"], "the kernel filled its socket folder"
    assert "could not remove" not in folder_batch["log"]


@needs_root_sandbox
def test_a_cell_of_500_magics_is_scanned_and_flagged(folder_batch):
    score, status = folder_batch["rows"]["m_magic_flood"]
    assert score == 22 and "uses get_ipython" in status, status


@needs_root_sandbox
@pytest.mark.parametrize("student, kind", [("l_symlink", "a symbolic link"), ("l_hardlink", "a hard link"),
                                           ("l_fifo", "a FIFO")])
def test_links_and_fifos_are_refused_naming_the_path(folder_batch, student, kind):
    score, status = folder_batch["rows"][student]
    assert score == 0 and status.startswith(f"needs a manual look: refused '{student}/{FILE}': {kind}"), status


@needs_root_sandbox
def test_the_same_solution_is_flagged_for_both_students_with_the_score_unchanged(folder_batch):
    assert folder_batch["rows"]["c_copier_a"] == (22.0, "needs a manual look: same solution as c_copier_b (task 1.3)")
    assert folder_batch["rows"]["c_copier_b"] == (22.0, "needs a manual look: same solution as c_copier_a (task 1.3)")


@needs_root_sandbox
def test_a_zip_is_graded_without_following_its_links_or_paths(zip_batch):
    _honest_and_clean(zip_batch)
    rows = zip_batch["rows"]
    assert rows["l_symlink"][1].startswith(f"needs a manual look: refused 'l_symlink/{FILE}': a symbolic link")
    assert rows["l_parent"][1].startswith(f"needs a manual look: refused '../l_parent/{FILE}': a path with '..'")
    assert rows["l_absolute"][1].startswith(f"needs a manual look: refused '/l_absolute/{FILE}': an absolute")
    assert rows["l_bomb"][1].startswith(f"needs a manual look: refused 'l_bomb/{FILE}': not extracted from the zip: "
                                        "it has more than the 2 MB")


# A cell that never ends (its time limit is longer than the student's), so that the student's time limit kills the
# grading process (grading/pipeline/jobs.py, `Job.stop`) before nbgrader can shut its kernel down.
_NEVER_ENDS = '''
import signal, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
while True:
    time.sleep(0.1)
'''


@pytest.fixture(scope="module")
def killed_batch(tmp_path_factory):
    work = tmp_path_factory.mktemp("robust-killed")
    release, answers = release_and_answers()
    stuck = fill(release, {**answers, "task1_1_select_victim": answers["task1_1_select_victim"] + _NEVER_ENDS})
    (work / "submissions" / "k_stuck").mkdir(parents=True)
    nbformat.write(stuck, work / "submissions" / "k_stuck" / FILE)
    return _grade_isolated(work, work / "submissions", "--cell-timeout", "120", "--student-timeout", "15",
                           "--jobs", "1")


@needs_root_sandbox
def test_a_grading_process_killed_at_the_student_s_time_limit_leaves_no_file_on_the_host(killed_batch):
    """jupyter_client wrote each kernel's connection file (its message-signing key) to the grader's $TMPDIR, and only
    shutting the kernel down removed it: every notebook past the student's time limit left one in /tmp. It is now
    in the student's socket folder, and the grading process's $TMPDIR is a folder of the run's."""
    assert killed_batch["exit"] == "exit 0", killed_batch["log"][-3000:]
    score, status = killed_batch["rows"]["k_stuck"]
    assert score == 0 and status.startswith("timed out after 15 s"), status
    assert killed_batch["left"] == [], "nothing of the batch is left in the host's temporary folders"
    assert killed_batch["processes"] == [], "no process of the batch outlives it"
