"""A table kept in memory and re-read whenever its LISTEN channel's generation moves (a change
NOTIFYed by a replica or the CLI, or a reconnect of the listener). While the listener is down a
change could be missed, so reads fail at once until it is back (fail closed)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from mcpward.store.postgres.bounded import BoundedCalls
from mcpward.store.postgres.notify import acquire_watcher, release_watcher
from mcpward.store.postgres.pool import CALL_BOUND_S, PgPool, PostgresUnavailable

T = TypeVar("T")


class FollowedTable(Generic[T]):
    """`current()` is the last read of `read()`; it raises `unavailable(reason)` while the
    listener is away. Without `listen` every call reads the database (one-shot CLI use)."""

    def __init__(
        self,
        pool: PgPool,
        channel: str,
        read: Callable[[], T],
        unavailable: Callable[[str], Exception],
        *,
        listen: bool,
    ) -> None:
        self._pool = pool
        self._channel = channel
        self._read = read
        self._unavailable = unavailable
        self._lock = threading.Lock()
        self._watcher = acquire_watcher(pool) if listen else None
        # a gateway reads on its event loop: bounded (bounded.py)
        self._bounded = BoundedCalls(pool, CALL_BOUND_S) if listen else None
        if self._watcher is not None and pool.down is None:  # else: listens once it answers
            self._watcher.wait_connected(pool.timeout)
        self._seen = -1
        self._value: T | None = None

    def current(self) -> T:
        watcher = self._watcher
        if watcher is None:
            return self._read()
        if not watcher.connected:
            # the listener reconnects on its own thread; meanwhile refuse at once rather than
            # hold the event loop in a connection attempt
            raise self._unavailable("the database is not reachable")
        with self._lock:
            generation = watcher.generation(self._channel)
            if generation != self._seen or self._value is None:
                self._value = self._read_bounded()
                self._seen = generation
            return self._value

    def _read_bounded(self) -> T:
        if self._bounded is None:
            return self._read()
        try:
            return self._bounded.call(self._read)
        except PostgresUnavailable as exc:
            raise self._unavailable(str(exc)) from None

    def invalidate(self) -> None:
        """Re-read on the next call (after a change this process made itself)."""
        with self._lock:
            self._seen = -1

    def wait_listening(self, timeout: float = 5.0) -> bool:
        return self._watcher is not None and self._watcher.wait_connected(timeout)

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher = None
            release_watcher(self._pool)
        if self._bounded is not None:
            self._bounded.close()
