"""Finding a class's submissions: folders, zips and nbgrader's submitted/<student>/<assignment>/,
and the content hash that decides what a re-run regrades."""
import os
import zipfile

import pytest

from fixtures.batch.build import make_class
from grader.frontends.batch import discover as discover_module
from grader.errors import UsageError
from grader.frontends.batch.discover import content_hash, discover, folder_name


def test_one_folder_or_zip_per_student(tmp_path):
    root = make_class(tmp_path / "subs", {"alice": "correct", "bob": "zip:correct", "carol": "empty",
                                          "dave": "corrupt.zip"})
    (root / "README.txt").write_text("not a submission")
    (root / ".DS_Store").write_text("")
    found = discover(str(root))
    assert [(e.student, e.layout) for e in found.entries] == [
        ("alice", "folder"), ("bob", "zip"), ("carol", "folder"), ("dave", "zip")]
    assert any("README.txt" in n and "not a folder or a .zip" in n for n in found.notes)
    assert all(not e.problem for e in found.entries)


def test_nbgrader_submitted_layout(tmp_path):
    course = tmp_path / "course"
    for student in ("alice", "bob"):
        folder = course / "submitted" / student / "ps1"
        folder.mkdir(parents=True)
        (folder / "attention.ipynb").write_text("{}")
        (folder / "timestamp.txt").write_text("2024-01-01 00:00:00")
    found = discover(str(course))                     # the course folder: submitted/ is found
    assert [(e.student, e.layout, os.path.basename(e.path)) for e in found.entries] == [
        ("alice", "nbgrader", "ps1"), ("bob", "nbgrader", "ps1")]
    assert discover(str(course / "submitted")).entries == found.entries
    (course / "nbgrader_config.py").write_text("c = get_config()\n")    # a real course folder
    for folder in ("source/ps1", "release/ps1", "autograded/alice/ps1"):
        (course / folder).mkdir(parents=True)
    (course / "source" / "ps1" / "attention.ipynb").write_text("{}")
    assert discover(str(course)).entries == found.entries


def test_several_assignments_need_assignment_flag(tmp_path):
    for a in ("ps1", "ps2"):
        folder = tmp_path / "submitted" / "alice" / a
        folder.mkdir(parents=True)
        (folder / "attention.py").write_text("x = 1\n")
    (entry,) = discover(str(tmp_path / "submitted")).entries
    assert "--assignment" in entry.problem and "ps1, ps2" in entry.problem
    (entry,) = discover(str(tmp_path / "submitted"), assignment="ps2").entries
    assert entry.path.endswith(os.path.join("alice", "ps2")) and not entry.problem
    with pytest.raises(UsageError, match="--assignment ps9: no student has a folder of that name .*; the assignment "
                                         "folders there: ps1, ps2"):
        discover(str(tmp_path / "submitted"), assignment="ps9")


def test_a_student_without_the_assignment_has_no_submission_and_a_typo_is_refused(tmp_path):
    """--assignment ps01 for folders named ps1 recorded the whole class as 'unreadable' 0, exit 0; a
    student without the folder while others have it was 'unreadable' too (and an nbgrader submission)."""
    for student, a in (("alice", "ps1"), ("bob", "ps1"), ("carl", "ps2")):
        (tmp_path / "submitted" / student / a).mkdir(parents=True)
        (tmp_path / "submitted" / student / a / "neurons.py").write_text("x = 1\n")
    (tmp_path / "submitted" / "dora").mkdir()
    found = discover(str(tmp_path), assignment="ps1")
    assert [e.student for e in found.entries] == ["alice", "bob"]
    assert "carl: no submission for assignment 'ps1', not graded (found ps2)" in found.notes
    assert "dora: no submission for assignment 'ps1', not graded (the folder is empty)" in found.notes
    with pytest.raises(UsageError, match=r"--assignment ps01: .* \(did you mean 'ps1'\?\); the assignment folders "
                                         "there: ps1, ps2"):
        discover(str(tmp_path), assignment="ps01")


