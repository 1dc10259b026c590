"""The judge of perceptron_fit: the same weights as the perceptron rule, step for step, and the
training accuracy they imply (separable data must be learnt perfectly; XOR cannot be)."""
from __future__ import annotations

import torch

from grader.catalog.spec import Case, Verdict
from grader.pipeline.compare import compare_outputs
from grader.pipeline.feedback import comparisons_message


def accuracy(X, Y, W, b) -> float:
    """Fraction of instances whose every output unit is right, by the reference forward."""
    pred = torch.heaviside(X.double() @ W.double() + b.double(), torch.tensor(1.0, dtype=torch.float64))
    return float((pred == Y.double()).all(dim=1).double().mean())


def judge_fit(case: Case, value, ref, tol) -> Verdict:
    comps = compare_outputs(value, ref, ("W", "b"), tol)
    if not all(c.ok for c in comps):
        return Verdict(False, comparisons_message(comps), comps)
    X, Y = case.args[0], case.args[1]
    target = accuracy(X, Y, *ref)
    got = accuracy(X, Y, *value)
    if target == 1.0 and got < 1.0:
        return Verdict(False, f"training accuracy {got:.0%}: separable data must be learnt perfectly", comps)
    if case.note.startswith("not separable") and got == 1.0:   # impossible for one layer of threshold units
        return Verdict(False, "100% on XOR is impossible for a single-layer perceptron: check what you return", comps)
    return Verdict(True, f"training accuracy {got:.0%}", comps)
