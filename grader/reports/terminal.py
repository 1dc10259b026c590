"""What `grader check` prints: rich renderables built from the SubmissionResult, as text.

    terminal(result, color=None, width=None, wall_seconds=None) -> str
    to_text(renderable, color=None, width=None) -> str              (also `grader list`)
    console(color=None, file=None) -> rich Console                  (what decides colours and width)

The report, top to bottom: a header (the submission, the grader, the settings that decide a
case, in words: grader.reports.labels); the submission's own problems; per module, one row per
exercise that was started (mark, name, points, cases) and, under a row that did not pass, the
mistake it looks like, its first failing cases, notes, what the code printed and the
performance checks; then the exercises not started yet, collapsed into one list (the stub's
`NotImplementedError` is still in them: one line each would bury the rest); then the score and
the time the whole run took.

Layout is rich's: text is wrapped at word boundaries to the width (a word longer than a line is
folded), tables align, continuation lines hang under their first line. Colours too: `color`
True or False (`--color`/`--no-color`, `[reports] color`) wins; None lets rich decide from the
Console of standard output (a terminal or not, FORCE_COLOR, NO_COLOR, TTY_COMPATIBLE, TERM).
Only the styles of PALETTE are written, in the 16 standard colours.

Student text is data: every string of the result passes through grader.reports.escape first
(controls made visible, `::` workflow commands defused) and becomes a rich Text, never markup,
so `[bold red]` or `[link=...]` in an exception message is shown as typed. Every line a student
can fill is indented; the lines that start at column 0 are the grader's (module names, the
header's label, "Score:"), and after wrapping, no line starts a workflow command.
"""
from __future__ import annotations

import io
import re
from typing import Any, TextIO

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from grader.reports import labels
from grader.reports.escape import no_legacy_commands, text_block, text_line
from grader.reports.filters import STATUS_MARK, grader_fault_note, points, score
from grader.results import ExerciseResult, Status, SubmissionResult

# Every style the terminal report writes (tests strip exactly these codes).
PALETTE = {"pass": "green", "fail": "red", "todo": "yellow", "dim": "dim", "title": "bold", "hint": "cyan"}
_STATUS_STYLE = {Status.PASSED: "pass", Status.NOT_IMPLEMENTED: "todo", Status.SKIPPED: "todo",
                 Status.NOT_RUN: "todo", Status.GRADER_FAULT: "todo"}       # every other status: "fail"
MARK_WIDTH = max(len(m) for m in STATUS_MARK.values())
CASES_SHOWN = 3          # failing cases shown per exercise; the HTML report has all of them
_SGR = re.compile(r"\x1b\[[0-9;]*m")
_TRAILING = re.compile(r"(?:[ ]|\x1b\[[0-9;]*m)+$", re.MULTILINE)       # spaces (and codes) ending a line
_EMPTY_STYLE = re.compile(r"\x1b\[[0-9;]*[1-9][0-9;]*m\x1b\[0m")
_WORKFLOW = re.compile(r"^((?:\s|\x1b\[[0-9;]*m)*)::", re.MULTILINE)


def console(color: bool | None = None, file: TextIO | None = None) -> Console:
    """A Console on `file` (standard output) that never reads markup, emoji codes or highlights:
    what it prints is said as given. `color` None: rich decides for the stream; True/False: forced."""
    common: dict[str, Any] = dict(file=file, markup=False, emoji=False, highlight=False, legacy_windows=False)
    if color is None:
        return Console(**common)
    if color:
        return Console(**common, force_terminal=True, color_system="standard", no_color=False)
    return Console(**common, color_system=None, no_color=True)


def terminal(result: SubmissionResult, color: bool | None = None, width: int | None = None,
             wall_seconds: float | None = None, **_: Any) -> str:
    """The report as text for standard output (or a file); `wall_seconds`: the whole run, start-up included."""
    return to_text(report(result, wall_seconds), color, width)


def to_text(renderable: RenderableType, color: bool | None = None, width: int | None = None) -> str:
    """`renderable` as text for standard output: styled as `color` says (None: as rich decides for
    standard output), `width` columns (None: the terminal's, else COLUMNS, else 80), no trailing
    spaces, and no line that starts a workflow command."""
    where = console(color)
    styled = where.color_system is not None
    buffer = io.StringIO()
    out = Console(file=buffer, width=width or where.width, force_terminal=styled,
                  color_system="standard" if styled else None, no_color=where.no_color, markup=False,
                  emoji=False, highlight=False, legacy_windows=False)
    out.print(renderable, crop=False)
    text = _TRAILING.sub(lambda m: "".join(_SGR.findall(m.group())), buffer.getvalue())
    text = _EMPTY_STYLE.sub("", text)
    return no_legacy_commands(_WORKFLOW.sub(lambda m: m.group(1) + "\\::", text))


