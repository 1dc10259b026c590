"""Starting the sandbox's zygote (grader.sandbox.zygote), and starting it early.

`launch(threads)` starts the zygote process and returns it with the parent's end of its control
socket, without waiting for it: it imports torch, which takes as long as the grader's own import
of torch. So a front-end about to grade calls `early(threads)` before it imports the catalog
(and torch): the first Sandbox.start() of this process with that thread count takes the zygote
(`take`), its torch import done beside the grader's instead of after it. Nothing here imports
torch.

`end(zygote, control)` ends one zygote and collects it (Sandbox.shutdown), and this process ends every
zygote it launched that is still running as it exits (an atexit handler: the early one a command
never took, a sandbox never shut down). Left to end after this process, each would be an orphan
whose zombie pid 1 must collect, and one launched early would go on importing torch for a second.
"""
from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import threading

from grader.sandbox import provision

END_S = 3.0     # the zygote's own wait for its children at its end (zygote.END_WAIT_S), and a margin

_early: dict[int, tuple[int, subprocess.Popen, socket.socket]] = {}    # threads -> (launching pid, zygote)
_running: dict[int, tuple[int, subprocess.Popen, socket.socket]] = {}  # zygote pid -> (launching pid, zygote)
_lock = threading.RLock()        # early() holds it while launch() takes it


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
    with _lock:
        _running[zygote.pid] = (os.getpid(), zygote, parent)
    return zygote, parent


def end(zygote: subprocess.Popen, control: socket.socket) -> None:
    """End a zygote this process launched, and collect it. Told to end (SIGTERM) with its control
    socket closed, a zygote that has forked kills and collects its children, the spare among them,
    then exits (grader.sandbox.zygote._end); one that has not (launched early, never taken, still
    importing torch) dies of the signal at once rather than import on. It is killed only if it has
    not ended within END_S. Nothing here stops it or waits on it half-done: this process may die at
    any point of an end (killed, its worker torn down) without leaving a zygote that cannot end."""
    with _lock:
        _running.pop(zygote.pid, None)
    control.close()
    if zygote.poll() is None:
        zygote.terminate()      # ours, not collected: its pid cannot be another's
    try:
        zygote.wait(END_S)
    except subprocess.TimeoutExpired:
        zygote.kill()
        zygote.wait()
    zygote.stdout.close()


def end_all() -> None:
    """End every zygote this process launched that runs still (at this process's exit). A forked
    process's copies of its parent's are left alone: they are its parent's to end."""
    with _lock:
        ours = [(zygote, control) for pid, zygote, control in _running.values() if pid == os.getpid()]
        _early.clear()
    for zygote, control in ours:
        end(zygote, control)


atexit.register(end_all)


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
    if pid != os.getpid():      # a forked worker's copy is its parent's, not its own
        return None
    if zygote.poll() is not None:
        end(zygote, control)
        return None
    return zygote, control
