"""The keeper of a grading process's kernel counters (grader.sandbox.native_watch).

Closing the last descriptor of a uprobe counter waits for the kernel (an RCU grace period each: ~80 ms on this
machine), and a process's exit closes its descriptors one by one: a batch worker holding 140 counters took 24-38 s to
end. So the grading process hands a copy of every counter's descriptor (SCM_RIGHTS) to its keeper, this small Python
started with the first counter (`hand`): the grading process's own closes and its exit are then never the last, and
cost nothing. The keeper closes its copies, those of a child's own counters at once and the slots' once the grading
process has ended (its end of the socket closes, however it ends, and then its exit closes its own copies: only once
it is gone are the keeper's the last), then removes the slots' folders.

Removals slow down the graders running meanwhile: every fork on the machine waits on them, a zygote's forks of
children included. A full `grader check` started while a keeper closed 206 counters took 13.6 s, and 4.06 s with that
keeper stopped (SIGSTOP). So the keeper closes the slots' counters only while no other grader runs (no sandbox zygote
on the machine), waiting at most PATIENCE seconds in all, and pauses again between two closes when one starts. And it
pauses PAUSE_S after every close: closed one after another, most closes return at once and the kernel's removals pile
up, so that a grader starting just then (the check between two closes saw none) or one running when the patience ends
is held up for seconds. With 80 counters closed in a row, one fork waited 6.6-6.7 s; paced, no fork waited more than
0.13 s (benchmarks/counter_closes.py). It imports nothing but the standard library, and holds nothing of a student's.

Before it closes anything, a keeper offers its slots to the next grader (`offer`, `adopt`): for PATIENCE seconds it
listens on an abstract socket named after the torch library its counters watch, and a grading process of root's that
needs a slot takes over the empty ones, their counters and folders included. A grader checking the course again then
opens no counter, or few (a full check opens ~570 on its own), and none is closed between the two. Only one keeper
offers at a time (the name is bound once); the others wait their turn within the same patience. What no grader took
is then closed as above, with a patience of its own. SIGUSR1 ends the offer and both waits (a benchmark about to
measure, benchmarks/grader_cost.py's settle, which would otherwise wait them out).

    python -I -S keeper.py FD PID
"""
from __future__ import annotations

import json
import os
import queue
import resource
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

_MOST = 250     # descriptors a message (the kernel passes at most 253)
# seconds a keeper waits in all for other graders to end before it closes anyway
PATIENCE = float(os.environ.get("GRADER_KEEPER_PATIENCE", "60"))
PAUSE_S = 0.01  # after each close, so that the kernel removes each counter before the next is closed
SPARES = "nn-grader-watch-spares-"      # + the library's "device:inode": the abstract socket of an offer
OFFER_S = 5.0   # seconds either side of an offer waits for the other's next message
_channels: dict[int, socket.socket] = {}     # grading process -> its end of its keeper's socket
_lock = threading.Lock()


def _readable(fd: int, seconds: float | None) -> bool:     # poll: select() takes no fd past 1023
    (watch := select.poll()).register(fd, select.POLLIN)
    return bool(watch.poll(None if seconds is None else seconds * 1000))


