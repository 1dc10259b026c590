"""Limits that hold per child, whatever the student's code does (as root: private uid, namespaces).

Each test is a correct attention solution whose causal_mask also attacks; the attack's outcome
decides whether it returns the right answer, so a limit that fails shows as a passing exercise
where it must fail, or the other way round.
"""
import os

import pytest

from conftest import statuses

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


def _shm_keys() -> set[int]:
    with open("/proc/sysvipc/shm") as f:
        next(f)
        return {int(line.split()[0]) for line in f if line.strip()}


def test_system_v_shared_memory_does_not_outlive_the_child(make_submission, grade_dir):
    result = grade_dir(make_submission({"attention.causal_mask": SYSV_SHM}), "attention.causal_mask")
    assert statuses(result) == {"attention.causal_mask": "passed"}, result.exercises[0].message
    assert SHM_KEY not in _shm_keys()


def test_a_fork_bomb_hits_the_process_limit_and_leaves_nothing(make_submission, grade_dir):
    result = grade_dir(make_submission({"attention.causal_mask": FORK_BOMB}), "attention.causal_mask")
    assert statuses(result) == {"attention.causal_mask": "passed"}, result.exercises[0].message
    left = _private_uid_processes()
    assert not left, [(pid, open(f'/proc/{pid}/status').read().split(chr(10))[:9]) for pid in left[:3]]


def _private_uid_processes() -> list[int]:
    """Live processes running as a sandbox's private uid (grader.sandbox.runner draws them from
    100000-899999): none may outlive its grading."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        uid = int(fields.get("Uid", "0").split()[0])
        if 100000 <= uid < 900000 and not fields.get("State", "").strip().startswith("Z"):
            found.append(int(entry))
    return found
