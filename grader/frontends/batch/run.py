"""`grader batch`, composed: a whole class graded in parallel, resumable, with a class report.

Steps, in order:
  1. discover the students in SUBMISSIONS and fingerprint each submission (grader.frontends.batch.discover);
  2. open the gradebook in --out; a student whose row matches this content and these settings is
     skipped (unless --force), except a `grader_error` row (the grader failed on the submission, or on
     one of its exercises: a grader fault), which is always graded again (grader.frontends.batch.gradebook);
  3. grade the rest with an executor (grader.frontends.batch.executors): warm local workers, one Sandbox each
     (grader.frontends.batch.workers), or tasks on a Dask cluster (grader.frontends.batch.cluster); as each
     result comes back the parent writes the student's feedback files, then commits the row
     (grader.frontends.batch.outputs): the same code whichever executor graded it;
  4. rewrite any feedback file a killed run left missing, then grades.csv and class_report.html
     from the gradebook's rows (grader.frontends.batch.class_report);
  5. hand the scores and the submission times to nbgrader's gradebook when asked (grader.frontends.batch.to_nbgrader,
     through grader.frontends.notebooks.nbgrader_export, if installed).
"""
from __future__ import annotations

import fcntl
import glob
import hashlib
import importlib
import importlib.util
import json
import os
import time
from dataclasses import dataclass, field, replace
from typing import TextIO

from grader import __version__
from grader.api import refuse_disabled
from grader.pipeline import scoring
from grader.frontends.batch import class_report, late, outputs, to_nbgrader
from grader.frontends.batch.discover import Entry, content_hash, discover
from grader.frontends.batch.gradebook import Gradebook, Row
from grader.frontends.batch.progress import Progress
from grader.frontends.batch.executors import BatchError, Done, Outcome, Task, choose, parse
from grader.catalog import select
from grader.config import Config
from grader.results import Status, SubmissionResult

NBGRADER_MODULE = "grader.frontends.notebooks.nbgrader_export"


@dataclass(frozen=True)
class Options:
    submissions: str
    out: str
    names: tuple[str, ...] = ()
    jobs: int = 0                       # workers (submissions at once); 0: one per core
    force: bool = False
    assignment: str | None = None
    nbgrader_db: str | None = None
    similarity: bool = False            # also compare the submissions' code (grader similarity), after grading
    # Exercises at once within a worker; every row records it (its settings' "jobs"), and the local
    # pool and a cluster grade with the same number, so their rows are equal. On 2 cores, `grader batch
    # --jobs 2` of the same class (2026-12, alternated): attention alone, 200 submissions, 2 x 1 and
    # 2 x 2 took 35.5-35.9 s each; the full curriculum, 120 submissions, 2 x 1 took 200.2-200.3 s
    # and 383 busy core-s against 203.7-205.8 s and 401-405 for 2 x 2. Two at a time stays: it is
    # 2-3% slower there, but a class smaller than the pool (one late submission regraded) would leave
    # cores idle with one.
    exercise_jobs: int = 2
    scheduler: str | None = None        # tcp://HOST:PORT of a running Dask scheduler
    cluster: str | None = None          # local:N: a Dask LocalCluster of N workers, started here
    shared_fs: bool = False             # cluster workers read the submissions' paths (else: content travels)
    no_wait_gpu: bool = False           # cluster: grade GPU performance checks' tasks anywhere, without CUDA


@dataclass
class Summary:
    students: int = 0
    graded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    not_full_marks: list[str] = field(default_factory=list)   # graded now, final score below the maximum
    crashed: list[str] = field(default_factory=list)          # an exercise crashed or timed out
    unreadable: list[str] = field(default_factory=list)
    grader_errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    out: str = ""


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def settings_hash(config: Config, exercise_ids: list[str], cuda: bool = True) -> str:
    """What, besides the submission, decides its grade and feedback files (`cuda` False: graded
    with --no-wait-gpu, whose rows a run that waits for GPU workers grades again)."""
    seed = None if config.secret_seed is None else hashlib.sha256(str(config.secret_seed).encode()).hexdigest()
    data = {"exercises": exercise_ids, "call_timeout": config.call_timeout, "memory_mb": config.memory_mb,
            "submission_timeout": config.submission_timeout, "output_kb": config.output_kb,
            "per_exercise": {k: vars(v) for k, v in sorted(config.exercises.items())},
            "secret_seed_sha256": seed, "visibility": config.visibility, "grader": __version__,
            "other_sections": config.extra}        # e.g. [performance], owned by other stages
    if not cuda:
        data["cuda"] = False
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def nbgrader_export():
    """grader.frontends.notebooks.nbgrader_export, or BatchError when it is not installed."""
    if importlib.util.find_spec(NBGRADER_MODULE) is None:
        raise BatchError("nbgrader support is not installed (no grader.frontends.notebooks.nbgrader_export module): "
                         "--nbgrader-db needs it; grade without --nbgrader-db, or install the nbgrader front-end")
    return importlib.import_module(NBGRADER_MODULE)


