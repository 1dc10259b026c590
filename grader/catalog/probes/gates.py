"""Which gate is wrong? Localisers for lstm_cell, peephole_lstm_cell and gru_cell.

They call the student's cell again (through the sandbox probe) on the case's inputs with
designed parameters, and compare each answer with the reference on the same parameters:

1. The *base*: every weight zero and every gate bias the same value (0.5). All gates are
   then computed from identical parameters, so exchanging two gates' parameters cannot show,
   while a wrong activation or a wrong way of combining the gates does.
2. If the base is right, each gate in turn gets this case's real parameters while the others
   keep the base ones ("leave one in"). The gates whose probe differs are the wrong ones;
   two failing gates whose exchanged parameters reproduce the student's output are reported
   as exchanged. For a single wrong gate, its input term, hidden term and bias are probed alone.
3. If the base is wrong, the error sits in the structure (an activation, a bias, the state
   update). Probes that make exactly one part invisible find it: the one probe that the
   student's cell passes names the culprit ("blind" probes: c_prev = 0 hides f, g = 0 hides i,
   i = 0 hides g; comparing only c_t hides o; z = 1/2 hides which of n and h_prev z weights).
"""
from __future__ import annotations

from typing import Any, Callable

import torch

from grader.pipeline.compare import close

BETA = 0.5       # the shared bias of the base probe: sigma(0.5) = 0.62, tanh(0.5) = 0.46
SAT = 30.0       # a bias that saturates a gate: sigma(30) = 1, sigma(-30) = 1e-13

LSTM_GATES = {"i": "input gate i", "f": "forget gate f", "g": "candidate g", "o": "output gate o"}
LSTM_FORMULA = {"i": "i = sigma(x_t @ W_xi + h_prev @ W_hi + b_i)", "f": "f = sigma(x_t @ W_xf + h_prev @ W_hf + b_f)",
                "g": "g = tanh(x_t @ W_xg + h_prev @ W_hg + b_g)", "o": "o = sigma(x_t @ W_xo + h_prev @ W_ho + b_o)"}
GRU_GATES = {"r": "reset gate r", "z": "update gate z", "n": "candidate n"}
GRU_FORMULA = {"r": "r = sigma(x_t @ W_xr + h_prev @ W_hr + b_r)", "z": "z = sigma(x_t @ W_xz + h_prev @ W_hz + b_z)",
               "n": "n = tanh(x_t @ W_xn + b_xn + r * (h_prev @ W_hn + b_hn))"}
GRU_GROUPS = {"r": ("W_xr", "W_hr", "b_r"), "z": ("W_xz", "W_hz", "b_z"), "n": ("W_xn", "W_hn", "b_xn", "b_hn")}


class Prober:
    """Calls the student's cell and the reference on the same inputs; says whether they agree."""

    def __init__(self, probe: Callable[..., Any], function: str, reference: Callable[..., Any],
                 inputs: tuple, atol: float, rtol: float) -> None:
        self.probe, self.function, self.reference = probe, function, reference
        self.inputs, self.atol, self.rtol = inputs, atol, rtol

    def ok(self, params: dict, only: int | None = None, **replace: torch.Tensor) -> bool:
        inputs = tuple(replace.get(name, value) for name, value in self.inputs)
        try:
            got = self.probe(self.function, *inputs, params)
        except Exception:
            return False
        want = self.reference(*inputs, params)
        if only is not None:
            if not isinstance(got, (tuple, list)) or len(got) != len(want):
                return False
            got, want = got[only], want[only]
        return close(got, want, self.atol, self.rtol)


def _like(output: Any, like: torch.Tensor, n: int) -> bool:
    """Whether the student's output has the right structure (n tensors shaped and typed like the state):
    a wrong shape or dtype is already reported plainly, and probing could only mislead."""
    items = output if n > 1 else (output,)
    if n > 1 and (not isinstance(output, (tuple, list)) or len(output) != n):
        return False
    return all(isinstance(t, torch.Tensor) and t.shape == like.shape and t.dtype == like.dtype for t in items)


def _base(P: dict, biases: tuple[str, ...]) -> dict:
    base = {k: torch.zeros_like(v) for k, v in P.items()}
    for b in biases:
        base[b] = torch.full_like(P[b], BETA)
    return base


def _exchanged(P: dict, a: str, b: str, keys: Callable[[str], tuple[str, ...]]) -> dict:
    Q = dict(P)
    for ka, kb in zip(keys(a), keys(b)):
        Q[ka], Q[kb] = P[kb], P[ka]
    return Q


def _terms(pr: Prober, base: dict, P: dict, keys: tuple[str, ...], names: tuple[str, ...]) -> str:
    bad = [n for k, n in zip(keys, names) if not pr.ok({**base, k: P[k]})]
    return f" The part that differs when probed alone: {', '.join(bad)}." if bad else ""


