"""Specs for the activations chapter: six activations, their derivatives, softmax and
log_softmax. Forward references are PyTorch's functions in float64; derivatives come from
torch.autograd in float64; both are cast back to the input's dtype. Every exercise has a
large-magnitude case (|z| up to 1e4): a formula that exponentiates a large positive number
gives nan or inf there."""
from __future__ import annotations

import inspect
import math

import torch
import torch.nn.functional as F

from grader.catalog._part1_common import SAFE_CALL
from grader.catalog.rules import AUTOGRAD
from grader.catalog.spec import Case, ExerciseSpec, Forbidden, KnownMistake, randn

F32, F64 = torch.float32, torch.float64
SANDBOX = "grader.catalog._part1_sandbox"


# ------------------------------------------------------------------------------ forbidden
def _own(name: str, rationale: str, static: tuple[str, ...], patch: tuple[str, ...],
         aten: tuple[str, ...]) -> Forbidden:
    return Forbidden(name=name, rationale=rationale, static=static, patch=patch, aten=aten)


# Rationale (all rules below): each activation exercise is the formula itself; PyTorch's
# kernel for it would skip the formula and its numerical care.
SIGMOID = _own("torch.sigmoid", "this exercise is the sigmoid itself: write it with torch.exp, stably",
               ("torch.sigmoid", "torch.special.expit", "torch.nn.functional.sigmoid", "torch.nn.Sigmoid",
                "attr:sigmoid", "torch.nn.functional.logsigmoid"),
               ("torch.sigmoid", "torch.special.expit", "torch.nn.functional.sigmoid", "torch.Tensor.sigmoid",
                "torch.nn.Sigmoid", "torch.nn.functional.logsigmoid"),
               ("aten::sigmoid", "aten::log_sigmoid"))
TANH = _own("torch.tanh", "this exercise is tanh itself: write it with torch.exp (or a stable sigmoid), stably",
            ("torch.tanh", "torch.nn.functional.tanh", "torch.nn.Tanh", "attr:tanh"),
            ("torch.tanh", "torch.nn.functional.tanh", "torch.Tensor.tanh", "torch.nn.Tanh"),
            ("aten::tanh",))
RELU = _own("torch.relu", "this exercise is relu itself: use torch.clamp, torch.maximum or torch.where",
            ("torch.relu", "torch.relu_", "torch.nn.functional.relu", "torch.nn.functional.relu_", "torch.nn.ReLU",
             "attr:relu", "attr:relu_"),
            ("torch.relu", "torch.relu_", "torch.nn.functional.relu", "torch.nn.functional.relu_", "torch.Tensor.relu",
             "torch.nn.ReLU"),
            ("aten::relu",))
LEAKY_RELU = _own("torch.nn.functional.leaky_relu", "this exercise is leaky relu itself: use torch.where",
                  ("torch.nn.functional.leaky_relu", "torch.nn.functional.leaky_relu_", "torch.nn.LeakyReLU",
                   "torch._C._nn.leaky_relu", "torch.nn.functional.rrelu", "torch.nn.functional.prelu"),
                  ("torch.nn.functional.leaky_relu", "torch.nn.functional.leaky_relu_", "torch.nn.LeakyReLU",
                   "torch._C._nn.leaky_relu", "torch.nn.functional.prelu"),
                  ("aten::leaky_relu", "aten::rrelu", "aten::_prelu"))
ELU = _own("torch.nn.functional.elu", "this exercise is elu itself: use torch.where and torch.expm1 or torch.exp",
           ("torch.nn.functional.elu", "torch.nn.functional.elu_", "torch.nn.ELU", "torch.nn.functional.celu",
            "torch.nn.functional.selu", "torch.celu", "torch.selu", "torch._C._nn.elu"),
           ("torch.nn.functional.elu", "torch.nn.functional.elu_", "torch.nn.ELU", "torch.nn.functional.celu",
            "torch.nn.functional.selu", "torch.celu", "torch.selu", "torch._C._nn.elu"),
           ("aten::elu", "aten::celu", "aten::selu"))
GELU = _own("torch.nn.functional.gelu", "this exercise is gelu itself: write z * Phi(z) with torch.erf",
            ("torch.nn.functional.gelu", "torch.nn.GELU", "torch._C._nn.gelu"),
            ("torch.nn.functional.gelu", "torch.nn.GELU", "torch._C._nn.gelu"),
            ("aten::gelu",))
# softmax and log_softmax are each other's shortcut (softmax = exp(log_softmax)), so one rule covers both.
SOFTMAX = _own("torch.softmax", "this exercise is the stable softmax itself: subtract the max, exponentiate, "
               "normalise (torch.softmax, torch.log_softmax and their functional forms do all of it)",
               ("torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax", "torch.nn.Softmax",
                "attr:softmax", "torch._softmax", "torch.log_softmax", "torch.nn.functional.log_softmax",
                "torch.special.log_softmax", "torch.nn.LogSoftmax", "attr:log_softmax", "torch._log_softmax"),
               ("torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax", "torch.Tensor.softmax",
                "torch.nn.Softmax", "torch._softmax", "torch.log_softmax", "torch.nn.functional.log_softmax",
                "torch.special.log_softmax", "torch.Tensor.log_softmax", "torch.nn.LogSoftmax", "torch._log_softmax"),
               ("aten::_softmax", "aten::_log_softmax", "aten::softmax", "aten::log_softmax"))
