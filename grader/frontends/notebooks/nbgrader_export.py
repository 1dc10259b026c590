"""Write the grader's scores into an nbgrader gradebook, through nbgrader's own API.

    write_scores("course/gradebook.db", "ps1", {"alice": result, ...}) -> WriteReport

The gradebook must already know the assignment (`nbgrader generate_assignment` records its
notebooks and grade cells). For each student: the student and the submission are created if
missing (nbgrader.api.Gradebook.update_or_create_student / add_submission), then each exercise's
points become the `auto_score` of the grade cell named by its grade_id in the notebook named by
its module (`attention.causal_mask` -> notebook `attention`, cell `attention-causal_mask`, as
`grader notebooks` generates them). nbgrader's formgrader and `nbgrader export` then see them like
autograded scores. Exercises the assignment has no cell for are reported, not written; grade
cells the grader has no result for are left as they are. A student's submission time, when given
(their timestamp.txt), becomes the submission's `timestamp`, as `nbgrader autograde` records it
(Gradebook.update_or_create_submission), so nbgrader knows how late it was; without one, the
timestamp already there is kept, as autograde keeps it.
"""
from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import warnings
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import quote

from grader.frontends.notebooks.generate import grade_id_of
from grader.results import SubmissionResult


class GradebookError(Exception):
    """The gradebook or the assignment is not there; the message says what to run first."""


@dataclass
class WriteReport:
    written: dict[str, int] = field(default_factory=dict)             # student -> grade cells written
    not_in_assignment: dict[str, list[str]] = field(default_factory=dict)   # student -> exercise ids skipped
    # exercise id -> (grader's max points, the grade cell's): the notebooks were generated with other points;
    # the score written is capped at the cell's maximum
    max_points_differ: dict[str, tuple[float, float]] = field(default_factory=dict)


def write_scores(db_path: str, assignment: str, results_by_student: dict[str, SubmissionResult],
                 course_id: str = "", timestamps: dict[str, datetime] | None = None) -> WriteReport:
    """Set nbgrader autograded scores from grader results; returns what was written and skipped.

    `course_id` is nbgrader's CourseDirectory.course_id ("" unless the course sets one);
    `timestamps`: student -> when they handed in (timezone-aware), for the submissions' timestamp.
    """
    report = WriteReport()
    with _opened(db_path, assignment, course_id) as (gb, cells):
        for student, result in sorted(results_by_student.items()):
            gb.update_or_create_student(student)
            when = (timestamps or {}).get(student)
            with warnings.catch_warnings():     # nbgrader's own add_submission trips SQLAlchemy's
                warnings.simplefilter("ignore")  # autoflush warnings ("not in session"); harmless
                gb.update_or_create_submission(assignment, student, **({"timestamp": when} if when else {}))
            written = 0
            for exercise in result.exercises:
                key = (exercise.module, grade_id_of(exercise.id))
                if key not in cells:
                    report.not_in_assignment.setdefault(student, []).append(exercise.id)
                    continue
                if abs(exercise.max_points - cells[key]) > 1e-9:
                    report.max_points_differ[exercise.id] = (exercise.max_points, cells[key])
                grade = gb.find_grade(key[1], key[0], assignment, student)
                grade.auto_score = min(float(exercise.points), cells[key])
                grade.needs_manual_grade = False
                written += 1
            gb.db.commit()
            report.written[student] = written
    return report


def check_gradebook(db_path: str, assignment: str, course_id: str = "") -> None:
    """GradebookError unless write_scores could write now: the gradebook is there, an SQLite database that
    no other program holds locked, and it knows the assignment. `grader batch` asks before grading, so a
    misspelled path or a missing assignment is not found only after the whole class was graded."""
    with _opened(db_path, assignment, course_id):
        pass


@contextlib.contextmanager
def _opened(db_path: str, assignment: str, course_id: str):
    """(nbgrader's Gradebook, the assignment's grade cells), or GradebookError saying what to do."""
    try:
        from nbgrader.api import Gradebook, MissingEntry
    except ImportError:
        raise GradebookError("writing to an nbgrader gradebook needs nbgrader: pip install nbgrader") from None
    if not os.path.isfile(db_path):
        raise GradebookError(f"{db_path}: no such gradebook; run `nbgrader generate_assignment {assignment}` "
                             "in the course directory first (it creates gradebook.db)")
    _writable_now(db_path)
    with _alembic_on_path(), Gradebook(f"sqlite:///{os.path.abspath(db_path)}", course_id) as gb:
        try:
            cells = _grade_cells(gb.find_assignment(assignment))
        except MissingEntry:
            raise GradebookError(f"{db_path}: no assignment '{assignment}'; did you forget to run "
                                 f"`nbgrader generate_assignment {assignment}`?") from None
        yield gb, cells


def _writable_now(db_path: str) -> None:
    """GradebookError for a file that is no SQLite database, or one another program holds locked (nbgrader's
    Gradebook would fail on it in SQLAlchemy's words, or wait)."""
    try:
        db = sqlite3.connect(f"file:{quote(os.path.abspath(db_path))}?mode=rw", uri=True, timeout=2,
                             isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")       # the write lock write_scores will need; nothing is written
            db.execute("ROLLBACK")
        finally:
            db.close()
    except sqlite3.OperationalError as e:
        if getattr(e, "sqlite_errorname", "") in ("SQLITE_BUSY", "SQLITE_LOCKED"):
            raise GradebookError(f"{db_path}: locked by another program (formgrader, or an nbgrader command still "
                                 "running); let it finish or stop it, then run again") from None
        raise GradebookError(f"{db_path}: cannot be opened for writing ({e})") from None
    except sqlite3.DatabaseError as e:
        raise GradebookError(f"{db_path}: not an nbgrader gradebook ({e}); give the gradebook.db of the course "
                             "directory") from None


@contextlib.contextmanager
def _alembic_on_path():
    """nbgrader's Gradebook runs `alembic` by name when the database has no tables yet: the folder
    of this interpreter (a virtual environment's bin, where nbgrader installed it) goes first on PATH."""
    before = os.environ.get("PATH")
    os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), before or os.defpath])
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = before


def _grade_cells(assignment) -> dict[tuple[str, str], float]:
    """(notebook name, grade cell name) -> max points, for every grade cell of the assignment."""
    return {(nb.name, cell.name): float(cell.max_score) for nb in assignment.notebooks for cell in nb.grade_cells}
