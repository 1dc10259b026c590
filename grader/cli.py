"""The `grader` command: parses arguments and maps outcomes to exit codes, nothing else.

Each subcommand lives in grader/commands/<name>.py with `register(subparsers)` (which sets
`func`) — adding a front-end is adding a file.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from enum import IntEnum

from grader import __version__, commands


class ExitCode(IntEnum):
    OK = 0             # everything graded passed
    FAILED = 1         # something graded failed
    USAGE = 2          # bad arguments, configuration or submission path
    INTERNAL = 3       # the grader itself broke (a bug: please report it)


class UsageError(Exception):
    """A problem the user fixes by changing the command line or the configuration."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grader", description="Grade neural-network primitives against PyTorch.")
    parser.add_argument("--version", action="version", version=f"grader {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"grader.commands.{info.name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from grader.config import ConfigError
    from grader.errors import SelectionError
    from grader.loader import SubmissionError

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return ExitCode.USAGE
    try:
        return int(args.func(args))
    except (UsageError, ConfigError, SelectionError, SubmissionError) as e:
        print(f"grader: error: {e}", file=sys.stderr)
        return ExitCode.USAGE
    except KeyboardInterrupt:
        print("grader: interrupted", file=sys.stderr)
        return 130
