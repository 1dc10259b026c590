"""Gradescope's results.json (https://gradescope-autograders.readthedocs.io/en/latest/specs/).

One correctness entry per exercise, `name` = the exercise id. When hidden cases ran, their
share of the exercise's points is a separate entry `<id> [hidden cases]` whose visibility
follows the configuration, and whose output never shows inputs or expected values; the
visible entry, and the total line where the hidden entries are not visible, are of the public
cases alone (Otter's "Public Tests" box does the same).
Performance results become their own entries and `leaderboard` rows. With a late verdict (a
batch's [deadline], grader.deadlines.view) the top-level `score`, which Gradescope takes over the
tests' total, is the final score; `output` and `extra_data` state the raw score and the penalty.
A test's `output` is Markdown (`output_format: md`), so every string of the result in it is
escaped as Markdown; the `text` outputs are plain text for a log (grader.reports.escape).
"""
from __future__ import annotations

import json
from typing import Any

from grader.reports.escape import md_block, md_inline, text_block, text_line
from grader.reports.filters import grader_fault_note, points
from grader.results import ExerciseResult, Status, SubmissionResult


def _case_lines(e: ExerciseResult, hidden: bool) -> list[str]:
    lines: list[str] = []
    if e.status is Status.NOT_IMPLEMENTED:
        return lines
    for c in e.cases:
        if c.hidden != hidden:
            continue
        mark = "passed" if c.status is Status.PASSED else c.status.value
        line = f"- {md_inline(c.name)}: {mark}"
        if c.status is not Status.PASSED and c.message:
            line += f" — {md_inline(c.message.splitlines()[0])}"
        if c.diagnosis:
            line += f" (looks like: {md_inline(c.diagnosis.split(':')[0])})"
        lines.append(line)
    return lines


def _output(e: ExerciseResult, hidden: bool) -> str:
    parts = [md_block(_public_headline(e))] if not hidden else []
    if e.diagnosis and not hidden and (not _has_hidden(e) or any(c.diagnosis == e.diagnosis for c in e.cases
                                                                   if not c.hidden)):
        parts.append(f"Looks like: {md_inline(e.diagnosis)}")
    parts += _case_lines(e, hidden)
    if not hidden:
        parts += [f"Note: {md_inline(n)}" for n in e.notes]
    return "\n".join(parts)


def _has_hidden(e: ExerciseResult) -> bool:
    return any(c.hidden for c in e.cases)


def _public_passed(e: ExerciseResult) -> bool:
    """The visible entry's status: with hidden cases, of the public cases alone."""
    if not _has_hidden(e) or e.status in _WHOLE_EXERCISE:
        return e.passed
    return all(c.status is Status.PASSED for c in e.cases if not c.hidden)


# Statuses said of the exercise as a whole, whatever its cases did
_WHOLE_EXERCISE = (Status.FORBIDDEN, Status.GRADER_FAULT)


def _public_headline(e: ExerciseResult) -> str:
    """The exercise's verdict as its visible entry says it. With hidden cases, of the public cases
    alone, as Gradescope's visibility of the hidden entry asks: the whole exercise's headline counted
    the hidden cases and could name one as the first failure (the red team's code raised a built-in
    exception chosen by the hidden input, named in the visible entry)."""
    if not _has_hidden(e) or e.status in _WHOLE_EXERCISE:
        return e.message
    public = [c for c in e.cases if not c.hidden]
    passed = sum(c.status is Status.PASSED for c in public)
    if passed == len(public):
        return f"all {len(public)} public cases passed"
    first = next(c for c in public if c.status is not Status.PASSED)
    said = first.message.splitlines()[0] if first.message else first.status.value
    return f"{passed} of {len(public)} public cases passed; first failure: {first.name} — {said}"


def _share(e: ExerciseResult, cases, total: int) -> float:
    """The points these cases earned (partial credit by cases passed; nothing when forbidden)."""
    if e.status is Status.FORBIDDEN:
        return 0.0
    return e.max_points * sum(c.status is Status.PASSED for c in cases) / total


