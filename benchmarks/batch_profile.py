"""Where a batch's CPU goes, process by process and library by library, sampled by `perf`:

    .venv/bin/python benchmarks/batch_profile.py [--n 20] [--jobs 2] [--top 25] [--functions ROLE]

`grader batch --jobs J` grades N copies of the worked solutions (solutions/, each file given a first
line of its own) while `perf record -a` samples every CPU of the machine (--frequency times a second),
and this process reads /proc four times a second to learn the batch's processes by their parents.
Every sample is given to the role of the process (and thread) it hit:
- grader batch: the parent, which writes each student's feedback and gradebook row, and the class
  report; multiprocessing's forkserver and resource tracker;
- worker, main thread: it receives a submission and sends its result back;
- worker, other threads: the engine grades exercises on these (references, judging, the wire);
- zygote: it forks each confined child; keeper: what holds the sandbox's kernel counters;
- confined child: any other process that ran Python meanwhile. A child lives for tens of ms, too
  short for /proc to be read in time; nothing else on a quiet machine runs Python;
- kernel threads (kworker, rcu, ksoftirqd: namespaces and control groups torn down), other
  processes, and the idle CPUs.
Printed: core-s a submission by role; then by role and library (the kernel, libtorch, libpython,
libgomp's OpenMP threads...); with --functions ROLE, that role's functions. What the students'
own compute is, and what the overhead beyond it comes to, is batch_throughput.py's; this shows
where a batch's CPU lands, so a cost spread over processes can be found (a worker's threads that
started OpenMP teams were found so: libgomp, 1.4% of a batch).

Needs `perf` and the right to sample every CPU (root, or kernel.perf_event_paranoid <= 0).
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

PARENT, WORKER, THREADS, ZYGOTE, KEEPER, CHILD = ("grader batch", "worker, main thread", "worker, other threads",
                                                  "zygote", "keeper", "confined child")
KERNEL_THREADS, OTHER, IDLE = "kernel threads", "other processes", "idle"
ROLES = (PARENT, WORKER, THREADS, ZYGOTE, KEEPER, CHILD, KERNEL_THREADS, OTHER, IDLE)


@dataclass(frozen=True)
class Seen:
    """A process as /proc showed it the first time: its parent then (a process whose parent ended is
    given to init later) and its command line."""
    parent: int
    command: str


def processes() -> dict[int, Seen]:
    """Every process /proc shows now."""
    found = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        found[int(entry)] = Seen(parent, command)
    return found


def roles(batch: int, seen: dict[int, Seen]) -> dict[int, str]:
    """The role of each process descended from `batch` (grader batch's pid), from who started whom:
    the forkserver is grader batch's child and starts the workers; a worker starts its zygote and its
    keeper; what a zygote starts is a confined child."""
    children = collections.defaultdict(list)
    for pid, s in seen.items():
        children[s.parent].append(pid)
    found = {batch: PARENT}
    for server in children[batch]:          # the forkserver, the resource tracker
        found[server] = PARENT
        for worker in children[server]:
            found[worker] = WORKER
            for own in children[worker]:
                found[own] = KEEPER if "keeper" in seen[own].command else ZYGOTE
                for child in children[own]:
                    found[child] = CHILD
    return found


def role_of(pid: int, tid: int, command: str, known: dict[int, str], me: int) -> str:
    """The role of one sample: the process (pid) and thread (tid) it hit, its command name."""
    if pid == 0:
        return IDLE
    if pid in known:
        return THREADS if known[pid] == WORKER and tid != pid else known[pid]
    if pid != me and command.startswith("python"):
        return CHILD
    if command.startswith(("kworker", "ksoftirqd", "rcu_", "kdamond", "migration", "kswapd", "khugepaged")):
        return KERNEL_THREADS
    return OTHER


def submissions(folder: str, n: int) -> None:
    """N students, each the worked solutions with a first line of its own (a distinct submission)."""
    files = {path.name: path.read_text() for path in sorted(Path(ROOT, "solutions").glob("*.py"))}
    for i in range(n):
        student = Path(folder, f"student{i:03d}")
        student.mkdir(parents=True)
        for name, text in files.items():
            (student / name).write_text(f"# student{i:03d}\n{text}")


def record(work: str, n: int, jobs: int, frequency: int) -> tuple[dict[int, str], float, str]:
    """Grade under perf; (the batch's processes by role, wall seconds, the perf data file)."""
    subs, out, data = os.path.join(work, "subs"), os.path.join(work, "out"), os.path.join(work, "batch.data")
    submissions(subs, n)
    perf = subprocess.Popen(["perf", "record", "-q", "-a", "-e", "cpu-clock", "-F", str(frequency), "-o", data],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)
    if perf.poll() is not None:
        sys.exit(f"perf record could not sample every CPU: {perf.stderr.read().decode().strip()[-600:]}\n"
                 "run as root, or lower kernel.perf_event_paranoid to 0")
    start = time.monotonic()
    log = open(os.path.join(work, "batch.log"), "w+")      # its progress lines: a pipe would fill up, then block it
    batch = subprocess.Popen([sys.executable, "-m", "grader", "batch", subs, "--out", out, "--jobs", str(jobs)],
                             cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    seen: dict[int, Seen] = {}
    while batch.poll() is None:
        for pid, s in processes().items():
            seen.setdefault(pid, s)
        time.sleep(0.25)
    wall = time.monotonic() - start
    perf.send_signal(signal.SIGINT)
    perf.wait()
    if batch.returncode not in (0, 3):
        log.seek(0)
        sys.exit(f"grader batch failed ({batch.returncode}):\n{log.read()[-3000:]}")
    log.close()
    return roles(batch.pid, seen), wall, data


# "COMMAND PID/TID ADDRESS FUNCTION (LIBRARY)": a command name may hold spaces and slashes
# (kworker/u8:0), a C++ function name spaces and parentheses.
_SAMPLE = re.compile(r"^\s*(?P<command>.*?)\s+(?P<pid>\d+)/(?P<tid>\d+)\s+[0-9a-f]+\s+(?P<code>.*)$")


def parse_sample(line: str) -> tuple[int, int, str, str, str] | None:
    """(pid, tid, command name, function, library) of one line of `perf script`; None for another line."""
    m = _SAMPLE.match(line)
    if m is None:
        return None
    function, _, library = m["code"].rpartition(" (")
    return (int(m["pid"]), int(m["tid"]), m["command"], function.strip() or "[unknown]",
            os.path.basename(library.rstrip(")")) or "[unknown]")


def samples(data: str):
    """Each sample of the perf data file, as parse_sample gives it."""
    p = subprocess.run(["perf", "script", "-i", data, "-F", "comm,pid,tid,ip,sym,dso"], capture_output=True,
                       text=True)
    if p.returncode != 0:
        sys.exit(f"perf script failed: {p.stderr.strip()[-600:]}")
    for line in p.stdout.splitlines():
        sample = parse_sample(line)
        if sample is not None:
            yield sample


def report(known: dict[int, str], data: str, n: int, frequency: int, top: int, functions: str | None) -> None:
    by_role, by_library, by_function = collections.Counter(), collections.Counter(), collections.Counter()
    me = os.getpid()
    for pid, tid, command, function, library in samples(data):
        role = role_of(pid, tid, command, known, me)
        by_role[role] += 1
        by_library[(role, library)] += 1
        if role == functions:
            by_function[(function[:70], library)] += 1
    total = sum(by_role.values())
    if not total:
        sys.exit("perf recorded no sample")
    each = 1 / (frequency * n)              # core-s a submission that one sample stands for
    print(f"  {'role':<24} {'core-s a submission':>20} {'share':>7}")
    for role in ROLES:
        if by_role[role]:
            print(f"  {role:<24} {by_role[role] * each:>20.3f} {by_role[role] / total:>7.1%}")
    print(f"  {'all':<24} {total * each:>20.3f}")
    print(f"\n  {'role':<24} {'library':<40} {'core-s a submission':>20}")
    for (role, library), count in by_library.most_common(top):
        print(f"  {role:<24} {library[:40]:<40} {count * each:>20.3f}")
    if functions:
        print(f"\n  {functions}: {'function':<70} {'library':<26} {'core-s a submission':>20}")
        for (function, library), count in by_function.most_common(top):
            print(f"  {'':<{len(functions) + 1}} {function:<70} {library[:26]:<26} {count * each:>20.3f}")


def main() -> None:
    sys.path.insert(0, HERE)
    from arguments import at_least

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=at_least(1), default=20, help="submissions graded (default 20)")
    parser.add_argument("--jobs", type=at_least(1), default=2, help="grader batch's workers (default 2)")
    parser.add_argument("--frequency", type=at_least(1), default=499, help="samples a second on each CPU")
    parser.add_argument("--top", type=at_least(1), default=25, help="rows of the library and function tables")
    parser.add_argument("--functions", choices=ROLES, metavar="ROLE",
                        help=f"list the functions of one role: {', '.join(repr(r) for r in ROLES)}")
    args = parser.parse_args()
    if shutil.which("perf") is None:
        sys.exit("perf is not installed (linux-tools / linux-perf): this benchmark samples the CPUs with it")
    print(f"load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="batch-profile-") as work:
        known, wall, data = record(work, args.n, args.jobs, args.frequency)
        print(f"grader batch --jobs {args.jobs}: {args.n} copies of solutions/ in {wall:.1f} s, sampled at "
              f"{args.frequency} Hz on {os.cpu_count()} CPUs")
        report(known, data, args.n, args.frequency, args.top, args.functions)
    print(f"  (load average now {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
