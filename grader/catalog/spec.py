"""What an exercise spec says, for one function of CURRICULUM.md.

A spec is data plus a few trusted functions that run in the grading (parent) process:
how to make the inputs of each case, the PyTorch reference, how to compare, the known
mistakes, the forbidden APIs, and which other exercises it depends on. Nothing here runs
student code; the engine does that through the sandbox. Points live here, in the spec
(`points`); autograde.toml may override them per exercise.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import torch

from grader import threads
from grader.results import Comparison, ExerciseId


@dataclass(frozen=True)
class Case:
    """One call of the student's function.

    `args`/`kwargs` are what the student's function receives (tensors, numbers, strings,
    lists, dicts of tensors). `hidden` cases count toward the grade, but feedback never
    shows their inputs or expected values.
    """

    name: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""                 # why this case exists ("T=1", "large logits: stability")
    hidden: bool = False
    atol: float | None = None      # per-case tolerance override
    rtol: float | None = None


@dataclass(frozen=True)
class KnownMistake:
    """A typical wrong answer: `fn` takes the case's inputs and returns what the mistake gives.

    When the student's output matches it (within the exercise tolerance) on a failing case,
    the feedback names the mistake and explains it.
    """

    name: str                      # "missing 1/sqrt(d_k)"
    explanation: str               # what is wrong and how to fix it, second person
    fn: Callable[..., Any]


@dataclass(frozen=True)
class Forbidden:
    """An API the exercise may not use, with the reason (KernelBench-style: rules are data).

    - `static`: dotted names that must not appear in the student's function (aliases from
      imports are resolved: `F.conv2d` is `torch.nn.functional.conv2d`);
    - `patch`: dotted attributes replaced by tripwires while the student's code runs, so
      `getattr(F, "con" + "v2d")` and `importlib` tricks are caught too;
    - `aten`: substrings of ATen operator names seen by a dispatch mode while the student's
      code runs (catches any route into the kernel, e.g. `torch.ops.aten...`);
    - `native`: C++ functions of libtorch whose entry proves the use (`at::native::softmax`),
      counted by the kernel from outside the child (grader.sandbox.native_watch): authoritative;
    - `family`: a regular expression naming the same computation's kernels in every layout and
      backend of this CPU build (sparse, nested, MKL-DNN, quantized, foreach: `_sparse_softmax`,
      `mkldnn_max_pool2d`); each at::native function it matches must be in `native`, which a test
      checks against the installed torch, so that a kernel a new torch adds is named, not missed;
    - `python`: a regular expression naming PyTorch's own Python implementations of the computation
      (`torch._refs.softmax`, `torch._decomp.decompositions.lstm_cell`); "" for the family's. They
      join the static names (grader.catalog.rules.python_kernels).
    """

    name: str
    rationale: str
    static: tuple[str, ...] = ()
    patch: tuple[str, ...] = ()
    aten: tuple[str, ...] = ()
    native: tuple[str, ...] = ()
    family: str = ""
    python: str = ""


@dataclass(frozen=True)
class Verdict:
    """A judge's decision on one case: for behavioural and statistical checks."""

    ok: bool
    message: str = ""
    comparisons: tuple[Comparison, ...] = ()


# A probe calls a student function in the sandbox: probe(function_name, *args, **kwargs).
Probe = Callable[..., Any]


@dataclass(frozen=True)
class ExerciseSpec(ExerciseId):
    """Everything the grader knows about one exercise `<module>.<function>`."""

    id: str
    cases: Callable[[torch.Generator], Sequence[Case]]
    reference: Callable[..., Any]
    reference_source: str                          # "torch.nn.functional.conv2d", said in feedback
    outputs: tuple[str, ...] = ("output",)         # names of the returned values (tuple outputs)
    points: float = 1.0
    tolerance: Mapping[torch.dtype, tuple[float, float]] = field(default_factory=dict)  # dtype -> (atol, rtol)
    mistakes: tuple[KnownMistake, ...] = ()
    forbidden: tuple[Forbidden, ...] = ()
    # student function name -> "grader.sandbox.trusted.<module>:<function>", a trusted substitute used
    # while grading this exercise so that a bug in a dependency is charged once (e.g. MHA uses SDPA).
    depends: Mapping[str, str] = field(default_factory=dict)
    # Optional trusted function run inside the sandbox instead of a plain call, in grader.sandbox.trusted:
    # driver(student_module, function_name, *args, **kwargs) -> output. "module:function".
    driver: str | None = None
    # Optional behavioural judge, replacing the comparison: judge(case, student_output, reference_output, tol)
    # -> Verdict, where tol(dtype) -> (atol, rtol) is the case's tolerance with every override applied
    # (the case's own, autograde.toml's): a judge that compares tensors compares with it. A judge with a
    # parameter named `probe` gets one too, as a localiser does: it reads what the child recorded of the call.
    judge: Callable[..., Verdict] | None = None
    # Optional localiser run after a failed case: localise(case, student_output, probe) -> message
    localise: Callable[[Case, Any, Probe], str] | None = None
    heatmaps: tuple[str, ...] = ()                 # output names shown as heatmaps when they differ
    exact: bool = False                            # integers, bools, bytes: compared exactly
    call_timeout: float | None = None              # seconds per call, overrides the config default

    def tol(self, dtype: torch.dtype | None, case: Case | None = None) -> tuple[float, float]:
        atol, rtol = self.tolerance.get(dtype, DEFAULT_TOLERANCE.get(dtype, (1e-5, 1e-4)))
        if case is not None:
            atol = case.atol if case.atol is not None else atol
            rtol = case.rtol if case.rtol is not None else rtol
        return atol, rtol


# Defaults accept a correct float32 formulation of outputs of order one; a relative part
# is always present, and atol is small, so returning zeros never passes.
DEFAULT_TOLERANCE: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (2e-2, 2e-2),
    torch.float32: (1e-5, 1e-4),
    torch.float64: (1e-10, 1e-8),
}


def on_one_thread(spec: ExerciseSpec) -> ExerciseSpec:
    """The spec with its parent-side callables (cases, reference, mistakes, localise, judge) run on
    one intra-op thread (grader.threads says why: tiny tensors, busy cores)."""
    def pinned(fn):
        if fn is None:
            return None

        @functools.wraps(fn)
        def run(*args, **kwargs):
            with threads.pinned(1):
                return fn(*args, **kwargs)
        return run
    return dataclasses.replace(
        spec, cases=pinned(spec.cases), reference=pinned(spec.reference), localise=pinned(spec.localise),
        judge=pinned(spec.judge), mistakes=tuple(dataclasses.replace(m, fn=pinned(m.fn)) for m in spec.mistakes))


# The module of grader.sandbox.trusted holding each curriculum function's substitute, where it is
# not named after the function.
_SUBSTITUTE_MODULE = {"heaviside": "steps", "sign": "steps", "sigmoid": "activations", "tanh": "activations",
                      "elu": "activations", "softmax": "activations", "linear_forward": "linear",
                      "linear_backward": "linear", "conv2d": "conv", "scaled_dot_product_attention": "sdpa",
                      "multi_head_attention": "mha"}


def substitutes(*names: str) -> dict[str, str]:
    """`depends` for an exercise whose function calls these curriculum functions: each name's
    trusted substitute, "grader.sandbox.trusted.<module>:<name>"."""
    return {n: f"grader.sandbox.trusted.{_SUBSTITUTE_MODULE.get(n, n)}:{n}" for n in names}
