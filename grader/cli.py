"""The `grader` command: parses arguments and maps outcomes to exit codes, nothing else.

Each subcommand lives in grader/frontends/commands/<name>.py with `register(subparsers)` (which sets
`func`) — adding a front-end is adding a file. The commands grade through grader.api; every
exception a user can fix is a grader.errors.UsageError, which exits 2 with its message. Any other
exception is a bug in the grader: its traceback is printed and the exit code is 3 (ExitCode.INTERNAL),
as for a command whose result holds a grader fault. A command that grades a submission (it takes
--submission) has its sandbox's zygote launched before it imports the catalog, so that the two
imports of torch run side by side (grader.sandbox.launch); it imports the catalog, torch with it,
frozen (grader.imports). The command itself (`console`) ends its process without the interpreter's
teardown of torch, once everything that must finish has.
"""
from __future__ import annotations

import argparse
import atexit
import importlib
import os
import pkgutil
import sys
import threading
import traceback

from grader import __version__
from grader.errors import ExitCode, UsageError
from grader.frontends import commands
from grader.imports import import_frozen


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv`: with the module of the command it names alone (`grader check` does not
    import what `grader batch` or `grader similarity` need), else (no command, --help, a name that
    is no command's) with every command. A command's module is named after it, '-' as '_'."""
    parser = argparse.ArgumentParser(prog="grader", description="Grade neural-network primitives against PyTorch.")
    parser.add_argument("--version", action="version", version=f"grader {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    names = sorted(info.name for info in pkgutil.iter_modules(commands.__path__))
    named = next((a for a in argv or () if not a.startswith("-")), "").replace("-", "_")
    for name in [named] if named in names else names:
        importlib.import_module(f"grader.frontends.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return ExitCode.USAGE
    grades = hasattr(args, "submission")    # it grades a submission (check, ci, bench): its sandbox's zygote
    if grades:                              # imports torch now, beside this process's own import of it
        from grader.sandbox import launch
        launch.early()
    try:
        if grades:
            import_frozen("grader.pipeline.engine", "grader.catalog")
        return int(args.func(args))
    except UsageError as e:      # ConfigError, SelectionError and SubmissionError are UsageErrors
        print(f"grader: error: {e}", file=sys.stderr)
        return ExitCode.USAGE
    except KeyboardInterrupt:
        print("grader: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:      # `grader list | head`: the reader left; not a bug, nothing to say
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())    # so the interpreter's final flush does not fail again
        return 141               # 128 + SIGPIPE, what a shell reports for a command cut short
    except Exception:            # a bug in the grader, not in the user's input
        traceback.print_exc()
        print(f"grader: internal error in grader {__version__}: this is a bug in the grader, not in the "
              "submission or the command; please report it with the traceback above", file=sys.stderr)
        return ExitCode.INTERNAL


def _end_helpers() -> None:
    """Stop and collect the helper processes multiprocessing started for this one (the forkserver
    that `grader batch`'s workers are forked from, then the resource tracker). Each would end once
    this process had gone, as an orphan that pid 1 must collect."""
    for module, helper in (("multiprocessing.forkserver", "_forkserver"),
                           ("multiprocessing.resource_tracker", "_resource_tracker")):
        stop = getattr(getattr(sys.modules.get(module), helper, None), "_stop", None)
        if stop is not None:
            try:
                stop()          # nothing when it never started
            except Exception:   # one that ended already, or not ours: nothing left to collect
                pass


def console() -> None:
    """The `grader` command and `python -m grader`: main(), then the end of the process. What must
    finish is finished first: threads that are not daemons joined (and what concurrent.futures and
    multiprocessing run when they are), atexit handlers run (the kernel counters' closing helper,
    weakref finalizers, Dask's cluster), stdout and stderr flushed. Then os._exit skips the
    interpreter's teardown, which frees every object of torch one by one: 0.3-1 s a command,
    paid after the report was written and read by no one."""
    code = main()
    try:
        shutdown = getattr(threading, "_shutdown", None)
        if shutdown is not None:
            shutdown()
    except KeyboardInterrupt:
        code = 130
    atexit._run_exitfuncs()     # each handler's exception is printed there, the others still run
    _end_helpers()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # a reader that left, a stream already closed: nothing to add
            pass
    os._exit(code)
