"""One connection pool per DSN and process, opened from the `store:` settings (DSN: a SecretRef).

Every caller shares it; `PostgresUnavailable` says plainly why no connection could be had.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from mcpward.secret_refs import SecretUnavailable, resolve_secret
from mcpward.store.settings import StoreSettings


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
    """A shared `psycopg_pool.ConnectionPool`, reference-counted per process."""

    def __init__(self, dsn: str, settings: StoreSettings) -> None:
        self.dsn = dsn
        self.where = describe_dsn(dsn)
        self.timeout = settings.timeout_s
        self._users = 0
        self.pool = ConnectionPool(
            dsn,
            min_size=settings.pool.min,
            max_size=settings.pool.max,
            kwargs={"autocommit": True, "connect_timeout": max(1, round(settings.timeout_s))},
            timeout=settings.timeout_s,
            check=ConnectionPool.check_connection,
            name=f"mcpward {self.where}",
            open=False,
        )
        self.pool.open(wait=False)

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
        """A checked connection in autocommit mode; use `conn.transaction()` for atomic work."""
        try:
            with self.pool.connection(timeout=self.timeout) as conn:
                yield conn
        except PoolTimeout:
            raise PostgresUnavailable(
                f"{self.where}: no database connection within {self.timeout:g} s"
            ) from None
        except psycopg.OperationalError as exc:
            raise PostgresUnavailable(f"{self.where}: {first_line(exc)}") from None

    def connect_direct(self) -> psycopg.Connection[tuple[object, ...]]:
        """A connection of its own, outside the pool (LISTEN needs one that is never shared)."""
        try:
            return psycopg.connect(
                self.dsn, autocommit=True, connect_timeout=max(1, round(self.timeout))
            )
        except psycopg.Error as exc:
            raise PostgresUnavailable(f"{self.where}: {first_line(exc)}") from None


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
    pool.pool.close()
