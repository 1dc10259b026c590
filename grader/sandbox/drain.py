"""The parent's reader of a child's stdout and stderr."""
from __future__ import annotations

import os
import threading


class Drain(threading.Thread):
    """Reads the child's stdout/stderr so it never blocks, keeping only the first bytes."""

    def __init__(self, fd: int, keep: int) -> None:
        super().__init__(daemon=True)
        self.fd, self.keep = fd, keep
        self.data = bytearray()
        self.total = 0

    def run(self) -> None:
        try:
            while True:
                chunk = os.read(self.fd, 1 << 16)
                if not chunk:
                    break
                self.total += len(chunk)
                if len(self.data) < self.keep:
                    self.data += chunk[: self.keep - len(self.data)]
        finally:
            os.close(self.fd)
