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
from dataclasses import dataclass

from grader.sandbox import cgroups, hierarchies

_read = hierarchies.read_value
_POOL = threading.Lock()
_FREE: dict[int, list["Slot"]] = {}     # grading process -> its slots no child is in
_MADE: dict[int, int] = {}              # grading process -> slots made


@dataclass(frozen=True)
class Slot:
    """One of the process's watch groups: its folders (perf_event first, then cpuset where there is
    one) and the CPUs its members may run on."""

    folders: tuple[str, ...]
    cpus: tuple[int, ...]

    def empty(self) -> bool:
        return all(not cgroups.members_of(os.path.join(f, "cgroup.procs")) for f in self.folders)


def possible() -> bool:
    """Whether children are counted in the process's slots: beside v1 controllers, with a perf_event
    hierarchy (where cgroup2 holds the limits, each child's own group is counted)."""
    bases = hierarchies.bases()
    return "all" not in bases and "perf_event" in bases


def take() -> Slot | None:
    """A free slot of this process, or a new one (None: it could not be made)."""
    with _POOL:
        key = os.getpid()         # a forked grader makes its own
        free = _FREE.setdefault(key, [])
        if free:
            return free.pop()
        _MADE[key] = _MADE.get(key, 0) + 1
        number = _MADE[key]
    return _new(number)


def give_back(slot: Slot) -> None:
    """A slot whose child is gone serves the next; one with a process still in it is never used again
    (its counts could mix with the next child's)."""
    if slot.empty():
        with _POOL:
            _FREE.setdefault(os.getpid(), []).append(slot)


def _new(number: int) -> Slot | None:
    bases = hierarchies.bases()
    name = f"grader-{os.getpid()}-watch{number}"
    perf = os.path.join(bases["perf_event"], name)
    try:
        os.makedirs(perf, exist_ok=True)
    except OSError:
        return None
    _thread_mode(perf, bases["perf_event"])
    online = tuple(cpu_list(_read("/sys/devices/system/cpu/online") or "0"))
    if "cpuset" not in bases:
        return Slot((perf,), online)
    cpuset = os.path.join(bases["cpuset"], name)
    cpu = _pin(cpuset, bases["cpuset"])
    return Slot((perf, cpuset), (cpu,)) if cpu is not None else Slot((perf,), online)


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
        fcntl.flock(lock, fcntl.LOCK_EX)
        cpu = least_held(cpu_list(cpus), [cpu_list(_read(os.path.join(parent, entry, "cpuset.cpus")))
                                          for entry in held_slots(parent)])
        os.makedirs(folder, exist_ok=True)
        for key, value in (("cpuset.mems", mems), ("cpuset.cpus", str(cpu))):
            with open(os.path.join(folder, key), "w") as f:
                f.write(value)
        return cpu
    except OSError:
        try:
            os.rmdir(folder)
        except OSError:
            pass
        return None
    finally:
        os.close(lock)


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
