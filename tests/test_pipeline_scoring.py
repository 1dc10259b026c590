"""grader.pipeline.scoring: partial credit by cases passed, the most telling status, the headline."""
import pytest

from grader.pipeline.feedback import NOT_IMPLEMENTED
from grader.pipeline.scoring import summarise
from grader.results import CaseResult, Status

WHERE = "attention.py, line 12"


def cases(*statuses, diagnoses=()):
    diagnoses = list(diagnoses) + [""] * (len(statuses) - len(diagnoses))
    return [CaseResult(f"case {i + 1}", s, message="" if s is Status.PASSED else f"{s.value} here\nmore",
                       diagnosis=d) for i, (s, d) in enumerate(zip(statuses, diagnoses))]


def test_all_passed():
    s = summarise(cases(Status.PASSED, Status.PASSED), 3.0, WHERE)
    assert (s.status, s.points, s.message, s.diagnosis) == (Status.PASSED, 3.0, "all 2 cases passed", "")


@pytest.mark.parametrize("passed,total,max_points,points", [(2, 3, 3.0, 2.0), (2, 3, 1.0, 0.67), (0, 4, 2.0, 0.0)])
def test_partial_credit_by_cases_passed(passed, total, max_points, points):
    s = summarise(cases(*[Status.PASSED] * passed, *[Status.FAILED] * (total - passed)), max_points, WHERE)
    assert s.status is Status.FAILED and s.points == points


def test_headline_names_the_first_failure_by_its_first_line():
    s = summarise(cases(Status.PASSED, Status.FAILED, Status.ERROR), 3.0, WHERE)
    assert s.message == "1 of 3 cases passed; first failure: case 2 — failed here"


@pytest.mark.parametrize("statuses,shown", [
    ((Status.FAILED, Status.TIMEOUT, Status.ERROR), Status.TIMEOUT),
    ((Status.FAILED, Status.ERROR), Status.ERROR),
    ((Status.NOT_RUN, Status.FAILED), Status.FAILED),
    ((Status.CRASHED, Status.TIMEOUT), Status.CRASHED),
    ((Status.PASSED, Status.NOT_IMPLEMENTED, Status.CRASHED), Status.NOT_IMPLEMENTED),
    ((Status.PASSED, Status.NOT_RUN), Status.NOT_RUN),
])
def test_the_most_telling_status_wins(statuses, shown):
    assert summarise(cases(*statuses), 1.0, WHERE).status is shown


def test_nothing_implemented_says_where_to_start():
    s = summarise(cases(Status.NOT_IMPLEMENTED, Status.NOT_IMPLEMENTED), 2.0, WHERE)
    assert s.status is Status.NOT_IMPLEMENTED and s.points == 0.0 and s.diagnosis == ""
    assert s.message == NOT_IMPLEMENTED.format(where=WHERE) and WHERE in s.message


def test_partly_implemented_gets_the_usual_headline():
    s = summarise(cases(Status.PASSED, Status.NOT_IMPLEMENTED), 2.0, WHERE)
    assert s.status is Status.NOT_IMPLEMENTED and s.points == 1.0 and s.message.startswith("1 of 2 cases passed")


def test_the_exercises_diagnosis_is_the_one_that_explains_every_wrong_answer():
    """A diagnosis said of the exercise is what its code does wrong: one that fits fewer than half of
    the wrong answers only stays on those cases (reversed BPE merges fitted one case of eight in an
    audit), as does one beside another mistake's.
    A case two mistakes fit alike (T = 1: an inverted causal mask is one without its diagonal) is
    explained by each; a hidden case does not decide where a public one failed."""
    F, E, P = Status.FAILED, Status.ERROR, Status.PASSED

    def said(*cases):
        return summarise(list(cases), 1.0, WHERE).diagnosis

    def case(status, diagnosis="", fits=(), hidden=False):
        return CaseResult("c", status, message="" if status is P else "wrong", diagnosis=diagnosis, fits=fits,
                          hidden=hidden)
    assert said(case(F, "b: y"), case(F, "b: y"), case(P)) == "b: y"
    assert said(case(E), case(F, "b: y"), case(F, "b: y")) == "b: y"          # a case that raised says nothing
    assert said(case(F, fits=("a: x", "b: y")), case(F, "b: y")) == "b: y"     # ambiguous, and b fits it
    assert said(case(F, "a: x"), case(F, "b: y"), case(F, "b: y")) == ""       # two mistakes: neither
    assert said(case(F, "b: y"), case(F, "b: y"), case(F)) == "b: y"           # most, and none otherwise
    assert said(case(F, "b: y"), case(F)) == "b: y"                             # half
    assert said(case(F, "b: y"), *[case(F)] * 7) == ""                          # one case of eight
    assert said(case(F, "b: y"), case(F), case(F), case(F)) == ""              # one of four
    assert said(case(F, fits=("a: x", "c: z")), case(F, "b: y")) == ""         # an ambiguity b is not part of
    assert said(case(F, "b: y"), case(F, hidden=True)) == "b: y"               # the public cases decide
    assert said(case(P), case(F, "b: y", hidden=True)) == "b: y"               # unless only hidden ones failed
    assert said(case(E), case(P)) == ""


def test_an_import_error_is_noted_in_the_headline():
    s = summarise(cases(Status.FAILED), 1.0, WHERE, import_error="NameError: name 'np' is not defined")
    assert s.message.endswith("(note: your module does not import as written: NameError: name 'np' is not defined)")
