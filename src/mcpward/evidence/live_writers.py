"""Which gateways write a ledger right now: each holds a shared lock on `<ledger>.writers` while
it runs, so a gateway that starts can tell an unsigned tail left by a crash (no other writer)
from the tail of a gateway still running beside it on the same state directory (normal)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock, every tail counts as a crash's
    fcntl = None  # type: ignore[assignment]


class LiveWriters:
    """The lock file beside one ledger."""

    def __init__(self, ledger: Path) -> None:
        self.path = ledger.with_name(ledger.name + ".writers")
        self._fd: int | None = None

    def join(self) -> bool:
        """Take this process's shared hold; True if no other writer was running."""
        if fcntl is None:
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return True
        alone = True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            alone = False
        fcntl.flock(fd, fcntl.LOCK_SH)  # an exclusive hold is converted, never released first
        self._fd = fd
        return alone

    def leave(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
