"""Run an exercise's cases in a confined child and judge each reply against its reference.

A CaseRunner owns the child sessions of one exercise: it restarts the child after a timeout
or crash (twice in a row, and the remaining cases are not run), matches failing outputs to
known mistakes, asks the spec to localise, and keeps the child's captured output.
"""
from __future__ import annotations

import tempfile
import time
from dataclasses import asdict
from typing import Any

import torch

from grader.pipeline import feedback
from grader.trees import clone as _clone
from grader.catalog.spec import Case, ExerciseSpec, Verdict
from grader.pipeline.compare import compare_outputs, matches
from grader.results import CaseResult, Comparison, Heatmap, Status
from grader.sandbox.runner import Outcome, Session, copy_submission, remove_workdir

HEATMAP_MAX = 24
# Importing the module and a session's first call (lazy torch initialisation) get at least this
# long, however short the per-call limit: a loaded machine must not turn start-up into a timeout.
STARTUP_GRACE = 10.0


class ProbeError(Exception):
    """A probe call into the student's code did not return a value."""


class CaseRunner:
    def __init__(self, spec: ExerciseSpec, ctx, files: dict[str, str], import_error: str = "") -> None:
        self.spec, self.ctx, self.files, self.import_error = spec, ctx, files, import_error
        self.session: Session | None = None
        self.workdir = ""
        self.forbidden_hits: list[dict[str, str]] = []
        self.outputs: list[tuple[str, bool]] = []
        self._notes: list[str] = []
        self._missing = False
        self._hidden_session = False
        cfg = ctx.config.exercise(spec.id)
        self.timeout = cfg.call_timeout or spec.call_timeout or ctx.config.call_timeout

    # -- sessions --------------------------------------------------------------------------
    def _open(self) -> Outcome:
        self._close_session()
        self.workdir = tempfile.mkdtemp(prefix="grader-")
        copy_submission({f"{m}.py": s for m, s in self.files.items()}, self.workdir)
        rules = [asdict(r) for r in self.spec.forbidden]
        self.session = self.ctx.sandbox.open(self.workdir, self.spec.module, forbidden=rules,
                                             substitutes=dict(self.spec.depends), driver=self.spec.driver,
                                             import_timeout=self._timeout(STARTUP_GRACE))
        self._first_call = True
        ready = self.session.ready
        self._record_hits(ready)
        weaker = f"Sandbox on this machine: {ready.detail} (the other limits apply)." if ready.detail else ""
        if weaker and weaker not in self._notes:
            self._notes.append(weaker)
        if ready.kind == "ok" and self.spec.function not in (ready.value or []):
            self._missing = True
        return ready

    def _close_session(self) -> None:
        if self.session is not None:
            self.session.close()
            if self._hidden_session:      # what hidden cases print could show their inputs
                total = self.session.output_total
                self.outputs.append((f"[{total} bytes printed during hidden cases: withheld]\n" if total else "", False))
            else:
                self.outputs.append(self.session.output)
            self.session = None
        if self.workdir:
            remove_workdir(self.workdir)
            self.workdir = ""

    def close(self) -> tuple[str, bool]:
        self._close_session()
        text = "".join(o for o, _ in self.outputs)
        keep = self.ctx.config.output_kb << 10
        truncated = any(t for _, t in self.outputs) or len(text) > keep
        return text[:keep], truncated

    def notes(self) -> list[str]:
        notes = list(self._notes)
        if self.spec.depends:
            names = ", ".join(sorted(self.spec.depends))
            notes.append(f"Graded with the grader's reference {names} in place of yours, so a bug there is "
                         f"charged once, in its own exercise, not again here.")
        return notes

    def _timeout(self, at_least: float = 0.0) -> float:
        return max(min(max(self.timeout, at_least), self.ctx.remaining()), 0.05)

    def _record_hits(self, outcome: Outcome) -> None:
        for h in outcome.hits:
            if h not in self.forbidden_hits:
                self.forbidden_hits.append(h)

    # -- cases -----------------------------------------------------------------------------
    def run_all(self, cases: list[Case], references: list[Any]) -> list[CaseResult]:
        results: list[CaseResult] = []
        strikes = 0
        for case, ref in zip(cases, references):
            if strikes >= 2 or self.ctx.remaining() <= 0:
                why = ("two calls in a row timed out or crashed" if strikes >= 2
                       else f"the submission's time limit ({self.ctx.config.submission_timeout:g} s) was used up")
                results.append(self._result(case, ref, Status.NOT_RUN, f"not run: {why}"))
                continue
            if case.hidden and not self._hidden_session:
                self._close_session()         # hidden cases run in a child of their own
                self._hidden_session = True
            if self.session is None or not self.session.alive:
                ready = self._open()
                if ready.kind != "ok":
                    results.append(self._import_problem(case, ref, ready))
                    strikes += 1
                    continue
            if self._missing:
                results.append(self._result(case, ref, Status.ERROR, self._missing_message()))
                continue
            result = self.run_case(case, ref)
            strikes = strikes + 1 if result.status in (Status.TIMEOUT, Status.CRASHED) else 0
            results.append(result)
        return results

    def _missing_message(self) -> str:
        if self.import_error:
            return (f"{self.spec.function} could not be loaded: {self.spec.module}.py does not import as written "
                    f"({self.import_error}) and the grader had to skip the part that holds it")
        return (f"no function named {self.spec.function} in {self.spec.module}.py: keep the name and "
                "signature of the stub")

    def _import_problem(self, case: Case, ref: Any, ready: Outcome) -> CaseResult:
        if ready.kind == "timeout":
            return self._result(case, ref, Status.TIMEOUT, f"importing {self.spec.module}.py took longer than "
                                f"{self.timeout:g} s")
        if ready.kind == "crashed":
            return self._result(case, ref, Status.CRASHED, f"the process ended while importing {self.spec.module}.py")
        return self._result(case, ref, Status.ERROR, "importing your module failed: " +
                            feedback.error_message(ready.error, self.ctx.config.memory_mb))

    def run_case(self, case: Case, ref: Any) -> CaseResult:
        start = time.monotonic()
        grace = STARTUP_GRACE if self._first_call else 0.0
        self._first_call = False
        outcome = self.session.call(self.spec.function, case.args, dict(case.kwargs),
                                    timeout=self._timeout(grace))
        self._record_hits(outcome)
        seconds = time.monotonic() - start
        if outcome.kind == "ok":
            return self._judge(case, ref, outcome, seconds)
        if outcome.kind == "timeout":
            return self._result(case, ref, Status.TIMEOUT, f"took longer than {self._timeout(grace):g} s: "
                                "look for an endless loop, or a loop that could be a tensor operation", seconds)
        if outcome.kind in ("crashed", "protocol"):
            return self._result(case, ref, Status.CRASHED, "the process running your code ended without returning "
                                "(os._exit(), a signal, or running out of memory)" +
                                (f": {outcome.detail}" if outcome.kind == "protocol" else ""), seconds)
        if outcome.kind == "missing":
            self._missing = True
            return self._result(case, ref, Status.ERROR, self._missing_message(), seconds)
        if outcome.error.get("type") == "NotImplementedError":
            return self._result(case, ref, Status.NOT_IMPLEMENTED, "not implemented yet", seconds)
        return self._result(case, ref, Status.ERROR,
                            feedback.error_message(outcome.error, self.ctx.config.memory_mb), seconds)

    def tol(self, case: Case):
        cfg = self.ctx.config.exercise(self.spec.id)

        def tol(dtype):
            atol, rtol = self.spec.tol(dtype, case)
            return (cfg.atol if cfg.atol is not None else atol, cfg.rtol if cfg.rtol is not None else rtol)
        return tol

    def _judge(self, case: Case, ref: Any, outcome: Outcome, seconds: float) -> CaseResult:
        value = outcome.value
        if self.spec.judge is not None:
            verdict = self.spec.judge(case, value, ref)
        else:
            comps = compare_outputs(value, ref, self.spec.outputs, self.tol(case), self.spec.exact)
            verdict = Verdict(all(c.ok for c in comps), feedback.comparisons_message(comps), comps)
        if verdict.ok and outcome.modified:
            verdict = Verdict(False, f"modified its input in place ({', '.join(outcome.modified)}): "
                              "work on new tensors and leave the inputs unchanged", verdict.comparisons)
        if verdict.ok:   # a judge may have something to say even on success (e.g. how long it took)
            return self._result(case, ref, Status.PASSED, verdict.message if self.spec.judge else "",
                                seconds, verdict.comparisons)
        diagnosis = self._diagnose(case, value, ref)
        message = verdict.message
        if self.spec.localise is not None and not case.hidden:
            try:
                where = self.spec.localise(case, value, self._probe)
            except Exception:   # a localiser must never cost the student a result
                where = ""
            if where:
                message = f"{message}\n{where}" if message else where
        heatmaps = () if case.hidden else self._heatmaps(value, ref, verdict.comparisons)
        return self._result(case, ref, Status.FAILED, message, seconds, verdict.comparisons, diagnosis, heatmaps)

    def _probe(self, function: str, *args: Any, **kwargs: Any) -> Any:
        if self.session is None or not self.session.alive:
            raise ProbeError("no session")
        outcome = self.session.call(function, args, kwargs, timeout=self._timeout(), plain=True)
        if outcome.kind != "ok":
            raise ProbeError(outcome.kind)
        return outcome.value

    def _diagnose(self, case: Case, value: Any, ref: Any) -> str:
        for mistake in self.spec.mistakes:
            try:
                wrong = _align(mistake.fn(*_clone(case.args), **_clone(dict(case.kwargs))), ref)
            except Exception:
                continue
            if matches(value, wrong, self.spec.outputs, self.tol(case), self.spec.exact):
                return f"{mistake.name}: {mistake.explanation}"
        return ""

    def _heatmaps(self, value: Any, ref: Any, comps: tuple[Comparison, ...]) -> tuple[Heatmap, ...]:
        out = []
        names = self.spec.outputs
        for name in self.spec.heatmaps:
            comp = next((c for c in comps if c.name == name), None)
            if comp is None or comp.ok or name not in names:
                continue
            i = names.index(name)
            a = value[i] if len(names) > 1 and isinstance(value, (tuple, list)) and len(value) > i else value
            e = ref[i] if len(names) > 1 else ref
            if not isinstance(a, torch.Tensor) or a.shape != e.shape or e.dim() < 2:
                continue
            out.append(Heatmap(f"{name} (first {'matrix' if e.dim() > 2 else 'slice'})",
                               _matrix(a), _matrix(e)))
        return tuple(out)

    def _result(self, case: Case, ref: Any, status: Status, message: str, seconds: float = 0.0,
                comps: tuple[Comparison, ...] = (), diagnosis: str = "", heatmaps=()) -> CaseResult:
        if case.hidden:
            return CaseResult(name=case.name, status=status, description="inputs withheld (hidden case)",
                              hidden=True, message=_hidden_message(status, message, comps),
                              comparisons=tuple(feedback.hide(c) for c in comps), diagnosis=diagnosis,
                              seconds=seconds)
        desc = feedback.describe_case(self.spec.reference, case.args, dict(case.kwargs))
        if case.note:
            desc = f"{case.note} — {desc}"
        return CaseResult(name=case.name, status=status, description=desc, message=message, comparisons=comps,
                          diagnosis=diagnosis, heatmaps=heatmaps, seconds=seconds)


