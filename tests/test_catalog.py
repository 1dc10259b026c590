"""The catalog matches the contract: every exercise of CURRICULUM.md has a solution, a stub, a spec
and points, under the same id — and each failure names exactly what is missing where."""
import ast
import inspect

import pytest

from conftest import ROOT
from grader.catalog import catalog

# The exercise API of CURRICULUM.md (a contract with course material and hidden test sets).
CURRICULUM = {
    "neurons": "heaviside sign perceptron_forward perceptron_update perceptron_fit",
    "activations": "sigmoid sigmoid_grad tanh tanh_grad relu relu_grad leaky_relu leaky_relu_grad elu elu_grad "
                   "gelu gelu_grad softmax log_softmax",
    "losses": "mse_loss mse_loss_grad cross_entropy cross_entropy_grad",
    "mlp": "linear_forward linear_backward mlp_forward mlp_backward sgd_step momentum_step adam_step "
           "glorot_uniform clip_grad_norm train_xor",
    "cnn": "conv2d max_pool2d avg_pool2d conv1d",
    "rnn": "rnn_cell rnn_forward rnn_bptt",
    "lstm": "lstm_cell lstm_forward peephole_lstm_cell",
    "gru": "gru_cell gru_forward",
    "tokens": "bpe_train bpe_encode embedding_lookup embedding_backward",
    "attention": "causal_mask scaled_dot_product_attention multi_head_attention positional_encoding",
    "transformer": "layer_norm add_and_norm feed_forward encoder_layer decoder_layer transformer_forward greedy_decode",
    "moe": "moe_forward",
}
IDS = sorted(f"{m}.{f}" for m, fs in CURRICULUM.items() for f in fs.split())


def _functions(path):
    if not path.exists():
        return {}
    return {n.name: n for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef)}


def test_every_curriculum_exercise_has_a_spec():
    missing = sorted(set(IDS) - set(catalog()))
    assert not missing, f"no grader spec (grader/catalog/<module>.py) for: {missing}"


@pytest.mark.parametrize("exercise_id", IDS)
def test_solution_stub_and_signature_agree(exercise_id):
    module, function = exercise_id.split(".")
    sol = _functions(ROOT / "solutions" / f"{module}.py")
    stub = _functions(ROOT / "exercises" / f"{module}.py")
    assert function in sol, f"solutions/{module}.py has no function {function}"
    assert function in stub, f"exercises/{module}.py has no function {function}: run `grader stubs`"
    assert ast.dump(sol[function].args) == ast.dump(stub[function].args), f"{exercise_id}: stub signature differs"
    src = ast.get_source_segment((ROOT / "solutions" / f"{module}.py").read_text(), sol[function])
    assert "### BEGIN SOLUTION" in src, f"solutions/{module}.py: {function} has no solution region"
    assert ast.get_docstring(sol[function]), f"solutions/{module}.py: {function} has no docstring (the stub's spec)"


@pytest.mark.parametrize("exercise_id", sorted(catalog()))
def test_reference_signature_matches_the_solution(exercise_id):
    spec = catalog()[exercise_id]
    sol = _functions(ROOT / "solutions" / f"{spec.module}.py")
    assert spec.function in sol, f"{exercise_id}: spec without a solution"
    expected = [a.arg for a in sol[spec.function].args.args]
    params = list(inspect.signature(spec.reference).parameters)
    assert params[:len(expected)] == expected or len(params) == 0 or params[0] in ("args",), \
        f"{exercise_id}: the reference takes {params}, the curriculum function takes {expected}"
    # Behavioural exercises judged as a whole (train_xor) are the only ones allowed fewer.
    assert len(spec.mistakes) >= 3 or spec.judge is not None, \
        f"{exercise_id}: fewer than three known-mistake fingerprints"
