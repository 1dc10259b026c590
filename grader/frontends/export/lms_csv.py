"""Gradebook import files for instructors without API access: one row per graded student, the
final score (after any late penalty) in one assignment column.

    canvas       Student, ID, SIS User ID, SIS Login ID, Section, then "<Assignment> (<id>)": the layout
                 of Canvas's own gradebook export, which its Import accepts; Canvas matches a row by ID,
                 SIS User ID or SIS Login ID, and a column without "(id)" creates a new assignment
    moodle       Username, Email address, ID number, First name, Last name, then the grade item: Moodle's
                 "Import > CSV file" maps one identifier column (username, email address or ID number)
                 to its users and the grade item column to an item, in its import form
    blackboard   Last Name, First Name, Username, then "<Column> [Total Pts: N Score] |<column id>": Grade
                 Center's download layout, matched on Username and the Column ID (without "|id" a new
                 column is created); every field quoted, as Blackboard asks of comma-separated files

Every cell of roster or student text (names, identifiers, sections) goes through spreadsheet_cell,
as in grades.csv: a roster name `=HYPERLINK(...)` stays text when the file is opened in a spreadsheet.
Sources for each layout are in docs/lms.md.
"""
from __future__ import annotations

import csv
import io
from enum import Enum

from grader.frontends.batch.outputs import score_text
from grader.frontends.export.source import Graded, Person, not_in_batch, one_person_each, person
from grader.reports.escape import spreadsheet_cell


class Layout(str, Enum):
    CANVAS = "canvas"
    MOODLE = "moodle"
    BLACKBOARD = "blackboard"


def write(layout: Layout, graded: Graded, people: dict[str, Person], assignment: str, column_id: str = "",
          points: float | None = None) -> tuple[str, list[str]]:
    """The file's text, and notes for the instructor (rows left out, students the roster lacks, identifiers
    guessed). ExportError when two students would be one person to the LMS."""
    one_person_each(graded.rows, people)
    points = points if points is not None else max((r.max_score for r in graded.rows), default=0.0)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n" if layout is Layout.BLACKBOARD else "\n",
                        quoting=csv.QUOTE_ALL if layout is Layout.BLACKBOARD else csv.QUOTE_MINIMAL)
    writer.writerow(_header(layout, assignment, column_id, points))
    guessed = []
    for row in graded.rows:
        p = person(people, row.student)
        if not (p.canvas_id or p.sis_user_id or p.login_id or p.email):
            guessed.append(row.student)
        writer.writerow(_line(layout, p, score_text(row.final)))
    notes = list(graded.left_out)
    if guessed:
        notes.append(f"{len(guessed)} student{'s' if len(guessed) > 1 else ''} not in the roster "
                     f"({', '.join(guessed[:10])}{' …' if len(guessed) > 10 else ''}): their grader id is written as "
                     f"the {'SIS Login ID' if layout is Layout.CANVAS else 'username'}; pass --roster to map them")
    notes += not_in_batch(graded, people)
    if graded.not_graded:
        notes.append(f"left out, the grader failed on them (no grade; run grader batch again): "
                     f"{', '.join(graded.not_graded)}")
    return buf.getvalue(), notes


def _header(layout: Layout, assignment: str, column_id: str, points: float) -> list[str]:
    if layout is Layout.CANVAS:
        return ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                f"{assignment} ({column_id})" if column_id else assignment]
    if layout is Layout.MOODLE:
        return ["Username", "Email address", "ID number", "First name", "Last name", assignment]
    return ["Last Name", "First Name", "Username",
            f"{assignment} [Total Pts: {points:g} Score]" + (f" |{column_id}" if column_id else "")]


def _line(layout: Layout, p: Person, score: str) -> list[str]:
    return [*map(spreadsheet_cell, _people_cells(layout, p)), score]


def _people_cells(layout: Layout, p: Person) -> list[str]:
    """The row's cells before the score: the roster's text (or the grader's id), as it is."""
    login = p.login_id or (p.student if not (p.canvas_id or p.sis_user_id or p.email) else "")
    if layout is Layout.CANVAS:
        return [p.sortable, p.canvas_id, p.sis_user_id, login, p.section]
    first, last = p.first_last
    if layout is Layout.MOODLE:
        return [p.login_id or p.student, p.email, p.sis_user_id, first, last]
    return [last, first, p.login_id or p.student]
