"""`grader batch` end to end, through the real command in a subprocess: a row for every student,
resumable after kill -9, re-runs that skip what is unchanged, deterministic feedback."""
import csv
import json
import os
import re
import signal
import sqlite3
import subprocess
import time

import pytest

import scenarios
from conftest import ROOT
from fixtures.batch.build import batch_command, make_class, run_batch

FAST = ("attention.causal_mask", "attention.positional_encoding")   # no run-time API watch: quick children
HOSTILE = [name for name in scenarios.names() if name.startswith(("hostile_", "forbidden_"))]


@pytest.fixture
def env():
    e = dict(os.environ)
    e.pop("GRADER_SECRET_SEED", None)
    return e


def rows(out):
    db = sqlite3.connect(f"file:{out}/gradebook.sqlite?mode=ro", uri=True)
    try:
        return {s: (state, score, json.loads(r)) for s, state, score, r in
                db.execute("SELECT student, state, score, result FROM submissions")}
    finally:
        db.close()


def query(out, sql, *params):
    db = sqlite3.connect(f"file:{out}/gradebook.sqlite?mode=ro", uri=True)
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()


def recorded(out) -> int:
    try:
        return query(out, "SELECT COUNT(*) FROM submissions")[0][0]
    except sqlite3.OperationalError:      # not created yet
        return 0


