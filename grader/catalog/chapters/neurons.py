"""Specs for the neurons chapter: heaviside, sign, perceptron_forward, perceptron_update,
perceptron_fit. The perceptron's inputs are small integers and its learning rates powers of
two, so every correct formulation is exact and trajectories can be compared step for step."""
from __future__ import annotations

import torch

from grader.catalog.inputs import randint, randn
from grader.catalog.judges.perceptron import accuracy, judge_fit
from grader.catalog.rules import HEAVISIDE, SIGN
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake, substitutes

F32, F64 = torch.float32, torch.float64


def _scalar(z, v):
    return torch.tensor(v, dtype=z.dtype)


def _edges(dtype=F32):
    return torch.tensor([[-2.5, -1e-30, -0.0, 0.0, 1e-30, 3.0], [0.0, -7.0, 1e-6, -1e-6, 0.0, 0.5]], dtype=dtype)


# -------------------------------------------------------------------------------- heaviside
def ref_heaviside(z):
    return torch.heaviside(z, _scalar(z, 1.0))


def step_cases(gen):
    return [
        Case("random (3, 5)", (randn(gen, 3, 5, scale=2.0),)),
        Case("exact zeros and tiny values", (_edges(),), note="the value at exactly 0 (and -0.0) matters"),
        Case("float64, 3-D", (randn(gen, 2, 3, 4, dtype=F64),)),
        Case("one element, z = 0", (torch.tensor([0.0]),), note="a single unit at exactly the threshold"),
    ]


HEAVISIDE_SPEC = ExerciseSpec(
    id="neurons.heaviside",
    points=1,
    cases=step_cases,
    reference=ref_heaviside,
    reference_source="torch.heaviside(z, 1.0)",
    exact=True,
    forbidden=(HEAVISIDE,),
    mistakes=(
        KnownMistake("strict threshold (z > 0)", "the unit fires at exactly 0: use z >= 0, so heaviside(0) = 1",
                     lambda z: (z > 0).to(z.dtype)),
        KnownMistake("bool output", "return numbers 0.0/1.0 in the dtype of z, not a bool mask: "
                     "convert with .to(z.dtype)", lambda z: z >= 0),
        KnownMistake("-1 for negative inputs", "heaviside outputs 0 (not -1) below the threshold; "
                     "-1/0/+1 is the sign function", lambda z: torch.where(z >= 0, _scalar(z, 1.0), _scalar(z, -1.0))),
    ),
)


# ------------------------------------------------------------------------------------- sign
def ref_sign(z):
    return torch.sign(z)


SIGN_SPEC = ExerciseSpec(
    id="neurons.sign",
    points=1,
    cases=step_cases,
    reference=ref_sign,
    reference_source="torch.sign(z)",
    exact=True,
    forbidden=(SIGN,),
    mistakes=(
        KnownMistake("sign(0) = +1", "sign(0) is 0: only strictly positive inputs give +1",
                     lambda z: torch.where(z >= 0, _scalar(z, 1.0), _scalar(z, -1.0))),
        KnownMistake("sign(0) = -1", "sign(0) is 0: only strictly negative inputs give -1",
                     lambda z: torch.where(z > 0, _scalar(z, 1.0), _scalar(z, -1.0))),
        KnownMistake("integer output", "keep the dtype of z: return -1.0/0.0/1.0 as floats, "
                     "e.g. (z > 0).to(z.dtype) - (z < 0).to(z.dtype)",
                     lambda z: (z > 0).long() - (z < 0).long()),
        KnownMistake("heaviside instead of sign", "negative inputs give -1, not 0: that is the "
                     "difference between sign and heaviside", lambda z: (z >= 0).to(z.dtype)),
    ),
)


# ------------------------------------------------------------------------- perceptron_forward
def _heaviside_ref(z):
    return torch.heaviside(z, _scalar(z, 1.0))


_STEP_REF = {None: _heaviside_ref, "heaviside": _heaviside_ref, "sign": torch.sign}


