"""PyTorch's own transformer modules holding the student's weights: the references of the
transformer chapter (and, through reference_logits, of greedy decoding and the capstone's report).

The course writes `Y = X @ W + b` with W (in, out); PyTorch stores (out, in) and computes
X W^T + b, so every weight is copied transposed. All references run in float64 and return
the inputs' dtype (valid float32 formulations then differ from them only by their rounding).
"""
from __future__ import annotations

import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

from grader.catalog.references.equations import embed
from grader.catalog.references.float64 import to64

F64 = torch.float64


# ----------------------------------------------------------------------------- loading weights
def _load_mha(mha: nn.MultiheadAttention, p) -> None:
    mha.in_proj_weight.copy_(torch.cat([p["W_Q"].T, p["W_K"].T, p["W_V"].T]))
    mha.in_proj_bias.copy_(torch.cat([p["b_Q"], p["b_K"], p["b_V"]]))
    mha.out_proj.weight.copy_(p["W_O"].T)
    mha.out_proj.bias.copy_(p["b_O"])


def _load_ln(norm: nn.LayerNorm, gamma, beta) -> None:
    norm.weight.copy_(gamma)
    norm.bias.copy_(beta)


def _load_layer(layer, p) -> None:
    """nn.TransformerEncoderLayer / nn.TransformerDecoderLayer <- a course layer dict."""
    _load_mha(layer.self_attn, p["attn"])
    if hasattr(layer, "multihead_attn"):
        _load_mha(layer.multihead_attn, p["cross_attn"])
        _load_ln(layer.norm3, p["ln3_gamma"], p["ln3_beta"])
    layer.linear1.weight.copy_(p["ff"]["W1"].T)
    layer.linear1.bias.copy_(p["ff"]["b1"])
    layer.linear2.weight.copy_(p["ff"]["W2"].T)
    layer.linear2.bias.copy_(p["ff"]["b2"])
    _load_ln(layer.norm1, p["ln1_gamma"], p["ln1_beta"])
    _load_ln(layer.norm2, p["ln2_gamma"], p["ln2_beta"])


def _layer_kwargs(p, num_heads):
    d, d_ff = p["ff"]["W1"].shape
    return dict(d_model=d, nhead=num_heads, dim_feedforward=d_ff, dropout=0.0, activation="relu",
                batch_first=True, norm_first=False, dtype=F64)


def _attn_mask(mask, num_heads):
    """Course bool mask (True = may attend) -> PyTorch's (True = may NOT attend), per head."""
    if mask is None:
        return None
    m = ~mask
    return m.repeat_interleave(num_heads, dim=0) if m.dim() == 3 else m


# ----------------------------------------------------------------------------- references
def ref_layer_norm(X, gamma, beta, eps=1e-5):
    return F.layer_norm(X.double(), (X.shape[-1],), gamma.double(), beta.double(), eps).to(X.dtype)


def ref_add_and_norm(X, sublayer_out, gamma, beta, eps=1e-5):
    return ref_layer_norm(X.double() + sublayer_out.double(), gamma, beta, eps).to(X.dtype)


def ref_feed_forward(X, W1, b1, W2, b2):
    dtype = X.dtype
    X, W1, b1, W2, b2 = to64((X, W1, b1, W2, b2))
    return F.linear(F.relu(F.linear(X, W1.T, b1)), W2.T, b2).to(dtype)


def ref_encoder_layer(X, params, num_heads, mask=None):
    with torch.no_grad():
        layer = nn.TransformerEncoderLayer(**_layer_kwargs(params, num_heads))
        _load_layer(layer, to64(params))
        out = layer(X.double(), src_mask=_attn_mask(mask, num_heads))
    return out.to(X.dtype)


def ref_decoder_layer(Y, memory, params, num_heads):
    with torch.no_grad():
        layer = nn.TransformerDecoderLayer(**_layer_kwargs(params, num_heads))
        _load_layer(layer, to64(params))
        T = Y.shape[1]
        causal = ~torch.tril(torch.ones(T, T, dtype=torch.bool))
        out = layer(Y.double(), memory.double(), tgt_mask=causal)
    return out.to(Y.dtype)


def reference_model(params, num_heads) -> nn.Transformer:
    """nn.Transformer (float64, dropout 0, post-norm, ReLU) holding the course params."""
    p = to64(params)
    kw = _layer_kwargs(p["encoder"][0] if p["encoder"] else p["decoder"][0], num_heads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = nn.Transformer(num_encoder_layers=len(p["encoder"]), num_decoder_layers=len(p["decoder"]), **kw)
    with torch.no_grad():
        for layer, lp in zip(model.encoder.layers, p["encoder"]):
            _load_layer(layer, lp)
        for layer, lp in zip(model.decoder.layers, p["decoder"]):
            _load_layer(layer, lp)
        _load_ln(model.encoder.norm, p["enc_norm_gamma"], p["enc_norm_beta"])
        _load_ln(model.decoder.norm, p["dec_norm_gamma"], p["dec_norm_beta"])
    return model


def reference_logits(params, num_heads, pe64=False, encodings=None):
    """(src_ids, tgt_ids) -> float64 logits: the grader's embedding + positional encoding in
    front of nn.Transformer, and the output linear layer behind it (`pe64`: the encoding in
    float64, not positional_encoding's float32; `encodings`: (source's, target's) encodings,
    float64 tensors (T, d_model), added instead)."""
    model, p = reference_model(params, num_heads), to64(params)

    def logits(src_ids, tgt_ids):
        T = tgt_ids.shape[1]
        causal = ~torch.tril(torch.ones(T, T, dtype=torch.bool))
        if encodings is None:
            X, Y = embed(p["src_embed"], src_ids, pe64=pe64), embed(p["tgt_embed"], tgt_ids, pe64=pe64)
        else:
            X, Y = p["src_embed"][src_ids] + encodings[0], p["tgt_embed"][tgt_ids] + encodings[1]
        with torch.no_grad():
            Y = model(X, Y, tgt_mask=causal)
        return Y @ p["W_out"] + p["b_out"]
    return logits


def ref_transformer_forward(src_ids, tgt_ids, params, num_heads):
    return reference_logits(params, num_heads)(src_ids, tgt_ids).to(params["W_out"].dtype)
