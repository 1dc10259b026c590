"""GitHub Actions workflow commands: one `::error file=...,line=...::message` per failed exercise.

GitHub shows each as an annotation on the pull request's diff, at the student's function.
Escaping follows the runner's rules (actions/toolkit, `command.ts`): in the message `%`, CR and
LF are percent-encoded; in properties also `:` and `,`. A command is one line, so no text in it
can start another; student text is first made plain text for a log (grader.reports.escape).
"""
from __future__ import annotations

import os

from grader.reports.escape import text_block, text_line
from grader.reports.junit import failure_text
from grader.results import Status, SubmissionResult
from grader.submission.loader import on_disk


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def repo_path(path: str, source_root: str) -> str:
    """The student's file as a path in the pull request's repository (what GitHub annotates)."""
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(source_root))
    return rel.replace(os.sep, "/")


def command(level: str, message: str, file: str = "", line: int = 0, title: str = "") -> str:
    props = [f"file={_prop(file)}"] if file else []
    if file and line:
        props.append(f"line={line}")
    if title:
        props.append(f"title={_prop(title)}")
    return f"::{level} {','.join(props)}::{_data(message)}" if props else f"::{level}::{_data(message)}"


def annotations(result: SubmissionResult, source_root: str) -> list[str]:
    out = [command("error", text_block(err), title="submission") for err in result.errors]
    for e in result.exercises:
        if e.passed:
            continue
        level = "warning" if e.status is Status.SKIPPED else "error"
        title = (f"{text_line(e.id)}: the grader failed (not your code; no grade)" if e.status is Status.GRADER_FAULT
                 else f"{text_line(e.id)}: {e.points:g} / {e.max_points:g} points")
        path = on_disk(result.submission, e.source_file)       # source_file is relative to the submission
        file = text_line(repo_path(path, source_root)) if path and os.path.isfile(path) else ""
        out.append(command(level, failure_text(e, location=False, max_cases=1), file, e.source_line, title))
    return out
