"""What an export reads: a batch's output folder and the instructor's roster CSV.

The roster maps the grader's student id (the folder name in the submissions, the `student_id` of
grades.csv) to the people of the LMS. Columns, by header (case and spaces ignored):

    student       the grader's id (required)
    name          the display name ("Ada Lovelace", or "Lovelace, Ada": a comma puts the last name
                  first); or first_name and last_name
    email         the e-mail address
    login_id      the login (Canvas's SIS Login ID, Blackboard's and Moodle's username)
    sis_user_id   the institution's student number (Canvas's SIS User ID, Moodle's ID number)
    canvas_id     Canvas's own user id, when known
    section       the section name (Canvas's CSV has a column for it)

The rows sent are those of the last batch run's grades.csv: a student whose submission that run did not
find keeps an older row in the gradebook, which is left out, and named. Two students the LMS would take
for one person (the same login, SIS id, e-mail or Canvas id, case ignored) are refused: the LMS would keep
whichever of their grades it applied last.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from grader import instructor_csv
from grader.errors import UsageError
from grader.frontends.batch.gradebook import Gradebook, Row, Run
from grader.frontends.batch.outputs import student_dir

IDENTIFIERS = {"canvas_id": "Canvas id", "sis_user_id": "SIS user id", "login_id": "login", "email": "e-mail"}
ROSTER_COLUMNS = ("student", "name", "first_name", "last_name", "email", "login_id", "sis_user_id", "canvas_id",
                  "section")


class ExportError(UsageError):
    """An export that cannot start: a missing folder, a bad roster, a refused token (exit 2)."""


@dataclass(frozen=True)
class Person:
    student: str
    name: str = ""
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    login_id: str = ""
    sis_user_id: str = ""
    canvas_id: str = ""
    section: str = ""

    @property
    def display(self) -> str:
        return self.name or " ".join(p for p in (self.first_name, self.last_name) if p) or self.student

    @property
    def first_last(self) -> tuple[str, str]:
        """(first name, last name): the roster's columns, else the name split, "Last, First" at its
        comma and "First Last" at its last space."""
        if self.first_name or self.last_name:
            return self.first_name, self.last_name
        if "," in self.name:
            last, _, first = self.name.partition(",")
            return first.strip(), last.strip()
        first, _, last = self.name.rpartition(" ")
        return first.strip(), last

    @property
    def identities(self) -> list[tuple[str, str]]:
        """What the LMS knows this person by, (kind, value) with case ignored: the roster's identifiers,
        else the grader's id taken as the login (as both exports take it)."""
        found = [(k, getattr(self, k).casefold()) for k in IDENTIFIERS if getattr(self, k)]
        return found or [("login_id", self.student.casefold())]

    @property
    def sortable(self) -> str:
        """"Last, First" as Canvas's Student column shows it."""
        if self.last_name or self.first_name:
            return ", ".join(p for p in (self.last_name, self.first_name) if p)
        return self.display


@dataclass(frozen=True)
class Graded:
    """A batch's rows that carry a grade, and those that do not (the grader failed on them)."""

    folder: str
    rows: tuple[Row, ...]
    not_graded: tuple[str, ...]
    left_out: tuple[str, ...] = ()       # the gradebook's rows grades.csv does not hold, and why

    def feedback(self, student: str, name: str) -> str:
        return os.path.join(student_dir(self.folder, student), name)


def graded(folder: str) -> Graded:
    path = os.path.join(folder, "gradebook.sqlite")
    if not os.path.isfile(path):
        raise ExportError(f"{folder}: no gradebook.sqlite here; pass the --out folder of `grader batch`")
    book = Gradebook(path)
    try:
        rows, run = list(book.rows()), book.latest_run()
    finally:
        book.close()
    rows, left_out = _of_run(rows, run, folder)
    if not rows:        # an LMS file with only its header would replace nothing, and say nothing
        raise ExportError(f"{folder}: its gradebook holds no student of the last `grader batch` into it; run grader "
                          "batch on the class's submissions first")
    return Graded(folder, tuple(r for r in rows if r.state != "grader_error"),
                  tuple(r.student for r in rows if r.state == "grader_error"), tuple(left_out))


