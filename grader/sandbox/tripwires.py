"""Run-time detection of forbidden APIs, installed inside the sandboxed child.

Two nets, both recording into one list that travels back with each call's reply:
- attribute tripwires: the forbidden callables (`torch.nn.functional.conv2d`, ...) are
  replaced on their modules by wrappers that record the hit, so names reached through
  `getattr`, `importlib` or aliases still trip;
- a dispatch mode: every ATen operator the student's code reaches is checked against the
  forbidden operator names, whatever Python route led there (`torch.ops.aten.*` included).
Hostile code running in the same process could undo these; they back up the static check,
and whatever they miss, the output is still judged in the parent.
"""
from __future__ import annotations

import functools
import importlib
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode


class Hits:
    def __init__(self) -> None:
        self.items: list[dict[str, str]] = []

    def add(self, rule: str, via: str) -> None:
        hit = {"rule": rule, "via": via}
        if hit not in self.items and len(self.items) < 20:
            self.items.append(hit)


def _resolve(dotted: str) -> tuple[Any, str]:
    """'torch.nn.functional.conv2d' -> (torch.nn.functional, 'conv2d'); also Class.method."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:-1]:
            obj = getattr(obj, p)
        return obj, parts[-1]
    raise LookupError(dotted)


def install(rules: list[dict[str, Any]], hits: Hits) -> None:
    """Replace each rule's `patch` targets with recording wrappers (the child lives for one exercise)."""
    for rule in rules:
        for dotted in rule.get("patch", ()):
            try:
                owner, attr = _resolve(dotted)
                original = getattr(owner, attr)
                setattr(owner, attr, _wire(original, rule["name"], dotted, hits))
            except (LookupError, AttributeError, TypeError):
                continue      # absent in this torch, or read-only (a C type): the ATen net remains


def _wire(original: Any, rule: str, dotted: str, hits: Hits) -> Any:
    if isinstance(original, type):
        class Tripped(original):  # a forbidden class: instantiating it trips
            def __init__(self, *a, **k):
                hits.add(rule, dotted)
                super().__init__(*a, **k)
        Tripped.__name__ = original.__name__
        Tripped.__qualname__ = original.__qualname__
        return Tripped

    @functools.wraps(original)
    def tripped(*a, **k):
        hits.add(rule, dotted)
        return original(*a, **k)
    return tripped


class AtenWatch(TorchDispatchMode):
    """Records forbidden ATen operators reached by any route."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Otherwise TorchDispatchMode wraps __torch_dispatch__ in torch._disable_dynamo, whose
        # first call imports torch._dynamo: about a second in every sandboxed child.
        return False

    def __init__(self, rules: list[dict[str, Any]], hits: Hits) -> None:
        super().__init__()
        self.patterns = [(p, r["name"]) for r in rules for p in r.get("aten", ())]
        self.hits = hits

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.name()
        for pattern, rule in self.patterns:
            if pattern in name:
                self.hits.add(rule, name)
        return func(*args, **(kwargs or {}))
