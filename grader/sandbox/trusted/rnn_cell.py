"""Substitute for rnn_cell, used while rnn_forward and rnn_bptt are graded."""
from __future__ import annotations

import torch


def rnn_cell(x_t, h_prev, W_x, W_h, b):
    return torch.tanh(x_t @ W_x + h_prev @ W_h + b)
