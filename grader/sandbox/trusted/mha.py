"""Substitute for multi_head_attention, used while the transformer's layers are graded."""
from __future__ import annotations

from grader.sandbox.trusted.sdpa import scaled_dot_product_attention


def multi_head_attention(X_q, X_kv, params, num_heads, mask=None):
    B, T_q, d = X_q.shape
    T_k, dh = X_kv.shape[1], d // num_heads

    def split(X, T):
        return X.reshape(B, T, num_heads, dh).transpose(1, 2)
    Q = split(X_q @ params["W_Q"] + params["b_Q"], T_q)
    K = split(X_kv @ params["W_K"] + params["b_K"], T_k)
    V = split(X_kv @ params["W_V"] + params["b_V"], T_k)
    if mask is not None and mask.dim() == 3:
        mask = mask.unsqueeze(1)
    heads, _ = scaled_dot_product_attention(Q, K, V, mask)
    return heads.transpose(1, 2).reshape(B, T_q, d) @ params["W_O"] + params["b_O"]
