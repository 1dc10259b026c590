"""The template formats (html, md), jinja2 templates in templates/ over the result model.

The terminal report is built from rich renderables instead (grader.reports.terminal): wrapping
to the terminal's width and its colours are rich's job, not a template's.

One Environment for every template of the grader (the notebook helper's and the class report's
too): StrictUndefined, so a template naming a field the model lacks fails instead of printing
nothing; autoescape for HTML, so what a student printed is shown, never run; and every value printed
in any format has its control characters shown (grader.reports.escape.shown), so none reaches the page.
"""
from __future__ import annotations

import os
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, Template, select_autoescape

from grader.reports import escape, filters
from grader.results import SubmissionResult

_TEMPLATES = os.path.join(os.path.dirname(__file__), "templates")
_ENV = Environment(loader=FileSystemLoader(_TEMPLATES), undefined=StrictUndefined,
                   autoescape=select_autoescape(["html", "html.j2"]), trim_blocks=True, lstrip_blocks=True,
                   keep_trailing_newline=True, finalize=escape.shown)
filters.register(_ENV)


def template(name: str) -> Template:
    return _ENV.get_template(name)


def markdown(result: SubmissionResult, **_: Any) -> str:
    return template("report.md.j2").render(r=result)


def html(result: SubmissionResult, **_: Any) -> str:
    return template("report.html.j2").render(r=result)
