"""Exit codes and every exception a front-end maps to one; importable without loading torch.

A front-end catches these and exits with the code beside them (grader.cli does it for the
command line); nothing else in the package decides an exit code.
"""
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0             # everything graded passed
    FAILED = 1         # something graded failed
    USAGE = 2          # bad arguments, configuration or submission path
    INTERNAL = 3       # the grader itself broke: a grader fault on some exercise, or a crash (a bug: please report it)


class UsageError(Exception):
    """A problem the user fixes by changing the command line or the configuration (exit 2)."""


class ConfigError(UsageError):
    """autograde.toml (or an override) is invalid; the message names the file, the key and the fix."""


class SelectionError(UsageError, ValueError):
    """An exercise or module name that the catalog does not know (from the command line, or passed to
    grader.api: there it is also a ValueError, what Python code expects of a bad argument)."""


class SubmissionError(UsageError):
    """A submission path that cannot be read as a folder, .zip, .py or .ipynb."""


class StubError(UsageError):
    """A solutions module `grader stubs` refuses to turn into a stub (a marker out of place, an exercise
    with no solution region, a syntax error): the message names file:line and what to write instead."""
