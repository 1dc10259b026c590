"""Batch grading throughput: `grader batch` on a generated class, and nbgrader's autograde beside it.

    .venv/bin/python benchmarks/batch_throughput.py [--modules attention|all] [--n 200] [--jobs N]
                                                    [--nbgrader-n N] [--no-nbgrader] [--floor-runs N] [--keep DIR]

`--modules attention` (the default) benchmarks the attention chapter alone; `--modules all` the full
curriculum, every module of the catalog (`grader list`) in every submission:

    .venv/bin/python benchmarks/batch_throughput.py --modules all --n 8 --nbgrader-n 8

1. Generates N submissions: 50% correct, 35% with one or two known mistakes, 15% hostile or forbidden
   (cycled). Each file gets a unique comment, so no two hash alike.
   - attention: attention.py alone; the mistakes are a chosen dozen of tests/fixtures/mistakes/
     attention.py; the hostile ones are the attention scenarios of tests/fixtures/submissions/.
   - all: every module of solutions/ (the worked solutions); a buggy one has one or two known
     mistakes, in different functions, each from a module drawn at random, then one of the
     variants of its tests/fixtures/mistakes/<module>.py
     (`f__variant` renamed to `f` by tests/conftest.py's mistake_source and spliced in by
     replace_function, with the fixture's imports and private helpers appended where the variant
     needs them, as tests/test_catalog_transformer.py does; the `forbidden_*` variants are left
     out: they are refusals, not mistakes); a hostile one is every fixture of tests/fixtures/
     submissions/ but the alt_* ones (independently written correct solutions, not hostile): its
     modules as tests/scenarios.py builds them, the other modules the worked solutions.
2. Runs the real command, `grader batch SUBS --out OUT [attention] --jobs N`, and times it.
   - throughput: submissions per minute of wall time;
   - overhead per submission: (wall x cores - the students' own compute) / N, in core-seconds.
     The students' own compute is measured here, in-process and warm (the best of three runs), by
     calling each correct or buggy submission's functions on the same public cases the grader
     runs, the way the sandbox's child calls them: the spec's trusted substitutes put in place of
     the functions it depends on, through the spec's driver where it has one, the global RNG
     seeded with 0 for each exercise, one torch thread, each call stopped at the exercise's
     call_timeout (10 s when it sets none) as in the sandbox. So a driven exercise counts all of its
     driver's work as the student's: mlp.train_xor's and the transformer capstone's training
     loops (the student's forward pass, autograd, the optimizer), the optimizer trajectories,
     glorot_uniform's draws, the perceptron's step. Not counted (so counted as overhead): the
     imports of the student's modules, the localisers' extra calls after a failed case (the
     diagnosis), the comparisons and judges (the capstone's accuracy check included), and for a
     hostile submission everything but the time of its cases that ran into the time limit and,
     in the full curriculum, the compute of its modules that are the worked solutions as they are
     (a module that imports a scenario's module, as transformer.py imports attention.py, is not
     counted). Worker start, sandboxing, comparisons, diagnosis, feedback files and the gradebook
     all count as overhead;
   - full curriculum: how much of that overhead such left-out modules can be: their worked compute
     (a scenario's code runs only in the sandbox, so theirs is not measured), and the part of it in
     modules whose every exercise passed in the batch, which ran their cases in full (the capstone's
     training, when a scenario changes only attention.py);
   - where the wall time went, from the gradebook's graded_at (whole seconds): until the first
     result, until the last, and after the last until grader batch's output closed (its workers'
     exit included), with a worker's mean time per submission; and the machine's busy and idle
     core-seconds meanwhile (/proc/stat: other load on the machine counts as busy);
   - full curriculum: the isolation floor, what a submission costs when every one of its exercises
     is as cheap as the cheapest (attention.causal_mask's worked solution, once for each exercise
     of the curriculum: one confined child each, the submission copied into each child's folder,
     the module imported, the cases called, compared, the child torn down), graded by the engine as
     a worker grades (a warm sandbox, two exercises at once), in machine-wide CPU
     (/proc/stat: the grading parent, the zygote, the children, the keeper, the kernel's threads),
     the mean of --floor-runs; and the overhead beyond it. No full-curriculum submission costs less
     than the floor, however little its own compute: it is what one fresh child per exercise costs.
     Beside it, an exercise's share of the floor spent in the kernel (forks, page faults, exits,
     namespaces), with the machine's page faults (/proc/vmstat) and its huge-page splits: each of the
     zygote's huge pages a child writes to is split (grader.sandbox.zygote), and each page it writes
     to is copied on that first write.
   - where a submission's CPU goes: the same submissions graded again by the engine as a worker
     grades them, one after another, split by who spent the CPU: the grading parent (its own CPU),
     the sandbox's processes (its child processes: the zygote with the confined children it reaped,
     the keeper), of which the students' own compute above, and the rest of the machine
     (the kernel's threads tearing namespaces and control groups down, other load); what is left of
     the overhead beyond it is grader batch's own: the cores it left idle, and the CPU it spent beyond
     the split (workers and zygotes started, results sent, stored and written as feedback, and every
     process running slower beside the batch's other processes than alone). With the full
     curriculum, the floor split the same way beside it, and each part's excess over the floor's.
     Then the same split kind by kind (correct, buggy, hostile: each kind's submissions measured
     together, a submission's mean), beyond each kind's own compute: where the overhead beyond the
     floor comes from. The floor and the split are each measured in a Python of their own, ended
     before the next timed run (see `apart`).
3. When nbgrader is importable: the same submissions as nbgrader notebooks, one per module, of
   one assignment as `grader notebooks` writes it (`attention`, or `curriculum` for the full
   curriculum: its source notebooks have locked test cells that grade in the kernel), released by
   `nbgrader generate_assignment`, each student's module as the answer of its notebook; graded by
   `nbgrader autograde` in --jobs processes at once (one course copy each, the students split between
   them, nbgrader's default cell timeout), then by `grader batch` on that same course folder.
   Prints each side's throughput, its wall and core-seconds per submission and its overhead
   beyond the same own compute, the ratios, and whether grader batch scores every student alike
   on the .py submissions and on the notebooks (nbgrader's own scores beside them, for
   information: its kernel is not a sandbox). --nbgrader-n hands in only the first M submissions
   as notebooks. Fixtures that would escape an unsandboxed kernel (UNSAFE_FOR_NBGRADER: they
   write or read outside their folder, read the solutions, or leave processes that ignore
   SIGTERM behind) are graded by grader batch only.
   Full curriculum: transformer.ipynb imports attention (`from attention import ...`) and
   moe.ipynb imports transformer, which nbgrader's kernel cannot do (there is no attention.py in
   the autograded folder, only attention.ipynb): the worked solutions would score 0 on
   transformer and moe, without running their cases. So the kernels get an IPython startup file
   (in the benchmark's own IPYTHONDIR) that imports `<module>.ipynb` from the kernel's folder, or
   from the student's submitted/ folder while autograde has not yet written it to autograded/
   (it goes through the notebooks in order: moe before transformer), by running its code cells,
   test cells left out, each cell's error reported and passed over as a notebook run passes over it.
Machine load from other processes skews both sides; the load average is printed. Each grader batch
starts once no earlier grader's kernel counters are still being closed (grader_cost.settle).
"""
from __future__ import annotations

