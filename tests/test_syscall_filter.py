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
import torch
from grader.sandbox.kernel_symbols import library
spans = [[int(x, 16) for x in f[0].split("-")] for f in map(str.split, open("/proc/self/maps"))
         if len(f) >= 6 and f[5] == library() and "x" in f[1]]
code = (min(s[0] for s in spans), max(s[1] for s in spans))
seen = {"installed": syscall_filter.install(libc, code)}
_, madvise, numbers = syscall_filter._ABI[platform.machine()]
page = ctypes.create_string_buffer(3 << 12)
at = (ctypes.addressof(page) + 4095) & ~4095


def errno_of(result):
    return "ok" if result >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")


for advice in (4, 24, 3):               # DONTNEED, DONTNEED_LOCKED; WILLNEED
    seen[f"code {advice}"] = errno_of(libc.madvise(code[0], 4096, advice))
    seen[f"memory {advice}"] = errno_of(libc.madvise(at, 4096, advice))
seen["code and memory 4"] = errno_of(libc.madvise(0, code[0] + 4096, 4))   # over the code: refused, not ENOMEM
for name in ("memfd_create", "ptrace", "io_uring_setup", "process_vm_writev", "process_madvise", "add_key",
             "request_key", "keyctl"):
    seen[name] = errno_of(libc.syscall(numbers[name], 0, 0, 0, 0, 0))
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
    assert seen["code 4"] == seen["code 24"] == seen["code and memory 4"] == "EPERM", seen
    assert seen["code 3"] == "ok", seen                             # other advice on the code runs
    assert seen["memory 4"] == seen["memory 3"] == "ok", seen       # the rest of the memory is as ever
    assert seen["memory 24"] in ("ok", "EINVAL"), seen              # (DONTNEED_LOCKED on memory not locked)
    for name in ("memfd_create", "ptrace", "io_uring_setup", "process_vm_writev", "process_madvise", "add_key",
                 "request_key", "keyctl"):
        assert seen[name] == "EPERM", (name, seen)
    assert seen["torch"] == 1.0 and seen["fork"] == 7, seen


def _verdict(program, arch: int, nr: int, args: tuple[int, ...] = ()) -> int:
    """What the classic BPF `program` returns for a system call (the instructions it uses only)."""
    words = [nr, arch, 0, 0] + [half for a in (list(args) + [0] * 6)[:6] for half in (a & 0xFFFFFFFF, a >> 32)]
    pc, acc, x, memory = 0, 0, 0, [0] * 16
    while True:
        code, jt, jf, k = program[pc]
        pc += 1
        if code == 0x06:
            return k
        if code == 0x20:
            acc = words[k // 4]
        elif code == 0x60:
            acc = memory[k]
        elif code == 0x61:
            x = memory[k]
        elif code == 0x02:
            memory[k] = acc
        elif code == 0x07:
            x = acc
        elif code in (0x0C, 0x04):
            acc = (acc + (x if code == 0x0C else k)) & 0xFFFFFFFF
        elif code == 0x05:
            pc += k
        else:
            other = x if code == 0x3D else k
            taken = {0x15: acc == other, 0x25: acc > other, 0x35: acc >= other, 0x3D: acc >= other,
                     0x45: bool(acc & other)}[code]
            pc += jt if taken else jf


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
@pytest.mark.parametrize("code", [None, (0x7F12_3456_7000, 0x7F12_6000_0000), (0xFFFF_F000, 0x1_0000_3000)],
                         ids=["everywhere", "libtorch", "across-32-bits"])
def test_the_program_refuses_exactly_what_it_lists(machine, code):
    program = syscall_filter.program(machine, code)
    arch, madvise, numbers = syscall_filter._ABI[machine]
    allow, refuse = syscall_filter._RET_ALLOW, syscall_filter._RET_EPERM
    for nr in numbers.values():
        assert _verdict(program, arch, nr) == refuse
    for nr in set(range(0, 470)) - set(numbers.values()) - {madvise}:
        assert _verdict(program, arch, nr) == allow, nr
    assert _verdict(program, arch, 0x40000000 | madvise) == refuse       # x32
    assert _verdict(program, 0x40000003, madvise, (0, 0, 4)) == refuse   # i386 (int 0x80)
    start, end = code or (0, 1 << 64)
    spans = [(start, 4096), (end - 4096, 4096), (start - 4096, 4096), (end, 4096), (start - 8192, 8192),
             (start - 8192, 8193), (end - 1, 1), (0, start), (0, start + 1), (end, 1 << 40), (0, 1 << 63),
             ((1 << 32) - 4096, 8192), (start + 100, 0), (start - 5, 5)]
    for addr, length in spans:
        if addr < 0 or addr + length >= 1 << 64:
            continue
        meets = code is None or (addr < end and addr + length > start)
        for advice in (4, 9, 24):
            assert _verdict(program, arch, madvise, (addr, length, advice)) == (refuse if meets else allow), \
                (hex(addr), hex(length), advice)
        for advice in (0, 1, 2, 3, 8, 14, 25):
            assert _verdict(program, arch, madvise, (addr, length, advice)) == allow
    assert syscall_filter.program("riscv64") is None


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_a_child_that_may_start_no_process_still_starts_threads(machine):
    """A timing child (processes=False): fork, vfork and a clone of a process are refused; a clone of a
    thread runs; clone3, whose flags a filter cannot read, says ENOSYS (glibc then clones); the rest
    is as in every child. A red team's timed function had a forked helper compute its answers."""
    program = syscall_filter.program(machine, None, processes=False)
    arch, madvise, numbers = syscall_filter._ABI[machine]
    clone, clone3, forks = syscall_filter._PROCESSES[machine]
    allow, refuse = syscall_filter._RET_ALLOW, syscall_filter._RET_EPERM
    thread = 0x3D0F00                       # CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|PARENT_SETTID|...
    assert _verdict(program, arch, clone, (thread,)) == allow
    assert _verdict(program, arch, clone, (0x01200011,)) == refuse        # fork's: CHILD_SETTID|CHILD_CLEARTID|SIGCHLD
    assert _verdict(program, arch, clone3) == syscall_filter._RET_ENOSYS
    for nr in forks:
        assert _verdict(program, arch, nr) == refuse
    others = set(range(0, 470)) - set(numbers.values()) - {madvise, clone, clone3, *forks}
    assert all(_verdict(program, arch, nr) == allow for nr in others)
    assert syscall_filter.program(machine, None) == syscall_filter.program(machine, None, processes=True)


NO_PROCESSES = """
import ctypes, json, os, subprocess, threading
from grader.sandbox import syscall_filter
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(38, 1, 0, 0, 0)                                  # PR_SET_NO_NEW_PRIVS
seen = {"installed": syscall_filter.install(libc, None, processes=False)}
import torch
torch.set_num_threads(2)
x = torch.randn(512, 512)
seen["torch"] = float((x @ x).abs().sum() > 0)
ran = []
t = threading.Thread(target=ran.append, args=(1,))
t.start()
t.join()
seen["thread"] = ran
for name, start in (("fork", os.fork), ("subprocess", lambda: subprocess.run(["true"]))):
    try:
        if start() == 0:
            os._exit(0)
        seen[name] = "ran"
    except OSError as e:
        seen[name] = e.errno
print(json.dumps(seen))
"""


@KNOWN
def test_in_a_child_that_may_start_no_process_fork_fails_and_threads_and_torch_run():
    proc = subprocess.run([sys.executable, "-c", NO_PROCESSES], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.splitlines()[-1])
    assert seen == {"installed": True, "torch": 1.0, "thread": [1], "fork": 1, "subprocess": 1}, seen
