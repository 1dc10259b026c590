"""The parent's handle on a performance check: the children that time, or an in-process stand-in.

SandboxHarness opens two confined children through grader.sandbox, both running
grader.timing.driver: the student's (their module imported, with the exercise's substitutes
and its forbidden-API tripwires, minus the ATen watch, which would slow both sides), and a
clean one whose module is a stand-in, which times the reference alone as a yardstick. Around
every block the parent reads its own clock and the child's CPU time (/proc/<pid>/stat), and it
validates every reply: a child's figures are data to check, never to believe.

LocalHarness speaks the same protocol in-process, for the tests (with a fake clock) and the
benchmarks. Neither decides anything: see grader.timing.rounds, guards and policy.
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import asdict
from typing import Any, Callable

from grader.pipeline import feedback, static
from grader.results import Status
from grader.sandbox.provision import copy_submission, make_workdir, remove_workdir
from grader.sandbox.runner import Sandbox, Session
from grader.timing.driver import Driver
from grader.timing.measure import Environment
from grader.timing.records import Block
from grader.timing.timers import PERF_COUNTER, get_timer

DRIVER = "grader.timing.driver:drive"
STAND_IN = '''"""A stand-in for the student's module: this clean child times the reference alone."""


def {function}(*args, **kwargs):
    raise RuntimeError("the clean child never calls the student's function")
