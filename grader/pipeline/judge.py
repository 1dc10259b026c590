"""Judge one reply of the student's function: a pure function of what the case was, what came
back and what the reference says, run in the parent.

    judge(spec, case, value, ref, tol, modified=..., probe=...) -> CaseResult (passed or failed)

In order: the spec's own judge, or the value-by-value comparison (grader.pipeline.compare);
an input modified in place fails a right answer; a failing reply is matched against the
spec's known mistakes (the diagnosis), localised by the spec's localiser (which may probe the
student's other functions), and shown as heatmaps for 2-D outputs. No sandbox is needed: the
only call into the student's code is through `probe`. Hidden cases are not localised, nor
shown as heatmaps; their redaction is grader.pipeline.redact's job.
"""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from grader.catalog.spec import Case, ExerciseSpec, Probe, Verdict
from grader.pipeline import feedback
from grader.pipeline.compare import Tol, compare_outputs, matches
from grader.results import CaseResult, Comparison, FailureKind, Heatmap, Status
from grader.trees import clone, tree_map

HEATMAP_MAX = 24


class ProbeError(Exception):
    """A probe call into the student's code did not return a value."""


def no_probe(function: str, *args: Any, **kwargs: Any) -> Any:
    raise ProbeError("no session to probe")


@dataclass(frozen=True)
class _Decision:
    ok: bool
    message: str
    comparisons: tuple[Comparison, ...]
    failure: FailureKind | None


def judge(spec: ExerciseSpec, case: Case, value: Any, ref: Any, tol: Tol, *,
          modified: Sequence[str] = (), probe: Probe = no_probe) -> CaseResult:
    """The verdict on `value`, what the student's function returned for `case`."""
    decision = _decide(spec, case, value, ref, tol, modified, probe)
    description = feedback.case_description(spec.reference, case)
    if decision.ok:   # a judge may have something to say even on success (e.g. how long it took)
        return CaseResult(name=case.name, status=Status.PASSED, description=description,
                          message=decision.message if spec.judge else "", comparisons=decision.comparisons)
    message = decision.message
    where = "" if case.hidden else localise(spec, case, value, probe)
    if where:
        message = f"{message}\n{where}" if message else where
    fits = mistakes_fitting(spec, case, value, ref, tol)
    return CaseResult(name=case.name, status=Status.FAILED, description=description, message=message,
                      comparisons=decision.comparisons, diagnosis=fits[0] if len(fits) == 1 else "",
                      fits=fits if len(fits) > 1 else (),
                      heatmaps=() if case.hidden else heatmaps(spec, value, ref, decision.comparisons),
                      failure=decision.failure)


def _decide(spec: ExerciseSpec, case: Case, value: Any, ref: Any, tol: Tol, modified: Sequence[str],
            probe: Probe) -> _Decision:
    if spec.judge is not None:
        verdict = spec.judge(case, value, ref, tol, **({"probe": probe} if _takes_probe(spec.judge) else {}))
    else:
        comps = compare_outputs(value, ref, spec.outputs, tol, spec.exact)
        verdict = Verdict(all(c.ok for c in comps), feedback.comparisons_message(comps), comps)
    in_place = (f"modified its input in place ({', '.join(modified)}): work on new tensors and leave the inputs "
                "unchanged")
    if verdict.ok and modified:
        return _Decision(False, in_place, verdict.comparisons, FailureKind.MODIFIED_INPUT)
    also = [f"it also {in_place}"] if modified and not verdict.ok else []     # it may be why the values are wrong
    message = "\n".join([m for m in [verdict.message] if m] + also)
    return _Decision(verdict.ok, message, verdict.comparisons, None if verdict.ok else FailureKind.WRONG_ANSWER)


@functools.lru_cache(maxsize=64)
def _takes_probe(judge_fn) -> bool:
    """Whether a spec's judge names a `probe` parameter (grader.catalog.spec): most take four."""
    try:
        return "probe" in inspect.signature(judge_fn).parameters
    except (TypeError, ValueError):
        return False


