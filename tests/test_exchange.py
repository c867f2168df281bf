"""The course's exchange plugins (grading/pipeline/exchange.py) on a scratch exchange, as this one user, in seconds.

tests/test_hub.py proves them with real users on a real hub; here every case runs without root: a
submission that claims another user's id (one this user made), a notebook that is a link, a named
pipe, a malformed folder name, and the sticky bits of release.
"""

from __future__ import annotations

import logging
import os
import pwd
import stat

import pytest
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from nbgrader.exchange import ExchangeError
from traitlets.config import Config

from grading.pipeline.exchange import OwnerCheckedCollect, StickyReleaseAssignment

COURSE, ASSIGNMENT = "course101", "ps1"


def _setting(tmp_path, **extra):
    config = Config()
    config.Exchange.root = str(tmp_path / "exchange")
    config.CourseDirectory.root = str(tmp_path / "course")
    config.CourseDirectory.course_id = COURSE
    config.CourseDirectory.assignment_id = ASSIGNMENT
    for key, value in extra.items():
        setattr(config.CourseDirectory, key, value)
    coursedir = CourseDirectory(config=config)
    return config, coursedir, Authenticator(config=config)


def _submission(inbound, student: str, time: str, name: str):
    folder = inbound / f"{student}+{ASSIGNMENT}+{time}+{name}"
    folder.mkdir()
    (folder / f"{ASSIGNMENT}.ipynb").write_text(f"by {student} at {time}")
    return folder


@pytest.fixture
def logged():
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())
    log = logging.getLogger("test-exchange")
    log.addHandler(handler)
    yield log, records
    log.removeHandler(handler)


def test_collect_takes_only_the_claimed_students_own_plain_files(tmp_path, logged, monkeypatch):
    from grading.pipeline.nbgrader_cli import tools_on_path

    tools_on_path()  # nbgrader makes the gradebook with alembic.
    log, records = logged
    me = pwd.getpwuid(os.geteuid()).pw_name
    other = next(user.pw_name for user in pwd.getpwall() if user.pw_uid != os.geteuid())
    inbound = tmp_path / "exchange" / COURSE / "inbound"
    inbound.mkdir(parents=True)
    (tmp_path / "course").mkdir()
    secret = tmp_path / "course" / "solutions.ipynb"
    secret.write_text("the instructor's solutions")
    mine = _submission(inbound, me, "2026-01-01 10:00:00.000000 UTC", "honest")
    newer = _submission(inbound, me, "2026-01-02 10:00:00.000000 UTC", "tricks")
    (newer / f"{ASSIGNMENT}.ipynb").unlink()
    os.symlink(secret, newer / f"{ASSIGNMENT}.ipynb")
    os.mkfifo(newer / "pipe")
    (newer / "notes.txt").write_text("kept")
    forged = _submission(inbound, other, "2099-01-01 00:00:00.000000 UTC", "forged")
    (inbound / f"{other}+{ASSIGNMENT}+not a time+x").mkdir()
    config, coursedir, authenticator = _setting(tmp_path)
    monkeypatch.chdir(tmp_path / "course")
    collect = OwnerCheckedCollect(coursedir=coursedir, authenticator=authenticator, config=config, log=log)
    collect.start()
    submitted = tmp_path / "course" / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == [me], "only this user's submissions are collected"
    assert sorted(p.name for p in (submitted / me / ASSIGNMENT).iterdir()) == ["notes.txt"], \
        "the newest genuine submission is taken, without its link and its pipe"
    assert any(f"claims the student {other} but was made by {me}" in line for line in records), records
    assert any("not a time+x: not a submission's name" in line for line in records), records
    assert any(f"{ASSIGNMENT}.ipynb is a link, a pipe or another special file; left out" in line
               for line in records), records
    assert forged.exists() and mine.exists(), "collect leaves the exchange as it was"


def test_release_makes_the_exchange_and_its_inbound_sticky(tmp_path, monkeypatch):
    config, coursedir, authenticator = _setting(tmp_path)
    release = tmp_path / "course" / "release" / ASSIGNMENT
    release.mkdir(parents=True)
    (release / f"{ASSIGNMENT}.ipynb").write_text("{}")
    (tmp_path / "exchange").mkdir(mode=0o777)
    os.chmod(tmp_path / "exchange", 0o777)
    monkeypatch.chdir(tmp_path / "course")
    StickyReleaseAssignment(coursedir=coursedir, authenticator=authenticator, config=config).start()
    assert stat.S_IMODE(os.stat(tmp_path / "exchange").st_mode) == 0o1777
    assert stat.S_IMODE(os.stat(tmp_path / "exchange" / COURSE / "inbound").st_mode) == 0o3733


def test_release_refuses_an_exchange_without_the_sticky_bit_that_is_not_ours(tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("giving the exchange to another user needs root")
    config, coursedir, authenticator = _setting(tmp_path)
    (tmp_path / "course" / "release" / ASSIGNMENT).mkdir(parents=True)
    (tmp_path / "exchange").mkdir()
    os.chmod(tmp_path / "exchange", 0o777)
    os.chown(tmp_path / "exchange", 65534, 65534)
    monkeypatch.chdir(tmp_path / "course")
    with pytest.raises(ExchangeError, match=r"chmod 1777 .*exchange"):
        StickyReleaseAssignment(coursedir=coursedir, authenticator=authenticator, config=config).start()
