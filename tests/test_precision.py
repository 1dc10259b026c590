"""The precision check (grader/pipeline/precision.py): a float64 case that misses by float32's
rounding only, while the float32 cases pass, is diagnosed as float32 precision; nothing else is.

First on records (the check is a pure function of the cases' kinds and error figures), then end
to end: the float32-routing mixture of experts (tests/fixtures/submissions/precision_float32_router/),
the two textbook precision habits named as known mistakes (Adam's eps, log(p + 1e-7)), wrong
formulas, and the worked and independent solutions.
"""
from __future__ import annotations

import shutil

import pytest

from conftest import FIXTURES, SOLUTIONS, grade_variants, mistake_source
from grader.pipeline.precision import FLOAT32, FLOAT32_BAND, annotate, float32_accurate
from grader.results import CaseResult, Comparison, ComparisonKind, FailureKind, Mismatch, Status
from scenarios import submission

VALUES = ComparisonKind.VALUES


def record(dtype: str, error: float | None = None, *, size: float = 1.0, kind=VALUES, hidden=False,
           diagnosis="", failure=FailureKind.WRONG_ANSWER, status=Status.FAILED) -> CaseResult:
    """A case whose one output of `dtype` passed (error None) or missed by `error` where the values
    are about `size`."""
    if error is None:
        comp = Comparison(name="out", ok=True, kind=ComparisonKind.OK, expected_dtype=dtype, max_abs_error=0.0)
        return CaseResult(name=f"{dtype} ok", status=Status.PASSED, comparisons=(comp,), hidden=hidden)
    comp = Comparison(name="out", ok=False, kind=kind, expected_dtype=dtype, dtype=dtype, max_abs_error=error,
                      mismatches=(Mismatch((0,), size + error, size), Mismatch((1,), -size / 2, -size / 2 - error)))
    return CaseResult(name=f"{dtype} off by {error:g}", status=status, comparisons=(comp,), hidden=hidden,
                      diagnosis=diagnosis, failure=failure)


F32_PASS = [record("float32"), record("float32"), record("float32")]


def test_a_float64_miss_of_float32_size_with_float32_cases_passing_is_named():
    cases = [*F32_PASS, record("float64", 1e-7)]
    out = annotate(cases)
    assert [c.diagnosis for c in out] == ["", "", "", FLOAT32]
    assert FLOAT32.startswith("float32 precision: your result is only float32-accurate: something converts to "
                              "float32 (a `.float()`, a float32 constant tensor, `torch.tensor(...)` without dtype)")
    assert "a constant is written with a few digits (1.414214 for the square root of 2: write math.sqrt(2)" in FLOAT32
    # scaled by the values: 1e-3 on values of 1e4 is float32's size; on values of 1 it is not
    assert float32_accurate([*F32_PASS, record("float64", 1e-3, size=1e4)])
    assert not float32_accurate([*F32_PASS, record("float64", 1e-3)])


@pytest.mark.parametrize("cases", [
    [*F32_PASS, record("float64", 0.05)],                              # a wrong formula: far beyond float32
    [*F32_PASS, record("float64", 2 * FLOAT32_BAND[1])],
    [*F32_PASS, record("float64", FLOAT32_BAND[0] / 10)],               # a float64 matter, not float32
    [record("float32"), record("float32", 1e-3), record("float64", 1e-7)],   # a float32 case fails too
    [record("float64", 1e-7), record("float64", 1e-7)],                 # no float32 case to compare with
    [*F32_PASS, record("float64", 1e-7, diagnosis="eps inside the square root: ...")],   # a named mistake
    [*F32_PASS, record("float64", 1e-7), record("float64", 2e-7, diagnosis="log(p + 1e-7): ...")],
    [*F32_PASS, record("float64", 1e-7, kind=ComparisonKind.NONFINITE)],
    [*F32_PASS, record("float64", 1e-7, kind=ComparisonKind.SHAPE)],
    [*F32_PASS, record("float64", 1e-7, failure=FailureKind.MODIFIED_INPUT)],
    [*F32_PASS, record("float64", 1e-7, status=Status.ERROR, failure=FailureKind.EXCEPTION)],
    [*F32_PASS, record("float64", 1e-7), record("float64", 1e-7, hidden=True, kind=ComparisonKind.NONFINITE)],
    [*F32_PASS, record("float64", 1e-7), record("", 1, hidden=True), record("", 1, hidden=True)],
    [*F32_PASS],                                                       # everything passed: nothing to say
], ids=["wrong formula", "above the band", "below the band", "float32 fails", "no float32 case",
        "known mistake", "known mistake elsewhere", "NaN", "shape", "modified input", "exception",
        "hidden NaN", "hidden fails more", "all pass"])
def test_nothing_else_is_called_float32(cases):
    assert not float32_accurate(cases)
    assert annotate(cases) == cases


def test_hidden_cases_are_not_annotated_and_may_fail_alike():
    hidden = CaseResult(name="hidden 4", status=Status.FAILED, hidden=True, failure=FailureKind.WRONG_ANSWER,
                        comparisons=(Comparison(name="out", ok=False, kind=VALUES, problem="values differ"),))
    out = annotate([*F32_PASS, record("float64", 1e-7), *[record("float32", hidden=True)] * 3, hidden])
    assert out[3].diagnosis == FLOAT32 and out[-1].diagnosis == ""


