"""Where the sandbox's time goes, step by step, for one trivial exercise (attention.causal_mask):

    .venv/bin/python benchmarks/sandbox_breakdown.py [--runs 10] [--exercise attention.causal_mask]

The exercise is graded `--runs` times through the real engine and the real sandbox. Only the
benchmark adds instruments, by wrapping the functions each step calls (nothing in the grader
is changed, and the grader pays nothing for them when it runs normally):
- in this process (the parent): the pipeline's steps, the child's folder and control group,
  the request to the zygote, every wire encode and decode, the judge, the teardown;
- in the zygote and every child forked from it (a zygote started with the same command line,
  which installs the same wrappers before it serves): the fork, each confinement layer
  (control group, session, each rlimit, the network and IPC namespaces, the private uid,
  Landlock), the tripwires, the student's import, each call, the reply's encoding. A child
  sends its spans (time.monotonic(), which is the same clock in every process) back inside
  the replies it sends anyway, under a key the parent ignores.
Each step's figure is the median over the runs of its total in one run, with the page faults its
thread took meanwhile that read nothing from disk (getrusage: a child's are mostly the copies of
the zygote's memory it writes to, and the zygote's code it first runs; the fork's are those of
a new child until its first line of Python, the interpreter's own after-fork work included).
Beside it, the same step done without the sandbox ("bare"): a fork of a Python that has not
imported torch, the module imported in this process, the function called directly, no
encoding... Timings on a shared machine move with its load, which is printed.
"""
from __future__ import annotations

import os
import resource
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
_spans: list[list] = []         # [label, start, end, page faults] (time.monotonic() seconds)
TRACE_KEY = "_breakdown_trace"


def _faults() -> int:
    """Page faults this thread has taken so far that needed no disk read: in a child forked from the
    zygote, mostly copies of the zygote's pages it writes to (copy on write)."""
    return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt


def _timed(owner, attr: str, label) -> None:
    """Replace owner.attr by a wrapper recording its span; `label` is a string or f(args, kwargs)."""
    original = getattr(owner, attr, None)
    if original is None:            # not in this checkout of the grader
        return

    def wrapper(*args, **kwargs):
        t0, f0 = time.monotonic(), _faults()
        try:
            return original(*args, **kwargs)
        finally:
            _spans.append([label(args, kwargs) if callable(label) else label, t0, time.monotonic(), _faults() - f0])
    wrapper.__wrapped__ = original
    setattr(owner, attr, wrapper)


