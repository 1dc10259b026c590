"""Final scores into a Canvas assignment through its REST API (the `canvasapi` library).

Steps, in order (each a documented Canvas endpoint):
  1. GET  /api/v1/courses/:course_id and /api/v1/courses/:course_id/assignments/:id: both exist
     and the token may read them (401 -> a clear error, exit 2);
  2. GET  /api/v1/courses/:course_id/users?enrollment_type[]=student&include[]=email (paginated by
     its Link header), only when some student's Canvas id is not in the roster: the grader's ids
     matched to Canvas users by the roster's SIS id, login or email, or by the id itself; two students
     matched to one Canvas user stop the export before anything is sent (ExportError, exit 2);
  3. POST .../assignments/:id/submissions/update_grades with grade_data[<user_id>][posted_grade]
     (and [text_comment] with --feedback comment), in chunks; each answers with a Progress object,
     polled at GET /api/v1/progress/:id until it is completed or failed;
  4. with --feedback attachment: each student's feedback.html uploaded as a submission comment
     file (POST .../submissions/:user_id/comments/files, the upload, then PUT the comment);
  5. GET  .../assignments/:id/submissions (paginated): every grade read back; a student whose score
     is not the one sent is reported by name (exit 1).
A dry run does none of it: it prints what would be sent and makes no request.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import Enum
from typing import TextIO

from grader.frontends.batch.outputs import score_text
from grader.frontends.export.source import ExportError, Graded, Person, one_person_each, person
from grader.reports.escape import text_line

CHUNK = 100                      # students per bulk update
SCORE_TOLERANCE = 0.005          # Canvas shows scores to two decimals
POLL_START_S, POLL_MAX_S = 0.1, 2.0


class Feedback(str, Enum):
    NONE = "none"
    COMMENT = "comment"          # a plain-text summary as the submission comment
    ATTACHMENT = "attachment"    # feedback.html attached to a submission comment


@dataclass(frozen=True)
class Target:
    url: str
    course: int
    assignment: int


@dataclass(frozen=True)
class Grade:
    student: str
    who: Person
    score: float
    comment: str = ""
    attachment: str = ""

    @property
    def name(self) -> str:
        shown = self.who.display
        return shown if shown == self.student else f"{shown} ({self.student})"


@dataclass
class Outcome:
    sent: int = 0
    missing: list[tuple[Grade, str]] = field(default_factory=list)      # did not arrive, and why
    unmapped: list[tuple[Grade, str]] = field(default_factory=list)     # no Canvas user found
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.missing and not self.unmapped


def plan(graded: Graded, people: dict[str, Person], feedback: Feedback) -> list[Grade]:
    """The grades to send, one per graded row. ExportError when two students would be one person."""
    one_person_each(graded.rows, people)
    grades = []
    for row in graded.rows:
        comment = comment_text(row) if feedback is Feedback.COMMENT else ""
        attachment = graded.feedback(row.student, "feedback.html") if feedback is Feedback.ATTACHMENT else ""
        grades.append(Grade(row.student, person(people, row.student), row.final, comment, attachment))
    return grades


def comment_text(row) -> str:
    """The submission comment: the score, the late verdict, one line per exercise (the student's view)."""
    view = row.result
    if any(c.hidden for e in view.exercises for c in e.cases):     # redact imports torch: only when needed
        from grader.frontends.batch.redact import student_view
        view = student_view(view)
    lines = [f"Score: {score_text(row.final)} / {score_text(row.max_score)} points"
             + (f" (raw {score_text(row.score)}, late penalty {score_text(row.penalty)})" if row.penalty else "")]
    if row.late is not None:
        lines.append(text_line(row.late.note))
    for e in view.exercises:
        mark = "passed" if e.passed else e.status.value
        head = text_line(e.message.splitlines()[0]) if e.message and not e.passed else ""
        line = f"- {e.id}: {score_text(e.points)} / {score_text(e.max_points)} ({mark})"
        lines.append(line + (f" — {head}" if head else ""))
    return "\n".join(lines)


def dry_run(target: Target, grades: list[Grade], feedback: Feedback) -> str:
    out = [f"dry run: nothing sent. Would post {len(grades)} grade{'s' if len(grades) != 1 else ''} to {target.url}, "
           f"course {target.course}, assignment {target.assignment} (feedback: {feedback.value}):"]
    for g in grades:
        ids = ", ".join(f"{k} {v}" for k, v in (("canvas id", g.who.canvas_id), ("SIS id", g.who.sis_user_id),
                                                  ("login", g.who.login_id), ("email", g.who.email)) if v)
        extra = f", comment of {len(g.comment)} characters" if g.comment else ", feedback.html attached" \
            if g.attachment else ""
        out.append(f"  {g.name}: {score_text(g.score)} ({ids or 'matched by the grader id'}{extra})")
    return "\n".join(out)


def export(target: Target, token: str, grades: list[Grade], feedback: Feedback, wait_s: float = 300.0,
           log: TextIO | None = None) -> Outcome:
    """Steps 1-5 of the module docstring; canvasapi's exceptions propagate (the command maps them)."""
    from canvasapi import Canvas

    canvas = Canvas(target.url, token)
    course = canvas.get_course(target.course)
    assignment = course.get_assignment(target.assignment)
    outcome = Outcome()
    ids = _map(course, grades, outcome)
    _one_student_each(ids)
    mapped = [g for g in grades if g.student in ids]
    for start in range(0, len(mapped), CHUNK):
        chunk = mapped[start:start + CHUNK]
        data = {ids[g.student]: {"posted_grade": score_text(g.score), **({"text_comment": g.comment} if g.comment
                                                                          else {})} for g in chunk}
        progress = _wait(assignment.submissions_bulk_update(grade_data=data), wait_s)
        state = getattr(progress, "workflow_state", "")
        if state != "completed":
            outcome.notes.append(f"Canvas's bulk update {getattr(progress, 'id', '?')} ended '{state or 'unknown'}'"
                                 + (f": {progress.message}" if getattr(progress, "message", None) else ""))
        outcome.sent += len(chunk)
        if log:
            print(f"canvas: {outcome.sent} of {len(mapped)} grades sent", file=log)
    if feedback is Feedback.ATTACHMENT:
        _attach(assignment, target, mapped, ids, outcome)
    _verify(assignment, mapped, ids, outcome)
    return outcome


def _wait(progress, wait_s: float):
    """Poll a Progress until it is completed or failed, or `wait_s` has passed."""
    deadline, pause = time.monotonic() + wait_s, POLL_START_S
    while getattr(progress, "workflow_state", "") not in ("completed", "failed") and time.monotonic() < deadline:
        time.sleep(pause)
        pause = min(pause * 2, POLL_MAX_S)
        progress = progress.query()
    return progress


def _map(course, grades: list[Grade], outcome: Outcome) -> dict[str, int]:
    """student -> Canvas user id: the roster's canvas_id, else a course student with that SIS id,
    login or email (the roster's, or else the grader's id itself)."""
    from canvasapi.paginated_list import PaginatedList
    from canvasapi.user import User
    from canvasapi.util import combine_kwargs

    ids: dict[str, int] = {g.student: int(g.who.canvas_id) for g in grades if g.who.canvas_id.isdigit()}
    if len(ids) == len(grades):
        return ids
    users = PaginatedList(User, course._requester, "GET", f"courses/{course.id}/users",
                          _kwargs=combine_kwargs(enrollment_type=["student"], include=["email"], per_page=100))
    index: dict[tuple[str, str], int] = {}
    for u in users:
        for kind in ("sis_user_id", "login_id", "email"):
            value = str(getattr(u, kind, "") or "").strip().lower()
            if value:
                index.setdefault((kind, value), u.id)
    for g in grades:
        if g.student in ids:
            continue
        wanted = [(k, getattr(g.who, k)) for k in ("sis_user_id", "login_id", "email") if getattr(g.who, k)] or \
            [(k, g.student) for k in ("login_id", "sis_user_id", "email")]
        found = next((index[(k, v.lower())] for k, v in wanted if (k, v.lower()) in index), None)
        if found is None:
            said = " or ".join(f"{k} {v!r}" for k, v in wanted)
            outcome.unmapped.append((g, f"no student of course {course.id} has {said}"
                                     + ("" if g.who.sis_user_id or g.who.login_id or g.who.email
                                        else " (not in the roster: pass --roster with their SIS id, login or email)")))
        else:
            ids[g.student] = found
    return ids


def _one_student_each(ids: dict[str, int]) -> None:
    """ExportError when two students matched one Canvas user: Canvas would keep the grade sent last."""
    by_user: dict[int, list[str]] = {}
    for student, user in ids.items():
        by_user.setdefault(user, []).append(student)
    shared = [f"{' and '.join(students)} (Canvas user {user})" for user, students in by_user.items()
              if len(students) > 1]
    if shared:
        raise ExportError(f"students matched to one Canvas user: {'; '.join(shared)}; nothing was sent, since Canvas "
                          "would keep whichever grade came last. Remove the submission that does not count and run "
                          "grader batch again, or give each student their own identifiers in the roster")


def _attach(assignment, target: Target, grades: list[Grade], ids: dict[str, int], outcome: Outcome) -> None:
    import os

    from canvasapi.submission import Submission

    requester = assignment._requester
    for g in grades:
        if not os.path.isfile(g.attachment):
            outcome.notes.append(f"{g.name}: no feedback file {g.attachment} to attach (run grader batch again)")
            continue
        sub = Submission(requester, {"course_id": target.course, "assignment_id": target.assignment,
                                     "user_id": ids[g.student]})
        done, answer = sub.upload_comment(g.attachment)
        if not done:
            outcome.notes.append(f"{g.name}: Canvas did not take the feedback file ({answer})")


def _verify(assignment, grades: list[Grade], ids: dict[str, int], outcome: Outcome) -> None:
    stored = {s.user_id: getattr(s, "score", None) for s in assignment.get_submissions(per_page=100)}
    for g in grades:
        uid = ids[g.student]
        if uid not in stored or stored[uid] is None:
            outcome.missing.append((g, f"sent {score_text(g.score)}, Canvas has no score"))
        elif abs(float(stored[uid]) - g.score) > SCORE_TOLERANCE:
            outcome.missing.append((g, f"sent {score_text(g.score)}, Canvas has {score_text(float(stored[uid]))}"))
