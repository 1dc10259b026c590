"""What grading costs in CPU, for the benchmarks that take it apart (batch_throughput.py, exercise_cost.py):

- `cpu_split(grade)`: who spent the machine's CPU while `grade()` ran (a `Split`: the grading process,
  the sandbox's processes, the rest of the machine);
- `worker_config(root)`: the configuration and torch threads a batch worker grades with, and
  `public_environment()`, the environment of a timed grading: the public cases only;
- `exercise_seconds(module, spec, cases)`: a student's own compute on one exercise, its functions
  called in this process the way the sandbox's child calls them (inside `call_limits()`).

Nothing of the grader is imported here before a function needs it: a benchmark that measures another
checkout puts that checkout first on the path, then imports this module from its own folder.
"""
from __future__ import annotations

import dataclasses
import importlib
import os
import resource
import signal
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

REAPED_WITHIN = 1.1     # the zygote reaps its children that ended at least once a second (grader.sandbox.zygote)
QUIET_WITHIN = 30.0     # the longest `_quiet` waits for the sandbox's processes to be idle
IDLE_TICKS = 0.02       # two clock ticks: what an idle zygote and keeper may spend in REAPED_WITHIN
FLOOR_EXERCISE = "attention.causal_mask"    # 4 small cases: a grade that is all sandbox, no compute


def public_environment() -> dict[str, str]:
    """This environment without the instructor's secret seed: every grading timed here runs the public
    cases only, those the students' own compute is measured on (no hidden cases, no child of theirs)."""
    return {k: v for k, v in os.environ.items() if k != "GRADER_SECRET_SEED"}


# -- where the CPU goes ----------------------------------------------------------------------------
def busy_core_seconds() -> float:
    """CPU time every process of the machine has used since boot (user, nice, system, irq, softirq),
    in seconds: what a grade costs its parent, the zygote, the child, the keeper and the kernel."""
    return _machine()[0]


def _machine() -> tuple[float, float, int, int]:
    """Since boot, machine-wide, from one reading of /proc/stat: busy CPU seconds (as
    `busy_core_seconds`) and the kernel's (system, irq, softirq); then page faults and huge pages
    mapped again in small pages (/proc/vmstat `thp_split_pmd`: a child writing to the zygote's huge
    pages), 0 for a counter the kernel does not keep."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    user, nice, system, _idle, _iowait, irq, softirq = map(int, fields[1:8])
    with open("/proc/vmstat") as f:
        counters = dict(line.split() for line in f)
    tick = os.sysconf("SC_CLK_TCK")
    return ((user + nice + system + irq + softirq) / tick, (system + irq + softirq) / tick,
            int(counters.get("pgfault", 0)), int(counters.get("thp_split_pmd", 0)))


def _descendants_seconds() -> float:
    """CPU time of this process's child processes: the living ones (the sandbox's zygote with the
    children it has reaped, the keeper of its kernel counters) and those this process reaped."""
    tick, me, total = os.sysconf("SC_CLK_TCK"), str(os.getpid()), 0.0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()     # after the name, which may hold spaces
        except OSError:
            continue
        if fields[1] == me:                                     # ppid; then utime, stime, cutime, cstime
            total += sum(map(int, fields[11:15])) / tick
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return total + reaped.ru_utime + reaped.ru_stime


@dataclasses.dataclass(frozen=True)
class Split:
    """Core-seconds spent while some grading ran in this process, by who spent them, and what the
    machine's kernel did meanwhile."""
    parent: float       # the grading process (its threads: cases, references, judges, the sandbox's parent side)
    sandbox: float      # the zygote, the confined children it forked, the keeper
    other: float        # everything else the machine ran meanwhile: the kernel's threads (namespaces and
                        # control groups torn down), and whatever else runs on the machine
    kernel: float = 0.0     # of the total, the kernel's (forks, page faults, exits, namespaces, groups)
    faults: float = 0.0     # page faults, machine-wide
    splits: float = 0.0     # the zygote's huge pages mapped again in small pages (a child wrote to one)

    @property
    def total(self) -> float:
        return self.parent + self.sandbox + self.other

    def __truediv__(self, n: float) -> "Split":
        return Split(*(getattr(self, f.name) / n for f in dataclasses.fields(self)))


