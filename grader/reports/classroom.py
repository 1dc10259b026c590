"""GitHub Classroom: the runner result that `autograding-grading-reporter` reads.

The reporter (classroom-resources/autograding-grading-reporter, `src/main.js`) takes a comma-
separated list of runner ids and, for each id, reads the environment variable
`<ID>_RESULTS`: base64 of a JSON object. Its Classroom grade is the sum of `tests[].score`
over the sum of `max_score`; its console lists each test as passed when `status == "pass"`
and prints `message` otherwise; the check fails when a runner's `status` is "fail" or "error".
The object follows the runner format of the Classroom Python grader (version 3):

    {"version": 3, "status": "pass"|"fail"|"error", "max_score": 9,
     "tests": [{"name": "attention.causal_mask", "status": "pass"|"fail"|"error",
                "score": 1.0, "message": "...", "test_code": "", "filename": "exercises/attention.py",
                "line_no": 20, "duration": 0.31}]}

One test per exercise; `score` carries partial credit. A test's `status` is "error" when the
grader failed on it (a grader fault: no grade); the runner's `status` is "error" when the
submission as a whole could not be read or the grader failed on some exercise.
The reporter prints `message` to the job's log: it is failure_text's plain text for a log, and
the submission's problems go through the same escaping (grader.reports.escape).
`render(result, "classroom")` is the JSON text; `encoded(result)` the base64 line value
(`grader ci --classroom` writes `result=<it>` to $GITHUB_OUTPUT).
"""
from __future__ import annotations

import base64
import json
import os
from typing import Any

from grader.reports.escape import text_block, text_line
from grader.reports.filters import grader_fault_note
from grader.reports.junit import failure_text
from grader.results import ExerciseResult, Status, SubmissionResult
from grader.submission.loader import on_disk

MAX_MESSAGE = 2000          # characters per test message: the whole object travels in one output line


def _relative(path: str, root: str | None) -> str:
    return os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/") if root and path else path


def _test(e: ExerciseResult, root: str | None, submission: str = "") -> dict[str, Any]:
    message = "" if e.passed else failure_text(e, location=False)
    if len(message) > MAX_MESSAGE:
        message = message[:MAX_MESSAGE - 20] + "\n[... shortened]"
    status = "pass" if e.passed else "error" if e.status is Status.GRADER_FAULT else "fail"
    file = on_disk(submission, e.source_file) or e.source_file     # source_file is relative to the submission
    return {"name": text_line(e.id), "status": status, "score": round(e.points, 4),
            "message": message, "test_code": "", "filename": text_line(_relative(file, root)),
            "line_no": e.source_line, "duration": round(e.seconds, 3)}


def classroom_result(result: SubmissionResult, root: str | None = None) -> dict[str, Any]:
    tests = [_test(e, root, result.submission) for e in result.exercises]
    unreadable = result.errors and not any(e.cases for e in result.exercises)
    status = "error" if unreadable or result.grader_faults else "pass" if result.all_passed else "fail"
    out: dict[str, Any] = {"version": 3, "status": status, "max_score": round(result.max_score, 4), "tests": tests}
    said = [*map(text_block, result.errors), *filter(None, [text_line(grader_fault_note(result))])]
    if said:
        out["message"] = "\n".join(said)
    return out


def classroom_json(result: SubmissionResult, root: str | None = None, **_: Any) -> str:
    return json.dumps(classroom_result(result, root), ensure_ascii=False)


def encoded(result: SubmissionResult, root: str | None = None) -> str:
    """base64 of the JSON, one line, as the reporter's `<ID>_RESULTS` variable expects."""
    return base64.b64encode(classroom_json(result, root).encode("utf-8")).decode("ascii")
