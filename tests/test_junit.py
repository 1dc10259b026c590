"""JUnit XML (grader/reports/junit.py): the structure CI reporters read, from records and end to end."""
import subprocess
import sys
import xml.etree.ElementTree as ET

from conftest import ROOT, SOLUTIONS, mistake_source, replace_function
from grader.reports import render
from grader.results import CaseResult, ExerciseResult, Status, SubmissionResult


def exercise(id, status, points, max_points=1.0, **kw):
    return ExerciseResult(id=id, status=status, points=points, max_points=max_points,
                          source_file="/course/exercises/" + id.split(".")[0] + ".py", source_line=7, **kw)


def parse(result, **kw):
    return ET.fromstring(render(result, "junit", **kw).split("\n", 1)[1])


RESULT = SubmissionResult(submission="exercises", grader_version="0.1.0", seconds=2.0, exercises=(
    exercise("attention.causal_mask", Status.PASSED, 1.0, cases=(CaseResult("T=1", Status.PASSED),)),
    exercise("attention.scaled_dot_product_attention", Status.FAILED, 0.5, 3.0,
             message="1 of 6 cases passed; first failure: small — out wrong",
             diagnosis="missing 1/sqrt(d_k): divide the scores by sqrt(d_k)",
             cases=(CaseResult("small", Status.FAILED, description="Q: (2, 4, 8)", message="out wrong: 64 of 64"),
                    CaseResult("hidden 1", Status.FAILED, hidden=True, message="SECRET VALUES 1.2345"))),
    exercise("rnn.rnn_cell", Status.CRASHED, 0.0, message="the process ended", output="boom\x00\x1b[31m"),
    exercise("rnn.rnn_forward", Status.SKIPPED, 0.0, message="skipped: needs CUDA"),
))


def test_one_testsuite_per_module_one_testcase_per_exercise():
    root = parse(RESULT)
    assert root.tag == "testsuites" and root.get("tests") == "4"
    assert (root.get("failures"), root.get("errors"), root.get("skipped")) == ("1", "1", "1")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == ["attention", "rnn"]
    assert [c.get("name") for c in suites["attention"].findall("testcase")] == \
        ["causal_mask", "scaled_dot_product_attention"]
    assert suites["attention"].get("failures") == "1" and suites["rnn"].get("errors") == "1"
    points = {p.get("name"): p.get("value") for p in suites["attention"].find("properties")}
    assert points == {"points": "1.5", "max_points": "4"}
    assert "1.5 / 6 points" in root.get("name")


def test_failure_message_is_the_diagnosis_and_hidden_values_stay_out():
    case = parse(RESULT).find(".//testcase[@name='scaled_dot_product_attention']")
    failure = case.find("failure")
    assert failure.get("type") == "failed"
    assert failure.get("message").endswith("looks like: missing 1/sqrt(d_k): divide the scores by sqrt(d_k)")
    assert "small [Q: (2, 4, 8)]: failed" in failure.text and "out wrong: 64 of 64" in failure.text
    assert "hidden 1: failed" in failure.text and "SECRET" not in failure.text
    assert case.get("file") == "/course/exercises/attention.py" and case.get("line") == "7"


def test_crash_is_an_error_skip_is_skipped_and_output_is_valid_xml():
    root = parse(RESULT, root="/course")
    crashed = root.find(".//testcase[@name='rnn_cell']")
    assert crashed.find("error").get("type") == "crashed" and crashed.find("failure") is None
    assert crashed.find("system-out").text.startswith("boom\ufffd\ufffd[31m")   # control characters replaced
    assert crashed.get("file") == "exercises/rnn.py"                           # relative to root
    assert root.find(".//testcase[@name='rnn_forward']/skipped").get("message") == "skipped: needs CUDA"


def test_an_unreadable_submission_is_a_failing_testcase_too():
    broken = SubmissionResult(submission="x.zip", errors=("x.zip: not a zip file",), exercises=(
        exercise("attention.causal_mask", Status.ERROR, 0.0, message="x.zip: not a zip file"),))
    root = parse(broken)
    loads = root.find("testsuite[@name='submission']/testcase[@name='loads']")
    assert loads.find("error").get("message") == "x.zip: not a zip file"
    assert root.get("errors") == "2"


def test_grader_check_format_junit_end_to_end(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    source = replace_function((SOLUTIONS / "attention.py").read_text(), "causal_mask",
                              mistake_source("attention", "causal_mask__inverted"))
    (sub / "attention.py").write_text(source)
    out = tmp_path / "report.xml"
    p = subprocess.run([sys.executable, "-m", "grader", "check", "attention.causal_mask",
                        "attention.positional_encoding",
                        "--submission", str(sub), "--format", "junit", "--output", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 1, p.stderr
    root = ET.parse(out).getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {"causal_mask", "positional_encoding"}
    assert cases["positional_encoding"].find("failure") is None
    failure = cases["causal_mask"].find("failure")
    assert failure is not None and "looks like:" in failure.get("message")
    assert cases["causal_mask"].get("file").endswith("attention.py") and int(cases["causal_mask"].get("line")) > 1
