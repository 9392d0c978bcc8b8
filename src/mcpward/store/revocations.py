"""Token revocations in the embedded store: one SQLite file in the state dir, re-read when another
process (the CLI) commits to it."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from mcpward.identity.revocations import RevocationUnavailable
from mcpward.store.sqlite import open_database, transaction

DB_NAME = "revocations.sqlite3"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS token_revocations "
    "(subject TEXT PRIMARY KEY, revoked_at REAL NOT NULL)"
)


class SqliteRevocations:
    """`RevocationSet` on the state dir; `revoke` is what `mcpward token revoke` calls."""

    def __init__(self, state_dir: Path) -> None:
        try:
            self._conn = open_database(state_dir / DB_NAME)
            self._conn.execute(_SCHEMA)
        except sqlite3.Error as exc:
            raise RevocationUnavailable(f"{state_dir / DB_NAME}: {exc}") from None
        self._lock = threading.Lock()
        self._version = -1
        self._subjects: frozenset[str] = frozenset()

    def _current(self) -> frozenset[str]:
        with self._lock:
            try:
                version = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
                if version != self._version:
                    rows = self._conn.execute("SELECT subject FROM token_revocations").fetchall()
                    self._subjects = frozenset(r[0] for r in rows)
                    self._version = version
            except sqlite3.Error as exc:
                raise RevocationUnavailable(f"token revocations: {exc}") from None
            return self._subjects

    def revoked(self, client_id: str | None, token_sha256: str) -> bool:
        subjects = self._current()
        return token_sha256 in subjects or (client_id is not None and client_id in subjects)

    def revoke(self, subject: str) -> bool:
        """Record a revocation; False if it was already revoked."""
        with self._lock, transaction(self._conn):
            cursor = self._conn.execute(
                "INSERT OR IGNORE INTO token_revocations (subject, revoked_at) VALUES (?, ?)",
                (subject, time.time()),
            )
        self._version = -1
        return cursor.rowcount > 0

    def subjects(self) -> list[tuple[str, float]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT subject, revoked_at FROM token_revocations ORDER BY revoked_at"
            ).fetchall()
        return [(str(s), float(t)) for s, t in rows]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
