"""Substitute for perceptron_update (the perceptron rule)."""
from __future__ import annotations

import torch

from grader.sandbox.trusted.steps import heaviside


def perceptron_update(W, b, x, y, lr):
    err = y - heaviside(x @ W + b)                       # (k,)
    return W + lr * torch.outer(x, err), b + lr * err
