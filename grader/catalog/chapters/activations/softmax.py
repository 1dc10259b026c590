"""The softmax family of the activations chapter: softmax and log_softmax, stable along any dim.
References are torch.softmax and torch.log_softmax in float64, cast back to the input's dtype."""
from __future__ import annotations

import torch

from grader.catalog.inputs import randn
from grader.catalog.rules import LOGSUMEXP, SOFTMAX
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake, substitutes

F64 = torch.float64


# -------------------------------------------------------------------------- softmax family
# float32 spaces numbers near 1e4 about 1e-3 apart, so a stable formulation that subtracts a
# log-sum-exp of that size (exp(z - logsumexp(z))) is off by up to ~1e-3 in the exponent: valid,
# and far from the nan/inf of an unstable one.
LARGE_TOL = {"atol": 2e-3, "rtol": 1e-3}


def softmax_cases(gen):
    return [
        Case("(4, 5), last dim", (randn(gen, 4, 5, scale=2.0),)),
        Case("logits 1e4", (torch.tensor([[1e4, 1e4 - 3, -1e4], [1e4, 1e4, 1e4], [0.5, -1.0, 2.0]]),),
             note="large logits: no nan or inf allowed", **LARGE_TOL),
        Case("rows of very different scale", (torch.tensor([[1e4, 1e4 - 3, 1e4 - 1], [0.5, -1.0, 2.0]]),),
             note="the max must be taken per row (along dim), not over the whole tensor", **LARGE_TOL),
        Case("dim=0", (randn(gen, 3, 4),), {"dim": 0}),
        Case("3-D, dim=1", (randn(gen, 2, 5, 3, scale=3.0),), {"dim": 1}),
        Case("one class", (randn(gen, 4, 1),), note="C = 1: every probability is 1"),
        Case("float64, 30 classes", (randn(gen, 6, 30, dtype=F64, scale=10.0),)),
    ]


def ref_softmax(z, dim=-1):
    return torch.softmax(z.double(), dim=dim).to(z.dtype)


def ref_log_softmax(z, dim=-1):
    return torch.log_softmax(z.double(), dim=dim).to(z.dtype)


def _naive_softmax(z, dim=-1):
    e = torch.exp(z)
    return e / e.sum(dim=dim, keepdim=True)


def _softmax_with(z, dim=-1, *, norm_dim="given", shift="row"):
    d = dim if norm_dim == "given" else -1
    m = z.amax() if shift == "global" else z.amax(dim=d, keepdim=True)
    e = torch.exp(z - m)
    return e / (e.sum() if norm_dim == "all" else e.sum(dim=d, keepdim=True))


def _log_softmax_with(z, dim=-1, *, norm_dim="given", shift="row"):
    d = dim if norm_dim == "given" else -1
    m = z.amax() if shift == "global" else z.amax(dim=d, keepdim=True) if shift == "row" else 0.0
    return (z - m) - torch.log(torch.exp(z - m).sum(dim=d, keepdim=True))


SOFTMAX_SPEC = ExerciseSpec(
    id="activations.softmax",
    points=2,
    cases=softmax_cases,
    reference=ref_softmax,
    reference_source="torch.softmax in float64",
    forbidden=(SOFTMAX,),
    mistakes=(
        KnownMistake("max not subtracted", "exp(1e4) is inf and inf / inf = nan: subtract the max along dim "
                     "before exponentiating (softmax does not change, and every exponent becomes <= 0)",
                     _naive_softmax),
        KnownMistake("max over the whole tensor", "take the max along dim (keepdim=True), one per row: with a "
                     "single global max, a row far below it underflows to 0 / 0 = nan",
                     lambda z, dim=-1: _softmax_with(z, dim, shift="global")),
        KnownMistake("dim ignored (always the last)", "normalise along the dim you are given",
                     lambda z, dim=-1: _softmax_with(z, dim, norm_dim="last")),
        KnownMistake("normalised over the whole tensor", "sum along dim (keepdim=True), not over every element: "
                     "each row, not the whole tensor, sums to 1",
                     lambda z, dim=-1: _softmax_with(z, dim, norm_dim="all")),
    ),
)

LOG_SOFTMAX_SPEC = ExerciseSpec(
    id="activations.log_softmax",
    points=2,
    cases=softmax_cases,
    reference=ref_log_softmax,
    reference_source="torch.log_softmax in float64",
    forbidden=(SOFTMAX, LOGSUMEXP),
    depends=substitutes("softmax"),
    mistakes=(
        KnownMistake("log of softmax", "a probability that underflows to 0 gives log(0) = -inf where the answer "
                     "is finite (about -2e4 here): compute (z - m) - log(sum(exp(z - m))) directly",
                     lambda z, dim=-1: torch.log(_softmax_with(z, dim))),
        KnownMistake("max not subtracted", "exp(1e4) is inf: subtract the max along dim first, "
                     "(z - m) - log(sum(exp(z - m)))", lambda z, dim=-1: _log_softmax_with(z, dim, shift="none")),
        KnownMistake("max over the whole tensor", "take the max along dim (keepdim=True), one per row",
                     lambda z, dim=-1: _log_softmax_with(z, dim, shift="global")),
        KnownMistake("dim ignored (always the last)", "normalise along the dim you are given",
                     lambda z, dim=-1: _log_softmax_with(z, dim, norm_dim="last")),
    ),
)