def _gate_report(pr: Prober, P: dict, base: dict, output: Any, inputs: tuple, reference: Callable, tol,
                 gates: dict[str, str], formula: dict[str, str], keys: Callable[[str], tuple[str, ...]],
                 exchangeable: str) -> str:
    """Step 2 of the module docstring, for any gated cell."""
    bad = [g for g in gates if not pr.ok({**base, **{k: P[k] for k in keys(g)}})]
    if not bad:
        return ""
    names = " and the ".join(gates[g] for g in bad)
    if len(bad) == 2 and all(g in exchangeable for g in bad):
        swapped = reference(*inputs, _exchanged(P, bad[0], bad[1], keys))
        if close(output, swapped, *tol):
            return (f"Where: the {names} look exchanged: your {gates[bad[0]]} is computed with the parameters of "
                    f"the {gates[bad[1]]} and the other way round (your output equals the reference's with those two "
                    f"gates' weights exchanged). Check {formula[bad[0]]} and {formula[bad[1]]}.")
    if len(bad) == 1:
        g = bad[0]
        k = keys(g)
        kind = {"W_x": "input", "W_h": "hidden"}
        terms = _terms(pr, base, P, k, tuple(f"the {kind.get(n[:3], 'bias')} term ({n})" for n in k))
        return (f"Where: the {gates[g]}. With every other gate held at a fixed value (zero weights, equal biases), "
                f"your cell matches the reference until the {gates[g]} gets this case's parameters: check "
                f"{formula[g]}.{terms}")
    return (f"Where: the {names}: each of these differs from the reference when it alone gets this case's "
            f"parameters (the other gates held fixed). Check " + "; ".join(formula[g] for g in bad) + ".")


# ----------------------------------------------------------------------------- LSTM
def localise_lstm(function: str, reference: Callable, tol: Callable, peephole: bool = False):
    def lstm_keys(g: str) -> tuple[str, ...]:
        return (f"W_x{g}", f"W_h{g}", f"b_{g}")

    def localise(case, output, probe) -> str:
        x, h, c, P = case.args
        if not _like(output, h, 2):
            return ""
        atol, rtol = tol(x.dtype, case)
        pr = Prober(probe, function, reference, (("x", x), ("h", h), ("c", c)), atol, rtol)
        base = _base(P, ("b_i", "b_f", "b_g", "b_o"))
        if not pr.ok(base):
            return _lstm_structure(pr, base)
        where = _gate_report(pr, P, base, output, (x, h, c), reference, (atol, rtol), LSTM_GATES, LSTM_FORMULA,
                             lstm_keys, "ifgo")
        if where or not peephole:
            return where or ("Where: each gate is right on its own (probed with the others held fixed); the error "
                             "shows only when several gates get real weights at once: check that every gate reads "
                             "both x_t and h_prev, with its own weights.")
        bad = [k for k in "ifo" if not pr.ok({**base, f"p_{k}": P[f"p_{k}"]})]
        said = {"i": "p_i * c_prev in the input gate", "f": "p_f * c_prev in the forget gate",
                "o": "p_o * c_t in the output gate (c_t, the new cell state, computed before o)"}
        if not bad:
            return ""
        swapped = {**P, "p_i": P["p_f"], "p_f": P["p_i"]}
        if bad == ["i", "f"] and close(output, reference(x, h, c, swapped), atol, rtol):
            return ("Where: the peepholes p_i and p_f look exchanged: the input gate adds p_i * c_prev, the forget "
                    "gate p_f * c_prev.")
        return ("Where: the gates without peepholes are right; the peephole term" + ("s " if len(bad) > 1 else " ") +
                "; ".join(said[k] for k in bad) + (" differ" if len(bad) > 1 else " differs") + " from the reference.")
    return localise


