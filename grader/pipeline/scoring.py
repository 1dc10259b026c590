"""Points from case results: partial credit by cases passed, and the exercise's headline."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from grader.catalog.spec import ExerciseSpec
from grader.config import Config
from grader.pipeline import feedback
from grader.pipeline.feedback import NOT_IMPLEMENTED
from grader.results import CaseResult, ExerciseResult, Status

# When cases disagree, the exercise shows the most telling status.
_PRIORITY = (Status.NOT_IMPLEMENTED, Status.CRASHED, Status.TIMEOUT, Status.ERROR, Status.FAILED, Status.NOT_RUN)


@dataclass(frozen=True)
class Summary:
    """An exercise's verdict from its cases."""

    status: Status
    points: float
    message: str          # the headline
    diagnosis: str = ""   # the most frequent known mistake over the failing cases


def max_points(spec: ExerciseSpec, config: Config) -> float:
    points = config.exercise(spec.id).points
    return float(spec.points if points is None else points)


def unscored(spec: ExerciseSpec, config: Config, status: Status, message: str) -> ExerciseResult:
    """An exercise no case of which ran: 0 of its points, and `message` says why."""
    return ExerciseResult(id=spec.id, status=status, points=0.0, max_points=max_points(spec, config), message=message)


def grader_fault(spec: ExerciseSpec, config: Config, error: Exception) -> ExerciseResult:
    """The grader raised `error` while grading `spec`: no grade, said to be the grader's fault.
    With hidden cases on, the exception's own text is withheld (it could show their inputs)."""
    message = feedback.grader_fault_message(error, with_text=config.secret_seed is None)
    return unscored(spec, config, Status.GRADER_FAULT, message)


def summarise(cases: Sequence[CaseResult], max_points: float, where: str, import_error: str = "") -> Summary:
    """`where` is the student's file and line ("attention.py, line 12"), said when nothing is
    implemented yet; `import_error` is why the module did not import as written, if it did not."""
    total = len(cases)
    passed = sum(1 for c in cases if c.status is Status.PASSED)
    points = round(max_points * passed / total, 2) if total else 0.0
    if total and passed == total:
        return Summary(Status.PASSED, points, f"all {total} cases passed")
    statuses = {c.status for c in cases}
    status = next((s for s in _PRIORITY if s in statuses), Status.FAILED)
    if status is Status.NOT_IMPLEMENTED and passed == 0:
        return Summary(status, 0.0, NOT_IMPLEMENTED.format(where=where))
    diagnoses = Counter(c.diagnosis for c in cases if c.diagnosis)
    diagnosis = diagnoses.most_common(1)[0][0] if diagnoses else ""
    first = next(c for c in cases if c.status is not Status.PASSED)
    said = feedback.shorten(first.message.splitlines()[0]) if first.message else first.status.value
    headline = f"{passed} of {total} cases passed; first failure: {first.name} — {said}"
    if import_error:
        headline = f"{headline} (note: your module does not import as written: {import_error})"
    return Summary(status, points, headline, diagnosis)
