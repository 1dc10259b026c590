"""Specs for the lstm chapter: lstm_cell, lstm_forward, peephole_lstm_cell.

References: torch.nn.LSTMCell / nn.LSTM loaded with the student's weights. PyTorch stacks the
four gates' (out, in) blocks in the order i, f, g, o; the course writes one (in, out) matrix
per gate, so weight_ih = cat([W_xi, W_xf, W_xg, W_xo], dim=1).T, and the course's single bias
per gate is bias_ih (bias_hh is zero). PyTorch has no peephole LSTM: that reference is the
grader's own, the equations written once more in torch. All in float64.
"""
from __future__ import annotations

import torch

from grader.catalog.inputs import gate_params, randn
from grader.catalog.probes.gates import localise_lstm
from grader.catalog.probes.steps import step_localiser
from grader.catalog.references.float64 import in64
from grader.catalog.rules import LSTM_KERNELS, RECURRENT
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake, substitutes

F32, F64 = torch.float32, torch.float64
GATES = "ifgo"                 # PyTorch's order of the stacked gates
TOL = {F32: (2e-5, 1e-4), F64: (1e-10, 1e-8)}


def _load(module: torch.nn.Module, p: dict, suffix: str = "") -> torch.nn.Module:
    with torch.no_grad():
        getattr(module, f"weight_ih{suffix}").copy_(torch.cat([p[f"W_x{g}"] for g in GATES], dim=1).T)
        getattr(module, f"weight_hh{suffix}").copy_(torch.cat([p[f"W_h{g}"] for g in GATES], dim=1).T)
        getattr(module, f"bias_ih{suffix}").copy_(torch.cat([p[f"b_{g}"] for g in GATES]))
        getattr(module, f"bias_hh{suffix}").zero_()
    return module


# ----------------------------------------------------------------------------- lstm_cell
@in64
def ref_lstm_cell(x_t, h_prev, c_prev, params):
    d, h = params["W_xi"].shape
    cell = _load(torch.nn.LSTMCell(d, h).double(), params)
    with torch.no_grad():
        return cell(x_t, (h_prev, c_prev))


def lstm_equations(x_t, h_prev, c_prev, p, *, gate_of=None, act=None, h_from_c=torch.tanh, c_from="c",
                   peep=None, o_peeks="c_t"):
    """The course's gate equations with knobs for the typical mistakes (defaults: correct).

    gate_of maps a gate to the gate whose parameters it uses; act maps a gate to its activation;
    peep holds the peephole vectors (None: plain LSTM); o_peeks is "c_t", "c_prev" or "none"."""
    gate_of = gate_of or {}
    act = {**{"i": torch.sigmoid, "f": torch.sigmoid, "g": torch.tanh, "o": torch.sigmoid}, **(act or {})}

    def pre(g):
        s = gate_of.get(g, g)
        return x_t @ p[f"W_x{s}"] + h_prev @ p[f"W_h{s}"] + p[f"b_{s}"]
    peep = peep or {}
    i = act["i"](pre("i") + (peep["i"] * c_prev if "i" in peep else 0))
    f = act["f"](pre("f") + (peep["f"] * c_prev if "f" in peep else 0))
    g = act["g"](pre("g"))
    c_t = f * (h_prev if c_from == "h" else c_prev) + i * g
    o_c = {"c_t": c_t, "c_prev": c_prev, "none": None}[o_peeks]
    o = act["o"](pre("o") + (peep["o"] * o_c if "o" in peep and o_c is not None else 0))
    return o * h_from_c(c_t), c_t


def _cell_mistake(**kw):
    @in64
    def fn(x_t, h_prev, c_prev, params):
        return lstm_equations(x_t, h_prev, c_prev, params, **kw)
    return fn


def lstm_cell_cases(gen, peephole=False):
    def args(B, d, h, dtype=F32, c_scale=1.0, x_scale=1.0):
        p = gate_params(gen, d, h, GATES, dtype=dtype)
        if peephole:
            p.update({f"p_{g}": randn(gen, h, dtype=dtype, scale=0.5) for g in "ifo"})
        return (randn(gen, B, d, dtype=dtype, scale=x_scale), randn(gen, B, h, dtype=dtype),
                randn(gen, B, h, dtype=dtype, scale=c_scale), p)
    return [
        Case("B=3, d=4, h=5", args(3, 4, 5)),
        Case("batch 1", args(1, 6, 3)),
        Case("d > h, large cell state", args(4, 12, 6, c_scale=3.0), note="c_prev of size 3: tanh(c) saturates"),
        Case("large inputs: gates saturate", args(2, 5, 4, x_scale=5.0)),
        Case("float64", args(3, 7, 6, dtype=F64)),
    ]


