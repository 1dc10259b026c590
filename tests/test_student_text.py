"""Text a student chose that no UTF-8 file can hold (lone surrogates: a message their code raised,
a notebook's JSON, a file's or a folder's name that is not UTF-8) never stops a report or a batch:
it reaches every format as its escape, and every other student is graded as before.

The red team's version: one student's `raise ValueError("\\ud800")` made every report of theirs
fail to write, which stopped the class's batch at its first feedback file, on every rerun."""
import csv
import json
import os
import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT, SOLUTIONS, replace_function
from fixtures.batch.build import run_batch
from grader.frontends.batch.gradebook import Gradebook
from grader.errors import SubmissionError
from grader.reports.escape import shown
from grader.sandbox import wire
from grader.student_text import encodable, file_name
from grader.submission.loader import load_submission

FAST = ("attention.causal_mask", "attention.positional_encoding")
RAISES = '''def positional_encoding(T, d_model):
    raise ValueError("lone \\ud800 and \\udfff surrogates")
'''
SOURCE = (SOLUTIONS / "attention.py").read_text()
BYTES = b"c_\xffbyte"                       # a student folder whose name is not UTF-8


def _notebook(source: str, extra: str) -> str:
    """A notebook of `source` and a cell holding `extra`, written as JSON escapes (`\\ud800`)."""
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": s}
             for s in (source, extra)]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def _zip_with_a_name_that_is_not_utf8(path):
    """A zip whose member name is flagged as UTF-8 (bit 11) but holds the bytes ff fe."""
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("attention.py", SOURCE)
        zf.writestr("notes\u00e9.py", "x = 1\n")            # flagged UTF-8: "é" is c3 a9
    path.write_bytes(path.read_bytes().replace(b"notes\xc3\xa9", b"notes\xff\xfe"))


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    subs = root / "subs"
    (subs / "a_raises").mkdir(parents=True)
    (subs / "a_raises" / "attention.py").write_text(replace_function(SOURCE, "positional_encoding", RAISES))
    odd = os.path.join(os.fsencode(subs), BYTES)
    os.mkdir(odd)
    for name, text in ((b"attention.py", SOURCE), (b"x\xff.py", "y = 1\n"), (b"y\xff.ipynb", "{}")):
        with open(os.path.join(odd, name), "w") as f:
            f.write(text)
    (subs / "d_notebook").mkdir()
    (subs / "d_notebook" / "attention.ipynb").write_text(_notebook(SOURCE, 'NOTE = "\ud800"\n'))
    _zip_with_a_name_that_is_not_utf8(subs / "e_zip.zip")
    (subs / "z_ok").mkdir()
    (subs / "z_ok" / "attention.py").write_text(SOURCE)
    out = root / "out"
    env = {k: v for k, v in os.environ.items() if k != "GRADER_SECRET_SEED"}
    proc = run_batch(subs, out, *FAST, env=env)
    return subs, out, proc


def _grades(out):
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        return {r["student_id"]: r for r in csv.DictReader(f)}


def test_a_batch_with_such_text_grades_every_student(graded_class):
    subs, out, proc = graded_class
    assert proc.returncode == 0, proc.stderr[-3000:]
    grades = _grades(out)
    odd = file_name(os.fsdecode(BYTES))
    assert odd == "c_\\xffbyte"
    assert set(grades) == {"a_raises", odd, "d_notebook", "e_zip", "z_ok"}
    assert (grades["z_ok"]["score"], grades[odd]["score"], grades["d_notebook"]["score"]) == ("3", "3", "3")
    assert grades["a_raises"]["score"] == "1"                     # causal_mask's point; the raise costs PE's 2
    assert grades["e_zip"]["state"] == "unreadable"               # the student's archive, not a grader fault
    book = Gradebook(str(out / "gradebook.sqlite"))
    paths = {r.student: r.path for r in book.rows()}
    book.close()
    assert os.fsencode(paths[odd]) == os.path.join(os.fsencode(subs), BYTES)   # kept exact: the times are read there
    for folder in (out / "students").iterdir():
        for f in folder.iterdir():
            f.read_text(encoding="utf-8")                          # strict: every file is UTF-8


def test_the_raised_message_reaches_the_feedback_as_its_escape(graded_class):
    _, out, _ = graded_class
    html = (out / "students" / "a_raises" / "feedback.html").read_text(encoding="utf-8")
    md = (out / "students" / "a_raises" / "feedback.md").read_text(encoding="utf-8")
    assert "lone \\ud800 and \\udfff surrogates" in html
    assert "lone" in md and "\\ud800" in md


def test_names_that_are_not_utf8_are_said_escaped_and_passed_over(graded_class):
    subs, out, _ = graded_class
    result = load_submission(os.fsdecode(os.path.join(os.fsencode(subs), BYTES)))
    assert set(result.files) == {"attention"}
    said = " ".join(result.problems)
    assert "x\\xff.py: passed over: its name is not UTF-8 text" in said and "y\\xff.ipynb" in said
    with pytest.raises(SubmissionError, match="marked as UTF-8 text but is not"):
        load_submission(str(subs / "e_zip.zip"))
    feedback = (out / "students" / "e_zip" / "feedback.md").read_text(encoding="utf-8")
    assert "marked as UTF-8 text but is not" in feedback


def test_grader_check_writes_the_terminal_report(graded_class):
    subs, _, _ = graded_class
    proc = subprocess.run([sys.executable, "-m", "grader", "check", "--submission", str(subs / "a_raises"),
                           "attention.positional_encoding", "--color", "never"], cwd=ROOT, capture_output=True,
                          timeout=300)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert b"lone \\ud800 and \\udfff surrogates" in proc.stdout
    proc.stdout.decode("utf-8")


def test_the_wire_and_the_filters_never_hand_on_a_lone_surrogate():
    got = wire.loads(wire.dumps({"error": {"message": "a\ud800b"}, "k\udcff": ["\udfff", "é😀"]}))
    assert got == {"error": {"message": "a\\ud800b"}, "k\\udcff": ["\\udfff", "é😀"]}
    assert shown("x\ud800y") == "x\\ud800y" and encodable("é😀") == "é😀"
    assert file_name(os.fsdecode(b"a\xff")) == "a\\xff" and file_name("\ud800") == "\\ud800"
