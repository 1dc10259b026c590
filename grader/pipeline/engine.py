"""The pipeline: one submission in, one SubmissionResult out.

Steps, in order, for each selected exercise (exercises run concurrently, each in its own child):
  1. static check of the student's source for forbidden APIs (grader.pipeline.static);
  2. cases from the spec, seeded (public), plus hidden ones when a secret seed is set;
  3. the reference output of every case, computed here in the parent;
  4. a confined child imports the student's module (salvaged if it will not import as written)
     with tripwires for forbidden APIs and trusted substitutes for dependencies (grader.sandbox);
  5. each case is called in the child; the reply is compared in the parent (grader.pipeline.compare),
     failures are matched against known mistakes and localised (grader.catalog.spec hooks);
  6. points by cases passed (grader.pipeline.scoring); the child is killed, its output kept (truncated).
Then, for the whole submission, one exercise at a time:
  7. performance checks of the exercises that passed, when [performance] is enabled (grader.timing.stage):
     student and reference timed on fresh inputs in a child, outputs checked here -> ExerciseResult.performance.
"""
from __future__ import annotations

import os
import tempfile
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import torch

from grader import __version__, threads
from grader.pipeline import feedback, scoring, static
from grader.catalog.spec import Case, ExerciseSpec
from grader.config import Config
from grader.submission.loader import Submission, SubmissionError, load_submission, salvage
from grader.results import CaseResult, ExerciseResult, Status, SubmissionResult
from grader.sandbox.runner import Limits, Outcome, Sandbox, copy_submission, remove_workdir
from grader.pipeline import judging
from grader.timing import stage as performance
from grader.trees import clone as _clone


def build_cases(spec: ExerciseSpec, secret_seed: int | None) -> list[Case]:
    """Public cases from a seed derived from the exercise id; hidden ones from the secret seed."""
    seed = zlib.crc32(spec.id.encode())
    cases = list(spec.cases(torch.Generator().manual_seed(seed)))
    if secret_seed is not None:
        gen = torch.Generator().manual_seed((seed ^ secret_seed) % (1 << 63))
        cases += [Case(**{**c.__dict__, "name": f"hidden {i + 1}", "hidden": True})
                  for i, c in enumerate(spec.cases(gen))]
    return cases


@dataclass
class _ModuleLoad:
    files: dict[str, str]
    notes: tuple[str, ...] = ()
    import_error: str = ""


@dataclass
class Context:
    submission: Submission
    config: Config
    sandbox: Sandbox
    deadline: float
    loads: dict[str, _ModuleLoad] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    module_locks: dict[str, threading.Lock] = field(default_factory=dict)

    def remaining(self) -> float:
        return self.deadline - time.monotonic()


def limits_from(config: Config) -> Limits:
    return Limits(memory_bytes=config.memory_mb << 20, output_bytes=config.output_kb << 10)


def grade(submission_path: str, specs: list[ExerciseSpec], config: Config,
          sandbox: Sandbox | None = None) -> SubmissionResult:
    """Grade one submission (folder, .zip, .py or .ipynb). Never raises for a bad submission."""
    start = time.monotonic()
    specs = [s for s in specs if config.exercise(s.id).enabled]
    try:
        submission = load_submission(submission_path)
    except SubmissionError as e:
        return _unreadable(submission_path, specs, config, str(e), start)
    own = sandbox is None
    sandbox = sandbox or Sandbox(limits_from(config))
    ctx = Context(submission, config, sandbox, start + config.submission_timeout)
    try:
        with threads.pinned(1):    # references are small; exercises already run side by side
            with ThreadPoolExecutor(max_workers=max(1, min(config.effective_jobs, len(specs)))) as pool:
                exercises = tuple(pool.map(lambda s: _guarded(s, ctx), specs))
            exercises = performance.run(exercises, specs, ctx)
    finally:
        if own:
            sandbox.shutdown()
    broken = tuple(f"{m}.py does not import as written: {load.import_error}" for m, load in ctx.loads.items()
                   if load.import_error)
    return SubmissionResult(submission=submission_path, exercises=exercises, settings=config.summary(),
                            errors=submission.problems + broken, seconds=time.monotonic() - start,
                            grader_version=__version__)


def _guarded(spec: ExerciseSpec, ctx: Context) -> ExerciseResult:
    """A failure of the grader itself costs one exercise, with a message that says whose fault it is."""
    try:
        return grade_exercise(spec, ctx)
    except Exception as e:   # a bug in a spec or the engine: never the student's, never a lost batch
        return ExerciseResult(id=spec.id, status=Status.ERROR, points=0.0,
                              max_points=scoring.max_points(spec, ctx.config),
                              message=f"the grader failed on this exercise ({type(e).__name__}: {e}); this is a "
                                      "bug in the grader, not in your code: please report it")


