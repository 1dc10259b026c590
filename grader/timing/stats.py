"""Statistics of repeated timings, apart from how they were measured.

The figure is the ratio of medians (student / reference); its spread is the relative standard
error of that ratio, from the relative standard errors of both medians. The standard error of
a median is estimated from the median absolute deviation: SE ~ 1.2533 * sigma / sqrt(n), with
sigma ~ 1.4826 * MAD (both exact for normal samples; timing samples are skewed, and the MAD keeps
a few preempted calls from inflating the spread).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence


def median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    if n == 0:
        return math.nan
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def mad(xs: Sequence[float]) -> float:
    m = median(xs)
    return median([abs(x - m) for x in xs])


def rse_of_median(xs: Sequence[float]) -> float:
    """Relative standard error of the median (inf with fewer than 3 samples)."""
    n = len(xs)
    m = median(xs)
    if n < 3 or not m > 0:
        return math.inf
    return 1.2533 * 1.4826 * mad(xs) / math.sqrt(n) / m


@dataclass(frozen=True)
class Ratio:
    value: float          # median(student) / median(reference)
    spread: float         # relative standard error of `value`
    student: float        # median seconds per call
    reference: float
    n: int                # timed calls per side (the smaller count)

    def upper(self, k: float = 2.0) -> float:
        return self.value * (1 + k * self.spread)

    def lower(self, k: float = 2.0) -> float:
        return self.value / (1 + k * self.spread)


def ratio(student: Sequence[float], reference: Sequence[float]) -> Ratio:
    s, r = median(student), median(reference)
    value = s / r if r > 0 else math.inf
    spread = math.hypot(rse_of_median(student), rse_of_median(reference))
    return Ratio(value, spread, s, r, min(len(student), len(reference)))


def converged(student: Sequence[float], reference: Sequence[float], target: float, min_calls: int) -> bool:
    """Both medians known to `target` relative standard error, from at least `min_calls` each."""
    return (min(len(student), len(reference)) >= min_calls and rse_of_median(student) <= target
            and rse_of_median(reference) <= target)


def fit_exponent(sizes: Sequence[float], seconds: Sequence[float]) -> float:
    """Least-squares slope of log(time) against log(size): 2 means time grows like size^2."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(sizes, seconds) if x > 0 and y > 0]
    if len(pts) < 2:
        return math.nan
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx if sxx else math.nan
