"""The neurons chapter, graded end to end: the perceptron of the pizza story, step by step.

What every chapter checks (solutions, stubs, known mistakes, forbidden APIs, independent
solutions) is tests/chapter_checks.py; here are the chapter's tables and what only its judge
does: perceptron_fit is judged by the accuracy its weights reach, and step for step.
"""
from __future__ import annotations

import torch

from chapter_checks import AlternativeChecks, ChapterChecks, ForbiddenChecks
from grader.catalog import catalog
from grader.catalog.chapters import neurons as neurons_spec

# (exercise id, variant in tests/fixtures/mistakes/neurons.py, diagnosis the grader must give)
MISTAKES = [
    ("neurons.heaviside", "strict", "strict threshold (z > 0)"),
    ("neurons.heaviside", "bool_mask", "bool output"),
    ("neurons.heaviside", "minus_one", "-1 for negative inputs"),
    ("neurons.sign", "zero_positive", "sign(0) = +1"),
    ("neurons.sign", "zero_negative", "sign(0) = -1"),
    ("neurons.sign", "integers", "integer output"),
    ("neurons.sign", "like_heaviside", "heaviside instead of sign"),
    ("neurons.perceptron_forward", "ignores_step", "step argument ignored"),
    ("neurons.perceptron_forward", "no_bias", "bias missing"),
    ("neurons.perceptron_forward", "no_step", "step not applied"),
    ("neurons.perceptron_update", "flipped", "update with the sign flipped"),
    ("neurons.perceptron_update", "frozen_bias", "bias not updated"),
    ("neurons.perceptron_update", "hebbian", "update by the target, not the error"),
    ("neurons.perceptron_update", "no_lr", "learning rate ignored"),
    ("neurons.perceptron_update", "strict_threshold", "strict threshold (z > 0)"),
    ("neurons.perceptron_fit", "sign_error", "update with the sign flipped"),
    ("neurons.perceptron_fit", "no_bias_learning", "bias not learned"),
    ("neurons.perceptron_fit", "single_pass", "one pass only"),
    ("neurons.perceptron_fit", "batch", "one update per epoch (batch rule)"),
    ("neurons.perceptron_fit", "fires_above_zero", "strict threshold (z > 0)"),
]

# (exercise id, variant, how it is caught: "static" before running, or "run" while running)
FORBIDDEN = [
    ("neurons.heaviside", "uses_torch_heaviside", "static"),
    ("neurons.heaviside", "getattr_heaviside", "run"),          # getattr(torch, "heav" + "iside"): tripwire
]


class TestNeurons(ChapterChecks, ForbiddenChecks, AlternativeChecks):
    MODULE, MISTAKES, FORBIDDEN = "neurons", MISTAKES, FORBIDDEN


def test_perceptron_fit_reaches_100_percent_on_separable_data_and_not_on_xor():
    spec = catalog()["neurons.perceptron_fit"]
    for case in spec.cases(torch.Generator().manual_seed(7)):
        X, Y = case.args[:2]
        W, b = spec.reference(*case.args)
        acc = neurons_spec.accuracy(X, Y, W, b)
        verdict = spec.judge(case, (W, b), (W, b), spec.tol)
        assert verdict.ok, (case.name, verdict.message)
        if case.note.startswith("separable"):
            assert acc == 1.0, case.name
        if case.name == "XOR":
            assert acc < 1.0 and "training accuracy 50%" in verdict.message
    # weights that agree with the rule but are then perturbed fail the step-for-step comparison
    case = spec.cases(torch.Generator().manual_seed(7))[0]
    W, b = spec.reference(*case.args)
    assert not spec.judge(case, (W + 0.5, b), (W, b), spec.tol).ok
