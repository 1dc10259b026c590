"""Compare what the student returned with the reference, value by value.

Order of the verdict follows gpu-mode's verbose_allclose: type, shape and dtype first, then
NaN/Inf, then the error figures and the first few mismatches. The criterion is
|actual - expected| <= atol + rtol * |expected|, elementwise (as torch.allclose), with NaN
matching NaN only where the reference itself is NaN.
"""
from __future__ import annotations

import math
from typing import Any

import torch

from grader.results import Comparison, Mismatch
from grader.sandbox.wire import claimed_requires_grad, claimed_type

MAX_LISTED = 5


def compare_outputs(actual: Any, expected: Any, names: tuple[str, ...], tol, exact: bool = False) -> tuple[Comparison, ...]:
    """Compare a whole return value. `tol(dtype) -> (atol, rtol)`.

    A tuple reference with `names` of the same length is compared item by item under those
    names; nested lists/tuples are flattened as `name[i]` ("grads[0][1]").
    """
    if isinstance(expected, tuple) and len(names) == len(expected) and len(names) > 1:
        if not isinstance(actual, (tuple, list)):
            return (Comparison(name="return value", ok=False,
                               problem=f"expected a tuple of {len(names)} values ({', '.join(names)}), "
                                       f"got {_describe(actual)}"),)
        if len(actual) != len(expected):
            return (Comparison(name="return value", ok=False,
                               problem=f"expected {len(names)} values ({', '.join(names)}), got {len(actual)}"),)
        out: list[Comparison] = []
        for n, a, e in zip(names, actual, expected):
            out.extend(_compare_tree(a, e, n, tol, exact))
        return tuple(out)
    return tuple(_compare_tree(actual, expected, names[0] if names else "output", tol, exact))


def _compare_tree(actual: Any, expected: Any, name: str, tol, exact: bool) -> list[Comparison]:
    if isinstance(expected, torch.Tensor):
        return [compare_tensor(actual, expected, name, tol, exact)]
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            return [Comparison(name=name, ok=False, problem=f"expected a {type(expected).__name__} of "
                               f"{len(expected)} items, got {_describe(actual)}")]
        out = []
        for i, (a, e) in enumerate(zip(actual, expected)):
            out.extend(_compare_tree(a, e, f"{name}[{i}]", tol, exact))
        return out
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [Comparison(name=name, ok=False, problem=f"expected a dict, got {_describe(actual)}")]
        missing = [k for k in expected if k not in actual]
        if missing:
            return [Comparison(name=name, ok=False, problem=f"missing keys: {', '.join(map(str, missing))}")]
        out = []
        for k, e in expected.items():
            out.extend(_compare_tree(actual[k], e, f"{name}[{k!r}]", tol, exact))
        return out
    if isinstance(expected, bool) or isinstance(expected, (bytes, str)) or (isinstance(expected, int) and exact):
        ok = type(actual) is type(expected) and actual == expected
        return [Comparison(name=name, ok=ok, problem="" if ok else f"expected {expected!r}, got {_describe(actual, True)}")]
    if isinstance(expected, (int, float)):
        if isinstance(actual, torch.Tensor) and actual.numel() == 1:
            actual = actual.item()
        if not isinstance(actual, (int, float)) or isinstance(actual, bool):
            return [Comparison(name=name, ok=False, problem=f"expected a number, got {_describe(actual)}")]
        atol, rtol = tol(torch.float64 if isinstance(expected, float) else None)
        err = abs(actual - expected)
        ok = err <= atol + rtol * abs(expected) or (math.isnan(actual) and math.isnan(expected))
        return [Comparison(name=name, ok=ok, problem="" if ok else f"expected {expected:.6g}, got {actual:.6g}",
                           max_abs_error=err, atol=atol, rtol=rtol)]
    ok = actual == expected
    return [Comparison(name=name, ok=ok, problem="" if ok else f"expected {expected!r}, got {_describe(actual, True)}")]


def _describe(x: Any, value: bool = False) -> str:
    if isinstance(x, torch.Tensor):
        return f"a tensor of shape {tuple(x.shape)} and dtype {str(x.dtype).replace('torch.', '')}"
    if x is None:
        return "None (did you forget a return statement?)"
    if value:
        r = repr(x)
        return r if len(r) < 80 else r[:77] + "..."
    if isinstance(x, (list, tuple)):
        return f"a {type(x).__name__} of {len(x)} items"
    return f"a value of type {type(x).__name__}"


