"""The torch intra-op thread count of this process: the one place that changes it.

The grading parent does many tiny torch computations (references, fresh inputs, known
mistakes) while confined children keep the cores busy; an OpenMP pool then makes every BLAS
call wait for a second thread (a (4, 5, 16) float64 matmul took ~20 ms instead of
microseconds on a loaded 2-core machine). So parent-side work runs under `pinned(1)`.

`pinned` is re-entrant and thread-safe: exercises are graded concurrently, each may pin, and
the setting from before the first pin comes back when the last one ends. `configure` sets the
count once for a process of its own (a sandboxed child, a batch worker).

The count is one figure for torch, but OpenMP and MKL keep it for each thread: a thread that
has not yet run an ATen parallel loop starts its first BLAS call with OpenMP's default team (one
thread a core), which then spins beside the children. So every thread that pins sets its own,
not only the first, and a pool started inside a pin gives its threads the count with `follow`.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

import torch

_lock = threading.Lock()
_state = {"users": 0, "saved": 1}


@contextmanager
def pinned(count: int = 1) -> Iterator[None]:
    """Run the block with `count` intra-op threads (the first pin decides; nested pins share it)."""
    with _lock:
        if _state["users"] == 0:
            _state["saved"] = torch.get_num_threads()
        if torch.get_num_threads() != count:        # this thread's own (the docstring says why)
            torch.set_num_threads(count)
        _state["users"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["users"] -= 1
            if _state["users"] == 0 and torch.get_num_threads() != _state["saved"]:
                torch.set_num_threads(_state["saved"])


def configure(count: int) -> None:
    """The thread count of a process that grades or runs on its own (child, worker)."""
    with _lock:
        if torch.get_num_threads() != count:
            torch.set_num_threads(count)


def follow() -> None:
    """Give the calling thread the process's count: the initializer of a thread pool whose threads
    do torch work (grader.pipeline.engine's, started inside a pin)."""
    torch.get_num_threads()     # ATen's first call in a thread sets that thread's OpenMP and MKL counts
