"""Specs for the transformer chapter: layer_norm, add_and_norm, feed_forward, encoder_layer,
decoder_layer, transformer_forward, greedy_decode.

References are PyTorch's own modules holding the student's weights, in float64
(grader.catalog._part3_torch); known mistakes are the course's equations with one thing
changed (grader.catalog._part3_math). Every exercise that calls other exercises is graded
with the grader's versions of them (`depends`), so a bug is charged once, where it is.
"""
from __future__ import annotations

import torch

from grader.catalog import _part3_capstone as cap
from grader.catalog import _part3_math as M
from grader.catalog._part3_decode import greedy_cases, ref_greedy_decode
from grader.catalog._part3_localise import localise_decoder, localise_encoder, localise_model
from grader.catalog._part3_torch import (F32, F64, ffn_params, layer_params, ln_params, model_params,
                                         on_one_thread, ref_add_and_norm, ref_decoder_layer, ref_encoder_layer,
                                         ref_feed_forward, ref_layer_norm, ref_transformer_forward)
from grader.catalog._part3_rules import LAYER_NORM, TRANSFORMER_MODULES
from grader.catalog.rules import MHA
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake, Verdict, randint, randn
from grader.pipeline.compare import compare_outputs
from grader.pipeline.feedback import comparisons_message

LAYERS_FORBIDDEN = (TRANSFORMER_MODULES, MHA)
LAYER_TOLERANCE = {F32: (2e-5, 2e-4), F64: (1e-10, 1e-8)}


def _float_dtype(x):
    """The dtype of the first floating tensor in a nested structure (the case's precision)."""
    if isinstance(x, torch.Tensor):
        return x.dtype if x.is_floating_point() else None
    items = x.values() if isinstance(x, dict) else x if isinstance(x, (list, tuple)) else ()
    return next((d for d in map(_float_dtype, items) if d is not None), None)


def variant(fn, **switches):
    """A known mistake: the course's equation `fn` with one switch, computed in float64 and
    returned in the case's dtype (token ids stay int64)."""
    def wrong(*args, **kwargs):
        out = fn(*M.to64(args), **M.to64(kwargs), **switches)
        return out.to(_float_dtype(args)) if out.is_floating_point() else out
    return wrong


# ----------------------------------------------------------------------------- layer_norm
def layer_norm_cases(gen):
    return [
        Case("(B, T, d) tokens", (randn(gen, 2, 5, 16), *ln_params(gen, 16))),
        Case("(N, d) rows", (randn(gen, 6, 8, scale=3.0), *ln_params(gen, 8))),
        Case("almost constant rows: eps matters", (randn(gen, 3, 4, 16, scale=1e-3), *ln_params(gen, 16)),
             note="variance ~1e-6, below eps: eps goes inside the square root"),
        Case("eps=1e-3 given", (randn(gen, 2, 3, 12), *ln_params(gen, 12)), {"eps": 1e-3}),
        Case("float64", (randn(gen, 2, 4, 32, dtype=F64), *ln_params(gen, 32, F64))),
    ]


LAYER_NORM_SPEC = ExerciseSpec(
    id="transformer.layer_norm", cases=layer_norm_cases, reference=ref_layer_norm,
    reference_source="torch.nn.functional.layer_norm over the last dim, in float64",
    tolerance=LAYER_TOLERANCE, forbidden=(LAYER_NORM,),
    mistakes=(
        KnownMistake("unbiased variance", "layer norm divides the squared deviations by d, not d - 1 "
                     "(torch.var defaults to d - 1: pass unbiased=False or correction=0)",
                     variant(M.layer_norm, unbiased=True)),
        KnownMistake("eps outside the square root", "add eps to the variance, then take the root: "
                     "sqrt(var + eps), not sqrt(var) + eps", variant(M.layer_norm, eps_outside=True)),
        KnownMistake("normalised over the wrong dim", "each token is normalised over its own features, the "
                     "last dim (dim=-1), not over the first dim (that is batch norm)", variant(M.layer_norm, dim=0)),
        KnownMistake("gamma and beta swapped", "scale by gamma, then shift by beta: x_hat * gamma + beta",
                     variant(M.layer_norm, swap=True)),
    ),
)


# ----------------------------------------------------------------------------- add_and_norm
def add_norm_cases(gen):
    return [
        Case("(B, T, d)", (randn(gen, 2, 5, 16), randn(gen, 2, 5, 16), *ln_params(gen, 16))),
        Case("(N, d), eps=1e-3", (randn(gen, 4, 8), randn(gen, 4, 8, scale=0.5), *ln_params(gen, 8)), {"eps": 1e-3}),
        Case("float64", (randn(gen, 2, 3, 24, dtype=F64), randn(gen, 2, 3, 24, dtype=F64), *ln_params(gen, 24, F64))),
    ]


