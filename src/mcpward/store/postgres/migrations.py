"""Versioned schema migrations: `migrations/NNNN_name.sql`, applied in order, one transaction each.

`mcpward_schema` records what is applied. A replica whose code expects another version refuses to
start and names the command that fixes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import psycopg

from mcpward.store.postgres.pool import PgPool, PostgresUnavailable

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_LOCK_ID = 0x6D637077  # "mcpw": one migrator at a time across the fleet
_TABLE = """
CREATE TABLE IF NOT EXISTS mcpward_schema (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


class SchemaMismatch(Exception):
    """The database schema is behind or ahead of this mcpward."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def available() -> list[Migration]:
    """Every migration shipped with this code, in version order."""
    folder = resources.files("mcpward.store.postgres").joinpath("migrations")
    found = []
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migrations are not numbered 1..n without gaps: {versions}")
    return found


def code_version() -> int:
    migrations = available()
    return migrations[-1].version if migrations else 0


def applied_version(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    """The newest applied migration (0 on an empty database)."""
    exists = conn.execute("SELECT to_regclass('mcpward_schema') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return 0
    row = conn.execute("SELECT coalesce(max(version), 0) FROM mcpward_schema").fetchone()
    return int(row[0]) if row else 0  # type: ignore[call-overload]


def migrate(pool: PgPool) -> list[Migration]:
    """Apply every pending migration, each in its own transaction; returns what was applied."""
    applied: list[Migration] = []
    with pool.connection() as conn:
        for migration in available():
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))
                conn.execute(_TABLE)
                if applied_version(conn) >= migration.version:
                    continue
                conn.execute(migration.sql.encode())
                conn.execute(
                    "INSERT INTO mcpward_schema (version, name) VALUES (%s, %s)",
                    (migration.version, migration.name),
                )
            applied.append(migration)
    return applied


def check_schema(pool: PgPool, command: str) -> None:
    """Raise `SchemaMismatch` unless the database is exactly at this code's version.
    `command` is how to run mcpward against the same store (e.g. `mcpward store migrate --config F`
    is built from it). While a deferred check (`defer_check`) waits for the server, returns."""
    try:
        with pool.connection() as conn:
            have = applied_version(conn)
    except PostgresUnavailable:
        if pool.schema_pending and pool.down is not None:
            return  # checked on the first connection once the server answers
        raise
    _compare(pool.where, have, command)


def defer_check(pool: PgPool, command: str) -> None:
    """A replica started while the server is away: its schema is checked on the pool's first
    connection once the server answers; until it passes, every use fails with the message."""

    def check(conn: psycopg.Connection[tuple[object, ...]]) -> None:
        try:
            _compare(pool.where, applied_version(conn), command)
        except SchemaMismatch as exc:
            raise PostgresUnavailable(str(exc)) from None

    pool.defer_schema_check(check)


def _compare(where: str, have: int, command: str) -> None:
    want = code_version()
    if have < want:
        raise SchemaMismatch(
            f"{where}: the database schema is at version {have}, this mcpward needs "
            f"{want}; run: mcpward store migrate {command}"
        )
    if have > want:
        raise SchemaMismatch(
            f"{where}: the database schema is at version {have}, newer than this mcpward "
            f"(version {want}); upgrade mcpward on this replica (do not downgrade the schema)"
        )
