"""The transformer chapter, graded end to end through the sandbox.

- the worked solutions score full marks and the generated stubs score zero ("not implemented");
- every known mistake has a student-written variant (tests/fixtures/mistakes/transformer.py)
  that fails with that diagnosis, and failing layers and models name the first sub-layer or
  stage that diverges;
- each function is graded with the grader's versions of the functions it calls: a bug in
  multi_head_attention (or layer_norm, feed_forward) is charged once, in its own exercise;
- forbidden APIs are refused, statically and at run time, and legitimate code never trips them;
- independently written solutions (tests/fixtures/submissions/alt_transformer_<style>/) score
  full marks, and the capstone trains the student's transformer_forward (slow tests).

Grading is the expensive part: every submission is graded once per module, lazily. Mistake
variants are packed into rounds (at most one variant per function, so one round is one
submission), and the capstone case is left out except in the tests marked slow.
"""
from __future__ import annotations

import ast
import dataclasses
import shutil

import pytest
import torch

from conftest import FIXTURES, ROOT, SOLUTIONS, mistake_source, replace_function
from grader.catalog import inputs, select
from grader.catalog.judges import capstone as capstone_judge
from grader.catalog.chapters.transformer.decode import greedy_case, greedy_cases, ref_greedy_decode
from grader.catalog.references import equations as M
from grader.catalog.references import torch_modules as T
from grader.sandbox.trusted import capstone_training as capstone
from grader.sandbox.trusted.transformer_forward import transformer_forward
from grader.threads import pinned
from grader.pipeline.engine import grade
from grader.results import Status

SPECS = {s.id: s for s in select(["transformer"])}


def _without_capstone(spec):
    if spec.function != "transformer_forward":
        return spec
    return dataclasses.replace(spec, cases=lambda gen: [c for c in spec.cases(gen) if "capstone" not in c.kwargs])


FAST = {i: _without_capstone(s) for i, s in SPECS.items()}

# function -> [(variant in tests/fixtures/mistakes/transformer.py, diagnosis the grader must give)]
BY_FUNCTION = {
    "layer_norm": [("unbiased", "unbiased variance"), ("eps_outside", "eps outside the square root"),
                   ("wrong_dim", "normalised over the wrong dim"), ("swapped", "gamma and beta swapped")],
    "add_and_norm": [("residual_after_norm", "residual added after the norm"), ("no_residual", "residual missing"),
                     ("no_norm", "norm missing")],
    "feed_forward": [("no_relu", "ReLU missing"), ("relu_after", "ReLU after the second layer too"),
                     ("no_bias", "biases missing"), ("gelu", "GELU instead of ReLU")],
    "encoder_layer": [("prenorm", "pre-norm instead of post-norm"),
                      ("residual_after_norm", "residual added after the norm"),
                      ("no_residual", "residual connections missing"),
                      ("mask_dropped", "mask not passed to the attention"), ("norms_swapped", "ln1 and ln2 swapped")],
    "decoder_layer": [("cross_kv_decoder", "cross-attention keys and values from the decoder"),
                      ("no_causal", "self-attention without the causal mask"),
                      ("prenorm", "pre-norm instead of post-norm"),
                      ("residual_after_norm", "residual added after the norm"),
                      ("cross_first", "cross-attention before self-attention")],
    "transformer_forward": [("no_pe", "positional encoding not added"), ("pe_twice", "positional encoding added twice"),
                            ("no_final_norms", "final encoder and decoder norms missing"),
                            ("no_enc_norm", "final encoder norm missing"),
                            ("no_dec_norm", "final decoder norm missing"),
                            ("scaled_embed", "embeddings scaled by sqrt(d_model)"),
                            ("not_chained", "layers not chained")],
    "greedy_decode": [("whole_argmax", "argmax of the whole sequence"),
                      ("first_position", "argmax of the first position"), ("no_padding", "no eos padding"),
                      ("stop_any", "stops at the first eos in the batch"), ("never_stop", "never stops early")],
}
ROUNDS = [{f: vs[r][0] for f, vs in BY_FUNCTION.items() if r < len(vs)}
          for r in range(max(map(len, BY_FUNCTION.values())))]
MISTAKE_CASES = [(f, r, v, d) for f, vs in BY_FUNCTION.items() for r, (v, d) in enumerate(vs)]
# (exercise id, variant, diagnosis): the table tests/test_catalog.py checks against the specs' known mistakes
MISTAKES = [(f"transformer.{f}", v, d) for f, vs in BY_FUNCTION.items() for v, d in vs]

