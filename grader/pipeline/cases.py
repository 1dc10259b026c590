"""The cases of an exercise, their reference outputs, and the tolerance each case is judged with.

All of it is computed here in the parent, never in the child: the seeds (the secret one
included), the references and the tolerances decide the grade.
"""
from __future__ import annotations

import zlib
from dataclasses import replace
from typing import Any

import torch

from grader.catalog.spec import Case, ExerciseSpec
from grader.config import ExerciseConfig
from grader.pipeline.compare import Tol
from grader.sandbox import wire
from grader.trees import clone


def build_cases(spec: ExerciseSpec, secret_seed: int | None) -> list[Case]:
    """Public cases from a seed derived from the exercise id; hidden ones from the secret seed."""
    seed = zlib.crc32(spec.id.encode())
    cases = list(spec.cases(torch.Generator().manual_seed(seed)))
    if secret_seed is not None:
        gen = torch.Generator().manual_seed((seed ^ secret_seed) % (1 << 63))
        cases += [Case(**{**c.__dict__, "name": f"hidden {i + 1}", "hidden": True})
                  for i, c in enumerate(spec.cases(gen))]
    return cases


def references(spec: ExerciseSpec, cases: list[Case]) -> list[Any]:
    """The reference output of every case, each on its own copy of the inputs."""
    return [spec.reference(*clone(c.args), **clone(dict(c.kwargs))) for c in cases]


# (exercise id, secret seed) -> (the spec, its cases, their references, the cases' arguments as the
# wire carries them): kept here, never handed out but as copies
_PREPARED: dict[tuple[str, int | None], tuple[ExerciseSpec, list[Case], list[Any], list[bytes | None]]] = {}


def prepared(spec: ExerciseSpec, secret_seed: int | None) -> tuple[list[Case], list[Any], list[bytes | None]]:
    """build_cases and references, computed once per process for a spec and secret seed: a batch
    worker grades every submission on the same cases (0.29 s of CPU per full-curriculum submission
    when computed each time). Each caller gets copies, so nothing one grading does to its cases or
    references reaches the next. Where a copy could not be exact (a tensor that requires grad or
    has a graph, a value that is not a tensor, number, string or bytes in plain tuples, lists and
    dicts), they are computed afresh for every caller, as before.
    Third, each case's arguments in the wire format (wire.arguments), encoded once with them: a
    full-curriculum submission sends ~2,000 input tensors to its children, ~40 ms of the grading
    process's CPU when encoded for each. None where nothing is kept, or where the wire cannot carry
    them: the call encodes them itself, as it always did."""
    key = (spec.id, secret_seed)
    kept = _PREPARED.get(key)
    if kept is None or kept[0] is not spec:
        cases = build_cases(spec, secret_seed)
        refs = references(spec, cases)
        if not all(map(_plain, [refs, *(c.args for c in cases), *(c.kwargs for c in cases)])):
            return cases, refs, [None] * len(cases)
        kept = _PREPARED[key] = (spec, cases, refs, [_encoded(c) for c in cases])
    _, cases, refs, encoded = kept
    return ([replace(c, args=clone(c.args), kwargs=clone(dict(c.kwargs))) for c in cases], clone(refs),
            list(encoded))


def _encoded(case: Case) -> bytes | None:
    try:
        return wire.arguments(case.args, dict(case.kwargs))
    except wire.WireError:
        return None


def _plain(x: Any) -> bool:
    """Whether clone() copies `x` exactly (grader.trees rebuilds tuples, lists and dicts as such)."""
    if type(x) in (tuple, list):
        return all(map(_plain, x))
    if type(x) is dict:
        return all(_plain(k) and _plain(v) for k, v in x.items())
    if type(x) is torch.Tensor:
        return not x.requires_grad and x.grad_fn is None
    return x is None or type(x) in (bool, int, float, str, bytes)


def tolerance(spec: ExerciseSpec, overrides: ExerciseConfig, case: Case | None = None) -> Tol:
    """tol(dtype) -> (atol, rtol): the spec's tolerance for the dtype, then the case's own, then
    the exercise's `atol`/`rtol` from autograde.toml (or the notebook's check(...) arguments)."""

    def tol(dtype: torch.dtype | None) -> tuple[float, float]:
        atol, rtol = spec.tol(dtype, case)
        return (overrides.atol if overrides.atol is not None else atol,
                overrides.rtol if overrides.rtol is not None else rtol)
    return tol
