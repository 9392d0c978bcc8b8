"""The Recorder the relay calls for every decision: receipts into the ledger, checkpoints on time.

crash_safe: `record` returns once its receipt is committed to the write-ahead log (no fsync); the
  WAL is fsynced at least every `fsync_interval_ms`. sync: returns once committed with an fsync.
  Either way the receipts waiting at one moment are committed together (one transaction, one
  fsync under sync). batched: `record` returns at once; the writer commits groups in the
  background (a crash loses the last group).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from pathlib import Path

from mcpward.evidence.chain import PendingEntry
from mcpward.evidence.checkpoint import CheckpointError, open_checkpoint
from mcpward.evidence.ledger import Ledger
from mcpward.evidence.note import NoteError
from mcpward.evidence.receipt import build_receipt
from mcpward.evidence.record import DecisionRecord, NullRecorder, Recorder
from mcpward.evidence.settings import EvidencePaths, EvidenceSettings
from mcpward.evidence.verify import LedgerVerifier
from mcpward.evidence.vocabulary import LedgerState

log = logging.getLogger("mcpward.evidence")

# batched: at most this many batches wait before `record` applies backpressure
MAX_PENDING_FACTOR = 8


class EvidenceUnavailable(RuntimeError):
    """The ledger cannot take receipts (a commit failed, or the recorder is closed): fail closed."""


class LedgerRecorder:
    """Turns DecisionRecords into receipts and appends them to the ledger from one writer task."""

    def __init__(
        self, ledger: Ledger, settings: EvidenceSettings, clock: Callable[[], float] = time.time
    ) -> None:
        self.ledger = ledger
        self.settings = settings
        self._clock = clock
        self._sync = settings.durability in ("sync", "crash_safe")  # the caller waits
        self._fsync_interval = (
            settings.fsync_interval_ms / 1000.0 if settings.durability == "crash_safe" else None
        )
        self._unsynced_since: float | None = None  # monotonic time of the oldest unsynced commit
        self._pending: list[tuple[PendingEntry, asyncio.Future[None] | None]] = []
        self._wake = asyncio.Event()
        self._drained = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        self._closing = False
        self._closed = False
        self._close_task: asyncio.Future[None] | None = None
        latest = ledger.latest_checkpoint()
        self._since_checkpoint = ledger.head().size - (latest.size if latest else 0)
        self._last_checkpoint = clock()
        self.committed = 0
        self.commits = 0  # transactions: under sync each is one fsync of the WAL
        self.checkpoints = 0

    # -- the Recorder port -------------------------------------------------------------------

    async def record(self, record: DecisionRecord) -> None:
        if self._closing or self._closed:
            raise EvidenceUnavailable("the evidence recorder is closed")
        if self._failure is not None:
            raise EvidenceUnavailable(
                f"the ledger failed earlier: {self._failure}"
            ) from self._failure
        receipt = build_receipt(record)
        entry = PendingEntry.of_receipt(receipt, self._clock())
        self._start_writer()
        if self._sync:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._pending.append((entry, future))
            self._wake.set()
            # Shielded: a cancelled caller must not drop a receipt that is already queued.
            await asyncio.shield(future)
            return
        limit = self.settings.batch_max_entries * MAX_PENDING_FACTOR
        while len(self._pending) >= limit and self._failure is None:
            self._drained.clear()
            self._wake.set()
            await self._drained.wait()
        self._pending.append((entry, None))
        if len(self._pending) == 1 or len(self._pending) >= self.settings.batch_max_entries:
            self._wake.set()  # the first of a batch starts its timer; a full batch goes at once

    async def close(self) -> None:
        """Commit what is queued, sign a final checkpoint, close the database. Idempotent."""
        if self._close_task is None:
            self._closing = True
            self._wake.set()
            self._close_task = asyncio.ensure_future(self._shutdown())
        await asyncio.shield(self._close_task)

    async def _shutdown(self) -> None:
        try:
            if self._writer is not None:
                with contextlib.suppress(Exception):
                    await self._writer  # its failure is already in self._failure
            if self._failure is None:
                await asyncio.to_thread(self._checkpoint)
                if self._unsynced_since is not None:
                    await asyncio.to_thread(self.ledger.store.sync_wal)
        finally:
            self._closed = True
            await asyncio.to_thread(self.ledger.close)

    # -- the writer --------------------------------------------------------------------------

    def _start_writer(self) -> None:
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_task(
                self._run(), name="mcpward-ledger"
            )
            self._writer.add_done_callback(self._writer_done)

    def _writer_done(self, task: asyncio.Task[None]) -> None:
        """A writer that died (a bug, or cancelled) must not leave callers waiting forever."""
        error: BaseException | None
        if task.cancelled():
            error = EvidenceUnavailable("the ledger writer was cancelled")
        else:
            error = task.exception()
        if error is None and not self._pending:
            return
        if error is None:
            error = EvidenceUnavailable("the ledger writer stopped with receipts queued")
        if self._failure is None:
            log.error("the ledger writer stopped: %s", error)
            self._failure = error
        for _, future in self._pending:
            if future is not None and not future.done():
                future.set_exception(EvidenceUnavailable(f"receipt not committed: {error}"))
        self._pending.clear()
        self._drained.set()

    def _wait_timeout(self) -> float | None:
        waits = []
        if self._since_checkpoint:
            due = self._last_checkpoint + self.settings.checkpoint_every_seconds - self._clock()
            waits.append(max(due, 0.0))
        if self._fsync_interval is not None and self._unsynced_since is not None:
            due = self._unsynced_since + self._fsync_interval - time.monotonic()
            waits.append(max(due, 0.0))
        return min(waits) if waits else None

    def _fsync_due(self) -> bool:
        return (
            self._fsync_interval is not None
            and self._unsynced_since is not None
            and time.monotonic() - self._unsynced_since >= self._fsync_interval
        )

    async def _run(self) -> None:
        interval = self.settings.batch_interval_ms / 1000.0
        while True:
            if not self._pending and not self._closing:
                try:
                    async with asyncio.timeout(self._wait_timeout()):
                        await self._wake.wait()
                except TimeoutError:
                    pass
            self._wake.clear()
            if (
                not self._sync
                and not self._closing
                and 0 < len(self._pending) < self.settings.batch_max_entries
            ):
                try:
                    async with asyncio.timeout(interval):
                        await self._wake.wait()
                except TimeoutError:
                    pass
                self._wake.clear()
            batch = self._pending[: self.settings.batch_max_entries]
            del self._pending[: len(batch)]
            if batch or self._checkpoint_due() or self._fsync_due():
                await self._commit(batch)
            self._drained.set()
            if self._closing and not self._pending:
                return

    async def _commit(self, batch: list[tuple[PendingEntry, asyncio.Future[None] | None]]) -> None:
        entries = [entry for entry, _ in batch]
        try:
            if self._failure is not None:
                raise EvidenceUnavailable(f"the ledger failed earlier: {self._failure}")
            if not self._write_now(entries):
                await asyncio.to_thread(self._write, entries)
            elif self._checkpoint_due():
                await asyncio.to_thread(self._write, [])  # sign right after the Nth entry
        except BaseException as exc:  # every waiter must learn of the failure
            if self._failure is None:
                log.error("ledger commit failed; refusing further receipts: %s", exc)
                self._failure = exc
            for _, future in batch:
                if future is not None and not future.done():
                    future.set_exception(EvidenceUnavailable(f"receipt not committed: {exc}"))
            if isinstance(exc, asyncio.CancelledError):
                raise
            return
        for _, future in batch:
            if future is not None and not future.done():
                future.set_result(None)

    def _write_now(self, entries: list[PendingEntry]) -> bool:
        """crash_safe and batched: a commit without fsync is a write to the OS, cheaper than a
        hand-off to a thread; done on the event loop when nothing slow is due (no fsync, no
        checkpoint signature) and no other process holds the ledger's lock. False: not done."""
        if self.settings.durability == "sync" or not entries:
            return False
        if self._fsync_due() or self._checkpoint_due():
            return False
        if self.ledger.append_nowait(entries) is None:
            return False
        self.committed += len(entries)
        self.commits += 1
        self._since_checkpoint += len(entries)
        if self._fsync_interval is not None and self._unsynced_since is None:
            self._unsynced_since = time.monotonic()
        return True

    def _write(self, entries: list[PendingEntry]) -> None:
        """Worker thread: one transaction for the batch, then a checkpoint if one is due.

        A checkpoint that fails is logged and retried later; it never fails committed receipts.
        """
        if entries:
            self.ledger.append(entries)
            self.committed += len(entries)
            self.commits += 1
            self._since_checkpoint += len(entries)
            if self._fsync_interval is not None and self._unsynced_since is None:
                self._unsynced_since = time.monotonic()
        if self._fsync_due():
            self.ledger.store.sync_wal()
            self._unsynced_since = None
        if self._checkpoint_due():
            try:
                self._checkpoint()
            except Exception as exc:  # the receipts are committed; the next checkpoint retries
                log.error("signing a ledger checkpoint failed: %s", exc)
                self._last_checkpoint = self._clock()

    def _checkpoint_due(self) -> bool:
        if self._since_checkpoint == 0:
            return False
        if self._since_checkpoint >= self.settings.checkpoint_every_entries:
            return True
        return self._clock() - self._last_checkpoint >= self.settings.checkpoint_every_seconds

    def _checkpoint(self) -> None:
        signed = self.ledger.checkpoint(self._clock())
        self._last_checkpoint = self._clock()
        self._since_checkpoint = 0
        if signed is not None:
            self.checkpoints += 1


