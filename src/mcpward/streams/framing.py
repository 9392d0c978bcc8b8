"""Newline-delimited JSON-RPC framing with a hard size cap: an oversized frame is skipped, not held.

Used by the stdio front and the stdio upstream connector alike.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from mcpward.protocol.frame_head import HEAD_BYTES, HeadPeek, peek_head


@dataclass(frozen=True, slots=True)
class OversizedFrame:
    """A frame longer than the cap, and what its first (and last) bytes say about it.

    `request_id`: the top-level id of a frame known to be a request (answer it with this);
    `peeked_id`: the top-level id whatever the frame is (a response's, say). Nested "id"
    members never count, and a notification is never given an id.
    """

    size_at_least: int
    peek: HeadPeek

    @property
    def peeked_id(self) -> str | int | None:
        return self.peek.top_level_id

    @property
    def request_id(self) -> str | int | None:
        return self.peek.request_id


class FrameReader:
    """Reads one newline-terminated frame at a time; never holds more than `max_bytes` of one."""

    def __init__(self, reader: asyncio.StreamReader, max_bytes: int) -> None:
        self._reader = reader
        self._max = max_bytes

    async def next(self) -> bytes | OversizedFrame | None:
        """The next non-empty frame, an OversizedFrame marker, or None at end of stream."""
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                line = exc.partial
                if not line.strip():
                    return None
            except asyncio.LimitOverrunError as exc:
                return await self._skip_oversized(exc.consumed)
            if len(line) > self._max + 1:
                return OversizedFrame(len(line), peek_head(line, line[-HEAD_BYTES:]))
            if line.strip():
                return line

    async def _skip_oversized(self, available: int) -> OversizedFrame:
        head = await self._reader.read(min(available, HEAD_BYTES))
        total = len(head)
        tail = head
        while True:
            try:
                rest = await self._reader.readuntil(b"\n")
                total += len(rest)
                tail = (tail + rest)[-HEAD_BYTES:]
                break
            except asyncio.LimitOverrunError as exc:
                chunk = await self._reader.read(max(exc.consumed, 1))
                total += len(chunk)
                if not chunk:
                    break
                tail = (tail + chunk)[-HEAD_BYTES:]
            except asyncio.IncompleteReadError as exc:
                total += len(exc.partial)
                tail = (tail + exc.partial)[-HEAD_BYTES:]
                break
        return OversizedFrame(max(total, self._max + 1), peek_head(head, tail))


def stream_limit(max_bytes: int) -> int:
    """The StreamReader limit that lets a frame of exactly `max_bytes` (+ newline) through."""
    return max_bytes + 2
