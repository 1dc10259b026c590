"""The child side of transformer_forward's localiser: while the student's transformer_forward
runs, the calls it makes of encoder_layer and decoder_layer (the grader's own versions while
this exercise is graded) are recorded; the parent then probes `TRACE_ACCESSOR()` for the
record and compares those intermediate tensors with the reference's."""
from __future__ import annotations

import inspect
from typing import Callable

TRACE_ACCESSOR = "_grader_trace"
_TRACED = ("encoder_layer", "decoder_layer")


def _recorder(name: str, fn: Callable, trace: list) -> Callable:
    sig = inspect.signature(fn)

    def recorded(*args, **kwargs):
        out = fn(*args, **kwargs)
        try:
            a = sig.bind(*args, **kwargs).arguments
            first = next(iter(a.values()))
            entry = {"fn": name, "in": first.detach().clone()}
            if name == "decoder_layer":
                entry["memory"] = a["memory"].detach().clone()
            trace.append(entry)
        except Exception:      # tracing is best effort and never changes what the student gets
            pass
        return out
    return recorded


def traced_call(module, name: str, *args, **kwargs):
    """Call the student's function with its calls to the traced functions recorded; the record
    of the last call is then available to probes as `TRACE_ACCESSOR()`."""
    trace: list = []
    saved = {n: getattr(module, n) for n in _TRACED if callable(getattr(module, n, None))}
    for n, fn in saved.items():
        setattr(module, n, _recorder(n, fn, trace))
    try:
        return getattr(module, name)(*args, **kwargs)
    finally:
        for n, fn in saved.items():
            setattr(module, n, fn)
        setattr(module, TRACE_ACCESSOR, lambda: list(trace))
