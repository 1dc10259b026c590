"""`grader batch` on a Dask cluster (grader.frontends.batch.cluster): a real distributed.LocalCluster
of two worker processes on the loopback interface, started and stopped here, shared by the module.

- a mixed class (correct, buggy, unreadable, hostile: endless loop, memory bomb, os._exit) gives
  the local pool's gradebook rows, bit for bit (timings aside);
- a worker SIGKILLed mid-batch: every student graded and recorded exactly once;
- the client SIGKILLed mid-batch, then the same command again: resumes, nothing lost or twice;
- a submission that kills its worker every time ends as a crashed entry after the retry limit and
  the batch finishes. The sandbox keeps a student from killing the worker process, so the fault is
  injected: the workers preload KILL_HOOK (a Dask preload script), which SIGKILLs the worker process
  when it is asked to grade a folder holding a file named KILL_THE_WORKER, as tests/test_grader_fault.py
  injects a grader bug with a wrapper script;
- tasks with GPU performance checks ask for the GPU resource: none runs on a worker without it
  (they wait, said once, and run when a worker with --resources GPU=1 joins); with --no-wait-gpu
  they are graded anywhere without the GPU checks, and the feedback says so.
"""
from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import replace

import pytest

from conftest import ROOT, handed_on
from fixtures.batch.build import batch_command, make_class

distributed = pytest.importorskip("distributed")      # the `cluster` extra; the test extra installs it

from grader.config import load_config  # noqa: E402
from grader.frontends.batch import cluster as cluster_module  # noqa: E402
from grader.frontends.batch.run import Options, run_batch  # noqa: E402
from grader.sandbox.provision import make_workdir  # noqa: E402

FAST = ("attention.causal_mask", "attention.positional_encoding")   # no run-time API watch: quick children
SDPA = "attention.scaled_dot_product_attention"                     # has a performance spec
# Hostile functions that misbehave on one case only, so the start-up grace of a fresh child's first
# call (10 s) is not spent on every case: the endless loop costs one call_timeout, not 20 s.
ENDLESS_LOOP = """def causal_mask(T):
    import torch
    while T == 7:
        pass
    return torch.tril(torch.ones(T, T, dtype=torch.bool))
"""
MEMORY_BOMB = """def causal_mask(T):
    import torch
    big = torch.ones(6 * 1024**3, dtype=torch.uint8)
    return big
"""
KILL_HOOK = '''
import os, signal

def dask_setup(worker):
    import grader.api
    real = grader.api.grade

    def grade(path, *args, **kwargs):
        if os.path.exists(os.path.join(str(path), "KILL_THE_WORKER")):
            os.kill(os.getpid(), signal.SIGKILL)     # the worker process itself, not a sandboxed child
        return real(path, *args, **kwargs)
    grader.api.grade = grade
'''


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    import dask
    hook = tmp_path_factory.mktemp("hook") / "kill_hook.py"
    hook.write_text(KILL_HOOK)
    with dask.config.set({"distributed.scheduler.allowed-failures": 1,
                          "distributed.scheduler.worker-saturation": 1.0}):
        lc = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                      dashboard_address=None, preload=[str(hook)])
    client = distributed.Client(lc)
    try:
        yield lc, client
    finally:
        client.close()
        lc.close()


@pytest.fixture
def env():
    e = dict(os.environ)
    e.pop("GRADER_SECRET_SEED", None)
    return e


def config(**changes):
    return replace(load_config(str(ROOT / "autograde.toml"), env={}), **changes)


def rows(out):
    db = sqlite3.connect(f"file:{out}/gradebook.sqlite?mode=ro", uri=True)
    try:
        return {s: (state, score, json.loads(r)) for s, state, score, r in
                db.execute("SELECT student, state, score, result FROM submissions")}
    finally:
        db.close()


def query(out, sql):
    try:
        db = sqlite3.connect(f"file:{out}/gradebook.sqlite?mode=ro", uri=True)
    except sqlite3.OperationalError:         # not created yet
        return []
    try:
        return db.execute(sql).fetchall()
    except sqlite3.OperationalError:         # no table yet
        return []
    finally:
        db.close()


def timeless(value):
    """A result without its timings: every `seconds` key dropped."""
    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [timeless(v) for v in value]
    return value


def said(row):
    """Each exercise of a row as (id, status, points, message), as a failed comparison shows them."""
    return [(e["id"], e["status"], e["points"], e["message"][:600]) for e in row.get("exercises", [])]


def on_cluster(lc, subs, out, *names, **options):
    return Options(submissions=str(subs), out=str(out), names=names, scheduler=lc.scheduler_address, **options)


