"""Curriculum part 2: the rnn, lstm, gru and tokens chapters, graded end to end.

- the worked solutions score full marks and the generated stubs score zero ("not implemented");
- every known mistake of these chapters has a student-written fixture variant
  (tests/fixtures/mistakes/<module>.py) that fails with that diagnosis;
- a wrong gate is localised to that gate, a wrong time step or gradient is pointed at;
- forbidden APIs are caught, statically and at run time (tripwires and the ATen net);
- independently written correct solutions (tests/fixtures/submissions/alt_<module>_<style>/)
  score full marks, so the tolerances are not fitted to one formulation.

Grading is the expensive part: every submission is graded once, in module-scoped fixtures.
Variants are packed into "rounds" (at most one variant per exercise, so one round is one
submission and one grading run for all the exercises it touches).
"""
from __future__ import annotations


import pytest
import torch

from conftest import FIXTURES, SOLUTIONS, ROOT, grade_variants
from grader.catalog import catalog

MODULES = ("rnn", "lstm", "gru", "tokens")

# (exercise id, variant in tests/fixtures/mistakes/<module>.py, diagnosis the grader must give)
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
    ("gru.gru_cell", "z_takes_new", "z and 1 - z exchanged (the textbook convention)"),
    ("gru.gru_cell", "reset_before_matmul",
     "reset gate applied before the matrix product (the original paper's variant)"),
    ("gru.gru_cell", "bias_hn_outside", "b_hn outside the reset gate"),
    ("gru.gru_cell", "no_biases", "biases dropped"),
    ("gru.gru_cell", "swap_r_z", "reset and update gates exchanged"),
    ("gru.gru_forward", "reset_each_step", "state reset every step"),
    ("gru.gru_forward", "zeros_init", "initial state ignored"),
    ("gru.gru_forward", "shifted", "H shifted by one step"),
    ("tokens.bpe_train", "ties_first", "ties broken by first occurrence"),
    ("tokens.bpe_train", "ties_largest", "ties broken by the largest pair"),
    ("tokens.bpe_train", "unweighted", "pairs not weighted by word frequency"),
    ("tokens.bpe_train", "across_whitespace", "merges across whitespace"),
    ("tokens.bpe_train", "chars", "characters instead of bytes"),
    ("tokens.bpe_encode", "frequency_order", "merges applied in frequency order instead of learned order"),
    ("tokens.bpe_encode", "drop_whitespace", "whitespace dropped"),
    ("tokens.bpe_encode", "whitespace_runs", "whitespace runs kept whole"),
    ("tokens.bpe_encode", "chars", "characters instead of bytes"),
    ("tokens.bpe_encode", "once", "each merge applied only once per word"),
    ("tokens.embedding_lookup", "flat", "rows not reshaped to (B, T, d)"),
    ("tokens.embedding_lookup", "transposed", "batch and time exchanged"),
    ("tokens.embedding_lookup", "one_based", "ids treated as 1-based"),
    ("tokens.embedding_backward", "assign", "gradients assigned instead of accumulated"),
    ("tokens.embedding_backward", "mean", "repeated ids averaged"),
    ("tokens.embedding_backward", "max_id", "vocab_size ignored"),
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
    ("gru.gru_cell", "z_takes_new", ["Where: the update gate z.", "z and 1 - z are exchanged"]),
    ("gru.gru_cell", "reset_before_matmul", ["Where: the term r * (h_prev @ W_hn + b_hn)"]),
    ("gru.gru_cell", "swap_r_z", ["the reset gate r and the update gate z look exchanged"]),
    ("gru.gru_cell", "update_ignores_x", ["Where: the update gate z.", "input term (W_xz)"]),
    ("gru.gru_cell", "candidate_sigmoid", ["Where: the candidate n."]),
    ("gru.gru_cell", "no_biases", ["Where: the biases."]),
    ("rnn.rnn_forward", "reset_each_step", ["wrong from t = 1 on"]),
    ("lstm.lstm_forward", "zeros_init", ["H[:, 0] is already wrong"]),
    ("rnn.rnn_bptt", "no_accumulate", ["dX and dh0 are right", "sums over all steps"]),
    ("rnn.rnn_bptt", "no_next_grad", ["the last steps are right", "dh_next"]),
]

