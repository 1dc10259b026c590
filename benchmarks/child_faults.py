"""Where a sandboxed child's page faults land, and which code took them:

    .venv/bin/python benchmarks/child_faults.py [--exercise attention.causal_mask] [--children 61] [--top 15]

A child forked from the zygote shares every page of its memory with it; the child's first write to
each of them copies it (a page fault), and its first run of a page of code maps it. At ~2.3 us each,
a child's ~1,200 are about a quarter of its exercise's share of the isolation floor
(batch_throughput.py). This shows where they are:

A warm sandbox, as a batch worker's, grades the exercise's worked solution --children times, one
child each (and, for a module that imports another course module, one more that checks that import),
while `perf record` samples every page fault of the zygote and of each child it forks
from then on (an event on the zygote that its children inherit: nothing else on the machine is
counted). Each child's fault is placed in the zygote's mapping that holds its address (its
/proc/PID/maps, read before the first child: a child keeps its parent's mappings, and what it maps
itself is shown apart), and given to the function whose instruction took it. Printed, per child:
- faults by mapping (a library's data, its code, the heap, anonymous memory: the interpreter's
  arenas and torch's allocations), with the distinct pages all the children faulted in between
  them: about as many as each child's faults, so every child writes (and copies) the same pages;
- faults by the function that took them (Python's evaluation loop changing a reference count,
  its type-attribute cache, malloc...);
- the zygote's own faults (its pages that it writes again after a fork shared them).

Needs `perf` and the right to sample another process (root, or kernel.perf_event_paranoid <= 1 for
one's own).
"""
from __future__ import annotations

import argparse
import bisect
import collections
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CHILD_MAPPED = ("(mapped by the child)", "")


def mappings(pid: int) -> list[tuple[int, int, str, str]]:
    """(start, end, file name or [anon]/[heap]/..., permissions) of each mapping of `pid`, by start."""
    found = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            fields = line.split()
            low, high = (int(x, 16) for x in fields[0].split("-"))
            found.append((low, high, os.path.basename(fields[5]) if len(fields) > 5 else "[anon]", fields[1]))
    return sorted(found)


def place(address: int, maps: list[tuple[int, int, str, str]], starts: list[int]) -> tuple[str, str]:
    """(name, permissions) of the mapping in `maps` that holds `address`; CHILD_MAPPED where none does."""
    i = bisect.bisect_right(starts, address) - 1
    if i >= 0 and maps[i][0] <= address < maps[i][1]:
        return maps[i][2], maps[i][3]
    return CHILD_MAPPED


def waiting(zygote: int) -> set[int]:
    """The zygote's children still running: the spare forked for a next request that never came (the
    children that served one have ended; some not reaped yet)."""
    alive = set()
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                state, parent = f.read().rsplit(")", 1)[1].split()[:2]
        except (OSError, ValueError):
            continue
        if int(parent) == zygote and state not in ("Z", "X"):
            alive.add(int(entry))
    return alive


