"""The worker side of grading on a Dask cluster: one task grades one submission.

grade_task runs in a Dask worker process (started with `dask worker`, dask-jobqueue or a
LocalCluster). It is the local pool's worker loop without the loop: the same entry
(grader.frontends.batch.executors.grade_one, over grader.api.grade), the same limits, a warm
sandbox kept for the life of the worker process (its zygote forks a fresh confined child per
exercise: the worker process itself never imports a student's code). What it is given is plain
data (the submission's bytes, or its path with --shared-fs, and the configuration); what it
returns is plain data, the result as the JSON of the result model: nothing a student shapes is
ever unpickled on either side.

Nothing here imports Dask: the function is sent by reference and runs in whatever worker
imports this module, which needs the same grader version as the client (checked, per task).
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Any

from grader import __version__, api
from grader.config import Config
from grader.frontends.batch.executors import Done, Task, grade_one
from grader.frontends.batch.transfer import unpacked
from grader.frontends.batch.workers import TORCH_THREADS
from grader.imports import import_frozen

_lock = threading.Lock()
_sandboxes: dict[Any, Any] = {}          # Limits -> a started Sandbox, one per worker process; its zygote
                                         # is ended as the process exits (grader.sandbox.launch.end_all)


def grade_task(student: str, path: str, packed: dict | None, names: list[str], config: Config,
               cuda: bool | None, note: str, version: str) -> dict[str, Any]:
    """Grade one submission: `packed` content (transfer.pack), or None to read `path` itself
    (--shared-fs). Returns Done's fields as plain data; never raises for a submission."""
    if version != __version__:
        return _plain(Done(Task(student, path), None, f"this Dask worker runs grader {__version__}, the client "
                           f"{version}: install the same version on every worker (pip install nn-grader=={version})"))
    if packed is None and not os.path.exists(path):
        return _plain(Done(Task(student, path), None, f"{path}: not found on the Dask worker at {_where()}: "
                           "--shared-fs needs every submission at the same path on every worker (a shared file "
                           "system); leave --shared-fs out to send the submissions' content instead"))
    try:
        sandbox = _sandbox(config)
    except Exception as e:
        return _plain(Done(Task(student, path), None, f"the sandbox could not start on the worker at {_where()}: {e}"))
    if packed is None:
        return _plain(grade_one(Task(student, path), names, config, sandbox, cuda=cuda, note=note))
    with unpacked(packed) as copy:
        return _plain(grade_one(Task(student, copy), names, config, sandbox, cuda=cuda, label=path, note=note))


def _sandbox(config: Config):
    with _lock:
        if "grader.pipeline.engine" not in sys.modules:     # this worker process's first task
            import_frozen("grader.pipeline.engine", "grader.catalog")     # torch with it (grader.imports)
    from grader import threads

    candidate = api.sandbox(config)
    with _lock:
        threads.configure(TORCH_THREADS)
        sandbox = _sandboxes.setdefault(candidate.limits, candidate)
        sandbox.start()               # a no-op when its zygote is running; restarts it when it died
    return sandbox


def _where() -> str:
    try:
        from distributed import get_worker
        return get_worker().address
    except Exception:                 # not in a Dask worker (a test calling the task directly)
        return f"pid {os.getpid()}"


def _plain(done: Done) -> dict[str, Any]:
    return {"student": done.task.student, "path": done.task.path, "result_json": done.result_json,
            "error": done.error, "seconds": done.seconds, "worker": _where()}
