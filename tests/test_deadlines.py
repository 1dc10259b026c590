"""Late penalties (grader.deadlines): the verdict for each kind of lateness, each platform's record
of the submission time, and the instructor's CSVs. File modification times are never a source."""
import json
import os
import subprocess
from datetime import datetime, timedelta, timezone

import pytest

from grader.deadlines import parse_section
from grader.deadlines import tables, times
from grader.deadlines.policy import LateStatus, assess
from grader.deadlines.times import Recorded
from grader.errors import ConfigError

DUE = datetime(2026, 3, 2, 12, 0, tzinfo=timezone(timedelta(hours=1)))


def policy(**keys):
    body = {"due": DUE, "source": "nbgrader", **keys}
    return parse_section(body, "autograde.toml")


def at(**delta) -> Recorded:
    return Recorded(DUE + timedelta(**delta), "nbgrader timestamp.txt")


HOURLY = dict(penalty_per="hour", penalty_percent=5, grace_minutes=15)
DAILY = dict(penalty_per="day", penalty_percent=10, max_penalty_percent=50, cutoff_hours=96)


@pytest.mark.parametrize("keys,late,status,percent", [
    (HOURLY, dict(minutes=-1), LateStatus.ON_TIME, 0),
    (HOURLY, dict(), LateStatus.ON_TIME, 0),                        # at the due date exactly
    (HOURLY, dict(minutes=15), LateStatus.GRACE, 0),                # the grace period's last second
    (HOURLY, dict(minutes=15, seconds=1), LateStatus.LATE, 5),      # counted from the due date: 1 started hour
    (HOURLY, dict(hours=1), LateStatus.LATE, 5),                    # late by an hour
    (HOURLY, dict(hours=1, seconds=1), LateStatus.LATE, 10),        # a second more starts the second hour
    (DAILY, dict(days=1), LateStatus.LATE, 10),                     # late by a day
    (DAILY, dict(days=1, minutes=1), LateStatus.LATE, 20),
    (DAILY, dict(days=3, hours=23), LateStatus.LATE, 40),
    (DAILY, dict(days=4), LateStatus.LATE, 40),                     # at the cut-off: still only late
    (DAILY, dict(days=4, seconds=1), LateStatus.PAST_CUTOFF, 100),  # past it: score 0
    (dict(penalty_per="day", penalty_percent=30, max_penalty_percent=50), dict(days=9), LateStatus.LATE, 50),  # cap
])
def test_each_kind_of_lateness(keys, late, status, percent):
    v = assess(policy(**keys), 8.0, 10.0, at(**late))
    assert (v.status, v.percent) == (status, percent)
    expected_penalty = 8.0 if status is LateStatus.PAST_CUTOFF else round(8.0 * percent / 100, 4)
    assert (v.raw_score, v.penalty, v.final_score) == (8.0, expected_penalty, round(8.0 - expected_penalty, 4))


def test_the_feedback_line_names_the_time_its_source_and_the_penalty():
    v = assess(policy(penalty_per="day", penalty_percent=10), 6.0, 10.0, at(hours=2, minutes=5))
    assert v.note == ("submitted 2026-03-02 14:05 +01:00 (from nbgrader timestamp.txt), 2 h 5 min late "
                      "(due 2026-03-02 12:00 +01:00): −10 %")
    assert v.submitted_at == "2026-03-02T14:05:00+01:00" and v.late_seconds == 7500
    shown_in_zone = assess(policy(timezone="America/New_York"), 6.0, 10.0, at(minutes=-30))
    assert shown_in_zone.note.startswith("submitted 2026-03-02 05:30 -05:00") and "on time" in shown_in_zone.note


def test_an_extension_moves_the_due_date_for_that_student_only():
    p = policy(penalty_per="hour", penalty_percent=10)
    extended = DUE + timedelta(hours=48)
    v = assess(p, 5.0, 5.0, at(hours=47), due=extended)
    assert v.status is LateStatus.ON_TIME and v.extended and "with your extension" in v.note
    v = assess(p, 5.0, 5.0, at(hours=49), due=extended)
    assert (v.status, v.percent, v.final_score) == (LateStatus.LATE, 10, 4.5)
    assert assess(p, 5.0, 5.0, at(hours=47)).percent == 100      # without it: 47 started hours, capped


