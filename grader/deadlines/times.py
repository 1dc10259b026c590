"""When a submission was handed in: the time its platform recorded, never a file's modification time.

A student controls the modification times of the files they hand in (`touch -d`, os.utime, a zip
built with any date), so those are never read. Each source reads what the platform wrote:

    nbgrader     <submission>/timestamp.txt, written by `nbgrader submit` in the exchange and kept by
                 `nbgrader collect`: "%Y-%m-%d %H:%M:%S.%f %Z" by default (nbgrader's
                 Exchange.timestamp_format, timezone "UTC"); nbgrader reads a time without a zone as UTC
    gradescope   submission_metadata.json, its `created_at` (ISO 8601 with offset,
                 https://gradescope-autograders.readthedocs.io/en/latest/submission_metadata/): beside
                 the autograder's `submission/` folder, as Gradescope lays it out; a copy inside that
                 folder is the student's upload (the red team's was dated before the deadline), never read
    git          the committer time of HEAD (`git log -1 --format=%cI`) of the submission's repository
    csv          the instructor's CSV of student,submitted_at (grader.deadlines.tables)

Each returns a Recorded: the time (timezone-aware) or None with the reason, and the source's name
as the feedback states it ("from nbgrader timestamp.txt").
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from enum import Enum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

GIT_TIMEOUT_S = 10.0
MAX_RECORD_BYTES = 1 << 20        # a timestamp or metadata file larger than this is not one


class Source(str, Enum):
    """Where the submission times come from ([deadline] source)."""

    NBGRADER = "nbgrader"
    GRADESCOPE = "gradescope"
    GIT = "git"
    CSV = "csv"


LABEL = {Source.NBGRADER: "nbgrader timestamp.txt", Source.GRADESCOPE: "Gradescope submission_metadata.json",
         Source.GIT: "git commit time of HEAD", Source.CSV: "the instructor's submission times"}


@dataclass(frozen=True)
class Recorded:
    at: datetime | None          # timezone-aware; None: no usable record
    source: str                  # what the feedback names ("nbgrader timestamp.txt")
    problem: str = ""            # why there is no time, when `at` is None


def zone(name: str) -> ZoneInfo:
    """The IANA zone `name`; ValueError with a suggestion when there is none by that name."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        import difflib
        import zoneinfo
        close = difflib.get_close_matches(name, sorted(zoneinfo.available_timezones()), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ValueError(f"unknown time zone {name!r}{hint}; write an IANA name such as Europe/Berlin, "
                         "America/New_York or UTC") from None


def parse_time(value: str | datetime, tz: ZoneInfo | None, naive_is_utc: bool = False) -> datetime:
    """An aware datetime from ISO 8601 text (or a TOML datetime). A time without an offset is in
    `tz` (or UTC when `naive_is_utc`); ValueError saying what to write when it cannot be placed."""
    if isinstance(value, datetime):
        at = value
    elif isinstance(value, str):
        text = value.strip()
        try:
            at = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
        except ValueError:
            raise ValueError(f"{value!r} is not an ISO 8601 date and time: write it as "
                             "2026-03-02T12:00:00+01:00") from None
    else:
        raise ValueError(f"{value!r} is not a date and time: write it as 2026-03-02T12:00:00+01:00")
    if at.tzinfo is not None:
        return _placed(at, value)
    if naive_is_utc:
        return _placed(at.replace(tzinfo=timezone.utc), value)
    if tz is None:
        raise ValueError(f"{value!s} has no UTC offset: write it with one (2026-03-02T12:00:00+01:00) or set "
                         "[deadline] timezone = \"Europe/Berlin\" (an IANA name) for times written without one")
    return _placed(at.replace(tzinfo=tz), value)


def _placed(at: datetime, value: object) -> datetime:
    """`at`, where every zone can show it: a time at the edge of what datetime holds (year 1 or 9999,
    with an offset) overflows when it is converted, and a student writes the time a git commit or a
    timestamp.txt says (a red team's 9999-12-31T23:59:59-05:00 stopped a whole batch with OverflowError).
    ValueError otherwise, which the readers turn into "no usable time"."""
    try:
        utc = at.astimezone(timezone.utc)
    except (OverflowError, OSError, ValueError):
        utc = None
    if utc is None or not 1 < utc.year < 9999:
        raise ValueError(f"{value!s} is out of range for a submission time (years 2 to 9998)")
    return at


_NBGRADER = re.compile(r"^(\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d(?:\.\d+)?)?)\s+(\S+)$")
_OFFSET = re.compile(r"^([+-])(\d\d):?(\d\d)$")


def parse_nbgrader(text: str) -> datetime:
    """nbgrader's timestamp: "2026-03-02 13:05:00.123456 UTC" (its default format), a numeric
    offset or an IANA name in place of UTC, or ISO 8601; no zone at all is UTC, as nbgrader's
    parse_utc reads it. ValueError for a zone that names no single offset (e.g. "CEST")."""
    text = text.strip()
    match = _NBGRADER.match(text)
    if not match:
        return parse_time(text, None, naive_is_utc=True)
    when, name = match.groups()
    offset = _OFFSET.match(name)
    if offset:
        sign, hours, minutes = offset.groups()
        delta = timedelta(hours=int(hours), minutes=int(minutes))
        tz = timezone(delta if sign == "+" else -delta)
    elif name.upper() in ("UTC", "GMT", "Z"):
        tz = timezone.utc
    else:
        try:
            tz = ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"the time zone {name!r} in timestamp.txt is not an IANA zone name or an offset "
                             "(nbgrader writes %Z: set its TransferApp.timezone to UTC or an IANA name)") from None
    return _placed(datetime.fromisoformat(when).replace(tzinfo=tz), text)


