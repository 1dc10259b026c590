"""The sandbox's fast paths keep what the slow ones guaranteed (issue 18).

- the zygote forks each child before its request arrives (a spare): every child still starts
  from the zygote as it was after its imports, whatever the children before it did, and is
  confined only once its request is in; a spare killed while it waits is replaced, and none
  outlives the sandbox;
- a teardown waits for the child on its pidfd: it returns when the process ends, zombie or not;
- the zygote collects an ended child at once (woken by SIGCHLD), and a child has none of that;
- the zygote's heap is in transparent huge pages where the machine allows them (its malloc was
  started with glibc.malloc.hugetlb=1), and the setting is not passed on to student code: a child
  writes fresh memory in small pages;
- the zygote's first calls, made once for every child, start no thread, import nothing and leave
  neither a dispatch mode in place nor the global generator drawn from.
"""
from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, handed_on
from grader.sandbox import processes, provision
from grader.sandbox.processes import alive
from grader.sandbox.runner import Sandbox

# Each child reports what it finds of the markers an earlier one may have left, then leaves its own.
PROBE = '''
import gc, os, signal, sys, torch
import grader.sandbox.wire as wire
seen = {"sigchld": signal.getsignal(signal.SIGCHLD) == signal.SIG_DFL,
        "sigterm": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, "wakeup": signal.set_wakeup_fd(-1),
        "torch": getattr(torch, "_cost_marker", None), "env": os.environ.get("COST_MARKER"),
        "tunables": os.environ.get("GLIBC_TUNABLES"), "collector": gc.isenabled(),
        "module": "cost_marker" in sys.modules, "wire": getattr(wire, "_cost_marker", None),
        "uid": os.getuid(), "pgid": os.getpgid(0) == os.getpid()}
torch._cost_marker = wire._cost_marker = os.environ["COST_MARKER"] = MARK
sys.modules["cost_marker"] = sys

def report():
    return {k: v for k, v in seen.items()}

def huge_kb():
    with open("/proc/self/smaps_rollup") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("AnonHugePages:"))

def fresh_memory_in_huge_pages():
    """kB of huge pages before and after writing 64 MiB of fresh memory."""
    before = huge_kb()
    block = torch.ones(16 << 20)
    return [before, huge_kb(), float(block[-1])]
'''


def _session(sandbox: Sandbox, mark: str):
    workdir = provision.make_workdir("grader-test-")
    provision.copy_submission({"probe": PROBE.replace("MARK", repr(mark))}, workdir)
    session = sandbox.open(workdir, "probe", import_timeout=60)
    assert session.ready.kind == "ok", session.ready
    return session, workdir


