"""Fleet mode with HTTP fronts: `mcpward run` replicas on two ports, one PostgreSQL database,
raw Streamable HTTP MCP sessions on each (16 calls in flight per replica), every answer counted.

- concurrent load on both, then `ledger verify --config F`: ok, receipts == answers received;
- kill -9 of one replica under load: verify ok, no answered call without its receipt;
- a replica started while its database is away (serves /healthz, not ready, fails closed), then
  the database stopped under load (fails closed, /healthz keeps answering, not ready), each time
  recovering by itself with no restart.

(A drift seen through replica A held on B, released on both by one `pins accept`:
test_fleet_gateways.py.)
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path

import httpx
import pytest

from mcpward.store.factory import StoreContext
from tests.store.fleet import Replica, cli, replica_config, running, write_control
from tests.store.fleet_http import HttpLoad, health_latencies, input_hash
from tests.store.fleet_replicas import call_receipts, own_cluster_dir, verify_cli
from tests.store.pg import pg_context
from tests.support.postgres import running_cluster

# the documented refusals while the database is away: the receipt cannot be committed (-32012),
# or (HTTP 503, Retry-After) the token cannot be checked against the fleet's revocations
REVOCATIONS_DOWN = "token revocations cannot be checked right now"


def documented(refusal: str) -> bool:
    return refusal == "-32012" or (refusal.startswith("503 ") and REVOCATIONS_DOWN in refusal)


def unreceipted(load: HttpLoad, context: StoreContext) -> list[str]:
    hashes = {r["input_hash"] for r in call_receipts(context)}
    return [memo for memo in load.answered if input_hash(memo) not in hashes]


def fleet(tmp_path: Path, dsn: str, names: str) -> tuple[StoreContext, list[Replica]]:
    context = pg_context(dsn, tmp_path, migrated=False)
    control = tmp_path / "control.json"
    write_control(control, 0)
    return context, [replica_config(tmp_path, n, context.keys_dir, control) for n in names]


async def readyz(replica: Replica) -> tuple[int, str]:
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.get(replica.url.replace("/mcp", "/readyz"))
    return response.status_code, response.text


async def until_ready(replica: Replica, expected: str, timeout: float = 20) -> float:
    """Seconds until /readyz answers `expected` (`ready`, `not ready: store`, ...)."""
    started = time.monotonic()
    while (answer := await readyz(replica))[1] != expected:
        assert time.monotonic() - started < timeout, f"{replica.name}: /readyz {answer}"
        await asyncio.sleep(0.1)
    return time.monotonic() - started


async def test_two_http_replicas_under_load_then_kill_9(pg_dsn: str, tmp_path: Path) -> None:
    context, (a, b) = fleet(tmp_path, pg_dsn, "ab")
    cli(pg_dsn, "store", "migrate", "--config", str(a.config))
    load_a, load_b = HttpLoad(a), HttpLoad(b)
    with running([a, b], pg_dsn):
        await asyncio.gather(load_a.open(), load_b.open())
        await asyncio.gather(load_a.run(120), load_b.run(120))  # every call answered
        assert load_a.refusals == load_b.refusals == [] and load_a.broken == load_b.broken == 0
        receipts = call_receipts(context)
        assert len(receipts) == len(load_a.answered) + len(load_b.answered) >= 240
        before = len(load_a.answered)

        # kill -9 of A with 16 calls in flight, while B keeps serving
        loaded_b = asyncio.create_task(load_b.run(150))
        killed = asyncio.create_task(load_a.run(10_000))
        while len(load_a.answered) < before + 60:
            await asyncio.sleep(0.01)
        assert a.process is not None
        a.process.kill()
        await asyncio.wait_for(killed, 60)  # ends when A's calls in flight break
        await loaded_b
        await asyncio.gather(load_a.close(), load_b.close())
    # B stopped cleanly (a final checkpoint); A died without one
    assert load_a.broken > 0 and load_b.refusals == []
    assert unreceipted(load_a, context) == [] and unreceipted(load_b, context) == []
    report = await verify_cli(b.config, pg_dsn)
    assert report["state"] == "ok" and report["entries"] == report["verified_through"], report


async def test_a_replica_rides_out_database_outages(tmp_path: Path) -> None:
    """Started while the database is away, then the database stopped under load: fail closed,
    keep serving /healthz, report not ready, recover by itself."""
    with running_cluster(own_cluster_dir()) as cluster:
        dsn = cluster.create_database("fleet")
        context, (a,) = fleet(tmp_path, dsn, "a")
        cluster.stop("fast")
        load = HttpLoad(a)
        with running([a], dsn):
            # away at start: up, not ready, every request refused (fail closed)
            async with httpx.AsyncClient(timeout=30) as http:
                assert (await http.get(a.url.replace("/mcp", "/healthz"))).status_code == 200
            assert await readyz(a) == (503, "not ready: store")
            with pytest.raises(AssertionError, match=REVOCATIONS_DOWN):
                await load.open()
            await load.close()
            # the server answers, with a schema behind the code: not ready until migrated
            cluster.start()
            await until_ready(a, "not ready: migrations")
            cli(dsn, "store", "migrate", "--config", str(a.config))
            await until_ready(a, "ready")
            load = HttpLoad(a)
            await load.open()
            await load.run(50)
            assert load.refusals == [] and load.broken == 0

            # stopped under load, while another session asks /healthz every 20 ms
            stop = asyncio.Event()
            health = asyncio.create_task(health_latencies(a.url.replace("/mcp", "/healthz"), stop))
            answered = len(load.answered)
            loading = asyncio.create_task(load.run(100_000, timeout=120))
            await asyncio.sleep(0.5)
            cluster.stop("fast")
            stopped_at = time.monotonic()  # pg_ctl -w returns once the server is down
            while not load.refusals:
                assert time.monotonic() - stopped_at < 20, "calls still pass without a database"
                await asyncio.sleep(0.01)
            during = len(load.answered)
            await asyncio.sleep(1.5)
            assert len(load.answered) == during  # not one answer without its receipt
            assert await readyz(a) == (503, "not ready: store")
            assert a.process is not None and a.process.poll() is None
            cluster.start()
            restarted_at = time.monotonic()
            await until_ready(a, "ready")
            recovered = len(load.answered)
            while len(load.answered) < recovered + 50:  # calls pass again by themselves
                assert not loading.done()
                await asyncio.sleep(0.05)
            stop.set()
            latencies = await health
            loading.cancel()
            await asyncio.gather(loading, return_exceptions=True)
            await load.close()
        assert len(load.answered) > answered
        assert load.refusals and all(documented(r) for r in load.refusals), load.refusals[:3]
        # the event loop kept serving another session's requests through the outage
        before = [lag for at, lag in latencies if at < stopped_at]
        outage = [lag for at, lag in latencies if stopped_at <= at < restarted_at]
        for name, lags in (("before", before), ("outage", outage)):
            print(
                f"/healthz under load, {name}: n={len(lags)} median="
                f"{statistics.median(lags) * 1000:.1f} ms max={max(lags) * 1000:.1f} ms"
            )
        assert outage and max(outage) < 3.0, max(outage)  # was up to the 5 s pool timeout
        assert unreceipted(load, context) == []
        report = await verify_cli(a.config, dsn)
        assert report["state"] == "ok", report
        log = (tmp_path / "a" / "gateway.log").read_text(errors="replace")
        assert "starting while the database is away" in log and "answers again" in log
        assert cluster.password not in log