# ---------------------------------------------------------------------------------- child side
def probe_zygote(control_fd: int) -> None:
    """The zygote's main, with the child-side instruments installed before it forks anyone."""
    import importlib
    import socket
    import types

    import torch

    from grader import threads
    from grader.sandbox import cgroups, child, confine, tripwires, wire, zygote

    real_fork, real_recv_fds = os.fork, socket.recv_fds

    forked = "fork: zygote -> child running"

    def recv_fds(*args, **kwargs):      # a child's spans start here, its fork's kept (it was forked ahead)
        got = real_recv_fds(*args, **kwargs)
        _spans[:] = [s for s in _spans if s[0] == forked] + [["zygote: request received", time.monotonic(),
                                                               time.monotonic(), 0]]
        return got

    def fork():
        t0 = time.monotonic()
        pid = real_fork()
        if pid == 0:        # none of the zygote's spans; a new process's count of faults starts at 0
            _spans[:] = [[forked, t0, time.monotonic(), _faults()]]
        return pid
    socket.recv_fds, os.fork = recv_fds, fork

    names = {resource.RLIMIT_AS: "rlimit: address space", resource.RLIMIT_FSIZE: "rlimit: file size",
             resource.RLIMIT_CORE: "rlimit: core dumps", resource.RLIMIT_NPROC: "rlimit: processes"}
    _timed(resource, "setrlimit", lambda a, k: names.get(a[0], "rlimit: other"))
    _timed(os, "setsid", "own session and process group")
    _timed(cgroups, "join", "control group: join")
    _timed(confine, "_vm_size", "rlimit: read VmSize")
    _timed(confine, "_drop_to", "private uid, capabilities dropped")
    _timed(confine, "_landlock", "Landlock ruleset built and applied")
    flags = {confine.CLONE_NEWNET: "network namespace", confine.CLONE_NEWIPC: "IPC namespace"}

    class _Libc:        # the namespaces are unshare() calls on libc: label them by flag
        def __init__(self, libc) -> None:
            self._libc = libc

        def unshare(self, flag):
            t0, f0 = time.monotonic(), _faults()
            try:
                return self._libc.unshare(flag)
            finally:
                _spans.append([flags.get(flag, f"unshare {flag:#x}"), t0, time.monotonic(), _faults() - f0])

        def __getattr__(self, name):
            return getattr(self._libc, name)
    real_libc = confine._libc
    confine._libc = lambda: _Libc(real_libc())
    _timed(confine, "_libc", "ctypes.CDLL(None)")
    for module, attr, label in (("mounts", "private_view", "mount namespace, private view"),):
        try:        # layers a checkout may not have
            _timed(importlib.import_module(f"grader.sandbox.{module}"), attr, label)
        except ImportError:
            pass
    _timed(child, "_staged", "child: staged files read")
    _timed(child, "confine", "confinement, all layers")
    _timed(child, "_load", "trusted substitutes imported")
    _timed(threads, "configure", "torch thread count")
    _timed(torch, "manual_seed", "torch.manual_seed")
    _timed(tripwires, "install", "tripwires installed")
    _timed(child, "_call", "call: in the child (snapshot, nets, function)")
    real_import, inside = importlib.import_module, [0]

    def outermost(fn):
        """The student's function timed where no other of theirs called it (a tokenizer's helper runs
        once per token: a span each would swell the reply they travel in past the wire's limit)."""
        def wrapper(*args, **kwargs):
            if inside[0]:
                return fn(*args, **kwargs)
            inside[0], t0, f0 = 1, time.monotonic(), _faults()
            try:
                return fn(*args, **kwargs)
            finally:
                inside[0] = 0
                _spans.append(["call: the student's function", t0, time.monotonic(), _faults() - f0])
        wrapper.__wrapped__ = fn
        return wrapper

    real_serve, student = child.serve, [""]

    def serve(sock, setup):             # the module this child is asked to import is the student's
        student[0] = setup.get("module", "")
        return real_serve(sock, setup)
    child.serve = serve

    def import_module(name, package=None):
        """The student's module: its import timed, its functions wrapped. Any other module imported
        by name (a tripwire resolving `torch.nn.LSTMCell`) is left alone: its time is its caller's."""
        if name != student[0] and not name.startswith("grader"):
            return real_import(name, package)
        t0, f0 = time.monotonic(), _faults()
        module = real_import(name, package)
        _spans.append([f"import {name}" if name.startswith("grader") else "student module imported",
                       t0, time.monotonic(), _faults() - f0])
        if name == student[0]:
            for attr in dir(module):        # the student's own functions: their time alone
                fn = getattr(module, attr)
                if isinstance(fn, types.FunctionType) and fn.__module__ == name:    # not their classes
                    setattr(module, attr, outermost(fn))
        return module
    importlib.import_module = import_module
    _timed(wire, "dumps", "wire: encode (child)")
    _timed(wire, "loads", "wire: decode (child)")
    real_send, real_main, entered = wire.send, child.main, []

    def main(*args, **kwargs):
        entered.append((time.monotonic(), _faults()))
        return real_main(*args, **kwargs)
    child.main = main

    def send(sock, obj):
        t0, f0 = time.monotonic(), _faults()
        if isinstance(obj, dict) and "ready" in obj and entered:
            _spans.append(["child: request in hand -> ready reply sent", entered[0][0], t0, f0 - entered[0][1]])
        if isinstance(obj, dict):       # spans so far travel in the reply the child sends anyway
            obj = {**obj, TRACE_KEY: [s for s in _spans]}
            _spans.clear()
        real_send(sock, obj)
        _spans.append(["wire: send (child, encode included)", t0, time.monotonic(), _faults() - f0])
    wire.send = send
    zygote.main(control_fd)