import argparse
import ast
import builtins
import dataclasses
import gc
import importlib
import importlib.util
import json
import os
import random
import shutil
import sqlite3
import subprocess
import symtable
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

import scenarios  # noqa: E402  (the test suite's submission builders)
from arguments import at_least  # noqa: E402
from grader_cost import settle  # noqa: E402  (no earlier grader's counters still being closed)
from grading_cpu import (FLOOR_EXERCISE, Split, busy_core_seconds, call_limits, cpu_split,  # noqa: E402
                         exercise_seconds, public_environment, worker_config)
from conftest import FIXTURES, mistake_source, replace_function  # noqa: E402

MODULE = "attention"
SOLUTION = (ROOT / "solutions" / f"{MODULE}.py").read_text()
HOSTILE = [name for name in scenarios.names() if (scenarios.SUBMISSIONS / name / f"{MODULE}.py").exists()]
# Every fixture that reaches outside an unsandboxed kernel. Checked for each fixture of
# tests/fixtures/submissions/: the others compute, raise, loop, allocate, print, exit, patch torch
# or the grader's clocks in their own process, or start a thread there, all of which ends with the
# kernel.
UNSAFE_FOR_NBGRADER = ("writes_outside", "reads_outside", "reads_solutions", "hostile_ignores_sigterm")
MISTAKES = [("causal_mask", "diagonal_excluded"), ("causal_mask", "inverted"), ("causal_mask", "transposed"),
            ("scaled_dot_product_attention", "no_scale"), ("scaled_dot_product_attention", "wrong_dim"),
            ("scaled_dot_product_attention", "mask_inverted"), ("scaled_dot_product_attention", "masked_zero"),
            ("multi_head_attention", "no_transpose"), ("multi_head_attention", "no_output_projection"),
            ("multi_head_attention", "no_bias"), ("positional_encoding", "swapped"),
            ("positional_encoding", "start_at_one")]
FULL_ASSIGNMENT = "curriculum"


# -- the class --------------------------------------------------------------------------------------
def course_modules() -> list[str]:
    """The catalog's modules in course order (those with a worked solution)."""
    from grader.catalog import select
    return [m for m in dict.fromkeys(s.module for s in select([])) if (ROOT / "solutions" / f"{m}.py").is_file()]


def generate(folder: Path, n: int, seed: int = 0) -> dict[str, str]:
    """Write n student folders of attention.py; returns student -> kind (correct, buggy, hostile:<fixture>)."""
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


def full_hostile() -> list[str]:
    """Every fixture of tests/fixtures/submissions/ but the alt_* ones (correct, independently written)."""
    return [name for name in scenarios.names() if not name.startswith("alt_")]


def full_mistakes(modules: list[str]) -> list[tuple[str, str, str]]:
    """(module, function, variant) of every known mistake in tests/fixtures/mistakes/, forbidden_* left out."""
    pool = []
    for module in modules:
        path = FIXTURES / "mistakes" / f"{module}.py"
        if not path.exists():
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and "__" in node.name:
                function, variant = node.name.split("__", 1)
                if not variant.startswith("forbidden"):
                    pool.append((module, function, variant))
    return pool


