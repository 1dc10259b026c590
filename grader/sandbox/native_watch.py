"""Forbidden native kernels, counted by the kernel from outside the child: the run-time check of
forbidden APIs that a submission cannot undo (SECURITY.md).

A forbidden rule names the C++ functions of libtorch whose entry proves its use
(`Forbidden.native`): `at::native::scaled_dot_product_attention` is entered by every route into
the operator (F.scaled_dot_product_attention, the original a tripwire keeps in its closure,
torch.ops.aten.*, torch._C._nn.*, another operator that decomposes into it). For each kernel the
PARENT opens a uprobe perf event (Linux perf, the `uprobe` PMU) on a perf_event control group the
child is in, one per CPU. The kernel then counts every entry into that function by any thread or
process of the group (a helper thread, a forked helper), and the counts live behind the parent's
file descriptors, which the child never holds. The parent reads them before it sends a call and
after the reply: a count that rose during the call is a forbidden hit. The whole call counts
(driver and substitutes included): a spec's trusted code reaches none of its rules' kernels,
which grading the worked solutions under this watch proves (tests/test_native_watch.py); what the
module does at import is not a call and is never counted.

Opening a uprobe costs the kernel a walk over every process that maps libtorch and closing one an
RCU grace period (tens of milliseconds, seconds on a loaded machine), so where the children's limits
live in v1 hierarchies the counters are opened once per grading process, on the watch slots it
keeps (grader.sandbox.watch_slots): one control group per child watched at the same time, held by
that child alone from its start until it and all it started are gone, so children are counted side
by side, with no turns; a slot pinned to one CPU needs one counter per kernel.
Where cgroup2 holds the limits, each child's own group is counted.

Kernels are found in libtorch_cpu.so's dynamic symbol table (parsed here, once per process: no
`nm`), by their qualified name, every overload of it. Where the machine cannot count (not root,
no uprobe PMU, no perf_event control group, a kernel missing from this build of torch)
`open_watch` says why; the caller names the missing layer in the feedback and the in-child
tripwires (defence in depth) remain.
"""
from __future__ import annotations

import ctypes
import functools
import os
import platform
import resource
import struct
import threading
from dataclasses import dataclass, field
from typing import Any

from grader.sandbox import breakpoints, cgroups, hierarchies, keeper, watch_slots
from grader.sandbox.watch_slots import Slot
from grader.sandbox.kernel_symbols import library, offsets

_read = hierarchies.read_value

_UPROBE_TYPE = "/sys/bus/event_source/devices/uprobe/type"
_ONLINE = "/sys/devices/system/cpu/online"
_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}.get(platform.machine())
_FLAG_PID_CGROUP, _FLAG_FD_CLOEXEC = 1 << 2, 1 << 3
_ATTR = struct.Struct("<IIQQQQQIIQQ")     # perf_event_attr up to config2 (PERF_ATTR_SIZE_VER1, 72 bytes)


def unavailable() -> str:
    """Why this machine cannot count kernels from outside the child ("" when it can)."""
    if os.geteuid() != 0:
        return "not running as root"
    if _PERF_EVENT_OPEN is None:
        return f"perf_event_open is not known on {platform.machine()}"
    if not os.path.exists(_UPROBE_TYPE):
        return "the kernel has no uprobe perf events"
    if not os.path.exists(library()):
        return "this build of torch has no libtorch_cpu.so"
    return ""


@dataclass
class Watch:
    """Counters of one child's kernels: `read()` before a call and after it, `hits(...)` between.
    `slot`: the process's watch group the child is in (its counters are kept open, the slot given
    back by `close()` once no process is left in it); without one, counters of the child's own
    group, closed by `close()`."""

    kernels: list[tuple[str, str]]                      # (rule, kernel) per counted symbol
    offsets: list[int]                                  # per symbol: its file offset in libtorch
    fds: list[list[int]] = field(default_factory=list)  # per symbol: one counter per CPU
    slot: Slot | None = None
    group: str = ""                                     # without a slot: the child's own group

    def read(self) -> list[int]:
        return [sum(struct.unpack("<Q", os.read(fd, 8))[0] for fd in per_cpu) for per_cpu in self.fds]

    def close(self) -> None:
        """Give the slot back, or close own counters in the background (each removal waits for an
        RCU grace period). Called once the child has been stopped."""
        if self.slot is not None:
            slot, self.slot, self.fds = self.slot, None, []
            watch_slots.give_back(slot)
        elif self.fds:
            fds, self.fds = [fd for per_cpu in self.fds for fd in per_cpu], []
            if keeper.hand(fds, close=True):    # the keeper's copies are the last: these closes cost nothing
                for fd in fds:
                    os.close(fd)
            else:
                threading.Thread(target=lambda: [os.close(fd) for fd in fds], daemon=True).start()


