"""What closing kernel counters costs every other process that forks, closed in a row or paced:

    .venv/bin/python benchmarks/counter_closes.py [--counters 80] [--runs 2]

A grader's keeper (grader.sandbox.keeper) closes the uprobe counters of the native watch
(grader.sandbox.native_watch) once its grader has ended. The kernel's removal of a uprobe holds up
every fork on the machine, a sandbox zygote's included. This opens --counters counters the way the
native watch does (one per forbidden kernel of the catalog's rules and CPU, on control groups of their
own), then closes them in each of two ways, with a thread of this process forking a child every 2 ms
meanwhile:
- in a row: os.close, one after another;
- paced: keeper.close, which pauses keeper.PAUSE_S after each close (as the keeper closes them).
For each way it prints how long the closes took, the longest time one fork waited, and the time the
forks spent waiting in all (the whole time of each fork that took over 10 ms; a fork takes ~1 ms here), then the ratios.
The two ways alternate --runs times. Needs what the native watch needs: root, the uprobe PMU, and
a perf_event control group hierarchy. It starts once no earlier grader's counters are still being
closed (grader_cost.settle); run it with no grader running (the figures move with the number of
processes that map libtorch).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]

from arguments import at_least  # noqa: E402
from grader_cost import settle  # noqa: E402  (no earlier grader's counters still being closed)
from grader.catalog import catalog  # noqa: E402
from grader.sandbox import hierarchies, keeper, kernel_symbols, native_watch  # noqa: E402

SLOW_FORK_S = 0.010


def kernel_offsets() -> list[int]:
    """The entry offsets, in libtorch, of every kernel a forbidden rule of the catalog names."""
    kernels = {k for spec in catalog().values() for rule in spec.forbidden for k in rule.native}
    found: set[int] = set()
    for name in kernels:
        found.update(kernel_symbols.offsets(kernel_symbols.library(), name))
    return sorted(found)


def open_counters(count: int, offsets: list[int], base: str) -> tuple[list[int], list[str]]:
    """At least `count` counters: every offset on every CPU, on as many fresh groups as it takes."""
    fds: list[int] = []
    groups: list[str] = []
    while len(fds) < count:
        group = os.path.join(base, f"counter-closes-{os.getpid()}-{len(groups)}")
        os.mkdir(group)
        groups.append(group)
        for offset in offsets:
            fds += native_watch._open(kernel_symbols.library(), offset, group, ())
            if len(fds) >= count:
                break
    return fds, groups


def forks_while(work) -> tuple[float, list[float]]:
    """Run `work()` while a thread forks a child every 2 ms; (work's seconds, each fork's seconds),
    the forks counted until a second after the work ends (its removals may still be under way)."""
    waits: list[float] = []
    stop = threading.Event()

    def fork_often() -> None:
        while not stop.is_set():
            t0 = time.perf_counter()
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
            waits.append(time.perf_counter() - t0)
            time.sleep(0.002)

    forker = threading.Thread(target=fork_often)
    forker.start()
    time.sleep(0.2)
    t0 = time.perf_counter()
    work()
    took = time.perf_counter() - t0
    time.sleep(1.0)
    stop.set()
    forker.join()
    return took, waits


def in_a_row(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def paced(fds: list[int]) -> None:
    for fd in fds:
        keeper.close(fd)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--counters", type=at_least(1), default=80)
    ap.add_argument("--runs", type=at_least(1), default=2)
    args = ap.parse_args()
    problem = native_watch.unavailable()
    base = hierarchies.bases().get("perf_event")
    if problem or not base:
        raise SystemExit(f"counter_closes: the native watch cannot count here ({problem or 'no perf_event hierarchy'})")
    offsets = kernel_offsets()
    waited = settle()
    print(f"{args.counters} counters ({len(offsets)} kernel entries of the catalog's forbidden rules), "
          f"closed {args.runs} times each way; pause after a paced close {keeper.PAUSE_S * 1e3:g} ms; "
          f"load average {os.getloadavg()[0]:.1f} (after waiting {waited:.0f} s for earlier graders' counters)")
    figures: dict[str, list[tuple[float, float, float]]] = {"in a row": [], "paced": []}
    for _ in range(args.runs):
        for label, close in (("in a row", in_a_row), ("paced", paced)):
            fds, groups = open_counters(args.counters, offsets, base)
            took, waits = forks_while(lambda close=close, fds=fds: close(fds))
            for group in groups:
                os.rmdir(group)
            waited = sum(w for w in waits if w > SLOW_FORK_S)
            figures[label].append((took, max(waits), waited))
            print(f"  {label:9s} closes took {took:6.2f} s; longest fork {max(waits) * 1e3:7.0f} ms; forks waited "
                  f"{waited:5.2f} s in all ({len(waits)} forks)")
    row, pace = ({k: statistics.median(x[i] for x in v) for i, k in enumerate(("took", "longest", "waited"))}
                 for v in figures.values())
    print(f"medians: in a row, longest fork {row['longest'] * 1e3:.0f} ms, forks waited {row['waited']:.2f} s; "
          f"paced, {pace['longest'] * 1e3:.0f} ms and {pace['waited']:.2f} s")
    print(f"ratios (in a row / paced): longest fork {row['longest'] / pace['longest']:.1f}x, "
          f"forks' wait in all {row['waited'] / max(pace['waited'], 1e-9):.1f}x; the closes took "
          f"{row['took']:.2f} s in a row and {pace['took']:.2f} s paced")


if __name__ == "__main__":
    main()
