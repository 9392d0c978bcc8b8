"""One connection pool per DSN and process, opened from the `store:` settings (DSN: a SecretRef).

Every caller shares it; `PostgresUnavailable` says plainly why no connection could be had.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from mcpward.secret_refs import SecretUnavailable, resolve_secret
from mcpward.store.postgres.errors import PostgresUnavailable
from mcpward.store.settings import StoreSettings

log = logging.getLogger("mcpward.store")
Connection = psycopg.Connection[tuple[object, ...]]
CALL_WAIT_S = 1.0  # longest wait for a pooled connection on a gateway's call path
CALL_BOUND_S = 1.5  # longest a gateway's event loop waits for one store call (bounded.py)
PROBE_BACKOFF_S = (0.0, 0.25, 0.5, 1.0, 2.0)  # between probes of a lost server (last repeats)


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

    Once the server is found gone (a failed call, or the change listener losing its connection),
    calls fail at once instead of each waiting out the timeout, and a thread of its own probes the
    server with bounded backoff; when it answers, the pool is replaced (the pool's own
    reconnection backs off for minutes). No caller ever waits on a probe."""

    def __init__(self, dsn: str, settings: StoreSettings) -> None:
        self.dsn = dsn
        self.where = describe_dsn(dsn)
        self.timeout = settings.timeout_s
        self._settings = settings
        self._users = 0
        self._state_lock = threading.Lock()
        self._down: str | None = None  # why the server was found gone; None while it works
        self._wake = threading.Event()  # probe now (the listener reached the server)
        self._prober: threading.Thread | None = None
        self._closed = False
        # a replica started while the server was away checks the schema on its first connection
        self._schema_check: Callable[[Connection], None] | None = None
        self.schema_problem: str | None = None  # that check failed: the schema is behind/ahead
        self.pool = self._new_pool()

    def _new_pool(self) -> ConnectionPool:
        pool = ConnectionPool(
            self.dsn,
            min_size=self._settings.pool.min,
            max_size=self._settings.pool.max,
            kwargs={"autocommit": True, **connect_options(self.timeout)},
            timeout=self.timeout,
            check=ConnectionPool.check_connection,
            name=f"mcpward {self.where}",
            open=False,
        )
        pool.open(wait=False)
        return pool

    @property
    def down(self) -> str | None:
        """Why the server is taken for gone (None while it answers)."""
        return self._down

    def mark_down(self, reason: str) -> PostgresUnavailable:
        """Take the server for gone: calls fail at once until a probe reaches it again."""
        with self._state_lock:
            first = self._down is None
            self._down = reason
            if first and not self._closed:  # its reconnection attempts would only add noise
                _close_soon(self.pool)
            if not self._closed and (self._prober is None or not self._prober.is_alive()):
                self._prober = threading.Thread(
                    target=self._probe_until_up, name="mcpward-pg-probe", daemon=True
                )
                self._prober.start()
        if first:
            log.warning("%s; calls fail closed until it answers (probing)", reason)
        return PostgresUnavailable(reason)

    @property
    def schema_pending(self) -> bool:
        return self._schema_check is not None

    def defer_schema_check(self, check: Callable[[Connection], None]) -> None:
        """Run `check` (raises PostgresUnavailable) on connections until it passes once."""
        self._schema_check = check

    def _check_schema(self, conn: Connection, check: Callable[[Connection], None]) -> None:
        try:
            check(conn)
        except PostgresUnavailable as exc:
            if self.schema_problem != str(exc):
                log.error("%s", exc)
            self.schema_problem = str(exc)
            raise
        self._schema_check = None
        self.schema_problem = None

    def reached(self) -> None:
        """Someone (the change listener) just reached the server: probe now."""
        if self._down is not None:
            self._wake.set()

    def _probe_until_up(self) -> None:
        attempt = 0
        while not self._closed:
            delay = PROBE_BACKOFF_S[min(attempt, len(PROBE_BACKOFF_S) - 1)]
            if self._wake.wait(delay):
                self._wake.clear()
            attempt += 1
            if self._closed:
                return
            try:
                self.connect_direct().close()
            except PostgresUnavailable as exc:
                with self._state_lock:
                    self._down = str(exc)
                continue
            with self._state_lock:
                if self._closed:
                    return
                self.pool = self._new_pool()
                self._down = None
            log.info("%s answers again", self.where)
            return

    @contextmanager
    def connection(self, wait: float | None = None) -> Iterator[Connection]:
        """A checked connection in autocommit mode; use `conn.transaction()` for atomic work.
        `wait`: the longest wait for a pooled connection (default: the configured timeout).
        While the server is taken for gone, fails at once."""
        down = self._down
        if down is not None:
            raise PostgresUnavailable(down)
        timeout = self.timeout if wait is None else min(wait, self.timeout)
        try:
            with self.pool.connection(timeout=timeout) as conn:
                check = self._schema_check
                if check is not None:
                    self._check_schema(conn, check)
                yield conn
        except (PoolTimeout, PoolClosed):  # closed: taken for gone meanwhile
            raise self.mark_down(
                f"{self.where}: no database connection within {timeout:g} s"
            ) from None
        except psycopg.OperationalError as exc:
            raise self.mark_down(f"{self.where}: {first_line(exc)}") from None

    def connect_direct(self) -> Connection:
        """A connection of its own, outside the pool (LISTEN needs one that is never shared)."""
        try:
            conninfo = psycopg.conninfo.make_conninfo(self.dsn, **connect_options(self.timeout))
            return psycopg.connect(conninfo, autocommit=True)
        except psycopg.Error as exc:
            raise PostgresUnavailable(f"{self.where}: {first_line(exc)}") from None

    def close(self) -> None:
        with self._state_lock:
            self._closed = True
        self._wake.set()
        self.pool.close()


def _close_soon(pool: ConnectionPool) -> None:
    threading.Thread(target=pool.close, kwargs={"timeout": 0}, daemon=True).start()


def connect_options(timeout: float) -> dict[str, int]:
    """libpq options that bound a dead server or network: the connect timeout, and TCP
    keepalives plus a user timeout so a socket to a vanished host errors instead of hanging."""
    return {
        "connect_timeout": _connect_timeout(timeout),
        "keepalives": 1,
        "keepalives_idle": 5,
        "keepalives_interval": 2,
        "keepalives_count": 3,
        "tcp_user_timeout": int(min(timeout, 2.0) * 1000),
    }


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
