"""tools/call through the gateway with the SQLite store and with the PostgreSQL store, interleaved
in one run: p50 at one client and throughput with 16 calls in flight, crash_safe evidence.

    .venv/bin/python benchmarks/store_backends.py [--rounds 5] [--calls 400] [--seconds 3]
                                                  [--durability crash_safe|sync|batched]
                                                  [--baseline-src /tmp/base/src]

Two long-lived `mcpward run` processes (stdio front) in front of benchmarks/raw_upstream.py, no
guards, so the difference is the ledger's backend: one writes the state dir's SQLite file, the
other a PostgreSQL database (`store.kind: postgres`; $MCPWARD_BENCH_PG_DSN, else a throwaway
cluster started here on a loopback port, as tests/support/postgres.py does). Each round measures
both: p50 of `--calls` sequential calls (the gateways take turns call by call, so a burst of other
work on the machine hits them alike), then calls/s with 16 in flight for `--seconds` (in
slices of 0.5 s, the gateways again taking turns). Printed: per backend the median over rounds
with min-max, and per round the deltas (PostgreSQL p50 - SQLite p50) and ratios (PostgreSQL
calls/s / SQLite calls/s), median and min-max. Goals (issue #13): +<=0.3 ms p50, >=0.8x
throughput. Also printed: the gateway's CPU time per call in the p50 phase (utime+stime from
/proc: less noisy than wall time on a busy box).

`--baseline-src DIR` adds a third gateway, "pg-before", on PostgreSQL with the mcpward found in
DIR (e.g. the src/ of a `git worktree` of the commit before a change), measured in the same
rounds, on a database of its own in the throwaway cluster.

`--floor` measures instead what one receipt's commit costs without the gateway, in the same
rounds: a loop of one-receipt appends through the SQLite ledger store and the PostgreSQL one (TCP,
and the cluster's Unix socket), and `SELECT 1` through psycopg's `execute` and through libpq's
`exec_prepared`: wall p50, the client thread's CPU and the server backend's CPU per operation.
Only with the throwaway cluster (the appends write placeholder entries).
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
SLICE_S = 0.5  # throughput is measured in slices this long, the gateways taking turns


class Databases:
    """Migrated PostgreSQL databases: `main`, and for a cluster of our own, more on demand and
    the Unix-socket DSN of `main`."""

    def __init__(self, main: str, cluster: Any = None) -> None:
        self.main = main
        self._cluster = cluster
        self.socket_dsn: str | None = None
        if cluster is not None:
            credentials = main.split("@")[0]
            self.socket_dsn = f"{credentials}@/bench?host={cluster.sockets}&port={cluster.port}"

    def another(self, name: str) -> str:
        if self._cluster is None:
            raise SystemExit(f"this needs a second database: unset {DSN_ENV} (own cluster)")
        return migrated(self._cluster.create_database(name))


def migrated(dsn: str) -> str:
    from mcpward.store.postgres.migrations import migrate
    from mcpward.store.postgres.pool import PgPool
    from mcpward.store.settings import PoolSettings, StoreSettings

    pool = PgPool(dsn, StoreSettings(pool=PoolSettings(min=1, max=1)))
    try:
        migrate(pool)
    finally:
        pool.pool.close()
    return dsn


@contextmanager
def database(explicit: str | None) -> Iterator[Databases]:
    """The database given, or a fresh cluster of our own on a loopback port."""
    if explicit:
        yield Databases(migrated(explicit))
        return
    from tests.support.postgres import running_cluster

    with running_cluster(Path(tempfile.mkdtemp(prefix="mcpward-bench-pg-"))) as cluster:
        yield Databases(migrated(cluster.create_database("bench")), cluster)


def write_config(
    directory: Path, durability: str, postgres: bool, keys: Path | None = None
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "version": 1,
        "upstreams": [{"id": "raw", "kind": "stdio", "command": UPSTREAM[0], "args": UPSTREAM[1:]}],
        "guards": {"replace_defaults": True, "list": []},
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

    async def one_call_s(self) -> float:
        started = time.perf_counter()
        await self.call()
        await self.read()
        return time.perf_counter() - started

    async def loaded(self, seconds: float) -> tuple[int, float]:
        """Calls answered with IN_FLIGHT outstanding for `seconds`, and the time it took."""
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
        return done, elapsed

    async def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.proc.wait(), 30)
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()


async def p50_ms(gateways: list[Gateway], calls: int) -> dict[str, tuple[float, float]]:
    """Per gateway: p50 wall ms of `calls` sequential calls, and its CPU ms per call. The
    gateways take turns call by call, so a burst of other work on the machine hits them alike."""
    took: dict[str, list[float]] = {g.name: [] for g in gateways}
    cpu = {g.name: g.cpu_seconds() for g in gateways}
    for _ in range(calls):
        for gateway in gateways:
            took[gateway.name].append(await gateway.one_call_s())
    return {
        g.name: (
            statistics.median(took[g.name]) * 1000,
            (g.cpu_seconds() - cpu[g.name]) * 1000 / calls,
        )
        for g in gateways
    }


async def throughput(gateways: list[Gateway], seconds: float) -> dict[str, float]:
    """Per gateway: calls/s with IN_FLIGHT calls outstanding for `seconds` in all, taken in
    slices of SLICE_S by turns (as for p50, so a burst of other work hits them alike)."""
    done = dict.fromkeys((g.name for g in gateways), 0)
    took = dict.fromkeys((g.name for g in gateways), 0.0)
    for _ in range(max(1, round(seconds / SLICE_S))):
        for gateway in gateways:
            calls, elapsed = await gateway.loaded(SLICE_S)
            done[gateway.name] += calls
            took[gateway.name] += elapsed
    return {name: done[name] / took[name] for name in done}


def spread(values: list[float], unit: str, digits: int = 3) -> str:
    return (
        f"{statistics.median(values):.{digits}f} {unit} "
        f"(min {min(values):.{digits}f}, max {max(values):.{digits}f})"
    )


async def start_gateways(
    args: argparse.Namespace, databases: Databases, work: Path
) -> list[Gateway]:
    env = {DSN_ENV: databases.main}
    gateways = [
        await Gateway.start("sqlite", write_config(work / "sqlite", args.durability, False), env),
        await Gateway.start(
            "postgres", write_config(work / "postgres", args.durability, True), env
        ),
    ]
    if args.baseline_src:  # a database of its own: its appends never contend with the other's
        config = write_config(work / "pg-before", args.durability, True)
        before_env = {
            DSN_ENV: databases.another("bench_before"),
            "PYTHONPATH": str(Path(args.baseline_src).resolve()),
        }
        gateways.append(await Gateway.start("pg-before", config, before_env))
    return gateways


async def run(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="mcpward-bench-stores-"))
    with database(os.environ.get(DSN_ENV)) as databases:
        gateways = await start_gateways(args, databases, work)
        names = [g.name for g in gateways]
        p50: dict[str, list[float]] = {name: [] for name in names}
        cpu: dict[str, list[float]] = {name: [] for name in names}
        rate: dict[str, list[float]] = {name: [] for name in names}
        try:
            await p50_ms(gateways, 200)  # warm-up: connections, caches, the first checkpoint
            for number in range(1, args.rounds + 1):
                order = gateways if number % 2 else list(reversed(gateways))
                for name, (wall, per_call) in (await p50_ms(order, args.calls)).items():
                    p50[name].append(wall)
                    cpu[name].append(per_call)
                for name, calls_per_s in (await throughput(order, args.seconds)).items():
                    rate[name].append(calls_per_s)
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


def process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(op: Any, calls: int, server_pid: int | None) -> tuple[float, float, float]:
    """p50 wall ms, client thread CPU ms and server backend CPU ms per call of `op`."""
    for _ in range(min(calls, 200)):
        op()
    took = []
    thread0, server0 = time.thread_time(), process_cpu(server_pid) if server_pid else 0.0
    for _ in range(calls):
        started = time.perf_counter()
        op()
        took.append(time.perf_counter() - started)
    thread = (time.thread_time() - thread0) * 1000 / calls
    server = (process_cpu(server_pid) - server0) * 1000 / calls if server_pid else 0.0
    return statistics.median(took) * 1000, thread, server


def placeholder_body() -> bytes:
    """An entry body of a real receipt's size that names its key (the head is read from it)."""
    return b'{"key_id":"k","kind":"receipt","x":"' + b"x" * 778 + b'"}'


