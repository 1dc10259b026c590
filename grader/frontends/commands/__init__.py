"""Subcommands of `grader`; each module registers one (see grader.cli), and grades through grader.api.

Helpers every command shares: the --config and --color/--no-color options, the configuration
(flags validated as the keys of autograde.toml they override), paths in it, the exit code of a
graded result.
Commands import the catalog, the engine and torch inside run(), not at the top: `grader` imports
every command module to build its parser, and `grader --version` or a usage error must not wait
for torch (tests/test_layout.py checks it).
"""
from __future__ import annotations

import argparse
import math
import os
import tempfile
import unicodedata

from grader import api
from grader.config import Config, validate_overrides
from grader.errors import ExitCode, UsageError
from grader.results import SubmissionResult


def add_config_argument(parser) -> None:
    parser.add_argument("--config", metavar="PATH",
                        help="course configuration (default: the nearest autograde.toml, here or in a folder above)")


def add_color_arguments(parser) -> None:
    """--color [WHEN] and --no-color, for every command that prints in colour ([reports] color)."""
    parser.add_argument("--color", nargs="?", const="always", choices=("auto", "always", "never"), default=None,
                        metavar="WHEN", help="colours: always (--color alone), never, or auto: rich decides from "
                                             "the output (a terminal or not, FORCE_COLOR, NO_COLOR); the flag wins "
                                             "over the environment and [reports] color")
    parser.add_argument("--no-color", dest="color", action="store_const", const="never",
                        help="no colours (the same as --color never)")


def color_of(config: Config, flag: str | None = None) -> bool | None:
    """Colours as the renderers take them: True, False, or None for rich to decide from the output.
    Precedence as for every setting: --color/--no-color (`flag`), then the environment (NO_COLOR,
    FORCE_COLOR: rich reads them), then [reports] color of autograde.toml."""
    if flag is None and any(os.environ.get(var) for var in ("NO_COLOR", "FORCE_COLOR")):
        return None
    return {"always": True, "never": False}.get(flag or config.color)


def output_file(path: str, example: str = "report") -> str:
    """argparse type of a file a command writes (--output, --summary): refused at once, exit 2 before
    anything is graded, where it is a folder (`example`: the file name the message suggests in it) or
    nothing can be written where it would go."""
    if os.path.isdir(path):
        raise argparse.ArgumentTypeError(f"{path} is a folder: name a file in it, e.g. {os.path.join(path, example)}")
    if os.path.exists(path):            # a file to replace or append to, /dev/stdout: its own permission
        if not os.access(path, os.W_OK):
            raise argparse.ArgumentTypeError(f"{path}: no permission to write it; choose another path")
        return path
    _writable(os.path.dirname(os.path.abspath(path)), path)
    return path


def checked_output_file(path: str, named: str) -> str:
    """output_file for a path that comes from the environment ($GITHUB_STEP_SUMMARY), not a flag's argparse
    type: UsageError naming the variable, before anything is graded."""
    try:
        return output_file(path)
    except argparse.ArgumentTypeError as e:
        raise UsageError(f"{named}: {e}") from None


def write_output(path: str, text: str, named: str, append: bool = False, atomic: bool = False) -> None:
    """Write (or append to) a command's output file. What output_file cannot foresee (a file under /proc
    that takes no write even as root, a full disk) is UsageError naming `named` (the flag or variable), the
    path and why, not a traceback. `atomic`: written beside it, then renamed over it."""
    try:
        if atomic:
            from grader.frontends.batch.outputs import write_atomic
            write_atomic(path, text)
            return
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "a" if append else "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise UsageError(f"{named} {path}: cannot be written ({e.strerror or e}); choose another path") from None


