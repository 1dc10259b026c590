"""The mlp chapter's layers: the linear layer forward and backward, the MLP forward and its
backprop with cross-entropy. Gradient references come from torch.autograd in float64, on the
course's (in, out) layout."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from grader.catalog.inputs import randint, randn
from grader.catalog.references.float64 import in64
from grader.catalog.rules import AUTOGRAD, LINEAR
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake, substitutes

F32, F64 = torch.float32, torch.float64


def _params(gen, sizes, dtype=F32):
    return [(randn(gen, i, o, dtype=dtype, scale=1 / i ** 0.5), randn(gen, o, dtype=dtype, scale=0.1))
            for i, o in zip(sizes[:-1], sizes[1:])]


# ----------------------------------------------------------------------------- linear_forward
def ref_linear_forward(X, W, b):
    """F.linear with PyTorch's (out, in) weight: W.T, in float64."""
    return F.linear(X.double(), W.double().T, b.double()).to(X.dtype)


def linear_cases(gen):
    return [
        Case("(4, 3) -> 5", (randn(gen, 4, 3), randn(gen, 3, 5), randn(gen, 5))),
        Case("square layer 4 -> 4", (randn(gen, 6, 4), randn(gen, 4, 4), randn(gen, 4)), note="d_in == d_out"),
        Case("one instance", (randn(gen, 1, 7), randn(gen, 7, 2), randn(gen, 2))),
        Case("float64, (64, 32) -> 16", (randn(gen, 64, 32, dtype=F64), randn(gen, 32, 16, dtype=F64),
                                         randn(gen, 16, dtype=F64))),
    ]


LINEAR_FORWARD = ExerciseSpec(
    id="mlp.linear_forward",
    points=1,
    cases=linear_cases,
    reference=ref_linear_forward,
    reference_source="torch.nn.functional.linear(X, W.T, b) in float64",
    forbidden=(LINEAR,),
    mistakes=(
        KnownMistake("bias missing", "add the bias: X @ W + b", in64(lambda X, W, b: X @ W)),
        KnownMistake("W transposed", "the course's W is (d_in, d_out): X @ W, not X @ W.T (that is PyTorch's "
                     "(out, in) layout)", in64(lambda X, W, b: X @ W.T + b)),
        KnownMistake("activation applied", "the linear layer has no activation: return X @ W + b; the ReLU "
                     "comes in mlp_forward", in64(lambda X, W, b: torch.clamp(X @ W + b, min=0))),
    ),
)


# ---------------------------------------------------------------------------- linear_backward
def ref_linear_backward(X, W, dY):
    """torch.autograd on Y = X @ W + b with upstream gradient dY, in float64: the gradients of
    sum(Y * dY), which are exactly those of Y against dY (the product's backward multiplies dY by
    one). Not grad(Y, ..., dY): a tensor of upstream gradients makes torch import its symbolic
    shapes, and sympy with them (0.3 s in the grading process)."""
    X64, W64 = X.detach().double().requires_grad_(True), W.detach().double().requires_grad_(True)
    b64 = torch.zeros(W.shape[1], dtype=F64, requires_grad=True)
    dX, dW, db = torch.autograd.grad(((X64 @ W64 + b64) * dY.double()).sum(), (X64, W64, b64))
    return dX.to(X.dtype), dW.to(X.dtype), db.to(X.dtype)


def backward_cases(gen):
    return [
        Case("(4, 3) -> 5", (randn(gen, 4, 3), randn(gen, 3, 5), randn(gen, 4, 5))),
        Case("square layer 4 -> 4", (randn(gen, 5, 4), randn(gen, 4, 4), randn(gen, 5, 4)), note="d_in == d_out"),
        Case("one instance", (randn(gen, 1, 6), randn(gen, 6, 3), randn(gen, 1, 3))),
        Case("float64, (64, 32) -> 16", (randn(gen, 64, 32, dtype=F64), randn(gen, 32, 16, dtype=F64),
                                         randn(gen, 64, 16, dtype=F64))),
    ]


