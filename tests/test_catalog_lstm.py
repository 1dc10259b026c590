"""The lstm chapter, graded end to end: the LSTM cell, its forward pass and the peephole
variant; a wrong gate is localised to that gate.

What every chapter checks (solutions, stubs, known mistakes, forbidden APIs, localised variants,
independent solutions) is tests/chapter_checks.py; here are the chapter's tables and edge cases.
"""
from __future__ import annotations

from chapter_checks import (AlternativeChecks, ChapterChecks, ForbiddenChecks, LocalisedChecks,
                            missing_sequence_edge_cases)


# (exercise id, variant in tests/fixtures/mistakes/lstm.py, diagnosis the grader must give)
MISTAKES = [
    ("lstm.lstm_cell", "swap_i_f", "input and forget gates exchanged"),
    ("lstm.lstm_cell", "swap_o_g", "output gate and candidate exchanged"),
    ("lstm.lstm_cell", "tanh_sigmoid_swapped", "tanh and sigmoid exchanged"),
    ("lstm.lstm_cell", "no_tanh_on_c", "h = o * c without tanh"),
    ("lstm.lstm_cell", "c_from_h", "cell state updated from h"),
    ("lstm.lstm_forward", "reset_each_step", "states reset every step"),
    ("lstm.lstm_forward", "zeros_init", "initial states ignored"),
    ("lstm.lstm_forward", "H_holds_c", "H holds the cell states"),
    ("lstm.lstm_forward", "final_swapped", "h_T and c_T exchanged"),
    ("lstm.peephole_lstm_cell", "o_peeks_cprev", "output gate peeks at c_prev"),
    ("lstm.peephole_lstm_cell", "no_o_peephole", "output peephole missing"),
    ("lstm.peephole_lstm_cell", "swap_pi_pf", "peepholes p_i and p_f exchanged"),
    ("lstm.peephole_lstm_cell", "no_tanh_on_c", "h = o * c without tanh"),
]

# (exercise id, variant, phrases the first failing case's message must contain): where it is wrong.
LOCALISED = [
    ("lstm.lstm_cell", "forget_tanh", ["Where: the forget gate f.", "a sigmoid"]),
    ("lstm.lstm_cell", "output_ignores_h", ["Where: the output gate o.", "hidden term (W_ho)"]),
    ("lstm.lstm_cell", "swap_i_f", ["the input gate i and the forget gate f look exchanged"]),
    ("lstm.lstm_cell", "swap_o_g", ["the candidate g and the output gate o look exchanged"]),
    ("lstm.lstm_cell", "no_tanh_on_c", ["Where: the output h_t = o * tanh(c_t)."]),
    ("lstm.lstm_cell", "c_from_h", ["Where: the cell-state update."]),
    ("lstm.peephole_lstm_cell", "o_peeks_cprev", ["the peephole term p_o * c_t in the output gate"]),
    ("lstm.peephole_lstm_cell", "swap_pi_pf", ["the peepholes p_i and p_f look exchanged"]),
    ("lstm.lstm_forward", "zeros_init", ["H[:, 0] is already wrong"]),
]

# (exercise id, variant, how it is caught: "static" before running, or "run" while running)
FORBIDDEN = [
    ("lstm.lstm_cell", "forbidden_module", "static"),
    ("lstm.lstm_forward", "forbidden_hidden_kernel", "run"),   # torch._C._VariableFunctions via getattr: ATen net
]


class TestLstm(ChapterChecks, LocalisedChecks, ForbiddenChecks, AlternativeChecks):
    MODULE, MISTAKES, LOCALISED, FORBIDDEN = "lstm", MISTAKES, LOCALISED, FORBIDDEN


def test_cases_include_the_edge_cases():
    assert not missing_sequence_edge_cases("lstm.lstm_forward")
