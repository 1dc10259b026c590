"""The FORBIDDEN message: what was used, on which line (quoted), why, and what to do instead.

Static hits carry the line the scan proved; run-time hits carry the line of the student's code
that made the call (the tripwire looked it up on the call stack, grader.sandbox.tripwires). The
line is quoted from the parent's copy of the source, never from the child. The words the
reports and tests key on stay first: "uses a forbidden API" (static) and "called a forbidden API
while running" (run time).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePath

from grader.catalog.spec import ExerciseSpec
from grader.pipeline.static import ALWAYS, StaticHit

SHOWN = 5             # hits listed; each distinct line quoted once
QUOTE_CHARS = 120     # a quoted line longer than this is cut


def static_message(spec: ExerciseSpec, hits: Sequence[StaticHit], source: str) -> str:
    """`hits` from grader.pipeline.static in `source`, the module of the exercise."""
    found = [(h.what, h.rule, spec.module, h.line) for h in hits]
    return _message("uses a forbidden API", spec, found, {spec.module: source})


def runtime_message(spec: ExerciseSpec, hits: Sequence[Mapping], sources: Mapping[str, str]) -> str:
    """`hits` as the tripwires recorded them ({"rule", "via", "file", "line"}) and as the kernel counted
    them (also "counted": no line, so said only when no tripwire saw anything: the verdict is the same,
    and a tripwire's hit can quote the line); `sources`: module -> text of the files the child ran."""
    if any(not h.get("counted") for h in hits):
        hits = [h for h in hits if not h.get("counted")]
    found = [(h["via"], h["rule"], PurePath(str(h.get("file") or "")).stem, int(h.get("line") or 0)) for h in hits]
    return _message("called a forbidden API while running", spec, found, sources)


def _message(opening: str, spec: ExerciseSpec, found: list[tuple[str, str, str, int]],
             sources: Mapping[str, str]) -> str:
    # One call can trip several wires (loss.backward() is also torch.autograd.backward and the
    # engine): the first recorded, the outermost, speaks for its line.
    shown, lines = [], []
    for what, rule, module, line in found:
        if module not in sources:         # not a file of the submission (a notebook cell, no frame)
            module, line = spec.module, 0
        where = (module, line) if line else None
        if where is not None and where in lines:
            continue
        if where is not None:
            lines.append(where)
        shown.append((what, rule, module, line))
    listed = "; ".join(f"{what}{_at(module, line, spec)}: {rule}" for what, rule, module, line in shown[:SHOWN])
    quoted = " ".join(q for q in (_quote(sources, m, n, spec) for m, n in lines[:SHOWN]) if q)
    parts = [f"{opening}: {listed}.", quoted, _rationale(spec, shown[0][1]) if shown else ""]
    return " ".join(p for p in parts if p)


def _at(module: str, line: int, spec: ExerciseSpec) -> str:
    if not line:
        return ""
    return f" (line {line})" if module == spec.module else f" ({module}.py, line {line})"


def _quote(sources: Mapping[str, str], module: str, line: int, spec: ExerciseSpec) -> str:
    lines = sources.get(module, "").splitlines()
    if not 0 < line <= len(lines) or not lines[line - 1].strip():
        return ""
    text = lines[line - 1].strip()
    text = text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS - 3] + "..."
    prefix = "" if module == spec.module else f"{module}.py "
    return f"{prefix}line {line}: `{text}`."


def _rationale(spec: ExerciseSpec, rule_name: str) -> str:
    """The rule's words for the student: why the API is forbidden, and what to write instead."""
    for rule in (*spec.forbidden, ALWAYS):
        if rule.name == rule_name:
            return f"Why: {rule.rationale}."
    return ""


def at_import_note(spec: ExerciseSpec, hits: Sequence[Mapping]) -> str:
    """The forbidden calls a module's top level made as it was imported: said, not charged (no call of
    the function made them: a notebook's last cell checking the answer against PyTorch, say)."""
    found = []
    for h in hits:
        said = f"{h['via']}{_at(PurePath(str(h.get('file') or '')).stem, int(h.get('line') or 0), spec)}"
        if said not in found:
            found.append(said)
    if not found:
        return ""
    return (f"At import, your module called {'; '.join(found[:SHOWN])}, which {spec.function} may not use: not "
            "charged, since the function did not make the call (a check of your own, say).")
