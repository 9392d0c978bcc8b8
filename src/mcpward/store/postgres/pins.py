"""The pin store on PostgreSQL: the same HMAC'd rows as the SQLite store, shared by every replica.

Writes are serialised fleet-wide by an advisory lock, append to `pin_history` and NOTIFY the other
replicas; loads read one REPEATABLE READ snapshot so a concurrent write never looks like tampering.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg

from mcpward.contracts.model import HoldRecord, ItemKind, Pin
from mcpward.contracts.store import Key, PinStoreError, UpstreamPins, hold_to_json
from mcpward.store.pin_macs import (
    PinMacs,
    dump_json,
    pin_set_digest,
    verified_hold,
    verify_upstream,
)
from mcpward.store.postgres.bounded import BoundedCalls
from mcpward.store.postgres.notify import (
    PINS_CHANNEL,
    ChangeWatcher,
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

Conn = psycopg.Connection[tuple[Any, ...]]
T = TypeVar("T")
_WRITE_LOCK = 0x6D707077  # one pin writer at a time across the fleet
_PUT_PIN = (
    "INSERT INTO pins (upstream, kind, name, hash, contract, pinned_at, source, mac) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (upstream, kind, name) DO UPDATE SET "
    "hash=excluded.hash, contract=excluded.contract, pinned_at=excluded.pinned_at, "
    "source=excluded.source, mac=excluded.mac"
)
_PUT_HOLD = (
    "INSERT INTO pin_holds (upstream, kind, name, body, mac) VALUES (%s, %s, %s, %s, %s) "
    "ON CONFLICT (upstream, kind, name) DO UPDATE SET body=excluded.body, mac=excluded.mac"
)
_HISTORY = (
    "INSERT INTO pin_history (at, upstream, kind, name, action, hash, source, mac) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
)


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One change to a pin or hold, as recorded (verified: False when its MAC fails)."""

    at: float
    upstream: str
    kind: str
    name: str
    action: str  # pin | unpin | hold | release | forget
    hash: str | None
    source: str
    verified: bool


