"""`grader batch` cluster options without a cluster to grade on: what each wrong use says, the local
path without Dask importable, an unreachable scheduler, and a scheduler lost mid-batch (that the same
command then resumes is tests/test_cluster.py's SIGKILL test: the gradebook is the same either way)."""
from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import ROOT
from fixtures.batch.build import make_class
from grader.frontends.batch.executors import INSTALL_CLUSTER, BatchError, ClusterLost, Task, choose
from grader.frontends.batch.run import Options

# Makes `import dask` / `import distributed` fail in every Python process that starts with it on
# its path (the batch, its forkserver and workers, the sandbox's zygote), as without the extra.
NO_DASK = '''
import sys

class _NoDask:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("dask", "distributed"):
            raise ImportError(f"No module named {name!r} (blocked by the test)", name=name)
        return None

sys.meta_path.insert(0, _NoDask())
'''


@pytest.fixture
def no_dask_env(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_DASK)
    import os
    env = {k: v for k, v in os.environ.items() if k != "GRADER_SECRET_SEED"}
    env["PYTHONPATH"] = str(site)
    return env


def options(**changes):
    return Options(submissions="subs", out="out", **changes)


def test_wrong_cluster_options_say_what_to_do():
    with pytest.raises(BatchError, match="--shared-fs is for grading on a cluster: add --scheduler"):
        choose(options(shared_fs=True), ["attention.causal_mask"], None)
    with pytest.raises(BatchError, match="--no-wait-gpu is for grading on a cluster"):
        choose(options(no_wait_gpu=True), ["attention.causal_mask"], None)
    with pytest.raises(BatchError, match="pick one"):
        choose(options(scheduler="tcp://127.0.0.1:1", cluster="local:2"), ["attention.causal_mask"], None)
    pytest.importorskip("distributed")
    from grader.frontends.batch.cluster import local_workers
    assert local_workers("local:3") == 3
    for bad in ("local", "local:0", "local:x", "slurm:4"):
        with pytest.raises(BatchError, match=r"expected local:N with N worker processes, e\.g\. --cluster local:4"):
            local_workers(bad)


def test_without_the_extra_the_local_path_loads_and_scheduler_says_pip_install(no_dask_env):
    """With dask and distributed unimportable: the command, the batch, the local pool and what its
    workers preload import, the local pool is chosen, and --scheduler says how to install the extra."""
    code = """
import sys
import grader.frontends.commands.batch, grader.frontends.batch.run, grader.pipeline.engine, grader.catalog
from grader.frontends.batch import workers
from grader.frontends.batch.executors import BatchError, choose
from grader.frontends.batch.run import Options
from grader.config import load_config
print(type(choose(Options("s", "o"), ["attention.causal_mask"], load_config(None, env={}))).__name__)
try:
    choose(Options("s", "o", scheduler="tcp://127.0.0.1:8786"), ["attention.causal_mask"], None)
except BatchError as e:
    print(e)
print(sorted(m for m in sys.modules if m.split(".")[0] in ("dask", "distributed")))
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=no_dask_env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    pool, message, loaded = proc.stdout.strip().splitlines()
    assert pool == "Pool" and loaded == "[]"
    assert message.startswith("--scheduler grades on a Dask cluster, and Dask's distributed package is not installed")
    assert INSTALL_CLUSTER in message


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_scheduler_is_named_with_the_fix(monkeypatch, tmp_path):
    pytest.importorskip("distributed")
    from grader.frontends.batch import cluster
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 2.0)
    address = f"tcp://127.0.0.1:{_free_port()}"
    from grader.config import load_config
    executor = cluster.DaskExecutor(["attention.causal_mask"], load_config(None, env={}), scheduler=address)
    with pytest.raises(BatchError, match=rf"--scheduler {address}: cannot reach a Dask scheduler there .* "
                                         r"Is `dask scheduler` running"):
        executor.run([Task("alice", str(tmp_path))], lambda d: None)


@pytest.mark.slow
def test_a_lost_scheduler_is_said_and_the_client_stops_instead_of_hanging(tmp_path, monkeypatch):
    """A scheduler without workers: the client says it waits for workers, then the scheduler dies."""
    pytest.importorskip("distributed")
    from grader.config import load_config
    from grader.frontends.batch import cluster
    monkeypatch.setattr(cluster, "WAIT_NOTE_S", 0.5)
    port = _free_port()
    scratch = Path(os.environ["DASK_TEMPORARY_DIRECTORY"], "dask-scratch-space")    # tests/conftest.py's
    before = set(scratch.glob("scheduler-*"))
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                  "--port", str(port), "--no-dashboard"], cwd=ROOT, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
    try:
        said = io.StringIO()
        executor = cluster.DaskExecutor(["attention.causal_mask"], load_config(str(ROOT / "autograde.toml"), env={}),
                                        scheduler=f"tcp://127.0.0.1:{port}", stream=said)
        subs = make_class(tmp_path / "subs", {"alice": "correct"})
        raised, done = [], []

        def grade():
            try:
                executor.run([Task("alice", str(subs / "alice"))], done.append)   # no worker: it waits
            except BaseException as e:
                raised.append(e)
        runner = threading.Thread(target=grade, daemon=True)
        deadline = time.monotonic() + 60
        runner.start()
        while time.monotonic() < deadline and "waiting:" not in said.getvalue():
            time.sleep(0.2)
        assert f"the Dask scheduler at tcp://127.0.0.1:{port} has none yet (start some with `dask worker" \
            in said.getvalue(), said.getvalue()
        scheduler.kill()
        runner.join(120)
    finally:
        scheduler.kill()
        scheduler.wait()
    assert not runner.is_alive(), "the client hung after losing its scheduler"
    assert set(scratch.glob("scheduler-*")) - before, \
        "the killed scheduler's scratch folder is not in the session's, which the session removes"
    assert not done and len(raised) == 1 and isinstance(raised[0], ClusterLost), raised
    assert f"lost the connection to the Dask scheduler at tcp://127.0.0.1:{port}" in str(raised[0])
    assert "run the same command again" in str(raised[0])


CLUSTER_WORKER_IMPORT = """
import gc, sys
from grader.frontends.batch import cluster_worker

class Started:                                 # the worker's Sandbox, not started here
    limits = "limits"
    def start(self):
        pass

cluster_worker.api.sandbox = lambda config: Started()
gc.callbacks.append(lambda phase, info: phase == "start" and info["generation"] == 2 and print("full"))
cluster_worker._sandbox({})
first = gc.get_freeze_count()
cluster_worker._sandbox({})
print("torch" in sys.modules, gc.isenabled(), first > 100000, gc.get_freeze_count() == first, flush=True)
gc.callbacks.clear()
"""


def test_a_cluster_workers_first_task_imports_torch_frozen_and_later_ones_freeze_nothing():
    """A Dask worker process imports the engine, torch with it, on its first task: frozen
    (grader.imports), no full collection during it; a later task freezes nothing more (a freeze each
    task would keep that task's garbage for good)."""
    out = subprocess.run([sys.executable, "-c", CLUSTER_WORKER_IMPORT], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "True", "True", "True"], (out.stdout, out.stderr[-2000:])
