"""Renderers: every report format from the same SubmissionResult (a report computes nothing).

    render(result, fmt, **options) -> str        fmt: a key of FORMATS

FORMATS is the whole list: a format's name and the function that renders it, imported the first
time it is used (so `grader --version` loads no renderer, and no format depends on another
module having been imported first). Adding a format is one line here and its function.
html and md are jinja2 templates (grader.reports.text), terminal is rich renderables
(grader.reports.terminal); json, junit and classroom are built as data.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

# format -> "module:function(result, **options) -> str"
FORMATS: dict[str, str] = {
    "terminal": "grader.reports.terminal:terminal",         # what `grader check` prints (rich)
    "html": "grader.reports.text:html",                     # one self-contained page
    "md": "grader.reports.text:markdown",                   # a pull request's summary
    "json": "grader.reports.gradescope:gradescope_json",    # Gradescope's results.json
    "junit": "grader.reports.junit:junit",                  # JUnit XML, read by CI systems
    "classroom": "grader.reports.classroom:classroom_json",  # GitHub Classroom's autograding result
}


def renderer(fmt: str) -> Callable[..., str]:
    """The function that renders `fmt`; ValueError naming every format for an unknown one."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format '{fmt}' (choose from {', '.join(FORMATS)})")
    module, _, function = FORMATS[fmt].partition(":")
    return getattr(importlib.import_module(module), function)


def render(result, fmt: str, **options: Any) -> str:
    return renderer(fmt)(result, **options)
