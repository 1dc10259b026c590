"""The course's configuration, `autograde.toml`, as one typed object.

Precedence, highest first: command-line flag > environment > `autograde.toml` (per exercise,
then per section) > the defaults below. Every key has a one-line description; an unknown key
or a bad value raises ConfigError naming the key, the file and the fix. An override (a
command-line flag, grader.api's `overrides`, a notebook's check(...) keyword) is validated by the
same code as the file's key it stands for, and its error names the flag (validate_overrides).
"""
from __future__ import annotations

import difflib
import math
import os
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from grader.errors import ConfigError
from grader.reports import FORMATS
from grader.toml_file import read_toml

__all__ = ["Config", "ConfigError", "ExerciseConfig", "exercise_settings", "load_config", "validate_overrides"]

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
        "jobs": (int, 0, "exercises graded at once (0: one more than the CPU cores)"),
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
    # [deadline] (grader.deadlines.config.DeadlinePolicy), None: no due date. Not in `extra`: a due
    # date changes the penalty, never the raw grade, so changing it regrades nothing.
    deadline: Any = None

    def exercise(self, exercise_id: str) -> ExerciseConfig:
        return self.exercises.get(exercise_id, ExerciseConfig())

    @property
    def effective_jobs(self) -> int:
        """0: one more than the cores. An exercise's thread waits while its child starts, imports and
        ends, so one per core leaves cores idle (`grader check` of solutions/ on 2 cores, 5 alternated
        runs: 5.35 s with 3, 5.79 s with 2); the children of one submission share its memory budget
        however many run at once (grader.sandbox.budgets)."""
        return self.jobs or (os.cpu_count() or 1) + 1

    def summary(self) -> dict[str, Any]:
        """The resolved values that report headers print. The configuration file as it was named
        (relative to where the grader ran), or by its file name alone when named by an absolute
        path: a student's feedback never shows the grading machine's folders."""
        shown = os.path.basename(self.path) if self.path and os.path.isabs(self.path) else self.path
        return {"config": shown or "(defaults)", "call_timeout_s": self.call_timeout,
                "submission_timeout_s": self.submission_timeout, "memory_mb": self.memory_mb,
                "output_kb": self.output_kb, "jobs": self.effective_jobs,
                "hidden_cases": self.secret_seed is not None}


_FIELD = {("course", "name"): "course_name", ("hidden", "seed_env"): "seed_env"}
# Config field -> its (section, key): what an override of the field is validated as.
KEY_OF = {_FIELD.get((section, key), key): (section, key) for section, keys in SCHEMA.items() for key in keys}

# The range of each number, in words for the message: key (of a section or of an exercise) -> (test, limit).
LIMITS: dict[str, tuple[Any, str]] = {
    "call_timeout": (lambda v: v > 0, "more than 0 seconds"),
    "submission_timeout": (lambda v: v > 0, "more than 0 seconds"),
    "memory_mb": (lambda v: v > 0, "more than 0 MiB"),
    "output_kb": (lambda v: v > 0, "more than 0 KiB"),
    "jobs": (lambda v: v >= 0, "0 or more"),
    "points": (lambda v: v >= 0, "0 or more"),
    "atol": (lambda v: v >= 0, "0 or more"),
    "rtol": (lambda v: v >= 0, "0 or more"),
}

# Sections other stages validate themselves: section -> "module:function(body, source) -> value",
# imported only when the section is present (so reading the config stays cheap).
EXTRA_SECTIONS: dict[str, str] = {"performance": "grader.timing.config:parse_section"}
DEADLINE_SECTION = "grader.deadlines.config:parse_section"     # [deadline] -> Config.deadline


def _section_parser(section: str):
    import importlib
    module, _, function = (DEADLINE_SECTION if section == "deadline" else EXTRA_SECTIONS[section]).partition(":")
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
                overrides: Mapping[str, Any] | None = None, known_exercises=None,
                flags: Mapping[str, str] | None = None) -> Config:
    """Read `autograde.toml` (or defaults when `path` is None), apply environment and overrides.

    `overrides`: Config fields (None values ignored), validated as their keys in the file are;
    `flags`: the command-line flag each came from (field -> "--timeout"), for the messages."""
    env = os.environ if env is None else env
    given = validate_overrides(overrides or {}, flags)
    data: dict[str, Any] = {}
    if path:
        data = read_toml(path)
    src = path or "defaults"
    values: dict[str, Any] = {}
    exercises: dict[str, ExerciseConfig] = {}
    extra: dict[str, Any] = {}
    deadline = None
    for section, body in data.items():
        if section == "exercises":
            exercises = _exercises(body, src, known_exercises)
            continue
        if section in EXTRA_SECTIONS:
            extra[section] = _section_parser(section)(body, src)
            continue
        if section == "deadline":
            deadline = _section_parser(section)(body, src)
            continue
        if section not in SCHEMA:
            known = [*SCHEMA, "exercises", *EXTRA_SECTIONS, "deadline"]
            raise ConfigError(f"{src}: unknown section [{section}]{_suggest(section, known)}")
        if not isinstance(body, dict):
            raise ConfigError(f"{src}: [{section}] must be a table")
        for key, value in body.items():
            if key not in SCHEMA[section]:
                raise ConfigError(f"{src}: unknown key '{key}' in [{section}]{_suggest(key, SCHEMA[section])}; "
                                  f"known keys: {', '.join(SCHEMA[section])}")
            values[_FIELD.get((section, key), key)] = _value(section, key, value, f"{src}: [{section}] {key}")
    cfg = Config(**values, exercises=exercises, extra=extra, deadline=deadline, path=path or "",
                 root=os.path.dirname(os.path.abspath(path)) if path else os.getcwd())
    seed = env.get(cfg.seed_env)
    if seed:
        try:
            cfg = replace(cfg, secret_seed=int(seed, 0))
        except ValueError:
            raise ConfigError(f"environment variable {cfg.seed_env}={seed!r}: the secret seed must be an integer") \
                from None
    return replace(cfg, **given) if given else cfg