class PostgresPinStore:
    """`PinStore` on a shared database. Thread-safe (each call takes its own pooled connection)."""

    def __init__(self, pool: PgPool, key: bytes, *, listen: bool = True) -> None:
        """Takes over one reference to `pool` (released by `close`). `listen`: follow other
        replicas' changes from the start (a gateway); one-shot CLI commands pass False."""
        self._pool = pool
        self._macs = PinMacs(key)
        self._watcher: ChangeWatcher | None = None
        self._seen = -1
        # a gateway calls on its event loop: a short wait for a pooled connection, and the whole
        # call bounded (a worker thread does it); one-shot CLI commands call directly
        self._wait = CALL_WAIT_S if listen else None
        self._bounded = BoundedCalls(pool, CALL_BOUND_S) if listen else None
        self._closed = False
        self._listed = False  # the upstream list exists (made on the first connection)
        if listen:
            if pool.down is None:
                self.wait_listening(pool.timeout)
            else:  # a replica started while the server is away: listen once it answers
                self._listen()
        if pool.down is None:
            self._run(self._open)

    def _open(self) -> None:
        with self._connection("open"):
            pass

    def _run(self, fn: Callable[[], T]) -> T:
        """`fn` now (CLI), or on the bounded worker (a gateway's event loop)."""
        if self._bounded is None:
            return fn()
        try:
            return self._bounded.call(fn)
        except PostgresUnavailable as exc:
            self._seen = -1  # whatever a change asked this call to re-read: ask again
            raise PinStoreError(f"pin store: {exc}") from None

    # -- plumbing ------------------------------------------------------------------------------

    @contextmanager
    def _connection(self, action: str) -> Iterator[Conn]:
        try:
            with self._pool.connection(self._wait) as conn:
                if not self._listed:
                    self._init_list(conn)
                    self._listed = True
                yield conn
        except PostgresUnavailable as exc:
            raise PinStoreError(f"pin store {action}: {exc}") from None
        except psycopg.Error as exc:
            detail = first_line(exc)
            raise PinStoreError(
                f"pin store {self._pool.where}: {action} failed: {detail}"
            ) from None

    @contextmanager
    def _snapshot(self) -> Iterator[Conn]:
        if self._watcher is not None and not self._watcher.connected:
            # the gate loads on the event loop: while the listener (reconnecting every 0.5 s on
            # its own thread) is away, fail at once instead of waiting on the pool
            raise PinStoreError(f"pin store {self._pool.where}: the database is not reachable")
        try:
            with self._connection("read") as conn, conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield conn
        except PinStoreError:
            self._seen = -1  # the re-read a change asked for did not happen: ask again
            raise

    @contextmanager
    def _writing(self, upstream: str) -> Iterator[Conn]:
        with self._connection("write") as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITE_LOCK,))
            yield conn
            notify(conn, PINS_CHANNEL, upstream[:200])

    def _history(
        self,
        conn: Conn,
        upstream: str,
        kind: str,
        name: str,
        action: str,
        hash_: str | None,
        source: str,
    ) -> None:
        at = time.time()
        mac = self._macs.mac("history", at, upstream, kind, name, action, hash_, source)
        conn.execute(_HISTORY, (at, upstream, kind, name, action, hash_, source, mac))

    # -- the upstream list ---------------------------------------------------------------------

    def _init_list(self, conn: Conn) -> None:
        """A fresh store gets its (empty, MACed) upstream list before anything reads it."""
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITE_LOCK,))
            empty = conn.execute(
                "SELECT NOT EXISTS (SELECT 1 FROM pin_meta) AND NOT EXISTS "
                "(SELECT 1 FROM pin_upstreams)"
            ).fetchone()
            if empty and empty[0]:
                self._set_upstream_list(conn, [])

    def _upstream_list(self, conn: Conn) -> tuple[list[str], bool]:
        row = conn.execute("SELECT value, mac FROM pin_meta WHERE key='upstreams'").fetchone()
        if row is None:
            return [], False
        value, mac = row
        if not self._macs.ok(mac, "meta", "upstreams", value):
            return [], False
        try:
            ids = json.loads(value)
        except ValueError:
            return [], False
        return [str(i) for i in ids], True

    def _set_upstream_list(self, conn: Conn, ids: list[str]) -> None:
        value = json.dumps(sorted(set(ids)))
        conn.execute(
            "INSERT INTO pin_meta (key, value, mac) VALUES ('upstreams', %s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value=excluded.value, mac=excluded.mac",
            (value, self._macs.mac("meta", "upstreams", value)),
        )

    def _refresh_manifest(self, conn: Conn, upstream: str, add_kinds: Iterable[ItemKind]) -> None:
        rows = conn.execute(
            "SELECT kind, name, hash FROM pins WHERE upstream=%s", (upstream,)
        ).fetchall()
        old = conn.execute(
            "SELECT kinds FROM pin_upstreams WHERE upstream=%s", (upstream,)
        ).fetchone()
        kinds = set(json.loads(old[0])) if old else set()
        kinds |= {k.value for k in add_kinds} | {r[0] for r in rows}
        kinds_text = json.dumps(sorted(kinds))
        digest = pin_set_digest([(r[0], r[1], r[2]) for r in rows])
        now = time.time()
        conn.execute(
            "INSERT INTO pin_upstreams (upstream, digest, kinds, updated_at, mac) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (upstream) DO UPDATE SET "
            "digest=excluded.digest, kinds=excluded.kinds, updated_at=excluded.updated_at, "
            "mac=excluded.mac",
            (
                upstream,
                digest,
                kinds_text,
                now,
                self._macs.mac("upstream", upstream, digest, kinds_text, now),
            ),
        )
        ids, ok = self._upstream_list(conn)
        if ok and upstream not in ids:  # an unverifiable list stays evidence
            self._set_upstream_list(conn, [*ids, upstream])

    # -- reading -------------------------------------------------------------------------------

    def load(self, upstream: str) -> UpstreamPins:
        return self._run(lambda: self._load(upstream))

    def _load(self, upstream: str) -> UpstreamPins:
        with self._snapshot() as conn:
            listed = self._upstream_list(conn)
            manifest = conn.execute(
                "SELECT digest, kinds, updated_at, mac FROM pin_upstreams WHERE upstream=%s",
                (upstream,),
            ).fetchone()
            pin_rows = conn.execute(
                "SELECT kind, name, hash, contract, pinned_at, source, mac FROM pins "
                "WHERE upstream=%s",
                (upstream,),
            ).fetchall()
            hold_rows = conn.execute(
                "SELECT kind, name, body, mac FROM pin_holds WHERE upstream=%s", (upstream,)
            ).fetchall()
        return verify_upstream(self._macs, upstream, listed, manifest, pin_rows, hold_rows)

    def upstreams(self) -> list[str]:
        return self._run(lambda: self._upstreams())

    def _upstreams(self) -> list[str]:
        with self._snapshot() as conn:
            ids, _ = self._upstream_list(conn)
            rows = conn.execute("SELECT upstream FROM pin_upstreams").fetchall()
        return sorted(set(ids) | {r[0] for r in rows})

    def holds(self, upstream: str | None = None) -> list[HoldRecord]:
        return self._run(lambda: self._holds(upstream))

    def _holds(self, upstream: str | None = None) -> list[HoldRecord]:
        with self._connection("read") as conn:
            if upstream is None:
                rows = conn.execute(
                    "SELECT upstream, kind, name, body, mac FROM pin_holds"
                ).fetchall()
            else:
                rows = conn.execute(
                    "SELECT upstream, kind, name, body, mac FROM pin_holds WHERE upstream=%s",
                    (upstream,),
                ).fetchall()
        out = [
            hold
            for up, kind, name, body, mac in rows
            if (hold := verified_hold(self._macs, up, kind, name, body, mac)) is not None
        ]
        out.sort(key=lambda h: (h.upstream, h.kind.value, h.name))
        return out

    def history(self, upstream: str | None = None, limit: int = 1000) -> list[HistoryEntry]:
        return self._run(lambda: self._history_rows(upstream, limit))

    def _history_rows(self, upstream: str | None, limit: int) -> list[HistoryEntry]:
        """The newest changes first (pins and holds), each with whether its MAC verified."""
        where, args = ("WHERE upstream=%s", (upstream,)) if upstream is not None else ("", ())
        with self._connection("read") as conn:
            rows = conn.execute(
                "SELECT at, upstream, kind, name, action, hash, source, mac FROM pin_history "
                f"{where} ORDER BY id DESC LIMIT %s",  # where: a constant
                (*args, limit),
            ).fetchall()
        return [
            HistoryEntry(
                at,
                up,
                kind,
                name,
                action,
                hash_,
                source,
                self._macs.ok(mac, "history", at, up, kind, name, action, hash_, source),
            )
            for at, up, kind, name, action, hash_, source, mac in rows
        ]

    # -- writing -------------------------------------------------------------------------------

    def write(
        self,
        upstream: str,
        *,
        put: Sequence[Pin] = (),
        delete: Iterable[Key] = (),
        put_holds: Sequence[HoldRecord] = (),
        delete_holds: Iterable[Key] = (),
        baseline_kinds: Iterable[ItemKind] = (),
    ) -> None:
        args = (put, list(delete), put_holds, list(delete_holds), list(baseline_kinds))
        self._run(lambda: self._write(upstream, *args))

    def _write(
        self,
        upstream: str,
        put: Sequence[Pin],
        delete: list[Key],
        put_holds: Sequence[HoldRecord],
        delete_holds: list[Key],
        baseline_kinds: list[ItemKind],
    ) -> None:
        delete = list(delete)
        delete_holds = list(delete_holds)
        baseline_kinds = list(baseline_kinds)
        with self._writing(upstream) as conn:
            for kind, name in delete:
                gone = conn.execute(
                    "DELETE FROM pins WHERE upstream=%s AND kind=%s AND name=%s",
                    (upstream, kind.value, name),
                ).rowcount
                if gone:
                    self._history(conn, upstream, kind.value, name, "unpin", None, "")
            for pin in put:
                text = dump_json(pin.contract)
                kind_value = pin.kind.value
                mac = self._macs.pin_mac(
                    upstream, kind_value, pin.name, pin.hash, text, pin.pinned_at, pin.source
                )
                conn.execute(
                    _PUT_PIN,
                    (
                        upstream,
                        kind_value,
                        pin.name,
                        pin.hash,
                        text,
                        pin.pinned_at,
                        pin.source,
                        mac,
                    ),
                )
                self._history(conn, upstream, kind_value, pin.name, "pin", pin.hash, pin.source)
            for kind, name in delete_holds:
                gone = conn.execute(
                    "DELETE FROM pin_holds WHERE upstream=%s AND kind=%s AND name=%s",
                    (upstream, kind.value, name),
                ).rowcount
                if gone:
                    self._history(conn, upstream, kind.value, name, "release", None, "")
            held = self._held_hashes(conn, upstream) if put_holds else {}
            for hold in put_holds:
                body = dump_json(hold_to_json(hold))
                mac = self._macs.mac("hold", upstream, hold.kind.value, hold.name, body)
                conn.execute(_PUT_HOLD, (upstream, hold.kind.value, hold.name, body, mac))
                key = (hold.kind.value, hold.name)
                if key not in held or held[key] != hold.new_hash:  # not every sighting
                    self._history(conn, upstream, *key, "hold", hold.new_hash, hold.reason)
            # hold-only writes leave the manifest alone, so they never mask tampering
            if put or delete or baseline_kinds:
                self._refresh_manifest(conn, upstream, baseline_kinds)

    @staticmethod
    def _held_hashes(conn: Conn, upstream: str) -> dict[tuple[str, str], str | None]:
        """(kind, name) -> held new_hash of the upstream's current holds (history is written
        when a hold appears or moves, not each time a held call refreshes it)."""
        out: dict[tuple[str, str], str | None] = {}
        rows = conn.execute(
            "SELECT kind, name, body FROM pin_holds WHERE upstream=%s", (upstream,)
        ).fetchall()
        for kind, name, body in rows:
            try:
                out[(kind, name)] = json.loads(body).get("new_hash")
            except (ValueError, AttributeError):
                out[(kind, name)] = None
        return out

    def forget(self, upstream: str) -> int:
        return self._run(lambda: self._forget(upstream))

    def _forget(self, upstream: str) -> int:
        with self._writing(upstream) as conn:
            count = conn.execute("DELETE FROM pins WHERE upstream=%s", (upstream,)).rowcount
            conn.execute("DELETE FROM pin_holds WHERE upstream=%s", (upstream,))
            conn.execute("DELETE FROM pin_upstreams WHERE upstream=%s", (upstream,))
            ids, ok = self._upstream_list(conn)
            if not ok:
                ids = [r[0] for r in conn.execute("SELECT upstream FROM pin_upstreams").fetchall()]
            self._set_upstream_list(conn, [i for i in ids if i != upstream])
            self._history(conn, upstream, "", "", "forget", None, str(count))
        return int(count)

    # -- change detection ----------------------------------------------------------------------

    def changed(self) -> bool:
        """True after any replica (or the CLI) committed a pin change, and after the listener
        reconnected (notifications sent meanwhile are lost, so everything is re-read). While the
        listener is down every call says True: the next load then fails closed or re-reads."""
        watcher = self._listen()
        generation = watcher.generation(PINS_CHANNEL)
        if generation != self._seen or not watcher.connected:
            self._seen = generation
            return True
        return False

    def _listen(self) -> ChangeWatcher:
        if self._watcher is None:  # one-shot CLI commands never need a listener
            self._watcher = acquire_watcher(self._pool)
        return self._watcher

    def wait_listening(self, timeout: float = 5.0) -> bool:
        """Start the change listener if needed and wait until it is connected."""
        return self._listen().wait_connected(timeout)

    def location(self) -> str:
        return self._pool.where

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._watcher is not None:
            release_watcher(self._pool)
        if self._bounded is not None:
            self._bounded.close()
        release_pool(self._pool)
