"""Helpers shared by the rnn, lstm and gru chapters: float64 references, tolerant
comparison of nested outputs, seeded parameter bundles, and the time-step localiser."""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import torch

from grader.catalog.spec import Case, randn

F32, F64 = torch.float32, torch.float64


def tree_map(fn: Callable[[torch.Tensor], Any], x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return fn(x)
    if isinstance(x, tuple):
        return tuple(tree_map(fn, v) for v in x)
    if isinstance(x, list):
        return [tree_map(fn, v) for v in x]
    if isinstance(x, dict):
        return {k: tree_map(fn, v) for k, v in x.items()}
    return x


def _first_float_dtype(args: tuple) -> torch.dtype:
    for a in args:
        if isinstance(a, torch.Tensor) and a.is_floating_point():
            return a.dtype
        if isinstance(a, dict):
            return _first_float_dtype(tuple(a.values()))
    return F32


def in64(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run `fn` on float64 copies of its inputs and return its outputs in the inputs' dtype:
    a correct float32 formulation then differs from the reference only by its own rounding."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        dtype = _first_float_dtype(args)
        up = lambda t: t.double() if t.is_floating_point() else t  # noqa: E731
        out = fn(*tree_map(up, args), **tree_map(up, kwargs))
        return tree_map(lambda t: t.to(dtype) if t.is_floating_point() else t, out)
    wrapped.__signature__ = inspect.signature(fn)
    return wrapped


def allclose(actual: Any, expected: Any, atol: float, rtol: float) -> bool:
    """Nested comparison for localisers (same criterion as grader.pipeline.compare)."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor) or actual.shape != expected.shape:
            return False
        a, e = actual.double(), expected.double()
        return bool(((a - e).abs() <= atol + rtol * e.abs()).all())
    if isinstance(expected, (tuple, list)):
        return (isinstance(actual, (tuple, list)) and len(actual) == len(expected)
                and all(allclose(a, e, atol, rtol) for a, e in zip(actual, expected)))
    return actual == expected


def scaled(gen: torch.Generator, *shape: int, scale: float, dtype=F32) -> torch.Tensor:
    return randn(gen, *shape, dtype=dtype, scale=scale)


def gate_params(gen: torch.Generator, d: int, h: int, gates: str, dtype=F32, w_scale: float | None = None,
                biases: tuple[str, ...] | None = None) -> dict[str, torch.Tensor]:
    """W_x<g> (d, h), W_h<g> (h, h) for each gate letter and the biases (default b_<g> per gate);
    weights of size ~1/sqrt(h), as PyTorch initialises recurrent layers, so states neither die
    nor saturate at once."""
    s = w_scale if w_scale is not None else 1.0 / h ** 0.5
    p = {}
    for g in gates:
        p[f"W_x{g}"] = scaled(gen, d, h, scale=s, dtype=dtype)
        p[f"W_h{g}"] = scaled(gen, h, h, scale=s, dtype=dtype)
    for name in biases if biases is not None else [f"b_{g}" for g in gates]:
        p[name] = scaled(gen, h, scale=0.5, dtype=dtype)
    return p


def first_bad_step(H: Any, ref_H: torch.Tensor, atol: float, rtol: float) -> int | None:
    """The first time step t where H[:, t] differs from the reference (None: none, or shapes differ)."""
    if not isinstance(H, torch.Tensor) or H.shape != ref_H.shape:
        return None
    for t in range(ref_H.shape[1]):
        if not allclose(H[:, t], ref_H[:, t], atol, rtol):
            return t
    return None


def step_localiser(reference: Callable[..., Any], tol: Callable[[torch.dtype, Case], tuple[float, float]],
                   initial: str, carried: str) -> Callable[[Case, Any, Any], str]:
    """Localiser for *_forward: names the first time step whose state differs."""
    def localise(case: Case, output: Any, probe: Any) -> str:
        ref = reference(*case.args, **case.kwargs)
        H = output[0] if isinstance(output, (tuple, list)) and output else None
        atol, rtol = tol(ref[0].dtype, case)
        t = first_bad_step(H, ref[0], atol, rtol)
        if t is None:
            return ""
        T = ref[0].shape[1]
        if t == 0:
            return (f"Where: H[:, 0] is already wrong, the state after the first step, which depends only on "
                    f"{initial} and X[:, 0]: check which initial state you start from and what you store in H.")
        return (f"Where: H[:, t] is right for t < {t} and wrong from t = {t} on (of T = {T}): the first step is "
                f"right, so look at what is carried from one step to the next ({carried}).")
    return localise
