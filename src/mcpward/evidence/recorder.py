"""The Recorder the relay calls for every decision: queue it for the ledger's writer, and wait as
long as the durability level says.

crash_safe: `record` returns once its receipt is committed to the write-ahead log (written to the
  OS, not fsynced); a thread fsyncs the log at most `fsync_interval_ms` after a commit.
sync: returns once committed and fsynced; receipts waiting together share a transaction and an
  fsync (group commit). batched: returns at once; the writer commits groups in the background.
Receipts are built, hashed, chained and committed on the writer thread (evidence/writer.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from mcpward.evidence.checkpoint import CheckpointError, open_checkpoint
from mcpward.evidence.ledger import Ledger
from mcpward.evidence.ledger_keys import load_ledger_keys
from mcpward.evidence.live_writers import LiveWriters
from mcpward.evidence.note import NoteError
from mcpward.evidence.receipt import check_record, payload_hashes
from mcpward.evidence.record import DecisionRecord, NullRecorder, Recorder
from mcpward.evidence.settings import EvidencePaths, EvidenceSettings
from mcpward.evidence.verify import LedgerVerifier
from mcpward.evidence.vocabulary import LedgerState
from mcpward.evidence.writer import (
    MAX_PENDING_FACTOR,
    EvidenceUnavailable,
    Job,
    LedgerWriter,
    log,
)
from mcpward.store.factory import StoreContext, migrate_hint
from mcpward.telemetry.histogram import Histogram

__all__ = [
    "MAX_PENDING_FACTOR",
    "EvidenceUnavailable",
    "LedgerRecorder",
    "build_recorder",
    "recover",
]


class LedgerRecorder:
    """Hands DecisionRecords to the ledger's writer thread; its futures say when to answer."""

    def __init__(
        self,
        ledger: Ledger,
        settings: EvidenceSettings,
        clock: Callable[[], float] = time.time,
        writers: LiveWriters | None = None,
    ) -> None:
        self.ledger = ledger
        self._writers = writers  # this process's hold on the ledger's live-writers lock
        self.settings = settings
        self._clock = clock
        self._waits = settings.durability != "batched"  # the caller waits for the writer
        # Started here, not on the first call: it reads the ledger's head once, off the hot path.
        self._writer = LedgerWriter(ledger, settings, clock)
        self._close_task: asyncio.Future[None] | None = None

    # -- the Recorder port -------------------------------------------------------------------

    async def record(self, record: DecisionRecord) -> None:
        writer = self._writer
        if self._waits:
            done = asyncio.get_running_loop().create_future()
            writer.submit(Job(record, self._clock(), done, None))
            # A cancelled caller cancels only its wait: the queued receipt is still committed.
            await done
            return
        # batched: the answer goes out before the receipt is built, so a producer's bug must
        # surface here, and the payloads are hashed before the relay can change them.
        check_record(record)
        hashes = payload_hashes(record)
        while writer.backlog() >= writer.backlog_limit and writer.failure is None:
            space = asyncio.get_running_loop().create_future()
            writer.wait_for_space(space)
            await space
        writer.submit(Job(record, self._clock(), None, hashes))

    async def close(self) -> None:
        """Commit what is queued, sign a final checkpoint, fsync, close the database. Idempotent."""
        if self._close_task is None:
            done = asyncio.get_running_loop().create_future()
            self._writer.stop(done)
            self._close_task = done
        await asyncio.shield(self._close_task)
        if self._writers is not None:
            self._writers.leave()

    # -- counters (tests, benchmarks) --------------------------------------------------------

    @property
    def committed(self) -> int:
        """Receipts committed so far."""
        return self._writer.committed

    @property
    def commits(self) -> int:
        """Transactions so far (receipts waiting together share one)."""
        return self._writer.commits

    @property
    def checkpoints(self) -> int:
        return self._writer.checkpoints

    @property
    def fsync_seconds(self) -> Histogram | None:
        """How long fsyncs of the log took (None for `batched`: SQLite fsyncs by itself)."""
        return self._writer.fsync_seconds

    @property
    def fsyncs(self) -> int:
        """fsyncs of the ledger's write-ahead log so far (sync: one per group of commits)."""
        return self.ledger.store.wal_syncs


def recover(ledger: Ledger, others_running: bool = False) -> None:
    """Sign entries past the last checkpoint after checking their HMACs: left by an unclean
    stop, or (`others_running`) not yet signed by a gateway running beside this one, which is
    normal and not reported as a crash.

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
        if others_running:
            log.debug("signed %d entries of a gateway running beside this one", report.entries)
        else:
            log.info("signed %d entries written before an unclean stop", report.entries)
    else:
        log.error(
            "ledger entries after the last checkpoint fail verification (%s, %s at seq %s); "
            "not signing them; run `mcpward ledger verify`",
            report.state.value,
            report.reason.value,
            report.first_bad_seq,
        )


def open_ledger(
    settings: EvidenceSettings, state_dir: Path, store: StoreContext | None = None
) -> Ledger:
    """The ledger the configuration names: the state dir's SQLite file, or the fleet's PostgreSQL
    ledger (`store.kind: postgres`) with the keys from the `keys:` section.

    SQLite: every level commits with synchronous=NORMAL (the WAL written, not fsynced); the
    writer's fsync thread makes it durable: before the answer (sync) or on a timer (crash_safe).
    PostgreSQL: sync commits with synchronous_commit on (flushed by the server before COMMIT
    returns); crash_safe and batched with it off, and the fsync thread forces the flush."""
    paths = EvidencePaths.resolve(state_dir, settings.path, store=store)
    if store is None or not store.postgres:
        return Ledger.open(paths, synchronous="NORMAL")
    keys = load_ledger_keys(paths)  # before the database: a bad key refuses the start
    from mcpward.store.postgres.ledger import open_postgres_ledger

    backend = open_postgres_ledger(
        store.settings,
        synchronous_commit=settings.durability == "sync",
        migrate_hint=migrate_hint(store),
    )
    try:
        return Ledger.open(paths, store=backend, keys=keys)
    except BaseException:
        backend.close()
        raise


def build_recorder(
    settings: EvidenceSettings, state_dir: Path, store: StoreContext | None = None
) -> Recorder:
    """The relay's recorder for this configuration (NullRecorder when evidence is disabled)."""
    if not settings.enabled:
        return NullRecorder()
    ledger = open_ledger(settings, state_dir, store)
    writers = None
    if store is None or not store.postgres:
        writers = LiveWriters(EvidencePaths.resolve(state_dir, settings.path, store=store).ledger)
    alone = writers.join() if writers is not None else True
    recover(ledger, others_running=not alone)
    ledger.store.note_durability(settings.durability, time.time())
    return LedgerRecorder(ledger, settings, writers=writers)
