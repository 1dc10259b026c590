"""Specs for the mlp chapter: the linear layer forward and backward, the MLP forward and its
backprop with cross-entropy, the optimizers (grader.catalog._part1_optim), Glorot's
initialisation (grader.catalog._part1_glorot) and train_xor, a behavioural check.
Gradient references come from torch.autograd in float64, on the course's (in, out) layout."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from grader.catalog._part1_common import SAFE_CALL, compare_judge, wire_safe_mistake
from grader.catalog._part1_glorot import GLOROT_UNIFORM
from grader.catalog._part1_optim import ADAM_STEP, CLIP_GRAD_NORM, MOMENTUM_STEP, SGD_STEP, TORCH_OPTIM
from grader.catalog.rules import AUTOGRAD
from grader.catalog.spec import Case, ExerciseSpec, Forbidden, KnownMistake, Verdict, randint, randn

F32, F64 = torch.float32, torch.float64
SANDBOX = "grader.catalog._part1_sandbox"

# Rationale: the layer is the exercise; nn.Linear / F.linear compute it in PyTorch's (out, in) layout.
LINEAR = Forbidden(
    name="torch.nn.functional.linear",
    rationale="this exercise is the layer itself: X @ W + b with the course's (in, out) weights",
    static=("torch.nn.functional.linear", "torch.nn.Linear", "torch._C._nn.linear", "torch.nn.functional.bilinear"),
    patch=("torch.nn.functional.linear", "torch.nn.Linear", "torch._C._nn.linear"),
)


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


def _lin64(fn):
    return lambda X, W, b: fn(X.double(), W.double(), b.double()).to(X.dtype)


LINEAR_FORWARD = ExerciseSpec(
    id="mlp.linear_forward",
    cases=linear_cases,
    reference=ref_linear_forward,
    reference_source="torch.nn.functional.linear(X, W.T, b) in float64",
    forbidden=(LINEAR,),
    driver=SAFE_CALL,
    mistakes=(
        KnownMistake("bias missing", "add the bias: X @ W + b", _lin64(lambda X, W, b: X @ W)),
        KnownMistake("W transposed", "the course's W is (d_in, d_out): X @ W, not X @ W.T (that is PyTorch's "
                     "(out, in) layout)", _lin64(lambda X, W, b: X @ W.T + b)),
        KnownMistake("activation applied", "the linear layer has no activation: return X @ W + b; the ReLU "
                     "comes in mlp_forward", _lin64(lambda X, W, b: torch.clamp(X @ W + b, min=0))),
    ),
)


# ---------------------------------------------------------------------------- linear_backward
def ref_linear_backward(X, W, dY):
    """torch.autograd on Y = X @ W + b with upstream gradient dY, in float64."""
    X64, W64 = X.detach().double().requires_grad_(True), W.detach().double().requires_grad_(True)
    b64 = torch.zeros(W.shape[1], dtype=F64, requires_grad=True)
    dX, dW, db = torch.autograd.grad(X64 @ W64 + b64, (X64, W64, b64), dY.double())
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
    cases=backward_cases,
    reference=ref_linear_backward,
    reference_source="torch.autograd through X @ W + b, in float64",
    outputs=("dX", "dW", "db"),
    tolerance={F32: (2e-5, 1e-4)},
    forbidden=(AUTOGRAD,),
    driver=SAFE_CALL,
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
    cases=mlp_cases,
    reference=ref_mlp_forward,
    reference_source="torch.relu between layers X @ W + b, in float64",
    forbidden=(LINEAR,),
    driver=SAFE_CALL,
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
    return wire_safe_mistake(lambda X, t, p: _manual_backprop(X, t, p, **kw))


MLP_BACKWARD = ExerciseSpec(
    id="mlp.mlp_backward",
    cases=mlp_backward_cases,
    reference=ref_mlp_backward,
    reference_source="torch.autograd through torch.nn.functional.cross_entropy of the MLP, in float64",
    outputs=("loss", "grads"),
    tolerance={F32: (2e-5, 1e-4)},
    forbidden=(AUTOGRAD,),
    driver=SAFE_CALL,
    judge=compare_judge(lambda: MLP_BACKWARD),
    depends={"linear_forward": f"{SANDBOX}:linear_forward", "linear_backward": f"{SANDBOX}:linear_backward",
             "mlp_forward": f"{SANDBOX}:mlp_forward"},
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


# -------------------------------------------------------------------------------- train_xor
XOR_X = torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
XOR_T = torch.tensor([0, 1, 1, 0])
STEPS = ("sgd_step", "momentum_step", "adam_step")


def ref_train_xor(seed=0):
    """What the judge needs: XOR's four points and their classes."""
    return {"X": XOR_X, "targets": XOR_T}


