"""Grading on a Dask cluster: the client side of `grader batch --scheduler tcp://HOST:PORT` and
`grader batch --cluster local:N` (docs/cluster.md).

DaskExecutor is the batch's other executor (grader.frontends.batch.executors): each submission is
one task, grader.frontends.batch.cluster_worker.grade_task, sent with the submission's content
(transfer.pack) or, with --shared-fs, its path. Results stream back with as_completed and are
handed to the caller one at a time, in the caller's thread, so the gradebook has one writer as
on the local path. What can go wrong, and what the batch does:
  - a worker dies with a task (killed, out of memory, walltime): the scheduler runs it elsewhere;
    after `distributed.scheduler.allowed-failures` deaths (1 for --cluster local, as the local
    pool) the task ends in KilledWorker, reported WORKER_LOST: the submission is recorded as
    crashed and the batch goes on. A worker that retires (--lifetime) hands its tasks back first;
  - the scheduler goes away: ClusterLost, saying so; what was recorded stays, the same command
    resumes;
  - GPU performance checks: those tasks ask for the worker resource GPU=1 and wait for a worker
    that has it (said once while none is there), or with --no-wait-gpu run anywhere, graded as
    without CUDA, and the report says so.
Only this module and cluster_worker's helpers import Dask, and only on these paths.
"""
from __future__ import annotations

import hashlib
import logging
import re
import shutil
import sys
import tempfile
import time
from typing import Callable, Iterable

import dask
from distributed import Client, LocalCluster, as_completed
from distributed.diagnostics.plugin import WorkerPlugin

from grader import __version__
from grader.config import Config
from grader.frontends.batch.cluster_worker import grade_task
from grader.frontends.batch.executors import RETRIES_AFTER_LOST_WORKER, BatchError, ClusterLost, Done, Outcome, Task
from grader.frontends.batch.transfer import TransferError, pack
from grader.sandbox.provision import remove_stale_workdirs

CONNECT_TIMEOUT_S = 30.0
WAIT_NOTE_S = 10.0             # a GPU task waiting this long with no GPU worker: say so
POLL_S = 1.0
LOCAL_SPEC = re.compile(r"local:(\d+)$")
NO_GPU_NOTE = ("Performance checks: this batch was graded with --no-wait-gpu, on a worker that was not given a "
               "GPU, so no check was timed on CUDA (the timings shown, if any, are the CPU's).")


def local_workers(spec: str) -> int:
    """N of --cluster local:N (BatchError for anything else)."""
    m = LOCAL_SPEC.match(spec or "")
    if not m or int(m.group(1)) < 1:
        raise BatchError(f"--cluster {spec!r}: expected local:N with N worker processes, e.g. --cluster local:4 "
                         "(for a cluster that is already running, use --scheduler tcp://HOST:PORT)")
    return int(m.group(1))


def wants_gpu(names: list[str], config: Config) -> bool:
    """Whether grading these exercises times something on CUDA on a machine that has it: then every
    task asks for a GPU worker ([performance] device "cpu" times on any worker instead)."""
    from grader.catalog import select
    from grader.timing import policy
    from grader.timing.config import perf_config
    from grader.timing.specs import perf_specs

    cfg = perf_config(config)
    return cfg.enabled and any(policy.plan(p, cfg, True, True)[0] == "cuda"
                               for s in select(list(names)) for p in perf_specs(s))


class SweepOnStart(WorkerPlugin):
    """Registered on the cluster by every batch, set up in each worker as it joins: the folders that
    grading processes which no longer exist left in the temp folder are removed
    (grader.sandbox.provision.remove_stale_workdirs). A worker killed from outside (SIGKILL, the
    out-of-memory killer) cannot remove its own, which holds the copies of the submissions it was
    grading; the worker its nanny starts in its place removes it at once, not at its first task, which
    may never come (a batch's last task, a cluster closing)."""

    name = "nn-grader-sweep-on-start"
    idempotent = True       # once per scheduler, whatever the number of batches sent to it

    def setup(self, worker) -> None:
        remove_stale_workdirs()


