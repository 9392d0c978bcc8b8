"""Relay benchmark: the same calls direct to an upstream and through mcpward, in one run.

Prints added p50/p95/p99 latency per tools/call, throughput ratios, and tools/list of 1,000 tools.
Usage: python benchmarks/relay.py [--calls 2000] [--concurrency 16] [--baseline-src DIR]

`--baseline-src DIR` adds the default configuration run from another checkout's `src` (e.g. the
previous commit, `git worktree add /tmp/base HEAD~1`), interleaved in the same run.
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
    return [
        sys.executable,
        "-m",
        "mcpward.cli.main",
        "run",
        "--config",
        str(config),
        "--log-level",
        "warning",
    ]


def write_config(directory: Path, name: str, extra: str) -> Path:
    path = directory / f"{name}.yaml"
    upstream_args = json.dumps(UPSTREAM[1:])
    path.write_text(
        f"upstreams:\n  - id: bench\n    command: {json.dumps(UPSTREAM[0])}\n"
        f"    args: {upstream_args}\n    pass_env: [BENCH_TOOLS]\n"
        f"gateway:\n  relist_interval_s: 0\n{extra}"
    )
    return path


# The relay with one real guard and no evidence: what the relay itself adds (issue 2's measure).
TOOL_FILTER = """evidence: {enabled: false}
guards:
  - kind: tool_filter
    runs_on: [tools_list, tool_invoke]
    config:
      rules:
        - deny: ["*delete*"]
"""
# What a user gets with no guards section: every default guard and a crash_safe receipt per call.
DEFAULTS = ""
# The same guards with receipts fsynced before each answer (group commit), and answered first.
SYNC = "evidence: {durability: sync}\n"
BATCHED = "evidence: {durability: batched}\n"


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


PATHS = ("direct", "relay", "batched", "defaults", "sync")
LABELS = {
    "direct": "direct",
    "relay": "mcpward: relay + tool_filter, no evidence",
    "batched": "mcpward: default guards + batched receipts",
    "defaults": "mcpward defaults (crash_safe receipts)",
    "sync": "mcpward: default guards + sync receipts",
    "baseline": "baseline src: its defaults",
}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline-src", type=Path, default=None)
    args = parser.parse_args()
    env = {**os.environ, "BENCH_TOOLS": "10"}
    paths = PATHS + (("baseline",) if args.baseline_src else ())
    envs = {p: env for p in paths}
    lat: dict[str, list[float]] = {p: [] for p in paths}
    tput: dict[str, list[float]] = {p: [] for p in paths}
    with tempfile.TemporaryDirectory() as tmp:
        env["MCPWARD_STATE_DIR"] = str(Path(tmp) / "state")
        if args.baseline_src:  # its own state dir: the two trees never share a pin store
            envs["baseline"] = {
                **env,
                "PYTHONPATH": str(args.baseline_src.resolve()),
                "MCPWARD_STATE_DIR": str(Path(tmp) / "baseline-state"),
            }
        argvs = {
            "direct": UPSTREAM,
            "relay": gateway_argv(write_config(Path(tmp), "relay", TOOL_FILTER)),
            "batched": gateway_argv(write_config(Path(tmp), "batched", BATCHED)),
            "defaults": gateway_argv(write_config(Path(tmp), "defaults", DEFAULTS)),
            "sync": gateway_argv(write_config(Path(tmp), "sync", SYNC)),
            "baseline": gateway_argv(write_config(Path(tmp), "baseline", DEFAULTS)),
        }
        per_round = args.calls // args.rounds
        for _ in range(args.rounds):  # interleave to spread machine noise over every path
            for path in paths:
                client = await spawn(argvs[path], envs[path])
                await sequential(client, 200)  # warm-up
                lat[path].extend(await sequential(client, per_round))
                tput[path].append(await throughput(client, per_round, args.concurrency))
                await client.close()
        env_list = {**env, "BENCH_TOOLS": "1000"}
        list_direct = await list_time(UPSTREAM, env_list)
        list_gw = await list_time(argvs["relay"], env_list)

    direct = lat["direct"]
    print(f"tools/call, {len(direct)} sequential calls per path, microseconds:")
    print(f"{'':44}{'p50':>8}{'p95':>8}{'p99':>8}{'added p50':>11}{'added p99':>11}")
    for path in paths:
        values = lat[path]
        p50, p95, p99 = (pct(values, q) for q in (0.5, 0.95, 0.99))
        row = f"{LABELS[path]:44}{p50:8.0f}{p95:8.0f}{p99:8.0f}"
        if path != "direct":
            row += f"{p50 - pct(direct, 0.5):11.0f}{p99 - pct(direct, 0.99):11.0f}"
        print(row)
    base = statistics.median(tput["direct"])
    print(f"throughput with {args.concurrency} calls in flight (calls/s, ratio to direct):")
    for path in paths:
        value = statistics.median(tput[path])
        print(f"  {LABELS[path]:44}{value:8.0f}  {value / base:5.2f}")
    print(
        f"tools/list of 1,000 tools (median): direct {list_direct:.2f} ms, "
        f"mcpward relay {list_gw:.2f} ms, added {list_gw - list_direct:.2f} ms"
    )


if __name__ == "__main__":
    asyncio.run(main())
