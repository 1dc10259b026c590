"""Does each of the student's modules import as written? Decided once per module per submission.

A module that does not import (it raises, loops or exits at the top level) is salvaged: its
imports and definitions are kept, the rest dropped (grader.submission.loader.salvage), the
feedback says so, and every exercise of that module and of modules importing it gets the
salvaged copy.
"""
from __future__ import annotations

import tempfile

from grader.config import Config
from grader.pipeline import feedback
from grader.pipeline.context import Context, ModuleLoad
from grader.pipeline.run import STARTUP_GRACE
from grader.sandbox.runner import Outcome, copy_submission, remove_workdir
from grader.submission.loader import salvage


def module_load(module: str, ctx: Context) -> ModuleLoad:
    """How `module` is loaded for grading (ctx keeps the first decision for the others)."""
    return ctx.module_load(module, lambda m: _decide(m, ctx))


def _decide(module: str, ctx: Context) -> ModuleLoad:
    files = dict(ctx.submission.files)
    workdir = tempfile.mkdtemp(prefix="grader-import-")
    try:
        copy_submission({f"{m}.py": s for m, s in files.items()}, workdir)
        session = ctx.sandbox.open(workdir, module, import_timeout=min(max(ctx.config.call_timeout, STARTUP_GRACE),
                                                                       max(ctx.remaining(), 0.1)))
        outcome = session.ready
        session.close()
    finally:
        remove_workdir(workdir)
    if outcome.kind == "ok":
        return ModuleLoad(files)
    why = _import_failure(outcome, ctx.config)
    fixed, dropped = salvage(files[module])
    files[module] = fixed
    note = (f"{module}.py could not be imported as written ({why}). The grader kept its imports and "
            f"function definitions and skipped the rest" + (f": {'; '.join(dropped)}" if dropped else "") +
            ". Fix this first: it would fail any real use of your module.")
    return ModuleLoad(files, (note,), why)


def _import_failure(outcome: Outcome, config: Config) -> str:
    if outcome.kind == "timeout":
        return (f"importing it took longer than {max(config.call_timeout, STARTUP_GRACE):g} s: "
                "is there an endless loop at the top level?")
    if outcome.kind == "crashed":
        return "the process ended during import (os._exit() or a crash at the top level)"
    return feedback.error_message(outcome.error, config.memory_mb).split("\n")[0]
