"""What each exercise costs to grade, beyond the student's own compute and beyond the isolation floor:

    .venv/bin/python benchmarks/exercise_cost.py [--grades 10] [--exercise ID ...] [--against TREE] [--rounds 3]
                                                 [--whole]

Each exercise of the catalog (or each --exercise) is graded with its worked solution, alone, --grades
times one after another, in a warm sandbox as a batch worker grades (benchmarks/grading_cpu.py), and
the machine's CPU is split by who spent it: the grading parent, the sandbox's processes (the zygote,
the confined children, the keeper), the rest of the machine (the kernel's threads tearing namespaces
and control groups down, other load). Beside it, the exercise's own compute: the worked solution's
functions called on the same public cases in this process, warm, the best of three, as the sandbox's
child calls them (its trusted substitutes, its driver, the global RNG seeded with 0), which is how
batch_throughput.py counts a student's own compute. Per exercise, a grade's mean:
- beyond own compute: what grading it cost the machine, less its own compute;
- beyond the floor: that, less the same for the isolation floor's exercise (attention.causal_mask: one
  confined child, four small cases, next to no compute), which every exercise pays at least.
The rows come sorted by what they cost beyond the floor: where a correct submission's overhead goes
once one fresh confined child per exercise is paid for. The totals are a correct submission's with its
exercises graded one at a time (a worker grades two at once; batch_throughput.py measures that), but
for one thing: an exercise whose module imports another course module (transformer.py imports
attention.py) is graded here with that module's import checked in a bare child of its own (column
"checks"), which a whole submission does once per module, or in the child of that module's own
exercise.
With --whole, the worked solutions are graded as one submission instead (every exercise, or every
--exercise, two at once as a worker grades them), --grades times in a warm sandbox: one row, a
grade's CPU, split the same way, beside the same own compute. What a batch worker spends on a
correct submission, without the batch around it (batch_throughput.py measures that, with a spread
of up to a tenth from run to run).
With --against TREE (a `git worktree` of an older commit), both checkouts are measured, --rounds times
each, alternately, each in a Python of its own, and every figure is the median of its rounds.
Timings on a shared machine move with its load, which is printed.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from grading_cpu import FLOOR_EXERCISE, public_environment

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


WHOLE = "the whole submission"       # the one row of --whole


def measure(tree: str, exercises: list[str], grades: int, whole: bool = False) -> dict[str, dict[str, float]]:
    """In this Python, with `tree`'s grader first on the path: per exercise id (or WHOLE, the chosen
    exercises graded as one submission), its own compute and a grade's CPU split (seconds)."""
    sys.path[:0] = [tree, HERE]
    import importlib

    from grader import api, threads
    from grader.catalog import catalog
    from grader.pipeline import engine
    from grader.pipeline.cases import build_cases
    from grader_cost import settle
    from grading_cpu import call_limits, cpu_split, exercise_seconds, worker_config

    specs = catalog()
    unknown = [e for e in exercises if e not in specs]
    if unknown:
        sys.exit(f"--exercise {unknown[0]}: no such exercise in {tree}; `grader list` shows every id")
    chosen = [specs[e] for e in dict.fromkeys([*([] if whole else [FLOOR_EXERCISE]), *(exercises or specs)])]
    solutions = os.path.join(tree, "solutions")
    checks = _count_import_checks()
    config = worker_config(tree)
    own = {}
    sys.path.insert(0, solutions)       # `from attention import ...` in transformer.py finds the worked solution
    with call_limits(), threads.pinned(1):     # one torch thread, as in the sandbox's child
        for spec in chosen:
            module = importlib.import_module(spec.module)
            if os.path.dirname(os.path.abspath(module.__file__ or "")) != solutions:
                sys.exit(f"{spec.module}: another module of that name was imported first ({module.__file__})")
            cases = build_cases(spec, None)
            own[spec.id] = min(exercise_seconds(module, spec, cases) for _ in range(3))
    sys.path.remove(solutions)
    out = {}
    settle()
    with api.sandbox(config) as sandbox:
        if whole:
            return {WHOLE: _whole(solutions, chosen, config, sandbox, grades, checks, sum(own.values()))}
        for spec in chosen:
            # unmeasured: its references made in this process; cpu_split then waits, idle, while the zygote
            # reaps this grade's children (and at first puts its memory in huge pages: grader.sandbox.zygote)
            result = engine.grade(solutions, [spec], config, sandbox=sandbox)
            graded = result.exercises[0]
            if graded.points != graded.max_points:
                sys.exit(f"{spec.id}'s worked solution in {tree} did not pass ({graded.points:g} of "
                         f"{graded.max_points:g}): {graded.message}")
            checks.clear()
            split = cpu_split(lambda spec=spec: [engine.grade(solutions, [spec], config, sandbox=sandbox)
                                       for _ in range(grades)]) / grades
            out[spec.id] = {"own": own[spec.id], "parent": split.parent, "sandbox": split.sandbox,
                            "other": split.other, "checks": len(checks) / grades}
    return out