def _of_run(rows: list[Row], run: Run | None, folder: str) -> tuple[list[Row], list[str]]:
    """The rows of the last run's grades.csv (the students it found), and what is said of the others."""
    if run is None:
        return rows, []
    if not run.finished:
        raise ExportError(f"{folder}: the last `grader batch` into it (run {run.id}, begun {run.started_at}) did not "
                          "finish (stopped, or still running), so its grades.csv and gradebook may disagree: run the "
                          "same grader batch again (it goes on where it stopped), then export")
    if run.students is not None:
        found = set(run.students)
        kept = [r for r in rows if r.student in found]
        why = [f"not among the submissions the last `grader batch` (run {run.id}) found, so not in its grades.csv"]
    else:       # a run recorded before schema 3: only its settings tell its rows
        kept = [r for r in rows if r.settings_hash == run.settings_hash]
        why = [f"graded under other settings (exercises, points, limits) than the last `grader batch` (run {run.id})",
               "that run did not record which submissions it found (an older grader): a removed submission graded "
               "under the same settings is still sent; run grader batch again to leave it out"]
    gone = sorted({r.student for r in rows} - {r.student for r in kept})
    return kept, ([f"left out, {why[0]}: {', '.join(gone)}"] if gone else []) + why[1:]


def one_person_each(rows, people: dict[str, Person]) -> None:
    """ExportError when two students' rows would go to the same person in the LMS (the same login,
    SIS id, e-mail or Canvas id, case ignored): the LMS keeps whichever grade it applies last."""
    seen: dict[tuple[str, str], str] = {}
    clashes: dict[tuple[str, str], str] = {}
    for row in rows:
        for kind, value in person(people, row.student).identities:
            first = seen.setdefault((kind, value), row.student)
            if first != row.student:
                clashes.setdefault((first, row.student), f"{first} and {row.student} (both {IDENTIFIERS[kind]} "
                                                         f"{value!r})")
    if clashes:
        raise ExportError(f"students the LMS would take for one person: {'; '.join(clashes.values())}; it would keep "
                          "whichever grade it applied last. Remove the submission that does not count and run grader "
                          "batch again, or give each student their own identifiers in the roster")


def _key(header: str) -> str:
    return header.strip().lower().replace(" ", "_").replace("-", "_")


def roster(path: str | None) -> dict[str, Person]:
    """student -> Person; {} when no roster is given. ExportError naming the line for a bad file."""
    if not path:
        return {}
    header, records = instructor_csv.read(path, f"--roster {path}", ExportError, key=_key)
    if "student" not in header:
        raise ExportError(f"{path}: the header needs a 'student' column (the grader's student id) beside any of "
                          f"{', '.join(ROSTER_COLUMNS[1:])}; found: {', '.join(header) or 'nothing'}")
    people: dict[str, Person] = {}
    for line, record in records:
        student = record.get("student", "")
        if not student:
            raise ExportError(f"{path}, line {line}: no student id")
        if student in people:
            raise ExportError(f"{path}, line {line}: {student} is listed twice; keep one line per student")
        people[student] = Person(**{k: record.get(k, "") for k in ROSTER_COLUMNS})
    return people


def not_in_batch(graded: Graded, people: dict[str, Person]) -> list[str]:
    """A note naming the roster's students the batch has no row for, graded or not (no submission of
    theirs was found): the LMS gets nothing for them. [] when there are none."""
    seen = {r.student for r in graded.rows} | set(graded.not_graded)
    absent = [s for s in people if s not in seen]
    if not absent:
        return []
    return [f"{len(absent)} student{'s' if len(absent) > 1 else ''} of the roster not in this batch (no "
            f"submission found), so no grade for them: {', '.join(absent)}"]


def person(people: dict[str, Person], student: str) -> Person:
    return people.get(student) or Person(student)
