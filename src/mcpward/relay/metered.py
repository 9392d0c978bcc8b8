"""Counts every decision for /metrics on its way to the evidence recorder (only when metrics are
served): calls, tool calls, guard runs and stops, the gateway's added latency.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from mcpward.contracts.store import PinStoreError
from mcpward.evidence.record import DecisionRecord, Recorder
from mcpward.evidence.recorder import LedgerRecorder
from mcpward.protocol import methods
from mcpward.store.factory import StoreContext, open_pin_store, sqlite_context
from mcpward.store.pins_sqlite import DB_NAME
from mcpward.telemetry.metrics import GatewayMetrics, LedgerCounts

log = logging.getLogger("mcpward.metrics")


class MeteredRecorder:
    """A Recorder that counts each DecisionRecord, then hands it to the real one."""

    def __init__(self, inner: Recorder, metrics: GatewayMetrics) -> None:
        self.inner = inner
        self.metrics = metrics

    async def record(self, record: DecisionRecord) -> None:
        m = self.metrics
        upstream = m.upstream_label(record.upstream)
        m.observe_call(
            upstream,
            record.method,
            record.decision,
            record.runs,
            record.gateway_ms,
            record.upstream_ms,
        )
        if record.method == methods.TOOLS_CALL:
            listed = record.tool_definition is not None
            m.count_tool_call(upstream, record.name, listed, record.decision)
        await self.inner.record(record)

    async def close(self) -> None:
        await self.inner.close()


def watch_gateway_state(
    metrics: GatewayMetrics,
    recorder: Recorder,
    store: Callable[[], StoreContext | None],
    state_dir: Path,
) -> None:
    """Scrape-time values: open holds from the configured pin store (`store()`; the state dir's
    SQLite until the gateway has opened its store), and the ledger writer's counters."""
    metrics.watch_holds(lambda: count_open_holds(store() or sqlite_context(state_dir)))
    if isinstance(recorder, LedgerRecorder):
        ledger = recorder
        metrics.watch_ledger(
            lambda: LedgerCounts(ledger.committed, ledger.fsyncs, ledger.fsync_seconds)
        )


def count_open_holds(context: StoreContext) -> int | None:
    """HOLDs waiting for review; 0 while no SQLite pin store exists yet (none is created), None
    when the store cannot be read now (the scrape leaves the gauge out rather than failing)."""
    if not context.postgres and not (context.state_dir / DB_NAME).exists():
        return 0
    try:
        store = open_pin_store(context)
    except PinStoreError as exc:
        log.warning("open holds not counted: %s", exc)
        return None
    try:
        return len(store.holds())
    except PinStoreError as exc:  # the database went away between opening and reading
        log.warning("open holds not counted: %s", exc)
        return None
    finally:
        store.close()
