"""The grading command finds every submission in the layouts and file names instructors receive."""

from __future__ import annotations

import pytest

from grading.grade import collect, read_mapping

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


@pytest.mark.parametrize("student", ["carol\n", "carol\n\n", "carol ", "-carol", "caról", "carol/x", ""])
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


@pytest.mark.parametrize("content", ["file,student_id\nx.ipynb\n", "a.ipynb,bad id!\n"])
def test_bad_mapping_rows_name_the_line(tmp_path, content):
    path = tmp_path / "m.csv"
    path.write_text(content)
    with pytest.raises(ValueError, match="line"):
        read_mapping(path)


def test_score_table_has_one_block_per_assignment():
    from grading.report import Scores, format_table, task_label

    assert task_label("test_task2_10_paged_attention") == "2.10"
    rows = [(Scores("alice", "01_a", {"1.1": (2.0, 2.0), "1.2": (0.0, 2.0)}), "graded"),
            (Scores("bob", "01_a", {"1.1": (1.0, 2.0), "1.2": (2.0, 2.0)}), "repaired"),
            (Scores("alice", "02_b", {"2.1": (3.0, 3.0)}), "timed out")]
    blocks = format_table(rows).split("\n\n")
    assert len(blocks) == 2
    assert "1.1" in blocks[0] and "2.1" not in blocks[0] and "2/4" in blocks[0] and "3/4" in blocks[0]
    assert "2.1" in blocks[1] and "timed out" in blocks[1]