def test_a_penalty_of_the_points_possible_never_goes_below_zero():
    p = policy(penalty_per="day", penalty_percent=20, penalty_of="max_score")
    assert assess(p, 6.0, 10.0, at(days=1)).penalty == 2.0          # 20 % of 10 points possible
    assert assess(p, 1.5, 10.0, at(days=1)).final_score == 0.0      # not -0.5


@pytest.mark.parametrize("choice,penalty", [("no_penalty", 0.0), ("max_penalty", 4.0), ("zero", 8.0)])
def test_a_missing_time_follows_the_instructors_choice_and_is_flagged(choice, penalty):
    p = policy(penalty_percent=10, max_penalty_percent=50, missing_time=choice)
    v = assess(p, 8.0, 10.0, Recorded(None, "nbgrader timestamp.txt", "no timestamp.txt in the submission folder"))
    assert v.status is LateStatus.NO_TIME and v.flagged and v.penalty == penalty
    assert v.note.startswith("no submission time was recorded (nbgrader timestamp.txt: no timestamp.txt")


# ------------------------------------------------------------ what the student's files show
def _all_passed(points: float = 2.0):
    from grader.results import CaseResult, ExerciseResult, Status, SubmissionResult
    case = CaseResult(name="T=1", status=Status.PASSED)
    return SubmissionResult(submission="alice", exercises=(ExerciseResult(
        id="neurons.sign", status=Status.PASSED, points=points, max_points=points, cases=(case,)),),
        settings={}, seconds=0.1, grader_version="0.1")


@pytest.mark.parametrize("late,final,mark", [(dict(days=5), 0.0, "❌"), (dict(hours=1), 1.8, "❌"),
                                             (dict(hours=-1), 2.0, "✅")])
def test_every_student_file_carries_the_final_score(late, final, mark):
    """results.json's score is the final one (Gradescope takes a top-level score over the tests'
    total), with the raw score and the penalty beside it; the feedback's ✅ is full marks, not
    "every case passed" (before: 7.0 in results.json and ✅ 0 / 7 past the cut-off)."""
    from grader.deadlines.view import penalised
    from grader.reports import render
    p = policy(penalty_per="hour", penalty_percent=10, cutoff_hours=96)
    view = penalised(_all_passed(), assess(p, 2.0, 2.0, at(**late)))
    data = json.loads(render(view, "json"))
    assert data["score"] == final and data["max_score"] == 2.0
    assert (data["extra_data"]["raw_score"], data["extra_data"]["late_penalty"]) == (2.0, round(2.0 - final, 4))
    assert f"score 2 − late penalty {2.0 - final:g} = {final:g} / 2" in data["output"]
    assert render(view, "md").startswith(f"### {mark} {final:g} / 2 points")
    verdict = render(view, "html").split('id="verdict">')[1].split("</p>")[0]
    assert verdict == ("Everything passed. Well done!" if final == 2.0 else
                       f"Everything passed, but the late penalty took {2.0 - final:g} of your 2 points.")


# ---------------------------------------------------------------- where the time comes from
@pytest.mark.parametrize("text,iso", [
    ("2026-03-02 13:05:00.123456 UTC", "2026-03-02T13:05:00.123456+00:00"),   # nbgrader's default format
    ("2026-03-02 14:05:00.000001 Europe/Berlin", "2026-03-02T14:05:00.000001+01:00"),
    ("2026-03-02 14:05:00 +0100", "2026-03-02T14:05:00+01:00"),
    ("2026-03-02 13:05:00", "2026-03-02T13:05:00+00:00"),                     # no zone: UTC, as nbgrader reads it
    ("2026-03-02T14:05:00+01:00\n", "2026-03-02T14:05:00+01:00"),
])
def test_nbgrader_timestamps(tmp_path, text, iso):
    (tmp_path / "timestamp.txt").write_text(text)
    assert times.from_nbgrader(str(tmp_path)).at.isoformat() == iso


def test_an_nbgrader_zone_abbreviation_without_one_offset_is_no_time(tmp_path):
    (tmp_path / "timestamp.txt").write_text("2026-07-02 14:05:00.000000 CEST")
    r = times.from_nbgrader(str(tmp_path))
    assert r.at is None and "'CEST'" in r.problem and "TransferApp.timezone" in r.problem
    assert times.from_nbgrader(str(tmp_path / "nothing")).problem.startswith("no timestamp.txt")


