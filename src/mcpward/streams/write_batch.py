"""Frames written in one event-loop iteration leave in as few writes as possible.

The first frame of an iteration is written at once (a lone call pays no delay); the frames
written after it in the same iteration wait and leave together at the start of the next one.
A burst of 16 answers or requests is then two system calls and two wake-ups of the reader on
the other end, not 16.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

log = logging.getLogger("mcpward.upstreams")

# queued bytes past which a frame is written at once (the caller's flow control sees them)
FLUSH_AT_BYTES = 65536


class WriteBatch:
    """Wraps a non-blocking `write(bytes)`; `flush` before draining or closing."""

    def __init__(self, write: Callable[[bytes], None]) -> None:
        self._write = write
        self._pending: list[bytes] | None = None  # None: nothing written this iteration
        self.pending_bytes = 0
        self.error: BaseException | None = None  # a deferred write failed (raised on the next)

    def write(self, data: bytes) -> None:
        if self.error is not None:
            raise self.error
        pending = self._pending
        if pending is None:
            self._write(data)
            self._pending = []
            asyncio.get_running_loop().call_soon(self._end_of_iteration)
            return
        pending.append(data)
        self.pending_bytes += len(data)
        if self.pending_bytes >= FLUSH_AT_BYTES:
            self.flush()

    def flush(self) -> None:
        """Write the frames that wait, in order, as one."""
        pending = self._pending
        if pending:
            self._pending = []
            self.pending_bytes = 0
            self._write(b"".join(pending))

    def _end_of_iteration(self) -> None:
        try:
            self.flush()
        except Exception as exc:  # the other end is gone: the next write raises it
            self.error = exc
            log.debug("a batched write failed: %s", type(exc).__name__)
        finally:
            self._pending = None
