"""JUnit XML, the format CI systems read (GitHub test reporters, GitLab, Jenkins, Azure).

    <testsuites>                      one per submission
      <testsuite name="attention">    one per module
        <testcase classname="attention" name="causal_mask" file=... line=...>
          <failure message="the grader's diagnosis">the full feedback</failure>

Mapping of statuses: a wrong answer, a forbidden API or a missing implementation is a
<failure>; the student's code raising, running out of time or crashing is an <error>, and so
is a grader fault (type="grader fault": the grader's bug, no grade); a skipped check is
<skipped>. Problems with the submission as a whole (unreadable, a module that does not import)
are one more failing testcase, `submission::loads`.
Built as data with ElementTree (it escapes), like Gradescope's JSON; a report computes nothing.
Every string is also made plain text for a log (grader.reports.escape: CI systems print these
bodies) and stripped of what XML 1.0 cannot carry, so the file always parses.

`failure_text(exercise)` is the plain-text feedback for one exercise that every CI front-end
shows (JUnit body, pytest failure, GitHub annotation, Classroom message).
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from typing import Any

from grader.reports.escape import text_block, text_line, xml_chars
from grader.results import ExerciseResult, Status, SubmissionResult
from grader.submission.loader import on_disk

_ERRORS = (Status.ERROR, Status.TIMEOUT, Status.CRASHED, Status.GRADER_FAULT)
MAX_CASES = 3


def _clean(text: str) -> str:
    """What XML cannot carry becomes U+FFFD (as it always did); the rest is made plain text for a log."""
    return text_block(xml_chars(text))


def _line(text: str) -> str:
    return text_line(xml_chars(text))


def headline(e: ExerciseResult) -> str:
    """One line: the grader's verdict, with the known mistake it looks like."""
    first = text_line(e.message.splitlines()[0]) if e.message else e.status.value
    return f"{first} — looks like: {text_line(e.diagnosis)}" if e.diagnosis else first


def failure_text(e: ExerciseResult, location: bool = True, max_cases: int = MAX_CASES) -> str:
    """The feedback for one exercise as plain text: headline, diagnosis, first failing cases, notes.

    Hidden cases are listed by name and status only: their inputs and values stay secret.
    Made for a log: a one-line field stays on its line, the lines of a message are indented,
    control characters are shown (grader.reports.escape), so none of it reads as the grader's.
    """
    lines = [text_block(e.message).replace("\n", "\n  ") if e.message else e.status.value]
    if e.diagnosis:
        lines.append(f"Looks like: {text_line(e.diagnosis)}")
    shown = 0
    for c in e.cases:
        if c.status in (Status.PASSED, Status.NOT_RUN, Status.NOT_IMPLEMENTED) or shown >= max_cases:
            continue
        shown += 1
        if c.hidden:
            lines.append(f"- {text_line(c.name)}: {c.status.value}")
            continue
        lines.append(f"- {text_line(c.name)}" + (f" [{text_line(c.description)}]" if c.description else "")
                     + f": {c.status.value}")
        lines += [f"    {m}" for m in text_block(c.message).splitlines()[:6]]
    lines += [f"note: {text_line(n)}" for n in e.notes]
    if location and e.source_file:
        lines.append(f"your function: {text_line(e.source_file)}" + (f":{e.source_line}" if e.source_line else ""))
    if e.reference:
        lines.append(f"expected values: {text_line(e.reference)}")
    return "\n".join(lines)


def _points(x: float) -> str:
    return f"{x:g}"


def _testcase(e: ExerciseResult, root: str | None, submission: str) -> ET.Element:
    attrs = {"classname": _line(e.module), "name": _line(e.function), "time": f"{e.seconds:.3f}"}
    if e.source_file:       # relative to the submission: the file's path on this machine, for CI
        path = on_disk(submission, e.source_file) or e.source_file
        attrs["file"] = _line(os.path.relpath(os.path.abspath(path), root) if root else path)
        if e.source_line:
            attrs["line"] = str(e.source_line)
    case = ET.Element("testcase", attrs)
    props = ET.SubElement(case, "properties")
    for name, value in (("points", _points(e.points)), ("max_points", _points(e.max_points)),
                        ("status", e.status.value), ("cases", f"{e.cases_passed}/{len(e.cases)}")):
        ET.SubElement(props, "property", name=name, value=value)
    if e.status is Status.SKIPPED:
        ET.SubElement(case, "skipped", message=_clean(headline(e)))
    elif not e.passed:
        tag = "error" if e.status in _ERRORS else "failure"
        child = ET.SubElement(case, tag, message=_clean(headline(e)), type=e.status.value)
        child.text = _clean(failure_text(e))
    if e.output:
        truncated = "\n[output truncated]" if e.output_truncated else ""
        ET.SubElement(case, "system-out").text = _clean(e.output + truncated)
    return case


def _suite(name: str, cases: list[ET.Element], seconds: float, points: tuple[float, float] | None) -> ET.Element:
    suite = ET.Element("testsuite", name=name, tests=str(len(cases)),
                       failures=str(sum(c.find("failure") is not None for c in cases)),
                       errors=str(sum(c.find("error") is not None for c in cases)),
                       skipped=str(sum(c.find("skipped") is not None for c in cases)), time=f"{seconds:.3f}")
    if points is not None:
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="points", value=_points(points[0]))
        ET.SubElement(props, "property", name="max_points", value=_points(points[1]))
    suite.extend(cases)
    return suite


def junit_tree(result: SubmissionResult, root: str | None = None) -> ET.Element:
    top = ET.Element("testsuites", name=_line(f"{result.submission}: {_points(result.score)} / "
                                              f"{_points(result.max_score)} points (grader {result.grader_version})"))
    for module, exercises in result.modules().items():
        cases = [_testcase(e, root, result.submission) for e in exercises]
        top.append(_suite(_line(module), cases, sum(e.seconds for e in exercises),
                          (sum(e.points for e in exercises), sum(e.max_points for e in exercises))))
    if result.errors:
        case = ET.Element("testcase", classname="submission", name="loads", time="0.000")
        err = ET.SubElement(case, "error", message=_clean(result.errors[0].splitlines()[0]), type="submission")
        err.text = _clean("\n".join(result.errors))
        top.append(_suite("submission", [case], 0.0, None))
    for key in ("tests", "failures", "errors", "skipped"):
        top.set(key, str(sum(int(s.get(key)) for s in top)))
    top.set("time", f"{result.seconds:.3f}")
    return top


def junit(result: SubmissionResult, root: str | None = None, **_: Any) -> str:
    """`root`: source paths are written relative to it (default: as the engine gave them)."""
    tree = junit_tree(result, root)
    ET.indent(tree)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(tree, encoding="unicode") + "\n"
