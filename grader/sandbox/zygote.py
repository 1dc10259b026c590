"""A warm parent for sandboxed children: imports torch once, then forks one child per request.

Started by the grader with a Unix socket whose fd number it is given. Each request carries a JSON setup and two
file descriptors (the child's data socket and the write end of its output pipe); the zygote
answers with the child's pid and goes back to waiting. Its own torch work is on tensors of one
element or none (_warm), so no thread pool exists at fork time (forking after OpenMP has started
can hang).

The child that serves a request is forked before the request arrives: a spare, forked as soon as
the previous one was handed its request, waits for the next one (forking a process that holds
torch costs ~5 ms, now spent while the previous child runs). A spare is forked from the zygote as
it was after its imports, like every child before: the zygote does not even parse the requests it
passes on (the spare does), so no setup of an earlier exercise is in its memory. The spare does
nothing before its request: confinement starts when the request is in (grader.sandbox.child).

One message is the zygote's own: the grader's tripwire targets, sent once as the sandbox starts (a
message without file descriptors). The zygote makes every one of their wrappers then, and a child
only puts its own exercise's in place (grader.sandbox.tripwires.prepare); the spare forked before
them is replaced. They are the grader's data, the same for every child.
"""
from __future__ import annotations

import ctypes
import gc
import json
import os
import signal
import socket
import struct
import sys
import time
import traceback
from typing import NoReturn

import numpy  # noqa: F401  (warm)
import torch
import torch.nn.functional  # noqa: F401

from grader.sandbox import child, processes, tripwires, wire  # noqa: F401  (child: warm)
from grader.sandbox.kernel_symbols import library
from grader.sandbox.zygote_pages import collapse_next, collapsible, drop_code_entries, seal_code

MAX_REQUEST = 1 << 20
PR_SET_PDEATHSIG = 1
PR_SET_THP_DISABLE = 41
_WAKE: list[int] = []       # (read end, write end) of the pipe a child's end wakes the loop through
END_WAIT_S = 2.0            # at its end, how long the zygote waits for the children it killed to be gone


def _reap() -> None:
    """Collect every ended child: the children, the spares, and what they started that outlived its
    parent (ours too: the zygote is their subreaper, see main)."""
    while True:
        try:
            os.read(_WAKE[0], 4096)
        except BlockingIOError:
            break
    _collect()


