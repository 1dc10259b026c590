"""pytest front-end: `pytest` in a student's copy of the course grades the exercises.

One test item per exercise, `exercises/attention.py::causal_mask`, marked `grader`, with the
module (`attention`) and the exercise id (`attention.causal_mask`) as markers:
`pytest -m attention`, `pytest -k causal_mask`, `pytest -m "not grader"`. A failing item shows
the grader's feedback (what failed, by how much, the mistake it looks like), not a traceback;
--junitxml works as for any test (points as properties); the terminal summary ends with the points.

Activation (ini option `grader_collect`, default `auto`): the plugin owns the `.py` files of a
folder that the nearest autograde.toml above it names as `[course] submission`; a file named
after a module of the catalog has one item per exercise, any other has none. Nothing else is
touched: the project's own tests (tests/, which is not the submission folder) collect as before,
and nothing heavier than a stat per folder runs unless an exercise file is collected.
`grader_collect = off` (or `-o grader_collect=off`, or `-p no:grader`) switches it off.

The student's code runs only in the grader's sandbox, never in the pytest process, by whichever
route pytest reaches the file (`pytest exercises`, `pytest exercises/attention.py`, `::causal_mask`,
-k, -m, --doctest-modules, `python_files = *.py`): the submission folder is a plain directory
collector, never a Package (whose setup imports its `__init__.py`), and for each of its files the
plugin's collector replaces whatever other plugins made of it (pytest's python plugin makes a
Module, which imports the file, for a file named on the command line; doctest makes a
DoctestModule). A file that does not parse is graded like any other: the grader's feedback, no
collection error. A `conftest.py` is pytest's own: pytest imports it in its process before any
plugin is asked, so in a copy the student controls, pytest's outcome is not a grade (docs/ci.md).

Grading is one grader.api.grade call (the sandboxed engine) per submission folder and session, for all
exercise items selected after -m/-k/deselection, on the first item's run; every item reads
its record from that one SubmissionResult.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _pytest._code.code import ReprFileLocation, TerminalRepr

from grader import api                # light: the catalog and torch load when an exercise file is collected
from grader.toml_file import read_toml
from grader.errors import ConfigError
from grader.reports.junit import failure_text, headline
from grader.results import Status

MARKER = "grader"
__all__ = ["pytest_addoption", "pytest_configure", "pytest_collect_directory", "pytest_collect_file",
           "pytest_terminal_summary", "ExerciseFile", "ExerciseItem", "ExerciseFailed", "MARKER"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("grader_collect", "grade the course's exercise modules as tests: auto (where an autograde.toml "
                  "names their folder as [course] submission) or off", default="auto")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: an exercise graded by the course's grader (grader.pytest_plugin)")
    config.stash[_STATE] = _State()


@dataclass
class _Course:
    config: Any                                   # grader.config.Config
    specs: dict[str, list[Any]]                   # module -> [ExerciseSpec]


@dataclass
class _State:
    owners: dict[Path, Path | None] = field(default_factory=dict)   # folder -> its autograde.toml, when ours
    courses: dict[Path, _Course] = field(default_factory=dict)
    results: dict[Path, Any] = field(default_factory=dict)          # submission folder -> SubmissionResult | Exception

    def owner(self, folder: Path) -> Path | None:
        if folder not in self.owners:
            toml = next((d / "autograde.toml" for d in (folder, *folder.parents) if (d / "autograde.toml").is_file()),
                        None)
            self.owners[folder] = toml if toml and _submission_folder(toml) == folder.resolve() else None
        return self.owners[folder]

    def course(self, toml: Path) -> _Course:
        if toml not in self.courses:
            from grader.catalog import catalog
            config = api.load(str(toml))
            by_module: dict[str, list[Any]] = {}
            for spec in catalog().values():
                if config.exercise(spec.id).enabled:
                    by_module.setdefault(spec.module, []).append(spec)
            self.courses[toml] = _Course(config, by_module)
        return self.courses[toml]


_STATE = pytest.StashKey[_State]()


def _submission_folder(toml: Path) -> Path:
    """`[course] submission` of this autograde.toml, read cheaply (validation comes when grading)."""
    try:
        folder = read_toml(str(toml)).get("course", {}).get("submission", "exercises")
    except ConfigError:
        folder = "exercises"      # a broken file is reported by load_config when its exercises are collected
    return (toml.parent / str(folder)).resolve()


def _owner(folder: Path, config: pytest.Config) -> Path | None:
    """The autograde.toml naming `folder` as its submission folder, when collection is on."""
    if config.getini("grader_collect").strip().lower() in ("off", "false", "0"):
        return None
    return config.stash[_STATE].owner(folder)


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent: pytest.Collector):
    """The submission folder is a plain directory even with an `__init__.py`: pytest's Package
    would import that file to look for setup_module."""
    return pytest.Dir.from_parent(parent, path=path) if _owner(path, parent.config) else None


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    """A submission file gets the plugin's collector only, in place of what other plugins made
    of it (a python Module or a DoctestModule would import it in this process)."""
    collectors = yield
    toml = _owner(file_path.parent, parent.config) if file_path.suffix == ".py" else None
    return [ExerciseFile.from_parent(parent, path=file_path, toml=toml)] if toml else collectors


class ExerciseFile(pytest.File):
    """A student's module: one item per exercise of the catalog that lives in it."""

    def __init__(self, *, toml: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.toml = toml

    def collect(self):
        from grader.pipeline.where import function_line
        try:
            course = self.config.stash[_STATE].course(self.toml)
        except ConfigError as e:
            raise self.CollectError(f"grader: {e}") from None
        specs = course.specs.get(self.path.stem, [])
        source = self.path.read_text(encoding="utf-8", errors="replace") if specs else ""
        for spec in specs:
            item = ExerciseItem.from_parent(self, name=spec.function, exercise_id=spec.id,
                                            line=function_line(source, spec.function))
            for mark in (MARKER, spec.module, spec.id):
                self.config.addinivalue_line("markers", f"{mark}: exercises of the course's grader")
                item.add_marker(mark)
            yield item


class ExerciseFailed(Exception):
    """Raised by an item whose exercise did not pass; carries the exercise's record."""

    def __init__(self, exercise: Any) -> None:
        super().__init__(exercise.id)
        self.exercise = exercise


class _Feedback(TerminalRepr):
    """The grader's feedback as a failure report: the text, and a one-line message for summaries."""

    def __init__(self, text: str, headline: str, path: str, line: int) -> None:
        self.text = text
        self.reprcrash = ReprFileLocation(path, line, headline)

    def toterminal(self, tw) -> None:
        for i, line in enumerate(self.text.splitlines()):
            tw.line(line, red=i == 0, bold=i == 0)


class ExerciseItem(pytest.Item):
    def __init__(self, *, exercise_id: str, line: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.exercise_id = exercise_id
        self.line = line

    def runtest(self) -> None:
        e = _exercise(self)
        self.user_properties += [("points", f"{e.points:g}"), ("max_points", f"{e.max_points:g}")]
        if e.status is Status.SKIPPED:
            pytest.skip(e.message or "skipped by the grader")
        if not e.passed:
            raise ExerciseFailed(e)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ExerciseFailed):
            e = excinfo.value.exercise
            where = os.path.relpath(self.path, self.config.rootpath) + (f":{self.line}" if self.line else "")
            text = f"{e.id}: {e.points:g} / {e.max_points:g} points\n{failure_text(e, location=False)}\n" \
                   f"your function: {where}"
            return _Feedback(text, headline(e), str(self.path), self.line)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, max(self.line - 1, 0), self.exercise_id


def _exercise(item: ExerciseItem):
    """This item's record, grading its submission folder first if no item has yet."""
    state = item.config.stash[_STATE]
    folder = item.path.parent
    if folder not in state.results:
        state.results[folder] = _grade(item, state)
    result = state.results[folder]
    if isinstance(result, Exception):
        raise result
    found = [e for e in result.exercises if e.id == item.exercise_id]
    if not found:
        raise RuntimeError(f"grader: {item.exercise_id} was not graded")
    return found[0]


def _grade(item: ExerciseItem, state: _State):
    course = state.course(item.parent.toml)
    folder = item.path.parent
    ids = [i.exercise_id for i in item.session.items if isinstance(i, ExerciseItem) and i.path.parent == folder]
    try:
        return api.grade(str(folder), ids, course.config)
    except Exception as e:          # the grader itself broke: every item of the folder reports it
        return RuntimeError(f"the grader failed on {folder}: {type(e).__name__}: {e}")


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if not state:
        return
    for folder, result in state.results.items():
        if isinstance(result, Exception):
            continue
        name = os.path.relpath(folder, config.rootpath)
        terminalreporter.write_sep("=", f"grader: {result.score:g} / {result.max_score:g} points for {name}",
                                   green=result.all_passed, red=not result.all_passed, bold=True)
        for module, exercises in result.modules().items():
            terminalreporter.write_line(f"  {module}: {sum(e.points for e in exercises):g} / "
                                        f"{sum(e.max_points for e in exercises):g} points, "
                                        f"{sum(e.passed for e in exercises)} of {len(exercises)} exercises passed")
        for err in result.errors:
            terminalreporter.write_line(f"  ! {err}", red=True)
