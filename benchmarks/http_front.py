"""tools/call throughput and latency over Streamable HTTP: straight to an upstream, and through
mcpward's HTTP front to the same upstream, in one run, with 1, 8 and 32 concurrent clients.

    .venv/bin/python benchmarks/http_front.py [--seconds 5] [--era legacy|2026-07-28]
                                              [--guards default|none] [--clients 1,8,32]
                                              [--evidence crash_safe|sync|batched|off]
                                              [--upstream sdk|raw]

The upstream is tests/fixtures/conformance_server.py (mcp SDK, Streamable HTTP, on httptools),
or with `--upstream raw` benchmarks/raw_http_upstream.py (raw ASGI, almost free: what is left is
the gateway's own cost). The gateway runs as its own process (uvloop, like `mcpward run`), with a
static token. The last column is the gateway process's CPU time per call (Linux /proc). Each
client is a lean raw JSON-RPC client (aiohttp, one connection) so the numbers measure servers,
not client SDKs.
Prints calls/s and p50/p99 latency per path and the gateway's ratio and added latency.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from mcpward.identity.tokens import hash_token

ROOT = Path(__file__).resolve().parents[1]
UPSTREAMS = {
    "sdk": [str(ROOT / "tests" / "fixtures" / "conformance_server.py"), "--http", "httptools"],
    "raw": [str(ROOT / "benchmarks" / "raw_http_upstream.py")],
}
TOKEN = "benchmark-token-0123456789abcdef"
RUNNER = """
import asyncio, os, sys, uvloop
from mcpward.config import load_config
from mcpward.relay.gateway import Gateway
from mcpward.transport.http_front.server import serve_http

async def main():
    loaded = load_config(sys.argv[1])
    gateway = await Gateway.start(loaded)
    try:
        await serve_http(gateway, loaded.config.front, lambda url: print(url, flush=True))
    finally:
        await gateway.close()

profile_to = os.environ.get("MCPWARD_BENCH_PROFILE")  # a path: cProfile the gateway into it
if profile_to:
    import cProfile
    profiler = cProfile.Profile()
    profiler.enable()
try:
    uvloop.run(main())
finally:
    if profile_to:
        profiler.disable()
        profiler.dump_stats(profile_to)
"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux); NaN elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_port(port: int) -> None:
    for _ in range(400):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def parse_answer(ctype: str, body: bytes) -> dict[str, Any]:
    if ctype.startswith("application/json"):
        return dict(json.loads(body))
    lines = [ln[5:] for ln in body.decode().splitlines() if ln.startswith("data:")]
    return dict(json.loads([ln for ln in lines if ln.strip()][-1]))