def _zygote_children(zygote_pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == zygote_pid and fields[0] != "Z":
                out.append(int(entry))
    return out


def _the_spare(zygote_pid: int) -> int:
    """The zygote's one live child once the last session's child is gone: its spare."""
    deadline = time.monotonic() + 30
    while len(children := _zygote_children(zygote_pid)) != 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(children) == 1, children
    return children[0]


@pytest.fixture(scope="module")
def own_sandbox():
    with Sandbox() as sandbox:
        sandbox.start()
        yield sandbox


def test_every_child_starts_from_the_zygote_as_it_was(own_sandbox):
    """Three children in a row (the second and third were forked while the one before ran): none
    sees what an earlier one changed in torch, the grader's modules, sys.modules or the environment."""
    reports = []
    for i in range(3):
        session, workdir = _session(own_sandbox, f"child {i}")
        outcome = session.call("report", plain=True, timeout=60)
        session.close()
        provision.remove_workdir(workdir)
        assert outcome.kind == "ok", outcome
        reports.append(outcome.value)
    for r in reports:
        assert (r["torch"], r["env"], r["module"], r["wire"]) == (None, None, False, None), r
        assert r["pgid"], "confined: a session and process group of its own"
        assert r["collector"], "the collector, off while the zygote imported, is on in every child"
    if os.geteuid() == 0:
        assert len({r["uid"] for r in reports}) == 3 and 0 not in {r["uid"] for r in reports}


def test_a_child_has_none_of_the_zygotes_own_signal_handling(own_sandbox):
    """The zygote is woken by its children's ends (a SIGCHLD handler writing to a pipe of its own, so
    it collects them at once); a child starts with SIGCHLD at its default, no wakeup pipe, and holds
    none of the zygote's pipes."""
    zygote = own_sandbox._zygote.pid
    session, workdir = _session(own_sandbox, "signals")
    try:
        outcome = session.call("report", plain=True, timeout=60)
        theirs = {os.readlink(f"/proc/{zygote}/fd/{fd}") for fd in os.listdir(f"/proc/{zygote}/fd")}
        child = {os.readlink(f"/proc/{session.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{session.pid}/fd")}
    finally:
        session.close()
        provision.remove_workdir(workdir)
    assert outcome.kind == "ok", outcome
    assert outcome.value["sigchld"] and outcome.value["sigterm"] and outcome.value["wakeup"] == -1, outcome.value
    assert any(link.startswith("pipe:") for link in theirs), "the zygote's wakeup pipe"
    assert not {link for link in theirs & child if link.startswith("pipe:")}, theirs & child


def test_the_spare_waits_unconfined_until_its_request_then_serves_it(own_sandbox):
    """The zygote holds one spare child: it runs as the grader's user, in the zygote's process
    group (not yet confined), and is the process that serves the next request."""
    zygote = own_sandbox._zygote.pid
    spare = _the_spare(zygote)
    assert os.stat(f"/proc/{spare}").st_uid == os.geteuid() and os.getpgid(spare) == os.getpgid(zygote)
    session, workdir = _session(own_sandbox, "served by the spare")
    try:
        assert session.pid == spare
        assert os.getpgid(spare) == spare, "confined once the request was in: its own process group"
    finally:
        session.close()
        provision.remove_workdir(workdir)


def test_a_spare_killed_while_waiting_is_replaced(own_sandbox):
    zygote = own_sandbox._zygote.pid
    for _ in range(2):
        spare = _the_spare(zygote)
        os.kill(spare, signal.SIGKILL)
        processes.wait_gone(spare, 30)
        session, workdir = _session(own_sandbox, "after a killed spare")
        outcome = session.call("report", plain=True, timeout=60)
        session.close()
        provision.remove_workdir(workdir)
        assert outcome.kind == "ok" and outcome.value["torch"] is None, outcome
        assert session.pid != spare


def test_no_spare_outlives_the_sandbox():
    sandbox = Sandbox()
    sandbox.start()
    spares = [_the_spare(sandbox._zygote.pid)]
    sandbox.shutdown()
    for pid in spares:
        processes.wait_gone(pid, 30)
        assert not alive(pid)


def test_the_zygote_collects_its_spare_before_it_ends_so_pid_1_is_left_no_orphan():
    """Shut down, or its grader killed without a word: either way the zygote kills and collects its
    spare, and only then ends. Left to die of its PDEATHSIG, the spare was an orphan whose zombie
    pid 1 had to collect: one for every sandbox that ended, and forever where pid 1 collects none."""
    sandbox = Sandbox()
    sandbox.start()
    spare = _the_spare(sandbox._zygote.pid)
    sandbox.shutdown()
    assert not os.path.exists(f"/proc/{spare}"), "the spare outlived the shut-down zygote, uncollected"

    grader = subprocess.Popen([sys.executable, "-c", "import sys; from grader.sandbox.runner import Sandbox; "
                               "s = Sandbox(); s.start(); print(s._zygote.pid, flush=True); sys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              cwd=ROOT)
    try:
        zygote = int(grader.stdout.readline())
        spare = _the_spare(zygote)
    finally:
        grader.kill()
        grader.wait()
    processes.wait_gone(zygote, 30)
    assert not alive(zygote)
    assert not os.path.exists(f"/proc/{spare}"), "the spare outlived the zygote of a killed grader, uncollected"


def test_a_process_ends_every_zygote_it_launched_before_it_exits():
    """A sandbox never shut down, and one whose zygote is still importing torch (launched early, never
    taken): the process ends and collects both zygotes as it exits (grader.sandbox.launch.end_all),
    rather than leave them for pid 1 to collect, the second after a second more of importing."""
    code = ("from grader.sandbox import launch; from grader.sandbox.runner import Sandbox; "
            "Sandbox().start(); launch.early(2)")
    got, handed, err = handed_on([sys.executable, "-c", code], cwd=ROOT, timeout=120)
    assert (got, handed) == (0, []), err


# The grader dies the moment it has signalled its zygote to end (its first os.kill of it): killed,
# a Dask worker torn down. Printed first: the zygote's pid, and its children's.
_DIES_ENDING = """
import os, signal, sys, time
from grader.sandbox import launch
from grader.sandbox.runner import Sandbox
if sys.argv[1] == "serving":
    sandbox = Sandbox()
    sandbox.start()
    zygote = sandbox._zygote.pid
    time.sleep(0.2)
    kids = open(f"/proc/{zygote}/task/{zygote}/children").read().split()
else:       # launched early, still importing torch
    launch.early(1)
    zygote, kids = launch._early[1][1].pid, []
print(zygote, *kids, flush=True)
kill = os.kill
def dying(pid, sig):
    kill(pid, sig)
    if pid == zygote:
        kill(os.getpid(), signal.SIGKILL)
os.kill = dying
launch.end_all()
"""


@pytest.mark.parametrize("state", ["serving", "importing"])
def test_a_grader_that_dies_while_ending_its_zygote_leaves_no_zygote(state, tmp_path):
    """Wherever its end of a zygote is cut short, the zygote ends, and its children with it: the
    grader never stops its zygote to look at it (stop 54 did: killed between the stop and the
    continue, the grader left a zygote stopped for good, and a spare beside it)."""
    with open(tmp_path / "stderr", "w+") as err:     # not a pipe: a zygote left running would hold it
        grader = subprocess.Popen([sys.executable, "-c", _DIES_ENDING, state], stdout=subprocess.PIPE,
                                  stderr=err, text=True, cwd=ROOT)
        pids = [int(pid) for pid in grader.stdout.readline().split()]
        code = grader.wait(120)
        grader.stdout.close()
        err.seek(0)
        assert code == -signal.SIGKILL, err.read()[-2000:]
    assert pids and (len(pids) > 1) == (state == "serving"), pids
    left = []
    for pid in pids:
        processes.wait_gone(pid, 30)
        if alive(pid):
            left.append(pid)
            os.kill(pid, signal.SIGKILL)
            os.kill(pid, signal.SIGCONT)
    assert not left, f"left running or stopped: {left} of {pids}"


def test_wait_gone_returns_when_the_process_ends_zombie_or_not():
    """A process that is not ours to reap (a grandchild through `sh`, as the sandbox's children
    are the zygote's) and one of ours left a zombie: both end the wait, long before its limit."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.2)"])
    t0 = time.monotonic()
    processes.wait_gone(p.pid, 120)
    assert time.monotonic() - t0 < 60 and p.poll() is not None     # a zombie until polled
    sh = subprocess.run(["sh", "-c", "sleep 0.2 & echo $!"], capture_output=True, text=True)
    grandchild = int(sh.stdout.strip())
    t0 = time.monotonic()
    processes.wait_gone(grandchild, 120)
    assert time.monotonic() - t0 < 60 and not alive(grandchild)
    processes.wait_gone(grandchild, 120)    # already gone: returns at once
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    t0 = time.monotonic()
    processes.wait_gone(p.pid, 0.2)         # still running: the limit ends the wait
    assert alive(p.pid) and time.monotonic() - t0 >= 0.19
    p.kill()
    p.wait()


def test_waits_take_descriptors_numbered_past_1023():
    """A grading process holds a descriptor for each kernel counter (hundreds a slot): with the kernel
    families watched, fixture_scores.py's process held past 1,023 of them, where select() refuses
    (ValueError: filedescriptor out of range in select()): 245 exercises were grader faults. Waiting
    uses poll, and the wait on a process's end with descriptors that high ends as it should."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < 1600:
        pytest.skip(f"this process may open at most {hard} descriptors")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1600), hard))
    read, write = os.pipe()
    high = [os.dup2(read, 1500), os.dup2(write, 1501)]
    try:
        assert processes.readable([1500], 0) == []
        os.write(1501, b"x")
        assert processes.readable([1500], 0) == [1500]
        filler = [os.dup(read) for _ in range(1100)]     # the next descriptors opened are numbered past 1023
        try:
            p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.2)"])
            t0 = time.monotonic()
            processes.wait_gone(p.pid, 60)              # its pidfd is numbered past 1023
            assert time.monotonic() - t0 < 30 and p.wait(5) == 0
        finally:
            for fd in filler:
                os.close(fd)
    finally:
        for fd in (read, write, *high):
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _huge_pages_possible(glibc_heap: bool = True) -> bool:
    """Whether the kernel gives transparent huge pages and, with `glibc_heap`, whether glibc's malloc
    can ask for them (glibc.malloc.hugetlb, glibc >= 2.35); MADV_COLLAPSE needs only the kernel."""
    import platform
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            mode = f.read()
    except OSError:
        return False
    libc, version = platform.libc_ver()
    heap = libc == "glibc" and tuple(map(int, version.split(".")[:2])) >= (2, 35)
    return "[never]" not in mode and (heap or not glibc_heap)


