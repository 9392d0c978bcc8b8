"""The embedded pin store: pins and holds in SQLite, each row carrying an HMAC.

The key lives in `pins.key` beside the database (0600). Rows, per-upstream manifests and the list
of upstreams are all MACed, so an edit, a deleted row or a deleted upstream is detected at load.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from mcpward.contracts.model import HoldRecord, ItemKind, Pin
from mcpward.contracts.store import (
    Key,
    PinStoreError,
    UpstreamPins,
    hold_to_json,
)
from mcpward.store.keys import KeyFileError, load_or_create_secret
from mcpward.store.pin_macs import (
    PinMacs,
    dump_json,
    pin_set_digest,
    verified_hold,
    verify_upstream,
)
from mcpward.store.sqlite import open_database, transaction

DB_NAME = "pins.sqlite3"
KEY_NAME = "pins.key"
SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    mac TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS upstreams (
    upstream TEXT PRIMARY KEY,
    digest TEXT NOT NULL,
    kinds TEXT NOT NULL,
    updated_at REAL NOT NULL,
    mac TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS pins (
    upstream TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    hash TEXT NOT NULL,
    contract TEXT NOT NULL,
    pinned_at REAL NOT NULL,
    source TEXT NOT NULL,
    mac TEXT NOT NULL,
    PRIMARY KEY (upstream, kind, name)
);
CREATE TABLE IF NOT EXISTS holds (
    upstream TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    body TEXT NOT NULL,
    mac TEXT NOT NULL,
    PRIMARY KEY (upstream, kind, name)
);
"""

_PIN_COLUMNS = "kind, name, hash, contract, pinned_at, source, mac"
_PUT_PIN = (
    "INSERT INTO pins (upstream, kind, name, hash, contract, pinned_at, source, mac) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(upstream, kind, name) DO UPDATE SET "
    "hash=excluded.hash, contract=excluded.contract, pinned_at=excluded.pinned_at, "
    "source=excluded.source, mac=excluded.mac"
)
_PUT_HOLD = (
    "INSERT INTO holds (upstream, kind, name, body, mac) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT(upstream, kind, name) DO UPDATE SET body=excluded.body, mac=excluded.mac"
)