def _tol(dtype, case):
    return LSTM_CELL.tol(dtype, case)


LSTM_CELL = ExerciseSpec(
    id="lstm.lstm_cell",
    points=3,
    cases=lstm_cell_cases,
    reference=ref_lstm_cell,
    reference_source="torch.nn.LSTMCell with your weights (gates stacked i, f, g, o), in float64",
    outputs=("h_t", "c_t"),
    tolerance=TOL,
    forbidden=(RECURRENT,),
    localise=localise_lstm("lstm_cell", ref_lstm_cell, _tol),
    mistakes=(
        KnownMistake("input and forget gates exchanged", "the input gate i (with W_xi, W_hi, b_i) scales the "
                     "candidate g; the forget gate f (with W_xf, W_hf, b_f) scales c_prev: c_t = f * c_prev + i * g",
                     _cell_mistake(gate_of={"i": "f", "f": "i"})),
        KnownMistake("output gate and candidate exchanged", "the candidate g uses W_xg, W_hg, b_g and tanh; the "
                     "output gate o uses W_xo, W_ho, b_o and the sigmoid", _cell_mistake(gate_of={"o": "g", "g": "o"})),
        KnownMistake("tanh and sigmoid exchanged", "the gates i, f, o are sigmoids (values in (0, 1): how open "
                     "they are); only the candidate g uses tanh",
                     _cell_mistake(act={"i": torch.tanh, "f": torch.tanh, "o": torch.tanh, "g": torch.sigmoid})),
        KnownMistake("h = o * c without tanh", "the output is h_t = o * tanh(c_t): squash the cell state with tanh "
                     "before the output gate reads it", _cell_mistake(h_from_c=lambda c: c)),
        KnownMistake("cell state updated from h", "the long-term state is updated from the previous long-term "
                     "state: c_t = f * c_prev + i * g, not f * h_prev", _cell_mistake(c_from="h")),
    ),
)


# ----------------------------------------------------------------------------- lstm_forward
@in64
def ref_lstm_forward(X, h0, c0, params):
    d, h = params["W_xi"].shape
    lstm = _load(torch.nn.LSTM(d, h, batch_first=True).double(), params, "_l0")
    with torch.no_grad():
        H, (h_T, c_T) = lstm(X, (h0.unsqueeze(0), c0.unsqueeze(0)))
    return H, (h_T[0], c_T[0])


def _forward_mistake(kind):
    @in64
    def fn(X, h0, c0, params):
        h, c = (torch.zeros_like(h0), torch.zeros_like(c0)) if kind == "zeros" else (h0, c0)
        H, C = [], []
        for t in range(X.shape[1]):
            h, c = lstm_equations(X[:, t], h0 if kind == "reset" else h, c0 if kind == "reset" else c, params)
            H.append(h)
            C.append(c)
        if kind == "H holds c":
            return torch.stack(C, dim=1), (h, c)
        if kind == "final swapped":
            return torch.stack(H, dim=1), (c, h)
        return torch.stack(H, dim=1), (h, c)
    return fn


def lstm_forward_cases(gen):
    def args(B, T, d, h, dtype=F32, w_scale=None):
        return (randn(gen, B, T, d, dtype=dtype), randn(gen, B, h, dtype=dtype), randn(gen, B, h, dtype=dtype),
                gate_params(gen, d, h, GATES, dtype=dtype, w_scale=w_scale))
    return [
        Case("B=2, T=6, non-zero h0 and c0", args(2, 6, 3, 4)),
        Case("T=1", args(3, 1, 4, 5)),
        Case("batch 1, T=9", args(1, 9, 5, 3)),
        Case("long sequence, T=64", args(2, 64, 4, 8), note="the states must carry through 64 steps"),
        Case("float64, T=12", args(2, 12, 3, 6, dtype=F64)),
    ]


