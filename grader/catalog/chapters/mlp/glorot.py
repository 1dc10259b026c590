"""mlp.glorot_uniform: Glorot's uniform initialisation, U(-a, a) with a = sqrt(6 / (fan_in + fan_out)),
checked statistically (grader.catalog.judges.glorot) on many seeded draws made in the sandbox
(grader.sandbox.trusted.glorot_draws)."""
from __future__ import annotations

import math

import torch

from grader.catalog.judges.glorot import bound, judge_glorot
from grader.catalog.rules import XAVIER
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake


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
    points=2,
    cases=glorot_cases,
    reference=ref_glorot_uniform,
    reference_source="U(-a, a), a = sqrt(6 / (fan_in + fan_out)), as torch.nn.init.xavier_uniform_: "
                     "statistical tests with a false-fail rate below 1e-4",
    outputs=("W",),
    driver="grader.sandbox.trusted.glorot_draws:glorot_draws",
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
