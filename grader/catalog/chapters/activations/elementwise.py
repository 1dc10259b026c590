"""The six elementwise activations of the activations chapter and their derivatives: sigmoid,
tanh, relu, leaky_relu, elu, gelu. Forward references are PyTorch's functions in float64;
derivatives come from torch.autograd in float64; both are cast back to the input's dtype. Every
exercise has a large-magnitude case (|z| up to 1e4): a formula that exponentiates a large
positive number gives nan or inf there."""
from __future__ import annotations

import inspect
import math

import torch
import torch.nn.functional as F

from grader.catalog.inputs import randn
from grader.catalog.references.float64 import in64
from grader.catalog.rules import AUTOGRAD, ELU, GELU, LEAKY_RELU, RELU, SIGMOID, TANH
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake, substitutes

F64 = torch.float64


# ------------------------------------------------------------------------------- references
def _signature(*names, **defaults):
    params = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
    params += [inspect.Parameter(k, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=v) for k, v in defaults.items()]
    return inspect.Signature(params)


def forward_reference(f64, **defaults):
    """PyTorch's activation `f64(z, **kw)` evaluated in float64, returned in z's dtype."""
    def ref(z, **kw):
        return f64(z.double(), **{**defaults, **kw}).to(z.dtype)
    ref.__signature__ = _signature("z", **defaults)
    return ref


def grad_reference(f64, **defaults):
    """d f / d z by torch.autograd in float64 (elementwise f: the gradient of f(z).sum())."""
    def ref(z, **kw):
        z64 = z.detach().double().requires_grad_(True)
        (g,) = torch.autograd.grad(f64(z64, **{**defaults, **kw}).sum(), z64)
        return g.to(z.dtype)
    ref.__signature__ = _signature("z", **defaults)
    return ref


def in_dtype(fn):
    """A mistake computed in the input's own dtype, so it overflows exactly where the student's does
    (the others compute in float64, `in64`: no overflow involved)."""
    def wrapped(z, *a, **kw):
        return fn(z, *a, **kw)
    return wrapped


# ------------------------------------------------------------------------------------ cases
LARGE = [[-1e4, -100.0, -20.0, 20.0, 100.0, 1e4], [-88.0, -30.0, 0.0, 0.5, 30.0, 90.0]]
EDGES = [[-2.0, -1e-7, -0.0, 0.0, 1e-7, 3.0], [0.0, -5.0, 1e-3, -1e-3, 0.0, 0.25]]


def elementwise_cases(**kw):
    """Cases for an elementwise function; `kw` (slope=..., alpha=...) adds a case with that setting."""
    def cases(gen):
        out = [
            Case("random (4, 6)", (randn(gen, 4, 6, scale=3.0),)),
            Case("zeros, kinks and tiny values", (torch.tensor(EDGES),), note="z = 0 exactly: the value at a kink"),
            Case("large magnitudes", (torch.tensor(LARGE),), note="|z| up to 1e4: no nan or inf allowed"),
            Case("float64, 3-D", (randn(gen, 2, 3, 4, dtype=F64, scale=4.0),)),
        ]
        if kw:
            name = ", ".join(f"{k}={v}" for k, v in kw.items())
            mixed = torch.cat([randn(gen, 3, 6, scale=2.0), torch.tensor(EDGES)])
            out.append(Case(f"{name}, with zeros", (mixed,), kw))
            out.append(Case(f"{name}, large magnitudes", (torch.tensor(LARGE),), kw))
        return out
    return cases


def activation(fid, f64, source, forbidden, mistakes, depends=None, **defaults):
    kw_case = {"slope": 0.2} if "slope" in defaults else {"alpha": 0.5} if "alpha" in defaults else {}
    return ExerciseSpec(
        id=f"activations.{fid}",
        points=1,                      # each activation, and each derivative, is worth one point
        cases=elementwise_cases(**kw_case),
        reference=forward_reference(f64, **defaults),
        reference_source=f"{source} in float64",
        forbidden=forbidden,
            mistakes=tuple(mistakes),
        depends=depends or {},
    )


def derivative(fid, f64, source, mistakes, depends=None, **defaults):
    kw_case = {"slope": 0.2} if "slope" in defaults else {"alpha": 0.5} if "alpha" in defaults else {}
    return ExerciseSpec(
        id=f"activations.{fid}",
        points=1,
        cases=elementwise_cases(**kw_case),
        reference=grad_reference(f64, **defaults),
        reference_source=f"torch.autograd on {source}, in float64",
        outputs=("grad",),
        forbidden=(AUTOGRAD,),
            mistakes=tuple(mistakes),
        depends=depends or {},
    )


def _phi(z):
    return 0.5 * (1 + torch.erf(z / math.sqrt(2)))


def _gelu_tanh_grad(z):
    z64 = z.detach().double().requires_grad_(True)
    (g,) = torch.autograd.grad(F.gelu(z64, approximate="tanh").sum(), z64)
    return g


