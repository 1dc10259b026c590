"""The capstone: the student's transformer_forward, trained briefly, must learn to reverse
short sequences.

A behavioural check, one case of `transformer.transformer_forward`:
- in the sandbox, the exercise's driver (`driver` below) builds a small model from a fixed
  seed, trains it with Adam for a few hundred steps, with autograd through the student's
  transformer_forward (the grader's layers stand in for the student's, as in every case of
  this exercise), and returns the trained weights, the loss curve and the student's logits
  on a held-out set;
- in the parent, the judge (`verdict`) scores those logits against the held-out targets it
  generated itself, and says how PyTorch's nn.Transformer does with the same trained weights.
Teacher-forced token accuracy: src = random symbols, target = the same symbols reversed then
<eos>. A correct model reaches 98-100% in 150 steps (about 1 s on one CPU thread, 2-3 s under
the sandbox's operator watch); without positional information it stays near 50%.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from grader.catalog._part3_localise import traced_call
from grader.catalog._part3_torch import model_params, reference_logits
from grader.catalog.spec import Verdict

BOS, EOS, FIRST_SYMBOL = 0, 1, 2

# The task and the training recipe; `seed` is drawn per case list (public or hidden).
TASK = {"task": "reverse", "length": 8, "symbols": 10, "d_model": 32, "heads": 4, "d_ff": 64,
        "layers": 1, "steps": 150, "batch": 32, "lr": 3e-3, "eval_size": 256, "threshold": 0.9}


def task(seed: int) -> dict[str, Any]:
    return {**TASK, "seed": int(seed)}


def _batch(gen: torch.Generator, cfg: dict, size: int):
    """(src, tgt_in, tgt_out): src (B, L) symbols; tgt_in = <bos> + reversed; tgt_out = reversed + <eos>."""
    vocab = FIRST_SYMBOL + cfg["symbols"]
    src = torch.randint(FIRST_SYMBOL, vocab, (size, cfg["length"]), generator=gen)
    answer = src.flip(1)
    tgt_in = torch.cat([torch.full((size, 1), BOS), answer], dim=1)
    tgt_out = torch.cat([answer, torch.full((size, 1), EOS)], dim=1)
    return src, tgt_in, tgt_out


def eval_set(cfg: dict) -> dict[str, torch.Tensor]:
    """The held-out set, the same in the parent and the child (its own seed)."""
    src, tgt_in, tgt_out = _batch(torch.Generator().manual_seed(cfg["seed"] + 1), cfg, cfg["eval_size"])
    return {"src": src, "tgt_in": tgt_in, "tgt_out": tgt_out}


def reference(cfg: dict) -> dict[str, Any]:
    """What the parent holds for the capstone case: the held-out set and the bar."""
    return {**eval_set(cfg), "threshold": cfg["threshold"]}


def _leaves(x, out):
    if isinstance(x, torch.Tensor):
        out.append(x)
    elif isinstance(x, dict):
        for v in x.values():
            _leaves(v, out)
    elif isinstance(x, list):
        for v in x:
            _leaves(v, out)
    return out


def _detached(x):
    if isinstance(x, torch.Tensor):
        return x.detach().clone()
    if isinstance(x, dict):
        return {k: _detached(v) for k, v in x.items()}
    return [_detached(v) for v in x]


class CapstoneError(Exception):
    """The student's forward cannot be trained (wrong shape, not differentiable)."""


def train(forward, cfg: dict) -> dict[str, Any]:
    """Runs in the sandbox: Adam on the student's forward, fixed seed."""
    gen = torch.Generator().manual_seed(cfg["seed"])
    vocab = FIRST_SYMBOL + cfg["symbols"]
    params = model_params(gen, vocab, vocab, cfg["d_model"], cfg["d_ff"], cfg["layers"], cfg["layers"])
    leaves = [t.requires_grad_(True) for t in _leaves(params, [])]
    opt = torch.optim.Adam(leaves, lr=cfg["lr"])
    losses = []
    for step in range(cfg["steps"]):
        src, tgt_in, tgt_out = _batch(gen, cfg, cfg["batch"])
        logits = forward(src, tgt_in, params, cfg["heads"])
        if not isinstance(logits, torch.Tensor) or tuple(logits.shape) != (*tgt_in.shape, vocab):
            raise CapstoneError(f"training: transformer_forward returned {getattr(logits, 'shape', type(logits))}, "
                                f"expected logits of shape {(*tgt_in.shape, vocab)}")
        loss = F.cross_entropy(logits.reshape(-1, vocab), tgt_out.reshape(-1))
        if not loss.requires_grad:
            raise CapstoneError("training: your logits do not depend differentiably on params (no gradient "
                                "reaches the weights): avoid .detach(), .item(), .numpy(), torch.no_grad() "
                                "and building new tensors from values inside transformer_forward")
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    held_out = eval_set(cfg)
    with torch.no_grad():
        logits = forward(held_out["src"], held_out["tgt_in"], params, cfg["heads"])
    return {"logits": logits.detach().clone(), "losses": losses[:: max(1, len(losses) // 10)] + losses[-1:],
            "params": _detached(params)}


def driver(module, name: str, *args, **kwargs):
    """transformer_forward's driver: the capstone case trains; every other case is a traced call."""
    if "capstone" in kwargs:
        return train(getattr(module, name), kwargs["capstone"])
    return traced_call(module, name, *args, **kwargs)


def _accuracy(logits: torch.Tensor, targets: torch.Tensor) -> float:
    return float((logits.argmax(-1) == targets).double().mean())


def verdict(cfg: dict, value: Any, ref: dict) -> Verdict:
    """Runs in the parent: the student's held-out predictions against the parent's own targets."""
    shape = (*ref["tgt_out"].shape, FIRST_SYMBOL + cfg["symbols"])
    if not isinstance(value, dict) or not isinstance(value.get("logits"), torch.Tensor) \
            or tuple(value["logits"].shape) != shape:
        return Verdict(False, "the capstone run returned no usable held-out logits")
    acc = _accuracy(value["logits"], ref["tgt_out"])
    losses = value.get("losses") or [float("nan")]
    curve = f"loss {losses[0]:.3g} -> {losses[-1]:.3g}"
    try:
        theirs = _accuracy(reference_logits(value["params"], cfg["heads"])(ref["src"], ref["tgt_in"]), ref["tgt_out"])
        also = f"; nn.Transformer with your trained weights scores {theirs:.1%}"
    except Exception:
        also = ""
    what = (f"after {cfg['steps']} Adam steps on reversing {cfg['length']} symbols ({curve}), your "
            f"transformer_forward predicts {acc:.1%} of {ref['tgt_out'].numel()} held-out target tokens{also}")
    if acc >= ref["threshold"]:
        return Verdict(True, what)
    return Verdict(False, f"{what}; it should reach {ref['threshold']:.0%}. A model that cannot tell positions "
                          "apart (no positional encoding) stays near 50% on this task")
