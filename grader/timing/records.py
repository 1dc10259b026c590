"""What a performance check measured, as the parent saw it (input to guards and policy)."""
from __future__ import annotations

from dataclasses import dataclass, field

SIDES = ("student", "reference", "baseline")


@dataclass(frozen=True)
class Block:
    """One timed block: the same function called once on each input set of a round."""

    side: str                      # "student" or "reference" (the student's child), "baseline" (a clean child)
    times: tuple[float, ...]       # seconds per call, as the child's timer reported them (the figure)
    wall: float                    # seconds the parent watched the whole block take, by its own clock
    cpu: float | None = None       # CPU seconds of the child's main thread meanwhile (/proc/<pid>/schedstat)
    cpu_all: float | None = None   # CPU seconds of all the child's threads meanwhile
    host: tuple[float, ...] = ()   # per call, the child's host clock around the timed window
    cpu_calls: tuple[float, ...] = ()   # per call, the thread CPU time inside the window, as the child said
    wait: float | None = None      # seconds the child's main thread waited for a CPU meanwhile (a busy machine)


@dataclass(frozen=True)
class Measurement:
    device: str
    threads: int | None
    timer: str
    blocks: tuple[Block, ...] = ()
    checked: int = 0               # timed student outputs compared with the reference in the parent
    wrong: tuple[str, ...] = ()    # what differed, for outputs that did
    problems: tuple[str, ...] = () # inputs modified, subclassed outputs, environment changed, forbidden calls
    stopped: str = ""              # why measuring stopped: converged, budget, max calls, wrong output, problem
    seconds: float = 0.0           # wall time of the whole check, warm-up included
    seed: int = 0                  # of the fresh inputs (reproduces them)
    rounds: int = 0                # loads of fresh input sets
    loads: tuple = ()              # per load of inputs: CPU s of the student's child (main thread, all threads)
                                   # and of the clean child (main thread), for the same payload
    fingerprint_s: float = 0.0     # CPU seconds the parent took to fingerprint one output (the child does it
                                   # after every student call, inside the student's blocks)
    between: float | None = None   # CPU seconds of the student's child between its requests (all threads)
    sizes: dict = field(default_factory=dict)

    def blocks_of(self, side: str) -> tuple[Block, ...]:
        return tuple(b for b in self.blocks if b.side == side)

    def times(self, side: str) -> list[float]:
        return [t for b in self.blocks_of(side) for t in b.times]

    @property
    def timed(self) -> int:
        return len(self.times("student"))
