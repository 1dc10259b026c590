"""grader.pipeline.judge without a sandbox: hand-made cases and replies, judged as the engine would."""
import torch

from grader.catalog.spec import Case, ExerciseSpec, KnownMistake, Verdict
from grader.config import ExerciseConfig
from grader.pipeline.cases import tolerance
from grader.pipeline.judge import ProbeError, judge
from grader.results import ComparisonKind, FailureKind, Status

X = torch.arange(6, dtype=torch.float32).reshape(2, 3)
CASE = Case("small", (X,), note="2 by 3")


def spec(**kw) -> ExerciseSpec:
    base = dict(id="toy.double", cases=lambda gen: [CASE], reference=lambda x: 2 * x, reference_source="2 * x",
                mistakes=(KnownMistake("tripled", "you multiplied by 3: multiply by 2", lambda x: 3 * x),))
    return ExerciseSpec(**{**base, **kw})


def run(s, value, case=CASE, **kw):
    return judge(s, case, value, s.reference(*case.args), tolerance(s, ExerciseConfig(), case), **kw)


def test_a_right_answer_passes_with_its_case_described():
    r = run(spec(), 2 * X)
    assert r.status is Status.PASSED and r.failure is None and r.message == ""
    assert r.description == "2 by 3 — x: (2, 3) float32"
    assert [c.kind for c in r.comparisons] == [ComparisonKind.OK]


def test_wrong_values_name_the_known_mistake():
    r = run(spec(), 3 * X)
    assert r.status is Status.FAILED and r.failure is FailureKind.WRONG_ANSWER
    assert r.diagnosis == "tripled: you multiplied by 3: multiply by 2"
    assert r.comparisons[0].kind is ComparisonKind.VALUES and "5 of 6 values differ" in r.message


def test_wrong_values_that_match_no_mistake_have_no_diagnosis():
    assert run(spec(), 2 * X + 1).diagnosis == ""


def test_a_mistake_that_raises_is_skipped():
    boom = KnownMistake("boom", "never said", lambda x: 1 / 0)
    r = run(spec(mistakes=(boom, *spec().mistakes)), 3 * X)
    assert r.diagnosis.startswith("tripled")


def test_a_mistake_that_makes_no_difference_on_the_case_is_not_named():
    """On float64 inputs without a zero, a kink mistake computed with float32 constants is the
    reference rounded to float32, as is a right answer that went through float32: not the mistake."""
    z = torch.tensor([-1.5, 0.25, 2.0], dtype=torch.float64)
    case = Case("no zero", (z,))
    kink = KnownMistake("derivative 1 at z = 0", "use z > 0", lambda z: torch.where(z >= 0, 1.0, 0.01).double())
    zero = KnownMistake("0 on the negative side", "the slope, not 0", lambda z: (z > 0).double())
    s = spec(reference=lambda z: torch.where(z > 0, 1.0, torch.full_like(z, 0.01)), mistakes=(kink, zero))
    assert run(s, torch.where(z > 0, 1.0, 0.01).double(), case).diagnosis == ""
    assert run(s, (z > 0).double(), case).diagnosis.startswith("0 on the negative side")
    at_zero = Case("a zero", (torch.tensor([-1.5, 0.0, 2.0], dtype=torch.float64),))
    assert run(s, kink.fn(*at_zero.args), at_zero).diagnosis.startswith("derivative 1")    # where it differs


def test_a_case_two_mistakes_explain_alike_names_neither():
    """T = 1: an inverted causal mask and one without its diagonal are the same [[False]]."""
    inverted = KnownMistake("mask inverted", "True means may attend", lambda T: ~torch.tril(torch.ones(T, T)).bool())
    no_diag = KnownMistake("diagonal excluded", "keep the diagonal",
                           lambda T: torch.tril(torch.ones(T, T), diagonal=-1).bool())
    s = spec(reference=lambda T: torch.tril(torch.ones(T, T)).bool(), mistakes=(no_diag, inverted), exact=True)
    assert run(s, torch.zeros(1, 1, dtype=torch.bool), Case("T=1", (1,))).diagnosis == ""
    assert run(s, inverted.fn(4), Case("T=4", (4,))).diagnosis.startswith("mask inverted")


def test_shape_mismatch_is_said_before_values():
    r = run(spec(), 2 * X.T)
    assert r.status is Status.FAILED and r.comparisons[0].kind is ComparisonKind.SHAPE
    assert r.message == "shape (3, 2) but expected (2, 3)"


