"""The fleet's ledger on PostgreSQL: one hash chain every replica appends to (migration 0002).

Appends serialise on one advisory lock; the chain head stays in memory, so an uncontended batch is
one round trip. Triggers refuse UPDATE, DELETE and TRUNCATE; verification catches what gets past.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any

import psycopg
from psycopg import errors as pg_errors

from mcpward.evidence.chain import ChainHead, SealedEntry
from mcpward.evidence.store import (
    DurabilitySpan,
    LedgerUnavailable,
    StoredCheckpoint,
    StoredEntry,
)
from mcpward.store.ledger_sqlite import LedgerStoreError
from mcpward.store.postgres.append_statement import PreparedAppends
from mcpward.store.postgres.migrations import SchemaMismatch, check_schema
from mcpward.store.postgres.pool import PgPool, PostgresUnavailable, acquire_pool, release_pool
from mcpward.store.settings import StoreSettings

log = logging.getLogger("mcpward.evidence")

SCHEMA_VERSION = "1"
APPEND_LOCK = 0x6D63706C  # "mcpl": one appender at a time across the fleet
RETRY_AFTER_S = 0.25  # after a lost connection, calls fail at once for this long (no storm)
_FETCH_ROWS = 2000

_COLUMNS = "seq, body, entry_hash, hmac, recorded_at"
# Rows as arrays: any number in one statement, but every bytea is sent as text and parsed.
_ARRAY_ROWS = "unnest(%s::bigint[], %s::bytea[], %s::bytea[], %s::bytea[], %s::float8[])"
_VALUES_MAX = 2000  # rows sent as VALUES (5 parameters each, under the protocol's 65535)
_LOCK = "WITH append_lock AS MATERIALIZED (SELECT pg_advisory_xact_lock(%s)) "
_INSERT = f"INSERT INTO ledger_entries ({_COLUMNS}) "


@functools.lru_cache(maxsize=64)
def _insert_sql(rows: int, locked: bool) -> str:
    """One INSERT of `rows` rows, as its own transaction when `locked`: the append lock (held to
    its commit) is taken before the first row is produced (the materialised CTE is the join's
    outer side). Up to _VALUES_MAX rows go as VALUES (binary parameters, about half the server
    time of arrays for a receipt), more as arrays."""
    if rows <= _VALUES_MAX:
        row = "(%s::bigint, %s::bytea, %s::bytea, %s::bytea, %s::float8)"
        source = f"(VALUES {', '.join([row] * rows)}) AS r"
    else:
        source = f"{_ARRAY_ROWS} AS r"
    if locked:
        return f"{_LOCK}{_INSERT}SELECT r.* FROM append_lock, {source}"
    return f"{_INSERT}SELECT r.* FROM {source}"


_HEAD = "SELECT seq, entry_hash, body FROM ledger_entries ORDER BY seq DESC LIMIT 1"

Conn = psycopg.Connection[tuple[Any, ...]]
# The server is away for now (down, restarting, unreachable), or a failover left us on a standby
# that refuses writes: retried by itself, unlike every other database error.
_AWAY = (psycopg.OperationalError, pg_errors.ReadOnlySqlTransaction)


def _stored(row: tuple[Any, ...]) -> StoredEntry:
    seq, body, digest, mac, recorded_at = row
    return StoredEntry(int(seq), bytes(body), bytes(digest), bytes(mac), float(recorded_at))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class PostgresLedgerView:
    """A REPEATABLE READ, read-only snapshot of the ledger tables."""

    def __init__(self, conn: Conn) -> None:
        self._conn = conn

    def ledger_id(self) -> str | None:
        row = self._conn.execute("SELECT value FROM ledger_meta WHERE key = 'ledger_id'").fetchone()
        return None if row is None else str(row[0])

    def size(self) -> int:
        row = self._conn.execute("SELECT max(seq) FROM ledger_entries").fetchone()
        return 0 if row is None or row[0] is None else int(row[0]) + 1

    def entries(
        self, start_seq: int = 0, since: float | None = None, limit: int | None = None
    ) -> Iterator[StoredEntry]:
        sql = f"SELECT {_COLUMNS} FROM ledger_entries WHERE seq >= %s"
        args: list[float | int] = [start_seq]
        if since is not None:
            sql += " AND recorded_at >= %s"
            args.append(since)
        sql += " ORDER BY seq"
        if limit is not None:
            sql += " LIMIT %s"
            args.append(limit)
        # A server-side cursor: a ledger of millions of entries is streamed, not loaded.
        with self._conn.cursor(name="mcpward_ledger_entries") as cursor:
            cursor.itersize = _FETCH_ROWS
            cursor.execute(sql, args)
            for row in cursor:
                yield _stored(row)

    def last_entries(self, count: int) -> list[StoredEntry]:
        rows = self._conn.execute(
            f"SELECT {_COLUMNS} FROM ledger_entries ORDER BY seq DESC LIMIT %s", (count,)
        ).fetchall()
        return [_stored(row) for row in reversed(rows)]

    def checkpoints(self) -> list[StoredCheckpoint]:
        rows = self._conn.execute(
            "SELECT size, created_at, note FROM ledger_checkpoints ORDER BY id"
        ).fetchall()
        return [StoredCheckpoint(int(size), float(at), str(note)) for size, at, note in rows]

    def durability(self) -> list[DurabilitySpan]:
        rows = self._conn.execute(
            "SELECT since_seq, level, noted_at FROM ledger_durability ORDER BY id"
        ).fetchall()
        return [DurabilitySpan(int(seq), str(level), float(at)) for seq, level, at in rows]


@contextmanager
def read_pg_snapshot(pool: PgPool) -> Iterator[PostgresLedgerView]:
    """A consistent read-only view of the fleet's ledger (appends after it began are not seen)."""
    try:
        with pool.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            exists = conn.execute("SELECT to_regclass('ledger_entries') IS NOT NULL").fetchone()
            if not exists or not exists[0]:
                raise LedgerStoreError(
                    f"{pool.where} has no ledger tables; run: mcpward store migrate --config F"
                )
            yield PostgresLedgerView(conn)
    except psycopg.OperationalError as exc:
        raise LedgerUnavailable(f"{pool.where}: {_first_line(exc)}") from None
    except PostgresUnavailable as exc:
        raise LedgerUnavailable(str(exc)) from None


