"""A stdio replica killed with -9 under load with `sync` durability (synchronous_commit on): no
answered call without its receipt. The HTTP fleet tests (test_fleet_http.py) cover load, kill -9
with the default durability and the database stopped under load."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.store.fleet_replicas import (
    Replica,
    call_receipts,
    fleet_config,
    input_hash,
    verify_cli,
)
from tests.store.pg import pg_context


def unreceipted(replica: Replica, hashes: set[object]) -> list[int]:
    return [i for i in replica.answered if input_hash(replica.name, i) not in hashes]


async def test_kill_9_of_one_replica_under_load_with_sync_durability(
    pg_dsn: str, tmp_path: Path
) -> None:
    """An answer leaves only after the server acknowledged (and flushed) its receipt, which a
    replica's death cannot undo."""
    context = pg_context(pg_dsn, tmp_path)
    configs = [fleet_config(tmp_path / name, context.keys_dir, durability="sync") for name in "ab"]
    a, b = [await Replica.start(n, c, pg_dsn) for n, c in zip("ab", configs, strict=True)]
    try:
        await asyncio.gather(a.load(200), b.load(200))
        await a.kill9()  # mid-flight: 16 calls in the pipe
        await b.load(100)
        await b.stop()
    finally:
        await asyncio.gather(a.close(), b.close())
    hashes = {r["input_hash"] for r in call_receipts(context)}
    assert len(a.answered) >= 200 and unreceipted(a, hashes) == []
    assert unreceipted(b, hashes) == []
    report = await verify_cli(configs[1], pg_dsn)
    assert report["state"] == "ok", report
    assert {"since_seq": 0, "level": "sync"} in report["durability"], report
