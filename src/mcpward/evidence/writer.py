"""The ledger's writer thread (builds, seals and commits receipts in batches) and its fsync thread.

The event loop only queues a DecisionRecord; the writer owns the ledger's connection and the chain
head. The fsync thread makes commits durable off the writer's path (group commit).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import NamedTuple

from mcpward.evidence.chain import PendingEntry
from mcpward.evidence.ledger import Ledger
from mcpward.evidence.receipt import PayloadHashes, build_receipt
from mcpward.evidence.record import DecisionRecord
from mcpward.evidence.settings import EvidenceSettings
from mcpward.evidence.store import LedgerStore, LedgerUnavailable
from mcpward.telemetry.histogram import DISK_BUCKETS, Histogram

log = logging.getLogger("mcpward.evidence")

# while the ledger's database is unreachable, its failures are logged at most this often
OUTAGE_LOG_EVERY_S = 10.0
# batched: at most this many batches wait before `record` applies backpressure
MAX_PENDING_FACTOR = 8
# batched: the writer commits once this many receipts wait (or batch_interval_ms after the first).
# Its work then comes in short bursts: while it builds receipts it holds the interpreter lock, and
# the event loop, if it wants the lock meanwhile, gets it only when the burst ends.
GATHER = 16


class EvidenceUnavailable(RuntimeError):
    """The ledger cannot take receipts (a commit failed, or the recorder is closed): fail closed."""


class Job(NamedTuple):
    """One decision on its way into the ledger."""

    record: DecisionRecord
    recorded_at: float
    done: asyncio.Future[None] | None  # crash_safe, sync: resolved once durable at the level
    hashes: PayloadHashes | None  # batched: taken by the caller (the payloads may change later)


Outcome = tuple[asyncio.Future[None], BaseException | None]  # a waiter and its error (None: ok)


def _settle(outcomes: list[Outcome]) -> None:
    """On the futures' loop: wake their callers (one cancelled meanwhile is skipped)."""
    for future, error in outcomes:
        if not future.done():
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)


def settle(outcomes: Iterable[Outcome]) -> None:
    """From any thread: settle futures on their loops, one wake-up per loop, not per future."""
    by_loop: dict[asyncio.AbstractEventLoop, list[Outcome]] = {}
    for outcome in outcomes:
        by_loop.setdefault(outcome[0].get_loop(), []).append(outcome)
    for loop, group in by_loop.items():
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            loop.call_soon_threadsafe(_settle, group)


def resolve(futures: Iterable[asyncio.Future[None]], error: BaseException | None = None) -> None:
    """From any thread: settle every future alike."""
    settle((future, error) for future in futures)