def test_the_zygote_heap_is_in_huge_pages_and_children_do_not_see_the_setting(own_sandbox):
    """Forking a child and its exit copy and drop a page-table entry per 4 KiB page of the zygote's
    heap (85 MB after importing torch): in 2 MiB pages that is ~40 entries, not ~21,000. A child's
    own fresh memory stays in 4 KiB pages: a fault there never zeroes 2 MiB or waits for the kernel
    to compact memory, so its loads cost in it what they cost in a clean child (the timing guards)."""
    session, workdir = _session(own_sandbox, "huge")
    try:
        seen = session.call("report", timeout=60).value
        assert seen["tunables"] is None
        before, after, _ = session.call("fresh_memory_in_huge_pages", timeout=60).value
        assert after <= before, (before, after)
    finally:
        session.close()
        provision.remove_workdir(workdir)
    if not _huge_pages_possible():
        pytest.skip("no transparent huge pages for glibc's malloc on this machine")
    with open(f"/proc/{own_sandbox._zygote.pid}/smaps_rollup") as f:
        huge = [int(line.split()[1]) for line in f if line.startswith("AnonHugePages:")]
    assert huge and huge[0] >= 16 << 10, huge      # kB


COLLAPSE = '''
import mmap, sys, torch
from grader.sandbox import zygote, zygote_pages
def kb(path, key):
    with open(path) as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key))
sparse = mmap.mmap(-1, 64 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
for offset in range(0, 64 << 20, 2 << 20):
    sparse[offset] = 1                  # one page in memory every 2 MiB
zygote._warm()
pending = zygote_pages.collapsible()
assert pending and all(a % zygote_pages.HUGE_PAGE == 0 for a in pending), pending[:3]
huge, anon = kb("/proc/self/smaps_rollup", "AnonHugePages:"), kb("/proc/self/status", "RssAnon:")
while pending:
    zygote_pages.collapse_next(pending)
print(huge, kb("/proc/self/smaps_rollup", "AnonHugePages:"), anon, kb("/proc/self/status", "RssAnon:"))
'''