SPECS_ACT = (
    activation("sigmoid", torch.sigmoid, "torch.sigmoid", (SIGMOID,), [
        KnownMistake("exp(z) / (1 + exp(z)) overflows", "for large z, exp(z) is inf and inf / inf = nan: use "
                     "exp(-|z|), which never overflows, with one formula for z >= 0 and one for z < 0",
                     in_dtype(lambda z: torch.exp(z) / (1 + torch.exp(z)))),
        KnownMistake("sign of z flipped", "sigmoid(z) = 1 / (1 + exp(-z)): the exponent is -z, so that "
                     "large positive z gives values near 1", in64(lambda z: 1 / (1 + torch.exp(z)))),
        KnownMistake("operator precedence: 1 / 1 + exp(-z)", "write 1 / (1 + exp(-z)) with the parentheses: "
                     "1 / 1 + exp(-z) is 1 + exp(-z)", in64(lambda z: 1 + torch.exp(-z))),
    ]),
    activation("tanh", torch.tanh, "torch.tanh", (TANH,), [
        KnownMistake("(exp(z) - exp(-z)) / (exp(z) + exp(-z)) overflows", "the textbook formula gives inf / inf = "
                     "nan once |z| > ~89 (float32): use exp(-2|z|) and the sign of z",
                     in_dtype(lambda z: (torch.exp(z) - torch.exp(-z)) / (torch.exp(z) + torch.exp(-z)))),
        KnownMistake("(1 - exp(-2z)) / (1 + exp(-2z)) overflows for negative z", "this form is stable only for "
                     "z >= 0: for large negative z, exp(-2z) is inf. Use |z| and put the sign back (tanh is odd)",
                     in_dtype(lambda z: (1 - torch.exp(-2 * z)) / (1 + torch.exp(-2 * z)))),
        KnownMistake("2 sigmoid(z) - 1", "the identity is tanh(z) = 2 sigmoid(2z) - 1: the sigmoid's argument "
                     "is 2z", in64(lambda z: 2 * torch.sigmoid(z) - 1)),
    ]),
    activation("relu", torch.relu, "torch.relu", (RELU,), [
        KnownMistake("returned the mask z > 0", "relu(z) is z itself where z > 0 (and 0 elsewhere), not 1",
                     in64(lambda z: (z > 0).double())),
        KnownMistake("min instead of max", "relu keeps the positive part: max(z, 0), e.g. torch.clamp(z, min=0)",
                     in64(lambda z: torch.clamp(z, max=0))),
        KnownMistake("absolute value", "negative inputs give 0, not |z|", in64(lambda z: z.abs())),
    ]),
    activation("leaky_relu", lambda z, slope: F.leaky_relu(z, slope), "torch.nn.functional.leaky_relu", (LEAKY_RELU,), [
        KnownMistake("slope ignored", "use the slope argument; 0.01 is only its default",
                     in64(lambda z, slope=0.01: torch.where(z > 0, z, 0.01 * z))),
        KnownMistake("negative side zeroed (plain relu)", "leaky relu keeps slope * z for z <= 0",
                     in64(lambda z, slope=0.01: torch.clamp(z, min=0))),
        KnownMistake("slope on the positive side", "z > 0 passes through unchanged; the slope multiplies the "
                     "negative side", in64(lambda z, slope=0.01: torch.where(z > 0, slope * z, z))),
    ], slope=0.01),
    activation("elu", lambda z, alpha: F.elu(z, alpha), "torch.nn.functional.elu", (ELU,), [
        KnownMistake("alpha ignored", "multiply the negative side by alpha: alpha * (exp(z) - 1)",
                     in64(lambda z, alpha=1.0: torch.where(z > 0, z, torch.expm1(z)))),
        KnownMistake("-1 missing", "the negative side is alpha * (exp(z) - 1), which is 0 at z = 0 and "
                     "saturates at -alpha", in64(lambda z, alpha=1.0: torch.where(z > 0, z, alpha * torch.exp(z)))),
        KnownMistake("exponential branch for every z", "for z > 0, elu(z) = z; alpha * (exp(z) - 1) is only "
                     "the z <= 0 side", in_dtype(lambda z, alpha=1.0: alpha * (torch.exp(z) - 1))),
    ], alpha=1.0),
    activation("gelu", F.gelu, "torch.nn.functional.gelu (exact, approximate='none')", (GELU,), [
        KnownMistake("tanh approximation", "this exercise is the exact GELU, z * Phi(z) with "
                     "Phi(z) = 0.5 (1 + erf(z / sqrt(2))), not the tanh approximation",
                     in64(lambda z: F.gelu(z, approximate="tanh"))),
        KnownMistake("sigmoid approximation", "z * sigmoid(1.702 z) only approximates GELU: use erf",
                     in64(lambda z: z * torch.sigmoid(1.702 * z))),
        KnownMistake("erf(z) without the 1/sqrt(2)", "the normal CDF is 0.5 (1 + erf(z / sqrt(2))): "
                     "divide z by sqrt(2) inside erf", in64(lambda z: 0.5 * z * (1 + torch.erf(z)))),
    ]),
)

