"""Rate-limited log lines for what a peer can make happen at will (bad frames, failed handlers).

A peer that sends a malformed frame a thousand times a second must not write a thousand lines:
each (source, kind) gets at most `per_window` lines per window, then one line saying lines are
being suppressed, and, once a later window opens, one line with how many were.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

LINES_PER_MINUTE = 10
WINDOW_S = 60.0
MAX_KEYS = 256  # (source, kind) pairs remembered; kinds come from code, so this is never reached


@dataclass(slots=True)
class _Window:
    started: float
    logged: int = 0
    suppressed: int = 0


class LimitedLog:
    """At most `per_window` lines per (source, kind) per window; the rest are counted."""

    def __init__(
        self,
        logger: logging.Logger,
        per_window: int = LINES_PER_MINUTE,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._per_window = per_window
        self._window_s = window_s
        self._clock = clock
        self._windows: dict[tuple[str, str], _Window] = {}

    def log(self, level: int, source: str, kind: str, msg: str, *args: object) -> bool:
        """Log `msg % args` unless (source, kind) is over its budget; True if it was logged.

        `msg` and `args` must never hold a message body: only ids, kinds and fixed texts."""
        now = self._clock()
        key = (source, kind)
        window = self._windows.get(key)
        if window is None or now - window.started >= self._window_s:
            if window is not None and window.suppressed:
                self._logger.log(
                    level,
                    "%s: %d more %s lines were suppressed",
                    source,
                    window.suppressed,
                    kind,
                )
            if window is None and len(self._windows) >= MAX_KEYS:
                self._windows.clear()
            window = self._windows[key] = _Window(started=now)
        if window.logged < self._per_window:
            window.logged += 1
            self._logger.log(level, msg, *args)
            return True
        if window.suppressed == 0:
            self._logger.log(
                level,
                "%s: more than %d %s lines within %.0f s; suppressing the rest of this window",
                source,
                self._per_window,
                kind,
                self._window_s,
            )
        window.suppressed += 1
        return False