# (function, variant, what the feedback of its first failing case must say)
LOCALISED = [
    ("encoder_layer", "prenorm", "First diverging sub-layer: add & norm."),
    ("encoder_layer", "mask_dropped", "First diverging sub-layer: self-attention."),
    ("encoder_layer", "loc_ffn_on_input", "First diverging sub-layer: feed-forward."),
    ("decoder_layer", "residual_after_norm", "First diverging sub-layer: add & norm."),
    ("decoder_layer", "no_causal", "First diverging sub-layer: masked self-attention."),
    ("decoder_layer", "cross_kv_decoder", "First diverging sub-layer: cross-attention."),
    ("decoder_layer", "loc_cross_wrong_weights", "First diverging sub-layer: cross-attention."),
    ("transformer_forward", "no_pe", "First diverging stage: the encoder's input (source embedding + positional "
                                     "encoding): the positional encoding is not added"),
    ("transformer_forward", "pe_twice", "the positional encoding is added twice"),
    ("transformer_forward", "scaled_embed", "the embeddings are scaled by sqrt(d_model)"),
    ("transformer_forward", "not_chained", "First diverging stage: the encoder stack: encoder layer 2 does not "
                                           "receive the output of encoder layer 1"),
    ("transformer_forward", "no_enc_norm", "First diverging stage: the final encoder norm"),
    ("transformer_forward", "no_final_norms", "First diverging stage: the final encoder norm"),
    ("transformer_forward", "no_dec_norm", "First diverging stage: the final decoder norm:"),
    ("transformer_forward", "loc_tgt_pe_missing", "First diverging stage: the decoder's input (target embedding + "
                                                  "positional encoding): the positional encoding is not added"),
]
LOCALISE_ROUND = {"encoder_layer": "loc_ffn_on_input", "decoder_layer": "loc_cross_wrong_weights",
                  "transformer_forward": "loc_tgt_pe_missing"}


def _mistake(module: str, function: str, variant: str) -> str:
    """A variant's source plus the fixture file's imports and private helpers it may call."""
    path = FIXTURES / "mistakes" / f"{module}.py"
    source = path.read_text()
    extras = [ast.get_source_segment(source, n) for n in ast.parse(source).body
              if isinstance(n, (ast.Import, ast.ImportFrom))
              or (isinstance(n, ast.FunctionDef) and n.name.startswith("_"))]
    return mistake_source(module, f"{function}__{variant}") + "\n\n\n" + "\n\n\n".join(extras) + "\n"


def build(root, name: str, functions: dict[str, str], files: dict[str, str] | None = None):
    """A submission: solutions/ with some functions replaced ({"transformer.layer_norm": source})
    and some whole files replaced ({"transformer.py": path})."""
    dest = root.mktemp(name)
    for f in SOLUTIONS.glob("*.py"):
        shutil.copy(f, dest / f.name)
    for name_, src in (files or {}).items():
        shutil.copy(src, dest / name_)
    for key, source in functions.items():
        module, function = key.split(".")
        path = dest / f"{module}.py"
        path.write_text(replace_function(path.read_text(), function, source))
    return dest


@pytest.fixture(scope="module")
def graded(tmp_path_factory, sandbox, config):
    """graded(name, functions, ids, specs) -> {id: ExerciseResult}, each submission graded once."""
    cache = {}

    def get(name, functions, ids, specs=FAST, files=None):
        if name not in cache:
            path = build(tmp_path_factory, name, functions, files)
            result = grade(str(path), [specs[i] for i in ids], config, sandbox=sandbox)
            cache[name] = {e.id: e for e in result.exercises}
        return cache[name]
    return get


def _round(graded, r):
    functions = {f"transformer.{f}": _mistake("transformer", f, v) for f, v in ROUNDS[r].items()}
    return graded(f"round{r}", functions, [f"transformer.{f}" for f in ROUNDS[r]])


def _first_failure(exercise):
    return next(c for c in exercise.cases if c.status is not Status.PASSED)


# ----------------------------------------------------------------------------- solutions and stubs
def test_solutions_score_full_marks(graded):
    results = graded("solutions", {}, list(SPECS))
    assert {i: e.status for i, e in results.items()} == {i: Status.PASSED for i in SPECS}
    assert all(e.points == e.max_points > 0 for e in results.values())
    assert not any(e.status is Status.FORBIDDEN for e in results.values())   # no rule fires on the solutions


