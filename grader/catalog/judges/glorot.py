"""The judge of mlp.glorot_uniform: statistical tests of the drawn weights.

A driver in the sandbox (grader.sandbox.trusted.glorot_draws) draws one matrix per seed (each
from its own torch.Generator), the first seed again, and one matrix without a generator. The
parent then checks, for
a = sqrt(6 / (fan_in + fan_out)):

- exact properties (never fail a correct implementation): shape, dtype, finiteness,
  max |w| <= a, the same seed gives the same matrix, different seeds differ;
- three statistical tests on all n drawn values, each at level ALPHA:
  * Kolmogorov-Smirnov distance to U(-a, a), with the DKW-Massart bound
    P(D_n > eps) <= 2 exp(-2 n eps^2);
  * the mean square, E[w^2] = a^2 / 3 = 2 / (fan_in + fan_out), by Hoeffding for values in [0, a^2];
  * the mean, E[w] = 0, by Hoeffding for values in [-a, a].

FALSE-FAIL RATE: each test has level ALPHA = 1e-4 / 18, so by the union bound a correct
implementation fails with probability below 1e-4 even over 6 cases (3 public + 3 hidden)
x 3 tests. The bounds hold for every n (no normal approximation).
"""
from __future__ import annotations

import math

import numpy
import torch

from grader.catalog.spec import Case, Verdict

FALSE_FAIL = 1e-4
ALPHA = FALSE_FAIL / 18


def bound(fan_in: int, fan_out: int) -> float:
    return math.sqrt(6.0 / (fan_in + fan_out))


def _eps(n: int) -> float:
    return math.sqrt(math.log(2 / ALPHA) / (2 * n))


def _guess(peak: float, fan_in: int, fan_out: int) -> str:
    s = fan_in + fan_out
    candidates = {"sqrt(6 / fan_in)": math.sqrt(6 / fan_in), "sqrt(6 / fan_out)": math.sqrt(6 / fan_out),
                  "sqrt(2 / (fan_in + fan_out))": math.sqrt(2 / s), "sqrt(1 / fan_in)": math.sqrt(1 / fan_in),
                  "sqrt(3 / (fan_in + fan_out))": math.sqrt(3 / s), "6 / (fan_in + fan_out)": 6 / s}
    for name, c in candidates.items():
        if abs(peak - c) <= 0.01 * c:
            return f" Your values look like U(-c, c) with c = {name} = {c:.4g}."
    return ""


def _exact_checks(value, fan_in, fan_out, n_seeds, a):
    """Properties every correct implementation has: a message for the first one violated, or ''."""
    if not isinstance(value, dict) or not {"draws", "again", "default"} <= set(value):
        return "the grader's driver did not get matrices back from glorot_uniform"
    draws, shape = value["draws"], (fan_in, fan_out)
    if not isinstance(draws, torch.Tensor):
        first = draws[0] if isinstance(draws, (list, tuple)) and draws else draws
        is_tensor = isinstance(first, torch.Tensor)
        what = f"shape {tuple(first.shape)}, dtype {first.dtype}" if is_tensor else type(first).__name__
        return f"expected a float32 tensor of shape {shape}, got {what}"
    if draws.dtype != torch.float32:
        return f"dtype {str(draws.dtype).replace('torch.', '')} but expected float32"
    if tuple(draws.shape) != (n_seeds, *shape):
        return f"shape {tuple(draws.shape[1:])} but expected (fan_in, fan_out) = {shape}"
    if not bool(torch.isfinite(draws).all()):
        return "the weights contain nan or inf"
    peak = float(draws.abs().max())
    if peak > a * (1 + 1e-6):
        return (f"max |w| = {peak:.4g} exceeds the bound a = sqrt(6 / (fan_in + fan_out)) = {a:.4g}."
                + _guess(peak, fan_in, fan_out))
    again = value["again"]
    if not isinstance(again, torch.Tensor) or again.shape != draws[0].shape or not torch.equal(again, draws[0]):
        return ("the same seed gave a different matrix: pass `generator` to the random call "
                "(torch.rand(fan_in, fan_out, generator=generator)) so that seeded weights are reproducible")
    if n_seeds > 1 and bool((draws == draws[0]).all()):
        return "every seed gave the same matrix: the weights must be random, drawn from the generator"
    default = value["default"]
    if not isinstance(default, torch.Tensor) or tuple(default.shape) != shape or not default.is_floating_point() \
            or float(default.abs().max()) > a * (1 + 1e-6):
        return ("called without a generator (generator=None), it must still return a (fan_in, fan_out) matrix "
                "within the bound")
    return ""


def judge_glorot(case: Case, value, ref, tol) -> Verdict:
    fan_in, fan_out = case.args
    n_seeds = len(case.kwargs["generator"])
    a = ref["bound"]
    problem = _exact_checks(value, fan_in, fan_out, n_seeds, a)
    if problem:
        return Verdict(False, problem)
    w = value["draws"].double().flatten()
    n = w.numel()
    eps = _eps(n)
    # numpy's sort gives the same values as torch's, ~6x sooner here (SIMD): ~20 ms of a submission
    u = ((torch.from_numpy(numpy.sort(w.numpy())) + a) / (2 * a)).clamp(0, 1)   # the uniform CDF at each sorted value
    i = torch.arange(1, n + 1, dtype=torch.float64)
    ks = float(torch.maximum(i / n - u, u - (i - 1) / n).max())
    m2, m1 = float((w * w).mean()), float(w.mean())
    var = a * a / 3
    about = (f"n = {n} values, each test at level {ALPHA:.1e} (false-fail rate of the exercise < {FALSE_FAIL:g})")
    if ks > eps:
        return Verdict(False, f"the values are not uniform on [-a, a], a = {a:.4g}: Kolmogorov-Smirnov distance "
                              f"{ks:.4f} > {eps:.4f} ({about}).{_guess(float(w.abs().max()), fan_in, fan_out)}")
    if abs(m2 - var) > a * a * eps:
        return Verdict(False, f"mean square {m2:.5g}, expected 2 / (fan_in + fan_out) = {var:.5g} "
                              f"(allowed +-{a * a * eps:.2g}; {about})")
    if abs(m1) > 2 * a * eps:
        return Verdict(False, f"mean {m1:.4g}, expected 0 (allowed +-{2 * a * eps:.2g}; {about})")
    return Verdict(True, f"max |w| {float(w.abs().max()):.4g} <= {a:.4g}; KS {ks:.4f} <= {eps:.4f}; "
                         f"mean square {m2:.5g} ~ {var:.5g}; {about}")