def ref_perceptron_forward(X, W, b, step=None):
    """step(X @ W + b) with torch.heaviside(., 1.0) or torch.sign, in float64 (exact here)."""
    return _STEP_REF[step](X.double() @ W.double() + b.double()).to(X.dtype)


def _ints(gen, *shape, low=-3, high=4, dtype=F32):
    return randint(gen, low, high, *shape).to(dtype)


# The pizza menu: features [liquid, bread, leaves, cheese]; outputs [soup?, sandwich?, salad?].
MENU_X = torch.tensor([[1, 0, 0, 0],    # tomato soup
                       [1, 0, 1, 0],    # minestrone
                       [0, 1, 0, 1],    # grilled cheese
                       [0, 1, 1, 1],    # club sandwich
                       [0, 0, 1, 0],    # green salad
                       [0, 0, 1, 1],    # caesar salad
                       [1, 1, 0, 1],    # french onion soup (bread and cheese on top)
                       [0, 1, 0, 0]],   # plain toast sandwich
                      dtype=F32)
MENU_Y = torch.tensor([[1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 1, 0], [0, 0, 1], [0, 0, 1], [1, 0, 0], [0, 1, 0]],
                      dtype=F32)


def forward_cases(gen):
    return [
        Case("pizza menu, heaviside", (MENU_X, _ints(gen, 4, 3), _ints(gen, 3)), {"step": "heaviside"},
             note="integer weights: some pre-activations are exactly 0"),
        Case("sign step", (randn(gen, 5, 3), randn(gen, 3, 2), randn(gen, 2)), {"step": "sign"},
             note="the step passed in must be used"),
        Case("default step", (_ints(gen, 6, 3), _ints(gen, 3, 4), _ints(gen, 4)),
             note="called without step: your default, heaviside"),
        Case("one instance, one unit", (randn(gen, 1, 4), randn(gen, 4, 1), randn(gen, 1)), {"step": "heaviside"}),
        Case("float64, sign", (_ints(gen, 7, 5, dtype=F64), _ints(gen, 5, 3, dtype=F64), _ints(gen, 3, dtype=F64)),
             {"step": "sign"}),
    ]


def _forward_mistake(kind):
    def fn(X, W, b, step=None):
        z = X.double() @ W.double() + (0.0 if kind == "no bias" else b.double())
        if kind == "no step":
            return z.to(X.dtype)
        return _STEP_REF[None if kind == "step ignored" else step](z).to(X.dtype)
    return fn


PERCEPTRON_FORWARD = ExerciseSpec(
    id="neurons.perceptron_forward",
    points=1,
    cases=forward_cases,
    reference=ref_perceptron_forward,
    reference_source="torch.heaviside(X @ W + b, 1.0) or torch.sign(X @ W + b), as the case's step says",
    driver="grader.sandbox.trusted.perceptron:forward_with_named_step",
    depends=substitutes("heaviside", "sign"),
    mistakes=(
        KnownMistake("step argument ignored", "apply the step you are given (the grader passes sign too), "
                     "not always heaviside", _forward_mistake("step ignored")),
        KnownMistake("bias missing", "add the bias before the step: step(X @ W + b)", _forward_mistake("no bias")),
        KnownMistake("step not applied", "the perceptron's output is step(X @ W + b), not the pre-activation "
                     "X @ W + b itself", _forward_mistake("no step")),
    ),
)


# -------------------------------------------------------------------------- perceptron_update
def _update(W, b, x, y, lr, *, sign=1.0, bias=True, hebbian=False, use_lr=True, strict=False):
    W64, b64, x64, y64 = W.double(), b.double(), x.double(), y.double()
    z = x64 @ W64 + b64
    y_hat = (z > 0).double() if strict else torch.heaviside(z, torch.tensor(1.0, dtype=F64))
    err = sign * (y64 if hebbian else y64 - y_hat)
    step = lr if use_lr else 1.0
    W_new = W64 + step * torch.outer(x64, err)
    b_new = b64 + step * err if bias else b64
    return W_new.to(W.dtype), b_new.to(b.dtype)


