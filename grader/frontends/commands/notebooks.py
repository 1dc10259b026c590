"""`grader notebooks --out COURSE_DIR [MODULE ...] [--assignment NAME]`: nbgrader source notebooks,
and an nbgrader_config.py that lets nbgrader find `alembic` when it is called by its full path."""
from __future__ import annotations

import os
import shlex
import sys

from grader.errors import ExitCode, UsageError
from grader.frontends.commands import add_config_argument, assignment_name, config_from, output_folder, resolve


def register(sub) -> None:
    p = sub.add_parser("notebooks", help="write nbgrader source notebooks (one per module) from solutions/",
                       description="Write nbgrader source notebooks into "
                                   "COURSE_DIR/source/<assignment>/<module>.ipynb, ready for "
                                   "`nbgrader generate_assignment <assignment>` run in COURSE_DIR.")
    p.add_argument("modules", nargs="*", metavar="MODULE", help="e.g. attention (default: every module of solutions/)")
    p.add_argument("--out", type=output_folder, required=True, metavar="COURSE_DIR",
                   help="the nbgrader course directory")
    p.add_argument("--assignment", metavar="NAME", type=assignment_name,
                   help="put every notebook in this one assignment "
                        "(default: one assignment per module, named after it)")
    add_config_argument(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from grader.catalog import select
    try:
        from grader.frontends.notebooks.generate import write_nbgrader_config, write_source_notebooks
    except ImportError as e:
        raise UsageError(f"grader notebooks needs nbformat ({e}): pip install -c constraints.txt "
                         "'nn-grader[notebooks]'") from None

    config = config_from(args)
    solutions = resolve(config, config.solutions)
    if not os.path.isdir(solutions):
        raise UsageError(f"{solutions}: no such folder ([course] solutions in {config.path or 'the defaults'})")
    present = sorted(n[:-3] for n in os.listdir(solutions) if n.endswith(".py"))
    select(args.modules)                       # unknown names: a "did you mean" error
    modules = [m for m in present if not args.modules or m in args.modules]
    if not modules:
        raise UsageError(f"no solution module to write from {solutions} (asked for: {', '.join(args.modules)})")
    assignments = sorted({args.assignment or m for m in modules})
    for module in modules:
        folder = os.path.join(args.out, "source", args.assignment or module)
        for path in write_source_notebooks(solutions, folder, config, [module]):
            print(f"wrote {path}")
    print(write_nbgrader_config(args.out))
    here = os.path.join(os.path.dirname(sys.executable), "nbgrader")
    nbgrader = shlex.quote(here) if os.path.exists(here) else "nbgrader"
    print(f"next: cd {shlex.quote(args.out)} && "
          + " && ".join(f"{nbgrader} generate_assignment {shlex.quote(a)}" for a in assignments))
    return ExitCode.OK
