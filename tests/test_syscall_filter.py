"""The child's system-call filter (grader.sandbox.syscall_filter): what would let a submission run a
forbidden kernel uncounted is refused with EPERM, and what correct code does still runs. Each check
runs in a new Python process, which the filter then holds for its life."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest
from conftest import ROOT

from grader.sandbox import syscall_filter

KNOWN = pytest.mark.skipif(syscall_filter.program(platform.machine()) is None,
                           reason=f"no system-call numbers for {platform.machine()}")


CHECKS = """
import ctypes, errno, json, os, platform
from grader.sandbox import syscall_filter

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.prctl(38, 1, 0, 0, 0)                                  # PR_SET_NO_NEW_PRIVS
seen = {"installed": syscall_filter.install(libc)}
_, madvise, numbers = syscall_filter._ABI[platform.machine()]
page = ctypes.create_string_buffer(3 << 12)
at = (ctypes.addressof(page) + 4095) & ~4095


def errno_of(result):
    return "ok" if result >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")


for advice in (4, 9, 24, 3, 14):        # DONTNEED, REMOVE, DONTNEED_LOCKED; WILLNEED, HUGEPAGE
    seen[f"madvise {advice}"] = errno_of(libc.madvise(at, 4096, advice))
for name in ("memfd_create", "ptrace", "io_uring_setup", "process_vm_writev", "process_madvise"):
    seen[name] = errno_of(libc.syscall(numbers[name], 0, 0, 0, 0, 0))
import torch
blocks = [torch.randn(1 << 20) for _ in range(64)]          # 256 MB, then freed
seen["torch"] = float(sum(b.sum() for b in blocks).abs() > 0)
del blocks
helper = os.fork()
if helper == 0:
    os._exit(7)
seen["fork"] = os.waitstatus_to_exitcode(os.waitpid(helper, 0)[1])
print(json.dumps(seen))
"""


def _in_filtered_child() -> dict:
    """Run the checks in a new Python with the filter installed (a fork of this one could hang in
    torch's thread pool): what each returned."""
    proc = subprocess.run([sys.executable, "-c", CHECKS], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


@KNOWN
def test_what_would_undo_the_kernels_count_is_refused_and_the_rest_runs():
    seen = _in_filtered_child()
    assert seen.pop("installed") is True
    assert {k: seen[k] for k in ("madvise 4", "madvise 9", "madvise 24")} == dict.fromkeys(
        ("madvise 4", "madvise 9", "madvise 24"), "EPERM")
    assert seen["madvise 3"] == seen["madvise 14"] == "ok", seen     # other advice still runs
    for name in ("memfd_create", "ptrace", "io_uring_setup", "process_vm_writev", "process_madvise"):
        assert seen[name] == "EPERM", (name, seen)
    assert seen["torch"] == 1.0 and seen["fork"] == 7, seen


def _verdict(program, arch: int, nr: int, advice: int = 0) -> int:
    """What the classic BPF `program` returns for a system call (the instructions it uses only)."""
    data = {0: nr, 4: arch, 32: advice}
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        if code == 0x06:
            return k
        if code == 0x20:
            acc, pc = data[k], pc + 1
        else:
            taken = acc == k if code == 0x15 else acc >= k
            pc += 1 + (jt if taken else jf)


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_program_refuses_exactly_what_it_lists(machine):
    program = syscall_filter.program(machine)
    arch, madvise, numbers = syscall_filter._ABI[machine]
    allow, refuse = syscall_filter._RET_ALLOW, syscall_filter._RET_EPERM
    for nr in numbers.values():
        assert _verdict(program, arch, nr) == refuse
    for advice in (4, 9, 24):
        assert _verdict(program, arch, madvise, advice) == refuse
    for advice in (0, 1, 2, 3, 8, 14, 25):
        assert _verdict(program, arch, madvise, advice) == allow
    for nr in set(range(0, 470)) - set(numbers.values()) - {madvise}:
        assert _verdict(program, arch, nr) == allow, nr
    assert _verdict(program, arch, 0x40000000 | madvise) == refuse       # x32
    assert _verdict(program, 0x40000003, madvise, 4) == refuse           # i386 (int 0x80)
    assert syscall_filter.program("riscv64") is None
