"""Compare what the student returned with the reference, value by value.

Order of the verdict follows gpu-mode's verbose_allclose: type, shape and dtype first, then
NaN/Inf, then the error figures and the first few mismatches. The criterion is
|actual - expected| <= atol + rtol * |expected|, elementwise (as torch.allclose), with NaN
matching NaN only where the reference itself is NaN.
"""
from __future__ import annotations

import math
import sys
from typing import Any, Callable

import numpy
import torch

from grader.pipeline.feedback import names_and_more
from grader.results import Comparison, ComparisonKind as Kind, Mismatch
from grader.sandbox.wire import claimed_type

MAX_LISTED = 5

# tol(dtype) -> (atol, rtol): the tolerance of one case, overrides applied (grader.pipeline.cases);
# dtype is None for an int reference, torch.float64 for a float one.
Tol = Callable[[torch.dtype | None], tuple[float, float]]


def compare_outputs(actual: Any, expected: Any, names: tuple[str, ...], tol: Tol,
                    exact: bool = False) -> tuple[Comparison, ...]:
    """Compare a whole return value. `tol(dtype) -> (atol, rtol)`.

    A tuple reference with `names` of the same length is compared item by item under those
    names; nested lists/tuples are flattened as `name[i]` ("grads[0][1]").
    """
    if isinstance(expected, tuple) and len(names) == len(expected) and len(names) > 1:
        if not isinstance(actual, (tuple, list)):
            return (Comparison(name="return value", ok=False, kind=Kind.TYPE,
                               problem=f"expected a tuple of {len(names)} values ({', '.join(names)}), "
                                       f"got {_describe(actual)}"),)
        if len(actual) != len(expected):
            return (Comparison(name="return value", ok=False, kind=Kind.COUNT,
                               problem=f"expected {len(names)} values ({', '.join(names)}), got {len(actual)}"),)
        out: list[Comparison] = []
        for n, a, e in zip(names, actual, expected):
            out.extend(_compare_tree(a, e, n, tol, exact))
        return tuple(out)
    return tuple(_compare_tree(actual, expected, names[0] if names else "output", tol, exact))


def _compare_tree(actual: Any, expected: Any, name: str, tol: Tol, exact: bool) -> list[Comparison]:
    if isinstance(expected, torch.Tensor):
        return [compare_tensor(actual, expected, name, tol, exact)]
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            kind = Kind.COUNT if isinstance(actual, (list, tuple)) else Kind.TYPE
            return [Comparison(name=name, ok=False, kind=kind, problem=f"expected a {type(expected).__name__} of "
                               f"{len(expected)} items, got {_describe(actual)}")]
        out = []
        for i, (a, e) in enumerate(zip(actual, expected)):
            out.extend(_compare_tree(a, e, f"{name}[{i}]", tol, exact))
        return out
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [Comparison(name=name, ok=False, kind=Kind.TYPE,
                               problem=f"expected a dict, got {_describe(actual)}")]
        missing = [k for k in expected if k not in actual]
        if missing:
            return [Comparison(name=name, ok=False, kind=Kind.KEYS,
                               problem=f"missing keys: {names_and_more([str(k) for k in missing])}")]
        out = []
        for k, e in expected.items():
            out.extend(_compare_tree(actual[k], e, f"{name}[{k!r}]", tol, exact))
        return out
    if isinstance(expected, bool) or isinstance(expected, (bytes, str)) or (isinstance(expected, int) and exact):
        ok = type(actual) is type(expected) and actual == expected
        kind = Kind.OK if ok else Kind.VALUES if type(actual) is type(expected) else Kind.TYPE
        return [Comparison(name=name, ok=ok, kind=kind,
                           problem="" if ok else f"expected {expected!r}, got {_describe(actual, True)}")]
    if isinstance(expected, (int, float)):
        if isinstance(actual, torch.Tensor) and actual.numel() == 1:
            actual = actual.item()
        if not isinstance(actual, (int, float)) or isinstance(actual, bool):
            return [Comparison(name=name, ok=False, kind=Kind.TYPE,
                               problem=f"expected a number, got {_describe(actual)}")]
        if isinstance(actual, int) and abs(actual) > sys.float_info.max:     # no float holds it: no error figure
            return [Comparison(name=name, ok=False, kind=Kind.VALUES, max_abs_error=math.inf,
                               problem=f"expected {expected:.6g}, got {_describe(actual, True)}")]
        atol, rtol = tol(torch.float64 if isinstance(expected, float) else None)
        err = abs(actual - expected)
        ok = err <= atol + rtol * abs(expected) or (math.isnan(actual) and math.isnan(expected))
        nonfinite = not math.isfinite(actual) and math.isfinite(expected)
        kind = Kind.OK if ok else Kind.NONFINITE if nonfinite else Kind.VALUES
        return [Comparison(name=name, ok=ok, kind=kind, max_abs_error=err, atol=atol, rtol=rtol,
                           problem="" if ok else f"expected {expected:.6g}, got {actual:.6g}")]
    ok = actual == expected
    return [Comparison(name=name, ok=ok, kind=Kind.OK if ok else Kind.VALUES,
                       problem="" if ok else f"expected {expected!r}, got {_describe(actual, True)}")]


