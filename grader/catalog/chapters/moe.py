"""Spec for "what comes next": moe_forward, a top-k mixture of experts.

PyTorch has no mixture-of-experts module, so the reference is the grader's own, written
differently from the stub's hint (a dense (..., E) gate matrix with zeros for the experts a
token is not routed to, then one einsum), in float64. Every case keeps the k-th and the
(k+1)-th router scores of each token at least MARGIN apart, so float32 and float64 route
every token to the same experts.
"""
from __future__ import annotations

import math

import torch

from grader.catalog.inputs import ffn_params, randn
from grader.catalog.references import equations as M
from grader.catalog.references.equations import variant
from grader.catalog.references.float64 import to64
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake, on_one_thread, substitutes

F32, F64 = torch.float32, torch.float64
MARGIN = 1e-3


def _experts_out(X, experts):
    """Every expert's FFN on every token: (..., E, d_model)."""
    return torch.stack([M.ffn(X, e) for e in experts], dim=-2)


def ref_moe_forward(X, router_W, experts, k):
    """scores = X W_r; gates = softmax over the top k scores, zero elsewhere; out = sum_e gate_e FFN_e(X)."""
    X64, W64, E64 = to64((X, router_W, experts))
    scores = X64 @ W64                                                     # (..., E)
    top, idx = scores.topk(k, dim=-1)                                      # (..., k)
    gates = torch.zeros_like(scores).scatter(-1, idx, torch.softmax(top, dim=-1))
    return torch.einsum("...e,...ed->...d", gates, _experts_out(X64, E64)).to(X.dtype)


def _moe(X, router_W, experts, k, *, gates="top-k softmax", largest=True):
    """The mixture with one thing changed (in float64, through `variant`)."""
    scores = X @ router_W
    top, idx = scores.topk(k, dim=-1, largest=largest)
    if gates == "softmax over all":
        weights = torch.softmax(scores, dim=-1).gather(-1, idx)
    elif gates == "dense":
        top, idx = scores, torch.arange(scores.shape[-1]).expand_as(scores)
        weights = torch.softmax(scores, dim=-1)
    elif gates == "sum":
        weights = torch.ones_like(top)
    elif gates == "raw scores":
        weights = top
    else:
        weights = torch.softmax(top, dim=-1)
    outs = _experts_out(X, experts)
    chosen = outs.gather(-2, idx.unsqueeze(-1).expand(*idx.shape, outs.shape[-1]))
    return (weights.unsqueeze(-1) * chosen).sum(-2)


def moe_case(gen, name, shape, E, k, *, d_ff=None, dtype=F32, router_scale=1.0, note=""):
    """A seeded case whose routing has no near-ties (k-th vs (k+1)-th score); never raises
    (hidden cases come from any seed): after 50 draws it keeps the last one."""
    d = shape[-1]
    for attempt in range(50):
        X = randn(gen, *shape, dtype=dtype)
        router_W = randn(gen, d, E, dtype=dtype, scale=router_scale / math.sqrt(d))
        scores = (X.double() @ router_W.double()).sort(dim=-1, descending=True).values
        gap = MARGIN * max(1.0, router_scale)
        if k == E or attempt == 49 or bool((scores[..., k - 1] - scores[..., k] >= gap).all()):
            experts = [ffn_params(gen, d, d_ff or 2 * d, dtype) for _ in range(E)]
            return Case(name, (X, router_W, experts, k), note=note)


def moe_cases(gen):
    return [
        moe_case(gen, "(B, T, d_model), 4 experts, top-2", (2, 5, 16), 4, 2),
        moe_case(gen, "(N, d_model), 8 experts, top-1 (switch routing)", (6, 12), 8, 1),
        moe_case(gen, "k = E: every expert", (2, 3, 8), 3, 3, note="the softmax then covers all experts"),
        moe_case(gen, "float64, 6 experts, top-3", (2, 4, 16), 6, 3, dtype=F64),
        moe_case(gen, "large router scores", (3, 4, 8), 4, 2, router_scale=60.0,
                 note="scores in the hundreds: the softmax must be stable"),
    ]


MOE_FORWARD_SPEC = ExerciseSpec(
    id="moe.moe_forward", points=3, cases=moe_cases, reference=ref_moe_forward,
    reference_source="the grader's own top-k mixture in torch (dense gate matrix, einsum), in float64",
    tolerance={F32: (2e-5, 2e-4), F64: (1e-10, 1e-8)},
    depends=substitutes("feed_forward"),
    mistakes=(
        KnownMistake("softmax over all experts", "take the softmax over the k selected scores only, so the k "
                     "gates sum to 1; a softmax over all E scores, then keeping k of them, leaves gates that do not",
                     variant(_moe, gates="softmax over all")),
        KnownMistake("every expert used (top-k ignored)", "route each token to its k best experts only; the others "
                     "contribute nothing", variant(_moe, gates="dense")),
        KnownMistake("gates missing", "weight each selected expert's output by its gate, softmax(top-k scores), "
                     "instead of adding the outputs up", variant(_moe, gates="sum")),
        KnownMistake("raw scores as gates", "the gates are the softmax of the top-k scores, not the scores",
                     variant(_moe, gates="raw scores")),
        KnownMistake("the k lowest-scoring experts", "torch.topk returns the largest by default: route to the k "
                     "highest scores", variant(_moe, largest=False)),
    ),
)

SPECS = (on_one_thread(MOE_FORWARD_SPEC),)
