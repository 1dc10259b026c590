"""The catalog: every exercise spec of the course, in curriculum order.

Each chapter is a module here (`grader/catalog/attention.py`, ...) exposing `SPECS`, a tuple
of ExerciseSpec. Adding a chapter is adding its file; the order below is the course's.
"""
from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from grader.catalog.spec import ExerciseSpec
from grader.errors import SelectionError

COURSE_ORDER = ("neurons", "activations", "losses", "mlp", "cnn", "rnn", "lstm", "gru", "tokens",
                "attention", "transformer", "moe")


@lru_cache(maxsize=1)
def catalog() -> dict[str, ExerciseSpec]:
    """Exercise id -> spec, for every chapter present, in course order."""
    present = {m.name for m in pkgutil.iter_modules(__path__) if m.name not in ("spec",) and not m.name.startswith("_")}
    order = [m for m in COURSE_ORDER if m in present] + sorted(present - set(COURSE_ORDER))
    specs: dict[str, ExerciseSpec] = {}
    for name in order:
        module = importlib.import_module(f"grader.catalog.{name}")
        for spec in getattr(module, "SPECS", ()):
            if spec.id in specs:
                raise RuntimeError(f"exercise {spec.id} is defined twice in the catalog")
            specs[spec.id] = spec
    return specs


def select(names: list[str] | tuple[str, ...]) -> list[ExerciseSpec]:
    """Resolve `attention` (a module) or `attention.causal_mask` (an exercise); empty = all."""
    specs = catalog()
    if not names:
        return list(specs.values())
    chosen: dict[str, ExerciseSpec] = {}
    modules = {s.module for s in specs.values()}
    for name in names:
        if name in specs:
            chosen[name] = specs[name]
        elif name in modules:
            chosen.update({i: s for i, s in specs.items() if s.module == name})
        else:
            import difflib
            close = difflib.get_close_matches(name, [*modules, *specs], n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise SelectionError(f"unknown exercise or module '{name}'.{hint} `grader list` shows them all.")
    return [s for i, s in specs.items() if i in chosen]
