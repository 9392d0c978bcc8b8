"""Relay benchmark: the same calls direct to an upstream and through mcpward, in one run.

Prints added p50/p95/p99 latency per tools/call, the throughput ratio, and tools/list of 1,000 tools.
Usage: python benchmarks/relay.py [--calls 2000] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcpward.testing.rawpeer import RawPeer

HERE = Path(__file__).resolve().parent
UPSTREAM = [sys.executable, str(HERE / "raw_upstream.py")]


async def spawn(argv: list[str], env: dict[str, str]) -> RawPeer:
    peer = await RawPeer.spawn(argv, env)
    await peer.initialize()
    return peer


def gateway_argv(config: Path) -> list[str]:
    return [sys.executable, "-m", "mcpward.cli.main", "run", "--config", str(config),
            "--log-level", "warning"]


def write_config(directory: Path, guards: str) -> Path:
    path = directory / "bench.yaml"
    upstream_args = json.dumps(UPSTREAM[1:])
    path.write_text(
        f"upstreams:\n  - id: bench\n    command: {json.dumps(UPSTREAM[0])}\n"
        f"    args: {upstream_args}\n    pass_env: [BENCH_TOOLS]\n"
        f"gateway:\n  relist_interval_s: 0\n{guards}"
    )
    return path


TOOL_FILTER = """guards:
  - kind: tool_filter
    runs_on: [tools_list, tool_invoke]
    config:
      rules:
        - deny: ["*delete*"]
"""


async def sequential(client: RawPeer, n: int) -> list[float]:
    out = []
    params = {"name": "echo", "arguments": {"message": "hello"}}
    for _ in range(n):
        t0 = time.perf_counter()
        await client.call("tools/call", params)
        out.append((time.perf_counter() - t0) * 1e6)
    return out


async def throughput(client: RawPeer, n: int, concurrency: int) -> float:
    params = {"name": "echo", "arguments": {"message": "hello"}}
    remaining = n

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await client.call("tools/call", params)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return n / (time.perf_counter() - t0)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def list_time(argv: list[str], env: dict[str, str], rounds: int = 20) -> float:
    client = await spawn(argv, env)
    await client.call("tools/list", {})
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        reply = await client.call("tools/list", {})
        times.append((time.perf_counter() - t0) * 1e3)
        assert len(reply["tools"]) == 1000
    await client.close()
    return statistics.median(times)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    env = {**os.environ, "BENCH_TOOLS": "10"}
    with tempfile.TemporaryDirectory() as tmp:
        env["MCPWARD_STATE_DIR"] = str(Path(tmp) / "state")
        config = write_config(Path(tmp), TOOL_FILTER)
        direct_lat: list[float] = []
        gw_lat: list[float] = []
        direct_tp: list[float] = []
        gw_tp: list[float] = []
        for _ in range(args.rounds):  # alternate to spread machine noise over both paths
            for label, argv in (("direct", UPSTREAM), ("gateway", gateway_argv(config))):
                client = await spawn(argv, env)
                await sequential(client, 200)  # warm-up
                lat = await sequential(client, args.calls // args.rounds)
                tp = await throughput(client, args.calls // args.rounds, args.concurrency)
                await client.close()
                (direct_lat if label == "direct" else gw_lat).extend(lat)
                (direct_tp if label == "direct" else gw_tp).append(tp)
        env_list = {**env, "BENCH_TOOLS": "1000"}
        list_direct = await list_time(UPSTREAM, env_list)
        list_gw = await list_time(gateway_argv(config), env_list)

    print(f"tools/call, {len(direct_lat)} sequential calls per path (tool_filter on), microseconds:")
    print(f"{'':10}{'p50':>10}{'p95':>10}{'p99':>10}")
    for label, lat in (("direct", direct_lat), ("mcpward", gw_lat)):
        print(f"{label:10}{pct(lat, .5):10.0f}{pct(lat, .95):10.0f}{pct(lat, .99):10.0f}")
    print(f"{'added':10}{pct(gw_lat, .5) - pct(direct_lat, .5):10.0f}"
          f"{pct(gw_lat, .95) - pct(direct_lat, .95):10.0f}{pct(gw_lat, .99) - pct(direct_lat, .99):10.0f}")
    d_tp, g_tp = statistics.median(direct_tp), statistics.median(gw_tp)
    print(f"throughput with {args.concurrency} in flight: direct {d_tp:.0f}/s, mcpward {g_tp:.0f}/s, "
          f"ratio {g_tp / d_tp:.2f}")
    print(f"tools/list of 1,000 tools (median): direct {list_direct:.2f} ms, mcpward {list_gw:.2f} ms, "
          f"added {list_gw - list_direct:.2f} ms")


if __name__ == "__main__":
    asyncio.run(main())
