"""Specs for the attention chapter: causal_mask, scaled_dot_product_attention,
multi_head_attention, positional_encoding. References read like the math (micrograd style)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from grader.catalog.inputs import mha_params, randint, randn
from grader.catalog.references.float64 import in64
from grader.catalog.rules import MHA, SDPA
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake, substitutes

F32, F64 = torch.float32, torch.float64


# ----------------------------------------------------------------------------- causal_mask
def ref_causal_mask(T):
    return torch.tril(torch.ones(T, T, dtype=torch.bool))


def causal_cases(gen):
    T = int(randint(gen, 2, 64, 1))          # drawn: hidden cases are other sizes than the public ones
    return [Case("T=4", (4,)), Case("T=1", (1,), note="a single position attends to itself"),
            Case("T=7", (7,)), Case("T=32", (32,)), Case(f"T={T}", (T,))]


CAUSAL_MASK = ExerciseSpec(
    id="attention.causal_mask",
    points=1,
    cases=causal_cases,
    reference=ref_causal_mask,
    reference_source="torch.tril(torch.ones(T, T, dtype=torch.bool))",
    outputs=("mask",),
    heatmaps=("mask",),
    mistakes=(
        KnownMistake("diagonal excluded", "the diagonal must be True: position i may attend to itself "
                     "(key j <= query i, not j < i)", lambda T: torch.tril(torch.ones(T, T, dtype=torch.bool), -1)),
        KnownMistake("mask inverted", "True must mean 'may attend' (PyTorch's convention): you marked the "
                     "future as allowed and the past as blocked",
                     lambda T: ~torch.tril(torch.ones(T, T, dtype=torch.bool))),
        KnownMistake("mask transposed", "rows are queries and columns keys: mask[i, j] is True for j <= i, "
                     "a lower triangle, not an upper one", lambda T: torch.triu(torch.ones(T, T, dtype=torch.bool))),
        KnownMistake("float mask", "return a bool tensor (True/False), not 0/1 numbers",
                     lambda T: torch.tril(torch.ones(T, T))),
    ),
)


# ------------------------------------------------------------------ scaled dot-product attention
def _attention(Q, K, V, mask, scale, dim=-1, fill=float("-inf"), invert=False):
    scores = Q @ K.transpose(-2, -1) * scale
    if mask is not None:
        keep = ~mask if invert else mask
        scores = scores.masked_fill(~keep, fill)
    weights = torch.softmax(scores, dim=dim)
    return weights @ V, weights


def _ref_sdpa(Q, K, V, mask=None):
    out = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return out, torch.softmax(scores, dim=-1)


ref_sdpa = in64(_ref_sdpa)


def _random_mask(gen, *shape):
    m = torch.rand(*shape, generator=gen) < 0.6
    m[..., 0] = True          # every query keeps at least one key: no all-masked rows (NaN)
    return m


def sdpa_cases(gen):
    causal = torch.tril(torch.ones(5, 5, dtype=torch.bool))
    return [
        Case("small, no mask, T_q != T_k", (randn(gen, 2, 4, 8), randn(gen, 2, 6, 8), randn(gen, 2, 6, 8))),
        Case("causal 2-D mask, d_k != d_v", (randn(gen, 2, 5, 16), randn(gen, 2, 5, 16), randn(gen, 2, 5, 4)),
             {"mask": causal}, note="a (T, T) mask broadcast over the batch"),
        Case("heads, 4-D mask broadcast over heads",
             (randn(gen, 2, 3, 4, 8), randn(gen, 2, 3, 6, 8), randn(gen, 2, 3, 6, 5)),
             {"mask": _random_mask(gen, 2, 1, 4, 6)}),
        Case("3-D mask per batch", (randn(gen, 3, 4, 8), randn(gen, 3, 4, 8), randn(gen, 3, 4, 8)),
             {"mask": _random_mask(gen, 3, 4, 4)}),
        Case("T=1", (randn(gen, 2, 1, 8), randn(gen, 2, 1, 8), randn(gen, 2, 1, 8)),
             {"mask": torch.ones(1, 1, dtype=torch.bool)}),
        Case("float64, larger d_k", (randn(gen, 2, 6, 32, dtype=F64), randn(gen, 2, 7, 32, dtype=F64),
                                     randn(gen, 2, 7, 12, dtype=F64)), {"mask": _random_mask(gen, 6, 7)}),
    ]


def _sdpa_mistake(**kw):
    def fn(Q, K, V, mask=None):
        d_k, d_v = Q.shape[-1], V.shape[-1]
        scale = {"none": 1.0, "d_k": 1.0 / d_k, "d_v": 1.0 / math.sqrt(d_v)}.get(kw.get("scale"), 1 / math.sqrt(d_k))
        m = mask.transpose(-2, -1) if kw.get("transpose") and mask is not None else mask
        m = None if kw.get("ignore_mask") else m
        return _attention(Q.double(), K.double(), V.double(), m, scale, dim=kw.get("dim", -1),
                          fill=kw.get("fill", float("-inf")), invert=kw.get("invert", False))
    return fn


SCALED_DOT_PRODUCT_ATTENTION = ExerciseSpec(
    id="attention.scaled_dot_product_attention",
    points=3,
    cases=sdpa_cases,
    reference=ref_sdpa,
    reference_source="torch.nn.functional.scaled_dot_product_attention (out) and the softmax of the masked, "
                     "scaled scores (weights), in float64",
    outputs=("out", "weights"),
    tolerance={F32: (2e-5, 1e-4), F64: (1e-10, 1e-8)},
    heatmaps=("weights",),
    forbidden=(SDPA,),
    mistakes=(
        KnownMistake("missing 1/sqrt(d_k)", "divide the scores Q K^T by sqrt(d_k) before the softmax; without it "
                     "the softmax saturates as d_k grows", _sdpa_mistake(scale="none")),
        KnownMistake("scaled by d_k instead of sqrt(d_k)", "the scores are divided by sqrt(d_k), the square root "
                     "of the query/key width, not by d_k itself", _sdpa_mistake(scale="d_k")),
        KnownMistake("scaled by sqrt(d_v)", "the scaling uses d_k (the width of Q and K, Q.shape[-1]), not d_v "
                     "(the width of V)", _sdpa_mistake(scale="d_v")),
        KnownMistake("softmax over the wrong dim", "each query's weights over the keys must sum to 1: take the "
                     "softmax over the last dim (dim=-1), not over the queries", _sdpa_mistake(dim=-2)),
        KnownMistake("mask inverted", "True in the mask means 'may attend': fill the scores with -inf where the "
                     "mask is False (masked_fill(~mask, -inf))", _sdpa_mistake(invert=True)),
        KnownMistake("masked scores set to 0 instead of -inf", "a score of 0 still gets weight after the softmax; "
                     "masked keys need -inf so their weight is exactly 0", _sdpa_mistake(fill=0.0)),
        KnownMistake("mask transposed", "mask[..., i, j] is about query i and key j: use the mask as given, "
                     "without transposing it", _sdpa_mistake(transpose=True)),
        KnownMistake("mask ignored", "when a mask is given, fill the scores with -inf where it is False before the "
                     "softmax (masked_fill(~mask, float('-inf')))", _sdpa_mistake(ignore_mask=True)),
    ),
)


# ---------------------------------------------------------------------- multi-head attention
def ref_mha(X_q, X_kv, params, num_heads, mask=None):
    """nn.MultiheadAttention(batch_first=True) loaded with the student's weights, in float64."""
    d_model = X_q.shape[-1]
    mha = torch.nn.MultiheadAttention(d_model, num_heads, bias=True, batch_first=True, dropout=0.0).double()
    p = {k: v.double() for k, v in params.items()}
    with torch.no_grad():
        # PyTorch stores (out, in) weights and computes X W^T; the course writes X W.
        mha.in_proj_weight.copy_(torch.cat([p["W_Q"].T, p["W_K"].T, p["W_V"].T]))
        mha.in_proj_bias.copy_(torch.cat([p["b_Q"], p["b_K"], p["b_V"]]))
        mha.out_proj.weight.copy_(p["W_O"].T)
        mha.out_proj.bias.copy_(p["b_O"])
        attn_mask = None
        if mask is not None:          # PyTorch's MHA bool mask means "may NOT attend": invert it
            attn_mask = ~mask
            if mask.dim() == 3:       # (B, T_q, T_k) -> (B*h, T_q, T_k), batch-major as MHA expects
                attn_mask = attn_mask.repeat_interleave(num_heads, dim=0)
        out, _ = mha(X_q.double(), X_kv.double(), X_kv.double(), attn_mask=attn_mask, need_weights=False)
    return out.to(X_q.dtype)


