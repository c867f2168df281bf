"""The grading command finds every submission in the layouts and file names instructors receive."""

from __future__ import annotations

import pytest

from grading.pipeline.collect import collect, read_mapping

ASSIGNMENTS = ["01_eviction_as_ranking", "03_lru_lfu"]


def _touch(folder, relative):
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
    return path


def _found(folder, mapping=None):
    submissions, problems = collect(folder, ASSIGNMENTS, mapping)
    return {(s.student, s.assignment): s for s in submissions}, problems


def test_nbgrader_layout_and_student_folders(tmp_path):
    _touch(tmp_path, "alice/01_eviction_as_ranking/01_eviction_as_ranking.ipynb")
    _touch(tmp_path, "bob/Copy of 03_lru_lfu.ipynb")
    _touch(tmp_path, "carol/03_lru_lfu (1).ipynb")
    found, problems = _found(tmp_path)
    assert set(found) == {("alice", "01_eviction_as_ranking"), ("bob", "03_lru_lfu"), ("carol", "03_lru_lfu")}
    assert found[("bob", "03_lru_lfu")].notes == ["renamed 'Copy of 03_lru_lfu.ipynb' to '03_lru_lfu.ipynb'"]
    assert not found[("alice", "01_eviction_as_ranking")].notes and not problems


def test_flat_folder_with_student_prefix_and_mapping(tmp_path):
    _touch(tmp_path, "alice_01_eviction_as_ranking.ipynb")
    _touch(tmp_path, "dave-03_lru_lfu (2).ipynb")
    _touch(tmp_path, "Copy of 01_eviction_as_ranking.ipynb")
    found, problems = _found(tmp_path)
    assert ("alice", "01_eviction_as_ranking") in found and ("dave", "03_lru_lfu") in found
    assert len(problems) == 1 and "student id" in problems[0] and "manual look" in problems[0]
    mapping_file = tmp_path / "students.csv"
    mapping_file.write_text("file,student_id\nCopy of 01_eviction_as_ranking.ipynb,erin\n")
    found, problems = _found(tmp_path, read_mapping(mapping_file))
    assert ("erin", "01_eviction_as_ranking") in found and not problems


def test_unknown_assignment_is_reported(tmp_path):
    _touch(tmp_path, "alice/homework.ipynb")
    found, problems = _found(tmp_path)
    assert not found and "no assignment id" in problems[0]


def test_two_files_of_one_student_are_both_kept_aside(tmp_path):
    _touch(tmp_path, "alice/03_lru_lfu.ipynb")
    _touch(tmp_path, "alice/Copy of 03_lru_lfu.ipynb")
    found, _ = _found(tmp_path)
    kept = found[("alice", "03_lru_lfu")]
    assert kept.rivals and kept.needs_manual_look
    assert "2 files for alice/03_lru_lfu" in kept.notes[0] and "none was graded" in kept.notes[0]
    assert "'alice/03_lru_lfu.ipynb'" in kept.notes[0] and "'alice/Copy of 03_lru_lfu.ipynb'" in kept.notes[0]


def test_flat_folder_name_collision_is_kept_aside(tmp_path):
    """Issue 14: a newer "_copy" file must not silently replace carol's graded file, nor another student's."""
    _touch(tmp_path, "carol_01_eviction_as_ranking.ipynb")
    _touch(tmp_path, "carol_01_eviction_as_ranking_copy.ipynb")
    _touch(tmp_path, "dave_01_eviction_as_ranking.ipynb")
    found, problems = _found(tmp_path)
    assert not problems
    assert found[("carol", "01_eviction_as_ranking")].rivals
    assert "2 files for carol/01_eviction_as_ranking" in found[("carol", "01_eviction_as_ranking")].notes[0]
    assert not found[("dave", "01_eviction_as_ranking")].rivals


@pytest.mark.parametrize("student", ["carol\n", "carol\n\n", "carol ", "-carol", "carol/x", "", "car ol", "张 三",
                                     "caro*", "[carol]", "car\u200bol", "car\u202eol"])
