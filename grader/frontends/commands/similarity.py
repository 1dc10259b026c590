"""`grader similarity SUBMISSIONS --out DIR [--threshold T] [--against PREVIOUS] [--boilerplate PATH ...]
[--modules MODULE ...]`:
which submissions share code beyond the starter files (grader.similarity), and the same as
`grader batch --similarity`'s section (batch_section)."""
from __future__ import annotations

import dataclasses
import difflib
import os
import re
import sys

from grader.errors import ExitCode, UsageError
from grader.frontends.commands import add_config_argument, assignment_name, config_from, output_folder, resolve

FOLDER = "similarity"                   # the section's folder in a batch's --out
PAGE = re.compile(r"^[a-z0-9_]+-\d+\.html$")


def register(sub) -> None:
    p = sub.add_parser(
        "similarity", help="compare every pair of students' modules for shared code beyond the starter files",
        description="Compare each course module between every two students (and with a previous term's "
                    "submissions, with --against) by winnowed fingerprints of the code: names, comments, layout "
                    "and function order do not count, and the starter files in exercises/ (plus --boilerplate) "
                    "are subtracted. Writes index.html (ranked pairs per module), a side-by-side page per pair "
                    "to review, and similarity.csv. Text analysis only: no student code is run. Exit 0: the "
                    "comparison ran (whatever it found); 2: usage error or nothing to compare.")
    p.add_argument("submissions", metavar="SUBMISSIONS",
                   help="folder with one entry per student (as for grader batch), or nbgrader's course folder")
    p.add_argument("--modules", nargs="+", default=[], metavar="MODULE",
                   help="compare only these modules, e.g. attention rnn (default: every course module)")
    p.add_argument("--out", type=output_folder, required=True, metavar="DIR",
                   help="output folder (index.html, pairs/, similarity.csv)")
    p.add_argument("--threshold", type=float, default=0.5, metavar="T",
                   help="flag a pair for review when either share reaches T (0-1, default 0.5)")
    p.add_argument("--floor", type=float, default=0.2, metavar="F",
                   help="list pairs in the table and the CSV from this share up (0-1, default 0.2)")
    p.add_argument("--against", metavar="PREVIOUS_TERM_DIR",
                   help="also compare with a previous term's submissions (this term x previous term only)")
    p.add_argument("--boilerplate", nargs="+", default=[], metavar="PATH",
                   help="more code every student received (folders, .py, .ipynb, .zip), subtracted like the stubs")
    p.add_argument("--assignment", metavar="NAME", type=assignment_name,
                   help="nbgrader assignment name (picks submitted/<student>/NAME/)")
    add_config_argument(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from grader.catalog import CHAPTERS
    from grader.similarity import Settings, render, validate

    settings = validate(Settings(threshold=args.threshold, floor=args.floor))
    modules = _modules(args.modules, CHAPTERS)
    config = config_from(args)
    out = os.path.abspath(args.out)
    report = _check(args.submissions, out, modules, CHAPTERS, settings, config, args.boilerplate,
                    args.against, args.assignment)
    _write(out, render.render(report, config.course_name))
    print(render.terminal(report, out), file=sys.stderr)
    return ExitCode.OK


def batch_section(submissions: str, out: str, modules, config, assignment: str | None = None):
    """`grader batch --similarity`: the report in OUT/similarity/; returns (the index's path
    relative to OUT, or "" when nothing could be compared, and a line for the batch's summary).
    Nothing to compare (one student) is a line, not an error: the grades are done."""
    from grader.catalog import CHAPTERS
    from grader.similarity import Settings, SimilarityError, render

    folder = os.path.join(out, FOLDER)
    try:
        report = _check(submissions, out, list(modules), CHAPTERS, Settings(), config, [], None, assignment)
    except SimilarityError as e:
        return "", f"similarity: not compared: {e}"
    except Exception as e:          # the grades are written already: the batch goes on without the section
        return "", (f"similarity: not compared: the check failed ({type(e).__name__}: {e}), a bug in the grader, "
                    "not in the submissions; the grades are not affected (`grader similarity` shows the traceback)")
    _write(folder, render.render(report, config.course_name))
    n = len(report.flagged)
    return f"{FOLDER}/index.html", (f"similarity: {n} pair{'' if n == 1 else 's'} to review of "
                                    f"{sum(m.compared for m in report.modules)} compared, in {folder}/index.html")


def _check(submissions, out, modules, course, settings, config, boilerplate, against, assignment):
    from grader.frontends.batch.discover import discover
    from grader.similarity import SimilarityError, check

    found = _discover(discover, submissions, assignment, out, "SUBMISSIONS")
    previous = _discover(discover, against, assignment, out, "--against") if against else None
    if previous is not None and not previous.entries:
        raise SimilarityError(f"--against {against}: no submissions found there (one folder or .zip per student)")
    stubs = resolve(config, config.submission)
    starter = ([stubs] if os.path.isdir(stubs) else []) + list(boilerplate)
    notes = list(found.notes)
    if not os.path.isdir(stubs):
        notes.append(f"no starter files subtracted from {stubs} (not a folder): give them with --boilerplate")
    report = check({e.student: e.path for e in found.entries}, modules, starter, settings,
                   {e.student: e.path for e in previous.entries} if previous else None,
                   {e.student: e.problem for e in found.entries if e.problem}, course)
    return dataclasses.replace(report, notes=tuple(notes) + report.notes)


def _discover(discover, path, assignment, out, what):
    from grader.similarity import SimilarityError
    try:
        found = discover(path, assignment, exclude=out)
    except FileNotFoundError as e:
        raise SimilarityError(f"{what} {e}") from None
    if what == "SUBMISSIONS" and not found.entries:
        raise SimilarityError(f"{path}: no submissions found (expected one folder or .zip per student, or "
                              "nbgrader's submitted/<student>/<assignment>/)")
    return found


def _modules(names, course) -> list[str]:
    chosen = []
    for name in names:
        module = name.split(".")[0]
        if module not in course:
            close = difflib.get_close_matches(module, list(course), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise UsageError(f"unknown module '{name}'{hint}; the course's modules: {', '.join(course)}")
        if module not in chosen:
            chosen.append(module)
    return [m for m in course if m in chosen] if chosen else list(course)


def _write(folder: str, files: dict[str, str]) -> None:
    """Write the report's files; pair pages of an earlier run that this one has not written go."""
    from grader.frontends.batch.outputs import write_atomic

    pairs = os.path.join(folder, "pairs")
    if os.path.isdir(pairs) and not os.path.islink(pairs):
        for name in os.listdir(pairs):
            if PAGE.match(name) and f"pairs/{name}" not in files:
                os.unlink(os.path.join(pairs, name))
    for rel, text in files.items():
        write_atomic(os.path.join(folder, rel), text)