def events(out):
    return dict(query(out, "SELECT student, COUNT(*) FROM events GROUP BY student"))


@pytest.mark.slow
def test_a_mixed_class_gets_the_local_pools_rows_bit_for_bit(cluster, tmp_path):
    lc, _ = cluster
    students = {"ok": "correct", "zipped": "zip:correct", "bug": {"causal_mask": "transposed"},
                "empty": "empty", "broken_zip": "corrupt.zip", "loop": {"causal_mask": ENDLESS_LOOP},
                "bomb": {"causal_mask": MEMORY_BOMB}, "exits": "hostile_os_exit"}
    subs = make_class(tmp_path / "subs", students)
    cfg = config(call_timeout=5.0)       # a correct call stays far below it, however loaded the machine
    local = run_batch(Options(submissions=str(subs), out=str(tmp_path / "local"), names=FAST, jobs=2), cfg,
                      io.StringIO())
    remote = run_batch(on_cluster(lc, subs, tmp_path / "dask", *FAST), cfg, io.StringIO())
    assert sorted(local.graded) == sorted(remote.graded) == sorted(students)
    a, b = rows(tmp_path / "local"), rows(tmp_path / "dask")
    assert set(a) == set(b) == set(students)
    for student in students:
        local_row, cluster_row = (json.dumps(timeless(x[student][2]), sort_keys=True) for x in (a, b))
        assert a[student][:2] == b[student][:2] and local_row == cluster_row, \
            f"{student}: local {a[student][:2]} {said(a[student][2])}; cluster {b[student][:2]} {said(b[student][2])}"
    status = {s: {e["id"]: e["status"] for e in r[2]["exercises"]} for s, r in b.items()}
    assert status["loop"]["attention.causal_mask"] == "timeout"
    assert status["exits"]["attention.positional_encoding"] == "crashed"
    assert status["bomb"]["attention.causal_mask"] == "error" and "out of memory" in json.dumps(b["bomb"][2])
    assert a["ok"][1] == b["ok"][1] > 0 and b["empty"][0] == "unreadable"
    assert str(subs / "zipped.zip") in b["zipped"][2]["submission"]       # the client's path, not the worker's
    assert sorted(remote.crashed) == sorted(local.crashed) and "loop" in remote.crashed


def gpu_config():
    from grader.timing.config import with_overrides
    return with_overrides(config(), enabled=True, device="cuda", budget_s=0.5)


@pytest.mark.slow
def test_no_wait_gpu_grades_anywhere_without_the_gpu_checks_and_says_so(cluster, tmp_path):
    lc, _ = cluster
    subs = make_class(tmp_path / "subs", {"alice": "correct"})
    summary = run_batch(on_cluster(lc, subs, tmp_path / "out", SDPA, no_wait_gpu=True), gpu_config(), io.StringIO())
    state, score, result = rows(tmp_path / "out")["alice"]
    assert state == "graded" and score > 0
    (exercise,) = result["exercises"]
    assert any("--no-wait-gpu" in n for n in exercise["notes"])
    assert exercise["performance"][0]["status"] == "skipped"
    assert any("--no-wait-gpu" in n for n in summary.notes)
    assert "--no-wait-gpu" in (tmp_path / "out" / "students" / "alice" / "feedback.html").read_text()


@pytest.mark.slow
def test_gpu_tasks_wait_for_a_gpu_worker_and_never_run_elsewhere(cluster, tmp_path, monkeypatch):
    lc, client = cluster
    subs = make_class(tmp_path / "subs", {"alice": "correct", "bob": "correct"})
    from grader.frontends.batch.executors import Task
    monkeypatch.setattr(cluster_module, "WAIT_NOTE_S", 1.0)
    said = io.StringIO()
    executor = cluster_module.DaskExecutor([SDPA], gpu_config(), scheduler=lc.scheduler_address, stream=said)
    assert executor.gpu, "a CUDA performance check must make the task ask for a GPU worker"
    done = []
    runner = threading.Thread(target=executor.run, args=([Task(s, str(subs / s)) for s in ("alice", "bob")],
                                                         done.append), daemon=True)
    runner.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "waiting:" not in said.getvalue():
        time.sleep(0.2)
    assert "need a Dask worker with the GPU resource" in said.getvalue() and "--no-wait-gpu" in said.getvalue()
    states = client.run_on_scheduler(lambda dask_scheduler: sorted(
        ts.state for key, ts in dask_scheduler.tasks.items() if str(key).startswith("grade-")))
    assert states and set(states) == {"no-worker"}, states         # not run on the two CPU workers
    assert not done
    gpu_worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", lc.scheduler_address,
                                   "--nthreads", "1", "--resources", "GPU=1", "--name", "gpu", "--no-dashboard",
                                   "--nworkers", "1"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        runner.join(240)
        assert not runner.is_alive(), "the GPU tasks were not graded once a GPU worker joined"
        gpu_address = [a for a, w in client.scheduler_info(n_workers=-1)["workers"].items() if w["name"] == "gpu"]
    finally:
        gpu_worker.send_signal(signal.SIGTERM)
        gpu_worker.wait(60)
    assert sorted(d.task.student for d in done) == ["alice", "bob"]
    assert {d.worker for d in done} == set(gpu_address), "a GPU task ran on a worker without the GPU resource"
    for d in done:
        (exercise,) = json.loads(d.result_json)["exercises"]
        (perf,) = exercise["performance"]
        assert perf["device"] == "cuda" and "needs CUDA" in perf["message"]      # this GPU worker has no CUDA