def test_a_fifo_named_like_a_zip_is_skipped(tmp_path):
    root = make_class(tmp_path / "subs", {"alice": "correct"})
    os.mkfifo(root / "bob.zip")
    found = discover(str(root))
    assert [e.student for e in found.entries] == ["alice"]
    assert "bob.zip: skipped (not a regular file: a pipe or a device)" in found.notes


def test_duplicate_ids_are_kept_apart(tmp_path):
    root = make_class(tmp_path / "subs", {"alice": "correct"})
    make_class(root, {"alice": "zip:correct"})        # alice/ and alice.zip
    found = discover(str(root))
    assert sorted(e.student for e in found.entries) == ["alice", "alice.zip"]
    assert any("already taken" in n for n in found.notes)


def test_output_folder_inside_submissions_is_not_a_student(tmp_path):
    root = make_class(tmp_path / "subs", {"alice": "correct"})
    (root / "graded").mkdir()
    assert [e.student for e in discover(str(root), exclude=str(root / "graded")).entries] == ["alice"]


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a folder of submissions"):
        discover(str(tmp_path / "nope"))


def test_content_hash_follows_content_not_time(tmp_path):
    root = make_class(tmp_path / "subs", {"alice": "correct", "bob": "zip:correct"})
    a, b = content_hash(str(root / "alice")), content_hash(str(root / "bob.zip"))
    os.utime(root / "alice" / "attention.py", (1, 1))
    (root / "alice" / "__pycache__").mkdir()
    (root / "alice" / "__pycache__" / "attention.cpython-311.pyc").write_bytes(b"junk")
    assert content_hash(str(root / "alice")) == a
    with open(root / "alice" / "attention.py", "a") as f:
        f.write("# changed\n")
    assert content_hash(str(root / "alice")) != a
    (root / "alice" / "notes.txt").write_text("new file")
    changed = content_hash(str(root / "alice"))
    (root / "alice" / "notes.txt").rename(root / "alice" / "notes2.txt")
    assert content_hash(str(root / "alice")) != changed      # names count, not only bytes
    assert content_hash(str(root / "bob.zip")) == b


def test_a_zip_is_hashed_whole_whatever_its_size(tmp_path, monkeypatch):
    """Files larger than any the loader reads are fingerprinted by size (here: above 100 bytes), but a
    zip is read by the loader: the red team padded theirs past 64 MiB, swapped its attention.py for
    one of the same length, and the rerun kept the old grade."""
    monkeypatch.setattr(discover_module, "HASH_WHOLE_FILE", 100)

    def zipped(text):
        with zipfile.ZipFile(tmp_path / "mallory.zip", "w") as zf:
            zf.writestr("attention.py", text)
        return content_hash(str(tmp_path / "mallory.zip"))
    assert zipped("def causal_mask(T):\n    return 1\n" * 20) != zipped("def causal_mask(T):\n    return 2\n" * 20)
    folder = tmp_path / "bob"
    folder.mkdir()
    (folder / "data.bin").write_bytes(b"a" * 1000)
    before = content_hash(str(folder))
    (folder / "data.bin").write_bytes(b"b" * 1000)
    assert content_hash(str(folder)) == before          # a dataset beside the modules: its size stands for it


def test_folder_names_are_safe_and_distinct():
    assert folder_name("alice") == "alice"
    odd = [folder_name(s) for s in ("a/b", "a?b", "..", "ä")]
    assert all("/" not in n and n not in (".", "..") for n in odd)
    assert len(set(odd)) == len(odd)
    changed = folder_name("alice smith")
    assert changed.startswith("alice_smith-") and folder_name(changed) != changed      # no one takes hers
    assert folder_name("bob-0123456789abcdef") != "bob-0123456789abcdef" and folder_name("bob-01234567") == \
        "bob-01234567"
