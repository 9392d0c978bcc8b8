"""Client records in the embedded store: one SQLite file in the state dir, re-read when another
process (the CLI) commits to it. With no record stored, every client is as the config says."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Protocol

from mcpward.identity.client_records import (
    ClientRecordRefused,
    ClientRecordSet,
    ClientRecordsUnavailable,
    StoredRecord,
)
from mcpward.store.client_rows import (
    COLUMNS,
    UNSET,
    CeilingChange,
    RolesChange,
    changed,
    decode,
    encode,
)
from mcpward.store.sqlite import open_database, transaction

DB_NAME = "clients.sqlite3"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS client_records (client_id TEXT PRIMARY KEY, roles TEXT, "
    "consent_ceiling TEXT, updated_at REAL NOT NULL)"
)
Snapshot = dict[str, StoredRecord | str]  # client id -> its record, or why it is unusable


class ClientRecords(ClientRecordSet, Protocol):
    """The stored client records, which the CLI can also change and list."""

    def snapshot(self) -> Snapshot: ...

    def change(
        self,
        client_id: str,
        *,
        roles: RolesChange = UNSET,
        ceiling: CeilingChange = UNSET,
    ) -> StoredRecord | None: ...

    def reset(self, client_id: str) -> bool: ...

    def close(self) -> None: ...


def read_snapshot(rows: list[tuple[object, ...]]) -> Snapshot:
    """Rows by client id; a row this code cannot read maps to the reason (its client is refused)."""
    found: Snapshot = {}
    for row in rows:
        try:
            found[str(row[0])] = decode(row)
        except (ValueError, TypeError) as exc:
            found[str(row[0])] = f"the stored record of client {row[0]!r} is unreadable ({exc})"
    return found


def lookup(snapshot: Snapshot, client_id: str) -> StoredRecord | None:
    entry = snapshot.get(client_id)
    if isinstance(entry, str):
        raise ClientRecordRefused(entry)
    return entry


class SqliteClientRecords:
    """`ClientRecordSet` on the state dir; `change`/`reset` are what `mcpward clients` calls."""

    def __init__(self, state_dir: Path) -> None:
        try:
            self._conn = open_database(state_dir / DB_NAME)
            self._conn.execute(_SCHEMA)
        except sqlite3.Error as exc:
            raise ClientRecordsUnavailable(f"{state_dir / DB_NAME}: {exc}") from None
        self._lock = threading.Lock()
        self._version = -1
        self._snapshot: Snapshot = {}

    def _read(self) -> Snapshot:
        rows = self._conn.execute(f"SELECT {COLUMNS} FROM client_records").fetchall()
        return read_snapshot(rows)

    def snapshot(self) -> Snapshot:
        with self._lock:
            try:
                version = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
                if version != self._version:
                    self._snapshot = self._read()
                    self._version = version
            except sqlite3.Error as exc:
                raise ClientRecordsUnavailable(f"client records: {exc}") from None
            return self._snapshot

    def record(self, client_id: str) -> StoredRecord | None:
        return lookup(self.snapshot(), client_id)

    def change(
        self,
        client_id: str,
        *,
        roles: RolesChange = UNSET,
        ceiling: CeilingChange = UNSET,
    ) -> StoredRecord | None:
        """Set (or, with None, drop) one or both fields; returns the stored record."""
        try:
            with self._lock, transaction(self._conn):
                rows = self._conn.execute(
                    f"SELECT {COLUMNS} FROM client_records WHERE client_id = ?", (client_id,)
                ).fetchall()
                existing = lookup(read_snapshot(rows), client_id)
                record = changed(existing, client_id, time.time(), roles, ceiling)
                self._conn.execute("DELETE FROM client_records WHERE client_id = ?", (client_id,))
                if record is not None:
                    self._conn.execute(
                        f"INSERT INTO client_records ({COLUMNS}) VALUES (?, ?, ?, ?)",
                        encode(record),
                    )
        except sqlite3.Error as exc:
            raise ClientRecordsUnavailable(f"client records: {exc}") from None
        finally:
            self._version = -1
        return record

    def reset(self, client_id: str) -> bool:
        """Drop the stored record (the config's entry stands again); False if there was none."""
        try:
            with self._lock, transaction(self._conn):
                cursor = self._conn.execute(
                    "DELETE FROM client_records WHERE client_id = ?", (client_id,)
                )
        except sqlite3.Error as exc:
            raise ClientRecordsUnavailable(f"client records: {exc}") from None
        finally:
            self._version = -1
        return cursor.rowcount > 0

    def close(self) -> None:
        with self._lock:
            self._conn.close()
