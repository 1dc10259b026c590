"""The child's system-call filter (seccomp): what would let a submission run a forbidden kernel
uncounted by the native watch (grader.sandbox.native_watch), or reach past its child, is refused
with EPERM.

The watch counts a kernel through the breakpoint a uprobe writes into a private copy of the page
that holds the kernel's entry, in each process's memory (grader.sandbox.breakpoints). A process
that drops that page reads it again from the library's file, without the breakpoint: that is
refused here, as are the other ways a process can change code the kernel watches in itself or in a
helper it started:

- madvise with MADV_DONTNEED, MADV_DONTNEED_LOCKED or MADV_REMOVE over any part of libtorch's code
  (the page dropped); on the rest of the memory these run as ever (glibc's malloc gives memory back
  with them). Where the code's place is not known, they are refused everywhere: glibc ignores the
  refusal and gives memory back less often, which the child's limit counts all the same;
- process_madvise, io_uring (which runs madvise on a kernel thread, outside this filter);
- ptrace (a helper's code written through PTRACE_POKETEXT), process_vm_writev;
- memfd_create: the only room a copy of libtorch (430 MB; another file, which no uprobe watches)
  would fit in, the working folder and /dev/shm being smaller;
- the kernel's keyrings (add_key, request_key, keyctl): they are not the sandbox's to isolate. A key
  outlives every process and the grader (until the machine restarts), and a named keyring is found
  from any uid: a red team's hidden case posted its inputs there and a public case read them out into
  its feedback, in the same run and in later ones;
- every system call of another ABI (i386's int 0x80, x32), whose numbers this filter does not know;
- where the child may start no process (`processes=False`: a timing child, grader.timing.harness),
  fork, vfork and a clone without CLONE_THREAD; clone3, whose flags a filter cannot read, says
  ENOSYS, and glibc's pthread_create falls back to clone: threads start as ever. A red team's
  timed function had a forked helper compute its answers, whose CPU no guard of the timing counts.

The rest is refused elsewhere: mprotect, mremap, munmap and a mapping made over libtorch's code by
its seal (grader.sandbox.zygote_pages.seal_code), writes through /proc/self/mem by Landlock.
"""
from __future__ import annotations

import ctypes
import errno
import os
import struct

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
_RET_ALLOW, _RET_EPERM, _RET_ENOSYS = 0x7FFF0000, 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
# classic BPF: loads, stores, arithmetic, jumps (forward only), returns
_LD_ABS, _LD_MEM, _LDX_MEM, _ST, _TAX = 0x20, 0x60, 0x61, 0x02, 0x07
_ADD_X, _ADD_K, _JA, _JEQ, _JGT, _JGE, _JGE_X, _JSET, _RET = 0x0C, 0x04, 0x05, 0x15, 0x25, 0x35, 0x3D, 0x45, 0x06
# struct seccomp_data: nr, arch, then args[6] as 64-bit words, each read as its low and high halves
_NR, _ARCH = 0, 4
_ADDR, _LEN, _ADVICE = (16, 20), (24, 28), 32
MADV_DONTNEED, MADV_REMOVE, MADV_DONTNEED_LOCKED = 4, 9, 24
# (AUDIT_ARCH, madvise, refused system calls) per machine
_ABI = {
    "x86_64": (0xC000003E, 28, {"process_madvise": 440, "io_uring_setup": 425, "io_uring_enter": 426,
                                "io_uring_register": 427, "ptrace": 101, "process_vm_writev": 311,
                                "memfd_create": 319, "add_key": 248, "request_key": 249, "keyctl": 250}),
    "aarch64": (0xC00000B7, 233, {"process_madvise": 440, "io_uring_setup": 425, "io_uring_enter": 426,
                                  "io_uring_register": 427, "ptrace": 117, "process_vm_writev": 271,
                                  "memfd_create": 279, "add_key": 217, "request_key": 218, "keyctl": 219}),
}
_X32 = 0x40000000       # x86_64's x32 system calls: the number with this bit set
# (clone, clone3, fork and vfork where the machine has them) per machine; clone's flags are its first argument
_PROCESSES = {"x86_64": (56, 435, (57, 58)), "aarch64": (220, 435, ())}
_FLAGS, CLONE_THREAD = 16, 0x00010000
Instruction = tuple[int, int, int, int]         # (code, jump if true, jump if false, k)


