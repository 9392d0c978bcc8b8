"""A one-reader queue for a request's events: what asyncio.Queue does for this use, without its
task accounting and waiter lists (a request makes one, so it is made per request), and with a
byte count so a stream whose client does not read it cannot grow without bound."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class Mailbox(Generic[T]):
    """One reader at a time; `put_nowait` from the event loop's thread. `offer` refuses what
    would take the bytes waiting past `cap_bytes` (None: no cap); `put_nowait` never refuses
    (markers, and an item taken and put back)."""

    __slots__ = ("_items", "_waiter", "cap_bytes", "queued_bytes")

    def __init__(self, cap_bytes: int | None = None) -> None:
        self._items: deque[tuple[T, int]] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self.cap_bytes = cap_bytes
        self.queued_bytes = 0

    def offer(self, item: T, size: int) -> bool:
        """Queue `item` of `size` bytes unless it would pass the cap (an item alone always
        fits: its own size is bounded elsewhere). False: nothing was queued."""
        cap = self.cap_bytes
        if cap is not None and self.queued_bytes and self.queued_bytes + size > cap:
            return False
        self.put_nowait(item, size)
        return True

    def put_nowait(self, item: T, size: int = 0) -> None:
        self._items.append((item, size))
        self.queued_bytes += size
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def empty(self) -> bool:
        return not self._items

    def get_nowait(self) -> T:
        """The oldest item; IndexError if there is none."""
        item, size = self._items.popleft()
        self.queued_bytes -= size
        return item

    async def get(self) -> T:
        while not self._items:
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        return self.get_nowait()
