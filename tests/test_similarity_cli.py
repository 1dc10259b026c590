"""`grader similarity` and `grader batch --similarity` as users run them: the files they write, the
class report's link, and a clear message with exit 2 for every bad input (the first run of each
command is a subprocess; the variations call grader.cli.main in this process, the same code
without another torch import)."""
from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.batch.build import make_class as make_attention_class, run_batch
from grader.cli import main
from test_similarity_disguise import ROOT, make_class, make_previous_term


def similarity(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "grader", "similarity", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def similarity_here(capsys, monkeypatch, *args) -> tuple[int, str]:
    """grader.cli.main(["similarity", ...]) from the project's root: (exit code, stderr)."""
    monkeypatch.chdir(ROOT)
    code = main(["similarity", *map(str, args)])
    return code, capsys.readouterr().err


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    make_class(root / "submissions")
    make_previous_term(root / "last-term")
    return root


def test_the_command_writes_the_index_the_pairs_and_the_csv(klass, capsys, monkeypatch):
    out = klass / "out"
    p = similarity(klass / "submissions", "--out", out, "--against", klass / "last-term", "--modules", "rnn")
    assert p.returncode == 0, p.stderr
    assert "no code was run" in p.stderr and "review them" in p.stderr
    rows = list(csv.DictReader((out / "similarity.csv").open()))
    flagged = {frozenset((r["student_a"], r["student_b"])) for r in rows if r["flagged"] == "yes"}
    assert {frozenset(("alice", "bob")), frozenset(("erin", "frank")), frozenset(("carol", "olga"))} <= flagged
    assert frozenset(("olga", "oscar")) not in {frozenset((r["student_a"], r["student_b"])) for r in rows}
    for r in rows:
        assert float(r["score"]) >= 0.2 and (out / r["page"]).is_file() == (r["flagged"] == "yes")
    index = (out / "index.html").read_text()
    assert all(f'href="{r["page"]}"' in index for r in rows if r["page"])
    # a rerun that flags fewer pairs leaves no stale page behind
    code, err = similarity_here(capsys, monkeypatch, klass / "submissions", "--out", out, "--modules", "rnn",
                                "--threshold", "0.99")
    assert code == 0, err
    pages = sorted(x.name for x in (out / "pairs").iterdir())
    rows = list(csv.DictReader((out / "similarity.csv").open()))
    assert pages == sorted(Path(r["page"]).name for r in rows if r["page"])


@pytest.mark.parametrize("make, args, message", [
    ("empty", [], "no submissions found"),
    ("one", [], "need two readable submissions to compare, found 1 (only alice)"),
    ("two", ["--threshold", "50"], "--threshold 50: must be more than 0 and at most 1 (a share: for 50 % write 0.5)"),
    ("two", ["--modules", "rnnn"], "unknown module 'rnnn' (did you mean 'rnn'?)"),
    ("two", ["--against", "/nonexistent-term"], "--against /nonexistent-term: not a folder of submissions"),
    ("two", ["--boilerplate", "/nonexistent.py"], "/nonexistent.py: no such starter file or folder"),
])
def test_bad_inputs_exit_2_with_a_clear_message(tmp_path, klass, capsys, monkeypatch, make, args, message):
    subs = tmp_path / "subs"
    subs.mkdir()
    for student in {"empty": [], "one": ["alice"], "two": ["alice", "bob"]}[make]:
        (subs / student).mkdir()
        (subs / student / "rnn.py").write_text((klass / "submissions" / student / "rnn.py").read_text())
    code, err = similarity_here(capsys, monkeypatch, subs, "--out", tmp_path / "out", *args)
    assert code == 2 and message in err, err
    assert "Traceback" not in err


def test_a_usage_error_exits_2_from_the_command_line(tmp_path):
    (tmp_path / "subs").mkdir()
    p = similarity(tmp_path / "subs", "--out", tmp_path / "out")
    assert p.returncode == 2 and "no submissions found" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.slow
def test_batch_similarity_writes_its_section_and_the_class_report_links_it(tmp_path):
    subs = make_attention_class(tmp_path / "subs", {"alice": "correct", "bob": "zip:correct"})
    (subs / "erin").mkdir()
    (subs / "erin" / "attention.py").write_text((ROOT / "exercises" / "attention.py").read_text())
    out = tmp_path / "out"
    p = run_batch(subs, out, "attention.causal_mask", extra=["--similarity"], timeout=300)
    assert p.returncode == 0, p.stderr
    assert "similarity: 1 pair to review of 1 compared" in p.stderr, p.stderr       # erin: the stub only
    index = out / "similarity" / "index.html"
    assert index.is_file() and (out / "similarity" / "similarity.csv").is_file()
    assert list((out / "similarity" / "pairs").glob("attention-*.html"))
    report = (out / "class_report.html").read_text()
    assert 'href="similarity/index.html"' in report
    assert (out / "grades.csv").read_text().count("\n") == 4              # the grades are all there
    assert "not compared" not in p.stderr


def test_the_class_report_has_no_link_without_the_section():
    from grader.frontends.batch import class_report
    stats = class_report.class_stats([])
    assert "similarity/index.html" not in class_report.render(stats, "course", {})
    assert 'href="similarity/index.html"' in class_report.render(stats, "course", {}, links=(
        ("similarity/index.html", "Code similarity"),))