def mistake_text(module: str, function: str, variant: str, solution: str) -> str:
    """The variant renamed to `function`, plus the fixture file's imports and private helpers when
    it uses a name the worked solution does not define (as tests/test_catalog_transformer.py builds them)."""
    text = mistake_source(module, f"{function}__{variant}")
    table = symtable.symtable(text, "mistake", "exec").get_children()[0]
    wanted = set(table.get_globals()) | {n for child in table.get_children() for n in child.get_globals()}
    tree = ast.parse(solution)
    defined = set(dir(builtins))
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Assign):
            defined |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    if wanted <= defined:
        return text
    source = (FIXTURES / "mistakes" / f"{module}.py").read_text()
    extras = [ast.get_source_segment(source, n) for n in ast.parse(source).body
              if isinstance(n, (ast.Import, ast.ImportFrom))
              or (isinstance(n, ast.FunctionDef) and n.name.startswith("_"))]
    return text + "\n\n\n" + "\n\n\n".join(extras) + "\n"


def worked_solutions(modules: list[str]) -> dict[str, str]:
    """module -> the text of its worked solution (solutions/<module>.py)."""
    return {m: (ROOT / "solutions" / f"{m}.py").read_text() for m in modules}


def generate_full(folder: Path, n: int, modules: list[str], seed: int = 0) -> dict[str, str]:
    """Write n student folders of every module; returns student -> kind (correct, buggy, hostile:<fixture>)."""
    rng = random.Random(seed)
    solutions = worked_solutions(modules)
    hostile, pool = full_hostile(), full_mistakes(modules)
    kinds, n_hostile = {}, 0
    for i in range(n):
        student = f"student{i:03d}"
        files = dict(solutions)
        r = rng.random()
        if r < 0.15:
            fixture = hostile[n_hostile % len(hostile)]
            n_hostile += 1
            built = scenarios.submission(fixture)
            files.update({p.stem: p.read_text() for p in sorted(built.glob("*.py")) if p.stem in solutions})
            kind = f"hostile:{fixture}"
        elif r < 0.50:
            chosen: dict[tuple[str, str], str] = {}
            wanted = rng.choice((1, 2))
            while len(chosen) < wanted:            # a module, then one of its mistakes
                module = rng.choice(sorted({m for m, _, _ in pool}))
                _, function, variant = rng.choice([p for p in pool if p[0] == module])
                chosen.setdefault((module, function), variant)
            for (module, function), variant in chosen.items():
                files[module] = replace_function(files[module], function,
                                                 mistake_text(module, function, variant, solutions[module]))
            kind = "buggy:" + ",".join(f"{m}.{f}__{v}" for (m, f), v in chosen.items())
        else:
            kind = "correct"
        (folder / student).mkdir(parents=True)
        for module, source in files.items():
            (folder / student / f"{module}.py").write_text(f"# {student}\n{source}")
        kinds[student] = kind
    return kinds


# -- the students' own compute ----------------------------------------------------------------------
def _closure(module: str, texts: dict[str, str]) -> list[str]:
    """`module` and the course modules it imports, directly or not, dependencies first."""
    order: list[str] = []

    def visit(m: str, seen: tuple[str, ...]) -> None:
        if m in order or m in seen or m not in texts:
            return
        for dep in scenarios.course_imports(texts[m]):
            visit(dep, (*seen, m))
        order.append(m)
    visit(module, ())
    return order


class ModuleTimer:
    """A module's own compute on the public cases (warm, in-process, the best of three), measured once for
    each distinct source of it and of the course modules it imports. Call it inside `call_limits()`."""

    def __init__(self, modules: list[str]) -> None:
        import torch

        from grader.catalog import select
        from grader.pipeline.cases import build_cases

        torch.set_num_threads(1)
        specs = select(modules)
        self.cases = {s.id: build_cases(s, None) for s in specs}
        self.by_module: dict[str, list] = {}
        for s in specs:
            self.by_module.setdefault(s.module, []).append(s)
        self.cache: dict[tuple, float] = {}

    def seconds(self, module: str, texts: dict[str, str], student: str) -> float:
        chain = _closure(module, texts)
        key = (module, tuple((m, texts[m]) for m in chain))
        if key not in self.cache:
            self.cache[key] = min(_time_module(module, chain, texts, self.by_module.get(module, []), self.cases,
                                               student) for _ in range(3))
        return self.cache[key]


def _texts(folder: Path, student: str, modules: list[str]) -> dict[str, str]:
    """The student's modules, the unique first line generate_full wrote left out."""
    return {m: (folder / student / f"{m}.py").read_text().split("\n", 1)[1] for m in modules}


def _left_out(texts: dict[str, str], solutions: dict[str, str], modules: list[str]) -> list[str]:
    """A hostile submission's modules that are the worked solutions as they are but import one of the
    scenario's modules, directly or not (transformer.py imports attention.py)."""
    return [m for m in modules
            if texts[m] == solutions[m] and any(texts[c] != solutions[c] for c in _closure(m, texts))]


def own_compute(folder: Path, kinds: dict[str, str], modules: list[str], timer: ModuleTimer) -> dict[str, float]:
    """Seconds each submission's functions take on the public cases (warm, in-process, the best of three),
    module by module; for a hostile one only its modules that are the worked solutions, as they are,
    and import none of the scenario's (a scenario's code runs only in the sandbox)."""
    solutions = worked_solutions(modules)
    out = {}
    with call_limits():
        for student, kind in kinds.items():
            texts = _texts(folder, student, modules)
            if kind.startswith("hostile"):
                left = _left_out(texts, solutions, modules)
                mine = [m for m in modules if texts[m] == solutions[m] and m not in left]
            else:
                mine = modules
            out[student] = sum(timer.seconds(m, texts, student) for m in mine)
    return out


