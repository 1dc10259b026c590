"""The rnn chapter, graded end to end: the recurrent cell, its forward pass over a sequence (the
Dogecoin prices), and backpropagation through time written by hand.

What every chapter checks (solutions, stubs, known mistakes, forbidden APIs, localised variants,
independent solutions) is tests/chapter_checks.py; here are the chapter's tables, its edge cases
and how a wrong BPTT reports each gradient.
"""
from __future__ import annotations

import pytest

from chapter_checks import (AlternativeChecks, ChapterChecks, ForbiddenChecks, LocalisedChecks,
                            first_failure_verdicts, missing_sequence_edge_cases)


# (exercise id, variant in tests/fixtures/mistakes/rnn.py, diagnosis the grader must give)
MISTAKES = [
    ("rnn.rnn_cell", "no_tanh", "tanh missing"),
    ("rnn.rnn_cell", "sigmoid", "sigmoid instead of tanh"),
    ("rnn.rnn_cell", "relu", "ReLU instead of tanh"),
    ("rnn.rnn_cell", "no_bias", "bias missing"),
    ("rnn.rnn_forward", "reset_each_step", "state reset every step"),
    ("rnn.rnn_forward", "zeros_init", "initial state ignored"),
    ("rnn.rnn_forward", "shifted", "H shifted by one step"),
    ("rnn.rnn_bptt", "no_next_grad", "gradient from the next step not added"),
    ("rnn.rnn_bptt", "no_tanh_grad", "tanh derivative missing"),
    ("rnn.rnn_bptt", "no_accumulate", "weight gradients not accumulated over time"),
    ("rnn.rnn_bptt", "h_t_in_dWh", "dW_h uses h_t instead of h_{t-1}"),
]

# (exercise id, variant, phrases the first failing case's message must contain): where it is wrong.
LOCALISED = [
    ("rnn.rnn_forward", "reset_each_step", ["wrong from t = 1 on"]),
    ("rnn.rnn_bptt", "no_accumulate", ["dX and dh0 are right", "sums over all steps"]),
    ("rnn.rnn_bptt", "no_next_grad", ["the last steps are right", "dh_next"]),
]

# (exercise id, variant, how it is caught: "static" before running, or "run" while running)
FORBIDDEN = [
    ("rnn.rnn_cell", "forbidden_module", "static"),
    ("rnn.rnn_forward", "forbidden_getattr", "run"),           # getattr(torch, "rnn_" + "tanh"): tripwire
    ("rnn.rnn_bptt", "forbidden_autograd", "run"),             # .requires_grad_() / .backward(): Tensor methods
]


class TestRnn(ChapterChecks, LocalisedChecks, ForbiddenChecks, AlternativeChecks):
    MODULE, MISTAKES, LOCALISED, FORBIDDEN = "rnn", MISTAKES, LOCALISED, FORBIDDEN

    @pytest.mark.slow
    def test_rnn_bptt_reports_each_gradient(self, variants_result):
        verdicts = first_failure_verdicts(variants_result[("rnn.rnn_bptt", "no_accumulate")])
        assert verdicts == {"dX": True, "dh0": True, "dW_x": False, "dW_h": False, "db": False}


@pytest.mark.parametrize("exercise", ["rnn.rnn_forward", "rnn.rnn_bptt"])
def test_cases_include_the_edge_cases(exercise):
    assert not missing_sequence_edge_cases(exercise), (exercise, missing_sequence_edge_cases(exercise))
