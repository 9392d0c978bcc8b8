"""Newline-delimited JSON-RPC framing with a hard size cap: an oversized frame is skipped, not held.

Used by the stdio front and the stdio upstream connector alike.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

_ID_PEEK = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,128}")')
_CHUNK = 64 * 1024


@dataclass(frozen=True, slots=True)
class OversizedFrame:
    """A frame longer than the cap. `peeked_id` is the JSON-RPC id if it appeared early on."""

    size_at_least: int
    peeked_id: str | int | None


def _peek_id(head: bytes) -> str | int | None:
    match = _ID_PEEK.search(head[:4096])
    if not match:
        return None
    raw = match.group(1)
    if raw.startswith(b'"'):
        try:
            return raw[1:-1].decode()
        except UnicodeDecodeError:
            return None
    return int(raw)


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
                return OversizedFrame(len(line), _peek_id(line))
            if line.strip():
                return line

    async def _skip_oversized(self, available: int) -> OversizedFrame:
        head = await self._reader.read(min(available, 4096))
        total = len(head)
        while True:
            try:
                await self._reader.readuntil(b"\n")
                break
            except asyncio.LimitOverrunError as exc:
                chunk = await self._reader.read(max(exc.consumed, 1))
                total += len(chunk)
                if not chunk:
                    break
            except asyncio.IncompleteReadError as exc:
                total += len(exc.partial)
                break
        return OversizedFrame(max(total, self._max + 1), _peek_id(head))


def stream_limit(max_bytes: int) -> int:
    """The StreamReader limit that lets a frame of exactly `max_bytes` (+ newline) through."""
    return max_bytes + 2
