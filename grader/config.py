"""The course's configuration, `autograde.toml`, as one typed object.

Precedence, highest first: command-line flag > environment > `autograde.toml` (per exercise,
then per section) > the defaults below. Every key has a one-line description; an unknown key
or a bad value raises ConfigError naming the key, the file and the fix.
"""
from __future__ import annotations

import difflib
import os
import tomllib
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from grader.errors import ConfigError
from grader.reports import FORMATS

__all__ = ["Config", "ConfigError", "ExerciseConfig", "load_config"]

# section -> key -> (type, default, description)
SCHEMA: dict[str, dict[str, tuple[type | tuple[type, ...], Any, str]]] = {
    "course": {
        "name": (str, "Neural networks, from the first neuron to the transformer", "course title shown in reports"),
        "submission": (str, "exercises", "default submission folder for `grader check`"),
        "solutions": (str, "solutions", "folder of worked solutions with solution regions"),
    },
    "limits": {
        "call_timeout": ((int, float), 10.0, "wall-time limit for one call of a student function, seconds"),
        "submission_timeout": ((int, float), 600.0, "wall-time limit for grading one whole submission, seconds"),
        "memory_mb": (int, 2048, "memory a submission's process may allocate beyond the grader's own, MiB"),
        "output_kb": (int, 64, "captured stdout/stderr kept per exercise, KiB (the rest is counted, then dropped)"),
        "jobs": (int, 0, "exercises graded at once (0: one per CPU core)"),
    },
    "hidden": {
        "seed_env": (str, "GRADER_SECRET_SEED", "environment variable holding the instructor's secret seed"),
        "visibility": (str, "after_published",
                       "Gradescope visibility of hidden cases: hidden, after_due_date, after_published, visible"),
    },
    "reports": {
        "formats": (list, ["terminal"], "report formats `grader check` writes by default"),
        "html": (str, "reports/report.html", "where `make grade` writes the HTML report"),
        "color": (str, "auto", "terminal colour: auto, always or never"),
    },
}
EXERCISE_KEYS: dict[str, tuple[type | tuple[type, ...], Any, str]] = {
    "points": ((int, float), None, "points for this exercise"),
    "atol": ((int, float), None, "absolute tolerance override (all dtypes)"),
    "rtol": ((int, float), None, "relative tolerance override (all dtypes)"),
    "call_timeout": ((int, float), None, "per-call wall-time limit override, seconds"),
    "enabled": (bool, True, "grade this exercise"),
}
CHOICES = {
    ("hidden", "visibility"): ("hidden", "after_due_date", "after_published", "visible"),
    ("reports", "color"): ("auto", "always", "never"),
    ("reports", "formats"): tuple(FORMATS),
}


@dataclass(frozen=True)
class ExerciseConfig:
    points: float | None = None
    atol: float | None = None
    rtol: float | None = None
    call_timeout: float | None = None
    enabled: bool = True


@dataclass(frozen=True)
class Config:
    course_name: str = SCHEMA["course"]["name"][1]
    submission: str = "exercises"
    solutions: str = "solutions"
    call_timeout: float = 10.0
    submission_timeout: float = 600.0
    memory_mb: int = 2048
    output_kb: int = 64
    jobs: int = 0
    seed_env: str = "GRADER_SECRET_SEED"
    secret_seed: int | None = None
    visibility: str = "after_published"
    formats: tuple[str, ...] = ("terminal",)
    html: str = "reports/report.html"
    color: str = "auto"
    exercises: Mapping[str, ExerciseConfig] = field(default_factory=dict)
    path: str = ""                      # where it was read from ("" = defaults only)
    root: str = "."                     # folder of autograde.toml: relative paths start here
    extra: Mapping[str, Any] = field(default_factory=dict)   # sections owned by other stages

    def exercise(self, exercise_id: str) -> ExerciseConfig:
        return self.exercises.get(exercise_id, ExerciseConfig())

    @property
    def effective_jobs(self) -> int:
        return self.jobs or os.cpu_count() or 1

    def summary(self) -> dict[str, Any]:
        """The resolved values that report headers print."""
        return {"config": self.path or "(defaults)", "call_timeout_s": self.call_timeout,
                "submission_timeout_s": self.submission_timeout, "memory_mb": self.memory_mb,
                "output_kb": self.output_kb, "jobs": self.effective_jobs,
                "hidden_cases": self.secret_seed is not None}


_FIELD = {("course", "name"): "course_name", ("hidden", "seed_env"): "seed_env"}

# Sections other stages validate themselves: section -> "module:function(body, source) -> value",
# imported only when the section is present (so reading the config stays cheap).
EXTRA_SECTIONS: dict[str, str] = {"performance": "grader.timing.config:parse_section"}


def _section_parser(section: str):
    import importlib
    module, _, function = EXTRA_SECTIONS[section].partition(":")
    return getattr(importlib.import_module(module), function)