def _whole(solutions: str, chosen: list, config, sandbox, grades: int, checks: list[str],
           own: float) -> dict[str, float]:
    """The worked solutions graded as one submission (`chosen`, two exercises at once as a batch worker
    grades), once unmeasured (references made, the zygote's memory settled), then `grades` times."""
    from grader.pipeline import engine
    from grading_cpu import cpu_split

    result = engine.grade(solutions, chosen, config, sandbox=sandbox)
    failed = [e for e in result.exercises if e.points != e.max_points]
    if failed:
        sys.exit(f"{failed[0].id}'s worked solution did not pass ({failed[0].points:g} of "
                 f"{failed[0].max_points:g}): {failed[0].message}")
    checks.clear()
    split = cpu_split(lambda: [engine.grade(solutions, chosen, config, sandbox=sandbox)
                               for _ in range(grades)]) / grades
    return {"own": own, "parent": split.parent, "sandbox": split.sandbox, "other": split.other,
            "checks": len(checks) / grades}


def _count_import_checks() -> list[str]:
    """A list that gets the name of each module whose import the grader checks in a bare child of its
    own (grader.pipeline.imports: the course modules the graded one imports, once per submission)."""
    from grader.pipeline import imports

    checked: list[str] = []
    original = imports._try_import

    def counted(module, *args, **kwargs):
        checked.append(module)
        return original(module, *args, **kwargs)
    imports._try_import = counted
    return checked


def _run(tree: str, exercises: list[str], grades: int, whole: bool) -> dict[str, dict[str, float]]:
    """`measure` in a Python of its own (its sandbox's counters closed before the next one opens)."""
    p = subprocess.run([sys.executable, __file__, "--json", "--tree", tree, "--grades", str(grades),
                        *[a for e in exercises for a in ("--exercise", e)], *(["--whole"] if whole else [])],
                       cwd=tree, capture_output=True, text=True, env=public_environment())
    if p.returncode != 0:
        sys.exit(p.stderr.strip()[-3000:] or f"measuring {tree} ended with exit code {p.returncode}")
    return json.loads(p.stdout.splitlines()[-1])


def _beyond(row: dict[str, float]) -> float:
    return row["parent"] + row["sandbox"] + row["other"] - row["own"]


def _whole_table(trees: list[str], medians: list[dict[str, dict[str, float]]], grades: int, rounds: int) -> None:
    print(f"the worked solutions graded as one submission {grades} times in a warm sandbox on {os.cpu_count()} "
          f"CPUs, two exercises at once; a grade's mean CPU in core-s, machine-wide"
          + (f", the median of {rounds} rounds per tree" if rounds > 1 else ""))
    print(f"  {'tree':<24}{'own':>8}{'parent':>9}{'sandbox':>9}{'rest':>8}{'graded':>9}{'beyond own':>12}{'checks':>8}")
    for tree, m in zip(trees, medians):
        r = m[WHOLE]
        print(f"  {os.path.basename(tree.rstrip('/')):<24}{r['own']:8.3f}{r['parent']:9.3f}{r['sandbox']:9.3f}"
              f"{r['other']:8.3f}{r['parent'] + r['sandbox'] + r['other']:9.3f}{_beyond(r):12.3f}{r['checks']:8g}")
    if len(trees) > 1:
        first, other = medians[0][WHOLE], medians[1][WHOLE]
        graded = [r["parent"] + r["sandbox"] + r["other"] for r in (first, other)]
        print(f"  {os.path.basename(trees[0].rstrip('/'))} less {os.path.basename(trees[1].rstrip('/'))}: parent "
              f"{first['parent'] - other['parent']:+.3f}, sandbox {first['sandbox'] - other['sandbox']:+.3f}, rest "
              f"{first['other'] - other['other']:+.3f}, graded {graded[0] - graded[1]:+.3f} core-s (own compute "
              f"{first['own'] - other['own']:+.3f}: the same worked solutions unless a tree changed them, measured "
              f"apart, in the measuring process)")
    print(f"  (load average now {os.getloadavg()[0]:.1f})")


