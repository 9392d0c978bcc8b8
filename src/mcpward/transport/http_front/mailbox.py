"""A one-reader queue for a request's events: what asyncio.Queue does for this use, without its
size limit, task accounting and waiter lists (a request makes one, so it is made per request)."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class Mailbox(Generic[T]):
    """Unbounded, one reader at a time; `put_nowait` from the event loop's thread."""

    __slots__ = ("_items", "_waiter")

    def __init__(self) -> None:
        self._items: deque[T] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: T) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def empty(self) -> bool:
        return not self._items

    def get_nowait(self) -> T:
        """The oldest item; IndexError if there is none."""
        return self._items.popleft()

    async def get(self) -> T:
        while not self._items:
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        return self._items.popleft()
