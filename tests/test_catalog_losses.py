"""The losses chapter, graded end to end: mean squared error and cross-entropy, each with its
gradient written by hand.

What every chapter checks (solutions, stubs, known mistakes, forbidden APIs, independent
solutions) is tests/chapter_checks.py; here are the chapter's tables and what its cases must
hold (float64, and logits large enough to overflow a naive softmax).
"""
from __future__ import annotations

from chapter_checks import AlternativeChecks, ChapterChecks, ForbiddenChecks, largest_first_input, without_float64_case


# (exercise id, variant in tests/fixtures/mistakes/losses.py, diagnosis the grader must give)
MISTAKES = [
    ("losses.mse_loss", "summed", "summed, not averaged"),
    ("losses.mse_loss", "per_batch", "averaged over the batch only"),
    ("losses.mse_loss", "absolute", "absolute error, not squared"),
    ("losses.mse_loss", "rmse", "square root taken (RMSE)"),
    ("losses.mse_loss_grad", "no_two", "factor 2 missing"),
    ("losses.mse_loss_grad", "no_mean", "not divided by N"),
    ("losses.mse_loss_grad", "wrong_sign", "sign flipped"),
    ("losses.mse_loss_grad", "batch_only", "divided by the batch size only"),
    ("losses.cross_entropy", "summed", "summed, not averaged"),
    ("losses.cross_entropy", "log_softmax_via_log", "log of softmax"),
    ("losses.cross_entropy", "no_shift", "max not subtracted"),
    ("losses.cross_entropy", "positive_log_likelihood", "minus sign missing"),
    ("losses.cross_entropy", "softmax_dim0", "softmax over the batch"),
    ("losses.cross_entropy", "log_eps", "log(p + 1e-7)"),
    ("losses.cross_entropy_grad", "no_batch_mean", "not divided by B"),
    ("losses.cross_entropy_grad", "onehot_minus_p", "sign flipped"),
    ("losses.cross_entropy_grad", "unstable", "max not subtracted"),
    ("losses.cross_entropy_grad", "no_onehot", "one-hot not subtracted"),
]

# (exercise id, variant, how it is caught: "static" before running, or "run" while running)
FORBIDDEN = [
    ("losses.mse_loss", "uses_f_mse", "static"),
    ("losses.mse_loss_grad", "autograd", "run"),               # .requires_grad_() / .backward(): Tensor methods
    ("losses.cross_entropy", "uses_nll_loss", "static"),
    ("losses.cross_entropy", "aten_nll", "run"),                # torch.ops.aten.nll_loss_forward: ATen net
]


class TestLosses(ChapterChecks, ForbiddenChecks, AlternativeChecks):
    MODULE, MISTAKES, FORBIDDEN = "losses", MISTAKES, FORBIDDEN


def test_cases_include_float64_and_large_magnitudes():
    missing = without_float64_case("losses")
    assert not missing, f"no float64 case: {missing}"
    assert largest_first_input("losses.cross_entropy") >= 1e4