def test_the_zygote_collapses_the_rest_of_its_memory_into_huge_pages():
    """The interpreter's arenas (~55 MB after importing torch) are not malloc's heap: the zygote
    collapses them into huge pages itself, 2 MiB at a time (Linux >= 6.1), but not a sparse mapping,
    which would grow to huge pages of mostly zeros."""
    release = tuple(int(p) for p in os.uname().release.split("-")[0].split(".")[:2])
    if release < (6, 1) or not _huge_pages_possible(glibc_heap=False):
        pytest.skip("no MADV_COLLAPSE or no transparent huge pages on this machine")
    out = subprocess.run([sys.executable, "-c", COLLAPSE], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "GLIBC_TUNABLES": ""})
    assert out.returncode == 0, out.stderr[-2000:]
    huge_before, huge_after, anon_before, anon_after = map(int, out.stdout.split())    # kB
    assert huge_after >= huge_before + (16 << 10), (huge_before, huge_after)
    assert anon_after <= anon_before + (4 << 10), (anon_before, anon_after)    # the sparse 64 MiB stayed sparse


CODE_ENTRIES = '''
import os, sys, torch
from grader.sandbox import zygote_pages
def code_kb():
    """Rss and Anonymous (kB) of libtorch's code mapping."""
    with open("/proc/self/smaps") as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if " r-xp " in line and line.endswith("libtorch_cpu.so"))
    fields = dict(line.split()[:2] for line in lines[start + 1:start + 25] if line.endswith(" kB"))
    return int(fields["Rss:"]), int(fields["Anonymous:"])
low, high = next((int(a, 16), int(b, 16)) for a, b, perms, path in
                 ((*line.split()[0].split("-"), line.split()[1], line.split()[-1]) for line in open("/proc/self/maps"))
                 if perms == "r-xp" and path.endswith("libtorch_cpu.so"))
page = low + (high - low) // 2 // zygote_pages.PAGE * zygote_pages.PAGE
try:
    with open("/proc/self/mem", "r+b") as mem:      # a private copy of one code page, as a uprobe's breakpoint makes
        mem.seek(page)
        original = mem.read(64)
        mem.seek(page)
        mem.write(original)
except OSError:         # a kernel that refuses writes through /proc/self/mem (proc_mem.force_override)
    print("unwritable")
    sys.exit(0)
torch.softmax(torch.randn(8, 8) @ torch.randn(8, 8), -1)
before = code_kb()
zygote_pages.drop_code_entries()
after = code_kb()
with open("/proc/self/mem", "rb") as mem:
    mem.seek(page)
    kept = mem.read(64) == original
pid = os.fork()
if pid == 0:
    os._exit(0 if float(torch.softmax(torch.ones(4), 0).sum()) == 1.0 else 1)
_, status = os.waitpid(pid, 0)
print(*before, *after, int(kept), os.waitstatus_to_exitcode(status))
'''


