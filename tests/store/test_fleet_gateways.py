"""Real gateway replicas on one real PostgreSQL ledger: concurrent load, kill -9 of a replica, and
the database stopped under load (fail closed, then recovery), each checked with `ledger verify`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import orjson
import psycopg
import pytest

from mcpward.store.factory import StoreContext
from mcpward.store.postgres.ledger import open_postgres_snapshot
from tests.store.fleet_replicas import Replica, fleet_config, input_hash, mcpward, own_cluster_dir
from tests.store.pg import DSN_ENV, pg_context
from tests.support.postgres import running_cluster


def call_receipts(context: StoreContext) -> list[dict[str, object]]:
    with open_postgres_snapshot(context.settings) as view:
        entries = [orjson.loads(e.body) for e in view.entries()]
    return [
        e["receipt"]
        for e in entries
        if e["kind"] == "receipt" and e["receipt"]["method"] == "tools/call"
    ]


def unreceipted(replica: Replica, hashes: set[object]) -> list[int]:
    return [i for i in replica.answered if input_hash(replica.name, i) not in hashes]


async def verify_cli(config: Path, dsn: str) -> dict[str, object]:
    code, out = await mcpward(
        "ledger", "verify", "--json", "--config", str(config), env={DSN_ENV: dsn}
    )
    assert code == 0, out
    report: dict[str, object] = json.loads(out)
    return report


async def test_two_replicas_under_load_one_verifiable_ledger(pg_dsn: str, tmp_path: Path) -> None:
    context = pg_context(pg_dsn, tmp_path)
    configs = [fleet_config(tmp_path / name, context.keys_dir) for name in ("a", "b")]
    a, b = [await Replica.start(n, c, pg_dsn) for n, c in zip("ab", configs, strict=True)]
    try:
        await asyncio.gather(a.load(250), b.load(250))
        await asyncio.gather(a.stop(), b.stop())
    finally:
        await asyncio.gather(a.close(), b.close())
    assert a.errors == b.errors == []
    receipts = call_receipts(context)
    assert len(receipts) == len(a.answered) + len(b.answered) >= 500
    hashes = {r["input_hash"] for r in receipts}
    assert unreceipted(a, hashes) == unreceipted(b, hashes) == []
    report = await verify_cli(configs[1], pg_dsn)
    assert report["state"] == "ok" and report["entries"] == report["verified_through"], report


@pytest.mark.parametrize("durability", ["crash_safe", "sync"])
async def test_kill_9_of_one_replica_under_load(
    pg_dsn: str, tmp_path: Path, durability: str
) -> None:
    """crash_safe commits with synchronous_commit off, sync with it on: either way an answer
    leaves only after the server acknowledged its receipt, which a replica's death cannot undo."""
    context = pg_context(pg_dsn, tmp_path)
    configs = [
        fleet_config(tmp_path / name, context.keys_dir, durability=durability) for name in "ab"
    ]
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
    assert {"since_seq": 0, "level": durability} in report["durability"], report


async def test_database_stopped_under_load_fails_closed_then_recovers(tmp_path: Path) -> None:
    with running_cluster(own_cluster_dir()) as cluster:
        dsn = cluster.create_database("fleet")
        context = pg_context(dsn, tmp_path)
        config = fleet_config(tmp_path / "a", context.keys_dir)
        a = await Replica.start("a", config, dsn)
        try:
            await a.load(100)
            before = len(a.answered)
            cluster.stop("fast")
            with pytest.raises(psycopg.OperationalError):
                psycopg.connect(dsn, connect_timeout=2).close()
            await a.load(60)  # every answer now is a refusal: nothing without its receipt
            log = (tmp_path / "a" / "gateway.log").read_text(errors="replace")
            ledger_lines = [line for line in log.splitlines() if "ledger" in line.lower()]
            assert len(a.errors) >= 40, (a.errors[:3], ledger_lines[-10:])
            outage_errors = list(a.errors)
            cluster.start()
            await asyncio.sleep(0.5)
            await a.load(150)  # recovered by itself: results again, no restart
            assert len(a.answered) >= before + 100
            await a.stop()
        finally:
            await a.close()
        codes = {e.get("code") for e in outage_errors if isinstance(e, dict)}
        assert codes == {-32012}, outage_errors[:3]
        hashes = {r["input_hash"] for r in call_receipts(context)}
        assert unreceipted(a, hashes) == []
        report = await verify_cli(config, dsn)
        assert report["state"] == "ok", report
