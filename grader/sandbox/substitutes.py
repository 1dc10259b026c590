"""A trusted substitute in place of a student's function that the graded one calls (ExerciseSpec.depends).

While lstm_forward is graded, the lstm_cell its code calls is the grader's, so that a bug in the
cell is charged once, to lstm_cell. The substitute answers as the contract's function does. Where
the student's code asks more of the answer than the contract promises, their own function decides:

- a call passing a keyword the substitute does not take, or one it raises on, is their own
  function's (CURRICULUM.md allows extra keyword arguments with defaults: mlp_forward(X, params,
  return_cache=True); conv2d given (H, W) pairs for stride);
- a tuple the substitute returns reads as their own function's value would where a plain tuple has
  no such attribute or key: their lstm_cell may return a namedtuple that their lstm_forward reads
  as `state.h` (or a dict it reads as `state["h"]`: that breaks lstm_cell's contract, charged there
  once). The first such read calls their own function once, with that call's arguments, to learn
  its shape; code that reads the tuple a plain tuple's way never calls it.

Used by the sandboxed child (grader.sandbox.child) and by the notebook's in-process session alike.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from grader.sandbox.trusted.unwatched import unwatched


def recorded(name: str, fn: Any, called: set[str], own: Any = None) -> Callable[..., Any]:
    """`fn` (a substitute) in place of the student's function `own`, noting its name in `called` each
    time it answers a call of the student's code: each reply says which substitutes the call used, for
    the parent's note (data: it decides no grade). It runs outside the operator watch, as the grader's
    own code (grader.sandbox.trusted.unwatched). A call it cannot answer as the contract's function is
    the student's own function's, watched as their code is; without one, an unknown keyword is left out."""
    accepted = _keywords(fn)
    shape = _OwnShape(own) if callable(own) else None

    @functools.wraps(fn)
    def substitute(*args: Any, **kwargs: Any) -> Any:
        if accepted is not None and not kwargs.keys() <= accepted:
            if callable(own):
                return own(*args, **kwargs)
            kwargs = {k: v for k, v in kwargs.items() if k in accepted}
        try:
            with unwatched():
                value = fn(*args, **kwargs)
        except Exception:
            if not callable(own):
                raise
            return own(*args, **kwargs)
        called.add(name)
        if shape is not None and type(value) is tuple:
            return _Answer(value, functools.partial(shape.learn, args, kwargs))
        return value
    return substitute


def _keywords(fn: Any) -> frozenset[str] | None:
    """The keyword arguments `fn` takes (None: any, it has **kwargs, or its signature is unknown)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return frozenset(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


class _OwnShape:
    """How the student's own function shapes the same values (a namedtuple, a tuple subclass with
    properties, a dict by position), learned from one call of it the first time an answer is asked
    for what a plain tuple lacks."""

    def __init__(self, own: Callable[..., Any]) -> None:
        self.own, self.asked = own, False
        self.shape: Callable[[tuple], Any] | None = None

    def learn(self, args: tuple, kwargs: dict) -> Callable[[tuple], Any] | None:
        if not self.asked:
            self.asked = True
            try:
                value = self.own(*args, **kwargs)
            except Exception:       # their function fails here: the answer stays a plain tuple
                value = None
            if isinstance(value, tuple) and type(value) is not tuple:
                kind = type(value)
                self.shape = kind._make if hasattr(kind, "_make") else kind
            elif isinstance(value, dict):
                keys = tuple(value)
                self.shape = lambda values: dict(zip(keys, values)) if len(keys) == len(values) else None
        return self.shape


# A namedtuple's own methods, which only code that knows its type calls: `state._replace(h=h)` reads
# as the student's namedtuple would (a red team's correct lstm_forward lost its points on it). Other
# names with "_" stay a plain tuple's, so probes (`hasattr(x, "_fields")`, `__array__`) never run
# the student's function.
_NAMEDTUPLE_METHODS = frozenset({"_replace", "_asdict", "_make"})


class _Answer(tuple):
    """A substitute's tuple: a plain tuple in every way (it travels, copies and compares as one),
    except that what a tuple lacks (an attribute, a key that is not an index) is read from the same
    values shaped as the student's own function shapes them."""

    def __new__(cls, value: tuple = (), learn: Callable[[], Callable[[tuple], Any] | None] | None = None) -> _Answer:
        answer = super().__new__(cls, value)
        answer.__dict__["_own_shape"] = learn      # no namedtuple field starts with "_"
        return answer

    def _theirs(self) -> Any:
        learn = self.__dict__.get("_own_shape")
        shape = learn() if learn is not None else None
        try:
            return shape(tuple(self)) if shape is not None else None
        except Exception:       # their type is not built from its values: a plain tuple's answer
            return None

    def __getattr__(self, attr: str) -> Any:
        theirs = self._theirs() if not attr.startswith("_") or attr in _NAMEDTUPLE_METHODS else None
        if theirs is None:
            raise AttributeError(f"'tuple' object has no attribute {attr!r}")
        return getattr(theirs, attr)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, (int, slice)) or hasattr(key, "__index__"):
            return tuple.__getitem__(self, key)
        theirs = self._theirs()
        return tuple.__getitem__(self, key) if theirs is None else theirs[key]

    def __reduce__(self) -> tuple:
        return tuple, (tuple(self),)
