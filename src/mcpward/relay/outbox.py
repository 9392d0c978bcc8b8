"""What a link has yet to write to its upstream: a FIFO of encoded frames bounded in bytes.

Senders never wait on the upstream (a full outbox refuses); one writer task per connection
takes frames in order and writes them under a deadline.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

# a frame's message, its bytes, and the W3C traceparent of the round trip that queued it (the
# writer task sends in its own context, so the sender's context variable does not reach it)
Queued = tuple[dict[str, Any], bytes, str | None]


class Outbox:
    """Frames for one connection (one `generation` of a link), oldest first."""

    __slots__ = ("_empty", "_frames", "_waiter", "cap_bytes", "generation", "queued_bytes")

    def __init__(self, cap_bytes: int, generation: int) -> None:
        self.cap_bytes = cap_bytes
        self.generation = generation
        self.queued_bytes = 0  # queued plus the frame being written: freed by `written`
        self._frames: deque[Queued] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._empty = asyncio.Event()
        self._empty.set()

    def offer(self, message: dict[str, Any], data: bytes, trace: str | None = None) -> bool:
        """Queue one frame; False (nothing queued) if it would pass the cap. A frame larger
        than the cap still goes when nothing else waits (the frame cap bounds it)."""
        size = len(data)
        if self.queued_bytes and self.queued_bytes + size > self.cap_bytes:
            return False
        self._frames.append((message, data, trace))
        self.queued_bytes += size
        self._empty.clear()
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        return True

    async def take(self) -> Queued:
        """The oldest frame (its bytes stay counted until `written`)."""
        while not self._frames:
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        return self._frames.popleft()

    def written(self, data: bytes) -> None:
        """The frame from `take` is gone (written, or dropped)."""
        self.queued_bytes -= len(data)
        if not self._frames and self.queued_bytes <= 0:
            self.queued_bytes = 0
            self._empty.set()

    def drop_all(self) -> list[dict[str, Any]]:
        """Empty the outbox; return the messages that were still waiting."""
        dropped = [queued[0] for queued in self._frames]
        self._frames.clear()
        self.queued_bytes = 0
        self._empty.set()
        return dropped

    async def empty(self) -> None:
        """Return once everything queued has been written or dropped."""
        await self._empty.wait()
