"""The ledger's locked append, prepared once per row count and run through libpq directly.

psycopg's per-execute Python work (adapting each parameter, its wait loop, a cursor) cost as much
client CPU as the server spends on a one-receipt append. Here the same statement is prepared on
the writer's connection and executed with `PGconn.exec_prepared`: binary parameters packed once,
the interpreter lock released while libpq waits (`benchmarks/store_backends.py --floor`: 0.222 ->
0.145 ms per one-receipt append, client CPU 0.123 -> 0.059 ms). A failure raises the exception
psycopg would (UniqueViolation, an OperationalError for a lost server, ...).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg import pq

from mcpward.evidence.chain import SealedEntry

PREPARED_MAX_ROWS = 64  # larger batches (rare, and cheap per receipt) go through psycopg
_ROW_TYPES = (20, 17, 17, 17, 701)  # bigint seq, bytea body, entry_hash, hmac, float8 recorded_at
_BINARY = 1
_pack_int8 = struct.Struct(">q").pack
_pack_float8 = struct.Struct(">d").pack


@functools.lru_cache(maxsize=PREPARED_MAX_ROWS)
def append_sql(rows: int, lock: int) -> bytes:
    """One INSERT of `rows` rows as its own transaction: the fleet's append lock (held to the
    commit) is taken before the first row is produced (the materialised CTE is the outer side)."""
    values = ", ".join(
        f"(${n + 1}::bigint, ${n + 2}::bytea, ${n + 3}::bytea, ${n + 4}::bytea, ${n + 5}::float8)"
        for n in range(0, rows * 5, 5)
    )
    return (
        f"WITH append_lock AS MATERIALIZED (SELECT pg_advisory_xact_lock({int(lock)})) "
        "INSERT INTO ledger_entries (seq, body, entry_hash, hmac, recorded_at) "
        f"SELECT r.* FROM append_lock, (VALUES {values}) AS r"
    ).encode()


class PreparedAppends:
    """The append statements prepared on one connection (they live and die with it)."""

    def __init__(self, conn: psycopg.Connection[Any], lock: int) -> None:
        self._conn = conn
        self._lock = lock
        self._prepared: set[int] = set()

    @staticmethod
    def fits(rows: int) -> bool:
        return 0 < rows <= PREPARED_MAX_ROWS

    def insert(self, sealed: Sequence[SealedEntry]) -> None:
        """Append `sealed` (at most PREPARED_MAX_ROWS) under the lock, committed on return."""
        rows = len(sealed)
        name = b"mcpward_append_%d" % rows
        params: list[bytes] = []
        for e in sealed:
            params += (_pack_int8(e.seq), e.body, e.entry_hash, e.hmac, _pack_float8(e.recorded_at))
        with self._conn.lock:
            pgconn = self._conn.pgconn
            if rows not in self._prepared:
                sql = append_sql(rows, self._lock)
                self._check(pgconn.prepare(name, sql, _ROW_TYPES * rows))
                self._prepared.add(rows)
            self._check(pgconn.exec_prepared(name, params, (_BINARY,) * len(params)))

    def _check(self, result: pq.abc.PGresult) -> None:
        if result.status == pq.ExecStatus.COMMAND_OK:
            return
        if result.error_field(pq.DiagnosticField.SQLSTATE) is None:  # libpq's own: no server
            message = (result.error_message or b"the connection was lost").decode(errors="replace")
            raise psycopg.OperationalError(message.strip())
        raise pg_errors.error_from_result(result, encoding=self._conn.info.encoding)
