"""`grader init-ci`: write a GitHub Actions workflow that grades pull requests (or Classroom pushes).

The sha256 of autograde.toml and this grader's version are pinned in the workflow; `grader ci`
refuses to grade when either differs. See docs/ci.md for the threat model.
"""
from __future__ import annotations

import os

from grader import __version__
from grader.errors import ExitCode, UsageError
from grader.frontends.ci.pinning import sha256_of
from grader.frontends.ci.policy import check_reachable, parse_min_score
from grader.frontends.ci.workflow import WorkflowOptions, render_workflow
from grader.frontends.commands import add_config_argument, config_from, output_file, write_output


def register(sub) -> None:
    p = sub.add_parser("init-ci", help="write a GitHub Actions workflow that grades pull requests",
                       description=__doc__.split("\n\n", 1)[1])
    p.add_argument("names", nargs="*", metavar="EXERCISE_OR_MODULE", help="what the workflow grades (default: all)")
    p.add_argument("--classroom", action="store_true",
                   help="GitHub Classroom flavour: grade on push, report through autograding-grading-reporter")
    p.add_argument("--output", type=output_file, metavar="PATH",
                   help="default: .github/workflows/grade.yml (classroom.yml with --classroom)")
    p.add_argument("--install", metavar="REQUIREMENT",
                   help="how CI installs the grader (default: this repository if it holds the grader, "
                        "else nn-grader==<this version>)")
    p.add_argument("--min-score", metavar="X", help="passed on to `grader ci --min-score` (checked as it checks it: "
                   "points the selected exercises can reach, or a percentage from 0%% to 100%%)")
    p.add_argument("--force", action="store_true", help="overwrite an existing workflow")
    add_config_argument(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from grader.catalog import select

    config = config_from(args)
    if not config.path:
        raise UsageError("no autograde.toml here: run init-ci in the course repository, or pass --config PATH")
    select(args.names)                       # unknown names fail now, not in CI
    parse_min_score(args.min_score)          # and a --min-score that `grader ci` would refuse on every run
    check_reachable(args.min_score, args.names, config)
    flavour = "classroom" if args.classroom else "pull_request"
    output = args.output or os.path.join(config.root, ".github", "workflows",
                                         "classroom.yml" if args.classroom else "grade.yml")
    if os.path.exists(output) and not args.force:
        raise UsageError(f"{output} exists; pass --force to overwrite it (or --output PATH)")
    text = render_workflow(config, WorkflowOptions(flavour=flavour, names=tuple(args.names),
                                                   install=args.install or "", min_score=args.min_score or ""))
    write_output(output, text, "--output")
    print(f"wrote {output}\n  pinned: {config.path} sha256 {sha256_of(config.path)}, grader {__version__}\n"
          f"  after any change to {os.path.basename(config.path)}, rerun `grader init-ci --force` and commit both.")
    if not args.classroom:
        print(f"  for hidden cases, add the repository secret {config.seed_env}. Threat model: docs/ci.md")
    return ExitCode.OK
