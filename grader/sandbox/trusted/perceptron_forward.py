"""Substitute for perceptron_forward."""
from __future__ import annotations

from grader.sandbox.trusted.steps import heaviside


def perceptron_forward(X, W, b, step=heaviside):
    return step(X @ W + b)
