"""Words for the student: what a case was, what went wrong, what to do next (second person).

Pure functions from records and inputs to strings; the engine calls them, reports show them.
"""
from __future__ import annotations

import inspect
from typing import Any

import torch

from grader.results import Comparison

NOT_IMPLEMENTED = ("not implemented yet: replace the `raise NotImplementedError(...)` in {where} "
                   "with your code")


def describe_value(x: Any, depth: int = 0) -> str:
    """Shapes and dtypes, never values; nested parameter bundles are summarised, not listed."""
    if isinstance(x, torch.Tensor):
        return f"{tuple(x.shape)} {str(x.dtype).replace('torch.', '')}"
    if isinstance(x, dict):
        if depth >= 1 or len(x) > 8:
            return f"{{{len(x)} entries: {', '.join(map(str, list(x)[:4]))}{', ...' if len(x) > 4 else ''}}}"
        return "{" + ", ".join(f"{k}: {describe_value(v, depth + 1)}" for k, v in x.items()) + "}"
    if isinstance(x, (list, tuple)):
        if len(x) > 4 or depth >= 1:
            return f"[{len(x)} items]"
        return "[" + ", ".join(describe_value(v, depth + 1) for v in x) + "]"
    if isinstance(x, (str, bytes)):
        return repr(x) if len(x) <= 40 else f"{type(x).__name__} of length {len(x)}"
    if callable(x):
        return getattr(x, "__name__", "function")
    return repr(x)


def describe_case(reference: Any, args: tuple, kwargs: dict) -> str:
    """'Q: (2, 4, 8) float32, K: (2, 6, 8) float32, mask: None' using the reference's parameter names."""
    try:
        params = list(inspect.signature(reference).parameters)
    except (TypeError, ValueError):
        params = []
    parts = []
    for i, a in enumerate(args):
        name = params[i] if i < len(params) else f"arg{i + 1}"
        parts.append(f"{name}: {describe_value(a)}")
    parts += [f"{k}: {describe_value(v)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def comparisons_message(comps: tuple[Comparison, ...]) -> str:
    if len(comps) == 1:
        c = comps[0]
        return "correct" if c.ok else c.problem
    return "; ".join(f"{c.name} correct" if c.ok else f"{c.name} wrong: {c.problem}" for c in comps)


def hide(c: Comparison) -> Comparison:
    """The comparison of a hidden case, without anything that reveals inputs or expected values."""
    if c.ok:
        return Comparison(name=c.name, ok=True)
    if c.shape is not None and c.expected_shape is not None and c.shape != c.expected_shape:
        problem = "wrong shape"
    elif c.dtype and c.expected_dtype and c.dtype != c.expected_dtype:
        problem = "wrong dtype"
    elif c.problem.startswith(("expected a", "returned a", "the returned")):
        problem = c.problem.split(":")[0] if "," not in c.problem else "wrong type of value"
    elif c.mismatch_fraction is not None:
        problem = f"values differ from the reference ({c.mismatch_fraction:.0%} of them)"
    else:
        problem = "differs from the reference"
    return Comparison(name=c.name, ok=False, problem=problem)


def error_message(error: dict[str, str], memory_mb: int) -> str:
    kind, msg = error.get("type", "Exception"), error.get("message", "")
    if kind == "MemoryError" or "can't allocate memory" in msg or "Cannot allocate memory" in msg:
        return f"ran out of memory: the limit is {memory_mb} MiB ({kind}: {msg[:200]})"
    if kind == "SystemExit":
        return "your code called sys.exit() (or exit()) instead of returning a value"
    if kind == "KeyboardInterrupt":
        return "your code raised KeyboardInterrupt"
    tb = error.get("traceback", "")
    text = f"{kind}: {msg}" if msg else kind
    return f"{text}\n{tb}" if tb else text