def left_out_worked(folder: Path, kinds: dict[str, str], modules: list[str], out: Path,
                    timer: ModuleTimer) -> tuple[float, float]:
    """Core-seconds of worked-solution compute that own_compute leaves out (_left_out: a hostile
    submission's worked modules that import a scenario's module), at their worked compute; and the part
    of it in modules whose every exercise passed in the batch (those ran their cases in full, whatever
    the scenario's import did beside them). Both are counted as overhead: this says how much of the
    overhead they can be."""
    solutions = worked_solutions(modules)
    statuses: dict[str, dict[str, str]] = {}
    db = sqlite3.connect(out / "gradebook.sqlite")
    for student, data in db.execute("SELECT student, result FROM submissions"):
        statuses[student] = {e["id"]: e["status"] for e in json.loads(data)["exercises"]}
    db.close()

    def all_passed(student: str, module: str) -> bool:
        mine = [status for exercise, status in statuses.get(student, {}).items() if exercise.split(".")[0] == module]
        return bool(mine) and all(status == "passed" for status in mine)
    every = passed = 0.0
    with call_limits():
        for student, kind in kinds.items():
            if not kind.startswith("hostile"):
                continue
            for m in _left_out(_texts(folder, student, modules), solutions, modules):
                worked = timer.seconds(m, solutions, "worked")
                every += worked
                passed += worked if all_passed(student, m) else 0.0
    return every, passed


def _time_module(module: str, chain: list[str], texts: dict[str, str], specs, cases, student: str) -> float:
    """Fresh module objects for `chain` (under their own names while they run, so that `from attention
    import ...` finds this student's attention), then every exercise of `module` on its cases."""
    saved = {m: sys.modules.get(m) for m in chain}
    loaded: dict[str, types.ModuleType] = {}
    try:
        for m in chain:
            loaded[m] = types.ModuleType(m)
            loaded[m].__file__ = str(Path(student) / f"{m}.py")
            sys.modules[m] = loaded[m]
            try:
                exec(compile(texts[m], f"{student}/{m}.py", "exec"), loaded[m].__dict__)
            except Exception:
                pass
        return sum(exercise_seconds(loaded[module], spec, cases[spec.id]) for spec in specs)
    finally:
        for m, value in saved.items():
            if value is None:
                sys.modules.pop(m, None)
            else:
                sys.modules[m] = value


# -- where the CPU goes ----------------------------------------------------------------------------
def isolation_floor(runs: int) -> Split:
    """Core-seconds a submission, by who spends them: the least a full-curriculum submission costs with
    one confined child per exercise, whatever the students wrote. A submission is graded as a batch
    worker grades it (a warm sandbox, the engine, two exercises at once), but each of its exercises
    is FLOOR_EXERCISE, the cheapest, with its worked solution: the submission is read once, each
    exercise gets its own child (the whole submission copied into its folder, every confinement
    layer, the module imported, the cases called), is compared and judged, and its child torn
    down. Machine-wide CPU (parent, zygote, children, keeper, kernel) over `runs` such submissions,
    one after another, after one unmeasured."""
    from grader import api
    from grader.catalog import catalog
    from grader.pipeline import engine

    config = worker_config(str(ROOT))
    specs = catalog()
    trivial = [specs[FLOOR_EXERCISE]] * len(specs)
    results = []
    settle()
    with api.sandbox(config) as sandbox:
        engine.grade(str(ROOT / "solutions"), trivial, config, sandbox=sandbox)
        gc.freeze()     # as a worker does (grader.frontends.batch.workers): no full collection walks torch
        spent = cpu_split(lambda: results.extend(engine.grade(str(ROOT / "solutions"), trivial, config,
                                                              sandbox=sandbox) for _ in range(runs)))
    if any(r.score != r.max_score for r in results):
        sys.exit(f"the isolation floor's exercise did not pass: {FLOOR_EXERCISE} scored {results[-1].score} "
                 f"of {results[-1].max_score}")
    return spent / runs


def where_it_goes(subs: str, groups: dict[str, list[str]], names: list[str]) -> dict[str, Split]:
    """Core-seconds a submission, by who spends them, for the batch's own submissions graded again in
    this process as a worker grades them (a warm sandbox, the engine, two exercises at once), one
    after another, after one unmeasured: what is left of grader batch's figure beyond the total is
    grader batch's own (its workers' and zygotes' start-up, results sent, stored and written as
    feedback, cores left idle). Measured group by group (`groups`: kind -> students), so each kind
    of submission (correct, buggy, hostile) gets its own figure, a submission's mean in its group."""
    from grader import api

    config = worker_config(str(ROOT))
    settle()
    first = next(s for students in groups.values() for s in students)
    with api.sandbox(config) as sandbox:
        api.grade(os.path.join(subs, first), names, config, sandbox=sandbox)
        gc.freeze()
        return {kind: cpu_split(lambda students=students: [api.grade(os.path.join(subs, s), names, config,
                                                                    sandbox=sandbox) for s in students])
                / len(students) for kind, students in groups.items() if students}