def test_student_ids_are_checked_with_a_full_match(tmp_path, student):
    """A trailing newline passes a "^...$" match (and nbgrader strips it): the id check is a full match."""
    _touch(tmp_path, "x/01_eviction_as_ranking.ipynb")
    found, problems = _found(tmp_path, {"x/01_eviction_as_ranking.ipynb": student} if student else None)
    if student:
        assert not found and "valid student id" in problems[0], (found, problems)
    path = tmp_path / "m.csv"
    path.write_text(f"a.ipynb,{student.strip()}!\n")
    with pytest.raises(ValueError, match="line 1"):
        read_mapping(path)


@pytest.mark.parametrize("name, student", [("caról", "caról"), ("张三", "张三"), ("Jose\u0301", "Jos\u00e9"),
                                           ("s2024.001-b", "s2024.001-b")])
def test_student_ids_may_be_written_in_any_script_and_are_composed(tmp_path, name, student):
    """Letters and digits of any script (the course's students are mostly Chinese-first); a decomposed name (as macOS
    writes it) gives the composed id, so the same student's two spellings are one student."""
    _touch(tmp_path, f"{name}/01_eviction_as_ranking.ipynb")
    found, problems = _found(tmp_path)
    assert set(found) == {(student, "01_eviction_as_ranking")} and not problems, (found, problems)
    path = tmp_path / "m.csv"
    path.write_text(f"a.ipynb,{name}\n", encoding="utf-8")
    assert read_mapping(path) == {"a.ipynb": student}


@pytest.mark.parametrize("content", ["file,student_id\nx.ipynb\n", "a.ipynb,bad id!\n"])
def test_bad_mapping_rows_name_the_line(tmp_path, content):
    path = tmp_path / "m.csv"
    path.write_text(content)
    with pytest.raises(ValueError, match="line"):
        read_mapping(path)


def test_score_table_has_one_block_per_assignment():
    from grading.pipeline.report import Scores, format_table, task_label

    assert task_label("test_task2_10_paged_attention") == "2.10"
    rows = [(Scores("alice", "01_a", {"1.1": (2.0, 2.0), "1.2": (0.0, 2.0)}), "graded"),
            (Scores("bob", "01_a", {"1.1": (1.0, 2.0), "1.2": (2.0, 2.0)}), "repaired"),
            (Scores("alice", "02_b", {"2.1": (3.0, 3.0)}), "timed out")]
    blocks = format_table(rows).split("\n\n")
    assert len(blocks) == 2
    assert "1.1" in blocks[0] and "2.1" not in blocks[0] and "2/4" in blocks[0] and "3/4" in blocks[0]
    assert "2.1" in blocks[1] and "timed out" in blocks[1]


# Submissions are read, never followed (issue 30).

NOTEBOOK = "03_lru_lfu.ipynb"


def _status(found, student, assignment="03_lru_lfu"):
    submission = found[(student, assignment)]
    return submission.failure or ""


def test_a_notebook_that_links_to_another_student_s_is_refused_naming_it(tmp_path):
    _touch(tmp_path, f"alice/{NOTEBOOK}")
    (tmp_path / "bob").mkdir()
    (tmp_path / "bob" / NOTEBOOK).symlink_to(f"../alice/{NOTEBOOK}")
    (tmp_path / "carol").symlink_to("alice", target_is_directory=True)  # A whole folder that is a link.
    (tmp_path / "alice" / "data").symlink_to("/etc", target_is_directory=True)  # Not a notebook: never read.
    found, problems = _found(tmp_path)
    assert _status(found, "bob").startswith(f"needs a manual look: refused 'bob/{NOTEBOOK}': a symbolic link")
    assert "never followed" in _status(found, "bob") and not _status(found, "alice")
    alice = found[("alice", "03_lru_lfu")]
    assert alice.needs_manual_look and alice.notes == [
        "refused 'alice/data': a symbolic link (submissions are read, never followed; not read)"]
    assert ("carol", "03_lru_lfu") not in found
    assert any("carol" in line and "a symbolic link" in line for line in problems), problems


def test_fifos_sockets_and_devices_are_refused_and_never_opened(tmp_path):
    import os
    import socket
    import stat

    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / NOTEBOOK)  # Opening it for reading would block the batch.
    (tmp_path / "sock").mkdir()
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "sock" / NOTEBOOK))
        kinds = {"fifo": "a FIFO", "sock": "a socket"}
        if os.geteuid() == 0:
            (tmp_path / "dev").mkdir()
            os.mknod(tmp_path / "dev" / NOTEBOOK, stat.S_IFCHR | 0o600, os.makedev(1, 3))
            kinds["dev"] = "a device file"
        found, _ = _found(tmp_path)
    for student, kind in kinds.items():
        assert _status(found, student) == (f"needs a manual look: refused '{student}/{NOTEBOOK}': {kind} "
                                           "(submissions are read, never followed)"), student


