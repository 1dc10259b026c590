"""Substitute for rnn_forward, used while rnn_bptt is graded."""
from __future__ import annotations

import torch

from grader.sandbox.trusted.rnn_cell import rnn_cell


def rnn_forward(X, h0, W_x, W_h, b):
    h, states = h0, []
    for t in range(X.shape[1]):
        h = rnn_cell(X[:, t], h, W_x, W_h, b)
        states.append(h)
    return torch.stack(states, dim=1), h
