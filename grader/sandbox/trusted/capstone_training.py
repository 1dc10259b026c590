"""Driver of transformer_forward: the capstone case trains the student's transformer_forward
here, in the child; every other case is a traced call (grader.sandbox.trusted.tracing).

The capstone: a small model, built from a fixed seed, is trained with Adam for a few hundred
steps, with autograd through the student's transformer_forward (the grader's layers stand in
for the student's, as in every case of this exercise), to reverse short sequences; the driver
returns the trained weights, the loss curve and the student's logits on a held-out set, which
the parent scores against targets it makes itself (grader.catalog.judges.capstone).
"""
from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from grader.sandbox.trusted.params import model_params
from grader.sandbox.trusted.tracing import traced_call
from grader.sandbox.trusted.unwatched import unwatched
from grader.trees import clone, leaves, tree_map

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


class CapstoneError(Exception):
    """The student's forward cannot be trained (wrong shape, not differentiable)."""


class Adam:
    """torch.optim.Adam(weights, lr) (betas 0.9 and 0.999, eps 1e-8, no weight decay), its update
    done by PyTorch's fused Adam kernel called directly: two operators a step for all the weights,
    where torch.optim's default path runs ~12 per weight (600 a step here, each one seen by the
    sandbox's operator watch), and its fused and foreach paths import torch._dynamo on their first
    step (2-3 s in a fresh child). Weights without a gradient are left alone, as torch.optim does."""

    def __init__(self, weights: list[torch.Tensor], lr: float) -> None:
        self.weights, self.lr = weights, lr
        self.exp_avgs = [torch.zeros_like(w, memory_format=torch.preserve_format) for w in weights]
        self.exp_avg_sqs = [torch.zeros_like(w, memory_format=torch.preserve_format) for w in weights]
        self.steps = [torch.zeros((), dtype=torch.float32) for _ in weights]

    def zero_grad(self) -> None:
        for w in self.weights:
            w.grad = None

    @torch.no_grad()
    def step(self) -> None:
        used = [i for i, w in enumerate(self.weights) if w.grad is not None]
        if not used:
            return
        pick = lambda xs: [xs[i] for i in used]    # noqa: E731
        steps = pick(self.steps)
        torch._foreach_add_(steps, 1)
        torch._fused_adam_(pick(self.weights), [self.weights[i].grad for i in used], pick(self.exp_avgs),
                           pick(self.exp_avg_sqs), [], steps, lr=self.lr, beta1=0.9, beta2=0.999,
                           weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)


def _plain(logits: Any) -> Any:
    """The forward's output, refused if it is a tensor subclass: the grader's unwatched work on the
    logits (the loss, the held-out copy) must run none of the student's code."""
    if isinstance(logits, torch.Tensor) and type(logits) is not torch.Tensor:
        raise CapstoneError(f"training: transformer_forward returned an instance of {type(logits).__name__}, not "
                            "a plain torch.Tensor: return a real tensor (subclasses are not accepted)")
    return logits


def _same(t: torch.Tensor) -> torch.Tensor:
    return t


def train(forward, cfg: dict) -> dict[str, Any]:
    """Adam on the student's forward, fixed seed. Only the student's forward runs in the operator
    watch: the grader's own tensor work around it (weights, batches, the loss, its backward, the
    optimizer, the held-out set) is set aside from it (unwatched): two thirds of the operators it saw.
    Each call gets its own dicts and lists around the weights, so what the driver returns is the
    model it trained, whatever the forward does to what it was handed (the red team's popped
    W_out, which left the parent's nn.Transformer check nothing to run)."""
    with unwatched():
        gen = torch.Generator().manual_seed(cfg["seed"])
        vocab = FIRST_SYMBOL + cfg["symbols"]
        params = model_params(gen, vocab, vocab, cfg["d_model"], cfg["d_ff"], cfg["layers"], cfg["layers"])
        weights = [t.requires_grad_(True) for t in leaves(params)]
        opt = Adam(weights, cfg["lr"])
    losses = []
    for _ in range(cfg["steps"]):
        with unwatched():
            src, tgt_in, tgt_out = _batch(gen, cfg, cfg["batch"])
        logits = _plain(forward(src, tgt_in, tree_map(_same, params), cfg["heads"]))
        if not isinstance(logits, torch.Tensor) or tuple(logits.shape) != (*tgt_in.shape, vocab):
            raise CapstoneError(f"training: transformer_forward returned {getattr(logits, 'shape', type(logits))}, "
                                f"expected logits of shape {(*tgt_in.shape, vocab)}")
        with unwatched():
            loss = F.cross_entropy(logits.reshape(-1, vocab), tgt_out.reshape(-1))
            if not loss.requires_grad:
                raise CapstoneError("training: your logits do not depend differentiably on params (no gradient "
                                    "reaches the weights): avoid .detach(), .item(), .numpy(), torch.no_grad() "
                                    "and building new tensors from values inside transformer_forward")
            opt.zero_grad()     # torch's derivatives of the forward's operators, which the watch saw
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
    with unwatched():
        held_out = eval_set(cfg)
    with torch.no_grad():
        logits = _plain(forward(held_out["src"], held_out["tgt_in"], tree_map(_same, params), cfg["heads"]))
    with unwatched():
        return {"logits": logits.detach().clone(), "losses": losses[:: max(1, len(losses) // 10)] + losses[-1:],
                "params": clone(params)}


def driver(module, name: str, *args, **kwargs):
    """transformer_forward's driver: the capstone case trains; every other case is a traced call."""
    if "capstone" in kwargs:
        return train(getattr(module, name), kwargs["capstone"])
    return traced_call(module, name, *args, **kwargs)
