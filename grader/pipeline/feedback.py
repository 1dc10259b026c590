"""Words for the student: what a case was, what went wrong, what to do next (second person).

Pure functions from records and inputs to strings; the engine calls them, reports show them.
"""
from __future__ import annotations

import builtins
import inspect
import os
import re
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import torch

from grader.catalog import catalog
from grader.catalog.spec import Case
from grader.results import Comparison, FailureKind

NOT_IMPLEMENTED = ("not implemented yet: replace the `raise NotImplementedError(...)` in {where} "
                   "with your code")
MAX_OUTPUTS = 3       # failing outputs a message spells out; the others are counted and named
MAX_NAMES = 6         # names listed after "and N more"
MAX_LINE = 600        # characters of a line the headline repeats, or of a raised exception's message
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def shorten(text: str, limit: int = MAX_LINE) -> str:
    """`text`, cut at `limit` characters with the count of what was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit].rstrip()}… ({len(text) - limit} more characters)"


def names_and_more(names: list[str], limit: int = MAX_NAMES) -> str:
    """'a, b, c' or 'a, b, c and 4 more'."""
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def describe_value(x: Any, depth: int = 0) -> str:
    """Shapes and dtypes, never values; nested parameter bundles are summarised, not listed."""
    if isinstance(x, torch.Tensor):
        return f"{tuple(x.shape)} {str(x.dtype).replace('torch.', '')}"
    if isinstance(x, dict):
        if depth >= 1 or len(x) > 8:
            return f"{{{len(x)} entries: {', '.join(map(str, list(x)[:4]))}{', ...' if len(x) > 4 else ''}}}"
        return "{" + ", ".join(f"{k}: {describe_value(v, depth + 1)}" for k, v in x.items()) + "}"
    if isinstance(x, (list, tuple)):
        if len(x) > 4 or depth >= 1:
            return f"[{len(x)} items]"
        return "[" + ", ".join(describe_value(v, depth + 1) for v in x) + "]"
    if isinstance(x, (str, bytes)):
        return repr(x) if len(x) <= 40 else f"{type(x).__name__} of length {len(x)}"
    if callable(x):
        return getattr(x, "__name__", "function")
    return repr(x)


def describe_case(reference: Any, args: tuple, kwargs: dict) -> str:
    """'Q: (2, 4, 8) float32, K: (2, 6, 8) float32, mask: None' using the reference's parameter names."""
    try:
        params = list(inspect.signature(reference).parameters)
    except (TypeError, ValueError):
        params = []
    parts = []
    for i, a in enumerate(args):
        name = params[i] if i < len(params) else f"arg{i + 1}"
        parts.append(f"{name}: {describe_value(a)}")
    parts += [f"{k}: {describe_value(v)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def case_description(reference: Any, case: Case) -> str:
    """What a public case was: its note, then the shapes and dtypes of its inputs."""
    desc = describe_case(reference, case.args, dict(case.kwargs))
    return f"{case.note} — {desc}" if case.note else desc


def comparisons_message(comps: tuple[Comparison, ...]) -> str:
    """One line for a whole return value. Up to MAX_OUTPUTS + 1 outputs, each is said in order
    ("h correct; c wrong: ..."); with more (a bundle of parameters), the first MAX_OUTPUTS wrong
    ones are said in full, then the other wrong ones are counted and named, then the correct ones
    counted: a line of a few hundred characters, however many tensors an optimiser updates."""
    if len(comps) == 1:
        c = comps[0]
        return "correct" if c.ok else c.problem
    if len(comps) <= MAX_OUTPUTS + 1:
        return "; ".join(f"{c.name} correct" if c.ok else f"{c.name} wrong: {c.problem}" for c in comps)
    wrong = [c for c in comps if not c.ok]
    parts = [f"{len(wrong)} of {len(comps)} outputs wrong"] if wrong else [f"all {len(comps)} outputs correct"]
    parts += [f"{c.name} wrong: {c.problem}" for c in wrong[:MAX_OUTPUTS]]
    if len(wrong) > MAX_OUTPUTS:
        rest = [c.name for c in wrong[MAX_OUTPUTS:]]
        parts.append(f"and {len(rest)} more wrong: {names_and_more(rest)}")
    if wrong and len(wrong) < len(comps):
        parts.append(f"{len(comps) - len(wrong)} correct")
    return "; ".join(parts)


def grader_fault_message(error: BaseException, with_text: bool = True) -> str:
    """The headline of an exercise the grader failed on: whose fault it is, that these points are
    no grade, and for the bug report the exception and where the grader raised it."""
    frames = traceback.extract_tb(error.__traceback__) if error.__traceback__ is not None else []
    where = ""
    if frames:
        path = frames[-1].filename
        inside = os.path.commonpath([_PACKAGE_ROOT, os.path.abspath(path)]) == _PACKAGE_ROOT
        where = f" in {os.path.relpath(path, _PACKAGE_ROOT) if inside else os.path.basename(path)}:" \
                f"{frames[-1].lineno} ({frames[-1].name})"
    text = f": {shorten(str(error), 200)}" if with_text and str(error) else ""
    return (f"the grader failed on this exercise ({type(error).__name__}{text}{where}): this is a bug in the "
            "grader, not in your code, and no grade was given for it; please report it to your instructor")


@dataclass(frozen=True)
class Facts:
    """What the parent knows about a failed case besides its kind, to fill in the fixed words:
    names from the spec, limits from the config, and the class name of a raised exception
    (said only when it is one of SAYABLE_EXCEPTIONS)."""

    function: str = ""
    module: str = ""
    timeout: float = 0.0              # the call's (or the import's) wall-time limit, seconds
    memory_mb: int = 0
    submission_timeout: float = 0.0
    import_error: bool = False        # the module had to be salvaged
    exception: str = ""
    assigned: int = 0                 # the line where the module assigns the function's name a value


# Exception class names the fixed words may say: Python's own and the grader's. A class the
# student defined could be named after a hidden case's inputs (`class V_2x4x8(Exception)`).
SAYABLE_EXCEPTIONS = frozenset(
    [n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)]
    + ["UnsendableResult"])

