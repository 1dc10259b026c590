"""Importing torch-sized modules in a process that lives on after the import: a grading command,
grader batch's parent and its forkserver, a Dask worker process (on its first task).

An import of torch makes ~170,000 objects that the cyclic collector tracks and none of which is
garbage. With the collector on, the import itself runs three full collections (0.03-0.11 s each),
and every later one walks them all again: grader batch's parent, which keeps each result until the
class report is written, spent ~0.5 s of CPU a batch so. So: import with the collector off, then
freeze what the import made (gc.freeze: out of every later collection's sight), collector back on.

And Ctrl-C during the import is raised once it is done, not inside it: torch's C initialisation
clears whatever error importing numpy raises, a KeyboardInterrupt included, so a Ctrl-C in the
first half second of a command was lost, and the command went on with a torch that had no numpy.
"""
from __future__ import annotations

import gc
import importlib
import signal
import threading
from contextlib import contextmanager
from typing import Iterator


def import_frozen(*modules: str) -> None:
    """Import `modules` (dotted names) with the collector off, then freeze what exists; the
    collector is left as it was found (a process that runs without it stays so)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        with _interrupt_after():
            for name in modules:
                importlib.import_module(name)
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


@contextmanager
def _interrupt_after() -> Iterator[None]:
    """A Ctrl-C (SIGINT) that arrives in the block is raised as KeyboardInterrupt when it ends. Only
    where Python's own handler is in place, in the main thread (elsewhere no signal handler can be
    set, nor is KeyboardInterrupt raised)."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    caught: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if caught:
        raise KeyboardInterrupt
