"""Token revocations shared by a fleet: kept in memory, re-read whenever a replica or the CLI
NOTIFYs a change (and after the listener reconnects). While the listener is down a revocation
could be missed, so every token is refused until it is back (fail closed, at once)."""

from __future__ import annotations

import time

import psycopg

from mcpward.identity.revocations import RevocationUnavailable
from mcpward.store.pin_macs import PinMacs
from mcpward.store.postgres.followed import FollowedTable
from mcpward.store.postgres.notify import REVOCATIONS_CHANNEL, notify
from mcpward.store.postgres.pool import (
    CALL_WAIT_S,
    PgPool,
    PostgresUnavailable,
    first_line,
    release_pool,
)


def _unavailable(reason: str) -> RevocationUnavailable:
    return RevocationUnavailable(f"token revocations: {reason}")


class PostgresRevocations:
    """`RevocationSet` on the shared database. Takes over one reference to `pool`."""

    def __init__(self, pool: PgPool, key: bytes, *, listen: bool = True) -> None:
        self._pool = pool
        self._macs = PinMacs(key)
        # a gateway checks on its event loop: a short wait for a pooled connection
        self._wait = CALL_WAIT_S if listen else None
        self._table = FollowedTable(
            pool, REVOCATIONS_CHANNEL, self._read, _unavailable, listen=listen
        )

    def _read(self) -> frozenset[str]:
        try:
            with self._pool.connection(self._wait) as conn:
                rows = conn.execute("SELECT subject FROM token_revocations").fetchall()
        except (PostgresUnavailable, psycopg.Error) as exc:
            raise _unavailable(first_line(exc)) from None
        return frozenset(str(r[0]) for r in rows)

    def revoked(self, client_id: str | None, token_sha256: str) -> bool:
        subjects = self._table.current()
        return token_sha256 in subjects or (client_id is not None and client_id in subjects)

    def wait_listening(self, timeout: float = 5.0) -> bool:
        return self._table.wait_listening(timeout)

    def revoke(self, subject: str) -> bool:
        """Record a revocation and tell every replica; False if it was already revoked."""
        at = time.time()
        try:
            with self._pool.connection() as conn, conn.transaction():
                cursor = conn.execute(
                    "INSERT INTO token_revocations (subject, revoked_at, mac) VALUES (%s, %s, %s) "
                    "ON CONFLICT (subject) DO NOTHING",
                    (subject, at, self._macs.mac("revocation", subject, at)),
                )
                notify(conn, REVOCATIONS_CHANNEL)
        except (PostgresUnavailable, psycopg.Error) as exc:
            raise _unavailable(first_line(exc)) from None
        return cursor.rowcount > 0

    def subjects(self) -> list[tuple[str, float]]:
        try:
            with self._pool.connection() as conn:
                rows = conn.execute(
                    "SELECT subject, revoked_at FROM token_revocations ORDER BY revoked_at"
                ).fetchall()
        except (PostgresUnavailable, psycopg.Error) as exc:
            raise _unavailable(first_line(exc)) from None
        return [(str(s), float(t)) for s, t in rows]  # type: ignore[arg-type]

    def close(self) -> None:
        self._table.close()
        release_pool(self._pool)