@pytest.mark.slow
def test_sigkill_of_the_client_then_the_same_command_resumes(cluster, tmp_path, env):
    lc, _ = cluster
    students = {f"s{i:02d}": ("correct" if i % 3 else {"causal_mask": "inverted"}) for i in range(7)}
    subs = make_class(tmp_path / "subs", students)
    out = tmp_path / "out"
    cmd = batch_command(subs, out, *FAST, extra=("--scheduler", lc.scheduler_address))
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None and len(query(out, "SELECT student "
                                                                                 "FROM submissions")) < 2:
            time.sleep(0.05)
        assert proc.poll() is None, "the batch ended before it could be killed: " + proc.stderr.read().decode()[-2000:]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        proc.stderr.close()
    first = [s for (s,) in query(out, "SELECT student FROM submissions")]
    assert 2 <= len(first) < len(students)
    again = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"{len(students) - len(first)} graded now, {len(first)} unchanged" in again.stderr
    assert sorted(rows(out)) == sorted(students)
    assert events(out) == {s: 1 for s in students}, "a student was recorded twice"
    assert all((out / "students" / s / "feedback.html").is_file() for s in students)


@pytest.mark.slow
def test_a_worker_killed_and_one_retiring_mid_batch_lose_nobody_and_record_everyone_once(cluster, tmp_path):
    """One worker retires gracefully mid-task, as a worker does at its --lifetime (Worker.close_gracefully,
    restarted as --lifetime-restart does); once it has left, the other is SIGKILLed mid-task.
    A retiring worker hands its work to another that is running: retired first, while both run (killed
    first, the retiring one was at times the only worker left, could hand nothing back, and Dask
    counted its going as a second death of the task it had taken over from the killed one)."""
    lc, client = cluster
    client.wait_for_workers(2, timeout=60)      # an earlier test's killed worker is back
    students = {f"s{i}": ("correct" if i % 2 else {"causal_mask": "inverted"}) for i in range(8)}
    subs = make_class(tmp_path / "subs", students)
    out = tmp_path / "out"
    killed, retired = [], []

    async def retire(dask_worker):
        await dask_worker.close_gracefully(restart=True, reason="worker-lifetime-reached")

    def disrupt():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (killed and retired):
            busy = sorted(w for w, keys in client.processing().items() if keys)
            running = client.scheduler_info(n_workers=-1)["workers"]
            if busy and not retired and len(running) >= 2 and \
                    len(query(out, "SELECT student FROM submissions")) >= 1:
                client.run(retire, workers=busy[:1], wait=False)
                retired.append(busy[0])
            elif retired and not killed and retired[0] not in running and [w for w in busy if w != retired[0]]:
                other = [w for w in busy if w != retired[0]][0]
                pid = client.run(os.getpid, workers=[other])[other]
                os.kill(pid, signal.SIGKILL)        # the worker process, mid-task
                killed.append(other)
            time.sleep(0.05)
    thread = threading.Thread(target=disrupt, daemon=True)
    thread.start()
    summary = run_batch(on_cluster(lc, subs, out, *FAST), config(), io.StringIO())
    thread.join(5)
    assert killed and retired, "no worker was disrupted: the test proves nothing"
    got = rows(out)
    assert sorted(got) == sorted(students) and sorted(summary.graded) == sorted(students)
    assert events(out) == {s: 1 for s in students}, "a student was recorded twice"
    assert all(got[s][0] == "graded" for s in students) and not summary.crashed, \
        departures(lc, summary.crashed or list(students))
    full = {s: got[s][1] == got[s][2]["max_score"] for s in students}
    assert full == {f"s{i}": bool(i % 2) for i in range(8)}, "the correct ones full marks, the buggy ones not"
    client.wait_for_workers(2, timeout=60)


