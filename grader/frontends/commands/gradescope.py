"""`grader gradescope [EXERCISE_OR_MODULE ...] --out autograder.zip`: build the Gradescope autograder."""
from __future__ import annotations

from grader.errors import ExitCode, UsageError
from grader.frontends.commands import add_config_argument, config_from, output_file
from grader.frontends.gradescope.bundle import build


def register(sub) -> None:
    p = sub.add_parser("gradescope", help="build a Gradescope autograder bundle (autograder.zip)",
                       description="Build the zip to upload as a Gradescope programming assignment's autograder. "
                                   "Hidden cases: the secret seed from the environment ([hidden] seed_env) or "
                                   "--secret-seed is stored in the bundle; docs/gradescope.md explains the rest.")
    p.add_argument("names", nargs="*", metavar="EXERCISE_OR_MODULE", help="the assignment's exercises (default: all)")
    p.add_argument("--out", type=bundle_file, metavar="ZIP", default="autograder.zip", help="where to write the bundle")
    seed = p.add_mutually_exclusive_group()
    seed.add_argument("--secret-seed", type=int, metavar="N", help="hidden cases from this seed")
    seed.add_argument("--no-hidden", action="store_true", help="no hidden cases, even if the seed variable is set")
    add_config_argument(p)
    p.set_defaults(func=run)


def bundle_file(path: str) -> str:
    """argparse type of --out: output_file, suggesting autograder.zip in a folder given for it."""
    return output_file(path, example="autograder.zip")


def run(args) -> int:
    from grader.catalog import select
    from grader.pipeline.scoring import max_points

    config = config_from(args)
    if not config.path:
        raise UsageError("no autograde.toml here: run in the course folder, or pass --config PATH")
    specs = select(args.names)
    seed = None if args.no_hidden else args.secret_seed if args.secret_seed is not None else config.secret_seed
    try:
        bundle = build(config, tuple(args.names), args.out, seed)
    except ValueError as e:
        raise UsageError(str(e)) from None
    total = sum(max_points(s, config) for s in specs)
    hidden = (f"on (visibility {config.visibility})" if bundle.hidden
              else f"off (set {config.seed_env} or --secret-seed)")
    print(f"wrote {bundle.path}: {len(specs)} exercises, {total:g} points; hidden cases {hidden}; "
          f"{len(bundle.entries)} files")
    return ExitCode.OK
