"""Progress on stderr: a bar with counts, rate and ETA on a terminal; one plain line per
submission otherwise (logs, CI). Rates count only what this run graded, not what it skipped."""
from __future__ import annotations

import sys
import time
from typing import TextIO

BAR = 28


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class Progress:
    def __init__(self, total: int, skipped: int = 0, stream: TextIO | None = None, tty: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.total, self.skipped = total, skipped
        self.done = self.failed = self.crashed = 0
        self.start = time.monotonic()
        self._drawn = False

    @property
    def rate_per_min(self) -> float:
        elapsed = time.monotonic() - self.start
        return 60.0 * self.done / elapsed if elapsed > 0 and self.done else 0.0

    def eta(self) -> float | None:
        rate = self.rate_per_min
        return 60.0 * (self.total - self.done) / rate if rate else None

    def begin(self) -> None:
        skipped = f", {self.skipped} unchanged and skipped" if self.skipped else ""
        self._line(f"grading {self.total} submission{'s' if self.total != 1 else ''}{skipped}")

    def update(self, student: str, score: float, max_score: float, state: str, failed: bool, crashed: bool) -> None:
        self.done += 1
        self.failed += failed
        self.crashed += crashed
        eta = self.eta()
        stats = (f"{self.done}/{self.total} · {self.rate_per_min:.1f}/min · "
                 f"ETA {_duration(eta) if eta is not None else '?'} · {self.failed} not full marks · "
                 f"{self.crashed} crashed, timed out or unreadable")
        if self.tty:
            filled = int(BAR * self.done / max(self.total, 1))
            self.stream.write(f"\r\033[K[{'#' * filled}{'.' * (BAR - filled)}] {stats}")
            self.stream.flush()
            self._drawn = True
        else:
            what = state if state != "graded" else f"{score:g}/{max_score:g}"
            self._line(f"[{self.done}/{self.total}] {student}: {what} ({self.rate_per_min:.1f}/min, "
                       f"ETA {_duration(eta) if eta is not None else '?'})")

    def finish(self) -> None:
        if self._drawn:
            self.stream.write("\n")
        elapsed = time.monotonic() - self.start
        self._line(f"graded {self.done} in {_duration(elapsed)}"
                   + (f" ({self.rate_per_min:.1f} submissions/min)" if self.done else ""))

    def _line(self, text: str) -> None:
        if self._drawn:
            self.stream.write("\r\033[K")
            self._drawn = False
        self.stream.write(text + "\n")
        self.stream.flush()