def _describe(x: Any, value: bool = False) -> str:
    if isinstance(x, torch.Tensor):
        return f"a tensor of shape {tuple(x.shape)} and dtype {str(x.dtype).replace('torch.', '')}"
    if x is None:
        return "None (did you forget a return statement?)"
    if value and isinstance(x, int) and abs(x) >= 10**18:       # repr refuses past 4,300 digits
        return f"an integer of about {int(x.bit_length() * math.log10(2)) + 1} digits"
    if value:
        try:
            r = repr(x)
        except ValueError:      # a container of such integers
            return f"a {type(x).__name__} too large to show"
        return r if len(r) < 80 else r[:77] + "..."
    if isinstance(x, (list, tuple)):
        return f"a {type(x).__name__} of {len(x)} items"
    return f"a value of type {type(x).__name__}"


def _not_a_tensor(actual: Any, expected: torch.Tensor, tol: Tol) -> str:
    """What a value that is not a tensor is, said; a Python number where a 0-d tensor is due is named
    as the usual mistake (.item() or float() on the result), with whether its value is right."""
    if type(actual) not in (int, float) or expected.dim() != 0 or expected.dtype == torch.bool:
        return f"expected a torch.Tensor, got {_describe(actual)}"
    try:
        right = close(torch.tensor(float(actual), dtype=torch.float64), expected.double(), *tol(expected.dtype))
    except OverflowError:       # an int past float's range
        right = False
    shown = _describe(actual, value=True)       # "an integer of about 401 digits" past repr's reach
    shown = shown if shown.startswith("an integer") else f"the Python {type(actual).__name__} {shown}"
    return (f"expected a 0-d torch.Tensor, got {shown}{' (the right value)' if right else ''}: return the "
            "tensor itself (.item() and float() turn it into a number)")


def compare_tensor(actual: Any, expected: torch.Tensor, name: str, tol: Tol, exact: bool = False) -> Comparison:
    dt = lambda t: str(t.dtype).replace("torch.", "")  # noqa: E731
    base = dict(name=name, expected_shape=tuple(expected.shape), expected_dtype=dt(expected))
    if not isinstance(actual, torch.Tensor):
        return Comparison(ok=False, kind=Kind.TYPE, problem=_not_a_tensor(actual, expected, tol), **base)
    base.update(shape=tuple(actual.shape), dtype=dt(actual))
    kind = claimed_type(actual)
    if kind != "torch.Tensor":
        return Comparison(ok=False, kind=Kind.SUBCLASS, problem=f"returned an instance of {kind}, not a plain "
                          "torch.Tensor: return a real tensor (subclasses are not accepted)", **base)
    if tuple(actual.shape) != tuple(expected.shape):
        return Comparison(ok=False, kind=Kind.SHAPE,
                          problem=f"shape {tuple(actual.shape)} but expected {tuple(expected.shape)}", **base)
    if actual.dtype != expected.dtype:
        fix = (f"return {dt(expected)}: the inputs' dtype, or the one the docstring names where the inputs are "
               "not tensors" if expected.is_floating_point() else f"return a torch.{dt(expected)} tensor")
        right = _right_but_for_dtype(actual, expected, tol)
        return Comparison(ok=False, kind=Kind.DTYPE, problem=f"dtype {dt(actual)} but expected {dt(expected)} ({fix})"
                          + ("; its values are right" if right else ""), **base)
    if exact or expected.dtype in (torch.bool, torch.int64, torch.int32, torch.uint8, torch.int8, torch.int16):
        return _compare_exact(actual, expected, base)
    return _compare_close(actual, expected, tol, base)


