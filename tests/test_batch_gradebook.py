"""The gradebook: results survive a round trip, one transaction per result, nothing half-written."""
import json
import sqlite3

import pytest

from grader.frontends.batch.gradebook import SCHEMA_VERSION, Gradebook, Run, fingerprint
from grader.results import CaseResult, ExerciseResult, PerfResult, Status, SubmissionResult


def result(points=1.0, diagnosis="", status=Status.FAILED, perf=()):
    cases = (CaseResult("T=4", Status.PASSED), CaseResult("T=7", status, diagnosis=diagnosis))
    e = ExerciseResult("attention.causal_mask", status, points, 2.0, cases, diagnosis=diagnosis, performance=perf)
    return SubmissionResult("subs/alice", (e,), seconds=1.5, grader_version="test")


def test_record_and_read_back(tmp_path):
    book = Gradebook(str(tmp_path / "g.sqlite"))
    run = book.begin_run("s1", ["attention.causal_mask"], 2, "test")
    perf = (PerfResult("large", Status.PASSED, ratio=1.7, threshold=3.0),)
    r = result(diagnosis="mask inverted: True must mean 'may attend'", perf=perf)
    book.record(run, "alice", "subs/alice", "h1", "s1", "graded", r)
    (row,) = book.rows()
    assert (row.student, row.content_hash, row.settings_hash, row.state) == ("alice", "h1", "s1", "graded")
    assert row.result == r
    db = sqlite3.connect(str(tmp_path / "g.sqlite"))
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("SELECT fingerprint, cases_passed, cases_total FROM exercises").fetchall() == \
        [("mask inverted", 1, 2)]
    assert db.execute("SELECT ratio, threshold FROM performance").fetchall() == [(1.7, 3.0)]
    assert book.current() == {"alice": ("h1", "s1", "graded")}


def test_regrading_replaces_the_row_and_logs_an_event(tmp_path):
    book = Gradebook(str(tmp_path / "g.sqlite"))
    run = book.begin_run("s1", [], 1, "test")
    book.record(run, "alice", "p", "h1", "s1", "graded", result(points=1.0))
    book.record(run, "alice", "p", "h2", "s1", "graded", result(points=2.0, status=Status.PASSED))
    (row,) = book.rows()
    assert row.score == 2.0 and row.content_hash == "h2"
    assert book.db.execute("SELECT COUNT(*) FROM exercises").fetchone()[0] == 1
    assert book.db.execute("SELECT COUNT(*) FROM events WHERE student='alice'").fetchone()[0] == 2


def test_a_failed_write_leaves_the_old_row_whole(tmp_path):
    book = Gradebook(str(tmp_path / "g.sqlite"))
    run = book.begin_run("s1", [], 1, "test")
    book.record(run, "alice", "p", "h1", "s1", "graded", result(points=1.0))
    with pytest.raises(sqlite3.IntegrityError):     # the state CHECK fails after the DELETE ran
        book.record(run, "alice", "p", "h2", "s1", "bogus-state", result(points=2.0))
    (row,) = book.rows()
    assert row.content_hash == "h1" and row.score == 1.0
    assert book.db.execute("SELECT COUNT(*) FROM exercises").fetchone()[0] == 1


def test_rows_of_chosen_students(tmp_path):
    book = Gradebook(str(tmp_path / "g.sqlite"))
    run = book.begin_run("s1", [], 1, "test")
    for s in ("carol", "alice", "bob"):
        book.record(run, s, "p", "h", "s1", "graded", result())
    assert [r.student for r in book.rows()] == ["alice", "bob", "carol"]
    assert [r.student for r in book.rows(["carol", "zed"])] == ["carol"]


def test_fingerprint_is_the_name_before_the_colon():
    assert fingerprint("missing 1/sqrt(d_k): divide the scores by sqrt(d_k)") == "missing 1/sqrt(d_k)"
    assert fingerprint("") == ""


def test_stored_result_is_plain_json(tmp_path):
    book = Gradebook(str(tmp_path / "g.sqlite"))
    run = book.begin_run("s1", [], 1, "test")
    book.record(run, "alice", "p", "h", "s1", "graded", result())
    (data,) = book.db.execute("SELECT result FROM submissions").fetchone()
    assert json.loads(data)["exercises"][0]["id"] == "attention.causal_mask"


def test_infinite_error_figures_round_trip(tmp_path):
    from dataclasses import replace
    from grader.results import Comparison

    r = result()
    e = r.exercises[0]
    bad = replace(e.cases[1], comparisons=(Comparison("out", False, "inf where a number was expected",
                                                      max_abs_error=float("inf"), max_rel_error=float("inf")),))
    r = replace(r, exercises=(replace(e, cases=(e.cases[0], bad)),))
    book = Gradebook(str(tmp_path / "g.sqlite"))
    book.record(book.begin_run("s", [], 1, "t"), "alice", "p", "h", "s", "graded", r)
    (row,) = book.rows()
    assert row.result.exercises[0].cases[1].comparisons[0].max_abs_error == float("inf")


# A gradebook as schema version 1 wrote it (before late penalties): the submissions table without
# penalty, final_score and lateness.
V1_SUBMISSIONS = """CREATE TABLE submissions (
    student TEXT PRIMARY KEY, content_hash TEXT NOT NULL, settings_hash TEXT NOT NULL, path TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('graded', 'unreadable', 'grader_error')), score REAL NOT NULL,
    max_score REAL NOT NULL, message TEXT NOT NULL, seconds REAL NOT NULL, result TEXT NOT NULL,
    run_id INTEGER NOT NULL REFERENCES runs(id), graded_at TEXT NOT NULL)"""


