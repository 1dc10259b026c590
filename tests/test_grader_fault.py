"""A grader fault (a bug in a spec or the engine) is never the student's error: its own status
(GRADER_FAULT), exit code 3 (ExitCode.INTERNAL) in `grader check`, `grader batch` and `grader ci`,
never cached by a batch (a rerun grades it again), and every report says whose fault it is.

End to end, the fault is injected by a three-line wrapper, FAULT_GRADER below: `python
fault_grader.py <grader arguments>` runs the real command with the reference of $INJECT_FAULT
raising. Batch workers re-import that script (multiprocessing does it for the main module of every
process it starts), so the fault reaches them too; without $INJECT_FAULT it is the plain grader.
"""
import json
import os
import sqlite3
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import ROOT, SOLUTIONS
from grader.config import load_config
from grader.errors import ExitCode
from grader.frontends.batch.class_report import class_stats, render as render_class_report
from grader.frontends.batch.gradebook import Row
from grader.frontends.ci.annotations import annotations
from grader.pipeline import scoring
from grader.reports import render
from grader.reports.classroom import classroom_result
from grader.reports.gradescope import results_json
from grader.results import CaseResult, ExerciseResult, Status, SubmissionResult, from_dict, to_dict

MASK, PE = "attention.causal_mask", "attention.positional_encoding"
FAULT_GRADER = '''
import dataclasses, os, sys
from grader.catalog import catalog

def broken_reference(*args, **kwargs):
    raise RuntimeError("injected grader bug")

FAULT = os.environ.get("INJECT_FAULT")
if FAULT:
    catalog()[FAULT] = dataclasses.replace(catalog()[FAULT], reference=broken_reference)
if __name__ == "__main__":
    from grader.cli import main
    sys.exit(main(sys.argv[1:]))
'''


# -- the record and every report ------------------------------------------------------------------
def _raised(message="reference exploded"):
    try:
        raise RuntimeError(message)
    except RuntimeError as e:
        return e


def faulted(hidden_cases=False) -> SubmissionResult:
    from grader.catalog import catalog
    config = load_config(None, env={}, overrides={"secret_seed": 7} if hidden_cases else None)
    fault = scoring.grader_fault(catalog()[MASK], config, _raised())
    ok = ExerciseResult(PE, Status.PASSED, 3.0, 3.0, (CaseResult("c", Status.PASSED),), message="all 1 cases passed",
                        source_file="attention.py", source_line=40)
    return SubmissionResult("sub", (fault, ok), settings=config.summary(), grader_version="t")


def test_the_record_says_whose_fault_and_where():
    e = faulted().exercises[0]
    assert e.status is Status.GRADER_FAULT and e.points == 0 and e.max_points > 0 and not e.cases
    assert "the grader failed on this exercise (RuntimeError: reference exploded" in e.message
    assert "test_grader_fault.py" in e.message and "_raised" in e.message
    assert "bug in the grader, not in your code" in e.message and "no grade" in e.message
    assert faulted().grader_faults == (MASK,) and not faulted().all_passed
    assert from_dict(json.loads(json.dumps(to_dict(faulted())))) == faulted()


def test_with_hidden_cases_the_exception_text_is_withheld():
    """A reference raising on a hidden case could put its inputs in the exception's message."""
    e = faulted(hidden_cases=True).exercises[0]
    assert e.status is Status.GRADER_FAULT and "RuntimeError" in e.message and "exploded" not in e.message


def test_every_report_shows_it_as_the_graders_fault():
    r = faulted()
    terminal = render(r, "terminal", color=False)
    assert "INTERNAL" in terminal and "The grader failed on 1 exercise (attention.causal_mask)" in terminal
    assert "Not a grade: the grader failed on attention.causal_mask" in terminal
    html = render(r, "html")
    assert 'class="badge grader-fault"' in html and 'id="grader-fault"' in html and "not in your code" in html
    md = render(r, "md")
    assert "**The grader failed:**" in md and "| ⚠️ | `attention.causal_mask` |" in md
    data = results_json(r)
    assert "The grader failed on 1 exercise" in data["output"] and data["extra_data"]["grader_faults"] == [MASK]
    assert "bug in the grader" in next(t for t in data["tests"] if t["name"] == MASK)["output"]
    case = ET.fromstring(render(r, "junit")).find(".//testcase[@name='causal_mask']")
    assert case.find("error").get("type") == "grader fault" and case.find("failure") is None
    classroom = classroom_result(r)
    assert classroom["status"] == "error" and "The grader failed" in classroom["message"]
    assert [t["status"] for t in classroom["tests"]] == ["error", "pass"]
    (line,) = annotations(r, ".")
    assert line.startswith("::error") and "title=attention.causal_mask%3A the grader failed (not your code" in line