SPECS_GRAD = (
    derivative("sigmoid_grad", torch.sigmoid, "torch.sigmoid", [
        KnownMistake("exp(-z) / (1 + exp(-z))^2 overflows", "for large negative z this is inf / inf = nan: "
                     "use sigmoid(z) * (1 - sigmoid(z)) with a stable sigmoid",
                     in_dtype(lambda z: torch.exp(-z) / (1 + torch.exp(-z)) ** 2)),
        KnownMistake("(1 - sigmoid) factor missing", "the derivative is sigmoid(z) * (1 - sigmoid(z)), "
                     "not sigmoid(z)", in64(lambda z: torch.sigmoid(z))),
        KnownMistake("tanh's derivative formula", "1 - s^2 is the derivative of tanh; for the sigmoid it "
                     "is s * (1 - s)", in64(lambda z: 1 - torch.sigmoid(z) ** 2)),
    ], depends=substitutes("sigmoid")),
    derivative("tanh_grad", torch.tanh, "torch.tanh", [
        KnownMistake("square missing", "the derivative is 1 - tanh(z)^2, not 1 - tanh(z)",
                     in64(lambda z: 1 - torch.tanh(z))),
        KnownMistake("sign flipped", "1 - tanh(z)^2 is positive: tanh is increasing",
                     in64(lambda z: torch.tanh(z) ** 2 - 1)),
        KnownMistake("sigmoid's derivative formula", "t * (1 - t) is the sigmoid's form; for tanh it is "
                     "1 - t^2", in64(lambda z: torch.tanh(z) * (1 - torch.tanh(z)))),
    ], depends=substitutes("tanh")),
    derivative("relu_grad", torch.relu, "torch.relu", [
        KnownMistake("derivative 1 at z = 0", "at the kink z = 0 the derivative is 0 (PyTorch's convention, "
                     "the left-hand derivative): use z > 0, not z >= 0", in64(lambda z: (z >= 0).double())),
        KnownMistake("bool output", "return numbers 0.0/1.0 in the dtype of z, not a bool mask",
                     lambda z: z > 0),
        KnownMistake("returned relu(z)", "the derivative is 1 where z > 0 and 0 elsewhere, not relu(z) itself",
                     in64(lambda z: torch.clamp(z, min=0))),
    ]),
    derivative("leaky_relu_grad", lambda z, slope: F.leaky_relu(z, slope), "torch.nn.functional.leaky_relu", [
        KnownMistake("derivative 1 at z = 0", "at z = 0 take the left-hand derivative, slope (as PyTorch): "
                     "use z > 0 for the 1 branch",
                     in64(lambda z, slope=0.01: torch.where(z >= 0, 1.0, torch.full_like(z, slope)))),
        KnownMistake("slope ignored", "use the slope argument; 0.01 is only its default",
                     in64(lambda z, slope=0.01: torch.where(z > 0, 1.0, torch.full_like(z, 0.01)))),
        KnownMistake("0 on the negative side", "the negative side's derivative is the slope, not 0",
                     in64(lambda z, slope=0.01: (z > 0).double())),
    ], slope=0.01),
    derivative("elu_grad", lambda z, alpha: F.elu(z, alpha), "torch.nn.functional.elu", [
        KnownMistake("derivative 1 at z = 0", "at z = 0 take the left-hand derivative, alpha * exp(0) = alpha "
                     "(as PyTorch): use z > 0 for the 1 branch",
                     in64(lambda z, alpha=1.0: torch.where(z >= 0, 1.0, alpha * torch.exp(torch.clamp(z, max=0))))),
        KnownMistake("alpha ignored", "the negative side's derivative is alpha * exp(z)",
                     in64(lambda z, alpha=1.0: torch.where(z > 0, 1.0, torch.exp(torch.clamp(z, max=0))))),
        KnownMistake("elu(z) instead of its derivative", "for z <= 0 the derivative is alpha * exp(z) "
                     "(= elu(z) + alpha), not alpha * (exp(z) - 1)",
                     in64(lambda z, alpha=1.0: torch.where(z > 0, 1.0, alpha * torch.expm1(torch.clamp(z, max=0))))),
    ], depends=substitutes("elu"), alpha=1.0),
    derivative("gelu_grad", F.gelu, "torch.nn.functional.gelu (exact)", [
        KnownMistake("z * phi(z) term missing", "by the product rule, d/dz [z Phi(z)] = Phi(z) + z phi(z): "
                     "you have only Phi(z)", in64(_phi)),
        KnownMistake("derivative of the tanh approximation", "differentiate the exact GELU, z * Phi(z), "
                     "not its tanh approximation", lambda z: _gelu_tanh_grad(z).to(z.dtype)),
        KnownMistake("density without 1/sqrt(2 pi)", "the normal density is phi(z) = exp(-z^2 / 2) / sqrt(2 pi)",
                     in64(lambda z: _phi(z) + z * torch.exp(-0.5 * z * z))),
    ]),
)