def combined(parts: dict[str, Split], groups: dict[str, list[str]]) -> Split:
    """The mean submission of all `groups` from each group's mean `parts`."""
    n = sum(len(groups[k]) for k in parts)
    return Split(*(sum(getattr(parts[k], f.name) * len(groups[k]) for k in parts) / n
                   for f in dataclasses.fields(Split)))


_APART = ("import dataclasses, json, sys; sys.path.insert(0, 'benchmarks'); import batch_throughput as b; "
          "r = getattr(b, sys.argv[1])(*json.loads(sys.argv[2])); "
          "print(json.dumps({k: dataclasses.asdict(v) for k, v in r.items()} if isinstance(r, dict) "
          "else dataclasses.asdict(r)))")


def apart(function: str, *args: object) -> Any:
    """The Split (or dict of Splits) `function(*args)` of this module returns, measured in a Python of
    its own. A sandbox started in this process would leave its kernel counters with its keeper until
    this process ends (grader.sandbox.keeper): the next grader batch timed here would wait for them
    (settle), then open its own beside them, slower."""
    p = subprocess.run([sys.executable, "-c", _APART, function, json.dumps(args)], cwd=ROOT, capture_output=True,
                       text=True, env=public_environment())
    if p.returncode != 0:
        sys.exit(p.stderr.strip()[-3000:] or f"{function} ended with exit code {p.returncode}")
    data = json.loads(p.stdout.splitlines()[-1])
    return Split(**data) if "parent" in data else {k: Split(**v) for k, v in data.items()}


def print_where_it_goes(overhead: float, own: float, parts: Split, floor: Split | None, count: int,
                        idle: float) -> None:
    """The batch's overhead a submission taken apart: the grading parent, the sandbox's processes beyond
    the students' own compute, the rest of the machine, grader batch's own (of which `idle`: its cores
    left idle, a submission's share); beside the isolation floor's."""
    batch_own = overhead - (parts.total - own)
    print(f"  where a submission's CPU goes (the same submissions graded again apart, one after another, as a worker "
          f"grades; core-s a submission): grading parent {parts.parent:.3f}, sandbox processes {parts.sandbox:.3f} "
          f"(the students' own compute {own:.3f}, the sandbox's {parts.sandbox - own:.3f}), rest of the machine "
          f"{parts.other:.3f}: {parts.total:.3f}; grader batch's own beyond that {batch_own:.3f} (cores left idle "
          f"{idle:.3f}; CPU spent {batch_own - idle:.3f}: the workers' and zygotes' start-up, results sent, stored and "
          f"written, and each process's CPU running slower beside the others than alone)")
    if floor is not None:
        print(f"    of which the isolation floor: grading parent {floor.parent:.3f}, sandbox processes "
              f"{floor.sandbox:.3f}, rest {floor.other:.3f} ({floor.total / count * 1000:.1f} core-ms an exercise); "
              f"beyond it: parent {parts.parent - floor.parent:.3f}, sandbox "
              f"{parts.sandbox - own - floor.sandbox:.3f}, rest {parts.other - floor.other:.3f}, grader batch's own "
              f"{batch_own:.3f}")


def print_by_kind(parts: dict[str, Split], groups: dict[str, list[str]], compute: dict[str, float],
                  floor: Split | None) -> None:
    """The same split, kind by kind: what a submission of each kind costs beyond its own compute (and
    beyond the isolation floor), grader batch's own left out (it is not measured per submission).
    A hostile submission's own compute counts only its worked-solution modules and the cases that ran
    into the time limit: whatever else its code does (a forbidden API's first call, say) is overhead."""
    print("    by kind of submission (core-s a submission, each kind's mean; grader batch's own not included):")
    for kind, split in parts.items():
        own = sum(compute.get(s, 0.0) for s in groups[kind]) / len(groups[kind])
        beyond = f", beyond the floor {split.total - own - floor.total:.3f}" if floor is not None else ""
        print(f"      {kind} ({len(groups[kind])}): grading parent {split.parent:.3f}, sandbox processes "
              f"{split.sandbox:.3f} (own compute {own:.3f}), rest {split.other:.3f}; beyond its own compute "
              f"{split.total - own:.3f}{beyond}")


