"""How good is the grader's GPU timing? One command on a CUDA machine:

    .venv/bin/python benchmarks/gpu_timing_quality.py            # needs CUDA; exits 0 with a message without it
    .venv/bin/python benchmarks/gpu_timing_quality.py --device cpu   # the same figures for the CPU timer

Uses the production measurement loop (grader.timing.rounds with the in-process LocalHarness:
fresh inputs, warm-up, interleaved rounds, outputs checked) and prints, side by side:

1. repeatability: the relative standard error the loop reports, and the spread of the ratio
   over repeated runs of an identical student and reference (it should be ~1.00);
2. harness overhead: the timer's figure for one call (synchronise, L2 flush, events, device-wide
   synchronise before the end mark) against bare back-to-back CUDA events around the same call,
   for a tiny kernel (where the overhead shows) and a large one (where it should vanish);
3. sensitivity: whether a deliberate 1.3x slowdown (13 launches of a kernel against 10) is
   measured as ~1.3 and failed against a 1.15 limit, in every repeat, while 1.0x passes.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

from arguments import at_least, seconds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402


def workload(device: str, n: int, repeats: int):  # noqa: ARG001  (device: where the caller runs it)
    """f(x, w) = w applied `repeats` times (x @ w, normalised); its answer is checkable."""
    def f(x, w):
        y = x
        for _ in range(repeats):
            y = torch.tanh(y @ w)
        return y
    return f


def make_inputs(device: str, n: int):
    def make(i: int):
        g = torch.Generator().manual_seed(1000 + i)
        x = torch.randn(n, n, generator=g) / n ** 0.5
        w = torch.randn(n, n, generator=g) / n ** 0.5
        return (x.to(device), w.to(device)), {}
    return make


def measure(student, reference, device: str, n: int, budget: float, repeats_ref: int):
    from grader.timing import rounds, stats
    from grader.timing.harness import LocalHarness
    check_fn = workload(device, n, repeats_ref)

    def check(inputs, output):          # recomputed where the inputs live (float64 on a CPU would dominate)
        (x, w), _ = inputs
        expected = check_fn(x.to(device), w.to(device)).cpu()
        return "" if torch.allclose(output, expected, rtol=1e-3, atol=1e-4) else "wrong"

    harness = LocalHarness(student, reference, device=device, threads=1 if device == "cpu" else None)
    m = rounds.run(harness, make_inputs(device, n), check, budget=budget, target_rse=0.01)
    return m, stats.ratio(m.times("student"), m.times("reference"))


def bare_once(fn, args, device: str) -> float:
    """ms of one call by the barest measurement: back-to-back CUDA events (no flush, no device-wide
    synchronisation), or two perf_counter reads on the CPU."""
    if device == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        return start.elapsed_time(end)
    import time
    t0 = time.perf_counter()
    fn(*args)
    return (time.perf_counter() - t0) * 1e3


def overhead(fn, args, reps: int, device: str) -> tuple[float, float]:
    """Median ms (bare, the grader's timer), the two measurements alternating call by call so
    the machine's load affects both alike."""
    from grader.timing.timers import get_timer
    timer = get_timer(device)
    bare, mine = [], []
    for _ in range(reps):
        bare.append(bare_once(fn, args, device))
        mine.append(timer.measure(lambda: fn(*args))[0] * 1e3)
    return statistics.median(bare), statistics.median(mine)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--repeats", type=at_least(1), default=5, help="runs of each measurement (default 5)")
    parser.add_argument("--budget", type=seconds, default=2.0, help="seconds per measurement (default 2)")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("skipped: needs CUDA (torch.cuda.is_available() is False on this machine); "
              "run with --device cpu for the same figures for the CPU timer")
        return 0
    device = args.device
    if device == "cpu":
        torch.set_num_threads(1)
    n_small, n_large = (64, 1024) if device == "cuda" else (32, 256)
    where = torch.cuda.get_device_name() if device == "cuda" else f"CPU, 1 thread, load {os.getloadavg()[0]:.1f}"
    print(f"timing quality on {where}, torch {torch.__version__}, {args.repeats} repeats, budget {args.budget:g} s\n")

    print("1. repeatability: identical student and reference (the ratio should be 1.00)")
    f10 = workload(device, n_large, 10)
    ratios, spreads, calls = [], [], []
    for _ in range(args.repeats):
        m, r = measure(f10, f10, device, n_large, args.budget, 10)
        ratios.append(r.value)
        spreads.append(r.spread)
        calls.append(r.n)
    print(f"   ratio median {statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}; "
          f"reported relative standard error median {100 * statistics.median(spreads):.2f}%; "
          f"calls per side {min(calls)}-{max(calls)}\n")

    print("2. harness overhead per call (ms): the grader's timer against a bare measurement")
    print(f"   {'kernel':<26} {'bare':>9} {'harness':>9} {'overhead':>9} {'ratio':>7}")
    for label, n, reps in (("tiny (1 matmul, n=%d)" % n_small, n_small, 1),
                           ("large (10 matmuls, n=%d)" % n_large, n_large, 10)):
        (x, w), _ = make_inputs(device, n)(0)
        fn = workload(device, n, reps)
        for _ in range(5):
            fn(x, w)
        bare, mine = overhead(fn, (x, w), 200, device)
        print(f"   {label:<26} {bare:>9.4f} {mine:>9.4f} {mine - bare:>9.4f} {mine / bare:>7.2f}")
    print()

    print("3. sensitivity: a student 1.3x slower than the reference, against a limit of 1.15")
    f13 = workload(device, n_large, 13)
    detected, measured = 0, []
    for _ in range(args.repeats):
        _, r = measure(f13, f10, device, n_large, args.budget, 13)
        measured.append(r.value)
        detected += r.lower() > 1.15       # fails even after the policy's benefit of the doubt
    same = [measure(f10, f10, device, n_large, args.budget, 10)[1] for _ in range(args.repeats)]
    passed = sum(r.value <= 1.15 or r.lower() <= 1.15 for r in same)
    print(f"   1.3x measured as {statistics.median(measured):.3f} (range {min(measured):.3f}-{max(measured):.3f}); "
          f"failed the 1.15 limit in {detected}/{args.repeats} runs")
    print(f"   1.0x measured as {statistics.median(r.value for r in same):.3f}; passed in {passed}/{args.repeats} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
