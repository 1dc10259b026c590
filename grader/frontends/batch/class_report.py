"""The class report: what the whole class got right and wrong, from the gradebook's rows.

class_stats(rows) computes every number the report shows (the template computes nothing):
per module (points, a distribution of the students' share of its points), per exercise (pass
rate, statuses, the known mistakes diagnosed and how many students made each), per student (a
row of the student x exercise grid, linked to their feedback), and the students whose submission
crashed, timed out, could not be read or met a grader fault, one entry per student.
render(stats, ...) fills class_report.html.j2; its only script (sorting tables) is
class_report.js, allowed by the page's Content-Security-Policy by its hash and nothing else.
"""
from __future__ import annotations

import base64
import hashlib
import os
import statistics
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from grader.frontends.batch import charts
from grader.frontends.batch.discover import folder_name
from grader.frontends.batch.gradebook import Row, fingerprint
from grader.reports import text
from grader.reports.text import template
from grader.results import ExerciseId, Status

TROUBLE = (Status.CRASHED, Status.TIMEOUT, Status.GRADER_FAULT)
MAX_MISTAKES = 25            # rows of the mistakes table, the first SHOWN_MISTAKES unfolded
SHOWN_MISTAKES = 10
MAX_NAMES = 8
MAX_GRID_ROWS = 400          # students in the student x exercise grid (the lowest totals first)
LEVELS = 5                   # colour steps of a grid cell: 0, under 1/3, under 2/3, under full, full
# A student's share of a module's points, in bands: (label, upper bound exclusive); full is its own.
BANDS = (("0", 0.0), ("<25%", 0.25), ("<50%", 0.5), ("<75%", 0.75), ("<100%", 1.0), ("100%", None))
SCRIPT = os.path.join(os.path.dirname(text.__file__), "templates", "class_report.js")   # beside the template


@dataclass(frozen=True)
class ExerciseStats(ExerciseId):
    id: str
    max_points: float
    students: int
    passed: int
    mean_points: float
    statuses: dict[str, int]
    mistakes: tuple[tuple[str, int], ...] = ()      # (known mistake, students), most frequent first

    @property
    def pass_rate(self) -> float:
        return self.passed / self.students if self.students else 0.0


@dataclass(frozen=True)
class ModuleStats:
    name: str
    exercises: tuple[str, ...]
    max_points: float
    mean_points: float
    full: int                       # students with every exercise of the module passed
    bands: tuple[int, ...]          # students per band of BANDS (their share of the module's points)


@dataclass(frozen=True)
class Mistake:
    exercise: str
    fingerprint: str
    explanation: str
    students: int
    names: tuple[str, ...]


@dataclass(frozen=True)
class Trouble:
    student: str
    exercise: str           # "" for the whole submission
    status: str             # crashed, timeout, grader fault (one exercise); unreadable, grader error (all)
    message: str


@dataclass(frozen=True)
class TroubleGroup:
    """One student's troubles together: a syntax error that breaks eight exercises is one entry."""

    student: str
    what: str                       # "unreadable" or "crashed in 3, timeout in 1"
    statuses: tuple[str, ...]       # each status once ("crashed", "timeout")
    exercises: tuple[str, ...]      # empty for the whole submission
    messages: tuple[str, ...]       # each different first line once


@dataclass(frozen=True)
class Cell:
    exercise: str
    status: str
    points: float
    max_points: float
    level: int                      # colour step, 0 (no points) .. LEVELS - 1 (full points)


@dataclass(frozen=True)
class StudentLine:
    """A student's row of the grid and of the students table."""

    student: str
    link: str                       # their feedback, relative to the report
    score: float                    # after any late penalty
    max_score: float
    state: str
    modules: tuple[float, ...]      # points per module, in ClassStats.modules' order
    cells: tuple[Cell, ...]         # in ClassStats.exercises' order


@dataclass(frozen=True)
class PerfStats:
    exercise: str
    name: str
    device: str
    ratios: tuple[float, ...]
    threshold: float | None
    passed: int

    @property
    def median(self) -> float:
        return statistics.median(self.ratios)


