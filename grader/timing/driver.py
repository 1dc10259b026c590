"""The sandboxed child's side of a performance check: `drive(module, name, request)`.

Trusted code. grader.sandbox.child imports it before the student's module and before the
forbidden-API tripwires, so the timers, clocks and references it holds are the originals.
The parent sends requests (dicts, over the wire) and keeps every decision for itself:

  {"op": "setup", "exercise": id, "device": "cpu"|"cuda", "threads": n|None, "flush": bool}
  {"op": "load", "inputs": [[args, kwargs], ...]}   fresh input sets, moved to the device
  {"op": "warmup", "side": s, "min_calls": n, "min_seconds": t, "max_seconds": t}
  {"op": "time", "side": "student"|"reference", "indices": [...]}   one block: those loaded sets, in order
  {"op": "fetch", "side": s, "indices": [...]}       outputs of that side's last block, on the CPU
"""
from __future__ import annotations

from typing import Any, Callable

from grader.timing import measure, references, timers


class Driver:
    """Times a student function and a reference on the same loaded input sets."""

    def __init__(self, student: Callable[[], Callable[..., Any]], reference: Callable[..., Any], timer,
                 env: measure.Environment, device: str = "cpu") -> None:
        self.student, self.reference = student, reference      # `student()` looks the function up
        self.timer, self.env, self.device = timer, env, device
        self.inputs: list[tuple[Any, Any]] = []
        self.outputs: dict[str, dict[int, Any]] = {}     # side -> input set index -> last output

    def _fn(self, side: str) -> Callable[..., Any]:
        if side == "student":
            return self.student()
        if side == "reference":
            return self.reference
        raise ValueError(f"unknown side {side!r}")

    def load(self, input_sets: list) -> dict[str, Any]:
        self.outputs = {}
        self.inputs = [(tuple(measure.to_device(a, self.device)), dict(measure.to_device(k, self.device)))
                       for a, k in input_sets]
        return {"loaded": len(self.inputs)}

    def warmup(self, side: str, min_calls: int = 2, min_seconds: float = 0.05, max_seconds: float = 2.0) -> dict:
        run = measure.warm_up(self._fn(side), self.inputs, self.timer, self.env, min_calls=min_calls,
                              min_seconds=min_seconds, max_seconds=max_seconds, clock=self.timer.clock)
        return {"times": run.times, "host": run.host, "problems": run.problems}

    def time(self, side: str, indices: list[int] | None = None) -> dict[str, Any]:
        indices = list(range(len(self.inputs))) if indices is None else indices
        run = measure.time_block(self._fn(side), [self.inputs[i] for i in indices], self.timer, self.env,
                                 prints=side == "student")
        self.outputs.setdefault(side, {}).update(zip(indices, run.outputs))
        return {"times": run.times, "host": run.host, "cpu": run.cpu, "problems": run.problems, "prints": run.prints}

    def fetch(self, side: str, indices: list[int]) -> list[Any]:
        return [measure.to_device(self.outputs[side][i], "cpu") for i in indices]


def make_driver(student: Callable[[], Callable[..., Any]], request: dict[str, Any]) -> Driver:
    exercise, device = request["exercise"], request.get("device", "cpu")
    if exercise not in references.REFERENCES:
        raise KeyError(f"no timing reference for {exercise}")
    flush = bool(request.get("flush", True))
    timer = timers.get_timer("cuda", flush=flush) if device == "cuda" else timers.get_timer("cpu")
    env = measure.Environment(request.get("threads"), device)
    return Driver(student, references.REFERENCES[exercise], timer, env, device)


# One performance check per child process: the driver built by `setup`, used by later requests.
_SESSION: dict[str, Driver] = {}


def drive(module: Any, name: str, request: dict[str, Any]) -> Any:
    op = request.get("op")
    if op == "setup":
        _SESSION["driver"] = make_driver(lambda: getattr(module, name), request)
        return {"device": request.get("device", "cpu"), "threads": request.get("threads"),
                "timer": _SESSION["driver"].timer.name}
    driver = _SESSION.get("driver")
    if driver is None:
        raise RuntimeError("performance driver used before setup")
    if op == "load":
        return driver.load(request["inputs"])
    if op == "warmup":
        return driver.warmup(request["side"], int(request.get("min_calls", 2)), float(request.get("min_seconds", 0.05)),
                             float(request.get("max_seconds", 2.0)))
    if op == "time":
        indices = request.get("indices")
        return driver.time(request["side"], None if indices is None else [int(i) for i in indices])
    if op == "fetch":
        return driver.fetch(request.get("side", "student"), list(request["indices"]))
    raise ValueError(f"unknown request {op!r}")
