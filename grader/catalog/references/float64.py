"""The one float64 wrapper: references and known mistakes compute in float64 and answer in the
inputs' dtype, so a correct float32 formulation differs from them only by its own rounding."""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import torch

from grader.trees import tree_map


def to64(x: Any) -> Any:
    """A nested structure with every floating tensor in float64 (other tensors and values kept)."""
    return tree_map(lambda t: t.double() if t.is_floating_point() else t, x)


def first_float_dtype(x: Any) -> torch.dtype | None:
    """The dtype of the first floating tensor in a nested structure (the case's precision)."""
    if isinstance(x, torch.Tensor):
        return x.dtype if x.is_floating_point() else None
    items = x.values() if isinstance(x, dict) else x if isinstance(x, (list, tuple)) else ()
    return next((d for d in map(first_float_dtype, items) if d is not None), None)


def in64(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` run on float64 copies of its inputs, its floating outputs returned in the dtype of the
    inputs' first floating tensor (float32 when there is none); integer outputs stay as they are."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        dtype = first_float_dtype(args) or torch.float32
        out = fn(*to64(args), **to64(kwargs))
        return tree_map(lambda t: t.to(dtype) if t.is_floating_point() else t, out)
    wrapped.__signature__ = inspect.signature(fn)
    return wrapped
