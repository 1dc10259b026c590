"""The student's view of a result graded with hidden cases: nothing that could show their inputs.

The engine already withholds a hidden case's inputs, expected values and mismatches. Two routes
stay open to a student's own code, and this closes them before feedback is written:
- an exception message: `raise ValueError(str(Q))` on a hidden case would print Q;
- captured output: `print(Q)` runs on hidden cases too (one child runs all of an exercise's cases).
A hidden case keeps its name, status, the kind of error and the diagnosis (and an error message
word for word the same as a public case's, which reveals nothing). The gradebook keeps
the full result (the instructor's view); only the files students read are redacted.
"""
from __future__ import annotations

import re
from dataclasses import replace

from grader.results import CaseResult, ExerciseResult, Status, SubmissionResult

OUTPUT_WITHHELD = ("What your code printed is withheld for this exercise: it also ran on hidden cases, "
                   "and printed values could reveal their inputs.")
_KIND = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*)(?::|$)")
_STUDENT_WORDS = (Status.ERROR,)          # statuses whose message quotes the student's exception


def student_view(result: SubmissionResult) -> SubmissionResult:
    """`result` with hidden cases' student-controlled text withheld (unchanged if none ran)."""
    if not any(c.hidden for e in result.exercises for c in e.cases):
        return result
    return replace(result, exercises=tuple(_exercise(e) for e in result.exercises))


def _exercise(e: ExerciseResult) -> ExerciseResult:
    hidden = [c for c in e.cases if c.hidden]
    if not hidden:
        return e
    message = e.message
    public = {c.message.splitlines()[0] for c in e.cases if not c.hidden and c.message}
    cases = []
    for c in e.cases:
        if c.hidden and c.status in _STUDENT_WORDS and c.message and c.message.splitlines()[0] not in public:
            safe = _safe_message(c)
            first = c.message.splitlines()[0]
            message = message.replace(first, safe)
            c = replace(c, message=safe)
        cases.append(c)
    ran = any(c.status is not Status.NOT_RUN for c in hidden)
    output, notes = e.output, e.notes
    if ran and e.output:
        output, notes = "", (*e.notes, OUTPUT_WITHHELD)
    return replace(e, cases=tuple(cases), message=message, output=output, output_truncated=False, notes=notes)


def _safe_message(c: CaseResult) -> str:
    first = c.message.splitlines()[0]
    if first.startswith("raised "):            # the engine already reduced it to the exception type
        return f"your code {first} on this hidden case"
    if first.startswith("ran out of memory"):
        return first.split(" (", 1)[0]
    kind = _KIND.match(first)
    what = f"raised {kind.group(1)}" if kind else "raised an error"
    return f"your code {what} on this hidden case (its message is withheld: it could show the hidden inputs)"
