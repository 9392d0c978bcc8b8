"""What an attacker with write access to the state dir (or the database) does to a ledger.

Each step edits the real SQLite file or the real PostgreSQL tables, turning off the append-only
triggers first as an attacker would. A PostgreSQL ledger is named by a stand-in path registered
in PG_LEDGERS, so one test body runs against both backends.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import orjson
import psycopg

from mcpward.evidence.chain import ZERO_HASH, PendingEntry, chain_hash
from mcpward.evidence.keyring import entry_hmac
from mcpward.evidence.ledger import Ledger, verify_ledger
from mcpward.evidence.receipt import build_receipt
from mcpward.evidence.settings import EvidencePaths
from mcpward.evidence.store import LedgerView
from mcpward.evidence.verify import VerifyReport
from mcpward.protocol.canonical import canonical_bytes
from mcpward.store.factory import StoreContext
from mcpward.store.postgres.ledger import open_postgres_ledger, open_postgres_snapshot

from .records import decision

PG_LEDGERS: dict[Path, StoreContext] = {}


def pg_evidence(context: StoreContext, tmp_path: Path) -> EvidencePaths:
    """Evidence paths (keys in the context's keys dir) whose ledger is the context's database."""
    paths = EvidencePaths.resolve(context.state_dir, tmp_path / "postgres.ledger", context.keys_dir)
    PG_LEDGERS[paths.ledger] = context
    return paths


def open_ledger(paths: EvidencePaths) -> Ledger:
    context = PG_LEDGERS.get(paths.ledger)
    if context is None:
        return Ledger.open(paths)
    store = open_postgres_ledger(context.settings, synchronous_commit=True, migrate_hint="")
    return Ledger.open(paths, store=store)


def snapshot(paths: EvidencePaths) -> AbstractContextManager[LedgerView] | None:
    """The PostgreSQL snapshot `verify_ledger` must read (None: the SQLite file of `paths`)."""
    context = PG_LEDGERS.get(paths.ledger)
    return None if context is None else open_postgres_snapshot(context.settings)


def verify(paths: EvidencePaths, **options: Any) -> VerifyReport:
    """`verify_ledger` on whichever backend holds the ledger of `paths`."""
    return verify_ledger(paths, view_of=snapshot(paths), **options)


def make_ledger(
    state_dir: Path,
    sizes: tuple[int, ...] = (10, 20),
    start: float | None = None,
    paths: EvidencePaths | None = None,
) -> EvidencePaths:
    """A ledger with a signed checkpoint after each batch (sizes are cumulative).

    Entry i is recorded at `start + i` seconds (default: now, 20 s ago for entry 0).
    """
    origin = time.time() - 20 if start is None else start
    paths = EvidencePaths.resolve(state_dir) if paths is None else paths
    ledger = open_ledger(paths)
    done = 0
    for size in sizes:
        ledger.append(
            [
                PendingEntry.of_receipt(build_receipt(decision(i)), origin + i)
                for i in range(done, size)
            ]
        )
        ledger.checkpoint()
        done = size
    ledger.close()
    return paths


class PgAttacker:
    """A PostgreSQL connection that takes the SQLite steps' `?` placeholders."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def execute(self, sql: str, args: tuple[Any, ...] | list[Any] = ()) -> psycopg.Cursor[Any]:
        return self.conn.execute(sql.replace("?", "%s"), args)


@contextmanager
def attacker(db: Path) -> Iterator[Any]:
    context = PG_LEDGERS.get(db)
    if context is not None:
        assert isinstance(context.settings.dsn, str)
        with psycopg.connect(context.settings.dsn) as pg:  # one transaction, committed at exit
            for table in ("ledger_entries", "ledger_checkpoints"):
                pg.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
            yield PgAttacker(pg)
        return
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("DROP TRIGGER IF EXISTS ledger_entries_no_update")
    conn.execute("DROP TRIGGER IF EXISTS ledger_entries_no_delete")
    conn.execute("BEGIN")
    try:
        yield conn
        conn.execute("COMMIT")
    finally:
        conn.close()


def rows(conn: Any) -> list[tuple[int, bytes, bytes, bytes, float]]:
    return [
        (int(s), bytes(b), bytes(h), bytes(m), float(t))
        for s, b, h, m, t in conn.execute(
            "SELECT seq, body, entry_hash, hmac, recorded_at FROM ledger_entries ORDER BY seq"
        )
    ]


def edit_body(body: bytes, **changes: object) -> bytes:
    entry = orjson.loads(body)
    receipt = entry["receipt"]
    receipt.update(changes)
    entry["receipt_hash"] = hashlib.sha256(canonical_bytes(receipt)).hexdigest()
    return canonical_bytes(entry)


def set_seq(body: bytes, seq: int) -> bytes:
    entry = orjson.loads(body)
    entry["seq"] = seq
    return canonical_bytes(entry)


def rewrite(conn: Any, new_rows: list[tuple[int, bytes]], key: bytes | None = None) -> None:
    """Replace the whole table by (seq, body) rows with a recomputed chain.

    With `key` (a stolen HMAC key) the HMACs are recomputed too; otherwise old HMACs are kept where
    a row existed at that seq (a forger without the key cannot do better).
    """
    old = {seq: mac for seq, _, _, mac, _ in rows(conn)}
    conn.execute("DELETE FROM ledger_entries")
    prev = ZERO_HASH
    for seq, body in new_rows:
        digest = chain_hash(prev, body)
        mac = entry_hmac(key, digest) if key is not None else old.get(seq, bytes(32))
        conn.execute(
            "INSERT INTO ledger_entries (seq, body, entry_hash, hmac, recorded_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (seq, body, digest, mac, time.time()),
        )
        prev = digest
