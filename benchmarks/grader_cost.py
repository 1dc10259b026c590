"""The grader's own cost, measured side by side in one run:

    .venv/bin/python benchmarks/grader_cost.py [--perf] [--repeat 3] [--against TREE]

1. process start: a bare `python -c pass`, `import torch`, `import grader.cli` with the parser
   `grader check` builds (and with every command's), and starting the sandbox's warm zygote (a
   second Python that imports torch once, then forks one child per exercise);
2. `grader check` of solutions/, whole and of one chapter (attention), as subprocesses writing the
   JSON report; the whole check again straight after one has ended (as a student checking again
   meets it); with --perf, the whole check again with the performance checks on;
3. per-exercise overhead: grading one cheap exercise (causal_mask) through the engine with a warm
   sandbox, against calling the worked solution on the same cases directly;
4. `grader batch`'s parent: the CPU it spends on one submission's result as a worker sends it (the
   worked solutions of the whole curriculum, graded once): parsed, its three feedback files
   written, its gradebook row committed; the median over 20.

Each line gives the median wall time over the repeats and its ratio to a baseline named on the
line. Every timed process starts once no earlier one's kernel counters are still held (`settle`),
but the check run straight after another, which meets the other's counters as they are offered to
it or closed (see grader/sandbox/keeper.py).
With --against TREE (a `git worktree` of an older commit, say), every figure is measured for
both checkouts, alternately, with the same Python, and shown side by side; a figure the older
checkout has not the code for (grader batch's parent before grader.frontends.batch.executors) is
n/a in its column, with the error that says what it lacks. Timings on a shared machine move with
its load, which is printed too.
"""
from __future__ import annotations

import argparse
import functools
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from arguments import at_least, checkout, in_turns

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable

# Run in a checkout's folder with that checkout first on the path; prints seconds on its last line.
ZYGOTE = """
import time
from grader.config import load_config
from grader.pipeline.engine import limits_from
from grader.sandbox.runner import Sandbox
sb = Sandbox(limits_from(load_config("autograde.toml", env={})))
t0 = time.perf_counter(); sb.start(); t = time.perf_counter() - t0; sb.shutdown(); print(t)
"""
PER_EXERCISE = """
import importlib.util, statistics, sys, time
from grader.catalog import catalog
from grader.config import load_config
from grader.pipeline.engine import build_cases, grade, limits_from
from grader.sandbox.runner import Sandbox
config, spec = load_config("autograde.toml", env={}), catalog()["attention.causal_mask"]
loader = importlib.util.spec_from_file_location("solution_attention", "solutions/attention.py")
module = importlib.util.module_from_spec(loader); loader.loader.exec_module(module)
cases, fn = build_cases(spec, None), getattr(module, spec.function)
def median(f, n):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    return statistics.median(ts)
direct = median(lambda: [fn(*c.args, **c.kwargs) for c in cases], 20)
with Sandbox(limits_from(config)) as sandbox:
    grade("solutions", [spec], config, sandbox=sandbox)          # warm the zygote; idle, it finishes
    time.sleep(0.5)                                               # putting its memory in huge pages
    graded = median(lambda: grade("solutions", [spec], config, sandbox=sandbox), %d)
print(len(cases), direct, graded)
"""

BATCH_PARENT = """
import io, json, os, statistics, tempfile, time
from grader import api
from grader.catalog import select
from grader.config import load_config
from grader.frontends.batch import run as batch
from grader.frontends.batch.discover import Entry
from grader.frontends.batch.executors import Done, Task
from grader.frontends.batch.gradebook import Gradebook
from grader.frontends.batch.progress import Progress
from grader.results import to_dict
config, specs = load_config("autograde.toml", env={}), select([])
sent = json.dumps(to_dict(api.grade("solutions", [s.id for s in specs], config)), sort_keys=True)
with tempfile.TemporaryDirectory(prefix="grader-cost-") as out:
    book = Gradebook(os.path.join(out, "gradebook.sqlite"))
    recorder = batch._Recorder(out, book, book.begin_run("s", [], 1, "t"), "s", specs, config, batch.Summary(),
                               Progress(21, 0, io.StringIO(), tty=False))
    def handle(i):
        t0 = time.process_time()
        recorder.done(Done(Task(f"s{i}", "solutions"), sent), Entry(f"s{i}", "solutions", "folder"), "h")
        return time.process_time() - t0
    handle(0)                   # imports, templates
    took = statistics.median(handle(i) for i in range(1, 21))
    book.close()
print(took)
"""


def run(tree: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PY, *args], cwd=tree, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": tree})