# (exercise id, variant, how it is caught: "static" before running, or "run" while running)
FORBIDDEN = [
    ("rnn.rnn_cell", "forbidden_module", "static"),
    ("rnn.rnn_forward", "forbidden_getattr", "run"),           # getattr(torch, "rnn_" + "tanh"): tripwire
    ("rnn.rnn_bptt", "forbidden_autograd", "static"),
    ("lstm.lstm_cell", "forbidden_module", "static"),
    ("lstm.lstm_forward", "forbidden_hidden_kernel", "run"),   # torch._C._VariableFunctions via getattr: ATen net
    ("gru.gru_cell", "forbidden_getattr", "run"),
    ("gru.gru_forward", "forbidden_module", "static"),
    ("tokens.embedding_lookup", "forbidden_functional", "static"),
    ("tokens.embedding_lookup", "forbidden_ops", "run"),        # getattr(torch.ops.aten, ...): ATen net
    ("tokens.embedding_backward", "forbidden_autograd", "static"),
]

ALTERNATIVES = sorted(p.name for p in (FIXTURES / "submissions").glob("alt_*")
                      if p.name.split("_")[1] in MODULES)


@pytest.fixture(scope="module")
def solutions_result(grade_dir):
    return grade_dir(SOLUTIONS, *MODULES)


@pytest.fixture(scope="module")
def stubs_result(grade_dir):
    return grade_dir(ROOT / "exercises", *MODULES)


@pytest.fixture(scope="module")
def variants_result(tmp_path_factory, grade_dir):
    entries = [(e, v) for e, v, _ in MISTAKES] + [(e, v) for e, v, _ in LOCALISED] + [(e, v) for e, v, _ in FORBIDDEN]
    return grade_variants(tmp_path_factory, grade_dir, list(dict.fromkeys(entries)), "variants")


def _part2_specs():
    return [s for s in catalog().values() if s.module in MODULES]


# ----------------------------------------------------------------------------- the catalog itself
def test_every_exercise_of_the_curriculum_is_in_the_catalog():
    expected = {"rnn": {"rnn_cell", "rnn_forward", "rnn_bptt"},
                "lstm": {"lstm_cell", "lstm_forward", "peephole_lstm_cell"},
                "gru": {"gru_cell", "gru_forward"},
                "tokens": {"bpe_train", "bpe_encode", "embedding_lookup", "embedding_backward"}}
    for module, functions in expected.items():
        assert {s.function for s in _part2_specs() if s.module == module} == functions


def test_every_exercise_has_points_in_its_spec_only(config):
    """One source of points: the spec. The course's autograde.toml does not repeat them."""
    assert all(s.points > 0 for s in _part2_specs())
    repeated = [s.id for s in _part2_specs() if config.exercise(s.id).points is not None]
    assert not repeated, f"points of {repeated} are set in autograde.toml too: keep them in the spec only"


def test_every_known_mistake_has_a_fixture():
    named = {(e, name) for e, _, name in MISTAKES}
    declared = {(s.id, m.name) for s in _part2_specs() for m in s.mistakes}
    assert declared == named


def test_cases_include_the_edge_cases():
    names = {s.id: [c.name for c in s.cases(torch.Generator().manual_seed(0))] for s in _part2_specs()}
    for exercise in ("rnn.rnn_forward", "rnn.rnn_bptt", "lstm.lstm_forward", "gru.gru_forward"):
        assert any("T=1" in n for n in names[exercise]) and any("batch 1" in n for n in names[exercise])
        assert any("long" in n for n in names[exercise]), exercise
    assert "empty text" in names["tokens.bpe_train"] and "empty text" in names["tokens.bpe_encode"]


