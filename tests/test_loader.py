"""Submissions as folders, zips and single files; salvage of modules that will not import."""
import ast
import zipfile

import pytest

from grader.submission.loader import SubmissionError, load_submission, salvage


def test_folder(tmp_path):
    (tmp_path / "attention.py").write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text("hi")
    sub = load_submission(str(tmp_path))
    assert sub.files == {"attention": "x = 1\n"} and not sub.problems


def test_empty_folder_is_a_problem_not_a_crash(tmp_path):
    assert "no .py modules" in load_submission(str(tmp_path)).problems[0]


def test_zip_with_nested_folder(tmp_path):
    z = tmp_path / "s.zip"
    with zipfile.ZipFile(z, "w") as f:
        f.writestr("exercises/attention.py", "y = 2\n")
        f.writestr("__MACOSX/exercises/._attention.py", "junk")
    assert load_submission(str(z)).files == {"attention": "y = 2\n"}


def test_corrupt_zip_gets_a_clear_message(tmp_path):
    z = tmp_path / "bad.zip"
    z.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(SubmissionError, match="not a readable zip archive"):
        load_submission(str(z))


def test_missing_path(tmp_path):
    with pytest.raises(SubmissionError, match="no such file or folder"):
        load_submission(str(tmp_path / "nope"))


def test_salvage_drops_the_broken_definition_and_top_level_code():
    src = ('"""Module doc\ndef not_code(): mentioned in a docstring\n"""\nimport sys\n'
           "sys.exit(0)\n\ndef good():\n    return 1\n\ndef bad(:\n    return 2\n\nLIMIT = 3\nwhile True:\n    pass\n")
    fixed, dropped = salvage(src)
    tree = ast.parse(fixed)
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert names == {"good"} and "LIMIT = 3" in fixed and "sys.exit" not in fixed
    assert len(fixed.splitlines()) == len(src.splitlines())       # line numbers kept
    assert any("syntax error" in d for d in dropped) and any("runs at import" in d for d in dropped)


def test_a_corrupt_notebook_costs_only_its_module(tmp_path):
    (tmp_path / "attention.py").write_text("x = 1\n")
    (tmp_path / "tokens.ipynb").write_text("{ not json")
    sub = load_submission(str(tmp_path))
    assert sub.files == {"attention": "x = 1\n"}
    assert len(sub.problems) == 1 and "tokens.ipynb" in sub.problems[0]
