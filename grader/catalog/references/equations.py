"""The course's transformer equations, written once more in plain torch, with switches for the
typical mistakes (each switch named after the mistake it reproduces). Parent side only: the known
mistakes and the localisers' intermediate tensors, in float64 (`variant`).

Without switches they are the references (PyTorch's modules, grader.catalog.references.torch_modules):
tests/test_catalog_transformer.py checks that they agree. The child's stand-ins for the student's
functions are the switch-free copies in grader.sandbox.trusted, which these build on for attention.
"""
from __future__ import annotations

import functools
import math

import torch

from grader.catalog.references.float64 import in64
from grader.sandbox.trusted.causal_mask import causal_mask
from grader.sandbox.trusted.mha import multi_head_attention
from grader.sandbox.trusted.positional_encoding import encoding64, positional_encoding


def variant(fn, **switches):
    """A known mistake: the equation `fn` with some switches set, computed in float64 and returned
    in the case's dtype (token ids stay int64)."""
    return in64(functools.partial(fn, **switches))


# ----------------------------------------------------------------------------- sub-layers
def layer_norm(X, gamma, beta, eps=1e-5, *, unbiased=False, eps_outside=False, dim=-1, swap=False):
    mean = X.mean(dim=dim, keepdim=True)
    var = X.var(dim=dim, keepdim=True, correction=1 if unbiased else 0)
    scale = var.sqrt() + eps if eps_outside else torch.sqrt(var + eps)
    xhat = (X - mean) / scale
    return xhat * beta + gamma if swap else xhat * gamma + beta


def add_and_norm(X, S, gamma, beta, eps=1e-5, *, kind="post"):
    """kind: post (the course), "residual after norm" X + LN(S), "no residual" LN(S), "no norm" X + S."""
    if kind == "residual after norm":
        return X + layer_norm(S, gamma, beta, eps)
    if kind == "no residual":
        return layer_norm(S, gamma, beta, eps)
    if kind == "no norm":
        return X + S
    return layer_norm(X + S, gamma, beta, eps)


def feed_forward(X, W1, b1, W2, b2, *, act="relu", relu_after=False, bias=True):
    if not bias:
        b1, b2 = torch.zeros_like(b1), torch.zeros_like(b2)
    H = X @ W1 + b1
    H = {"relu": torch.relu, "none": lambda t: t, "gelu": torch.nn.functional.gelu}[act](H)
    out = H @ W2 + b2
    return torch.relu(out) if relu_after else out


def ffn(X, p, **kw):
    return feed_forward(X, p["W1"], p["b1"], p["W2"], p["b2"], **kw)


def _ln(p, i):
    return p[f"ln{i}_gamma"], p[f"ln{i}_beta"]


def _residual(x, f, gamma, beta, norm):
    """One sub-layer with its add & norm. norm: post (the course), pre, "residual after norm",
    "no residual"."""
    if norm == "pre":
        return x + f(layer_norm(x, gamma, beta))
    if norm in ("residual after norm", "no residual"):
        return add_and_norm(x, f(x), gamma, beta, kind=norm)
    return add_and_norm(x, f(x), gamma, beta)


# ----------------------------------------------------------------------------- layers
def encoder_layer(X, p, h, mask=None, *, norm="post", use_mask=True, swap_norms=False):
    ln1, ln2 = (2, 1) if swap_norms else (1, 2)
    m = mask if use_mask else None
    X = _residual(X, lambda x: multi_head_attention(x, x, p["attn"], h, m), *_ln(p, ln1), norm)
    return _residual(X, lambda x: ffn(x, p["ff"]), *_ln(p, ln2), norm)


def decoder_layer(Y, memory, p, h, *, norm="post", causal=True, cross_kv="memory", order="self first"):
    T = Y.shape[1]
    mask = causal_mask(T) if causal else None

    def self_attn(y):
        return multi_head_attention(y, y, p["attn"], h, mask)

    def cross_attn(y):
        kv = y if cross_kv == "decoder" else memory
        return multi_head_attention(y, kv, p["cross_attn"], h)

    first, second = (cross_attn, self_attn) if order == "cross first" else (self_attn, cross_attn)
    Y = _residual(Y, first, *_ln(p, 1), norm)
    Y = _residual(Y, second, *_ln(p, 2), norm)
    return _residual(Y, lambda y: ffn(y, p["ff"]), *_ln(p, 3), norm)


def embed(E, ids, *, pe_times=1, scale=False, pe64=False):
    """E[ids] + PE; `pe64`: the encoding in float64, not the float32 positional_encoding returns."""
    X = E[ids]
    if scale:
        X = X * math.sqrt(E.shape[1])
    return X + pe_times * (encoding64 if pe64 else positional_encoding)(ids.shape[1], E.shape[1]).to(E.dtype)


def transformer_forward(src_ids, tgt_ids, p, h, *, pe_times=1, scale_embed=False, enc_norm=True,
                        dec_norm=True, chain=True, record=None):
    """Logits (B, T, V). `record`, a dict, receives the intermediate tensors by name."""
    rec = record if record is not None else {}
    X = rec["enc_in"] = embed(p["src_embed"], src_ids, pe_times=pe_times, scale=scale_embed)
    rec["enc_out"] = []
    for layer in p["encoder"]:
        X = encoder_layer(X if chain else rec["enc_in"], layer, h)
        rec["enc_out"].append(X)
    memory = rec["memory"] = layer_norm(X, p["enc_norm_gamma"], p["enc_norm_beta"]) if enc_norm else X
    Y = rec["dec_in"] = embed(p["tgt_embed"], tgt_ids, pe_times=pe_times, scale=scale_embed)
    rec["dec_out"] = []
    for layer in p["decoder"]:
        Y = decoder_layer(Y if chain else rec["dec_in"], memory, layer, h)
        rec["dec_out"].append(Y)
    Y = rec["final"] = layer_norm(Y, p["dec_norm_gamma"], p["dec_norm_beta"]) if dec_norm else Y
    return Y @ p["W_out"] + p["b_out"]


def greedy_decode(src_ids, p, h, bos_id, eos_id, max_len, *, forward=None, pick="last", pad=True, stop="all"):
    """pick: last (the course), first, whole (argmax over every position's logits at once);
    stop: all (the course), any (at the first eos of any sequence), never (only at max_len)."""
    forward = forward or (lambda s, t: transformer_forward(s, t, p, h))
    B = src_ids.shape[0]
    ys = torch.full((B, 1), bos_id, dtype=torch.int64)
    done = torch.zeros(B, dtype=torch.bool)
    while ys.shape[1] < max_len:
        if (stop == "all" and bool(done.all())) or (stop == "any" and bool(done.any())):
            break
        logits = forward(src_ids, ys)
        if pick == "first":
            nxt = logits[:, 0].argmax(-1)
        elif pick == "whole":
            nxt = logits.reshape(B, -1).argmax(-1) % logits.shape[-1]
        else:
            nxt = logits[:, -1].argmax(-1)
        if pad:
            nxt = torch.where(done, torch.full_like(nxt, eos_id), nxt)
        ys = torch.cat([ys, nxt.unsqueeze(1)], dim=1)
        done = done | (nxt == eos_id)
    return ys
