"""What a hidden case may say: fixed words, chosen by the kind of failure.

    hidden(result, facts) -> the CaseResult a hidden case keeps

A hidden case keeps its name, status, kind of failure, diagnosis (a known mistake's name is the
grader's text) and timing. Its inputs, expected values, error figures, heatmaps and the
student's own text (an exception's message; its class name too, unless Python or the grader
defines it) are dropped: each could quote the hidden inputs. The message is the fixed words of
`result.failure` (grader.pipeline.feedback.WORDS) or of each comparison's `kind` (below), filled
in only with what the parent itself knows (`Facts`), never read back from a message.
"""
from __future__ import annotations

from grader.pipeline.feedback import Facts, comparisons_message, words
from grader.results import CaseResult, Comparison, ComparisonKind, FailureKind, Status

__all__ = ["Facts", "hidden", "hide"]

WITHHELD = "inputs withheld (hidden case)"

COMPARISON_WORDS = {
    ComparisonKind.TYPE: "wrong type of value",
    ComparisonKind.SUBCLASS: "returned a tensor subclass, not a plain torch.Tensor",
    ComparisonKind.REQUIRES_GRAD: "the returned tensor requires grad",
    ComparisonKind.COUNT: "wrong number of values",
    ComparisonKind.KEYS: "missing keys",
    ComparisonKind.SHAPE: "wrong shape",
    ComparisonKind.DTYPE: "wrong dtype",
    ComparisonKind.NONFINITE: "NaN or Inf values where the reference is finite",
}

# A result that carries no kind (made outside the engine) says no more than its status.
_STATUS_WORDS = {Status.PASSED: "", Status.FAILED: "wrong answer", Status.ERROR: "raised an exception",
                 Status.TIMEOUT: "took too long", Status.CRASHED: "the process running your code ended without "
                 "returning", Status.NOT_RUN: "not run", Status.NOT_IMPLEMENTED: "not implemented yet",
                 Status.FORBIDDEN: "used a forbidden API", Status.SKIPPED: "skipped"}


def hidden(result: CaseResult, facts: Facts) -> CaseResult:
    """The hidden case's record: `result` (as a public case would have it) without anything
    that could show its inputs or expected values."""
    comparisons = tuple(hide(c) for c in result.comparisons)
    return CaseResult(name=result.name, status=result.status, description=WITHHELD, hidden=True,
                      message=_message(result, comparisons, facts), comparisons=comparisons,
                      diagnosis=result.diagnosis, fits=result.fits, seconds=result.seconds, failure=result.failure)


def _message(result: CaseResult, comparisons: tuple[Comparison, ...], facts: Facts) -> str:
    if result.status is Status.PASSED:
        return ""
    if result.failure is None:
        return _STATUS_WORDS[result.status]
    if result.failure is FailureKind.WRONG_ANSWER and not all(c.ok for c in comparisons):
        return comparisons_message(comparisons)
    return words(result.failure, facts)


def hide(c: Comparison) -> Comparison:
    """A comparison without anything that reveals inputs or expected values: its name (the
    output's, from the spec), its verdict and its kind, in fixed words."""
    if c.ok:
        return Comparison(name=c.name, ok=True, kind=ComparisonKind.OK)
    said = COMPARISON_WORDS.get(c.kind)
    if said is None:        # VALUES or OTHER: how many differ is the parent's own figure
        said = ("differs from the reference" if c.mismatch_fraction is None
                else f"values differ from the reference ({c.mismatch_fraction:.0%} of them)")
    return Comparison(name=c.name, ok=False, problem=said, kind=c.kind)
