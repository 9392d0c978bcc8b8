"""tools/call through the gateway with the SQLite store and with the PostgreSQL store, interleaved
in one run: p50 at one client and throughput with 16 calls in flight, crash_safe evidence.

    .venv/bin/python benchmarks/store_backends.py [--rounds 5] [--calls 400] [--seconds 3]
                                                  [--durability crash_safe|sync|batched]
                                                  [--baseline-src /tmp/base/src]

Two long-lived `mcpward run` processes (stdio front) in front of benchmarks/raw_upstream.py, no
guards, so the difference is the ledger's backend: one writes the state dir's SQLite file, the
other a PostgreSQL database (`store.kind: postgres`; $MCPWARD_BENCH_PG_DSN, else a throwaway
cluster started here on a loopback port, as tests/support/postgres.py does). Each round measures
both, one after the other: p50 of `--calls` sequential calls, then calls/s for `--seconds` with 16
in flight. Printed: per backend the median over rounds with min-max, and per round the deltas
(PostgreSQL p50 - SQLite p50) and ratios (PostgreSQL calls/s / SQLite calls/s), median and
min-max. Goals (issue #13): +<=0.3 ms p50, >=0.8x throughput. Also printed: the gateway's CPU
time per call in the p50 phase (utime+stime from /proc: less noisy than wall time on a busy box).

`--baseline-src DIR` adds a third gateway, "pg-before", on PostgreSQL with the mcpward found in
DIR (e.g. the src/ of a `git worktree` of the commit before a change), measured in the same
rounds; it is a second replica of the same fleet (same database and keys, run one after the other:
the first append after a switch finds the head moved, once per phase).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
UPSTREAM = [sys.executable, str(ROOT / "benchmarks" / "raw_upstream.py")]
DSN_ENV = "MCPWARD_BENCH_PG_DSN"
IN_FLIGHT = 16


@contextmanager
def database(explicit: str | None) -> Iterator[str]:
    """A migrated PostgreSQL database: the one given, or a fresh cluster of our own."""
    from mcpward.store.postgres.migrations import migrate
    from mcpward.store.postgres.pool import PgPool
    from mcpward.store.settings import StoreSettings

    def migrated(dsn: str) -> str:
        pool = PgPool(dsn, StoreSettings(pool={"min": 1, "max": 1}))
        try:
            migrate(pool)
        finally:
            pool.pool.close()
        return dsn

    if explicit:
        yield migrated(explicit)
        return
    from tests.support.postgres import running_cluster

    with running_cluster(Path(tempfile.mkdtemp(prefix="mcpward-bench-pg-"))) as cluster:
        yield migrated(cluster.create_database("bench"))


def write_config(
    directory: Path, durability: str, postgres: bool, keys: Path | None = None
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "version": 1,
        "upstreams": [{"id": "raw", "kind": "stdio", "command": UPSTREAM[0], "args": UPSTREAM[1:]}],
        "guards": [],
        "gateway": {"relist_interval_s": 0},
        "state_dir": str(directory / "state"),
        "logging": {"level": "warning", "file": str(directory / "gateway.log")},
        "evidence": {"durability": durability},
    }
    if postgres:
        config["store"] = {
            "kind": "postgres",
            "dsn": {"env": DSN_ENV},
            "pool": {"min": 2, "max": 4},
        }
        config["keys"] = {"dir": str(keys or directory / "keys")}
    path = directory / "mcpward.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


class Gateway:
    """One `mcpward run` process driven with raw JSON-RPC on its stdio."""

    def __init__(self, name: str, proc: asyncio.subprocess.Process) -> None:
        self.name = name
        self.proc = proc
        self.next_id = 0

    @classmethod
    async def start(cls, name: str, config: Path, env: dict[str, str]) -> Gateway:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "mcpward.cli.main",
            "run",
            "--config",
            str(config),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env={**os.environ, **env},
            limit=1 << 20,
        )
        gateway = cls(name, proc)
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        }
        await gateway.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init})
        await gateway.read()
        await gateway.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return gateway

    async def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps(message) + b"\n")
        await self.proc.stdin.drain()

    async def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 60)
        if not line:
            raise RuntimeError(f"{self.name}: the gateway exited")
        message: dict[str, Any] = orjson.loads(line)
        if "error" in message:
            raise RuntimeError(f"{self.name}: {message['error']}")
        return message

    async def call(self) -> None:
        self.next_id += 1
        params = {"name": "echo", "arguments": {"message": f"bench {self.next_id}"}}
        await self.send(
            {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call", "params": params}
        )

    def cpu_seconds(self) -> float:
        """utime + stime of the gateway process (its upstream not included)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    async def p50_ms(self, calls: int) -> tuple[float, float]:
        """p50 wall time of `calls` sequential calls, and the gateway's CPU ms per call."""
        took = []
        cpu = self.cpu_seconds()
        for _ in range(calls):
            started = time.perf_counter()
            await self.call()
            await self.read()
            took.append(time.perf_counter() - started)
        return statistics.median(took) * 1000, (self.cpu_seconds() - cpu) * 1000 / calls

    async def throughput(self, seconds: float) -> float:
        for _ in range(IN_FLIGHT):
            await self.call()
        done = 0
        started = time.perf_counter()
        deadline = started + seconds
        while time.perf_counter() < deadline:
            await self.read()
            done += 1
            await self.call()
        elapsed = time.perf_counter() - started
        for _ in range(IN_FLIGHT):
            await self.read()
        return done / elapsed

    async def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.proc.wait(), 30)
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()


