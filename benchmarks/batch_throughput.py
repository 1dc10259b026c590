"""Batch grading throughput: `grader batch` on a generated class, and nbgrader's autograde beside it.

    .venv/bin/python benchmarks/batch_throughput.py [--n 200] [--jobs N] [--nbgrader-n N] [--keep DIR]

1. Generates N submissions of the attention chapter: 50% correct, 35% with one or two known
   mistakes (tests/fixtures/mistakes/attention.py), 15% hostile or forbidden (the attention
   scenarios of tests/fixtures/submissions/, built by tests/scenarios.py, cycled). Each gets a
   unique comment, so no two hash alike.
2. Runs the real command, `grader batch SUBS --out OUT attention --jobs N`, and times it.
   - throughput: submissions per minute of wall time;
   - overhead per submission: (wall x cores - the students' own compute) / N, in core-seconds.
     The students' own compute is measured here, in-process and warm, by calling each correct
     or buggy submission's functions on the same public cases; for hostile submissions it is
     the time of their cases that ran into the time limit (time their code burned). Worker start,
     sandboxing, imports, comparisons, diagnosis, feedback files and the gradebook all count as
     overhead.
3. When nbgrader is importable: the same submissions as notebooks of the attention assignment as
   `grader notebooks` writes it (locked test cells that grade in the kernel), released by
   `nbgrader generate_assignment`, each student's module as the answer; graded by `nbgrader
   autograde` in N processes at once (one course copy each, the students split between them,
   nbgrader's default cell timeout), then by `grader batch` on that same course folder. Prints
   the throughput ratios. --nbgrader-n hands in only the first M submissions as notebooks.
Machine load from other processes skews both sides; the load average is printed.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import scenarios  # noqa: E402  (the test suite's submission builders)
from conftest import mistake_source, replace_function  # noqa: E402

MODULE = "attention"
SOLUTION = (ROOT / "solutions" / f"{MODULE}.py").read_text()
HOSTILE = [name for name in scenarios.names() if (scenarios.SUBMISSIONS / name / f"{MODULE}.py").exists()]
UNSAFE_FOR_NBGRADER = ("writes_outside", "reads_outside", "reads_solutions", "hostile_ignores_sigterm")
MISTAKES = [("causal_mask", "diagonal_excluded"), ("causal_mask", "inverted"), ("causal_mask", "transposed"),
            ("scaled_dot_product_attention", "no_scale"), ("scaled_dot_product_attention", "wrong_dim"),
            ("scaled_dot_product_attention", "mask_inverted"), ("scaled_dot_product_attention", "masked_zero"),
            ("multi_head_attention", "no_transpose"), ("multi_head_attention", "no_output_projection"),
            ("multi_head_attention", "no_bias"), ("positional_encoding", "swapped"),
            ("positional_encoding", "start_at_one")]


# -- the class --------------------------------------------------------------------------------------
def generate(folder: Path, n: int, seed: int = 0) -> dict[str, str]:
    """Write n student folders; returns student -> kind (correct, buggy, hostile:<fixture>)."""
    rng = random.Random(seed)
    kinds = {}
    for i in range(n):
        student = f"student{i:03d}"
        r = rng.random()
        if r < 0.15:
            fixture = HOSTILE[i % len(HOSTILE)]
            source, kind = scenarios.source(fixture, MODULE), f"hostile:{fixture}"
        elif r < 0.50:
            source = SOLUTION
            for function, variant in rng.sample(MISTAKES, rng.choice((1, 2))):
                source = replace_function(source, function, mistake_source(MODULE, f"{function}__{variant}"))
            kind = "buggy"
        else:
            source, kind = SOLUTION, "correct"
        (folder / student).mkdir(parents=True)
        (folder / student / f"{MODULE}.py").write_text(f"# {student}\n{source}")
        kinds[student] = kind
    return kinds


def own_compute(folder: Path, kinds: dict[str, str]) -> dict[str, float]:
    """Seconds each correct or buggy submission's functions take on the public cases (warm, in-process)."""
    import torch

    from grader.catalog import select
    from grader.pipeline.engine import build_cases
    from grader.trees import clone

    torch.set_num_threads(1)
    specs = select([MODULE])
    cases = {s.id: build_cases(s, None) for s in specs}
    by_source: dict[str, float] = {}
    out = {}
    for student, kind in kinds.items():
        if kind.startswith("hostile"):
            continue
        source = (folder / student / f"{MODULE}.py").read_text().split("\n", 1)[1]
        if source not in by_source:
            spec_ = importlib.util.spec_from_loader(f"bench_{len(by_source)}", loader=None)
            module = importlib.util.module_from_spec(spec_)
            exec(compile(source, f"{student}/{MODULE}.py", "exec"), module.__dict__)
            by_source[source] = min(_time_all(module, specs, cases, clone) for _ in range(3))
        out[student] = by_source[source]
    return out


