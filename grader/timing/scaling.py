"""`grader bench`: the student's function and the reference timed over a range of one size
(attention against T shows the quadratic term), as a table and a plot.

Each size is a full performance measurement (grader.timing.rounds) in the sandbox, outputs
checked; nothing here is graded.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

from grader import threads as torch_threads
from grader.timing import guards, policy, rounds, stats
from grader.timing.harness import HarnessError, SandboxHarness
from grader.timing.specs import PerfSpec
from grader.timing.stage import output_checker


@dataclass(frozen=True)
class Row:
    size: int
    student_ms: float | None = None
    reference_ms: float | None = None
    ratio: float | None = None
    spread: float | None = None
    calls: int = 0
    note: str = ""                 # why there is no figure, or what is wrong with it


def measure(perf: PerfSpec, spec, files: dict[str, str], sandbox, config, *, device: str, sizes: list[int],
            budget: float, threads: int | None, target_rse: float = 0.02) -> list[Row]:
    rows = []
    for value in sizes:
        dims = perf.sizes(device, **{perf.scale: value})
        harness = SandboxHarness(sandbox, files, spec, device=device, threads=threads,
                                 timeout=max(config.call_timeout, 4 * budget), memory_mb=config.memory_mb)
        seed = rounds.fresh_seed()
        try:
            with torch_threads.pinned(1):
                m = rounds.run(harness, rounds.seeded_inputs(perf.inputs, dims, seed), output_checker(spec, config),
                               budget=budget, target_rse=target_rse, seed=seed, sizes=dims)
        except HarnessError as e:
            rows.append(Row(value, note=f"{e.status.value}: {e.message}"))
            continue
        finally:
            harness.close()
        note = (m.wrong[0] if m.wrong else m.problems[0] if m.problems else
                "; ".join(msg for _, msg in guards.findings(m)))
        if not m.times("student") or not m.times("reference"):
            rows.append(Row(value, note=note or "no timed calls"))
            continue
        r = stats.ratio(m.times("student"), m.times("reference"))
        rows.append(Row(value, r.student * 1e3, r.reference * 1e3, r.value, r.spread, r.n, note))
    return rows


def table(rows: list[Row], perf: PerfSpec, device: str) -> str:
    head = f"{perf.exercise} on {device}: time against {perf.reference_source}, varying {perf.scale}"
    lines = [head, "", f"{perf.scale:>8}  {'yours (ms)':>11}  {'reference (ms)':>14}  {'ratio':>7}  {'±':>6}  calls"]
    for r in rows:
        if r.ratio is None:
            lines.append(f"{r.size:>8}  {'—':>11}  {'—':>14}  {'—':>7}  {'':>6}  {r.calls:>5}  {r.note}")
            continue
        spread = f"{100 * r.spread:>5.1f}%" if math.isfinite(r.spread) else f"{'—':>6}"
        lines.append(f"{r.size:>8}  {r.student_ms:>11.4g}  {r.reference_ms:>14.4g}  {r.ratio:>7.2f}  "
                     f"{spread}  {r.calls:>5}" + (f"  {r.note}" if r.note else ""))
    good = [r for r in rows if r.ratio is not None and not r.note]
    if len(good) >= 2:
        ks = [r.size for r in good]
        lines += ["", f"time grows like {perf.scale}^{stats.fit_exponent(ks, [r.student_ms for r in good]):.2f} "
                      f"(yours) and {perf.scale}^{stats.fit_exponent(ks, [r.reference_ms for r in good]):.2f} "
                      f"(reference) over this range"]
    setting = perf.setting(device)
    if setting:
        graded = setting.sizes.get(perf.scale)
        lines.append(f"graded check: {perf.scale}={graded}, limit {setting.threshold:g}x "
                     f"(other sizes: {', '.join(f'{k}={v}' for k, v in setting.sizes.items() if k != perf.scale)})")
    return "\n".join(lines) + "\n"


def plot(rows: list[Row], perf: PerfSpec, device: str, path: str) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    good = [r for r in rows if r.ratio is not None]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    xs = [r.size for r in good]
    for label, ys, style in (("yours", [r.student_ms for r in good], "o-"),
                             ("reference", [r.reference_ms for r in good], "s--")):
        k = stats.fit_exponent(xs, ys)
        left.plot(xs, ys, style, label=f"{label} (~{perf.scale}^{k:.2f})" if not math.isnan(k) else label)
    left.set(xscale="log", yscale="log", xlabel=perf.scale, ylabel="median ms per call",
             title=f"{perf.exercise} on {device}")
    left.legend()
    right.errorbar(xs, [r.ratio for r in good], yerr=[2 * r.ratio * r.spread if math.isfinite(r.spread) else 0.0
                                                      for r in good], fmt="o-", capsize=3)
    setting = perf.setting(device)
    if setting:
        right.axhline(setting.threshold, color="#c0392b", linestyle=":",
                      label=f"limit {setting.threshold:g}x at {perf.scale}={setting.sizes.get(perf.scale)}")
        right.legend()
    right.axhline(1.0, color="#888", linewidth=0.8)
    right.set(xscale="log", xlabel=perf.scale, ylabel="time ratio (yours / reference)",
              title="ratio, ±2 standard errors")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.minorticks_off()
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def unavailable(device: str, cuda: bool) -> str:
    """Why `device` cannot be benchmarked here ("" when it can)."""
    return policy.NEEDS_CUDA.replace("skipped: ", "") + ": this machine has none (torch.cuda.is_available() is " \
        "False)" if device == "cuda" and not cuda else ""


