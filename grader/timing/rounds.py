"""One performance check's measurement: warm-up, then rounds of fresh inputs until the ratio
is tight or the budget is spent. Everything here runs in the parent.

A round: k fresh input sets are made here (before anything is timed) and loaded into both
children; then, a few sets at a time (about 10 ms of calls), three blocks run — the student's
function and the reference in the student's child, the reference alone in a clean child — in an
order that alternates from block to block (ABBA), so bursts of load on a shared machine hit every
side alike, while the parent accounts each block's CPU time separately (grader.timing.guards).
The student's outputs of the round come back through the wire and are compared here with the
exercise's own reference (every one, or a random sample when they are too big, which is said).
When the loads guard objects, more loads of fresh inputs are measured before it may flag.
"""
from __future__ import annotations

import dataclasses
import os
import random
from typing import Any, Callable

import torch

from grader.timing import guards, stats
from grader.timing.measure import CLOCKS, fingerprint, same_fingerprint
from grader.timing.records import Block, Measurement
from grader.timing.timers import PERF_COUNTER

SIDES = ("student", "reference", "baseline")
MIN_CALLS = 10                 # per side, before convergence is judged
MAX_CALLS = 400
ROUND_SECONDS = 0.12           # inputs loaded at once: about this long a side
BLOCK_SECONDS = 0.01           # calls timed back to back (warm, as a real caller would make them) before the
                               # other side's turn: short enough that bursts of load on a shared machine hit
                               # both sides alike (one-call blocks, each after a wake-up, ran cold and
                               # compressed every ratio toward 1)
THREAD_TIME = CLOCKS["thread_time"]
MAX_ROUND_BYTES = 16 << 20     # inputs (and checked outputs) of one round: the wire copies them several times
CONFIRM_LOADS = 4              # more loads of fresh inputs before the loads guard may flag: one load's CPU
                               # varies by up to 1.8x between two identical children on a busy machine, and a
                               # short check has only two loads (the warm-up's and one round's)


def nbytes(x: Any) -> int:
    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (list, tuple)):
        return sum(nbytes(v) for v in x)
    if isinstance(x, dict):
        return sum(nbytes(v) for v in x.values())
    return 0