def _suggest(word: str, options) -> str:
    close = difflib.get_close_matches(word, list(options), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _check_type(value: Any, typ, where: str) -> None:
    if isinstance(value, bool) and typ is not bool and bool not in (typ if isinstance(typ, tuple) else (typ,)):
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    if not isinstance(value, typ):
        names = " or ".join(t.__name__ for t in (typ if isinstance(typ, tuple) else (typ,)))
        raise ConfigError(f"{where}: expected {names.replace('int or float', 'a number')}, got {value!r}")


def load_config(path: str | None = None, env: Mapping[str, str] | None = None,
                overrides: Mapping[str, Any] | None = None, known_exercises=None) -> Config:
    """Read `autograde.toml` (or defaults when `path` is None), apply environment and flags."""
    env = os.environ if env is None else env
    data: dict[str, Any] = {}
    if path:
        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
        except FileNotFoundError:
            raise ConfigError(f"{path}: no such file (run the grader from the course folder, or pass --config)") \
                from None
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{path}: not valid TOML: {e}") from None
    src = path or "defaults"
    values: dict[str, Any] = {}
    exercises: dict[str, ExerciseConfig] = {}
    extra: dict[str, Any] = {}
    for section, body in data.items():
        if section == "exercises":
            exercises = _exercises(body, src, known_exercises)
            continue
        if section in EXTRA_SECTIONS:
            extra[section] = _section_parser(section)(body, src)
            continue
        if section not in SCHEMA:
            known = [*SCHEMA, "exercises", *EXTRA_SECTIONS]
            raise ConfigError(f"{src}: unknown section [{section}]{_suggest(section, known)}")
        if not isinstance(body, dict):
            raise ConfigError(f"{src}: [{section}] must be a table")
        for key, value in body.items():
            if key not in SCHEMA[section]:
                raise ConfigError(f"{src}: unknown key '{key}' in [{section}]{_suggest(key, SCHEMA[section])}; "
                                  f"known keys: {', '.join(SCHEMA[section])}")
            typ, _, desc = SCHEMA[section][key]
            _check_type(value, typ, f"{src}: [{section}] {key} ({desc})")
            values[_FIELD.get((section, key), key)] = _validate(section, key, value, src)
    cfg = Config(**values, exercises=exercises, extra=extra, path=path or "",
                 root=os.path.dirname(os.path.abspath(path)) if path else os.getcwd())
    seed = env.get(cfg.seed_env)
    if seed:
        try:
            cfg = replace(cfg, secret_seed=int(seed, 0))
        except ValueError:
            raise ConfigError(f"environment variable {cfg.seed_env}={seed!r}: the secret seed must be an integer") \
                from None
    if overrides:
        cfg = replace(cfg, **{k: v for k, v in overrides.items() if v is not None})
    return cfg


def _validate(section: str, key: str, value: Any, src: str) -> Any:
    choices = CHOICES.get((section, key))
    if choices:
        bad = [v for v in (value if isinstance(value, list) else [value]) if v not in choices]
        if bad:
            raise ConfigError(f"{src}: [{section}] {key} = {bad[0]!r} is not one of {', '.join(choices)}"
                              f"{_suggest(str(bad[0]), choices)}")
    if isinstance(value, list):
        return tuple(value)
    if key in ("call_timeout", "submission_timeout", "memory_mb", "output_kb") and value <= 0:
        raise ConfigError(f"{src}: [{section}] {key} must be positive, got {value!r}")
    if key == "jobs" and value < 0:
        raise ConfigError(f"{src}: [limits] jobs must be 0 (one per core) or more, got {value!r}")
    return float(value) if key.endswith("timeout") else value


def _exercises(body: Any, src: str, known) -> dict[str, ExerciseConfig]:
    if not isinstance(body, dict):
        raise ConfigError(f"{src}: [exercises] must be a table of [exercises.\"module.function\"] tables")
    out = {}
    for ex_id, table in body.items():
        if known is not None and ex_id not in known:
            raise ConfigError(f"{src}: unknown exercise [exercises.\"{ex_id}\"]{_suggest(ex_id, known)}; "
                              "`grader list` shows the exercise ids")
        if not isinstance(table, dict):
            raise ConfigError(f"{src}: [exercises.\"{ex_id}\"] must be a table (e.g. points = 2)")
        kwargs = {}
        for key, value in table.items():
            if key not in EXERCISE_KEYS:
                raise ConfigError(f"{src}: unknown key '{key}' in [exercises.\"{ex_id}\"]"
                                  f"{_suggest(key, EXERCISE_KEYS)}; known keys: {', '.join(EXERCISE_KEYS)}")
            typ, _, desc = EXERCISE_KEYS[key]
            _check_type(value, typ, f"{src}: [exercises.\"{ex_id}\"] {key} ({desc})")
            if key != "enabled" and value < 0:
                raise ConfigError(f"{src}: [exercises.\"{ex_id}\"] {key} must not be negative, got {value!r}")
            kwargs[key] = float(value) if key != "enabled" else value
        out[ex_id] = ExerciseConfig(**kwargs)
    return out
