"""Renderers: every report format from the same SubmissionResult (a report computes nothing).

    render(result, "terminal" | "html" | "md" | "json") -> str

Text formats are jinja2 templates beside this file (autoescape for HTML, StrictUndefined);
`json` is Gradescope's results.json, built as data.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from grader.reports import filters
from grader.results import SubmissionResult

_TEMPLATES = os.path.join(os.path.dirname(__file__), "templates")
_ENV = Environment(loader=FileSystemLoader(_TEMPLATES), undefined=StrictUndefined,
                   autoescape=select_autoescape(["html", "html.j2"]), trim_blocks=True, lstrip_blocks=True,
                   keep_trailing_newline=True)
filters.register(_ENV)

FORMATS: dict[str, Callable[..., str]] = {}


def renderer(name: str):
    def deco(fn):
        FORMATS[name] = fn
        return fn
    return deco


def template(name: str):
    return _ENV.get_template(name)


@renderer("terminal")
def terminal(result: SubmissionResult, color: bool | None = None, **_: Any) -> str:
    if color is None:
        color = sys.stdout.isatty() and os.environ.get("NO_COLOR") is None
    return template("terminal.txt.j2").render(r=result, c=filters.Colors(color))


@renderer("md")
def markdown(result: SubmissionResult, **_: Any) -> str:
    return template("report.md.j2").render(r=result)


@renderer("html")
def html(result: SubmissionResult, **_: Any) -> str:
    return template("report.html.j2").render(r=result)


@renderer("json")
def gradescope_json(result: SubmissionResult, visibility: str = "after_published", **_: Any) -> str:
    from grader.reports.gradescope import results_json
    return json.dumps(results_json(result, hidden_visibility=visibility), indent=2)


def render(result: SubmissionResult, fmt: str, **kwargs: Any) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format '{fmt}' (choose from {', '.join(sorted(FORMATS))})")
    return FORMATS[fmt](result, **kwargs)
