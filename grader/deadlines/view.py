"""A result as reports show it once its late verdict is known: `score` is the final score.

The gradebook keeps the raw result; the feedback files a student reads render this view, so every
format (HTML, Markdown, Gradescope's results.json) shows the final score, and the templates show
the raw score, the penalty and where the submission time came from (`r.late`).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from grader.deadlines.policy import Lateness
from grader.results import SubmissionResult


@dataclass(frozen=True)
class PenalisedResult(SubmissionResult):
    late: Lateness | None = None

    @property
    def raw_score(self) -> float:
        return super().score

    @property
    def score(self) -> float:
        return self.late.final_score if self.late is not None else super().score


def penalised(result: SubmissionResult, late: Lateness | None) -> SubmissionResult:
    """`result` with `late` attached (unchanged when there is no verdict)."""
    if late is None:
        return result
    return PenalisedResult(**{f.name: getattr(result, f.name) for f in fields(SubmissionResult)}, late=late)
