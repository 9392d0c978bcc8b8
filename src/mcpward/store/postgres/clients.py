"""Client records shared by a fleet: every replica keeps them in memory and re-reads them when a
replica or the CLI NOTIFYs a change (or its listener reconnects), so a lowered ceiling or a removed
role holds on every replica within a second. Rows are MACed with the pins key (keys.dir, never in
the database): a row edited in the database refuses its client instead of widening it."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import psycopg

from mcpward.identity.client_records import ClientRecordsUnavailable, StoredRecord
from mcpward.store.client_rows import COLUMNS, UNSET, CeilingChange, RolesChange, changed, encode
from mcpward.store.clients import Snapshot, lookup, read_snapshot
from mcpward.store.pin_macs import PinMacs
from mcpward.store.postgres.followed import FollowedTable
from mcpward.store.postgres.notify import CLIENTS_CHANNEL, notify
from mcpward.store.postgres.pool import PgPool, PostgresUnavailable, first_line, release_pool

_MAC_KIND = "client_record"


def _unavailable(reason: str) -> ClientRecordsUnavailable:
    return ClientRecordsUnavailable(f"client records: {reason}")


class PostgresClientRecords:
    """`ClientRecordSet` on the shared database. Takes over one reference to `pool`."""

    def __init__(self, pool: PgPool, key: bytes, *, listen: bool = True) -> None:
        self._pool = pool
        self._macs = PinMacs(key)
        self._table = FollowedTable(pool, CLIENTS_CHANNEL, self._read, _unavailable, listen=listen)

    def _checked(self, rows: list[tuple[object, ...]]) -> Snapshot:
        """Rows with a wrong MAC are refused like unreadable ones."""
        snapshot = read_snapshot([row[:4] for row in rows])
        for row in rows:
            entry = snapshot[str(row[0])]
            if isinstance(entry, StoredRecord) and not self._macs.ok(
                str(row[4]), _MAC_KIND, *row[:4]
            ):
                snapshot[entry.client_id] = (
                    f"the stored record of client {entry.client_id!r} fails its integrity check "
                    "(edited outside mcpward, or made with other keys)"
                )
        return snapshot

    def _read(self) -> Snapshot:
        try:
            with self._pool.connection() as conn:
                rows = conn.execute(f"SELECT {COLUMNS}, mac FROM client_records").fetchall()
        except (PostgresUnavailable, psycopg.Error) as exc:
            raise _unavailable(first_line(exc)) from None
        return self._checked(rows)

    def snapshot(self) -> Snapshot:
        return self._table.current()

    def record(self, client_id: str) -> StoredRecord | None:
        return lookup(self._table.current(), client_id)

    def wait_listening(self, timeout: float = 5.0) -> bool:
        return self._table.wait_listening(timeout)

    def change(
        self,
        client_id: str,
        *,
        roles: RolesChange = UNSET,
        ceiling: CeilingChange = UNSET,
    ) -> StoredRecord | None:
        """Set (or, with None, drop) one or both fields and tell every replica."""
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute("LOCK TABLE client_records IN SHARE ROW EXCLUSIVE MODE")
                rows = conn.execute(
                    f"SELECT {COLUMNS}, mac FROM client_records WHERE client_id = %s",
                    (client_id,),
                ).fetchall()
                existing = lookup(self._checked(rows), client_id)
                record = changed(existing, client_id, time.time(), roles, ceiling)
                conn.execute("DELETE FROM client_records WHERE client_id = %s", (client_id,))
                if record is not None:
                    self._insert(conn, [record])
                notify(conn, CLIENTS_CHANNEL)
        except (PostgresUnavailable, psycopg.Error) as exc:
            raise _unavailable(first_line(exc)) from None
        finally:
            self._table.invalidate()
        return record

    def import_records(self, records: Sequence[StoredRecord]) -> int:
        """Insert records as they are (`updated_at` kept), MACed with this store's key, in one
        transaction, and tell every replica (`mcpward store copy`). An id already stored fails
        the whole import."""
        try:
            with self._pool.connection() as conn, conn.transaction():
                self._insert(conn, records)
                notify(conn, CLIENTS_CHANNEL)
        except (PostgresUnavailable, psycopg.Error) as exc:
            raise _unavailable(first_line(exc)) from None
        finally:
            self._table.invalidate()
        return len(records)

    def _insert(self, conn: psycopg.Connection[Any], records: Sequence[StoredRecord]) -> None:
        rows = [encode(record) for record in records]
        with conn.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO client_records ({COLUMNS}, mac) VALUES (%s, %s, %s, %s, %s)",
                [(*row, self._macs.mac(_MAC_KIND, *row)) for row in rows],
            )

    def reset(self, client_id: str) -> bool:
        """Drop the stored record (the config's entry stands again) and tell every replica."""
        try:
            with self._pool.connection() as conn, conn.transaction():
                cursor = conn.execute(
                    "DELETE FROM client_records WHERE client_id = %s", (client_id,)
                )
                notify(conn, CLIENTS_CHANNEL)
        except (PostgresUnavailable, psycopg.Error) as exc:
            raise _unavailable(first_line(exc)) from None
        finally:
            self._table.invalidate()
        return cursor.rowcount > 0

    def close(self) -> None:
        self._table.close()
        release_pool(self._pool)