def settle(limit: float = 120.0) -> float:
    """Wait until no other process holds kernel counters (anon_inode:[perf_event]): a grader that has
    ended leaves its counters to be closed (by its keeper, or at an older tree's exit), and closing
    them stalls the opening of a new grader's (13.6 s for a full check instead of 4.3 s). So each
    timed run starts on a machine where no earlier run is still being cleaned up. A keeper that
    offers its counters to the next grader (grader.sandbox.keeper) is turned down, so that it closes
    them now rather than in a later run; and this checkout's keepers are told to close at once
    (SIGUSR1): while any other grader runs (a test suite's sandbox, another batch), a keeper waits
    up to its whole patience (60 s) first. Returns the wait."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit and (holders := counter_holders()):
        _hurry_keepers(holders)
        _decline_offers()
        time.sleep(0.5)
    return time.perf_counter() - t0


def _hurry_keepers(pids: list[int]) -> None:
    """SIGUSR1 to those of `pids` that run this checkout's keeper, which then close at once (a keeper
    of another checkout may not know the signal, which would end it without removing its folders)."""
    ours = os.path.realpath(os.path.join(ROOT, "grader", "sandbox", "keeper.py"))
    for pid in pids:
        command = _keeper_command(pid)
        if command and os.path.realpath(command[0]) == ours:
            try:
                os.kill(pid, signal.SIGUSR1)
            except OSError:
                continue


def _decline_offers() -> None:
    """Turn down every keeper's standing offer of its slots: each then closes its counters at once.
    The copies received here are closed here: the keeper's are the last."""
    keeper = _keeper()
    try:
        with open("/proc/net/unix") as f:
            names = [line.split()[-1] for line in f if len(line.split()) >= 8]
    except OSError:
        return
    for library in {n[1 + len(keeper.SPARES):] for n in names if n.startswith("@" + keeper.SPARES)}:
        keeper.adopt(library, lambda spare: None, dispose=lambda fds: [os.close(d) for d in fds])


@functools.cache
def _keeper():
    """This checkout's grader.sandbox.keeper, loaded from its file (it imports only the standard
    library): a benchmark may have another checkout's grader first on its path."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("_bench_keeper", os.path.join(ROOT, "grader", "sandbox", "keeper.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def counter_holders() -> list[int]:
    """The processes holding kernel counters that are to be closed: not this process, nor a grader it
    runs within (an ancestor: a test suite's own sandbox, say) or that grader's keeper. Those hold
    theirs while the grader lives, so waiting for them would wait the whole limit, every time."""
    within, found = _ancestors(), []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) in within:
            continue
        try:
            holds = any(os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[perf_event]"
                        for fd in os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            continue
        if holds and _keeper_of(pid) not in within:
            found.append(int(pid))
    return found


def _ancestors() -> set[int]:
    """This process and every process above it, up to (not including) pid 1."""
    found, pid = set(), os.getpid()
    while pid > 1 and pid not in found:
        found.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])     # after the name: state, then ppid
        except OSError:
            break
    return found


def _keeper_of(pid: str | int) -> int | None:
    """The grading process whose keeper `pid` is."""
    command = _keeper_command(pid)
    return command[1] if command else None


def _keeper_command(pid: str | int) -> tuple[str, int] | None:
    """(its keeper.py, the grading process it keeps for) where `pid` runs grader.sandbox.keeper, as
    `keeper.py FD PID`; else None."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return None
    argv = argv[:-1] if argv and not argv[-1] else argv
    if len(argv) >= 3 and argv[-3].endswith(b"grader/sandbox/keeper.py") and argv[-1].isdigit():
        return argv[-3].decode(errors="replace"), int(argv[-1])
    return None


def timed(tree: str, *args: str, again: bool = False) -> float:
    """Seconds of one run of `args` in `tree`, started once the machine has settled; `again`: straight
    after another such run (untimed) has ended, as a student checking again meets it: the earlier
    run's kernel counters are then being offered to it (grader.sandbox.keeper), or closed."""
    settle()
    for _ in range(2 if again else 1):     # the last run is the one timed
        t0 = time.perf_counter()
        p = run(tree, *args)
        if p.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(args)} in {tree} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return time.perf_counter() - t0


def printed(tree: str, code: str, older: list[str] | None = None) -> list[float] | None:
    """The numbers `code` printed last in `tree`. A failure ends the benchmark with its error, but
    where `older` is given and `tree` is the --against one: an older checkout may not have what the
    measurement uses (grader batch's executors came later than the sandbox), so its column says
    n/a and `older` gets the error's last line."""
    p = run(tree, "-c", code)
    if p.returncode and older is not None and tree != ROOT:
        older.append(f"{os.path.basename(tree.rstrip('/'))}: n/a, {(p.stderr.strip().splitlines() or ['?'])[-1]}")
        return None
    if p.returncode:
        raise SystemExit(f"in {tree}:\n{p.stderr[-2000:]}")
    return [float(x) for x in p.stdout.split()[-3:]]


