"""The recorder of a replica started while its ledger's database is away.

Every receipt is refused (the call fails closed: no answer without its receipt) until the ledger
opens; a task tries to open it with bounded backoff, then hands every record to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from mcpward.evidence.record import DecisionRecord, Recorder
from mcpward.evidence.writer import EvidenceUnavailable

log = logging.getLogger("mcpward.evidence")
BACKOFF_S = (0.25, 0.5, 1.0, 2.0)  # between attempts to open the ledger (the last repeats)
LOG_EVERY_S = 30.0


class DeferredRecorder:
    """A Recorder that refuses until `open_recorder` (blocking; run on a thread) succeeds."""

    def __init__(self, open_recorder: Callable[[], Recorder]) -> None:
        self._open = open_recorder
        self.inner: Recorder | None = None
        self._opening: asyncio.Future[Recorder] | None = None
        self._task = asyncio.get_running_loop().create_task(self._open_when_possible())

    @property
    def open(self) -> bool:
        return self.inner is not None

    async def record(self, record: DecisionRecord) -> None:
        inner = self.inner
        if inner is None:
            raise EvidenceUnavailable(
                "receipt not committed: the ledger's database has not answered since start"
            )
        await inner.record(record)

    async def _open_when_possible(self) -> None:
        loop = asyncio.get_running_loop()
        attempt, logged = 0, 0.0
        while True:
            self._opening = loop.run_in_executor(None, self._open)
            try:
                self.inner = await asyncio.shield(self._opening)
            except Exception as exc:
                now = time.monotonic()
                if now - logged >= LOG_EVERY_S:
                    log.warning("the ledger cannot be opened yet (%s); retrying", exc)
                    logged = now
            else:
                self._opening = None
                log.info("the ledger is open: receipts are committed, calls pass again")
                return
            self._opening = None
            await asyncio.sleep(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)])
            attempt += 1

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        opening, self._opening = self._opening, None
        if opening is not None:  # an attempt on its thread: close what it opens
            with contextlib.suppress(Exception):
                self.inner = await opening
        if self.inner is not None:
            await self.inner.close()
