"""The keeper of a grading process's kernel counters (grader.sandbox.native_watch).

Closing the last descriptor of a uprobe counter waits for the kernel (an RCU grace period each:
~80 ms on this machine), and a process's exit closes its descriptors one by one: a batch worker
holding 140 counters took 24-38 s to end. So the grading process hands a copy of every counter's
descriptor (SCM_RIGHTS) to its keeper, this small Python started with the first counter (`hand`):
the grading process's own closes and its exit are then never the last, and cost nothing. The
keeper closes its copies, those of a child's own counters at once and the slots' once the grading
process has ended (its end of the socket closes, however it ends, and then its exit closes its own
copies: only once it is gone are the keeper's the last), then removes the slots' folders.

Removals slow down the graders running meanwhile: every fork on the machine waits on them, a
zygote's forks of children included. A full `grader check` started while a keeper closed 206 counters
took 13.6 s, and 4.06 s with that keeper stopped (SIGSTOP). So the keeper closes the slots' counters
only while no other grader runs (no sandbox zygote on the machine), waiting at most PATIENCE seconds
in all, and pauses again between two closes when one starts. And it pauses PAUSE_S after every
close: closed one after another, most closes return at once and the kernel's removals pile up, so
that a grader starting just then (the check between two closes saw none) or one running when the
patience ends is held up for seconds. With 80 counters closed in a row, one fork waited 6.6-6.7 s;
paced, no fork waited more than 0.13 s (benchmarks/counter_closes.py). It imports nothing but the
standard library, and holds nothing of a student's.

    python -I -S keeper.py FD PID
"""
from __future__ import annotations

import os
import queue
import resource
import select
import socket
import subprocess
import sys
import threading
import time

_MOST = 250     # descriptors a message (the kernel passes at most 253)
# seconds a keeper waits in all for other graders to end before it closes anyway
PATIENCE = float(os.environ.get("GRADER_KEEPER_PATIENCE", "60"))
PAUSE_S = 0.01  # after each close, so that the kernel removes each counter before the next is closed
_channels: dict[int, socket.socket] = {}     # grading process -> its end of its keeper's socket
_lock = threading.Lock()


def hand(fds: list[int], folders: tuple[str, ...] = (), close: bool = False) -> bool:
    """Give copies of `fds` to this process's keeper: to close now (`close`), or once this process has
    gone, then to remove `folders`. False where no keeper could be started or reached."""
    with _lock:
        channel = _channels.get(os.getpid())       # a forked grading process starts its own
        if channel is None:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                subprocess.Popen([sys.executable, "-I", "-S", os.path.abspath(__file__), str(theirs.fileno()),
                                  str(os.getpid())],
                                 pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, cwd="/", start_new_session=True)
            except OSError:
                ours.close()
                return False
            finally:
                theirs.close()
            channel = _channels[os.getpid()] = ours
        head = ("close" if close else "\n".join(("keep", *folders))).encode()
        try:
            for i in range(0, len(fds), _MOST):
                socket.send_fds(channel, [head], fds[i:i + _MOST])
        except OSError:
            return False
    return True


def main(fd: int, grader: int) -> None:
    try:
        ended = os.pidfd_open(grader)
    except OSError:         # gone already, or no pidfds: its socket's end is the sign
        ended = None
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    channel, now, kept, folders = socket.socket(fileno=fd), queue.SimpleQueue(), [], set()

    def close_now() -> None:
        for fds in iter(now.get, None):
            for d in fds:
                close(d)
    closer = threading.Thread(target=close_now)
    closer.start()
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(channel, 1 << 16, _MOST)
        except OSError:
            break
        if not message:         # the grading process has gone
            break
        kind, *names = message.decode().split("\n")
        if kind == "close":
            now.put(fds)
        else:
            kept += fds
            folders.update(names)
    now.put(None)
    closer.join()
    if ended is not None:       # its exit is closing its own copies: wait until it has
        select.select([ended], [], [])
    deadline = time.monotonic() + PATIENCE
    for d in kept:
        while time.monotonic() < deadline and graders_running():
            time.sleep(0.2)
        close(d)
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:
            pass


def close(fd: int) -> None:
    """Close one counter, then pause: the kernel's removal of a counter goes on after close returns,
    and a run of closes without a pause queues the removals up where they hold up every fork."""
    os.close(fd)
    time.sleep(PAUSE_S)


def graders_running() -> bool:
    """Whether a grader is running on this machine: a sandbox zygote exists (each grading process has
    one from its start, grader.sandbox.launch, to its end)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if b"grader.sandbox.zygote" in f.read():
                        return True
            except OSError:
                continue
    return False


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
