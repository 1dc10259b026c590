"""Late penalties through `grader batch`: nbgrader's submitted/<student>/<assignment>/timestamp.txt,
an extension, a backdated submission, a missing timestamp; raw, penalty and final score in the
gradebook, grades.csv, the feedback and the class report; a new extension settles without regrading."""
import csv
import json
import os
import sqlite3
from datetime import datetime

import pytest

from fixtures.batch.build import attention_source, run_batch

EXERCISE = "attention.causal_mask"
CONFIG = """[deadline]
due = 2026-03-02T12:00:00+01:00
timezone = "Europe/Berlin"
grace_minutes = 10
penalty_per = "hour"
penalty_percent = 10
max_penalty_percent = 50
cutoff_hours = 48
source = "nbgrader"
extensions_csv = "extensions.csv"
"""
STAMPS = {   # nbgrader's default format, UTC
    "ontime": "2026-03-02 10:59:00.000000 UTC",
    "grace": "2026-03-02 11:05:00.000000 UTC",      # 5 min after 12:00 +01:00
    "late": "2026-03-02 13:05:00.000000 UTC",       # 2 h 5 min late: 3 started hours, -30 %
    "backdated": "2026-03-04 12:00:01.000000 UTC",  # past the 48 h cut-off, whatever its files say
    "extended": "2026-03-03 11:00:00.000000 UTC",   # 24 h late, but has 30 h more
    "nostamp": None,
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    for student, stamp in STAMPS.items():
        folder = root / "submitted" / student / "ps1"
        folder.mkdir(parents=True)
        (folder / "attention.py").write_text(attention_source("correct"))
        if stamp:
            (folder / "timestamp.txt").write_text(stamp)
    early = datetime(2026, 3, 1).timestamp()
    for path in (root / "submitted" / "backdated" / "ps1").iterdir():
        os.utime(path, (early, early))
    (root / "extensions.csv").write_text("student,hours\nextended,30\n")
    (root / "autograde.toml").write_text(CONFIG)
    env = {k: v for k, v in os.environ.items() if k != "GRADER_SECRET_SEED"}
    out = root / "out"
    args = ("--config", str(root / "autograde.toml"), "--assignment", "ps1")
    first = run_batch(root, out, EXERCISE, extra=args, env=env)
    return root, out, first, args, env


def table(out):
    db = sqlite3.connect(f"file:{out}/gradebook.sqlite?mode=ro", uri=True)
    try:
        return {s: (raw, pen, fin) for s, raw, pen, fin in
                db.execute("SELECT student, score, penalty, final_score FROM submissions")}
    finally:
        db.close()


def grades(out):
    with open(out / "grades.csv", newline="") as f:
        return {r["student_id"]: r for r in csv.DictReader(f)}


@pytest.mark.slow
def test_each_student_gets_the_penalty_their_recorded_time_earns(graded):
    _, out, first, _, _ = graded
    assert first.returncode == 0, first.stderr[-3000:]
    got = table(out)
    full = got["ontime"][0]
    assert full > 0 and all(raw == full for raw, _, _ in got.values())          # every submission is correct
    assert {s: fin for s, (_, _, fin) in got.items()} == {
        "ontime": full, "grace": full, "late": round(full * 0.7, 4), "backdated": 0.0, "extended": full,
        "nostamp": full}
    rows = grades(out)
    assert rows["late"]["raw_score"] == rows["ontime"]["score"] and rows["late"]["lateness"] == "late"
    assert float(rows["late"]["late_submission_penalty"]) == pytest.approx(full * 0.3)
    assert rows["backdated"]["lateness"] == "past the cut-off" and rows["nostamp"]["lateness"] == "no submission time"
    assert rows["late"]["submitted_at"] == "2026-03-02T13:05:00+00:00"


@pytest.mark.slow
def test_feedback_and_class_report_show_the_time_its_source_and_all_three_scores(graded):
    _, out, first, _, _ = graded
    md = (out / "students" / "late" / "feedback.md").read_text()      # plain text: no '&#58;' in the times
    assert ("submitted 2026-03-02 14:05 +01:00 (from nbgrader timestamp.txt), 2 h 5 min late "
            "(due 2026-03-02 12:00 +01:00): −30 %") in md
    assert md.count("2 h 5 min late") == 1 and (out / "students" / "late" / "feedback.html").read_text().count(
        'id="late"') == 1                                       # said once, in each format
    assert "score 1 − late penalty 0.3 = **0.7** / 1" in md and "within the 10-minute grace period" in (
        out / "students" / "grace" / "feedback.html").read_text()
    assert "with your extension" in (out / "students" / "extended" / "feedback.md").read_text()
    report = (out / "class_report.html").read_text()
    assert 'data-student="late" data-late="late"' in report and 'data-late="past the cut-off"' in report
    assert 'data-student="nostamp" data-late="no submission time"' in report
    assert 'data-student="ontime"' not in report.split('id="late"')[1].split("</table>")[0]
    assert "no submission time recorded for 1 student (nostamp)" in first.stderr
    # the summary judges by the final score, as the class report does (before: raw, so neither was listed)
    assert "  2 without full marks: backdated, late\n" in first.stderr


@pytest.mark.slow
def test_results_json_and_the_mark_follow_the_final_score(graded):
    """Before: backdated's results.json said 1.0 and its feedback.md "### ✅ 0 / 1"."""
    _, out, first, _, _ = graded
    finals = {s: json.loads((out / "students" / s / "results.json").read_text())["score"] for s in STAMPS}
    assert finals == {s: fin for s, (_, _, fin) in table(out).items()}
    cut = json.loads((out / "students" / "backdated" / "results.json").read_text())
    assert (cut["extra_data"]["raw_score"], cut["extra_data"]["late_penalty"]) == (1.0, 1.0)
    assert "past the cut-off" in cut["output"] and "score 1 − late penalty 1 = 0 / 1" in cut["output"]
    assert (out / "students" / "backdated" / "feedback.md").read_text().startswith("### ❌ 0 / 1 points")
    assert (out / "students" / "ontime" / "feedback.md").read_text().startswith("### ✅ 1 / 1 points")


@pytest.mark.slow
def test_a_new_extension_changes_the_penalty_without_regrading(graded):
    root, out, _, args, env = graded
    (root / "extensions.csv").write_text("student,hours\nextended,30\nlate,3\n")
    again = run_batch(root, out, EXERCISE, extra=args, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 graded now, 6 unchanged and skipped" in again.stderr
    raw, penalty, final = table(out)["late"]
    assert (penalty, final) == (0.0, raw)
    assert "with your extension" in (out / "students" / "late" / "feedback.md").read_text()
    (root / "extensions.csv").write_text("student,hours\nextended,30\nextended,2\n")
    bad = run_batch(root, out, EXERCISE, extra=args, env=env)
    assert bad.returncode == 2 and "line 3: extended is listed twice" in bad.stderr
