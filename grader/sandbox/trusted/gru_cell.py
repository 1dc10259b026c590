"""Substitute for gru_cell, used while gru_forward is graded (PyTorch's formulation: r multiplies
h_prev @ W_hn + b_hn, and z is the share of the old state that is kept)."""
from __future__ import annotations

import torch


def gru_cell(x_t, h_prev, params):
    p = params
    r = torch.sigmoid(x_t @ p["W_xr"] + h_prev @ p["W_hr"] + p["b_r"])
    z = torch.sigmoid(x_t @ p["W_xz"] + h_prev @ p["W_hz"] + p["b_z"])
    n = torch.tanh(x_t @ p["W_xn"] + p["b_xn"] + r * (h_prev @ p["W_hn"] + p["b_hn"]))
    return (1 - z) * n + z * h_prev
