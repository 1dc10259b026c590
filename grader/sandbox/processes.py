"""Waiting for a sandboxed process to end, woken by the kernel rather than by a polling sleep; and
adopting the orphans of one's descendants (`adopt_orphans`).

A pidfd (Linux 5.3, os.pidfd_open) becomes readable the moment its process exits (a zombie
has exited), so a teardown waits exactly as long as the child takes to die; the 10 ms polling
sleep it replaces cost every child's teardown about 10 ms. Any process can be waited on this
way, not only one's own children (the sandbox's are the zygote's).
"""
from __future__ import annotations

import ctypes
import os
import select
import time

PR_SET_CHILD_SUBREAPER = 36


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pid: int, seconds: float) -> None:
    """Return once `pid` has ended or `seconds` have passed (where the kernel has no pidfd,
    alive() is polled every millisecond)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (OSError, AttributeError):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and alive(pid):
            time.sleep(0.001)
        return
    try:
        readable([fd], seconds)
    finally:
        os.close(fd)


def readable(fds: list[int], seconds: float | None) -> list[int]:
    """Those of `fds` that are readable (or closed at the other end) within `seconds` (None: until one
    is). poll, not select: select takes no descriptor numbered past 1023, and a grading process holds
    one for each kernel counter it opened (hundreds a slot)."""
    watch = select.poll()
    for fd in fds:
        watch.register(fd, select.POLLIN)
    return [fd for fd, _ in watch.poll(None if seconds is None else max(seconds, 0.0) * 1000)]


def adopt_orphans() -> None:
    """Make this process the subreaper of its descendants: one whose parent ends comes to this
    process, not to the machine's pid 1, and is this process's to collect (its children do not
    inherit the setting)."""
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