class PostgresLedgerStore:
    """The ledger in a PostgreSQL database shared by every replica.

    `synchronous_commit=True` (durability sync): COMMIT returns once the server has flushed the
    WAL, so `sync_wal` has nothing left to do. False (crash_safe, batched): COMMIT returns once the
    commit is in the server's WAL buffers and `sync_wal` forces the flush (one round trip).
    The writer thread owns one connection; `sync_wal` (the fsync thread) uses another.
    """

    def __init__(
        self,
        pool: PgPool,
        *,
        synchronous_commit: bool = True,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.pool = pool
        self.synchronous_commit = synchronous_commit
        self._on_close = on_close
        self._conn: Conn | None = None
        self._appends: PreparedAppends | None = None  # prepared on self._conn
        self._flush_conn: Conn | None = None
        self._flush_lock = threading.Lock()
        self._retry_at = 0.0  # monotonic: no new connection attempt before this
        self._head_cache: ChainHead | None = None
        self.wal_syncs = 0
        self.contended = 0  # appends whose head had been moved by another replica
        self._ledger_id = self._read_ledger_id()

    # -- connections ---------------------------------------------------------------------------

    def _read_ledger_id(self) -> str:
        try:
            with read_pg_snapshot(self.pool) as view:
                ledger_id = view.ledger_id()
                schema = view._conn.execute(
                    "SELECT value FROM ledger_meta WHERE key = 'schema'"
                ).fetchone()
        except LedgerUnavailable as exc:
            raise LedgerStoreError(f"the ledger database is unreachable: {exc}") from None
        if ledger_id is None or schema is None or schema[0] != SCHEMA_VERSION:
            raise LedgerStoreError(
                f"{self.pool.where}: ledger schema {schema and schema[0]!r}, this mcpward reads "
                f"{SCHEMA_VERSION!r}; run: mcpward store migrate --config F"
            )
        return ledger_id

    def _connect(self, synchronous_commit: bool) -> Conn:
        if time.monotonic() < self._retry_at:
            raise LedgerUnavailable(f"{self.pool.where}: the ledger database is unreachable")
        try:
            conn = self.pool.connect_direct()
            if not synchronous_commit:
                conn.execute("SET synchronous_commit = off")
        except (PostgresUnavailable, psycopg.OperationalError) as exc:
            self._retry_at = time.monotonic() + RETRY_AFTER_S
            raise LedgerUnavailable(_first_line(exc)) from None
        return conn

    def _writer_conn(self) -> Conn:
        if self._conn is None or self._conn.closed:
            self._conn = self._connect(self.synchronous_commit)
            self._appends = PreparedAppends(self._conn, APPEND_LOCK)
        return self._conn

    def _lost(self, exc: BaseException) -> LedgerUnavailable:
        """The writer's connection broke: drop it and the cached head (a COMMIT whose answer was
        lost may or may not have happened; the head is read again under the lock)."""
        if self._conn is not None:
            with suppress(psycopg.Error):
                self._conn.close()
        self._conn = self._appends = None
        self._head_cache = None
        self._retry_at = time.monotonic() + RETRY_AFTER_S
        return LedgerUnavailable(f"{self.pool.where}: {_first_line(exc)}")

    # -- LedgerStore -----------------------------------------------------------------------------

    @property
    def ledger_id(self) -> str:
        return self._ledger_id

    @staticmethod
    def _head(conn: Conn) -> ChainHead:
        row = conn.execute(_HEAD).fetchone()
        if row is None:
            return ChainHead(0)
        return ChainHead.after(int(row[0]) + 1, bytes(row[1]), bytes(row[2]))

    def head(self) -> ChainHead:
        conn = self._writer_conn()
        try:
            return self._head(conn)
        except _AWAY as exc:
            raise self._lost(exc) from None

    def append(self, build: Callable[[ChainHead], Sequence[SealedEntry]]) -> list[SealedEntry]:
        """Seal onto the head and commit under the fleet's append lock.

        The head after our last append is kept. If no other replica appended since, the batch
        goes in one statement, one round trip (the lock, the rows, the implicit COMMIT). If one
        did, the INSERT collides on the primary key and rolls back as a whole; then the head is
        read under the lock and the batch sealed anew (a transaction of three more round trips).
        Raises LedgerUnavailable when the database is gone.
        """
        conn = self._writer_conn()
        try:
            head = self._head_cache
            if head is not None:
                sealed = list(build(head))
                try:
                    self._insert_locked(conn, sealed)
                except pg_errors.UniqueViolation:
                    self.contended += 1
                else:
                    if sealed:
                        self._head_cache = sealed[-1].head_after()
                    return sealed
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK,))
                head = self._head(conn)
                sealed = list(build(head))
                self._insert(conn, sealed)
        except _AWAY as exc:
            raise self._lost(exc) from None
        self._head_cache = sealed[-1].head_after() if sealed else head
        return sealed

    def _insert_locked(self, conn: Conn, sealed: list[SealedEntry]) -> None:
        """The batch as one statement that takes the append lock and commits: prepared and run
        through libpq for the usual small batches, through psycopg for large ones."""
        appends = self._appends
        if appends is not None and appends.fits(len(sealed)):
            appends.insert(sealed)
        else:
            self._insert(conn, sealed, locked=True)

    @staticmethod
    def _insert(conn: Conn, sealed: list[SealedEntry], *, locked: bool = False) -> None:
        if not sealed:
            return
        args: list[Any] = [APPEND_LOCK] if locked else []
        if len(sealed) <= _VALUES_MAX:
            for e in sealed:
                args += (e.seq, e.body, e.entry_hash, e.hmac, e.recorded_at)
        else:
            args += (
                [e.seq for e in sealed],
                [e.body for e in sealed],
                [e.entry_hash for e in sealed],
                [e.hmac for e in sealed],
                [e.recorded_at for e in sealed],
            )
        conn.execute(_insert_sql(len(sealed), locked), args, binary=True)

    def sync_wal(self) -> bool:
        """Make every commit before this call durable on the server. With synchronous_commit on
        there is nothing to do. Off: a transaction with an id, committed with synchronous_commit
        on, flushes the WAL up to its own commit record, which lies after every earlier commit of
        every replica. Raises LedgerUnavailable when the database is gone."""
        if self.synchronous_commit:
            return True
        with self._flush_lock:
            try:
                if self._flush_conn is None or self._flush_conn.closed:
                    self._flush_conn = self._connect(synchronous_commit=True)
                self._flush_conn.execute("SELECT txid_current()")
            except psycopg.OperationalError as exc:
                if self._flush_conn is not None:
                    self._flush_conn.close()
                self._flush_conn = None
                raise LedgerUnavailable(f"{self.pool.where}: {_first_line(exc)}") from None
            self.wal_syncs += 1
            return True

    def note_durability(self, level: str, noted_at: float) -> None:
        """Record the level entries from the current head on are written at (skipped when the
        last recorded level is the same: replicas at one level record it once)."""
        conn = self._writer_conn()
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK,))
                row = conn.execute(
                    "SELECT level FROM ledger_durability ORDER BY id DESC LIMIT 1"
                ).fetchone()
                if row is not None and row[0] == level:
                    return
                conn.execute(
                    "INSERT INTO ledger_durability (since_seq, level, noted_at) "
                    "VALUES (%s, %s, %s)",
                    (self._head(conn).size, level, noted_at),
                )
        except _AWAY as exc:
            raise self._lost(exc) from None

    def add_checkpoint(
        self, sign: Callable[[int, bytes], str], created_at: float
    ) -> StoredCheckpoint | None:
        """Sign the head under the append lock; committed with synchronous_commit on, so the
        checkpoint and every entry it covers are on disk when this returns."""
        conn = self._writer_conn()
        try:
            with conn.transaction():
                conn.execute("SET LOCAL synchronous_commit = on")
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK,))
                head = self._head(conn)
                if head.size == 0:
                    return None
                last = conn.execute(
                    "SELECT size FROM ledger_checkpoints ORDER BY id DESC LIMIT 1"
                ).fetchone()
                if last is not None and int(last[0]) >= head.size:
                    return None  # this state (or a later one) is already signed
                note = sign(head.size, head.head_hash)
                conn.execute(
                    "INSERT INTO ledger_checkpoints (size, created_at, note) VALUES (%s, %s, %s)",
                    (head.size, created_at, note),
                )
        except _AWAY as exc:
            raise self._lost(exc) from None
        return StoredCheckpoint(head.size, created_at, note)

    def reading(self) -> AbstractContextManager[PostgresLedgerView]:
        return read_pg_snapshot(self.pool)

    def close(self) -> None:
        for conn in (self._conn, self._flush_conn):
            if conn is not None:
                with suppress(psycopg.Error):
                    conn.close()
        self._conn = self._flush_conn = self._appends = None
        if self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            on_close()


