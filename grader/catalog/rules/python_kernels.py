"""PyTorch's own Python implementations of the computations the rules forbid: its reference
implementations (`torch._refs.softmax`) and decompositions (`torch._decomp.decompositions.lstm_cell`),
what its compiler rewrites operators into. Each computes exactly what the rule's library function
computes, from elementary operators no rule forbids, so neither the ATen watch nor the kernel count
sees one (a red team's route: nine exercises at full marks, softmax to layer_norm and the LSTM).

A rule's implementations are the functions of IMPLEMENTATION_MODULES whose name its `python`
pattern matches, or where it has none its `family` (grader.catalog.spec.Forbidden).
They are added to the rule's static names: `torch._refs.softmax` resolved through the imports is
proof, and these are private modules no correct answer calls. Not to its tripwires: PyTorch compiles
some of them with TorchScript when forward-mode AD first runs (decompositions_for_jvp), and a
tripwire in their place made that fail in every child (a function reached by a built name is left
to the kernel's count, which sees none of them).
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from functools import lru_cache

from grader.catalog.spec import Forbidden

IMPLEMENTATION_MODULES = ("torch._refs", "torch._refs.nn.functional", "torch._refs.special", "torch._refs.linalg",
                          "torch._decomp.decompositions", "torch._decomp.decompositions_for_rng")


@lru_cache(maxsize=1)
def _functions() -> tuple[tuple[str, str], ...]:
    """(module, name) of every public-looking function of the implementation modules."""
    out = []
    for module_name in IMPLEMENTATION_MODULES:
        try:
            module = importlib.import_module(module_name)
        except Exception:       # a torch without it: nothing of it to forbid
            continue
        for name, value in vars(module).items():
            if not name.startswith("__") and callable(value) and not inspect.isclass(value) \
                    and not inspect.ismodule(value):
                out.append((module_name, name))
    return tuple(out)


def implementations(rule: Forbidden) -> tuple[str, ...]:
    """Dotted names of PyTorch's Python implementations of `rule`'s computation."""
    return tuple(f"{module}.{name}" for module, name in _functions() if _naming(rule).search(name))


def _naming(rule: Forbidden) -> re.Pattern:
    """What names a function of the rule's computation: its `python` pattern, else its family."""
    return re.compile(rule.python or rule.family or r"(?!)")


def with_implementations(rule: Forbidden) -> Forbidden:
    """`rule` with PyTorch's Python implementations of it among its static names."""
    extra = tuple(n for n in implementations(rule) if n not in rule.static)
    return dataclasses.replace(rule, static=rule.static + extra) if extra else rule
