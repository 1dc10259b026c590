"""The capstone case of transformer.transformer_forward: what it costs, and whether it still tells
a model that learns from one that cannot.

    .venv/bin/python benchmarks/capstone_cost.py [--seeds 1,2,3,4,5,6,7,8] [--against TREE]

1. power: for each seed, the capstone's training (grader.sandbox.trusted.capstone_training.train,
   the grader's layers standing in and wrapped as in the child, under the sandbox's operator watch
   as in the child) of the worked solution and of the known mistake "positional encoding not added"
   (tests/fixtures/mistakes/transformer.py: transformer_forward__no_pe); each held-out accuracy
   against the bar, and the margins: the worst solution above it, the best no-PE model below it;
2. cost: CPU seconds of one training, and the capstone case graded through the real engine and
   sandbox (its wall time in the report).
With --against, the same for another checkout (a `git worktree` of an older commit), each in a
subprocess of its own, side by side. Timings move with the machine's load, which is printed.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

from arguments import at_least, checkout, whole_numbers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXERCISE = "transformer.transformer_forward"


def _models(tree: str, spec):
    """(solution's transformer_forward, the no-PE variant), the spec's substitutes in place as in the child."""
    sys.path.insert(0, os.path.join(tree, "solutions"))
    solution = importlib.import_module("transformer")
    path = os.path.join(tree, "solutions", "transformer.py")
    loader = importlib.util.spec_from_file_location("transformer_no_pe", path)
    no_pe = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(no_pe)
    source = open(os.path.join(tree, "tests", "fixtures", "mistakes", "transformer.py"), encoding="utf-8").read()
    wanted = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)
              and n.name in ("_model", "transformer_forward__no_pe")]
    exec(compile(ast.Module(body=wanted, type_ignores=[]), "mistakes/transformer.py", "exec"), no_pe.__dict__)
    try:                # each substitute wrapped as the child wraps it
        from grader.sandbox.substitutes import recorded
    except ImportError:     # a checkout from before 2026-12-07, where the child held it
        from grader.sandbox.child import _recorded as recorded
    for module in (solution, no_pe):
        for name, ref in spec.depends.items():
            mod, _, attr = ref.partition(":")
            setattr(module, name, recorded(name, getattr(importlib.import_module(mod), attr), set()))
    return solution.transformer_forward, no_pe.transformer_forward__no_pe


def measure(tree: str, seeds: list[int], graded: int) -> dict:
    sys.path.insert(0, tree)
    import dataclasses

    from grader import threads
    from grader.catalog import catalog
    from grader.catalog.judges import capstone as judge
    from grader.config import load_config
    from grader.pipeline.engine import grade
    from grader.sandbox.trusted import capstone_training as training
    from grader.sandbox.tripwires import AtenWatch, Hits

    threads.configure(1)                    # as in the child
    spec = catalog()[EXERCISE]
    rules = [dataclasses.asdict(r) for r in spec.forbidden]
    out = {"tree": tree, "load": os.getloadavg()[0], "accuracy": {}, "cpu": [], "threshold": None}
    for name, forward in zip(("solution", "no positional encoding"), _models(tree, spec)):
        accs = []
        for seed in seeds:
            cfg = training.task(seed)
            t0 = time.process_time()
            with AtenWatch(rules, Hits()):
                trained = training.train(forward, cfg)
            out["cpu"].append(time.process_time() - t0)
            ref = judge.reference(cfg)
            accs.append(float((trained["logits"].argmax(-1) == ref["tgt_out"]).double().mean()))
            out["threshold"] = ref["threshold"]
        out["accuracy"][name] = accs
    only = dataclasses.replace(spec, cases=lambda gen: [c for c in spec.cases(gen) if "capstone" in c.kwargs])
    config = load_config(os.path.join(tree, "autograde.toml"), env={})
    out["graded"] = []
    for _ in range(graded):
        result = grade(os.path.join(tree, "solutions"), [only], config).exercises[0]
        assert result.points == result.max_points, result.message
        out["graded"].append(result.cases[0].seconds)
    return out


def _show(results: list[dict], seeds: list[int]) -> None:
    names = [os.path.basename(r["tree"].rstrip("/")) for r in results]
    loads = ", ".join(f"{r['load']:.1f}" for r in results)
    print(f"capstone of {EXERCISE}, seeds {','.join(map(str, seeds))}, load average {loads}; "
          f"bar {results[0]['threshold']:.0%}\n")
    w = max(12, 6 * len(seeds) + 2)
    print(f"  {'':<34}" + "".join(f"{n:>{w}}" for n in names))
    for model in results[0]["accuracy"]:
        rows = [f"{' '.join(f'{a:.3f}' for a in r['accuracy'][model]):>{w}}" for r in results]
        print(f"  {model + ' (per seed)':<34}" + "".join(rows))
    for label, fn in (("margin: worst solution - bar", lambda r: min(r["accuracy"]["solution"]) - r["threshold"]),
                      ("margin: bar - best no-PE model",
                       lambda r: r["threshold"] - max(r["accuracy"]["no positional encoding"]))):
        print(f"  {label:<34}" + "".join(f"{fn(r):>+{w}.3f}" for r in results))
    print(f"  {'CPU s per training (watched)':<34}"
          + "".join(f"{statistics.median(r['cpu']):>{w}.2f}" for r in results))
    print(f"  {'capstone case graded, wall s':<34}" + "".join(f"{statistics.median(r['graded']):>{w}.2f}"
                                                        for r in results))
    print(f"\n(load average now {os.getloadavg()[0]:.1f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=whole_numbers, default="1,2,3,4,5,6,7,8",
                        help="the capstone task's seeds, comma-separated")
    parser.add_argument("--graded", type=at_least(1), default=3,
                        help="times the capstone case is graded through the sandbox")
    parser.add_argument("--tree", type=checkout, default=ROOT)
    parser.add_argument("--against", metavar="TREE", type=checkout)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    seeds = args.seeds
    if not args.against:
        result = measure(args.tree, seeds, args.graded)
        print(json.dumps(result) if args.json else "", end="\n" if args.json else "")
        if not args.json:
            _show([result], seeds)
        return 0
    results = []
    for tree in (args.tree, args.against):
        p = subprocess.run([sys.executable, __file__, "--json", "--tree", tree, "--seeds", ",".join(map(str, seeds)),
                            "--graded", str(args.graded)], capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"measuring {tree} failed:\n{p.stderr.strip()[-2000:]}")
        results.append(json.loads(p.stdout.splitlines()[-1]))
    _show(results, seeds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
