"""Limits that hold per child, whatever the student's code does (as root: private uid, namespaces).

Each test is a correct attention solution whose causal_mask also attacks; the attack's outcome
decides whether it returns the right answer, so a limit that fails shows as a passing exercise
where it must fail, or the other way round.
"""
import os
import subprocess
import sys

import pytest

from conftest import HOPPER, ROOT, attack_uids, indented, left_of, statuses

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="private uids and namespaces need root; "
                                "as an ordinary user only rlimits and the process group apply")

SHM_KEY = 0x5EED0C

SYSV_SHM = f'''
def causal_mask(T):
    """Attack: leave a 1 MiB System V shared-memory segment behind for a later submission.
    Must hold: the segment lives in the child's own IPC namespace and vanishes with it."""
    import ctypes
    import torch
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.shmget({SHM_KEY}, 1 << 20, 0o1666) < 0:          # IPC_CREAT | 0666
        raise OSError(ctypes.get_errno(), "shmget failed")
    return torch.tril(torch.ones(T, T, dtype=torch.bool))
'''

FORK_BOMB = '''
def causal_mask(T):
    """Attack: fork until the machine is full (the children sleep).
    Must hold: fork() fails well before 1,000 processes; every child is killed afterwards."""
    import os, time
    import torch
    print(f"UID={os.getuid()}")
    forked = 0
    try:
        while forked < 1000:
            if os.fork() == 0:
                time.sleep(60)
                os._exit(0)
            forked += 1
    except OSError:
        pass
    if forked >= 1000:
        raise RuntimeError(f"forked {forked} processes: no limit")
    return torch.tril(torch.ones(T, T, dtype=torch.bool))
'''


HELPERS_MEMORY = '''
def causal_mask(T):
    """Attack: three helper processes of 1.2 GiB each, every one under the per-process limit.
    Must hold: together they exceed the child's memory budget (2048 MiB plus headroom): one is
    killed, so the attack cannot complete."""
    import os
    import torch
    print(f"UID={os.getuid()}")
    pids = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            block = bytearray(1200 << 20)        # zero-filled: every page resident
            os.read(os.open("/dev/zero", os.O_RDONLY), 1)
            os._exit(0 if len(block) else 1)
        pids.append(pid)
    if all(os.waitpid(p, 0)[1] == 0 for p in pids):
        return torch.tril(torch.ones(T, T, dtype=torch.bool))
    raise MemoryError("a helper was killed")
'''

PID_HOPPER = '''
def causal_mask(T):
    """Attack: eight helpers in their own sessions that fork and exit in a loop, so their pids keep
    changing and a sweep of /proc falls behind. Must hold: they die with the child."""
    import os, time
    import torch
    print(f"UID={os.getuid()}")
    for _ in range(0 if os.path.exists("hopping") else 8):   # once per child, not per case
        open("hopping", "w").close()
''' + indented(HOPPER, 8) + '''
    time.sleep(0.2)
    return torch.tril(torch.ones(T, T, dtype=torch.bool))
'''


# A grader under an ancestor that collects nothing it is handed (like a container's pid 1 that does not
# reap): that ancestor, a subreaper, is where every orphan below it would go. Prints its zombie children.
UNREAPED_ANCESTOR = """
import ctypes, os, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)          # PR_SET_CHILD_SUBREAPER
from grader.catalog import select
from grader.config import load_config
from grader.pipeline.engine import grade, limits_from
from grader.sandbox.runner import Sandbox
config = load_config(sys.argv[1], env={})
with Sandbox(limits_from(config)) as sandbox:
    result = grade(sys.argv[2], select(["attention.causal_mask"]), config, sandbox=sandbox)
    time.sleep(0.5)
    children = [pid for task in os.listdir("/proc/self/task")
                for pid in open(f"/proc/self/task/{task}/children").read().split()]
    zombies = [pid for pid in children if open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"]
    print(result.exercises[0].status.value, len(zombies))
"""


def nothing_left(result, handed: set[int]) -> None:
    """Nothing of any child is left (`handed`: every uid handed out, conftest.handed_uids), the
    attack's among them (it prints its uid)."""
    uids = attack_uids(result)
    assert uids and uids <= handed, (uids, handed)
    left = left_of(handed)
    assert not left, left


def _shm_keys() -> set[int]:
    with open("/proc/sysvipc/shm") as f:
        next(f)
        return {int(line.split()[0]) for line in f if line.strip()}


def test_system_v_shared_memory_does_not_outlive_the_child(make_submission, grade_dir):
    result = grade_dir(make_submission({"attention.causal_mask": SYSV_SHM}), "attention.causal_mask")
    assert statuses(result) == {"attention.causal_mask": "passed"}, result.exercises[0].message
    assert SHM_KEY not in _shm_keys()


def test_a_fork_bomb_hits_the_process_limit_and_leaves_nothing(make_submission, grade_dir, handed_uids):
    result = grade_dir(make_submission({"attention.causal_mask": FORK_BOMB}), "attention.causal_mask")
    assert statuses(result) == {"attention.causal_mask": "passed"}, result.exercises[0].message
    nothing_left(result, handed_uids)


def test_helpers_share_one_memory_budget(make_submission, grade_dir, handed_uids):
    result = grade_dir(make_submission({"attention.causal_mask": HELPERS_MEMORY}), "attention.causal_mask")
    assert statuses(result) != {"attention.causal_mask": "passed"}, "three 1.2 GiB helpers all completed"
    nothing_left(result, handed_uids)


def test_a_process_that_keeps_changing_its_pid_dies_with_the_child(make_submission, grade_dir, handed_uids):
    result = grade_dir(make_submission({"attention.causal_mask": PID_HOPPER}), "attention.causal_mask")
    assert statuses(result) == {"attention.causal_mask": "passed"}, result.exercises[0].message
    nothing_left(result, handed_uids)


def test_orphans_are_collected_by_the_sandbox_not_handed_to_pid_1(make_submission):
    """The hopper's helpers outlive their parents, so each is an orphan when it is killed. They must
    go to the sandbox, which collects them, not up to the machine's pid 1: a pid 1 that never does
    (the grader as a container's first process) would keep every one as a zombie, one pid each,
    until no process could start (hundreds a hostile submission)."""
    folder = make_submission({"attention.causal_mask": PID_HOPPER})
    run = subprocess.run([sys.executable, "-c", UNREAPED_ANCESTOR, str(ROOT / "autograde.toml"), str(folder)],
                         capture_output=True, text=True, timeout=120, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stderr
    status, zombies = run.stdout.split()[-2:]
    assert status == "passed"
    assert zombies == "0", f"{zombies} zombies handed to the grader's ancestor"
