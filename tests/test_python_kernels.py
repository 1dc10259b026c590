"""PyTorch's own Python implementations of a forbidden computation are forbidden with it
(grader.catalog.rules.python_kernels): `torch._refs.softmax`, `torch._decomp.decompositions.lstm_cell`
compute from elementary operators that no rule forbids, so only their names can tell (a red team's
route: nine exercises at full marks). Reached by name they are refused before running; no correct
solution calls them. They are not tripwires: PyTorch compiles some with TorchScript at the first
forward-mode AD, which a wrapper in their place broke."""
from __future__ import annotations

import pytest

from grader.catalog import catalog, rules
from grader.catalog.rules import python_kernels
from scenarios import submission


def test_each_rule_names_pytorchs_python_implementations_of_its_computation_and_no_other():
    assert {"torch._refs.softmax", "torch._refs.nn.functional.log_softmax",
            "torch._decomp.decompositions._softmax"} <= set(rules.SOFTMAX.static)
    assert "torch._decomp.decompositions.lstm_cell" in rules.LSTM_KERNELS.static
    assert not [n for rule in (rules.SOFTMAX, rules.AUTOGRAD) for n in rule.patch if "._refs." in n or "._decomp." in n]
    assert "torch._decomp.decompositions.gru_cell" in rules.RECURRENT.static
    assert "torch._refs.native_layer_norm" in rules.LAYER_NORM.static
    assert "torch._decomp.decompositions.embedding_dense_backward" in rules.AUTOGRAD.static
    assert "torch._decomp.decompositions.embedding_dense_backward" in rules.EMBEDDING.static
    assert "torch._decomp.decompositions.max_pool2d_with_indices" in rules.MAX_POOL.static
    # whole words of the computation's name: copysign is not sign, hardtanh not tanh, a loss no embedding
    assert {"torch._refs.sign", "torch._refs.sgn"} <= set(rules.SIGN.static)
    assert not [n for n in rules.SIGN.static if "copysign" in n or "signbit" in n]
    assert not [n for n in rules.TANH.static if "hardtanh" in n or "atanh" in n]
    assert not [n for n in rules.EMBEDDING.static if "loss" in n]
    for spec in catalog().values():
        for rule in spec.forbidden:
            for name in python_kernels.implementations(rule):
                module, _, attr = name.rpartition(".")
                assert callable(getattr(__import__(module, fromlist=[attr]), attr)), name


@pytest.fixture(scope="module")
def graded(grade_dir):
    ids = ("activations.softmax", "activations.log_softmax", "activations.gelu", "tokens.embedding_backward",
           "lstm.lstm_cell")
    return {e.id: e for e in grade_dir(submission("python_kernels"), *ids).exercises}


@pytest.mark.parametrize("exercise,caught,name", [
    ("activations.softmax", "uses a forbidden API: ", "torch._refs.softmax"),
    ("activations.log_softmax", "uses a forbidden API: ", "torch._decomp.decompositions._log_softmax"),
    ("activations.gelu", "uses a forbidden API: ", "torch._refs.nn.functional.gelu"),
    ("tokens.embedding_backward", "uses a forbidden API: ",
     "torch._decomp.decompositions.embedding_dense_backward"),
    ("lstm.lstm_cell", "uses a forbidden API: ", "torch._decomp.decompositions.lstm_cell"),
])
def test_pytorchs_python_implementation_is_forbidden(graded, exercise, caught, name):
    e = graded[exercise]
    assert e.status.value == "forbidden" and e.points == 0, (e.status, e.message)
    assert e.message.startswith(caught) and name in e.message, e.message