def _time_all(module, specs, cases, clone) -> float:
    total = 0.0
    for spec in specs:
        fn = getattr(module, spec.function)
        for c in cases[spec.id]:
            args, kwargs = clone(c.args), clone(dict(c.kwargs))
            start = time.perf_counter()
            try:
                fn(*args, **kwargs)
            except Exception:
                pass
            total += time.perf_counter() - start
    return total


# -- grader batch -----------------------------------------------------------------------------------
def run_batch(subs: Path, out: Path, jobs: int, extra=()) -> float:
    cmd = [sys.executable, "-m", "grader", "batch", str(subs), "--out", str(out), MODULE, "--jobs", str(jobs), *extra]
    start = time.monotonic()
    env = {k: v for k, v in os.environ.items() if k != "GRADER_SECRET_SEED"}
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    wall = time.monotonic() - start
    if proc.returncode not in (0, 3):
        sys.exit(f"grader batch failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall


def timed_out_seconds(out: Path) -> dict[str, float]:
    """student -> seconds of their cases that hit the time limit (from the gradebook)."""
    db = sqlite3.connect(out / "gradebook.sqlite")
    burned = {}
    for student, data in db.execute("SELECT student, result FROM submissions"):
        result = json.loads(data)
        burned[student] = sum(c["seconds"] for e in result["exercises"] for c in e["cases"] if c["status"] == "timeout")
    return burned


# -- nbgrader autograde -----------------------------------------------------------------------------
def _env(work: Path) -> dict[str, str]:
    """nbgrader and its kernel from this venv, the grader from this checkout, Jupyter's folders in `work`."""
    env = {k: v for k, v in os.environ.items() if k != "GRADER_SECRET_SEED"}
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                     ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython")):
        env[var] = str(work / "jupyter" / sub)
    return env


def hand_in(release: dict, source: str) -> dict:
    """The released notebook with the student's module as its answer: all of it in the first solution
    cell (top-level code included, as it would run on import), the other solution cells emptied."""
    nb = json.loads(json.dumps(release))
    solutions = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
    for i, cell in enumerate(solutions):
        cell["source"] = source if i == 0 else "# (answered above)"
    return nb


def nbgrader_course(subs: Path, students: list[str], work: Path, env: dict[str, str]) -> Path:
    """The attention assignment as `grader notebooks` writes it, released by nbgrader, handed in by everyone."""
    course = work / "course"
    subprocess.run([sys.executable, "-m", "grader", "notebooks", MODULE, "--out", str(course), "--assignment", MODULE],
                   cwd=ROOT, env=env, check=True, capture_output=True)
    (course / "nbgrader_config.py").write_text(f"c = get_config()\nc.CourseDirectory.root = {str(course)!r}\n")
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", MODULE, "--force"], cwd=course, env=env,
                   check=True, capture_output=True)
    release = json.loads((course / "release" / MODULE / f"{MODULE}.ipynb").read_text())
    for student in students:
        dest = course / "submitted" / student / MODULE
        dest.mkdir(parents=True)
        (dest / f"{MODULE}.ipynb").write_text(
            json.dumps(hand_in(release, (subs / student / f"{MODULE}.py").read_text())))
    return course


