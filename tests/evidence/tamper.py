"""What an attacker with write access to the state dir does to a ledger, as reusable steps.

Each step edits the real SQLite file, dropping the append-only triggers first as an attacker would.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from mcpward.evidence.chain import ZERO_HASH, PendingEntry, chain_hash
from mcpward.evidence.keyring import entry_hmac
from mcpward.evidence.ledger import Ledger
from mcpward.evidence.receipt import build_receipt
from mcpward.evidence.settings import EvidencePaths
from mcpward.protocol.canonical import canonical_bytes

from .records import decision


def make_ledger(
    state_dir: Path, sizes: tuple[int, ...] = (10, 20), start: float | None = None
) -> EvidencePaths:
    """A ledger with a signed checkpoint after each batch (sizes are cumulative).

    Entry i is recorded at `start + i` seconds (default: now, 20 s ago for entry 0).
    """
    origin = time.time() - 20 if start is None else start
    paths = EvidencePaths.resolve(state_dir)
    ledger = Ledger.open(paths)
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


@contextmanager
def attacker(db: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("DROP TRIGGER IF EXISTS ledger_entries_no_update")
    conn.execute("DROP TRIGGER IF EXISTS ledger_entries_no_delete")
    conn.execute("BEGIN")
    try:
        yield conn
        conn.execute("COMMIT")
    finally:
        conn.close()


def rows(conn: sqlite3.Connection) -> list[tuple[int, bytes, bytes, bytes, float]]:
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


def rewrite(
    conn: sqlite3.Connection, new_rows: list[tuple[int, bytes]], key: bytes | None = None
) -> None:
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
