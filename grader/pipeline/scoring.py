"""Points from case results: partial credit by cases passed, and the exercise's headline."""
from __future__ import annotations

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


def _explaining(cases: Sequence[CaseResult]) -> str:
    """The known mistake that explains the wrong answers (cases that failed by their values): the only
    one fitting any of them, fitting at least half; "" when there is none. The exercise's diagnosis
    is said above every failing case, as what the code does wrong: a mistake that fits one wrong
    answer of several is not that (reversed BPE merges look like frequency order on one case of eight
    in an audit), and stays on the case it fits, which every report shows. Half, not all: a known
    mistake's fingerprint need not reproduce it on every case (a large text, another dim), and two
    mistakes that fit one case alike (`fits`) leave it to both. The public cases decide where one
    failed: a hidden case's figures are withheld, and some diagnoses are not given to them
    (grader.pipeline.precision)."""
    wrong = [c for c in cases if c.status is Status.FAILED]
    wrong = [c for c in wrong if not c.hidden] or wrong
    named = {c.diagnosis for c in wrong if c.diagnosis}
    if len(named) != 1:
        return ""
    mistake = named.pop()
    if any(c.fits and mistake not in c.fits for c in wrong):
        return ""       # a wrong answer that other mistakes explain
    fitting = sum(1 for c in wrong if c.diagnosis == mistake or mistake in c.fits)
    return mistake if 2 * fitting >= len(wrong) else ""


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
    diagnosis = _explaining(cases)
    first = next(c for c in cases if c.status is not Status.PASSED)
    said = feedback.shorten(first.message.splitlines()[0]) if first.message else first.status.value
    headline = f"{passed} of {total} cases passed; first failure: {first.name} — {said}"
    if import_error:
        headline = f"{headline} (note: your module does not import as written: {import_error})"
    return Summary(status, points, headline, diagnosis)
