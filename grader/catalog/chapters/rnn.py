"""Specs for the rnn chapter: rnn_cell, rnn_forward, rnn_bptt.

References are PyTorch's recurrent layers loaded with the student's weights (the course's
(in, out) matrices transposed to PyTorch's (out, in); the course's single bias is bias_ih,
with bias_hh zero), run in float64; BPTT is checked against autograd through nn.RNN.
"""
from __future__ import annotations

import torch

from grader.catalog.inputs import randn
from grader.catalog.probes.steps import step_localiser
from grader.catalog.references.float64 import in64
from grader.catalog.rules import AUTOGRAD, RECURRENT
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake, substitutes
from grader.pipeline.compare import close

F32, F64 = torch.float32, torch.float64
TOL = {F32: (2e-5, 1e-4), F64: (1e-10, 1e-8)}


def _load(module: torch.nn.Module, W_x, W_h, b, suffix: str = "") -> torch.nn.Module:
    """Copy the course's (in, out) weights into a PyTorch recurrent module's (out, in) ones."""
    with torch.no_grad():
        getattr(module, f"weight_ih{suffix}").copy_(W_x.T)
        getattr(module, f"weight_hh{suffix}").copy_(W_h.T)
        getattr(module, f"bias_ih{suffix}").copy_(b)
        getattr(module, f"bias_hh{suffix}").zero_()
    return module


# ----------------------------------------------------------------------------- rnn_cell
@in64
def ref_rnn_cell(x_t, h_prev, W_x, W_h, b):
    cell = _load(torch.nn.RNNCell(*W_x.shape, nonlinearity="tanh").double(), W_x, W_h, b)
    with torch.no_grad():
        return cell(x_t, h_prev)


def _cell_mistake(act=torch.tanh, bias=True):
    @in64
    def fn(x_t, h_prev, W_x, W_h, b):
        return act(x_t @ W_x + h_prev @ W_h + (b if bias else 0))
    return fn


def rnn_cell_cases(gen):
    def args(B, d, h, dtype=F32, x_scale=1.0):
        W_x, W_h = randn(gen, d, h, dtype=dtype, scale=d ** -0.5), randn(gen, h, h, dtype=dtype, scale=h ** -0.5)
        return (randn(gen, B, d, dtype=dtype, scale=x_scale), randn(gen, B, h, dtype=dtype),
                W_x, W_h, randn(gen, h, dtype=dtype, scale=0.5))
    return [
        Case("B=3, d=4, h=5", args(3, 4, 5)),
        Case("batch 1", args(1, 6, 3)),
        Case("d > h", args(4, 16, 8)),
        Case("large inputs: tanh saturates", args(2, 5, 5, x_scale=6.0), note="pre-activations far outside [-2, 2]"),
        Case("float64", args(3, 7, 6, dtype=F64)),
    ]


RNN_CELL = ExerciseSpec(
    id="rnn.rnn_cell",
    points=1,
    cases=rnn_cell_cases,
    reference=ref_rnn_cell,
    reference_source="torch.nn.RNNCell(nonlinearity='tanh') with your weights, in float64",
    tolerance=TOL,
    forbidden=(RECURRENT,),
    mistakes=(
        KnownMistake("tanh missing", "the new state is tanh(x_t @ W_x + h_prev @ W_h + b): without the tanh the "
                     "state is linear and can grow without bound", _cell_mistake(act=lambda a: a)),
        KnownMistake("sigmoid instead of tanh", "the simple recurrent cell uses tanh, whose output is in (-1, 1), "
                     "not the sigmoid, whose output is in (0, 1)", _cell_mistake(act=torch.sigmoid)),
        KnownMistake("ReLU instead of tanh", "this cell uses tanh (as nn.RNNCell's default), not ReLU",
                     _cell_mistake(act=torch.relu)),
        KnownMistake("bias missing", "add the bias b inside the tanh: tanh(x_t @ W_x + h_prev @ W_h + b)",
                     _cell_mistake(bias=False)),
    ),
)


# ----------------------------------------------------------------------------- rnn_forward
@in64
def ref_rnn_forward(X, h0, W_x, W_h, b):
    rnn = _load(torch.nn.RNN(*W_x.shape, batch_first=True).double(), W_x, W_h, b, "_l0")
    with torch.no_grad():
        H, h_T = rnn(X, h0.unsqueeze(0))
    return H, h_T[0]


def _forward_mistake(kind):
    @in64
    def fn(X, h0, W_x, W_h, b):
        h = torch.zeros_like(h0) if kind == "zeros" else h0
        states = []
        for t in range(X.shape[1]):
            new = torch.tanh(X[:, t] @ W_x + (h0 if kind == "reset" else h) @ W_h + b)
            states.append(h if kind == "shifted" else new)
            h = new
        return torch.stack(states, dim=1), h
    return fn