'''
_TIME_UP = "not timed to the end: the submission's time limit was used up"
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class HarnessError(Exception):
    """The check could not run to the end; `status` says how (error, timeout, crashed)."""

    def __init__(self, status: Status, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def cpu_seconds(pid: int) -> tuple[float, float, float] | None:
    """(CPU seconds of the main thread, of all threads, seconds the main thread waited for a CPU)
    of a process, from /proc; None when unreadable. The main thread's figures come from schedstat
    (nanoseconds); all threads' is the larger of the live threads' schedstat sum and
    /proc/<pid>/stat (10 ms ticks, but it keeps the time of exited threads)."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            run_ns, wait_ns = (int(x) for x in f.read().split()[:2])
        main = run_ns / 1e9
        live = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    live += int(f.read().split()[0])
            except OSError:
                continue
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = (int(fields[11]) + int(fields[12])) / _TICK
        return main, max(live / 1e9, ticks), wait_ns / 1e9
    except (OSError, IndexError, ValueError):
        return None


def _delta(before, after, i: int) -> float | None:
    return after[i] - before[i] if before is not None and after is not None else None


def _floats(value: Any, n: int | None, what: str, signed: bool = False) -> tuple[float, ...]:
    if (not isinstance(value, list) or (n is not None and len(value) != n)
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                       and (signed or x >= 0) for x in value)):
        raise HarnessError(Status.CRASHED, f"the timing process sent malformed {what}")
    return tuple(float(x) for x in value)


def _problems(reply: dict) -> list[str]:
    found = reply.get("problems") or []
    return [str(p)[:300] for p in found] if isinstance(found, list) else ["sent malformed problem reports"]


class SandboxHarness:
    def __init__(self, sandbox: Sandbox, files: dict[str, str], spec, *, device: str, threads: int | None,
                 timeout: float, memory_mb: int, flush: bool = True, deadline: float | None = None) -> None:
        self.sandbox, self.files, self.spec = sandbox, files, spec
        self.device, self.threads, self.flush = device, threads, flush
        self.timeout, self.memory_mb = timeout, memory_mb
        self.deadline = deadline        # time.monotonic() by which the submission's grade ends (None: none)
        self.sessions: dict[str, Session] = {}
        self.workdirs: list[str] = []
        self.loaded = self.load_count = 0
        self.seen_hits: list[dict] = []
        self.new_hits: list[dict] = []
        self.loads: list[tuple[float, float, float]] = []   # per load: CPU of the student's child (main thread,
                                                            # all threads), of the clean child (main thread)
        self.prints: dict[int, list[float]] = {}            # input set -> fingerprint of the student's output
        self.between, self._last = 0.0, None    # CPU s of the student's child between its requests (guards)

    # -- children --------------------------------------------------------------------------
    def _open_child(self, who: str, files: dict[str, str], substitutes: dict, forbidden: list) -> Session:
        workdir = make_workdir("grader-perf-")
        self.workdirs.append(workdir)
        copy_submission(files, workdir, static.import_closure(self.spec.module, files))
        session = self.sandbox.open(workdir, self.spec.module, forbidden=forbidden, substitutes=substitutes,
                                    driver=DRIVER, import_timeout=self._limit(), count_kernels=who == "student",
                                    processes=who != "student")     # a helper's CPU: none counts it
        self.sessions[who] = session
        ready = session.ready
        if ready.kind != "ok":
            raise HarnessError(Status.ERROR, f"the {'timing' if who == 'student' else 'clean reference'} process "
                               f"could not start ({ready.kind}: {ready.error.get('message', ready.detail)})")
        if self.spec.function not in (ready.value or []):
            raise HarnessError(Status.ERROR, f"no function named {self.spec.function} to time")
        return session

    def open(self) -> dict[str, Any]:
        # Tripwires stay (cheap attribute wrappers); the ATen dispatch watch would slow both sides.
        rules = [dict(asdict(r), aten=()) for r in self.spec.forbidden]
        self._open_child("student", self.files, dict(self.spec.depends), rules)
        self._open_child("baseline", {self.spec.module: STAND_IN.format(function=self.spec.function)}, {}, [])
        setup = {"op": "setup", "exercise": self.spec.id, "device": self.device, "threads": self.threads,
                 "flush": self.flush}
        self._call("baseline", setup)
        info = self._call("student", setup)
        return {"device": self.device, "threads": self.threads, "timer": str(info.get("timer", ""))}

    def _limit(self) -> float:
        """A call's wall-time limit: the per-call one, or what is left of the submission's time."""
        if self.deadline is None:
            return self.timeout
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise HarnessError(Status.TIMEOUT, _TIME_UP)
        return min(self.timeout, left)

    def _call(self, who: str, request: dict[str, Any]) -> Any:
        session = self.sessions[who]
        limit = self._limit()
        if who == "student":        # what it used since its last reply, all threads: it had nothing to do
            self.between += max(_delta(self._last, cpu_seconds(session.pid), 1) or 0.0, 0.0)
        outcome = session.call(self.spec.function, (request,), {}, timeout=limit)
        self._last = cpu_seconds(session.pid) if who == "student" else self._last
        self._hits(outcome.hits, request)
        if outcome.kind == "ok":
            return outcome.value
        if outcome.kind == "timeout" and limit < self.timeout:     # either side: the submission's time is up
            raise HarnessError(Status.TIMEOUT, _TIME_UP)
        yours = who == "student"
        if not yours:
            raise HarnessError(Status.ERROR, f"the grader's clean reference process failed ({outcome.kind}): "
                               "a problem of the grader, not of your code")
        if outcome.kind == "timeout":
            raise HarnessError(Status.TIMEOUT, f"a timed block took longer than {self.timeout:g} s")
        if outcome.kind in ("crashed", "protocol"):
            raise HarnessError(Status.CRASHED, "the process running your code ended while being timed"
                               + (f": {outcome.detail}" if outcome.detail else ""))
        return_error = feedback.error_message(outcome.error, self.memory_mb)
        if outcome.error.get("type") == "PermissionError":
            return_error += " (if it started a process: the timing process may start threads, not processes)"
        raise HarnessError(Status.ERROR, f"your function raised while being timed: {return_error}")

    def _hits(self, hits: list, request: dict) -> None:
        """Forbidden calls first seen after a block of the student's own calls are theirs: of the
        child's tripwire record, which grows, those new since the last reply; of the kernel's count
        (`counted`), which is this call's alone, all. The student's child holds the timing references
        (PyTorch's originals, bound before the tripwires) to time them beside the student's function:
        the count is what tells a student block that ran one of them (the red team's conv2d called
        grader.timing.references' F.conv2d, found in sys.modules, and passed a speed check 62x too slow)."""
        counted = [h for h in hits if h.get("counted")]
        new = [h for h in hits if not h.get("counted") and h not in self.seen_hits]
        self.seen_hits += new
        if request.get("side") == "student":
            self.new_hits += [h for h in new + counted if h not in self.new_hits]

    # -- protocol ----------------------------------------------------------------------------
    def load(self, input_sets: list[tuple]) -> None:
        payload = {"op": "load", "inputs": [[list(a), dict(k)] for a, k in input_sets]}
        used = {}
        order = ("student", "baseline") if self.load_count % 2 == 0 else ("baseline", "student")
        self.load_count += 1        # which child goes first alternates, as the blocks do (rounds)
        for who in order:
            pid = self.sessions[who].pid
            before = cpu_seconds(pid)
            self._call(who, payload)
            after = cpu_seconds(pid)
            used[who] = (_delta(before, after, 0), _delta(before, after, 1))
        if None not in (*used["student"], used["baseline"][0]):
            self.loads.append((used["student"][0], used["student"][1], used["baseline"][0]))
        self.loaded = len(input_sets)
        self.prints = {}

    def warmup(self, side: str, **kw: Any) -> tuple[list[float], list[str]]:
        who, as_side = ("baseline", "reference") if side == "baseline" else ("student", side)
        reply = self._call(who, {"op": "warmup", "side": as_side, **kw})
        if not isinstance(reply, dict):
            raise HarnessError(Status.CRASHED, "the timing process sent a malformed reply")
        return list(_floats(reply.get("times"), None, "warm-up times")), self._side_problems(side, reply)

    def time(self, side: str, indices: list[int]) -> tuple[Block, list[str]]:
        who, as_side = ("baseline", "reference") if side == "baseline" else ("student", side)
        pid = self.sessions[who].pid
        n = len(indices)
        cpu0, w0 = cpu_seconds(pid), PERF_COUNTER()
        reply = self._call(who, {"op": "time", "side": as_side, "indices": list(indices)})
        wall, cpu1 = PERF_COUNTER() - w0, cpu_seconds(pid)
        if not isinstance(reply, dict):
            raise HarnessError(Status.CRASHED, "the timing process sent a malformed reply")
        times = _floats(reply.get("times"), n, "call times")
        host = _floats(reply.get("host"), n, "host times")
        cpu_calls = _floats(reply.get("cpu"), n, "call CPU times")
        if side == "student":
            prints = reply.get("prints")
            if not isinstance(prints, list) or len(prints) != n:
                raise HarnessError(Status.CRASHED, "the timing process sent malformed output fingerprints")
            if not all(isinstance(p, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in p)
                       for p in prints):
                raise HarnessError(Status.CRASHED, "the timing process sent malformed output fingerprints")
            self.prints.update((i, [float(x) for x in p]) for i, p in zip(indices, prints))
        return (Block(side, times, wall, _delta(cpu0, cpu1, 0), _delta(cpu0, cpu1, 1), host, cpu_calls,
                      _delta(cpu0, cpu1, 2)),
                self._side_problems(side, reply))

    def _side_problems(self, side: str, reply: dict) -> list[str]:
        if side == "baseline":
            return []
        found = _problems(reply)
        for h in self.new_hits:
            found.append(f"called a forbidden API: {h.get('via')} ({h.get('rule')})")
        self.new_hits = []
        return found

    def fetch(self, indices: list[int]) -> list[Any]:
        outputs = self._call("student", {"op": "fetch", "side": "student", "indices": list(indices)})
        if not isinstance(outputs, list) or len(outputs) != len(indices):
            raise HarnessError(Status.CRASHED, "the timing process sent back the wrong number of outputs")
        return outputs

    def close(self) -> None:
        for session in self.sessions.values():
            session.close()
        self.sessions.clear()
        for w in self.workdirs:
            remove_workdir(w)
        self.workdirs.clear()


class LocalHarness:
    """In-process, unconfined: only for trusted functions (tests, benchmarks). `baseline`
    stands for the clean child's reference (default: the reference itself)."""

    def __init__(self, student: Callable[..., Any], reference: Callable[..., Any], *, timer=None,
                 device: str = "cpu", threads: int | None = None, baseline: Callable[..., Any] | None = None,
                 wall_clock: Callable[[], float] | None = None) -> None:
        self.timer = timer or get_timer(device)
        self.device, self.threads = device, threads
        env = Environment(threads, device)
        self.drivers = {"student": Driver(lambda: student, reference, self.timer, env, device),
                        "baseline": Driver(lambda: student, baseline or reference, self.timer, env, device)}
        self.wall_clock = wall_clock or getattr(self.timer, "clock", PERF_COUNTER)
        self.prints: dict[int, list[float]] = {}

    def open(self) -> dict[str, Any]:
        return {"device": self.device, "threads": self.threads, "timer": self.timer.name}

    def load(self, input_sets: list[tuple]) -> None:
        for d in self.drivers.values():
            d.load(input_sets)
        self.prints = {}

    def _route(self, side: str) -> tuple[Driver, str]:
        return (self.drivers["baseline"], "reference") if side == "baseline" else (self.drivers["student"], side)

    def warmup(self, side: str, **kw: Any) -> tuple[list[float], list[str]]:
        driver, as_side = self._route(side)
        reply = driver.warmup(as_side, **kw)
        return reply["times"], (reply["problems"] if side != "baseline" else [])

    def time(self, side: str, indices: list[int]) -> tuple[Block, list[str]]:
        driver, as_side = self._route(side)
        w0 = self.wall_clock()
        reply = driver.time(as_side, list(indices))
        wall = self.wall_clock() - w0
        if side == "student":
            self.prints.update(zip(indices, reply["prints"]))
        return (Block(side, tuple(reply["times"]), wall, None, None, tuple(reply["host"]), tuple(reply["cpu"])),
                reply["problems"] if side != "baseline" else [])

    def fetch(self, indices: list[int]) -> list[Any]:
        return self.drivers["student"].fetch("student", indices)

    def close(self) -> None:
        pass