# ------------------------------------------------------------------------------------------ end to end
def float32_cases(exercise):
    return [c for c in exercise.cases if {x.expected_dtype for x in c.comparisons} - {"", "int64"} == {"float32"}]


def test_a_float32_router_is_diagnosed_on_its_float64_case(grade_dir):
    (e,) = grade_dir(submission("precision_float32_router"), "moe.moe_forward").exercises
    assert e.status is Status.FAILED and e.diagnosis == FLOAT32, (e.status, e.message)
    assert float32_cases(e) and all(c.status is Status.PASSED for c in float32_cases(e))
    (failed,) = [c for c in e.cases if c.status is not Status.PASSED]
    assert failed.name.startswith("float64") and failed.diagnosis == FLOAT32
    assert e.points == round(e.max_points * (len(e.cases) - 1) / len(e.cases), 2)


# (exercise id, variant in tests/fixtures/mistakes/, the known mistake it is named as)
HABITS = [
    ("mlp.adam_step", "eps_in_sqrt", "eps inside the square root"),
    ("mlp.adam_step", "eps_on_raw_v", "eps added to v before the bias correction"),
    ("mlp.adam_step", "eps_on_sqrt_v", "eps added to sqrt(v), not sqrt(v_hat)"),
    ("losses.cross_entropy", "log_eps", "log(p + 1e-7)"),
]


@pytest.fixture(scope="module")
def habits(tmp_path_factory, grade_dir):
    return grade_variants(tmp_path_factory, grade_dir, [(e, v) for e, v, _ in HABITS], "habits_")


@pytest.mark.parametrize("habit", HABITS, ids=[v for _, v, _ in HABITS])
def test_precision_habits_get_their_named_diagnosis(habits, habit):
    exercise, variant, name = habit
    e = habits[(exercise, variant)]
    assert e.status is Status.FAILED and e.diagnosis.startswith(name + ":"), (e.diagnosis, e.message)
    assert all(c.diagnosis != FLOAT32 for c in e.cases)
    # a float32 case shows it: the named mistake does not hide behind float64's tolerance
    assert any(c.status is Status.FAILED and c.diagnosis.startswith(name) for c in float32_cases(e))


WRONG_MOE = {
    "temperature": """
def moe_forward(X, router_W, experts, k):
    top, idx = torch.topk(X @ router_W, k, dim=-1)
    gates = torch.softmax(top / 2, dim=-1)
    outs = torch.stack([feed_forward(X, e["W1"], e["b1"], e["W2"], e["b2"]) for e in experts], dim=-2)
    chosen = torch.gather(outs, -2, idx.unsqueeze(-1).expand(*idx.shape, outs.shape[-1]))
    return (gates.unsqueeze(-1) * chosen).sum(-2)
""",
    "float64 only, 1% off": """
def moe_forward(X, router_W, experts, k):
    top, idx = torch.topk(X @ router_W, k, dim=-1)
    gates = torch.softmax(top, dim=-1) * (0.99 if X.dtype == torch.float64 else 1.0)
    outs = torch.stack([feed_forward(X, e["W1"], e["b1"], e["W2"], e["b2"]) for e in experts], dim=-2)
    chosen = torch.gather(outs, -2, idx.unsqueeze(-1).expand(*idx.shape, outs.shape[-1]))
    return (gates.unsqueeze(-1) * chosen).sum(-2)
""",
    "softmax over all experts": mistake_source("moe", "softmax_all"),
}


@pytest.mark.parametrize("wrong", list(WRONG_MOE))
def test_a_wrong_formula_is_not_called_float32(grade_dir, make_submission, wrong):
    (e,) = grade_dir(make_submission({"moe.moe_forward": WRONG_MOE[wrong]}), "moe.moe_forward").exercises
    assert e.status is Status.FAILED, e.message
    assert e.diagnosis != FLOAT32 and all(c.diagnosis != FLOAT32 for c in e.cases), e.diagnosis
    if wrong == "softmax over all experts":
        assert e.diagnosis.startswith("softmax over all experts:")


PRECISION_EXERCISES = ("mlp.adam_step", "losses.cross_entropy", "moe.moe_forward")


@pytest.mark.parametrize("folder", ["solutions", *sorted(p.name for m in ("mlp", "losses", "moe")
                                                         for p in (FIXTURES / "submissions").glob(f"alt_{m}_*"))])
def test_solutions_get_full_marks_and_no_precision_diagnosis(grade_dir, tmp_path, folder):
    if folder == "solutions":
        path = SOLUTIONS
    else:                      # an alternative laid over the solutions (moe.py imports transformer)
        path = tmp_path / folder
        shutil.copytree(SOLUTIONS, path)
        for f in (FIXTURES / "submissions" / folder).glob("*.py"):
            shutil.copy(f, path / f.name)
    modules = {f.stem for f in (FIXTURES / "submissions" / folder).glob("*.py")} if folder != "solutions" else None
    names = [x for x in PRECISION_EXERCISES if modules is None or x.split(".")[0] in modules]
    result = grade_dir(path, *names)
    assert {e.id for e in result.exercises} == set(names)
    for e in result.exercises:
        assert e.status is Status.PASSED and e.points == e.max_points, (folder, e.id, e.message)
        assert e.diagnosis == "" and all(c.diagnosis == "" for c in e.cases), (folder, e.id, e.diagnosis)