def test_a_version_1_gradebook_opens_and_keeps_its_rows(tmp_path):
    from grader.deadlines.policy import Lateness, LateStatus
    from grader.results import to_dict

    path = str(tmp_path / "old.sqlite")
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    db.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, started_at TEXT NOT NULL, finished_at TEXT, "
               "settings_hash TEXT NOT NULL, exercises TEXT NOT NULL, jobs INTEGER NOT NULL, "
               "grader_version TEXT NOT NULL)")
    db.execute("INSERT INTO runs VALUES (1, 'then', 'then', 's1', '[]', 1, 'old')")
    db.execute(V1_SUBMISSIONS)
    db.execute("INSERT INTO submissions VALUES ('alice','h1','s1','p','graded',1.0,2.0,'',1.5,?,1,'then')",
               (json.dumps(to_dict(result())),))
    db.commit()
    db.close()

    book = Gradebook(path)
    assert book.db.execute("SELECT value FROM meta").fetchone()[0] == str(SCHEMA_VERSION)
    (row,) = book.rows()
    assert (row.student, row.score, row.penalty, row.final, row.late) == ("alice", 1.0, 0.0, 1.0, None)
    assert book.current() == {"alice": ("h1", "s1", "graded")}        # so an unchanged submission stays skipped
    late = Lateness(LateStatus.LATE, 1.0, 0.1, 0.9, 10.0, "submitted …, 3 h late: −10 %", "nbgrader timestamp.txt")
    book.set_lateness("alice", late)
    book.close()
    (row,) = Gradebook(path).rows()                                   # opening again migrates nothing twice
    assert (row.score, row.penalty, row.final, row.late) == (1.0, 0.1, 0.9, late)
    assert Gradebook(path).latest_run() == Run(1, "then", True, "s1", None)     # which students: not recorded


def test_a_run_records_the_students_it_found_and_whether_it_finished(tmp_path):
    book = Gradebook(str(tmp_path / "g.sqlite"))
    assert book.latest_run() is None
    first = book.begin_run("s1", [], 1, "test", ["alice", "bob"])
    book.end_run(first)
    second = book.begin_run("s2", [], 1, "test", ["alice"])
    run = book.latest_run()
    assert (run.id, run.finished, run.settings_hash, run.students) == (second, False, "s2", ("alice",))
    book.end_run(second)
    assert book.latest_run().finished


def test_a_newer_gradebook_is_refused_with_the_fix(tmp_path):
    path = str(tmp_path / "new.sqlite")
    Gradebook(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value='9' WHERE key='schema_version'")
    db.commit()
    db.close()
    with pytest.raises(RuntimeError, match=f"schema version 9, this grader writes {SCHEMA_VERSION}; use a new --out "
                                           "folder"):
        Gradebook(path)


def test_regrading_resets_the_penalty_until_it_is_assessed_again(tmp_path):
    from grader.deadlines.policy import Lateness, LateStatus

    book = Gradebook(str(tmp_path / "g.sqlite"))
    run = book.begin_run("s1", [], 1, "test")
    book.record(run, "alice", "p", "h1", "s1", "graded", result(points=2.0, status=Status.PASSED))
    book.set_lateness("alice", Lateness(LateStatus.PAST_CUTOFF, 2.0, 2.0, 0.0, 100.0, "late", "csv"))
    assert next(book.rows()).final == 0.0
    book.record(run, "alice", "p", "h2", "s1", "graded", result(points=1.0))
    (row,) = book.rows()
    assert (row.score, row.penalty, row.final, row.late) == (1.0, 0.0, 1.0, None)


def test_a_workers_result_is_stored_as_it_was_sent(tmp_path, sandbox, config):
    """A worker sends its result's JSON with the keys sorted, and the gradebook stores that text
    instead of encoding the parsed result again: byte for byte what it would have written, for a
    result with mismatches, heatmaps, an infinite error and NaN outputs in it."""
    from fixtures.batch.build import make_class
    from grader.catalog import select
    from grader.frontends.batch.executors import Task, grade_one, parse
    from grader.results import to_dict

    changes = {"causal_mask": "inverted",
               "scaled_dot_product_attention": "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
                                               "    return torch.full_like(V, float('-inf'))\n",
               "positional_encoding": "def positional_encoding(T, d_model):\n"
                                      "    return torch.full((T, d_model), float('nan'))\n"}
    subs = make_class(tmp_path / "subs", {"c": changes})
    names = [s.id for s in select(["attention"])]
    done = grade_one(Task("c", str(subs / "c")), names, config, sandbox)
    result = parse(done)
    assert done.result_json == json.dumps(to_dict(result), sort_keys=True)
    book = Gradebook(str(tmp_path / "g.sqlite"))
    book.record(book.begin_run("s", names, 1, "t"), "c", "p", "h", "s", "graded", result, encoded=done.result_json)
    (row,) = book.rows()
    assert row.result == result
    stored = sqlite3.connect(str(tmp_path / "g.sqlite")).execute("SELECT result FROM submissions").fetchone()[0]
    assert stored == done.result_json
    cases = [c for e in json.loads(stored)["exercises"] for c in e["cases"]]
    assert any(c["heatmaps"] for c in cases) and any(m["mismatches"] for c in cases for m in c["comparisons"])
    assert '"max_abs_error": Infinity' in stored and '"actual": null' in stored    # inf kept, NaN as null