def _read_small(path: str) -> str:
    with open(path, "rb") as f:
        data = f.read(MAX_RECORD_BYTES + 1)
    if len(data) > MAX_RECORD_BYTES:
        raise ValueError(f"{os.path.basename(path)} is larger than {MAX_RECORD_BYTES} bytes")
    return data.decode("utf-8", "replace")


def from_nbgrader(path: str) -> Recorded:
    source = LABEL[Source.NBGRADER]
    stamp = os.path.join(path, "timestamp.txt")
    if not os.path.isdir(path) or not os.path.isfile(stamp) or os.path.islink(stamp):
        return Recorded(None, source, "no timestamp.txt in the submission folder (nbgrader collect keeps the one "
                                      "nbgrader submit wrote)")
    try:
        return Recorded(parse_nbgrader(_read_small(stamp)), source)
    except (OSError, ValueError) as e:
        return Recorded(None, source, f"timestamp.txt cannot be read: {e}")


def from_gradescope(path: str) -> Recorded:
    """Gradescope's record beside the `submission/` folder (/autograder/submission_metadata.json),
    never a copy inside it: what is in the submission folder is what the student uploaded."""
    source = LABEL[Source.GRADESCOPE]
    folder = os.path.normpath(path)
    found = os.path.join(os.path.dirname(folder), "submission_metadata.json")
    if os.path.basename(folder) != "submission" or not os.path.isfile(found) or os.path.islink(found):
        uploaded = os.path.isfile(os.path.join(folder, "submission_metadata.json"))
        return Recorded(None, source, "no submission_metadata.json beside the submission folder (Gradescope's "
                        "layout: <student>/submission_metadata.json beside <student>/submission/)"
                        + ("; the one inside the submission folder is the student's upload, never read" if uploaded
                           else ""))
    try:
        created = json.loads(_read_small(found)).get("created_at")
        if not created:
            return Recorded(None, source, "submission_metadata.json has no created_at")
        return Recorded(parse_time(str(created), None), source)
    except (OSError, ValueError, AttributeError) as e:
        return Recorded(None, source, f"submission_metadata.json cannot be read: {e}")


def from_git(path: str) -> Recorded:
    """The committer time of HEAD. The repository is the student's: no pager, no fsmonitor hook,
    no global or system configuration, a time limit; git's own checks decide what it reads."""
    source = LABEL[Source.GIT]
    if not os.path.isdir(path) or not os.path.exists(os.path.join(path, ".git")):
        return Recorded(None, source, "the submission is not a git repository (no .git)")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "HOME": os.devnull}
    command = ["git", "--no-pager", "-c", "core.fsmonitor=false", "-c", f"safe.directory={os.path.abspath(path)}",
               "-C", path, "log", "-1", "--format=%cI", "HEAD"]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, env=env,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return Recorded(None, source, f"git could not be run: {e}")
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no commit"])[-1]
        return Recorded(None, source, f"git log failed: {last}")
    try:
        return Recorded(parse_time(proc.stdout.strip(), None), source)
    except ValueError as e:
        return Recorded(None, source, f"git gave no commit time: {e}")


def from_table(times: dict[str, datetime], student: str, name: str) -> Recorded:
    source = name or LABEL[Source.CSV]
    if student not in times:
        return Recorded(None, source, f"{student} is not listed in {source}")
    return Recorded(times[student], source)
