"""What the loader (grader.submission.loader) needs to read a submission's files and say what it
passed over: a source's bytes as the text Python reads, its tree as Python builds it (`parse`,
for every reader of a student's source), the room its files have together, the modules in a
folder inside it, and a bounded list of what it had to say."""
from __future__ import annotations

import ast
import os
import re
import threading

from grader.submission.limits import MAX_FILES, MAX_TOTAL


def decoded(data: bytes, shown: str, problems: list[str]) -> str:
    """A source file's bytes as the text Python would read, and what it took said in `problems`: a
    UTF-16 file (Windows editors save it so) decoded as such, null bytes (which Python refuses
    anywhere in a source) removed; any other byte that is not UTF-8 shown as U+FFFD."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        problems.append(f"{shown}: saved as UTF-16 text, graded as such; save it as UTF-8 (your editor's "
                        "encoding setting), the encoding Python reads")
        text = data.decode("utf-16", "replace")
    else:
        text = data.decode("utf-8", "replace")
    if "\x00" in text:
        lines = [str(n) for n, line in enumerate(text.split("\n"), 1) if "\x00" in line]
        problems.append(f"{shown}: null bytes (\\x00) on line{'s' if len(lines) > 1 else ''} "
                        f"{', '.join(lines[:5])}{', ...' if len(lines) > 5 else ''}, removed before grading "
                        "(Python refuses them); delete them from the file")
        text = text.replace("\x00", "")
    return text


class Room:
    """What is left of MAX_TOTAL, the bytes a submission's files may hold together."""

    def __init__(self) -> None:
        self.left, self.said = MAX_TOTAL, False

    def takes(self, name: str, size: int, problems: list[str]) -> bool:
        """Whether a file of `size` bytes is read; the first that is not is said in `problems`."""
        if size > self.left:
            if not self.said:
                problems.append(f"{name} and what follows: passed over: with it the submission's files would "
                                f"hold more than {MAX_TOTAL >> 20} MiB; clear the notebooks' outputs and leave out "
                                "what is not an exercise")
            self.said = True
            return False
        self.left -= size
        return True


def nested(path: str, names: list[str]) -> list[str]:
    """Up to three modules one or two folders down (a folder handed in inside the submission)."""
    found: list[str] = []
    for name in names:
        for root, dirs, inner in os.walk(os.path.join(path, name)):
            depth = os.path.relpath(root, path).count(os.sep)
            dirs[:] = sorted(dirs)[:MAX_FILES] if depth < 1 else []
            found += [os.path.relpath(os.path.join(root, f), path) for f in sorted(inner)[:MAX_FILES]
                      if f.endswith((".py", ".ipynb"))]
            if len(found) >= 3:
                return found[:3]
    return found


def at_most(problems: list[str], shown: int = 12) -> tuple[str, ...]:
    """The first `shown` problems, and how many more (an archive of a thousand links says it once)."""
    more = len(problems) - shown
    return tuple(problems[:shown]) + ((f"... and {more} more like these",) if more > 0 else ())


_PARSING = threading.Lock()
TOP_LEVEL = re.compile(r"^(?!else\b|elif\b|except\b|finally\b)[^\s#)\]}]")   # a line that starts a top-level statement


def parse(source: str) -> ast.Module:
    """ast.parse of a student's source, for any grader code that reads one. Raises SyntaxError
    (ValueError for null bytes) as ast.parse does, and TooDeep, a SyntaxError at the top-level
    statement that holds it, where the source nests too deeply for ast.parse: the red team's
    `x = 1+1+...` of 200,000 terms raised RecursionError, a grader fault for the whole module. The
    salvage drops that statement as it drops a syntax error. (Python's own import compiles in C and
    takes a little more: 2,990 terms import, and the child grades the module as written.)
    One parse at a time: CPython 3.11 counts the depth of the tree it builds per interpreter, not
    per thread, and two threads parsing at once can fail with "SystemError: AST constructor
    recursion depth mismatch" (python/cpython#106905; a grader fault in a Dask worker grading two
    exercises at once)."""
    with _PARSING:
        try:
            return ast.parse(source)
        except (RecursionError, MemoryError):
            pass
        first, last = _too_deep(source)
    raise TooDeep(TooDeep.WHY, ("<student>", first, 1, "", last, 1))


class TooDeep(SyntaxError):
    """A source ast.parse cannot take for its depth, at the top-level statement lineno..end_lineno
    that holds it (or from line 1 to the end, when no statement alone does)."""

    WHY = "too deeply nested for Python to read: split the expression into steps"


def _too_deep(source: str) -> tuple[int, int]:
    """The first and last line of the top-level statement that nests too deeply (1 and the last
    line when none alone does)."""
    lines = source.splitlines()
    starts = [i for i, text in enumerate(lines, 1) if TOP_LEVEL.match(text)]
    for first, after in zip(starts, [*starts[1:], len(lines) + 1]):
        try:
            ast.parse("\n".join(lines[first - 1:after - 1]))
        except (RecursionError, MemoryError):
            return first, after - 1
        except (SyntaxError, ValueError):
            continue
    return 1, max(len(lines), 1)