def test_stubs_score_zero_as_not_implemented(sandbox, config):
    result = grade(str(ROOT / "exercises"), list(SPECS.values()), config, sandbox=sandbox)   # capstone included
    assert result.score == 0
    for e in result.exercises:
        assert e.status is Status.NOT_IMPLEMENTED, (e.id, e.message)
        assert e.message.startswith("not implemented yet"), e.message


# ----------------------------------------------------------------------------- known mistakes
@pytest.mark.parametrize("function,r,variant,diagnosis", MISTAKE_CASES, ids=[f"{c[0]}-{c[2]}" for c in MISTAKE_CASES])
def test_fingerprinted_mistake_is_named(graded, function, r, variant, diagnosis):
    e = _round(graded, r)[f"transformer.{function}"]
    assert e.status is Status.FAILED, (e.status, e.message)
    assert e.points < e.max_points
    assert e.diagnosis.startswith(diagnosis + ":"), e.diagnosis


@pytest.mark.parametrize("function,variant,said", LOCALISED, ids=[f"{f}-{v}" for f, v, _ in LOCALISED])
def test_first_diverging_sublayer_is_named(graded, function, variant, said):
    if variant.startswith("loc_"):
        functions = {f"transformer.{f}": _mistake("transformer", f, v) for f, v in LOCALISE_ROUND.items()}
        results = graded("localise", functions, [f"transformer.{f}" for f in LOCALISE_ROUND])
    else:
        results = _round(graded, next(r for r, rd in enumerate(ROUNDS) if rd.get(function) == variant))
    e = results[f"transformer.{function}"]
    assert e.status is Status.FAILED
    assert said in _first_failure(e).message, _first_failure(e).message


# ----------------------------------------------------------------------------- dependencies
def test_a_bug_is_charged_once(graded):
    """Wrong multi-head attention, layer norm and FFN cost their own exercises only: every
    function that calls them is graded with the grader's versions, and says so."""
    functions = {"attention.multi_head_attention": mistake_source("attention", "no_output_projection"),
                 "transformer.layer_norm": _mistake("transformer", "layer_norm", "unbiased"),
                 "transformer.feed_forward": _mistake("transformer", "feed_forward", "no_relu")}
    specs = {**FAST, "attention.multi_head_attention": select(["attention.multi_head_attention"])[0]}
    results = graded("isolation", functions, ["attention.multi_head_attention", *SPECS], specs=specs)
    wrong = {"attention.multi_head_attention", "transformer.layer_norm", "transformer.feed_forward"}
    assert {i for i, e in results.items() if e.status is not Status.PASSED} == wrong
    assert results["attention.multi_head_attention"].diagnosis.startswith("missing output projection")
    notes = " ".join(results["transformer.encoder_layer"].notes)
    # encoder_layer calls add_and_norm (whose substitute holds the grader's layer norm), not layer_norm
    assert "multi_head_attention" in notes and "add_and_norm" in notes and "in place of yours" in notes


# ----------------------------------------------------------------------------- forbidden APIs
def test_forbidden_modules_are_refused_statically(graded):
    functions = {f"transformer.{f}": _mistake("transformer", f, "forbidden_" + v) for f, v in
                 (("layer_norm", "builtin"), ("encoder_layer", "module"), ("transformer_forward", "module"))}
    ids = ["transformer.layer_norm", "transformer.add_and_norm", "transformer.encoder_layer",
           "transformer.transformer_forward"]
    results = graded("forbidden", functions, ids)
    for i in ("transformer.layer_norm", "transformer.encoder_layer", "transformer.transformer_forward"):
        assert results[i].status is Status.FORBIDDEN, (i, results[i].message)
        assert results[i].points == 0
    assert "torch.nn.functional.layer_norm" in results["transformer.layer_norm"].message
    assert "TransformerEncoderLayer" in results["transformer.encoder_layer"].message
    # add_and_norm calls that layer_norm; the rule is layer_norm's alone, so it is not charged twice
    assert results["transformer.add_and_norm"].status is Status.PASSED


