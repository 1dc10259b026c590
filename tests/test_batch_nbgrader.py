"""`--nbgrader-db PATH --assignment NAME`: after grading, scores go to grader.frontends.notebooks.nbgrader_export
(another front-end's module); without that module the batch refuses, before grading anything. With the
scores goes each submission's time from its timestamp.txt, into the real nbgrader gradebook."""
import importlib.machinery
import importlib.util
import io
import os
import sys
from datetime import datetime

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
    fake.write_scores = lambda db, assignment, results, timestamps: calls.append((db, assignment, results))
    fake.check_gradebook = lambda db, assignment: calls.append(("checked", db, assignment))
    monkeypatch.setitem(sys.modules, "fake_nbgrader_export", fake)
    monkeypatch.setattr(run, "NBGRADER_MODULE", "fake_nbgrader_export")
    course = tmp_path / "course"
    make_class(course / "submitted" / "alice", {"ps1": "correct"})
    make_class(course / "submitted" / "bob", {"ps1": {"causal_mask": "inverted"}})
    config = load_config(str(ROOT / "autograde.toml"), env={})
    options = run.Options(str(course), str(tmp_path / "out"), ("attention.causal_mask",), jobs=2,
                          assignment="ps1", nbgrader_db=str(course / "gradebook.db"))
    summary = run.run_batch(options, config, io.StringIO())
    checked, (db, assignment, results) = calls          # checked before grading, written after
    assert checked == ("checked", str(course / "gradebook.db"), "ps1")
    assert (db, assignment) == (str(course / "gradebook.db"), "ps1")
    assert sorted(results) == ["alice", "bob"] and all(isinstance(r, SubmissionResult) for r in results.values())
    assert results["alice"].score == 1 and results["bob"].score < 1
    assert any(n.startswith("nbgrader: scores written") for n in summary.notes)


def test_export_failure_says_the_grades_are_safe(tmp_path, monkeypatch):
    def broken(db, assignment, results, **_):
        raise RuntimeError("no assignment 'ps1' in the gradebook")
    fake = importlib.util.module_from_spec(importlib.machinery.ModuleSpec("broken_nbgrader_export", None))
    fake.write_scores = broken
    fake.check_gradebook = lambda db, assignment: None
    monkeypatch.setitem(sys.modules, "broken_nbgrader_export", fake)
    monkeypatch.setattr(run, "NBGRADER_MODULE", "broken_nbgrader_export")
    subs = tmp_path / "course" / "submitted"
    make_class(subs / "alice", {"ps1": "empty"})       # handed in, but nothing in it: graded as unreadable
    options = run.Options(str(subs), str(tmp_path / "out"), ("attention.causal_mask",), jobs=1,
                          assignment="ps1", nbgrader_db="gb.db")
    with pytest.raises(run.BatchError, match="nothing is regraded"):
        run.run_batch(options, load_config(str(ROOT / "autograde.toml"), env={}), io.StringIO())
    assert (tmp_path / "out" / "grades.csv").exists()


def test_a_gradebook_that_cannot_take_the_scores_is_refused_before_grading(tmp_path, capsys):
    """A misspelled --nbgrader-db, a corrupt or a locked one was found only after the whole class was graded."""
    import sqlite3

    from grader.frontends.notebooks.nbgrader_export import GradebookError, check_gradebook
    corrupt, locked = tmp_path / "corrupt.db", tmp_path / "locked.db"
    corrupt.write_bytes(b"this is not an SQLite database, but sixteen bytes and more\n" * 20)
    with pytest.raises(GradebookError, match="corrupt.db: not an nbgrader gradebook .*give the gradebook.db"):
        check_gradebook(str(corrupt), "ps1")
    holder = sqlite3.connect(locked, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")         # formgrader in the middle of a write
    try:
        with pytest.raises(GradebookError, match="locked.db: locked by another program"):
            check_gradebook(str(locked), "ps1")
    finally:
        holder.close()
    subs = make_class(tmp_path / "subs", {"alice": "correct"})
    code = cli.main(["batch", str(subs), "--out", str(tmp_path / "out"), "attention.causal_mask",
                     "--nbgrader-db", str(tmp_path / "gradbook.db"), "--assignment", "ps1"])
    assert code == cli.ExitCode.USAGE
    err = capsys.readouterr().err
    assert "--nbgrader-db: " in err and "gradbook.db: no such gradebook" in err and "Nothing was graded." in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_the_submission_time_reaches_nbgrader_s_gradebook(tmp_path, monkeypatch):
    """nbgrader counts lateness from submitted_assignment.timestamp, which `nbgrader autograde` fills
    from timestamp.txt; the batch left it NULL, so nbgrader saw every submission on time. alice's
    time is written; bob has none, which the summary says."""
    from nbgrader import api as nbgrader_api      # the test extras install it
    monkeypatch.setenv("PATH", os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
    db = tmp_path / "gradebook.db"       # what `nbgrader generate_assignment ps1` records, for one grade cell
    with nbgrader_api.Gradebook(f"sqlite:///{db}") as gb:
        gb.update_or_create_assignment("ps1", duedate="2026-03-01 00:00:00 UTC")
        gb.add_notebook("attention", "ps1")
        gb.add_grade_cell("attention-causal_mask", "attention", "ps1", max_score=1, cell_type="code")
    course = tmp_path / "course"
    make_class(course / "submitted" / "alice", {"ps1": "correct"})
    make_class(course / "submitted" / "bob", {"ps1": "correct"})
    (course / "submitted" / "alice" / "ps1" / "timestamp.txt").write_text("2026-03-02 10:00:00.000000 UTC")
    options = run.Options(str(course), str(tmp_path / "out"), ("attention.causal_mask",), jobs=2,
                          assignment="ps1", nbgrader_db=str(db))
    summary = run.run_batch(options, load_config(str(ROOT / "autograde.toml"), env={}), io.StringIO())
    with nbgrader_api.Gradebook(f"sqlite:///{db}") as gb:
        alice, bob = gb.find_submission("ps1", "alice"), gb.find_submission("ps1", "bob")
        assert (alice.timestamp, alice.total_seconds_late) == (datetime(2026, 3, 2, 10, 0), 34 * 3600)
        assert (bob.timestamp, alice.score, bob.score) == (None, 1.0, 1.0)
    (line,) = [n for n in summary.notes if n.startswith("nbgrader: scores written for 2 students")]
    assert line.endswith("; no usable timestamp.txt for bob: nbgrader keeps the time it had for them "
                         "(none for a new submission)")