def csv_rows(out):
    with open(out / "grades.csv", newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_mixed_class_with_hostile_submissions_gets_a_row_per_student(tmp_path, env):
    students = {f"ok{i}": "correct" for i in range(8)}
    students.update({"bug_mask": {"causal_mask": "inverted"}, "bug_scale": {"scaled_dot_product_attention": "no_scale"},
                     "bug_heads": {"multi_head_attention": "no_transpose"},
                     "bug_pe": {"positional_encoding": "swapped"},
                     "bug_two": {"causal_mask": "transposed", "positional_encoding": "start_at_one"},
                     "zipped": "zip:correct", "empty": "empty", "broken_zip": "corrupt.zip",
                     "syntax": "syntax_error", "reader": "reads_solutions", "writer": "writes_outside"})
    students.update({name: name for name in HOSTILE})
    subs = make_class(tmp_path / "subs", students)
    out = tmp_path / "out"
    proc = run_batch(subs, out, "attention", extra=("--timeout", "3"), env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = rows(out)
    assert set(got) == set(students)
    assert {r["student_id"] for r in csv_rows(out)} == set(students)
    for student in students:
        folder = out / "students" / student
        assert all((folder / f).is_file() for f in ("results.json", "feedback.html", "feedback.md")), student
    assert all(got[f"ok{i}"][1] == 9 for i in range(8)) and got["zipped"][1] == 9
    assert got["empty"][0] == got["broken_zip"][0] == "unreadable"
    assert "no .py modules found" in got["empty"][2]["errors"][0]
    assert "not a readable zip archive" in got["broken_zip"][2]["errors"][0]
    status = {s: {e["id"].split(".")[1]: e["status"] for e in r[2]["exercises"]} for s, r in got.items()}
    assert status["hostile_infinite_loop"]["causal_mask"] == "timeout"
    assert status["forbidden_direct"]["scaled_dot_product_attention"] == "forbidden"
    assert status["hostile_patches_allclose"]["scaled_dot_product_attention"] != "passed"
    assert status["bug_mask"]["causal_mask"] == "failed" and status["bug_mask"]["positional_encoding"] == "passed"
    lines = proc.stderr.splitlines()
    assert sum(1 for line in lines if re.match(r"\[\d+/\d+\] \S+: ", line)) == len(students)
    assert any(re.match(rf"{len(students)} students: {len(students)} graded now, 0 unchanged", line) for line in lines)
    assert any("crashed or timed out:" in line and "hostile_infinite_loop" in line for line in lines)
    assert any("unreadable: " in line and "broken_zip" in line and "empty" in line for line in lines)


def test_unreadable_submissions_are_graded_as_such(tmp_path, env):
    subs = make_class(tmp_path / "subs", {"empty": "empty", "broken": "corrupt.zip", "ok": "correct"})
    (subs / "other").mkdir()
    (subs / "other" / "notes.py").write_text("print('hello')\n")
    proc = run_batch(subs, tmp_path / "out", "attention.causal_mask", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = rows(tmp_path / "out")
    assert {s: r[0] for s, r in got.items()} == {"empty": "unreadable", "broken": "unreadable", "ok": "graded",
                                                 "other": "graded"}
    (other,) = got["other"][2]["exercises"]
    assert other["status"] == "error" and "your submission has no attention.py" in other["message"]
    feedback = (tmp_path / "out" / "students" / "broken" / "feedback.md").read_text()
    assert "not a readable zip archive" in feedback


def test_kill_9_mid_batch_then_resume_grades_everyone_exactly_once(tmp_path, env, short_tmp):
    students = {f"s{i:02d}": ("correct" if i % 3 else {"causal_mask": "inverted"}) for i in range(14)}
    subs = make_class(tmp_path / "subs", students)
    out = tmp_path / "out"
    env = {**env, "TMPDIR": short_tmp}
    cmd = batch_command(subs, out, *FAST, jobs=2)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if recorded(out) >= 3:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the batch ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)       # workers left behind by the kill, like a real kill -9
        except ProcessLookupError:
            pass
    first = query(out, "SELECT student FROM submissions")
    assert 3 <= len(first) < len(students)
    for student, n, in query(out, "SELECT s.student, COUNT(e.exercise) FROM submissions s "
                                  "LEFT JOIN exercises e USING (student) GROUP BY s.student"):
        assert n == len(FAST), f"{student}: a partial row ({n} exercise rows)"
    again = run_batch(subs, out, *FAST, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"{len(students) - len(first)} graded now, {len(first)} unchanged" in again.stderr
    assert sorted(rows(out)) == sorted(students)
    events = dict(query(out, "SELECT student, COUNT(*) FROM events GROUP BY student"))
    assert events == {s: 1 for s in students}, "a student was graded (recorded) twice"
    assert [r for r in query(out, "SELECT COUNT(*) FROM runs")][0][0] == 2
    assert len(csv_rows(out)) == len(students)
    assert all((out / "students" / s / "feedback.html").is_file() for s in students)
    assert not list(out.rglob(".tmp-*"))
    # The killed batch's folders (its workers' copies of the students' code, its forkserver's socket
    # folder, kept inside its own) were swept by the second run, which removed its own at exit.
    assert sorted(os.listdir(short_tmp)) == [], "the killed or the finished batch left folders behind"


def test_rerun_skips_unchanged_regrades_changed_and_force_regrades_all(tmp_path, env):
    subs = make_class(tmp_path / "subs", {"alice": "correct", "bob": {"causal_mask": "inverted"}, "carol": "correct"})
    out = tmp_path / "out"

    def graded(proc):
        assert proc.returncode == 0, proc.stderr[-3000:]
        return {line.split("]")[1].split(":")[0].strip() for line in proc.stderr.splitlines()
                if re.match(r"\[\d+/\d+\] ", line)}

    assert graded(run_batch(subs, out, "attention.causal_mask", env=env)) == {"alice", "bob", "carol"}
    again = run_batch(subs, out, "attention.causal_mask", env=env)
    assert graded(again) == set() and "0 graded now, 3 unchanged and skipped" in again.stderr
    (subs / "bob" / "attention.py").write_text((subs / "alice" / "attention.py").read_text())
    assert graded(run_batch(subs, out, "attention.causal_mask", env=env)) == {"bob"}
    assert rows(out)["bob"][1] == 1
    assert graded(run_batch(subs, out, "attention.causal_mask", env=env, extra=("--force",))) == \
        {"alice", "bob", "carol"}
    assert graded(run_batch(subs, out, "attention.causal_mask", env=env, extra=("--timeout", "7"))) == {
        "alice", "bob", "carol"}, "other settings must regrade"
    assert dict(query(out, "SELECT student, COUNT(*) FROM events GROUP BY student")) == \
        {"alice": 3, "bob": 4, "carol": 3}


def test_class_report_numbers_match_the_gradebook(tmp_path, env):
    students = {"a1": "correct", "a2": "correct", "a3": "correct",
                "i1": {"causal_mask": "inverted"}, "i2": {"causal_mask": "inverted"},
                "i3": {"causal_mask": "inverted", "positional_encoding": "swapped"},
                "t1": {"causal_mask": "transposed"}, "p1": {"positional_encoding": "swapped"},
                "loop": "hostile_infinite_loop", "empty": "empty"}
    subs = make_class(tmp_path / "subs", students)
    out = tmp_path / "out"
    proc = run_batch(subs, out, *FAST, env=env, extra=("--timeout", "2"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    html = (out / "class_report.html").read_text()

    rate_rows = re.findall(r'data-exercise="([^"]+)" data-passed="(\d+)" data-students="(\d+)" '
                           r'data-pass-rate="([\d.]+)"', html)
    expected = {ex: (passed, total) for ex, passed, total in query(
        out, "SELECT exercise, SUM(status = 'passed'), COUNT(*) FROM exercises GROUP BY exercise")}
    assert {ex: (int(p), int(n)) for ex, p, n, _ in rate_rows} == expected
    assert expected["attention.causal_mask"] == (4, 10)          # a1-a3, p1
    assert all(abs(float(rate) - int(p) / int(n)) < 1e-4 for _, p, n, rate in rate_rows)

    mistakes = {(ex, fp): int(n) for ex, fp, n in re.findall(
        r'<tr data-exercise="([^"]+)" data-fingerprint="([^"]+)" data-students="(\d+)"', html)}
    from_db = {(ex, fp): n for ex, fp, n in query(
        out, "SELECT exercise, fingerprint, COUNT(DISTINCT student) FROM exercises WHERE fingerprint != '' "
             "GROUP BY exercise, fingerprint")}
    assert mistakes == from_db
    assert mistakes[("attention.causal_mask", "mask inverted")] == 3
    assert mistakes[("attention.positional_encoding", "sin and cos swapped")] == 2
    order = [int(n) for n in re.findall(r'data-fingerprint="[^"]+" data-students="(\d+)"', html)]
    assert order == sorted(order, reverse=True)

    troubles = set(re.findall(r'<tr data-student="([^"]+)" data-status="([^"]+)"', html))
    assert ("loop", "timeout") in troubles and ("empty", "unreadable") in troubles
    n_students = re.search(r'data-stat="students"><b>(\d+)</b>', html).group(1)
    assert int(n_students) == query(out, "SELECT COUNT(*) FROM submissions")[0][0] == len(students)
    mean = re.search(r'data-stat="mean"><b>([\d.]+)</b>', html).group(1)
    assert abs(float(mean) - query(out, "SELECT AVG(score) FROM submissions")[0][0]) < 0.005


def _normalised(text: str) -> str:
    text = re.sub(r'"seconds": [0-9.e-]+', '"seconds": 0', text)
    return re.sub(r"\d+\.\d+ s\b", "N s", text)


def test_grading_the_same_submissions_twice_gives_identical_feedback(tmp_path, env):
    subs = make_class(tmp_path / "subs", {"bug": {"causal_mask": "transposed", "positional_encoding": "exponent_i"},
                                          "prints": "hostile_prints", "ok": "correct"})
    out = tmp_path / "out"
    snapshots = []
    for extra in ((), ("--force",)):
        proc = run_batch(subs, out, *FAST, env=env, extra=extra)
        assert proc.returncode == 0, proc.stderr[-3000:]
        snapshots.append({f"{s}/{f}": _normalised((out / "students" / s / f).read_text())
                          for s in ("bug", "prints", "ok") for f in ("results.json", "feedback.md", "feedback.html")})
        snapshots[-1]["gradebook"] = _normalised(json.dumps({s: r for s, r in rows(out).items()}, sort_keys=True))
    assert snapshots[0] == snapshots[1]
    assert "mask transposed" in snapshots[0]["bug/feedback.md"]      # the comparison is over real feedback


def test_nbgrader_db_needs_an_assignment(tmp_path, env):
    subs = make_class(tmp_path / "subs", {"alice": "correct"})
    proc = run_batch(subs, tmp_path / "out", "attention.causal_mask", env=env, extra=("--nbgrader-db", "gb.db"))
    assert proc.returncode == 2 and "--nbgrader-db needs --assignment" in proc.stderr


@pytest.mark.parametrize("assignment,message", [
    ("ps01", "--assignment ps01: no student has a folder of that name"),
    ("../bob/ps1", "'../bob/ps1' cannot be an nbgrader assignment name ('/')"),
])
def test_an_empty_class_or_an_assignment_no_student_has_is_a_usage_error(tmp_path, env, assignment, message):
    """Both graded nobody: 'grading 0 submissions', exit 0, or the whole class 'unreadable' with 0 points."""
    (tmp_path / "empty").mkdir()
    proc = run_batch(tmp_path / "empty", tmp_path / "out", "attention.causal_mask", env=env)
    assert proc.returncode == 2 and "no submissions in" in proc.stderr, proc.stderr
    for student in ("alice", "bob"):
        (tmp_path / "course" / "submitted" / student / "ps1").mkdir(parents=True)
        (tmp_path / "course" / "submitted" / student / "ps1" / "attention.py").write_text("x = 1\n")
    proc = run_batch(tmp_path / "course", tmp_path / "out", "attention.causal_mask", env=env,
                     extra=("--assignment", assignment))
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_two_batches_cannot_write_one_folder(tmp_path):
    from grader.frontends.batch.run import _lock
    from grader.frontends.batch.workers import BatchError

    held = _lock(str(tmp_path))
    try:
        with pytest.raises(BatchError, match="another `grader batch` is writing"):
            _lock(str(tmp_path))
    finally:
        held.close()
    _lock(str(tmp_path)).close()


def test_nbgrader_layout_with_notebooks(tmp_path, env):
    source = (ROOT / "solutions" / "attention.py").read_text()
    notebook = {"cells": [{"cell_type": "code", "execution_count": None, "id": "answer", "metadata": {}, "outputs": [],
                           "source": source}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    course = tmp_path / "course"
    for student, text in (("alice", json.dumps(notebook)), ("bob", '{"cells": [ this is not json')):
        folder = course / "submitted" / student / "ps1"
        folder.mkdir(parents=True)
        (folder / "attention.ipynb").write_text(text)
        (folder / "timestamp.txt").write_text("2024-05-01 12:00:00")
    (course / "nbgrader_config.py").write_text("c = get_config()\n")
    proc = run_batch(course, tmp_path / "out", "attention.causal_mask", env=env, extra=("--assignment", "ps1"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = rows(tmp_path / "out")
    assert sorted(got) == ["alice", "bob"]
    assert got["alice"][1] == 1.0
    assert got["bob"][1] == 0.0
    bob = (tmp_path / "out" / "students" / "bob" / "feedback.md").read_text()
    assert "attention.ipynb" in bob and "Traceback" not in bob


def test_the_summary_shows_student_ids_as_text_on_one_line_each():
    """A student's id is a folder's (or a zip's) name, which the student may choose: in the summary
    its control characters are shown, never sent to the terminal (as in the progress line)."""
    from types import SimpleNamespace

    from grader.frontends.commands.batch import _summary
    odd = 's1<img src=x>|=HYPERLINK("x")\x1b[31m\nline2'
    summary = SimpleNamespace(students=2, graded=[odd, "bob"], skipped=[], seconds=1.0, not_full_marks=[odd],
                              crashed=[odd], unreadable=[], grader_errors=[odd], notes=[f"{odd}: a note"], out="out")
    text = _summary(summary)
    assert "\x1b" not in text and "\\x1b[31m\\nline2" in text
    assert len(text.splitlines()) == 6 and not any(line.startswith("line2") for line in text.splitlines())