def _right_but_for_dtype(actual: torch.Tensor, expected: torch.Tensor, tol: Tol) -> bool:
    """Whether `actual`, in the expected dtype, passes: the one thing to fix is then the dtype."""
    if actual.is_complex() != expected.is_complex():
        return False
    try:
        again = actual.to(expected.dtype)
        if expected.dtype in (torch.bool, torch.int64, torch.int32, torch.uint8, torch.int8, torch.int16):
            return bool(torch.equal(again, expected)) and bool(torch.equal(again.to(actual.dtype), actual))
        return _compare_close(again, expected, tol, {"name": ""}).ok
    except Exception:       # a remark, never a reason for the comparison to fail
        return False


def _compare_exact(actual: torch.Tensor, expected: torch.Tensor, base: dict[str, Any]) -> Comparison:
    if torch.equal(actual, expected):   # the common case in one operation (NaN is unequal in both)
        return Comparison(ok=True, kind=Kind.OK, problem="", mismatch_fraction=0.0, mismatches=(), **base)
    diff = actual != expected
    frac = float(diff.float().mean()) if diff.numel() else 0.0
    ok = not bool(diff.any())
    mism = tuple(Mismatch(tuple(int(i) for i in idx), _num(actual[tuple(idx)]), _num(expected[tuple(idx)]))
                 for idx in diff.nonzero()[:MAX_LISTED])
    shown = (lambda v: str(bool(v))) if expected.dtype == torch.bool else (lambda v: f"{v:g}")  # noqa: E731
    first = (f"; the first at {list(mism[0].index)}: yours {shown(mism[0].actual)}, expected "
             f"{shown(mism[0].expected)}" if mism else "")
    problem = "" if ok else f"{int(diff.sum())} of {diff.numel()} values differ ({frac:.1%}){first}"
    return Comparison(ok=ok, kind=Kind.OK if ok else Kind.VALUES, problem=problem, mismatch_fraction=frac,
                      mismatches=mism, **base)


