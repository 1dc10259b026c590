"""Run-time detection of forbidden APIs, installed inside the sandboxed child.

Two nets, both recording into one list that travels back with each call's reply:
- attribute tripwires: the forbidden callables (`torch.nn.functional.conv2d`, ...) are
  replaced on their modules by wrappers that record the hit, so names reached through
  `getattr`, `importlib` or aliases still trip. Methods of torch.Tensor (`torch.Tensor.relu`,
  `torch.Tensor.backward`) are replaced on the class: a tensor's `z.relu()` trips, a method of
  the student's own class named `relu` never does. A forbidden object that is neither a function
  nor a class (autograd's engine) is replaced by a proxy whose every method call trips;
- a dispatch mode: every ATen operator the student's code reaches is checked against the
  forbidden operator names, whatever Python route led there (`torch.ops.aten.*` included).
Each hit records the line of the student's code that made the call (the innermost frame of the
call stack outside torch, the standard library and the grader), so the message can quote it.
Hostile code running in the same process could undo these; they back up the static check,
and whatever they miss, the output is still judged in the parent.
"""
from __future__ import annotations

import functools
import importlib
import inspect
import os
import re
import sys
import sysconfig
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from grader.sandbox import tripped_code

# Where torch, the grader and Python's own modules are, each as imported and with its links resolved:
# a confined child cannot always resolve them (a virtual environment reached through a link in a
# folder its private view of the file system hides), and then compares a frame's path as imported.
_NOT_STUDENT = tuple({form(p) + os.sep for form in (os.path.abspath, os.path.realpath) for p in (
    os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    *(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")))})

# Rationale: requires_grad_(False) switches autograd off; only a request to switch it on is a use.
# dotted -> (position of the flag among the call's arguments, self included; its keyword; default).
_ONLY_WHEN_TRUE = {"torch.Tensor.requires_grad_": (1, "requires_grad", True)}


def _student_line() -> tuple[str, int]:
    """(file name, line) of the innermost frame of the student's code on the stack; ("", 0) if none."""
    frame = sys._getframe(2)
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith(("<", *_NOT_STUDENT)) and not os.path.realpath(path).startswith(_NOT_STUDENT):
            return os.path.basename(path), frame.f_lineno
        frame = frame.f_back
    return "", 0


class Hits:
    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.lasting: list[dict[str, Any]] = []     # those that count even at import: copies of code

    def add(self, rule: str, via: str, lasting: bool = False) -> None:
        file, line = _student_line()
        hit = {"rule": rule, "via": via, "file": file, "line": line}
        if hit not in self.items and len(self.items) < 20:
            self.items.append(hit)
            if lasting:
                self.lasting.append(hit)


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
    """Replace each rule's `patch` targets with recording wrappers (the child lives for one exercise):
    the zygote's, made by `prepare`, where the target is still the object it wrapped; else made here."""
    for rule in rules:
        for dotted in rule.get("patch", ()):
            key, ready = (rule["name"], dotted), _ready.get((rule["name"], dotted))
            try:
                if ready is not None and getattr(ready[0], ready[1]) is ready[2]:
                    owner, attr, _, wrapper = ready
                    _installed[key] = hits.add
                    tripped_code.forbid(_trips[key])
                else:
                    owner, attr = _resolve(dotted)
                    wrapper = _wire(getattr(owner, attr), dotted, lambda key=key, add=hits.add: add(*key))
                setattr(owner, attr, wrapper)
            except (LookupError, AttributeError, TypeError):
                continue      # absent in this torch, or read-only (a C type): the ATen net remains


# Wrappers made once in the zygote for every (rule, target) the grader may install, before any child
# is forked: a child only puts its own exercise's in place, where making them cost each child ~0.6 ms
# (classes subclassed, names resolved). One not installed in this process records nothing.
_ready: dict[tuple[str, str], tuple[Any, str, Any, Any]] = {}      # -> (owner, attr, original, wrapper)
_installed: dict[tuple[str, str], Callable[..., None]] = {}     # -> the Hits.add it records with, bound
# at install: a submission that replaces Hits.add afterwards (one assignment) changes none of them
_trips: dict[tuple[str, str], Callable[..., None]] = {}     # -> what the functions armed for it call


def prepare(targets: list[tuple[str, str]]) -> None:
    """Make the wrappers of `targets`, (rule name, dotted target) pairs, for `install` to use; a target
    that does not resolve here is left to `install`, which skips it as before. A Python function is
    tripped in place instead, and a class's own `__init__` too (grader.sandbox.tripped_code): every
    route to it trips, not only its module's name for it."""
    for key in targets:
        try:
            owner, attr = _resolve(key[1])
            original = getattr(owner, attr)
            trip = _trips[key] = functools.partial(_record, key)
            init = vars(original).get("__init__") if isinstance(original, type) else None
            if init is not None:
                tripped_code.arm(init, trip)
            if tripped_code.arm(original, trip):
                _ready[key] = (owner, attr, original, original)
            else:
                _ready[key] = (owner, attr, original, _wire(original, key[1], lambda trip=trip: trip(False, None)))
        except Exception:       # whatever torch's import of a module raises: the child makes its own
            continue
    tripped_code.guard()


def _record(key: tuple[str, str], lasting: bool = False, via: str | None = None, installed: dict = _installed) -> None:
    if key in installed:
        installed[key](key[0], via or key[1], lasting)


def _wire(original: Any, dotted: str, trip: Callable[[], None]) -> Any:
    if isinstance(original, type):
        class Tripped(original):  # a forbidden class: instantiating it trips
            def __init__(self, *a, **k):
                trip()
                super().__init__(*a, **k)
        Tripped.__name__ = original.__name__
        Tripped.__qualname__ = original.__qualname__
        return Tripped
    if not callable(original):
        return _Watched(original, trip)
    trips = _condition(dotted)

    @_looks_like(original)
    def tripped(*a, **k):
        if trips(a, k):
            trip()
        return original(*a, **k)
    return tripped


def _looks_like(original: Any) -> Callable[[Callable], Callable]:
    """functools.wraps without `__wrapped__`: the wrapper keeps the original's name, docstring and
    signature, but inspect.unwrap(), and a student's getattr(f, "__wrapped__"), find the wrapper
    itself, not the untripped original (a closure still holds it: these nets are defence in depth)."""
    def wrap(wrapper: Callable) -> Callable:
        functools.update_wrapper(wrapper, original)
        del wrapper.__wrapped__
        try:
            wrapper.__signature__ = inspect.signature(original)
        except (TypeError, ValueError):      # a builtin without one: (*a, **k) is shown
            pass
        return wrapper
    return wrap


def _condition(dotted: str) -> Callable[[tuple, dict], bool]:
    if dotted not in _ONLY_WHEN_TRUE:
        return lambda a, k: True
    index, keyword, default = _ONLY_WHEN_TRUE[dotted]
    return lambda a, k: bool(a[index] if len(a) > index else k.get(keyword, default))


class _Watched:
    """Stands in for a forbidden object: any method called on it trips, then runs on the original."""

    def __init__(self, original: Any, trip: Callable[[], None]) -> None:
        object.__setattr__(self, "_original", original)
        object.__setattr__(self, "_trip", trip)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._original, name)
        if not callable(value):
            return value

        @_looks_like(value)
        def tripped(*a, **k):
            self._trip()
            return value(*a, **k)
        return tripped


# Why a dispatch mode, though every operator of a watched call crosses into Python under it (~2 us
# more each; ~25-35 ms of the capstone's training in a child): kernels of our own in torch's
# dispatcher on the forbidden operators alone were measured instead, and kept out.
# - Under BackendSelect (always on), every call of a netted operator crossed into Python, watched or
#   not: the catalog's rules net softmax, relu, log_softmax and nll_loss, which the grader's own
#   training calls ~1,800 times, and the capstone's child spent 40-60 ms more, not less.
#   Registered in each child for its own rules alone, a kernel cost ~35 us (the dispatcher's tables
#   copied on write): 6 ms for conv2d's 163 operators, more than the mode costs there.
# - Under a key turned on only while watching (IPU autocasting, which no kernel uses), the capstone
#   gained ~30 ms, but the kernels sit where the mode does not, above autograd and the handling of
#   zero tensors: of 2,408 OpInfo samples, one (torch.sgn with its backward) raised "ZeroTensors are
#   immutable" under them and not under the mode. And a boxed Python kernel receives a number that
#   torch wrapped as a tensor as a Python number, which it cannot pass on (aten::sub.Tensor called
#   by aten::sub.Scalar's kernel).
# A correct call that fails under the net loses its points; the mode sees operators as torch's
# own Python dispatch hands them over.
class AtenWatch(TorchDispatchMode):
    """Records forbidden ATen operators reached by any route: an operator whose name holds one of a
    rule's `aten` substrings, or (for a rule that has them) whose name in its namespace matches the
    rule's family (grader.catalog.spec.Forbidden: `aten::_sparse_softmax`, `aten::_foreach_sigmoid`,
    `mkldnn::_convolution_pointwise`, the same computation in another layout or backend)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Otherwise TorchDispatchMode wraps __torch_dispatch__ in torch._disable_dynamo, whose
        # first call imports torch._dynamo: about a second in every sandboxed child.
        return False

    def __init__(self, rules: list[dict[str, Any]], hits: Hits) -> None:
        super().__init__()
        self.patterns = [(p, r["name"]) for r in rules for p in r.get("aten", ())]
        self.families = [(re.compile(r["family"]).search, r["name"]) for r in rules
                         if r.get("aten") and r.get("family")]
        self.add = hits.add

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.name()
        for pattern, rule in self.patterns:
            if pattern in name:
                self.add(rule, name)
        if self.families:
            base = name.rpartition("::")[2].partition(".")[0]
            for matches, rule in self.families:
                if matches(base):
                    self.add(rule, name)
        return func(*args, **(kwargs or {}))