def test_a_hard_link_is_refused_unless_every_name_is_a_notebook_of_the_same_student(tmp_path):
    import os

    outside = tmp_path / "instructor" / "solution.ipynb"  # Outside the submissions folder.
    outside.parent.mkdir()
    outside.write_text("{}")
    folder = tmp_path / "submissions"
    _touch(folder, f"alice/{NOTEBOOK}")
    (folder / "bob").mkdir()
    os.link(outside, folder / "bob" / NOTEBOOK)
    _touch(folder, "carol/01_eviction_as_ranking.ipynb")
    os.link(folder / "carol" / "01_eviction_as_ranking.ipynb", folder / "carol" / NOTEBOOK)
    found, problems = _found(folder)
    assert "refused 'bob/03_lru_lfu.ipynb': a hard link (the file has 2 names" in _status(found, "bob")
    assert not _status(found, "carol") and not _status(found, "alice") and not problems


def test_a_link_put_in_place_after_collecting_is_not_followed(tmp_path):
    from grading.pipeline.collect import Unreadable, read_submitted

    _touch(tmp_path, f"alice/{NOTEBOOK}").write_text('{"alice": 1}')
    _touch(tmp_path, "secret/answers.txt").write_text("secret")
    found, _ = _found(tmp_path)
    submission = found[("alice", "03_lru_lfu")]
    assert read_submitted(submission, 1 << 20) == b'{"alice": 1}'
    (tmp_path / "alice" / NOTEBOOK).unlink()
    (tmp_path / "alice" / NOTEBOOK).symlink_to("../secret/answers.txt")
    with pytest.raises(Unreadable, match="a symbolic link"):
        read_submitted(submission, 1 << 20)
    (tmp_path / "alice" / NOTEBOOK).unlink()
    (tmp_path / "alice").rename(tmp_path / "alice-moved")
    (tmp_path / "alice").symlink_to("secret", target_is_directory=True)
    (tmp_path / "secret" / NOTEBOOK).write_text("{}")
    with pytest.raises(Unreadable, match="'alice' is a link or not a folder"):
        read_submitted(submission, 1 << 20)


def test_a_tree_deeper_than_a_path_can_name_is_a_line_never_a_crash(tmp_path):
    import os

    _touch(tmp_path, f"alice/{NOTEBOOK}")
    descriptor = os.open(tmp_path, os.O_DIRECTORY)
    for name in ["dave", *["d" * 50] * 100]:  # 5,000 characters: more than PATH_MAX.
        os.mkdir(name, dir_fd=descriptor)
        deeper = os.open(name, os.O_DIRECTORY, dir_fd=descriptor)
        os.close(descriptor)
        descriptor = deeper
    os.close(descriptor)
    found, problems = _found(tmp_path)
    assert ("alice", "03_lru_lfu") in found
    assert any("dave/" in line and "cannot be read (File name too long)" in line for line in problems), problems


def test_a_name_that_is_not_utf8_is_shown_escaped(tmp_path):
    import os

    folder = os.fsencode(tmp_path)
    os.mkdir(folder + b"/bob")
    with open(folder + b"/bob/Copy of \xff" + NOTEBOOK.encode(), "w") as handle:
        handle.write("{}")
    found, _ = _found(tmp_path)
    assert found[("bob", "03_lru_lfu")].notes == [f"renamed 'Copy of \\xff{NOTEBOOK}' to '{NOTEBOOK}'"]


