"""Substitute for causal_mask (True: may attend), used while decoder layers are graded."""
from __future__ import annotations

import torch


def causal_mask(T):
    return torch.tril(torch.ones(T, T, dtype=torch.bool))
