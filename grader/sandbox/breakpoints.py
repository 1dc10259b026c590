"""The native watch's breakpoints in the zygote's memory (grader.sandbox.native_watch).

A uprobe counter counts a function's entries through a breakpoint instruction that the kernel
writes into a private copy of the page holding the function, in every process that maps the
library, as the first counter of that function is opened (and into a process that maps it later,
as it maps it). A process that drops that page (MADV_DONTNEED) reads it again from the page cache,
without the breakpoint, and the kernel does not write it again: the function's entries are no
longer counted in that process, nor in any process it forks. The zygote drops the page-cache pages
of its code once, as it starts (grader.sandbox.zygote_pages.drop_code_entries); a counter that
any grader on the machine opens for a function nobody counted yet, while it does so, writes its
breakpoint between the zygote's reading of which of its pages are private and its dropping of the
others, and is lost with them. Every child of that zygote then ran that kernel uncounted (in CI,
3 of the 10 kernel-count scenarios went uncounted; here, a zygote started while another process
opened 400 new counters lost 1 breakpoint in 4 starts).

So before a watched child is handed over, the parent reads the zygote's memory at each watched
function's entry, once per zygote and function (`missing`). Where the breakpoint is not there,
one more counter of that function is opened and closed (native_watch.place): a new consumer of
the uprobe, for which the kernel writes the breakpoint into every process that maps the library
and lacks it (the zygote, its spare, a running child).
"""
from __future__ import annotations

import os
import platform
import struct
from dataclasses import dataclass, field
from typing import Iterable

# The instruction a uprobe writes at the function's entry (the kernel's UPROBE_SWBP_INSN).
INSTRUCTION = {"x86_64": b"\xcc", "aarch64": struct.pack("<I", 0xD42000A0)}.get(platform.machine(), b"")


def code_spans(pid: int | str, path: str) -> list[tuple[int, int, int]]:
    """(start, end, file offset) of each executable mapping of the library at `path` in process `pid`
    ("self": this one). OSError: the process is gone."""
    spans = []
    with open(f"/proc/{pid}/maps") as f:
        for fields in map(str.split, f):
            if len(fields) >= 6 and fields[5] == path and "x" in fields[1]:
                low, high = (int(x, 16) for x in fields[0].split("-"))
                spans.append((low, high, int(fields[2], 16)))
    return spans


@dataclass
class Seen:
    """What the parent has read of one zygote's memory: where its code mappings of the library are
    ((start, size, file offset) each, read once: they never move) and the offsets whose breakpoint
    it was seen to hold."""

    spans: list[tuple[int, int, int]] | None = None
    placed: set[int] = field(default_factory=set)


def missing(pid: int, path: str, offsets: Iterable[int], seen: Seen) -> list[int]:
    """The file offsets, of those given, of the functions of the library at `path` whose entry in the
    memory of process `pid` is not the breakpoint (a function outside its code mappings included).
    OSError: the process is gone, or its memory cannot be read."""
    if seen.spans is None:
        seen.spans = [(low, high - low, start) for low, high, start in code_spans(pid, path)]
    fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY | os.O_CLOEXEC)
    try:
        lost = []
        for offset in offsets:
            at = next((low + offset - start for low, size, start in seen.spans if start <= offset < start + size), None)
            if at is None or not INSTRUCTION or os.pread(fd, len(INSTRUCTION), at) != INSTRUCTION:
                lost.append(offset)
        return lost
    finally:
        os.close(fd)