def placeholder_receipts() -> Any:
    """A `build` for LedgerStore.append: one entry of a real receipt's size on the head."""
    from mcpward.evidence.chain import ChainHead, SealedEntry

    body = placeholder_body()

    def build(head: ChainHead) -> list[SealedEntry]:
        return [SealedEntry(head.size, body, bytes(32), bytes(32), time.time(), "k")]

    return build


def floor_ops(dsn: str, socket_dsn: str | None, work: Path) -> Iterator[tuple[str, Any]]:
    """(name, measure) pairs; each measure opens what it needs and returns `timed(...)`."""
    import psycopg

    from mcpward.store.ledger_sqlite import SqliteLedgerStore
    from mcpward.store.postgres.ledger import PostgresLedgerStore
    from mcpward.store.postgres.pool import PgPool
    from mcpward.store.settings import PoolSettings, StoreSettings

    def select_1(prepared: bool) -> Any:
        def measure(calls: int) -> tuple[float, float, float]:
            with psycopg.connect(dsn, autocommit=True) as conn:
                if not prepared:
                    return timed(
                        lambda: conn.execute("SELECT 1").fetchone(), calls, conn.info.backend_pid
                    )
                conn.pgconn.prepare(b"one", b"SELECT 1")
                return timed(
                    lambda: conn.pgconn.exec_prepared(b"one", []), calls, conn.info.backend_pid
                )

        return measure

    def psycopg_append(calls: int) -> tuple[float, float, float]:
        """The statement as the store sent it before the libpq path: psycopg's execute (it
        prepares it itself after 5 runs)."""
        from mcpward.store.postgres.ledger import APPEND_LOCK, _insert_sql

        body = placeholder_body()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SET synchronous_commit = off")
            row = conn.execute("SELECT coalesce(max(seq), -1) + 1 FROM ledger_entries").fetchone()
            seq = [int(row[0]) if row else 0]

            def op() -> None:
                args = [APPEND_LOCK, seq[0], body, bytes(32), bytes(32), time.time()]
                conn.execute(_insert_sql(1, True), args, binary=True)
                seq[0] += 1

            return timed(op, calls, conn.info.backend_pid)

    def sqlite_append(calls: int) -> tuple[float, float, float]:
        store = SqliteLedgerStore(work / "floor" / "ledger.db", synchronous="NORMAL")
        build = placeholder_receipts()
        try:
            return timed(lambda: store.append(build), calls, None)
        finally:
            store.close()

    def postgres_append(target: str) -> Any:
        def measure(calls: int) -> tuple[float, float, float]:
            pool = PgPool(target, StoreSettings(pool=PoolSettings(min=1, max=1)))
            store = PostgresLedgerStore(pool, synchronous_commit=False)
            build = placeholder_receipts()
            try:
                store.append(build)  # connects
                assert store._conn is not None
                return timed(lambda: store.append(build), calls, store._conn.info.backend_pid)
            finally:
                store.close()
                pool.close()

        return measure

    (work / "floor").mkdir(parents=True, exist_ok=True)
    yield "SELECT 1, psycopg execute (TCP)", select_1(False)
    yield "SELECT 1, libpq exec_prepared (TCP)", select_1(True)
    yield "append 1 receipt, SQLite store", sqlite_append
    yield "append 1 receipt, psycopg execute (TCP, before)", psycopg_append
    yield "append 1 receipt, PostgreSQL store (TCP)", postgres_append(dsn)
    if socket_dsn:
        yield "append 1 receipt, PostgreSQL store (Unix socket)", postgres_append(socket_dsn)


