"""The catalog: every exercise spec of the course, in curriculum order.

    chapters/    one module (or small package) per chapter: each exercise's cases, reference and
                 known mistakes side by side, in `SPECS`
    references/  what expected values are computed with: PyTorch's modules holding the student's
                 weights, the course's equations (for mistakes and localisers), BPE, float64
    probes/      localisers: which gate, which time step, which sub-layer went wrong
    judges/      checks that replace the comparison: statistical, behavioural, token lists
    spec.py      the data contract (ExerciseSpec, Case, KnownMistake, Forbidden, Verdict)
    rules/       every forbidden-API rule, with its rationale (and PyTorch's Python implementations of it)
    inputs.py    seeded inputs: numbers, parameter bundles, texts

All of it runs in the parent. What a sandboxed child runs (substitutes, drivers, the child side
of probes) is grader.sandbox.trusted, which imports nothing from here. Adding a chapter is adding
its module under chapters/ and its name to CHAPTERS.
"""
from __future__ import annotations

import importlib
from functools import lru_cache

from grader.catalog.spec import ExerciseSpec
from grader.errors import SelectionError

# The chapters, in the course's order (CURRICULUM.md): grader.catalog.chapters.<name>.
CHAPTERS = ("neurons", "activations", "losses", "mlp", "cnn", "rnn", "lstm", "gru", "tokens",
            "attention", "transformer", "moe")


@lru_cache(maxsize=1)
def catalog() -> dict[str, ExerciseSpec]:
    """Exercise id -> spec, for every chapter, in course order."""
    specs: dict[str, ExerciseSpec] = {}
    for name in CHAPTERS:
        module = importlib.import_module(f"grader.catalog.chapters.{name}")
        for spec in module.SPECS:
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
