"""The embedded SQLite ledger backend: entries, checkpoints and the ledger id in one WAL database.

Triggers refuse UPDATE and DELETE: only a deliberate edit (verification catches it) changes history.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from mcpward.evidence.chain import ChainHead, SealedEntry
from mcpward.evidence.store import DurabilitySpan, StoredCheckpoint, StoredEntry
from mcpward.store.sqlite import open_database, transaction

SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ledger_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger_entries (
    seq INTEGER PRIMARY KEY,
    body BLOB NOT NULL,
    entry_hash BLOB NOT NULL,
    hmac BLOB NOT NULL,
    recorded_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_entries_time ON ledger_entries (recorded_at);
CREATE TABLE IF NOT EXISTS ledger_checkpoints (
    id INTEGER PRIMARY KEY,
    size INTEGER NOT NULL,
    created_at REAL NOT NULL,
    note TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger_durability (
    since_seq INTEGER NOT NULL,
    level TEXT NOT NULL,
    noted_at REAL NOT NULL
);
CREATE TRIGGER IF NOT EXISTS ledger_entries_no_update BEFORE UPDATE ON ledger_entries
BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
CREATE TRIGGER IF NOT EXISTS ledger_entries_no_delete BEFORE DELETE ON ledger_entries
BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
"""


class LedgerStoreError(Exception):
    """The ledger database is unusable (wrong schema version, not a ledger, unreadable)."""


class SqliteLedgerView:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def ledger_id(self) -> str | None:
        try:
            row = self._conn.execute(
                "SELECT value FROM ledger_meta WHERE key = 'ledger_id'"
            ).fetchone()
        except sqlite3.DatabaseError:
            return None
        return None if row is None else str(row[0])

    def size(self) -> int:
        row = self._conn.execute("SELECT MAX(seq) FROM ledger_entries").fetchone()
        return 0 if row[0] is None else int(row[0]) + 1

    def entries(
        self, start_seq: int = 0, since: float | None = None, limit: int | None = None
    ) -> Iterator[StoredEntry]:
        sql = "SELECT seq, body, entry_hash, hmac, recorded_at FROM ledger_entries WHERE seq >= ?"
        args: list[float | int] = [start_seq]
        if since is not None:
            sql += " AND recorded_at >= ?"
            args.append(since)
        sql += " ORDER BY seq"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        for seq, body, digest, mac, recorded_at in self._conn.execute(sql, args):
            yield StoredEntry(int(seq), bytes(body), bytes(digest), bytes(mac), float(recorded_at))

    def last_entries(self, count: int) -> list[StoredEntry]:
        rows = self._conn.execute(
            "SELECT seq, body, entry_hash, hmac, recorded_at FROM ledger_entries "
            "ORDER BY seq DESC LIMIT ?",
            (count,),
        ).fetchall()
        return [
            StoredEntry(int(s), bytes(b), bytes(h), bytes(m), float(t))
            for s, b, h, m, t in reversed(rows)
        ]

    def checkpoints(self) -> list[StoredCheckpoint]:
        rows = self._conn.execute(
            "SELECT size, created_at, note FROM ledger_checkpoints ORDER BY id"
        ).fetchall()
        return [StoredCheckpoint(int(size), float(at), str(note)) for size, at, note in rows]

    def durability(self) -> list[DurabilitySpan]:
        """Which durability level wrote the entries from which seq on (empty: not recorded,
        a ledger written before levels were recorded)."""
        try:
            rows = self._conn.execute(
                "SELECT since_seq, level, noted_at FROM ledger_durability ORDER BY rowid"
            ).fetchall()
        except sqlite3.OperationalError:
            return []
        return [DurabilitySpan(int(seq), str(level), float(at)) for seq, level, at in rows]


