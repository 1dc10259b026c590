"""Cluster throughput: the same class through the local pool and Dask LocalClusters of 1 and 2 workers.

    .venv/bin/python benchmarks/cluster_throughput.py [--count 60] [--jobs N] [--keep DIR] [--names ...]

1. Writes COUNT full-curriculum submissions: copies of solutions/, each module with a comment
   naming the student, so no two hash alike (every one is graded, none skipped).
2. Runs the real command three times on them, each into a fresh --out:
     grader batch SUBS --out OUT --jobs N            (the local pool, N workers; default: the cores)
     grader batch SUBS --out OUT --cluster local:1   (a Dask LocalCluster of one worker process)
     grader batch SUBS --out OUT --cluster local:2
   and prints submissions per minute of wall time (the whole command, start-up included) and the
   ratio of each to the local pool, from this one run.
3. The per-task overhead Dask adds, measured on a LocalCluster of one worker with a task that does
   nothing but carry what a grading task carries: one real packed submission (transfer.pack of a
   copy of solutions/) in, one real result's JSON (from the gradebook of step 2) out. Sequential
   round trips (submit, run, result back: scheduling + transfer + result) and, with the whole batch
   in flight, the cost per task when they overlap; printed in milliseconds.
Other processes' load skews every figure; the load average is printed before and after.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from arguments import at_least

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def make_class(folder: Path, count: int) -> None:
    for i in range(count):
        student = folder / f"student{i:03d}"
        student.mkdir(parents=True)
        for module in sorted((ROOT / "solutions").glob("*.py")):
            (student / module.name).write_text(f"# student{i:03d}\n" + module.read_text())


def run(subs: Path, out: Path, names: list[str], *flags: str) -> float:
    cmd = [sys.executable, "-m", "grader", "batch", str(subs), "--out", str(out), *names, *flags]
    env = {k: v for k, v in os.environ.items() if k != "GRADER_SECRET_SEED"}
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    wall = time.monotonic() - start
    if proc.returncode not in (0, 3):
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall


def one_result_json(out: Path) -> str:
    db = sqlite3.connect(out / "gradebook.sqlite")
    try:
        return db.execute("SELECT result FROM submissions LIMIT 1").fetchone()[0]
    finally:
        db.close()


def carry(packed, result_json: str) -> dict:
    """A task that grades nothing: the size of a grading task's argument in, of its reply out."""
    return {"result_json": result_json, "error": "", "seconds": 0.0, "worker": ""}


def dask_overhead(sample: Path, result_json: str, n: int) -> tuple[float, float, int]:
    """(ms per sequential round trip, ms per task with all n in flight, packed bytes)."""
    from distributed import Client, LocalCluster, wait

    from grader.frontends.batch.transfer import pack

    packed = pack(str(sample))
    size = len(b"".join(e.get("data") or b"" for e in packed["entries"]))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.submit(carry, packed, result_json, pure=False).result()          # warm
        times = []
        for _ in range(n):
            start = time.perf_counter()
            client.submit(carry, packed, result_json, pure=False).result()
            times.append(time.perf_counter() - start)
        start = time.perf_counter()
        futures = [client.submit(carry, packed, result_json, pure=False) for _ in range(n)]
        wait(futures)
        client.gather(futures)
        overlapped = (time.perf_counter() - start) / n
    return 1000 * statistics.median(times), 1000 * overlapped, size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=at_least(1), default=60, help="submissions (default 60)")
    ap.add_argument("--jobs", type=at_least(1), default=len(os.sched_getaffinity(0)), help="local pool workers")
    ap.add_argument("--names", nargs="*", default=[], help="exercises or modules (default: the whole curriculum)")
    ap.add_argument("--tasks", type=at_least(1), default=100, help="trivial tasks for the overhead figure")
    ap.add_argument("--keep", metavar="DIR", help="work here and keep it (default: a temporary folder)")
    args = ap.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="cluster-bench-"))
    subs = work / "submissions"
    shutil.rmtree(work / "submissions", ignore_errors=True)
    make_class(subs, args.count)
    what = ", ".join(args.names) or "the whole curriculum"
    print(f"{args.count} submissions ({what}), {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")

    runs = [("local pool", ("--jobs", str(args.jobs))), ("LocalCluster, 1 worker", ("--cluster", "local:1")),
            ("LocalCluster, 2 workers", ("--cluster", "local:2"))]
    rates = {}
    for i, (label, flags) in enumerate(runs):
        out = work / f"out{i}"
        shutil.rmtree(out, ignore_errors=True)
        wall = run(subs, out, args.names, *flags)
        rates[label] = 60.0 * args.count / wall
        shown = " ".join(flags)
        print(f"  {label:<24} ({shown:<16}) {args.count} in {wall:7.1f} s = {rates[label]:6.1f} submissions/min"
              f" = {rates[label] / rates['local pool']:.2f}x the local pool")
    print(f"  load average after: {os.getloadavg()[0]:.2f}")

    sequential, overlapped, size = dask_overhead(subs / "student000", one_result_json(work / "out0"), args.tasks)
    print(f"Dask's per-task overhead ({args.tasks} tasks carrying a packed submission of {size >> 10} KiB in and a "
          f"result of {len(one_result_json(work / 'out0')) >> 10} KiB out, LocalCluster of 1 worker):")
    print(f"  {sequential:.1f} ms per round trip (submit, schedule, transfer, run, result back; median), "
          f"{overlapped:.1f} ms per task with all {args.tasks} in flight")
    per_submission = 60.0 / rates["LocalCluster, 1 worker"]
    print(f"  = {100 * sequential / 1000 / per_submission:.2f}% of the {per_submission:.1f} s a submission takes "
          "on one worker")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