def _lb(dX=None, dW=None, db=None):
    def fn(X, W, dY):
        X64, W64, dY64 = X.double(), W.double(), dY.double()
        out = ((dX or (lambda X, W, dY: dY @ W.T))(X64, W64, dY64), (dW or (lambda X, W, dY: X.T @ dY))(X64, W64, dY64),
               (db or (lambda X, W, dY: dY.sum(0)))(X64, W64, dY64))
        return tuple(t.to(X.dtype) for t in out)
    return fn


LINEAR_BACKWARD = ExerciseSpec(
    id="mlp.linear_backward",
    points=2,
    cases=backward_cases,
    reference=ref_linear_backward,
    reference_source="torch.autograd through X @ W + b, in float64",
    outputs=("dX", "dW", "db"),
    tolerance={F32: (2e-5, 1e-4)},
    forbidden=(AUTOGRAD,),
    mistakes=(
        KnownMistake("dW transposed", "dW has the shape of W, (d_in, d_out): X^T @ dY, not dY^T @ X",
                     _lb(dW=lambda X, W, dY: dY.T @ X)),
        KnownMistake("dW not summed over the batch", "dW = X^T @ dY adds up the outer products of all B "
                     "instances: one (d_in, d_out) matrix, not one per instance",
                     _lb(dW=lambda X, W, dY: torch.einsum("bi,bj->bij", X, dY))),
        KnownMistake("dW averaged over the batch", "dW is a sum over the batch, X^T @ dY (any 1/B belongs to "
                     "the loss, already inside dY)", _lb(dW=lambda X, W, dY: X.T @ dY / X.shape[0])),
        KnownMistake("db not summed over the batch", "db = dY.sum(dim=0), shape (d_out,): the bias is shared by "
                     "every instance, so its gradient adds theirs up", _lb(db=lambda X, W, dY: dY)),
        KnownMistake("db averaged over the batch", "db is a sum over the batch, dY.sum(dim=0), not a mean",
                     _lb(db=lambda X, W, dY: dY.mean(0))),
        KnownMistake("dX with W instead of W^T", "dX = dY @ W^T: (B, d_out) times (d_out, d_in)",
                     _lb(dX=lambda X, W, dY: dY @ W)),
    ),
)


# ------------------------------------------------------------------------------ mlp_forward
def _mlp(X, params, *, relu_last=False, relu=True, softmax=False):
    A = X.double()
    for l, (W, b) in enumerate(params):
        A = A @ W.double() + b.double()
        if relu and (l < len(params) - 1 or relu_last):
            A = torch.relu(A)
    return (torch.softmax(A, dim=1) if softmax else A).to(X.dtype)


def ref_mlp_forward(X, params):
    """relu(... relu(X @ W1 + b1) ...) @ WL + bL with torch.relu, in float64."""
    return _mlp(X, params)


def mlp_cases(gen):
    return [
        Case("one layer", (randn(gen, 4, 3), _params(gen, [3, 2])), note="no hidden layer: no ReLU at all"),
        Case("two layers", (randn(gen, 6, 4), _params(gen, [4, 8, 3]))),
        Case("three layers", (randn(gen, 5, 3), _params(gen, [3, 6, 5, 4]))),
        Case("float64, three layers", (randn(gen, 32, 10, dtype=F64), _params(gen, [10, 16, 16, 5], F64))),
    ]


MLP_FORWARD = ExerciseSpec(
    id="mlp.mlp_forward",
    points=1,
    cases=mlp_cases,
    reference=ref_mlp_forward,
    reference_source="torch.relu between layers X @ W + b, in float64",
    forbidden=(LINEAR,),
    mistakes=(
        KnownMistake("ReLU after the last layer", "the last layer outputs logits, which may be negative: no ReLU "
                     "after it", lambda X, p: _mlp(X, p, relu_last=True)),
        KnownMistake("no ReLU between layers", "apply relu after every layer but the last: without it the "
                     "layers collapse into one linear map", lambda X, p: _mlp(X, p, relu=False)),
        KnownMistake("softmax applied to the output", "return the logits; the softmax belongs to the loss",
                     lambda X, p: _mlp(X, p, softmax=True)),
    ),
)