def run_batch(options: Options, config: Config, stream: TextIO | None = None) -> Summary:
    """Grade a class (see the module docstring for the steps); results are committed as they come."""
    start = time.monotonic()
    if os.path.realpath(options.out) == os.path.realpath(options.submissions):
        raise BatchError(f"--out {options.out} is the submissions folder itself: the next run would read its "
                         "feedback folders as students; write beside it, e.g. "
                         f"--out {os.path.normpath(options.submissions)}-graded")
    export = _check_nbgrader(options)
    deadline = late.prepare(config)      # [deadline] and its CSVs, checked before grading (batch/late.py)
    specs = select(list(options.names))
    refuse_disabled(options.names, specs, config)
    ids = [s.id for s in specs]
    out = os.path.abspath(options.out)
    found = discover(options.submissions, options.assignment, exclude=out)
    if not found.entries:       # a mistyped path or zips not yet unpacked: nothing to write, not "0 graded"
        raise BatchError("\n  ".join([found.notes[-1], *found.notes[:-1]]))
    executor = choose(replace(options, jobs=options.jobs or default_jobs()), ids, config, stream)
    os.makedirs(out, exist_ok=True)
    lock = _lock(out)
    for stale in glob.glob(os.path.join(out, "**", ".tmp-*"), recursive=True):   # left by a killed run
        os.unlink(stale)
    summary = Summary(students=len(found.entries), notes=list(found.notes), out=out)
    if getattr(config.extra.get("performance"), "enabled", False) and (options.jobs or default_jobs()) > 1:
        summary.notes.append("performance checks ran beside other grading on shared cores: their ratios are noisier "
                             "than alone (--jobs 1 times them one at a time)")
    book = Gradebook(os.path.join(out, "gradebook.sqlite"))
    try:
        settings = settings_hash(config, ids, cuda=not options.no_wait_gpu)
        students = [e.student for e in found.entries]
        todo = _plan(found.entries, book, settings, options.force, summary)
        recorder = _Recorder(out, book, book.begin_run(settings, ids, executor.slots, __version__, students), settings,
                             specs, config, summary, Progress(len(todo), len(summary.skipped), stream))
        recorder.progress.begin()
        tasks = {}
        for entry, digest in todo:
            if entry.problem:       # nothing to run (e.g. which assignment is unclear): said in the feedback
                recorder.placeholder(entry, digest, "unreadable", entry.problem)
            else:
                tasks[Task(entry.student, entry.path)] = (entry, digest)
        if tasks:
            executor.run(list(tasks), lambda d: recorder.done(d, *tasks[d.task]))
        summary.notes.extend(executor.notes)
        recorder.progress.finish()
        rows = list(book.rows(students))      # grades.csv's rows: those `grader export` sends (runs.students)
        rows = late.settle(deadline, book, rows, out, config.visibility)     # late penalties: raw, penalty, final
        now = set(summary.graded)       # judged by the final score, as the class report judges them
        summary.not_full_marks = [r.student for r in rows if r.student in now and r.final < r.max_score]
        summary.notes.extend(late.notes(deadline, rows))
        links = _similarity(out, options, specs, config, summary) if options.similarity else ()
        _finish(out, rows, ids, config, options, [*found.notes, *late.notes(deadline, rows)], links)
        book.end_run(recorder.run_id)
        if export is not None:
            summary.notes.append(to_nbgrader.hand_over(export, options.nbgrader_db, options.assignment, rows))
    finally:
        book.close()
        lock.close()
    summary.seconds = time.monotonic() - start
    return summary


class _Recorder:
    """The parent's side of each result: feedback files first, then the gradebook row (one
    transaction), then the tally and the progress line."""

    def __init__(self, out, book: Gradebook, run_id: int, settings: str, specs, config: Config,
                 summary: Summary, progress: Progress) -> None:
        self.out, self.book, self.run_id, self.settings = out, book, run_id, settings
        self.specs, self.config, self.summary, self.progress = specs, config, summary, progress

    def done(self, d: Done, entry: Entry, digest: str) -> None:
        if d.outcome is Outcome.GRADED:
            result = parse(d)
            self.record(entry, digest, result, _state(result), encoded=d.result_json)
        elif d.outcome is Outcome.WORKER_LOST:       # the submission's own crash, after the retries
            self.placeholder(entry, digest, "graded", f"CRASHED: the process grading your submission died each of "
                             f"the {d.lost} times it was tried (killed or out of memory), so it is recorded as "
                             "crashed. If your code cannot have caused that, ask for a regrade.", d.error,
                             Status.CRASHED)
        else:
            last = d.error.strip().splitlines()[-1] if d.error.strip() else "unknown"
            self.placeholder(entry, digest, "grader_error", "the grader itself failed on this submission "
                             f"(not your fault; it is regraded on the next run): {last}", d.error)

    def placeholder(self, entry: Entry, digest: str, state: str, message: str, detail: str = "",
                    status: Status | None = None) -> None:
        status = status or (Status.GRADER_FAULT if state == "grader_error" else Status.ERROR)
        self.record(entry, digest, _placeholder(entry.path, self.specs, self.config, status, message), state,
                    detail)

    def record(self, entry: Entry, digest: str, result: SubmissionResult, state: str, detail: str = "",
               encoded: str | None = None) -> None:
        outputs.write_student(self.out, entry.student, result, self.config.visibility)
        self.book.record(self.run_id, entry.student, entry.path, digest, self.settings, state, result, detail,
                         encoded)
        _tally(self.summary, entry.student, result, state)
        self.progress.update(entry.student, result.score, result.max_score, state.replace("_", " "),
                             result.score < result.max_score,
                             entry.student in self.summary.crashed or state != "graded")