class RawClient:
    """One MCP client on one HTTP connection: handshake (or not), then tools/call in a loop."""

    def __init__(self, url: str, era: str, token: str | None) -> None:
        self.headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.url = url
        self.era = era
        self.http = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=1), timeout=aiohttp.ClientTimeout(total=60)
        )
        self.ids = 0

    async def post(self, body: dict[str, Any]) -> tuple[Mapping[str, str], dict[str, Any] | None]:
        async with self.http.post(self.url, json=body, headers=self.headers) as response:
            response.raise_for_status()
            data = await response.read()
            answer = parse_answer(response.content_type, data) if data else None
            return response.headers, answer

    async def open(self) -> None:
        if self.era != "legacy":
            self.headers.update(
                {
                    "MCP-Protocol-Version": self.era,
                    "Mcp-Method": "tools/call",
                    "Mcp-Name": "test_simple_text",
                }
            )
            return
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        }
        headers, _ = await self.post(init)
        self.headers["Mcp-Session-Id"] = headers["Mcp-Session-Id"]
        self.headers["MCP-Protocol-Version"] = "2025-11-25"
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def call(self) -> float:
        self.ids += 1
        params: dict[str, Any] = {"name": "test_simple_text", "arguments": {}}
        if self.era != "legacy":
            params["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": self.era,
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        started = time.perf_counter()
        _, answer = await self.post(
            {"jsonrpc": "2.0", "id": self.ids, "method": "tools/call", "params": params}
        )
        elapsed = time.perf_counter() - started
        if answer is None or "result" not in answer:
            raise RuntimeError(f"call failed: {answer}")
        return elapsed

    async def close(self) -> None:
        if "Mcp-Session-Id" in self.headers:
            with contextlib.suppress(aiohttp.ClientError):
                async with self.http.delete(self.url, headers=self.headers):
                    pass
        await self.http.close()


async def measure(
    url: str, era: str, token: str | None, clients: int, seconds: float
) -> dict[str, float]:
    pool = [RawClient(url, era, token) for _ in range(clients)]
    await asyncio.gather(*(c.open() for c in pool))
    for client in pool:  # warm-up: first calls pay for lazy imports and catalog reads
        await client.call()
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def loop(client: RawClient) -> None:
        while time.perf_counter() < deadline:
            latencies.append(await client.call())

    started = time.perf_counter()
    await asyncio.gather(*(loop(c) for c in pool))
    wall = time.perf_counter() - started
    await asyncio.gather(*(c.close() for c in pool))
    latencies.sort()
    return {
        "calls_per_s": len(latencies) / wall,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "calls": float(len(latencies)),
    }


HEADER = (
    f"{'clients':>7} | {'direct calls/s':>14} {'p50 ms':>7} {'p99 ms':>7} | "
    f"{'mcpward calls/s':>15} {'p50 ms':>7} {'p99 ms':>7} | "
    f"{'ratio':>6} {'+p50 ms':>8} {'+p99 ms':>8} | {'gw cpu/call':>11}"
)


def row(clients: int, direct: dict[str, float], through: dict[str, float], cpu_s: float) -> str:
    ratio = through["calls_per_s"] / direct["calls_per_s"]
    added_p50 = through["p50_ms"] - direct["p50_ms"]
    added_p99 = through["p99_ms"] - direct["p99_ms"]
    return (
        f"{clients:>7} | {direct['calls_per_s']:>14.1f} {direct['p50_ms']:>7.2f} "
        f"{direct['p99_ms']:>7.2f} | {through['calls_per_s']:>15.1f} {through['p50_ms']:>7.2f} "
        f"{through['p99_ms']:>7.2f} | {ratio:>6.2f} {added_p50:>8.2f} {added_p99:>8.2f} | "
        f"{cpu_s / through['calls'] * 1e3:>8.2f} ms"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--era", default="legacy", choices=["legacy", "2026-07-28"])
    parser.add_argument("--guards", default="default", choices=["default", "none"])
    parser.add_argument(
        "--evidence",
        default="crash_safe",
        choices=["crash_safe", "sync", "batched", "off"],
        help="receipt durability (crash_safe: the default)",
    )
    parser.add_argument("--clients", default="1,8,32")
    parser.add_argument("--upstream", default="sdk", choices=sorted(UPSTREAMS))
    args = parser.parse_args()
    levels = [int(n) for n in args.clients.split(",")]

    upstream_port, gateway_port = free_port(), free_port()
    with tempfile.TemporaryDirectory(prefix="mcpward-bench-") as tmp:
        config: dict[str, Any] = {
            "front": {
                "kind": "http",
                "port": gateway_port,
                "tokens": [
                    {
                        "client_id": "bench",
                        "token_sha256": hash_token(TOKEN),
                        "consent_ceiling": "full",
                    }
                ],
            },
            "upstreams": [
                {
                    "id": "fx",
                    "url": f"http://127.0.0.1:{upstream_port}/mcp",
                    "allow_private": ["127.0.0.1"],
                }
            ],
            "state_dir": str(Path(tmp) / "state"),
            "logging": {"level": "warning", "file": str(Path(tmp) / "gateway.log")},
        }
        if args.guards == "none":
            config["guards"] = []
        config["evidence"] = (
            {"enabled": False} if args.evidence == "off" else {"durability": args.evidence}
        )
        config_path = Path(tmp) / "mcpward.yaml"
        config_path.write_text(yaml.safe_dump(config))
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        upstream = await asyncio.create_subprocess_exec(
            sys.executable,
            *UPSTREAMS[args.upstream],
            "--port",
            str(upstream_port),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
        )
        gateway = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            RUNNER,
            str(config_path),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
        )
        try:
            await wait_port(upstream_port)
            await wait_port(gateway_port)
            direct_url = f"http://127.0.0.1:{upstream_port}/mcp"
            gateway_url = f"http://127.0.0.1:{gateway_port}/mcp"
            print(
                f"tools/call test_simple_text, era {args.era}, guards {args.guards}, "
                f"evidence {args.evidence}, upstream {args.upstream}, {args.seconds:g} s per run"
            )
            print(HEADER)
            for clients in levels:
                direct = await measure(direct_url, args.era, None, clients, args.seconds)
                before = cpu_seconds(gateway.pid)
                through = await measure(gateway_url, args.era, TOKEN, clients, args.seconds)
                used = cpu_seconds(gateway.pid) - before
                print(row(clients, direct, through, used), flush=True)
        finally:
            for proc in (gateway, upstream):
                if proc.returncode is None:
                    proc.terminate()
                    try:
                        await asyncio.wait_for(proc.wait(), 10)
                    except TimeoutError:
                        proc.kill()


if __name__ == "__main__":
    asyncio.run(main())
