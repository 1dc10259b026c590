"""The engine's hook: after correctness, time the exercises that passed, one check at a time.

    exercises = stage.run(exercises, specs, ctx)     (grader.pipeline.engine.grade, step 7)

Off unless [performance] enabled (or `grader check --perf`). For each exercise with a
performance spec: plan the device (skips are said, never silently passed), run the rounds in a
SandboxHarness, compare every timed output with the exercise's reference, and judge. The result
is ExerciseResult.performance; correctness points are untouched.
"""
from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import torch

from grader.catalog.spec import Case, ExerciseSpec
from grader.config import Config
from grader.pipeline.cases import tolerance
from grader.pipeline.compare import compare_outputs
from grader.pipeline.context import Context
from grader.trees import clone
from grader.results import ExerciseResult, PerfResult
from grader.sandbox.runner import Sandbox
from grader.sandbox.wire import claimed_type
from grader import threads
from grader.timing import policy, rounds
from grader.timing.config import PerfConfig, perf_config
from grader.timing.harness import HarnessError, SandboxHarness
from grader.timing.specs import PerfSpec, perf_specs

# Timing needs the machine to itself: checks in one process run one at a time, even when the
# engine grades exercises (or a batch grades submissions) on several threads.
_TIMING_LOCK = threading.Lock()
MIN_BUDGET_S = 0.5


def cuda_available() -> bool:
    return torch.cuda.is_available()


def run(exercises: tuple[ExerciseResult, ...], specs: list[ExerciseSpec], ctx: Context,
        cuda: bool | None = None) -> tuple[ExerciseResult, ...]:
    cfg = perf_config(ctx.config)
    if not cfg.enabled:
        return exercises
    cuda = cuda_available() if cuda is None else cuda
    by_id = {s.id: s for s in specs}
    gpu_sandbox: list[Sandbox] = []
    out = []
    try:
        for e in exercises:
            spec = by_id.get(e.id)
            checks = perf_specs(spec) if spec is not None else ()
            if not checks:
                out.append(e)
                continue
            results = tuple(check(p, spec, e, ctx, cfg, cuda, gpu_sandbox) for p in checks)
            out.append(replace(e, performance=results))
    finally:
        for sb in gpu_sandbox:
            sb.shutdown()
    return tuple(out)


def check(perf: PerfSpec, spec: ExerciseSpec, result: ExerciseResult, ctx: Context, cfg: PerfConfig, cuda: bool,
          gpu_sandbox: list[Sandbox]) -> PerfResult:
    device, why = policy.plan(perf, cfg, cuda, result.passed)
    if device is None:
        where = "cuda" if "CUDA" in why else (cfg.device if cfg.device != "auto" else "cpu")
        return policy.skipped(perf, cfg, where, why)
    budget = min(cfg.budget_s, ctx.remaining() - 1.0)
    if budget < MIN_BUDGET_S:
        return policy.skipped(perf, cfg, device, "not timed: the submission's time limit was used up")
    setting = perf.setting(device)
    harness = SandboxHarness(_sandbox(device, ctx, gpu_sandbox), ctx.files_for(spec.module), spec, device=device,
                             threads=cfg.threads if device == "cpu" else None,
                             timeout=max(min(max(ctx.config.call_timeout, 2 * budget), ctx.remaining()), 1.0),
                             memory_mb=ctx.config.memory_mb, deadline=ctx.deadline)
    seed = rounds.fresh_seed()
    try:
        with _TIMING_LOCK, threads.pinned(1):
            m = rounds.run(harness, rounds.seeded_inputs(perf.inputs, dict(setting.sizes), seed),
                           output_checker(spec, ctx.config), budget=budget, target_rse=cfg.target_rse, seed=seed,
                           sizes=dict(setting.sizes))
    except HarnessError as e:
        return policy.failed_to_run(perf, cfg, device, e.status, e.message)
    finally:
        harness.close()
    verdict = policy.judge(m, perf, setting, cfg)
    if device == "cpu" and cfg.device == "cuda":
        verdict = replace(verdict, message=f"{verdict.message} [no CUDA here: timed on the CPU with CPU sizes and "
                                           "limits, as [performance] cpu_fallback asks]")
    return verdict


def _sandbox(device: str, ctx: Context, gpu_sandbox: list[Sandbox]) -> Sandbox:
    """CUDA reserves tens of GiB of address space when it starts, which the sandbox's RLIMIT_AS
    forbids: GPU checks get their own sandbox without that limit (GPU memory is the GPU's)."""
    if device == "cpu":
        return ctx.sandbox
    if not gpu_sandbox:
        gpu_sandbox.append(Sandbox(replace(ctx.sandbox.limits, memory_bytes=0)))
    return gpu_sandbox[0]


def output_checker(spec: ExerciseSpec, config: Config) -> Any:
    """check(inputs, output) -> "" when the output matches the exercise's own reference, computed
    here in the parent with the exercise's tolerance (and its configured overrides)."""
    tol = tolerance(spec, config.exercise(spec.id))

    def check(inputs: tuple, output: Any) -> str:
        args, kwargs = inputs
        expected = spec.reference(*clone(tuple(args)), **clone(dict(kwargs)))
        if spec.judge is not None:
            verdict = spec.judge(Case("timed call", tuple(args), dict(kwargs)), output, expected, tol)
            return "" if verdict.ok else (verdict.message or "wrong output")
        if not spec.exact and _close(output, expected, tol):
            return ""
        bad = [c for c in compare_outputs(output, expected, spec.outputs, tol, spec.exact) if not c.ok]
        if not bad:
            return ""
        c = bad[0]
        return f"{c.name}: {c.problem}" if c.problem else f"{c.name}: max abs error {c.max_abs_error:.3g}"
    return check


def _close(actual: Any, expected: Any, tol) -> bool:
    """The fast path of the comparison: True only when every tensor is a plain tensor of the
    reference's shape and dtype and within tolerance (NaN only where the reference has NaN);
    anything else goes through grader.pipeline.compare for the full verdict and its message."""
    if isinstance(expected, torch.Tensor):
        if not (isinstance(actual, torch.Tensor) and type(actual) is torch.Tensor
                and claimed_type(actual) == "torch.Tensor"
                and actual.shape == expected.shape and actual.dtype == expected.dtype):
            return False
        if not expected.is_floating_point():
            return torch.equal(actual, expected)
        atol, rtol = tol(expected.dtype)
        return bool(torch.allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True))
    if isinstance(expected, (tuple, list)):
        return (isinstance(actual, (tuple, list)) and len(actual) == len(expected)
                and all(_close(a, e, tol) for a, e in zip(actual, expected)))
    return False