def sequence_args(gen, B, T, d, h, dtype=F32, w_h_scale=None, h0_scale=1.0):
    """(X, h0, W_x, W_h, b) with W_h scaled to the given size (h^-1/2 by default)."""
    W_h = randn(gen, h, h, dtype=dtype, scale=(w_h_scale if w_h_scale is not None else 1.0) * h ** -0.5)
    return (randn(gen, B, T, d, dtype=dtype), randn(gen, B, h, dtype=dtype, scale=h0_scale),
            randn(gen, d, h, dtype=dtype, scale=d ** -0.5), W_h, randn(gen, h, dtype=dtype, scale=0.3))


def rnn_forward_cases(gen):
    return [
        Case("B=2, T=6, non-zero h0", sequence_args(gen, 2, 6, 3, 4)),
        Case("T=1", sequence_args(gen, 3, 1, 4, 5), note="a single step is one call of the cell"),
        Case("batch 1, T=9", sequence_args(gen, 1, 9, 5, 3)),
        Case("long sequence, T=60", sequence_args(gen, 2, 60, 4, 8, w_h_scale=0.9),
             note="does the state carry through 60 steps?"),
        Case("float64, T=12", sequence_args(gen, 2, 12, 3, 6, dtype=F64)),
    ]


RNN_FORWARD = ExerciseSpec(
    id="rnn.rnn_forward",
    points=2,
    cases=rnn_forward_cases,
    reference=ref_rnn_forward,
    reference_source="torch.nn.RNN(batch_first=True) with your weights, in float64",
    outputs=("H", "h_T"),
    tolerance=TOL,
    forbidden=(RECURRENT,),
    depends=substitutes("rnn_cell"),
    localise=step_localiser(ref_rnn_forward, lambda dt, c: RNN_FORWARD.tol(dt, c), "h0",
                            "each step must start from the h the previous step returned"),
    mistakes=(
        KnownMistake("state reset every step", "each step must start from the state the previous step returned; "
                     "you start every step from h0, so the network only ever sees one input (no memory)",
                     _forward_mistake("reset")),
        KnownMistake("initial state ignored", "start from the given h0, not from zeros: h0 can carry what an "
                     "earlier chunk of the sequence left behind", _forward_mistake("zeros")),
        KnownMistake("H shifted by one step", "H[:, t] is the state after reading X[:, t]; you stored the state "
                     "before it (h0 first, the last state missing)", _forward_mistake("shifted")),
    ),
)


# ----------------------------------------------------------------------------- rnn_bptt
def ref_rnn_bptt(X, h0, W_x, W_h, b, dH):
    """Autograd through torch.nn.RNN (float64) with your weights, loss = sum(H * dH)."""
    rnn = _load(torch.nn.RNN(*W_x.shape, batch_first=True).double(), W_x.double(), W_h.double(), b.double(), "_l0")
    X64 = X.detach().double().requires_grad_()
    h064 = h0.detach().double().requires_grad_()
    H, _ = rnn(X64, h064.unsqueeze(0))
    (H * dH.double()).sum().backward()
    grads = (X64.grad, h064.grad, rnn.weight_ih_l0.grad.T, rnn.weight_hh_l0.grad.T, rnn.bias_ih_l0.grad)
    return tuple(g.to(X.dtype).contiguous() for g in grads)


def _bptt(kind=""):
    """A hand-written BPTT (float64) with one typical mistake switched on."""
    @in64
    def fn(X, h0, W_x, W_h, b, dH):
        h, states = h0, []
        for t in range(X.shape[1]):
            h = torch.tanh(X[:, t] @ W_x + h @ W_h + b)
            states.append(h)
        dX = torch.zeros_like(X)
        dW_x, dW_h, db = torch.zeros_like(W_x), torch.zeros_like(W_h), torch.zeros_like(b)
        dh_next = torch.zeros_like(h0)
        for t in reversed(range(X.shape[1])):
            h_t = states[t]
            h_before = states[t - 1] if t > 0 else h0
            dh = dH[:, t] if kind == "no next" else dH[:, t] + dh_next
            da = dh if kind == "no tanh'" else dh * (1 - h_t ** 2)
            dX[:, t] = da @ W_x.T
            h_used = h_t if kind == "h_t in dW_h" else h_before
            if kind == "assign":
                dW_x, dW_h, db = X[:, t].T @ da, h_used.T @ da, da.sum(0)
            else:
                dW_x, dW_h, db = dW_x + X[:, t].T @ da, dW_h + h_used.T @ da, db + da.sum(0)
            dh_next = da @ W_h.T
        return dX, dh_next, dW_x, dW_h, db
    return fn