def results_json(result: SubmissionResult, hidden_visibility: str = "after_published") -> dict[str, Any]:
    tests: list[dict[str, Any]] = []
    leaderboard: list[dict[str, Any]] = []
    for e in result.exercises:
        name, module = text_line(e.id), text_line(e.module)
        total = len(e.cases) or 1
        public = [c for c in e.cases if not c.hidden]
        hidden = [c for c in e.cases if c.hidden]
        if not e.cases:             # nothing ran (missing module, forbidden API, broken submission)
            public_share, public_score = e.max_points, e.points
        else:
            public_share = e.max_points * len(public) / total
            public_score = _share(e, public, total)
        tests.append({"name": name, "score": round(public_score, 4), "max_score": round(public_share, 4),
                      "status": "passed" if _public_passed(e) else "failed", "output": _output(e, False),
                      "output_format": "md", "visibility": "visible", "tags": [module]})
        if hidden:
            share = e.max_points * len(hidden) / total
            score = _share(e, hidden, total)
            ok = all(c.status is Status.PASSED for c in hidden)
            tests.append({"name": f"{name} [hidden cases]", "score": round(score, 4), "max_score": round(share, 4),
                          "status": "passed" if ok else "failed", "output": _output(e, True),
                          "output_format": "md", "visibility": hidden_visibility, "tags": [module, "hidden"]})
        for p in e.performance:
            tests.append({"name": f"{name} [performance]", "score": p.points, "max_score": p.max_points,
                          "status": "passed" if p.status is Status.PASSED else "failed",
                          "output": text_line(p.message)
                          + (f" (ratio {p.ratio:.2f}x, limit {text_line(p.threshold)}x)" if p.ratio else ""),
                          "output_format": "text", "visibility": "visible", "tags": [module, "performance"]})
            if p.ratio is not None:
                leaderboard.append({"name": f"{name} time ratio", "value": round(p.ratio, 4), "order": "asc"})
    score = round(sum(t["score"] for t in tests), 4)
    late = getattr(result, "late", None)        # the batch's late verdict (grader.deadlines.view)
    if late is not None:                        # a top-level score overrides the tests' total
        score = round(late.final_score, 4)
    fault = grader_fault_note(result)
    out: dict[str, Any] = {
        "score": score,
        "max_score": round(sum(t["max_score"] for t in tests), 4),
        "output": _total_line(score, result.max_score, tests, hidden_visibility)
                  + (_late_lines(late, result.max_score) if late else "")
                  + "".join(f"\n{text_block(err)}" for err in result.errors)
                  + (f"\n{text_line(fault)}" if fault else ""),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {"grader_version": text_line(result.grader_version), "seconds": round(result.seconds, 3),
                       "settings": result.settings, "grader_faults": [text_line(i) for i in result.grader_faults]},
    }
    if late is not None:
        out["extra_data"].update(raw_score=round(late.raw_score, 4), late_penalty=round(late.penalty, 4),
                                 lateness=late.status.value, submitted_at=text_line(late.submitted_at))
    if leaderboard:
        out["leaderboard"] = leaderboard
    return out


_SHOWN = {"after_due_date": "after the due date", "after_published": "when grades are published",
          "hidden": "to your instructor only"}


def _total_line(score: float, max_score: float, tests: list[dict[str, Any]], visibility: str) -> str:
    """The submission's points as the student sees them: where the hidden cases' entries are not
    visible, the public entries' points, and when the hidden ones are shown (the total would tell
    how the hidden cases went)."""
    hidden = [t for t in tests if "hidden" in t["tags"]]
    if not hidden or visibility == "visible":
        return f"{score:g} / {max_score:g} points"
    public = [t for t in tests if "hidden" not in t["tags"]]
    return (f"{round(sum(t['score'] for t in public), 4):g} / {round(sum(t['max_score'] for t in public), 4):g} "
            f"points on the public cases; the hidden cases' "
            f"{round(sum(t['max_score'] for t in hidden), 4):g} points are shown {_SHOWN[visibility]}")


def _late_lines(late, max_score: float) -> str:
    """The feedback's late line, in plain text: when, from which record, and raw − penalty = final."""
    return (f"\nSubmission time: {text_line(late.note)}\nscore {points(late.raw_score)} − late penalty "
            f"{points(late.penalty)} = {points(late.final_score)} / {points(max_score)}")


def gradescope_json(result: SubmissionResult, visibility: str = "after_published", **_: Any) -> str:
    """The `json` report format: results.json as text."""
    return json.dumps(results_json(result, hidden_visibility=visibility), indent=2)
