"""Parent-side helpers shared by the part-1 chapters (neurons ... cnn): the driver every plain
exercise runs through, and the judge that undoes its 0-d wrapping and then compares exactly as
the engine does (names, tolerances, dtypes)."""
from __future__ import annotations

from typing import Any, Callable

import torch

from grader.catalog._part1_sandbox import ZERO_D, wire_safe
from grader.catalog.spec import Case, ExerciseSpec, Verdict
from grader.pipeline.compare import compare_outputs
from grader.pipeline.feedback import comparisons_message

__all__ = ["SAFE_CALL", "unwrap", "wire_safe", "compare_judge", "compare", "wire_safe_mistake"]

# The driver every plain part-1 exercise runs through (see grader.catalog._part1_sandbox.wire_safe).
SAFE_CALL = "grader.catalog._part1_sandbox:safe_call"


def unwrap(x: Any) -> Any:
    """Undo the sandbox's wire_safe: (ZERO_D, t of one element) becomes the 0-d tensor again."""
    if isinstance(x, tuple) and len(x) == 2 and x[0] == ZERO_D and isinstance(x[1], torch.Tensor) \
            and x[1].numel() == 1:
        t = x[1].reshape(())
        origin = getattr(x[1], "_grader_origin", None)     # what the child claimed (subclass, requires_grad)
        if origin is not None:
            t._grader_origin = origin
        return t
    if isinstance(x, tuple):
        return tuple(unwrap(v) for v in x)
    if isinstance(x, list):
        return [unwrap(v) for v in x]
    if isinstance(x, dict):
        return {k: unwrap(v) for k, v in x.items()}
    return x


def compare(spec: ExerciseSpec, case: Case, value: Any, ref: Any) -> Verdict:
    """The engine's own comparison (names, tolerance of the spec) on an unwrapped value.
    Note: per-exercise atol/rtol overrides from autograde.toml do not reach a judge."""
    comps = compare_outputs(unwrap(value), ref, spec.outputs, lambda dt: spec.tol(dt, case), spec.exact)
    return Verdict(all(c.ok for c in comps), comparisons_message(comps), comps)


def compare_judge(get_spec: Callable[[], ExerciseSpec]):
    """A judge that is the plain comparison, for exercises whose driver wraps 0-d tensors."""
    def judge(case: Case, value: Any, ref: Any) -> Verdict:
        return compare(get_spec(), case, value, ref)
    return judge


def wire_safe_mistake(fn):
    """A known mistake's output in the form the driver sends (so the engine's matching works)."""
    def wrapped(*args, **kwargs):
        return wire_safe(fn(*args, **kwargs))
    return wrapped