ADD_AND_NORM_SPEC = ExerciseSpec(
    id="transformer.add_and_norm", cases=add_norm_cases, reference=ref_add_and_norm,
    reference_source="torch.nn.functional.layer_norm(X + sublayer_out), in float64",
    tolerance=LAYER_TOLERANCE, depends=M.substitutes("layer_norm"),
    mistakes=(
        KnownMistake("residual added after the norm", "add first, then normalise the sum: "
                     "layer_norm(X + sublayer_out), not X + layer_norm(sublayer_out)",
                     variant(M.add_and_norm, kind="residual after norm")),
        KnownMistake("residual missing", "add the sub-layer's input X back before normalising: "
                     "layer_norm(X + sublayer_out)", variant(M.add_and_norm, kind="no residual")),
        KnownMistake("norm missing", "after adding, normalise: layer_norm(X + sublayer_out, gamma, beta)",
                     variant(M.add_and_norm, kind="no norm")),
    ),
)


# ----------------------------------------------------------------------------- feed_forward
def ffn_cases(gen):
    def case(name, X, d, d_ff, dtype=F32):
        p = ffn_params(gen, d, d_ff, dtype)
        return Case(name, (X, p["W1"], p["b1"], p["W2"], p["b2"]))
    return [case("(B, T, d_model), d_ff = 4 d_model", randn(gen, 2, 5, 16), 16, 64),
            case("(N, d_model), d_ff < d_model", randn(gen, 6, 12), 12, 8),
            case("float64", randn(gen, 2, 3, 16, dtype=F64), 16, 32, F64)]


FEED_FORWARD_SPEC = ExerciseSpec(
    id="transformer.feed_forward", cases=ffn_cases, reference=ref_feed_forward,
    reference_source="F.linear(F.relu(F.linear(X, W1.T, b1)), W2.T, b2), in float64",
    tolerance=LAYER_TOLERANCE,
    mistakes=(
        KnownMistake("ReLU missing", "apply relu to X @ W1 + b1 before the second layer: without it the two "
                     "layers collapse into one linear map", variant(M.feed_forward, act="none")),
        KnownMistake("ReLU after the second layer too", "the FFN's output is H @ W2 + b2, with no activation "
                     "after it", variant(M.feed_forward, relu_after=True)),
        KnownMistake("biases missing", "both layers have a bias: relu(X @ W1 + b1) @ W2 + b2",
                     variant(M.feed_forward, bias=False)),
        KnownMistake("GELU instead of ReLU", "the course's FFN uses ReLU, max(0, x)",
                     variant(M.feed_forward, act="gelu")),
    ),
)


# ----------------------------------------------------------------------------- encoder_layer
def _mask(gen, *shape):
    m = torch.rand(*shape, generator=gen) < 0.6
    m[..., 0] = True          # every query keeps a key: no all-masked rows
    return m


def encoder_cases(gen):
    return [
        Case("d_model=16, 4 heads, no mask", (randn(gen, 2, 5, 16), layer_params(gen, 16, 64), 4)),
        Case("(T, T) mask", (randn(gen, 2, 6, 16), layer_params(gen, 16, 32), 2), {"mask": _mask(gen, 6, 6)}),
        Case("(B, T, T) mask", (randn(gen, 3, 4, 12), layer_params(gen, 12, 48), 3), {"mask": _mask(gen, 3, 4, 4)}),
        Case("T=1, one head", (randn(gen, 2, 1, 8), layer_params(gen, 8, 16), 1)),
        Case("float64, 8 heads", (randn(gen, 2, 5, 32, dtype=F64), layer_params(gen, 32, 64, dtype=F64), 8)),
    ]


ENCODER_LAYER_SPEC = ExerciseSpec(
    id="transformer.encoder_layer", cases=encoder_cases, reference=ref_encoder_layer,
    reference_source="torch.nn.TransformerEncoderLayer(batch_first=True, dropout=0, norm_first=False, "
                     "activation='relu') with your weights, in float64",
    tolerance=LAYER_TOLERANCE, forbidden=LAYERS_FORBIDDEN, localise=localise_encoder,
    depends=M.substitutes("multi_head_attention", "layer_norm", "add_and_norm", "feed_forward"),
    mistakes=(
        KnownMistake("pre-norm instead of post-norm", "the course (and norm_first=False) normalises after the "
                     "residual sum: X = layer_norm(X + sublayer(X)), not X + sublayer(layer_norm(X))",
                     variant(M.encoder_layer, norm="pre")),
        KnownMistake("residual added after the norm", "add & norm is layer_norm(X + sublayer(X)); you computed "
                     "X + layer_norm(sublayer(X))", variant(M.encoder_layer, norm="residual after norm")),
        KnownMistake("residual connections missing", "each sub-layer's input is added to its output before "
                     "the norm: layer_norm(X + sublayer(X))", variant(M.encoder_layer, norm="no residual")),
        KnownMistake("mask not passed to the attention", "pass the layer's mask on to multi_head_attention",
                     variant(M.encoder_layer, use_mask=False)),
        KnownMistake("ln1 and ln2 swapped", "ln1 belongs to the add & norm after the attention, ln2 to the one "
                     "after the FFN", variant(M.encoder_layer, swap_norms=True)),
    ),
)


