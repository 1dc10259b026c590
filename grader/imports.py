"""Importing torch-sized modules in a process that lives on after the import: a grading command,
grader batch's parent and its forkserver, a Dask worker process (on its first task).

An import of torch makes ~170,000 objects that the cyclic collector tracks and none of which is
garbage. With the collector on, the import itself runs three full collections (0.03-0.11 s each),
and every later one walks them all again: grader batch's parent, which keeps each result until the
class report is written, spent ~0.5 s of CPU a batch so. So: import with the collector off, then
freeze what the import made (gc.freeze: out of every later collection's sight), collector back on.
"""
from __future__ import annotations

import gc
import importlib


def import_frozen(*modules: str) -> None:
    """Import `modules` (dotted names) with the collector off, then freeze what exists; the
    collector is left as it was found (a process that runs without it stays so)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        for name in modules:
            importlib.import_module(name)
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
