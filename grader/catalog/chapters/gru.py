"""Specs for the gru chapter: gru_cell and gru_forward, in PyTorch's formulation.

References: torch.nn.GRUCell / nn.GRU with the student's weights. PyTorch stacks the gates in
the order r, z, n: weight_ih = cat([W_xr, W_xz, W_xn], dim=1).T, bias_ih = [b_r, b_z, b_xn]
and bias_hh = [0, 0, b_hn] (only b_hn sits inside the reset gate). All in float64.
"""
from __future__ import annotations

import torch

from grader.catalog.inputs import gate_params, randn
from grader.catalog.probes.gates import localise_gru
from grader.catalog.probes.steps import step_localiser
from grader.catalog.references.float64 import in64
from grader.catalog.rules import RECURRENT
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake, substitutes

F32, F64 = torch.float32, torch.float64
GATES = "rzn"                  # PyTorch's order of the stacked gates
BIASES = ("b_r", "b_z", "b_xn", "b_hn")   # the candidate has two biases: b_xn outside r, b_hn inside
TOL = {F32: (2e-5, 1e-4), F64: (1e-10, 1e-8)}


def _load(module: torch.nn.Module, p: dict, suffix: str = "") -> torch.nn.Module:
    with torch.no_grad():
        getattr(module, f"weight_ih{suffix}").copy_(torch.cat([p[f"W_x{g}"] for g in GATES], dim=1).T)
        getattr(module, f"weight_hh{suffix}").copy_(torch.cat([p[f"W_h{g}"] for g in GATES], dim=1).T)
        getattr(module, f"bias_ih{suffix}").copy_(torch.cat([p["b_r"], p["b_z"], p["b_xn"]]))
        getattr(module, f"bias_hh{suffix}").copy_(torch.cat([torch.zeros_like(p["b_r"]), torch.zeros_like(p["b_z"]),
                                                             p["b_hn"]]))
    return module


# ----------------------------------------------------------------------------- gru_cell
@in64
def ref_gru_cell(x_t, h_prev, params):
    d, h = params["W_xr"].shape
    cell = _load(torch.nn.GRUCell(d, h).double(), params)
    with torch.no_grad():
        return cell(x_t, h_prev)


def gru_equations(x_t, h_prev, p, *, swap_rz=False, z_takes_new=False, reset="after", biases=True,
                  act_gate=torch.sigmoid, act_n=torch.tanh):
    """PyTorch's GRU equations with knobs for the typical mistakes (defaults: correct).

    reset="after": r * (h @ W_hn + b_hn) (PyTorch); "before": (r * h) @ W_hn + b_hn (Cho et al. 2014);
    "bias outside": r * (h @ W_hn) + b_hn."""
    b = (lambda k: p[k]) if biases else (lambda k: 0)
    r_key, z_key = ("z", "r") if swap_rz else ("r", "z")
    r = act_gate(x_t @ p[f"W_x{r_key}"] + h_prev @ p[f"W_h{r_key}"] + b(f"b_{r_key}"))
    z = act_gate(x_t @ p[f"W_x{z_key}"] + h_prev @ p[f"W_h{z_key}"] + b(f"b_{z_key}"))
    if reset == "before":
        hidden = (r * h_prev) @ p["W_hn"] + b("b_hn")
    elif reset == "bias outside":
        hidden = r * (h_prev @ p["W_hn"]) + b("b_hn")
    else:
        hidden = r * (h_prev @ p["W_hn"] + b("b_hn"))
    n = act_n(x_t @ p["W_xn"] + b("b_xn") + hidden)
    return z * n + (1 - z) * h_prev if z_takes_new else (1 - z) * n + z * h_prev


def _cell_mistake(**kw):
    @in64
    def fn(x_t, h_prev, params):
        return gru_equations(x_t, h_prev, params, **kw)
    return fn


def gru_cell_cases(gen):
    def args(B, d, h, dtype=F32, x_scale=1.0):
        return (randn(gen, B, d, dtype=dtype, scale=x_scale), randn(gen, B, h, dtype=dtype),
                gate_params(gen, d, h, "rzn", dtype=dtype, biases=BIASES))
    return [
        Case("B=3, d=4, h=5", args(3, 4, 5)),
        Case("batch 1", args(1, 6, 3)),
        Case("d > h", args(4, 12, 6)),
        Case("large inputs: gates saturate", args(2, 5, 4, x_scale=5.0)),
        Case("float64", args(3, 7, 6, dtype=F64)),
    ]


