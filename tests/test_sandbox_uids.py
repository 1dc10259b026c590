"""Private uids (grader.sandbox.uids): no two live children share one, on the whole machine, and
every process of a child's uid dies at its teardown, wherever it went (its own session, a double
fork), while no process of another uid does and the grader's threads keep root.
"""
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import HOPPER, ROOT, indented, left_of, processes_of, uid_in_use
from grader.sandbox import uids
from grader.sandbox.provision import copy_submission
from grader.sandbox.runner import Sandbox

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="private uids need root")

BASE = 1_900_000 + os.getpid() % 10_000 * 10      # uids no grader hands out (they are < 900,000)


def _daemon(uid: int, detach: bool) -> int:
    """A process of `uid` sleeping a minute, not this process's child when `detach` (double-forked
    into its own session, as an escaping student process would); returns its pid."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            if detach:
                os.setsid()
                if os.fork():
                    os._exit(0)
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            os.write(w, str(os.getpid()).encode())
            os.close(w)
            time.sleep(60)
        finally:
            os._exit(0)
    os.close(w)
    got = int(os.read(r, 32))
    os.close(r)
    if detach:
        os.waitpid(pid, 0)
    return got


def _gone(uids_: set[int], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while processes_of(uids_) and time.monotonic() < deadline:
        time.sleep(0.01)
    return not processes_of(uids_)


@pytest.fixture
def daemons():
    """Start daemons with daemons(uid, detach); whatever is left is killed afterwards."""
    started = []

    def start(uid: int, detach: bool = True) -> int:
        pid = _daemon(uid, detach)
        started.append(pid)
        return pid
    yield start
    for pid in started:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid in started:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def _draws(monkeypatch, *values):
    """Make the next draws of a uid FIRST + each of `values`, in order."""
    left = list(values)
    monkeypatch.setattr(uids.secrets, "randbelow", lambda n: left.pop(0))


def _taken(uid: int) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.bind(b"\0grader-private-uid-%d" % uid)
        return False
    except OSError:
        return True
    finally:
        probe.close()


# -- the kill ---------------------------------------------------------------------------------------

def test_kill_all_kills_every_process_of_the_uid_and_no_other(daemons):
    target, other = BASE, BASE + 1
    daemons(target), daemons(target, detach=False), daemons(target)
    survivor = daemons(other)
    assert len(processes_of({target})) == 3
    uids.kill_all(target)
    assert _gone({target})
    assert processes_of({other}) == [survivor]
    assert os.getresuid() == (0, 0, 0)


# A root parent that collects whatever it is handed (a subreaper, like the sandbox's zygote), and under
# it a process of the uid that starts a hopper: a helper in its own session that forks and exits in a
# loop. So whatever is killed is collected, and the uid is free again once all of it is.
REAPED_HOPPER = """
import ctypes, os, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)          # PR_SET_CHILD_SUBREAPER
uid = int(sys.argv[1])
if os.fork() == 0:
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
""" + indented(HOPPER, 4) + """
    os._exit(0)
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(0.01)
"""


def test_kill_all_stops_a_process_that_keeps_changing_its_pid():
    """A sweep of /proc sees such a process in few of its passes (2 of 50, measured: each pid is gone
    before its status is read), but the kernel counts it under its uid all the while it runs
    (conftest.uid_in_use), and after kill_all nothing of it is left."""
    uid = BASE + 7
    reaper = subprocess.Popen([sys.executable, "-c", REAPED_HOPPER, str(uid)])
    try:
        deadline = time.monotonic() + 10
        while not uid_in_use(uid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert all(uid_in_use(uid) for _ in range(5)), "the hopper is counted all the while it runs"
        uids.kill_all(uid)
        left = left_of({uid})
        assert not left, left
        assert reaper.poll() is None and os.getresuid() == (0, 0, 0)
    finally:
        reaper.kill()
        reaper.wait()


def test_only_the_calling_thread_takes_the_uid(daemons, monkeypatch):
    """At the moment of the kill the calling thread runs as the uid and every other thread of the
    grader as root; afterwards the calling thread is root again."""
    target = BASE + 2
    daemons(target)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    seen = {}
    libc = uids._libc()

    class Spy:
        def syscall(self, *args):
            return libc.syscall(*args)

        def kill(self, pid, sig):
            for tid in os.listdir("/proc/self/task"):
                with open(f"/proc/self/task/{tid}/status") as f:
                    seen[int(tid)] = next(line.split()[1:] for line in f if line.startswith("Uid:"))
            return libc.kill(pid, sig)
    monkeypatch.setattr(uids, "_libc", Spy)
    try:
        uids.kill_all(target)
    finally:
        stop.set()
        other.join()
    me = threading.get_native_id()
    assert seen[me] == [str(target), str(target), "0", str(target)]    # real, effective, saved, filesystem
    assert len(seen) >= 2 and all(ids == ["0"] * 4 for tid, ids in seen.items() if tid != me), seen
    assert os.getresuid() == (0, 0, 0)
    assert _gone({target})


def test_an_exception_right_after_the_thread_took_the_uid_still_gives_root_back(daemons, monkeypatch):
    """A signal's handler may raise in the main thread as soon as the call that took the uid returns."""
    target = BASE + 5
    daemons(target)
    libc = uids._libc()

    class Interrupted:
        def syscall(self, *args):
            got = libc.syscall(*args)
            if args[1].value == target:
                raise KeyboardInterrupt
            return got

        def kill(self, pid, sig):
            return libc.kill(pid, sig)
    monkeypatch.setattr(uids, "_libc", Interrupted)
    with pytest.raises(KeyboardInterrupt):
        uids.kill_all(target)
    assert os.getresuid() == (0, 0, 0)
    monkeypatch.undo()
    uids.kill_all(target)
    assert _gone({target})


