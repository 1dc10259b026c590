"""The activations chapter, graded end to end: each activation and its derivative, stable for
large inputs (the softmax that overflows is the classic mistake).

What every chapter checks (solutions, stubs, known mistakes, forbidden APIs, independent
solutions) is tests/chapter_checks.py; here are the chapter's tables, what its cases must hold
(float64 and large magnitudes) and how an overflow is reported.
"""
from __future__ import annotations

import pytest

from chapter_checks import AlternativeChecks, ChapterChecks, ForbiddenChecks, largest_first_input, without_float64_case


# (exercise id, variant in tests/fixtures/mistakes/activations.py, diagnosis the grader must give)
MISTAKES = [
    ("activations.sigmoid", "exp_ratio", "exp(z) / (1 + exp(z)) overflows"),
    ("activations.sigmoid", "plus_exp", "sign of z flipped"),
    ("activations.sigmoid", "precedence", "operator precedence: 1 / 1 + exp(-z)"),
    ("activations.sigmoid_grad", "overflow", "exp(-z) / (1 + exp(-z))^2 overflows"),
    ("activations.sigmoid_grad", "sigmoid_only", "(1 - sigmoid) factor missing"),
    ("activations.sigmoid_grad", "tanh_formula", "tanh's derivative formula"),
    ("activations.tanh", "textbook", "(exp(z) - exp(-z)) / (exp(z) + exp(-z)) overflows"),
    ("activations.tanh", "half_stable", "(1 - exp(-2z)) / (1 + exp(-2z)) overflows for negative z"),
    ("activations.tanh", "sigmoid_of_z", "2 sigmoid(z) - 1"),
    ("activations.tanh_grad", "no_square", "square missing"),
    ("activations.tanh_grad", "negative", "sign flipped"),
    ("activations.tanh_grad", "sigmoid_form", "sigmoid's derivative formula"),
    ("activations.relu", "mask", "returned the mask z > 0"),
    ("activations.relu", "minimum", "min instead of max"),
    ("activations.relu", "abs", "absolute value"),
    ("activations.relu_grad", "one_at_zero", "derivative 1 at z = 0"),
    ("activations.relu_grad", "bool", "bool output"),
    ("activations.relu_grad", "relu_itself", "returned relu(z)"),
    ("activations.leaky_relu", "fixed_slope", "slope ignored"),
    ("activations.leaky_relu", "plain_relu", "negative side zeroed (plain relu)"),
    ("activations.leaky_relu", "slope_positive", "slope on the positive side"),
    ("activations.leaky_relu_grad", "lgrad_one_at_zero", "derivative 1 at z = 0"),
    ("activations.leaky_relu_grad", "lgrad_fixed_slope", "slope ignored"),
    ("activations.leaky_relu_grad", "lgrad_zero_left", "0 on the negative side"),
    ("activations.elu", "no_alpha", "alpha ignored"),
    ("activations.elu", "no_minus_one", "-1 missing"),
    ("activations.elu", "exp_everywhere", "exponential branch for every z"),
    ("activations.elu_grad", "egrad_one_at_zero", "derivative 1 at z = 0"),
    ("activations.elu_grad", "egrad_no_alpha", "alpha ignored"),
    ("activations.elu_grad", "egrad_elu", "elu(z) instead of its derivative"),
    ("activations.gelu", "tanh_approx", "tanh approximation"),
    ("activations.gelu", "sigmoid_approx", "sigmoid approximation"),
    ("activations.gelu", "erf_no_sqrt2", "erf(z) without the 1/sqrt(2)"),
    ("activations.gelu_grad", "cdf_only", "z * phi(z) term missing"),
    ("activations.gelu_grad", "tanh_derivative", "derivative of the tanh approximation"),
    ("activations.gelu_grad", "density_unscaled", "density without 1/sqrt(2 pi)"),
    ("activations.softmax", "naive", "max not subtracted"),
    ("activations.softmax", "global_max", "max over the whole tensor"),
    ("activations.softmax", "last_dim", "dim ignored (always the last)"),
    ("activations.softmax", "whole_tensor", "normalised over the whole tensor"),
    ("activations.log_softmax", "log_of_softmax", "log of softmax"),
    ("activations.log_softmax", "no_shift", "max not subtracted"),
    ("activations.log_softmax", "global_shift", "max over the whole tensor"),
    ("activations.log_softmax", "ls_last_dim", "dim ignored (always the last)"),
]

# (exercise id, variant, how it is caught: "static" before running, or "run" while running)
FORBIDDEN = [
    ("activations.sigmoid", "getattr_sigmoid", "run"),
    ("activations.sigmoid_grad", "autograd", "run"),           # z.requires_grad_() / .backward(): Tensor methods
    ("activations.tanh_grad", "hidden_autograd", "run"),        # requires_grad_ / autograd.grad via getattr
    ("activations.relu", "aliased_relu", "static"),             # `import torch.nn.functional as nnf` resolved
    ("activations.softmax", "uses_torch_softmax", "static"),
    ("activations.softmax", "aten_softmax", "run"),             # torch.ops.aten._softmax: ATen net
    ("activations.log_softmax", "uses_logsumexp", "static"),
]


class TestActivations(ChapterChecks, ForbiddenChecks, AlternativeChecks):
    MODULE, MISTAKES, FORBIDDEN = "activations", MISTAKES, FORBIDDEN

    @pytest.mark.slow
    def test_softmax_overflow_is_reported_as_nan(self, variants_result):
        e = variants_result[("activations.softmax", "naive")]
        large = next(c for c in e.cases if c.name == "logits 1e4")
        assert large.status.value == "failed" and "NaN" in large.message
        assert all(c.status.value == "passed" for c in e.cases if c.name in ("(4, 5), last dim", "dim=0"))


def test_cases_include_float64_and_large_magnitudes():
    missing = without_float64_case("activations")
    assert not missing, f"no float64 case: {missing}"
    for exercise in ("activations.softmax", "activations.log_softmax"):
        assert largest_first_input(exercise) >= 1e4, exercise