def record(exercise: str, children: int, data: str) -> tuple[int, list[tuple[int, int, str, str]], set[int]]:
    """Grade `exercise` `children` times under perf; (the zygote's pid, its mappings, the pids of its
    children that served no request)."""
    sys.path[:0] = [ROOT, HERE]
    from grading_cpu import worker_config

    from grader import api
    from grader.catalog import catalog
    from grader.pipeline import engine

    specs = catalog()
    if exercise not in specs:
        sys.exit(f"--exercise {exercise}: no such exercise; `grader list` shows every id")
    if shutil.which("perf") is None:
        sys.exit("perf is not installed (linux-tools / linux-perf): this benchmark samples page faults with it")
    config = worker_config(ROOT)
    with api.sandbox(config) as sandbox:
        engine.grade(os.path.join(ROOT, "solutions"), [specs[exercise]], config, sandbox=sandbox)
        zygote = sandbox._zygote.pid       # the Popen of the zygote this sandbox started
        maps = mappings(zygote)
        perf = subprocess.Popen(["perf", "record", "-q", "-e", "page-faults", "-c", "1", "-d", "-p", str(zygote),
                                 "-o", data], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(2.0)             # perf attached (a child forked before it is not seen at all, never in part)
        if perf.poll() is not None:
            sys.exit(f"perf record could not sample the zygote: {perf.stderr.read().decode().strip()[-600:]}\n"
                     "run as root, or lower kernel.perf_event_paranoid")
        # the spare forked before perf attached serves the first request: one grade more, its child unseen
        results = engine.grade(os.path.join(ROOT, "solutions"), [specs[exercise]] * (children + 1), config,
                               sandbox=sandbox)
        perf.send_signal(signal.SIGINT)
        perf.wait()
        idle = waiting(zygote)
    if results.score != results.max_score:
        sys.exit(f"{exercise}'s worked solution did not pass in the sandbox ({results.score} of "
                 f"{results.max_score}): the faults of a failing grade are not a correct child's")
    return zygote, maps, idle


def samples(data: str):
    """(pid, address, function, library) of each recorded fault: the faulting address and the
    instruction's function from two passes over the same samples (perf names each field's symbol
    the same way, and a C++ name holds spaces and parentheses)."""
    def script(fields: str) -> list[str]:
        p = subprocess.run(["perf", "script", "-i", data, "-F", fields], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"perf script failed: {p.stderr.strip()[-600:]}")
        return p.stdout.splitlines()
    for where, what in zip(script("pid,addr"), script("ip,sym,dso")):
        pid, address = where.split()
        code = what.split(None, 1)[1] if len(what.split(None, 1)) > 1 else "[unknown]"
        function, _, dso = code.rpartition(" (")
        yield int(pid), int(address, 16), function.strip() or "[unknown]", os.path.basename(dso.rstrip(")"))


def report(zygote: int, maps, idle: set[int], data: str, top: int, graded: int) -> None:
    starts = [m[0] for m in maps]
    by_map, by_function, pages = collections.Counter(), collections.Counter(), collections.defaultdict(set)
    pids, own = set(), 0
    for pid, address, function, dso in samples(data):
        if pid == zygote:
            own += 1
            continue
        if pid in idle:
            continue
        pids.add(pid)
        where = place(address, maps, starts)
        by_map[where] += 1
        pages[where].add(address >> 12)
        by_function[(function[:60], dso)] += 1
    if not pids:
        sys.exit("perf recorded no fault of any child: was the event inherited? (perf record -p with inherit)")
    n, total = len(pids), sum(by_map.values())
    seen = f"{n} children" if n >= graded else f"{n} children of {graded} (perf attached after the others forked)"
    print(f"{seen}, {total / n:.0f} page faults each; the zygote's own: {own / n:.0f} per child\n")
    print(f"  {'mapping (of the zygote)':<50} {'perms':<6} {'per child':>10} {'share':>6} {'pages':>7}")
    for (name, perms), count in by_map.most_common(top):
        print(f"  {name[:50]:<50} {perms:<6} {count / n:>10.1f} {count / total:>6.1%} {len(pages[(name, perms)]):>7}")
    rest = total - sum(c for _, c in by_map.most_common(top))
    if rest:
        print(f"  {'(the rest)':<50} {'':<6} {rest / n:>10.1f} {rest / total:>6.1%}")
    print(f"\n  {'function that took the fault':<62} {'library':<26} {'per child':>10} {'share':>6}")
    for (function, dso), count in by_function.most_common(top):
        print(f"  {function:<62} {dso[:26]:<26} {count / n:>10.1f} {count / total:>6.1%}")
    print("\n  pages: distinct pages of the mapping faulted in by all the children together")


def main() -> None:
    sys.path.insert(0, HERE)
    from arguments import at_least

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exercise", default="attention.causal_mask", help="an exercise id (`grader list`)")
    parser.add_argument("--children", type=at_least(1), default=61, help="children graded and sampled")
    parser.add_argument("--top", type=at_least(1), default=15, help="rows of each table")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "faults.data")
        zygote, maps, idle = record(args.exercise, args.children, data)
        report(zygote, maps, idle, data, args.top, args.children)
    print(f"  (load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
