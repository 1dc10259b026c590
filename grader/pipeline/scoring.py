"""Points from case results: partial credit by cases passed, and the exercise's headline."""
from __future__ import annotations

from collections import Counter

from grader.catalog.spec import ExerciseSpec
from grader.config import Config
from grader.pipeline.feedback import NOT_IMPLEMENTED
from grader.results import CaseResult, Status

# When cases disagree, the exercise shows the most telling status.
_PRIORITY = (Status.NOT_IMPLEMENTED, Status.CRASHED, Status.TIMEOUT, Status.ERROR, Status.FAILED, Status.NOT_RUN)


def max_points(spec: ExerciseSpec, config: Config) -> float:
    points = config.exercise(spec.id).points
    return float(spec.points if points is None else points)


def summarise(spec: ExerciseSpec, cases: list[CaseResult], max_pts: float, base: dict,
              import_error: str = "") -> tuple[Status, float, str, str]:
    """(status, points, headline, diagnosis) for an exercise."""
    total = len(cases)
    passed = sum(1 for c in cases if c.status is Status.PASSED)
    points = round(max_pts * passed / total, 2) if total else 0.0
    diagnoses = Counter(c.diagnosis for c in cases if c.diagnosis)
    diagnosis = diagnoses.most_common(1)[0][0] if diagnoses else ""
    if total and passed == total:
        return Status.PASSED, points, f"all {total} cases passed", ""
    statuses = {c.status for c in cases}
    status = next((s for s in _PRIORITY if s in statuses), Status.FAILED)
    where = f"{base['source_file']}" + (f", line {base['source_line']}" if base.get("source_line") else "")
    if status is Status.NOT_IMPLEMENTED and passed == 0:
        return status, 0.0, NOT_IMPLEMENTED.format(where=where), ""
    first = next(c for c in cases if c.status is not Status.PASSED)
    headline = f"{passed} of {total} cases passed; first failure: {first.name} — {first.message.splitlines()[0] if first.message else first.status.value}"
    if import_error:
        headline = f"{headline} (note: your module does not import as written: {import_error})"
    return status, points, headline, diagnosis