def run(harness, make_inputs: Callable[[int], tuple], check: Callable[[tuple, Any], str], *, budget: float,
        target_rse: float, seed: int = 0, sizes: dict | None = None, clock: Callable[[], float] = PERF_COUNTER,
        min_calls: int = MIN_CALLS, max_calls: int = MAX_CALLS, round_seconds: float = ROUND_SECONDS,
        rng: random.Random | None = None) -> Measurement:
    """Measure with `harness` (SandboxHarness or LocalHarness). `make_inputs(i)` is the i-th fresh
    input set (args, kwargs); `check(inputs, output)` is "" when the output is right."""
    start = clock()
    info = harness.open()
    base = dict(device=info["device"], threads=info.get("threads"), timer=info.get("timer", ""), seed=seed,
                sizes=dict(sizes or {}))
    warm_set = make_inputs(0)
    per_call, problems = _warm_up(harness, warm_set, budget)
    if problems:
        return Measurement(**base, problems=tuple(problems), stopped="problem", seconds=clock() - start)
    fits = max(MAX_ROUND_BYTES // max(nbytes(warm_set), 1), 1)
    k = int(min(max(round_seconds / max(per_call.values()), 2), 32, fits))
    per_block = {side: int(min(max(BLOCK_SECONDS / t, 1), k)) for side, t in per_call.items()}
    checker = _Checker(harness, check, rng or random.Random(int.from_bytes(os.urandom(8), "big")))
    blocks: list[Block] = []
    stopped, round_no = "budget", 0
    while True:
        round_start = clock()
        inputs = [make_inputs(1 + round_no * k + j) for j in range(k)]
        harness.load(inputs)
        for side, indices in _schedule(k, per_block, round_no):
            block, found = harness.time(side, indices)
            blocks.append(block)
            problems += [p for p in found if p not in problems]
            if problems:
                break
        s, r = _times(blocks, "student"), _times(blocks, "reference")
        if problems:
            stopped = "problem"
        elif checker.round(inputs, first_call=len(s) - k):
            stopped = "wrong output"
        elif round_no >= 1 and stats.converged(s, r, target_rse, min_calls):     # two rounds at least: ABBA
            stopped = "converged"
        elif len(s) >= max_calls:
            stopped = "max calls"
        elif clock() - start + (clock() - round_start) <= budget:
            round_no += 1
            continue
        break
    m = Measurement(**base, blocks=tuple(blocks), checked=checker.checked, wrong=tuple(checker.wrong),
                    problems=tuple(problems), stopped=stopped, seconds=clock() - start, rounds=round_no + 1,
                    loads=tuple(getattr(harness, "loads", ())), fingerprint_s=checker.fingerprint_s,
                    between=getattr(harness, "between", None))
    first = 1 + (round_no + 1) * k           # the next fresh input set's index
    return _confirm_loads(harness, m, lambda j: [make_inputs(first + j * k + i) for i in range(k)], clock)


def _confirm_loads(harness, m: Measurement, fresh: Callable[[int], list], clock: Callable[[], float]) -> Measurement:
    """Before the loads guard's objection stands, CONFIRM_LOADS more loads of fresh inputs: a child
    cannot tell them from a round's, so work hidden in its loads shows there too, while one load
    that happened to be slow is outvoted."""
    if m.stopped in ("problem", "wrong output") or not guards.loads_match(m):
        return m
    start = clock()
    for j in range(CONFIRM_LOADS):
        harness.load(fresh(j))
    return dataclasses.replace(m, loads=tuple(harness.loads), seconds=m.seconds + clock() - start,
                               between=getattr(harness, "between", None))


def _warm_up(harness, warm_set: tuple, budget: float) -> tuple[dict[str, float], list[str]]:
    """Each side alone on one input set, the student's first calls (compilation, lazy imports)
    included; returns each side's median seconds per call, and any problem seen."""
    harness.load([warm_set])
    per_call = {}
    for side in SIDES:
        times, problems = harness.warmup(side, min_calls=2, min_seconds=min(0.05 * budget, 0.2),
                                         max_seconds=0.25 * budget)
        if problems:
            return per_call, problems
        per_call[side] = max(stats.median(times), 1e-6)
    return per_call, []


class _Checker:
    """Fetches the student's outputs of a round and compares them here, in the parent: with the
    exercise's reference, and with the fingerprints taken in the child right after each call."""

    def __init__(self, harness, check: Callable[[tuple, Any], str], rng: random.Random) -> None:
        self.harness, self.check, self.rng = harness, check, rng
        self.checked, self.wrong, self.out_bytes = 0, [], None
        self.print_seconds = 0.0       # the parent's CPU cost of fingerprinting the outputs it checked

    @property
    def fingerprint_s(self) -> float:
        return self.print_seconds / self.checked if self.checked else 0.0

    def round(self, inputs: list[tuple], first_call: int) -> bool:
        """True when an output is wrong (recorded in self.wrong)."""
        picks = list(range(len(inputs)))
        if self.out_bytes and self.out_bytes * len(picks) > MAX_ROUND_BYTES:     # too big for all: a sample
            picks = sorted(self.rng.sample(picks, max(1, MAX_ROUND_BYTES // self.out_bytes)))
        for i, output in zip(picks, self.harness.fetch(picks)):
            self.out_bytes = self.out_bytes or nbytes(output)
            self.checked += 1
            message = self.check(inputs[i], output)
            f0 = THREAD_TIME()
            mine = fingerprint(output)
            self.print_seconds += THREAD_TIME() - f0
            if not message and not same_fingerprint(mine, self.harness.prints[i]):
                message = "the output changed after your function returned (finished outside the timed call)"
            if message:
                self.wrong.append(f"call {first_call + i + 1}: {message}")
                return True
        return False


def _schedule(k: int, per_block: dict[str, int], round_no: int) -> list[tuple[str, list[int]]]:
    """The blocks of one round: each side's k input sets in chunks of about BLOCK_SECONDS of its
    own calls, taken in turn by whichever side has had the least time so far (estimated from the
    warm-up), ties broken in an order that flips every round (ABBA)."""
    chunks = {s: [list(range(a, min(a + n, k))) for a in range(0, k, n)] for s, n in per_block.items()}
    sides = list(SIDES if round_no % 2 == 0 else SIDES[::-1])
    spent = dict.fromkeys(sides, 0.0)
    plan = []
    while any(chunks[s] for s in sides):
        side = min((s for s in sides if chunks[s]), key=lambda s: (spent[s], sides.index(s)))
        indices = chunks[side].pop(0)
        spent[side] += len(indices) / per_block[side]
        plan.append((side, indices))
    return plan




def _times(blocks: list[Block], side: str) -> list[float]:
    return [t for b in blocks if b.side == side for t in b.times]


def seeded_inputs(make: Callable[[torch.Generator, dict], tuple], sizes: dict, seed: int) -> Callable[[int], tuple]:
    """The i-th fresh input set: its own generator, from the check's seed and i."""
    def make_inputs(i: int) -> tuple:
        gen = torch.Generator().manual_seed((seed * 1_000_003 + i) % (1 << 63))
        return make(gen, sizes)
    return make_inputs


def fresh_seed() -> int:
    """A seed nobody can know in advance (a student cannot precompute the timed calls' answers)."""
    return int.from_bytes(os.urandom(6), "big")


