"""The cases of an exercise, their reference outputs, and the tolerance each case is judged with.

All of it is computed here in the parent, never in the child: the seeds (the secret one
included), the references and the tolerances decide the grade.
"""
from __future__ import annotations

import zlib
from typing import Any

import torch

from grader.catalog.spec import Case, ExerciseSpec
from grader.config import ExerciseConfig
from grader.pipeline.compare import Tol
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


def tolerance(spec: ExerciseSpec, overrides: ExerciseConfig, case: Case | None = None) -> Tol:
    """tol(dtype) -> (atol, rtol): the spec's tolerance for the dtype, then the case's own, then
    the exercise's `atol`/`rtol` from autograde.toml (or the notebook's check(...) arguments)."""

    def tol(dtype: torch.dtype | None) -> tuple[float, float]:
        atol, rtol = spec.tol(dtype, case)
        return (overrides.atol if overrides.atol is not None else atol,
                overrides.rtol if overrides.rtol is not None else rtol)
    return tol
