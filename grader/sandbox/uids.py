"""Private uids: as root, each confined child runs as a uid of its own, no other child's while it lives.

The uid is what keeps a child's processes and files apart from every other child's, and what its
teardown kills by. Two children given the same uid at once could signal each other, and the first
to end would kill the other's processes with its own: a student's correct exercise would crash.
So a uid, drawn at random from a range no account uses, is reserved on this machine until its
child's teardown is over: the grading process binds an abstract Unix socket named after it. The
kernel lets one socket hold a name at a time, in every process of the grader's network namespace
(other batch workers, a student's `grader check` beside them, a second exercise of the same
submission), and frees it when the socket closes, however its process ends. The children, in
network namespaces of their own, can neither see nor take these names.

At the end, every process of the uid is killed in one kill(-1) sent as that uid: the kernel sends
it to every process whose real or saved uid it is (they cannot change it) and to no other, so no
sweep of /proc is needed. The calling thread takes the uid for that one call with setresuid(2)
made as a raw system call, which changes the calling thread's credentials only: glibc's wrapper,
like Python's os.setresuid, changes every thread's, and the grader's other threads must keep
theirs. The saved uid 0 lets the thread take root back. Where it cannot (an architecture whose
system call number is not listed below, or a grader not root in all three of its uids), the
processes are found in /proc instead.
"""
from __future__ import annotations

import ctypes
import functools
import os
import platform
import secrets
import signal
import socket
import time

from grader.sandbox import processes

FIRST, COUNT = 100_000, 800_000     # the private uids: [FIRST, FIRST + COUNT)
TRIES = 64
# setresuid's system call number, by architecture
_SETRESUID = {"x86_64": 117, "aarch64": 147, "riscv64": 147}


class PrivateUid:
    """A uid reserved for one child until end()."""

    def __init__(self, uid: int, hold: socket.socket) -> None:
        self.uid, self._hold = uid, hold

    def end(self) -> None:
        """Kill every process of the uid, then free it for another child. Once; again does nothing."""
        if self._hold is None:
            return
        kill_all(self.uid)
        self._hold.close()
        self._hold = None


def reserve() -> PrivateUid:
    """A uid no other child on this machine has until its end(). OSError when none could be had."""
    for _ in range(TRIES):
        uid = FIRST + secrets.randbelow(COUNT)
        hold = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)     # never listens: no one can connect
        try:
            hold.bind(b"\0grader-private-uid-%d" % uid)
        except OSError:         # another child's
            hold.close()
            continue
        return PrivateUid(uid, hold)
    raise OSError(f"no private uid could be reserved for the child: {TRIES} drawn, every one taken "
                  f"(abstract Unix socket names 'grader-private-uid-N' held by other processes)")


def kill_all(uid: int) -> None:
    """SIGKILL every process of `uid`, whatever session or process group it is in."""
    if not _kill_as(uid):
        _sweep(uid)


def _kill_as(uid: int) -> bool:
    """One kill(-1) from this thread as `uid`; False where this thread cannot take the uid (not
    root, an unknown architecture): nothing was sent."""
    number = _SETRESUID.get(platform.machine())
    if number is None or os.getresuid() != (0, 0, 0):
        return False
    libc, call, as_uid, root = _libc(), ctypes.c_long(number), ctypes.c_long(uid), ctypes.c_long(0)
    # One try around both calls: an exception between them (a signal's handler, in the main thread)
    # still takes root back; where the thread never left it, the same call changes nothing.
    try:
        if libc.syscall(call, as_uid, as_uid, root) != 0:
            return False
        libc.kill(-1, signal.SIGKILL)   # its result says nothing: 0 whenever any other process exists
    finally:
        if libc.syscall(call, root, root, root) != 0:     # allowed by the saved uid 0: never expected
            os.write(2, b"grader: a thread could not take root back after killing a child's processes\n")
            os._exit(70)
    return True


def _sweep(uid: int) -> None:
    """Kill the processes of `uid` found in /proc, until a pass finds none (three at most)."""
    for _ in range(3):
        found = False
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:        # zombies are dead already: the zygote reaps them, no need to wait
                if os.stat(f"/proc/{entry}").st_uid == uid and processes.alive(int(entry)):
                    os.kill(int(entry), signal.SIGKILL)
                    found = True
            except (OSError, ProcessLookupError):
                continue
        if not found:
            return
        time.sleep(0.01)


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long        # variadic: its arguments are given as c_long
    return libc