def _check_nbgrader(options: Options):
    """grader.frontends.notebooks.nbgrader_export when --nbgrader-db is given, and the gradebook checked with it
    (there, not locked, knowing the assignment), before anything is graded."""
    if not options.nbgrader_db:
        return None
    if not options.assignment:
        raise BatchError("--nbgrader-db needs --assignment NAME (the nbgrader assignment to record scores under)")
    export = nbgrader_export()
    try:
        export.check_gradebook(options.nbgrader_db, options.assignment)
    except Exception as e:      # another front-end's module: its GradebookError, or nbgrader's own
        raise BatchError(f"--nbgrader-db: {e}\nNothing was graded.") from None
    return export


def _lock(out: str):
    """One batch per output folder at a time (the parent is the gradebook's only writer);
    the lock goes with the process, however it ends."""
    f = open(os.path.join(out, ".lock"), "w")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        raise BatchError(f"{out}: another `grader batch` is writing to this folder; "
                         "wait for it, or use another --out") from None
    return f


def _plan(entries, book: Gradebook, settings: str, force: bool, summary: Summary) -> list[tuple[Entry, str]]:
    """Entries to grade now: new, changed, graded under other settings, or a grader error last time."""
    current = book.current()
    todo = []
    for entry in entries:
        digest = content_hash(entry.path)
        known = current.get(entry.student)
        if not force and known is not None and known[:2] == (digest, settings) and known[2] != "grader_error":
            summary.skipped.append(entry.student)
        else:
            todo.append((entry, digest))
    return todo


def _similarity(out: str, options: Options, specs, config: Config, summary: Summary) -> tuple:
    """The similarity section (grader.frontends.commands.similarity): its line in the summary, its link."""
    from grader.frontends.commands.similarity import batch_section
    link, line = batch_section(options.submissions, out, dict.fromkeys(s.module for s in specs), config,
                               options.assignment)
    summary.notes.append(line)
    return ((link, "Code similarity: pairs of submissions to review side by side"),) if link else ()


def _finish(out: str, rows: list[Row], ids: list[str], config: Config, options: Options, notes, links=()) -> None:
    for row in rows:        # a run killed between its commit and its files leaves some missing
        if outputs.missing_files(out, row.student):
            outputs.write_student(out, row.student, row.result, config.visibility, row.late)
    outputs.write_atomic(os.path.join(out, "grades.csv"), outputs.grades_csv(rows, ids, options.assignment or ""))
    stats = class_report.class_stats(rows)
    title = config.course_name + (f" — {options.assignment}" if options.assignment else "")
    shown = {"exercises": ", ".join(ids) if len(ids) <= 6 else f"{len(ids)} exercises",
             "hidden cases": "yes" if config.secret_seed is not None else "no",
             "call timeout": f"{config.call_timeout:g} s", "memory": f"{config.memory_mb} MiB"}
    outputs.write_atomic(os.path.join(out, "class_report.html"), class_report.render(stats, title, shown, notes,
                                                                                          links=links))


def _state(result: SubmissionResult) -> str:
    """graded, unreadable, or grader_error: the grader failed on some exercise (never skipped by a rerun)."""
    if result.grader_faults:
        return "grader_error"
    nothing_ran = all(not e.cases for e in result.exercises)
    return "unreadable" if result.errors and nothing_ran else "graded"


def _tally(summary: Summary, student: str, result: SubmissionResult, state: str) -> None:
    summary.graded.append(student)
    if state == "unreadable":
        summary.unreadable.append(student)
    elif state == "grader_error":
        summary.grader_errors.append(student)
    elif any(e.status in (Status.CRASHED, Status.TIMEOUT) for e in result.exercises):
        summary.crashed.append(student)


def _placeholder(path: str, specs, config: Config, status: Status, message: str) -> SubmissionResult:
    """A result for a submission that was not run: every exercise 0 points, `status`, with `message`."""
    exercises = tuple(scoring.unscored(s, config, status, message) for s in specs)
    return SubmissionResult(submission=path, exercises=exercises, settings=config.summary(), errors=(message,),
                            grader_version=__version__)
