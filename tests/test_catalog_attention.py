"""The attention chapter: causal masks, scaled dot-product attention, multi-head attention and
positional encoding, graded end to end.

What every chapter checks (solutions, stubs, known mistakes) is tests/chapter_checks.py; here are
the chapter's table and what only it does: multi-head attention is graded with the reference SDPA
(one bug is charged once), and a failing case reports where and by how much.
"""
from chapter_checks import ChapterChecks
from conftest import mistake_source

# (exercise id, variant in tests/fixtures/mistakes/attention.py, diagnosis the grader must give)
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
    ("attention.scaled_dot_product_attention", "mask_ignored", "mask ignored"),
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


class TestAttention(ChapterChecks):
    MODULE, MISTAKES = "attention", MISTAKES
    SLOW_VARIANTS = False

    def test_failing_case_reports_where_and_by_how_much(self, variants_result):
        e = variants_result[("attention.scaled_dot_product_attention", "wrong_dim")]
        case = next(c for c in e.cases if c.status.value == "failed")
        weights = next(c for c in case.comparisons if c.name == "weights")
        assert not weights.ok and weights.max_abs_error > 1e-3 and weights.worst_index is not None
        assert 0 < weights.mismatch_fraction <= 1 and weights.mismatches
        assert "weights wrong" in case.message and "Q: (" in case.description
        assert case.heatmaps and case.heatmaps[0].title.startswith("weights")


def test_mha_is_graded_with_the_reference_sdpa(grade_dir, make_submission):
    """A wrong SDPA costs the SDPA exercise only; MHA (which calls it) still passes, and says why."""
    sub = make_submission({"attention.scaled_dot_product_attention": mistake_source("attention", "no_scale")})
    result = grade_dir(sub, "attention.scaled_dot_product_attention", "attention.multi_head_attention")
    by_id = {e.id: e for e in result.exercises}
    assert by_id["attention.scaled_dot_product_attention"].status.value == "failed"
    mha = by_id["attention.multi_head_attention"]
    assert mha.status.value == "passed"
    assert any("reference scaled_dot_product_attention in place of yours" in n for n in mha.notes)