def test_the_class_report_lists_the_fault_and_the_student():
    r = faulted()
    row = Row("zoe", "h", "s", "subs/zoe", "grader_error", r.score, r.max_score, "", 0.0, r)
    fine = Row("amy", "h", "s", "subs/amy", "graded", 0.0, 1.0, "", 0.0, SubmissionResult(
        "subs/amy", (ExerciseResult(MASK, Status.FAILED, 0.0, 1.0, (CaseResult("c", Status.FAILED),)),)))
    stats = class_stats([row, fine])
    assert [(t.student, t.exercise, t.status) for t in stats.troubles] == [("zoe", MASK, "grader fault")]
    assert stats.grader_faults == ("zoe",)
    page = render_class_report(stats, "course", {})
    assert 'id="grader-faults"' in page and "zoe" in page and "no grade" in page


def test_batch_never_counts_a_fault_as_graded():
    from grader.frontends.batch.run import _state
    assert _state(faulted()) == "grader_error"
    assert _state(SubmissionResult("s", faulted().exercises[1:])) == "graded"


def test_an_unexpected_exception_in_a_command_exits_3_with_its_traceback(monkeypatch, capsys):
    from grader import api, cli

    def broken(*args, **kwargs):
        raise ZeroDivisionError("injected")
    monkeypatch.setattr(api, "grade", broken)
    code = cli.main(["check", MASK, "--submission", str(SOLUTIONS), "--config", str(ROOT / "autograde.toml")])
    err = capsys.readouterr().err
    assert code == ExitCode.INTERNAL and "ZeroDivisionError: injected" in err and "bug in the grader" in err


# -- end to end: the real commands with a fault injected ------------------------------------------
@pytest.fixture(scope="module")
def script(tmp_path_factory):
    path = tmp_path_factory.mktemp("fault") / "fault_grader.py"
    path.write_text(FAULT_GRADER)
    return path


def run(script, *args, fault=MASK, cwd=ROOT):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GRADER_SECRET", "INJECT_FAULT"))}
    if fault:
        env["INJECT_FAULT"] = fault
    return subprocess.run([sys.executable, str(script), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**env, "NO_COLOR": "1"})


def test_check_exits_3_and_says_it_is_the_graders_fault(script):
    p = run(script, "check", MASK, PE, "--submission", str(SOLUTIONS))
    assert p.returncode == ExitCode.INTERNAL, p.stdout + p.stderr
    assert "INTERNAL  causal_mask" in p.stdout and "PASS      positional_encoding" in p.stdout
    assert "RuntimeError: injected grader bug" in p.stdout and "not in your code" in p.stdout
    clean = run(script, "check", MASK, PE, "--submission", str(SOLUTIONS), fault=None)
    assert clean.returncode == ExitCode.OK, clean.stdout + clean.stderr


def test_ci_exits_3_whatever_the_policy(script, tmp_path):
    p = run(script, "ci", MASK, PE, "--submission", str(SOLUTIONS), "--out", str(tmp_path / "out"), "--min-score", "0",
            "--source-root", str(ROOT))
    assert p.returncode == ExitCode.INTERNAL, p.stdout + p.stderr
    assert "policy: not decided — the grader failed on attention.causal_mask" in p.stdout
    assert "::error" in p.stdout and "the grader failed (not your code; no grade)" in p.stdout
    xml = ET.parse(tmp_path / "out" / "report.xml")
    assert xml.find(".//testcase[@name='causal_mask']/error").get("type") == "grader fault"
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["extra_data"]["grader_faults"] == [MASK]


def test_batch_exits_3_caches_nothing_and_a_rerun_grades_it_again(script, tmp_path):
    subs = tmp_path / "subs"
    for student in ("ann", "bob"):
        (subs / student).mkdir(parents=True)
        (subs / student / "attention.py").write_text((SOLUTIONS / "attention.py").read_text())
    out = tmp_path / "out"
    first = run(script, "batch", str(subs), "--out", str(out), MASK, PE, "--jobs", "2")
    assert first.returncode == ExitCode.INTERNAL, first.stderr[-3000:]
    assert "2 grader faults (no grade; retried on the next run): ann, bob" in first.stderr
    assert _rows(out) == {"ann": ("grader_error", 2.0), "bob": ("grader_error", 2.0)}
    statuses = _statuses(out)
    assert statuses[("ann", MASK)] == "grader fault" and statuses[("ann", PE)] == "passed"
    feedback = (out / "students" / "ann" / "feedback.md").read_text()
    assert "The grader failed" in feedback

    again = run(script, "batch", str(subs), "--out", str(out), MASK, PE, "--jobs", "2", fault=None)
    assert again.returncode == ExitCode.OK, again.stderr[-3000:]
    assert "2 graded now, 0 unchanged" in again.stderr      # not skipped: nothing of the fault was cached
    assert _rows(out) == {"ann": ("graded", 3.0), "bob": ("graded", 3.0)}
    assert "The grader failed" not in (out / "students" / "ann" / "feedback.md").read_text()


def _rows(out):
    db = sqlite3.connect(f"file:{out}/gradebook.sqlite?mode=ro", uri=True)
    try:
        return {s: (state, score) for s, state, score in db.execute("SELECT student, state, score FROM submissions")}
    finally:
        db.close()


def _statuses(out):
    db = sqlite3.connect(f"file:{out}/gradebook.sqlite?mode=ro", uri=True)
    try:
        return {(s, e): st for s, e, st in db.execute("SELECT student, exercise, status FROM exercises")}
    finally:
        db.close()

