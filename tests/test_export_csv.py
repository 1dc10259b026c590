"""`grader export csv --format canvas|moodle|blackboard`: each LMS's import layout, final scores,
the roster's identifiers, and students without a grade left out; the rows are those of the last
batch run's grades.csv, two students who are one person to the LMS are refused, roster text stays
text in a spreadsheet, and flags that would make a broken file are refused."""
import csv
import io
import sqlite3
import subprocess
import sys

import pytest

from conftest import ROOT
from fixtures.batch.build import make_class, run_batch
from fixtures.lms.graded import add_run, make_graded


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return make_graded(tmp_path_factory.mktemp("lms") / "graded")


def export(graded, *args):
    return subprocess.run([sys.executable, "-m", "grader", "export", "csv", str(graded), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def table(text):
    return list(csv.reader(io.StringIO(text)))


def test_canvas_layout(graded):
    proc = export(graded, "--format", "canvas", "--name", "Problem set 1", "--column-id", "12",
                  "--roster", str(graded.parent / "roster.csv"))
    assert proc.returncode == 1, proc.stderr        # eve has no grade: left out, and said
    assert table(proc.stdout) == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Problem set 1 (12)"],
        ["Lovelace, Ada", "", "S001", "", "Tuesday", "8"],
        ["Bob Babbage", "", "", "bob.b", "Tuesday", "8"],                  # 10 raw, -20 % late
        ["Young, Cy", "", "", "", "Thursday", "5"],
        ["Dee Dee", "104", "", "", "Thursday", "7.5"]]
    assert "left out, the grader failed on them (no grade; run grader batch again): eve" in proc.stderr


def test_moodle_layout_without_a_roster_uses_the_grader_ids(graded):
    proc = export(graded, "--format", "moodle", "--name", "PS1 autograded")
    assert table(proc.stdout) == [
        ["Username", "Email address", "ID number", "First name", "Last name", "PS1 autograded"],
        ["ada", "", "", "", "", "8"], ["bob", "", "", "", "", "8"], ["cy", "", "", "", "", "5"],
        ["dee", "", "", "", "", "7.5"]]
    assert "4 students not in the roster (ada, bob, cy, dee): their grader id is written as the username" in proc.stderr


def test_blackboard_layout_quotes_every_field_and_names_points_and_column(graded, tmp_path):
    out = tmp_path / "bb.csv"
    proc = export(graded, "--format", "blackboard", "--name", "PS1", "--column-id", "_4711_1", "--points", "10",
                  "--roster", str(graded.parent / "roster.csv"), "--output", str(out))
    text = out.read_text()
    assert text.splitlines()[0] == '"Last Name","First Name","Username","PS1 [Total Pts: 10 Score] |_4711_1"'
    assert table(text)[1:] == [["Lovelace", "Ada", "ada", "8"], ["Babbage", "Bob", "bob.b", "8"],
                               ["Young", "Cy", "cy", "5"], ["Dee", "Dee", "dee", "7.5"]]
    assert "blackboard gradebook import file: 4 students in" in proc.stderr


def test_roster_students_without_a_submission_are_named(graded, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text((graded.parent / "roster.csv").read_text() + "fay,Fay Fermat,,,,,,,\ngus,,,,,gus.g,,,\n")
    proc = export(graded, "--format", "moodle", "--name", "PS1", "--roster", str(roster))
    assert "2 students of the roster not in this batch (no submission found), so no grade for them: fay, gus" \
        in proc.stderr, proc.stderr
    assert [row[0] for row in table(proc.stdout)[1:]] == ["ada", "bob.b", "cy", "dee"]
    assert "not in this batch" not in export(graded, "--format", "moodle", "--name", "PS1",
                                             "--roster", str(graded.parent / "roster.csv")).stderr


def test_a_column_id_for_moodle_is_refused(graded, tmp_path):
    proc = export(graded, "--format", "moodle", "--name", "PS1", "--column-id", "12",
                  "--output", str(tmp_path / "m.csv"))
    assert proc.returncode == 2 and "--column-id has no place in Moodle's file" in proc.stderr, proc.stderr
    assert not (tmp_path / "m.csv").exists()


def test_a_bad_roster_and_a_folder_without_a_gradebook_are_usage_errors(graded, tmp_path):
    bad = tmp_path / "roster.csv"
    bad.write_text("name,email\nAda,a@x\n")
    proc = export(graded, "--format", "canvas", "--name", "x", "--roster", str(bad))
    assert proc.returncode == 2 and "the header needs a 'student' column" in proc.stderr
    proc = export(tmp_path, "--format", "canvas", "--name", "x")
    assert proc.returncode == 2 and "no gradebook.sqlite here; pass the --out folder of `grader batch`" in proc.stderr


def test_an_empty_gradebook_is_refused_not_exported_as_a_header(tmp_path):
    empty = add_run(tmp_path / "graded", {})
    proc = export(empty, "--format", "moodle", "--name", "PS1", "--output", str(tmp_path / "m.csv"))
    assert proc.returncode == 2 and "its gradebook holds no student of the last `grader batch`" in proc.stderr, \
        proc.stderr
    assert not (tmp_path / "m.csv").exists()



def test_a_roster_row_with_more_fields_than_its_header_is_a_usage_error(graded, tmp_path):
    """An unquoted "Lovelace, Ada" made a third field that csv.DictReader keys None: a traceback, exit 3."""
    bad = tmp_path / "roster.csv"
    bad.write_text("student,name,email\nada,Lovelace, Ada,ada@x\n")
    proc = export(graded, "--format", "canvas", "--name", "x", "--roster", str(bad))
    assert proc.returncode == 2, proc.stderr
    assert f"{bad}, line 2: 4 fields but the header has 3; put a value that holds a comma in double quotes" \
        in proc.stderr and "Traceback" not in proc.stderr


def test_only_the_rows_of_the_last_batch_runs_grades_csv_are_exported(tmp_path):
    """A re-run with fewer exercises and one submission removed: grades.csv drops dave, and so must
    the export (before: dave's stale 2-exercise row went out, and set Blackboard's Total Pts)."""
    subs = make_class(tmp_path / "subs", {"alice": "correct", "bob": {"causal_mask": "inverted"}, "dave": "correct"})
    out = tmp_path / "out"
    first = run_batch(subs, out, "attention.causal_mask", "attention.positional_encoding", jobs=1)
    assert first.returncode == 0, first.stderr[-3000:]
    (subs / "dave" / "attention.py").unlink()
    (subs / "dave").rmdir()
    again = run_batch(subs, out, "attention.causal_mask", jobs=1)
    assert again.returncode == 0, again.stderr[-3000:]
    kept = table((out / "grades.csv").read_text())
    assert [r[0] for r in kept[1:]] == ["alice", "bob"]
    points = kept[1][3]                                   # max_score of the causal_mask-only run
    proc = export(out, "--format", "blackboard", "--name", "PS1")
    assert proc.returncode == 0, proc.stderr
    assert table(proc.stdout) == [["Last Name", "First Name", "Username", f"PS1 [Total Pts: {points} Score]"],
                                  ["", "", "alice", points], ["", "", "bob", kept[2][2]]]
    assert ("note: left out, not among the submissions the last `grader batch` (run 2) found, so not in its "
            "grades.csv: dave") in proc.stderr
    dry = subprocess.run([sys.executable, "-m", "grader", "export", "canvas", str(out), "--course", "1",
                          "--assignment", "2", "--url", "https://canvas.example.edu", "--dry-run"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0 and "Would post 2 grades" in dry.stdout and "dave" not in dry.stdout
    assert "left out, not among the submissions" in dry.stderr and "dave" in dry.stderr


def test_a_batch_that_did_not_finish_is_not_exported(tmp_path):
    out = add_run(add_run(tmp_path / "out", {"ada": 8.0, "bob": 10.0}), {"ada": 9.0}, settings="t", finished=False)
    proc = export(out, "--format", "moodle", "--name", "PS1")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "the last `grader batch` into it (run 2, begun" in proc.stderr
    assert "did not finish (stopped, or still running)" in proc.stderr and "run the same grader batch again" in \
        proc.stderr


def test_a_run_that_did_not_record_its_submissions_keeps_the_rows_of_its_settings(tmp_path):
    out = add_run(tmp_path / "out", {"ada": 8.0, "bob": 10.0, "dave": 10.0}, settings="old")
    add_run(out, {"ada": 4.0, "bob": 4.0}, settings="new")
    db = sqlite3.connect(out / "gradebook.sqlite")      # as a grader before schema 3 left it
    db.execute("UPDATE runs SET students = NULL")
    db.commit()
    db.close()
    proc = export(out, "--format", "moodle", "--name", "PS1")
    assert [r[0] for r in table(proc.stdout)[1:]] == ["ada", "bob"]
    assert "left out, graded under other settings (exercises, points, limits) than the last `grader batch` " \
           "(run 2): dave" in proc.stderr
    assert "that run did not record which submissions it found" in proc.stderr


@pytest.mark.parametrize("scores,roster,clash", [
    ({"Bob": 10.0, "bob": 0.0}, None, "Bob and bob (both login 'bob')"),
    ({"alice": 0.0, "alice.zip": 10.0}, "student,login_id\nalice,al\nalice.zip,al\n", "alice and alice.zip (both "
                                                                                         "login 'al')"),
    ({"ada": 5.0, "ann": 6.0}, "student,email\nada,A@uni.example\nann,a@uni.example\n", "ada and ann (both e-mail "
                                                                                         "'a@uni.example')"),
])
def test_two_students_the_lms_takes_for_one_person_are_refused(tmp_path, scores, roster, clash):
    out = add_run(tmp_path / "out", scores)
    args = ["--roster", str(tmp_path / "roster.csv")] if roster else []
    if roster:
        (tmp_path / "roster.csv").write_text(roster)
    for layout in ("canvas", "moodle", "blackboard"):
        proc = export(out, "--format", layout, "--name", "PS1", *args)
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr
        assert f"grader: error: students the LMS would take for one person: {clash}; it would keep whichever " \
               "grade it applied last" in proc.stderr


def test_a_last_first_name_is_split_at_its_comma(tmp_path):
    out = add_run(tmp_path / "out", {"alice": 10.0, "bob": 8.0})
    (tmp_path / "roster.csv").write_text('student,name,login_id\nalice,"Liddell, Alice",aliddell\n'
                                         'bob,Bob van Babbage,bb\n')
    roster = ["--roster", str(tmp_path / "roster.csv")]
    moodle = table(export(out, "--format", "moodle", "--name", "X", *roster).stdout)
    assert [r[3:5] for r in moodle[1:]] == [["Alice", "Liddell"], ["Bob van", "Babbage"]]
    blackboard = table(export(out, "--format", "blackboard", "--name", "X", *roster).stdout)
    assert [r[:2] for r in blackboard[1:]] == [["Liddell", "Alice"], ["Babbage", "Bob van"]]
    canvas = table(export(out, "--format", "canvas", "--name", "X", *roster).stdout)
    assert canvas[1][0] == "Liddell, Alice"


def test_roster_text_a_spreadsheet_would_run_as_a_formula_stays_text(tmp_path):
    out = add_run(tmp_path / "out", {"bsmith": 0.0, "=cmd": 4.0})
    (tmp_path / "roster.csv").write_text('student,name,email,login_id,sis_user_id,section\n'
                                         'bsmith,"=HYPERLINK(""http://x"")",+e@x,-bs,@S2,-A\n')
    roster = ["--roster", str(tmp_path / "roster.csv")]
    canvas = table(export(out, "--format", "canvas", "--name", "X", *roster).stdout)
    assert canvas[1:] == [["'=cmd", "", "", "'=cmd", "", "4"],          # a folder's name, not in the roster
                          ["'=HYPERLINK(\"http://x\")", "", "'@S2", "'-bs", "'-A", "0"]]
    moodle = table(export(out, "--format", "moodle", "--name", "X", *roster).stdout)
    assert moodle[1:] == [["'=cmd", "", "", "", "", "4"],
                          ["'-bs", "'+e@x", "'@S2", "", "'=HYPERLINK(\"http://x\")", "0"]]
    blackboard = table(export(out, "--format", "blackboard", "--name", "X", *roster).stdout)
    assert blackboard[1:] == [["", "", "'=cmd", "4"], ["'=HYPERLINK(\"http://x\")", "", "'-bs", "0"]]


@pytest.mark.parametrize("args,fragment", [
    (("--name", ""), "argument --name: '' is blank: give a name"),
    (("--name", "  "), "argument --name: '  ' is blank: give a name"),
    (("--name", "PS\n1"), "argument --name: 'PS\\n1': a name is one line"),
    (("--name", "X", "--points", "0"), "argument --points: '0': expected a number greater than 0"),
    (("--name", "X", "--points", "-5"), "argument --points: '-5': expected a number greater than 0"),
    (("--name", "X", "--points", "nan"), "argument --points: 'nan': expected a number greater than 0"),
])
def test_flags_that_make_a_broken_import_file_are_refused(graded, args, fragment):
    proc = export(graded, "--format", "blackboard", *args)
    assert proc.returncode == 2 and proc.stdout == "" and fragment in proc.stderr, proc.stderr
