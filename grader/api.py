"""The one call every front-end makes: a submission in, its result out.

    grade(path, names=(), config=None, *, sandbox=None, cuda=None) -> SubmissionResult
    check_function(exercise_id, fn, config=None, **overrides) -> ExerciseResult
    load(config_path=None, *, overrides=None, env=None, flags=None) -> Config
    find_config(start=None) -> str | None
    sandbox(config, **limits) -> Sandbox

The front-ends (grader.frontends: the `grader` commands, the pytest plugin, the notebook helper,
batch workers, CI and Gradescope) turn their way of asking into one of these calls and render
the record they get back; none of them composes the pipeline. grader.pipeline.engine does, and
only it.

Heavy modules (the catalog, torch) are imported inside the functions: every `grader` command
module imports this one, and `grader --version` must not load torch.
"""
from __future__ import annotations

import dataclasses
import difflib
import os
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from grader.config import Config, exercise_settings, load_config
from grader.errors import SelectionError
from grader.results import ExerciseResult, SubmissionResult

if TYPE_CHECKING:                       # the sandbox's module imports torch
    from grader.sandbox.runner import Sandbox

CONFIG_FILE = "autograde.toml"
EXERCISE_OVERRIDES = ("points", "atol", "rtol", "call_timeout")


def find_config(start: str | None = None) -> str | None:
    """The nearest autograde.toml in `start` or a folder above it; None when there is none.

    Without `start`: from the current folder, and the path is relative to it ("autograde.toml",
    "../autograde.toml"), as messages and report headers show it.
    """
    folder = os.path.abspath(start or os.curdir)
    while True:
        path = os.path.join(folder, CONFIG_FILE)
        if os.path.isfile(path):
            return path if start else os.path.relpath(path)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def load(config_path: str | None = None, *, overrides: Mapping[str, Any] | None = None,
         env: Mapping[str, str] | None = None, flags: Mapping[str, str] | None = None) -> Config:
    """The course configuration, validated (exercise ids against the catalog).

    `config_path` None: the nearest autograde.toml (find_config), else the defaults. `overrides`:
    Config fields from command-line flags (None values ignored), validated as the file's keys are
    (ConfigError naming the flag from `flags`, field -> "--timeout"); `env`: instead of os.environ.
    """
    from grader.catalog import catalog
    path = config_path if config_path is not None else find_config()
    return load_config(path, env=env, overrides=overrides, known_exercises=set(catalog()), flags=flags)


def grade(path: str | os.PathLike, names: Iterable[str] = (), config: Config | None = None, *,
          sandbox: Sandbox | None = None, cuda: bool | None = None) -> SubmissionResult:
    """Grade the submission at `path` (folder, .zip, .py or .ipynb) in the sandbox.

    `names`: exercises (`attention.causal_mask`) or modules (`attention`), one or several;
    default every exercise; an unknown name raises SelectionError. `config` None: load().
    `sandbox`: a warm one to reuse across submissions (see sandbox()); by default one is
    started and shut down for this call. `cuda` False: performance checks are planned as on a
    machine without CUDA (a batch on a cluster that does not wait for a GPU worker); None: this
    machine decides. A bad submission never raises: it is a result, with its problems in `errors`.
    """
    from grader.catalog import select
    from grader.pipeline import engine
    names = [names] if isinstance(names, str) else list(names)
    config = config if config is not None else load()
    specs = select(names)
    refuse_disabled(names, specs, config)
    return engine.grade(os.fspath(path), specs, config, sandbox=sandbox, cuda=cuda)


def refuse_disabled(names: Iterable[str], specs, config: Config) -> None:
    """SelectionError when a name asked for (an exercise, or a module) selects only exercises that
    autograde.toml disables: graded, it said "Score: 0 / 0" and nothing else. `specs`: what the names
    select (grader.catalog.select). A module with some exercises enabled grades those, as before."""
    for name in names:
        chosen = [s for s in specs if name in (s.id, s.module)]
        if chosen and not any(config.exercise(s.id).enabled for s in chosen):
            where = config.path or "autograde.toml"
            tables = ", ".join(f'[exercises."{s.id}"]' for s in chosen)
            what = f"{name} is" if len(chosen) == 1 else f"every exercise of {name} is"
            raise SelectionError(f"{what} disabled in {where} (enabled = false in {tables}): set enabled = true "
                                 "there to grade it, or ask for another exercise")


