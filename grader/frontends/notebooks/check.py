"""Grade a function defined in a notebook, right there: the notebook front-end of the engine.

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
import os
import time
from typing import Any, Callable

from grader.config import Config, load_config
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
            raise ExerciseFailed(f"{e.id}: 0 / {e.max_points:g} points. {e.message}{why}")
        return float(e.points)

    def _repr_html_(self) -> str | None:
        # Never raise here: IPython would print a traceback to stderr, which nbgrader scores as 0.
        try:
            from grader.reports import template
            return template("notebook_result.html.j2").render(e=self.exercise, trust=TRUST_NOTE)
        except Exception:
            return None                     # Jupyter then shows the text form

    def __str__(self) -> str:
        from grader.reports import template
        return template("notebook_result.txt.j2").render(e=self.exercise, trust=TRUST_NOTE).rstrip("\n")

    __repr__ = __str__


def check(exercise_id: str, fn: Callable[..., Any], *, points: float | None = None, atol: float | None = None,
          rtol: float | None = None, call_timeout: float | None = None, config: Config | None = None) -> NotebookResult:
    """Grade `fn` as the exercise `exercise_id` ("module.function"), in this process.

    `points`, `atol`, `rtol`, `call_timeout` override the course configuration for this
    exercise (generated nbgrader test cells pass the points of autograde.toml, so the cell's
    score and its nbgrader `points` agree). `config` defaults to the nearest autograde.toml
    above the current folder, or the grader's defaults.
    """
    from grader.catalog import catalog
    from grader.pipeline.engine import Context, grade_exercise, limits_from
    from grader.submission.loader import Submission
    from grader.frontends.notebooks.inprocess import InProcessSandbox
    from grader.frontends.notebooks.recover import function_source

    specs = catalog()
    if exercise_id not in specs:
        import difflib
        close = difflib.get_close_matches(str(exercise_id), list(specs), n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        raise ValueError(f"unknown exercise '{exercise_id}'.{hint} Exercise ids are 'module.function'.")
    spec = specs[exercise_id]
    if not callable(fn):
        raise TypeError(f"check({exercise_id!r}, ...) needs your function itself, e.g. "
                        f"check({exercise_id!r}, {spec.function}); got {type(fn).__name__}")
    config = _with_overrides(config or _nearest_config(), exercise_id, points, atol, rtol, call_timeout)
    source = function_source(fn, spec.function)
    where = f"the cell that defines {getattr(fn, '__name__', spec.function)}"
    submission = Submission(path="notebook", files={spec.module: source}, origin={spec.module: where})
    start = time.monotonic()
    ctx = Context(submission, config, InProcessSandbox(spec.function, fn, limits_from(config)),
                  start + config.submission_timeout)
    # The grader's own warnings (references, mistakes) must not reach the cell's stderr: nbgrader
    # scores a test cell with any stderr output as 0. The student's output is captured per call.
    with contextlib.redirect_stderr(io.StringIO()):
        result = grade_exercise(spec, ctx)
    if not source:
        result = dataclasses.replace(result, notes=result.notes + (
            "The source of your function could not be read, so the static forbidden-API check was skipped "
            "(the run-time one still ran).",))
    return NotebookResult(result, time.monotonic() - start)


def _nearest_config() -> Config:
    from grader.catalog import catalog
    folder = os.getcwd()
    while True:
        path = os.path.join(folder, "autograde.toml")
        if os.path.isfile(path):
            return load_config(path, known_exercises=set(catalog()))
        parent = os.path.dirname(folder)
        if parent == folder:
            return load_config(None)
        folder = parent


def _with_overrides(config: Config, exercise_id: str, points, atol, rtol, call_timeout) -> Config:
    given = {k: float(v) for k, v in dict(points=points, atol=atol, rtol=rtol, call_timeout=call_timeout).items()
             if v is not None}
    if not given:
        return config
    current = config.exercise(exercise_id)
    exercises = {**config.exercises, exercise_id: dataclasses.replace(current, **given)}
    return dataclasses.replace(config, exercises=exercises)


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