def exploding_args(gen, B, T, d, h, dtype=F64):
    """Small inputs keep tanh in its linear range, where W_h = 1.1 * (an orthogonal matrix) multiplies
    the gradient by about 1.1 at every step back: exploding gradients without saturation."""
    Q, _ = torch.linalg.qr(randn(gen, h, h, dtype=F64))
    return (randn(gen, B, T, d, dtype=dtype, scale=1e-3), randn(gen, B, h, dtype=dtype, scale=1e-3),
            randn(gen, d, h, dtype=dtype, scale=d ** -0.5), (1.1 * Q).to(dtype), torch.zeros(h, dtype=dtype))


def rnn_bptt_cases(gen):
    def with_dH(args, last_only=False):
        X, W_x = args[0], args[2]
        B, T, h = X.shape[0], X.shape[1], W_x.shape[1]
        dH = randn(gen, B, T, h, dtype=X.dtype)
        if last_only:
            dH[:, :-1] = 0
        return (*args, dH)
    return [
        Case("B=2, T=5, loss on every step", with_dH(sequence_args(gen, 2, 5, 3, 4))),
        Case("T=1", with_dH(sequence_args(gen, 2, 1, 3, 4))),
        Case("batch 1, loss on the last step only", with_dH(sequence_args(gen, 1, 10, 4, 5), last_only=True),
             note="sequence-to-vector: dH is zero except at t = T-1"),
        Case("long, vanishing: T=60", with_dH(sequence_args(gen, 2, 60, 3, 6, w_h_scale=0.5), last_only=True),
             note="small W_h: the gradient reaching early steps shrinks towards zero", atol=1e-5, rtol=1e-3),
        Case("long, exploding: T=50, float64", with_dH(exploding_args(gen, 2, 50, 3, 6), last_only=True),
             note="W_h = 1.1 x orthogonal, small states: the gradient grows ~100x flowing back to step 0"),
        Case("float64, loss on every step", with_dH(sequence_args(gen, 3, 8, 5, 4, dtype=F64))),
    ]


def localise_bptt(case: Case, output, probe) -> str:
    ref = ref_rnn_bptt(*case.args)
    if not isinstance(output, (tuple, list)) or len(output) != 5:
        return ""
    atol, rtol = RNN_BPTT.tol(ref[0].dtype, case)
    ok = [close(o, r, atol, rtol) for o, r in zip(output, ref)]
    if all(ok[:2]) and not all(ok[2:]):
        return ("Where: dX and dh0 are right, so the gradient flows back through time correctly; the weight "
                "gradients are not. W_x, W_h and b are shared by every step: their gradients are sums over all steps.")
    dX, ref_dX = output[0], ref[0]
    if isinstance(dX, torch.Tensor) and dX.shape == ref_dX.shape and not ok[0]:
        T = ref_dX.shape[1]
        bad = [t for t in range(T) if not close(dX[:, t], ref_dX[:, t], atol, rtol)]
        if bad and bad[-1] < T - 1:
            return (f"Where: dX[:, t] is right for t > {bad[-1]} and wrong at t = {bad[-1]}: the last steps are "
                    "right, so check what flows back from step t+1 into step t (dh_next = da @ W_h.T, added to "
                    "dH[:, t]).")
    return ""


RNN_BPTT = ExerciseSpec(
    id="rnn.rnn_bptt",
    points=4,
    cases=rnn_bptt_cases,
    reference=ref_rnn_bptt,
    reference_source="autograd through torch.nn.RNN with your weights (loss = sum(H * dH)), in float64",
    outputs=("dX", "dh0", "dW_x", "dW_h", "db"),
    tolerance={F32: (2e-5, 2e-4), F64: (1e-10, 1e-8)},
    forbidden=(AUTOGRAD, RECURRENT),
    depends=substitutes("rnn_cell", "rnn_forward"),
    localise=localise_bptt,
    mistakes=(
        KnownMistake("gradient from the next step not added", "h_t is used twice: by the loss at step t and by "
                     "step t+1. Add the gradient coming back from step t+1 (dh_next = da_{t+1} @ W_h.T) to dH[:, t]",
                     _bptt("no next")),
        KnownMistake("tanh derivative missing", "multiply by the derivative of tanh before going through the "
                     "weights: da = dh * (1 - h_t**2)", _bptt("no tanh'")),
        KnownMistake("weight gradients not accumulated over time", "the same W_x, W_h and b are used at every "
                     "step, so their gradients are sums over all steps: dW_x += ..., not dW_x = ...", _bptt("assign")),
        KnownMistake("dW_h uses h_t instead of h_{t-1}", "step t computed h_prev @ W_h with h_prev = h_{t-1} "
                     "(h0 at the first step): dW_h += h_{t-1}.T @ da_t", _bptt("h_t in dW_h")),
    ),
)

SPECS = (RNN_CELL, RNN_FORWARD, RNN_BPTT)