def test_the_recorded_time_wins_over_file_modification_times(tmp_path):
    """A student backdates every file of a late submission; the record nbgrader wrote decides."""
    (tmp_path / "attention.py").write_text("def causal_mask(T): ...\n")
    (tmp_path / "timestamp.txt").write_text("2026-03-03 11:30:00.000000 UTC")     # 24.5 h late
    early = (DUE - timedelta(days=2)).timestamp()
    for name in ("attention.py", "timestamp.txt", "."):
        os.utime(tmp_path / name, (early, early))
    v = assess(policy(penalty_per="day", penalty_percent=10), 10.0, 10.0, times.from_nbgrader(str(tmp_path)))
    assert (v.status, v.percent, v.final_score) == (LateStatus.LATE, 20, 8.0)


def test_gradescope_metadata_in_or_beside_the_submission(tmp_path):
    meta = {"id": 1, "created_at": "2026-03-02T05:22:32.365935-08:00", "assignment": {"title": "PS1"}}
    sub = tmp_path / "autograder" / "submission"
    sub.mkdir(parents=True)
    (tmp_path / "autograder" / "submission_metadata.json").write_text(json.dumps(meta))     # Gradescope's layout
    r = times.from_gradescope(str(sub))
    assert r.at == datetime(2026, 3, 2, 13, 22, 32, 365935, tzinfo=timezone.utc) and "Gradescope" in r.source
    (sub / "submission_metadata.json").write_text(json.dumps({**meta, "created_at": "2026-01-01T00:00:00+00:00"}))
    assert times.from_gradescope(str(sub)).at == r.at            # the student's own copy inside: never read
    (tmp_path / "autograder" / "submission_metadata.json").write_text(json.dumps({"id": 2}))
    assert times.from_gradescope(str(sub)).problem == "submission_metadata.json has no created_at"


def test_a_metadata_file_the_student_uploaded_is_never_the_submission_time(tmp_path):
    """In a class folder, <student>/submission/ with the platform's record beside it is read; a
    submission_metadata.json inside what the student handed in is theirs (the red team dated theirs
    before the deadline), said and never read."""
    forged = {"id": 3, "created_at": "2026-01-01T00:00:00+00:00"}
    bob = tmp_path / "bob"
    bob.mkdir()
    (bob / "submission_metadata.json").write_text(json.dumps(forged))
    r = times.from_gradescope(str(bob))
    assert r.at is None and "the one inside the submission folder is the student's upload, never read" in r.problem
    carol = tmp_path / "carol" / "submission"
    carol.mkdir(parents=True)
    (carol / "submission_metadata.json").write_text(json.dumps(forged))
    (carol.parent / "submission_metadata.json").write_text(json.dumps({"created_at": "2026-03-05T10:00:00-08:00"}))
    assert times.from_gradescope(str(carol)).at == datetime(2026, 3, 5, 18, 0, tzinfo=timezone.utc)


def git(repo, *args, **env):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "s", "GIT_AUTHOR_EMAIL": "s@x", "GIT_COMMITTER_NAME": "s",
                        "GIT_COMMITTER_EMAIL": "s@x", **env})


def test_a_time_at_the_edge_of_the_calendar_is_no_time_not_a_crash(tmp_path):
    """A student writes the time of a git commit or of a timestamp.txt they assemble: a red team's
    9999-12-31T23:59:59-05:00 (and 0001-01-01 +05:00) parsed, then overflowed when shown in the
    course's zone, an OverflowError that stopped the whole batch and the nbgrader hand-over."""
    for text in ("9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00"):
        with pytest.raises(ValueError, match="out of range for a submission time"):
            times.parse_time(text, None)
    with pytest.raises(ValueError, match="out of range"):
        times.parse_nbgrader("0001-01-01 00:00:00.000000 +05:00")
    git(tmp_path, "init", "-q")
    (tmp_path / "attention.py").write_text("x = 1\n")
    git(tmp_path, "add", "attention.py")
    git(tmp_path, "commit", "-q", "-m", "work", GIT_COMMITTER_DATE="@253402318799 -0500")
    r = times.from_git(str(tmp_path))
    assert r.at is None and "out of range for a submission time" in r.problem


