"""Many clients on one replica: N handshake-era sessions opened over T seconds against
`mcpward run` (HTTP front) in front of `python -m mcp_server_time`, then what is held and how
fast the gateway stops.

    .venv/bin/python benchmarks/sessions.py [--sessions 200] [--over 60] [--rounds 1]
                                            [--variants defaults,identity,session-warm8]

Variants (the upstream's `processes:` policy):
- defaults: sharing `session` (a process per session), no warm spares, max_processes 128;
- session-warm2: the defaults with warm_spares 2;
- identity: sharing `identity` (every session here uses one token: one process);
- session-warm8: sharing `session`, warm_spares 8, max_processes 256.
Printed per variant (median over rounds, min-max): sessions served and refused (HTTP 503),
processes held (the gateway's descendants in /proc, lifelines included), the RSS of the gateway
and its descendants, `initialize` p50/p99 of the served sessions, the time from SIGTERM to the
gateway's exit, and orphans (descendants still alive 1 s after it exited).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from mcpward.identity.tokens import hash_token

ROOT = Path(__file__).resolve().parents[1]
MCPWARD = str(Path(sys.executable).with_name("mcpward"))
TOKEN = "benchmark-token-0123456789abcdef"
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "Authorization": f"Bearer {TOKEN}",
}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}
VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "session-warm2": {"warm_spares": 2},
    "identity": {"sharing": "identity"},
    "session-warm8": {"warm_spares": 8, "max_processes": 256},
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            tree.setdefault(int(fields[1]), []).append(int(entry))
    return tree


def descendants(pid: int) -> list[int]:
    tree, found, todo = children(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def write_config(tmp: Path, port: int, processes: dict[str, Any]) -> Path:
    config = {
        "front": {
            "kind": "http",
            "port": port,
            "tokens": [
                {"client_id": "bench", "token_sha256": hash_token(TOKEN), "consent_ceiling": "full"}
            ],
        },
        "upstreams": [
            {
                "id": "time",
                "command": sys.executable,
                "args": ["-m", "mcp_server_time"],
                "processes": processes,
            }
        ],
        "state_dir": str(tmp / "state"),
        "logging": {"level": "warning", "file": str(tmp / "gateway.log")},
    }
    path = tmp / "mcpward.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


async def wait_ready(url: str, proc: asyncio.subprocess.Process) -> None:
    deadline = time.monotonic() + 120
    async with httpx.AsyncClient(timeout=5) as http:
        while time.monotonic() < deadline:
            if proc.returncode is not None:
                raise RuntimeError(f"gateway exited with {proc.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if (await http.get(url + "/readyz")).status_code == 200:
                    return
            await asyncio.sleep(0.2)
    raise RuntimeError("gateway never became ready")


async def open_session(http: httpx.AsyncClient, url: str) -> float | None:
    """The `initialize` latency in seconds, None when refused (503), NaN on any other failure."""
    try:
        return await _open_session(http, url)
    except httpx.HTTPError as exc:
        print(f"session failed: {type(exc).__name__}", file=sys.stderr)
        return float("nan")


async def _open_session(http: httpx.AsyncClient, url: str) -> float | None:
    started = time.perf_counter()
    response = await http.post(url, headers=HEADERS, json=INIT)
    elapsed = time.perf_counter() - started
    if response.status_code == 503:
        return None
    if response.status_code != 200 or '"error":' in response.text:  # JSON or an SSE stream
        print(f"initialize answered {response.status_code}: {response.text[:160]}", file=sys.stderr)
        return float("nan")
    headers = {
        **HEADERS,
        "Mcp-Session-Id": response.headers["mcp-session-id"],
        "MCP-Protocol-Version": "2025-11-25",
    }
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await http.post(url, headers=headers, json=note)
    return elapsed


async def one_run(variant: str, sessions: int, over: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="mcpward-sessions-") as directory:
        tmp = Path(directory)
        port = free_port()
        config = write_config(tmp, port, VARIANTS[variant])
        proc = await asyncio.create_subprocess_exec(MCPWARD, "run", "--config", str(config))
        base = f"http://127.0.0.1:{port}"
        try:
            await wait_ready(base, proc)
            # A connection per request: reusing one the server is closing (keep-alive timeout)
            # would fail the request for a reason that is not the gateway's.
            limits = httpx.Limits(max_connections=sessions, max_keepalive_connections=0)
            async with httpx.AsyncClient(timeout=120, limits=limits) as http:
                tasks = []
                for index in range(sessions):
                    delay = index * over / sessions
                    tasks.append(
                        asyncio.create_task(_later(delay, open_session(http, base + "/mcp")))
                    )
                latencies = await asyncio.gather(*tasks)
                await asyncio.sleep(1.0)  # let replacement spares settle
                held = descendants(proc.pid)
                rss = rss_kib(proc.pid) + sum(rss_kib(pid) for pid in held)
                served = [s for s in latencies if s is not None and s == s]
                failed = sum(1 for s in latencies if s is not None and s != s)
                started = time.perf_counter()
                proc.send_signal(signal.SIGTERM)
                await asyncio.wait_for(proc.wait(), 60)
                shutdown = time.perf_counter() - started
            await asyncio.sleep(1.0)
            orphans = [pid for pid in held if alive(pid)]
            problems = [
                line
                for line in (tmp / "gateway.log").read_text().splitlines()
                if " ERROR " in line or "Traceback" in line
            ]
            for line in problems[:10]:
                print(f"gateway log: {line[:200]}", file=sys.stderr)
            for pid in orphans:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            ordered = sorted(served) or [float("nan")]
            return {
                "served": len(served),
                "refused": sessions - len(served) - failed,
                "failed": failed,
                "processes": len(held),
                "rss_mib": rss / 1024,
                "init_p50_ms": statistics.median(ordered) * 1000,
                "init_p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
                "shutdown_s": shutdown,
                "orphans": len(orphans),
            }
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


async def _later(delay: float, coro: Any) -> Any:
    await asyncio.sleep(delay)
    return await coro


def spread(values: list[float]) -> str:
    median = statistics.median(values)
    if len(values) == 1:
        return f"{median:.1f}"
    return f"{median:.1f} ({min(values):.1f}-{max(values):.1f})"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--over", type=float, default=60.0, help="seconds to open them over")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args()
    names = args.variants.split(",")
    results: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for _ in range(args.rounds):
        for name in names:
            results[name].append(await one_run(name, args.sessions, args.over))
    columns = list(next(iter(results.values()))[0])
    print(
        f"{args.sessions} sessions over {args.over:g} s, {args.rounds} round(s), median (min-max)"
    )
    print("variant".ljust(14) + "".join(c.rjust(20) for c in columns))
    for name, runs in results.items():
        cells = [spread([run[c] for run in runs]) for c in columns]
        print(name.ljust(14) + "".join(cell.rjust(20) for cell in cells))


if __name__ == "__main__":
    asyncio.run(main())
