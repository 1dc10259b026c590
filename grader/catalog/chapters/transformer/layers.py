"""The transformer chapter's sub-layers and layers: layer_norm, add_and_norm, feed_forward,
encoder_layer, decoder_layer.

References are PyTorch's own modules holding the student's weights, in float64
(grader.catalog.references.torch_modules); known mistakes are the course's equations with one
thing changed (grader.catalog.references.equations). Every exercise that calls other exercises is
graded with the grader's versions of them (`depends`), so a bug is charged once, where it is.
"""
from __future__ import annotations

import torch

from grader.catalog.inputs import ffn_params, layer_params, ln_params, randn
from grader.catalog.probes.sublayers import localise_decoder, localise_encoder
from grader.catalog.references import equations as M
from grader.catalog.references.equations import variant
from grader.catalog.references.torch_modules import (ref_add_and_norm, ref_decoder_layer, ref_encoder_layer,
                                                     ref_feed_forward, ref_layer_norm)
from grader.catalog.rules import LAYER_NORM, MHA, TRANSFORMER_MODULES
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake, substitutes

F32, F64 = torch.float32, torch.float64
LAYERS_FORBIDDEN = (TRANSFORMER_MODULES, MHA)
LAYER_TOLERANCE = {F32: (2e-5, 2e-4), F64: (1e-10, 1e-8)}


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
    id="transformer.layer_norm", points=2, cases=layer_norm_cases, reference=ref_layer_norm,
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
    id="transformer.add_and_norm", points=1, cases=add_norm_cases, reference=ref_add_and_norm,
    reference_source="torch.nn.functional.layer_norm(X + sublayer_out), in float64",
    tolerance=LAYER_TOLERANCE, depends=substitutes("layer_norm"),
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
    id="transformer.feed_forward", points=1, cases=ffn_cases, reference=ref_feed_forward,
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
    id="transformer.encoder_layer", points=3, cases=encoder_cases, reference=ref_encoder_layer,
    reference_source="torch.nn.TransformerEncoderLayer(batch_first=True, dropout=0, norm_first=False, "
                     "activation='relu') with your weights, in float64",
    tolerance=LAYER_TOLERANCE, forbidden=LAYERS_FORBIDDEN, localise=localise_encoder,
    depends=substitutes("multi_head_attention", "layer_norm", "add_and_norm", "feed_forward"),
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
    id="transformer.decoder_layer", points=3, cases=decoder_cases, reference=ref_decoder_layer,
    reference_source="torch.nn.TransformerDecoderLayer(batch_first=True, dropout=0, norm_first=False, "
                     "activation='relu') with your weights and a causal target mask, in float64",
    tolerance=LAYER_TOLERANCE, forbidden=LAYERS_FORBIDDEN, localise=localise_decoder,
    depends=substitutes("multi_head_attention", "causal_mask", "layer_norm", "add_and_norm", "feed_forward"),
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
