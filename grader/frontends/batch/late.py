"""Late penalties in a batch: every row assessed against [deadline] on every run, nothing regraded.

    prepare(config)        before grading: the policy and its CSVs read and checked (a bad CSV
                           fails now, not after an hour of grading); None without a [deadline]
    settle(...)            after grading: each row's submission time read from its platform's
                           record, the verdict compared with the stored one; where it changed
                           (a new row, a new extension, a changed due date, [deadline] removed)
                           the gradebook's penalty columns and the student's feedback are rewritten

The raw result is never changed, and the penalty is no part of the settings hash: a due date
or an extension changes the penalty only.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from grader.config import Config
from grader.deadlines import tables, times
from grader.deadlines.config import DeadlinePolicy
from grader.deadlines.policy import Lateness, LateStatus, assess
from grader.deadlines.times import Recorded, Source
from grader.frontends.batch import outputs
from grader.frontends.batch.gradebook import Gradebook, Row

READERS = {Source.NBGRADER: times.from_nbgrader, Source.GRADESCOPE: times.from_gradescope, Source.GIT: times.from_git}


@dataclass(frozen=True)
class Deadline:
    policy: DeadlinePolicy
    extensions: dict[str, datetime]
    times: dict[str, datetime]

    def recorded(self, student: str, path: str) -> Recorded:
        if self.policy.source is Source.CSV:
            return times.from_table(self.times, student, self.policy.times_csv)
        return READERS[self.policy.source](path)

    def assess(self, row: Row) -> Lateness:
        return assess(self.policy, row.score, row.max_score, self.recorded(row.student, row.path),
                      self.extensions.get(row.student))


def prepare(config: Config) -> Deadline | None:
    policy = config.deadline
    if policy is None:
        return None
    return Deadline(policy, tables.extensions(policy, config.root), tables.submission_times(policy, config.root))


def settle(deadline: Deadline | None, book: Gradebook, rows: list[Row], out: str, visibility: str) -> list[Row]:
    """`rows` with their late verdicts, stored and in the feedback files (only changed ones rewritten)."""
    settled = []
    for row in rows:
        late = deadline.assess(row) if deadline is not None else None
        if late != row.late:
            book.set_lateness(row.student, late)
            outputs.write_student(out, row.student, row.result, visibility, late)
            row = replace(row, late=late, penalty=late.penalty if late else 0.0,
                          final_score=late.final_score if late else row.score)
        settled.append(row)
    return settled


def notes(deadline: Deadline | None, rows: list[Row]) -> list[str]:
    """What the class report and the batch summary say about deadlines: the rule, the students
    without a recorded time, extensions for students who are not in this batch."""
    if deadline is None:
        return []
    out = [f"deadline: {deadline.policy.rule()}"]
    missing = sorted(r.student for r in rows if r.late and r.late.status is LateStatus.NO_TIME)
    if missing:
        out.append(f"no submission time recorded for {len(missing)} student{'s' if len(missing) > 1 else ''} "
                   f"({', '.join(missing[:12])}{' …' if len(missing) > 12 else ''}): "
                   f"missing_time = {deadline.policy.missing_time.value} was applied; check them by hand")
    unknown = sorted(set(deadline.extensions) - {r.student for r in rows})
    if unknown:
        out.append(f"{deadline.policy.extensions_csv} lists students not in this batch: {', '.join(unknown[:12])}")
    return out
