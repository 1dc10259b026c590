"""Substitute for encoder_layer: self-attention, then the FFN, each followed by add & norm."""
from __future__ import annotations

from grader.sandbox.trusted.add_and_norm import add_and_norm
from grader.sandbox.trusted.feed_forward import ffn
from grader.sandbox.trusted.mha import multi_head_attention


def encoder_layer(X, params, num_heads, mask=None):
    p = params
    X = add_and_norm(X, multi_head_attention(X, X, p["attn"], num_heads, mask), p["ln1_gamma"], p["ln1_beta"])
    return add_and_norm(X, ffn(X, p["ff"]), p["ln2_gamma"], p["ln2_beta"])
