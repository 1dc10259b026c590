"""The grader's own cost, measured side by side in one run:

    .venv/bin/python benchmarks/grader_cost.py [--perf] [--repeat 3]

1. process start: a bare `python -c pass`, `import torch`, `import grader.cli` (what every
   `grader` command pays before it does anything), and starting the sandbox's warm zygote
   (a second Python that imports torch once, then forks one child per exercise);
2. a full `grader check` of solutions/ (a subprocess writing the JSON report); with --perf,
   the same again with the performance checks on (`grader check --perf`);
3. per-exercise overhead: grading one cheap exercise through the engine with a warm sandbox,
   against calling the worked solution on the same cases directly in this process.

Each line gives the median wall time over the repeats and its ratio to a baseline named on the
line. Timings on a shared machine move with its load, which is printed too.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
PY = sys.executable


def wall(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PY, *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT})


def line(label: str, seconds: float, base: tuple[str, float] | None = None) -> None:
    ratio = f"{seconds / base[1]:9.1f}x {base[0]}" if base else ""
    shown = f"{seconds * 1e3:10.1f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:10.1f} us"
    print(f"  {label:<46} {shown}  {ratio}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--perf", action="store_true", help="also time a full check with performance checks on")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"grader cost on {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, median of {args.repeat}\n")

    print("1. process start")
    bare = wall(lambda: run("-c", "pass"), args.repeat)
    line("python -c pass", bare)
    torch_import = wall(lambda: run("-c", "import torch"), args.repeat)
    line("python -c 'import torch'", torch_import, ("bare start", bare))
    cli = wall(lambda: run("-c", "import grader.cli; grader.cli.build_parser()"), args.repeat)
    line("import grader.cli + build the parser", cli, ("bare start", bare))
    from grader.config import load_config
    from grader.pipeline.engine import limits_from
    from grader.sandbox.runner import Sandbox
    config = load_config(os.path.join(ROOT, "autograde.toml"), env={})

    def zygote():
        sb = Sandbox(limits_from(config))
        sb.start()
        sb.shutdown()
    line("sandbox zygote start (torch imported once)", wall(zygote, args.repeat), ("torch import", torch_import))

    print("\n2. full check of solutions/")
    from grader.catalog import catalog
    out = os.path.join(tempfile.mkdtemp(prefix="grader-cost-"), "results.json")
    check = ["-m", "grader", "check", "--submission", "solutions", "--format", "json", "--output", out]
    full = wall(lambda: run(*check), 1)
    line(f"grader check ({len(catalog())} exercises)", full, ("torch import", torch_import))
    line("  per exercise", full / len(catalog()))
    if args.perf:
        from grader.timing.specs import REGISTRY
        timed = sum(e in catalog() for e in REGISTRY)
        with_perf = wall(lambda: run(*check, "--perf"), 1)
        line(f"grader check --perf ({timed} performance checks)", with_perf, ("check without", full))
        line("  per performance check", (with_perf - full) / max(timed, 1))

    print("\n3. per-exercise overhead (warm sandbox)")
    from grader.pipeline.engine import build_cases, grade
    exercise = "attention.causal_mask"
    spec = catalog()[exercise]
    source = importlib.util.spec_from_file_location("solution_attention",
                                                    os.path.join(ROOT, "solutions", "attention.py"))
    module = importlib.util.module_from_spec(source)
    source.loader.exec_module(module)
    cases = build_cases(spec, None)
    fn = getattr(module, spec.function)
    direct = wall(lambda: [fn(*c.args, **c.kwargs) for c in cases], max(args.repeat, 5))
    line(f"causal_mask: its {len(cases)} cases, called directly", direct)
    with Sandbox(limits_from(config)) as sandbox:
        grade(os.path.join(ROOT, "solutions"), [spec], config, sandbox=sandbox)      # warm the zygote
        graded = wall(lambda: grade(os.path.join(ROOT, "solutions"), [spec], config, sandbox=sandbox),
                      max(args.repeat, 5))
    line("causal_mask: graded (child, wire, compare)", graded, ("direct calls", direct))
    print(f"\n(load average now {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
