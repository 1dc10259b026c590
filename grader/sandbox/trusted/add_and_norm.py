"""Substitute for add_and_norm (post-norm: layer_norm(X + sublayer_out))."""
from __future__ import annotations

from grader.sandbox.trusted.layer_norm import layer_norm


def add_and_norm(X, sublayer_out, gamma, beta, eps=1e-5):
    return layer_norm(X + sublayer_out, gamma, beta, eps)