class SqlitePinStore:
    """`PinStore` on one SQLite file. Thread-safe; each call is one transaction."""

    def __init__(
        self, state_dir: Path, *, db_name: str = DB_NAME, key: bytes | None = None
    ) -> None:
        """`key`: the MAC key when it is kept elsewhere (config `keys.dir`); default: the state
        directory's `pins.key`, created on first use."""
        self.path = state_dir / db_name
        try:
            state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._key = key if key is not None else load_or_create_secret(state_dir / KEY_NAME)
        except (KeyFileError, OSError) as exc:
            raise PinStoreError(f"pin store key {state_dir / KEY_NAME}: {exc}") from None
        try:
            self._conn = open_database(self.path)
            self._conn.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise PinStoreError(f"pin store {self.path}: {exc}") from None
        self._macs = PinMacs(self._key)
        self._lock = threading.Lock()
        self._data_version = self._read_data_version()
        self._init_meta()

    # -- MACs ----------------------------------------------------------------------------------

    def _mac(self, *parts: Any) -> str:
        return self._macs.mac(*parts)

    def _ok(self, mac: str, *parts: Any) -> bool:
        return self._macs.ok(mac, *parts)

    # -- schema and the upstream list ----------------------------------------------------------

    def _init_meta(self) -> None:
        with self._lock, transaction(self._conn):
            row = self._conn.execute(
                "SELECT value, mac FROM meta WHERE key='schema_version'"
            ).fetchone()
            if row is None:
                self._conn.execute(
                    "INSERT INTO meta (key, value, mac) VALUES ('schema_version', ?, ?)",
                    (SCHEMA_VERSION, self._mac("meta", "schema_version", SCHEMA_VERSION)),
                )
                self._conn.execute(
                    "INSERT OR IGNORE INTO meta (key, value, mac) VALUES ('upstreams', '[]', ?)",
                    (self._mac("meta", "upstreams", "[]"),),
                )
            elif row[0] != SCHEMA_VERSION:
                raise PinStoreError(
                    f"pin store {self.path} has schema version {row[0]}; "
                    f"this mcpward reads version {SCHEMA_VERSION}"
                )

    def _upstream_list(self) -> tuple[list[str], bool]:
        """The MACed list of upstream ids, and whether it verified."""
        row = self._conn.execute("SELECT value, mac FROM meta WHERE key='upstreams'").fetchone()
        if row is None:
            return [], False
        value, mac = row
        if not self._ok(mac, "meta", "upstreams", value):
            return [], False
        try:
            ids = json.loads(value)
        except ValueError:
            return [], False
        return [str(i) for i in ids], True

    def _set_upstream_list(self, ids: list[str]) -> None:
        value = json.dumps(sorted(set(ids)))
        self._conn.execute(
            "INSERT INTO meta (key, value, mac) VALUES ('upstreams', ?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value=excluded.value, mac=excluded.mac",
            (value, self._mac("meta", "upstreams", value)),
        )

    def _refresh_manifest(self, upstream: str, add_kinds: Iterable[ItemKind]) -> None:
        rows = self._conn.execute(
            "SELECT kind, name, hash FROM pins WHERE upstream=?", (upstream,)
        ).fetchall()
        digest = pin_set_digest(rows)
        old = self._conn.execute(
            "SELECT kinds FROM upstreams WHERE upstream=?", (upstream,)
        ).fetchone()
        kinds = set(json.loads(old[0])) if old else set()
        kinds |= {k.value for k in add_kinds} | {r[0] for r in rows}
        kinds_text = json.dumps(sorted(kinds))
        now = time.time()
        mac = self._mac("upstream", upstream, digest, kinds_text, now)
        self._conn.execute(
            "INSERT INTO upstreams (upstream, digest, kinds, updated_at, mac) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT(upstream) DO UPDATE SET digest=excluded.digest, "
            "kinds=excluded.kinds, updated_at=excluded.updated_at, mac=excluded.mac",
            (upstream, digest, kinds_text, now, mac),
        )
        ids, ok = self._upstream_list()
        # an unverifiable list stays unverifiable (evidence) until a human forgets an upstream
        if ok and upstream not in ids:
            self._set_upstream_list([*ids, upstream])

    # -- reading -------------------------------------------------------------------------------

    def load(self, upstream: str) -> UpstreamPins:
        with self._lock:
            self._data_version = self._read_data_version()
            return self._load(upstream)

    def _load(self, upstream: str) -> UpstreamPins:
        manifest = self._conn.execute(
            "SELECT digest, kinds, updated_at, mac FROM upstreams WHERE upstream=?", (upstream,)
        ).fetchone()
        pin_rows = self._conn.execute(
            f"SELECT {_PIN_COLUMNS} FROM pins WHERE upstream=?", (upstream,)
        ).fetchall()
        hold_rows = self._conn.execute(
            "SELECT kind, name, body, mac FROM holds WHERE upstream=?", (upstream,)
        ).fetchall()
        return verify_upstream(
            self._macs, upstream, self._upstream_list(), manifest, pin_rows, hold_rows
        )

    def upstreams(self) -> list[str]:
        with self._lock:
            ids, _ = self._upstream_list()
            rows = self._conn.execute("SELECT upstream FROM upstreams").fetchall()
        return sorted(set(ids) | {r[0] for r in rows})

    def holds(self, upstream: str | None = None) -> list[HoldRecord]:
        with self._lock:
            if upstream is None:
                rows = self._conn.execute(
                    "SELECT upstream, kind, name, body, mac FROM holds"
                ).fetchall()
            else:
                rows = self._conn.execute(
                    "SELECT upstream, kind, name, body, mac FROM holds WHERE upstream=?",
                    (upstream,),
                ).fetchall()
        out = [
            hold
            for up, kind, name, body, mac in rows
            if (hold := verified_hold(self._macs, up, kind, name, body, mac)) is not None
        ]
        out.sort(key=lambda h: (h.upstream, h.kind.value, h.name))
        return out

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
        delete = list(delete)
        delete_holds = list(delete_holds)
        baseline_kinds = list(baseline_kinds)
        try:
            with self._lock, transaction(self._conn):
                for kind, name in delete:
                    self._conn.execute(
                        "DELETE FROM pins WHERE upstream=? AND kind=? AND name=?",
                        (upstream, kind.value, name),
                    )
                for pin in put:
                    # callers pass hashes from contract_hash(); the MAC binds hash and text
                    text = dump_json(pin.contract)
                    kind_value = pin.kind.value
                    self._conn.execute(
                        _PUT_PIN,
                        (
                            upstream,
                            kind_value,
                            pin.name,
                            pin.hash,
                            text,
                            pin.pinned_at,
                            pin.source,
                            self._macs.pin_mac(
                                upstream,
                                kind_value,
                                pin.name,
                                pin.hash,
                                text,
                                pin.pinned_at,
                                pin.source,
                            ),
                        ),
                    )
                for kind, name in delete_holds:
                    self._conn.execute(
                        "DELETE FROM holds WHERE upstream=? AND kind=? AND name=?",
                        (upstream, kind.value, name),
                    )
                for hold in put_holds:
                    body = dump_json(hold_to_json(hold))
                    self._conn.execute(
                        _PUT_HOLD,
                        (
                            upstream,
                            hold.kind.value,
                            hold.name,
                            body,
                            self._mac("hold", upstream, hold.kind.value, hold.name, body),
                        ),
                    )
                # hold-only writes leave the manifest alone, so they never mask tampering
                if put or delete or baseline_kinds:
                    self._refresh_manifest(upstream, baseline_kinds)
        except sqlite3.Error as exc:
            raise PinStoreError(f"pin store {self.path}: write failed: {exc}") from None

    def forget(self, upstream: str) -> int:
        try:
            with self._lock, transaction(self._conn):
                count = self._conn.execute(
                    "DELETE FROM pins WHERE upstream=?", (upstream,)
                ).rowcount
                self._conn.execute("DELETE FROM holds WHERE upstream=?", (upstream,))
                self._conn.execute("DELETE FROM upstreams WHERE upstream=?", (upstream,))
                ids, ok = self._upstream_list()
                if not ok:
                    ids = [
                        r[0]
                        for r in self._conn.execute("SELECT upstream FROM upstreams").fetchall()
                    ]
                self._set_upstream_list([i for i in ids if i != upstream])
        except sqlite3.Error as exc:
            raise PinStoreError(f"pin store {self.path}: write failed: {exc}") from None
        return int(count)

    # -- change detection ----------------------------------------------------------------------

    def _read_data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def changed(self) -> bool:
        """`PRAGMA data_version` moves only when another connection commits. Our own writes
        leave the remembered version alone, so they never swallow another process's change."""
        with self._lock:
            return self._read_data_version() != self._data_version

    def location(self) -> str:
        return str(self.path)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
