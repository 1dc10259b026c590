"""A child joins its control groups whole: every thread it has, in every hierarchy (as root).

cgroups.join moves a single-threaded child through v1's `tasks` file (no machine-wide lock, see
its docstring) and anything else through `cgroup.procs`; either way no thread may stay outside,
or its processes would escape the group's memory and process limits.
"""
import json
import os
import subprocess
import sys

import pytest

from conftest import HOPPER, indented

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="control groups need root")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Creates a group, forks a child that starts THREADS extra threads and joins it, and prints what
# the child's every thread is in, with what join() said was missing.
SCRIPT = """
import json, os, sys, threading, time
from grader.sandbox import cgroups
threads = int(sys.argv[1])
group = cgroups.create(f"grader-{os.getpid()}-jointest", 1 << 30, 64)
if group is None:
    print(json.dumps(None)); sys.exit(0)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    stop = threading.Event()
    for _ in range(threads):
        threading.Thread(target=stop.wait, daemon=True).start()
    missing = cgroups.join(list(group.procs))
    tasks = {tid: open(f"/proc/self/task/{tid}/cgroup").read() for tid in os.listdir("/proc/self/task")}
    os.write(w, json.dumps({"missing": missing, "tasks": tasks}).encode())
    time.sleep(0.5)
    os._exit(0)
os.close(w)
seen = json.loads(os.read(r, 1 << 20).decode())
seen.update(group=group.dirs, members=group.members(), pid=pid)
group.remove()
os.waitpid(pid, 0)
print(json.dumps(seen))
"""


def run_as_root(script: str, *args: str):
    """What `script`, run in a Python of its own, printed (JSON); skipped where it printed null
    (no control group can be made here)."""
    done = subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    if seen is None:
        pytest.skip("this machine offers no control group hierarchy to make groups in")
    return seen


@pytest.mark.parametrize("threads", [0, 2], ids=["one thread", "three threads"])
def test_every_thread_of_the_child_is_in_every_hierarchy_of_its_group(threads):
    seen = run_as_root(SCRIPT, str(threads))
    assert seen["missing"] == []
    assert len(seen["tasks"]) == threads + 1
    for tid, cgroup in seen["tasks"].items():
        for controller, folder in seen["group"].items():
            line = next((x for x in cgroup.splitlines()
                         if controller == "all" and x.startswith("0::") or controller in x.split(":")[1].split(",")),
                        "")
            assert line.endswith("/" + os.path.basename(folder.rstrip("/"))), (tid, controller, cgroup)
    assert seen["members"] == [seen["pid"]]


# remove(): a group with a live member (a process that would sleep a minute) and one whose member has
# ended; prints whether each member still runs, whether the folders are gone and how often kill() ran.
REMOVE = """
import json, os, signal, sys, time
from grader.sandbox import cgroups
kills = []
kill = cgroups.Group.kill
cgroups.Group.kill = lambda self: (kills.append(1), kill(self))[1]
out = {}
for case in ("live member", "member ended"):
    group = cgroups.create(f"grader-{os.getpid()}-removetest", 1 << 30, 64)
    if group is None:
        print(json.dumps(None)); sys.exit(0)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        cgroups.join(list(group.procs))
        os.write(w, b"in")
        if case == "member ended":
            os._exit(0)
        time.sleep(60)
        os._exit(0)
    os.close(w)
    os.read(r, 2)
    if case == "member ended":
        os.waitpid(pid, 0)
    folders = list(group.dirs.values())
    del kills[:]
    group.remove()
    group.remove()          # a second call: nothing left to do
    gone = os.waitpid(pid, os.WNOHANG)[0] == pid if case == "live member" else True
    out[case] = {"member gone": gone, "folders left": [f for f in folders if os.path.exists(f)],
                 "kills": len(kills)}
print(json.dumps(out))
"""


def test_remove_kills_only_a_group_that_has_members_and_leaves_no_folder():
    seen = run_as_root(REMOVE)
    assert seen["live member"] == {"member gone": True, "folders left": [], "kills": 1}
    assert seen["member ended"] == {"member gone": True, "folders left": [], "kills": 0}


# kill() goes on until the group is empty: a member its first listing missed (as one forked after the
# listing by a member not yet frozen would be) and processes that fork and exit in a loop in sessions of
# their own ("hoppers", here with no freezer to stop them) are all killed, and the folders go.
# Prints, for each case, whether remove() said the folders are gone, which are left, how many processes
# still run in the group's first hierarchy, and how long remove() took.
ROUNDS = """
import json, os, signal, sys, time
from grader.sandbox import cgroups
out = {}
for case in ("missed by the first listing", "hoppers, no freezer"):
    group = cgroups.create(f"grader-{os.getpid()}-roundstest", 0, 64)
    if group is None:
        print(json.dumps(None)); sys.exit(0)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        cgroups.join(list(group.procs))
        if case == "hoppers, no freezer":
            for _ in range(4):
""" + indented(HOPPER, 16) + """
        os.write(w, b"in")
        time.sleep(60)
        os._exit(0)
    os.close(w)
    os.read(r, 2)
    time.sleep(0.2)
    first = group.procs[0]
    kept = {}
    if case == "missed by the first listing":
        listed = []
        members = cgroups.Group.members
        group.members = lambda: [] if not listed and not listed.append(1) else members(group)
    elif "freezer" in group.dirs:
        kept["freezer"] = group.dirs.pop("freezer")
    folders = list(group.dirs.values())
    start = time.monotonic()
    removed = group.remove()
    took = time.monotonic() - start
    left = [f for f in folders if os.path.exists(f)]
    running = cgroups.members_of(first) if left else []
    if kept:            # the freezer's folder, left out of the kill: empty now if the kill was whole
        running += cgroups.members_of(os.path.join(kept["freezer"], "cgroup.procs"))
        for p in cgroups.members_of(os.path.join(kept["freezer"], "cgroup.procs")):
            os.kill(p, signal.SIGKILL)
        time.sleep(0.5)
        os.rmdir(kept["freezer"])
    os.waitpid(pid, 0)
    out[case] = {"removed": removed, "folders left": left, "running": running, "seconds": round(took, 2)}
print(json.dumps(out))
"""


