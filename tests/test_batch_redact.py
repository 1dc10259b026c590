"""The student's view of hidden cases, decided from kinds: what a student's own code could smuggle
out is withheld, even from a record whose text escaped the engine's redaction."""
import pytest

from grader.frontends.batch.redact import OUTPUT_WITHHELD, student_view
from grader.pipeline.feedback import Facts, words
from grader.results import CaseResult, Comparison, ComparisonKind, ExerciseResult, FailureKind, Heatmap, Mismatch, \
    Status, SubmissionResult

SECRET = "V_2x4x8_0p1234"                       # a class the student named after the hidden inputs
LEAK = f"{SECRET}: tensor([0.1234, 0.5678])\n  File \"attention.py\", line 3"
SETTINGS = {"call_timeout_s": 3.0, "submission_timeout_s": 600.0, "memory_mb": 2048}


def submission(cases, output="Q = tensor([0.1234, 0.5678])\n", message=None):
    first = next((c for c in cases if c.status is not Status.PASSED), None)
    headline = message or (f"1 of {len(cases)} cases passed; first failure: {first.name} — "
                           f"{first.message.splitlines()[0]}" if first else "ok")
    e = ExerciseResult("attention.scaled_dot_product_attention", Status.ERROR, 1.0, 3.0, tuple(cases),
                       message=headline, output=output, diagnosis="missing 1/sqrt(d_k): scale the scores")
    return SubmissionResult("s", (e,), settings=SETTINGS)


def hidden(kind, message=LEAK, **kw):
    return CaseResult("hidden 1", kind.status, hidden=True, message=message, failure=kind, **kw)


def view(*cases):
    (e,) = student_view(submission(list(cases))).exercises
    return e


def test_hidden_error_message_and_output_are_withheld():
    said = "values differ from the reference (19% of them)"           # the engine's words for one output
    r = submission([CaseResult("small", Status.PASSED),
                    hidden(FailureKind.EXCEPTION),
                    CaseResult("hidden 2", Status.FAILED, hidden=True, message=said, failure=FailureKind.WRONG_ANSWER,
                               comparisons=(Comparison("out", False, problem=said, kind=ComparisonKind.VALUES),),
                               diagnosis="missing 1/sqrt(d_k): scale the scores")])
    (e,) = student_view(r).exercises
    text = repr(e)
    assert "0.1234" not in text and "0.5678" not in text and SECRET not in text
    assert e.cases[1].message == "raised an exception"
    assert "hidden 1 — raised an exception" in e.message
    assert e.cases[2].message == said                                  # the engine's own words stay
    assert e.cases[2].diagnosis.startswith("missing 1/sqrt(d_k)")
    assert e.output == "" and OUTPUT_WITHHELD in e.notes
    assert r.exercises[0].output                                       # the instructor's copy is intact


def test_public_only_results_are_unchanged():
    r = submission([CaseResult("small", Status.ERROR, message=LEAK, failure=FailureKind.EXCEPTION)])
    assert student_view(r) is r


def test_an_exception_class_of_pythons_own_is_named():
    e = view(hidden(FailureKind.EXCEPTION, message="raised ValueError"))
    assert e.cases[0].message == "raised ValueError"


@pytest.mark.parametrize("said", [f"raised {SECRET}", f"{SECRET}: 0.1234", "raised ValueError: 0.1234",
                                  "raised ValueError\n  File \"attention.py\", line 3, in f: Q[0] = 0.1234"])
def test_a_student_exception_class_or_message_is_not_said(said):
    e = view(hidden(FailureKind.EXCEPTION, message=said))
    assert e.cases[0].message == "raised an exception"
    assert SECRET not in repr(e) and "0.1234" not in repr(e)


def test_out_of_memory_keeps_the_limit_only():
    said = "ran out of memory: the limit is 2048 MiB (MemoryError: 0.1234)"
    e = view(hidden(FailureKind.OUT_OF_MEMORY, message=said))
    assert e.cases[0].message == "ran out of memory: the limit is 2048 MiB"


def test_the_parents_figures_stay():
    """The engine's own limit (a first call gets start-up grace) is kept, not replaced by the config's."""
    said = words(FailureKind.TIMEOUT, Facts(timeout=10.0))
    e = view(hidden(FailureKind.TIMEOUT, message=said))
    assert e.cases[0].message == said and "10 s" in said


@pytest.mark.parametrize("kind", [k for k in FailureKind if k is not FailureKind.WRONG_ANSWER])
def test_any_other_text_becomes_the_kinds_plain_words(kind):
    e = view(hidden(kind))
    facts = Facts(function="scaled_dot_product_attention", module="attention", timeout=3.0, memory_mb=2048,
                  submission_timeout=600.0)
    assert e.cases[0].message == words(kind, facts)
    assert SECRET not in repr((e.cases, e.message)) and "0.1234" not in repr((e.cases, e.message))


def test_a_case_without_a_kind_says_only_its_status():
    e = view(CaseResult("hidden 1", Status.ERROR, hidden=True, message="ValueError: tensor([0.1234])"),
             CaseResult("hidden 2", Status.FAILED, hidden=True, message="out wrong: expected 0.5678"))
    assert [c.message for c in e.cases] == ["raised an exception", "wrong answer"]


def test_comparisons_keep_name_verdict_and_kind_in_fixed_words():
    comps = (Comparison("out", False, problem="3 of 64 values differ; max abs error 0.1234 at [0, 1]",
                        kind=ComparisonKind.VALUES, max_abs_error=0.1234, worst_index=(0, 1),
                        mismatches=(Mismatch((0, 1), 0.1234, 0.5678),), shape=(2, 4, 8), expected_shape=(2, 4, 8)),
             Comparison("weights", False, problem="shape (2, 4, 8), expected (2, 4, 6)", kind=ComparisonKind.SHAPE,
                        shape=(2, 4, 8), expected_shape=(2, 4, 6)))
    e = view(hidden(FailureKind.WRONG_ANSWER, comparisons=comps, description="Q: (2, 4, 8) float32",
                    heatmaps=(Heatmap("out", ((0.1234,),), ((0.5678,),)),)))
    (c,) = e.cases
    assert c.message == "out wrong: differs from the reference; weights wrong: wrong shape"
    assert [x.kind for x in c.comparisons] == [ComparisonKind.VALUES, ComparisonKind.SHAPE]
    assert c.heatmaps == () and "(2, 4, 8)" not in repr(e) and "0.1234" not in repr(e) and "0.5678" not in repr(e)


def test_a_headline_that_quotes_a_long_first_line_shortened_is_redacted_too():
    """scoring.summarise keeps 600 characters of the first failing case's first line."""
    from grader.pipeline.feedback import shorten
    long = f"raised {SECRET}: " + "0.1234, " * 200
    case = hidden(FailureKind.EXCEPTION, message=long)
    headline = f"0 of 1 cases passed; first failure: hidden 1 — {shorten(long)}"
    (e,) = student_view(submission([case], message=headline)).exercises
    assert e.message == "0 of 1 cases passed; first failure: hidden 1 — raised an exception"
    assert SECRET not in repr(e) and "0.1234" not in repr(e)
