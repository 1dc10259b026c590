"""The attention chapter: solutions score full marks, stubs zero, every fingerprint is named,
and multi-head attention is graded with the reference SDPA (one bug is charged once)."""
import pytest

from conftest import SOLUTIONS, ROOT, mistake_source, statuses
from grader.catalog import select

ATTENTION = [s.id for s in select(["attention"])]


@pytest.fixture(scope="module")
def solutions_result(grade_dir):
    return grade_dir(SOLUTIONS, "attention")


def test_solutions_score_full_marks(solutions_result):
    assert statuses(solutions_result) == {i: "passed" for i in ATTENTION}
    assert solutions_result.score == solutions_result.max_score > 0


def test_stubs_score_zero_with_a_clear_message(grade_dir):
    result = grade_dir(ROOT / "exercises", "attention")
    assert result.score == 0
    for e in result.exercises:
        assert e.status.value == "not implemented", e.id
        assert e.message.startswith("not implemented yet"), e.message
        assert "Traceback" not in e.message and "File " not in e.message


MISTAKES = [
    ("attention.causal_mask", "diagonal_excluded", "diagonal excluded"),
    ("attention.causal_mask", "inverted", "mask inverted"),
    ("attention.causal_mask", "transposed", "mask transposed"),
    ("attention.causal_mask", "float", "float mask"),
    ("attention.scaled_dot_product_attention", "no_scale", "missing 1/sqrt(d_k)"),
    ("attention.scaled_dot_product_attention", "scale_d_k", "scaled by d_k instead of sqrt(d_k)"),
    ("attention.scaled_dot_product_attention", "scale_d_v", "scaled by sqrt(d_v)"),
    ("attention.scaled_dot_product_attention", "wrong_dim", "softmax over the wrong dim"),
    ("attention.scaled_dot_product_attention", "mask_inverted", "mask inverted"),
    ("attention.scaled_dot_product_attention", "masked_zero", "masked scores set to 0 instead of -inf"),
    ("attention.scaled_dot_product_attention", "mask_transposed", "mask transposed"),
    ("attention.multi_head_attention", "no_transpose", "heads split without a transpose"),
    ("attention.multi_head_attention", "merge_no_transpose", "heads merged without a transpose"),
    ("attention.multi_head_attention", "no_output_projection", "missing output projection"),
    ("attention.multi_head_attention", "no_bias", "biases missing"),
    ("attention.multi_head_attention", "sqrt_d_model", "scaled by sqrt(d_model)"),
    ("attention.positional_encoding", "swapped", "sin and cos swapped"),
    ("attention.positional_encoding", "exponent_i", "exponent i instead of 2i"),
    ("attention.positional_encoding", "column_exponent", "each column its own frequency"),
    ("attention.positional_encoding", "halves", "sin and cos in halves"),
    ("attention.positional_encoding", "start_at_one", "positions start at 1"),
]


@pytest.mark.parametrize("exercise,variant,diagnosis", MISTAKES, ids=[f"{m[0].split('.')[1]}-{m[1]}" for m in MISTAKES])
def test_fingerprinted_mistake_is_named(grade_dir, make_submission, exercise, variant, diagnosis):
    function = exercise.split(".")[1]
    sub = make_submission({exercise: mistake_source("attention", f"{function}__{variant}")})
    (e,) = grade_dir(sub, exercise).exercises
    assert e.status.value in ("failed", "error")      # a transposed (T_q, T_k) mask cannot even broadcast
    assert e.points < e.max_points
    assert e.diagnosis.startswith(diagnosis + ":"), e.diagnosis


def test_mha_is_graded_with_the_reference_sdpa(grade_dir, make_submission):
    """A wrong SDPA costs the SDPA exercise only; MHA (which calls it) still passes, and says why."""
    sub = make_submission({"attention.scaled_dot_product_attention": mistake_source("attention", "no_scale")})
    result = grade_dir(sub, "attention.scaled_dot_product_attention", "attention.multi_head_attention")
    by_id = {e.id: e for e in result.exercises}
    assert by_id["attention.scaled_dot_product_attention"].status.value == "failed"
    mha = by_id["attention.multi_head_attention"]
    assert mha.status.value == "passed"
    assert any("reference scaled_dot_product_attention in place of yours" in n for n in mha.notes)


def test_failing_case_reports_where_and_by_how_much(grade_dir, make_submission):
    sub = make_submission({"attention.scaled_dot_product_attention": mistake_source("attention", "wrong_dim")})
    (e,) = grade_dir(sub, "attention.scaled_dot_product_attention").exercises
    case = next(c for c in e.cases if c.status.value == "failed")
    weights = next(c for c in case.comparisons if c.name == "weights")
    assert not weights.ok and weights.max_abs_error > 1e-3 and weights.worst_index is not None
    assert 0 < weights.mismatch_fraction <= 1 and weights.mismatches
    assert "weights wrong" in case.message and "Q: (" in case.description
    assert case.heatmaps and case.heatmaps[0].title.startswith("weights")
