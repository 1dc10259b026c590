"""grader.pipeline.redact: a hidden case says fixed words chosen by its kind, never the student's text."""
import pytest

from grader.pipeline.feedback import WORDS, Facts, words
from grader.pipeline.redact import COMPARISON_WORDS, WITHHELD, hidden, hide
from grader.results import CaseResult, Comparison, ComparisonKind, FailureKind, Heatmap, Status

SECRET = "V_2x4x8_secret"
LEAK = f"{SECRET}: Q = tensor([0.1234, 0.5678])\n  File \"attention.py\", line 3"
FACTS = Facts(function="scaled_dot_product_attention", module="attention", timeout=2.5, memory_mb=2048,
              submission_timeout=600.0, exception=SECRET)


def case(kind, message=LEAK, comparisons=(), **kw):
    return CaseResult("hidden 1", kind.status, description="Q: (2, 4, 8) float32", message=message,
                      comparisons=comparisons, failure=kind, **kw)


def test_every_kind_has_fixed_words():
    assert set(WORDS) == set(FailureKind)


@pytest.mark.parametrize("kind", list(FailureKind))
def test_every_kind_says_only_its_fixed_words(kind):
    r = hidden(case(kind), FACTS)
    other = hidden(case(kind, message="something else entirely, 3.14159"), FACTS)
    assert r.message == other.message == words(kind, FACTS)
    assert SECRET not in repr(r) and "0.1234" not in repr(r) and "(2, 4, 8)" not in repr(r)
    assert r.hidden and r.description == WITHHELD and r.status is kind.status and r.failure is kind


def test_a_student_exception_class_is_not_named_but_pythons_are():
    assert hidden(case(FailureKind.EXCEPTION), FACTS).message == "raised an exception"
    builtin = Facts(exception="ValueError")
    assert hidden(case(FailureKind.EXCEPTION, message="ValueError: 0.1234"), builtin).message == "raised ValueError"


def test_out_of_memory_says_out_of_memory_and_the_limit():
    said = "ran out of memory: the limit is 2048 MiB (MemoryError: 0.1234)"
    r = hidden(case(FailureKind.OUT_OF_MEMORY, message=said), FACTS)
    assert r.message == "ran out of memory: the limit is 2048 MiB"


def test_timeouts_and_not_run_say_the_parents_limits():
    assert hidden(case(FailureKind.TIMEOUT), FACTS).message.startswith("took longer than 2.5 s")
    assert hidden(case(FailureKind.TIME_LIMIT), FACTS).message == \
        "not run: the submission's time limit (600 s) was used up"


def test_a_wrong_answer_says_what_kind_of_difference_each_output_has():
    comps = (Comparison("out", False, problem=f"{SECRET} 3 of 64 values differ; max abs error 0.1234 at [0, 1]",
                        kind=ComparisonKind.VALUES, mismatch_fraction=0.1875, max_abs_error=0.1234),
             Comparison("weights", True, kind=ComparisonKind.OK, max_abs_error=0.0))
    r = hidden(case(FailureKind.WRONG_ANSWER, comparisons=comps, diagnosis="missing 1/sqrt(d_k): scale",
                    heatmaps=(Heatmap("out", ((0.1234,),), ((0.5678,),)),)), FACTS)
    assert r.message == "out wrong: values differ from the reference (19% of them); weights correct"
    assert r.diagnosis == "missing 1/sqrt(d_k): scale" and r.heatmaps == ()
    assert r.comparisons[0].max_abs_error is None and r.comparisons[0].mismatches == ()


def test_a_wrong_answer_without_comparisons_says_wrong_answer():
    assert hidden(case(FailureKind.WRONG_ANSWER), FACTS).message == "wrong answer"


def test_in_place_modification_is_not_called_correct():
    comps = (Comparison("out", True, kind=ComparisonKind.OK),)
    r = hidden(case(FailureKind.MODIFIED_INPUT, message="modified its input in place (Q): ...", comparisons=comps),
               FACTS)
    assert r.message.startswith("modified its input in place") and "correct" not in r.message


@pytest.mark.parametrize("kind", [k for k in ComparisonKind if k is not ComparisonKind.OK])
def test_every_comparison_kind_hides_to_fixed_words(kind):
    c = hide(Comparison("out", False, problem=f"{SECRET}: expected 0.1234", kind=kind, shape=(2, 4, 8),
                        expected_shape=(2, 4, 8), dtype="float32", expected_dtype="float32"))
    assert SECRET not in repr(c) and "0.1234" not in repr(c) and "(2, 4, 8)" not in repr(c)
    assert c.kind is kind and c.problem == COMPARISON_WORDS.get(kind, "differs from the reference")


def test_requires_grad_is_said_as_such():
    c = hide(Comparison("out", False, problem="the returned tensor requires grad: ...",
                        kind=ComparisonKind.REQUIRES_GRAD))
    assert c.problem == "the returned tensor requires grad"


def test_a_passed_hidden_case_says_nothing_a_judge_said():
    r = hidden(CaseResult("hidden 2", Status.PASSED, message="loss fell from 0.6931 to 0.1234"), FACTS)
    assert r.message == "" and r.status is Status.PASSED


def test_a_result_without_a_kind_says_only_its_status():
    r = hidden(CaseResult("hidden 3", Status.ERROR, message=LEAK), FACTS)
    assert r.message == "raised an exception"
