"""One control group per sandboxed child: limits on what all its processes together may use,
and a kill that no process of it can outrun.

rlimits are per process: three helpers of 1.5 GiB each stay under a 2 GiB address-space limit
and still take 4.5 GB together, and a process that forks and exits in a loop stays ahead of a
`/proc` sweep. A group counts every process the child starts, whatever it does:
- pids: at most `max_pids` processes (and threads) at once, fork() fails past it;
- memory: all of them together at most `memory_bytes` (swap included where the kernel counts it);
- kill: cgroup v2's `cgroup.kill`, or with v1 the freezer (frozen processes cannot fork), then
  SIGKILL to each member, then thaw;
- perf_event: where the parent's kernel counters watch (grader.sandbox.native_watch): the cgroup2
  group itself, or beside v1 controllers the hierarchy that has perf_event.

Where the groups go is found by grader.sandbox.hierarchies. Only root can make them; elsewhere
`create` returns None and the caller names the layer as missing.

The parent creates the group; the child joins it (`join`) while still root, before it drops to its
private uid, so everything it starts afterwards is a member.
"""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field

from grader.sandbox import hierarchies, keeper
from grader.sandbox.hierarchies import read_value, write_value


@dataclass
class Group:
    version: int
    dirs: dict[str, str]                 # controller ("pids", "memory", "freezer"; v2: "all") -> folder
    procs: list[str] = field(default_factory=list)   # the cgroup.procs files a member writes its pid to

    def members(self) -> list[int]:
        return sorted({pid for path in self.procs for pid in members_of(path)})

    def kill(self) -> bool:
        """Kill every member, round after round, until none is left; returns whether none is (False
        only after KILL_SECONDS of rounds). One round signals the members it lists: a member the
        listing missed (forked after it, by a member not yet frozen, or where there is no freezer) is
        caught by the next, so a process that forks and exits in a loop cannot outrun the kill."""
        deadline = time.monotonic() + KILL_SECONDS
        while True:
            self._kill_round()
            _wait(lambda: not self.members(), min(1.0, max(deadline - time.monotonic(), 0.0)))
            if not self.members():
                return True
            if time.monotonic() >= deadline:
                return False

    def _kill_round(self) -> None:
        """cgroup2: `cgroup.kill` (the kernel also kills what is being forked). v1: freeze, so that no
        member can fork while the listed ones are signalled, then SIGKILL each and thaw; a group not
        frozen within a second (a member busy in the kernel on a loaded machine) is signalled all
        the same, and what it forked meanwhile is the next round's."""
        if self.version == 2:
            write_value(os.path.join(self.dirs["all"], "cgroup.kill"), "1")
            return
        freezer = self.dirs.get("freezer")
        if freezer:
            write_value(os.path.join(freezer, "freezer.state"), "FROZEN")
            _wait(lambda: read_value(os.path.join(freezer, "freezer.state")) != "FREEZING", 1.0)
        for pid in self.members():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if freezer:
            write_value(os.path.join(freezer, "freezer.state"), "THAWED")

    def remove(self) -> bool:
        """Remove the group's folders; kill its members first only if the kernel refuses (EBUSY: it has
        some; an empty group stays so, as joining takes root). The freezer's folder goes last, there
        for that kill. Returns whether the folders are gone. A group whose members outlived every
        round of the kill is kept, not forgotten: a second call kills and removes it again (and
        `remove_stale` once its grader has ended); after a removal a second call does nothing."""
        if not self._rmdirs():
            self.kill()
            if not self._rmdirs():
                return False
        self.dirs, self.procs = {}, []
        return True

    def _rmdirs(self) -> bool:
        for controller in sorted(self.dirs, key=lambda c: c == "freezer"):
            try:
                os.rmdir(self.dirs[controller])
            except FileNotFoundError:
                pass
            except OSError:
                return False
        return True


# What all the processes of one child may use together: its memory budget plus room for the
# pages it copies from the zygote as it runs, and as many processes (threads included) as
# RLIMIT_NPROC allows its uid (grader.sandbox.confine.MAX_PROCESSES).
HEADROOM = 512 << 20
MAX_PIDS = 256
# How long a kill keeps at it before it reports members left (grader.sandbox.runner names them).
KILL_SECONDS = 10.0


def for_child(name: str, memory_budget: int) -> Group | None:
    return create(name, memory_budget + HEADROOM if memory_budget > 0 else 0, MAX_PIDS)


