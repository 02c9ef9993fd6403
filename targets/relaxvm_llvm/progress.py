"""Progress lines on stderr for long kernel builds.

A build reports progress when stderr is a terminal or ``RELAXVM_PROGRESS=1`` (``0`` turns it
off even on a terminal), and only when it is long: at least :data:`MIN_KERNELS` kernels, or
still running after :data:`AFTER_SECONDS`. On a terminal the line is rewritten in place;
otherwise each update is a line of its own (throttled).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TextIO

__all__ = ["AFTER_SECONDS", "MIN_KERNELS", "Progress", "progress_enabled"]

MIN_KERNELS = 8
AFTER_SECONDS = 1.0
_THROTTLE = 0.5


def progress_enabled(stream: TextIO | None = None) -> bool:
    """Whether progress is shown: ``RELAXVM_PROGRESS`` if set, else whether stderr is a TTY."""
    flag = os.environ.get("RELAXVM_PROGRESS", "").strip().lower()
    if flag:
        return flag not in ("0", "off", "false", "no")
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class Progress:
    """Reports ``relaxvm: compiling N kernels for <target> ... k/N`` for one build.

    Parameters
    ----------
    total : int
        Number of kernels.
    what : str
        The target, as shown (``"llvm (znver3)"``).
    min_kernels, after_seconds : int, float
        Show at once from ``min_kernels`` kernels, otherwise once the build has run this long.
    """

    def __init__(
        self,
        total: int,
        what: str,
        *,
        min_kernels: int = MIN_KERNELS,
        after_seconds: float = AFTER_SECONDS,
    ) -> None:
        self.stream = sys.stderr
        self.total = total
        self.what = what
        self.enabled = progress_enabled(self.stream)
        self.tty = self.enabled and progress_enabled_tty(self.stream)
        self.started = time.perf_counter()
        self.shown = False
        self.done = 0
        self.stage = ""
        self._last = 0.0
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        if not self.enabled:
            return
        if total >= min_kernels:
            self._show(force=True)
        else:
            # A few kernels can still take long (one huge kernel in LLVM's optimizer).
            self._timer = threading.Timer(after_seconds, self._show, kwargs={"force": True})
            self._timer.daemon = True
            self._timer.start()

    def __call__(self, stage: str, done: int) -> None:
        """Codegen callback: ``stage`` is ``"kernel"`` (``done`` kernels generated so far),
        ``"optimize"`` or ``"emit"``."""
        if not self.enabled:
            return
        self.stage, self.done = stage, done
        if self.shown:
            self._show(force=stage != "kernel" or done == self.total)

    def _line(self) -> str:
        line = (
            f"relaxvm: compiling {self.total} kernels for {self.what} ... {self.done}/{self.total}"
        )
        if self.stage == "optimize":
            line += " (optimizing)"
        elif self.stage == "emit":
            line += " (emitting code)"
        return line

    def _show(self, force: bool = False) -> None:
        with self._lock:
            now = time.perf_counter()
            if not force and now - self._last < _THROTTLE:
                return
            self._last = now
            self.shown = True
            self._write(self._line())

    def _write(self, line: str) -> None:
        try:
            if self.tty:
                self.stream.write("\r" + line + "\x1b[K")
            else:
                self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False  # a closed stderr must not break the build

    def close(self, failed: bool = False) -> None:
        """End the report (``done in X s`` when anything was shown)."""
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            if not self.shown or not self.enabled:
                return
            elapsed = time.perf_counter() - self.started
            status = "failed" if failed else "done"
            self.done = self.done if failed else self.total
            self.stage = ""
            self._write(f"{self._line()} {status} in {elapsed:.2f} s")
            if self.tty:
                self._write_raw("\n")

    def _write_raw(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass


def progress_enabled_tty(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal (so lines may be rewritten in place)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
