"""The timed loop: one function over a block of input sets (inside the sandboxed child, or
in-process for the tests and benchmarks).

Each call gets its own clones of its input set, made before the start mark; after each call,
outside the timed window, the loop checks that the inputs came back unchanged, that every
returned tensor is a plain torch.Tensor, and that the environment both sides share is intact:
torch's thread count, the TF32 switches on CUDA, and the clocks of the `time` module.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from grader import threads
from grader.trees import clone, tree_map

# The clocks as they were when this module was imported (in the child: before the student's
# module), so a replacement made by the student's code is seen, reported and undone.
CLOCKS = {name: getattr(time, name) for name in ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns",
                                                 "time", "time_ns", "process_time", "thread_time")}
MAX_PROBLEMS = 8
_THREAD_TIME = CLOCKS["thread_time"]


def to_device(x: Any, device: str) -> Any:
    return tree_map(lambda t: t.to(device), x)


def changed(original: Any, given: Any) -> bool:
    """Did the copy handed to the function come back different from the original?"""
    if isinstance(original, torch.Tensor):
        if not isinstance(given, torch.Tensor) or given.shape != original.shape or given.dtype != original.dtype:
            return True
        return not (torch.equal(given, original) or (original.is_floating_point() and torch.equal(
            torch.nan_to_num(given.detach()), torch.nan_to_num(original))))
    if isinstance(original, (list, tuple)):
        return not isinstance(given, (list, tuple)) or len(given) != len(original) or any(
            changed(o, g) for o, g in zip(original, given))
    if isinstance(original, dict):
        return not isinstance(given, dict) or any(changed(v, given.get(k)) for k, v in original.items())
    return False


def not_plain(value: Any) -> list[str]:
    """Type names of returned tensors that are not exactly torch.Tensor (subclasses, wrappers)."""
    if isinstance(value, torch.Tensor):
        return [] if type(value) is torch.Tensor else [type(value).__name__]
    if isinstance(value, (list, tuple)):
        return [n for v in value for n in not_plain(v)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in not_plain(v)]
    return []


def fingerprint(value: Any) -> list[float]:
    """Two sums per returned tensor (of its values and of their magnitudes, in its own dtype), taken
    right after the call returned: the parent recomputes them on the outputs it fetches later, so
    an output finished outside the timed window (a lazy fill, a background thread) does not match."""
    out: list[float] = []
    if isinstance(value, torch.Tensor):
        v = value.detach()
        if not (v.is_floating_point() or v.is_complex()):
            v = v.to(torch.float64)
        out += [float(v.sum()), float(v.abs().sum())]
    elif isinstance(value, (list, tuple)):
        for v in value:
            out += fingerprint(v)
    elif isinstance(value, dict):
        for v in value.values():
            out += fingerprint(v)
    return out


def same_fingerprint(a: list[float], b: list[float]) -> bool:
    def same(x: float, y: float, scale: float) -> bool:
        return (x != x and y != y) or x == y or abs(x - y) <= 1e-4 * scale     # GPU and CPU sum differently
    if len(a) != len(b):
        return False
    return all(same(a[i], b[i], abs(a[i + 1]) + 1.0) and same(a[i + 1], b[i + 1], abs(a[i + 1]) + 1.0)
               for i in range(0, len(a) - 1, 2))


class Environment:
    """What both sides share while timed; `check()` reports and undoes any change to it."""

    def __init__(self, threads: int | None, device: str = "cpu") -> None:
        self.threads, self.device = threads, device
        self.apply()

    def apply(self) -> None:
        if self.threads is not None:
            threads.configure(self.threads)
        if self.device == "cuda":   # both sides in full float32: TF32 would be faster and less accurate
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False

    def check(self) -> list[str]:
        problems = []
        if self.threads is not None and torch.get_num_threads() != self.threads:
            problems.append(f"changed torch's thread count to {torch.get_num_threads()} "
                            f"(both sides are timed with {self.threads})")
        if self.device == "cuda" and (torch.backends.cuda.matmul.allow_tf32 or torch.backends.cudnn.allow_tf32):
            problems.append("turned TF32 on (both sides are timed in full float32)")
        for name, clock in CLOCKS.items():
            if getattr(time, name) is not clock:
                problems.append(f"replaced time.{name}")
                setattr(time, name, clock)
        if problems:
            self.apply()
        return problems


@dataclass
class BlockRun:
    times: list[float] = field(default_factory=list)
    host: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)
    prints: list[list[float]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def note(self, problem: str) -> None:
        if problem not in self.problems and len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)


def time_call(fn: Callable[..., Any], inputs: tuple[Any, Any], timer, env: Environment, run: BlockRun,
              prints: bool = False) -> None:
    """Time one call on clones of `inputs` = (args, kwargs) and check what came back."""
    args, kwargs = inputs
    a, k = clone(args), clone(kwargs)
    c0 = _THREAD_TIME()
    seconds, value = timer.measure(lambda: fn(*a, **k))
    run.cpu.append(_THREAD_TIME() - c0)
    run.times.append(seconds)
    run.host.append(timer.last_host)
    run.outputs.append(value)
    if prints:
        run.prints.append(fingerprint(value))
    for problem in env.check():
        run.note(problem)
    if changed(args, a) or changed(kwargs, k):
        run.note("modified its inputs in place: work on new tensors")
    for name in not_plain(value):
        run.note(f"returned a {name}, not a plain torch.Tensor")


def time_block(fn: Callable[..., Any], input_sets: list[tuple[Any, Any]], timer, env: Environment,
               prints: bool = False) -> BlockRun:
    """Every input set once, in order; `prints`: fingerprint each output right after its call."""
    run = BlockRun()
    for inputs in input_sets:
        time_call(fn, inputs, timer, env, run, prints)
    return run


def warm_up(fn: Callable[..., Any], input_sets: list[tuple[Any, Any]], timer, env: Environment, *,
            min_calls: int = 2, min_seconds: float = 0.05, max_seconds: float = 2.0, max_calls: int = 1000,
            clock: Callable[[], float] = CLOCKS["perf_counter"]) -> BlockRun:
    """Untimed-for-the-figure calls until both minimums are met (or max_seconds): first-call
    costs such as compilation (torch.compile, CUDA kernels, lazy imports) stay out of the figure."""
    run = BlockRun()
    start = clock()
    i = 0
    while True:
        time_call(fn, input_sets[i % len(input_sets)], timer, env, run)
        run.outputs.clear()
        i += 1
        spent = clock() - start
        if (i >= min_calls and spent >= min_seconds) or spent >= max_seconds or i >= max_calls:
            return run