def test_without_the_system_call_the_processes_are_found_in_proc(daemons, monkeypatch):
    target, other = BASE + 3, BASE + 4
    daemons(target), daemons(target)
    survivor = daemons(other)
    monkeypatch.setattr(uids, "_SETRESUID", {})
    assert uids._kill_as(target) is False           # nothing sent
    assert len(processes_of({target})) == 2
    uids.kill_all(target)
    assert _gone({target})
    assert processes_of({other}) == [survivor]


# -- the reservation --------------------------------------------------------------------------------

def test_a_uid_in_use_is_never_drawn_again_until_its_end(monkeypatch, daemons):
    _draws(monkeypatch, 5, 5, 7, 5)
    first = uids.reserve()
    second = uids.reserve()                 # 5 again: taken, so the next draw
    assert (first.uid, second.uid) == (uids.FIRST + 5, uids.FIRST + 7)
    daemons(first.uid)
    first.end()                             # its processes killed, then the uid freed
    assert _gone({first.uid})
    first.end()                             # a second end does nothing
    third = uids.reserve()
    assert third.uid == uids.FIRST + 5
    second.end(), third.end()
    assert not _taken(uids.FIRST + 5) and not _taken(uids.FIRST + 7)


def test_a_uid_held_by_another_grader_is_not_drawn_and_is_free_once_that_grader_dies(monkeypatch):
    held = uids.FIRST + 11
    other = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nsys.path.insert(0, sys.argv[1])\nfrom grader.sandbox import uids\n"
         "uids.secrets.randbelow = lambda n: 11\nheld = uids.reserve()\nprint(held.uid, flush=True)\n"
         "time.sleep(60)", str(ROOT)],
        stdout=subprocess.PIPE)
    try:
        assert int(other.stdout.readline()) == held
        _draws(monkeypatch, 11, 12)
        mine = uids.reserve()
        assert mine.uid == uids.FIRST + 12
        mine.end()
    finally:
        other.kill()
        other.wait()
    _draws(monkeypatch, 11)
    again = uids.reserve()                  # the kernel freed the name with the process
    assert again.uid == held
    again.end()


def test_no_uid_to_be_had_is_an_error_that_says_why(monkeypatch):
    holder = uids.reserve()
    monkeypatch.setattr(uids.secrets, "randbelow", lambda n: holder.uid - uids.FIRST)
    with pytest.raises(OSError, match="no private uid could be reserved"):
        uids.reserve()
    holder.end()


def test_a_childs_uid_is_reserved_while_it_lives(tmp_path):
    """Through the sandbox: the uid the child runs as is taken until its session is closed."""
    copy_submission({"m": "import os\n\ndef f():\n    return os.getuid()\n"}, str(tmp_path))
    with Sandbox() as sb:
        session = sb.open(str(tmp_path), "m")
        got = session.call("f", plain=True)
        assert got.kind == "ok", got
        uid = got.value
        assert uid == session.private.uid and uids.FIRST <= uid < uids.FIRST + uids.COUNT
        assert _taken(uid)
        session.close()
        assert not _taken(uid)
