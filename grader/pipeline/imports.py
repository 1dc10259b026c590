"""Does each of the student's modules import as written? Decided once per module per submission.

The import is tried in a child of its own, confined as any: the first exercise of the module to
need the decision opens it as its own first child (`opener`), and keeps it for its cases when the
module imports as written, with exactly those files; the modules it imports are tried bare.

A module that does not import (it raises, loops or exits at the top level) is salvaged: its
imports and definitions are kept, the rest dropped (grader.submission.loader.salvage), the
feedback says so, and every exercise of that module gets the salvaged copy. Its top-level
assignments are kept too where that copy imports, tried first in a child of its own: the
namedtuple or compiled pattern a notebook's functions use is seldom the cell that failed.

The student's modules a module imports (`import attention`, `from attention import ...`,
directly or through another of them) are decided first, each on its own; the module is then
tried, and graded, with the copies of them its importers get: a salvaged one, whose definitions
lost to a syntax error raise ImportError when called (grader.submission.loader
.salvage_for_importers), and which the spec's substitutes replace in the graded module. So a
syntax error in attention.py costs the exercises of attention.py, not those of transformer.py;
their feedback names the broken module.
"""
from __future__ import annotations

from typing import Callable

from grader.config import Config
from grader.pipeline import feedback, static
from grader.pipeline.context import Context, ModuleLoad
from grader.pipeline.run import STARTUP_GRACE
from grader.sandbox.provision import copy_submission, make_workdir, remove_workdir
from grader.sandbox.runner import Outcome
from grader.submission.loader import salvage, salvage_for_importers

Opener = Callable[[dict[str, str], float], Outcome]


def module_load(module: str, ctx: Context, opener: Opener | None = None) -> ModuleLoad:
    """How `module` is loaded for grading (ctx keeps the first decision for the others).
    `opener(files, limit)`: where the caller is the first to need the decision, the import is
    tried in the child it opens (the exercise's own first child, which the caller keeps when the
    module imports as written); without it, or for the modules `module` imports, in a bare child."""
    return _load(module, ctx, (), opener)


def _load(module: str, ctx: Context, chain: tuple[str, ...], opener: Opener | None = None) -> ModuleLoad:
    # Dependencies are decided before this module's own decision (never while holding its lock),
    # so two threads deciding modules of an import cycle cannot wait on each other; `chain`
    # breaks the cycle itself (its modules are then tried with the other's files as written).
    deps = {d: _load(d, ctx, (*chain, module))
            for d in static.imported_modules(module, ctx.submission.files) if d not in chain}
    return ctx.module_load(module, lambda m: _decide(m, ctx, deps, opener))


def _decide(module: str, ctx: Context, deps: dict[str, ModuleLoad], opener: Opener | None) -> ModuleLoad:
    files = dict(ctx.submission.files)
    changed: dict[str, str] = {}
    for load in deps.values():
        changed.update(load.for_importers)
    files.update(changed)
    broken = _broken_imports(deps)
    dep_notes = tuple(_broken_import_note(module, *b) for b in broken)
    wanted = max(ctx.config.call_timeout, STARTUP_GRACE)
    limit = min(wanted, ctx.remaining())
    # Not checked, or cut short, by the submission's time limit: undecided, not broken (its cases
    # are not run, for the time limit's reason).
    outcome = (opener(files, limit) if opener else _try_import(module, files, limit, ctx)) if limit > 0 else None
    if outcome is None or outcome.kind == "ok" or (outcome.kind == "timeout" and limit < wanted):
        return ModuleLoad(files, dep_notes, for_importers=changed, broken_imports=broken)
    why = _import_failure(outcome, limit, ctx.config)
    keep = outcome.kind != "timeout" and _assignments_import(module, files, ctx)   # a loop: which one, unknown
    fixed, dropped = salvage(files[module], keep)
    files[module] = fixed
    note = (f"{module}.py could not be imported as written ({why}). The grader kept its imports"
            f"{', assignments' if keep else ''} and function definitions and skipped the rest" +
            (f": {'; '.join(dropped)}" if dropped else "") + ". " + _advice(module, outcome, ctx))
    changed = {**changed, module: salvage_for_importers(ctx.submission.files[module], module, why, keep)}
    return ModuleLoad(files, (note, *dep_notes), why, for_importers=changed, broken_imports=broken)


def _advice(module: str, outcome: Outcome, ctx: Context) -> str:
    """What to do about a module that does not import: a notebook's cell that works only in Jupyter
    (display, a plot) and a top-level use of a package the grader does not have are not bugs."""
    where = ("a cell that works only in Jupyter (display, a plot, a check)"
             if ctx.submission.origin.get(module, "").endswith(".ipynb") else
             "code that needs a package the grader does not have"
             if outcome.error.get("type") == "ModuleNotFoundError" else "")
    if not where:
        return "Fix this first: it would fail any real use of your module."
    return (f"If that is {where}, put it under if __name__ == \"__main__\": (which runs in your own session, "
            "not when the grader imports your code); else fix it first.")


def _assignments_import(module: str, files: dict[str, str], ctx: Context) -> bool:
    """Whether the salvage that keeps the module's top-level assignments imports, tried in a child of
    its own where it keeps more than the whole salvage: a notebook's `Cache = namedtuple(...)` or
    `PATTERN = re.compile(...)` is what its functions use, and the cell that failed (a plot, a
    `display(x)`) is seldom one. Else the whole salvage (an assignment that fails, loops or exits)."""
    kept = salvage(files[module], keep_assignments=True)[0]
    limit = min(max(ctx.config.call_timeout, STARTUP_GRACE), ctx.remaining())
    if kept == salvage(files[module])[0] or limit <= 0:
        return False
    return _try_import(module, {**files, module: kept}, limit, ctx).kind == "ok"


def _try_import(module: str, files: dict[str, str], limit: float, ctx: Context) -> Outcome:
    workdir = make_workdir("grader-import-")
    try:
        copy_submission(files, workdir, static.import_closure(module, files))
        session = ctx.sandbox.open(workdir, module, import_timeout=limit)
        outcome = session.ready
        session.close()
    finally:
        remove_workdir(workdir)
    return outcome


def _broken_imports(deps: dict[str, ModuleLoad]) -> tuple[tuple[str, str, str], ...]:
    """(module, why, through) for every module imported, directly or not, that did not import."""
    found: dict[str, tuple[str, str, str]] = {}
    for dep, load in deps.items():
        if load.import_error:
            found.setdefault(dep, (dep, load.import_error, ""))
    for dep, load in deps.items():
        for broken, why, _ in load.broken_imports:
            found.setdefault(broken, (broken, why, dep))
    return tuple(found.values())


def _broken_import_note(module: str, broken: str, why: str, through: str) -> str:
    via = f" (through {through}.py)" if through else ""
    return (f"{broken}.py, which {module}.py imports{via}, does not import as written: {why}. {module}.py was "
            f"graded with the part of {broken}.py that imports; what it takes from the skipped part fails when "
            f"called, unless the grader's reference stands in for it. Fix {broken}.py first.")


def _import_failure(outcome: Outcome, limit: float, config: Config) -> str:
    if outcome.kind == "timeout":
        return f"importing it took longer than {limit:g} s: is there an endless loop at the top level?"
    if outcome.kind in ("crashed", "protocol"):
        return "the process ended during import (os._exit() or a crash at the top level)"
    return feedback.error_message(outcome.error, config.memory_mb).split("\n")[0]
