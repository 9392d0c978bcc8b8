"""The embedded SQLite ledger backend: entries, checkpoints and the ledger id in one WAL database.

Triggers refuse UPDATE and DELETE: only a deliberate edit (verification catches it) changes history.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from mcpward.evidence.chain import ChainHead, SealedEntry
from mcpward.evidence.store import DurabilitySpan, StoredCheckpoint, StoredEntry
from mcpward.store.sqlite import open_database, transaction

SCHEMA_VERSION = "1"
_ROWS_PER_INSERT = 150  # 750 bound values: under SQLite's oldest variable limit (999)


def _fdatasync(fd: int) -> None:
    """fdatasync where there is one (the data and the size, not the mtime), else fsync."""
    sync = getattr(os, "fdatasync", None) or os.fsync
    sync(fd)


@functools.lru_cache(maxsize=_ROWS_PER_INSERT)
def _insert_sql(rows: int) -> str:
    values = ",".join(["(?, ?, ?, ?, ?)"] * rows)
    return f"INSERT INTO ledger_entries (seq, body, entry_hash, hmac, recorded_at) VALUES {values}"


def _fsync_directory(directory: Path) -> None:
    """Make a new file's directory entry durable (once per process and WAL file)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on a directory; the data itself is synced
    finally:
        os.close(fd)


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
        # The chain head after our last append (None: read it inside the write lock); see append.
        self._head_cache: ChainHead | None = None
        self._wal_fd: int | None = None
        self._wal_lock = threading.Lock()  # the fsync thread and the writer (checkpoints) share it
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

    def append(self, build: Callable[[ChainHead], Sequence[SealedEntry]]) -> list[SealedEntry]:
        """Seal onto the head and commit in one transaction; concurrent writers never fork the
        chain.

        The head stays in memory between appends. Another writer (another process sharing the
        ledger, or `ledger rotate-key`) can only have moved it by taking the next sequence number,
        which is the table's primary key: then the insert fails as a whole, and the head is read
        again inside the write lock and the batch sealed anew. So the common case is one INSERT
        statement in its own transaction: no BEGIN, no read of the head, no JSON parse.
        """
        head = self._head_cache
        if head is not None:
            sealed = list(build(head))
            try:
                self._insert(sealed)
            except sqlite3.IntegrityError:
                self._head_cache = None  # moved underneath: the insert was rolled back
            else:
                if sealed:
                    self._head_cache = sealed[-1].head_after()
                return sealed
        with transaction(self._conn):
            head = self._head()
            sealed = list(build(head))
            self._insert(sealed, in_transaction=True)
        self._head_cache = sealed[-1].head_after() if sealed else head
        return sealed

    def _insert(self, sealed: list[SealedEntry], *, in_transaction: bool = False) -> None:
        """All rows or none. One statement per chunk of rows, not one per row: every statement the
        sqlite3 module steps releases and re-takes the interpreter lock the event loop wants."""
        if not sealed:
            return
        rows = [(e.seq, e.body, e.entry_hash, e.hmac, e.recorded_at) for e in sealed]
        if len(rows) <= _ROWS_PER_INSERT and not in_transaction:  # a statement is atomic
            self._conn.execute(_insert_sql(len(rows)), [v for row in rows for v in row])
            return
        with contextlib.nullcontext() if in_transaction else transaction(self._conn):
            for at in range(0, len(rows), _ROWS_PER_INSERT):
                chunk = rows[at : at + _ROWS_PER_INSERT]
                self._conn.execute(_insert_sql(len(chunk)), [v for row in chunk for v in row])

    def sync_wal(self) -> bool:
        """fsync (fdatasync) the write-ahead log: every transaction committed before this call
        (written to the OS with synchronous=NORMAL) becomes durable against a power cut.

        fsync works on the file, not on a descriptor's own writes, so a descriptor of our own
        flushes what SQLite wrote through its own. The WAL file is reused, never replaced, while
        a connection is open; should it have been (unlinked), it is opened again. The directory
        is fsynced once, so the WAL's own directory entry is durable too. False: no WAL yet.
        Safe to call from any thread (it touches no SQLite state)."""
        with self._wal_lock:
            fd = self._wal_fd
            if fd is not None and os.fstat(fd).st_nlink == 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
                fd = self._wal_fd = None
            if fd is None:
                wal = self.path.with_name(self.path.name + "-wal")
                try:
                    fd = os.open(wal, os.O_RDONLY | os.O_CLOEXEC)
                except FileNotFoundError:
                    return False  # nothing was ever written through the WAL
                self._wal_fd = fd
                _fsync_directory(self.path.parent)
            _fdatasync(fd)
            self.wal_syncs += 1
            return True

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
        with self._wal_lock:
            if self._wal_fd is not None:
                with contextlib.suppress(OSError):
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