def spread(values: list[float], unit: str, digits: int = 3) -> str:
    return (
        f"{statistics.median(values):.{digits}f} {unit} "
        f"(min {min(values):.{digits}f}, max {max(values):.{digits}f})"
    )


async def start_gateways(args: argparse.Namespace, dsn: str, work: Path) -> list[Gateway]:
    env = {DSN_ENV: dsn}
    keys = work / "keys"  # the PostgreSQL gateways are replicas of one fleet
    gateways = [
        await Gateway.start("sqlite", write_config(work / "sqlite", args.durability, False), env),
        await Gateway.start(
            "postgres", write_config(work / "postgres", args.durability, True, keys), env
        ),
    ]
    if args.baseline_src:
        config = write_config(work / "pg-before", args.durability, True, keys)
        before_env = {**env, "PYTHONPATH": str(Path(args.baseline_src).resolve())}
        gateways.append(await Gateway.start("pg-before", config, before_env))
    return gateways


async def run(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="mcpward-bench-stores-"))
    with database(os.environ.get(DSN_ENV)) as dsn:
        gateways = await start_gateways(args, dsn, work)
        names = [g.name for g in gateways]
        p50: dict[str, list[float]] = {name: [] for name in names}
        cpu: dict[str, list[float]] = {name: [] for name in names}
        rate: dict[str, list[float]] = {name: [] for name in names}
        try:
            for gateway in gateways:  # warm-up: connections, caches, the first checkpoint
                await gateway.p50_ms(200)
            for number in range(1, args.rounds + 1):
                order = gateways if number % 2 else list(reversed(gateways))
                for gateway in order:
                    wall, per_call = await gateway.p50_ms(args.calls)
                    p50[gateway.name].append(wall)
                    cpu[gateway.name].append(per_call)
                for gateway in order:
                    rate[gateway.name].append(await gateway.throughput(args.seconds))
                print(
                    f"round {number}: "
                    + "; ".join(
                        f"{n} p50 {p50[n][-1]:.3f} ms, cpu {cpu[n][-1]:.3f} ms/call, "
                        f"{rate[n][-1]:.0f} calls/s"
                        for n in names
                    ),
                    flush=True,
                )
        finally:
            for gateway in gateways:
                await gateway.stop()
    print(f"\n{args.rounds} rounds, durability {args.durability}, no guards, stdio front")
    for name in names:
        print(
            f"  {name:9} p50 at 1 client: {spread(p50[name], 'ms')}; "
            f"gateway CPU {spread(cpu[name], 'ms/call')}; "
            f"{IN_FLIGHT} in flight: {spread(rate[name], 'calls/s', 0)}"
        )
    for name in names[1:]:
        added = [pg - sq for pg, sq in zip(p50[name], p50["sqlite"], strict=True)]
        ratio = [pg / sq for pg, sq in zip(rate[name], rate["sqlite"], strict=True)]
        print(f"  {name} p50 - sqlite p50 (per round): {spread(added, 'ms')}  [goal <= +0.3 ms]")
        print(f"  {name} / sqlite throughput (per round): {spread(ratio, 'x', 2)}  [goal >= 0.8x]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument(
        "--durability", default="crash_safe", choices=["crash_safe", "sync", "batched"]
    )
    parser.add_argument(
        "--baseline-src",
        help="a src/ directory with the mcpward to compare against (a third gateway, pg-before)",
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