_CRASH = "the process running your code ended without returning (os._exit(), a signal, or running out of memory)"


def _missing(f: Facts) -> str:
    if f.import_error:
        return f"{f.function} could not be loaded: {f.module}.py does not import as written"
    if f.assigned:
        return (f"{f.function} in {f.module}.py is a value (assigned on line {f.assigned}), not a function: "
                f"define it with def {f.function}(...), as the stub does")
    return f"no function named {f.function} in {f.module}.py: keep the name and signature of the stub"


# The fixed words for each kind of failure: all a hidden case says, and the start of a public
# case's message (which adds what the student's code said, grader.pipeline.run).
WORDS: dict[FailureKind, Callable[[Facts], str]] = {
    FailureKind.WRONG_ANSWER: lambda f: "wrong answer",
    FailureKind.MODIFIED_INPUT: lambda f: "modified its input in place: work on new tensors and leave the "
                                          "inputs unchanged",
    FailureKind.EXCEPTION: lambda f: f"raised {f.exception if f.exception in SAYABLE_EXCEPTIONS else 'an exception'}",
    FailureKind.OUT_OF_MEMORY: lambda f: f"ran out of memory: the limit is {f.memory_mb} MiB",
    FailureKind.SYS_EXIT: lambda f: "your code called sys.exit() (or exit()) instead of returning a value",
    FailureKind.INTERRUPT: lambda f: "your code raised KeyboardInterrupt",
    FailureKind.NOT_IMPLEMENTED: lambda f: "not implemented yet",
    FailureKind.MISSING_FUNCTION: _missing,
    FailureKind.IMPORT_ERROR: lambda f: "importing your module failed",
    FailureKind.IMPORT_TIMEOUT: lambda f: f"importing {f.module}.py took longer than {f.timeout:g} s",
    FailureKind.IMPORT_CRASH: lambda f: f"the process ended while importing {f.module}.py",
    FailureKind.TIMEOUT: lambda f: f"took longer than {f.timeout:g} s: look for an endless loop, or a loop that "
                                   "could be a tensor operation",
    FailureKind.CRASH: lambda f: _CRASH,
    FailureKind.PROTOCOL: lambda f: _CRASH,
    FailureKind.STRIKES: lambda f: "not run: two calls in a row timed out or crashed",
    FailureKind.TIME_LIMIT: lambda f: f"not run: the submission's time limit ({f.submission_timeout:g} s) was used up",
}