# --------------------------------------------------------------------------------- parent side
def _install_parent(runs: list[list]) -> None:
    """Wrappers in this process; every child's spans are added to the current run's."""
    import importlib
    import subprocess

    from grader.pipeline import engine, imports, run
    from grader.sandbox import cgroups, provision, runner, wire

    real_popen = subprocess.Popen
    entry = "from grader.sandbox.zygote import main"

    def popen(argv, *args, **kwargs):       # the same zygote command, with the child-side instruments
        code = argv[-1] if argv and isinstance(argv[-1], str) else ""
        if entry in code:
            argv = [*argv[:-1], code.replace(entry, f"sys.path.append({HERE!r}); "
                                                    "from sandbox_breakdown import probe_zygote as main")]
        return real_popen(argv, *args, **kwargs)
    runner.subprocess.Popen = popen
    for owner in (run, imports):
        _timed(owner, "make_workdir", "parent: child folder made")
        _timed(owner, "copy_submission", "parent: student files copied")
        _timed(owner, "remove_workdir", "parent: child folder removed")
    if hasattr(provision, "Staged"):        # a checkout whose children copy the submission's staged files
        _timed(provision.Staged, "for_child", "parent: student files staged (once a submission)")
    _timed(engine, "load_submission", "parent: submission read")
    _timed(engine, "remove_stale_workdirs", "parent: stale folders swept")
    _timed(engine.static, "forbidden_hits", "parent: static scan")
    _timed(engine, "build_cases", "parent: cases built")
    _timed(engine, "references", "parent: references computed")
    _timed(engine, "prepared", "parent: cases and references (kept per process)")
    _timed(imports, "_try_import", "import check: a whole child (open to close)")
    _timed(provision, "chown_tree", "parent: folder given to the private uid")
    _timed(provision, "read_paths", "parent: Landlock read paths listed")
    _timed(provision, "world_readable", "parent: read paths checked world-readable")
    _timed(cgroups, "for_child", "parent: control group created")
    for module, attr, label in (("native_watch", "open_watch", "parent: kernel counters of forbidden kernels opened"),
                                ("budgets", "limit_hit", "teardown: submission's memory budget checked")):
        try:        # layers a checkout may not have
            _timed(importlib.import_module(f"grader.sandbox.{module}"), attr, label)
        except ImportError:
            pass
    _timed(runner.socket, "send_fds", "parent: request sent to the zygote")
    _timed(runner.Sandbox, "open", "open: request to ready child (parent's wait)")
    _timed(runner.Session, "call", "call: round trip (parent)")
    _timed(runner.Session, "close", "teardown: close (exit, kill, group, uid)")
    _timed(runner.Session, "kill", "teardown: kill (signals and waits)")
    _timed(cgroups.Group, "remove", "teardown: control group frozen, killed, removed")
    try:
        uids = importlib.import_module("grader.sandbox.uids")
        _timed(uids, "reserve", "parent: private uid reserved")
        _timed(uids.PrivateUid, "end", "teardown: the private uid's processes killed")
    except ImportError:         # a checkout before grader.sandbox.uids
        _timed(runner, "_kill_uid", "teardown: the private uid's processes killed")
    _timed(runner.time, "sleep", "time.sleep() in the parent (waiting)")
    _timed(run, "judge", "parent: judge (compare, mistakes)")
    _timed(wire, "dumps", "wire: encode (parent)")
    _timed(wire, "loads", "wire: decode (parent)")
    real_recv = wire.recv

    def recv(*args, **kwargs):
        got = real_recv(*args, **kwargs)
        if isinstance(got, dict) and TRACE_KEY in got:
            runs[-1].extend(got.pop(TRACE_KEY))
        return got
    wire.recv = recv