def hand(fds: list[int], counter: dict | None = None, close: bool = False) -> bool:
    """Give copies of `fds` to this process's keeper: to close now (`close`), or once this process has
    gone, then to remove the folders of `counter` (what they count: "folders" of its slot, their
    "inodes", its "cpus", "library" and "offset", which the keeper offers to the next grader). False
    where no keeper could be started or reached."""
    with _lock:
        channel = _channels.get(os.getpid())       # a forked grading process starts its own
        if channel is None:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                subprocess.Popen([sys.executable, "-I", "-S", os.path.abspath(__file__), str(theirs.fileno()),
                                  str(os.getpid())], pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/", start_new_session=True)
            except OSError:
                ours.close()
                return False
            finally:
                theirs.close()
            channel = _channels[os.getpid()] = ours
        head = b"close" if close else b"keep\n" + json.dumps(counter or {}).encode()
        try:
            for i in range(0, len(fds), _MOST):
                socket.send_fds(channel, [head], fds[i:i + _MOST])
        except OSError:
            return False
    return True


def main(fd: int, grader: int) -> None:
    hurry = threading.Event()       # SIGUSR1: close at once, other graders or not
    signal.signal(signal.SIGUSR1, lambda *_: hurry.set())
    try:
        ended = os.pidfd_open(grader)
    except OSError:         # gone already, or no pidfds: its socket's end is the sign
        ended = None
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    channel, now, kept, folders = socket.socket(fileno=fd), queue.SimpleQueue(), [], set()
    spares: dict[tuple[str, ...], dict] = {}    # the slots' folders -> what `offer` hands over

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
        kind, _, meta = message.partition(b"\n")
        if kind == b"close":
            now.put(fds)
            continue
        kept += fds
        counter = json.loads(meta) if meta.strip() else {}
        if counter.get("folders"):
            folders.update(counter["folders"])
            spare = spares.setdefault(tuple(counter["folders"]), {
                "folders": counter["folders"], "inodes": counter["inodes"], "cpus": counter["cpus"],
                "library": counter["library"], "counters": {}})
            spare["counters"].setdefault(counter["offset"], []).extend(fds)
    now.put(None)
    closer.join()
    if ended is not None:       # its exit is closing its own copies: wait until it has
        _readable(ended, None)
    given = offer(list(spares.values()), time.monotonic() + PATIENCE, hurry)
    deadline = time.monotonic() + PATIENCE
    for d in kept:
        if d in given["fds"]:   # the adopter holds them: not the last descriptors, nothing to wait for
            os.close(d)
            continue
        while time.monotonic() < deadline and graders_running() and not hurry.is_set():
            time.sleep(0.2)
        close(d)
    for folder in folders - given["folders"]:
        try:
            os.rmdir(folder)
        except OSError:
            pass


def offer(spares: list[dict], deadline: float, hurry: threading.Event | None = None) -> dict[str, set]:
    """Offer the slots of `spares` (all of one library) until `deadline`, or `hurry` is set, to one
    grading process of root's (`adopt`). What it took: {"fds": its descriptors (ours to close at
    once), "folders": its folders (no longer ours to remove)}."""
    hurry = hurry or threading.Event()
    given: dict[str, set] = {"fds": set(), "folders": set()}
    if not spares:
        return given
    library = spares[0]["library"]
    spares = [s for s in spares if s["library"] == library]
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
    try:
        while True:             # one keeper offers at a time: the others wait for the name
            try:
                listener.bind("\0" + SPARES + library)
                break
            except OSError:
                if time.monotonic() + 0.2 >= deadline or hurry.is_set():
                    return given
                time.sleep(0.2)
        listener.listen(4)
        while (left := deadline - time.monotonic()) > 0 and not hurry.is_set():
            if not _readable(listener.fileno(), min(left, 0.2)):
                continue
            conn, _ = listener.accept()
            with conn:
                taken = _hand_over(conn, spares)
            if taken is not None:
                for s in taken:
                    given["fds"].update(_flat(s))
                    given["folders"].update(s["folders"])
                return given
    finally:
        listener.close()
    return given


def _hand_over(conn: socket.socket, spares: list[dict]) -> list[dict] | None:
    """One adopter: the slots it took, once it has been told they are its own; None where it is not
    root's or the exchange failed (nothing is then given)."""
    try:
        if peer_uid(conn) != 0:
            return None
        conn.settimeout(OFFER_S)
        fds = [d for s in spares for d in _flat(s)]
        parts = [fds[i:i + _MOST] for i in range(0, len(fds), _MOST)]
        manifest = [{**{k: s[k] for k in ("folders", "inodes", "cpus")},
                     "counters": [[off, len(d)] for off, d in s["counters"].items()]} for s in spares]
        conn.sendall(json.dumps({"slots": manifest, "parts": len(parts)}).encode())
        for part in parts:
            socket.send_fds(conn, [b"fds"], part)
        reply = json.loads(conn.recv(1 << 16) or b"{}")
        taken = reply.get("taken") if isinstance(reply, dict) else None
        if not isinstance(taken, list) or not all(type(i) is int and 0 <= i < len(spares) for i in taken):
            return None
        conn.sendall(b"ok")
        return [spares[i] for i in set(taken)]
    except (OSError, ValueError):
        return None


def adopt(library: str, claim, dispose=None) -> list:
    """Take over the slots a finished grader's keeper offers for `library` ("device:inode" of the
    torch library the counters watch), if one does: `claim(spare)` is called for each slot offered
    (a dict of its "folders", their "inodes", its "cpus" and "counters", {offset: descriptors}) and
    returns what stands for it here, or None to leave it. What was claimed is returned once the
    keeper has let go of it; [] otherwise. Descriptors received and not kept are handed to this
    process's own keeper to close, or to `dispose`."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
    received: list[int] = []
    claimed: list = []
    try:
        conn.settimeout(OFFER_S)
        conn.connect("\0" + SPARES + library)
        if peer_uid(conn) != 0:
            return []
        manifest = json.loads(conn.recv(1 << 20))
        for _ in range(int(manifest["parts"])):
            _, fds, _, _ = socket.recv_fds(conn, 16, _MOST)
            received += fds
        spares, at = [], 0
        for s in manifest["slots"]:
            counters = {}
            for off, n in s["counters"]:
                counters[int(off)], at = received[at:at + n], at + n
            spares.append({**s, "counters": counters})
        if at != len(received):
            return []
        taken = []
        for i, spare in enumerate(spares):
            here = claim(spare)
            if here is not None:
                taken.append(i)
                claimed.append((here, spare))
        conn.sendall(json.dumps({"taken": taken}).encode())
        if conn.recv(16) != b"ok":
            claimed = []
        return [here for here, _ in claimed]
    except (OSError, ValueError, KeyError, TypeError):
        claimed = []
        return []
    finally:
        conn.close()
        kept = {d for _, spare in claimed for d in _flat(spare)}
        rest = [d for d in received if d not in kept]
        if rest and dispose is not None:
            dispose(rest)
        elif rest and hand(rest, close=True):
            for d in rest:
                os.close(d)
        elif rest:
            threading.Thread(target=lambda: [os.close(d) for d in rest], daemon=True).start()


def peer_uid(conn: socket.socket) -> int:
    return struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[1]


def _flat(spare: dict) -> list[int]:
    """A slot's counters' descriptors, in the order of its "counters"."""
    return [d for fds in spare["counters"].values() for d in fds]


def close(fd: int) -> None:
    """Close one counter, then pause: the kernel's removal of a counter goes on after close returns,
    and a run of closes without a pause queues the removals up where they hold up every fork."""
    os.close(fd)
    time.sleep(PAUSE_S)


def graders_running() -> bool:
    """Whether a grader is running on this machine: a sandbox zygote exists (each grading process has
    one from its start, grader.sandbox.launch, to its end)."""
    return running(b"grader.sandbox.zygote")


def keepers_running() -> bool:
    """Whether a keeper (this program) runs on this machine: the watch slots of ended graders may be
    its own (grader.sandbox.cgroups.remove_stale leaves them to it)."""
    return running(b"grader/sandbox/keeper.py")


def running(marker: bytes) -> bool:
    """Whether a process on this machine has `marker` in its command line."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if marker in f.read():
                        return True
            except OSError:
                continue
    return False


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
