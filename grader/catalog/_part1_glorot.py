"""The statistical test of mlp.glorot_uniform.

A driver in the sandbox draws one matrix per seed (each from its own torch.Generator), the
first seed again, and one matrix without a generator. The parent then checks, for
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

import torch

from grader.catalog.spec import Case, ExerciseSpec, Forbidden, KnownMistake, Verdict

FALSE_FAIL = 1e-4
ALPHA = FALSE_FAIL / 18
SANDBOX = "grader.catalog._part1_sandbox"


# Rationale: xavier_uniform_ is the exercise itself (the bound is what is being learnt).
XAVIER = Forbidden(
    name="torch.nn.init.xavier_uniform_",
    rationale="this exercise is Glorot's initialisation itself: compute the bound and draw with torch.rand",
    static=("torch.nn.init.xavier_uniform_", "torch.nn.init.xavier_normal_", "torch.nn.init.xavier_uniform",
            "torch.nn.init.xavier_normal"),
    patch=("torch.nn.init.xavier_uniform_", "torch.nn.init.xavier_normal_", "torch.nn.init.xavier_uniform",
           "torch.nn.init.xavier_normal"),
)


def bound(fan_in: int, fan_out: int) -> float:
    return math.sqrt(6.0 / (fan_in + fan_out))


def ref_glorot_uniform(fan_in, fan_out, generator):
    """`generator` is the case's list of seeds (the driver makes one torch.Generator per seed).
    U(-a, a) with a = sqrt(6 / (fan_in + fan_out)), the bound of torch.nn.init.xavier_uniform_
    (gain 1); one torch.nn.init.xavier_uniform_ draw per seed, for the record."""
    draws = torch.stack([torch.nn.init.xavier_uniform_(torch.empty(fan_in, fan_out),
                                                       generator=torch.Generator().manual_seed(int(s)))
                         for s in generator])
    return {"bound": bound(fan_in, fan_out), "draws": draws}


def glorot_cases(gen):
    def seeds(k):
        return [int(s) for s in torch.randint(0, 2**31 - 1, (k,), generator=gen)]
    return [
        Case("256 x 128, 4 seeds", (256, 128), {"generator": seeds(4)}, note="131072 values"),
        Case("100 x 300 (fan_out > fan_in), 4 seeds", (100, 300), {"generator": seeds(4)}, note="120000 values"),
        Case("3 x 5, 2000 seeds", (3, 5), {"generator": seeds(2000)}, note="a tiny layer, many draws: 30000 values"),
    ]


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
    if not isinstance(default, torch.Tensor) or tuple(default.shape) != shape \
            or float(default.abs().max()) > a * (1 + 1e-6):
        return ("called without a generator (generator=None), it must still return a (fan_in, fan_out) matrix "
                "within the bound")
    return ""


def judge_glorot(case: Case, value, ref) -> Verdict:
    fan_in, fan_out = case.args
    n_seeds = len(case.kwargs["generator"])
    a = ref["bound"]
    problem = _exact_checks(value, fan_in, fan_out, n_seeds, a)
    if problem:
        return Verdict(False, problem)
    w = value["draws"].double().flatten()
    n = w.numel()
    eps = _eps(n)
    u = ((w.sort().values + a) / (2 * a)).clamp(0, 1)           # the uniform CDF at each sorted value
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


def _reproduce(f):
    """A mistake drawn the way a student would (torch.rand / torch.randn with the generator)."""
    def fn(fan_in, fan_out, generator):
        gens = [torch.Generator().manual_seed(int(s)) for s in generator]
        return {"draws": torch.stack([f(fan_in, fan_out, g) for g in gens])}
    return fn


def _u(fan_in, fan_out, g):
    return torch.rand(fan_in, fan_out, generator=g)


GLOROT_UNIFORM = ExerciseSpec(
    id="mlp.glorot_uniform",
    cases=glorot_cases,
    reference=ref_glorot_uniform,
    reference_source="U(-a, a), a = sqrt(6 / (fan_in + fan_out)), as torch.nn.init.xavier_uniform_: "
                     "statistical tests with a false-fail rate below 1e-4",
    outputs=("W",),
    driver=f"{SANDBOX}:glorot_draws",
    judge=judge_glorot,
    forbidden=(XAVIER,),
    mistakes=(
        KnownMistake("bound with fan_in only", "Glorot's bound uses both fans, sqrt(6 / (fan_in + fan_out)); "
                     "sqrt(6 / fan_in) is He/Kaiming's uniform bound",
                     _reproduce(lambda i, o, g: (_u(i, o, g) * 2 - 1) * math.sqrt(6 / i))),
        KnownMistake("the normal's std used as the bound", "sqrt(2 / (fan_in + fan_out)) is the standard deviation "
                     "of Glorot's normal version; the uniform bound is sqrt(6 / (fan_in + fan_out)), "
                     "so that a^2 / 3 = 2 / (fan_in + fan_out)",
                     _reproduce(lambda i, o, g: (_u(i, o, g) * 2 - 1) * math.sqrt(2 / (i + o)))),
        KnownMistake("U[0, a) instead of U[-a, a)", "scale and shift torch.rand to the symmetric interval: "
                     "(torch.rand(...) * 2 - 1) * a", _reproduce(lambda i, o, g: _u(i, o, g) * bound(i, o))),
        KnownMistake("normal instead of uniform", "this is the uniform version: torch.rand, not torch.randn "
                     "(a normal has no bound)",
                     _reproduce(lambda i, o, g: torch.randn(i, o, generator=g) * math.sqrt(2 / (i + o)))),
    ),
)
