"""Substitute for positional_encoding, used while transformer_forward and greedy_decode are graded:
PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(same), computed in float64, float32 out."""
from __future__ import annotations

import torch


def positional_encoding(T, d_model):
    return encoding64(T, d_model).to(torch.float32)


def encoding64(T, d_model):
    """The encoding in float64, as a float64 model may compute it itself instead of calling
    positional_encoding (the parent's reference of such a model's float64 cases)."""
    pos = torch.arange(T, dtype=torch.float64).unsqueeze(1)
    i = torch.arange(d_model // 2, dtype=torch.float64).unsqueeze(0)
    angle = pos / torch.pow(10000.0, 2 * i / d_model)
    pe = torch.zeros(T, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return pe