def compare_tensor(actual: Any, expected: torch.Tensor, name: str, tol, exact: bool = False) -> Comparison:
    dt = lambda t: str(t.dtype).replace("torch.", "")  # noqa: E731
    base = dict(name=name, expected_shape=tuple(expected.shape), expected_dtype=dt(expected))
    if not isinstance(actual, torch.Tensor):
        return Comparison(ok=False, problem=f"expected a torch.Tensor, got {_describe(actual)}", **base)
    base.update(shape=tuple(actual.shape), dtype=dt(actual))
    kind = claimed_type(actual)
    if kind != "torch.Tensor":
        return Comparison(ok=False, problem=f"returned an instance of {kind}, not a plain torch.Tensor: "
                          "return a real tensor (subclasses are not accepted)", **base)
    if claimed_requires_grad(actual):
        return Comparison(ok=False, problem="the returned tensor requires grad: this exercise is computed "
                          "without autograd (no requires_grad, no .backward())", **base)
    if tuple(actual.shape) != tuple(expected.shape):
        return Comparison(ok=False, problem=f"shape {tuple(actual.shape)} but expected {tuple(expected.shape)}", **base)
    if actual.dtype != expected.dtype:
        return Comparison(ok=False, problem=f"dtype {dt(actual)} but expected {dt(expected)} "
                          "(keep the dtype of the inputs)", **base)
    if exact or expected.dtype in (torch.bool, torch.int64, torch.int32, torch.uint8, torch.int8, torch.int16):
        diff = actual != expected
        frac = float(diff.float().mean()) if diff.numel() else 0.0
        ok = not bool(diff.any())
        mism = tuple(Mismatch(tuple(int(i) for i in idx), _num(actual[tuple(idx)]), _num(expected[tuple(idx)]))
                     for idx in diff.nonzero()[:MAX_LISTED])
        problem = "" if ok else f"{int(diff.sum())} of {diff.numel()} values differ ({frac:.1%})"
        return Comparison(ok=ok, problem=problem, mismatch_fraction=frac, mismatches=mism, **base)
    atol, rtol = tol(expected.dtype)
    base.update(atol=atol, rtol=rtol)
    a, e = actual.double(), expected.double()
    if e.numel() == 0:
        return Comparison(ok=True, **base)
    a_nan, e_nan = torch.isnan(a), torch.isnan(e)
    a_inf, e_inf = torch.isinf(a), torch.isinf(e)
    err = (a - e).abs()
    both_nan = a_nan & e_nan
    same_inf = a_inf & e_inf & (a == e)
    err = torch.where(both_nan | same_inf, torch.zeros_like(err), err)
    err = torch.where((a_nan ^ e_nan) | (a_inf ^ e_inf), torch.full_like(err, math.inf), err)
    bad = err > atol + rtol * e.abs().nan_to_num(0.0, posinf=0.0, neginf=0.0)
    bad |= (a_nan ^ e_nan) | (a_inf & ~same_inf)
    finite_err = err.nan_to_num(0.0, posinf=0.0)
    rel = finite_err / e.abs().clamp_min(1e-12)
    worst = int(torch.argmax(torch.where(bad, err.nan_to_num(posinf=1e300), finite_err)))
    worst_index = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), tuple(e.shape))) if e.dim() else ()
    n_bad = int(bad.sum())
    mism = tuple(Mismatch(tuple(int(i) for i in idx), _num(a[tuple(idx)]), _num(e[tuple(idx)]))
                 for idx in bad.nonzero()[:MAX_LISTED])
    max_abs = float(err.max())
    figures = dict(max_abs_error=max_abs, max_rel_error=float(rel.max()), worst_index=worst_index,
                   mismatch_fraction=n_bad / e.numel(), mismatches=mism)
    if n_bad == 0:
        return Comparison(ok=True, **figures, **base)
    n_nan, n_inf = int((a_nan & ~e_nan).sum()), int((a_inf & ~e_inf).sum())
    if n_nan or n_inf:
        problem = f"{n_nan} NaN and {n_inf} Inf values where the reference is finite"
    else:
        problem = (f"{n_bad} of {e.numel()} values differ ({n_bad / e.numel():.1%}); max abs error "
                   f"{max_abs:.3g} at {list(worst_index)} (tolerance {atol:g} + {rtol:g}*|expected|)")
    return Comparison(ok=False, problem=problem, **figures, **base)


def _num(t: torch.Tensor) -> float:
    v = t.item()
    return float(v) if not isinstance(v, bool) else float(int(v))


def matches(actual: Any, expected: Any, names: tuple[str, ...], tol, exact: bool = False) -> bool:
    try:
        return all(c.ok for c in compare_outputs(actual, expected, names, tol, exact))
    except Exception:
        return False
