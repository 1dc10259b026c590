"""Warm workers: processes that import torch once and grade one submission after another.

Each worker holds one Sandbox (whose zygote forks a fresh confined child per exercise, as for
`grader check`) and grades with the engine's limits unchanged. Workers are started from
multiprocessing's *forkserver*, which has imported torch but run no torch work, so no thread
pool exists when a worker is forked (forking after OpenMP has started can hang). A worker
sends each result back as JSON; only the parent writes the gradebook.

The pool survives its workers: a worker that dies is replaced and its submission retried once
in a fresh worker (RETRIES_AFTER_LOST_WORKER); dying again, the submission is reported
WORKER_LOST and recorded as crashed. A worker stuck past the submission's time limit plus a grace
period is killed and the submission gets a `grader_error` result. Never a hang or a lost row.
The pool is one of the batch's two executors (grader.frontends.batch.executors; the other is a
Dask cluster) and grades through the same entry, executors.grade_one.

Like any multiprocessing code, call Pool.run from a script guarded by `if __name__ == "__main__":`
(the workers re-import the main script; `grader` and `python -m grader` are fine).
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import time
import traceback
from collections import deque
from multiprocessing.connection import wait
from typing import Callable, Iterable

from grader import api
from grader.config import Config
from grader.frontends.batch.executors import (RETRIES_AFTER_LOST_WORKER, BatchError, Done, Outcome, Task,
                                              grade_one, grading_config)
from grader.sandbox.provision import make_workdir, remove_stale_workdirs

__all__ = ["BatchError", "Done", "Pool", "Task", "warm_up", "worker_main"]

GRACE_S = 60.0              # beyond config.submission_timeout before a stuck worker is killed
START_TIMEOUT_S = 180.0     # a worker that is not ready by then is considered broken
TORCH_THREADS = 1           # intra-op threads of a worker (references are small; cores go to workers)


# -- the worker side ----------------------------------------------------------------------------
def worker_main(conn, names: list[str], config: Config) -> None:
    """Entry point of a worker process: grade every (student, path) received until None."""
    # Imported here, not above: it loads torch, and the parent imports this module to start the
    # forkserver (warm_up) first, so that the two imports overlap.
    from grader import threads

    gc.freeze()     # what the forkserver made after its frozen imports (forkserver_preload): no collection walks it
    # Ctrl-C is the parent's to handle (it stops the workers); ignored here, and so in this worker's
    # sandbox (SIG_IGN is inherited through fork and exec), so an interrupt prints one line, not a traceback each.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threads.configure(TORCH_THREADS)
    try:
        sandbox = api.sandbox(config)
        sandbox.start()
    except Exception:
        conn.send(("failed", traceback.format_exc(limit=6)))
        return
    conn.send(("ready", os.getpid()))
    try:
        while True:
            try:
                task = conn.recv()
            except (EOFError, OSError):     # the parent is gone
                return
            if task is None:
                return
            done = grade_one(task, names, config, sandbox)
            try:
                conn.send(done)
            except (BrokenPipeError, OSError):
                return
    finally:
        sandbox.shutdown()


# -- the parent side ----------------------------------------------------------------------------
def _context():
    ctx = multiprocessing.get_context("forkserver")
    # The forkserver imports the engine (torch) once; every worker is forked from it warm.
    ctx.set_forkserver_preload(["grader.frontends.batch.forkserver_preload"])
    _own_temp_dir()
    return ctx


# Longest folder path that leaves room for the forkserver's socket name ("/listener-xxxxxxxx") within
# the 108 bytes a Unix socket's address may have.
_SOCKET_FOLDER_MAX = 80


def _own_temp_dir() -> None:
    """multiprocessing's folder for this process (the forkserver's listening socket lies in it) made
    inside this grading process's own folder (grader.sandbox.provision.make_workdir): by default it is
    a pymp-* folder in the temp folder that only an orderly exit removes, so every `grader batch`
    killed (kill -9, a job's walltime) left one behind; inside ours, the next grader's sweep removes
    it. multiprocessing.util.get_temp_dir reads it from the process's _config (no public setter); a
    folder already chosen that still exists, or a path too long for a socket's address, is left as it
    is (one removed meanwhile, by a sweep of the temp folder say, is replaced: a forkserver started
    again would have nowhere to put its socket)."""
    config = multiprocessing.current_process()._config
    if config.get("tempdir") is not None and os.path.isdir(config["tempdir"]):
        return
    folder = make_workdir(prefix="pymp-")
    if len(folder) > _SOCKET_FOLDER_MAX:
        os.rmdir(folder)
        return
    config["tempdir"] = folder


def warm_up() -> None:
    """Start the forkserver now: it imports torch while the caller does its own start-up."""
    from multiprocessing import forkserver

    _context()
    forkserver.ensure_running()


class _Worker:
    def __init__(self, ctx, names: list[str], config: Config) -> None:
        self.conn, theirs = ctx.Pipe()
        self.proc = ctx.Process(target=worker_main, args=(theirs, names, config), daemon=True)
        self.proc.start()
        theirs.close()
        self.ready = False
        self.task: Task | None = None
        self.since = time.monotonic()

    def send(self, task: Task | None) -> bool:
        try:
            self.conn.send(task)
        except (BrokenPipeError, OSError):
            return False
        self.task, self.since = task, time.monotonic()
        return True

    def stop(self, timeout: float = 5.0) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(timeout)
        self.conn.close()


class Pool:
    """`jobs` warm workers grading `tasks`; `on_done` is called in the parent for each result."""

    def __init__(self, jobs: int, names: list[str], config: Config, exercise_jobs: int = 2) -> None:
        self.jobs = self.slots = max(1, jobs)
        self.names = list(names)
        self.notes: list[str] = []
        self.config = grading_config(config, exercise_jobs)
        self.deadline_s = self.config.submission_timeout + GRACE_S
        self.ctx = _context()
        self.workers: list[_Worker] = []        # the live ones, while run() runs

    def busy_with(self, student: str) -> int | None:
        """The pid of the worker grading `student` now, if any (for tests and diagnostics)."""
        return next((w.proc.pid for w in self.workers if w.task is not None and w.task.student == student), None)

    def run(self, tasks: Iterable[Task], on_done: Callable[[Done], None]) -> None:
        pending = deque(tasks)
        retried: dict[Task, int] = {}
        workers: list[_Worker] = []
        start_failures: list[str] = []
        try:
            workers = self.workers = [_Worker(self.ctx, self.names, self.config)
                                      for _ in range(min(self.jobs, len(pending)))]
            while pending or any(w.task for w in workers):
                for w in workers:
                    if w.ready and w.task is None and pending:
                        task = pending.popleft()
                        if not w.send(task):
                            pending.appendleft(task)
                ready = wait([w.conn for w in workers] + [w.proc.sentinel for w in workers], timeout=1.0)
                for w in list(workers):
                    problem = self._receive(w, ready, on_done, start_failures)
                    if problem is None:
                        continue
                    workers.remove(w)
                    w.stop()
                    if w.task is not None:
                        self._lost(w.task, *problem, pending, retried, on_done)
                    if pending or any(x.task for x in workers):
                        if len(start_failures) > 2 * self.jobs:
                            raise BatchError("grading workers could not start:\n" + start_failures[-1])
                        workers.append(_Worker(self.ctx, self.names, self.config))
                if not workers and pending:
                    raise BatchError("no grading worker is left running")
            for w in workers:
                w.send(None)
            for w in workers:
                w.proc.join(10.0)
        finally:
            for w in workers:
                w.stop()
            self.workers = []
            # The workers' own folders: a forked worker ends without running atexit (os._exit in
            # multiprocessing), a stopped one is killed, and neither removes its own.
            remove_stale_workdirs()

    def _receive(self, w: _Worker, ready, on_done, start_failures: list[str]) -> tuple[str, bool] | None:
        """Handle what `w` sent. Returns (why it must be replaced, whether its submission deserves
        another try), or None while it is healthy."""
        if w.conn in ready:
            try:
                msg = w.conn.recv()
            except (EOFError, OSError):
                return self._ended(w, start_failures)
            if isinstance(msg, Done):
                w.task = None
                on_done(msg)
            elif msg[0] == "ready":
                w.ready = True
            elif msg[0] == "failed":
                start_failures.append(msg[1])
                return "the grading process could not start", True
            return None
        if w.proc.sentinel in ready and not w.proc.is_alive():
            return self._ended(w, start_failures)
        if not w.ready and time.monotonic() - w.since > START_TIMEOUT_S:
            start_failures.append(f"a worker was not ready after {START_TIMEOUT_S:g} s")
            return "the grading process did not start in time", True
        if w.task is not None and time.monotonic() - w.since > self.deadline_s:
            return (f"grading took longer than {self.deadline_s:g} s (the submission limit of "
                    f"{self.config.submission_timeout:g} s plus {GRACE_S:g} s); the grading process was stopped",
                    False)        # it would take as long again
        return None

    @staticmethod
    def _ended(w: _Worker, start_failures: list[str]) -> tuple[str, bool]:
        """`w` ended by itself. Before it was ready, no submission was in it: the worker could not
        start (its import, its sandbox). That counts as a start failure, like a reported one, so
        workers that keep ending at start stop the batch (BatchError), not replaced for ever."""
        w.proc.join(1.0)
        code = w.proc.exitcode
        if not w.ready:
            start_failures.append(f"a grading process ended before it was ready (exit code {code}); what it printed, "
                                  "if anything, is above")
        return f"the grading process ended unexpectedly (exit code {code})", True

    @staticmethod
    def _lost(task: Task, problem: str, retry: bool, pending: deque, retried: dict, on_done) -> None:
        """A worker died (`retry`) or was stopped with `task` in hand: retry it in a fresh worker up
        to RETRIES_AFTER_LOST_WORKER times, then report it lost; a stopped one is a grader error."""
        if not retry:
            on_done(Done(task, None, problem))
            return
        retried[task] = retried.get(task, 0) + 1
        if retried[task] <= RETRIES_AFTER_LOST_WORKER:
            pending.appendleft(task)
            return
        on_done(Done(task, None, problem, outcome=Outcome.WORKER_LOST, lost=retried[task]))