def test_non_finite_values_have_their_own_kind():
    r = run(spec(), torch.full((2, 3), float("nan")))
    assert r.comparisons[0].kind is ComparisonKind.NONFINITE


def test_modifying_an_input_in_place_fails_a_right_answer():
    r = run(spec(), 2 * X, modified=("x",))
    assert r.status is Status.FAILED and r.failure is FailureKind.MODIFIED_INPUT
    assert r.message.startswith("modified its input in place (x)")
    assert all(c.ok for c in r.comparisons)


def test_a_wrong_answer_that_modified_its_input_says_both():
    r = run(spec(), 3 * X, modified=("Q",))
    assert r.status is Status.FAILED and r.failure is FailureKind.WRONG_ANSWER
    assert r.message.startswith("5 of 6 values differ")
    assert r.message.endswith("\nit also modified its input in place (Q): work on new tensors and leave the inputs "
                              "unchanged")


def test_a_localiser_adds_where_and_may_probe():
    calls = []

    def localise(case, value, probe):
        calls.append(probe("helper", 1))
        return "Where: the scaling."
    r = run(spec(localise=localise), 3 * X, probe=lambda name, *a: f"{name}{a}")
    assert r.message.endswith("\nWhere: the scaling.") and calls == ["helper(1,)"]


def test_a_localiser_that_raises_is_ignored():
    def broken(case, value, probe):
        raise RuntimeError("Where: a bug in the localiser")

    def probing(case, value, probe):
        return "Where: " + probe("helper")          # no probe given: ProbeError
    for localise in (broken, probing):
        r = run(spec(localise=localise), 3 * X)
        assert r.status is Status.FAILED and "Where" not in r.message and r.diagnosis.startswith("tripled")


def test_without_a_probe_probing_raises_probe_error():
    seen = []

    def localise(case, value, probe):
        try:
            probe("helper")
        except ProbeError as e:
            seen.append(e)
        return ""
    run(spec(localise=localise), 3 * X)
    assert len(seen) == 1


def test_hidden_cases_are_not_localised():
    seen = []
    hidden = Case("hidden 1", (X,), hidden=True)
    run(spec(localise=lambda case, value, probe: seen.append(case) or "Where: here"), 3 * X, case=hidden)
    assert seen == []


def test_heatmaps_only_for_failing_two_dimensional_outputs():
    s = spec(heatmaps=("output",))
    (h,) = run(s, 3 * X).heatmaps
    assert h.student[1] == (9.0, 12.0, 15.0) and h.reference[1] == (6.0, 8.0, 10.0)
    assert run(s, 2 * X).heatmaps == ()                                   # passing
    one_d = Case("flat", (torch.arange(3.0),))
    assert run(s, torch.zeros(3), case=one_d).heatmaps == ()             # 1-D
    assert run(s, 3 * X, case=Case("hidden 1", (X,), hidden=True)).heatmaps == ()


def test_a_judge_gets_the_tolerance_with_overrides_applied():
    seen = {}

    def judge_fn(case, value, ref, tol):
        seen["tol"] = tol(torch.float32)
        return Verdict(bool(torch.allclose(value, ref, atol=seen["tol"][0], rtol=seen["tol"][1])), "close enough?")
    s = spec(judge=judge_fn)
    off = 2 * X + 1e-3
    strict = judge(s, CASE, off, 2 * X, tolerance(s, ExerciseConfig(), CASE))
    loose = judge(s, CASE, off, 2 * X, tolerance(s, ExerciseConfig(atol=1e-2), CASE))
    assert strict.status is Status.FAILED and strict.message == "close enough?"
    assert loose.status is Status.PASSED and loose.message == "close enough?" and seen["tol"] == (1e-2, 1e-4)


def test_tolerance_order_spec_then_case_then_config():
    s = spec(tolerance={torch.float32: (1e-3, 1e-3)})
    case = Case("c", (X,), rtol=0.5)
    assert tolerance(s, ExerciseConfig())(torch.float32) == (1e-3, 1e-3)
    assert tolerance(s, ExerciseConfig(), case)(torch.float32) == (1e-3, 0.5)
    assert tolerance(s, ExerciseConfig(rtol=0.25), case)(torch.float32) == (1e-3, 0.25)