def _table(trees: list[str], medians: list[dict[str, dict[str, float]]], grades: int, rounds: int) -> None:
    floors = [_beyond(m[FLOOR_EXERCISE]) for m in medians]
    names = [os.path.basename(t.rstrip("/")) for t in trees]
    print(f"each exercise graded alone {grades} times in a warm sandbox on {os.cpu_count()} CPUs; a grade's mean "
          f"CPU in core-ms, machine-wide" + (f", the median of {rounds} rounds per tree" if rounds > 1 else ""))
    print(f"checks: children of a grade beside the exercise's own, each checking that a course module it imports "
          f"imports (a whole submission checks each module once)\nown: the worked solution's own compute (warm, "
          f"in-process); beyond own: parent + sandbox + rest - own; beyond floor: that less {FLOOR_EXERCISE}'s\n")
    head = (f"  {'exercise':<40}{'checks':>7}{'own':>8}{'parent':>8}{'sandbox':>9}{'rest':>7}{'beyond own':>12}"
            f"{'beyond floor':>14}")
    for name in names[1:]:
        head += f"{name + ': beyond own':>{max(24, len(name) + 14)}}"
    print(head)
    first = medians[0]
    rows = sorted(first, key=lambda e: _beyond(first[e]) - floors[0], reverse=True)
    for e in rows:
        r = first[e]
        line = (f"  {e:<40}{r['checks']:7g}{r['own'] * 1e3:8.1f}{r['parent'] * 1e3:8.1f}{r['sandbox'] * 1e3:9.1f}"
                f"{r['other'] * 1e3:7.1f}{_beyond(r) * 1e3:12.1f}{(_beyond(r) - floors[0]) * 1e3:14.1f}")
        for name, m in zip(names[1:], medians[1:]):
            line += f"{_beyond(m[e]) * 1e3:>{max(24, len(name) + 14)}.1f}" if e in m else \
                f"{'(none)':>{max(24, len(name) + 14)}}"
        print(line)
    print()
    for name, m, floor in zip(names, medians, floors):
        total = sum(_beyond(r) for r in m.values())
        checked = sum(r["checks"] for r in m.values())
        print(f"  {name}: {len(m)} exercises, own compute {sum(r['own'] for r in m.values()):.3f} core-s, graded "
              f"{sum(r['parent'] + r['sandbox'] + r['other'] for r in m.values()):.3f} (parent "
              f"{sum(r['parent'] for r in m.values()):.3f}, sandbox {sum(r['sandbox'] for r in m.values()):.3f}); "
              f"beyond own compute {total:.3f}, of which the floor {floor * len(m):.3f} "
              f"({floor * 1e3:.1f} core-ms an exercise) and beyond it {total - floor * len(m):.3f}"
              + (f"; {checked:g} import checks in all" if checked else ""))
    print(f"  (load average now {os.getloadavg()[0]:.1f})")


def main() -> int:
    from arguments import at_least, checkout, in_turns

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grades", type=at_least(1), default=10, help="grades of each exercise (default 10)")
    parser.add_argument("--exercise", action="append", default=[], metavar="ID",
                        help="an exercise id (`grader list`); repeat it for several (default: every exercise)")
    parser.add_argument("--tree", type=checkout, default=ROOT, help="the checkout to measure (default: this one)")
    parser.add_argument("--against", metavar="TREE", type=checkout, help="another checkout, measured alternately "
                        "beside this one")
    parser.add_argument("--rounds", type=at_least(1), default=None, help="rounds per tree (default 1, or 3 with "
                        "--against)")
    parser.add_argument("--whole", action="store_true", help="grade the chosen exercises as one submission, "
                        "two at once as a batch worker grades (default: each exercise alone)")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.tree, args.exercise, args.grades, args.whole)))
        return 0
    trees = [args.tree] + ([args.against] if args.against else [])
    rounds = args.rounds or (3 if args.against else 1)
    print(f"load average {os.getloadavg()[0]:.1f}")
    got: dict[str, list] = {t: [] for t in trees}
    for t in in_turns(trees, rounds):
        got[t].append(_run(t, args.exercise, args.grades, args.whole))
    medians = [{e: {k: statistics.median(r[e][k] for r in got[t]) for k in got[t][0][e]} for e in got[t][0]}
               for t in trees]
    (_whole_table if args.whole else _table)(trees, medians, args.grades, rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
