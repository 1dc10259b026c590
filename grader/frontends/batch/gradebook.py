"""The gradebook: one SQLite file in the output folder, the batch's memory between runs.

Written by the batch's parent process only (workers send results back; they never open it),
one transaction per result: a submission's row, its exercise rows and an audit event commit
together or not at all, so a batch killed at any moment (SIGKILL included) leaves every
result either whole or absent. WAL journal, synchronous=FULL.

A student's row is current when its content hash (what was handed in) and settings hash
(exercises selected, limits, points, secret seed, grader version) match this run's: then the
submission is skipped unless --force. A row whose state is `grader_error` is never current: the
grader failed on the submission (a worker died) or on one of its exercises (a GRADER_FAULT
status), so its zeros are no grade, and the next run grades it again.

Tables:
  runs         one row per `grader batch` invocation: its settings, and the students it found (the
               rows of its grades.csv); finished_at stays NULL for a run killed before its end
  submissions  one row per student: hashes, the raw score, the late penalty and the final score
               (grader.deadlines; penalty 0 and final = raw without a [deadline]), state, the whole
               result as JSON
  exercises    one row per (student, exercise): status, points, diagnosis and its fingerprint
  performance  one row per (student, exercise, timed check): ratio and threshold
  events       append-only: one row per result recorded (which run graded whom)

Schema versions: 1 had no penalty columns; opening a version-1 gradebook adds them (penalty 0,
final score = raw score, lateness not yet assessed), in the same transaction that bumps the version.
2 did not record which submissions a run found (runs.students): grades.csv holds those students'
rows only, and `grader export` sends the same rows; a run recorded before has NULL there.
"""
from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass
from typing import Iterator

from grader.deadlines.policy import Lateness
from grader.results import SubmissionResult, from_dict, to_dict

