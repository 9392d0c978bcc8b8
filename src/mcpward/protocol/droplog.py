"""Rate-limited log lines for frames dropped at an edge: a peer cannot flood the log.

At most `per_window` lines per kind in each window; the lines held back are counted and the
count is logged with the next line of that kind after the window ends.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

MAX_KINDS = 64  # kinds are fixed strings of our own; the cap only bounds a misuse


class RateLimitedLog:
    """`warning(kind, fmt, *args)` logs unless `kind` has used up its lines in this window."""

    def __init__(
        self,
        logger: logging.Logger,
        per_window: int = 10,
        window_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = logger
        self._per_window = per_window
        self._window_s = window_s
        self._clock = clock
        self._kinds: dict[str, list[float | int]] = {}  # kind -> [window start, lines, held back]

    def warning(self, kind: str, fmt: str, *args: object) -> bool:
        """Log one line of `kind`; False if it was held back (counted instead)."""
        now = self._clock()
        state = self._kinds.get(kind)
        if state is None:
            if len(self._kinds) >= MAX_KINDS:
                kind = "other"
                state = self._kinds.get(kind)
            if state is None:
                state = self._kinds[kind] = [now, 0, 0]
        if now - state[0] >= self._window_s:
            if state[2]:
                self._log.warning("%d more %s line(s) were held back", state[2], kind)
            state[0], state[1], state[2] = now, 0, 0
        if state[1] >= self._per_window:
            state[2] += 1
            return False
        state[1] += 1
        self._log.warning(fmt, *args)
        return True

    def held_back(self, kind: str) -> int:
        """Lines of `kind` held back in the current window."""
        state = self._kinds.get(kind)
        return int(state[2]) if state is not None else 0
