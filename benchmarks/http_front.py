"""tools/call over Streamable HTTP: straight to an upstream, through mcpward's HTTP front and
through a peer bridge, interleaved in one run, with 1, 8, 16 and 32 concurrent clients.

    .venv/bin/python benchmarks/http_front.py [--seconds 3] [--rounds 3] [--clients 1,8,16,32]
                                              [--era legacy|2026-07-28]
                                              [--guards default|none]
                                              [--evidence crash_safe|sync|batched|off]
                                              [--upstream sdk|raw] [--no-peers]
                                              [--baseline-src DIR]

Paths, each a long-lived process measured in turn (round by round, client count by client
count, path by path):
- direct: the HTTP upstream, tests/fixtures/conformance_server.py (mcp SDK, Streamable HTTP, on
  httptools) or with `--upstream raw` benchmarks/raw_http_upstream.py (raw ASGI, almost free);
- mcpward (`--guards`, `--evidence`) in front of that HTTP upstream;
- mcpward (same configuration) in front of a stdio upstream, benchmarks/raw_upstream.py;
- mcpward bare (no guards, no evidence) in front of the same stdio upstream;
- mcp-proxy (PyPI, a stdio <-> Streamable HTTP bridge, no guards) in front of the same stdio
  upstream; handshake era only (it is built on the mcp SDK 1.x);
- mcp-proxy in front of `mcp-firewall wrap` in front of the same stdio upstream: mcp-firewall is
  stdio-only (no HTTP front of its own), so this is how it is reached over HTTP.
Peers come from benchmarks/peers.py (installed once into `.bench-peers/`, skipped with a printed
reason when they cannot be); `--no-peers` leaves them out. `--baseline-src DIR` runs every
mcpward path a second time from another checkout's `src` (e.g. a `git worktree` of the commit
before a change), labelled "before:", interleaved with the others in the same rounds.

Each gateway runs as its own process (mcpward on uvloop, like `mcpward run`, with a static
token). Each client is a lean raw JSON-RPC client (aiohttp, one connection) so the numbers
measure servers, not client SDKs. The stdio-upstream paths call `echo`, the HTTP ones
`test_simple_text`. "ratio" and "+p50/+p99" are against a direct route in the same round: the
`--upstream` one for mcpward in front of it, the raw HTTP upstream (also started when
`--upstream sdk`) for every stdio-upstream path; "to bare" is calls/s over mcpward bare's (the
baseline's bare for a "before:" path).
Gateway CPU per call is the utime+stime (Linux /proc) of the gateway's processes, not its
upstream's, over the timed calls. Every figure is the median over `--rounds` with the min-max.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import peers
import yaml

from mcpward.identity.tokens import hash_token

ROOT = Path(__file__).resolve().parents[1]
UPSTREAMS = {
    "sdk": [str(ROOT / "tests" / "fixtures" / "conformance_server.py"), "--http", "httptools"],
    "raw": [str(ROOT / "benchmarks" / "raw_http_upstream.py")],
}
STDIO_UPSTREAM = [sys.executable, str(ROOT / "benchmarks" / "raw_upstream.py")]
HTTP_TOOL: tuple[str, dict[str, Any]] = ("test_simple_text", {})
STDIO_TOOL = ("echo", {"message": "hello"})
TOKEN = "benchmark-token-0123456789abcdef"
RUNNER = """
import asyncio, os, sys, uvloop
from mcpward.config.loader import load_config
from mcpward.relay.gateway import Gateway
from mcpward.fronts.http.server import serve_http

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

    def __init__(
        self, url: str, era: str, token: str | None, tool: tuple[str, dict[str, Any]]
    ) -> None:
        self.headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.url = url
        self.era = era
        self.tool, self.arguments = tool
        self.http = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=1), timeout=aiohttp.ClientTimeout(total=60)
        )
        self.ids = 0

    async def post(self, body: dict[str, Any]) -> tuple[Mapping[str, str], dict[str, Any] | None]:
        async with self.http.post(self.url, json=body, headers=self.headers) as response:
            if response.status >= 400:
                text = (await response.text())[:300]
                raise RuntimeError(f"HTTP {response.status}: {text}")
            data = await response.read()
            answer = parse_answer(response.content_type, data) if data else None
            return response.headers, answer

    async def open(self) -> None:
        if self.era != "legacy":
            self.headers.update(
                {
                    "MCP-Protocol-Version": self.era,
                    "Mcp-Method": "tools/call",
                    "Mcp-Name": self.tool,
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
        params: dict[str, Any] = {"name": self.tool, "arguments": self.arguments}
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
        if answer is None or "result" not in answer or answer["result"].get("isError"):
            raise RuntimeError(f"call failed: {answer}")
        return elapsed

    async def close(self) -> None:
        if "Mcp-Session-Id" in self.headers:
            with contextlib.suppress(aiohttp.ClientError):
                async with self.http.delete(self.url, headers=self.headers):
                    pass
        await self.http.close()


@dataclass
class Route:
    """One way to reach the tool: a URL, a token, and the process whose CPU is the gateway's."""

    name: str
    label: str
    url: str
    token: str | None
    tool: tuple[str, dict[str, Any]]
    proc: asyncio.subprocess.Process | None = None  # None for direct
    reference: str = "direct"  # the direct route its ratio and added latency are taken against
    runs: dict[int, list[dict[str, float]]] = field(default_factory=dict)  # clients -> rounds

    def cpu(self) -> float:
        if self.proc is None:
            return 0.0
        return peers.gateway_cpu_seconds(self.proc.pid, STDIO_UPSTREAM)


async def measure(route: Route, era: str, clients: int, seconds: float) -> dict[str, float]:
    pool = [RawClient(route.url, era, route.token, route.tool) for _ in range(clients)]
    try:
        await asyncio.gather(*(c.open() for c in pool))
        for client in pool:  # warm-up: first calls pay for lazy imports and catalog reads
            await client.call()
        latencies: list[float] = []
        deadline = time.perf_counter() + seconds

        async def loop(client: RawClient) -> None:
            while time.perf_counter() < deadline:
                latencies.append(await client.call())

        cpu_before = route.cpu()
        started = time.perf_counter()
        await asyncio.gather(*(loop(c) for c in pool))
        wall = time.perf_counter() - started
        cpu_used = route.cpu() - cpu_before
    finally:
        await asyncio.gather(*(c.close() for c in pool))
    latencies.sort()
    return {
        "calls_per_s": len(latencies) / wall,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "cpu_ms_per_call": cpu_used / len(latencies) * 1000,
    }


async def probe(route: Route, era: str) -> None:
    """One client, one call: raises if the route does not answer the tool."""
    client = RawClient(route.url, era, route.token, route.tool)
    try:
        await client.open()
        await client.call()
    finally:
        await client.close()


def mcpward_config(
    tmp: Path, name: str, port: int, upstream: dict[str, Any], guards: str, evidence: str
) -> Path:
    config: dict[str, Any] = {
        "front": {
            "kind": "http",
            "port": port,
            "tokens": [
                {
                    "client_id": "bench",
                    "token_sha256": hash_token(TOKEN),
                    "consent_ceiling": "full",
                }
            ],
        },
        "upstreams": [upstream],
        # each gateway its own state: a ledger shared between processes takes the slower path
        "state_dir": str(tmp / f"state-{name}"),
        "logging": {"level": "warning", "file": str(tmp / f"gateway-{name}.log")},
    }
    if guards == "none":
        config["guards"] = {"replace_defaults": True, "list": []}
    config["evidence"] = {"enabled": False} if evidence == "off" else {"durability": evidence}
    path = tmp / f"mcpward-{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


async def stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)  # what it spawned and left behind, if anything


def cell(values: list[float], fmt: str) -> str:
    return peers.spread(values, fmt) if values else "-"


COLUMNS = (
    ("calls/s", 17),
    ("ratio", 19),
    ("to bare", 19),
    ("+p50 ms", 19),
    ("+p99 ms", 21),
    ("gw CPU ms/call", 19),
)


def report(paths: list[Route], clients: int, width: int) -> None:
    by_name = {p.name: p for p in paths}
    print(f"{clients} client(s):")
    print(f"  {'':{width}}" + "".join(f"  {name:>{size}}" for name, size in COLUMNS))
    for path in paths:
        # "to bare": a baseline path against the baseline's bare gateway
        bare = by_name.get("before-bare" if path.name.startswith("before-") else "bare")
        direct = by_name[path.reference].runs[clients]
        runs = path.runs[clients]
        rounds = range(len(runs))
        tput = [r["calls_per_s"] for r in runs]
        values = [
            cell(tput, ".0f"),
            cell([tput[i] / direct[i]["calls_per_s"] for i in rounds], ".3f"),
            cell([tput[i] / bare.runs[clients][i]["calls_per_s"] for i in rounds], ".3f")
            if bare is not None
            else "-",
            cell([runs[i]["p50_ms"] - direct[i]["p50_ms"] for i in rounds], ".2f"),
            cell([runs[i]["p99_ms"] - direct[i]["p99_ms"] for i in rounds], ".2f"),
            cell([r["cpu_ms_per_call"] for r in runs], ".3f"),
        ]
        if path.proc is None:
            p50 = statistics.median(r["p50_ms"] for r in runs)
            p99 = statistics.median(r["p99_ms"] for r in runs)
            values = [values[0], "1", "", f"p50 {p50:.2f}", f"p99 {p99:.2f}", "(upstream)"]
        sized = zip(values, (size for _, size in COLUMNS), strict=True)
        print(f"  {path.label:{width}}" + "".join(f"  {v:>{size}}" for v, size in sized))


class Bench:
    """The processes of one run: started here, stopped together at the end."""

    def __init__(self, tmp: Path, env: dict[str, str]) -> None:
        self.tmp = tmp
        self.env = env
        self.procs: list[asyncio.subprocess.Process] = []
        self.stdio_reference = "direct"  # the direct route the stdio-upstream routes compare with
        self.paths: list[Route] = []

    async def launch(
        self, argv: list[str], env: dict[str, str] | None = None, port: int | None = None
    ) -> tuple[int, asyncio.subprocess.Process]:
        """Start `argv` with `{port}` replaced by `port` (or a free one); return both."""
        port = port or free_port()
        proc = await asyncio.create_subprocess_exec(
            *(arg.replace("{port}", str(port)) for arg in argv),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            env=env or self.env,
            start_new_session=True,  # its own process group: stopped with all it spawned
        )
        self.procs.append(proc)
        return port, proc

    async def add_mcpward(
        self,
        name: str,
        label: str,
        upstream: dict[str, Any],
        guards: str,
        evidence: str,
        src: Path | None = None,
    ) -> None:
        """One mcpward path; from the checkout `src` (PYTHONPATH) if given, else this one."""
        port = free_port()
        config = mcpward_config(self.tmp, name, port, upstream, guards, evidence)
        env = dict(self.env)
        if src is not None:
            env["PYTHONPATH"] = str(src.resolve())
        profile_to = env.get("MCPWARD_BENCH_PROFILE")  # cProfile the gateways into it
        if profile_to and name != "mcpward":
            env["MCPWARD_BENCH_PROFILE"] = f"{profile_to}.{name}"
        _, proc = await self.launch([sys.executable, "-c", RUNNER, str(config)], env, port)
        if "url" in upstream:
            route = Route(name, label, local(port), TOKEN, HTTP_TOOL, proc)
        else:
            route = Route(name, label, local(port), TOKEN, STDIO_TOOL, proc, self.stdio_reference)
        self.paths.append(route)

    async def add_peers(self) -> list[str]:
        """mcp-proxy, and mcp-proxy in front of mcp-firewall; the notes to print at the end."""
        print("peers:")
        proxy = peers.ensure(peers.MCP_PROXY)
        firewall = peers.ensure(peers.FIREWALL)
        notes = [
            "mcp-firewall alone: not measured here, it is stdio-only (`mcp-firewall wrap` speaks "
            "stdio on both sides; its --dashboard is a web UI, not an MCP endpoint): it is shown "
            "behind mcp-proxy, and alone in benchmarks/relay.py"
        ]
        if proxy is None:
            return notes
        bridge = [str(proxy.script), "--port", "{port}", "--host", "127.0.0.1"]
        bridge += ["--pass-environment", "--log-level", "WARNING", "--"]
        port, proc = await self.launch([*bridge, *STDIO_UPSTREAM])
        print(f"  mcp-proxy {proxy.version}: {proxy.script}")
        label = f"mcp-proxy {proxy.version}"
        ref = self.stdio_reference
        self.paths.append(Route("mcp-proxy", label, local(port), None, STDIO_TOOL, proc, ref))
        if firewall is not None:
            chain = peers.firewall_argv(firewall, self.tmp, STDIO_UPSTREAM)
            port, proc = await self.launch([*bridge, *chain])
            print(f"  mcp-firewall {firewall.version}: {firewall.script}")
            notes.append(f"note: {peers.GROWTH[firewall.spec.name]}")
            label = f"mcp-proxy -> mcp-firewall {firewall.version}"
            route = Route("proxy+firewall", label, local(port), None, STDIO_TOOL, proc, ref)
            self.paths.append(route)
        return notes

    async def close(self) -> None:
        await asyncio.gather(*(stop(proc) for proc in self.procs))


def local(port: int) -> str:
    return f"http://127.0.0.1:{port}/mcp"


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=3.0, help="per path, level and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--era", default="legacy", choices=["legacy", "2026-07-28"])
    parser.add_argument("--guards", default="default", choices=["default", "none"])
    parser.add_argument(
        "--evidence",
        default="crash_safe",
        choices=["crash_safe", "sync", "batched", "off"],
        help="receipt durability (crash_safe: the default)",
    )
    parser.add_argument("--clients", default="1,8,16,32")
    parser.add_argument("--upstream", default="sdk", choices=sorted(UPSTREAMS))
    parser.add_argument("--no-peers", action="store_true", help="leave out the peer gateways")
    parser.add_argument(
        "--baseline-src",
        type=Path,
        default=None,
        help="also run each mcpward path from this checkout's src, labelled 'before:'",
    )
    args = parser.parse_args()
    levels = [int(n) for n in args.clients.split(",")]
    started = time.perf_counter()

    with tempfile.TemporaryDirectory(prefix="mcpward-bench-") as tmp:
        env = {**os.environ, "PYTHONWARNINGS": "ignore", "BENCH_TOOLS": "10"}
        bench = Bench(Path(tmp), env)
        try:
            port, _ = await bench.launch(
                [sys.executable, *UPSTREAMS[args.upstream], "--port", "{port}"]
            )
            label = f"direct ({args.upstream} HTTP upstream)"
            bench.paths.append(Route("direct", label, local(port), None, HTTP_TOOL))
            if args.upstream != "raw":  # the stdio routes are compared with the cheap upstream
                raw_port, _ = await bench.launch(
                    [sys.executable, *UPSTREAMS["raw"], "--port", "{port}"]
                )
                label = "direct (raw HTTP upstream)"
                bench.paths.append(Route("direct-raw", label, local(raw_port), None, HTTP_TOOL))
                bench.stdio_reference = "direct-raw"
            http = {"id": "fx", "url": local(port), "allow_private": ["127.0.0.1"]}
            stdio = {
                "id": "fx",
                "command": STDIO_UPSTREAM[0],
                "args": STDIO_UPSTREAM[1:],
                "pass_env": ["BENCH_TOOLS"],
            }
            what = f"guards {args.guards}, evidence {args.evidence}"
            trees: list[tuple[str, str, Path | None]] = [("", "", None)]
            if args.baseline_src is not None:
                trees.append(("before-", "before: ", args.baseline_src))
            for prefix, tag, src in trees:
                await bench.add_mcpward(
                    f"{prefix}mcpward",
                    f"{tag}mcpward ({what}), HTTP up",
                    http,
                    args.guards,
                    args.evidence,
                    src,
                )
                if (args.guards, args.evidence) != ("none", "off"):
                    await bench.add_mcpward(
                        f"{prefix}mcpward-stdio",
                        f"{tag}mcpward ({what}), stdio up",
                        stdio,
                        args.guards,
                        args.evidence,
                        src,
                    )
                await bench.add_mcpward(
                    f"{prefix}bare",
                    f"{tag}mcpward bare (no guards, no evidence)",
                    stdio,
                    "none",
                    "off",
                    src,
                )
            notes = [] if args.no_peers else await bench.add_peers()
            for path in list(bench.paths):  # each path answers a call before it is measured
                try:
                    await wait_port(int(path.url.rsplit(":", 1)[1].split("/")[0]))
                    await probe(path, args.era)
                except Exception as exc:  # a peer may fail in any way: report it, skip it
                    if path.proc is None or "mcpward" in path.name or "bare" in path.name:
                        raise
                    hint = ""
                    if args.era != "legacy":
                        hint = " (built on the mcp SDK 1.x: handshake era only)"
                    print(f"  skipped {path.label}{hint}: {type(exc).__name__}: {exc}")
                    bench.paths.remove(path)
            print(
                f'tools/call, era {args.era}; "HTTP up": {args.upstream} HTTP upstream '
                f"({HTTP_TOOL[0]}); the others: stdio upstream raw_upstream.py ({STDIO_TOOL[0]}), "
                "ratio and added latency against the raw HTTP upstream; "
                f"{args.seconds:g} s per path, level and round; median of {args.rounds} "
                "interleaved rounds (min\u2013max)"
            )
            for path in bench.paths:
                path.runs = {clients: [] for clients in levels}
            for _ in range(args.rounds):
                for clients in levels:
                    for path in bench.paths:
                        run = await measure(path, args.era, clients, args.seconds)
                        path.runs[clients].append(run)
            width = max(len(p.label) for p in bench.paths)
            for clients in levels:
                report(bench.paths, clients, width)
            for note in notes:
                print(note)
            print(f"took {time.perf_counter() - started:.0f} s")
        finally:
            await bench.close()


if __name__ == "__main__":
    asyncio.run(main())