# Rationale: logsumexp is the stable half of log_softmax; writing it is the exercise.
LOGSUMEXP = _own("torch.logsumexp", "log_softmax is z minus the stable log-sum-exp: write that part yourself "
                 "with the max trick",
                 ("torch.logsumexp", "torch.special.logsumexp", "attr:logsumexp"),
                 ("torch.logsumexp", "torch.special.logsumexp", "torch.Tensor.logsumexp"),
                 ("aten::logsumexp",))


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
    """A mistake computed in the input's own dtype, so it overflows exactly where the student's does."""
    def wrapped(z, *a, **kw):
        return fn(z, *a, **kw)
    return wrapped


def in64(fn):
    """A mistake computed in float64 and returned in z's dtype (no overflow involved)."""
    def wrapped(z, *a, **kw):
        return fn(z.double(), *a, **kw).to(z.dtype)
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
        cases=elementwise_cases(**kw_case),
        reference=forward_reference(f64, **defaults),
        reference_source=f"{source} in float64",
        forbidden=forbidden,
        driver=SAFE_CALL,
        mistakes=tuple(mistakes),
        depends=depends or {},
    )


def derivative(fid, f64, source, mistakes, depends=None, **defaults):
    kw_case = {"slope": 0.2} if "slope" in defaults else {"alpha": 0.5} if "alpha" in defaults else {}
    return ExerciseSpec(
        id=f"activations.{fid}",
        cases=elementwise_cases(**kw_case),
        reference=grad_reference(f64, **defaults),
        reference_source=f"torch.autograd on {source}, in float64",
        outputs=("grad",),
        forbidden=(AUTOGRAD,),
        driver=SAFE_CALL,
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
    ], depends={"sigmoid": f"{SANDBOX}:sigmoid"}),
    derivative("tanh_grad", torch.tanh, "torch.tanh", [
        KnownMistake("square missing", "the derivative is 1 - tanh(z)^2, not 1 - tanh(z)",
                     in64(lambda z: 1 - torch.tanh(z))),
        KnownMistake("sign flipped", "1 - tanh(z)^2 is positive: tanh is increasing",
                     in64(lambda z: torch.tanh(z) ** 2 - 1)),
        KnownMistake("sigmoid's derivative formula", "t * (1 - t) is the sigmoid's form; for tanh it is "
                     "1 - t^2", in64(lambda z: torch.tanh(z) * (1 - torch.tanh(z)))),
    ], depends={"tanh": f"{SANDBOX}:tanh"}),
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
                     "use z > 0 for the 1 branch", in64(lambda z, slope=0.01: torch.where(z >= 0, 1.0, slope))),
        KnownMistake("slope ignored", "use the slope argument; 0.01 is only its default",
                     in64(lambda z, slope=0.01: torch.where(z > 0, 1.0, 0.01))),
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
    ], depends={"elu": f"{SANDBOX}:elu"}, alpha=1.0),
    derivative("gelu_grad", F.gelu, "torch.nn.functional.gelu (exact)", [
        KnownMistake("z * phi(z) term missing", "by the product rule, d/dz [z Phi(z)] = Phi(z) + z phi(z): "
                     "you have only Phi(z)", in64(_phi)),
        KnownMistake("derivative of the tanh approximation", "differentiate the exact GELU, z * Phi(z), "
                     "not its tanh approximation", lambda z: _gelu_tanh_grad(z).to(z.dtype)),
        KnownMistake("density without 1/sqrt(2 pi)", "the normal density is phi(z) = exp(-z^2 / 2) / sqrt(2 pi)",
                     in64(lambda z: _phi(z) + z * torch.exp(-0.5 * z * z))),
    ]),
)


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
    cases=softmax_cases,
    reference=ref_softmax,
    reference_source="torch.softmax in float64",
    forbidden=(SOFTMAX,),
    driver=SAFE_CALL,
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
    cases=softmax_cases,
    reference=ref_log_softmax,
    reference_source="torch.log_softmax in float64",
    forbidden=(SOFTMAX, LOGSUMEXP),
    driver=SAFE_CALL,
    depends={"softmax": f"{SANDBOX}:softmax"},
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

SPECS = (SPECS_ACT[0], SPECS_GRAD[0], SPECS_ACT[1], SPECS_GRAD[1], SPECS_ACT[2], SPECS_GRAD[2],
         SPECS_ACT[3], SPECS_GRAD[3], SPECS_ACT[4], SPECS_GRAD[4], SPECS_ACT[5], SPECS_GRAD[5],
         SOFTMAX_SPEC, LOG_SOFTMAX_SPEC)
