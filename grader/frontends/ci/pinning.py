"""What `grader ci` checks before it grades: the configuration and the grader are the pinned ones.

`grader init-ci` writes the sha256 of autograde.toml and the grader's version into the workflow;
`grader ci --expect-config-sha256 ... --expect-grader-version ...` refuses to grade when they
differ, so a pull request that edits autograde.toml (more points, looser tolerances, no hidden
cases) fails loudly instead of raising its own grade. The submission folder must also lie inside
the checked-out pull request: a symlink `exercises -> ../trusted/solutions` would otherwise
grade the instructor's solutions.
"""
from __future__ import annotations

import hashlib
import os

from grader import __version__


class PinError(Exception):
    """The configuration, the grader or the submission path is not the trusted one."""


def sha256_of(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check_config(config_path: str, expected: str) -> None:
    if not config_path:
        raise PinError("--expect-config-sha256 was given but no autograde.toml was read "
                       "(pass --config PATH to the trusted configuration)")
    found = sha256_of(config_path)
    if found != expected.strip().lower():
        raise PinError(f"{config_path} has been modified: its sha256 is {found}, the workflow pins "
                       f"{expected.strip().lower()}. The grading configuration is pinned so that a pull request "
                       "cannot change how it is graded; grading refused. If the instructor changed "
                       "autograde.toml on purpose, run `grader init-ci --force` and commit the new workflow.")


def check_version(expected: str) -> None:
    if __version__ != expected.strip():
        raise PinError(f"this is grader {__version__}, the workflow pins grader {expected.strip()}: grading refused. "
                       "Install the pinned version (the workflow's install step), or run `grader init-ci --force` "
                       "to pin this one.")


def check_inside(submission: str, source_root: str, whence: str = "--source-root") -> None:
    """The submission resolves (symlinks followed) to a path inside source_root (`whence`: where
    that root came from, for the message)."""
    real, root = os.path.realpath(submission), os.path.realpath(source_root)
    if os.path.commonpath([real, root]) != root:
        raise PinError(f"{submission} resolves to {real}, outside {source_root} (the checked-out pull request, "
                       f"{whence}): is it a symbolic link, or a path out of the checkout? Grading refused. "
                       "Grade a folder inside it, or pass --source-root DIR, the folder that holds the submission.")
