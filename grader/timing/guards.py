"""Anti-cheat rules over a Measurement: one function each, with its rationale.

Each guard returns "" when the measurement looks honest, else what it saw, in the second
person. They compare what the student's child reported with what the parent observed itself:
its own wall clock, and the CPU time the kernel accounted to the child (/proc, in nanoseconds,
which a process cannot fake), against a clean child that never imported the student's module.
CPU time, unlike wall time, does not grow when other jobs crowd the machine, so these rules
hold on a busy shared machine too. Tolerances are wide: noise must not fail honest code.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from grader.timing import stats
from grader.timing.records import Measurement

SLACK_S = 5e-5         # per block (one call): what the overhead estimate may miss


@dataclass(frozen=True)
class Guard:
    name: str
    rationale: str
    check: Callable[[Measurement], str]


def _total(blocks, get) -> float:
    return sum(get(b) for b in blocks)


def overhead_per_call(m: Measurement) -> float | None:
    """CPU seconds the driver spends per call outside the timed window (the request, clones,
    checks), from the clean child, whose own per-call figures can be believed."""
    base = [b for b in m.blocks_of("baseline") if b.cpu is not None and b.cpu_calls]
    calls = sum(len(b.times) for b in base)
    if not calls:
        return None
    return max(0.0, (_total(base, lambda b: b.cpu) - _total(base, lambda b: sum(b.cpu_calls))) / calls)


def clean_reference_cpu(m: Measurement) -> float | None:
    """CPU seconds one reference call takes in the clean child (its own figures, believable)."""
    base = [b for b in m.blocks_of("baseline") if b.cpu_calls]
    calls = sum(len(b.cpu_calls) for b in base)
    return _total(base, lambda b: sum(b.cpu_calls)) / calls if calls else None


def student_work(m: Measurement) -> tuple[float, float] | None:
    """(seconds the student's calls reported, CPU seconds they used by the kernel's account).

    The harness's overhead per call is the larger of the clean child's and the student's child's
    own: the CPU its reference blocks used beyond what the reference costs in the clean child.
    Both come from the kernel and the clean child only, never from the student's child's figures."""
    student = [b for b in m.blocks_of("student") if b.cpu is not None]
    ref = [b for b in m.blocks_of("reference") if b.cpu is not None]
    per_call, clean = overhead_per_call(m), clean_reference_cpu(m)
    if not student or per_call is None:
        return None
    if ref and clean is not None:
        per_call = max(per_call, _total(ref, lambda b: b.cpu) / sum(len(b.times) for b in ref) - clean)
    calls = sum(len(b.times) for b in student)
    work = _total(student, lambda b: b.cpu) - calls * (per_call + m.fingerprint_s)
    return _total(student, lambda b: sum(b.times)), work


# Rationale: a block cannot contain more timed work than the time the parent watched it run;
# more means the child's clock or its figures were tampered with.
def reported_within_wall(m: Measurement) -> str:
    for b in m.blocks:
        if sum(b.times) > b.wall + SLACK_S:
            return (f"the {b.side} block reported {sum(b.times) * 1e3:.1f} ms of calls in {b.wall * 1e3:.1f} ms "
                    "of wall time")
    return ""


# Rationale: a patched timer (time.perf_counter, the harness's own clock) reports less time than
# the student's calls take. A call's wall time is at least the CPU time its thread used, and the
# kernel's account of that CPU time (less the harness's own overhead, measured in the clean child)
# cannot be patched from inside the process. On a busy machine honest calls report more than
# their CPU time (they also wait for a CPU), which only widens the margin for honest code.
def work_accounts_for_student(m: Measurement) -> str:
    figures = student_work(m)
    if figures is None:
        return ""
    reported, work = figures
    if work > 1.2 * reported + SLACK_S * len(m.blocks_of("student")):
        return (f"your calls reported {reported * 1e3:.1f} ms in total, but used {work * 1e3:.1f} ms of CPU by the "
                "kernel's account: the timer in your process was not telling the truth")
    return ""


# Rationale: code that makes the reference do more work next to the student's module (a patched
# torch function, a hook on tensor methods) would flatter the ratio; the same reference in a clean
# child that never imported the student's module is the yardstick.
def reference_undisturbed(m: Measurement) -> str:
    ref = [b for b in m.blocks_of("reference") if b.cpu is not None]
    per_call, clean = overhead_per_call(m), clean_reference_cpu(m)
    if not ref or per_call is None or not clean:
        return ""
    mine = _total(ref, lambda b: b.cpu) / sum(len(b.times) for b in ref) - per_call
    if mine > 1.5 * clean + 2e-4:
        return (f"the reference used {mine / clean:.1f}x more CPU next to your module than in a clean process: "
                "something in your module makes other code slower (a patched function, a hook)")
    return ""


# Rationale: the reference can also be made slow without using CPU: a hook that sleeps whenever an
# operation only the reference calls runs (the red team's TorchFunctionMode on conv2d took a batch-loop
# conv2d from 91.8x the reference to 19.7x, under CPU guards alone). Its calls next to the student's
# module then take longer than in the clean child, block for block under the same load (the blocks
# alternate), while its CPU does not grow. The medians keep one descheduled call from counting.
def reference_not_kept_waiting(m: Measurement) -> str:
    mine, clean = m.times("reference"), m.times("baseline")
    if not mine or not clean:
        return ""
    mine_s, clean_s = stats.median(mine), stats.median(clean)
    if mine_s > 1.5 * clean_s + 2e-4:
        return (f"the reference took {mine_s * 1e3:.3g} ms a call next to your module against {clean_s * 1e3:.3g} ms "
                "in a clean process: something in your module makes it wait (a sleep, a lock, a hook)")
    return ""


# Rationale: both sides run on the same threads; work on other threads of the child (a busy
# background thread holding the interpreter while the reference runs, a helper finishing the
# student's output) shows as CPU time outside the main thread.
def no_other_threads(m: Measurement) -> str:
    if m.threads is None or m.threads > 1 or m.device != "cpu":
        return ""
    blocks = [b for b in m.blocks if b.side != "baseline" and b.cpu is not None and b.cpu_all is not None]
    main = _total(blocks, lambda b: b.cpu) + sum(load[0] for load in m.loads)
    other = _total(blocks, lambda b: b.cpu_all - b.cpu) + sum(load[1] - load[0] for load in m.loads)
    if other > 0.2 * main + 0.03:
        return (f"other threads of your process used {other * 1e3:.0f} ms of CPU while it was being timed "
                f"(the main thread {main * 1e3:.0f} ms): both sides get one thread")
    return ""


# Rationale: between its requests the student's process has nothing to do (it waits for the next
# one); a thread that works then, on inputs already loaded, escapes every window the CPU is read in
# (a red team's forked helper did the timed function's work; a thread could do it while the clean
# child is timed). One thread for both sides, as for no_other_threads.
def idle_between_requests(m: Measurement) -> str:
    if m.between is None or m.threads is None or m.threads > 1 or m.device != "cpu":
        return ""
    main = _total([b for b in m.blocks if b.side != "baseline" and b.cpu is not None], lambda b: b.cpu)
    if m.between > 0.1 * main + 0.03:
        return (f"your process used {m.between * 1e3:.0f} ms of CPU between the requests it was sent, while it "
                f"had nothing to do (its timed calls {main * 1e3:.0f} ms): work done then escapes the timing")
    return ""


# Rationale: work can be moved out of the timed calls into the untimed requests around them (a
# patched Tensor method computing answers while the inputs are loaded). Both children receive
# the same loads, so they must cost about the same CPU; the median over loads keeps one garbage
# collection from counting. (Work finished while outputs are fetched is caught by the output
# fingerprints taken right after each call; see rounds.)
def loads_match(m: Measurement) -> str:
    if len(m.loads) < 2:
        return ""
    mine = stats.median([load[0] for load in m.loads])
    clean = stats.median([load[2] for load in m.loads])
    if mine > 1.5 * clean + 0.005:
        return (f"loading the same inputs took {mine * 1e3:.0f} ms of CPU in your process against {clean * 1e3:.0f} ms "
                "in a clean one (median of the loads): your module does work outside the timed calls")
    return ""


# Rationale: CUDA events are recorded by the device inside the window the host clock watched;
# an event span longer than the host's is impossible, so a fabricated one shows here.
def events_within_host(m: Measurement) -> str:
    for b in m.blocks:
        for t, h in zip(b.times, b.host):
            if t > h + 1e-4:
                return f"a CUDA event span ({t * 1e3:.2f} ms) exceeded the host's view of it ({h * 1e3:.2f} ms)"
    return ""


GUARDS = (
    Guard("reported within wall", "reported call times cannot exceed the parent's wall time", reported_within_wall),
    Guard("work accounts for student", "a patched timer cannot hide CPU time from the kernel",
          work_accounts_for_student),
    Guard("reference undisturbed", "the reference must cost what it costs in a clean process", reference_undisturbed),
    Guard("reference not kept waiting", "the reference must take the time it takes in a clean process",
          reference_not_kept_waiting),
    Guard("no other threads", "both sides get the same threads", no_other_threads),
    Guard("idle between requests", "no work hidden between the requests", idle_between_requests),
    Guard("loads match", "no work hidden in the untimed requests", loads_match),
    Guard("events within host", "CUDA event spans must fit in the host's window", events_within_host),
)


def findings(m: Measurement) -> list[tuple[str, str]]:
    """(guard name, what it saw) for every guard that objects."""
    return [(g.name, msg) for g in GUARDS if (msg := g.check(m))]


def figures(m: Measurement) -> dict[str, float | None]:
    """The numbers the guards look at, for the report's details (an instructor reviewing a flag)."""
    work = student_work(m)
    blocks = [b for b in m.blocks if b.side != "baseline" and b.cpu is not None and b.cpu_all is not None]

    def r(x):
        return None if x is None else round(x, 6)
    return {"reported_student_s": r(work and work[0]), "cpu_student_s": r(work and work[1]),
            "wait_for_cpu_s": r(_total([b for b in m.blocks if b.wait is not None], lambda b: b.wait)),
            "overhead_per_call_s": r(overhead_per_call(m)),
            "other_threads_cpu_s": r(_total(blocks, lambda b: b.cpu_all - b.cpu)) if blocks else None,
            "load_cpu_s_yours": r(stats.median([x[0] for x in m.loads])) if m.loads else None,
            "load_cpu_s_clean": r(stats.median([x[2] for x in m.loads])) if m.loads else None,
            "between_requests_cpu_s": r(m.between)}
