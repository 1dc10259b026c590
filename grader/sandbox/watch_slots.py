"""The watch slots of a grading process (grader.sandbox.native_watch): control groups whose members
the parent's kernel counters count, one slot per child watched at the same time.

A child joins a slot at its start and holds it until it and everything it started are gone
(`give_back` re-uses only an empty slot), so a slot's counts are one child's. Where the v1 cpuset
controller is, a slot is pinned to one CPU, so each kernel needs one counter a slot: the CPU that
the fewest slots of any grader on this machine hold, chosen under a lock on the cpuset hierarchy so
that graders starting together spread too. Where cgroup2 holds perf_event and the grader is in its
root, a slot is a threaded group, which a child with one thread joins without a machine-wide lock.
"""
from __future__ import annotations

import fcntl
import os
import threading
import time
from dataclasses import dataclass
from typing import Callable

from grader.sandbox import cgroups, hierarchies

_read = hierarchies.read_value
_POOL = threading.Lock()
_FREE: dict[int, list["Slot"]] = {}     # grading process -> its slots no child is in
_MADE: dict[int, int] = {}              # grading process -> slots made


@dataclass(frozen=True)
class Slot:
    """One of the process's watch groups: its folders (perf_event first, then cpuset where there is
    one), the CPUs its members may run on, and the folders' inodes, which tell whether the groups
    are still the ones its counters were opened on (`whole`)."""

    folders: tuple[str, ...]
    cpus: tuple[int, ...]
    inodes: tuple[int, ...]         # of its folders when it was made: which groups they are

    def empty(self) -> bool:
        return all(not cgroups.members_of(os.path.join(f, "cgroup.procs")) for f in self.folders)

    def whole(self) -> bool:
        """Whether its folders are still the groups it was made as: a group may be removed from
        outside, and another made under its name, which counters opened on the first never count."""
        try:
            return inodes(self.folders) == self.inodes
        except OSError:
            return False


def possible() -> bool:
    """Whether children are counted in the process's slots: beside v1 controllers, with a perf_event
    hierarchy (where cgroup2 holds the limits, each child's own group is counted)."""
    bases = hierarchies.bases()
    return "all" not in bases and "perf_event" in bases


def take(gone: Callable[[Slot], None] = lambda slot: None) -> Slot | None:
    """A free slot of this process, or a new one (None: it could not be made). A free slot that is no
    longer whole is dropped, and `gone(slot)` told (its counters count nothing any more)."""
    while True:
        with _POOL:
            free = _FREE.setdefault(os.getpid(), [])     # a forked grader makes its own
            slot = free.pop() if free else None
        if slot is None:
            return _new()
        if slot.whole():
            return slot
        gone(slot)


def any_free() -> bool:
    """Whether this process has a slot no child is in (`take` then makes none)."""
    with _POOL:
        return bool(_FREE.get(os.getpid()))


def adopt(folders: list[str], offered: list[int], cpus: list[int]) -> Slot | None:
    """A slot a finished grader's keeper hands over (grader.sandbox.keeper.adopt), made this process's:
    None unless its folders are still the groups its counters watch (the same inodes, in this
    machine's hierarchies) and empty. Its cpuset folder takes a name of this process's, so that
    graders starting beside it count its pin (`held_slots`); a cgroup2 folder cannot be renamed and
    keeps its name, which no new slot takes (`_new` makes only folders that did not exist)."""
    bases = hierarchies.bases()
    places = [bases.get("perf_event"), bases.get("cpuset")][:len(folders)]
    if not 1 <= len(folders) <= 2 or len(offered) != len(folders) or not cpus \
            or any(p is None or os.path.dirname(os.path.normpath(f)) != os.path.normpath(p)
                   for f, p in zip(folders, places)):
        return None
    slot = Slot(tuple(folders), tuple(cpus), tuple(offered))
    if not slot.whole() or not slot.empty():
        return None
    if len(folders) == 2:
        if cpu_list(_read(os.path.join(folders[1], "cpuset.cpus")) or "") != list(cpus):
            return None
        renamed = os.path.join(os.path.dirname(folders[1]), _name())
        try:
            os.rename(folders[1], renamed)
        except OSError:
            return None
        slot = Slot((folders[0], renamed), tuple(cpus), slot.inodes)
    return slot


def disown(slot: Slot, folders: list[str]) -> None:
    """Give an adopted slot its folders' names back (`adopt`): the keeper that offered it removes them."""
    for now, before in zip(slot.folders, folders):
        if now != before:
            try:
                os.rename(now, before)
            except OSError:
                pass


def inodes(folders: tuple[str, ...] | list[str]) -> tuple[int, ...]:
    """The inodes of a slot's folders: which groups they are, whatever their names become."""
    return tuple(os.stat(f).st_ino for f in folders)


def give_back(slot: Slot) -> None:
    """A slot whose child is gone serves the next; one with a process still in it is never used again
    (its counts could mix with the next child's)."""
    if slot.empty():
        with _POOL:
            _FREE.setdefault(os.getpid(), []).append(slot)


