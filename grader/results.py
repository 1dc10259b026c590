"""The one data contract every stage speaks: frozen records from a case to a submission.

A report never recomputes anything: whatever a renderer shows is a field here.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Status(str, Enum):
    """What happened to one case (or, summarised, to one exercise)."""

    PASSED = "passed"
    FAILED = "failed"            # ran, returned a wrong answer
    ERROR = "error"              # the student's code raised
    TIMEOUT = "timeout"          # the call ran past the wall-time limit
    CRASHED = "crashed"          # the sandboxed process died (exit, signal, memory)
    FORBIDDEN = "forbidden"      # a forbidden API was used
    NOT_IMPLEMENTED = "not implemented"
    NOT_RUN = "not run"          # an earlier failure stopped this case
    SKIPPED = "skipped"          # e.g. a CUDA-only check without CUDA
    GRADER_FAULT = "grader fault"  # the grader itself failed (a bug in a spec or the engine), not the student

    @property
    def ok(self) -> bool:
        return self is Status.PASSED


class FailureKind(str, Enum):
    """Why a case did not pass, as the engine decided it (never read back from a message).

    What a hidden case may say is chosen from this kind (grader.pipeline.redact), and each kind
    has one status (`kind.status`)."""

    WRONG_ANSWER = "wrong answer"            # returned, but the comparison or the judge says no
    MODIFIED_INPUT = "modified input"        # right answer, but an input was changed in place
    EXCEPTION = "exception"                  # the student's code raised
    OUT_OF_MEMORY = "out of memory"
    SYS_EXIT = "sys.exit"                    # SystemExit instead of a return value
    INTERRUPT = "keyboard interrupt"
    NOT_IMPLEMENTED = "not implemented"      # the stub's NotImplementedError
    MISSING_FUNCTION = "missing function"    # no such function in the module (or lost to salvage)
    IMPORT_ERROR = "import error"            # importing the module raised
    IMPORT_TIMEOUT = "import timeout"
    IMPORT_CRASH = "import crash"            # the process ended while importing
    TIMEOUT = "timeout"                      # the call ran past its wall-time limit
    CRASH = "crash"                          # the process ended during the call (exit, signal, memory)
    PROTOCOL = "protocol"                    # the child's reply broke the wire protocol
    STRIKES = "two strikes"                  # not run: two calls in a row timed out or crashed
    TIME_LIMIT = "time limit"                # not run: the submission's time was used up

    @property
    def status(self) -> "Status":
        return _STATUS_OF[self]


_STATUS_OF = {
    FailureKind.WRONG_ANSWER: Status.FAILED, FailureKind.MODIFIED_INPUT: Status.FAILED,
    FailureKind.EXCEPTION: Status.ERROR, FailureKind.OUT_OF_MEMORY: Status.ERROR, FailureKind.SYS_EXIT: Status.ERROR,
    FailureKind.INTERRUPT: Status.ERROR, FailureKind.MISSING_FUNCTION: Status.ERROR,
    FailureKind.IMPORT_ERROR: Status.ERROR, FailureKind.NOT_IMPLEMENTED: Status.NOT_IMPLEMENTED,
    FailureKind.IMPORT_TIMEOUT: Status.TIMEOUT, FailureKind.TIMEOUT: Status.TIMEOUT,
    FailureKind.IMPORT_CRASH: Status.CRASHED, FailureKind.CRASH: Status.CRASHED, FailureKind.PROTOCOL: Status.CRASHED,
    FailureKind.STRIKES: Status.NOT_RUN, FailureKind.TIME_LIMIT: Status.NOT_RUN,
}


class ComparisonKind(str, Enum):
    """What one comparison found, in the order compare.py checks (type and structure, then
    shape and dtype, then NaN/Inf, then values). Set where the comparison is built."""

    OK = "ok"
    TYPE = "type"                  # not the kind of value expected (no tensor, no number, no dict...)
    SUBCLASS = "subclass"          # a tensor subclass instead of a plain torch.Tensor
    REQUIRES_GRAD = "requires grad"   # no longer given (a returned tensor's requires_grad is not judged);
                                      # kept so that results stored before still read
    COUNT = "count"                # a tuple or list with the wrong number of items
    KEYS = "keys"                  # a dict without some of the expected keys
    SHAPE = "shape"
    DTYPE = "dtype"
    NONFINITE = "nonfinite"        # NaN or Inf where the reference is finite
    VALUES = "values"              # values (or a scalar, a string...) differ beyond the tolerance
    OTHER = "other"                # a judge's own comparison that did not say (or a result stored before kinds)


@dataclass(frozen=True)
class Mismatch:
    index: tuple[int, ...]
    actual: float
    expected: float


@dataclass(frozen=True)
class Comparison:
    """How one returned value compares with the reference (gpu-mode's verbose_allclose order:
    shape and dtype first, then NaN/Inf, then the first few mismatches)."""

    name: str                      # "out", "weights", "dW", ...
    ok: bool
    problem: str = ""              # one line, empty when ok
    shape: tuple[int, ...] | None = None
    expected_shape: tuple[int, ...] | None = None
    dtype: str = ""
    expected_dtype: str = ""
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    worst_index: tuple[int, ...] | None = None
    mismatch_fraction: float | None = None
    mismatches: tuple[Mismatch, ...] = ()
    atol: float | None = None
    rtol: float | None = None
    kind: ComparisonKind | None = None   # None: OK when ok, else OTHER (filled in below)

    def __post_init__(self) -> None:
        if self.kind is None:
            object.__setattr__(self, "kind", ComparisonKind.OK if self.ok else ComparisonKind.OTHER)


@dataclass(frozen=True)
class Heatmap:
    """A small 2-D slice of the student's and the reference's output, for the HTML report."""

    title: str
    student: tuple[tuple[float, ...], ...]
    reference: tuple[tuple[float, ...], ...]


@dataclass(frozen=True)
class CaseResult:
    name: str
    status: Status
    description: str = ""          # shapes and dtypes of the inputs (never values of hidden cases)
    hidden: bool = False
    message: str = ""              # what went wrong, in the second person
    comparisons: tuple[Comparison, ...] = ()
    diagnosis: str = ""            # the known mistake this looks like, if any
    fits: tuple[str, ...] = ()     # the known mistakes it looks like when more than one does (then no diagnosis)
    heatmaps: tuple[Heatmap, ...] = ()
    seconds: float = 0.0
    failure: FailureKind | None = None   # why it did not pass; None when it passed (or stored before kinds)


@dataclass(frozen=True)
class PerfResult:
    """A timed comparison against the reference (filled by the performance stage)."""

    name: str
    status: Status
    ratio: float | None = None
    spread: float | None = None
    threshold: float | None = None
    device: str = "cpu"
    message: str = ""
    points: float = 0.0
    max_points: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)


class ExerciseId:
    """`module` and `function` of a record's `id`, "<module>.<function>" (attention.causal_mask)."""

    id: str

    @property
    def module(self) -> str:
        return self.id.split(".", 1)[0]

    @property
    def function(self) -> str:
        return self.id.split(".", 1)[1]