def run_floor(args: argparse.Namespace) -> None:
    if os.environ.get(DSN_ENV):
        raise SystemExit(f"--floor writes placeholder entries: unset {DSN_ENV} (own cluster)")
    work = Path(tempfile.mkdtemp(prefix="mcpward-bench-floor-"))
    results: dict[str, list[tuple[float, float, float]]] = {}
    with database(None) as databases:
        for number in range(1, args.rounds + 1):
            for name, measure in floor_ops(databases.main, databases.socket_dsn, work):
                results.setdefault(name, []).append(measure(args.calls))
            print(f"round {number} done", flush=True)
    print(f"\n{args.rounds} rounds of {args.calls} calls: median (min-max) per operation")
    print(f"  {'':48} {'wall p50 ms':>20} {'client CPU ms':>20} {'server CPU ms':>20}")
    print(f"  {'':48} {'':>20} {'(mean, thread)':>20} {'(mean, backend)':>20}")
    for name, rows in results.items():
        cells = [
            f"{statistics.median(c):.3f} ({min(c):.3f}-{max(c):.3f})"
            for c in ([row[i] for row in rows] for i in range(3))
        ]
        print(f"  {name:48} " + " ".join(f"{cell:>20}" for cell in cells))


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
    parser.add_argument(
        "--floor", action="store_true", help="time one receipt's commit without the gateway"
    )
    args = parser.parse_args()
    if args.floor:
        run_floor(args)
    else:
        asyncio.run(run(args))


if __name__ == "__main__":
    main()
