"""Substitute for feed_forward: relu(X @ W1 + b1) @ W2 + b2 (and the same on a layer's params["ff"])."""
from __future__ import annotations

import torch


def feed_forward(X, W1, b1, W2, b2):
    return torch.relu(X @ W1 + b1) @ W2 + b2


def ffn(X, p):
    return feed_forward(X, p["W1"], p["b1"], p["W2"], p["b2"])
