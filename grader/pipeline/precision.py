"""Precision: whether an exercise's float64 cases missed only by what float32 arithmetic loses.

    annotate(cases) -> the cases, each failing float64 case diagnosed FLOAT32 when the whole
                       exercise's records say so (otherwise unchanged)

Code that converts to float32 somewhere (a `.float()`, a float32 constant tensor, `torch.tensor(...)`
without dtype; mixture-of-experts code computes its router's softmax in float32 on purpose) passes
every float32 case and misses the float64 ones by about 1e-7 of the values: the error figure alone
does not say why. A constant written with six or seven digits (`1.414214`, `3.14159`) misses them
the same way, and the diagnosis names both. The decision needs every case of the exercise, so the
engine makes it after the cases, from the records' statuses, kinds and error figures (never from a
message), and only when all of these hold, since a false diagnosis is worse than none:

- no case already names a known mistake (a named mistake is the better explanation: Adam's eps
  inside the square root also misses float64 cases by little, and is diagnosed by name);
- the exercise has public float32 cases, and every one of them passed;
- every case that did not pass is a wrong answer whose failing comparisons are all of kind VALUES
  (no NaN or Inf, no shape, dtype or type problem, no exception or timeout);
- every failing public case is a float64 case, and in each failing comparison the largest error,
  relative to the size of the values, lies in FLOAT32_BAND;
- hidden cases (drawn like the public ones, their figures redacted) fail no more often than public ones.

The size of the values is the largest |expected| among the comparison's listed mismatches: those
are failing elements, which for float32 rounding are most elements, so this is the values' typical
size; when only a few elements near zero fail, it is small, the scaled error large, and nothing is
said. The band is what float32 rounding produces, accumulation included: one rounding is 2^-24
(6e-8) of the value, a chain of a few hundred operations or a sum of a few thousand terms about
1e-5; its upper end is the float32 cases' own rtol (1e-4), which the student's float32 path just
met. A wrong formula misses by far more (and its float32 cases fail); a float64 result that misses
by less than 1e-8 of its values is a float64 matter (a tolerance near zero), not float32's.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

from grader.results import CaseResult, Comparison, ComparisonKind, FailureKind, Status

__all__ = ["FLOAT32", "FLOAT32_BAND", "annotate", "float32_accurate"]

FLOAT32 = ("float32 precision: your result is only float32-accurate: something converts to float32 (a `.float()`, "
           "a float32 constant tensor, `torch.tensor(...)` without dtype), or a constant is written with a few digits "
           "(1.414214 for the square root of 2: write math.sqrt(2), math.pi); keep every step in the inputs' dtype")
FLOAT32_BAND = (1e-8, 1e-4)          # largest error / size of the values, for a result that went through float32
_FLOATS = {"float16", "bfloat16", "float32", "float64"}


def annotate(cases: Sequence[CaseResult]) -> list[CaseResult]:
    """`cases` with FLOAT32 as the diagnosis of each failing public float64 case, when
    `float32_accurate(cases)`; otherwise `cases` unchanged."""
    if not float32_accurate(cases):
        return list(cases)
    return [dataclasses.replace(c, diagnosis=FLOAT32) if _failing(c) and not c.hidden else c for c in cases]


def float32_accurate(cases: Sequence[CaseResult]) -> bool:
    """Whether the records show a result that is right to float32's accuracy only (module docstring)."""
    if any(c.diagnosis for c in cases):
        return False
    public = [c for c in cases if not c.hidden]
    float32 = [c for c in public if _dtype(c) == "float32"]
    failing = [c for c in public if _failing(c)]
    failing_hidden = [c for c in cases if c.hidden and _failing(c)]
    return (bool(float32) and all(c.status is Status.PASSED for c in float32) and bool(failing)
            and all(_values_only(c) for c in (*failing, *failing_hidden))
            and all(_dtype(c) == "float64" and _in_band(c) for c in failing)
            and len(failing_hidden) <= len(failing))


def _failing(c: CaseResult) -> bool:
    return c.status is not Status.PASSED


def _dtype(c: CaseResult) -> str:
    """The one floating dtype of a case's tensor outputs ("" when none, or several)."""
    dtypes = {x.expected_dtype for x in c.comparisons} & _FLOATS
    return dtypes.pop() if len(dtypes) == 1 else ""


def _values_only(c: CaseResult) -> bool:
    """A wrong answer whose comparisons that said no all found values that differ."""
    wrong = [x for x in c.comparisons if not x.ok]
    return (c.status is Status.FAILED and c.failure is FailureKind.WRONG_ANSWER and bool(wrong)
            and all(x.kind is ComparisonKind.VALUES for x in wrong))


def _in_band(c: CaseResult) -> bool:
    low, high = FLOAT32_BAND
    scaled = [_scaled_error(x) for x in c.comparisons if not x.ok]
    return all(s is not None and low <= s <= high for s in scaled)


def _scaled_error(x: Comparison) -> float | None:
    """The comparison's largest error over the size of its values (None when the record lacks it)."""
    size = max((abs(m.expected) for m in x.mismatches), default=0.0)
    if x.max_abs_error is None or not size or x.expected_dtype != "float64":
        return None
    return x.max_abs_error / size
