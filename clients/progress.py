"""A dependency-free progress bar for the terminal: done/total, rate and ETA."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress", "format_duration"]


def format_duration(seconds: float) -> str:
    """`42s`, `3m07s` or `1h02m`."""
    s = max(0, int(seconds + 0.5))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Progress:
    """Redraws one line on a terminal; off a terminal, silent or (`plain`) a line per tenth."""

    def __init__(self, total: int, label: str = "", unit: str = "games",
                 stream: TextIO | None = None, enabled: bool | None = None,
                 plain: bool = False) -> None:
        self.total = total
        self.label = label
        self.unit = unit
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.start = time.monotonic()
        self._last = 0.0
        self.done = 0
        self.plain = plain  # off a terminal, print a plain line per tenth instead
        self.note = ""  # shown after the counts: "12 in play"
        self._base = 0  # done when counting began (`begin`): the rate counts from it

    def line(self, done: int) -> str:
        """The bar as text, for `done` of `total`."""
        elapsed = time.monotonic() - self.start
        frac = done / self.total if self.total else 1.0
        width = 30
        filled = int(width * frac)
        # What was done before the first update (a tournament followed midway) is no
        # part of the rate.
        rate = (done - self._base) / elapsed if elapsed > 0 else 0.0
        eta = (self.total - done) / rate if rate > 0 else 0.0
        bar = "#" * filled + "-" * (width - filled)
        prefix = f"{self.label} " if self.label else ""
        note = f", {self.note}" if self.note else ""
        timing = f"{rate:.1f}/s ETA {format_duration(eta)}" if rate > 0 else ""
        return f"{prefix}[{bar}] {done}/{self.total} {self.unit}{note} {timing}".rstrip()

    def begin(self, done: int) -> None:
        """Start counting from `done` (what was done before following began): the rate
        and the time left count only what is done from now on."""
        self._base = self.done = done
        self.start = time.monotonic()

    def show(self, note: str = "") -> None:
        """Draw the bar now (off a terminal too, when `plain`): where following began."""
        self.note = note
        if self.enabled:
            self.update(self.done, force=True)
        elif self.plain:
            self.stream.write(self.line(self.done) + "\n")
            self.stream.flush()

    def update(self, done: int, force: bool = False, total: int | None = None,
               note: str | None = None) -> None:
        """Redraw, at most ten times a second; off a terminal, one line per tenth done."""
        if total is not None:
            self.total = max(total, done)
        if note is not None:
            self.note = note
        step = self.total // 10 or 1
        crossed = done // step > self.done // step or (done >= self.total > self.done)
        self.done = done
        if not self.enabled:
            if self.plain and crossed:
                self.stream.write(self.line(done) + "\n")
                self.stream.flush()
            return
        now = time.monotonic()
        if force or now - self._last >= 0.1 or done >= self.total:
            self._last = now
            self.stream.write("\r" + self.line(done) + "\x1b[K")
            self.stream.flush()

    def close(self) -> None:
        """Finish the line."""
        if self.enabled:
            self.update(self.done, force=True)
            self.stream.write("\n")
            self.stream.flush()