def test_aten_route_to_layer_norm_is_caught_at_run_time(graded):
    functions = {"transformer.layer_norm": _mistake("transformer", "layer_norm", "forbidden_aten")}
    e = graded("forbidden_aten", functions, ["transformer.layer_norm"])["transformer.layer_norm"]
    assert e.status is Status.FORBIDDEN
    assert "while running" in e.message and "native_layer_norm" in e.message


def test_aten_patterns_do_not_match_legitimate_operators():
    """What mean/variance code, attention and Adam reach must never look like a forbidden kernel."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = set()

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.add(func.name())
            return func(*args, **(kwargs or {}))

    cfg = {**capstone.task(0), "steps": 2, "eval_size": 4}
    with Record():
        capstone.train(transformer_forward, cfg)                  # forward, backward, Adam
        X = torch.randn(2, 3, 8)
        torch.var_mean(X, dim=-1, unbiased=False), X.std(-1), torch.nn.functional.normalize(X, dim=-1)
    patterns = [p for s in SPECS.values() for rule in s.forbidden for p in rule.aten]
    assert patterns and seen
    assert not [(p, op) for p in patterns for op in seen if p in op]


# ----------------------------------------------------------------------------- references and cases
def test_course_equations_agree_with_pytorch_modules():
    """The known mistakes and localisers use the course's equations; unchanged, they are the references."""
    gen = torch.Generator().manual_seed(7)
    F64 = torch.float64
    X, mem = inputs.randn(gen, 2, 5, 16, dtype=F64), inputs.randn(gen, 2, 3, 16, dtype=F64)
    enc, dec = inputs.layer_params(gen, 16, 32, dtype=F64), inputs.layer_params(gen, 16, 32, True, F64)
    mask = torch.rand(2, 5, 5, generator=gen) < 0.6
    mask[..., 0] = True
    assert torch.allclose(M.encoder_layer(X, enc, 4, mask), T.ref_encoder_layer(X, enc, 4, mask), atol=1e-12)
    assert torch.allclose(M.decoder_layer(X, mem, dec, 2), T.ref_decoder_layer(X, mem, dec, 2), atol=1e-12)
    p = inputs.model_params(gen, 9, 7, 16, 32, 2, 2, F64)
    src, tgt = torch.randint(0, 9, (2, 6), generator=gen), torch.randint(0, 7, (2, 4), generator=gen)
    assert torch.allclose(M.transformer_forward(src, tgt, p, 4), T.ref_transformer_forward(src, tgt, p, 4), atol=1e-12)


def test_a_float64_model_may_add_the_encoding_in_float32_or_in_float64():
    """positional_encoding returns float32 (the contract's tensors are), so the course's own code adds a
    float32-rounded encoding to float64 embeddings; a model that computes the encoding in float64
    itself is right too, and only a model that goes through float32 elsewhere misses."""
    spec = select(["transformer.transformer_forward"])[0]
    case = next(c for c in spec.cases(torch.Generator().manual_seed(0)) if c.args and
                c.args[2]["W_out"].dtype == torch.float64)
    src, tgt, params, heads = case.args
    ref = spec.reference(*case.args)
    tol = lambda dtype: spec.tol(dtype, case)  # noqa: E731
    exact = T.reference_logits(params, heads, pe64=True)(src, tgt)
    assert (exact - ref).abs().max() > 1e-9          # the two differ by more than the float64 tolerance
    assert spec.judge(case, ref.clone(), ref, tol).ok and spec.judge(case, exact, ref, tol).ok
    assert not spec.judge(case, ref.float().double(), ref, tol).ok     # a result rounded to float32


def _annotated_encoding(T_, d):
    """The Annotated Transformer's encoding, float32 arithmetic throughout."""
    import math
    pe = torch.zeros(T_, d)
    position = torch.arange(0, T_).unsqueeze(1)
    frequencies = torch.exp(torch.arange(0, d, 2) * -(math.log(10000.0) / d))
    pe[:, 0::2], pe[:, 1::2] = torch.sin(position * frequencies), torch.cos(position * frequencies)
    return pe


