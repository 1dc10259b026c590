"""What a batch leaves in its output folder, besides the gradebook:

    students/<student>/results.json    Gradescope's format (grader.reports, "json")
    students/<student>/feedback.html   the HTML report, self-contained
    students/<student>/feedback.md     the Markdown report
    grades.csv                         one row per student: final score (after any late penalty), the
                                       raw score and the penalty, then one column per exercise

Every file is written to a temporary name and renamed, so a killed batch never leaves half a
file. Feedback is the student's view (grader.frontends.batch.redact) when hidden cases ran.
"""
from __future__ import annotations

import csv
import io
import os
import tempfile

from grader.deadlines.policy import Lateness
from grader.deadlines.view import penalised
from grader.frontends.batch.discover import folder_name
from grader.frontends.batch.gradebook import Row
from grader.reports import render
from grader.reports.escape import spreadsheet_cell
from grader.results import SubmissionResult

STUDENT_FILES = ("results.json", "feedback.html", "feedback.md")
# nbgrader's export names where one exists (student_id, score, max_score, raw_score,
# late_submission_penalty: `score` is after the penalty), then ours.
CSV_HEAD = ("student_id", "assignment", "score", "max_score", "state", "raw_score", "late_submission_penalty",
            "submitted_at", "lateness")


def write_atomic(path: str, text: str) -> None:
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def student_dir(out: str, student: str) -> str:
    return os.path.join(out, "students", folder_name(student))


def write_student(out: str, student: str, result: SubmissionResult, visibility: str,
                  late: Lateness | None = None) -> str:
    """Write the three feedback files of one student (with the late verdict, when there is one);
    returns their folder."""
    from grader.frontends.batch.redact import student_view    # imports torch: not for `grader export`

    folder = student_dir(out, student)
    view = penalised(student_view(result), late)
    write_atomic(os.path.join(folder, "results.json"), render(view, "json", visibility=visibility))
    write_atomic(os.path.join(folder, "feedback.html"), render(view, "html"))
    write_atomic(os.path.join(folder, "feedback.md"), render(view, "md"))
    return folder


def missing_files(out: str, student: str) -> bool:
    folder = student_dir(out, student)
    return not all(os.path.isfile(os.path.join(folder, f)) for f in STUDENT_FILES)


def grades_csv(rows: list[Row], exercise_ids: list[str], assignment: str = "") -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([*CSV_HEAD, *exercise_ids])
    for row in rows:
        points = {e.id: e.points for e in row.result.exercises}
        late = row.late
        writer.writerow([spreadsheet_cell(row.student), assignment, score_text(row.final), score_text(row.max_score),
                         row.state, score_text(row.score), score_text(row.penalty), late.submitted_at if late else "",
                         late.status.value if late else "",
                         *(score_text(points[i]) if i in points else "" for i in exercise_ids)])
    return buf.getvalue()


def score_text(x: float) -> str:
    return f"{round(x, 4):.10g}"
