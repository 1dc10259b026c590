"""The zygote's page tables (grader.sandbox.zygote): what each fork of a child copies, and each
child's exit drops, made small. Its anonymous memory is put in huge pages; the entries of its code
mappings that only the page cache holds are dropped. Then libtorch's code is sealed.
"""
from __future__ import annotations

import ctypes
import os

from grader.sandbox import breakpoints

MADV_COLLAPSE = 25          # Linux >= 6.1; elsewhere madvise says EINVAL and nothing is collapsed
HUGE_PAGE = 2 << 20
PAGE = os.sysconf("SC_PAGE_SIZE")


# Huge pages. Each fork copies, and each child's exit drops, one page-table entry per 4 KiB page of
# the zygote's anonymous memory (~150 MB after importing torch), or one per 2 MiB page. The heap is
# in huge pages from the start (glibc.malloc.hugetlb, grader.sandbox.launch); the rest (the
# interpreter's arenas, ~55 MB) is collapsed into them here, 2 MiB at a time while no request waits
# (MADV_COLLAPSE takes 0.3-3 ms per MiB: at once, it would delay the first child). A child makes no
# huge page of its own (PR_SET_THP_DISABLE, set in each spare): a fault on its fresh memory would
# zero 2 MiB, or stall to compact memory on a busy machine, and its untimed loads and timed calls
# would cost what the machine's memory does, not what the code does (grader.timing.guards).
def collapsible() -> list[int]:
    """The 2 MiB-aligned addresses of the zygote's anonymous writable memory, its heap included."""
    found = []
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            if fields[1] == "rw-p" and (len(fields) == 5 or fields[5] == "[heap]"):
                low, high = (int(x, 16) for x in fields[0].split("-"))
                found += range(-(-low // HUGE_PAGE) * HUGE_PAGE, high - HUGE_PAGE + 1, HUGE_PAGE)
    return found


def collapse_next(pending: list[int]) -> None:
    """One step: the next 2 MiB, if at least half of its pages are in memory (mincore), so that a
    sparse mapping does not grow to a huge page of mostly zeros. A failure (a kernel without
    MADV_COLLAPSE, memory marked MADV_NOHUGEPAGE, no free huge page) leaves them as they are."""
    libc = ctypes.CDLL(None)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    address, resident = pending.pop(0), (ctypes.c_ubyte * (HUGE_PAGE // PAGE))()
    if libc.mincore(address, HUGE_PAGE, resident) == 0 and sum(b & 1 for b in resident) * 2 >= len(resident):
        libc.madvise(address, HUGE_PAGE, MADV_COLLAPSE)


# Code page tables. fork() copies no page-table entry of a file mapping that holds no private
# page: a child maps the code it runs from the page cache as it first runs it. A uprobe (the
# native watch's counters, grader.sandbox.native_watch) writes its breakpoint into a private copy
# of a page of libtorch's code in every process that maps it, this one included, whenever it is
# opened; from then on each fork copies, and each child's exit drops, an entry for every page of
# that code the zygote has mapped (~46 MB after its imports: 11,500 entries; grading the worked
# solutions took 0.15 core-s more, 2.4 ms a child, than once they are unmapped here).
PM_PRESENT, PM_FILE = 1 << 63, 1 << 61      # /proc/self/pagemap: present; a page-cache page
MADV_DONTNEED = 4


def drop_code_entries() -> None:
    """Unmap the page-cache pages of the zygote's code mappings, keeping their private pages (a
    breakpoint already written): a breakpoint written later finds few entries to be copied, and
    the zygote and its children map again from the page cache what they run. Where /proc does not
    say (no pagemap), or a private page is swapped out, the mapping is left whole: the children are
    then only slower to fork and end."""
    try:
        _drop_listed_code_entries()
    except (OSError, ValueError):
        pass


def _drop_listed_code_entries() -> None:
    libc = ctypes.CDLL(None)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    with open("/proc/self/smaps") as f, open("/proc/self/pagemap", "rb", buffering=0) as pagemap:
        span, anonymous = None, 0
        for line in f:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5:           # a mapping's first line
                low, high = (int(x, 16) for x in fields[0].split("-"))
                span = (low, high) if "x" in fields[1] and len(fields) > 5 and fields[5].startswith("/") else None
            elif span and fields[0] == "Anonymous:":
                anonymous = int(fields[1]) << 10
            elif span and fields[0] == "Swap:":     # a private page swapped out: MADV_DONTNEED would drop it
                private = _private_pages(pagemap, *span) if anonymous else []
                if fields[1] == "0" and len(private) * PAGE == anonymous:   # else pagemap does not show them all
                    start = span[0]
                    for page in private + [span[1]]:
                        if page > start:
                            libc.madvise(start, page - start, MADV_DONTNEED)
                        start = page + PAGE
                span = None


def _private_pages(pagemap, low: int, high: int) -> list[int]:
    """The addresses of the pages of [low, high) that are this process's own, not the page cache's."""
    entries = memoryview(os.pread(pagemap.fileno(), (high - low) // PAGE * 8, low // PAGE * 8)).cast("Q")
    return [low + i * PAGE for i, e in enumerate(entries) if e & (PM_PRESENT | PM_FILE) == PM_PRESENT]


# Sealed code. The native watch counts a kernel through the breakpoint its uprobe writes into the
# page that holds the kernel's entry (grader.sandbox.breakpoints), in each process's own memory: a
# child that made that page writable could write the original instruction back, or map other
# memory over it, and run the kernel uncounted. mseal (Linux >= 6.10) makes the mappings of
# libtorch's code refuse mprotect, munmap, mremap and a mapping made over them (EPERM), in the zygote
# and in every process forked from it; the kernel's own writes (a uprobe's) are not refused.
# Dropping the page (MADV_DONTNEED), which a seal does not refuse for a file's pages, is refused by
# the child's system-call filter (grader.sandbox.syscall_filter).
_SYS_MSEAL = {"x86_64": 462, "aarch64": 462}.get(os.uname().machine)
# Set in the zygote, and so in each child it forks: whether the code is sealed (grader.sandbox.confine
# notes its absence), and [start, end) of its mappings, where the child's filter refuses dropping pages.
sealed = False
code: tuple[int, int] | None = None


def seal_code(library: str) -> bool:
    """Seal the executable mappings of the library at `library`: False where the kernel cannot, or
    where this process's mappings cannot be read (a /proc without them)."""
    global sealed, code
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    try:
        spans = breakpoints.code_spans("self", library)
    except OSError:
        spans = []
    done = [_SYS_MSEAL is not None and libc.syscall(_SYS_MSEAL, ctypes.c_ulong(low), ctypes.c_size_t(high - low),
                                                    ctypes.c_ulong(0)) == 0 for low, high, _ in spans]
    sealed = bool(done) and all(done)
    code = (min(low for low, _, _ in spans), max(high for _, high, _ in spans)) if spans else None
    return sealed