def _model_with_encoding(case, encode, embed_dtype=torch.float64):
    """(logits, the trace tracing.py would record) of the float64 model adding `encode`'s encoding,
    its embedding rows rounded through `embed_dtype` first."""
    from grader.catalog.references.float64 import to64
    src, tgt, params, heads = case.args
    p = to64(params)
    inputs_ = [(p[table][ids].to(embed_dtype).double() + encode(ids.shape[1], p[table].shape[1]).double())
               for table, ids in (("src_embed", src), ("tgt_embed", tgt))]
    model = T.reference_model(params, heads)
    causal = ~torch.tril(torch.ones(tgt.shape[1], tgt.shape[1], dtype=torch.bool))
    with torch.no_grad():
        logits = model(*inputs_, tgt_mask=causal) @ p["W_out"] + p["b_out"]
    trace = [{"fn": "encoder_layer", "in": inputs_[0]}, {"fn": "decoder_layer", "in": inputs_[1], "memory": None}]
    return logits, trace


def test_a_float64_model_may_add_its_own_float32_encoding_and_nothing_else_in_float32():
    """The contract's positional_encoding returns float32, and a student's, written the Annotated
    Transformer's way, rounds otherwise than the grader's (~5e-8), which moves a float64 model's logits
    past float64's tolerance. The judge reads the encoding the model added from its first
    encoder_layer and decoder_layer inputs (what the child traced) and holds the logits to float64's
    tolerance with it: only when that encoding is the same for the whole batch (an embedding rounded
    to float32 is not) and one positional_encoding's exercise accepts."""
    spec = select(["transformer.transformer_forward"])[0]
    case = next(c for c in spec.cases(torch.Generator().manual_seed(0)) if c.args and
                c.args[2]["W_out"].dtype == torch.float64)
    ref = spec.reference(*case.args)
    tol = lambda dtype: spec.tol(dtype, case)  # noqa: E731
    probe_of = lambda trace: (lambda name, *a: trace)  # noqa: E731
    value, trace = _model_with_encoding(case, _annotated_encoding)
    assert not spec.judge(case, value, ref, tol).ok                           # without the trace: as before
    assert spec.judge(case, value, ref, tol, probe_of(trace)).ok
    assert not spec.judge(case, value.float().double(), ref, tol, probe_of(trace)).ok   # logits through float32
    rounded, trace32 = _model_with_encoding(case, _annotated_encoding, embed_dtype=torch.float32)
    assert not spec.judge(case, rounded, ref, tol, probe_of(trace32)).ok       # embeddings through float32
    wrong, trace_w = _model_with_encoding(case, lambda t, d: _annotated_encoding(t, d) * 1.01)
    assert not spec.judge(case, wrong, ref, tol, probe_of(trace_w)).ok         # not an encoding PE's exercise takes
    assert not spec.judge(case, value, ref, tol, probe_of([])).ok              # no layer called: nothing to read
    for junk in ("trace", [{"fn": "encoder_layer", "in": "x"}], [1, None], {"fn": "decoder_layer"}):
        assert not spec.judge(case, value, ref, tol, probe_of(junk)).ok       # a child's junk: a verdict, no fault

    def raising(name, *args):
        raise RuntimeError("the child is gone")
    assert not spec.judge(case, value, ref, tol, raising).ok


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_greedy_cases_are_tie_free_for_hidden_seeds(seed):
    """Any seed (the secret one too) gives cases where a float32 decoder agrees with the float64
    reference token for token, and whose eos patterns are the ones their names promise."""
    outs = []
    with pinned(1):
        for case in greedy_cases(torch.Generator().manual_seed(seed)):
            src, p, h, bos, eos, max_len = case.args
            expected = ref_greedy_decode(*case.args)
            assert torch.equal(M.greedy_decode(src, p, h, bos, eos, max_len), expected), case.name   # float32
            outs.append((expected, eos, max_len))
    (early, eos, max_len), (full, eos1, max_len1) = outs[0], outs[1]
    assert early.shape[1] < max_len and bool((early == eos).any(1).all())
    assert full.shape[1] == max_len1 and not bool((full[:, 1:] == eos1).any())
    some, eos2, _ = outs[2]
    finished = (some[:, 1:] == eos2).any(1)
    assert bool(finished.any()) and not bool(finished.all())


def test_greedy_case_never_raises_when_its_pattern_is_impossible():
    """Hidden cases come from any seed: a case that cannot get its eos pattern still comes out,
    tie-free, with an eos_id the model never writes (here "all stop early" cannot fit in max_len=3)."""
    with pinned(1):
        case = greedy_case(torch.Generator().manual_seed(0), "impossible", B=2, S=3, V=6, d=8, h=2, layers=1,
                           max_len=3, want="all")
        tokens = ref_greedy_decode(*case.args)
    assert tokens.shape == (2, 3) and not bool((tokens[:, 1:] == case.args[4]).any())


