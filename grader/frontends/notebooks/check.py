"""Grade a function defined in a notebook, right there: the notebook front-end of grader.api.

    from grader.notebook import check
    check("attention.causal_mask", causal_mask)          # shows the result (HTML in Jupyter)
    check("attention.causal_mask", causal_mask).award()  # nbgrader test cells: points or raise

`check` runs the exercise's cases (the same seeded cases, PyTorch references, tolerances,
known-mistake diagnoses and forbidden-API rules as `grader check`) against the function you
pass, and scores it the same way (partial credit by cases passed).

Trust model, stated plainly: `check` runs your function *in this process* (the notebook's
kernel), not in the grader's sandbox. Code in the notebook can reach everything the kernel
can (files, environment variables, the grader's own objects), so a result shown here is
feedback, not proof. That is also nbgrader's model: its autograde executes the notebook, test
cells included, in a kernel. Grades that must hold against a hostile submission come from
`grader check --submission work.ipynb` or `grader batch`, which import the notebook's code in
the sandbox and decide everything in a separate process. For the same reason, do not set the
secret seed (GRADER_SECRET_SEED) where nbgrader autogrades: the notebook could read it, and with
it the hidden cases.

Partial credit in nbgrader: `award()` returns the points as a float, which becomes the test
cell's `execute_result`; nbgrader reads its `text/plain` as the cell's score
(nbgrader.utils.determine_grade). With no case passed it raises ExerciseFailed carrying the
diagnosis, which nbgrader scores 0 and shows in the feedback.
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import time
from typing import Any, Callable

from grader import api
from grader.config import Config
from grader.reports.filters import score
from grader.reports.text import template
from grader.results import ExerciseResult

TRUST_NOTE = ("Graded in this notebook's kernel (no sandbox): feedback as nbgrader gives it. "
              "Grades that count against untrusted code come from `grader check`/`grader batch` on the .ipynb file.")


class ExerciseFailed(AssertionError):
    """No case passed: nbgrader scores a test cell that raises as 0 and shows this message."""


@dataclasses.dataclass(frozen=True)
class NotebookResult:
    """What `check` returns: the engine's ExerciseResult, shown as HTML in Jupyter, as text elsewhere."""

    exercise: ExerciseResult
    seconds: float = 0.0

    @property
    def points(self) -> float:
        return self.exercise.points

    @property
    def max_points(self) -> float:
        return self.exercise.max_points

    @property
    def passed(self) -> bool:
        return self.exercise.passed

    def award(self) -> float:
        """Show the result and return the points (nbgrader's partial credit); raise when none were earned."""
        _show(self)
        e = self.exercise
        if e.points <= 0 and e.max_points > 0:
            why = f"\nLooks like: {e.diagnosis}" if e.diagnosis else ""
            raise ExerciseFailed(f"{e.id}: {score(0, e.max_points)} points. {e.message}{why}")
        return float(e.points)

    def _repr_html_(self) -> str | None:
        # Never raise here: IPython would print a traceback to stderr, which nbgrader scores as 0.
        try:
            return template("notebook_result.html.j2").render(e=self.exercise, trust=TRUST_NOTE)
        except Exception:
            return None                     # Jupyter then shows the text form

    def __str__(self) -> str:
        return template("notebook_result.txt.j2").render(e=self.exercise, trust=TRUST_NOTE).rstrip("\n")

    __repr__ = __str__


def check(exercise_id: str, fn: Callable[..., Any], *, points: float | None = None, atol: float | None = None,
          rtol: float | None = None, call_timeout: float | None = None, config: Config | None = None) -> NotebookResult:
    """Grade `fn` as the exercise `exercise_id` ("module.function"), in this process.

    `points`, `atol`, `rtol`, `call_timeout` override the course configuration for this
    exercise (generated nbgrader test cells pass the points of autograde.toml, so the cell's
    score and its nbgrader `points` agree). `config` defaults to the nearest autograde.toml
    above the current folder, or the grader's defaults. The grading is grader.api.check_function.
    """
    start = time.monotonic()
    # The grader's own warnings (references, mistakes) must not reach the cell's stderr: nbgrader
    # scores a test cell with any stderr output as 0. The student's output is captured per call.
    with contextlib.redirect_stderr(io.StringIO()):
        result = api.check_function(exercise_id, fn, config, points=points, atol=atol, rtol=rtol,
                                    call_timeout=call_timeout)
    return NotebookResult(result, time.monotonic() - start)


def _show(result: NotebookResult) -> None:
    """display() in IPython (HTML in Jupyter, text in a terminal), print() elsewhere."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        get_ipython = None
    if get_ipython is not None and get_ipython() is not None:
        display(result)
    else:
        print(result)


__all__ = ["check", "NotebookResult", "ExerciseFailed", "TRUST_NOTE"]