# ----------------------------------------------------------------------------- solutions and stubs
def test_solutions_score_full_marks(solutions_result):
    failed = {e.id: e.message for e in solutions_result.exercises if e.points != e.max_points}
    assert not failed
    assert {e.id for e in solutions_result.exercises} == {s.id for s in _part2_specs()}


def test_large_bpe_cases_are_timed(solutions_result):
    """The large-text cases pass for the solution and their time is recorded for the report."""
    for e in solutions_result.exercises:
        if e.id in ("tokens.bpe_train", "tokens.bpe_encode"):
            large = next(c for c in e.cases if c.name == "large text")
            assert large.status.value == "passed" and large.seconds > 0
            assert "several seconds" in large.description


def test_stubs_score_zero_not_implemented(stubs_result):
    for e in stubs_result.exercises:
        assert e.points == 0 and e.status.value == "not implemented", (e.id, e.status, e.message)


# ----------------------------------------------------------------------------- known mistakes
@pytest.mark.slow
@pytest.mark.parametrize("exercise, variant, name", MISTAKES, ids=[f"{e}__{v}" for e, v, _ in MISTAKES])
def test_known_mistake_is_diagnosed(variants_result, exercise, variant, name):
    e = variants_result[(exercise, variant)]
    assert e.points < e.max_points
    assert e.diagnosis.startswith(name), f"{exercise}__{variant}: diagnosis {e.diagnosis!r}; {e.message}"


@pytest.mark.slow
@pytest.mark.parametrize("exercise, variant, phrases", LOCALISED, ids=[f"{e}__{v}" for e, v, _ in LOCALISED])
def test_wrong_part_is_localised(variants_result, exercise, variant, phrases):
    e = variants_result[(exercise, variant)]
    first = next(c for c in e.cases if c.status.value == "failed")
    for phrase in phrases:
        assert phrase in first.message, f"{exercise}__{variant}: {phrase!r} not in\n{first.message}"


@pytest.mark.slow
def test_rnn_bptt_reports_each_gradient(variants_result):
    e = variants_result[("rnn.rnn_bptt", "no_accumulate")]
    case = next(c for c in e.cases if c.status.value == "failed")
    verdicts = {c.name: c.ok for c in case.comparisons}
    assert verdicts == {"dX": True, "dh0": True, "dW_x": False, "dW_h": False, "db": False}


@pytest.mark.slow
def test_bpe_encode_checks_the_round_trip(variants_result):
    e = variants_result[("tokens.bpe_encode", "drop_whitespace")]
    assert any("round trip fails" in c.message for c in e.cases)


# ----------------------------------------------------------------------------- forbidden APIs
@pytest.mark.slow
@pytest.mark.parametrize("exercise, variant, how", FORBIDDEN, ids=[f"{e}__{v}" for e, v, _ in FORBIDDEN])
def test_forbidden_api_is_detected(variants_result, exercise, variant, how):
    e = variants_result[(exercise, variant)]
    assert e.status.value == "forbidden" and e.points == 0, (e.status, e.message)
    assert e.message.startswith("uses a forbidden API" if how == "static" else "called a forbidden API while running")


# ----------------------------------------------------------------------------- independent solutions
@pytest.mark.parametrize("name", ALTERNATIVES)
def test_independent_solution_scores_full_marks(grade_dir, name):
    module = name.split("_")[1]
    result = grade_dir(FIXTURES / "submissions" / name, module)
    failed = {e.id: e.message for e in result.exercises if e.points != e.max_points}
    assert not failed and len(result.exercises) == len([s for s in _part2_specs() if s.module == module])


def test_there_are_two_independent_solutions_per_module():
    for module in MODULES:
        assert len([n for n in ALTERNATIVES if n.split("_")[1] == module]) >= 2, module
