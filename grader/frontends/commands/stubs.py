"""`grader stubs [--check]`: regenerate exercises/ from solutions/ (or check they agree).

Both refuse (exit 2, grader.errors.StubError) a solutions module whose stub could hold a worked
solution: see grader.stubs."""
from __future__ import annotations

from grader.errors import ExitCode
from grader.stubs import generate, stale
from grader.frontends.commands import add_config_argument, config_from, resolve


def register(sub) -> None:
    p = sub.add_parser("stubs", help="regenerate the student stubs in exercises/ from solutions/")
    p.add_argument("--check", action="store_true", help="only report stubs that differ; exit 1 if any")
    add_config_argument(p)
    p.set_defaults(func=run)


def run(args) -> int:
    config = config_from(args)
    solutions = resolve(config, config.solutions)
    exercises = resolve(config, config.submission)
    if args.check:
        bad = stale(solutions, exercises)
        for name in bad:
            print(f"{exercises}/{name} differs from what `grader stubs` generates from {solutions}/{name}")
        return ExitCode.FAILED if bad else ExitCode.OK
    for name, stub in generate(solutions, exercises).items():
        print(f"wrote {exercises}/{name}" + ("" if stub.regions else " (copied as it is: no exercise in it)"))
    return ExitCode.OK