def test_kill_goes_on_until_the_group_is_empty():
    seen = run_as_root(ROUNDS)
    for case, what in seen.items():
        assert what["removed"] and what["folders left"] == [] and what["running"] == [], (case, what)
        assert what["seconds"] < 5.0, (case, what)


# remove_stale(): the groups of a grader that no longer runs (a submission's group with a child's
# inside, a process still in it) go, the member killed; a live grader's stay.
STALE = """
import json, os, subprocess, sys, time
from grader.sandbox import cgroups
dead = subprocess.Popen(["true"]); dead.wait()
outer = cgroups.create(f"grader-{dead.pid}-sub", 1 << 30, 64)
if outer is None:
    print(json.dumps(None)); sys.exit(0)
inner = cgroups.create(f"grader-{dead.pid}-sub/grader-{dead.pid}-1", 1 << 30, 64)
live = cgroups.create(f"grader-{os.getpid()}-live", 1 << 30, 64)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    cgroups.join(list(inner.procs))
    os.write(w, b"in")
    time.sleep(20)
    os._exit(0)
os.read(r, 2)
cgroups.remove_stale()
gone = os.waitpid(pid, os.WNOHANG)[0] == pid
stale = [f for g in (outer, inner) for f in g.dirs.values() if os.path.exists(f)]
kept = all(os.path.isdir(f) for f in live.dirs.values())
live.remove()
print(json.dumps({"member gone": gone, "stale folders left": stale, "live group kept": kept}))
"""


def test_a_dead_graders_groups_are_removed_and_a_live_ones_kept():
    seen = run_as_root(STALE)
    assert seen == {"member gone": True, "stale folders left": [], "live group kept": True}


# A watch slot (grader.sandbox.watch_slots) beneath cgroup2's root is threaded, and a child joins it
# by its one thread (cgroups.join, without the machine-wide lock); its members are read all the same.
# Beneath any other cgroup2 group a slot stays a domain (that group would become a thread root).
SLOT = """
import json, os, sys
from grader.sandbox import cgroups, hierarchies, watch_slots
slot = watch_slots.take() if watch_slots.possible() else None
if slot is None:
    print(json.dumps(None)); sys.exit(0)
perf, base = slot.folders[0], hierarchies.bases()["perf_event"]
(r, w), (go_r, go_w) = os.pipe(), os.pipe()
pid = os.fork()
if pid == 0:
    missing = cgroups.join([os.path.join(f, "cgroup.procs") for f in slot.folders])
    os.write(w, json.dumps({"missing": missing, "cgroup": open("/proc/self/cgroup").read()}).encode())
    os.read(go_r, 1)
    os._exit(0)
seen = json.loads(os.read(r, 1 << 20).decode())
seen.update(root=not os.path.exists(os.path.join(base, "cgroup.type")), slot=os.path.basename(perf),
            type=hierarchies.read_value(os.path.join(perf, "cgroup.type")), pid=pid,
            members=cgroups.members_of(os.path.join(perf, "cgroup.procs")), empty=slot.empty())
os.write(go_w, b"x")
os.waitpid(pid, 0)
seen["empty after"] = slot.empty()
inner = os.path.join(base, f"grader-{os.getpid()}-domain")
if os.path.exists(os.path.join(base, "cgroup.threads")) and seen["root"]:
    os.makedirs(os.path.join(inner, "slot"))
    watch_slots._thread_mode(os.path.join(inner, "slot"), inner)
    seen["beneath a group"] = hierarchies.read_value(os.path.join(inner, "slot", "cgroup.type"))
    os.rmdir(os.path.join(inner, "slot"))
    os.rmdir(inner)
for folder in slot.folders:
    os.rmdir(folder)
print(json.dumps(seen))
"""


def test_a_child_joins_a_threaded_watch_slot_by_its_thread_and_is_seen_in_it():
    seen = run_as_root(SLOT)
    assert seen["missing"] == []
    assert seen["members"] == [seen["pid"]] and not seen["empty"] and seen["empty after"]
    if seen["root"] and seen["type"]:          # cgroup2 holds perf_event, the grader in its root
        assert seen["type"] == "threaded"
        assert f"0::/{seen['slot']}\n" in seen["cgroup"], seen["cgroup"]
        assert seen["beneath a group"] == "domain"
