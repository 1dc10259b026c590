"""What a sandboxed child's reply may be, decoded in the parent: an Outcome whose every field has the
type the pipeline relies on, or WireError (the child's failure, "protocol")."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader.sandbox import absent_modules, wire


@dataclass
class Outcome:
    """What one call produced, seen from the parent. `kind` is one of:
    ok, error, missing, timeout, crashed, protocol. `called`: the substitutes the call used, as
    the child says (None when it said nothing: no reply, or a session that does not report).
    `absent`: of a child's readiness, the modules its import stood in for (grader.sandbox.absent_modules)."""

    kind: str
    value: Any = None
    error: dict[str, str] = field(default_factory=dict)
    hits: list[dict[str, str]] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    seconds: float = 0.0
    detail: str = ""
    called: list[str] | None = None
    absent: tuple[str, ...] = ()



def outcome(reply: Any) -> Outcome:
    """A decoded reply as an Outcome, each field of the type the pipeline relies on (WireError if not)."""
    def listed(key: str, item: type) -> list:
        got = reply.get(key) or []
        if not isinstance(got, list) or not all(isinstance(x, item) for x in got):
            raise wire.WireError(f"malformed reply: {key}")
        return got
    if not isinstance(reply, dict):
        raise wire.WireError("malformed reply")
    hits = listed("hits", dict)[:20]
    if not all(set(h) == {"rule", "via", "file", "line"} and isinstance(h["rule"], str) and isinstance(h["via"], str)
               and isinstance(h["file"], str) and type(h["line"]) is int for h in hits):
        raise wire.WireError("malformed reply: hits")
    seconds, error = reply.get("seconds") or 0.0, reply.get("error") or {}
    if not isinstance(seconds, (int, float)) or not isinstance(error, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in error.items()):
        raise wire.WireError("malformed reply: seconds or error")
    called = listed("substitutes_called", str) if "substitutes_called" in reply else None
    if reply.get("ready") is True:
        absent = listed("absent", str)
        if len(absent) > absent_modules.MOST or not all(absent_modules.NAME.match(n) for n in absent):
            raise wire.WireError("malformed reply: absent")
        return Outcome("ok", value=listed("functions", str), hits=hits, seconds=float(seconds),
                       detail="; ".join(listed("notes", str)), called=called, absent=tuple(absent))
    if reply.get("ok") is True:
        return Outcome("ok", value=reply.get("value"), hits=hits, modified=listed("modified", str),
                       seconds=float(seconds), called=called)
    kind = "missing" if reply.get("missing") else "error"
    return Outcome(kind, error=error, hits=hits, seconds=float(seconds), called=called)