def _unreadable(path: str, specs, config: Config, message: str, start: float) -> SubmissionResult:
    exercises = tuple(ExerciseResult(id=s.id, status=Status.ERROR, points=0.0,
                                     max_points=scoring.max_points(s, config), message=message) for s in specs)
    return SubmissionResult(submission=path, exercises=exercises, settings=config.summary(), errors=(message,),
                            seconds=time.monotonic() - start, grader_version=__version__)


def grade_exercise(spec: ExerciseSpec, ctx: Context) -> ExerciseResult:
    start = time.monotonic()
    sub = ctx.submission
    base = dict(id=spec.id, max_points=scoring.max_points(spec, ctx.config), reference=spec.reference_source,
                source_file=sub.origin.get(spec.module, f"{spec.module}.py"),
                source_line=static.function_line(sub.files.get(spec.module, ""), spec.function))
    if spec.module not in sub.files:
        return ExerciseResult(status=Status.ERROR, points=0.0, message=f"your submission has no {spec.module}.py: "
                              f"add the module (start from exercises/{spec.module}.py)", **base)
    hits = static.forbidden_hits(sub.files[spec.module], spec.function, spec.forbidden)
    if hits:
        listed = "; ".join(f"{h.what} (line {h.line}): {h.rule}" for h in hits[:5])
        return ExerciseResult(status=Status.FORBIDDEN, points=0.0, seconds=time.monotonic() - start,
                              message=f"uses a forbidden API: {listed}. {_rationale(spec, hits[0].rule)}", **base)
    load = _module_load(spec.module, ctx)
    cases = build_cases(spec, ctx.config.secret_seed)
    references = [spec.reference(*_clone(c.args), **_clone(dict(c.kwargs))) for c in cases]
    runner = judging.CaseRunner(spec, ctx, load.files, load.import_error)
    try:
        results = runner.run_all(cases, references)
    finally:
        output, truncated = runner.close()
    notes = list(load.notes) + runner.notes()
    forbidden_hits = runner.forbidden_hits
    if forbidden_hits:
        listed = "; ".join(f"{h['via']}: {h['rule']}" for h in forbidden_hits[:5])
        return ExerciseResult(status=Status.FORBIDDEN, points=0.0, cases=tuple(results), notes=tuple(notes),
                              output=output, output_truncated=truncated, seconds=time.monotonic() - start,
                              message=f"called a forbidden API while running: {listed}. "
                                      f"{_rationale(spec, forbidden_hits[0]['rule'])}", **base)
    status, points, message, diagnosis = scoring.summarise(spec, results, base["max_points"], base, load.import_error)
    return ExerciseResult(status=status, points=points, cases=tuple(results), message=message, diagnosis=diagnosis,
                          notes=tuple(notes), output=output, output_truncated=truncated,
                          seconds=time.monotonic() - start, **base)


def _rationale(spec: ExerciseSpec, rule_name: str) -> str:
    for rule in (*spec.forbidden, static.ALWAYS):
        if rule.name == rule_name:
            return f"Why: {rule.rationale}."
    return ""


def _module_load(module: str, ctx: Context) -> _ModuleLoad:
    """Decide once per module whether it imports as written, or must be salvaged."""
    with ctx.lock:
        lock = ctx.module_locks.setdefault(module, threading.Lock())
    with lock:
        if module in ctx.loads:
            return ctx.loads[module]
        files = dict(ctx.submission.files)
        workdir = tempfile.mkdtemp(prefix="grader-import-")
        try:
            copy_submission({f"{m}.py": s for m, s in files.items()}, workdir)
            session = ctx.sandbox.open(workdir, module, import_timeout=min(max(ctx.config.call_timeout, judging.STARTUP_GRACE),
                                                                           max(ctx.remaining(), 0.1)))
            outcome = session.ready
            session.close()
        finally:
            remove_workdir(workdir)
        load = _ModuleLoad(files)
        if outcome.kind != "ok":
            why = _import_failure(outcome, ctx.config)
            fixed, dropped = salvage(files[module])
            files[module] = fixed
            note = (f"{module}.py could not be imported as written ({why}). The grader kept its imports and "
                    f"function definitions and skipped the rest" + (f": {'; '.join(dropped)}" if dropped else "") +
                    ". Fix this first: it would fail any real use of your module.")
            load = _ModuleLoad(files, (note,), why)
        ctx.loads[module] = load
        return load


def _import_failure(outcome: Outcome, config: Config) -> str:
    if outcome.kind == "timeout":
        return (f"importing it took longer than {max(config.call_timeout, judging.STARTUP_GRACE):g} s: "
                "is there an endless loop at the top level?")
    if outcome.kind == "crashed":
        return "the process ended during import (os._exit() or a crash at the top level)"
    return feedback.error_message(outcome.error, config.memory_mb).split("\n")[0]
