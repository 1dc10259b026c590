"""`grader export csv --format canvas|moodle|blackboard`: each LMS's import layout, final scores,
the roster's identifiers, and students without a grade left out."""
import csv
import io
import subprocess
import sys

import pytest

from conftest import ROOT
from fixtures.lms.graded import make_graded


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


def test_a_bad_roster_and_a_folder_without_a_gradebook_are_usage_errors(graded, tmp_path):
    bad = tmp_path / "roster.csv"
    bad.write_text("name,email\nAda,a@x\n")
    proc = export(graded, "--format", "canvas", "--name", "x", "--roster", str(bad))
    assert proc.returncode == 2 and "the header needs a 'student' column" in proc.stderr
    proc = export(tmp_path, "--format", "canvas", "--name", "x")
    assert proc.returncode == 2 and "no gradebook.sqlite here; pass the --out folder of `grader batch`" in proc.stderr