def _bare(exercise: str, repeat: int) -> dict[str, float]:
    """The same steps without the sandbox, in seconds (medians)."""
    import importlib.util
    import shutil
    import statistics
    import subprocess
    import tempfile

    from grader.catalog import catalog
    from grader.pipeline.cases import build_cases, references
    from grader.sandbox import wire

    spec = catalog()[exercise]
    cases = build_cases(spec, None)
    fork_code = ("import os, time, statistics\nts = []\nfor _ in range(%d):\n    t0 = time.monotonic()\n"
                 "    pid = os.fork()\n    if pid == 0: os._exit(0)\n    os.waitpid(pid, 0)\n"
                 "    ts.append(time.monotonic() - t0)\nprint(statistics.median(ts))" % repeat)
    fork_bare = float(subprocess.run([sys.executable, "-I", "-c", fork_code], capture_output=True, text=True).stdout)
    fork_torch = float(subprocess.run([sys.executable, "-I", "-c", "import torch\n" + fork_code],
                                      capture_output=True, text=True).stdout)
    times, sys.dont_write_bytecode = [], True
    # the whole submission, as the child has it: a module may import another (transformer imports
    # attention), imported afresh with it each time, as in each child
    path_before = list(sys.path)
    with tempfile.TemporaryDirectory(prefix="breakdown-") as folder:
        solutions = os.path.join(ROOT, "solutions")
        for name in os.listdir(solutions):
            if name.endswith(".py"):
                shutil.copyfile(os.path.join(solutions, name), os.path.join(folder, name))
        path = os.path.join(folder, f"{spec.module}.py")
        sys.path.insert(0, folder)
        try:
            for i in range(repeat):
                t0 = time.monotonic()
                loader = importlib.util.spec_from_file_location(f"bare_{spec.module}_{i}", path)
                module = importlib.util.module_from_spec(loader)
                loader.loader.exec_module(module)
                times.append(time.monotonic() - t0)
                for name, loaded in list(sys.modules.items()):
                    if (getattr(loaded, "__file__", None) or "").startswith(folder + os.sep):
                        del sys.modules[name]
        finally:
            sys.path[:] = path_before
    fn = getattr(module, spec.function)
    refs = references(spec, cases)

    def median(f) -> float:
        out = []
        for _ in range(repeat):
            t0 = time.monotonic()
            f()
            out.append(time.monotonic() - t0)
        return statistics.median(out)
    direct = None if spec.driver else median(lambda: [fn(*c.args, **c.kwargs) for c in cases]) / len(cases)
    return {"fork bare": fork_bare,
            "fork with torch": fork_torch,
            "student module imported": statistics.median(times),
            "call: the student's function": direct,       # a driver's cases are not plain calls
            "wire: a reply encoded and decoded": median(lambda: [wire.loads(wire.dumps(r)) for r in refs]) / len(cases),
            "cases": len(cases)}