def _collect() -> bool:
    """Collect every child that has ended; whether none is left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            return False


def _end(status: int) -> NoReturn:
    """The zygote's last act, however its loop ends (the grader closed its end of the control socket,
    or ended): every child still here, the spare above all, killed and collected, then the zygote
    exits at once (os._exit: nothing of the interpreter's teardown is needed). Left to die of their
    PDEATHSIG as the zygote goes, they would be orphans whose zombies pid 1 must collect, one for
    every sandbox that ended, and forever where pid 1 does not collect (a container's grader)."""
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children") as f:      # ours, the adopted orphans too
            children = [int(pid) for pid in f.read().split()]
    except OSError:
        children = []
    for pid in children:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + END_WAIT_S
    while not _collect() and time.monotonic() < deadline:     # past it, one that will not end (stuck in
        time.sleep(0.001)                                      # the kernel) is left to pid 1, as before
    os._exit(status)


def _warm() -> None:
    """First-call costs every child would pay again, paid once here:
    - torch.manual_seed's first call (~1 ms: it looks up the other devices' generators);
    - the first tensor operation's: torch detects the CPU (cpuinfo), through `cpuid` instructions,
      each one trapped by the hypervisor on a virtual machine (a child's first operation: 0.79 ms,
      0.31 ms once the zygote has made one). An empty tensor's: no OpenMP team starts for it;
    - the first operation under the forbidden-operator net (a dispatch mode: tripwires.AtenWatch), and
      the first reply through the wire, encoded and decoded (~0.1 ms each).

    Then the zygote's objects are moved out of the collector's sight (gc.freeze), so a child's
    collections do not write to, and so copy, the pages it shares with the zygote, and the collector,
    off while the zygote imported (launch.py: a full collection during torch's import walks every
    object made so far, none of them garbage), is on again for the children. No collection first:
    after importing torch it takes 0.11 s, before the first child can start, to free some 40 objects."""
    torch.manual_seed(0)
    torch.empty(0).add_(1)
    with tripwires.AtenWatch([], tripwires.Hits()):
        torch.empty(0).add_(1)
    wire.loads(wire.dumps({"ok": True, "value": [torch.zeros(1), torch.zeros(1, dtype=torch.int64), 1.5, "a", None]}))
    gc.freeze()
    gc.enable()


def _wake_on_child_end() -> None:
    """Make a child's end wake the loop (SIGCHLD, through Python's wakeup fd: a byte in _WAKE's
    pipe), so that it is collected at once rather than at the loop's next timeout."""
    _WAKE[:] = os.pipe()
    for fd in _WAKE:
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(_WAKE[1], warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.siginterrupt(signal.SIGCHLD, False)     # a system call it lands in goes on (SA_RESTART)


def _end_on_term() -> None:
    """Make SIGTERM end the zygote as the close of its control socket does (_end), wherever its loop is.
    Until this is in place, before its first fork, SIGTERM kills it outright: it has no child to end
    (grader.sandbox.launch.end)."""
    signal.signal(signal.SIGTERM, lambda *_: _end(0))


def _forget_wake() -> None:
    """In a spare: none of that. A child starts with SIGCHLD and SIGTERM as the zygote found them, and
    no pipe of its."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    for fd in _WAKE:
        os.close(fd)
    _WAKE.clear()


def _spare(control: socket.socket) -> tuple[int, socket.socket]:
    """Fork the child that will serve the next request; (its pid, the socket to hand it the request)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        control.close()
        ours.close()
        _forget_wake()
        libc = ctypes.CDLL(None)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)     # dies with the zygote
        libc.prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)               # no huge page of its own (zygote_pages)
        _serve_one(theirs)
    theirs.close()
    return pid, ours


def _serve_one(channel: socket.socket) -> None:
    """In the spare: wait for the request, then become its child. Never returns."""
    try:
        msg, fds, _, _ = socket.recv_fds(channel, MAX_REQUEST, 2)
        channel.close()
        if not msg or len(fds) != 2:
            os._exit(0)             # the zygote ended (or shut down): no request is coming
        (n,) = struct.unpack(">I", msg[:4])
        setup = json.loads(msg[4:4 + n])
    except BaseException:
        os._exit(3)
    child.main(fds[0], fds[1], setup)


def main(control_fd: int) -> None:
    # No PR_SET_PDEATHSIG here: it fires when the *thread* that started us ends, and the grader
    # may start the sandbox from a worker thread. The grader's death closes the control socket
    # instead, and we exit on that, once we have killed and collected our children (_end); their
    # PDEATHSIG is the net for one we could not (a spare's is set as it is forked, a child's again
    # once it has its private uid, which clears it).
    control = socket.socket(fileno=control_fd)
    _end_on_term()
    # What a child starts and leaves as an orphan (a helper whose parent has exited, say) becomes ours,
    # not pid 1's: we collect it once it is killed (_reap, each time round the loop below). Where pid 1
    # never reaps (the grader itself as a container's pid 1), it would otherwise stay a zombie for the
    # machine's life, one pid each, until no process could start. Not inherited by our children.
    processes.adopt_orphans()
    _wake_on_child_end()
    os.environ.pop("GLIBC_TUNABLES", None)     # set for this process's malloc only (grader.sandbox.launch)
    _warm()
    drop_code_entries()
    seal_code(library())
    spare = _spare(control)
    try:
        _serve(control, spare)
    except BaseException:
        traceback.print_exc()       # the grader's stderr, as an uncaught error would
        _end(1)
    _end(0)


def _serve(control: socket.socket, spare: tuple[int, socket.socket] | None) -> None:
    """Hand each request to a spare, until the grader closes its end of the control socket."""
    try:
        sys.stdout.write("ready\n")
        sys.stdout.flush()
    except OSError:         # the grader ended before we were ready (one launched early, unused): quietly
        return
    pending = collapsible()
    while True:
        if spare is None:
            spare = _spare(control)
        r = processes.readable([control.fileno(), _WAKE[0]], 0 if pending else 1.0)
        _reap()
        if control.fileno() not in r:
            if pending:
                collapse_next(pending)
            continue
        try:
            msg, fds, _, _ = socket.recv_fds(control, MAX_REQUEST, 4)
        except OSError:
            return
        if not msg:
            return
        if not fds:         # no request: the grader's tripwire targets (Sandbox.start), before its first
            _prepare(msg)
            spare[1].close()            # the spare forked before them sees no request coming, and exits
            spare = None
            continue
        pid = _hand_over(spare, control, msg, fds)
        spare = None
        for fd in fds:
            os.close(fd)
        del msg, fds                # the next spare is forked without them
        control.sendall(struct.pack(">I", pid))


def _prepare(msg: bytes) -> None:
    """The tripwires of every exercise the grader may grade, made here once (grader.sandbox.tripwires
    .prepare), and moved out of the collector's sight like the rest (_warm). The grader's data, not a
    student's: a list of (rule, dotted target) pairs of its catalog."""
    try:
        (n,) = struct.unpack(">I", msg[:4])
        tripwires.prepare([(str(rule), str(dotted)) for rule, dotted in json.loads(msg[4:4 + n])["tripwires"]])
    except Exception:           # malformed: each child makes its own, as before
        pass
    gc.freeze()


def _hand_over(spare: tuple[int, socket.socket], control: socket.socket, msg: bytes, fds: list[int]) -> int:
    """Give the request to the spare (to a fresh one if it died waiting: killed from outside);
    returns the pid of the child now serving it."""
    for attempt in range(2):
        pid, channel = spare if attempt == 0 else _spare(control)
        try:
            socket.send_fds(channel, [msg], fds)
            return pid
        except OSError:
            continue
        finally:
            channel.close()
    raise OSError("no child could be started")