# ----------------------------------------------------------------------------- mlp_backward
def ref_mlp_backward(X, targets, params):
    """torch.autograd through F.cross_entropy(mlp_forward(X, params), targets), in float64."""
    leaves = [(W.detach().double().requires_grad_(True), b.detach().double().requires_grad_(True)) for W, b in params]
    A = X.double()
    for l, (W, b) in enumerate(leaves):
        A = A @ W + b
        if l < len(leaves) - 1:
            A = torch.relu(A)
    loss = F.cross_entropy(A, targets)
    flat = torch.autograd.grad(loss, [t for layer in leaves for t in layer])
    grads = [(flat[2 * l].to(X.dtype), flat[2 * l + 1].to(X.dtype)) for l in range(len(leaves))]
    return loss.detach().to(X.dtype), grads


def mlp_backward_cases(gen):
    return [
        Case("one layer", (randn(gen, 4, 3), randint(gen, 0, 2, 4), _params(gen, [3, 2]))),
        Case("two layers", (randn(gen, 6, 4), randint(gen, 0, 3, 6), _params(gen, [4, 8, 3]))),
        Case("three layers", (randn(gen, 5, 3), randint(gen, 0, 4, 5), _params(gen, [3, 6, 5, 4]))),
        Case("float64, two layers", (randn(gen, 32, 10, dtype=F64), randint(gen, 0, 5, 32),
                                     _params(gen, [10, 16, 5], F64))),
    ]


def _manual_backprop(X, targets, params, *, sum_loss=False, relu_mask=True, db_sum=True, reverse=False):
    X64 = X.double()
    ps = [(W.double(), b.double()) for W, b in params]
    B = X.shape[0]
    inputs, pre, A = [], [], X64
    for l, (W, b) in enumerate(ps):
        inputs.append(A)
        Z = A @ W + b
        pre.append(Z)
        A = torch.relu(Z) if l < len(ps) - 1 else Z
    log_p = torch.log_softmax(A, dim=1)
    scale = 1.0 if sum_loss else 1.0 / B
    loss = -log_p[torch.arange(B), targets].sum() * scale
    dZ = (torch.softmax(A, dim=1) - F.one_hot(targets, A.shape[1]).double()) * scale
    grads = []
    for l in range(len(ps) - 1, -1, -1):
        grads.append(((inputs[l].T @ dZ).to(X.dtype), (dZ.sum(0) if db_sum else dZ).to(X.dtype)))
        if l > 0:
            dZ = dZ @ ps[l][0].T
            if relu_mask:
                dZ = dZ * (pre[l - 1] > 0)
    return loss.to(X.dtype), (grads if reverse else grads[::-1])


def _bp_mistake(**kw):
    return lambda X, t, p: _manual_backprop(X, t, p, **kw)


MLP_BACKWARD = ExerciseSpec(
    id="mlp.mlp_backward",
    points=3,
    cases=mlp_backward_cases,
    reference=ref_mlp_backward,
    reference_source="torch.autograd through torch.nn.functional.cross_entropy of the MLP, in float64",
    outputs=("loss", "grads"),
    tolerance={F32: (2e-5, 1e-4)},
    forbidden=(AUTOGRAD,),
    depends=substitutes("linear_forward", "linear_backward", "mlp_forward"),
    mistakes=(
        KnownMistake("loss summed, not averaged", "cross-entropy is a mean over the batch: divide the loss, "
                     "and so dZ of the last layer, by B", _bp_mistake(sum_loss=True)),
        KnownMistake("ReLU derivative missing", "going down through a ReLU, multiply by its derivative: "
                     "dZ = dA * (Z > 0)", _bp_mistake(relu_mask=False)),
        KnownMistake("db not summed over the batch", "db = dZ.sum(dim=0), shape (d_out,)", _bp_mistake(db_sum=False)),
        KnownMistake("grads in reverse order", "return the grads in the order of params, first layer first "
                     "(backprop visits the layers last to first: reverse your list)", _bp_mistake(reverse=True)),
    ),
)