def report(result: SubmissionResult, wall_seconds: float | None = None) -> RenderableType:
    """Every renderable of the report, in order (see the module docstring)."""
    parts: list[RenderableType] = [_Header(result)]
    parts += [_hang(0, "! ", _plain(err, "fail"), "fail") for err in result.errors]
    if result.grader_faults:
        parts.append(_hang(0, "! ", _plain(grader_fault_note(result), "todo"), "todo"))
    started = [[e for e in ex if not _untouched(e)] for ex in result.modules().values()]
    rows = [(group, len(ex)) for ex in started for group in _alike(ex)]
    widths = (max((len(_group_name(g, n)) for g, n in rows), default=0),
              max((len(score(sum(e.points for e in g), sum(e.max_points for e in g))) for g, _ in rows), default=0))
    for exercises in started:
        if exercises:
            module = exercises[0].module
            parts += [Text(""), Text(text_line(module), style=PALETTE["title"], no_wrap=True, overflow="ellipsis")]
            for group in _alike(exercises):
                parts += (_exercise(group[0], widths) if len(group) == 1
                          else _group(group, len(exercises), widths))
    parts += _not_started(result)
    parts += [Text(""), _footer(result, wall_seconds)]
    if result.grader_faults:
        ids = result.grader_faults
        said = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        parts.append(_hang(0, "Not a grade: ", _plain(f"the grader failed on {said}.", "todo"), "todo"))
    return Group(*parts)


# --------------------------------------------------------------------------- pieces
def _plain(text: str, style: str = "", block: bool = False) -> Text:
    """Text of the result, neutralised (escape.py) and styled, never read as markup."""
    return Text(text_block(text) if block else text_line(text), style=PALETTE.get(style, ""))


