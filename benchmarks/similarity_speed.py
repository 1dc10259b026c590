"""Speed of the similarity check: 60 students x 12 modules, and copydetect's own detector beside it.

    .venv/bin/python benchmarks/similarity_speed.py [--students 60] [--seed 0] [--keep DIR]

1. Builds a class: each student's module is one of the course's independent versions of it (the
   worked solution in solutions/, the alt_<module>_* fixtures of tests/fixtures/submissions/), each
   disguised with a seed of its own (every local variable renamed, functions reversed, comments
   dropped: tests/test_similarity_disguise.py); every tenth student hands in notebooks.
2. Times grader.similarity.check on it (read every submission, fingerprint, compare every pair of
   every module, regions of the flagged pairs), then render (index, pair pages, CSV).
3. Times copydetect's CopyDetector on the same .py files (same_name_only, the stubs as
   boilerplate_dirs, no report): the library's own loop, for a ratio. It reads files only (the
   notebooks' students are left out of its run, so it compares slightly fewer pairs).
Load from other processes on the machine skews both figures; the load average is printed.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from arguments import at_least

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from test_similarity_disguise import disguise, notebook_of  # noqa: E402  (the test suite's builders)

MODULES = ("neurons", "activations", "losses", "mlp", "cnn", "rnn", "lstm", "gru", "tokens", "attention",
           "transformer", "moe")


def versions(module: str) -> list[str]:
    """The independent versions of a module: the solution and its alt_ fixtures."""
    found = [(ROOT / "solutions" / f"{module}.py").read_text()]
    fixtures = ROOT / "tests" / "fixtures" / "submissions"
    found += [p.read_text() for p in sorted(fixtures.glob(f"alt_{module}_*/{module}.py"))]
    return found


def build(folder: Path, students: int, seed: int) -> int:
    rng = random.Random(seed)
    bases = {m: versions(m) for m in MODULES}
    files = 0
    for i in range(students):
        student = folder / f"student{i:03d}"
        student.mkdir(parents=True)
        for module in MODULES:
            source = disguise(rng.choice(bases[module]), seed=rng.randrange(1 << 30))
            if i % 10 == 9:
                (student / f"{module}.ipynb").write_text(notebook_of(source))
            else:
                (student / f"{module}.py").write_text(source)
            files += 1
    return files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=at_least(2), default=60, help="students in the class (two or more)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", metavar="DIR", help="build the class here and keep it")
    args = ap.parse_args()
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="similarity-speed-"))
    try:
        subs = folder / "submissions"
        files = build(subs, args.students, args.seed)
        from grader.similarity import check, render

        entries = {p.name: str(p) for p in sorted(subs.iterdir())}
        t0 = time.perf_counter()
        report = check(entries, MODULES, [str(ROOT / "exercises")])
        t1 = time.perf_counter()
        pages = render.render(report, "benchmark")
        t2 = time.perf_counter()
        compared = sum(m.compared for m in report.modules)
        print(f"class: {args.students} students x {len(MODULES)} modules ({files} files, "
              f"{sum(1 for p in subs.rglob('*.ipynb'))} of them notebooks); load average {os.getloadavg()[0]:.2f}")
        print(f"grader.similarity.check: {t1 - t0:.2f} s for {compared} pairs "
              f"({compared / (t1 - t0):,.0f} pairs/s), {len(report.flagged)} flagged")
        print(f"render: {t2 - t1:.2f} s for {len(pages)} files")

        from copydetect import CopyDetector
        py_dirs = [str(p) for p in sorted(subs.iterdir()) if any(p.glob("*.py"))]
        t3 = time.perf_counter()
        detector = CopyDetector(test_dirs=py_dirs, ref_dirs=py_dirs, boilerplate_dirs=[str(ROOT / "exercises")],
                                extensions=["py"], same_name_only=True, ignore_leaf=True, autoopen=False, silent=True,
                                noise_t=report.settings.noise, guarantee_t=report.settings.guarantee)
        detector.run()
        t4 = time.perf_counter()
        n = len(py_dirs)
        theirs = len(MODULES) * n * (n - 1)        # its loop visits both orders (the second is a lookup)
        print(f"copydetect CopyDetector (its own loop, {n} students' .py files): {t4 - t3:.2f} s for "
              f"{theirs // 2} pairs")
        print(f"ratio check / CopyDetector: {(t1 - t0) / (t4 - t3):.2f}")
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