ORDER = [  # (label, what "bare" is, key of the bare figure or None), in the order a grade does them
    ("parent: stale folders swept", "", None), ("parent: submission read", "", None),
    ("parent: static scan", "", None),
    ("import check: a whole child (open to close)", "", None),
    ("parent: cases built", "", None), ("parent: references computed", "", None),
    ("parent: cases and references (kept per process)", "", None),
    ("parent: child folder made", "", None), ("parent: student files copied", "", None),
    ("parent: student files staged (once a submission)", "", None),
    ("parent: private uid reserved", "", None),
    ("parent: folder given to the private uid", "", None), ("parent: control group created", "", None),
    ("parent: Landlock read paths listed", "", None), ("parent: read paths checked world-readable", "", None),
    ("parent: request sent to the zygote", "", None),
    ("open: request to ready child (parent's wait)", "", None),
    ("zygote: request received", "", None),
    ("child: request in hand -> ready reply sent", "", None),
    ("fork: zygote -> child running", "fork of a Python without torch", "fork bare"),
    ("child: staged files read", "", None),
    ("confinement, all layers", "", None),
    ("control group: join", "", None), ("own session and process group", "", None),
    ("rlimit: read VmSize", "", None), ("rlimit: address space", "", None), ("rlimit: file size", "", None),
    ("rlimit: core dumps", "", None), ("network namespace", "", None), ("IPC namespace", "", None),
    ("mount namespace, private view", "", None), ("rlimit: processes", "", None),
    ("private uid, capabilities dropped", "", None),
    ("Landlock ruleset built and applied", "", None), ("ctypes.CDLL(None)", "", None),
    ("trusted substitutes imported", "", None), ("torch thread count", "", None),
    ("torch.manual_seed", "", None), ("tripwires installed", "", None),
    ("student module imported", "imported here, torch loaded", "student module imported"),
    ("call: round trip (parent)", "", None),
    ("call: in the child (snapshot, nets, function)", "", None),
    ("call: the student's function", "called directly, per case", "call: the student's function"),
    ("wire: encode (parent)", "", None), ("wire: decode (child)", "", None),
    ("wire: encode (child)", "reply encoded+decoded here, per case", "wire: a reply encoded and decoded"),
    ("wire: send (child, encode included)", "", None), ("wire: decode (parent)", "", None),
    ("parent: judge (compare, mistakes)", "", None),
    ("teardown: close (exit, kill, group, uid)", "", None),
    ("teardown: kill (signals and waits)", "", None), ("time.sleep() in the parent (waiting)", "", None),
    ("teardown: control group frozen, killed, removed", "", None),
    ("teardown: the private uid's processes killed", "", None),
    ("parent: child folder removed", "", None),
]


def measure(tree: str, exercise: str, runs: int) -> dict:
    """Grade `exercise` of `tree` (a checkout of the project: its grader and solutions) `runs`
    times with the instruments on: per run, each step's total and count, and the end-to-end time."""
    sys.path.insert(0, tree)
    spans_of: list[list] = [[]]
    _install_parent(spans_of)
    from grader import api
    from grader.catalog import catalog
    from grader.config import load_config
    from grader.pipeline.engine import grade

    config = load_config(os.path.join(tree, "autograde.toml"), env={})
    if exercise not in catalog():
        sys.exit(f"--exercise {exercise}: no such exercise in {tree}; `grader list` shows every id "
                 f"(attention.causal_mask is the trivial one)")
    spec = catalog()[exercise]
    load, totals = os.getloadavg()[0], []
    with api.sandbox(config) as sandbox:        # as a batch worker's: its tripwires made in the zygote
        grade(os.path.join(tree, "solutions"), [spec], config, sandbox=sandbox)       # warm the zygote;
        time.sleep(0.5)     # idle, it finishes putting its memory in huge pages (grader.sandbox.zygote)
        for _ in range(runs):
            _spans.clear()
            spans_of.append([])
            t0 = time.monotonic()
            result = grade(os.path.join(tree, "solutions"), [spec], config, sandbox=sandbox)
            totals.append(time.monotonic() - t0)
            spans_of[-1].extend(_spans)
            graded = result.exercises[0]
            if graded.points != graded.max_points:
                sys.exit(f"{exercise}'s worked solution in {tree} did not pass ({graded.points:g} of "
                         f"{graded.max_points:g}): {graded.message}")
    sums, counts, faults = [], [], []
    for spans in spans_of[1:]:
        sums.append({})
        counts.append({})
        faults.append({})
        for label, t0, t1, taken in spans:
            sums[-1][label] = sums[-1].get(label, 0.0) + (t1 - t0)
            counts[-1][label] = counts[-1].get(label, 0) + 1
            faults[-1][label] = faults[-1].get(label, 0) + taken
    return {"tree": tree, "sums": sums, "counts": counts, "faults": faults, "totals": totals, "load": load,
            "bare": _bare(exercise, max(runs, 10))}