class DaskExecutor:
    def __init__(self, names: list[str], config: Config, *, scheduler: str | None = None,
                 cluster: str | None = None, shared_fs: bool = False, wait_gpu: bool = True, stream=None) -> None:
        self.names, self.config = list(names), config
        self.scheduler, self.shared_fs, self.wait_gpu = scheduler, shared_fs, wait_gpu
        self.n_local = local_workers(cluster) if cluster else 0
        self.slots = self.n_local
        self.notes: list[str] = []
        self.stream = stream or sys.stderr
        self.gpu = wants_gpu(self.names, config)
        self.where = scheduler or f"a local cluster of {self.n_local} worker processes"
        self.scratch = ""         # the local cluster's folder while it runs (_scratch)

    # -- connecting --------------------------------------------------------------------------------
    def _connect(self):
        logging.getLogger("distributed").setLevel(logging.ERROR)   # the batch says what matters itself
        if self.n_local:
            try:
                with dask.config.set({"distributed.scheduler.allowed-failures": RETRIES_AFTER_LOST_WORKER,
                                      "distributed.scheduler.worker-saturation": 1.0,
                                      "temporary-directory": self._scratch()}):
                    cluster = LocalCluster(n_workers=self.n_local, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None)
            except Exception as e:        # e.g. worker processes that cannot start here
                raise BatchError(f"--cluster local:{self.n_local}: the local Dask cluster did not start "
                                 f"({type(e).__name__}: {e}); grade with the local pool (leave --cluster out)"
                                 ) from None
            return cluster, Client(cluster)
        try:
            return None, Client(self.scheduler, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError, ValueError) as e:
            raise BatchError(f"--scheduler {self.scheduler}: cannot reach a Dask scheduler there ({e}). Is "
                             "`dask scheduler` running, and is its port open to this machine?") from None

    def run(self, tasks: Iterable[Task], on_done: Callable[[Done], None]) -> None:
        pending = list(tasks)
        if not pending:
            return
        cluster, client = self._connect()
        try:
            try:
                client.register_plugin(SweepOnStart())
            except Exception:             # a worker that cannot set it up (another grader version: its tasks
                pass                      # say so) still sweeps at its first task (grader.pipeline.engine)
            self._stream(client, pending, on_done)
        finally:
            try:
                client.close(timeout=10)
            except Exception:             # a lost scheduler: nothing left to close politely
                pass
            if cluster is not None:
                cluster.close(timeout=30)
            if self.scratch:
                shutil.rmtree(self.scratch, ignore_errors=True)
                self.scratch = ""

    def _scratch(self) -> str:
        """The local cluster's folder (Dask's scratch space, the scheduler's and the workers', and its lock
        files), removed with the cluster: by default Dask leaves its lock files in the temp folder."""
        self.scratch = tempfile.mkdtemp(prefix="grader-dask-")
        return self.scratch

    # -- streaming ---------------------------------------------------------------------------------
    def _stream(self, client, pending: list[Task], on_done) -> None:
        pending.reverse()                 # pop() takes them in the caller's order
        ac = as_completed([], loop=client.loop)
        running: dict = {}                # future -> task
        waiting_since = time.monotonic()
        said_waiting = False
        if not self.wait_gpu and self.gpu:
            self.notes.append("--no-wait-gpu: performance checks that need CUDA were not run (the feedback of "
                              "each exercise with performance checks says so)")
        while pending or running:
            self._submit(client, pending, running, ac, on_done)
            ready = _ready(ac, POLL_S)
            for future in ready:
                task = running.pop(future)
                on_done(self._done(future, task, client))
                future.release()
            if ready:
                waiting_since, said_waiting = time.monotonic(), False
            elif running and not said_waiting and time.monotonic() - waiting_since > WAIT_NOTE_S:
                said_waiting = self._say_waiting(client, len(running) + len(pending))

    def _window(self, client) -> int:
        """Tasks in flight at once: as many as there are worker threads (GPU slots for GPU tasks),
        so a worker holds only what it runs and a worker's death touches no task queued behind."""
        try:
            workers = client.scheduler_info(n_workers=-1)["workers"].values()
        except Exception:
            return 1
        if self.gpu and self.wait_gpu:
            slots = sum(int(w.get("resources", {}).get("GPU", 0)) for w in workers)
        else:
            slots = sum(int(w.get("nthreads", 1)) for w in workers)
        self.slots = max(self.slots, slots)
        return max(1, slots)

    def _submit(self, client, pending: list[Task], running: dict, ac, on_done) -> None:
        window = self._window(client) if pending else 0
        while pending and len(running) < window:
            task = pending.pop()
            try:
                packed = None if self.shared_fs else pack(task.path)
            except (TransferError, OSError) as e:
                on_done(Done(task, None, str(e)))
                continue
            gpu = self.gpu and self.wait_gpu
            future = client.submit(grade_task, task.student, task.path, packed, self.names, self.config,
                                   None if self.wait_gpu else False, "" if self.wait_gpu else NO_GPU_NOTE,
                                   __version__, key=self._key(task, packed), resources={"GPU": 1} if gpu else None,
                                   pure=False, retries=0)
            running[future] = task
            ac.add(future)

    def _key(self, task: Task, packed) -> str:
        """The same submission, graded the same way, is the same task: a client that was killed and
        started again picks up a task its predecessor left running instead of grading it twice."""
        h = hashlib.sha256()
        for part in (task.student, task.path, __version__, repr(self.names), repr(self.config),
                     repr(self.wait_gpu), repr(None if packed is None else _shape(packed))):
            h.update(part.encode("utf-8", "surrogateescape") + b"\0")
        for entry in ([] if packed is None else [packed, *packed.get("entries", ())]):
            h.update(entry.get("file") or entry.get("data") or b"")
        return f"grade-{re.sub(r'[^A-Za-z0-9_.-]', '_', task.student)[:40]}-{h.hexdigest()[:20]}"

    def _done(self, future, task: Task, client) -> Done:
        if future.status == "cancelled" or client.status not in ("running", "connecting"):
            raise ClusterLost(self._lost_message())
        if future.status == "error":
            error = future.exception()
            if type(error).__name__ == "KilledWorker":
                tries = getattr(error, "allowed_failures", RETRIES_AFTER_LOST_WORKER) + 1
                last = getattr(getattr(error, "last_worker", None), "address", "?")
                return Done(task, None, f"the Dask worker grading it died each of the {tries} times it was tried "
                            f"(the last: {last})", outcome=Outcome.WORKER_LOST, lost=tries)
            return Done(task, None, f"the task failed on a Dask worker: {type(error).__name__}: {error}")
        try:
            r = future.result(timeout=60)
        except (OSError, TimeoutError) as e:
            raise ClusterLost(self._lost_message(f" ({type(e).__name__}: {e})")) from None
        return Done(task, r["result_json"], r["error"], seconds=r["seconds"], worker=r["worker"])

    def _lost_message(self, why: str = "") -> str:
        return (f"lost the connection to the Dask scheduler at {self.where}{why}. Every result received so far "
                "is in the gradebook: when the scheduler is back, run the same command again and it grades "
                "only what is missing")

    def _say_waiting(self, client, count: int) -> bool:
        """Say once why nothing comes back: no worker at all, or none with the GPU resource."""
        try:
            workers = list(client.scheduler_info(n_workers=-1)["workers"].values())
        except Exception:
            return False
        if not workers:
            why = (f"wait for workers: the Dask scheduler at {self.where} has none yet (start some with "
                   f"`dask worker {self.scheduler or 'ADDRESS'}`)")
        elif self.gpu and self.wait_gpu and not any(w.get("resources", {}).get("GPU", 0) >= 1 for w in workers):
            why = ("need a Dask worker with the GPU resource and none has joined the cluster yet (start one with "
                   "`dask worker ... --resources GPU=1`), or run again with --no-wait-gpu to grade without the "
                   "GPU checks")
        else:
            return False
        self.stream.write(f"waiting: {count} submissions {why}\n")
        self.stream.flush()
        return True


def _shape(packed: dict) -> list:
    """A packed submission without its bytes: names, kinds and sizes (the key hashes the bytes apart)."""
    return [packed.get("name"), [(e.get("name"), e.get("kind"), e.get("size")) for e in packed.get("entries", ())]]


def _ready(ac, timeout: float) -> list:
    """The futures of `ac` that have finished, waiting up to `timeout` seconds for the first."""
    with ac.thread_condition:
        if not ac.has_ready():
            ac.thread_condition.wait(timeout)
    return ac.next_batch(block=False)