def sandbox(config: Config, **limits: Any) -> Sandbox:
    """A sandbox with the configuration's limits (each field of sandbox.runner.Limits may be changed),
    for a caller that grades many submissions with one warm zygote (the catalog's tripwires made in
    it once); use it as a context manager."""
    from grader.catalog import catalog
    from grader.pipeline import engine
    from grader.sandbox.runner import Sandbox
    return Sandbox(dataclasses.replace(engine.limits_from(config), **limits),
                   engine.tripwire_targets(catalog().values()))


def check_function(exercise_id: str, fn: Callable[..., Any], config: Config | None = None,
                   **overrides: float | None) -> ExerciseResult:
    """Grade `fn`, a function object of this process, as the exercise `exercise_id`, IN THIS PROCESS.

    For a function defined in a notebook's kernel (grader.notebook.check): the same cases,
    references, comparison, known mistakes, forbidden-API rules and scoring as grade(), run by
    the engine's own grade_exercise, but through an in-process stand-in for the sandbox
    (grader.frontends.notebooks.inprocess): the function keeps its closures and the notebook's
    globals, and it can reach everything this process can. Feedback, not proof; grade() the
    .ipynb file for a grade that must hold against hostile code.

    `overrides`: points, atol, rtol, call_timeout for this exercise. `config` None: load().
    Raises SelectionError (a ValueError) for an unknown id, TypeError when `fn` is not callable,
    ConfigError when an override is out of range (as in autograde.toml: call_timeout > 0, ...).
    """
    from grader.catalog import catalog
    from grader.frontends.notebooks.inprocess import InProcessSandbox
    from grader.frontends.notebooks.recover import function_source
    from grader.pipeline import engine
    from grader.submission.loader import Submission

    spec = _exercise(catalog(), exercise_id)
    if not callable(fn):
        raise TypeError(f"check({exercise_id!r}, ...) needs your function itself, e.g. "
                        f"check({exercise_id!r}, {spec.function}); got {type(fn).__name__}")
    config = with_exercise_overrides(config if config is not None else load(), exercise_id, **overrides)
    source = function_source(fn, spec.function)
    where = f"the cell that defines {getattr(fn, '__name__', spec.function)}"
    submission = Submission(path="notebook", files={spec.module: source}, origin={spec.module: where})
    ctx = engine.Context(submission, config, InProcessSandbox(spec.function, fn, engine.limits_from(config)),
                         time.monotonic() + config.submission_timeout)
    result = engine.grade_exercise(spec, ctx)
    if not source:
        result = dataclasses.replace(result, notes=result.notes + (
            "The source of your function could not be read, so the static forbidden-API check was skipped "
            "(the run-time one still ran).",))
    return result


def with_exercise_overrides(config: Config, exercise_id: str, **overrides: float | None) -> Config:
    """`config` with [exercises."<exercise_id>"] keys replaced (points, atol, rtol, call_timeout)."""
    unknown = sorted(set(overrides) - set(EXERCISE_OVERRIDES))
    if unknown:
        raise TypeError(f"unknown override {unknown[0]!r}: give {', '.join(EXERCISE_OVERRIDES)}")
    given = exercise_settings({k: v for k, v in overrides.items() if v is not None}, f"check({exercise_id!r}, ...)")
    if not given:
        return config
    current = dataclasses.replace(config.exercise(exercise_id), **given)
    return dataclasses.replace(config, exercises={**config.exercises, exercise_id: current})


def _exercise(specs: Mapping[str, Any], exercise_id: str):
    if exercise_id in specs:
        return specs[exercise_id]
    close = difflib.get_close_matches(str(exercise_id), list(specs), n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    raise SelectionError(f"unknown exercise '{exercise_id}'.{hint} Exercise ids are 'module.function'.")
