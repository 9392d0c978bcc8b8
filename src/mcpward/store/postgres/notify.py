"""LISTEN/NOTIFY: one thread per pool counts the changes other replicas (and the CLI) commit.

Each channel has a generation number that moves on every notification and on every (re)connect,
because notifications sent while the listener was away are lost: a reader that sees the number
move re-reads everything.
"""

from __future__ import annotations

import contextlib
import logging
import threading

import psycopg

from mcpward.store.postgres.pool import PgPool, PostgresUnavailable, first_line

log = logging.getLogger("mcpward.store")

PINS_CHANNEL = "mcpward_pins"
REVOCATIONS_CHANNEL = "mcpward_revocations"
CLIENTS_CHANNEL = "mcpward_clients"
CHANNELS = (PINS_CHANNEL, REVOCATIONS_CHANNEL, CLIENTS_CHANNEL)
_RETRY_S = 0.5
_POLL_S = 0.25


class ChangeWatcher:
    """Listens on `CHANNELS` over a connection of its own, reconnecting forever."""

    def __init__(self, pool: PgPool) -> None:
        self._pool = pool
        self._generations = dict.fromkeys(CHANNELS, 0)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._connected = threading.Event()
        self._conn: psycopg.Connection[tuple[object, ...]] | None = None
        self._thread = threading.Thread(target=self._run, name="mcpward-pg-listen", daemon=True)
        self._thread.start()

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    def wait_connected(self, timeout: float) -> bool:
        return self._connected.wait(timeout)

    def generation(self, channel: str) -> int:
        with self._lock:
            return self._generations[channel]

    def _bump(self, channels: tuple[str, ...] | list[str]) -> None:
        with self._lock:
            for channel in channels:
                if channel in self._generations:
                    self._generations[channel] += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn = self._pool.connect_direct()
            except PostgresUnavailable as exc:
                self._pool.mark_down(str(exc))  # logged once per outage by the pool
                self._stop.wait(_RETRY_S)
                continue
            self._pool.reached()
            self._conn = conn
            try:
                for channel in CHANNELS:
                    conn.execute(f"LISTEN {channel}")  # constant identifiers, not input
                self._connected.set()
                self._bump(CHANNELS)  # whatever happened while away: re-read everything
                while not self._stop.is_set():
                    # returns at the first notification (the next turn takes any others), so
                    # a change reaches this replica in one round trip, not at the poll's end
                    changed = [n.channel for n in conn.notifies(timeout=_POLL_S, stop_after=1)]
                    if changed:
                        self._bump(changed)
                    else:
                        conn.execute("SELECT 1")  # notices a dead server between notifications
            except psycopg.Error as exc:
                if not self._stop.is_set():
                    log.warning("change listener lost its connection (%s); reconnecting", exc)
                    # the pool's connections are as dead as this one: calls fail at once
                    self._pool.mark_down(f"{self._pool.where}: {first_line(exc)}")
            finally:
                self._connected.clear()
                self._bump(CHANNELS)
                self._conn = None
                with contextlib.suppress(psycopg.Error):
                    conn.close()
            self._stop.wait(_RETRY_S)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


_watchers: dict[int, tuple[ChangeWatcher, int]] = {}
_watchers_lock = threading.Lock()


def acquire_watcher(pool: PgPool) -> ChangeWatcher:
    """The pool's one watcher (started on first use). Pair with `release_watcher`."""
    with _watchers_lock:
        entry = _watchers.get(id(pool))
        watcher = entry[0] if entry else ChangeWatcher(pool)
        _watchers[id(pool)] = (watcher, (entry[1] if entry else 0) + 1)
        return watcher


def release_watcher(pool: PgPool) -> None:
    with _watchers_lock:
        entry = _watchers.get(id(pool))
        if entry is None:
            return
        watcher, users = entry
        if users > 1:
            _watchers[id(pool)] = (watcher, users - 1)
            return
        del _watchers[id(pool)]
    watcher.close()


def notify(conn: psycopg.Connection[tuple[object, ...]], channel: str, payload: str = "") -> None:
    """Queue a notification; it is delivered when the surrounding transaction commits."""
    conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))