def _align(wrong: Any, ref: Any) -> Any:
    """Give a mistake's floating outputs the reference's float dtype (mistakes may compute in
    float64); a float-vs-bool or float-vs-int difference is kept, since it can be the mistake."""
    if isinstance(wrong, torch.Tensor) and isinstance(ref, torch.Tensor):
        if wrong.is_floating_point() and ref.is_floating_point() and wrong.dtype != ref.dtype:
            return wrong.to(ref.dtype)
        return wrong
    if isinstance(wrong, (list, tuple)) and isinstance(ref, (list, tuple)) and len(wrong) == len(ref):
        return type(wrong)(_align(w, r) for w, r in zip(wrong, ref))
    if isinstance(wrong, dict) and isinstance(ref, dict):
        return {k: _align(v, ref.get(k)) for k, v in wrong.items()}
    return wrong


def _hidden_message(status: Status, message: str, comps) -> str:
    """What a hidden case may say: the kind of failure, never an exception's text (which could
    quote the inputs) nor values."""
    if status is Status.FAILED:
        return feedback.comparisons_message(tuple(feedback.hide(c) for c in comps)) if comps else "wrong answer"
    if status is Status.ERROR:
        first = message.split("\n")[0]
        return f"raised {first.split(':')[0]}" if ":" in first else "raised an exception"
    return message.split("\n")[0]


def _matrix(t: torch.Tensor) -> tuple[tuple[float, ...], ...]:
    while t.dim() > 2:
        t = t[0]
    t = t[:HEATMAP_MAX, :HEATMAP_MAX].double().nan_to_num(0.0, posinf=1e9, neginf=-1e9)
    return tuple(tuple(round(float(v), 6) for v in row) for row in t)