def departures(lc, students: list[str]) -> str:
    """What the scheduler recorded of workers leaving (whether it expected it, what they were
    running) and of these students' tasks' transitions: why a task counted a worker's death."""
    removals = [e for _, e in lc.scheduler.get_events("all")
                if isinstance(e, dict) and e.get("action") == "remove-worker"]
    story = [t for t in lc.scheduler.transition_log if str(t[0]).startswith(tuple(f"grade-{s}-" for s in students))]
    return "\n".join(["workers removed:", *map(repr, removals), "transitions:", *map(repr, story)])


@pytest.mark.slow
def test_a_submission_that_kills_its_worker_every_time_ends_crashed_and_the_batch_finishes(cluster, tmp_path):
    lc, client = cluster
    subs = make_class(tmp_path / "subs", {"a": "correct", "b": {"causal_mask": "inverted"}, "killer": "correct"})
    # a correct submission: only the injected fault (KILL_HOOK) can make it crash
    (subs / "killer" / "KILL_THE_WORKER").write_text("the fault-injection hook kills the worker grading this\n")
    out = tmp_path / "out"
    summary = run_batch(on_cluster(lc, subs, out, *FAST), config(), io.StringIO())
    got = rows(out)
    assert sorted(got) == ["a", "b", "killer"] and events(out) == {"a": 1, "b": 1, "killer": 1}
    assert got["a"][0] == got["b"][0] == "graded" and got["a"][1] == got["a"][2]["max_score"] > got["b"][1]
    state, score, result = got["killer"]
    assert state == "graded" and score == 0, "a crashed entry is a result, not a grader error retried forever"
    assert {e["status"] for e in result["exercises"]} == {"crashed"}
    assert "died each of the 2 times it was tried" in result["exercises"][0]["message"]
    assert "killer" in summary.crashed and not summary.grader_errors
    feedback = (out / "students" / "killer" / "feedback.md").read_text()
    assert "crashed" in feedback.lower()
    client.wait_for_workers(2, timeout=60)


@pytest.mark.slow
def test_a_killed_workers_folder_is_removed_as_its_replacement_joins_before_any_task(cluster, tmp_path):
    """A worker killed from outside cannot remove its folder in the temp folder (the copies of the
    submissions it was grading). The worker its nanny starts in its place removes it as it joins
    (cluster.SweepOnStart, which a batch registers), not at a first task that may never come; the
    other worker's folder, whose process lives, stays."""
    lc, client = cluster
    client.wait_for_workers(2, timeout=60)
    subs = make_class(tmp_path / "subs", {"a": "correct"})
    run_batch(on_cluster(lc, subs, tmp_path / "out", FAST[0]), config(), io.StringIO())
    folders = {w: os.path.dirname(f) for w, f in client.run(make_workdir).items()}   # each worker's own
    pids = client.run(os.getpid)
    victim, survivor = sorted(pids)
    assert all(os.path.isdir(f) for f in folders.values())
    os.kill(pids[victim], signal.SIGKILL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        running = client.run(os.getpid, on_error="ignore")    # the killed one, until it is known gone
        if len(running) == 2 and pids[victim] not in running.values() and not os.path.exists(folders[victim]):
            break
        time.sleep(0.2)
    assert not os.path.exists(folders[victim]), f"the killed worker's {folders[victim]} is still there"
    assert os.path.isdir(folders[survivor]), "a live worker's folder was removed"


@pytest.mark.slow
def test_a_local_cluster_grades_and_leaves_nothing_behind(tmp_path, env):
    """`--cluster local:N` starts a LocalCluster of its own and closes it at the end: the students are
    graded as on any cluster, the temp folder is left as it was found (Dask's scratch space and its
    lock files, which Dask itself leaves there, are in a folder of the batch's, removed with it), and
    no process is left for pid 1 to collect but the kernel counters' keepers, which outlive their
    graders by design (each worker process ends its sandbox's zygote as it exits)."""
    subs = make_class(tmp_path / "subs", {"a": "correct", "b": {"causal_mask": "inverted"}})
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    command = batch_command(subs, tmp_path / "out", FAST[0], extra=["--cluster", "local:2"])
    plain = {k: v for k, v in env.items() if k != "DASK_TEMPORARY_DIRECTORY"}    # as a user runs it (conftest)
    code, handed, err = handed_on(command, cwd=ROOT, timeout=300, env={**plain, "TMPDIR": str(tmp)})
    assert code == 0, err
    got = rows(tmp_path / "out")
    assert got["a"][1] == got["a"][2]["max_score"] > got["b"][1] and got["b"][0] == "graded"
    assert os.listdir(tmp) == []
    assert [c for c in handed if "grader/sandbox/keeper.py" not in c] == [], handed