def mha_cases(gen):
    causal = torch.tril(torch.ones(5, 5, dtype=torch.bool))
    x = randn(gen, 2, 5, 16)
    return [
        Case("self-attention, 4 heads", (x, x, mha_params(gen, 16), 4)),
        Case("cross-attention, T_q != T_k", (randn(gen, 2, 3, 16), randn(gen, 2, 7, 16), mha_params(gen, 16), 2)),
        Case("causal (T, T) mask", (x, x, mha_params(gen, 16), 4), {"mask": causal}),
        Case("(B, T_q, T_k) mask", (randn(gen, 3, 4, 12), randn(gen, 3, 6, 12), mha_params(gen, 12), 3),
             {"mask": _random_mask(gen, 3, 4, 6)}),
        Case("one head", (randn(gen, 1, 4, 8), randn(gen, 1, 4, 8), mha_params(gen, 8), 1)),
        Case("float64, 8 heads", (randn(gen, 2, 6, 32, dtype=F64), randn(gen, 2, 6, 32, dtype=F64),
                                  mha_params(gen, 32, F64), 8)),
    ]


def _mha_mistake(kind):
    def fn(X_q, X_kv, params, num_heads, mask=None):
        p = {k: v.double() for k, v in params.items()}
        if kind == "no bias":
            p = {k: (torch.zeros_like(v) if k.startswith("b_") else v) for k, v in p.items()}
        Xq, Xkv = X_q.double(), X_kv.double()
        B, T_q, d = Xq.shape
        T_k, h = Xkv.shape[1], num_heads
        dh = d // h

        def split(X, T):
            if kind == "no transpose":
                return X.reshape(B, h, T, dh)
            return X.reshape(B, T, h, dh).transpose(1, 2)
        Q = split(Xq @ p["W_Q"] + p["b_Q"], T_q)
        K, V = split(Xkv @ p["W_K"] + p["b_K"], T_k), split(Xkv @ p["W_V"] + p["b_V"], T_k)
        m = mask.unsqueeze(1) if mask is not None and mask.dim() == 3 else mask
        scale = 1 / math.sqrt(d) if kind == "sqrt d_model" else 1 / math.sqrt(dh)
        heads, _ = _attention(Q, K, V, m, scale)
        merged = heads if kind in ("merge no transpose", "no transpose") else heads.transpose(1, 2)
        concat = merged.reshape(B, T_q, d)
        if kind == "no output projection":
            return concat.to(X_q.dtype)
        return (concat @ p["W_O"] + p["b_O"]).to(X_q.dtype)
    return fn


