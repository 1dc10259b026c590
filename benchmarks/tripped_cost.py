"""What a call of a forbidden Python function costs once it is tripped in place:

    .venv/bin/python benchmarks/tripped_cost.py [--calls 20000] [--rounds 5]

The sandbox's zygote trips every forbidden Python function of the catalog's rules in place
(grader.sandbox.tripped_code): each call runs a trampoline that records, makes a function of the
original code (which the audit hook sees) and calls it. Before, a wrapper stood under the module's
name for it, and only that name tripped. For a few functions that the grader's own code and correct
submissions call often, this prints the time of one call, the best of --rounds rounds of --calls
calls, interleaved:
- original: a function made of the original code before anything was tripped;
- wrapper: that original under the wrapper the module's name led to before (tripwires._wire);
- tripped: the function tripped in place, in a child whose exercise allows it (nothing recorded);
- wrapper, forbidden and tripped, forbidden: each where the exercise forbids it (each call records a
  hit, Hits.add, whose search of the stack for the student's line is most of it; the first is kept).
Then what making the catalog's tripwires cost this process (the zygote's, once).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import types
from dataclasses import asdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from arguments import at_least  # noqa: E402
from grader.catalog import catalog, rules  # noqa: E402
from grader.pipeline.engine import tripwire_targets  # noqa: E402
from grader.sandbox import tripwires  # noqa: E402

X = torch.randn(8, 8)
CALLS = {       # name -> (the function, its arguments, the rule that forbids it)
    "F.softmax": (F.softmax, (X, -1), rules.SOFTMAX),
    "F.mse_loss": (F.mse_loss, (X, X), rules.MSE),
    "xavier_uniform_": (torch.nn.init.xavier_uniform_, (torch.empty(8, 8),), rules.XAVIER),
}


def untripped(f: types.FunctionType) -> types.FunctionType:
    """A function of `f`'s own code, made before `f` is tripped: what a call cost before."""
    copy = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
    copy.__kwdefaults__ = f.__kwdefaults__
    return copy


def per_call(f, args: tuple, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        f(*args)
    return (time.perf_counter() - t0) / calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=at_least(1), default=20000)
    ap.add_argument("--rounds", type=at_least(1), default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    originals = {name: untripped(f) for name, (f, _, _) in CALLS.items()}
    wrappers = {name: tripwires._wire(originals[name], name, lambda: None) for name in CALLS}
    targets = tripwire_targets(catalog().values())
    t0 = time.perf_counter()
    tripwires.prepare(targets)
    prepared = time.perf_counter() - t0
    forbidding = tripwires.Hits()
    recorded = {name: tripwires._wire(originals[name], name, lambda n=name, r=rule: forbidding.add(r.name, n))
                for name, (_, _, rule) in CALLS.items()}
    kinds = ("original", "wrapper", "tripped", "wrapper, forbidden", "tripped, forbidden")
    best = {(name, kind): float("inf") for name in CALLS for kind in kinds}
    for _ in range(args.rounds):
        for name, (f, call_args, _) in CALLS.items():
            best[name, "original"] = min(best[name, "original"], per_call(originals[name], call_args, args.calls))
            best[name, "wrapper"] = min(best[name, "wrapper"], per_call(wrappers[name], call_args, args.calls))
            best[name, "tripped"] = min(best[name, "tripped"], per_call(f, call_args, args.calls))
        tripwires.install([asdict(rule) for _, _, rule in CALLS.values()], forbidding)
        for name, (f, call_args, _) in CALLS.items():
            best[name, "wrapper, forbidden"] = min(best[name, "wrapper, forbidden"],
                                                   per_call(recorded[name], call_args, args.calls))
            best[name, "tripped, forbidden"] = min(best[name, "tripped, forbidden"], per_call(f, call_args, args.calls))
        tripwires._installed.clear()        # allowed again for the next round's tripped calls
    print(f"{args.rounds} rounds of {args.calls} calls, one thread, load average {os.getloadavg()[0]:.1f}; "
          f"the best round of each, microseconds a call (x the original)")
    print(f"{'function':<16}" + "".join(f"{k:>20}" for k in kinds))
    for name in CALLS:
        row = [best[name, k] * 1e6 for k in kinds]
        print(f"{name:<16}" + f"{row[0]:>20.2f}" + "".join(f"{f'{v:.2f} ({v / row[0]:.2f}x)':>20}" for v in row[1:]))
    print(f"tripwires made (the zygote's, once): {prepared * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
