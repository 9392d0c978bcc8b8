"""Copying a ledger into an empty PostgreSQL ledger, row for row: entries (same sequence, hashes
and HMACs), checkpoints and durability spans, and the ledger id the checkpoints are signed for.

One transaction under the append lock: a replica never sees half a copy.
"""

from __future__ import annotations

from itertools import islice

from mcpward.evidence.store import LedgerView
from mcpward.store.postgres.ledger import APPEND_LOCK
from mcpward.store.postgres.pool import PgPool

_BATCH = 1000
_INSERT = (
    "INSERT INTO ledger_entries (seq, body, entry_hash, hmac, recorded_at) "
    "SELECT * FROM unnest(%s::bigint[], %s::bytea[], %s::bytea[], %s::bytea[], %s::float8[])"
)


class LedgerImportError(Exception):
    """The target ledger is not empty, or the source has no ledger id."""


def import_ledger(pool: PgPool, source: LedgerView) -> tuple[int, int]:
    """Copy `source` into the (empty) ledger of `pool`'s database; returns (entries, checkpoints).
    Raises PostgresUnavailable when the database is away."""
    ledger_id = source.ledger_id()
    if ledger_id is None:
        raise LedgerImportError("the source ledger has no ledger id")
    copied = 0
    with pool.connection() as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (APPEND_LOCK,))
        busy = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM ledger_entries) OR "
            "EXISTS (SELECT 1 FROM ledger_checkpoints)"
        ).fetchone()
        if busy and busy[0]:
            raise LedgerImportError("the target ledger is not empty; copy only into a new store")
        conn.execute("UPDATE ledger_meta SET value = %s WHERE key = 'ledger_id'", (ledger_id,))
        entries = source.entries()
        while batch := list(islice(entries, _BATCH)):
            conn.execute(
                _INSERT,
                (
                    [e.seq for e in batch],
                    [e.body for e in batch],
                    [e.entry_hash for e in batch],
                    [e.hmac for e in batch],
                    [e.recorded_at for e in batch],
                ),
            )
            copied += len(batch)
        checkpoints = source.checkpoints()
        for checkpoint in checkpoints:
            conn.execute(
                "INSERT INTO ledger_checkpoints (size, created_at, note) VALUES (%s, %s, %s)",
                (checkpoint.size, checkpoint.created_at, checkpoint.note),
            )
        conn.execute("DELETE FROM ledger_durability")  # the spans of the source replace them
        for span in source.durability():
            conn.execute(
                "INSERT INTO ledger_durability (since_seq, level, noted_at) VALUES (%s, %s, %s)",
                (span.since_seq, span.level, span.noted_at),
            )
    return copied, len(checkpoints)