def _compare_close(actual: torch.Tensor, expected: torch.Tensor, tol: Tol, base: dict[str, Any]) -> Comparison:
    atol, rtol = tol(expected.dtype)
    base = dict(base, atol=atol, rtol=rtol)
    if expected.numel() == 0:
        return Comparison(ok=True, kind=Kind.OK, **base)
    # Rationale: in numpy, not torch. A full submission compares ~600 outputs in the grading process, most
    # of them small, where a numpy operation costs less than a torch call: a 3x8 output's comparison took
    # 30 us in torch and 21 in numpy, and the grading process ~28 ms less CPU a submission. The same IEEE
    # operations in float64, so the same figures; flat arrays, so a 0-d output is an array too, its
    # indices rebuilt from the tensor's shape.
    a, e = _flat64(actual), _flat64(expected)
    with numpy.errstate(all="ignore"):    # Inf - Inf, 0 * Inf: NaN, as in torch, and silently
        diff = a - e
        e_abs = numpy.abs(e)
        n_nan = n_inf = 0
        if numpy.isfinite(diff).all():      # every value finite on both sides (Inf or NaN on one is not)
            err = finite_err = ranked = numpy.abs(diff)     # the common case: a third of the operations below
            bad = err > atol + rtol * e_abs
        else:
            a_nan, e_nan = numpy.isnan(a), numpy.isnan(e)
            a_inf, e_inf = numpy.isinf(a), numpy.isinf(e)
            err = numpy.abs(diff)
            both_nan = a_nan & e_nan
            same_inf = a_inf & e_inf & (a == e)
            err = numpy.where(both_nan | same_inf, 0.0, err)
            err = numpy.where((a_nan ^ e_nan) | (a_inf ^ e_inf), math.inf, err)
            bad = err > atol + rtol * numpy.nan_to_num(e_abs, nan=0.0, posinf=0.0, neginf=0.0)
            bad |= (a_nan ^ e_nan) | (a_inf & ~same_inf)
            finite_err = numpy.nan_to_num(err, nan=0.0, posinf=0.0)
            ranked = numpy.where(bad, numpy.nan_to_num(err, nan=0.0, posinf=1e300), finite_err)
            n_nan, n_inf = int((a_nan & ~e_nan).sum()), int((a_inf & ~e_inf).sum())
        rel = finite_err / numpy.maximum(e_abs, 1e-12)
        max_rel = float(rel.max())
    shape = tuple(expected.shape)
    worst_index = _unravel(int(ranked.argmax()), shape)
    n_bad = int(numpy.count_nonzero(bad))
    mism = tuple(Mismatch(_unravel(int(i), shape), float(a[i]), float(e[i]))
                 for i in numpy.flatnonzero(bad)[:MAX_LISTED]) if n_bad else ()
    max_abs = float(err.max())
    figures = dict(max_abs_error=max_abs, max_rel_error=max_rel, worst_index=worst_index,
                   mismatch_fraction=n_bad / e.size, mismatches=mism)
    if n_bad == 0:
        return Comparison(ok=True, kind=Kind.OK, **figures, **base)
    if n_nan or n_inf:
        counted = (numpy.isnan(a) & ~numpy.isnan(e)) | (numpy.isinf(a) & ~numpy.isinf(e))     # as n_nan, n_inf
        at = _unravel(int(numpy.flatnonzero(counted)[0]), shape)
        kind, problem = Kind.NONFINITE, (f"{n_nan} NaN and {n_inf} Inf values where the reference is finite, "
                                         f"the first at {list(at)}")
    else:
        kind, problem = Kind.VALUES, (f"{n_bad} of {e.size} values differ ({n_bad / e.size:.1%}); max abs "
                                      f"error {max_abs:.3g} at {list(worst_index)} (tolerance {atol:g} + "
                                      f"{rtol:g}*|expected|)")
    return Comparison(ok=False, kind=kind, problem=problem, **figures, **base)


def _flat64(t: torch.Tensor) -> numpy.ndarray:
    """`t`'s values as a flat float64 array (torch converts: numpy has no bfloat16)."""
    return t.detach().double().numpy().reshape(-1)


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The index of element number `flat` of a C-ordered tensor of `shape` (torch.unravel_index
    without its tensors, which cost more than the rest of a small comparison)."""
    index = []
    for n in reversed(shape):
        flat, i = divmod(flat, n)
        index.append(i)
    return tuple(reversed(index))


def _num(t: torch.Tensor) -> float:
    v = t.item()
    return float(v) if not isinstance(v, bool) else float(int(v))


def matches(actual: Any, expected: Any, names: tuple[str, ...], tol: Tol, exact: bool = False) -> bool:
    try:
        return all(c.ok for c in compare_outputs(actual, expected, names, tol, exact))
    except Exception:
        return False


def close(actual: Any, expected: Any, atol: float, rtol: float) -> bool:
    """Whether `actual` agrees with `expected` by this module's criterion, through nested tuples and
    lists, whatever the dtypes: for localisers comparing intermediate values (the comparison itself
    reports types, shapes and dtypes)."""
    if isinstance(expected, torch.Tensor):
        return isinstance(actual, torch.Tensor) and compare_tensor(
            actual.to(torch.float64, copy=True), expected.to(torch.float64, copy=True), "", lambda _: (atol, rtol)).ok
    if isinstance(expected, (tuple, list)):
        return (isinstance(actual, (tuple, list)) and len(actual) == len(expected)
                and all(close(a, e, atol, rtol) for a, e in zip(actual, expected)))
    return actual == expected
