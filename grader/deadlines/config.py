"""The [deadline] table of autograde.toml: one typed object, validated with errors that say the fix.

grader.config reads the table with parse_section (only when it is present). Without it nothing is
late and no score changes.

    [deadline]
    due = 2026-03-02T12:00:00+01:00      # a TOML date-time with offset, or a string; a local time needs `timezone`
    timezone = "Europe/Berlin"           # IANA zone: times written without an offset, and how times are shown
    grace_minutes = 15                   # still on time within this many minutes after the due date
    penalty_per = "day"                  # hour or day: every started unit after the due date counts
    penalty_percent = 10                 # per started unit
    max_penalty_percent = 50             # the cap
    cutoff_hours = 72                    # later than this after the due date: score 0 (absent: no cut-off)
    penalty_of = "score"                 # score (points earned) or max_score (points possible, as Canvas does)
    source = "nbgrader"                  # nbgrader, gradescope, git or csv (see grader.deadlines.times)
    times_csv = "submission_times.csv"   # with source = "csv": student,submitted_at
    extensions_csv = "extensions.csv"    # student,due or student,hours or student,days
    missing_time = "no_penalty"          # no recorded time: no_penalty (flagged), max_penalty or zero

The CSVs are paths relative to autograde.toml, read by the batch (grader.deadlines.tables), not
here: a student's copy of the course repository has the configuration but not the class's files.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import date, datetime
from enum import Enum
from typing import Any
from zoneinfo import ZoneInfo

from grader.config import range_problem
from grader.deadlines.times import Source, parse_time, zone
from grader.errors import ConfigError

SECTION = "deadline"
NUMBER = (int, float)


class Per(str, Enum):
    HOUR = "hour"
    DAY = "day"

    @property
    def seconds(self) -> int:
        return 3600 if self is Per.HOUR else 86400


class PenaltyOf(str, Enum):
    SCORE = "score"              # a share of the points the student earned
    MAX_SCORE = "max_score"      # a share of the points possible (Canvas's late policy), never below 0


class MissingTime(str, Enum):
    """What a submission gets when no time was recorded for it."""

    NO_PENALTY = "no_penalty"    # the default: no penalty, flagged in the class report
    MAX_PENALTY = "max_penalty"  # the cap (max_penalty_percent)
    ZERO = "zero"


# key -> (type, default, description); a default of None: required, or (cutoff_hours) absent means none
KEYS: dict[str, tuple[Any, Any, str]] = {
    "due": ((str, datetime), None, "the due date and time, ISO 8601 with its UTC offset (2026-03-02T12:00:00+01:00) "
                                   "or a local time with `timezone`"),
    "timezone": (str, "", "IANA time zone (Europe/Berlin) for times written without an offset, and for showing times"),
    "grace_minutes": (NUMBER, 0, "minutes after the due date that still count as on time"),
    "penalty_per": (str, "day", "the penalty's unit, hour or day: every started unit after the due date counts"),
    "penalty_percent": (NUMBER, 0, "penalty per started unit, in percent"),
    "max_penalty_percent": (NUMBER, 100, "the largest penalty, in percent"),
    "cutoff_hours": (NUMBER, None, "hours after the due date past which the score is 0 (absent: no cut-off)"),
    "penalty_of": (str, "score", "what the percentages are of: score (points earned) or max_score (points possible)"),
    "source": (str, None, "where submission times come from: nbgrader, gradescope, git or csv"),
    "times_csv": (str, "", "with source = \"csv\": a CSV of student,submitted_at (relative to autograde.toml)"),
    "extensions_csv": (str, "", "a CSV of per-student extensions: student,due or student,hours or student,days"),
    "missing_time": (str, "no_penalty", "a submission without a recorded time: no_penalty (flagged in the report), "
                                        "max_penalty or zero"),
}
CHOICES = {"penalty_per": Per, "penalty_of": PenaltyOf, "source": Source, "missing_time": MissingTime}
RANGES = {"grace_minutes": (lambda v: v >= 0, "0 or more"),
          "penalty_percent": (lambda v: 0 <= v <= 100, "between 0 and 100"),
          "max_penalty_percent": (lambda v: 0 <= v <= 100, "between 0 and 100"),
          "cutoff_hours": (lambda v: v > 0, "more than 0")}


@dataclass(frozen=True)
class DeadlinePolicy:
    due: datetime                          # timezone-aware
    source: Source
    timezone: str = ""
    grace_minutes: float = 0.0
    penalty_per: Per = Per.DAY
    penalty_percent: float = 0.0
    max_penalty_percent: float = 100.0
    cutoff_hours: float | None = None
    penalty_of: PenaltyOf = PenaltyOf.SCORE
    times_csv: str = ""
    extensions_csv: str = ""
    missing_time: MissingTime = MissingTime.NO_PENALTY
    config: str = ""                       # the file it was read from

    @property
    def tz(self) -> ZoneInfo | None:
        return ZoneInfo(self.timezone) if self.timezone else None

    def rule(self) -> str:
        """The policy in one sentence, for the class report's header."""
        parts = [f"due {show(self.due, self)}"]
        if self.grace_minutes:
            parts.append(f"{self.grace_minutes:g} min grace")
        if self.penalty_percent:
            cap = f", at most {self.max_penalty_percent:g} %" if self.max_penalty_percent < 100 else ""
            of = " of the points possible" if self.penalty_of is PenaltyOf.MAX_SCORE else ""
            parts.append(f"−{self.penalty_percent:g} %{of} per started {self.penalty_per.value}{cap}")
        if self.cutoff_hours:
            parts.append(f"0 after {self.cutoff_hours:g} h")
        return ", ".join(parts) + f"; times from {self.source.value}"


