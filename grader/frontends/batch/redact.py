"""The student's view of a result graded with hidden cases, decided from kinds, never from text.

The engine already gives a hidden case only the fixed words of its kind (grader.pipeline.redact).
This is the second line of defence, applied before the files a student reads are written; like
the first, it takes nothing a message says as an instruction. For each hidden case:
- its message stays only if it is one of the sentences the fixed words of its `failure` make for
  this exercise (figures aside: a limit or a share of values is the parent's own number); any
  other text becomes the kind's plain words, and a case with no kind says only its status;
- each comparison keeps its name, verdict and kind, in the fixed words of its `kind`;
- its inputs (description), heatmaps and error figures are dropped.
The exercise's headline follows its cases, and what the student's code printed is withheld once
hidden cases ran (a child runs all of an exercise's hidden cases, so `print(Q)` runs on them too).
Nothing of a hidden case's inputs, expected values or the student's own text (an exception's
message or class name) reaches the files. The gradebook keeps the full result (the instructor's
view); only the files students read pass through here.
"""
from __future__ import annotations

import functools
import re
from dataclasses import replace
from typing import Any

from grader.pipeline.feedback import SAYABLE_EXCEPTIONS, Facts, comparisons_message, shorten, words
from grader.pipeline.redact import WITHHELD, hidden, hide
from grader.results import CaseResult, Comparison, ExerciseResult, FailureKind, Status, SubmissionResult

OUTPUT_WITHHELD = ("What your code printed is withheld for this exercise: it also ran on hidden cases, "
                   "and printed values could reveal their inputs.")
_FIGURE = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def student_view(result: SubmissionResult) -> SubmissionResult:
    """`result` with hidden cases' student-controlled text withheld (unchanged if none ran)."""
    if not any(c.hidden for e in result.exercises for c in e.cases):
        return result
    return replace(result, exercises=tuple(_exercise(e, result.settings) for e in result.exercises))


def _exercise(e: ExerciseResult, settings: dict[str, Any]) -> ExerciseResult:
    hidden_cases = [c for c in e.cases if c.hidden]
    if not hidden_cases:
        return e
    facts = Facts(function=e.function, module=e.module, timeout=float(settings.get("call_timeout_s", 0)),
                  memory_mb=int(settings.get("memory_mb", 0)),
                  submission_timeout=float(settings.get("submission_timeout_s", 0)))
    message, cases = e.message, []
    for c in e.cases:
        if c.hidden:
            safe = _hidden_case(c, facts)
            said, says = _first_line(c.message), _first_line(safe.message)
            if said and said != says:           # the headline quotes the first failing case (shortened)
                message = message.replace(said, says).replace(shorten(said), says)
            c = safe
        cases.append(c)
    output, notes = e.output, e.notes
    if e.output and any(c.status is not Status.NOT_RUN for c in hidden_cases):
        output, notes = "", (*e.notes, OUTPUT_WITHHELD)
    return replace(e, cases=tuple(cases), message=message, output=output, output_truncated=False, notes=notes)


def _hidden_case(c: CaseResult, facts: Facts) -> CaseResult:
    comparisons = tuple(_comparison(x) for x in c.comparisons)
    return replace(c, description=WITHHELD, message=_message(c, comparisons, facts), comparisons=comparisons,
                   heatmaps=())


def _message(c: CaseResult, comparisons: tuple[Comparison, ...], facts: Facts) -> str:
    if c.status is Status.PASSED:
        return ""
    if c.failure is None:       # made outside the engine, or stored before kinds: its status's words
        return hidden(c, facts).message
    if c.failure is FailureKind.WRONG_ANSWER and not all(x.ok for x in comparisons):
        return comparisons_message(comparisons)
    return _one_of(c.message, _sentences(c.failure, facts))


def _comparison(x: Comparison) -> Comparison:
    """Name, verdict and kind, in its kind's fixed words (grader.pipeline.redact.hide)."""
    plain = hide(x)
    if x.ok:
        return plain
    shares = hide(Comparison(x.name, False, kind=x.kind, mismatch_fraction=0.5)).problem
    return replace(plain, problem=_one_of(x.problem, (plain.problem, shares)))


@functools.cache
def _sentences(kind: FailureKind, facts: Facts) -> tuple[str, ...]:
    """Every sentence the fixed words of `kind` make here: for each exception class Python or the
    grader defines (no other class is named), with and without a salvaged module. The first is
    the kind's plain words."""
    variants = [replace(facts, exception=name, import_error=salvaged)
                for name in ("", *sorted(SAYABLE_EXCEPTIONS)) for salvaged in (False, True)]
    return tuple(dict.fromkeys(words(kind, f) for f in variants))


def _one_of(text: str, sentences: tuple[str, ...]) -> str:
    """`text` when it is one of `sentences` but for its figures, else the first sentence."""
    shape = _FIGURE.sub("#", text)
    return text if any(_FIGURE.sub("#", s) == shape for s in sentences) else sentences[0]


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""
