"""Progress on stderr: a rich progress bar with counts, rate and ETA on a terminal; one plain line
per submission otherwise (logs, CI), which a log keeps and a reader can grep.

Rates count only what this run graded, not what it skipped. Student names are shown as text
(grader.reports.escape), never as markup or control sequences.
"""
from __future__ import annotations

import atexit
import sys
import time
from typing import TextIO

from rich.console import Console
from rich.table import Column
from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn
from rich.text import Text

from grader.reports.escape import text_line
from grader.reports.filters import score


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
        self._bar: Bar | None = None

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
        if self.tty and self.total:
            self._start_bar()

    def update(self, student: str, score_: float, max_score: float, state: str, failed: bool, crashed: bool) -> None:
        self.done += 1
        self.failed += failed
        self.crashed += crashed
        eta = self.eta()
        eta_text = _duration(eta) if eta is not None else "?"
        if self.tty:
            bar = self._bar or self._start_bar()
            bar.update(self._task, completed=self.done,
                       stats=f"ETA {eta_text} · {self.rate_per_min:.1f}/min · {self.failed} not full marks · "
                             f"{self.crashed} crashed, timed out or unreadable")
            bar.refresh()
        else:
            what = state if state != "graded" else score(score_, max_score)
            self._line(f"[{self.done}/{self.total}] {text_line(student)}: {what} ({self.rate_per_min:.1f}/min, "
                       f"ETA {eta_text})")

    def finish(self) -> None:
        self._stop()
        elapsed = time.monotonic() - self.start
        self._line(f"graded {self.done} in {_duration(elapsed)}"
                   + (f" ({self.rate_per_min:.1f} submissions/min)" if self.done else ""))

    def _start_bar(self) -> Bar:
        """rich's live bar on the stream; stopped by finish(), or at exit if the batch is interrupted
        (so the terminal gets its cursor back)."""
        out = Console(file=self.stream, force_terminal=True, markup=False, emoji=False, highlight=False)
        fixed = Column(no_wrap=True)
        self._bar = Bar(BarColumn(bar_width=24, table_column=fixed), MofNCompleteColumn(table_column=fixed),
                        TimeElapsedColumn(table_column=fixed),
                        TextColumn("{task.fields[stats]}",
                                   table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1)),
                        console=out, refresh_per_second=4, expand=True,
                        redirect_stdout=False, redirect_stderr=False)
        self._task = self._bar.add_task("grading", total=max(self.total, 1), stats="starting")
        self._bar.start()
        atexit.register(self._stop)
        return self._bar

    def _stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
            atexit.unregister(self._stop)

    def _line(self, text: str) -> None:
        if self._bar is not None:
            self._bar.console.print(Text(text))
        else:
            self.stream.write(text + "\n")
            self.stream.flush()
