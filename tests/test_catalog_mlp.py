"""The mlp chapter, graded end to end: linear layers forward and backward, the optimisers, Glorot
initialisation, gradient clipping, and a network trained on XOR with the student's own blocks.

What every chapter checks (solutions, stubs, known mistakes, forbidden APIs, judged variants,
independent solutions) is tests/chapter_checks.py; here are the chapter's tables and what only
it does: a backward pass reports each gradient, glorot_uniform is judged statistically, and
train_xor's building blocks are seen called however its training reaches them.
"""
from __future__ import annotations

import math

import pytest
import torch

from chapter_checks import (AlternativeChecks, ChapterChecks, ForbiddenChecks, JudgedChecks, first_failure_verdicts,
                            short_of_full_marks, without_float64_case)
from grader.catalog import catalog
from grader.catalog.judges import glorot
from grader.catalog.spec import Case
from scenarios import submission


# (exercise id, variant in tests/fixtures/mistakes/mlp.py, diagnosis the grader must give)
MISTAKES = [
    ("mlp.linear_forward", "no_bias", "bias missing"),
    ("mlp.linear_forward", "transposed", "W transposed"),
    ("mlp.linear_forward", "with_relu", "activation applied"),
    ("mlp.linear_backward", "dw_transposed", "dW transposed"),
    ("mlp.linear_backward", "dw_per_instance", "dW not summed over the batch"),
    ("mlp.linear_backward", "dw_mean", "dW averaged over the batch"),
    ("mlp.linear_backward", "db_unsummed", "db not summed over the batch"),
    ("mlp.linear_backward", "db_mean", "db averaged over the batch"),
    ("mlp.linear_backward", "dx_untransposed", "dX with W instead of W^T"),
    ("mlp.mlp_forward", "relu_on_logits", "ReLU after the last layer"),
    ("mlp.mlp_forward", "linear_only", "no ReLU between layers"),
    ("mlp.mlp_forward", "softmax_output", "softmax applied to the output"),
    ("mlp.mlp_backward", "summed_loss", "loss summed, not averaged"),
    ("mlp.mlp_backward", "no_relu_mask", "ReLU derivative missing"),
    ("mlp.mlp_backward", "db_per_instance", "db not summed over the batch"),
    ("mlp.mlp_backward", "backwards_list", "grads in reverse order"),
    ("mlp.sgd_step", "ascent", "gradient ascent (sign flipped)"),
    ("mlp.sgd_step", "no_lr", "learning rate ignored"),
    ("mlp.sgd_step", "weights_only", "biases not updated"),
    ("mlp.momentum_step", "dampened", "momentum with dampening"),
    ("mlp.momentum_step", "lr_in_velocity", "lr inside the velocity"),
    ("mlp.momentum_step", "descent_velocity", "velocity with the opposite sign"),
    ("mlp.momentum_step", "fresh_velocity", "velocity not carried over"),
    ("mlp.adam_step", "uncorrected", "no bias correction"),
    ("mlp.adam_step", "eps_in_sqrt", "eps inside the square root"),
    ("mlp.adam_step", "swapped_betas", "betas swapped"),
    ("mlp.adam_step", "t_after_correction", "bias correction with the old t"),
    ("mlp.adam_step", "eps_on_raw_v", "eps added to v before the bias correction"),
    ("mlp.adam_step", "eps_on_sqrt_v", "eps added to sqrt(v), not sqrt(v_hat)"),
    ("mlp.glorot_uniform", "fan_in_only", "bound with fan_in only"),
    ("mlp.glorot_uniform", "std_bound", "the normal's std used as the bound"),
    ("mlp.glorot_uniform", "positive_only", "U[0, a) instead of U[-a, a)"),
    ("mlp.glorot_uniform", "gaussian", "normal instead of uniform"),
    ("mlp.clip_grad_norm", "per_tensor", "each tensor clipped separately"),
    ("mlp.clip_grad_norm", "always_rescale", "always rescaled to max_norm"),
    ("mlp.clip_grad_norm", "squared_norm", "norm without the square root"),
    ("mlp.clip_grad_norm", "clamp_values", "values clamped elementwise"),
]

# (exercise id, variant, how it is caught: "static" before running, or "run" while running)
FORBIDDEN = [
    ("mlp.linear_forward", "uses_f_linear", "static"),
    ("mlp.linear_backward", "autograd", "static"),
    ("mlp.sgd_step", "uses_torch_optim", "static"),
    ("mlp.glorot_uniform", "uses_xavier", "static"),
    ("mlp.train_xor", "uses_backward", "static"),
    ("mlp.adam_step", "fused_kernel", "run"),
    ("mlp.clip_grad_norm", "private_helpers", "run"),
]