def mistakes_fitting(spec: ExerciseSpec, case: Case, value: Any, ref: Any, tol: Tol) -> tuple[str, ...]:
    """'<mistake>: <explanation>' of each known mistake whose output `value` matches, of those that
    make a difference on this case: a mistake whose output is the reference's, or the reference's
    rounded to float32, cannot be what went wrong (derivative 1 at z = 0 on inputs without a zero,
    computed with float32 constants, is only a float32-accurate right answer). A case that two
    mistakes explain alike names neither as its diagnosis: it cannot tell them apart (T = 1 makes an
    inverted causal mask and one without its diagonal the same), and the exercise's other cases may."""
    rounded, named = None, []
    for mistake in spec.mistakes:
        try:
            wrong = _align(mistake.fn(*clone(case.args), **clone(dict(case.kwargs))), ref)
        except Exception:
            continue
        if not matches(value, wrong, spec.outputs, tol, spec.exact):
            continue
        rounded = _in_float32(ref) if rounded is None else rounded
        if not any(matches(wrong, same, spec.outputs, tol, spec.exact) for same in (ref, rounded)):
            named.append(f"{mistake.name}: {mistake.explanation}")
    return tuple(named)


def localise(spec: ExerciseSpec, case: Case, value: Any, probe: Probe) -> str:
    """Where the spec's localiser finds the fault ("" when it has none, or fails)."""
    if spec.localise is None:
        return ""
    try:
        return spec.localise(case, value, probe) or ""
    except Exception:   # a localiser must never cost the student a result
        return ""


def heatmaps(spec: ExerciseSpec, value: Any, ref: Any, comps: tuple[Comparison, ...]) -> tuple[Heatmap, ...]:
    """A slice of each failing output the spec names in `heatmaps`, when it is 2-D or more and of
    the reference's shape."""
    out = []
    names = spec.outputs
    for name in spec.heatmaps:
        comp = next((c for c in comps if c.name == name), None)
        if comp is None or comp.ok or name not in names:
            continue
        i = names.index(name)
        a = value[i] if len(names) > 1 and isinstance(value, (tuple, list)) and len(value) > i else value
        e = ref[i] if len(names) > 1 else ref
        if not isinstance(a, torch.Tensor) or a.shape != e.shape or e.dim() < 2 or a.is_complex():
            continue
        out.append(Heatmap(f"{name} (first {'matrix' if e.dim() > 2 else 'slice'})", _matrix(a), _matrix(e)))
    return tuple(out)


def _align(wrong: Any, ref: Any) -> Any:
    """Give a mistake's floating outputs the reference's float dtype (mistakes may compute in
    float64); a float-vs-bool or float-vs-int difference is kept, since it can be the mistake."""
    if isinstance(wrong, torch.Tensor) and isinstance(ref, torch.Tensor):
        if wrong.is_floating_point() and ref.is_floating_point() and wrong.dtype != ref.dtype:
            return wrong.to(ref.dtype)
        return wrong
    if isinstance(wrong, (list, tuple)) and isinstance(ref, (list, tuple)) and len(wrong) == len(ref):
        return type(wrong)(_align(w, r) for w, r in zip(wrong, ref))
    if isinstance(wrong, dict) and isinstance(ref, dict):
        return {k: _align(v, ref.get(k)) for k, v in wrong.items()}
    return wrong


def _in_float32(ref: Any) -> Any:
    """`ref` with its float64 tensors rounded to float32 (and back to float64)."""
    return tree_map(lambda t: t.float().double() if t.dtype == torch.float64 else t, ref)


def _matrix(t: torch.Tensor) -> tuple[tuple[float, ...], ...]:
    while t.dim() > 2:
        t = t[0]
    t = t[:HEATMAP_MAX, :HEATMAP_MAX].double().nan_to_num(0.0, posinf=1e9, neginf=-1e9)
    return tuple(tuple(round(float(v), 6) for v in row) for row in t)
