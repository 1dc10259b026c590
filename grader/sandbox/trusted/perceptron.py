"""Driver of perceptron_forward: a case names its step ("heaviside", "sign"), which cannot travel
as a function; None calls the student's function without one (their default)."""
from __future__ import annotations

from grader.sandbox.trusted.steps import STEPS


def forward_with_named_step(module, name, X, W, b, step=None):
    fn = getattr(module, name)
    return fn(X, W, b) if step is None else fn(X, W, b, step=STEPS[step])