def xor_cases(gen):
    others = [int(s) for s in torch.randint(1, 10_000, (2,), generator=gen)]
    return [Case("seed 0", (0,))] + [Case(f"seed {s}", (s,)) for s in others]


def _valid_params(params):
    if not isinstance(params, (list, tuple)) or not params:
        return "train_xor must return a non-empty list of (W, b) pairs"
    d = 2
    for l, layer in enumerate(params):
        pair = isinstance(layer, (list, tuple)) and len(layer) == 2
        if not (pair and all(isinstance(t, torch.Tensor) for t in layer)):
            return f"layer {l} is not a pair of tensors (W, b)"
        W, b = layer
        if W.dim() != 2 or W.shape[0] != d or b.shape != (W.shape[1],) or not W.is_floating_point():
            return (f"layer {l}: W {tuple(W.shape)} and b {tuple(b.shape)} do not chain "
                    f"(expected W ({d}, d_out), b (d_out,))")
        d = W.shape[1]
    return "" if d == 2 else f"the last layer has {d} outputs: XOR needs 2 logits, one per class"


def judge_train_xor(case: Case, value, ref) -> Verdict:
    params, calls = value["params"], value.get("calls", {})
    problem = _valid_params(params)
    if problem:
        return Verdict(False, problem)
    again = value["again"]
    if _valid_params(again) or any(not torch.equal(a, b) for la, lb in zip(params, again) for a, b in zip(la, lb)):
        return Verdict(False, "two calls with the same seed returned different params: initialise from "
                              "torch.Generator().manual_seed(seed) (and use no other randomness)")
    if calls.get("mlp_backward", 0) < 1 or sum(calls.get(s, 0) for s in STEPS) < 1:
        return Verdict(False, "train with your own building blocks: call mlp_backward for the gradients and one "
                              f"of {', '.join(STEPS)} for the updates (calls seen: {calls})")
    pred = _mlp(ref["X"].double(), params).argmax(dim=1)
    right = int((pred == ref["targets"]).sum())
    if right < 4:
        return Verdict(False, f"the trained network gets {right} of XOR's 4 points right (predicts "
                              f"{pred.tolist()}, expected [0, 1, 1, 0]): train longer, with more hidden units, "
                              "or check mlp_backward and your step first")
    return Verdict(True, f"all 4 XOR points right; {calls.get('mlp_backward', 0) // 2} backward passes per training")


TRAIN_XOR = ExerciseSpec(
    id="mlp.train_xor",
    cases=xor_cases,
    reference=ref_train_xor,
    reference_source="XOR's four points; your params are evaluated with the grader's own MLP forward pass",
    outputs=("params",),
    forbidden=(AUTOGRAD, TORCH_OPTIM),
    driver=f"{SANDBOX}:train_xor_driver",
    judge=judge_train_xor,
    call_timeout=20.0,
)

SPECS = (LINEAR_FORWARD, LINEAR_BACKWARD, MLP_FORWARD, MLP_BACKWARD, SGD_STEP, MOMENTUM_STEP, ADAM_STEP,
         GLOROT_UNIFORM, CLIP_GRAD_NORM, TRAIN_XOR)