def recover(ledger: Ledger) -> None:
    """After an unclean stop: check the HMACs of entries past the last checkpoint, then sign them.

    A tail that does not verify is left unsigned (and logged); `mcpward ledger verify` reports it.
    """
    latest = ledger.latest_checkpoint()
    head = ledger.head()
    if head.size == 0 or (latest is not None and latest.size >= head.size):
        return
    verifiers = [ledger.signer.verifier()]
    start, prev = 0, None
    if latest is not None:
        try:
            cp = open_checkpoint(latest.note, verifiers)
        except (NoteError, CheckpointError) as exc:
            log.error(
                "the latest stored checkpoint does not verify (%s); not signing the tail", exc
            )
            return
        start, prev = cp.size, cp.head_hash
    verifier = LedgerVerifier(verifiers=verifiers, keyring=ledger.keyring, origin=ledger.origin)
    with ledger.store.reading() as view:
        if prev is None:
            report = verifier.verify(view.entries(start))
        else:
            report = verifier.verify(view.entries(start), start_seq=start, start_prev=prev)
    if report.state in (LedgerState.UNSIGNED, LedgerState.EMPTY):
        ledger.checkpoint()
        log.info("signed %d entries written before an unclean stop", report.entries)
    else:
        log.error(
            "ledger entries after the last checkpoint fail verification (%s, %s at seq %s); "
            "not signing them; run `mcpward ledger verify`",
            report.state.value,
            report.reason.value,
            report.first_bad_seq,
        )


def build_recorder(settings: EvidenceSettings, state_dir: Path) -> Recorder:
    """The relay's recorder for this configuration (NullRecorder when evidence is disabled)."""
    if not settings.enabled:
        return NullRecorder()
    paths = EvidencePaths.resolve(state_dir, settings.path)
    ledger = Ledger.open(paths, synchronous="FULL" if settings.durability == "sync" else "NORMAL")
    recover(ledger)
    ledger.store.note_durability(settings.durability, time.time())
    return LedgerRecorder(ledger, settings)
