"""grader.threads: a pinned block runs its torch work on the pinned number of threads, in every
thread that pins, not only the first, and so does a pool's thread started inside a pin.

OpenMP and MKL keep the thread count for each thread. A thread that pins while another thread
already holds a pin must still set its own, or its first BLAS call starts OpenMP's default team;
so must a thread of the engine's pool (`threads.follow`, its initializer), which does not pin.
Each check runs in a fresh interpreter (no thread of this one has touched OpenMP yet) with
OMP_NUM_THREADS=4, so that default team has three more threads on any machine.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

# Two threads hold a pin at once, as the engine's exercises do; inside, each multiplies matrices
# (an MKL call, which starts no team by itself) and the process's threads are counted.
_PROGRAM = r"""
import json, os, sys, threading
import torch
from grader import threads

if sys.argv[1] == "configured":
    threads.configure(1)          # a batch worker's main thread, before its exercises' threads start
a = torch.randn(256, 256, dtype=torch.float64)
inside, seen = threading.Barrier(2), []


def multiply():
    inside.wait()
    for _ in range(20):
        a @ a
    seen.append(len(os.listdir("/proc/self/task")))
    inside.wait()


def grade():
    with threads.pinned(1):
        multiply()


before, count = len(os.listdir("/proc/self/task")), torch.get_num_threads()
if sys.argv[1] == "pool":         # the engine's: a pool started inside a pin, its threads not pinning
    from concurrent.futures import ThreadPoolExecutor
    with threads.pinned(1), ThreadPoolExecutor(2, initializer=threads.follow) as pool:
        list(pool.map(lambda _: multiply(), range(2)))
else:
    workers = [threading.Thread(target=grade) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
print(json.dumps({"before": before, "inside": max(seen), "count": count, "after": torch.get_num_threads()}))
"""


@pytest.mark.parametrize("start", ["fresh", "configured", "pool"])
def test_every_thread_that_pins_runs_its_torch_work_on_the_pinned_count(start):
    env = {**os.environ, "OMP_NUM_THREADS": "4"}
    proc = subprocess.run([sys.executable, "-c", _PROGRAM, start], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    counts = json.loads(proc.stdout.strip().splitlines()[-1])
    # The two grading threads, and no OpenMP team beside them.
    assert counts["inside"] == counts["before"] + 2, counts
    # The main thread's count, after the last pin ended, is what it was before the first.
    assert counts["after"] == counts["count"], counts
