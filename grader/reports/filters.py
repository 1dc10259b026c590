"""Formatting shared by every report: numbers, points, statuses, settings, heatmap cells.

Registered on the one jinja Environment (grader.reports.text) under these names, which stay
stable (templates of other formats use them; the terminal renderables call the functions):

    filters   points        1.5 -> "1.5", 2.0 -> "2", 2/3 -> "0.67": every points figure of every format
              score         (1.5, 9) -> "1.5 / 9" (`e.points|score(e.max_points)`)
              sci           a float in 3 significant digits, "—" for None
              indent_lines  every non-empty line indented by n spaces
              cell_color    a heatmap cell's colour
              setting_label, setting_value, settings_line   grader.reports.labels
              text_line, text_block, md_inline, md_code, md_code_span   grader.reports.escape
    globals   STATUS_MARK (Status -> "PASS", "FAIL", ...), Status, heat_range, grader_fault_note,
              settings_items (grader.reports.labels)
"""
from __future__ import annotations

from grader.reports import escape, labels
from grader.results import Status

STATUS_MARK = {Status.PASSED: "PASS", Status.FAILED: "FAIL", Status.ERROR: "ERROR", Status.TIMEOUT: "TIMEOUT",
               Status.CRASHED: "CRASH", Status.FORBIDDEN: "FORBIDDEN", Status.NOT_IMPLEMENTED: "TODO",
               Status.NOT_RUN: "NOT RUN", Status.SKIPPED: "SKIP", Status.GRADER_FAULT: "INTERNAL"}
# Said once per report when the grader failed on some exercise: the student is not to blame.
GRADER_FAULT = ("The grader failed on {n} exercise{s} ({ids}): a bug in the grader, not in your code. "
                "No grade was given for {them}; please report it (the next run grades {them} again).")


def grader_fault_note(result) -> str:
    """The report-wide sentence about grader faults ("" when there is none)."""
    ids = result.grader_faults
    if not ids:
        return ""
    shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    return GRADER_FAULT.format(n=len(ids), s="" if len(ids) == 1 else "s", ids=shown,
                               them="it" if len(ids) == 1 else "them")


def points(x: float) -> str:
    """Points as every report writes them: at most two decimals, no trailing zeros ("1.5", "2", "0.67")."""
    text = f"{round(float(x), 2) + 0.0:.2f}".rstrip("0").rstrip(".")
    return text if text != "-0" else "0"


def score(x: float, of: float) -> str:
    """`x` points out of `of`: "1.5 / 9"."""
    return f"{points(x)} / {points(of)}"


def sci(x) -> str:
    return "—" if x is None else f"{x:.3g}"


def indent(text: str, n: int = 6) -> str:
    pad = " " * n
    return "\n".join(pad + line if line else line for line in text.splitlines())


def cell_color(v: float, lo: float, hi: float) -> str:
    """Blue (low) to white to red (high) for heatmap cells."""
    t = 0.5 if hi <= lo else (v - lo) / (hi - lo)
    if t < 0.5:
        k = int(255 * t * 2)
        return f"rgb({k},{k},255)"
    k = int(255 * (1 - t) * 2)
    return f"rgb(255,{k},{k})"


def heat_range(h) -> tuple[float, float]:
    values = [v for m in (h.student, h.reference) for row in m for v in row]
    return (min(values), max(values)) if values else (0.0, 1.0)


def register(env) -> None:
    env.filters.update(points=points, score=score, sci=sci, indent_lines=indent, cell_color=cell_color,
                       setting_label=labels.setting_label, setting_value=labels.setting_value,
                       settings_line=labels.settings_line)
    # Every string of a result, whichever field it comes from, passes through its format's filter.
    env.filters.update(text_line=escape.text_line, text_block=escape.text_block, md_inline=escape.md_inline,
                       md_code=escape.md_code, md_code_span=escape.md_code_span)
    env.globals.update(STATUS_MARK=STATUS_MARK, heat_range=heat_range, Status=Status,
                       grader_fault_note=grader_fault_note, settings_items=labels.settings_items)