# -- grader batch -----------------------------------------------------------------------------------
def run_batch(subs: Path, out: Path, jobs: int, names=(MODULE,), extra=()) -> float:
    cmd = [sys.executable, "-m", "grader", "batch", str(subs), "--out", str(out), *names, "--jobs", str(jobs), *extra]
    waited = settle()
    if waited > 1:
        print(f"  (waited {waited:.0f} s for an earlier grader's kernel counters to be closed)")
    start, started, busy = time.monotonic(), time.time(), busy_core_seconds()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=public_environment())
    wall = time.monotonic() - start
    _PHASES[out] = (started, time.time())
    _BUSY[out] = busy_core_seconds() - busy
    if proc.returncode not in (0, 3):
        sys.exit(f"grader batch failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    if proc.returncode == 3:
        print(f"  note: grader batch exited 3 (a grader fault on some submission): {proc.stderr.strip()[-500:]}")
    return wall


_PHASES: dict[Path, tuple[float, float]] = {}      # out -> (epoch when grader batch started, when it ended)
_BUSY: dict[Path, float] = {}       # out -> the machine's busy core-seconds while grader batch ran (the rest: idle)


def phases(out: Path) -> str:
    """Where a batch's wall time went, from its gradebook: until the first result was committed
    (start-up and the first submissions), between the first and the last, and after the last
    (the pool's end: workers exiting, grades.csv, the class report). Whole seconds (graded_at's)."""
    from datetime import datetime
    started, ended = _PHASES[out]
    db = sqlite3.connect(out / "gradebook.sqlite")
    stamps = sorted(datetime.fromisoformat(t).timestamp() for (t,) in db.execute("SELECT graded_at FROM submissions"))
    worker = [s for (s,) in db.execute("SELECT seconds FROM submissions")]
    if not stamps:
        return "no row in the gradebook"
    return (f"first result after {stamps[0] - started:.0f} s, last after {stamps[-1] - started:.0f} s, "
            f"then {ended - stamps[-1]:.0f} s to the end; a worker took {sum(worker) / len(worker):.1f} s "
            f"per submission on average")


def timed_out_seconds(out: Path) -> dict[str, float]:
    """student -> seconds of their cases that hit the time limit (from the gradebook)."""
    db = sqlite3.connect(out / "gradebook.sqlite")
    burned = {}
    for student, data in db.execute("SELECT student, result FROM submissions"):
        result = json.loads(data)
        burned[student] = sum(c["seconds"] for e in result["exercises"] for c in e["cases"] if c["status"] == "timeout")
    return burned


def scores(out: Path) -> dict[str, tuple[float, dict[str, float]]]:
    """student -> (score, {exercise: points}) from a batch's gradebook."""
    db = sqlite3.connect(out / "gradebook.sqlite")
    points: dict[str, dict[str, float]] = {}
    for student, exercise, value in db.execute("SELECT student, exercise, points FROM exercises"):
        points.setdefault(student, {})[exercise] = value
    return {student: (score, points.get(student, {}))
            for student, score in db.execute("SELECT student, score FROM submissions")}


# -- nbgrader autograde -----------------------------------------------------------------------------
NOTEBOOK_IMPORTS = '''\
"""Written by benchmarks/batch_throughput.py: `import attention` in a kernel finds attention.ipynb in
the kernel's folder (or the student's handed-in one, see _folders) and runs its code cells, the
test cells left out, as a notebook run does: a cell that raises is reported and passed over."""
import importlib.abc
import importlib.util
import json
import os
import sys


def _folders():
    """The kernel's folder, then, for nbgrader's autograded/<student>/<assignment>/, the same student's
    submitted/<student>/<assignment>/ (autograde writes a notebook there only once it has run it)."""
    here = os.getcwd()
    yield here
    parts = here.split(os.sep)
    if len(parts) > 3 and parts[-3] == "autograded":
        yield os.sep.join(parts[:-3] + ["submitted"] + parts[-2:])


class _NotebookImporter(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if path is not None or "." in name:
            return None
        for folder in _folders():
            notebook = os.path.join(folder, name + ".ipynb")
            if os.path.isfile(notebook):
                return importlib.util.spec_from_loader(name, self, origin=notebook)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        with open(module.__spec__.origin, encoding="utf-8") as f:
            cells = json.load(f)["cells"]
        module.__file__ = module.__spec__.origin
        for cell in cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if cell.get("cell_type") != "code" or (meta.get("grade") and not meta.get("solution")):
                continue
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            try:
                exec(compile(source, module.__file__, "exec"), module.__dict__)
            except (Exception, SystemExit) as e:
                print(f"importing {module.__name__}.ipynb: a cell raised {type(e).__name__}: {e}", file=sys.stderr)


sys.meta_path.append(_NotebookImporter())
'''


def _env(work: Path, notebook_imports: bool = False) -> dict[str, str]:
    """nbgrader and its kernel from this venv, the grader from this checkout, Jupyter's folders in `work`
    (with `notebook_imports`, an IPython startup file that lets a kernel import the notebooks beside it)."""
    env = public_environment()
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                     ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython")):
        env[var] = str(work / "jupyter" / sub)
    if notebook_imports:
        startup = work / "jupyter" / "ipython" / "profile_default" / "startup"
        startup.mkdir(parents=True, exist_ok=True)
        (startup / "00-notebook-imports.py").write_text(NOTEBOOK_IMPORTS)
    return env


def hand_in(release: dict, source: str) -> dict:
    """The released notebook with the student's module as its answer: all of it in the first solution
    cell (top-level code included, as it would run on import), the other solution cells emptied."""
    nb = json.loads(json.dumps(release))
    solutions = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
    for i, cell in enumerate(solutions):
        cell["source"] = source if i == 0 else "# (answered above)"
    return nb


def nbgrader_course(subs: Path, students: list[str], work: Path, env: dict[str, str], modules: list[str],
                    assignment: str) -> Path:
    """The assignment as `grader notebooks` writes it (one notebook per module), released by nbgrader,
    handed in by everyone."""
    course = work / "course"
    subprocess.run([sys.executable, "-m", "grader", "notebooks", *modules, "--out", str(course),
                    "--assignment", assignment], cwd=ROOT, env=env, check=True, capture_output=True)
    (course / "nbgrader_config.py").write_text(f"c = get_config()\nc.CourseDirectory.root = {str(course)!r}\n")
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", assignment, "--force"], cwd=course,
                   env=env, check=True, capture_output=True)
    releases = {m: json.loads((course / "release" / assignment / f"{m}.ipynb").read_text()) for m in modules}
    for student in students:
        dest = course / "submitted" / student / assignment
        dest.mkdir(parents=True)
        for module in modules:
            (dest / f"{module}.ipynb").write_text(
                json.dumps(hand_in(releases[module], (subs / student / f"{module}.py").read_text())))
    return course