def test_a_zip_is_read_without_links_absolute_or_parent_paths_and_with_caps(tmp_path, monkeypatch):
    import stat
    import warnings
    import zipfile

    from grading.pipeline import zipped

    path = tmp_path / "canvas.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"alice/{NOTEBOOK}", "{}")
        archive.writestr("alice/notes.txt", "not a notebook")
        link = zipfile.ZipInfo(f"bob/{NOTEBOOK}")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, f"../alice/{NOTEBOOK}")
        archive.writestr(f"../carol/{NOTEBOOK}", "{}")
        archive.writestr(f"/dave/{NOTEBOOK}", "{}")
        archive.writestr(f"erin/{NOTEBOOK}", "{}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zipfile warns of the duplicate that this test writes.
            archive.writestr(f"erin/{NOTEBOOK}", "{}")  # Twice, as a careless export writes it.
        archive.writestr(f"frank/{NOTEBOOK}", b"\0" * (2 << 20))  # A bomb: 2 MB of zeros, a few KB packed.
    extracted = tmp_path / "extracted"
    extracted.mkdir()
    lines: list[str] = []
    refused = dict(zipped.extract_notebooks(path, extracted, 1 << 20, lines.append))
    assert sorted(p.relative_to(extracted).as_posix() for p in extracted.rglob("*") if p.is_file()) == [
        f"alice/{NOTEBOOK}", f"erin/{NOTEBOOK}"]
    assert refused == {f"bob/{NOTEBOOK}": "a symbolic link", f"../carol/{NOTEBOOK}": "a path with '..' or '.'",
                       f"/dave/{NOTEBOOK}": "an absolute or Windows path", f"erin/{NOTEBOOK}": "in the zip twice",
                       f"frank/{NOTEBOOK}": "not extracted from the zip: it has more than the 1 MB a notebook may have "
                                            "here (--max-notebook-mb)"}
    found, _ = collect(extracted, ASSIGNMENTS, refused=list(refused.items()))
    assert found and all(s.failure for s in found if s.student != "alice")
    assert "refused 'bob/03_lru_lfu.ipynb': a symbolic link" in next(s.failure for s in found if s.student == "bob")
    monkeypatch.setattr(zipped, "MAX_ENTRIES", 2)
    again = tmp_path / "again"
    again.mkdir()
    zipped.extract_notebooks(path, again, 1 << 20, lines.append)
    assert any("more than 2 entries" in line for line in lines)
    (tmp_path / "broken.zip").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(ValueError, match="not a readable zip"):
        zipped.extract_notebooks(tmp_path / "broken.zip", again, None)


def test_walking_a_folder_past_its_time_limit_is_a_line_and_the_others_are_collected(tmp_path):
    _touch(tmp_path, f"alice/{NOTEBOOK}")
    _touch(tmp_path, "bob_03_lru_lfu.ipynb")
    found, problems = collect(tmp_path, ASSIGNMENTS, limit_s=-1)
    assert [(s.student, s.assignment) for s in found] == [("bob", "03_lru_lfu")]
    assert len(problems) == 1 and "alice: collect took too long" in problems[0] and "manual look" in problems[0]


@pytest.mark.parametrize("stamp, carried", [
    ("2026-12-07 10:00:00.123456 UTC", True),
    ("2026-12-07 18:00:00.000000 +08", True),
    ("2026-12-07 10:00:00 America/New_York", True),
    ("2026-12-07 10:00:00 /etc/passwd", False),
    ("2026-12-07 10:00:00 /proc/self/fd/0", False),
    ("2026-12-07 10:00:00 UTC/../../../etc/passwd", False),
])
def test_a_timestamp_whose_zone_is_a_path_is_not_carried(tmp_path, stamp, carried):
    """nbgrader's parse_utc hands the zone of timestamp.txt to dateutil's gettz, which opens a zone name that is a path
    as a zone file: the grader would open a file the student names (red team 2026-12-07)."""
    from grading.pipeline.collect import Submission
    from grading.pipeline.prepare import _carry_exchange_files

    folder = tmp_path / "submitted" / "alice" / "03_lru_lfu"
    folder.mkdir(parents=True)
    (folder / "03_lru_lfu.ipynb").write_text("{}")
    (folder / "timestamp.txt").write_text(stamp)
    (folder / "submission_secret.txt").write_text("secret")
    target = tmp_path / "target"
    target.mkdir()
    notebook = Submission("alice", "03_lru_lfu", folder / "03_lru_lfu.ipynb", [], root=tmp_path / "submitted")
    _carry_exchange_files(notebook, target)
    assert (target / "timestamp.txt").exists() is carried
    assert (target / "submission_secret.txt").read_text() == "secret"