# ----------------------------------------------------------------------------- decoder_layer
def decoder_cases(gen):
    return [
        Case("T=4 target, S=6 memory, 4 heads", (randn(gen, 2, 4, 16), randn(gen, 2, 6, 16),
                                                  layer_params(gen, 16, 64, True), 4)),
        Case("T = S", (randn(gen, 2, 5, 12), randn(gen, 2, 5, 12), layer_params(gen, 12, 24, True), 3)),
        Case("T=1: only <bos>", (randn(gen, 3, 1, 8), randn(gen, 3, 4, 8), layer_params(gen, 8, 16, True), 2)),
        Case("float64, 8 heads", (randn(gen, 2, 6, 32, dtype=F64), randn(gen, 2, 3, 32, dtype=F64),
                                  layer_params(gen, 32, 64, True, F64), 8)),
    ]


DECODER_LAYER_SPEC = ExerciseSpec(
    id="transformer.decoder_layer", cases=decoder_cases, reference=ref_decoder_layer,
    reference_source="torch.nn.TransformerDecoderLayer(batch_first=True, dropout=0, norm_first=False, "
                     "activation='relu') with your weights and a causal target mask, in float64",
    tolerance=LAYER_TOLERANCE, forbidden=LAYERS_FORBIDDEN, localise=localise_decoder,
    depends=M.substitutes("multi_head_attention", "causal_mask", "layer_norm", "add_and_norm", "feed_forward"),
    mistakes=(
        KnownMistake("cross-attention keys and values from the decoder", "in the cross-attention the queries "
                     "come from the decoder but the keys and values from the encoder's memory: "
                     "multi_head_attention(Y, memory, params['cross_attn'], ...)",
                     variant(M.decoder_layer, cross_kv="decoder")),
        KnownMistake("self-attention without the causal mask", "the decoder's self-attention must not see "
                     "future positions: pass causal_mask(T)", variant(M.decoder_layer, causal=False)),
        KnownMistake("pre-norm instead of post-norm", "normalise after the residual sum: "
                     "Y = layer_norm(Y + sublayer(Y)), not Y + sublayer(layer_norm(Y))",
                     variant(M.decoder_layer, norm="pre")),
        KnownMistake("residual added after the norm", "add & norm is layer_norm(Y + sublayer(Y)); you computed "
                     "Y + layer_norm(sublayer(Y))", variant(M.decoder_layer, norm="residual after norm")),
        KnownMistake("cross-attention before self-attention", "the order is masked self-attention, then "
                     "cross-attention, then the FFN", variant(M.decoder_layer, order="cross first")),
    ),
)


# ----------------------------------------------------------------------------- transformer_forward
def model_cases(gen):
    def case(name, B, S, T, v_src, v_tgt, d, h, n_enc, n_dec, dtype=F32):
        p = model_params(gen, v_src, v_tgt, d, 2 * d, n_enc, n_dec, dtype)
        return Case(name, (randint(gen, 0, v_src, B, S), randint(gen, 0, v_tgt, B, T), p, h))
    return [
        case("1 + 1 layers, d_model=16, 2 heads", 2, 5, 4, 11, 9, 16, 2, 1, 1),
        case("2 + 2 layers, 4 heads", 2, 7, 6, 13, 10, 16, 4, 2, 2),
        case("T_tgt=1: only <bos>", 3, 4, 1, 7, 7, 8, 2, 1, 1),
        case("float64, 2 encoder and 1 decoder layers", 2, 6, 5, 9, 12, 32, 4, 2, 1, F64),
        Case("capstone: learns to reverse sequences", (),
             {"capstone": cap.task(int(randint(gen, 0, 1 << 30, 1)))},
             note="trains your transformer_forward with Adam (autograd through it) and checks it learns"),
    ]


MODEL_TOLERANCE = {F32: (5e-5, 2e-4), F64: (1e-9, 1e-8)}


def ref_model(src_ids=None, tgt_ids=None, params=None, num_heads=None, capstone=None):
    if capstone is not None:
        return cap.reference(capstone)
    return ref_transformer_forward(src_ids, tgt_ids, params, num_heads)