def _hang(indent: int, label: str | Text, body: Text, style: str = "") -> RenderableType:
    """`label` then `body`, whose wrapped lines hang under its first line, all `indent` spaces in."""
    head = label if isinstance(label, Text) else Text(label, style=PALETTE.get(style, ""))
    if not indent and not head.cell_len:
        return body
    grid = Table.grid()
    grid.add_column(width=indent + head.cell_len, no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(Text(" " * indent) + head, body)
    return grid


def _mark(status: Status) -> Text:
    return Text(STATUS_MARK[status], style=PALETTE[_STATUS_STYLE.get(status, "fail")])


class _Header:
    """The submission and the grader, then the settings that decide a case: on the same line when
    they fit in the width, else under the submission."""

    def __init__(self, r: SubmissionResult) -> None:
        self.submission = Text.assemble((text_line(r.submission), PALETTE["title"]),
                                        (f" · grader {text_line(r.grader_version)}" if r.grader_version else "",
                                         PALETTE["dim"]))
        self.settings = Text(text_line(labels.settings_line(r.settings, labels.HEADER_KEYS)), style=PALETTE["dim"])

    def __rich_console__(self, console: Console, options):
        label = "submission: "
        if not self.settings:
            yield _hang(0, label, self.submission, "dim")
        elif len(label) + self.submission.cell_len + 3 + self.settings.cell_len <= options.max_width:
            yield _hang(0, label, Text.assemble(self.submission, (" · ", PALETTE["dim"]), self.settings), "dim")
        else:
            yield _hang(0, label, Text.assemble(self.submission, "\n", self.settings), "dim")


class _Row:
    """A row: mark, name (or the names of a group), points, cases; the names' column as wide as the
    longest name when the width allows (so the rows of every module align), narrower when it does not."""

    def __init__(self, status: Status, name: str, points_: str, cases: str, widths: tuple[int, int]) -> None:
        self.status, self.name, self.points, self.cases = status, name, points_, cases
        self.name_width, self.points_width = widths

    def __rich_console__(self, console: Console, options):
        fixed = 2 + MARK_WIDTH + 1 + self.points_width + 1 + 12
        grid = Table.grid(padding=(0, 1, 0, 0))
        grid.add_column(width=2 + MARK_WIDTH, no_wrap=True)
        grid.add_column(width=max(8, min(self.name_width + 1, options.max_width - fixed)), overflow="fold")
        grid.add_column(width=self.points_width, justify="right", no_wrap=True)
        grid.add_column()
        grid.add_row(Text("  ") + _mark(self.status), Text(text_line(self.name)), self.points,
                     Text(self.cases, style=PALETTE["dim"]))
        yield grid


def _exercise(e: ExerciseResult, widths: tuple[int, int]) -> list[RenderableType]:
    cases = f"  {e.cases_passed}/{len(e.cases)} cases"
    return [_Row(e.status, e.function, score(e.points, e.max_points), cases, widths), *_details(e)]


def _alike(exercises: list[ExerciseResult]) -> list[list[ExerciseResult]]:
    """The module's exercises in order, those that ran no case and ended the same way (the same
    status and words: no such module, the grader failed, ...) together, said once."""
    groups: dict[tuple, list[ExerciseResult]] = {}
    for i, e in enumerate(exercises):
        key = (e.status, e.message, e.diagnosis) if not e.cases and not e.passed and not e.performance else i
        groups.setdefault(key, []).append(e)
    return list(groups.values())


def _group_name(group: list[ExerciseResult], module_size: int) -> str:
    if len(group) == 1:
        return text_line(group[0].function)
    return f"all {len(group)} exercises" if len(group) == module_size else f"{len(group)} exercises"


def _group(group: list[ExerciseResult], module_size: int, widths: tuple[int, int]) -> list[RenderableType]:
    e, name = group[0], _group_name(group, module_size)
    total = score(sum(x.points for x in group), sum(x.max_points for x in group))
    out: list[RenderableType] = [_Row(e.status, name, total, "", widths)]
    if len(group) < module_size:
        out.append(_hang(6, "", _plain(", ".join(x.function for x in group), "dim")))
    return out + _details(e)


def _failing(e: ExerciseResult):
    return [c for c in e.cases if c.status not in (Status.PASSED, Status.NOT_RUN, Status.NOT_IMPLEMENTED)]


def _details(e: ExerciseResult) -> list[RenderableType]:
    """What is said under an exercise's row: nothing when it passed (but its performance checks)."""
    out: list[RenderableType] = []
    if not e.passed:
        failing = _failing(e)
        if not failing:            # no case to show: the headline says what happened (import, forbidden, fault...)
            out.append(_hang(6, "", _plain(e.message, block=True)))
        if e.diagnosis:
            out.append(_hang(6, "Looks like: ", _plain(e.diagnosis, "hint"), "hint"))
        groups: dict[tuple[str, str], list] = {}      # cases that failed the same way are said once
        for case in failing:
            groups.setdefault((case.message, case.diagnosis), []).append(case)
        for (message, diagnosis), cases in list(groups.items())[:CASES_SHOWN]:
            out.append(_hang(6, "- ", _plain(_case_names(cases, len(e.cases)), "dim"), "dim"))
            if message:
                out.append(_hang(8, "", _plain(message, block=True)))
            if diagnosis and diagnosis != e.diagnosis:
                out.append(_hang(8, "looks like: ", _plain(diagnosis, "hint"), "hint"))
        more = sum(len(cases) for cases in list(groups.values())[CASES_SHOWN:])
        if more:
            out.append(_hang(6, "", Text(f"… and {more} more failing case{'s' if more != 1 else ''} "
                                         "(the HTML report shows every case)", style=PALETTE["dim"])))
        for note in e.notes:
            out.append(_hang(6, "note: ", _plain(note, "dim"), "dim"))
        if e.output:
            out.append(_hang(6, "", Text(f"your code printed {len(e.output)} characters"
                                         f"{' (truncated)' if e.output_truncated else ''}; see the HTML report",
                                         style=PALETTE["dim"])))
    for p in e.performance:
        said = text_line(p.name)
        if p.ratio is not None:
            said += f": {p.ratio:.2f}x the reference" + (f" (limit {text_line(p.threshold)}x)" if p.threshold else "")
        if p.message:
            said += f" — {text_line(p.message)}"
        out.append(_hang(6, _mark(p.status).append(" " * (1 + MARK_WIDTH - len(STATUS_MARK[p.status]))),
                         Text(said)))
    return out


def _case_names(cases, total: int) -> str:
    """One case: its name and inputs; several that failed alike: their names, the first three."""
    if len(cases) == 1:
        case = cases[0]
        return case.name + (f" [{case.description}]" if case.description else "")
    if len(cases) == total:
        return f"all {total} cases"
    names = "; ".join(c.name for c in cases[:CASES_SHOWN])
    rest = len(cases) - CASES_SHOWN
    return f"{len(cases)} cases: {names}" + (f" and {rest} more" if rest > 0 else "")


def _untouched(e: ExerciseResult) -> bool:
    """The stub is untouched: every case met its NotImplementedError, none passed."""
    return e.status is Status.NOT_IMPLEMENTED and e.cases_passed == 0


def _not_started(result: SubmissionResult) -> list[RenderableType]:
    todo = {m: [e for e in ex if _untouched(e)] for m, ex in result.modules().items()}
    todo = {m: ex for m, ex in todo.items() if ex}
    n = sum(len(ex) for ex in todo.values())
    if not n:
        return []
    total = sum(e.max_points for ex in todo.values() for e in ex)
    head = Text.assemble((f"{n} exercise{'s' if n != 1 else ''} not started "
                          f"({points(total)} point{'s' if total != 1 else ''})", PALETTE["title"]),
                         (": replace each `raise NotImplementedError(...)` with your code", PALETTE["dim"]))
    grid = Table.grid(padding=(0, 2, 0, 0))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for module, exercises in todo.items():
        grid.add_row(Text("  " + text_line(module), style=PALETTE["todo"]),
                     Text(", ".join(text_line(e.function) for e in exercises)))
    return [Text(""), _hang(0, "", head), grid]


def _footer(r: SubmissionResult, wall_seconds: float | None) -> Text:
    took = (f"{wall_seconds:.1f} s in all, {r.seconds:.1f} s of it grading" if wall_seconds is not None
            else f"graded in {r.seconds:.1f} s")
    return Text.assemble((f"Score: {score(r.score, r.max_score)}", PALETTE["title"]), (f" · {took}", PALETTE["dim"]))