def run_nbgrader(course: Path, students: list[str], jobs: int, env: dict[str, str], modules: list[str],
                 assignment: str) -> tuple[float, list[Path]]:
    """`nbgrader autograde` in `jobs` processes at once, each on its own copy of the course holding a
    share of the students (one nbgrader process grades one notebook at a time). Returns the wall
    time and the copies."""
    copies = []
    for g in range(min(jobs, len(students))):
        copy = course.parent / f"course{g}"
        shutil.copytree(course, copy, ignore=shutil.ignore_patterns("submitted"))
        (copy / "nbgrader_config.py").write_text(f"c = get_config()\nc.CourseDirectory.root = {str(copy)!r}\n")
        for student in students[g::jobs]:
            shutil.copytree(course / "submitted" / student, copy / "submitted" / student)
        copies.append(copy)
    start = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-m", "nbgrader", "autograde", assignment, "--force"], cwd=c, env=env,
                              stdout=subprocess.DEVNULL, stderr=open(c / "autograde.log", "w")) for c in copies]
    for p in procs:
        p.wait()
    wall = time.monotonic() - start
    graded = sum(len(list((c / "autograded").glob(f"*/{assignment}/{m}.ipynb"))) for c in copies for m in modules)
    if graded != len(students) * len(modules):
        print(f"  note: nbgrader autograded {graded} of {len(students) * len(modules)} notebooks "
              f"(see {course.parent}/course*/autograde.log)")
    return wall, copies


def nbgrader_scores(copies: list[Path], assignment: str) -> dict[str, float]:
    """student -> the total nbgrader's autograde recorded in its gradebook(s)."""
    from nbgrader.api import Gradebook, MissingEntry
    out = {}
    for copy in copies:
        with Gradebook(f"sqlite:///{copy / 'gradebook.db'}") as gb:
            for student in gb.students:
                try:
                    out[student.id] = gb.find_submission(assignment, student.id).score
                except MissingEntry:
                    pass
    return out