LSTM_FORWARD = ExerciseSpec(
    id="lstm.lstm_forward",
    points=2,
    cases=lstm_forward_cases,
    reference=ref_lstm_forward,
    reference_source="torch.nn.LSTM(batch_first=True) with your weights (gates stacked i, f, g, o), in float64",
    outputs=("H", "(h_T, c_T)"),
    tolerance={F32: (5e-5, 2e-4), F64: (1e-10, 1e-8)},
    forbidden=(RECURRENT, LSTM_KERNELS),
    depends=substitutes("lstm_cell"),
    localise=step_localiser(ref_lstm_forward, lambda dt, c: LSTM_FORWARD.tol(dt, c), "h0 and c0",
                             "each step must start from the (h, c) the previous step returned"),
    mistakes=(
        KnownMistake("states reset every step", "each step starts from the (h, c) the previous step returned; "
                     "you start every step from (h0, c0), so nothing is remembered", _forward_mistake("reset")),
        KnownMistake("initial states ignored", "start from the given h0 and c0, not from zeros",
                     _forward_mistake("zeros")),
        KnownMistake("H holds the cell states", "H collects the hidden states h_t (the cell's output), not the "
                     "cell states c_t", _forward_mistake("H holds c")),
        KnownMistake("h_T and c_T exchanged", "return (H, (h_T, c_T)): the hidden state first, then the cell "
                     "state, as nn.LSTM does", _forward_mistake("final swapped")),
    ),
)


# ----------------------------------------------------------------------------- peephole_lstm_cell
@in64
def ref_peephole_lstm_cell(x_t, h_prev, c_prev, params):
    """The peephole equations, written out in torch (PyTorch has no peephole LSTM)."""
    p = params
    i = torch.sigmoid(x_t @ p["W_xi"] + h_prev @ p["W_hi"] + p["p_i"] * c_prev + p["b_i"])
    f = torch.sigmoid(x_t @ p["W_xf"] + h_prev @ p["W_hf"] + p["p_f"] * c_prev + p["b_f"])
    g = torch.tanh(x_t @ p["W_xg"] + h_prev @ p["W_hg"] + p["b_g"])
    c_t = f * c_prev + i * g
    o = torch.sigmoid(x_t @ p["W_xo"] + h_prev @ p["W_ho"] + p["p_o"] * c_t + p["b_o"])
    return o * torch.tanh(c_t), c_t


def _peep_mistake(o_peeks="c_t", swap_if=False, **kw):
    @in64
    def fn(x_t, h_prev, c_prev, params):
        peep = {"i": params["p_f" if swap_if else "p_i"], "f": params["p_i" if swap_if else "p_f"], "o": params["p_o"]}
        return lstm_equations(x_t, h_prev, c_prev, params, peep=peep, o_peeks=o_peeks, **kw)
    return fn


def _peep_tol(dtype, case):
    return PEEPHOLE_LSTM_CELL.tol(dtype, case)


PEEPHOLE_LSTM_CELL = ExerciseSpec(
    id="lstm.peephole_lstm_cell",
    points=2,
    cases=lambda gen: lstm_cell_cases(gen, peephole=True),
    reference=ref_peephole_lstm_cell,
    reference_source="the grader's torch implementation of the peephole equations, in float64",
    outputs=("h_t", "c_t"),
    tolerance=TOL,
    forbidden=(RECURRENT,),
    localise=localise_lstm("peephole_lstm_cell", ref_peephole_lstm_cell, _peep_tol, peephole=True),
    mistakes=(
        KnownMistake("output gate peeks at c_prev", "the output gate is computed after the cell update and "
                     "looks at the new state: o = sigma(... + p_o * c_t + b_o), not p_o * c_prev",
                     _peep_mistake(o_peeks="c_prev")),
        KnownMistake("output peephole missing", "the output gate has a peephole too: add p_o * c_t inside its "
                     "sigmoid", _peep_mistake(o_peeks="none")),
        KnownMistake("peepholes p_i and p_f exchanged", "the input gate adds p_i * c_prev and the forget gate "
                     "p_f * c_prev", _peep_mistake(swap_if=True)),
        KnownMistake("h = o * c without tanh", "the output is h_t = o * tanh(c_t), with the peephole cell too",
                     _peep_mistake(h_from_c=lambda c: c)),
    ),
)

SPECS = (LSTM_CELL, LSTM_FORWARD, PEEPHOLE_LSTM_CELL)
