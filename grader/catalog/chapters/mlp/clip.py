"""The mlp chapter's clip_grad_norm: every gradient scaled by one factor so that their global
norm is at most max_norm, compared with torch.nn.utils.clip_grad_norm_ in float64."""
from __future__ import annotations

import torch

from grader.catalog.inputs import layer_list as layers
from grader.catalog.rules import CLIP
from grader.catalog.spec import Case, ExerciseSpec, KnownMistake

F32, F64 = torch.float32, torch.float64


def ref_clip_grad_norm(grads, max_norm):
    """torch.nn.utils.clip_grad_norm_ in float64 on tensors holding these gradients."""
    dtype = grads[0][0].dtype
    leaves = [[torch.zeros_like(g, dtype=F64, requires_grad=True) for g in layer] for layer in grads]
    for layer, glayer in zip(leaves, grads):
        for p, g in zip(layer, glayer):
            p.grad = g.detach().double().clone()
    torch.nn.utils.clip_grad_norm_([p for layer in leaves for p in layer], max_norm)
    return [tuple(p.grad.to(dtype) for p in layer) for layer in leaves]


def clip_cases(gen):
    return [
        Case("norm above max_norm: clipped", (layers(gen, [3, 4, 2], scale=3.0), 1.0)),
        Case("norm below max_norm: unchanged", (layers(gen, [3, 4, 2], scale=0.1), 5.0)),
        Case("one layer, max_norm 0.5", (layers(gen, [5, 3]), 0.5)),
        Case("large gradients", (layers(gen, [4, 4, 4, 2], scale=1e3), 2.0)),
        Case("float64, 3 layers", (layers(gen, [6, 5, 4, 3], F64), 1.5)),
    ]


def _clip_mistake(kind):
    def fn(grads, max_norm):
        gs = [[g.double() for g in layer] for layer in grads]
        dtype = grads[0][0].dtype
        if kind == "clamp":
            return [tuple(g.clamp(-max_norm, max_norm).to(dtype) for g in layer) for layer in gs]
        if kind == "per tensor":
            return [tuple((g * min(1.0, max_norm / (float(g.norm()) + 1e-6))).to(dtype) for g in layer) for layer in gs]
        sq = sum(float((g ** 2).sum()) for layer in gs for g in layer)
        total = sq if kind == "no sqrt" else sq ** 0.5
        scale = max_norm / (total + 1e-6)
        scale = scale if kind == "always" else min(1.0, scale)
        return [tuple((g * scale).to(dtype) for g in layer) for layer in gs]
    return fn


CLIP_GRAD_NORM = ExerciseSpec(
    id="mlp.clip_grad_norm",
    points=1,
    cases=clip_cases,
    reference=ref_clip_grad_norm,
    reference_source="torch.nn.utils.clip_grad_norm_ in float64",
    outputs=("grads",),
    # PyTorch divides by (norm + 1e-6); max_norm / norm is as valid: they differ by 1e-6 / norm, relatively.
    tolerance={F64: (1e-10, 1e-6)},
    forbidden=(CLIP,),
    mistakes=(
        KnownMistake("each tensor clipped separately", "compute one global norm over all the gradients together "
                     "and scale all of them by the same factor", _clip_mistake("per tensor")),
        KnownMistake("always rescaled to max_norm", "only shrink: when the norm is already below max_norm, leave "
                     "the gradients unchanged (scale = min(1, max_norm / norm))", _clip_mistake("always")),
        KnownMistake("norm without the square root", "the L2 norm is the square root of the sum of squares",
                     _clip_mistake("no sqrt")),
        KnownMistake("values clamped elementwise", "clipping by norm rescales the whole gradient (its direction "
                     "stays); clamping each value to [-max_norm, max_norm] changes the direction",
                     _clip_mistake("clamp")),
    ),
)
