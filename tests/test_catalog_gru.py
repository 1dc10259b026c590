"""The gru chapter, graded end to end: the GRU cell in PyTorch's convention and its forward
pass; the textbook's and the original paper's conventions are named, and a wrong gate is
localised to that gate.

What every chapter checks (solutions, stubs, known mistakes, forbidden APIs, localised variants,
independent solutions) is tests/chapter_checks.py; here are the chapter's tables and edge cases.
"""
from __future__ import annotations

from chapter_checks import (AlternativeChecks, ChapterChecks, ForbiddenChecks, LocalisedChecks,
                            missing_sequence_edge_cases)


# (exercise id, variant in tests/fixtures/mistakes/gru.py, diagnosis the grader must give)
MISTAKES = [
    ("gru.gru_cell", "z_takes_new", "z and 1 - z exchanged (the textbook convention)"),
    ("gru.gru_cell", "reset_before_matmul",
     "reset gate applied before the matrix product (the original paper's variant)"),
    ("gru.gru_cell", "bias_hn_outside", "b_hn outside the reset gate"),
    ("gru.gru_cell", "no_biases", "biases dropped"),
    ("gru.gru_cell", "swap_r_z", "reset and update gates exchanged"),
    ("gru.gru_forward", "reset_each_step", "state reset every step"),
    ("gru.gru_forward", "zeros_init", "initial state ignored"),
    ("gru.gru_forward", "shifted", "H shifted by one step"),
]

# (exercise id, variant, phrases the first failing case's message must contain): where it is wrong.
LOCALISED = [
    ("gru.gru_cell", "z_takes_new", ["Where: the update gate z.", "z and 1 - z are exchanged"]),
    ("gru.gru_cell", "reset_before_matmul", ["Where: the term r * (h_prev @ W_hn + b_hn)"]),
    ("gru.gru_cell", "swap_r_z", ["the reset gate r and the update gate z look exchanged"]),
    ("gru.gru_cell", "update_ignores_x", ["Where: the update gate z.", "input term (W_xz)"]),
    ("gru.gru_cell", "candidate_sigmoid", ["Where: the candidate n."]),
    ("gru.gru_cell", "no_biases", ["Where: the biases."]),
]

# (exercise id, variant, how it is caught: "static" before running, or "run" while running)
FORBIDDEN = [
    ("gru.gru_cell", "forbidden_getattr", "run"),
    ("gru.gru_forward", "forbidden_module", "static"),
]


class TestGru(ChapterChecks, LocalisedChecks, ForbiddenChecks, AlternativeChecks):
    MODULE, MISTAKES, LOCALISED, FORBIDDEN = "gru", MISTAKES, LOCALISED, FORBIDDEN


def test_cases_include_the_edge_cases():
    assert not missing_sequence_edge_cases("gru.gru_forward")