SCHEMA_VERSION = 3
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    settings_hash TEXT NOT NULL,
    exercises TEXT NOT NULL,
    jobs INTEGER NOT NULL,
    grader_version TEXT NOT NULL,
    students TEXT                    -- JSON list of the student ids it found (NULL before schema 3)
);
CREATE TABLE IF NOT EXISTS submissions (
    student TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    settings_hash TEXT NOT NULL,
    path TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('graded', 'unreadable', 'grader_error')),
    score REAL NOT NULL,
    max_score REAL NOT NULL,
    message TEXT NOT NULL,
    seconds REAL NOT NULL,
    result TEXT NOT NULL,            -- to_dict(SubmissionResult) as JSON (Python's dialect: inf is Infinity)
    run_id INTEGER NOT NULL REFERENCES runs(id),
    graded_at TEXT NOT NULL,
    penalty REAL NOT NULL DEFAULT 0,  -- late penalty in points (grader.deadlines)
    final_score REAL,                -- score - penalty (the raw score until a penalty is assessed)
    lateness TEXT                    -- Lateness as JSON (when, from which record), NULL without a [deadline]
);
CREATE TABLE IF NOT EXISTS exercises (
    student TEXT NOT NULL REFERENCES submissions(student) ON DELETE CASCADE,
    exercise TEXT NOT NULL,
    status TEXT NOT NULL,
    points REAL NOT NULL,
    max_points REAL NOT NULL,
    cases_passed INTEGER NOT NULL,
    cases_total INTEGER NOT NULL,
    diagnosis TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    PRIMARY KEY (student, exercise)
);
CREATE TABLE IF NOT EXISTS performance (
    student TEXT NOT NULL REFERENCES submissions(student) ON DELETE CASCADE,
    exercise TEXT NOT NULL,
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    ratio REAL,
    threshold REAL,
    device TEXT NOT NULL,
    PRIMARY KEY (student, exercise, name)
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    student TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    state TEXT NOT NULL,
    at TEXT NOT NULL
);
"""


# version -> the statements that bring a gradebook of that version to the next one
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: ("ALTER TABLE submissions ADD COLUMN penalty REAL NOT NULL DEFAULT 0",
        "ALTER TABLE submissions ADD COLUMN final_score REAL",
        "ALTER TABLE submissions ADD COLUMN lateness TEXT",
        "UPDATE submissions SET final_score = score"),
    2: ("ALTER TABLE runs ADD COLUMN students TEXT",),
}
COLUMNS = ("student", "content_hash", "settings_hash", "path", "state", "score", "max_score", "message", "seconds",
           "result", "run_id", "graded_at", "penalty", "final_score", "lateness")


@dataclass(frozen=True)
class Row:
    """A student's current row, as the batch's later stages read it."""

    student: str
    content_hash: str
    settings_hash: str
    path: str
    state: str
    score: float
    max_score: float
    message: str
    seconds: float
    result: SubmissionResult
    penalty: float = 0.0                 # late penalty, points
    final_score: float | None = None     # None: as `score` (no penalty assessed)
    late: Lateness | None = None         # None: no [deadline]

    @property
    def final(self) -> float:
        """The score after any late penalty: what grades.csv, the LMS and the class report use."""
        return self.score if self.final_score is None else self.final_score


@dataclass(frozen=True)
class Run:
    """One `grader batch` invocation, as the gradebook recorded it."""

    id: int
    started_at: str
    finished: bool                       # False: killed (or still running) before grades.csv was written
    settings_hash: str
    students: tuple[str, ...] | None     # the students it found; None: not recorded (before schema 3)


def fingerprint(diagnosis: str) -> str:
    """The name of a known mistake: the diagnosis up to its ':' ("missing 1/sqrt(d_k)")."""
    return diagnosis.split(":", 1)[0].strip()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


class Gradebook:
    def __init__(self, path: str) -> None:
        self.path = path
        # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE ... COMMIT) below.
        self.db = sqlite3.connect(path, isolation_level=None, timeout=30.0)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("PRAGMA foreign_keys=ON")
        with self.transaction():
            for statement in _statements(SCHEMA):     # executescript would COMMIT our transaction
                self.db.execute(statement)
            found = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if found is None:
                self.db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(found[0]) in MIGRATIONS:
                for version in range(int(found[0]), SCHEMA_VERSION):
                    for statement in MIGRATIONS[version]:
                        self.db.execute(statement)
                self.db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))
            elif int(found[0]) != SCHEMA_VERSION:
                raise RuntimeError(f"{path}: gradebook schema version {found[0]}, this grader writes "
                                   f"{SCHEMA_VERSION}; use a new --out folder")

    def close(self) -> None:
        self.db.close()

    def transaction(self):
        return _Transaction(self.db)

    # -- runs --------------------------------------------------------------------------------
    def begin_run(self, settings_hash: str, exercises: list[str], jobs: int, version: str,
                  students: list[str] | None = None) -> int:
        """A new run; `students`: those it found, whose rows its grades.csv holds."""
        with self.transaction():
            cur = self.db.execute("INSERT INTO runs (started_at, settings_hash, exercises, jobs, grader_version, "
                                  "students) VALUES (?, ?, ?, ?, ?, ?)",
                                  (_now(), settings_hash, json.dumps(exercises), jobs, version,
                                   None if students is None else json.dumps(students)))
        return int(cur.lastrowid)

    def end_run(self, run_id: int) -> None:
        with self.transaction():
            self.db.execute("UPDATE runs SET finished_at=? WHERE id=?", (_now(), run_id))

    def latest_run(self) -> Run | None:
        """The run begun last (None: no run yet)."""
        r = self.db.execute("SELECT id, started_at, finished_at, settings_hash, students FROM runs "
                            "ORDER BY id DESC LIMIT 1").fetchone()
        return None if r is None else Run(r[0], r[1], r[2] is not None, r[3],
                                          None if r[4] is None else tuple(json.loads(r[4])))

    # -- results -----------------------------------------------------------------------------
    def current(self) -> dict[str, tuple[str, str, str]]:
        """student -> (content_hash, settings_hash, state) of every recorded row."""
        return {s: (c, h, st) for s, c, h, st in
                self.db.execute("SELECT student, content_hash, settings_hash, state FROM submissions")}

    def record(self, run_id: int, student: str, path: str, content_hash: str, settings_hash: str,
               state: str, result: SubmissionResult, message: str = "", encoded: str | None = None) -> None:
        """Store one student's result: all of it in one transaction, replacing any older row.
        `encoded`: the result's JSON as a worker sent it (keys sorted, grader.frontends.batch.executors),
        stored as it is; without it, the result is encoded here."""
        data = json.dumps(to_dict(result), sort_keys=True) if encoded is None else encoded
        with self.transaction():
            self.db.execute("DELETE FROM submissions WHERE student=?", (student,))
            self.db.execute(f"INSERT INTO submissions ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                            (student, content_hash, settings_hash, _stored(path), state, result.score, result.max_score,
                             message, result.seconds, data, run_id, _now(), 0.0, result.score, None))
            self.db.executemany("INSERT INTO exercises VALUES (?,?,?,?,?,?,?,?,?)", [
                (student, e.id, e.status.value, e.points, e.max_points, e.cases_passed, len(e.cases),
                 e.diagnosis, fingerprint(e.diagnosis)) for e in result.exercises])
            self.db.executemany("INSERT INTO performance VALUES (?,?,?,?,?,?,?)", [
                (student, e.id, p.name, p.status.value, p.ratio, p.threshold, p.device)
                for e in result.exercises for p in e.performance])
            self.db.execute("INSERT INTO events (run_id, student, content_hash, state, at) VALUES (?,?,?,?,?)",
                            (run_id, student, content_hash, state, _now()))

    def set_lateness(self, student: str, late: Lateness | None) -> None:
        """Record the late verdict on a student's row: the penalty and final score beside the raw
        score (None: no deadline, so no penalty). The raw result is never touched."""
        with self.transaction():
            if late is None:
                self.db.execute("UPDATE submissions SET penalty=0, final_score=score, lateness=NULL WHERE student=?",
                                (student,))
            else:
                self.db.execute("UPDATE submissions SET penalty=?, final_score=?, lateness=? WHERE student=?",
                                (late.penalty, late.final_score, json.dumps(late.to_dict(), sort_keys=True),
                                 student))

    def rows(self, students: list[str] | None = None) -> Iterator[Row]:
        """Current rows (of `students` only, when given), sorted by student id."""
        wanted = None if students is None else set(students)
        for r in self.db.execute("SELECT student, content_hash, settings_hash, path, state, score, max_score, "
                                 "message, seconds, result, penalty, final_score, lateness FROM submissions "
                                 "ORDER BY student"):
            if wanted is None or r[0] in wanted:
                late = Lateness.from_dict(json.loads(r[12])) if r[12] else None
                yield Row(*r[:3], _read_path(r[3]), *r[4:9], result=from_dict(json.loads(r[9])), penalty=r[10],
                          final_score=r[11], late=late)


def _stored(path: str) -> str | bytes:
    """A path as SQLite holds it: as text, or as its bytes where they are not UTF-8 (a folder named in
    another encoding: sqlite3 refuses the surrogates that stand for them), read back as the same path."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return os.fsencode(path)


def _read_path(value: str | bytes) -> str:
    return os.fsdecode(value) if isinstance(value, bytes) else value


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any exception."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind, *_):
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")
        return False


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]
