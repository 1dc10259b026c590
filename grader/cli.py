"""The `grader` command: parses arguments and maps outcomes to exit codes, nothing else.

Each subcommand lives in grader/frontends/commands/<name>.py with `register(subparsers)` (which sets
`func`) — adding a front-end is adding a file. The commands grade through grader.api; every
exception a user can fix is a grader.errors.UsageError, which exits 2 with its message. Any other
exception is a bug in the grader: its traceback is printed and the exit code is 3 (ExitCode.INTERNAL),
as for a command whose result holds a grader fault.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import traceback

from grader import __version__
from grader.errors import ExitCode, UsageError
from grader.frontends import commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grader", description="Grade neural-network primitives against PyTorch.")
    parser.add_argument("--version", action="version", version=f"grader {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"grader.frontends.commands.{info.name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return ExitCode.USAGE
    try:
        return int(args.func(args))
    except UsageError as e:      # ConfigError, SelectionError and SubmissionError are UsageErrors
        print(f"grader: error: {e}", file=sys.stderr)
        return ExitCode.USAGE
    except KeyboardInterrupt:
        print("grader: interrupted", file=sys.stderr)
        return 130
    except Exception:            # a bug in the grader, not in the user's input
        traceback.print_exc()
        print(f"grader: internal error in grader {__version__}: this is a bug in the grader, not in the "
              "submission or the command; please report it with the traceback above", file=sys.stderr)
        return ExitCode.INTERNAL