def _tol(dtype, case):
    return GRU_CELL.tol(dtype, case)


GRU_CELL = ExerciseSpec(
    id="gru.gru_cell",
    points=3,
    cases=gru_cell_cases,
    reference=ref_gru_cell,
    reference_source="torch.nn.GRUCell with your weights (gates stacked r, z, n), in float64",
    tolerance=TOL,
    forbidden=(RECURRENT,),
    localise=localise_gru("gru_cell", ref_gru_cell, _tol),
    mistakes=(
        KnownMistake("z and 1 - z exchanged (the textbook convention)", "many texts write h_t = z * n + (1 - z) * "
                     "h_prev; PyTorch's z is the share of the old state that is kept: h_t = (1 - z) * n + z * h_prev",
                     _cell_mistake(z_takes_new=True)),
        KnownMistake("reset gate applied before the matrix product (the original paper's variant)",
                     "Cho et al. (2014) compute (r * h_prev) @ W_hn; PyTorch multiplies after the product: "
                     "r * (h_prev @ W_hn + b_hn)", _cell_mistake(reset="before")),
        KnownMistake("b_hn outside the reset gate", "the reset gate multiplies b_hn too: "
                     "r * (h_prev @ W_hn + b_hn), not r * (h_prev @ W_hn) + b_hn", _cell_mistake(reset="bias outside")),
        KnownMistake("biases dropped", "every gate has a bias: b_r, b_z, and b_xn and b_hn for the candidate",
                     _cell_mistake(biases=False)),
        KnownMistake("reset and update gates exchanged", "r (with W_xr, W_hr, b_r) scales the candidate's hidden "
                     "term; z (with W_xz, W_hz, b_z) blends n and h_prev", _cell_mistake(swap_rz=True)),
    ),
)


# ----------------------------------------------------------------------------- gru_forward
@in64
def ref_gru_forward(X, h0, params):
    d, h = params["W_xr"].shape
    gru = _load(torch.nn.GRU(d, h, batch_first=True).double(), params, "_l0")
    with torch.no_grad():
        H, h_T = gru(X, h0.unsqueeze(0))
    return H, h_T[0]


def _forward_mistake(kind):
    @in64
    def fn(X, h0, params):
        h = torch.zeros_like(h0) if kind == "zeros" else h0
        H = []
        for t in range(X.shape[1]):
            new = gru_equations(X[:, t], h0 if kind == "reset" else h, params)
            H.append(h if kind == "shifted" else new)
            h = new
        return torch.stack(H, dim=1), h
    return fn


def gru_forward_cases(gen):
    def args(B, T, d, h, dtype=F32):
        p = gate_params(gen, d, h, "rzn", dtype=dtype, biases=BIASES)
        return randn(gen, B, T, d, dtype=dtype), randn(gen, B, h, dtype=dtype), p
    return [
        Case("B=2, T=6, non-zero h0", args(2, 6, 3, 4)),
        Case("T=1", args(3, 1, 4, 5)),
        Case("batch 1, T=9", args(1, 9, 5, 3)),
        Case("long sequence, T=64", args(2, 64, 4, 8), note="the state must carry through 64 steps"),
        Case("float64, T=12", args(2, 12, 3, 6, dtype=F64)),
    ]


GRU_FORWARD = ExerciseSpec(
    id="gru.gru_forward",
    points=2,
    cases=gru_forward_cases,
    reference=ref_gru_forward,
    reference_source="torch.nn.GRU(batch_first=True) with your weights (gates stacked r, z, n), in float64",
    outputs=("H", "h_T"),
    tolerance={F32: (5e-5, 2e-4), F64: (1e-10, 1e-8)},
    forbidden=(RECURRENT,),
    depends=substitutes("gru_cell"),
    localise=step_localiser(ref_gru_forward, lambda dt, c: GRU_FORWARD.tol(dt, c), "h0",
                            "each step must start from the h the previous step returned"),
    mistakes=(
        KnownMistake("state reset every step", "each step starts from the state the previous step returned, not "
                     "from h0", _forward_mistake("reset")),
        KnownMistake("initial state ignored", "start from the given h0, not from zeros", _forward_mistake("zeros")),
        KnownMistake("H shifted by one step", "H[:, t] is the state after reading X[:, t]; you stored the state "
                     "before it", _forward_mistake("shifted")),
    ),
)

SPECS = (GRU_CELL, GRU_FORWARD)
