"""Argument types the benchmarks share. A bad value is refused by argparse, before anything is
measured, with a message that says what to give instead: never a traceback after minutes of work.

    parser.add_argument("--repeat", type=at_least(1), default=3)
    parser.add_argument("--against", type=checkout)

And the order in which the checkouts of --tree and --against take turns (`in_turns`).
"""
from __future__ import annotations

import argparse
import compileall
import os
from typing import Callable, Iterator


def at_least(minimum: int) -> Callable[[str], int]:
    """A whole number no smaller than `minimum`."""
    def whole_number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number: give {minimum} or more") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is too few: give {minimum} or more")
        return value
    return whole_number


def seconds(text: str) -> float:
    """A positive number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds: give one above 0, e.g. 2") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text}: give a number of seconds above 0, e.g. 2")
    return value


def whole_numbers(text: str) -> list[int]:
    """Comma-separated whole numbers, at least one (seeds: "1,2,3")."""
    parts = [p.strip() for p in text.split(",")]
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give whole numbers separated by commas, e.g. 1,2,3") from None
    return values


def checkout(text: str) -> str:
    """A checkout of this project (its own grader package and worked solutions), as an absolute path:
    the tree measured with --tree, or the older one measured beside it with --against. Its grader's
    bytecode is compiled first, as `make install` leaves it: a `git worktree` has none, and where
    PYTHONDONTWRITEBYTECODE is set nothing writes it later, so every process of that tree compiled the
    grader's modules from source again (its sandbox's zygote, and each child its trusted modules). Two
    checkouts of the same code then measured ~110 ms apart on a `grader check attention`."""
    path = os.path.abspath(text)
    if not (os.path.isfile(os.path.join(path, "grader", "__init__.py"))
            and os.path.isdir(os.path.join(path, "solutions"))):
        raise argparse.ArgumentTypeError(
            f"{text}: not a checkout of this project (no grader/ and solutions/ in it); make one of an "
            f"older commit with `git worktree add /tmp/base <commit>` and give /tmp/base")
    if not compileall.compile_dir(os.path.join(path, "grader"), quiet=1):
        raise argparse.ArgumentTypeError(f"{text}: its grader package does not compile (see above)")
    return path


def in_turns(trees: list[str], rounds: int) -> Iterator[str]:
    """Each tree once a round, `rounds` times, the order reversed every other round. The tree measured
    first in a pair came out slower in every `grader check attention` compared so (grader_cost.py:
    1162 against 1049 ms, 1191 against 1044, on the same code), so no tree may always go first."""
    for r in range(rounds):
        yield from (trees if r % 2 == 0 else trees[::-1])
