"""Relay benchmark: the same calls direct to an upstream, through mcpward and through peer
gateways, interleaved in one run.

    .venv/bin/python benchmarks/relay.py [--calls 2000] [--rounds 3] [--concurrency 16]
                                         [--throughput-calls 6000] [--baseline-src DIR]
                                         [--no-peers] [--with-metrics] [--split]

Every path wraps the same raw JSON-RPC upstream (benchmarks/raw_upstream.py) and is driven by the
same raw client (mcpward.testing.rawpeer.RawPeer): initialize, tools/list, 200 warm-up calls,
`--calls / --rounds` sequential `tools/call echo`, then `--throughput-calls` with `--concurrency`
in flight. The gateway's CPU per call is the utime+stime (Linux /proc) of the gateway process,
not its upstream, over the throughput phase. Each round starts every path afresh, in turn.

Prints pooled p50/p95/p99 and added latency, then per-round medians with their min-max spread
(added p50/p99, calls/s in flight and the ratio to direct, gateway CPU per call), and tools/list
of 1,000 tools.

`--baseline-src DIR` adds the default configuration run from another checkout's `src` (e.g. the
previous commit, `git worktree add /tmp/base HEAD~1`), interleaved in the same run.

Peers (benchmarks/peers.py; each installed once into `.bench-peers/`, skipped with a printed
reason when it cannot be): `mcpindex-proxy` (PyPI mcpindex-gate, needs Python >= 3.12; its
default posture, guard) and `mcp-firewall wrap` (its defaults, global rate limit raised).
`--no-peers` leaves them out. `--with-metrics` adds the defaults with /metrics served (metrics
are only counted when served). `--split` adds the default guards without evidence and crash_safe
evidence without the default guards (tool_filter only), to say where the defaults' CPU goes.

Last line: the throughput of the defaults (and sync) over the bare relay's, per round - issue 12's
goal ratios (>= 0.5x, sync >= 0.35x).
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
from dataclasses import dataclass, field
from pathlib import Path

import peers

from mcpward.testing.rawpeer import RawPeer

HERE = Path(__file__).resolve().parent
UPSTREAM = [sys.executable, str(HERE / "raw_upstream.py")]


ECHO = {"name": "echo", "arguments": {"message": "hello"}}


async def spawn(argv: list[str], env: dict[str, str]) -> RawPeer:
    """A started client on `argv`: initialize, then tools/list, as an MCP host does."""
    peer = await RawPeer.spawn(argv, env)
    await peer.initialize()
    await peer.call("tools/list", {})
    return peer


async def smoke(argv: list[str], env: dict[str, str]) -> str | None:
    """None when `argv` relays initialize, tools/list and tools/call echo as the upstream
    answers them; otherwise what went wrong."""
    try:
        client = await asyncio.wait_for(RawPeer.spawn(argv, env), 60)
    except OSError as exc:
        return f"cannot start: {exc}"
    try:
        init = await asyncio.wait_for(client.initialize(), 60)
        listed = await asyncio.wait_for(client.call("tools/list", {}), 60)
        names = [tool.get("name") for tool in listed.get("tools", [])]
        if "echo" not in names:
            return f"tools/list has no echo: {names[:5]}"
        result = await asyncio.wait_for(client.call("tools/call", ECHO), 60)
        text = result.get("content", [{}])[0].get("text")
        if result.get("isError") or json.loads(text) != ECHO["arguments"]:
            return f"tools/call echo answered {result!r}"
        if not init.get("serverInfo"):
            return f"initialize answered {init!r}"
    except Exception as exc:  # a peer may fail in any way (timeouts too): report, skip
        return f"{type(exc).__name__}: {exc}"
    finally:
        await client.close()
    return None


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
  replace_defaults: true
  list:
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
# Where the defaults' cost goes (--split): the guards alone, and the receipts alone.
GUARDS_ONLY = "evidence: {enabled: false}\n"
EVIDENCE_ONLY = TOOL_FILTER.replace("evidence: {enabled: false}\n", "")
# The defaults with /metrics served (the stdio listener, on an ephemeral loopback port).
METRICS = "telemetry: {metrics_listen: '127.0.0.1:0'}\n"


async def sequential(client: RawPeer, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        await client.call("tools/call", ECHO)
        out.append((time.perf_counter() - t0) * 1e6)
    return out


async def throughput(client: RawPeer, n: int, concurrency: int) -> float:
    remaining = n

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await client.call("tools/call", ECHO)

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


LABELS = {
    "direct": "direct",
    "relay": "mcpward: relay + tool_filter, no evidence",
    "batched": "mcpward: default guards + batched receipts",
    "defaults": "mcpward defaults (crash_safe receipts)",
    "sync": "mcpward: default guards + sync receipts",
    "baseline": "baseline src: its defaults",
    "metrics": "mcpward defaults + /metrics served",
    "guards": "mcpward: default guards, no evidence",
    "evidence": "mcpward: tool_filter + crash_safe receipts",
}


@dataclass
class Results:
    latencies: list[float] = field(default_factory=list)  # pooled over rounds, µs
    p50: list[float] = field(default_factory=list)  # one per round
    p99: list[float] = field(default_factory=list)
    calls_per_s: list[float] = field(default_factory=list)
    cpu_us: list[float] = field(default_factory=list)  # gateway CPU per call in flight
    cpu_halves: list[tuple[float, float]] = field(default_factory=list)  # first, second half


def add_peers(
    argvs: dict[str, list[str]],
    envs: dict[str, dict[str, str]],
    labels: dict[str, str],
    tmp: Path,
    env: dict[str, str],
) -> None:
    """Install (once) and add mcpindex-proxy and mcp-firewall; print why one is left out."""
    print("peers:")
    mcpindex = peers.ensure(peers.MCPINDEX)
    if mcpindex is not None:
        argvs["mcpindex"] = peers.mcpindex_argv(mcpindex, tmp, UPSTREAM)
        envs["mcpindex"] = peers.mcpindex_env(env, tmp)
        labels["mcpindex"] = f"mcpindex-proxy ({mcpindex.version}, guard)"
    firewall = peers.ensure(peers.FIREWALL)
    if firewall is not None:
        argvs["firewall"] = peers.firewall_argv(firewall, tmp, UPSTREAM)
        envs["firewall"] = env
        labels["firewall"] = f"mcp-firewall wrap ({firewall.version}, rate limit raised)"


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=2000, help="sequential calls, all rounds")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--throughput-calls",
        type=int,
        default=6000,
        help="calls in flight per path and round (enough for /proc CPU ticks of 10 ms)",
    )
    parser.add_argument("--baseline-src", type=Path, default=None)
    parser.add_argument("--no-peers", action="store_true", help="leave out the peer gateways")
    parser.add_argument(
        "--with-metrics", action="store_true", help="add the defaults with /metrics served"
    )
    parser.add_argument(
        "--split", action="store_true", help="add default guards alone and receipts alone"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    env = {**os.environ, "BENCH_TOOLS": "10"}
    labels = dict(LABELS)
    with tempfile.TemporaryDirectory() as tmp:
        env["MCPWARD_STATE_DIR"] = str(Path(tmp) / "state")
        envs = {p: env for p in labels}
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
        }
        if args.baseline_src:
            argvs["baseline"] = gateway_argv(write_config(Path(tmp), "baseline", DEFAULTS))
        if args.split:
            argvs["guards"] = gateway_argv(write_config(Path(tmp), "guards", GUARDS_ONLY))
            argvs["evidence"] = gateway_argv(write_config(Path(tmp), "evidence", EVIDENCE_ONLY))
        if args.with_metrics:
            argvs["metrics"] = gateway_argv(write_config(Path(tmp), "metrics", METRICS))
        if not args.no_peers:
            peer_tmp = Path(tmp) / "peers"
            peer_tmp.mkdir()
            add_peers(argvs, envs, labels, peer_tmp, env)
            for path in [p for p in argvs if p in ("mcpindex", "firewall")]:
                problem = await smoke(argvs[path], envs[path])
                if problem is None:
                    print(f"  {labels[path]}: initialize, tools/list, tools/call echo relayed")
                else:
                    print(f"  skipped {labels[path]}: {problem}")
                    del argvs[path]
        paths = list(argvs)
        results = {p: Results() for p in paths}
        per_round = args.calls // args.rounds
        for _ in range(args.rounds):  # interleave to spread machine noise over every path
            for path in paths:
                client = await spawn(argvs[path], envs[path])
                await sequential(client, 200)  # warm-up
                values = await sequential(client, per_round)
                res = results[path]
                res.latencies.extend(values)
                res.p50.append(pct(values, 0.5))
                res.p99.append(pct(values, 0.99))
                # two halves, to show whether a gateway's cost per call grows with the calls
                # it has handled (calls/s over both; the pause between them is one /proc read)
                half = args.throughput_calls // 2
                cpu = [peers.gateway_cpu_seconds(client.proc.pid, UPSTREAM)]
                seconds = 0.0
                for _ in range(2):
                    seconds += half / await throughput(client, half, args.concurrency)
                    cpu.append(peers.gateway_cpu_seconds(client.proc.pid, UPSTREAM))
                res.calls_per_s.append(2 * half / seconds)
                res.cpu_us.append((cpu[2] - cpu[0]) / (2 * half) * 1e6)
                res.cpu_halves.append(
                    ((cpu[1] - cpu[0]) / half * 1e6, (cpu[2] - cpu[1]) / half * 1e6)
                )
                await client.close()
        env_list = {**env, "BENCH_TOOLS": "1000"}
        list_direct = await list_time(UPSTREAM, env_list)
        list_gw = await list_time(argvs["relay"], env_list)

    width = max(len(labels[p]) for p in paths) + 2
    direct = results["direct"]
    print(
        f"tools/call, {len(direct.latencies)} sequential calls per path "
        f"({args.rounds} rounds pooled), microseconds:"
    )
    print(f"{'':{width}}{'p50':>8}{'p95':>8}{'p99':>8}{'added p50':>11}{'added p99':>11}")
    for path in paths:
        values = results[path].latencies
        p50, p95, p99 = (pct(values, q) for q in (0.5, 0.95, 0.99))
        row = f"{labels[path]:{width}}{p50:8.0f}{p95:8.0f}{p99:8.0f}"
        if path != "direct":
            row += (
                f"{p50 - pct(direct.latencies, 0.5):11.0f}{p99 - pct(direct.latencies, 0.99):11.0f}"
            )
        print(row)
    print(
        f"per round: median ({args.rounds} interleaved rounds) and min\u2013max; "
        f"added = path minus direct in the same round; {2 * (args.throughput_calls // 2)} calls "
        f"with {args.concurrency} in flight for calls/s and gateway CPU (/proc utime+stime), "
        "the CPU also per half of them; every gateway process serves "
        f"{200 + per_round + 2 * (args.throughput_calls // 2)} calls per round:"
    )
    columns = (
        ("added p50 µs", 20),
        ("added p99 µs", 22),
        (f"calls/s, {args.concurrency} in flight", 26),
        ("ratio to direct", 22),
        ("gw CPU µs/call", 18),
        ("1st \u2192 2nd half", 18),
    )
    print(f"{'':{width}}" + "".join(f"{name:>{size}}" for name, size in columns))
    for path in paths:
        res = results[path]
        rounds = range(len(res.p50))
        cells = [
            peers.spread([res.p50[i] - direct.p50[i] for i in rounds]),
            peers.spread([res.p99[i] - direct.p99[i] for i in rounds]),
            peers.spread(res.calls_per_s),
            peers.spread([res.calls_per_s[i] / direct.calls_per_s[i] for i in rounds], ".3f"),
            peers.spread(res.cpu_us),
            "{:.0f} \u2192 {:.0f}".format(
                *(statistics.median(h[i] for h in res.cpu_halves) for i in (0, 1))
            ),
        ]
        if path == "direct":
            cells = ["", "", cells[2], "", "(upstream)", ""]
        sized = zip(cells, (size for _, size in columns), strict=True)
        print(f"{labels[path]:{width}}" + "".join(f"{cell:>{size}}" for cell, size in sized))
    for path, spec in (("mcpindex", peers.MCPINDEX), ("firewall", peers.FIREWALL)):
        if path in paths:
            print(f"note: {peers.GROWTH[spec.name]}")
    bare = results["relay"].calls_per_s
    ratios = []
    for path in ("defaults", "sync", "guards", "evidence"):
        if path in paths:
            per_round = zip(results[path].calls_per_s, bare, strict=True)
            ratios.append(f"{labels[path]} {peers.spread([r / b for r, b in per_round], '.3f')}")
    print("throughput over the bare relay's, 16 in flight, per round: " + "; ".join(ratios))
    print(
        f"tools/list of 1,000 tools (median): direct {list_direct:.2f} ms, "
        f"mcpward relay {list_gw:.2f} ms, added {list_gw - list_direct:.2f} ms"
    )
    print(f"took {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    asyncio.run(main())
