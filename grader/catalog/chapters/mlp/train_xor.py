"""mlp.train_xor, a behavioural check: the student's own building blocks must train an MLP that
gets XOR's four points right. A driver in the sandbox (grader.sandbox.trusted.train_xor) trains
twice from the same seed and counts the calls of mlp_backward and the steps; the judge here
evaluates the returned params with the grader's own MLP forward pass."""
from __future__ import annotations

import torch

from grader.catalog.chapters.mlp.layers import ref_mlp_forward
from grader.catalog.rules import AUTOGRAD, TORCH_OPTIM
from grader.catalog.spec import Case, ExerciseSpec, Verdict


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


def _driver_reply(value) -> bool:
    """Whether `value` has the form the driver's reply always has: a child that sends another sent
    its own, and gets no points for it (never a grader fault)."""
    return (isinstance(value, dict) and "params" in value and "again" in value
            and isinstance(value.get("calls", {}), dict)
            and all(isinstance(n, int) and not isinstance(n, bool) for n in value.get("calls", {}).values()))


def judge_train_xor(case: Case, value, ref, tol) -> Verdict:
    if not _driver_reply(value):
        return Verdict(False, "the training run sent back no usable result (the grader's driver returns the "
                              "params of two trainings and the calls it counted)")
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
                              f"of {', '.join(STEPS)} for the updates (calls that returned: {calls}; one that "
                              "raised does not count)")
    pred = ref_mlp_forward(ref["X"].double(), params).argmax(dim=1)
    right = int((pred == ref["targets"]).sum())
    if right < 4:
        return Verdict(False, f"the trained network gets {right} of XOR's 4 points right (predicts "
                              f"{pred.tolist()}, expected [0, 1, 1, 0]): train longer, with more hidden units, "
                              "or check mlp_backward and your step first")
    return Verdict(True, f"all 4 XOR points right; {calls.get('mlp_backward', 0) // 2} backward passes per training")


TRAIN_XOR = ExerciseSpec(
    id="mlp.train_xor",
    points=3,
    cases=xor_cases,
    reference=ref_train_xor,
    reference_source="XOR's four points; your params are evaluated with the grader's own MLP forward pass",
    outputs=("params",),
    forbidden=(AUTOGRAD, TORCH_OPTIM),
    driver="grader.sandbox.trusted.train_xor:train_xor_driver",
    judge=judge_train_xor,
    call_timeout=20.0,
)
