"""`--nbgrader-db PATH --assignment NAME`: after grading, scores go to grader.frontends.notebooks.nbgrader_export
(another front-end's module); without that module the batch refuses, before grading anything."""
import importlib.machinery
import importlib.util
import io
import sys

import pytest

from fixtures.batch.build import make_class
from grader import cli
from grader.frontends.batch import run
from grader.config import load_config
from grader.results import SubmissionResult
from conftest import ROOT


def test_missing_nbgrader_support_is_a_clear_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(run, "NBGRADER_MODULE", "grader.no_such_nbgrader_export")
    subs = make_class(tmp_path / "subs", {"alice": "correct"})
    code = cli.main(["batch", str(subs), "--out", str(tmp_path / "out"), "attention.causal_mask",
                     "--nbgrader-db", str(tmp_path / "gradebook.db"), "--assignment", "ps1"])
    assert code == cli.ExitCode.USAGE
    assert "nbgrader support is not installed" in capsys.readouterr().err
    assert not (tmp_path / "out" / "gradebook.sqlite").exists()      # refused before grading


def test_scores_are_handed_to_nbgrader_export(tmp_path, monkeypatch):
    calls = []
    fake = importlib.util.module_from_spec(importlib.machinery.ModuleSpec("fake_nbgrader_export", None))
    fake.write_scores = lambda db, assignment, results: calls.append((db, assignment, results))
    monkeypatch.setitem(sys.modules, "fake_nbgrader_export", fake)
    monkeypatch.setattr(run, "NBGRADER_MODULE", "fake_nbgrader_export")
    course = tmp_path / "course"
    make_class(course / "submitted" / "alice", {"ps1": "correct"})
    make_class(course / "submitted" / "bob", {"ps1": {"causal_mask": "inverted"}})
    config = load_config(str(ROOT / "autograde.toml"), env={})
    options = run.Options(str(course), str(tmp_path / "out"), ("attention.causal_mask",), jobs=2,
                          assignment="ps1", nbgrader_db=str(course / "gradebook.db"))
    summary = run.run_batch(options, config, io.StringIO())
    ((db, assignment, results),) = calls
    assert (db, assignment) == (str(course / "gradebook.db"), "ps1")
    assert sorted(results) == ["alice", "bob"] and all(isinstance(r, SubmissionResult) for r in results.values())
    assert results["alice"].score == 1 and results["bob"].score < 1
    assert any(n.startswith("nbgrader: scores written") for n in summary.notes)


def test_export_failure_says_the_grades_are_safe(tmp_path, monkeypatch):
    def broken(db, assignment, results):
        raise RuntimeError("no assignment 'ps1' in the gradebook")
    fake = importlib.util.module_from_spec(importlib.machinery.ModuleSpec("broken_nbgrader_export", None))
    fake.write_scores = broken
    monkeypatch.setitem(sys.modules, "broken_nbgrader_export", fake)
    monkeypatch.setattr(run, "NBGRADER_MODULE", "broken_nbgrader_export")
    subs = make_class(tmp_path / "subs", {"alice": "empty"})
    options = run.Options(str(subs), str(tmp_path / "out"), ("attention.causal_mask",), jobs=1,
                          assignment="ps1", nbgrader_db="gb.db")
    with pytest.raises(run.BatchError, match="nothing is regraded"):
        run.run_batch(options, load_config(str(ROOT / "autograde.toml"), env={}), io.StringIO())
    assert (tmp_path / "out" / "grades.csv").exists()