def test_the_zygote_keeps_only_the_private_pages_of_its_code():
    """A uprobe (the native watch's counters) writes its breakpoint into a private copy of a page of
    libtorch's code; fork then copies an entry for every page of that code the zygote has mapped
    (~46 MB), and each child's exit drops them again. The zygote unmaps the page-cache pages of its
    code, keeping the private ones, which hold the breakpoints; a child still runs torch."""
    out = subprocess.run([sys.executable, "-c", CODE_ENTRIES], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    if out.stdout.strip() == "unwritable":
        pytest.skip("this kernel refuses writes to a process's own code through /proc/self/mem")
    rss_before, private_before, rss_after, private_after, kept, child = map(int, out.stdout.split())   # kB
    assert private_before >= 4 and rss_before >= private_before + (1 << 10), out.stdout    # mapped, one page private
    assert private_after == private_before, out.stdout                     # the private page kept...
    assert rss_after <= private_after + 256, out.stdout                   # ...and little else (a thread may run some)
    assert kept == 1 and child == 0, out.stdout


WARM = """
import os, sys
import torch
from grader.sandbox import zygote
torch.set_num_threads(2)        # a sandbox whose children run two threads: its zygote's OpenMP allows two
threads, modules = (lambda: len(os.listdir("/proc/self/task"))), set(sys.modules)
before = threads()
zygote._warm()
seeded = torch.equal(torch.get_rng_state(), torch.Generator().manual_seed(0).get_state())
print(threads() - before, torch._C._len_torch_dispatch_stack(), int(seeded), *sorted(set(sys.modules) - modules))
"""


def test_the_zygotes_first_calls_start_no_thread_and_import_nothing():
    """The zygote makes the first calls every child would make (a tensor operation: torch detects the
    CPU; one under the forbidden-operator net; a reply through the wire) on tensors too small for an
    OpenMP team, so no thread exists to be lost at a fork; they import no module that every child
    would then carry (torch.optim's constructor, say, imports torch._dynamo: 820 modules), and leave
    no dispatch mode in place and the global generator as seeded."""
    out = subprocess.run([sys.executable, "-c", WARM], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "OMP_NUM_THREADS": "2"})
    assert out.returncode == 0, out.stderr[-2000:]
    new_threads, modes, seeded, *imported = out.stdout.split()
    assert (new_threads, modes, seeded, imported) == ("0", "0", "1", []), out.stdout


SEAL = '''
import ctypes, os, sys, torch
from grader.sandbox import breakpoints, zygote_pages
library = next(line.split()[-1] for line in open("/proc/self/maps") if line.rstrip().endswith("libtorch_cpu.so"))
real = breakpoints.code_spans
def unreadable(pid, path):
    raise PermissionError(13, "Permission denied", f"/proc/{pid}/maps")
breakpoints.code_spans = unreadable
print(zygote_pages.seal_code(library), zygote_pages.sealed, zygote_pages.code)
breakpoints.code_spans = real
print(zygote_pages.seal_code(library), zygote_pages.sealed, zygote_pages.code is not None)
low, high, _ = real("self", library)[0]
libc = ctypes.CDLL(None, use_errno=True)
print(libc.mprotect(ctypes.c_void_p(low), ctypes.c_size_t(4096), 7), ctypes.get_errno())
'''


def test_libtorchs_code_is_sealed_and_unreadable_mappings_leave_it_unsealed_not_crashed():
    """The zygote seals libtorch's code (mseal, Linux >= 6.10): a child cannot make it writable. Where
    the process's mappings cannot be read, the seal is left out (each child notes it) rather than the
    zygote failing to start."""
    out = subprocess.run([sys.executable, "-c", SEAL], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    unreadable, sealed, protect = out.stdout.splitlines()
    assert unreadable == "False False None", out.stdout
    release = tuple(int(p) for p in os.uname().release.split("-")[0].split(".")[:2])
    if release < (6, 10):
        assert sealed.startswith("False False"), out.stdout
        pytest.skip("no mseal before Linux 6.10")
    assert sealed == "True True True", out.stdout
    assert protect == f"-1 {errno.EPERM}", out.stdout          # the seal refuses mprotect
