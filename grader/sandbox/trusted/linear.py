"""Substitutes for linear_forward and linear_backward (the course's (in, out) weights)."""
from __future__ import annotations


def linear_forward(X, W, b):
    return X @ W + b


def linear_backward(X, W, dY):
    return dY @ W.T, X.T @ dY, dY.sum(0)