def test_git_uses_the_committer_time_of_head(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "attention.py").write_text("x = 1\n")
    git(tmp_path, "add", "attention.py")
    git(tmp_path, "commit", "-q", "-m", "work", GIT_AUTHOR_DATE="2026-03-01T10:00:00+01:00",
        GIT_COMMITTER_DATE="2026-03-02T13:30:00+01:00")
    early = (DUE - timedelta(days=3)).timestamp()
    os.utime(tmp_path / "attention.py", (early, early))
    r = times.from_git(str(tmp_path))
    assert r.at.isoformat() == "2026-03-02T13:30:00+01:00" and r.source == "git commit time of HEAD"
    assert times.from_git(str(tmp_path / "attention.py")).problem.startswith("the submission is not a git repository")
    empty = tmp_path / "empty"
    git(tmp_path, "init", "-q", str(empty))
    assert times.from_git(str(empty)).problem.startswith("git log failed")


# ---------------------------------------------------------------- the instructor's CSVs
def test_extensions_by_due_date_hours_or_days(tmp_path):
    p = parse_section({"due": DUE, "source": "nbgrader", "timezone": "Europe/Berlin", "extensions_csv": "ext.csv"},
                      "autograde.toml")
    for text, expected in [("student,hours\nalice,48\n", DUE + timedelta(hours=48)),
                           ("student,days\nalice,1.5\n", DUE + timedelta(hours=36)),
                           ("Student,Due\nalice,2026-03-04T09:00\n", datetime(2026, 3, 4, 8, 0, tzinfo=timezone.utc))]:
        (tmp_path / "ext.csv").write_text(text)
        assert tables.extensions(p, str(tmp_path)) == {"alice": expected}


@pytest.mark.parametrize("text,fragment", [
    ("name,hours\nalice,3\n", "must be a header with a 'student' column"),
    ("student,hours,days\nalice,3,1\n", "needs exactly one of the columns due, hours, days"),
    ("student,hours\nalice,three\n", "line 2: hours 'three': not a number"),
    ("student,hours\nalice,-2\n", "must be a finite number, 0 or more"),
    ("student,hours\nalice,2\nalice,3\n", "line 3: alice is listed twice"),
    ("student,due\nalice,2026-03-04T09:00\n", "has no UTC offset"),
    ("student,hours\nalice,48,\n", "line 2: 3 fields but the header has 2; put a value that holds a comma in"),
    ("student;hours\nalice;48\n", "separated by semicolons .* save it with commas"),
    ("student,hours\nAndr\xe9,48\n".encode("latin-1"), "not UTF-8 text .*save it as UTF-8"),
    ("student,hours\nalice,48\n".encode("utf-16"), "not UTF-8 text \\(it is UTF-16\\); save it as UTF-8"),
])
def test_bad_extension_files_say_the_line_and_the_fix(tmp_path, text, fragment):
    (tmp_path / "ext.csv").write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ConfigError, match=fragment):
        tables.extensions(policy(extensions_csv="ext.csv"), str(tmp_path))
    with pytest.raises(ConfigError, match="no such file"):
        tables.extensions(policy(extensions_csv="missing.csv"), str(tmp_path))


def test_a_times_csv_that_is_a_folder_or_has_an_extra_field_says_so(tmp_path):
    (tmp_path / "times").mkdir()
    with pytest.raises(ConfigError, match="times_csv = .*: is a folder; name the CSV file in it"):
        tables.submission_times(policy(source="csv", times_csv="times"), str(tmp_path))
    (tmp_path / "times.csv").write_text("student,submitted_at\nalice,2026-03-02T11:00:00Z,\n")
    with pytest.raises(ConfigError, match="line 2: 3 fields but the header has 2"):
        tables.submission_times(policy(source="csv", times_csv="times.csv"), str(tmp_path))


def test_the_instructors_submission_times(tmp_path):
    (tmp_path / "times.csv").write_text("student,submitted_at\nalice,2026-03-02T11:00:00Z\nbob,2026-03-02T15:00Z\n")
    p = parse_section({"due": DUE, "source": "csv", "times_csv": "times.csv"}, "autograde.toml")
    got = tables.submission_times(p, str(tmp_path))
    assert got["bob"] == datetime(2026, 3, 2, 15, tzinfo=timezone.utc)
    r = times.from_table(got, "carol", "times.csv")
    assert r.at is None and r.problem == "carol is not listed in times.csv"
    assert assess(p, 1.0, 1.0, times.from_table(got, "bob", "times.csv")).note.startswith(
        "submitted 2026-03-02 16:00 +01:00 (from times.csv), 4 h late (due 2026-03-02 12:00 +01:00): no penalty")