def program(machine: str, code: tuple[int, int] | None = None, processes: bool = True) -> list[Instruction] | None:
    """The filter as BPF instructions; None for a machine whose numbers are not known here. `code`:
    [start, end) of libtorch's code, the only memory a dropping madvise is refused on; None: refused
    on all memory. `processes`: whether a process may be started (threads always may)."""
    if machine not in _ABI:
        return None
    arch, madvise, refused = _ABI[machine]
    # (code, k, label if true, label if false) or a label; a label 0 is the next instruction
    text: list = [(_LD_ABS, _ARCH, 0, 0), (_JEQ, arch, 0, "refuse"), (_LD_ABS, _NR, 0, 0),
                  (_JGE, _X32, "refuse", 0)]
    text += [(_JEQ, n, "refuse", 0) for n in sorted(refused.values())]
    if not processes:
        clone, clone3, forks = _PROCESSES[machine]
        text += [(_JEQ, n, "refuse", 0) for n in forks]
        text += [(_JEQ, clone3, "no_clone3", 0), (_JEQ, clone, 0, "not_clone"), (_LD_ABS, _FLAGS, 0, 0),
                 (_JSET, CLONE_THREAD, "allow", "refuse"), "no_clone3", (_RET, _RET_ENOSYS, 0, 0), "not_clone",
                 (_LD_ABS, _NR, 0, 0)]
    text += [(_JEQ, madvise, 0, "allow"), (_LD_ABS, _ADVICE, 0, 0), (_JEQ, MADV_DONTNEED, "dropping", 0),
             (_JEQ, MADV_REMOVE, "dropping", 0), (_JEQ, MADV_DONTNEED_LOCKED, "dropping", "allow"), "dropping"]
    text += _overlaps(*code) if code is not None else [(_JA, "refuse", 0, 0)]
    text += ["allow", (_RET, _RET_ALLOW, 0, 0), "refuse", (_RET, _RET_EPERM, 0, 0)]
    return _assemble(text)


def _overlaps(start: int, end: int) -> list:
    """Jump to "refuse" where [addr, addr + len) of the call meets [start, end), else to "allow":
    addr < end and addr + len > start, in 64 bits, from 32-bit halves (the sum's carry included)."""
    high, low = (lambda v: v >> 32), (lambda v: v & 0xFFFFFFFF)
    return [
        # addr + len: its low half in M[1], its high half in M[2]
        (_LD_ABS, _ADDR[0], 0, 0), (_TAX, 0, 0, 0), (_LD_ABS, _LEN[0], 0, 0), (_ADD_X, 0, 0, 0), (_ST, 1, 0, 0),
        (_JGE_X, 0, "no carry", 0), (_LD_ABS, _ADDR[1], 0, 0), (_ADD_K, 1, 0, 0), (_JA, "sum", 0, 0),
        "no carry", (_LD_ABS, _ADDR[1], 0, 0),
        "sum", (_TAX, 0, 0, 0), (_LD_ABS, _LEN[1], 0, 0), (_ADD_X, 0, 0, 0), (_ST, 2, 0, 0),
        # addr < end
        (_LD_ABS, _ADDR[1], 0, 0), (_JGT, high(end), "allow", 0), (_JEQ, high(end), 0, "end met"),
        (_LD_ABS, _ADDR[0], 0, 0), (_JGE, low(end), "allow", 0),
        # addr + len > start
        "end met", (_LD_MEM, 2, 0, 0), (_JGT, high(start), "refuse", 0), (_JEQ, high(start), 0, "allow"),
        (_LD_MEM, 1, 0, 0), (_JGT, low(start), "refuse", "allow"),
    ]


def _assemble(text: list) -> list[Instruction]:
    """Labels resolved to jumps (forward only, as the kernel requires): (code, jt, jf, k) each."""
    where, n = {}, 0
    for item in text:
        if isinstance(item, str):
            where[item] = n
        else:
            n += 1
    out: list[Instruction] = []
    for item in text:
        if isinstance(item, str):
            continue
        code, k, jt, jf = item
        at = len(out)
        if code == _JA:                         # an unconditional jump's offset is its k
            out.append((code, 0, 0, where[k] - at - 1))
            continue
        jt, jf = ((where[j] - at - 1) if isinstance(j, str) else 0 for j in (jt, jf))
        assert min(jt, jf) >= 0 and max(jt, jf) < 256, (item, jt, jf)
        out.append((code, jt, jf, k))
    return out


def install(libc, code: tuple[int, int] | None = None, processes: bool = True) -> bool:
    """Install the filter on this thread and whatever it starts (after PR_SET_NO_NEW_PRIVS): False
    where this machine's numbers are not known or the kernel refuses. `code`, `processes`: as for
    `program`."""
    instructions = program(os.uname().machine, code, processes)
    if instructions is None:
        return False
    buffer = ctypes.create_string_buffer(b"".join(struct.pack("=HBBI", *i) for i in instructions))
    fprog = ctypes.create_string_buffer(struct.pack("@HP", len(instructions), ctypes.addressof(buffer)))
    return libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fprog, 0, 0) == 0
