"""A stand-in for the sandbox that calls a function living in this process (a notebook's kernel).

It speaks the sandbox's interface (`open(...) -> session`, `session.call(...) -> Outcome`), so
the engine's own `grade_exercise` (cases, references, comparison, known mistakes, localisers,
forbidden-API tripwires, scoring) grades a notebook function exactly as it grades a file.
What it does NOT give is the sandbox's protection: the student's code runs here, with the
grader's memory, files and environment in reach. That is nbgrader's model too (autograde runs
student code in the notebook's kernel); the protected path is `grader check`/`grader batch` on
the .ipynb file. What it keeps:
- arguments and return values go through the wire format (grader.sandbox.wire), so the
  function gets fresh tensors and the judge sees plain ones, as in the sandbox;
- dependencies are replaced by the trusted substitutes during each call, then put back; each
  wrapped as the sandbox's child wraps it (grader.sandbox.substitutes), and each reply says
  which ones the call used;
- forbidden APIs are tripwired during each call, then put back;
- a call is stopped after the time limit (SIGALRM, in the main thread only);
- torch runs with the sandbox's thread count, the global RNG seeded with 0 (both put back after);
- what the function prints is captured (so nbgrader never sees it as a failing stderr).
"""
from __future__ import annotations

import contextlib
import importlib
import io
import os
import signal
import sysconfig
import threading
import time
import traceback
from typing import Any, Callable

import torch

from grader import threads
from grader.sandbox import tripwires, wire
from grader.sandbox.child import _snapshot, modified_inputs      # the sandbox's own in-place-edit check
from grader.sandbox.runner import Limits, Outcome
from grader.sandbox.substitutes import recorded

_GRADER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIBRARY_DIRS = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")})


class _CallTimeout(BaseException):
    """Raised into the student's function when its time is up (BaseException: `except Exception` in
    student code does not swallow it)."""


class InProcessSandbox:
    """Opens sessions in which `name` is `fn`, looked up beside the globals `fn` was defined with
    (a notebook's namespace), as if they were the student's module."""

    def __init__(self, name: str, fn: Callable[..., Any], limits: Limits | None = None) -> None:
        self.name, self.fn = name, fn
        self.limits = limits or Limits()

    def open(self, workdir: str, module: str, *, forbidden=(), substitutes=None, driver=None,
             import_timeout: float = 10.0) -> "InProcessSession":
        glob = getattr(self.fn, "__globals__", None)
        glob = glob if isinstance(glob, dict) else {}
        return InProcessSession(glob, {self.name: self.fn}, list(forbidden), dict(substitutes or {}),
                                driver, self.limits)

    def shutdown(self) -> None:
        pass


def _load(ref: str) -> Any:
    mod, _, name = ref.partition(":")
    return getattr(importlib.import_module(mod), name)