def _new() -> Slot | None:
    """A slot of folders that did not exist: a name a slot of a grader since gone still has (its
    keeper's, or adopted by another grader, `adopt`) is passed over."""
    bases = hierarchies.bases()
    for _ in range(100):
        name = _name()
        perf = os.path.join(bases["perf_event"], name)
        try:
            os.mkdir(perf)
        except FileExistsError:
            continue
        except OSError:
            return None
        _thread_mode(perf, bases["perf_event"])
        online = tuple(cpu_list(_read("/sys/devices/system/cpu/online") or "0"))
        if "cpuset" not in bases:
            return _made((perf,), online)
        cpuset = os.path.join(bases["cpuset"], name)
        try:
            cpu = _pin(cpuset, bases["cpuset"])
        except FileExistsError:
            os.rmdir(perf)
            continue
        return _made((perf, cpuset), (cpu,)) if cpu is not None else _made((perf,), online)
    return None


def _made(folders: tuple[str, ...], cpus: tuple[int, ...]) -> Slot:
    return Slot(folders, cpus, inodes(folders))


def _name() -> str:
    """The next name of this process's slots (a forked grader counts its own)."""
    with _POOL:
        _MADE[os.getpid()] = number = _MADE.get(os.getpid(), 0) + 1
    return f"grader-{os.getpid()}-watch{number}"


def _thread_mode(folder: str, base: str) -> None:
    """A slot made beneath cgroup2's root is made threaded: a child with one thread then joins it
    through `cgroup.threads`, without the lock a pid written to `cgroup.procs` takes (cgroups.join).
    Only there: the root, which has no `cgroup.type`, is the one group that can hold threaded and
    domain groups side by side; beneath any other, the grader's own group would become a thread root
    that no other domain group may be made in. Where the kernel refuses, the slot stays a domain."""
    if os.path.exists(os.path.join(base, "cgroup.threads")) and not os.path.exists(os.path.join(base, "cgroup.type")):
        try:
            with open(os.path.join(folder, "cgroup.type"), "w") as f:
                f.write("threaded")
        except OSError:
            pass


def _pin(folder: str, parent: str) -> int | None:
    """Make the cpuset group at `folder` with the parent's memory nodes and one of its CPUs: the one
    the fewest watch slots on this machine are pinned to (the last of those). The choice and the
    pin are made under a lock on the hierarchy, so graders starting together spread too."""
    cpus = _read(os.path.join(parent, "cpuset.effective_cpus")) or _read(os.path.join(parent, "cpuset.cpus"))
    mems = _read(os.path.join(parent, "cpuset.effective_mems")) or _read(os.path.join(parent, "cpuset.mems"))
    if not cpus or not mems:
        return None
    lock = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _lock(lock, PIN_LOCK_WAIT)
        cpu = least_held(cpu_list(cpus), [cpu_list(_read(os.path.join(parent, entry, "cpuset.cpus")))
                                          for entry in held_slots(parent)])
        os.mkdir(folder)        # FileExistsError: another's (`_new` takes the next name)
        for key, value in (("cpuset.mems", mems), ("cpuset.cpus", str(cpu))):
            with open(os.path.join(folder, key), "w") as f:
                f.write(value)
        return cpu
    except FileExistsError:
        raise
    except OSError:
        try:
            os.rmdir(folder)
        except OSError:
            pass
        return None
    finally:
        os.close(lock)


# Rationale: a sandboxed child may read /sys, and a read-only descriptor is all flock asks: a red
# team's child held this lock for its whole submission, and a grader making a slot waited 33 s for it.
# The lock only spreads graders starting together over the CPUs; past this wait the slot is made
# without it, on the CPU the slots held then say.
PIN_LOCK_WAIT = 1.0     # seconds


def _lock(fd: int, seconds: float) -> bool:
    """flock(fd, LOCK_EX), waiting at most `seconds`: whether it was taken."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)


def least_held(cpus: list[int], pins: list[list[int]]) -> int:
    """The CPU of `cpus` the fewest of `pins` (the CPUs of each slot) hold; of those, the last."""
    held = {cpu: 0 for cpu in cpus}
    for pin in pins:
        for cpu in pin:
            if cpu in held:
                held[cpu] += 1
    return min(reversed(held), key=held.__getitem__)


def held_slots(cpuset: str) -> list[str]:
    """The watch slots of live graders in the cpuset hierarchy at `cpuset` (a grader that has ended
    leaves its slots to its keeper, who removes them once it has closed their counters)."""
    owners = {entry: entry[len("grader-"):].split("-", 1)[0] for entry in _entries(cpuset)
              if entry.startswith("grader-") and "-watch" in entry}
    return [entry for entry, pid in owners.items() if pid.isdigit() and os.path.exists(f"/proc/{pid}")]


def cpu_list(text: str) -> list[int]:
    """'0-3,5' -> [0, 1, 2, 3, 5]"""
    cpus = []
    for part in filter(None, text.strip().split(",")):
        low, _, high = part.partition("-")
        cpus += range(int(low), int(high or low) + 1)
    return cpus


def folders_of(pid: int) -> list[str]:
    bases = hierarchies.bases()
    return [os.path.join(base, entry) for c in ("perf_event", "cpuset") if (base := bases.get(c))
            for entry in _entries(base) if entry.startswith(f"grader-{pid}-watch")]


def _entries(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []
