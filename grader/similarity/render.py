"""The similarity report as files: an index, one side-by-side page per flagged pair, a CSV.

    render(report, title) -> {"index.html": ..., "pairs/rnn-1.html": ..., "similarity.csv": ...}

Pages are jinja2 templates (grader.reports.text's one Environment: autoescape, StrictUndefined)
with a Content-Security-Policy that allows no script at all: the code shown is the students'
text and may hold anything, `</pre><script>` included. File names carry no student text (a
pair's page is named by module and rank). The wording informs and does not accuse: a score
says how much code two submissions share beyond the starter files, never who copied whom.
"""
from __future__ import annotations

import csv
import io
import time

from grader.reports import escape
from grader.reports.text import template
from grader.similarity.fingerprints import uncompared
from grader.similarity.records import Pair, Region, Report

CSV_HEAD = ("module", "student_a", "term_a", "student_b", "term_b", "share_a", "share_b", "score",
            "matched_chars", "flagged", "page")


def percent(x: float) -> str:
    return f"{round(100 * x)} %"


def sentence(pair: Pair) -> str:
    """What a flagged pair means, in words that inform (the same sentence everywhere)."""
    return (f"These submissions share {percent(pair.score)} of their code beyond the starter files "
            f"({pair.a.label}: {percent(pair.share_a)} of {pair.module}.py found in the other; "
            f"{pair.b.label}: {percent(pair.share_b)}); review them side by side.")


def render(report: Report, title: str = "") -> dict[str, str]:
    """Every file of the report, by path relative to the output folder."""
    generated = time.strftime("%Y-%m-%d %H:%M")
    files = {"index.html": template("similarity_index.html.j2").render(
        r=report, title=title, generated=generated, percent=percent)}
    for pair in (p for p in report.flagged if p.page):
        files[pair.page] = template("similarity_pair.html.j2").render(
            p=pair, title=title, generated=generated, percent=percent, sentence=escape.text_line(sentence(pair)),
            left=side(pair.a.text, pair.regions_a), right=side(pair.b.text, pair.regions_b),
            matches=matches(pair), settings=report.settings)
    files["similarity.csv"] = csv_text(report)
    return files


def side(text: str, regions: tuple[Region, ...]) -> list[tuple[int, list[tuple[str, int]]]]:
    """(line number, [(text, match number or 0), ...]) for each line of `text`; the comments,
    docstrings and blank edges inside a region are not marked (they were not compared)."""
    cuts: list[tuple[str, int]] = []
    at = 0
    for r in _shown(text, regions):
        start, end = max(r.start, at), min(r.end, len(text))
        if end <= start:
            continue
        if start > at:
            cuts.append((text[at:start], 0))
        cuts.append((text[start:end], r.match))
        at = end
    if at < len(text):
        cuts.append((text[at:], 0))
    lines: list[tuple[int, list[tuple[str, int]]]] = [(1, [])]
    for piece, match in cuts:
        for i, part in enumerate(piece.split("\n")):
            if i:
                lines.append((len(lines) + 1, []))
            if part:
                lines[-1][1].append((escape.text_block(part), match))
    if lines and not lines[-1][1] and text.endswith("\n"):
        lines.pop()
    return lines


def _shown(text: str, regions: tuple[Region, ...]) -> list[Region]:
    gaps = uncompared(text)
    out: list[Region] = []
    for r in sorted(regions, key=lambda r: r.start):
        start = r.start
        for g0, g1 in [*(g for g in gaps if g[1] > r.start and g[0] < r.end), (r.end, r.end)]:
            end = min(g0, r.end)
            while start < end and text[start].isspace():
                start += 1
            while end > start and text[end - 1].isspace():
                end -= 1
            if end > start:
                out.append(Region(start, end, r.match))
            start = max(start, g1)
    return out


def matches(pair: Pair) -> list[dict]:
    """Each numbered match with the lines it covers on either side."""
    out = []
    for n in sorted({r.match for r in pair.regions_a} | {r.match for r in pair.regions_b}):
        out.append({"n": n, "a": _lines(pair.a.text, [r for r in pair.regions_a if r.match == n]),
                    "b": _lines(pair.b.text, [r for r in pair.regions_b if r.match == n])})
    return out


def _lines(text: str, regions: list[Region]) -> str:
    spans = []
    for r in regions:
        first, last = text.count("\n", 0, r.start) + 1, text.count("\n", 0, max(r.start, r.end - 1)) + 1
        spans.append(f"{first}" if first == last else f"{first}–{last}")
    return ", ".join(spans) or "—"


def csv_text(report: Report) -> str:
    """Every pair at or above the floor, highest score first within each module."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_HEAD)
    for m in report.modules:
        for p in m.pairs:
            cell = escape.spreadsheet_cell
            writer.writerow([m.module, cell(p.a.student), p.a.term.value, cell(p.b.student), p.b.term.value,
                             f"{p.share_a:.4f}", f"{p.share_b:.4f}", f"{p.score:.4f}", p.matched,
                             "yes" if p.flagged else "no", p.page])
    return buf.getvalue()


def terminal(report: Report, out: str, listed: int = 10) -> str:
    """A few lines for the terminal: what was compared, the pairs to review, where the files are."""
    s = report.settings
    compared = sum(m.compared for m in report.modules)
    lines = [f"similarity: {report.students} students" +
             (f" and {report.previous} from the previous term" if report.previous else "") +
             f", {len(report.modules)} modules, {compared} pairs compared (pure text analysis: no code was run)"]
    flagged = sorted(report.flagged, key=lambda p: -p.score)
    if flagged:
        lines.append(f"  {len(flagged)} pair{' shares' if len(flagged) == 1 else 's share'} at least "
                     f"{percent(s.threshold)} of their code beyond the starter files; review them:")
        for p in flagged[:listed]:
            lines.append(escape.text_line(f"    {p.module}: {p.a.label} / {p.b.label}  {percent(p.share_a)} / "
                                          f"{percent(p.share_b)}"))
        if len(flagged) > listed:
            lines.append(f"    and {len(flagged) - listed} more (index.html lists them all)")
    else:
        lines.append(f"  no pair shares {percent(s.threshold)} or more of its code beyond the starter files")
    lines += [escape.text_line(f"  note: {n}") for n in report.notes]
    lines.append(f"index.html, similarity.csv and pairs/ in {out}")
    return "\n".join(lines)
