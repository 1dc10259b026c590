"""Small formatting helpers shared by the templates (numbers, statuses, colours, heatmap cells)."""
from __future__ import annotations

from grader.reports import escape
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


class Colors:
    def __init__(self, on: bool) -> None:
        codes = dict(green="32", red="31", yellow="33", dim="2", bold="1", cyan="36")
        for name, code in codes.items():
            setattr(self, name, f"\033[{code}m" if on else "")
        self.reset = "\033[0m" if on else ""

    def status(self, status: Status) -> str:
        color = self.green if status is Status.PASSED else self.yellow if status in (
            Status.NOT_IMPLEMENTED, Status.SKIPPED, Status.NOT_RUN, Status.GRADER_FAULT) else self.red
        return f"{color}{STATUS_MARK[status]:<9}{self.reset}"


def points(x: float) -> str:
    return f"{x:g}" if x == int(x) else f"{x:.2f}"


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
    env.filters.update(points=points, sci=sci, indent_lines=indent, cell_color=cell_color)
    # Every string of a result, whichever field it comes from, passes through its format's filter.
    env.filters.update(text_line=escape.text_line, text_block=escape.text_block, md_inline=escape.md_inline,
                       md_code=escape.md_code, md_code_span=escape.md_code_span)
    env.globals.update(STATUS_MARK=STATUS_MARK, heat_range=heat_range, Status=Status,
                       grader_fault_note=grader_fault_note)
