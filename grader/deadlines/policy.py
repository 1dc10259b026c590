"""The verdict on one submission's time: how late, the penalty, and the score that remains.

Lateness is counted from the student's due date (the course's, or their extension's). Within the
grace period it is forgiven entirely; past it, every started unit (hour or day) since the due date
costs `penalty_percent`, up to `max_penalty_percent`; past the cut-off the score is 0. Without a
recorded time, [deadline] missing_time decides, and the row is flagged either way.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from grader.deadlines.config import DeadlinePolicy, MissingTime, PenaltyOf, show
from grader.deadlines.times import Recorded


class LateStatus(str, Enum):
    ON_TIME = "on time"
    GRACE = "within grace"
    LATE = "late"
    PAST_CUTOFF = "past the cut-off"
    NO_TIME = "no submission time"


@dataclass(frozen=True)
class Lateness:
    """What the gradebook keeps beside the raw score, and what reports show."""

    status: LateStatus
    raw_score: float
    penalty: float                 # points taken off (0 or more)
    final_score: float
    percent: float                 # the penalty as the policy states it, in percent
    note: str                      # one line for the feedback, in the second person where it speaks
    source: str                    # where the time came from ("nbgrader timestamp.txt")
    submitted_at: str = ""         # ISO 8601 with offset; "" when none was recorded
    due: str = ""                  # the student's due date, ISO 8601
    extended: bool = False
    late_seconds: float = 0.0
    problem: str = ""              # why no time was found

    @property
    def flagged(self) -> bool:
        """Worth the instructor's eye in the class report: late, or no time recorded."""
        return self.status in (LateStatus.LATE, LateStatus.PAST_CUTOFF, LateStatus.NO_TIME) or self.penalty > 0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["status"] = self.status.value
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Lateness":
        return cls(**{**d, "status": LateStatus(d["status"])})


def duration(seconds: float) -> str:
    """2 h 5 min, 1 day 3 h, 40 s."""
    seconds = int(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{days} day{'s' if days != 1 else ''}"] if days else []
    parts += [f"{hours} h"] if hours else []
    parts += [f"{minutes} min"] if minutes and not days else []
    return " ".join(parts) or f"{secs} s"


def _points(policy: DeadlinePolicy, raw: float, max_score: float, percent: float) -> float:
    base = max_score if policy.penalty_of is PenaltyOf.MAX_SCORE else raw
    return round(min(max(raw, 0.0), base * percent / 100.0), 4)


def assess(policy: DeadlinePolicy, raw: float, max_score: float, recorded: Recorded,
           due: datetime | None = None) -> Lateness:
    """The verdict for a submission scored `raw` of `max_score`, handed in at `recorded`; `due` is
    the student's extension (None: the course's due date)."""
    extended = due is not None and due != policy.due
    due = due or policy.due
    due_text = f"due {show(due, policy)}" + (" with your extension" if extended else "")
    common = dict(raw_score=raw, source=recorded.source, due=due.isoformat(), extended=extended)
    if recorded.at is None:
        return _missing(policy, raw, max_score, recorded, common)
    at = recorded.at
    late = max(0.0, (at - due).total_seconds())
    said = f"submitted {show(at, policy)} (from {recorded.source})"
    common.update(submitted_at=at.isoformat(), late_seconds=late)
    if late <= 0:
        status, percent, how = LateStatus.ON_TIME, 0.0, f"on time ({due_text})"
    elif late <= policy.grace_minutes * 60:
        status, percent = LateStatus.GRACE, 0.0
        how = (f"{duration(late)} after the due date, within the {policy.grace_minutes:g}-minute grace period: "
               "no penalty")
    elif policy.cutoff_hours is not None and late > policy.cutoff_hours * 3600:
        status, percent = LateStatus.PAST_CUTOFF, 100.0
        how = f"{duration(late)} late, past the cut-off ({policy.cutoff_hours:g} h after the due date): score 0"
    else:
        units = math.ceil(late / policy.penalty_per.seconds)
        status, percent = LateStatus.LATE, min(units * policy.penalty_percent, policy.max_penalty_percent)
        how = f"{duration(late)} late ({due_text}): " + (f"−{percent:g} %" if percent else "no penalty")
    penalty = round(raw, 4) if status is LateStatus.PAST_CUTOFF else _points(policy, raw, max_score, percent)
    return Lateness(status=status, penalty=penalty, final_score=round(raw - penalty, 4), percent=percent,
                    note=f"{said}, {how}", **common)


def _missing(policy: DeadlinePolicy, raw: float, max_score: float, recorded: Recorded, common) -> Lateness:
    choice = policy.missing_time
    if choice is MissingTime.ZERO:
        percent, penalty, then = 100.0, round(raw, 4), "score 0, as the course's policy says"
    elif choice is MissingTime.MAX_PENALTY:
        percent = policy.max_penalty_percent
        penalty, then = _points(policy, raw, max_score, percent), f"the largest penalty applies: −{percent:g} %"
    else:
        percent, penalty, then = 0.0, 0.0, "no late penalty applied; your instructor will check the time"
    return Lateness(status=LateStatus.NO_TIME, penalty=penalty, final_score=round(raw - penalty, 4),
                    percent=percent, problem=recorded.problem,
                    note=f"no submission time was recorded ({recorded.source}: {recorded.problem}): {then}",
                    **common)