def output_folder(path: str) -> str:
    """argparse type of a folder a command writes into (--out): refused at once where it is a file or
    nothing can be made there. Nothing is made here: the command makes the folder when it writes."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise argparse.ArgumentTypeError(f"{path} is a file: name a folder (made if missing), e.g. {path}-out")
    _writable(os.path.abspath(path), path)
    return path


def _writable(folder: str, path: str) -> None:
    """Whether `folder`, or the nearest folder above it that exists (the command makes the rest), takes a
    new entry: a folder is made there and removed, so the answer is the file system's, root's included."""
    while not os.path.lexists(folder):
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"{path}: {folder} is a file, so no folder can be made under it; "
                                         "choose another path")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".grader-probe-", dir=folder))
    except OSError as e:
        raise argparse.ArgumentTypeError(f"{path}: nothing can be written in {folder} ({e.strerror}); "
                                         "choose a path in a folder you can write") from None


def positive_number(text: str) -> float:
    """argparse type of an amount that only makes sense above 0 (points possible, seconds to wait)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number greater than 0")
    return value


def assignment_name(name: str) -> str:
    """argparse type of an nbgrader assignment name (--assignment of notebooks, batch, similarity): one folder
    name, of source/ or of submitted/<student>/ (nbgrader also reads it as a glob, refuses '+' and strips
    surrounding spaces, which would then name another folder than the one meant; '../bob/ps1' would read
    another student's)."""
    bad = sorted({c for c in name if c in "/\\+*?[]" or not c.isprintable()})
    if not name.strip() or name != name.strip() or name in (".", "..") or bad:
        shown = ", ".join(repr(c) for c in bad) or "only dots or spaces, or spaces around it"
        raise argparse.ArgumentTypeError(
            f"{name!r} cannot be an nbgrader assignment name ({shown}): use one folder name, "
            "such as ps1 or 'problem set 1'")
    return name


def name_text(text: str) -> str:
    """argparse type of a name a command writes into a file (an assignment's, a column's): not blank,
    and one line with no control character."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is blank: give a name, e.g. \"Problem set 1\"")
    if any(unicodedata.category(c) == "Cc" for c in text):
        raise argparse.ArgumentTypeError(f"{text!r}: a name is one line, with no tab or other control character")
    return text


def config_path(args) -> str | None:
    """The autograde.toml a command reads: --config, else the nearest one (None: the defaults)."""
    return args.config or api.find_config()


# Config field -> the flag that overrides it, in every command that has it (for the messages).
FLAGS = {"call_timeout": "--timeout", "jobs": "--jobs", "color": "--color", "formats": "--format",
         "secret_seed": "--secret-seed-file"}


def config_from(args, **overrides) -> Config:
    """The validated configuration, with these flags (None: not given) taking precedence.

    The flags are checked first, as the keys of autograde.toml they stand for (grader.config):
    a bad one fails before the catalog and torch load."""
    validate_overrides(overrides, FLAGS)
    return api.load(args.config, overrides=overrides, flags=FLAGS)


def resolve(config: Config, path: str) -> str:
    """A path from the configuration, relative to the folder of autograde.toml."""
    return path if os.path.isabs(path) else os.path.relpath(os.path.join(config.root, path))


def submission_from(args, config: Config) -> str:
    """--submission, else [course] submission; a UsageError when there is nothing there."""
    path = args.submission or resolve(config, config.submission)
    if not os.path.exists(path):
        raise UsageError(f"{path}: no such file or folder (pass --submission PATH)")
    if not (os.path.isdir(path) or os.path.isfile(path)):       # reading a FIFO would wait for a writer forever
        raise UsageError(f"{path}: not a regular file or a folder (a pipe or a device); pass --submission a folder, "
                         ".zip, .py or .ipynb file")
    return path


def graded_exit(result: SubmissionResult, ok: bool) -> ExitCode:
    """The exit code of a command that graded `result`: 3 when the grader failed on some exercise
    (its 0 points are no grade, whatever the policy), else 0 when `ok`, else 1."""
    if result.grader_faults:
        return ExitCode.INTERNAL
    return ExitCode.OK if ok else ExitCode.FAILED
