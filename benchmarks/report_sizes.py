"""Report sizes: a student's feedback (HTML and Markdown) and the class report of a class of 60.

    .venv/bin/python benchmarks/report_sizes.py [--n 60] [--keep DIR]

Grades, once each, the kinds of submission a class holds: solutions/ (full marks), solutions/ with
two known mistakes (scaled_dot_product_attention's softmax over the wrong dim, positional_encoding's
sin and cos swapped: heatmaps), with five mistakes over four modules, the syntax_error fixture
(attention.py only: every other module missing), the untouched stubs of exercises/, an empty
folder. The class is N students cycling through those results, as `grader batch` would have
graded N copies (grading is deterministic); their feedback files and class_report.html are
written as batch writes them (grader.frontends.batch.outputs, class_report) into a temporary
out folder (--keep: into DIR, to open in a browser). Prints bytes per file.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import scenarios  # noqa: E402
from arguments import at_least  # noqa: E402
from conftest import SOLUTIONS, mistake_source, replace_function  # noqa: E402

from grader import api  # noqa: E402
from grader.frontends.batch import class_report, outputs  # noqa: E402
from grader.frontends.batch.gradebook import Row  # noqa: E402
from grader.frontends.batch.run import _state  # noqa: E402

KINDS = {
    "full_marks": {},
    "two_mistakes": {"attention.scaled_dot_product_attention": "wrong_dim", "attention.positional_encoding": "swapped"},
    "five_mistakes": {"attention.causal_mask": "inverted", "activations.sigmoid": "precedence",
                      "lstm.lstm_cell": "swap_i_f", "mlp.linear_forward": "no_bias", "cnn.conv2d": "flipped"},
}
EXTRA_KINDS = ("syntax_error", "stubs", "empty")     # made in main(), each its own way


def copy_with(dest: Path, changes: dict[str, str]) -> Path:
    dest.mkdir(parents=True)
    for path in SOLUTIONS.glob("*.py"):
        shutil.copy(path, dest / path.name)
    for key, variant in changes.items():
        module, function = key.split(".")
        file = dest / f"{module}.py"
        file.write_text(replace_function(file.read_text(), function, mistake_source(module, f"{function}__{variant}")))
    return dest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    kinds = len(KINDS) + len(EXTRA_KINDS)        # one student of each kind at least: each one's sizes are shown
    parser.add_argument("--n", type=at_least(kinds), default=60, help=f"students in the class ({kinds} or more)")
    parser.add_argument("--keep", help="write the out folder here (default: a temporary folder, removed)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="report-sizes-"))
    try:
        subs = {name: copy_with(work / "subs" / name, changes) for name, changes in KINDS.items()}
        subs["syntax_error"] = scenarios.submission("syntax_error")
        subs["stubs"] = Path(shutil.copytree(ROOT / "exercises", work / "subs" / "stubs",
                                             ignore=shutil.ignore_patterns("__pycache__")))
        (work / "subs" / "empty").mkdir()
        subs["empty"] = work / "subs" / "empty"
        config = api.load(str(ROOT / "autograde.toml"), env={})
        with api.sandbox(config) as sandbox:
            results = {name: api.grade(path, [], config, sandbox=sandbox) for name, path in subs.items()}
        out = Path(args.keep) if args.keep else work / "out"
        kinds = list(results)
        rows = []
        for i in range(args.n):
            kind = kinds[i % len(kinds)]
            r = results[kind]
            rows.append(Row(f"{kind}-{i:02d}", "h", "s", str(subs[kind]), _state(r), r.score, r.max_score, "", 0.0, r))
        for row in rows:
            outputs.write_student(str(out), row.student, row.result, config.visibility)
        page = class_report.render(class_report.class_stats(rows), "report sizes", {"students": str(args.n)})
        outputs.write_atomic(str(out / "class_report.html"), page)
        print(f"{'submission':<16} {'exercises':>9} {'feedback.html':>14} {'feedback.md':>12} {'results.json':>13}")
        for kind in kinds:
            folder = out / "students" / f"{kind}-{kinds.index(kind):02d}"
            sizes = [os.path.getsize(folder / f) for f in ("feedback.html", "feedback.md", "results.json")]
            print(f"{kind:<16} {len(results[kind].exercises):>9} {sizes[0]:>14,} {sizes[1]:>12,} {sizes[2]:>13,}")
        print(f"class_report.html, {args.n} students: {os.path.getsize(out / 'class_report.html'):,} bytes"
              + (f" ({out})" if args.keep else ""))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
