"""One memory budget per submission, across the exercises graded side by side (`--jobs`).

A child's own control group bounds what its processes use together (grader.sandbox.cgroups), but
the exercises of one submission graded at once each have their own: three of them holding 1.5 GiB
each take 4.5 GB against a 2 GiB budget. So the children of one submission are made inside a
parent group of the submission's, `grader-<pid>-s<key>`, whose memory limit the kernel applies to
all of them together (hierarchically): the submission's budget, one child's headroom for the pages
copied from the zygote (grader.sandbox.cgroups.HEADROOM) and CHILD_SHARE per running child (a child
that only imports and calls is charged 3-4 MiB: the zygote's pages are charged to the zygote). So
three exercises whose helpers hold 1.2 GiB each cannot all complete under a 2 GiB budget, while any
number of ordinary exercises fit. The parent group exists
while at least one of its children does: made when the first opens, its limit raised and lowered as
children come and go, removed with the last. Where there are no control groups (not root) nothing
is made and the per-process limits remain.
"""
from __future__ import annotations

import os
import threading

from grader.sandbox import cgroups, hierarchies

CHILD_SHARE = 64 << 20
_LIMIT_FILES = {"all": ("memory.max",),
                "memory": ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "memory.limit_in_bytes")}


class Budgets:
    """The submissions' parent groups of one Sandbox, by key (one per graded submission)."""

    def __init__(self, memory_bytes: int) -> None:
        self.memory_bytes = memory_bytes
        self._open: dict[str, int] = {}         # key -> children open in it
        self._lock = threading.Lock()

    def folder(self, key: str) -> str:
        return f"grader-{os.getpid()}-s{key}"

    def enter(self, key: str) -> str:
        """A child of submission `key` is about to be made: the name prefix its group gets ("" if none)."""
        with self._lock:
            bases = hierarchies.bases()
            memory = bases.get("all") or bases.get("memory")
            if not memory or self.memory_bytes <= 0:
                return ""
            children = self._open.get(key, 0) + 1
            folder = os.path.join(memory, self.folder(key))
            try:
                os.makedirs(folder, exist_ok=True)
            except OSError:
                return ""
            self._open[key] = children
            self._limit(folder, "all" if "all" in bases else "memory", children)
            return self.folder(key) + "/"

    def leave(self, key: str) -> None:
        """A child of `key` has ended (its group removed): lower the limit, or remove the group with the last."""
        with self._lock:
            children = self._open.get(key, 0) - 1
            bases = hierarchies.bases()
            if children > 0:
                self._open[key] = children
                kind = "all" if "all" in bases else "memory"
                self._limit(os.path.join(bases[kind], self.folder(key)), kind, children)
                return
            self._open.pop(key, None)
            for base in bases.values():
                try:
                    os.rmdir(os.path.join(base, self.folder(key)))
                except OSError:
                    pass

    def full(self, key: str) -> bool:
        """Whether the submission's group has reached its memory limit (v1: its high-water mark is at
        the limit; cgroup2: its `max` event)."""
        bases = hierarchies.bases()
        if "memory" in bases:
            folder = os.path.join(bases["memory"], self.folder(key))
            return _number(os.path.join(folder, "memory.max_usage_in_bytes")) >= \
                _number(os.path.join(folder, "memory.limit_in_bytes")) - (1 << 20) > 0
        if "all" in bases:
            return _events(os.path.join(bases["all"], self.folder(key), "memory.events")).get("max", 0) > 0
        return False

    def _limit(self, folder: str, kind: str, children: int) -> None:
        limit = str(self.memory_bytes + cgroups.HEADROOM + children * CHILD_SHARE)
        # v1 keeps memsw >= limit at every step: one of the first two writes fails whichever way the
        # limit moves, the third settles it
        for name in _LIMIT_FILES[kind]:
            # refused: no swap accounting; or lowering below what is in use: the higher limit stays
            hierarchies.write_value(os.path.join(folder, name), limit)


def limit_hit(group: cgroups.Group | None, budget: tuple[Budgets, str] | None, memory_bytes: int) -> str:
    """Which memory limit the kernel enforced on a child that died, in words ("" if it was not killed
    for memory): its submission's (the exercises graded at once) or its own (all its processes)."""
    if group is None:
        return ""
    v1 = "memory" in group.dirs
    events = os.path.join(group.dirs.get("memory") or group.dirs.get("all", ""),
                          "memory.oom_control" if v1 else "memory.events")
    if _events(events).get("oom_kill", 0) == 0:
        return ""
    if budget is not None and budget[0].full(budget[1]):
        return (f"the memory limit of the whole submission was reached (the exercises graded at once share "
                f"{memory_bytes >> 20} MiB)")
    mib = (memory_bytes + cgroups.HEADROOM) >> 20
    return f"the memory limit was reached ({mib} MiB for all its processes together)"


def _number(path: str) -> int:
    try:
        return int(hierarchies.read_text(path).strip() or 0)
    except (OSError, ValueError):
        return 0


def _events(path: str) -> dict[str, int]:
    try:
        return {k: int(v) for k, v in (line.split() for line in hierarchies.read_text(path).splitlines()
                                       if len(line.split()) == 2)}
    except (OSError, ValueError):
        return {}
