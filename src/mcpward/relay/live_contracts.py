"""What one upstream connection serves: its lists, read on that connection and re-read when stale.

A read belongs to a connection generation and to a list_changed epoch; concurrent readers share
one read, and a reader never accepts a read that began before the change it is waiting past.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mcpward.pipeline.services import UpstreamSnapshot
from mcpward.relay.links import UpstreamLink

log = logging.getLogger("mcpward.relay")

Reader = Callable[[UpstreamLink], Awaitable[UpstreamSnapshot | None]]
Publisher = Callable[[UpstreamSnapshot], Awaitable[None]]

# A connection that changes its lists on every read is not followed forever: after this many
# reads superseded by a newer list_changed, `current` gives up (the caller fails closed).
MAX_SUPERSEDED_READS = 3


class ConnectionContracts:
    """Implements `pipeline.services.LiveContracts` for one `UpstreamLink`."""

    def __init__(self, link: UpstreamLink, read: Reader, publish: Publisher) -> None:
        self.link = link
        self._read = read
        self._publish = publish
        self._snapshot: UpstreamSnapshot | None = None
        self._snapshot_key: tuple[int, int] = (-1, -1)  # (generation, epoch) it was read in
        self._epoch = 0  # bumped by every list_changed from this connection
        self._task: asyncio.Task[UpstreamSnapshot | None] | None = None
        self._task_key: tuple[int, int] = (-1, -1)
        self._task_started = 0  # sequence number of the read in flight
        self._reads = 0  # reads started so far (each read's sequence number)
        self._done = 0  # sequence number of the newest read that has finished

    def _key(self) -> tuple[int, int]:
        return (self.link.generation, self._epoch)

    @property
    def snapshot(self) -> UpstreamSnapshot | None:
        """The lists this connection serves, if read since its last (re)connect and change."""
        if self._snapshot is not None and self._snapshot_key == self._key():
            return self._snapshot
        return None

    def invalidate(self) -> None:
        """The connection said its lists changed: nothing read before now describes it."""
        self._epoch += 1

    async def current(self) -> UpstreamSnapshot | None:
        """The snapshot of this connection as it is now; reads it first if needed (shared)."""
        for _ in range(MAX_SUPERSEDED_READS):
            snap = self.snapshot
            if snap is not None:
                return snap
            if await self._join(self._key(), after=None) is None:
                return None  # the read failed (logged): the caller fails closed
        log.warning("upstream %s keeps changing its lists; giving up on a read", self.link.id)
        return self.snapshot

    async def reread(self) -> UpstreamSnapshot | None:
        """A read newer than every read finished so far (one in flight that began after them
        is joined, so callers finding the same stale snapshot share one read); None if it
        failed."""
        if await self._join(self._key(), after=self._done) is None:
            return None
        return self.snapshot or await self.current()

    async def _join(self, key: tuple[int, int], after: int | None) -> UpstreamSnapshot | None:
        task = self._task
        usable = (
            task is not None
            and not task.done()
            and self._task_key == key
            and (after is None or self._task_started > after)
        )
        if not usable:
            self._reads += 1
            self._task_started = self._reads
            self._task_key = key
            task = self._task = asyncio.ensure_future(self._run(key, self._reads))
        assert task is not None
        return await asyncio.shield(task)

    async def _run(self, key: tuple[int, int], seq: int) -> UpstreamSnapshot | None:
        try:
            snap = await self._read(self.link)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("reading the lists of upstream %s failed: %s", self.link.id, exc)
            snap = None
        finally:
            self._done = max(self._done, seq)
        if snap is None:
            return None
        if key[0] == self.link.generation and key >= self._snapshot_key:
            # Stored under the key the read began in: a list_changed that arrived during the
            # read leaves it stale, so the next caller reads again.
            self._snapshot, self._snapshot_key = snap, key
        await self._publish(snap)
        return snap

    def key(self) -> tuple[int, int]:
        """Where this connection is now; take it before a request whose answer `note_list` gets."""
        return self._key()

    def note_list(
        self, key: tuple[int, int], field: str, items: list[dict[str, Any]]
    ) -> UpstreamSnapshot | None:
        """A complete list the client path read on this connection (asked at `key`) replaces
        that list in the connection's snapshot; returns the new snapshot if it changed."""
        snap = self._snapshot
        if snap is None or key != self._snapshot_key or key != self._key():
            return None
        if getattr(snap, field) == items:
            return None
        fresh = dataclasses.replace(snap, derived={}, fetched_at=time.monotonic())
        setattr(fresh, field, items)
        self._snapshot = fresh
        return fresh

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
