"""The class report: what the whole class got right and wrong, from the gradebook's rows.

class_stats(rows) computes every number the report shows (the template computes nothing);
write(path, stats, ...) renders class_report.html.j2 with the charts embedded.
"""
from __future__ import annotations

import statistics
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from grader.frontends.batch import charts
from grader.frontends.batch.gradebook import Row, fingerprint
from grader.reports.text import template
from grader.results import Status

TROUBLE = (Status.CRASHED, Status.TIMEOUT, Status.GRADER_FAULT)
MAX_MISTAKES = 25
MAX_NAMES = 8


@dataclass(frozen=True)
class ExerciseStats:
    id: str
    max_points: float
    students: int
    passed: int
    mean_points: float
    statuses: dict[str, int]

    @property
    def pass_rate(self) -> float:
        return self.passed / self.students if self.students else 0.0


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
    heatmap: tuple[tuple[str, ...], tuple[tuple[float, ...], ...]] = field(default=((), ()))

    @property
    def mean(self) -> float:
        return statistics.fmean(self.scores) if self.scores else 0.0

    @property
    def median(self) -> float:
        return statistics.median(self.scores) if self.scores else 0.0


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
    exercises = tuple(ExerciseStats(
        id=i, max_points=max(e.max_points for e in es), students=len(es), passed=sum(e.passed for e in es),
        mean_points=statistics.fmean(e.points for e in es), statuses=dict(Counter(e.status.value for e in es)))
        for i, es in ((i, by_exercise[i]) for i in ids))
    ranked = sorted(mistakes.items(), key=lambda kv: (-len(set(kv[1])), ids.index(kv[0][0]), kv[0][1]))
    top = tuple(Mistake(ex, fp, explanations[(ex, fp)], len(set(names)), tuple(sorted(set(names)))[:MAX_NAMES])
                for (ex, fp), names in ranked)
    return ClassStats(
        students=len(rows), max_score=max((r.max_score for r in rows), default=0.0),
        scores=tuple(r.final for r in rows), states=dict(Counter(r.state for r in rows)),
        exercises=exercises, mistakes=top, troubles=tuple(troubles),
        performance=tuple(_perf(ex, name, ps) for (ex, name), ps in perf.items() if any(p.ratio for p in ps)),
        full_marks=sum(1 for r in rows if r.max_score and r.final >= r.max_score),
        grader_faults=tuple(r.student for r in rows if r.state == "grader_error"),
        heatmap=_heatmap(rows, ids), late=tuple(r for r in rows if r.late is not None and r.late.flagged))


def _first_line(exercises) -> str:
    message = next((e.message for e in exercises if e.message), "")
    return message.splitlines()[0] if message else ""


def _perf(exercise: str, name: str, results) -> PerfStats:
    ratios = tuple(p.ratio for p in results if p.ratio is not None and p.ratio > 0)
    return PerfStats(exercise, name, results[0].device, ratios,
                     next((p.threshold for p in results if p.threshold), None),
                     sum(p.status is Status.PASSED for p in results))


def _heatmap(rows: list[Row], ids: list[str]):
    ordered = sorted(rows, key=lambda r: (r.score, r.student))[:charts.HEATMAP_MAX_ROWS]
    grid = []
    for r in ordered:
        got = {e.id: (e.points / e.max_points if e.max_points else 0.0) for e in r.result.exercises}
        grid.append(tuple(got.get(i, 0.0) for i in ids))
    return tuple(r.student for r in ordered), tuple(grid)


def render(stats: ClassStats, title: str, settings: dict, notes: list[str] | tuple[str, ...] = (),
           links: tuple[tuple[str, str], ...] = ()) -> str:
    """`links`: (href relative to the report, label) of other pages of the batch (the similarity check)."""
    ids = [e.id for e in stats.exercises]
    images = dict.fromkeys(("histogram", "pass_rates", "heatmap", "performance"), "")
    if stats.students:
        images["histogram"] = charts.score_histogram(list(stats.scores), stats.max_score)
        images["pass_rates"] = charts.pass_rates(ids, [e.pass_rate for e in stats.exercises])
        images["heatmap"] = charts.score_heatmap(list(stats.heatmap[0]), ids, [list(r) for r in stats.heatmap[1]])
    if stats.performance:
        images["performance"] = charts.performance(
            [f"{p.exercise} — {p.name}" for p in stats.performance], [list(p.ratios) for p in stats.performance],
            [p.threshold for p in stats.performance])
    return template("class_report.html.j2").render(s=stats, images=images, title=title, settings=settings,
                       notes=list(notes), generated=time.strftime("%Y-%m-%d %H:%M"),
                       max_mistakes=MAX_MISTAKES, links=list(links))
