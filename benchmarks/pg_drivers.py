"""psycopg 3 (sync, the pool, async) against asyncpg on the round trips the PostgreSQL store makes.

    .venv/bin/python benchmarks/pg_drivers.py [--rounds 5] [--n 2000]

Needs asyncpg installed for its row (`.venv/bin/pip install asyncpg`; not a dependency). Uses
$MCPWARD_BENCH_PG_DSN, else a throwaway cluster on a loopback port (tests/support/postgres.py).
Per round and driver: p50 and p99 of `n` sequential round trips of each shape, interleaved; the
median over rounds is printed with min-max. Shapes: `SELECT 1`; a parameterised single-row read
(a pin load's shape); a 16-row `unnest` insert in a transaction (a ledger batch's shape).
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
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DSN_ENV = "MCPWARD_BENCH_PG_DSN"
ROWS = 16
SETUP = (
    "CREATE TABLE IF NOT EXISTS bench_kv (k text PRIMARY KEY, v text NOT NULL);"
    "INSERT INTO bench_kv VALUES ('a', 'x') ON CONFLICT DO NOTHING;"
    "CREATE TABLE IF NOT EXISTS bench_log (seq bigserial PRIMARY KEY, body bytea NOT NULL)"
)
INSERT = "INSERT INTO bench_log (body) SELECT * FROM unnest(%s::bytea[])"
INSERT_PG = "INSERT INTO bench_log (body) SELECT * FROM unnest($1::bytea[])"
BODIES = [b"x" * 400] * ROWS


@contextlib.contextmanager
def database() -> Iterator[str]:
    if os.environ.get(DSN_ENV):
        yield os.environ[DSN_ENV]
        return
    from tests.support.postgres import running_cluster

    with running_cluster(Path(tempfile.mkdtemp(prefix="mcpward-bench-pg-"))) as cluster:
        yield cluster.create_database("bench")


def timed(n: int, step: Callable[[], Any]) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        step()
        out.append(time.perf_counter() - start)
    return out


async def atimed(n: int, step: Callable[[], Awaitable[Any]]) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        await step()
        out.append(time.perf_counter() - start)
    return out


def psycopg_sync(dsn: str, n: int) -> dict[str, list[float]]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:

        def insert() -> None:
            with conn.transaction():
                conn.execute(INSERT, (BODIES,))

        return {
            "select 1": timed(n, lambda: conn.execute("SELECT 1").fetchone()),
            "read row": timed(
                n, lambda: conn.execute("SELECT v FROM bench_kv WHERE k=%s", ("a",)).fetchone()
            ),
            "insert 16": timed(n, insert),
        }


def psycopg_pool(dsn: str, n: int) -> dict[str, list[float]]:
    from psycopg_pool import ConnectionPool

    with ConnectionPool(dsn, min_size=2, max_size=4, kwargs={"autocommit": True}) as pool:
        pool.wait()

        def read() -> None:
            with pool.connection() as conn:
                conn.execute("SELECT v FROM bench_kv WHERE k=%s", ("a",)).fetchone()

        return {"read row (pool checkout)": timed(n, read)}


async def psycopg_async(dsn: str, n: int) -> dict[str, list[float]]:
    import psycopg

    conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    try:

        async def select1() -> None:
            await (await conn.execute("SELECT 1")).fetchone()

        async def read() -> None:
            await (await conn.execute("SELECT v FROM bench_kv WHERE k=%s", ("a",))).fetchone()

        async def insert() -> None:
            async with conn.transaction():
                await conn.execute(INSERT, (BODIES,))

        return {
            "select 1": await atimed(n, select1),
            "read row": await atimed(n, read),
            "insert 16": await atimed(n, insert),
        }
    finally:
        await conn.close()


async def asyncpg_rows(dsn: str, n: int) -> dict[str, list[float]]:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:

        async def insert() -> None:
            async with conn.transaction():
                await conn.execute(INSERT_PG, BODIES)

        return {
            "select 1": await atimed(n, lambda: conn.fetchval("SELECT 1")),
            "read row": await atimed(
                n, lambda: conn.fetchval("SELECT v FROM bench_kv WHERE k=$1", "a")
            ),
            "insert 16": await atimed(n, insert),
        }
    finally:
        await conn.close()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--n", type=int, default=2000)
    args = parser.parse_args()
    try:
        import asyncpg  # noqa: F401

        have_asyncpg = True
    except ImportError:
        have_asyncpg = False
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with database() as dsn:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(SETUP)
        for _ in range(args.rounds):
            runs = {
                "psycopg sync": psycopg_sync(dsn, args.n),
                "psycopg pool": psycopg_pool(dsn, args.n),
                "psycopg async": asyncio.run(psycopg_async(dsn, args.n)),
            }
            if have_asyncpg:
                runs["asyncpg"] = asyncio.run(asyncpg_rows(dsn, args.n))
            for driver, shapes in runs.items():
                for shape, values in shapes.items():
                    results.setdefault((driver, shape), []).append(
                        (pct(values, 0.5), pct(values, 0.99))
                    )
    print(f"{'driver':<15} {'shape':<26} {'p50 us (min-max)':>22} {'p99 us (median)':>16}")
    for (driver, shape), rounds in results.items():
        p50s = [r[0] for r in rounds]
        p99 = statistics.median(r[1] for r in rounds)
        spread = f"{statistics.median(p50s):.0f} ({min(p50s):.0f}-{max(p50s):.0f})"
        print(f"{driver:<15} {shape:<26} {spread:>22} {p99:>16.0f}")


if __name__ == "__main__":
    main()