def validate_overrides(overrides: Mapping[str, Any], flags: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The overrides that are given (not None), each checked as its key in autograde.toml is.

    Cheap (no catalog, no torch): a command calls it before loading anything, so that a bad flag
    fails at once. The message names the flag from `flags` (field -> "--timeout"), else the key."""
    out: dict[str, Any] = {}
    for name, value in overrides.items():
        if value is None:
            continue
        flag = (flags or {}).get(name, "")
        if name == "secret_seed":        # not a key of the file: it comes from the environment or a flag
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{flag or 'secret_seed'}: the secret seed must be an integer, got {value!r}")
            out[name] = value
            continue
        if name not in KEY_OF:
            raise ConfigError(f"{flag or name}: not a setting an override can change{_suggest(name, KEY_OF)}; "
                              f"these can: {', '.join(KEY_OF)}")
        section, key = KEY_OF[name]
        value = list(value) if isinstance(value, tuple) else value
        out[name] = _value(section, key, value, flag or f"override of [{section}] {key}", flag=bool(flag))
    return out


def _value(section: str, key: str, value: Any, where: str, flag: bool = False) -> Any:
    """A value of [section] key, checked. `where` names it: the file and key, or a flag."""
    typ, _, desc = SCHEMA[section][key]
    _check_type(value, typ, f"{where} ({desc})")
    choices = CHOICES.get((section, key))
    if choices:
        bad = [v for v in (value if isinstance(value, list) else [value]) if v not in choices]
        if bad:
            said = f"unknown {where} {bad[0]!r}: choose from" if flag else f"{where} = {bad[0]!r} is not one of"
            raise ConfigError(f"{said} {', '.join(choices)}{_suggest(str(bad[0]), choices)}")
    if isinstance(value, list):
        return tuple(value)
    if key in LIMITS:
        in_range(key, value, f"{where} {value:g}" if flag else f"{where} = {value!r}", desc)
    return float(value) if key.endswith("timeout") else value


def range_problem(value: float, rule: tuple[Any, str]) -> str | None:
    """What is wrong with a number setting, or None: every number a setting holds (a limit, a tolerance, a
    budget, a penalty) must be finite (TOML and float() read nan and inf) and pass its rule, (test, limit
    in words). One check for every section and flag."""
    test, limit = rule
    if not math.isfinite(value):
        return f"must be a finite number, {limit}"
    return None if test(value) else f"must be {limit}"


def in_range(key: str, value: float, named: str, desc: str) -> None:
    """ConfigError unless `value` is finite and within LIMITS[key]; `named` is what it is
    ("--jobs -1"), `desc` what it means."""
    problem = range_problem(value, LIMITS[key])
    if problem:
        raise ConfigError(f"{named}: {problem} — {desc}")


def exercise_settings(table: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The keys of one [exercises."<id>"] table (or a notebook's check(...) keywords), checked;
    `where` names the table ('autograde.toml: [exercises."attention.causal_mask"]')."""
    out = {}
    for key, value in table.items():
        if key not in EXERCISE_KEYS:
            raise ConfigError(f"{where}: unknown key '{key}'{_suggest(key, EXERCISE_KEYS)}; "
                              f"known keys: {', '.join(EXERCISE_KEYS)}")
        typ, _, desc = EXERCISE_KEYS[key]
        _check_type(value, typ, f"{where} {key} ({desc})")
        if key != "enabled":
            in_range(key, value, f"{where} {key} = {value!r}", desc)
        out[key] = float(value) if key != "enabled" else value
    return out


def _exercises(body: Any, src: str, known) -> dict[str, ExerciseConfig]:
    if not isinstance(body, dict):
        raise ConfigError(f"{src}: [exercises] must be a table of [exercises.\"module.function\"] tables")
    out = {}
    for ex_id, table in body.items():
        inner = next((k for k, v in table.items() if isinstance(v, dict)), None) if isinstance(table, dict) else None
        if inner is not None and "." not in ex_id:     # [exercises.neurons.sign]: TOML's nested tables
            raise ConfigError(f"{src}: [exercises.{ex_id}.{inner}] is read by TOML as a table inside a table; "
                              f"quote the exercise id: [exercises.\"{ex_id}.{inner}\"]")
        if known is not None and ex_id not in known:
            raise ConfigError(f"{src}: unknown exercise [exercises.\"{ex_id}\"]{_suggest(ex_id, known)}; "
                              "`grader list` shows the exercise ids")
        if not isinstance(table, dict):
            raise ConfigError(f"{src}: [exercises.\"{ex_id}\"] must be a table (e.g. points = 2)")
        out[ex_id] = ExerciseConfig(**exercise_settings(table, f"{src}: [exercises.\"{ex_id}\"]"))
    return out
