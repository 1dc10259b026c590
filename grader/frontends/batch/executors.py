"""The seam between the batch and whatever grades its submissions: "grade these, stream results back".

    executor = choose(options, names, config)        # the local pool, or a Dask cluster
    executor.run(tasks, on_done)                     # on_done(Done) in the caller's thread, as each ends

Two executors implement it: grader.frontends.batch.workers.Pool (warm worker processes on this
machine, the default) and grader.frontends.batch.cluster.DaskExecutor (`--scheduler` or
`--cluster local:N`, tasks on a Dask cluster). Everything around the executor is the same code on
both paths (grader.frontends.batch.run): what to skip, --force, progress, the gradebook (only the
caller writes it), resume after a kill. Both grade through one entry, grade_one() below, which
calls grader.api.grade in a process that never imports student code (the engine's sandbox does).

An executor reports each task exactly once, as a Done whose `outcome` says what happened:
  GRADED        result_json is the SubmissionResult's JSON;
  GRADER_ERROR  the grader failed (error says how): no grade, the next run grades it again;
  WORKER_LOST   the process grading it died `lost` times (killed, out of memory, walltime): after
                that many tries the submission is recorded as crashed, and the batch goes on.
"""
from __future__ import annotations

import enum
import json
import time
import traceback
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Iterable, Protocol

from grader import api
from grader.config import Config
from grader.results import from_dict, to_dict

if TYPE_CHECKING:
    from grader.sandbox.runner import Sandbox

INSTALL_CLUSTER = "pip install nn-grader[cluster]"
# A submission whose grading process dies is tried once more (in a fresh process, on a cluster on
# another worker); dying again, it is recorded as crashed. The local pool and --cluster local use
# this; a running cluster's scheduler has its own (distributed.scheduler.allowed-failures).
RETRIES_AFTER_LOST_WORKER = 1


class BatchError(Exception):
    """The batch cannot go on (workers cannot start, a cluster cannot be reached); not any student's fault."""


class ClusterLost(BatchError):
    """The client lost its Dask scheduler mid-batch: what was recorded stays; the same command resumes."""


class Outcome(enum.Enum):
    GRADED = "graded"
    GRADER_ERROR = "grader_error"
    WORKER_LOST = "worker_lost"


@dataclass(frozen=True)
class Task:
    student: str
    path: str


@dataclass(frozen=True)
class Done:
    task: Task
    result_json: str | None          # to_dict(SubmissionResult) as JSON, keys sorted (the gradebook
                                     # stores it as it is); None unless GRADED
    error: str = ""                  # what went wrong, when not GRADED
    seconds: float = 0.0             # wall time in the worker
    outcome: Outcome | None = None   # None: GRADED when result_json is set, else GRADER_ERROR
    lost: int = 0                    # times a grading process died with this task (WORKER_LOST)
    worker: str = ""                 # where it was graded (diagnostics; never part of the result)

    def __post_init__(self) -> None:
        if self.outcome is None:
            kind = Outcome.GRADED if self.result_json is not None else Outcome.GRADER_ERROR
            object.__setattr__(self, "outcome", kind)


class Executor(Protocol):
    """Grades tasks somewhere; calls on_done once per task, in the thread that called run()."""

    slots: int                       # submissions graded at once (recorded with the run)
    notes: list[str]                 # said at the end of the batch (e.g. GPU checks not run)

    def run(self, tasks: Iterable[Task], on_done: Callable[[Done], None]) -> None: ...


def grading_config(config: Config, exercise_jobs: int) -> Config:
    """The configuration every worker grades with (one place: a row must not depend on the executor)."""
    return replace(config, jobs=exercise_jobs)


def grade_one(task: Task, names: list[str], config: Config, sandbox: Sandbox, *, cuda: bool | None = None,
              label: str | None = None, note: str = "") -> Done:
    """Grade one submission with a warm sandbox: the one grading entry of every executor.

    `label`: the path the result names (the client's, when the worker graded a copy at task.path);
    `cuda` False grades as on a machine without CUDA, with `note` added to each exercise that has
    performance checks. Never raises: a failure of the grader is a GRADER_ERROR Done."""
    start = time.monotonic()
    try:
        result = api.grade(task.path, names, config, sandbox=sandbox, cuda=cuda)
        if note:
            result = replace(result, exercises=tuple(
                replace(e, notes=e.notes + (note,)) if e.performance else e for e in result.exercises))
        data = to_dict(result)
        if label is not None and label != task.path:
            from grader.frontends.batch.transfer import relabel
            data = relabel(data, task.path, label)
        # Python's JSON: an error figure can be inf (a -inf/nan output), written as Infinity. Keys
        # sorted, as the gradebook keeps a result: it stores this text, not a second encoding of it.
        return Done(Task(task.student, label or task.path), json.dumps(data, sort_keys=True),
                    seconds=time.monotonic() - start)
    except Exception:                # the engine never raises for a bad submission: a grader bug
        return Done(Task(task.student, label or task.path), None, traceback.format_exc(limit=8),
                    time.monotonic() - start)


def parse(done: Done):
    """The SubmissionResult of a GRADED Done."""
    return from_dict(json.loads(done.result_json))


def choose(options, names: list[str], config: Config, stream=None) -> Executor:
    """The executor `options` ask for: a Dask cluster with --scheduler/--cluster, else the local pool."""
    on_cluster = bool(options.scheduler or options.cluster)
    if not on_cluster and (options.shared_fs or options.no_wait_gpu):
        flag = "--shared-fs" if options.shared_fs else "--no-wait-gpu"
        raise BatchError(f"{flag} is for grading on a cluster: add --scheduler tcp://HOST:PORT or "
                         "--cluster local:N, or leave it out")
    if options.scheduler and options.cluster:
        raise BatchError("--scheduler and --cluster both given: --scheduler uses a running cluster, "
                         "--cluster local:N starts one here; pick one")
    if not on_cluster:
        from grader.frontends.batch.workers import Pool
        return Pool(options.jobs, names, config, options.exercise_jobs)
    try:            # Dask is an optional extra: imported here only, never on the local path
        from grader.frontends.batch.cluster import DaskExecutor
    except ImportError as e:
        flag = "--scheduler" if options.scheduler else "--cluster"
        raise BatchError(f"{flag} grades on a Dask cluster, and Dask's distributed package is not installed "
                         f"({e}): `{INSTALL_CLUSTER}` (or grade with the local pool: leave {flag} out)") from None
    return DaskExecutor(names, grading_config(config, options.exercise_jobs), scheduler=options.scheduler,
                        cluster=options.cluster, shared_fs=options.shared_fs, wait_gpu=not options.no_wait_gpu,
                        stream=stream)
