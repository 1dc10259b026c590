"""How far a correct function stays from the loads guard (grader.timing.guards.loads_match):

    .venv/bin/python benchmarks/load_guard_noise.py [--checks 20] [--budget 1.0] [--against TREE]

Runs the performance check of the worked multi_head_attention `--checks` times in one warm
sandbox, with a short budget as the CUDA fallback test does (two loads a check: the warm-up's and
one round's), and prints, from the CPU time each load of the same inputs cost the student's child
and the clean child:
- each round load's ratio (student / clean): median, 90th percentile, maximum;
- how many checks the guard's rule flags on the check's own loads (before any confirming loads);
- how many checks were flagged in the end (the verdict the student would get).
With --against TREE (a `git worktree` of an older commit, say), the same for that checkout in a
process of its own, alternately, with the same Python, side by side. Timings on a shared machine
move with its load, which is printed.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from arguments import at_least, checkout, seconds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from grader.timing import guards  # noqa: E402
from grader.timing.records import Measurement  # noqa: E402

# Run in a checkout's folder with that checkout first on the path; prints one JSON line per check.
CHECKS = """
import json, sys
from grader.catalog import select
from grader.config import load_config
from grader.pipeline.engine import grade, limits_from
from grader.sandbox.runner import Sandbox
from grader.timing import policy
from grader.timing.config import with_overrides
seen = []
judge = policy.judge
def recording(m, *args, **kwargs):
    seen.append(m)
    return judge(m, *args, **kwargs)
policy.judge = recording
config = load_config("autograde.toml", env={})
cfg = with_overrides(config, enabled=True, device="cpu", budget_s=float(sys.argv[2]))
with Sandbox(limits_from(config)) as sandbox:
    grade("solutions", select(["attention.causal_mask"]), config, sandbox=sandbox)
    for _ in range(int(sys.argv[1])):
        (e,) = grade("solutions", select(["attention.multi_head_attention"]), cfg, sandbox=sandbox).exercises
        (p,) = e.performance
        m = seen[-1]
        print(json.dumps({"loads": [[a, c] for a, _, c in m.loads], "own": m.rounds + 1,
                          "flag": p.details.get("flag", "")}), flush=True)
"""


def measure(tree: str, checks: int, budget: float) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": tree}
    out = subprocess.run([sys.executable, "-c", CHECKS, str(checks), str(budget)], cwd=tree, env=env,
                         capture_output=True, text=True, timeout=60 + 20 * checks)
    if out.returncode:
        raise SystemExit(f"{tree}: the checks failed:\n{out.stderr[-2000:]}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def flags(loads: list[list[float]]) -> bool:
    """Whether the guard (this checkout's grader.timing.guards.loads_match) objects to these loads."""
    return bool(guards.loads_match(Measurement("cpu", 1, "cpu", loads=tuple((a, a, c) for a, c in loads))))


def summary(results: list[dict]) -> dict[str, str]:
    ratios = sorted(a / c for r in results for a, c in r["loads"][1:r["own"]] if c > 0)
    pick = lambda q: ratios[min(len(ratios) - 1, int(q * len(ratios)))]    # noqa: E731
    return {"checks": str(len(results)),
            "round loads": str(len(ratios)),
            "ratio median": f"{pick(0.5):.2f}", "ratio p90": f"{pick(0.9):.2f}", "ratio max": f"{ratios[-1]:.2f}",
            "flagged on own loads": str(sum(flags(r["loads"][:r["own"]]) for r in results)),
            "flagged in the end": str(sum(r["flag"] == "loads match" for r in results)),
            "flagged by another guard": str(sum(r["flag"] not in ("", "loads match") for r in results))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=at_least(1), default=20)
    parser.add_argument("--budget", type=seconds, default=1.0)
    parser.add_argument("--against", metavar="TREE", type=checkout,
                        help="another checkout, measured alternately beside this one")
    args = parser.parse_args()
    trees = [ROOT] + ([args.against] if args.against else [])
    load = os.getloadavg()[0]
    results = {tree: [] for tree in trees}
    half = max(1, args.checks // 2)
    for start in range(0, args.checks, half):            # alternately, in halves
        for tree in trees:
            results[tree] += measure(tree, min(half, args.checks - start), args.budget)
    names = [os.path.basename(t.rstrip("/")) or t for t in trees]
    print(f"loads guard on a correct multi_head_attention, budget {args.budget:g} s, load average {load:.1f}\n")
    print(f"  {'':<28}" + "".join(f"{n:>14}" for n in names))
    rows = {tree: summary(r) for tree, r in results.items()}
    for key in rows[ROOT]:
        print(f"  {key:<28}" + "".join(f"{rows[t][key]:>14}" for t in trees))
    print(f"\n(load average now {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
