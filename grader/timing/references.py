"""The PyTorch side of each timing, keyed by exercise id: what an efficient implementation
costs, written with PyTorch's own kernels and the student's parameters.

Each reference takes the student's signature (CURRICULUM.md) and does the same work in
PyTorch's layout: course weights are (in, out) and PyTorch computes X W^T, so weights are
concatenated and transposed here, inside the timed call, as a student would have to. The
kernels are bound when this module is imported (in the sandbox: before the student's module
and before the forbidden-API tripwires are installed), so the reference always runs PyTorch's
originals. These references time; the values are checked against the catalog's references.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

_sdpa = F.scaled_dot_product_attention
_mha_forward = F.multi_head_attention_forward
_conv2d = F.conv2d
_lstm = torch.lstm
_gru = torch.gru
_layer_norm = F.layer_norm
_linear = F.linear
_relu = torch.relu
_cat = torch.cat
_zeros_like = torch.zeros_like


def scaled_dot_product_attention(Q, K, V, mask=None):
    """F.scaled_dot_product_attention (PyTorch's fused kernel; it does not return the weights)."""
    return _sdpa(Q, K, V, attn_mask=mask)


def multi_head_attention(X_q, X_kv, params, num_heads, mask=None):
    """F.multi_head_attention_forward (what nn.MultiheadAttention runs) with the student's weights."""
    d_model = X_q.shape[-1]
    w_in = _cat([params["W_Q"], params["W_K"], params["W_V"]], dim=1).T      # (3 d_model, d_model)
    b_in = _cat([params["b_Q"], params["b_K"], params["b_V"]])
    attn_mask = None
    if mask is not None:             # PyTorch's bool mask means "may NOT attend"
        attn_mask = ~mask if mask.dim() == 2 else (~mask).repeat_interleave(num_heads, dim=0)
    kv = X_kv.transpose(0, 1)
    out, _ = _mha_forward(X_q.transpose(0, 1), kv, kv, d_model, num_heads, w_in, b_in, None, None, False, 0.0,
                          params["W_O"].T, params["b_O"], training=False, attn_mask=attn_mask, need_weights=False)
    return out.transpose(0, 1)


def conv2d(X, K, b=None, stride=1, padding=0):
    """F.conv2d."""
    return _conv2d(X, K, b, stride, padding)


def lstm_forward(X, h0, c0, params):
    """torch.lstm (the kernel of nn.LSTM(batch_first=True)) with the student's weights, gates i, f, g, o."""
    w_ih = _cat([params[f"W_x{g}"] for g in "ifgo"], dim=1).T                # (4h, d)
    w_hh = _cat([params[f"W_h{g}"] for g in "ifgo"], dim=1).T                # (4h, h)
    b = _cat([params[f"b_{g}"] for g in "ifgo"])
    H, h, c = _lstm(X, (h0.unsqueeze(0), c0.unsqueeze(0)), [w_ih, w_hh, b, _zeros_like(b)],
                    True, 1, 0.0, False, False, True)
    return H, (h[0], c[0])


def gru_forward(X, h0, params):
    """torch.gru (the kernel of nn.GRU(batch_first=True)) with the student's weights, gates r, z, n."""
    w_ih = _cat([params["W_xr"], params["W_xz"], params["W_xn"]], dim=1).T   # (3h, d)
    w_hh = _cat([params["W_hr"], params["W_hz"], params["W_hn"]], dim=1).T   # (3h, h)
    zero = _zeros_like(params["b_r"])
    b_ih = _cat([params["b_r"], params["b_z"], params["b_xn"]])
    b_hh = _cat([zero, zero, params["b_hn"]])
    H, h = _gru(X, h0.unsqueeze(0), [w_ih, w_hh, b_ih, b_hh], True, 1, 0.0, False, False, True)
    return H, h[0]


def encoder_layer(X, params, num_heads, mask=None):
    """nn.TransformerEncoderLayer's post-norm computation in PyTorch's functional kernels."""
    shape = (X.shape[-1],)
    X = _layer_norm(X + multi_head_attention(X, X, params["attn"], num_heads, mask), shape,
                    params["ln1_gamma"], params["ln1_beta"], 1e-5)
    ff = params["ff"]
    hidden = _relu(_linear(X, ff["W1"].T, ff["b1"]))
    return _layer_norm(X + _linear(hidden, ff["W2"].T, ff["b2"]), shape, params["ln2_gamma"], params["ln2_beta"], 1e-5)


REFERENCES = {
    "attention.scaled_dot_product_attention": scaled_dot_product_attention,
    "attention.multi_head_attention": multi_head_attention,
    "cnn.conv2d": conv2d,
    "lstm.lstm_forward": lstm_forward,
    "gru.gru_forward": gru_forward,
    "transformer.encoder_layer": encoder_layer,
}