def _lstm_structure(pr: Prober, base: dict) -> str:
    """Step 3 for the LSTM: the base probe failed."""
    if pr.ok(base, only=1):                       # c_t right, h_t wrong: only o and h = o * tanh(c) remain
        if pr.ok({**base, "b_o": torch.zeros_like(base["b_o"])}):
            return ("Where: the output gate's bias b_o: your h_t is right when b_o = 0 and wrong otherwise "
                    "(c_t is right): o = sigma(x_t @ W_xo + h_prev @ W_ho + b_o).")
        if pr.ok({**base, "b_o": torch.full_like(base["b_o"], SAT)}):
            return ("Where: the output gate o. Your c_t is right, and h_t too when o is saturated fully open, but "
                    "not otherwise: check o = sigma(x_t @ W_xo + h_prev @ W_ho + b_o) (a sigmoid, not tanh).")
        return ("Where: the output h_t = o * tanh(c_t). Your c_t is right, and h_t stays wrong even with the output "
                "gate fully open (o = 1, where h_t must be tanh(c_t)): check the tanh of c_t.")
    # c_t is wrong. Each probe hides one gate from c_t; the gate whose hiding probe passes is the culprit,
    # and it is its bias when the cell is also right with that bias set to 0. (Structure probes may use
    # unequal biases: a student who exchanged two gates' parameters passed the base and never gets here.)
    full = lambda k, v: {**base, k: torch.full_like(base[k], v)}  # noqa: E731
    c0 = torch.zeros_like(pr.inputs[2][1])
    for g, hidden, bias0 in (("g", pr.ok(full("b_i", -SAT), only=1), pr.ok(full("b_g", 0.0), only=1)),
                             ("f", pr.ok(full("b_g", 2 * BETA), only=1, c=c0), pr.ok(full("b_f", 0.0), only=1)),
                             ("i", pr.ok(full("b_g", 0.0), only=1), pr.ok(full("b_i", 0.0), only=1))):
        if not hidden:
            continue
        if bias0:
            return (f"Where: the bias b_{g} of the {LSTM_GATES[g]}: your c_t is right when b_{g} = 0 and wrong "
                    f"otherwise: {LSTM_FORMULA[g]}.")
        act = "tanh" if g == "g" else "a sigmoid"
        return (f"Where: the {LSTM_GATES[g]}. Your c_t is right whenever the {LSTM_GATES[g]} cannot affect it, and "
                f"wrong otherwise, even with all weights zero: check its activation ({act}): {LSTM_FORMULA[g]}.")
    zero = {k: torch.zeros_like(v) for k, v in base.items()}
    if pr.ok(zero):
        return ("Where: the biases. With every weight and bias zero your cell is right; with all biases equal to "
                f"{BETA} it is not: each gate adds its own bias (b_i, b_f, b_g, b_o) inside its activation.")
    return ("Where: the cell-state update. Even with every weight zero and all biases equal (so no gate can be "
            "confused with another), your c_t differs: check c_t = f * c_prev + i * g, built from c_prev (not "
            "h_prev), with the sigmoid for i, f, o and tanh for g.")


# ----------------------------------------------------------------------------- GRU
def localise_gru(function: str, reference: Callable, tol: Callable):
    def localise(case, output, probe) -> str:
        x, h, P = case.args
        if not _like(output, h, 1):
            return ""
        atol, rtol = tol(x.dtype, case)
        pr = Prober(probe, function, reference, (("x", x), ("h", h)), atol, rtol)
        base = _base(P, ("b_r", "b_z", "b_xn", "b_hn"))
        if not pr.ok(base):
            return _gru_structure(pr, base)
        return _gate_report(pr, P, base, output, (x, h), reference, (atol, rtol), GRU_GATES, GRU_FORMULA,
                            lambda g: GRU_GROUPS[g], "rz") or (
            "Where: each gate is right on its own (probed with the others held fixed); the error shows only when "
            "several get real weights at once: check that each gate reads both x_t and h_prev with its own weights.")
    return localise


def _gru_structure(pr: Prober, base: dict) -> str:
    zeroed = lambda k: {**base, k: torch.zeros_like(base[k])}  # noqa: E731
    said = {
        "b_r": "the reset gate's bias b_r: " + GRU_FORMULA["r"],
        "b_z": ("the update gate z. Your cell is right when z = 1/2 exactly and wrong otherwise: either b_z is not "
                "used as given, or z and 1 - z are exchanged. PyTorch's z keeps the old state: "
                "h_t = (1 - z) * n + z * h_prev"),
        "b_xn": "the candidate's input-side bias b_xn (outside the reset gate): " + GRU_FORMULA["n"],
        "b_hn": ("the term r * (h_prev @ W_hn + b_hn) of the candidate. Your cell is right when that term is zero and "
                 "wrong otherwise: the reset gate multiplies the result of the product plus b_hn (not h_prev before "
                 "the product, and not without b_hn): " + GRU_FORMULA["n"]),
    }
    passed = [k for k in said if pr.ok(zeroed(k))]
    if len(passed) == 1:
        return f"Where: {said[passed[0]]}."
    if pr.ok({**base, "b_z": torch.full_like(base["b_z"], SAT)}):     # z = 1: h_t = h_prev, n invisible
        return ("Where: the candidate n. With the update gate saturated (z = 1, so h_t = h_prev) your cell is right, "
                "otherwise not, even with all weights zero: check n's activation (tanh) and terms: "
                + GRU_FORMULA["n"] + ".")
    if pr.ok({k: torch.zeros_like(v) for k, v in base.items()}):
        return ("Where: the biases. With every weight and bias zero your cell is right; with all biases equal to "
                f"{BETA} it is not: check b_r, b_z, b_xn and b_hn, each in its place.")
    return ("Where: the way the gates are combined. Even with every weight zero and all biases equal, your h_t "
            "differs: check h_t = (1 - z) * n + z * h_prev and the activations (sigmoid for r and z, tanh for n).")