MULTI_HEAD_ATTENTION = ExerciseSpec(
    id="attention.multi_head_attention",
    points=3,
    cases=mha_cases,
    reference=ref_mha,
    reference_source="torch.nn.MultiheadAttention(batch_first=True) with your weights (its bool mask inverted), "
                     "in float64",
    tolerance={F32: (2e-5, 1e-4), F64: (1e-10, 1e-8)},
    forbidden=(MHA,),
    depends=substitutes("scaled_dot_product_attention"),
    mistakes=(
        KnownMistake("heads split without a transpose", "reshape (B, T, d_model) to (B, T, h, d_head) and then "
                     "transpose to (B, h, T, d_head); reshaping straight to (B, h, T, d_head) mixes positions "
                     "into heads", _mha_mistake("no transpose")),
        KnownMistake("heads merged without a transpose", "before concatenating the heads, transpose "
                     "(B, h, T, d_head) back to (B, T, h, d_head), then reshape to (B, T, d_model)",
                     _mha_mistake("merge no transpose")),
        KnownMistake("missing output projection", "after concatenating the heads, apply W_O and b_O",
                     _mha_mistake("no output projection")),
        KnownMistake("biases missing", "each projection has a bias: X @ W_Q + b_Q, and likewise for K, V and "
                     "the output", _mha_mistake("no bias")),
        KnownMistake("scaled by sqrt(d_model)", "each head scales its scores by sqrt(d_head), the width of one "
                     "head, not sqrt(d_model)", _mha_mistake("sqrt d_model")),
    ),
)