def ref_perceptron_update(W, b, x, y, lr):
    """The perceptron rule in float64: y_hat = heaviside(x W + b), W += lr outer(x, y - y_hat), b += lr (y - y_hat)."""
    return _update(W, b, x, y, lr)


def _targets(gen, k, dtype=F32):
    return randint(gen, 0, 2, k).to(dtype)


def update_cases(gen):
    # Pre-activations exactly 0 for two units (heaviside says 1) and 2 for the third.
    W0 = torch.tensor([[1.0, 2.0, 1.0], [1.0, 1.0, 0.0], [0.0, -1.0, 1.0]])
    x0 = torch.tensor([1.0, -1.0, 1.0])
    W_ok = randn(gen, 4, 3)
    x_ok = randn(gen, 4)
    b_ok = randn(gen, 3)
    y_ok = torch.heaviside(x_ok @ W_ok + b_ok, torch.tensor(1.0))
    return [
        Case("random, 3 outputs", (randn(gen, 4, 3), randn(gen, 3), randn(gen, 4), torch.tensor([1.0, 0.0, 1.0]), 0.1)),
        Case("z exactly 0", (W0, torch.tensor([0.0, 0.0, 0.0]), x0, torch.tensor([0.0, 1.0, 0.0]), 1.0),
             note="heaviside(0) = 1, so a target of 0 is an error of -1"),
        Case("already right: nothing changes", (W_ok, b_ok, x_ok, y_ok, 0.5)),
        Case("one unit, lr 0.25", (randn(gen, 5, 1), randn(gen, 1), randn(gen, 5), torch.tensor([1.0]), 0.25)),
        Case("float64, 4 outputs", (randn(gen, 6, 4, dtype=F64), randn(gen, 4, dtype=F64), randn(gen, 6, dtype=F64),
                                    torch.tensor([0.0, 1.0, 1.0, 0.0], dtype=F64), 0.3)),
    ]


PERCEPTRON_UPDATE = ExerciseSpec(
    id="neurons.perceptron_update",
    points=2,
    cases=update_cases,
    reference=ref_perceptron_update,
    reference_source="the perceptron rule W + lr*outer(x, y - y_hat), b + lr*(y - y_hat) in float64",
    outputs=("W_new", "b_new"),
    depends=substitutes("heaviside", "perceptron_forward"),
    mistakes=(
        KnownMistake("update with the sign flipped", "the error is target minus prediction, (y - y_hat): "
                     "a unit that said 0 but should say 1 moves its weights towards x",
                     lambda W, b, x, y, lr: _update(W, b, x, y, lr, sign=-1.0)),
        KnownMistake("bias not updated", "the bias learns too: b_new = b + lr * (y - y_hat)",
                     lambda W, b, x, y, lr: _update(W, b, x, y, lr, bias=False)),
        KnownMistake("update by the target, not the error", "scale the update by the error (y - y_hat), "
                     "so that a correct prediction changes nothing",
                     lambda W, b, x, y, lr: _update(W, b, x, y, lr, hebbian=True)),
        KnownMistake("learning rate ignored", "multiply the update by lr",
                     lambda W, b, x, y, lr: _update(W, b, x, y, lr, use_lr=False)),
        KnownMistake("strict threshold (z > 0)", "the prediction uses heaviside, which fires at z = 0: "
                     "y_hat = 1 when x @ W + b >= 0", lambda W, b, x, y, lr: _update(W, b, x, y, lr, strict=True)),
    ),
)