def _table(results: list[dict], exercise: str) -> None:
    import statistics

    def median_of(result, label):
        total = statistics.median(r.get(label, 0.0) for r in result["sums"])
        count = statistics.median(c.get(label, 0) for c in result["counts"])
        return total, (total / count if count > 1 else None)
    first, bare = results[0], results[0]["bare"]
    children = statistics.median(c.get("confinement, all layers", 0) for c in first["counts"])
    calls = statistics.median(c.get("call: round trip (parent)", 0) for c in first["counts"])
    runs = len(first["totals"])
    loads = ", ".join(f"{r['load']:.1f}" for r in results)
    print(f"{exercise} graded {runs} times per tree on {os.cpu_count()} CPUs (load average "
          f"{loads}); one grade = {children:g} children, "
          f"{calls:g} calls ({bare['cases']} cases)\nmedian per grade; 'per' is per child or per call; 'faults': "
          f"page faults without a disk read, in the thread of the step (in a child: mostly copies of the "
          f"zygote's pages it wrote to)\n")
    head = "".join(f" {os.path.basename(r['tree'].rstrip('/')) or r['tree']:>10} {'per':>8} {'faults':>6}"
                   for r in results)
    print(f"  {'step':<50}{head}   {'bare':>8}  what bare is")
    labels = [x[0] for x in ORDER] + [lbl for r in results for s in r["sums"] for lbl in s]
    extra = {x[0]: x[1:] for x in ORDER}
    seen = set()
    for label in labels:
        if label in seen or not any(label in s for r in results for s in r["sums"]):
            continue
        seen.add(label)
        what, key = extra.get(label, ("", None))
        cols = ""
        for r in results:
            total, per = median_of(r, label)
            taken = statistics.median(f.get(label, 0) for f in r["faults"])
            cols += (f" {total * 1e3:8.2f}ms " + (f"{per * 1e3:6.2f}ms" if per is not None else " " * 8)
                     + f" {taken:6.0f}")
        shown = f"{bare[key] * 1e3:6.2f}ms" if key and bare[key] is not None else f"{'-':>8}"
        top = label.startswith(("parent", "open", "import check", "teardown: close", "call: round"))
        print(f"  {('' if top else '  ') + label:<50}{cols}   {shown}  {what}")
    ends = "".join(f" {statistics.median(r['totals']) * 1e3:8.2f}ms {'':8} {'':6}" for r in results)
    print(f"\n  {'one grade of the exercise, end to end':<50}{ends}")
    print(f"  (a fork of a Python with torch imported, bare: {bare['fork with torch'] * 1e3:.2f} ms; "
          f"load average now {os.getloadavg()[0]:.1f})")


def main() -> int:
    import argparse
    import json
    import subprocess

    from arguments import at_least, checkout, in_turns

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=at_least(1), default=10)
    parser.add_argument("--exercise", default="attention.causal_mask", help="an exercise id (`grader list`)")
    parser.add_argument("--tree", type=checkout, default=ROOT, help="the checkout to measure (default: this one)")
    parser.add_argument("--against", metavar="TREE", type=checkout, help="another checkout (a `git worktree` of an "
                        "older commit): both are measured, in alternating rounds, and shown side by side")
    parser.add_argument("--rounds", type=at_least(1), default=3, help="with --against: rounds of --runs grades each")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.against:
        result = measure(args.tree, args.exercise, args.runs)
        if args.json:
            print(json.dumps(result))
        else:
            _table([result], args.exercise)
        return 0
    trees = [args.tree, args.against]
    merged = {t: {"tree": t, "sums": [], "counts": [], "faults": [], "totals": [], "loads": []} for t in trees}
    for tree in in_turns(trees, args.rounds):
        out = subprocess.run([sys.executable, __file__, "--json", "--tree", tree, "--runs", str(args.runs),
                              "--exercise", args.exercise], capture_output=True, text=True)
        if out.returncode:
            sys.exit(f"measuring {tree} failed:\n{out.stderr.strip()[-2000:]}")
        got = json.loads(out.stdout.splitlines()[-1])
        for key in ("sums", "counts", "faults", "totals"):
            merged[tree][key] += got[key]
        merged[tree]["loads"].append(got["load"])
        merged[tree]["bare"] = got["bare"]
    for r in merged.values():
        r["load"] = max(r["loads"])
    _table(list(merged.values()), args.exercise)
    return 0


if __name__ == "__main__":
    sys.exit(main())
