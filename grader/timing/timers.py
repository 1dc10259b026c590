"""Timers: how long one call takes, measured around that call and nothing else.

`timer.measure(call)` runs `call()` once and returns `(seconds, value)`. Whatever must stay out of
the timed window (synchronisation, an L2 flush) happens inside `measure`, before the start mark.
`get_timer(name)` picks one from the registry; an unknown name is a clear error.

- cpu:  a monotonic high-resolution clock (time.perf_counter), read just before and after the call.
- cuda: CUDA events, after a device-wide synchronisation and an L2 flush (a write of at least twice
        the L2 size), so every call starts cold; the device is synchronised again before the end
        mark, so work the student launched on other streams is counted; the host's own clock
        watches the same window (`last_host`) as a cross-check on the events.
"""
from __future__ import annotations

import time
from typing import Any, Callable

# Captured when this module is imported (in the sandbox: before the student's module is), so a
# student who later replaces time.perf_counter does not move the clock the timers read.
PERF_COUNTER = time.perf_counter


class UnknownTimer(ValueError):
    """No timer of that name."""


class TimerUnavailable(RuntimeError):
    """The timer exists but this machine cannot run it (e.g. cuda without a GPU)."""


class CpuTimer:
    name = "cpu"

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self.clock = clock or PERF_COUNTER
        self.last_host = 0.0

    def measure(self, call: Callable[[], Any]) -> tuple[float, Any]:
        t0 = self.clock()
        value = call()
        t1 = self.clock()
        self.last_host = t1 - t0
        return t1 - t0, value


class CudaTimer:
    name = "cuda"

    def __init__(self, device: str = "cuda", flush: bool = True, clock: Callable[[], float] | None = None) -> None:
        import torch
        if not torch.cuda.is_available():
            raise TimerUnavailable("the cuda timer needs CUDA, and torch.cuda.is_available() is False here")
        self.torch = torch
        self.device = torch.device(device)
        props = torch.cuda.get_device_properties(self.device)
        self.l2_bytes = int(getattr(props, "L2_cache_size", 0) or (64 << 20))
        # Rationale for the size: writing 2x the L2 evicts whatever the previous call left there.
        self.flush_buffer = (torch.empty(max(2 * self.l2_bytes, 16 << 20) // 4, dtype=torch.int32, device=self.device)
                             if flush else None)
        self.clock = clock or PERF_COUNTER
        self.last_host = 0.0
        self._start = torch.cuda.Event(enable_timing=True)
        self._end = torch.cuda.Event(enable_timing=True)

    def measure(self, call: Callable[[], Any]) -> tuple[float, Any]:
        cuda = self.torch.cuda
        cuda.synchronize(self.device)
        if self.flush_buffer is not None:
            self.flush_buffer.zero_()
        cuda.synchronize(self.device)
        h0 = self.clock()
        self._start.record()
        value = call()
        cuda.synchronize(self.device)          # every stream of the device, not only the current one
        self._end.record()
        self._end.synchronize()
        self.last_host = self.clock() - h0
        return self._start.elapsed_time(self._end) / 1e3, value


TIMERS: dict[str, type] = {"cpu": CpuTimer, "cuda": CudaTimer}


def get_timer(name: str, **kwargs: Any):
    """A timer from the registry: get_timer("cpu"), get_timer("cuda", flush=False)."""
    try:
        cls = TIMERS[name]
    except KeyError:
        raise UnknownTimer(f"unknown timer '{name}': choose from {', '.join(TIMERS)}") from None
    return cls(**kwargs)
