"""The worker pool outlives its workers: a worker killed mid-submission is replaced and the
submission retried once; killed again, the submission is reported lost (WORKER_LOST: the batch
records it as crashed), and the rest of the class is graded regardless. A worker stuck past the
deadline is a grader error, not retried."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace

import pytest

from conftest import ROOT, handed_on, sandbox_folders_of
from fixtures.batch.build import make_class
from grader.frontends.batch.executors import BatchError, Outcome
from grader.frontends.batch.workers import Pool, Task
from grader.config import load_config


# A correct causal_mask that takes half a second a call: a worker killed while it grades it is
# replaced, and the retry ends in seconds, where an endless loop waits out two strikes of a fresh
# child's start-up grace (20 s) in the retry.
SLOW_BUT_CORRECT = {"causal_mask": "def causal_mask(T):\n    import time\n    time.sleep(0.5)\n"
                                   "    return torch.ones(T, T, dtype=torch.bool).tril()\n"}


def _tasks(root, slow) -> list[Task]:
    subs = make_class(root / "subs", {"slow": slow, "a": "correct", "b": "correct", "c": {"causal_mask": "inverted"}})
    return [Task(s, str(subs / s)) for s in ("slow", "a", "b", "c")]


@pytest.fixture
def tasks(tmp_path):
    return _tasks(tmp_path, "hostile_infinite_loop")


def killer(pool, student, times):
    """Kill whichever worker is grading `student`, `times` times, from another thread."""
    killed = []

    def loop():
        deadline = time.monotonic() + 120
        while len(killed) < times and time.monotonic() < deadline:
            pid = pool.busy_with(student)
            if pid is not None and pid not in killed:
                time.sleep(0.3)                 # let it get into the submission
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.05)
    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return killed


def config():
    return replace(load_config(str(ROOT / "autograde.toml"), env={}), call_timeout=2.0)


def test_a_killed_worker_is_replaced_and_its_submission_retried(tmp_path):
    """...and no worker leaves its folder in the temp folder behind, neither the killed one nor those
    that end (multiprocessing ends a forked worker without running atexit)."""
    tasks = _tasks(tmp_path, SLOW_BUT_CORRECT)
    pool = Pool(2, ["attention.causal_mask"], config())
    done, folders = [], {}

    def on_done(d):
        done.append(d)
        folders.update((w.proc.pid, sandbox_folders_of(w.proc.pid)) for w in pool.workers)
    killed = killer(pool, "slow", 1)
    pool.run(tasks, on_done)
    assert len(killed) == 1
    assert sorted(d.task.student for d in done) == ["a", "b", "c", "slow"]
    assert all(d.result_json is not None for d in done), [d.error for d in done]
    slow = json.loads(next(d.result_json for d in done if d.task.student == "slow"))
    assert [e["status"] for e in slow["exercises"]] == ["passed"], slow       # the retry graded it whole
    assert any(folders.values()), "no worker had a folder: nothing tested"
    assert not [f for pid in set(folders) | set(killed) for f in sandbox_folders_of(pid)]


def test_a_killed_workers_zygote_is_collected_by_the_forkserver_not_left_to_pid_1(tmp_path):
    """A worker killed mid-submission leaves its sandbox's zygote an orphan: it comes to the
    forkserver (the workers' subreaper), which collects it once it has ended, not to pid 1. What may
    outlive the batch is the kernel counters' keepers alone, by design."""
    subs = make_class(tmp_path / "subs", {"slow": SLOW_BUT_CORRECT, "a": "correct"})
    code = ("import os, signal, threading, time\n"
            "from dataclasses import replace\n"
            "from grader import cli\n"
            "from grader.config import load_config\n"
            "from grader.frontends.batch.workers import Pool, Task\n"
            "config = replace(load_config('autograde.toml', env={}), call_timeout=2.0)\n"
            "pool = Pool(1, ['attention.causal_mask'], config)\n"
            "def kill():\n"
            "    while (pid := pool.busy_with('slow')) is None:\n"
            "        time.sleep(0.05)\n"
            "    time.sleep(0.5)\n"                 # into the submission: its zygote serves a child
            "    os.kill(pid, signal.SIGKILL)\n"
            "threading.Thread(target=kill, daemon=True).start()\n"
            "done = []\n"
            f"pool.run([Task('slow', {str(subs / 'slow')!r}), Task('a', {str(subs / 'a')!r})], done.append)\n"
            "cli._end_helpers()\n"                  # as the command ends (cli.console)
            "assert sorted(d.task.student for d in done) == ['a', 'slow'], done\n")
    got, handed, err = handed_on([sys.executable, "-c", code], cwd=ROOT, timeout=300)
    assert got == 0, err
    assert [c for c in handed if "grader/sandbox/keeper.py" not in c] == [], handed


def test_a_submission_that_kills_its_worker_twice_is_reported_not_retried_forever(tasks):
    pool = Pool(2, ["attention.causal_mask"], config())
    done = []
    killed = killer(pool, "slow", 2)
    pool.run(tasks, done.append)
    assert len(killed) == 2
    by = {d.task.student: d for d in done}
    assert sorted(by) == ["a", "b", "c", "slow"] and len(done) == 4
    assert by["slow"].result_json is None and "ended unexpectedly" in by["slow"].error
    assert by["slow"].outcome is Outcome.WORKER_LOST and by["slow"].lost == 2
    assert all(by[s].outcome is Outcome.GRADED for s in "abc")


def test_a_stuck_worker_is_stopped_at_the_deadline_and_not_retried(tasks):
    pool = Pool(2, ["attention.causal_mask"], replace(config(), call_timeout=30.0))
    pool.deadline_s = 3.0                 # the submission limit plus grace, shortened for the test
    done = []
    start = time.monotonic()
    pool.run(tasks, done.append)
    by = {d.task.student: d for d in done}
    assert len(done) == 4 and by["slow"].result_json is None and by["slow"].outcome is Outcome.GRADER_ERROR
    assert "grading took longer than 3 s" in by["slow"].error
    assert all(by[s].result_json is not None for s in "abc")
    assert time.monotonic() - start < 30, "the stuck submission was waited for, not stopped"


class _EndsItsWorker:
    """An exercise name that a worker unpickles with its arguments (the forkserver sends them
    pickled) before worker_main runs: the worker ends at once, as one whose start fails outside
    worker_main does (a crash while it imports, the kernel's OOM killer)."""

    def __reduce__(self):
        return os._exit, (7,)


def test_workers_that_end_before_they_are_ready_stop_the_batch_instead_of_being_replaced_for_ever(tasks):
    pool = Pool(2, [_EndsItsWorker()], config())
    done, raised = [], []

    def run():
        try:
            pool.run(tasks, done.append)
        except BatchError as e:
            raised.append(e)
    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    runner.join(120)
    assert not runner.is_alive(), "the pool was still replacing workers that end at start after 120 s"
    assert raised, "the pool returned without a word although no worker ever started"
    assert "grading workers could not start" in str(raised[0]) and "exit code 7" in str(raised[0]), str(raised[0])
    assert done == [], "no worker was ever ready: nothing can have been graded"


MULTIPROCESSING_FOLDER = """
import multiprocessing, os, shutil, tempfile
from grader.frontends.batch import workers
workers._context()
first = multiprocessing.current_process()._config["tempdir"]
workers._context()
again = multiprocessing.current_process()._config["tempdir"]
shutil.rmtree(os.path.dirname(first))           # the grader's own folder swept away under it
workers._context()
print(tempfile.gettempdir(), first, again, multiprocessing.current_process()._config["tempdir"])
"""


def test_multiprocessing_keeps_its_socket_folder_inside_the_graders_own(short_tmp):
    env = {**os.environ, "TMPDIR": short_tmp, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", MULTIPROCESSING_FOLDER], env=env, capture_output=True, text=True,
                          cwd=short_tmp)
    assert proc.returncode == 0, proc.stderr[-2000:]
    tmp, first, again, replaced = proc.stdout.split()
    own = os.path.basename(os.path.dirname(first))
    assert os.path.dirname(os.path.dirname(first)) == tmp and own.startswith("grader-sandbox-")
    assert os.path.basename(first).startswith("pymp-")
    assert again == first, "a second pool of the same process keeps the folder"
    assert replaced != first and os.path.basename(replaced).startswith("pymp-"), "a removed folder is replaced"
    assert os.listdir(short_tmp) == [], "the process's exit removes its own folder"


def test_the_forkserver_imports_the_engine_frozen_before_it_forks_a_worker():
    """What the forkserver preloads (the worker's module and the engine, torch with it) is imported
    with no full collection and frozen, so neither the forkserver nor a worker forked from it walks
    torch's objects in a collection again."""
    code = ("import gc, sys\n"
            "from multiprocessing import forkserver\n"
            "from grader.frontends.batch import workers\n"
            "workers._context()\n"
            "preload = forkserver._forkserver._preload_modules\n"
            "gc.callbacks.append(lambda phase, info: phase == 'start' and info['generation'] == 2 and print('full'))\n"
            "for name in preload:\n    __import__(name)\n"       # as the forkserver's main does
            "needed = ('grader.frontends.batch.workers', 'grader.pipeline.engine', 'grader.catalog', 'torch')\n"
            "print(all(n in sys.modules for n in needed), gc.isenabled(), gc.get_freeze_count() > 100000, flush=True)\n"
            "gc.callbacks.clear()\n")        # a normal end: atexit removes the process's folders
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "True", "True"], (out.stdout, out.stderr[-2000:])


def test_a_ctrl_c_while_the_forkserver_imports_its_preload_prints_no_traceback():
    """The forkserver is in the terminal's process group; multiprocessing makes it ignore SIGINT only after
    its preload: a Ctrl-C during grader batch's start-up printed its KeyboardInterrupt traceback."""
    code = ("import os, signal, threading\n"
            "threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()\n"
            "import grader.frontends.batch.forkserver_preload\n"
            "print('imported', flush=True)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout == "imported\n", out.stderr[-2000:]
    assert "KeyboardInterrupt" not in out.stderr
