"""Substitute for layer_norm (over the last dim, biased variance, eps inside the square root)."""
from __future__ import annotations

import torch


def layer_norm(X, gamma, beta, eps=1e-5):
    mean = X.mean(dim=-1, keepdim=True)
    var = X.var(dim=-1, keepdim=True, correction=0)
    return (X - mean) / torch.sqrt(var + eps) * gamma + beta
