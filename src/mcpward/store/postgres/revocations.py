"""Token revocations shared by a fleet: kept in memory, re-read whenever a replica or the CLI
NOTIFYs a change (and after the listener reconnects). While the listener is down a revocation
could be missed, so every token is refused until it is back (fail closed, at once)."""

from __future__ import annotations

import threading
import time

import psycopg

from mcpward.identity.revocations import RevocationUnavailable
from mcpward.store.pin_macs import PinMacs
from mcpward.store.postgres.bounded import BoundedCalls
from mcpward.store.postgres.notify import (
    REVOCATIONS_CHANNEL,
    acquire_watcher,
    notify,
    release_watcher,
)
from mcpward.store.postgres.pool import (
    CALL_BOUND_S,
    CALL_WAIT_S,
    PgPool,
    PostgresUnavailable,
    first_line,
    release_pool,
)


class PostgresRevocations:
    """`RevocationSet` on the shared database. Takes over one reference to `pool`."""

    def __init__(self, pool: PgPool, key: bytes, *, listen: bool = True) -> None:
        self._pool = pool
        self._macs = PinMacs(key)
        self._lock = threading.Lock()
        self._watcher = acquire_watcher(pool) if listen else None
        # a gateway checks on its event loop: a short wait for a pooled connection
        self._wait = CALL_WAIT_S if listen else None
        self._bounded = BoundedCalls(pool, CALL_BOUND_S) if listen else None
        if self._watcher is not None and pool.down is None:  # else: listens once it answers
            self._watcher.wait_connected(pool.timeout)
        self._seen = -1
        self._subjects: frozenset[str] = frozenset()

    def _read(self) -> frozenset[str]:
        try:
            if self._bounded is not None:  # on a gateway's event loop: bounded
                return self._bounded.call(self._select)
            return self._select()
        except (PostgresUnavailable, psycopg.Error) as exc:
            raise RevocationUnavailable(f"token revocations: {first_line(exc)}") from None

    def _select(self) -> frozenset[str]:
        with self._pool.connection(self._wait) as conn:
            rows = conn.execute("SELECT subject FROM token_revocations").fetchall()
        return frozenset(str(r[0]) for r in rows)

    def _current(self) -> frozenset[str]:
        watcher = self._watcher
        if watcher is None:
            return self._read()
        if not watcher.connected:
            # the listener reconnects every 0.5 s on its own thread; meanwhile refuse at once
            # rather than hold the event loop in a connection attempt
            raise RevocationUnavailable("token revocations: the database is not reachable")
        with self._lock:
            generation = watcher.generation(REVOCATIONS_CHANNEL)
            if generation != self._seen:
                self._subjects = self._read()
                self._seen = generation
            return self._subjects

    def revoked(self, client_id: str | None, token_sha256: str) -> bool:
        subjects = self._current()
        return token_sha256 in subjects or (client_id is not None and client_id in subjects)

    def wait_listening(self, timeout: float = 5.0) -> bool:
        return self._watcher is not None and self._watcher.wait_connected(timeout)

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
            raise RevocationUnavailable(f"token revocations: {first_line(exc)}") from None
        return cursor.rowcount > 0

    def subjects(self) -> list[tuple[str, float]]:
        try:
            with self._pool.connection() as conn:
                rows = conn.execute(
                    "SELECT subject, revoked_at FROM token_revocations ORDER BY revoked_at"
                ).fetchall()
        except (PostgresUnavailable, psycopg.Error) as exc:
            raise RevocationUnavailable(f"token revocations: {first_line(exc)}") from None
        return [(str(s), float(t)) for s, t in rows]  # type: ignore[arg-type]

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher = None
            release_watcher(self._pool)
        if self._bounded is not None:
            self._bounded.close()
        release_pool(self._pool)