def words(kind: FailureKind, facts: Facts) -> str:
    return WORDS[kind](facts)


def error_kind(error: dict[str, str]) -> FailureKind:
    """The kind of an exception the child reported ({"type", "message", "traceback"})."""
    kind, msg = error.get("type", "Exception"), error.get("message", "")
    if kind == "NotImplementedError":
        return FailureKind.NOT_IMPLEMENTED
    if kind == "MemoryError" or "can't allocate memory" in msg or "Cannot allocate memory" in msg:
        return FailureKind.OUT_OF_MEMORY
    if kind == "SystemExit":
        return FailureKind.SYS_EXIT
    if kind == "KeyboardInterrupt":
        return FailureKind.INTERRUPT
    return FailureKind.EXCEPTION


def _signature_said(error: dict[str, str], exercise: str) -> str:
    """What to do when the call itself did not fit the student's function (Python's TypeError
    "f() missing 1 required positional argument", "f() takes 0 positional arguments ..."); "" else."""
    module, _, function = exercise.partition(".")
    if not function or error.get("type") != "TypeError" or \
            not re.match(rf"{re.escape(function)}\(\) (missing|takes|got)\b", error.get("message", "")):
        return ""
    return (f"\nthe grader calls {function} with the arguments this case lists, as the exercise's stub "
            f"(exercises/{module}.py) declares them: keep its parameters")


def error_message(error: dict[str, str], memory_mb: int, called: str = "") -> str:
    """The public message of an exception: its class, its message and the student's traceback
    (`called`: the exercise whose function the call was, for a call that did not fit it)."""
    kind, msg = error.get("type", "Exception"), error.get("message", "")
    what = error_kind(error)
    if what is FailureKind.OUT_OF_MEMORY:
        return f"{words(what, Facts(memory_mb=memory_mb))} ({kind}: {msg[:200]})"
    if what in (FailureKind.SYS_EXIT, FailureKind.INTERRUPT):
        return words(what, Facts())
    tb = error.get("traceback", "")
    text = (f"{kind}: {shorten(msg)}" if msg else kind) + _signature_said(error, called)
    return f"{text}\n{tb}" if tb else text




def absent_note(module: str, absent: tuple[str, ...]) -> str:
    """The note for a module graded with stand-ins for modules it imports that are nowhere to be
    found (grader.sandbox.absent_modules); "" when there were none. A course module is named as
    one, to be handed in with this one."""
    if not absent:
        return ""
    roots = list(dict.fromkeys(name.split(".")[0] for name in absent))     # torchvision, not .transforms too
    course = {spec.module for spec in catalog().values()}
    ours, theirs = [r for r in roots if r in course], [r for r in roots if r not in course]
    said = []
    if ours:
        one = len(ours) == 1
        said.append(f"Your code imports {names_and_more(ours)}, {'a module' if one else 'modules'} of the course "
                    f"that your submission does not include: hand in {names_and_more([f'{m}.py' for m in ours])} "
                    f"with {module}.py.")
    if theirs:
        said.append(f"Your code imports {names_and_more(theirs)}, which {'is' if len(theirs) == 1 else 'are'} "
                    "not installed where the grader runs.")
    it, its = ("it", "its") if len(roots) == 1 else ("them", "their")
    return " ".join(said) + (f" {module}.py was graded with an empty stand-in in {its} place: your functions that "
                             f"do not use {it} are graded as written; one that does fails where it uses {it}, unless "
                             "the grader's reference stands in for what it uses.")