def judge_model(case, value, ref) -> Verdict:
    """The capstone's verdict for its case; the usual comparison for every other case.
    (A spec's judge replaces the comparison for all its cases.)"""
    if "capstone" in case.kwargs:
        return cap.verdict(case.kwargs["capstone"], value, ref)
    comps = compare_outputs(value, ref, ("logits",), lambda dtype: TRANSFORMER_FORWARD_SPEC.tol(dtype, case))
    return Verdict(all(c.ok for c in comps), comparisons_message(comps), comps)


TRANSFORMER_FORWARD_SPEC = ExerciseSpec(
    id="transformer.transformer_forward", cases=model_cases, reference=ref_model,
    reference_source="torch.nn.Transformer(batch_first=True, dropout=0) with your weights, behind the grader's "
                     "embedding + positional encoding and before its output layer, in float64",
    outputs=("logits",), tolerance=MODEL_TOLERANCE, forbidden=LAYERS_FORBIDDEN,
    depends=M.substitutes("multi_head_attention", "causal_mask", "positional_encoding", "layer_norm",
                          "add_and_norm", "feed_forward", "encoder_layer", "decoder_layer"),
    driver="grader.catalog._part3_capstone:driver", judge=judge_model, localise=localise_model,
    call_timeout=30.0,             # the capstone trains for a few seconds
    mistakes=(
        KnownMistake("positional encoding not added", "add positional_encoding(T, d_model) to the embeddings "
                     "of both stacks' inputs: attention alone cannot tell positions apart",
                     variant(M.transformer_forward, pe_times=0)),
        KnownMistake("positional encoding added twice", "add the positional encoding once, to the embeddings; "
                     "encoder_layer and decoder_layer do not add it again", variant(M.transformer_forward, pe_times=2)),
        KnownMistake("final encoder and decoder norms missing", "nn.Transformer applies a final layer_norm after "
                     "each stack: enc_norm_gamma/beta on the memory, dec_norm_gamma/beta before W_out",
                     variant(M.transformer_forward, enc_norm=False, dec_norm=False)),
        KnownMistake("final encoder norm missing", "normalise the last encoder layer's output with enc_norm_gamma "
                     "and enc_norm_beta: that is the memory", variant(M.transformer_forward, enc_norm=False)),
        KnownMistake("final decoder norm missing", "normalise the last decoder layer's output with dec_norm_gamma "
                     "and dec_norm_beta before the output layer", variant(M.transformer_forward, dec_norm=False)),
        KnownMistake("embeddings scaled by sqrt(d_model)", "the course (and this reference) adds the positional "
                     "encoding to the unscaled embeddings", variant(M.transformer_forward, scale_embed=True)),
        KnownMistake("layers not chained", "each layer transforms the previous layer's output; you gave every "
                     "layer the embeddings", variant(M.transformer_forward, chain=False)),
    ),
)


# ----------------------------------------------------------------------------- greedy_decode
GREEDY_DECODE_SPEC = ExerciseSpec(
    id="transformer.greedy_decode", cases=greedy_cases, reference=ref_greedy_decode,
    reference_source="nn.Transformer with your weights (and the grader's embedding, positional encoding and "
                     "output layer), decoded greedily in float64",
    outputs=("tokens",), exact=True, forbidden=LAYERS_FORBIDDEN, heatmaps=("tokens",),
    depends=M.substitutes("multi_head_attention", "causal_mask", "positional_encoding", "layer_norm",
                          "add_and_norm", "feed_forward", "encoder_layer", "decoder_layer", "transformer_forward"),
    mistakes=(
        KnownMistake("argmax of the whole sequence", "the next token is the argmax of the last position's "
                     "logits, logits[:, -1].argmax(-1), not of the logits of every position at once",
                     variant(M.greedy_decode, pick="whole")),
        KnownMistake("argmax of the first position", "take the logits of the last position (logits[:, -1]): "
                     "position 0 only ever predicts the token after <bos>", variant(M.greedy_decode, pick="first")),
        KnownMistake("no eos padding", "once a sequence has produced eos_id, append eos_id to it at every later "
                     "step, whatever the model predicts", variant(M.greedy_decode, pad=False)),
        KnownMistake("stops at the first eos in the batch", "stop when every sequence has produced eos_id "
                     "(finished.all()), not as soon as one has", variant(M.greedy_decode, stop="any")),
        KnownMistake("never stops early", "stop as soon as every sequence has produced eos_id, before max_len",
                     variant(M.greedy_decode, stop="never")),
    ),
)

SPECS = tuple(on_one_thread(s) for s in (LAYER_NORM_SPEC, ADD_AND_NORM_SPEC, FEED_FORWARD_SPEC, ENCODER_LAYER_SPEC,
                                         DECODER_LAYER_SPEC, TRANSFORMER_FORWARD_SPEC, GREEDY_DECODE_SPEC))
