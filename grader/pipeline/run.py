"""Run an exercise's cases in confined children, one call per case.

A CaseRunner owns the child sessions of one exercise. It opens a child with the student's
module (tripwires, substitutes for dependencies, the spec's driver), calls the function once per
case and hands each reply to grader.pipeline.judge. Rules it keeps:
- two strikes: after two calls in a row that timed out or crashed (a fresh child after each),
  the remaining cases are not run; nor are they once the submission's time is used up: every
  wait on a child (its import, a case, a localiser's probe) is bounded by what is left of it;
- a child that cannot import the module (as graded: grader.pipeline.imports) is not retried:
  every remaining case carries that import failure, said as what it is;
- hidden cases run in a child of their own, whose prints are withheld, and their records are
  redacted (grader.pipeline.redact);
- forbidden calls the tripwires saw, the sandbox's own notes, the modules stood in for and the
  substitutes the student's code called (as the child says: only notes depend on them), and the
  children's captured output are kept for the exercise's result.
"""
from __future__ import annotations

import time
from dataclasses import asdict, replace
from typing import Any

from grader.catalog.spec import Case, ExerciseSpec
from grader.pipeline import feedback, forbidden, redact, static, where
from grader.pipeline.cases import tolerance
from grader.pipeline.context import Context, ModuleLoad
from grader.pipeline.judge import ProbeError, judge
from grader.results import CaseResult, FailureKind
from grader.sandbox.provision import make_workdir, remove_workdir
from grader.sandbox.runner import Outcome, Session

# Importing the module and a session's first call (lazy torch initialisation) get at least this
# long, however short the per-call limit: a loaded machine must not turn start-up into a timeout.
STARTUP_GRACE = 10.0
_STRIKES = (FailureKind.TIMEOUT, FailureKind.CRASH, FailureKind.PROTOCOL)