def open_postgres_ledger(
    settings: StoreSettings, *, synchronous_commit: bool, migrate_hint: str
) -> PostgresLedgerStore:
    """The fleet's ledger from the `store:` settings, its schema checked (a replica refuses a
    schema behind or ahead of its code). The pool is released when the store is closed."""
    try:
        pool = acquire_pool(settings)
    except PostgresUnavailable as exc:
        raise LedgerStoreError(f"ledger: {exc}") from None
    try:
        check_schema(pool, migrate_hint)
        return PostgresLedgerStore(
            pool, synchronous_commit=synchronous_commit, on_close=lambda: release_pool(pool)
        )
    except (PostgresUnavailable, SchemaMismatch, LedgerStoreError) as exc:
        release_pool(pool)
        raise LedgerStoreError(f"ledger: {exc}") from None


@contextmanager
def open_postgres_snapshot(settings: StoreSettings) -> Iterator[PostgresLedgerView]:
    """A read-only snapshot of the fleet's ledger for the CLI (verify, export, tail, stats)."""
    try:
        pool = acquire_pool(settings)
    except PostgresUnavailable as exc:
        raise LedgerStoreError(f"ledger: {exc}") from None
    try:
        with read_pg_snapshot(pool) as view:
            yield view
    except LedgerUnavailable as exc:
        raise LedgerStoreError(f"ledger: {exc}") from None
    finally:
        release_pool(pool)
