"""The instructor's CSVs for [deadline]: per-student extensions and recorded submission times.

    extensions_csv   student,due       a new due date for that student (ISO 8601; no offset: `timezone`)
                     student,hours     extra hours after the course's due date
                     student,days      extra days
    times_csv        student,submitted_at

A header row is required. Every problem is a ConfigError naming the file, the line and the fix;
nothing is skipped silently (a student listed twice is an error, not "the last one wins").
"""
from __future__ import annotations

import math
import os
from datetime import datetime, timedelta

from grader import instructor_csv
from grader.deadlines.config import DeadlinePolicy
from grader.deadlines.times import parse_time
from grader.errors import ConfigError

EXTENSION_COLUMNS = ("due", "hours", "days")


def resolve(root: str, path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(root, path)


def _read(path: str, key: str) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    header, rows = instructor_csv.read(path, f"[deadline] {key} = {path!r}", ConfigError,
                                       missing=" (paths are relative to autograde.toml)")
    if "student" not in header:
        raise ConfigError(f"{path}: the first line must be a header with a 'student' column (found: "
                          f"{', '.join(header) or 'nothing'})")
    return header, rows


def _student(path: str, line: int, row: dict[str, str], seen: dict[str, int]) -> str:
    student = row.get("student", "")
    if not student:
        raise ConfigError(f"{path}, line {line}: no student id")
    if student in seen:
        raise ConfigError(f"{path}, line {line}: {student} is listed twice (also line {seen[student]}); "
                          "keep one line per student")
    seen[student] = line
    return student


def extensions(policy: DeadlinePolicy, root: str) -> dict[str, datetime]:
    """student -> that student's due date (timezone-aware)."""
    if not policy.extensions_csv:
        return {}
    path = resolve(root, policy.extensions_csv)
    header, rows = _read(path, "extensions_csv")
    given = [c for c in EXTENSION_COLUMNS if c in header]
    if len(given) != 1:
        raise ConfigError(f"{path}: needs exactly one of the columns {', '.join(EXTENSION_COLUMNS)} beside "
                          f"'student' (found: {', '.join(header)}); e.g. student,hours / alice,48")
    column = given[0]
    out: dict[str, datetime] = {}
    seen: dict[str, int] = {}
    for line, row in rows:
        student = _student(path, line, row, seen)
        text = row.get(column, "")
        try:
            if column == "due":
                out[student] = parse_time(text, policy.tz)
                continue
            amount = float(text)
        except ValueError as e:
            raise ConfigError(f"{path}, line {line}: {column} {text!r}: "
                              f"{e if column == 'due' else 'not a number (e.g. 48)'}") from None
        if not math.isfinite(amount) or amount < 0:
            raise ConfigError(f"{path}, line {line}: {column} {text!r} must be a finite number, 0 or more")
        out[student] = policy.due + timedelta(**{column: amount})
    return out


def submission_times(policy: DeadlinePolicy, root: str) -> dict[str, datetime]:
    """student -> submitted_at (timezone-aware), from times_csv."""
    if not policy.times_csv:
        return {}
    path = resolve(root, policy.times_csv)
    header, rows = _read(path, "times_csv")
    if "submitted_at" not in header:
        raise ConfigError(f"{path}: needs a 'submitted_at' column beside 'student' (e.g. "
                          "alice,2026-03-02T11:58:00+01:00)")
    out: dict[str, datetime] = {}
    seen: dict[str, int] = {}
    for line, row in rows:
        student = _student(path, line, row, seen)
        try:
            out[student] = parse_time(row.get("submitted_at", ""), policy.tz)
        except ValueError as e:
            raise ConfigError(f"{path}, line {line}: submitted_at: {e}") from None
    return out