# ---------------------------------------------------------------------- positional encoding
def _pe(T, d_model, *, swap=False, exponent="2i", start=0, halves=False):
    pos = torch.arange(start, start + T, dtype=F64).unsqueeze(1)
    if exponent == "column":
        angle = pos / torch.pow(10000.0, torch.arange(d_model, dtype=F64) / d_model)
        pe = torch.where(torch.arange(d_model) % 2 == 0, torch.sin(angle), torch.cos(angle))
        return pe.to(F32)
    i = torch.arange(d_model // 2, dtype=F64).unsqueeze(0)
    two_i = i if exponent == "i" else 2 * i
    angle = pos / torch.pow(10000.0, two_i / d_model)
    s, c = (torch.cos(angle), torch.sin(angle)) if swap else (torch.sin(angle), torch.cos(angle))
    if halves:
        return torch.cat([s, c], dim=1).to(F32)
    pe = torch.zeros(T, d_model, dtype=F64)
    pe[:, 0::2], pe[:, 1::2] = s, c
    return pe.to(F32)


def ref_positional_encoding(T, d_model):
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(same), computed in float64."""
    return _pe(T, d_model)


def pe_cases(gen):
    T, d = int(randint(gen, 2, 100, 1)), 2 * int(randint(gen, 2, 48, 1))
    return [Case("T=10, d_model=16", (10, 16)), Case("T=1", (1, 8)), Case("d_model=2", (6, 2)),
            Case("T=50, d_model=64", (50, 64)),
            Case("long sequence", (2048, 128), note="float32 angles of large positions round: tolerance 1e-3",
                 atol=1e-3, rtol=1e-3),
            Case(f"T={T}, d_model={d}", (T, d))]          # drawn: hidden cases are other sizes than the public ones


POSITIONAL_ENCODING = ExerciseSpec(
    id="attention.positional_encoding",
    points=2,
    cases=pe_cases,
    reference=ref_positional_encoding,
    reference_source="the course's formula sin/cos(pos / 10000^(2i/d_model)) in float64",
    tolerance={F32: (2e-5, 1e-4)},
    heatmaps=("output",),
    mistakes=(
        KnownMistake("sin and cos swapped", "even columns (0, 2, ...) take sin and odd columns take cos",
                     lambda T, d: _pe(T, d, swap=True)),
        KnownMistake("exponent i instead of 2i", "the frequency of pair i is 1/10000^(2i/d_model): the exponent "
                     "is 2i (the even column's index), not i", lambda T, d: _pe(T, d, exponent="i")),
        KnownMistake("each column its own frequency", "a sin/cos pair shares one frequency: columns 2i and 2i+1 "
                     "both use 10000^(2i/d_model)", lambda T, d: _pe(T, d, exponent="column")),
        KnownMistake("sin and cos in halves", "interleave: sin in the even columns and cos in the odd ones, not "
                     "all sines then all cosines", lambda T, d: _pe(T, d, halves=True)),
        KnownMistake("positions start at 1", "positions count from 0: the first row is sin(0)=0, cos(0)=1",
                     lambda T, d: _pe(T, d, start=1)),
    ),
)

SPECS = (CAUSAL_MASK, SCALED_DOT_PRODUCT_ATTENTION, MULTI_HEAD_ATTENTION, POSITIONAL_ENCODING)