def run_nbgrader(course: Path, students: list[str], jobs: int, env: dict[str, str]) -> float:
    """`nbgrader autograde` in `jobs` processes at once, each on its own copy of the course holding a
    share of the students (one nbgrader process grades one notebook at a time)."""
    copies = []
    for g in range(jobs):
        copy = course.parent / f"course{g}"
        shutil.copytree(course, copy, ignore=shutil.ignore_patterns("submitted"))
        (copy / "nbgrader_config.py").write_text(f"c = get_config()\nc.CourseDirectory.root = {str(copy)!r}\n")
        for student in students[g::jobs]:
            shutil.copytree(course / "submitted" / student, copy / "submitted" / student)
        copies.append(copy)
    start = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-m", "nbgrader", "autograde", MODULE, "--force"], cwd=c, env=env,
                              stdout=subprocess.DEVNULL, stderr=open(c / "autograde.log", "w")) for c in copies]
    for p in procs:
        p.wait()
    wall = time.monotonic() - start
    graded = sum(len(list((c / "autograded").glob(f"*/{MODULE}/{MODULE}.ipynb"))) for c in copies)
    if graded != len(students):
        print(f"  note: nbgrader autograded {graded} of {len(students)} notebooks "
              f"(see {course.parent}/course*/autograde.log)")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200, help="submissions in the class (default 200)")
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)), help="workers (default: cores)")
    ap.add_argument("--nbgrader-n", type=int, default=None, help="submissions graded by nbgrader (default: all)")
    ap.add_argument("--no-nbgrader", action="store_true", help="skip the nbgrader comparison")
    ap.add_argument("--keep", metavar="DIR", help="work here and keep it (default: a temporary folder)")
    args = ap.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="batch-bench-"))
    subs, out = work / "submissions", work / "out"
    shutil.rmtree(subs, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    kinds = generate(subs, args.n)
    mix = {k: sum(1 for v in kinds.values() if v.split(":")[0] == k) for k in ("correct", "buggy", "hostile")}
    print(f"{args.n} submissions of {MODULE} ({mix}), {args.jobs} workers, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}")

    wall = run_batch(subs, out, args.jobs)
    compute = own_compute(subs, kinds)
    compute.update({s: t for s, t in timed_out_seconds(out).items() if kinds[s].startswith("hostile")})
    own = sum(compute.values())
    rate = 60.0 * args.n / wall
    cores = len(os.sched_getaffinity(0))
    overhead = (wall * cores - own) / args.n
    print(f"grader batch: {args.n} in {wall:.1f} s = {rate:.1f} submissions/min")
    print(f"  per submission: {wall * cores / args.n:.3f} core-s on {cores} cores, of which the student's own compute "
          f"{own / args.n:.3f} s; overhead {overhead:.3f} s (target <= 0.5 s)")
    print(f"  load average after: {os.getloadavg()[0]:.2f}")

    if args.no_nbgrader:
        return
    if importlib.util.find_spec("nbgrader") is None:
        print("nbgrader comparison: SKIPPED — nbgrader is not importable in this Python (pip install nbgrader "
              "-c constraints.txt to compare)")
        return
    # nbgrader runs student code unsandboxed, as the grading user: these fixtures would write into
    # this checkout, read the solutions or leave processes behind, so only grader batch gets them.
    unsafe = {f"hostile:{name}" for name in UNSAFE_FOR_NBGRADER}
    students = [s for s in sorted(kinds) if kinds[s] not in unsafe][: args.nbgrader_n or args.n]
    print(f"nbgrader side: {len(students)} submissions ({sum(k in unsafe for k in kinds.values())} that escape an "
          "unsandboxed kernel left out)")
    env = _env(work / "nbgrader")
    course = nbgrader_course(subs, students, work / "nbgrader", env)
    nb_wall = run_nbgrader(course, students, args.jobs, env)
    nb_rate = 60.0 * len(students) / nb_wall
    print(f"nbgrader autograde ({args.jobs} processes): {len(students)} notebooks in {nb_wall:.1f} s = "
          f"{nb_rate:.1f} submissions/min")
    same = run_batch(course, work / "out-notebooks", args.jobs, ("--assignment", MODULE))
    same_rate = 60.0 * len(students) / same
    print(f"grader batch on the same notebooks (nbgrader's submitted/ layout): {len(students)} in {same:.1f} s = "
          f"{same_rate:.1f} submissions/min")
    print(f"throughput ratio grader batch / nbgrader autograde: {rate / nb_rate:.1f}x on the .py submissions, "
          f"{same_rate / nb_rate:.1f}x on the same notebooks (target >= 10x)")
    print(f"  load average after: {os.getloadavg()[0]:.2f}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
