"""The pipeline: one submission in, one SubmissionResult out. This is the only module that
composes the stages; each step below is one module of grader.pipeline (or grader.timing).

Steps, in order, for each selected exercise (exercises run concurrently, each in its own child):
  1. static check of the student's source for forbidden APIs (static);
  2. whether the student's module imports as written, decided once per module and salvaged if
     not (imports; the decision is kept in the submission's Context, context). It is tried in the
     first child of the first exercise of the module to need it, which then serves that exercise's
     cases when the module imports as written (a second child would import the same files again);
  3. cases from the spec, seeded (public), plus hidden ones when a secret seed is set, and the
     reference output of every case, computed here in the parent (cases), before step 2's child
     is asked for: at the start, that is while the sandbox is still starting; once per process
     (a batch worker's next submission gets copies of the same);
  4. a confined child imports the student's module with tripwires for forbidden APIs and trusted
     substitutes for dependencies, and each case is called in it, two strikes and out (run,
     over grader.sandbox);
  5. each reply is judged here: compared with the reference (compare) or by the spec's judge,
     matched against known mistakes, localised, shown as heatmaps (judge, a pure function);
     a hidden case keeps only fixed words chosen by the kind of its failure (redact); once every
     case is judged, float64 misses of float32's size are named as such (precision);
  6. forbidden calls seen at run time cost the exercise; otherwise points by cases passed and
     the headline (scoring); the child is killed, its output kept (truncated).
Then, for the whole submission, one exercise at a time:
  7. performance checks of the exercises that passed, when [performance] is enabled (grader.timing.stage):
     student and reference timed on fresh inputs in a child, outputs checked here -> ExerciseResult.performance.
"""
from __future__ import annotations

import os
import re
import time
from concurrent.futures import ThreadPoolExecutor

from grader import __version__, threads
from grader.catalog.spec import ExerciseSpec
from grader.config import Config
from grader.pipeline import forbidden, imports, scoring, static
from grader.pipeline.cases import build_cases, prepared
from grader.pipeline.context import Context, ModuleLoad
from grader.pipeline import precision
from grader.pipeline.run import CaseRunner
from grader.pipeline.where import function_line, function_lines
from grader.results import ExerciseResult, Status, SubmissionResult
from grader.sandbox.provision import remove_stale_workdirs
from grader.sandbox.runner import Limits, Sandbox
from grader.submission.loader import Submission, SubmissionError, load_submission
from grader.timing import stage as performance

# Front-ends and tools import these from here: the engine is the pipeline's public face.
__all__ = ["Context", "build_cases", "grade", "grade_exercise", "limits_from", "tripwire_targets"]


def limits_from(config: Config) -> Limits:
    return Limits(memory_bytes=config.memory_mb << 20, output_bytes=config.output_kb << 10)


def tripwire_targets(specs) -> list[tuple[str, str]]:
    """(rule, dotted target) of every tripwire the exercises' children install: the sandbox's zygote
    makes their wrappers once (grader.sandbox.tripwires.prepare), not each child."""
    return sorted({(rule.name, dotted) for spec in specs for rule in spec.forbidden for dotted in rule.patch})


def grade(submission_path: str, specs: list[ExerciseSpec], config: Config,
          sandbox: Sandbox | None = None, cuda: bool | None = None) -> SubmissionResult:
    """Grade one submission (folder, .zip, .py or .ipynb). Never raises for a bad submission.
    `cuda`: whether performance checks may use CUDA (None: whether this machine has it)."""
    start = time.monotonic()
    remove_stale_workdirs()     # the students' code a grader killed from outside left in the temp folder
    specs = [s for s in specs if config.exercise(s.id).enabled]
    try:
        submission = load_submission(submission_path)
    except SubmissionError as e:
        return _unreadable(submission_path, specs, config, str(e), start)
    own = sandbox is None
    sandbox = sandbox or Sandbox(limits_from(config), tripwire_targets(specs))
    ctx = Context(submission, config, sandbox, start + config.submission_timeout)
    try:
        with threads.pinned(1):    # references are small; exercises already run side by side
            with ThreadPoolExecutor(max_workers=max(1, min(config.effective_jobs, len(specs))),
                                    initializer=threads.follow) as pool:
                order = _longest_first(specs)
                graded = dict(zip(order, pool.map(lambda i: _guarded(specs[i], ctx), order)))
            exercises = performance.run(tuple(graded[i] for i in range(len(specs))), specs, ctx, cuda=cuda)
    finally:
        ctx.staged.remove()
        if own:
            sandbox.shutdown()
    broken = tuple(f"{submission.origin.get(m, m + '.py')} does not import as written: {why}"
                   for m, why in ctx.import_errors())
    return SubmissionResult(submission=submission_path, exercises=exercises, settings=config.summary(),
                            errors=submission.problems + broken, seconds=time.monotonic() - start,
                            grader_version=__version__)


def _longest_first(specs: list[ExerciseSpec]) -> list[int]:
    """The order exercises start in (indices into `specs`), so that the longest run beside the others
    rather than alone at the end. Results keep the order given. First those whose spec allows longer
    calls (the capstone's training, the tokenizers, XOR's training); then those whose child runs more
    of the grader's trusted code besides the student's function (its substitutes and driver: an
    exercise built on others, as greedy decoding on the whole transformer, calls all of them for
    each case); the others as listed."""
    def weight(spec: ExerciseSpec) -> tuple[float, int]:
        return spec.call_timeout or 0.0, len(spec.depends) + (spec.driver is not None)
    return sorted(range(len(specs)), key=lambda i: tuple(-w for w in weight(specs[i])))


