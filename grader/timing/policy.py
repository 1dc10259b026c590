"""Decisions: which checks run where, and what a Measurement means for the student.

    plan(spec, config, cuda_available, exercise_passed) -> (device, reason skipped)
    judge(measurement, spec, setting, config, ...)       -> PerfResult

The order of judgement: outputs first (a wrong output of a timed call fails whatever the
speed), then the problems the child saw (inputs modified, subclassed outputs, environment
changed, forbidden calls), then the guards (timing that cannot be trusted), then the figure: a
speed-up beyond `suspicious_speedup` is flagged rather than rewarded, and a ratio passes when it
is within the limit, or within two standard errors of it (the benefit of the doubt goes to the
student: noise must not fail honest code).
"""
from __future__ import annotations

from typing import Any

from grader.results import PerfResult, Status
from grader.timing import guards, stats
from grader.timing.config import PerfConfig
from grader.timing.records import Measurement
from grader.timing.specs import PerfSpec, Setting

NEEDS_CUDA = "skipped: needs CUDA"
MIN_CALLS = 5          # fewer timed calls than this is no figure at all


def name(device: str, threads: int | None) -> str:
    return f"speed on {device}" + (f" ({threads} thread{'s' if threads != 1 else ''})"
                                   if device == "cpu" and threads else "")


def plan(spec: PerfSpec, cfg: PerfConfig, cuda_available: bool, exercise_passed: bool) -> tuple[str | None, str]:
    """(device to time on, "") or (None, why the check is skipped). Never a silent pass."""
    if not exercise_passed:
        return None, "not timed: only a correct function is timed, and this one does not pass its cases yet"
    wanted = cfg.device if cfg.device != "auto" else ("cuda" if cuda_available else "cpu")
    if wanted == "cpu" and spec.gpu_only:
        wanted = "cuda"
    if wanted == "cuda" and not cuda_available:
        if cfg.cpu_fallback and spec.cpu is not None:
            return "cpu", ""
        return None, NEEDS_CUDA + (" (this machine has none; [performance] cpu_fallback = true times it on the CPU "
                                   "with CPU sizes and limits)" if spec.cpu is not None else " (GPU-only check)")
    if spec.setting(wanted) is None:
        return None, f"skipped: this check has no {wanted} sizes"
    return wanted, ""


def threshold(spec: PerfSpec, setting: Setting, cfg: PerfConfig) -> float:
    return cfg.thresholds.get(spec.exercise, setting.threshold)


def skipped(spec: PerfSpec, cfg: PerfConfig, device: str, message: str) -> PerfResult:
    setting = spec.setting(device) or spec.cpu or spec.cuda
    return PerfResult(name=name(device, cfg.threads), status=Status.SKIPPED, device=device, message=message,
                      threshold=threshold(spec, setting, cfg) if setting else None,
                      max_points=spec.points if cfg.graded else 0.0)


def failed_to_run(spec: PerfSpec, cfg: PerfConfig, device: str, status: Status, message: str) -> PerfResult:
    setting = spec.setting(device)
    return PerfResult(name=name(device, cfg.threads), status=status, device=device, message=message,
                      threshold=threshold(spec, setting, cfg) if setting else None,
                      max_points=spec.points if cfg.graded else 0.0)


def judge(m: Measurement, spec: PerfSpec, setting: Setting, cfg: PerfConfig) -> PerfResult:
    limit = threshold(spec, setting, cfg)
    max_points = spec.points if cfg.graded else 0.0
    details = _details(m)
    r = stats.ratio(m.times("student"), m.times("reference")) if m.timed and m.times("reference") else None
    if r is not None:
        details.update(student_ms=round(r.student * 1e3, 4), reference_ms=round(r.reference * 1e3, 4))

    def result(status: Status, message: str, flag: str = "") -> PerfResult:
        trusted = r is not None and not flag
        if flag:        # an untrusted figure stays in the details, off the leaderboard
            details.update(flag=flag, claimed_ratio=None if r is None else round(r.value, 4))
        ok = status is Status.PASSED
        return PerfResult(name=name(m.device, m.threads), status=status, device=m.device, message=message,
                          ratio=r.value if trusted else None, spread=r.spread if trusted else None,
                          threshold=limit, points=max_points if ok else 0.0, max_points=max_points, details=details)

    if m.wrong:
        return result(Status.FAILED, f"a timed call returned a wrong output ({m.wrong[0]}): every call gets fresh "
                      "inputs and must compute its answer from them; caching, replaying or skipping work cannot pass",
                      "wrong output")
    if m.problems:
        return result(Status.FAILED, f"while being timed, your function {m.problems[0]}"
                      + (f" (and {len(m.problems) - 1} more problem(s))" if len(m.problems) > 1 else ""), "problem")
    objections = guards.findings(m)
    if objections:
        return result(Status.FAILED, f"timing not trusted, flagged for review: {objections[0][1]}", objections[0][0])
    if r is None or r.n < MIN_CALLS:
        return result(Status.ERROR, f"too few timed calls ({m.timed}) within the budget of {cfg.budget_s:g} s to "
                      "give a figure: each call is very slow, or the machine is very busy", "no figure")
    said = (f"against {spec.reference_source}: median {r.student * 1e3:.3g} ms vs {r.reference * 1e3:.3g} ms "
            f"(±{100 * r.spread:.1f}%) over {r.n} calls on fresh inputs, {m.checked} outputs checked; {_where(m)}")
    if r.value < 1 / cfg.suspicious_speedup:
        return result(Status.FAILED, f"suspicious: {1 / r.value:.0f}x faster than the reference — flagged for "
                      f"review rather than rewarded ({said})", "suspicious")
    if r.value <= limit:
        return result(Status.PASSED, said)
    if r.lower() <= limit:
        return result(Status.PASSED, f"{said}; above the limit, but within the measurement's noise")
    hint = f". {spec.hint}" if spec.hint else ""
    return result(Status.FAILED, f"{said}. Slower than the limit of {limit:g}x{hint}")


def _where(m: Measurement) -> str:
    if m.device == "cpu":
        return f"cpu, {m.threads or 'default'} thread{'s' if m.threads != 1 else ''} for both sides"
    return f"{m.device}, CUDA events after synchronisation and an L2 flush"


def _details(m: Measurement) -> dict[str, Any]:
    return {**guards.figures(m), "timed_calls": m.timed, "checked_outputs": m.checked, "rounds": m.rounds,
            "threads": m.threads, "timer": m.timer, "stopped": m.stopped, "seconds": round(m.seconds, 3),
            "seed": m.seed, "sizes": dict(m.sizes),
            "baseline_ms": round(stats.median(m.times("baseline")) * 1e3, 4) if m.times("baseline") else None}