def _per_submission(label: str, wall: float, n: int, cores: int, own: float, target: str = "") -> None:
    print(f"  per submission: wall {wall / n:.2f} s, {wall * cores / n:.3f} core-s on {cores} cores, of which the "
          f"student's own compute {own / n:.3f} s; {label} overhead {(wall * cores - own) / n:.3f} s{target}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modules", choices=("attention", "all"), default="attention",
                    help="attention: the attention chapter alone (default); all: every module of the curriculum")
    ap.add_argument("--n", type=at_least(1), default=200, help="submissions in the class (default 200)")
    ap.add_argument("--jobs", type=at_least(1), default=len(os.sched_getaffinity(0)), help="workers (default: cores)")
    ap.add_argument("--nbgrader-n", type=at_least(1), default=None,
                    help="submissions graded by nbgrader (default: all)")
    ap.add_argument("--no-nbgrader", action="store_true", help="skip the nbgrader comparison")
    ap.add_argument("--floor-runs", type=at_least(1), default=3,
                    help="submissions of the cheapest exercise that measure the isolation floor (full curriculum; "
                         "default 3)")
    ap.add_argument("--keep", metavar="DIR", help="work here and keep it (default: a temporary folder)")
    args = ap.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="batch-bench-"))
    try:
        benchmark(args, work)
    finally:            # however it ends (--no-nbgrader, no nbgrader, an error): no class left in the temp folder
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def benchmark(args: argparse.Namespace, work: Path) -> None:
    from grader.catalog import select

    full = args.modules == "all"
    modules = course_modules() if full else [MODULE]
    names = () if full else (MODULE,)                 # grader batch grades every exercise when none is named
    assignment = FULL_ASSIGNMENT if full else MODULE
    subs, out = work / "submissions", work / "out"
    for old in (subs, out, work / "out-notebooks", work / "nbgrader"):
        shutil.rmtree(old, ignore_errors=True)
    kinds = generate_full(subs, args.n, modules) if full else generate(subs, args.n)
    mix = {k: sum(1 for v in kinds.values() if v.split(":")[0] == k) for k in ("correct", "buggy", "hostile")}
    what = f"the full curriculum ({len(modules)} modules: {', '.join(modules)})" if full else MODULE
    print(f"{args.n} submissions of {what} ({mix}), {args.jobs} workers, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}")
    if full and args.n <= 24:
        for student, kind in kinds.items():
            if kind != "correct":
                print(f"  {student}: {kind}")

    wall = run_batch(subs, out, args.jobs, names)
    timer = ModuleTimer(modules)
    compute = own_compute(subs, kinds, modules, timer)
    burned = timed_out_seconds(out)
    for s in kinds:
        if kinds[s].startswith("hostile"):
            compute[s] = compute.get(s, 0.0) + burned.get(s, 0.0)
    own = sum(compute.values())
    rate = 60.0 * args.n / wall
    cores = len(os.sched_getaffinity(0))
    overhead = (wall * cores - own) / args.n
    target = 1.0 if full else 0.5
    print(f"grader batch: {args.n} in {wall:.1f} s = {rate:.1f} submissions/min")
    print(f"  per submission: {wall * cores / args.n:.3f} core-s on {cores} cores, of which the student's own compute "
          f"{own / args.n:.3f} s; overhead {overhead:.3f} s (target <= {target:g} s)")
    if full:
        every, passed = left_out_worked(subs, kinds, modules, out, timer)
        print(f"  counted as overhead, not own compute: the worked-solution modules of the hostile submissions "
              f"that import a scenario's module, {every / args.n:.3f} core-s a submission at their worked compute; "
              f"{passed / args.n:.3f} of it in modules whose every exercise passed (those ran their cases in full)")
    idle = max(0.0, wall * cores - _BUSY[out]) / args.n
    print(f"  wall: {phases(out)}; machine-wide, {_BUSY[out] / args.n:.3f} core-s a submission busy, "
          f"{idle:.3f} idle")
    floor, count = (apart("isolation_floor", args.floor_runs), len(select(modules))) if full else (None, 0)
    if floor is not None:
        print(f"  isolation floor: a submission of {count} exercises each as cheap as {FLOOR_EXERCISE} costs "
              f"{floor.total:.3f} core-s ({floor.total / count * 1000:.1f} core-ms an exercise; machine-wide CPU, the "
              f"mean of {args.floor_runs}); overhead beyond it {overhead - floor.total:.3f} s")
        print(f"    an exercise of the floor, machine-wide: {floor.kernel / count * 1000:.1f} core-ms of it in the "
              f"kernel, {floor.faults / count:.0f} page faults (a child's first write to each page it shares with "
              f"the zygote among them), {floor.splits / count:.1f} of the zygote's huge pages split in a child")
    groups = {k: [s for s in sorted(kinds) if kinds[s].split(":")[0] == k] for k in mix}
    by_kind = apart("where_it_goes", str(subs), groups, list(names))
    print_where_it_goes(overhead, own / args.n, combined(by_kind, groups), floor, count, idle)
    print_by_kind(by_kind, groups, compute, floor)
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
          "unsandboxed kernel left out)" + (f", {len(modules)} notebooks each" if full else ""))
    env = _env(work / "nbgrader", notebook_imports=full)
    course = nbgrader_course(subs, students, work / "nbgrader", env, modules, assignment)
    nb_wall, copies = run_nbgrader(course, students, args.jobs, env, modules, assignment)
    nb_rate = 60.0 * len(students) / nb_wall
    nb_own = sum(compute[s] for s in students)
    print(f"nbgrader autograde ({len(copies)} processes): {len(students)} submissions in {nb_wall:.1f} s = "
          f"{nb_rate:.1f} submissions/min")
    _per_submission("nbgrader's", nb_wall, len(students), cores, nb_own)
    same = run_batch(course, work / "out-notebooks", args.jobs, names, ("--assignment", assignment))
    same_rate = 60.0 * len(students) / same
    print(f"grader batch on the same notebooks (nbgrader's submitted/ layout): {len(students)} in {same:.1f} s = "
          f"{same_rate:.1f} submissions/min")
    _per_submission("grader batch's", same, len(students), cores, nb_own, f" (target <= {target:g} s)")
    print(f"  wall: {phases(work / 'out-notebooks')}")
    print(f"throughput ratio grader batch / nbgrader autograde: {rate / nb_rate:.1f}x on the .py submissions, "
          f"{same_rate / nb_rate:.1f}x on the same notebooks" + ("" if full else " (target >= 10x)"))
    nb_over, same_over = (nb_wall * cores - nb_own) / len(students), (same * cores - nb_own) / len(students)
    print(f"overhead per submission nbgrader / grader batch on the same notebooks: {nb_over:.2f} / {same_over:.2f}"
          f" s = {nb_over / same_over:.1f}x")
    _agreement(out, work / "out-notebooks", students, kinds, nbgrader_scores(copies, assignment))
    print(f"  load average after: {os.getloadavg()[0]:.2f}")


def _agreement(py_out: Path, nb_out: Path, students: list[str], kinds: dict[str, str], nb: dict[str, float]) -> None:
    """Print how many students grader batch scores alike on the .py files and on the notebooks
    (every exercise's points, to 1e-9), naming any that differ; nbgrader's totals beside them."""
    py, notebooks = scores(py_out), scores(nb_out)
    agree, same_nb = 0, 0
    for s in students:
        a, b = py.get(s), notebooks.get(s)
        if a is not None and b is not None and abs(a[0] - b[0]) < 1e-9 and a[1].keys() == b[1].keys() \
                and all(abs(a[1][e] - b[1][e]) < 1e-9 for e in a[1]):
            agree += 1
        else:
            differ = sorted(e for e in (a[1] if a else {}) if not b or abs(a[1][e] - b[1].get(e, -1)) >= 1e-9)
            print(f"  {s} ({kinds[s]}): .py {a[0] if a else 'missing'}, notebooks {b[0] if b else 'missing'}"
                  f"; differing: {', '.join(differ) or '-'}")
        if a is not None and s in nb and abs(nb[s] - a[0]) < 1e-6:
            same_nb += 1
        elif a is not None:
            print(f"  nbgrader gave {s} ({kinds[s]}) {nb.get(s, 'no score')}, grader batch {a[0]:g}")
    print(f"scores: grader batch on the .py submissions and on the notebooks agree for {agree} of {len(students)} "
          f"students (every exercise's points); nbgrader's own totals equal grader batch's for {same_nb} of "
          f"{len(students)}")


if __name__ == "__main__":
    main()