# ----------------------------------------------------------------------------- perceptron_fit
def _fit(X, Y, lr, epochs, *, batch=False, one_epoch=False, **update):
    W = torch.zeros(X.shape[1], Y.shape[1], dtype=X.dtype)
    b = torch.zeros(Y.shape[1], dtype=X.dtype)
    for _ in range(1 if one_epoch else epochs):
        W_start, b_start = W, b
        for i in range(X.shape[0]):
            W_i, b_i = _update(W_start if batch else W, b_start if batch else b, X[i], Y[i], lr, **update)
            if batch:
                W, b = W + (W_i - W_start), b + (b_i - b_start)
            else:
                W, b = W_i, b_i
    return W, b


def ref_perceptron_fit(X, Y, lr, epochs):
    """The perceptron rule from zero, instance by instance, `epochs` passes (exact arithmetic here)."""
    return _fit(X, Y, lr, epochs)


def _separable(gen, n, d, k, lr, epochs):
    """Integer instances labelled by an integer line with a half-integer bias (a margin of at
    least 1/2), redrawn until the perceptron rule separates them within `epochs`."""
    while True:
        X = _ints(gen, n, d, low=-2, high=3)
        W_true = _ints(gen, d, k, low=-3, high=4)
        b_true = _ints(gen, k, low=-3, high=3) + 0.5
        Y = (X @ W_true + b_true >= 0).to(F32)
        if 0 < float(Y.mean()) < 1 and accuracy(X, Y, *_fit(X, Y, lr, epochs)) == 1.0:
            return X, Y


XOR_X = torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
XOR_Y = torch.tensor([[0.0], [1.0], [1.0], [0.0]])


def fit_cases(gen):
    X, Y = _separable(gen, 16, 3, 2, 0.5, 30)
    X64, Y64 = _separable(gen, 12, 4, 1, 0.25, 30)
    return [
        Case("pizza menu: soup, sandwich or salad", (MENU_X, MENU_Y, 1.0, 10), note="separable: must reach 100%"),
        Case("separable, 2 outputs", (X, Y, 0.5, 30), note="separable: must reach 100%"),
        Case("XOR", (XOR_X, XOR_Y, 1.0, 12), note="not separable: no line gets all four points right"),
        Case("float64, separable", (X64.double(), Y64.double(), 0.25, 30), note="separable: must reach 100%"),
        Case("zero epochs", (MENU_X, MENU_Y, 1.0, 0), note="no pass at all: the zero initialisation"),
    ]


def _fit_mistake(**kw):
    return lambda X, Y, lr, epochs: _fit(X, Y, lr, epochs, **kw)


PERCEPTRON_FIT = ExerciseSpec(
    id="neurons.perceptron_fit",
    points=2,
    cases=fit_cases,
    reference=ref_perceptron_fit,
    reference_source="the perceptron rule from W = 0, b = 0, one update per instance in order, `epochs` passes",
    outputs=("W", "b"),
    tolerance={F32: (1e-6, 1e-6), F64: (1e-6, 1e-6)},   # exact arithmetic here: the judge compares with these
    judge=judge_fit,
    depends=substitutes("heaviside", "perceptron_forward", "perceptron_update"),
    mistakes=(
        KnownMistake("update with the sign flipped", "the error is target minus prediction, (y - y_hat)",
                     _fit_mistake(sign=-1.0)),
        KnownMistake("bias not learned", "update the bias with every instance too: b += lr * (y - y_hat)",
                     _fit_mistake(bias=False)),
        KnownMistake("one pass only", "go through the data `epochs` times, not once", _fit_mistake(one_epoch=True)),
        KnownMistake("one update per epoch (batch rule)", "the perceptron rule is online: update after every "
                     "instance, so the next prediction already uses the new weights", _fit_mistake(batch=True)),
        KnownMistake("strict threshold (z > 0)", "predict with heaviside, which fires at z = 0 (the first "
                     "prediction, from zero weights, is 1)", _fit_mistake(strict=True)),
    ),
)

SPECS = (HEAVISIDE_SPEC, SIGN_SPEC, PERCEPTRON_FORWARD, PERCEPTRON_UPDATE, PERCEPTRON_FIT)