@dataclass(frozen=True)
class ClassStats:
    students: int
    max_score: float
    scores: tuple[float, ...]
    states: dict[str, int]
    exercises: tuple[ExerciseStats, ...]
    mistakes: tuple[Mistake, ...]
    troubles: tuple[Trouble, ...]
    performance: tuple[PerfStats, ...] = ()
    full_marks: int = 0
    grader_faults: tuple[str, ...] = ()     # students whose row the grader failed on (no grade yet)
    late: tuple[Row, ...] = ()              # rows late, past the cut-off or without a submission time ([deadline])
    modules: tuple[ModuleStats, ...] = ()
    grid: tuple[StudentLine, ...] = ()      # the lowest totals first, at most MAX_GRID_ROWS
    links: dict[str, str] = field(default_factory=dict)     # student -> their feedback, relative to the report

    @property
    def mean(self) -> float:
        return statistics.fmean(self.scores) if self.scores else 0.0

    @property
    def median(self) -> float:
        return statistics.median(self.scores) if self.scores else 0.0

    @property
    def trouble_groups(self) -> tuple[TroubleGroup, ...]:
        by_student: dict[str, list[Trouble]] = defaultdict(list)
        for t in self.troubles:
            by_student[t.student].append(t)
        return tuple(_group(student, ts) for student, ts in by_student.items())


def feedback_link(student: str) -> str:
    """The student's feedback page as batch writes it (grader.frontends.batch.outputs), from the report."""
    return f"students/{folder_name(student)}/feedback.html"


def class_stats(rows: list[Row]) -> ClassStats:
    ids: list[str] = []
    by_exercise: dict[str, list] = defaultdict(list)
    mistakes: dict[tuple[str, str], list[str]] = defaultdict(list)
    explanations: dict[tuple[str, str], str] = {}
    troubles: list[Trouble] = []
    perf: dict[tuple[str, str], list] = defaultdict(list)
    for row in rows:
        faults = row.result.grader_faults
        whole = row.state == "unreadable" or (row.state == "grader_error" and len(faults) == len(row.result.exercises))
        if whole:       # else the exercises the grader failed on are listed one by one, below
            troubles.append(Trouble(row.student, "", row.state.replace("_", " "),
                                    row.message or "; ".join(row.result.errors) or _first_line(row.result.exercises)))
        for e in row.result.exercises:
            if e.id not in by_exercise:
                ids.append(e.id)
            by_exercise[e.id].append(e)
            if e.diagnosis:
                key = (e.id, fingerprint(e.diagnosis))
                mistakes[key].append(row.student)
                explanations.setdefault(key, e.diagnosis.split(":", 1)[1].strip() if ":" in e.diagnosis else "")
            if e.status in TROUBLE and not whole:
                troubles.append(Trouble(row.student, e.id, e.status.value, _first_line([e])))
            for p in e.performance:
                perf[(e.id, p.name)].append(p)
    ranked = sorted(mistakes.items(), key=lambda kv: (-len(set(kv[1])), ids.index(kv[0][0]), kv[0][1]))
    top = tuple(Mistake(ex, fp, explanations[(ex, fp)], len(set(names)), tuple(sorted(set(names)))[:MAX_NAMES])
                for (ex, fp), names in ranked)
    exercises = tuple(ExerciseStats(
        id=i, max_points=max(e.max_points for e in es), students=len(es), passed=sum(e.passed for e in es),
        mean_points=statistics.fmean(e.points for e in es), statuses=dict(Counter(e.status.value for e in es)),
        mistakes=tuple((m.fingerprint, m.students) for m in top if m.exercise == i))
        for i, es in ((i, by_exercise[i]) for i in ids))
    modules = _modules(rows, exercises)
    return ClassStats(
        students=len(rows), max_score=max((r.max_score for r in rows), default=0.0),
        scores=tuple(r.final for r in rows), states=dict(Counter(r.state for r in rows)),
        exercises=exercises, mistakes=top, troubles=tuple(troubles),
        performance=tuple(_perf(ex, name, ps) for (ex, name), ps in perf.items() if any(p.ratio for p in ps)),
        full_marks=sum(1 for r in rows if r.max_score and r.final >= r.max_score),
        grader_faults=tuple(r.student for r in rows if r.state == "grader_error"),
        late=tuple(r for r in rows if r.late is not None and r.late.flagged),
        modules=modules, grid=_grid(rows, exercises, modules),
        links={r.student: feedback_link(r.student) for r in rows})


def _first_line(exercises) -> str:
    message = next((e.message for e in exercises if e.message), "")
    return message.splitlines()[0] if message else ""