def hits(kernels: list[tuple[str, str]], before: list[int], after: list[int]) -> list[dict[str, Any]]:
    """A hit per (rule, kernel) whose count rose from `before` to `after`, in the tripwires' record shape."""
    found = []
    for (rule, kernel), old, new in zip(kernels, before, after):
        hit = {"rule": rule, "via": f"{kernel} (PyTorch's kernel, counted by the operating system)",
               "file": "", "line": 0, "counted": True}
        if new > old and hit not in found:
            found.append(hit)
    return found


def wanted(rules: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(rule name, kernel) for every native kernel the rules name."""
    return [(r["name"], k) for r in rules for k in r.get("native", ())]


def procs_to_join(watch: Watch | None) -> list[str]:
    """The cgroup.procs files a child writes its pid to, besides its own groups', to be counted."""
    if watch is None or watch.slot is None:
        return []
    return [os.path.join(f, "cgroup.procs") for f in watch.slot.folders]


def joined(watch: Watch, pid: int, child_group: str | None) -> bool:
    """Whether the child is in the groups its counters watch (counts of another group prove nothing,
    and counters on one CPU only see a child pinned there)."""
    for folder in (watch.slot.folders if watch.slot is not None else [child_group or "/nonexistent"]):
        if pid not in cgroups.members_of(os.path.join(folder, "cgroup.procs")):
            return False
    return True


def open_watch(rules: list[dict[str, Any]], child_group: str | None) -> tuple[Watch | None, str]:
    """Counters for the rules' kernels: on the process's watch group where there is one, else on the
    child's own group at `child_group`. (the watch, "") or (None, why not); (None, "") when the rules
    name no kernel."""
    kernels = wanted(rules)
    if not kernels:
        return None, ""
    why = unavailable()
    slots = not why and watch_slots.possible()
    if not why and not (slots or child_group):
        why = "no perf_event control group"
    if why:
        return None, why
    path = library()
    try:
        symbols = [(rule, kernel, off) for rule, kernel in kernels for off in offsets(path, kernel)]
    except OSError as e:
        return None, f"cannot read {os.path.basename(path)} ({e})"
    missing = sorted({k for _, k in kernels} - {k for _, k, _ in symbols})
    if missing:
        return None, f"{', '.join(missing)} not found in this build of torch"
    _raise_descriptor_limit()
    slot = _slot() if slots else None
    if slots and slot is None:
        return None, "no watch group could be made"
    watch = Watch([(rule, kernel) for rule, kernel, _ in symbols], [off for _, _, off in symbols], slot=slot,
                  group=child_group or "")
    try:
        for _, _, off in symbols:
            watch.fds.append(_counters(path, off, slot) if slot else _open(path, off, child_group, ()))
    except OSError as e:
        watch.close()
        return None, f"perf_event_open failed ({e.strerror or e})"
    return watch, ""


@functools.cache
def _raise_descriptor_limit() -> None:
    """Counters are descriptors, one per kernel and CPU a slot (hundreds a slot): this process's limit
    on open descriptors raised to the hard one, as its keeper does (a soft 1024 runs out)."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    try:                    # an unlimited hard limit is more than the kernel lets a soft one be
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else 1 << 16, hard))
    except (OSError, ValueError):
        pass


def place(watch: Watch, zygote: int, seen: breakpoints.Seen) -> str:
    """Each watched function's breakpoint in the memory of the zygote the child is forked from,
    written again where it is not (grader.sandbox.breakpoints): "" once they all are, else why not.
    `seen`: what was read of that zygote before, kept per zygote, to which this adds."""
    todo = sorted(set(watch.offsets) - seen.placed)
    if not todo:
        return ""
    path = library()
    folder = watch.slot.folders[0] if watch.slot else watch.group
    cpus = watch.slot.cpus[:1] if watch.slot else (watch_slots.cpu_list(_read(_ONLINE) or "0")[0],)
    try:
        lost = breakpoints.missing(zygote, path, todo, seen)
        for off in lost:        # a new consumer of the uprobe: the kernel writes the breakpoint where it is not
            fds = _open(path, off, folder, cpus)
            keeper.hand(fds, close=True)    # its copies are then the last: these closes cost nothing
            for fd in fds:
                os.close(fd)
        lost = breakpoints.missing(zygote, path, lost, seen) if lost else []
    except OSError as e:
        return f"the breakpoints in the sandbox could not be checked ({e.strerror or e})"
    seen.placed.update(set(todo) - set(lost))
    names = sorted({kernel for (_, kernel), off in zip(watch.kernels, watch.offsets) if off in lost})
    return f"the breakpoint of {', '.join(names)} could not be placed in the sandbox" if names else ""


# The process's own counters on its slots, opened once per (slot, offset): a uprobe costs the kernel
# a walk over every process that maps libtorch, its removal an RCU grace period (5-100 ms each,
# seconds on a loaded machine), so they are never opened per child, and a grader that has ended
# leaves its slots with their counters to the next (`_slot`).
_SHARED: dict[tuple[int, str, int], list[int]] = {}
_OPENING = threading.Lock()
_ADOPTING = threading.Lock()


def _slot() -> Slot | None:
    """A free slot of this process's; else one a finished grader's keeper offers, with the counters
    it has open (grader.sandbox.keeper.adopt: every slot it offers that is still what it was, and
    empty); else a new one."""
    with _ADOPTING:
        if not watch_slots.any_free():
            _adopt()
    return watch_slots.take(_forget)


def _forget(slot: Slot) -> None:
    """Close this process's counters on a slot that is no longer whole (its keeper holds copies)."""
    with _OPENING:
        keys = [k for k in _SHARED if k[:2] == (os.getpid(), slot.folders[0])]
        for fd in [fd for k in keys for fd in _SHARED.pop(k)]:
            os.close(fd)


def _adopt() -> None:
    try:
        library_id = _identity(library())
    except OSError:
        return
    pid = os.getpid()

    def claim(spare: dict[str, Any]) -> tuple[Slot, dict[int, list[int]]] | None:
        counters = spare["counters"]
        if any(len(fds) != len(spare["cpus"]) for fds in counters.values()):
            return None     # one counter per CPU the slot's children run on
        slot = watch_slots.adopt(spare["folders"], spare["inodes"], spare["cpus"])
        if slot is None:
            return None
        if not all(keeper.hand(fds, _counted(slot, library_id, offset)) for offset, fds in counters.items()):
            watch_slots.disown(slot, spare["folders"])   # this process's exit would close the last of them
            return None
        return slot, counters

    for slot, counters in keeper.adopt(library_id, claim):
        with _OPENING:
            for offset, fds in counters.items():
                _SHARED[(pid, slot.folders[0], offset)] = fds
        watch_slots.give_back(slot)


def _counters(path: str, offset: int, slot: Slot) -> list[int]:
    with _OPENING:
        key = (os.getpid(), slot.folders[0], offset)
        if key not in _SHARED:
            _SHARED[key] = _open(path, offset, slot.folders[0], slot.cpus)
            keeper.hand(_SHARED[key], _counted(slot, _identity(path), offset))
        return _SHARED[key]


def _counted(slot: Slot, library_id: str, offset: int) -> dict[str, Any]:
    """What a counter counts, as its keeper keeps it for the next grader (grader.sandbox.keeper)."""
    return {"folders": list(slot.folders), "inodes": list(slot.inodes), "cpus": list(slot.cpus),
            "library": library_id, "offset": offset}


def _identity(path: str) -> str:
    """The library file a uprobe is set in: the same path may hold another file later."""
    st = os.stat(path)
    return f"{st.st_dev}:{st.st_ino}"


def _open(path: str, offset: int, cgroup_dir: str, cpus: tuple[int, ...]) -> list[int]:
    """One uprobe counter per CPU the group's children may run on (`cpus`, else every online one),
    for the function at `offset` of `path`, on the group at `cgroup_dir`."""
    libc = ctypes.CDLL(None, use_errno=True)
    with open(_UPROBE_TYPE) as f:
        pmu = int(f.read())
    where = ctypes.create_string_buffer(path.encode())     # read by the kernel at open, in this process
    attr = ctypes.create_string_buffer(_ATTR.pack(pmu, _ATTR.size, 0, 0, 0, 0, 0, 0, 0, ctypes.addressof(where),
                                                  offset))
    group = os.open(cgroup_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    fds: list[int] = []
    try:
        for cpu in cpus or watch_slots.cpu_list(_read(_ONLINE) or "0"):
            fd = libc.syscall(_PERF_EVENT_OPEN, attr, group, cpu, -1, _FLAG_PID_CGROUP | _FLAG_FD_CLOEXEC)
            if fd < 0:
                err = ctypes.get_errno()
                for opened in fds:
                    os.close(opened)
                raise OSError(err, os.strerror(err))
            fds.append(fd)
    finally:
        os.close(group)
    return fds
