"""Specs for the losses chapter: mse_loss, mse_loss_grad, cross_entropy, cross_entropy_grad.
References are PyTorch's losses in float64 (autograd for the gradients), cast back to the
input's dtype. The losses are 0-d tensors, compared like any other output."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from grader.catalog.inputs import randint, randn
from grader.catalog.references.float64 import in64
from grader.catalog.rules import AUTOGRAD, CROSS_ENTROPY, MSE
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake

F32, F64 = torch.float32, torch.float64


def _autograd(loss_fn, x, y):
    x64 = x.detach().double().requires_grad_(True)
    (g,) = torch.autograd.grad(loss_fn(x64, y.double() if y.is_floating_point() else y), x64)
    return g.to(x.dtype)


# ------------------------------------------------------------------------------------- MSE
def ref_mse_loss(y_pred, y_true):
    return F.mse_loss(y_pred.double(), y_true.double()).to(y_pred.dtype)


def ref_mse_loss_grad(y_pred, y_true):
    return _autograd(F.mse_loss, y_pred, y_true)


def mse_cases(gen):
    same = randn(gen, 3, 2)
    return [
        Case("(4, 3)", (randn(gen, 4, 3), randn(gen, 4, 3))),
        Case("1-D (8,)", (randn(gen, 8), randn(gen, 8))),
        Case("3-D (2, 3, 4)", (randn(gen, 2, 3, 4), randn(gen, 2, 3, 4))),
        Case("perfect prediction", (same, same.clone()), note="the loss is exactly 0"),
        Case("float64, (64, 10)", (randn(gen, 64, 10, dtype=F64, scale=5.0), randn(gen, 64, 10, dtype=F64, scale=5.0))),
    ]


MSE_LOSS = ExerciseSpec(
    id="losses.mse_loss",
    points=1,
    cases=mse_cases,
    reference=ref_mse_loss,
    reference_source="torch.nn.functional.mse_loss in float64",
    outputs=("loss",),
    forbidden=(MSE,),
    mistakes=tuple(KnownMistake(n, e, in64(f)) for n, e, f in (
        ("summed, not averaged", "the MSE is a mean: divide the sum of squares by the number of elements",
         lambda p, t: ((p - t) ** 2).sum()),
        ("averaged over the batch only", "average over every element (y_pred.numel()), not over the first "
         "dimension only", lambda p, t: ((p - t) ** 2).sum() / p.shape[0]),
        ("absolute error, not squared", "square the differences: (y_pred - y_true)^2, not |y_pred - y_true|",
         lambda p, t: (p - t).abs().mean()),
        ("square root taken (RMSE)", "the MSE has no square root: return the mean of the squares",
         lambda p, t: ((p - t) ** 2).mean().sqrt()),
    )),
)

MSE_LOSS_GRAD = ExerciseSpec(
    id="losses.mse_loss_grad",
    points=1,
    cases=mse_cases,
    reference=ref_mse_loss_grad,
    reference_source="torch.autograd through torch.nn.functional.mse_loss, in float64",
    outputs=("dy_pred",),
    forbidden=(AUTOGRAD,),
    mistakes=tuple(KnownMistake(n, e, in64(f)) for n, e, f in (
        ("factor 2 missing", "d/dy (y - t)^2 = 2 (y - t): keep the 2", lambda p, t: (p - t) / p.numel()),
        ("not divided by N", "the loss is a mean, so its gradient carries the 1/N (N = y_pred.numel())",
         lambda p, t: 2 * (p - t)),
        ("sign flipped", "the gradient with respect to y_pred is 2 (y_pred - y_true) / N: prediction minus target",
         lambda p, t: 2 * (t - p) / p.numel()),
        ("divided by the batch size only", "N is the number of elements, y_pred.numel(), not y_pred.shape[0]",
         lambda p, t: 2 * (p - t) / p.shape[0]),
    )),
)


# --------------------------------------------------------------------------- cross-entropy
def ref_cross_entropy(logits, targets):
    return F.cross_entropy(logits.double(), targets).to(logits.dtype)


def ref_cross_entropy_grad(logits, targets):
    return _autograd(F.cross_entropy, logits, targets)


def ce_cases(gen):
    big = torch.tensor([[1e4, 0.0, -1e4], [0.0, 1e4, 1e4], [-1e4, -1e4, 1e4], [1.0, 2.0, 3.0]])
    tiny = torch.tensor([[0.0, -150.0, -10.0], [-120.0, 0.0, -1.0], [1.0, 2.0, 3.0]])
    return [
        Case("(4, 3)", (randn(gen, 4, 3, scale=2.0), randint(gen, 0, 3, 4))),
        Case("logits around 100", (100 + randn(gen, 4, 5), randint(gen, 0, 5, 4)),
             note="exp(100) overflows float32: subtract the max", atol=1e-4, rtol=1e-4),
        Case("float64, logits around 1000", (1000 + randn(gen, 3, 4, dtype=F64), randint(gen, 0, 4, 3)),
             note="exp(1000) overflows float64: subtract the max"),
        Case("a target with probability below 1e-45", (tiny, torch.tensor([1, 0, 2])),
             note="the probability underflows to 0 in float32, its log is still finite"),
        Case("float64, a target with probability below 1e-320", (tiny.double() * 6, torch.tensor([1, 0, 2])),
             note="the probability underflows to 0 in float64, its log is still finite"),
        Case("logits 1e4", (big, torch.tensor([2, 0, 2, 1])), note="large logits: no nan or inf allowed",
             atol=2e-3, rtol=1e-3),   # float32 resolves 1e4 to ~1e-3: valid formulations differ that much
        Case("one instance", (randn(gen, 1, 5), torch.tensor([3]))),
        Case("(6, 10)", (randn(gen, 6, 10, scale=3.0), randint(gen, 0, 10, 6))),
        Case("float64, (32, 10)", (randn(gen, 32, 10, dtype=F64, scale=4.0), randint(gen, 0, 10, 32))),
    ]


def _log_p(z, *, shift=True, via_softmax=False, dim=1):
    if via_softmax:
        e = torch.exp(z - z.amax(dim=dim, keepdim=True))
        return torch.log(e / e.sum(dim=dim, keepdim=True))
    m = z.amax(dim=dim, keepdim=True) if shift else 0.0
    return (z - m) - torch.log(torch.exp(z - m).sum(dim=dim, keepdim=True))


def _pick(log_p, targets):
    return log_p[torch.arange(log_p.shape[0]), targets]


CROSS_ENTROPY_SPEC = ExerciseSpec(
    id="losses.cross_entropy",
    points=2,
    cases=ce_cases,
    reference=ref_cross_entropy,
    reference_source="torch.nn.functional.cross_entropy in float64",
    outputs=("loss",),
    forbidden=(CROSS_ENTROPY,),
    mistakes=tuple(KnownMistake(n, e, f) for n, e, f in (
        ("summed, not averaged", "the loss is the mean over the batch: divide by B",
         lambda z, t: -_pick(_log_p(z), t).sum()),
        ("log of softmax", "a probability that underflows to 0 gives log(0) = -inf: compute log_softmax "
         "directly as (z - m) - log(sum(exp(z - m)))", lambda z, t: -_pick(_log_p(z, via_softmax=True), t).mean()),
        ("max not subtracted", "exp(1e4) is inf: subtract each row's max before exponentiating",
         lambda z, t: -_pick(_log_p(z, shift=False), t).mean()),
        ("minus sign missing", "the loss is minus the mean log-probability of the targets (a positive number)",
         lambda z, t: _pick(_log_p(z), t).mean()),
        ("softmax over the batch", "normalise each row over the classes (dim=1), not each column over the batch",
         lambda z, t: -_pick(_log_p(z, dim=0), t).mean()),
        # A textbook's guard against log(0) (Saito, Deep Learning from Scratch, 4.2.2): it caps every
        # term at -log(1e-7) = 16.1 and shifts the others by about 1e-7 / p.
        ("log(p + 1e-7)", "a target whose probability underflows costs -log(1e-7) = 16.1 instead of its real, "
         "larger loss, and every other term is off by about 1e-7 / p: no constant is needed when you compute "
         "log_softmax directly as (z - m) - log(sum(exp(z - m)))",
         lambda z, t: -torch.log(_pick(_log_p(z).exp(), t) + 1e-7).mean()),
    )),
)


def _softmax(z, shift=True):
    e = torch.exp(z - (z.amax(dim=1, keepdim=True) if shift else 0.0))
    return e / e.sum(dim=1, keepdim=True)


def _onehot(z, t):
    return F.one_hot(t, z.shape[1]).to(z.dtype)


CROSS_ENTROPY_GRAD = ExerciseSpec(
    id="losses.cross_entropy_grad",
    points=2,
    cases=ce_cases,
    reference=ref_cross_entropy_grad,
    reference_source="torch.autograd through torch.nn.functional.cross_entropy, in float64",
    outputs=("dlogits",),
    forbidden=(AUTOGRAD,),
    mistakes=tuple(KnownMistake(n, e, f) for n, e, f in (
        ("not divided by B", "the loss is a mean over the batch, so the gradient is (softmax - onehot) / B",
         lambda z, t: _softmax(z) - _onehot(z, t)),
        ("sign flipped", "the gradient is softmax minus onehot, not onehot minus softmax",
         lambda z, t: (_onehot(z, t) - _softmax(z)) / z.shape[0]),
        ("max not subtracted", "exp(1e4) is inf: subtract each row's max inside the softmax",
         lambda z, t: (_softmax(z, shift=False) - _onehot(z, t)) / z.shape[0]),
        ("one-hot not subtracted", "subtract 1 at each row's target class: (softmax - onehot) / B",
         lambda z, t: _softmax(z) / z.shape[0]),
    )),
)

SPECS = (MSE_LOSS, MSE_LOSS_GRAD, CROSS_ENTROPY_SPEC, CROSS_ENTROPY_GRAD)