def create(name: str, memory_bytes: int, max_pids: int) -> Group | None:
    """A new group `name` with these limits, or None where the machine offers none to us."""
    if os.geteuid() != 0:
        return None
    unified, v1 = hierarchies.find()
    try:
        if unified:
            folder = os.path.join(unified, name)
            os.makedirs(folder, exist_ok=False)
            group = Group(2, {"all": folder}, [os.path.join(folder, "cgroup.procs")])
            write_value(os.path.join(folder, "pids.max"), str(max_pids))
            if memory_bytes > 0:
                write_value(os.path.join(folder, "memory.max"), str(memory_bytes))
                write_value(os.path.join(folder, "memory.swap.max"), "0")
            return group
        if not v1:
            return None
        group = Group(1, {})
        for controller, base in v1.items():
            folder = os.path.join(base, name)
            os.makedirs(folder, exist_ok=False)
            group.dirs[controller] = folder
            group.procs.append(os.path.join(folder, "cgroup.procs"))
        if "pids" in group.dirs:
            write_value(os.path.join(group.dirs["pids"], "pids.max"), str(max_pids))
        if "memory" in group.dirs and memory_bytes > 0:
            write_value(os.path.join(group.dirs["memory"], "memory.limit_in_bytes"), str(memory_bytes))
            write_value(os.path.join(group.dirs["memory"], "memory.memsw.limit_in_bytes"), str(memory_bytes))
        return group
    except OSError:
        return None


def remove_stale(prefix: str = "grader-") -> None:
    """Remove the groups of grader processes that no longer exist (killed from outside, their
    groups stayed behind): names are `<prefix><pid>-<uid>`; a live grader's groups are kept. So are
    the watch slots of ended graders while a keeper lives (grader.sandbox.keeper: it removes its
    own, or hands them to the next grader, under their names, `<prefix><pid>-watch<n>`), and a watch
    slot is only ever removed empty, never killed: on cgroup2 an adopted slot keeps the name of the
    grader that made it, so a name can call a live grader's slot stale, with its child in it (the
    members of a stale slot are in their own stale groups too, which are killed)."""
    if os.geteuid() != 0:
        return
    kept: bool | None = None        # whether a keeper lives: looked up once, and only for a slot
    for base in hierarchies.bases().values():
        try:
            entries = os.listdir(base)
        except OSError:
            continue
        for entry in entries:
            owner = entry[len(prefix):].split("-", 1)[0] if entry.startswith(prefix) else ""
            if owner.isdigit() and not _alive(int(owner)):
                if "-watch" in entry:
                    kept = keeper.keepers_running() if kept is None else kept
                    if not kept:
                        _remove_empty(os.path.join(base, entry))
                    continue
                for folder, _, _ in os.walk(os.path.join(base, entry), topdown=False):   # a submission's, inside out
                    Group(1, {"stale": folder}, [os.path.join(folder, "cgroup.procs")]).remove()


def _remove_empty(folder: str) -> None:
    try:
        os.rmdir(folder)
    except OSError:         # a process in it (or gone already): left for a later pass
        pass


def _alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")


def join(procs: list[str]) -> list[str]:
    """Called in the child: move this process into the group. Returns what could not be joined.
    While it has one thread, by "0" (the writing thread) in v1's `tasks` or a threaded cgroup2 group's
    `cgroup.threads`: unlike a pid in `cgroup.procs`, that takes no machine-wide lock, which waits for
    an RCU grace period (5-19 ms a child; kernel/cgroup/cgroup.c, cgroup_procs_write_start)."""
    missing = []
    alone = "\nThreads:\t1\n" in f"\n{read_value('/proc/self/status')}\n"
    for path in procs:
        threaded = read_value(os.path.join(os.path.dirname(path), "cgroup.type")) == "threaded"
        tasks = os.path.join(os.path.dirname(path), "cgroup.threads" if threaded else "tasks")
        target, text = (tasks, "0") if alone and os.path.exists(tasks) else (path, str(os.getpid()))
        if not write_value(target, text):
            missing.append(os.path.basename(os.path.dirname(os.path.dirname(path))) or path)
    return missing


def missing_controllers(group: Group | None) -> list[str]:
    if group is None:
        return ["cgroups"]
    if group.version == 2:
        return []
    return [c for c in hierarchies.V1_CONTROLLERS if c not in group.dirs]


def members_of(procs: str) -> list[int]:
    """The pids in the group of `procs` (its cgroup.procs; [] if unreadable). A threaded cgroup2 group
    refuses that file: its threads are read instead, ids that kill() takes as their whole process."""
    for path in (procs, os.path.join(os.path.dirname(procs), "cgroup.threads")):
        try:
            return [int(line) for line in hierarchies.read_text(path).splitlines() if line.strip()]
        except OSError:
            continue
    return []


def _wait(done, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not done() and time.monotonic() < deadline:
        time.sleep(0.005)
