"""The child's system-call filter (seccomp): what would let a submission run a forbidden kernel
uncounted by the native watch (grader.sandbox.native_watch) is refused with EPERM.

The watch counts a kernel through the breakpoint a uprobe writes into a private copy of the page
that holds the kernel's entry, in each process's memory (grader.sandbox.breakpoints). A process
that drops that page reads it again from the library's file, without the breakpoint: that is
refused here, as are the other ways a process can change code the kernel watches in itself or in a
helper it started:

- madvise with MADV_DONTNEED, MADV_DONTNEED_LOCKED or MADV_REMOVE (the page dropped; the grader's
  own code runs none of these in the child, and glibc's malloc ignores the refusal: it gives memory
  back to the system less often, which the child's limit counts all the same);
- process_madvise, io_uring (which runs madvise on a kernel thread, outside this filter);
- ptrace (a helper's code written through PTRACE_POKETEXT), process_vm_writev;
- memfd_create: the only room a copy of libtorch (430 MB; another file, which no uprobe watches)
  would fit in, the working folder and /dev/shm being smaller;
- every system call of another ABI (i386's int 0x80, x32), whose numbers this filter does not know.

The rest is refused elsewhere: mprotect, mremap, munmap and a mapping made over libtorch's code by
its seal (grader.sandbox.zygote_pages.seal_code), writes through /proc/self/mem by Landlock.
"""
from __future__ import annotations

import ctypes
import errno
import os
import struct

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
_RET_ALLOW, _RET_EPERM = 0x7FFF0000, 0x00050000 | errno.EPERM
_LD_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06       # BPF_LD|W|ABS, JMP|JEQ|K, JMP|JGE|K, RET|K
_NR, _ARCH, _ARG2 = 0, 4, 32                              # offsets in struct seccomp_data (arg 2: its low word)
MADV_DONTNEED, MADV_REMOVE, MADV_DONTNEED_LOCKED = 4, 9, 24
# (AUDIT_ARCH, madvise, refused system calls) per machine
_ABI = {
    "x86_64": (0xC000003E, 28, {"process_madvise": 440, "io_uring_setup": 425, "io_uring_enter": 426,
                                "io_uring_register": 427, "ptrace": 101, "process_vm_writev": 311,
                                "memfd_create": 319}),
    "aarch64": (0xC00000B7, 233, {"process_madvise": 440, "io_uring_setup": 425, "io_uring_enter": 426,
                                  "io_uring_register": 427, "ptrace": 117, "process_vm_writev": 271,
                                  "memfd_create": 279}),
}
_X32 = 0x40000000       # x86_64's x32 system calls: the number with this bit set


def program(machine: str) -> list[tuple[int, int, int, int]] | None:
    """The filter as BPF instructions (code, jump if true, jump if false, k); None for a machine whose
    numbers are not known here."""
    if machine not in _ABI:
        return None
    arch, madvise, refused = _ABI[machine]
    numbers = sorted(refused.values())
    # [0] arch, [1] other ABI -> refuse, [2] nr, [3] x32 -> refuse, [4..] refused numbers, madvise
    body = [(_LD_ABS, 0, 0, _ARCH), (_JEQ, 0, 0, arch), (_LD_ABS, 0, 0, _NR), (_JGE, 0, 0, _X32)]
    body += [(_JEQ, 0, 0, n) for n in numbers]
    body += [(_JEQ, 0, 0, madvise), (_RET, 0, 0, _RET_ALLOW)]
    advice = len(body)
    body += [(_LD_ABS, 0, 0, _ARG2)] + [(_JEQ, 0, 0, a) for a in (MADV_DONTNEED, MADV_REMOVE, MADV_DONTNEED_LOCKED)]
    body += [(_RET, 0, 0, _RET_ALLOW)]
    refuse = len(body)
    body += [(_RET, 0, 0, _RET_EPERM)]

    def to(target: int, at: int) -> int:
        return target - at - 1

    out = []
    for i, (code, jt, jf, k) in enumerate(body):
        if i == 1:                          # not this machine's ABI: refuse
            jt, jf = 0, to(refuse, i)
        elif i == 3 or (code == _JEQ and (i < advice and k != madvise or i > advice)):
            jt, jf = to(refuse, i), 0
        elif code == _JEQ and k == madvise and i < advice:
            jt, jf = to(advice, i), 0
        out.append((code, jt, jf, k))
    return out


def install(libc) -> bool:
    """Install the filter on this thread and whatever it starts (after PR_SET_NO_NEW_PRIVS): False
    where this machine's numbers are not known or the kernel refuses."""
    instructions = program(os.uname().machine)
    if instructions is None:
        return False
    code = b"".join(struct.pack("=HBBI", *i) for i in instructions)
    buffer = ctypes.create_string_buffer(code)
    fprog = ctypes.create_string_buffer(struct.pack("@HP", len(instructions), ctypes.addressof(buffer)))
    return libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fprog, 0, 0) == 0