def _guarded(spec: ExerciseSpec, ctx: Context) -> ExerciseResult:
    """A failure of the grader itself is no grade: the exercise is a GRADER_FAULT (exit 3, retried by
    the next batch), with a message that says whose fault it is; the other exercises go on."""
    try:
        return grade_exercise(spec, ctx)
    except Exception as e:   # a bug in a spec or the engine: never the student's, never a lost batch
        return scoring.grader_fault(spec, ctx.config, e)


def _defined_again(spec: ExerciseSpec, sub: Submission) -> tuple[str, ...]:
    """A note when the module defines the exercise's function more than once: the last one is graded."""
    lines = function_lines(sub.files[spec.module], spec.function)
    if len(lines) < 2:
        return ()
    return (f"{spec.function} is defined {len(lines)} times in {sub.origin.get(spec.module, spec.module + '.py')} "
            f"(lines {', '.join(map(str, lines))}): Python keeps the last, line {lines[-1]}, and that is the one "
            "graded; delete the others",)


def _no_module(sub: Submission, spec: ExerciseSpec) -> str:
    """Why `spec`'s module is not graded: what the loader said of its file, or a file by a near name
    ("Attention.py", "attention (1).py"), or a file of another name that defines the function (one
    notebook for the whole course, "homework1.ipynb"), or that the submission lacks it."""
    module = spec.module
    said = next((p for p in sub.problems if os.path.basename(p.split(": ", 1)[0]) in (f"{module}.py",
                                                                                       f"{module}.ipynb")), "")
    if said:
        return f"your {module} module was not graded: {said}"
    plain = {m: re.sub(r"[^a-z0-9_]", "", m.lower()) for m in sub.files}
    near = sorted(sub.origin.get(m, m) for m, p in plain.items() if p.startswith(module) and
                  (p[len(module):].isdigit() or p == module))
    if near:
        return f"your submission has no {module}.py, but it has {near[0]}: name it {module}.py"
    defining = sorted(sub.origin.get(m, f"{m}.py") for m, text in sub.files.items()
                      if function_lines(text, spec.function))
    if defining:
        return (f"your submission has no {module}.py, but {defining[0]} defines {spec.function}: each function is "
                f"graded from the file named after its module, so {spec.id} from {module}.py (or {module}.ipynb); "
                f"put the functions of the {module} module in that file")
    return f"your submission has no {module}.py: add the module (start from exercises/{module}.py)"


def _unreadable(path: str, specs: list[ExerciseSpec], config: Config, message: str,
                start: float) -> SubmissionResult:
    exercises = tuple(scoring.unscored(s, config, Status.ERROR, message) for s in specs)
    return SubmissionResult(submission=path, exercises=exercises, settings=config.summary(), errors=(message,),
                            seconds=time.monotonic() - start, grader_version=__version__)


def grade_exercise(spec: ExerciseSpec, ctx: Context) -> ExerciseResult:
    """Steps 1 to 6 for one exercise."""
    start = time.monotonic()
    sub = ctx.submission
    base = dict(id=spec.id, max_points=scoring.max_points(spec, ctx.config), reference=spec.reference_source,
                source_file=sub.origin.get(spec.module, f"{spec.module}.py"),
                source_line=function_line(sub.files.get(spec.module, ""), spec.function))
    if spec.module not in sub.files:
        return ExerciseResult(status=Status.ERROR, points=0.0, message=_no_module(sub, spec), **base)
    hits = static.forbidden_hits(sub.files[spec.module], spec.function, spec.forbidden, replaced=tuple(spec.depends))
    if hits:
        return ExerciseResult(status=Status.FORBIDDEN, points=0.0, seconds=time.monotonic() - start,
                              message=forbidden.static_message(spec, hits, sub.files[spec.module]), **base)
    # Once the submission's time is used up an exercise is not started: every case is "not run".
    started = ctx.remaining() > 0
    # the references first: here, while the sandbox may still be starting, they cost no waiting
    if started:
        cases, refs, encoded = prepared(spec, ctx.config.secret_seed)
    else:
        cases = build_cases(spec, ctx.config.secret_seed)
        refs = encoded = [None] * len(cases)
    runner = CaseRunner(spec, ctx)
    try:    # the first exercise of a module to need its import decided has it tried in its own child
        load = imports.module_load(spec.module, ctx, runner.decide_import) if started else ModuleLoad(dict(sub.files))
        runner.loaded(load)
        results = runner.run_all(cases, refs if ctx.remaining() > 0 else [None] * len(cases), encoded)
    finally:
        output, truncated = runner.close()
    results = precision.annotate(results)   # needs every case: float64 misses of float32's size
    ran = dict(cases=tuple(results), notes=(*load.notes, *runner.notes(), *_defined_again(spec, sub)), output=output,
               output_truncated=truncated)
    if runner.forbidden_hits:
        return ExerciseResult(status=Status.FORBIDDEN, points=0.0, seconds=time.monotonic() - start,
                              message=forbidden.runtime_message(spec, runner.forbidden_hits, load.files),
                              **ran, **base)
    where = base["source_file"] + (f", line {base['source_line']}" if base["source_line"] else "")
    summary = scoring.summarise(results, base["max_points"], where, load.import_error)
    return ExerciseResult(status=summary.status, points=summary.points, message=summary.message,
                          diagnosis=summary.diagnosis, seconds=time.monotonic() - start, **ran, **base)

