"""Substitute for mlp_forward: ReLU between the layers, none after the last."""
from __future__ import annotations

import torch


def mlp_forward(X, params):
    for i, (W, b) in enumerate(params):
        X = X @ W + b
        if i < len(params) - 1:
            X = torch.clamp(X, min=0)
    return X
