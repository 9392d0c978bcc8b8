"""The gateway-wide catalog: each upstream's lists as last read on any connection to it.

Re-reads are coalesced per upstream; listeners (e.g. the pin gate) hear of every read. Per-call
decisions use what the call's own connection serves (`relay.live_contracts`), not this view.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

from mcpward.pipeline.services import SnapshotListener, UpstreamSnapshot

log = logging.getLogger("mcpward.catalog")

Fetcher = Callable[[], Awaitable[UpstreamSnapshot | None]]


class ToolsView(Mapping[str, Sequence[Mapping[str, Any]]]):
    """Read-only mapping upstream id -> last listed tools, for `GuardContext.catalog`."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog

    def __getitem__(self, upstream: str) -> Sequence[Mapping[str, Any]]:
        snap = self._catalog.snapshot(upstream)
        if snap is None:
            raise KeyError(upstream)
        return snap.tools

    def __iter__(self) -> Iterator[str]:
        return iter([u for u in self._catalog.upstream_ids() if self._catalog.snapshot(u)])

    def __len__(self) -> int:
        return sum(1 for _ in self)


class Catalog:
    """Implements `pipeline.services.CatalogView` for the whole gateway."""

    def __init__(self, upstream_ids: Sequence[str]) -> None:
        self._ids = list(upstream_ids)
        self._snapshots: dict[str, UpstreamSnapshot] = {}
        self._fetchers: dict[str, Fetcher] = {}
        self._listeners: list[SnapshotListener] = []
        self._inflight: dict[str, asyncio.Task[UpstreamSnapshot | None]] = {}
        self.tools_view = ToolsView(self)

    def upstream_ids(self) -> Sequence[str]:
        return self._ids

    def snapshot(self, upstream: str) -> UpstreamSnapshot | None:
        return self._snapshots.get(upstream)

    def subscribe(self, listener: SnapshotListener) -> None:
        self._listeners.append(listener)

    def set_fetcher(self, upstream: str, fetcher: Fetcher | None) -> None:
        """The most recent live session's way to re-read this upstream (None: no live session);
        the fetcher publishes what it reads."""
        if fetcher is None:
            self._fetchers.pop(upstream, None)
        else:
            self._fetchers[upstream] = fetcher

    def clear_fetcher(self, upstream: str, fetcher: Fetcher) -> None:
        if self._fetchers.get(upstream) is fetcher:
            del self._fetchers[upstream]

    async def refresh(self, upstream: str) -> UpstreamSnapshot | None:
        """Re-read one upstream now (joining a re-read already under way)."""
        task = self._inflight.get(upstream)
        if task is None:
            fetcher = self._fetchers.get(upstream)
            if fetcher is None:
                return self._snapshots.get(upstream)
            task = asyncio.create_task(self._run(upstream, fetcher))
            self._inflight[upstream] = task
        return await asyncio.shield(task)

    async def _run(self, upstream: str, fetcher: Fetcher) -> UpstreamSnapshot | None:
        """The fetcher reads one connection and publishes what it read (so every read of a
        connection, whoever asked for it, reaches the listeners exactly once)."""
        try:
            snap = await fetcher()
        except Exception as exc:
            log.warning("re-reading upstream %s failed: %s", upstream, exc)
            snap = None
        finally:
            self._inflight.pop(upstream, None)
        return snap if snap is not None else self._snapshots.get(upstream)

    async def publish(self, snap: UpstreamSnapshot) -> None:
        self._snapshots[snap.upstream] = snap
        for listener in list(self._listeners):
            try:
                await listener(snap)
            except Exception:
                log.exception("catalog listener failed for %s", snap.upstream)

    def update_tools(self, upstream: str, tools: list[dict[str, Any]], fetched_at: float) -> bool:
        """Record a complete tools list seen on the client path; True if it differs."""
        snap = self._snapshots.get(upstream)
        if snap is None:
            snap = UpstreamSnapshot(upstream=upstream)
            self._snapshots[upstream] = snap
        changed = snap.tools != tools
        snap.tools = tools
        snap.fetched_at = fetched_at
        return changed
