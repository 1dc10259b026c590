"""The capstone's judge, the parent side of one case of transformer.transformer_forward: the
student's transformer_forward, trained briefly in the sandbox (grader.sandbox.trusted.
capstone_training), must have learnt to reverse short sequences.

Teacher-forced token accuracy on a held-out set the parent makes itself: src = random symbols,
target = the same symbols reversed, then <eos>. A correct model reaches 97-100% in 150 steps
(about 0.7 s of CPU on one thread, twice that under the sandbox's operator watch, which sees
every operator; benchmarks/capstone_cost.py); without positional information it stays near 50%.
The report also says how PyTorch's nn.Transformer does with the same trained weights.
"""
from __future__ import annotations

from typing import Any

import torch

from grader.catalog.references.torch_modules import reference_logits
from grader.catalog.spec import Verdict
from grader.sandbox.trusted.capstone_training import FIRST_SYMBOL, eval_set
from grader.sandbox.trusted.params import model_params


def reference(cfg: dict) -> dict[str, Any]:
    """What the parent holds for the capstone case: the held-out set, the bar, and the layout of the
    model the driver trains (its weights' shapes and dtypes), which the returned weights must have
    before the parent runs them as nn.Transformer: weights a child made up are refused, not run."""
    vocab = FIRST_SYMBOL + cfg["symbols"]
    model = model_params(torch.Generator().manual_seed(0), vocab, vocab, cfg["d_model"], cfg["d_ff"],
                         cfg["layers"], cfg["layers"])
    return {**eval_set(cfg), "threshold": cfg["threshold"], "layout": _layout(model)}


def _layout(params: Any) -> Any:
    """The structure of `params` with each tensor as its (shape, dtype); None for anything else
    (plain values only: the parent keeps the references of a batch's cases, grader.pipeline.cases)."""
    if isinstance(params, torch.Tensor):
        return (tuple(params.shape), str(params.dtype))
    if isinstance(params, (list, tuple)):
        return (type(params).__name__, [_layout(p) for p in params])
    if isinstance(params, dict):
        return {k: _layout(v) for k, v in params.items()}
    return None


def _accuracy(logits: torch.Tensor, targets: torch.Tensor) -> float:
    return float((logits.argmax(-1) == targets).double().mean())


def verdict(cfg: dict, value: Any, ref: dict) -> Verdict:
    """The student's held-out predictions against the parent's own targets."""
    shape = (*ref["tgt_out"].shape, FIRST_SYMBOL + cfg["symbols"])
    if not isinstance(value, dict) or not isinstance(value.get("logits"), torch.Tensor) \
            or tuple(value["logits"].shape) != shape or not value["logits"].is_floating_point():
        return Verdict(False, "the capstone run returned no usable held-out logits")
    acc = _accuracy(value["logits"], ref["tgt_out"])
    losses = value.get("losses")
    if not (isinstance(losses, list) and losses and all(type(x) is float for x in losses)):
        losses = [float("nan")]         # the driver sends floats: any other list was not its
    curve = f"loss {losses[0]:.3g} -> {losses[-1]:.3g}"
    if _layout(value.get("params")) != ref["layout"]:
        return Verdict(False, "the capstone run returned no usable trained weights (the driver returns the model "
                              "it trained, laid out as it built it)")
    theirs = _accuracy(reference_logits(value["params"], cfg["heads"])(ref["src"], ref["tgt_in"]), ref["tgt_out"])
    what = (f"after {cfg['steps']} Adam steps on reversing {cfg['length']} symbols ({curve}), your "
            f"transformer_forward predicts {acc:.1%} of {ref['tgt_out'].numel()} held-out target tokens; "
            f"nn.Transformer with your trained weights scores {theirs:.1%}")
    if acc >= ref["threshold"] and theirs < ref["threshold"]:
        # What learnt is the weights, run as a transformer: a forward that reads the answer off its
        # input (reversal is in src) predicts well with weights that learnt nothing.
        return Verdict(False, f"{what}; the weights your training left must solve the task as a transformer "
                              f"too, and they reach only {theirs:.1%} of the {ref['threshold']:.0%} bar: does "
                              "transformer_forward compute its logits from params?")
    if acc >= ref["threshold"]:
        return Verdict(True, what)
    return Verdict(False, f"{what}; it should reach {ref['threshold']:.0%}. A model that cannot tell positions "
                          "apart (no positional encoding) stays near 50% on this task")