def _group(student: str, troubles: list[Trouble]) -> TroubleGroup:
    whole = [t for t in troubles if not t.exercise]
    if whole:
        what = whole[0].status
    else:
        counts = Counter(t.status for t in troubles)
        what = ", ".join(f"{status} in {n}" for status, n in counts.items())
    return TroubleGroup(student, what, tuple(dict.fromkeys(t.status for t in troubles)),
                        tuple(t.exercise for t in troubles if t.exercise),
                        tuple(dict.fromkeys(t.message for t in troubles if t.message)))


def _share(points: float, of: float) -> float:
    return points / of if of else 0.0


def _band(share: float) -> int:
    return next(i for i, (_, upper) in enumerate(BANDS) if upper is None or (share < upper if upper else share <= 0))


def _modules(rows: list[Row], exercises: tuple[ExerciseStats, ...]) -> tuple[ModuleStats, ...]:
    names = list(dict.fromkeys(e.module for e in exercises))
    out = []
    for name in names:
        ids = tuple(e.id for e in exercises if e.module == name)
        of = sum(e.max_points for e in exercises if e.module == name)
        got = [sum(e.points for e in r.result.exercises if e.module == name) for r in rows]
        full = sum(all(e.passed for e in r.result.exercises if e.module == name) for r in rows)
        bands = Counter(_band(_share(g, of)) for g in got)
        out.append(ModuleStats(name, ids, of, statistics.fmean(got) if got else 0.0, full,
                               tuple(bands.get(i, 0) for i in range(len(BANDS)))))
    return tuple(out)


def _level(points: float, of: float) -> int:
    share = _share(points, of)
    return LEVELS - 1 if share >= 1 else 0 if share <= 0 else 1 + min(LEVELS - 3, int(share * (LEVELS - 2)))


def _grid(rows: list[Row], exercises: tuple[ExerciseStats, ...], modules: tuple[ModuleStats, ...]):
    ordered = sorted(rows, key=lambda r: (r.final, r.student))[:MAX_GRID_ROWS]
    lines = []
    for r in ordered:
        got = {e.id: e for e in r.result.exercises}
        cells = tuple(Cell(x.id, got[x.id].status.value, got[x.id].points, got[x.id].max_points,
                           _level(got[x.id].points, got[x.id].max_points)) if x.id in got
                      else Cell(x.id, "missing", 0.0, x.max_points, 0) for x in exercises)
        per_module = tuple(round(sum(e.points for e in r.result.exercises if e.module == m.name), 4) for m in modules)
        lines.append(StudentLine(r.student, feedback_link(r.student), r.final, r.max_score, r.state, per_module, cells))
    return tuple(lines)


def _perf(exercise: str, name: str, results) -> PerfStats:
    ratios = tuple(p.ratio for p in results if p.ratio is not None and p.ratio > 0)
    return PerfStats(exercise, name, results[0].device, ratios,
                     next((p.threshold for p in results if p.threshold), None),
                     sum(p.status is Status.PASSED for p in results))


def script_hash() -> str:
    """The CSP source that allows class_report.js inline (its sha256), and no other script."""
    with open(SCRIPT, "rb") as f:
        return "sha256-" + base64.b64encode(hashlib.sha256(f.read()).digest()).decode("ascii")


def render(stats: ClassStats, title: str, settings: dict, notes: list[str] | tuple[str, ...] = (),
           links: tuple[tuple[str, str], ...] = ()) -> str:
    """`links`: (href relative to the report, label) of other pages of the batch (the similarity check)."""
    images = dict.fromkeys(("histogram", "performance"), "")
    if stats.students:
        images["histogram"] = charts.score_histogram(list(stats.scores), stats.max_score)
    if stats.performance:
        images["performance"] = charts.performance(
            [f"{p.exercise} — {p.name}" for p in stats.performance], [list(p.ratios) for p in stats.performance],
            [p.threshold for p in stats.performance])
    return template("class_report.html.j2").render(s=stats, images=images, title=title, settings=settings,
                       notes=list(notes), generated=time.strftime("%Y-%m-%d %H:%M"),
                       max_mistakes=MAX_MISTAKES, shown_mistakes=SHOWN_MISTAKES, links=list(links),
                       bands=[label for label, _ in BANDS],
                       levels=LEVELS, script_hash=script_hash(), grid_cut=stats.students > len(stats.grid))