def show(label: str, values: list[float | None], base: tuple[str, list[float]] | None = None) -> None:
    """One line: each tree's value (None: n/a in that tree) and its ratio to `base`'s value."""
    cols = ""
    for i, v in enumerate(values):
        if v is None:
            cols += f" {'n/a':>12}{'':8}"
            continue
        shown = f"{v * 1e3:9.1f} ms" if v >= 1e-3 else f"{v * 1e6:9.1f} us"
        ratio = f" {v / base[1][i]:6.1f}x" if base else " " * 8
        cols += f" {shown}{ratio}"
    print(f"  {label:<44}{cols}   {'x ' + base[0] if base else ''}", flush=True)


def median_over(trees: list[str], repeat: int, measure) -> list[float]:
    """measure(tree) -> seconds, `repeat` times per tree, the trees taking turns; medians per tree."""
    got: dict[str, list[float]] = {t: [] for t in trees}
    for t in in_turns(trees, repeat):
        got[t].append(measure(t))
    return [statistics.median(got[t]) for t in trees]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--perf", action="store_true", help="also time a full check with performance checks on")
    parser.add_argument("--repeat", type=at_least(1), default=3)
    parser.add_argument("--against", metavar="TREE", type=checkout,
                        help="another checkout, measured alternately beside this one")
    args = parser.parse_args()
    trees = [ROOT] + ([args.against] if args.against else [])
    names = "  ".join(f"{os.path.basename(t.rstrip('/')):>17}" for t in trees)
    print(f"grader cost on {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, median of {args.repeat}"
          f"\n  {'':<44} {names}\n")
    r = args.repeat

    print("1. process start")
    bare = median_over(trees, r, lambda t: timed(t, "-c", "pass"))
    show("python -c pass", bare)
    torch_import = median_over(trees, r, lambda t: timed(t, "-c", "import torch"))
    show("python -c 'import torch'", torch_import, ("bare start", bare))
    cli = median_over(trees, r, lambda t: timed(t, "-c", "import grader.cli as c, inspect; "
                                                "c.build_parser(['check'] if inspect.signature(c.build_parser)"
                                                ".parameters else None)"))
    show("import grader.cli + the parser of `check`", cli, ("bare start", bare))
    every = median_over(trees, r, lambda t: timed(t, "-c", "import grader.cli; grader.cli.build_parser()"))
    show("import grader.cli + every command's parser", every, ("bare start", bare))
    zygote = median_over(trees, r, lambda t: printed(t, ZYGOTE)[-1])
    show("sandbox zygote start (torch imported once)", zygote, ("torch import", torch_import))

    print("\n2. grader check of solutions/ (a process of its own, JSON report)")
    with tempfile.TemporaryDirectory(prefix="grader-cost-") as folder:
        check = ["-m", "grader", "check", "--submission", "solutions", "--format", "json",
                 "--output", os.path.join(folder, "results.json")]
        full = median_over(trees, r, lambda t: timed(t, *check))
        show("grader check (every exercise)", full, ("torch import", torch_import))
        again = median_over(trees, r, lambda t: timed(t, *check, again=True))
        show("grader check again, right after one", again, ("torch import", torch_import))
        chapter = median_over(trees, r, lambda t: timed(t, *check, "attention"))
        show("grader check attention (4 exercises)", chapter, ("torch import", torch_import))
        if args.perf:
            with_perf = median_over(trees, 1, lambda t: timed(t, *check, "--perf"))
            show("grader check --perf", with_perf, ("check without", full))

    print("\n3. per-exercise overhead (warm sandbox)")
    rows = {t: printed(t, PER_EXERCISE % max(r, 5)) for t in trees}
    direct, graded = [rows[t][1] for t in trees], [rows[t][2] for t in trees]
    show(f"causal_mask: its {int(rows[ROOT][0])} cases, called directly", direct)
    show("causal_mask: graded (child, wire, compare)", graded, ("direct calls", direct))

    print("\n4. grader batch's parent, one submission's result (CPU)")
    older: list[str] = []
    handled = [(printed(t, BATCH_PARENT, older) or [None])[-1] for t in trees]
    show("parsed, feedback written, row committed", handled)
    for line in older:
        print(f"  ({line})")
    print(f"\n(load average now {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