class SqliteLedgerStore:
    """One ledger in one SQLite file. Several processes may write: they serialise on the DB lock."""

    def __init__(self, path: Path, *, synchronous: str = "FULL", create: bool = True) -> None:
        if not create and not path.exists():
            raise LedgerStoreError(f"no ledger at {path}")
        self.path = path
        try:
            self._conn = open_database(path, synchronous=synchronous)
        except sqlite3.DatabaseError as exc:
            raise LedgerStoreError(f"{path} is not a usable SQLite database: {exc}") from None
        self._ledger_id = self._init_schema()
        # The chain head stays in memory between appends; PRAGMA data_version says when another
        # connection (another process) has committed since, and only then is it read again.
        self._head_cache: tuple[int, ChainHead] | None = None
        self._wal_fd: int | None = None
        self.wal_syncs = 0

    def _init_schema(self) -> str:
        conn = self._conn
        try:
            with transaction(conn):
                for statement in _SCHEMA.split(";\n"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(
                    "INSERT OR IGNORE INTO ledger_meta (key, value) VALUES ('schema', ?)",
                    (SCHEMA_VERSION,),
                )
                conn.execute(
                    "INSERT OR IGNORE INTO ledger_meta (key, value) VALUES ('ledger_id', ?)",
                    (secrets.token_hex(8),),
                )
                meta = dict(conn.execute("SELECT key, value FROM ledger_meta").fetchall())
        except sqlite3.DatabaseError as exc:
            raise LedgerStoreError(f"{self.path} is not a usable ledger database: {exc}") from None
        if meta.get("schema") != SCHEMA_VERSION:
            raise LedgerStoreError(
                f"{self.path} has ledger schema {meta.get('schema')!r}; this mcpward reads "
                f"{SCHEMA_VERSION!r}"
            )
        return str(meta["ledger_id"])

    @property
    def ledger_id(self) -> str:
        return self._ledger_id

    def _head(self) -> ChainHead:
        row = self._conn.execute(
            "SELECT seq, entry_hash, body FROM ledger_entries ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        if row is None:
            return ChainHead(0)
        return ChainHead.after(int(row[0]) + 1, bytes(row[1]), bytes(row[2]))

    def head(self) -> ChainHead:
        return self._head()

    def _data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def _cached_head(self) -> ChainHead:
        """Inside the write transaction: the head, read from disk only if another connection
        committed since our last append."""
        version = self._data_version()
        cached = self._head_cache
        if cached is not None and cached[0] == version:
            return cached[1]
        return self._head()

    def append(self, build: Callable[[ChainHead], Sequence[SealedEntry]]) -> list[SealedEntry]:
        with transaction(self._conn):
            sealed = list(build(self._cached_head()))
            self._conn.executemany(
                "INSERT INTO ledger_entries (seq, body, entry_hash, hmac, recorded_at) "
                "VALUES (?, ?, ?, ?, ?)",
                [(e.seq, e.body, e.entry_hash, e.hmac, e.recorded_at) for e in sealed],
            )
        self._remember_head(sealed)
        return sealed

    def _remember_head(self, sealed: list[SealedEntry]) -> None:
        if sealed:
            last = sealed[-1]
            head = ChainHead.after(last.seq + 1, last.entry_hash, last.body)
            self._head_cache = (self._data_version(), head)

    def append_nowait(
        self, build: Callable[[ChainHead], Sequence[SealedEntry]]
    ) -> list[SealedEntry] | None:
        """`append`, but None at once instead of waiting when another process holds the write
        lock (so the caller can commit on the event loop and never block it on a lock)."""
        conn = self._conn
        conn.execute("PRAGMA busy_timeout=0")
        try:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    return None
                raise
            try:
                sealed = list(build(self._cached_head()))
                conn.executemany(
                    "INSERT INTO ledger_entries (seq, body, entry_hash, hmac, recorded_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    [(e.seq, e.body, e.entry_hash, e.hmac, e.recorded_at) for e in sealed],
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        finally:
            conn.execute("PRAGMA busy_timeout=10000")
        self._remember_head(sealed)
        return sealed

    def sync_wal(self) -> None:
        """fsync the write-ahead log: what is committed (synchronous=NORMAL) becomes durable
        against a power cut. fsync is per file, so this fd flushes what the connection wrote."""
        wal = self.path.with_name(self.path.name + "-wal")
        if self._wal_fd is None:
            try:
                self._wal_fd = os.open(wal, os.O_RDONLY)
            except FileNotFoundError:
                return  # nothing written since the last checkpoint truncated it
        os.fsync(self._wal_fd)
        self.wal_syncs += 1

    def note_durability(self, level: str, noted_at: float) -> None:
        """Record the durability level entries from the current head on are written with."""
        with transaction(self._conn):
            row = self._conn.execute(
                "SELECT level FROM ledger_durability ORDER BY rowid DESC LIMIT 1"
            ).fetchone()
            if row is not None and row[0] == level:
                return
            self._conn.execute(
                "INSERT INTO ledger_durability (since_seq, level, noted_at) VALUES (?, ?, ?)",
                (self._head().size, level, noted_at),
            )

    def add_checkpoint(
        self, sign: Callable[[int, bytes], str], created_at: float
    ) -> StoredCheckpoint | None:
        with transaction(self._conn):
            head = self._head()
            if head.size == 0:
                return None
            last = self._conn.execute(
                "SELECT size FROM ledger_checkpoints ORDER BY id DESC LIMIT 1"
            ).fetchone()
            if last is not None and int(last[0]) == head.size:
                return None  # this state is already signed
            note = sign(head.size, head.head_hash)
            self._conn.execute(
                "INSERT INTO ledger_checkpoints (size, created_at, note) VALUES (?, ?, ?)",
                (head.size, created_at, note),
            )
        return StoredCheckpoint(head.size, created_at, note)

    def reading(self) -> AbstractContextManager[SqliteLedgerView]:
        return read_snapshot(self.path)

    def close(self) -> None:
        if self._wal_fd is not None:
            os.close(self._wal_fd)
            self._wal_fd = None
        self._conn.close()


@contextmanager
def read_snapshot(path: Path) -> Iterator[SqliteLedgerView]:
    """A read-only snapshot of a ledger file (WAL: appends after it began are not seen)."""
    if not path.exists():
        raise LedgerStoreError(f"no ledger at {path}")
    try:
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None, timeout=10.0
        )
    except sqlite3.DatabaseError as exc:
        raise LedgerStoreError(f"cannot open {path}: {exc}") from None
    try:
        conn.execute("PRAGMA busy_timeout=10000")
        conn.execute("BEGIN")
        try:
            conn.execute("SELECT 1 FROM ledger_entries LIMIT 1").fetchall()
        except sqlite3.DatabaseError as exc:
            raise LedgerStoreError(f"{path} is not a ledger database: {exc}") from None
        yield SqliteLedgerView(conn)
        conn.execute("COMMIT")
    finally:
        conn.close()
