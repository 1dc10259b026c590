"""Small helpers shared by the engine's stages."""
from __future__ import annotations

from typing import Any

import torch


def clone(x: Any) -> Any:
    """A deep copy of the tensors in a structure, so trusted code cannot alter a case's inputs."""
    if isinstance(x, torch.Tensor):
        return x.clone()
    if isinstance(x, list):
        return [clone(v) for v in x]
    if isinstance(x, tuple):
        return tuple(clone(v) for v in x)
    if isinstance(x, dict):
        return {k: clone(v) for k, v in x.items()}
    return x