class WalSyncer:
    """fsyncs the ledger's write-ahead log on its own thread: the writer never waits for the disk.

    sync: an fsync starts as soon as a commit waits for one; commits made while it runs wait for
    the next (one fsync per group of commits). crash_safe: at most `interval` seconds after the
    first commit not yet fsynced; callers never wait for it.
    """

    def __init__(
        self,
        store: LedgerStore,
        interval: float | None,
        on_failure: Callable[[BaseException], None],
    ) -> None:
        self._store = store
        self._interval = interval  # None: sync (fsync at once)
        self._on_failure = on_failure
        self._cond = threading.Condition(threading.Lock())
        self._waiters: list[asyncio.Future[None]] = []
        self._dirty_since: float | None = None  # monotonic time of the first unsynced commit
        self._stopping = False
        self._failed = False
        self.sync_seconds = Histogram(DISK_BUCKETS)  # fsync latency, for /metrics
        self._thread = threading.Thread(target=self._main, name="mcpward-ledger-fsync", daemon=True)
        self._thread.start()

    def committed(self, waiters: list[asyncio.Future[None]]) -> bool:
        """A commit happened; `waiters` (sync) wake after an fsync that starts after this call.
        False: the syncer has failed, nobody will fsync (the waiters are not taken)."""
        with self._cond:
            if self._failed:
                return False
            if waiters:
                self._waiters.extend(waiters)
            if self._dirty_since is None or waiters:
                if self._dirty_since is None:
                    self._dirty_since = time.monotonic()
                self._cond.notify()
            return True

    def stop(self) -> None:
        """fsync what is left, then end the thread."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        self._thread.join()

    def _main(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._dirty_since is not None:
                        if self._interval is None or self._waiters or self._stopping:
                            break
                        remaining = self._dirty_since + self._interval - time.monotonic()
                        if remaining <= 0:
                            break
                        self._cond.wait(remaining)
                    elif self._stopping:
                        return
                    else:
                        self._cond.wait()
                waiters, self._waiters = self._waiters, []
                self._dirty_since = None
            started = time.perf_counter()
            try:
                synced = self._store.sync_wal()
            except LedgerUnavailable as exc:  # the database is away: retry, never give up
                with self._cond:
                    if self._dirty_since is None:
                        self._dirty_since = time.monotonic()
                resolve(waiters, EvidenceUnavailable(f"receipt not made durable: {exc}"))
                time.sleep(self._interval or 0.05)
                continue
            except BaseException as exc:  # the log cannot be made durable: fail closed
                with self._cond:
                    self._failed = True
                    waiters += self._waiters
                    self._waiters = []
                resolve(waiters, EvidenceUnavailable(f"fsync of the ledger failed: {exc}"))
                self._on_failure(exc)
                return
            if synced:
                self.sync_seconds.observe(time.perf_counter() - started)
            resolve(waiters)


class LedgerWriter:
    """The one thread that writes the ledger: takes everything queued at once, builds the receipts,
    chains them onto the head it keeps in memory and commits them in one transaction."""

    def __init__(
        self, ledger: Ledger, settings: EvidenceSettings, clock: Callable[[], float]
    ) -> None:
        self.ledger = ledger
        self.settings = settings
        self._clock = clock
        self._level = settings.durability
        self._batch_max = settings.batch_max_entries
        self._gather = min(self._batch_max, GATHER)
        self.backlog_limit = settings.batch_max_entries * MAX_PENDING_FACTOR
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[Job] = deque()
        self._sleeping = False  # waiting for the first job
        self._gathering = False  # batched: waiting for a full batch or the interval
        self._stopping = False
        self._exited = False
        self._done: list[asyncio.Future[None]] = []  # close() waits on these
        self._space: list[asyncio.Future[None]] = []  # batched: callers held by backpressure
        self.failure: BaseException | None = None
        latest = ledger.latest_checkpoint()
        self._since_checkpoint = ledger.head().size - (latest.size if latest else 0)
        self._last_checkpoint = clock()
        self.committed = 0
        self.commits = 0  # transactions
        self.checkpoints = 0
        self.rejected = 0  # batched: receipts that could not be built after the answer went out
        self.unavailable = 0  # receipts refused (or, batched, lost) while the store was away
        self._outage_logged = 0.0  # monotonic time of the last outage log line
        self._current: list[Job] = []  # the batch in hand (failed too if the writer dies)
        self._syncer: WalSyncer | None = None
        if self._level != "batched":  # batched: the WAL is fsynced by SQLite's own checkpoints
            interval = settings.fsync_interval_ms / 1000.0 if self._level == "crash_safe" else None
            self._syncer = WalSyncer(ledger.store, interval, self._fail)
        self._thread = threading.Thread(
            target=self._main, name="mcpward-ledger-writer", daemon=True
        )
        self._thread.start()

    # -- the event loop's side -----------------------------------------------------------------

    @property
    def fsync_seconds(self) -> Histogram | None:
        """fsync latency of the log (None when this level does not fsync it itself)."""
        return self._syncer.sync_seconds if self._syncer is not None else None

    def submit(self, job: Job) -> None:
        """Queue a job (never blocks on the disk: the lock only guards the queue)."""
        with self._cond:
            if self.failure is not None:
                raise EvidenceUnavailable(
                    f"the ledger failed earlier: {self.failure}"
                ) from self.failure
            if self._stopping:
                raise EvidenceUnavailable("the evidence recorder is closed")
            self._queue.append(job)
            if self._sleeping or (self._gathering and len(self._queue) >= self._gather):
                self._cond.notify()

    def backlog(self) -> int:
        return len(self._queue)

    def wait_for_space(self, future: asyncio.Future[None]) -> None:
        """batched: `future` resolves once the backlog has room again (or the writer stops)."""
        with self._cond:
            if len(self._queue) < self.backlog_limit or self._exited or self.failure is not None:
                future.set_result(None)
                return
            self._space.append(future)
            self._cond.notify()

    def stop(self, done: asyncio.Future[None]) -> None:
        """Commit what is queued, sign a final checkpoint, fsync, close; then resolve `done`."""
        with self._cond:
            self._stopping = True
            if not self._exited:
                self._done.append(done)
                self._cond.notify()
                return
        done.set_result(None)

    # -- the writer thread -------------------------------------------------------------------

    def _main(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # a bug in the writer: no caller may wait forever
            self._fail(exc, [job.done for job in self._current if job.done is not None])
        finally:
            self._finish()

    def _wait_timeout(self) -> float | None:
        """Seconds until a time-based checkpoint is due (None: none is)."""
        if not self._since_checkpoint:
            return None
        due = self._last_checkpoint + self.settings.checkpoint_every_seconds - self._clock()
        return max(due, 0.0)

    def _take(self) -> tuple[list[Job], bool]:
        """The next batch (everything queued, up to batch_max_entries) and whether to stop."""
        batched = self._level == "batched"
        with self._cond:
            while not self._queue and not self._stopping and self.failure is None:
                timeout = self._wait_timeout()
                if timeout is not None and timeout <= 0:
                    break
                self._sleeping = True
                try:
                    self._cond.wait(timeout)
                finally:
                    self._sleeping = False
            if (
                batched
                and 0 < len(self._queue) < self._gather
                and not self._stopping
                and self.failure is None
            ):
                deadline = time.monotonic() + self.settings.batch_interval_ms / 1000.0
                self._gathering = True
                try:
                    while len(self._queue) < self._gather and not self._stopping:
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            break
                        self._cond.wait(remaining)
                finally:
                    self._gathering = False
            count = min(len(self._queue), self._batch_max)
            batch = [self._queue.popleft() for _ in range(count)]
            space: list[asyncio.Future[None]] = []
            if self._space and len(self._queue) < self.backlog_limit:
                space, self._space = self._space, []
            stop = self.failure is not None or (self._stopping and not self._queue)
        if space:
            resolve(space)
        return batch, stop

    def _run(self) -> None:
        while True:
            batch, stop = self._take()
            self._current = batch
            if batch and self.failure is None:
                self._commit(batch)
            self._current = []
            if self.failure is not None:
                return
            if self._checkpoint_due():
                self._try_checkpoint()
            if stop:
                return

    def _commit(self, batch: list[Job]) -> None:
        pending: list[PendingEntry] = []
        waiters: list[asyncio.Future[None]] = []
        refused: list[Outcome] = []
        for record, recorded_at, done, hashes in batch:
            try:
                receipt = build_receipt(record, hashes=hashes)
            except Exception as exc:  # a producer's bug (ReceiptError) or a payload not JSON
                if done is not None:
                    refused.append((done, exc))  # the caller fails closed with it
                else:  # batched: the caller checked the record; the answer is already out
                    self.rejected += 1
                    log.error("a receipt could not be built after its answer was sent: %s", exc)
                continue
            pending.append(PendingEntry.of_receipt(receipt, recorded_at))
            if done is not None:
                waiters.append(done)
        if refused:
            settle(refused)
        if not pending:
            return
        try:
            self.ledger.append(pending)
        except LedgerUnavailable as exc:  # fail this batch closed; the store reconnects later
            self._unavailable(exc, waiters, len(pending))
            return
        except BaseException as exc:  # every waiter must learn of the failure
            self._fail(exc, waiters)
            return
        if self._outage_logged:
            log.warning("the ledger's database is back; receipts are committed again")
            self._outage_logged = 0.0
        self.committed += len(pending)
        self.commits += 1
        self._since_checkpoint += len(pending)
        if self._syncer is None:
            return
        if self._level == "sync":
            if not self._syncer.committed(waiters):  # durable (and answered) after an fsync
                self._fail(EvidenceUnavailable("the ledger's fsync thread has failed"), waiters)
        else:
            resolve(waiters)  # crash_safe: written to the OS; a process kill cannot lose it
            self._syncer.committed([])

    def _unavailable(
        self, exc: LedgerUnavailable, waiters: list[asyncio.Future[None]], count: int
    ) -> None:
        """The store is away for now: the batch's callers fail closed (their answers are not
        released); nothing is marked failed, the next batch tries again."""
        self.unavailable += count
        now = time.monotonic()
        if now - self._outage_logged >= OUTAGE_LOG_EVERY_S:
            lost = "" if waiters else " (batched: their answers were already sent)"
            log.error("ledger database unavailable, %d receipt(s) refused%s: %s", count, lost, exc)
            self._outage_logged = now
        resolve(waiters, EvidenceUnavailable(f"receipt not committed: {exc}"))

    def _fail(self, exc: BaseException, waiters: Iterable[asyncio.Future[None]] = ()) -> None:
        """Refuse everything from now on; wake every waiter with the failure."""
        with self._cond:
            if self.failure is None:
                log.error("ledger commit failed; refusing further receipts: %s", exc)
                self.failure = exc
            queued = [job.done for job in self._queue if job.done is not None]
            self._queue.clear()
            space, self._space = self._space, []
            self._cond.notify()
        resolve([*waiters, *queued], EvidenceUnavailable(f"receipt not committed: {exc}"))
        resolve(space)

    def _finish(self) -> None:
        """Last acts of the thread: on close, a final checkpoint and fsync; then close the
        ledger. After a failure, wait for close() (the connection belongs to this thread)."""
        with self._cond:
            while not self._stopping:
                self._cond.wait()
        try:
            if self.failure is None:
                self._try_checkpoint()
            if self._syncer is not None:
                self._syncer.stop()
            if self.failure is None:
                self.ledger.store.sync_wal()
            log.info(
                "ledger: %d receipts in %d transactions, %d fsyncs of the log (%s)",
                self.committed,
                self.commits,
                self.ledger.store.wal_syncs,
                self._level,
            )
        except Exception as exc:
            log.error("closing the ledger: %s", exc)
        finally:
            try:
                self.ledger.close()
            finally:
                with self._cond:
                    self._exited = True
                    done, self._done = self._done, []
                resolve(done)

    def _checkpoint_due(self) -> bool:
        if self._since_checkpoint == 0:
            return False
        if self._since_checkpoint >= self.settings.checkpoint_every_entries:
            return True
        return self._clock() - self._last_checkpoint >= self.settings.checkpoint_every_seconds

    def _try_checkpoint(self) -> None:
        """Sign the head. A checkpoint that fails is logged and retried later; it never fails
        committed receipts."""
        try:
            signed = self.ledger.checkpoint(self._clock())
        except Exception as exc:
            log.error("signing a ledger checkpoint failed: %s", exc)
            self._last_checkpoint = self._clock()
            return
        self._last_checkpoint = self._clock()
        self._since_checkpoint = 0
        if signed is not None:
            self.checkpoints += 1
