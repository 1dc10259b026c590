"""`--min-score`, the pass policy of `grader ci`, checked where it is given: by `grader ci` before it
grades, and by `grader init-ci` before it writes a workflow that passes it on."""
from __future__ import annotations

import math

from grader.errors import UsageError


def parse_min_score(text: str | None):
    """--min-score as a function of the maximum score (None: every exercise must pass)."""
    if not text:
        return None
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        value = math.nan
    top = 100 if text.endswith("%") else math.inf
    if not (math.isfinite(value) and 0 <= value <= top):
        raise UsageError(f"--min-score {text}: give points (6.5, 0 or more) or a percentage (70%, from 0% to 100%)")
    return (lambda top: value / 100 * top) if text.endswith("%") else (lambda top: value)


def check_reachable(min_score: str | None, names, config) -> None:
    """--min-score in points no submission of `names` could reach is a usage error, said before
    grading (a percentage is always reachable)."""
    if not min_score or min_score.endswith("%"):
        return
    from grader.catalog import select
    from grader.pipeline import scoring
    top = sum(scoring.max_points(s, config) for s in select(list(names)) if config.exercise(s.id).enabled)
    if float(min_score) > top:
        raise UsageError(f"--min-score {min_score}: more than the {top:g} points the graded exercises are worth; "
                         f"give at most {top:g} points, or a percentage (70%)")
