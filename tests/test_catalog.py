"""The catalog matches the contract, for every chapter at once: every exercise of CURRICULUM.md has
a solution, a stub, a spec and points under the same id, every spec belongs to the curriculum, and
every known mistake has a fixture variant the chapter's tests grade. Each failure names exactly
what is missing where.

The chapters' own tests (tests/test_catalog_<chapter>.py, built on tests/chapter_checks.py) grade;
nothing here runs a submission.
"""
import ast
import inspect

import pytest
import torch

from chapter_checks import fixture_variants, mistake_table
from conftest import ROOT
from grader.catalog import CHAPTERS, catalog, select
from grader.pipeline.cases import build_cases
from grader.stubs import stale

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
# Exercises whose gradients the student writes by hand: autograd is forbidden, outputs are named.
MANUAL_GRADIENTS = {"activations.sigmoid_grad", "activations.tanh_grad", "activations.relu_grad",
                    "activations.leaky_relu_grad", "activations.elu_grad", "activations.gelu_grad",
                    "losses.mse_loss_grad", "losses.cross_entropy_grad", "mlp.linear_backward", "mlp.mlp_backward"}
# Judged as a whole by its behaviour (it trains a network), so it has no output to fingerprint.
WITHOUT_FINGERPRINTS = {"mlp.train_xor"}


def _functions(path):
    if not path.exists():
        return {}
    return {n.name: n for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef)}


# ----------------------------------------------------------------------------- curriculum <-> catalog
def test_every_curriculum_exercise_has_a_spec():
    missing = sorted(set(IDS) - set(catalog()))
    assert not missing, f"no grader spec (in SPECS of grader/catalog/chapters/<module>) for: {missing}"


def test_every_spec_is_a_curriculum_function():
    extra = sorted(set(catalog()) - set(IDS))
    assert not extra, (f"specs without a curriculum function: {extra}; add them to CURRICULUM.md and the "
                       "CURRICULUM table of tests/test_catalog.py, or remove them from grader/catalog/chapters/")


def test_every_chapter_is_in_the_curriculum_in_course_order():
    assert list(CHAPTERS) == list(CURRICULUM), "grader.catalog.CHAPTERS and CURRICULUM list different chapters"


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


def test_stubs_are_generated_from_the_solutions():
    bad = stale(str(ROOT / "solutions"), str(ROOT / "exercises"))
    assert not bad, f"exercises/ is out of date with solutions/ for {bad}: run `grader stubs`"


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


# ----------------------------------------------------------------------------- points
def test_every_spec_has_points():
    none = sorted(f"{s.id} (grader/catalog/chapters/{s.module})" for s in catalog().values() if not s.points > 0)
    assert not none, f"specs without points: {none}; give each `points=` above 0 in its spec"


def test_every_exercise_has_points_in_its_spec_only(config):
    """One source of points: the spec. The course's autograde.toml does not repeat them."""
    repeated = [s.id for s in catalog().values() if config.exercise(s.id).points is not None]
    assert not repeated, f"points of {repeated} are set in autograde.toml too: keep them in the spec only"


# ----------------------------------------------------------------------------- known mistakes <-> fixtures
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_known_mistake_has_a_fixture(chapter):
    """Each known mistake of the chapter's specs is a row of MISTAKES in tests/test_catalog_<chapter>.py
    (which grades the row's variant and checks the diagnosis), and each row names one."""
    table = mistake_table(chapter)
    named = {(e, name) for e, _, name in table}
    declared = {(s.id, m.name) for s in select([chapter]) for m in s.mistakes}
    assert not declared - named, \
        f"known mistakes with no row in MISTAKES of tests/test_catalog_{chapter}.py: {sorted(declared - named)}"
    assert not named - declared, \
        f"rows of MISTAKES in tests/test_catalog_{chapter}.py naming no known mistake: {sorted(named - declared)}"
    assert declared == named
    defined = fixture_variants(chapter)
    absent = sorted(f"{e.split('.')[1]}__{v}" for e, v, _ in table if f"{e.split('.')[1]}__{v}" not in defined)
    assert not absent, f"tests/fixtures/mistakes/{chapter}.py defines no {absent}"


def test_every_fingerprinted_exercise_has_three_mistakes():
    few = {s.id: len(s.mistakes) for s in catalog().values()
           if len(s.mistakes) < 3 and s.id not in WITHOUT_FINGERPRINTS}
    assert not few, f"fewer than three known mistakes (exercise: how many): {few}"


def test_every_spec_with_known_mistakes_has_a_fixture_variant():
    bare = sorted(f"{s.id} (no def {s.function}__<variant> in tests/fixtures/mistakes/{s.module}.py)"
                  for s in catalog().values()
                  if s.mistakes and not any(v.split("__")[0] == s.function for v in fixture_variants(s.module)))
    assert not bare, f"specs with known mistakes but no fixture variant: {bare}"


def test_every_fixture_variant_has_a_spec():
    orphans = sorted(f"{v} in tests/fixtures/mistakes/{m}.py (no spec {m}.{v.split('__')[0]})"
                     for m in CHAPTERS for v in fixture_variants(m) if f"{m}.{v.split('__')[0]}" not in catalog())
    assert not orphans, f"fixture variants of no exercise: {orphans}"


# ----------------------------------------------------------------------------- across chapters
def test_manual_gradient_exercises_forbid_autograd_and_name_their_outputs():
    grads = {s.id for s in catalog().values()
             if s.function.endswith("_grad") or s.function in ("linear_backward", "mlp_backward")}
    assert grads == MANUAL_GRADIENTS and len(grads) == 10
    for i in sorted(grads):
        assert "autograd" in {r.name for r in catalog()[i].forbidden}, f"{i}: autograd is not forbidden"
        assert catalog()[i].outputs != ("output",), f"{i}: its outputs are not named"
    assert catalog()["mlp.linear_backward"].outputs == ("dX", "dW", "db")


def _arguments(case):
    """A case's inputs as a comparable value: tensors by dtype, shape and data."""
    def key(x):
        if isinstance(x, torch.Tensor):
            return ("tensor", str(x.dtype), tuple(x.shape), x.detach().flatten().tolist())
        if isinstance(x, (list, tuple)):
            return tuple(map(key, x))
        if isinstance(x, dict):
            return tuple(sorted((k, key(v)) for k, v in x.items()))
        return repr(x)
    return repr(key((case.args, dict(case.kwargs))))


@pytest.mark.parametrize("secret", [1, 987654321])
def test_every_exercise_has_hidden_cases_that_are_not_its_public_ones(secret):
    """A hidden case is drawn from the secret seed; one whose inputs are a public case's hides nothing
    (the red team found causal_mask's all were: a submission that special-cased the public sizes
    passed them). Fixed edge cases may repeat, but each exercise draws some of its inputs."""
    repeated = []
    for spec in catalog().values():
        cases = build_cases(spec, secret)
        public = {_arguments(c) for c in cases if not c.hidden}
        if all(_arguments(c) in public for c in cases if c.hidden):
            repeated.append(spec.id)
    assert repeated == []