# (exercise id, variant, phrase the behavioural/statistical judge must say on a failing case)
JUDGED = [
    ("mlp.glorot_uniform", "ignores_generator", "the same seed gave a different matrix"),
    ("mlp.train_xor", "hand_set", "train with your own building blocks"),
    ("mlp.train_xor", "hand_set_behind_failed_calls", "one that raised does not count"),
    ("mlp.train_xor", "global_rng", "two calls with the same seed returned different params"),
    ("mlp.train_xor", "one_step", "of XOR's 4 points right"),
    ("mlp.sgd_step", "in_place", "modified its input in place"),
    ("mlp.momentum_step", "in_place", "modified its input in place"),
]


class TestMlp(ChapterChecks, ForbiddenChecks, JudgedChecks, AlternativeChecks):
    MODULE, MISTAKES, FORBIDDEN, JUDGED = "mlp", MISTAKES, FORBIDDEN, JUDGED

    @pytest.mark.slow
    def test_linear_backward_reports_each_gradient(self, variants_result):
        verdicts = first_failure_verdicts(variants_result[("mlp.linear_backward", "db_unsummed")])
        assert verdicts == {"dX": True, "dW": True, "db": False}

    @pytest.mark.slow
    @pytest.mark.parametrize("exercise", ["mlp.sgd_step", "mlp.momentum_step"])
    def test_a_step_in_place_is_said_to_be_in_place_not_wrong(self, variants_result, exercise):
        """Each step's result is recorded as it returned: later steps updating the same tensors in
        place do not make the earlier steps' right values look wrong (they all showed the last step's)."""
        e = variants_result[(exercise, "in_place")]
        assert all(c.message.startswith("modified its input in place") and "wrong" not in c.message
                   for c in e.cases), [c.message for c in e.cases]


def test_train_xor_building_blocks_reached_without_their_names_are_seen_called(grade_dir):
    """A default argument bound to mlp_backward, a dict of step functions made after train_xor:
    a correct training all the same, given full marks (counted by name it was "calls seen: all 0")."""
    result = grade_dir(submission("train_xor_bound_blocks"), "mlp.train_xor")
    assert [e.id for e in result.exercises] == ["mlp.train_xor"]
    assert not short_of_full_marks(result)


def test_cases_include_float64():
    missing = without_float64_case("mlp", exempt=("glorot_uniform", "train_xor"))
    assert not missing, f"no float64 case: {missing}"


def _glorot_value(fan_in, fan_out, seeds, draw):
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    draws = torch.stack([draw(fan_in, fan_out, g) for g in gens])
    return {"draws": draws, "again": draw(fan_in, fan_out, torch.Generator().manual_seed(seeds[0])),
            "default": draw(fan_in, fan_out, None)}


def _uniform(fan_in, fan_out, g, bound=None):
    a = glorot.bound(fan_in, fan_out) if bound is None else bound
    return torch.empty(fan_in, fan_out).uniform_(-a, a, generator=g)


def test_glorot_test_accepts_correct_draws_and_rejects_wrong_bounds():
    """The statistical judge on draws made in-process: 40 independent correct sets pass (a false
    failure here would mean the thresholds are far tighter than the stated 1e-4), while wrong
    distributions drawn differently from the fingerprints (uniform_ rather than rand) still fail."""
    spec = catalog()["mlp.glorot_uniform"]
    assert glorot.FALSE_FAIL <= 1e-4 and "below 1e-4" in spec.reference_source
    for k in range(40):
        fan_in, fan_out = (256, 128) if k % 2 else (3, 5)
        seeds = list(range(1000 * k, 1000 * k + (4 if k % 2 else 2000)))
        case = Case("correct", (fan_in, fan_out), {"generator": seeds})
        value = _glorot_value(fan_in, fan_out, seeds, _uniform)
        verdict = spec.judge(case, value, spec.reference(fan_in, fan_out, [0]), spec.tol)
        assert verdict.ok, verdict.message
    wrong = {
        "fan_in only": lambda i, o, g: _uniform(i, o, g, math.sqrt(6 / i)),
        "std as bound": lambda i, o, g: _uniform(i, o, g, math.sqrt(2 / (i + o))),
        "bound 1.1 a": lambda i, o, g: _uniform(i, o, g, 1.1 * glorot.bound(i, o)),
        "normal": lambda i, o, g: torch.randn(i, o, generator=g) * math.sqrt(2 / (i + o)),
        "U[0, a)": lambda i, o, g: _uniform(i, o, g).abs(),
    }
    for fan_in, fan_out, n in ((256, 128, 4), (100, 300, 4), (3, 5, 2000)):
        seeds = list(range(n))
        case = Case("wrong", (fan_in, fan_out), {"generator": seeds})
        ref = spec.reference(fan_in, fan_out, [0])
        for name, draw in wrong.items():
            verdict = spec.judge(case, _glorot_value(fan_in, fan_out, seeds, draw), ref, spec.tol)
            assert not verdict.ok, (name, fan_in, fan_out)
    # the message names the likely bound
    case = spec.cases(torch.Generator().manual_seed(0))[0]
    value = _glorot_value(256, 128, case.kwargs["generator"], wrong["fan_in only"])
    assert "sqrt(6 / fan_in)" in spec.judge(case, value, spec.reference(256, 128, [0]), spec.tol).message
