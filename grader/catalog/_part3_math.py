"""The course's transformer equations, written once in plain torch, with switches for the
typical mistakes (each switch named after the mistake it reproduces).

Trusted code, used on both sides of the sandbox:
- in the parent, in float64, for the known mistakes and the localisers' intermediate tensors;
- in the child, in the inputs' dtype, as the substitutes put in place of the student's
  sub-functions (`*_substitute`, exact curriculum signatures) and to train the capstone.
The references themselves are PyTorch's modules (grader.catalog._part3_torch); a test checks
that these equations without switches agree with them.
"""
from __future__ import annotations

import math

import torch

from grader.catalog.attention import mha_substitute, ref_causal_mask, ref_positional_encoding


def to64(x):
    """A nested structure of tensors with every floating tensor in float64."""
    if isinstance(x, torch.Tensor):
        return x.double() if x.is_floating_point() else x
    if isinstance(x, dict):
        return {k: to64(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(to64(v) for v in x)
    return x


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
    X = _residual(X, lambda x: mha_substitute(x, x, p["attn"], h, m), *_ln(p, ln1), norm)
    return _residual(X, lambda x: ffn(x, p["ff"]), *_ln(p, ln2), norm)


def decoder_layer(Y, memory, p, h, *, norm="post", causal=True, cross_kv="memory", order="self first"):
    T = Y.shape[1]
    mask = ref_causal_mask(T) if causal else None

    def self_attn(y):
        return mha_substitute(y, y, p["attn"], h, mask)

    def cross_attn(y):
        kv = y if cross_kv == "decoder" else memory
        return mha_substitute(y, kv, p["cross_attn"], h)

    first, second = (cross_attn, self_attn) if order == "cross first" else (self_attn, cross_attn)
    Y = _residual(Y, first, *_ln(p, 1), norm)
    Y = _residual(Y, second, *_ln(p, 2), norm)
    return _residual(Y, lambda y: ffn(y, p["ff"]), *_ln(p, 3), norm)


def embed(E, ids, *, pe_times=1, scale=False):
    X = E[ids]
    if scale:
        X = X * math.sqrt(E.shape[1])
    return X + pe_times * ref_positional_encoding(ids.shape[1], E.shape[1]).to(E.dtype)


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


# ----------------------------------------------------------------------------- substitutes
# Trusted stand-ins for the student's functions while another exercise is graded (spec.depends),
# with the curriculum's signatures. They compute in the inputs' dtype and are differentiable.
def layer_norm_substitute(X, gamma, beta, eps=1e-5):
    return layer_norm(X, gamma, beta, eps)


def add_and_norm_substitute(X, sublayer_out, gamma, beta, eps=1e-5):
    return add_and_norm(X, sublayer_out, gamma, beta, eps)


def feed_forward_substitute(X, W1, b1, W2, b2):
    return feed_forward(X, W1, b1, W2, b2)


def encoder_layer_substitute(X, params, num_heads, mask=None):
    return encoder_layer(X, params, num_heads, mask)


def decoder_layer_substitute(Y, memory, params, num_heads):
    return decoder_layer(Y, memory, params, num_heads)


def transformer_forward_substitute(src_ids, tgt_ids, params, num_heads):
    return transformer_forward(src_ids, tgt_ids, params, num_heads)


_SUBSTITUTES = {
    "multi_head_attention": "grader.catalog.attention:mha_substitute",
    "causal_mask": "grader.catalog.attention:ref_causal_mask",
    "positional_encoding": "grader.catalog.attention:ref_positional_encoding",
    **{name: f"grader.catalog._part3_math:{name}_substitute"
       for name in ("layer_norm", "add_and_norm", "feed_forward", "encoder_layer", "decoder_layer",
                    "transformer_forward")},
}


def substitutes(*names: str) -> dict[str, str]:
    """`depends` for an exercise that calls these student functions."""
    return {n: _SUBSTITUTES[n] for n in names}