# ----------------------------------------------------------------------------- slow: capstone and alternatives
@pytest.mark.slow
def test_capstone_trains_the_solution(graded):
    e = graded("capstone_solutions", {}, ["transformer.transformer_forward"], specs=SPECS)[
        "transformer.transformer_forward"]
    assert e.status is Status.PASSED, [c.message for c in e.cases]
    assert any("capstone" in c.name for c in e.cases)


@pytest.mark.slow
def test_capstone_fails_a_model_without_positional_encoding(graded):
    functions = {"transformer.transformer_forward": _mistake("transformer", "transformer_forward", "no_pe")}
    e = graded("capstone_no_pe", functions, ["transformer.transformer_forward"], specs=SPECS)[
        "transformer.transformer_forward"]
    case = next(c for c in e.cases if "capstone" in c.name)
    assert case.status is Status.FAILED
    assert "held-out target tokens" in case.message and "it should reach 90%" in case.message


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["reads_the_answer", "reads_the_answer_and_hides_the_weights"])
def test_capstone_fails_a_forward_that_reads_the_answer_off_its_input(graded, variant):
    """Reversal's answer is in src_ids: a forward that returns it predicts 100% with weights that learnt
    nothing; run by nn.Transformer, those weights are near chance. The red team's also popped W_out
    from the params it was handed: the driver still returns the model it trained, and the parent
    still runs it as nn.Transformer."""
    functions = {"transformer.transformer_forward": _mistake("transformer", "transformer_forward", variant)}
    e = graded(f"capstone_{variant}", functions, ["transformer.transformer_forward"], specs=SPECS)[
        "transformer.transformer_forward"]
    case = next(c for c in e.cases if "capstone" in c.name)
    assert case.status is Status.FAILED and "predicts 100.0%" in case.message, case.message
    assert "must solve the task as a transformer too" in case.message and e.points == 0


def test_capstone_verdict_refuses_weights_not_laid_out_as_the_model_it_trained():
    """What the child sends is checked before the parent runs it: weights of another layout (a key
    missing, a size changed) are no trained model, and are never built into nn.Transformer."""
    cfg = capstone.task(3)
    ref = capstone_judge.reference(cfg)
    vocab = capstone.FIRST_SYMBOL + cfg["symbols"]
    params = inputs.model_params(torch.Generator().manual_seed(1), vocab, vocab, cfg["d_model"], cfg["d_ff"],
                                 cfg["layers"], cfg["layers"])
    logits = torch.nn.functional.one_hot(ref["tgt_out"], vocab).double() * 10
    value = {"logits": logits, "losses": [1.0, 0.1], "params": params}
    assert "nn.Transformer with your trained weights scores" in capstone_judge.verdict(cfg, value, ref).message
    for broken in ({k: v for k, v in params.items() if k != "W_out"}, {**params, "W_out": torch.zeros(10 ** 4, 10)}):
        verdict = capstone_judge.verdict(cfg, {**value, "params": broken}, ref)
        assert not verdict.ok and "no usable trained weights" in verdict.message


@pytest.mark.slow
def test_capstone_says_when_the_forward_cannot_be_trained(graded):
    functions = {"transformer.transformer_forward": _mistake("transformer", "transformer_forward",
                                                             "capstone_detached")}
    e = graded("capstone_detached", functions, ["transformer.transformer_forward"], specs=SPECS)[
        "transformer.transformer_forward"]
    statuses = {c.name: c.status for c in e.cases}
    capstone_case = next(c for c in e.cases if "capstone" in c.name)
    assert [s for n, s in statuses.items() if "capstone" not in n] == [Status.PASSED] * (len(statuses) - 1)
    assert capstone_case.status is Status.ERROR
    assert "do not depend differentiably on params" in capstone_case.message


@pytest.mark.slow
@pytest.mark.parametrize("style", ["einsum", "plain"])
def test_independent_solutions_score_full_marks(graded, style):
    path = FIXTURES / "submissions" / f"alt_transformer_{style}" / "transformer.py"
    results = graded(f"alt_{style}", {}, list(SPECS), specs=SPECS, files={"transformer.py": path})
    assert {i: e.status for i, e in results.items()} == {i: Status.PASSED for i in SPECS}, \
        {i: e.message for i, e in results.items() if e.status is not Status.PASSED}