class CaseRunner:
    """The cases of one exercise, run against the module as graded (`loaded`): run_all(), then
    close() for the captured output, notes() and forbidden_hits for the exercise's result."""

    def __init__(self, spec: ExerciseSpec, ctx: Context) -> None:
        self.spec, self.ctx = spec, ctx
        self.load = ModuleLoad(dict(ctx.submission.files))     # the files as submitted, until `loaded`
        self.session: Session | None = None
        self._pending: tuple[dict[str, str], str, Session] | None = None   # a child opened by decide_import
        self.workdir = ""
        self.forbidden_hits: list[dict[str, str]] = []
        self.outputs: list[tuple[str, bool]] = []
        self._notes: list[str] = []
        self._missing = False
        self._hidden_session = False
        self._first_call = True
        self._import_limit = 0.0
        self._import_failure: Outcome | None = None
        self._replies = self._returned = 0      # case calls the child answered; of those, calls that returned
        self._called: set[str] | None = set()   # substitutes those calls used; None: a session said nothing
        self.overrides = ctx.config.exercise(spec.id)
        self.timeout = self.overrides.call_timeout or spec.call_timeout or ctx.config.call_timeout
        self.facts = feedback.Facts(function=spec.function, module=spec.module, memory_mb=ctx.config.memory_mb,
                                    submission_timeout=ctx.config.submission_timeout)     # the rest: `loaded`

    # -- sessions --------------------------------------------------------------------------
    def decide_import(self, files: dict[str, str], limit: float) -> Outcome:
        """The module's import tried in this exercise's first child (grader.pipeline.imports): kept
        for the cases if `loaded` finds the files graded are the ones it has, else closed unseen."""
        self._close_session()
        self._pending = (files, *self._start(files, limit))
        return self._pending[2].ready

    def loaded(self, load: ModuleLoad) -> None:
        """The module as graded (grader.pipeline.imports): the facts of feedback follow it, and a
        child opened to decide it serves the cases only if it has exactly those files and is ready."""
        self.load = load
        self.facts = replace(self.facts, import_error=bool(load.import_error),
                             assigned=where.assigned_line(load.files.get(self.spec.module, ""), self.spec.function))
        if self._pending is not None and self._pending[2].ready.kind == "ok" and self._pending[0] == load.files:
            self.workdir, self.session = self._pending[1:]
            self._pending = None
            self._adopt(self.session.ready)
        self._discard_pending()

    def _discard_pending(self) -> None:
        """Close a child opened to decide the import and not kept: what it printed is no one's."""
        if self._pending is not None:
            (_, workdir, session), self._pending = self._pending, None
            session.close()
            remove_workdir(workdir)

    def _start(self, files: dict[str, str], limit: float) -> tuple[str, Session]:
        """A fresh child with `files` and the module imported: (its folder, its session)."""
        workdir, closure = make_workdir("grader-"), static.import_closure(self.spec.module, files)
        rules = [asdict(r) for r in self.spec.forbidden]
        self._import_limit = limit
        shared = self.ctx.child_options(files, closure, workdir)    # its files, what it shares with others
        try:
            session = self.ctx.sandbox.open(workdir, self.spec.module, forbidden=rules,
                                            substitutes=dict(self.spec.depends), driver=self.spec.driver,
                                            import_timeout=limit, **shared)
        except BaseException:
            remove_workdir(workdir)
            raise
        return workdir, session

    def _open(self) -> Outcome:
        self._close_session()
        self.workdir, self.session = self._start(self.load.files, self._timeout(STARTUP_GRACE))
        return self._adopt(self.session.ready)

    def _adopt(self, ready: Outcome) -> Outcome:
        """What the open child's readiness tells the exercise: forbidden calls at import (a note: no call
        of the function made them), modules stood in for, the sandbox's notes, whether the function is there."""
        self._first_call, module = True, self.spec.module
        for note in (forbidden.at_import_note(self.spec, ready.hits), feedback.absent_note(module, ready.absent),
                     f"Sandbox on this machine: {ready.detail} (the other limits apply)." if ready.detail else ""):
            if note and note not in self._notes:
                self._notes.append(note)
        if ready.kind == "ok" and self.spec.function not in (ready.value or []):
            self._missing = True
        return ready

    def _close_session(self) -> None:
        if self.session is not None:
            self.session.close()
            if self._hidden_session:      # what hidden cases print could show their inputs
                total = self.session.output_total
                withheld = f"[{total} bytes printed during hidden cases: withheld]\n" if total else ""
                self.outputs.append((withheld, False))
            else:
                self.outputs.append(self.session.output)
            self.session = None
        if self.workdir:
            remove_workdir(self.workdir)
            self.workdir = ""

    def close(self) -> tuple[str, bool]:
        """Close the last child: (captured output, truncated), kept within the output limit."""
        self._discard_pending()
        self._close_session()
        text = "".join(o for o, _ in self.outputs)
        keep = self.ctx.config.output_kb << 10
        truncated = any(t for _, t in self.outputs) or len(text) > keep
        return text[:keep], truncated

    def notes(self) -> list[str]:
        return list(self._notes) + [note for note in (self._substitutes_note(),) if note]

    def _substitutes_note(self) -> str:
        """Which of the spec's substitutes stood in for the student's functions: those the child says
        the calls used (all of them, from a session that does not say); when the function returned
        without calling any, that it was graded on its own code; nothing when no call returned (a
        NameError before the first call of a helper says nothing of what the function calls)."""
        used = sorted(self.spec.depends if self._called is None else (self._called or set()) & set(self.spec.depends))
        if not self.spec.depends or not self._replies or not (used or self._returned):
            return ""
        if used:
            return (f"Graded with the grader's reference {', '.join(used)} in place of yours, so a bug there is "
                    f"charged once, in its own exercise, not again here.")
        names = " or ".join(sorted(self.spec.depends))
        return (f"{self.spec.function} was graded on its own code: it did not call {names}, so the grader's "
                "reference, which stands in for yours where it is called, played no part.")

    def _timeout(self, at_least: float = 0.0) -> float:
        return max(min(max(self.timeout, at_least), self.ctx.remaining()), 0.05)

    def _record_hits(self, outcome: Outcome) -> None:
        for h in outcome.hits:
            if h not in self.forbidden_hits:
                self.forbidden_hits.append(h)

    # -- cases -----------------------------------------------------------------------------
    def run_all(self, cases: list[Case], references: list[Any],
                encoded: list[bytes | None] | None = None) -> list[CaseResult]:
        """`encoded`: each case's arguments as the wire carries them, where kept (cases.prepared)."""
        results: list[CaseResult] = []
        strikes = 0
        for case, ref, arguments in zip(cases, references, encoded or [None] * len(cases)):
            if strikes >= 2 or self.ctx.remaining() <= 0:
                results.append(self._failed(case, FailureKind.STRIKES if strikes >= 2 else FailureKind.TIME_LIMIT))
                continue
            if case.hidden and not self._hidden_session:
                self._close_session()         # hidden cases run in a child of their own
                self._hidden_session = True
            if self._import_failure is not None:     # the same files would fail the same way again
                results.append(self._import_problem(case, self._import_failure))
                continue
            if self.session is None or not self.session.alive:
                ready = self._open()
                if ready.kind == "timeout" and self._import_limit < max(self.timeout, STARTUP_GRACE):
                    self._close_session()     # cut short by the submission's limit: no verdict on the import
                    results.append(self._failed(case, FailureKind.TIME_LIMIT))
                    continue
                if ready.kind != "ok":
                    self._import_failure = ready
                    self._close_session()
                    results.append(self._import_problem(case, ready))
                    continue
            if self._missing:
                results.append(self._failed(case, FailureKind.MISSING_FUNCTION, self._missing_message()))
                continue
            result = self.run_case(case, ref, arguments)
            strikes = strikes + 1 if result.failure in _STRIKES else 0
            results.append(result)
        return results

    def run_case(self, case: Case, ref: Any, encoded: bytes | None = None) -> CaseResult:
        """Call the student's function on `case` in the open child and judge the reply (`encoded`:
        the case's arguments already in the wire format)."""
        start = time.monotonic()
        first, self._first_call = self._first_call, False
        timeout = self._timeout(STARTUP_GRACE if first else 0.0)
        outcome = self.session.call(self.spec.function, case.args, dict(case.kwargs), timeout=timeout,
                                    encoded=encoded)
        self._record_hits(outcome)
        self._record_called(outcome)
        seconds = time.monotonic() - start
        if outcome.kind == "ok":
            result = judge(self.spec, case, outcome.value, ref, tolerance(self.spec, self.overrides, case),
                           modified=tuple(outcome.modified), probe=self._probe)
            return self._finish(case, replace(result, seconds=seconds))
        facts = replace(self.facts, timeout=timeout, exception=outcome.error.get("type", ""))
        if outcome.kind == "timeout":
            message = feedback.words(FailureKind.TIMEOUT, facts) + self._limit_said(timeout, first)
            return self._failed(case, FailureKind.TIMEOUT, message, seconds=seconds, facts=facts)
        if outcome.kind in ("crashed", "protocol"):
            kind = FailureKind.CRASH if outcome.kind == "crashed" else FailureKind.PROTOCOL
            detail = f": {outcome.detail}" if outcome.detail else ""   # a protocol error, or the memory limit hit
            return self._failed(case, kind, feedback.words(kind, facts) + detail, seconds, facts=facts)
        if outcome.kind == "missing":
            self._missing = True
            return self._failed(case, FailureKind.MISSING_FUNCTION, self._missing_message(), seconds, facts=facts)
        kind = feedback.error_kind(outcome.error)
        message = None if kind is FailureKind.NOT_IMPLEMENTED else \
            feedback.error_message(outcome.error, self.ctx.config.memory_mb, called=self.spec.id)
        return self._failed(case, kind, message, seconds, facts=facts)

    def _limit_said(self, applied: float, first: bool) -> str:
        """Why a call's wall-time limit was `applied` s where that is not the per-call limit the
        report's header states ("" where it is)."""
        wanted = max(self.timeout, STARTUP_GRACE) if first else self.timeout
        default = self.ctx.config.call_timeout
        if applied < wanted:
            return f" (the limit was what was left of the submission's {self.ctx.config.submission_timeout:g} s)"
        own = f", this exercise's limit; the default is {default:g} s" if self.timeout != default else ""
        if first and STARTUP_GRACE > self.timeout:
            return (f" (the first call in a fresh process may take up to {STARTUP_GRACE:g} s, start-up included; "
                    f"later calls {self.timeout:g} s{own})")
        return f" (this exercise's limit per call; the default is {default:g} s)" if own else ""

    def _record_called(self, outcome: Outcome) -> None:
        if outcome.kind not in ("ok", "error"):
            return          # no answer from the function: nothing to say about what it called
        self._replies += 1
        self._returned += outcome.kind == "ok"
        if outcome.called is None:
            self._called = None
        elif self._called is not None:
            self._called |= set(outcome.called)

    def _import_problem(self, case: Case, ready: Outcome) -> CaseResult:
        facts = replace(self.facts, timeout=self._import_limit)
        if ready.kind == "timeout":
            return self._failed(case, FailureKind.IMPORT_TIMEOUT, facts=facts)
        if ready.kind in ("crashed", "protocol"):       # the detail: which memory limit killed it, if one did
            limit = ready.detail if ready.kind == "crashed" and ready.detail else ""
            said = feedback.words(FailureKind.IMPORT_CRASH, facts) + (f": {limit}" if limit else "")
            return self._failed(case, FailureKind.IMPORT_CRASH, said, facts=facts)
        return self._failed(case, FailureKind.IMPORT_ERROR, "importing your module failed: " +
                            feedback.error_message(ready.error, self.ctx.config.memory_mb), facts=facts)

    def _missing_message(self) -> str:
        if not self.load.import_error:
            return feedback.words(FailureKind.MISSING_FUNCTION, self.facts)
        shown = self.ctx.submission.origin.get(self.spec.module, f"{self.spec.module}.py")
        return (f"{self.spec.function} could not be loaded: {shown} does not import as written "
                f"({self.load.import_error}) and the grader had to skip the part that holds it")

    def _probe(self, function: str, *args: Any, **kwargs: Any) -> Any:
        if self.session is None or not self.session.alive:
            raise ProbeError("no session")
        if self.ctx.remaining() <= 0:
            raise ProbeError("the submission's time limit was used up")
        outcome = self.session.call(function, args, kwargs, timeout=self._timeout(), plain=True)
        if outcome.kind != "ok":
            raise ProbeError(outcome.kind)
        return outcome.value

    # -- records ---------------------------------------------------------------------------
    def _failed(self, case: Case, kind: FailureKind, message: str | None = None, seconds: float = 0.0, *,
                facts: feedback.Facts | None = None) -> CaseResult:
        """A case that did not return (or did not run): `message` defaults to the kind's fixed words."""
        facts = facts or self.facts
        message = feedback.words(kind, facts) if message is None else message
        result = CaseResult(name=case.name, status=kind.status, message=message, seconds=seconds, failure=kind,
                            description="" if case.hidden else feedback.case_description(self.spec.reference, case))
        return self._finish(case, result, facts)

    def _finish(self, case: Case, result: CaseResult, facts: feedback.Facts | None = None) -> CaseResult:
        """The public record as it is, a hidden case's redacted (grader.pipeline.redact)."""
        return redact.hidden(result, facts or self.facts) if case.hidden else result
