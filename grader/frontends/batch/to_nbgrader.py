"""What the batch hands to nbgrader's gradebook (--nbgrader-db): raw scores, and when each student
handed in.

    hand_over(export, db, assignment, rows) -> the batch summary's line

`export` is grader.frontends.notebooks.nbgrader_export (another front-end's module; the batch checks
that it is installed before grading). The time is the submission's nbgrader timestamp.txt, whatever
[deadline] source says: it is the record `nbgrader autograde` writes into the gradebook's submission,
and what nbgrader counts lateness from. Students without a usable one are named in the line.
"""
from __future__ import annotations

from grader.deadlines import times
from grader.frontends.batch.executors import BatchError
from grader.frontends.batch.gradebook import Row

LISTED = 12


def hand_over(export, db: str, assignment: str, rows: list[Row]) -> str:
    recorded = {r.student: times.from_nbgrader(r.path) for r in rows}
    stamps = {student: rec.at for student, rec in recorded.items() if rec.at is not None}
    try:
        report = export.write_scores(db, assignment, {r.student: r.result for r in rows}, timestamps=stamps)
    except Exception as e:      # the grades are safe in the gradebook: say so, and how to retry
        raise BatchError(f"writing scores to the nbgrader gradebook {db} failed: {e}\n"
                         "Every result is in the batch's gradebook: fix this and run the same command again "
                         "(nothing is regraded).") from None
    written = getattr(report, "written", None)
    count = f" for {len(written)} students" if isinstance(written, dict) else ""
    line = f"nbgrader: scores written{count} to {db}, assignment {assignment}"
    missing = sorted(set(recorded) - set(stamps))
    if missing:
        line += (f"; no usable timestamp.txt for {', '.join(missing[:LISTED])}"
                 f"{' …' if len(missing) > LISTED else ''}: nbgrader keeps the time it had for them "
                 "(none for a new submission)")
    return line