def show(at: datetime, policy: DeadlinePolicy) -> str:
    """A time as the feedback shows it, in the policy's zone: "2026-03-02 14:05 +01:00"."""
    local = at.astimezone(policy.tz or policy.due.tzinfo)
    offset = local.strftime("%z")
    return local.strftime("%Y-%m-%d %H:%M ") + (f"{offset[:3]}:{offset[3:]}" if offset else "UTC")


def _suggest(word: str, options) -> str:
    """ (did you mean 'x'?) for a close spelling, or a key that begins with the word (grace -> grace_minutes)."""
    options = list(options)
    close = difflib.get_close_matches(word, options, n=1) or [o for o in options if o.startswith(word)][:1]
    return f" (did you mean '{close[0]}'?)" if close else ""


def _fail(src: str, key: str, message: str) -> ConfigError:
    return ConfigError(f"{src}: [{SECTION}] {key}: {message} — {KEYS[key][2]}")


def _value(key: str, value: Any, src: str) -> Any:
    typ, _, _ = KEYS[key]
    types = typ if isinstance(typ, tuple) else (typ,)
    if isinstance(value, bool) or not isinstance(value, types):
        wanted = "a number" if typ is NUMBER else "text in quotes" if typ is str else "a date and time"
        if isinstance(value, date) and not isinstance(value, datetime):
            raise _fail(src, key, f"{value} has no time of day: write 2026-03-02T23:59:00+01:00")
        raise _fail(src, key, f"expected {wanted}, got {value!r}")
    if key in CHOICES:
        kinds = [k.value for k in CHOICES[key]]
        if value not in kinds:
            raise _fail(src, key, f"{value!r} is not one of {', '.join(kinds)}{_suggest(value, kinds)}")
        return CHOICES[key](value)
    if key in RANGES:
        problem = range_problem(value, RANGES[key])
        if problem:
            raise _fail(src, key, f"{value!r} {problem}")
        return float(value)
    return value


def parse_section(body: Any, src: str) -> DeadlinePolicy:
    """Validate [deadline] from `src`; every error names the file, the key and what to write."""
    if not isinstance(body, dict):
        raise ConfigError(f"{src}: [{SECTION}] must be a table (due = ..., source = ...)")
    values: dict[str, Any] = {}
    for key, value in body.items():
        if key not in KEYS:
            raise ConfigError(f"{src}: unknown key '{key}' in [{SECTION}]{_suggest(key, KEYS)}; "
                              f"known keys: {', '.join(KEYS)}")
        values[key] = _value(key, value, src)
    for key in ("due", "source"):
        if key not in values:
            example = "due = 2026-03-02T12:00:00+01:00" if key == "due" else 'source = "nbgrader"'
            raise ConfigError(f"{src}: [{SECTION}] needs {key} ({example}) — {KEYS[key][2]}")
    if "timezone" in values and not values["timezone"].strip():
        raise _fail(src, "timezone", f"{values['timezone']!r} is empty: write an IANA name such as Europe/Berlin, "
                    "or remove the line (then every time needs its UTC offset)")
    if values.get("timezone"):
        try:
            zone(values["timezone"])
        except ValueError as e:
            raise _fail(src, "timezone", str(e)) from None
    try:
        tz = ZoneInfo(values["timezone"]) if values.get("timezone") else None
        values["due"] = parse_time(values["due"], tz)
    except ValueError as e:
        raise _fail(src, "due", str(e)) from None
    _consistent(values, src)
    return DeadlinePolicy(**values, config=src)


def _consistent(values: dict[str, Any], src: str) -> None:
    """Keys that only make sense together."""
    if values["source"] is Source.CSV and not values.get("times_csv"):
        raise _fail(src, "source", 'source = "csv" needs times_csv = "submission_times.csv" (student,submitted_at)')
    if values.get("times_csv") and values["source"] is not Source.CSV:
        raise _fail(src, "times_csv", f"is read only with source = \"csv\" (source is \"{values['source'].value}\")")
    cutoff, grace = values.get("cutoff_hours"), values.get("grace_minutes", 0.0)
    if cutoff is not None and cutoff * 60 <= grace:
        raise _fail(src, "cutoff_hours", f"{cutoff:g} h ends within the {grace:g}-minute grace period: make it longer")