@dataclass(frozen=True)
class ExerciseResult(ExerciseId):
    id: str                        # "attention.causal_mask"
    status: Status
    points: float
    max_points: float
    cases: tuple[CaseResult, ...] = ()
    message: str = ""              # the headline for this exercise
    diagnosis: str = ""            # the most frequent known mistake over the failing cases
    notes: tuple[str, ...] = ()    # dependency substitution, salvaged module, ...
    output: str = ""               # captured stdout/stderr of the student's code (truncated)
    output_truncated: bool = False
    reference: str = ""            # where the expected values came from
    source_file: str = ""          # the student's file and the line of the function
    source_line: int = 0
    seconds: float = 0.0
    performance: tuple[PerfResult, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED

    @property
    def cases_passed(self) -> int:
        return sum(1 for c in self.cases if c.status is Status.PASSED)


@dataclass(frozen=True)
class SubmissionResult:
    submission: str
    exercises: tuple[ExerciseResult, ...]
    settings: dict[str, Any] = field(default_factory=dict)   # resolved config shown in headers
    errors: tuple[str, ...] = ()                             # submission-level problems
    seconds: float = 0.0
    grader_version: str = ""

    @property
    def score(self) -> float:
        """Correctness points plus graded performance points (report-only checks carry 0/0)."""
        return round(sum(e.points + sum(p.points for p in e.performance) for e in self.exercises), 4)

    @property
    def max_score(self) -> float:
        return round(sum(e.max_points + sum(p.max_points for p in e.performance) for e in self.exercises), 4)

    @property
    def grader_faults(self) -> tuple[str, ...]:
        """Ids of the exercises the grader failed on: their 0 points are no grade (exit 3, retried in a batch)."""
        return tuple(e.id for e in self.exercises if e.status is Status.GRADER_FAULT)

    @property
    def all_passed(self) -> bool:
        """Every exercise passed, every performance check passed or was skipped, nothing broken."""
        return (bool(self.exercises) and not self.errors
                and all(e.passed and all(p.status in (Status.PASSED, Status.SKIPPED) for p in e.performance)
                        for e in self.exercises))

    def modules(self) -> dict[str, list[ExerciseResult]]:
        out: dict[str, list[ExerciseResult]] = {}
        for e in self.exercises:
            out.setdefault(e.module, []).append(e)
        return out


def to_dict(obj: Any) -> Any:
    """Plain JSON-ready data from any record here (enums by value)."""
    if type(obj) in (str, int, bool, type(None)):   # first: most of a result's ~20,000 values
        return obj
    if dataclasses.is_dataclass(obj):
        d = {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        if isinstance(obj, SubmissionResult):
            d.update(score=obj.score, max_score=obj.max_score)
        return d
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, (list, tuple)):
        return [to_dict(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    if isinstance(obj, float) and obj != obj:
        return None     # NaN; an infinite error figure is kept (the gradebook stores it as Infinity)
    return obj


def _tuple(x: Any) -> Any:
    return tuple(_tuple(v) for v in x) if isinstance(x, list) else x


def from_dict(data: dict[str, Any]) -> SubmissionResult:
    """Inverse of to_dict for a SubmissionResult (the gradebook stores results as JSON)."""

    def comparison(d):
        d = dict(d)
        d["mismatches"] = tuple(Mismatch(tuple(m["index"]), m["actual"], m["expected"]) for m in d["mismatches"])
        for k in ("shape", "expected_shape", "worst_index"):
            d[k] = _tuple(d[k]) if d[k] is not None else None
        d["kind"] = ComparisonKind(d["kind"]) if d.get("kind") else None
        return Comparison(**d)

    def case(d):
        d = dict(d)
        d["status"] = Status(d["status"])
        d["comparisons"] = tuple(comparison(c) for c in d["comparisons"])
        d["heatmaps"] = tuple(Heatmap(h["title"], _tuple(h["student"]), _tuple(h["reference"])) for h in d["heatmaps"])
        d["failure"] = FailureKind(d["failure"]) if d.get("failure") else None
        d["fits"] = tuple(d.get("fits", ()))
        return CaseResult(**d)

    def perf(d):
        return PerfResult(**{**d, "status": Status(d["status"])})

    def exercise(d):
        d = dict(d)
        d["status"] = Status(d["status"])
        d["cases"] = tuple(case(c) for c in d["cases"])
        d["notes"] = tuple(d["notes"])
        d["performance"] = tuple(perf(p) for p in d.get("performance", ()))
        return ExerciseResult(**d)

    d = {k: v for k, v in data.items() if k not in ("score", "max_score")}
    d["exercises"] = tuple(exercise(e) for e in d["exercises"])
    d["errors"] = tuple(d["errors"])
    return SubmissionResult(**d)
