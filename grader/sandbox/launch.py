"""Starting the sandbox's zygote (grader.sandbox.zygote), and starting it early.

`launch(threads)` starts the zygote process and returns it with the parent's end of its control
socket, without waiting for it: it imports torch, which takes as long as the grader's own import
of torch. So a front-end about to grade calls `early(threads)` before it imports the catalog
(and torch): the first Sandbox.start() of this process with that thread count takes the zygote
(`take`), its torch import done beside the grader's instead of after it. Nothing here imports
torch. A zygote launched early and never taken ends with this process: its control socket and
its stdout close, and it exits on either.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

from grader.sandbox import provision

_early: dict[int, tuple[int, subprocess.Popen, socket.socket]] = {}    # threads -> (launching pid, zygote)
_lock = threading.Lock()


def launch(threads: int) -> tuple[subprocess.Popen, socket.socket]:
    """A zygote starting (it prints 'ready' once it can fork), and the parent's end of its control socket."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pkg_root = provision.package_root()
    # glibc's malloc asks for transparent huge pages for its heap (glibc >= 2.35; others ignore it):
    # the ~85 MB that importing torch allocates then takes ~40 page-table entries, not ~21,000, so
    # each fork of a child and each child's exit costs ~5 ms less (benchmarks/sandbox_breakdown.py).
    # The zygote drops the variable once started; its children inherit the heap, and a malloc that
    # still asks for huge pages, which each refuses with PR_SET_THP_DISABLE (grader.sandbox.zygote).
    env = {**provision.child_environment(pkg_root, threads), "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
    # -I ignores PYTHON* variables, PYTHONDONTWRITEBYTECODE included: -B keeps bytecode out of the package
    zygote = subprocess.Popen(
        [sys.executable, "-I", "-B", "-c", "import gc, sys; gc.disable(); sys.path.insert(0, %r); "
         "from grader.sandbox.zygote import main; main(%d)" % (pkg_root, child.fileno())],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, pass_fds=(child.fileno(),), env=env, cwd="/",
        start_new_session=True)     # Ctrl-C at the terminal is the grader's to handle: the zygote ends
                                    # when the grader closes its socket (or ends), not with a traceback
    child.close()
    return zygote, parent


def early(threads: int = 1) -> None:
    """Launch the zygote of this process's next sandbox now (at most one waiting per thread count)."""
    with _lock:
        if threads not in _early:
            _early[threads] = (os.getpid(), *launch(threads))


def take(threads: int) -> tuple[subprocess.Popen, socket.socket] | None:
    """The zygote launched early for `threads`, if this process launched one and it still runs."""
    with _lock:
        got = _early.pop(threads, None)
    if got is None:
        return None
    pid, zygote, control = got
    if pid != os.getpid() or zygote.poll() is not None:    # a forked worker's copy is its parent's, not its own
        if pid == os.getpid():
            control.close()
        return None
    return zygote, control