class InProcessSession:
    def __init__(self, glob: dict[str, Any], pinned: dict[str, Any], rules: list[dict],
                 substitutes: dict[str, str], driver: str | None, limits: Limits) -> None:
        """`glob`: the notebook's globals; `pinned`: the function under test by its exercise name
        (it wins over a global of that name: the student may have passed `my_mask`)."""
        self.glob, self.pinned, self.rules, self.limits = glob, pinned, rules, limits
        self.namespace = {**glob, **pinned}
        self.substitutes = {name: _load(ref) for name, ref in substitutes.items()}
        self.driver = _load(driver) if driver else None
        self.alive = True
        self._out = io.StringIO()
        # As in the sandbox's child: the global RNG seeded with 0 for the session (put back on close).
        self._rng = torch.random.get_rng_state()
        torch.manual_seed(0)
        self.ready = Outcome("ok", value=sorted(n for n, v in self.namespace.items() if callable(v)))

    def call(self, function: str, args: tuple = (), kwargs: dict | None = None, *,
             timeout: float = 10.0, plain: bool = False, encoded: bytes | None = None) -> Outcome:
        fn = self.namespace.get(function)
        if not callable(fn):
            return Outcome("missing", error={"type": "MissingFunction", "message": function, "traceback": ""})
        try:
            args, kwargs = wire.loads(wire.arguments(args, kwargs) if encoded is None else encoded)
        except wire.WireError as e:          # a case the wire cannot carry: the grader's problem
            return Outcome("protocol", detail=str(e))
        before = [_snapshot(a) for a in args], {k: _snapshot(v) for k, v in kwargs.items()}
        hits = tripwires.Hits()
        self._view, self._called = None, set()
        start = time.perf_counter()
        try:
            with self._guarded(hits, timeout):
                if self.driver is not None and not plain:
                    value = self.driver(self._module(), function, *args, **kwargs)
                else:
                    value = fn(*args, **kwargs)
        except _CallTimeout:
            self.alive = False
            return Outcome("timeout", hits=hits.items, seconds=time.perf_counter() - start)
        except KeyboardInterrupt:
            raise                            # the person at the notebook pressed stop
        except BaseException as exc:         # SystemExit too: a student error, as in the sandbox
            return Outcome("error", error=_error(exc), hits=hits.items, seconds=time.perf_counter() - start,
                           called=sorted(self._called))
        seconds = time.perf_counter() - start
        modified = modified_inputs(fn, before, args, kwargs)
        try:
            value = wire.loads(wire.dumps(value))
        except wire.WireError as e:
            return Outcome("error", error={"type": "UnsendableResult", "message": str(e), "traceback": ""},
                           hits=hits.items, seconds=seconds)
        return Outcome("ok", value=value, hits=hits.items, modified=modified, seconds=seconds,
                       called=sorted(self._called))

    def _module(self) -> "_ModuleView":
        """What a spec's driver sees as the student's module: the notebook's globals, so a driver that
        wraps a function (train_xor counts calls of mlp_backward) wraps what the student's code calls."""
        self._view = _ModuleView(self.glob, self.pinned)
        return self._view

    @contextlib.contextmanager
    def _guarded(self, hits: tripwires.Hits, timeout: float):
        """Substitutes, tripwires, output capture and the time limit around one call; all undone after."""
        glob = self.glob
        saved_globals = {n: glob.get(n, _ABSENT) for n in self.substitutes}
        glob.update({n: recorded(n, fn, self._called, None if saved_globals[n] is _ABSENT else saved_globals[n])
                     for n, fn in self.substitutes.items()})       # wrapped as the sandbox's child wraps them
        saved = _originals(self.rules)
        tripwires.install(self.rules, hits)
        watch = tripwires.AtenWatch(self.rules, hits) if any(r.get("aten") for r in self.rules) else None
        try:     # the sandbox's thread count (same float sums), as in a sandboxed child
            with threads.pinned(self.limits.threads), contextlib.redirect_stdout(self._out), \
                    contextlib.redirect_stderr(self._out), _time_limit(timeout), \
                    (watch if watch is not None else contextlib.nullcontext()):
                yield
        finally:
            for owner, attr, original in reversed(saved):
                setattr(owner, attr, original)
            if self._view is not None:
                self._view.restore()
            for name, old in saved_globals.items():
                if old is _ABSENT:
                    glob.pop(name, None)
                else:
                    glob[name] = old

    def close(self) -> None:
        self.kill()

    def kill(self) -> str:
        if self.alive:
            torch.random.set_rng_state(self._rng)
        self.alive = False
        return "stopped"

    @property
    def output(self) -> tuple[str, bool]:
        text = self._out.getvalue()
        keep = self.limits.output_bytes
        return text[:keep], len(text) > keep


_ABSENT = object()


class _ModuleView:
    """Attribute access on a globals dict, `pinned` names first; every write is undone by restore()."""

    def __init__(self, glob: dict[str, Any], pinned: dict[str, Any]) -> None:
        object.__setattr__(self, "_glob", glob)
        object.__setattr__(self, "_pinned", dict(pinned))
        object.__setattr__(self, "_saved", {})

    def __getattr__(self, name: str) -> Any:
        for source in (self._pinned, self._glob):
            if name in source:
                return source[name]
        raise AttributeError(name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._pinned.pop(name, None)
        self._saved.setdefault(name, self._glob.get(name, _ABSENT))
        self._glob[name] = value

    def __dir__(self):
        return sorted(set(self._glob) | set(self._pinned))

    def restore(self) -> None:
        for name, old in self._saved.items():
            if old is _ABSENT:
                self._glob.pop(name, None)
            else:
                self._glob[name] = old
        self._saved.clear()


def _originals(rules: list[dict]) -> list[tuple[Any, str, Any]]:
    """(owner, attribute, original) of every API the tripwires will patch: the sandbox's child never
    puts them back (it dies after the exercise), but this process lives on, so they are restored."""
    saved = []
    for rule in rules:
        for dotted in rule.get("patch", ()):
            parts = dotted.split(".")
            for i in range(len(parts) - 1, 0, -1):
                try:
                    owner = importlib.import_module(".".join(parts[:i]))
                    for p in parts[i:-1]:
                        owner = getattr(owner, p)
                    saved.append((owner, parts[-1], getattr(owner, parts[-1])))
                except (ImportError, AttributeError):
                    continue
                break
    return saved


@contextlib.contextmanager
def _time_limit(seconds: float):
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield                                # no safe way to interrupt: nbgrader's cell timeout applies
        return

    def expired(signum, frame):
        raise _CallTimeout()
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.01))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _error(exc: BaseException) -> dict[str, str]:
    """The error record the sandbox sends, with the student's frames only (not the grader's, not torch's)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith(_GRADER_DIR) and not f.filename.startswith(_LIBRARY_DIRS)]
    lines = []
    for f in frames[-6:]:
        lines.append(f"  {_where(f.filename)}, line {f.lineno}, in {f.name}")
        if f.line:
            lines.append(f"    {f.line.strip()}")
    msg = str(exc)
    return {"type": type(exc).__name__, "message": msg if len(msg) <= 2000 else msg[:2000] + " ...",
            "traceback": "\n".join(lines)}


def _where(filename: str) -> str:
    """ipykernel names cells /tmp/ipykernel_<pid>/<hash>.py: say 'a notebook cell' instead."""
    if "ipykernel_" in filename or filename.startswith("<ipython-input"):
        return "notebook cell"
    return filename

