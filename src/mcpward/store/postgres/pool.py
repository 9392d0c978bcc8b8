"""One connection pool per DSN and process, opened from the `store:` settings (DSN: a SecretRef).

Every caller shares it; `PostgresUnavailable` says plainly why no connection could be had.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from mcpward.secret_refs import SecretUnavailable, resolve_secret
from mcpward.store.settings import StoreSettings

log = logging.getLogger("mcpward.store")
RETRY_AFTER_S = 0.5  # after a failure, calls fail at once for this long (no storm, no waits)


class PostgresUnavailable(Exception):
    """No connection to the database (DSN unreadable, server down, pool exhausted)."""


def resolve_dsn(settings: StoreSettings) -> str:
    """The connection string, read from its SecretRef when it is one. Never logged."""
    if settings.dsn is None:
        raise PostgresUnavailable("store.dsn is not set")
    if isinstance(settings.dsn, str):
        return settings.dsn
    try:
        return resolve_secret(settings.dsn)
    except SecretUnavailable as exc:
        raise PostgresUnavailable(f"store.dsn: {exc}") from None


def describe_dsn(dsn: str) -> str:
    """host:port/dbname of a DSN, for messages (no user, no password)."""
    try:
        params = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.Error:
        return "postgres (unparsable DSN)"
    host = params.get("host") or "localhost"
    port = params.get("port") or "5432"
    return f"postgres://{host}:{port}/{params.get('dbname') or ''}"


class PgPool:
    """A shared `psycopg_pool.ConnectionPool`, reference-counted per process.

    Once the server is found gone, calls fail at once (for `RETRY_AFTER_S`) instead of each
    waiting out the timeout; the next call after that probes the server with a connection of its
    own and, when it answers, replaces the pool (whose own reconnection backs off for minutes)."""

    def __init__(self, dsn: str, settings: StoreSettings) -> None:
        self.dsn = dsn
        self.where = describe_dsn(dsn)
        self.timeout = settings.timeout_s
        self._settings = settings
        self._users = 0
        self._state_lock = threading.Lock()
        self._down: str | None = None  # why the last attempt failed; None while it works
        self._retry_at = 0.0
        self.pool = self._new_pool()

    def _new_pool(self) -> ConnectionPool:
        pool = ConnectionPool(
            self.dsn,
            min_size=self._settings.pool.min,
            max_size=self._settings.pool.max,
            kwargs={"autocommit": True, "connect_timeout": _connect_timeout(self.timeout)},
            timeout=self.timeout,
            check=ConnectionPool.check_connection,
            name=f"mcpward {self.where}",
            open=False,
        )
        pool.open(wait=False)
        return pool

    def _mark_down(self, reason: str) -> PostgresUnavailable:
        with self._state_lock:
            self._down = reason
            self._retry_at = time.monotonic() + RETRY_AFTER_S
        return PostgresUnavailable(reason)

    def _revive(self) -> None:
        """Called while marked down: fail fast, or probe the server and renew the pool."""
        with self._state_lock:
            if self._down is None:
                return
            if time.monotonic() < self._retry_at:
                raise PostgresUnavailable(self._down)
            self._retry_at = time.monotonic() + RETRY_AFTER_S  # one prober at a time
        try:
            probe = self.connect_direct()
        except PostgresUnavailable as exc:  # still away: the next probe is RETRY_AFTER_S away
            with self._state_lock:
                self._down = str(exc)
            raise
        probe.close()
        with self._state_lock:
            old, self.pool = self.pool, self._new_pool()
            self._down = None
        threading.Thread(target=old.close, kwargs={"timeout": 0}, daemon=True).start()
        log.info("%s answers again", self.where)

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
        """A checked connection in autocommit mode; use `conn.transaction()` for atomic work."""
        if self._down is not None:
            # fails fast, or probes; a refusal must not push the next probe further away, or
            # steady calls (a loaded gateway) would keep it from ever running
            self._revive()
        try:
            with self.pool.connection(timeout=self.timeout) as conn:
                yield conn
        except PoolTimeout:
            raise self._mark_down(
                f"{self.where}: no database connection within {self.timeout:g} s"
            ) from None
        except psycopg.OperationalError as exc:
            raise self._mark_down(f"{self.where}: {first_line(exc)}") from None

    def connect_direct(self) -> psycopg.Connection[tuple[object, ...]]:
        """A connection of its own, outside the pool (LISTEN needs one that is never shared)."""
        try:
            return psycopg.connect(
                self.dsn, autocommit=True, connect_timeout=_connect_timeout(self.timeout)
            )
        except psycopg.Error as exc:
            raise PostgresUnavailable(f"{self.where}: {first_line(exc)}") from None

    def close(self) -> None:
        self.pool.close()


def _connect_timeout(timeout: float) -> int:
    return max(1, round(timeout))


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


_pools: dict[tuple[str, int, int, float], PgPool] = {}
_lock = threading.Lock()


def acquire_pool(settings: StoreSettings) -> PgPool:
    """The process's pool for these settings (opened on first use). Pair with `release_pool`."""
    dsn = resolve_dsn(settings)
    key = (dsn, settings.pool.min, settings.pool.max, settings.timeout_s)
    with _lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = PgPool(dsn, settings)
        pool._users += 1
        return pool


def release_pool(pool: PgPool) -> None:
    """Drop one user of the pool; the last one closes it."""
    with _lock:
        pool._users -= 1
        if pool._users > 0:
            return
        for key, value in list(_pools.items()):
            if value is pool:
                del _pools[key]
    pool.close()