def _quiet(limit: float = QUIET_WITHIN) -> None:
    """Wait, up to `limit` seconds, until this process's child processes spend no CPU over a whole
    REAPED_WITHIN: the zygote has reaped an earlier grade's children, and has put its memory in huge
    pages (grader.sandbox.zygote does that in the background after it starts: tenths of a core-second
    that a measurement begun too early counted as the sandbox's, on a loaded machine)."""
    deadline, last = time.monotonic() + limit, _descendants_seconds()
    while True:
        time.sleep(REAPED_WITHIN)
        now = _descendants_seconds()
        if now - last < IDLE_TICKS or time.monotonic() > deadline:
            return
        last = now


def cpu_split(grade: Callable[[], object]) -> Split:
    """Who spent the machine's CPU while `grade()` ran: this process, its child processes, the rest.
    The zygote's children are counted once the zygote has reaped them, so the first reading waits for
    the sandbox to be quiet (an earlier grade's children would be counted here too) and the last for
    this grade's children."""
    def now() -> tuple[float, ...]:
        own = resource.getrusage(resource.RUSAGE_SELF)
        return (own.ru_utime + own.ru_stime, _descendants_seconds(), *_machine())
    _quiet()
    before = now()
    grade()
    time.sleep(REAPED_WITHIN)
    parent, sandbox, machine, kernel, faults, splits = (a - b for a, b in zip(now(), before))
    return Split(parent, sandbox, max(0.0, machine - parent - sandbox), kernel, faults, splits)


def worker_config(root: str):
    """The configuration (`root`'s autograde.toml) and torch threads a batch worker grades with
    (grader.frontends.batch.workers), from the grader first on the path."""
    from grader import api, threads
    from grader.frontends.batch.run import Options
    from grader.frontends.batch.workers import TORCH_THREADS

    threads.configure(TORCH_THREADS)
    config = api.load(os.path.join(root, "autograde.toml"))
    try:
        from grader.frontends.batch.executors import grading_config
    except ImportError:     # a checkout before executors.py: its worker pool set the same field itself
        return dataclasses.replace(config, jobs=Options.exercise_jobs)
    return grading_config(config, Options.exercise_jobs)


# -- the students' own compute ----------------------------------------------------------------------
class _CallLimit(BaseException):
    """Raised into an in-process call that runs past the time limit (a buggy loop must not stall us)."""


def _on_alarm(signum, frame):
    raise _CallLimit()


@contextmanager
def call_limits() -> Iterator[None]:
    """Lets `exercise_seconds` stop each call at its exercise's time limit (SIGALRM, this process's only)."""
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _load(ref: str):
    """A trusted substitute or driver, "grader.sandbox.trusted.<module>:<name>", as the child loads it."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def exercise_seconds(mod: Any, spec: Any, cases: list) -> float:
    """Seconds the exercise `spec` of the student's module `mod` takes on `cases`, called as the
    sandbox's child calls it: the spec's trusted substitutes put in place of the functions it depends
    on (and taken out again), through the spec's driver where it has one, the global RNG seeded with
    0, each call stopped at the exercise's call_timeout (10 s when it sets none). A call that raises
    counts for the time it ran. Needs `call_limits()`."""
    import torch

    from grader.trees import clone

    originals = {name: mod.__dict__.get(name) for name in spec.depends}
    for name, ref in spec.depends.items():
        setattr(mod, name, _load(ref))
    driver = _load(spec.driver) if spec.driver else None
    fn = getattr(mod, spec.function, None)
    torch.manual_seed(0)
    limit = spec.call_timeout or 10.0
    total = 0.0
    try:
        for c in cases:
            args, kwargs = clone(c.args), clone(dict(c.kwargs))
            start = time.perf_counter()
            try:
                signal.setitimer(signal.ITIMER_REAL, limit)
                if driver is not None:
                    driver(mod, spec.function, *args, **kwargs)
                elif fn is not None:
                    fn(*args, **kwargs)
            except (Exception, _CallLimit):
                pass
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            total += time.perf_counter() - start
    finally:
        for name, value in originals.items():
            setattr(mod, name, value)
    return total
